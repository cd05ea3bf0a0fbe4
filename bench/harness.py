#!/usr/bin/env python3
"""Apollo-11 end-to-end benchmark harness (DESIGN §10, issue 7).

One invocation runs every contender on the same machine, alternating them
round by round (so a load spike hits all of them, not one), and prints one
table of medians, spreads and ratios against the peers; the table is also
written to OUT/results.md (and raw figures to OUT/results.json).

  harness.py --apollo11 build-bench/cli/apollo11            # full: R=5
  harness.py --apollo11 ... --quick                         # R=3, smaller sizes
  harness.py --apollo11 ... --smoke --out DIR               # tiny, 1 run (CTest)

Sections: (1) 5k-task depth-10 noop DAG, embedded (`apollo11 run`) and on a
cluster (a coordinator + 2 worker processes over tcp loopback, driven with
`apollo11 submit --wait`); (2) the same DAG with shell `true` tasks:
Apollo-11 vs ninja -j S vs Dask (S workers); (3) noop DAG: Apollo-11 vs
Dask; (4) scaling 1k/10k/100k(/1M) noop, embedded and cluster: wall, tasks/s,
peak RSS; (5) hop latency on a 1,000-task chain, from the execution records
(worker end of a task -> worker start of the next); (6) coordinator restart
after kill -9 on a seeded state dir of 1M transitions; (7) idle footprint of
apollo11-node --role=all; (8) write amplification of the embedded noop DAG:
device bytes, write_bytes and durable syncs per task (write_amp.py); (9)
HA failover: kill -9 of the leader to the new leader's first task, with the
defaults, with --ha-lease 2s and with --heartbeat 100ms (failover.py, on a
3-member etcd of its own; not in --smoke).

Only the standard library: ninja, Dask (dask_run.py under a Python that can
import `distributed`), /usr/bin/time and apollo11 are run as commands.
"""

import argparse
import json
import os
import platform
import shutil
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dag  # noqa: E402
import time_recovery  # noqa: E402
import write_amp  # noqa: E402

# Slots per worker in the 4-worker throughput row (see run_dag_section).
THROUGHPUT_SLOTS = 16

TARGETS = {
    "throughput": 50000.0,   # noop tasks/s, coordinator + workers, journaled
    "hop_p50_us": 200.0,
    "hop_p99_us": 2000.0,
    "vs_ninja": 1.2,         # Apollo-11 wall / ninja wall, at most
    "dask_noop": 10.0,       # Dask wall / Apollo-11 wall, at least
    "dask_shell": 2.5,
    "rss_100k_mb": 100.0,
    "recovery_s": 1.0,
    "growth": 11.0,          # time(10x tasks) / time(x), at most
    "idle_cpu_pct": 1.0,
}


# ---------------------------------------------------------------- helpers

