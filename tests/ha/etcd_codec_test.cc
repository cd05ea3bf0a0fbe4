#include "ha/etcd_codec.h"

#include <catch2/catch.hpp>

using namespace apollo11;
using namespace apollo11::ha;

TEST_CASE("base64 round-trips every length and refuses garbage", "[ha][etcd]") {
  std::string raw;
  for (int i = 0; i < 40; ++i) {
    CHECK(Base64Decode(Base64Encode(raw)) == std::optional<std::string>(raw));
    raw += static_cast<char>(i * 37);
  }
  CHECK(Base64Encode("apollo11-test") == "YXBvbGxvMTEtdGVzdA==");
  CHECK_FALSE(Base64Decode("a$bc").has_value());
  CHECK_FALSE(Base64Decode("abcde").has_value());
}

TEST_CASE("the gateway's answers decode as etcd 3.4 writes them", "[ha][etcd]") {
  auto grant = DecodeGrant(R"({"header":{"revision":"1"},"ID":"4111120380609075205","TTL":"5"})");
  REQUIRE(grant.ok());
  CHECK(grant->id == 4111120380609075205);
  CHECK(grant->ttl_s == 5);

  auto alive = DecodeKeepAlive(R"({"result":{"header":{},"ID":"7","TTL":"4"}})");
  REQUIRE(alive.ok());
  CHECK(alive->ttl_s == 4);
  auto gone = DecodeKeepAlive(R"({"result":{"header":{},"ID":"123"}})");
  REQUIRE(gone.ok());
  CHECK(gone->ttl_s == 0);

  auto won = DecodeCampaign(
      R"({"header":{},"leader":{"name":"YXBvbGxvMTEtdGVzdA==","key":"YXBvbGxvMTEtdGVzdC8zOTBk","rev":"2","lease":"41"}})");
  REQUIRE(won.ok());
  CHECK(won->name == "apollo11-test");
  CHECK(won->key == "apollo11-test/390d");
  CHECK(won->rev == 2);
  CHECK(won->lease == 41);

  auto leader = DecodeLeader(
      R"({"header":{},"kv":{"key":"YQ==","create_revision":"9","mod_revision":"9","version":"1","value":"eyJuYW1lIjoiYzEifQ==","lease":"41"}})");
  REQUIRE(leader.ok());
  REQUIRE(leader->has_value());
  CHECK((*leader)->key.rev == 9);
  CHECK((*leader)->value == R"({"name":"c1"})");
  auto none =
      DecodeLeader(R"({"error":"election: no leader","message":"election: no leader","code":2})");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

TEST_CASE("garbage from etcd is a clear error, never a crash", "[ha][etcd]") {
  for (const char* body :
       {"", "<html>502</html>", "[]", "null", "{", R"({"ID":{},"TTL":"5"})",
        R"({"ID":"x","TTL":"5"})", R"({"ID":"1","TTL":"-3"})", R"({"result":5})",
        R"({"leader":{"name":"!!","key":"YQ==","rev":"2"}})",
        R"({"leader":{"name":"YQ==","key":"YQ==","rev":"0"}})",
        R"({"kv":{"key":"YQ==","create_revision":[]}})", R"({"kv":"x"})", "\xff\xfe\x00garbage"}) {
    INFO(body);
    CHECK(DecodeGrant(body).status().code() == StatusCode::kCorrupt);
    CHECK_FALSE(DecodeCampaign(body).ok());
    auto alive = DecodeKeepAlive(body);
    CHECK_FALSE(alive.ok());
  }
  auto leader = DecodeLeader(R"({"kv":{"key":"YQ==","create_revision":[]}})");
  CHECK(leader.status().code() == StatusCode::kCorrupt);
  auto error = DecodeGrant(R"({"error":"etcdserver: request timed out","code":14})");
  CHECK(error.status().code() == StatusCode::kIo);
  CHECK(error.status().message() == "etcd: etcdserver: request timed out");
}

TEST_CASE("requests carry base64 names and string lease ids", "[ha][etcd]") {
  CHECK(GrantRequest(5) == R"({"TTL":5})");
  CHECK(LeaseIdRequest(42) == R"({"ID":"42"})");
  CHECK(CampaignRequest("e", 42, "v") == R"({"lease":"42","name":"ZQ==","value":"dg=="})");
  CHECK(ResignRequest(EtcdLeaderKey{"e", "e/1", 3, 42}) ==
        R"({"leader":{"key":"ZS8x","lease":"42","name":"ZQ==","rev":"3"}})");
}

// Answers copied from etcd 3.4.23's gateway (Debian 12), for the in-sync
// record's read and its leader-guarded write.
TEST_CASE("kv range and txn answers decode, and a failed compare is false", "[ha][etcd]") {
  auto found = DecodeRange(
      R"({"header":{"revision":"3","raft_term":"2"},"kvs":[{"key":"ZWwuaW5zeW5j",)"
      R"("create_revision":"3","mod_revision":"3","version":"1","value":"eyJ4IjoxfQ=="}],"count":"1"})");
  REQUIRE(found.ok());
  REQUIRE(found->has_value());
  CHECK(**found == R"({"x":1})");
  auto missing = DecodeRange(R"({"header":{"revision":"3","raft_term":"2"}})");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());
  auto written = DecodeTxn(
      R"({"header":{"revision":"3"},"succeeded":true,"responses":[{"response_put":{"header":{"revision":"3"}}}]})");
  REQUIRE(written.ok());
  CHECK(*written);
  auto refused = DecodeTxn(R"({"header":{"revision":"3","raft_term":"2"}})");
  REQUIRE(refused.ok());
  CHECK_FALSE(*refused);
  CHECK(DecodeRange(R"({"kvs":{"key":"YQ=="}})").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeRange(R"({"kvs":[{"key":"YQ==","value":"***"}]})").status().code() ==
        StatusCode::kCorrupt);
  CHECK(DecodeTxn(R"({"succeeded":"yes"})").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeTxn(R"({"error":"etcdserver: no leader","code":14})").status().code() ==
        StatusCode::kIo);
  CHECK(RangeRequest("el.insync") == R"({"key":"ZWwuaW5zeW5j"})");
  CHECK(
      PutIfLeaderRequest(EtcdLeaderKey{"el", "el/1", 2, 7}, "k", "v") ==
      R"({"compare":[{"create_revision":"2","key":"ZWwvMQ==","result":"EQUAL","target":"CREATE"}],)"
      R"("success":[{"request_put":{"key":"aw==","value":"dg=="}}]})");
}

