#!/usr/bin/env python3
"""The README's two commands, as a new user meets them.

  quick_start_test.py SOURCE_DIR

Checks, and exits 1 naming every check that fails:
  - README.md's quick start gives exactly two commands, ./scripts/run-example.sh
    and ./scripts/test.sh, and says that .ci/run runs the second;
  - .ci/run runs exactly that test command (its one exec line);
  - each of the two scripts installs its own Debian packages
    (`bash scripts/setup.sh`, with --with-tests for the test command) before
    it builds anything, and setup.sh is idempotent here (exit 0, nothing to
    install on a machine that has run it).
It does not run the two scripts: CI runs the test command (.ci/run), and a
build inside the test suite would rebuild the tree under test.
"""
import re
import subprocess
import sys

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def quick_start_commands(readme):
    """The command lines of the first fenced block after '## Quick start'."""
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```", 2)[1]
    lines = [l.strip() for l in block.splitlines()[1:]]
    return [l for l in lines if l and not l.startswith("#")]


def first_line_index(text, pattern):
    for i, line in enumerate(text.splitlines()):
        if re.search(pattern, line) and not line.lstrip().startswith("#"):
            return i
    return None


def main():
    src = sys.argv[1]
    readme = open(f"{src}/README.md").read()
    commands = quick_start_commands(readme)
    check(commands == ["./scripts/run-example.sh", "./scripts/test.sh"],
          f"README.md's quick start gives the two commands: {commands}")
    check("`.ci/run` runs exactly `./scripts/test.sh`." in readme,
          "README.md says .ci/run runs the test command")

    ci = open(f"{src}/.ci/run").read()
    execs = [l.strip() for l in ci.splitlines() if l.strip().startswith("exec ")]
    check(execs == ["exec ./scripts/test.sh"], f".ci/run execs the README's test command: {execs}")

    for script, setup in (("run-example.sh", r"^bash scripts/setup\.sh\s*$"),
                          ("test.sh", r"^bash scripts/setup\.sh --with-tests\s*$")):
        text = open(f"{src}/scripts/{script}").read()
        installs = first_line_index(text, setup)
        builds = first_line_index(text, r"\bcmake\b")
        check(installs is not None and builds is not None and installs < builds,
              f"scripts/{script} installs its packages (line {installs}) before it builds "
              f"(line {builds})")

    for flags in ([], ["--with-tests"]):
        r = subprocess.run(["bash", f"{src}/scripts/setup.sh", *flags], capture_output=True,
                           text=True, timeout=600)
        check(r.returncode == 0 and not r.stdout.strip(),
              f"scripts/setup.sh {' '.join(flags)} is idempotent here: exit {r.returncode}, "
              f"output {r.stdout.strip()[:200]!r}")
    print(f"{len(failures)} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
