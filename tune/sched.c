/* Pipeline schedules as Piper JSON strategies: piper-sched's generator, a library so that
 * piper-tune calls it in process (one call per candidate) and piper-sched is its command line.
 *
 * tuneSchedRun(args) prints the directive list that makes a model annotated with PP = 0..S-1
 * (piper-gen gpt --stages S) train under a schedule: one split into M microbatches, a place
 * (and with D >= 2 a replicate) per stage, and one order directive per pipeline device listing
 * that device's compute sequence.
 *
 * Before anything is printed, the schedule is checked: every (stage, microbatch, pass) occurs
 * exactly once, on the device that holds the stage, and an event simulation with point-to-point
 * dependencies runs every device's list to the end. A schedule that would deadlock is an
 * internal error (1), never output. The timeline output prints that simulation (unit costs)
 * with the bubble fraction next to the analytic one.
 *
 * Notation: S stages, M microbatches, P pipeline devices, V = S/P stages per device, D data-
 * parallel replicas. Device id = dp_rank * P + pipeline device.
 *
 * Errors unwind with longjmp to tuneSchedRun (as Lua's luaD_throw does): a refused combination
 * or an internal error anywhere in the generator ends the call with its message, and the one
 * schedule state (file-static: calls are not reentrant) is freed there.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/piper.h"
#include "tune/tune.h"

/* Passes of one (stage, microbatch); keep in sync with passJson[] and passLetter[]. */
typedef enum { PASS_F, PASS_B, PASS_BI, PASS_BW } Pass;
static const char *const passJson[] = {"F", "B", "BI", "BW"};
static const char passLetter[] = {'F', 'B', 'I', 'W'};

typedef struct {
  int stage; /* PP tag, 0..S-1 */
  int mb;    /* microbatch, 0..M-1 */
  Pass pass;
  bool withNext; /* dualpipev --ep: one order group with the next op (an overlapped F&B pair,
                    so one microbatch's all-to-all hides behind the other's compute) */
} Op;

typedef struct {
  Op *ops;    /* the device's compute order, owned */
  int n, cap; /* used, allocated */
} OpList;

/* Schedules: tune.h's TuneSched, by their piper-sched names (defined here, with the generator,
 * so that enumerate.c calls this file and not the other way round). */
const char *const tuneSchedNames[TUNE_SCHED_COUNT] = {"gpipe", "1f1b", "interleaved-1f1b",
                                                      "zb-h1", "dualpipev"};

typedef TuneSched Sched;
#define SCHED_GPIPE TUNE_GPIPE
#define SCHED_1F1B TUNE_1F1B
#define SCHED_INTERLEAVED TUNE_INTERLEAVED
#define SCHED_ZBH1 TUNE_ZBH1
#define SCHED_DUALPIPEV TUNE_DUALPIPEV
#define schedNames tuneSchedNames

typedef struct {
  Sched sched;
  int S, M;          /* stages, microbatches */
  int P;             /* pipeline devices */
  int D;             /* data-parallel replicas of every pipeline device */
  int zero;          /* ZeRO level 0..3 */
  int ep;            /* expert parallelism over each stage's D replicas (--ep, 0: none) */
  int T;             /* tensor-parallel group size (--tp), 1 without */
  int C;             /* context-parallel group size (--cp), 1 without */
  int costF, costB;  /* time units of a forward and a whole backward (BI + BW) of one stage */
  int costW;         /* time units of the weight-gradient part BW; BI takes costB - costW */
} Config;

static Config cfg;

/* The most (stage, microbatch) pairs a schedule lists: its orders hold two or three ops a pair. */
enum { MAX_STAGE_MICROBATCHES = 1000000 };

/* ---- errors: unwound to tuneSchedRun ---- */

static jmp_buf failJmp;   /* set by tuneSchedRun */
static char failText[512]; /* the message of the failure being unwound */

/* Ends the current tuneSchedRun with `code` (2: a combination it refuses, 1: a bug). */
static void fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(failText, sizeof failText, fmt, ap);
  va_end(ap);
  longjmp(failJmp, code);
}

/* A combination the schedule cannot run: "error: ..." (what piper-sched exits 2 with). */
#define die(...) fail(2, "error: " __VA_ARGS__)

/* ---- schedule generation: one OpList per pipeline device ---- */

static OpList *lists; /* [P] */

