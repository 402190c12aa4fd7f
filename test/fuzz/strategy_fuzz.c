/* Fuzz target: the strategy importer and every directive pass, down to the lowering.
 *
 * Input: a strategy, as Piper JSON (text starting with '[' or '{') or as a module of sched
 * ops (anything else). It is applied to two fixed training graphs built into the target, a
 * GPT of 2 stages and one of 4 (so pipeline, interleaved and V-shaped schedules all have a
 * model to match): import, split, split-backward, place, insert-comm, replicate, extract,
 * verify-plan, lower-to-llvm, as `piper-compile --strategy` runs them. Every input must end
 * in success or an error diagnostic (fuzz_pipeline.h). */
#include <ctype.h>
#include <stdlib.h>

#include "fuzz_pipeline.h"

/* Training graphs (piper-gen gpt ... --stages S | piper-opt --piper-autodiff), embedded by
 * the build; see CMakeLists.txt. */
extern const char piper_fuzz_model_pp2[], piper_fuzz_model_pp4[];

static MlirModule models[2]; /* parsed in the current context */

static void parseModels(MlirContext ctx) {
  const char *texts[2] = {piper_fuzz_model_pp2, piper_fuzz_model_pp4};
  for (int i = 0; i < 2; ++i) {
    models[i] = piperParseAndVerify(ctx, texts[i], "model.mlir");
    if (mlirModuleIsNull(models[i])) abort(); /* the embedded model is broken: a build defect */
  }
}

static void destroyModels(void) {
  for (int i = 0; i < 2; ++i) mlirModuleDestroy(models[i]);
}

static void applyStrategy(MlirContext ctx, MlirOperation model, const char *path,
                          const char *text) {
  MlirOperation module = mlirOperationClone(model);
  fuzzTakeErrorCount();
  bool imported = mlirLogicalResultIsSuccess(piperImportStrategyText(module, path, text));
  fuzzReport("import", imported);
  fuzzRequireDiagnostic(!imported, "import");
  if (imported) {
    MlirPass p[] = {piperCreateSplitPass(NULL),   piperCreateSplitBackwardPass(NULL),
                    piperCreatePlacePass(NULL),   piperCreateInsertCommPass(NULL),
                    piperCreateReplicatePass(NULL), piperCreateExtractPass(NULL),
                    piperCreateVerifyPlanPass(NULL), piperCreateLowerToLLVMPass(NULL)};
    fuzzRunPasses(ctx, module, p, 8, "directives + extract + verify-plan + lower-to-llvm");
  }
  mlirOperationDestroy(module);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool fresh;
  MlirContext ctx = fuzzContext(&fresh, destroyModels);
  if (fresh) parseModels(ctx); /* the old modules died with the old context */
  char *text = fuzzCString(data, size);
  if (!text) return 0;
  const char *p = text;
  while (isspace((unsigned char)*p)) ++p;
  const char *path = (*p == '[' || *p == '{') ? "fuzz.json" : "fuzz.mlir";
  for (int i = 0; i < 2; ++i) applyStrategy(ctx, mlirModuleGetOperation(models[i]), path, text);
  free(text);
  return 0;
}
