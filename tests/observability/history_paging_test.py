#!/usr/bin/env python3
"""The whole run history, paged: 20,000 runs of a registered pipeline (made
fast by two backfills of an every-minute schedule over 20,000 minutes),
walked through
GET /api/v1/runs and `apollo11 runs --all` (over ZeroMQ and over HTTP) with
filters, while new runs keep arriving (another pipeline is triggered all
along): every run created before a walk
began is seen exactly once, in order, and nothing of another pipeline.
Unknown parameters, states and cursors are a 400.

  history_paging_test.py BUILD_DIR
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

TICK = ('version: "1.0"\nname: hist.tick\nschedule: "* * * * *"\nmax_active_runs: 200\n'
        'pipeline:\n  - id: a\n    type: noop\n')
OTHER = 'version: "1.0"\nname: hist.other\npipeline:\n  - id: a\n    type: noop\n'


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok ", what, flush=True)


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class Node:
    def __init__(self, build, root):
        self.build, self.root = build, root
        self.http = f"127.0.0.1:{free_port()}"
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(root, "node.err"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cli", "apollo11-node"), "start", "--role=all",
             "--state-dir", os.path.join(root, "state"), "--http-bind", self.http,
             "--api-bind", self.api, "--bind", f"tcp://127.0.0.1:{free_port()}"],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:  # a port taken meanwhile, say
                self.log.flush()
                with open(self.log.name) as f:
                    raise AssertionError(f"the node exited {self.proc.returncode}: {f.read()[-800:]}")
            try:
                if urllib.request.urlopen(f"http://{self.http}/readyz", timeout=2).status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the node did not become ready")

    def cli(self, *argv, coordinator=None):
        r = subprocess.run([os.path.join(self.build, "cli", "apollo11"), *argv,
                            "--coordinator", coordinator or self.api],
                           capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise AssertionError(f"apollo11 {' '.join(argv)}: {r.returncode} {r.stderr}")
        return r.stdout

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def walk_http(node, params):
    """Every run of the walk, and each page's time in ms."""
    runs, times, cursor = [], [], None
    while True:
        query = dict(params, **({"cursor": cursor} if cursor else {}))
        started = time.perf_counter()
        status, page = get(f"http://{node.http}/api/v1/runs?" + urllib.parse.urlencode(query))
        times.append((time.perf_counter() - started) * 1000)
        if status != 200:
            raise AssertionError(f"/api/v1/runs {query}: {status} {page}")
        runs += page["runs"]
        if page["complete"]:
            return runs, times
        cursor = page["next_cursor"]


def in_order(runs):
    keys = [(r["created_at"], r["run_id"]) for r in runs]
    return all(a > b for a, b in zip(keys, keys[1:]))


def make_history(node):
    for name, text in (("tick", TICK), ("other", OTHER)):
        path = os.path.join(node.root, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        node.cli("pipelines", "add", path)
    # Two backfills of 10,000 minutes each (the most one request takes).
    now = int(time.time()) // 60 * 60
    node.cli("backfill", "hist.tick", "--from", utc(now - 20001 * 60), "--to", utc(now - 10002 * 60),
             "--max-active", "200")
    node.cli("backfill", "hist.tick", "--from", utc(now - 10001 * 60), "--to", utc(now - 2 * 60),
             "--max-active", "200")
    deadline = time.time() + 240
    while time.time() < deadline:
        done = json.loads(node.cli("runs", "--pipeline", "hist.tick", "--state", "SUCCESS",
                                   "--all", "--json"))
        if len(done) >= 20000:
            break
        time.sleep(2)
    # The schedule may also have fired on its own, once a minute.
    check(20000 <= len(done) <= 20005, f"20,000 backfilled runs of hist.tick succeeded ({len(done)})")
    return done


def main():
    build = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="apollo11-paging-") as root:
        node = Node(build, root)
        stop = threading.Event()
        try:
            backfilled = make_history(node)
            check(in_order(backfilled), "apollo11 runs --all lists them newest first, in order")

            def trigger_others():
                while not stop.is_set():
                    node.cli("trigger", "hist.other")
                    time.sleep(0.05)
            feeder = threading.Thread(target=trigger_others)
            feeder.start()
            time.sleep(0.2)
            walked, times = walk_http(node, {"pipeline": "hist.tick", "limit": "50"})
            stop.set()
            feeder.join()
            ids = [r["run_id"] for r in walked]
            check(len(ids) == len(set(ids)), f"the HTTP walk saw {len(ids)} runs, none twice")
            check(in_order(walked), "in order, newest first")
            check(all(r["pipeline"] == "hist.tick" for r in walked), "and only hist.tick's")
            before = {r["run_id"] for r in backfilled}
            check(before <= set(ids), "every backfilled run is in it")
            times.sort()
            p99 = times[int(len(times) * 0.99) - 1]
            print(f"    {len(times)} pages of 50: p50 {times[len(times) // 2]:.1f} ms, "
                  f"p99 {p99:.1f} ms, max {times[-1]:.1f} ms (new runs arriving)", flush=True)
            others = json.loads(node.cli("runs", "--pipeline", "hist.other", "--all", "--json"))
            check(len(others) > 5, f"{len(others)} runs of hist.other arrived meanwhile")
            # The same through the CLI over HTTP, and a state filter.
            failed = json.loads(node.cli("runs", "--pipeline", "hist.tick", "--state", "FAILED",
                                         "--all", "--json", coordinator=f"http://{node.http}"))
            check(failed == [], "no hist.tick run failed (the CLI over HTTP)")
            # A window of creation times: [the 15,000th newest's, the 5,000th's).
            since, until = backfilled[15000]["created_at"], backfilled[5000]["created_at"]
            window = json.loads(node.cli(
                "runs", "--pipeline", "hist.tick", "--since", since, "--until", until, "--all",
                "--json", coordinator=f"http://{node.http}"))
            expected = [r["run_id"] for r in backfilled if since <= r["created_at"] < until]
            check([r["run_id"] for r in window] == expected and len(expected) >= 9990,
                  f"a time window through the CLI over HTTP: {len(window)} runs, in order")
            limited = node.cli("runs", "--limit", "3")
            check(len(limited.strip().splitlines()) == 4, "runs --limit 3 prints three rows")
            for query, why in (("offset=2", "unknown parameter 'offset'"),
                               ("state=BOGUS", "unknown run state"),
                               ("cursor=zz", "is not one a page of runs gave"),
                               ("limit=5000", "limit must be a number from 1 to 1000")):
                status, body = get(f"http://{node.http}/api/v1/runs?{query}")
                check(status == 400 and why in body["error"], f"?{query} is a 400: {body}")
            status, body = get(f"http://{node.http}/api/runs?pipeline=hist.tick")
            check(status == 400 and "unknown parameter 'pipeline'" in body["error"],
                  f"/api/runs does not ignore a filter it does not take: {body}")
        finally:
            stop.set()
            node.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
