/* libpiper_rt internals: the prt_ctx behind the opaque handle in <piper/runtime.h>, and the
 * pieces prt_main wires together (declarations, init, data, checkpoints, the comm backend).
 * Not part of the ABI that generated code sees; tests include it to drive the runtime without
 * a compiled plan.
 *
 * Errors: a function that can fail for reasons outside the program (a file, a flag, a plan
 * that declares something inconsistent) returns an int status (0 ok) and fills a prt_status
 * with one line "<what>: <where>; <what to do>"; prt_main prints it as
 * "piper: error: <line>" and exits with the status's code. Misuse of the ABI from inside
 * piper_step (a bad tensor id) cannot be reported that way and goes through prt_fatal, which
 * also stops every other rank (MPI_Abort) so a multi-device run never hangs on one failure.
 *
 * Several processes: every function marked "collective" must be called by every rank, in the
 * same order, whatever happened locally; the others touch only this rank. A failure seen by
 * one rank reaches the others through prt_agree, at fixed points of prt_main.
 */
#ifndef PIPER_PRT_INTERNAL_H
#define PIPER_PRT_INTERNAL_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "piper/runtime.h"
#include "device.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libpiper_rt writes safetensors by copying memory: it needs a little-endian host"
#endif

#define PRT_MAX_DIMS 4       /* most dims a declared tensor has (d0..d3 in the ABI) */
#define PRT_ALIGN 64         /* byte alignment of every tensor and of the arena */

/* ---- status, fatal stop, checked allocation (fail.h) ---- */

#include "fail.h"

/* The rotary embedding's table: cs[2 (t D/2 + j)] = cos(a), cs[... + 1] = dir sin(a) with
 * a = t theta^(-2j/D) in double, for t < T, j < D/2 (kernels/cpu_qwen3.c; the GPU's
 * prt_cuda_rope_* upload the same table, so both targets rotate by the same floats). */
void prt_rope_table(float *cs, int64_t T, int64_t D, float theta, double dir);
/* Mixture of experts (kernels/cpu.c), shared with the GPU launchers (kernels/cuda.c), which
 * compute the copies' rows and the experts' row segments on the host the same way:
 * pos[n*K+k] = the row of token n's k-th copy and counts[e] (may be NULL) the copies of
 * expert e; a bad expert id is prt_fatal naming `kernel`. */
void prt_moe_positions(int32_t *pos, int32_t *counts, const int32_t *ex, int64_t N, int64_t K,
                       int64_t E, int64_t G, const char *kernel);
/* First row and row count of local expert j in block s of `cap` rows; counts that overflow
 * the block are prt_fatal. */
void prt_moe_segment(const int32_t *counts, int64_t s, int64_t cap, int64_t El, int64_t j,
                     int64_t *first, int64_t *len, const char *kernel);
/* Rows of block s its El experts use. */
int64_t prt_moe_block_used(const int32_t *counts, int64_t s, int64_t El);

/* ---- the context ---- */

/* One declared tensor. */
typedef struct prt_tensor_info {
  char *name;                  /* owned copy of the declared name; NULL = id not declared */
  int32_t kind;                /* prt_tensor_kind */
  int32_t init;                /* prt_init_kind (used for PRT_PARAM only) */
  int64_t ndim;                /* 0..PRT_MAX_DIMS; 0 is a scalar */
  int64_t dims[PRT_MAX_DIMS];  /* dims[0..ndim) in elements; the rest are 1. For a shard:
                                  the FULL tensor's shape */
  int64_t numel;               /* elements of local storage: product of dims, or the shard
                                  length after prt_declare_shard */
  int64_t full_numel;          /* product of dims (numel unless the tensor is a shard) */
  int64_t shard_offset;        /* first element of the full flattened tensor held here (0) */
  int is_shard;                /* 1 after prt_declare_shard */
  int64_t tp_blocks;           /* a tensor-parallel slice (prt_declare_tp_slice): tp_blocks
                                  blocks of tp_block elements of the full tensor, block i at
                                  tp_offset + i * tp_stride; 0 = not sliced. A shard's
                                  shard_offset then counts slice elements */
  int64_t tp_block, tp_stride, tp_offset;
  int64_t first_sample;        /* PRT_INPUT: global index of this tensor's first batch row;
                                  PRT_OUTPUT "loss": batch rows it averages over (0 = all) */
  int64_t cp_rank, cp_size;    /* context parallelism (prt_declare_cp): member cp_rank of a
                                  group of cp_size; cp_size 0 or 1 = not split */
  int64_t first_sample0;       /* PRT_INPUT of an elastic run: first_sample of its pass 0 */
  void *data;                  /* owned device memory (ctx->backend->device), PRT_ALIGN-aligned:
                                  numel fp32 (int32 for inputs), NULL until
                                  prt_ctx_allocate; host code reads and writes it through
                                  prt_host_view_begin/end */
  float *grad_copy;            /* owned host (numel) copy of the gradient handed to
                                  prt_observe_grad during the dump step; NULL otherwise */
  void *staging;               /* PRT_INPUT and PRT_OUTPUT on a device that is not host
                                  visible: owned host memory (the device's host_alloc:
                                  page-locked on a GPU) the data loader fills and the device
                                  copies from without the host waiting (prt_data_fill), or the
                                  loss is copied to (prt_local_loss); NULL otherwise */
} prt_tensor_info;

/* Local element j of t lies at element *full of the full flattened tensor; returns how many
 * local elements from j on are contiguous there (>= 1 for 0 <= j < numel). Through a
 * tensor-parallel slice and a shard alike. */
int64_t prt_tensor_run(const prt_tensor_info *t, int64_t j, int64_t *full);

/* A backend object (MPI_Request, MPI_Comm) stored by value; each backend checks it fits. */
typedef union prt_opaque {
  void *p;   /* pointer-like handles (Open MPI) */
  int64_t i; /* integer handles (MPICH) */
} prt_opaque;

/* A communicator declared by prt_declare_group. */
typedef struct prt_group {
  int64_t n;          /* members; 0 = id not declared */
  int64_t *members;   /* owned (n) device ids, strictly ascending */
  int64_t index;      /* this rank's position in members, or -1 if it is not a member */
  int64_t shift;      /* a group family (prt_declare_group_family): members are the
                         declared base + shift, shift = k * stride; 0 otherwise */
  int64_t stride;     /* the family's stride, 0 for a plain group */
  prt_opaque comm;    /* the backend's communicator (members only), after
                         prt_comm_groups_create */
  int folded;         /* an elastic run (elastic.c): the declared members mapped onto fewer
                         ranks (a data-parallel group); its all-reduces sum the passes */
} prt_group;

/* What a nonblocking call asked for; keep in sync with the name tables indexed by it
 * (PRT_OP_ABI in dist.c, op_name in trace.c, where in comm/mpi.c). */
typedef enum {
  PRT_OP_SEND = 0,
  PRT_OP_RECV = 1,
  PRT_OP_ALL_REDUCE = 2,
  PRT_OP_REDUCE_SCATTER = 3,
  PRT_OP_ALL_GATHER = 4,
  PRT_OP_ALL_TO_ALL = 5, /* expert parallelism: block k of in goes to member k */
} prt_op_kind;

