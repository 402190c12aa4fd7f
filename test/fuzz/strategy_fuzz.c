/* Fuzz target: the strategy importer and every directive pass, down to the lowering.
 *
 * Input: a strategy, as Piper JSON (text starting with '[' or '{') or as a module of sched
 * ops (anything else). It is applied to fixed training graphs built into the target: by
 * default a GPT of 2 stages and one of 4 (so pipeline, interleaved and V-shaped schedules all
 * have a model to match). An input whose first line starts with a model selector goes to one
 * other graph instead: "@moe" a 2-stage qwen3-moe with 4 experts (the shard directive, over 2
 * or 4 replicas), "@tp" a 2-stage GPT with 4 heads (shard_tensor over groups of 2 or 4). The
 * selector is blanked to spaces before the import, so line and column numbers are the file's.
 * Passes: import, split, split-backward, place, shard-tensor, insert-comm, replicate, extract,
 * verify-plan, lower-to-llvm, as `piper-compile --strategy` runs them. Every input must end
 * in success or an error diagnostic (fuzz_pipeline.h). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_pipeline.h"

/* Training graphs (piper-gen ... | piper-opt --piper-autodiff), embedded by the build; see
 * CMakeLists.txt. */
extern const char piper_fuzz_model_pp2[], piper_fuzz_model_pp4[], piper_fuzz_model_moe[],
    piper_fuzz_model_tp[];

enum { MODEL_PP2, MODEL_PP4, MODEL_MOE, MODEL_TP, MODEL_COUNT };
static MlirModule models[MODEL_COUNT]; /* parsed in the current context */

static void parseModels(MlirContext ctx) {
  const char *texts[MODEL_COUNT] = {piper_fuzz_model_pp2, piper_fuzz_model_pp4,
                                    piper_fuzz_model_moe, piper_fuzz_model_tp};
  for (int i = 0; i < MODEL_COUNT; ++i) {
    models[i] = piperParseAndVerify(ctx, texts[i], "model.mlir");
    if (mlirModuleIsNull(models[i])) abort(); /* the embedded model is broken: a build defect */
  }
}

static void destroyModels(void) {
  for (int i = 0; i < MODEL_COUNT; ++i) mlirModuleDestroy(models[i]);
}

/* The models `text` runs on, by its selector (blanked in place): their ids in `ids`, the
 * count returned. */
static int selectModels(char *text, int ids[2]) {
  static const struct { const char *word; int model; } selectors[] = {{"@moe", MODEL_MOE},
                                                                      {"@tp", MODEL_TP}};
  for (size_t i = 0; i < sizeof selectors / sizeof *selectors; ++i) {
    size_t n = strlen(selectors[i].word);
    if (strncmp(text, selectors[i].word, n)) continue;
    memset(text, ' ', n);
    ids[0] = selectors[i].model;
    return 1;
  }
  ids[0] = MODEL_PP2;
  ids[1] = MODEL_PP4;
  return 2;
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
                    piperCreatePlacePass(NULL),   piperCreateShardPass(NULL),
                    piperCreateShardTensorPass(NULL),
                    piperCreateInsertCommPass(NULL), piperCreateReplicatePass(NULL),
                    piperCreateExtractPass(NULL), piperCreateVerifyPlanPass(NULL),
                    piperCreateLowerToLLVMPass(NULL)};
    fuzzRunPasses(ctx, module, p, sizeof p / sizeof *p,
                  "directives + extract + verify-plan + lower-to-llvm");
  }
  mlirOperationDestroy(module);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bool fresh;
  MlirContext ctx = fuzzContext(&fresh, destroyModels);
  if (fresh) parseModels(ctx); /* the old modules died with the old context */
  char *text = fuzzCString(data, size);
  if (!text) return 0;
  int ids[2], n = selectModels(text, ids);
  const char *p = text;
  while (isspace((unsigned char)*p)) ++p;
  const char *path = (*p == '[' || *p == '{') ? "fuzz.json" : "fuzz.mlir";
  for (int i = 0; i < n; ++i)
    applyStrategy(ctx, mlirModuleGetOperation(models[ids[i]]), path, text);
  free(text);
  return 0;
}
