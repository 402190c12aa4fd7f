#!/usr/bin/python3
"""PyTorch's side of checkpoint-bf16.test: writes BF16/F16/F32 checkpoints with torch and
checks what the training binary loaded or saved against torch's own conversions, exactly.

  make-half INIT OUT DTYPE TENSOR  INIT (F32) converted to DTYPE (BF16 or F16) by torch; TENSOR
                                   (65536 elements) holds every 16-bit pattern instead, so the
                                   binary's conversion meets every value (subnormals, +-0,
                                   +-inf, NaNs) once; TENSOR "-": none replaced
  make-rne INIT OUT TENSOR         INIT (F32) with TENSOR's elements set to fp32 bit patterns
                                   that stress rounding to BF16: exact ties (odd and even
                                   kept halves), one ulp either side of a tie, the largest
                                   finite values, infinities, NaNs, subnormals, random bits
  make-bad INIT OUT TENSOR DTYPE   INIT with TENSOR stored as DTYPE (I8, F64: not read)
  check-load SRC LOADED            every tensor of SRC, converted to fp32 by torch, equals the
                                   binary's fp32 save LOADED bit for bit (NaN: NaN)
  check-save FP32 BF16             BF16 (a --save-dtype bf16 file) holds exactly FP32's
                                   parameters (no optim.*), every one of dtype BF16 and equal
                                   to torch's bfloat16 rounding of FP32's value bit for bit
                                   (NaN: NaN; torch's own NaN bits differ between its scalar and
                                   vector paths)
Tolerance: 0 (bitwise). Prints 'ok ...' lines; exits 1 naming the first mismatch.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
import safetensors_io as st  # noqa: E402


def bits(t):
    """int32 bit patterns of a float32 tensor"""
    return t.contiguous().view(torch.int32)


def same(a, b):
    """bitwise equal, except that any NaN matches any NaN; returns (ok, first bad index)"""
    a, b = a.reshape(-1), b.reshape(-1)
    nan = torch.isnan(a) & torch.isnan(b)
    bad = ((bits(a) != bits(b)) & ~nan).nonzero()
    return (bad.numel() == 0 and a.shape == b.shape), (int(bad[0]) if bad.numel() else -1)


def make_half(init, out, dtype, tensor):
    T = st.read(init)
    half = {"BF16": torch.bfloat16, "F16": torch.float16}[dtype]
    H = {k: v.to(half) for k, v in T.items()}
    if tensor != "-":
        n = T[tensor].numel()
        if n != 65536:
            raise SystemExit(f"{tensor} has {n} elements; every 16-bit pattern needs 65536")
        H[tensor] = torch.arange(65536, dtype=torch.int32).to(torch.int16).view(half) \
            .reshape(T[tensor].shape)
    st.write(out, H, dtype=dtype)
    print(f"ok wrote {out}: {len(H)} tensors in {dtype}"
          + (f", {tensor} = all 65536 patterns" if tensor != "-" else ""))


def rne_patterns(n):
    """n fp32 bit patterns (int32) that stress fp32 -> bf16 rounding"""
    g = torch.Generator()
    g.manual_seed(17)
    hi = torch.randint(0, 1 << 16, (n,), generator=g, dtype=torch.int64)
    lo_kinds = torch.tensor([0x8000, 0x7FFF, 0x8001, 0x0000, 0xFFFF], dtype=torch.int64)
    lo = lo_kinds[torch.randint(0, 5, (n,), generator=g)]
    rnd = torch.randint(0, 1 << 16, (n,), generator=g, dtype=torch.int64)
    lo = torch.where(torch.arange(n) % 3 == 0, rnd, lo)  # a third of fully random low halves
    u = (hi << 16) | lo
    special = torch.tensor([0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000, 0x7F7F7FFF, 0x7F800000,
                            0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x00000001,
                            0x00008000, 0x00018000, 0x80008000, 0x007FFFFF, 0x3F808000,
                            0x3F818000], dtype=torch.int64)
    u[:special.numel()] = special
    return (u - ((u >= (1 << 31)).to(torch.int64) << 32)).to(torch.int32)  # as signed int32


def make_rne(init, out, tensor):
    T = st.read(init)
    T[tensor] = rne_patterns(T[tensor].numel()).view(torch.float32).reshape(T[tensor].shape)
    st.write(out, T)
    print(f"ok wrote {out}: {tensor} = {T[tensor].numel()} rounding patterns")


def make_bad(init, out, tensor, dtype):
    st.write(out, st.read(init), dtype={tensor: dtype})
    print(f"ok wrote {out}: {tensor} as {dtype}")


def check_load(src, loaded):
    S, L = st.read(src, keep_dtype=True), st.read(loaded)
    for n in sorted(S):
        if n not in L:
            raise SystemExit(f"FAIL {n}: in {src}, not in {loaded}")
        ok, at = same(L[n], S[n].float())
        if not ok:
            raise SystemExit(f"FAIL {n}: element {at}: loaded {L[n].reshape(-1)[at].item()!r}, "
                             f"torch {S[n].float().reshape(-1)[at].item()!r}")
    nan = sum(int(torch.isnan(S[n].float()).sum()) for n in S)
    print(f"ok {len(S)} tensors of {src} loaded exactly ({nan} NaNs among them stay NaN)")


def check_save(fp32, bf16):
    F, B = st.read(fp32), st.read(bf16)
    hdr = st.read_header(bf16)[0]
    params = {n for n in F if not n.startswith("optim.")}
    if set(B) != params:
        raise SystemExit(f"FAIL names: extra {sorted(set(B) - params)[:3]}, "
                         f"missing {sorted(params - set(B))[:3]}")
    dts = {h["dtype"] for h in hdr.values()}
    if dts != {"BF16"}:
        raise SystemExit(f"FAIL dtypes {dts}, want BF16 only")
    for n in sorted(B):
        want = F[n].to(torch.bfloat16).float()
        ok, at = same(B[n], want)
        if not ok:
            raise SystemExit(f"FAIL {n}: element {at}: fp32 {F[n].reshape(-1)[at].item()!r} saved "
                             f"as {B[n].reshape(-1)[at].item()!r}, torch rounds to "
                             f"{want.reshape(-1)[at].item()!r}")
    print(f"ok {len(B)} parameters saved as BF16 = torch's rounding of the fp32 values, "
          f"no optimizer state")


def main(argv):
    cmds = {"make-half": make_half, "make-rne": make_rne, "make-bad": make_bad,
            "check-load": check_load, "check-save": check_save}
    if not argv or argv[0] not in cmds:
        raise SystemExit(__doc__)
    cmds[argv[0]](*argv[1:])


if __name__ == "__main__":
    main(sys.argv[1:])
