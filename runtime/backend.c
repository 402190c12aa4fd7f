/* The backend record (prt_internal.h, "the backend"): the device this process's tensors live
 * on, which comm backend it runs and which engine runs each kind of the plan's transfers;
 * and the prt_comm_* wrappers the rest of the runtime calls through it.
 *
 * The choices, each made once at start-up:
 *   the world: MPI where the binary links libpiper_rt_mpi (the link line names
 *     -Wl,-u,prt_comm_mpi, so its record is pulled out of the archive; the reference here is
 *     weak), serial otherwise (prt_comm_init). An MPI binary started without mpirun is a
 *     world of one over MPI.
 *   the device: the CPU's, until a GPU plan's setup calls prt_backend_use_gpu, which opens
 *     this rank's GPU through the device seam (device.h) before anything is allocated;
 *   the collectives' and all-to-alls' engines: the world's (staged through host memory on a
 *     GPU), or NCCL's, from --comm (prt_backend_use_gpu); send/recv too when the plan declared
 *     its peers (prt_declare_peer: its receives follow each sender's order), else the world's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"

/* Weak: resolved only when libpiper_rt_mpi is linked (with -u prt_comm_mpi). */
extern const prt_comm_vtable prt_comm_mpi __attribute__((weak));
/* Weak: libpiper_rt_nccl, linked (with -u prt_nccl_attach) into multi-device GPU binaries.
 * It makes NCCL's communicators and hands back its engine of each transfer kind (NULL: the
 * kind stays on the comm backend), which prt_backend_use_gpu installs. */
extern int prt_nccl_attach(prt_ctx *ctx, const prt_xfer_vtable *engines[PRT_OP_KINDS])
    __attribute__((weak));

_Static_assert(PRT_OP_KINDS == PRT_OP_ALL_TO_ALL + 1, "PRT_OP_KINDS must count prt_op_kind");

prt_watchdog prt_watch = {0.0, -1, NULL}; /* no watchdog until prt_main sets --timeout */

/* The device is filled in on first use: the CPU device is a function's, not a constant. */
static prt_backend B = {
    NULL,
    &prt_comm_serial,
    {&prt_comm_serial.xfer, &prt_comm_serial.xfer, &prt_comm_serial.xfer,
     &prt_comm_serial.xfer, &prt_comm_serial.xfer, &prt_comm_serial.xfer},
    PRT_COMM_MPI,
    NULL,
};

const prt_backend *prt_backend_current(void) {
  if (!B.device) B.device = prt_device_cpu();
  return &B;
}

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

void prt_backend_use_engine(int kind, const prt_xfer_vtable *engine) {
  if (kind < 0 || kind >= PRT_OP_KINDS || !engine)
    prt_fatal("installing %s engine for transfer kind %d (kinds are 0..%d); a runtime defect",
              engine ? engine->name : "no", kind, PRT_OP_KINDS - 1);
  B.xfer[kind] = engine;
}

void prt_backend_use_collectives(const prt_xfer_vtable *engine) {
  prt_backend_use_engine(PRT_OP_ALL_REDUCE, engine);
  prt_backend_use_engine(PRT_OP_REDUCE_SCATTER, engine);
  prt_backend_use_engine(PRT_OP_ALL_GATHER, engine);
}

void prt_backend_use_step_runner(void (*runner)(prt_ctx *ctx, void (*step)(prt_ctx *))) {
  B.run_step = runner;
}

void prt_backend_run_step(prt_ctx *ctx, void (*step)(prt_ctx *)) {
  if (ctx->backend->run_step) ctx->backend->run_step(ctx, step);
  else step(ctx);
}

/* --comm, else PIPER_COMM (the environment variable the flag replaced; still read so existing
 * scripts keep working), else AUTO. */
static prt_comm_choice requested_comm(const prt_ctx *ctx) {
  const char *env = getenv("PIPER_COMM");
  if (ctx->comm != PRT_COMM_AUTO || !env) return (prt_comm_choice)ctx->comm;
  if (!strcmp(env, "nccl")) return PRT_COMM_NCCL;
  if (!strcmp(env, "mpi")) return PRT_COMM_MPI;
  prt_fatal("PIPER_COMM=%s: expected nccl (collectives on the GPUs) or mpi (transfers staged "
            "through host memory); --comm does the same", env);
}

/* The first of the launchers' variables that is set (Open MPI, MPICH, Slurm), or NULL. */
static const char *launcher_env(const char *ompi, const char *mpich, const char *slurm) {
  const char *v = getenv(ompi);
  if (!v) v = getenv(mpich);
  if (!v && slurm) v = getenv(slurm);
  return v;
}

/* Opens this rank's GPU (the node-local rank's, modulo the GPUs there: ranks beyond the GPU
 * count share them, which staged MPI transfers allow) and resolves `choice` (AUTO: MPI. NCCL
 * only when asked: no multi-GPU machine has run it yet (issue 17), and it needs every rank
 * of the node on its own GPU, as NCCL refuses two ranks on one). */
static void open_gpu(prt_ctx *ctx, prt_comm_choice choice) {
  int ngpu = prt_device_count("cuda"), ordinal = 0;
  const char *local = launcher_env("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                   "SLURM_LOCALID");
  if (local && ngpu > 0) ordinal = atoi(local) % ngpu;
  char kind[32];
  snprintf(kind, sizeof kind, "cuda:%d", ordinal);
  prt_status st = {0};
  prt_device *gpu = NULL;
  if (prt_device_open(kind, &gpu, &st))
    prt_fatal("this binary was compiled with --target cuda and needs an NVIDIA GPU: %s",
              st.msg);
  const char *lsize = launcher_env("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", NULL);
  int local_ranks = lsize ? atoi(lsize) : ctx->world > 0 ? (int)ctx->world : 1;
  int own_gpu = ngpu >= local_ranks;
  if (choice == PRT_COMM_NCCL && ctx->world > 1 && !own_gpu)
    prt_fatal("--comm nccl needs one GPU per rank, but %d ranks on this node share %d GPU(s) "
              "(NCCL refuses two ranks on one GPU); pass --comm mpi to stage the transfers "
              "through host memory, or run at most %d ranks per node", local_ranks, ngpu,
              ngpu);
  if (choice == PRT_COMM_AUTO) choice = PRT_COMM_MPI;
  B.device = gpu;
  B.collectives = choice;
}

void prt_backend_use_gpu(prt_ctx *ctx) {
  /* checked before the GPU is opened, so a typo is named first */
  prt_comm_choice choice = requested_comm(ctx);
  ctx->comm_resolved = 1;
  if (choice == PRT_COMM_NCCL && ctx->world > 1 && !prt_nccl_attach)
    prt_fatal("--comm nccl (or PIPER_COMM=nccl), but this binary has no NCCL backend (piper "
              "was built without NCCL); pass --comm mpi");
  if (prt_backend_current()->device == prt_device_cpu()) open_gpu(ctx, choice); /* once */
  ctx->backend = &B;
  /* once: a second call finds NCCL's communicators made */
  if (B.collectives == PRT_COMM_NCCL && ctx->world > 1) {
    const prt_xfer_vtable *engines[PRT_OP_KINDS] = {NULL};
    prt_nccl_attach(ctx, engines);
    for (int k = 0; k < PRT_OP_KINDS; k++)
      if (engines[k]) prt_backend_use_engine(k, engines[k]);
  }
}

/* ---- the wrappers ---- */

void prt_comm_finalize(void) { B.comm->finalize(); }
int64_t prt_comm_size(void) { return B.comm->size(); }
int64_t prt_comm_rank(void) { return B.comm->rank(); }
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
