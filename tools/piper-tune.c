/* piper-tune: picks the fastest strategy that fits, by compiling and simulating each candidate.
 *   MODEL.mlir -> parse, autodiff -> the model's tags -> candidates (tune/enumerate.c)
 *   -> each compiled to its plans + memory plan, dropped with its reason (tune/compile.c)
 *   -> simulated on the plans (tune/simulate.c, costs from tune/profile.c)
 *   -> table of the best K, the best as a Piper JSON strategy (-o).
 * `piper-tune --calibrate MODEL.mlir -o profile.json` measures the costs instead.
 * Exit codes: 0 success; 1 bad input (a model that does not parse, a profile that does not
 * read, nothing compiles); 2 bad command line, no devices, a model without tags, or a memory
 * too small for any strategy. */
#include <stdlib.h>
#include <string.h>

#include "piper/checked.h"
#include "piper/piper.h"
#include "tune/tune.h"

static void usage(FILE *out) {
  fprintf(out,
      "usage: piper-tune MODEL.mlir --devices N --memory BYTES [--profile FILE] [--top K]\n"
      "                  [-o best.json] [--verbose]\n"
      "       piper-tune MODEL.mlir --calibrate [-o profile.json] [--verbose]\n"
      "       piper-tune MODEL.mlir --strategy S.json [--profile FILE] [--trace-out FILE]\n"
      "                  [--explain]\n"
      "Enumerates strategies for N devices within what the model's tags allow (PP stages,\n"
      "TP and EP blocks): data parallelism with ZeRO 0-3 and bucket sizes, pipelines (gpipe,\n"
      "1f1b, interleaved-1f1b, zb-h1, dualpipev) with microbatches, tensor and expert\n"
      "parallelism, and their compositions. Each is compiled to its per-device (or per-role)\n"
      "plans and memory plan; those verify-plan rejects or that need more than --memory\n"
      "bytes on a device are dropped. The rest are simulated on their plans and ranked.\n\n"
      "  --devices N     devices (MPI ranks) to plan for\n"
      "  --memory BYTES  memory per device: parameters + AdamW moments + the arena (suffixes\n"
      "                  K, M, G: powers of 1024)\n"
      "  --profile FILE  costs measured by --calibrate (default: a built-in rough profile)\n"
      "  --top K         rows of the table (default 10)\n"
      "  -o FILE         write the best strategy (Piper JSON, for piper-compile --strategy);\n"
      "                  with --calibrate, the profile (default: stdout)\n"
      "  --verbose       list every dropped candidate with its reason\n"
      "  --dump DIR      write every kept candidate's strategy as DIR/cNNN.json and one JSON\n"
      "                  line per candidate to DIR/candidates.jsonl (name, file, predicted\n"
      "                  step_ms, peak/params/optim/arena bytes, bubble, exposed_comm), for\n"
      "                  comparing predictions with measurements (bench/bench_tune.py)\n"
      "  --strategy FILE simulate this strategy (any Piper JSON, e.g. a --dump'ed candidate)\n"
      "                  instead of searching: print its timeline and, with --trace-out FILE,\n"
      "                  write the predicted step as a trace in the runtime's --trace format\n"
      "  --explain       with --strategy: also a table per kernel kind of the plan (calls,\n"
      "                  predicted time, and each op's CPU kernel timed alone at its shape)\n"
      "  --calibrate     time the model's kernels at a few row counts (libpiper_rt's CPU\n"
      "                  kernels, linear fit per op kind) and, under mpirun with 2+ ranks,\n"
      "                  point-to-point and collectives at a few sizes; write the profile\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "piper-tune: error: ");
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(2);
}

/* BYTES with an optional K, M or G (1024-based) suffix. */
static int64_t parseBytes(const char *flag, const char *v) {
  if (!v) die("%s needs a value", flag);
  char buf[32];
  size_t n = strlen(v);
  int64_t mult = 1;
  if (n >= sizeof buf) die("%s: '%s' is not a byte count", flag, v);
  snprintf(buf, sizeof buf, "%s", v);
  char last = n ? buf[n - 1] : 0;
  if (last == 'K' || last == 'k') mult = 1 << 10;
  if (last == 'M' || last == 'm') mult = 1 << 20;
  if (last == 'G' || last == 'g') mult = 1 << 30;
  if (mult > 1) buf[n - 1] = '\0';
  int64_t x;
  if (!piperParseI64(buf, 0, INT64_MAX / mult, &x))
    die("%s needs a byte count (an integer, optionally with K, M or G), got '%s'", flag, v);
  return x * mult;
}

static int intFlag(const char *flag, const char *v, int min, int max) {
  int64_t x;
  if (!piperParseI64(v, min, max, &x))
    die("%s needs an integer in [%d, %d], got '%s'", flag, min, max, v ? v : "(nothing)");
  return (int)x;
}

typedef struct {
  TuneCandidate *c;
  TuneResult r;
} Row;

static int byTime(const void *a, const void *b) {
  const Row *x = a, *y = b;
  double d = x->r.sim.stepNs - y->r.sim.stepNs;
  return d < 0 ? -1 : d > 0 ? 1 : 0;
}

/* --dump DIR: every kept candidate's strategy and predictions; 0 on success. */
static int dumpAll(const char *dir, const Row *rows, size_t n) {
  size_t len = strlen(dir) + 32;
  char *path = malloc(len);
  snprintf(path, len, "%s/candidates.jsonl", dir);
  FILE *index = fopen(path, "w");
  if (!index) {
    fprintf(stderr, "piper-tune: error: --dump %s: cannot write %s (does the folder exist?)\n",
            dir, path);
    free(path);
    return 1;
  }
  for (size_t i = 0; i < n; ++i) {
    snprintf(path, len, "%s/c%03zu.json", dir, i);
    FILE *f = fopen(path, "w");
    if (!f || fputs(rows[i].c->json, f) < 0 || fclose(f)) {
      fprintf(stderr, "piper-tune: error: --dump: cannot write %s\n", path);
      fclose(index);
      free(path);
      return 1;
    }
    const TuneResult *r = &rows[i].r;
    fprintf(index, "{\"name\": \"%s\", \"file\": \"c%03zu.json\", \"step_ms\": %.6g, "
            "\"peak_bytes\": %lld, \"params\": %lld, \"optim\": %lld, \"arena\": %lld, "
            "\"bubble\": %.4f, \"exposed_comm\": %.4f}\n", rows[i].c->name, i,
            r->sim.stepNs / 1e6, (long long)r->peakBytes, (long long)r->paramBytes,
            (long long)r->optimBytes, (long long)r->arenaBytes, r->sim.bubble,
            r->sim.exposedComm);
  }
  free(path);
  return fclose(index) ? 1 : 0;
}

/* The outcome of a search: the error when nothing was kept (2: nothing fits the memory, 1:
 * nothing compiles), or the table of the best `top`, --dump's folder and the best strategy
 * (to -o, or stdout). 0 on success. */
static int reportResults(Row *rows, size_t nOk, const Row *smallest, int devices,
                         int64_t memory, int top, const char *dumpDir, const char *output) {
  int rc = 0;
  if (nOk == 0) {
    if (smallest->c) {
      fprintf(stderr, "piper-tune: error: no strategy fits in --memory %lld bytes a device: "
                      "the smallest, %s, needs %lld (params %lld + AdamW %lld + arena %lld); "
                      "give more memory or more devices\n", (long long)memory, smallest->c->name,
              (long long)smallest->r.peakBytes, (long long)smallest->r.paramBytes,
              (long long)smallest->r.optimBytes, (long long)smallest->r.arenaBytes);
      rc = 2;
    } else {
      fprintf(stderr, "piper-tune: error: no candidate compiles for %d devices; run with "
                      "--verbose for each one's reason\n", devices);
      rc = 1;
    }
  } else {
    qsort(rows, nOk, sizeof *rows, byTime);
    printf("\n| rank | strategy | step ms | peak MB/device | params+AdamW MB | arena MB | bubble | "
           "exposed comm |\n|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < nOk && i < (size_t)top; ++i) {
      TuneResult *r = &rows[i].r;
      printf("| %zu | %s | %.2f | %.2f | %.2f | %.2f | %.1f%% | %.1f%% |\n", i + 1,
             rows[i].c->name, r->sim.stepNs / 1e6, r->peakBytes / 1e6,
             (r->paramBytes + r->optimBytes) / 1e6, r->arenaBytes / 1e6, 100 * r->sim.bubble,
             100 * r->sim.exposedComm);
    }
    if (dumpDir && dumpAll(dumpDir, rows, nOk)) rc = 1;
    if (output) {
      PiperOutput out;
      if (!piperOutputOpen(&out, output)) rc = 1;
      else {
        fputs(rows[0].c->json, out.file);
        rc = piperOutputCommit(&out, true);
        if (!rc) printf("\nbest: %s -> %s\n", rows[0].c->name, output);
      }
    } else {
      printf("\nbest: %s\n%s", rows[0].c->name, rows[0].c->json);
    }
  }
  return rc;
}

/* --strategy FILE: that strategy's timeline (and --trace-out), no search. */
static int simulateOne(MlirOperation training, const char *path, const TuneProfile *profile,
                       const char *traceOut, bool explain) {
  char *json = piperReadInput(path, NULL);
  if (!json) return 1;
  printf("%s simulated; costs: %s\n", path, profile->source);
  int rc = tuneSimulateStrategy("piper-tune", training, json, profile, path, traceOut);
  if (!rc && explain) rc = tuneExplain("piper-tune", training, json, profile, path, stdout);
  free(json);
  return rc;
}

/* main's every return after the parse: the parsed model and its context released first, so an
 * early exit (a bad profile, a model autodiff rejects) leaves nothing behind under
 * LeakSanitizer. */
static int releaseModel(MlirModule module, MlirContext ctx, int rc) {
  if (!mlirModuleIsNull(module)) mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return rc;
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = NULL, *profilePath = NULL, *dumpDir = NULL;
  const char *strategyPath = NULL, *traceOut = NULL;
  int devices = -1, top = 10;
  int64_t memory = -1;
  bool verbose = false, calibrate = false, explain = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--verbose")) {
      verbose = true;
    } else if (!strcmp(a, "--explain")) {
      explain = true;
    } else if (!strcmp(a, "--calibrate")) {
      calibrate = true;
    } else if (!strcmp(a, "--devices")) {
      devices = intFlag(a, v, 0, PIPER_MAX_DEVICES), ++i;
    } else if (!strcmp(a, "--memory")) {
      memory = parseBytes(a, v), ++i;
    } else if (!strcmp(a, "--top")) {
      top = intFlag(a, v, 1, 100000), ++i;
    } else if (!strcmp(a, "--strategy") || !strcmp(a, "--trace-out")) {
      if (!v) die("%s needs a file", a);
      *(a[2] == 's' ? &strategyPath : &traceOut) = v, ++i;
    } else if (!strcmp(a, "--dump")) {
      if (!v) die("%s needs a folder", a);
      dumpDir = v, ++i;
    } else if (!strcmp(a, "--profile") || !strcmp(a, "-o")) {
      if (!v) die("%s needs a value", a);
      *(a[1] == 'o' ? &output : &profilePath) = v, ++i;
    } else if (a[0] == '-' && a[1]) {
      die("unknown option '%s'; see piper-tune --help", a);
    } else if (input) {
      die("more than one model ('%s', '%s')", input, a);
    } else {
      input = a;
    }
  }
  if (!input) die("no model given; see piper-tune --help");
  if (traceOut && !strategyPath)
    die("--trace-out writes the simulation of one strategy: add --strategy FILE");
  if (explain && !strategyPath)
    die("--explain tables the kernels of one strategy: add --strategy FILE");
  if (!calibrate && !strategyPath) {
    if (devices < 0) die("no devices given: add --devices N (the MPI ranks to plan for)");
    if (devices == 0) die("--devices 0: there is nothing to plan for; give N >= 1");
    if (memory < 0) die("no memory given: add --memory BYTES (per device, e.g. 2G)");
  }

  char *text = piperReadInput(input, NULL);
  if (!text) return 1;
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  MlirDiagnosticHandlerID printer = piperAttachDiagnosticPrinter(ctx, stderr, NULL);
  MlirModule module = piperParseAndVerify(ctx, text, strcmp(input, "-") ? input : "<stdin>");
  free(text);
  if (mlirModuleIsNull(module)) return releaseModel(module, ctx, 1);
  MlirOperation op = mlirModuleGetOperation(module);
  TuneModel model = tuneReadModel(op);
  if (!model.tagged) {
    releaseModel(module, ctx, 2);
    die("%s: no op carries `tags`; piper-tune places ops by their annotations (PP, TP, EP, "
        "layer ...): generate the model with piper-gen (e.g. piper-gen gpt --stages 2)", input);
  }
  bool ok = tuneBuildTraining(op); /* fused and differentiated, as piper-compile builds it */
  if (!ok) return releaseModel(module, ctx, 1);

  TuneProfile profile;
  tuneProfileDefault(&profile);
  if (calibrate) {
    int rc = tuneCalibrate(op, &profile, verbose);
    if (rc == 0 && profile.source[0]) { /* rank 0 writes; other ranks leave source empty */
      PiperOutput out = {0};
      if (output && !piperOutputOpen(&out, output)) rc = 1;
      if (!rc) {
        ok = tuneProfileWrite(&profile, output ? out.file : stdout);
        rc = output ? piperOutputCommit(&out, ok) : !ok;
      }
    }
    return releaseModel(module, ctx, rc);
  }
  if (profilePath && !tuneProfileRead(&profile, profilePath))
    return releaseModel(module, ctx, 1);
  if (strategyPath) {
    mlirContextDetachDiagnosticHandler(ctx, printer); /* the first error is in the message */
    return releaseModel(module, ctx, simulateOne(op, strategyPath, &profile, traceOut, explain));
  }

  TuneCandidates cands = {0};
  tuneEnumerate(&model, devices, &cands);
  if (cands.n == 0)
    die("no strategy shape fits %d devices for this model (%d PP stages, %s, %s, batch %lld): "
        "give a device count that the stages, replicas and TP groups can multiply to",
        devices, model.stages, model.tp ? "TP tags" : "no TP tags",
        model.ep ? "EP tags" : "no EP tags", (long long)model.batch);
  /* the per-candidate diagnostics go to the drop reasons, not to stderr */
  mlirContextDetachDiagnosticHandler(ctx, printer);
  Row *rows = calloc(cands.n, sizeof *rows);
  if (!rows) die("out of memory for %zu candidates", cands.n);
  size_t nOk = 0, counts[TUNE_DROP_COUNT] = {0};
  Row smallest = {0}; /* the candidate needing least memory, for the error */
  for (size_t i = 0; i < cands.n; ++i) {
    TuneCandidate *c = &cands.items[i];
    TuneResult r = {.status = TUNE_OK};
    if (!tuneGenerate(c, r.why, sizeof r.why)) r.status = TUNE_DROP_SCHEDULE;
    else r = tuneEvaluate(op, c, &profile, memory);
    counts[r.status]++;
    if (r.status == TUNE_OK) rows[nOk++] = (Row){c, r};
    if (r.status == TUNE_DROP_MEMORY && (!smallest.c || r.peakBytes < smallest.r.peakBytes))
      smallest = (Row){c, r};
    if (verbose && r.status != TUNE_OK)
      fprintf(stderr, "dropped %-28s %s: %s\n", c->name, tuneStatusNames[r.status], r.why);
  }
  printf("piper-tune: %zu candidates for %d devices (model: %d PP stages%s%s, batch %lld); "
         "profile: %s\n", cands.n, devices, model.stages, model.tp ? ", TP" : "",
         model.ep ? ", EP" : "", (long long)model.batch, profile.source);
  printf("kept %zu", nOk);
  for (int s = 1; s < TUNE_DROP_COUNT; ++s)
    if (counts[s]) printf("; dropped %zu %s", counts[s], tuneStatusNames[s]);
  printf("%s\n", verbose ? "" : " (--verbose lists each)");
  int rc = reportResults(rows, nOk, &smallest, devices, memory, top, dumpDir, output);
  free(rows);
  tuneCandidatesFree(&cands);
  return releaseModel(module, ctx, rc);
}
