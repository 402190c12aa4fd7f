"""Minimal safetensors reader/writer (no dependency on the `safetensors` package).

File layout:
  u64 little-endian N | N bytes of UTF-8 JSON header | raw little-endian data buffer
Header: {"name": {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, ...,
         optional "__metadata__": {str: str}}; offsets are relative to the buffer start.

Tensors are exchanged as dict name -> torch.float32 tensor, or NumPy float32 arrays with
read(as_numpy=True), which does not import torch (the comparisons, compare.py, need none).
write() emits F32 unless told otherwise (dtype="BF16", or a dict name -> dtype: BF16, F16,
F32, F64, I8, ...: each tensor converted by torch's .to(), so BF16 rounds to nearest even and a tensor already of that torch
dtype keeps its bits), tensors in sorted-name order, header padded with spaces to a multiple
of 8 bytes (like the reference implementation). read() accepts F32 (and F64/F16/BF16/integer
dtypes, converted to float32 unless keep_dtype=True; BF16 comes back as float32 either way).
"""
import json
import struct

import numpy as np

_NP_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"),
    "U8": np.dtype("u1"),
}


def read_header(path):
    """Return (header_dict_without_metadata, metadata_dict, buffer_start)."""
    with open(path, "rb") as f:
        raw = f.read(8)
        if len(raw) != 8:
            raise ValueError(f"{path}: too short for a safetensors file")
        (n,) = struct.unpack("<Q", raw)
        hdr = json.loads(f.read(n).decode("utf-8"))
    meta = hdr.pop("__metadata__", {}) or {}
    return hdr, meta, 8 + n


def read(path, with_metadata=False, keep_dtype=False, as_numpy=False):
    """Read a safetensors file into {name: torch.float32 tensor} (+ metadata if asked), or
    {name: NumPy array} with as_numpy."""
    hdr, meta, start = read_header(path)
    with open(path, "rb") as f:
        f.seek(start)
        buf = f.read()
    out = {}
    for name, info in hdr.items():
        dt = info["dtype"]
        shape = [int(s) for s in info["shape"]]
        b, e = (int(x) for x in info["data_offsets"])
        if e > len(buf) or b > e:
            raise ValueError(f"{path}: tensor {name!r} offsets {b},{e} outside buffer of {len(buf)} bytes")
        chunk = buf[b:e]
        if dt == "BF16":
            u16 = np.frombuffer(chunk, dtype="<u2").astype(np.uint32) << 16
            arr = u16.view(np.float32)
        elif dt in _NP_DTYPES:
            arr = np.frombuffer(chunk, dtype=_NP_DTYPES[dt])
        else:
            raise ValueError(f"{path}: tensor {name!r} has unsupported dtype {dt}")
        numel = int(np.prod(shape)) if shape else 1
        if arr.size != numel:
            raise ValueError(f"{path}: tensor {name!r} has {arr.size} elements, shape {shape} needs {numel}")
        arr = arr.reshape(shape)
        if not keep_dtype:
            arr = arr.astype(np.float32)
        out[name] = np.array(arr, copy=True)
    if not as_numpy:
        import torch
        out = {n: torch.from_numpy(a) for n, a in out.items()}
    return (out, meta) if with_metadata else out


# the safetensors dtypes write() converts to, by their torch dtype names (BF16's bytes are its
# int16 view)
_TORCH_DTYPES = {"F32": "float32", "F64": "float64", "F16": "float16", "BF16": "bfloat16",
                 "I64": "int64", "I32": "int32", "I16": "int16", "I8": "int8", "U8": "uint8"}


def _tensor_bytes(t, dt):
    """(shape, little-endian bytes) of tensor t (torch, or a NumPy array) as safetensors dtype dt"""
    import torch
    if isinstance(t, np.ndarray):
        t = torch.from_numpy(np.ascontiguousarray(t))
    t = t.detach().cpu().to(getattr(torch, _TORCH_DTYPES[dt])).contiguous()
    if dt == "BF16":  # numpy has no bfloat16: write its bits
        t = t.view(torch.int16)
    arr = t.numpy()
    return list(t.shape), arr.astype(arr.dtype.newbyteorder("<")).tobytes()  # keeps 0-d


def write(path, tensors, metadata=None, dtype="F32"):
    """Write {name: tensor} as safetensors. metadata: optional {str: str}. dtype: one
    safetensors dtype for every tensor, or {name: dtype} (names not in it: F32)."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        dt = dtype.get(name, "F32") if isinstance(dtype, dict) else dtype
        if dt not in _TORCH_DTYPES:
            raise ValueError(f"write {path}: tensor {name!r}: unknown dtype {dt}")
        shape, data = _tensor_bytes(tensors[name], dt)
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hjson)))
        f.write(hjson)
        for d in blobs:
            f.write(d)
