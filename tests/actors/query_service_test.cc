// QueryService and ClientSessions without sockets: a Query in, a QueryReply
// out; client events in, encoded frames out.

#include "actors/queries/query_service.h"

#include <catch2/catch.hpp>
#include <optional>
#include <random>

#include "actors/actor_loop.h"
#include "actors/queries/run_views.h"
#include "actors/scheduler/client_sessions.h"
#include "common/json_dump.h"
#include "common/utf8.h"
#include "tests/actors/cli_harness.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

constexpr const char* kReplaced = "\xEF\xBF\xBD";  // U+FFFD

// A journal holding one failed run whose task printed bytes that are not UTF-8.
struct BadBytesJournal {
  testing::ScratchDir dir;
  std::unique_ptr<storage::Journal> journal;
  BadBytesJournal() {
    auto opened = storage::Journal::Open(dir.path() + "/journal", {});
    REQUIRE(opened.ok());
    journal = std::move(*opened);
    storage::Journal::Batch batch;
    storage::RunRecord run;
    run.run_id = "r1";
    run.pipeline_name = "p\xff";
    run.pipeline_hash = "h1";
    run.status = RunStatus::kFailed;
    run.created_at = 1'000'000;
    run.reason = "task t failed: bad \xff byte";
    batch.PutRun(run);
    storage::ExecutionRecord e;
    e.exec_id = "r1.t";
    e.run_id = "r1";
    e.task_id = "t";
    e.attempt = 1;
    e.state = TaskState::kFailed;
    e.worker_id = "w1";
    e.exit_code = 1;
    e.error = "exit 1: err \xfe\xff";
    e.output = "out \xc3";
    batch.PutExecution(e);
    storage::TransitionRecord t;
    t.run_id = "r1";
    t.task_id = "t";
    t.exec_id = "r1.t";
    t.attempt = 1;
    t.from = TaskState::kRunning;
    t.to = TaskState::kFailed;
    t.reason = "exit 1: err \xfe\xff";
    t.actor = "worker w1";
    batch.Append(t);
    batch.PutPipeline("h1", "{\"name\":\"p\"}");
    REQUIRE(journal->Commit(batch).ok());
  }
};

Query Ask(QueryKind kind, std::string id = "", std::string arg = "") {
  Query q;
  q.kind = kind;
  q.id = std::move(id);
  q.arg = std::move(arg);
  return q;
}

template <class T>
T DecodeFrame(const ClientFrame& f, ClientType type) {
  auto env = transport::DecodeEnvelope(f.frame.data(), f.frame.size(), ClientLimits());
  REQUIRE(env.ok());
  REQUIRE(env->type == static_cast<uint16_t>(type));
  auto body = transport::BodyAs<T>(*env);
  REQUIRE(body.ok());
  return *body;
}

}  // namespace

TEST_CASE("a task's non-UTF-8 output is answered with replacement characters, never thrown",
          "[query]") {
  // Regression: `GET /api/executions/ID` (or `status` / `history`) on a task
  // that printed a byte that is not UTF-8 made json::dump throw on the
  // scheduler's thread, which died while the node kept running.
  BadBytesJournal j;
  SystemClock clock;
  SchedulerCore core(j.journal.get(), &clock, {});
  WorkersSnapshot workers;
  workers.workers.push_back({"w\xff", "g", 1, 1, 0, 0, 0, {"l\xfe"}, 0, 0});
  QueryService service(storage::ReadersOf(j.journal.get()), "");
  QueryContext ctx{&core, &workers, nullptr, nullptr, clock.Now()};
  const Query queries[] = {Ask(QueryKind::kStatus, "r1"),
                           Ask(QueryKind::kRun, "r1"),
                           Ask(QueryKind::kHistory, "r1"),
                           Ask(QueryKind::kHistory, "r1.t"),
                           Ask(QueryKind::kExecution, "r1.t"),
                           Ask(QueryKind::kRuns),
                           Ask(QueryKind::kExplain, "r1", "t"),
                           Ask(QueryKind::kPipelines),
                           Ask(QueryKind::kWorkers)};
  for (const Query& q : queries) {
    INFO(QueryKindName(q.kind) << " " << q.id);
    QueryReply reply;
    REQUIRE_NOTHROW(reply = service.Answer(q, ctx));
    CHECK(reply.error.empty());
    CHECK(reply.code == 0);
    CHECK(FirstInvalidUtf8(reply.json) == std::string_view::npos);
    CHECK(reply.json.find(kReplaced) != std::string::npos);
    CHECK_FALSE(nlohmann::json::parse(reply.json, nullptr, false).is_discarded());
  }
}

