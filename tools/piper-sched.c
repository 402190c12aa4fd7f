/* piper-sched: pipeline schedules as Piper JSON strategy files (the command line of the
 * generator in tune/sched.c, which piper-tune calls in process).
 *
 * `piper-sched SCHEDULE --stages S --microbatches M ...` prints the directive list that makes a
 * model annotated with PP = 0..S-1 (piper-gen gpt --stages S) train under SCHEDULE: one split
 * into M microbatches, a place (and with --dp a replicate) per stage, and one order directive
 * per pipeline device listing that device's compute sequence, checked before it is printed (a
 * schedule that would deadlock is an internal error, exit 1, never output). --simulate prints
 * the check's unit-cost timeline with the bubble fraction next to the analytic one; with
 * --model it compiles the strategy on the model and prints piper-tune's simulation of the
 * compiled plans instead (tune/simulate.c), and --trace-out writes that as a predicted trace.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/checked.h"
#include "piper/piper.h"
#include "tune/tune.h"

static void usage(FILE *out) {
  fprintf(out,
      "usage: piper-sched SCHEDULE --stages S --microbatches M [--devices P] [--dp D]\n"
      "                   [--tp T] [--cp C] [--zero Z] [--ep N] [--cost F,B,W] [--simulate]\n"
      "                   [--model MODEL.mlir [--profile FILE] [--trace-out FILE]]\n"
      "Prints a Piper JSON strategy (a list of directives) that runs a model annotated with\n"
      "PP = 0..S-1 (piper-gen gpt --stages S) under a pipeline schedule.\n"
      "\n"
      "SCHEDULE:\n"
      "  gpipe             all forwards (mb 0..M-1), then all backwards (mb 0..M-1); P = S.\n"
      "                    S = 1 is allowed: plain microbatching (with --dp: pure DP).\n"
      "  1f1b              one-forward-one-backward: stage s warms up with min(S-1-s, M)\n"
      "                    forwards, then alternates F and B; P = S.\n"
      "  interleaved-1f1b  Megatron's interleaved 1F1B: needs --devices P, S a multiple of P,\n"
      "                    M a multiple of P; stage s on pipeline device s mod P.\n"
      "  zb-h1             zero bubble ZB-H1: 1F1B with the backward split into BI (input\n"
      "                    gradient) and BW (weight gradient); stage s defers s BW passes to\n"
      "                    fill the cool-down bubble (in-flight microbatches <= S, as 1F1B); P = S.\n"
      "  dualpipev         DeepSeek's DualPipeV (cut-in-half DualPipe): P = S/2 devices, S even,\n"
      "                    M >= 2P; V shape: stage s on device s for s < P, on 2P-1-s otherwise.\n"
      "\n"
      "options:\n"
      "  --stages S        pipeline stages (the PP tags 0..S-1)\n"
      "  --microbatches M  microbatches per step (the split's num_microbatches)\n"
      "  --devices P       pipeline devices; required by interleaved-1f1b, else must be the\n"
      "                    schedule's own (S, or S/2 for dualpipev)\n"
      "  --dp D            replicate every pipeline device D times (default 1); device id =\n"
      "                    dp_rank * P + pipeline device, e.g. PP2xDP2: stage 0 on [0,2]\n"
      "  --tp T            tensor parallelism: every pipeline device replica becomes a group\n"
      "                    of T devices (a shard_tensor directive per stage and replica over\n"
      "                    the TP-tagged blocks); device id = (dp_rank * P + pipeline device)\n"
      "                    * T + tp_rank, e.g. PP2xTP2: stage 0 on [0,1], stage 1 on [2,3]\n"
      "  --cp C            context parallelism: every pipeline device becomes a group of C\n"
      "                    devices holding 2 of the sequence's 2C chunks each (a\n"
      "                    shard_sequence directive per stage and replica, and a replicate\n"
      "                    over the stage's devices that sums the gradients); device id =\n"
      "                    (dp_rank * P + pipeline device) * C + cp_rank, e.g. CP2xDP2:\n"
      "                    groups [0,1] and [2,3]; --zero shards over all the stage's devices;\n"
      "                    with --tp T: ((dp_rank * P + pipeline device) * C + cp_rank) * T\n"
      "                    + tp_rank (CP2xTP2: TP [0,1] [2,3], rings [0,2] [1,3]); with --ep\n"
      "                    the experts split over the rings; not yet with --tp and --ep\n"
      "  --zero Z          0: all-reduce gradients (default); 1: shard optimizer state;\n"
      "                    2: and gradients (reduce-scatter); 3: and parameters (all-gather);\n"
      "                    Z >= 1 needs --dp >= 2 (or --cp >= 2)\n"
      "  --ep N            expert parallelism: a shard directive per stage splits the experts\n"
      "                    (tag EP, piper-gen qwen3-moe) over its N = D replicas; with\n"
      "                    dualpipev each overlapped F&B pair is one order group of two\n"
      "                    filters, so one microbatch's all-to-all hides behind the other's\n"
      "                    compute. With --tp T the shard lists the stage's D*T devices: the\n"
      "                    experts split over the D replicas (both members of a group own\n"
      "                    its experts; the MoE block runs replicated in the group), each\n"
      "                    all-to-all between the members with the same tp_rank\n"
      "  --cost F,B,W      time units for the simulation (default 1,2,1): F a forward, B a whole\n"
      "                    backward, W its weight-gradient part (BI takes B-W)\n"
      "  --simulate        print the simulated timeline and bubble instead of the JSON\n"
      "                    (time units of --cost; with --model, piper-tune's simulation)\n"
      "  --model FILE      with --simulate: compile the strategy on this model (piper-gen's\n"
      "                    output) as piper-compile --strategy does and simulate the compiled\n"
      "                    plans with piper-tune's simulator (tune/simulate.c): every device's\n"
      "                    ops and transfers on their streams, costs from --profile\n"
      "  --profile FILE    with --model: costs measured by piper-tune --calibrate (default:\n"
      "                    piper-tune's built-in rough profile)\n"
      "  --trace-out FILE  with --model: also write the simulated step as a Chrome/Perfetto\n"
      "                    trace in the runtime's --trace format (same process, thread and\n"
      "                    span names), to open next to a measured one\n"
      "  --test-swap D,I,J swap passes I and J (0-based) of pipeline device D's order before\n"
      "                    the check: for testing that the check catches a deadlock\n"
      "  --help            this text\n"
      "\n"
      "JSON: [split, place per stage, shard_tensor per stage and replica (only with --tp >= 2),\n"
      "shard_sequence per stage (only with --cp >= 2), replicate per stage (only with --dp\n"
      "or --cp >= 2), order per pipeline device]. An order lists\n"
      "one single-filter group per compute pass, e.g.\n"
      "[[{\"PP\":0,\"mb\":0,\"PASS\":\"F\"}],[{\"PP\":0,\"mb\":1,\"PASS\":\"F\"}],...]: each group runs\n"
      "before the next. PASS is F, B (whole backward), BI or BW. Replicas share the order.\n"
      "A stage's devices past 64 are a range {\"start\":A,\"count\":N,\"step\":K,\"run\":R}\n"
      "(ids A + i*K + j, j < R), and its shard_tensor one directive with \"group_size\": T.\n"
      "Counts and their product of devices go up to 2^20 = 1048576.\n"
      "The schedule is simulated before it is printed (every pass once, on its stage's device,\n"
      "no deadlock); a failure there is a bug in piper-sched: exit 1.\n"
      "\n"
      "example:\n"
      "  piper-gen gpt --stages 4 > gpt.mlir\n"
      "  piper-sched 1f1b --stages 4 --microbatches 8 --dp 2 --zero 1 > 1f1b.json\n"
      "  piper-sched 1f1b --stages 4 --microbatches 8 --simulate   # timeline, bubble 3/11\n"
      "  piper-sched 1f1b --stages 4 --microbatches 8 --simulate --model gpt.mlir \\\n"
      "      --trace-out predicted.json     # compare: gpt binary --trace measured.json\n"
      "\n"
      "exit status: 0 ok, 1 internal error, 2 bad arguments.\n");
}

/* ---- errors ---- */

