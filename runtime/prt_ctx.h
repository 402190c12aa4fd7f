/* The context: prt_ctx, behind the opaque handle of <piper/runtime.h>, with what it holds
 * (declared tensors, groups, the handle table of transfers in flight, elastic state) and its
 * life (ctx.c: create, allocate after piper_setup, destroy). Every runtime module's header
 * includes it. Conventions (errors as a prt_status, "collective" functions): prt_internal.h. */
#ifndef PIPER_PRT_CTX_H
#define PIPER_PRT_CTX_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "device.h"
#include "piper/runtime.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libpiper_rt writes safetensors by copying memory: it needs a little-endian host"
#endif

#define PRT_MAX_DIMS 4       /* most dims a declared tensor has (d0..d3 in the ABI) */
#define PRT_ALIGN 64         /* byte alignment of every tensor and of the arena */

/* status, fatal stop, checked allocation */
#include "fail.h"

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
  int64_t copy_of;             /* PRT_BF16_COPY: the id of the parameter it copies */
  void *data;                  /* owned device memory (ctx->backend->device), PRT_ALIGN-aligned:
                                  numel fp32 (int32 for inputs, bf16 for a
                                  PRT_BF16_COPY: prt_tensor_elem_bytes), NULL until
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

/* Bytes of one element of t's storage: 2 for a bf16 copy, 4 for every other kind. */
static inline int64_t prt_tensor_elem_bytes(const prt_tensor_info *t) {
  return t->kind == 4 /* PRT_BF16_COPY */ ? 2 : 4;
}

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
typedef struct prt_backend prt_backend; /* prt_backend.h */
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
  char *export_weights;     /* owned: the weights file piper.export wrote for this model
                               (prt_declare_init_checkpoint), where a run without
                               --init-checkpoint starts; NULL: none */

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

#endif
