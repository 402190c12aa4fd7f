"""What piper.export reports when it cannot map a model: ExportError, whose message names the
op, the module path and the user's source line, and the helpers that find that line (the
innermost frame outside torch and piper). Imported by every other part of the exporter and by
_annotate.py; imports none of them."""
import contextlib
import inspect
import os
import traceback

import torch

_TORCH_DIR = os.path.dirname(torch.__file__)
_PIPER_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB_DIR = os.path.dirname(os.path.abspath(contextlib.__file__))  # contextlib's `with`


class ExportError(Exception):
    """A model piper.export cannot map: the message names the op, the module path and the
    user's source line."""


def _is_user_file(filename):
    fn = os.path.abspath(filename)
    return not fn.startswith((_TORCH_DIR, _PIPER_DIR)) and os.path.dirname(fn) != _STDLIB_DIR


def user_frame():
    """(file, line) of the innermost frame outside torch and piper: the user's source line."""
    f = inspect.currentframe()
    while f is not None:
        fn = os.path.abspath(f.f_code.co_filename)
        if _is_user_file(fn) and "<" not in fn[:1]:
            return fn, f.f_lineno
        f = f.f_back
    return "<unknown>", 0


def user_frame_of(err):
    """(file, line) of the innermost user frame in the traceback of `err`."""
    for fr in reversed(traceback.extract_tb(err.__traceback__)):
        if _is_user_file(fr.filename):
            return os.path.abspath(fr.filename), fr.lineno
    return "<unknown>", 0


def refusal(what, node=None):
    """The ExportError for `what` at fx node `node` (None: the root module, no line): its
    message ends in the op and the module path and starts with the user's source line."""
    meta = node.meta.get("piper", {}) if node is not None else {}
    path = meta.get("path") or "(the root module)"
    src = meta.get("src") or ("<unknown>", 0)
    target = getattr(node, "target", "?")
    return ExportError(f"{src[0]}:{src[1]}: piper.export: {what} (op {target}, module {path})")
