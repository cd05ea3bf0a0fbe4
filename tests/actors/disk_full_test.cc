// A truly full disk under a real node: the state dir lives on a 4 MiB tmpfs
// that a ballast file fills while a pipeline runs. The coordinator must say so
// once, stop promoting and placing, keep answering queries, retry with
// backoff, and finish the run with nothing lost once the ballast is gone.
// Needs root (mount); skipped with a message otherwise.

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// A small tmpfs mounted for the test's lifetime.
class SmallDisk {
 public:
  explicit SmallDisk(const std::string& path) : path_(path) {
    ::mkdir(path.c_str(), 0755);
    mounted_ = ::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=4m") == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

// Writes zeros to `path` until the file system refuses (ENOSPC); returns the
// bytes written.
size_t FillDisk(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  REQUIRE(fd >= 0);
  std::string chunk(64 * 1024, '\0');
  size_t total = 0;
  for (;;) {
    ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
  const int error = errno;
  ::fsync(fd);
  ::close(fd);
  CHECK(error == ENOSPC);
  return total;
}

size_t CountLines(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += line.empty() ? 0 : 1;
  return n;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a full disk pauses the coordinator, which keeps answering and resumes losing nothing",
          "[diskfull]") {
  ScratchDir dir;
  SmallDisk disk(dir.path() + "/disk");
  if (!disk.mounted()) {
    WARN("SKIPPED: cannot mount a 4 MiB tmpfs (" + disk.error() +
         "); run as root (CAP_SYS_ADMIN) to test a truly full disk");
    return;
  }
  const std::string state = dir.path() + "/disk/state";
  const std::string go = dir.path() + "/go", marks = dir.path() + "/marks";
  constexpr int kFanOut = 300;
  std::ostringstream yaml;
  yaml << "version: \"1.0\"\nname: test.diskfull\npipeline:\n"
       << "  - id: gate\n    type: shell\n    command: \"while [ ! -e " << go
       << " ]; do sleep 0.05; done\"\n";
  for (int i = 0; i < kFanOut; ++i) {
    yaml << "  - id: t" << i << "\n    type: shell\n    command: \"echo $APOLLO11_TASK_ID >> "
         << marks << "\"\n    depends_on: gate\n";
  }
  const std::string file = dir.Write("fan.yaml", yaml.str());

  NodeProcess node(dir, "node",
                   {"--role", "all", "--state-dir", state, "--bind", "tcp://127.0.0.1:0",
                    "--api-bind", "tcp://127.0.0.1:0", "--slots", "2", "--worker-id", "w1"});
  CmdResult submitted = node.Cli({"submit", file});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  auto task_state = [&](const std::string& task) {
    auto doc = ParseJson(node.Cli({"status", run_id, "--json"}).out);
    return doc.is_object() ? doc["tasks"][task].value("state", "") : "";
  };
  REQUIRE(WaitFor([&] { return task_state("gate") == "RUNNING"; }, 10000));

  // The disk fills; then the gate opens and 300 tasks want to become READY.
  const size_t ballast = FillDisk(dir.path() + "/disk/ballast");
  INFO("ballast bytes: " << ballast);
  std::ofstream(go).put('\n');
  INFO(node.Log());
  REQUIRE(WaitFor([&] { return node.Log().find("journal: disk full at") != std::string::npos; },
                  20000));

  // The failed commit count, from the API (0 while the journal is healthy).
  auto failures_now = [&] {
    auto d = ParseJson(node.Cli({"status", run_id, "--json"}).out);
    return d.is_object() && d["journal_error"].is_object() ? d["journal_error"].value("failures", 0)
                                                           : 0;
  };
  // Reads are answered, with the failure visible; nothing new starts. The
  // second failed commit is the event that says the pause has settled: the
  // turn that hit the full disk has released nothing, and the retry too.
  REQUIRE(WaitFor([&] { return failures_now() >= 2; }, 10000));
  const size_t marks_paused = CountLines(marks);
  CmdResult status = node.Cli({"status", run_id, "--json"});
  REQUIRE(status.exit_code == 0);
  auto doc = ParseJson(status.out);
  REQUIRE(doc["journal_error"].is_object());
  CHECK(doc["journal_error"]["kind"] == "disk_full");
  CHECK(doc["journal_error"]["waiting_transitions"].get<int>() > 0);
  CHECK(status.err.find("cannot write its journal") != std::string::npos);
  CHECK(node.Cli({"runs"}).exit_code == 0);
  CmdResult workers = node.Cli({"workers", "--json"});
  CHECK(workers.exit_code == 0);
  CHECK(ParseJson(workers.out).size() == 1);
  CmdResult explain = node.Cli({"explain", run_id, "t0"});
  CHECK(explain.exit_code == 0);
  CHECK(explain.out.find("nothing is promoted or placed while the journal cannot be written") !=
        std::string::npos);
  CmdResult refused = node.Cli({"submit", file});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("refused while the coordinator cannot write its journal") !=
        std::string::npos);

  // Two more failed retries, waited for as events rather than slept for:
  // nothing starts meanwhile, and they are spaced by the backoff (the delay
  // doubles from 250 ms, so the two after the second failure take >= 1.5 s;
  // a hot loop would take milliseconds).
  const int failures_before = failures_now();
  const auto t0 = std::chrono::steady_clock::now();
  REQUIRE(WaitFor([&] { return failures_now() >= failures_before + 2; }, 20000));
  const auto spaced = std::chrono::steady_clock::now() - t0;
  CHECK(CountLines(marks) == marks_paused);  // no task started while paused
  CHECK(CountLines(marks) < kFanOut);
  CHECK(spaced >= std::chrono::milliseconds(1000));
  CHECK(failures_now() <= failures_before + 4);
  CHECK(Occurrences(node.Log(), "journal: disk full at") == 1);  // said once

  // Space returns: the run finishes, every task ran once, history complete.
  REQUIRE(::unlink((dir.path() + "/disk/ballast").c_str()) == 0);
  REQUIRE(WaitFor(
      [&] {
        auto d = ParseJson(node.Cli({"status", run_id, "--json"}).out);
        return d.is_object() && d.value("state", "") == "SUCCESS";
      },
      60000));
  CHECK(node.Log().find("journal: writable again") != std::string::npos);
  CmdResult healthy = node.Cli({"status", run_id, "--json"});
  CHECK_FALSE(ParseJson(healthy.out).contains("journal_error"));
  CHECK(healthy.err.find("cannot write its journal") == std::string::npos);
  CHECK(CountLines(marks) == kFanOut);
  std::set<std::string> ran;
  {
    std::ifstream in(marks);
    for (std::string line; std::getline(in, line);) ran.insert(line);
  }
  CHECK(ran.size() == kFanOut);

  CmdResult history = node.Cli({"history", run_id, "--json"});
  REQUIRE(history.exit_code == 0);
  auto records = ParseJson(history.out);
  std::map<std::string, std::vector<std::string>> by_task;
  for (const auto& r : records) {
    by_task[r["task_id"].get<std::string>()].push_back(r["from"].get<std::string>() + ">" +
                                                       r["to"].get<std::string>());
  }
  REQUIRE(by_task.size() == kFanOut + 1);
  const std::vector<std::string> full = {"PENDING>READY", "READY>RUNNING", "RUNNING>SUCCESS"};
  for (const auto& [task, path] : by_task) {
    INFO(task);
    CHECK(path == full);
  }
  CHECK(node.Stop() == 0);
}
