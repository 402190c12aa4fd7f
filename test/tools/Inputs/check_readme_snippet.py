"""Runs docs/getting-started.md's checkpoint-reading snippet (SNIPPET, extracted by
readme-checkpoint.test) in the folder holding out.safetensors, and checks what it read against
the oracle's reader: every tensor, its shape and its values bit for bit, and the parameter
names of "The model" (docs/models.md).
Usage: check_readme_snippet.py SNIPPET ORACLE_DIR L C V T"""
import contextlib
import io
import sys

snippet, oracle_dir = sys.argv[1], sys.argv[2]
L, C, V, T = (int(x) for x in sys.argv[3:7])
sys.path.insert(0, oracle_dir)
import gpt_torch  # noqa: E402
import safetensors_io  # noqa: E402

out = io.StringIO()
scope = {}
with contextlib.redirect_stdout(out):
    exec(open(snippet).read(), scope)
ref = safetensors_io.read("out.safetensors")
ckpt, params = scope["ckpt"], scope["params"]
assert set(ckpt) == set(ref), (sorted(set(ckpt) ^ set(ref)))
for name, t in ref.items():
    assert ckpt[name].dtype == t.dtype and ckpt[name].shape == t.shape, name
    assert bool((ckpt[name] == t).all()), f"{name}: values differ"
expected = {name for name, *_ in gpt_torch.param_specs(L, C, V, T)}
assert set(params) == expected, sorted(set(params) ^ expected)
print(out.getvalue().strip())
print(f"snippet ok: {len(ckpt)} tensors, {len(params)} parameters")