/* One nonblocking transfer, as the backend sees it. */
typedef struct prt_comm_op {
  int32_t kind;     /* prt_op_kind */
  int32_t stream;   /* trace lane */
  const float *in;  /* SEND: source (n); REDUCE_SCATTER: in (n * |group|); ALL_GATHER: in (n);
                       ALL_TO_ALL: in (n) */
  float *out;       /* RECV: destination (n); ALL_REDUCE: buffer (n); REDUCE_SCATTER: out (n);
                       ALL_GATHER: out (n * |group|); ALL_TO_ALL: out (n) */
  int64_t n;        /* floats, as passed to the ABI call (n, n_out or n_in) */
  int64_t peer;     /* SEND/RECV: the other device; -1 otherwise */
  int64_t tag;      /* SEND/RECV: message tag */
  int64_t group;    /* collectives: group id; -1 otherwise */
  int32_t bf16;     /* ALL_REDUCE, REDUCE_SCATTER from prt_iall_reduce_bf16 /
                       prt_ireduce_scatter_bf16 (--grad-reduce bf16): in and out hold n bf16
                       values (uint16_t, despite their type), summed pairwise in fp32 and
                       rounded back to bf16; 0: floats */
} prt_comm_op;

/* How a GPU binary's ranks exchange data (--comm; PIPER_COMM stands in when the flag is not
 * given): AUTO picks NCCL where the binary has the NCCL backend and each rank of the node has
 * its own GPU, MPI staging through host memory otherwise (backend.c prt_backend_use_gpu). */
typedef enum { PRT_COMM_AUTO = 0, PRT_COMM_MPI, PRT_COMM_NCCL } prt_comm_choice;

/* A slot of the handle table: handle = gen << 32 | slot index. */
typedef struct prt_op_slot {
  prt_comm_op op;   /* what was issued */
  prt_opaque req;   /* the backend's request */
  uint32_t gen;     /* bumped each time the slot is reused, so stale handles are caught */
  int busy;         /* 1 from issue until prt_wait */
  int done;         /* 1 once the engine's test saw it complete (tracing): prt_wait only
                       records */
  double t_issue;   /* microseconds on the trace clock when issued (if tracing) */
  double t_done;    /* microseconds on the trace clock when the runtime first saw it complete:
                       a prt_wait (its own, or another's poll of every transfer in flight) */
  /* Staged through host memory (a device that is not host visible, e.g. a GPU under
   * --comm mpi): op's buffers are these owned host copies, and prt_wait copies host_out back
   * to dev_out (out_bytes). NULL / 0 when the transfer runs on the tensors themselves. */
  float *host_in, *host_out;
  float *dev_out;
  size_t out_bytes;
  const struct prt_xfer_vtable *xfer; /* the engine running it (the backend's for its kind) */
} prt_op_slot;

/* An elastic run (runtime/elastic.c): a role plan compiled for R replicas started on fewer
 * ranks. Each rank stands in for k consecutive replicas: it runs the role's step k times
 * (passes) on their rows, summing the gradients before the data-parallel all-reduce of the
 * last pass; only that pass updates the weights. */
typedef struct prt_elastic {
  int64_t k;          /* replicas this rank stands in for; 0 or 1: the plan runs as compiled */
  int64_t roles;      /* the plan's roles (pipeline devices of a replica) */
  int64_t pass;       /* the pass running, 0..k-1 */
  int64_t seq;        /* folded all-reduces and reduce-scatters issued so far in this pass */
  float **acc;        /* owned (nacc): transfer seq's gradient summed over the passes so
                         far, acc_n[seq] floats each (a reduce-scatter's: the sum, then its
                         k-shard result at rs_at[seq]) */
  int64_t *acc_n;     /* owned (nacc) */
  const void **rs_key; /* owned (nacc): the compiled output buffer of reduce-scatter seq (its
                          one shard), which the update reads; NULL for an all-reduce */
  int64_t *rs_at;     /* owned (nacc): where reduce-scatter seq's k shards start in acc[seq] */
  int64_t nacc;       /* entries of acc, acc_n, rs_key and rs_at */
  double loss;        /* sum of loss * rows of this step's passes before the last */
  char refusal[640];  /* why this world cannot run the plan ("" = it can): prt_check_world
                         prints it */
} prt_elastic;

typedef struct prt_trace prt_trace;     /* trace.c */
typedef struct prt_backend prt_backend; /* backend.c, below */
typedef struct prt_catalog prt_catalog; /* catalog.c */

struct prt_ctx {
  prt_tensor_info *tensors; /* owned array (ntensors), indexed by tensor id */
  int64_t ntensors;         /* 1 + the largest id declared so far */
  int64_t cap;              /* allocated length of tensors */
  int64_t arena_bytes;      /* bytes requested by prt_declare_arena (0 if never called) */
  int64_t arena_activations; /* the plan's peak activation bytes in the arena (-1: unknown) */
  int64_t arena_gradients;   /* the plan's peak gradient bytes in the arena (-1: unknown) */
  void *arena;              /* owned device memory, PRT_ALIGN-aligned, arena_bytes (at
                               least PRT_ALIGN) */
  const prt_backend *backend; /* borrowed: the backend record at create (the process's,
                               prt_backend_current): its device is where every tensor and
                               the arena live (the CPU until a GPU plan's setup opens one,
                               before prt_ctx_allocate) */
  prt_dstream **streams;    /* owned (nstreams) device streams, one per plan stream id,
                               created by prt_ctx_allocate; NULL before */
  int allocated;            /* 1 once prt_ctx_allocate succeeded: storage exists */
  prt_status decl_status;   /* first error made during piper_setup, reported by allocate */

  int64_t rank;             /* this process's device id (the backend's rank at create) */
  int64_t world;            /* devices the backend runs (1 under serial) */
  int64_t declared_world;   /* prt_declare_world's count; 0 = never called (one device) */
  int64_t declared_batch;   /* prt_declare_batch's rows; 0 = never called */
  int64_t global_batch;     /* rows of one step over the world: declared, else the B of this
                               rank's first "tokens" (prt_main agrees on it over ranks) */
  int64_t role;             /* prt_declare_roles: this rank's role, -1 none (0 if never called) */
  int64_t replica;          /* and its replica index k in that role (0 if never called) */
  int64_t seq_len;          /* T shared by every input of this rank; 0 if it has none */

  prt_group *groups;        /* owned array (ngroups), indexed by group id */
  int64_t ngroups;          /* 1 + the largest group id declared */
  int groups_created;       /* 1 once prt_comm_groups_create ran */
  int64_t *peers;           /* owned (npeers): the ranks this rank's send/recv name, distinct,
                               as prt_declare_peer gave them (only plans whose receives follow
                               their senders' order declare them: NCCL's p2p needs that) */
  int64_t npeers, cap_peers; /* used, allocated */
  int comm;                 /* --comm as a prt_comm_choice (prt_run sets it before the plan's
                               setup; prt_backend_use_gpu resolves AUTO) */
  int comm_resolved;        /* 1 once a GPU setup consumed `comm`: a CPU binary given
                               --comm nccl is refused after its setup */
  char **stream_names;      /* owned array (nstreams) of owned names; NULL entries unnamed */
  int64_t nstreams;         /* 1 + the largest stream id named */

