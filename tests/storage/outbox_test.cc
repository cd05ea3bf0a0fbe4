// The worker outbox: what was put survives closing and reopening (a worker
// restart), erased keys stay gone, and large batches grow the map.

#include "storage/outbox.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/storage/storage_test_util.h"

using apollo11::storage::Outbox;

TEST_CASE("the outbox keeps results across a reopen until they are erased", "[outbox]") {
  apollo11::storage::testing::TempDir dir;
  {
    auto box = Outbox::Open(dir.path() + "/outbox");
    REQUIRE(box.ok());
    REQUIRE(
        (*box)->Put({{"r.a\n1", "frame-a"}, {"r.b\n1", "frame-b"}, {"r.b\n2", "frame-b2"}}).ok());
    REQUIRE((*box)->Erase("r.b\n1").ok());
    REQUIRE((*box)->Erase("never-there").ok());
    CHECK((*box)->size() == 2);
  }
  auto box = Outbox::Open(dir.path() + "/outbox");
  REQUIRE(box.ok());
  auto all = (*box)->LoadAll();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0] == std::make_pair(std::string("r.a\n1"), std::string("frame-a")));
  CHECK((*all)[1] == std::make_pair(std::string("r.b\n2"), std::string("frame-b2")));
}

TEST_CASE("the outbox grows its map instead of failing a large batch", "[outbox]") {
  apollo11::storage::testing::TempDir dir;
  auto box = Outbox::Open(dir.path() + "/outbox");
  REQUIRE(box.ok());
  // 160 MiB of results in one batch: more than the initial 64 MiB map.
  std::vector<std::pair<std::string, std::string>> items;
  const std::string big(1 << 20, 'x');
  for (int i = 0; i < 160; ++i) items.emplace_back("r.t" + std::to_string(i) + "\n1", big);
  REQUIRE((*box)->Put(items).ok());
  CHECK((*box)->size() == 160);
}

TEST_CASE("child process groups are kept beside the results and survive a reopen", "[outbox]") {
  apollo11::storage::testing::TempDir dir;
  using apollo11::storage::ChildGroup;
  {
    auto box = Outbox::Open(dir.path() + "/outbox");
    REQUIRE(box.ok());
    REQUIRE((*box)->Put({{"r.a\n1", "frame-a"}}).ok());
    REQUIRE((*box)->PutChild(ChildGroup{4242, 987654321, "run.task with space", 2, 1500}).ok());
    REQUIRE((*box)->PutChild(ChildGroup{7, 11, "run.other", 1, 0}).ok());
    REQUIRE((*box)->PutChild(ChildGroup{70000, 12, "run.gone", 1, 0}).ok());
    REQUIRE((*box)->EraseChild(70000).ok());
    REQUIRE((*box)->EraseChild(1).ok());  // never recorded
  }
  auto box = Outbox::Open(dir.path() + "/outbox");
  REQUIRE(box.ok());
  // The children do not show up as results.
  CHECK((*box)->size() == 1);
  auto all = (*box)->LoadAll();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].first == "r.a\n1");
  auto children = (*box)->LoadChildren();
  REQUIRE(children.ok());
  REQUIRE(children->size() == 2);
  CHECK((*children)[0].pgid == 7);  // pgid order
  CHECK((*children)[1].pgid == 4242);
  CHECK((*children)[1].start_time == 987654321u);
  CHECK((*children)[1].exec_id == "run.task with space");
  CHECK((*children)[1].attempt == 2u);
  CHECK((*children)[1].kill_grace_ms == 1500);
}

TEST_CASE("the outbox erases many acknowledged results in one call", "[outbox]") {
  apollo11::storage::testing::TempDir dir;
  auto box = Outbox::Open(dir.path() + "/outbox");
  REQUIRE(box.ok());
  REQUIRE((*box)->Put({{"r.a\n1", "a"}, {"r.b\n1", "b"}, {"r.c\n1", "c"}}).ok());
  REQUIRE((*box)->Erase(std::vector<std::string>{"r.a\n1", "never-there", "r.c\n1"}).ok());
  REQUIRE((*box)->Erase(std::vector<std::string>{}).ok());
  auto all = (*box)->LoadAll();
  REQUIRE(all.ok());
  REQUIRE(all->size() == 1);
  CHECK((*all)[0].first == "r.b\n1");
}
