/* The plan's collectives and all-to-alls over NCCL, for --target cuda plans whose ranks each have a GPU
 * (PIPER_COMM=nccl; libpiper_rt_nccl, linked into multi-device GPU binaries). OPT-IN AND
 * UNVERIFIED: it builds here, but no machine this project can use runs it (the GPU test
 * machine has one GPU, and NCCL refuses two ranks on one GPU); the default stays the staged
 * MPI path of dist.c, which is correct everywhere.
 *
 * What it does. At prt_cuda_setup (every rank, after the plan declared its groups): a world
 * communicator from an ncclUniqueId broadcast over MPI_COMM_WORLD, then one communicator per
 * plan group by ncclCommSplit, in group-id order on every rank (a collective over the world:
 * the same order everywhere, so no rank waits on another's different split), each with its
 * own non-blocking CUDA stream. A collective (all-reduce, reduce-scatter, all-gather; sums,
 * as the MPI backend) is issued on its group's stream after an event recorded on the compute
 * stream, so it reads what the kernels wrote; prt_wait makes the compute stream wait for its
 * completion event: no host synchronization.
 *
 * Point-to-point (the pipeline's send/recv) stays on the staged MPI path: NCCL matches a
 * pair's messages in issue order and has no tags, and the plans' schedules do not issue a
 * pair's sends in the order the peer posts the receives (GPT 1F1B on 2 stages: stage 1 sends
 * the tied embedding's gradient, tag 9, before the activation gradient, tag 5, which stage 0
 * receives first; the fake NCCL of test/gpu/fake_nccl.c caught it as a truncated message). An
 * engine for it needs the tags' order agreed first (issue 17).
 *
 * Expert parallelism's all-to-all is one NCCL group (ncclGroupStart, a ncclSend and a
 * ncclRecv of each member's block, ncclGroupEnd) on its group's communicator and stream,
 * blocks as bytes as the MPI backend's: every member issues a group's all-to-alls in the
 * same order, as any collective. Every engine orders its stream after the
 * compute stream by an event and the compute stream after it by another. The runtime's own
 * host-side reductions (loss, gradient norm) stay on MPI. The streams are non-blocking, so a
 * staged copy on the legacy stream does not wait for a transfer in flight. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include "prt_internal.h"

int prt_nccl_attach(prt_ctx *ctx);

/* What the communicators need, per plan group. */
static struct {
  ncclComm_t world;      /* every rank of the plan */
  ncclComm_t *comm;      /* owned (ngroups): the group's communicator; NULL if not a member */
  cudaStream_t *stream;  /* owned (ngroups): the group's non-blocking stream; NULL likewise */
  int64_t ngroups;       /* groups declared when attached */
  float *rs_scratch;     /* reduce-scatter into itself: NCCL's in-place layout differs from
                            the plan's (result first), so the result lands here first */
  size_t rs_cap;         /* its size in bytes */
} N;

static void fail_nccl(const char *what, ncclResult_t r, int line) {
  prt_fatal("NCCL error in %s: %s (%s) at %s:%d; check that every rank has its own GPU "
            "(NCCL refuses two ranks on one GPU: unset PIPER_COMM to stage through host "
            "memory instead), and NCCL_DEBUG=WARN for NCCL's own account", what,
            ncclGetErrorString(r), ncclGetLastError(NULL), __FILE__, line);
}
#define NCCL_OR_DIE(what, call)                                                            \
  do {                                                                                     \
    ncclResult_t r_ = (call);                                                              \
    if (r_ != ncclSuccess) fail_nccl((what), r_, __LINE__);                                \
  } while (0)
#define CUDA_OR_DIE(what, call)                                                            \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess)                                                                 \
      prt_fatal("CUDA error in %s: %s: %s at %s:%d; rerun with PIPER_CUDA_SYNC=1", (what), \
                cudaGetErrorName(e_), cudaGetErrorString(e_), __FILE__, __LINE__);        \
  } while (0)

static cudaStream_t compute_stream(prt_ctx *ctx) {
  return ctx->streams && ctx->nstreams > 0 ? (cudaStream_t)ctx->streams[0] : (cudaStream_t)0;
}

/* The transfer's completion event travels in its request. */
static cudaEvent_t event_of(const prt_opaque *req) { return (cudaEvent_t)req->p; }

