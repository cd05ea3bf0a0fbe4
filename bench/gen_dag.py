#!/usr/bin/env python3
"""Seeded DAG generator for the Apollo-11 benchmarks.

Writes ONE graph in three forms into an output directory:
  pipeline.yaml  Apollo-11 DSL (version "1.0", name bench.dag)
  build.ninja    one edge per task running `true`; outputs are never created,
                 so every edge runs exactly once per `ninja` invocation; the
                 dependency structure is expressed with order-only inputs
  graph.json     {"kind": "noop"|"shell", "tasks": [{"id", "deps"}]} for dask_run.py

Layered mode (default): N tasks spread over D layers as evenly as possible;
every task in layer k>0 depends on 1-3 distinct random tasks of layer k-1.
Chain mode (--chain): task i depends on task i-1 (for hop latency).

  gen_dag.py --tasks 5000 --depth 10 --kind shell --seed 1 --out DIR
  gen_dag.py --chain --tasks 1000 --kind noop --out DIR
"""

import argparse
import json
import os
import random
import sys


def layered(n, depth, rng):
    """Returns [(id, [deps])] for a layered DAG of n tasks in `depth` layers."""
    depth = max(1, min(depth, n))
    base, extra = divmod(n, depth)
    tasks = []
    prev = []
    for layer in range(depth):
        width = base + (1 if layer < extra else 0)
        cur = []
        for i in range(width):
            tid = "t%d_%d" % (layer, i)
            deps = []
            if prev:
                k = rng.randint(1, min(3, len(prev)))
                deps = rng.sample(prev, k)
            tasks.append((tid, deps))
            cur.append(tid)
        prev = cur
    return tasks


def chain(n):
    """Returns [(id, [deps])] for a linear chain c0 -> c1 -> ... of n tasks."""
    return [("c%d" % i, ["c%d" % (i - 1)] if i else []) for i in range(n)]


def write_pipeline(path, tasks, kind):
    # One flow mapping per task keeps the file small: the DSL refuses files
    # over 128 MiB (dsl/parser.h max_file_bytes), about 2M tasks in this form.
    body = 'type: shell, command: "true"' if kind == "shell" else "type: noop"
    with open(path, "w") as f:
        f.write('version: "1.0"\nname: bench.dag\npipeline:\n')
        for tid, deps in tasks:
            if deps:
                f.write("  - {id: %s, %s, depends_on: [%s]}\n" % (tid, body, ", ".join(deps)))
            else:
                f.write("  - {id: %s, %s}\n" % (tid, body))


def write_ninja(path, tasks):
    # Outputs live under out/ and are never created: each edge is dirty on
    # every invocation and runs exactly once; `||` order-only inputs give the
    # same ordering as the pipeline's depends_on without needing the files.
    with open(path, "w") as f:
        f.write("ninja_required_version = 1.3\n")
        f.write("rule run\n  command = true\n  description = $out\n\n")
        for tid, deps in tasks:
            if deps:
                f.write("build out/%s: run || %s\n" % (tid, " ".join("out/" + d for d in deps)))
            else:
                f.write("build out/%s: run\n" % tid)
        f.write("\nbuild all: phony %s\ndefault all\n" % " ".join("out/" + t for t, _ in tasks))


def write_graph(path, tasks, kind):
    with open(path, "w") as f:
        json.dump({"kind": kind, "tasks": [{"id": t, "deps": d} for t, d in tasks]}, f)


def generate(out, n, depth=10, kind="noop", seed=1, chain_mode=False):
    """Writes the three files into `out` (created); returns the task list."""
    os.makedirs(out, exist_ok=True)
    tasks = chain(n) if chain_mode else layered(n, depth, random.Random(seed))
    write_pipeline(os.path.join(out, "pipeline.yaml"), tasks, kind)
    write_ninja(os.path.join(out, "build.ninja"), tasks)
    write_graph(os.path.join(out, "graph.json"), tasks, kind)
    return tasks


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=5000, help="number of tasks N")
    p.add_argument("--depth", type=int, default=10, help="number of layers D")
    p.add_argument("--kind", choices=["noop", "shell"], default="noop")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--chain", action="store_true", help="a linear chain of N tasks")
    p.add_argument("--out", required=True, help="output directory")
    a = p.parse_args(argv)
    if a.tasks < 1:
        p.error("--tasks must be >= 1")
    tasks = generate(a.out, a.tasks, a.depth, a.kind, a.seed, a.chain)
    edges = sum(len(d) for _, d in tasks)
    print("wrote %d tasks, %d edges to %s" % (len(tasks), edges, a.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
