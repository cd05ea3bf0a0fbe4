#!/usr/bin/env python3
"""Times a coordinator restart on an existing state dir: starts
`apollo11-node start --role=coordinator`, waits for its JSON listening line
(it prints it once recovery is done and it serves), kills it with SIGKILL,
N times. Seed the state dir first with
`apollo11_journal_tool seed STATE_DIR 1000000 10000`.

usage: time_recovery.py APOLLO11_NODE STATE_DIR [N]
"""
import json
import os
import signal
import subprocess
import sys
import time


def main():
    node, state = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    serving = []
    for _ in range(n):
        t0 = time.monotonic()
        p = subprocess.Popen([node, "start", "--role", "coordinator", "--state-dir", state,
                              "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                              "--log-level", "warn"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = p.stdout.readline()
        ms = (time.monotonic() - t0) * 1000
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        doc = json.loads(line)
        serving.append(ms)
        print("serving after %.1f ms (recovery %.1f ms, %d runs, %d RUNNING to claim)" %
              (ms, doc["recovery_ms"], doc["recovered_runs"], doc["recovered_running"]))
    serving.sort()
    print("median serving ms %.1f" % serving[len(serving) // 2])


if __name__ == "__main__":
    main()