def log(msg):
    print("[harness %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def mem_available_mb():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def timed(cmd, cwd=None, timeout=None):
    """Runs cmd under /usr/bin/time (if present) for peak RSS.

    Returns (rc, wall_s, peak_rss_kb or None, stdout, stderr)."""
    rss_file = None
    full = list(cmd)
    if os.access("/usr/bin/time", os.X_OK):
        fd, rss_file = tempfile.mkstemp(prefix="a11-rss-")
        os.close(fd)
        full = ["/usr/bin/time", "-f", "%M", "-o", rss_file] + full
    t0 = time.perf_counter()
    # Own process group, so a stalled command is killed with its children
    # (killing /usr/bin/time alone would leave apollo11 running).
    p = subprocess.Popen(full, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        rc, err = -1, "timed out (stalled?) after %s s; killed. %s" % (timeout, first_line(err))
    wall = time.perf_counter() - t0
    rss = None
    if rss_file:
        try:
            with open(rss_file) as f:
                lines = [l for l in f.read().split() if l.isdigit()]
                rss = int(lines[-1]) if lines else None
        finally:
            os.unlink(rss_file)
    return rc, wall, rss, out, err


def first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()[:160]
    return ""


class Series:
    """Repeated measurements of one figure (seconds, µs, ...)."""

    def __init__(self):
        self.values = []
        self.errors = []
        self.extra = {}

    def add(self, v):
        self.values.append(v)

    def fail(self, why):
        self.errors.append(why)

    @property
    def ok(self):
        return bool(self.values)

    def median(self):
        return statistics.median(self.values) if self.values else None

    def spread(self):
        """(min, max) or None."""
        return (min(self.values), max(self.values)) if self.values else None

    def to_json(self):
        return {"values": self.values, "median": self.median(), "errors": self.errors,
                **self.extra}


def fmt_s(series):
    if not series.ok:
        return "failed: " + (series.errors[0] if series.errors else "no runs")
    lo, hi = series.spread()
    if len(series.values) == 1:
        return "%.3f s" % series.median()
    return "%.3f s (%.3f–%.3f, n=%d)" % (series.median(), lo, hi, len(series.values))


def ratio(a, b):
    if a is None or b is None or b <= 0:
        return None
    return a / b


def verdict(ok):
    return "met" if ok else "**missed**"


# ---------------------------------------------------------------- contenders

class Bench:
    def __init__(self, args):
        self.a = args
        self.work = args.work
        self.dask_python = None
        self.journal_tool = None
        self.cluster_ok = False
        self.notes = []

    def prefetch_args(self):
        """--prefetch N for every apollo11 run and worker, or nothing (the default)."""
        return [] if self.a.prefetch is None else ["--prefetch", str(self.a.prefetch)]

    # -- Apollo-11 embedded
    def apollo_run(self, pipeline, slots, keep_state=False, state_parent=None):
        """Returns (wall_s, rss_kb, summary dict, state_dir or None) or raises RuntimeError."""
        state = tempfile.mkdtemp(prefix="state-", dir=state_parent or self.work)
        cmd = [self.a.apollo11, "run", pipeline, "--state-dir", state, "--json",
               "--slots", str(slots)] + self.prefetch_args()
        rc, wall, rss, out, err = timed(cmd, timeout=self.a.timeout)
        summary = {}
        try:
            summary = json.loads(out) if out.strip() else {}
        except ValueError:
            pass
        if rc != 0 or summary.get("state") != "SUCCESS":
            shutil.rmtree(state, ignore_errors=True)
            raise RuntimeError("apollo11 run exit %d: %s" % (rc, first_line(err) or first_line(out)))
        if not keep_state:
            shutil.rmtree(state, ignore_errors=True)
            state = None
        return wall, rss, summary, state

    # -- ninja
    def ninja_run(self, graph_dir, slots):
        cmd = ["ninja", "-C", graph_dir, "-j", str(slots), "--quiet"]
        rc, wall, rss, out, err = timed(cmd, timeout=self.a.timeout)
        if rc != 0:
            raise RuntimeError("ninja exit %d: %s" % (rc, first_line(err) or first_line(out)))
        return wall, rss

    # -- Dask
    def find_dask(self):
        for py in [sys.executable, "/usr/bin/python3"]:
            if py and os.access(py, os.X_OK):
                r = subprocess.run([py, "-c", "import distributed"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
                if r.returncode == 0:
                    return py
        return None

    def dask_run(self, graph_dir, slots):
        cmd = [self.dask_python, os.path.join(HERE, "dask_run.py"),
               os.path.join(graph_dir, "graph.json"), "--workers", str(slots), "--warmup"]
        rc, _, _, out, err = timed(cmd, timeout=self.a.timeout)
        lines = [l for l in out.splitlines() if l.startswith("{")]
        doc = json.loads(lines[-1]) if lines else {}
        if rc != 0 or not doc.get("ok"):
            raise RuntimeError("dask exit %d: %s" % (rc, doc.get("error") or first_line(err)))
        return doc["wall_s"], doc["startup_s"]

    # -- cluster
    def cluster_run(self, pipeline, slots, keep_state=False, workers=2, slots_each=None):
        """Fresh coordinator + `workers` workers (default 2 with slots/2 each, at
        least 1), one timed submit. Returns (wall_s, (coordinator, worker) peak
        RSS KB, reply, dir to remove or None)."""
        c = Cluster(self, workers, slots_each or max(1, slots // 2))
        try:
            c.start()
            wall, doc = c.submit(pipeline)
            rss = c.peak_rss_kb()
        finally:
            c.stop(keep_dir=keep_state)
        return wall, rss, doc, (c.dir if keep_state else None)

    # -- per-hop latency from the run summary
    @staticmethod
    def hops(summary):
        """Per-hop latencies (µs) of a chain run c0 -> c1 -> ...: the worker's start
        of c(i) minus the worker's end of c(i-1), both from the run summary's
        `started_at_us`/`finished_at_us` (the process start and the reap, on the
        worker's clock). A hop includes the RESULT to the coordinator, its
        journal commit, promotion, placement, the READY->RUNNING commit, the
        DISPATCH and the start on the worker."""
        tasks = summary.get("tasks") or {}
        out = []
        i = 1
        while True:
            up, down = tasks.get("c%d" % (i - 1)), tasks.get("c%d" % i)
            if not up or not down or "finished_at_us" not in up or "started_at_us" not in down:
                break
            out.append(down["started_at_us"] - up["finished_at_us"])
            i += 1
        return out

    # -- apollo11-node
    def node_available(self, role):
        """(True, "") when `apollo11-node start --role=ROLE` keeps running for 1 s,
        else (False, why)."""
        node = self.a.apollo11_node
        if not node or not os.access(node, os.X_OK):
            return False, "apollo11-node not found"
        state = tempfile.mkdtemp(prefix="probe-", dir=self.work)
        try:
            # Ephemeral ports, so a node already running here cannot fail the probe.
            p = subprocess.Popen([node, "start", "--role=" + role, "--state-dir", state,
                                  "--bind", "tcp://127.0.0.1:0", "--api-bind",
                                  "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0"], cwd=state,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                _, err = p.communicate(timeout=1.0)
                return False, first_line(err) or ("exit %d" % p.returncode)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGTERM)
                try:
                    p.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.communicate()
                return True, ""
        finally:
            shutil.rmtree(state, ignore_errors=True)



class Cluster:
    """A coordinator and WORKERS worker processes over tcp loopback, on a fresh
    state dir: what `apollo11-node start --role=coordinator|worker` runs on
    real machines. Start-up is not timed; submit() times one
    `apollo11 submit --wait --json`, the way a user drives a cluster."""

    def __init__(self, b, workers, slots_each):
        self.b = b
        self.workers = workers
        self.slots_each = slots_each
        self.dir = None
        self.coordinator = None
        self.worker_procs = []
        self.api = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        node = self.b.a.apollo11_node
        self.dir = tempfile.mkdtemp(prefix="cluster-", dir=self.b.work)
        self.coordinator = subprocess.Popen(
            [node, "start", "--role=coordinator", "--state-dir", os.path.join(self.dir, "c"),
             "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
             "--http-bind", "127.0.0.1:0", "--log-level", "warn"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "c.err"), "w"),
            text=True)
        ready, _, _ = select.select([self.coordinator.stdout], [], [], 30.0)
        line = self.coordinator.stdout.readline() if ready else ""
        if not line.strip():
            raise RuntimeError("coordinator did not serve: " + self.stderr_of("c"))
        doc = json.loads(line)
        self.api = doc["api"]
        for i in range(self.workers):
            self.worker_procs.append(subprocess.Popen(
                [node, "start", "--role=worker", "--connect", doc["workers"],
                 "--slots", str(self.slots_each), "--worker-id", "bench-w%d" % i,
                 "--state-dir", os.path.join(self.dir, "w%d" % i), "--log-level", "warn"]
                + self.b.prefetch_args(),
                stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(self.dir, "w%d.err" % i), "w")))
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            p = subprocess.run([self.b.a.apollo11, "workers", "--json", "--coordinator",
                                self.api], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True)
            try:
                if p.returncode == 0 and len(json.loads(p.stdout)) == self.workers:
                    return
            except ValueError:
                pass
            time.sleep(0.05)
        raise RuntimeError("%d workers did not join within 30 s" % self.workers)

    def stderr_of(self, name):
        try:
            with open(os.path.join(self.dir, name + ".err")) as f:
                return first_line(f.read())
        except OSError:
            return ""

    def submit(self, pipeline):
        """Returns (wall_s, reply dict); raises RuntimeError unless SUCCESS."""
        rc, wall, _, out, err = timed([self.b.a.apollo11, "submit", pipeline, "--wait",
                                       "--json", "--coordinator", self.api],
                                      timeout=self.b.a.timeout)
        doc = {}
        if "{" in out:
            try:
                doc = json.loads(out[out.index("{"):])
            except ValueError:
                pass
        if rc != 0 or doc.get("state") != "SUCCESS":
            raise RuntimeError("apollo11 submit exit %d: %s" % (
                rc, first_line(err) or first_line(out) or self.stderr_of("c")))
        return wall, doc

    def peak_rss_kb(self):
        """(coordinator VmHWM, largest worker VmHWM) in KB, read before stop()."""
        def hwm(pid):
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            return int(line.split()[1])
            except OSError:
                pass
            return None
        workers = [hwm(w.pid) for w in self.worker_procs]
        return hwm(self.coordinator.pid), max([w for w in workers if w] or [0]) or None

    @property
    def state_dir(self):
        return os.path.join(self.dir, "c")

    def stop(self, keep_dir=False):
        for proc in self.worker_procs + ([self.coordinator] if self.coordinator else []):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.worker_procs + ([self.coordinator] if self.coordinator else []):
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.coordinator and self.coordinator.stdout:
            self.coordinator.stdout.close()
        self.worker_procs, self.coordinator = [], None
        if not keep_dir and self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)


# ---------------------------------------------------------------- sections

def rotate(lst, k):
    k %= len(lst)
    return lst[k:] + lst[:k]


def run_dag_section(b, R, n, depth, slots, with_dask, with_ninja):
    """Sections 1-3: one 5k (or smaller) DAG, every contender, alternated."""
    base = os.path.join(b.work, "dag")
    gen_dag.generate(base + "-noop", n, depth, "noop", seed=1)
    gen_dag.generate(base + "-shell", n, depth, "shell", seed=1)
    res = {k: Series() for k in ["a_noop", "c_noop", "c4_noop", "a_shell", "ninja",
                                  "dask_noop", "dask_shell"]}
    rss = {k: [] for k in res}
    contenders = [
        ("a_noop", lambda: b.apollo_run(base + "-noop/pipeline.yaml", slots)),
        ("a_shell", lambda: b.apollo_run(base + "-shell/pipeline.yaml", slots)),
    ]
    if b.cluster_ok:
        def cluster_noop():
            wall, rss_kb, doc, _ = b.cluster_run(base + "-noop/pipeline.yaml", slots)
            res["c_noop"].extra.setdefault("run_s", []).append(doc.get("duration_ms", 0) / 1e3)
            return wall, rss_kb[0]
        contenders.insert(1, ("c_noop", cluster_noop))

        # DESIGN §10's throughput row: 4 worker processes. A noop costs the
        # worker nothing, so its slots only bound how many are in flight per
        # commit; THROUGHPUT_SLOTS each lets the scheduler, not the slot
        # count, set the pace.
        def cluster4_noop():
            wall, rss_kb, doc, _ = b.cluster_run(base + "-noop/pipeline.yaml", slots, workers=4,
                                                 slots_each=THROUGHPUT_SLOTS)
            res["c4_noop"].extra.setdefault("run_s", []).append(doc.get("duration_ms", 0) / 1e3)
            return wall, rss_kb[0]
        contenders.insert(2, ("c4_noop", cluster4_noop))
    if with_ninja:
        contenders.append(("ninja", lambda: b.ninja_run(base + "-shell", slots)))
    if with_dask:
        contenders.append(("dask_noop", lambda: b.dask_run(base + "-noop", slots)))
        contenders.append(("dask_shell", lambda: b.dask_run(base + "-shell", slots)))
    startup = []
    for r in range(R):
        for name, fn in rotate(contenders, r):
            try:
                out = fn()
            except (RuntimeError, ValueError, OSError) as e:
                res[name].fail(str(e))
                log("%s round %d failed: %s" % (name, r + 1, e))
                continue
            res[name].add(out[0])
            if name.startswith("dask"):
                startup.append(out[1])
            elif out[1] is not None:
                rss[name].append(out[1])
            log("%-10s round %d/%d: %.3f s" % (name, r + 1, R, out[0]))
    for k, v in rss.items():
        if v:
            res[k].extra["peak_rss_kb_max"] = max(v)
    res["dask_startup"] = Series()
    for s in startup:
        res["dask_startup"].add(s)
    return res


def run_scaling(b, R, sizes, depth, slots, try_1m):
    """Embedded and (if available) cluster runs of growing noop DAGs, alternated.
    Returns ({(mode, n): Series}, why 1M was skipped or None)."""
    modes = ["embedded"] + (["cluster"] if b.cluster_ok else [])
    res = {}

    def one(mode, n):
        pipeline = os.path.join(b.work, "scale-%d" % n, "pipeline.yaml")
        s = res[(mode, n)]
        try:
            if mode == "embedded":
                wall, rss, summary, _ = b.apollo_run(pipeline, slots)
            else:
                wall, (rss, wrss), summary, _ = b.cluster_run(pipeline, slots)
                if wrss:
                    s.extra["worker_rss_kb"].append(wrss)
        except RuntimeError as e:
            s.fail(str(e))
            log("scaling %s %d failed: %s" % (mode, n, e))
            return
        s.add(wall)
        if rss:
            s.extra["rss_kb"].append(rss)
        if "duration_ms" in summary:
            s.extra["run_s"].append(summary["duration_ms"] / 1000.0)
        log("scale %-8s %-7d: %.3f s, %s KB" % (mode, n, wall, rss))

    def prepare(n):
        gen_dag.generate(os.path.join(b.work, "scale-%d" % n), n, depth, "noop", seed=2)
        for mode in modes:
            res[(mode, n)] = Series()
            res[(mode, n)].extra.update(rss_kb=[], run_s=[], worker_rss_kb=[])

    for n in sizes:
        prepare(n)
    jobs = [(mode, n) for n in sizes for mode in modes]
    for r in range(R):
        for mode, n in rotate(jobs, r):
            one(mode, n)
    skipped_1m = None
    if try_1m:
        big = max(sizes)
        s = res[("embedded", big)]
        if s.ok and s.extra["rss_kb"]:
            need_mb = max(s.extra["rss_kb"]) / 1024.0 * (1_000_000 / big) * 1.3
            need_s = s.median() * (1_000_000 / big) * 1.3
            avail = mem_available_mb()
            if need_mb > 0.6 * avail:
                skipped_1m = "skipped: needs ~%.0f MB by extrapolation, %.0f MB available" % (
                    need_mb, avail)
            elif need_s > b.a.timeout:
                skipped_1m = "skipped: would take ~%.0f s by extrapolation (> --timeout %d)" % (
                    need_s, b.a.timeout)
            else:
                n = 1_000_000
                prepare(n)
                for mode in modes:  # one run each: minutes, not seconds
                    one(mode, n)
                shutil.rmtree(os.path.join(b.work, "scale-%d" % n), ignore_errors=True)
        else:
            skipped_1m = "skipped: the largest smaller size did not run"
    return res, skipped_1m


def disk_sync_us(directory, n=200):
    """Median and p99 time (µs) of a 4 KiB write + fdatasync in `directory`:
    what one durable journal commit costs at least on this disk."""
    path = os.path.join(directory, "sync-probe")
    times = []
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        block = b"\0" * 4096
        for i in range(n):
            t0 = time.perf_counter()
            os.pwrite(fd, block, (i % 64) * 4096)
            os.fdatasync(fd)
            times.append((time.perf_counter() - t0) * 1e6)
    finally:
        os.close(fd)
        os.unlink(path)
    return percentile(times, 50), percentile(times, 99)


def run_latency(b, R, n, slots):
    """Chain of n noop tasks, embedded and on the cluster, R runs each; plus
    embedded with the state dir on tmpfs, where fsync costs nothing, to
    separate the software path from the disk. Returns
    {mode: (hops µs pooled over the runs, errors)}."""
    d = os.path.join(b.work, "chain")
    gen_dag.generate(d, n, kind="noop", chain_mode=True)
    pipeline = os.path.join(d, "pipeline.yaml")
    modes = ["embedded"] + (["cluster"] if b.cluster_ok else [])
    tmpfs = None
    if b.a.tmpfs and os.path.isdir(b.a.tmpfs) and os.access(b.a.tmpfs, os.W_OK):
        tmpfs = tempfile.mkdtemp(prefix="a11-bench-", dir=b.a.tmpfs)
        modes.append("embedded, state on tmpfs")
    out = {m: ([], []) for m in modes}
    for r in range(R):
        for mode in rotate(modes, r):
            hops, errors = out[mode]
            try:
                if mode == "embedded":
                    _, _, summary, _ = b.apollo_run(pipeline, slots)
                elif mode == "cluster":
                    _, _, summary, _ = b.cluster_run(pipeline, slots)
                else:
                    _, _, summary, _ = b.apollo_run(pipeline, slots, state_parent=tmpfs)
                h = b.hops(summary)
                if len(h) != n - 1:
                    raise RuntimeError("found %d hops in the run summary, expected %d" % (
                        len(h), n - 1))
                hops.extend(h)
                log("chain %s round %d/%d: %d hops, p50 %.0f µs" % (
                    mode, r + 1, R, len(h), statistics.median(h)))
            except (RuntimeError, ValueError, KeyError) as e:
                errors.append(str(e))
                log("chain %s round %d failed: %s" % (mode, r + 1, e))
    if tmpfs:
        shutil.rmtree(tmpfs, ignore_errors=True)
    return out


def percentile(values, p):
    v = sorted(values)
    if not v:
        return None
    k = (len(v) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def run_recovery(b, R, transitions, unfinished):
    """Row 6: seed a state dir as a coordinator killed mid-run leaves it
    (journal_tool seed: `transitions` in all, one unfinished run of
    `unfinished` tasks, a tenth of them RUNNING), then R times: start the
    coordinator on it, time until it serves (its listening line comes after
    recovery), kill -9. Returns ({...}, None) or (None, why)."""
    if not b.journal_tool:
        return None, "apollo11_journal_tool not built (configure with -DAPOLLO11_BUILD_BENCH=ON)"
    if not b.cluster_ok:
        return None, "apollo11-node --role=coordinator not available"
    state = tempfile.mkdtemp(prefix="recovery-", dir=b.work)
    try:
        t0 = time.monotonic()
        p = subprocess.run([b.journal_tool, "seed", state, str(transitions), str(unfinished)],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=b.a.timeout)
        if p.returncode != 0:
            return None, "seed failed: " + first_line(p.stderr)
        seeded = json.loads(p.stdout.strip().splitlines()[-1])
        log("recovery: seeded %d transitions in %.1f s" % (seeded["transitions"],
                                                           time.monotonic() - t0))
        serving, recovery, claims = Series(), [], 0
        for r in range(R):
            try:
                ms, doc = time_recovery.time_restart(b.a.apollo11_node, state)
            except (RuntimeError, ValueError, OSError) as e:
                serving.fail(str(e))
                continue
            serving.add(ms)
            recovery.append(doc.get("recovery_ms", 0))
            claims = doc.get("recovered_running", 0)
            log("recovery round %d/%d: serving after %.0f ms" % (r + 1, R, ms))
        if not serving.ok:
            return None, "failed: " + serving.errors[0]
        return {"transitions": seeded["transitions"], "unfinished": unfinished,
                "running": claims, "serving_ms": serving.values,
                "serving_ms_median": serving.median(),
                "recovery_ms_median": statistics.median(recovery)}, None
    finally:
        shutil.rmtree(state, ignore_errors=True)


def run_idle(b, seconds):
    ok, why = b.node_available("all")
    if not ok:
        return None, "n/a (`apollo11-node start --role=all` did not start: %s)" % why
    if seconds <= 0:
        return None, "skipped (window of 0 s)"
    state = tempfile.mkdtemp(prefix="idle-", dir=b.work)
    # The defaults (10 s heartbeat, metrics served) with ephemeral ports, so a
    # port in use elsewhere cannot fail the row.
    p = subprocess.Popen([b.a.apollo11_node, "start", "--role=all", "--http-bind",
                          "127.0.0.1:0", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                          "tcp://127.0.0.1:0"], cwd=state,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2.0)  # start-up is not idle
        tick = os.sysconf("SC_CLK_TCK")

        def cpu():
            with open("/proc/%d/stat" % p.pid) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / tick

        c0, t0 = cpu(), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu(), time.monotonic()
        rss_kb = 0
        with open("/proc/%d/status" % p.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
        return {"cpu_pct": 100.0 * (c1 - c0) / (t1 - t0), "rss_kb": rss_kb,
                "seconds": seconds}, None
    except (OSError, ValueError) as e:
        return None, "failed: %s" % e
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree(state, ignore_errors=True)


# Section 9's targets (issue 36): kill -9 of the leader to the new leader's
# first dispatch, at most the lease TTL + 0.5 s.
FAILOVER_TARGET_MS = {"defaults": 5500, "lease2": 2500}


def run_failover(b, tries):
    """Section 9 (issue 36): failover time with the defaults, with
    --ha-lease 2s and with --heartbeat 100ms (bench/failover.py), on a 3-member
    etcd of its own. ([results], None) or ([], why not)."""
    if shutil.which("etcd") is None:
        return [], "etcd not installed (apt-get install etcd-server)"
    if not b.cluster_ok:
        return [], "cluster roles not available"
    import failover  # noqa: E402  (it finds tests/ha/ beside bench/)
    root = tempfile.mkdtemp(prefix="failover-", dir=b.work)
    out = []
    try:
        with failover.Etcd(root) as etcd:
            for profile in failover.PROFILES:
                out.append(failover.measure(os.path.dirname(b.a.apollo11_node), etcd, root,
                                            profile, tries, 50, log=log))
    except (AssertionError, OSError, RuntimeError, subprocess.SubprocessError) as e:
        log("failover failed: %s" % e)
        return out, str(e)
    return out, None


def failover_rows(failover):
    results, why = failover
    if not results:
        return [("9", "HA failover (kill -9 of the leader)", "not measured: %s" % why,
                 "", "", "", "n/a")]
    rows = []
    for r in results:
        target = FAILOVER_TARGET_MS.get(r["profile"])
        rows.append(("9", "HA failover, kill -9 of the leader -> first task the new leader "
                          "dispatched, %s: %s" % (r["profile"], r["flags"]),
                     "p50 %d ms, max %d ms (n=%d)" % (r["p50_ms"], r["max_ms"], r["tries"]),
                     "", "", "<= %.1f s" % (target / 1000.0) if target else "",
                     verdict(r["max_ms"] <= target) if target else ""))
    return rows


def run_write_amp(b, cfg):
    """Section 8 (issue 18): bytes and syncs per task of the embedded noop
    DAG of section 1 (see write_amp.py)."""
    d = os.path.join(b.work, "wa-noop")
    gen_dag.generate(d, cfg["dag_tasks"], depth=cfg["depth"], kind="noop", seed=1)
    try:
        return write_amp.measure(b.a.apollo11, b.work, os.path.join(d, "pipeline.yaml"),
                                 cfg["dag_tasks"], cfg["slots"], min(cfg["runs"], 3),
                                 b.a.timeout, b.prefetch_args())
    except (RuntimeError, OSError, subprocess.SubprocessError) as e:
        log("write amplification failed: %s" % e)
        return {"error": str(e)}


# ---------------------------------------------------------------- report

def build_table(b, cfg, dag, scaling, skipped_1m, lat, recovery, idle):
    rows = []

    def row(sec, what, value, peer="", rat="", target="", ver=""):
        rows.append((sec, what, value, peer, rat, target, ver))

    n, S = cfg["dag_tasks"], cfg["slots"]
    a_noop, c_noop, a_shell = dag["a_noop"], dag["c_noop"], dag["a_shell"]
    # (1)
    tps = n / a_noop.median() if a_noop.ok else None
    run_s = a_noop.extra.get("run_s")
    row("1", "%d noop tasks, depth %d, embedded `apollo11 run --slots %d` (whole command)" % (
        n, cfg["depth"], S), fmt_s(a_noop) + (" = %.0f tasks/s" % tps if tps else ""), "", "",
        ">= 50,000 tasks/s", verdict(tps >= TARGETS["throughput"]) if tps else "n/a")
    if b.cluster_ok:
        tps = n / c_noop.median() if c_noop.ok else None
        run = c_noop.extra.get("run_s") or []
        run_tps = n / statistics.median(run) if run and statistics.median(run) > 0 else None
        value = fmt_s(c_noop) + (" = %.0f tasks/s" % tps if tps else "")
        if run_tps:
            value += "; run alone (journal start->end) %.3f s = %.0f tasks/s" % (
                statistics.median(run), run_tps)
        row("1", "same, `apollo11 submit --wait` to a coordinator + 2 worker processes "
            "(%d slot%s each) over tcp loopback" % (max(1, S // 2), "" if S // 2 <= 1 else "s"),
            value, "", "", ">= 50,000 tasks/s",
            verdict(tps >= TARGETS["throughput"]) if tps else "n/a")
        c4 = dag["c4_noop"]
        tps = n / c4.median() if c4.ok else None
        run = c4.extra.get("run_s") or []
        run_tps = n / statistics.median(run) if run and statistics.median(run) > 0 else None
        value = fmt_s(c4) + (" = %.0f tasks/s" % tps if tps else "")
        if run_tps:
            value += "; run alone %.3f s = %.0f tasks/s" % (statistics.median(run), run_tps)
        row("1", "same, coordinator + 4 worker processes (%d slots each), as DESIGN §10 "
            "states the target" % THROUGHPUT_SLOTS, value, "", "", ">= 50,000 tasks/s",
            verdict(tps >= TARGETS["throughput"]) if tps else "n/a")
    else:
        row("1", "same, coordinator + 2 worker processes over tcp loopback",
            "n/a (%s)" % cfg["cluster_why"], "", "", ">= 50,000 tasks/s", "n/a")
    # (2)
    nin = dag["ninja"]
    r = ratio(a_shell.median(), nin.median())
    row("2", "%d shell `true` tasks: Apollo-11 embedded vs `ninja -j %d`" % (n, S),
        fmt_s(a_shell), "ninja " + fmt_s(nin) if nin.ok or nin.errors else "ninja not run",
        "%.2fx ninja" % r if r else "", "<= 1.2x ninja", verdict(r <= TARGETS["vs_ninja"])
        if r else "n/a")
    dsh = dag["dask_shell"]
    r = ratio(dsh.median(), a_shell.median())
    row("2", "%d shell `true` tasks: Dask (%d procs x 1 thread) vs Apollo-11" % (n, S),
        fmt_s(a_shell), ("Dask " + fmt_s(dsh)) if (dsh.ok or dsh.errors) else cfg["dask_note"],
        "Dask/Apollo-11 = %.2fx" % r if r else "", ">= 2.5x",
        verdict(r >= TARGETS["dask_shell"]) if r else "n/a")
    # (3)
    dno = dag["dask_noop"]
    r = ratio(dno.median(), a_noop.median())
    row("3", "%d noop tasks: Dask (no-op Python fn) vs Apollo-11 embedded" % n, fmt_s(a_noop),
        ("Dask " + fmt_s(dno)) if (dno.ok or dno.errors) else cfg["dask_note"],
        "Dask/Apollo-11 = %.2fx" % r if r else "", ">= 10x",
        verdict(r >= TARGETS["dask_noop"]) if r else "n/a")
    if c_noop.ok and dno.ok:
        r = ratio(dno.median(), c_noop.median())
        row("3", "%d noop tasks: Dask vs Apollo-11 cluster" % n, fmt_s(c_noop),
            "Dask " + fmt_s(dno), "Dask/Apollo-11 = %.2fx" % r, ">= 10x",
            verdict(r >= TARGETS["dask_noop"]))
    if dag["dask_startup"].ok:
        row("2-3", "Dask LocalCluster start-up (excluded above)",
            "%.2f s median" % dag["dask_startup"].median())
    # (4)
    for mode in ["embedded", "cluster"]:
        prev = None
        for size in sorted(k[1] for k in scaling if k[0] == mode):
            s = scaling[(mode, size)]
            what = "scaling %s: %d noop tasks, depth %d" % (mode, size, cfg["depth"])
            if not s.ok:
                row("4", what, fmt_s(s))
                prev = None
                continue
            rss = max(s.extra["rss_kb"]) / 1024.0 if s.extra["rss_kb"] else None
            who = "process" if mode == "embedded" else "coordinator"
            value = "%s = %.0f tasks/s, peak RSS (%s) %s" % (
                fmt_s(s), size / s.median(), who, "%.1f MB" % rss if rss else "?")
            if s.extra["worker_rss_kb"]:
                value += ", worker %.1f MB" % (max(s.extra["worker_rss_kb"]) / 1024.0)
            growth, ver, target = "", "", ""
            if prev is not None:
                g = s.median() / prev[1]
                growth = "%.1fx time for %.0fx tasks" % (g, size / prev[0])
                target = "<= 1.1x linear (11x per 10x)"
                ver = verdict(g <= TARGETS["growth"] / 10.0 * (size / prev[0]))
            if size == 100000 and rss:
                target = (target + "; " if target else "") + "< 100 MB RSS"
                ver = (ver + "; " if ver else "") + "RSS " + verdict(rss < TARGETS["rss_100k_mb"])
            row("4", what, value, "", growth, target, ver)
            prev = (size, s.median())
    if skipped_1m:
        row("4", "scaling: 1,000,000 noop tasks", skipped_1m)
    # (5)
    if cfg.get("disk_sync_us"):
        p50, p99 = cfg["disk_sync_us"]
        row("5", "this disk: 4 KiB write + fdatasync (the floor of one durable commit; "
            "each hop waits for one)", "p50 %.0f µs, p99 %.0f µs" % (p50, p99))
    for mode, (hops, errors) in lat.items():
        what = "hop latency %s, chain of %d noop" % (mode, cfg["chain"])
        if hops:
            p50, p99 = percentile(hops, 50), percentile(hops, 99)
            row("5", what + " (%d hops, worker end -> next worker start)" % len(hops),
                "p50 %.0f µs, p99 %.0f µs, max %.0f µs" % (p50, p99, max(hops)), "", "",
                "p50 < 200 µs, p99 < 2 ms", "p50 %s, p99 %s" % (
                    verdict(p50 < TARGETS["hop_p50_us"]), verdict(p99 < TARGETS["hop_p99_us"])))
        else:
            row("5", what, "failed: " + (errors[0] if errors else "no hops"))
    # (6)
    rec, why = recovery
    if rec:
        sv = rec["serving_ms"]
        row("6", "coordinator restart after kill -9: %d transitions, unfinished run of %d "
            "tasks (%d RUNNING to claim)" % (rec["transitions"], rec["unfinished"],
                                             rec["running"]),
            "serving after %.0f ms (%.0f–%.0f, n=%d); recovery_ms %.0f" % (
                rec["serving_ms_median"], min(sv), max(sv), len(sv), rec["recovery_ms_median"]),
            "", "", "< 1 s", verdict(rec["serving_ms_median"] < 1000 * TARGETS["recovery_s"]))
    else:
        row("6", "coordinator restart after kill -9", "not measured: %s" % why, "", "", "< 1 s",
            "n/a")
    # (7)
    if idle[0]:
        i = idle[0]
        row("7", "idle `apollo11-node start --role=all` over %d s" % i["seconds"],
            "CPU %.2f %%, RSS %.1f MB" % (i["cpu_pct"], i["rss_kb"] / 1024.0), "", "",
            "CPU < 1 %", verdict(i["cpu_pct"] < TARGETS["idle_cpu_pct"]))
    else:
        row("7", "idle footprint of `apollo11-node start --role=all`", idle[1], "", "",
            "CPU < 1 %", "n/a")
    return rows


def render_markdown(rows, meta):
    out = []
    out.append("| # | measurement | Apollo-11 | peer | ratio | target | verdict |")
    out.append("|---|---|---|---|---|---|---|")
    for r in rows:
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |")
    head = ["Apollo-11 benchmark, %s" % meta["date"], "",
            "- command: `%s`" % meta["command"],
            "- machine: %s, %d cores, %.0f MB RAM available; load average at start %s, "
            "at end %s" % (meta["machine"], meta["cores"], meta["mem_mb"], meta["load_start"],
                           meta["load_end"]),
            "- runs per figure: %d (median, min–max); parallelism S = %d; %s" % (
                meta["runs"], meta["slots"], meta["versions"]), ""]
    return "\n".join(head + out) + "\n"


# ---------------------------------------------------------------- main

def main(argv):
    p = argparse.ArgumentParser(description="Apollo-11 end-to-end benchmarks")
    p.add_argument("--apollo11", required=True, help="path to the built apollo11 CLI")
    p.add_argument("--apollo11-node", help="path to apollo11-node (default: beside apollo11)")
    p.add_argument("--journal-tool",
                   help="path to apollo11_journal_tool (default: <build>/bench/)")
    p.add_argument("--runs", type=int, help="runs per figure (default 5; --quick 3)")
    p.add_argument("--slots", type=int, default=os.cpu_count() or 2,
                   help="parallelism S for every contender (default: cores)")
    p.add_argument("--quick", action="store_true", help="3 runs, smaller sizes")
    p.add_argument("--smoke", action="store_true", help="tiny DAGs, 1 run (the CTest smoke test)")
    p.add_argument("--no-dask", action="store_true", help="leave Dask out")
    p.add_argument("--no-1m", action="store_true", help="do not try the 1M-task scaling row")
    p.add_argument("--tmpfs", default="/dev/shm",
                   help="a tmpfs for the extra latency row without fsync cost ('' to skip)")
    p.add_argument("--idle-seconds", type=int, help="idle footprint window (default 60)")
    p.add_argument("--timeout", type=int, default=300, help="per-command timeout, seconds")
    p.add_argument("--skip", default="",
                   help="comma-separated sections to leave out: scaling, recovery, idle, "
                        "failover (for a shorter run of rows 1-3 and 5)")
    p.add_argument("--prefetch", type=int,
                   help="--prefetch N for every apollo11 run and worker (default: theirs)")
    p.add_argument("--out", default=os.path.join(HERE, "out"), help="where results.md goes")
    a = p.parse_args(argv)

    a.apollo11 = os.path.abspath(a.apollo11)
    if not os.access(a.apollo11, os.X_OK):
        p.error("--apollo11 %s is not executable" % a.apollo11)
    if not a.apollo11_node:
        cand = os.path.join(os.path.dirname(a.apollo11), "apollo11-node")
        a.apollo11_node = cand if os.access(cand, os.X_OK) else None
    if not a.journal_tool:
        cand = os.path.join(os.path.dirname(os.path.dirname(a.apollo11)), "bench",
                            "apollo11_journal_tool")
        a.journal_tool = cand if os.access(cand, os.X_OK) else None

    if a.smoke:
        cfg = dict(runs=1, dag_tasks=60, depth=5, scaling=[20, 200], chain=20,
                   recovery=(10000, 100), idle=1, try_1m=False)
    elif a.quick:
        cfg = dict(runs=3, dag_tasks=2000, depth=10, scaling=[1000, 10000], chain=300,
                   recovery=(100000, 1000), idle=10, try_1m=False)
    else:
        cfg = dict(runs=5, dag_tasks=5000, depth=10, scaling=[1000, 10000, 100000],
                   chain=1000, recovery=(1000000, 10000), idle=60, try_1m=not a.no_1m)
    cfg["failover_tries"] = 3 if a.quick else 5
    if a.runs:
        cfg["runs"] = a.runs
    if a.idle_seconds is not None:
        cfg["idle"] = a.idle_seconds
    cfg["slots"] = a.slots

    os.makedirs(a.out, exist_ok=True)
    a.work = tempfile.mkdtemp(prefix="work-", dir=a.out)
    b = Bench(a)
    b.journal_tool = a.journal_tool
    load_start = loadavg()
    try:
        with_ninja = shutil.which("ninja") is not None
        if not with_ninja:
            log("note: ninja not found; the ninja rows are skipped")
        with_dask = False
        cfg["dask_note"] = "Dask not run (--no-dask)"
        if not a.no_dask:
            b.dask_python = b.find_dask()
            with_dask = b.dask_python is not None
            if not with_dask:
                cfg["dask_note"] = "Dask not run (`import distributed` fails; apt install " \
                                   "python3-distributed)"
                log("note: %s" % cfg["dask_note"])
        b.cluster_ok, cfg["cluster_why"] = b.node_available("coordinator")
        if not b.cluster_ok:
            log("cluster roles not available: %s" % cfg["cluster_why"])

        R, S = cfg["runs"], cfg["slots"]
        log("sections 1-3: %d-task DAG, %d rounds" % (cfg["dag_tasks"], R))
        dag = run_dag_section(b, R, cfg["dag_tasks"], cfg["depth"], S, with_dask, with_ninja)
        skip = set(x for x in a.skip.split(",") if x)
        if "scaling" in skip:
            scaling, skipped_1m = {}, "skipped (--skip scaling)"
        else:
            log("section 4: scaling %s" % cfg["scaling"])
            scaling, skipped_1m = run_scaling(b, R, cfg["scaling"], cfg["depth"], S,
                                              cfg["try_1m"])
            if not cfg["try_1m"]:
                skipped_1m = "skipped (--smoke/--quick/--no-1m)" if not a.smoke else None
        log("section 5: chain of %d" % cfg["chain"])
        cfg["disk_sync_us"] = disk_sync_us(a.work)
        lat = run_latency(b, R, cfg["chain"], S)
        if "recovery" in skip:
            recovery = (None, "skipped (--skip recovery)")
        else:
            log("section 6: recovery, %d transitions" % cfg["recovery"][0])
            recovery = run_recovery(b, R, *cfg["recovery"])
        if "idle" in skip:
            idle = (None, "skipped (--skip idle)")
        else:
            log("section 7: idle footprint")
            idle = run_idle(b, cfg["idle"])

        log("section 8: write amplification, %d-task noop DAG" % cfg["dag_tasks"])
        wa = run_write_amp(b, cfg)
        if a.smoke or "failover" in skip:
            failover = ([], "skipped (--smoke or --skip failover)")
        else:
            log("section 9: HA failover, %d tries per profile" % cfg["failover_tries"])
            failover = run_failover(b, cfg["failover_tries"])
        rows = build_table(b, cfg, dag, scaling, skipped_1m, lat, recovery, idle)
        rows += write_amp.table_rows(wa, S)
        rows += failover_rows(failover)
        versions = []
        try:
            versions.append(subprocess.run([a.apollo11, "--version"], stdout=subprocess.PIPE,
                                           text=True).stdout.strip())
        except OSError:
            pass
        if with_ninja:
            versions.append("ninja " + subprocess.run(["ninja", "--version"],
                                                      stdout=subprocess.PIPE,
                                                      text=True).stdout.strip())
        if with_dask:
            versions.append("dask.distributed " + subprocess.run(
                [b.dask_python, "-c", "import distributed; print(distributed.__version__)"],
                stdout=subprocess.PIPE, text=True).stdout.strip())
        meta = {
            "date": time.strftime("%Y-%m-%d %H:%M %Z"),
            "command": " ".join(["bench/harness.py"] + argv),
            "machine": platform.platform(),
            "cores": os.cpu_count() or 0,
            "mem_mb": mem_available_mb(),
            "load_start": load_start,
            "load_end": loadavg(),
            "runs": R,
            "slots": S,
            "versions": ", ".join(versions),
        }
        md = render_markdown(rows, meta)
        with open(os.path.join(a.out, "results.md"), "w") as f:
            f.write(md)
        raw = {"meta": meta, "config": cfg,
               "dag": {k: v.to_json() for k, v in dag.items()},
               "scaling": {"%s %d" % k: v.to_json() for k, v in scaling.items()},
               "latency_us": {m: {"hops": len(h), "p50": percentile(h, 50),
                                  "p99": percentile(h, 99), "errors": e}
                              for m, (h, e) in lat.items()},
               "recovery": recovery[0],
               "idle": idle[0],
               "write_amp": wa,
               "failover": failover[0]}
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump(raw, f, indent=2)
        print(md)
        log("wrote %s" % os.path.join(a.out, "results.md"))
        # Failure = an Apollo-11 figure could not be measured at all.
        failed = [k for k in ("a_noop", "a_shell") if not dag[k].ok]
        if b.cluster_ok and not (dag["c_noop"].ok and dag["c4_noop"].ok):
            failed.append("cluster noop")
        failed += ["scaling %s %d" % k for k, v in scaling.items() if not v.ok and k[1] <= 10000]
        failed += ["latency " + m for m, (h, _) in lat.items() if not h]
        if b.cluster_ok and b.journal_tool and not recovery[0] and "recovery" not in skip:
            failed.append("recovery")
        if failed:
            log("FAILED: no figure for %s" % ", ".join(failed))
            return 1
        return 0
    finally:
        shutil.rmtree(a.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
