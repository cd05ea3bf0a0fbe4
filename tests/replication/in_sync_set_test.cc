// The decisions of sync replication (replication/in_sync_set.h): who is
// waited for, who joins, who leaves at a timeout, what must be recorded
// before a batch is released.

#include "replication/in_sync_set.h"

#include <catch2/catch.hpp>

using namespace apollo11;               // NOLINT: test file
using namespace apollo11::replication;  // NOLINT: test file

namespace {

constexpr Micros kTimeout = 1'000'000;

StandbyView Standby(const std::string& name, uint64_t acked, Micros heard, bool copying = false) {
  StandbyView v;
  v.name = name;
  v.acked_batch = acked;
  v.last_heard = heard;
  v.copying = copying;
  return v;
}

std::map<std::string, StandbyView> Views(std::initializer_list<StandbyView> views) {
  std::map<std::string, StandbyView> out;
  for (const StandbyView& v : views) out[v.name] = v;
  return out;
}

}  // namespace

TEST_CASE("a term starts lagging and a standby is in sync once it acknowledges its joining batch",
          "[replication][in_sync]") {
  InSyncSet set("l", kTimeout, 10);
  CHECK(set.lagging());
  CHECK(set.RecordedMembers() == std::set<std::string>{"l"});
  CHECK(set.Acknowledged(11));  // nobody waited: release at the local commit

  // Streaming, heard now, but behind its joining batch (10): waited, not in sync.
  CHECK(set.Observe(Views({Standby("s1", 8, 5'000'000)}), 5'000'000).empty());
  set.OnHandedOver(11);
  CHECK_FALSE(set.Acknowledged(11));  // batch 11 waits for s1 now
  CHECK(set.lagging());

  auto joined = set.Observe(Views({Standby("s1", 11, 5'100'000)}), 5'100'000);
  CHECK(joined == std::vector<std::string>{"s1"});
  CHECK(set.Acknowledged(11));
  CHECK_FALSE(set.lagging());
  CHECK(set.RecordedMembers() == std::set<std::string>{"l", "s1"});
  CHECK(set.version() != set.RecordedVersion());  // the join must be recorded
  set.Recorded(set.version());
  CHECK(set.version() == set.RecordedVersion());
}

TEST_CASE("a standby that is copying or was not heard within the timeout is not waited for",
          "[replication][in_sync]") {
  InSyncSet set("l", kTimeout, 3);
  const Micros now = 10'000'000;
  set.Observe(Views({Standby("copying", 3, now, /*copying=*/true),
                     Standby("quiet", 3, now - kTimeout - 1)}),
              now);
  set.OnHandedOver(4);
  CHECK(set.Acknowledged(4));
  CHECK(set.in_sync().empty());
}

TEST_CASE("a late standby leaves at the timeout and joins again only close behind",
          "[replication][in_sync]") {
  InSyncSet set("l", kTimeout, 0);
  Micros now = 1'000'000;
  set.Observe(Views({Standby("s1", 0, now), Standby("s2", 0, now)}), now);
  REQUIRE(set.in_sync() == std::set<std::string>{"s1", "s2"});
  set.Recorded(set.version());

  set.OnHandedOver(1);
  set.Observe(Views({Standby("s1", 1, now), Standby("s2", 0, now)}), now);
  CHECK_FALSE(set.Acknowledged(1));
  const uint64_t before = set.version();
  CHECK(set.DropLate(1) == std::vector<std::string>{"s2"});
  CHECK(set.Acknowledged(1));
  CHECK(set.in_sync() == std::set<std::string>{"s1"});
  // The release of batch 1 waits for this record: s2 may lack it.
  CHECK(set.version() > before);
  CHECK(set.RecordedVersion() < set.version());
  CHECK(set.RecordedMembers() == std::set<std::string>{"l", "s1"});

  // Far behind (more than kJoinLag batches), heard: not waited again yet.
  set.OnHandedOver(200);
  set.Observe(Views({Standby("s1", 200, now), Standby("s2", 100, now)}), now);
  set.OnHandedOver(201);
  set.Observe(Views({Standby("s1", 201, now), Standby("s2", 100, now)}), now);
  CHECK(set.Acknowledged(201));
  // Close behind: waited again, and in sync once it holds its joining batch.
  set.Observe(Views({Standby("s1", 201, now), Standby("s2", 190, now)}), now);
  CHECK_FALSE(set.Acknowledged(201));
  set.Observe(Views({Standby("s1", 201, now), Standby("s2", 201, now)}), now);
  CHECK(set.in_sync() == std::set<std::string>{"s1", "s2"});
}
