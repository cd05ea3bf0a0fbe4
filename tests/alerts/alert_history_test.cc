// AlertHistory on its own (bounded, newest first, safe across threads, no
// secrets) and fed by a real Notifier: one record per delivery after folding,
// with each target's outcome, delivered or failed with its reason.

#include "alerts/alert_history.h"

#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "alerts/notifier.h"
#include "tests/actors/cli_harness.h"
#include "tests/alerts/alert_receiver.h"

namespace {

using apollo11::Millis;
using apollo11::alerts::AlertEvent;
using apollo11::alerts::AlertHistory;
using apollo11::alerts::AlertRecord;
using apollo11::alerts::AlertRule;
using apollo11::alerts::AlertType;
using apollo11::testing::AlertReceiver;

AlertRecord Numbered(int i) {
  AlertRecord r;
  r.id = "a" + std::to_string(i);
  r.ts = i;
  return r;
}

AlertEvent Failure(const std::string& task) {
  AlertEvent e;
  e.type = AlertType::kRetriesExhausted;
  e.pipeline = "order.sync";
  e.run_id = "r1";
  e.task_id = task;
  e.exec_id = "r1." + task;
  e.reason = "exit 3";
  e.stderr_tail = "password=hunter2";
  return e;
}

}  // namespace

TEST_CASE("the alert history keeps the newest records up to its capacity, newest first",
          "[alerts][history]") {
  AlertHistory history(3);
  for (int i = 1; i <= 5; ++i) history.Add(Numbered(i));
  auto recent = history.Recent(10);
  REQUIRE(recent.size() == 3);
  CHECK(recent[0].id == "a5");
  CHECK(recent[1].id == "a4");
  CHECK(recent[2].id == "a3");
  CHECK(history.Recent(1).size() == 1);
  CHECK(history.Recent(0).empty());
  const auto json = history.RecentJson(2);
  CHECK(json["alerts"].size() == 2);
  CHECK(json["capacity"] == 3);
  CHECK(json["recorded"] == 5);
}

TEST_CASE("the alert history takes writers and readers on many threads", "[alerts][history]") {
  AlertHistory history(50);
  std::vector<std::jthread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&history, t] {
      for (int i = 0; i < 500; ++i) {
        history.Add(Numbered(t * 1000 + i));
        if (i % 10 == 0) (void)history.RecentJson(20);
      }
    });
  }
  threads.clear();
  CHECK(history.Recent(1000).size() == 50);
  CHECK(history.RecentJson(1)["recorded"] == 2000);
}

TEST_CASE("a recorded alert has its text and severity but no stderr and no full webhook URL",
          "[alerts][history]") {
  CHECK(apollo11::alerts::RedactUrl("https://user:pw@hooks.example.com:8443/T0/B1/secret?x=1") ==
        "https://hooks.example.com:8443");
  CHECK(apollo11::alerts::RedactUrl("http://127.0.0.1:9/hook") == "http://127.0.0.1:9");
  CHECK(apollo11::alerts::RedactUrl("not a url") == "(url)");
  AlertEvent e = Failure("charge");
  e.count = 3;
  AlertRecord r = apollo11::alerts::RecordOf(e);
  r.deliveries.push_back({"rule team webhook http://127.0.0.1:9", false, "HTTP 500"});
  const auto j = apollo11::alerts::RecordJson(r);
  CHECK(j["severity"] == "error");
  CHECK(j["count"] == 3);
  CHECK(j["delivery"] == "failed");
  CHECK(j["deliveries"][0]["state"] == "failed");
  CHECK(j["deliveries"][0]["error"] == "HTTP 500");
  CHECK_THAT(j["text"].get<std::string>(), Catch::Contains("order.sync"));
  CHECK(j.dump().find("hunter2") == std::string::npos);
  CHECK(apollo11::alerts::SeverityOf(AlertType::kJournalError) == std::string("critical"));
  CHECK(apollo11::alerts::SeverityOf(AlertType::kRunSucceeded) == std::string("info"));
}

