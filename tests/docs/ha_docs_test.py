#!/usr/bin/env python3
"""Docs as tests for high availability: every command of docs/ha.md and of
the HA sections of docs/operations.md, run as written against a cluster this
test starts (the real 3-member etcd of the etcd_cluster fixture, real
apollo11-node processes).

  ha_docs_test.py SOURCE_DIR BUILD_DIR ETCD_STATE

The cluster: coordinator c1 is the deployment command of docs/ha.md itself
(its CURVE key pair made with `apollo11 keygen`), c2 is the same with its
own name and ports, started by the test once c1 leads. Then each command
runs in document order (tests/docs/run_doc_commands.py says what a command,
a synopsis and a reference are), in a directory laid out like a built
checkout (`bench`, `tests`, `scripts` link to the source, `build` to this
build), so `bench/x.py` and `build/tests/...` resolve as they do for a
reader.

Only the placeholders below are replaced; a command that exits non-zero
fails the test, and the test says when its output reads like a parse error.
A command in EXPECTED_TO_FAIL must fail (the test fails when it passes:
take it out of the table then).
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "ha"))
import run_doc_commands as docs  # noqa: E402
from ha_cluster_test import free_port, read_state, wait_for  # noqa: E402

TOKEN = "0123456789abcdef-docs-token"
DOCUMENTS = [("docs/ha.md", None),
             ("docs/operations.md", "## Workers and the CLI with several coordinators"),
             ("docs/operations.md", "## High availability (election)")]

# What the documents leave to the reader, and what the test puts there.
# Placeholders (the reader's own values):
#   LEADER:8011, STANDBY:8011, HOST:PORT  the HTTP API (host:port) of the
#                       coordinator that leads / stands by when the command
#                       runs (STANDBY: the one that stood by when LEADER was
#                       last named: "resign LEADER, then ask STANDBY")
#   T                   (the word after --api-token) the nodes' API token
#   ...                 (the word after --endpoints) the etcd client URLs
#   STATE               (APOLLO11_ETCD_STATE=STATE) the etcd fixture's state
# The deployment example's machines, which this one machine stands for:
#   e1:2379, e2:2379, e3:2379   the fixture's three members, in order
#   c1, 10.0.0.1                127.0.0.1
#   ports 7011, 7012, 7013, 8011  free loopback ports (8011, the default
#                       --http-bind, through APOLLO11_HTTP_BIND)
#   /var/lib/apollo11, /etc/apollo11  the same paths under a scratch dir
# And one rule: an `apollo11 cluster` command without --http asks the node
# on this host (the default 127.0.0.1:8011): c1's HTTP API, given with
# `--http` right after `cluster`.

# Commands a test cannot run as written, each with what is checked instead
# and the exit code that check must give (Catch2's --list-tests exits with
# the number of test cases it lists).
NOT_RUN = {
    "apt-get install etcd-server":
        ("installs a package", ["dpkg", "-s", "etcd-server"], 0),
    'APOLLO11_ETCD_STATE=STATE APOLLO11_CHAOS_DEFAULTS=1 APOLLO11_CHAOS_ROUNDS=12 '
    'APOLLO11_CHAOS_KILLS=12 build/tests/actors/chaos_test "[chaos-ha]"':
        ("a long run of minutes (CTest chaos_ha runs one round)",
         ["build/tests/actors/chaos_test", "--list-tests", "[chaos-ha]"], 1),
    "bench/failover.py --tries 5 --profiles defaults,lease2":
        ("a benchmark of minutes (docs/PERFORMANCE.md)", ["bench/failover.py", "--help"], 0),
}

# Commands that fail today, each with the change that makes it pass.
EXPECTED_TO_FAIL = {}


class Node:
    """A coordinator process: c1 from the document, c2 from the test."""

    def __init__(self, name, argv, env, http, log_path):
        self.name, self.http = name, http
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=self.log)

    def health(self):
        try:
            with urllib.request.urlopen(f"http://{self.http}/healthz", timeout=1) as r:
                return json.loads(r.read())
        except (OSError, ValueError):
            return None

    def role(self):
        return (self.health() or {}).get("role")

    def in_sync(self):
        try:
            with urllib.request.urlopen(f"http://{self.http}/api/cluster", timeout=1) as r:
                return json.loads(r.read()).get("in_sync") or []
        except (OSError, ValueError):
            return []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Cluster:
    def __init__(self, source, build, etcd_state, root):
        self.source, self.build, self.root = source, build, root
        self.etcd_state = etcd_state
        self.etcd = read_state(etcd_state)["ETCD_ENDPOINTS"].split(",")
        self.cli = os.path.join(build, "cli", "apollo11")
        self.ports = {p: free_port() for p in ("7011", "7012", "7013", "8011")}
        self.nodes = {}
        self.leader = self.standby = None
        # The reader's checkout: commands run here.
        self.cwd = os.path.join(root, "checkout")
        os.makedirs(self.cwd)
        for d in ("bench", "tests", "scripts", "docs"):
            os.symlink(os.path.join(source, d), os.path.join(self.cwd, d))
        os.symlink(build, os.path.join(self.cwd, "build"))

    def env(self, http=None):
        env = dict(os.environ, APOLLO11_API_TOKEN=TOKEN)
        env["PATH"] = os.path.join(self.build, "cli") + os.pathsep + env.get("PATH", "")
        if http:
            env["APOLLO11_HTTP_BIND"] = http
        return env

    def etcdctl(self, *args):
        return docs.run(["etcdctl", "--endpoints", ",".join(self.etcd), *args])

    def deployment_text(self, text):
        """The deployment example's machines, ports and paths on this one."""
        for i, url in enumerate(self.etcd):
            text = text.replace(f"http://e{i + 1}:2379", url)
        text = text.replace("tcp://c1:", "tcp://127.0.0.1:").replace("10.0.0.1", "127.0.0.1")
        for port, free in self.ports.items():
            text = re.sub(rf":{port}\b", f":{free}", text)
        for path in ("/var/lib/apollo11", "/etc/apollo11"):
            text = text.replace(path, self.root + path)
        return text

    def make_keys(self):
        keys = os.path.join(self.root, "etc", "apollo11")
        os.makedirs(keys)
        code, out = docs.run([self.cli, "keygen", os.path.join(keys, "coord")])
        if code != 0:
            raise AssertionError("apollo11 keygen: " + out)
        public = open(os.path.join(keys, "coord.pub")).read().strip()
        with open(os.path.join(keys, "authorized_keys"), "w") as f:
            f.write(f"admin {public}  # the coordinators' pair\n")

    def start_c1(self, command):
        argv = shlex.split(self.deployment_text(command.text))  # found on PATH: build/cli
        http = f"127.0.0.1:{self.ports['8011']}"
        self.nodes["c1"] = Node("c1", argv, self.env(http), http,
                                os.path.join(self.root, "c1.stderr"))
        wait_for("c1 (the deployment command) to lead", lambda: self.node_role("c1") == "leader",
                 60)
        # c2: the same deployment with its own name, ports and state dir.
        ports = [free_port() for _ in range(4)]
        argv2 = [os.path.join(self.build, "cli", "apollo11-node"), "start",
                 "--role=coordinator", "--state-dir", os.path.join(self.root, "c2"),
                 "--bind", f"tcp://0.0.0.0:{ports[0]}", "--api-bind", f"tcp://0.0.0.0:{ports[1]}",
                 "--replication-bind", f"tcp://127.0.0.1:{ports[2]}",
                 "--curve-key", os.path.join(self.root, "etc/apollo11/coord.key"),
                 "--authorized-keys", os.path.join(self.root, "etc/apollo11/authorized_keys"),
                 "--ha-etcd", ",".join(self.etcd), "--ha-name", "c2",
                 "--ha-advertise", f"tcp://127.0.0.1:{ports[0]},tcp://127.0.0.1:{ports[1]},"
                                   f"tcp://127.0.0.1:{ports[2]}", "--ha-lease", "5s"]
        http2 = f"127.0.0.1:{ports[3]}"
        self.nodes["c2"] = Node("c2", argv2, self.env(http2), http2,
                                os.path.join(self.root, "c2.stderr"))
        wait_for("c2 to stand by", lambda: self.node_role("c2") == "standby", 60)
        wait_for("c2 in sync", lambda: "c2" in self.nodes["c1"].in_sync(), 60)

    def node_role(self, name):
        node = self.nodes[name]
        if node.proc.poll() is not None:
            raise AssertionError(f"{name} exited with {node.proc.returncode}: " +
                                 open(node.log_path).read()[-2000:])
        return node.role()

    def resolve_leader(self):
        def one():
            roles = {n: self.node_role(n) for n in self.nodes}
            leaders = [n for n, r in roles.items() if r == "leader"]
            standbys = [n for n, r in roles.items() if r == "standby"]
            return (leaders[0], standbys[0]) if len(leaders) == 1 and standbys else None
        leader, standby = wait_for("one leader and a standby", one, 60)
        self.leader, self.standby = self.nodes[leader], self.nodes[standby]
        return self.leader

    def substitute(self, text):
        """The command with the placeholders replaced (see the table above)."""
        def http(m):
            role = m.group(1)
            if role == "STANDBY":
                if self.standby is None:
                    self.resolve_leader()
                return self.standby.http
            return self.resolve_leader().http
        text = re.sub(r"\b(LEADER|STANDBY|HOST):(8011|PORT)\b", http, text)
        text = re.sub(r"(--api-token) T\b", rf"\1 {TOKEN}", text)
        text = re.sub(r"(--endpoints) \.\.\.", rf"\1 {','.join(self.etcd)}", text)
        text = re.sub(r"\bAPOLLO11_ETCD_STATE=STATE\b", f"APOLLO11_ETCD_STATE={self.etcd_state}",
                      text)
        argv = shlex.split(text)
        if argv[:2] == ["apollo11", "cluster"] and "--http" not in argv:
            argv[2:2] = ["--http", self.nodes["c1"].http]
        return argv

    def run(self, argv, extra_env=None):
        env = self.env()
        while argv and re.match(r"^[A-Z][A-Z0-9_]*=", argv[0]):
            key, _, value = argv.pop(0).partition("=")
            env[key] = value
        env.update(extra_env or {})
        return docs.run(argv, env=env, timeout=300, cwd=self.cwd)

    def stop(self):
        for node in self.nodes.values():
            node.stop()