TEST_CASE("query refusals carry their status code", "[query]") {
  BadBytesJournal j;
  SystemClock clock;
  SchedulerCore core(j.journal.get(), &clock, {});
  WorkersSnapshot workers;
  QueryService service(storage::ReadersOf(j.journal.get()), "");
  QueryContext ctx{&core, &workers, nullptr, nullptr, clock.Now()};

  QueryReply missing = service.Answer(Ask(QueryKind::kStatus, "nope"), ctx);
  CHECK(ReplyStatus(missing.code, missing.error).code() == StatusCode::kNotFound);
  CHECK(missing.error == "no run nope");
  QueryReply no_exec = service.Answer(Ask(QueryKind::kExecution, "r9.x"), ctx);
  CHECK(ReplyStatus(no_exec.code, no_exec.error).code() == StatusCode::kNotFound);

  Query unknown;
  unknown.kind = static_cast<QueryKind>(200);  // a peer may send any number
  QueryReply refused;
  REQUIRE_NOTHROW(refused = service.Answer(unknown, ctx));
  CHECK(ReplyStatus(refused.code, refused.error).code() == StatusCode::kInvalidInput);
  CHECK(refused.error.find("unknown query kind 200") != std::string::npos);

  Query logs = Ask(QueryKind::kLogs, "r1.t", "sideways");
  auto plan = service.PlanLogFetch(logs);
  REQUIRE_FALSE(plan.ok());
  CHECK(plan.status().code() == StatusCode::kInvalidInput);
  logs.arg = "err";
  plan = service.PlanLogFetch(logs);
  REQUIRE(plan.ok());
  CHECK(plan->fetch.worker_id == "w1");
  CHECK(plan->fetch.request.stream == 1);
}

TEST_CASE("query kinds are named as the CLI and the HTTP API spell them", "[query]") {
  for (const auto& [name, kind] : kQueryKindNames) {
    auto parsed = ParseQueryKind(name);
    REQUIRE(parsed.ok());
    CHECK(*parsed == kind);
    CHECK(std::string(QueryKindName(kind)) == name);
  }
  CHECK(ParseQueryKind("statuss").status().code() == StatusCode::kInvalidInput);
}

TEST_CASE("a submission is answered only after its commit, and progress goes to its client",
          "[sessions]") {
  ClientSessions sessions;
  sessions.Accepted("client-a", "r1");
  sessions.Reply("client-b", ClientType::kQueryReply, QueryReply{});
  auto frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);  // the query's answer; the submission waits
  CHECK(frames[0].identity == "client-b");
  CHECK(sessions.held_replies() == 1);

  ConfirmReply confirmed;
  confirmed.text = "killed";
  sessions.Confirmed("client-c", confirmed);
  RunProgress progress;
  progress.run_id = "r1";
  progress.counts = {1, 2};
  RunFinished finished;
  finished.run_id = "r1";
  sessions.OnCommitted({progress}, {finished});
  frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 4);
  CHECK(frames[0].identity == "client-a");
  CHECK(DecodeFrame<SubmitReply>(frames[0], ClientType::kSubmitReply).run_id == "r1");
  CHECK(DecodeFrame<ConfirmReply>(frames[1], ClientType::kConfirmReply).text == "killed");
  CHECK(DecodeFrame<RunProgress>(frames[2], ClientType::kRunProgress).counts.size() == 2);
  CHECK(frames[3].identity == "client-a");
  DecodeFrame<RunFinished>(frames[3], ClientType::kRunFinished);
  CHECK(sessions.held_replies() == 0);
  CHECK(sessions.subscribers() == 0);  // forgotten after the end
}

TEST_CASE("a log request is answered by its worker or by its deadline, once", "[sessions]") {
  ClientSessions sessions;
  const uint64_t answered = sessions.AwaitLog("c1", {{"worker", "w1"}}, 1000);
  const uint64_t silent = sessions.AwaitLog("c2", {{"worker", "w2"}}, 2000);
  CHECK(sessions.NextDeadline() == 1000);

  LogFetched fetched;
  fetched.reply.request_id = answered;
  fetched.reply.data = "bytes \xff";
  fetched.reply.size = 7;
  sessions.OnLogFetched(fetched);
  auto frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  auto reply = DecodeFrame<QueryReply>(frames[0], ClientType::kQueryReply);
  CHECK(reply.error.empty());
  CHECK(reply.data == "bytes \xff");  // raw bytes stay raw
  CHECK(nlohmann::json::parse(reply.json)["size"] == 7);

  sessions.ExpireLogs(1999);
  CHECK(sessions.TakeFrames().empty());
  sessions.ExpireLogs(2000);
  frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].identity == "c2");
  reply = DecodeFrame<QueryReply>(frames[0], ClientType::kQueryReply);
  CHECK(ReplyStatus(reply.code, reply.error).code() == StatusCode::kIo);
  CHECK(reply.error.find("worker w2 did not answer") != std::string::npos);

  fetched.reply.request_id = silent;  // too late: already answered
  sessions.OnLogFetched(fetched);
  CHECK(sessions.TakeFrames().empty());
  CHECK(sessions.pending_logs() == 0);
}