static void push(int device, int stage, int mb, Pass pass) {
  OpList *l = &lists[device];
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->ops = realloc(l->ops, l->cap * sizeof *l->ops);
    if (!l->ops) fail(1, "error: out of memory for the schedule of device %d", device);
  }
  l->ops[l->n++] = (Op){stage, mb, pass, false};
}

/* --ep: the op just pushed on `device` and the next one form one order group. */
static void pairWithNext(int device) {
  if (cfg.ep && lists[device].n) lists[device].ops[lists[device].n - 1].withNext = true;
}

/* The pipeline device that holds stage s. */
static int deviceOf(int s) {
  if (cfg.sched == SCHED_DUALPIPEV) return s < cfg.P ? s : 2 * cfg.P - 1 - s;
  return s % cfg.P;
}

static int imin(int a, int b) { return a < b ? a : b; }

/* gpipe -> F 0..M-1, B 0..M-1 on device s = stage s */
static void genGpipe(int d) {
  for (int i = 0; i < cfg.M; ++i) push(d, d, i, PASS_F);
  for (int i = 0; i < cfg.M; ++i) push(d, d, i, PASS_B);
}

/* 1f1b -> F x w, { F(w+j) B(j) } x (M-w), B x w, with w = min(S-1-s, M) warm-up forwards.
 * zb-h1 is the same sequence with B split into BI and BW, BW(j) running right after BI(j+s):
 * stage s holds s weight gradients back (the last stage S-1 of them), so every stage keeps at
 * most S microbatches in flight, like stage 0 of 1F1B, and the held-back BW passes fill the
 * cool-down where 1F1B waits for backwards. */
static void gen1f1b(int d, bool zeroBubble) {
  int s = d, M = cfg.M, w = imin(cfg.S - 1 - s, M), hold = zeroBubble ? s : 0, nextW = 0;
  for (int i = 0; i < w; ++i) push(d, s, i, PASS_F);
  for (int j = 0; j < M; ++j) {
    if (w + j < M) push(d, s, w + j, PASS_F);
    if (!zeroBubble) {
      push(d, s, j, PASS_B);
      continue;
    }
    push(d, s, j, PASS_BI);
    if (j - nextW >= hold) push(d, s, nextW++, PASS_BW);
  }
  while (zeroBubble && nextW < M) push(d, s, nextW++, PASS_BW);
}

/* interleaved-1f1b -> Megatron's schedule on device d with V = S/P chunks. Virtual microbatch
 * k (0..M*V-1) is chunk (k mod PV) / P (reversed for backward) of microbatch
 * (k / PV) * P + k mod P. Warm-up: 2(P-1-d) + (V-1)P forwards (all of them when M = P),
 * then one forward and one backward per step, then the remaining backwards. */
static void genInterleaved(int d) {
  int P = cfg.P, V = cfg.S / cfg.P, total = cfg.M * V;
  int warm = cfg.M == P ? total : imin(2 * (P - 1 - d) + (V - 1) * P, total);
#define CHUNK(k) (((k) % (P * V)) / P)
#define MB(k) (((k) / (P * V)) * P + (k) % P)
  for (int k = 0; k < total + warm; ++k) {
    /* warm forwards, then (forward k, backward k - warm) pairs, then the last warm backwards */
    if (k < warm) {
      push(d, CHUNK(k) * P + d, MB(k), PASS_F);
    } else if (k < total) {
      int j = k - warm;
      push(d, CHUNK(k) * P + d, MB(k), PASS_F);
      push(d, (V - 1 - CHUNK(j)) * P + d, MB(j), PASS_B);
    } else {
      int j = k - warm; /* cool-down: backward total - warm .. total - 1 */
      push(d, (V - 1 - CHUNK(j)) * P + d, MB(j), PASS_B);
    }
  }
#undef CHUNK
#undef MB
}

/* dualpipev -> DeepSeek's DualPipeV on device d (phase 0: stage d, phase 1: stage 2P-1-d),
 * its eight steps. Each phase runs its forwards and its backwards in microbatch order; a
 * zero-bubble backward emits BI and queues its BW, which a later weight step emits (FIFO). An
 * overlapped F&B pair is F then B. */
typedef struct {
  int d, nextF[2], nextB[2]; /* device; next microbatch per phase */
  Op *queue;                 /* [2M] BW passes queued by zero-bubble backwards, FIFO */
  int head, tail;            /* next to emit, next free */
} DualPipe;

