"""A pipeline file made ready for POST /api/v1/pipelines.

The coordinator reads no file of its own disk for a registration over HTTP,
so a python task's `script:` and a db task's `script:` would not be part of
the version (docs/dsl.md, "The code in a version"). `apollo11 pipelines add`
reads them on the client's side; this module does the same for the Python
client: it reads each such file beside the pipeline file and writes its text
into the YAML as the task's `code:` (python) or `sql:` (db), so the version
captures it. The rest of the text is sent as written.

Finding those tasks needs PyYAML (Debian's python3-yaml), used only to locate
them: the text is edited in place, never re-serialised, so YAML that PyYAML
reads otherwise than the coordinator (`on:` keys, say) is not changed.
Without PyYAML a file with a relative `script:` is refused here, saying so;
one without is sent as it is. `imports:` cannot be inlined: register such a pipeline
with `apollo11 pipelines add`.
"""

import os
import re
from typing import List, Optional, Tuple

# What a task's `script:` becomes, per task type.
_INLINED_KEY = {"python": "code", "db": "sql"}
# The largest script the DSL takes (docs/dsl.md, python `script`).
MAX_SCRIPT_BYTES = 1 << 20
# A `script:` line with a relative path, to say what is missing without PyYAML.
_RELATIVE_SCRIPT = re.compile(r"""^[ \t-]*script[ \t]*:[ \t]*['"]?([^/'"\s#][^'"\s#]*)""", re.M)


def yaml_double_quoted(text: str) -> str:
    """`text` as a YAML double-quoted scalar: any text, on one line."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif code < 0x20 or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xDFFF or code in (
                0xFEFF, 0xFFFE, 0xFFFF):
            out.append("\\u%04x" % code)
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _scalar(node) -> Optional[str]:
    return node.value if type(node).__name__ == "ScalarNode" else None


def _mapping_items(node) -> List[Tuple[object, object]]:
    return list(node.value) if type(node).__name__ == "MappingNode" else []


def _get(node, key: str):
    for k, v in _mapping_items(node):
        if _scalar(k) == key:
            return v
    return None


def _edits_for(task, template_types, base_dir: str, where: str) -> List[Tuple[int, int, str]]:
    """The (start, end, replacement) edits that inline `task`'s script."""
    type_node = _get(task, "type")
    task_type = _scalar(type_node) if type_node is not None else None
    if task_type is None:
        extends = _get(task, "extends")
        task_type = template_types.get(_scalar(extends) if extends is not None else None)
    inlined = _INLINED_KEY.get(task_type or "")
    if inlined is None:
        return []
    for key, value in _mapping_items(task):
        if _scalar(key) != "script":
            continue
        path = _scalar(value)
        if not path:
            return []
        full = path if os.path.isabs(path) else os.path.join(base_dir, path)
        if os.path.isabs(path) and not os.path.isfile(full):
            return []  # a path on the workers, run as it is then (not captured)
        try:
            with open(full, "rb") as f:
                data = f.read(MAX_SCRIPT_BYTES + 1)
        except OSError as e:
            raise ValueError(f"{where}: script '{path}' cannot be read ({full}): "
                             f"{e.strerror or e}") from None
        if len(data) > MAX_SCRIPT_BYTES:
            raise ValueError(f"{where}: script '{path}' is over {MAX_SCRIPT_BYTES} bytes")
        text = data.decode("utf-8", errors="replace")
        return [(key.start_mark.index, key.end_mark.index, inlined),
                (value.start_mark.index, value.end_mark.index, yaml_double_quoted(text))]
    return []


def inline_scripts(text: str, base_dir: str, name: str = "pipeline") -> str:
    """`text` with every python and db task's `script:` file (relative to
    `base_dir`, or an absolute path that exists here) read into `code:` or
    `sql:`. Returns `text` unchanged when the text does not parse or no task
    has a script. ValueError names a script that cannot be read or is too
    large, or a relative one when PyYAML is missing."""
    if "script" not in text:
        return text
    try:
        import yaml  # optional: python3-yaml
    except ImportError:
        relative = _RELATIVE_SCRIPT.search(text)
        if relative:
            raise ValueError(f"{name}: reading script '{relative.group(1)}' into the version "
                             "needs PyYAML (Debian's python3-yaml); or give the code inline "
                             "as `code:`") from None
        return text
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return text  # the node's refusal will point at the error
    if root is None:
        return text
    template_types = {}
    templates = _get(root, "templates")
    for key, template in _mapping_items(templates) if templates is not None else []:
        type_node = _get(template, "type")
        if type_node is not None:
            template_types[_scalar(key)] = _scalar(type_node)
    edits = []
    for key, template in _mapping_items(templates) if templates is not None else []:
        edits += _edits_for(template, template_types, base_dir,
                            f"{name}: template {_scalar(key)}")
    tasks = _get(root, "pipeline")
    for task in (tasks.value if type(tasks).__name__ == "SequenceNode" else []):
        task_id = _scalar(_get(task, "id")) if _get(task, "id") is not None else "?"
        edits += _edits_for(task, template_types, base_dir, f"{name}: task {task_id}")
    # An alias repeats its anchor's node: edit each place once, the last first.
    for start, end, replacement in sorted(set(edits), reverse=True):
        text = text[:start] + replacement + text[end:]
    return text