/* A bad command line: one line saying what is wrong and what to do, exit 2. */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "piper-sched: error: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

/* The largest count any flag takes: 2^20, a million devices as data-parallel replicas, or as
 * many stages or microbatches (tuneSchedRun bounds their products) */
enum { FLAG_MAX = PIPER_MAX_DEVICES };

/* A flag's integer value in [min, FLAG_MAX]; anything else is an error naming the flag and
 * the range. */
static int intFlag(const char *flag, const char *value, int min) {
  int64_t v;
  if (!piperParseI64(value, min, FLAG_MAX, &v))
    die("%s needs an integer in [%d, %d], got '%s'", flag, min, FLAG_MAX,
        value ? value : "(nothing)");
  return (int)v;
}

/* "A,B,C": three integers in [lo, hi] into out[0..2]; false for anything else. */
static bool threeInts(const char *value, int64_t lo, int64_t hi, int out[3]) {
  char buf[96];
  if (!value || strlen(value) >= sizeof buf) return false;
  snprintf(buf, sizeof buf, "%s", value);
  char *p = buf;
  for (int i = 0; i < 3; ++i) {
    char *comma = strchr(p, ',');
    if ((i < 2) != (comma != NULL)) return false; /* exactly two commas */
    if (comma) *comma = 0;
    int64_t v;
    if (!piperParseI64(p, lo, hi, &v)) return false;
    out[i] = (int)v;
    p = comma ? comma + 1 : p;
  }
  return true;
}

