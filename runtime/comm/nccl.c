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
 * Point-to-point (the pipeline's send/recv) runs on NCCL when the plan declared its peers
 * (prt_declare_peer), which piper-compile's lowering does only for plans whose receives follow
 * each sender's order (--piper-order-p2p moves receives earlier until they do;
 * --piper-verify-plan proves it): NCCL has no tags, the k-th ncclRecv from a peer gets its
 * k-th ncclSend. A plan without declared peers keeps send/recv on the staged MPI path.
 *
 * The rule that keeps it from deadlocking: ONE COMMUNICATOR AND ONE STREAM PER DIRECTION
 * (a -> b and b -> a are two 2-rank communicators, the sender rank 0). NCCL runs a
 * communicator's operations one after another in issue order whatever stream they are given
 * (each launch waits for the communicator's previous one), and a send does not complete before
 * its receive runs. On one communicator for both directions, rank a's [send X, recv Y] against
 * rank b's [send Y, recv X] would deadlock, and the schedules issue exactly that (1F1B: each
 * stage sends while the other is receiving something else); grouping (ncclGroupStart/End)
 * only fixes pairs issued together, which a plan's transfers are not. On a direction's own
 * communicator the only order left is the messages' own, which the plan guarantees: send k
 * waits for receive k, whose rank posted receives 0..k-1 before it, each matched by sends the
 * sender issued before send k. The ordering with the compute stream is the collectives': the
 * direction's stream waits for an event on the compute stream before each send (it reads what
 * the kernels wrote) and each receive (earlier kernels may still read its buffer's old
 * contents), and prt_wait makes the compute stream wait for the completion event. The
 * communicators are split from the world in rounds, every rank computing the same rounds from
 * every rank's declared peers (an allgather), each round a set of disjoint pairs; with
 * splitShare 0, so no two of them (nor the groups' ones) share NCCL's internal stream.
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

#include "device/cuda_common.h"
#include "prt_internal.h"

int prt_nccl_attach(prt_ctx *ctx, const prt_xfer_vtable *engines[PRT_OP_KINDS]);

/* What the communicators need, per plan group. */
static struct {
  ncclComm_t world;      /* every rank of the plan */
  ncclComm_t *comm;      /* owned (ngroups): the group's communicator; NULL if not a member */
  cudaStream_t *stream;  /* owned (ngroups): the group's non-blocking stream; NULL likewise */
  int64_t ngroups;       /* groups declared when attached */
  float *rs_scratch;     /* reduce-scatter into itself: NCCL's in-place layout differs from
                            the plan's (result first), so the result lands here first */
  size_t rs_cap;         /* its size in bytes */
  ncclComm_t *send_to;   /* owned (world): the communicator of this rank -> peer; NULL none */
  ncclComm_t *recv_from; /* owned (world): the communicator of peer -> this rank; NULL none */
  cudaStream_t *send_stream, *recv_stream; /* owned (world): each direction's own stream */
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
#define CUDA_OR_DIE(what, call) PRT_CUDA_OR_DIE((what), call, PRT_CUDA_HINT_SYNC)

/* The kernels' stream (device/cuda_common.h), which the transfers order against. */
static cudaStream_t compute_stream(prt_ctx *ctx) { return prt_cuda_compute_stream(ctx); }

/* The transfer's completion event (the device's, device.h) travels in its request. */
static prt_devent *event_of(const prt_opaque *req) { return (prt_devent *)req->p; }

/* A failed call of the device's event interface: fatal, naming the transfer. */
static void device_or_die(int rc, const prt_status *st, const char *what) {
  if (rc) prt_fatal("%s (%s)", st->msg, what);
}

/* `s` waits for everything the compute stream holds so far (the kernels that wrote the
 * transfer's input, and those still reading its output's old contents): an event of the
 * context's device recorded there. */
static void order_after_compute(prt_ctx *ctx, cudaStream_t s, const char *what) {
  prt_device *d = ctx->backend->device;
  prt_status st = {0};
  prt_devent *ready = NULL;
  device_or_die(prt_device_event_create(d, &ready, &st) ||
                    prt_device_event_record(d, ready, (prt_dstream *)compute_stream(ctx), &st) ||
                    prt_device_stream_wait(d, (prt_dstream *)s, ready, &st),
                &st, what);
  prt_device_event_destroy(d, ready); /* released once recorded work completes */
}

/* The transfer's completion, recorded on `s`, into the request for finish and test. */
static void record_done(prt_ctx *ctx, cudaStream_t s, prt_opaque *req, const char *what) {
  prt_device *d = ctx->backend->device;
  prt_status st = {0};
  prt_devent *done = NULL;
  device_or_die(prt_device_event_create(d, &done, &st) ||
                    prt_device_event_record(d, done, (prt_dstream *)s, &st),
                &st, what);
  memset(req, 0, sizeof *req);
  req->p = (void *)done;
}

static int cmp_direction(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
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
  record_done(ctx, s, req, what);
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
  record_done(ctx, s, req, what);
}

/* A send or receive on its direction's communicator (prt_nccl_attach_p2p): the sender is rank
 * 0 of it, the receiver rank 1. Floats, as the MPI backend: n counts 4-byte words (a bf16
 * tensor travels as half as many, lower_comm.c), which NCCL moves untouched. */
static void nccl_p2p_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  int send = op->kind == PRT_OP_SEND;
  const char *what = send ? "a send on the GPU" : "a receive on the GPU";
  if (op->kind != PRT_OP_SEND && op->kind != PRT_OP_RECV)
    prt_fatal("%s: transfer kind %d is not a send or receive; a runtime defect", what,
              (int)op->kind);
  int in_world = op->peer >= 0 && op->peer < ctx->world;
  ncclComm_t comm = !in_world ? NULL : send ? N.send_to[op->peer] : N.recv_from[op->peer];
  if (!comm)
    prt_fatal("%s %s rank %lld (tag %lld) on rank %lld, which its plan did not declare as a "
              "peer (prt_declare_peer): no NCCL communicator for that direction; a plan "
              "defect", what, send ? "to" : "from", (long long)op->peer, (long long)op->tag,
              (long long)ctx->rank);
  cudaStream_t s = send ? N.send_stream[op->peer] : N.recv_stream[op->peer];
  order_after_compute(ctx, s, what);
  if (send)
    NCCL_OR_DIE("ncclSend", ncclSend(op->in, (size_t)op->n, ncclFloat, 1, comm, s));
  else
    NCCL_OR_DIE("ncclRecv", ncclRecv(op->out, (size_t)op->n, ncclFloat, 0, comm, s));
  record_done(ctx, s, req, what);
}

/* The compute stream waits for the collective; the host does not. */
static void nccl_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  prt_device *d = ctx->backend->device;
  prt_status st = {0};
  prt_devent *done = event_of(req);
  device_or_die(prt_device_stream_wait(d, (prt_dstream *)compute_stream(ctx), done, &st), &st,
                "waiting for a GPU transfer");
  prt_device_event_destroy(d, done);
  req->p = NULL;
}

