#!/usr/bin/env python3
"""Smoke test of bench/harness.py: runs `harness.py --smoke` against a built
apollo11 and checks that it exits 0 and wrote a results table in which every
section has a row and the Apollo-11 figures are numbers, not failures."""

import argparse
import os
import re
import shutil
import subprocess
import sys


def fail(msg, out=""):
    print("FAIL: " + msg)
    if out:
        print(out)
    return 1


def main(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--harness", required=True)
    p.add_argument("--apollo11", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    shutil.rmtree(a.out, ignore_errors=True)
    r = subprocess.run([sys.executable, a.harness, "--smoke", "--apollo11", a.apollo11,
                        "--out", a.out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=400)
    print(r.stdout)
    if r.returncode != 0:
        return fail("harness exited %d" % r.returncode)
    path = os.path.join(a.out, "results.md")
    if not os.path.exists(path):
        return fail("no %s" % path)
    md = open(path).read()
    if "| # | measurement | Apollo-11 | peer | ratio | target | verdict |" not in md:
        return fail("no table header in results.md", md)
    rows = [l for l in md.splitlines() if re.match(r"^\| [0-9]", l)]
    sections = {l.split("|")[1].strip() for l in rows}
    for s in ["1", "2", "3", "4", "5", "6", "7", "8"]:
        if s not in sections:
            return fail("section %s has no row" % s, md)
    wa = [l for l in rows if l.startswith("| 8 ") and "write_bytes per task" in l]
    if not wa or not re.search(r"\| \d+\.\d KiB \|", wa[0]):
        return fail("the write amplification row has no write_bytes figure", md)
    first = rows[0]
    if not re.search(r"\d+\.\d{3} s .*tasks/s", first):
        return fail("the embedded noop row has no wall time and tasks/s: " + first)
    if shutil.which("ninja"):
        ninja = [l for l in rows if "vs `ninja" in l]
        if not ninja or not re.search(r"ninja \d+\.\d{3} s", ninja[0]):
            return fail("ninja is installed but its row has no figure", md)
    node = os.path.join(os.path.dirname(a.apollo11), "apollo11-node")
    cluster = os.access(node, os.X_OK)
    lat = [l for l in rows if l.startswith("| 5 ") and "hop latency" in l]
    if len(lat) < (2 if cluster else 1) or not any("hop latency embedded" in l for l in lat):
        return fail("expected embedded%s latency rows" % (" and cluster" if cluster else ""), md)
    if cluster and not any("hop latency cluster" in l for l in lat):
        return fail("no cluster latency row", md)
    for line in lat:
        if not re.search(r"p50 -?\d+ µs, p99 -?\d+ µs", line):
            return fail("a latency row has no percentiles: " + line)
    if cluster:
        # apollo11-node is built beside apollo11: the cluster, recovery and
        # idle rows must hold figures, not "n/a".
        if not re.search(r"over tcp loopback \| \d+\.\d{3} s .*tasks/s", md):
            return fail("the cluster noop row has no figure", md)
        tool = os.path.join(os.path.dirname(os.path.dirname(a.apollo11)), "bench",
                            "apollo11_journal_tool")
        if os.access(tool, os.X_OK) and not re.search(r"\| 6 \|[^\n]*serving after \d+ ms", md):
            return fail("the recovery row has no figure", md)
        if not re.search(r"\| 7 \|[^\n]*CPU \d+\.\d+ %, RSS \d+\.\d MB", md):
            return fail("the idle row has no figure", md)
    scaling = [l for l in rows if l.startswith("| 4 ")]
    if len(scaling) < 2 or any("failed" in l for l in scaling):
        return fail("scaling rows missing or failed", md)
    print("PASS: results table with %d rows" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
