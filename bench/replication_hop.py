#!/usr/bin/env python3
"""Hop latency cost of journal replication (docs/ha.md, "Replication").

Runs a chain of N noop tasks (c0 -> c1 -> ...) on a coordinator with a
worker in the same process (--role all, 1 slot), R times in each mode:

  single  no replication
  async   --replication-bind, a standby following, --replication async
  sync    --replication-bind, a standby following, --replication sync

and prints the per-hop latency (worker end of c(i-1) -> worker start of c(i),
from the run summary) p50/p99 per mode, as JSON on the last line.

  bench/replication_hop.py --bin build/cli --tasks 300 --runs 3
"""

import argparse
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile


def chain_yaml(n):
    lines = ['version: "1.0"', "name: bench.chain", "pipeline:"]
    for i in range(n):
        lines.append("  - id: c%d" % i)
        lines.append("    type: noop")
        if i:
            lines.append("    depends_on: [c%d]" % (i - 1))
    return "\n".join(lines) + "\n"


def start(node, args, err):
    p = subprocess.Popen([node, "start", "--log-level", "warn", "--http-bind", "off"] + args,
                         stdout=subprocess.PIPE, stderr=open(err, "w"), text=True)
    ready, _, _ = select.select([p.stdout], [], [], 30.0)
    line = p.stdout.readline() if ready else ""
    if not line.strip():
        raise RuntimeError("node did not start: " + open(err).read()[:400])
    return p, json.loads(line)


def stop(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def hops(summary):
    tasks = summary.get("tasks") or {}
    out, i = [], 1
    while True:
        up, down = tasks.get("c%d" % (i - 1)), tasks.get("c%d" % i)
        if not up or not down or "finished_at_us" not in up or "started_at_us" not in down:
            return out
        out.append(down["started_at_us"] - up["finished_at_us"])
        i += 1


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))] if s else float("nan")


def run_mode(a, mode, pipeline):
    work = tempfile.mkdtemp(prefix="rephop-")
    procs = []
    try:
        args = ["--role", "all", "--slots", "1", "--state-dir", os.path.join(work, "leader"),
                "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0"]
        if mode != "single":
            args += ["--replication-bind", "tcp://127.0.0.1:0", "--insecure", "--replication-name", "c1",
                     "--replication", mode]
        leader, doc = start(a.node, args, os.path.join(work, "leader.err"))
        procs.append(leader)
        if mode != "single":
            standby, _ = start(a.node, ["--role", "coordinator", "--state-dir",
                                        os.path.join(work, "standby"), "--replication-follow",
                                        doc["replication"], "--insecure",
                                        "--replication-name", "s1"],
                               os.path.join(work, "standby.err"))
            procs.append(standby)
        out = []
        for _ in range(a.runs):
            p = subprocess.run([a.cli, "submit", pipeline, "--wait", "--json", "--coordinator",
                                doc["api"]], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, timeout=600)
            summary = json.loads(p.stdout[p.stdout.index("{"):])
            if summary.get("state") != "SUCCESS":
                raise RuntimeError("run did not succeed: " + p.stderr[:400])
            out.extend(hops(summary))
        return out
    finally:
        stop(procs)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/cli")
    ap.add_argument("--tasks", type=int, default=300)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", default="single,async,sync")
    a = ap.parse_args()
    a.node = os.path.join(a.bin, "apollo11-node")
    a.cli = os.path.join(a.bin, "apollo11")
    work = tempfile.mkdtemp(prefix="rephop-p-")
    pipeline = os.path.join(work, "chain.yaml")
    with open(pipeline, "w") as f:
        f.write(chain_yaml(a.tasks))
    result = {}
    for mode in a.modes.split(","):
        h = run_mode(a, mode, pipeline)
        result[mode] = {"hops": len(h), "p50_us": pct(h, 50), "p99_us": pct(h, 99),
                        "max_us": max(h) if h else None}
        print("%-6s %5d hops  p50 %7.0f us  p99 %7.0f us  max %7.0f us" % (
            mode, len(h), result[mode]["p50_us"], result[mode]["p99_us"],
            result[mode]["max_us"] or 0), file=sys.stderr)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