static void parseCost(const char *value, TuneSchedArgs *a) {
  int c[3] = {0, 0, 0};
  bool ok = threeInts(value, 0, 1000, c);
  int f = c[0], b = c[1], w = c[2];
  if (!ok || f < 1 || b < 1 || w >= b) {
    fprintf(stderr, "piper-sched: error: --cost needs F,B,W with 1 <= F <= 1000, 1 <= B <= 1000, "
                    "0 <= W < B (e.g. 1,2,1), got '%s'\n", value ? value : "(nothing)");
    exit(2);
  }
  a->costF = f, a->costB = b, a->costW = w;
}

/* ---- --simulate --model: the compiled plans through piper-tune's simulator ---- */

/* The schedule's strategy JSON as a string (owned); exits as piper-sched does when the
 * generator refuses it. */
static char *jsonText(const TuneSchedArgs *a) {
  char *buf = NULL, why[512];
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  if (!m) die("out of memory writing the strategy");
  int rc = tuneSchedRun(a, TUNE_SCHED_JSON, m, why, sizeof why);
  if (fclose(m) && !rc) die("out of memory writing the strategy");
  if (rc) {
    fprintf(stderr, "piper-sched: %s\n", why);
    exit(rc);
  }
  return buf;
}

/* Compiles the schedule's strategy on `modelPath` and prints the simulated timeline; writes the
 * predicted trace to `traceOut` when given. Exit status: 0, 1 (a model or profile that does
 * not read, a strategy the model refuses, a file not written). */
