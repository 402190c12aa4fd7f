/* A fake NCCL over MPI, for running libpiper_rt_nccl's engines (runtime/comm/nccl.c) on real
 * mpirun ranks without GPUs, on the fake GPUs of fake_cuda.c. Each NCCL call is an operation
 * on its stream (fake_cuda_enqueue): it runs in the stream's order, lazily, as the fake's
 * kernels and copies do, reading its send buffer when it runs and writing its receive buffer
 * while in flight, and completes when its MPI transfer does:
 *   ncclCommInitRank / ncclCommSplit   MPI_Comm_dup of the world / MPI_Comm_split;
 *   collectives                        the nonblocking MPI collective, started when the
 *                                      stream reaches it (every rank runs a communicator's
 *                                      collectives in its issue order, its stream's);
 *   ncclSend / ncclRecv                MPI_Issend / MPI_Irecv on the caller's buffers, started
 *                                      when the stream reaches them: a send completes only
 *                                      once its receive runs (NCCL's rule, so its stream
 *                                      waits for the peer as on a GPU);
 *   ncclGroupStart / End               the sends and receives between them are one
 *                                      operation, all started together (NCCL's grouping).
 * A stream waits for an in-flight transfer; meanwhile the device goes on with the rest of its
 * work, and it does while the host waits for MPI too: MPI_Test and MPI_Wait are interposed
 * here (the runtime's own host reductions and transfers poll them), so a rank blocked on the
 * host still progresses its device as a GPU would, and its peer's transfer completes.
 *
 * Checks, each fatal naming it: every call's stream must be ordered after the latest kernel
 * issued on the other streams (comm/nccl.c's order_after_compute: a send reads what the
 * kernels wrote, a receive overwrites what they may still read); the transfers' buffers are
 * seen by fake_cuda.c's race detector, so a kernel that reads a received buffer before the
 * compute stream waited for its completion event is named. The negative controls
 * (fake-nccl-train.test) put each bug back from here: FAKE_NCCL_IGNORE_WAITS=1 drops the
 * compute stream's waits for a completion event (a backend without nccl_finish's wait; =send:
 * only those of sends, whose buffers the compute stream may then overwrite early),
 * FAKE_NCCL_IGNORE_ORDER=1 drops the NCCL streams' waits for the compute stream (a backend
 * without order_after_compute).
 *
 * The streams of comm/nccl.c are the ones made cudaStreamNonBlocking (the plan's and
 * kernels/cuda.c's are blocking, cudaStreamCreate), numbered 1, 2, ... in creation order.
 * FAKE_NCCL_REPORT=1 prints each rank's calls at exit, so a test can tell that the NCCL
 * engines ran. FAKE_NCCL_LOG=PREFIX writes each rank's order of events to PREFIX.<rank>, one a
 * line: a stream of ours ordered after the compute stream (and after how many kernels), each
 * send and receive (the peer's rank on its communicator, bytes, stream), a completion event
 * recorded on a stream of ours, and the compute stream waiting for one (the point a received
 * block lands). Only what comm/nccl.c calls is defined. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "fake_cuda.h"

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

/* ---- the backend's streams and the fake CUDA runtime's hooks ---- */

enum { MAX_OURS = 64 };
static cudaStream_t ours[MAX_OURS];
static int sends_on[MAX_OURS]; /* 1: a send was issued on it (a direction's send stream) */
static int nours;

/* A stream of ours by its creation index (1, 2, ...); 0: another (the compute stream). */
static int stream_no(cudaStream_t s) {
  for (int i = 0; i < nours; i++)
    if (s && ours[i] == s) return i + 1;
  return 0;
}

void fake_cuda_on_stream_create(cudaStream_t s, unsigned int flags) {
  if (!(flags & cudaStreamNonBlocking)) return;
  if (nours == MAX_OURS) die("more than MAX_OURS non-blocking streams");
  ours[nours++] = s;
}

