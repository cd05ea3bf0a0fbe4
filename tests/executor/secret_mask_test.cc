// SecretMask: a task's secret values become "***" in its text, its output
// JSON and its streams, whatever the pieces the stream arrives in.

#include "executor/secret_mask.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>

#include "executor/log_sink.h"

namespace ex = apollo11::executor;

namespace {

ex::SecretMask MaskOf(std::initializer_list<std::string> values) {
  ex::SecretMask m;
  for (const std::string& v : values) m.Add(v);
  return m;
}

// The stream fed in pieces cut at `cuts`, then flushed.
std::string Streamed(const ex::SecretMask& mask, const std::string& text,
                     const std::vector<size_t>& cuts) {
  ex::SecretMask::Stream s(&mask);
  std::string out;
  size_t from = 0;
  for (size_t cut : cuts) {
    out += s.Feed(std::string_view(text).substr(from, cut - from));
    from = cut;
  }
  out += s.Feed(std::string_view(text).substr(from));
  return out + s.Flush();
}

}  // namespace

TEST_CASE("secret values become *** in text, longest first", "[secrets][mask]") {
  const auto mask = MaskOf({"hunter2", "hunter2-long", "ab", "first\nlines"});
  CHECK(mask.Mask("pw=hunter2 and hunter2-long.") == "pw=*** and ***.");
  CHECK(mask.Mask("hunter2hunter2") == "******");
  // Shorter than 4 bytes: not masked (it would blank ordinary text).
  CHECK(mask.Mask("ab cd") == "ab cd");
  // A multi-line value: each line on its own.
  CHECK(mask.Mask("x first\nlines y") == "x ***\n*** y");
  CHECK(mask.Mask("lines") == "***");
  CHECK(MaskOf({}).Mask("hunter2") == "hunter2");
  CHECK(MaskOf({"a\"b\\c"}).Mask(R"({"v":"a\"b\\c"})") == R"({"v":"***"})");
}

TEST_CASE("a task's output JSON is masked inside its strings, keys and numbers",
          "[secrets][mask]") {
  const auto mask = MaskOf({"s3cr3t", "424242"});
  auto doc = nlohmann::json::parse(
      mask.MaskJson(R"({"user":"bob","pw":"s3cr3t!","s3cr3t":1,"pin":424242,"n":[7,"s3cr3t"]})"));
  CHECK(doc["user"] == "bob");
  CHECK(doc["pw"] == "***!");
  CHECK(doc["***"] == 1);
  CHECK(doc["pin"] == "***");
  CHECK(doc["n"] == nlohmann::json::array({7, "***"}));
  // Not JSON: masked as text.
  CHECK(mask.MaskJson("{broken s3cr3t") == "{broken ***");
  // As deep as an output may nest, masked inside; deeper (no worker sends
  // that: the output is refused first) masked as text, never printed back
  // through the recursive JSON writer.
  const std::string ok = std::string(128, '[') + "\"s3cr3t\"" + std::string(128, ']');
  CHECK(mask.MaskJson(ok) == std::string(128, '[') + "\"***\"" + std::string(128, ']'));
  const std::string deep = std::string(30000, '[') + "\"s3cr3t\"" + std::string(30000, ']');
  CHECK(mask.MaskJson(deep) == std::string(30000, '[') + "\"***\"" + std::string(30000, ']'));
}

TEST_CASE("a stream is masked the same whatever pieces it arrives in", "[secrets][mask]") {
  const auto mask = MaskOf({"topsecret", "secret-2", "pw"});
  const std::string text = "a topsecret b\nsecret-2secret-2 topsecre\nt x topsecret";
  const std::string whole = mask.Mask(text);
  CHECK(whole == "a *** b\n****** topsecre\nt x ***");
  for (size_t i = 0; i <= text.size(); ++i) {
    for (size_t j = i; j <= text.size(); ++j) {
      INFO(i << " " << j);
      REQUIRE(Streamed(mask, text, {i, j}) == whole);
    }
  }
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<size_t> cuts;
    for (size_t at = 0; at < text.size(); at += 1 + rng() % 4) cuts.push_back(at);
    REQUIRE(Streamed(mask, text, cuts) == whole);
  }
  // A finished line is released at once, not held for the next piece.
  ex::SecretMask::Stream s(&mask);
  CHECK(s.Feed("progress 10%\n") == "progress 10%\n");
  CHECK(s.Feed("top") == "");
  CHECK(s.Feed("secret\n") == "***\n");
}

TEST_CASE("a log sink with a mask writes and keeps only masked bytes", "[secrets][mask]") {
  const auto mask = MaskOf({"hunter2"});
  char tmpl[] = "/tmp/apollo11-mask-XXXXXX";
  const std::string dir = ::mkdtemp(tmpl);
  ex::LogSink sink;
  sink.SetMask(&mask);
  REQUIRE(sink.Open(dir + "/out", 1 << 20, ex::LogSink::Keep::kTail, 64).ok());
  sink.Write("pw=hun", 6);
  sink.Write("ter2\nend hunt", 13);
  const std::string kept = sink.Finish();
  CHECK(kept == "pw=***\nend hunt");
  CHECK(sink.bytes_seen() == kept.size());
  std::FILE* f = std::fopen((dir + "/out").c_str(), "rb");
  REQUIRE(f != nullptr);
  char buf[64] = {0};
  const size_t n = std::fread(buf, 1, sizeof buf, f);
  std::fclose(f);
  CHECK(std::string(buf, n) == kept);
  std::remove((dir + "/out").c_str());
  ::rmdir(dir.c_str());
}
