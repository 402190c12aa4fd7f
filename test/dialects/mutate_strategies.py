#!/usr/bin/python3
"""Robustness: damaged strategy files never crash the compiler.

Feeds N seeded mutations of a valid strategy (bytes flipped, deleted, duplicated; JSON values
replaced by other types, huge or negative numbers, deep nesting) through
`piper-opt MODEL --piper-autodiff --piper-apply-strategy=FILE --piper-extract --piper-verify-plan`
and checks that every run ends with exit 0 or 1 (a diagnostic), never a signal or a hang.
Prints `N passed, M failed`. Usage: mutate_strategies.py MODEL STRATEGY WORKDIR N
"""
import json
import os
import random
import subprocess
import sys


def mutate_json(doc, r):
    values = [None, True, -1, 0, 10**12, 1.5, "", "*", "PP", [], {}, [[]], [{}], {"PP": -3},
              [0, 0], "x" * 300]
    def walk(x, depth):
        if isinstance(x, dict) and x and r.random() < 0.5:
            k = r.choice(sorted(x))
            x[k] = r.choice(values) if r.random() < 0.5 else walk(x[k], depth + 1)
        elif isinstance(x, list) and x and r.random() < 0.5:
            i = r.randrange(len(x))
            x[i] = r.choice(values) if r.random() < 0.3 else walk(x[i], depth + 1)
        return x
    doc = walk(doc, 0)
    if r.random() < 0.1:
        doc = [doc] * 3
    return json.dumps(doc)


def mutate_bytes(text, r):
    b = bytearray(text.encode())
    for _ in range(r.randint(1, 4)):
        i = r.randrange(len(b))
        op = r.randrange(3)
        if op == 0:
            b[i] = r.randrange(256)
        elif op == 1:
            del b[i]
        else:
            b[i:i] = b[i:i + r.randint(1, 20)]
    return bytes(b)


def main():
    model, strategy, work, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    os.makedirs(work, exist_ok=True)
    base = open(strategy).read()
    r = random.Random(1234)
    passed = failed = 0
    for k in range(n):
        path = os.path.join(work, "m%d.json" % k)
        data = mutate_json(json.loads(base), r).encode() if k % 2 else mutate_bytes(base, r)
        open(path, "wb").write(data)
        try:
            p = subprocess.run(["piper-opt", model, "--piper-autodiff",
                                "--piper-apply-strategy=" + path, "--piper-extract",
                                "--piper-verify-plan", "-o", "/dev/null"],
                               capture_output=True, timeout=60)
            ok = p.returncode in (0, 1) and (p.returncode == 0 or b"error" in p.stderr)
        except subprocess.TimeoutExpired:
            ok = False
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL %s: exit %s" % (path, p.returncode))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
