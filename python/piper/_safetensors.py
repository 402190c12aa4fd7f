"""Reading and writing safetensors files with torch alone (Debian packages no `safetensors`):
an 8-byte little-endian header length, a JSON header ({name: {dtype, shape, data_offsets}},
"__metadata__" strings), then the raw little-endian tensors. Piper's checkpoints are F32 (or
BF16 with --save-dtype bf16); this reads F32, BF16 and F16 and writes F32."""
import json
import struct

import torch

_DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}


def write(path, tensors, metadata=None):
    """Writes {name: tensor} as F32, in the given order, with string `metadata`."""
    header, blobs, at = {}, [], 0
    if metadata:
        header["__metadata__"] = {k: str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        data = t.detach().to(torch.float32).contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read(path):
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
