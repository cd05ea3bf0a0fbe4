#!/usr/bin/env python3
"""Docs as tests: the commands a markdown document gives, as a test runs them.

  run_doc_commands.py --list DOC.md [--section HEADING]...

lists what the runner finds (one command per line, with its line number and
kind), for whoever edits the document; the tests (e.g.
tests/docs/ha_docs_test.py) import it and run each command against processes
they started.

What is a command:

- a line of a fenced block whose first word is a program (PROGRAMS, a path
  such as `bench/x.py`, after any `VAR=value` words); a line ending in a
  backslash continues on the next, `# ...` lines are comments;
- an inline code span (`...`, which may wrap across a line break) whose
  first word is such a program.

Each command has a kind:

- `command`: run as written, after the test's substitutions;
- `synopsis`: it has optional parts (`[--json]`): run with every optional
  part given (the brackets dropped), so every documented flag must parse;
- `reference`: a program and subcommand names alone (`apollo11 run`), the
  name of a command in prose: `... --help` must exit 0, i.e. the command
  exists.

A test substitutes only what a document marks as a placeholder (LEADER, T,
...), through an explicit table it keeps (Substitution); it fails on a
non-zero exit, and says so when the output reads like a parse error (the
command no longer matches the CLI).
"""
import argparse
import dataclasses
import re
import subprocess
import sys

# First words that make a code span or a fenced line a command.
PROGRAMS = ("apollo11", "apollo11-node", "etcdctl", "apt-get", "curl")
# A path to a script or binary of the tree (bench/failover.py, build/...).
_PATH_PROGRAM = re.compile(r"^(bench|build|scripts|tests)/[\w./-]+$")
_ASSIGNMENT = re.compile(r"^[A-Z][A-Z0-9_]*=\S*$")
_FENCE = re.compile(r"^\s*```")
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9-]*$")
# What CLI11 and the other parsers print when a command line does not parse.
PARSE_ERRORS = ("The following arguments were not expected", "is required",
                "Run with --help for more information", "unrecognized option",
                "Could not convert", "invalid option", "unknown flag")


@dataclasses.dataclass
class DocCommand:
    text: str     # as written, continuation lines joined with single spaces
    line: int     # 1-based line of the document where it starts
    kind: str     # command, synopsis or reference
    fenced: bool  # from a fenced block (else an inline span)

    def words(self):
        return self.text.split()


def program_of(text):
    """The program word of `text` (after VAR=value words), or None. A path
    alone (`tests/ha/ha_cluster_test.py`) names a file, not a command."""
    words = text.split()
    for i, word in enumerate(words):
        if _ASSIGNMENT.match(word):
            continue
        if word in PROGRAMS:
            return word
        if _PATH_PROGRAM.match(word) and i + 1 < len(words):
            return word
        return None
    return None


def section(lines, heading):
    """(first line index, lines) of the section under `heading` (a whole
    heading line such as "## Replication"), up to the next heading of the
    same or a higher level; the whole document when heading is None."""
    if heading is None:
        return 0, lines
    level = len(heading) - len(heading.lstrip("#"))
    for i, line in enumerate(lines):
        if line.rstrip() == heading:
            for j in range(i + 1, len(lines)):
                m = re.match(r"^(#+) ", lines[j])
                if m and len(m.group(1)) <= level and not _in_fence(lines, j):
                    return i, lines[i:j]
            return i, lines[i:]
    raise ValueError(f"no heading {heading!r}")


def _in_fence(lines, index):
    return sum(1 for line in lines[:index] if _FENCE.match(line)) % 2 == 1


def classify(text):
    words = text.split()
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    if "[" in unquoted and "]" in unquoted:
        return "synopsis"
    if all(_SUBCOMMAND.match(w) for w in words[1:]) and len(words) <= 3 and \
            words[0] in ("apollo11", "apollo11-node"):
        return "reference"
    return "command"


def _fenced_commands(block, first_line):
    out, pending, start = [], "", None
    for offset, raw in enumerate(block):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if not pending:
            start = first_line + offset
        if line.endswith("\\"):
            pending += line[:-1].strip() + " "
            continue
        text = (pending + line).strip()
        pending = ""
        if program_of(text):
            out.append(DocCommand(text, start, classify(text), True))
    return out


def _inline_commands(paragraph, first_line):
    """Inline spans of `paragraph` (lines joined by newlines) that are
    commands; a span may wrap across a line break."""
    out = []
    for m in re.finditer(r"(`+)(.+?)\1", paragraph, re.S):
        text = " ".join(m.group(2).split())
        if program_of(text):
            line = first_line + paragraph.count("\n", 0, m.start())
            out.append(DocCommand(text, line, classify(text), False))
    return out


def extract(path, heading=None):
    """The commands of the section `heading` of the markdown file `path`, in
    document order."""
    with open(path) as f:
        lines = f.read().split("\n")
    base, lines = section(lines, heading)
    out, i, paragraph, para_start = [], 0, [], 0

    def flush():
        if paragraph:
            out.extend(_inline_commands("\n".join(paragraph), base + para_start + 1))
            paragraph.clear()

    while i < len(lines):
        if _FENCE.match(lines[i]):
            flush()
            j = i + 1
            while j < len(lines) and not _FENCE.match(lines[j]):
                j += 1
            out.extend(_fenced_commands(lines[i + 1:j], base + i + 2))
            i = j + 1
            continue
        if not lines[i].strip() or lines[i].lstrip().startswith(("- ", "|", "#")):
            flush()  # a blank line, a list item, a table row or a heading starts anew
        if lines[i].strip():
            if not paragraph:
                para_start = i
            paragraph.append(lines[i])
        i += 1
    flush()
    return out


def expand_synopsis(text):
    """A synopsis with every optional part given: `[--json]` -> `--json`."""
    return " ".join(text.replace("[", " ").replace("]", " ").split())


def reads_like_parse_error(output):
    """Whether a command's output says its command line did not parse."""
    return any(p in output for p in PARSE_ERRORS)


def run(argv, env=None, timeout=120, cwd=None):
    """Runs argv (a list, no shell); (exit code, stdout + stderr)."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                           cwd=cwd)
    except FileNotFoundError as e:
        return 127, str(e)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"
    return r.returncode, r.stdout + r.stderr


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", required=True, metavar="DOC", help="a markdown file")
    ap.add_argument("--section", action="append", help="a heading line, e.g. '## Replication'")
    a = ap.parse_args()
    for heading in a.section or [None]:
        for c in extract(a.list, heading):
            print(f"{a.list}:{c.line}: {c.kind:9} {'fenced' if c.fenced else 'inline'}  "
                  f"{c.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
