/* libpiper_rt: the strategy-agnostic runtime that compiled Piper plans call.
 *
 * A compiled training binary is one object file emitted by piper-compile, linked with this
 * library. The object exports exactly two functions, both generated from IR:
 *
 *   void piper_setup(prt_ctx *ctx);  declares every named tensor (parameters, optimizer state,
 *                                    inputs, outputs) and the size of the activation arena.
 *   void piper_step(prt_ctx *ctx);   one training step: the fused schedule of kernel calls.
 *
 * The runtime owns all memory, the data loader, parameter init, checkpoints and metrics; it
 * knows nothing about models or strategies. Letters: B batch, T sequence, C channels,
 * H heads, V vocab, N rows (B*T), M/N/K matmul dims. Every float is fp32, every index int32
 * and every size int64, so the generated LLVM calls have one fixed signature per kernel.
 */
#ifndef PIPER_RUNTIME_H
#define PIPER_RUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prt_ctx prt_ctx;

/* What a declared tensor is; keep in sync with PIPER_TENSOR_* in lowering/lower_to_llvm.c. */
typedef enum {
  PRT_PARAM = 0,      /* trained parameter: initialised, checkpointed by name */
  PRT_OPTIM = 1,      /* optimizer state (AdamW moments): zero-initialised, persistent */
  PRT_INPUT = 2,      /* int32 tokens or targets, filled by the data loader before each step */
  PRT_OUTPUT = 3,     /* a scalar the step reports (the loss), read after each step */
  PRT_BF16_COPY = 4,  /* a parameter's bf16 copy (prt_declare_bf16_copy): 2 bytes an element,
                         not checkpointed */
} prt_tensor_kind;

/* How a parameter is initialised when no --init-checkpoint is given. */
typedef enum {
  PRT_INIT_NORMAL = 0, /* normal(0, 0.02) from a generator seeded by (seed, name) */
  PRT_INIT_ZEROS = 1,  /* biases */
  PRT_INIT_ONES = 2,   /* LayerNorm weights */
  PRT_INIT_BUFFER = 3, /* non-trained state (an exported module's buffers: masks, RoPE tables):
                          only a checkpoint gives its values, so a run without
                          --init-checkpoint stops naming it */
} prt_init_kind;

/* ---- called by piper_setup ---- */

/* Declares tensor `id` (ids are dense, 0..count-1, in declaration order). `name` is a NUL-
 * terminated string the runtime copies; dims beyond `ndim` are ignored. For PRT_INPUT the
 * name is "tokens" or "targets" with dims (B, T) and `first_sample` is the global index of
 * this tensor's first batch row (0 on one device; microbatches and data-parallel ranks get
 * their slice). For PRT_OUTPUT "loss", `first_sample` is the number of batch rows the value
 * averages over (0 = all of them): a plan may report several partial losses, on several
 * ranks, and the step's loss is their row-weighted mean over the whole world. */
void prt_declare_tensor(prt_ctx *ctx, int64_t id, const char *name, int32_t kind,
                        int32_t init, int64_t ndim, int64_t d0, int64_t d1, int64_t d2,
                        int64_t d3, int64_t first_sample);
/* The weights file piper.export wrote for this model (the module's own initial values; the
 * tdag module's piper.init_checkpoint attribute, an absolute path): a run given no
 * --init-checkpoint starts from it, unless --init-random draws the parameters instead. */
void prt_declare_init_checkpoint(prt_ctx *ctx, const char *path);
/* Declares tensor `id` as the bf16 copy of parameter `of` (declared before it): the values a
 * bf16 plan's matmuls read as the weight (each rounded to nearest even), kept by the plan's
 * AdamW, which writes the copy in the launch that updates the parameter (the adamw kernel's
 * p16), and by the runtime wherever it writes the parameter from the host (initialisation,
 * checkpoint loads: prt_bf16_copies_refresh). Named "<param>.bf16". */
