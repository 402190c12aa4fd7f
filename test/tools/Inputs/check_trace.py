"""Checks a predicted trace (piper-sched --simulate --model ... --trace-out) against a measured
one of the same strategy (the training binary's --trace, one step), the independent oracle for
what the plan runs: the runtime records what it executed, the simulator what it predicts.

  check_trace.py PREDICTED.json MEASURED.json
Checks, each failing with a message (exit 1):
  * both files are JSON in the runtime's format (traceEvents, otherData);
  * the same devices (process_name "rank d" for d in 0..world-1) and, per device, the same
    stream tracks (thread_name by tid);
  * per device and track, the same multiset of span names: every compute span (node labels)
    and every transfer ("send->1 (N B)", "all_reduce g0 (N B)", ...);
  * per device, the compute spans (tid 0) in the same order as measured, not overlapping (but
    the runtime's "step" span around them all), and
    every transfer's wait inside its span's life (issue <= wait end, wait end >= its end);
  * every receive ends no earlier than its matching send starts (matched in order per
    (sender, receiver, bytes)), and the step ends at otherData.step_ms;
  * the all-gathers the prediction waits for where it issues them (wait_begin_us == ts:
    ZeRO-1/2, into a whole parameter) the runtime waits for within WAITED_AT_ISSUE_US of
    their issue too, in the median (a loaded machine deschedules a rank between two calls now
    and then): the n-th such span of a name on a device, in time order, against the n-th
    measured one of that name in the first traced step.
Prints one summary line."""
import collections
import json
import sys

WAITED_AT_ISSUE_US = 100.0  # nothing but the call's own overhead lies between issue and wait
EPS = 2e-3  # us: two rounded figures of the trace's 3 decimals


def load(path):
    with open(path) as f:
        t = json.load(f)
    if "traceEvents" not in t or "otherData" not in t:
        sys.exit("%s: not a trace in the runtime's format (traceEvents, otherData)" % path)
    return t


def layout(t):
    procs, threads, spans = {}, {}, collections.defaultdict(list)
    for e in t["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        elif e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        elif e["ph"] == "X":
            spans[e["pid"]].append(e)
    return procs, threads, spans


def main():
    pred, meas = load(sys.argv[1]), load(sys.argv[2])
    pp, pt, ps = layout(pred)
    mp, mt, ms = layout(meas)
    world = meas["otherData"]["world"]
    if pred["otherData"]["world"] != world or sorted(pp) != list(range(world)):
        sys.exit("devices: predicted %s (world %s), measured world %d" %
                 (sorted(pp), pred["otherData"]["world"], world))
    for d in range(world):
        if pp[d] != mp.get(d):
            sys.exit("device %d named %r, measured %r" % (d, pp[d], mp.get(d)))
        used = {e["tid"] for e in ms[d]} | {0}
        pred_tracks = {tid: n for (pid, tid), n in pt.items() if pid == d and tid in used}
        meas_tracks = {tid: n for (pid, tid), n in mt.items() if pid == d and tid in used}
        if pred_tracks != meas_tracks:
            sys.exit("device %d: tracks %s predicted, %s measured" % (d, pred_tracks, meas_tracks))
        key = lambda e: (e["tid"], e["name"])
        pc, mc = collections.Counter(map(key, ps[d])), collections.Counter(map(key, ms[d]))
        if pc != mc:
            sys.exit("device %d: spans differ; only predicted: %s; only measured: %s" %
                     (d, sorted((pc - mc).elements())[:6], sorted((mc - pc).elements())[:6]))
        order = lambda spans: [e["name"] for e in sorted(spans, key=lambda e: e["ts"])
                               if e["tid"] == 0 and e["cat"] == "compute"]
        if order(ps[d]) != order(ms[d]):
            sys.exit("device %d: compute spans in another order than measured" % d)
        comp = sorted((e for e in ps[d] if e["cat"] == "compute" and e["name"] != "step"),
                      key=lambda e: e["ts"])
        for a, b in zip(comp, comp[1:]):
            if a["ts"] + a["dur"] > b["ts"] + EPS:
                sys.exit("device %d: %r overlaps %r" % (d, a["name"], b["name"]))
        for e in ps[d]:
            if e["cat"] == "comm":
                w0, w1 = e["args"]["wait_begin_us"], e["args"]["wait_end_us"]
                if w1 + EPS < e["ts"] or w1 + EPS < e["ts"] + e["dur"] or w0 > w1 + EPS:
                    sys.exit("device %d: %s waited %.3f..%.3f outside its span %.3f+%.3f" %
                             (d, e["name"], w0, w1, e["ts"], e["dur"]))
    sends, recvs = collections.defaultdict(list), collections.defaultdict(list)
    for d in range(world):
        for e in sorted(ps[d], key=lambda e: e["ts"]):
            if e["name"].startswith("send->"):
                peer = int(e["name"][6:].split()[0])
                sends[(d, peer, e["args"]["bytes"])].append(e)
            elif e["name"].startswith("recv<-"):
                peer = int(e["name"][6:].split()[0])
                recvs[(peer, d, e["args"]["bytes"])].append(e)
    pairs = 0
    for k, rs in recvs.items():
        if len(rs) != len(sends[k]):
            sys.exit("%d receives but %d sends for %s" % (len(rs), len(sends[k]), k))
        for s, r in zip(sends[k], rs):
            pairs += 1
            if r["ts"] + r["dur"] + EPS < s["ts"]:
                sys.exit("a receive %s ends before its send starts" % (k,))
    blocking, lates = 0, []
    for d in range(world):
        first = min((e for e in ms[d] if e["name"] == "step"), key=lambda e: e["ts"])
        step0 = [e for e in ms[d] if first["ts"] <= e["ts"] < first["ts"] + first["dur"]]
        for name in {e["name"] for e in ps[d] if e["name"].startswith("all_gather")}:
            pred_n = sorted((e for e in ps[d] if e["name"] == name), key=lambda e: e["ts"])
            meas_n = sorted((e for e in step0 if e["name"] == name), key=lambda e: e["ts"])
            for p, m in zip(pred_n, meas_n):
                if abs(p["args"]["wait_begin_us"] - p["ts"]) > EPS:
                    continue
                blocking += 1
                lates.append((m["args"]["wait_begin_us"] - m["ts"], d, name))
    lates.sort()
    if lates and lates[len(lates) // 2][0] > WAITED_AT_ISSUE_US:
        sys.exit("all-gathers predicted waited where they are issued: the runtime waited a "
                 "median %.0f us later (device %d: %s)" % lates[len(lates) // 2])
    end = max(e["ts"] + e["dur"] for d in ps for e in ps[d])
    step_us = pred["otherData"]["step_ms"] * 1e3
    if end > step_us + EPS:
        sys.exit("a span ends at %.3f us, after the step (%.3f us)" % (end, step_us))
    n = sum(len(v) for v in ps.values())
    print("trace ok: %d devices, %d spans (%d send/recv pairs, %d all-gathers waited where "
          "issued) match "
          "the measured trace's names, tracks and compute order; step %.3f ms" %
          (world, n, pairs, blocking, step_us / 1e3))


if __name__ == "__main__":
    main()
