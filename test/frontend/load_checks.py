"""piper.load's refusals and the safetensors writer (issue 37), as a user meets them: a
checkpoint from another run or model, one cut short by a full disk, one damaged. Prints PASS or
FAIL per case; exits 1 if any fails. Every refusal must be a piper.CheckpointError (a
ValueError) whose message names the file (and the phrase the case expects).

  load_checks.py reader [--reader FILE:FUNCTION]   the reader's cases (cut at every byte,
                                                   negative, overlapping and out-of-file offsets,
                                                   a huge header length, ...); --reader runs
                                                   them on another reader (a negative control)
  load_checks.py write                             the writer: round trip, an existing file kept
                                                   and nothing left behind when a write fails
  load_checks.py fill [--fill-anything]            what load fills and what it refuses (a wrong
                                                   file, a Llama file holding 1 of its 21
                                                   tensors, an older export, a run's checkpoint
                                                   with and without export_weights);
                                                   --fill-anything puts the old rule back (every
                                                   missing name filled): a negative control
  load_checks.py export DIR                        writes DIR/model.mlir, DIR/init.safetensors of
                                                   Toy (for the runtime, by load.test)
  load_checks.py run DIR                           checks DIR/out.safetensors, the checkpoint the
                                                   runtime saved after training Toy from the
                                                   writer's init.safetensors"""
import errno
import json
import os
import resource
import signal
import struct
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
import piper  # noqa: E402
from piper import _record, _safetensors  # noqa: E402

V, C, T, B = 16, 8, 4, 2
failed = []


def check(name, fn):
    try:
        detail = fn()
    except Exception as err:  # a case that raises is a failure, not a crash of the script
        failed.append(name)
        print(f"FAIL {name}: {type(err).__name__}: {str(err)[:400]}")
        return
    print(f"PASS {name}: {detail}")


def refused(fn, path, *phrases):
    """The message of the CheckpointError fn() raises; fails unless it names path and has each
    phrase."""
    try:
        fn()
    except piper.CheckpointError as err:
        msg = str(err)
    else:
        raise AssertionError("accepted")
    if path not in msg:
        raise AssertionError(f"the message does not name {path}: {msg}")
    for p in phrases:
        if p not in msg:
            raise AssertionError(f"the message lacks {p!r}: {msg}")
    return msg


def raw_file(path, header, data, length=None, pad=True):
    """A safetensors image from a header dict (written as is) and data."""
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text) if length is None else length) + text + data)


def two_tensors():
    """A valid header and data: a (2, 2) F32 then a (3,) F32."""
    a = struct.pack("<4f", 1, 2, 3, 4)
    b = struct.pack("<3f", 5, 6, 7)
    header = {"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
              "b": {"dtype": "F32", "shape": [3], "data_offsets": [16, 28]}}
    return header, a + b


# ----------------------------------------------------------------------------- reader

