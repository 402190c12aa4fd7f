/* piper-opt: the pass driver. Parses MLIR (a file or stdin), verifies it, runs piper's passes
 * and upstream pipelines in command-line order, and prints the result. Usable like mlir-opt in
 * lit RUN lines. Exit codes: 0 success, 1 bad input or a failed pass, 2 bad command line. */
#include <stdlib.h>
#include <string.h>

#include "llvm-c/Core.h"
#include "piper/checked.h"
#include "piper/piper.h"
#include "registry.h"
#include "verify_diagnostics.h"

#ifndef PIPER_VERSION
#define PIPER_VERSION "unknown"
#endif

static void usage(FILE *out) {
  fprintf(out,
          "usage: piper-opt [options] [input.mlir | -]\n"
          "Parses, verifies, runs the passes given (in order) and prints the module.\n\n"
          "options:\n"
          "  -o FILE                    write the output to FILE (default: stdout)\n"
          "  --split-input-file         treat `// -----` lines as separators of independent\n"
          "                             inputs; each is processed and printed on its own\n"
          "  --mlir-print-op-generic    print every op in generic form\n"
          "  --mlir-print-debuginfo     print locations (file:line:col of each op)\n"
          "  --upstream=PIPELINE        run upstream MLIR passes, e.g.\n"
          "                             --upstream='canonicalize,cse' or\n"
          "                             --upstream='convert-to-llvm,reconcile-unrealized-casts'\n"
          "  --pass-pipeline=PIPELINE   a textual pipeline naming piper's passes and upstream\n"
          "                             ones, e.g. --pass-pipeline='builtin.module(\n"
          "                             piper-apply-strategy{file=s.json},piper-extract,\n"
          "                             canonicalize{max-iterations=2},cse)'; a piper pass that\n"
          "                             takes a FILE gets it as {file=FILE}\n"
          "  --verify-diagnostics       check the diagnostics against the input's\n"
          "                             `// expected-error {{...}}` annotations (also\n"
          "                             expected-warning/-note/-remark, @+N @-N @above @below);\n"
          "                             exit 0 when they all match\n"
          "  --mlir-print-ir-before-all print the IR before every pass (to stderr)\n"
          "  --mlir-print-ir-after-all  print the IR after every pass (to stderr)\n"
          "  --mlir-timing              print each pass's time (to stderr)\n"
          "  --list-passes              list piper's passes\n"
          "  --version                  piper's and LLVM's versions\n"
          "  --help                     this text\n\n"
          "piper passes (run in the order given on the command line):\n");
  for (const PiperPassInfo *p = piperPassRegistry(); p->name; ++p) {
    const char *flag = p->argHelp ? p->argHelp : p->name;
    if (strlen(flag) > 24) /* too wide for the column: the summary goes below */
      fprintf(out, "  --%s\n  %-26s %s\n", flag, "", p->summary);
    else
      fprintf(out, "  --%-24s %s\n", flag, p->summary);
  }
}

/* One step of the pipeline, in command-line order. */
typedef struct {
  const PiperPassInfo *piper; /* a piper pass, or NULL for an upstream pipeline */
  const char *arg;            /* the piper pass's `=value`, or the upstream pipeline text */
  char *owned;                /* arg when it was cut out of a --pass-pipeline (owned), or NULL */
  const char *flag;           /* the command-line element it came from, for messages */
} Step;

typedef struct {
  const char *input, *output;
  bool split, generic, debugInfo;
  bool verifyDiagnostics;        /* --verify-diagnostics */
  bool printBefore, printAfter;  /* --mlir-print-ir-before-all / -after-all */
  bool timing;                   /* --mlir-timing */
  Step *steps;                   /* owned, with each step's `owned` */
  int nSteps;                    /* steps in use */
  size_t capSteps;               /* capacity of steps */
} Options;

static void printToFile(MlirStringRef s, void *userData) {
  fwrite(s.data, 1, s.length, (FILE *)userData);
}

/* Adds the steps of `o` to `pm`; returns false (after saying which step and why on stderr)
 * if an upstream pipeline does not parse. */
static bool buildPipeline(MlirPassManager pm, const Options *o) {
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  for (int i = 0; i < o->nSteps; ++i) {
    if (o->steps[i].piper && !o->steps[i].piper->create) { /* --piper-apply-strategy */
      MlirPass passes[PIPER_STRATEGY_PASSES];
      int n = piperStrategyPasses(o->steps[i].arg, passes, PIPER_STRATEGY_PASSES);
      for (int k = 0; k < n; ++k) mlirPassManagerAddOwnedPass(pm, passes[k]);
    } else if (o->steps[i].piper) {
      mlirPassManagerAddOwnedPass(pm, o->steps[i].piper->create(o->steps[i].arg));
    } else if (mlirLogicalResultIsFailure(mlirOpPassManagerAddPipeline(
                   opm, piperStr(o->steps[i].arg), printToFile, stderr))) {
      fprintf(stderr, "\npiper-opt: error: cannot parse '%s' in %s\n", o->steps[i].arg,
              o->steps[i].flag);
      return false;
    }
  }
  return true;
}