static int dpStage(const DualPipe *q, int phase) {
  return phase == 0 ? q->d : 2 * cfg.P - 1 - q->d;
}
static void dpF(DualPipe *q, int phase) { push(q->d, dpStage(q, phase), q->nextF[phase]++, PASS_F); }
static void dpB(DualPipe *q, int phase, bool zb) {
  int s = dpStage(q, phase), mb = q->nextB[phase]++;
  push(q->d, s, mb, zb ? PASS_BI : PASS_B);
  if (zb) q->queue[q->tail++] = (Op){s, mb, PASS_BW, false};
}
static void dpW(DualPipe *q) {
  if (q->head < q->tail) push(q->d, q->queue[q->head].stage, q->queue[q->head].mb, PASS_BW);
  q->head++; /* an empty queue here leaves a BW out: checkCoverage reports it */
}

static void genDualPipeV(int d) {
  int P = cfg.P, M = cfg.M;
  DualPipe *q = calloc(1, sizeof *q);
  q->d = d;
  q->queue = calloc(2 * (size_t)M, sizeof *q->queue);
  for (int i = 0; i < 2 * (P - 1 - d); ++i) dpF(q, 0);      /* 1: nF0 */
  for (int i = 0; i < d + 1; ++i) dpF(q, 0), dpF(q, 1);     /* 2: nF0F1 */
  for (int i = 0; i < P - 1 - d; ++i)                        /* 3: nB1W1F1, zero bubble */
    dpB(q, 1, true), dpW(q), dpF(q, 1);
  for (int i = 0; i < M - 2 * P + d + 1; ++i) {              /* 4: nF0B1F1B0, overlapped */
    dpF(q, 0), pairWithNext(d), dpB(q, 1, false);
    dpF(q, 1), pairWithNext(d), dpB(q, 0, false);
  }
  for (int i = 0; i < P - 1 - d; ++i)                        /* 5: nB1F1B0 */
    dpB(q, 1, false), dpF(q, 1), dpB(q, 0, false);
  bool zb = false;                                           /* 6: nB1B0, 2nd half zero bubble */
  for (int i = 0; i < d + 1; ++i) {
    if (i == (d + 1) / 2 && d % 2 == 1) zb = true;
    dpB(q, 1, zb);
    if (i == (d + 1) / 2 && d % 2 == 0) zb = true;
    dpB(q, 0, zb);
  }
  for (int i = 0; i < P - 1 - d; ++i) dpW(q), dpB(q, 0, true); /* 7: nWB0 */
  while (q->head < q->tail) dpW(q);                            /* 8: nW */
  free(q->queue);
  free(q);
}

/* ---- checking: every pass once on its device, then an event simulation ---- */

typedef struct {
  int *start;    /* [P][max ops] start time of each op of each device's list */
  int makespan;  /* time the last op ends */
  int *busy;     /* [P] time units of compute per device */
  int *peakAct;  /* [P] max microbatch-stages whose activations are held (F done, grads not) */
  int width;     /* ops per device row in start[] */
} Sim;

static int cost(Pass p) {
  return p == PASS_F ? cfg.costF : p == PASS_B ? cfg.costB
         : p == PASS_BI ? cfg.costB - cfg.costW : cfg.costW;
}

static void internalError(const char *what) __attribute__((noreturn));
static void internalError(const char *what) {
  fail(1, "internal error: the %s schedule for S=%d M=%d P=%d %s; this is a bug in piper-sched, "
       "please report it", schedNames[cfg.sched], cfg.S, cfg.M, cfg.P, what);
}

static const char *opText(Op o) {
  static char buf[4][48];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, 48, "%s(stage %d, mb %d)", passJson[o.pass], o.stage, o.mb);
  return b;
}

