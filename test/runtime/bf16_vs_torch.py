"""Checks prt_bf16_narrow's bits (prt-bf16-test --dump FILE) against torch.Tensor.bfloat16().

Every non-NaN input must give exactly PyTorch's pattern (tolerance: none, bit for bit). A NaN
input must give a NaN (exponent all ones, mantissa non-zero): the runtime writes the canonical
0x7fc0 of current PyTorch; Debian's PyTorch 1.13 writes 0xffff, another NaN, so NaN payloads
are not compared. Exits 1 naming the first mismatches."""
import struct
import sys

import torch


def is_nan16(h):
    return (h & 0x7F80) == 0x7F80 and (h & 0x7F) != 0


def main(path):
    ins, outs = [], []
    with open(path) as f:
        for line in f:
            a, b = line.split()
            ins.append(int(a, 16))
            outs.append(int(b, 16))
    x = torch.tensor(struct.unpack("%dI" % len(ins), struct.pack("%dI" % len(ins), *ins)),
                     dtype=torch.int64).to(torch.int32).view(torch.float32)
    want = (x.bfloat16().view(torch.int16).to(torch.int64) & 0xFFFF).tolist()
    bad = []
    for u, got, w in zip(ins, outs, want):
        nan_in = (u & 0x7F800000) == 0x7F800000 and (u & 0x7FFFFF) != 0
        ok = is_nan16(got) if nan_in else got == w
        if not ok:
            bad.append("0x%08x: piper 0x%04x, torch 0x%04x" % (u, got, w))
    nans = sum(1 for u in ins if (u & 0x7F800000) == 0x7F800000 and (u & 0x7FFFFF))
    print("checked %d patterns (%d NaN), %d mismatches" % (len(ins), nans, len(bad)))
    for b in bad[:10]:
        print("MISMATCH", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
