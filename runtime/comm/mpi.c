/* The MPI comm backend (prt_comm_mpi, library piper_rt_mpi): one device per MPI rank.
 *
 * Communicators: the plan's send/recv run on a duplicate of MPI_COMM_WORLD and each declared
 * group on an MPI_Comm_split of it (color 0 for members, MPI_UNDEFINED otherwise, key = world
 * rank so member k is group rank k); the runtime's own traffic (agreements, checkpoint
 * assembly) runs on a second duplicate, so it never matches a plan's message. Transfers map
 * one to one: MPI_Isend / MPI_Irecv (MPI_FLOAT), MPI_Iallreduce (MPI_IN_PLACE, MPI_SUM),
 * MPI_Ireduce_scatter_block, MPI_Iallgather; prt_wait polls MPI_Test.
 *
 * Progress: Open MPI advances a nonblocking collective (libnbc's rounds, the shared-memory
 * fragments) only inside an MPI call, so a reduction issued early in the backward pass would
 * otherwise sit untouched until its wait. prt_comm_progress, which the kernels call, runs the
 * progress engine once (an MPI_Iprobe on a communicator nobody sends on: it matches nothing and
 * completes no request, so it cannot disturb the plan's handles) while any of the plan's
 * transfers is in flight, at most every PRT_PROGRESS_US. PIPER_PROGRESS (environment) picks
 * another way, to measure what each buys (bench/bench_overlap.py): `off` (progress only in
 * waits), `thread` (MPI_THREAD_MULTIPLE and a thread that probes every PRT_PROGRESS_US while
 * anything is in flight; with one core per rank it preempts the kernels).
 *
 * The watchdog (--timeout): every wait here, the plan's and the runtime's own collectives
 * alike (they are issued nonblocking too), polls MPI_Test against a deadline instead of
 * blocking in MPI_Wait. A rank that stops without dying (SIGSTOP, a stuck peer) would
 * otherwise leave every other rank waiting forever; past the deadline the waiting rank prints
 * what it waited for (op, peer or group, stream, step) and MPI_Aborts, and mpirun kills the
 * rest, the stopped one included.
 *
 * Memory: prt_mpi_keep_freed keeps freed blocks mapped (glibc mallopt), so libnbc's
 * per-collective buffers do not fault their pages in again every step.
 *
 * Errors: every communicator returns errors (MPI_ERRORS_RETURN); a failed call prints
 * "piper: error: <call> failed: <MPI's words>: <where> (rank k); ..." and MPI_Aborts, so no
 * rank is left waiting for one that died.
 *
 * Several hosts: each rank's host name is exchanged at start-up, and where the ranks span more
 * than one host every message about a transfer says where its peers run ("recv from rank 2
 * on node2", "all_reduce over group 0 (4 ranks: 0-1 on node1, 2-3 on node2; ...)"). An abort
 * goes through mpirun, which a host whose link was cut cannot reach: every abort here ends
 * its own rank PRT_ABORT_GRACE_S seconds later if MPI has not (mpi_abort), so the ranks of a
 * host cut off from the rest end by their own watchdog instead of waiting forever.
 */
#include <limits.h>
#include <malloc.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_safetensors.h"

_Static_assert(sizeof(MPI_Request) <= sizeof(prt_opaque), "MPI_Request must fit prt_opaque");
_Static_assert(sizeof(MPI_Comm) <= sizeof(prt_opaque), "MPI_Comm must fit prt_opaque");

static MPI_Comm prt_plan_world = MPI_COMM_NULL; /* the plan's send/recv; parent of groups */
static MPI_Comm prt_rt_world = MPI_COMM_NULL;   /* the runtime's own collectives */
static int prt_mpi_rank;                        /* rank in MPI_COMM_WORLD */
static int prt_mpi_size = 1;                    /* size of MPI_COMM_WORLD */
static MPI_Comm prt_probe_world = MPI_COMM_NULL; /* never sent on: prt_comm_progress probes it */
static atomic_llong prt_mpi_inflight;            /* plan transfers started, not yet finished */
enum { PRT_PROGRESS_OFF, PRT_PROGRESS_KERNEL, PRT_PROGRESS_THREAD };
static int prt_progress_mode = PRT_PROGRESS_KERNEL; /* PIPER_PROGRESS */
static const prt_watchdog prt_mpi_no_watch = {0.0, -1, NULL};
static const prt_watchdog *prt_mpi_watch = &prt_mpi_no_watch; /* the run's (init), borrowed */
static double prt_progress_last;                 /* prt_mpi_now() of the last progress call */
static pthread_t prt_progress_tid;               /* PRT_PROGRESS_THREAD: the prober */
static atomic_int prt_progress_stop;             /* asks the prober to return */
#define PRT_HOST_CHARS 64                        /* a host name is cut to 63 bytes */
static char *prt_mpi_hosts;                      /* owned: each world rank's host name,
                                                    PRT_HOST_CHARS bytes apiece; NULL alone */
