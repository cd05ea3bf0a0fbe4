// Writes the generated part of the fuzz seed corpus: one encoded frame per
// wire and client message type, one value per journal record kind, the
// canonical JSON of every valid YAML seed, and dispatcher programs (a worker's
// life, recovery, loss). The outputs are committed under
// fuzz/corpus/; rerun this after changing a message, a record or the JSON
// snapshot format (docs/fuzzing.md):
//   build-fuzz/fuzz/fuzz_write_seed_corpus SOURCE_DIR
// It overwrites the generated files and leaves the hand-written YAML alone.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "fuzz/dispatcher_frames.h"
#include "replication/replication_frame.h"
#include "storage/batch_codec.h"
#include "storage/record_codec.h"
#include "transport/codec.h"

namespace apollo11::fuzz {
namespace {

namespace fs = std::filesystem;
using transport::MsgType;

bool WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) std::fprintf(stderr, "cannot write %s\n", path.c_str());
  return static_cast<bool>(out);
}

template <class T>
bool WriteFrame(const fs::path& dir, const char* name, uint16_t type, const T& body) {
  std::string frame;
  transport::Encode(type, body, &frame);
  return WriteFile(dir / (std::string(name) + ".msgpack"), frame);
}

transport::TaskPayload ShellTask() {
  transport::TaskPayload t;
  t.type = 0;
  t.command = "echo hello";
  t.workdir = "/tmp";
  t.env = {{"MODE", "fast"}};
  t.timeout_ms = 5000;
  t.precheck = "test -f done";
  return t;
}

bool WriteFrames(const fs::path& dir, const std::string& pipeline_json) {
  transport::ExecRef ref{"r1.greet", 1};
  transport::Hello hello{"etl", 4, {"gpu"}, {ref}, "", 0};
  transport::Dispatch dispatch{"r1.greet", 1, ShellTask(), "trace1", 3};
  transport::TaskPayload http;
  http.type = 2;
  http.url = "https://api.example.com/data";
  http.method = "POST";
  http.headers = {{"Content-Type", "application/json"}};
  http.body = "{}";
  http.expect_status = {200, 204};
  transport::Dispatch dispatch_http{"r1.fetch", 2, http, "trace1", 3};
  transport::ResultMsg result{"r1.greet",
                              1,
                              1,
                              75,
                              true,
                              "partial output\n",
                              "exit code 75",
                              1700000000000000,
                              1700000001000000,
                              "oops\n",
                              "",
                              ""};
  transport::Heartbeat heartbeat{3, false};
  transport::ProbeReply reply{{{"r1.greet", 1, 1}, {"r1.clean", 2, 0}}};
  bool ok =
      WriteFrame(dir, "hello", ToWire(MsgType::kHello), hello) &&
      WriteFrame(dir, "credit", ToWire(MsgType::kCredit), transport::Credit{8}) &&
      WriteFrame(dir, "dispatch_shell", ToWire(MsgType::kDispatch), dispatch) &&
      WriteFrame(dir, "dispatch_http", ToWire(MsgType::kDispatch), dispatch_http) &&
      WriteFrame(dir, "started", ToWire(MsgType::kStarted),
                 transport::Started{"r1.greet", 1, 1700000000000000}) &&
      WriteFrame(dir, "result", ToWire(MsgType::kResult), result) &&
      WriteFrame(dir, "ack", ToWire(MsgType::kAck), transport::Ack{"r1.greet", 1}) &&
      WriteFrame(dir, "heartbeat", ToWire(MsgType::kHeartbeat), heartbeat) &&
      WriteFrame(dir, "probe", ToWire(MsgType::kProbe), transport::Probe{{ref}}) &&
      WriteFrame(dir, "probe_reply", ToWire(MsgType::kProbeReply), reply) &&
      WriteFrame(dir, "cancel", ToWire(MsgType::kCancel), transport::Cancel{"r1.greet", 1, 3}) &&
      WriteFrame(dir, "bye", ToWire(MsgType::kBye), transport::Bye{}) &&
      WriteFrame(dir, "log_request", ToWire(MsgType::kLogRequest),
                 transport::LogRequest{7, "r1.greet", 1, 1, 0, 65536}) &&
      WriteFrame(dir, "log_reply", ToWire(MsgType::kLogReply),
                 transport::LogReply{7, "hello\n", 6, false, ""}) &&
      WriteFrame(dir, "refused", ToWire(MsgType::kRefused),
                 transport::Refused{"not the leader; the leader is tcp://10.0.0.2:5555", 7}) &&
      WriteFrame(dir, "watch", ToWire(MsgType::kWatch), transport::Watch{"w1", 6});
  using actors::ClientType;
  auto client = [&](const char* name, ClientType type, const auto& body) {
    return WriteFrame(dir, name, static_cast<uint16_t>(type), body);
  };
  actors::SubmitRun submit;
  submit.pipeline_json = pipeline_json;
  submit.pipeline_hash = "0123456789abcdef";
  submit.params = {{"region", "eu"}};
  actors::Query query;
  query.kind = actors::QueryKind::kExplain;
  query.id = "r1";
  query.arg = "greet";
  actors::SubmitReply submitted;
  submitted.run_id = "r1";
  actors::QueryReply answer;
  answer.json = "{\"runs\":[]}";
  ok = ok && client("client_submit_run", ClientType::kSubmitRun, submit) &&
       client("client_cancel_run", ClientType::kCancelRun,
              actors::CancelRun{"r1", "operator asked"}) &&
       client("client_query", ClientType::kQuery, query) &&
       client("client_audit_note", ClientType::kAuditNote,
              actors::AuditNote{actors::kClientProtocolVersion, "resign", "the leadership", true,
                                "resign requested",
                                actors::OnBehalf{"alice", "admin", "http", "10.0.0.7:1", "r1"}}) &&
       client("client_submit_reply", ClientType::kSubmitReply, submitted) &&
       client("client_query_reply", ClientType::kQueryReply, answer) &&
       client("client_run_progress", ClientType::kRunProgress,
              actors::RunProgress{"r1", {1, 0, 2, 3, 0, 0, 0, 0, 0}}) &&
       client("client_run_finished", ClientType::kRunFinished,
              actors::RunFinished{"r1", 2, "all tasks succeeded"});
  return ok;
}

