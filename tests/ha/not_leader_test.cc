#include "ha/not_leader.h"

#include <catch2/catch.hpp>

using apollo11::ha::NotLeaderReply;
using apollo11::ha::ParseNotLeader;

TEST_CASE("a not-the-leader reply names the endpoint and parses back", "[ha]") {
  const std::string reply = NotLeaderReply("tcp://10.0.0.7:7012");
  CHECK(reply == "not the leader; the leader is tcp://10.0.0.7:7012");
  CHECK(ParseNotLeader(reply) == std::optional<std::string>("tcp://10.0.0.7:7012"));
}

TEST_CASE("a not-the-leader reply with no leader known parses as unknown", "[ha]") {
  CHECK(NotLeaderReply("") == "not the leader; the leader is unknown");
  CHECK(ParseNotLeader(NotLeaderReply("")) == std::optional<std::string>(""));
}

TEST_CASE("other replies and odd endpoints are not taken for a leader", "[ha]") {
  CHECK_FALSE(ParseNotLeader("permission denied").has_value());
  CHECK_FALSE(ParseNotLeader("").has_value());
  CHECK_FALSE(ParseNotLeader("not the leader").has_value());
  CHECK(ParseNotLeader("not the leader; the leader is tcp://a b") ==
        std::optional<std::string>(""));
  CHECK(ParseNotLeader(std::string("not the leader; the leader is tcp://a\x01")) ==
        std::optional<std::string>(""));
  CHECK(ParseNotLeader("not the leader; the leader is  tcp://h:1 \n") ==
        std::optional<std::string>("tcp://h:1"));
}

TEST_CASE("a not-the-leader reply may say why after the endpoint, which still parses", "[ha]") {
  const std::string reply = NotLeaderReply("tcp://10.0.0.7:7012", "no run r1 in this journal");
  CHECK(reply == "not the leader; the leader is tcp://10.0.0.7:7012; no run r1 in this journal");
  CHECK(ParseNotLeader(reply) == std::optional<std::string>("tcp://10.0.0.7:7012"));
  CHECK(ParseNotLeader(NotLeaderReply("", "why")) == std::optional<std::string>(""));
  CHECK(NotLeaderReply("", "why") == "not the leader; the leader is unknown; why");
  CHECK(ParseNotLeader("not the leader; the leader is tcp://a b; why") ==
        std::optional<std::string>(""));
}