static int prt_mpi_many_hosts;                   /* the ranks run on more than one host */

/* MPI is usable: initialised and not finalised. */
static int prt_mpi_running(void) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  return init && !fin;
}

/* How long MPI_Abort may take before the rank ends itself. The abort goes through mpirun, and
 * from a host whose link was cut nothing reaches it: without this bound that host's ranks
 * would wait for a kill that never comes, holding its slots (seen: 174 s and counting). An
 * abort that works ends every rank well within it (mpirun kills them at once). */
#define PRT_ABORT_GRACE_S 5
#define PRT_STR_(x) #x
#define PRT_STR(x) PRT_STR_(x)

static volatile sig_atomic_t prt_mpi_abort_code = 1; /* the exit status mpi_abort was given */

/* SIGALRM after PRT_ABORT_GRACE_S: only async-signal-safe calls. */
static void prt_mpi_abort_expired(int sig) {
  (void)sig;
  static const char msg[] =
      "piper: error: MPI_Abort did not end this rank within " PRT_STR(PRT_ABORT_GRACE_S)
      " s (mpirun cannot be reached from this host: a cut link, or mpirun is gone); ending "
      "this rank itself\n";
  ssize_t w = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)w;
  _exit(prt_mpi_abort_code);
}

/* Ends every rank: MPI_Abort, and this rank itself within PRT_ABORT_GRACE_S whatever MPI does.
 * Every fatal path of the backend ends here (prt_fatal too, through prt_set_stop). */
__attribute__((noreturn)) static void mpi_abort(int code) {
  prt_mpi_abort_code = code;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = prt_mpi_abort_expired;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGALRM, &sa, NULL);
  alarm(PRT_ABORT_GRACE_S);
  if (prt_mpi_running()) MPI_Abort(MPI_COMM_WORLD, code);
  exit(code);
}

/* World rank r's host, as MPI_Get_processor_name said on it ("?" out of range or alone). */
static const char *prt_mpi_host(int64_t r) {
  return prt_mpi_hosts && r >= 0 && r < prt_mpi_size ? prt_mpi_hosts + r * PRT_HOST_CHARS : "?";
}

/* Where ranks run, host by host in the order they first appear: "0-1 on node1, 2-3 on node2"
 * for the world ranks members[0..n) (ascending), or every rank when members is NULL. Cut with
 * "..." where it does not fit cap. */
static void prt_mpi_where(const int64_t *members, int64_t n, char *out, size_t cap) {
  size_t len = 0;
  out[0] = 0;
  if (!members) n = prt_mpi_size;
#define PRT_RANK(i) (members ? members[i] : (i))
  for (int64_t i = 0; i < n && len + 4 < cap; i++) {
    const char *host = prt_mpi_host(PRT_RANK(i));
    int seen = 0; /* this host was written out with an earlier member */
    for (int64_t e = 0; e < i && !seen; e++) seen = !strcmp(prt_mpi_host(PRT_RANK(e)), host);
    if (seen) continue;
    /* every member on `host`, runs of consecutive ranks as "a-b" */
    for (int64_t k = i, first = 1; k < n; k++) {
      if (strcmp(prt_mpi_host(PRT_RANK(k)), host)) continue;
      int64_t end = k;
      while (end + 1 < n && PRT_RANK(end + 1) == PRT_RANK(end) + 1 &&
             !strcmp(prt_mpi_host(PRT_RANK(end + 1)), host))
        end++;
      int w = end > k ? snprintf(out + len, cap - len, "%s%lld-%lld", first ? (len ? ", " : "") : ",",
                                 (long long)PRT_RANK(k), (long long)PRT_RANK(end))
                      : snprintf(out + len, cap - len, "%s%lld", first ? (len ? ", " : "") : ",",
                                 (long long)PRT_RANK(k));
      if (w < 0 || (size_t)w >= cap - len) break;
      len += (size_t)w;
      first = 0;
      k = end;
    }
    int w = snprintf(out + len, cap - len, " on %s", host);
    if (w < 0 || (size_t)w >= cap - len) break;
    len += (size_t)w;
  }
#undef PRT_RANK
  if (strlen(out) + 1 >= cap && cap > 4) strcpy(out + cap - 4, "...");
}

