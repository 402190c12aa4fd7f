#!/usr/bin/python3
"""Fuzz target for piper's Python safetensors reader (python/piper/_safetensors.py `read`), the
twin of safetensors_fuzz.c for the C reader. Each input is a file made from a valid seed by
structured mutations (data_offsets, dtypes, shapes, names, metadata, tensor entries, the data
section) and then raw ones (truncation, the header length, JSON byte flips, a header that is
not JSON), plus, with --corpus, the C fuzzer's checked-in inputs. Every file is read, and the
result is judged against an independent statement of the rules (`consistent` below, written
apart from the reader):

  accepted inconsistent   the reader returned tensors for a file the rules refuse
  wrong values            it accepted a consistent file but a name, shape, value or the
                          metadata is not what the file holds (values decoded here by numpy)
  refused consistent      it refused a file the rules accept
  unnamed refusal         its CheckpointError does not name the file
  other exceptions        anything but CheckpointError (the documented one)
  hangs                   a read that runs past --timeout seconds (default 20: a hang, not a
                          slow read; inputs are a few KB)

Any of these fails the run (exit 1); the inputs that did are written to --crashes. The run is
deterministic for a --seed and --count; `make fuzz` runs it for --seconds with a fresh seed
(test/fuzz/run.sh), printing libFuzzer's final stats lines for run.sh's table.

  safetensors_py_fuzz.py [--count N | --seconds S] [--seed K] [--corpus DIR ...]
                         [--crashes DIR] [--timeout S] [--reader FILE:FUNCTION]

--reader runs another reader (FILE defines FUNCTION(path) -> (tensors, metadata) and
CheckpointError): the suite's negative controls (Inputs/bad_readers.py) use it."""
import argparse
import importlib.util
import json
import os
import random
import signal
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# ----------------------------------------------------------------------------- the rules

ITEMSIZE = {"F32": 4, "BF16": 2, "F16": 2}
HEADER_LIMIT = 100 * 1024 * 1024
DIMS_LIMIT = 8


def _reject_constant(name):
    raise ValueError(name)


def _objects(value):
    """Every object (a list of pairs, as parsed below) inside value, iteratively: a header
    nested a thousand deep must not overflow this stack."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Obj):
            yield v
            stack.extend(x for _, x in v.pairs)
        elif isinstance(v, list):
            stack.extend(v)


class Obj:
    def __init__(self, pairs):
        self.pairs = pairs


def _uint(x, bound):
    return type(x) is int and 0 <= x < bound


def consistent(blob):
    """None when the safetensors file image `blob` follows the rules, else what breaks them.
    On success also returns the header: ({name: (dtype, shape, begin, end)}, metadata,
    data_start)."""
    if len(blob) < 8:
        return "shorter than the length field", None
    n = int.from_bytes(blob[:8], "little")
    if n > HEADER_LIMIT or n > len(blob) - 8:
        return "header length past the file or the limit", None
    try:
        text = bytes(blob[8:8 + n]).decode("utf-8")
        top = json.loads(text, object_pairs_hook=Obj, parse_constant=_reject_constant)
    except (ValueError, RecursionError):
        return "header not UTF-8 JSON", None
    for o in _objects(top):
        keys = [k for k, _ in o.pairs]
        if len(set(keys)) != len(keys):
            return "a key twice", None
    if not isinstance(top, Obj):
        return "header not an object", None
    tensors, metadata = {}, {}
    for key, value in top.pairs:
        if key == "__metadata__":
            if not isinstance(value, Obj) or any(type(v) is not str for _, v in value.pairs):
                return "metadata not an object of strings", None
            metadata = dict(value.pairs)
            continue
        if not isinstance(value, Obj):
            return "entry not an object", None
        fields = dict(value.pairs)
        dtype, shape, offsets = (fields.get(f) for f in ("dtype", "shape", "data_offsets"))
        if type(dtype) is not str or dtype not in ITEMSIZE:
            return "dtype", None
        if type(shape) is not list or len(shape) > DIMS_LIMIT or \
                any(not _uint(d, 2 ** 63) for d in shape):
            return "shape", None
        if type(offsets) is not list or len(offsets) != 2 or \
                any(not _uint(o, 2 ** 64) for o in offsets):
            return "data_offsets", None
        count = int(np.prod(shape, dtype=object)) if shape else 1
        if offsets[1] - offsets[0] != count * ITEMSIZE[dtype]:
            return "offsets disagree with shape and dtype", None
        tensors[key] = (dtype, shape, offsets[0], offsets[1])
    data = len(blob) - 8 - n
    # the non-empty tensors cover [0, data) end to end; an empty one sits at a boundary
    full = sorted((b, e) for _, _, b, e in tensors.values() if e > b)
    edge = 0
    for b, e in full:
        if b != edge:
            return "gap or overlap in the data section", None
        edge = e
    if edge != data:
        return "tensors do not end where the data section does", None
    for _, _, b, e in tensors.values():
        if e == b and (b > data or any(lo < b < hi for lo, hi in full)):
            return "empty tensor inside another or past the data", None
    return None, (tensors, metadata, 8 + n)


def decode(blob, start, dtype, shape, begin, end):
    """The tensor's values as float32, by numpy from the bytes."""
    raw = np.frombuffer(blob, dtype=np.uint8, count=end - begin, offset=start + begin)
    if dtype == "F32":
        v = raw.view("<f4")
    elif dtype == "F16":
        v = raw.view("<f2").astype(np.float32)
    else:  # BF16: the top half of an fp32
        v = (raw.view("<u2").astype(np.uint32) << 16).view(np.float32)
    return v.reshape(shape)


