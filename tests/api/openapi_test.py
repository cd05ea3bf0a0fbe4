#!/usr/bin/env python3
"""docs/api/openapi.json against a real node (issue 38).

Starts an apollo11-node --role=all with a tokens file (admin, operator,
viewer) and drives every route of the document: pipelines registered,
triggered (with params and an idempotency key), a run that fails and is
rerun, one flagged slow, kept and canceled, a pause, a backfill, a removal,
and the refusals each route documents (400, 401, 403, 404, 405, 409, 413,
429). Every answer must have a status the document gives for its path and
method, that status's content type, and a body that validates against its
schema (python3-jsonschema, Draft 2020-12, $refs resolved in the document).
Objects are checked closed: a field the document does not list fails, so
the document cannot fall behind the server.

Coverage both ways: every row of observability/http_access.cc's route
table is in the document (an /api/ path under /api/v1/), every operation
of the document is a row of it, and every operation was called and
answered with a success.

With --prism DIR (CMake passes one in the build tree), the same requests
then go through Stoplight Prism (npm @stoplight/prism-cli, installed into
DIR from tests/api/npm's lockfile) as a validating proxy; any violation it
reports fails the test. npm must reach its registry the first time.

  openapi_test.py SOURCE_DIR BUILD_DIR [--prism DIR]
"""
import copy
import datetime
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse

import jsonschema

PARAMS = '''version: "1.0"
name: api.params
params:
  secs: "0"
  fail: "no"
pipeline:
  - id: work
    type: shell
    command: "echo working; echo oops >&2; sleep ${params.secs}; test ${params.fail} = no"
  - id: after
    type: noop
    depends_on: work
'''
TICK = '''version: "1.0"
name: api.tick
schedule: "0 3 * * *"
pipeline:
  - id: a
    type: noop
'''
GONE = '''version: "1.0"
name: api.gone
pipeline:
  - id: a
    type: noop
'''
SUBMITTED = '''version: "1.0"
name: api.submitted
pipeline:
  - id: a
    type: noop
'''
# Statuses a test cannot provoke against one healthy node without HA or a
# sign-in provider; every other documented status must be answered once.
NOT_PROVOKED = {
    ("get", "/readyz"): {"503": "needs a coordinator that is not ready"},
    ("get", "/licenses"): {"500": "needs a build without notices"},
    ("get", "/api/v1/openapi.json"): {"500": "needs a build without the document"},
    ("get", "/auth/login"): {"303": "needs an OpenID Connect provider",
                             "503": "needs an OpenID Connect provider that fails"},
    ("get", "/auth/callback"): {"303": "needs an OpenID Connect provider",
                                "400": "needs an OpenID Connect provider",
                                "502": "needs an OpenID Connect provider"},
    ("post", "/api/v1/cluster/resign"): {s: "needs HA (etcd) and a leader elsewhere"
                                         for s in ("202", "421")},
    ("get", "/api/v1/executions/{id}/trace"): {"400": "needs a coordinator without a log file"},
    ("get", "/api/v1/executions/{id}/logs"): {"503": "needs a worker that cannot be asked"},
}
ALWAYS_UNPROVOKED = {"500", "503"}  # a failing or unreachable coordinator
# Successes that need what NOT_PROVOKED says; the operation still counts
# as called through its other answers.
NO_SUCCESS = {("get", "/auth/login"), ("get", "/auth/callback"), ("post", "/api/v1/cluster/resign")}

failures = []


def check(ok, what):
    if not ok:
        print("FAIL " + what, flush=True)
        failures.append(what)
    return ok


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- the document ------------------------------------------------------------


