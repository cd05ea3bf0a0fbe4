"""A throw-away apollo11-node for the service rows (bench/service_bench.py).

Each Node gets its own state dir under a temp root and free loopback ports;
everything else is the node's default unless the caller passes flags, and
`Node.flags_note()` names what was passed beyond placement (state dir and
ports), so a figure can be printed beside its non-default flags.

Also: reading a process's CPU, RSS, threads and fds from /proc, HTTP calls
with or without keep-alive, percentiles and markdown cells.
"""

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.parse

TICK = os.sysconf("SC_CLK_TCK")

# Flags that only place a node (where it keeps state, which ports): not
# behaviour, so not reported as "non-default".
PLACEMENT = ("--state-dir", "--http-bind", "--api-bind", "--bind", "--connect")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- /proc

def proc_cpu_s(pid):
    """utime + stime of PID, seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def proc_status(pid):
    """VmRSS, VmHWM, RssAnon, RssFile (the journal's mapped pages count
    here: LMDB reads through a read-only mmap), RssShmem (kB) and Threads."""
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
                out[k] = int(v.split()[0])
            elif k == "Threads":
                out[k] = int(v)
    return out


def rss_mb(pid):
    """(VmRSS, RssAnon, RssFile) of PID in MB."""
    st = proc_status(pid)
    return (st.get("VmRSS", 0) / 1024.0, st.get("RssAnon", 0) / 1024.0,
            st.get("RssFile", 0) / 1024.0)


def fmt_rss(r):
    return "%.1f MB (anon %.1f, file %.1f)" % r


def proc_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class CpuWindow:
    """CPU % of one core that PID used between start() and stop()."""

    def __init__(self, pid):
        self.pid = pid
        self.c0 = self.t0 = None

    def start(self):
        self.c0, self.t0 = proc_cpu_s(self.pid), time.monotonic()
        return self

    def stop(self):
        c1, t1 = proc_cpu_s(self.pid), time.monotonic()
        return 100.0 * (c1 - self.c0) / max(t1 - self.t0, 1e-9)


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


# ---------------------------------------------------------------- figures

def pct(values, p):
    """The p-th percentile (nearest rank) of values; None when empty."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def median(values):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def spread(values, fmt="%.1f"):
    """'median (min-max, n=K)' of values."""
    v = [x for x in values if x is not None]
    if not v:
        return "n/a"
    if len(v) == 1:
        return fmt % v[0]
    return "%s (%s-%s, n=%d)" % (fmt % median(v), fmt % min(v), fmt % max(v), len(v))


# ---------------------------------------------------------------- HTTP

class Http:
    """One keep-alive connection (http.client). The node answers every
    request with `Connection: close`; http.client then opens a new
    connection for the next request, which `reconnects` counts."""

    def __init__(self, port, token=None, timeout=30, source=None):
        self.port, self.token, self.timeout = port, token, timeout
        self.source = (source, 0) if source else None
        self.conn = None
        self.reconnects = 0
        self.closed_by_server = 0

    def request(self, method, path, body=None, headers=None):
        h = {"Connection": "keep-alive"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        if method == "POST" and body is None:
            body = ""
        h.update(headers or {})
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout,
                                                      source_address=self.source)
                self.reconnects += 1
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                if (r.getheader("Connection") or "").lower() == "close":
                    self.closed_by_server += 1
                    self.conn.close()
                    self.conn = None
                return r.status, r, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed meanwhile: once more.
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def json(self, method, path, body=None, headers=None):
        status, _, data = self.request(method, path, body, headers)
        try:
            return status, json.loads(data) if data else None
        except ValueError:
            return status, {"raw": data[:300].decode("utf-8", "replace")}

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None


def get_status(port, path, timeout=2.0):
    """Status of one GET on a new connection, or None when it cannot connect."""
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", path)
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    except OSError:
        return None


