// The audit trail's storage: its records' encoding, the contract every store
// keeps (the journal, the in-memory twin, the fault injector), its place in a
// replicated batch, and its retention.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "storage/batch_codec.h"
#include "storage/faulty_run_store.h"
#include "storage/journal.h"
#include "storage/memory_run_store.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

AuditRecord Audit(Micros at, const std::string& principal, const std::string& action,
                  bool ok = true) {
  AuditRecord r;
  r.at = at;
  r.principal = principal;
  r.role = "operator";
  r.transport = "http";
  r.source = "10.0.0.7:51234 via key:Ab3dE9fG1h2J";
  r.request_id = "req-" + std::to_string(at);
  r.action = action;
  r.target = "r-1";
  r.ok = ok;
  r.outcome = ok ? "canceled" : "no run r-1";
  return r;
}

// Three commits: two records, then a transition alone, then one record.
void CommitThree(RunStore& store) {
  RunBatch batch;
  batch.PutAudit(Audit(100, "alice", "cancel"));
  batch.PutAudit(Audit(200, "bob", "trigger", false));
  REQUIRE(store.Commit(batch).ok());
  TransitionRecord t;
  t.run_id = "r-1";
  t.task_id = "a";
  batch.Append(t);
  REQUIRE(store.Commit(batch).ok());
  batch.PutAudit(Audit(300, "alice", "rerun"));
  REQUIRE(store.Commit(batch).ok());
}

void CheckAuditContract(RunStore& store) {
  CommitThree(store);
  AuditFilter all;
  auto records = store.ListAudit(all);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 3);
  // Newest first; ids are (batch number << 16) | index, increasing.
  CHECK((*records)[0].action == "rerun");
  CHECK((*records)[0].id == AuditId(3, 0));
  CHECK((*records)[1].id == AuditId(1, 1));
  CHECK((*records)[2].id == AuditId(1, 0));
  AuditRecord expected = Audit(200, "bob", "trigger", false);
  expected.id = AuditId(1, 1);
  CHECK((*records)[1] == expected);

  AuditFilter alice;
  alice.principal = "alice";
  CHECK(store.ListAudit(alice)->size() == 2);
  AuditFilter cancels;
  cancels.action = "cancel";
  REQUIRE(store.ListAudit(cancels)->size() == 1);
  CHECK(store.ListAudit(cancels)->front().principal == "alice");
  AuditFilter recent;
  recent.since = 200;
  CHECK(store.ListAudit(recent)->size() == 2);
  AuditFilter window;
  window.since = 150;
  window.until = 300;
  REQUIRE(store.ListAudit(window)->size() == 1);
  CHECK(store.ListAudit(window)->front().principal == "bob");
  // The scan is bounded: past max_scan records it stops and says so.
  AuditFilter bounded;
  bounded.principal = "alice";
  bounded.max_scan = 2;
  bool complete = true;
  auto some = store.ListAudit(bounded, &complete);
  REQUIRE(some.ok());
  REQUIRE(some->size() == 1);
  CHECK(some->front().action == "rerun");
  CHECK_FALSE(complete);
  bounded.max_scan = 3;
  CHECK(store.ListAudit(bounded, &complete)->size() == 2);
  CHECK(complete);
  AuditFilter one;
  one.limit = 1;
  REQUIRE(store.ListAudit(one)->size() == 1);
  CHECK(store.ListAudit(one)->front().action == "rerun");

  // Retention: the oldest first, bounded per call, nothing at or after the cutoff.
  auto pruned = store.PruneAudit(250, 1);
  REQUIRE(pruned.ok());
  CHECK(*pruned == 1);
  pruned = store.PruneAudit(250, 10);
  REQUIRE(pruned.ok());
  CHECK(*pruned == 1);
  records = store.ListAudit(all);
  REQUIRE(records->size() == 1);
  CHECK(records->front().at == 300);
  CHECK(*store.PruneAudit(250, 10) == 0);
}

}  // namespace