/* " on node2" after a rank's number where the ranks span several hosts, else "". */
static const char *prt_mpi_on(int64_t r, char *buf, size_t cap) {
  if (!prt_mpi_many_hosts) return "";
  snprintf(buf, cap, " on %s", prt_mpi_host(r));
  return buf;
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
  mpi_abort(1);
}

#define PRT_MPI(call, where) prt_mpi_check((call), #call, (where))

static double prt_mpi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* "recv from rank 1 (tag 4, stream 2 'pp')", "all_reduce over group 0 (2 ranks, ...)"; where
 * the ranks span several hosts, with the peer's host ("recv from rank 2 on node2 (...") or the
 * group's ("(4 ranks: 0-1 on node1, 2-3 on node2; stream 1 'dp')"). */
static void prt_op_what(const prt_ctx *ctx, const prt_comm_op *op, char *what, size_t cap) {
  static const char *const name[] = {"send", "recv", "all_reduce", "reduce_scatter",
                                     "all_gather", "all_to_all"};
  char lane[96] = "", on[PRT_HOST_CHARS + 8];
  int64_t s = op->stream;
  if (s >= 0 && s < ctx->nstreams && ctx->stream_names[s])
    snprintf(lane, sizeof lane, "stream %lld '%.60s'", (long long)s, ctx->stream_names[s]);
  else if (s >= 0)
    snprintf(lane, sizeof lane, "stream %lld", (long long)s);
  if (op->kind == PRT_OP_SEND || op->kind == PRT_OP_RECV) {
    snprintf(what, cap, "%s %s rank %lld%s (tag %lld%s%s)", name[op->kind],
             op->kind == PRT_OP_SEND ? "to" : "from", (long long)op->peer,
             prt_mpi_on(op->peer, on, sizeof on), (long long)op->tag, lane[0] ? ", " : "", lane);
    return;
  }
  const prt_group *g = &ctx->groups[op->group];
  char where[256] = "";
  if (prt_mpi_many_hosts) prt_mpi_where(g->members, g->n, where, sizeof where);
  snprintf(what, cap, "%s over group %lld (%lld ranks%s%s%s%s)", name[op->kind],
           (long long)op->group, (long long)g->n, where[0] ? ": " : "", where,
           lane[0] ? (where[0] ? "; " : ", ") : "", lane);
}

/* Waits for *r like MPI_Wait, but ends every rank once prt_mpi_watch->timeout_s passes. `what`
 * says what is waited for, or (NULL) the plan's transfer `op` of `ctx` does. Busy-polls first, as
 * MPI_Wait does (a transfer usually lands within microseconds), then sleeps 100 us between
 * tests so a long wait does not burn a core another rank needs. */
