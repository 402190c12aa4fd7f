"""The oracles' numeric precision: `--precision fp32` (default; every wrapper below is the
identity, so the fp32 models compute exactly the expressions they always did) or `--precision
bf16`, the reference for `piper-compile --precision bf16` (issue 17 part 2).

The bf16 contract, with r(x) = x rounded to bfloat16 (round to nearest, ties to even) and
back, the models still computing in fp32 tensors:
  fp32 always: parameters, AdamW moments, weight gradients and their accumulation, norm
    statistics, the loss and cross-entropy internals, the MoE router's scores and weights
    (its matmul's operands are rounded, its result is not), softmax inside attention, the
    gradient norm.
  stored in bf16: every other op result (embedding, norm outputs, linear/matmul outputs,
    attention output, gelu/swiglu/rope outputs, every residual add, the MoE dispatch rows,
    expert outputs and the combine) is r()-rounded: Policy.out.
  matmul: y = r(r(x) @ r(W).T + b), products accumulated in fp32: Policy.linear; the weight's
    gradient is fp32 (the rounding of W is straight-through: Policy.weight).
  backward: every activation gradient is rounded where the op produces it (Policy.act on the
    op's activation operand), and the gradient reaching a stored result, summed over its
    consumers, is stored in bf16 too (Policy.out's backward). The rule is "a tensor and its
    gradient have the same storage dtype": with one consumer the two roundings are one
    (r is idempotent); with several (the residual stream, a norm's input read by q/k/v) the
    sum of rounded contributions is rounded again, as an unfused graph that adds them stores
    the sum. A value kept in fp32 (router scores and weights) has an fp32 gradient.

The policy is one module-level setting (use()), set once by the train subcommand, rather than
an argument of every forward: the forwards' signatures are what calibrate.py patches.
"""
import torch
import torch.nn.functional as F


def r(x):
    """x rounded to bfloat16 (round to nearest, ties to even: torch's float->bfloat16
    conversion; selftest checks it on tie bit patterns) and back to x's dtype."""
    return x.to(torch.bfloat16).to(x.dtype)


class _Stored(torch.autograd.Function):
    """An op result stored in bf16: forward r(y); backward r(dy), the gradient of the stored
    result (already summed over its consumers by autograd) stored in bf16 too."""

    @staticmethod
    def forward(ctx, y):
        return r(y)

    @staticmethod
    def backward(ctx, g):
        return r(g)


class _ActOperand(torch.autograd.Function):
    """An op's activation operand: forward unchanged; backward r(dx), the activation gradient
    rounded where the op produces it."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return r(g)


class _WeightOperand(torch.autograd.Function):
    """A matmul's weight operand: forward r(W); backward unchanged, so the weight gradient
    (dW = dy^T x over the rounded operands) reaches the fp32 master weight in fp32."""

    @staticmethod
    def forward(ctx, w):
        return r(w)

    @staticmethod
    def backward(ctx, g):
        return g


class Policy:
    """Where a model rounds. fp32: nothing (every method returns its argument or the same
    expression as before); bf16: the contract of the module docstring."""

    def __init__(self, name):
        if name not in ("fp32", "bf16"):
            raise SystemExit(f"--precision {name}: expected fp32 or bf16")
        self.name = name
        self.bf16 = name == "bf16"

    def out(self, y):
        return _Stored.apply(y) if self.bf16 else y

    def act(self, x):
        return _ActOperand.apply(x) if self.bf16 else x

    def weight(self, w):
        return _WeightOperand.apply(w) if self.bf16 else w

    def op(self, fn, *acts):
        """fn(*acts) as one op on activations: its result stored, its activation gradients
        rounded (fn's internals, norm statistics and softmax included, stay fp32)."""
        return self.out(fn(*[self.act(a) for a in acts]))

    def linear(self, x, w, b=None):
        """y = r(r(x) @ r(W).T + b) (x is already bf16 when a stored op produced it)"""
        if not self.bf16:
            return F.linear(x, w, b)
        return self.out(F.linear(self.act(x), self.weight(w), b))

    def router(self, x, w):
        """The MoE router's matmul: operands rounded as every matmul's, scores kept fp32 (and
        so is their gradient); x's gradient is an activation gradient."""
        if not self.bf16:
            return F.linear(x, w)
        return F.linear(self.act(x), self.weight(w))


FP32 = Policy("fp32")
_current = FP32


def use(name):
    """Sets the models' precision (the train subcommand's --precision)."""
    global _current
    _current = Policy(name)
    return _current


def current():
    return _current


def add_flag(p):
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="fp32 (default) or bf16: round to bfloat16 where `piper-compile "
                        "--precision bf16` does (test/oracle/precision.py)")