/* Each (stage, mb) needs F once and either B once or BI and BW once each, on deviceOf(stage). */
static void checkCoverage(void) {
  int S = cfg.S, M = cfg.M;
  int *count = calloc((size_t)S * M * 4, sizeof *count);
  char what[160];
  for (int d = 0; d < cfg.P; ++d)
    for (int i = 0; i < lists[d].n; ++i) {
      Op o = lists[d].ops[i];
      if (o.stage < 0 || o.stage >= S || o.mb < 0 || o.mb >= M) {
        snprintf(what, sizeof what, "emits %s outside the model", opText(o));
        internalError(what);
      }
      if (deviceOf(o.stage) != d) {
        snprintf(what, sizeof what, "puts %s on device %d, not on device %d that holds the stage",
                 opText(o), d, deviceOf(o.stage));
        internalError(what);
      }
      count[((size_t)o.stage * M + o.mb) * 4 + o.pass]++;
    }
  for (int s = 0; s < S; ++s)
    for (int mb = 0; mb < M; ++mb) {
      int *c = &count[((size_t)s * M + mb) * 4];
      bool ok = c[PASS_F] == 1 && ((c[PASS_B] == 1 && !c[PASS_BI] && !c[PASS_BW]) ||
                                   (!c[PASS_B] && c[PASS_BI] == 1 && c[PASS_BW] == 1));
      if (!ok) {
        snprintf(what, sizeof what, "has stage %d mb %d with F x%d, B x%d, BI x%d, BW x%d "
                 "(want F once and B or BI+BW once)", s, mb, c[PASS_F], c[PASS_B], c[PASS_BI],
                 c[PASS_BW]);
        internalError(what);
      }
    }
  free(count);
}

/* Runs every device's list in order with cost(pass) time units per op and free, instantaneous
 * point-to-point communication: F(s,mb) needs F(s-1,mb); B or BI (s,mb) needs F(s,mb) and the
 * input gradient of (s+1,mb) (its B or BI); BW(s,mb) needs BI(s,mb). A device starts its next
 * op as soon as it is idle and the op's inputs are done. Guarantees: returns only if every op
 * ran; a stuck state is an internal error naming the waiting ops. */
static Sim simulate(void) {
  int S = cfg.S, M = cfg.M, P = cfg.P, width = 0, left = 0;
  for (int d = 0; d < P; ++d) {
    width = lists[d].n > width ? lists[d].n : width;
    left += lists[d].n;
  }
  Sim sim = {calloc((size_t)P * width, sizeof(int)), 0, calloc(P, sizeof(int)),
             calloc(P, sizeof(int)), width};
  /* end time of each (stage, mb)'s forward and input gradient; INT_MAX = not started */
  int *doneF = malloc((size_t)S * M * sizeof(int)), *doneG = malloc((size_t)S * M * sizeof(int));
  int *next = calloc(P, sizeof(int)), *freeAt = calloc(P, sizeof(int)), *held = calloc(P, sizeof(int));
  for (int i = 0; i < S * M; ++i) doneF[i] = doneG[i] = INT_MAX;
  for (int t = 0; left > 0;) {
    for (int d = 0; d < P; ++d) {
      if (freeAt[d] > t || next[d] == lists[d].n) continue;
      Op o = lists[d].ops[next[d]];
      int at = o.stage * M + o.mb;
      bool ready = o.pass == PASS_F ? o.stage == 0 || doneF[at - M] <= t
                   : o.pass == PASS_BW ? doneG[at] <= t
                   : doneF[at] <= t && (o.stage == S - 1 || doneG[at + M] <= t);
      if (!ready) continue;
      sim.start[(size_t)d * width + next[d]++] = t;
      freeAt[d] = t + cost(o.pass);
      sim.busy[d] += cost(o.pass);
      if (o.pass == PASS_F) doneF[at] = freeAt[d];
      if (o.pass == PASS_B || o.pass == PASS_BI) doneG[at] = freeAt[d];
      held[d] += o.pass == PASS_F ? 1 : o.pass == PASS_BI ? 0 : -1;
      if (held[d] > sim.peakAct[d]) sim.peakAct[d] = held[d];
      if (freeAt[d] > sim.makespan) sim.makespan = freeAt[d];
      --left;
    }
    int later = INT_MAX; /* the next time a running op ends */
    for (int d = 0; d < P; ++d)
      if (freeAt[d] > t && freeAt[d] < later) later = freeAt[d];
    if (left > 0 && later == INT_MAX) {
      char what[512];
      int n = snprintf(what, sizeof what, "deadlocks at t=%d:", t);
      for (int d = 0; d < P && n < (int)sizeof what - 64; ++d)
        if (next[d] < lists[d].n)
          n += snprintf(what + n, sizeof what - n, " device %d waits at %s;", d,
                        opText(lists[d].ops[next[d]]));
      what[n - 1] = '\0';
      free(doneF), free(doneG), free(next), free(freeAt), free(held);
      free(sim.start), free(sim.busy), free(sim.peakAct);
      internalError(what); /* exits */
    }
    t = later;
  }
  free(doneF), free(doneG), free(next), free(freeAt), free(held);
  return sim;
}

