// Commit throughput at a few batch sizes and sync modes. Hidden ("[.]"): run
// by hand with `storage_test "[perf]"`; it prints figures and asserts nothing
// about speed.

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>

#include "storage/journal.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

TEST_CASE("commit throughput by batch size and sync mode", "[.][perf]") {
  struct Mode {
    const char* name;
    JournalOptions::Sync sync;
  };
  for (Mode mode : {Mode{"kFull", JournalOptions::Sync::kFull},
                    Mode{"kNoMetaSync", JournalOptions::Sync::kNoMetaSync},
                    Mode{"kNone", JournalOptions::Sync::kNone}}) {
    for (int batch_size : {1, 16, 256}) {
      testing::TempDir tmp;
      JournalOptions options;
      options.sync = mode.sync;
      auto journal = Journal::Open(tmp.path(), options);
      REQUIRE(journal.ok());
      // About a second per combination at fsync-bound rates.
      const int total = batch_size == 1 ? 2000 : batch_size == 16 ? 16000 : 128000;
      const auto start = std::chrono::steady_clock::now();
      for (int done = 0; done < total; done += batch_size) {
        Journal::Batch batch;
        for (int i = 0; i < batch_size; ++i) {
          int n = done + i;
          batch.Append(testing::MakeTransition("r20261129T093649-" + std::to_string(n % 50),
                                               "task_" + std::to_string(n % 1000),
                                               TaskState::kReady, TaskState::kRunning, n));
        }
        REQUIRE((*journal)->Commit(batch).ok());
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::printf(
          "sync=%-12s batch=%-4d %8d transitions in %6.3f s: %10.0f transitions/s, "
          "%8.0f commits/s\n",
          mode.name, batch_size, total, seconds, total / seconds, total / batch_size / seconds);
    }
  }
}

}  // namespace
}  // namespace apollo11::storage
