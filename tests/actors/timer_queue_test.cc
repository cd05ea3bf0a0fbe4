#include "actors/scheduler/timer_queue.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

using apollo11::Micros;
using apollo11::actors::TimerQueue;

TEST_CASE("timers fire in due order, ties in the order they were armed", "[timer_queue]") {
  TimerQueue<std::string> q;
  CHECK(q.NextDue() == 0);
  q.Arm(30, "c");
  q.Arm(10, "a1");
  q.Arm(20, "b");
  q.Arm(10, "a2");
  CHECK(q.NextDue() == 10);
  std::vector<std::string> fired;
  q.PopDue(20, [&](const std::string& s) { fired.push_back(s); });
  CHECK(fired == std::vector<std::string>{"a1", "a2", "b"});
  CHECK(q.NextDue() == 30);
  CHECK(q.size() == 1);
}

TEST_CASE("a timer armed while firing fires in the same pass only when already due",
          "[timer_queue]") {
  TimerQueue<int> q;
  q.Arm(5, 1);
  std::vector<int> fired;
  q.PopDue(10, [&](int n) {
    fired.push_back(n);
    if (n == 1) {
      q.Arm(7, 2);   // due: fires now
      q.Arm(11, 3);  // not yet
    }
  });
  CHECK(fired == std::vector<int>{1, 2});
  CHECK(q.NextDue() == 11);
  q.PopDue(Micros{11}, [&](int n) { fired.push_back(n); });
  CHECK(fired == std::vector<int>{1, 2, 3});
  CHECK(q.empty());
}