void prt_declare_bf16_copy(prt_ctx *ctx, int64_t id, int64_t of);
/* Every bf16 copy rounded afresh from its parameter (after the host wrote parameters). */
void prt_bf16_copies_refresh(prt_ctx *ctx);
/* Bytes of scratch the step needs for activations and gradients (planned by the compiler). */
void prt_declare_arena(prt_ctx *ctx, int64_t bytes);
/* What the arena holds, from the compiler's plan: the peak bytes of activations and the peak
 * bytes of gradients live at any one time (each class's own peak; reported per rank). */
void prt_declare_arena_use(prt_ctx *ctx, int64_t activation_bytes, int64_t gradient_bytes);

/* ---- called by piper_step ---- */
void *prt_tensor(prt_ctx *ctx, int64_t id);  /* storage of a declared tensor */
void *prt_arena(prt_ctx *ctx);               /* base of the arena, 64-byte aligned */
/* Hands the runtime the gradient of parameter `param_id` (for --dump-grads); cheap no-op
 * unless a dump was requested for this step. */
void prt_observe_grad(prt_ctx *ctx, int64_t param_id, const float *grad);

/* ---- kernels: the CPU target's prt_<name> for every PRT_KERNEL entry of the kernel list,
 * include/piper/kernels.def, where each kernel's arguments and meaning are written once
 * (OpenBLAS sgemm + C loops in runtime/kernels/cpu*.c; the gradient norm's in
 * runtime/schedule.c). ---- */
#define PRT_KERNEL(name, gpu, params, launches) void prt_##name params;
#include "piper/kernels.def"

/* ---- distributed plans: one binary, one plan per device (MPI rank) ----
 * A multi-device plan calls these in piper_setup before declaring tensors. A single-device
 * plan calls none of them and runs with world size 1. Comm backends (runtime/comm/): "serial"
 * (world 1, no MPI) and "mpi"; piper-compile links the one the plan needs. */

/* The plan's device count; prt_main stops with an error naming both numbers when the MPI
 * world size differs (never a hang). */
void prt_declare_world(prt_ctx *ctx, int64_t devices);
/* This process's device id: its MPI rank, 0 under the serial backend. */
int64_t prt_rank(prt_ctx *ctx);
/* Communicator `group` (dense ids from 0) over `n` devices `members` (ascending). Every rank
 * declares every group of the plan in the same order, so creation is collective and
 * deterministic; ranks outside a group just skip it. */
void prt_declare_group(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *members);
/* A rank this rank's plan sends to or receives from (once per peer; before the target's setup).
 * Declared only by plans whose receives follow each sender's order (piper.p2p_order "fifo"):
 * the NCCL backend then builds a communicator per direction from every rank's peers and
 * carries send/recv on it. */
void prt_declare_peer(prt_ctx *ctx, int64_t peer);
/* The same for the `n` members start, start + stride, ... (a role's devices): the binary
 * holds three numbers, not the member list. */
void prt_declare_group_range(prt_ctx *ctx, int64_t group, int64_t n, int64_t start,
                             int64_t stride);
/* A group family of a plan per role (tensor parallelism under data parallelism): replica k
 * of its role declares the group of the `n` devices base[i] + k * stride (replica 0's
 * group shifted by k * stride; each base[i] is replica 0 of a role of that stride), so each
 * replica gets its own communicator while every rank declares the same numbers. Call it
 * after prt_declare_roles, which sets k. */
void prt_declare_group_family(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *base,
                              int64_t stride);
/* Plans per role (--piper-extract): role p runs on the count[p] devices start[p] +
 * k * stride[p], k = 0 .. count[p]-1 (its replica index). Finds this rank's (role, k) once,
 * O(roles); a rank no role covers gets role -1 (runs nothing; prt_main's world check stops it).
 * On fewer ranks than the plan's devices (MPI), rank r' * roles + p runs role p for the
 * replicas r' * k .. r' * k + k - 1 where that divides evenly (runtime/elastic.c), else the
 * world check says why not. */
