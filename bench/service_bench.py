#!/usr/bin/env python3
"""End-to-end rows for the always-on service (issue 41).

Each row starts its own apollo11-node(s) --role=all in fresh state dirs
under a temp dir, with free loopback ports, and kills them at exit. The
node's defaults are the product: a flag beyond placement (state dir,
ports) is printed beside the figure it produced. Changing HTTP calls need
a token, which a default node does not have: rows that trigger or
backfill over HTTP pass --api-token-file (printed).

Rows (--rows, comma-separated; default all):
  triggers   POST /api/v1/pipelines/NAME/runs, distinct idempotency keys,
             1 client and 16 client processes (defaults, then
             --api-rate-limit 0), rate and latency, client and node CPU
  schedules  10,000 registered pipelines, 2,000 on `* * * * *` in 6
             time zones: fired/expected per due minute, lag, node CPU, RSS
  history    a history of --history-runs runs (backfills of every-minute
             schedules), GET /api/v1/runs pages by pipeline, state and
             time window; RSS; kill -9 to /readyz and to the first page
  journal    journal bytes per run and per transition; --retention 7d
             over a simulated month (the node's clock offset with
             libfaketime, one backfilled week per segment)
  idle       idle RSS, threads, fds of apollo11-node start --role=all; cold
             start to /readyz 200 (fresh state dir each)
  celery     the peer: Celery beat + worker on a Redis broker (Debian
             packages), 2,000 every-minute entries and apply_async rate

  service_bench.py --bin DIR [--rows ...] [--out FILE] [sizes...]

Only the standard library (the Celery row runs bench/svc_celery.py under
a Python that can import celery and redis).
"""

import argparse
import collections
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from svc_node import (CpuWindow, Node, fmt_rss, loadavg, median, metrics, parse_ts,  # noqa: E402
                      pct, proc_fds, proc_status, rss_mb, spread, utc, walk_runs)
import svc_trigger  # noqa: E402

NOOP = 'version: "1.0"\nname: %s\npipeline:\n  - id: a\n    type: noop\n'
SCHED = ('version: "1.0"\nname: %s\nschedule: "* * * * *"\ntimezone: %s\n'
         'pipeline:\n  - id: a\n    type: noop\n')
TICK = ('version: "1.0"\nname: %s\nschedule: "* * * * *"\nmax_active_runs: 200\n'
        'pipeline:\n  - id: a\n    type: noop\n')
FAILING = ('version: "1.0"\nname: %s\nschedule: "* * * * *"\nmax_active_runs: 200\n'
           'pipeline:\n  - id: a\n    type: shell\n    command: "exit 1"\n')
