// The alerts library on its own: rule matching, config parsing (and its
// errors), folding, the bounded queue, and delivery to a real HTTP receiver
// and a real command hook.

#include <fcntl.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "alerts/alert_config.h"
#include "alerts/alert_queue.h"
#include "alerts/command_hook.h"
#include "alerts/fold_window.h"
#include "alerts/notifier.h"
#include "alerts/webhook.h"
#include "dsl/yaml_file.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/alerts/alert_receiver.h"

namespace {

using apollo11::kMicrosPerSecond;
using apollo11::Micros;
using apollo11::Millis;
using apollo11::alerts::AlertEvent;
using apollo11::alerts::AlertRule;
using apollo11::alerts::AlertType;
using apollo11::testing::AlertReceiver;
using apollo11::testing::ScratchDir;

AlertEvent Event(AlertType type, const std::string& pipeline, const std::string& task = "t",
                 Micros ts = 1) {
  AlertEvent e;
  e.type = type;
  e.pipeline = pipeline;
  e.task_id = task;
  e.run_id = "r1";
  e.exec_id = "r1." + task;
  e.ts = ts;
  return e;
}

// The rules of `yaml`, a list of rules read through the YAML guard.
apollo11::Result<std::vector<AlertRule>> ParseRules(const std::string& yaml) {
  auto tree = apollo11::dsl::ParseYamlText(yaml, "alerts.yaml");
  if (!tree.ok()) return tree.status();
  return apollo11::alerts::ParseAlertRules((*tree)->root());
}

std::string ParseError(const std::string& yaml) {
  auto rules = ParseRules(yaml);
  return rules.ok() ? "" : rules.status().message();
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a pipeline glob matches names the shell way", "[alerts]") {
  using apollo11::alerts::GlobMatch;
  CHECK(GlobMatch("order.*", "order.checkout"));
  CHECK(GlobMatch("order.*", "order."));
  CHECK_FALSE(GlobMatch("order.*", "orders.checkout"));
  CHECK_FALSE(GlobMatch("order.*", "billing.order.x"));
  CHECK(GlobMatch("*.nightly", "billing.nightly"));
  CHECK(GlobMatch("a?c*", "abcdef"));
  CHECK_FALSE(GlobMatch("a?c", "ac"));
  CHECK(GlobMatch("*", ""));
  CHECK(GlobMatch("*a*b*", "xxaxxbxx"));
}

TEST_CASE(
    "a rule matches by event type and pipeline glob, and node-wide events skip pipeline rules",
    "[alerts]") {
  AlertRule order;
  order.events = {AlertType::kRetriesExhausted, AlertType::kTimeout};
  order.pipelines = "order.*";
  CHECK(order.Matches(Event(AlertType::kRetriesExhausted, "order.checkout")));
  CHECK(order.Matches(Event(AlertType::kTimeout, "order.refund")));
  CHECK_FALSE(order.Matches(Event(AlertType::kRunFailed, "order.checkout")));
  CHECK_FALSE(order.Matches(Event(AlertType::kTimeout, "billing.nightly")));
  CHECK_FALSE(order.Matches(Event(AlertType::kTimeout, "")));

  AlertRule pager;  // every type, every pipeline, and node-wide events
  CHECK(pager.Matches(Event(AlertType::kWorkerLost, "")));
  CHECK(pager.Matches(Event(AlertType::kRunCanceled, "billing.nightly")));
}

TEST_CASE("a node config's alert rules are read through the pipeline YAML guard",
          "[alerts][config]") {
  ScratchDir dir;
  auto rules = apollo11::alerts::LoadAlertRules(dir.Write(
      "node.yaml", "role: all\nalerts:\n  - name: pager\n    command: /usr/local/bin/page\n"));
  REQUIRE(rules.ok());
  REQUIRE(rules->size() == 1);
  CHECK((*rules)[0].command == "/usr/local/bin/page");
  CHECK(apollo11::alerts::LoadAlertRules(dir.Write("empty.yaml", "# none\n"))->empty());

  // yaml-cpp alone takes a quote the file ends inside as text. REQUIRE: if the
  // guard is gone, stop before the next input.
  rules = apollo11::alerts::LoadAlertRules(dir.Write("cut.yaml", "alerts: 'x\n"));
  REQUIRE(rules.status().message().find("cut.yaml:1:9: error: quoted text opened here") !=
          std::string::npos);
  // yaml-cpp 0.7 alone allocates on these bytes until the kernel kills it.
  rules = apollo11::alerts::LoadAlertRules(dir.Write("bad.yaml", "!t o\n? \n"));
  REQUIRE_FALSE(rules.ok());
  CHECK(rules.status().message().rfind(
            "config " + dir.path() + "/bad.yaml:2:1: error: '? ' (an explicit mapping key)", 0) ==
        0);
}

TEST_CASE("the alerts list of a config becomes rules", "[alerts][config]") {
  auto rules = ParseRules(R"(
- name: order-team
  events: [retries_exhausted, timeout, run_failed]
  pipelines: "order.*"
  webhook: {url: "http://127.0.0.1:9000/hook", timeout: 2s, retries: 5, backoff: 100ms}
- name: pager
  events: [worker_lost, backlog_at_cap, journal_error]
  command: "/usr/local/bin/page-oncall"
  command_timeout: 3s
- name: everything
  webhook: "https://alerts.example.com/in"
)");
  REQUIRE(rules.ok());
  REQUIRE(rules->size() == 3);
  const AlertRule& order = (*rules)[0];
  CHECK(order.name == "order-team");
  CHECK(order.events.size() == 3);
  CHECK(order.pipelines == "order.*");
  REQUIRE(order.webhook);
  CHECK(order.webhook->url == "http://127.0.0.1:9000/hook");
  CHECK(order.webhook->timeout == Millis(2000));
  CHECK(order.webhook->retries == 5);
  CHECK(order.webhook->backoff == Millis(100));
  CHECK((*rules)[1].command == "/usr/local/bin/page-oncall");
  CHECK((*rules)[1].command_timeout == Millis(3000));
  CHECK_FALSE((*rules)[1].webhook);
  CHECK((*rules)[2].events.empty());
  CHECK((*rules)[2].webhook->retries == 3);
}

TEST_CASE("a bad alerts config is refused with the rule, line and what is wrong",
          "[alerts][config]") {
  CHECK(ParseError("name: x") == "alerts: expected a list of rules (line 1)");
  CHECK(ParseError("- {name: a, evnts: [timeout], command: x}")
            .find("rule 'a' (line 1): unknown key 'evnts'") != std::string::npos);
  CHECK(ParseError("- {name: a, events: [timout], command: x}")
            .find("unknown event 'timout' (known: retries_exhausted, timeout,") !=
        std::string::npos);
  CHECK(ParseError("- {name: a, events: [timeout]}")
            .find("needs a 'webhook', a 'command', or both") != std::string::npos);
  CHECK(ParseError("- {name: a, webhook: {url: 'ftp://x'}}")
            .find("must start with http:// or https://") != std::string::npos);
  CHECK(ParseError("- {name: a, webhook: {url: 'http://x', timeout: 5 parsecs}}")
            .find("'webhook.timeout'") != std::string::npos);
  CHECK(ParseError("- {name: a, webhook: {url: 'http://x', retries: -1}}")
            .find("'webhook.retries' must be a whole number from 0 to 20, not '-1'") !=
        std::string::npos);
  CHECK(ParseError("- {name: a, webhook: {url: 'http://x', retry: 1}}")
            .find("unknown webhook key 'retry'") != std::string::npos);
  CHECK(ParseError("- {name: a, command: x}\n- {name: a, command: y}")
            .find("rule 'a' (line 2): a rule with this name exists already") != std::string::npos);
  CHECK(ParseError("- {name: a, pipelines: [a, b], command: x}")
            .find("'pipelines' must be a string") != std::string::npos);
}

TEST_CASE("repeats within the fold window become one alert with a count", "[alerts][fold]") {
  const Micros s = kMicrosPerSecond;
  apollo11::alerts::FoldWindow fold(60 * s);
  AlertEvent first = Event(AlertType::kRetriesExhausted, "order.x", "charge", 100 * s);
  first.run_id = "r1";
  fold.Add(first, 100 * s);
  AlertEvent second = Event(AlertType::kRetriesExhausted, "order.x", "charge", 130 * s);
  second.run_id = "r2";
  second.stderr_tail = "card declined";
  fold.Add(second, 130 * s);
  fold.Add(Event(AlertType::kRetriesExhausted, "order.x", "refund", 131 * s), 131 * s);
  fold.Add(Event(AlertType::kTimeout, "order.x", "charge", 132 * s), 132 * s);
  CHECK(fold.open() == 3);
  CHECK(fold.NextDue() == 160 * s);
  CHECK(fold.TakeDue(159 * s).empty());

  auto due = fold.TakeDue(160 * s);
  REQUIRE(due.size() == 1);
  CHECK(due[0].count == 2);
  CHECK(due[0].task_id == "charge");
  CHECK(due[0].run_id == "r2");  // the latest occurrence's details
  CHECK(due[0].stderr_tail == "card declined");
  CHECK(due[0].first_ts == 100 * s);
  CHECK(due[0].ts == 130 * s);

  // After the window closed, the same key opens a new group.
  fold.Add(Event(AlertType::kRetriesExhausted, "order.x", "charge", 170 * s), 170 * s);
  CHECK(fold.open() == 3);
  auto rest = fold.TakeAll();
  CHECK(rest.size() == 3);
  CHECK(fold.open() == 0);
  CHECK(fold.NextDue() == 0);
}

TEST_CASE("lost workers fold by worker, not by the task they held", "[alerts][fold]") {
  apollo11::alerts::FoldWindow fold(kMicrosPerSecond);
  AlertEvent a = Event(AlertType::kWorkerLost, "", "t1");
  a.worker_id = "w1";
  AlertEvent b = Event(AlertType::kWorkerLost, "", "t2");
  b.worker_id = "w1";
  AlertEvent c = Event(AlertType::kWorkerLost, "", "t1");
  c.worker_id = "w2";
  fold.Add(a, 0);
  fold.Add(b, 0);
  fold.Add(c, 0);
  auto all = fold.TakeAll();
  REQUIRE(all.size() == 2);
  CHECK(all[0].count + all[1].count == 3);
}

TEST_CASE("a full alert queue drops its oldest event and counts it", "[alerts][queue]") {
  apollo11::alerts::AlertQueue queue(3);
  for (int i = 0; i < 3; ++i) CHECK(queue.Push(Event(AlertType::kTimeout, "p", std::to_string(i))));
  CHECK_FALSE(queue.Push(Event(AlertType::kTimeout, "p", "3")));
  CHECK_FALSE(queue.Push(Event(AlertType::kTimeout, "p", "4")));
  CHECK(queue.dropped() == 2);
  auto kept = queue.TakeAll();
  REQUIRE(kept.size() == 3);
  CHECK(kept.front().task_id == "2");
  CHECK(kept.back().task_id == "4");
  CHECK(queue.size() == 0);
}

TEST_CASE("a webhook post succeeds on 2xx and reports the status otherwise", "[alerts][webhook]") {
  AlertReceiver receiver;
  apollo11::alerts::WebhookTarget target;
  target.url = receiver.Url();
  target.timeout = Millis(2000);
  CHECK(apollo11::alerts::PostWebhook(target, R"({"type":"timeout"})").ok());
  REQUIRE(receiver.Received().size() == 1);
  CHECK(receiver.Received()[0]["type"] == "timeout");
  receiver.FailNext(1, 503);
  auto failed = apollo11::alerts::PostWebhook(target, "{}");
  CHECK(failed.message().find("HTTP 503") != std::string::npos);
  target.url = "http://127.0.0.1:" + std::to_string(apollo11::testing::FreeTcpPort()) + "/";
  CHECK_FALSE(apollo11::alerts::PostWebhook(target, "{}").ok());
}

TEST_CASE("a command hook gets the event on stdin and APOLLO11_ALERT_* variables",
          "[alerts][command]") {
  ScratchDir dir;
  const std::string out = dir.path() + "/hook.out";
  auto s = apollo11::alerts::RunCommandHook(
      "cat > " + out + "; echo \"$APOLLO11_ALERT_TYPE $APOLLO11_ALERT_EXEC_ID\" >> " + out,
      R"({"type":"timeout"})",
      {{"APOLLO11_ALERT_TYPE", "timeout"}, {"APOLLO11_ALERT_EXEC_ID", "r1.t"}}, Millis(5000));
  REQUIRE(s.ok());
  CHECK(Slurp(out) == "{\"type\":\"timeout\"}timeout r1.t\n");

  // A hook that ignores stdin is fine; one that fails says how.
  CHECK(apollo11::alerts::RunCommandHook("true", std::string(200000, 'x'), {}, Millis(5000)).ok());
  CHECK(apollo11::alerts::RunCommandHook("exit 7", "{}", {}, Millis(5000)).message() ==
        "command hook exited 7");
}

TEST_CASE("a command hook's output is logged as bounded events, never copied to stderr",
          "[alerts][command]") {
  ScratchDir dir;
  // The hook's output must not reach this process's stderr (in a node, one
  // JSON object per line): fd 2 goes to a file while it runs.
  const std::string err_path = dir.path() + "/stderr";
  std::fflush(stderr);
  const int saved_err = ::dup(STDERR_FILENO);
  const int err_file = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  REQUIRE(err_file >= 0);
  ::dup2(err_file, STDERR_FILENO);
  std::ostringstream logged;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(logged);
  sink->set_pattern("%l|%v");
  auto saved_logger = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink));
  auto s = apollo11::alerts::RunCommandHook(
      "echo to-stdout; echo to-stderr >&2; i=0; while [ $i -lt 100 ]; do echo line $i; "
      "i=$((i+1)); done; head -c 20000 /dev/zero | tr '\\0' x",
      "{}", {}, Millis(5000));
  spdlog::set_default_logger(saved_logger);
  ::dup2(saved_err, STDERR_FILENO);
  ::close(saved_err);
  ::close(err_file);
  REQUIRE(s.ok());
  CHECK(Slurp(err_path).empty());
  const std::string log = logged.str();
  INFO(log);
  CHECK(log.find("info|alert hook output: to-stdout\n") != std::string::npos);
  CHECK(log.find("info|alert hook output: to-stderr\n") != std::string::npos);
  // Bounded: 20 lines and 4 KiB at most, then one line saying what was left out.
  CHECK(log.find("alert hook output: line 17\n") != std::string::npos);
  CHECK(log.find("alert hook output: line 18\n") == std::string::npos);
  CHECK(log.find("alert hook output truncated:") != std::string::npos);
  CHECK(log.size() < 8192);
}