TEST_CASE("a refusal quotes at most 512 bytes of what the client sent", "[query][security]") {
  BadBytesJournal j;
  SystemClock clock;
  SchedulerCore core(j.journal.get(), &clock, {});
  WorkersSnapshot workers;
  QueryService service(storage::ReadersOf(j.journal.get()), "");
  QueryContext ctx{&core, &workers, nullptr, nullptr, clock.Now()};
  const std::string huge(1 << 20, 'x');
  for (const Query& q : {Ask(QueryKind::kStatus, huge), Ask(QueryKind::kExplain, "r1", huge),
                         Ask(QueryKind::kExecution, huge + ".t")}) {
    INFO(QueryKindName(q.kind));
    QueryReply reply = service.Answer(q, ctx);
    CHECK(reply.code != 0);
    CHECK(reply.error.size() < 600);
    CHECK(reply.error.find("more bytes)") != std::string::npos);
  }
  // A log fetch is refused by PlanLogFetch, not Answer: capped the same.
  for (const Query& q : {Ask(QueryKind::kLogs, "r1.t", huge), Ask(QueryKind::kLogs, huge, "out")}) {
    auto plan = service.PlanLogFetch(q);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().size() < 600);
  }
}

TEST_CASE("an answer larger than a client accepts becomes an error naming the limit",
          "[sessions][limits]") {
  ClientSessions sessions;
  QueryReply huge;
  huge.json = std::string(ClientLimits().max_frame, 'j');  // a status of a giant run
  sessions.Reply("c1", ClientType::kQueryReply, huge);
  auto frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].frame.size() <= ClientLimits().max_frame);
  QueryReply got = DecodeFrame<QueryReply>(frames[0], ClientType::kQueryReply);
  CHECK(got.code == static_cast<uint8_t>(StatusCode::kInvalidInput));
  CHECK(got.json.empty());
  CHECK(got.error.find("above the client limit of 67108864 bytes") != std::string::npos);
}

TEST_CASE("the pipeline query shows env names, not values, unless the full snapshot is asked",
          "[query][secrets]") {
  testing::ScratchDir dir;
  auto opened = storage::Journal::Open(dir.path() + "/journal", {});
  REQUIRE(opened.ok());
  storage::Journal::Batch batch;
  storage::RunRecord run;
  run.run_id = "r1";
  run.pipeline_name = "shop.load";
  run.pipeline_hash = "h1";
  run.status = RunStatus::kSuccess;
  run.created_at = 1'000'000;
  batch.PutRun(run);
  batch.PutPipeline("h1",
                    R"({"name":"shop.load","tasks":[{"id":"a","env":{"PLAIN":"plain-value-77"},)"
                    R"("secrets":{"P":"env:TOKEN"}}]})");
  REQUIRE((*opened)->Commit(batch).ok());
  QueryService service(storage::ReadersOf(opened->get()), "");

  QueryReply shown = service.Answer(Ask(QueryKind::kPipeline, "shop.load"), {});
  REQUIRE(shown.code == 0);
  CHECK(shown.json.find("plain-value-77") == std::string::npos);
  auto doc = nlohmann::json::parse(shown.json);
  CHECK(doc["snapshot"]["tasks"][0]["env"] == nlohmann::json::array({"PLAIN"}));
  CHECK(doc["snapshot"]["tasks"][0]["secrets"]["P"] == "env:TOKEN");

  QueryReply full = service.Answer(Ask(QueryKind::kPipeline, "shop.load", "full"), {});
  REQUIRE(full.code == 0);
  CHECK(full.json.find("plain-value-77") != std::string::npos);
}

