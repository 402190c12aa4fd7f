/* piper-run: a supervisor over mpirun that keeps a training run going through faults.
 *
 *   piper-run -np N [--hostfile F] [--max-restarts K] [--min-ranks M] [--checkpoint-dir DIR]
 *             [--resume] [--stall-timeout S] [--grace S] [--checkpoint-signal SIG]
 *             -- ./plan FLAGS
 *
 * It runs `mpirun --allow-run-as-root --oversubscribe -np N ./plan FLAGS` (Open MPI is the
 * launcher; piper-run only watches it) and relays its output. When the job ends by a fault (a
 * rank killed, the --timeout watchdog, an error, a stall), it finds the newest complete
 * checkpoint in the run's --checkpoint-dir, checks it (header, sizes), falls back to the one
 * before when it is truncated or corrupt (naming the bad file), and starts the job again from
 * it with the flags rewritten so the restarted job ends at the same step and follows the same
 * learning-rate schedule: the resumed run ends bit for bit where the uninterrupted one would.
 * A rank lost for good (its fault injected with `lost`, or a fault on the same rank in two
 * jobs in a row) makes the next job start on fewer ranks, the most that divide N and are at
 * least --min-ranks M (a role plan runs elastic on them: runtime/elastic.c). With --hostfile F,
 * F is read again before every job, and its slots bound the job's ranks; while a job runs on
 * fewer than N, F is looked at once a second, and when it lists more slots (a host came
 * back) the job is stopped after its current step, which it checkpoints to the ring as it
 * ends, and started again from there on more ranks (Grow, below).
 * A host that does not answer (Open MPI lost its daemon there, or ssh could not reach it) is
 * left out of the next jobs' hostfile (hostGone) until the hostfile is rewritten.
 * One line per event on stderr, "piper-run: ...": what failed and where, the step resumed
 * from, the seconds lost; and, once the restarted job completes a step, how long that took.
 * Completed steps are counted from the plan's --metrics file (Metrics), which --quiet and
 * --log-every leave whole.
 *
 * Exit status (keep in sync with USAGE and docs/faults-and-elastic.md):
 *   0 the run finished; 1 piper-run could not work (mpirun missing, out of memory);
 *   2 a bad command line (piper-run's, or the job's: the plan refused its flags);
 *   3 the run failed more often than --max-restarts allows;
 *   75 --checkpoint-signal came: the job checkpointed its step and stopped (requeue it);
 *   130 / 143 stopped by SIGINT / SIGTERM (the job saved its checkpoint and ended; no restart).
 *
 * Every wait ends: the job's own watchdog (--timeout) ends a stuck collective, --stall-timeout
 * ends a job that prints nothing and checkpoints nothing for that long, a stop waits --grace
 * seconds for the ranks to save before the job is killed, a failed job's mpirun gets
 * FAILED_JOB_GRACE_S to end (it waits on hosts that may never answer), and the restarts are
 * counted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "piper/base/ring.h"
#include "piper/checked.h"
#include "prt_plan_flags.h"  /* the plan's flag table (libpiper_rt) */
#include "prt_safetensors.h" /* the runtime's header parser (libpiper_rt) */

static const char *const USAGE =
    "usage: piper-run -np N [options] -- ./plan [plan flags]\n"
    "Runs a compiled plan under mpirun and restarts it from its newest complete checkpoint\n"
    "when a rank dies, the watchdog fires or the job stalls.\n"
    "  -np N                ranks (the plan's device count)\n"
    "  --hostfile F         passed to mpirun, and read again before every job: the slots it\n"
    "                       lists bound the ranks (with --min-ranks); when it lists more\n"
    "                       while a job runs on fewer than N, the job grows back to them\n"
    "                       after its current step\n"
    "  --max-restarts K     restarts allowed before giving up (default 3)\n"
    "  --min-ranks M        after a rank is lost for good, restart on fewer ranks (the most\n"
    "                       that divide N), down to M (default N: never fewer)\n"
    "  --checkpoint-dir DIR the ring of checkpoints (also passed to the plan when its flags\n"
    "                       do not name one); without one a fault restarts from the start\n"
    "  --resume             start from the newest checkpoint already in DIR (without it, a DIR\n"
    "                       holding checkpoints is refused: they belong to another run)\n"
    "  --stall-timeout S    a job that prints nothing and writes no checkpoint for S seconds\n"
    "                       after its first completed step is ended and restarted (default\n"
    "                       0: rely on the plan's --timeout)\n"
    "  --grace S            on SIGINT/SIGTERM, seconds the ranks get to save before they are\n"
    "                       killed (default 30)\n"
    "  --mpirun PATH        the mpirun to run (default: mpirun on PATH)\n"
    "  --phases             after each recovery, one line timing its phases (the plan's\n"
    "                       start-up included)\n"
    "  --checkpoint-signal SIG  a scheduler's warning before it ends the job (Slurm's\n"
    "                       --signal=B:SIG@N; USR1, USR2, ...): the job checkpoints its\n"
    "                       current step to the ring and stops, and piper-run exits 75 so\n"
    "                       that the job is requeued (continue with --resume)\n"
    "Exit: 0 finished, 1 piper-run failed, 2 bad command line, 3 out of restarts,\n"
    "75 preempted (--checkpoint-signal: requeue), 130/143 stopped by SIGINT/SIGTERM.\n";

/* EXIT_REQUEUE: sysexits.h's EX_TEMPFAIL ("try again later"), for --checkpoint-signal. */
enum { EXIT_OK = 0, EXIT_TOOL = 1, EXIT_USAGE = 2, EXIT_GAVE_UP = 3, EXIT_REQUEUE = 75 };

/* ---- small helpers ---- */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("piper-run: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(code);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("piper-run: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
  va_end(ap);
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) die(EXIT_TOOL, "out of memory (%zu bytes)", n);
  return p;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) die(EXIT_TOOL, "out of memory");
  va_end(ap);
  return s;
}

/* Seconds on the monotonic clock (waits) and the wall clock (against file times and the
 * runtime's "fault injected ... at t=" stamps). */
static double monoNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double wallNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A growable argv, NULL-terminated. */
typedef struct {
  char **v; /* owned array; the strings are borrowed or leaked (the process is short-lived) */
  size_t n, cap;
} Argv;

static void argvPush(Argv *a, const char *s) {
  if (!piperGrow((void **)&a->v, &a->cap, a->n + 2, sizeof *a->v))
    die(EXIT_TOOL, "out of memory");
  a->v[a->n++] = (char *)s;
  a->v[a->n] = NULL;
}

/* Strings that live until the process ends (flag values, checkpoint names): held here, so
 * they stay reachable (LeakSanitizer) without bookkeeping at every exit. */
static Argv kept;

static char *keep(char *s) {
  if (s) argvPush(&kept, s);
  return s;
}

/* ---- checkpoints ---- */

/* What a checkpoint file's header says, once it checked out. */
typedef struct {
  int64_t step;   /* __metadata__ "step"; -1 = absent */
  bool hasOptim;  /* it holds optimizer state ("optim.*" tensors) */
  double mtime;   /* wall-clock seconds of its last change */
} CkptInfo;

/* Checks that `path` is a complete safetensors file: its header parses and checks out as the
 * plan's loader checks it (the runtime's prt_safetensors_parse: a JSON object of tensors whose
 * data_offsets tile the data section), and the data section holds exactly the bytes the
 * header announces (a truncated file stops short of them, a torn header fails to parse). The
 * plan's loader checks names and shapes against itself too; this is the part that tells a
 * file cut short by a crash from a complete one. Values inside the data cannot be checked (the
 * format has no checksum). On failure `why` says what is wrong. */
static bool ckptCheck(const char *path, CkptInfo *info, char *why, size_t whyCap) {
  *info = (CkptInfo){.step = -1};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, whyCap, "cannot open: %s", strerror(errno));
    return false;
  }
  struct stat sb;
  uint64_t hlen = 0;
  uint8_t *head = NULL;
  bool ok = false;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    snprintf(why, whyCap, "not a regular file");
    goto done;
  }
  info->mtime = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9;
  uint64_t size = (uint64_t)sb.st_size;
  if (size < 8 || pread(fd, &hlen, 8, 0) != 8) {
    snprintf(why, whyCap, "truncated: %llu bytes, less than the 8-byte header length",
             (unsigned long long)size);
    goto done;
  }
  if (hlen < 2 || hlen > 100000000 || hlen > size - 8) {
    snprintf(why, whyCap, "truncated or corrupt: the header length %llu does not fit the "
             "file's %llu bytes", (unsigned long long)hlen, (unsigned long long)size);
    goto done;
  }
  head = xmalloc(8 + hlen);
  memcpy(head, &hlen, 8);
  if (pread(fd, head + 8, hlen, 8) != (ssize_t)hlen) {
    snprintf(why, whyCap, "cannot read the header: %s", strerror(errno));
    goto done;
  }
  if (head[8] != '{') { /* what an overwritten start looks like, said plainly */
    snprintf(why, whyCap, "corrupt: the header is not a JSON object");
    goto done;
  }
  prt_st_header h;
  prt_status st = {0};
  if (prt_safetensors_parse(head, 8 + hlen, PRT_ST_SIZE_UNKNOWN, path, &h, &st)) {
    snprintf(why, whyCap, "corrupt: %s", st.msg);
    goto done;
  }
  uint64_t announced = 0, have = size - 8 - hlen;
  for (int64_t i = 0; i < h.n; i++) {
    if (h.ts[i].end > announced) announced = h.ts[i].end;
    info->hasOptim = info->hasOptim || !strncmp(h.ts[i].name, "optim.", 6);
  }
  info->step = h.step;
  if (h.n == 0)
    snprintf(why, whyCap, "corrupt: the header names no tensor");
  else if (announced != have)
    snprintf(why, whyCap, "%s: the header announces %llu bytes of tensor data, the file "
             "holds %llu", announced > have ? "truncated" : "corrupt",
             (unsigned long long)announced, (unsigned long long)have);
  else
    ok = true;
  prt_st_header_free(&h);
