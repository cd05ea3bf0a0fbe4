#!/usr/bin/env python3
"""Span export end to end (issue 38): a real `apollo11-node start --role=all
--otlp-endpoint http://127.0.0.1:PORT` and a collector written here with
http.server. The collector is down when the run ends and comes up once the
node has failed to send: the spans still arrive (retries). Every POST goes
to /v1/traces as application/json and is checked against the shape of an
OTLP ExportTraceServiceRequest in the protobuf JSON mapping; then the trace
itself: one root span for the run, one child per attempt (a retried task, a
failed one), the attempt's span id equal to the span in the TRACEPARENT the
task saw, the trace id equal to APOLLO11_TRACE_ID left-padded to 32 digits,
transitions as events, status codes. A worker-only node and a malformed
endpoint are refused at start (exit 2).

  otlp_test.py BUILD_DIR
"""
import http.server
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
DECIMAL = re.compile(r"^[0-9]+$")

PIPELINE = """version: "1.0"
name: otlp.check
pipeline:
  - id: flaky
    type: shell
    command: |
      echo "flaky $APOLLO11_ATTEMPT $TRACEPARENT $APOLLO11_TRACE_ID" >> {out}
      if [ "$APOLLO11_ATTEMPT" -lt 2 ]; then exit 75; fi
    retry: {{max_retries: 2, delay: 1s}}
  - id: broken
    type: shell
    command: |
      echo "broken $APOLLO11_ATTEMPT $TRACEPARENT $APOLLO11_TRACE_ID" >> {out}
      exit 3
    depends_on: flaky
  - id: after
    type: noop
    depends_on: broken
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok ", what, flush=True)


def eventually(probe, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if probe():
            return
        time.sleep(0.2)
    raise AssertionError("timed out: " + what)


# --- The OTLP JSON shape (opentelemetry/proto/collector/trace/v1 and
# trace/v1, common/v1, resource/v1 in the protobuf JSON mapping: lowerCamel
# field names, ids as hex, fixed64 times and int64 values as decimal
# strings, enums as integers).

def check_any_value(v, where):
    assert isinstance(v, dict) and len(v) == 1, f"{where}: an AnyValue holds one field: {v}"
    (kind, value), = v.items()
    if kind == "stringValue":
        assert isinstance(value, str), where
    elif kind == "intValue":
        assert isinstance(value, str) and re.match(r"^-?[0-9]+$", value), f"{where}: {value!r}"
    elif kind == "boolValue":
        assert isinstance(value, bool), where
    elif kind == "doubleValue":
        assert isinstance(value, (int, float)), where
    else:
        raise AssertionError(f"{where}: unexpected AnyValue field {kind}")


def check_attributes(attrs, where):
    assert isinstance(attrs, list), f"{where}: attributes are a list"
    keys = set()
    for kv in attrs:
        assert set(kv) == {"key", "value"}, f"{where}: a KeyValue is key and value: {kv}"
        assert isinstance(kv["key"], str) and kv["key"], where
        assert kv["key"] not in keys, f"{where}: attribute {kv['key']} twice"
        keys.add(kv["key"])
        check_any_value(kv["value"], f"{where} {kv['key']}")


SPAN_FIELDS = {"traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano",
               "endTimeUnixNano", "attributes", "events", "status", "droppedEventsCount",
               "droppedAttributesCount", "traceState", "flags", "links"}


def check_span(span, where):
    assert set(span) <= SPAN_FIELDS, f"{where}: unknown span fields {set(span) - SPAN_FIELDS}"
    assert HEX32.match(span["traceId"]) and span["traceId"] != "0" * 32, where
    assert HEX16.match(span["spanId"]) and span["spanId"] != "0" * 16, where
    if span.get("parentSpanId"):
        assert HEX16.match(span["parentSpanId"]), where
    assert isinstance(span["name"], str) and span["name"], where
    assert span["kind"] in (0, 1, 2, 3, 4, 5), f"{where}: kind is an enum integer"
    for f in ("startTimeUnixNano", "endTimeUnixNano"):
        assert isinstance(span[f], str) and DECIMAL.match(span[f]), f"{where}: {f} {span[f]!r}"
    assert int(span["startTimeUnixNano"]) <= int(span["endTimeUnixNano"]), where
    assert int(span["startTimeUnixNano"]) > 1_600_000_000 * 10**9, f"{where}: Unix nanoseconds"
    check_attributes(span.get("attributes", []), where)
    for e in span.get("events", []):
        assert set(e) <= {"timeUnixNano", "name", "attributes", "droppedAttributesCount"}, where
        assert DECIMAL.match(e["timeUnixNano"]) and isinstance(e["name"], str), where
        check_attributes(e.get("attributes", []), where + " event")
    status = span.get("status", {})
    assert set(status) <= {"code", "message"} and status.get("code", 0) in (0, 1, 2), where


def check_request(doc):
    assert set(doc) == {"resourceSpans"} and isinstance(doc["resourceSpans"], list)
    for rs in doc["resourceSpans"]:
        assert set(rs) <= {"resource", "scopeSpans", "schemaUrl"}
        check_attributes(rs["resource"]["attributes"], "resource")
        for ss in rs["scopeSpans"]:
            assert set(ss) <= {"scope", "spans", "schemaUrl"}
            assert isinstance(ss["scope"]["name"], str) and ss["scope"]["name"]
            for i, span in enumerate(ss["spans"]):
                check_span(span, f"span {i} ({span.get('name')})")


def attrs(obj):
    out = {}
    for kv in obj.get("attributes", []):
        (_, value), = kv["value"].items()
        out[kv["key"]] = value
    return out


# --- The collector.

class Collector:
    def __init__(self, port):
        self.posts = []  # (path, content type, body)
        collector = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                collector.posts.append((self.path, self.headers.get("Content-Type"), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


class Node:
    def __init__(self, build, root, otlp):
        self.http = f"127.0.0.1:{free_port()}"
        self.api = f"tcp://127.0.0.1:{free_port()}"
        self.log = open(os.path.join(root, "node.err"), "w")
        self.proc = subprocess.Popen(
            [os.path.join(build, "cli", "apollo11-node"), "start", "--role=all", "--slots", "2",
             "--state-dir", os.path.join(root, "state"), "--http-bind", self.http,
             "--api-bind", self.api, "--bind", f"tcp://127.0.0.1:{free_port()}",
             "--otlp-endpoint", otlp],
            stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"the node exited {self.proc.returncode}: {self.err()}")
            try:
                if urllib.request.urlopen(f"http://{self.http}/readyz", timeout=2).status == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the node did not become ready")

    def err(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()[-2000:]

    def metric(self, name):
        text = urllib.request.urlopen(f"http://{self.http}/metrics", timeout=5).read().decode()
        total = 0.0
        for line in text.splitlines():
            if line.startswith(name + " ") or line.startswith(name + "{"):
                total += float(line.rsplit(" ", 1)[1])
        return total

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def refused_at_start(build, root, *flags):
    r = subprocess.run([os.path.join(build, "cli", "apollo11-node"), "start",
                        "--state-dir", os.path.join(root, "refused"), *flags],
                       capture_output=True, text=True, timeout=30)
    return r.returncode, r.stderr


def check_refusals(build, root):
    code, err = refused_at_start(build, root, "--role=worker",
                                 "--otlp-endpoint", "http://127.0.0.1:4318")
    check(code == 2 and "--otlp-endpoint" in err and "coordinator" in err,
          f"a worker-only node refuses --otlp-endpoint (exit {code}): {err.strip()[-300:]}")
    for bad in ("127.0.0.1:4318", "ftp://127.0.0.1:4318", "http://127.0.0.1:99999",
                "http://u:p@127.0.0.1:4318"):
        code, err = refused_at_start(build, root, "--role=all", "--http-bind", "off",
                                     "--otlp-endpoint", bad)
        check(code == 2 and "--otlp-endpoint" in err,
              f"--otlp-endpoint {bad} is refused at start (exit {code})")


def main():
    build = sys.argv[1]
    apollo11 = os.path.join(build, "cli", "apollo11")
    with tempfile.TemporaryDirectory() as root:
        check_refusals(build, root)
        port = free_port()
        node = Node(build, root, f"http://127.0.0.1:{port}")
        collector = None
        try:
            out = os.path.join(root, "traceparents.txt")
            pipeline = os.path.join(root, "pipeline.yaml")
            with open(pipeline, "w") as f:
                f.write(PIPELINE.format(out=out))
            sub = subprocess.run([apollo11, "submit", "--wait", pipeline, "--coordinator",
                                  node.api], capture_output=True, text=True, timeout=120)
            run_id = sub.stdout.splitlines()[0].strip()
            check(run_id != "", f"the run {run_id} ran ({sub.returncode})")
            # The collector is down: the first POST fails, then it comes up.
            eventually(lambda: node.metric("apollo11_otlp_export_failures_total") >= 1, 30,
                       "a POST to the absent collector failed")
            check(True, "the collector was down when the run ended: the POST failed")
            collector = Collector(port)
            eventually(lambda: node.metric("apollo11_otlp_spans_exported_total") >= 4, 60,
                       "the spans arrived after the collector came up: " + node.err())
            check(True, "retried, the spans arrived once the collector was up")
            check_trace(collector, run_id, out)
            check(node.metric("apollo11_otlp_spans_dropped_total") == 0, "no span was dropped")
        finally:
            node.stop()
            if collector:
                collector.stop()
    print("otlp export: all checks passed")


def check_trace(collector, run_id, out):
    spans, resources = [], []
    for path, ctype, body in collector.posts:
        check(path == "/v1/traces", f"POST {path}")
        check(ctype == "application/json", f"Content-Type {ctype}")
        doc = json.loads(body)
        check_request(doc)
        for rs in doc["resourceSpans"]:
            resources.append(attrs(rs["resource"]))
            for ss in rs["scopeSpans"]:
                spans += ss["spans"]
    check(True, f"{len(collector.posts)} POSTs have the OTLP JSON shape")
    for r in resources:
        check(r["service.name"] == "apollo11" and r["service.version"] and
              r["service.instance.id"], f"the resource names the service: {r}")
    mine = [s for s in spans if attrs(s).get("apollo11.run_id") == run_id]
    roots = [s for s in mine if not s.get("parentSpanId")]
    check(len(roots) == 1, f"one run span ({len(roots)})")
    run = roots[0]
    check(run["name"] == "run otlp.check" and run["kind"] == 1, "the run span's name and kind")
    check(attrs(run)["apollo11.state"] == "FAILED" and run["status"]["code"] == 2,
          "the failed run's span is an error")
    check([e["name"] for e in run.get("events", [])] == ["CANCELED"] and
          attrs(run["events"][0])["apollo11.task_id"] == "after",
          "the task that never ran is an event of the run span")
    children = {(attrs(s)["apollo11.task_id"], int(attrs(s)["apollo11.attempt"])): s
                for s in mine if s is not run}
    check(sorted(children) == [("broken", 1), ("flaky", 1), ("flaky", 2)],
          f"one span per attempt: {sorted(children)}")
    for s in children.values():
        check(s["parentSpanId"] == run["spanId"] and s["traceId"] == run["traceId"],
              f"{s['name']} is a child of the run span")
        check(int(run["startTimeUnixNano"]) <= int(s["startTimeUnixNano"]) and
              int(s["endTimeUnixNano"]) <= int(run["endTimeUnixNano"]),
              f"{s['name']} lies within the run span")
    with open(out) as f:
        seen = [line.split() for line in f if line.strip()]
    check(len(seen) == 3, f"the tasks wrote their TRACEPARENT three times: {seen}")
    for task, attempt, traceparent, trace_id in seen:
        version, trace, span, flags = traceparent.split("-")
        check(trace == trace_id.rjust(32, "0") == run["traceId"],
              f"the traceId is APOLLO11_TRACE_ID {trace_id} left-padded")
        check(children[(task, int(attempt))]["spanId"] == span,
              f"{task} attempt {attempt}: the span id is the TRACEPARENT's {span}")
    retried = children[("flaky", 1)]
    check(attrs(retried)["apollo11.state"] == "RETRYING" and retried["status"]["code"] == 2,
          "the retried attempt is an error, RETRYING")
    check([e["name"] for e in retried["events"]][-2:] == ["RUNNING", "RETRYING"],
          "its transitions are its events")
    check(children[("flaky", 2)]["status"]["code"] == 0 and
          attrs(children[("flaky", 2)])["apollo11.exit_code"] == "0", "the retry succeeded")
    broken = children[("broken", 1)]
    check(broken["status"]["code"] == 2 and attrs(broken)["apollo11.exit_code"] == "3" and
          attrs(broken)["apollo11.state"] == "FAILED", "the failed attempt exited 3")


if __name__ == "__main__":
    main()
