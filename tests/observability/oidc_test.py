#!/usr/bin/env python3
"""Single sign-on on the HTTP port against a real OpenID Connect provider
(oidc-provider from npm, web/tests/oidc_provider.mjs) on a loopback port,
and a real apollo11-node given --oidc-issuer:

  oidc_test.py BUILD_DIR NODEJS

Three principals get access tokens from the provider: alice (group
viewers), bob (ops), carol (admins), mapped to viewer, operator and admin.
Each route class is called with each token and must be allowed or refused
as the role table says; the provider's discovery and keys are read by the
node; a token that expired, one for another audience, one signed by
another key and one with alg none are refused with 401 and the reason in
the node's log; what carol registers is in the audit trail under her name.
"""
import base64
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok ", what, flush=True)


def request(url, method="GET", token=None, body=None, headers=None):
    data = body.encode() if isinstance(body, str) else body
    if method == "POST" and data is None:
        data = b"{}"
    req = urllib.request.Request(url, data=data, method=method, headers=headers or {})
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def sign_rs256(pem, header, claims):
    """A compact JWT signed with the PEM key by the openssl CLI."""
    signed = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", pem], input=signed.encode(),
                         capture_output=True, check=True).stdout
    return signed + "." + b64url(sig)


class World:
    def __init__(self, build, nodejs, root):
        self.build, self.root = build, root
        self.key = os.path.join(root, "provider.pem")
        port = free_port()
        self.issuer = f"http://127.0.0.1:{port}"
        self.provider_log = open(os.path.join(root, "provider.log"), "w")
        self.provider = subprocess.Popen(
            [nodejs, os.path.join(build, "web", "tests", "oidc_provider.mjs"), str(port),
             self.key], stdout=subprocess.PIPE, stderr=self.provider_log, text=True)
        line = self.provider.stdout.readline()
        if not line.startswith("listening"):
            raise AssertionError("the provider did not start: " + line)
        self.http = f"127.0.0.1:{free_port()}"
        self.node_log_path = os.path.join(root, "node.err")
        self.node = None

    def token(self, name, resource=None):
        form = {"grant_type": "client_credentials", "scope": "api"}
        if resource:
            form["resource"] = resource
        basic = base64.b64encode(f"{name}:secret-{name}".encode()).decode()
        status, body = request(self.issuer + "/token", "POST", body=urllib.parse.urlencode(form),
                               headers={"Authorization": "Basic " + basic,
                                        "Content-Type": "application/x-www-form-urlencoded"})
        if status != 200:
            raise AssertionError(f"token for {name}: {status} {body}")
        return json.loads(body)["access_token"]

    def start_node(self):
        argv = [os.path.join(self.build, "cli", "apollo11-node"), "start", "--role=all",
                "--state-dir", os.path.join(self.root, "state"),
                "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                "--http-bind", self.http, "--worker-id", "w1",
                "--oidc-issuer", self.issuer, "--oidc-audience", "apollo11",
                "--oidc-role", "viewers=viewer", "--oidc-role", "ops=operator",
                "--oidc-role", "admins=admin"]
        self.node_log = open(self.node_log_path, "w")
        self.node = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.node_log)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.node.poll() is not None:
                raise AssertionError("the node exited: " + open(self.node_log_path).read())
            try:
                if request(f"http://{self.http}/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise AssertionError("the node did not become ready: " + open(self.node_log_path).read())

    def call(self, method, path, token=None, body=None):
        return request(f"http://{self.http}{path}", method, token, body)

    def log(self):
        return open(self.node_log_path).read()

    def stop(self):
        for p in (self.node, self.provider):
            if p and p.poll() is None:
                p.terminate()
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


PIPELINE = 'version: "1.0"\nname: team.sso\npipeline:\n  - id: hold\n    type: shell\n' \
           '    command: "sleep 20"\n'


def check_roles(w, tokens):
    for name, role in (("alice", "viewer"), ("bob", "operator"), ("carol", "admin")):
        status, body = w.call("GET", "/api/whoami", tokens[name])
        check(status == 200 and json.loads(body)["name"] == name and
              json.loads(body)["roles"] == role, f"{name}'s token is {name} ({role}): {body}")
    status, _ = w.call("GET", "/api/runs")
    check(status == 401, "an anonymous caller may not read")
    # (method, path, body, the least role that may) per route class.
    rows = [("GET", "/api/runs", None, "viewer"),
            ("GET", "/api/workers", None, "viewer"),
            ("POST", "/api/pipelines", PIPELINE, "admin"),
            ("POST", "/api/pipelines/team.sso/runs", "{}", "operator"),
            ("POST", "/api/pipelines/team.sso/pause", None, "operator"),
            ("POST", "/api/pipelines/team.sso/unpause", None, "operator"),
            ("POST", "/api/runs/r-none/cancel", None, "operator"),
            ("POST", "/api/runs/r-none/rerun", None, "operator"),
            ("POST", "/api/executions/r-none.a/confirm", '{"action": "keep"}', "operator"),
            ("GET", "/api/audit", None, "admin"),
            ("POST", "/api/pipelines/team.nothing/remove", None, "admin")]
    rank = {"viewer": 0, "operator": 1, "admin": 2}
    for method, path, body, least in rows:
        for name, role in (("alice", "viewer"), ("bob", "operator"), ("carol", "admin")):
            status, answer = w.call(method, path, tokens[name], body)
            allowed = rank[role] >= rank[least]
            check((status not in (401, 403)) == allowed,
                  f"{name} ({role}) {method} {path}: {status} "
                  f"({'allowed' if allowed else 'refused'}) {answer[:120]}")


def check_refusals(w, tokens):
    now = int(time.time())
    claims = {"iss": w.issuer, "aud": "apollo11", "sub": "mallory",
              "preferred_username": "mallory", "groups": ["admins"], "iat": now - 7200,
              "exp": now - 3600}
    expired = sign_rs256(w.key, {"alg": "RS256", "kid": "k1", "typ": "at+jwt"}, claims)
    other_key = os.path.join(w.root, "other.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                    "rsa_keygen_bits:2048", "-out", other_key], check=True, capture_output=True)
    claims.update(iat=now, exp=now + 600)
    forged = sign_rs256(other_key, {"alg": "RS256", "kid": "k1"}, claims)
    none = b64url(json.dumps({"alg": "none", "kid": "k1"}).encode()) + "." + \
        b64url(json.dumps(claims).encode()) + "."
    cases = [("expired", expired, "it expired at"),
             ("another audience", w.token("carol", "urn:other"), 'its audience is "other"'),
             ("another key", forged, "its signature does not verify with key 'k1'"),
             ("alg none", none, "algorithm 'none' is not accepted")]
    for what, token, reason in cases:
        time.sleep(1.1)  # refusals are logged at most 10 a second
        status, body = w.call("GET", "/api/runs", token)
        error = json.loads(body).get("error", "") if body.startswith("{") else body
        check(status == 401 and reason in error, f"a token with {what} is refused: {status} {error}")
        log = "".join(json.loads(line).get("msg", "") for line in w.log().splitlines()
                      if line.startswith("{"))
        check(reason in log, f"and the node's log says why ({reason})")
    # The provider's own token for the same claims is taken: the refusals
    # above are about what they say they are.
    status, _ = w.call("GET", "/api/runs", tokens["carol"])
    check(status == 200, "carol's real token is still taken")


def check_audit(w, tokens):
    status, body = w.call("GET", "/api/audit?principal=carol", tokens["carol"])
    records = json.loads(body)["records"]
    check(status == 200 and any(r["action"] == "register" and r["ok"] and
                                r["transport"] == "http" for r in records),
          f"carol's registration is audited under her name: {records}")
    status, body = w.call("GET", "/api/audit?principal=alice&action=register", tokens["carol"])
    refused = json.loads(body)["records"]
    check(refused and not refused[0]["ok"] and "HTTP 403" in refused[0]["outcome"],
          f"and alice's refused registration too: {refused}")


def cli(w, token, *argv):
    """The CLI against the node's HTTP API with `token` in $APOLLO11_API_TOKEN."""
    env = dict(os.environ, APOLLO11_API_TOKEN=token)
    env.pop("APOLLO11_COORDINATOR", None)
    r = subprocess.run([os.path.join(w.build, "cli", "apollo11"), *argv,
                        "--coordinator", f"http://{w.http}"],
                       env=env, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


QUICK = 'version: "1.0"\nname: team.quick\npipeline:\n  - id: hello\n    type: shell\n' \
        '    command: "echo hello"\n'


def check_cli(w, tokens):
    """The same tokens drive the CLI: one identity through both tools."""
    status, _ = w.call("POST", "/api/pipelines", tokens["carol"], QUICK)
    check(status in (200, 201), "carol registers team.quick over HTTP")
    rc, out, err = cli(w, tokens["bob"], "trigger", "team.quick", "--wait", "--json")
    check(rc == 0 and '"state": "SUCCESS"' in out,
          f"bob (operator) triggers a run with the CLI and waits for it: {rc} {err}")
    rc, out, err = cli(w, tokens["alice"], "trigger", "team.quick")
    check(rc == 5 and "alice (viewer) from 127.0.0.1 may not trigger" in err,
          f"alice (viewer) may not, and the CLI says why: {rc} {err.strip()}")
    rc, out, err = cli(w, tokens["alice"], "runs", "--json")
    check(rc == 0 and "team.quick" in out, f"alice lists the runs with the CLI: {rc} {err}")
    rc, out, err = cli(w, tokens["bob"], "pause", "team.quick")
    check(rc == 0 and "paused" in out, f"bob pauses it: {rc} {out} {err}")
    rc, out, err = cli(w, tokens["bob"], "unpause", "team.quick")
    check(rc == 0, f"and unpauses it: {rc} {err}")
    rc, out, err = cli(w, tokens["bob"], "audit", "--json")
    check(rc != 0 and "may not read the audit trail" in err, f"bob may not read the audit: {err}")
    rc, out, err = cli(w, tokens["carol"], "audit", "--principal", "bob", "--json")
    actions = [r["action"] for r in json.loads(out)] if rc == 0 else []
    check(rc == 0 and {"trigger", "pause", "unpause"} <= set(actions),
          f"carol reads bob's CLI actions in the audit trail: {actions} {err}")
    rc, out, err = cli(w, "not-a-token", "runs")
    check(rc != 0 and "matches no principal" in err, f"an unknown token is refused: {err}")
    rc, out, err = cli(w, tokens["alice"], "cluster")
    check(rc == 0 and "no HA: a single coordinator" in out,
          f"`cluster` takes --coordinator http://... and the token as the others do: {out}{err}")
    env = dict(os.environ, APOLLO11_API_TOKEN=tokens["alice"])
    env["APOLLO11_COORDINATOR"] = f"http://{w.http}"
    r = subprocess.run([os.path.join(w.build, "cli", "apollo11"), "cluster", "--json"], env=env,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0 and json.loads(r.stdout)["ha"] is False,
          f"and $APOLLO11_COORDINATOR: {r.stdout}{r.stderr}")
    r = subprocess.run([os.path.join(w.build, "cli", "apollo11"), "cluster", "--coordinator",
                        "tcp://127.0.0.1:7012"], capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "asks a node's HTTP API" in r.stderr,
          f"a ZeroMQ endpoint is refused, saying why: {r.stderr.strip()}")
    quick = os.path.join(w.root, "quick.yaml")
    with open(quick, "w") as f:
        f.write(QUICK)
    rc, out, err = cli(w, tokens["bob"], "submit", quick)
    check(rc != 0 and "submitting a pipeline file is not on the HTTP API" in err and
          "apollo11 trigger NAME" in err,
          f"what the HTTP API lacks is refused with what to use instead: {err.strip()}")


def main():
    build, nodejs = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="apollo11-oidc-") as root:
        w = World(build, nodejs, root)
        try:
            tokens = {name: w.token(name) for name in ("alice", "bob", "carol")}
            w.start_node()
            check("signing keys of " + w.issuer + " in force" in w.log(),
                  "the node read the provider's discovery document and keys")
            check_roles(w, tokens)
            check_refusals(w, tokens)
            check_audit(w, tokens)
            check_cli(w, tokens)
        except AssertionError as e:
            print("FAILED:", e)
            print("--- node log (last lines)")
            print("".join(open(w.node_log_path).readlines()[-30:]) if w.node else "")
            return 1
        finally:
            w.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
