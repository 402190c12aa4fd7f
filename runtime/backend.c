/* The backend record (prt_internal.h, "the backend"): which comm backend this process runs
 * and which engine runs each kind of the plan's transfers, chosen once by prt_comm_init;
 * and the prt_comm_* wrappers the rest of the runtime calls through it.
 *
 * The choice: MPI where the binary links libpiper_rt_mpi (the link line names
 * -Wl,-u,prt_comm_mpi, so its record is pulled out of the archive; the reference here is
 * weak), serial otherwise. An MPI binary started without mpirun is a world of one over MPI,
 * as before the record existed. */
#include <stddef.h>

#include "prt_internal.h"

/* Weak: resolved only when libpiper_rt_mpi is linked (with -u prt_comm_mpi). */
extern const prt_comm_vtable prt_comm_mpi __attribute__((weak));

_Static_assert(PRT_OP_KINDS == PRT_OP_ALL_TO_ALL + 1, "PRT_OP_KINDS must count prt_op_kind");

prt_watchdog prt_watch = {0.0, -1, NULL}; /* no watchdog until prt_main sets --timeout */

static prt_backend B = {
    &prt_comm_serial,
    {&prt_comm_serial.xfer, &prt_comm_serial.xfer, &prt_comm_serial.xfer,
     &prt_comm_serial.xfer, &prt_comm_serial.xfer, &prt_comm_serial.xfer},
};

const prt_backend *prt_backend_current(void) { return &B; }

/* The comm backend this binary runs: the widest one it links. */
static const prt_comm_vtable *prt_backend_choose(void) {
  return &prt_comm_mpi ? &prt_comm_mpi : &prt_comm_serial;
}

int prt_comm_init(int *argc, char ***argv) {
  const prt_comm_vtable *comm = prt_backend_choose();
  B.comm = comm;
  for (int k = 0; k < PRT_OP_KINDS; k++) B.xfer[k] = &comm->xfer;
  prt_set_stop(comm->abort);
  return comm->init(argc, argv, &prt_watch);
}

void prt_backend_use_collectives(const prt_xfer_vtable *engine) {
  B.xfer[PRT_OP_ALL_REDUCE] = engine;
  B.xfer[PRT_OP_REDUCE_SCATTER] = engine;
  B.xfer[PRT_OP_ALL_GATHER] = engine;
}

/* ---- the wrappers ---- */

void prt_comm_finalize(void) { B.comm->finalize(); }
int64_t prt_comm_size(void) { return B.comm->size(); }
int64_t prt_comm_rank(void) { return B.comm->rank(); }
void prt_comm_abort(int code) { B.comm->abort(code); }
void prt_comm_barrier(void) { B.comm->barrier(); }
void prt_comm_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op) {
  B.comm->allreduce_i64(buf, n, op);
}
void prt_comm_allreduce_f64(double *buf, int64_t n) { B.comm->allreduce_f64(buf, n); }
void *prt_comm_allgatherv(const void *in, int64_t bytes, int64_t *counts) {
  return B.comm->allgatherv(in, bytes, counts);
}
void prt_comm_send_bytes(const void *buf, int64_t bytes, int64_t peer) {
  B.comm->send_bytes(buf, bytes, peer);
}
void prt_comm_recv_bytes(void *buf, int64_t bytes, int64_t peer) {
  B.comm->recv_bytes(buf, bytes, peer);
}
void prt_comm_groups_create(prt_ctx *ctx) { B.comm->groups_create(ctx); }
void prt_comm_group_free(prt_group *g) { B.comm->group_free(g); }
void prt_comm_progress(void) { B.comm->progress(); }
