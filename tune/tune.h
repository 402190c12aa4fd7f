/* piper-tune's pieces, in pipeline order (tools/piper-tune.c is the driver):
 *   enumerate.c  the model's tags -> candidate strategies for N devices, each a Piper JSON text
 *                that piper-sched's generator (sched.c, called in process) writes, plus
 *                bucket sizes
 *   sched.c      the pipeline schedules' generator and check (piper-sched is its command line)
 *   trace.c      a simulated step as a text timeline and a predicted Chrome/Perfetto trace
 *   compile.c    one candidate through piper's own passes, in process: strategy passes,
 *                extract, verify-plan (the plans, or the reason it is dropped), then the
 *                lowering, whose memory plan gives each plan's exact arena
 *   simulate.c   predicted step time on the extracted plans themselves: every unit's (device's
 *                or role's) ops in order, transfers on their streams, waits, matched sends and
 *                receives, collectives that complete when their whole group has issued them
 *   profile.c    the costs the simulation uses: kernel time = f(op, work) per op kind, transfer
 *                time = alpha + beta * bytes per kind and group size; read from / written to a
 *                JSON profile, a built-in rough default, and --calibrate's measurements
 * Prefix: `tune` (file-private functions are static). */
#ifndef PIPER_TUNE_TUNE_H
#define PIPER_TUNE_TUNE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "piper/ops.h" /* PIPER_TDAG_OP_COUNT: the kernel costs are by op id */

/* ---- the model's tags (enumerate.c) ---- */
typedef struct {
  int stages;     /* 1 + the largest PP tag (1 when no op has one) */
  bool tagged;    /* some op carries a `tags` dictionary */
  bool tp;        /* some op is tagged TP (tensor-parallel blocks) */
  bool ep;        /* some op is tagged EP (experts) */
  int64_t batch;  /* rows of the global batch (dim 0 of the first tdag.input), 0 if none */
} TuneModel;

/* Reads the tags piper-gen puts on the forward graph's ops. */
TuneModel tuneReadModel(MlirOperation module);

/* ---- candidates (enumerate.c) ---- */
/* Schedules, in piper-sched's names; keep tuneSchedNames (sched.c) in sync. */
typedef enum {
  TUNE_GPIPE,
  TUNE_1F1B,
  TUNE_INTERLEAVED,
  TUNE_ZBH1,
  TUNE_DUALPIPEV,
  TUNE_SCHED_COUNT
} TuneSched;
extern const char *const tuneSchedNames[TUNE_SCHED_COUNT]; /* sched.c */

typedef struct {
  TuneSched sched;
  int S, P;        /* pipeline stages (the model's PP tags), pipeline devices */
  int M;           /* microbatches */
  int D, T;        /* data-parallel replicas, tensor-parallel group size */
  int zero;        /* ZeRO level 0..3 (D >= 2) */
  bool ep;         /* experts sharded over the D replicas */
  double bucketMB; /* replicate's bucket_size; < 0: the default (not written) */
  char name[96];   /* short label for the table: "PP2 1f1b M4", "DP2 Z1 b4" ... */
  char *json;      /* the strategy text (owned), NULL until generated */
} TuneCandidate;

typedef struct {
  TuneCandidate *items; /* owned */
  size_t n, cap;        /* used, allocated */
} TuneCandidates;

/* piper-sched's schedule generator (sched.c), called in process. */
typedef struct {
  TuneSched sched;
  int S, M;               /* stages, microbatches */
  int devices;            /* pipeline devices (--devices); 0: the schedule's own */
  int D, T;               /* data-parallel replicas (>= 1), tensor-parallel group (>= 1) */
  int C;                  /* context-parallel group (--cp; 0 or 1: none) */
  int zero, ep;           /* ZeRO level 0..3; experts over the D replicas (0: none, else D) */
  int costF, costB, costW; /* the check's unit costs: forward, whole backward, its BW part */
  int swap[3];            /* --test-swap D,I,J ({-1,..}: none): for testing the check */
} TuneSchedArgs;
typedef enum { TUNE_SCHED_JSON, TUNE_SCHED_TIMELINE } TuneSchedOutput;
/* Checks the combination, generates and checks the schedule and writes to `out` the Piper JSON
 * strategy or the unit-cost timeline (piper-sched --simulate). 0; 2 with "error: ..." in why
 * for a combination it refuses (naming the flag); 1 with "internal error: ..." for a schedule
 * that fails its own check (a bug). Not reentrant. */
