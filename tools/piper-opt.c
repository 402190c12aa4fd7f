/* piper-opt: the pass driver. Parses MLIR (a file or stdin), verifies it, runs piper's passes
 * and upstream pipelines in command-line order, and prints the result. Usable like mlir-opt in
 * lit RUN lines. Exit codes: 0 success, 1 bad input or a failed pass, 2 bad command line. */
#include <stdlib.h>
#include <string.h>

#include "piper/piper.h"

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
} Step;

typedef struct {
  const char *input, *output;
  bool split, generic, debugInfo;
  Step *steps;
  int nSteps;
} Options;

static void printToFile(MlirStringRef s, void *userData) {
  fwrite(s.data, 1, s.length, (FILE *)userData);
}

/* Parses, verifies, runs, prints one input; returns 0 or 1. */
static int processChunk(MlirContext ctx, const Options *o, const char *text, FILE *out) {
  const char *name = strcmp(o->input, "-") ? o->input : "<stdin>";
  MlirModule module = piperParseAndVerify(ctx, text, name);
  if (mlirModuleIsNull(module)) return 1;
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirOpPassManager opm = mlirPassManagerGetAsOpPassManager(pm);
  int rc = 0;
  for (int i = 0; i < o->nSteps && !rc; ++i) {
    if (o->steps[i].piper && !o->steps[i].piper->create) { /* --piper-apply-strategy */
      MlirPass passes[8];
      int n = piperStrategyPasses(o->steps[i].arg, passes, 8);
      for (int k = 0; k < n; ++k) mlirPassManagerAddOwnedPass(pm, passes[k]);
    } else if (o->steps[i].piper) {
      mlirPassManagerAddOwnedPass(pm, o->steps[i].piper->create(o->steps[i].arg));
    } else if (mlirLogicalResultIsFailure(mlirOpPassManagerAddPipeline(
                   opm, piperStr(o->steps[i].arg), printToFile, stderr))) {
      fprintf(stderr, "\npiper-opt: error: cannot parse --upstream='%s'\n", o->steps[i].arg);
      rc = 1;
    }
  }
  MlirOperation op = mlirModuleGetOperation(module);
  if (!rc && mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op))) rc = 1;
  if (!rc) {
    MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
    if (o->generic) mlirOpPrintingFlagsPrintGenericOpForm(flags);
    if (o->debugInfo) mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
    mlirOperationPrintWithFlags(op, flags, printToFile, out);
    fputc('\n', out);
    mlirOpPrintingFlagsDestroy(flags);
  }
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(module);
  return rc;
}

static int parseArgs(int argc, char **argv, Options *o) {
  o->input = "-";
  o->steps = calloc(argc, sizeof *o->steps);
  bool haveInput = false;
  for (int i = 1; i < argc; ++i) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
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
    } else if (!strncmp(a, "--upstream=", 11)) {
      o->steps[o->nSteps++] = (Step){NULL, a + 11};
    } else if (a[0] == '-' && a[1] == '-') {
      char name[128];
      const char *eq = strchr(a + 2, '=');
      size_t n = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
      snprintf(name, sizeof name, "%.*s", (int)n, a + 2);
      const PiperPassInfo *p = piperLookupPass(name);
      if (!p) {
        fprintf(stderr, "piper-opt: error: unknown option or pass '%s'; see piper-opt --help\n",
                a);
        return 2;
      }
      o->steps[o->nSteps++] = (Step){p, eq ? eq + 1 : NULL};
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
  char *text = rc ? NULL : piperReadInput(o.input, NULL);
  if (!rc && !text) rc = 1;
  MlirContext ctx = rc ? (MlirContext){NULL} : piperContextCreate();
  if (!rc && mlirContextIsNull(ctx)) rc = 1;
  if (!rc) {
    piperAttachDiagnosticPrinter(ctx, stderr, NULL);
    rc = runTool(ctx, &o, text);
  }
  if (!mlirContextIsNull(ctx)) mlirContextDestroy(ctx);
  free(text);
  free(o.steps);
  return rc;
}
