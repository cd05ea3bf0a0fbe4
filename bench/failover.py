#!/usr/bin/env python3
"""Failover time of elected, replicating coordinators (docs/ha.md).

Starts a real 3-member etcd (tests/ha/etcd_cluster.sh), two coordinators
with --ha-etcd and --replication-bind, and one worker given both. Each try
waits until the standby is in sync (one still catching up may not take
over: docs/ha.md, "Sync and async"), submits a chain of shell tasks (each
appends its start time to a ledger, then sleeps --task-ms), waits until the
chain runs, kills the leader with SIGKILL, and measures the time from the
kill to the start of the first task that begins after it: the new leader's
first DISPATCH plus the worker's spawn (a chain has one task at a time; a
start within 0.5 s of the kill is the dead leader's last dispatch reaching
the worker late, and is skipped). The killed coordinator is then started
again on its journal and becomes the standby for the next try.

Profiles (--profiles, in that order; each on a fresh cluster):
  defaults  nothing set but ports and names: the default --heartbeat,
            --liveness, --ha-lease and --replication-timeout
  lease2    the defaults with --ha-lease 2s (etcd's floor: docs/PERFORMANCE.md)
  fast      --heartbeat 100ms --ha-lease 2s on coordinators and the worker
            (the figure docs/ha.md quoted before issue 36)

  bench/failover.py --bin build/cli --tries 10 [--profiles defaults,lease2,fast]

Prints one line per try, p50/max per profile, and JSON on the last line.
bench/harness.py runs it as its section 9 (not in --smoke).
"""

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

# The HA tests' helpers: a free loopback port, the etcd fixture's state file,
# polling with a deadline.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
from ha_cluster_test import free_port, read_state, wait_for  # noqa: E402


class Node:
    def __init__(self, args, err):
        self.args = args
        self.err = err
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=open(self.err, "a"))

    def stop(self, sig=signal.SIGTERM):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# Flags of each profile: (coordinators' and the worker's, coordinators' only).
PROFILES = {
    "defaults": ([], []),
    "lease2": ([], ["--ha-lease", "2s"]),
    "fast": (["--heartbeat", "100ms"], ["--ha-lease", "2s"]),
}


def coordinator(bin_dir, root, name, etcd, election, flags):
    ports = {k: free_port() for k in ("workers", "api", "rep", "http")}
    c = Node([os.path.join(bin_dir, "apollo11-node"), "start", "--role=coordinator",
              "--state-dir", os.path.join(root, name),
              "--bind", f"tcp://127.0.0.1:{ports['workers']}",
              "--api-bind", f"tcp://127.0.0.1:{ports['api']}",
              "--replication-bind", f"tcp://127.0.0.1:{ports['rep']}", "--insecure",
              "--http-bind", f"127.0.0.1:{ports['http']}",
              "--log-level", "info", "--ha-etcd", etcd, "--ha-name", name,
              "--ha-election", election, *flags],
             os.path.join(root, name + ".err"))
    c.name = name
    c.workers = f"tcp://127.0.0.1:{ports['workers']}"
    c.api = f"tcp://127.0.0.1:{ports['api']}"
    c.http = f"127.0.0.1:{ports['http']}"
    return c


def role(c):
    try:
        with urllib.request.urlopen(f"http://{c.http}/healthz", timeout=0.5) as r:
            return json.loads(r.read()).get("role")
    except (OSError, ValueError):
        return None


def standby_in_sync(leader):
    """The leader has a standby in sync (before that a kill leaves nobody who
    may lead until the leader is back: docs/ha.md)."""
    try:
        with urllib.request.urlopen(f"http://{leader.http}/api/cluster", timeout=0.5) as r:
            doc = json.loads(r.read())
    except (OSError, ValueError):
        return False
    return bool(doc.get("in_sync"))


