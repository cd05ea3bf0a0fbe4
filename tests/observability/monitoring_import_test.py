#!/usr/bin/env python3
"""The monitoring files a user imports (issue 38): packaging/grafana/apollo11.json
and packaging/prometheus/apollo11-rules.yml, checked against real nodes.

  monitoring_import_test.py SOURCE_DIR BUILD_DIR

- `promtool check rules` and `promtool test rules` pass, and the unit tests
  cover every rule both firing and staying quiet; every rule has `for:`, a
  severity and summary, description and runbook annotations whose anchor is a
  heading of docs/operations.md or docs/ha.md;
- the dashboard parses, imports anywhere (a DS_PROMETHEUS input behind a
  datasource variable, job and instance variables), every panel has a title,
  a description and queries on that data source, filtered by $job and
  $instance, panels do not overlap, and every query is valid PromQL (promtool
  checks it as a recording rule, Grafana's variables filled in);
- every metric a panel or a rule uses is served on /metrics by a real node:
  an `apollo11-node --role=all` after a run, and two coordinators with
  --ha-etcd and --replication-bind against an etcd this test starts (the
  apollo11_ha_* and apollo11_replication_* series exist only there); every
  label a selector or a grouping names is on that metric, and every label
  value a selector asks for equal is one the node serves (`up` is
  Prometheus' own);
- apollo11_build_info carries a git commit, not "unknown", when the source
  is a git checkout;
- docs/operations.md's "Monitoring to import" lists every rule, and its
  commands run as written (the installed /usr/share/apollo11/ is the source's packaging/, the
  section's prometheus.yml is written as given, 127.0.0.1:8011 is the node's
  HTTP port, NAME a pipeline the test registered).

Exits 77 (skipped) when promtool is not installed (Debian package prometheus).
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "docs"))
sys.path.insert(0, os.path.join(HERE, "..", "ha"))
import run_doc_commands as docs  # noqa: E402
from free_ports import free_port  # noqa: E402

SKIP = 77
SECTION = "### Monitoring to import"
# Grafana's variables, as a query sent to Prometheus would have them.
GRAFANA_VARS = {"$__rate_interval": "5m", "$__range": "1h", "$__interval": "1m",
                "$job": ".*", "$instance": ".*"}
# Metrics Prometheus makes itself, not a node.
PROMETHEUS_OWN = {"up"}
# What the dashboard must show (the task's list): a metric each.
DASHBOARD_MUST_USE = [
    "apollo11_tasks_waiting", "apollo11_transitions_total", "apollo11_executions_created_total",
    "apollo11_timeouts_total", "apollo11_heartbeat_losses_total",  # the brief's four
    "apollo11_dispatch_latency_seconds_bucket", "apollo11_worker_running", "apollo11_worker_slots",
    "apollo11_executions", "apollo11_runs_finished_total", "apollo11_ha_failovers_total",
    "apollo11_ha_role", "apollo11_ha_epoch", "apollo11_replication_lag_seconds",
    "apollo11_journal_commit_seconds_bucket", "apollo11_journal_commit_failures_total",
    "apollo11_retrying", "apollo11_build_info"]
RULES_MUST_HAVE = ["Apollo11BacklogAtCap", "Apollo11RetryStorm", "Apollo11WorkerLost",
                   "Apollo11LeaderLeaseLost", "Apollo11StandbyLagging", "Apollo11JournalFailing"]
PIPELINE = """version: "1.0"
name: mon.check
schedule: "0 3 * * *"
pipeline:
  - id: hello
    type: shell
    command: echo hello
"""

failures = []


def check(cond, what, detail=""):
    """Records one check; `detail` (a command's output) is printed on failure only."""
    if cond:
        print("ok  ", what, flush=True)
    else:
        print("FAIL", what, flush=True)
        if detail:
            print(detail.rstrip(), flush=True)
        failures.append(what)
    return cond


def run(argv, **kw):
    kw.setdefault("timeout", 120)
    return subprocess.run(argv, capture_output=True, text=True, **kw)


# ------------------------------------------------------------------ PromQL

_FUNCTIONS = {
    "sum", "max", "min", "avg", "count", "rate", "increase", "irate", "delta", "histogram_quantile",
    "max_over_time", "min_over_time", "avg_over_time", "abs", "clamp_min", "clamp_max", "topk",
    "bottomk", "label_values", "vector", "scalar", "time", "sort", "sort_desc", "absent", "changes",
    "resets", "deriv"}
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
             "bool", "offset"}