/* ---- output ---- */

/* Device ids of pipeline device d: replica r, context-parallel member c, tensor-parallel
 * member t is ((r*P + d)*C + c)*T + t (the mesh; T = C = 1 gives the data-parallel layout
 * r*P + d). Tensor-parallel groups are runs of T consecutive ids, context-parallel groups
 * ids T apart (--cp 2 --tp 2: TP [0,1] and [2,3], CP [0,2] and [1,3]). */
static void printDevices(FILE *f, int d) {
  int inner = cfg.T * cfg.C;
  if ((int64_t)cfg.D * inner > PIPER_LIST_EXPLICIT_MAX) { /* a range: four numbers, not D*T*C */
    fprintf(f, "{\"start\":%d,\"count\":%d,\"step\":%d,\"run\":%d}", d * inner, cfg.D,
            cfg.P * inner, inner);
    return;
  }
  fputc('[', f);
  for (int r = 0; r < cfg.D; ++r)
    for (int t = 0; t < inner; ++t)
      fprintf(f, "%s%d", r || t ? "," : "", (r * cfg.P + d) * inner + t);
  fputc(']', f);
}

/* --cp: a shard_sequence directive per stage, replica and tensor-parallel member, over its C
 * devices. */
static void emitShardSequence(FILE *f) {
  for (int s = 0; s < cfg.S && cfg.C > 1; ++s)
    for (int r = 0; r < cfg.D; ++r)
      for (int t = 0; t < cfg.T; ++t) {
        fprintf(f, ",\n  {\"op\":\"shard_sequence\",\"tags\":{\"PP\":%d},\"devices\":[", s);
        for (int c = 0; c < cfg.C; ++c)
          fprintf(f, "%s%d", c ? "," : "", ((r * cfg.P + deviceOf(s)) * cfg.C + c) * cfg.T + t);
        fprintf(f, "]}");
      }
}

/* --tp: a shard_tensor directive per stage, replica and context-parallel member, over its T
 * devices; where the stage's devices are a range (more than PIPER_LIST_EXPLICIT_MAX), one per
 * stage instead, over all of them with group_size T (its runs of T are the same groups), so
 * the strategy and the compile stay the size of the stages, not of the replicas. */
static void emitShardTensor(FILE *f) {
  bool perStage = (int64_t)cfg.D * cfg.T * cfg.C > PIPER_LIST_EXPLICIT_MAX;
  for (int s = 0; s < cfg.S && cfg.T > 1 && perStage; ++s) {
    fprintf(f, ",\n  {\"op\":\"shard_tensor\",\"filter\":{\"PP\":%d,\"TP\":\"*\"},"
               "\"devices\":", s);
    printDevices(f, deviceOf(s));
    fprintf(f, ",\"group_size\":%d,\"stream\":\"tp\"}", cfg.T);
  }
  for (int s = 0; s < cfg.S && cfg.T > 1 && !perStage; ++s)
    for (int r = 0; r < cfg.D; ++r)
      for (int c = 0; c < cfg.C; ++c) {
        fprintf(f, ",\n  {\"op\":\"shard_tensor\",\"filter\":{\"PP\":%d,\"TP\":\"*\"},"
                   "\"devices\":[", s);
        for (int t = 0; t < cfg.T; ++t)
          fprintf(f, "%s%d", t ? "," : "", ((r * cfg.P + deviceOf(s)) * cfg.C + c) * cfg.T + t);
        fprintf(f, "],\"stream\":\"tp\"}");
      }
}