def reader_cases(tmp, read):
    def case(name, header, data, *phrases, length=None):
        path = os.path.join(tmp, f"{name}.safetensors")
        raw_file(path, header, data, length)
        check(name, lambda: refused(lambda: read(path), path, *phrases)[:200])

    header, data = two_tensors()
    # the case: Python slicing would read [-8, -4] from the end of the data, a
    # plausible float (3.0) where no tensor is
    h = json.loads(json.dumps(header))
    h["b"] = {"dtype": "F32", "shape": [1], "data_offsets": [-8, -4]}
    case("negative-offsets", h, data[:16], "tensor 'b'", "data_offsets [-8, -4]")
    h = json.loads(json.dumps(header))
    h["b"]["data_offsets"] = [12, 24]
    case("overlapping-offsets", h, data, "tensor 'b'", "overlap tensor 'a'")
    h = json.loads(json.dumps(header))
    h["b"]["data_offsets"] = [28, 40]
    case("out-of-file-offsets", h, data, "tensor 'b'", "the file holds 28")
    h = json.loads(json.dumps(header))
    h["b"]["data_offsets"] = [20, 32]
    case("gap-before-tensor", h, data + bytes(4), "tensor 'b'", "belong to no tensor")
    case("bytes-after-last-tensor", header, data + bytes(8), "has 36 bytes but its tensors "
         "cover 28")
    h = json.loads(json.dumps(header))
    h["b"]["shape"] = [4]
    case("shape-disagrees-with-offsets", h, data, "tensor 'b'", "needs 16")
    h = json.loads(json.dumps(header))
    h["b"]["dtype"] = "I64"
    case("unknown-dtype", h, data, "tensor 'b'", "dtype 'I64'")
    h = json.loads(json.dumps(header))
    h["b"]["shape"] = [-3]
    case("negative-dim", h, data, "tensor 'b'", "shape [-3]")
    case("huge-header-length", header, data, "header length says 1099511627776 bytes",
         length=2 ** 40)

    path = os.path.join(tmp, "dup.safetensors")
    text = (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
            b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}')
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(8))
    check("duplicate-name", lambda: refused(lambda: read(path), path, "names 'a' twice")[:200])

    path = os.path.join(tmp, "deep.safetensors")
    text = b"[" * 100000 + b"]" * 100000
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
    check("header-nested-past-the-stack",
          lambda: refused(lambda: read(path), path, "not JSON")[:200])

    # a file that is not safetensors at all (the wrong file: a torch.save pickle)
    path = os.path.join(tmp, "model.pt")
    torch.save({"a": torch.ones(3)}, path)
    check("torch-save-file", lambda: refused(lambda: read(path), path)[:200])

    # a valid file cut at every byte: each prefix is refused, and names the file
    path = os.path.join(tmp, "whole.safetensors")
    raw_file(path, {"__metadata__": {"format": "pt"}, **header}, data)
    whole = open(path, "rb").read()

    def every_cut():
        cut = os.path.join(tmp, "cut.safetensors")
        for n in range(len(whole)):
            with open(cut, "wb") as f:
                f.write(whole[:n])
            refused(lambda: read(cut), cut)
        tensors, _ = read(path)  # and the whole file loads
        assert torch.equal(tensors["a"], torch.tensor([[1.0, 2], [3, 4]])), tensors
        return f"all {len(whole)} prefixes of a {len(whole)}-byte file refused; the whole loads"
    check("cut-file", every_cut)


# ----------------------------------------------------------------------------- writer

def writer_cases(tmp):
    tensors = {"w": torch.randn(3, 5), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4),
               "half": torch.randn(4).half(), "strided": torch.randn(4, 6)[:, ::2]}

    def round_trip():
        path = os.path.join(tmp, "rt.safetensors")
        _safetensors.write(path, tensors, {"note": "x"})
        got, meta = _safetensors.read(path)
        for k, t in tensors.items():
            assert got[k].dtype == torch.float32 and torch.equal(got[k], t.float()), k
        hlen = struct.unpack("<Q", open(path, "rb").read(8))[0]
        assert (8 + hlen) % 8 == 0 and meta == {"note": "x"}, (hlen, meta)
        assert sorted(os.listdir(tmp)) == ["rt.safetensors"], os.listdir(tmp)
        return f"{len(tensors)} tensors read back equal; data starts at byte {8 + hlen}"
    check("write-round-trip", round_trip)

    def failing_write(name, fail):
        """fail(path) makes a write of `tensors` to path fail; the old file stays, whole and
        alone."""
        folder = os.path.join(tmp, name)
        os.makedirs(folder)
        path = os.path.join(folder, "ckpt.safetensors")
        _safetensors.write(path, {"old": torch.ones(2)})
        before = open(path, "rb").read()
        try:
            fail(path)
        except OSError as err:
            msg = str(err)
        else:
            raise AssertionError("the write did not fail")
        assert path in msg, f"the message does not name {path}: {msg}"
        assert os.listdir(folder) == ["ckpt.safetensors"], os.listdir(folder)
        assert open(path, "rb").read() == before, "the old file changed"
        return f"OSError naming the file; the old file unchanged, nothing else left: {msg[:160]}"

    big = {"w": torch.randn(64, 1024)}  # 256 KiB: more than the limit below

    def file_size_limit(path):
        # the kernel refuses writes past RLIMIT_FSIZE (EFBIG), as a full disk refuses them
        # (ENOSPC): a real failure partway through the data
        old_limit = resource.getrlimit(resource.RLIMIT_FSIZE)
        old_handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, old_limit[1]))
        try:
            _safetensors.write(path, big)
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, old_limit)
            signal.signal(signal.SIGXFSZ, old_handler)
    check("write-fails-partway", lambda: failing_write("partway", file_size_limit))

    def disk_full_at_sync(path):
        # every byte written, then the disk says it is full when the data is synced: the
        # temporary file holds the whole content and must still not appear as path
        real = os.fsync

        def full(fd):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync = full
        try:
            _safetensors.write(path, big)
        finally:
            os.fsync = real
    check("write-fails-at-fsync", lambda: failing_write("fsync", disk_full_at_sync))

    class FailingFile:
        """A file object whose third write fails (the injected write error)."""

        def __init__(self, f):
            self.f, self.writes = f, 0

        def write(self, b):
            self.writes += 1
            if self.writes == 3:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return self.f.write(b)

        def __getattr__(self, name):
            return getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()

    def injected(path):
        real = os.fdopen
        os.fdopen = lambda *a, **k: FailingFile(real(*a, **k))
        try:
            _safetensors.write(path, tensors)
        finally:
            os.fdopen = real
    check("write-fails-injected", lambda: failing_write("injected", injected))