# ----------------------------------------------------------------------------- inputs

def serialize(pairs, data, rng):
    """A file image: the header from (key, value) pairs (duplicates kept), spaced and padded
    as some writer would, then data."""
    sep = rng.choice([(",", ":"), (", ", ": ")])
    text = "{" + sep[0].join(json.dumps(k) + sep[1] + json.dumps(v) for k, v in pairs) + "}"
    head = text.encode()
    if rng.random() < 0.7:
        head += b" " * (-len(head) % 8)
    return len(head).to_bytes(8, "little") + head + data


def seeds(rng):
    """Valid files as [(pairs, data)]: F32 tensors of several ranks, a scalar, mixed dtypes at
    odd offsets, empty tensors at boundaries, metadata only, nothing at all."""
    def tensor(dtype, shape):
        n = int(np.prod(shape)) * ITEMSIZE[dtype]
        return dtype, shape, bytes(rng.randrange(256) for _ in range(n))

    def build(items, metadata=None):
        pairs, data = [], b""
        if metadata is not None:
            pairs.append(("__metadata__", metadata))
        for name, (dtype, shape, raw) in items:
            pairs.append((name, {"dtype": dtype, "shape": shape,
                                 "data_offsets": [len(data), len(data) + len(raw)]}))
            data += raw
        return pairs, data

    return [
        build([("wte.weight", tensor("F32", [4, 3])), ("ln.bias", tensor("F32", [3])),
               ("scale", tensor("F32", []))], {"format": "pt", "step": "7"}),
        build([("h", tensor("F16", [1])), ("f", tensor("F32", [2])),
               ("b", tensor("BF16", [3, 1])), ("g", tensor("F16", [2, 2]))]),
        build([("empty.first", tensor("F32", [0])), ("x", tensor("BF16", [2, 2])),
               ("empty.mid", tensor("F16", [3, 0])), ("y", tensor("F32", [1, 1, 2])),
               ("empty.last", tensor("F32", [0, 4]))], {}),
        build([], {"piper.tied": "{}", "note": "metadata only"}),
        build([]),
    ]


def _entries(pairs):
    return [i for i, (k, v) in enumerate(pairs) if k != "__metadata__" and isinstance(v, dict)]


def _pick(rng, pairs):
    idx = _entries(pairs)
    return rng.choice(idx) if idx else None


def _set_field(pairs, i, field, value):
    v = dict(pairs[i][1])
    v[field] = value
    pairs[i] = (pairs[i][0], v)