void fake_cuda_on_event_record(cudaEvent_t e, cudaStream_t s) {
  if (stream_no(s)) LOG_EVENT("completion event on stream %d\n", stream_no(s));
}

static int env_on(const char *name) {
  const char *v = getenv(name);
  return v && !strcmp(v, "1");
}

int fake_cuda_on_stream_wait(cudaStream_t s, cudaEvent_t e) {
  int waiter = stream_no(s), on_ours = stream_no(fake_cuda_event_stream(e)) > 0;
  if (waiter && !on_ours) {
    LOG_EVENT("stream %d ordered after compute launch %ld\n", waiter,
              fake_cuda_event_launches(e));
    static int ignore_order = -1;
    if (ignore_order < 0) ignore_order = env_on("FAKE_NCCL_IGNORE_ORDER");
    return ignore_order;
  }
  if (!waiter && on_ours) {
    LOG_EVENT("compute waits for a completion event\n");
    static int ignore_waits = -1, ignore_sends = -1;
    if (ignore_waits < 0) ignore_waits = env_on("FAKE_NCCL_IGNORE_WAITS");
    if (ignore_sends < 0) {
      const char *v = getenv("FAKE_NCCL_IGNORE_WAITS");
      ignore_sends = v && !strcmp(v, "send");
    }
    return ignore_waits || (ignore_sends && sends_on[stream_no(fake_cuda_event_stream(e)) - 1]);
  }
  return 0;
}

/* The backend's first duty before an NCCL call (comm/nccl.c's order_after_compute): its
 * stream of ours, ordered after the latest kernel of every other stream, which may have
 * written the input or still read the output's old contents. */
static void check_ordered(cudaStream_t s, const char *call) {
  int no = stream_no(s);
  if (!no) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s on a stream the backend did not make for it (the compute "
             "stream?): the backend gives NCCL its own streams", call);
    die(msg);
  }
  int other;
  int64_t kernels;
  if (!fake_cuda_unordered_kernels(s, &other, &kernels)) return;
  fprintf(stderr, "fake NCCL: %s on stream %d, not ordered after the latest of the %lld "
          "kernels issued on stream %d: the backend did not make it wait for the compute "
          "stream\n", call, no, (long long)kernels, other);
  die("unordered NCCL call");
}

/* ---- MPI: the host's waits let the device go on ---- */

static void mpi_check(int rc, const char *what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING + 64];
  int len = 0;
  snprintf(msg, sizeof msg, "%s: ", what);
  MPI_Error_string(rc, msg + strlen(msg), &len);
  die(msg);
}

int MPI_Test(MPI_Request *r, int *flag, MPI_Status *status) {
  int rc = PMPI_Test(r, flag, status);
  if (rc == MPI_SUCCESS && !*flag) fake_cuda_progress();
  return rc;
}
int MPI_Wait(MPI_Request *r, MPI_Status *status) {
  for (;;) {
    int flag = 0, rc = PMPI_Test(r, &flag, status);
    if (rc != MPI_SUCCESS || flag) return rc;
    fake_cuda_progress();
  }
}

/* ---- communicators ---- */

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
static int mpi_count(size_t n) {
  if (n > (size_t)INT32_MAX) die("a transfer of more than INT_MAX elements is not faked");
  return (int)n;
}

/* ---- collectives: an operation on their stream ---- */

enum { K_ALL_REDUCE, K_REDUCE_SCATTER, K_ALL_GATHER, K_BROADCAST };
typedef struct {
  int kind, count, root;
  const void *in;
  void *out;
  size_t bytes; /* count elements */
  MPI_Datatype dt;
  MPI_Op op;
  MPI_Comm comm;
  MPI_Request req;
} coll_args;