done:
  free(head);
  close(fd);
  return ok;
}

/* Files the plan failed to load although their header checked out; skipped from then on. */
typedef struct {
  char **paths; /* owned */
  size_t n, cap;
} BadList;

static bool badHas(const BadList *b, const char *path) {
  for (size_t i = 0; i < b->n; i++)
    if (!strcmp(b->paths[i], path)) return true;
  return false;
}

/* The newest checkpoint in `dir` that checks out, skipping (and naming) the bad ones; NULL
 * when there is none. *count gets how many ring files there are, checked or not. */
static char *ringNewest(const char *dir, const BadList *bad, CkptInfo *info, size_t *count) {
  int64_t *steps;
  if (pb_ring_steps(dir, &steps, count)) { /* no ring yet, or out of memory listing it */
    *count = 0;
    return NULL;
  }
  char *found = NULL;
  for (size_t i = 0; i < *count && !found; i++) {
    char *path = pb_ring_path(dir, steps[i]);
    if (!path) die(EXIT_TOOL, "out of memory");
    char why[1280];
    if (badHas(bad, path)) {
      note("checkpoint %s was refused by the plan before; trying the previous one", path);
    } else if (!ckptCheck(path, info, why, sizeof why)) {
      note("checkpoint %s is unusable (%s); falling back to the previous one", path, why);
    } else if (info->step != steps[i]) {
      note("checkpoint %s is unusable (its metadata says step %lld); falling back to the "
           "previous one", path, (long long)info->step);
    } else {
      found = path;
      continue;
    }
    free(path);
  }
  free(steps);
  return found;
}

/* ---- the plan's flags ---- */

/* The plan flags piper-run reads or rewrites: each must be a row of the plan's table
 * (runtime/plan_flags.def, exported by libpiper_rt as prt_plan_flags), checked at start-up
 * (planFlagsCheck), so a flag renamed there stops piper-run with an error instead of being
 * passed over in silence. */
static const char *const PLAN_FLAGS_READ[] = {
    "--steps", "--total-steps", "--checkpoint-every", "--init-checkpoint", "--checkpoint-dir",
    "--metrics", "--restart-steps", "--quiet", "--dump-grads"};

static void planFlagsCheck(void) {
  for (size_t i = 0; i < sizeof PLAN_FLAGS_READ / sizeof *PLAN_FLAGS_READ; i++)
    if (!prt_plan_flag_find(PLAN_FLAGS_READ[i]))
      die(EXIT_TOOL, "the plan's flag table (libpiper_rt, runtime/plan_flags.def) has no %s, "
          "which piper-run reads: piper-run and the runtime disagree; rebuild them together",
          PLAN_FLAGS_READ[i]);
}

/* A plan flag that takes no value (the table says so); every other flag takes one, as
 * "--flag value" or "--flag=value". An unknown flag is taken to take none: the plan refuses
 * it itself. */
static bool planFlagIsBool(const char *a) {
  const prt_plan_flag *f = prt_plan_flag_find(a);
  return !f || f->type == PRT_FLAG_BOOL;
}

/* The plan's command line, as piper-run needs to know it. */
typedef struct {
  const char *prog;     /* ./plan */
  char **args;          /* borrowed: the flags after prog */
  int nargs;
  int64_t steps;        /* --steps (the plan's default: PRT_DEFAULT_STEPS) */
  int64_t totalSteps;   /* --total-steps; -1 = not given */
  const char *initCkpt; /* --init-checkpoint; NULL = none */
  bool restartSteps;    /* --restart-steps */
  const char *ckptDir;  /* --checkpoint-dir; NULL = none */
  int64_t ckptEvery;    /* --checkpoint-every; 0 = none */
  bool quiet;           /* --quiet: no progress lines (steps are counted from metrics anyway) */
  const char *metrics;  /* --metrics; NULL = none (piper-run then adds its own, Metrics) */
} Plan;

/* The value of plan flag k (args[k] is the flag): after '=' or the next argument; NULL
 * when there is none. */
static const char *planValue(const Plan *p, int k, int *skip) {
  const char *eq = strchr(p->args[k], '=');
  *skip = 0;
  if (eq) return eq + 1;
  if (k + 1 >= p->nargs) return NULL; /* the plan says what is missing */
  *skip = 1;
  return p->args[k + 1];
}

