"""The tdag module's text: every emitted op with its tags resolved (docs/frontend.md "Tags")."""


def _mlir_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def module_text(e, B, T, weights=None):
    """The tdag module: every op's tags resolved (annotated scope; else the operand computed
    last; leaves, constants and ops with no tagged operand from their first user; PP = 0 on
    every op where no op has a PP tag); `weights`, the weights file's absolute path, recorded
    as the module's piper.init_checkpoint (where the compiled binary starts)."""
    final = {}
    users = {}
    for idx, outs, operands, tags in e.ops:
        for o in operands:
            users.setdefault(o.name, idx)
    # forward: annotated tags, else the operand computed last (among those with tags)
    for idx, outs, operands, tags in e.ops:
        if not operands:  # leaves and constants: their first user's, below
            tags = None
        elif tags is None:
            tagged = [o for o in operands if final.get(o.name) is not None]
            if tagged:
                tags = final[max(tagged, key=lambda o: o.index).name]
        for o in outs:
            final[o.name] = tags
    # leaves, constants and what is computed from them alone: their first user's tags (users
    # come later in the program, so a reverse walk settles whole chains)
    by_line = {idx: (outs, operands) for idx, outs, operands, tags in e.ops}
    for idx, outs, operands, tags in reversed(e.ops):
        for o in outs:
            if final.get(o.name) is None and o.name in users:
                u_outs, _ = by_line[users[o.name]]
                final[o.name] = final.get(u_outs[0].name) if u_outs else None
    uses_pp = any(t and "PP" in t for t in final.values())
    attrs = f" attributes {{piper.init_checkpoint = {_mlir_string(weights)}}}" if weights else ""
    out = [f"// Exported by piper.export (python/piper): B={B} T={T}.", f"module{attrs} {{",
           "  func.func @model() {"]
    for idx, (lhs, op, attrs, types, loc) in enumerate(e.lines):
        outs = next(o for i, o, _, _ in e.ops if i == idx)
        tags = dict(final.get(outs[0].name) or {}) if outs else {}
        if not outs:  # tdag.output: the loss's tags
            tags = dict(final.get(e.loss.name) or {})
        if not uses_pp:
            tags["PP"] = 0
        tags.update(e.own_tags.get(idx, {}))
        tag_text = "tags = {" + ", ".join(f"{k} = {v} : i64" for k, v in tags.items()) + "}"
        a = ", ".join(x for x in (attrs, tag_text) if x)
        out.append(f"    {lhs}{op} {{{a}}} : {types} {loc}")
    loss_line = f'    "tdag.output"({e.loss.name}) {{name = "loss", tags = {{' + ", ".join(
        f"{k} = {v} : i64" for k, v in (dict(final.get(e.loss.name) or {}, **({} if uses_pp else {"PP": 0}))).items()) + "}}" \
        + " : (tensor<f32>) -> ()"
    out.append(loss_line)
    out += ["    return", "  }", "}", ""]
    return "\n".join(out)
