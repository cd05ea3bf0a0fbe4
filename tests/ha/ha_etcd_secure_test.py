#!/usr/bin/env python3
"""HA against an etcd that requires TLS with client certificates and has
authentication enabled, as docs/ha.md ("etcd access") tells operators to run
it: a real single-member etcd on loopback with certificates made here by
openssl, users and a role made by etcdctl.

  ha_etcd_secure_test.py APOLLO11_BIN_DIR

Checks: two coordinators given --ha-etcd https://... with
--ha-etcd-cacert/-cert/-key and --ha-etcd-user/-password-file elect one
leader with the default lease; a third with a wrong password never leads and
logs that etcd refused its user; etcd restarted (its auth tokens are gone)
and the coordinators authenticate again and elect a leader; the same node
without the CA (or with an http:// endpoint and TLS flags) is refused or
cannot reach etcd, and says why.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from free_ports import free_port  # noqa: E402
from ha_cluster_test import check, wait_for  # noqa: E402

TOKEN = "0123456789abcdef-token"
ELECTION = "apollo11/secure-test"


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)


def make_certs(d):
    """A CA, etcd's server certificate for 127.0.0.1, and a client one."""
    def ossl(*args):
        r = run(["openssl", *args], cwd=d)
        if r.returncode != 0:
            raise AssertionError("openssl " + " ".join(args) + ": " + r.stderr)
    ossl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
         "/CN=apollo11-test-ca", "-keyout", "ca.key", "-out", "ca.pem")
    # etcd's gateway calls etcd's own gRPC with the server certificate: it
    # must be good for client authentication too.
    for name, ext in (("server",
                       "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        # etcd's JSON gateway refuses a client certificate with a CommonName
        # ("CommonName of client sending a request against gateway will be
        # ignored"): the client's has none, and the password is what logs in.
        subject = "/CN=apollo11-server" if name == "server" else "/O=apollo11-coordinators"
        ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
             "-keyout", name + ".key", "-out", name + ".csr")
        ossl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-days", "2", "-extfile", name + ".ext", "-out", name + ".pem")


class Etcd:
    def __init__(self, d):
        self.d = d
        self.port, self.peer = free_port(), free_port()
        self.url = f"https://127.0.0.1:{self.port}"
        self.proc = None
        self.start()

    def start(self):
        peer = f"http://127.0.0.1:{self.peer}"
        self.log = open(os.path.join(self.d, "etcd.log"), "a")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "s1", "--data-dir", os.path.join(self.d, "etcd-data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", f"s1={peer}",
             "--cert-file", os.path.join(self.d, "server.pem"),
             "--key-file", os.path.join(self.d, "server.key"),
             "--trusted-ca-file", os.path.join(self.d, "ca.pem"), "--client-cert-auth"],
            stdout=self.log, stderr=self.log)
        wait_for("etcd to answer", lambda: self.ctl("endpoint", "health").returncode == 0, 20)

    def ctl(self, *args, user=None):
        argv = ["etcdctl", "--endpoints", self.url, "--cacert", os.path.join(self.d, "ca.pem"),
                "--cert", os.path.join(self.d, "client.pem"),
                "--key", os.path.join(self.d, "client.key")]
        if user:
            argv += ["--user", user]
        return run(argv + list(args), env=dict(os.environ, ETCDCTL_API="3"))

    def setup_auth(self):
        for args, user in ((["user", "add", "root", "--new-user-password", "rootpw"], None),
                           (["auth", "enable"], None),
                           (["user", "add", "apollo11", "--new-user-password", "s3cret"], "root:rootpw"),
                           (["role", "add", "coordinator"], "root:rootpw"),
                           (["role", "grant-permission", "coordinator", "readwrite",
                             "--prefix=true", ELECTION], "root:rootpw"),
                           (["user", "grant-role", "apollo11", "coordinator"], "root:rootpw")):
            r = self.ctl(*args, user=user)
            check(r.returncode == 0, "etcdctl " + " ".join(args) + " " + r.stderr.strip())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()


