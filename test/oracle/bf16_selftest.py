#!/usr/bin/python3
"""Self-test of the oracles' bf16 reference (precision.py), run by selftest.sh:
  1. r() is round to nearest, ties to even, on hand-picked fp32 bit patterns (below).
  2. The three wrappers round where the contract says: Policy.out forward and backward,
     Policy.act backward only, Policy.weight forward only.
  3. Each model (GPT, Qwen3, Qwen3-MoE, Llama 3, the MoE block) under bf16 is not its fp32 self:
     its logits are all bf16 values (the fp32 ones are not), its step-0 loss and gradients
     differ from fp32 by more than fp32 noise and less than a broken model would, and
     dropping the backward rounding (Policy.act, Policy.out's backward) changes the gradients,
     so the backward rounds too. Two bf16 runs are bit-identical.
Prints one 'ok'/'FAIL' line per check; exit 1 if any failed.
"""
import os
import struct
import sys
from unittest import mock

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as gt  # noqa: E402
import llama3_torch as ll  # noqa: E402
import moe_torch as mt  # noqa: E402
import precision  # noqa: E402
import qwen3_torch as qw  # noqa: E402

fails = 0


def check(ok, what):
    global fails
    print(f"bf16-selftest: {'ok  ' if ok else 'FAIL'} - {what}")
    fails += 0 if ok else 1


def bits_to_f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bf16_bits(x):
    """the 16 bits of bf16(r(x)) (the top half of the rounded fp32)"""
    v = precision.r(torch.tensor([x], dtype=torch.float32))
    return struct.unpack("<I", struct.pack("<f", float(v[0])))[0] >> 16


# fp32 input bits -> the bf16 bits round-to-nearest-even gives. A bf16 keeps the top 16 bits;
# the low 16 decide: below 0x8000 down, above up, exactly 0x8000 (a tie) to the even top half.
# Truncation fails rows 2, 3 and 6; round-half-up (away from zero) fails row 1 and 5.
RNE_CASES = [
    (0x3F808000, 0x3F80, "1 + 2^-8: tie between 0x3F80 (even) and 0x3F81 -> down to even"),
    (0x3F818000, 0x3F82, "tie between 0x3F81 and 0x3F82 (even) -> up to even"),
    (0x3F808001, 0x3F81, "just above the tie -> up"),
    (0x3F807FFF, 0x3F80, "just below the tie -> down"),
    (0xBF808000, 0xBF80, "negative tie -> magnitude to even (down)"),
    (0xBF818000, 0xBF82, "negative tie -> magnitude to even (up)"),
    (0x7F7FFFFF, 0x7F80, "FLT_MAX rounds past the largest bf16 to +inf"),
    (0x00008000, 0x0000, "subnormal tie 2^-134 -> +0 (even)"),
    (0x00018000, 0x0002, "subnormal tie between 0x0001 and 0x0002 (even) -> up"),
]


def test_rne():
    for u, want, why in RNE_CASES:
        got = bf16_bits(bits_to_f32(u))
        check(got == want, f"r(0x{u:08X}) = 0x{got:04X}, want 0x{want:04X}: {why}")
    nan = bf16_bits(float("nan"))
    check((nan & 0x7F80) == 0x7F80 and (nan & 0x7F) != 0, f"r(NaN) is a NaN (0x{nan:04X})")


def test_wrappers():
    pc = precision.Policy("bf16")
    x0 = torch.tensor([bits_to_f32(0x3F808001), 1.0 / 3.0])
    rx = precision.r(x0)
    g0 = torch.tensor([bits_to_f32(0x3F818000), -1.0 / 3.0])
    rg = precision.r(g0)
    check(not torch.equal(rx, x0) and not torch.equal(rg, g0), "the test values are not bf16 values")
    for name, fn, fwd_rounds, bwd_rounds in [("out", pc.out, True, True),
                                             ("act", pc.act, False, True),
                                             ("weight", pc.weight, True, False)]:
        x = x0.clone().requires_grad_(True)
        y = fn(x)
        y.backward(g0)
        ok = torch.equal(y.detach(), rx if fwd_rounds else x0) and \
            torch.equal(x.grad, rg if bwd_rounds else g0)
        check(ok, f"Policy.{name}: forward {'rounds' if fwd_rounds else 'unchanged'}, "
                  f"backward {'rounds' if bwd_rounds else 'unchanged'}")
    fp = precision.FP32
    check(all(f(x0) is x0 for f in (fp.out, fp.act, fp.weight)), "fp32 wrappers return their argument")


# ----------------------------------------------------------------------------- models

