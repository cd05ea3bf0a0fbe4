#!/usr/bin/env python3
"""Writes CHANGELOG.md as a Debian changelog (the .deb's changelog.gz).

Usage: debian_changelog.py CHANGELOG_MD MAINTAINER OUTPUT

Each "## VERSION — DATE" section becomes one entry, its list items the
entry's lines; "Unreleased" items are not in any version and are left out.
A DATE that is not YYYY-MM-DD ("not yet released") makes the entry
UNRELEASED, dated by SOURCE_DATE_EPOCH (or now). The output is plain text;
the build gzips it (gzip -9n, as Debian policy asks).
"""
import datetime
import email.utils
import os
import re
import sys
import textwrap


def sections(text):
    current = None
    for line in text.splitlines():
        m = re.match(r"^## (\S+)(?: — (.*))?$", line)
        if m:
            current = {"version": m.group(1), "date": (m.group(2) or "").strip(), "items": []}
            yield current
            continue
        if current is None:
            continue
        item = re.match(r"^- (.*)$", line)
        if item:
            current["items"].append(item.group(1))
        elif line.startswith("  ") and current["items"]:
            current["items"][-1] += " " + line.strip()


def stamp(date):
    try:
        day = datetime.datetime.strptime(date, "%Y-%m-%d").replace(tzinfo=datetime.timezone.utc)
        return email.utils.format_datetime(day), "unstable"
    except ValueError:
        epoch = int(os.environ.get("SOURCE_DATE_EPOCH", datetime.datetime.now().timestamp()))
        when = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc)
        return email.utils.format_datetime(when), "UNRELEASED"


def main():
    source, maintainer, out = sys.argv[1:4]
    with open(source, encoding="utf-8") as f:
        text = f.read()
    entries = []
    for s in list(sections(text)):
        if s["version"] == "Unreleased":
            continue
        when, dist = stamp(s["date"])
        lines = ["apollo11 (%s) %s; urgency=medium" % (s["version"], dist), ""]
        for item in s["items"] or ["(no listed changes)"]:
            lines += textwrap.wrap(item, 78, initial_indent="  * ", subsequent_indent="    ")
        lines += ["", " -- %s  %s" % (maintainer, when), ""]
        entries.append("\n".join(lines))
    if not entries:
        sys.exit("debian_changelog: no version section (## VERSION — DATE) in " + source)
    with open(out, "w", encoding="utf-8") as f:
        f.write("\n".join(entries))


if __name__ == "__main__":
    main()
