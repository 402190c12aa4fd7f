/* The MPI comm backend (library piper_rt_mpi): one device per MPI rank.
 *
 * Communicators: the plan's send/recv run on a duplicate of MPI_COMM_WORLD and each declared
 * group on an MPI_Comm_split of it (color 0 for members, MPI_UNDEFINED otherwise, key = world
 * rank so member k is group rank k); the runtime's own traffic (agreements, checkpoint
 * assembly) runs on a second duplicate, so it never matches a plan's message. Transfers map
 * one to one: MPI_Isend / MPI_Irecv (MPI_FLOAT), MPI_Iallreduce (MPI_IN_PLACE, MPI_SUM),
 * MPI_Ireduce_scatter_block, MPI_Iallgather; prt_wait is MPI_Wait.
 *
 * Errors: every communicator returns errors (MPI_ERRORS_RETURN); a failed call prints
 * "piper: error: <call> failed: <MPI's words>: <where> (rank k); ..." and MPI_Aborts, so no
 * rank is left waiting for one that died.
 */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(prt_opaque), "MPI_Request must fit prt_opaque");
_Static_assert(sizeof(MPI_Comm) <= sizeof(prt_opaque), "MPI_Comm must fit prt_opaque");

const char prt_comm_backend[] = "mpi";

static MPI_Comm prt_plan_world = MPI_COMM_NULL; /* the plan's send/recv; parent of groups */
static MPI_Comm prt_rt_world = MPI_COMM_NULL;   /* the runtime's own collectives */
static int prt_mpi_rank;                        /* rank in MPI_COMM_WORLD */
static int prt_mpi_size = 1;                    /* size of MPI_COMM_WORLD */

/* MPI is usable: initialised and not finalised. */
static int prt_mpi_running(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

/* Stops every rank after an MPI call returned rc != MPI_SUCCESS. */
static void prt_mpi_check(int rc, const char *call, const char *where) {
  if (rc == MPI_SUCCESS) return;
  char words[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, words, &len) != MPI_SUCCESS) snprintf(words, sizeof words, "?");
  fprintf(stderr, "piper: error: %s failed: %s: %s (rank %d); the ranks disagree about this "
          "transfer (a plan bug) or MPI failed: check the plan and that every rank runs the "
          "same binary\n", call, words, where, prt_mpi_rank);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

#define PRT_MPI(call, where) prt_mpi_check((call), #call, (where))

/* MPI counts are int: larger transfers are a plan the backend cannot carry in one call. */
static int prt_mpi_count(int64_t n, const char *where) {
  if (n > INT_MAX) {
    fprintf(stderr, "piper: error: transfer of %lld floats exceeds MPI's int count: %s "
            "(rank %d); split the transfer in the plan\n", (long long)n, where, prt_mpi_rank);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
  }
  return (int)n;
}

int prt_comm_init(int *argc, char ***argv) {
  int init = 0, started = 0;
  MPI_Initialized(&init);
  if (!init) {
    MPI_Init(argc, argv);
    started = 1;
  }
  if (prt_plan_world == MPI_COMM_NULL) {
    PRT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "prt_comm_init");
    PRT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &prt_mpi_rank), "prt_comm_init");
    PRT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &prt_mpi_size), "prt_comm_init");
    PRT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &prt_plan_world), "prt_comm_init");
    PRT_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &prt_rt_world), "prt_comm_init");
  }
  return started;
}

void prt_comm_finalize(void) {
  if (!prt_mpi_running()) return;
  if (prt_plan_world != MPI_COMM_NULL) MPI_Comm_free(&prt_plan_world);
  if (prt_rt_world != MPI_COMM_NULL) MPI_Comm_free(&prt_rt_world);
  MPI_Finalize();
}

int64_t prt_comm_size(void) { return prt_plan_world == MPI_COMM_NULL ? 1 : prt_mpi_size; }
int64_t prt_comm_rank(void) { return prt_plan_world == MPI_COMM_NULL ? 0 : prt_mpi_rank; }

void prt_comm_abort(int code) {
  if (prt_mpi_running()) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

/* ---- the runtime's own world-level calls ---- */

/* True when the world has one rank or MPI is not running: the calls below are then local. */
static int prt_alone(void) { return prt_plan_world == MPI_COMM_NULL || prt_mpi_size == 1; }

void prt_comm_barrier(void) {
  if (!prt_alone()) PRT_MPI(MPI_Barrier(prt_rt_world), "prt_comm_barrier");
}

void prt_comm_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op) {
  if (prt_alone()) return;
  PRT_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, prt_mpi_count(n, "prt_comm_allreduce_i64"),
                        MPI_INT64_T, op == PRT_REDUCE_MAX ? MPI_MAX : MPI_SUM, prt_rt_world),
          "prt_comm_allreduce_i64");
}

void prt_comm_allreduce_f64(double *buf, int64_t n) {
  if (prt_alone()) return;
  PRT_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, prt_mpi_count(n, "prt_comm_allreduce_f64"),
                        MPI_DOUBLE, MPI_SUM, prt_rt_world),
          "prt_comm_allreduce_f64");
}