/* Parses, verifies, runs, prints one input; returns 0 or 1. With --verify-diagnostics the
 * result is whether the diagnostics matched the annotations, whatever the run gave. */
static int processChunk(MlirContext ctx, const Options *o, const char *text, FILE *out) {
  const char *name = strcmp(o->input, "-") ? o->input : "<stdin>";
  PiperDiagVerifier *verifier =
      o->verifyDiagnostics ? piperDiagVerifierCreate(ctx, text, name, stderr) : NULL;
  if (o->verifyDiagnostics && !verifier) return 1;
  int rc = 0;
  MlirModule module = piperParseAndVerify(ctx, text, name);
  if (mlirModuleIsNull(module)) rc = 1;
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  if (!rc && !buildPipeline(pm, o)) rc = 1;
  if (!rc && (o->printBefore || o->printAfter)) {
    MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
    if (o->generic) mlirOpPrintingFlagsPrintGenericOpForm(flags);
    if (o->debugInfo) mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
    mlirPassManagerEnableIRPrinting(pm, o->printBefore, o->printAfter, false, false, false,
                                    flags, mlirStringRefCreate(NULL, 0));
    mlirOpPrintingFlagsDestroy(flags);
  }
  if (!rc && o->timing) mlirPassManagerEnableTiming(pm);
  MlirOperation op = rc ? (MlirOperation){NULL} : mlirModuleGetOperation(module);
  if (!rc && mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op))) rc = 1;
  if (!rc) {
    MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
    if (o->generic) mlirOpPrintingFlagsPrintGenericOpForm(flags);
    if (o->debugInfo) mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
    mlirOperationPrintWithFlags(op, flags, printToFile, out);
    fputc('\n', out);
    mlirOpPrintingFlagsDestroy(flags);
  }
  mlirPassManagerDestroy(pm); /* prints the --mlir-timing report */
  if (!mlirModuleIsNull(module)) mlirModuleDestroy(module);
  if (verifier) return piperDiagVerifierFinish(verifier);
  return rc;
}

static bool addStep(Options *o, Step s) {
  if (!piperGrow((void **)&o->steps, &o->capSteps, (size_t)o->nSteps + 1,
                 sizeof *o->steps)) {
    fprintf(stderr, "piper-opt: error: out of memory\n");
    free(s.owned);
    return false;
  }
  o->steps[o->nSteps++] = s;
  return true;
}

/* Splits the textual pipeline `text` of --pass-pipeline into steps:
 *   pipeline -> 'builtin.module(' element { ',' element } ')'
 *   element  -> piper-pass [ '{file=' VALUE '}' ] | upstream-element
 * Commas split only at the top level (outside {...} and (...)). Consecutive upstream
 * elements stay one step, handed to MLIR's own pipeline parser. Returns 0 or 2. */
