"""The export's record of what piper.load may fill, kept in the weights file's safetensors
__metadata__ (each value a JSON string):

  piper.tied     {alias: name}: a tied parameter's other names; the file holds it under name
  piper.buffers  [name]: the file's tensors that are not trained (buffers, piper.const.*)
  piper.unused   [name]: the module's parameters, every name, that the loss never reads (not
                 in the file: the graph has no tdag.param for them)
  piper.folded   [name]: the module's state_dict buffers not in the file (folded into the
                 graph's constants, a causal mask as tdag.triangle, or never read)

The export knows all of them; a run's checkpoint is written by the runtime, which keeps none
(only its own "format" and "step"), so piper.load takes the record from the export's weights
file (export_weights=) there. Files of an older export carry piper.tied and piper.buffers
only."""
import json

from ._safetensors import CheckpointError


def metadata(model, canonical, written, buffers):
    """The record's metadata for a weights file holding `written` ({name: tensor}), of which
    `buffers` are not trained; canonical: {every parameter name: the name it is written
    under}."""
    tied = {a: c for a, c in canonical.items() if a != c}
    unused = sorted(a for a, c in canonical.items() if c not in written)
    folded = sorted(n for n in model.state_dict() if n not in canonical and n not in written)
    return {"piper.tied": json.dumps(tied), "piper.buffers": json.dumps(sorted(buffers)),
            "piper.unused": json.dumps(unused), "piper.folded": json.dumps(folded)}


class Record:
    """A record as read: tied {alias: name}; unused and folded sets of names, or None where
    the file carries no record of them (a run's checkpoint, an older export)."""

    def __init__(self, tied, unused, folded):
        self.tied, self.unused, self.folded = tied, unused, folded

    def may_fill(self, name, is_buffer):
        """Whether load may take `name` from the module when the checkpoint lacks it. Without
        a record only a buffer: Piper never trains one, so the module's value is the one the
        export read, while a parameter's would be untrained."""
        if self.unused is None:
            return is_buffer
        return name in self.unused or name in self.folded


def read(path, metadata):
    """The Record in a file's metadata; a record that is there but malformed is refused."""
    def field(key, kind):
        if key not in metadata:
            return None
        try:
            value = json.loads(metadata[key])
        except (ValueError, RecursionError):
            value = None
        ok = (isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
              if kind is dict else
              isinstance(value, list) and all(isinstance(v, str) for v in value))
        if not ok:
            raise CheckpointError(f"{path}: __metadata__ {key} is not a JSON "
                                  f"{'object of names' if kind is dict else 'list of names'}; "
                                  f"the file is corrupt: re-create it")
        return value
    unused, folded = field("piper.unused", list), field("piper.folded", list)
    if (unused is None) != (folded is None):
        raise CheckpointError(f"{path}: __metadata__ has one of piper.unused and piper.folded "
                              f"without the other; the file is corrupt: re-create it")
    return Record(field("piper.tied", dict) or {}, None if unused is None else set(unused),
                  None if folded is None else set(folded))
