/* Fault injection for the fault suite (test/e2e/faults): one fault, named by the environment
 * variable PIPER_FAULT, at an exact place of an exact step, so a test can kill a rank in the
 * middle of step 5 or while a checkpoint is being written, every time.
 *
 *   PIPER_FAULT = KIND '@' SITE '=' STEP { ',' OPTION }
 *   KIND   = kill (SIGKILL: no handler runs) | stop (SIGSTOP: the rank hangs) | exit (exit 3)
 *          | drop (the transfer at SITE delivers nothing: a wrong plan, for negative controls)
 *          | hold (site step only: every rank, whatever rank= says, holds after the step until
 *            the run is asked to stop (SIGINT, SIGTERM, SIGUSR1: piper-run's stop and its
 *            grow), then stops after that step as a stopped run does. No transfer is in
 *            flight meanwhile, so no watchdog runs: a test holds a job at a step for as
 *            long as its scenario takes, on any machine)
 *   SITE   = step (after the plan's step STEP, before the step's loss agreement)
 *          | save (in the background writer, before the checkpoint of STEP completed steps
 *            is written: training has gone on, the file is not committed)
 *          | all_to_all (an all-to-all the rank issues in step STEP: with drop, its output
 *            buffer keeps what it held, as if the plan had lost the exchange)
 *   OPTION = rank=R (default 0) | once=FILE (fire only if FILE does not exist yet, and
 *            create it, holding the firing process's id: a supervised run then meets the
 *            fault once, not after every restart, and a test can SIGCONT a stopped rank)
 *          | lost (the message says the rank does not come back: piper-run --min-ranks then
 *            restarts on fewer ranks)
 *          | nth=N (all_to_all: only the N-th of the step's all-to-alls on that rank, from 0;
 *            default every one)
 *          | ranks=W (only in a job of W ranks: an elastic job on fewer ranks than the
 *            plan's devices, say, and not the jobs before or after it)
 *
 * Unset, it costs one getenv per run. The real faults are the same signals from outside; the
 * hook only fixes when they land.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "prt_ckpt_ring.h"

/* The parsed PIPER_FAULT; kind 0 = none. */
static struct {
  int parsed;         /* PIPER_FAULT was read */
  int kind;           /* 0 none, SIGKILL, SIGSTOP, -3 for exit(3), or PRT_FAULT_DROP */
  prt_fault_site site;
  int64_t step;       /* STEP */
  int64_t rank;       /* rank=R */
  char once[4096];    /* once=FILE, "" = every time */
  int lost;           /* lost: the rank does not come back (said in the message) */
  int64_t nth;        /* nth=N; -1 = every time the site is reached in the step */
  int64_t seen;       /* times the site was reached in the matching step so far */
  int64_t ranks;      /* ranks=W; 0 = in a job of any size */
  int64_t world;      /* the job's ranks (prt_fault_set_world); 0 = not known yet */
  const char *events; /* the run's --metrics file, borrowed; NULL = none */
} prt_fault = {.nth = -1};

void prt_fault_set_world(int64_t ranks) { prt_fault.world = ranks; }

void prt_fault_events_to(const char *metrics_path) { prt_fault.events = metrics_path; }

/* The fault's "fault" line, appended to the metrics file in one write (rank 0 appends too:
 * whole lines interleave, none is overwritten). Best effort: the stderr line says it anyway. */
static void prt_fault_event(const char *action, const char *site, int64_t rank, int64_t step,
                            const struct timespec *ts) {
  if (!prt_fault.events) return;
  int fd = open(prt_fault.events, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) return;
  char line[256];
  int n = snprintf(line, sizeof line, "{\"kind\": \"fault\", \"rank\": %lld, \"step\": %lld, "
                   "\"site\": \"%s\", \"action\": \"%s\", \"t\": %lld.%03ld, \"lost\": %s}\n",
                   (long long)rank, (long long)step, site, action, (long long)ts->tv_sec,
                   ts->tv_nsec / 1000000, prt_fault.lost ? "true" : "false");
  if (n > 0 && (size_t)n < sizeof line && write(fd, line, (size_t)n) != n) {
    /* a short write: the reader skips a line it cannot parse */
  }
  close(fd);
}

static void prt_fault_bad(const char *spec, const char *why) {
  fprintf(stderr, "piper: error: PIPER_FAULT='%s': %s; expected KIND@SITE=STEP[,rank=R]"
          "[,once=FILE][,lost][,ranks=W] with KIND kill, stop, exit or hold and SITE step or "
          "save (see runtime/fault_inject.c)\n", spec, why);
  fflush(stderr);
  _exit(2);
}

static int64_t prt_fault_int(const char *spec, const char *s, const char **end) {
  char *e = NULL;
  errno = 0;
  long long v = strtoll(s, &e, 10);
  if (e == s || errno || v < 0) prt_fault_bad(spec, "a step or rank is not a non-negative integer");
  *end = e;
  return v;
}