def m_offsets(rng, pairs, data):
    i = _pick(rng, pairs)
    if i is None:
        return data
    offsets = pairs[i][1].get("data_offsets")
    b, e = offsets[:2] if isinstance(offsets, list) and len(offsets) >= 2 and \
        all(type(o) is int for o in offsets[:2]) else (0, 0)
    others = [pairs[j][1].get("data_offsets") for j in _entries(pairs) if j != i]
    size = len(data)
    choice = rng.choice([
        [-rng.randint(1, 16), e], [b, -rng.randint(1, 16)], [-8, -4], [e, b],
        [b + 1, e + 1], [b - 1, e - 1], [b, e + 1], [b, e - 1],
        [size + 1, size + 1 + (e - b)], [size - (e - b) + 4, size + 4], [b, size + 64],
        [2 ** 64, 2 ** 64 + 4], [2 ** 64 - 4, 2 ** 64], [2 ** 70, 2 ** 70],
        [b * 1.0, e], [str(b), e], [None, e], [True, e], [b], [b, e, e], "0,4", {},
        rng.choice(others) if others else [0, 0], [rng.randint(0, size + 2)] * 2,
    ])
    _set_field(pairs, i, "data_offsets", choice)
    return data


def m_dtype(rng, pairs, data):
    i = _pick(rng, pairs)
    if i is not None:
        _set_field(pairs, i, "dtype", rng.choice(
            ["F32", "BF16", "F16", "F64", "I8", "U8", "I64", "BOOL", "f32", "F32 ", "", 4,
             None, ["F32"], {"F32": 1}]))
    return data


def m_shape(rng, pairs, data):
    i = _pick(rng, pairs)
    if i is None:
        return data
    shape = pairs[i][1].get("shape")
    shape = list(shape) if isinstance(shape, list) and all(type(d) is int for d in shape) \
        else []
    k = rng.randrange(len(shape)) if shape else 0
    variants = [
        shape + [1], shape + [0], shape[:-1], [-1] + shape, [1] * 9, [1] * 8, [],
        [2 ** 63] + shape, [2 ** 63 - 1, 0], [0, 2 ** 62, 2 ** 62], [True], [1.0], ["2"],
        [[2]], None, 3, "[2]",
    ]
    if shape:
        variants += [shape[:k] + [shape[k] * 2] + shape[k + 1:],
                     shape[:k] + [shape[k] + 1] + shape[k + 1:], list(reversed(shape))]
    _set_field(pairs, i, "shape", rng.choice(variants))
    return data


def m_name(rng, pairs, data):
    i = _pick(rng, pairs)
    if i is None:
        pairs.append(("__metadata__", {}))
        return data
    kind = rng.randrange(5)
    if kind == 0:    # the same name twice (JSON allows the text; the rules do not)
        pairs.insert(rng.randrange(len(pairs) + 1), pairs[i])
    elif kind == 1:  # another entry's name
        j = _pick(rng, pairs)
        pairs[i] = (pairs[j][0], pairs[i][1])
    else:
        pairs[i] = (rng.choice(["__metadata__", "", "x" * rng.choice([300, 100000]),
                                "\u00e9\u0000\U0001f600", "optim.m.x", "piper.const.1"]),
                    pairs[i][1])
    return data


def m_metadata(rng, pairs, data):
    pairs[:] = [p for p in pairs if p[0] != "__metadata__"]
    value = rng.choice([{}, {"a": "b"}, {"a": 1}, {"a": None}, {"a": {"b": "c"}}, [], "x",
                        None, {"step": "1", "format": "pt"}])
    pairs.insert(rng.randrange(len(pairs) + 1), ("__metadata__", value))
    return data


def m_entry(rng, pairs, data):
    i = _pick(rng, pairs)
    if i is None:
        return data
    kind = rng.randrange(3)
    if kind == 0:
        v = dict(pairs[i][1])
        v.pop(rng.choice(["dtype", "shape", "data_offsets"]), None)
        pairs[i] = (pairs[i][0], v)
    elif kind == 1:
        pairs[i] = (pairs[i][0], rng.choice([1, [], "F32", None, True]))
    else:  # a field the rules ignore
        _set_field(pairs, i, rng.choice(["extra", "offsets", "Dtype"]), {"k": [1, 2]})
    return data


def m_data(rng, pairs, data):
    k = rng.randint(1, 16)
    kind = rng.randrange(4)
    if kind == 0:
        return data + bytes(k)
    if kind == 1:
        return data[:max(0, len(data) - k)]
    if kind == 2:
        return bytes(k) + data
    return bytes(rng.randrange(256) for _ in range(len(data)))  # new values, same layout


