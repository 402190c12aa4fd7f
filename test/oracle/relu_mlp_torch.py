"""PyTorch oracle for the relu MLP of test/e2e/relu_mlp_vs_pytorch.test (the model of
test/e2e/Inputs/relu_mlp.mlir): tokens (B,T) -> h = relu(wte[tokens] fc1^T) -> logits =
h wte^T (the tied embedding) -> mean cross-entropy against the next tokens. It checks
tdag.relu/relu_grad end to end (op list, shared gradient rule, kernels) against torch.relu.

  relu_mlp_torch.py init --vocab V --dim C --seed S -o INIT.safetensors
  relu_mlp_torch.py train --vocab V --dim C --batch B --seq T --init ... --data ... --steps N
      --lr LR [--weight-decay WD] [--losses ...] [--grads ...] [--final ...]

Optimizer, data order and the compare metrics are GPT's (gpt_torch.py: AdamW, weight decay on
2-D tensors only; `gpt_torch.py compare` compares the outputs)."""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_torch as common  # noqa: E402  (optimizer, data)
import oracle_common as oc  # noqa: E402
import safetensors_io as st  # noqa: E402


def add_model_args(p, batch=False):
    p.add_argument("--vocab", type=int, required=True, help="V")
    p.add_argument("--dim", type=int, required=True, help="C")
    p.add_argument("--seq", type=int, default=16, help="T")
    if batch:
        p.add_argument("--batch", type=int, required=True, help="B")


def shapes(a):
    return {"embed": (a.vocab, a.dim), "fc1": (a.dim, a.dim)}


def cmd_init(a):
    g = torch.Generator().manual_seed(a.seed)
    st.write(a.output, {n: torch.randn(s, generator=g) * 0.3 for n, s in shapes(a).items()})


def cmd_train(a):
    P = oc.load_init(a, shapes(a))
    opt = common.make_optimizer(P, a.lr, a.weight_decay)
    data = common.load_data(a.data, a.vocab)

    def loss_of(x, y):
        h = torch.relu(P["embed"][x] @ P["fc1"].t())
        logits = h @ P["embed"].t()
        return torch.nn.functional.cross_entropy(logits.reshape(-1, a.vocab), y.reshape(-1))

    losses = oc.train_steps(a, P, opt, lambda s: common.get_batch(data, s, a.batch, a.seq),
                            loss_of)
    oc.write_outputs(a, P, losses)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    oc.init_parser(sub, add_model_args).set_defaults(fn=cmd_init)
    oc.train_parser(sub, add_model_args).set_defaults(fn=cmd_train)
    a = ap.parse_args()
    return a.fn(a) or 0


if __name__ == "__main__":
    sys.exit(main())
