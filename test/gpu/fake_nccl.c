/* A fake NCCL over MPI, with the CUDA streams and events that runtime/comm/nccl.c orders it
 * by, for running libpiper_rt_nccl's engines on real mpirun ranks without GPUs (next to
 * fake_cuda.c, whose kernels and copies run at once on the host, so the compute stream
 * never holds pending work):
 *   ncclCommInitRank / ncclCommSplit   MPI_Comm_dup of the world / MPI_Comm_split;
 *   collectives                        the blocking MPI collective, at the call (every rank
 *                                      issues a group's collectives in the same order);
 *   ncclSend / ncclRecv                MPI_Isend of a private copy of the input / MPI_Irecv
 *                                      into a private buffer; the receive reaches the
 *                                      caller's buffer only when an event recorded after it
 *                                      on its stream is waited for (cudaStreamWaitEvent) or
 *                                      seen complete (cudaEventQuery). A backend that forgets
 *                                      to make the compute stream wait therefore reads stale
 *                                      data, deterministically, rather than racing;
 *   ncclGroupStart / End               nesting only: the sends and receives are nonblocking.
 * Every call also checks that its stream waited for the compute stream's latest kernel (the
 * other half of the ordering: stale input instead of stale output); fake_cuda.c runs the
 * kernels at once, so that cannot be shown by stale data here and is checked instead.
 * FAKE_NCCL_IGNORE_WAITS=1 makes cudaStreamWaitEvent do nothing: the negative control of
 * fake-nccl-train.test (a backend without its completion wait), which must fail.
 * FAKE_NCCL_REPORT=1 prints each rank's calls at exit, so a test can tell that the NCCL
 * engines ran (the banner names the world, MPI, either way). FAKE_NCCL_LOG=PREFIX writes each
 * rank's order of events to PREFIX.<rank>, one a line, for a test to read: a stream of ours
 * ordered after the compute stream (and after how many kernel launches), each send and
 * receive (the peer's rank on its communicator, bytes, stream), a completion event recorded
 * on a stream of ours, and the compute stream waiting for one (the point a received block
 * lands). Only what comm/nccl.c calls is defined.
 *
 * NOT MODELLED: NCCL's blocking. On a GPU a communicator runs its operations one after
 * another and a send completes only once its receive runs, so a backend order can deadlock
 * there that runs here (sends are buffered MPI_Isends, every operation is posted at once).
 * A faithful model needs the device's progress, which goes on while the host blocks in the
 * runtime's own MPI calls (the loss, the gradient norm): serializing the queues here and
 * progressing them only from the fake's calls deadlocked PP2 1F1B on exactly that (stage 1
 * in the gradient-norm all-reduce with a send still queued), an artefact. comm/nccl.c's
 * rule (a communicator per direction, receives in send order) is argued in its header;
 * what this fake proves is the order of the messages (a pair's k-th receive gets its k-th
 * send, of the same size) and the stream and event ordering. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

struct ncclComm {
  MPI_Comm c;
};

/* Calls so far, by kind, for FAKE_NCCL_REPORT. */
enum { C_COLL, C_SEND, C_RECV, C_GROUP, C_KINDS };
static long calls[C_KINDS];
static int report_rank = -1;
static void report(void) {
  fprintf(stderr, "fake NCCL rank %d: %ld collectives, %ld sends, %ld receives, %ld groups\n",
          report_rank, calls[C_COLL], calls[C_SEND], calls[C_RECV], calls[C_GROUP]);
}

/* FAKE_NCCL_LOG's file for this rank, opened at the first communicator; NULL: no log. */
static FILE *event_log;
#define LOG_EVENT(...)                                                                     \
  do {                                                                                     \
    if (event_log) fprintf(event_log, __VA_ARGS__);                                        \
  } while (0)

static void die(const char *what) {
  fprintf(stderr, "fake NCCL: %s\n", what);
  MPI_Abort(MPI_COMM_WORLD, 2);
  exit(2);
}