static void prt_mpi_wait(MPI_Request *r, MPI_Status *status, const char *what,
                         const prt_ctx *ctx, const prt_comm_op *op) {
  if (prt_mpi_watch->timeout_s <= 0) {
    PRT_MPI(MPI_Wait(r, status), "prt_wait");
    return;
  }
  double deadline = prt_mpi_now() + prt_mpi_watch->timeout_s;
  for (long spins = 0;; spins++) {
    int done = 0;
    PRT_MPI(MPI_Test(r, &done, status), "prt_wait");
    if (done) return;
    if (spins < 20000) continue;
    struct timespec nap = {0, 100000};
    nanosleep(&nap, NULL);
    if ((spins & 63) || prt_mpi_now() < deadline) continue;
    char step[48] = "before the first step", buf[512], on[PRT_HOST_CHARS + 8] = "";
    if (!what) prt_op_what(ctx, op, buf, sizeof buf);
    if (prt_mpi_watch->step >= 0)
      snprintf(step, sizeof step, "at step %lld", (long long)prt_mpi_watch->step);
    if (prt_mpi_hosts) { /* " on node1" where the ranks span several hosts */
      prt_mpi_on(prt_mpi_rank, on, sizeof on);
    } else if (prt_mpi_size > 1) { /* at start-up, before the host names are exchanged */
      char self[MPI_MAX_PROCESSOR_NAME + 1] = "";
      int len = 0;
      if (MPI_Get_processor_name(self, &len) == MPI_SUCCESS && self[0])
        snprintf(on, sizeof on, " on %.*s", PRT_HOST_CHARS - 1, self);
    }
    fprintf(stderr, "piper: error: watchdog: %s waited more than %g s %s (rank %d%s): a rank "
            "stopped or hangs (SIGSTOP, a stuck peer, a dead node%s); ending every rank; if "
            "steps are really this slow, raise --timeout\n", what ? what : buf,
            prt_mpi_watch->timeout_s, step, prt_mpi_rank, on,
            prt_mpi_many_hosts ? ", a host that stopped answering" : "");
    fflush(stderr);
    mpi_abort(1);
  }
}

/* The runtime's own collective, for watchdog messages. */
static const char *prt_rt_what(const char *op) {
  static char buf[448];
  char where[256] = "";
  if (prt_mpi_many_hosts) prt_mpi_where(NULL, prt_mpi_size, where, sizeof where);
  snprintf(buf, sizeof buf, "%s over all ranks (%s%s%s)", op,
           prt_mpi_watch->what ? prt_mpi_watch->what : "the runtime's agreement",
           where[0] ? "; ranks " : "", where);
  return buf;
}

/* MPI counts are int: larger transfers are a plan the backend cannot carry in one call. */
static int prt_mpi_count(int64_t n, const char *where) {
  if (n > INT_MAX) {
    fprintf(stderr, "piper: error: transfer of %lld floats exceeds MPI's int count: %s "
            "(rank %d); split the transfer in the plan\n", (long long)n, where, prt_mpi_rank);
    fflush(stderr);
    mpi_abort(1);
  }
  return (int)n;
}

/* PRT_PROGRESS_THREAD: probes while anything is in flight, sleeping PRT_PROGRESS_US between. */
static void *prt_progress_thread(void *arg) {
  (void)arg;
  struct timespec nap = {0, PRT_PROGRESS_US * 1000};
  while (!atomic_load(&prt_progress_stop)) {
    if (atomic_load(&prt_mpi_inflight) > 0) {
      int flag = 0;
      MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, prt_probe_world, &flag, MPI_STATUS_IGNORE);
    }
    nanosleep(&nap, NULL);
  }
  return NULL;
}

/* Freed memory stays mapped for the next malloc. Open MPI's libnbc mallocs a bucket-sized
 * buffer for every MPI_Iallreduce (with MPI_IN_PLACE it copies the bucket into it inside the
 * call) and frees it at completion; glibc hands such blocks back to the kernel (munmap above
 * M_MMAP_THRESHOLD, the heap's top trimmed past M_TRIM_THRESHOLD), so the next step faults
 * their pages in again. On this machine's VM a first-touch fault is dear: 3.5-4.5 ms of CPU
 * and 5-11 ms of wall a fresh MB, 0.008 ms reused (bench/bench_tune.py --issue-probe). 32 MB
 * is glibc's largest mmap threshold: blocks past it, rare here, are still unmapped when
 * freed. PIPER_MPI_TRIM=1 (environment) leaves glibc's defaults, to measure the difference. */
static void prt_mpi_keep_freed(void) {
  const char *trim = getenv("PIPER_MPI_TRIM");
  if (trim && *trim && strcmp(trim, "0") != 0) return;
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

/* A duplicate of MPI_COMM_WORLD, the ranks' first transfer (it agrees on a context id), under
 * the watchdog: where MPI cannot connect some ranks (hosts without a common transport), Open
 * MPI says so and that the job will abort, and then MPI_Comm_dup never returns; nonblocking,
 * it ends with the watchdog's message after --timeout instead (prt_main sets the watchdog
 * before MPI_Init for this). */
static void prt_mpi_dup(MPI_Comm *out) {
  MPI_Request r;
  PRT_MPI(MPI_Comm_idup(MPI_COMM_WORLD, out, &r), "prt_comm_init");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, "comm_dup over all ranks (connecting the ranks at "
               "start-up: an MPI transport joins every pair of them)", NULL, NULL);
}

