/* The serial comm backend (library piper_rt_serial): a world of one device, no MPI. Groups
 * have one member, so an all-reduce leaves its buffer as it is and a reduce-scatter or an
 * all-gather copies its input; a send or receive would need a second device and never gets
 * here (dist.c stops it as a plan bug). Single-device binaries link this one.
 */
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

const char prt_comm_backend[] = "serial";

int prt_comm_init(int *argc, char ***argv) { return 0; }
void prt_comm_finalize(void) {}
int64_t prt_comm_size(void) { return 1; }
int64_t prt_comm_rank(void) { return 0; }

void prt_comm_abort(int code) { exit(code); }

void prt_comm_barrier(void) {}
void prt_comm_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op) {}
void prt_comm_allreduce_f64(double *buf, int64_t n) {}

void *prt_comm_allgatherv(const void *in, int64_t bytes, int64_t *counts) {
  void *out = prt_xmalloc((size_t)bytes, "gathered metadata");
  memcpy(out, in, (size_t)bytes);
  counts[0] = bytes;
  return out;
}

void prt_comm_send_bytes(const void *buf, int64_t bytes, int64_t peer) {
  prt_fatal("the serial backend has no rank %lld to send to: prt_comm_send_bytes; this is a "
            "bug in libpiper_rt", (long long)peer);
}

void prt_comm_recv_bytes(void *buf, int64_t bytes, int64_t peer) {
  prt_fatal("the serial backend has no rank %lld to receive from: prt_comm_recv_bytes; this "
            "is a bug in libpiper_rt", (long long)peer);
}

void prt_comm_groups_create(prt_ctx *ctx) {} /* allocate checked every member is device 0 */
void prt_comm_group_free(prt_group *g) {}

void prt_comm_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
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

void prt_comm_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {}
int prt_comm_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) { return 1; }
void prt_comm_progress(void) {} /* nothing is ever in flight */