  prt_op_slot *ops;         /* owned handle table (ops_cap slots) */
  int64_t ops_cap;          /* slots allocated */
  int64_t ops_busy;         /* slots issued and not yet waited */
  int64_t *ops_free;        /* owned (ops_cap): a stack of the free slots' indices */
  int64_t ops_nfree;        /* entries on ops_free (ops_cap - ops_busy) */

  prt_trace *trace;         /* owned; NULL unless tracing (prt_trace_start) */
  prt_catalog *catalog;     /* owned; which rank holds which range of each parameter and
                               optimizer state, built by the first collective that needs it */

  double lr;                /* AdamW learning rate (--lr) */
  double weight_decay;      /* AdamW decoupled weight decay (--weight-decay) */
  int64_t adam_t;           /* AdamW step count, 1 for the first update (step s uses s+1) */
  double adam_beta1;        /* --adam-beta1: overrides tdag.adamw's beta1; NAN = the IR's */
  double adam_beta2;        /* --adam-beta2: overrides tdag.adamw's beta2; NAN = the IR's */
  double adam_eps;          /* --adam-eps: overrides tdag.adamw's eps; NAN = the IR's */
  double grad_clip;         /* --grad-clip G: max global L2 norm; 0 = no clipping */
  double grad_sq;           /* this rank's counted sum of squared gradients, this step
                               (prt_grad_sq_accum; reset by prt_grad_norm_sync) */
  double grad_norm;         /* the step's global gradient L2 norm, before clipping */
  float clip_scale;         /* what prt_adamw multiplies every gradient by: min(1, G/(norm
                               + 1e-6)) after prt_grad_norm_sync, else 1 */

  int64_t dump_step;        /* step whose gradients prt_observe_grad captures; -1 = none */
  int64_t grad_scattered;   /* first parameter id declared by prt_declare_grad_scattered
                               (ZeRO-2: its gradient is never whole here); -1 = none */
  int64_t step;             /* the step now running (0-based) */
  prt_elastic elastic;      /* a run on fewer ranks than the plan's devices; k 0 = none */
};

/* ---- elastic runs (elastic.c) ---- */
/* 1 in a pass whose update is skipped (every pass of an elastic step but the last). */
static inline int prt_elastic_dry(const prt_ctx *ctx) {
  return ctx->elastic.pass < ctx->elastic.k - 1;
}
/* prt_declare_roles on a world smaller than the plan's: this rank's role and first replica,
 * and k; or the refusal (elastic.refusal), printed by the world check. */
void prt_elastic_roles(prt_ctx *ctx, int64_t nroles, const int64_t *start,
                       const int64_t *stride, const int64_t *count);
/* The rank that runs the plan's device `device` (itself unless elastic). */
int64_t prt_elastic_rank(const prt_ctx *ctx, int64_t device);
/* A group's declared members onto ranks (in place, sorted, duplicates dropped): *n shrinks
 * and *folded is set where members now share ranks. */
void prt_elastic_group(const prt_ctx *ctx, int64_t *members, int64_t *n, int *folded);
/* A group family (tensor parallelism) in an elastic run: 0 where every pass of this rank
 * finds its replica's instance on the same ranks, one member a rank; else refuses it
 * (prt_elastic_refuse) naming the group, member and devices. 0 where not elastic. */
int prt_elastic_family(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *base,
                       int64_t stride);
/* A declaration an elastic run cannot honour (an expert, a CP chunk): fails
 * the setup naming `what` and why; 0 where the run is not elastic. */
int prt_elastic_refuse(prt_ctx *ctx, const char *what, const char *why);
/* After setup: 0 where the plan runs on this world (elastic or as compiled); else the
 * refusal, printed by rank 0. Notes the elastic run on rank 0. */
int prt_elastic_check(prt_ctx *ctx, int dump_grads, prt_status *st);
/* Before a folded all-reduce of buf (n floats): sums this pass's gradient into the passes'
 * total, and on the last pass adds that total to buf. */
void prt_elastic_fold(prt_ctx *ctx, float *buf, int64_t n, int64_t group);
/* Before a folded reduce-scatter (ZeRO-2/3; *op checked): sums the input over the passes
 * and points the transfer at that sum and at a k-shard result (the union of the stood-in
 * replicas' shards; the compiled output holds one), which prt_elastic_grad hands the update. */
void prt_elastic_scatter(prt_ctx *ctx, prt_comm_op *op);
/* The gradient an update or the norm reads at g: a folded reduce-scatter's k-shard result
 * where g is its compiled output, else g itself. */
const float *prt_elastic_grad(const prt_ctx *ctx, const float *g);
/* Floats each rank gives an all-gather of n (compiled: one shard) over group: k shards over
 * a folded group, n otherwise. */
int64_t prt_elastic_gather_n(const prt_ctx *ctx, int64_t n, int64_t group);
/* Step s: fills the inputs and runs fn once per pass (once when not elastic). */
struct prt_data;
void prt_elastic_step(prt_ctx *ctx, const struct prt_data *data, int64_t s,
                      void (*fn)(prt_ctx *));
/* This rank's sum of loss * rows over its "loss" outputs (the value prt_dist_loss reduces). */
double prt_local_loss(const prt_ctx *ctx);
void prt_elastic_free(prt_ctx *ctx);

/* An empty context with defaults (lr 1e-3, no weight decay, t = 1, no dump, the CPU
 * device); rank and world come from the backend (0 and 1 before prt_comm_init). */
prt_ctx *prt_ctx_create(void);
void prt_ctx_destroy(prt_ctx *ctx); /* frees everything, group communicators too; NULL ok */
/* After piper_setup: checks the declarations (every id 0..n-1 declared once; names unique
 * except the inputs "tokens"/"targets" and the outputs "loss", which may repeat; every input
 * (B, T) with one T; groups dense and within the declared world; with a declared batch,
 * every input's rows inside it) and allocates zeroed storage for every tensor and the arena
 * on ctx->backend->device, and a device stream per plan stream id. Sets global_batch and seq_len.
 * Local: other ranks are not consulted. Out of device memory fails with the device's
 * message (what the CPU device says: "out of memory; free memory or shrink ..."). */
int prt_ctx_allocate(prt_ctx *ctx, prt_status *st);
/* Sum of numel over PRT_PARAM tensors (local storage: a shard counts its slice). */
int64_t prt_ctx_param_count(const prt_ctx *ctx);
/* Bytes of local storage of every tensor of kind `kind`. */
int64_t prt_ctx_bytes(const prt_ctx *ctx, int32_t kind);
/* Id of the first tensor named `name`, or -1. */
int64_t prt_ctx_find(const prt_ctx *ctx, const char *name);

