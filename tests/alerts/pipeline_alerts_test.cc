// A pipeline's `alerts:` as Notifier rules, run_succeeded only for rules that
// name it, and the human `text` line of the payload.

#include "alerts/pipeline_alerts.h"

#include <catch2/catch.hpp>

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::alerts;  // NOLINT: test file

TEST_CASE("a pipeline's alerts become rules with the DSL's event names mapped",
          "[alerts][pipeline]") {
  dsl::PipelineSpec spec;
  spec.name = "order.sync";
  CHECK(PipelineAlertRules(spec) == nullptr);
  spec.alerts.push_back(
      {{"task_failed", "retries_exhausted", "task_timeout"}, "http://127.0.0.1:9/hook", ""});
  spec.alerts.push_back({{"run_succeeded"}, "", "true"});
  auto rules = PipelineAlertRules(spec);
  REQUIRE(rules != nullptr);
  REQUIRE(rules->size() == 2);
  const AlertRule& failures = (*rules)[0];
  CHECK(failures.name == "pipeline order.sync #1");
  CHECK(failures.events ==
        std::vector<AlertType>{AlertType::kRetriesExhausted, AlertType::kTimeout});
  REQUIRE(failures.webhook.has_value());
  CHECK(failures.webhook->url == "http://127.0.0.1:9/hook");
  CHECK(failures.webhook->retries == 3);
  CHECK((*rules)[1].command == "true");
  CHECK_FALSE((*rules)[1].webhook.has_value());

  AlertEvent ok;
  ok.type = AlertType::kRunSucceeded;
  ok.pipeline = "order.sync";
  CHECK((*rules)[1].Matches(ok));
  CHECK_FALSE(failures.Matches(ok));
  AlertRule everything;  // no events: every type but run_succeeded
  CHECK_FALSE(everything.Matches(ok));
  ok.type = AlertType::kRunFailed;
  CHECK(everything.Matches(ok));
}

TEST_CASE("every alert carries one human text line for chat webhooks", "[alerts][pipeline]") {
  AlertEvent e;
  e.type = AlertType::kRetriesExhausted;
  e.pipeline = "order.checkout";
  e.run_id = "r1";
  e.task_id = "charge";
  e.reason = "attempt 2 failed (exited with code 3)";
  CHECK(AlertText(e) ==
        "apollo11: task charge failed in pipeline order.checkout (run r1): attempt 2 failed "
        "(exited with code 3)");
  CHECK(AlertJson(e)["text"] == AlertText(e));
  e.count = 3;
  e.ts = e.first_ts = 1'700'000'000 * kMicrosPerSecond;
  CHECK_THAT(AlertText(e), Catch::EndsWith("[3 times since 2023-11-14T22:13:20.000Z]"));
  AlertEvent run;
  run.type = AlertType::kRunSucceeded;
  run.pipeline = "order.sync";
  run.run_id = "r2";
  CHECK(AlertText(run) == "apollo11: run r2 succeeded in pipeline order.sync");
  CHECK(ToString(AlertType::kRunSucceeded) == std::string("run_succeeded"));
  CHECK(ParseAlertType("run_succeeded") == AlertType::kRunSucceeded);
}
