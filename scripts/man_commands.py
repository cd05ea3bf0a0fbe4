#!/usr/bin/env python3
"""Writes a help2man include file with a COMMANDS section: every
subcommand of BINARY (and their own subcommands) with its --help, so
`man apollo11` documents each subcommand's options.

  man_commands.py BINARY OUT.h2m
"""
import re
import subprocess
import sys


def help_of(binary, words):
    r = subprocess.run([binary, *words, "--help"], capture_output=True, text=True, timeout=30)
    return r.stdout


def subcommands(text):
    if "Subcommands:" not in text:
        return []
    block = text.split("Subcommands:", 1)[1]
    return re.findall(r"^  ([a-z][a-z0-9-]*) ", block, re.M)


def roff(text):
    """Help text as roff lines inside .nf: backslashes escaped, and a line
    that starts with a dot or a quote kept as text."""
    out = []
    for line in text.rstrip().splitlines():
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    binary, out_path = sys.argv[1], sys.argv[2]
    name = binary.rsplit("/", 1)[-1]
    sections = []
    pending = [[c] for c in subcommands(help_of(binary, []))]
    while pending:
        words = pending.pop(0)
        text = help_of(binary, words)
        sections.append(f'.SS "{name} {" ".join(words)}"\n.nf\n{roff(text)}\n.fi')
        pending[0:0] = [words + [c] for c in subcommands(text)]
    with open(out_path, "w") as f:
        f.write("[COMMANDS]\n" + "\n".join(sections) + "\n")


if __name__ == "__main__":
    sys.exit(main())