void *prt_comm_allgatherv(const void *in, int64_t bytes, int64_t *counts) {
  if (prt_alone()) {
    void *out = prt_xmalloc((size_t)bytes, "gathered metadata");
    memcpy(out, in, (size_t)bytes);
    counts[0] = bytes;
    return out;
  }
  PRT_MPI(MPI_Allgather(&bytes, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, prt_rt_world),
          "prt_comm_allgatherv");
  int *cnt = prt_xmalloc((size_t)prt_mpi_size * sizeof *cnt, "gather counts");
  int *displ = prt_xmalloc((size_t)prt_mpi_size * sizeof *displ, "gather offsets");
  int64_t total = 0;
  for (int r = 0; r < prt_mpi_size; r++) {
    displ[r] = prt_mpi_count(total, "prt_comm_allgatherv");
    cnt[r] = prt_mpi_count(counts[r], "prt_comm_allgatherv");
    total += counts[r];
  }
  prt_mpi_count(total, "prt_comm_allgatherv");
  void *out = prt_xmalloc((size_t)total, "gathered metadata");
  PRT_MPI(MPI_Allgatherv(in, cnt[prt_mpi_rank], MPI_BYTE, out, cnt, displ, MPI_BYTE,
                         prt_rt_world),
          "prt_comm_allgatherv");
  free(cnt);
  free(displ);
  return out;
}

/* Point-to-point in chunks of 1 GiB (MPI counts are int). */
#define PRT_CHUNK ((int64_t)1 << 30)

void prt_comm_send_bytes(const void *buf, int64_t bytes, int64_t peer) {
  int64_t o = 0;
  do {
    int64_t n = bytes - o < PRT_CHUNK ? bytes - o : PRT_CHUNK;
    PRT_MPI(MPI_Send((const char *)buf + o, (int)n, MPI_BYTE, (int)peer, 0, prt_rt_world),
            "prt_comm_send_bytes");
    o += n;
  } while (o < bytes);
}

void prt_comm_recv_bytes(void *buf, int64_t bytes, int64_t peer) {
  int64_t o = 0;
  do {
    int64_t n = bytes - o < PRT_CHUNK ? bytes - o : PRT_CHUNK;
    PRT_MPI(MPI_Recv((char *)buf + o, (int)n, MPI_BYTE, (int)peer, 0, prt_rt_world,
                     MPI_STATUS_IGNORE),
            "prt_comm_recv_bytes");
    o += n;
  } while (o < bytes);
}

/* ---- groups ---- */

void prt_comm_groups_create(prt_ctx *ctx) {
  for (int64_t g = 0; g < ctx->ngroups; g++) {
    prt_group *gr = &ctx->groups[g];
    MPI_Comm c = MPI_COMM_NULL;
    PRT_MPI(MPI_Comm_split(prt_plan_world, gr->index >= 0 ? 0 : MPI_UNDEFINED,
                           prt_mpi_rank, &c),
            "prt_declare_group");
    memset(&gr->comm, 0, sizeof gr->comm);
    memcpy(&gr->comm, &c, sizeof c);
  }
}

void prt_comm_group_free(prt_group *g) {
  MPI_Comm c;
  memcpy(&c, &g->comm, sizeof c);
  if (g->index >= 0 && c != MPI_COMM_NULL && prt_mpi_running()) MPI_Comm_free(&c);
  memset(&g->comm, 0, sizeof g->comm);
}

/* ---- the plan's transfers ---- */

void prt_comm_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  static const char *const where[] = {"prt_isend", "prt_irecv", "prt_iall_reduce",
                                      "prt_ireduce_scatter", "prt_iall_gather"};
  const char *w = where[op->kind];
  int n = prt_mpi_count(op->n, w);
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Comm c = MPI_COMM_NULL;
  int64_t members = 1, index = 0;
  if (op->group >= 0) {
    memcpy(&c, &ctx->groups[op->group].comm, sizeof c);
    members = ctx->groups[op->group].n;
    index = ctx->groups[op->group].index;
  }
  switch (op->kind) {
  case PRT_OP_SEND:
    PRT_MPI(MPI_Isend(op->in, n, MPI_FLOAT, (int)op->peer, (int)op->tag, prt_plan_world, &r),
            w);
    break;
  case PRT_OP_RECV:
    PRT_MPI(MPI_Irecv(op->out, n, MPI_FLOAT, (int)op->peer, (int)op->tag, prt_plan_world, &r),
            w);
    break;
  case PRT_OP_ALL_REDUCE:
    PRT_MPI(MPI_Iallreduce(MPI_IN_PLACE, op->out, n, MPI_FLOAT, MPI_SUM, c, &r), w);
    break;
  case PRT_OP_REDUCE_SCATTER: /* in == out: the input is out (n * members), result first */
    prt_mpi_count(op->n * members, w);
    PRT_MPI(MPI_Ireduce_scatter_block(op->in == op->out ? MPI_IN_PLACE : op->in, op->out, n,
                                      MPI_FLOAT, MPI_SUM, c, &r),
            w);
    break;
  case PRT_OP_ALL_GATHER: /* in already at its place in out: in place */
    prt_mpi_count(op->n * members, w);
    PRT_MPI(MPI_Iallgather(op->in == op->out + index * op->n ? MPI_IN_PLACE : op->in, n,
                           MPI_FLOAT, op->out, n, MPI_FLOAT, c, &r),
            w);
    break;
  }
  memset(req, 0, sizeof *req);
  memcpy(req, &r, sizeof r);
}

void prt_comm_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  MPI_Request r;
  MPI_Status status;
  memcpy(&r, req, sizeof r);
  PRT_MPI(MPI_Wait(&r, &status), "prt_wait");
  if (op->kind == PRT_OP_RECV) {
    int got = 0;
    MPI_Get_count(&status, MPI_FLOAT, &got);
    if (got != op->n) {
      fprintf(stderr, "piper: error: prt_irecv from rank %lld (tag %lld) got %d floats, "
              "expected %lld: prt_wait (rank %d); the sender and receiver disagree on the "
              "size: this is a bug in the compiled plan\n", (long long)op->peer,
              (long long)op->tag, got, (long long)op->n, prt_mpi_rank);
      fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
  memset(req, 0, sizeof *req);
}
