"""The handlers: one module per family, each registering its functions in the table
(registry.py) with @handles beside their code. Importing this package fills the table."""
from . import elementwise, layout, linear, moe, nn, reductions  # noqa: F401  (they register)
from .registry import HANDLERS, handler_for, packet  # noqa: F401
