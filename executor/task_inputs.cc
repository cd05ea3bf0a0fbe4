#include "executor/task_inputs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

extern char** environ;

namespace apollo11::executor {
namespace {

// Linux refuses any one argv or envp string longer than this (32 pages).
constexpr size_t kMaxArgStrlen = 32 * 4096;
// What exec needs beside the strings (file name, auxv): kept free.
constexpr size_t kExecSlack = 4096;

const char* Folder(TaskInput::Kind kind) {
  return kind == TaskInput::Kind::kOutput ? "outputs" : "params";
}

std::string Describe(const TaskInput& in) {
  return std::string(in.kind == TaskInput::Kind::kOutput ? "the output of upstream '"
                                                         : "parameter '") +
         in.name + "'";
}

// A name is one path component, and nothing the environment would misread.
bool SafeName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
  return std::none_of(name.begin(), name.end(),
                      [](char c) { return c == '/' || c == '=' || c == '\0'; });
}

Status WriteFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::Io(path + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < value.size()) {
    const ssize_t n = ::write(fd, value.data() + done, value.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return Status::Io(path + ": " + std::strerror(err));
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) return Status::Io(path + ": " + std::strerror(errno));
  return Status::Ok();
}

std::string TempRoot() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp";
}

}  // namespace

TaskInputs::~TaskInputs() {
  if (dir_.empty() || RemoveOwnFiles()) return;
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

bool TaskInputs::RemoveOwnFiles() const {
  const int root = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (root < 0) return errno == ENOENT;
  bool emptied = true;
  for (const char* folder : {"params", "outputs", "code"}) {
    const int fd = ::openat(root, folder, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      for (const auto& [in, name] : written_) {
        if (std::strcmp(in, folder) != 0) continue;
        if (::unlinkat(fd, name.c_str(), 0) != 0 && errno != ENOENT) emptied = false;
      }
      ::close(fd);
    } else if (errno != ENOENT) {
      emptied = false;  // a link or a file in its place
    }
    if (::unlinkat(root, folder, AT_REMOVEDIR) != 0 && errno != ENOENT) emptied = false;
  }
  ::close(root);
  return emptied && (::rmdir(dir_.c_str()) == 0 || errno == ENOENT);
}

std::string TaskInputs::VariableName(const TaskInput& input) {
  std::string name =
      input.kind == TaskInput::Kind::kOutput ? "APOLLO11_OUTPUT_" : "APOLLO11_PARAM_";
  for (char c : input.name) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

Status TaskInputs::Prepare(const std::string& root, const std::string& exec_id, uint32_t attempt,
                           const std::vector<TaskInput>& inputs,
                           std::map<std::string, std::string>* env) {
  for (const TaskInput& in : inputs) {
    if (!SafeName(in.name)) {
      return Status::InvalidInput("could not pass " + Describe(in) +
                                  " to the task: the name cannot be a file name");
    }
  }
  const std::string base = root.empty() ? TempRoot() : root;
  std::error_code ec;
  std::filesystem::create_directories(base, ec);
  if (ec) return Status::Io("could not create the inputs directory " + base + ": " + ec.message());
  std::string name = exec_id + "." + std::to_string(attempt);
  std::replace(name.begin(), name.end(), '/', '_');
  std::string tmpl = base + "/" + name + ".XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    return Status::Io("could not create the task's inputs directory under " + base + ": " +
                      std::strerror(errno));
  }
  dir_ = tmpl;
  Status written = WriteAll(inputs);
  if (!written.ok()) {
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
    return written;
  }
  (*env)["APOLLO11_INPUTS_DIR"] = dir_;
  size_t inline_bytes = 0;
  for (const TaskInput& in : inputs) {
    if (in.value.size() > kInlineValueBytes) continue;
    std::string var = VariableName(in);
    const size_t cost = var.size() + 1 + in.value.size() + 1 + sizeof(char*);
    if (inline_bytes + cost > kInlineTotalBytes) continue;
    inline_bytes += cost;
    (*env)[std::move(var)] = in.value;
  }
  return Status::Ok();
}

