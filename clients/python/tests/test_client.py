#!/usr/bin/env python3
"""The Python client (clients/python) against a real node.

  test_client.py BUILD_DIR [unittest args]

Starts one `apollo11-node start --role=all` from BUILD_DIR/cli with HTTP on a
free loopback port and an API token, and drives every Client method against
it: registration (a python script read into the version), triggers with
params and idempotency keys, wait, a failing task and its rerun, cancel,
paging through the run history, logs and follow, pause, and each refusal as
its ApiError subclass. A stand-in server gives the answers a healthy node
does not (429, a redirect, a non-JSON error). README.md's "Python client"
block runs as written, and the package installs with pip when pip and
setuptools are there. The package is imported from the source tree.
"""
import concurrent.futures
import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request
from datetime import datetime, timedelta, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = os.path.dirname(HERE)                   # clients/python
SOURCE_DIR = os.path.dirname(os.path.dirname(PACKAGE_DIR))
sys.path.insert(0, PACKAGE_DIR)

import apollo11_client as ac  # noqa: E402
from apollo11_client import Client  # noqa: E402

TOKEN = "client-test-token-0123456789abcdef"
BUILD_DIR = os.environ.get("APOLLO11_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
NODE = None  # the node every test uses (setUpModule)

OK_YAML = '''version: "1.0"
name: client.ok
params:
  who: world
pipeline:
  - id: greet
    type: shell
    command: "echo hello ${params.who}; echo to-stderr >&2"
  - id: count
    type: python
    script: scripts/count.py
    depends_on: greet
  - id: on_fail
    type: noop
    depends_on:
      - {task: count, on: failure}
'''
COUNT_PY = 'import sys\nprint("counted", len(sys.argv), "\\u00e9t\\u00e9 \\"quoted\\"")\n'
FLAKY_YAML = '''version: "1.0"
name: client.flaky
pipeline:
  - id: first
    type: shell
    command: "echo first"
  - id: gate
    type: shell
    command: "test -f {marker} || {{ echo no marker >&2; exit 3; }}"
    depends_on: first
  - id: after
    type: noop
    depends_on: gate
'''
SLOW_YAML = '''version: "1.0"
name: client.slow
pipeline:
  - id: talk
    type: shell
    command: "for i in 1 2 3 4 5; do echo line $i; sleep 0.5; done"
  - id: hang
    type: shell
    command: "sleep 60"
    depends_on: talk
'''
TALK = "".join(f"line {i}\n" for i in range(1, 6))  # what client.slow's talk writes, in 2.5 s
MANY_YAML = '''version: "1.0"
name: client.many
pipeline:
  - id: a
    type: noop
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    """One `--role=all` node on loopback ports, with an API token."""

    def __init__(self, build, root):
        self.http = f"127.0.0.1:{free_port()}"
        self.url = "http://" + self.http
        token_file = os.path.join(root, "token")
        with open(token_file, "w") as f:
            f.write(TOKEN + "\n")
        self.log = open(os.path.join(root, "node.err"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cli", "apollo11-node"), "start", "--role=all",
             "--state-dir", os.path.join(root, "state"), "--http-bind", self.http,
             "--api-bind", f"tcp://127.0.0.1:{free_port()}",
             "--bind", f"tcp://127.0.0.1:{free_port()}", "--heartbeat", "100ms",
             "--api-token-file", token_file],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the node exited {self.proc.returncode}: {self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError("the node did not become ready: " + self.log_tail())

    def log_tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-800:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def setUpModule():
    global NODE, ROOT
    ROOT = tempfile.TemporaryDirectory(prefix="apollo11-pyclient-")
    NODE = Node(BUILD_DIR, ROOT.name)


def tearDownModule():
    NODE.stop()
    ROOT.cleanup()


def client(**kwargs):
    return Client(NODE.url, token=kwargs.pop("token", TOKEN), timeout=15, **kwargs)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


class PipelinesAndRuns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()
        cls.dir = os.path.join(ROOT.name, "ok")
        write(os.path.join(cls.dir, "scripts", "count.py"), COUNT_PY)
        cls.ok_file = write(os.path.join(cls.dir, "pipeline.yaml"), OK_YAML)
        cls.registered = cls.c.register(cls.ok_file)

    def test_register_a_file_reads_its_python_script_into_the_version(self):
        r = self.registered
        self.assertEqual((r.name, r.unchanged), ("client.ok", False))
        self.assertGreaterEqual(r.version, 1)
        snapshot = self.c.pipeline("client.ok").snapshot
        count = [t for t in snapshot["tasks"] if t["id"] == "count"][0]
        self.assertEqual(count.get("code"), COUNT_PY)
        self.assertNotIn("script", count)
        # The same file again is the same version; the on: failure entry
        # (a YAML 1.1 boolean to PyYAML) went through as written.
        again = self.c.register(self.ok_file)
        self.assertTrue(again.unchanged)
        self.assertEqual(again.version, r.version)
        on_fail = [t for t in snapshot["tasks"] if t["id"] == "on_fail"][0]
        self.assertEqual(on_fail["depends_on"], [{"task": "count", "on": "failure"}])

    def test_trigger_with_params_waits_to_success_with_typed_tasks(self):
        started = self.c.trigger("client.ok", {"who": "apollo"})
        self.assertFalse(started.existing)
        run = self.c.wait(started.run_id, timeout=30)
        self.assertIsInstance(run, ac.Run)
        self.assertEqual(run.state, "SUCCESS", run.raw)
        self.assertTrue(run.ended and run.succeeded)
        self.assertEqual(run.params, {"who": "apollo"})
        self.assertEqual(run.pipeline, "client.ok")
        self.assertEqual(set(run.tasks), {"greet", "count", "on_fail"})
        greet = run.tasks["greet"]
        self.assertEqual((greet.state, greet.exit_code, greet.attempts), ("SUCCESS", 0, 1))
        self.assertEqual(greet.exec_id, started.run_id + ".greet")
        self.assertEqual(run.tasks["on_fail"].state, "SKIPPED")
        self.assertIsNotNone(run.created_at.tzinfo)
        self.assertLessEqual(greet.started_at, greet.finished_at)
        self.assertEqual(self.c.logs(greet.exec_id), "hello apollo\n")
        self.assertEqual(self.c.logs(greet.exec_id, "err"), "to-stderr\n")
        self.assertEqual(self.c.logs(run.tasks["count"].exec_id),
                         'counted 1 \u00e9t\u00e9 "quoted"\n')
        execution = self.c.execution(greet.exec_id)
        self.assertEqual((execution.state, execution.task_id), ("SUCCESS", "greet"))
        self.assertEqual(execution.output_tail, "hello apollo\n")
        self.assertEqual(execution.history[-1].to_state, "SUCCESS")

    def test_history_lists_the_transitions_oldest_first(self):
        run_id = self.c.trigger("client.ok").run_id
        self.c.wait(run_id, timeout=30)
        history = self.c.history(run_id)
        self.assertTrue(all(isinstance(t, ac.Transition) for t in history))
        self.assertEqual([t.seq for t in history], sorted(t.seq for t in history))
        greet = [t for t in history if t.task_id == "greet"]
        self.assertEqual([(t.from_state, t.to_state) for t in greet],
                         [("PENDING", "READY"), ("READY", "RUNNING"), ("RUNNING", "SUCCESS")])
        self.assertTrue(greet[1].worker)
        self.assertEqual(self.c.graph(run_id)["pipeline"], "client.ok")

    def test_an_idempotency_key_answers_its_run_and_refuses_other_params(self):
        first = self.c.trigger("client.ok", {"who": "k"}, idempotency_key="order-42")
        again = self.c.trigger("client.ok", {"who": "k"}, idempotency_key="order-42")
        self.assertEqual((again.run_id, again.existing), (first.run_id, True))
        with self.assertRaises(ac.Conflict) as caught:
            self.c.trigger("client.ok", {"who": "other"}, idempotency_key="order-42")
        e = caught.exception
        self.assertEqual(e.status, 409)
        self.assertIn("order-42", e.message)
        self.assertTrue(e.request_id)
        self.c.wait(first.run_id, timeout=30)

    def test_versions_and_a_trigger_of_an_older_version(self):
        v1 = self.registered.version
        changed = OK_YAML.replace("echo hello", "echo hi")
        v2 = self.c.register(write(os.path.join(self.dir, "v2.yaml"), changed))
        self.assertEqual(v2.version, v1 + 1)
        versions = self.c.versions("client.ok")
        self.assertIn(v1, [v.version for v in versions])
        self.assertEqual([v.version for v in versions if v.active], [v2.version])
        run = self.c.wait(self.c.trigger("client.ok", version=v1).run_id, timeout=30)
        self.assertEqual((run.state, run.pipeline_version), ("SUCCESS", v1))
        self.assertEqual(self.c.logs(run.tasks["greet"].exec_id), "hello world\n")
        self.assertEqual(self.c.pipeline("client.ok", v1).version, v1)
        self.c.register(self.ok_file)  # active again, as the other tests expect

    def test_pipelines_and_workers(self):
        names = {p.name: p for p in self.c.pipelines()}
        self.assertTrue(names["client.ok"].registered)
        self.assertIsInstance(names["client.ok"].active_version, int)
        workers = self.c.workers()
        self.assertGreaterEqual(len(workers), 1)
        w = workers[0]
        self.assertGreaterEqual(w.slots, 1)
        self.assertEqual(w.group, "default")
        self.assertIsNotNone(w.last_heartbeat)

    def test_pause_refuses_triggers_until_unpause(self):
        name = self.c.register(MANY_YAML.replace("client.many", "client.pausing")).name
        state = self.c.pause(name)
        self.assertTrue(state.paused)
        with self.assertRaises(ac.Conflict):
            self.c.trigger(name)
        self.assertFalse(self.c.unpause(name).paused)
        self.assertEqual(self.c.wait(self.c.trigger(name).run_id, timeout=30).state, "SUCCESS")

    def test_submit_registers_yaml_text_and_runs_that_version(self):
        text = MANY_YAML.replace("client.many", "client.submitted")
        started = self.c.submit(text)
        self.assertEqual(started.name, "client.submitted")
        run = self.c.wait(started.run_id, timeout=30)
        self.assertEqual((run.state, run.pipeline_version), ("SUCCESS", started.version))


class FailuresAndReruns(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = client()
        cls.marker = os.path.join(ROOT.name, "flaky-marker")
        cls.c.register(FLAKY_YAML.format(marker=cls.marker))
        cls.c.register(SLOW_YAML)

    def test_a_failing_task_fails_the_run_and_rerun_failed_reuses_what_succeeded(self):
        run = self.c.wait(self.c.trigger("client.flaky").run_id, timeout=30)
        self.assertEqual(run.state, "FAILED")
        gate = run.tasks["gate"]
        self.assertEqual((gate.state, gate.exit_code), ("FAILED", 3))
        self.assertIn("3", gate.error)
        self.assertEqual(self.c.logs(gate.exec_id, "err"), "no marker\n")
        with self.assertRaises(ac.BadRequest) as caught:
            self.c.trigger("client.flaky", {"nope": "1"})
        self.assertIn("nope", caught.exception.message)
        write(self.marker, "")
        again = self.c.rerun(run.run_id, failed=True)
        self.assertEqual(again.rerun_of, run.run_id)
        rerun = self.c.wait(again.run_id, timeout=30)
        self.assertEqual(rerun.state, "SUCCESS")
        self.assertEqual(rerun.rerun_of, run.run_id)
        self.assertEqual(rerun.tasks["first"].reused_from, run.run_id)
        self.assertEqual(rerun.tasks["gate"].state, "SUCCESS")
        from_first = self.c.wait(self.c.rerun(rerun.run_id, from_task="first",
                                              downstream=True).run_id, timeout=30)
        self.assertEqual(from_first.state, "SUCCESS")
        self.assertIsNone(from_first.tasks["first"].reused_from)
        with self.assertRaises(ac.NotFound):
            self.c.rerun(run.run_id, from_task="no_such_task")
        with self.assertRaises(ValueError):
            self.c.rerun(run.run_id, downstream=True)

    def test_follow_logs_yields_the_output_as_written_then_cancel_ends_the_run(self):
        run_id = self.c.trigger("client.slow").run_id
        chunks = list(self.c.follow_logs(run_id + ".talk", timeout=20))
        self.assertEqual("".join(chunks), TALK)
        self.assertGreater(len(chunks), 1, "the lines came as they were written")
        # `hang` is sleeping now: its log is empty and still open.
        deadline = time.time() + 10
        while self.c.status(run_id).tasks["hang"].state != "RUNNING" and time.time() < deadline:
            time.sleep(0.1)
        piece = self.c.log_slice(run_id + ".hang")
        self.assertTrue(piece.running and piece.more_may_come)
        self.assertEqual(piece.size, 0)
        with self.assertRaises(ac.BadRequest):
            self.c.rerun(run_id)  # still RUNNING
        with self.assertRaises(ac.WaitTimeout) as caught:
            self.c.wait(run_id, timeout=0.5)
        self.assertEqual(caught.exception.run.state, "RUNNING")
        self.c.cancel(run_id)
        run = self.c.wait(run_id, timeout=30)
        self.assertEqual(run.state, "CANCELED")
        self.assertEqual(run.tasks["hang"].state, "CANCELED")
        self.assertEqual(list(self.c.follow_logs(run_id + ".hang", timeout=10)), [])
        with self.assertRaises(ac.Conflict):
            self.c.cancel(run_id)

    def test_follow_logs_waits_for_a_task_that_has_not_started(self):
        run_id = self.c.trigger("client.slow").run_id
        text = "".join(self.c.follow_logs(run_id + ".talk", timeout=20))
        self.assertEqual(text, TALK)
        self.c.cancel(run_id)
        self.assertEqual(self.c.wait(run_id, timeout=30).state, "CANCELED")


class History(unittest.TestCase):
    def test_runs_pages_through_every_run_exactly_once_with_filters(self):
        c = client()
        c.register(MANY_YAML)
        before = datetime.now(timezone.utc) - timedelta(seconds=1)
        ids = [c.trigger("client.many").run_id for _ in range(7)]
        for run_id in ids:
            self.assertEqual(c.wait(run_id, timeout=30).state, "SUCCESS")
        page = c.runs_page(pipeline="client.many", limit=3)
        self.assertEqual((len(page.runs), page.complete), (3, False))
        self.assertTrue(page.next_cursor)
        walked = [r.run_id for r in c.runs(pipeline="client.many", page_size=3)]
        self.assertEqual(sorted(walked), sorted(ids))
        self.assertEqual(len(walked), len(set(walked)))
        self.assertEqual(walked, list(reversed(ids)), "newest first")
        summary = next(c.runs(pipeline="client.many", page_size=3))
        self.assertIsInstance(summary, ac.RunSummary)
        self.assertEqual((summary.state, summary.task_count), ("SUCCESS", 1))
        # Filters: prefix, states, since as a datetime and as an age, until.
        by_prefix = [r.run_id for r in c.runs(prefix="client.m", state=["SUCCESS", "FAILED"],
                                              since=before, page_size=2)]
        self.assertEqual(sorted(by_prefix), sorted(ids))
        self.assertEqual(len([r for r in c.runs(pipeline="client.many", since="1h")]), 7)
        self.assertEqual(len([r for r in c.runs(pipeline="client.many",
                                                since=timedelta(hours=1))]), 7)
        self.assertEqual(list(c.runs(pipeline="client.many", until=before)), [])
        self.assertEqual(list(c.runs(pipeline="client.many", state="CANCELED")), [])
        with self.assertRaises(ac.BadRequest) as caught:
            c.runs_page(state="BOGUS")
        self.assertIn("BOGUS", caught.exception.message)


class Refusals(unittest.TestCase):
    def test_an_unknown_run_or_execution_is_not_found(self):
        c = client()
        with self.assertRaises(ac.NotFound) as caught:
            c.status("r20200101T000000-0000")
        self.assertEqual(caught.exception.status, 404)
        self.assertIn("no run", caught.exception.message)
        with self.assertRaises(ac.NotFound):
            c.logs("r20200101T000000-0000.a")
        with self.assertRaises(ac.NotFound):
            list(c.follow_logs("r20200101T000000-0000.a", timeout=5))
        with self.assertRaises(ac.NotFound):
            c.trigger("client.no-such-pipeline")

    def test_a_bad_token_is_unauthorized_and_no_token_may_not_change_anything(self):
        with self.assertRaises(ac.Unauthorized) as caught:
            client(token="not-the-token-of-this-node").workers()
        self.assertEqual(caught.exception.status, 401)
        self.assertIsInstance(caught.exception, ac.ApiError)
        anonymous = client(token="")
        self.assertIsInstance(anonymous.workers(), list)  # reads are open without a tokens file
        with self.assertRaises((ac.Unauthorized, ac.Forbidden)):
            anonymous.register(MANY_YAML)

    def test_a_pipeline_that_does_not_validate_is_a_bad_request_with_positions(self):
        with self.assertRaises(ac.BadRequest) as caught:
            client().register('version: "1.0"\nname: client.bad\npipeline: []\n')
        self.assertRegex(caught.exception.message, r":3:\d+: error: 'pipeline' has no tasks")

    def test_an_unreadable_script_is_named_before_anything_is_sent(self):
        path = write(os.path.join(ROOT.name, "missing", "p.yaml"),
                     OK_YAML.replace("client.ok", "client.missing"))
        with self.assertRaises(ValueError) as caught:
            client().register(path)
        self.assertIn("scripts/count.py", str(caught.exception))

    def test_no_node_is_a_transport_error(self):
        with self.assertRaises(ac.TransportError):
            Client(f"http://127.0.0.1:{free_port()}", timeout=2).workers()

    def test_settings_come_from_the_environment_as_the_cli_reads_them(self):
        saved = {k: os.environ.get(k) for k in ("APOLLO11_COORDINATOR", "APOLLO11_API_TOKEN")}
        try:
            os.environ["APOLLO11_COORDINATOR"] = NODE.url + "/"
            os.environ["APOLLO11_API_TOKEN"] = TOKEN + "\n"
            self.assertEqual(Client().whoami()["name"], "api-token")
            os.environ["APOLLO11_COORDINATOR"] = "tcp://127.0.0.1:7012"
            with self.assertRaises(ValueError):
                Client()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        token_file = write(os.path.join(ROOT.name, "tok"), TOKEN + "\n")
        self.assertEqual(Client(NODE.url, token_file=token_file).whoami()["roles"], "admin")


class _StandIn(http.server.BaseHTTPRequestHandler):
    """Answers a path with what a healthy node does not: a 429, a redirect, a
    text error."""

    def do_GET(self):
        if self.path.startswith("/api/v1/workers"):
            self._send(429, b'{"error":"slow down"}', {"Retry-After": "2",
                                                       "X-Request-Id": "abc123"})
        elif self.path.startswith("/api/v1/node"):
            self._send(302, b"", {"Location": "http://example.invalid/"})
        else:
            self._send(502, b"bad gateway", {"Content-Type": "text/plain"})

    def _send(self, status, body, headers):
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class WireEdges(unittest.TestCase):
    def test_rate_limit_redirect_and_text_errors_from_a_stand_in(self):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StandIn)
        thread = threading.Thread(target=server.serve_forever, name="stand-in")
        thread.start()
        try:
            c = Client(f"http://127.0.0.1:{server.server_address[1]}", token=TOKEN, timeout=5)
            with self.assertRaises(ac.RateLimited) as caught:
                c.workers()
            e = caught.exception
            self.assertEqual((e.status, e.retry_after, e.message, e.request_id),
                             (429, 2.0, "slow down", "abc123"))
            with self.assertRaises(ac.ApiError) as caught:
                c.node()
            self.assertEqual(caught.exception.status, 302)
            with self.assertRaises(ac.ApiError) as caught:
                c.pipelines()
            self.assertEqual((caught.exception.status, caught.exception.message),
                             (502, "bad gateway"))
        finally:
            server.shutdown()
            thread.join()
            server.server_close()


class ZLast(unittest.TestCase):
    """Last (unittest runs classes by name): these spend the rate limit."""

    def test_readme_python_client_block_runs_as_written(self):
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            section = f.read().split("## Python client", 1)[1].split("\n## ", 1)[0]
        blocks = re.findall(r"```(\w*)\n(.*?)```", section, re.S)
        out = self.run_python_blocks(blocks)
        self.assertRegex(out, r"^SUCCESS \{'count_words': 'SUCCESS'")
        self.assertRegex(out, r"(?m)^r\S+ SUCCESS \d{4}-")
        install = [text for lang, text in blocks if lang == "sh"]
        self.assertEqual(len(install), 1, "one sh block under ## Python client")
        self.run_install(install[0])

    def test_the_package_readme_blocks_run_as_written(self):
        with open(os.path.join(PACKAGE_DIR, "README.md")) as f:
            blocks = re.findall(r"```(\w*)\n(.*?)```", f.read(), re.S)
        out = self.run_python_blocks(blocks)
        self.assertIn("count_words SUCCESS 0\n", out)
        self.assertRegex(out, r"hello from Apollo-11 \(run r\S+, task greet\)\n$")
        with open(os.path.join(SOURCE_DIR, "README.md")) as f:
            root = f.read()
        for lang, text in blocks:  # its install block is the README's, run above
            if lang == "sh":
                self.assertIn(text, root)

    def run_python_blocks(self, blocks):
        """Runs the one python block of `blocks` from the repository's root
        against the node (settings from the environment); returns stdout."""
        code = [text for lang, text in blocks if lang == "python"]
        self.assertEqual(len(code), 1, "one python block")
        env = dict(os.environ, APOLLO11_COORDINATOR=NODE.url, APOLLO11_API_TOKEN=TOKEN,
                   PYTHONPATH=PACKAGE_DIR)
        r = subprocess.run([sys.executable, "-c", code[0]], cwd=SOURCE_DIR, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        return r.stdout

    def run_install(self, script):
        """The section's install commands as written (bash -e), offline, with
        a scratch HOME and a copy of clients/python, by the first Python here
        that has venv, pip, setuptools and wheel; then imports the package
        from the environment they made."""
        for python in (sys.executable, "/usr/bin/python3"):
            probe = subprocess.run([python, "-c", "import setuptools, wheel, pip, venv, ensurepip"],
                                   capture_output=True)
            if probe.returncode == 0:
                break
        else:
            print("skip: no Python here has venv, pip, setuptools and wheel", file=sys.stderr)
            return
        with tempfile.TemporaryDirectory(prefix="apollo11-pyclient-pip-") as home:
            bin_dir = os.path.join(home, "bin")
            os.mkdir(bin_dir)
            os.symlink(python, os.path.join(bin_dir, "python3"))
            work = os.path.join(home, "src")
            shutil.copytree(PACKAGE_DIR, os.path.join(work, "clients", "python"),
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            env = dict(os.environ, HOME=home, PIP_NO_INDEX="1",
                       PIP_DISABLE_PIP_VERSION_CHECK="1",
                       PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
            env.pop("PYTHONPATH", None)
            r = subprocess.run(["bash", "-ec", script], cwd=work, env=env, capture_output=True,
                               text=True, timeout=180)
            self.assertEqual(r.returncode, 0, r.stdout[-1500:] + r.stderr[-1500:])
            venv_python = os.path.join(home, ".venvs", "apollo11", "bin", "python")
            r = subprocess.run([venv_python, "-c", "import apollo11_client as a; print(a.__file__)"],
                               cwd=home, env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(os.path.join(home, ".venvs"), r.stdout)

    def test_z_many_changes_at_once_are_rate_limited_with_retry_after(self):
        c = client()
        name = c.register(MANY_YAML.replace("client.many", "client.limited")).name

        def pause(_):
            try:
                c.pause(name)
                return None
            except ac.RateLimited as e:
                return e

        # From 3 threads (the node serves 4 unfinished requests per address),
        # so a loaded machine still sends faster than 20 a second.
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            limited = [e for e in pool.map(pause, range(160)) if e is not None]
        self.assertTrue(limited, "160 pauses at once passed --api-rate-limit (20/s)")
        self.assertEqual(limited[0].status, 429)
        self.assertGreater(limited[0].retry_after, 0)
        time.sleep(max(e.retry_after for e in limited))
        self.assertFalse(c.unpause(name).paused)

if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        BUILD_DIR = sys.argv.pop(1)
    unittest.main(verbosity=2)