def closed(schema):
    """`schema` with every object that lists properties and says nothing of
    others closed to them: the test's strictness, not the document's."""
    if isinstance(schema, list):
        return [closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: closed(v) for k, v in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


class Document:
    def __init__(self, path):
        with open(path) as f:
            self.doc = json.load(f)
        jsonschema.Draft202012Validator.check_schema(
            {"$schema": "https://json-schema.org/draft/2020-12/schema"})
        self.schemas = closed(self.doc["components"]["schemas"])
        for name, schema in self.schemas.items():
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as e:
                check(False, f"components/schemas/{name} is not a valid schema: {e.message}")
        self.ops = {}
        for path, item in self.doc["paths"].items():
            pattern = "^" + re.sub(r"\\\{[a-z_]+\\\}", "([^/]+)", re.escape(path)) + "$"
            for method, op in item.items():
                self.ops[(method, path)] = (re.compile(pattern), op)

    def resolve(self, node):
        while isinstance(node, dict) and "$ref" in node and node["$ref"].startswith("#/components/") \
                and not node["$ref"].startswith("#/components/schemas/"):
            at = self.doc
            for part in node["$ref"][2:].split("/"):
                at = at[part]
            node = at
        return node

    def find(self, method, path):
        """The (method, template) of the operation serving `path`; a fixed
        path wins over a templated one."""
        found = [(key, rx) for key, (rx, _) in self.ops.items()
                 if key[0] == method and rx.match(path)]
        found.sort(key=lambda f: f[0][1].count("{"))
        return found[0][0] if found else None

    def path_template(self, path):
        for (method, template), (rx, _) in self.ops.items():
            if rx.match(path):
                return template
        return None

    def validate(self, schema, value, what):
        root = dict(closed(schema))
        root["components"] = {"schemas": self.schemas}
        errors = sorted(jsonschema.Draft202012Validator(root).iter_errors(value),
                        key=lambda e: list(e.absolute_path))
        for e in errors[:3]:
            check(False, f"{what}: {e.message[:300]} at {'/'.join(map(str, e.absolute_path))}")
        return not errors


# --- talking to the node -----------------------------------------------------


class Api:
    """Sends requests, checks each answer against the document, and keeps
    what was called for the coverage check and the replay through Prism."""

    def __init__(self, doc, port, tokens):
        self.doc = doc
        self.port = port
        self.tokens = tokens
        self.covered = {}  # (method, template) -> set of statuses
        self.sent = []  # (method, path, headers, body) of requests valid by the document

    def raw(self, method, path, headers, body, port=None):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            conn.close()

    def call(self, method, path, who="boss", body=None, headers=None, expect=None,
             replay=True, doc_path=None):
        """One request as `who` (a principal of the tokens file, "anonymous"
        or "bad" for a token of nobody); `expect` the status it must get.
        Returns the answer's status, headers and body (JSON when JSON)."""
        h = dict(headers or {})
        if who == "bad":
            h["Authorization"] = "Bearer a11_this-token-matches-no-principal-at-all"
        elif who != "anonymous":
            h["Authorization"] = "Bearer " + self.tokens[who]
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        if method == "POST" and body is None:
            body = ""
        if isinstance(body, str):
            body = body.encode()
        status, rh, data = self.raw(method, path, h, body)
        what = f"{method} {path[:120]} as {who}"
        if expect is not None:
            check(status == expect, f"{what}: answered {status}, not {expect}: {data[:300]!r}")
        answer = self.judge(method.lower(), doc_path or path, status, rh, data, what)
        # Prism replays only what the document allows as a request: it
        # answers a wrong method, an out-of-range parameter or an alias
        # path itself.
        doc_valid = expect != 405 and doc_path is None and len(path) < 600 and \
            not (expect == 400 and "?" in path)
        if replay and doc_valid and who not in ("anonymous", "bad"):
            self.sent.append((method, path, h, body))
        return status, rh, answer

    def stream(self, path, who="vic", headers=None, expect=200, until="hello"):
        """GET of an event stream as `who`: its head and its events up to
        and with the first of type `until`, then the connection is closed
        (the body never ends). Checked against the document as call() does
        (the body read so far); never replayed through Prism. Returns the
        status and the events read, each (type, id, data as JSON)."""
        h = dict(headers or {})
        if who != "anonymous":
            h["Authorization"] = "Bearer " + self.tokens[who]
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=15)
        events, raw = [], b""
        try:
            conn.request("GET", path, headers=h)
            r = conn.getresponse()
            rh = {k.lower(): v for k, v in r.getheaders()}
            if r.status != 200:
                raw = r.read()
            else:
                kind, event_id, data = "", "", []
                while True:
                    line = r.readline()
                    if not line:
                        check(False, f"GET {path}: the stream ended before a {until} event")
                        break
                    raw += line
                    line = line.decode().rstrip("\r\n")
                    if line == "":
                        if data:
                            events.append((kind or "message", event_id, json.loads("\n".join(data))))
                            if events[-1][0] == until:
                                break
                        kind, data = "", []
                    elif line.startswith(":"):
                        continue
                    else:
                        field, _, value = line.partition(":")
                        value = value[1:] if value.startswith(" ") else value
                        if field == "event":
                            kind = value
                        elif field == "data":
                            data.append(value)
                        elif field == "id":
                            event_id = value
        finally:
            conn.close()
        what = f"GET {path} as {who} (a stream)"
        if expect is not None:
            check(r.status == expect, f"{what}: answered {r.status}, not {expect}: {raw[:300]!r}")
        self.judge("get", path, r.status, rh, raw, what)
        return r.status, events

    def judge(self, method, path, status, headers, data, what):
        """Checks one answer against the document; returns its body."""
        url = urllib.parse.urlsplit(path)
        key = self.doc.find(method, url.path)
        if key is None:
            # A method the path does not take: its 405 is documented on the
            # path's operations.
            template = self.doc.path_template(url.path)
            if template is None:
                check(False, f"{what}: the path is not in the document")
                return None
            key = next(k for k in self.doc.ops if k[1] == template)
        op = self.doc.ops[key][1]
        self.covered.setdefault(key, set()).add(str(status))
        if status == 405:  # a wrong method of the path, whichever operations it has
            for other in self.doc.ops:
                if other[1] == key[1]:
                    self.covered.setdefault(other, set()).add("405")
        response = op["responses"].get(str(status))
        if not check(response is not None,
                     f"{what}: status {status} is not documented for {key[0].upper()} {key[1]} "
                     f"(body {data[:200]!r})"):
            return None
        response = self.doc.resolve(response)
        for name, header in response.get("headers", {}).items():
            header = self.doc.resolve(header)
            if name == "Set-Cookie":
                continue
            value = headers.get(name.lower())
            if not check(value is not None, f"{what}: {status} lacks its header {name}"):
                continue
            schema = header.get("schema", {})
            if schema.get("type") == "integer":
                check(value.isdigit() and int(value) >= schema.get("minimum", 0),
                      f"{what}: header {name} {value!r} is not an integer as documented")
            elif "pattern" in schema:
                check(re.match(schema["pattern"], value) is not None,
                      f"{what}: header {name} {value!r} does not match {schema['pattern']}")
        content = response.get("content")
        ctype = headers.get("content-type", "")
        if not content:
            check(not data, f"{what}: {status} has a body, the document says none: {data[:100]!r}")
            return None
        media = next((m for m in content if m.replace(" ", "") == ctype.replace(" ", "")), None)
        if not check(media is not None,
                     f"{what}: {status} came as {ctype!r}, the document gives {list(content)}"):
            return None
        schema = content[media]["schema"]
        if media == "application/json":
            try:
                body = json.loads(data)
            except ValueError as e:
                check(False, f"{what}: the body is not JSON ({e}): {data[:200]!r}")
                return None
        else:
            body = data.decode("utf-8", "replace")
        self.doc.validate(schema, body, f"{what} -> {status}")
        return body