/* ---- the backend (backend.c): where tensors live and how the ranks talk ----
 * One record, chosen at start-up (the world by prt_comm_init, the device and the GPU's
 * collectives by a GPU plan's setup through prt_backend_use_gpu, before anything is
 * allocated), holds everything the runtime asks of the machine: the device (device.h: the
 * CPU's, or a GPU's), the comm backend (the world of ranks: its size, the runtime's own
 * agreements, checkpoint assembly, the plan's groups) and, per kind of the plan's transfers,
 * the engine that runs it. A context reaches it as ctx->backend. The runtime calls the
 * prt_comm_* wrappers, the record's device and its engines, and never asks which backend it
 * has. Backends:
 *   comm/serial.c  "serial" (prt_comm_serial, always in libpiper_rt): a world of one process
 *   comm/mpi.c     "mpi" (prt_comm_mpi, libpiper_rt_mpi): one device per MPI rank; a binary
 *                  that links it (with -Wl,-u,prt_comm_mpi) runs over MPI, under mpirun or
 *                  alone, and the serial backend otherwise
 *   comm/nccl.c    "nccl" (libpiper_rt_nccl): not a world of its own but an engine for the
 *                  plan's transfers on GPU memory (collectives, send/recv, all-to-all),
 *                  installed over MPI's by the GPU setup (prt_nccl_attach,
 *                  prt_backend_use_engine, one row per kind)
 * World-level calls run on a communicator of their own, so they never match the plan's
 * messages. Any failure inside a backend (an MPI error) prints "piper: error: ..." and stops
 * every rank; these functions therefore return nothing. */

typedef enum { PRT_REDUCE_SUM = 0, PRT_REDUCE_MAX = 1 } prt_reduce_op;

/* The watchdog: how long a transfer or collective may wait before every rank is ended, and
 * what the run is doing, for its message. Set by prt_main, read by the comm backend (handed
 * to it at init). */
typedef struct prt_watchdog {
  double timeout_s; /* --timeout: seconds; 0 = wait forever */
  int64_t step;     /* the step running, -1 before the first */
  const char *what; /* borrowed constant: the runtime's own collective now running (e.g.
                       "the loss all-reduce"), NULL inside the plan's step */
} prt_watchdog;
extern prt_watchdog prt_watch;

#define PRT_OP_KINDS 6 /* prt_op_kind's values */

/* An engine for the plan's nonblocking transfers. */
typedef struct prt_xfer_vtable {
  const char *name;  /* "serial", "mpi", "nccl" */
  int device_memory; /* 1: reads and writes the device's memory itself and completes on the
                        device's streams (NCCL); 0: host memory, so dist.c stages the tensors
                        of a device that is not host visible through host buffers */
  /* Starts a checked transfer (dist.c validated it) into *req. */
  void (*start)(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req);
  /* Host memory: waits for it. Device memory: orders the device's later work after it (the
   * host need not wait). Called once per transfer, except after a host-memory test said 1. */
  void (*finish)(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req);
  /* Without blocking: 1 if the transfer has completed, else 0. For the trace, which stamps a
   * transfer's end when the runtime first sees it complete. A host-memory engine has then
   * finished it (finish must not follow); a device-memory engine only reports. */
  int (*test)(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req);
} prt_xfer_vtable;

/* A comm backend: a world of ranks. Every entry is required. */
typedef struct prt_comm_vtable {
  const char *name;  /* "serial", "mpi": in the banner ("4 devices (mpi)") */
  int one_process;   /* 1: the world is this process alone, whatever launched it */
  /* Starts the backend (MPI_Init) unless it runs already; returns 1 if this call started it,
   * and then the caller owns the matching finalize. `watch` is borrowed for the run. */
  int (*init)(int *argc, char ***argv, const prt_watchdog *watch);
  void (*finalize)(void);
  int64_t (*size)(void); /* 1 while the backend is not running */
  int64_t (*rank)(void); /* 0 while the backend is not running */
  void (*abort)(int code) __attribute__((noreturn));
  void (*barrier)(void);
  void (*allreduce_i64)(int64_t *buf, int64_t n, prt_reduce_op op);
  void (*allreduce_f64)(double *buf, int64_t n);
  void *(*allgatherv)(const void *in, int64_t bytes, int64_t *counts);
  void (*send_bytes)(const void *buf, int64_t bytes, int64_t peer);
  void (*recv_bytes)(void *buf, int64_t bytes, int64_t peer);
  void (*groups_create)(prt_ctx *ctx);
  void (*group_free)(prt_group *g);
  void (*progress)(void);
  prt_xfer_vtable xfer; /* the plan's transfers over this world, on host memory */
  /* Starts a bf16 sum on host memory (op->bf16: an all-reduce or reduce-scatter of bf16
   * values, each pair added in fp32 and rounded to bf16), finished and tested by xfer's
   * finish and test. NULL: the world has none; dist.c refuses such a transfer, as it does one
   * whose kind another engine (NCCL) runs. */
  void (*start_bf16)(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req);
} prt_comm_vtable;

/* The backend record: the device and the comm backend this process runs on, one object. */
struct prt_backend {
  prt_device *device;                       /* where tensors live and how bytes move (the
                                               device vtable, device.h): the CPU device, or
                                               the GPU prt_backend_use_gpu opened */
  const prt_comm_vtable *comm;              /* the world */
  const prt_xfer_vtable *xfer[PRT_OP_KINDS]; /* the engine of each prt_op_kind */
  prt_comm_choice collectives;              /* MPI (staged through host memory) until
                                               prt_backend_use_gpu resolves --comm to NCCL */
  void (*run_step)(prt_ctx *ctx, void (*step)(prt_ctx *)); /* runs one pass of the plan's
                                               step function: NULL calls it; the GPU kernels'
                                               (kernels/cuda.c) replay it as a CUDA graph
                                               and time its kernels */
};

extern const prt_comm_vtable prt_comm_serial; /* comm/serial.c */

/* The process's record: until prt_comm_init, the serial backend (one rank, rank 0). */
const prt_backend *prt_backend_current(void);
/* Runs the plan's transfers of `kind` (a prt_op_kind) on `engine` from now on; a kind out of
 * range or no engine is prt_fatal. NCCL installs one row per kind (comm/nccl.c). */
void prt_backend_use_engine(int kind, const prt_xfer_vtable *engine);
/* The three collectives (all-reduce, reduce-scatter, all-gather) onto one `engine`. */
void prt_backend_use_collectives(const prt_xfer_vtable *engine);
/* Runs every later step pass through `runner` (kernels/cuda.c's, at the GPU plan's setup). */
void prt_backend_use_step_runner(void (*runner)(prt_ctx *ctx, void (*step)(prt_ctx *)));
/* One pass of the plan's step function `step`: through the record's runner, if any. */
void prt_backend_run_step(prt_ctx *ctx, void (*step)(prt_ctx *));
/* A GPU plan's start-up (kernels/cuda.c prt_cuda_setup, first thing): puts the device of this
 * rank's GPU in the record (the node-local rank's, modulo the GPUs there; opened once per
 * process) and resolves --comm (ctx->comm, else PIPER_COMM, else AUTO: NCCL where the binary
 * links libpiper_rt_nccl, the plan has several ranks and each rank of the node has its own
 * GPU; MPI staging through host memory otherwise, which lets ranks share a GPU), installing
 * NCCL's engines (collectives, all-to-all) when chosen. A bad --comm/PIPER_COMM, NCCL asked
 * for without the library or with ranks sharing a GPU, and no usable GPU are prt_fatal. Sets
 * ctx->comm_resolved. */