static void coll_start(void *a) {
  coll_args *c = a;
  int rc = MPI_SUCCESS, me;
  switch (c->kind) {
  case K_ALL_REDUCE:
    rc = PMPI_Iallreduce(c->in == c->out ? MPI_IN_PLACE : c->in, c->out, c->count, c->dt,
                         c->op, c->comm, &c->req);
    break;
  case K_REDUCE_SCATTER:
    rc = PMPI_Ireduce_scatter_block(c->in, c->out, c->count, c->dt, c->op, c->comm, &c->req);
    break;
  case K_ALL_GATHER:
    MPI_Comm_rank(c->comm, &me);
    rc = PMPI_Iallgather((const char *)c->in == (const char *)c->out + (size_t)me * c->bytes
                             ? MPI_IN_PLACE : c->in,
                         c->count, c->dt, c->out, c->count, c->dt, c->comm, &c->req);
    break;
  case K_BROADCAST:
    MPI_Comm_rank(c->comm, &me);
    if (me == c->root && c->in != c->out) memmove(c->out, c->in, c->bytes);
    rc = PMPI_Ibcast(c->out, c->count, c->dt, c->root, c->comm, &c->req);
    break;
  }
  mpi_check(rc, "starting a collective");
}
static int coll_poll(void *a) {
  coll_args *c = a;
  int flag = 0;
  mpi_check(PMPI_Test(&c->req, &flag, MPI_STATUS_IGNORE), "testing a collective");
  return flag;
}

static ncclResult_t collective(const char *name, int kind, const void *in, void *out, size_t n,
                               ncclDataType_t t, ncclRedOp_t op, int root, ncclComm_t comm,
                               cudaStream_t s) {
  check_ordered(s, name);
  calls[C_COLL]++;
  size_t sz;
  int size;
  MPI_Comm_size(comm->c, &size);
  coll_args c = {.kind = kind, .count = mpi_count(n), .root = root, .in = in, .out = out,
                 .dt = mpi_type(t, &sz), .comm = comm->c, .req = MPI_REQUEST_NULL};
  c.bytes = n * sz;
  c.op = kind == K_ALL_GATHER || kind == K_BROADCAST ? MPI_OP_NULL : mpi_op(op);
  size_t in_bytes = kind == K_REDUCE_SCATTER ? c.bytes * (size_t)size : c.bytes;
  size_t out_bytes = kind == K_ALL_GATHER ? c.bytes * (size_t)size : c.bytes;
  if (kind == K_REDUCE_SCATTER && in == out)
    die("in-place reduce-scatter: NCCL's layout differs; not faked");
  fake_op_desc d = {.name = name, .run = coll_start, .poll = coll_poll, .naccess = 2,
                    .access = {{in, in_bytes, FAKE_READ}, {out, out_bytes, FAKE_WRITE}}};
  return fake_cuda_enqueue(s, &d, &c, sizeof c) == cudaSuccess ? ncclSuccess : ncclSystemError;
}

ncclResult_t ncclAllReduce(const void *in, void *out, size_t n, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
  return collective("ncclAllReduce", K_ALL_REDUCE, in, out, n, t, op, 0, comm, s);
}
ncclResult_t ncclReduceScatter(const void *in, void *out, size_t n, ncclDataType_t t,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t s) {
  return collective("ncclReduceScatter", K_REDUCE_SCATTER, in, out, n, t, op, 0, comm, s);
}
ncclResult_t ncclAllGather(const void *in, void *out, size_t n, ncclDataType_t t,
                           ncclComm_t comm, cudaStream_t s) {
  return collective("ncclAllGather", K_ALL_GATHER, in, out, n, t, ncclSum, 0, comm, s);
}
ncclResult_t ncclBroadcast(const void *in, void *out, size_t n, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t s) {
  return collective("ncclBroadcast", K_BROADCAST, in, out, n, t, ncclSum, root, comm, s);
}

/* ---- sends and receives: one operation each, or one per group ---- */

