#!/usr/bin/env python3
"""Multi-process HA tests against the real 3-member etcd of the etcd_cluster
fixture: two `apollo11-node --role=coordinator --ha-etcd` processes. They test
the election alone, so they do not replicate the journal and say so with
--ha-without-replication (ha_replication_test.py replicates).

  ha_cluster_test.py APOLLO11_BIN_DIR ETCD_STATE CASE

CASE: elect (two coordinators elect one leader; the standby answers
read-only queries and refuses a submit with "not the leader; the leader is
ENDPOINT", which the CLI follows), kill9 (the standby leads within 2 x TTL of a kill -9), sigstop
(a leader paused past its lease steps down on SIGCONT and never acts in its
old epoch), quorum (etcd quorum paused: the leader steps down within its
lease; back: a leader again), resign (POST /api/cluster/resign hands over,
and `apollo11 cluster resign` as docs/ha.md writes it hands back),
standby_reads (a standby lacking a run, and asked for the workers, answers
with the leader's view), planted (a lease-less key planted under the
election is never followed and is removed; a coordinator leads).
"""
import base64
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from free_ports import free_port  # noqa: E402,F401  (ha_replication_test and bench/failover.py import it from here)

TTL = 2  # --ha-lease, seconds


def read_state(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            out[k] = v.strip('"')
    return out


class Coordinator:
    def __init__(self, bin_dir, etcd, root, name, election, extra=()):
        self.name = name
        self.workers = f"tcp://127.0.0.1:{free_port()}"
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.http = f"127.0.0.1:{free_port()}"
        self.state = os.path.join(root, name)
        self.log = open(os.path.join(root, name + ".stderr"), "w")
        self.argv = [os.path.join(bin_dir, "apollo11-node"), "start", "--role=coordinator",
                     "--state-dir", self.state, "--bind", self.workers, "--api-bind", self.api,
                     "--http-bind", self.http, "--heartbeat", "100ms", "--log-format", "json",
                     "--api-token", "0123456789abcdef-token",
                     "--ha-etcd", etcd, "--ha-name", name, "--ha-election", election,
                     *(["--insecure"] if "--replication-bind" in extra
                       else ["--ha-without-replication"]),
                     *extra]
        self.proc = None
        self.start()

    def start(self):
        """Starts (or, after a kill, restarts) the process on the same state
        dir, endpoints and log."""
        env = dict(os.environ, APOLLO11_HA_LEASE=f"{TTL}s")
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=env)

    def get(self, path, timeout=1.0):
        try:
            with urllib.request.urlopen(f"http://{self.http}{path}", timeout=timeout) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()
        except OSError:
            return None, ""

    def health(self):
        status, body = self.get("/healthz")
        if status != 200:
            return None
        try:
            return json.loads(body)
        except ValueError:
            return None

    def role(self):
        h = self.health()
        return h["role"] if h else None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def wait_for(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def one_leader(cs):
    roles = [c.role() for c in cs]
    if roles.count("leader") == 1 and roles.count("standby") == len(cs) - 1:
        return next(c for c in cs if c.role() == "leader")
    return None


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def metric(c, name):
    """The value of the unlabelled metric `name` on c's /metrics (None when
    absent or not answered)."""
    status, body = c.get("/metrics")
    if status != 200:
        return None
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def wait_decisions(cs, what, timeout):
    """Waits until the HA elector of every coordinator in `cs` has made two
    more decisions (apollo11_ha_elector_steps_total): the first may have been
    under way at the call, the second was wholly after it. What an elector
    would do from what it sees now (campaign, win, lead), it has done then."""
    # A node that is restarting its coordinator (standing down) may not
    # answer one scrape within its 1 s timeout on a loaded machine: the
    # counter must be there, read within a few tries.
    start = {}
    deadline = time.monotonic() + 5
    while True:
        start = {c.name: metric(c, "apollo11_ha_elector_steps_total") for c in cs}
        if all(v is not None for v in start.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(all(v is not None for v in start.values()), f"elector steps are counted: {start}")
    wait_for(what, lambda: all((metric(c, "apollo11_ha_elector_steps_total") or 0) >=
                               start[c.name] + 2 for c in cs), timeout)


def etcd_leader(endpoints, election):
    """The leader key of `election` as etcd gives it (its kv), None when
    there is none."""
    body = json.dumps({"name": base64.b64encode(election.encode()).decode()}).encode()
    errors = []
    for endpoint in endpoints.split(","):
        req = urllib.request.Request(endpoint + "/v3/election/leader", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                doc = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            doc = json.loads(e.read() or b"{}")
        except OSError as e:
            errors.append(f"{endpoint}: {e}")
            continue
        if "election: no leader" in (doc.get("error"), doc.get("message")):
            return None
        if "kv" in doc:
            return doc["kv"]
        errors.append(f"{endpoint}: {doc}")
    raise AssertionError("etcd did not say who leads " + election + ": " + "; ".join(errors))


def case_elect(bin_dir, cs):
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    standby = next(c for c in cs if c is not leader)
    h = wait_for("the standby to learn the leader",
                 lambda: (lambda h: h if h and h.get("leader") else None)(standby.health()), 5)
    check(h["leader"] == leader.name and h["leader_api"] == leader.api,
          "the standby names the leader and its client endpoint")
    check(standby.get("/readyz")[0] == 503, "/readyz is 503 on the standby")
    check(wait_for("leader ready", lambda: leader.get("/readyz")[0] == 200, 10),
          "/readyz is 200 on the leader")
    cluster = json.loads(standby.get("/api/cluster")[1])
    check(cluster["role"] == "standby" and cluster["leader"]["name"] == leader.name,
          "/api/cluster on the standby says who leads")
    metrics = standby.get("/metrics")[1]
    check("apollo11_ha_role 0" in metrics and "apollo11_ha_epoch" in metrics,
          "the standby's metrics say role 0 and the epoch")
    check("apollo11_ha_role 1" in leader.get("/metrics")[1], "the leader's metrics say role 1")
    apollo11 = os.path.join(bin_dir, "apollo11")
    runs = subprocess.run([apollo11, "runs", "--coordinator", standby.api],
                          capture_output=True, text=True, timeout=30)
    check(runs.returncode == 0, "a standby answers read-only queries (runs): " + runs.stderr)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
        f.write('version: "1.0"\nname: demo.ha_elect\npipeline:\n  - id: a\n    type: noop\n')
    # Since issue 36 the CLI follows the standby's refusal to the leader it
    # names (it used to stop there, exit 3): the refusal names the leader's
    # client endpoint (the standby's log says so), and the leader has the run.
    sub = subprocess.run([apollo11, "submit", "--coordinator", standby.api, f.name],
                         capture_output=True, text=True, timeout=30)
    check(sub.returncode == 0, "a submit sent to the standby is followed to the leader: " +
          sub.stderr.strip())
    run_id = sub.stdout.strip()
    on_leader = subprocess.run([apollo11, "status", run_id, "--json", "--coordinator", leader.api],
                               capture_output=True, text=True, timeout=30)
    check(on_leader.returncode == 0 and json.loads(on_leader.stdout)["run_id"] == run_id,
          f"the leader took the run {run_id} the standby was given")
    req = urllib.request.Request(f"http://{standby.http}/api/cluster/resign", method="POST",
                                 headers={"Authorization": "Bearer 0123456789abcdef-token"})
    try:
        urllib.request.urlopen(req, timeout=5)
        refusal = ""
    except urllib.error.HTTPError as e:
        refusal = f"{e.code} {e.read().decode()}"
    check(refusal.startswith("421") and f"not the leader; the leader is {leader.api}" in refusal,
          "a standby refuses what only a leader does, naming the leader: " + refusal)


def case_standby_reads(bin_dir, cs, root):
    """Issue 36: a standby whose journal lacks a run (here: no replication at
    all) never answers "no run"; `workers` and /api/workers on a standby give
    the leader's workers, not "no worker is connected"."""
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    standby = next(c for c in cs if c is not leader)
    wait_for("the standby to learn the leader",
             lambda: (standby.health() or {}).get("leader_api") == leader.api, 5)
    apollo11 = os.path.join(bin_dir, "apollo11")
    worker_log = open(os.path.join(root, "w1.stderr"), "w")
    worker = subprocess.Popen(
        [os.path.join(bin_dir, "apollo11-node"), "start", "--role=worker",
         "--state-dir", os.path.join(root, "w1"), "--worker-id", "w1",
         "--connect", f"{standby.workers},{leader.workers}", "--heartbeat", "100ms"],
        stdout=subprocess.DEVNULL, stderr=worker_log)
    try:
        def cli(*args, coordinator):
            return subprocess.run([apollo11, *args, "--coordinator", coordinator],
                                  capture_output=True, text=True, timeout=30)
        wait_for("the worker to join the leader",
                 lambda: "w1" in cli("workers", "--json", coordinator=leader.api).stdout, 10)
        with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as f:
            f.write('version: "1.0"\nname: demo.ha_reads\npipeline:\n'
                    '  - id: a\n    type: noop\n')
        sub = cli("submit", "--wait", f.name, coordinator=leader.api)
        check(sub.returncode == 0, "a run on the leader: " + sub.stderr.strip())
        run_id = sub.stdout.splitlines()[0].strip()

        status = cli("status", run_id, "--json", coordinator=standby.api)
        check(status.returncode == 0 and json.loads(status.stdout)["state"] == "SUCCESS",
              "`status RUN` sent to a standby that lacks the run is answered by the leader "
              f"(exit {status.returncode}): {status.stderr.strip()}")
        code, body = standby.get(f"/api/runs/{run_id}", timeout=15)
        check(code == 200 and json.loads(body)["run_id"] == run_id,
              f"/api/runs/RUN on the standby gives the leader's answer: {code} {body[:200]}")
        missing = cli("status", "no-such-run", coordinator=standby.api)
        check(missing.returncode != 0 and "no run no-such-run" in missing.stderr,
              "a run nobody has is still unknown, said by the leader: " + missing.stderr.strip())

        workers = cli("workers", "--json", coordinator=standby.api)
        listed = json.loads(workers.stdout) if workers.returncode == 0 else []
        check([w["id"] for w in listed] == ["w1"],
              "`apollo11 workers` sent to the standby lists the leader's workers: " +
              workers.stdout.strip() + workers.stderr.strip())
        code, body = standby.get("/api/workers", timeout=15)
        check(code == 200 and [w["id"] for w in json.loads(body)] == ["w1"],
              f"/api/workers on the standby lists the leader's workers: {code} {body[:200]}")
        # The standby's API still answers what it knows itself from its own
        # coordinator: its cluster view says standby.
        check(json.loads(standby.get("/api/cluster")[1])["role"] == "standby",
              "the standby's own answers stay its own")
    finally:
        worker.terminate()
        try:
            worker.wait(10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        worker_log.close()


def case_kill9(bin_dir, cs):
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    standby = next(c for c in cs if c is not leader)
    epoch = leader.health()["epoch"]
    killed = time.monotonic()
    leader.proc.kill()
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    took = time.monotonic() - killed
    check(took <= 2 * TTL, f"the standby leads {took:.2f}s after kill -9 (<= 2 x TTL)")
    check(standby.health()["epoch"] > epoch, "in a newer epoch")


def case_sigstop(bin_dir, cs):
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    standby = next(c for c in cs if c is not leader)
    old_epoch = leader.health()["epoch"]
    leader.proc.send_signal(signal.SIGSTOP)
    wait_for("the standby to lead", lambda: standby.role() == "leader", 4 * TTL)
    new_epoch = standby.health()["epoch"]
    check(new_epoch > old_epoch, "the standby leads in a newer epoch")
    time.sleep(TTL)
    leader.proc.send_signal(signal.SIGCONT)
    # Its lease ran out while it was stopped: the very first answer after
    # SIGCONT says standby (its act-until deadline has passed; no etcd call
    # needs to come back first).
    first = wait_for("the old leader to answer", leader.health, 5)
    check(first["role"] == "standby",
          f"the old leader stands down at once on SIGCONT (first answer: {first})")
    named = wait_for("the old leader to name the new one",
                     lambda: (lambda h: h if h and h.get("leader") == standby.name else None)(
                         leader.health()), 5)
    check(named["role"] == "standby" and named["leader_api"] == standby.api and
          named["epoch"] == new_epoch,
          f"the old leader names the new one, its endpoint and its epoch {new_epoch}: {named}")
    log = open(os.path.join(os.path.dirname(leader.state), leader.name + ".stderr")).read()
    check("lost the leader lease" in log, "the old leader logged the lost lease")
    check("apollo11_ha_role 0" in leader.get("/metrics")[1], "and reports role 0")
    check(one_leader(cs) is standby, "exactly one leader afterwards")

    # The alert was delivered, not only logged: the old leader's hook got
    # lease_lost, naming why.
    root = os.path.dirname(leader.state)

    def delivered(kind):
        found = []
        for name in os.listdir(root):
            if not name.startswith("alerts-"):
                continue
            for line in open(os.path.join(root, name)):
                if line.strip() and json.loads(line).get("type") == kind:
                    found.append(json.loads(line))
        return found or None
    lost = wait_for("the lease_lost alert delivered by its hook", lambda: delivered("lease_lost"), 10)
    check(lost[0].get("reason"), f"lease_lost delivered with its reason: {lost[0].get('reason')}")
    changed = wait_for("leadership_changed delivered", lambda: delivered("leadership_changed"), 10)
    check(all(a.get("reason") for a in changed),
          f"leadership_changed delivered {len(changed)} times, each with its reason")


def case_quorum(bin_dir, cs, etcd_pids):
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    old_epoch = leader.health()["epoch"]
    # Pause two of the three members: no quorum, no lease renewal.
    paused = etcd_pids[1:]
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        cut = time.monotonic()
        wait_for("the leader to stand down", lambda: leader.role() == "standby", 2 * TTL)
        took = time.monotonic() - cut
        check(took <= TTL + 0.5, f"the leader stood down {took:.2f}s after losing quorum (<= TTL)")
        wait_decisions(cs, "two more elector decisions on each coordinator", 30)
        check(all(c.role() == "standby" for c in cs), "nobody leads without a quorum")
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
    new = wait_for("a leader again", lambda: one_leader(cs), 30)
    epoch = (new.health() or {}).get("epoch", 0)
    check(epoch > old_epoch,
          f"a leader is elected once etcd has its quorum back, in a newer epoch ({epoch} > "
          f"{old_epoch})")


def case_resign(bin_dir, cs):
    leader = wait_for("one leader", lambda: one_leader(cs), 20)
    standby = next(c for c in cs if c is not leader)
    req = urllib.request.Request(f"http://{leader.http}/api/cluster/resign", method="POST",
                                 headers={"Authorization": "Bearer 0123456789abcdef-token"})
    with urllib.request.urlopen(req, timeout=5) as r:
        check(r.status == 202, "resign accepted")
    wait_for("the standby to lead", lambda: standby.role() == "leader", 3 * TTL)
    wait_for("the old leader to be standby", lambda: leader.role() == "standby", 3 * TTL)
    check(one_leader(cs) is standby, "leadership handed over")

    # docs/ha.md's upgrade runbook, as written there: `apollo11 cluster resign
    # --http LEADER:8011 --api-token T`, then `apollo11 cluster --http
    # STANDBY:8011` says it leads (issue 36: the first was a parse error).
    apollo11 = os.path.join(bin_dir, "apollo11")
    leader, standby = standby, leader
    refused = subprocess.run([apollo11, "cluster", "resign", "--http", standby.http,
                              "--api-token", "0123456789abcdef-token"],
                             capture_output=True, text=True, timeout=30)
    check(refused.returncode == 2 and "not the leader" in refused.stderr,
          "a standby refuses resign, naming the leader: " + refused.stderr.strip())
    resign = subprocess.run([apollo11, "cluster", "resign", "--http", leader.http,
                             "--api-token", "0123456789abcdef-token"],
                            capture_output=True, text=True, timeout=30)
    check(resign.returncode == 0 and "resign requested" in resign.stdout,
          "`apollo11 cluster resign --http LEADER --api-token T` as docs/ha.md writes it: " +
          resign.stdout.strip() + resign.stderr.strip())

    def says_it_leads():
        shown = subprocess.run([apollo11, "cluster", "--http", standby.http],
                               capture_output=True, text=True, timeout=30)
        return shown if shown.returncode == 0 and ", leader\n" in shown.stdout else None
    shown = wait_for("`apollo11 cluster --http STANDBY` to say it leads", says_it_leads, 3 * TTL)
    check(f"this node: {standby.name} " in shown.stdout,
          "`apollo11 cluster --http STANDBY` says it leads: " + shown.stdout.splitlines()[0])
    wait_for("the old leader to be standby", lambda: leader.role() == "standby", 3 * TTL)
    # `apollo11 cluster` says "leader" from the election on; /healthz only
    # once the coordinator restarted as leader.
    wait_for("one leader, the old one", lambda: one_leader(cs) is standby, 3 * TTL)
    check(one_leader(cs) is standby, "leadership handed back")


def etcd_put(endpoints, key, value):
    """Puts key = value with no lease, as anyone with write access to etcd
    could; returns the key's create revision."""
    body = json.dumps({"key": base64.b64encode(key.encode()).decode(),
                       "value": base64.b64encode(value.encode()).decode()}).encode()
    endpoint = endpoints.split(",")[0]
    req = urllib.request.Request(endpoint + "/v3/kv/put", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=2) as r:
        return int(json.loads(r.read())["header"]["revision"])


def etcd_get(endpoints, key):
    """The kv of `key` (a linearizable read), None when it does not exist."""
    body = json.dumps({"key": base64.b64encode(key.encode()).decode()}).encode()
    req = urllib.request.Request(endpoints.split(",")[0] + "/v3/kv/range", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=2) as r:
        kvs = json.loads(r.read()).get("kvs") or []
    return kvs[0] if kvs else None


def plant(etcd, election):
    """A key without a lease under the election prefix, shaped as a
    coordinator's record naming an endpoint nobody runs, put before any
    coordinator campaigns: first in line, and it would never expire."""
    evil = json.dumps({"name": "evil", "worker": "tcp://127.0.0.1:9",
                       "client": "tcp://127.0.0.1:9", "replication": ""})
    return etcd_put(etcd, election + "/planted", evil)


def case_planted(bin_dir, cs, etcd, election, root, planted_rev):
    """The planted key (plant) is never followed: no /healthz names it, its
    revision is no epoch; it is removed, logged and alerted, and a real
    coordinator leads."""
    seen = []

    def led_by_a_coordinator():
        for c in cs:
            h = c.health()
            if h:
                seen.append((h.get("leader"), h.get("epoch")))
        return one_leader(cs)
    wait_for("a coordinator to lead past the planted key", led_by_a_coordinator, 4 * TTL)
    check(all(name != "evil" and epoch != planted_rev for name, epoch in seen),
          f"no coordinator named the planted key as leader or took its epoch: {set(seen)}")
    check(etcd_get(etcd, election + "/planted") is None, "the planted key is gone from etcd")
    kv = etcd_leader(etcd, election)
    check(kv is not None and int(kv.get("lease", 0)) != 0, "etcd's leader is a leased key")
    logs = "".join(open(os.path.join(root, c.name + ".stderr")).read() for c in cs)
    check(f"{election}/planted (create revision {planted_rev})" in logs and
          "has no lease" in logs and "removed it" in logs,
          "a coordinator logged the planted key, why it is no coordinator's and its removal")

    def delivered():
        for name in os.listdir(root):
            if name.startswith("alerts-"):
                for line in open(os.path.join(root, name)):
                    if line.strip() and json.loads(line).get("type") == "election_key_refused":
                        return json.loads(line)
        return None
    alert = wait_for("the election_key_refused alert delivered by its hook", delivered, 10)
    check("planted" in alert.get("reason", ""), f"the alert names the key: {alert.get('reason')}")


def main():
    bin_dir, state_file, case = sys.argv[1], sys.argv[2], sys.argv[3]
    state = read_state(state_file)
    etcd = state["ETCD_ENDPOINTS"]
    etcd_pids = [int(p) for p in state["ETCD_PIDS"].split()]
    root = tempfile.mkdtemp(prefix="apollo11-ha-")
    election = f"apollo11-test/{case}-{os.getpid()}"
    cs = []
    try:
        extra = []
        if case in ("sigstop", "planted"):
            # The lease_lost and leadership_changed alerts, delivered by a
            # command hook to a file per coordinator: case_sigstop reads them.
            config = os.path.join(root, "alerts.yaml")
            with open(config, "w") as f:
                # A 1 s fold window: the first alert of a group is held that
                # long (docs/operations.md, "Folding"), 60 s by default.
                f.write("alert-fold-window: 1s\nalerts:\n  - name: ha\n    events: [lease_lost, "
                        "leadership_changed, election_key_refused]\n"
                        f"    command: \"cat >> {root}/alerts-$PPID.jsonl; echo >> "
                        f"{root}/alerts-$PPID.jsonl\"\n")
            extra = ["--config", config]
        planted_rev = plant(etcd, election) if case == "planted" else 0
        cs = [Coordinator(bin_dir, etcd, root, n, election, extra) for n in ("c1", "c2")]
        # Each case gets its own election name: cases may run one after another.
        if case == "quorum":
            case_quorum(bin_dir, cs, etcd_pids)
        elif case == "planted":
            case_planted(bin_dir, cs, etcd, election, root, planted_rev)
        elif case == "standby_reads":
            case_standby_reads(bin_dir, cs, root)
        else:
            {"elect": case_elect, "kill9": case_kill9, "sigstop": case_sigstop,
             "resign": case_resign}[case](bin_dir, cs)
    except AssertionError as e:
        print("FAILED:", e)
        for c in cs:
            c.log.flush()
            print(f"--- {c.name} stderr (last lines)")
            print("".join(open(os.path.join(root, c.name + ".stderr")).readlines()[-15:]))
        return 1
    finally:
        for c in cs:
            c.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
