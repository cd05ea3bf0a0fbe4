#include "cli/process_secrets.h"

#include <sys/prctl.h>

#include <cstdlib>
#include <cstring>

namespace apollo11::cli {
namespace {

void Blank(char* value) {
  for (char* c = value; *c != '\0'; ++c) *c = '*';
}

}  // namespace

void ScrubSecrets(int argc, char** argv, const std::vector<std::string>& flags,
                  const std::vector<std::string>& env_names) {
  for (int i = 1; i < argc; ++i) {
    for (const std::string& flag : flags) {
      if (flag == argv[i] && i + 1 < argc) {
        Blank(argv[i + 1]);
      } else if (std::strncmp(argv[i], flag.c_str(), flag.size()) == 0 &&
                 argv[i][flag.size()] == '=') {
        Blank(argv[i] + flag.size() + 1);
      }
    }
  }
  for (const std::string& name : env_names) {
    // getenv points into the block the kernel shows as /proc/PID/environ
    // (nothing set this variable since the process started).
    if (char* value = std::getenv(name.c_str())) Blank(value);
    ::unsetenv(name.c_str());
  }
}

bool MakeUndumpable() { return ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0; }

}  // namespace apollo11::cli