static int nccl_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  prt_status st = {0};
  int done = 0;
  device_or_die(prt_device_event_query(ctx->backend->device, event_of(req), &done, &st), &st,
                "testing a GPU transfer");
  return done;
}

/* Engines on the GPUs' memory: dist.c stages nothing for them. They share finish and test
 * (the completion event). */
static const prt_xfer_vtable nccl_xfer = {"nccl", 1, nccl_start, nccl_finish, nccl_test};
static const prt_xfer_vtable nccl_a2a = {"nccl", 1, nccl_a2a_start, nccl_finish, nccl_test};
static const prt_xfer_vtable nccl_p2p = {"nccl", 1, nccl_p2p_start, nccl_finish, nccl_test};

/* NCCL's engine for each kind of the plan's transfers, which backend.c installs row by row;
 * NULL: the kind stays on the comm backend. Send/recv are NCCL's apart, when
 * prt_nccl_attach_p2p made their communicators: only when some rank's plan declared peers (see
 * the top of the file). */
static const prt_xfer_vtable *const nccl_engines[PRT_OP_KINDS] = {
    [PRT_OP_SEND] = NULL,              [PRT_OP_RECV] = NULL,
    [PRT_OP_ALL_REDUCE] = &nccl_xfer,  [PRT_OP_REDUCE_SCATTER] = &nccl_xfer,
    [PRT_OP_ALL_GATHER] = &nccl_xfer,  [PRT_OP_ALL_TO_ALL] = &nccl_a2a,
};

/* Every rank's declared peers as directions (src, dst), both ways of each pair any rank
 * named, sorted and distinct: the same list on every rank. *ndir gets its length; owned. */
static int64_t (*p2p_directions(prt_ctx *ctx, int64_t *ndir))[2] {
  int world = (int)ctx->world, mine = (int)ctx->npeers;
  int *counts = calloc((size_t)world, sizeof *counts), *displs = calloc((size_t)world, sizeof *displs);
  if (!counts || !displs) prt_fatal("out of memory gathering the plan's NCCL peers");
  if (MPI_Allgather(&mine, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD) != MPI_SUCCESS)
    prt_fatal("MPI_Allgather of the NCCL peer counts failed (rank %lld); check the MPI "
              "installation", (long long)ctx->rank);
  int64_t total = 0;
  for (int r = 0; r < world; r++) {
    displs[r] = (int)total;
    total += counts[r];
  }
  int64_t *all = malloc((size_t)(total ? total : 1) * sizeof *all);
  int64_t (*dir)[2] = malloc((size_t)(2 * total + 1) * sizeof *dir);
  if (!all || !dir) prt_fatal("out of memory gathering %lld NCCL peers", (long long)total);
  if (MPI_Allgatherv(ctx->peers, mine, MPI_INT64_T, all, counts, displs, MPI_INT64_T,
                     MPI_COMM_WORLD) != MPI_SUCCESS)
    prt_fatal("MPI_Allgatherv of the NCCL peers failed (rank %lld); check the MPI "
              "installation", (long long)ctx->rank);
  int64_t n = 0;
  for (int r = 0; r < world; r++)
    for (int i = 0; i < counts[r]; i++) { /* prt_declare_peer checked 0 <= peer < world */
      int64_t p = all[displs[r] + i];
      dir[n][0] = r, dir[n++][1] = p;
      dir[n][0] = p, dir[n++][1] = r;
    }
  qsort(dir, (size_t)n, sizeof *dir, cmp_direction);
  int64_t u = 0;
  for (int64_t i = 0; i < n; i++)
    if (!u || dir[i][0] != dir[u - 1][0] || dir[i][1] != dir[u - 1][1]) {
      dir[u][0] = dir[i][0];
      dir[u++][1] = dir[i][1];
    }
  free(all);
  free(counts);
  free(displs);
  *ndir = u;
  return dir;
}