def run_server(cl, c, index):
    """A further `apollo11-node start` (the first is c1): started with the
    deployment's substitutions and scratch paths of its own, it must still
    run 3 s later and stop on SIGTERM with exit 0."""
    text = cl.deployment_text(c.text).replace(cl.root + "/var/lib/apollo11",
                                              f"{cl.root}/server{index}/var/lib/apollo11")
    log = os.path.join(cl.root, f"server{index}.stderr")
    node = Node(f"server{index}", shlex.split(text), cl.env(f"127.0.0.1:{free_port()}"), None,
                log)
    time.sleep(3)
    alive = node.proc.poll() is None
    node.stop()
    code = node.proc.returncode
    return alive and code == 0, f"{text}  (ran 3 s, then SIGTERM: exit {code})", \
        open(log).read()[-2000:]


def run_one(cl, c):
    """(passed, what it ran, output) for one documented command."""
    if c.text in NOT_RUN:
        why, check, expected = NOT_RUN[c.text]
        code, out = cl.run(list(check))
        return code == expected, f"not run ({why}); instead: {shlex.join(check)}", out
    if c.kind == "reference":
        argv = c.words() + ["--help"]
    else:
        text = docs.expand_synopsis(c.text) if c.kind == "synopsis" else c.text
        argv = cl.substitute(text)
    code, out = cl.run(list(argv))
    return code == 0, shlex.join(argv) + f"  (exit {code})", out