/* args[k] is `name`, alone or as name=value. */
static bool flagIs(const char *arg, const char *name) {
  size_t n = strlen(name);
  return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

static int64_t planCount(const char *flag, const char *v) {
  int64_t x;
  if (!piperParseI64(v, 0, INT64_MAX, &x))
    die(EXIT_USAGE, "plan flag %s expects a non-negative integer, got '%s': command line",
        flag, v);
  return x;
}

static void planRead(Plan *p) {
  p->steps = PRT_DEFAULT_STEPS;
  p->totalSteps = -1;
  for (int k = 0; k < p->nargs; k++) {
    const char *a = p->args[k];
    if (planFlagIsBool(a)) {
      p->restartSteps |= !strcmp(a, "--restart-steps");
      p->quiet |= !strcmp(a, "--quiet");
      continue;
    }
    if (strncmp(a, "--", 2)) continue; /* a value the plan will refuse itself */
    int skip;
    const char *v = planValue(p, k, &skip);
    if (!v) break;
    if (flagIs(a, "--steps")) p->steps = planCount("--steps", v);
    else if (flagIs(a, "--total-steps")) p->totalSteps = planCount("--total-steps", v);
    else if (flagIs(a, "--checkpoint-every")) p->ckptEvery = planCount("--checkpoint-every", v);
    else if (flagIs(a, "--init-checkpoint")) p->initCkpt = v;
    else if (flagIs(a, "--checkpoint-dir")) p->ckptDir = v;
    else if (flagIs(a, "--metrics")) p->metrics = v;
    k += skip;
  }
}

/* The flags of a restart from `ckpt` (step k): the plan's, minus the ones that set where the
 * run starts and how long it is, plus --init-checkpoint ckpt --steps (end - k) --total-steps
 * S, so the restarted job ends at the run's end with the run's learning-rate schedule. A
 * --dump-grads would capture another step than the first: it is dropped. */
static void planRestartArgs(const Plan *p, Argv *out, const char *ckpt, int64_t k, int64_t end,
                            int64_t total) {
  static const char *const dropped[] = {"--init-checkpoint", "--steps", "--total-steps",
                                        "--dump-grads"};
  for (int i = 0; i < p->nargs; i++) {
    const char *a = p->args[i];
    if (!strcmp(a, "--restart-steps")) continue;
    bool drop = false;
    for (size_t d = 0; d < sizeof dropped / sizeof *dropped; d++) drop |= flagIs(a, dropped[d]);
    if (drop) {
      if (!strchr(a, '=')) i++;
      continue;
    }
    argvPush(out, a);
  }
  argvPush(out, "--init-checkpoint");
  argvPush(out, ckpt);
  argvPush(out, "--steps");
  argvPush(out, keep(xprintf("%lld", (long long)(end - k))));
  argvPush(out, "--total-steps");
  argvPush(out, keep(xprintf("%lld", (long long)total)));
}

/* ---- one job ---- */

static volatile sig_atomic_t stopSignal; /* SIGINT/SIGTERM/SIGHUP to piper-run, first one */
static volatile sig_atomic_t preempted;  /* --checkpoint-signal received */

static void onSignal(int sig) {
  if (!stopSignal) stopSignal = sig;
}

static void onCheckpointSignal(int sig) {
  (void)sig;
  preempted = 1;
}

/* The signals --checkpoint-signal may name: those a scheduler sends as a warning (Slurm's
 * --signal=[B:]SIG@N, often USR1 or USR2) and a process may catch; not SIGKILL or SIGSTOP
 * (uncatchable), nor SIGCHLD, SIGPIPE or the faults (piper-run needs their usual meaning). */
static const struct {
  const char *name;
  int sig;
} CHECKPOINT_SIGNALS[] = {{"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
                          {"INT", SIGINT},   {"HUP", SIGHUP},   {"QUIT", SIGQUIT},
                          {"ALRM", SIGALRM}, {"URG", SIGURG},   {"XCPU", SIGXCPU},
                          {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}};

/* "USR1", "SIGUSR1" or its number -> the signal; exits EXIT_USAGE naming the choices. */
static int checkpointSignalParse(const char *v) {
  if (!v || !strcmp(v, "--"))
    die(EXIT_USAGE, "--checkpoint-signal needs a signal (USR1, SIGUSR2, 10...): command line");
  const char *name = !strncmp(v, "SIG", 3) ? v + 3 : v;
  int64_t num = -1;
  piperParseI64(v, 1, 64, &num);
  char names[256] = "";
  for (size_t i = 0; i < sizeof CHECKPOINT_SIGNALS / sizeof *CHECKPOINT_SIGNALS; i++) {
    if (!strcmp(name, CHECKPOINT_SIGNALS[i].name) || num == CHECKPOINT_SIGNALS[i].sig)
      return CHECKPOINT_SIGNALS[i].sig;
    snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
             CHECKPOINT_SIGNALS[i].name);
  }
  die(EXIT_USAGE, "--checkpoint-signal '%s' is not a signal piper-run can take as a warning: "
      "command line; give one of %s (with or without SIG, or its number)", v, names);
}

static const char *signalName(int sig) {
  for (size_t i = 0; i < sizeof CHECKPOINT_SIGNALS / sizeof *CHECKPOINT_SIGNALS; i++)
    if (CHECKPOINT_SIGNALS[i].sig == sig) return CHECKPOINT_SIGNALS[i].name;
  return "?";
}

/* What one job did, as read from its output and its end. */
typedef struct {
  int status;          /* waitpid status of mpirun */
  int64_t lastStep;    /* the most steps of the run completed, as its metrics file said;
                          -1 = none seen */
  int64_t firstStep;   /* the count at the job's first completed step; -1 = none */
  double firstStepAt;  /* wall time that was seen */
  double faultAt;      /* "fault injected ... at t=": wall time; 0 = none seen */
  char rankDeath[320]; /* mpirun's words on a rank that died ("rank 1 on node x ..."), or "" */
  char error[512];     /* the first "piper: error: ..." line (without the prefix), or "" */
  int64_t deadRank;    /* the rank mpirun saw die, or the fault injected's; -1 = unknown */
  bool lost;           /* the fault injected said its rank does not come back */
  bool stalled;        /* ended by --stall-timeout */
  int64_t growTo;      /* stopped by piper-run to restart on this many ranks (the hostfile
                          lists more slots); 0 = not */
  double endedAt;      /* wall time mpirun was seen to end */
  double failedAt;     /* monotonic time of the first line saying the job is failing (an
                          error, a rank's death, an abort); 0 = none */
  char lostHost[128];  /* a host that stopped answering or cannot be reached (Open MPI lost
                          its daemon there, or could not start one: "ssh: connect to host"),
                          or "" */
  char hostWhy[256];   /* what said so about lostHost */
  char missingOn[128]; /* the host where mpirun could not access or execute the plan, or "" */
  bool missingNext;    /* the last lines were Open MPI's "could not access or execute"
                          report, whose "Node: HOST" line is still to come */
  /* --phases (wall times; 0 = not seen): */
  double noticedAt;    /* mpirun's "noticed that process rank" line */
  double closedAt;     /* the job's output closed (every rank gone) */
  double startedAt;    /* mpirun forked */
  double phase[4];     /* the metrics file's "phases" line: main entered, MPI_Init done, set
                          up, parameters loaded (runtime/main.c) */
  int64_t stoppedAt;   /* the "stop" line: a signal stopped the job, with this many steps
                          of the run saved; -1 = none */
} Job;

/* The job has completed `done` steps of the run (a metrics line said so). */
static void jobStepsDone(Job *j, int64_t done) {
  if (j->firstStep < 0) {
    j->firstStep = done;
    j->firstStepAt = wallNow();
  }
  if (done > j->lastStep) j->lastStep = done;
}

/* A host named in Open MPI's (or ssh's) words after `key`, up to a blank, ':' or the end. */
static void jobLostHost(Job *j, const char *p, const char *key, const char *why) {
  if (j->lostHost[0]) return;
  char host[128] = "";
  if (sscanf(p + strlen(key), "%127[^ \t:\n]", host) != 1 || !host[0]) return;
  snprintf(j->lostHost, sizeof j->lostHost, "%s", host);
  snprintf(j->hostWhy, sizeof j->hostWhy, "%s", why);
}

/* Reads one line of the job's output for what it says about the run. */
static void jobScanLine(Job *j, const char *line) {
  const char *p;
  /* Open MPI lost a host's daemon ("ORTE has lost communication with a remote daemon" ...
   * "Remote daemon: [[25516,0],1] on node node2"), or could not start one there: ssh (or the
   * rsh agent) could not reach it. */
  if ((p = strstr(line, "Remote daemon: ")) && (p = strstr(p, " on node "))) {
    jobLostHost(j, p, " on node ", "Open MPI lost its daemon there: the host or its link is down");
    return;
  }
  if ((p = strstr(line, "ssh: connect to host "))) {
    jobLostHost(j, p, "ssh: connect to host ", line);
    return;
  }
  if ((p = strstr(line, "ssh: Could not resolve hostname "))) {
    jobLostHost(j, p, "ssh: Could not resolve hostname ", line);
    return;
  }
  /* "mpirun was unable to launch the specified application as it could not access / or
   * execute an executable: / Executable: ./plan / Node: node2" */
  if (strstr(line, "could not access") && strstr(line, "unable to launch")) {
    j->missingNext = true;
    return;
  }
  if (j->missingNext && !j->missingOn[0] && sscanf(line, "Node: %127s", j->missingOn) == 1) {
    j->missingNext = false;
    return;
  }
  if (!j->failedAt && (strstr(line, "piper: error: ") || strstr(line, "MPI_ABORT was invoked") ||
                       strstr(line, "noticed that process rank ") ||
                       strstr(line, "ORTE has lost communication")))
    j->failedAt = monoNow();
  if (!j->error[0] && (p = strstr(line, "piper: error: "))) {
    snprintf(j->error, sizeof j->error, "%s", p + strlen("piper: error: "));
    return;
  }
  /* Open MPI 4: "mpirun noticed that process rank 1 with PID 123 on node n exited on signal
   * 9 (Killed)." */
  if (!j->rankDeath[0] && (p = strstr(line, "noticed that process rank "))) {
    long long rank = -1, pid = -1;
    j->noticedAt = wallNow();
    char node[128] = "?";
    if (sscanf(p, "noticed that process rank %lld with PID %lld on node %127s", &rank, &pid,
               node) >= 1) {
      const char *how = strstr(p, " exited on ");
      if (!how) how = strstr(p, " exited ");
      snprintf(j->rankDeath, sizeof j->rankDeath, "rank %lld on %s%s", rank, node,
               how ? how : " died");
      if (rank >= 0) j->deadRank = rank;
      size_t n = strlen(j->rankDeath);
      while (n && (j->rankDeath[n - 1] == '.' || j->rankDeath[n - 1] == '\n'))
        j->rankDeath[--n] = 0;
    }
  }
}

/* A pipe from the job and the line being assembled from it. */
typedef struct {
  int fd;        /* read end, -1 at EOF */
  FILE *relay;   /* stdout or stderr: where its bytes go on */
  char line[2048];
  size_t len;
} Stream;

static void streamRead(Stream *s, Job *j) {
  char buf[4096];
  ssize_t n = read(s->fd, buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (n <= 0) {
    close(s->fd);
    s->fd = -1;
    return;
  }
  fwrite(buf, 1, (size_t)n, s->relay);
  fflush(s->relay);
  for (ssize_t i = 0; i < n; i++) {
    if (buf[i] == '\n' || s->len == sizeof s->line - 1) {
      s->line[s->len] = 0;
      jobScanLine(j, s->line);
      s->len = 0;
      if (buf[i] == '\n') continue;
    }
    s->line[s->len++] = buf[i];
  }
}

/* ---- what the job says: the metrics file ---- */

/* The plan's --metrics file as the job writes it: piper-run hears the runtime through it
 * alone (docs/metrics-and-traces.md gives the schema), never through the wording of its log
 * lines. Rank 0 writes a "train" line after every step and flushes it (runtime/report.c),
 * whatever --quiet and --log-every do to the progress lines; a "phases" line with its start-up
 * times before the first step; a "stop" line once a signal stopped the run and the step it
 * reached is saved; and a rank that injects a fault appends a "fault" line (fault_inject.c).
 * Where the plan has no --metrics, piper-run gives it its own file (metricsOwn). */
typedef struct {
  const char *path; /* the plan's --metrics, or piper-run's own; NULL = none */
  off_t offset;     /* bytes of it read so far */
  char line[1024];  /* the line being assembled; only its start is parsed */
  size_t len;
  int64_t lines;    /* lines of the current job read */
} Metrics;

/* The number after `"key": ` in a metrics line; false when the line has no such field. */
static bool jsonNumber(const char *line, const char *key, double *out) {
  char pat[64];
  snprintf(pat, sizeof pat, "\"%s\": ", key);
  const char *p = strstr(line, pat);
  if (!p) return false;
  char *end;
  *out = strtod(p + strlen(pat), &end);
  return end != p + strlen(pat);
}

/* The line's "kind" is `kind` (the runtime writes it first). */
static bool jsonKind(const char *line, const char *kind) {
  char pat[64];
  snprintf(pat, sizeof pat, "{\"kind\": \"%s\"", kind);
  return !strncmp(line, pat, strlen(pat));
}

/* One line of the metrics file, into what the job did. */
static void metricsLine(Job *j, const char *line) {
  double v;
  if (jsonKind(line, "train")) {
    if (jsonNumber(line, "step", &v) && v >= 0) jobStepsDone(j, (int64_t)v + 1);
  } else if (jsonKind(line, "phases")) {
    static const char *const key[] = {"main", "mpi_init", "setup", "open"};
    for (int i = 0; i < 4; i++)
      if (jsonNumber(line, key[i], &v)) j->phase[i] = v;
  } else if (jsonKind(line, "fault")) {
    if (jsonNumber(line, "t", &v)) j->faultAt = v;
    if (jsonNumber(line, "rank", &v) && j->deadRank < 0) j->deadRank = (int64_t)v;
    if (strstr(line, "\"lost\": true")) j->lost = true;
  } else if (jsonKind(line, "stop")) {
    if (jsonNumber(line, "steps", &v)) j->stoppedAt = (int64_t)v;
  }
}

/* Before a job: the file emptied (the plan rewrites it anyway), so no line of the job before
 * is counted as this one's. */
static void metricsReset(Metrics *m) {
  m->offset = 0;
  m->len = 0;
  m->lines = 0;
  if (m->path) {
    int fd = open(m->path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd >= 0) close(fd);
  }
}

/* Reads what the job added to the file since the last call (metricsLine). */
static void metricsRead(Metrics *m, Job *j) {
  if (!m->path) return;
  int fd = open(m->path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat sb;
  if (fstat(fd, &sb) == 0 && sb.st_size < m->offset) m->offset = 0, m->len = 0; /* rewritten */
  char buf[4096];
  ssize_t n;
  while ((n = pread(fd, buf, sizeof buf, m->offset)) > 0) {
    m->offset += n;
    for (ssize_t i = 0; i < n; i++) {
      if (buf[i] != '\n') {
        if (m->len < sizeof m->line - 1) m->line[m->len++] = buf[i];
        continue;
      }
      m->line[m->len] = 0;
      m->len = 0;
      m->lines++;
      metricsLine(j, m->line);
    }
  }
  close(fd);
}

/* piper-run's own files (a metrics file, the jobs' hostfile): created in $TMPDIR (or /tmp) as
 * "piper-run-PID-NAME" with NAME's XXXXXX made unique (mkstemps: `suffix` characters after
 * them), into path (cap bytes), and removed at exit. 0, or -1 with errno. */
static char *ownFiles[2]; /* to remove at exit: one of each kind at most */

static void ownFilesRemove(void) {
  for (size_t i = 0; i < sizeof ownFiles / sizeof *ownFiles; i++)
    if (ownFiles[i]) unlink(ownFiles[i]);
}

static int ownFile(char *path, size_t cap, const char *name, int suffix) {
  const char *tmp = getenv("TMPDIR");
  snprintf(path, cap, "%s/piper-run-%d-%s", tmp && *tmp ? tmp : "/tmp", (int)getpid(), name);
  int fd = mkstemps(path, suffix);
  if (fd < 0) return -1;
  close(fd);
  size_t i = 0;
  while (i < sizeof ownFiles / sizeof *ownFiles && ownFiles[i]) i++;
  if (i == sizeof ownFiles / sizeof *ownFiles) { /* a third kind: a bug here */
    unlink(path);
    errno = EMFILE;
    return -1;
  }
  if (i == 0) atexit(ownFilesRemove);
  ownFiles[i] = path;
  return 0;
}

/* The metrics file piper-run gives a plan that names none; NULL (with a warning) when it cannot
 * be made. */
static const char *metricsOwn(void) {
  static char path[4096];
  if (ownFile(path, sizeof path, "XXXXXX.jsonl", 6) != 0) {
    note("warning: cannot create a metrics file in $TMPDIR or /tmp (%s): the jobs' completed "
         "steps, phases and faults go unseen (restarts still resume from the ring); give the "
         "plan a --metrics file", strerror(errno));
    return NULL;
  }
  return path;
}

/* The newest modification time among the ring's files (0 without a ring): a job that writes
 * checkpoints is not stalled. */
static double ringLatest(const char *dir) {
  int64_t *steps;
  size_t n;
  if (!dir || pb_ring_steps(dir, &steps, &n)) return 0;
  double latest = 0;
  for (size_t i = 0; i < n; i++) {
    struct stat sb;
    char *path = pb_ring_path(dir, steps[i]);
    if (path && stat(path, &sb) == 0) {
      double t = (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9;
      if (t > latest) latest = t;
    }
    free(path);
  }
  free(steps);
  return latest;
}

/* The supervisor's settings. */
typedef struct {
  const char *np;        /* -np of the next job: N as given, then npBuf */
  int64_t ranks;         /* the next job's ranks: N, fewer after a rank is lost for good or
                            while the hostfile lists fewer slots */
  int64_t firstRanks;    /* N */
  int64_t minRanks;      /* --min-ranks M (N when not given) */
  int64_t cap;           /* ranks left after ranks lost for good (N at first); lifted to N
                            when the hostfile changes: the operator's word on the hosts */
  char npBuf[24];        /* the text of ranks once it changed */
  const char *hostfile;  /* --hostfile; NULL = none */
  int64_t slots;         /* the slots the hostfile listed when last read; -1 = no hostfile */
  double hostStamp;      /* the hostfile's mtime and size when last read (hostfileStamp) */
  int64_t maxRestarts;   /* --max-restarts */
  const char *ckptDir;   /* the ring: --checkpoint-dir or the plan's; NULL = none */
  double stallTimeout;   /* --stall-timeout seconds; 0 = off */
  double grace;          /* --grace seconds */
  bool phases;           /* --phases: time each phase of a recovery (PIPER_PHASES=1 to the
                            plan) */
  int ckptSignal;        /* --checkpoint-signal: the warning taken as "checkpoint now, stop
                            and ask to be requeued" (EXIT_REQUEUE); 0 = none */
  const char *mpirun;    /* --mpirun */
  Argv gone;             /* hosts that stopped answering (a job's lostHost): left out of the
                            jobs' hostfile until the hostfile is rewritten */
  char jobHosts[4096];   /* with hosts gone: the hostfile without them (piper-run's, in
                            $TMPDIR), which mpirun gets instead; "" = the hostfile as given */
  Metrics metrics;       /* where the jobs' completed steps are read */
} Config;

/* ---- the hostfile: the ranks the hosts give ---- */

/* The hostfile's modification time and size folded into one number: a change means the
 * operator (or a cluster tool) rewrote it; 0 when it cannot be read. */
static double hostfileStamp(const char *path) {
  struct stat sb;
  if (!path || stat(path, &sb)) return 0;
  return (double)sb.st_mtim.tv_sec + sb.st_mtim.tv_nsec * 1e-9 + (double)sb.st_size * 1e10;
}

/* The slots an Open MPI hostfile lists: one host a line, "host [slots=N] [max_slots=M]", '#'
 * to the end of a line a comment; a host without slots= counts 1 (write slots= to be sure:
 * Open MPI may count a host's cores instead). The hosts in `gone` are left out, and with
 * `keep` the lines of the others are copied there (the hostfile the job gets). -1 with *why
 * naming the file and line when it cannot be read or a slots= is not a count. */
static int64_t hostfileSlots(const char *path, const Argv *gone, FILE *keep, char *hosts,
                             size_t hostsCap, char *why, size_t cap) {
  if (hosts) hosts[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(why, cap, "cannot read the hostfile %s: %s", path, strerror(errno));
    return -1;
  }
  char line[1024], copy[1024];
  int64_t total = 0, lineNo = 0;
  while (fgets(line, sizeof line, f)) {
    lineNo++;
    snprintf(copy, sizeof copy, "%s", line);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *save = NULL, *host = strtok_r(line, " \t\r\n", &save);
    if (!host) continue;
    bool left = false; /* the host stopped answering: not counted, not copied */
    for (size_t g = 0; gone && g < gone->n; g++) left |= !strcmp(gone->v[g], host);
    if (left) continue;
    if (keep) fputs(copy, keep);
    int64_t n = 1;
    for (char *w = strtok_r(NULL, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
      const char *v = !strncmp(w, "slots=", 6) ? w + 6 : !strncmp(w, "slots:", 6) ? w + 6 : NULL;
      if (v && !piperParseI64(v, 0, 1 << 24, &n)) {
        snprintf(why, cap, "hostfile %s line %lld: host %s has slots '%s', expected a count "
                 "0..%d", path, (long long)lineNo, host, v, 1 << 24);
        fclose(f);
        return -1;
      }
    }
    if (!piperAddI64(total, n, &total)) total = INT64_MAX;
    size_t used = hosts ? strlen(hosts) : 0; /* "node1 2, node2 2", cut where it does not fit */
    if (hosts && used + 1 < hostsCap)
      snprintf(hosts + used, hostsCap - used, "%s%s %lld", used ? ", " : "", host, (long long)n);
  }
  fclose(f);
  return total;
}

/* The most ranks, at most `limit`, that divide N and are at least M; -1 when none. */
static int64_t ranksUpTo(const Config *c, int64_t limit) {
  for (int64_t n = limit < c->firstRanks ? limit : c->firstRanks; n >= c->minRanks && n >= 1; n--)
    if (c->firstRanks % n == 0) return n;
  return -1;
}

static void setRanks(Config *c, int64_t n) {
  c->ranks = n;
  snprintf(c->npBuf, sizeof c->npBuf, "%lld", (long long)n);
  c->np = c->npBuf;
}

/* Before a job: with --hostfile, reads it again and sets the job's ranks to the most that
 * its slots (less the hosts gone), the ranks left (cap) and N allow (dividing N, at least M);
 * with hosts gone, writes the job's hostfile without them (jobHosts). A hostfile that changed
 * since the last read lifts the cap and brings the hosts gone back (hosts came back, or the
 * operator says which are gone). Returns 0, or 1 with the reason in why when none fits. */
static int hostfileRanks(Config *c, char *why, size_t cap) {
  if (!c->hostfile) return 0;
  double stamp = hostfileStamp(c->hostfile);
  if (stamp != c->hostStamp && c->hostStamp != 0) {
    c->cap = c->firstRanks;
    if (c->gone.n) note("the hostfile %s was rewritten: trying every host it lists again",
                        c->hostfile);
    c->gone.n = 0;
  }
  FILE *keep = NULL;
  if (c->gone.n) {
    if (!c->jobHosts[0] && ownFile(c->jobHosts, sizeof c->jobHosts, "hosts-XXXXXX", 0) != 0)
      die(EXIT_TOOL, "cannot create the jobs' hostfile in $TMPDIR or /tmp: %s", strerror(errno));
    if (!(keep = fopen(c->jobHosts, "w")))
      die(EXIT_TOOL, "cannot write the jobs' hostfile %s: %s", c->jobHosts, strerror(errno));
  }
  char hosts[512];
  int64_t slots = hostfileSlots(c->hostfile, &c->gone, keep, hosts, sizeof hosts, why, cap);
  if (keep && fclose(keep) != 0)
    die(EXIT_TOOL, "cannot write the jobs' hostfile %s: %s", c->jobHosts, strerror(errno));
  if (slots < 0) return 1;
  c->hostStamp = stamp;
  char without[256] = ""; /* " without node2" */
  for (size_t g = 0; g < c->gone.n && strlen(without) + 2 < sizeof without; g++)
    snprintf(without + strlen(without), sizeof without - strlen(without), "%s%s",
             g ? ", " : " without ", c->gone.v[g]);
  int64_t limit = slots < c->cap ? slots : c->cap, n = ranksUpTo(c, limit);
  if (n < 0) {
    snprintf(why, cap, "the hostfile %s lists %lld slot%s (%s%s%s) and no count of ranks from "
             "%lld (--min-ranks) to %lld divides -np %lld", c->hostfile, (long long)slots,
             slots == 1 ? "" : "s", hosts[0] ? hosts : "no host", without[0] ? ";" : "",
             without, (long long)c->minRanks, (long long)limit, (long long)c->firstRanks);
    return 1;
  }
  if (n != c->ranks || (c->slots >= 0 && slots != c->slots))
    note("the hostfile %s lists %lld slot%s%s: the job runs on %lld of %lld ranks",
         c->hostfile, (long long)slots, slots == 1 ? "" : "s", without, (long long)n,
         (long long)c->firstRanks);
  c->slots = slots;
  setRanks(c, n);
  return 0;
}

/* Growing back while a job runs on fewer than N ranks. Why so: the hostfile is the one
 * statement of the hosts piper-run already takes (an operator or a cluster tool rewrites it
 * when a host returns; a supervisor over mpirun has no portable way to probe hosts), and a
 * stop signal already makes the job finish its step and write that step to the ring as it
 * ends (runtime/main.c, the ring's final checkpoint), so the larger job resumes from the very
 * step the smaller one reached: nothing redone, no wait for a periodic checkpoint, and no new
 * protocol between piper-run and the plan. */
typedef struct {
  double stamp;     /* the hostfile's stamp when last looked at */
  double checkedAt; /* monotonic time of that look (once a second) */
  bool told;        /* the line saying growth cannot happen (no ring) was printed */
} Grow;

/* The ranks to grow to now (more slots listed than the job runs on), else 0. */
static int64_t growCheck(const Config *c, Grow *g, double now) {
  if (!c->hostfile || c->ranks >= c->firstRanks || now - g->checkedAt < 1.0) return 0;
  g->checkedAt = now;
  double stamp = hostfileStamp(c->hostfile);
  if (stamp == g->stamp || stamp == 0) return 0;
  g->stamp = stamp;
  char why[512];
  int64_t slots = hostfileSlots(c->hostfile, NULL, NULL, NULL, 0, why, sizeof why);
  int64_t n = slots > c->ranks ? ranksUpTo(c, slots) : -1;
  if (n <= c->ranks) return 0; /* not more: the next restart reads it anyway */
  if (!c->ckptDir) {
    if (!g->told)
      note("the hostfile %s lists %lld slots, but without --checkpoint-dir the job cannot "
           "grow without losing its steps: it goes on on %lld ranks", c->hostfile,
           (long long)slots, (long long)c->ranks);
    g->told = true;
    return 0;
  }
  note("the hostfile %s lists %lld slots: growing to %lld of %lld ranks (the job stops "
       "after its current step, checkpointing it to the ring)", c->hostfile,
       (long long)slots, (long long)n, (long long)c->firstRanks);
  return n;
}

/* What the next job's first completed step is timed against (the last fault, or the end of
 * the job stopped to grow); its line is printed as soon as the step is seen, during the job. */
typedef struct {
  double faultAt;   /* wall time of the last fault; 0 = no recovery to report */
  double grownAt;   /* wall time the job stopped to grow ended; 0 = no growth to report */
  Job failed;       /* --phases: the failed job */
  double decidedAt; /* --phases: when piper-run had chosen the checkpoint to restart from */
  int64_t redo;     /* steps of the job before that the next one runs again */
} Pending;

/* How long mpirun may take to end once the job has failed (an error line, a dead rank, an
 * abort) before piper-run ends it. An abort goes through mpirun, which waits for every host's
 * daemon to confirm its ranks are gone; a host whose link was cut never does (until TCP gives
 * up on the connection: net.ipv4.tcp_retries2), so without this bound the job would hang with
 * its ranks on the other hosts dead (test/e2e/hosts/cut-link-watchdog.test). Open MPI ends a
 * job whose hosts answer well within it (--phases: "mpirun exits" within 0.1-0.3 s of the
 * dead rank's report, docs/faults-and-elastic.md). */
#define FAILED_JOB_GRACE_S 6
/* After piper-run's SIGTERM to such an mpirun (which answers "abort is already in progress"),
 * the seconds before its process group gets SIGKILL. */
#define FAILED_JOB_KILL_S 2

/* Runs mpirun with the plan's `args` until it ends, relaying its output and reading it into
 * *j, and the job's completed steps from the metrics file `m`. A stop signal to piper-run goes
 * to mpirun as SIGUSR1 (forwarded to the ranks, which finish the step, save and exit); after
 * --grace s mpirun gets SIGTERM, 10 s later the job's process group SIGKILL. --stall-timeout
 * takes the SIGTERM path at once; a job that failed but whose mpirun does not end takes it
 * FAILED_JOB_GRACE_S after the failure, with SIGKILL FAILED_JOB_KILL_S later. */
static int killStrays(void);

static void pendingNote(const Config *c, Pending *w, const Job *j, bool ended);

static void jobRun(const Config *c, Metrics *m, Pending *w, const Plan *p, char **args, Job *j) {
  *j = (Job){.lastStep = -1, .firstStep = -1, .deadRank = -1, .stoppedAt = -1};
  metricsReset(m);
  Argv a = {0};
  argvPush(&a, c->mpirun);
  argvPush(&a, "--allow-run-as-root");
  argvPush(&a, "--oversubscribe");
  argvPush(&a, "-np");
  argvPush(&a, c->np);
  if (c->hostfile) {
    argvPush(&a, "--hostfile");
    argvPush(&a, c->gone.n ? c->jobHosts : c->hostfile);
  }
  argvPush(&a, p->prog);
  for (char **s = args; *s; s++) argvPush(&a, *s);

  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
    die(EXIT_TOOL, "cannot create a pipe: %s", strerror(errno));
  fflush(stdout);
  fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) die(EXIT_TOOL, "cannot fork: %s", strerror(errno));
  if (pid == 0) {
    /* Its own process group: a terminal's Ctrl-C reaches piper-run, which decides. */
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGHUP, SIG_DFL);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execvp(a.v[0], a.v);
    fprintf(stderr, "piper-run: error: cannot run %s: %s; install Open MPI (openmpi-bin) or "
            "pass --mpirun PATH\n", a.v[0], strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  j->startedAt = wallNow();
  close(out[1]);
  close(err[1]);
  free(a.v);
  Stream s[2] = {{.fd = out[0], .relay = stdout}, {.fd = err[0], .relay = stderr}};
  double lastActivity = monoNow(), lastRing = ringLatest(c->ckptDir);
  bool stallArmed = false; /* the stall clock runs (from the job's first completed step) */
  Grow grow = {.stamp = c->hostStamp};
  double usr1At = 0; /* when SIGUSR1 (stop) went to mpirun; 0 = not yet */
  double termAt = 0; /* when SIGTERM went to mpirun; 0 = not yet */
  bool killed = false, exited = false;
  double exitedAt = 0, killAfter = 10; /* seconds from SIGTERM to the group's SIGKILL */
  while (s[0].fd >= 0 || s[1].fd >= 0 || !exited) {
    struct pollfd pf[2];
    int np = 0;
    for (int i = 0; i < 2; i++)
      if (s[i].fd >= 0) pf[np++] = (struct pollfd){.fd = s[i].fd, .events = POLLIN};
    int r = np ? poll(pf, (nfds_t)np, 50) : (usleep(50000), 0); /* 50 ms: the metrics file */
    for (int i = 0, k = 0; r > 0 && i < 2; i++) {
      if (s[i].fd < 0) continue;
      if (pf[k++].revents) {
        streamRead(&s[i], j);
        lastActivity = monoNow();
      }
    }
    double now = monoNow();
    metricsRead(m, j);
    pendingNote(c, w, j, false);
    if (!exited) {
      int st;
      pid_t w = waitpid(pid, &st, WNOHANG);
      if (w == pid) {
        exited = true;
        exitedAt = now;
        j->status = st;
        j->endedAt = wallNow();
        int strays = killStrays();
        if (strays)
          note("mpirun ended and left %d process%s running (ranks in process groups of their "
               "own): killed", strays, strays == 1 ? "" : "es");
      }
    } else if (now - exitedAt > 5) { /* a rank's descendant holds the pipe: stop reading */
      for (int i = 0; i < 2; i++)
        if (s[i].fd >= 0) close(s[i].fd), s[i].fd = -1;
    }
    if (exited) continue;
    if (preempted && !usr1At) {
      note("SIG%s (--checkpoint-signal): asking the job to checkpoint its step and stop "
           "(SIGUSR1 to the ranks, %g s grace)", signalName(c->ckptSignal), c->grace);
      kill(pid, SIGUSR1);
      usr1At = now;
    }
    if (stopSignal && !usr1At) {
      /* mpirun forwards SIGUSR1 to every rank and leaves them be; the runtime takes it as a
       * SIGTERM: finish the step, save, exit. A SIGTERM to mpirun would kill them 1 s later. */
      note("%s: asking the job to save and stop (SIGUSR1 to the ranks, %g s grace)",
           stopSignal == SIGINT ? "SIGINT" : stopSignal == SIGTERM ? "SIGTERM" : "SIGHUP",
           c->grace);
      kill(pid, SIGUSR1);
      usr1At = now;
    }
    if (usr1At && !termAt && now - usr1At > c->grace) {
      note("the job did not stop within --grace %g s: ending it", c->grace);
      kill(pid, SIGTERM);
      termAt = now;
    }
    if (!usr1At && !j->growTo && (j->growTo = growCheck(c, &grow, now))) {
      /* as on a stop signal: SIGUSR1, which mpirun forwards at once; the ranks finish the
       * step, checkpoint it and end (--grace, SIGTERM and SIGKILL after, as for a stop) */
      kill(pid, SIGUSR1);
      usr1At = now;
      continue;
    }
    /* The stall clock starts at the job's first completed step: its start-up (mpirun's
     * daemons, MPI_Init, reading the checkpoint) takes what the machine gives it, and one
     * that hangs is mpirun's and the plan's --timeout's to end (it covers the ranks' first
     * connections). */
    if (c->stallTimeout > 0 && !termAt && j->firstStep >= 0) {
      if (!stallArmed) stallArmed = true, lastActivity = now;
      double ring = ringLatest(c->ckptDir);
      if (ring != lastRing) lastRing = ring, lastActivity = now;
      if (now - lastActivity > c->stallTimeout) {
        note("the job printed nothing and wrote no checkpoint for %g s (--stall-timeout): "
             "ending it", c->stallTimeout);
        j->stalled = true;
        kill(pid, SIGTERM);
        termAt = now;
      }
    }
    if (j->failedAt && !termAt && now - j->failedAt > FAILED_JOB_GRACE_S) {
      note("the job failed %d s ago and mpirun has not ended (a host it cannot reach holds it: "
           "a cut link, a host down): ending it", FAILED_JOB_GRACE_S);
      kill(pid, SIGTERM);
      termAt = now;
      killAfter = FAILED_JOB_KILL_S;
    }
    if (termAt && !killed && now - termAt > killAfter) {
      note("the job did not end %g s after SIGTERM: killing it", killAfter);
      kill(-pid, SIGKILL);
      killed = true;
    }
  }
  for (int i = 0; i < 2; i++)
    if (s[i].len) { /* a last line without its newline */
      s[i].line[s[i].len] = 0;
      fputc('\n', s[i].relay);
      jobScanLine(j, s[i].line);
    }
  metricsRead(m, j);
  j->closedAt = wallNow();
}

/* The parent pid of process `pid` (/proc/PID/stat's fourth field, after the command name in
 * parentheses, which may itself hold spaces and parentheses), or -1; *state gets its state
 * letter ('Z': a zombie, dead already). */
static pid_t parentOf(pid_t pid, char *state) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char *paren = strrchr(buf, ')');
  int ppid = -1;
  if (!paren || sscanf(paren + 1, " %c %d", state, &ppid) != 2) return -1;
  return (pid_t)ppid;
}

/* After a job's mpirun has ended: SIGKILLs every process still descending from piper-run
 * and reaps them. Such a process is a rank that outlived its mpirun (mpirun killed by the
 * last resort below, or dying on its own); Open MPI starts each rank in a process group of
 * its own, so the SIGKILL to mpirun's group misses them, but piper-run is a child subreaper
 * (main), so they are re-parented to it and found here. Left running, one would hold the
 * job's pipes open and write to the ring beside the next job. Returns how many it killed. */
/* The live (not zombie) processes descending from piper-run, into *out (owned); how many. */
static size_t liveDescendants(pid_t **out) {
  pid_t self = getpid();
  size_t n = 0, cap = 0;
  *out = NULL;
  DIR *d = opendir("/proc");
  if (!d) return 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t pid;
    char state = 'Z', up;
    if (!piperParseI64(e->d_name, 1, INT32_MAX, &pid) || pid == self) continue;
    /* a descendant: its chain of parents reaches piper-run (bounded: a cycle cannot be) */
    pid_t p = parentOf((pid_t)pid, &state);
    for (int depth = 0; depth < 64 && p > 1 && p != self; depth++) p = parentOf(p, &up);
    if (p != self || state == 'Z') continue;
    if (!piperGrow((void **)out, &cap, n + 1, sizeof **out)) die(EXIT_TOOL, "out of memory");
    (*out)[n++] = (pid_t)pid;
  }
  closedir(d);
  return n;
}

static int killStrays(void) {
  /* Ranks mpirun has just SIGKILLed (a fault's teardown) may still be dying: 0.2 s for them
   * to go, so that only the ones that would not are counted and killed here. */
  pid_t *mine = NULL;
  size_t n = 0;
  for (int tries = 0; tries < 10; tries++) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    free(mine);
    if (!(n = liveDescendants(&mine))) break;
    usleep(20000);
  }
  for (size_t i = 0; i < n; i++) kill(mine[i], SIGKILL);
  free(mine);
  while (n && waitpid(-1, NULL, WNOHANG) > 0) {
  }
  return (int)n;
}

/* What failed, in words, from the job's output and status. */
static void jobDescribe(const Job *j, char *out, size_t cap) {
  if (j->stalled) {
    snprintf(out, cap, "the job stalled (no output, no checkpoint)");
  } else if (j->rankDeath[0]) {
    snprintf(out, cap, "%s", j->rankDeath);
  } else if (j->error[0]) {
    snprintf(out, cap, "%s", j->error);
  } else if (j->lostHost[0]) {
    snprintf(out, cap, "host %s does not answer (%s)", j->lostHost, j->hostWhy);
  } else if (WIFSIGNALED(j->status)) {
    snprintf(out, cap, "mpirun was killed by signal %d (%s)", WTERMSIG(j->status),
             strsignal(WTERMSIG(j->status)));
  } else {
    snprintf(out, cap, "mpirun exited with status %d", WEXITSTATUS(j->status));
  }
}

/* --phases: one line splitting a recovery's seconds, each phase's end counted from the fault:
 * the failed job's end as mpirun reports it, mpirun's exit, its output closing (every rank
 * gone), piper-run's decision (the ring read), the new mpirun's fork, the ranks' main, MPI_Init,
 * the plan's set-up (allocation) and its checkpoint load, the first completed step. A phase
 * not seen prints "?". */
static void phasesNote(const Job *failed, double decidedAt, const Job *j, double faultAt) {
  const double at[] = {failed->noticedAt, failed->endedAt, failed->closedAt, decidedAt,
                       j->startedAt, j->phase[0], j->phase[1], j->phase[2], j->phase[3],
                       j->firstStepAt};
  static const char *const name[] = {"mpirun reports the rank", "mpirun exits",
                                     "every rank gone", "restart decided", "mpirun started",
                                     "ranks in main", "MPI_Init done", "plan set up",
                                     "checkpoint loaded", "first step done"};
  char line[1024];
  size_t n = 0;
  for (size_t i = 0; i < sizeof at / sizeof *at && n < sizeof line; i++) {
    int k = at[i] > 0 ? snprintf(line + n, sizeof line - n, "%s%s +%.2f", i ? ", " : "",
                                 name[i], at[i] - faultAt)
                      : snprintf(line + n, sizeof line - n, "%s%s ?", i ? ", " : "", name[i]);
    if (k < 0) break;
    n += (size_t)k;
  }
  note("phases (s after the fault): %s", line);
}

/* The line saying the restarted job `j` completed a step, and with --phases where the time
 * went. */
static void recoveredNote(const Config *c, const Job *failed, double decidedAt, const Job *j,
                          double faultAt, int64_t redo) {
  note("recovered: the restarted job completed step %lld %.2f s after the fault (%lld "
       "step%s redone)",
       (long long)j->firstStep, j->firstStepAt - faultAt, (long long)redo, redo == 1 ? "" : "s");
  if (c->phases) phasesNote(failed, decidedAt, j, faultAt);
}


/* Once job j has completed a step: the "recovered:" or "grown:" line it was waited for. With
 * --phases the first is held until the plan's phases line has come too (stderr through mpirun
 * can trail the metrics file), or the job ended (`ended`). */
static void pendingNote(const Config *c, Pending *w, const Job *j, bool ended) {
  if (j->firstStep < 0) return;
  if (w->faultAt > 0 && (!c->phases || j->phase[0] > 0 || ended)) {
    recoveredNote(c, &w->failed, w->decidedAt, j, w->faultAt, w->redo);
    w->faultAt = 0;
  }
  if (w->grownAt > 0) {
    note("grown: the job on %lld ranks completed step %lld %.2f s after the smaller one "
         "ended (%lld step%s redone)", (long long)c->ranks, (long long)j->firstStep,
         j->firstStepAt - w->grownAt, (long long)w->redo, w->redo == 1 ? "" : "s");
    w->grownAt = 0;
  }
}

/* ---- losing a rank for good ---- */

/* After a failed job: whether its rank is lost for good (the fault injected says so, or the
 * same rank failed in the job before too); if so, and --min-ranks allows, the next job runs
 * on the most ranks that are fewer, divide N (a role plan's replicas must share the
 * compiled batches evenly) and are at least M, with one line saying so. Returns 1 when a
 * rank is lost and no such count is left (the caller gives up), else 0. *lastDead: the
 * failed rank, carried to the next call. */
static int lostForGood(Config *c, const Job *j, int64_t *lastDead, const char *what) {
  bool again = j->deadRank >= 0 && j->deadRank == *lastDead;
  /* a smaller world the plan refused before its first step (not whole pipelines): the next
   * smaller count, as if another rank were lost */
  bool refused = c->ranks < c->firstRanks && j->firstStep < 0 &&
                 strstr(j->error, "run it with mpirun -np");
  *lastDead = j->deadRank;
  if (((j->deadRank < 0 || (!j->lost && !again)) && !refused) || c->minRanks >= c->ranks)
    return 0;
  int64_t n = ranksUpTo(c, c->ranks - 1);
  const char *why = refused ? "the plan refused the smaller world"
                    : j->lost ? "its fault says it does not come back"
                              : "it failed in two jobs in a row";
  if (n < 0) {
    note("giving up: %s%lld %s (%s: %s) and no count of ranks from %lld (--min-ranks) to "
         "%lld divides -np %lld", refused ? "the plan refused " : "rank ",
         (long long)(refused ? c->ranks : j->deadRank),
         refused ? "ranks" : "is lost for good", why, what,
         (long long)c->minRanks, (long long)(c->ranks - 1), (long long)c->firstRanks);
    return 1;
  }
  if (refused)
    note("the plan cannot run on %lld ranks (%s); trying %lld of %lld ranks (--min-ranks "
         "%lld)", (long long)c->ranks, what, (long long)n, (long long)c->firstRanks,
         (long long)c->minRanks);
  else
    note("rank %lld is lost for good (%s); continuing on %lld of %lld ranks (--min-ranks "
         "%lld)", (long long)j->deadRank, why, (long long)n, (long long)c->firstRanks,
         (long long)c->minRanks);
  setRanks(c, n);
  c->cap = n;
  *lastDead = -1; /* the ranks are renumbered */
  return 0;
}

/* ---- a host that stopped answering ---- */

/* After a failed job that named a host that does not answer (j->lostHost: Open MPI lost its
 * daemon there, or could not reach it to start one): the host is left out of the next jobs'
 * hostfile (hostfileRanks), which then run on the slots of the hosts left, as a rank lost for
 * good does (down to --min-ranks, on the ranks that divide N), until the hostfile is rewritten.
 * Retrying it as it is would fail the same way, or hang on its daemon. Returns 1 where the
 * hosts left cannot run the job (the caller gives up), else 0. */
static int hostGone(Config *c, const Job *j) {
  if (!c->hostfile) {
    note("giving up: host %s does not answer (%s), and without --hostfile piper-run cannot "
         "leave it out; bring it back, or run with --hostfile listing the hosts that answer "
         "and --min-ranks", j->lostHost, j->hostWhy);
    return 1;
  }
  for (size_t g = 0; g < c->gone.n; g++)
    if (!strcmp(c->gone.v[g], j->lostHost)) return 0; /* already out: mpirun's words again */
  argvPush(&c->gone, keep(xprintf("%s", j->lostHost)));
  note("host %s does not answer (%s): leaving it out of the next jobs until the hostfile %s is "
       "rewritten", j->lostHost, j->hostWhy, c->hostfile);
  char why[1400];
  if (hostfileRanks(c, why, sizeof why)) {
    note("giving up: %s; bring %s back and rewrite the hostfile, or lower --min-ranks", why,
         j->lostHost);
    return 1;
  }
  return 0;
}

/* ---- the command line ---- */

static int64_t argCount(const char *flag, const char *v, int64_t lo) {
  int64_t x;
  if (!v) die(EXIT_USAGE, "%s needs a value: command line; run with --help for usage", flag);
  if (!piperParseI64(v, lo, INT64_MAX, &x))
    die(EXIT_USAGE, "%s expects an integer >= %lld, got '%s': command line", flag,
        (long long)lo, v);
  return x;
}

static double argSeconds(const char *flag, const char *v) {
  char *end = NULL;
  if (!v) die(EXIT_USAGE, "%s needs a value: command line; run with --help for usage", flag);
  double x = strtod(v, &end);
  if (!v[0] || *end || !(x >= 0) || x > 1e9)
    die(EXIT_USAGE, "%s expects seconds (a non-negative number), got '%s': command line",
        flag, v);
  return x;
}

/* piper-run's own flags, up to '--': into `c`, and the ones main reads; the index of '--'
 * (argc if none). --help prints the usage and exits; a bad flag exits EXIT_USAGE. */
static int parseSupervisorArgs(int argc, char **argv, Config *c, const char **dirFlag,
                               int64_t *minRanks, bool *resume) {
  int k = 1;
  for (; k < argc && strcmp(argv[k], "--"); k++) {
    const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(USAGE, stdout);
      exit(EXIT_OK);
    } else if (!strcmp(a, "-np") || !strcmp(a, "--np") || !strcmp(a, "-n")) {
      c->ranks = argCount(a, v, 1);
      c->np = argv[++k];
    } else if (!strcmp(a, "--hostfile")) {
      if (!v) die(EXIT_USAGE, "--hostfile needs a file: command line");
      c->hostfile = argv[++k];
    } else if (!strcmp(a, "--max-restarts")) {
      c->maxRestarts = argCount(a, v, 0), k++;
    } else if (!strcmp(a, "--min-ranks")) {
      *minRanks = argCount(a, v, 1), k++;
    } else if (!strcmp(a, "--checkpoint-dir")) {
      if (!v || !v[0]) die(EXIT_USAGE, "--checkpoint-dir needs a folder: command line");
      *dirFlag = argv[++k];
    } else if (!strcmp(a, "--resume")) {
      *resume = true;
    } else if (!strcmp(a, "--stall-timeout")) {
      c->stallTimeout = argSeconds(a, v), k++;
    } else if (!strcmp(a, "--grace")) {
      c->grace = argSeconds(a, v), k++;
    } else if (!strcmp(a, "--phases")) {
      c->phases = true;
      setenv("PIPER_PHASES", "1", 1); /* the plan's rank 0 prints its start-up times */
    } else if (!strcmp(a, "--checkpoint-signal")) {
      c->ckptSignal = checkpointSignalParse(v), k++;
    } else if (!strcmp(a, "--mpirun")) {
      if (!v || !v[0]) die(EXIT_USAGE, "--mpirun needs a program: command line");
      c->mpirun = argv[++k];
    } else {
      die(EXIT_USAGE, "unknown argument '%s': command line; the plan and its flags go after "
          "'--' (run with --help for usage)", a);
    }
  }
  return k;
}

/* SIGINT, SIGTERM and SIGHUP stop the job in hand and start no other (onSignal). */
static void catchStopSignals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = onSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Before the first job: the signals piper-run takes, mpirun's teardown, the subreaper. */
static void superviseSetup(const Config *c) {
  /* When a rank dies, Open MPI's mpirun sends the others SIGCONT, waits
   * odls_base_sigkill_timeout seconds (default 1), sends SIGTERM, waits again, then SIGKILL:
   * 2 s of a recovery spent waiting for ranks that cannot finish (they block on the dead
   * one, and a SIGTERM only asks the plan to end after its step). 0 kills them at once. A
   * value the user set in the environment stays. A stop (SIGUSR1, --grace) does not go
   * through this path. */
  setenv("OMPI_MCA_odls_base_sigkill_timeout", "0", 0);
  /* A host that stops answering (a cut link, a host down) is noticed by Open MPI only through
   * its daemon's TCP connection, whose keepalive waits 300 s of silence and then 9 probes 20 s
   * apart by default: the job would hang 8 minutes (or until --timeout and FAILED_JOB_GRACE_S).
   * With probes after 2 s of silence, 1 s apart, 3 unanswered: mpirun declares such a host
   * lost within some 4-7 s of its going silent (bench/bench_hosts.py) and ends the job, and
   * the host's own daemon, which hears nothing from mpirun either, ends its ranks and itself
   * (test/e2e/hosts). The probes are answered by the kernel, so a busy host is not taken for a
   * lost one. */
  setenv("OMPI_MCA_oob_tcp_keepalive_time", "2", 0);
  setenv("OMPI_MCA_oob_tcp_keepalive_intvl", "1", 0);
  setenv("OMPI_MCA_oob_tcp_keepalive_probes", "3", 0);
  /* Ranks whose mpirun dies are re-parented to piper-run, which kills them (killStrays). */
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  catchStopSignals();
  if (c->ckptSignal) { /* after the stop signals: it may be one of them, and then wins */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = onCheckpointSignal;
    sigemptyset(&sa.sa_mask);
    sigaction(c->ckptSignal, &sa, NULL);
  }
}

/* After --checkpoint-signal: the step the ring holds, said in one line, and EXIT_REQUEUE,
 * whatever the last job did (a scheduler is taking the allocation away: another job here
 * would not finish). The requeued job's piper-run --resume continues from that step. */
static int preemptedExit(const Config *c, BadList *bad, const Job *j) {
  size_t count = 0;
  CkptInfo in;
  char *newest = c->ckptDir ? keep(ringNewest(c->ckptDir, bad, &in, &count)) : NULL;
  char how[96] = "";
  if (j && j->stoppedAt >= 0)
    snprintf(how, sizeof how, "the job stopped with %lld steps completed and saved them; ",
             (long long)j->stoppedAt);
  else if (j)
    snprintf(how, sizeof how, "the job ended before it could save its step; ");
  if (newest)
    note("preempted (SIG%s): %sthe newest complete checkpoint is %s (step %lld); exit %d: "
         "requeue the job, and piper-run --resume continues from there",
         signalName(c->ckptSignal), how, newest, (long long)in.step, EXIT_REQUEUE);
  else
    note("preempted (SIG%s): %sno checkpoint to continue from (%s); exit %d: a requeued job "
         "starts the run again", signalName(c->ckptSignal), how,
         c->ckptDir ? "the ring is empty" : "no --checkpoint-dir", EXIT_REQUEUE);
  return EXIT_REQUEUE;
}

/* The ring before the first job: a warning where there is none (or nothing fills it), a
 * refusal where it already holds checkpoints and --resume was not given; with --resume, the
 * newest complete checkpoint (its step in *fromStep), else NULL: the run starts as given. */
static char *ringStart(const Config *c, const Plan *p, bool resume, BadList *bad,
                       int64_t *fromStep) {
  if (!c->ckptDir) {
    note("warning: no --checkpoint-dir: a fault restarts the run from its start");
    return NULL;
  }
  size_t count;
  CkptInfo in;
  char *from = NULL, *newest = keep(ringNewest(c->ckptDir, bad, &in, &count));
  if (count && !resume)
    die(EXIT_USAGE, "--checkpoint-dir %s already holds %zu checkpoint%s (another run's?): "
        "command line; pass --resume to continue from the newest, or empty the folder",
        c->ckptDir, count, count == 1 ? "" : "s");
  if (resume && newest) {
    from = newest;
    *fromStep = in.step;
    note("resuming from step %lld (%s)", (long long)*fromStep, from);
  } else if (resume) {
    note("--resume: %s holds no usable checkpoint%s: starting the run from step %lld, as "
         "given", c->ckptDir, count ? " (see above)" : " (it is empty or missing)",
         (long long)*fromStep);
  }
  if (!p->ckptEvery)
    note("warning: the plan has no --checkpoint-every: only its last step is checkpointed, "
         "so a fault restarts from the start");
  return from;
}

/* After a job piper-run ended to grow (Grow): the checkpoint to restart from, with one line;
 * false where the ring holds none that checks out (then it counts as a fault). The next
 * job's ranks come from the hostfile (hostfileRanks), read again before it starts. */
static bool growRestart(Config *c, const Job *j, BadList *bad, char **from, int64_t *fromStep,
                        int64_t *redo) {
  size_t count;
  CkptInfo in;
  char *ckpt = keep(ringNewest(c->ckptDir, bad, &in, &count));
  if (!ckpt) return false;
  *from = ckpt;
  *fromStep = in.step;
  *redo = j->lastStep > in.step ? j->lastStep - in.step : 0;
  note("growing: the job on %lld ranks stopped at step %lld (%s); restarting on %lld of "
       "%lld ranks", (long long)c->ranks, (long long)in.step, ckpt,
       (long long)j->growTo, (long long)c->firstRanks);
  return true;
}

/* The run: steps [start, end) with the schedule's length `total`. A plan flag
 * --init-checkpoint F resumes from F's step when F holds optimizer state (what the plan
 * does, runtime/main.c prt_resume_step), unless --restart-steps. */
static void runBounds(const Plan *p, int64_t *start, int64_t *end, int64_t *total) {
  *start = 0;
  if (p->initCkpt && !p->restartSteps) {
    CkptInfo in;
    char why[256];
    if (ckptCheck(p->initCkpt, &in, why, sizeof why) && in.hasOptim && in.step > 0)
      *start = in.step;
  }
  if (!piperAddI64(*start, p->steps, end))
    die(EXIT_USAGE, "--steps %lld from step %lld overflows: command line", (long long)p->steps,
        (long long)*start);
  *total = p->totalSteps >= 0 ? p->totalSteps : *end;
}

/* The first job's flags: as given, plus the ring where piper-run names it and the metrics
 * file piper-run counts steps by where the plan names none. */
static Argv firstArgs(const Config *c, const Plan *p) {
  Argv first = {0};
  for (int i = 0; i < p->nargs; i++) argvPush(&first, p->args[i]);
  if (c->ckptDir && !p->ckptDir) {
    argvPush(&first, "--checkpoint-dir");
    argvPush(&first, c->ckptDir);
  }
  if (c->metrics.path && !p->metrics) {
    argvPush(&first, "--metrics");
    argvPush(&first, c->metrics.path);
  }
  return first;
}

int main(int argc, char **argv) {
  static Config c; /* static: what it holds (the hosts gone) stays reachable until exit */
  c = (Config){.maxRestarts = 3, .grace = 30, .mpirun = "mpirun"};
  const char *dirFlag = NULL;
  int64_t minRanks = -1;
  bool resume = false;
  planFlagsCheck();
  int k = parseSupervisorArgs(argc, argv, &c, &dirFlag, &minRanks, &resume);
  if (k + 1 >= argc)
    die(EXIT_USAGE, "no plan to run: command line; give it after '--': piper-run -np N -- "
        "./plan [flags]");
  if (!c.np) die(EXIT_USAGE, "-np N is missing: command line; give the plan's device count");
  if (minRanks > c.ranks)
    die(EXIT_USAGE, "--min-ranks %lld is more than -np %lld: command line; give at most "
        "%lld", (long long)minRanks, (long long)c.ranks, (long long)c.ranks);
  c.firstRanks = c.cap = c.ranks;
  c.minRanks = minRanks >= 0 ? minRanks : c.ranks;
  c.slots = -1;
  Plan p = {.prog = argv[k + 1], .args = argv + k + 2, .nargs = argc - k - 2};
  planRead(&p);
  if (dirFlag && p.ckptDir && strcmp(dirFlag, p.ckptDir))
    die(EXIT_USAGE, "--checkpoint-dir %s and the plan's --checkpoint-dir %s differ: command "
        "line; name the folder once", dirFlag, p.ckptDir);
  c.ckptDir = p.ckptDir ? p.ckptDir : dirFlag;

  int64_t start, end, total;
  runBounds(&p, &start, &end, &total);

  c.metrics.path = p.metrics ? p.metrics : metricsOwn();
  static Argv first; /* the first job's flags: as given, plus the ring */
  first = firstArgs(&c, &p);
  static BadList bad; /* static: reachable until exit */
  int64_t fromStep = start;
  /* the checkpoint the next job starts from; NULL = as given */
  char *from = ringStart(&c, &p, resume, &bad, &fromStep);

  superviseSetup(&c);
  int64_t lastDead = -1;  /* the rank the previous job's fault was on; -1 = none known */
  bool metricsBlind = false; /* the metrics file was found unreadable (said once) */
  static Pending w;       /* the next job's first step is timed against it (static: a Job is
                             large) */
  for (int64_t restarts = 0;; restarts++) {
    if (preempted) return preemptedExit(&c, &bad, NULL); /* between two jobs */
    if (stopSignal) { /* it came between two jobs: start no other */
      note("stopped by %s before restart %lld", stopSignal == SIGINT ? "SIGINT" :
           stopSignal == SIGTERM ? "SIGTERM" : "SIGHUP", (long long)restarts);
      return 128 + stopSignal;
    }
    char hostWhy[1400];
    if (hostfileRanks(&c, hostWhy, sizeof hostWhy)) {
      if (!restarts && w.grownAt == 0 && !w.faultAt) /* before any job: the command line's */
        die(EXIT_USAGE, "%s: command line; fix the hostfile or --min-ranks", hostWhy);
      note("giving up: %s%s", hostWhy, c.gone.n ? "; bring the hosts that do not answer back "
           "and rewrite the hostfile, or lower --min-ranks" : "");
      return EXIT_GAVE_UP;
    }
    Argv args = {0};
    if (from) planRestartArgs(&p, &args, from, fromStep, end, total);
    else args = first;
    if (from && !p.ckptDir && c.ckptDir) {
      argvPush(&args, "--checkpoint-dir");
      argvPush(&args, c.ckptDir);
    }
    if (from && !p.metrics && c.metrics.path) {
      argvPush(&args, "--metrics");
      argvPush(&args, c.metrics.path);
    }
    double startedAt = wallNow();
    Job j;
    jobRun(&c, &c.metrics, &w, &p, args.v ? args.v : (char *[]){NULL}, &j);
    if (args.v != first.v) free(args.v);
    pendingNote(&c, &w, &j, true); /* a step the job's last lines told */
    if (c.metrics.path && !c.metrics.lines && WIFEXITED(j.status) && !WEXITSTATUS(j.status) &&
        !metricsBlind) { /* a job that ran to its end wrote at least its summary line */
      note("warning: the job ended well but its metrics file %s holds none of its lines: "
           "rank 0 writes it where piper-run cannot read it (on another host, to a disk of its "
           "own?), so its steps, phases and faults go unseen; name a --metrics file on a "
           "filesystem piper-run's host shares with rank 0's", c.metrics.path);
      metricsBlind = true;
    }
    int code = WIFEXITED(j.status) ? WEXITSTATUS(j.status) : 128 + WTERMSIG(j.status);
    if (stopSignal) {
      note("stopped by %s after %lld restart%s (the job ended with status %d)",
           stopSignal == SIGINT ? "SIGINT" : stopSignal == SIGTERM ? "SIGTERM" : "SIGHUP",
           (long long)restarts, restarts == 1 ? "" : "s", code);
      return 128 + stopSignal;
    }
    if (code == 0 && !j.stalled) {
      char on[64] = "";
      if (c.ranks != c.firstRanks)
        snprintf(on, sizeof on, ", on %lld of %lld ranks", (long long)c.ranks,
                 (long long)c.firstRanks);
      note("finished: step %lld of %lld, after %lld restart%s%s", (long long)end,
           (long long)end, (long long)restarts, restarts == 1 ? "" : "s", on);
      return EXIT_OK;
    }
    if (preempted) return preemptedExit(&c, &bad, &j); /* not restarted here */
    if (code == 2 && j.firstStep < 0 && !j.faultAt && !j.rankDeath[0] && !j.stalled) {
      note("the plan refused its command line (exit 2): not restarting");
      return EXIT_USAGE;
    }
    if (code == 127 && j.firstStep < 0 && !j.error[0] && !j.rankDeath[0]) {
      note("mpirun could not be started: not restarting");
      return EXIT_TOOL;
    }
    if (j.missingOn[0]) {
      note("the plan %s cannot be started on host %s (mpirun could not access or execute it "
           "there): not restarting; put it at the same path on every host, or on a filesystem "
           "they share", p.prog, j.missingOn);
      return EXIT_USAGE;
    }
    if (j.growTo > 0 && growRestart(&c, &j, &bad, &from, &fromStep, &w.redo)) {
      w.grownAt = j.endedAt;
      restarts--; /* growing is not a fault: it spends no restart */
      continue;
    }
    char what[1024];
    jobDescribe(&j, what, sizeof what);
    /* A job that failed on its checkpoint before any step: the plan refused the file. */
    if (from && j.firstStep < 0 && j.error[0] && strstr(j.error, from)) {
      if (!piperGrow((void **)&bad.paths, &bad.cap, bad.n + 1, sizeof *bad.paths))
        die(EXIT_TOOL, "out of memory");
      bad.paths[bad.n++] = from;
    }
    w.faultAt = j.faultAt > 0 ? j.faultAt : j.endedAt;
    char at[64] = "";
    if (j.lastStep >= 0) /* steps completed (metrics): the next one was running */
      snprintf(at, sizeof at, " after %lld completed step%s", (long long)j.lastStep,
               j.lastStep == 1 ? "" : "s");
    if (restarts >= c.maxRestarts) {
      note("giving up: %s%s; that was fault %lld and --max-restarts is %lld", what, at,
           (long long)restarts + 1, (long long)c.maxRestarts);
      size_t count;
      CkptInfo in;
      char *newest = c.ckptDir ? keep(ringNewest(c.ckptDir, &bad, &in, &count)) : NULL;
      if (newest)
        note("the newest complete checkpoint is %s (step %lld of %lld); continue with "
             "piper-run --resume", newest, (long long)in.step, (long long)end);
      return EXIT_GAVE_UP;
    }
    if (j.lostHost[0] && hostGone(&c, &j) != 0) return EXIT_GAVE_UP;
    if (lostForGood(&c, &j, &lastDead, what) != 0) return EXIT_GAVE_UP;
    from = NULL;
    fromStep = start;
    double since = startedAt;
    if (c.ckptDir) {
      size_t count;
      CkptInfo in;
      from = keep(ringNewest(c.ckptDir, &bad, &in, &count));
      if (from) {
        fromStep = in.step;
        if (in.mtime > since) since = in.mtime;
      }
    }
    w.failed = j;
    w.decidedAt = wallNow();
    int64_t reached = j.lastStep >= 0 ? j.lastStep : fromStep;
    w.redo = reached > fromStep ? reached - fromStep : 0;
    note("fault %lld (restart %lld of %lld): %s%s; resuming from step %lld (%s); %.2f s lost",
         (long long)restarts + 1, (long long)restarts + 1, (long long)c.maxRestarts, what, at,
         (long long)fromStep, from ? from : "the run's start: no checkpoint yet",
         j.endedAt - since > 0 ? j.endedAt - since : 0.0);
  }
}
