#!/usr/bin/python3
"""Checks the sanitizers' tier list: check_tier.py LIST TEST_ROOT. Each entry (a path relative
to TEST_ROOT) must be an existing test under one of the folders its `folders:` line names, listed once. Prints one line per
problem and `tier: N tests, M problems`; exits 1 on any problem."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from tier_list import read_tier  # noqa: E402  (what lit reads)


def main():
    path, root = sys.argv[1:3]
    seen, problems = set(), 0
    folders, entries = read_tier(path)
    if not folders:
        print("the list has no `folders:` line: it would filter nothing")
        problems += 1
    for e in entries:
        if e in seen:
            print(f"{e}: listed twice")
            problems += 1
            continue
        seen.add(e)
        if e.split("/")[0] not in folders:
            print(f"{e}: not under {', '.join(f + '/' for f in folders)} (the tier filters only those)")
            problems += 1
        elif not os.path.isfile(os.path.join(root, e)):
            print(f"{e}: no such test")
            problems += 1
    print(f"tier: {len(seen)} tests, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
