#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>

#include "dsl/parser.h"

using namespace apollo11::dsl;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::string ReadExample(const std::string& relative) {
  std::ifstream in(std::string(APOLLO11_SOURCE_DIR) + "/examples/" + relative, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Parses `text`; true when it neither throws nor fails without an error
// diagnostic. Prints the input on failure.
bool CleanOutcome(const std::string& text, const std::string& path) {
  try {
    ParseResult r = ParsePipelineText(text, path);
    if (r.ok()) return true;
    for (const Diagnostic& d : r.diagnostics) {
      if (d.severity == Diagnostic::Severity::kError && !d.message.empty()) return true;
    }
    std::fprintf(stderr, "failed without an error for input of %zu bytes\n", text.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "threw %s\n", e.what());
  }
  std::fprintf(stderr, "input: ");
  for (unsigned char c : text) std::fprintf(stderr, c >= 0x20 && c < 0x7f ? "%c" : "\\x%02x", c);
  std::fprintf(stderr, "\n");
  return false;
}

// Runs `body` in a child process limited to 2 GiB of address space and 120 s,
// so a parser regression (yaml-cpp has inputs that loop allocating forever)
// fails this test instead of exhausting the machine. Sanitizer builds reserve
// terabytes of shadow memory, so there `body` runs in-process.
bool RunBounded(const std::function<bool()>& body) {
  if (kSanitized) return body();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    rlimit limit{2ul << 30, 2ul << 30};
    setrlimit(RLIMIT_AS, &limit);
    alarm(120);
    _exit(body() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("inputs that send yaml-cpp 0.7 into a runaway loop are refused first", "[dsl][fuzz]") {
  CHECK(RunBounded([] {
    struct Case {
      std::string text;
      int line, column;
    };
    // jbeder/yaml-cpp#1040 and relatives, found by this project's fuzzing.
    for (const Case& c :
         {Case{",", 1, 1}, Case{",4[", 1, 1}, Case{"a: 1\n,b", 2, 1}, Case{"[],", 1, 3},
          Case{"'',", 1, 3}, Case{"&a,", 1, 3}, Case{"!a,", 1, 3}, Case{"[]o\n? ", 1, 3},
          Case{"\"x\"o\n? ", 1, 4}, Case{"{} o\n? x", 1, 4}, Case{"&x o\n? ", 2, 1},
          Case{"!t o\n?", 2, 1}, Case{"&x: o\n? a\n", 2, 1}, Case{"a: [? b]", 1, 5},
          Case{"- ? b", 1, 3},
          // Found fuzzing the pre-scan of issue 42: '[' below top-level plain
          // text, which yaml-cpp reads as text, then a ',' it takes for a
          // token; a line of a block scalar less indented than its first or
          // than its header's digit; plain text going on over lines in [ ].
          Case{"-*x--\n[ w\n# c\n, w]", 2, 1}, Case{"--!t -\n[\n\t{}\n--- ,\n\n...\n]\n", 2, 1},
          Case{">\n  foo\n ,\n", 3, 2}, Case{"%\n YAML 1.2\n[ w\n# c\n, w]", 3, 1},
          Case{"|2\n , a\n", 2, 2}, Case{"[1,2\n\"3] >\n,\"", 2, 5}}) {
      ParseResult r = ParsePipelineText(c.text, "p.yaml");
      if (r.ok() || r.diagnostics.empty() || r.diagnostics[0].where.line != c.line ||
          r.diagnostics[0].where.column != c.column) {
        std::fprintf(stderr, "not refused as expected: %s\n", c.text.c_str());
        return false;
      }
    }
    // Commas inside flow collections, quotes and plain text stay fine, as does
    // a '?' that does not open an explicit key.
    const std::string fine =
        "version: \"1.0\"\nname: a.b\npipeline:\n  - {id: a, type: shell, command: 'x, y'}\n"
        "  - id: b\n    type: shell\n    command: echo a,b  # a, b\n    depends_on: [a]\n"
        "  - id: c\n    type: shell\n    command: ?x\n"
        "  - {id: d, type: shell, command: 'a? b'}\n"
        "  - id: e\n    type: shell\n    command: |\n      echo ok\n      ? here\n";
    ParseResult ok = ParsePipelineText(fine, "p.yaml");
    if (!ok.ok())
      std::fprintf(stderr, "commas refused: %s\n", FormatDiagnostic(ok.diagnostics[0]).c_str());
    return ok.ok();
  }));
}

TEST_CASE("an explicit key after an anchored node is refused before yaml-cpp runs away on it",
          "[dsl][fuzz][fuzz-regression]") {
  // fuzz_dsl_parser (CI, 2026-12-03): given a node with an anchor or tag and
  // then '? ' on the next line, yaml-cpp 0.7's LoadAll made documents without
  // end. These 29 bytes passed the fuzzer's 2 GiB; `apollo11 validate` of
  // "&x o\n? \n" was killed by the kernel at 22 GB.
  CHECK(RunBounded([] {
    ParseResult r = ParsePipelineText(
        ReadExample("../fuzz/corpus/dsl_parser/regression_explicit_key_after_anchor.yaml"),
        "p.yaml");
    return !r.ok() && r.diagnostics.size() == 1 && r.diagnostics[0].where.line == 3 &&
           r.diagnostics[0].where.column == 1 &&
           r.diagnostics[0].message.find("'? ' (an explicit mapping key) is not supported") !=
               std::string::npos;
  }));
}

TEST_CASE("random bytes give diagnostics, never a crash", "[dsl][fuzz]") {
  CHECK(RunBounded([] {
    std::mt19937 rng(20240611);
    const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789 :-[]{},'\"#|>&*!%@`?\n\t\\";
    for (int i = 0; i < 3000; ++i) {
      std::string text(rng() % 200, ' ');
      bool binary = i % 5 == 0;
      for (char& c : text)
        c = binary ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
      if (!CleanOutcome(text, "/nonexistent/fuzz.yaml")) return false;
    }
    return true;
  }));
}

TEST_CASE("mutated and truncated examples give diagnostics, never a crash", "[dsl][fuzz]") {
  CHECK(RunBounded([] {
    std::mt19937 rng(7);
    const std::string tokens[] = {
        ":",     "- ",           "[",       "]",        "{",  "}", "\n", "  ",
        "&a ",   "*a ",          "!!map ",  "<<: *a\n", "\"", "'", "#",  "|",
        "---\n", "depends_on: ", "retry: ", "id: ",     "~",  ",", "? "};
    for (const char* name :
         {"design/pipeline.yaml", "hello/pipeline.yaml", "design/common/retry_policy.yaml"}) {
      const std::string original = ReadExample(name);
      if (original.empty()) return false;
      const std::string path = std::string(APOLLO11_SOURCE_DIR) + "/examples/" + name;
      for (size_t cut = 0; cut < original.size(); cut += 7) {
        if (!CleanOutcome(original.substr(0, cut), path)) return false;
      }
      for (int i = 0; i < 1500; ++i) {
        std::string text = original;
        int edits = 1 + static_cast<int>(rng() % 4);
        for (int e = 0; e < edits; ++e) {
          size_t pos = rng() % (text.size() + 1);
          switch (rng() % 4) {
            case 0:
              text.insert(pos, tokens[rng() % std::size(tokens)]);
              break;
            case 1:
              text.erase(pos, rng() % 12);
              break;
            case 2:
              if (pos < text.size()) text[pos] = static_cast<char>(rng() % 128);
              break;
            default: {  // duplicate a slice: repeated keys, deeper nesting
              size_t len = rng() % 40;
              text.insert(pos, text.substr(rng() % text.size(), len));
              break;
            }
          }
        }
        if (!CleanOutcome(text, path)) return false;
      }
    }
    return true;
  }));
}