void prt_declare_roles(prt_ctx *ctx, int64_t nroles, const int64_t *start, const int64_t *stride,
                       const int64_t *count);
/* This rank's role (-1 before prt_declare_roles or outside every role). */
int64_t prt_role(prt_ctx *ctx);
/* base + k * stride for this rank's replica index k: the k-dependent values of a role's plan
 * (its first batch row, the peer device of a transfer). */
int64_t prt_replica_affine(prt_ctx *ctx, int64_t base, int64_t stride);
/* Length of replica k's ZeRO shard of an n-element tensor cut into shards of c elements:
 * min(c, n - k * c), 0 past the end (the last shard may be shorter or empty). */
int64_t prt_shard_len(prt_ctx *ctx, int64_t n, int64_t c);
/* 1 on replica 0 of its role, else 0 (the gradient norm counts a replicated update once). */
int32_t prt_first_replica(prt_ctx *ctx);
/* Expert parallelism in a plan per role: tensor `id` (a parameter or AdamW moment just
 * declared) belongs to an expert whose index in the name is the `len` decimal digits at byte
 * `at`, replica 0's index `base`; on replica k it is renamed to index base + k * stride (the
 * experts a device owns shift by E/G a replica), so checkpoints, init and --dump-grads see the
 * model's names. */
void prt_declare_expert(prt_ctx *ctx, int64_t id, int64_t at, int64_t len, int64_t base,
                        int64_t stride);
/* Global batch rows of one step, over all devices and microbatches. The data loader places
 * row g of step s at ((s * global_batch + g) * T) mod (N - T - 1); without this call the
 * global batch is the B of the "tokens" input. */
void prt_declare_batch(prt_ctx *ctx, int64_t global_batch);
/* Declared parameter or optimizer state `id` holds elements [offset, offset + numel) of the
 * full tensor of its name, flattened (a ZeRO shard). Call it after prt_declare_tensor(id, ...),
 * which keeps the FULL tensor's dims (they name the checkpoint's shape; an AdamW moment has its
 * parameter's); this call narrows the storage that prt_tensor(id) returns to numel floats.
 * `full_numel` is the product of those dims (checked). Init and --init-checkpoint fill the
 * slice; --save-checkpoint reassembles full tensors on rank 0; prt_observe_grad(id, g) takes
 * the gradient of a parameter's slice (numel floats). */
void prt_declare_shard(prt_ctx *ctx, int64_t id, int64_t offset, int64_t numel,
                       int64_t full_numel);
/* Tensor parallelism: declared parameter or optimizer state `id` holds `blocks` blocks of
 * `block` elements of the full flattened tensor of its name, block i starting at element
 * offset + i * stride (a Megatron row or column slice; the blocks are concatenated in local
 * storage). Call it right after prt_declare_tensor(id, ...) with the FULL dims; storage
 * narrows to block * blocks floats. A later prt_declare_shard(id, ...) (ZeRO over the
 * data-parallel replicas of a slice) counts its offset and full_numel in slice elements.
 * Init, checkpoints and --dump-grads see the full tensor, as for a shard. */
void prt_declare_tp_slice(prt_ctx *ctx, int64_t id, int64_t offset, int64_t block,
                          int64_t stride, int64_t blocks);
/* Context parallelism (shard_sequence, passes/shard_sequence.c): declared input or "loss"
 * output `id` belongs to member r of a context-parallel group of G devices. An input (B, Tl)
 * holds, of each of its rows, the sequence chunks r and 2G-1-r of c = Tl/2 tokens of the
 * full sequence T = G * Tl (local column t at position prt_cp_position(r, G, c, t)); the data
 * loader fills it so. The loss averages over those Tl of the T positions, so it counts for
 * rows / G of its batch rows in the reported mean. */
