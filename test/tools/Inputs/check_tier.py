#!/usr/bin/python3
"""Checks the sanitizers' tier list: check_tier.py LIST TEST_ROOT. Each entry (a path relative
to TEST_ROOT) must be an existing test under e2e/, gpu/ or frontend/, listed once. Prints one line per
problem and `tier: N tests, M problems`; exits 1 on any problem."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lit_piper import TIERED  # noqa: E402  (the folders the tier filters)


def main():
    path, root = sys.argv[1:3]
    seen, problems = set(), 0
    with open(path) as f:
        entries = [line.split("#")[0].strip() for line in f]
    for e in (e for e in entries if e):
        if e in seen:
            print(f"{e}: listed twice")
            problems += 1
            continue
        seen.add(e)
        if e.split("/")[0] not in TIERED:
            print(f"{e}: not under e2e/, gpu/ or frontend/ (the tier filters only those)")
            problems += 1
        elif not os.path.isfile(os.path.join(root, e)):
            print(f"{e}: no such test")
            problems += 1
    print(f"tier: {len(seen)} tests, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