void prt_backend_use_gpu(prt_ctx *ctx);

/* Chooses the backend (MPI where the binary links it, serial otherwise), installs its abort
 * as prt_fatal's stop, and starts it; returns 1 if this call started it, and then the caller
 * owns the matching prt_comm_finalize. Called first thing by prt_main. */
int prt_comm_init(int *argc, char ***argv);
void prt_comm_finalize(void);
/* The wrappers: the record's comm backend, as documented at prt_comm_vtable. */
int64_t prt_comm_size(void);
int64_t prt_comm_rank(void);
/* Ends every rank with exit status `code` (MPI_Abort), or just this process when alone. */
void prt_comm_abort(int code) __attribute__((noreturn));
/* Collective, blocking, over the whole world. */
void prt_comm_barrier(void);
void prt_comm_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op);
void prt_comm_allreduce_f64(double *buf, int64_t n); /* sum */
/* Concatenation of every rank's `bytes` bytes at `in`, in rank order: an owned buffer; each
 * rank's length goes to counts[rank] (counts has world entries). */
void *prt_comm_allgatherv(const void *in, int64_t bytes, int64_t *counts);
/* Point-to-point between ranks of the world, blocking, in program order. */
void prt_comm_send_bytes(const void *buf, int64_t bytes, int64_t peer);
void prt_comm_recv_bytes(void *buf, int64_t bytes, int64_t peer);
/* Collective: creates the communicator of every declared group, in id order. */
void prt_comm_groups_create(prt_ctx *ctx);
void prt_comm_group_free(prt_group *g); /* frees g->comm if this rank is a member */
/* Local, never blocks: advances the plan's transfers in flight. MPI moves a nonblocking
 * collective only inside MPI calls, so the CPU kernels call this at their entry (and between
 * the slices of a long one) while the backward pass runs; it returns at once when nothing is
 * in flight, when it ran less than PRT_PROGRESS_US ago, or with PIPER_PROGRESS=off. */
void prt_comm_progress(void);
#define PRT_PROGRESS_US 50

/* ---- distributed plans (dist.c) ---- */

/* Collective: makes one status of every rank's. If any rank failed, every rank returns the
 * largest code; the lowest rank that has a message keeps it, every other rank's status gets
 * that code and an empty message (nothing to print). No-op for one device. */
int prt_agree(const prt_ctx *ctx, prt_status *st);
/* The checks and agreements prt_main needs after piper_setup; collective. Agrees on the
 * global batch and T, checks tokens and losses exist over the world and that the losses'
 * rows add up to the global batch, that every rank declared the same groups, and creates
 * their communicators. *T_out gets the world's T. */
int prt_dist_setup(prt_ctx *ctx, int64_t *T_out, prt_status *st);
/* Collective: the step's loss, sum over ranks and "loss" outputs of value * rows, divided by
 * the global batch; `pending` (0 or 1, this rank failed and must stop) comes back as the
 * world's maximum in *stop, and `signal` (0, SIGINT or SIGTERM: this rank was asked to stop)
 * as the world's strongest in *signal_out (SIGTERM over SIGINT). One allreduce. */
double prt_dist_loss(prt_ctx *ctx, int pending, int signal, int *stop, int *signal_out);

/* ---- files (files.c) ---- */

/* A file the command line names. */
typedef struct prt_file_use {
  const char *flag; /* "--metrics", for messages */
  const char *path; /* borrowed */
  int output;       /* 1: the run writes it; 0: it reads it */
  int in_place_ok;  /* 1 on --init-checkpoint and --save-checkpoint: one file may be both
                       (resuming in place is safe: the input is read whole before the first
                       step and the output replaces it atomically) */
} prt_file_use;
/* Local. Checks, before anything is written: every output's folder exists, is a folder and is
 * writable; an output that exists is a regular file (not a device, FIFO or directory); no
 * output is the same file as an input or another output (same device and inode where both
 * exist, else the same resolved name), except two entries marked in_place_ok. Fails naming
 * the flag(s) and file(s). */
int prt_files_check(const prt_file_use *files, int64_t n, prt_status *st);
/* Outputs are written atomically through the base library (piper/base/atomic_file.h). */

/* ---- trace (trace.c) ---- */

#define PRT_TRACE_MAX_EVENTS (1 << 20) /* per rank; later events are counted, not kept */

/* Collective: aligns this rank's trace clock with rank 0's (min-RTT ping-pong, see trace.c),
 * then starts recording spans. */
void prt_trace_start(prt_ctx *ctx);
/* Microseconds on the trace clock: rank 0's monotonic clock since its trace started. */
double prt_trace_now(const prt_ctx *ctx);
/* Records a complete compute span `name` (borrowed) on lane `stream`. */
void prt_trace_event(prt_ctx *ctx, const char *name, int64_t stream, double t0, double t1);
/* Records transfer `op` from its issue t0 to t1, when the runtime first saw it complete; its
 * own prt_wait ran from wait0 to wait1. */
void prt_trace_transfer(prt_ctx *ctx, const prt_comm_op *op, double t0, double t1,
                        double wait0, double wait1);
/* Collective unless per_rank: rank 0 writes every rank's events to `path`, one process per
 * rank. per_rank (local): each rank writes path with ".rank<k>" before its extension. */
int prt_trace_write(const prt_ctx *ctx, const char *path, int per_rank, prt_status *st);
/* "trace.json" -> "trace.rank3.json", owned (allocated: no length limit, no truncation). */
char *prt_trace_path(const char *path, int64_t rank);
void prt_trace_free(prt_trace *t);

/* ---- progress and metrics (report.c) ---- */

/* One training step as reported: the stdout line (prt_progress_line) and the --metrics
 * "train" record (prt_metrics_train). Rank 0 fills it after the step's loss all-reduce. */
typedef struct prt_step_record {
  int64_t step;        /* 0-based step index (metrics "step"; stdout shows step + 1) */
  int64_t total;       /* the step count the run ends at: first step + --steps (S in "s/S") */
  double loss;         /* mean loss over the global batch, before this step's update */
  double lr;           /* learning rate this step's update used; NaN = not known, not shown */
  double grad_norm;    /* global L2 norm of the gradient; NaN = not known, not shown */
  double step_ms;      /* wall milliseconds of the step, its loss all-reduce included */
  double tokens_per_s; /* global batch x T / step time */
  double eta_s;        /* seconds left: remaining steps x mean step time so far; NaN = ? */
  int64_t page_faults; /* this rank's minor page faults during the step; -1 = not known */
} prt_step_record;

/* Writes r as one {"kind": "train", ...} line and flushes; returns fflush's result. */
int prt_metrics_train(FILE *f, const prt_ctx *ctx, const prt_step_record *r);
/* Prints "step s/S | loss L [| lr x] [| grad norm g] | ms | tok/s | eta m:ss" to out. */
void prt_progress_line(FILE *out, const prt_step_record *r);
/* "m:ss" below an hour, "h:mm:ss" from one on; "?" for NaN or a negative time. Returns buf. */
char *prt_format_eta(double seconds, char *buf, size_t cap);
/* 1 if step's line is printed under --log-every `every`: the first and last step of the run
 * always, and every step whose 1-based number (step + 1) is a multiple of `every`. */
