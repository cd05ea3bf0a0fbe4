#include "ha/role_board.h"

#include <catch2/catch.hpp>
#include <vector>

using namespace apollo11;
using ha::Member;
using ha::Role;

TEST_CASE("a role board starts standby and tells listeners of each change", "[ha]") {
  FakeClock clock;
  ha::RoleBoard board(&clock, Member{"c1", "tcp://a:1", "tcp://a:2", ""});
  CHECK(board.Current().role == Role::kStandby);
  CHECK_FALSE(board.MayAct());
  std::vector<ha::RoleState> seen;
  board.Subscribe([&](const ha::RoleState& s) { seen.push_back(s); });

  board.Publish(Role::kStandby, 5, Member{"c2", "tcp://b:1", "tcp://b:2", ""}, 0);
  board.Publish(Role::kStandby, 5, Member{"c2", "tcp://b:1", "tcp://b:2", ""}, 0);  // no change
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].leader.client_endpoint == "tcp://b:2");
  CHECK(board.failovers() == 0);

  board.Publish(Role::kLeader, 9, board.Current().self, clock.Steady() + 1000);
  REQUIRE(seen.size() == 2);
  CHECK(seen[1].role == Role::kLeader);
  CHECK(seen[1].epoch == 9);
  CHECK(seen[1].terms_won == 1);
  CHECK(board.failovers() == 1);
  CHECK(board.MayAct());
}

TEST_CASE("a leader may act only until its steady deadline", "[ha]") {
  FakeClock clock;
  ha::RoleBoard board(&clock, Member{"c1", "tcp://a:1", "tcp://a:2", ""});
  board.Publish(Role::kLeader, 3, board.Current().self, clock.Steady() + 1000);
  CHECK(board.MayAct());
  clock.Advance(1000);
  CHECK_FALSE(board.MayAct());
  board.SetActUntil(clock.Steady() + 500);
  CHECK(board.MayAct());
  board.Publish(Role::kStandby, 3, Member{}, 0);
  CHECK_FALSE(board.MayAct());
}

TEST_CASE("an unsubscribed listener is not called", "[ha]") {
  FakeClock clock;
  ha::RoleBoard board(&clock, Member{"c1", "", "", ""});
  int calls = 0;
  const uint64_t id = board.Subscribe([&](const ha::RoleState&) { ++calls; });
  board.Publish(Role::kStandby, 1, Member{"c2", "", "", ""}, 0);
  board.Unsubscribe(id);
  board.Publish(Role::kStandby, 2, Member{"c3", "", "", ""}, 0);
  CHECK(calls == 1);
}