/* The strategy: split, place per stage, replicate per stage (D >= 2), order per device. */
static void emitJson(FILE *f) {
  fprintf(f, "[\n  {\"op\":\"split\",\"filter\":{\"PP\":\"*\"},\"dim_name\":\"mb\","
         "\"num_microbatches\":%d}", cfg.M);
  for (int s = 0; s < cfg.S; ++s) {
    fprintf(f, ",\n  {\"op\":\"place\",\"filter\":{\"PP\":%d},\"devices\":", s);
    printDevices(f, deviceOf(s));
    fprintf(f, ",\"stream\":\"compute\"}");
  }
  emitShardTensor(f);
  emitShardSequence(f);
  const char *tf[] = {"false", "true"};
  /* a context-parallel group sums its parameter gradients as data-parallel replicas do */
  for (int s = 0; s < cfg.S && cfg.D * cfg.C > 1; ++s) {
    fprintf(f, ",\n  {\"op\":\"replicate\",\"filter\":{\"PP\":%d},\"devices\":", s);
    printDevices(f, deviceOf(s));
    fprintf(f, ",\"reduce_stream\":\"dp\",\"gather_stream\":\"dp\",\"shard_optim\":%s,"
           "\"shard_grads\":%s,\"shard_params\":%s}",
           tf[cfg.zero >= 1], tf[cfg.zero >= 2], tf[cfg.zero >= 3]);
  }
  for (int s = 0; s < cfg.S && cfg.ep; ++s) { /* the experts over the stage's replicas */
    fprintf(f, ",\n  {\"op\":\"shard\",\"filter\":{\"PP\":%d,\"EP\":\"*\"},\"devices\":", s);
    printDevices(f, deviceOf(s));
    fprintf(f, ",\"stream\":\"ep\"}");
  }
  for (int d = 0; d < cfg.P; ++d) {
    fprintf(f, ",\n  {\"op\":\"order\",\"filters\":[");
    for (int i = 0; i < lists[d].n; ++i) {
      Op o = lists[d].ops[i];
      fprintf(f, "%s[{\"PP\":%d,\"mb\":%d,\"PASS\":\"%s\"}", i ? "," : "", o.stage, o.mb,
             passJson[o.pass]);
      for (; o.withNext && i + 1 < lists[d].n; o = lists[d].ops[++i]) /* a pair: one group */
        fprintf(f, ",{\"PP\":%d,\"mb\":%d,\"PASS\":\"%s\"}", lists[d].ops[i + 1].stage,
               lists[d].ops[i + 1].mb, passJson[lists[d].ops[i + 1].pass]);
      fprintf(f, "]");
    }
    fprintf(f, "]}");
  }
  fprintf(f, "\n]\n");
}

/* Stage-prefixed labels ("3F0": stage 3, forward, mb 0) when a device holds several stages. */
static int label(char *buf, size_t size, Op o) {
  if (cfg.S > cfg.P) return snprintf(buf, size, "%d%c%d", o.stage, passLetter[o.pass], o.mb);
  return snprintf(buf, size, "%c%d", passLetter[o.pass], o.mb);
}

/* Idle time per device the PIPER.md table predicts, for the schedule and cost model. */
static long analyticBubble(const char **formula) {
  long F = cfg.costF, B = cfg.costB, W = cfg.costW;
  switch (cfg.sched) {
  case SCHED_GPIPE:
  case SCHED_1F1B: *formula = "(S-1)(F+B)"; return (long)(cfg.S - 1) * (F + B);
  case SCHED_INTERLEAVED: *formula = "(P-1)(F+B), F and B per stage"; return (long)(cfg.P - 1) * (F + B);
  case SCHED_ZBH1: *formula = "(S-1)(F+B-2W) (for M >= S)"; return (long)(cfg.S - 1) * (F + B - 2 * W);
  case SCHED_DUALPIPEV:
    /* DeepSeek's bound runs an F&B pair as one block; the simulation lets the F of a pair
     * start before the B's gradient arrives, so it can come out below the bound. */
    *formula = "(S/2-1)(F&B+B-3W) with F&B = F+B, an upper bound";
    return (long)(cfg.P - 1) * (F + B + B - 3 * W);
  case TUNE_SCHED_COUNT: break; /* build refuses it */
  }
  return 0;
}

