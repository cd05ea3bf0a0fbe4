#!/usr/bin/env python3
"""The peer of the service rows: Celery (Debian's python3-celery) on a
Redis broker (Debian's redis-server), run as the issue asks, beside
bench/service_bench.py's schedules and triggers rows.

  svc_celery.py --dir D --entries 2000 --minutes 3 --submit-seconds 10 \
      --clients 16 --reps 3 --out FILE.json

1. Starts redis-server on a free loopback port with D/redis as its dir
   (no persistence: --save "" --appendonly no, Debian's defaults otherwise).
2. Beat: D/peerapp.py has ENTRIES beat_schedule entries on crontab()
   (every minute, UTC); `celery beat` and one `celery worker` (default
   concurrency and pool) run as children. A before_task_publish handler in
   beat pushes "ENTRY TIME" to the Redis list `pub` at each publish; the
   task pushes "ENTRY TIME" to `ran` when the worker runs it. For each of
   MINUTES due minutes: published / expected, publish lag and run lag from
   the minute boundary; beat's CPU (% of one core) and RSS over the window.
3. Submission: CLIENTS processes (fork) call noop.apply_async() in a loop
   for SUBMIT_SECONDS (also with 1 client), the worker consuming meanwhile;
   rate, per-call latency, client CPU. REPS repetitions.

Every child is ended at exit. Needs `import celery, redis` in this Python.
"""

import argparse
import array
import json
import multiprocessing as mp
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

APP = r'''
import os, time
import redis as _redis
from celery import Celery
from celery.schedules import crontab
from celery.signals import before_task_publish

BROKER = os.environ["PEER_BROKER"]
ENTRIES = int(os.environ.get("PEER_ENTRIES", "0"))
app = Celery("peerapp", broker=BROKER)
app.conf.timezone = "UTC"
app.conf.enable_utc = True
app.conf.task_ignore_result = True
app.conf.beat_schedule = {
    "c%05d" % i: {"task": "peerapp.noop", "schedule": crontab(), "args": ("c%05d" % i,)}
    for i in range(ENTRIES)
}
_r = _redis.Redis.from_url(BROKER)


@app.task(ignore_result=True)
def noop(name):
    if name != "x":
        _r.rpush("ran", "%s %.6f" % (name, time.time()))


if os.environ.get("PEER_ROLE") == "beat":
    @before_task_publish.connect
    def _published(sender=None, body=None, **kw):
        try:
            args = body[0] if isinstance(body, (list, tuple)) else body.get("args", [])
            _r.rpush("pub", "%s %.6f" % (args[0], time.time()))
        except Exception:
            pass
'''

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def tree_cpu_s(pid):
    """CPU of pid and its children (a prefork worker's pool)."""
    total = 0.0
    try:
        total += cpu_s(pid)
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            for c in f.read().split():
                try:
                    total += cpu_s(int(c))
                except OSError:
                    pass
    except OSError:
        pass
    return total


def rss_mb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return 0.0


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    return v[max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))]


class Peer:
    def __init__(self, root, entries):
        self.root = root
        os.makedirs(os.path.join(root, "redis"), exist_ok=True)
        self.port = free_port()
        self.broker = "redis://127.0.0.1:%d/0" % self.port
        with open(os.path.join(root, "peerapp.py"), "w") as f:
            f.write(APP)
        self.entries = entries
        self.procs = []

    def spawn(self, argv, env=None, name="x"):
        log = open(os.path.join(self.root, name + ".log"), "w")
        p = subprocess.Popen(argv, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                             env=dict(os.environ, PEER_BROKER=self.broker,
                                      PYTHONPATH=self.root, **(env or {})),
                             start_new_session=True)
        self.procs.append(p)
        return p

    def start_redis(self):
        self.redis = self.spawn(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                                 "--dir", os.path.join(self.root, "redis"), "--save", "",
                                 "--appendonly", "no", "--daemonize", "no"], name="redis")
        import redis
        self.r = redis.Redis(host="127.0.0.1", port=self.port)
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if self.r.ping():
                    return self.r.info("server").get("redis_version")
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not answer")

    def start_worker(self):
        self.worker = self.spawn([sys.executable, "-m", "celery", "-A", "peerapp", "worker",
                                  "--loglevel", "WARNING", "-n", "peer@%h"], name="worker")
        return self.worker

    def start_beat(self):
        self.beat = self.spawn([sys.executable, "-m", "celery", "-A", "peerapp", "beat",
                                "--loglevel", "WARNING", "-s",
                                os.path.join(self.root, "beat-schedule")],
                               env={"PEER_ROLE": "beat", "PEER_ENTRIES": str(self.entries)},
                               name="beat")
        return self.beat

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        deadline = time.time() + 10
        for p in self.procs:
            try:
                p.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()