def selectors(expr):
    """(metric, [(label, op, value)]) for every vector selector of `expr`, and
    the label names of its grouping clauses (by, without, on, ignoring)."""
    grouping = set()
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        grouping.update(x.strip() for x in m.group(1).split(",") if x.strip())
    body = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    body = re.sub(r"\[[^\]]*\]", " ", body)  # ranges and subqueries
    out = []
    pos = 0
    pattern = re.compile(r'"(?:[^"\\]|\\.)*"|([A-Za-z_:][A-Za-z0-9_:]*)\s*(\{[^}]*\})?\s*(\()?')
    while True:
        m = pattern.search(body, pos)
        if not m:
            break
        pos = m.end()
        name, braces, call = m.group(1), m.group(2), m.group(3)
        if name is None:
            continue  # a string literal
        if name in _KEYWORDS:
            continue  # and, or, unless before a parenthesis
        if call and not braces:
            if name not in _FUNCTIONS:
                raise ValueError(f"unknown function {name!r} in {expr!r}")
            pos = m.end()
            continue
        if name in _FUNCTIONS or re.fullmatch(r"\d.*|e|Inf|NaN", name):
            continue
        matchers = []
        if braces:
            for lm in re.finditer(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"',
                                  braces):
                matchers.append(lm.groups())
        out.append((name, matchers))
        if call:  # `name{...}(`: not PromQL
            raise ValueError(f"a selector followed by '(' in {expr!r}")
    return out, grouping


def parse_metrics(text):
    """{sample name: [labels dict, ...]} of a Prometheus text exposition."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{(.*)\})?\s+\S+", line)
        if not m:
            continue
        labels = dict(re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        series.setdefault(m.group(1), []).append(labels)
    return series


def check_uses(where, expr, live):
    """Every metric, label and label value `expr` names exists in `live`."""
    try:
        sels, grouping = selectors(expr)
    except ValueError as e:
        check(False, f"{where}: {e}")
        return set()
    names = set()
    labels_here = {"job", "instance"}
    for name, matchers in sels:
        names.add(name)
        if name in PROMETHEUS_OWN:
            continue
        if not check(name in live, f"{where}: {name} is served on /metrics"):
            continue
        known = set().union(*(set(s) for s in live[name])) | {"job", "instance"}
        labels_here |= known
        for label, op, value in matchers:
            if label in ("job", "instance"):
                continue
            if not check(label in known, f"{where}: {name} has label {label}"):
                continue
            if op == "=":
                check(any(s.get(label) == value for s in live[name]),
                      f"{where}: {name}{{{label}=\"{value}\"}} is a series the node serves")
    for label in grouping:
        check(label in labels_here, f"{where}: grouping label {label} is on its metrics")
    return names


# ------------------------------------------------------------------ nodes

class Proc:
    def __init__(self, argv, root, name, env=None):
        self.name = name
        self.log_path = os.path.join(root, name + ".err")
        self.out_path = os.path.join(root, name + ".out")
        self.log = open(self.log_path, "w")
        self.out = open(self.out_path, "w")
        self.proc = subprocess.Popen(argv, stdout=self.out, stderr=self.log, env=env)

    def listening(self, timeout=30):
        """The node's `listening` line (JSON on stdout)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with open(self.out_path) as f:
                for line in f:
                    if '"listening"' in line:
                        return json.loads(line)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{self.name} did not start: {open(self.log_path).read()[-3000:]}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.out.close()


def get(url, timeout=5):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


