/* The pass registry piper-opt and piper-compile share. LLVM 22 cannot register external passes
 * with upstream's pipeline parser, so piper keeps its own table, in pipeline order. */
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

static const PiperPassInfo registry[] = {
    {"piper-verify", "check tdag shapes and element types (also run after every parse)", NULL,
     piperCreateVerifyPass},
    {"piper-autodiff",
     "forward graph -> training graph: append backward ops and AdamW updates (idempotent)",
     NULL, piperCreateAutodiffPass},
    {"piper-import-strategy",
     "append the directives of a Piper JSON (or sched .mlir) strategy file as sched ops",
     "piper-import-strategy=FILE", piperCreateImportStrategyPass},
    {"piper-apply-strategy",
     "import FILE and apply its directives: split, split-backward, place, shard-tensor, "
     "insert-comm, replicate (the global "
     "DAG; add --piper-extract for per-device plans)",
     "piper-apply-strategy=FILE", NULL},
    {"piper-split", "split directive: copy forward/backward ops per microbatch", NULL,
     piperCreateSplitPass},
    {"piper-split-backward", "BI/BW: relabel backward ops of nodes an order names by BI or BW",
     NULL, piperCreateSplitBackwardPass},
    {"piper-place", "place directive: set the devices of the selected ops", NULL,
     piperCreatePlacePass},
    {"piper-shard-tensor",
     "shard_tensor directive: Megatron column/row splits of the selected regions over a "
     "tensor-parallel group, with their all-reduces",
     NULL, piperCreateShardTensorPass},
    {"piper-insert-comm", "send/recv for values crossing devices; copies of shared parameters",
     NULL, piperCreateInsertCommPass},
    {"piper-replicate", "replicate directive: gradient all-reduce over data-parallel replicas",
     NULL, piperCreateReplicatePass},
    {"piper-print-dag",
     "write the global DAG (nodes, data and transfer edges, devices) to FILE as Graphviz; "
     "the IR is unchanged",
     "piper-print-dag=FILE.dot", piperCreatePrintDagPass},
    {"piper-extract", "order directives + global DAG -> one function per device, in execution "
     "order", NULL, piperCreateExtractPass},
    {"piper-verify-plan",
     "prove the per-device plans cannot hang: simulate every send/recv and collective", NULL,
     piperCreateVerifyPlanPass},
    {"piper-lower-to-llvm",
     "training graph -> llvm dialect: plan memory, emit piper_setup/piper_step calling "
     "libpiper_rt",
     NULL, piperCreateLowerToLLVMPass},
    {NULL, NULL, NULL, NULL},
};

const PiperPassInfo *piperPassRegistry(void) { return registry; }

int piperStrategyPasses(const char *file, MlirPass *out, int max) {
  MlirPass all[7] = {piperCreateImportStrategyPass(file), piperCreateSplitPass(NULL),
                     piperCreateSplitBackwardPass(NULL), piperCreatePlacePass(NULL),
                     piperCreateShardTensorPass(NULL), piperCreateInsertCommPass(NULL),
                     piperCreateReplicatePass(NULL)};
  int n = max < 7 ? max : 7;
  for (int i = 0; i < n; ++i) out[i] = all[i];
  return n;
}

const PiperPassInfo *piperLookupPass(const char *name) {
  for (const PiperPassInfo *p = registry; p->name; ++p)
    if (!strcmp(p->name, name)) return p;
  return NULL;
}