TEST_CASE("authentication and the guarded delete speak the gateway's JSON", "[ha][etcd]") {
  CHECK(AuthenticateRequest("coord", "p\"w") == R"({"name":"coord","password":"p\"w"})");
  auto token = DecodeAuthenticate(R"({"header":{"revision":"3"},"token":"abc.12"})");
  REQUIRE(token.ok());
  CHECK(*token == "abc.12");
  auto refused = DecodeAuthenticate(
      R"({"error":"etcdserver: authentication failed, invalid user ID or password","code":3})");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("invalid user ID or password") != std::string::npos);
  CHECK_FALSE(DecodeAuthenticate(R"({"header":{}})").ok());
  CHECK(IsInvalidTokenAnswer(R"({"error":"etcdserver: invalid auth token","code":3})"));
  CHECK(IsInvalidTokenAnswer(R"({"error":"etcdserver: user name is empty","code":3})"));
  CHECK_FALSE(IsInvalidTokenAnswer(R"({"header":{},"ID":"7","TTL":"5"})"));
  CHECK(
      DeleteIfCreatedRequest("el/x", 9) ==
      R"({"compare":[{"create_revision":"9","key":"ZWwveA==","result":"EQUAL","target":"CREATE"}],)"
      R"("success":[{"request_delete_range":{"key":"ZWwveA=="}}]})");
}