static int parsePassPipeline(Options *o, const char *flag, const char *text) {
  static const char anchor[] = "builtin.module(";
  while (*text == ' ') ++text;
  size_t len = strlen(text);
  while (len && text[len - 1] == ' ') --len;
  if (strncmp(text, anchor, sizeof anchor - 1) || len < sizeof anchor || text[len - 1] != ')') {
    fprintf(stderr, "piper-opt: error: %s: the pipeline must be 'builtin.module(PASS,...)', "
                    "got '%.*s'\n", flag, (int)len, text);
    return 2;
  }
  const char *body = text + sizeof anchor - 1, *end = text + len - 1;
  char *upstream = NULL; /* consecutive upstream elements joined by commas */
  size_t upLen = 0;
  int rc = 0;
  for (const char *p = body; p < end && !rc;) {
    /* one element: up to the next top-level comma */
    int depth = 0;
    const char *q = p;
    char open[64];
    for (; q < end && (depth > 0 || *q != ','); ++q) {
      if (*q == '(' || *q == '{') {
        if (depth == (int)sizeof open) break;
        open[depth++] = *q;
      } else if (*q == ')' || *q == '}') {
        if (depth == 0 || open[depth - 1] != (*q == ')' ? '(' : '{')) {
          depth = -1;
          break;
        }
        --depth;
      }
    }
    const char *a = p, *b = q < end ? q : end;
    while (a < b && *a == ' ') ++a;
    while (b > a && b[-1] == ' ') --b;
    if (depth != 0) {
      const char *stop = strchr(a, ',');
      fprintf(stderr, "piper-opt: error: %s: unbalanced parentheses or braces in pipeline "
                      "element '%.*s'\n", flag, (int)((stop && stop < end ? stop : end) - a), a);
      rc = 2;
      break;
    }
    if (a == b) {
      fprintf(stderr, "piper-opt: error: %s: an empty pipeline element in '%.*s'\n", flag,
              (int)len, text);
      rc = 2;
      break;
    }
    size_t nameLen = 0;
    while (a + nameLen < b && a[nameLen] != '{' && a[nameLen] != '(') ++nameLen;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)nameLen, a);
    const PiperPassInfo *pass = nameLen < sizeof name ? piperLookupPass(name) : NULL;
    if (!pass) { /* upstream: MLIR parses it when the pipeline is built */
      char *grown = realloc(upstream, upLen + (size_t)(b - a) + 2);
      if (!grown) {
        rc = 2;
        break;
      }
      upstream = grown;
      if (upLen) upstream[upLen++] = ',';
      memcpy(upstream + upLen, a, (size_t)(b - a));
      upLen += (size_t)(b - a);
      upstream[upLen] = 0;
    } else {
      if (upstream && !addStep(o, (Step){NULL, upstream, upstream, flag})) rc = 2;
      upstream = NULL, upLen = 0;
      char *arg = NULL;
      const char *opts = a + nameLen;
      if (opts < b) {
        static const char key[] = "{file=";
        size_t vlen = (size_t)(b - opts) - (sizeof key - 1) - 1;
        if (*opts != '{' || strncmp(opts, key, sizeof key - 1) || b[-1] != '}' ||
            (size_t)(b - opts) < sizeof key || !pass->argHelp) {
          fprintf(stderr, "piper-opt: error: %s: bad options in pipeline element '%.*s': %s\n",
                  flag, (int)(b - a), a,
                  pass->argHelp ? "piper passes take their FILE as {file=FILE}"
                                : "this piper pass takes no options");
          rc = 2;
          break;
        }
        arg = strndup(opts + sizeof key - 1, vlen);
      } else if (pass->argHelp) {
        fprintf(stderr, "piper-opt: error: %s: pipeline element '%s' needs its file: "
                        "%s{file=FILE}\n", flag, name, name);
        rc = 2;
        break;
      }
      if (!rc && !addStep(o, (Step){pass, arg, arg, flag})) rc = 2;
    }
    p = q < end ? q + 1 : end;
  }
  if (upstream && !rc && !addStep(o, (Step){NULL, upstream, upstream, flag})) rc = 2;
  else if (upstream && rc) free(upstream);
  return rc;
}

static void listPasses(FILE *out) {
  fprintf(out, "piper passes (--NAME or --NAME=FILE on the command line; NAME or "
               "NAME{file=FILE} in --pass-pipeline):\n");
  for (const PiperPassInfo *p = piperPassRegistry(); p->name; ++p)
    fprintf(out, "  %-24s %s\n", p->name, p->summary);
  fprintf(out, "upstream MLIR passes (every pass mlir-opt registers, e.g. canonicalize, cse, "
               "convert-to-llvm) run through --upstream='...' or inside --pass-pipeline, with "
               "their {option=value} syntax; `mlir-opt --help` lists them\n");
}

