#!/usr/bin/env python3
"""Runs a gen_dag.py graph.json on dask.distributed and prints one JSON line.

LocalCluster(n_workers=S, threads_per_worker=1, processes=True). A `noop` task
is a trivial Python function; a `shell` task runs
subprocess.run(["/bin/sh", "-c", "true"]). The whole graph is handed to the
scheduler in one low-level graph (client.get), the cheapest way Dask offers.

Output: {"ok": true, "tasks": N, "startup_s": ..., "wall_s": ...} where
wall_s runs from submitting the graph until every task is done (cluster
start-up excluded, reported separately as startup_s).

  dask_run.py GRAPH_JSON --workers 2 [--repeat R] [--warmup]
"""

import argparse
import json
import logging
import subprocess
import sys
import time


def noop(*_deps):
    return None


def shell_true(*_deps):
    subprocess.run(["/bin/sh", "-c", "true"], check=True)
    return None


def build_graph(doc):
    fn = shell_true if doc["kind"] == "shell" else noop
    dsk = {}
    for t in doc["tasks"]:
        dsk[t["id"]] = (fn,) + tuple(t["deps"])
    return dsk


def main(argv):
    p = argparse.ArgumentParser(description="run graph.json on a Dask LocalCluster")
    p.add_argument("graph")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeat", type=int, default=1,
                   help="runs on the same cluster; one JSON line each")
    p.add_argument("--warmup", action="store_true",
                   help="first run a 50-task graph of the same kind, unreported, so the "
                        "workers' imports and connections are warm")
    a = p.parse_args(argv)
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:
        print(json.dumps({"ok": False, "error": "dask.distributed not installed: %s" % e}))
        return 3
    with open(a.graph) as f:
        doc = json.load(f)
    keys = [t["id"] for t in doc["tasks"]]

    t0 = time.perf_counter()
    cluster = LocalCluster(n_workers=a.workers, threads_per_worker=1, processes=True,
                           dashboard_address=None, silence_logs=logging.ERROR)
    client = Client(cluster)
    client.wait_for_workers(a.workers)
    startup = time.perf_counter() - t0
    rc = 0
    try:
        if a.warmup:
            warm = {"kind": doc["kind"], "tasks": doc["tasks"][:50]}
            client.get(build_graph(warm), [t["id"] for t in warm["tasks"]], sync=True)
        for _ in range(a.repeat):
            dsk = build_graph(doc)
            t1 = time.perf_counter()
            client.get(dsk, keys, sync=True)
            wall = time.perf_counter() - t1
            print(json.dumps({"ok": True, "tasks": len(keys), "kind": doc["kind"],
                              "workers": a.workers, "startup_s": startup, "wall_s": wall}),
                  flush=True)
    except Exception as e:  # report, do not hide, a failed run
        print(json.dumps({"ok": False, "error": repr(e)}), flush=True)
        rc = 1
    finally:
        client.close()
        cluster.close()
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
