// The audit trail through the scheduler's gate, on the deterministic
// simulator: every changing request is journaled once, in the commit of what
// it did, with its caller (the sender, or whom an OnBehalf names) and its
// outcome, refusals included; queries are not. And who may name a caller.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "actors/scheduler/client_audit.h"
#include "tests/sim/simulation.h"

using namespace apollo11;       // NOLINT: test file
using namespace apollo11::sim;  // NOLINT: test file
using actors::ClientType;

namespace {

// The audit records the coordinator answers, newest first.
nlohmann::json AuditOf(Simulation& sim, const std::string& principal = "",
                       const std::string& action = "") {
  actors::QueryReply reply = sim.Query(actors::QueryKind::kAudit, principal, action);
  REQUIRE(reply.code == 0);
  return nlohmann::json::parse(reply.json).at("records");
}

actors::OnBehalf Alice() {
  return actors::OnBehalf{"alice", "operator", "http", "10.0.0.7:51234", "req-42"};
}

}  // namespace

TEST_CASE("every changing request is audited once with its caller and outcome, and queries are not",
          "[sim][audit]") {
  Simulation sim;
  sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a"), Task("b", {"a"})});
  REQUIRE(!run.empty());
  sim.RunUntilIdle();
  (void)sim.Query(actors::QueryKind::kStatus, run);

  actors::CancelRun cancel{run, "canceled by alice (operator) through the HTTP API"};
  cancel.on_behalf = Alice();
  sim.Send(ClientType::kCancelRun, cancel);
  actors::RerunRun rerun;
  rerun.run_id = "r-nope";
  sim.Send(ClientType::kRerunRun, rerun);
  sim.Send(ClientType::kConfirmExec, actors::ConfirmExec{"r-nope.a", true});
  actors::RegistryRequest pause;
  pause.op = static_cast<uint8_t>(actors::RegistryOp::kPause);
  pause.name = "team.nothing";
  sim.Send(ClientType::kRegistry, pause);
  sim.RunUntilIdle();

  const nlohmann::json records = AuditOf(sim);
  INFO(records.dump(2));
  REQUIRE(records.size() == 5);
  const nlohmann::json& submit = records[4];
  CHECK(submit["action"] == "submit");
  CHECK(submit["principal"] == "anonymous");
  CHECK(submit["transport"] == "zmq");
  CHECK(submit["ok"] == true);
  CHECK(submit["outcome"] == "run " + run);
  CHECK(submit["request_id"].get<std::string>().size() == 16);

  const nlohmann::json& canceled = records[3];
  CHECK(canceled["action"] == "cancel");
  CHECK(canceled["target"] == run);
  CHECK(canceled["principal"] == "alice");
  CHECK(canceled["role"] == "operator");
  CHECK(canceled["transport"] == "http");
  CHECK(canceled["source"] == "10.0.0.7:51234 via a link without CURVE");
  CHECK(canceled["request_id"] == "req-42");
  CHECK(canceled["ok"] == true);

  CHECK(records[2]["action"] == "rerun");
  CHECK(records[2]["ok"] == false);
  CHECK(records[2]["outcome"].get<std::string>().find("r-nope") != std::string::npos);
  CHECK(records[1]["action"] == "confirm");
  CHECK(records[1]["target"] == "r-nope.a (kill)");
  CHECK(records[1]["ok"] == false);
  CHECK(records[0]["action"] == "pause");
  CHECK(records[0]["target"] == "team.nothing");
  CHECK(records[0]["ok"] == false);

  // The run's history names the caller as the actor of what the cancel did.
  actors::QueryReply history = sim.Query(actors::QueryKind::kHistory, run);
  REQUIRE(history.code == 0);
  bool named = false;
  for (const auto& t : nlohmann::json::parse(history.json)) {
    if (t.value("to", "") == "CANCELED") named = named || t.value("actor", "") == "http:alice";
  }
  CHECK(named);

  // The filters.
  CHECK(AuditOf(sim, "alice").size() == 1);
  CHECK(AuditOf(sim, "", "submit").size() == 1);
  CHECK(AuditOf(sim, "nobody").empty());
}

TEST_CASE("a refusal for want of a role is audited under the key that was refused",
          "[sim][audit]") {
  // Without CURVE nothing is refused for its role, so this is CallerOf's
  // part: who may name another caller.
  const transport::PeerAuth op{"OPKEYOPKEYOPKEYOPKEYOPKEYOPKEYOPKEYOPKEY",
                               transport::kRoleOperator};
  const transport::PeerAuth admin{"ADKEYADKEYADKEYADKEYADKEYADKEYADKEYADKEY",
                                  transport::kRoleAdmin};

  auto own = actors::CallerOf(op, /*curve=*/true, {}, "made");
  REQUIRE(own.ok());
  CHECK(own->principal == "key:OPKEYOPKEYOP");
  CHECK(own->role == "operator");
  CHECK(own->request_id == "made");
  CHECK(own->Actor("user") == "key:OPKEYOPKEYOP");

  auto forged = actors::CallerOf(op, /*curve=*/true, Alice(), "made");
  REQUIRE_FALSE(forged.ok());
  CHECK(forged.status().code() == StatusCode::kPermissionDenied);
  CHECK(forged.status().message().find("only an admin key") != std::string::npos);

  auto node = actors::CallerOf(admin, /*curve=*/true, Alice(), "made");
  REQUIRE(node.ok());
  CHECK(node->principal == "alice");
  CHECK(node->source == "10.0.0.7:51234 via key:ADKEYADKEYAD");
  CHECK(node->request_id == "req-42");
  CHECK(node->Actor("user") == "http:alice");

  actors::OnBehalf odd = Alice();
  odd.request_id = "not an id; DROP TABLE";
  auto cleaned = actors::CallerOf(admin, /*curve=*/true, odd, "made");
  REQUIRE(cleaned.ok());
  CHECK(cleaned->request_id == "made");

  actors::OnBehalf huge = Alice();
  huge.principal = std::string(1 << 20, 'a');
  auto cut = actors::CallerOf(admin, /*curve=*/true, huge, "made");
  REQUIRE(cut.ok());
  CHECK(cut->principal.size() == actors::kMaxCallerField);

  auto anonymous = actors::CallerOf({}, /*curve=*/false, {}, "made");
  REQUIRE(anonymous.ok());
  CHECK(anonymous->principal == "anonymous");
  CHECK(anonymous->Actor("user") == "user");
}

TEST_CASE("a frame that does not decode is answered but not audited: it names no action",
          "[sim][audit]") {
  Simulation sim;
  sim.SendBytes("not a client frame at all");
  sim.RunUntilIdle();
  CHECK(AuditOf(sim).empty());  // nothing decodable: no action to record
}

TEST_CASE("dry_run on a registry change other than a backfill is refused and changes nothing",
          "[sim][audit][registry]") {
  Simulation sim;
  actors::RegistryRequest pause;
  pause.op = static_cast<uint8_t>(actors::RegistryOp::kPause);
  pause.name = "team.nothing";
  pause.dry_run = true;  // a client that means "only show": it must not pause
  sim.Send(ClientType::kRegistry, pause);
  sim.RunUntilIdle();
  const auto replies = sim.Replies<actors::RegistryReply>(ClientType::kRegistryReply);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].code == static_cast<uint8_t>(StatusCode::kInvalidInput));
  CHECK(replies[0].error == "dry_run is for a backfill only");
  const nlohmann::json records = AuditOf(sim);
  REQUIRE(records.size() == 1);
  CHECK(records[0]["action"] == "pause");
  CHECK(records[0]["ok"] == false);
}