static int parseArgs(int argc, char **argv, Options *o) {
  o->input = "-";
  bool haveInput = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return -1;
    } else if (!strcmp(a, "--version")) {
      unsigned major, minor, patch;
      LLVMGetVersion(&major, &minor, &patch);
      printf("piper-opt (piper) %s\nLLVM and MLIR %u.%u.%u\n", PIPER_VERSION, major, minor,
             patch);
      return -1;
    } else if (!strcmp(a, "--list-passes")) {
      listPasses(stdout);
      return -1;
    } else if (!strcmp(a, "-o")) {
      if (++i == argc) {
        fprintf(stderr, "piper-opt: error: -o needs a file name\n");
        return 2;
      }
      o->output = argv[i];
    } else if (!strcmp(a, "--split-input-file")) {
      o->split = true;
    } else if (!strcmp(a, "--mlir-print-op-generic")) {
      o->generic = true;
    } else if (!strcmp(a, "--mlir-print-debuginfo")) {
      o->debugInfo = true;
    } else if (!strcmp(a, "--verify-diagnostics")) {
      o->verifyDiagnostics = true;
    } else if (!strcmp(a, "--mlir-print-ir-before-all")) {
      o->printBefore = true;
    } else if (!strcmp(a, "--mlir-print-ir-after-all")) {
      o->printAfter = true;
    } else if (!strcmp(a, "--mlir-timing")) {
      o->timing = true;
    } else if (!strncmp(a, "--upstream=", 11)) {
      if (!addStep(o, (Step){NULL, a + 11, NULL, "--upstream"})) return 2;
    } else if (!strncmp(a, "--pass-pipeline=", 16) || !strcmp(a, "--pass-pipeline")) {
      const char *text = a[15] == '=' ? a + 16 : (i + 1 < argc ? argv[++i] : NULL);
      if (!text) {
        fprintf(stderr, "piper-opt: error: --pass-pipeline needs a pipeline\n");
        return 2;
      }
      if (parsePassPipeline(o, "--pass-pipeline", text)) return 2;
    } else if (a[0] == '-' && a[1] == '-') {
      char name[128];
      const char *eq = strchr(a + 2, '=');
      size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
      snprintf(name, sizeof name, "%.*s", (int)n, a + 2);
      const PiperPassInfo *p = n < sizeof name ? piperLookupPass(name) : NULL;
      if (!p) {
        fprintf(stderr, "piper-opt: error: unknown option or pass '%s'; see piper-opt --help\n",
                a);
        return 2;
      }
      if (p->argHelp && (!eq || !eq[1])) {
        fprintf(stderr, "piper-opt: error: --%s needs its value: --%s\n", name, p->argHelp);
        return 2;
      }
      if (!p->argHelp && eq) {
        fprintf(stderr, "piper-opt: error: --%s takes no value, got '%s'\n", name, a);
        return 2;
      }
      if (!addStep(o, (Step){p, eq ? eq + 1 : NULL, NULL, a})) return 2;
    } else if (a[0] == '-' && a[1]) {
      fprintf(stderr, "piper-opt: error: unknown option '%s'; see piper-opt --help\n", a);
      return 2;
    } else if (haveInput) {
      fprintf(stderr, "piper-opt: error: more than one input file ('%s' and '%s')\n",
              o->input, a);
      return 2;
    } else {
      o->input = a;
      haveInput = true;
    }
  }
  return 0;
}

/* Reads, runs and writes what `o` asks for in `ctx`; returns the exit code. */
static int runTool(MlirContext ctx, Options *o, char *text) {
  /* A failed run leaves no partial output file (see PiperOutput). */
  PiperOutput output;
  FILE *out = stdout;
  int rc = 0;
  if (o->output) {
    if (!piperOutputOpen(&output, o->output)) return 1;
    out = output.file;
  }
  if (!o->split) {
    rc = processChunk(ctx, o, text, out);
  } else {
    /* Each chunk is padded with the newlines before it, so diagnostics keep the line numbers
     * of the original file. */
    char *chunk = text;
    int line = 1;
    for (;;) {
      char *sep = strstr(chunk, "// -----");
      while (sep && sep != text && sep[-1] != '\n') sep = strstr(sep + 1, "// -----");
      size_t len = sep ? (size_t)(sep - chunk) : strlen(chunk);
      char *padded = malloc(line + len + 1);
      memset(padded, '\n', line - 1);
      memcpy(padded + line - 1, chunk, len);
      padded[line - 1 + len] = 0;
      rc |= processChunk(ctx, o, padded, out);
      free(padded);
      for (size_t k = 0; k < len; ++k) line += chunk[k] == '\n';
      if (!sep) break;
      fputs("// -----\n", out);
      chunk = strchr(sep, '\n');
      if (!chunk) break;
      chunk++;
      line++;
    }
  }
  if (o->output && piperOutputCommit(&output, rc == 0)) rc = 1;
  return rc;
}

int main(int argc, char **argv) {
  Options o = {0};
  int rc = parseArgs(argc, argv, &o);
  bool done = rc == -1; /* --help, --version, --list-passes */
  if (done) rc = 0;
  char *text = rc || done ? NULL : piperReadInput(o.input, NULL);
  if (!rc && !done && !text) rc = 1;
  MlirContext ctx = rc || done ? (MlirContext){NULL} : piperContextCreate();
  if (!rc && !done && mlirContextIsNull(ctx)) rc = 1;
  if (!rc && !done) { /* an upstream pipeline that does not parse is a bad command line */
    MlirPassManager pm = mlirPassManagerCreate(ctx);
    if (!buildPipeline(pm, &o)) rc = 2;
    mlirPassManagerDestroy(pm);
  }
  if (!rc && !done) {
    piperAttachDiagnosticPrinter(ctx, stderr, NULL);
    rc = runTool(ctx, &o, text);
  }
  if (!mlirContextIsNull(ctx)) mlirContextDestroy(ctx);
  free(text);
  for (int i = 0; i < o.nSteps; ++i) free(o.steps[i].owned);
  free(o.steps);
  return rc;
}