void prt_declare_cp(prt_ctx *ctx, int64_t id, int64_t r, int64_t G);
/* Declared parameter `param_id` (whole on this device) has its gradient only ever
 * reduce-scattered (ZeRO-2, shard_grads without shard_params): no device holds that gradient
 * whole, so prt_observe_grad never sees it and --dump-grads is refused before the first step.
 * Idempotent. */
void prt_declare_grad_scattered(prt_ctx *ctx, int64_t param_id);
/* Names trace lane `stream` (dense ids from 0; 0 is the compute stream "compute"). */
void prt_declare_stream(prt_ctx *ctx, int64_t stream, const char *name);

/* Nonblocking communication. Each returns a handle completed by prt_wait; a handle is waited
 * exactly once. `stream` is the trace lane the transfer is drawn on. Sizes are in floats. */
int64_t prt_isend(prt_ctx *ctx, const float *buf, int64_t n, int64_t peer, int64_t tag,
                  int64_t stream);
int64_t prt_irecv(prt_ctx *ctx, float *buf, int64_t n, int64_t peer, int64_t tag,
                  int64_t stream);
/* buf = sum over the group's members, in place. */
int64_t prt_iall_reduce(prt_ctx *ctx, float *buf, int64_t n, int64_t group, int64_t stream);
/* out(n_out) = member k's block k of the sum of every member's in(n_out * |group|). */
int64_t prt_ireduce_scatter(prt_ctx *ctx, const float *in, float *out, int64_t n_out,
                            int64_t group, int64_t stream);
/* --grad-reduce bf16: as prt_iall_reduce and prt_ireduce_scatter on n (n_out) bf16 values
 * (uint16_t bit patterns), half the bytes of fp32. Each pair the backend combines is added in
 * fp32 and rounded to bf16 (round to nearest even), in rank order, so every member gets the same
 * sum. The MPI and serial backends have it; NCCL (a GPU plan) and elastic runs refuse it. */
int64_t prt_iall_reduce_bf16(prt_ctx *ctx, uint16_t *buf, int64_t n, int64_t group,
                             int64_t stream);
int64_t prt_ireduce_scatter_bf16(prt_ctx *ctx, const uint16_t *in, uint16_t *out, int64_t n_out,
                                 int64_t group, int64_t stream);
/* out(n_in * |group|) = concatenation of every member's in(n_in), in member order. */
int64_t prt_iall_gather(prt_ctx *ctx, const float *in, float *out, int64_t n_in,
                        int64_t group, int64_t stream);
/* Expert parallelism: in and out hold n 4-byte elements (f32 rows or i32 counts) in |group|
 * equal blocks; block k of in goes to member k, and block s of out comes from member s (block
 * s of its in). A static-size exchange: every block is sent whole, used rows or not. */
int64_t prt_iall_to_all(prt_ctx *ctx, const float *in, float *out, int64_t n, int64_t group,
                        int64_t stream);
void prt_wait(prt_ctx *ctx, int64_t handle);

/* Trace spans for --trace (Chrome trace / Perfetto JSON, one file per rank, one lane per
 * stream): every compute node is wrapped in begin/end on stream 0. `name` is a NUL-terminated
 * string that outlives the run (a constant in the compiled module). Cheap no-ops otherwise. */
void prt_span_begin(prt_ctx *ctx, const char *name, int64_t stream);
void prt_span_end(prt_ctx *ctx, int64_t stream);

/* ---- the training binary's entry: flags, data, init, the step loop, metrics, checkpoints.
 * Called by main() in libpiper_rt with the generated piper_setup / piper_step. ---- */
int prt_main(int argc, char **argv, void (*setup)(prt_ctx *), void (*step)(prt_ctx *));
/* The generated piper_eval_step (forward ops and transfers only), for --eval-every; call it
 * before prt_main. NULL: the binary cannot evaluate. */
void prt_set_eval_step(void (*eval_step)(prt_ctx *));

#ifdef __cplusplus
}
#endif
#endif
