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
                       text=True, timeout=170)
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
    for s in ["1", "2", "3", "4", "5", "6", "7"]:
        if s not in sections:
            return fail("section %s has no row" % s, md)
    first = rows[0]
    if not re.search(r"\d+\.\d{3} s .*tasks/s", first):
        return fail("the embedded noop row has no wall time and tasks/s: " + first)
    if shutil.which("ninja"):
        ninja = [l for l in rows if "vs `ninja" in l]
        if not ninja or not re.search(r"ninja \d+\.\d{3} s", ninja[0]):
            return fail("ninja is installed but its row has no figure", md)
    lat = [l for l in rows if l.startswith("| 5 ")]
    if not re.search(r"p50 -?\d+ µs, p99 -?\d+ µs", lat[0]):
        return fail("the latency row has no percentiles: " + lat[0])
    scaling = [l for l in rows if l.startswith("| 4 ")]
    if len(scaling) < 2 or any("failed" in l for l in scaling):
        return fail("scaling rows missing or failed", md)
    print("PASS: results table with %d rows" % len(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