class Node:
    def __init__(self, bin_dir, root, name, extra):
        self.name = name
        self.http = f"127.0.0.1:{free_port()}"
        self.log_path = os.path.join(root, name + ".stderr")
        argv = [os.path.join(bin_dir, "apollo11-node"), "start", "--role=coordinator",
                "--state-dir", os.path.join(root, name),
                "--bind", f"tcp://127.0.0.1:{free_port()}",
                "--api-bind", f"tcp://127.0.0.1:{free_port()}", "--http-bind", self.http,
                "--api-token", TOKEN, "--ha-name", name, "--ha-election", ELECTION,
                "--ha-without-replication", *extra]
        self.argv = argv
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.log)

    def role(self):
        try:
            with urllib.request.urlopen(f"http://{self.http}/healthz", timeout=1) as r:
                return json.loads(r.read()).get("role")
        except (OSError, ValueError):
            return None

    def logged(self):
        return open(self.log_path).read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def main():
    bin_dir = sys.argv[1]
    if not shutil.which("etcdctl"):
        print("FAILED: etcdctl not installed (apt-get install etcd-client)")
        return 1
    root = tempfile.mkdtemp(prefix="apollo11-etcd-secure-")
    nodes, etcd = [], None
    try:
        make_certs(root)
        etcd = Etcd(root)
        etcd.setup_auth()
        with open(os.path.join(root, "password"), "w") as f:
            f.write("s3cret\n")
        with open(os.path.join(root, "wrong"), "w") as f:
            f.write("guess\n")
        secure = ["--ha-etcd", etcd.url, "--ha-etcd-cacert", os.path.join(root, "ca.pem"),
                  "--ha-etcd-cert", os.path.join(root, "client.pem"),
                  "--ha-etcd-key", os.path.join(root, "client.key"),
                  "--ha-etcd-user", "apollo11"]

        # TLS flags without an https:// endpoint: refused at start.
        refused = run([os.path.join(bin_dir, "apollo11-node"), "start", "--role=coordinator",
                       "--state-dir", os.path.join(root, "refused"), "--ha-without-replication",
                       "--ha-etcd", "http://127.0.0.1:2379",
                       "--ha-etcd-cacert", os.path.join(root, "ca.pem")])
        check(refused.returncode == 2 and "are for https:// etcd endpoints" in refused.stderr,
              "TLS flags with an http:// endpoint are refused: " + refused.stderr.strip()[-160:])

        nodes = [Node(bin_dir, root, n, secure + ["--ha-etcd-password-file",
                                                  os.path.join(root, "password")])
                 for n in ("c1", "c2")]
        intruder = Node(bin_dir, root, "c3", secure + ["--ha-etcd-password-file",
                                                       os.path.join(root, "wrong")])
        nodes.append(intruder)
        no_ca = Node(bin_dir, root, "c4", ["--ha-etcd", etcd.url])
        nodes.append(no_ca)

        def one_leader():
            roles = [n.role() for n in nodes[:2]]
            return roles.count("leader") == 1 and roles.count("standby") == 1
        wait_for("one leader among c1 and c2 (default lease)", one_leader, 30)
        check(True, "c1 and c2 elect one leader through TLS, client certificates and a user")
        wait_for("c3 to log that etcd refused its user",
                 lambda: "etcd refused user apollo11" in intruder.logged(), 15)
        check(intruder.role() != "leader", "c3 with a wrong password never leads")
        wait_for("c4 without the CA to say why it cannot reach etcd",
                 lambda: "etcd unreachable" in no_ca.logged(), 15)
        check(no_ca.role() != "leader", "c4, which cannot verify etcd's certificate, never leads")

        # etcd restarted: its auth tokens are gone; the coordinators log in again.
        etcd.proc.send_signal(signal.SIGKILL)
        etcd.proc.wait()
        etcd.log.close()
        etcd.start()
        # Past the 5 s lease: a leader that could not keep its lease alive
        # (no new token) would have stood down, and nobody could lead.
        time.sleep(6)
        wait_for("one leader again after etcd's restart", one_leader, 30)
        check(True, "after etcd restarted (tokens gone) c1 and c2 authenticate again and elect one leader")
        logs = nodes[0].logged() + nodes[1].logged()
        check("s3cret" not in logs, "the password appears in no log")
    except AssertionError as e:
        print("FAILED:", e)
        for n in nodes:
            n.log.flush()
            print(f"--- {n.name} (last lines)")
            print("".join(open(n.log_path).readlines()[-8:]))
        return 1
    finally:
        for n in nodes:
            n.stop()
        if etcd:
            etcd.stop()
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