/* A point-to-point transfer in flight: its request, and for a receive, where the private
 * buffer goes once complete. */
typedef struct {
  MPI_Request req;
  void *buf;  /* owned private copy (send) or landing buffer (receive) */
  void *dest; /* receive: the caller's buffer; NULL for a send */
  size_t bytes;
  int done;
} xfer;
static xfer *X;
static int64_t nx, capx;

/* A fake stream or event: the transfers (indices into X) it holds, and the compute
 * stream's position it is ordered after, counted in fake_cuda.c's kernel launches: an
 * event's when recorded on the compute stream (-1 on one of ours), a stream's as of the
 * latest such event it waited for (-1: none). */
typedef struct {
  int64_t *ids;
  int64_t n, cap;
  long at;
} idlist;

extern int fake_cuda_launches; /* fake_cuda.c: kernels launched so far */

/* The backend's first duty before an NCCL call (comm/nccl.c's order_after_compute): its
 * stream waits for the compute stream's latest kernel, which may have written the input. On
 * a GPU a call without it reads stale data; here it stops with the reason (cuBLAS calls and
 * attention launches count as kernels too: fake_cuda.c's fake_cuda_issue). */
static void check_ordered(idlist *st, const char *call) {
  if (st->at == fake_cuda_launches) return;
  fprintf(stderr, "fake NCCL: %s on a stream ordered after %ld of the compute stream's %d "
          "kernel launches: the backend did not make it wait for the compute stream\n",
          call, st->at, fake_cuda_launches);
  die("unordered NCCL call");
}

static void push(idlist *l, int64_t id) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 16;
    l->ids = realloc(l->ids, (size_t)l->cap * sizeof *l->ids);
    if (!l->ids) die("out of memory");
  }
  l->ids[l->n++] = id;
}

static int64_t new_xfer(void) {
  if (nx == capx) {
    capx = capx ? 2 * capx : 64;
    X = realloc(X, (size_t)capx * sizeof *X);
    if (!X) die("out of memory");
  }
  memset(&X[nx], 0, sizeof X[nx]);
  return nx++;
}

static void complete(int64_t id) {
  xfer *x = &X[id];
  if (x->done) return;
  int rc = MPI_Wait(&x->req, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "fake NCCL: MPI_Wait of a %s of %zu bytes: %s\n",
            x->dest ? "receive" : "send", x->bytes, msg);
    die("MPI_Wait failed");
  }
  if (x->dest) memcpy(x->dest, x->buf, x->bytes);
  free(x->buf);
  x->buf = NULL;
  x->done = 1;
}

/* The streams made here (the backend's communication streams). Any other stream is the
 * compute stream, the fake GPU's (the CPU device's stream objects, not ours): it holds no
 * pending work, as fake_cuda.c runs kernels and copies at once. */
static idlist **fake_streams;
static int64_t nfake_streams;
static idlist *ours(cudaStream_t s) {
  for (int64_t i = 0; i < nfake_streams; i++)
    if ((void *)fake_streams[i] == (void *)s) return fake_streams[i];
  return NULL;
}