# ----------------------------------------------------------------------------- load's fills

class Toy(nn.Module):
    """Each kind of name a checkpoint may lack: head.weight tied to wte.weight, a buffer the
    export folds (mask == 0 becomes tdag.triangle), one it never reads (unused_buf), a
    parameter the loss never reads (unused), and a float buffer it reads and writes (scale)."""

    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.register_buffer("scale", torch.linspace(0.5, 1.5, C))
        self.register_buffer("mask", torch.tril(torch.ones(T, T)))
        self.register_buffer("unused_buf", torch.ones(3))
        self.unused = nn.Linear(C, C)
        self.head = nn.Linear(C, V, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, tokens, targets):
        x = self.wte(tokens) * self.scale
        att = (x @ x.transpose(1, 2)).masked_fill(self.mask == 0, float("-inf"))
        x = x + F.softmax(att, dim=-1) @ x
        return F.cross_entropy(self.head(x).view(-1, V), targets.view(-1))


def toy(seed):
    torch.manual_seed(seed)
    return Toy()


def export_toy(folder):
    m = toy(0)
    tokens = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(0))
    piper.export(m, (tokens, tokens.roll(1, 1)), os.path.join(folder, "model.mlir"),
                 weights=os.path.join(folder, "init.safetensors"))
    return m


def strict_load(m, sd):
    m.load_state_dict(sd, strict=True)
    return m


