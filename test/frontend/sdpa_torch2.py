"""The torch 2 path of piper.export: F.scaled_dot_product_attention(is_causal=True). Debian's
torch 1.13 has no SDPA, so this cannot run in CI here; a machine with torch >= 2 runs it:

    PYTHONPATH=python python3 test/frontend/sdpa_torch2.py OUTDIR

It exports test/frontend/models.py's GPT2 twice, with manual attention and with SDPA (the same
seeded weights), checks that both export without a refusal, that the SDPA IR holds the
attention as tdag.gqa_attention (which --piper-fuse turns into tdag.attention on the packed
c_attn output), and that both modules give the same torch loss (they are the same function:
within 1e-5 relative); it writes OUTDIR/{manual,sdpa}/model.mlir and init.safetensors and
OUTDIR/sdpa/ref.json (10 torch steps on OUTDIR/data.bin, vs_torch.py's training) so a machine
with piper-compile can train the SDPA export and compare (test/frontend/vs_torch.sh's steps).
Prints SKIP and exits 0 under torch < 2. Exits 1 on any failed check."""
import json
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)


def main():
    if int(torch.__version__.split(".")[0]) < 2 or not hasattr(torch.nn.functional,
                                                               "scaled_dot_product_attention"):
        print(f"SKIP: torch {torch.__version__} has no scaled_dot_product_attention")
        return 0
    out = sys.argv[1] if len(sys.argv) > 1 else "sdpa-out"
    os.makedirs(out, exist_ok=True)
    import random
    r = random.Random(3)
    with open(os.path.join(out, "data.bin"), "wb") as f:
        f.write(bytes(r.randrange(64) for _ in range(4000)))
    py = sys.executable
    ok = True
    for model in ("gpt2", "gpt2-sdpa"):
        d = os.path.join(out, "sdpa" if model == "gpt2-sdpa" else "manual")
        rc = subprocess.run([py, os.path.join(HERE, "vs_torch.py"), "export", "--model", model,
                             "-o", d]).returncode
        ok &= rc == 0
        rc = subprocess.run([py, os.path.join(HERE, "vs_torch.py"), "train", "--model", model,
                             "--data", os.path.join(out, "data.bin"), "--steps", "10", "--lr",
                             "1e-2", "--losses", os.path.join(d, "ref.json")]).returncode
        ok &= rc == 0
    ir = open(os.path.join(out, "sdpa", "model.mlir")).read()
    has = '"tdag.gqa_attention"' in ir and '"tdag.softmax"' not in ir
    print(f"{'PASS' if has else 'FAIL'} sdpa export: attention as tdag.gqa_attention")
    ok &= has
    a = json.load(open(os.path.join(out, "manual", "ref.json")))
    b = json.load(open(os.path.join(out, "sdpa", "ref.json")))
    worst = max(abs(x - y) / abs(x) for x, y in zip(a, b))
    same = len(a) == len(b) == 10 and worst <= 1e-5
    print(f"{'PASS' if same else 'FAIL'} torch losses, manual attention vs SDPA: worst "
          f"relative difference {worst:.2e} (tolerance 1e-5)")
    ok &= same
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
