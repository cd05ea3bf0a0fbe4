// The journal's record encoding: old records keep decoding as fields are
// appended, and the worker of each attempt is a field of its transition.

#include "storage/record_codec.h"

#include <catch2/catch.hpp>
#include <msgpack.hpp>

#include "storage/records.h"

namespace apollo11::storage {
namespace {

// A transition as the format-1 encoder wrote it before worker_id existed:
// 10 fields, or 11 with the note flag.
std::string OldTransition(bool note) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_array(note ? 11 : 10);
  pk.pack(uint8_t{1});
  pk.pack(int64_t{42});
  pk.pack(std::string("r1"));
  pk.pack(std::string("fetch"));
  pk.pack(std::string());
  pk.pack(uint32_t{1});
  pk.pack(static_cast<uint8_t>(TaskState::kReady));
  pk.pack(static_cast<uint8_t>(TaskState::kRunning));
  pk.pack(std::string("dispatched to worker w7"));
  pk.pack(std::string("dispatcher"));
  if (note) pk.pack(true);
  return std::string(buf.data(), buf.size());
}

TransitionRecord Placement(const std::string& worker, uint32_t attempt) {
  TransitionRecord t;
  t.seq = 5;
  t.ts = 1234;
  t.run_id = "r1";
  t.task_id = "fetch";
  t.exec_id = "r1.fetch";
  t.attempt = attempt;
  t.from = TaskState::kReady;
  t.to = TaskState::kRunning;
  t.reason = "dispatched to worker " + worker;
  t.actor = "dispatcher";
  t.worker_id = worker;
  return t;
}

}  // namespace

TEST_CASE("a transition written before worker_id decodes with no worker", "[storage][codec]") {
  for (bool note : {false, true}) {
    auto t = codec::DecodeTransition(9, OldTransition(note));
    REQUIRE(t.ok());
    CHECK(t->seq == 9);
    CHECK(t->exec_id == "r1.fetch");
    CHECK(t->to == TaskState::kRunning);
    CHECK(t->reason == "dispatched to worker w7");
    CHECK(t->note == note);
    CHECK(t->worker_id.empty());
  }
}

TEST_CASE("a transition's worker round-trips through the codec", "[storage][codec]") {
  TransitionRecord placed = Placement("w1", 2);
  auto back = codec::DecodeTransition(5, codec::EncodeTransition(placed));
  REQUIRE(back.ok());
  CHECK(back->worker_id == "w1");
  CHECK(back->note == false);
  CHECK(back->reason == placed.reason);
  CHECK(back->attempt == 2);

  TransitionRecord note = placed;
  note.note = true;
  auto note_back = codec::DecodeTransition(5, codec::EncodeTransition(note));
  REQUIRE(note_back.ok());
  CHECK(note_back->note);
  CHECK(note_back->worker_id == "w1");

  TransitionRecord plain = placed;
  plain.worker_id.clear();
  const std::string plain_bytes = codec::EncodeTransition(plain);
  // A transition without a worker keeps the old 10-field layout.
  CHECK(msgpack::unpack(plain_bytes.data(), plain_bytes.size()).get().via.array.size == 10);
  auto plain_back = codec::DecodeTransition(5, plain_bytes);
  REQUIRE(plain_back.ok());
  CHECK(plain_back->worker_id.empty());
}

TEST_CASE("the worker of an attempt comes from the field, else from the old reason",
          "[storage][codec]") {
  std::vector<TransitionRecord> history;
  TransitionRecord first = Placement("w1", 1);
  first.reason = "placed";  // the field alone names the worker
  history.push_back(first);
  TransitionRecord second = Placement("w2", 2);
  second.worker_id.clear();  // a record written before the field: the reason names it
  history.push_back(second);
  TransitionRecord done = Placement("", 2);
  done.from = TaskState::kRunning;
  done.to = TaskState::kSuccess;
  done.reason = "exit code 0";
  history.push_back(done);
  CHECK(WorkerOfAttempt(history, 1) == "w1");
  CHECK(WorkerOfAttempt(history, 2) == "w2");
  CHECK(WorkerOfAttempt(history, 3).empty());
}

}  // namespace apollo11::storage

namespace apollo11::storage {

TEST_CASE("a task output round-trips and an older execution record decodes without one",
          "[storage][codec]") {
  ExecutionRecord e;
  e.run_id = "r1";
  e.task_id = "a";
  e.state = TaskState::kSuccess;
  e.logs_truncated = "";
  e.task_output = R"({"x":1})";
  auto back = codec::DecodeExecution("r1.a", codec::EncodeExecution(e));
  REQUIRE(back.ok());
  CHECK(back->task_output == R"({"x":1})");

  // The 22-field layout written before task_output existed.
  e.task_output.clear();
  std::string full = codec::EncodeExecution(e);
  msgpack::object_handle h = msgpack::unpack(full.data(), full.size());
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  const msgpack::object_array& a = h.get().via.array;
  pk.pack_array(22);
  for (uint32_t i = 0; i < 22; ++i) pk.pack(a.ptr[i]);
  auto old = codec::DecodeExecution("r1.a", std::string(buf.data(), buf.size()));
  REQUIRE(old.ok());
  CHECK(old->state == TaskState::kSuccess);
  CHECK(old->task_output.empty());
}

}  // namespace apollo11::storage