/* Every rank learns every rank's host name (one all-gather of PRT_HOST_CHARS bytes a rank),
 * for the messages that name a peer's host; a world of one rank skips it. */
static void prt_mpi_hosts_exchange(void) {
  if (prt_mpi_size < 2) return;
  char mine[PRT_HOST_CHARS] = {0}, full[MPI_MAX_PROCESSOR_NAME + 1] = {0};
  int len = 0;
  if (MPI_Get_processor_name(full, &len) != MPI_SUCCESS || !full[0]) snprintf(full, sizeof full, "?");
  snprintf(mine, sizeof mine, "%s", full);
  prt_mpi_hosts = prt_xmalloc((size_t)prt_mpi_size * PRT_HOST_CHARS, "the ranks' host names");
  MPI_Request r;
  PRT_MPI(MPI_Iallgather(mine, PRT_HOST_CHARS, MPI_CHAR, prt_mpi_hosts, PRT_HOST_CHARS,
                         MPI_CHAR, prt_rt_world, &r),
          "prt_comm_init");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, "all_gather over all ranks (the host-name exchange at start-up)",
               NULL, NULL);
  for (int k = 0; k < prt_mpi_size; k++) {
    prt_mpi_hosts[(size_t)k * PRT_HOST_CHARS + PRT_HOST_CHARS - 1] = 0; /* a peer's, bounded */
    prt_mpi_many_hosts |= strcmp(prt_mpi_host(k), prt_mpi_host(0)) != 0;
  }
}

static int mpi_init(int *argc, char ***argv, const prt_watchdog *watch) {
  prt_mpi_watch = watch;
  prt_mpi_keep_freed(); /* before MPI_Init: Open MPI's own buffers too */
  int init = 0, started = 0;
  const char *mode = getenv("PIPER_PROGRESS");
  int want = !mode || !strcmp(mode, "kernel") ? PRT_PROGRESS_KERNEL
             : !strcmp(mode, "off")           ? PRT_PROGRESS_OFF
             : !strcmp(mode, "thread")        ? PRT_PROGRESS_THREAD
                                              : -1;
  MPI_Initialized(&init);
  if (!init) {
    int provided = MPI_THREAD_SINGLE;
    if (want == PRT_PROGRESS_THREAD) MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    else MPI_Init(argc, argv);
    started = 1;
  }
  if (prt_plan_world == MPI_COMM_NULL) {
    PRT_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "prt_comm_init");
    PRT_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &prt_mpi_rank), "prt_comm_init");
    PRT_MPI(MPI_Comm_size(MPI_COMM_WORLD, &prt_mpi_size), "prt_comm_init");
    prt_mpi_dup(&prt_plan_world);
    prt_mpi_dup(&prt_rt_world);
    prt_mpi_dup(&prt_probe_world);
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (want < 0 || (want == PRT_PROGRESS_THREAD && level < MPI_THREAD_MULTIPLE)) {
      fprintf(stderr, "piper: error: PIPER_PROGRESS=%s: expected 'kernel' (the default: "
              "advance transfers between kernels), 'off' or 'thread' (which needs an MPI "
              "with MPI_THREAD_MULTIPLE); unset it or pick another\n", mode);
      fflush(stderr);
      mpi_abort(2);
    }
    prt_progress_mode = want;
    if (want == PRT_PROGRESS_THREAD &&
        pthread_create(&prt_progress_tid, NULL, prt_progress_thread, NULL) != 0) {
      fprintf(stderr, "piper: error: PIPER_PROGRESS=thread: cannot start the progress thread "
              "(rank %d); unset PIPER_PROGRESS\n", prt_mpi_rank);
      fflush(stderr);
      mpi_abort(1);
    }
    prt_mpi_hosts_exchange();
  }
  return started;
}

