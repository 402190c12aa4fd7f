/* Periodic checkpoints written from a background thread, optionally into a ring of numbered
 * files (see prt_ckpt_ring.h for the contract).
 *
 * Threads: only the training thread talks to MPI (the assembly is collective and runs there);
 * the writer thread touches nothing but its snapshot, the file system and its own status, so
 * the MPI library's thread level does not matter. The snapshot is owned by the writer and
 * never changes while a write is in flight: the next prt_ckpt_periodic joins the thread
 * before it copies new values in.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "piper/base/ring.h"
#include "prt_checkpoint.h"
#include "prt_ckpt_ring.h"
#include "prt_safetensors.h"

struct prt_ckpt_writer {
  char *dir;            /* owned: --checkpoint-dir, NULL = write to `path` */
  const char *path;     /* borrowed: --save-checkpoint, used when dir is NULL */
  int64_t keep;         /* ring files kept (>= 1) */
  int64_t rank;         /* this rank: only rank 0 writes */
  prt_st_entry *entries; /* owned (n): names and dims borrow the catalog, data the snapshot */
  int64_t n;            /* entries in the snapshot */
  float *snapshot;      /* owned (floats): every entry's values, back to back */
  size_t floats;        /* capacity of snapshot, in floats */
  int64_t step;         /* the step of the snapshot being written */
  char *target;         /* owned: the file being written */
  pthread_t thread;     /* the writer, valid while busy */
  int busy;             /* 1 while a thread is started and not joined */
  prt_status result;    /* the finished write's status (written by the thread, read after
                           the join) */
  float **adopted;      /* owned (n): tensors the assembly built for this snapshot, taken
                           over instead of copied; NULL where the entry is in `snapshot` */
  /* PIPER_CKPT_STATS=1: what the checkpoints cost, printed by rank 0 as the writer ends */
  int64_t count;        /* snapshots taken */
  double train_ms;      /* wall ms the training thread spent in prt_ckpt_periodic */
  double wait_ms;       /* of which waiting for the previous write to end */
  double writer_cpu_ms; /* CPU ms of the writer threads (write, fsync, prune) */
};

/* After `step` was committed: removes ring files of later steps (an abandoned timeline: the
 * run went back to an earlier checkpoint, so they are not this run's) and all but the newest
 * `keep` of the rest. Best effort: a file that cannot be removed stays and is retried next
 * time. */
static void prt_ring_prune(const char *dir, int64_t keep, int64_t step) {
  int64_t *steps;
  size_t n;
  if (pb_ring_steps(dir, &steps, &n)) return;
  for (size_t i = 0, kept = 0; i < n; i++) {
    if (steps[i] <= step && (int64_t)kept < keep) {
      kept++;
      continue;
    }
    char *p = pb_ring_path(dir, steps[i]);
    if (p) unlink(p);
    free(p);
  }
  free(steps);
}

static double prt_clock_ms(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void *prt_ckpt_thread(void *arg) {
  prt_ckpt_writer *w = arg;
  double c0 = prt_clock_ms(CLOCK_THREAD_CPUTIME_ID);
  prt_fault_point(PRT_FAULT_AT_SAVE, w->rank, w->step);
  if (prt_safetensors_write(w->target, w->entries, w->n, w->step, &w->result) == 0 && w->dir)
    prt_ring_prune(w->dir, w->keep, w->step);
  w->writer_cpu_ms += prt_clock_ms(CLOCK_THREAD_CPUTIME_ID) - c0; /* read after the join */
  return NULL;
}

prt_ckpt_writer *prt_ckpt_writer_create(const prt_ctx *ctx, const char *dir, const char *path,
                                        int64_t keep, prt_status *st) {
  if (ctx->rank == 0 && dir) {
    struct stat sb;
    if (stat(dir, &sb) != 0 && errno == ENOENT && mkdir(dir, 0777) != 0 && errno != EEXIST) {
      prt_fail(st, 1, "cannot create --checkpoint-dir %s: %s; create it, or name a folder "
               "whose parent exists", dir, strerror(errno));
      return NULL;
    }
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
      prt_fail(st, 1, "--checkpoint-dir %s is not a folder: command line; name a folder (it "
               "is created if missing)", dir);
      return NULL;
    }
    if (access(dir, W_OK | X_OK) != 0) {
      prt_fail(st, 1, "--checkpoint-dir %s is not writable: %s; name a folder this user can "
               "write", dir, strerror(errno));
      return NULL;
    }
  }
  prt_ckpt_writer *w = prt_xmalloc(sizeof *w, "the checkpoint writer");
  memset(w, 0, sizeof *w);
  w->dir = dir ? strdup(dir) : NULL;
  w->path = path;
  w->keep = keep < 1 ? 1 : keep;
  w->rank = ctx->rank;
  return w;
}

int prt_ckpt_writer_wait(prt_ckpt_writer *w, prt_status *st) {
  if (!w || !w->busy) return st->code;
  pthread_join(w->thread, NULL);
  w->busy = 0;
  free(w->target);
  w->target = NULL;
  if (w->result.code && !st->code) *st = w->result;
  w->result = (prt_status){0};
  return st->code;
}

