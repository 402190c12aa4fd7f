"""Checks the files a multi-rank run of prt-comm-test wrote (comm.test).

  runs.py compare REF CAND...  REF.jsonl/.st/.g against each CAND.jsonl/.st/.g: the losses
                             per step (metrics), the first step's gradients (--dump-grads) and
                             the final checkpoint (--save-checkpoint: parameters, optimizer
                             state, the metadata's step) of runs against a reference
  runs.py continues REF CAND   CAND (a resumed run) continues REF (one uninterrupted run)
                             exactly: CAND.jsonl's steps are REF.jsonl's last ones with the
                             same losses, and CAND.st is REF.st byte for byte
  runs.py contents FILE      prints FILE's metadata step and tensor names, one per line
  runs.py trace FILE N       FILE is one Chrome trace of N ranks: a process per rank (pid k,
                             "rank k") with complete events on its declared lanes
  runs.py drop IN OUT NAME   copies safetensors IN to OUT without tensor NAME

Prints "@<what>" (compare: "@<CAND's file name> <what>") then "ok" or "FAIL: <detail>";
exits 1 on any failure.

Tolerances: a split run sums the same fp32 terms in another order (all-reduce, slices,
microbatches), so values differ by float rounding only: relative 1e-5 on losses, and on
gradients and parameters 1e-5 of the tensor's largest magnitude plus 1e-7 absolute (AdamW
divides by sqrt(v) + 1e-8, which turns a rounding difference of a ~0 gradient into at most a
step of lr = 1e-2; the runs stay far from that, and a wrong shard or slice is off by O(1)).
Optimizer state ("optim.*") gets the relative bound alone: its second moments are ~1e-8, so
an absolute 1e-7 would pass anything, and a moment's rounding differences scale with it.
"""
import json
import struct
import sys
from array import array


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        assert e["dtype"] == "F32", (path, name, e["dtype"])
        b, end = e["data_offsets"]
        a = array("f")
        a.frombytes(data[b:end])
        out[name] = (tuple(e["shape"]), a)
    return out


def read_losses(path):
    losses, ranks = {}, None
    with open(path) as f:
        for line in f:
            m = json.loads(line)
            if m["kind"] == "summary":
                ranks = m["ranks"]
            elif m["kind"] in ("phases", "fault", "stop"):  # the run's events, not its losses
                continue
            else:
                assert m["kind"] == "train" and list(m)[0] == "kind", m
                assert set(m["mem"]) == {"params", "optim", "arena"}, m
                losses[m["step"]] = m["loss"]
    return losses, ranks


class Checker:
    def __init__(self):
        self.failed = 0

    def section(self, name, problems):
        print("@" + name)
        if problems:
            print("FAIL: " + problems[0])
            self.failed += 1
        else:
            print("ok")


def compare_tensors(ref, cand):
    problems = []
    if sorted(ref) != sorted(cand):
        return ["tensors %s vs %s" % (sorted(ref), sorted(cand))]
    for name in sorted(ref):
        (rs, r), (cs, c) = ref[name], cand[name]
        if rs != cs:
            problems.append("%s: shape %s vs %s" % (name, cs, rs))
            continue
        scale = max(abs(x) for x in r) or 1.0
        atol = 0.0 if name.startswith("optim.") else 1e-7
        for i, (x, y) in enumerate(zip(r, c)):
            if abs(x - y) > 1e-5 * scale + atol:
                problems.append("%s[%d]: %.9g vs reference %.9g (largest |ref| %.3g)"
                                % (name, i, y, x, scale))
                break
    return problems


def compare(ref, cand, ck):
    tag = cand.rsplit("/", 1)[-1] + " "
    rl, _ = read_losses(ref + ".jsonl")
    cl, ranks = read_losses(cand + ".jsonl")
    p = [] if sorted(rl) == sorted(cl) else ["steps %s vs %s" % (sorted(cl), sorted(rl))]
    for s in sorted(rl):
        if s in cl and abs(cl[s] - rl[s]) > 1e-5 * abs(rl[s]):
            p.append("step %d loss %.9g vs reference %.9g" % (s, cl[s], rl[s]))
    if not ranks or [r["rank"] for r in ranks] != list(range(len(ranks))):
        p.append("no {\"ranks\": [...]} line with every rank")
    ck.section(tag + "losses", p)
    ck.section(tag + "grads", compare_tensors(read_safetensors(ref + ".g"),
                                              read_safetensors(cand + ".g")))
    p = compare_tensors(read_safetensors(ref + ".st"), read_safetensors(cand + ".st"))
    rs, cs = (read_header(x + ".st").get("__metadata__", {}).get("step") for x in (ref, cand))
    if rs != cs:
        p.append("metadata step %r vs %r" % (cs, rs))
    ck.section(tag + "params", p)