static void prt_fault_parse(void) {
  prt_fault.parsed = 1;
  const char *spec = getenv("PIPER_FAULT");
  if (!spec || !spec[0]) return;
  static const struct { const char *name; int kind; } kinds[] = {
      {"kill@", SIGKILL}, {"stop@", SIGSTOP}, {"exit@", -3}, {"drop@", PRT_FAULT_DROP},
      {"hold@", PRT_FAULT_HOLD}};
  static const struct { const char *name; prt_fault_site site; } sites[] = {
      {"step=", PRT_FAULT_AT_STEP}, {"save=", PRT_FAULT_AT_SAVE},
      {"all_to_all=", PRT_FAULT_AT_ALL_TO_ALL}};
  const char *p = spec;
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0] && !prt_fault.kind; i++)
    if (!strncmp(p, kinds[i].name, strlen(kinds[i].name))) {
      prt_fault.kind = kinds[i].kind;
      p += strlen(kinds[i].name);
    }
  if (!prt_fault.kind) prt_fault_bad(spec, "unknown KIND");
  size_t k = 0;
  while (k < sizeof sites / sizeof sites[0] && strncmp(p, sites[k].name, strlen(sites[k].name)))
    k++;
  if (k == sizeof sites / sizeof sites[0]) prt_fault_bad(spec, "unknown SITE");
  prt_fault.site = sites[k].site;
  prt_fault.step = prt_fault_int(spec, p + strlen(sites[k].name), &p);
  while (*p == ',') {
    p++;
    if (!strncmp(p, "rank=", 5)) {
      prt_fault.rank = prt_fault_int(spec, p + 5, &p);
    } else if (!strncmp(p, "nth=", 4)) {
      prt_fault.nth = prt_fault_int(spec, p + 4, &p);
    } else if (!strncmp(p, "ranks=", 6)) {
      prt_fault.ranks = prt_fault_int(spec, p + 6, &p);
      if (!prt_fault.ranks) prt_fault_bad(spec, "ranks= needs a count of ranks >= 1");
    } else if (!strncmp(p, "lost", 4) && (p[4] == ',' || !p[4])) {
      prt_fault.lost = 1;
      p += 4;
    } else if (!strncmp(p, "once=", 5)) {
      size_t n = strcspn(p + 5, ",");
      if (n == 0 || n >= sizeof prt_fault.once) prt_fault_bad(spec, "once= needs a file name");
      memcpy(prt_fault.once, p + 5, n);
      prt_fault.once[n] = 0;
      p += 5 + n;
    } else {
      prt_fault_bad(spec, "unknown OPTION");
    }
  }
  if (*p) prt_fault_bad(spec, "trailing characters");
  if ((prt_fault.kind == PRT_FAULT_DROP) != (prt_fault.site == PRT_FAULT_AT_ALL_TO_ALL))
    prt_fault_bad(spec, "drop goes with all_to_all, and all_to_all with drop");
  if (prt_fault.kind == PRT_FAULT_HOLD && prt_fault.site != PRT_FAULT_AT_STEP)
    prt_fault_bad(spec, "hold goes with step (every rank holds after the step)");
}

int prt_fault_point(prt_fault_site site, int64_t rank, int64_t step) {
  if (!prt_fault.parsed) prt_fault_parse();
  if (!prt_fault.kind || site != prt_fault.site || step != prt_fault.step ||
      (rank != prt_fault.rank && prt_fault.kind != PRT_FAULT_HOLD) ||
      (prt_fault.ranks && prt_fault.ranks != prt_fault.world))
    return 0;
  if (prt_fault.nth >= 0 && prt_fault.seen++ != prt_fault.nth) return 0;
  if (prt_fault.once[0]) { /* O_EXCL: of two tries, one creates the marker and fires */
    int fd = open(prt_fault.once, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 0;
    /* the process id, so a test can SIGCONT a stopped rank after acting on the pause */
    char pid[24];
    int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    if (n > 0 && write(fd, pid, (size_t)n) != n) { /* a marker without its pid still marks */ }
    close(fd);
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  static const char *const where[] = {"at step", "writing the checkpoint of step",
                                      "in an all-to-all of step"};
  const char *what = prt_fault.kind == SIGKILL ? "SIGKILL" : prt_fault.kind == SIGSTOP ?
                     "SIGSTOP" : prt_fault.kind == PRT_FAULT_DROP ? "drop" :
                     prt_fault.kind == PRT_FAULT_HOLD ? "hold" : "exit 3";
  static const char *const siteName[] = {"step", "save", "all_to_all"};
  static const char *const actionName[] = {"kill", "stop", "exit", "drop", "hold"};
  int action = prt_fault.kind == SIGKILL ? 0 : prt_fault.kind == SIGSTOP ? 1
               : prt_fault.kind == PRT_FAULT_DROP ? 3 : prt_fault.kind == PRT_FAULT_HOLD ? 4 : 2;
  prt_fault_event(actionName[action], siteName[site], rank, step, &ts);
  fprintf(stderr, "piper: fault injected: %s %s %lld (rank %lld) at t=%lld.%03ld%s\n", what,
          where[site], (long long)step, (long long)rank, (long long)ts.tv_sec,
          ts.tv_nsec / 1000000, prt_fault.lost ? "; this rank does not come back" :
          prt_fault.kind == PRT_FAULT_HOLD ? "; holding until the run is asked to stop" : "");
  fflush(stderr);
  if (prt_fault.kind == PRT_FAULT_DROP || prt_fault.kind == PRT_FAULT_HOLD) return 1;
  if (prt_fault.kind < 0) _exit(3);
  raise(prt_fault.kind);
  return 0;
}
