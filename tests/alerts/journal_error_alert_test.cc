// journal_error for real: a coordinator whose LMDB journal cannot grow past
// 1 MiB is handed a submission bigger than that. The commit fails (map full),
// the scheduler keeps the work staged and retries with backoff, and each
// failed retry raises an alert (the Notifier folds them).

#include <catch2/catch.hpp>
#include <mutex>
#include <random>
#include <thread>

#include "actors/coordinator.h"
#include "cli/remote.h"
#include "dsl/pipeline_json.h"
#include "tests/actors/cli_harness.h"

using namespace apollo11;  // NOLINT: test file

namespace {

// Emit is called from the scheduler's thread.
struct LockedSink final : alerts::Sink {
  std::mutex mu;
  std::vector<alerts::AlertEvent> events;
  void Emit(alerts::AlertEvent event) override {
    std::lock_guard lock(mu);
    events.push_back(std::move(event));
  }
  size_t Count(alerts::AlertType type) {
    std::lock_guard lock(mu);
    size_t n = 0;
    for (const auto& e : events) n += e.type == type ? 1 : 0;
    return n;
  }
};

}  // namespace

TEST_CASE("a journal that cannot commit raises journal_error, folded by the retries",
          "[alerts][journal]") {
  testing::ScratchDir dir;
  storage::JournalOptions jo;
  jo.initial_map_size = 1 << 20;
  jo.max_map_size = 1 << 20;
  jo.sync = storage::JournalOptions::Sync::kNone;
  auto journal = storage::Journal::Open(dir.path() + "/journal", jo);
  REQUIRE(journal.ok());
  SystemClock clock;
  zmq::context_t ctx;
  LockedSink sink;
  actors::CoordinatorConfig cc;
  cc.worker_endpoint = "tcp://127.0.0.1:0";
  cc.client_endpoint = "tcp://127.0.0.1:0";
  cc.instance = "journal-full";
  cc.reconciler.heartbeat = Millis(100);
  cc.alerts = &sink;
  auto coord = actors::Coordinator::Start(ctx, journal->get(), &clock, cc);
  REQUIRE(coord.ok());

  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.huge";
  // Commands of random letters: packed (storage/snapshot_pack.h), the
  // snapshot still needs about 1.8 MB, more than the whole map.
  std::mt19937 random(3);
  for (int i = 0; i < 8000; ++i) {
    dsl::TaskSpec t;
    t.id = "t" + std::to_string(i);
    t.type = dsl::TaskType::kShell;
    std::string words(400, ' ');
    for (char& c : words) c = static_cast<char>('a' + random() % 26);
    t.command = "echo " + words;
    spec.tasks.push_back(std::move(t));
  }
  actors::SubmitRun submit;
  submit.pipeline_json = dsl::CanonicalJson(spec);
  submit.pipeline_hash = dsl::ContentHash(spec);
  REQUIRE(submit.pipeline_json.size() > (1u << 20));
  auto remote = cli::RemoteCoordinator::Connect((*coord)->client_endpoint(), "", "",
                                                std::chrono::milliseconds(2500));
  REQUIRE(remote.ok());
  // The run id is only handed out once the run is durable: never, here.
  CHECK_FALSE((*remote)->Submit(submit).ok());
  REQUIRE(
      testing::WaitFor([&] { return sink.Count(alerts::AlertType::kJournalError) >= 2; }, 5000));
  {
    std::lock_guard lock(sink.mu);
    const auto& a = sink.events.front();
    CHECK(a.type == alerts::AlertType::kJournalError);
    CHECK(a.reason.find("journal commit failed: ") == 0);
    CHECK(a.reason.find("promotion paused") != std::string::npos);
    CHECK(a.pipeline.empty());  // node-wide: every retry folds into one delivery
  }
  (*coord)->Stop();
}
