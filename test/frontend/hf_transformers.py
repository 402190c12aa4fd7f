"""Hugging Face transformers' own model classes through piper.export (issue 38).

transformers is not packaged for Debian, so this runs where it is installed: the GPU test
machine (torch 2.x), as the `hf` part of test/frontend/on_gpu.sh. CPU work only (seconds):

    PYTHONPATH=python python3 test/frontend/hf_transformers.py OUT

For each class below, small (2 layers, width 64, vocabulary 256, T 32, B 4) and seeded, and for
each `attn_implementation` the class has of "eager" and "sdpa", it writes OUT/<case>/:
  model.mlir        piper.export of the module under the runtime's loss: the logits' cross
                    entropy against the runtime's targets, which are already shifted (the
                    targets of position t are token t + 1), so transformers' own label shift
                    is not used
  init.safetensors  the module's initial weights, as export writes them
  ref.json          10 AdamW steps of the module itself, trained by torch on the runtime's
                    batches (test/oracle/gpt_torch.py get_batch over OUT/data.bin, a copy of
                    test/e2e/Inputs/prose.txt; betas 0.9,
                    0.95, eps 1e-8, no weight decay, lr 1e-3): each step's loss
  names.json        the class's state_dict() names, its tied parameter names, and the names
                    export wrote, for the strict-load check here
and OUT/summary.json: per case "exported", "refused" (piper.ExportError: the frontend said what
it cannot map, by op and module path) or "error" (anything else: a bug), with the message, and
the torch and transformers versions. Exits 0 when every case exported or was refused by name,
1 on any other error, and 0 with a SKIP line when transformers cannot be imported.

The files come back with the GPU session's OUT and are committed under
test/frontend/Inputs/hf/, where lit tests train each export here against ref.json.

--dry-run runs the same code on test/frontend/models.py's GPT2 and Llama in place of the
transformers classes (Debian's torch 1.13, no transformers), so the plumbing is tested here
(test/frontend/hf-transformers-dry.test); its outputs are never committed."""
import argparse
import json
import os
import sys
import traceback

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "test", "oracle"))
sys.path.insert(0, HERE)
import gpt_torch  # noqa: E402  (the runtime's batches)
import piper  # noqa: E402

V, C, L, T, B = 256, 64, 2, 32, 4
STEPS, LR = 10, 1e-3

# (case, class, config class, config fields beyond the shared ones, implementations)
CASES = [
    ("gpt2", "GPT2LMHeadModel", "GPT2Config",
     dict(n_embd=C, n_layer=L, n_head=4, n_positions=T, vocab_size=V, resid_pdrop=0.0,
          embd_pdrop=0.0, attn_pdrop=0.0), ("eager", "sdpa")),
    ("llama", "LlamaForCausalLM", "LlamaConfig",
     dict(num_attention_heads=4, num_key_value_heads=2, intermediate_size=128),
     ("eager", "sdpa")),
    ("qwen3", "Qwen3ForCausalLM", "Qwen3Config",
     dict(num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128),
     ("eager", "sdpa")),
    ("qwen3_moe", "Qwen3MoeForCausalLM", "Qwen3MoeConfig",
     dict(num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=128,
          moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, norm_topk_prob=True,
          decoder_sparse_step=1, mlp_only_layers=[], output_router_logits=False),
     ("eager", "sdpa")),
    ("gpt_neox", "GPTNeoXForCausalLM", "GPTNeoXConfig",
     dict(num_attention_heads=4, intermediate_size=256, rotary_pct=0.25,
          use_parallel_residual=True, hidden_dropout=0.0, attention_dropout=0.0),
     ("eager", "sdpa")),
    ("gemma", "GemmaForCausalLM", "GemmaConfig",
     dict(num_attention_heads=4, num_key_value_heads=1, head_dim=16, intermediate_size=128),
     ("eager", "sdpa")),
    ("mistral", "MistralForCausalLM", "MistralConfig",
     dict(num_attention_heads=4, num_key_value_heads=2, intermediate_size=128,
          sliding_window=None), ("eager", "sdpa")),
]


def shared_fields():
    """The fields every decoder config but GPT-2's spells this way."""
    return dict(hidden_size=C, num_hidden_layers=L, vocab_size=V, max_position_embeddings=T,
                attention_dropout=0.0, use_cache=False)


def transformers_factory(cls_name, cfg_name, fields, impl):
    import transformers
    cfg_cls = getattr(transformers, cfg_name)
    merged = dict(fields) if cls_name == "GPT2LMHeadModel" else {**shared_fields(), **fields}
    merged["use_cache"] = False

    def make():
        cfg = cfg_cls(**merged)
        torch.manual_seed(0)
        cls = getattr(transformers, cls_name)
        try:  # transformers 5 picks an experts kernel too: the plain loop over experts
            model = cls._from_config(cfg, attn_implementation=impl, experts_implementation="eager")
        except TypeError:  # a version without that choice
            torch.manual_seed(0)
            model = cls._from_config(cfg, attn_implementation=impl)
        return model.float().train()
    return make


