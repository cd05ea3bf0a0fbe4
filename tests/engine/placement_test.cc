#include "engine/placement.h"

#include <catch2/catch.hpp>

using apollo11::kMicrosPerSecond;
using apollo11::engine::PickWorker;
using apollo11::engine::WorkerView;

TEST_CASE("placement picks the least expected busy time per slot in the group", "[placement]") {
  std::vector<WorkerView> w = {
      {"w0", "etl", 4, 2, 2, 8 * kMicrosPerSecond},  // 2 s per slot
      {"w1", "etl", 1, 1, 0, 1 * kMicrosPerSecond},  // 1 s per slot
      {"w2", "ml", 8, 8, 0, 0},                      // other group
      {"w3", "etl", 8, 4, 4, 4 * kMicrosPerSecond},  // 0.5 s per slot
  };
  CHECK(PickWorker(w, "etl") == 3);
  CHECK(PickWorker(w, "ml") == 2);
  CHECK(PickWorker(w, "gpu") == -1);
}

TEST_CASE("placement skips workers without credit", "[placement]") {
  std::vector<WorkerView> w = {{"w0", "default", 4, 0, 4, 0}, {"w1", "default", 4, 1, 3, 100}};
  CHECK(PickWorker(w, "default") == 1);
  w[1].credits = 0;
  CHECK(PickWorker(w, "default") == -1);
  CHECK(PickWorker({}, "default") == -1);
}

TEST_CASE("placement ties go to fewer running, then the lower index", "[placement]") {
  std::vector<WorkerView> w = {
      {"w0", "g", 2, 1, 2, 0}, {"w1", "g", 2, 1, 1, 0}, {"w2", "g", 2, 1, 1, 0}};
  CHECK(PickWorker(w, "g") == 1);
}

TEST_CASE("placement with labels considers only workers having all of them", "[placement]") {
  const std::vector<std::string> none, gpu = {"gpu"}, gpu_ssd = {"gpu", "ssd"};
  std::vector<WorkerView> w = {
      {"w0", "g", 4, 4, 0, 0, &none},                       // idle, unlabelled
      {"w1", "g", 4, 4, 0, 2 * kMicrosPerSecond, &gpu},     // busier, gpu
      {"w2", "g", 4, 4, 0, 4 * kMicrosPerSecond, &gpu_ssd}  // busiest, both
  };
  CHECK(PickWorker(w, "g") == 0);
  CHECK(PickWorker(w, "g", {"gpu"}) == 1);
  CHECK(PickWorker(w, "g", {"ssd", "gpu"}) == 2);  // order does not matter
  CHECK(PickWorker(w, "g", {"tpu"}) == -1);
  w[2].labels = nullptr;  // a view without labels has none
  CHECK(PickWorker(w, "g", {"ssd"}) == -1);
  CHECK(apollo11::engine::HasLabels(gpu_ssd, {}));
  CHECK_FALSE(apollo11::engine::HasLabels(none, gpu));
}
