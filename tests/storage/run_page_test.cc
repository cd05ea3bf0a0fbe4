// Pages of the run history (storage/run_page.h) on every store: the
// journal's time-index walk and the in-memory twin answer the same pages;
// a walk with a filter sees every matching run exactly once, in order,
// while new runs keep arriving; since, until and the scan bound hold; a
// cursor no page gave is refused.

#include "storage/run_page.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "storage/faulty_run_store.h"
#include "storage/journal.h"
#include "storage/memory_run_store.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

const char* const kPipelines[] = {"etl.daily", "etl.hourly", "report"};

RunRecord PagedRun(int i, Micros created_at) {
  RunRecord r;
  char id[32];
  std::snprintf(id, sizeof id, "r-%06d", i);
  r.run_id = id;
  r.pipeline_name = kPipelines[i % 3];
  r.pipeline_hash = "h";
  r.status = i % 7 == 0 ? RunStatus::kFailed : RunStatus::kSuccess;
  r.created_at = created_at;
  r.task_count = 1;
  return r;
}

// `n` runs from number `first`, committed 500 to a batch; every fourth
// shares its created_at with the one before (ties order by run id).
void AddRuns(RunStore& store, int first, int n, Micros base) {
  RunBatch batch;
  for (int i = first; i < first + n; ++i) {
    batch.CreateRun(PagedRun(i, base + (i - i % 4 == i ? i : i - 1) * 1000));
    if ((i - first) % 500 == 499) REQUIRE(store.Commit(batch).ok());
  }
  REQUIRE(store.Commit(batch).ok());
}

// Every run of the walk, page by page of `limit`.
std::vector<std::string> Walk(RunStore& store, RunFilter filter, size_t* pages,
                              const std::function<void(size_t page)>& between = {}) {
  std::vector<std::string> seen;
  *pages = 0;
  for (;;) {
    auto page = store.ListRunsPage(filter);
    REQUIRE(page.ok());
    ++*pages;
    for (const RunRecord& r : page->runs) {
      CHECK(MatchesRunFilter(filter, r));
      seen.push_back(r.run_id);
    }
    if (page->complete) {
      CHECK(page->next.empty());
      return seen;
    }
    REQUIRE_FALSE(page->next.empty());
    filter.cursor = page->next;
    if (between) between(*pages);
  }
}

// The ids `filter` matches among all stored runs, newest first.
std::vector<std::string> Expected(RunStore& store, const RunFilter& filter) {
  auto all = store.ListRuns(SIZE_MAX);
  REQUIRE(all.ok());
  std::vector<std::string> out;
  for (const RunRecord& r : *all) {
    if (MatchesRunFilter(filter, r)) out.push_back(r.run_id);
  }
  return out;
}

void CheckPagingContract(RunStore& store) {
  AddRuns(store, 0, 20000, 1'000'000);
  RunFilter daily;
  daily.pipeline = "etl.daily";
  daily.limit = 50;
  const std::vector<std::string> expected = Expected(store, daily);
  REQUIRE(expected.size() == 6667);
  // New runs arrive after every page: they are newer than the walk's
  // position, so the walk neither repeats nor skips one.
  int next_run = 20000;
  size_t pages = 0;
  auto seen = Walk(store, daily, &pages, [&](size_t) {
    AddRuns(store, next_run, 3, 1'000'000'000);
    next_run += 3;
  });
  CHECK(seen == expected);
  CHECK(pages == 6667 / 50 + 1);
  // States, and a window in time.
  RunFilter failed;
  failed.states = {RunStatus::kFailed, RunStatus::kCanceled};
  failed.since = 1'000'000 + 5000 * 1000;
  failed.until = 1'000'000 + 6000 * 1000;
  failed.limit = 7;
  auto window = Walk(store, failed, &pages);
  CHECK(window == Expected(store, failed));
  CHECK(window.size() == 143);
  // A sparse filter's page stops after max_scan runs, and the walk goes on.
  RunFilter report;
  report.pipeline = "report";
  report.states = {RunStatus::kFailed};
  report.limit = 1000;
  report.max_scan = 400;
  auto sparse = Walk(store, report, &pages);
  CHECK(sparse == Expected(store, report));
  CHECK(pages >= 20000 / 400);
  // A domain: every pipeline whose name starts with "etl.".
  RunFilter domain;
  domain.pipeline_prefix = "etl.";
  domain.limit = 500;
  auto etl = Walk(store, domain, &pages);
  CHECK(etl == Expected(store, domain));
  CHECK(etl.size() > expected.size());  // more than etl.daily alone
  RunFilter nothing;
  nothing.pipeline_prefix = "nope.";
  CHECK(Walk(store, nothing, &pages).empty());
  // A cursor that no page gave.
  RunFilter bad;
  bad.cursor = "not a cursor";
  CHECK(store.ListRunsPage(bad).status().code() == StatusCode::kInvalidInput);
  CHECK(ParseRunCursor(RunCursor(42, "r-000001"))->first == 42);
}

TEST_CASE("a walk of the run history sees each matching run once, in order, on every store",
          "[storage][paging]") {
  SECTION("journal") {
    testing::TempDir tmp;
    auto journal = Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    CheckPagingContract(**journal);
  }
  SECTION("in memory") {
    MemoryRunStore memory;
    CheckPagingContract(memory);
  }
  SECTION("fault injector") {
    MemoryRunStore base;
    FaultyRunStore faulty(&base);
    CheckPagingContract(faulty);
  }
}

TEST_CASE("the journal's pages equal the in-memory twin's, page by page", "[storage][paging]") {
  testing::TempDir tmp;
  auto journal = Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  MemoryRunStore memory;
  AddRuns(**journal, 0, 3000, 5'000'000);
  AddRuns(memory, 0, 3000, 5'000'000);
  RunFilter f;
  f.limit = 64;
  f.until = 5'000'000 + 2500 * 1000;
  for (;;) {
    auto a = (*journal)->ListRunsPage(f);
    auto b = memory.ListRunsPage(f);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    REQUIRE(a->runs.size() == b->runs.size());
    for (size_t i = 0; i < a->runs.size(); ++i) CHECK(a->runs[i].run_id == b->runs[i].run_id);
    CHECK(a->next == b->next);
    CHECK(a->complete == b->complete);
    if (a->complete) break;
    f.cursor = a->next;
  }
}

}  // namespace
}  // namespace apollo11::storage
