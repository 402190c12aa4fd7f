"""Checks piper-tune's predictions (--dump DIR/candidates.jsonl) against a run or a limit.

  check_tune.py memory CANDIDATES.jsonl INDEX METRICS.jsonl
      the run's metrics summary (the runtime's own accounting) must report, on the rank with the
      largest params + optim + arena, exactly the params, optim and arena bytes piper-tune
      predicted for candidate INDEX; and no rank more than the predicted peak.
  check_tune.py fits CANDIDATES.jsonl LIMIT NAME
      every kept candidate's peak is <= LIMIT bytes and none is named NAME.
  check_tune.py peak CANDIDATES.jsonl NAME
      prints candidate NAME's peak bytes minus one (a --memory it does not fit in).
Exits 1 with a message on a mismatch."""
import json
import sys


def load(path):
    return [json.loads(line) for line in open(path) if line.strip()]


def main():
    mode, cands = sys.argv[1], load(sys.argv[2])
    if mode == "memory":
        want = cands[int(sys.argv[3])]
        ranks = [r for r in load(sys.argv[4]) if r["kind"] == "summary"][0]["ranks"]
        top = max(ranks, key=lambda r: r["params"] + r["optim"] + r["arena"])
        got = {k: top[k] for k in ("params", "optim", "arena")}
        exp = {k: want[k] for k in ("params", "optim", "arena")}
        if got != exp or top["params"] + top["optim"] + top["arena"] != want["peak_bytes"]:
            sys.exit("memory mismatch for %s: predicted %s (peak %d), measured %s" %
                     (want["name"], exp, want["peak_bytes"], got))
        print("memory ok:", want["name"], exp)
    elif mode == "fits":
        limit, name = int(sys.argv[3]), sys.argv[4]
        for c in cands:
            if c["peak_bytes"] > limit:
                sys.exit("%s kept with peak %d > %d" % (c["name"], c["peak_bytes"], limit))
            if c["name"] == name:
                sys.exit("%s kept although it needs more than %d" % (name, limit))
        print("fits ok: %d kept, all <= %d, no %s" % (len(cands), limit, name))
    elif mode == "peak":
        print([c for c in cands if c["name"] == sys.argv[3]][0]["peak_bytes"] - 1)
    else:
        sys.exit("unknown mode " + mode)


if __name__ == "__main__":
    main()
