"""piper.export's refusals: each bad model below must stop with an ExportError whose message
names the op, the module path and the user's source line (the line marked `# <- refused`),
and must leave no output file. Prints PASS/FAIL per case; exits 1 if any fails.

Cases: an op with no tdag mapping (torch.cumsum), data-dependent control flow (an `if` on a
tensor's value), a float64 parameter, a cast to float16, dropout with p > 0 (refused: Piper
has no dropout), a mask that depends on the data, cross entropy with ignore_index >= 0, and
float tokens (the example inputs: the line of the export call)."""
import inspect
import os
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import piper  # noqa: E402

V, C = 16, 8


def refused_line(cls):
    """The line of `cls`'s source marked `# <- refused`."""
    lines, first = inspect.getsourcelines(cls)
    return next(first + i for i, l in enumerate(lines) if "# <- refused" in l)


class Cumsum(nn.Module):
    def forward(self, x):
        return torch.cumsum(x, dim=1)  # <- refused


class DataDependent(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # <- refused
            return x * 2
        return x


class Float64(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(C, dtype=torch.float64))

    def forward(self, x):
        return x * self.w.float()  # <- refused


class Half(nn.Module):
    def forward(self, x):
        return x.half().float()  # <- refused


class Dropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(x)  # <- refused


class DataMask(nn.Module):
    def forward(self, x):
        return x.masked_fill(x > 0, 0.0)  # <- refused


class Model(nn.Module):
    """tokens -> embedding -> `inner` (at blocks.1) -> head -> cross entropy."""

    def __init__(self, inner, ignore_index=-1):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.blocks = nn.ModuleList([nn.Identity(), inner])
        self.head = nn.Linear(C, V)
        self.ignore_index = ignore_index

    def forward(self, tokens, targets):
        x = self.blocks[1](self.blocks[0](self.wte(tokens)))
        logits = self.head(x).view(-1, V)
        return F.cross_entropy(logits, targets.view(-1), ignore_index=self.ignore_index)  # <- refused


def check(name, model, want, tokens=None):
    tokens = torch.randint(0, V, (2, 4)) if tokens is None else tokens
    targets = torch.randint(0, V, (2, 4))
    out = os.path.join(tempfile.mkdtemp(), "m.mlir")
    try:
        piper.export(model, (tokens, targets), out, weights=out + ".safetensors")
    except piper.ExportError as err:
        msg = str(err)
        missing = [w for w in want if w not in msg]
        if missing or os.path.exists(out) or os.path.exists(out + ".safetensors"):
            print(f"FAIL {name}: message lacks {missing} or an output exists: {msg}")
            return False
        print(f"PASS {name}: {msg}")
        return True
    print(f"FAIL {name}: exported without an error")
    return False


def main():
    here = os.path.abspath(__file__)
    ok = True
    for name, inner, op in [("unmapped-op", Cumsum(), "aten.cumsum"),
                            ("data-dependent-control-flow", DataDependent(), "reading a tensor's value"),
                            ("float64-parameter", Float64(), "torch.float64"),
                            ("cast-to-half", Half(), "aten._to_copy"),
                            ("dropout", Dropout(), "op Dropout"),
                            ("data-dependent-mask", DataMask(), "aten.gt")]:
        path = "blocks.1.drop" if name == "dropout" else "blocks.1"
        ok &= check(name, Model(inner), [op, f"module {path}",
                                         f"{here}:{refused_line(type(inner))}"])
    ok &= check("ignore-index", Model(nn.Identity(), ignore_index=0),
                ["aten.nll_loss_forward", "module (the root module)",
                 f"{here}:{refused_line(Model)}", "ignore_index=0"])
    ok &= check("float-tokens", Model(nn.Identity()), [f"{here}:", "integer"], torch.rand(2, 4))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