TEST_CASE("an audit record reads back as written, and bytes that are not one are Corrupt",
          "[storage][audit]") {
  const AuditRecord r = Audit(1'700'000'000'000'000, "alice", "cancel");
  auto back = DecodeAudit(42, EncodeAudit(r));
  REQUIRE(back.ok());
  AuditRecord expected = r;
  expected.id = 42;
  CHECK(*back == expected);
  for (const std::string& bad : {std::string(), std::string("\x91\x01", 2), std::string("garbage"),
                                 EncodeAudit(r).substr(0, 20)}) {
    CHECK(DecodeAudit(1, bad).status().code() == StatusCode::kCorrupt);
  }
}

TEST_CASE("an audit record's fields are cut to 1024 bytes at a UTF-8 boundary",
          "[storage][audit]") {
  AuditRecord r;
  r.target = std::string(1021, 'x') + "\xc3\xa9\xc3\xa9";  // é twice: 1025 bytes
  r.outcome = std::string(5000, 'y');
  RunBatch batch;
  batch.PutAudit(r);
  const AuditRecord& kept = batch.audit_records().front();
  CHECK(kept.target == std::string(1021, 'x') + "...");
  CHECK(kept.outcome.size() == kMaxAuditField);
  CHECK(kept.outcome.substr(kMaxAuditField - 3) == "...");
}

TEST_CASE("the journal keeps the audit contract, also after a reopen", "[storage][audit]") {
  testing::TempDir tmp;
  {
    auto journal = Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    CheckAuditContract(**journal);
  }
  auto reopened = Journal::Open(tmp.path(), {});
  REQUIRE(reopened.ok());
  REQUIRE((*reopened)->ListAudit({})->size() == 1);
  JournalOptions read_only;
  read_only.read_only = true;
  (*reopened).reset();
  auto reader = Journal::Open(tmp.path(), read_only);
  REQUIRE(reader.ok());
  CHECK((*reader)->ListAudit({})->front().action == "rerun");
  CHECK((*reader)->PruneAudit(1000, 10).status().code() == StatusCode::kUnsupported);
}

TEST_CASE("the in-memory store and the fault injector keep the audit contract",
          "[storage][audit]") {
  MemoryRunStore memory;
  CheckAuditContract(memory);
  MemoryRunStore base;
  FaultyRunStore faulty(&base);
  CheckAuditContract(faulty);
}

TEST_CASE("a failed commit keeps its audit records for the retry", "[storage][audit]") {
  MemoryRunStore base;
  FaultyRunStore faulty(&base);
  faulty.FailNextCommits(1);
  RunBatch batch;
  batch.PutAudit(Audit(100, "alice", "cancel"));
  CHECK_FALSE(faulty.Commit(batch).ok());
  CHECK(batch.audits() == 1);
  CHECK(faulty.ListAudit({})->empty());
  REQUIRE(faulty.Commit(batch).ok());
  CHECK(faulty.ListAudit({})->size() == 1);
}

TEST_CASE("audit records ride in a replicated batch and land under the leader's ids",
          "[storage][audit][replication]") {
  testing::TempDir a, b;
  auto leader = Journal::Open(a.path(), {});
  auto replica = Journal::Open(b.path(), {});
  REQUIRE(leader.ok());
  REQUIRE(replica.ok());
  RunBatch batch;
  batch.PutAudit(Audit(100, "alice", "cancel"));
  batch.PutAudit(Audit(200, "bob", "pause"));
  const std::string bytes = codec::EncodeBatch(batch);
  REQUIRE((*leader)->Commit(batch).ok());
  auto shipped = codec::DecodeBatch(bytes);
  REQUIRE(shipped.ok());
  REQUIRE(shipped->audits() == 2);
  REQUIRE((*replica)->ApplyReplicated(1, 1, 0, *shipped).ok());
  CHECK(*(*replica)->ListAudit({}) == *(*leader)->ListAudit({}));
  // A forged audit value in a batch is refused as a whole.
  std::string forged = bytes;
  const size_t at = forged.rfind("alice");
  REQUIRE(at != std::string::npos);
  forged[at - 1] = '\xc1';  // never a valid msgpack byte
  CHECK(codec::DecodeBatch(forged).status().code() == StatusCode::kCorrupt);
}

TEST_CASE("a batch with more audit records than an id can number is refused whole",
          "[storage][audit]") {
  testing::TempDir tmp;
  auto journal = Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  MemoryRunStore memory;
  for (RunStore* store :
       {static_cast<RunStore*>(journal->get()), static_cast<RunStore*>(&memory)}) {
    RunBatch batch;
    for (size_t i = 0; i <= kMaxAuditPerBatch; ++i) batch.PutAudit(Audit(1, "a", "cancel"));
    CHECK(store->Commit(batch).code() == StatusCode::kInvalidInput);
    CHECK(store->ListAudit({})->empty());
  }
}

}  // namespace apollo11::storage
