/* --piper-split-backward: BI/BW for zero-bubble schedules.
 *
 * When an order directive names PASS "BI" or "BW", the backward ops of the nodes its filters
 * select (same tags, any pass) are relabelled: ops that only produce weight gradients
 * (linear_grad_weight, bias_grad, embedding_grad, and sums of weight gradients) become BW;
 * the input-gradient chain that the previous stage waits for becomes BI. Autodiff already
 * emits the two halves of a matmul's backward as separate ops, so no op is rewritten: the
 * split is a relabelling the order directive can then schedule apart. The order directive's
 * filters are read in order.c. */
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "passes/strategy.h"

static bool isWeightGradient(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  intptr_t n = mlirOperationGetNumResults(op);
  if (!f) return false;
  if (f->likeOperand0) return !piperResultIsBatched(op, 0); /* a sum of weight gradients */
  if (f->kind != PIPER_OP_BACKWARD || n == 0) return false;
  for (intptr_t r = 0; r < n; ++r) /* every result: a backward with an input gradient is BI */
    if (!piperFactsWeightGrad(f, r)) return false;
  return true;
}

/* The module whose training graph is relabelled; its function is looked up at the first
 * BI/BW filter (a strategy without one needs no training graph here). */
typedef struct {
  MlirOperation module;
  MlirOperation func; /* the training function, null until asked */
} SplitBackward;

/* Relabels the backward ops of `node` (tags, any pass) BW or BI. */
static MlirLogicalResult relabelNode(MlirAttribute node, void *userData) {
  SplitBackward *sb = userData;
  if (mlirOperationIsNull(sb->func) &&
      mlirOperationIsNull(sb->func = piperTrainingFunction(sb->module, "piper-split-backward")))
    return mlirLogicalResultFailure();
  MlirContext ctx = mlirOperationGetContext(sb->module);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(sb->func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    char pass[8];
    if (strcmp(piperOpPass(op, pass, sizeof pass), "B") || !piperFilterMatches(op, node))
      continue;
    mlirOperationSetAttributeByName(
        op, piperStr("pass"),
        mlirStringAttrGet(ctx, piperStr(isWeightGradient(op) ? "BW" : "BI")));
  }
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runSplitBackward(MlirOperation module, const char *arg) {
  SplitBackward sb = {.module = module};
  return piperOrderForEachSplitNode(module, relabelNode, &sb);
}

MlirPass piperCreateSplitBackwardPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-split-backward", "BI/BW relabelling",
                               runSplitBackward, arg);
}
