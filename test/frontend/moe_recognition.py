"""How piper.export finds mixture-of-experts blocks (python/piper/_moe.py): by structure (Hugging
Face's Qwen3-MoE and Mixtral blocks of models.py, recognised as written), by the hint
piper.annotate(block, moe={...}) for a block whose children's names say nothing (its gate and
up told apart by the probe), and not at all with moe=False (the routing then stops the trace,
refused as data-dependent: F.one_hot reads the expert ids' values). Prints PASS/FAIL per check; exits 1 on a miss."""
import os
import re
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
sys.path.insert(0, HERE)
import models  # noqa: E402
import piper  # noqa: E402
from piper import _safetensors  # noqa: E402

V, C, E, K, Fe = 16, 8, 4, 2, 12


class Plain(nn.Module):
    """A block named as no library names it: router `r`, experts `mlps`, each expert's linears
    `a` (up), `b` (gate) and `c` (down); its top-k weights are renormalised."""

    def __init__(self):
        super().__init__()
        self.r = nn.Linear(C, E, bias=False)
        self.mlps = nn.ModuleList(nn.ModuleDict(dict(a=nn.Linear(C, Fe, bias=False),
                                                     b=nn.Linear(C, Fe, bias=False),
                                                     c=nn.Linear(Fe, C, bias=False)))
                                  for _ in range(E))

    def forward(self, x):
        p = self.r(x).softmax(-1)
        w, ex = p.topk(K, dim=-1)
        w = w / w.sum(-1, keepdim=True)
        y = torch.zeros_like(x)
        for e, m in enumerate(self.mlps):
            hit = ((ex == e).float() * w).sum(-1, keepdim=True)
            y = y + hit * m["c"](F.silu(m["b"](x)) * m["a"](x))
        return y


class Host(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.mlp = block
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        x = self.wte(tokens)
        y = self.mlp(x)
        y = y[0] if isinstance(y, tuple) else y
        return F.cross_entropy(self.head(x + y).view(-1, V), targets.view(-1))


def export(model):
    d = tempfile.mkdtemp()
    tok = torch.randint(0, V, (2, 4))
    piper.export(model, (tok, torch.randint(0, V, (2, 4))), f"{d}/m.mlir", weights=f"{d}/w.safetensors")
    return open(f"{d}/m.mlir").read(), _safetensors.read(f"{d}/w.safetensors")[0]


def expert_operands(ir):
    """The names of moe_experts' weight operands, in order."""
    names = dict(re.findall(r'(%v\d+) = "tdag.param"\(\) \{init = "normal", name = "([^"]+)"', ir))
    ops = re.search(r'"tdag.moe_experts"\(([^)]*)\)', ir).group(1).split(", ")[2:]
    return [names[o] for o in ops]


def main():
    ok = True

    def report(name, cond, detail):
        nonlocal ok
        print(f"{'PASS' if cond else 'FAIL'} {name}: {detail}")
        ok &= bool(cond)

    torch.manual_seed(0)
    for style, block in (("qwen3", models.Qwen3MoeSparseMoeBlock(C, E, K, Fe)),
                         ("mixtral", models.MixtralSparseMoeBlock(C, E, K, Fe))):
        ir, w = export(Host(block))
        names = expert_operands(ir)
        roles = ("gate_proj", "up_proj", "down_proj") if style == "qwen3" else ("w1", "w3", "w2")
        want = [f"mlp.experts.{e}.{r}.weight" for r in roles for e in range(E)]
        report(f"{style}-by-structure", names == want and "tdag.moe_topk" in ir and
               "EP = 0" in ir and set(want) <= set(w),
               f"moe_experts reads {names[0]} .. {names[-1]}; the weights file holds them")
    torch.manual_seed(0)
    plain = Plain()
    for m in plain.mlps:  # the up and gate linears differ, so the wrong order would not match
        nn.init.normal_(m["a"].weight, std=0.5)
    try:
        export(Host(Plain()))
        report("plain-without-hint", False, "exported")
    except piper.ExportError as err:
        report("plain-without-hint", "top_k unknown" not in str(err) and "op aten" in str(err),
               f"not recognised (no top_k attribute), so traced and refused: {str(err)[:120]}")
    piper.annotate(plain, moe={"top_k": K})
    ir, _ = export(Host(plain))
    names = expert_operands(ir)
    report("plain-with-hint", names[:E] == [f"mlp.mlps.{e}.b.weight" for e in range(E)] and
           names[E:2 * E] == [f"mlp.mlps.{e}.a.weight" for e in range(E)],
           f"gate = b, up = a (told by the probe): {names[0]}, {names[E]}, {names[2 * E]}")
    off = models.Qwen3MoeSparseMoeBlock(C, E, K, Fe)
    piper.annotate(off, moe=False)
    try:
        export(Host(off))
        report("moe-false", False, "exported")
    except piper.ExportError as err:
        report("moe-false", "module mlp" in str(err) and "data-dependent" in str(err),
               f"left to the trace, whose routing reads values: {str(err)[:150]}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
