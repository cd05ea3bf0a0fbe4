#pragma once
// What a build is: the version from CMake's project(VERSION) (the one place
// it is written), the git commit it was built from and the wire-protocol
// version it speaks.

#include <string>

#include "cli/version_config.h"

namespace apollo11 {

inline constexpr const char* kVersion = APOLLO11_VERSION;

// The short git commit of the source tree at build time; "unknown" when it
// was built outside a git checkout.
const char* GitCommit();

// "PROGRAM VERSION (commit C, protocol P)": what `--version` prints.
std::string VersionText(const std::string& program);

}  // namespace apollo11