def lm_loss(model, tokens, targets):
    """The runtime's loss: mean cross entropy of the logits against the shifted targets."""
    logits = model(input_ids=tokens, use_cache=False).logits
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))


def dry_run_factory(name):
    import models

    def make():
        torch.manual_seed(0)
        if name == "gpt2":
            return models.GPT2(V=V, C=C, H=4, L=L, T=T)
        return models.Llama(V=V, C=C, H=4, KV=2, F_=128, L=L, T=T)
    return make


def dry_run_loss(model, tokens, targets):
    out = model(tokens, targets)
    return out[1] if isinstance(out, tuple) else out


def tied_names(model):
    """{alias: first name} for parameters reachable under several names."""
    from piper import _export
    first, tied = {}, {}
    for n, p in _export.all_parameters(model).items():
        if id(p) in first:
            tied[n] = first[id(p)]
        else:
            first[id(p)] = n
    return tied


def train_reference(model, loss_fn, data):
    """STEPS AdamW steps of the module itself on the runtime's batches; each step's loss."""
    params = list(dict((id(p), p) for p in model.parameters()).values())
    opt = torch.optim.AdamW(params, lr=LR, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.0,
                            foreach=False)
    losses = []
    for s in range(STEPS):
        x, y = gpt_torch.get_batch(data, s, B, T)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, x, y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


def run_case(make, loss_fn, out_dir, data):
    """Exports one module and trains a fresh copy of it; returns (status, message)."""
    model = make()
    os.makedirs(out_dir, exist_ok=True)
    tok, tgt = gpt_torch.get_batch(data, 0, B, T)
    try:
        piper.export(model, (tok, tgt), os.path.join(out_dir, "model.mlir"),
                     weights=os.path.join(out_dir, "init.safetensors"), loss=loss_fn)
    except piper.ExportError as err:
        return "refused", str(err)
    from piper import _safetensors
    written = sorted(_safetensors.read(os.path.join(out_dir, "init.safetensors"))[0])
    with open(os.path.join(out_dir, "names.json"), "w") as f:
        json.dump({"state_dict": list(model.state_dict()), "tied": tied_names(model),
                   "exported": written}, f, indent=1)
    losses = train_reference(make(), loss_fn, data)
    with open(os.path.join(out_dir, "ref.json"), "w") as f:
        json.dump(losses, f)
    return "exported", f"loss {losses[0]:.6f} -> {losses[-1]:.6f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--dry-run", action="store_true",
                    help="test/frontend/models.py's GPT2 and Llama in place of transformers")
    ap.add_argument("--only", help="comma-separated cases (gpt2, llama, ...)")
    a = ap.parse_args()
    torch.set_num_threads(1)
    versions = {"torch": torch.__version__}
    if a.dry_run:
        cases = [(n, dry_run_factory(n), dry_run_loss) for n in ("gpt2", "llama")]
        versions["transformers"] = None
    else:
        try:
            import transformers
        except ImportError as err:
            print(f"SKIP: transformers cannot be imported here ({err})")
            return 0
        versions["transformers"] = transformers.__version__
        cases = []
        for case, cls_name, cfg_name, fields, impls in CASES:
            if not hasattr(transformers, cls_name):
                cases.append((case, None, f"transformers {transformers.__version__} has no "
                                          f"{cls_name}"))
                continue
            for impl in impls:
                cases.append((f"{case}-{impl}",
                              transformers_factory(cls_name, cfg_name, fields, impl), lm_loss))
    if a.only:
        keep = set(a.only.split(","))
        cases = [c for c in cases if c[0] in keep or c[0].rsplit("-", 1)[0] in keep]
    os.makedirs(a.out, exist_ok=True)
    data_path = os.path.join(a.out, "data.bin")  # English prose: the losses move
    with open(os.path.join(ROOT, "test", "e2e", "Inputs", "prose.txt"), "rb") as src, \
            open(data_path, "wb") as f:
        f.write(src.read())
    data = gpt_torch.load_data(data_path, V)
    summary = {"versions": versions, "shape": dict(V=V, C=C, L=L, T=T, B=B, steps=STEPS, lr=LR),
               "cases": {}}
    bad = 0
    for name, make, loss_fn in cases:
        if make is None:
            status, msg = "absent", loss_fn
        else:
            try:
                status, msg = run_case(make, loss_fn, os.path.join(a.out, name), data)
            except Exception as err:  # a bug of ours or an unforeseen trace: kept, reported
                status = "error"
                msg = f"{type(err).__name__}: {err}\n{traceback.format_exc(limit=-6)}"
                bad += 1
        summary["cases"][name] = {"status": status, "message": msg}
        first = msg.splitlines()[0] if msg else ""
        print(f"{status.upper():8} {name}: {first[:300]}")
    with open(os.path.join(a.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    print(f"{len(cases)} cases: " + ", ".join(
        f"{sum(c['status'] == s for c in summary['cases'].values())} {s}"
        for s in ("exported", "refused", "absent", "error")))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