bool WriteRecords(const fs::path& dir) {
  namespace codec = storage::codec;
  storage::TransitionRecord t;
  t.ts = 1700000000000000;
  t.run_id = "r1";
  t.task_id = "greet";
  t.exec_id = "r1.greet";
  t.attempt = 1;
  t.from = TaskState::kReady;
  t.to = TaskState::kRunning;
  t.reason = "placed on worker w1";
  t.actor = "dispatcher";
  t.worker_id = "w1";
  storage::TransitionRecord moved = t;
  moved.worker_id.clear();
  moved.exec_id = "r1.greet.2";
  moved.to = TaskState::kFailed;
  storage::ExecutionRecord e;
  e.run_id = "r1";
  e.task_id = "greet";
  e.attempt = 2;
  e.state = TaskState::kRetrying;
  e.worker_id = "w1";
  e.exit_code = 75;
  e.ready_at = 1;
  e.started_at = 2;
  e.finished_at = 3;
  e.next_retry_at = 4;
  e.deadline = 5;
  e.retries_used = 1;
  e.error = "exit code 75";
  e.output = "partial\n";
  e.trace_id = "trace1";
  storage::RunRecord r;
  r.pipeline_name = "demo.hello";
  r.pipeline_hash = "0123456789abcdef";
  r.status = RunStatus::kSuccess;
  r.created_at = 1;
  r.started_at = 2;
  r.finished_at = 3;
  r.task_count = 7;
  r.reason = "all tasks succeeded";
  r.params = {{"region", "eu"}};
  storage::AuditRecord a;
  a.at = 1'700'000'000'000'000;
  a.principal = "alice";
  a.role = "operator";
  a.transport = "http";
  a.source = "10.0.0.7:51234 via key:Ab3dE9fG1h2J";
  a.request_id = "9f2c41d07be3a815";
  a.action = "cancel";
  a.target = "r1";
  a.ok = true;
  a.outcome = "canceled";
  return WriteFile(dir / "audit.bin", storage::EncodeAudit(a)) &&
         WriteFile(dir / "transition.bin", codec::EncodeTransition(t)) &&
         WriteFile(dir / "transition_own_exec_id.bin", codec::EncodeTransition(moved)) &&
         WriteFile(dir / "execution.bin", codec::EncodeExecution(e)) &&
         WriteFile(dir / "run.bin", codec::EncodeRun(r));
}

