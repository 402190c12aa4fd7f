"""An exported model trained by Piper against the same module trained by PyTorch.

  vs_torch.py export --model NAME [model flags] --batch B --seq T -o DIR
      writes DIR/model.mlir and DIR/init.safetensors (piper.export) from the seeded module
  vs_torch.py train --model NAME [model flags] --batch B --seq T --data FILE --steps N --lr LR
      --losses OUT.json [--grads OUT.safetensors] [--final OUT.safetensors]
      trains the module itself (torch.optim.AdamW, betas 0.9/0.95, eps 1e-8 or --adam-eps, no
      weight decay)
      on the runtime's batches (test/oracle/gpt_torch.py get_batch) and writes each step's
      loss, the step-0 gradients and the final state under the checkpoint's names (tied
      parameters once, as export wrote them; with --init, the export's buffers too), for
      test/oracle/gpt_torch.py compare
  vs_torch.py load --model NAME [model flags] --checkpoint FILE
      piper.load(FILE, module) into a fresh module with strict=True, and checks that every
      parameter name, tied ones included, then holds exactly the checkpoint's tensor

Models: test/frontend/models.py (gpt2, gpt2-tanh, gpt2-nobias-tanh, gpt2-sdpa, gpt2-smooth: label
smoothing 0.1, llama, llama-interleaved, llama-mha, neox, neox-smooth, moe-qwen3, moe-olmoe and moe-mixtral:
Llama with Hugging Face's MoE blocks, ops: the general ops no fused op covers) and
test/frontend/hf_idioms.py (the Hugging Face idioms: hf-llama, hf-qwen2, hf-qwen3, hf-gemma,
hf-neox, hf-gpt2, meta-llama)."""
import argparse
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "oracle"))
sys.path.insert(0, HERE)
import gpt_torch  # noqa: E402  (the runtime's batches)
import hf_idioms  # noqa: E402
import models  # noqa: E402
import piper  # noqa: E402
from piper import _export, _safetensors  # noqa: E402


def make_model(a):
    V, C, L, T = a.vocab, a.dim, a.layers, a.seq
    if a.model in hf_idioms.FAMILIES:
        return hf_idioms.make(a.model, V, C, a.heads, a.kv_heads, a.ffn, L, T)
    if a.model == "gpt2":
        return models.GPT2(V=V, C=C, H=a.heads, L=L, T=T)
    if a.model == "gpt2-tanh":  # piper-gen gpt's own layers: the bench's like for like
        return models.GPT2(V=V, C=C, H=a.heads, L=L, T=T, tanh_gelu=True)
    if a.model == "gpt2-nobias-tanh":
        return models.GPT2(V=V, C=C, H=a.heads, L=L, T=T, bias=False, tanh_gelu=True)
    if a.model == "gpt2-sdpa":
        m = models.GPT2(V=V, C=C, H=a.heads, L=L, T=T)
        for blk in m.transformer.h:
            blk.attn.use_sdpa = True
        return m
    if a.model in ("llama", "llama-interleaved", "llama-mha"):
        KV = a.heads if a.model == "llama-mha" else a.kv_heads
        return models.Llama(V=V, C=C, H=a.heads, KV=KV, F_=a.ffn, L=L, T=T,
                            interleaved=a.model == "llama-interleaved")
    if a.model == "gpt2-smooth":  # F.cross_entropy(label_smoothing=0.1)
        return models.GPT2(V=V, C=C, H=a.heads, L=L, T=T, label_smoothing=0.1)
    if a.model in ("neox", "neox-smooth"):
        return models.NeoX(V=V, C=C, H=a.heads, L=L, T=T,
                           label_smoothing=0.1 if a.model == "neox-smooth" else 0.0)
    if a.model in ("moe-qwen3", "moe-olmoe", "moe-mixtral"):
        return models.MoE(V=V, C=C, H=a.heads, KV=a.kv_heads, E=a.experts, K=a.top_k,
                          Fe=a.expert_ffn, L=L, T=T, style=a.model[4:])
    if a.model == "ops":
        return models.OpsMix(V=V, C=C, T=T)
    raise SystemExit(f"unknown --model {a.model}")