namespace apollo11::storage {
namespace {

TEST_CASE("an execution value carries its seqs after the record, and older values have none",
          "[storage][codec]") {
  ExecutionRecord x;
  x.exec_id = "r1.a";
  x.run_id = "r1";
  x.task_id = "a";
  x.state = TaskState::kRunning;
  const std::string record = codec::EncodeExecution(x);
  std::string_view part;
  std::vector<uint64_t> seqs;
  REQUIRE(codec::SplitExecutionValue(record, &part, &seqs).ok());  // schema 1: record alone
  CHECK(part == record);
  CHECK(seqs.empty());

  const std::vector<uint64_t> kept = {1, 7, 300, 70000, 5000000000ull};
  const std::string value = codec::EncodeExecutionValue(record, kept);
  REQUIRE(codec::SplitExecutionValue(value, &part, &seqs).ok());
  CHECK(part == record);
  CHECK(seqs == kept);
  auto decoded = codec::DecodeExecution("r1.a", value);  // readers ignore the seqs
  REQUIRE(decoded.ok());
  CHECK(decoded->state == TaskState::kRunning);

  CHECK(codec::SplitExecutionValue(value + "x", &part, &seqs).code() == StatusCode::kCorrupt);
  CHECK(codec::SplitExecutionValue(record + "\xa1z", &part, &seqs).code() == StatusCode::kCorrupt);
  CHECK(codec::SplitExecutionValue(value.substr(0, value.size() - 1), &part, &seqs).code() ==
        StatusCode::kCorrupt);
}

}  // namespace

TEST_CASE("a run record written before pipeline_version decodes as unpinned",
          "[storage][codec][registry]") {
  RunRecord r;
  r.pipeline_name = "etl.daily";
  r.pipeline_version = 3;
  r.params = {{"day", "2026-01-01"}};
  auto back = codec::DecodeRun("r1", codec::EncodeRun(r));
  REQUIRE(back.ok());
  CHECK(back->pipeline_version == 3);

  // The 11-field layout written before pipeline_version existed.
  std::string full = codec::EncodeRun(r);
  msgpack::object_handle h = msgpack::unpack(full.data(), full.size());
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  const msgpack::object_array& a = h.get().via.array;
  pk.pack_array(11);
  for (uint32_t i = 0; i < 11; ++i) pk.pack(a.ptr[i]);
  auto old = codec::DecodeRun("r1", std::string(buf.data(), buf.size()));
  REQUIRE(old.ok());
  CHECK(old->pipeline_name == "etl.daily");
  CHECK(old->params.at("day") == "2026-01-01");
  CHECK(old->pipeline_version == 0);
}

TEST_CASE("a run record keeps the run it reruns and an older one decodes without it",
          "[storage][codec][rerun]") {
  RunRecord r;
  r.pipeline_name = "etl";
  r.pipeline_hash = "h1";
  r.status = RunStatus::kRunning;
  r.params = {{"day", "2026-12-01"}};
  r.rerun_of = "20261201-0001-abcd";
  auto back = codec::DecodeRun("r2", codec::EncodeRun(r));
  REQUIRE(back.ok());
  CHECK(back->rerun_of == "20261201-0001-abcd");
  CHECK(back->params == r.params);

  // The 11-field layout written before rerun_of existed.
  std::string full = codec::EncodeRun(r);
  msgpack::object_handle h = msgpack::unpack(full.data(), full.size());
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  const msgpack::object_array& a = h.get().via.array;
  pk.pack_array(11);
  for (uint32_t i = 0; i < 11; ++i) pk.pack(a.ptr[i]);
  auto old = codec::DecodeRun("r2", std::string(buf.data(), buf.size()));
  REQUIRE(old.ok());
  CHECK(old->pipeline_hash == "h1");
  CHECK(old->rerun_of.empty());
}

TEST_CASE("a run record keeps its handled failures and an older one decodes with none",
          "[storage][codec]") {
  RunRecord r;
  r.pipeline_name = "etl";
  r.status = RunStatus::kSuccess;
  r.rerun_of = "r1";
  r.handled_failures = 3;
  auto back = codec::DecodeRun("r2", codec::EncodeRun(r));
  REQUIRE(back.ok());
  CHECK(back->handled_failures == 3);
  CHECK(back->rerun_of == "r1");

  // The 13-field layout (format, 12 fields) written before
  // handled_failures existed.
  std::string full = codec::EncodeRun(r);
  msgpack::object_handle h = msgpack::unpack(full.data(), full.size());
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  const msgpack::object_array& a = h.get().via.array;
  REQUIRE(a.size == 14);
  pk.pack_array(13);
  for (uint32_t i = 0; i < 13; ++i) pk.pack(a.ptr[i]);
  auto old = codec::DecodeRun("r2", std::string(buf.data(), buf.size()));
  REQUIRE(old.ok());
  CHECK(old->rerun_of == "r1");
  CHECK(old->handled_failures == 0);
}

}  // namespace apollo11::storage
