#!/usr/bin/env python3
"""Times a coordinator restart on an existing state dir: starts
`apollo11-node start --role=coordinator`, waits for its JSON listening line
(it prints it once recovery is done and it serves), kills it with SIGKILL,
N times. Seed the state dir first with
`apollo11_journal_tool seed STATE_DIR 1000000 10000`.
bench/harness.py (row 6) calls time_restarts() below.

usage: time_recovery.py APOLLO11_NODE STATE_DIR [N]
"""
import json
import os
import select
import signal
import subprocess
import sys
import time


def time_restart(node, state, timeout=60.0):
    """One start + kill -9. Returns (serving_ms, listening-line dict)."""
    t0 = time.monotonic()
    p = subprocess.Popen([node, "start", "--role", "coordinator", "--state-dir", state,
                          "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                          "--http-bind", "off", "--log-level", "warn"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([p.stdout], [], [], timeout)
        if not ready:
            raise RuntimeError("coordinator not serving after %.0f s" % timeout)
        line = p.stdout.readline()
        ms = (time.monotonic() - t0) * 1000
    finally:
        os.kill(p.pid, signal.SIGKILL)
        _, err = p.communicate()
    if not line.strip():
        raise RuntimeError("coordinator exited without serving: %s" % (err or "").strip()[:200])
    return ms, json.loads(line)


def time_restarts(node, state, n):
    return [time_restart(node, state) for _ in range(n)]


def main():
    node, state = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    serving = []
    for ms, doc in time_restarts(node, state, n):
        serving.append(ms)
        print("serving after %.1f ms (recovery %.1f ms, %d runs, %d RUNNING to claim)" %
              (ms, doc["recovery_ms"], doc["recovered_runs"], doc["recovered_running"]))
    serving.sort()
    print("median serving ms %.1f" % serving[len(serving) // 2])


if __name__ == "__main__":
    main()
