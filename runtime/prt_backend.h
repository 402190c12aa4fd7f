/* The backend (backend.c): where tensors live and how the ranks talk.
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
 *                  installed over MPI's by the GPU setup (prt_backend_use_gpu installs
 *                  the engines prt_nccl_attach hands back, one row per kind)
 * World-level calls run on a communicator of their own, so they never match the plan's
 * messages. Any failure inside a backend (an MPI error) prints "piper: error: ..." and stops
 * every rank; these functions therefore return nothing. */
#ifndef PIPER_PRT_BACKEND_H
#define PIPER_PRT_BACKEND_H

#include "prt_ctx.h"

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
 * range or no engine is prt_fatal. The GPU setup installs NCCL's (comm/nccl.c), one row per
 * kind. */
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

#endif
