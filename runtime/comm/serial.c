/* The serial comm backend (prt_comm_serial, in libpiper_rt): a world of one device, no MPI.
 * Groups have one member, so an all-reduce leaves its buffer as it is and a reduce-scatter or
 * an all-gather copies its input; a send or receive would need a second device and never gets
 * here (dist.c stops it as a plan bug). The backend record starts on it (backend.c) and keeps
 * it in binaries that do not link MPI.
 */
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"

static int serial_init(int *argc, char ***argv, const prt_watchdog *watch) { return 0; }
static void serial_finalize(void) {}
static int64_t serial_size(void) { return 1; }
static int64_t serial_rank(void) { return 0; }

__attribute__((noreturn)) static void serial_abort(int code) { exit(code); }

static void serial_barrier(void) {}
static void serial_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op) {}
static void serial_allreduce_f64(double *buf, int64_t n) {}

static void *serial_allgatherv(const void *in, int64_t bytes, int64_t *counts) {
  void *out = prt_xmalloc((size_t)bytes, "gathered metadata");
  memcpy(out, in, (size_t)bytes);
  counts[0] = bytes;
  return out;
}

static void serial_send_bytes(const void *buf, int64_t bytes, int64_t peer) {
  prt_fatal("the serial backend has no rank %lld to send to: prt_comm_send_bytes; this is a "
            "bug in libpiper_rt", (long long)peer);
}

static void serial_recv_bytes(void *buf, int64_t bytes, int64_t peer) {
  prt_fatal("the serial backend has no rank %lld to receive from: prt_comm_recv_bytes; this "
            "is a bug in libpiper_rt", (long long)peer);
}

static void serial_groups_create(prt_ctx *ctx) {} /* allocate checked members are device 0 */
static void serial_group_free(prt_group *g) {}

static void serial_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  switch (op->kind) {
  case PRT_OP_ALL_REDUCE: break; /* the sum over one member */
  case PRT_OP_REDUCE_SCATTER:    /* block 0 of in (n), summed over one member */
  case PRT_OP_ALL_GATHER:        /* in (n), concatenated over one member */
  case PRT_OP_ALL_TO_ALL:        /* block 0 of in to member 0 */
    if (op->out != op->in) memmove(op->out, op->in, (size_t)op->n * sizeof(float));
    break;
  default:
    prt_fatal("a send or receive reached the serial backend: prt_comm_start; this is a bug "
              "in libpiper_rt");
  }
}

/* A bf16 sum over one member: the all-reduce leaves it, the reduce-scatter copies block 0. */
static void serial_start_bf16(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  if (op->kind == PRT_OP_REDUCE_SCATTER && op->out != op->in)
    memmove(op->out, op->in, (size_t)op->n * sizeof(uint16_t));
}

static void serial_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {}
static int serial_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) { return 1; }
static void serial_progress(void) {} /* nothing is ever in flight */

const prt_comm_vtable prt_comm_serial = {
    .name = "serial",
    .one_process = 1,
    .init = serial_init,
    .finalize = serial_finalize,
    .size = serial_size,
    .rank = serial_rank,
    .abort = serial_abort,
    .barrier = serial_barrier,
    .allreduce_i64 = serial_allreduce_i64,
    .allreduce_f64 = serial_allreduce_f64,
    .allgatherv = serial_allgatherv,
    .send_bytes = serial_send_bytes,
    .recv_bytes = serial_recv_bytes,
    .groups_create = serial_groups_create,
    .group_free = serial_group_free,
    .progress = serial_progress,
    .xfer = {"serial", 0, serial_start, serial_finish, serial_test},
    .start_bf16 = serial_start_bf16,
};
