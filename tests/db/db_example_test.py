#!/usr/bin/env python3
"""The brief's example end to end (examples/etl-db: http fetch -> python clean
-> db store into MariaDB) through the real `apollo11 run`, against the
MariaDB the db_servers fixture started and an HTTP server this test starts;
then a db task whose server refuses connections, retried per its policy.

Usage: db_example_test.py APOLLO11_BINARY SOURCE_DIR STATE_FILE
"""
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

ORDERS = [
    {"id": "A-1", "email": "Ann@Example.com", "amount": 12.5},
    {"id": "A-2", "email": "bob@example.com", "amount": 3},
    {"id": "A-1", "email": "dup@example.com", "amount": 99},      # duplicate id
    {"id": "A-3", "email": "not-an-email", "amount": 1},           # dropped
    {"id": "A-4", "email": "eve@example.com", "amount": -5},       # dropped
    {"id": "A-5", "email": "x'); DROP TABLE orders; --@e.com", "amount": 1},  # stored verbatim
]
EXPECTED = [
    ("A-1", "ann@example.com", 1250),
    ("A-2", "bob@example.com", 300),
    ("A-5", "x'); drop table orders; --@e.com", 100),
]


def read_state(path):
    out = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition("=")
            out[key] = value
    return out


def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    sys.exit(1)


def mariadb(state, sql):
    r = subprocess.run(["mariadb", "--no-defaults", "-S", state["MY_SOCKET"], "-u", "root",
                        "-N", "-B", "apollo", "-e", sql],
                       capture_output=True, text=True, check=True)
    return [tuple(line.split("\t")) for line in r.stdout.splitlines()]


def run(apollo11, pipeline, state_dir, env):
    r = subprocess.run([apollo11, "run", pipeline, "--state-dir", state_dir, "--json"],
                       capture_output=True, text=True, env=env, timeout=120)
    try:
        summary = json.loads(r.stdout)
    except json.JSONDecodeError:
        fail(f"run printed no JSON summary (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    return r, summary


def serve(directory):
    handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(  # noqa: E731
        *a, directory=directory, **kw)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def example_end_to_end(apollo11, source, state, work):
    www = os.path.join(work, "www")
    os.makedirs(www)
    with open(os.path.join(www, "orders.json"), "w") as f:
        json.dump(ORDERS, f)
    server = serve(www)
    example = os.path.join(work, "etl-db")
    shutil.copytree(os.path.join(source, "examples", "etl-db"), example)
    path = os.path.join(example, "pipeline.yaml")
    with open(path) as f:
        text = f.read()
    text = text.replace("http://127.0.0.1:8000/orders.json",
                        f"http://127.0.0.1:{server.server_address[1]}/orders.json")
    text = text.replace("mysql://etl@127.0.0.1:3306/shop", state["MY_URL"])
    with open(path, "w") as f:
        f.write(text)
    mariadb(state, "DROP TABLE IF EXISTS orders")
    env = dict(os.environ, SHOP_DB_PASSWORD=state["DB_PASSWORD"])

    for round_ in (1, 2):  # the second run inserts nothing twice
        r, summary = run(apollo11, path, os.path.join(work, f"state{round_}"), env)
        if r.returncode != 0 or summary.get("state") != "SUCCESS":
            fail(f"example run {round_}: exit {r.returncode}\n{r.stdout}\n{r.stderr}")
        rows = mariadb(state, "SELECT order_id, email, amount_cents FROM orders ORDER BY order_id")
        got = [(a, b, int(c)) for a, b, c in rows]
        if got != EXPECTED:
            fail(f"after run {round_}: orders are {got}, expected {EXPECTED}")
    keys = mariadb(state, "SELECT DISTINCT batch_key FROM orders")
    if len(keys) != 1 or not keys[0][0].endswith(".store"):
        fail(f"batch_key should be the first run's idempotency key, found {keys}")
    if state["DB_PASSWORD"] in open(path).read():
        fail("the password ended up in the pipeline")
    server.shutdown()
    print("example: 3 of 6 orders stored, a second run stored nothing twice")


def refused_connection_is_retried(apollo11, state, work):
    path = os.path.join(work, "refused.yaml")
    with open(path, "w") as f:
        f.write(f"""version: "1.0"
name: test.db_refused
pipeline:
  - id: store
    type: db
    host: mysql://apollo@127.0.0.1:1/apollo
    password_env: SHOP_DB_PASSWORD
    sql: "SELECT 1"
    retry: {{max_retries: 2, delay: 100ms}}
  - id: bad_sql
    type: db
    host: {state["MY_URL"]}
    password_env: SHOP_DB_PASSWORD
    sql: "SELEC 1"
    retry: {{max_retries: 2, delay: 100ms}}
""")
    env = dict(os.environ, SHOP_DB_PASSWORD=state["DB_PASSWORD"])
    state_dir = os.path.join(work, "state-refused")
    r, summary = run(apollo11, path, state_dir, env)
    tasks = summary["tasks"]
    if r.returncode != 1 or summary["state"] != "FAILED":
        fail(f"refused: exit {r.returncode}, state {summary.get('state')}\n{r.stderr}")
    if tasks["store"]["state"] != "FAILED" or tasks["store"]["attempts"] != 3:
        fail(f"a refused connection should be tried 3 times: {tasks['store']}")
    if tasks["bad_sql"]["state"] != "FAILED" or tasks["bad_sql"]["attempts"] != 1:
        fail(f"a syntax error should not be retried: {tasks['bad_sql']}")
    h = subprocess.run([apollo11, "history", tasks["bad_sql"]["exec_id"], "--state-dir",
                        state_dir, "--json"], capture_output=True, text=True, check=True)
    reasons = " ".join(t.get("reason", "") for t in json.loads(h.stdout))
    if "mysql error 1064 (42000)" not in reasons:
        fail(f"the journal's reason should carry the server's code: {reasons}")
    if state["DB_PASSWORD"] in h.stdout:
        fail("the password is in the history")
    print("refused connection: 3 attempts; syntax error: 1 attempt, code in the journal")


def main():
    apollo11, source, state_file = sys.argv[1:4]
    state = read_state(state_file)
    work = tempfile.mkdtemp(prefix="apollo11-dbe2e.")
    try:
        example_end_to_end(apollo11, source, state, work)
        refused_connection_is_retried(apollo11, state, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