/* `s` waits for everything the compute stream holds so far (the kernels that wrote the
 * transfer's input, and those still reading its output's old contents). */
static void order_after_compute(prt_ctx *ctx, cudaStream_t s, const char *what) {
  cudaEvent_t ready;
  CUDA_OR_DIE(what, cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  CUDA_OR_DIE(what, cudaEventRecord(ready, compute_stream(ctx)));
  CUDA_OR_DIE(what, cudaStreamWaitEvent(s, ready, 0));
  CUDA_OR_DIE(what, cudaEventDestroy(ready)); /* released once recorded work completes */
}

/* The transfer's completion, recorded on `s`, into the request for finish and test. */
static void record_done(cudaStream_t s, prt_opaque *req, const char *what) {
  cudaEvent_t done;
  CUDA_OR_DIE(what, cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_OR_DIE(what, cudaEventRecord(done, s));
  memset(req, 0, sizeof *req);
  req->p = (void *)done;
}

/* The group's communicator index, checked: this rank must be a member. */
static int64_t member_group(prt_ctx *ctx, const prt_comm_op *op, const char *what) {
  int64_t g = op->group;
  if (g < 0 || g >= N.ngroups || !N.comm[g])
    prt_fatal("%s on group %lld, which has no NCCL communicator here (rank %lld); a plan "
              "defect", what, (long long)g, (long long)ctx->rank);
  return g;
}

static void nccl_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  const char *what = "a collective on the GPU";
  int64_t g = member_group(ctx, op, what);
  cudaStream_t s = N.stream[g];
  order_after_compute(ctx, s, what);
  size_t n = (size_t)op->n;
  switch (op->kind) {
  case PRT_OP_ALL_REDUCE:
    NCCL_OR_DIE("ncclAllReduce", ncclAllReduce(op->in, op->out, n, ncclFloat, ncclSum,
                                               N.comm[g], s));
    break;
  case PRT_OP_REDUCE_SCATTER:
    if (op->in == op->out) { /* the plan's in place: result at the start of out */
      if (n * sizeof(float) > N.rs_cap) {
        CUDA_OR_DIE(what, cudaStreamSynchronize(s));
        cudaFree(N.rs_scratch);
        N.rs_scratch = NULL;
        N.rs_cap = 0;
        CUDA_OR_DIE(what, cudaMalloc((void **)&N.rs_scratch, n * sizeof(float)));
        N.rs_cap = n * sizeof(float);
      }
      NCCL_OR_DIE("ncclReduceScatter", ncclReduceScatter(op->in, N.rs_scratch, n, ncclFloat,
                                                         ncclSum, N.comm[g], s));
      CUDA_OR_DIE(what, cudaMemcpyAsync(op->out, N.rs_scratch, n * sizeof(float),
                                        cudaMemcpyDeviceToDevice, s));
    } else {
      NCCL_OR_DIE("ncclReduceScatter", ncclReduceScatter(op->in, op->out, n, ncclFloat,
                                                         ncclSum, N.comm[g], s));
    }
    break;
  case PRT_OP_ALL_GATHER: /* in at its place in out is NCCL's in-place layout too */
    NCCL_OR_DIE("ncclAllGather", ncclAllGather(op->in, op->out, n, ncclFloat, N.comm[g], s));
    break;
  default:
    prt_fatal("%s: transfer kind %d is not a collective; a runtime defect", what,
              (int)op->kind);
  }
  record_done(s, req, what);
}

/* The all-to-all as one NCCL group: member p's block of in goes to p, p's block for this rank
 * lands at out's block p (the group communicator's ranks are the members' indices, the key
 * of ncclCommSplit). Bytes, as the MPI backend, so i32 routing counts cross untouched. */
static void nccl_a2a_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  const char *what = "an all-to-all on the GPU";
  if (op->kind != PRT_OP_ALL_TO_ALL)
    prt_fatal("%s: transfer kind %d is not an all-to-all; a runtime defect", what,
              (int)op->kind);
  int64_t g = member_group(ctx, op, what);
  int64_t members = ctx->groups[g].n;
  size_t blk = (size_t)(op->n / members) * sizeof(float);
  cudaStream_t s = N.stream[g];
  order_after_compute(ctx, s, what);
  NCCL_OR_DIE("ncclGroupStart", ncclGroupStart());
  for (int64_t p = 0; p < members; p++) {
    NCCL_OR_DIE("ncclSend", ncclSend((const char *)op->in + (size_t)p * blk, blk, ncclChar,
                                     (int)p, N.comm[g], s));
    NCCL_OR_DIE("ncclRecv", ncclRecv((char *)op->out + (size_t)p * blk, blk, ncclChar, (int)p,
                                     N.comm[g], s));
  }
  NCCL_OR_DIE("ncclGroupEnd", ncclGroupEnd());
  record_done(s, req, what);
}