int tuneSchedRun(const TuneSchedArgs *args, TuneSchedOutput what, FILE *out, char *why,
                 size_t whySize);

/* Every candidate for `devices` devices the model's tags allow. */
void tuneEnumerate(const TuneModel *m, int devices, TuneCandidates *out);
/* Runs piper-sched's generator (tuneSchedRun) for `c` and keeps its JSON in c->json, with
 * bucket_size added to the replicate directives. false with a reason in `why` (piper-sched's
 * own message) when the generator refuses the combination. */
bool tuneGenerate(TuneCandidate *c, char *why, size_t whySize);
void tuneCandidatesFree(TuneCandidates *cs);

/* ---- profile (profile.c) ---- */
/* Kinds of transfer, keep tuneCommNames in sync. */
typedef enum {
  TUNE_P2P,
  TUNE_ALL_REDUCE,
  TUNE_REDUCE_SCATTER,
  TUNE_ALL_GATHER,
  TUNE_ALL_TO_ALL,
  TUNE_COMM_COUNT
} TuneCommKind;
extern const char *const tuneCommNames[TUNE_COMM_COUNT];

enum { TUNE_MAX_GROUP = 64 }; /* group sizes the profile keeps separately; larger use the last */

typedef struct {
  double fixedNs;   /* per call: launch, loop set-up */
  double nsPerWork; /* per unit of tuneWorkOf */
  bool set;         /* measured or given (else the class default applies) */
} TuneKernelCost;

typedef struct {
  double alphaNs;    /* latency of one transfer */
  double betaNsPerB; /* per byte of the op's buffer */
  bool set;
} TuneCommCost;

typedef struct {
  TuneKernelCost kernel[PIPER_TDAG_OP_COUNT];   /* by PiperOpId */
  TuneKernelCost matmulDefault, elemDefault;    /* kinds without their own entry */
  TuneCommCost comm[TUNE_COMM_COUNT][TUNE_MAX_GROUP + 1]; /* [kind][group size]; [k][0] unused */
  char source[256];                             /* "built-in default (rough)" or the file */
} TuneProfile;

/* The built-in profile: rough figures for one core of a 2020s x86 CPU and Open MPI over shared
 * memory (documented in docs/schedules-and-tune.md); measure with --calibrate for real use. */
void tuneProfileDefault(TuneProfile *p);
/* Reads a profile --calibrate wrote (entries it lacks keep the default); false after a message
 * naming the file and what is wrong. */
bool tuneProfileRead(TuneProfile *p, const char *path);
bool tuneProfileWrite(const TuneProfile *p, FILE *out);
/* Work units of a tdag op: 2*M*N*K multiply-adds for the matmul kinds, elements touched for the
 * rest; *isMatmul says which class. 0 for ops with no kernel. */
double tuneWorkOf(MlirOperation op, bool *isMatmul);
/* (query, key) pairs the CPU's blocked causal attention computes for a sequence of T, per
 * batch row and head (runtime/kernels/cpu_attention.c: whole 64 x 64 blocks up to the
 * diagonal): T^2 up to one block, about T^2 / 2 for long T. */
double tuneAttentionPairs(int64_t T);
/* Rows a tdag.moe_experts(_grad_*) op's kernels run over all its local experts, with tokens
 * spread evenly over the experts: its R capacity rows times max(1/G, K/E) (the rest is
 * padding). 0 for another op. */
