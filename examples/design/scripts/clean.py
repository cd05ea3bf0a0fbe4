#!/usr/bin/env python3
"""Cleans the records fetched by data_fetch: drops blank lines and duplicates.

Reads upstream output from stdin (or the file named by argv[1]) and writes the
cleaned records to stdout, one per line.
"""
import sys


def main() -> int:
    source = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    seen = set()
    for line in source:
        record = line.strip()
        if record and record not in seen:
            seen.add(record)
            print(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