/* A stream of ours by its creation index (1, 2, ...), for the log; 0: the compute stream. */
static int64_t stream_no(const idlist *st) {
  for (int64_t i = 0; i < nfake_streams; i++)
    if (fake_streams[i] == st) return i + 1;
  return 0;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  idlist *l = calloc(1, sizeof *l);
  if (l) l->at = -1;
  idlist **grown = realloc(fake_streams, (size_t)(nfake_streams + 1) * sizeof *grown);
  if (!l || !grown) return cudaErrorMemoryAllocation;
  fake_streams = grown;
  fake_streams[nfake_streams++] = l;
  *s = (cudaStream_t)(void *)l;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  *e = (cudaEvent_t)calloc(1, sizeof(idlist));
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
/* The event holds what its stream holds now (the compute stream holds nothing). */
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  idlist *ev = (idlist *)e, *st = ours(s);
  ev->n = 0;
  ev->at = st ? -1 : fake_cuda_launches;
  if (!st) return cudaSuccess;
  LOG_EVENT("completion event on stream %lld\n", (long long)stream_no(st));
  int64_t keep = 0;
  for (int64_t i = 0; i < st->n; i++)
    if (!X[st->ids[i]].done) {
      push(ev, st->ids[i]);
      st->ids[keep++] = st->ids[i];
    }
  st->n = keep;
  return cudaSuccess;
}
/* Work issued later on any stream runs at once here, so waiting means completing now. */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  idlist *waiter = ours(s);
  if (waiter && ((idlist *)e)->at > waiter->at) waiter->at = ((idlist *)e)->at;
  if (waiter && ((idlist *)e)->at >= 0)
    LOG_EVENT("stream %lld ordered after compute launch %ld\n", (long long)stream_no(waiter),
              ((idlist *)e)->at);
  else if (!waiter && ((idlist *)e)->at < 0)
    LOG_EVENT("compute waits for a completion event\n");
  static int ignore = -1;
  if (ignore < 0) ignore = getenv("FAKE_NCCL_IGNORE_WAITS") != NULL;
  if (ignore) return cudaSuccess;
  idlist *ev = (idlist *)e;
  for (int64_t i = 0; i < ev->n; i++) complete(ev->ids[i]);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  idlist *ev = (idlist *)e;
  for (int64_t i = 0; i < ev->n; i++) {
    xfer *x = &X[ev->ids[i]];
    int flag = 1;
    if (!x->done && MPI_Test(&x->req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      die("MPI_Test failed");
    if (!flag) return cudaErrorNotReady;
    if (!x->done) { /* MPI_Test freed the request: land it */
      x->req = MPI_REQUEST_NULL;
      complete(ev->ids[i]);
    }
  }
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  idlist *ev = (idlist *)e;
  free(ev->ids);
  free(ev);
  return cudaSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) { return "an error of the fake NCCL"; }
const char *ncclGetLastError(ncclComm_t comm) { return "(fake NCCL)"; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  return ncclSuccess;
}
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  int size, me;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (size != nranks || me != rank) return ncclInvalidArgument;
  if (report_rank < 0 && getenv("FAKE_NCCL_REPORT")) {
    report_rank = me;
    atexit(report);
  }
  const char *log = getenv("FAKE_NCCL_LOG");
  if (log && !event_log) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", log, me);
    event_log = fopen(path, "w");
    if (!event_log) die("cannot open FAKE_NCCL_LOG's file");
    setvbuf(event_log, NULL, _IOLBF, 0); /* whole lines, even if the run is killed */
  }
  *comm = calloc(1, sizeof **comm);
  if (!*comm || MPI_Comm_dup(MPI_COMM_WORLD, &(*comm)->c) != MPI_SUCCESS) return ncclSystemError;
  return ncclSuccess;
}
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *out,
                           ncclConfig_t *config) {
  MPI_Comm c;
  if (MPI_Comm_split(comm->c, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key, &c) !=
      MPI_SUCCESS)
    return ncclSystemError;
  *out = NULL;
  if (c == MPI_COMM_NULL) return ncclSuccess;
  *out = calloc(1, sizeof **out);
  if (!*out) return ncclSystemError;
  (*out)->c = c;
  return ncclSuccess;
}

/* A collective's stream: one of ours, ordered after the compute stream. */
static void ordered(cudaStream_t s, const char *call) {
  idlist *st = ours(s);
  if (!st) die("a collective on a stream it did not make: the backend gives them their own");
  check_ordered(st, call);
}

static MPI_Datatype mpi_type(ncclDataType_t t, size_t *size) {
  switch (t) {
  case ncclFloat: *size = 4; return MPI_FLOAT;
  case ncclInt8: *size = 1; return MPI_BYTE;
  case ncclInt32: *size = 4; return MPI_INT;
  default: die("datatype not faked"); return MPI_DATATYPE_NULL;
  }
}
static MPI_Op mpi_op(ncclRedOp_t op) {
  if (op != ncclSum) die("reduction not faked (sums only)");
  return MPI_SUM;
}