TEST_CASE("a task's summary written without a tree is the tree's text, for any execution",
          "[query]") {
  std::mt19937 random(20261205);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  const char* const kTexts[] = {"w1",          "exit 1",  "say \"hi\"", "back\\slash", "tab\there",
                                "caf\xc3\xa9", "del\x7f", "",           "/x/y:z"};
  size_t plain = 0;
  for (int i = 0; i < 3000; ++i) {
    storage::RunRecord run;
    run.run_id = "r1";
    if (pick(4) == 0) run.rerun_of = pick(5) == 0 ? "r\"0" : "r0";
    if (pick(2) == 0) run.status = RunStatus::kSuccess;  // a failed task is then handled
    storage::ExecutionRecord e;
    e.exec_id = "r1.t" + std::to_string(i) + (pick(10) == 0 ? kTexts[pick(9)] : "");
    e.attempt = static_cast<uint32_t>(pick(4));
    e.state = static_cast<TaskState>(pick(kTaskStateCount));
    e.exit_code = pick(300) - 150;
    if (pick(3) == 0) e.error = std::string(kTexts[pick(9)]);
    if (pick(2) == 0) e.worker_id = kTexts[pick(9)];
    if (pick(2) == 0) e.started_at = 1'700'000'000'000'000 + pick(1000);
    if (pick(2) == 0) e.finished_at = 1'700'000'000'000'000 + pick(1000);
    switch (pick(15)) {  // now and then a member only the tree writes
      case 0:
        e.task_output = std::string("{\"rows\":[1]}");
        break;
      case 1:
        e.item = std::string("x");
        break;
      case 2:
        e.logs_truncated = std::string("disk full");
        break;
      case 3:
        e.slow = storage::SlowFlag::kFlagged;
        e.slow_reason = std::string("slow");
        e.flagged_at = 5;
        break;
      default:
        break;
    }
    INFO("execution " << i);
    std::optional<std::string> compact = PlainRunTaskJson(run, e, -1);
    std::optional<std::string> nested = PlainRunTaskJson(run, e, 4);
    REQUIRE(compact.has_value() == nested.has_value());
    if (!compact) continue;
    ++plain;
    CHECK(*compact == SafeJsonDump(RunTaskJson(run, e)));
    std::string shifted;  // WriteRunSummaryJson's shift of the tree's dump(2)
    for (char c : SafeJsonDump(RunTaskJson(run, e), 2)) {
      shifted += c;
      if (c == '\n') shifted.append(4, ' ');
    }
    CHECK(*nested == shifted);
  }
  CHECK(plain > 1000);  // most executions take the direct path
}