def continues(ref, cand, ck):
    tag = cand.rsplit("/", 1)[-1] + " "
    rl, _ = read_losses(ref + ".jsonl")
    cl, _ = read_losses(cand + ".jsonl")
    p = []
    tail = sorted(rl)[len(rl) - len(cl):]
    if not cl or sorted(cl) != tail:
        p.append("steps %s are not the last ones of %s" % (sorted(cl), sorted(rl)))
    for s in sorted(cl):
        if s in rl and cl[s] != rl[s]:
            p.append("step %d loss %.9g vs uninterrupted %.9g" % (s, cl[s], rl[s]))
    ck.section(tag + "continues losses", p)
    with open(ref + ".st", "rb") as f, open(cand + ".st", "rb") as g:
        same = f.read() == g.read()
    ck.section(tag + "continues checkpoint",
               [] if same else ["%s.st differs from %s.st" % (cand, ref)])


def contents(path):
    header = read_header(path)
    print("step %s" % header.get("__metadata__", {}).get("step"))
    for name in sorted(n for n in header if n != "__metadata__"):
        print(name)


def trace(path, n):
    ck = Checker()
    try:
        t = json.load(open(path))
    except (OSError, ValueError) as e:
        ck.section("trace", ["%s: %s" % (path, e)])
        return ck.failed
    od = t["otherData"]
    ck.section("trace", [] if od["world"] == n and not od["truncated"] and
               [r["rank"] for r in od["ranks"]] == list(range(n)) else ["otherData %s" % od])
    for k in range(n):
        p = []
        ev = [e for e in t["traceEvents"] if e["pid"] == k]
        lanes = {e["tid"]: e["args"]["name"] for e in ev
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        spans = [e for e in ev if e["ph"] == "X"]
        names = [e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
        if names != ["rank %d" % k]:
            p.append("process names of pid %d: %s" % (k, names))
        for e in spans:
            if e["pid"] != k or e["tid"] not in lanes or e["dur"] < 0 or e["ts"] < 0:
                p.append("event %s: pid, lane or time wrong (lanes %s)" % (e, lanes))
                break
        names = {(lanes.get(e["tid"]), e["name"].split(" ")[0].split("-")[0].split("<")[0])
                 for e in spans}
        for want in [("compute", "step"), ("p2p", "send"), ("p2p", "recv")]:
            if want not in names:
                p.append("no %s span on lane %s; has %s" % (want[1], want[0], sorted(names)))
        if n > 2 and ("dp-allreduce", "all_reduce") not in names:
            p.append("no all_reduce span on lane dp-allreduce")
        sends = [e["name"] for e in spans if e["name"].startswith("send->")]
        if sends and not sends[0].endswith(" B)"):
            p.append("send span name %r lacks its size" % sends[0])
        ck.section("trace rank %d" % k, p)
    return ck.failed


def drop(src, dst, name):
    tensors = read_safetensors(src)
    del tensors[name]
    header, off = {}, 0
    for n, (shape, a) in tensors.items():
        header[n] = {"dtype": "F32", "shape": list(shape),
                     "data_offsets": [off, off + 4 * len(a)]}
        off += 4 * len(a)
    h = json.dumps(header).encode()
    with open(dst, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, a in tensors.values():
            f.write(a.tobytes())


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "drop":
        sys.exit(drop(*sys.argv[2:]))
    if len(sys.argv) >= 4 and sys.argv[1] == "compare":
        ck = Checker()
        for cand in sys.argv[3:]:
            compare(sys.argv[2], cand, ck)
        sys.exit(1 if ck.failed else 0)
    if len(sys.argv) == 4 and sys.argv[1] == "continues":
        ck = Checker()
        continues(sys.argv[2], sys.argv[3], ck)
        sys.exit(1 if ck.failed else 0)
    if len(sys.argv) == 3 and sys.argv[1] == "contents":
        sys.exit(contents(sys.argv[2]))
    if len(sys.argv) == 4 and sys.argv[1] == "trace":
        sys.exit(1 if trace(sys.argv[2], int(sys.argv[3])) else 0)
    sys.exit(__doc__)