/* The compute stream waits for the collective; the host does not. */
static void nccl_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  cudaEvent_t done = event_of(req);
  CUDA_OR_DIE("waiting for a GPU collective",
              cudaStreamWaitEvent(compute_stream(ctx), done, 0));
  CUDA_OR_DIE("waiting for a GPU collective", cudaEventDestroy(done));
  req->p = NULL;
}

static int nccl_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  cudaError_t e = cudaEventQuery(event_of(req));
  if (e == cudaErrorNotReady) return 0;
  CUDA_OR_DIE("testing a GPU collective", e);
  return 1;
}

/* Engines on the GPUs' memory: dist.c stages nothing for them. They share finish and test
 * (the completion event). */
static const prt_xfer_vtable nccl_xfer = {"nccl", 1, nccl_start, nccl_finish, nccl_test};
static const prt_xfer_vtable nccl_a2a = {"nccl", 1, nccl_a2a_start, nccl_finish, nccl_test};

/* NCCL's engine for each kind of the plan's transfers, installed row by row; NULL: the kind
 * stays on the comm backend (send/recv: see the top of the file). */
static const prt_xfer_vtable *const nccl_engines[PRT_OP_KINDS] = {
    [PRT_OP_SEND] = NULL,              [PRT_OP_RECV] = NULL,
    [PRT_OP_ALL_REDUCE] = &nccl_xfer,  [PRT_OP_REDUCE_SCATTER] = &nccl_xfer,
    [PRT_OP_ALL_GATHER] = &nccl_xfer,  [PRT_OP_ALL_TO_ALL] = &nccl_a2a,
};

/* Once per process (a second call finds the communicators made): they are the process's, as
 * the backend record they are installed in. */
int prt_nccl_attach(prt_ctx *ctx) {
  if (N.world) return 0;
  ncclUniqueId id;
  if (ctx->rank == 0) NCCL_OR_DIE("ncclGetUniqueId", ncclGetUniqueId(&id));
  if (MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    prt_fatal("MPI_Bcast of the NCCL id failed (rank %lld); check the MPI installation",
              (long long)ctx->rank);
  NCCL_OR_DIE("ncclCommInitRank",
              ncclCommInitRank(&N.world, (int)ctx->world, id, (int)ctx->rank));
  N.ngroups = ctx->ngroups;
  N.comm = calloc((size_t)(N.ngroups ? N.ngroups : 1), sizeof *N.comm);
  N.stream = calloc((size_t)(N.ngroups ? N.ngroups : 1), sizeof *N.stream);
  if (!N.comm || !N.stream) prt_fatal("out of memory for %lld NCCL groups", (long long)N.ngroups);
  for (int64_t g = 0; g < N.ngroups; g++) { /* the same order on every rank */
    const prt_group *grp = &ctx->groups[g];
    int member = grp->n > 0 && grp->index >= 0;
    /* color: the first member (a group family's replicas get a communicator each) */
    NCCL_OR_DIE("ncclCommSplit", ncclCommSplit(N.world, member ? (int)grp->members[0]
                                                               : NCCL_SPLIT_NOCOLOR,
                                               member ? (int)grp->index : 0, &N.comm[g],
                                               NULL));
    if (member)
      CUDA_OR_DIE("a group's stream",
                  cudaStreamCreateWithFlags(&N.stream[g], cudaStreamNonBlocking));
  }
  for (int k = 0; k < PRT_OP_KINDS; k++)
    if (nccl_engines[k]) prt_backend_use_engine(k, nccl_engines[k]);
  return 0;
}