STRUCTURED = [m_offsets, m_dtype, m_shape, m_name, m_metadata, m_entry, m_data]


def r_truncate(rng, blob):
    return blob[:rng.randrange(len(blob))] if blob else blob


def r_length(rng, blob):
    n = int.from_bytes(blob[:8], "little") if len(blob) >= 8 else 0
    value = rng.choice([0, 1, n - 1, n + 1, n + 8, len(blob) - 8, len(blob) - 7, 2 ** 40,
                        2 ** 63, 2 ** 64 - 1, HEADER_LIMIT + 1, rng.randrange(2 ** 64)])
    return (value % 2 ** 64).to_bytes(8, "little") + blob[8:]


def r_flip(rng, blob):
    n = int.from_bytes(blob[:8], "little") if len(blob) >= 8 else 0
    b = bytearray(blob)
    end = min(len(b), 8 + n)
    for _ in range(rng.randint(1, 4)):
        if end > 8:
            at = rng.randrange(8, end)
            b[at] ^= 1 << rng.randrange(8)
    return bytes(b)


def r_splice(rng, blob):
    """A byte inserted into or dropped from the header, its length field kept or fixed."""
    n = int.from_bytes(blob[:8], "little") if len(blob) >= 8 else 0
    if len(blob) < 9 or n == 0 or 8 + n > len(blob):
        return blob
    at = rng.randrange(8, 8 + n)
    if rng.random() < 0.5:
        head = blob[8:at] + bytes([rng.choice(b'{}[],:"0-e. \\\x00\xff')]) + blob[at:8 + n]
    else:
        head = blob[8:at] + blob[at + 1:8 + n]
    length = len(head) if rng.random() < 0.5 else n
    return length.to_bytes(8, "little") + head + blob[8 + n:]


def r_header(rng, blob):
    """The header replaced by text that is not a safetensors header, its length field fixed."""
    n = int.from_bytes(blob[:8], "little") if len(blob) >= 8 else 0
    data = blob[8 + n:] if 8 + n <= len(blob) else b""
    head = rng.choice([
        b"[" * 5000 + b"]" * 5000, b'{"a":' * 3000 + b"1" + b"}" * 3000,
        b'{"x": {"dtype": "F32", "shape": [1], "data_offsets": [0, NaN]}}',
        b'{"x": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}}',
        b'{"x": {"dtype": "F32", "shape": [' + b"9" * 5000 + b'], "data_offsets": [0, 4]}}',
        b"\xff\xfe{}", '{"x": 1}'.encode("utf-16"), b"null", b"[]", b'"x"', b"{} x", b"",
        b"{}\x00", b"{" + b" " * 1000 + b"}", b'{"\\ud800": {}}',
    ])
    return len(head).to_bytes(8, "little") + head + data


RAW = [r_truncate, r_length, r_flip, r_splice, r_header]


def generate(rng, bases):
    """One input: a seed, 0-3 structured mutations, serialized, then 0-2 raw ones (at least
    one mutation in all; raw ones less often, as most leave no header to check)."""
    pairs, data = rng.choice(bases)
    pairs = [(k, dict(v) if isinstance(v, dict) else v) for k, v in pairs]
    n_struct, n_raw = rng.randint(0, 3), rng.choice([0, 0, 0, 1, 1, 2])
    if n_struct + n_raw == 0:
        n_struct = 1
    for _ in range(n_struct):
        data = rng.choice(STRUCTURED)(rng, pairs, data)
    blob = serialize(pairs, data, rng)
    for _ in range(n_raw):
        blob = rng.choice(RAW)(rng, blob)
    return blob


# ----------------------------------------------------------------------------- the run

class Hang(BaseException):
    """Raised by the alarm in a read that overran --timeout (a BaseException, so a reader's
    `except Exception` cannot swallow it)."""


def _on_alarm(signum, frame):
    raise Hang()


def load_reader(spec):
    if spec is None:
        from piper import _safetensors
        return _safetensors.read, _safetensors.CheckpointError
    path, func = spec.rsplit(":", 1)
    mod_spec = importlib.util.spec_from_file_location("fuzzed_reader", path)
    mod = importlib.util.module_from_spec(mod_spec)
    mod_spec.loader.exec_module(mod)
    return getattr(mod, func), mod.CheckpointError


