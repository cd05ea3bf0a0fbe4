#!/usr/bin/env python3
"""Holds the dependency rule of docs/architecture.md against the source tree.

- engine/ and dsl/ include nothing from actors/, transport/ or storage/;
- storage/ includes nothing from actors/;
- the socket-free classes of actors/ (the cores and what the loops delegate
  to) include no ZeroMQ header, directly or through another project header.

Exits 1 with one line per violation, 0 when the tree keeps the rule.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)

FORBIDDEN = {
    "engine": ("actors/", "transport/", "storage/"),
    "dsl": ("actors/", "transport/", "storage/"),
    "storage": ("actors/",),
    # election: the HA role, elector and etcd client are socket-free
    "ha": ("actors/", "transport/", "storage/", "zmq"),
}
# Socket-free by contract: a test drives each without a socket.
SOCKET_FREE = [
    "scheduler_core", "schedule_core", "core_fire_starter", "dispatcher_core", "dispatcher_frames", "dispatcher_hello", "reconciler_core",
    "worker_core", "worker_core_queue", "worker_follow", "coordinator_follower",
    "worker_protocol", "scheduler_turn", "client_sessions", "query_service",
    "journal_health", "run_views", "dispatch_builder", "slow_watch",
    "claim_window", "ready_queue", "task_explain", "link_limits", "retry_gate",
    "scheduler_run", "foreach_items", "pipeline_registry",
    "scheduler_rerun",
    # replication: paths outside actors/ are given with their folder
    "replication/replication_frame", "replication/replication_leader_core",
    "replication/replication_standby_core", "replication/replica_store",
]


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def reaches_zmq(header, seen):
    """True when `header` (repository-relative) includes zmq, transitively."""
    if header in seen:
        return False
    seen.add(header)
    path = ROOT / header
    if not path.exists():
        return False
    for inc in includes(path):
        if inc.startswith("zmq") or inc in ("zmq.hpp", "zmq_addon.hpp"):
            return True
        if (ROOT / inc).exists() and reaches_zmq(inc, seen):
            return True
    return False


def main():
    bad = []
    for folder, banned in FORBIDDEN.items():
        for path in sorted((ROOT / folder).glob("*.[hc]*")):
            for inc in includes(path):
                if inc.startswith(banned):
                    bad.append(f"{path.relative_to(ROOT)}: includes {inc}")
    for name in SOCKET_FREE:
        for ext in ("h", "cc"):
            rel = f"{name}.{ext}" if "/" in name else f"actors/{name}.{ext}"
            if (ROOT / rel).exists() and reaches_zmq(rel, set()):
                bad.append(f"{rel}: reaches a ZeroMQ header (a core must not)")
    for line in bad:
        print(line)
    if bad:
        return 1
    print("layering: the dependency rule holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