/* The communicator and stream of each direction this rank is in, split from the world in
 * rounds: each round takes, in list order, every direction whose two ranks no earlier
 * direction of the round holds (a greedy matching), so each rank is in at most one of the
 * round's communicators (its color: the direction's index), and every rank, computing the
 * same rounds, calls ncclCommSplit the same number of times. A greedy matching needs at most
 * 2D - 1 rounds for D the most directions one rank is in (a pipeline stage: D = 4, so 7 at
 * most; each round is one collective split). Then send/recv run here. */
static void prt_nccl_attach_p2p(prt_ctx *ctx) {
  int64_t ndir = 0, world = ctx->world;
  int64_t (*dir)[2] = p2p_directions(ctx, &ndir);
  if (ndir == 0) { /* no plan declared peers: send/recv stay on the comm backend */
    free(dir);
    return;
  }
  N.send_to = calloc((size_t)world, sizeof *N.send_to);
  N.recv_from = calloc((size_t)world, sizeof *N.recv_from);
  N.send_stream = calloc((size_t)world, sizeof *N.send_stream);
  N.recv_stream = calloc((size_t)world, sizeof *N.recv_stream);
  int64_t *round_of = malloc((size_t)ndir * sizeof *round_of);
  int64_t *busy = malloc((size_t)world * sizeof *busy); /* the last round a rank was taken */
  if (!N.send_to || !N.recv_from || !N.send_stream || !N.recv_stream || !round_of || !busy)
    prt_fatal("out of memory for %lld NCCL directions", (long long)ndir);
  for (int64_t i = 0; i < ndir; i++) round_of[i] = -1;
  for (int64_t r = 0; r < world; r++) busy[r] = -1;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.splitShare = 0; /* a communicator of its own: no stream shared with the world's */
  for (int64_t round = 0, left = ndir; left > 0; round++) {
    int color = NCCL_SPLIT_NOCOLOR, key = 0;
    int64_t me = -1; /* the direction this rank is in this round */
    for (int64_t i = 0; i < ndir; i++) {
      int64_t a = dir[i][0], b = dir[i][1];
      if (round_of[i] >= 0 || busy[a] == round || busy[b] == round) continue;
      round_of[i] = round;
      busy[a] = busy[b] = round;
      left--;
      if (a == ctx->rank || b == ctx->rank) {
        me = i;
        color = (int)i;
        key = b == ctx->rank; /* the sender is rank 0 */
      }
    }
    ncclComm_t comm = NULL;
    NCCL_OR_DIE("ncclCommSplit", ncclCommSplit(N.world, color, key, &comm, &config));
    if (me < 0) continue;
    int send = dir[me][0] == ctx->rank;
    int64_t peer = send ? dir[me][1] : dir[me][0];
    cudaStream_t *s = send ? &N.send_stream[peer] : &N.recv_stream[peer];
    (send ? N.send_to : N.recv_from)[peer] = comm;
    CUDA_OR_DIE("a send/recv direction's stream",
                cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  }
  free(busy);
  free(round_of);
  free(dir);
}

/* The communicators once per process (a second call finds them made): they are the process's,
 * as the backend record its engines are installed in. engines[k] gets NCCL's engine for
 * transfer kind k, or NULL where the kind stays on the comm backend; backend.c installs them. */
int prt_nccl_attach(prt_ctx *ctx, const prt_xfer_vtable *engines[PRT_OP_KINDS]) {
  for (int k = 0; k < PRT_OP_KINDS; k++) engines[k] = nccl_engines[k];
  if (N.world) {
    if (N.send_to) engines[PRT_OP_SEND] = engines[PRT_OP_RECV] = &nccl_p2p;
    return 0;
  }
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
  prt_nccl_attach_p2p(ctx);
  if (N.send_to) engines[PRT_OP_SEND] = engines[PRT_OP_RECV] = &nccl_p2p;
  return 0;
}
