#include "tests/actors/cli_harness.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace apollo11::testing {
namespace fs = std::filesystem;

ScratchDir::ScratchDir() {
  char tmpl[] = "/tmp/apollo11-test-XXXXXX";
  const char* made = ::mkdtemp(tmpl);
  path_ = made ? made : "/tmp/apollo11-test-failed";
}

ScratchDir::~ScratchDir() {
  // APOLLO11_KEEP_SCRATCH=1 keeps every scratch dir (logs, journals) for a
  // post-mortem of a long chaos run.
  const char* keep = std::getenv("APOLLO11_KEEP_SCRATCH");
  if (keep != nullptr && *keep != '\0' && *keep != '0') {
    std::fprintf(stderr, "scratch dir kept: %s\n", path_.c_str());
    return;
  }
  std::error_code ec;
  fs::remove_all(path_, ec);
}

std::string ScratchDir::Write(const std::string& name, const std::string& content) const {
  std::string p = path_ + "/" + name;
  fs::create_directories(fs::path(p).parent_path());
  std::ofstream(p, std::ios::binary) << content;
  return p;
}

std::string ScratchDir::Read(const std::string& name) const {
  std::ifstream in(path_ + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool ScratchDir::Exists(const std::string& name) const { return fs::exists(path_ + "/" + name); }

std::string Apollo11() {
  const char* dir = std::getenv("APOLLO11_BIN_DIR");
  return std::string(dir ? dir : APOLLO11_BIN_DIR) + "/apollo11";
}

namespace {

std::string ReadFile(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

pid_t SpawnTo(const std::vector<std::string>& argv, const std::string& cwd, const std::string& out,
              const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  if (posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  return pid;
}

// A command run by Run() is killed after this many seconds (exit code 124),
// so a hung command fails its test with its output instead of holding the
// whole test until CTest's timeout. APOLLO11_TEST_CMD_TIMEOUT_S overrides.
int CommandDeadlineSeconds() {
  const char* env = std::getenv("APOLLO11_TEST_CMD_TIMEOUT_S");
  const int parsed = env ? std::atoi(env) : 0;
  return parsed > 0 ? parsed : 300;
}

// waitpid with a deadline: polls (1 ms growing to 20 ms) and SIGKILLs the
// child when `seconds` pass, setting *killed. Returns the wait status.
int WaitBounded(pid_t pid, int seconds, bool* killed) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    int status = 0;
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid || (done < 0 && errno != EINTR)) return status;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      *killed = true;
      return status;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

}  // namespace

CmdResult Run(const std::vector<std::string>& argv, const std::string& cwd) {
  char tmpl[] = "/tmp/apollo11-cmd-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  CmdResult r;
  pid_t pid = SpawnTo(argv, cwd, dir + "/out", dir + "/err");
  bool killed = false;
  if (pid > 0) {
    const int status = WaitBounded(pid, CommandDeadlineSeconds(), &killed);
    r.exit_code = killed ? 124 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  r.out = ReadFile(dir + "/out");
  r.err = ReadFile(dir + "/err");
  if (killed) {
    std::string line =
        "[test harness] killed after " + std::to_string(CommandDeadlineSeconds()) + " s:";
    for (const std::string& a : argv) line += " " + a;
    std::cerr << line << "\n--- its stdout ---\n"
              << r.out << "\n--- its stderr ---\n"
              << r.err << std::endl;
    r.err += "\n" + line + "\n";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  return r;
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& dir) {
  return SpawnTo(argv, "", dir + "/spawn.out", dir + "/spawn.err");
}

pid_t SpawnNamed(const std::vector<std::string>& argv, const std::string& dir,
                 const std::string& name) {
  return SpawnTo(argv, "", dir + "/" + name + ".out", dir + "/" + name + ".err");
}

int WaitExit(pid_t pid, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    int status = 0;
    pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool WaitFor(const std::function<bool()>& predicate, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (predicate()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return predicate();
}

bool Alive(pid_t pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno != ESRCH); }

std::string LayeredDag(int n, int depth, const std::string& type, unsigned seed) {
  std::mt19937 rng(seed);
  std::ostringstream y;
  y << "version: \"1.0\"\nname: test.layered\npipeline:\n";
  const int per_layer = std::max(1, n / depth);
  std::vector<std::vector<int>> layers(depth);
  for (int i = 0; i < n; ++i) layers[std::min(depth - 1, i / per_layer)].push_back(i);
  for (int l = 0; l < depth; ++l) {
    for (int t : layers[l]) {
      y << "  - id: t" << t << "\n    type: " << type << "\n";
      if (type == "shell") y << "    command: \"true\"\n";
      if (l > 0) {
        const auto& up = layers[l - 1];
        int deps = 1 + static_cast<int>(rng() % 3);
        std::vector<int> chosen;
        for (int d = 0; d < deps; ++d) {
          int u = up[rng() % up.size()];
          if (std::find(chosen.begin(), chosen.end(), u) == chosen.end()) chosen.push_back(u);
        }
        y << "    depends_on: [";
        for (size_t i = 0; i < chosen.size(); ++i) y << (i ? ", " : "") << "t" << chosen[i];
        y << "]\n";
      }
    }
  }
  return y.str();
}

nlohmann::json ParseJson(const std::string& text) {
  return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
}

std::vector<std::string> NonEmptyLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace apollo11::testing