static void mpi_finalize(void) {
  if (!prt_mpi_running()) return;
  if (prt_progress_mode == PRT_PROGRESS_THREAD) {
    atomic_store(&prt_progress_stop, 1);
    pthread_join(prt_progress_tid, NULL);
    prt_progress_mode = PRT_PROGRESS_OFF;
  }
  if (prt_plan_world != MPI_COMM_NULL) MPI_Comm_free(&prt_plan_world);
  if (prt_rt_world != MPI_COMM_NULL) MPI_Comm_free(&prt_rt_world);
  if (prt_probe_world != MPI_COMM_NULL) MPI_Comm_free(&prt_probe_world);
  free(prt_mpi_hosts);
  prt_mpi_hosts = NULL;
  prt_mpi_many_hosts = 0;
  MPI_Finalize();
}

static int64_t mpi_size(void) { return prt_plan_world == MPI_COMM_NULL ? 1 : prt_mpi_size; }
static int64_t mpi_rank(void) { return prt_plan_world == MPI_COMM_NULL ? 0 : prt_mpi_rank; }

/* ---- the runtime's own world-level calls ---- */

/* True when the world has one rank or MPI is not running: the calls below are then local. */
static int prt_alone(void) { return prt_plan_world == MPI_COMM_NULL || prt_mpi_size == 1; }

static void mpi_barrier(void) {
  if (prt_alone()) return;
  MPI_Request r;
  PRT_MPI(MPI_Ibarrier(prt_rt_world, &r), "prt_comm_barrier");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, prt_rt_what("barrier"), NULL, NULL);
}

static void mpi_allreduce_i64(int64_t *buf, int64_t n, prt_reduce_op op) {
  if (prt_alone()) return;
  MPI_Request r;
  PRT_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, prt_mpi_count(n, "prt_comm_allreduce_i64"),
                         MPI_INT64_T, op == PRT_REDUCE_MAX ? MPI_MAX : MPI_SUM, prt_rt_world,
                         &r),
          "prt_comm_allreduce_i64");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, prt_rt_what("all_reduce"), NULL, NULL);
}

static void mpi_allreduce_f64(double *buf, int64_t n) {
  if (prt_alone()) return;
  MPI_Request r;
  PRT_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf, prt_mpi_count(n, "prt_comm_allreduce_f64"),
                         MPI_DOUBLE, MPI_SUM, prt_rt_world, &r),
          "prt_comm_allreduce_f64");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, prt_rt_what("all_reduce"), NULL, NULL);
}

static void *mpi_allgatherv(const void *in, int64_t bytes, int64_t *counts) {
  if (prt_alone()) {
    void *out = prt_xmalloc((size_t)bytes, "gathered metadata");
    memcpy(out, in, (size_t)bytes);
    counts[0] = bytes;
    return out;
  }
  MPI_Request r;
  PRT_MPI(MPI_Iallgather(&bytes, 1, MPI_INT64_T, counts, 1, MPI_INT64_T, prt_rt_world, &r),
          "prt_comm_allgatherv");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, prt_rt_what("all_gather"), NULL, NULL);
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
  PRT_MPI(MPI_Iallgatherv(in, cnt[prt_mpi_rank], MPI_BYTE, out, cnt, displ, MPI_BYTE,
                          prt_rt_world, &r),
          "prt_comm_allgatherv");
  prt_mpi_wait(&r, MPI_STATUS_IGNORE, prt_rt_what("all_gather"), NULL, NULL);
  free(cnt);
  free(displ);
  return out;
}

/* Point-to-point in chunks of 1 GiB (MPI counts are int). */
#define PRT_CHUNK ((int64_t)1 << 30)

static void mpi_send_bytes(const void *buf, int64_t bytes, int64_t peer) {
  int64_t o = 0;
  do {
    int64_t n = bytes - o < PRT_CHUNK ? bytes - o : PRT_CHUNK;
    MPI_Request r;
    char what[256], on[PRT_HOST_CHARS + 8];
    snprintf(what, sizeof what, "send to rank %lld%s (%s)", (long long)peer,
             prt_mpi_on(peer, on, sizeof on),
             prt_mpi_watch->what ? prt_mpi_watch->what : "the runtime's checkpoint assembly");
    PRT_MPI(MPI_Isend((const char *)buf + o, (int)n, MPI_BYTE, (int)peer, 0, prt_rt_world, &r),
            "prt_comm_send_bytes");
    prt_mpi_wait(&r, MPI_STATUS_IGNORE, what, NULL, NULL);
    o += n;
  } while (o < bytes);
}