/* Elements of an assembled tensor: the product of its dims. */
static size_t prt_entry_numel(const prt_st_entry *e) {
  size_t numel = 1;
  for (int64_t k = 0; k < e->ndim; k++) numel *= (size_t)e->dims[k];
  return numel;
}

/* Frees the tensors the previous snapshot adopted. */
static void prt_ckpt_release(prt_ckpt_writer *w) {
  for (int64_t i = 0; w->adopted && i < w->n; i++) free(w->adopted[i]);
  free(w->adopted);
  w->adopted = NULL;
}

/* Collective: assembles the checkpoint on rank 0 and makes it the snapshot. A tensor the
 * assembly built in a buffer of its own (pieces gathered from other ranks, or read from a
 * device) is adopted as it is; only a tensor it borrows from live storage (rank 0 holds it
 * whole, in host memory) is copied, since the next steps change it. Copying the assembled
 * ones too would copy every sharded tensor twice. */
static int prt_ckpt_snapshot(prt_ckpt_writer *w, prt_ctx *ctx, const char *target,
                             prt_status *st) {
  prt_assembly as;
  if (prt_checkpoint_assemble(ctx, target, &as, st)) return st->code;
  if (ctx->rank == 0) {
    prt_ckpt_release(w);
    size_t total = 0;
    for (int64_t i = 0; i < as.n; i++)
      if (!as.bufs[i]) total += prt_entry_numel(&as.entries[i]);
    if (total > w->floats) { /* the same size every time: allocated once per run */
      free(w->snapshot);
      w->snapshot = prt_xmalloc((total ? total : 1) * sizeof(float), "a checkpoint snapshot");
      w->floats = total;
    }
    free(w->entries);
    w->entries = prt_xmalloc((size_t)(as.n ? as.n : 1) * sizeof *w->entries, "entries");
    w->adopted = prt_xmalloc((size_t)(as.n ? as.n : 1) * sizeof *w->adopted, "entries");
    w->n = as.n;
    float *at = w->snapshot;
    for (int64_t i = 0; i < as.n; i++) {
      w->entries[i] = as.entries[i];
      w->adopted[i] = as.bufs[i];
      as.bufs[i] = NULL; /* the writer's now: prt_assembly_free leaves it */
      if (w->adopted[i]) continue;
      size_t numel = prt_entry_numel(&as.entries[i]);
      memcpy(at, as.entries[i].data, numel * sizeof(float));
      w->entries[i].data = at;
      at += numel;
    }
  }
  prt_assembly_free(&as);
  return st->code;
}

static int prt_ckpt_start(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st);

int prt_ckpt_periodic(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st) {
  double t0 = prt_clock_ms(CLOCK_MONOTONIC);
  w->count++;
  int rc = prt_ckpt_start(w, ctx, step, st);
  w->train_ms += prt_clock_ms(CLOCK_MONOTONIC) - t0;
  return rc;
}

/* prt_ckpt_periodic, untimed. */
static int prt_ckpt_start(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st) {
  /* The previous write's failure is rank 0's alone: it still takes part in the collective
   * assembly (the other ranks are in it), starts no new write and reports the failure. */
  prt_status previous = {0};
  double t0 = prt_clock_ms(CLOCK_MONOTONIC);
  prt_ckpt_writer_wait(w, &previous);
  w->wait_ms += prt_clock_ms(CLOCK_MONOTONIC) - t0;
  char *target = w->dir ? pb_ring_path(w->dir, step) : strdup(w->path);
  if (!target) prt_fatal("out of memory for a checkpoint name");
  if (prt_ckpt_snapshot(w, ctx, target, st) || ctx->rank != 0 || previous.code) {
    free(target);
    if (previous.code && !st->code) *st = previous;
    return st->code;
  }
  w->target = target;
  w->step = step;
  w->result = (prt_status){0};
  int err = pthread_create(&w->thread, NULL, prt_ckpt_thread, w);
  if (err) { /* no thread to be had: write here, as a synchronous save would */
    prt_ckpt_thread(w);
    free(w->target);
    w->target = NULL;
    if (w->result.code) *st = w->result;
    return st->code;
  }
  w->busy = 1;
  return 0;
}

int prt_ckpt_ring_final(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st) {
  if (!w || !w->dir) return 0;
  if (prt_ckpt_periodic(w, ctx, step, st)) return st->code;
  return prt_ckpt_writer_wait(w, st);
}

void prt_ckpt_writer_destroy(prt_ckpt_writer *w) {
  if (!w) return;
  prt_status ignored = {0};
  prt_ckpt_writer_wait(w, &ignored);
  const char *env = getenv("PIPER_CKPT_STATS");
  if (w->rank == 0 && w->count && env && !strcmp(env, "1")) {
    fprintf(stderr, "piper: checkpoints: %lld taken, training thread %.1f ms (%.1f of them "
            "waiting for the previous write), writer CPU %.1f ms\n", (long long)w->count,
            w->train_ms, w->wait_ms, w->writer_cpu_ms);
    fflush(stderr);
  }
  prt_ckpt_release(w);
  free(w->entries);
  free(w->snapshot);
  free(w->dir);
  free(w);
}
