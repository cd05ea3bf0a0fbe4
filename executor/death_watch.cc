#include "executor/death_watch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "executor/child_process.h"

namespace apollo11::executor {

namespace {

// $1: the worker's own cgroup directory (NAME-PID; may be empty), $2: the
// prefix of the worker's APOLLO11_CONTAINMENT_TOKEN values (a process whose
// environment carries one is its task's, whatever group it moved to). Lines
// "+ PGID" / "- PGID" keep the set of live task groups, "q" ends it quietly;
// at end of file without "q" (the worker is gone) the cgroup leaves are
// killed first (one write each), then the groups and the token carriers, and
// the directories are removed.
constexpr char kScript[] = R"(exec >/dev/null 2>&1
trap '' INT TERM HUP PIPE
groups=""
while read -r op pg; do
  case "$op" in
    q) exit 0 ;;
    +) groups="$groups $pg" ;;
    -) kept=""; for g in $groups; do [ "$g" = "$pg" ] || kept="$kept $g"; done; groups=$kept ;;
  esac
done
if [ -n "$1" ]; then
  for d in "$1"/*/; do [ -f "${d}cgroup.kill" ] && echo 1 > "${d}cgroup.kill"; done
fi
for g in $groups; do kill -KILL "-$g"; done
if [ -n "$2" ]; then
  for e in /proc/[0-9]*/environ; do
    grep -qaF "APOLLO11_CONTAINMENT_TOKEN=$2" "$e" || continue
    p=${e#/proc/}
    kill -KILL "${p%/environ}"
  done
fi
if [ -n "$1" ]; then
  for i in 1 2 3 4 5 6 7 8 9 10; do
    for d in "$1"/*/; do [ -d "$d" ] && rmdir "$d"; done
    rmdir "$1" && break
    sleep 0.1
  done
fi
)";

}  // namespace

Result<std::unique_ptr<DeathWatch>> DeathWatch::Start(const std::string& cgroup_dir,
                                                      const std::string& token_prefix) {
  // A socket rather than a pipe: a send to a guardian that died fails with
  // EPIPE instead of raising SIGPIPE in the worker.
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    return Status::Io(std::string("death watch: socketpair: ") + std::strerror(errno));
  }
  ::shutdown(fds[0], SHUT_WR);
  SpawnOptions options;
  options.die_with_parent = false;  // it must outlive us: that is its point
  options.stdin_fd = fds[0];
  auto child =
      SpawnChild({"/bin/sh", "-c", kScript, "apollo11-death-watch", cgroup_dir, token_prefix}, {},
                 "", options);
  ::close(fds[0]);
  if (!child.ok()) {
    ::close(fds[1]);
    return Status::Io("death watch: " + child.status().message());
  }
  ::close(child->stdout_fd);
  ::close(child->stderr_fd);
  return std::unique_ptr<DeathWatch>(new DeathWatch(child->pid, child->pidfd, fds[1]));
}

DeathWatch::~DeathWatch() {
  Tell('q', 0);  // a worker that stops on purpose leaves nothing to clean up
  ::close(socket_);
  pollfd p{pidfd_, POLLIN, 0};
  if (::poll(&p, 1, 1000) <= 0) ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(pidfd_);
}

bool DeathWatch::Alive() const {
  pollfd p{pidfd_, POLLIN, 0};
  return ::poll(&p, 1, 0) == 0;  // a pidfd is readable once its process has exited
}

bool DeathWatch::Tell(char op, pid_t pgid) {
  const std::string line = std::string(1, op) + " " + std::to_string(pgid) + "\n";
  // A full buffer (the guardian stalled) loses the line: the restart's
  // OrphanGuard is the second line of defence.
  const ssize_t n = ::send(socket_, line.data(), line.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  return n >= 0 || errno == EAGAIN || errno == EINTR;
}

}  // namespace apollo11::executor