static void mpi_recv_bytes(void *buf, int64_t bytes, int64_t peer) {
  int64_t o = 0;
  do {
    int64_t n = bytes - o < PRT_CHUNK ? bytes - o : PRT_CHUNK;
    MPI_Request r;
    char what[256], on[PRT_HOST_CHARS + 8];
    snprintf(what, sizeof what, "recv from rank %lld%s (%s)", (long long)peer,
             prt_mpi_on(peer, on, sizeof on),
             prt_mpi_watch->what ? prt_mpi_watch->what : "the runtime's checkpoint assembly");
    PRT_MPI(MPI_Irecv((char *)buf + o, (int)n, MPI_BYTE, (int)peer, 0, prt_rt_world, &r),
            "prt_comm_recv_bytes");
    prt_mpi_wait(&r, MPI_STATUS_IGNORE, what, NULL, NULL);
    o += n;
  } while (o < bytes);
}

/* ---- groups ---- */

static void mpi_groups_create(prt_ctx *ctx) {
  for (int64_t g = 0; g < ctx->ngroups; g++) {
    prt_group *gr = &ctx->groups[g];
    MPI_Comm c = MPI_COMM_NULL;
    /* color: the first member, so each replica's instance of a group family (one group id,
     * disjoint members) gets its own communicator */
    PRT_MPI(MPI_Comm_split(prt_plan_world, gr->index >= 0 ? (int)gr->members[0] : MPI_UNDEFINED,
                           prt_mpi_rank, &c),
            "prt_declare_group");
    memset(&gr->comm, 0, sizeof gr->comm);
    memcpy(&gr->comm, &c, sizeof c);
  }
}

static void mpi_group_free(prt_group *g) {
  MPI_Comm c;
  memcpy(&c, &g->comm, sizeof c);
  if (g->index >= 0 && c != MPI_COMM_NULL && prt_mpi_running()) MPI_Comm_free(&c);
  memset(&g->comm, 0, sizeof g->comm);
}

/* ---- the plan's transfers ---- */

/* --grad-reduce bf16: MPI has no bf16 type, so the values travel as MPI_UINT16_T (2 bytes
 * each, half of fp32's) under a user-defined op that widens each pair to fp32, adds, and rounds
 * the sum back to bf16 (the runtime's prt_f32_to_bf16: nearest even). Non-commutative on
 * purpose: MPI then combines in rank order, so every member ends with the same sum (bf16
 * rounding makes the order matter), as the replicas' identical updates require. */
static void prt_mpi_bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type) {
  const uint16_t *a = in;
  uint16_t *b = inout;
  for (int i = 0; i < *len; i++)
    b[i] = prt_f32_to_bf16(prt_bf16_to_f32(a[i]) + prt_bf16_to_f32(b[i]));
}

static MPI_Op prt_mpi_bf16_op(void) {
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL)
    PRT_MPI(MPI_Op_create(prt_mpi_bf16_sum, 0, &op), "prt_iall_reduce_bf16");
  return op;
}