int prt_progress_due(int64_t step, int64_t first, int64_t last, int64_t every);
/* Collective: gathers every rank's memory; rank 0 writes {"kind": "summary", "ranks": [...]}
 * to metrics (if not NULL; a write failure fills st naming metrics_path) and prints a table
 * unless quiet. */
void prt_report_memory(prt_ctx *ctx, FILE *metrics, const char *metrics_path, int quiet,
                       prt_status *st);

/* ---- the tensor catalog (catalog.c) ---- */

/* Builds ctx->catalog if it is not built yet: every parameter and optimizer-state name
 * declared on any rank with its full shape and the element ranges each rank holds.
 * Collective. Fails (identically on every rank) if ranks disagree on a parameter's shape or
 * kind, or some elements of a parameter are held by no rank. The same faults in optimizer
 * state (or a moment "optim.<slot>.<param>" whose shape is not its parameter's) do not fail:
 * they make prt_catalog_optim_problem say why its state cannot be assembled. */
int prt_catalog_build(prt_ctx *ctx, prt_status *st);
/* PRT_PARAM or PRT_OPTIM if some rank declares a tensor called `name`, else -1 (after
 * prt_catalog_build). */
int32_t prt_catalog_kind(const prt_ctx *ctx, const char *name);
/* The first dimension of the parameter called `name` (its full shape) on any rank, or 0 if
 * no rank declares it: "wte.weight" gives the vocabulary V. */
int64_t prt_catalog_dim0(const prt_ctx *ctx, const char *name);
/* The model's vocabulary V: dim 0 of its token embedding (GPT's wte.weight, Qwen3's
 * model.embed_tokens.weight); 0 if the plan declares neither. */
int64_t prt_catalog_vocab(const prt_ctx *ctx);
/* Sum of the full sizes of every parameter in the world. */
int64_t prt_catalog_numel(const prt_ctx *ctx);
/* Optimizer-state names declared in the world (0: the plan has no optimizer state). */
int64_t prt_catalog_optim_count(const prt_ctx *ctx);
/* NULL if the optimizer state assembles into full tensors; else why not, one line (then
 * checkpoints neither save nor load it). Alike on every rank. */
const char *prt_catalog_optim_problem(const prt_ctx *ctx);
void prt_catalog_free(prt_catalog *c);

/* ---- init (init.c) ---- */

/* Fills every PRT_PARAM by its init kind; PRT_INIT_NORMAL uses prt_init_normal. A shard gets
 * its slice of the full tensor, so every rank agrees without communication. */
void prt_init_params(prt_ctx *ctx, uint64_t seed);
/* out[0..n) = std * normal(0, 1) from the generator seeded by (seed, name); see init.c for
 * the exact algorithm. */
void prt_init_normal(float *out, int64_t n, uint64_t seed, const char *name, double std);
/* out[0..n) = elements [begin, begin + n) of what prt_init_normal draws for a longer n, without
 * drawing the first `begin` (the generator is a counter: it jumps). */
void prt_init_normal_range(float *out, int64_t begin, int64_t n, uint64_t seed,
                           const char *name, double std);

/* ---- data (data.c) ---- */

/* How a data file holds its tokens (--data-format). The values are the bytes per token. */
typedef enum {
  PRT_DATA_BYTES = 1, /* "bytes": each byte is a token (V <= 256); the default */
  PRT_DATA_U16 = 2,   /* "u16": little-endian uint16 ids, nanoGPT's train.bin */
  PRT_DATA_U32 = 4,   /* "u32": little-endian uint32 ids, for vocabularies past 65536 */
} prt_data_format;

/* "bytes" | "u16" | "u32" -> *out; 2 with a message naming --data-format otherwise. */
int prt_data_format_parse(const char *name, prt_data_format *out, prt_status *st);

/* Training tokens: a file's (or the built-in corpus's) tokens in one of the formats. */
typedef struct prt_data {
  const uint8_t *bytes;   /* the file's mmap (owned) or prt_default_corpus (borrowed) */
  int64_t n;              /* N, in tokens (the file's size over the token width) */
  prt_data_format format; /* the token width and so how bytes is read */
  int mapped;             /* 1 if bytes is an mmap to unmap */
  size_t mapped_bytes;    /* the mapping's length, for munmap */
  const char *name;       /* borrowed: the file name, or "<built-in corpus>" */
} prt_data;

/* Opens `path` (NULL: the built-in corpus, bytes only) as `format` and checks its size is a
 * whole number of tokens, it holds at least T + 2 of them and, when V > 0, that every token is
 * below V (naming the first one that is not and its position). A wide format needs V > 0: an
 * id the model cannot embed would index past its table. */
int prt_data_open(prt_data *d, const char *path, prt_data_format format, int64_t T, int64_t V,
                  prt_status *st);
void prt_data_close(prt_data *d);
/* Fills every "tokens" and "targets" input for step s (see data.c for the offsets). */
void prt_data_fill(const prt_data *d, prt_ctx *ctx, int64_t step);

/* The vectorizable tanh GELU uses (kernels/cpu.c), exposed for its accuracy test. */
float prt_tanh_approx(float u);

extern const char prt_default_corpus[];  /* public-domain English prose, NUL-terminated */
extern const int64_t prt_default_corpus_len; /* strlen(prt_default_corpus) */

/* ---- safetensors (safetensors.c) ---- */

/* A dtype a safetensors file may hold (a row of safetensors.c's table): its name in the
 * header, its --save-dtype name, its size and its converters from and to fp32 (store NULL:
 * read only). Little-endian bytes either way. */
typedef struct prt_st_dtype {
  const char *name;                                       /* "F32", "BF16", "F16" */
  const char *flag;                                       /* "fp32", "bf16", "fp16" */
  size_t size;                                            /* bytes per element */
  void (*load)(const void *src, float *dst, size_t n);    /* file elements -> fp32, exact */
  void (*store)(const float *src, void *dst, size_t n);   /* fp32 -> file elements (RNE) */
} prt_st_dtype;
/* The dtypes prt_st_dtype_find knows, for messages. */
#define PRT_ST_DTYPES_READ "F32, BF16 or F16"
/* The row of header dtype `name`, or NULL (a dtype Piper does not read). */
const prt_st_dtype *prt_st_dtype_find(const char *name);
/* The row --save-dtype `flag` names among the written ones ("fp32", "bf16"), or NULL. */
const prt_st_dtype *prt_st_dtype_for_flag(const char *flag);
/* The scalar conversions, shared by the checkpoint dtypes (safetensors.c) and the bf16 kernels
 * of the mixed-precision policy (kernels/cpu_bf16.c), inline for the kernels' loops. BF16 and
 * F16 to fp32 are exact (F16 subnormals, infinities and NaN payloads kept). fp32 to BF16 is
 * torch.Tensor.bfloat16() (c10::round_to_nearest_even): adding 0x7fff plus the lowest kept bit
 * carries into the kept half exactly when the dropped half is above one half ulp, or equal to
 * it with an odd kept half; the carry also walks a finite value past the largest bf16 into
 * inf's pattern (0x7f80), as rounding should. A NaN would carry into the sign or become inf,
 * so it is kept apart: every NaN becomes 0x7FC0, what c10's scalar conversion gives (its
 * vectorized one gives 0xFFFF). */