template <class T>
std::string Frame(MsgType type, const T& body) {
  return transport::EncodeToString(type, body);
}

// Programs for fuzz_dispatcher_frames (see dispatcher_frames.h). Worker
// argument 0 is w1, 1 is w2; execution argument 0 is r1.t0 (attempt 1,
// group default), 1 is r1.t1, 8 is r1.t0 in group etl.
bool WriteDispatcherPrograms(const fs::path& dir) {
  using S = DispatcherStep;
  const transport::ExecRef t0{"r1.t0", 1};
  std::string life;
  AppendStep(&life, S::kFrame, 0, Frame(MsgType::kHello, transport::Hello{"", 2, {}, {}, ""}));
  AppendStep(&life, S::kFrame, 0, Frame(MsgType::kCredit, transport::Credit{2}));
  AppendStep(&life, S::kEnqueue, 0);
  AppendStep(&life, S::kEnqueue, 1);
  AppendStep(&life, S::kPlace, 0);
  AppendStep(&life, S::kFrame, 0, Frame(MsgType::kStarted, transport::Started{"r1.t0", 1, 5}));
  AppendStep(&life, S::kFrame, 0,
             Frame(MsgType::kResult,
                   transport::ResultMsg{"r1.t0", 1, 0, 0, true, "ok", "", 5, 6, "", "", ""}));
  AppendStep(&life, S::kAck, 0);
  AppendStep(&life, S::kFrame, 0, Frame(MsgType::kHeartbeat, transport::Heartbeat{1, true}));
  AppendStep(&life, S::kProbe, 0);
  AppendStep(&life, S::kFrame, 0,
             Frame(MsgType::kProbeReply, transport::ProbeReply{{{"r1.t1", 1, 0}}}));
  AppendStep(&life, S::kCancel, 1);
  AppendStep(&life, S::kHeartbeat, 0);
  AppendStep(&life, S::kFrame, 0, Frame(MsgType::kBye, transport::Bye{}));

  std::string recovery;
  AppendStep(&recovery, S::kAdopt, 0);
  AppendStep(&recovery, S::kEnqueue, 0x81);  // r1.t1 held for a claim
  AppendStep(&recovery, S::kFrame, 0,
             Frame(MsgType::kHello, transport::Hello{"", 4, {}, {t0, {"r1.t1", 1}}, ""}));
  AppendStep(&recovery, S::kAdvance, 50);
  AppendStep(&recovery, S::kPlace, 0);
  AppendStep(&recovery, S::kFrame, 1,
             Frame(MsgType::kResult,
                   transport::ResultMsg{"r1.t0", 1, 1, 3, true, "", "x", 1, 2, "", "", ""}));

  std::string lost;
  AppendStep(&lost, S::kFrame, 1,
             Frame(MsgType::kHello, transport::Hello{"etl", 1, {"gpu"}, {}, ""}));
  AppendStep(&lost, S::kFrame, 1, Frame(MsgType::kCredit, transport::Credit{5}));
  AppendStep(&lost, S::kEnqueue, 8);
  AppendStep(&lost, S::kPlace, 0);
  AppendStep(&lost, S::kWorkerLost, 1);
  AppendStep(&lost, S::kFrame, 1, Frame(MsgType::kCredit, transport::Credit{1}));
  // A worker of an older protocol (answered in its own version), then one
  // that watches this coordinator before it says HELLO.
  std::string strangers;
  std::string old_hello;
  transport::EncodeAs(transport::kProtocolVersion - 1, ToWire(MsgType::kHello),
                      transport::Hello{"", 2, {}, {}, ""}, &old_hello);
  AppendStep(&strangers, S::kFrame, 2, old_hello);
  AppendStep(&strangers, S::kFrame, 1, Frame(MsgType::kWatch, transport::Watch{"w2", 3}));
  AppendStep(&strangers, S::kFrame, 1, Frame(MsgType::kHello, transport::Hello{"", 1, {}, {}, ""}));
  AppendStep(&strangers, S::kHeartbeat, 0);
  return WriteFile(dir / "worker_life.bin", life) && WriteFile(dir / "recovery.bin", recovery) &&
         WriteFile(dir / "worker_lost.bin", lost) && WriteFile(dir / "strangers.bin", strangers);
}

