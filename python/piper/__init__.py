"""Piper's PyTorch frontend: bring your own model (docs/frontend.md).

    import piper
    piper.annotate(model.transformer.h[0], PP=0)            # tags (or `with piper.annotate("PP"):`)
    piper.export(model, (tokens, targets), "model.mlir", weights="init.safetensors")
    #   piper-compile model.mlir -o train; ./train --init-checkpoint init.safetensors ...
    model.load_state_dict(piper.load("out.safetensors", model), strict=True)

Pure Python over torch (Debian's 1.13 or torch 2.x); imports with PYTHONPATH=python from the
repository root. The compiler and runtime stay C: this package only writes their inputs and
reads their checkpoints back.
"""
from ._annotate import annotate
from ._export import ExportError
from ._safetensors import CheckpointError
from . import _export
from . import _record
from . import _safetensors

__all__ = ["annotate", "export", "load", "ExportError", "CheckpointError"]


def export(model, example, path, weights=None, loss=None):
    """Traces loss(model, tokens, targets) (default: model(tokens, targets), its scalar loss)
    for example = (tokens, targets), both (B, T) integer tensors, and writes `path`: a tdag
    module piper-compile takes, with tokens and targets the runtime's inputs. With `weights`,
    also writes a safetensors file --init-checkpoint loads: every parameter the graph uses under
    its named_parameters() name (tied parameters once, under their first name) and the buffers
    it reads as non-trained state. The model is left unchanged. Raises ExportError naming the
    op, the module path and the source line for what it cannot map."""
    _export.export(model, example, path, weights=weights, loss=loss)


def load(path, model=None, export_weights=None):
    """A state_dict from a checkpoint a run saved (or the weights export wrote): its parameters
    and buffers (AdamW's optim.* moments and piper.const.* tensors dropped), read with the
    checks of python/piper/_safetensors.py. Raises CheckpointError (a ValueError) naming the
    file for a malformed file, and, with `model`, for one that is not a checkpoint of it.

    The names a checkpoint may lack and `load` fills are only: tied parameters' other names
    (from their partner in the file), buffers the export folded into the graph, and parameters
    the loss never reads (both from `model`). The export records the last two in its weights
    file's metadata; a run's checkpoint does not carry them (the runtime writes its own), so
    for it pass `export_weights`, the weights file piper.export wrote, whose header alone is
    read. Without a record, `model`'s buffers the file lacks are filled (Piper never trains a
    buffer: the module's value is the export's) and a missing parameter is refused. Any other
    name `model` has and the file lacks is refused, so load_state_dict(..., strict=True) means
    what it says. Without `model`, only the tied names the file's own metadata lists come back."""
    tensors, metadata = _safetensors.read(path)
    sd = {k: v for k, v in tensors.items()
          if not k.startswith("optim.") and not k.startswith("piper.")}
    record_path = path
    if export_weights is not None:
        metadata, record_path = _safetensors.read_header(export_weights).metadata, export_weights
    record = _record.read(record_path, metadata)
    for alias, name in record.tied.items():
        if name in sd:
            sd.setdefault(alias, sd[name])
    if model is None:
        return sd
    if export_weights is not None and record.unused is None:
        raise CheckpointError(f"{export_weights}: its metadata has no piper.unused (written by "
                              f"an older piper.export): export again to load {path} against "
                              f"it")
    by_id = {}
    for name, p in _export.all_parameters(model).items():
        by_id.setdefault(id(p), []).append(name)
    params = {n for names in by_id.values() for n in names}
    for names in by_id.values():
        have = [n for n in names if n in sd]
        if have:
            for n in names:
                sd.setdefault(n, sd[have[0]])
    refused = []
    for name, t in model.state_dict().items():
        if name in sd:
            continue
        if record.may_fill(name, is_buffer=name not in params):
            sd[name] = t.detach().clone()
        else:
            refused.append(name)
    if refused:
        raise CheckpointError(_missing_message(path, refused, len(tensors), record, metadata))
    return sd


def _missing_message(path, refused, held, record, metadata):
    shown = ", ".join(refused[:5]) + (", ..." if len(refused) > 5 else "")
    if record.unused is not None:
        why = "the export's record does not list them among the names load may fill"
    elif "piper.tied" in metadata:
        why = ("an older piper.export wrote this file without the record of the parameters "
               "the loss never reads: export again")
    else:
        why = ("the file carries no export record of the parameters the loss never reads "
               "(a run's checkpoint never does): if that is why they are missing, pass "
               "export_weights=<the weights file piper.export wrote>")
    return (f"{path}: not a checkpoint of this module: it holds {held} "
            f"tensor{'' if held == 1 else 's'} and lacks "
            f"{len(refused)} of the module's names ({shown}); {why}. piper.load fills only "
            f"tied names, buffers folded into the graph and parameters the loss never reads: "
            f"a file cut short or of another model is refused")
