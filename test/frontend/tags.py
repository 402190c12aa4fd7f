"""piper.annotate's tags as piper.export writes them: each op of the exported IR carries the tags
the rules of python/piper/_annotate.py give it. The lines marked `# tags: {...}` below must
export to ops with exactly those tags (every op whose location is that line); prints PASS/FAIL
per marked line and exits 1 on any failure.

Rules checked: a module's tags reach every op its forward creates; an inner annotated module
adds to and overrides its parent's; `with piper.annotate("PP"):` regions are auto-indexed per
name in trace order and nest like modules; an op outside every annotated module and region
takes the tags of its operand computed last (the embeddings' sum, the head and the loss);
parameters, inputs and an op with no tagged operand (wpe's rows) take their first user's
tags."""
import inspect
import os
import re
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import piper  # noqa: E402

V, C, T = 16, 8, 4


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(C, C)

    def forward(self, x):
        return torch.tanh(self.fc(x))  # tags: {"stage": 0, "layer": 7, "mlp": 1}


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = piper.annotate(Mlp(), layer=7, mlp=1)  # inner: adds mlp, overrides layer

    def forward(self, x):
        y = x * 2.0  # tags: {"stage": 0, "layer": 3}
        return y + self.mlp(y)  # tags: {"stage": 0, "layer": 3}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = piper.annotate(nn.Embedding(V, C), embed=0)
        self.wpe = nn.Embedding(T + 2, C)
        self.block = piper.annotate(Block(), stage=0, layer=3)
        self.head = nn.Linear(C, V)

    def forward(self, tokens, targets):
        pos = self.wpe(torch.arange(T))  # tags: {"embed": 0}
        x = self.wte(tokens) + pos  # tags: {"embed": 0}
        x = self.block(x)
        with piper.annotate("PP"):
            x = x * 3.0  # tags: {"PP": 0}
        with piper.annotate("PP"):
            x = x * 4.0  # tags: {"PP": 1}
            with piper.annotate("sub"):
                x = x + 1.0  # tags: {"PP": 1, "sub": 0}
        logits = self.head(x)  # tags: {"PP": 1, "sub": 0}
        return F.cross_entropy(logits.view(-1, V), targets.view(-1))  # tags: {"PP": 1, "sub": 0}


def parse_tags(text):
    return {k: int(v) for k, v in re.findall(r"(\w+) = (-?\d+) : i64", text)}


def main():
    out = os.path.join(tempfile.mkdtemp(), "m.mlir")
    piper.export(Model(), (torch.randint(0, V, (2, T)), torch.randint(0, V, (2, T))), out)
    ir = open(out).read().splitlines()
    here = os.path.abspath(__file__)
    src, _ = inspect.getsourcelines(sys.modules[__name__])
    first = 1  # a module's source starts at line 1
    ok = True
    # the ops of each source line, with their tags
    by_line = {}
    for l in ir:
        m = re.search(r'loc\("([^"]+)":(\d+):0\)', l)
        t = re.search(r"tags = \{([^}]*)\}", l)
        if m and t and m.group(1) == here:
            by_line.setdefault(int(m.group(2)), []).append((l.split('"')[1], parse_tags(t.group(1))))
    for i, line in enumerate(src):
        m = re.search(r"# tags: (\{[^}]*\})\s*$", line)
        if not m:
            continue
        want = {k: int(v) for k, v in eval(m.group(1)).items()}
        ops = by_line.get(first + i, [])
        bad = [(op, tags) for op, tags in ops if tags != want]
        if not ops or bad:
            print(f"FAIL line {first + i}: want {want}, got {ops}")
            ok = False
        else:
            print(f"PASS line {first + i} ({', '.join(sorted({op for op, _ in ops}))}): {want}")
    # leaves: the parameters of wte carry its tags, those of the head the loss's chain's
    for name, want in [("wte.weight", {"embed": 0}), ("head.weight", {"PP": 1, "sub": 0}),
                       ("block.mlp.fc.weight", {"stage": 0, "layer": 7, "mlp": 1})]:
        line = next(l for l in ir if f'name = "{name}"' in l)
        got = parse_tags(re.search(r"tags = \{([^}]*)\}", line).group(1))
        print(f"{'PASS' if got == want else 'FAIL'} param {name}: {got}")
        ok &= got == want
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
