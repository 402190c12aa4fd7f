"""Readers that break the rules, for safetensors-py-fuzz.test's negative controls: the fuzz
target must report each one.

  read_lax     piper's reader before issue 37, verbatim: trusts the header (negative offsets
               read from the end by slicing, overlaps accepted, a huge header length
               allocated, KeyError/struct.error on a malformed header)
  read_no_f16  piper's reader, but refuses every F16 tensor: a reader too strict
  read_hangs   piper's reader, but loops forever on a header that names BF16"""
import json
import os
import struct
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "python"))
from piper import _safetensors  # noqa: E402

CheckpointError = ValueError  # the lax reader's refusals were plain ValueErrors

_DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}


def read_lax(path):
    """({name: float32 tensor}, {metadata}) of a safetensors file."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    metadata = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        if info["dtype"] not in _DTYPES:
            raise ValueError(f"{path}: tensor {name} has dtype {info['dtype']}; piper.load reads "
                             f"F32, BF16 and F16")
        dtype, size = _DTYPES[info["dtype"]]
        a, b = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[a:b]), dtype=dtype) if b > a else torch.empty(0, dtype=dtype)
        out[name] = t.to(torch.float32).reshape(info["shape"])
    return out, metadata


def read_no_f16(path):
    if any(e.dtype == "F16" for e in _safetensors.read_header(path).entries.values()):
        raise CheckpointError(f"{path}: F16 refused")
    return _safetensors.read(path)


def read_hangs(path):
    if any(e.dtype == "BF16" for e in _safetensors.read_header(path).entries.values()):
        while True:
            pass
    return _safetensors.read(path)
