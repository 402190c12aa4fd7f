"""Reading and writing safetensors files with torch alone (Debian packages no `safetensors`):
an 8-byte little-endian header length n, n bytes of JSON header ({name: {dtype, shape,
data_offsets}}, "__metadata__": {string: string}), then the raw little-endian tensors, with
offsets relative to the start of that data section. Piper's checkpoints are F32 (or BF16 with
--save-dtype bf16); this reads F32, BF16 and F16 and writes F32.

The reader holds a file to the rules runtime/safetensors.c's reader holds it to, so that a
file either loads as it was written or is refused with a CheckpointError naming the file (and
the tensor at fault): the header length fits the file and 100 MB; the header is one JSON
object (UTF-8, no duplicate keys) whose metadata maps strings to strings and whose every
other entry has a known dtype, a shape of at most 8 non-negative integers and two
data_offsets; sorted by offset, the tensors' byte ranges tile the data section exactly (no
negative or reversed offsets, no overlap, no gap, nothing past the end of the file, nothing
after the last tensor), each holding shape's element count times its dtype's size.
test/fuzz/safetensors_py_fuzz.py holds it to them on generated files."""
import json
import os
import secrets
import stat
import struct

import torch


class CheckpointError(ValueError):
    """A file piper.load cannot read as a checkpoint (malformed, cut short, not safetensors) or
    that is not a checkpoint of the module it is loaded into. The message names the file and,
    where one is at fault, the tensor."""


# The dtypes a file may hold: name -> (torch dtype, bytes per element); a new one is a row.
DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}
MAX_HEADER = 100 << 20  # bytes; safetensors' own limit, and the C reader's (PRT_MAX_HEADER)
MAX_DIMS = 8            # dims of a shape; the C reader's PRT_ST_MAX_DIMS
_REMEDY = "the file is corrupt, cut short or not safetensors: re-create it"


class Entry:
    """One tensor of a header: its dtype name, shape and [begin, end) in the data section."""
    __slots__ = ("name", "dtype", "shape", "begin", "end")

    def __init__(self, name, dtype, shape, begin, end):
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end


class Header:
    """A checked header: entries {name: Entry} in file order, metadata {str: str}, and where
    the data section starts in the file and how many bytes it has."""

    def __init__(self, entries, metadata, data_start, data_bytes):
        self.entries, self.metadata = entries, metadata
        self.data_start, self.data_bytes = data_start, data_bytes


# ----------------------------------------------------------------------------- reading

def _refuse(path, what, tensor=None):
    at = f"tensor {_show(tensor)}: " if tensor is not None else ""
    raise CheckpointError(f"{path}: {at}{what}; {_REMEDY}") from None


def _show(x):
    """A JSON value as a message shows it: short whatever it is (a name of megabytes, a list
    nested a thousand deep)."""
    if isinstance(x, str):
        return "'" + (x if len(x) <= 100 else x[:100] + "...") + "'"
    if isinstance(x, list):
        inner = ", ".join(_show(v) if not isinstance(v, (list, dict)) else "[...]"
                          if isinstance(v, list) else "{...}" for v in x[:MAX_DIMS + 1])
        return f"[{inner}{', ...' if len(x) > MAX_DIMS + 1 else ''}]"
    if isinstance(x, dict):
        return "{...}"
    text = json.dumps(x)
    return text if len(text) <= 40 else text[:40] + "..."


def _read_exactly(f, view):
    """Fills the memoryview `view` from f; the number of bytes read (short only at the end)."""
    got = 0
    while got < len(view):
        n = f.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def _no_duplicates(pairs):
    keys = set()
    for k, _ in pairs:
        if k in keys:
            raise _Duplicate(k)
        keys.add(k)
    return dict(pairs)


class _Duplicate(ValueError):
    pass


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _is_uint(x, bound=1 << 64):
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x < bound


def _is_dim(x):
    return _is_uint(x, 1 << 63)  # torch's sizes are int64


def _entry(path, name, info):
    """The Entry of header item name: info, checked on its own (the layout is checked after)."""
    if not isinstance(info, dict):
        _refuse(path, f"its header entry is {type(info).__name__}, not an object with dtype, "
                "shape and data_offsets", name)
    for field in ("dtype", "shape", "data_offsets"):
        if field not in info:
            _refuse(path, f"its header entry lacks \"{field}\"", name)
    dtype, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if not isinstance(dtype, str) or dtype not in DTYPES:
        _refuse(path, f"dtype {_show(dtype)} is not one piper reads "
                f"({', '.join(DTYPES)})", name)
    if not isinstance(shape, list) or len(shape) > MAX_DIMS or not all(map(_is_dim, shape)):
        _refuse(path, f"shape {_show(shape)} is not a list of at most {MAX_DIMS} "
                "integers in [0, 2^63)", name)
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(map(_is_uint, offsets)):
        _refuse(path, f"data_offsets {_show(offsets)} is not [begin, end] of two "
                "integers in [0, 2^64)", name)
    begin, end = offsets
    if begin > end:
        _refuse(path, f"data_offsets [{begin}, {end}] ends before it begins", name)
    numel = 1
    for d in shape:
        numel *= d
    if end - begin != numel * DTYPES[dtype][1]:
        _refuse(path, f"data_offsets [{begin}, {end}] hold {end - begin} bytes but shape "
                f"{shape} of {dtype} needs {numel * DTYPES[dtype][1]}", name)
    return Entry(name, dtype, shape, begin, end)


