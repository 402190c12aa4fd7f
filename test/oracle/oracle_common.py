"""What the PyTorch oracles' init and train subcommands share (gpt_torch.py, qwen3_torch.py,
moe_torch.py): their common flags, reading the initial checkpoint against the model's
parameter list, the training loop and the writing of its outputs. The model, the optimizer
and the data order stay each oracle's (gpt_torch.py's make_optimizer, load_data, get_batch),
passed in, so that a test that patches them in gpt_torch (calibrate.py) still reaches them.
"""
import json

import torch

import precision
import safetensors_io as st

DTYPES = {"float32": torch.float32, "float64": torch.float64}


# ----------------------------------------------------------------------------- flags

def init_parser(sub, add_model_args):
    """The `init` subcommand: the model's flags (add_model_args(p)), --seed and --output."""
    p = sub.add_parser("init", help="write a random initial checkpoint")
    add_model_args(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    return p


def train_parser(sub, add_model_args):
    """The `train` subcommand: the model's flags with --batch (add_model_args(p, batch=True))
    and the flags train_steps and write_outputs read; an oracle adds its own after."""
    p = sub.add_parser("train", help="train N steps, write losses, step-0 grads and final params")
    add_model_args(p, batch=True)
    p.add_argument("--init", required=True, help="initial checkpoint (safetensors)")
    p.add_argument("--data", required=True, help="training data file (bytes are tokens)")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--lr", type=float, required=True)
    p.add_argument("--weight-decay", type=float, default=0.0, help="applied to 2-D tensors only")
    p.add_argument("--losses", help="output JSON list of per-step losses")
    p.add_argument("--grads", help="output safetensors of all gradients at step 0")
    p.add_argument("--final", help="output safetensors of parameters after --steps steps")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32",
                   help="compute dtype (float64 only for calibrating tolerances; outputs are F32)")
    precision.add_flag(p)
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def add_device_flag(p):
    """--device, for an oracle whose model makes its tensors where its inputs are (gpt_torch:
    the others build masks and tables on the CPU and stay there)."""
    p.add_argument("--device", choices=["cpu", "cuda", "auto"], default="cpu",
                   help="where to train (default cpu; auto: cuda when torch sees a GPU). TF32 "
                        "is off, so matmuls are true fp32, as Piper's pedantic cuBLAS calls")


def pick_device(name):
    """The torch device of --device (an oracle without the flag: the CPU). TF32 is switched
    off whatever the device (a no-op on the CPU): with it, cuBLAS rounds fp32 matmul operands
    to TF32's 10-bit mantissa (2^-11 relative each), and the oracle would no longer be the fp32
    reference that Piper's pedantic-fp32 sgemm is held to within fp32 rounding."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA device")
    return torch.device(name)


# ----------------------------------------------------------------------------- train

def load_init(a, shapes):
    """The parameters of checkpoint --init, in the order of `shapes` (name -> shape: the
    model's canonical list), as leaf tensors of --dtype on --device (a.device becomes the
    torch.device: train_steps moves each batch there); sets torch's thread count (--threads).
    Exits naming every missing, extra or misshaped tensor. Sets the models' precision
    (--precision: precision.py)."""
    torch.set_num_threads(a.threads)
    precision.use(a.precision)
    init = st.read(a.init)
    missing = sorted(set(shapes) - set(init))
    extra = sorted(set(init) - set(shapes))
    bad = [n for n in shapes if n in init and tuple(init[n].shape) != tuple(shapes[n])]
    if missing or extra or bad:
        raise SystemExit(f"init checkpoint mismatch: missing={missing} extra={extra} "
                         f"misshaped={[(n, tuple(init[n].shape), shapes[n]) for n in bad]}")
    a.device = pick_device(getattr(a, "device", "cpu"))
    return {n: init[n].to(a.device, DTYPES[a.dtype]).clone().requires_grad_(True) for n in shapes}


def train_steps(a, P, opt, batch, loss_of, before_step=None):
    """--steps steps of: (x, y) = batch(s), loss = loss_of(x, y), backward, before_step(s)
    (clipping, the lr schedule), opt.step(). The loss of step s is taken before step s's
    update. Writes --grads at step 0 (zeros for a parameter nothing reached, such as an
    expert no token chose: torch leaves its grad None). Returns the per-step losses."""
    losses = []
    for s in range(a.steps):
        x, y = batch(s)
        x, y = x.to(a.device), y.to(a.device)  # the data stays on the host; no-op on the CPU
        opt.zero_grad(set_to_none=True)
        loss = loss_of(x, y)
        loss.backward()
        losses.append(float(loss.item()))
        if s == 0 and a.grads:
            st.write(a.grads, {n: P[n].grad if P[n].grad is not None else torch.zeros_like(P[n])
                               for n in P}, {"step": "0"})
        if before_step is not None:
            before_step(s)
        opt.step()
        if a.verbose:
            print(f"step {s} loss {losses[-1]:.6f}", flush=True)
    return losses


def write_json(path, values):
    """values as one JSON list and a newline (the oracles' losses and norms files)"""
    with open(path, "w") as f:
        json.dump(values, f)
        f.write("\n")


def write_outputs(a, P, losses):
    """--losses and --final, then the one-line summary."""
    if a.losses:
        write_json(a.losses, losses)
    if a.final:
        st.write(a.final, {n: P[n].detach() for n in P}, {"steps": str(a.steps)})
    if losses:
        print(f"trained {a.steps} steps: loss {losses[0]:.6f} -> {losses[-1]:.6f}")
