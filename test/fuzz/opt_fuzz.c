/* Fuzz target: piper-opt's parse + verify, then each of its pass pipelines, on arbitrary text.
 *
 * Input: MLIR text (a forward graph, a training graph, a global DAG with sched ops, per-device
 * plans: the seeds in corpus/opt hold one of each). Every input must end in success or in an
 * error diagnostic at every stage; see fuzz_pipeline.h for what counts as a bug. */
#include <stdlib.h>

#include "fuzz_pipeline.h"

/* The pipelines piper-opt users run, each from the parsed input. */
static void runPipelines(MlirContext ctx, MlirOperation module) {
  { /* forward graph -> training graph -> llvm dialect */
    MlirPass p[] = {piperCreateAutodiffPass(NULL), piperCreateLowerToLLVMPass(NULL)};
    fuzzRunOnClone(ctx, module, p, 2, "autodiff + lower-to-llvm");
  }
  { /* a graph that is already a training graph or a plan */
    MlirPass p[] = {piperCreateLowerToLLVMPass(NULL)};
    fuzzRunOnClone(ctx, module, p, 1, "lower-to-llvm");
  }
  { /* directives written inline as sched ops, applied in Piper's order, down to llvm */
    MlirPass p[] = {piperCreateSplitPass(NULL),   piperCreateSplitBackwardPass(NULL),
                    piperCreatePlacePass(NULL),   piperCreateShardPass(NULL),
                    piperCreateShardTensorPass(NULL),
                    piperCreateInsertCommPass(NULL), piperCreateReplicatePass(NULL),
                    piperCreateExtractPass(NULL), piperCreateVerifyPlanPass(NULL),
                    piperCreateLowerToLLVMPass(NULL)};
    fuzzRunOnClone(ctx, module, p, sizeof p / sizeof *p,
                   "directives + extract + verify-plan + lower-to-llvm");
  }
  { /* a global DAG: per-device plans, the no-hang proof, lowering */
    MlirPass p[] = {piperCreateExtractPass(NULL), piperCreateVerifyPlanPass(NULL),
                    piperCreateLowerToLLVMPass(NULL)};
    fuzzRunOnClone(ctx, module, p, 3, "extract + verify-plan + lower-to-llvm");
  }
  { /* a plan as written: prove it, then draw the DAG */
    MlirPass p[] = {piperCreateVerifyPlanPass(NULL), piperCreatePrintDagPass("/dev/null")};
    fuzzRunOnClone(ctx, module, p, 2, "verify-plan + print-dag");
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  MlirContext ctx = fuzzContext(NULL, NULL);
  char *text = fuzzCString(data, size);
  if (!text) return 0;
  fuzzTakeErrorCount();
  MlirModule module = piperParseAndVerify(ctx, text, "fuzz.mlir");
  free(text);
  fuzzReport("parse + verify", !mlirModuleIsNull(module));
  fuzzRequireDiagnostic(mlirModuleIsNull(module), "parse + verify");
  if (mlirModuleIsNull(module)) return 0;
  runPipelines(ctx, mlirModuleGetOperation(module));
  mlirModuleDestroy(module);
  return 0;
}
