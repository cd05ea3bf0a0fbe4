"""Trigger clients for the service rows: N processes, each with its own
http.client connection (keep-alive asked; the node answers every request
with `Connection: close`, so each request after the first reconnects and
the count says so), POSTing /api/v1/pipelines/NAME/runs with a distinct
idempotency key per request for a fixed time.

Each client is a process (fork), so the Python GIL does not bound the
figure; each reports its own CPU (user+sys) so a reader sees whether the
client was the bound.
"""

import array
import collections
import json
import multiprocessing as mp
import os
import time

from svc_node import Http


def _client(idx, port, token, path, seconds, start_at, q, source):
    h = Http(port, token, timeout=30, source=source)
    lat = array.array("d")
    statuses = collections.Counter()
    errors = collections.Counter()
    first_bodies = {}
    n = 0
    # Start together.
    while time.time() < start_at:
        time.sleep(0.001)
    c0 = os.times()
    t_end = time.perf_counter() + seconds
    t_start = time.perf_counter()
    while True:
        now = time.perf_counter()
        if now >= t_end:
            break
        key = "bench-%d-%d-%d" % (os.getpid(), idx, n)
        n += 1
        body = json.dumps({"idempotency_key": key})
        t = time.perf_counter()
        try:
            status, _, data = h.request("POST", path, body, {"Content-Type": "application/json"})
        except Exception as e:  # noqa: BLE001 - counted as an error, by kind
            errors[type(e).__name__] += 1
            lat.append((time.perf_counter() - t) * 1000)
            continue
        lat.append((time.perf_counter() - t) * 1000)
        statuses[status] += 1
        if status not in (200, 201) and status not in first_bodies:
            first_bodies[status] = data[:300].decode("utf-8", "replace")
    wall = time.perf_counter() - t_start
    c1 = os.times()
    h.close()
    q.put({"lat": lat.tobytes(), "statuses": dict(statuses), "errors": dict(errors),
           "bodies": first_bodies, "wall": wall,
           "cpu": (c1.user - c0.user) + (c1.system - c0.system),
           "reconnects": h.reconnects, "closed_by_server": h.closed_by_server})


def run_clients(port, token, pipeline, clients, seconds, node_pid=None, distinct_sources=False):
    """Runs `clients` processes for `seconds`; returns the merged figures.
    distinct_sources: client i connects from 127.0.0.(2+i), as if from its
    own host (the node caps connections per client address)."""
    from svc_node import CpuWindow
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    path = "/api/v1/pipelines/%s/runs" % pipeline
    start_at = time.time() + 0.5
    procs = [ctx.Process(target=_client, args=(i, port, token, path, seconds, start_at, q,
                                 "127.0.0.%d" % (2 + i) if distinct_sources else None))
             for i in range(clients)]
    for p in procs:
        p.start()
    while time.time() < start_at:
        time.sleep(0.005)
    node_cpu = CpuWindow(node_pid).start() if node_pid else None
    results = [q.get(timeout=seconds + 120) for _ in procs]
    node_pct = node_cpu.stop() if node_cpu else None
    for p in procs:
        p.join(10)
    lat = array.array("d")
    statuses, errors, bodies = collections.Counter(), collections.Counter(), {}
    cpu = wall = 0.0
    reconnects = closed = 0
    for r in results:
        a = array.array("d")
        a.frombytes(r["lat"])
        lat.extend(a)
        statuses.update(r["statuses"])
        errors.update(r["errors"])
        for k, v in r["bodies"].items():
            bodies.setdefault(k, v)
        cpu += r["cpu"]
        wall = max(wall, r["wall"])
        reconnects += r["reconnects"]
        closed += r["closed_by_server"]
    ok = statuses.get(201, 0) + statuses.get(200, 0)
    lat = sorted(lat)
    n = len(lat)

    def p(x):
        return lat[min(n - 1, max(0, int(round(x / 100.0 * n + 0.5)) - 1))] if n else None

    return {
        "clients": clients, "seconds": wall, "requests": n, "ok": ok,
        "rate_ok": ok / wall if wall else 0.0, "rate_all": n / wall if wall else 0.0,
        "p50_ms": p(50), "p99_ms": p(99), "max_ms": lat[-1] if n else None,
        "statuses": dict(statuses), "errors": dict(errors), "bodies": bodies,
        "client_cpu_pct": 100.0 * cpu / wall if wall else 0.0,
        "node_cpu_pct": node_pct, "connections": reconnects, "closed_by_server": closed,
    }
