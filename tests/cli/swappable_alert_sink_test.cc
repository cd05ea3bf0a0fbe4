// SwappableAlertSink: events reach the notifier in force, none after it was
// swapped out, and none (without harm) when there is no notifier.

#include "cli/swappable_alert_sink.h"

#include <catch2/catch.hpp>

#include "common/clock.h"

namespace apollo11::cli {
namespace {

std::unique_ptr<alerts::Notifier> NotifierFor(const Clock* clock, alerts::AlertType type) {
  alerts::NotifierOptions options;
  alerts::AlertRule rule;
  rule.name = "r";
  rule.events = {type};
  options.rules = {rule};
  auto notifier = alerts::Notifier::Start(clock, std::move(options));
  REQUIRE(notifier.ok());
  return std::move(*notifier);
}

TEST_CASE("a swapped alert sink sends each event to the notifier in force", "[cli][alerts]") {
  SystemClock clock;
  SwappableAlertSink sink;
  CHECK_FALSE(sink.active());
  sink.Emit(alerts::AlertEvent{});  // dropped: no notifier
  sink.Swap(NotifierFor(&clock, alerts::AlertType::kRunFailed));
  CHECK(sink.active());
  alerts::AlertEvent event;
  event.type = alerts::AlertType::kRunFailed;
  sink.Emit(event);
  std::unique_ptr<alerts::Notifier> old =
      sink.Swap(NotifierFor(&clock, alerts::AlertType::kTimeout));
  REQUIRE(old);
  CHECK(old->stats().emitted == 1);
  event.type = alerts::AlertType::kTimeout;
  sink.Emit(event);
  CHECK(old->stats().emitted == 1);
  std::unique_ptr<alerts::Notifier> second = sink.Swap(nullptr);
  REQUIRE(second);
  CHECK(second->stats().emitted == 1);
  CHECK_FALSE(sink.active());
}

}  // namespace
}  // namespace apollo11::cli