static void emitSimulation(FILE *f, const Sim *sim) {
  int cw = 0; /* cell width: longest label + 1 */
  char lab[32];
  for (int d = 0; d < cfg.P; ++d)
    for (int i = 0; i < lists[d].n; ++i) {
      int n = label(lab, sizeof lab, lists[d].ops[i]) + 1;
      cw = n > cw ? n : cw;
    }
  fprintf(f, "%s: S=%d stages on P=%d pipeline devices (x%d DP), M=%d microbatches; cost F=%d B=%d "
         "(BI=%d + BW=%d) time units\n", schedNames[cfg.sched], cfg.S, cfg.P, cfg.D, cfg.M,
         cfg.costF, cfg.costB, cfg.costB - cfg.costW, cfg.costW);
  fprintf(f, "cells: %s<pass><mb>, pass F forward, B backward, I input gradient (BI), W weight "
         "gradient (BW); '-' one more time unit of the op, '.' idle\n",
         cfg.S > cfg.P ? "<stage>" : "");
  long idle = 0;
  bool rows = sim->makespan <= 20000; /* beyond that a row is no picture, only megabytes */
  size_t size = (size_t)sim->makespan * cw + 1;
  char *row = rows ? malloc(size) : NULL; /* one cell of cw characters per time unit */
  if (!rows) fprintf(f, "(timeline omitted: makespan %d time units)\n", sim->makespan);
  for (int d = 0; d < cfg.P; ++d) {
    idle += sim->makespan - sim->busy[d];
    if (!rows) continue;
    int t = 0, n = 0;
    for (int i = 0; i < lists[d].n; ++i) {
      Op o = lists[d].ops[i];
      for (int start = sim->start[(size_t)d * sim->width + i]; t < start; ++t)
        n += snprintf(row + n, size - n, " %-*s", cw - 1, ".");
      label(lab, sizeof lab, o);
      n += snprintf(row + n, size - n, " %-*s", cw - 1, lab);
      for (int k = 1; k < cost(o.pass); ++k)
        n += snprintf(row + n, size - n, " %.*s", cw - 1, "------------------------------");
      t += cost(o.pass);
    }
    for (; t < sim->makespan; ++t) n += snprintf(row + n, size - n, " %-*s", cw - 1, ".");
    while (n > 0 && row[n - 1] == ' ') row[--n] = '\0';
    fprintf(f, "device %d:%s\n", d, row);
  }
  free(row);
  for (int d = 0; d < cfg.P; ++d)
    fprintf(f, "device %d: busy %d, idle %d, peak activations held %d (microbatch-stages)\n", d,
           sim->busy[d], sim->makespan - sim->busy[d], sim->peakAct[d]);
  long total = (long)cfg.P * sim->makespan;
  const char *formula = "";
  long bubble = analyticBubble(&formula);
  long work = (long)(cfg.S / cfg.P) * cfg.M * (cfg.costF + cfg.costB); /* per device */
  fprintf(f, "makespan %d\n", sim->makespan);
  fprintf(f, "bubble: simulated idle/total = %ld/%ld = %.4f; analytic %s = %ld per device: "
         "%ld/%ld = %.4f\n", idle, total, (double)idle / total, formula, bubble, bubble,
         bubble + work, (double)bubble / (bubble + work));
}

/* Checks the arguments (a combination it refuses is an error naming the flag), generates every
 * pipeline device's order, applies --test-swap, checks coverage and the simulation. */
