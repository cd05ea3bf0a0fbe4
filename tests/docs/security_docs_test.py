#!/usr/bin/env python3
"""Docs as tests for the "Security" section of docs/operations.md: every
command it gives, run as written against an apollo11-node this test starts,
and what the section claims about tokens checked through the HTTP port.

  security_docs_test.py SOURCE_DIR BUILD_DIR

The node is the section's own `apollo11-node start` command. The section's
paths and the node's default ports stand for the reader's machine:
  /etc/apollo11        a scratch directory's etc/apollo11
  127.0.0.1:8011       a free port (the node gets it through
                       APOLLO11_HTTP_BIND), and 7011, 7012 likewise
                       (APOLLO11_BIND, APOLLO11_API_BIND; the commands'
                       tcp://127.0.0.1:7012 is the latter)
  TOKEN                the token the section's last `token create` printed
  NAME ROLE            (in `apollo11 token create NAME ROLE`) docs-extra viewer
A reference (`apollo11 token create`, a command named in prose) must answer
--help. Any other command must exit 0; the test says when the output reads
like a parse error.
"""
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run_doc_commands as docs  # noqa: E402

SECTION = "## Security"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(port, path, token=None, method="GET"):
    """(status, body) of a request to the node."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=b"" if method == "POST" else None)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


class Reader:
    """The reader's machine: the scratch /etc/apollo11, the node, its ports."""

    def __init__(self, source, build, root):
        self.source, self.build, self.root = source, os.path.abspath(build), root
        self.etc = os.path.join(root, "etc", "apollo11")
        os.makedirs(os.path.join(self.etc, "credentials"))
        self.http_port = free_port()
        self.env = dict(os.environ)
        self.env["PATH"] = os.path.join(self.build, "cli") + os.pathsep + self.env.get("PATH", "")
        self.env.update({"APOLLO11_HTTP_BIND": f"127.0.0.1:{self.http_port}",
                         "APOLLO11_BIND": f"tcp://127.0.0.1:{free_port()}",
                         "APOLLO11_API_BIND": f"tcp://127.0.0.1:{free_port()}"})
        self.node = None
        self.log_path = os.path.join(root, "node.err")
        self.last_token = None
        self.tokens = {}  # name -> token, from `token create` commands

    def text(self, command):
        t = command.replace("/etc/apollo11", self.etc)
        t = t.replace("127.0.0.1:8011", f"127.0.0.1:{self.http_port}")
        t = t.replace("tcp://127.0.0.1:7012", self.env["APOLLO11_API_BIND"])
        t = t.replace("create NAME ROLE", "create docs-extra viewer")
        if self.last_token:
            t = t.replace("Bearer TOKEN", "Bearer " + self.last_token)
        return t

    def start_node(self, argv):
        argv = argv + ["--state-dir", os.path.join(self.root, "state")]
        self.log = open(self.log_path, "w")
        self.node = subprocess.Popen(argv, env=self.env, stdout=subprocess.DEVNULL,
                                     stderr=self.log, cwd=self.root)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.node.poll() is not None:
                raise AssertionError("the node exited: " + open(self.log_path).read())
            try:
                if http(self.http_port, "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("the node did not become ready: " + open(self.log_path).read())

    def run(self, command):
        if command.kind == "reference":
            argv = command.words() + ["--help"]
        else:
            argv = shlex.split(self.text(command.text))
        if argv[0] == "apollo11-node" and "start" in argv:
            self.start_node(argv)
            print(f"ok  line {command.line}: {command.text} (serving)", flush=True)
            return
        if argv[:3] == ["apollo11", "token", "create"] and "--help" not in argv:
            # The token is stdout's only line; stderr tells the reader what to do with it.
            p = subprocess.run(argv, env=self.env, cwd=self.root, capture_output=True, text=True,
                               timeout=60)
            code, out = p.returncode, p.stdout + p.stderr
            if code == 0:
                self.last_token = p.stdout.strip()
                self.tokens[argv[3]] = self.last_token
        else:
            code, out = docs.run(argv, env=self.env, cwd=self.root)
        if code != 0:
            hint = " (it reads like a parse error)" if docs.reads_like_parse_error(out) else ""
            raise AssertionError(f"line {command.line}: {command.text!r} exited {code}{hint}:\n{out}")
        if argv[0] == "curl" and argv[-1].endswith("/api/whoami"):
            # What the section says it answers.
            assert '"name":"release-ci"' in out and '"roles":"admin"' in out, out
        print(f"ok  line {command.line}: {command.text}", flush=True)

    def stop(self):
        if self.node and self.node.poll() is None:
            self.node.terminate()
            try:
                self.node.wait(15)
            except subprocess.TimeoutExpired:
                self.node.kill()
                self.node.wait()


def check_claims(r):
    """What the section says about tokens, through the node's HTTP port."""
    port = r.http_port
    status, body = http(port, "/api/whoami", r.tokens["release-ci"])
    assert status == 200 and json.loads(body)["name"] == "release-ci", body
    assert json.loads(body)["roles"] == "admin", body
    # With a tokens file, anonymous callers may not read; a viewer may not cancel.
    status, body = http(port, "/api/runs")
    assert status == 401, (status, body)
    status, body = http(port, "/api/runs", r.tokens["alice"])
    assert status == 200, (status, body)
    # A token made after the start is not in force before SIGHUP.
    tokens_file = os.path.join(r.etc, "credentials", "api-tokens")
    p = subprocess.run(["apollo11", "token", "create", "late", "viewer", "--append", tokens_file],
                       env=r.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    r.tokens["late"] = p.stdout.strip()
    status, body = http(port, "/api/runs", r.tokens["late"])
    assert status == 401, (status, body)
    # The file holds hashes only.
    text = open(tokens_file).read()
    assert all(t not in text for t in r.tokens.values()), "a token is in the tokens file"
    assert os.stat(tokens_file).st_mode & 0o077 == 0
    # A new line takes effect after SIGHUP; a removed line is revoked.
    lines = [l for l in text.splitlines() if not l.startswith("alice ")]
    with open(tokens_file, "w") as f:
        f.write("\n".join(lines) + "\n")
    r.node.send_signal(signal.SIGHUP)
    deadline = time.time() + 10
    while time.time() < deadline and "API token principals in force" not in open(r.log_path).read():
        time.sleep(0.1)
    status, body = http(port, "/api/runs", r.tokens["late"])
    assert status == 200, (status, body)
    status, body = http(port, "/api/runs", r.tokens["alice"])
    assert status == 401, (status, body)
    status, body = http(port, "/api/runs/r1/cancel", r.tokens["late"], "POST")
    assert status == 403 and "late (viewer) from 127.0.0.1 may not cancel (role operator " \
        "or admin may)" in body, (status, body)
    # A token printed without --append (the inline command) is nobody's.
    status, body = http(port, "/api/runs", r.tokens["docs-extra"])
    assert status == 401, (status, body)
    # `token create` refuses a name the file already has.
    code, out = docs.run(["apollo11", "token", "create", "release-ci", "admin", "--append",
                          tokens_file], env=r.env)
    assert code == 2 and "already has a token for 'release-ci'" in out, out
    print("ok  the section's claims about tokens")
    check_audit(r)


def audit(r, *args):
    p = subprocess.run(["apollo11", "audit", "--coordinator", r.env["APOLLO11_API_BIND"],
                        "--json", *args], env=r.env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def check_audit(r):
    """What the "Audit trail" part claims: refusals by the HTTP port and a
    reload are recorded with their principal; the trail is the admin's."""
    refused = audit(r, "--principal", "late", "--action", "cancel")
    assert len(refused) == 1, refused
    assert refused[0]["ok"] is False and "HTTP 403" in refused[0]["outcome"], refused
    assert refused[0]["transport"] == "http" and refused[0]["target"] == "/api/runs/r1/cancel"
    status, _ = http(r.http_port, "/api/runs/r1/cancel", "a11_not-a-token", "POST")
    assert status == 401, status
    unknown = audit(r, "--principal", "(unknown token)")
    assert unknown and all(not x["ok"] for x in unknown), unknown
    deadline = time.time() + 10
    reloads = []
    while not reloads and time.time() < deadline:  # sent after the reload, by the node
        reloads = audit(r, "--principal", "local", "--action", "reload")
        time.sleep(0.1)
    assert reloads and reloads[0]["transport"] == "signal" and reloads[0]["ok"], reloads
    assert reloads[0]["source"].startswith("SIGHUP from pid "), reloads
    status, body = http(r.http_port, "/api/audit?principal=late", r.tokens["release-ci"])
    assert status == 200 and len(json.loads(body)["records"]) == 1, (status, body)
    status, body = http(r.http_port, "/api/audit", r.tokens["late"])
    assert status == 403, (status, body)
    status, body = http(r.http_port, "/api/audit?bogus=1", r.tokens["release-ci"])
    assert status == 400 and "unknown parameter 'bogus'" in body, (status, body)
    print("ok  the section's claims about the audit trail")


def main():
    source, build = sys.argv[1], sys.argv[2]
    commands = docs.extract(os.path.join(source, "docs", "operations.md"), SECTION)
    assert commands, "no commands found in " + SECTION
    with tempfile.TemporaryDirectory(prefix="apollo11-security-docs-") as root:
        r = Reader(source, build, root)
        try:
            for c in commands:
                r.run(c)
            # The inline `apollo11 token create NAME ROLE` comes before the
            # block: the node must have run, and the block's tokens exist.
            assert r.node is not None, "the section starts no node"
            check_claims(r)
        finally:
            r.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
