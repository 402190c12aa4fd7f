/* --piper-import-strategy=FILE: appends the directives of FILE to the module as sched ops.
 * FILE is a Piper JSON schedule (see dialects/sched_import.c) or, if it ends in .mlir, a
 * module of sched ops written by hand. Either way one importer feeds one set of directive
 * passes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/directives.h"
#include "piper/piper.h"

static bool endsWith(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* Moves every sched op of the parsed `.mlir` strategy into `module`. */
static MlirLogicalResult importMlir(MlirOperation module, const char *path, const char *text) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirModule strategy = piperParseAndVerify(ctx, text, path);
  if (mlirModuleIsNull(strategy)) return mlirLogicalResultFailure();
  MlirBlock into = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(strategy));
  int nonSched = 0;
  while (!mlirOperationIsNull(op)) {
    MlirOperation next = mlirOperationGetNextInBlock(op);
    if (piperOpInDialect(op, "sched")) {
      mlirOperationRemoveFromParent(op);
      mlirBlockAppendOwnedOperation(into, op);
    } else if (!nonSched++) {
      char msg[640];
      snprintf(msg, sizeof msg, "a strategy file holds only sched ops (%s)",
               piperDirectiveNames());
      mlirEmitError(mlirOperationGetLocation(op), msg);
    }
    op = next;
  }
  mlirModuleDestroy(strategy);
  return nonSched ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

MlirLogicalResult piperImportStrategyText(MlirOperation module, const char *path,
                                          const char *text) {
  return endsWith(path, ".mlir")
             ? importMlir(module, path, text)
             : piperImportStrategyJSON(mlirModuleFromOperation(module), path, text);
}

static MlirLogicalResult runImport(MlirOperation module, const char *path) {
  if (!path || !*path) {
    mlirEmitError(mlirOperationGetLocation(module),
                  "--piper-import-strategy needs a file: --piper-import-strategy=s.json");
    return mlirLogicalResultFailure();
  }
  char *text = piperReadInput(path, NULL);
  if (!text) return mlirLogicalResultFailure();
  MlirLogicalResult r = piperImportStrategyText(module, path, text);
  free(text);
  return r;
}

MlirPass piperCreateImportStrategyPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-import-strategy", "import a strategy file",
                               runImport, arg);
}
