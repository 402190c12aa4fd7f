#!/usr/bin/python3
"""Writes a perturbed copy of a run's metrics or checkpoint, for the comparers' negative controls.

  perturb_run.py MODE IN OUT [NAME]

MODE (NAME: the tensor to change, default h.0.mlp.c_fc.weight):
  above-cap    one element of NAME moved to a few ulps above compare_runs.py's cap (relative to
               the tensor's max), where a real bug's outlier would be: must fail
  below-cap    the same element a few ulps below the cap: one isolated outlier, allowed
  outliers     one element more than the 0.1% outlier allowance moved a few ulps above the
               per-element tolerance: must fail
  nan          one element of NAME made NaN
  drop         NAME removed
  empty        a checkpoint with no tensor (the metadata kept)
  drop-step    (metrics) the train line of step NAME (an integer) removed
  loss         (metrics) step NAME's loss moved to a few ulps above compare_runs.py's relative
               tolerance
  no-steps     (metrics) every train line removed
Prints what it changed and the relative difference it made.
"""
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "oracle"))
sys.path.insert(0, os.path.join(HERE, ".."))
import compare_runs  # noqa: E402  (its tolerances)
import gpt_torch  # noqa: E402
import safetensors_io as st  # noqa: E402

PARAM_TOL, LOSS_RTOL = 1e-5, 1e-5  # compare_runs.py's defaults
CAP = max(compare_runs.CAP_FLOOR, compare_runs.CAP_PER_TOL * PARAM_TOL)  # and its cap at them


def just_above(r, scale, rel, ulps=4):
    """The float32 value nearest r + rel * scale whose relative difference exceeds rel, then
    `ulps` float32 steps further: a few ulps past the bound, not a coarse jump."""
    c = np.float32(r + rel * scale)
    while (float(c) - r) / scale <= rel:
        c = np.nextafter(c, np.float32(np.inf))
    for _ in range(ulps):
        c = np.nextafter(c, np.float32(np.inf))
    return c


def just_below(r, scale, rel, ulps=4):
    c = np.float32(r + rel * scale)
    while (float(c) - r) / scale >= rel:
        c = np.nextafter(c, np.float32(-np.inf))
    for _ in range(ulps):
        c = np.nextafter(c, np.float32(-np.inf))
    return c


def checkpoint(mode, src, dst, name):
    tensors = st.read(src)
    _, meta, _ = st.read_header(src)
    if mode == "empty":
        tensors = {}
    elif mode == "drop":
        del tensors[name]
    else:
        w = tensors[name].numpy().astype(np.float32).reshape(-1).copy()
        scale = float(np.abs(w).max())
        if mode == "nan":
            idx = [0]
            w[0] = np.nan
        elif mode in ("above-cap", "below-cap"):
            idx = [w.size // 2]
            move = just_above if mode == "above-cap" else just_below
            w[idx[0]] = move(float(w[idx[0]]), scale, CAP)
        elif mode == "outliers":
            allowed = max(1, int(gpt_torch.DEFAULT_PARAM_OUTLIERS * w.size))
            idx = list(range(0, w.size, w.size // (allowed + 1)))[:allowed + 1]
            for i in idx:
                w[i] = just_above(float(w[i]), scale, PARAM_TOL)
        old = tensors[name].reshape(-1)
        tensors[name] = torch.from_numpy(w).reshape(tensors[name].shape)
        rel = [float(abs(np.float64(w[i]) - float(old[i])) / scale) for i in idx]
        print(f"{mode}: {name}, {len(idx)} of {w.size} elements, |d|/max|ref| "
              f"{min(rel):.6e}..{max(rel):.6e}")
    st.write(dst, tensors, metadata=meta)


def metrics(mode, src, dst, name):
    out = []
    for line in open(src):
        rec = json.loads(line) if line.strip() else None
        if isinstance(rec, dict) and rec.get("kind") == "train":
            if mode == "no-steps" or (mode == "drop-step" and rec["step"] == int(name)):
                continue
            if mode == "loss" and rec["step"] == int(name):
                r = float(rec["loss"])
                rec["loss"] = float(just_above(r, abs(r), LOSS_RTOL))
                print(f"loss: step {name}, relative difference {abs(rec['loss'] - r) / abs(r):.6e}")
            line = json.dumps(rec) + "\n"
        out.append(line)
    open(dst, "w").write("".join(out))


def main():
    mode, src, dst = sys.argv[1:4]
    if mode in ("drop-step", "loss", "no-steps"):
        metrics(mode, src, dst, sys.argv[4] if len(sys.argv) > 4 else "0")
    else:
        checkpoint(mode, src, dst, sys.argv[4] if len(sys.argv) > 4 else "h.0.mlp.c_fc.weight")


if __name__ == "__main__":
    main()