static inline float prt_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16; /* bf16 is fp32's top half */
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint16_t prt_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float prt_f16_to_f32(uint16_t h);

/* One tensor to write: fp32, shape dims[0..ndim). */
typedef struct prt_st_entry {
  const char *name;     /* borrowed, NUL-terminated */
  int64_t ndim;         /* 0..PRT_MAX_DIMS */
  const int64_t *dims;  /* borrowed (ndim) */
  const float *data;    /* borrowed (product of dims) */
} prt_st_entry;

/* Writes a safetensors file atomically (piper/base/atomic_file.h: a new temporary next to
 * it, fsync, rename). On failure nothing is left at `path` that was not there before and the
 * temporary is removed; a `path` that is a device node, FIFO or directory is refused.
 * __metadata__ holds "format": "pt" and, when step >= 0, "step": "<step>". */
int prt_safetensors_write(const char *path, const prt_st_entry *entries, int64_t n,
                          int64_t step, prt_status *st);
/* The same with every tensor stored as dtype dt (a row with a store converter). */
int prt_safetensors_write_as(const char *path, const prt_st_entry *entries, int64_t n,
                             int64_t step, const prt_st_dtype *dt, prt_status *st);
/* One tensor of a safetensors header, as read. */
typedef struct prt_st_in {
  char *name;                     /* owned, decoded UTF-8 */
  char dtype[16];                 /* e.g. "F32"; longer names are cut (and never match) */
  const prt_st_dtype *type;       /* dtype's row; NULL: a dtype Piper does not read */
  int64_t ndim;                   /* 0..8 */
  int64_t dims[8];                /* shape */
  uint64_t begin, end;            /* data_offsets, bytes into the data section */
} prt_st_in;

/* A parsed and checked safetensors header (prt_safetensors_parse). */
typedef struct prt_st_header {
  prt_st_in *ts;   /* owned (n), sorted by name (strcmp), names unique */
  int64_t n;       /* tensors */
  int64_t step;    /* __metadata__ "step"; -1 = absent */
} prt_st_header;

/* Parses the `size` bytes of a whole safetensors file image's first part: the 8-byte header
 * length, then the JSON header, given that the file holds `size` bytes in all (only the
 * first 8 + header length of them need be at `bytes`: pass avail = what is there). Checks,
 * as the safetensors format does: the header length fits the file (and 100 MB), the header is
 * a JSON object of tensors {dtype, shape, data_offsets} and optional __metadata__, names are
 * unique, and the tensors' data_offsets tile the data section exactly (sorted by offset, each
 * begins where the previous ended, the first at 0, the last ends at the file's end: no holes,
 * no overlaps, nothing after). Time O(n log n) and memory O(header bytes). On failure fills
 * st (code 1) naming `path` and leaves *h empty; on success the caller frees *h with
 * prt_st_header_free. Needs no context: the fuzz target (test/fuzz) drives it directly. */
int prt_safetensors_parse(const uint8_t *bytes, uint64_t avail, uint64_t size,
                          const char *path, prt_st_header *h, prt_status *st);
void prt_st_header_free(prt_st_header *h);
/* The tensor called `name` in h, or NULL (binary search). */
const prt_st_in *prt_st_header_find(const prt_st_header *h, const char *name);
/* Reads and checks (prt_safetensors_parse) the header of the safetensors file open at f's
 * start, `size` bytes in all; *data_start gets the file offset of the data section. On
 * failure fills st naming `path` and leaves *h empty. */
int prt_safetensors_read_header(FILE *f, uint64_t size, const char *path, prt_st_header *h,
                                uint64_t *data_start, prt_status *st);
/* Reads `count` elements of tensor e, from its element `first` on, into dst as fp32
 * (converted from e's dtype); 0, or -1 if the file could not be read there or e's dtype is
 * not one Piper reads. */
int prt_safetensors_read(FILE *f, uint64_t data_start, const prt_st_in *e, uint64_t first,
                         float *dst, size_t count);

/* ---- checkpoints (checkpoint.c) ---- */

/* Collective. Rank 0 writes every parameter and every optimizer-state tensor declared on any
 * rank, full and by name, in the catalog's order (for one device: declaration order),
 * assembled from the ranks that hold their pieces (the lowest rank where pieces overlap), and
 * `step` (completed training steps; -1 = none) in the metadata. When the optimizer state
 * cannot be assembled (prt_catalog_optim_problem) rank 0 prints one warning and writes the
 * parameters only. Returns rank 0's status on rank 0; other ranks fail only where every rank
 * does (see prt_catalog_build): callers prt_agree after. */
int prt_checkpoint_save(prt_ctx *ctx, const char *path, int64_t step, prt_status *st);
/* prt_checkpoint_save with the parameters stored as dtype dt (--save-dtype; NULL or F32: the
 * same as prt_checkpoint_save). Any other dtype writes the parameters only, no optimizer
 * state, and rank 0 warns that the file is an inference checkpoint. Collective. */
int prt_checkpoint_save_as(prt_ctx *ctx, const char *path, int64_t step,
                           const prt_st_dtype *dt, prt_status *st);

/* What a checkpoint held besides parameters (prt_checkpoint_load). */
typedef struct prt_ckpt_info {
  int64_t step;      /* __metadata__ "step": steps the saving run completed; -1 = absent */
  int optim;         /* 1: every local PRT_OPTIM tensor was loaded; 0: they are untouched */
  int foreign_optim; /* the file holds "optim.*" tensors, none of this plan's */
  int optim_skipped; /* the file holds this plan's optimizer state, but the plan's state
                        cannot be mapped to full tensors (prt_catalog_optim_problem) */
} prt_ckpt_info;
/* Collective (it builds the catalog). Reads every local PRT_PARAM (a shard: its slice) from
 * `path`; the file must hold each as F32 with the declared full shape. Optimizer state: if the
 * file holds any tensor named like a PRT_OPTIM tensor of some rank, it must hold every local
 * one as well, F32 with its full shape (a partial set is an error naming what is missing), and
 * each local one (a shard: its slice) is read; if it holds none, they stay as they are. Other
 * tensors must be parameters of some rank, or named "optim.*" (ignored). The file is read only
 * after the whole header checked out. `info` (may be NULL) gets the step and what happened to
 * the optimizer state; alike on every rank that succeeds (it depends on the file and the
 * catalog only). */
int prt_checkpoint_load(prt_ctx *ctx, const char *path, prt_ckpt_info *info, prt_status *st);
/* Collective, like prt_checkpoint_save, for the gradients captured by prt_observe_grad; an
 * error names the first parameter whose gradient no rank observed. */
int prt_grads_save(prt_ctx *ctx, const char *path, prt_status *st);

