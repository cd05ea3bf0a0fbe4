#!/usr/bin/env python3
"""HA with the journal replicated (docs/ha.md, "Replication"), against the
real 3-member etcd of the etcd_cluster fixture: two `apollo11-node
--role=coordinator --ha-etcd --replication-bind` processes and two workers
given both coordinators, all separate processes.

  ha_replication_test.py APOLLO11_BIN_DIR ETCD_STATE CASE

CASE:
  failover  kill -9 the leader in the middle of a 300-task pipeline whose
            tasks append "EXEC_ID ATTEMPT TASK" to a ledger: the standby
            leads within 2 x the lease TTL, the run ends SUCCESS on it, no
            task reaches SUCCESS twice in the journal, no (exec, attempt)
            line is in the ledger twice, and a task that ran more than once
            has the retry or requeue in its journal history.
  rejoin    SIGSTOP the leader past its lease while a pipeline runs; the
            standby takes over and finishes it; on SIGCONT the old leader
            stands down, rejoins as a standby and catches up: both journals
            give the same `history --json` for every run.
  double    two failures in a row: kill -9 the standby, let the leader go on
            (the standby leaves the in-sync set), kill -9 the leader, restart
            the standby: it must not lead (it lacks what the leader
            released); restart the old leader: it leads, the run ends with
            nothing done twice, the standby catches up and is in sync again,
            and a kill -9 of the leader now fails over to it.
  quorum    SIGSTOP two of the three etcd members while a pipeline runs: the
            leader stands down within its lease and nothing more is started
            (the ledger stops growing); SIGCONT: a leader is elected and the
            run ends with nothing done twice.
  audit     every changing action through each transport (the CLI over
            ZeroMQ, the HTTP API with an operator's and an admin's API
            token, a refusal among them) shows up once in `apollo11 audit
            --json` with its principal, on the leader; GET /api/audit is
            the admin's alone; after a kill -9 of the leader the standby
            that takes over lists the same records.
"""
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ha_cluster_test import (TTL, Coordinator, check, etcd_leader, free_port,  # noqa: E402
                             one_leader, read_state, wait_decisions, wait_for)

TASKS = 300
# Heartbeats every 100 ms keep the failovers fast; a worker or coordinator is
# taken for silent after LIVENESS of them. At 3 (400 ms), an ASan coordinator
# on a busy 2-core machine paused that long: its workers left for the standby
# and came back, and each return requeued what they ran until tasks used up
# their requeues and the run FAILED. 8 keeps the failover within a second.
LIVENESS = "8"


