#!/usr/bin/env python3
"""docs/dashboard.md's "Screenshots" block, run as written.

  dashboard_docs_test.py SOURCE_DIR

Runs the section's fenced sh block with bash from SOURCE_DIR (its paths are
relative to the repository and name the `build` directory), with
$APOLLO11_SCREENSHOTS_DIR set to a scratch directory so that
docs/screenshots stays as committed; passes when the block exits 0 having
written the one PNG it asks for, and left docs/screenshots alone.
"""
import os
import re
import subprocess
import sys
import tempfile


def screenshot_block(doc):
    text = open(doc, encoding="utf-8").read()
    section = text.split("\n## Screenshots\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    if len(blocks) != 1:
        raise SystemExit(f"FAIL expected one sh block under Screenshots, found {len(blocks)}")
    return blocks[0]


def snapshot(folder):
    return {name: os.stat(os.path.join(folder, name)).st_mtime_ns
            for name in sorted(os.listdir(folder))}


def main():
    source = sys.argv[1]
    block = screenshot_block(os.path.join(source, "docs", "dashboard.md"))
    committed = os.path.join(source, "docs", "screenshots")
    before = snapshot(committed)
    with tempfile.TemporaryDirectory(prefix="apollo11-shots-") as shots:
        env = dict(os.environ, APOLLO11_SCREENSHOTS_DIR=shots)
        print(block)
        r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=source, env=env,
                           timeout=540)
        if r.returncode != 0:
            print(f"FAIL the block exited {r.returncode}")
            return 1
        written = sorted(os.listdir(shots))
        if written != ["overview.png"] or os.path.getsize(os.path.join(shots, written[0])) < 10000:
            print(f"FAIL expected one overview.png of some size, found {written}")
            return 1
    if snapshot(committed) != before:
        print("FAIL docs/screenshots changed")
        return 1
    print("ok   docs/dashboard.md's Screenshots block ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