def fill_cases(tmp):
    init = os.path.join(tmp, "init.safetensors")
    exported = export_toy(tmp)

    def record():
        meta = _safetensors.read_header(init).metadata
        want = {"piper.tied": {"head.weight": "wte.weight"}, "piper.buffers": ["scale"],
                "piper.unused": ["unused.bias", "unused.weight"],
                "piper.folded": ["mask", "unused_buf"]}
        got = {k: json.loads(meta[k]) for k in want}
        assert got == want, got
        return f"the export's metadata: {got}"
    check("export-record", record)

    def own_weights():
        m = strict_load(toy(1), piper.load(init, toy(1)))
        assert m.head.weight is m.wte.weight
        assert torch.equal(m.wte.weight, exported.wte.weight)
        assert torch.equal(m.unused.weight, toy(1).unused.weight)  # the module's own
        return "the export's weights load strict=True; the unused Linear is the module's"
    check("load-export-weights", own_weights)

    run_ckpt = os.path.join(tmp, "run.safetensors")  # as the runtime writes one: no record
    _safetensors.write(run_ckpt, {"wte.weight": exported.wte.weight * 2,
                                  "scale": exported.scale,
                                  "optim.exp_avg.wte.weight": torch.zeros(V, C)},
                       {"format": "pt", "step": "3"})
    check("run-checkpoint-without-record", lambda: refused(
        lambda: piper.load(run_ckpt, toy(1)), run_ckpt, "lacks 2 of the module's names",
        "unused.weight", "export_weights=")[:300])

    def run_with_record():
        m = strict_load(toy(1), piper.load(run_ckpt, toy(1), export_weights=init))
        assert torch.equal(m.wte.weight, exported.wte.weight * 2)
        assert m.head.weight is m.wte.weight
        return "a run's checkpoint loads strict=True with export_weights= the export's file"
    check("run-checkpoint-with-record", run_with_record)

    # the wrong file: a checkpoint of this model lacking its trained embedding
    wrong = os.path.join(tmp, "wrong.safetensors")
    _safetensors.write(wrong, {"scale": exported.scale})
    check("missing-trained-parameter", lambda: refused(
        lambda: piper.load(wrong, toy(1), export_weights=init), wrong,
        "lacks 2 of the module's names (wte.weight, head.weight)")[:300])

    def older_export():
        old = os.path.join(tmp, "old-init.safetensors")
        tensors, meta = _safetensors.read(init)
        _safetensors.write(old, tensors, {k: meta[k] for k in ("piper.tied", "piper.buffers")})
        msg = refused(lambda: piper.load(old, toy(1)), old, "unused.bias", "export again")
        refused(lambda: piper.load(run_ckpt, toy(1), export_weights=old), old, "export again")
        return msg[:300]
    check("older-export-refused", older_export)

    def llama_one_of_21():
        import models
        m = models.Llama()
        one = os.path.join(tmp, "llama-one.safetensors")
        _safetensors.write(one, {"norm.weight": m.norm.weight})
        return refused(lambda: piper.load(one, models.Llama()), one,
                       "holds 1 tensor and lacks 20 of the module's names "
                       "(tok_embeddings.weight, layers.0.attention_norm.weight")[:300]
    check("llama-1-of-21-tensors", llama_one_of_21)

    def gpt_file_into_llama():
        import models
        g = os.path.join(tmp, "gpt2.safetensors")
        _safetensors.write(g, models.GPT2().state_dict())
        return refused(lambda: piper.load(g, models.Llama()), g, "lacks 21 of")[:300]
    check("another-models-file", gpt_file_into_llama)


# ----------------------------------------------------------------------------- the runtime

def run_cases(folder):
    init = os.path.join(folder, "init.safetensors")
    out = os.path.join(folder, "out.safetensors")
    exported = toy(0)

    def runtime_checkpoint():
        refused(lambda: piper.load(out, toy(1)), out, "unused.bias", "export_weights=")
        m = strict_load(toy(1), piper.load(out, toy(1), export_weights=init))
        moved = float((m.wte.weight - exported.wte.weight).abs().max())
        assert moved > 0, "the trained embedding did not move"
        assert m.head.weight is m.wte.weight
        assert torch.equal(m.scale, exported.scale) and torch.equal(m.mask, exported.mask)
        assert torch.equal(m.unused.weight, toy(1).unused.weight)
        return f"strict=True with export_weights; wte moved by {moved:.3g}"
    check("runtime-checkpoint", runtime_checkpoint)


def main():
    mode = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "reader":
            read = _safetensors.read
            if "--reader" in sys.argv:
                spec = sys.argv[sys.argv.index("--reader") + 1]
                import importlib.util
                file, func = spec.rsplit(":", 1)
                s = importlib.util.spec_from_file_location("other_reader", file)
                mod = importlib.util.module_from_spec(s)
                s.loader.exec_module(mod)
                read = getattr(mod, func)
            reader_cases(tmp, read)
        elif mode == "write":
            writer_cases(tmp)
        elif mode == "fill":
            if "--fill-anything" in sys.argv:  # the rule before issue 37
                _record.Record.may_fill = lambda self, name, is_buffer: True
            fill_cases(tmp)
        elif mode == "export":
            export_toy(sys.argv[2])
            print("exported")
        elif mode == "run":
            run_cases(sys.argv[2])
    print(f"{mode}: {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