def beat_row(peer, minutes):
    r = peer.r
    r.delete("pub", "ran")
    worker = peer.start_worker()
    beat = peer.start_beat()
    # The first due minute at least 10 s after beat started (it reads its
    # schedule and connects first).
    import math
    b0 = math.ceil((time.time() + 10) / 60.0) * 60
    end = b0 + minutes * 60 - 1
    time.sleep(max(0, b0 - 1 - time.time()))
    c_beat, c_worker, c_redis = cpu_s(beat.pid), tree_cpu_s(worker.pid), cpu_s(peer.redis.pid)
    t0 = time.monotonic()
    rss = []
    while time.time() < end:
        rss.append(rss_mb(beat.pid))
        time.sleep(min(1.0, max(0.0, end - time.time())))
    wall = time.monotonic() - t0
    beat_pct = 100 * (cpu_s(beat.pid) - c_beat) / wall
    worker_pct = 100 * (tree_cpu_s(worker.pid) - c_worker) / wall
    redis_pct = 100 * (cpu_s(peer.redis.pid) - c_redis) / wall
    # Let the worker drain what was published in the last minute.
    time.sleep(5)
    due = [b0 + 60 * k for k in range(minutes)]

    def lags(key):
        out = {}
        for item in r.lrange(key, 0, -1):
            name, t = item.decode().split()
            t = float(t)
            d = math.floor(t / 60.0) * 60
            if d in due:
                out.setdefault((name, d), t - d)
        return out

    pub, ran = lags("pub"), lags("ran")
    expected = peer.entries * minutes
    pl, rl = list(pub.values()), list(ran.values())
    return {
        "expected": expected, "published": len(pub), "ran": len(ran),
        "pub_p50_ms": pct(pl, 50) and pct(pl, 50) * 1000,
        "pub_p99_ms": pct(pl, 99) and pct(pl, 99) * 1000,
        "pub_max_ms": pl and max(pl) * 1000,
        "ran_p50_ms": pct(rl, 50) and pct(rl, 50) * 1000,
        "ran_p99_ms": pct(rl, 99) and pct(rl, 99) * 1000,
        "ran_max_ms": rl and max(rl) * 1000,
        "beat_cpu_pct": beat_pct, "worker_cpu_pct": worker_pct, "redis_cpu_pct": redis_pct,
        "beat_rss_mb": max(rss) if rss else 0.0, "minutes": minutes,
    }


def _submitter(broker, root, seconds, start_at, q):
    sys.path.insert(0, root)
    os.environ["PEER_BROKER"] = broker
    import peerapp
    lat = array.array("d")
    errors = 0
    peerapp.noop.apply_async(args=("x",))  # connect before the clock starts
    while time.time() < start_at:
        time.sleep(0.001)
    c0 = os.times()
    t_start = time.perf_counter()
    t_end = t_start + seconds
    while time.perf_counter() < t_end:
        t = time.perf_counter()
        try:
            peerapp.noop.apply_async(args=("x",))
        except Exception:  # noqa: BLE001
            errors += 1
        lat.append((time.perf_counter() - t) * 1000)
    wall = time.perf_counter() - t_start
    c1 = os.times()
    q.put({"lat": lat.tobytes(), "errors": errors, "wall": wall,
           "cpu": (c1.user - c0.user) + (c1.system - c0.system)})


def submit_row(peer, clients, seconds):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    start_at = time.time() + 2.0
    procs = [ctx.Process(target=_submitter, args=(peer.broker, peer.root, seconds, start_at, q))
             for _ in range(clients)]
    for p in procs:
        p.start()
    res = [q.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join(10)
    lat = array.array("d")
    errors, cpu, wall = 0, 0.0, 0.0
    for x in res:
        a = array.array("d")
        a.frombytes(x["lat"])
        lat.extend(a)
        errors += x["errors"]
        cpu += x["cpu"]
        wall = max(wall, x["wall"])
    lat = sorted(lat)
    return {"clients": clients, "calls": len(lat), "rate": len(lat) / wall,
            "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": lat[-1] if lat else None,
            "errors": errors, "client_cpu_pct": 100.0 * cpu / wall}


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="a new directory for redis and celery files")
    p.add_argument("--entries", type=int, default=2000)
    p.add_argument("--minutes", type=int, default=3, help="due minutes observed (0: no beat)")
    p.add_argument("--submit-seconds", type=float, default=10)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    os.makedirs(a.dir, exist_ok=True)
    peer = Peer(a.dir, a.entries)
    out = {}

    def on_term(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    try:
        out["redis_version"] = peer.start_redis()
        import celery
        out["celery_version"] = celery.__version__
        if a.minutes > 0:
            out["beat"] = beat_row(peer, a.minutes)
            print("celery beat: %s" % json.dumps(out["beat"]), file=sys.stderr, flush=True)
            os.killpg(peer.beat.pid, signal.SIGTERM)
            peer.beat.wait(10)
        else:
            peer.start_worker()
        time.sleep(2)
        out["submit"] = {}
        for rep in range(a.reps):
            for clients in (1, a.clients):
                r = submit_row(peer, clients, a.submit_seconds)
                out["submit"].setdefault(str(clients), []).append(r)
                print("celery apply_async %d client(s): %.0f/s p50 %.2f p99 %.2f ms" % (
                    clients, r["rate"], r["p50_ms"], r["p99_ms"]), file=sys.stderr, flush=True)
                time.sleep(1)
        out["queue_left"] = peer.r.llen("celery")
    finally:
        peer.stop()
        shutil.rmtree(os.path.join(a.dir, "redis"), ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
