// The change feed (actors/scheduler/change_feed.h) and the long-polled
// `changes` queries ClientSessions holds: positions, resets, the ring's
// bound, and who is answered when.

#include "actors/scheduler/change_feed.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "actors/scheduler/client_sessions.h"
#include "transport/codec.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

RunChange Change(const std::string& run, RunStatus status, uint32_t running) {
  RunChange c;
  c.run_id = run;
  c.pipeline = "p";
  c.status = status;
  c.tasks[static_cast<int>(TaskState::kRunning)] = running;
  return c;
}

nlohmann::json ReplyJson(const ClientFrame& f, uint8_t* code = nullptr) {
  auto env = transport::DecodeEnvelope(f.frame.data(), f.frame.size(), ClientLimits());
  REQUIRE(env.ok());
  REQUIRE(env->type == static_cast<uint16_t>(ClientType::kQueryReply));
  auto reply = transport::BodyAs<QueryReply>(*env);
  REQUIRE(reply.ok());
  if (code != nullptr) *code = reply->code;
  return reply->json.empty() ? nlohmann::json() : nlohmann::json::parse(reply->json);
}

}  // namespace

TEST_CASE("the change feed answers what changed after a position, in order", "[changes]") {
  ChangeFeed feed("f1");
  auto now = feed.Answer("");
  CHECK(now["feed"] == "f1");
  CHECK(now["seq"] == 0);
  CHECK(now["changes"].empty());
  CHECK_FALSE(feed.Ready("f1:0"));  // nothing newer: held

  feed.Append({Change("r1", RunStatus::kRunning, 2), Change("r2", RunStatus::kSuccess, 0)});
  CHECK(feed.Ready("f1:0"));
  auto all = feed.Answer("f1:0");
  CHECK_FALSE(all["reset"].get<bool>());
  CHECK(all["seq"] == 2);
  REQUIRE(all["changes"].size() == 2);
  CHECK(all["changes"][0]["run_id"] == "r1");
  CHECK(all["changes"][0]["state"] == "RUNNING");
  CHECK(all["changes"][0]["tasks"] == nlohmann::json{{"RUNNING", 2}});  // non-zero counts only
  CHECK(all["changes"][1]["seq"] == 2);
  CHECK(all["changes"][1]["state"] == "SUCCESS");

  auto rest = feed.Answer("f1:1");
  REQUIRE(rest["changes"].size() == 1);
  CHECK(rest["changes"][0]["run_id"] == "r2");
  CHECK_FALSE(feed.Ready("f1:2"));
}

TEST_CASE("a position of another feed, ahead of it or fallen out of its ring is reset",
          "[changes]") {
  ChangeFeed feed("f1");
  feed.Append({Change("r1", RunStatus::kRunning, 1)});
  for (const char* since : {"f0:1", "f1:9", "f1:", "f1:x", "f1", "f1:1:2"}) {
    INFO(since);
    CHECK(feed.Ready(since));
    auto a = feed.Answer(since);
    CHECK(a["reset"].get<bool>());
    CHECK(a["changes"].empty());
    CHECK(a["seq"] == 1);  // where to go on from
  }
  std::vector<RunChange> many;
  for (size_t i = 0; i < ChangeFeed::kCapacity + 10; ++i) {
    many.push_back(Change("r" + std::to_string(i), RunStatus::kRunning, 1));
  }
  feed.Append(std::move(many));
  CHECK(feed.Answer("f1:1")["reset"].get<bool>());  // its next change was dropped
  const uint64_t last = feed.seq();
  auto page = feed.Answer("f1:" + std::to_string(last - ChangeFeed::kCapacity));
  CHECK_FALSE(page["reset"].get<bool>());
  CHECK(page["changes"].size() == ChangeFeed::kMaxPerAnswer);  // the rest on the next ask
  CHECK(page["seq"] == last - ChangeFeed::kCapacity + ChangeFeed::kMaxPerAnswer);
}

TEST_CASE("a changes query waits for the next commit that changes a run, or its deadline",
          "[changes][sessions]") {
  ClientSessions sessions;
  const std::string feed = sessions.feed().token();
  sessions.AwaitChanges("c0", "", 5000);  // where is it now: answered at once
  auto frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(ReplyJson(frames[0])["seq"] == 0);

  sessions.AwaitChanges("c1", feed + ":0", 1000);
  sessions.AwaitChanges("c2", feed + ":0", 3000);
  CHECK(sessions.TakeFrames().empty());
  CHECK(sessions.NextDeadline() == 1000);
  sessions.OnCommitted({}, {});  // a commit that changed no run answers no one
  CHECK(sessions.TakeFrames().empty());

  sessions.ExpireLogs(1000);  // c1's deadline: answered with nothing new
  frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].identity == "c1");
  CHECK(ReplyJson(frames[0])["changes"].empty());

  sessions.OnCommitted({}, {}, {Change("r1", RunStatus::kRunning, 1)});
  frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].identity == "c2");
  auto answer = ReplyJson(frames[0]);
  REQUIRE(answer["changes"].size() == 1);
  CHECK(answer["changes"][0]["run_id"] == "r1");
  CHECK(sessions.NextDeadline() == 0);
}

TEST_CASE("only so many changes queries wait at once, and the next is refused, not held",
          "[changes][sessions]") {
  ClientSessions sessions;
  const std::string at = sessions.feed().token() + ":0";
  for (size_t i = 0; i < ClientSessions::kMaxChangeWaiters; ++i) {
    sessions.AwaitChanges("c" + std::to_string(i), at, 1000);
  }
  CHECK(sessions.TakeFrames().empty());
  sessions.AwaitChanges("late", at, 1000);
  auto frames = sessions.TakeFrames();
  REQUIRE(frames.size() == 1);
  CHECK(frames[0].identity == "late");
  uint8_t code = 0;
  ReplyJson(frames[0], &code);
  CHECK(code == static_cast<uint8_t>(StatusCode::kBusy));
}
