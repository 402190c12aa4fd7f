/* piperCreateModulePass: a C function on the module as an MLIR external pass. Every piper pass
 * (passes/ and lowering/) is made with it, and the registry (tools/registry.c) names them all,
 * so it lives below both. */
#include <stdlib.h>
#include <string.h>

#include "piper/piper.h"

typedef struct {
  PiperModuleRunFn run; /* the pass body */
  char *arg;            /* option text after `=`, owned; NULL when none */
} ModulePass;

static MlirLogicalResult initialize(MlirContext ctx, void *userData) {
  return mlirLogicalResultSuccess();
}

static void destruct(void *userData) {
  ModulePass *p = userData;
  free(p->arg);
  free(p);
}

static void *clone(void *userData) {
  ModulePass *p = userData, *c = malloc(sizeof *c);
  c->run = p->run;
  c->arg = p->arg ? strdup(p->arg) : NULL;
  return c;
}

static void run(MlirOperation op, MlirExternalPass pass, void *userData) {
  ModulePass *p = userData;
  if (mlirLogicalResultIsFailure(p->run(op, p->arg))) mlirExternalPassSignalFailure(pass);
}

MlirPass piperCreateModulePass(void *typeId, const char *name, const char *summary,
                               PiperModuleRunFn fn, const char *arg) {
  ModulePass *p = malloc(sizeof *p);
  p->run = fn;
  p->arg = arg ? strdup(arg) : NULL;
  MlirExternalPassCallbacks cb = {0};
  cb.initialize = initialize;
  cb.destruct = destruct;
  cb.clone = clone;
  cb.run = run;
  return mlirCreateExternalPass(mlirTypeIDCreate(typeId), piperStr(name), piperStr(name),
                                piperStr(summary), piperStr("builtin.module"), 0, NULL, cb, p);
}
