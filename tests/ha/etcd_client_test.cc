#include "ha/etcd_client.h"

#include <catch2/catch.hpp>

#include "tests/ha/fake_http_server.h"

using namespace apollo11;
using namespace apollo11::ha;
using apollo11::ha::testing::FakeHttpServer;
using apollo11::ha::testing::FakeReply;
using apollo11::ha::testing::UnreachableUrl;

TEST_CASE("the etcd client posts to the gateway and decodes the answer", "[ha][etcd]") {
  FakeHttpServer server({{200, R"({"header":{},"ID":"77","TTL":"5"})"}});
  EtcdClient client({{server.url()}});
  auto lease = client.GrantLease(5);
  REQUIRE(lease.ok());
  CHECK(lease->id == 77);
  auto requests = server.requests();
  REQUIRE(requests.size() == 1);
  CHECK(requests[0].first == "/v3/lease/grant");
  CHECK(requests[0].second == R"({"TTL":5})");
}

TEST_CASE("the etcd client fails over to the next endpoint", "[ha][etcd]") {
  FakeHttpServer server(
      {{200, R"({"result":{"ID":"77","TTL":"4"}})"}, {200, R"({"result":{"ID":"77","TTL":"3"}})"}});
  EtcdClient client({{UnreachableUrl(), server.url()}});
  auto alive = client.KeepAlive(77);
  REQUIRE(alive.ok());
  CHECK(alive->ttl_s == 4);
  CHECK(client.current() == server.url());
  CHECK(client.KeepAlive(77).ok());  // the one that answered is tried first
}

TEST_CASE("an unreachable etcd is a clear error naming every endpoint", "[ha][etcd]") {
  const std::string a = UnreachableUrl(), b = UnreachableUrl();
  EtcdClient client({{a, b}});
  auto lease = client.GrantLease(5);
  REQUIRE_FALSE(lease.ok());
  CHECK(lease.status().code() == StatusCode::kIo);
  CHECK_THAT(lease.status().message(),
             Catch::Contains("etcd unreachable") && Catch::Contains(a) && Catch::Contains(b));
}

TEST_CASE("an etcd that answers garbage or HTML is an error, not a crash", "[ha][etcd]") {
  FakeHttpServer server({{502, "<html>bad gateway</html>"},
                         {200, R"({"leader":{"name":"%%%"}})"},
                         {500, R"({"error":"etcdserver: no leader","code":14})"}});
  EtcdClient client({{server.url()}});
  CHECK(client.GrantLease(5).status().code() == StatusCode::kCorrupt);
  CHECK(client.Campaign("e", 1, "v", Millis(500)).status().code() == StatusCode::kCorrupt);
  auto leader = client.Leader("e");
  CHECK(leader.status().code() == StatusCode::kIo);
  CHECK_THAT(leader.status().message(), Catch::Contains("etcdserver: no leader"));
}

TEST_CASE("a campaign that is not won within its wait is busy, a silent etcd times out",
          "[ha][etcd]") {
  {
    FakeHttpServer server({{0, "", true}});
    EtcdClient client({{server.url()}});
    auto won = client.Campaign("e", 1, "v", Millis(200));
    CHECK(won.status().code() == StatusCode::kBusy);
  }
  {
    FakeHttpServer server({{0, "", true}});
    EtcdClient client({{server.url()}, Millis(200), Millis(200)});
    auto alive = client.KeepAlive(1);
    CHECK(alive.status().code() == StatusCode::kIo);
  }
}

TEST_CASE("an answer over 1 MiB is refused as such, not taken for an unreachable etcd",
          "[ha][etcd]") {
  const std::string huge = R"({"kvs":[{"value":")" + std::string(2 << 20, 'A') + R"("}]})";
  FakeHttpServer server({{200, huge}});
  EtcdClient client({{server.url()}});
  auto got = client.Get("apollo11/coordinators.insync");
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(got.status().message(),
             Catch::Contains("etcd answered /v3/kv/range with more than 1048576 bytes") &&
                 !Catch::Contains("unreachable"));
}

TEST_CASE("with a user, every call carries the token and a stale token is fetched again",
          "[ha][etcd]") {
  FakeHttpServer server({{200, R"({"header":{},"token":"tok1"})"},
                         {200, R"({"header":{},"ID":"7","TTL":"5"})"},
                         {401, R"({"error":"etcdserver: invalid auth token","code":16})"},
                         {200, R"({"header":{},"token":"tok2"})"},
                         {200, R"({"result":{"ID":"7","TTL":"5"}})"}});
  EtcdClient client({{server.url()}}, EtcdSecurity{"", "", "", "coord", "pw"});
  REQUIRE(client.GrantLease(5).ok());
  auto alive = client.KeepAlive(7);  // refused for its token, then again with a new one
  REQUIRE(alive.ok());
  CHECK(alive->ttl_s == 5);
  auto requests = server.requests();
  REQUIRE(requests.size() == 5);
  CHECK(requests[0].first == "/v3/auth/authenticate");
  CHECK(requests[0].second == R"({"name":"coord","password":"pw"})");
  CHECK(requests[3].first == "/v3/auth/authenticate");
  CHECK(requests[4].first == "/v3/lease/keepalive");
}