TEST_CASE("a command hook that hangs is killed with its children at the timeout",
          "[alerts][command]") {
  const auto t0 = std::chrono::steady_clock::now();
  auto s = apollo11::alerts::RunCommandHook("sleep 30 & sleep 30", "{}", {}, Millis(300));
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(s.message() == "command hook killed after 300ms");
  CHECK(took < 5.0);
}

TEST_CASE("the notifier folds, retries a failing webhook and delivers once it answers 200",
          "[alerts][notifier]") {
  AlertReceiver receiver;
  receiver.FailNext(2, 500);
  apollo11::SystemClock clock;
  apollo11::alerts::NotifierOptions options;
  AlertRule rule;
  rule.name = "team";
  rule.pipelines = "order.*";
  rule.webhook = apollo11::alerts::WebhookTarget{receiver.Url(), Millis(2000), 3, Millis(50)};
  options.rules = {rule};
  options.fold_window = Millis(300);
  auto notifier = apollo11::alerts::Notifier::Start(&clock, options);
  REQUIRE(notifier.ok());
  (*notifier)->Emit(Event(AlertType::kRetriesExhausted, "order.checkout", "charge"));
  (*notifier)->Emit(Event(AlertType::kRetriesExhausted, "order.checkout", "charge"));
  (*notifier)->Emit(Event(AlertType::kRetriesExhausted, "billing.nightly", "charge"));  // no rule
  REQUIRE(receiver.WaitUntil([](const auto& got) { return !got.empty(); }, 5000));
  // Stopping before the 200 is read would abort the POST: wait for the count.
  REQUIRE(apollo11::testing::WaitFor([&] { return (*notifier)->stats().delivered == 1; }, 5000));
  (*notifier)->Stop();
  auto got = receiver.Received();
  REQUIRE(got.size() == 1);
  CHECK(got[0]["count"] == 2);
  CHECK(got[0]["pipeline"] == "order.checkout");
  CHECK(got[0]["look"]["history"] == "apollo11 history r1.charge");
  CHECK(got[0]["id"].get<std::string>().rfind("a11-", 0) == 0);
  CHECK(receiver.posts() == 3);  // 500, 500, 200
  auto stats = (*notifier)->stats();
  CHECK(stats.emitted == 2);
  CHECK(stats.delivered == 1);
  CHECK(stats.retries == 2);
  CHECK(stats.failed == 0);
}

