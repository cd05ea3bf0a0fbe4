#!/usr/bin/env python3
"""One JSON convention: every apollo11 command that takes --json prints
exactly one JSON document on stdout (a run's answer, a list, an error's
nothing), so `apollo11 ... --json | jq` always works.

A real node (--role=all, HTTP on) and the real CLI, over ZeroMQ and over
HTTP. Each command runs with --json, in success and in a refusal; stdout
must parse whole as one JSON document, or be empty when the command fails
(its error goes to stderr). Commands without --json are listed as such, and
the list is checked against `apollo11 --help` so a new command cannot slip
past.

  json_everywhere_test.py BUILD_DIR
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HELLO = '''version: "1.0"
name: json.hello
params:
  who: world
pipeline:
  - id: a
    type: shell
    command: "echo hi $APOLLO11_RUN_ID"
  - id: b
    type: noop
    depends_on: [a]
'''
SCHEDULED = '''version: "1.0"
name: json.tick
schedule: "0 * * * *"
pipeline:
  - id: a
    type: noop
'''
SLOW = '''version: "1.0"
name: json.slow
pipeline:
  - id: a
    type: shell
    command: "sleep 30"
'''
# Commands that have no --json, and why.
NO_JSON = {"keygen": "writes key files, prints the public key",
           "token": "prints a new token once, for a file",
           "logs": "prints the task's own bytes"}

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, build, root):
        self.cli_path = os.path.join(build, "cli", "apollo11")
        self.http = f"127.0.0.1:{free_port()}"
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.state = os.path.join(root, "state")
        self.token_file = os.path.join(root, "token")
        with open(self.token_file, "w") as f:
            f.write("json-everywhere-test-token-0123456789\n")
        self.log = open(os.path.join(root, "node.err"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cli", "apollo11-node"), "start", "--role=all",
             "--state-dir", self.state, "--http-bind", self.http, "--api-bind", self.api,
             "--bind", f"tcp://127.0.0.1:{free_port()}", "--heartbeat", "100ms",
             "--api-token-file", self.token_file],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:  # a port taken meanwhile, say
                self.log.flush()
                with open(self.log.name) as f:
                    raise AssertionError(f"the node exited {self.proc.returncode}: {f.read()[-800:]}")
            try:
                with urllib.request.urlopen(f"http://{self.http}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the node did not become ready")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


def run(node, argv, env=None):
    return subprocess.run([node.cli_path, *argv], capture_output=True, text=True, timeout=120,
                          env=env)


def one_document(node, argv, expect_ok=True, env=None):
    """Runs argv; checks stdout is one JSON document (or empty on failure)."""
    r = run(node, argv, env)
    what = "apollo11 " + " ".join(argv)
    doc = None
    if r.stdout.strip():
        try:
            doc = json.loads(r.stdout)
        except ValueError as e:
            check(False, f"{what}: stdout is not one JSON document ({e}): {r.stdout[:300]!r}")
            return r, None
    if expect_ok:
        check(r.returncode == 0 and doc is not None,
              f"{what}: exit {r.returncode}, one JSON document "
              f"({type(doc).__name__}) {r.stderr.strip()[:200]}")
    else:
        check(r.returncode != 0 and (doc is not None or not r.stdout.strip()),
              f"{what}: refused (exit {r.returncode}) with one document or nothing on stdout, "
              f"the reason on stderr: {r.stderr.strip()[:160]!r}")
    return r, doc


def main():
    build = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="apollo11-json-") as root:
        files = {}
        for name, text in (("hello", HELLO), ("tick", SCHEDULED), ("slow", SLOW)):
            files[name] = os.path.join(root, name + ".yaml")
            with open(files[name], "w") as f:
                f.write(text)
        node = Node(build, root)
        try:
            exercise(node, root, files)
        finally:
            node.stop()
    print(f"{len(failures)} checks failed")
    return 1 if failures else 0


def about_run(node, run_id, link, explain):
    """The questions about a finished run, and two refusals about it."""
    one_document(node, ["status", run_id, "--wait", "--json", *link])
    one_document(node, ["history", run_id, "--json", *link])
    one_document(node, ["runs", "--json", "--limit", "5", *link])
    if explain:
        one_document(node, ["explain", run_id, "a", "--json", *link])
    one_document(node, ["workers", "--json", *link])
    one_document(node, ["trace", run_id + ".a", "--json", *link])
    one_document(node, ["rerun", run_id, "--from", "b", "--json", *link])
    _, again = one_document(node, ["rerun", run_id, "--from", "b", "--wait", "--json", *link])
    check(isinstance(again, dict) and again.get("rerun_of") == run_id,
          "rerun --wait --json answers the new run's status")
    one_document(node, ["status", "r20200101T000000-0000", "--json", *link], False)
    one_document(node, ["cancel", run_id, "--json", *link], False)  # finished


def exercise(node, root, files):
    help_text = run(node, ["--help"]).stdout
    commands = re.findall(r"^  ([a-z]+) ", help_text.split("Subcommands:", 1)[1], re.M)
    z = ["--coordinator", node.api]
    h = ["--coordinator", "http://" + node.http, "--api-token-file", node.token_file]
    anonymous = ["--coordinator", "http://" + node.http]
    local = ["--state-dir", os.path.join(root, "local")]

    one_document(node, ["validate", files["hello"], "--json"])
    one_document(node, ["validate", os.path.join(root, "missing.yaml"), "--json"], False)
    _, ran = one_document(node, ["run", files["hello"], "--json", *local])
    local_run = ran.get("run_id", "") if isinstance(ran, dict) else ""
    one_document(node, ["status", local_run, "--json", *local])
    one_document(node, ["history", local_run, "--json", *local])
    one_document(node, ["runs", "--json", *local])
    one_document(node, ["trace", local_run + ".a", "--json", *local])
    one_document(node, ["rerun", local_run, "--from", "a", "--json", *local])
    one_document(node, ["gc", "--older-than", "30d", "--json", *local])

    # Over ZeroMQ: a file submitted, then everything about its run.
    _, sub = one_document(node, ["submit", files["hello"], "--json", *z])
    run_id = sub.get("run_id", "") if isinstance(sub, dict) else ""
    _, waited = one_document(node, ["submit", files["hello"], "--wait", "--json", *z])
    check(isinstance(waited, dict) and waited.get("state") == "SUCCESS"
          and waited.get("run_id", "").startswith("r"),
          "submit --wait --json answers the run's status, with its run_id")
    about_run(node, run_id, z, explain=True)
    one_document(node, ["audit", "--json", *z])
    one_document(node, ["confirm", run_id + ".a", "--keep", "--json", *z], False)

    # Cancel of a running run, the registry, and the schedule.
    _, slow = one_document(node, ["submit", files["slow"], "--json", *z])
    slow_id = slow.get("run_id", "") if isinstance(slow, dict) else ""
    execution = {}
    for _ in range(100):  # until its task runs
        with urllib.request.urlopen(f"http://{node.http}/api/executions/{slow_id}.a") as r:
            execution = json.loads(r.read())
        if execution.get("state") == "RUNNING":
            break
        time.sleep(0.1)
    check(execution.get("state") == "RUNNING" and "exit_code" not in execution,
          f"a RUNNING execution has no exit code yet: {execution}")
    _, workers = one_document(node, ["workers", "--json", *z])
    check(isinstance(workers, list) and all(
        w["running"] <= w["slots"] and w["queued"] >= 0 for w in workers),
        f"workers: running is at most the slots, the rest queued: {workers}")
    one_document(node, ["cancel", slow_id, "--json", *z])
    _, added = one_document(node, ["pipelines", "add", files["hello"], files["tick"], "--json", *z])
    check(isinstance(added, list) and len(added) == 2, "pipelines add of two files: an array")
    _, one = one_document(node, ["pipelines", "add", files["hello"], "--json", *z])
    check(isinstance(one, dict) and one.get("unchanged") is True,
          "pipelines add of one file: its answer")
    one_document(node, ["pipelines", "list", "--json", *z])
    one_document(node, ["pipelines", "show", "json.hello", "--json", *z])
    one_document(node, ["pipelines", "versions", "json.hello", "--json", *z])
    _, diff = one_document(node, ["pipelines", "diff", "json.hello", "1", "1", "--json", *z])
    check(isinstance(diff, dict) and diff.get("changes") == [], "pipelines diff --json: no change")
    one_document(node, ["trigger", "json.hello", "-p", "who=json", "--json", *z])
    one_document(node, ["trigger", "json.hello", "--wait", "--json", *z])
    one_document(node, ["pause", "json.hello", "--json", *z])
    one_document(node, ["trigger", "json.hello", "--json", *z], False)  # paused
    one_document(node, ["unpause", "json.hello", "--json", *z])
    one_document(node, ["backfill", "json.tick", "--from", "2026-01-01T00:00:00Z", "--to",
                        "2026-01-01T02:00:00Z", "--json", *z])
    one_document(node, ["pipelines", "show", "json.nothing", "--json", *z], False)

    # Over HTTP: a registered pipeline triggered (files are not submitted
    # there), then the same questions; what HTTP does not serve is refused.
    _, trig = one_document(node, ["trigger", "json.hello", "--json", *h])
    http_run = trig.get("run_id", "") if isinstance(trig, dict) else ""
    _, waited = one_document(node, ["trigger", "json.hello", "--wait", "--json", *h])
    check(isinstance(waited, dict) and waited.get("state") == "SUCCESS",
          "trigger --wait --json over HTTP answers the run's status")
    one_document(node, ["status", http_run, "--wait", "--json", *h])
    about_run(node, http_run, h, explain=False)
    one_document(node, ["submit", files["hello"], "--json", *h], False)
    one_document(node, ["explain", http_run, "a", "--json", *h], False)
    one_document(node, ["audit", "--json", *h])
    one_document(node, ["trigger", "json.hello", "--json", *anonymous], False)  # no token
    one_document(node, ["cluster", "--json", *h])
    one_document(node, ["cluster", "--json", "--http", node.http])

    for command in commands:
        takes = "--json" in run(node, [command, "--help"]).stdout
        check(takes or command in NO_JSON,
              f"{command}: takes --json, or has no JSON output for a reason "
              f"({NO_JSON.get(command, 'none given')})")


if __name__ == "__main__":
    sys.exit(main())