def metrics(port):
    """The node's /metrics as {series: value}."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    c.close()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            k, _, v = line.rpartition(" ")
            try:
                out[k] = float(v)
            except ValueError:
                pass
    return out


# ---------------------------------------------------------------- the node

class Node:
    """apollo11-node start --role=all in ROOT/NAME/state, free ports.

    token: make a token file and pass --api-token-file (without a token the
    node refuses every changing HTTP request, so rows that trigger or
    register over HTTP need one: it is reported as a non-default flag).
    """

    def __init__(self, node_bin, root, name, flags=(), token=True, env=None, prefix=()):
        self.node_bin = node_bin
        self.dir = os.path.join(root, name)
        os.makedirs(self.dir, exist_ok=True)
        self.state = os.path.join(self.dir, "state")
        self.http_port = free_port()
        self.api = "tcp://127.0.0.1:%d" % free_port()
        self.workers = "tcp://127.0.0.1:%d" % free_port()
        self.flags = list(flags)
        self.token = None
        if token:
            self.token = "bench-" + secrets.token_hex(16)
            path = os.path.join(self.dir, "api-token")
            with open(path, "w") as f:
                f.write(self.token + "\n")
            os.chmod(path, 0o600)
            self.flags += ["--api-token-file", path]
        self.env = env
        self.prefix = list(prefix)  # e.g. ["faketime", "-f", "+8d"]
        self.proc = None
        self.log = None
        self.started_at = None

    def argv(self):
        return self.prefix + [self.node_bin, "start", "--role=all", "--state-dir", self.state,
                              "--http-bind", "127.0.0.1:%d" % self.http_port,
                              "--api-bind", self.api, "--bind", self.workers] + self.flags

    def flags_note(self):
        """The flags beyond placement, as one would type them."""
        out, skip = [], False
        for i, a in enumerate(self.flags):
            if skip:
                skip = False
                continue
            if a in PLACEMENT:
                skip = True
                continue
            if a == "--api-token-file":
                out.append("--api-token-file F")
                skip = True
                continue
            out.append(a)
        note = " ".join(out) if out else "defaults"
        if self.prefix:
            note = " ".join(self.prefix) + " " + note
        return note

    def start(self, wait=True, timeout=60):
        self.log = open(os.path.join(self.dir, "node.err"), "a")
        self.started_at = time.perf_counter()
        env = dict(os.environ, **(self.env or {}))
        self.proc = subprocess.Popen(self.argv(), stdout=subprocess.DEVNULL, stderr=self.log,
                                     env=env, start_new_session=True)
        if wait:
            return self.wait_ready(timeout)
        return None

    @property
    def pid(self):
        return self.proc.pid

    def node_pid(self):
        """The apollo11-node's pid (faketime execs it in place, so the same)."""
        return self.proc.pid

    def wait_ready(self, timeout=60, poll=0.0005):
        """Seconds from start() to the first 200 on /readyz."""
        deadline = time.perf_counter() + timeout
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("apollo11-node exited %s: %s" % (self.proc.returncode, self.tail()))
            if get_status(self.http_port, "/readyz") == 200:
                return time.perf_counter() - self.started_at
            time.sleep(poll)
        raise RuntimeError("apollo11-node not ready within %ss: %s" % (timeout, self.tail()))

    def tail(self, n=1500):
        try:
            self.log.flush()
            with open(self.log.name) as f:
                return f.read()[-n:]
        except (OSError, AttributeError):
            return ""

    def http(self, timeout=30):
        return Http(self.http_port, self.token, timeout)

    def cli(self, cli_bin, *argv, timeout=600):
        r = subprocess.run([cli_bin, *argv, "--coordinator", self.api], capture_output=True,
                           text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError("apollo11 %s: exit %d: %s" % (" ".join(argv[:3]), r.returncode,
                                                             r.stderr[-500:]))
        return r.stdout

    def register_yaml(self, text):
        status, body = self.http().json("POST", "/api/v1/pipelines", text,
                                        {"Content-Type": "application/yaml"})
        if status not in (200, 201):
            raise RuntimeError("register: %s %s" % (status, body))
        return body

    def journal_bytes(self):
        try:
            return os.path.getsize(os.path.join(self.state, "journal", "data.mdb"))
        except OSError:
            return None

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.kill9()
        if self.log:
            self.log.close()


def utc(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def parse_ts(text):
    """'2026-12-07T23:52:58.375Z' -> epoch seconds (float)."""
    from datetime import datetime, timezone
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text).astimezone(timezone.utc).timestamp()


def walk_runs(h, params, max_pages=None, on_page=None):
    """Pages of GET /api/v1/runs; returns (runs, [ms per page])."""
    runs, times, cursor = [], [], None
    while True:
        q = dict(params, **({"cursor": cursor} if cursor else {}))
        t = time.perf_counter()
        status, page = h.json("GET", "/api/v1/runs?" + urllib.parse.urlencode(q))
        times.append((time.perf_counter() - t) * 1000)
        if status != 200:
            raise RuntimeError("/api/v1/runs %s: %s %s" % (q, status, page))
        runs += page["runs"]
        if on_page:
            on_page(page)
        if page["complete"] or (max_pages and len(times) >= max_pages):
            return runs, times
        cursor = page["next_cursor"]