def wait_for(what, cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def single_node(bin_dir, root, procs):
    """An `--role=all` node after one run; (its metrics text, http, api)."""
    node = Proc([os.path.join(bin_dir, "apollo11-node"), "start", "--role=all",
                 "--state-dir", os.path.join(root, "all"), "--http-bind", "127.0.0.1:0",
                 "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--heartbeat", "200ms", "--log-format", "json"], root, "all")
    procs.append(node)
    listening = node.listening()
    http, api = listening["http"], listening["api"]
    wait_for("/readyz", lambda: get(f"http://{http}/readyz")[0] == 200, 30)
    path = os.path.join(root, "mon.yaml")
    with open(path, "w") as f:
        f.write(PIPELINE)
    cli = os.path.join(bin_dir, "apollo11")
    r = run([cli, "pipelines", "add", path, "--coordinator", api])
    check(r.returncode == 0, f"pipelines add: {r.stderr.strip()}")
    r = run([cli, "submit", path, "--wait", "--coordinator", api])
    check(r.returncode == 0, f"a run of mon.check succeeded: {r.stderr.strip()}")
    status, text = get(f"http://{http}/metrics")
    check(status == 200, "GET /metrics of the --role=all node")
    return text, http, api


def ha_pair(bin_dir, root, procs):
    """/metrics of two coordinators (leader, standby) with --ha-etcd and
    --replication-bind, against a one-member etcd started here."""
    etcd = shutil.which("etcd")
    if not check(etcd is not None, "etcd is installed (Debian etcd-server, scripts/setup.sh --with-tests)"):
        return []
    client, peer = free_port(), free_port()
    procs.append(Proc([etcd, "--name", "m1", "--data-dir", os.path.join(root, "etcd"),
                       "--listen-client-urls", f"http://127.0.0.1:{client}",
                       "--advertise-client-urls", f"http://127.0.0.1:{client}",
                       "--listen-peer-urls", f"http://127.0.0.1:{peer}",
                       "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
                       "--initial-cluster", f"m1=http://127.0.0.1:{peer}"], root, "etcd"))
    endpoint = f"http://127.0.0.1:{client}"

    def lease_granted():
        try:
            req = urllib.request.Request(endpoint + "/v3/lease/grant", data=b'{"TTL":2}', method="POST")
            with urllib.request.urlopen(req, timeout=1) as r:
                return b'"ID"' in r.read()
        except OSError:
            return False
    wait_for("etcd to grant a lease", lease_granted, 30)
    env = dict(os.environ, APOLLO11_HA_LEASE="2s")
    https = []
    for name in ("c1", "c2"):
        http = f"127.0.0.1:{free_port()}"
        https.append(http)
        procs.append(Proc([os.path.join(bin_dir, "apollo11-node"), "start", "--role=coordinator",
                           "--state-dir", os.path.join(root, name),
                           "--bind", f"tcp://127.0.0.1:{free_port()}",
                           "--api-bind", f"tcp://127.0.0.1:{free_port()}", "--http-bind", http,
                           "--heartbeat", "200ms", "--log-format", "json", "--ha-etcd", endpoint,
                           "--ha-name", name, "--ha-election", "apollo11-monitoring",
                           "--replication-bind", f"tcp://127.0.0.1:{free_port()}", "--insecure"],
                          root, name, env=env))

    def roles():
        out = []
        for http in https:
            status, body = get(f"http://{http}/healthz", timeout=1)
            try:
                out.append(json.loads(body).get("role") if status == 200 else None)
            except ValueError:
                out.append(None)
        return sorted(r or "" for r in out) == ["leader", "standby"]
    wait_for("one leader and one standby", roles, 60)
    texts = []
    for http in https:
        status, text = get(f"http://{http}/metrics")
        check(status == 200, f"GET /metrics of HA coordinator {http}")
        texts.append(text)
    return texts


# ------------------------------------------------------------------ checks

def github_anchors(path):
    anchors, fence = set(), False
    for line in open(path):
        if line.startswith("```"):
            fence = not fence
        m = re.match(r"^#+ (.*)", line)
        if m and not fence:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
            anchors.add(slug)
    return anchors


def check_rules(source, tmp):
    rules_dir = os.path.join(source, "packaging", "prometheus")
    rules_path = os.path.join(rules_dir, "apollo11-rules.yml")
    r = run(["promtool", "check", "rules", rules_path])
    check(r.returncode == 0, "promtool check rules apollo11-rules.yml", r.stdout + r.stderr)
    r = run(["promtool", "test", "rules", "apollo11-rules.test.yml"], cwd=rules_dir)
    check(r.returncode == 0, "promtool test rules apollo11-rules.test.yml", r.stdout + r.stderr)

    rules = yaml.safe_load(open(rules_path))
    groups = rules["groups"]
    check([g["name"] for g in groups] == ["apollo11"], "one rule group, apollo11")
    alerts = [rule for g in groups for rule in g["rules"]]
    names = [a.get("alert") for a in alerts]
    check(all(names) and len(set(names)) == len(names), "every rule is a uniquely named alert")
    for name in RULES_MUST_HAVE:
        check(name in names, f"rule {name} exists")
    anchors = {"docs/operations.md": github_anchors(os.path.join(source, "docs", "operations.md")),
               "docs/ha.md": github_anchors(os.path.join(source, "docs", "ha.md"))}
    for a in alerts:
        n = a["alert"]
        check("for" in a, f"{n} has for:")
        check(a.get("labels", {}).get("severity") in ("critical", "warning", "info"),
              f"{n} has a severity label")
        ann = a.get("annotations", {})
        check(all(ann.get(k) for k in ("summary", "description", "runbook")),
              f"{n} has summary, description and runbook annotations")
        doc, _, anchor = ann.get("runbook", "").partition("#")
        check(anchor in anchors.get(doc, ()), f"{n}: runbook {ann.get('runbook')} is a heading")

    tests = yaml.safe_load(open(os.path.join(rules_dir, "apollo11-rules.test.yml")))
    check(tests.get("rule_files") == ["apollo11-rules.yml"], "the tests load apollo11-rules.yml")
    fires, quiet = set(), set()
    for t in tests["tests"]:
        for case in t.get("alert_rule_test", []):
            (fires if case.get("exp_alerts") else quiet).add(case["alertname"])
    for n in names:
        check(n in fires, f"a unit test sees {n} fire")
        check(n in quiet, f"a unit test sees {n} stay quiet")
    return {a["alert"]: a["expr"] for a in alerts}


def dashboard_panels(dash):
    for p in dash.get("panels", []):
        yield p
        for inner in p.get("panels", []) or []:
            yield inner


def check_dashboard(source, tmp):
    path = os.path.join(source, "packaging", "grafana", "apollo11.json")
    try:
        dash = json.load(open(path))
    except ValueError as e:
        check(False, f"apollo11.json parses: {e}")
        return {}
    check(True, "apollo11.json parses")
    check(isinstance(dash.get("schemaVersion"), int) and dash["schemaVersion"] >= 36,
          f"schemaVersion {dash.get('schemaVersion')}")
    check(dash.get("id") is None and dash.get("uid") and dash.get("title"),
          "no database id; a uid and a title")
    inputs = {i.get("name"): i for i in dash.get("__inputs", [])}
    check(inputs.get("DS_PROMETHEUS", {}).get("pluginId") == "prometheus",
          "a DS_PROMETHEUS data source input for import")
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource", {})
    check(ds.get("type") == "datasource" and ds.get("query") == "prometheus" and
          ds.get("current", {}).get("value") == "${DS_PROMETHEUS}",
          "a datasource variable that defaults to ${DS_PROMETHEUS}")
    for name in ("job", "instance"):
        v = variables.get(name, {})
        query = v.get("query", {})
        query = query.get("query") if isinstance(query, dict) else query
        check(v.get("type") == "query" and "apollo11_build_info" in (query or ""),
              f"a {name} variable from apollo11_build_info")
    exprs = {}
    ids, boxes = set(), []
    for p in dashboard_panels(dash):
        title = p.get("title", "")
        check(p.get("id") not in ids, f"panel id {p.get('id')} is unique")
        ids.add(p.get("id"))
        g = p.get("gridPos", {})
        check(g.get("x", 0) + g.get("w", 0) <= 24 and g.get("w", 0) > 0 and g.get("h", 0) > 0,
              f"panel {title!r} fits the 24-column grid")
        for other_title, o in boxes:
            overlap = (g["x"] < o["x"] + o["w"] and o["x"] < g["x"] + g["w"] and
                       g["y"] < o["y"] + o["h"] and o["y"] < g["y"] + g["h"])
            if overlap:
                check(False, f"panels {title!r} and {other_title!r} overlap")
        boxes.append((title, g))
        if p.get("type") == "row":
            check(bool(title), "a row has a title")
            continue
        check(bool(title) and len(p.get("description", "")) > 30,
              f"panel {title!r} has a title and a description")
        check(p.get("datasource", {}).get("uid") == "${datasource}",
              f"panel {title!r} queries the datasource variable")
        targets = p.get("targets", [])
        check(bool(targets), f"panel {title!r} has queries")
        for t in targets:
            expr = t.get("expr", "")
            where = f"panel {title!r} query {t.get('refId')}"
            check(bool(expr.strip()), f"{where} has an expr")
            check(t.get("datasource", {}).get("uid") in (None, "${datasource}"),
                  f"{where} uses the datasource variable")
            sels, _ = selectors(expr)
            check(all(any(l == "job" and v == "$job" for l, _, v in ms) and
                      any(l == "instance" and v == "$instance" for l, _, v in ms)
                      for _, ms in sels),
                  f"{where} filters every selector by $job and $instance")
            exprs[where] = expr
    # Every query is PromQL: promtool checks each as a recording rule.
    rules = []
    for i, (where, expr) in enumerate(sorted(exprs.items())):
        for var, value in GRAFANA_VARS.items():
            expr = expr.replace(var, value)
        rules.append({"record": f"dashboard:query_{i}", "expr": expr})
    checked = os.path.join(tmp, "dashboard-queries.yml")
    with open(checked, "w") as f:
        yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}, f)
    r = run(["promtool", "check", "rules", checked])
    check(r.returncode == 0, f"promtool accepts all {len(rules)} dashboard queries", r.stdout + r.stderr)
    used = set()
    for expr in exprs.values():
        used |= {name for name, _ in selectors(expr)[0]}
    for name in DASHBOARD_MUST_USE:
        check(name in used, f"the dashboard shows {name}")
    check(any("histogram_quantile" in e and "apollo11_dispatch_latency_seconds_bucket" in e
              for e in exprs.values()), "dispatch latency quantiles from the _bucket series")
    return exprs