/* Full tensors assembled on rank 0 from the ranks holding their pieces (catalog.c). */
typedef struct prt_assembly {
  prt_st_entry *entries; /* rank 0: owned (n) in catalog order; names and dims borrow the
                            catalog, data borrows local storage or bufs */
  int64_t n;             /* entries (0 on other ranks) */
  float **bufs;          /* owned (n): tensors assembled here; NULL where an entry borrows */
} prt_assembly;
/* Collective. Rank 0 gets every parameter in full (and every optimizer-state tensor if
 * `with_optim`: only when prt_catalog_optim_problem is NULL), each element taken from the
 * lowest rank holding it (`grads`: the parameters' gradients, from the lowest rank that
 * observed them); other ranks send their pieces. Fails on every rank alike when some elements
 * have no source; `path` is the file being written, for messages. */
int prt_catalog_assemble(prt_ctx *ctx, int grads, int with_optim, const char *path,
                         prt_assembly *out, prt_status *st);
void prt_assembly_free(prt_assembly *a);
/* Collective: what prt_checkpoint_save writes, assembled on rank 0 (the catalog built, the
 * optimizer state included unless prt_catalog_optim_problem says why not, in which case rank
 * 0 prints the one warning naming `path`). prt_checkpoint_save writes it at once; the
 * background writer (checkpoint_ring.c) copies it and writes it later. */
int prt_checkpoint_assemble(prt_ctx *ctx, const char *path, prt_assembly *as, prt_status *st);

/* ---- the training loop's math (schedule.c) ---- */

/* --lr-schedule; keep in sync with the names in prt_schedule_parse. */
typedef enum { PRT_LR_CONSTANT = 0, PRT_LR_COSINE = 1, PRT_LR_LINEAR = 2 } prt_lr_schedule;

/* The loop flags beside the plan: schedule, clipping, AdamW overrides, evaluation. */
typedef struct prt_loop {
  prt_lr_schedule schedule; /* --lr-schedule (constant) */
  int64_t warmup;           /* --warmup-steps W (0) */
  double min_lr;            /* --min-lr (0): where cosine and linear end */
  int64_t total;            /* --total-steps S; -1 = not given (then K + --steps) */
  double grad_clip;         /* --grad-clip G; -1 = not given (no clipping); 0 is refused */
  double beta1, beta2, eps; /* --adam-beta1/2, --adam-eps; NAN = the plan's attributes */
  const char *eval_data;    /* --eval-data FILE, borrowed; NULL = no evaluation */
  int64_t eval_every;       /* --eval-every N (0 = never) */
  int64_t eval_batches;     /* --eval-batches K (default 1) */
} prt_loop;

/* ---- the command line (main.c) ---- */
/* What the command line asked for. */
typedef struct prt_opts {
  int64_t steps;          /* --steps: training steps to run (>= 0) */
  uint64_t seed;          /* --seed: parameter init seed */
  double lr;              /* --lr: AdamW learning rate */
  double weight_decay;    /* --weight-decay: AdamW decoupled weight decay */
  const char *data;       /* --data: borrowed from argv; NULL = built-in corpus */
  prt_data_format data_format; /* --data-format: how --data and --eval-data hold tokens */
  const char *metrics;    /* --metrics: JSON-lines file, borrowed; NULL = none */
  const char *init_ckpt;  /* --init-checkpoint: borrowed; NULL = fresh init */
  const char *save_ckpt;  /* --save-checkpoint: borrowed; NULL = none */
  const char *dump_grads; /* --dump-grads: borrowed; NULL = none */
  const char *trace;      /* --trace: borrowed; NULL = none */
  double timeout;         /* --timeout: seconds a transfer may wait (watchdog); 0 = forever */
  int64_t ckpt_every;     /* --checkpoint-every: save every N steps; 0 = only at the end */
  int quiet;              /* --quiet: no per-step lines on stdout */
  int64_t log_every;      /* --log-every: print every N-th step, the first and the last (>= 1) */
  int trace_per_rank;     /* --trace-per-rank: each rank writes its own trace file */
  int restart_steps;      /* --restart-steps: count from step 0 despite the checkpoint's step */
  int help;               /* --help: print usage and exit 0 */
  const char *lr_schedule; /* --lr-schedule: borrowed name, parsed into loop.schedule */
  prt_loop loop;          /* schedule, clipping, AdamW overrides, evaluation (schedule.c) */
  int comm;               /* --comm: a prt_comm_choice; PRT_COMM_AUTO when not given */
  const char *ckpt_dir;   /* --checkpoint-dir: ring of periodic checkpoints, borrowed; NULL = none */
  int64_t keep_ckpts;     /* --keep-checkpoints: ring files kept (>= 1, default 3) */
  const prt_st_dtype *save_dtype; /* --save-dtype: --save-checkpoint's parameters (F32) */
} prt_opts;
/* Reads argv into *o (defaults first; strings borrow from argv). Only parses: no file is
 * touched, nothing is printed, nothing exits; a bad command line fills st (code 2) naming the
 * flag and returns non-zero. Cross-flag rules that need the plan are checked later. */
int prt_parse_args(int argc, char **argv, prt_opts *o, prt_status *st);

/* "constant" | "cosine" | "linear" -> *out; 2 with a message otherwise. */
int prt_schedule_parse(const char *name, prt_lr_schedule *out, prt_status *st);
/* The learning rate of step s (0-based), for lp->total resolved: lr*(s+1)/W while s < W;
 * then, with u = (s-W)/(S-W): constant lr, cosine min + (lr-min)*0.5*(1+cos(pi*u)), linear
 * lr + (min-lr)*u. */
double prt_lr_at(const prt_loop *lp, double lr, int64_t s);
/* Collective, every --eval-every steps after step s: the mean over batches k = 0..K-1 of the
 * loss of `eval_step` on batch k of `data` (the windows prt_data_fill gives step k), through
 * prt_dist_loss like a training step's. Touches no parameter, gradient or optimizer state. */
/* What prt_set_eval_step recorded (NULL: the binary has no evaluation step). */
void (*prt_eval_step_fn(void))(prt_ctx *);
double prt_eval_loss(prt_ctx *ctx, const prt_loop *lp, const prt_data *data,
                     void (*eval_step)(prt_ctx *));
/* Checks of the parsed flags that need no checkpoint (exit 2 on failure). */
int prt_loop_check(const prt_loop *lp, double lr, int64_t steps, prt_status *st);
/* Once the first step K is known: sets the schedule length (K + steps unless --total-steps)
 * and checks it against the warm-up and the steps run (exit 2 on failure). */
int prt_loop_resolve(prt_loop *lp, int64_t start, int64_t steps, prt_status *st);

/* The scalars of one AdamW update at the context's step, lr and flags, as prt_adamw computes
 * them (kernels/cpu.c); the GPU's update (kernels/cuda.c) takes the same ones. */
typedef struct {
  float beta1, beta2, eps; /* the plan's, or --adam-beta1/--adam-beta2/--adam-eps */
  float clip;              /* ctx->clip_scale: every gradient is multiplied by it */
  float keep;              /* 1 - lr * weight_decay (decoupled decay) */
  float one_minus_b1, one_minus_b2; /* 1 - beta in double, then rounded, as torch */
  float bc2_sqrt;          /* sqrt(1 - beta2^t) */
  float neg_step;          /* -lr / (1 - beta1^t) */
} prt_adam_scalars;
prt_adam_scalars prt_adam_scalars_of(const prt_ctx *ctx, float beta1, float beta2, float eps);

#endif