double tuneMoeRoutedRows(MlirOperation op);
double tuneKernelNs(const TuneProfile *p, MlirOperation op);
double tuneCommNs(const TuneProfile *p, TuneCommKind kind, int groupSize, double bytes);
/* Work the runtime does outside the plan's tdag ops, at the elementwise class rate: a pass
 * touching `elements` (the gradient norm's sums of squares), and a copy of `elements` (read
 * and written: the all-gathers' shard in and parameter back). 0 for nothing. */
double tuneElementwiseNs(const TuneProfile *p, double elements);
double tuneCopyNs(const TuneProfile *p, double elements);

/* --calibrate: kernels of `module` (a training graph) at a few row counts, and, when more than
 * one MPI rank runs this, the transfers at a few sizes. Returns 0 on success. */
int tuneCalibrate(MlirOperation trainingModule, TuneProfile *p, bool verbose);
/* The best of 11 runs of op's CPU kernel (libpiper_rt) on `frac` of its rows, in ns, on
 * zeroed buffers of its shapes (MoE expert ids and counts spread evenly over the experts);
 * -1 for a kind --calibrate cannot call. In calibrate.c (piper-tune links libpiper_rt). */
double tuneTimeKernel(MlirOperation op, double frac);
/* piper-tune --strategy S --explain: compiles `json` on `training` and prints a table per
 * kernel kind of the plan: calls, the profile's predicted time, and the time of each op's
 * kernel run alone at its plan shape (tuneTimeKernel), both summed over the devices (a
 * role's ops count once per replica). 0, or 1 after an error naming `what`. */
int tuneExplain(const char *tool, MlirOperation training, const char *json,
                const TuneProfile *p, const char *what, FILE *out);

/* ---- simulation (simulate.c) ---- */
typedef struct {
  double stepNs;        /* predicted step time: the last unit's end */
  double bubble;        /* idle compute waiting for peers, fraction of devices x step */
  double exposedComm;   /* compute blocked on transfers in progress, same fraction */
  int units;            /* plans simulated (devices, or roles for replica 0) */
  char error[256];      /* non-empty: the simulation could not finish (a stuck plan) */
} TuneSimResult;

/* Simulates one step of the extracted (and verified) plan `module`. */
TuneSimResult tuneSimulate(MlirOperation module, const TuneProfile *p);

/* ---- the simulated step as a trace (simulate.c records, trace.c writes) ---- */
/* One span of a unit, the way the runtime's --trace records it (runtime/trace.c): a compute
 * span is a run of consecutive ops of one node (piperNodeLabel), closed by a comm.wait; a
 * transfer is one span per party on its stream, from its issue to its end. */
typedef struct {
  int unit;           /* plan unit (device_<d> or role_<p>) */
  int stream;         /* index into TuneTrace.streams; 0 is "compute" */
  bool comm;          /* a transfer (else a compute span) */
  int kind;           /* transfer: 0 send, 1 recv, then all_reduce, reduce_scatter,
                         all_gather, all_to_all (runtime/trace.c's op_name order) */
  int64_t peer, peerStride; /* send/recv: the peer device (+ k * peerStride for replica k) */
  int group;          /* collective: its group's number (lowering's numbering, TuneTrace) */
  double bytes;       /* transfer: the whole buffer */
  double start, end;  /* ns from the step's start */
  double wait0, wait1;/* transfer: its comm.wait on this unit, ns (-1: not waited in the plan) */
  int xfer;           /* transfer: the simulation's transfer (internal) */
  char name[112];     /* compute: the node label ("F PP=0 layer=1 mb=0") */
} TuneEvent;

typedef struct {
  TuneEvent *ev;            /* owned */
  size_t n, cap;
  char **streams;           /* owned names, [0] = "compute": the lowering's stream numbering */
  size_t nStreams, capStreams;
  const void **groups;      /* group keys in the lowering's numbering (internal) */
  int64_t *groupStride;
  size_t nGroups, capGroups, capGroupStride;
  int64_t (*units)[3];      /* per unit: first device, stride, devices it stands for */
  int nUnits;
  int64_t devices;          /* the plan's device count (pids 0..devices-1) */
  bool roles;               /* the plan is per role (units stand for several devices) */
  double stepNs;            /* the simulated step */
} TuneTrace;

