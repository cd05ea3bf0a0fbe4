#!/usr/bin/env python3
"""Validates every YAML file under examples/ against schema/pipeline.schema.json.

Usage: check_examples_schema.py SCHEMA EXAMPLES_DIR [APOLLO11_BINARY]
With the binary, also runs `apollo11 validate` on each pipeline.yaml so the
examples pass both the parser and the schema. Exit 0 when all pass.
"""
import json
import pathlib
import re
import subprocess
import sys

import jsonschema
import yaml


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML follows YAML 1.1, where `on`, `yes` and `off` are booleans; yaml-cpp
    and editors read them as text (YAML 1.2). Only true/false are booleans here."""


Yaml12Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def main() -> int:
    schema = json.loads(pathlib.Path(sys.argv[1]).read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    binary = sys.argv[3] if len(sys.argv) > 3 else None
    if binary and not pathlib.Path(binary).exists():
        print(f"note: {binary} is not built; the parser check runs in dsl_test instead")
        binary = None
    failures = 0
    files = sorted(pathlib.Path(sys.argv[2]).rglob("*.yaml"))
    for path in files:
        document = yaml.load(path.read_text(), Loader=Yaml12Loader)
        for error in validator.iter_errors(document):
            where = "/".join(str(p) for p in error.absolute_path)
            print(f"{path}: schema: {where}: {error.message}")
            failures += 1
        if binary and path.name == "pipeline.yaml":
            run = subprocess.run([binary, "validate", str(path)], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"{path}: apollo11 validate exited {run.returncode}:\n{run.stderr}")
                failures += 1
    # The schema must also reject what the parser rejects for structure.
    for bad in ({"version": "1.0", "pipeline": [{"id": "a", "type": "shel"}]},
                {"version": "1.0", "pipeline": [{"id": "a", "type": "noop", "comand": "x"}]},
                {"version": "1.0", "pipline": []}):
        if validator.is_valid(bad):
            print(f"schema accepts a bad pipeline: {bad}")
            failures += 1
    print(f"{len(files)} example files checked, {failures} problems")
    return 1 if failures or not files else 0


if __name__ == "__main__":
    sys.exit(main())