TEST_CASE("a run's status is streamed from the journal and reads as the tree-built document",
          "[query]") {
  // The coordinator builds a status answer one execution at a time
  // (RunSummaryText); the CLI's local views build a JSON tree
  // (RunSummaryJson). Both must say the same, task by task.
  testing::ScratchDir dir;
  auto opened = storage::Journal::Open(dir.path() + "/journal", {});
  REQUIRE(opened.ok());
  std::unique_ptr<storage::Journal> journal = std::move(*opened);
  storage::Journal::Batch batch;
  storage::RunRecord run;
  run.run_id = "r7";
  run.pipeline_name = "p";
  run.pipeline_hash = "h";
  run.status = RunStatus::kSuccess;
  run.created_at = 1'000'000;
  run.started_at = 1'000'000;
  run.finished_at = 3'500'000;
  run.params = {{"day", "monday"}};
  run.rerun_of = "r6";
  batch.PutRun(run);
  // Ids whose journal order (by exec id) is not their order as strings
  // alone would give, and every optional member once.
  const std::vector<std::string> ids = {"t10", "t1", "t2", "a.b", "t1x", "z"};
  for (size_t i = 0; i < ids.size(); ++i) {
    storage::ExecutionRecord e;
    e.exec_id = "r7." + ids[i];
    e.run_id = "r7";
    e.task_id = ids[i];
    e.attempt = static_cast<uint32_t>(i % 3);
    e.state = i % 2 ? TaskState::kSuccess : TaskState::kFailed;
    e.exit_code = static_cast<int>(i);
    if (i == 0) e.error = "exit 1";
    if (i == 1) e.worker_id = "w1";
    if (i == 2) e.task_output = "{\"rows\":[1,2]}";
    if (i == 3) e.item = "x";
    if (i == 4) e.logs_truncated = "disk full";
    if (i == 5) {
      e.slow = storage::SlowFlag::kFlagged;
      e.slow_reason = "3x its p50";
      e.flagged_at = 2'000'000;
    }
    e.started_at = 1'100'000 + static_cast<Micros>(i);
    e.finished_at = 1'200'000 + static_cast<Micros>(i);
    batch.PutExecution(e);
  }
  REQUIRE(journal->Commit(batch).ok());

  auto execs = journal->ExecutionsOfRun("r7");
  REQUIRE(execs.ok());
  REQUIRE(execs->size() == ids.size());
  auto text = RunSummaryText(run, journal.get());
  REQUIRE(text.ok());
  const auto streamed = nlohmann::json::parse(*text, nullptr, false);
  REQUIRE_FALSE(streamed.is_discarded());
  CHECK(streamed == RunSummaryJson(run, *execs));
  CHECK(streamed["tasks"].size() == ids.size());
  CHECK(streamed["tasks"]["t1"]["worker"] == "w1");
  CHECK(streamed["tasks"]["t2"]["output"]["rows"].size() == 2);
  // `run --json` writes the indented document in pieces: the same text,
  // byte for byte, as the tree printed whole.
  std::string pretty;
  size_t pieces = 0;
  REQUIRE(WriteRunSummaryJson(run, journal.get(), [&](std::string_view piece) {
            pretty += piece;
            ++pieces;
          }).ok());
  CHECK(pretty == SafeJsonDump(RunSummaryJson(run, *execs), 2));
  CHECK(pieces == ids.size() + 2);  // the header, each task, the end

  SystemClock clock;
  SchedulerCore core(journal.get(), &clock, {});
  WorkersSnapshot workers;
  QueryService service(storage::ReadersOf(journal.get()), "");
  QueryContext ctx{&core, &workers, nullptr, nullptr, clock.Now()};
  QueryReply reply = service.Answer(Ask(QueryKind::kStatus, "r7"), ctx);
  REQUIRE(reply.error.empty());
  CHECK(nlohmann::json::parse(reply.json) == streamed);
  CHECK_FALSE(streamed.contains("tasks_omitted"));

  // Bounded: the tasks that fit, in id order, and a count of the rest.
  const size_t budget = text->size() - 200;
  auto cut = RunSummaryText(run, journal.get(), budget);
  REQUIRE(cut.ok());
  CHECK(cut->size() <= budget);
  const auto bounded = nlohmann::json::parse(*cut, nullptr, false);
  REQUIRE_FALSE(bounded.is_discarded());
  REQUIRE(bounded.contains("tasks_omitted"));
  CHECK(bounded["tasks_omitted"].get<size_t>() >= 1);
  CHECK(bounded["tasks"].size() + bounded["tasks_omitted"].get<size_t>() == ids.size());
  CHECK(bounded["state"] == streamed["state"]);
  CHECK(bounded["duration_ms"] == streamed["duration_ms"]);
  for (const auto& [id, task] : bounded["tasks"].items()) CHECK(task == streamed["tasks"][id]);
  // A budget too small for any task still gives the run and the count.
  auto bare = RunSummaryText(run, journal.get(), 10);
  REQUIRE(bare.ok());
  const auto header = nlohmann::json::parse(*bare, nullptr, false);
  REQUIRE_FALSE(header.is_discarded());
  CHECK(header["tasks"].empty());
  CHECK(header["tasks_omitted"] == ids.size());

  // A run without executions prints its empty task map as the tree does.
  storage::RunRecord bare_run = run;
  bare_run.run_id = "r8";
  storage::Journal::Batch bare_batch;
  bare_batch.PutRun(bare_run);
  REQUIRE(journal->Commit(bare_batch).ok());
  std::string empty;
  REQUIRE(WriteRunSummaryJson(bare_run, journal.get(), [&](std::string_view piece) {
            empty += piece;
          }).ok());
  CHECK(empty == SafeJsonDump(RunSummaryJson(bare_run, {}), 2));
}

TEST_CASE("a stored output nested past the limit is answered as no output, not printed back",
          "[query]") {
  // Only a forged RESULT can carry one: a worker refuses such an output.
  storage::RunRecord run;
  run.run_id = "r1";
  storage::ExecutionRecord e;
  e.exec_id = "r1.a";
  e.state = TaskState::kSuccess;
  e.task_output = std::string(40000, '[') + std::string(40000, ']');
  const nlohmann::json task = RunTaskJson(run, e);
  CHECK(task["output"].is_null());
  CHECK(SafeJsonDump(task).find("\"output\":null") != std::string::npos);
  e.task_output = std::string(128, '[') + std::string(128, ']');
  CHECK(RunTaskJson(run, e)["output"].dump() == e.task_output);
}