# --- the node ----------------------------------------------------------------


class Node:
    def __init__(self, build, root, with_tokens=True):
        """A node with a tokens file (boss admin, olga operator, vic viewer,
        burst admin), or with no token at all."""
        cli = os.path.join(build, "cli", "apollo11")
        self.cli = cli
        self.tokens_file = os.path.join(root, "tokens")
        self.tokens = {}
        for name, role in (("boss", "admin"), ("olga", "operator"), ("vic", "viewer"),
                           ("burst", "admin")):
            if not with_tokens:
                break
            made = subprocess.run([cli, "token", "create", name, role, "--append", self.tokens_file],
                                  capture_output=True, text=True, check=True)
            self.tokens[name] = made.stdout.split()[0]
        self.port = free_port()
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(root, "node.err"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cli", "apollo11-node"), "start", "--role=all",
             "--state-dir", os.path.join(root, "state"), "--http-bind", f"127.0.0.1:{self.port}",
             "--api-bind", self.api, "--bind", f"tcp://127.0.0.1:{free_port()}",
             "--heartbeat", "100ms", "--slow-min", "1s",
             *(["--api-tokens", self.tokens_file] if with_tokens else [])],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the node exited {self.proc.returncode}: {self.tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/readyz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("the node did not become ready: " + self.tail())

    def tail(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-1500:]

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- the scenario ------------------------------------------------------------


def wait_run(api, run_id, until, what, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        _, _, run = api.call("GET", f"/api/v1/runs/{run_id}", expect=200, replay=False)
        if isinstance(run, dict) and until(run):
            return run
        time.sleep(0.1)
    check(False, f"run {run_id} never {what}")
    return None


def finished(run):
    return run.get("state") in ("SUCCESS", "FAILED", "CANCELED")


def ago(days):
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=days)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def public_routes(api):
    api.call("GET", "/healthz", who="anonymous", expect=200)
    api.call("POST", "/healthz", who="anonymous", expect=405)
    api.call("GET", "/readyz", who="anonymous", expect=200)
    api.call("GET", "/readyz", who="bad", expect=401)
    api.call("POST", "/readyz", expect=405)
    api.call("GET", "/metrics", who="anonymous", expect=200)
    api.call("GET", "/metrics", who="bad", expect=401)
    api.call("POST", "/metrics", expect=405)
    _, h, _ = api.call("GET", "/licenses", who="anonymous", expect=200)
    api.call("GET", "/licenses", who="anonymous", headers={"If-None-Match": h.get("etag", "")},
             expect=304)
    _, _, me = api.call("GET", "/api/v1/whoami", who="anonymous", expect=200)
    check(isinstance(me, dict) and me.get("via") == "anonymous", f"anonymous whoami: {me}")
    _, _, me = api.call("GET", "/api/v1/whoami", who="vic", expect=200)
    check(isinstance(me, dict) and me.get("roles") == "viewer", f"vic's whoami: {me}")
    api.call("GET", "/api/v1/whoami", who="bad", expect=401)
    api.call("POST", "/api/v1/whoami", expect=405)
    api.call("GET", "/auth/login?return=/runs", who="anonymous", expect=501)
    api.call("GET", "/auth/login", who="bad", expect=401)
    api.call("POST", "/auth/login", expect=405)
    api.call("GET", "/auth/callback?code=c&state=s", who="anonymous", expect=501)
    api.call("GET", "/auth/callback", who="bad", expect=401)
    api.call("POST", "/auth/callback", expect=405)
    api.call("POST", "/auth/logout", who="anonymous", expect=200)
    api.call("POST", "/auth/logout", who="anonymous", headers={"Origin": "http://evil.example"},
             expect=403)
    api.call("POST", "/auth/logout", who="bad", expect=401)
    api.call("GET", "/auth/logout", expect=405)


def registry(api, node, root):
    yaml = {"Content-Type": "application/yaml"}
    api.call("POST", "/api/v1/pipelines", body=PARAMS, headers=yaml, expect=201)
    _, _, same = api.call("POST", "/api/v1/pipelines", body=PARAMS, headers=yaml, expect=200)
    check(isinstance(same, dict) and same.get("unchanged") is True, f"the same YAML again: {same}")
    api.call("POST", "/api/v1/pipelines", body=TICK, headers=yaml, expect=201)
    api.call("POST", "/api/v1/pipelines", body=GONE, headers=yaml, expect=201)
    api.call("POST", "/api/v1/pipelines", body="version: \"1.0\"\nname: api.bad\npipeline: 7\n",
             headers=yaml, expect=400)
    api.call("POST", "/api/v1/pipelines", body="", expect=400, replay=False)
    api.call("POST", "/api/v1/pipelines", who="olga", body=GONE, headers=yaml, expect=403)
    api.call("POST", "/api/v1/pipelines", who="anonymous", body=GONE, headers=yaml, expect=401)
    api.call("POST", "/api/v1/pipelines", body="#" * (1100 << 10), headers=yaml, expect=413,
             replay=False)
    api.call("PUT", "/api/v1/pipelines", body=GONE, expect=405)
    # A pipeline that was submitted, never registered: GET answers its snapshot.
    path = os.path.join(root, "submitted.yaml")
    with open(path, "w") as f:
        f.write(SUBMITTED)
    r = subprocess.run([node.cli, "submit", path, "--wait", "--coordinator", node.api],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, f"apollo11 submit: {r.stderr[-300:]}")


def trigger_and_wait(api, body, expect=201, who="boss"):
    _, _, t = api.call("POST", "/api/v1/pipelines/api.params/runs", who=who, body=body,
                       expect=expect)
    return t.get("run_id") if isinstance(t, dict) else None


def runs(api):
    """Triggers the runs the other checks read; returns their ids."""
    ok = trigger_and_wait(api, {"params": {"secs": "0"}})
    api.call("POST", "/api/v1/pipelines/api.params/runs", body="", expect=201)
    keyed = trigger_and_wait(api, {"params": {"secs": 0}, "idempotency_key": "order-42"})
    _, _, again = api.call("POST", "/api/v1/pipelines/api.params/runs",
                           headers={"Idempotency-Key": "order-42"}, body={"params": {"secs": "0"}},
                           expect=200)
    check(isinstance(again, dict) and again.get("run_id") == keyed and again.get("existing"),
          f"the same idempotency key answers run {keyed}: {again}")
    api.call("POST", "/api/v1/pipelines/api.params/runs",
             body={"params": {"secs": "1"}, "idempotency_key": "order-42"}, expect=409)
    api.call("POST", "/api/v1/pipelines/api.params/runs", body={"params": {"nope": "1"}},
             expect=400)
    api.call("POST", "/api/v1/pipelines/api.params/runs", body={"params": {"secs": [1]}},
             expect=400)
    api.call("POST", "/api/v1/pipelines/api.params/runs", body={"colour": "red"}, expect=400)
    api.call("POST", "/api/v1/pipelines/api.params/runs", body={"version": "99"}, expect=404)
    api.call("POST", "/api/v1/pipelines/api.nothing/runs", body={}, expect=404)
    api.call("POST", "/api/v1/pipelines/api.params/runs", who="vic", body={}, expect=403)
    api.call("POST", "/api/v1/pipelines/api.params/runs", who="olga", body={},
             headers={"Origin": "http://evil.example"}, expect=403)
    api.call("GET", "/api/v1/pipelines/api.params/runs", expect=405)
    failed = trigger_and_wait(api, {"params": {"fail": "yes"}}, who="olga")
    for run_id in (ok, keyed, failed):
        wait_run(api, run_id, finished, "finished")
    return ok, failed


def slow_run(api, ok):
    """A run flagged slow (its task's P50 is the first run's), kept, then
    canceled; and confirm's and cancel's refusals."""
    slow = trigger_and_wait(api, {"params": {"secs": "30"}})
    run = wait_run(api, slow, lambda r: r.get("tasks", {}).get("work", {}).get("slow") == "flagged",
                   "was flagged slow", timeout=15)
    exec_id = f"{slow}.work"
    api.call("POST", f"/api/v1/executions/{exec_id}/confirm", body={"action": "maybe"}, expect=400)
    if run:
        api.call("POST", f"/api/v1/executions/{exec_id}/confirm", who="olga",
                 body={"action": "keep"}, expect=202)
    api.call("POST", f"/api/v1/executions/{ok}.work/confirm", body={"action": "kill"}, expect=400)
    api.call("POST", "/api/v1/executions/r20200101T000000-0000.a/confirm", body={"action": "kill"},
             expect=404)
    api.call("POST", f"/api/v1/executions/{exec_id}/confirm", who="vic", body={"action": "kill"},
             expect=403)
    api.call("GET", f"/api/v1/executions/{exec_id}/confirm", expect=405)
    # The running attempt's logs, then the cancel.
    api.call("GET", f"/api/v1/executions/{exec_id}/logs?stream=err", expect=200)
    api.call("POST", f"/api/v1/runs/{slow}/cancel", who="vic", expect=403)
    api.call("POST", f"/api/v1/runs/{slow}/cancel", who="olga", expect=202)
    api.call("POST", f"/api/v1/runs/{ok}/cancel", expect=409)
    api.call("POST", "/api/v1/runs/r20200101T000000-0000/cancel", expect=404)
    api.call("GET", f"/api/v1/runs/{ok}/cancel", expect=405)
    wait_run(api, slow, finished, "ended after its cancel")
    return slow


def reruns(api, ok, failed):
    _, _, again = api.call("POST", f"/api/v1/runs/{failed}/rerun", who="olga",
                           body={"failed": True}, expect=201)
    api.call("POST", f"/api/v1/runs/{ok}/rerun", body={"from": "work", "downstream": True},
             expect=201)
    api.call("POST", f"/api/v1/runs/{ok}/rerun", body="", expect=400)  # nothing failed
    api.call("POST", f"/api/v1/runs/{ok}/rerun", body={"from": "nope"}, expect=404)
    api.call("POST", f"/api/v1/runs/{ok}/rerun", body={"failed": True, "from": "work"}, expect=400)
    api.call("POST", f"/api/v1/runs/{ok}/rerun", body="[1]", expect=400)
    api.call("POST", "/api/v1/runs/r20200101T000000-0000/rerun", body={}, expect=404)
    api.call("POST", f"/api/v1/runs/{ok}/rerun", who="vic", body={}, expect=403)
    api.call("GET", f"/api/v1/runs/{ok}/rerun", expect=405)
    if isinstance(again, dict):
        wait_run(api, again.get("run_id"), finished, "(the rerun) finished")


def pipeline_changes(api):
    for op in ("pause", "unpause"):
        api.call("POST", f"/api/v1/pipelines/api.nothing/{op}", expect=404)
        api.call("POST", f"/api/v1/pipelines/api.params/{op}", who="vic", expect=403)
        api.call("GET", f"/api/v1/pipelines/api.params/{op}", expect=405)
    api.call("POST", "/api/v1/pipelines/api.params/pause", who="olga", expect=200)
    api.call("POST", "/api/v1/pipelines/api.params/runs", body={}, expect=409)  # paused
    api.call("POST", "/api/v1/pipelines/api.params/unpause", who="olga", expect=200)
    bf = "/api/v1/pipelines/api.tick/backfill"
    _, _, preview = api.call("POST", bf, who="olga",
                             body={"from": ago(3), "to": ago(1), "dry_run": True}, expect=200)
    check(isinstance(preview, dict) and preview.get("dry_run") is True and
          preview.get("would_queue", 0) >= 1 and len(preview.get("times", [])) ==
          min(1000, preview.get("would_queue", 0)), f"backfill dry run: {preview}")
    _, _, queued = api.call("POST", bf, who="olga",
                            body={"from": ago(3), "to": ago(1), "max_active": 2}, expect=200)
    check(isinstance(queued, dict) and queued.get("queued", 0) >= 1 and
          queued.get("queued") == preview.get("would_queue"),
          f"backfill queued {queued} what its dry run said: {preview}")
    api.call("POST", bf, body={"from": ago(3), "to": ago(1), "dry_run": "yes"}, expect=400)
    api.call("POST", bf, body={"from": ago(3)}, expect=400)
    api.call("POST", bf, body={"from": "yesterday-ish", "to": ago(1)}, expect=400)
    api.call("POST", bf, body={"from": ago(3), "to": ago(1), "max_active": 0}, expect=400)
    api.call("POST", bf, body="not json", expect=400)
    api.call("POST", "/api/v1/pipelines/api.params/backfill", body={"from": ago(3), "to": ago(1)},
             expect=404)  # no schedule
    api.call("POST", bf, who="vic", body={"from": ago(3), "to": ago(1)}, expect=403)
    api.call("GET", bf, expect=405)
    api.call("POST", "/api/v1/pipelines/api.gone/remove", who="olga", expect=403)  # admin's
    api.call("POST", "/api/v1/pipelines/api.gone/remove", expect=200)
    api.call("POST", "/api/v1/pipelines/api.nothing/remove", expect=404)
    api.call("GET", "/api/v1/pipelines/api.gone/remove", expect=405)
    api.call("POST", "/api/v1/cluster/resign", expect=409)  # no HA here
    api.call("POST", "/api/v1/cluster/resign", who="olga", expect=403)  # admin's
    api.call("GET", "/api/v1/cluster/resign", expect=405)


def reads(api, ok, failed):
    def get_twice(path, who="vic"):
        """A 200, then the same with its ETag: 304."""
        _, h, body = api.call("GET", path, who=who, expect=200)
        if "etag" in h:
            api.call("GET", path, who=who, headers={"If-None-Match": h["etag"]}, expect=304,
                     replay=False)
        return body

    get_twice("/api/v1/node")
    api.call("POST", "/api/v1/node", expect=405)
    page = get_twice("/api/v1/runs?limit=2")
    if check(isinstance(page, dict) and page.get("next_cursor"), f"a page of 2 runs: {page}"):
        get_twice("/api/v1/runs?limit=2&cursor=" + urllib.parse.quote(page["next_cursor"]))
    get_twice("/api/v1/runs?state=FAILED,CANCELED&state=SUCCESS&prefix=api.&since=7d")
    get_twice("/api/v1/runs?pipeline=api.params&until=2099-01-01&limit=1000")
    for bad in ("state=DONE", "limit=0", "limit=1001", "since=soon", "cursor=zzz", "colour=red"):
        api.call("GET", "/api/v1/runs?" + bad, expect=400)
    api.call("GET", "/api/v1/runs", who="anonymous", expect=401)
    api.call("POST", "/api/v1/runs", expect=405)
    get_twice("/api/runs?limit=3")
    api.call("GET", "/api/runs?limit=1001", expect=400)
    api.call("GET", "/api/runs?pipeline=x", expect=400)
    api.call("POST", "/api/runs", expect=405)
    get_twice(f"/api/v1/runs/{failed}")
    for sub in ("", "/history"):
        get_twice(f"/api/v1/runs/{ok}{sub}")
        api.call("GET", f"/api/v1/runs/r20200101T000000-0000{sub}", expect=404)
        api.call("GET", f"/api/v1/runs/{ok}{sub}?colour=red", expect=400)
        api.call("GET", f"/api/v1/runs/{ok}{sub}?limit=x", expect=400)
        api.call("POST", f"/api/v1/runs/{ok}{sub}", expect=405)
    api.call("GET", "/api/v1/runs/" + "x" * 700, expect=404)  # no id is that long
    get_twice(f"/api/v1/runs/{ok}/graph")
    api.call("GET", "/api/v1/runs/r20200101T000000-0000/graph", expect=404)
    api.call("POST", f"/api/v1/runs/{ok}/graph", expect=405)
    get_twice(f"/api/v1/executions/{failed}.work")
    get_twice(f"/api/v1/executions/{ok}.work")
    api.call("GET", "/api/v1/executions/r20200101T000000-0000.a", expect=404)
    api.call("GET", f"/api/v1/executions/{ok}.work?x=1", expect=400)
    api.call("POST", f"/api/v1/executions/{ok}.work", expect=405)
    logs = f"/api/v1/executions/{ok}.work/logs"
    get_twice(logs)
    get_twice(logs + "?stream=err&attempt=1&offset=1&max_bytes=65536")
    for bad in ("stream=events", "max_bytes=0", "max_bytes=65537", "attempt=-1", "offset=x"):
        api.call("GET", f"{logs}?{bad}", expect=400)
    api.call("GET", "/api/v1/executions/r20200101T000000-0000.a/logs", expect=404)
    api.call("POST", logs, expect=405)
    get_twice(f"/api/v1/executions/{ok}.work/trace")
    api.call("GET", "/api/v1/executions/r20200101T000000-0000.a/trace", expect=404)
    api.call("POST", f"/api/v1/executions/{ok}.work/trace", expect=405)
    get_twice("/api/v1/workers")
    api.call("GET", "/api/v1/workers?slots=1", expect=400)
    api.call("POST", "/api/v1/workers", expect=405)
    get_twice("/api/v1/alerts?limit=1000")
    api.call("GET", "/api/v1/alerts?limit=1001", expect=400)
    api.call("POST", "/api/v1/alerts", expect=405)
    get_twice("/api/v1/cluster")
    api.call("POST", "/api/v1/cluster", expect=405)
    live_routes(api)
    get_twice("/api/v1/pipelines")
    api.call("GET", "/api/v1/pipelines?limit=0", expect=400)
    for name in ("api.params", "api.params@1", "api.tick?limit=5", "api.submitted", "api.gone@1"):
        get_twice(f"/api/v1/pipelines/{name}")
    api.call("GET", "/api/v1/pipelines/api.nothing", expect=404)
    api.call("GET", "/api/v1/pipelines/api.params@9", expect=404)
    api.call("GET", "/api/v1/pipelines/api.params?fires=2", expect=400)
    get_twice("/api/v1/pipelines/api.params/versions")
    api.call("GET", "/api/v1/pipelines/api.nothing/versions", expect=404)
    api.call("GET", "/api/v1/pipelines/api.params/versions?limit=1001", expect=400)
    api.call("POST", "/api/v1/pipelines/api.params/versions", expect=405)
    api.call("POST", "/api/v1/pipelines/api.params", expect=405)
    get_twice("/api/v1/audit?since=1h&principal=olga&action=cancel&limit=50", who="boss")
    get_twice("/api/v1/audit", who="boss")
    api.call("GET", "/api/v1/audit", who="olga", expect=403)  # admin's
    api.call("GET", "/api/v1/audit?limit=10001", expect=400)
    api.call("GET", "/api/v1/audit?run=x", expect=400)
    api.call("POST", "/api/v1/audit", expect=405)
    # Every route but a sign-in provider's redirect refuses a query
    # parameter it does not take.
    for path in ("/readyz", "/metrics", "/licenses", "/api/v1/openapi.json", "/api/v1/whoami",
                 "/api/v1/node", f"/api/v1/runs/{ok}/graph", f"/api/v1/executions/{ok}.work/trace",
                 "/api/v1/cluster", "/api/v1/alerts", "/api/v1/events", "/api/v1/overview/history",
                 "/auth/login", logs):
        api.call("GET", path + "?colour=red", expect=400)
    for path in (f"/api/v1/runs/{ok}/cancel", "/api/v1/pipelines/api.params/pause",
                 "/api/v1/pipelines/api.params/unpause", "/api/v1/pipelines/api.params/remove",
                 "/api/v1/cluster/resign", "/auth/logout"):
        api.call("POST", path + "?colour=red", expect=400)
    # A form-encoded body is the route's, not query parameters.
    api.call("POST", "/api/v1/pipelines", body="version=1", expect=400, replay=False,
             headers={"Content-Type": "application/x-www-form-urlencoded"})
    # The unversioned alias answers as /api/v1/ does.
    api.call("GET", "/api/workers", who="vic", expect=200, doc_path="/api/v1/workers")


def live_routes(api):
    """The overview's history, and the live events: a stream's head and
    first events (a hello), a resume from its id (no reset), a reset for an
    id of no stream, and the 503 of an address whose streams are all open."""
    _, _, history = api.call("GET", "/api/v1/overview/history", who="vic", expect=200)
    if check(isinstance(history, dict), f"the overview history: {history}"):
        columns = history.get("columns", [])
        check(columns[:1] == ["time_ms"] and "apollo11_backlog_cap" in columns,
              f"the overview history's columns: {columns}")
        check(all(len(row) == len(columns) for row in history.get("samples", [])),
              "every sample is as long as the columns")
    api.call("POST", "/api/v1/overview/history", expect=405)
    _, events = api.stream("/api/v1/events", who="vic")
    hello = events[-1][2] if events and events[-1][0] == "hello" else {}
    check(isinstance(hello.get("id"), str) and re.match(r"^[0-9a-f]+\.\d+$", hello["id"]) is not None
          and isinstance(hello.get("live"), bool), f"the first event is a hello with an id: {events}")
    check([e for e in events if e[0] == "reset"] == [], f"a stream without Last-Event-ID has no reset: {events}")
    if hello.get("id"):
        _, again = api.stream("/api/v1/events", who="olga", headers={"Last-Event-ID": hello["id"]})
        check(not [e for e in again if e[0] == "reset"], f"a resume from the hello's id: {again}")
    _, unknown = api.stream("/api/v1/events", headers={"Last-Event-ID": "0.1"})
    check([e[0] for e in unknown] == ["reset", "hello"], f"an id of no stream: reset, hello: {unknown}")
    api.call("POST", "/api/v1/events", expect=405)
    # The streams one address may hold (16) taken, the next is a 503.
    held = []
    try:
        for _ in range(64):
            conn = http.client.HTTPConnection("127.0.0.1", api.port, timeout=15)
            conn.request("GET", "/api/v1/events", headers={"Authorization": "Bearer " + api.tokens["vic"]})
            r = conn.getresponse()
            held.append(r)  # the answer holds the socket (Connection: close)
            if r.status != 200:
                break
            r.readline()  # the head is in: the stream counts
        status, _ = api.stream("/api/v1/events", who="vic", expect=503)
        check(len(held) <= 17, f"{len(held)} streams opened from one address before a refusal")
    finally:
        for r in held:
            r.close()


def guarded(api):
    """The operations behind a role, each at a path of ids nobody has
    (refused before that matters)."""
    for (method, template), (_, op) in sorted(api.doc.ops.items()):
        if {} in op.get("security", []):
            continue
        yield method.upper(), template.replace("{id}", "api.nothing"), op


def refusals(api):
    """Every guarded operation refuses a caller without a token (401) and
    a body over 1 MiB (413)."""
    for method, path, _ in guarded(api):
        api.call(method, path, who="anonymous", expect=401)
        if method == "POST":
            api.call(method, path, body="#" * (1100 << 10), expect=413, replay=False)


def rate_limit(api):
    """One principal's changing requests past --api-rate-limit (20/s,
    bursts of 40): 429 with Retry-After, on every changing operation."""
    for method, path, _ in guarded(api):
        if method != "POST":
            continue
        for _ in range(300):
            status, _, _ = api.call(method, path, who="burst", replay=False)
            if status == 429:
                break
        else:
            check(False, f"{method} {path}: 300 quick requests were never answered 429")


def without_tokens(doc, build, root, covered):
    """A node without tokens: a bearer token is refused (403) on every
    route that looks at it, and anonymous callers may read but not change."""
    node = Node(build, os.path.join(root, "tokenless"), with_tokens=False)
    try:
        api = Api(doc, node.port, {})
        api.covered = covered
        for method, path, _ in guarded(api):
            api.call(method, path, who="bad", expect=403, replay=False)
            if method == "POST":
                api.call(method, path, who="anonymous", expect=403, replay=False)
        for path in ("/readyz", "/metrics", "/licenses", "/api/v1/openapi.json", "/api/v1/whoami",
                     "/auth/login", "/auth/callback"):
            api.call("GET", path, who="bad", expect=403, replay=False)
        api.call("POST", "/auth/logout", who="bad", expect=403, replay=False)
        api.call("GET", "/api/v1/workers", who="anonymous", expect=200, replay=False)
    finally:
        node.stop()


def served_document(api, path):
    _, h, served = api.call("GET", "/api/v1/openapi.json", who="anonymous", expect=200)
    api.call("GET", "/api/v1/openapi.json", who="anonymous",
             headers={"If-None-Match": h.get("etag", "")}, expect=304)
    api.call("GET", "/api/v1/openapi.json", who="bad", expect=401)
    api.call("POST", "/api/v1/openapi.json", expect=405)
    api.call("POST", "/licenses", expect=405)
    api.call("GET", "/licenses", who="bad", expect=401)
    with open(path, "rb") as f:
        check(served == json.loads(f.read()),
              "GET /api/v1/openapi.json differs from docs/api/openapi.json")


# --- coverage ----------------------------------------------------------------


def route_table(source):
    with open(os.path.join(source, "observability", "http_access.cc")) as f:
        text = f.read()
    table = text[text.index("kRules = {{"):text.index("}};", text.index("kRules = {{"))]
    return re.findall(r'\{"(GET|POST)", "([^"]+)",', table)


def versioned(path):
    if path.startswith("/api/") and not path.startswith("/api/v1/"):
        return "/api/v1/" + path[len("/api/"):]
    return path


def coverage(doc, api, source):
    rows = route_table(source)
    check(len(rows) >= 30, f"read only {len(rows)} rows of http_access.cc's kRules")
    documented = {(m, p) for (m, p) in doc.ops}
    for method, path in rows:
        check((method.lower(), versioned(path)) in documented,
              f"{method} {path} (kRules) is not in the document as {versioned(path)}")
    in_table = {(m.lower(), versioned(p)) for m, p in rows} | {(m.lower(), p) for m, p in rows}
    for method, path in sorted(documented):
        check((method, path) in in_table, f"{method.upper()} {path} is documented but not in kRules")
    for key, (_, op) in sorted(doc.ops.items()):
        got = api.covered.get(key, set())
        if not check(got, f"{key[0].upper()} {key[1]} was never called"):
            continue
        if key not in NO_SUCCESS:
            check(any(s.startswith("2") for s in got),
                  f"{key[0].upper()} {key[1]} never answered a success (got {sorted(got)})")
        missing = set(op["responses"]) - got - ALWAYS_UNPROVOKED - set(NOT_PROVOKED.get(key, {}))
        check(not missing, f"{key[0].upper()} {key[1]}: documented {sorted(missing)} never provoked")


# --- Prism -------------------------------------------------------------------


def install_prism(source, cache):
    """npm ci of tests/api/npm's lockfile into `cache`, again only when the
    lockfile changed (as scripts/build-dashboard.sh does for web/)."""
    here = os.path.join(source, "tests", "api", "npm")
    os.makedirs(cache, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(here, name), cache)
    lock = os.path.join(cache, "package-lock.json")
    stamp = os.path.join(cache, ".installed-lock")
    prism = os.path.join(cache, "node_modules", ".bin", "prism")
    same = os.path.exists(stamp) and open(stamp).read() == open(lock).read()
    if not (same and os.path.exists(prism)):
        r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=cache,
                           capture_output=True, text=True, timeout=600)
        if not check(r.returncode == 0,
                     "npm ci of @stoplight/prism-cli failed (the npm registry must be reachable "
                     f"the first time): {r.stderr[-600:]}"):
            return None
        shutil.copy(lock, stamp)
    return prism