TEST_CASE("an alert whose stderr tail is not UTF-8 is delivered with replacement characters",
          "[alerts][notifier]") {
  // Regression: json::dump threw on the task's bytes in the notifier's
  // thread, which ended the node.
  AlertReceiver receiver;
  apollo11::SystemClock clock;
  apollo11::alerts::NotifierOptions options;
  AlertRule rule;
  rule.name = "team";
  rule.webhook = apollo11::alerts::WebhookTarget{receiver.Url(), Millis(2000), 1, Millis(50)};
  options.rules = {rule};
  options.fold_window = Millis(1);
  auto notifier = apollo11::alerts::Notifier::Start(&clock, options);
  REQUIRE(notifier.ok());
  AlertEvent e = Event(AlertType::kRetriesExhausted, "p", "t");
  e.stderr_tail = "boom \xff\xfe";
  (*notifier)->Emit(e);
  REQUIRE(apollo11::testing::WaitFor([&] { return (*notifier)->stats().delivered == 1; }, 5000));
  (*notifier)->Stop();
  auto got = receiver.Received();
  REQUIRE(got.size() == 1);
  CHECK(got[0]["stderr_tail"] == "boom \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE(
    "emitting never waits for a webhook that hangs, the queue sheds its oldest, Stop is bounded",
    "[alerts][notifier]") {
  apollo11::testing::HungServer hung;
  apollo11::SystemClock clock;
  apollo11::alerts::NotifierOptions options;
  AlertRule rule;
  rule.name = "hung";
  rule.webhook = apollo11::alerts::WebhookTarget{hung.Url(), Millis(5000), 20, Millis(1000)};
  options.rules = {rule};
  options.fold_window = Millis(1);
  options.queue_capacity = 10;
  options.shutdown_budget = Millis(1000);
  auto notifier = apollo11::alerts::Notifier::Start(&clock, options);
  REQUIRE(notifier.ok());
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10000; ++i) {
    (*notifier)->Emit(Event(AlertType::kTimeout, "p", "t" + std::to_string(i)));
  }
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 1.0);
  CHECK((*notifier)->stats().dropped >= 9000);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a POST is now hanging
  const auto s0 = std::chrono::steady_clock::now();
  (*notifier)->Stop();  // aborts the hanging POST; the rest gets the 1 s budget
  const double stop_took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count();
  CHECK(stop_took < 3.5);
  CHECK((*notifier)->stats().delivered == 0);
  CHECK((*notifier)->stats().failed >= 10);
}
