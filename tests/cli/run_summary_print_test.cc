// PrintRunSummaryFromJournal (cli/state_dir.h): the summary `apollo11 run`
// prints, built from the journal one record at a time, reads exactly as the
// one built from the whole document.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "cli/state_dir.h"
#include "storage/journal.h"
#include "tests/actors/cli_harness.h"

using namespace apollo11;  // NOLINT: test file

namespace {

// What `print` writes to a stream, as text.
template <class Print>
std::string Printed(Print print) {
  char* buf = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buf, &size);
  REQUIRE(out != nullptr);
  print(out);
  std::fclose(out);
  std::string text(buf, size);
  std::free(buf);
  return text;
}

// A finished run of `n` tasks in a fresh journal; task i fails when
// `fails(i)`, and a few carry an error, a worker and an exit code.
template <class Fails>
storage::RunRecord WriteRun(storage::Journal* journal, const std::string& run_id, int n,
                            Fails fails) {
  storage::RunRecord run;
  run.run_id = run_id;
  run.pipeline_name = "p";
  run.pipeline_hash = "h";
  run.status = RunStatus::kFailed;
  run.created_at = run.started_at = 1'000'000;
  run.finished_at = 4'000'000;
  run.task_count = static_cast<uint32_t>(n);
  run.reason = "a task failed";
  storage::Journal::Batch batch;
  batch.PutRun(run);
  for (int i = 0; i < n; ++i) {
    storage::ExecutionRecord e;
    e.task_id = "t" + std::to_string(i);  // journal order is not numeric order
    e.exec_id = run_id + "." + e.task_id;
    e.run_id = run_id;
    e.attempt = 1;
    e.worker_id = "w" + std::to_string(i % 3);
    e.state = fails(i) ? TaskState::kFailed : TaskState::kSuccess;
    e.exit_code = fails(i) ? 1 + i % 5 : 0;
    if (fails(i)) e.error = "exit " + std::to_string(e.exit_code);
    batch.PutExecution(e);
  }
  REQUIRE(journal->Commit(batch).ok());
  return run;
}

}  // namespace

TEST_CASE("the run summary read one record at a time prints as the whole document does",
          "[cli][summary]") {
  testing::ScratchDir dir;
  auto opened = storage::Journal::Open(dir.path() + "/journal", {});
  REQUIRE(opened.ok());
  std::unique_ptr<storage::Journal> journal = std::move(*opened);

  struct Case {
    const char* name;
    int tasks;
    int every;    // task i fails when i % every == 0 (0: none fails)
    size_t rows;  // task rows expected in the table
  };
  // Few tasks: all listed. Many: only the failed ones, up to 200, then a
  // line saying there are more.
  const Case cases[] = {{"few", 12, 4, 12},
                        {"forty", 40, 0, 40},
                        {"many, all succeeded", 41, 0, 0},
                        {"many, few failed", 500, 25, 20},
                        {"many, 40 failed", 400, 10, 40},
                        {"many, 41 failed", 410, 10, 41},
                        {"many, most failed", 600, 1, 200}};
  int k = 0;
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string run_id = "r" + std::to_string(++k);
    auto fails = [&](int i) { return c.every > 0 && i % c.every == 0; };
    const storage::RunRecord run = WriteRun(journal.get(), run_id, c.tasks, fails);
    auto execs = journal->ExecutionsOfRun(run_id);
    REQUIRE(execs.ok());
    const std::string whole = Printed(
        [&](std::FILE* out) { cli::PrintRunSummary(cli::RunSummaryJson(run, *execs), out); });
    Status read;
    const std::string streamed = Printed(
        [&](std::FILE* out) { read = cli::PrintRunSummaryFromJournal(run, journal.get(), out); });
    REQUIRE(read.ok());
    CHECK(streamed == whole);
    size_t rows = 0;
    for (size_t at = whole.find("\n  t"); at != std::string::npos;
         at = whole.find("\n  t", at + 1)) {
      ++rows;
    }
    CHECK(rows == c.rows);
    CHECK((whole.find("... (use `apollo11 status") != std::string::npos) == (c.rows == 200));
  }
}