static void build(const TuneSchedArgs *args) {
  int devices = args->devices;
  if ((int)args->sched < 0 || args->sched >= TUNE_SCHED_COUNT)
    fail(2, "error: schedule %d is none of piper-sched's", (int)args->sched);
  cfg = (Config){.sched = args->sched, .S = args->S, .M = args->M, .D = args->D, .zero = args->zero,
                 .ep = args->ep, .T = args->T, .C = args->C > 1 ? args->C : 1,
                 .costF = args->costF, .costB = args->costB, .costW = args->costW};
  const char *name = schedNames[cfg.sched];
  if (!cfg.S) die("%s needs --stages S (the number of PP tags in the model)", name);
  if (!cfg.M) die("%s needs --microbatches M", name);
  if (cfg.S < 2 && cfg.sched != SCHED_GPIPE)
    die("%s needs --stages >= 2, got %d; for one stage use gpipe (plain microbatching)", name,
        cfg.S);
  if (cfg.zero > 3) die("--zero %d is not a ZeRO level; use 0, 1, 2 or 3", cfg.zero);
  if (cfg.zero && (int64_t)cfg.D * cfg.C < 2)
    die("--zero %d shards over data-parallel replicas: add --dp D with D >= 2, or use --zero 0",
        cfg.zero); /* or a context-parallel group: --cp C shards over its C devices too */
  if (cfg.ep && cfg.ep != cfg.D)
    die("--ep %d: the experts are split over each stage's data-parallel replicas, so --ep must "
        "equal --dp (%d)", cfg.ep, cfg.D);
  if (cfg.ep == 1) cfg.ep = 0; /* one replica: nothing to split */
  /* context parallelism: what the shard_sequence pass composes with so far */
  /* the shard pass cuts the stage's list by one kind of group; with both, the experts' owners
   * would be neither the rings nor the TP groups */
  if (cfg.C > 1 && cfg.T > 1 && cfg.ep)
    die("--cp with both --tp and --ep is not supported yet; use two of them");
  bool splitsBackward = cfg.sched == SCHED_ZBH1 || cfg.sched == SCHED_DUALPIPEV;
  if (splitsBackward && cfg.costW < 1)
    die("%s splits the backward into BI and BW: --cost needs 1 <= W < B", name);

  switch (cfg.sched) {
  case SCHED_INTERLEAVED:
    if (!devices)
      die("%s needs --devices P, the pipeline devices (--stages %d must be a multiple of P)",
          name, cfg.S);
    if (cfg.S % devices)
      die("interleaved-1f1b: --stages %d is not a multiple of --devices %d; every device holds "
          "S/P stages", cfg.S, devices);
    if (cfg.M % devices)
      die("interleaved-1f1b: --microbatches %d is not a multiple of --devices %d (Megatron "
          "runs microbatches in groups of P); round M to a multiple of P", cfg.M, devices);
    cfg.P = devices;
    break;
  case SCHED_DUALPIPEV:
    if (cfg.S % 2)
      die("dualpipev needs an even --stages (two per device, V shape), got %d", cfg.S);
    cfg.P = cfg.S / 2;
    if (cfg.M < 2 * cfg.P)
      die("dualpipev needs --microbatches >= 2 * devices = %d (S/2 = %d devices), got %d",
          2 * cfg.P, cfg.P, cfg.M);
    break;
  default: cfg.P = cfg.S;
  }
  if (devices && devices != cfg.P)
    die("%s puts its stages on %d pipeline devices; --devices %d does not match (leave it out)",
        name, cfg.P, devices);
  /* in double: exact for every product of four counts up to 2^20 that stays below 2^53 */
  double total = (double)cfg.P * cfg.D * cfg.T * cfg.C;
  if (total > PIPER_MAX_DEVICES)
    die("%d pipeline devices x %d (--dp) x %d (--tp) x %d (--cp) is %.0f devices, more than "
        "Piper handles: at most %d (2^20)", cfg.P, cfg.D, cfg.T, cfg.C, total, PIPER_MAX_DEVICES);
  if ((int64_t)cfg.S * cfg.M > MAX_STAGE_MICROBATCHES)
    die("%d stages x %d microbatches is %lld (stage, microbatch) pairs, more than piper-sched "
        "schedules: at most %d (each device's order lists its stages' pairs)", cfg.S, cfg.M,
        (long long)cfg.S * cfg.M, MAX_STAGE_MICROBATCHES);

  lists = calloc(cfg.P, sizeof *lists);
  if (!lists) fail(1, "error: out of memory for %d pipeline devices", cfg.P);
  for (int d = 0; d < cfg.P; ++d) {
    switch (cfg.sched) {
    case SCHED_GPIPE: genGpipe(d); break;
    case SCHED_1F1B: gen1f1b(d, false); break;
    case SCHED_ZBH1: gen1f1b(d, true); break;
    case SCHED_INTERLEAVED: genInterleaved(d); break;
    case SCHED_DUALPIPEV: genDualPipeV(d); break;
    case TUNE_SCHED_COUNT: break; /* refused above */
    }
  }
  const int *swap = args->swap;
  if (swap[0] >= 0) {
    OpList *l = swap[0] < cfg.P ? &lists[swap[0]] : NULL;
    if (!l || swap[1] < 0 || swap[2] < 0 || swap[1] >= l->n || swap[2] >= l->n)
      die("--test-swap %d,%d,%d is outside the schedule", swap[0], swap[1], swap[2]);
    Op o = l->ops[swap[1]];
    l->ops[swap[1]] = l->ops[swap[2]], l->ops[swap[2]] = o;
  }
}

int tuneSchedRun(const TuneSchedArgs *args, TuneSchedOutput what, FILE *out, char *why,
                 size_t whySize) {
  static Sim sim; /* static: its value must survive the longjmp (C11 7.13.2.1) */
  sim = (Sim){0};
  lists = NULL;
  int code = setjmp(failJmp);
  if (code == 0) {
    build(args);
    checkCoverage();
    sim = simulate();
    if (what == TUNE_SCHED_TIMELINE) emitSimulation(out, &sim);
    else emitJson(out);
  } else {
    snprintf(why, whySize, "%s", failText);
  }
  free(sim.start), free(sim.busy), free(sim.peakAct);
  for (int d = 0; lists && d < cfg.P; ++d) free(lists[d].ops);
  free(lists);
  lists = NULL;
  return code;
}
