#include "storage/snapshot_pack.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

namespace apollo11::storage {
namespace {

// A snapshot-like text of `tasks` noop tasks: repetitive, as real ones are.
std::string SnapshotText(int tasks) {
  std::string text = R"({"name":"bench.dag","tasks":[)";
  for (int i = 0; i < tasks; ++i) {
    if (i > 0) text += ',';
    text += R"({"id":"t)" + std::to_string(i) + R"(","type":"noop","where":{"column":5,"line":)" +
            std::to_string(i + 4) + "}}";
  }
  return text + "]}";
}

TEST_CASE("a small snapshot is stored as its text", "[storage]") {
  const std::string text = SnapshotText(10);
  REQUIRE(text.size() < kPackAtLeast);
  CHECK(PackSnapshot(text) == text);
  CHECK_FALSE(IsPackedSnapshot(text));
  CHECK(UnpackSnapshot(text).value() == text);
  CHECK(SnapshotTextBytes(text) == text.size());
}

TEST_CASE("a large snapshot is stored deflated and unpacks to its text", "[storage]") {
  const std::string text = SnapshotText(20000);
  REQUIRE(text.size() >= kPackAtLeast);
  const std::string packed = PackSnapshot(text);
  CHECK(IsPackedSnapshot(packed));
  CHECK(packed.size() * 4 < text.size());
  CHECK(SnapshotTextBytes(packed) == text.size());
  auto back = UnpackSnapshot(packed);
  REQUIRE(back.ok());
  CHECK(*back == text);
}

TEST_CASE("a large text deflate cannot shrink is stored as it is", "[storage]") {
  std::mt19937 random(7);
  std::string text(kPackAtLeast * 2, '\0');
  for (char& c : text) c = static_cast<char>('!' + random() % 90);
  // Printable noise shrinks a little: it is packed only if it does.
  const std::string stored = PackSnapshot(text);
  CHECK(UnpackSnapshot(stored).value() == text);
  std::string bytes(kPackAtLeast * 2, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  bytes[0] = '{';
  CHECK(PackSnapshot(bytes) == bytes);
}

TEST_CASE("text that begins with the tag is packed whatever its size", "[storage]") {
  const std::string text("\0A1z\x05\0\0\0hello", 13);
  const std::string stored = PackSnapshot(text);
  CHECK(stored != text);
  CHECK(UnpackSnapshot(stored).value() == text);
}

TEST_CASE("a damaged packed snapshot is refused as corrupt, never trusted", "[storage]") {
  const std::string packed = PackSnapshot(SnapshotText(20000));
  REQUIRE(IsPackedSnapshot(packed));
  SECTION("truncated") {
    auto back = UnpackSnapshot(packed.substr(0, packed.size() / 2));
    REQUIRE_FALSE(back.ok());
    CHECK(back.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(back.status().message(), Catch::Contains("does not inflate"));
  }
  SECTION("its length forged beyond what deflate can give") {
    std::string forged = packed.substr(0, 64);
    forged[7] = '\x7f';  // ~2 GiB from 56 bytes
    auto back = UnpackSnapshot(forged);
    REQUIRE_FALSE(back.ok());
    CHECK(back.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(back.status().message(), Catch::Contains("more than deflate can give"));
  }
  SECTION("its length forged short") {
    std::string forged = packed;
    forged[4] = static_cast<char>(forged[4] - 1);
    auto back = UnpackSnapshot(forged);
    REQUIRE_FALSE(back.ok());
    CHECK(back.status().code() == StatusCode::kCorrupt);
  }
  SECTION("bytes after the deflate stream") {
    auto back = UnpackSnapshot(packed + "trailing");
    REQUIRE_FALSE(back.ok());
    CHECK(back.status().code() == StatusCode::kCorrupt);
    CHECK_THAT(back.status().message(), Catch::Contains("8 bytes after its deflate stream"));
  }
  SECTION("a flipped byte in the deflated stream") {
    std::string forged = packed;
    forged[forged.size() / 2] = static_cast<char>(forged[forged.size() / 2] ^ 0x5a);
    auto back = UnpackSnapshot(forged);
    CHECK_FALSE(back.ok());
  }
}

}  // namespace
}  // namespace apollo11::storage