def _check_layout(path, entries, data_bytes):
    """Sorted by offset (an empty tensor before a non-empty one at the same place), the
    tensors' ranges must tile [0, data_bytes) exactly: an overlap would make one tensor's bytes
    another's, a gap or a tail could hide anything."""
    at, prev = 0, None
    for e in sorted(entries, key=lambda e: (e.begin, e.end)):
        if e.end > data_bytes:
            _refuse(path, f"needs bytes [{e.begin}, {e.end}) of the data section but the file "
                    f"holds {data_bytes}", e.name)
        if e.begin < at:
            _refuse(path, f"data_offsets [{e.begin}, {e.end}) overlap tensor {_show(prev.name)} "
                    f"([{prev.begin}, {prev.end}))", e.name)
        if e.begin > at:
            _refuse(path, f"bytes [{at}, {e.begin}) of the data section before it belong to no "
                    "tensor", e.name)
        at, prev = e.end, e
    if at != data_bytes:
        _refuse(path, f"the data section has {data_bytes} bytes but its tensors cover {at}")


def _read_header(f, path, size):
    """The checked Header of the open file f (at its start) of `size` bytes; reads 8 + n."""
    length = bytearray(8)
    if size < 8 or _read_exactly(f, memoryview(length)) != 8:
        _refuse(path, f"the file has {size} bytes, fewer than the 8-byte header length")
    (n,) = struct.unpack("<Q", length)
    if n > MAX_HEADER or n > size - 8:
        _refuse(path, f"the header length says {n} bytes but the file has {size} in all"
                + (f" (the limit is {MAX_HEADER >> 20} MB)" if n > MAX_HEADER else ""))
    text = bytearray(n)
    if _read_exactly(f, memoryview(text)) != n:
        _refuse(path, f"the file ended inside its {n}-byte header")
    try:
        header = json.loads(text.decode("utf-8"), object_pairs_hook=_no_duplicates,
                            parse_constant=_no_constant)
    except _Duplicate as err:
        _refuse(path, f"the header names {_show(err.args[0])} twice")
    except (ValueError, RecursionError) as err:  # bad UTF-8 or JSON, nesting past the stack
        _refuse(path, f"the header is not JSON ({type(err).__name__}: {str(err)[:200]})")
    if not isinstance(header, dict):
        _refuse(path, f"the header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        _refuse(path, "__metadata__ is not an object of strings")
    entries = {name: _entry(path, name, info) for name, info in header.items()}
    data_bytes = size - 8 - n
    _check_layout(path, entries.values(), data_bytes)
    return Header(entries, metadata, 8 + n, data_bytes)


def _open(path):
    """(open binary file, its size); a path that is not a regular file is refused."""
    st = os.stat(path)  # OSError names the path
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{path}: not a regular file; pass a safetensors file")
    return open(path, "rb"), st.st_size


def read_header(path):
    """The checked Header of a safetensors file: reads its first 8 + n bytes only."""
    f, size = _open(path)
    with f:
        return _read_header(f, path, size)


def read(path):
    """({name: float32 tensor}, {metadata}) of a safetensors file, checked as the module's
    docstring says. The data section is read once into one buffer that the F32 tensors view
    (BF16 and F16 ones are converted); raises CheckpointError naming the file and tensor."""
    f, size = _open(path)
    with f:
        h = _read_header(f, path, size)
        data = bytearray(h.data_bytes)
        if _read_exactly(f, memoryview(data)) != h.data_bytes:
            _refuse(path, "the file ended inside its data section (it shrank while read?)")
    out = {}
    for name, e in h.entries.items():
        dtype, size = DTYPES[e.dtype]
        if e.end > e.begin:
            t = torch.frombuffer(data, dtype=dtype, count=(e.end - e.begin) // size,
                                 offset=e.begin)
        else:
            t = torch.empty(0, dtype=dtype)
        out[name] = t.to(torch.float32).reshape(e.shape)
    return out, h.metadata


# ----------------------------------------------------------------------------- writing

def _write_atomic(path, chunks):
    """Writes the bytes-like chunks to `path` as the runtime's checkpoints are written
    (base/atomic_file.c): into a new PATH.XXXXXXXX beside it, fsynced, then renamed over path,
    so a reader sees the old file or the whole new one; on any failure the temporary file is
    removed and an OSError naming path is raised."""
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot write {path}: it is a directory; pass a file name")
    tmp = f"{path}.{secrets.token_hex(4)}"  # O_EXCL: a fresh name of our own, never a link
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o666)
    except OSError as err:
        raise type(err)(err.errno, f"cannot write {path}: cannot create a file beside it: "
                        f"{err.strerror}; check the folder exists and is writable") from err
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as err:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise type(err)(err.errno, f"cannot write {path}: {err.strerror}; check the folder "
                            "is writable and has space") from err
        raise
    try:  # the rename itself survives a crash once the folder is synced
        dfd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def write(path, tensors, metadata=None):
    """Writes {name: tensor} as F32, in the given order, with string `metadata`, atomically
    (see _write_atomic). The header is padded with spaces to a multiple of 8 bytes, as the
    reference implementation and the runtime pad it."""
    header, arrays, at = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, t in tensors.items():
        if not isinstance(name, str) or name == "__metadata__":
            raise ValueError(f"cannot write {path}: tensor name {name!r} is not a string or is "
                             "the reserved __metadata__")
        a = t.detach().to(device="cpu", dtype=torch.float32).contiguous()
        n = 4 * a.numel()
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [at, at + n]}
        arrays.append(a)
        at += n
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    # each tensor's own bytes, not a copy: a 0-dim or empty tensor is 4 or 0 bytes
    views = (memoryview(a.numpy()).cast("B") if a.numel() else b"" for a in arrays)
    _write_atomic(path, [struct.pack("<Q", len(text)), text, *views])
