#!/usr/bin/python3
"""A plan's routing replay report against its bounds (--routing-replay, runtime/routing.c).

  check_routing.py PLAN_STDOUT --max-flips F --max-gap G

The plan ran with --routing-replay of the one-device run's recording: every token went where it
went on one device, and rank 0 printed each token whose own router chose otherwise (a flip),
with the logit gap between what it chose and what was recorded relative to the token's largest
|logit|, then a summary line. Two correct runs flip only tokens whose logits are within a
rounding step of a tie; a wrong plan (a router fed the wrong rows, an exchange lost) flips many
tokens by whole logits. Prints one line per check and `routing: N passed, M failed`; exits 1 on
any failure, and when the report is missing (a plan that did not replay proves nothing).
  flips  the summary's flips <= F (a fraction of the routings when F < 1, else a count)
  gap    every flip's relative gap <= G
"""
import argparse
import re
import sys

FLIP = re.compile(r"^piper: routing flip: .* \(([0-9.e+-]+) of its largest \|logit\|\)$")
SUMMARY = re.compile(r"^piper: routing replay: (\d+) flips in (\d+) token routings")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--max-flips", type=float, required=True)
    ap.add_argument("--max-gap", type=float, required=True)
    a = ap.parse_args()
    gaps, summary = [], None
    with open(a.report) as f:
        for line in f:
            line = line.rstrip("\n")
            m = FLIP.match(line)
            if m:
                gaps.append(float(m.group(1)))
            m = SUMMARY.match(line)
            if m:
                summary = (int(m.group(1)), int(m.group(2)))
    failed = 0
    if summary is None or summary[1] == 0:
        print(f"FAIL routing no replay summary with routed tokens in {a.report}: the plan did "
              "not replay the recording")
        print("routing: 0 passed, 1 failed")
        return 1
    flips, routings = summary
    limit = a.max_flips * routings if a.max_flips < 1 else a.max_flips
    ok = flips <= limit and flips == len(gaps)
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} routing flips {flips} of {routings} (bound {limit:g}; "
          f"{len(gaps)} flip lines)")
    worst = max(gaps, default=0.0)
    ok = worst <= a.max_gap
    failed += not ok
    print(f"{'PASS' if ok else 'FAIL'} routing gap {worst:.3g} of the token's largest |logit| "
          f"(bound {a.max_gap:g})")
    print(f"routing: {2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