def through_prism(prism, doc_path, api, root):
    port = free_port()
    log = open(os.path.join(root, "prism.log"), "w")
    proc = subprocess.Popen([prism, "proxy", doc_path, f"http://127.0.0.1:{api.port}",
                             "--errors", "--port", str(port), "--host", "127.0.0.1"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    break
                time.sleep(0.2)
        if not check(proc.poll() is None, "prism proxy did not start: see prism.log"):
            return
        violations = 0
        for method, path, headers, body in api.sent:
            status, h, data = api.raw(method, path, headers, body, port=port)
            said = h.get("sl-violations")
            problem = h.get("content-type", "").startswith("application/problem+json")
            if said or problem:
                violations += 1
                check(False, f"prism: {method} {path[:100]} -> {status}: "
                             f"{(said or data.decode('utf-8', 'replace'))[:400]}")
        print(f"prism: {len(api.sent)} requests replayed, {violations} violations")
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


def main():
    args = sys.argv[1:]
    prism_dir = None
    if "--prism" in args:
        at = args.index("--prism")
        prism_dir = args[at + 1]
        del args[at:at + 2]
    source, build = args[0], args[1]
    doc_path = os.path.join(source, "docs", "api", "openapi.json")
    started = time.time()
    doc = Document(doc_path)
    check(doc.doc.get("openapi", "").startswith("3.1") and doc.doc["info"].get("version"),
          "an OpenAPI 3.1 document with info.version")
    prism = install_prism(source, prism_dir) if prism_dir else None
    with tempfile.TemporaryDirectory(prefix="apollo11-openapi-") as root:
        node = Node(build, root)
        try:
            api = Api(doc, node.port, node.tokens)
            public_routes(api)
            registry(api, node, root)
            ok, failed = runs(api)
            slow_run(api, ok)
            reruns(api, ok, failed)
            pipeline_changes(api)
            reads(api, ok, failed)
            refusals(api)
            rate_limit(api)
            served_document(api, doc_path)
            if prism:
                through_prism(prism, doc_path, api, root)
        finally:
            node.stop()
        if failures:
            print("the node's log ends:\n" + node.tail())
        os.makedirs(os.path.join(root, "tokenless"))
        without_tokens(doc, build, root, api.covered)
        coverage(doc, api, source)
    calls = sum(len(s) for s in api.covered.values())
    print(f"{len(doc.ops)} operations, {calls} (operation, status) pairs answered, "
          f"{len(failures)} checks failed, {time.time() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
