"""Counts, in each safetensors file given, the F32 elements that are not bf16 values (the low
16 bits of their fp32 pattern not all zero). A gradient that went through a bf16 reduction and
was widened back to fp32 (--grad-reduce bf16) has none; an fp32 sum has almost all.
Prints one line per file: "NAME: K of N elements are not bf16 values"."""
import array
import json
import os
import struct
import sys


def counts(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    inexact = total = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {entry['dtype']}, expected F32")
        a, b = entry["data_offsets"]
        words = array.array("I")
        words.frombytes(data[8 + n + a : 8 + n + b])
        total += len(words)
        inexact += sum(1 for w in words if w & 0xFFFF)
    return inexact, total


for path in sys.argv[1:]:
    k, n = counts(path)
    print(f"{os.path.basename(path)}: {k} of {n} elements are not bf16 values")
