// The journal's record bytes as they are written today, pinned: a journal
// written by this version must read in the next, and a change to an encoder
// that alters a byte fails here, not in someone's data directory. A field
// appended on purpose changes these strings together with a decode test of
// the old layout (record_codec_test.cc).

#include <catch2/catch.hpp>
#include <string>
#include <string_view>

#include "storage/record_codec.h"
#include "storage/records.h"

namespace apollo11::storage {
namespace {

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

// Today's bytes, as hex.
constexpr const char* kTransitionHex =
    "9a01cf00060a2418202240a27231a56665746368a0020102aa64697370617463686564aa64697370617463686572";
constexpr const char* kPlacedNoteHex =
    "9c01cf00060a2418202240a27231a56665746368a0020102aa64697370617463686564aa64697370617463686572"
    "c3a27731";
constexpr const char* kExecutionHex =
    "dc001801a27231a566657463680304a27732f70accc8ce00011170cf000000012a05f200cc8001ce00010000"
    "a66b696c6c6564a36f7574a27439c002a4736c6f77ffa46469736ba27b7da178";
constexpr const char* kRunHex =
    "9e01a965746c2e6461696c79a1680401020304a377687982a161a131a162a0c005a2723000";
constexpr const char* kPipelineVersionHex = "9401a168cd012ca3636c69";
constexpr const char* kPipelineStateHex = "96010203c3cd0190a36f7073";
constexpr const char* kTriggerKeyHex = "9301a27231cd01f4";

std::string Unhex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TransitionRecord PinnedTransition() {
  TransitionRecord t;
  t.seq = 77;
  t.ts = 1'700'000'000'123'456;
  t.run_id = "r1";
  t.task_id = "fetch";
  t.exec_id = "r1.fetch";
  t.attempt = 2;
  t.from = TaskState::kReady;
  t.to = TaskState::kRunning;
  t.reason = "dispatched";
  t.actor = "dispatcher";
  return t;
}

ExecutionRecord PinnedExecution() {
  ExecutionRecord e;
  e.exec_id = "r1.fetch";
  e.run_id = "r1";
  e.task_id = "fetch";
  e.attempt = 3;
  e.state = TaskState::kFailed;
  e.slow = SlowFlag::kKept;
  e.exit_code = -9;
  e.worker_id = "w2";
  e.ready_at = 10;
  e.started_at = 200;
  e.finished_at = 70'000;
  e.next_retry_at = 5'000'000'000;
  e.deadline = 128;
  e.retries_used = 1;
  e.requeues = 65'536;
  e.error = "killed";
  e.output = "out";
  e.trace_id = "t9";
  e.slow_reason = "slow";
  e.flagged_at = -1;
  e.logs_truncated = "disk";
  e.task_output = "{}";
  e.item = "x";
  return e;
}

RunRecord PinnedRun() {
  RunRecord r;
  r.run_id = "r1";
  r.pipeline_name = "etl.daily";
  r.pipeline_hash = "h";
  r.status = RunStatus::kCanceled;
  r.created_at = 1;
  r.started_at = 2;
  r.finished_at = 3;
  r.task_count = 4;
  r.reason = "why";
  r.params = {{"a", "1"}, {"b", ""}};
  r.pipeline_version = 5;
  r.rerun_of = "r0";
  return r;
}

}  // namespace

TEST_CASE("transition records keep today's bytes", "[storage][codec][compat]") {
  TransitionRecord plain = PinnedTransition();
  CHECK(Hex(codec::EncodeTransition(plain)) == kTransitionHex);
  TransitionRecord other_exec = plain;  // a foreach instance's own exec id is kept
  other_exec.exec_id = "r1.fetch[0]";
  CHECK(Hex(codec::EncodeTransition(other_exec)) ==
        "9a01cf00060a2418202240a27231a56665746368ab72312e66657463685b305d020102aa646973706174636865"
        "64aa64697370617463686572");
  TransitionRecord note = plain;
  note.note = true;
  CHECK(Hex(codec::EncodeTransition(note)) ==
        "9b01cf00060a2418202240a27231a56665746368a0020102aa64697370617463686564aa646973706174636865"
        "72c3");
  TransitionRecord placed = plain;
  placed.worker_id = "w1";
  CHECK(Hex(codec::EncodeTransition(placed)) ==
        "9c01cf00060a2418202240a27231a56665746368a0020102aa64697370617463686564aa646973706174636865"
        "72c2a27731");
  placed.note = true;
  CHECK(Hex(codec::EncodeTransition(placed)) == kPlacedNoteHex);
}

TEST_CASE("execution records keep today's bytes", "[storage][codec][compat]") {
  CHECK(Hex(codec::EncodeExecution(PinnedExecution())) == kExecutionHex);
  CHECK(Hex(codec::EncodeExecution(ExecutionRecord{})) ==
        "dc001801a0a00000a00000000000000000a0a0a0c000a000a0a0a0");
  ExecutionRecord in_memory = PinnedExecution();  // the scheduler's: run and trace ids given
  in_memory.run_id.clear();
  in_memory.trace_id.clear();
  CHECK(codec::EncodeExecution(in_memory, "r1", "t9") == codec::EncodeExecution(PinnedExecution()));
}

TEST_CASE("run and registry records keep today's bytes", "[storage][codec][compat]") {
  CHECK(Hex(codec::EncodeRun(PinnedRun())) == kRunHex);
  CHECK(Hex(codec::EncodeRun(RunRecord{})) == "9e01a0a00000000000a080c000a000");
  PipelineVersionRecord version;
  version.name = "etl.daily";
  version.version = 7;
  version.hash = "h";
  version.added_at = 300;
  version.added_by = "cli";
  CHECK(Hex(codec::EncodePipelineVersion(version)) == kPipelineVersionHex);
  PipelineStateRecord state;
  state.name = "etl.daily";
  state.active = 2;
  state.latest = 3;
  state.paused = true;
  state.changed_at = 400;
  state.paused_by = "ops";
  CHECK(Hex(codec::EncodePipelineState(state)) == kPipelineStateHex);
  TriggerKeyRecord key;
  key.name = "etl.daily";
  key.key = "k";
  key.run_id = "r1";
  key.at = 500;
  CHECK(Hex(codec::EncodeTriggerKey(key)) == kTriggerKeyHex);
}

TEST_CASE("today's bytes decode to the records that wrote them", "[storage][codec][compat]") {
  auto t = codec::DecodeTransition(77, Unhex(kPlacedNoteHex));
  REQUIRE(t.ok());
  CHECK(t->seq == 77);
  CHECK(t->ts == PinnedTransition().ts);
  CHECK(t->run_id == "r1");
  CHECK(t->task_id == "fetch");
  CHECK(t->exec_id == "r1.fetch");  // left out of the bytes: made from run and task
  CHECK(t->attempt == 2);
  CHECK(t->from == TaskState::kReady);
  CHECK(t->to == TaskState::kRunning);
  CHECK(t->reason == "dispatched");
  CHECK(t->actor == "dispatcher");
  CHECK(t->note);
  CHECK(t->worker_id == "w1");

  auto x = codec::DecodeExecution("r1.fetch", Unhex(kExecutionHex));
  REQUIRE(x.ok());
  CHECK(x->exec_id == "r1.fetch");
  CHECK(x->run_id == "r1");
  CHECK(x->state == TaskState::kFailed);
  CHECK(x->slow == SlowFlag::kKept);
  CHECK(x->exit_code == -9);
  CHECK(x->next_retry_at == 5'000'000'000);
  CHECK(x->requeues == 65'536);
  CHECK(x->trace_id == "t9");
  CHECK(x->flagged_at == -1);
  CHECK(x->item == "x");
  CHECK(Hex(codec::EncodeExecution(*x)) == kExecutionHex);

  auto r = codec::DecodeRun("r1", Unhex(kRunHex));
  REQUIRE(r.ok());
  CHECK(r->run_id == "r1");
  CHECK(r->status == RunStatus::kCanceled);
  CHECK(r->params == PinnedRun().params);
  CHECK(r->pipeline_version == 5);
  CHECK(r->rerun_of == "r0");
  CHECK(Hex(codec::EncodeRun(*r)) == kRunHex);

  auto version = codec::DecodePipelineVersion("etl.daily", 7, Unhex(kPipelineVersionHex));
  REQUIRE(version.ok());
  CHECK(version->hash == "h");
  CHECK(version->added_at == 300);
  CHECK(version->added_by == "cli");
  auto state = codec::DecodePipelineState("etl.daily", Unhex(kPipelineStateHex));
  REQUIRE(state.ok());
  CHECK(state->active == 2);
  CHECK(state->latest == 3);
  CHECK(state->paused);
  CHECK(state->paused_by == "ops");
  auto key = codec::DecodeTriggerKey(Unhex(kTriggerKeyHex));
  REQUIRE(key.ok());
  CHECK(key->run_id == "r1");
  CHECK(key->at == 500);
}

}  // namespace apollo11::storage
