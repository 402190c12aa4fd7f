"""Piper's PyTorch frontend: bring your own model (docs/frontend.md).

    import piper
    piper.annotate(model.transformer.h[0], PP=0)            # tags (or `with piper.annotate("PP"):`)
    piper.export(model, (tokens, targets), "model.mlir")  # and model.init.safetensors
    #   piper-compile model.mlir -o train; ./train ...  (starts from model.init.safetensors)
    model.load_state_dict(piper.load("out.safetensors", model), strict=True)

Pure Python over torch (Debian's 1.13 or torch 2.x); imports with PYTHONPATH=python from the
repository root, or PYTHONPATH=PREFIX/lib/python after `make install PREFIX=...`. The
compiler and runtime stay C: this package only writes their inputs and
reads their checkpoints back.
"""
from ._annotate import annotate
from ._export import ExportError
from . import _export
from . import _safetensors

__all__ = ["annotate", "export", "load", "ExportError"]


def export(model, example, path, weights=True, loss=None):
    """Traces loss(model, tokens, targets) (default: model(tokens, targets), its scalar loss)
    for example = (tokens, targets), both (B, T) integer tensors, and writes `path`: a tdag
    module piper-compile takes, with tokens and targets the runtime's inputs. Also writes
    `weights`, a safetensors file of the module's own initial values (by default `path` with
    .mlir replaced by .init.safetensors; a path; False for none): every parameter the graph
    uses under its named_parameters() name (tied parameters once, under their first name) and
    the buffers it reads as non-trained state. Its absolute path is recorded in the module, so
    the compiled binary starts from it unless told --init-checkpoint FILE or --init-random.
    The model is left unchanged. Raises ExportError naming the op, the module path and the
    source line for what it cannot map."""
    _export.export(model, example, path, weights=weights, loss=loss)


def load(path, model=None):
    """A state_dict from a checkpoint a run saved (or the weights export wrote): its parameters
    and buffers (AdamW's moments and piper.const.* tensors dropped). With `model`, names the
    checkpoint lacks are filled as the module has them: tied parameters under every name they
    have (so model.load_state_dict(..., strict=True) loads), and buffers the export folded into
    the graph (a causal mask) and parameters the loss never reads from the module's own.
    Without it, only the export's own weights file restores tied names (its metadata lists
    them): a run's checkpoint holds each tied parameter once, under its first name."""
    tensors, metadata = _safetensors.read(path)
    sd = {k: v for k, v in tensors.items()
          if not k.startswith("optim.") and not k.startswith("piper.")}
    if model is None:
        # the weights piper.export wrote name the tied aliases in their metadata; a run's
        # checkpoint does not carry it (the runtime writes its own), so pass `model` there
        import json
        for alias, name in json.loads(metadata.get("piper.tied", "{}")).items():
            if name in sd:
                sd.setdefault(alias, sd[name])
        return sd
    by_id = {}
    for name, p in _export.all_parameters(model).items():
        by_id.setdefault(id(p), []).append(name)
    for names in by_id.values():
        have = [n for n in names if n in sd]
        if have:
            for n in names:
                sd.setdefault(n, sd[have[0]])
    for name, t in model.state_dict().items():
        if name not in sd:  # a buffer folded into the graph, or a parameter the loss never reads
            sd[name] = t.detach().clone()
    return sd