def annotate(model, a):
    """--stages S: the blocks split evenly into S pipeline stages by module tags (PP), the
    embeddings with the first and the final norm and head with the last by the operand rule.
    --tp: each block's attention and MLP modules tagged TP = 0 (the tensor-parallel regions,
    as piper-gen tags them), the residual adds staying with the block."""
    if a.stages <= 1 and not a.tp:
        return
    if a.model in hf_idioms.FAMILIES:
        blocks, first = hf_idioms.blocks(model), hf_idioms.first_module(model)
    else:
        blocks = model.transformer.h if hasattr(model, "transformer") else model.layers
        first = (model.transformer.wte if hasattr(model, "transformer") else
                 model.gpt_neox.embed_in if hasattr(model, "gpt_neox") else model.tok_embeddings)
    per = -(-len(blocks) // max(a.stages, 1))
    for i, blk in enumerate(blocks):
        piper.annotate(blk, PP=i // per, layer=i)
        if a.tp:
            parts = (hf_idioms.tp_parts(blk) if a.model in hf_idioms.FAMILIES else
                     (getattr(blk, p) for p in ("attn", "mlp", "attention", "feed_forward")
                      if hasattr(blk, p)))
            for part in parts:
                piper.annotate(part, TP=0)
    piper.annotate(first, PP=0)


def cmd_export(a):
    torch.manual_seed(0)
    m = make_model(a)
    annotate(m, a)
    tok = torch.randint(0, a.vocab, (a.batch, a.seq))
    tgt = torch.randint(0, a.vocab, (a.batch, a.seq))
    os.makedirs(a.output, exist_ok=True)
    piper.export(m, (tok, tgt), os.path.join(a.output, "model.mlir"),
                 weights=os.path.join(a.output, "init.safetensors"))


def checkpoint_names(model):
    """{name in the checkpoint: parameter}: every parameter once, under its first name."""
    seen, out = set(), {}
    for n, p in _export.all_parameters(model).items():
        if id(p) not in seen:
            seen.add(id(p))
            out[n] = p
    return out


def cmd_train(a):
    torch.set_num_threads(1)
    m = make_model(a)
    P = checkpoint_names(m)
    opt = torch.optim.AdamW(list(P.values()), lr=a.lr, betas=(0.9, 0.95), eps=a.adam_eps,
                            weight_decay=0.0, foreach=False)
    data = gpt_torch.load_data(a.data, a.vocab)
    losses = []
    for s in range(a.steps):
        x, y = gpt_torch.get_batch(data, s, a.batch, a.seq)
        opt.zero_grad(set_to_none=True)
        out = m(x, y)
        loss = out[1] if isinstance(out, tuple) else out
        loss.backward()
        if s == 0 and a.grads:
            _safetensors.write(a.grads, {n: p.grad for n, p in P.items() if p.grad is not None})
        opt.step()
        losses.append(float(loss))
    json.dump(losses, open(a.losses, "w"))
    if a.final:  # the parameters, and the non-trained state export wrote (it never changes)
        final = {n: p.detach() for n, p in P.items()}
        if a.init:
            final.update({n: t for n, t in _safetensors.read(a.init)[0].items() if n not in final})
        _safetensors.write(a.final, final)


def cmd_load(a):
    m = make_model(a)
    m.load_state_dict(piper.load(a.checkpoint, m), strict=True)  # raises on a missing name
    ckpt, _ = _safetensors.read(a.checkpoint)
    params = _export.all_parameters(m)
    checked = 0
    for n, p in params.items():  # every name, the tied ones too, holds the checkpoint's value
        canonical = next(c for c, q in checkpoint_names(m).items() if q is p)
        if not torch.equal(p.detach(), ckpt[canonical]):
            print(f"load: {n} differs from the checkpoint's {canonical}")
            return 1
        checked += 1
    print(f"load: strict=True ok; {checked} parameter names equal the checkpoint's tensors")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("export", "train", "load"):
        p = sub.add_parser(name)
        p.add_argument("--model", required=True)
        p.add_argument("--vocab", type=int, default=64)
        p.add_argument("--dim", type=int, default=32)
        p.add_argument("--heads", type=int, default=4)
        p.add_argument("--kv-heads", type=int, default=2)
        p.add_argument("--ffn", type=int, default=48)
        p.add_argument("--layers", type=int, default=2)
        p.add_argument("--seq", type=int, default=16)
        p.add_argument("--batch", type=int, default=4)
        p.add_argument("--experts", type=int, default=4)
        p.add_argument("--top-k", type=int, default=2)
        p.add_argument("--expert-ffn", type=int, default=32)
        p.add_argument("--stages", type=int, default=1)
        p.add_argument("--tp", action="store_true", help="tag the tensor-parallel regions")
        if name == "export":
            p.add_argument("-o", "--output", required=True)
        if name == "train":
            p.add_argument("--data", required=True)
            p.add_argument("--steps", type=int, required=True)
            p.add_argument("--lr", type=float, required=True)
            p.add_argument("--adam-eps", type=float, default=1e-8)
            p.add_argument("--losses", required=True)
            p.add_argument("--grads")
            p.add_argument("--final")
            p.add_argument("--init", help="the export's weights: its buffers join --final")
        if name == "load":
            p.add_argument("--checkpoint", required=True)
    a = ap.parse_args()
    return {"export": cmd_export, "train": cmd_train, "load": cmd_load}[a.cmd](a) or 0


if __name__ == "__main__":
    sys.exit(main())