def pipeline(path, ledger, name):
    """TASKS shell tasks in layers of 30, each after one of the layer before."""
    lines = ['version: "1.0"', f"name: test.{name}", "pipeline:"]
    width = 30
    for i in range(TASKS):
        lines += [f"  - id: t{i}", "    type: shell",
                  f'    command: "echo $APOLLO11_EXECUTION_ID $APOLLO11_ATTEMPT '
                  f'$APOLLO11_TASK_ID >> {ledger}"']
        if i >= width:
            lines.append(f"    depends_on: [t{i - width + (i * 7) % width}]")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Cluster:
    def __init__(self, bin_dir, etcd, root, election, extra=()):
        self.bin_dir = bin_dir
        self.root = root
        self.etcd = etcd
        self.election = election
        self.cs = []
        for name in ("c1", "c2"):
            rep = f"tcp://127.0.0.1:{free_port()}"
            self.cs.append(Coordinator(bin_dir, etcd, root, name, election,
                                       ["--replication-bind", rep, "--insecure", "--replication-timeout",
                                        "2s", "--liveness", LIVENESS, *extra]))
        self.workers = []
        connect = ",".join(c.workers for c in self.cs)
        for wid in ("w1", "w2"):
            log = open(os.path.join(root, wid + ".stderr"), "w")
            proc = subprocess.Popen(
                [os.path.join(bin_dir, "apollo11-node"), "start", "--role=worker",
                 "--connect", connect, "--worker-id", wid, "--slots", "4",
                 "--heartbeat", "100ms", "--liveness", LIVENESS,
                 "--state-dir", os.path.join(root, wid),
                 "--http-bind", "off", "--health-interval", "200ms"],
                stdout=subprocess.DEVNULL, stderr=log)
            self.workers.append((proc, log))

    def cli(self, *args, coordinator=None, timeout=120):
        target = coordinator or ",".join(c.api for c in self.cs)
        r = subprocess.run([os.path.join(self.bin_dir, "apollo11"), *args,
                            "--coordinator", target],
                           capture_output=True, text=True, timeout=timeout)
        return r

    def local(self, state, *args):
        r = subprocess.run([os.path.join(self.bin_dir, "apollo11"), *args, "--json",
                            "--state-dir", state], capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise AssertionError(f"apollo11 {' '.join(args)} --state-dir {state}: {r.stderr}")
        return json.loads(r.stdout)

    def submit(self, name):
        ledger = os.path.join(self.root, name + ".ledger")
        path = os.path.join(self.root, name + ".yaml")
        pipeline(path, ledger, name)
        r = self.cli("submit", path)
        check(r.returncode == 0, f"submitted {name}: {r.stderr.strip()}")
        return r.stdout.strip().splitlines()[0], ledger

    def succeeded(self, run_id, coordinator=None, answer_within=None, errors=None):
        """SUCCESS tasks of the run, -1 when the status query failed (its
        stderr appended to `errors` if given); `answer_within` (s) replaces
        the CLI's 10 s wait for an answer."""
        wait = ["--timeout", str(answer_within)] if answer_within else []
        r = self.cli("status", run_id, "--json", *wait, coordinator=coordinator,
                     timeout=30 + (answer_within or 0))
        if r.returncode != 0:
            if errors is not None:
                errors.append(r.stderr.strip())
            return -1
        tasks = json.loads(r.stdout).get("tasks", {})
        return sum(1 for t in tasks.values() if t.get("state") == "SUCCESS")

    def idle_lines(self):
        """Per worker, its health lines (one every 200 ms) that report nothing
        running and nothing queued."""
        out = {}
        for wid in ("w1", "w2"):
            out[wid] = 0
            for line in open(os.path.join(self.root, wid + ".stderr")):
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                out[wid] += (e.get("event") == "health" and e.get("running") == 0 and
                             e.get("queued") == 0)
        return out

    def wait_idle(self, what, more=1):
        """Waits until each worker has logged `more` idle health lines after
        the call: whatever it had been sent before has run by the first."""
        start = self.idle_lines()
        wait_for(what, lambda: all(n >= start[w] + more for w, n in self.idle_lines().items()),
                 10 + more)

    def stop(self):
        for proc, log in self.workers:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            log.close()
        for c in self.cs:
            c.stop()


def check_run(cl, run_id, ledger, coordinator):
    """The run ended SUCCESS with nothing done twice (see the module doc)."""
    done = cl.cli("status", run_id, "--wait", "--json", coordinator=coordinator, timeout=120)
    check(done.returncode == 0, f"the run finished: {done.stderr.strip()}")
    status = json.loads(done.stdout)
    check(status["state"] == "SUCCESS", f"the run ended {status['state']}")
    r = cl.cli("history", run_id, "--json", coordinator=coordinator)
    check(r.returncode == 0, "history answered: " + r.stderr.strip())
    history = json.loads(r.stdout)
    successes = collections.Counter(t["task_id"] for t in history if t.get("to") == "SUCCESS")
    check(len(successes) == TASKS and max(successes.values()) == 1,
          f"every one of {TASKS} tasks reached SUCCESS exactly once in the journal")
    lines = [tuple(line.split()) for line in open(ledger) if line.strip()]
    pairs = collections.Counter((exec_id, attempt) for exec_id, attempt, _ in lines)
    check(max(pairs.values()) == 1, "no (execution, attempt) ran twice in the ledger")
    runs = collections.Counter(task for _, _, task in lines)
    check(set(runs) == set(successes), "every task ran")
    for task, n in runs.items():
        if n == 1:
            continue
        mine = [t for t in history if t["task_id"] == task]
        explained = [t for t in mine if t.get("to") in ("RETRYING", "READY", "PENDING") and
                     t.get("from") in ("RUNNING", "TIMEOUT", "FAILED", "RETRYING")]
        check(explained, f"task {task} ran {n} times and its history says why: "
              + "; ".join(f"{t.get('from')}->{t.get('to')} {t.get('reason')}" for t in mine))
    return history


def in_sync(c):
    """The leader's in-sync set as /api/cluster gives it ([] when unknown)."""
    try:
        return json.loads(c.get("/api/cluster")[1] or "{}").get("in_sync") or []
    except ValueError:
        return []


def case_failover(cl):
    leader = wait_for("one leader", lambda: one_leader(cl.cs), 20)
    standby = next(c for c in cl.cs if c is not leader)
    # Only a standby in sync may take over (a fresh one catches up first).
    wait_for("the standby in sync", lambda: standby.name in in_sync(leader), 15)
    run_id, ledger = cl.submit("failover")
    wait_for("a third of the tasks done", lambda: cl.succeeded(run_id) >= TASKS // 3, 60)
    before = cl.succeeded(run_id, leader.api)
    epoch = leader.health()["epoch"]
    killed = time.monotonic()
    leader.proc.kill()
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    took = time.monotonic() - killed
    check(took <= 2 * TTL, f"the standby leads {took:.2f}s after kill -9 (<= 2 x TTL {TTL}s)")
    check(standby.health()["epoch"] > epoch, "in a newer epoch")
    # Sync replication: what the old leader released, the new one has.
    now = cl.succeeded(run_id, standby.api)
    check(now >= before, f"the new leader knows every SUCCESS the old one had ({now} >= {before})")
    check_run(cl, run_id, ledger, standby.api)


def same_histories(cl, a, b):
    runs = cl.local(a.state, "runs", "--limit", "1000")
    check(len(runs) == len(cl.local(b.state, "runs", "--limit", "1000")),
          f"both journals hold {len(runs)} runs")
    for r in runs:
        if cl.local(a.state, "history", r["run_id"]) != cl.local(b.state, "history", r["run_id"]):
            return False
    return True


def case_rejoin(cl):
    leader = wait_for("one leader", lambda: one_leader(cl.cs), 20)
    standby = next(c for c in cl.cs if c is not leader)
    run_id, ledger = cl.submit("rejoin")
    wait_for("some tasks done", lambda: cl.succeeded(run_id) >= 30, 60)
    wait_for("the standby in sync", lambda: standby.name in in_sync(leader), 15)
    leader.proc.send_signal(signal.SIGSTOP)
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    check_run(cl, run_id, ledger, standby.api)
    leader.proc.send_signal(signal.SIGCONT)
    # Its lease ran out while it was stopped: the very first answer after
    # SIGCONT says standby (its act-until deadline has passed; no etcd call
    # needs to come back first).
    first = wait_for("the old leader to answer", leader.health, 5)
    check(first["role"] == "standby",
          f"the old leader stands down on SIGCONT (first answer: {first})")

    def follows():
        h = json.loads(leader.get("/api/cluster")[1] or "{}")
        return (h.get("self") or {}).get("replication_lag_seq") is not None
    wait_for("the old leader to follow the new one", follows, 10)
    # Then it follows the new leader and catches up to the same journal.
    second, ledger2 = cl.submit("rejoin2")
    check_run(cl, second, ledger2, standby.api)

    def caught_up():
        h = json.loads(standby.get("/api/cluster")[1] or "{}")
        lags = [c.get("replication_lag_seq") for c in h.get("coordinators", [])
                if c.get("name") == leader.name]
        return lags == [0]
    wait_for("the old leader to catch up", caught_up, 30)
    check(same_histories(cl, standby, leader),
          "the old leader's journal gives the same history as the new leader's for every run")
    log = open(os.path.join(cl.root, leader.name + ".stderr")).read()
    check("follows" in log, "the old leader logged that it follows the new one")


def queries_meanwhile(cl, run_id, api, seconds):
    """Status queries to `api`, one started every 50 ms for `seconds`, each
    in its own CLI process: [(seconds it took, SUCCESS count or -1, seconds
    after the first it began, the CLI's stderr if it failed)]."""
    answers = []
    first = time.monotonic()

    def one():
        began = time.monotonic()
        errors = []
        n = cl.succeeded(run_id, api, answer_within=25, errors=errors)
        answers.append((round(time.monotonic() - began, 2), n, round(began - first, 2), *errors))

    threads = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        threads.append(threading.Thread(target=one))
        threads[-1].start()
        time.sleep(0.05)
    for t in threads:
        t.join()
    return answers


def case_double(cl):
    leader = wait_for("one leader", lambda: one_leader(cl.cs), 20)
    standby = next(c for c in cl.cs if c is not leader)
    wait_for("the standby in sync", lambda: standby.name in in_sync(leader), 15)
    standby.proc.kill()
    standby.proc.wait()
    run_id, ledger = cl.submit("double")
    wait_for("a third of the tasks done",
             lambda: cl.succeeded(run_id, leader.api) >= TASKS // 3, 60)
    check(standby.name not in in_sync(leader), "the killed standby left the in-sync set")
    before = cl.succeeded(run_id, leader.api)
    leader.proc.kill()
    leader.proc.wait()
    standby.start()  # behind the leader, which is down
    wait_for("the restarted standby to answer", lambda: standby.role() == "standby", 20)
    # Once the dead leader's key is gone from etcd, nothing but the in-sync
    # record keeps the standby from winning: two decisions after that, it
    # would lead.
    wait_for("the dead leader's election key to expire",
             lambda: etcd_leader(cl.etcd, cl.election) is None, 4 * TTL)
    wait_decisions([standby], "two more decisions of the standby's elector", 20)
    check(standby.role() == "standby", "a standby that lacks released batches does not lead")
    cluster = json.loads(standby.get("/api/cluster")[1] or "{}")
    check(cluster.get("self", {}).get("eligible") is False, "/api/cluster says it may not lead")
    cl.wait_idle("both workers idle (what was sent before the kill has run)")
    lines = len(open(ledger).readlines())
    # Two more idle health lines of each worker, and two more decisions of
    # the standby's elector: a leader, had one been elected, would have
    # dispatched, and a worker run what came.
    wait_decisions([standby], "two more decisions of the standby's elector", 20)
    cl.wait_idle("two more idle health lines of each worker", more=2)
    check(len(open(ledger).readlines()) == lines, "nothing is started without a leader")
    log = open(os.path.join(cl.root, standby.name + ".stderr")).read()
    check("not campaigning" in log, "the standby logged why it does not campaign")
    leader.start()
    # Queries sent while it starts, is elected and restarts its actors as
    # leader: each is answered (one lost with a connection is asked again)
    # with every SUCCESS. A lost one used to wait out the CLI's timeout and
    # fail; how long an answer takes is the node's start and restart (8.3 s
    # under ASan on a busy machine), so each query may wait 25 s and the
    # time is reported only.
    answers = queries_meanwhile(cl, run_id, leader.api, seconds=2.5)
    lost = [a for a in answers if a[1] < before]
    slowest = max((a[0] for a in answers), default=0)
    check(not lost, f"{len(answers)} status queries during the restart as leader were all "
          f"answered with every SUCCESS, the slowest in {slowest} s (failed or short: {lost})")
    wait_for("the old leader to lead again", lambda: leader.role() == "leader", 30)
    now = cl.succeeded(run_id, leader.api)
    check(now >= before, f"it has every SUCCESS it had ({now} >= {before})")
    check_run(cl, run_id, ledger, leader.api)
    wait_for("the standby in sync again", lambda: standby.name in in_sync(leader), 30)
    # One failure now: the standby that caught up takes over.
    leader.proc.kill()
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    second, ledger2 = cl.submit("double2")
    check_run(cl, second, ledger2, standby.api)


def case_quorum(cl, etcd_pids):
    leader = wait_for("one leader", lambda: one_leader(cl.cs), 20)
    run_id, ledger = cl.submit("quorum")
    wait_for("some tasks done", lambda: cl.succeeded(run_id) >= 30, 60)
    paused = etcd_pids[1:]
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        cut = time.monotonic()
        wait_for("the leader to stand down", lambda: leader.role() == "standby", 2 * TTL)
        took = time.monotonic() - cut
        check(took <= TTL + 0.5, f"the leader stood down {took:.2f}s after etcd lost quorum")
        # What was running ends; its result waits in the worker.
        cl.wait_idle("both workers idle (what was sent before the stand-down has run)")
        lines = len(open(ledger).readlines())
        # Two more decisions of each elector and two more idle health lines
        # of each worker: a leader, had one been elected, would have
        # dispatched, and a worker run what came.
        wait_decisions(cl.cs, "two more elector decisions on each coordinator", 30)
        cl.wait_idle("two more idle health lines of each worker", more=2)
        check(len(open(ledger).readlines()) == lines, "nothing is started without a leader")
        check(all(c.role() == "standby" for c in cl.cs), "nobody leads without a quorum")
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
    new = wait_for("a leader again", lambda: one_leader(cl.cs), 30)
    check_run(cl, run_id, ledger, new.api)


def make_tokens(bin_dir, root):
    """A tokens file with alice (operator) and root (admin); their tokens."""
    path = os.path.join(root, "tokens")
    tokens = {}
    for name, role in (("alice", "operator"), ("root", "admin")):
        r = subprocess.run([os.path.join(bin_dir, "apollo11"), "token", "create", name, role,
                            "--append", path], capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, f"token create {name}: {r.stderr.strip()}")
        tokens[name] = r.stdout.strip()
    return path, tokens


def http(c, method, path, token, body=None):
    """(status, parsed JSON or text) of an HTTP request to coordinator c;
    a str body is sent as it is, anything else as JSON."""
    data = body.encode() if isinstance(body, str) else (
        json.dumps(body).encode() if body is not None else None)
    if method == "POST" and data is None:
        data = b"{}"
    req = urllib.request.Request(f"http://{c.http}{path}", data=data, method=method,
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            status = r.status
    except urllib.error.HTTPError as e:
        text = e.read().decode()
        status = e.code
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def audit_records(cl, c):
    r = cl.cli("audit", "--json", "--limit", "1000", coordinator=c.api)
    check(r.returncode == 0, f"apollo11 audit answered on {c.name}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def case_audit(cl, tokens):
    leader = wait_for("one leader", lambda: one_leader(cl.cs), 20)
    standby = next(c for c in cl.cs if c is not leader)

    def synced():  # /api/cluster, as in_sync reads it, with a token: anonymous may not read
        status, body = http(leader, "GET", "/api/cluster", tokens["alice"])
        return status == 200 and standby.name in (body.get("in_sync") or [])
    wait_for("the standby in sync", synced, 15)
    # The CLI over ZeroMQ (no CURVE here: its principal is "anonymous"):
    # a submission, then its cancel.
    slow = os.path.join(cl.root, "slow.yaml")
    with open(slow, "w") as f:
        f.write('version: "1.0"\nname: test.slow\npipeline:\n'
                '  - id: wait\n    type: shell\n    command: "sleep 30"\n')
    r = cl.cli("submit", slow, coordinator=leader.api)
    check(r.returncode == 0, f"submitted: {r.stderr.strip()}")
    slow_run = r.stdout.strip().splitlines()[0]
    r = cl.cli("cancel", slow_run, coordinator=leader.api)
    check(r.returncode == 0, f"canceled: {r.stderr.strip()}")
    # The HTTP API: root registers, alice operates, alice may not register.
    yaml_text = ('version: "1.0"\nname: team.audited\npipeline:\n'
                 '  - id: hold\n    type: shell\n    command: "sleep 30"\n')
    status, _ = http(leader, "POST", "/api/pipelines", tokens["root"], yaml_text)
    check(status == 201, f"root registered a pipeline ({status})")
    status, run = http(leader, "POST", "/api/pipelines/team.audited/runs", tokens["alice"], {})
    check(status in (200, 201), f"alice triggered it ({status} {run})")
    triggered = run["run_id"]
    for op in ("pause", "unpause"):
        status, body = http(leader, "POST", f"/api/pipelines/team.audited/{op}", tokens["alice"])
        check(status == 200, f"alice: {op} ({status} {body})")
    status, body = http(leader, "POST", f"/api/runs/{triggered}/cancel", tokens["alice"])
    check(status == 202, f"alice canceled the triggered run ({status} {body})")
    status, body = http(leader, "POST", f"/api/runs/{slow_run}/rerun", tokens["alice"],
                        {"failed": True})
    check(status == 201 or status == 400, f"alice asked for a rerun ({status} {body})")
    rerun_refused = status != 201
    status, body = http(leader, "POST", "/api/runs/r-none/rerun", tokens["alice"])
    check(status == 404, f"a rerun of no run is refused ({status} {body})")

    expected = {("anonymous", "submit"), ("anonymous", "cancel"), ("root", "register"),
                ("alice", "trigger"), ("alice", "pause"), ("alice", "unpause"),
                ("alice", "cancel"), ("alice", "rerun")}
    records = wait_for("the records on the leader",
                       lambda: [x for x in audit_records(cl, leader)] or None, 10)
    seen = collections.Counter((x["principal"], x["action"]) for x in records)
    for key in expected:
        want = 2 if key == ("alice", "rerun") else 1
        check(seen[key] == want, f"{key} is audited {want} time(s): {dict(seen)}")
    by_action = {(x["principal"], x["action"], x["target"]): x for x in records}
    c = by_action[("alice", "cancel", triggered)]
    check(c["transport"] == "http" and c["role"] == "operator" and c["ok"],
          f"alice's cancel names the HTTP API and her role: {c}")
    check(c["source"] == "127.0.0.1 via a link without CURVE", f"and her address: {c['source']}")
    check(by_action[("alice", "rerun", "r-none")]["ok"] is False, "the refused rerun says so")
    if rerun_refused:
        check(by_action[("alice", "rerun", slow_run)]["ok"] is False, "so does the other")
    check(by_action[("anonymous", "submit", next(
        x["target"] for x in records if x["action"] == "submit"))]["outcome"] == f"run {slow_run}",
        "the submission's outcome names its run")
    # The cancel's history line names alice.
    r = cl.cli("history", triggered, "--json", coordinator=leader.api)
    check(any(t.get("actor") == "http:alice" for t in json.loads(r.stdout)),
          "the triggered run's history names http:alice")
    # GET /api/audit: the admin's alone.
    status, _ = http(leader, "GET", "/api/audit", tokens["alice"])
    check(status == 403, f"alice may not read the audit trail ({status})")
    status, body = http(leader, "GET", "/api/audit?principal=alice&limit=100", tokens["root"])
    check(status == 200 and len(body["records"]) == sum(
        n for (p, _), n in seen.items() if p == "alice"), f"root reads alice's records ({status})")

    # kill -9 the leader: the standby that takes over lists the same records.
    ids = sorted(x["request_id"] for x in records)
    leader.proc.kill()
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    after = audit_records(cl, standby)
    check(sorted(x["request_id"] for x in after if x["request_id"] in ids) == ids,
          f"the new leader lists the {len(ids)} records the old one had")
    check(len(set(x["id"] for x in after)) == len(after), "each once")


def main():
    bin_dir, state_file, case = sys.argv[1], sys.argv[2], sys.argv[3]
    state = read_state(state_file)
    root = tempfile.mkdtemp(prefix="apollo11-ha-rep-")
    election = f"apollo11-test/rep-{case}-{os.getpid()}"
    cl = None
    try:
        if case == "audit":
            tokens_file, tokens = make_tokens(bin_dir, root)
            cl = Cluster(bin_dir, state["ETCD_ENDPOINTS"], root, election,
                         ["--api-tokens", tokens_file])
            case_audit(cl, tokens)
            return 0
        cl = Cluster(bin_dir, state["ETCD_ENDPOINTS"], root, election)
        if case == "quorum":
            case_quorum(cl, [int(p) for p in state["ETCD_PIDS"].split()])
        else:
            {"failover": case_failover, "rejoin": case_rejoin,
             "double": case_double}[case](cl)
    except AssertionError as e:
        print("FAILED:", e)
        for name in ("c1", "c2", "w1", "w2"):
            path = os.path.join(root, name + ".stderr")
            if os.path.exists(path):
                print(f"--- {name} stderr (last lines, health lines left out)")
                lines = [line for line in open(path) if '"event":"health"' not in line]
                print("".join(lines[-20:]))
        return 1
    finally:
        if cl:
            cl.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
