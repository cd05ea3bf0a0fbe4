#!/usr/bin/env python3
"""Writes the full third-party notices of what apollo11 and apollo11-node carry.

Usage: third_party_notices.py REPO_DIR ESBUILD_METAFILE NODE_MODULES OUTPUT

Two kinds of code end up inside the binaries:
  * C++ libraries whose headers are compiled in (templates and inline code of
    header-only libraries): their Debian packages' copyright files
    (/usr/share/doc/PKG/copyright, machine-readable) are copied whole;
  * the npm packages esbuild bundled into the dashboard (every input of the
    metafile under node_modules/, and their runtime dependencies, which such a
    package's dist file may carry inside it): each package's LICENSE file.
Shared libraries that are only linked (libzmq, LMDB, yaml-cpp, libcurl,
OpenSSL...) are not carried: their Debian packages ship their own notices.

A package without a license file stops the build: nothing is bundled without
its notice. The list of C++ packages is HEADER_PACKAGES below; NOTICE names
the same packages (tests/packaging checks the two agree).
"""
import json
import os
import sys

# Debian packages whose headers are compiled into the binaries.
HEADER_PACKAGES = [
    "cppzmq-dev",
    "libmsgpack-cxx-dev",
    "libboost1.74-dev",  # msgpack-cxx's headers include Boost's
    "libcli11-dev",
    "nlohmann-json3-dev",
    "libspdlog-dev",
    "libfmt-dev",
    "libcpp-httplib-dev",
]

LICENSE_NAMES = ["LICENSE", "LICENSE.md", "LICENSE.txt", "LICENCE", "COPYING"]


def package_dir(node_modules, input_path):
    """node_modules/@scope/name/... -> (name with scope, its directory)."""
    parts = input_path.split("/")
    i = parts.index("node_modules") + 1
    n = 2 if parts[i].startswith("@") else 1
    name = "/".join(parts[i:i + n])
    return name, os.path.join(node_modules, name)


def npm_packages(metafile, node_modules):
    with open(metafile) as f:
        inputs = json.load(f)["inputs"]
    todo = [package_dir(node_modules, p) for p in inputs if "node_modules/" in p]
    seen = {}
    while todo:
        name, where = todo.pop()
        if name in seen:
            continue
        seen[name] = where
        with open(os.path.join(where, "package.json")) as f:
            meta = json.load(f)
        for dep in meta.get("dependencies", {}):
            todo.append((dep, os.path.join(node_modules, dep)))
    return seen


def npm_notice(name, where):
    with open(os.path.join(where, "package.json")) as f:
        meta = json.load(f)
    for candidate in LICENSE_NAMES:
        path = os.path.join(where, candidate)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                text = f.read().strip()
            head = "%s %s (npm; license %s)" % (name, meta.get("version", "?"),
                                                 meta.get("license", "?"))
            return head, text
    sys.exit("third_party_notices: the npm package %s (bundled into the dashboard) has no "
             "license file in %s" % (name, where))


def debian_notice(pkg):
    path = "/usr/share/doc/%s/copyright" % pkg
    if not os.path.exists(path):
        sys.exit("third_party_notices: %s is missing: is the Debian package %s installed "
                 "(scripts/setup.sh)?" % (path, pkg))
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read().strip()
    # libboost's file lists each of Boost's files (46,000 lines); every one
    # is under the one license, so its "Files: *" paragraph and the license
    # text are kept.
    if pkg.startswith("libboost"):
        paragraphs = text.split("\n\n")
        kept = [p for p in paragraphs if p.startswith("Files: *")][:1]
        kept += [p for p in paragraphs if p.startswith("License:") and "\n" in p]
        text = "\n\n".join(kept)
    return "%s (Debian package; headers compiled in)" % pkg, text


def main():
    repo, metafile, node_modules, out = sys.argv[1:5]
    sections = [debian_notice(p) for p in HEADER_PACKAGES]
    for name, where in sorted(npm_packages(metafile, node_modules).items()):
        sections.append(npm_notice(name, where))
    with open(os.path.join(repo, "NOTICE"), encoding="utf-8") as f:
        parts = [f.read().strip(), ""]
    rule = "=" * 78
    for head, text in sections:
        parts += [rule, head, rule, "", text, ""]
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