static void mpi_start(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  static const char *const where[] = {"prt_isend", "prt_irecv", "prt_iall_reduce",
                                      "prt_ireduce_scatter", "prt_iall_gather",
                                      "prt_iall_to_all"};
  static const char *const where_bf16[PRT_OP_KINDS] = {
      [PRT_OP_ALL_REDUCE] = "prt_iall_reduce_bf16",
      [PRT_OP_REDUCE_SCATTER] = "prt_ireduce_scatter_bf16"};
  const char *w = op->bf16 ? where_bf16[op->kind] : where[op->kind];
  if (!w)
    prt_fatal("a bf16 transfer of kind %d reached the MPI backend: only all-reduces and "
              "reduce-scatters sum bf16; this is a bug in libpiper_rt", (int)op->kind);
  /* a sum's values: floats, or (op->bf16) bf16 bits under prt_mpi_bf16_op */
  MPI_Datatype sum_type = op->bf16 ? MPI_UINT16_T : MPI_FLOAT;
  MPI_Op sum = op->bf16 ? prt_mpi_bf16_op() : MPI_SUM;
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
    PRT_MPI(MPI_Iallreduce(MPI_IN_PLACE, op->out, n, sum_type, sum, c, &r), w);
    break;
  case PRT_OP_REDUCE_SCATTER: /* in == out: the input is out (n * members), result first */
    prt_mpi_count(op->n * members, w);
    PRT_MPI(MPI_Ireduce_scatter_block(op->in == op->out ? MPI_IN_PLACE : op->in, op->out, n,
                                      sum_type, sum, c, &r),
            w);
    break;
  case PRT_OP_ALL_GATHER: /* in already at its place in out: in place */
    prt_mpi_count(op->n * members, w);
    PRT_MPI(MPI_Iallgather(op->in == op->out + index * op->n ? MPI_IN_PLACE : op->in, n,
                           MPI_FLOAT, op->out, n, MPI_FLOAT, c, &r),
            w);
    break;
  case PRT_OP_ALL_TO_ALL: /* static size: n/members elements (4 bytes each) per block, as bytes
                           * so i32 counts cross untouched */
    prt_mpi_count(op->n / members * 4, w);
    PRT_MPI(MPI_Ialltoall(op->in, (int)(op->n / members * 4), MPI_BYTE, op->out,
                          (int)(op->n / members * 4), MPI_BYTE, c, &r),
            w);
    break;
  }
  memset(req, 0, sizeof *req);
  memcpy(req, &r, sizeof r);
  prt_mpi_inflight++;
}

static void mpi_progress(void) {
  if (prt_progress_mode != PRT_PROGRESS_KERNEL || atomic_load(&prt_mpi_inflight) == 0) return;
  double now = prt_mpi_now();
  if (now - prt_progress_last < PRT_PROGRESS_US * 1e-6) return;
  prt_progress_last = now;
  int flag = 0;
  PRT_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, prt_probe_world, &flag, MPI_STATUS_IGNORE),
          "prt_comm_progress");
}

/* What a completed transfer's status must show: a receive got exactly what was expected. */
static void prt_mpi_completed(const prt_comm_op *op, MPI_Status *status) {
  if (op->kind == PRT_OP_RECV) {
    int got = 0;
    MPI_Get_count(status, MPI_FLOAT, &got);
    if (got != op->n) {
      fprintf(stderr, "piper: error: prt_irecv from rank %lld (tag %lld) got %d floats, "
              "expected %lld: prt_wait (rank %d); the sender and receiver disagree on the "
              "size: this is a bug in the compiled plan\n", (long long)op->peer,
              (long long)op->tag, got, (long long)op->n, prt_mpi_rank);
      fflush(stderr);
      mpi_abort(1);
    }
  }
}

static void mpi_finish(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  MPI_Request r;
  MPI_Status status;
  memcpy(&r, req, sizeof r);
  prt_mpi_wait(&r, &status, NULL, ctx, op);
  prt_mpi_completed(op, &status);
  memset(req, 0, sizeof *req);
  prt_mpi_inflight--;
}

static int mpi_test(prt_ctx *ctx, const prt_comm_op *op, prt_opaque *req) {
  MPI_Request r;
  MPI_Status status;
  int done = 0;
  memcpy(&r, req, sizeof r);
  PRT_MPI(MPI_Test(&r, &done, &status), "prt_wait");
  if (!done) return 0;
  prt_mpi_completed(op, &status);
  memset(req, 0, sizeof *req);
  prt_mpi_inflight--;
  return 1;
}

const prt_comm_vtable prt_comm_mpi = {
    .name = "mpi",
    .one_process = 0,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .size = mpi_size,
    .rank = mpi_rank,
    .abort = mpi_abort,
    .barrier = mpi_barrier,
    .allreduce_i64 = mpi_allreduce_i64,
    .allreduce_f64 = mpi_allreduce_f64,
    .allgatherv = mpi_allgatherv,
    .send_bytes = mpi_send_bytes,
    .recv_bytes = mpi_recv_bytes,
    .groups_create = mpi_groups_create,
    .group_free = mpi_group_free,
    .progress = mpi_progress,
    .xfer = {"mpi", 0, mpi_start, mpi_finish, mpi_test},
    .start_bf16 = mpi_start, /* its sums read op->bf16 */
};
