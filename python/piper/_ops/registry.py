"""The handler table: ATen op packet name -> the function that maps it to tdag ops. A handler
registers itself beside its code with @handles("view", "reshape", ...) (another namespace's
ops with it: "piper.cross_entropy") and is called as
handler(emitter, node, *args, **kwargs) with the node's arguments mapped (values from
_values.py, Python numbers and lists as fx gives them); it returns what the node maps to."""

HANDLERS = {}


def handles(*packets):
    """Registers the decorated function as the handler of the ATen packets named (the overload
    packet: "view" for aten.view.default)."""
    def register(fn):
        for p in packets:
            if p in HANDLERS:
                raise RuntimeError(f"two handlers for aten.{p}: {HANDLERS[p].__name__} and "
                                   f"{fn.__name__}")
            HANDLERS[p] = fn
        return fn
    return register


def packet(target):
    """The packet name of an fx call_function target: "view" for aten.view.default, and the
    namespace's too for another's ops ("piper.moe" for piper.moe.default)."""
    parts = str(target).split(".")
    if len(parts) >= 2 and parts[0] == "aten":
        return parts[1]
    return ".".join(parts[:2]) if len(parts) >= 3 else str(target)


def handler_for(target):
    """The handler of fx target `target`, or None."""
    return HANDLERS.get(packet(target))