static int simulateOnModel(const TuneSchedArgs *a, const char *modelPath,
                           const char *profilePath, const char *traceOut) {
  TuneProfile profile;
  tuneProfileDefault(&profile);
  if (profilePath && !tuneProfileRead(&profile, profilePath)) return 1;
  char *json = jsonText(a);
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  MlirDiagnosticHandlerID printer = piperAttachDiagnosticPrinter(ctx, stderr, NULL);
  MlirModule training = tuneLoadTraining(ctx, modelPath);
  int rc = 1;
  if (!mlirModuleIsNull(training)) {
    mlirContextDetachDiagnosticHandler(ctx, printer); /* the first error goes to the message */
    const char *name = tuneSchedNames[a->sched];
    printf("%s: S=%d stages on P=%d pipeline devices (x%d DP, x%d TP), M=%d microbatches, "
           "compiled on %s; costs: %s\n", name, a->S,
           a->devices ? a->devices : a->sched == TUNE_DUALPIPEV ? a->S / 2 : a->S, a->D, a->T,
           a->M, modelPath, profile.source);
    char what[160];
    snprintf(what, sizeof what, "%s: the %s strategy", modelPath, name);
    rc = tuneSimulateStrategy("piper-sched", mlirModuleGetOperation(training), json, &profile,
                              what, traceOut);
    mlirModuleDestroy(training);
  }
  mlirContextDestroy(ctx);
  free(json);
  return rc;
}

/* ---- driver ---- */

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  int k = 0;
  while (k < TUNE_SCHED_COUNT && strcmp(argv[1], tuneSchedNames[k])) ++k;
  if (k == TUNE_SCHED_COUNT)
    die("unknown schedule '%s'; choose one of: gpipe, 1f1b, interleaved-1f1b, zb-h1, dualpipev",
        argv[1]);
  TuneSchedArgs args = {.sched = (TuneSched)k, .D = 1, .T = 1, .costF = 1, .costB = 2,
                        .costW = 1, .swap = {-1, -1, -1}};
  bool simulateOnly = false;
  const char *modelPath = NULL, *profilePath = NULL, *traceOut = NULL;
  for (int i = 2; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--simulate")) {
      simulateOnly = true;
      continue;
    } else if (!strcmp(a, "--model") || !strcmp(a, "--profile") || !strcmp(a, "--trace-out")) {
      if (!v) die("%s needs a file", a);
      *(a[2] == 'm' ? &modelPath : a[2] == 'p' ? &profilePath : &traceOut) = v;
    } else if (!strcmp(a, "--stages")) {
      args.S = intFlag(a, v, 1);
    } else if (!strcmp(a, "--microbatches")) {
      args.M = intFlag(a, v, 1);
    } else if (!strcmp(a, "--devices")) {
      args.devices = intFlag(a, v, 1);
    } else if (!strcmp(a, "--dp")) {
      args.D = intFlag(a, v, 1);
    } else if (!strcmp(a, "--zero")) {
      args.zero = intFlag(a, v, 0);
    } else if (!strcmp(a, "--ep")) {
      args.ep = intFlag(a, v, 1);
    } else if (!strcmp(a, "--tp")) {
      args.T = intFlag(a, v, 1);
    } else if (!strcmp(a, "--cp")) {
      args.C = intFlag(a, v, 1);
    } else if (!strcmp(a, "--cost")) {
      parseCost(v, &args);
    } else if (!strcmp(a, "--test-swap")) {
      if (!threeInts(v, 0, INT_MAX, args.swap))
        die("--test-swap needs D,I,J (device, two positions in its order), got '%s'",
            v ? v : "(nothing)");
    } else {
      die("unknown flag '%s'; see piper-sched --help", a);
    }
    ++i;
  }
  if ((profilePath || traceOut) && !modelPath)
    die("%s needs --model MODEL.mlir (the costs and the trace are of the compiled plans)",
        profilePath ? "--profile" : "--trace-out");
  if (modelPath && !simulateOnly)
    die("--model simulates the compiled plans: add --simulate (the JSON needs no model)");
  if (modelPath) return simulateOnModel(&args, modelPath, profilePath, traceOut);
  char why[512];
  int rc = tuneSchedRun(&args, simulateOnly ? TUNE_SCHED_TIMELINE : TUNE_SCHED_JSON, stdout, why,
                        sizeof why);
  if (rc) fprintf(stderr, "piper-sched: %s\n", why);
  return rc ? rc : ferror(stdout) ? 1 : 0;
}