def chain(path, ledger, n, task_ms):
    lines = ['version: "1.0"', "name: bench.failover", "pipeline:"]
    for i in range(n):
        lines += [f"  - id: c{i}", "    type: shell",
                  f'    command: "date +%s.%N >> {ledger}; sleep {task_ms / 1000:.3f}"']
        if i:
            lines.append(f"    depends_on: [c{i - 1}]")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def starts(ledger):
    try:
        with open(ledger) as f:
            return [float(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def one_try(bin_dir, root, cs, i, task_ms):
    leader = wait_for("one leader", lambda: next(
        (c for c in cs if role(c) == "leader" and all(role(o) == "standby"
                                                     for o in cs if o is not c)), None), 30)
    ledger = os.path.join(root, f"ledger{i}")
    path = os.path.join(root, f"chain{i}.yaml")
    chain(path, ledger, 2000, task_ms)
    cli = os.path.join(bin_dir, "apollo11")
    both = ",".join(c.api for c in cs)
    sub = subprocess.run([cli, "submit", path, "--coordinator", both],
                         capture_output=True, text=True, timeout=60)
    if sub.returncode != 0:
        raise SystemExit("submit failed: " + sub.stderr)
    run_id = sub.stdout.split()[0]
    wait_for("the chain to run", lambda: len(starts(ledger)) >= 5, 30)
    wait_for("the standby in sync", lambda: standby_in_sync(leader), 30)
    killed = time.time()
    leader.stop(signal.SIGKILL)
    # A start within 0.5 s of the kill is the dead leader's last DISPATCH
    # reaching the worker late (its lease cannot pass to another leader
    # that fast: etcd keeps it at least TTL - TTL/3 after its last renewal).
    after = wait_for("a task started by the new leader",
                     lambda: next((t for t in starts(ledger) if t > killed + 0.5), None), 180)
    took = after - killed
    subprocess.run([cli, "cancel", run_id, "--coordinator", both],
                   capture_output=True, text=True, timeout=60)
    leader.start()  # back as the standby, on its journal
    return took


def measure(bin_dir, etcd, root, profile, tries, task_ms, extra=(), log=print):
    """Kill -> first task of the new leader, `tries` times, on a fresh
    cluster of the profile (PROFILES) plus `extra` coordinator flags:
    {"profile", "tries", "p50_ms", "max_ms", "ms"}."""
    shared, own = PROFILES[profile]
    root = os.path.join(root, profile)
    os.makedirs(root)
    election = f"apollo11-bench/failover-{profile}-{os.getpid()}"
    cs = [coordinator(bin_dir, root, n, etcd, election, [*shared, *own, *extra])
          for n in ("c1", "c2")]
    nodes = list(cs)
    try:
        for c in cs:
            c.start()
        w = Node([os.path.join(bin_dir, "apollo11-node"), "start", "--role=worker",
                  "--connect", ",".join(c.workers for c in cs), "--worker-id", "w1",
                  "--slots", "2", "--http-bind", "off", *shared,
                  "--state-dir", os.path.join(root, "w1"), "--log-level", "warn"],
                 os.path.join(root, "w1.err"))
        nodes.append(w)
        w.start()
        times = []
        for i in range(tries):
            took = one_try(bin_dir, root, cs, i, task_ms)
            times.append(took)
            log(f"{profile} try {i + 1}: kill -9 of the leader to the first task it did not "
                f"dispatch: {took * 1000:.0f} ms")
    finally:
        for n in nodes:
            n.stop()
    return {"profile": profile, "flags": " ".join([*shared, *own, *extra]) or "(none)",
            "tries": tries, "p50_ms": round(statistics.median(times) * 1000),
            "max_ms": round(max(times) * 1000), "ms": [round(t * 1000) for t in times]}


class Etcd:
    """tests/ha/etcd_cluster.sh's three members, for the life of a `with`."""

    def __init__(self, root):
        here = os.path.dirname(os.path.abspath(__file__))
        self.script = os.path.join(here, "..", "tests", "ha", "etcd_cluster.sh")
        self.state = os.path.join(root, "etcd.env")

    def __enter__(self):
        subprocess.run(["bash", self.script, "start", self.state], check=True,
                       stdout=subprocess.DEVNULL)
        return read_state(self.state)["ETCD_ENDPOINTS"]

    def __exit__(self, *exc):
        subprocess.run(["bash", self.script, "stop", self.state])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/cli", help="dir of apollo11 and apollo11-node")
    ap.add_argument("--tries", type=int, default=10)
    ap.add_argument("--profiles", default="defaults,lease2,fast",
                    help="comma-separated: " + ", ".join(PROFILES))
    ap.add_argument("--task-ms", type=int, default=50)
    ap.add_argument("--replication-timeout",
                    help="--replication-timeout of the coordinators (default: theirs)")
    a = ap.parse_args()
    extra = ["--replication-timeout", a.replication_timeout] if a.replication_timeout else []
    root = tempfile.mkdtemp(prefix="apollo11-failover-")
    results = []
    with Etcd(root) as etcd:
        for profile in a.profiles.split(","):
            r = measure(a.bin, etcd, root, profile, a.tries, a.task_ms, extra,
                        log=lambda m: print(m, flush=True))
            results.append(r)
            print(f"failover {profile} ({r['flags']}; {a.tries} tries): p50 {r['p50_ms']} ms, "
                  f"max {r['max_ms']} ms", flush=True)
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