def check_doc_commands(source, bin_dir, root, http, api, alerts):
    """The section's commands, run as written but for the installed paths,
    the node's port and the pipeline name."""
    docs.PROGRAMS = docs.PROGRAMS + ("promtool",)
    doc = os.path.join(source, "docs", "operations.md")
    _, lines = docs.section(open(doc).read().split("\n"), SECTION)
    text = "\n".join(lines)
    installed = os.path.join(source, "packaging") + "/"
    for f in ("grafana/apollo11.json", "prometheus/apollo11-rules.yml",
              "prometheus/apollo11-rules.test.yml"):
        check("/usr/share/apollo11/" + f in text, f"the section names /usr/share/apollo11/{f}")
    for name in alerts:
        check(f"| `{name}` |" in text, f"the section's table lists {name}")
    config = re.search(r"```yaml\n# prometheus.yml\n(.*?)```", text, re.S)
    if not check(config is not None, "the section gives a prometheus.yml"):
        return
    cwd = os.path.join(root, "docs")
    os.makedirs(cwd)
    with open(os.path.join(cwd, "prometheus.yml"), "w") as f:
        f.write(config.group(1).replace("/usr/share/apollo11/", installed))
    env = dict(os.environ, APOLLO11_COORDINATOR=api)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    commands = docs.extract(doc, SECTION)
    check(len(commands) >= 3, f"the section has commands ({len(commands)})")
    for c in commands:
        line = c.text.replace("/usr/share/apollo11/", installed).replace("127.0.0.1:8011", http)
        line = line.replace("pipelines show NAME", "pipelines show mon.check")
        r = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True,
                           cwd=cwd, env=env, timeout=60)
        check(r.returncode == 0, f"docs line {c.line}: {c.text}", r.stdout[-2000:] + r.stderr[-2000:])
        if "apollo11_build_info" in c.text:
            check(re.search(r'commit="[^"]+"', r.stdout) is not None,
                  f"the build info line has a commit: {r.stdout.strip()}")


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    source, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if shutil.which("promtool") is None:
        print("SKIPPED: promtool is not installed (Debian package prometheus, "
              "scripts/setup.sh --with-tests)")
        return SKIP
    bin_dir = os.path.join(build, "cli")
    tmp = tempfile.mkdtemp(prefix="apollo11-monitoring-")
    procs = []
    try:
        rule_exprs = check_rules(source, tmp)
        panel_exprs = check_dashboard(source, tmp)

        text, http, api = single_node(bin_dir, tmp, procs)
        live = parse_metrics(text)
        ha_texts = ha_pair(bin_dir, tmp, procs)
        ha_only = set()
        for t in ha_texts:
            for name, series in parse_metrics(t).items():
                if name not in live:
                    ha_only.add(name)
                live.setdefault(name, []).extend(series)
        print("metrics only the HA coordinators serve:", " ".join(sorted(ha_only)) or "none")
        check(all(n in ha_only for n in ("apollo11_ha_role", "apollo11_replication_lag_seconds")),
              "the HA coordinators serve apollo11_ha_role and apollo11_replication_lag_seconds")

        used = set()
        for where, expr in panel_exprs.items():
            used |= check_uses(where, expr, live)
        for name, expr in rule_exprs.items():
            used |= check_uses(f"rule {name}", expr, live)
        print(f"{len(used)} metrics used by the dashboard and the rules, all checked")

        info = live.get("apollo11_build_info", [{}])[0]
        print("apollo11_build_info:", info)
        if run(["git", "-C", source, "rev-parse", "HEAD"]).returncode == 0:
            check(re.fullmatch(r"[0-9a-f]{7,40}", info.get("commit", "")) is not None,
                  f"apollo11_build_info has a git commit: {info.get('commit')!r}")

        check_doc_commands(source, bin_dir, tmp, http, api, rule_exprs)
    except AssertionError as e:
        failures.append(str(e))
        print("FAIL", e)
    finally:
        for p in reversed(procs):
            p.stop()
        if failures:
            print(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed:")
        for f in failures:
            print("  -", f.splitlines()[0])
        return 1
    print("all monitoring checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