def main():
    source, build, etcd_state = (os.path.abspath(p) for p in sys.argv[1:4])
    commands = [(path, c) for path, heading in DOCUMENTS
                for c in docs.extract(os.path.join(source, path), heading)]
    root = tempfile.mkdtemp(prefix="apollo11-docs-ha-")
    cl = Cluster(source, build, etcd_state, root)
    failures, unexpected_passes = [], []
    try:
        # The default election's keys from an earlier, interrupted run (an
        # in-sync record naming c2 alone would keep c1 from campaigning).
        cl.etcdctl("del", "--prefix", "apollo11/coordinators")
        cl.make_keys()
        started = False
        for path, c in commands:
            where = f"{path}:{c.line}"
            server = c.words()[:2] == ["apollo11-node", "start"]
            if server and not started:
                cl.start_c1(c)
                started = True
                print(f"ok   {where}: started c1 as written (it leads; c2 stands by): {c.text}")
                continue
            ok, ran, out = run_server(cl, c, c.line) if server else run_one(cl, c)
            expected = EXPECTED_TO_FAIL.get(c.text)
            if expected and not ok:
                print(f"xfail {where}: {ran}\n      expected to fail until {expected}\n      "
                      + out.strip().replace("\n", "\n      "))
            elif expected:
                unexpected_passes.append(f"{where}: {c.text}")
                print(f"XPASS {where}: {ran}: now passes; take it out of EXPECTED_TO_FAIL")
            elif ok:
                print(f"ok   {where}: {ran}")
            else:
                kind = "DOES NOT PARSE" if docs.reads_like_parse_error(out) else "FAILED"
                failures.append(f"{where}: {c.text}")
                print(f"{kind} {where}: {ran}\n      " + out.strip().replace("\n", "\n      "))
        if not started:
            failures.append("docs/ha.md has no `apollo11-node start` deployment command")
    except AssertionError as e:
        failures.append(str(e))
        print("FAILED:", e)
    finally:
        cl.stop()
        cl.etcdctl("del", "--prefix", "apollo11/coordinators")
    print(f"{len(commands)} documented commands; {len(failures)} failed, "
          f"{len(unexpected_passes)} passed that were expected to fail")
    for name in ("c1", "c2") if failures else ():
        path = os.path.join(root, name + ".stderr")
        if os.path.exists(path):
            print(f"--- {name} stderr (last lines)\n" + "".join(open(path).readlines()[-15:]))
    if not failures and not unexpected_passes:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failures or unexpected_passes else 0


if __name__ == "__main__":
    sys.exit(main())
