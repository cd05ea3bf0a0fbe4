#!/usr/bin/env python3
"""Holds the dependency rule of docs/architecture.md against the source tree.

- engine/ and dsl/ include nothing from actors/, transport/ or storage/;
- storage/ includes nothing from actors/;
- ha/ includes nothing from actors/, transport/, storage/ or ZeroMQ;
- nothing under a subfolder of actors/ (actors/scheduler/, actors/worker/,
  ...: the socket-free logic of each part) reaches a ZeroMQ header, directly
  or through another project header: the threads and sockets live in actors/
  itself;
- the messages between the coordinator's own actors
  (actors/internal_messages.h) are included only from actors/ (and the
  tests, fuzzers and benchmarks): clients speak actors/client_protocol.h;
- the socket-free cores of replication/ reach no ZeroMQ header either.

Exits 1 with one line per violation, 0 when the tree keeps the rule.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
SOURCES = ("*.h", "*.cc")

FORBIDDEN = {
    "engine": ("actors/", "transport/", "storage/"),
    "dsl": ("actors/", "transport/", "storage/"),
    "storage": ("actors/",),
    "ha": ("actors/", "transport/", "storage/", "zmq"),
}
# Folders whose files are part of a process's wiring or of its checks, and
# so may include the coordinator's internal messages.
INTERNAL_OK = ("actors", "tests", "fuzz", "bench")
# Socket-free by contract outside actors/: a test drives each without a socket.
SOCKET_FREE_FILES = [
    "replication/replication_frame", "replication/replication_leader_core",
    "replication/replication_standby_core", "replication/replica_store",
]


def includes(path):
    return INCLUDE.findall(path.read_text(errors="replace"))


def sources(folder):
    for pattern in SOURCES:
        yield from sorted(folder.rglob(pattern))


def reaches_zmq(header, seen):
    """True when `header` (repository-relative) includes zmq, transitively."""
    if header in seen:
        return False
    seen.add(header)
    path = ROOT / header
    if not path.exists():
        return False
    for inc in includes(path):
        if inc.startswith("zmq"):
            return True
        if (ROOT / inc).exists() and reaches_zmq(inc, seen):
            return True
    return False


def check_forbidden(bad):
    for folder, banned in FORBIDDEN.items():
        for path in sources(ROOT / folder):
            for inc in includes(path):
                if inc.startswith(banned):
                    bad.append(f"{path.relative_to(ROOT)}: includes {inc}")


def check_socket_free(bad):
    parts = [p for p in sorted((ROOT / "actors").iterdir()) if p.is_dir()]
    if not parts:
        bad.append("actors/ has no subfolders: the socket-free logic has no home")
    files = [str(p.relative_to(ROOT)) for part in parts for p in sources(part)]
    for name in SOCKET_FREE_FILES:
        files += [f"{name}.{ext}" for ext in ("h", "cc") if (ROOT / f"{name}.{ext}").exists()]
    for rel in files:
        if reaches_zmq(rel, set()):
            bad.append(f"{rel}: reaches a ZeroMQ header (socket-free logic must not)")


def check_internal_messages(bad):
    for path in sources(ROOT):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in INTERNAL_OK or rel.parts[0].startswith("build"):
            continue
        if "actors/internal_messages.h" in includes(path):
            bad.append(f"{rel}: includes actors/internal_messages.h (clients use "
                       "actors/client_protocol.h)")


def main():
    bad = []
    check_forbidden(bad)
    check_socket_free(bad)
    check_internal_messages(bad)
    for line in bad:
        print(line)
    if bad:
        return 1
    print("layering: the dependency rule holds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
