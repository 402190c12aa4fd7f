/* See fuzz_pipeline.h. */
#include "fuzz_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "mlir-c/Pass.h"

/* Inputs between two contexts: enough to amortise loading the IRDL dialects (ms), few
 * enough that interned fuzz strings stay in the megabytes. */
enum { INPUTS_PER_CONTEXT = 256 };

static MlirContext context;   /* the current context, or null before the first input */
static int inputsOnContext;   /* inputs run on `context` so far */
static int errorCount;        /* error diagnostics since fuzzTakeErrorCount */

static MlirLogicalResult countDiagnostic(MlirDiagnostic d, void *userData) {
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError) ++errorCount;
  return mlirLogicalResultSuccess(); /* handled: nothing printed, the fuzzer stays quiet */
}

MlirContext fuzzContext(bool *fresh, void (*release)(void)) {
  if (fresh) *fresh = false;
  if (!mlirContextIsNull(context) && ++inputsOnContext < INPUTS_PER_CONTEXT) return context;
  if (!mlirContextIsNull(context)) {
    if (release) release();
    mlirContextDestroy(context);
  }
  context = piperContextCreate();
  if (mlirContextIsNull(context)) abort(); /* the embedded IRDL is broken: a build defect */
  /* One thread: MLIR's pool starts its workers lazily, inside some input, and a worker's
   * thread-local state (2560 bytes from an aligned operator new, and glibc's TLS destructor
   * record) then counts as that input's unfreed allocation; libFuzzer's leak check reported
   * it, without a frame of Piper's, twice in the 2026-11-23 campaign (not reproducible on
   * the saved inputs). Single-threaded runs are also deterministic, as libFuzzer wants. */
  mlirContextEnableMultithreading(context, false);
  mlirContextAttachDiagnosticHandler(context, countDiagnostic, NULL, NULL);
  inputsOnContext = 0;
  errorCount = 0;
  if (fresh) *fresh = true;
  return context;
}

int fuzzTakeErrorCount(void) {
  int n = errorCount;
  errorCount = 0;
  return n;
}

void fuzzReport(const char *what, bool ok) {
  static int verbose = -1; /* PIPER_FUZZ_VERBOSE set: say how far each input got */
  if (verbose < 0) verbose = getenv("PIPER_FUZZ_VERBOSE") != NULL;
  if (verbose) fprintf(stderr, "fuzz: %s: %s (%d errors)\n", what, ok ? "ok" : "failed", errorCount);
}

void fuzzRequireDiagnostic(bool failed, const char *what) {
  if (failed && fuzzTakeErrorCount() == 0) {
    fprintf(stderr, "fuzz: %s failed without an error diagnostic\n", what);
    abort();
  }
}

bool fuzzRunPasses(MlirContext ctx, MlirOperation module, MlirPass *passes, int n,
                   const char *what) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  for (int i = 0; i < n; ++i) mlirPassManagerAddOwnedPass(pm, passes[i]);
  fuzzTakeErrorCount();
  bool ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  fuzzReport(what, ok);
  fuzzRequireDiagnostic(!ok, what);
  mlirPassManagerDestroy(pm);
  return ok;
}

bool fuzzRunOnClone(MlirContext ctx, MlirOperation module, MlirPass *passes, int n,
                    const char *what) {
  MlirOperation copy = mlirOperationClone(module);
  bool ok = fuzzRunPasses(ctx, copy, passes, n, what);
  mlirOperationDestroy(copy);
  return ok;
}

char *fuzzCString(const uint8_t *data, size_t size) {
  if (memchr(data, 0, size)) return NULL; /* piperReadInput refuses such files */
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = 0;
  return s;
}
