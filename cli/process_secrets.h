#pragma once
// Keeps a node's secrets from the other processes of its user, tasks
// included (docs/operations.md, "Security"). Linux: what /proc/PID/cmdline
// and /proc/PID/environ show is the memory where the kernel put argv and the
// initial environment, whatever setenv/unsetenv did since; and a process of
// the same user may read /proc/PID/environ and /proc/PID/mem unless the
// process is not dumpable.

#include <string>
#include <vector>

namespace apollo11::cli {

// Overwrites in place with '*' the value of each of `flags` on the command
// line ("--flag VALUE" and "--flag=VALUE"), and of each of `env_names` in
// the initial environment block, then unsetenv()s those variables (tasks
// inherit the node's environment). Call after the flags were read and while
// the process has one thread.
void ScrubSecrets(int argc, char** argv, const std::vector<std::string>& flags,
                  const std::vector<std::string>& env_names);

// Marks the process not dumpable (PR_SET_DUMPABLE 0): /proc/PID/environ,
// /proc/PID/mem and ptrace then need root, and no core dump is written.
// Children are dumpable again once they exec. False, with errno, on failure.
bool MakeUndumpable();

}  // namespace apollo11::cli
