#!/usr/bin/env python3
"""Coordinator memory under three attacks by a pipeline author (issue 42,
items 2, 3 and 10), each on a fresh coordinator with the default flags and
one worker, each process real:

  template  task a writes a 60,000-character JSON string to $APOLLO11_OUTPUT;
            task b repeats ${tasks.a.output} 4,000 times in its command (a
            72 KB pipeline asking for a 240 MB field). The expansion is
            bounded (1 MiB a field): b fails naming the limit.
  foreach   task a prints `seq 1 1000000` (6.9 MB); a foreach over its
            lines fails, naming the sizes, instead of fanning out over the
            64 KiB tail.
  overlap   a 2,000-task pipeline on a schedule every second with
            `overlap: allow`, its tasks sleeping: runs pile up to
            --max-schedule-overlap (100), later fires are skipped.
            --overlap-seconds (default 130) is how long it fires.

For each: the coordinator's VmRSS before, its VmHWM (peak) after, and what
the attack's run or schedule ended as. The documented ceilings are in
docs/PERFORMANCE.md ("Hostile pipelines"); a peak over one exits 1.

  bench/hostile_rss.py --bin build/cli [--attacks template,foreach,overlap]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ha"))
from free_ports import free_port  # noqa: E402

# Peak coordinator RSS allowed per attack, MB (docs/PERFORMANCE.md).
CEILING_MB = {"template": 64, "foreach": 64, "overlap": 256}


def status_kb(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Cluster:
    def __init__(self, bin_dir, root):
        self.bin_dir, self.root = bin_dir, root
        self.workers = f"tcp://127.0.0.1:{free_port()}"
        self.api = f"tcp://127.0.0.1:{free_port()}"
        node = os.path.join(bin_dir, "apollo11-node")
        self.logs = [open(os.path.join(root, n + ".log"), "w") for n in ("coord", "worker")]
        self.coord = subprocess.Popen(
            [node, "start", "--role=coordinator", "--state-dir", os.path.join(root, "c"),
             "--bind", self.workers, "--api-bind", self.api, "--http-bind", "127.0.0.1:0"],
            stdout=subprocess.DEVNULL, stderr=self.logs[0])
        self.worker = subprocess.Popen(
            [node, "start", "--role=worker", "--state-dir", os.path.join(root, "w"),
             "--connect", self.workers, "--worker-id", "w1", "--slots", "4",
             "--http-bind", "off"],
            stdout=subprocess.DEVNULL, stderr=self.logs[1])
        time.sleep(1.0)

    def cli(self, *args, timeout=300):
        return subprocess.run([os.path.join(self.bin_dir, "apollo11"), *args, "--coordinator",
                               self.api], capture_output=True, text=True, timeout=timeout)

    def stop(self):
        for p in (self.worker, self.coord):
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in self.logs:
            log.close()


def run_and_wait(c, path):
    sub = c.cli("submit", path)
    if sub.returncode != 0:
        return {"error": sub.stderr.strip()}
    run_id = sub.stdout.split()[0]
    done = c.cli("status", run_id, "--wait", "--json")
    return json.loads(done.stdout) if done.stdout.strip() else {"error": done.stderr.strip()}


def attack_template(c, root):
    bomb = " ".join(["${tasks.a.output}"] * 4000)
    path = os.path.join(root, "template.yaml")
    with open(path, "w") as f:
        f.write('version: "1.0"\nname: bench.template\npipeline:\n'
                '  - id: a\n    type: shell\n'
                '    command: "printf \'\\"%060000d\\"\' 0 > \\"$APOLLO11_OUTPUT\\""\n'
                '  - id: b\n    type: shell\n    depends_on: [a]\n'
                f'    command: "echo {bomb}"\n')
    doc = run_and_wait(c, path)
    b = doc.get("tasks", {}).get("b", {})
    return f"b {b.get('state')}: {b.get('error', doc.get('error', ''))[:120]}"


def attack_foreach(c, root):
    path = os.path.join(root, "foreach.yaml")
    with open(path, "w") as f:
        f.write('version: "1.0"\nname: bench.foreach\npipeline:\n'
                '  - id: a\n    type: shell\n    command: "seq 1 1000000"\n'
                '  - id: each\n    type: shell\n    depends_on: [a]\n    foreach: a\n'
                '    command: "echo ${item}"\n')
    doc = run_and_wait(c, path)
    each = doc.get("tasks", {}).get("each", {})
    instances = sum(1 for k in doc.get("tasks", {}) if k.startswith("each["))
    return (f"each {each.get('state')} with {instances} instances: "
            f"{each.get('error', doc.get('error', ''))[:120]}")


def attack_overlap(c, root, seconds):
    path = os.path.join(root, "overlap.yaml")
    with open(path, "w") as f:
        f.write('version: "1.0"\nname: bench.overlap\nschedule: "* * * * * *"\n'
                'overlap: allow\npipeline:\n')
        for i in range(2000):
            f.write(f'  - id: t{i}\n    type: shell\n    command: "sleep 600"\n')
    add = c.cli("pipelines", "add", path)
    if add.returncode != 0:
        return "pipelines add failed: " + add.stderr.strip()[:200]
    time.sleep(seconds)
    shown = c.cli("pipelines", "show", "bench.overlap", "--json")
    fires = []
    try:
        fires = json.loads(shown.stdout).get("fires", [])
    except ValueError:
        pass
    skipped = [f for f in fires if f.get("state") == "skipped"]
    started = [f for f in fires if f.get("state") == "started"]
    reason = skipped[0].get("reason", "") if skipped else ""
    return (f"{len(started)} fires started, {len(skipped)} skipped of the last {len(fires)} "
            f"listed: {reason[:100]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default="build/cli")
    ap.add_argument("--attacks", default="template,foreach,overlap")
    ap.add_argument("--overlap-seconds", type=int, default=130)
    args = ap.parse_args()
    results, failed = {}, False
    for attack in args.attacks.split(","):
        root = tempfile.mkdtemp(prefix=f"apollo11-hostile-{attack}-")
        c = Cluster(args.bin, root)
        try:
            before = status_kb(c.coord.pid, "VmRSS")
            if attack == "template":
                outcome = attack_template(c, root)
            elif attack == "foreach":
                outcome = attack_foreach(c, root)
            else:
                outcome = attack_overlap(c, root, args.overlap_seconds)
            peak = status_kb(c.coord.pid, "VmHWM")
        finally:
            c.stop()
            shutil.rmtree(root, ignore_errors=True)
        over = peak / 1024 > CEILING_MB[attack]
        failed |= over
        results[attack] = {"rss_before_mb": round(before / 1024, 1),
                           "peak_mb": round(peak / 1024, 1),
                           "ceiling_mb": CEILING_MB[attack], "outcome": outcome}
        print(f"{attack:9s} coordinator RSS {before / 1024:7.1f} MB before, peak "
              f"{peak / 1024:7.1f} MB (ceiling {CEILING_MB[attack]} MB){' OVER' if over else ''}"
              f"; {outcome}")
    print(json.dumps(results))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
