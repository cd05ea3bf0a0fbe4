#!/usr/bin/env python3
"""Cleans the orders fetched by `fetch`: drops records without an id, an
email or a non-negative amount, lower-cases emails, keeps the first record of
each id, and converts amounts to cents. Prints the result as one JSON array
on stdout and, when the worker offers it, in $APOLLO11_OUTPUT (the task's
output, which `store` binds as a parameter).
"""
import json
import os
import sys


def main() -> int:
    path = os.path.join(os.environ["APOLLO11_INPUTS_DIR"], "outputs", "fetch")
    with open(path, encoding="utf-8") as f:
        records = json.load(f)
    seen = set()
    cleaned = []
    for r in records:
        oid = str(r.get("id", "")).strip()
        email = str(r.get("email", "")).strip().lower()
        amount = r.get("amount")
        if not oid or "@" not in email or not isinstance(amount, (int, float)) or amount < 0:
            continue
        if oid in seen:
            continue
        seen.add(oid)
        cleaned.append({"id": oid, "email": email, "amount_cents": round(amount * 100)})
    json.dump(cleaned, sys.stdout)
    # Also the task's structured output, where the coordinator's templating
    # (${tasks.clean.output}) reads it when it is there.
    if os.environ.get("APOLLO11_OUTPUT"):
        with open(os.environ["APOLLO11_OUTPUT"], "w", encoding="utf-8") as out:
            json.dump(cleaned, out)
    print(f"\nkept {len(cleaned)} of {len(records)} orders", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
