#!/usr/bin/env python3
"""Holds the production code to its size limits (issue 35):

- no production file (.h, .cc) over 500 lines;
- no loop file (actors/*_loop.cc, actors/worker_actor.cc) over 300 lines;
- no function over 80 lines, measured by universal-ctags as
  `ctags -R --languages=C++ --kinds-C++=f --fields=+ne` does (end - start + 1;
  a lambda counts as a function of its own).

Production code is every .h and .cc under the folders in PRODUCTION; tests,
benchmarks, fuzzers, build trees and generated files are not.

Prints every offender with its size, allowed ones marked, and every ALLOWED
entry that no longer matches an offender; exits 1 when either is found (an
entry nobody needs must be deleted, so the list cannot rot), 0 otherwise.
Usage: check_sizes.py [ROOT] [--ctags PATH].
"""
import argparse
import pathlib
import shutil
import subprocess
import sys

PRODUCTION = ("actors", "alerts", "cli", "common", "dsl", "engine", "executor", "ha",
              "observability", "replication", "storage", "transport")
NOT_PRODUCTION = ("tests", "bench", "fuzz")  # folders skipped at any depth, as build*
GENERATED_MARKS = ("@generated", "DO NOT EDIT")  # in a file's first lines

MAX_FILE_LINES = 500
MAX_LOOP_LINES = 300
MAX_FUNCTION_LINES = 80

# Offenders tolerated for now, each with why and who removes it: a file
# ("actors/x.cc") or a function ("actors/x.cc:Name", every definition of that
# name in the file). Delete an entry as soon as its offender is fixed: this
# check fails on an entry that matches nothing.
ALLOWED: dict = {}


def is_loop_file(rel):
    parts = rel.split("/")
    return len(parts) == 2 and parts[0] == "actors" and (
        parts[1].endswith("_loop.cc") or parts[1] == "worker_actor.cc")


def is_generated(path):
    with path.open(errors="replace") as f:
        head = "".join(f.readline() for _ in range(5))
    return any(mark in head for mark in GENERATED_MARKS)


def is_production(rel):
    parts = rel.split("/")
    if parts[0] not in PRODUCTION or not rel.endswith((".h", ".cc")):
        return False
    return not any(p in NOT_PRODUCTION or p.startswith("build") for p in parts[:-1])


def production_files(root):
    files = []
    for folder in PRODUCTION:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.is_file() and is_production(rel) and not is_generated(path):
                files.append(rel)
    return files


def line_count(path):
    with path.open("rb") as f:
        return sum(1 for _ in f)


def functions(root, ctags, files):
    """(file, name, first line, lines) of every function definition in `files`."""
    out = subprocess.run(
        [ctags, "--languages=C++", "--kinds-C++=f", "--fields=+ne", "-x",
         "--_xformat=%{end} %{line} %F %N", "-L", "-"],
        cwd=root, input="\n".join(files) + "\n", capture_output=True, text=True, check=True)
    found = []
    for row in out.stdout.splitlines():
        fields = row.split(" ", 3)
        if len(fields) != 4 or not fields[0].isdigit() or not fields[1].isdigit():
            continue  # no end line known: nothing to measure
        end, start, rel, name = int(fields[0]), int(fields[1]), fields[2], fields[3]
        found.append((rel, name, start, end - start + 1))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", nargs="?", default=pathlib.Path(__file__).parents[2])
    parser.add_argument("--ctags", default=shutil.which("ctags-universal") or shutil.which("ctags"))
    args = parser.parse_args()
    root = pathlib.Path(args.root)
    if not args.ctags:
        print("check_sizes: universal-ctags is not installed (scripts/setup.sh --with-tests)")
        return 1
    version = subprocess.run([args.ctags, "--version"], capture_output=True, text=True).stdout
    if "Universal Ctags" not in version:
        print(f"check_sizes: {args.ctags} is not universal-ctags: {version.splitlines()[:1]}")
        return 1

    files = production_files(root)
    offenders = []  # (allowlist key, message)
    for rel in files:
        lines = line_count(root / rel)
        limit = MAX_LOOP_LINES if is_loop_file(rel) else MAX_FILE_LINES
        if lines > limit:
            kind = "loop file" if limit == MAX_LOOP_LINES else "file"
            offenders.append((rel, f"{rel}: {lines} lines ({kind} limit {limit})"))
    for rel, name, start, lines in functions(root, args.ctags, files):
        if lines > MAX_FUNCTION_LINES:
            offenders.append((f"{rel}:{name}", f"{rel}:{start}: function {name}: {lines} lines "
                                               f"(limit {MAX_FUNCTION_LINES})"))

    failed = False
    used = set()
    for key, message in sorted(offenders):
        if key in ALLOWED:
            used.add(key)
            print(f"allowed  {message}  [{ALLOWED[key]}]")
        else:
            failed = True
            print(f"TOO BIG  {message}")
    for key in sorted(set(ALLOWED) - used):
        failed = True
        print(f"UNNEEDED allowlist entry {key!r} matches no offender: delete it from ALLOWED "
              f"in {pathlib.Path(__file__).name}")
    if failed:
        return 1
    print(f"sizes: {len(files)} production files within {MAX_FILE_LINES} lines (loop files "
          f"{MAX_LOOP_LINES}), every function within {MAX_FUNCTION_LINES}; "
          f"{len(used)} allowed offender(s) left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