// The canonical JSON of every YAML seed that parses. Paths inside are made
// relative to the source tree so the committed files do not name this machine.
bool WritePipelineJson(const fs::path& source, const fs::path& yaml_dir, const fs::path& dir,
                       std::string* first) {
  const std::string prefix = source.string() + "/";
  for (const auto& entry : fs::directory_iterator(yaml_dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed =
        dsl::ParsePipelineText(text.str(), (source / "examples/design/fuzz.yaml").string());
    if (!parsed.ok()) continue;
    std::string json = dsl::CanonicalJson(*parsed.pipeline);
    for (size_t at; (at = json.find(prefix)) != std::string::npos;) json.erase(at, prefix.size());
    if (first->empty() || entry.path().stem() == "hello_example") *first = json;
    if (!WriteFile(dir / (entry.path().stem().string() + ".json"), json)) return false;
  }
  return !first->empty();
}

// Replication frames: a batch carrying a small batch, a hello and a copy chunk.
bool WriteReplicationFrames(const fs::path& dir) {
  storage::RunBatch batch;
  storage::TransitionRecord t;
  t.run_id = "r1";
  t.task_id = "greet";
  t.to = TaskState::kReady;
  batch.Append(t);
  storage::RunRecord r;
  r.run_id = "r1";
  r.pipeline_name = "hello";
  batch.CreateRun(r);
  batch.RecordDuration("hello/greet", 1000);
  storage::AuditRecord a;
  a.principal = "alice";
  a.action = "trigger";
  a.target = "demo.hello";
  a.ok = true;
  batch.PutAudit(a);
  replication::ReplicationFrame f;
  f.type = replication::FrameType::kBatch;
  f.epoch = 3;
  f.sender = "c1";
  f.batch = 1;
  f.seq = 1;
  f.payload = storage::codec::EncodeBatch(batch);
  f.checksum = replication::Crc32(f.payload);
  replication::ReplicationFrame hello;
  hello.sender = "s1";
  hello.credit = 64;
  hello.batch = 3;
  hello.seq = 9;
  hello.batch_epoch = 7;
  replication::ReplicationFrame chunk;
  chunk.type = replication::FrameType::kCopyChunk;
  chunk.sender = "c1";
  chunk.payload = "journal bytes";
  chunk.checksum = replication::Crc32(chunk.payload);
  return WriteFile(dir / "batch.bin", replication::EncodeFrame(f)) &&
         WriteFile(dir / "hello.bin", replication::EncodeFrame(hello)) &&
         WriteFile(dir / "chunk.bin", replication::EncodeFrame(chunk));
}

}  // namespace
}  // namespace apollo11::fuzz

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s SOURCE_DIR  (writes SOURCE_DIR/fuzz/corpus/*)\n", argv[0]);
    return 2;
  }
  const fs::path source = fs::weakly_canonical(fs::absolute(argv[1]));
  const fs::path corpus = source / "fuzz" / "corpus";
  if (!fs::is_directory(corpus / "dsl_parser")) {
    std::fprintf(stderr, "%s has no fuzz/corpus/dsl_parser: not an Apollo-11 source tree\n",
                 source.c_str());
    return 2;
  }
  for (const char* sub : {"pipeline_json", "transport_decode", "journal_record",
                          "dispatcher_frames", "replication_frame"}) {
    fs::create_directories(corpus / sub);
  }
  std::string pipeline_json;
  bool ok = apollo11::fuzz::WritePipelineJson(source, corpus / "dsl_parser",
                                              corpus / "pipeline_json", &pipeline_json) &&
            apollo11::fuzz::WriteFrames(corpus / "transport_decode", pipeline_json) &&
            apollo11::fuzz::WriteRecords(corpus / "journal_record") &&
            apollo11::fuzz::WriteDispatcherPrograms(corpus / "dispatcher_frames") &&
            apollo11::fuzz::WriteReplicationFrames(corpus / "replication_frame");
  if (!ok) std::fprintf(stderr, "failed to write the seed corpus\n");
  return ok ? 0 : 1;
}