Status TaskInputs::WriteAll(const std::vector<TaskInput>& inputs) {
  for (const char* folder : {"params", "outputs", "code"}) {
    if (::mkdir((dir_ + "/" + folder).c_str(), 0700) != 0) {
      return Status::Io("could not create " + dir_ + "/" + folder + ": " + std::strerror(errno));
    }
  }
  for (const TaskInput& in : inputs) {
    Status s = WriteFile(dir_ + "/" + Folder(in.kind) + "/" + in.name, in.value);
    if (!s.ok())
      return Status::Io("could not write " + Describe(in) + " for the task: " + s.message());
    written_.emplace_back(Folder(in.kind), in.name);
  }
  return Status::Ok();
}

Result<std::string> TaskInputs::WriteCode(const std::string& name, const std::string& code) {
  if (dir_.empty()) return Status::Internal("WriteCode before Prepare");
  if (!SafeName(name)) {
    return Status::InvalidInput("could not write the task's code: " + name +
                                " cannot be a file name");
  }
  const std::string path = dir_ + "/code/" + name;
  Status s = WriteFile(path, code);
  if (!s.ok()) return Status::Io("could not write the task's code: " + s.message());
  written_.emplace_back("code", name);
  return path;
}

Status TaskInputs::CheckExecSize(const std::vector<std::string>& argv,
                                 const std::map<std::string, std::string>& env) {
  size_t total = 0;
  size_t count = 0;
  std::string longest;
  size_t longest_size = 0;
  auto add = [&](std::string_view name, size_t size) {
    total += size + 1 + sizeof(char*);
    ++count;
    if (size > longest_size) {
      longest_size = size;
      longest = std::string(name);
    }
  };
  for (size_t i = 0; i < argv.size(); ++i) add("argument " + std::to_string(i), argv[i].size());
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && env.count(std::string(*e, eq - *e)) > 0) continue;
    add(std::string_view(*e, eq != nullptr ? eq - *e : std::strlen(*e)), std::strlen(*e));
  }
  for (const auto& [k, v] : env) add(k, k.size() + 1 + v.size());
  if (longest_size > kMaxArgStrlen) {
    return Status::InvalidInput(longest + " is " + std::to_string(longest_size) +
                                " bytes, above the system's limit of " +
                                std::to_string(kMaxArgStrlen) +
                                " bytes for one argument or environment variable (E2BIG); pass "
                                "large values through files");
  }
  const long arg_max = ::sysconf(_SC_ARG_MAX);
  const size_t limit = arg_max > static_cast<long>(kExecSlack)
                           ? static_cast<size_t>(arg_max) - kExecSlack
                           : static_cast<size_t>(128 << 10);
  if (total > limit) {
    return Status::InvalidInput("the command line and environment are " + std::to_string(total) +
                                " bytes in " + std::to_string(count) +
                                " strings, above the system's limit of " + std::to_string(limit) +
                                " bytes (ARG_MAX, E2BIG); pass large values through files");
  }
  return Status::Ok();
}

std::string TaskInputs::DefaultRoot(const std::string& worker_dir) {
  if (worker_dir.empty()) return "";
  std::error_code ec;
  const std::string path = std::filesystem::absolute(worker_dir, ec).string();
  if (!std::filesystem::is_directory("/dev/shm", ec)) return worker_dir + "/inputs";
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : path) h = (h ^ c) * 1099511628211ull;
  char name[64];
  std::snprintf(name, sizeof(name), "/dev/shm/apollo11-inputs-%016llx",
                static_cast<unsigned long long>(h));
  return name;
}

void TaskInputs::ClearRoot(const std::string& root) {
  if (root.empty()) return;
  std::error_code ec;
  std::vector<std::filesystem::path> left;
  for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    left.push_back(it->path());
  }
  for (const auto& path : left) std::filesystem::remove_all(path, ec);
}

}  // namespace apollo11::executor