TEST_CASE("the notifier records each folded delivery with every target's outcome",
          "[alerts][history][notifier]") {
  AlertReceiver receiver;
  apollo11::SystemClock clock;
  AlertHistory history;
  apollo11::alerts::NotifierOptions options;
  AlertRule good;
  good.name = "team";
  good.webhook = apollo11::alerts::WebhookTarget{receiver.Url(), Millis(2000), 0, Millis(10)};
  AlertRule dead;  // nothing listens on port 9 of loopback
  dead.name = "pager";
  dead.webhook = apollo11::alerts::WebhookTarget{"http://127.0.0.1:9/T0/secret-token", Millis(500),
                                                 0, Millis(10)};
  options.rules = {good, dead};
  options.fold_window = Millis(200);
  options.history = &history;
  auto notifier = apollo11::alerts::Notifier::Start(&clock, options);
  REQUIRE(notifier.ok());
  (*notifier)->Emit(Failure("charge"));
  (*notifier)->Emit(Failure("charge"));
  REQUIRE(apollo11::testing::WaitFor([&] { return !history.Recent(1).empty(); }, 10000));
  (*notifier)->Stop();
  auto recent = history.Recent(10);
  REQUIRE(recent.size() == 1);
  const AlertRecord& r = recent[0];
  CHECK(r.count == 2);
  CHECK(r.id.rfind("a11-", 0) == 0);
  CHECK(r.exec_id == "r1.charge");
  REQUIRE(r.deliveries.size() == 2);
  CHECK(r.deliveries[0].ok);
  CHECK(r.deliveries[0].target == "rule team webhook http://127.0.0.1:" +
                                      receiver.Url().substr(17, receiver.Url().size() - 22));
  CHECK_FALSE(r.deliveries[1].ok);
  CHECK(r.deliveries[1].target == "rule pager webhook http://127.0.0.1:9");
  CHECK_FALSE(r.deliveries[1].error.empty());
  const std::string dumped = history.RecentJson(10).dump();
  CHECK(dumped.find("secret-token") == std::string::npos);
  CHECK(dumped.find("\"partial\"") != std::string::npos);
}

TEST_CASE("an alert held in the fold window is listed as folding, then as delivered",
          "[alerts][history][notifier]") {
  AlertReceiver receiver;
  apollo11::SystemClock clock;
  AlertHistory history;
  apollo11::alerts::NotifierOptions options;
  AlertRule rule;
  rule.name = "team";
  rule.webhook = apollo11::alerts::WebhookTarget{receiver.Url(), Millis(2000), 0, Millis(10)};
  options.rules = {rule};
  options.fold_window = Millis(60000);
  options.history = &history;
  auto notifier = apollo11::alerts::Notifier::Start(&clock, options);
  REQUIRE(notifier.ok());
  (*notifier)->Emit(Failure("charge"));
  (*notifier)->Emit(Failure("charge"));
  REQUIRE(apollo11::testing::WaitFor(
      [&] {
        auto recent = history.Recent(10);
        return recent.size() == 1 && recent[0].count == 2;
      },
      5000));
  auto j = history.RecentJson(10);
  CHECK(j["alerts"][0]["delivery"] == "folding");
  CHECK(j["alerts"][0]["id"] == "");
  CHECK(j["recorded"] == 0);
  CHECK(receiver.posts() == 0);
  (*notifier)->Stop();  // delivers what is held
  auto recent = history.Recent(10);
  REQUIRE(recent.size() == 1);
  CHECK(recent[0].state == apollo11::alerts::AlertRecordState::kDone);
  CHECK(recent[0].count == 2);
  REQUIRE(recent[0].deliveries.size() == 1);
  CHECK(recent[0].deliveries[0].ok);
  CHECK(history.RecentJson(10)["recorded"] == 1);
}

TEST_CASE("records held by two notifiers are kept apart and come first", "[alerts][history]") {
  AlertHistory history(10);
  history.Add(Numbered(1));
  AlertRecord held = Numbered(5);
  held.id.clear();
  held.state = apollo11::alerts::AlertRecordState::kFolding;
  int a = 0, b = 0;
  history.SetHeld(&a, {held});
  history.SetHeld(&b, {held, held});
  CHECK(history.Recent(10).size() == 4);
  CHECK(history.Recent(10)[0].state == apollo11::alerts::AlertRecordState::kFolding);
  CHECK(history.Recent(10)[3].id == "a1");
  history.SetHeld(&b, {});
  CHECK(history.Recent(10).size() == 2);
  AlertRecord again = Numbered(1);
  again.count = 7;
  history.Add(again);  // same id: replaced in place
  CHECK(history.Recent(10).size() == 2);
  CHECK(history.Recent(10)[1].count == 7);
  history.Finish("a1", {{"rule x command", true, ""}});
  CHECK(history.Recent(10)[1].deliveries.size() == 1);
}
