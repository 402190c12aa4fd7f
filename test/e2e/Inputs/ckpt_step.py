#!/usr/bin/python3
"""ckpt_step.py CHECKPOINT [PLUS] [--multiple-of M]: prints the completed steps a checkpoint
records (its __metadata__ "step") plus PLUS; with --multiple-of, exits 1 unless that step is
a positive multiple of M."""
import json
import struct
import sys

args = sys.argv[1:]
mult = None
if "--multiple-of" in args:
    k = args.index("--multiple-of")
    mult = int(args[k + 1])
    del args[k:k + 2]
raw = open(args[0], "rb").read()
(n,) = struct.unpack("<Q", raw[:8])
step = int(json.loads(raw[8:8 + n])["__metadata__"]["step"])
if mult and (step <= 0 or step % mult):
    sys.exit(f"checkpoint step {step} is not a positive multiple of {mult}")
print(step + (int(args[1]) if len(args) > 1 else 0))