def judge(read, error, blob, path, timeout):
    """The verdict on one input: 'accepted', 'refused', or one of the failures."""
    with open(path, "wb") as f:
        f.write(blob)
    why, header = consistent(blob)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        tensors, metadata = read(path)
    except Hang:
        return "hang", "ran past the timeout"
    except error as err:
        if path not in str(err):
            return "unnamed refusal", str(err)[:300]
        if why is None:
            return "refused consistent", str(err)[:300]
        return "refused", why
    except BaseException as err:  # noqa: B902 (SystemExit, MemoryError, RecursionError...)
        return "other exception", f"{type(err).__name__}: {str(err)[:300]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if why is not None:
        return "accepted inconsistent", why
    entries, meta, start = header
    if set(tensors) != set(entries) or metadata != meta:
        return "wrong values", "names or metadata differ"
    for name, (dtype, shape, b, e) in entries.items():
        t = tensors[name]
        if e == b:  # no values; numpy cannot hold a shape like [0, 2^62, 2^62]
            if t.dtype != torch.float32 or list(t.shape) != shape:
                return "wrong values", f"tensor {name[:80]!r}"
            continue
        got = t.numpy()
        want = decode(blob, start, dtype, shape, b, e)
        if got.dtype != np.float32 or got.shape != want.shape or \
                not np.array_equal(got, want, equal_nan=True):
            return "wrong values", f"tensor {name[:80]!r}"
    return "accepted", None


FAILURES = ["accepted inconsistent", "wrong values", "refused consistent", "unnamed refusal",
            "other exception", "hang"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=300, help="generated inputs (default 300)")
    ap.add_argument("--seconds", type=float, help="generate until this many seconds pass")
    ap.add_argument("--seed", type=int, help="random seed (default: from the clock, printed)")
    ap.add_argument("--corpus", action="append", default=[], help="also read these files")
    ap.add_argument("--crashes", help="write the inputs that failed here")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds before a read hangs")
    ap.add_argument("--reader", help="FILE:FUNCTION to fuzz instead of piper's reader")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else time.time_ns() % 2 ** 32
    rng = random.Random(seed)
    read, error = load_reader(a.reader)
    signal.signal(signal.SIGALRM, _on_alarm)
    bases = seeds(rng)
    counts = {k: 0 for k in ["accepted", "refused"] + FAILURES}
    examples = {}
    rules = {}  # the rule each refused file breaks -> how many
    started = time.monotonic()

    def inputs():
        for base in bases:  # each seed as it is: the rules accept it
            yield "seed", serialize(base[0], base[1], rng)
        for d in a.corpus:
            for name in sorted(os.listdir(d)):
                with open(os.path.join(d, name), "rb") as f:
                    yield name, f.read()
        k = 0
        while (time.monotonic() - started < a.seconds) if a.seconds else k < a.count:
            k += 1
            yield f"gen-{k}", generate(rng, bases)

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "fuzz-input.safetensors")
        total = 0
        for label, blob in inputs():
            total += 1
            verdict, detail = judge(read, error, blob, path, a.timeout)
            counts[verdict] += 1
            if verdict == "refused":
                rules[detail] = rules.get(detail, 0) + 1
            if verdict in FAILURES:
                examples.setdefault(verdict, f"{label}: {detail}")
                if a.crashes:
                    os.makedirs(a.crashes, exist_ok=True)
                    with open(os.path.join(a.crashes, f"{verdict.replace(' ', '-')}-{label}"),
                              "wb") as f:
                        f.write(blob)
    elapsed = time.monotonic() - started
    failed = sum(counts[k] for k in FAILURES)
    print(f"safetensors-py: {total} files (seed {seed}): {counts['accepted']} accepted, "
          f"{counts['refused']} refused")
    print("  refused for: " + ", ".join(f"{why} {n}" for why, n in sorted(rules.items())))
    for k in FAILURES:
        print(f"  {counts[k]} {k}" + (f" (first: {examples[k]})" if k in examples else ""))
    print(f"stat::number_of_executed_units: {total}")
    print(f"stat::average_exec_per_sec: {int(total / elapsed) if elapsed > 0 else total}")
    print("FAILED" if failed else "clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