/* tuneSimulate that also records every span into `trace` (zeroed by the caller; free it with
 * tuneTraceFree). */
TuneSimResult tuneSimulateTraced(MlirOperation module, const TuneProfile *p, TuneTrace *trace);
void tuneTraceFree(TuneTrace *t);
/* The trace as a Chrome/Perfetto JSON file in runtime/trace.c's format (pid = device, tid =
 * stream, the same span names), every device of a role expanded; false on a write error. */
bool tuneTraceWrite(const TuneTrace *t, const TuneSimResult *r, const char *profileSource,
                    FILE *out);
/* A text timeline: one row of `width` columns per unit and stream (the pass letter of the
 * span covering each column's middle, '=' a transfer in flight, '.' idle),
 * then the step, bubble and exposed communication. */
void tuneTimelinePrint(const TuneTrace *t, const TuneSimResult *r, int width, FILE *out);
/* Compiles the strategy `json` on `training` (tuneCompilePlan), simulates it, prints the
 * timeline to stdout and, with traceOut, writes the predicted trace there. `what` names the
 * strategy in errors (to stderr, after "`tool`: error: "). 0, or 1 after the error. */
int tuneSimulateStrategy(const char *tool, MlirOperation training, const char *json,
                         const TuneProfile *profile, const char *what, const char *traceOut);

/* ---- compiling a candidate (compile.c) ---- */
typedef enum {
  TUNE_OK,
  TUNE_DROP_SCHEDULE, /* piper-sched refuses the combination */
  TUNE_DROP_COMPILE,  /* a strategy pass refuses it (batch not divisible, heads, ...) */
  TUNE_DROP_VERIFY,   /* verify-plan rejects the plan */
  TUNE_DROP_MEMORY,   /* over --memory */
  TUNE_DROP_COUNT
} TuneStatus;
extern const char *const tuneStatusNames[TUNE_DROP_COUNT];

typedef struct {
  TuneStatus status;
  char why[512];        /* the first diagnostic, or the memory figures */
  int64_t peakBytes;    /* max over devices of params + optim + arena */
  int64_t arenaBytes;   /* max over devices of the planned arena */
  int64_t paramBytes, optimBytes; /* on the device with the peak */
  TuneSimResult sim;
} TuneResult;

/* MODEL.mlir ("-": stdin) parsed, verified and through piper-compile's training passes
 * (--piper-fuse, autodiff: tuneBuildTraining): the training graph every candidate is compiled
 * from; a null module after the diagnostics (printed to stderr). */
MlirModule tuneLoadTraining(MlirContext ctx, const char *path);
/* A parsed forward graph `module` through those passes; false after the diagnostics. */
bool tuneBuildTraining(MlirOperation module);
/* A copy of `trainingModule` through the strategy `json`'s passes (piperStrategyPasses, as
 * piper-compile --strategy runs them), extract and verify-plan: the plans (owned by the
 * caller), or a null operation with *status and the first diagnostic in `why`. */
MlirOperation tuneCompilePlan(MlirOperation trainingModule, const char *json, TuneStatus *status,
                              char *why, size_t whySize);
/* tuneCompilePlan for a strategy the user named (`what`, e.g. its file): the plans, or a null
 * operation after "TOOL: error: WHAT does not compile (why): ..." on stderr. */
MlirOperation tuneCompileOrReport(const char *tool, MlirOperation trainingModule,
                                  const char *json, const char *what);
/* Compiles `c` on a copy of `trainingModule` (autodiff already run) and simulates it. */
TuneResult tuneEvaluate(MlirOperation trainingModule, const TuneCandidate *c,
                        const TuneProfile *p, int64_t memoryBytes);

#endif
