#!/usr/bin/python3
"""Checks a merged --trace file (trace-merged.test).

  check_trace.py FILE N [--shift-us X]

FILE must be one Chrome trace of an N-rank run. Prints "@<check>" then "ok" or "FAIL: ...",
and exits 1 on any failure:
  json        FILE parses; otherData says world N, not truncated, a clock_rtt_us per rank
  ranks       pids are exactly 0..N-1, pid k is named "rank k", and each has "step" spans
  aligned     the clocks agree: the i-th all_reduce of a group on each member rank overlap in
              time (none can complete before every member issued it), up to the sync's stated
              error (clock_rtt_us / 2 per rank). Needs a data-parallel plan; "skipped" if the
              trace has no collective
  ends        every transfer span ends no later than its own prt_wait returned and not before
              it began (ts <= end <= wait_end_us)
  early       (printed as a count) transfer spans whose end came before their own prt_wait
              began: their completion was seen by another wait's poll
  causal      the clocks agree with causality: the k-th receive on rank b from rank a of n
              bytes ("recv<-a (n B)") ends no earlier than the k-th send of n bytes from a to
              b ("send->b (n B)") began, up to the sync's stated error; "skipped" without
              point-to-point transfers. On hosts whose clocks count from different origins
              (test/e2e/hosts) this is the check of the alignment across them

--shift-us X adds X microseconds to every event of the last rank before checking: the
negative control that shows "aligned" fails on clocks that are off.
"""
import json
import sys


def main(argv):
    path, n = argv[1], int(argv[2])
    shift = float(argv[argv.index("--shift-us") + 1]) if "--shift-us" in argv else 0.0
    fails = 0

    def section(name, problems, note=""):
        nonlocal fails
        print("@" + name)
        if problems:
            fails += 1
            print("FAIL: " + "; ".join(problems[:3]))
        else:
            print("ok" + note)

    try:
        t = json.load(open(path))
    except (OSError, ValueError) as e:
        section("json", ["%s: %s" % (path, e)])
        return 1
    od = t["otherData"]
    p = []
    if od.get("world") != n or od.get("truncated") is not False:
        p.append("otherData %s" % od)
    rtt = {r["rank"]: r["clock_rtt_us"] for r in od.get("ranks", [])}
    if sorted(rtt) != list(range(n)):
        p.append("otherData ranks %s" % od.get("ranks"))
    section("json", p)

    ev = t["traceEvents"]
    for e in ev:
        if shift and e.get("pid") == n - 1 and "ts" in e:
            e["ts"] += shift
            if "args" in e and "wait_begin_us" in e["args"]:
                e["args"]["wait_begin_us"] += shift
                e["args"]["wait_end_us"] += shift
    p = []
    pids = sorted({e["pid"] for e in ev})
    if pids != list(range(n)):
        p.append("pids %s, want 0..%d" % (pids, n - 1))
    for k in range(n):
        names = [e["args"]["name"] for e in ev
                 if e["pid"] == k and e["ph"] == "M" and e["name"] == "process_name"]
        if names != ["rank %d" % k]:
            p.append("pid %d is named %s" % (k, names))
        if not any(e["pid"] == k and e["ph"] == "X" and e["name"] == "step" for e in ev):
            p.append("pid %d has no step span" % k)
    section("ranks", p)

    spans = [e for e in ev if e["ph"] == "X"]
    comm = [e for e in spans if e.get("cat") == "comm"]
    # the i-th collective of group g on each rank: "all_reduce g0 (512 B)" etc.
    coll = {}
    for e in sorted(comm, key=lambda e: e["ts"]):
        op = e["name"].split(" (")[0]
        if " g" in op:
            coll.setdefault((op.split(" g")[1], e["pid"]), []).append(e)
    p, pairs = [], 0
    groups = sorted({g for g, _ in coll})
    for g in groups:
        members = sorted(k for gg, k in coll if gg == g)
        lists = [coll[(g, k)] for k in members]
        if len({len(x) for x in lists}) != 1:
            p.append("group %s: ranks issued %s collectives" % (g, [len(x) for x in lists]))
            continue
        for i in range(len(lists[0])):
            same = [x[i] for x in lists]
            if len({e["name"] for e in same}) != 1:
                p.append("group %s collective %d differs across ranks: %s" %
                         (g, i, [e["name"] for e in same]))
                break
            slack = sum(rtt[e["pid"]] for e in same) / 2 + 0.002  # printed to 1 ns
            latest_start = max(e["ts"] for e in same)
            earliest_end = min(e["ts"] + e["dur"] for e in same)
            pairs += 1
            if latest_start > earliest_end + slack:
                p.append("%s #%d: rank %d began at %.3f us after rank %d's ended at %.3f us "
                         "(slack %.3f us)" % (same[0]["name"], i,
                                              max(same, key=lambda e: e["ts"])["pid"], latest_start,
                                              min(same, key=lambda e: e["ts"] + e["dur"])["pid"],
                                              earliest_end, slack))
    section("aligned", p, "" if pairs else " (skipped: no collectives)")

    p, early = [], 0
    for e in comm:
        end, a = e["ts"] + e["dur"], e["args"]
        if not (e["ts"] <= end <= a["wait_end_us"] + 0.002 and a["wait_begin_us"] <= a["wait_end_us"]):
            p.append("%s on rank %d: ts %.3f end %.3f, own wait %.3f..%.3f" %
                     (e["name"], e["pid"], e["ts"], end, a["wait_begin_us"], a["wait_end_us"]))
        early += end < a["wait_begin_us"]
    section("ends", p)
    print("@early %s" % ("some" if early else "none"))

    # point to point: the k-th send a->b of n bytes is received by the k-th recv b<-a of n bytes
    sends, recvs = {}, {}
    for e in sorted(comm, key=lambda e: e["ts"]):
        head, _, size = e["name"].partition(" (")
        if head.startswith("send->"):
            sends.setdefault((e["pid"], int(head[6:]), size), []).append(e)
        elif head.startswith("recv<-"):
            recvs.setdefault((int(head[6:]), e["pid"], size), []).append(e)
    p, pairs = [], 0
    for key in sorted(set(sends) | set(recvs)):
        a, b, size = key
        s_list, r_list = sends.get(key, []), recvs.get(key, [])
        if len(s_list) != len(r_list):
            p.append("rank %d sent %d transfers of %s to rank %d, which received %d" %
                     (a, len(s_list), size.rstrip(")"), b, len(r_list)))
            continue
        for k, (snd, rcv) in enumerate(zip(s_list, r_list)):
            slack = (rtt[a] + rtt[b]) / 2 + 0.002
            pairs += 1
            if rcv["ts"] + rcv["dur"] + slack < snd["ts"]:
                p.append("recv<-%d (%s #%d on rank %d ended at %.3f us, before its send began on "
                         "rank %d at %.3f us (slack %.3f us)" % (a, size, k, b, rcv["ts"] + rcv["dur"],
                                                                 a, snd["ts"], slack))
    section("causal", p, " (%d pairs)" % pairs if pairs else " (skipped: no point-to-point)")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
