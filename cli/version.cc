#include "cli/version.h"

#include "cli/git_commit.h"
#include "transport/messages.h"

namespace apollo11 {

const char* GitCommit() { return APOLLO11_GIT_COMMIT; }

std::string VersionText(const std::string& program) {
  return program + " " + kVersion + " (commit " + GitCommit() + ", protocol " +
         std::to_string(transport::kProtocolVersion) + ")";
}

}  // namespace apollo11