/* NCCL has no tags: a pair's messages on a communicator match in order, as MPI's on one tag. */
enum { MAX_GROUP = 64 };
typedef struct {
  int send, count, peer;
  void *buf; /* the send's input, the receive's output */
  size_t bytes;
  MPI_Datatype dt;
  MPI_Comm comm;
} p2p_entry;
typedef struct {
  int n;
  MPI_Request req[MAX_GROUP];
  p2p_entry e[MAX_GROUP];
} p2p_args;

static void p2p_start(void *a) {
  p2p_args *g = a;
  for (int i = 0; i < g->n; i++) {
    p2p_entry *e = &g->e[i];
    mpi_check(e->send ? PMPI_Issend(e->buf, e->count, e->dt, e->peer, 0, e->comm, &g->req[i])
                      : PMPI_Irecv(e->buf, e->count, e->dt, e->peer, 0, e->comm, &g->req[i]),
              e->send ? "starting a send" : "starting a receive");
  }
}
static int p2p_poll(void *a) {
  p2p_args *g = a;
  int flag = 0;
  mpi_check(PMPI_Testall(g->n, g->req, &flag, MPI_STATUSES_IGNORE), "testing a transfer");
  return flag;
}

/* The group being gathered (ncclGroupStart .. End), or the one call outside any. */
static int group_depth;
static p2p_args pending_group;
static cudaStream_t pending_stream;

static ncclResult_t p2p_flush(void) {
  if (!pending_group.n) return ncclSuccess;
  const char *name = pending_group.n > 1 ? "an NCCL group"
                     : pending_group.e[0].send ? "ncclSend" : "ncclRecv";
  fake_op_desc d = {.name = name, .run = p2p_start, .poll = p2p_poll};
  for (int i = 0; i < pending_group.n && d.naccess < FAKE_MAX_ACCESSES; i++)
    d.access[d.naccess++] = (fake_access){pending_group.e[i].buf, pending_group.e[i].bytes,
                                          pending_group.e[i].send ? FAKE_READ : FAKE_WRITE};
  size_t size = offsetof(p2p_args, e) + (size_t)pending_group.n * sizeof(p2p_entry);
  cudaError_t e = fake_cuda_enqueue(pending_stream, &d, &pending_group, size);
  pending_group.n = 0;
  return e == cudaSuccess ? ncclSuccess : ncclSystemError;
}

static ncclResult_t p2p(const void *in, void *out, size_t n, ncclDataType_t t, int peer,
                        ncclComm_t comm, cudaStream_t s) {
  const char *call = in ? "ncclSend" : "ncclRecv";
  check_ordered(s, call);
  if (pending_group.n && s != pending_stream)
    die("an NCCL group over several streams is not faked");
  if (pending_group.n == MAX_GROUP) die("more than MAX_GROUP transfers in one NCCL group");
  size_t sz;
  p2p_entry *e = &pending_group.e[pending_group.n++];
  e->dt = mpi_type(t, &sz);
  e->send = in != NULL;
  e->count = mpi_count(n);
  e->peer = peer;
  e->buf = in ? (void *)in : out;
  e->bytes = n * sz;
  e->comm = comm->c;
  pending_stream = s;
  if (in) sends_on[stream_no(s) - 1] = 1;
  calls[in ? C_SEND : C_RECV]++;
  LOG_EVENT("%s peer %d bytes %zu stream %d\n", call, peer, e->bytes, stream_no(s));
  return group_depth ? ncclSuccess : p2p_flush();
}
ncclResult_t ncclSend(const void *in, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
  return p2p(in, NULL, n, t, peer, comm, s);
}
ncclResult_t ncclRecv(void *out, size_t n, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t s) {
  return p2p(NULL, out, n, t, peer, comm, s);
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  calls[C_GROUP]++;
  return ncclSuccess;
}
ncclResult_t ncclGroupEnd(void) {
  if (group_depth <= 0) return ncclInvalidUsage;
  return --group_depth ? ncclSuccess : p2p_flush();
}
