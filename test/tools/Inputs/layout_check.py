#!/usr/bin/python3
"""layout_check.py STRATEGY.json P D T: the device layout of a piper-sched strategy for P
pipeline devices, D data-parallel replicas and tensor-parallel groups of T, read independently
of the compiler: each `devices` field expanded by the strategy format's rule (a list of ids, or
a range {"start", "count", "step", "run"}: the ids start + i*step + j, i < count, j < run), and
checked against piper-sched's layout: pipeline device p's place lists (r*P + p)*T + t for every
replica r and member t, ascending; every replicate lists its place's devices; every device of
0 .. P*D*T-1 is placed exactly once. Prints the count of place directives with the last one's
devices field, the count of replicate directives, and the total; exits 1 on a mismatch."""
import json
import sys


def expand(devices):
    if isinstance(devices, list):
        return devices
    start, count = devices["start"], devices["count"]
    run = devices.get("run", 1)
    step = devices.get("step", run)
    return [start + i * step + j for i in range(count) for j in range(run)]


def main():
    path, P, D, T = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    directives = json.load(open(path))
    places = [d for d in directives if d["op"] == "place"]
    replicates = [d for d in directives if d["op"] == "replicate"]
    seen = bytearray(P * D * T)
    for p, d in enumerate(places):
        ids = expand(d["devices"])
        want = [(r * P + p) * T + t for r in range(D) for t in range(T)]
        if ids != want:
            sys.exit(f"place {p}: {len(ids)} ids, not pipeline device {p}'s {len(want)}")
        for i in ids:
            seen[i] += 1
    for p, d in enumerate(replicates):
        if expand(d["devices"]) != expand(places[p]["devices"]):
            sys.exit(f"replicate {p} does not list its place's devices")
    if len(places) != P or any(c != 1 for c in seen):
        sys.exit("not every device placed exactly once")
    print(f"place {len(places)}: {json.dumps(places[-1]['devices'])}")
    print(f"replicate {len(replicates)}")
    print(f"{len(seen)} devices, each once, as (r*P + p)*T + t")


if __name__ == "__main__":
    main()
