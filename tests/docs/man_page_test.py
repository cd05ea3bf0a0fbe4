#!/usr/bin/env python3
"""The man pages document what the binaries do (issue 38):

  man_page_test.py SOURCE_DIR BUILD_DIR

- apollo11.1 and apollo11-node.1 render with man(1) and have NAME,
  SYNOPSIS, DESCRIPTION, OPTIONS, EXIT STATUS, ENVIRONMENT, FILES, SIGNALS
  and EXAMPLES; apollo11.1 also COMMANDS;
- every subcommand of apollo11 (and its own subcommands) has a subsection
  under COMMANDS, and every long option its --help lists is in the page;
  every long option of `apollo11-node start --help` is in that page;
- the exit codes under EXIT STATUS are the README's table's.
Exits 77 (skipped) when the build made no man pages (sanitizer builds).
"""
import os
import re
import subprocess
import sys

failures = []
SECTIONS = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "ENVIRONMENT",
            "FILES", "SIGNALS", "EXAMPLES"]


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def render(page):
    r = subprocess.run(["man", "-l", page], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANWIDTH": "200", "MAN_KEEP_FORMATTING": "0"})
    check(r.returncode == 0, f"man -l {page} renders ({r.stderr.strip()[:200]})")
    # man pipes through col -b when not on a terminal; strip any backspaces.
    return re.sub(r".\x08", "", r.stdout)


def sections(text):
    return re.findall(r"^([A-Z][A-Z ]+[A-Z])$", text, re.M)


def long_options(help_text):
    return sorted(set(re.findall(r"(--[a-z][a-z0-9-]+)", help_text)))


def help_of(binary, words):
    return subprocess.run([binary, *words, "--help"], capture_output=True, text=True,
                          timeout=30).stdout


def subcommands(text):
    if "Subcommands:" not in text:
        return []
    return re.findall(r"^  ([a-z][a-z0-9-]*) ", text.split("Subcommands:", 1)[1], re.M)


def exit_codes(text):
    return sorted(set(re.findall(r"^ {7}(\d)(?: {2,}|\s*$)", text, re.M)))


def main():
    src, build = sys.argv[1], sys.argv[2]
    man_dir = os.path.join(build, "man")
    pages = {p: os.path.join(man_dir, p + ".1.gz") for p in ("apollo11", "apollo11-node")}
    if not all(os.path.exists(p) for p in pages.values()):
        print("SKIP: no man pages in this build (help2man missing, or a sanitizer build)")
        return 77
    cli = os.path.join(build, "cli", "apollo11")
    node = os.path.join(build, "cli", "apollo11-node")

    text = render(pages["apollo11"])
    found = sections(text)
    for s in SECTIONS + ["COMMANDS"]:
        check(s in found, f"apollo11.1 has {s}")
    commands = text.split("\nCOMMANDS\n", 1)[-1]
    pending = [[c] for c in subcommands(help_of(cli, []))]
    while pending:
        words = pending.pop(0)
        own = help_of(cli, words)
        heading = "apollo11 " + " ".join(words)
        check(re.search(r"^ {3}" + re.escape(heading) + r"\s*$", commands, re.M) is not None,
              f"apollo11.1 has a subsection {heading!r}")
        missing = [o for o in long_options(own) if o not in commands]
        check(not missing, f"{heading}: every option of its --help is in the page {missing}")
        pending[0:0] = [words + [c] for c in subcommands(own)]

    readme = open(os.path.join(src, "README.md")).read()
    table = readme.split("**Exit codes**", 1)[1].split("\n\n", 2)[1]
    readme_codes = sorted(set(re.findall(r"^\| (\d) \|", table, re.M)))
    status = text.split("\nEXIT STATUS\n", 1)[1].split("\nSIGNALS\n", 1)[0]
    check(exit_codes(status) == readme_codes,
          f"apollo11.1's exit codes {exit_codes(status)} are the README's {readme_codes}")

    text = render(pages["apollo11-node"])
    found = sections(text)
    for s in SECTIONS:
        check(s in found, f"apollo11-node.1 has {s}")
    missing = [o for o in long_options(help_of(node, ["start"])) if o not in text]
    check(not missing, f"apollo11-node.1 has every option of start --help {missing}")
    check("SIGHUP" in text and "SIGTERM" in text, "apollo11-node.1 says what SIGHUP and SIGTERM do")

    print(f"{len(failures)} checks failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