ZONES = ("UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Adelaide",
         "Asia/Kathmandu")
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def log(msg):
    print("[service %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr, flush=True)


class Report:
    """The rows, as markdown table lines, plus notes."""

    def __init__(self):
        self.rows = []
        self.notes = []
        self.raw = {}

    def row(self, name, figure, target, met, flags="defaults"):
        met_s = {True: "yes", False: "**no**", None: "n/a"}[met]
        line = "| %s | %s | %s | %s | %s | %s |" % (name, figure, target, met_s, flags, loadavg())
        self.rows.append(line)
        print(line, flush=True)

    def note(self, text):
        self.notes.append(text)
        print("  note: " + text, flush=True)

    def markdown(self, meta):
        out = ["# Service rows (bench/service_bench.py)", ""]
        out += ["- %s: %s" % (k, v) for k, v in meta.items()]
        out += ["", "| row | figure | target | met? | non-default flags | load (1/5/15 min) |",
                "|---|---|---|---|---|---|"]
        out += self.rows
        if self.notes:
            out += ["", "Notes:", ""] + ["- " + n for n in self.notes]
        return "\n".join(out) + "\n"


def fmt_ms(x):
    return "n/a" if x is None else ("%.1f" % x if x < 100 else "%.0f" % x)


class Ctx:
    def __init__(self, args):
        self.args = args
        self.node_bin = os.path.join(args.bin, "apollo11-node")
        self.cli_bin = os.path.join(args.bin, "apollo11")
        self.root = tempfile.mkdtemp(prefix="apollo11-service-", dir=args.tmp)
        self.nodes = []
        self.children = []  # other processes to end at exit

    def node(self, name, **kw):
        n = Node(self.node_bin, self.root, name, **kw)
        self.nodes.append(n)
        return n

    def cleanup(self):
        for n in self.nodes:
            try:
                n.stop()
            except Exception:  # noqa: BLE001
                n.kill9()
        for p in self.children:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
        if not self.args.keep:
            shutil.rmtree(self.root, ignore_errors=True)


# ================================================================ triggers

def row_triggers(ctx, rep):
    a = ctx.args
    secs = a.trigger_seconds
    many = a.trigger_clients
    results = collections.OrderedDict()

    def one(clients, flags, label, distinct=False):
        key = (label, clients, distinct)
        results.setdefault(key, [])
        n = ctx.node("trig-%s-%d-%d-%d" % (label, clients, distinct, len(results[key])),
                     flags=flags)
        n.start()
        n.register_yaml(NOOP % "bench.trig")
        r = svc_trigger.run_clients(n.http_port, n.token, "bench.trig", clients, secs, n.pid,
                                    distinct_sources=distinct)
        st = proc_status(n.pid)
        r["rss_kb"] = st.get("VmRSS")
        r["flags"] = n.flags_note()
        m = metrics(n.http_port)
        r["runs_submitted"] = m.get("apollo11_runs_submitted_total")
        r["commits"] = m.get("apollo11_journal_commits_total")
        r["commit_s"] = m.get("apollo11_journal_commit_seconds_sum")
        n.stop()
        results[key].append(r)
        log("triggers %s %d client(s)%s: %.0f ok/s, p50 %s p99 %s max %s ms, statuses %s, "
            "errors %s, client CPU %.0f%%, node CPU %.0f%%" % (
                label, clients, " from distinct addresses" if distinct else "", r["rate_ok"],
                fmt_ms(r["p50_ms"]), fmt_ms(r["p99_ms"]), fmt_ms(r["max_ms"]), r["statuses"],
                r["errors"], r["client_cpu_pct"], r["node_cpu_pct"] or 0))
        return r

    # The defaults once each (--api-rate-limit is 20/s by default), then the
    # limit off: 1 client, `many` clients from one address (127.0.0.1, as
    # the issue asks) and from `many` loopback addresses (a node caps
    # connections per client address).
    for clients in (1, many):
        one(clients, [], "defaults")
    for i in range(a.reps):
        for clients, distinct in ((1, False), (many, False), (many, True)):
            one(clients, ["--api-rate-limit", "0"], "nolimit", distinct)
    rep.raw["triggers"] = {"%s/%d/%s" % k: v for k, v in results.items()}

    for (label, clients, distinct), rs in results.items():
        target_rate = 1000.0 if clients == 1 else 3000.0
        rate = [r["rate_ok"] for r in rs]
        p99 = [r["p99_ms"] for r in rs]
        statuses = collections.Counter()
        errors = collections.Counter()
        for r in rs:
            statuses.update(r["statuses"])
            errors.update(r["errors"])
        non2xx = {k: v for k, v in statuses.items() if k not in (200, 201)}
        conns = sum(r["connections"] for r in rs)
        reqs = sum(r["requests"] for r in rs)
        commit_ms = [1000.0 * r["commit_s"] / r["commits"] for r in rs if r.get("commits")]
        fig = ("%s ok/s; p50 %s, p99 %s, max %s ms; %d requests, non-2xx %s, errors %s; "
               "client CPU %s%% of a core (%d procs), node CPU %s%%; journal commit mean %s ms; "
               "%d connections for %d requests; %.0f s each" % (
                   spread(rate, "%.0f"), spread([r["p50_ms"] for r in rs]), spread(p99),
                   spread([r["max_ms"] for r in rs]), reqs, dict(non2xx) or 0,
                   dict(errors) or 0, spread([r["client_cpu_pct"] for r in rs], "%.0f"),
                   clients, spread([r["node_cpu_pct"] for r in rs], "%.0f"),
                   spread(commit_ms), conns, reqs, secs))
        if clients == 1:
            target = ">= 1,000/s sustained, p99 < 20 ms"
            met = median(rate) >= target_rate and median(p99) < 20
        else:
            target = ">= 3,000/s"
            met = median(rate) >= target_rate
        where = ""
        if clients > 1:
            where = (" from 127.0.0.2-%d" % (1 + clients)) if distinct else " from 127.0.0.1"
        rep.row("HTTP triggers, %d client%s%s" % (clients, "s" if clients > 1 else "", where),
                fig, target, met, rs[0]["flags"])
        for code, body in rs[0]["bodies"].items():
            rep.note("triggers (%s, %d client(s)%s): first %s answer: %s" % (
                rs[0]["flags"], clients, where, code, body[:200]))


# ================================================================ idle

def row_idle(ctx, rep):
    a = ctx.args
    cold = []
    for i in range(a.cold_starts):
        n = ctx.node("cold-%d" % i, token=False)
        cold.append(n.start(timeout=30) * 1000)
        n.stop()
        shutil.rmtree(n.dir, ignore_errors=True)
    figs = collections.defaultdict(list)
    for i in range(a.reps):
        n = ctx.node("idle-%d" % i, token=False)
        n.start()
        cpu = CpuWindow(n.pid)
        time.sleep(2.0)  # start-up is not idle
        cpu.start()
        time.sleep(a.idle_seconds)
        figs["cpu"].append(cpu.stop())
        st = proc_status(n.pid)
        figs["rss"].append(st["VmRSS"] / 1024.0)
        figs["anon"].append(st["RssAnon"] / 1024.0)
        figs["file"].append(st["RssFile"] / 1024.0)
        figs["threads"].append(st["Threads"])
        figs["fds"].append(proc_fds(n.pid))
        n.stop()
    rep.raw["idle"] = {"cold_ms": cold, **figs}
    rss_med = median(figs["rss"])
    rep.row("Idle footprint, --role=all",
            "RSS %s MB (anon %s, file-backed %s); %s threads; %s fds; CPU %s%% of a core "
            "over %d s" % (
                spread(figs["rss"]), spread(figs["anon"]), spread(figs["file"]),
                spread(figs["threads"], "%.0f"), spread(figs["fds"], "%.0f"),
                spread(figs["cpu"], "%.2f"), a.idle_seconds),
            "RSS < 12 MB", rss_med < 12)
    rep.row("Cold start to /readyz 200", "%s ms (%d starts, fresh state dir each; polled every "
            "0.5 ms)" % (spread(cold, "%.1f"), len(cold)), "< 10 ms (median)",
            median(cold) < 10)


# ================================================================ schedules

def row_schedules(ctx, rep):
    a = ctx.args
    n = ctx.node("sched", token=False)
    n.start()
    files = os.path.join(n.dir, "pipelines")
    os.makedirs(files)
    unsched, sched = [], []
    total, nsched = a.schedule_pipelines, a.schedule_every_minute
    for i in range(total - nsched):
        p = os.path.join(files, "idle.p%05d.yaml" % i)
        with open(p, "w") as f:
            f.write(NOOP % ("idle.p%05d" % i))
        unsched.append(p)
    names = []
    for i in range(nsched):
        name = "sched.c%05d" % i
        p = os.path.join(files, name + ".yaml")
        with open(p, "w") as f:
            f.write(SCHED % (name, ZONES[i % len(ZONES)]))
        sched.append(p)
        names.append(name)
    t0 = time.monotonic()
    batch = 500
    for group in (unsched, sched):
        for i in range(0, len(group), batch):
            n.cli(ctx.cli_bin, "pipelines", "add", *group[i:i + batch], timeout=600)
    reg_s = time.monotonic() - t0
    log("schedules: %d pipelines registered in %.1f s (apollo11 pipelines add, %d files a call)"
        % (total, reg_s, batch))
    rss_after_reg = rss_mb(n.pid)
    # The first due minute: at least 3 s after the registration ended.
    b0 = math.ceil((time.time() + 3) / 60.0) * 60
    minutes = a.schedule_minutes
    end = b0 + minutes * 60 - 1
    time.sleep(max(0, b0 - 1 - time.time()))
    cpu = CpuWindow(n.pid).start()
    rss = []
    while time.time() < end:
        rss.append(rss_mb(n.pid))
        time.sleep(min(1.0, max(0.0, end - time.time())))
    cpu_pct = cpu.stop()
    log("schedules: window over, reading the fires")
    h = n.http()
    due = [b0 + 60 * k for k in range(minutes)]
    runs, _ = walk_runs(h, {"prefix": "sched.", "since": utc(b0 - 1), "limit": "1000"})
    created = {r["run_id"]: parse_ts(r["created_at"]) for r in runs}
    fired, lags, decided_lags, missed, other = 0, [], [], [], collections.Counter()
    for name in names:
        status, body = h.json("GET", "/api/v1/pipelines/%s?limit=%d" % (name, minutes + 5))
        fires = {}
        for f in (body or {}).get("fires", []):
            fires[round(parse_ts(f["scheduled_at"]))] = f
        for d in due:
            f = fires.get(d)
            if f is None:
                missed.append((name, utc(d), "no fire record"))
                continue
            if f["state"] != "started":
                missed.append((name, utc(d), f["state"] + ": " + f.get("reason", "")))
                other[f["state"]] += 1
                continue
            fired += 1
            decided_lags.append(parse_ts(f["decided_at"]) - d)
            c = created.get(f.get("run_id"))
            if c is not None:
                lags.append(c - d)
            else:
                other["run not in /api/v1/runs"] += 1
    m = metrics(n.http_port)
    expected = len(names) * len(due)
    rss_max = max(rss) if rss else (0.0, 0.0, 0.0)
    anon_growth = (rss[-1][1] - rss[0][1]) if rss else 0.0
    p99, mx = pct(lags, 99), (max(lags) if lags else None)
    rep.raw["schedules"] = {"expected": expected, "fired": fired, "lags": lags,
                            "decided_lags": decided_lags, "cpu_pct": cpu_pct, "rss": rss,
                            "missed": missed[:50], "register_s": reg_s}
    rep.row("Schedules: fired / due (%d pipelines, %d on `* * * * *` in %d zones, %d min)" % (
        total, nsched, len(ZONES), minutes),
        "%d / %d fired%s" % (fired, expected, (" (%s)" % dict(other)) if other else ""),
        "every due time fires", fired == expected)
    rep.row("Schedules: lag (run created_at - due minute)",
            "p50 %s, p99 %s, max %s ms (fire decided_at: p99 %s, max %s ms); "
            "apollo11_schedule_fires_missed_total %d" % (
                fmt_ms(pct(lags, 50) and pct(lags, 50) * 1000), fmt_ms(p99 and p99 * 1000),
                fmt_ms(mx and mx * 1000), fmt_ms(pct(decided_lags, 99) and
                                                 pct(decided_lags, 99) * 1000),
                fmt_ms(decided_lags and max(decided_lags) * 1000),
                m.get("apollo11_schedule_fires_missed_total", -1)),
            "p99 < 1 s, max < 2 s", bool(lags) and p99 < 1.0 and mx < 2.0)
    rep.row("Schedules: node CPU and RSS",
            "CPU %.1f%% of one core over %d s (noop runs executed in the same --role=all "
            "process); RSS max %s (%s after registering); heap (RssAnon) %+.1f MB over the "
            "window, %.0f kB per 1,000 fires" % (
                cpu_pct, minutes * 60, fmt_rss(rss_max), fmt_rss(rss_after_reg),
                anon_growth, 1000.0 * 1024 * anon_growth / max(fired, 1)),
            "CPU < 50 %", cpu_pct < 50)
    rep.note("schedules: registering %d pipelines took %.1f s (%.0f/s) with `apollo11 pipelines "
             "add` over ZeroMQ, %d files a call" % (total, reg_s, total / reg_s, batch))
    for mm in missed[:5]:
        rep.note("schedules: missed %s at %s: %s" % mm)
    n.stop()


# ================================================================ history

def wait_finished(n, target, deadline, what):
    last, t_last = None, time.monotonic()
    while True:
        m = metrics(n.http_port)
        done = sum(v for k, v in m.items() if k.startswith("apollo11_runs_finished_total"))
        if done >= target:
            return done
        if time.monotonic() > deadline:
            return done
        if time.monotonic() - t_last > 15:
            log("%s: %d / %d runs finished" % (what, done, target))
            t_last = time.monotonic()
        last = done
        time.sleep(0.5)
    return last


def fill_history(ctx, n, count, pipelines, fail_share, max_seconds, what, old=0):
    """Fills the history with about `count` runs: backfills of every-minute
    schedules (10,000 times a call, the most one takes). First `old` runs
    of hist.old (the oldest runs: a pipeline that ran long ago); then rounds
    in which each of `pipelines` hist.pNN, and hist.fail (a failing shell
    task, fail_share of the runs), gets its next 10,000 (hist.fail its
    share) at once, so their runs interleave in creation time, as runs of
    many pipelines do. Waits for them. Returns (runs finished, seconds,
    names, stopped early)."""
    h = n.http()
    names = ["hist.p%02d" % i for i in range(pipelines)]
    for name in names:
        n.register_yaml(TICK % name)
    nfail = max(1, int(count * fail_share)) if fail_share else 0
    if nfail:
        n.register_yaml(FAILING % "hist.fail")
    if old:
        n.register_yaml(TICK % "hist.old")
    per = max(0, count - nfail - old) // pipelines
    chunk = 10000
    rounds = max(1, math.ceil(per / float(chunk)))
    now = int(time.time()) // 60 * 60
    t0 = time.monotonic()
    deadline = t0 + max_seconds
    base = sum(v for k, v in metrics(n.http_port).items()
               if k.startswith("apollo11_runs_finished_total"))
    queued = 0
    nxt = {}  # pipeline -> next minute to backfill

    def backfill(name, minutes, total):
        nonlocal queued
        start = nxt.setdefault(name, now - (total + 2) * 60)
        while minutes > 0:
            k = min(10000, minutes)
            status, body = h.json("POST", "/api/v1/pipelines/%s/backfill" % name,
                                  {"from": utc(start), "to": utc(start + (k - 1) * 60)})
            if status == 429:  # --api-rate-limit: as the answer says
                time.sleep(1.0)
                continue
            if status != 200:
                raise RuntimeError("backfill %s: %s %s" % (name, status, body))
            queued += body["queued"]
            start += k * 60
            minutes -= k
        nxt[name] = start

    if old:
        backfill("hist.old", old, old)
        wait_finished(n, base + queued, deadline, what)
    stopped = False
    for r in range(rounds):
        before = queued
        for name in names:
            backfill(name, min(chunk, per - r * chunk), per)
        if nfail:
            share = nfail // rounds + (1 if r < nfail % rounds else 0)
            backfill("hist.fail", share, nfail)
        # The previous round done: at most two rounds in flight.
        wait_finished(n, base + before, deadline, what)
        if time.monotonic() > deadline:
            stopped = True
            break
    done = wait_finished(n, base + queued, deadline + 600 if not stopped else deadline, what)
    return done - base, time.monotonic() - t0, names, stopped


def row_history(ctx, rep):
    a = ctx.args
    n = ctx.node("history")
    n.start()
    j0 = n.journal_bytes()
    m0 = metrics(n.http_port)
    count = a.history_runs
    n_old = max(10, min(10000, count // 1000))
    done, secs, names, stopped = fill_history(ctx, n, count, a.history_pipelines, 0.005,
                                              a.history_fill_seconds, "history fill", old=n_old)
    m1 = metrics(n.http_port)
    j1 = n.journal_bytes()
    log("history: %d runs in %.0f s (%.0f runs/s); journal %.1f MB" % (
        done, secs, done / secs, j1 / 1e6))
    rss_filled = rss_mb(n.pid)
    rep.raw["history_fill"] = {"runs": done, "seconds": secs, "journal_bytes": j1,
                               "stopped_early": stopped}
    # Bytes per run and per transition from the fill (row 4 reuses them).
    tr = m1.get("apollo11_journal_transitions_total", 0) - m0.get(
        "apollo11_journal_transitions_total", 0)
    rep.raw["history_bytes"] = {"per_run": (j1 - j0) / max(done, 1),
                                "per_transition": (j1 - j0) / max(tr, 1), "transitions": tr}
    h = n.http()
    # Time window: the middle half of the fill, by creation time.
    first, _ = walk_runs(h, {"limit": "1"}, max_pages=1)
    newest = parse_ts(first[0]["created_at"])
    span = secs
    since, until = utc(newest - span * 0.75), utc(newest - span * 0.25)
    filters = [
        ("pipeline (1 of %d, interleaved)" % len(names), {"pipeline": names[len(names) // 2]}),
        ("pipeline hist.old (%d runs, the oldest)" % n_old, {"pipeline": "hist.old"}),
        ("state=SUCCESS", {"state": "SUCCESS"}),
        ("state=FAILED (sparse, %.1f%%)" % 0.5, {"state": "FAILED"}),
        ("time window", {"since": since, "until": until}),
        ("no filter", {}),
    ]
    page_figs = {}
    for label, params in filters:
        per_rep = []
        for r in range(a.reps):
            time.sleep(1.1)  # read answers are shared for 1 s
            _, times = walk_runs(h, dict(params, limit="50"), max_pages=a.history_pages)
            per_rep.append(times)
        page_figs[label] = per_rep
        allt = [t for ts in per_rep for t in ts]
        log("history pages %s: %d pages, p50 %.1f p99 %.1f max %.1f ms" % (
            label, len(allt), pct(allt, 50), pct(allt, 99), max(allt)))
    rss_paged = rss_mb(n.pid)
    # kill -9 and restart, reps times.
    ready, first_page, rss_restart, rss_restart_1s = [], [], [], []
    for r in range(a.reps):
        n.kill9()
        t = n.start(wait=False)
        ready.append(n.wait_ready(timeout=600) * 1000)
        while True:
            st, _ = n.http(timeout=60).json("GET", "/api/v1/runs?limit=50")
            if st == 200:
                break
            time.sleep(0.0005)
        first_page.append((time.perf_counter() - n.started_at) * 1000)
        rss_restart.append(rss_mb(n.pid))
        time.sleep(1.0)
        rss_restart_1s.append(rss_mb(n.pid))
        del t
    rep.raw["history"] = {"pages": page_figs, "ready_ms": ready, "first_page_ms": first_page,
                          "rss_filled": rss_filled, "rss_paged": rss_paged,
                          "rss_restart": rss_restart, "rss_restart_1s": rss_restart_1s}
    flags = n.flags_note()
    reached = "%d runs%s" % (done, " (fill stopped at --history-fill-seconds)" if stopped else "")
    for label, per_rep in page_figs.items():
        if "hist.old" in label:
            # Until its first run: pages that read 100,000 runs of others each.
            firsts = [ts[0] for ts in per_rep]
            rep.row("History %s: GET /api/v1/runs?limit=50, %s" % (reached, label),
                    "first page %s ms; walk of %d pages: p50 %s, p99 %s, max %s ms" % (
                        spread(firsts), len(per_rep[0]), spread([pct(ts, 50) for ts in per_rep]),
                        spread([pct(ts, 99) for ts in per_rep]),
                        spread([max(ts) for ts in per_rep])),
                    "p99 < 20 ms", median([pct(ts, 99) for ts in per_rep]) < 20, flags)
            continue
        p50s = [pct(ts, 50) for ts in per_rep]
        p99s = [pct(ts, 99) for ts in per_rep]
        mxs = [max(ts) for ts in per_rep]
        rep.row("History %s: GET /api/v1/runs?limit=50, %s" % (reached, label),
                "p50 %s, p99 %s, max %s ms (%d pages a rep)" % (
                    spread(p50s), spread(p99s), spread(mxs), len(per_rep[0])),
                "p99 < 20 ms", median(p99s) < 20, flags)
    rep.row("History %s: node RSS" % reached,
            "%s after the fill; %s after paging; after a kill -9 restart: %s at the first page, "
            "%s 1 s later (last of %d restarts)" % (
                fmt_rss(rss_filled), fmt_rss(rss_paged), fmt_rss(rss_restart[-1]),
                fmt_rss(rss_restart_1s[-1]), len(rss_restart)),
            "< 150 MB", max(rss_filled[0], rss_paged[0], rss_restart_1s[-1][0]) < 150, flags)
    rep.note("history: RssFile counts the journal's pages the node has touched through LMDB's "
             "read-only mmap (page cache the kernel can reclaim); RssAnon is the heap")
    rep.row("History %s: kill -9, restart to /readyz 200 / first page" % reached,
            "%s ms / %s ms" % (spread(ready, "%.0f"), spread(first_page, "%.0f")),
            "serving < 1 s", median(first_page) < 1000, flags)
    rep.note("history: filled %d runs in %.0f s (%.0f runs/s): first %d runs of hist.old, "
             "then rounds in which each of %d pipelines on `* * * * *` is backfilled its next "
             "10,000 minutes at once (max_active_runs: 200 in the YAML), so their runs "
             "interleave; 0.5%% of the runs are hist.fail's (a shell task that exits 1), spread "
             "over the rounds; journal %.0f MB" % (done, secs, done / secs, n_old,
                                                   a.history_pipelines, j1 / 1e6))
    n.stop()


# ================================================================ journal

def mdb_tables(journal_dir):
    """{table: (entries, pages)} of an LMDB journal, plus "(free)" and
    "(used)" pages, from mdb_stat (lmdb-utils); {} without it."""
    tool = shutil.which("mdb_stat")
    if not tool:
        return {}
    r = subprocess.run([tool, "-a", "-e", "-f", journal_dir], capture_output=True, text=True,
                       timeout=120)
    out, name, cur = {}, None, {}
    for line in r.stdout.splitlines():
        line = line.strip()
        if line.startswith("Status of "):
            if name:
                out[name] = (cur.get("Entries", 0), cur.get("Branch pages", 0) +
                             cur.get("Leaf pages", 0) + cur.get("Overflow pages", 0))
            name, cur = line[len("Status of "):], {}
        elif line.startswith("Number of pages used:"):
            out["(used)"] = (0, int(line.split(":")[1]))
        elif line.startswith("Free pages:"):
            out["(free)"] = (0, int(line.split(":")[1]))
        elif ":" in line and name:
            k, _, v = line.partition(":")
            try:
                cur[k] = int(v)
            except ValueError:
                pass
    if name:
        out[name] = (cur.get("Entries", 0), cur.get("Branch pages", 0) +
                     cur.get("Leaf pages", 0) + cur.get("Overflow pages", 0))
    return out


def removed_since(n, offset):
    """Whether the node logged a retention pass that removed runs after
    byte `offset` of its log."""
    n.log.flush()
    with open(os.path.join(n.dir, "node.err"), "rb") as f:
        f.seek(offset)
        return b"retention: removed" in f.read()


def row_journal(ctx, rep):
    a = ctx.args
    have_faketime = os.path.exists(FAKETIME_LIB)
    results = {}
    segments = []  # (clock step in seconds before it, schedule minutes in it)
    week = 7 * 86400
    days = a.journal_days
    left = days * 1440
    step = 0
    while left > 0:
        k = min(left, 7 * 1440)
        segments.append((step, k))
        # The next segment's clock: an hour past a week after this one (so this
        # segment's runs, finished at its start, are older than 7 d).
        step = k * 60 + 3600
        left -= k
    variants = [("--retention 7d", ["--retention", "7d"])]
    if a.journal_control:
        variants.append(("no retention (default)", []))
    for label, flags in variants:
        if not have_faketime:
            break
        n = ctx.node("journal-" + ("ret" if flags else "ctl"), flags=flags)
        offset = 0
        sizes = []
        real0 = time.time()
        for i, (stp, minutes) in enumerate(segments):
            offset += stp
            n.env = {"LD_PRELOAD": FAKETIME_LIB, "FAKETIME": "+%ds" % offset,
                     "DONT_FAKE_MONOTONIC": "1"}
            log_at = os.path.getsize(os.path.join(n.dir, "node.err")) if i else 0
            n.start()
            if i == 0:
                n.register_yaml(TICK % "jrnl.tick")
                j0 = n.journal_bytes()
                m_first = None
            if flags and i > 0:
                # Retention runs at start; wait for its log line.
                t_end = time.monotonic() + 120
                while time.monotonic() < t_end and not removed_since(n, log_at):
                    time.sleep(0.2)
            fake_now = time.time() + offset
            hi = int(fake_now) // 60 * 60 - 120
            lo = hi - (minutes - 1) * 60
            m_a = metrics(n.http_port)
            base = sum(v for k, v in m_a.items() if k.startswith("apollo11_runs_finished_total"))
            h = n.http()
            queued = 0
            t = lo
            while t <= hi:
                to = min(hi, t + 9999 * 60)
                st, body = h.json("POST", "/api/v1/pipelines/jrnl.tick/backfill",
                                  {"from": utc(t), "to": utc(to)})
                if st != 200:
                    raise RuntimeError("backfill: %s %s" % (st, body))
                queued += body["queued"]
                t = to + 60
            done = wait_finished(n, base + queued, time.monotonic() + 900, "journal " + label)
            m_b = metrics(n.http_port)
            if m_first is None:
                m_first = (m_a, m_b, done - base)
            time.sleep(0.5)
            page, _ = walk_runs(h, {"limit": "1000"})
            sizes.append({"sim_day": round(offset / 86400.0 + minutes / 1440.0, 1),
                          "bytes": n.journal_bytes(), "runs_listed": len(page),
                          "queued": queued})
            log("journal %s: segment %d (clock +%.1f d): %d runs queued, journal %.1f MB, "
                "%d runs listed" % (label, i, offset / 86400.0, queued, sizes[-1]["bytes"] / 1e6,
                                    len(page)))
            n.stop()
            sizes[-1]["tables"] = mdb_tables(os.path.join(n.state, "journal"))
        # Bytes per run / transition: the first segment, from registration.
        m_a, m_b, runs1 = m_first
        tr = m_b.get("apollo11_journal_transitions_total", 0) - m_a.get(
            "apollo11_journal_transitions_total", 0)
        results[label] = {"sizes": sizes, "flags": n.flags_note(),
                          "per_run": (sizes[0]["bytes"] - j0) / max(runs1, 1),
                          "per_transition": (sizes[0]["bytes"] - j0) / max(tr, 1),
                          "runs1": runs1, "transitions1": tr,
                          "wall_s": time.time() - real0}
    rep.raw["journal"] = results
    hb = rep.raw.get("history_bytes")
    if hb:
        rep.row("Journal growth (history fill, %d runs of 1 noop task)" %
                rep.raw["history_fill"]["runs"],
                "%.0f bytes a finished run, %.0f bytes a transition (%d transitions)" % (
                    hb["per_run"], hb["per_transition"], hb["transitions"]),
                "(measured, no target)", None, "--api-token-file F")
    if not results:
        rep.row("Journal: --retention 7d over a simulated month", "skipped: %s not found "
                "(apt-get install libfaketime): the node's clock cannot be moved, and "
                "retention counts from a run's finish time, which a backfill makes now" %
                FAKETIME_LIB, "size flat", None)
        return
    for label, r in results.items():
        s = r["sizes"]
        first = r["per_run"]
        rep.row("Journal growth (first simulated week, %d runs)" % r["runs1"],
                "%.0f bytes a finished run, %.0f bytes a transition" % (first,
                                                                        r["per_transition"]),
                "(measured, no target)", None, r["flags"])
        seq = ", ".join("day %.0f: %.1f MB (%d runs listed)" % (x["sim_day"], x["bytes"] / 1e6,
                                                                  x["runs_listed"]) for x in s)
        flat = None
        if "--retention" in r["flags"] and len(s) >= 3:
            # Flat: after the second week, within 10 % of the size after it.
            ref = s[1]["bytes"]
            flat = all(x["bytes"] <= ref * 1.1 for x in s[2:])
        rep.row("Journal size over %d simulated days, %s" % (a.journal_days, label), seq,
                "flat with --retention 7d", flat, r["flags"])
        t0, t1 = s[0].get("tables") or {}, s[-1].get("tables") or {}
        if t0 and t1:
            growth = []
            for name in sorted(set(t0) | set(t1), key=lambda k: -(t1.get(k, (0, 0))[1] -
                                                                  t0.get(k, (0, 0))[1])):
                e0, p0 = t0.get(name, (0, 0))
                e1, p1 = t1.get(name, (0, 0))
                if p1 != p0 or e1 != e0:
                    growth.append("%s %+d pages (%d -> %d entries)" % (name, p1 - p0, e0, e1)
                                  if not name.startswith("(") else "%s %+d pages" % (name, p1 - p0))
            rep.note("journal %s: from day %.0f to day %.0f by LMDB table (mdb_stat, 4 KiB "
                     "pages): %s" % (label, s[0]["sim_day"], s[-1]["sim_day"],
                                     "; ".join(growth[:10])))
    rep.note("journal: each simulated segment restarts the node with its clock moved forward "
             "(libfaketime, FAKETIME=+Ns, DONT_FAKE_MONOTONIC=1; the clock never goes back) by "
             "the previous segment's length + 1 h, then backfills the segment's minutes (one run "
             "per minute, all created and finished at the segment's start). Retention counts a "
             "run's age from its finish time, so without moving the clock a 30-day backfill "
             "finishes every run now and retention would remove nothing. Fire records "
             "(docs/operations.md) and the idempotency keys `schedule:<time>` are not removed "
             "by retention, so they still grow (see the by-table note).")


# ================================================================ celery

def find_celery_python():
    for py in (sys.executable, "/usr/bin/python3"):
        try:
            r = subprocess.run([py, "-c", "import celery, redis; print(celery.__version__)"],
                               capture_output=True, text=True, timeout=60)
        except OSError:
            continue
        if r.returncode == 0:
            return py, r.stdout.strip()
    return None, None


def row_celery(ctx, rep):
    a = ctx.args
    py, version = find_celery_python()
    redis = shutil.which("redis-server")
    if not py or not redis:
        why = []
        if not py:
            why.append("no Python here imports celery and redis (apt-get install -y "
                       "python3-celery python3-redis)")
        if not redis:
            why.append("no redis-server (apt-get install -y redis-server)")
        rep.row("Peer: Celery beat + worker, Redis broker", "skipped: " + "; ".join(why),
                "side by side", None)
        return
    out = os.path.join(ctx.root, "celery.json")
    cmd = [py, os.path.join(HERE, "svc_celery.py"), "--dir", os.path.join(ctx.root, "celery"),
           "--entries", str(a.schedule_every_minute), "--minutes", str(a.schedule_minutes),
           "--submit-seconds", str(a.trigger_seconds), "--clients", str(a.trigger_clients),
           "--reps", str(a.reps), "--out", out]
    log("celery: " + " ".join(cmd))
    p = subprocess.Popen(cmd, start_new_session=True)
    ctx.children.append(p)
    p.wait()
    if p.returncode != 0 or not os.path.exists(out):
        rep.row("Peer: Celery", "failed: svc_celery.py exited %s" % p.returncode, "side by side",
                None)
        return
    with open(out) as f:
        r = json.load(f)
    rep.raw["celery"] = r
    tag = "celery %s, redis-server %s" % (version, r.get("redis_version", "?"))
    if r.get("beat"):
        b = r["beat"]
        rep.row("Peer: Celery beat, %d every-minute entries, %d min (%s)" % (
            a.schedule_every_minute, a.schedule_minutes, tag),
            "%d / %d published; publish lag p50 %s, p99 %s, max %s ms; run on worker lag p99 "
            "%s, max %s ms (%d ran); beat CPU %.1f%%, beat RSS %.1f MB, worker CPU %.1f%%, "
            "redis CPU %.1f%%" % (
                b["published"], b["expected"], fmt_ms(b["pub_p50_ms"]), fmt_ms(b["pub_p99_ms"]),
                fmt_ms(b["pub_max_ms"]), fmt_ms(b["ran_p99_ms"]), fmt_ms(b["ran_max_ms"]),
                b["ran"], b["beat_cpu_pct"], b["beat_rss_mb"], b["worker_cpu_pct"],
                b["redis_cpu_pct"]),
            "(peer) vs schedules rows", None, "celery defaults; worker default concurrency")
    for key, s in sorted(r.get("submit", {}).items(), key=lambda kv: int(kv[0])):
        rate = [x["rate"] for x in s]
        rep.row("Peer: Celery apply_async, %s client%s (%s)" % (key, "s" if key != "1" else "",
                                                               tag),
                "%s calls/s; p50 %s, p99 %s, max %s ms; errors %s; client CPU %s%% "
                "(all procs); %d s each" % (
                    spread(rate, "%.0f"), spread([x["p50_ms"] for x in s]),
                    spread([x["p99_ms"] for x in s]), spread([x["max_ms"] for x in s]),
                    sum(x["errors"] for x in s), spread([x["client_cpu_pct"] for x in s], "%.0f"),
                    a.trigger_seconds),
                "(peer) vs HTTP triggers rows", None, "a worker consuming meanwhile")


# ================================================================ main

ROWS = {"idle": row_idle, "triggers": row_triggers, "schedules": row_schedules,
        "history": row_history, "journal": row_journal, "celery": row_celery}
ORDER = ["idle", "triggers", "history", "journal", "schedules", "celery"]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--bin", required=True,
                   help="directory holding apollo11 and apollo11-node (copy them out of a "
                        "build tree that others rebuild)")
    p.add_argument("--rows", default=",".join(ORDER), help="comma-separated, of: " +
                   ", ".join(ORDER))
    p.add_argument("--out", help="write the markdown table here")
    p.add_argument("--json", help="write the raw figures here")
    p.add_argument("--reps", type=int, default=3, help="repetitions of the short rows (3)")
    p.add_argument("--trigger-seconds", type=float, default=10,
                   help="each trigger measurement (issue: 300; default 10)")
    p.add_argument("--trigger-clients", type=int, default=16, help="the many-client case (16)")
    p.add_argument("--schedule-pipelines", type=int, default=10000)
    p.add_argument("--schedule-every-minute", type=int, default=2000,
                   help="pipelines on * * * * * among them; also Celery beat's entries")
    p.add_argument("--schedule-minutes", type=int, default=3,
                   help="due minutes observed (issue: 30; default 3)")
    p.add_argument("--history-runs", type=int, default=1000000)
    p.add_argument("--history-pipelines", type=int, default=10)
    p.add_argument("--history-fill-seconds", type=float, default=1800,
                   help="stop backfilling after this long and report what was reached")
    p.add_argument("--history-pages", type=int, default=100,
                   help="pages of 50 walked per filter and rep")
    p.add_argument("--journal-days", type=int, default=30,
                   help="simulated days of per-minute runs (30: 43,200 runs)")
    p.add_argument("--journal-control", action=argparse.BooleanOptionalAction, default=True,
                   help="also the same month without --retention")
    p.add_argument("--cold-starts", type=int, default=10)
    p.add_argument("--idle-seconds", type=float, default=5)
    p.add_argument("--tmp", default=None, help="where state dirs go (default $TMPDIR)")
    p.add_argument("--keep", action="store_true", help="keep the state dirs")
    args = p.parse_args(argv)
    for b in ("apollo11", "apollo11-node"):
        if not os.access(os.path.join(args.bin, b), os.X_OK):
            p.error("%s not found in --bin %s" % (b, args.bin))
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    for r in rows:
        if r not in ROWS:
            p.error("unknown row %r" % r)
    ctx = Ctx(args)
    rep = Report()
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load0 = loadavg()

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    try:
        for r in [x for x in ORDER if x in rows]:
            log("row %s (load %s)" % (r, loadavg()))
            try:
                ROWS[r](ctx, rep)
            except (RuntimeError, OSError, KeyError, ValueError) as e:
                rep.row(r, "failed: %s" % str(e)[:400], "", False)
    finally:
        ctx.cleanup()
    version = subprocess.run([os.path.join(args.bin, "apollo11-node"), "--version"],
                             capture_output=True, text=True).stdout.strip()
    meta = {"started": started, "ended": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
            "load at start": load0, "load at end": loadavg(), "cores": os.cpu_count(),
            "apollo11-node": version, "command": " ".join([os.path.basename(sys.argv[0])] + argv)}
    md = rep.markdown(meta)
    if args.out:
        with open(args.out, "w") as f:
            f.write(md)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"meta": meta, "raw": rep.raw}, f, default=str)
    print()
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