def data(V, B, T, seed=5):
    g = torch.Generator()
    g.manual_seed(seed)
    return (torch.randint(0, V, (B, T), generator=g), torch.randint(0, V, (B, T), generator=g))


class Args:  # qwen3_torch.Config reads its flags from an argparse namespace
    def __init__(self, **kw):
        self.__dict__.update(dict(head_dim=0, ffn_dim=0, experts=0, top_k=0, expert_ffn_dim=0,
                                  rope_theta=1e6, tie_embeddings=False), **kw)


def gpt_model():
    L, C, H, T, V = 2, 32, 2, 16, 256
    P = gt.init_params(L, C, V, T, seed=3)
    return P, lambda P, x, y: gt.forward(P, x, y, L, H), V, T


def qwen_model(moe, model=qw.QWEN3):
    kw = dict(experts=4, top_k=2, expert_ffn_dim=24) if moe else dict(ffn_dim=48)
    cfg = qw.Config(Args(layers=2, dim=32, heads=4, kv_heads=2, seq=16, vocab=256, **kw),
                    qk_norm=model.qk_norm)
    if model is ll.LLAMA3:
        cfg.theta = ll.ROPE_THETA
    P = qw.init_params(cfg, seed=3)
    return P, lambda P, x, y: model.forward(P, x, y, cfg), 256, 16


def moe_block_model():
    L, C, V, T, E, Fe, K = 2, 32, 256, 16, 4, 24, 2
    g = torch.Generator()
    g.manual_seed(3)
    P = {n: torch.empty(s).normal_(0.0, 0.02, generator=g)
         for n, s in mt.block_specs(L, C, V, T, E, Fe)}
    # block_forward returns the loss only; the logits are recomputed by a hook below
    return P, lambda P, x, y: (mt.block_forward(P, x, y, L, E, K), None), V, T


def step0(model, prec):
    """(loss, logits, grads) of one forward/backward of the model under precision prec"""
    P0, fwd, V, T = model
    precision.use(prec)
    try:
        P = {n: t.clone().requires_grad_(True) for n, t in P0.items()}
        x, y = data(V, 4, T)
        loss, logits = fwd(P, x, y)
        loss.backward()
        return float(loss), logits, {n: P[n].grad.clone() for n in P if P[n].grad is not None}
    finally:
        precision.use("fp32")


def max_rel(a, b):
    return max(float((a[n] - b[n]).abs().max() / b[n].abs().max().clamp_min(1e-30)) for n in b)


def test_model(name, model):
    l32, z32, g32 = step0(model, "fp32")
    l16, z16, g16 = step0(model, "bf16")
    if z16 is not None:
        check(torch.equal(precision.r(z16), z16), f"{name}: bf16 logits are all bf16 values")
        check(not torch.equal(precision.r(z32), z32), f"{name}: fp32 logits are not")
    # fp32 grads against fp64 differ by ~1e-6 of their max (gpt_torch.py compare's notes);
    # bf16's unit is 4e-3. At init the logits are ~0 and the loss ~ln V hardly moves (the MoE
    # block's by 2e-7), so the loss is only required to differ; the gradients show the size.
    dl = abs(l16 - l32) / abs(l32)
    dg = max_rel(g16, g32)
    check(0 < dl < 1e-2, f"{name}: bf16 step-0 loss differs from fp32 by {dl:.2e} (in (0, 1e-2))")
    check(1e-4 < dg < 0.2, f"{name}: bf16 step-0 grads differ from fp32 by {dg:.2e} max rel (in (1e-4, 0.2))")
    l16b, _, g16b = step0(model, "bf16")
    check(l16b == l16 and all(torch.equal(g16[n], g16b[n]) for n in g16),
          f"{name}: two bf16 runs are bit-identical")
    # the backward rounding matters: without it (forward rounding only) the gradients move
    with mock.patch.object(precision._ActOperand, "backward", staticmethod(lambda ctx, g: g)), \
            mock.patch.object(precision._Stored, "backward", staticmethod(lambda ctx, g: g)):
        lf, _, gf = step0(model, "bf16")
    dgb = max_rel(gf, g16)
    check(lf == l16 and dgb > 1e-5,
          f"{name}: forward-only rounding gives the same loss, grads differing by {dgb:.2e} (> 1e-5)")


def main():
    torch.set_num_threads(1)
    test_rne()
    test_wrappers()
    test_model("gpt", gpt_model())
    test_model("qwen3", qwen_model(moe=False))
    test_model("qwen3-moe", qwen_model(moe=True))
    test_model("llama3", qwen_model(moe=False, model=ll.LLAMA3))
    test_model("moe-block", moe_block_model())
    print(f"bf16-selftest: {'all passed' if not fails else f'{fails} failed'}")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