ncclResult_t ncclAllReduce(const void *in, void *out, size_t n, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
  ordered(s, "ncclAllReduce");
  calls[C_COLL]++;
  size_t sz;
  MPI_Datatype dt = mpi_type(t, &sz);
  return MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, (int)n, dt, mpi_op(op), comm->c) ==
                 MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}
ncclResult_t ncclReduceScatter(const void *in, void *out, size_t n, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
  ordered(s, "ncclReduceScatter");
  calls[C_COLL]++;
  size_t sz;
  MPI_Datatype dt = mpi_type(t, &sz);
  if (in == out) die("in-place reduce-scatter: NCCL's layout differs; not faked");
  return MPI_Reduce_scatter_block(in, out, (int)n, dt, mpi_op(op), comm->c) == MPI_SUCCESS
             ? ncclSuccess : ncclSystemError;
}
ncclResult_t ncclAllGather(const void *in, void *out, size_t n, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s) {
  ordered(s, "ncclAllGather");
  calls[C_COLL]++;
  size_t sz;
  MPI_Datatype dt = mpi_type(t, &sz);
  int me;
  MPI_Comm_rank(comm->c, &me);
  int inplace = (const char *)in == (const char *)out + (size_t)me * n * sz;
  return MPI_Allgather(inplace ? MPI_IN_PLACE : in, (int)n, dt, out, (int)n, dt, comm->c) ==
                 MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}
ncclResult_t ncclBroadcast(const void *in, void *out, size_t n, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t s) {
  ordered(s, "ncclBroadcast");
  calls[C_COLL]++;
  size_t sz;
  MPI_Datatype dt = mpi_type(t, &sz);
  int me;
  MPI_Comm_rank(comm->c, &me);
  if (me == root && in != out) memmove(out, in, n * sz);
  return MPI_Bcast(out, (int)n, dt, root, comm->c) == MPI_SUCCESS ? ncclSuccess
                                                                  : ncclSystemError;
}

/* NCCL has no tags: a pair's messages on a communicator match in order, as MPI's on one tag. */
static ncclResult_t p2p(const void *in, void *out, size_t n, ncclDataType_t t, int peer,
                        ncclComm_t comm, cudaStream_t s) {
  idlist *st = ours(s);
  if (!st) die("a send or receive on a stream it did not make: the backend gives them their own");
  check_ordered(st, in ? "ncclSend" : "ncclRecv");
  size_t sz;
  MPI_Datatype dt = mpi_type(t, &sz);
  int64_t id = new_xfer();
  xfer *x = &X[id];
  x->bytes = n * sz;
  x->buf = malloc(x->bytes ? x->bytes : 1);
  if (!x->buf) die("out of memory");
  int rc;
  calls[in ? C_SEND : C_RECV]++;
  LOG_EVENT("%s peer %d bytes %zu stream %lld\n", in ? "ncclSend" : "ncclRecv", peer, x->bytes,
            (long long)stream_no(st));
  if (in) { /* the stream reaches the send now: its input as the compute stream left it */
    memcpy(x->buf, in, x->bytes);
    rc = MPI_Isend(x->buf, (int)n, dt, peer, 0, comm->c, &x->req);
  } else {
    x->dest = out;
    rc = MPI_Irecv(x->buf, (int)n, dt, peer, 0, comm->c, &x->req);
  }
  push(st, id);
  return rc == MPI_SUCCESS ? ncclSuccess : ncclSystemError;
}
ncclResult_t ncclSend(const void *in, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
  return p2p(in, NULL, n, t, peer, comm, s);
}
ncclResult_t ncclRecv(void *out, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
  return p2p(NULL, out, n, t, peer, comm, s);
}

static int group_depth;
ncclResult_t ncclGroupStart(void) {
  group_depth++;
  calls[C_GROUP]++;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  return group_depth-- > 0 ? ncclSuccess : ncclInvalidUsage;
}
