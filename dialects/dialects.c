/* Context set-up shared by every tool: upstream dialects plus piper's IRDL-defined dialects,
 * and a diagnostic printer in the `file:line:col: error: msg` form lit tests match. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/Dialect/IRDL.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir-c/Diagnostics.h"
#include "piper/piper.h"

MlirContext piperContextCreate(void) {
  mlirRegisterAllPasses(); /* upstream passes, for --upstream= pipelines; idempotent */
  MlirDialectRegistry registry = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(registry);
  MlirContext ctx = mlirContextCreate();
  mlirContextAppendDialectRegistry(ctx, registry);
  mlirDialectRegistryDestroy(registry);
  mlirContextLoadAllAvailableDialects(ctx);
  mlirRegisterAllLLVMTranslations(ctx);
  char *source = piperIrdlSourceCreate();
  MlirModule defs = source ? mlirModuleCreateParse(ctx, piperStr(source))
                           : (MlirModule){NULL};
  bool ok = !mlirModuleIsNull(defs) &&
            mlirLogicalResultIsSuccess(mlirLoadIRDLDialects(defs));
  free(source);
  if (!mlirModuleIsNull(defs)) mlirModuleDestroy(defs);
  if (!ok) {
    fprintf(stderr, "piper: error: the built-in IRDL dialect definitions did not load; "
                    "this is a build defect, rebuild from a clean tree\n");
    mlirContextDestroy(ctx);
    return (MlirContext){NULL};
  }
  return ctx;
}

typedef struct {
  FILE *out;        /* where diagnostics go (borrowed) */
  int *errorCount;  /* incremented per error; may be NULL */
} DiagPrinter;

static void printToFile(MlirStringRef s, void *userData) {
  fwrite(s.data, 1, s.length, (FILE *)userData);
}

/* Prints `file:line:col: ` when the location (or the first inside a fused/named one) has a
 * file position, otherwise the location as MLIR prints it. */
static void printLocation(MlirLocation loc, FILE *out) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirIdentifier file = mlirLocationFileLineColRangeGetFilename(loc);
    MlirStringRef name = mlirIdentifierStr(file);
    fprintf(out, "%.*s:%d:%d: ", (int)name.length, name.data,
            mlirLocationFileLineColRangeGetStartLine(loc),
            mlirLocationFileLineColRangeGetStartColumn(loc));
    return;
  }
  mlirLocationPrint(loc, printToFile, out);
  fputs(": ", out);
}

/* Collects a diagnostic's message, to look for PIPER_NOTE_MARKER. */
typedef struct {
  char text[sizeof PIPER_NOTE_MARKER]; /* the first bytes of the message, NUL-terminated */
  size_t len;                          /* bytes in text */
} MessageStart;

static void collectStart(MlirStringRef s, void *userData) {
  MessageStart *m = userData;
  size_t room = sizeof m->text - 1 - m->len;
  size_t n = s.length < room ? s.length : room;
  memcpy(m->text + m->len, s.data, n);
  m->len += n;
  m->text[m->len] = 0;
}

MlirDiagnosticSeverity piperDiagnosticSeverity(MlirDiagnostic d, size_t *skip) {
  MlirDiagnosticSeverity sev = mlirDiagnosticGetSeverity(d);
  if (skip) *skip = 0;
  if (sev != MlirDiagnosticError) return sev;
  MessageStart m = {{0}, 0};
  mlirDiagnosticPrint(d, collectStart, &m);
  if (strcmp(m.text, PIPER_NOTE_MARKER)) return sev;
  if (skip) *skip = sizeof PIPER_NOTE_MARKER - 1;
  return MlirDiagnosticNote;
}

/* Prints a message less its first `skip` bytes. */
typedef struct {
  FILE *out;   /* borrowed */
  size_t skip; /* bytes still to drop */
} SkipPrinter;

static void printSkipping(MlirStringRef s, void *userData) {
  SkipPrinter *p = userData;
  size_t drop = s.length < p->skip ? s.length : p->skip;
  p->skip -= drop;
  fwrite(s.data + drop, 1, s.length - drop, p->out);
}

static MlirLogicalResult handleDiagnostic(MlirDiagnostic diag, void *userData) {
  DiagPrinter *p = userData;
  const char *severity = "error";
  size_t skip;
  switch (piperDiagnosticSeverity(diag, &skip)) {
  case MlirDiagnosticError: severity = "error"; if (p->errorCount) ++*p->errorCount; break;
  case MlirDiagnosticWarning: severity = "warning"; break;
  case MlirDiagnosticNote: severity = "note"; break;
  case MlirDiagnosticRemark: severity = "remark"; break;
  }
  printLocation(mlirDiagnosticGetLocation(diag), p->out);
  fprintf(p->out, "%s: ", severity);
  SkipPrinter sp = {p->out, skip};
  mlirDiagnosticPrint(diag, printSkipping, &sp);
  fputc('\n', p->out);
  for (intptr_t i = 0; i < mlirDiagnosticGetNumNotes(diag); ++i) {
    MlirDiagnostic note = mlirDiagnosticGetNote(diag, i);
    printLocation(mlirDiagnosticGetLocation(note), p->out);
    fputs("note: ", p->out);
    mlirDiagnosticPrint(note, printToFile, p->out);
    fputc('\n', p->out);
  }
  return mlirLogicalResultSuccess();
}

MlirDiagnosticHandlerID piperAttachDiagnosticPrinter(MlirContext ctx, FILE *out,
                                                      int *errorCount) {
  DiagPrinter *p = malloc(sizeof *p);
  p->out = out;
  p->errorCount = errorCount;
  return mlirContextAttachDiagnosticHandler(ctx, handleDiagnostic, p, free);
}
