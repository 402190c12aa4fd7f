/* --piper-split-backward: BI/BW for zero-bubble schedules.
 *
 * When an order directive names PASS "BI" or "BW", the backward ops of the nodes its filters
 * select (same tags, any pass) are relabelled: ops that only produce weight gradients
 * (linear_grad_weight, bias_grad, embedding_grad, and sums of weight gradients) become BW;
 * the input-gradient chain that the previous stage waits for becomes BI. Autodiff already
 * emits the two halves of a matmul's backward as separate ops, so no op is rewritten: the
 * split is a relabelling the order directive can then schedule apart. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "passes/strategy.h"

/* `filter` without its PASS entry: the node's tags. */
static MlirAttribute withoutPass(MlirContext ctx, MlirAttribute filter) {
  intptr_t total = mlirDictionaryAttrGetNumElements(filter), n = 0;
  MlirNamedAttribute *entries = malloc((total ? total : 1) * sizeof *entries); /* every tag */
  for (intptr_t i = 0; i < total; ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(filter, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    if (!(key.length == 4 && !memcmp(key.data, "PASS", 4))) entries[n++] = e;
  }
  MlirAttribute node = mlirDictionaryAttrGet(ctx, n, entries);
  free(entries);
  return node;
}

static bool namesSplitPass(MlirAttribute filter) {
  MlirAttribute pass = mlirDictionaryAttrGetElementByName(filter, piperStr("PASS"));
  if (mlirAttributeIsNull(pass) || !mlirAttributeIsAString(pass)) return false;
  MlirStringRef p = mlirStringAttrGetValue(pass);
  return p.length == 2 && p.data[0] == 'B' && (p.data[1] == 'I' || p.data[1] == 'W');
}

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

static MlirLogicalResult runSplitBackward(MlirOperation module, const char *arg) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation func = {NULL};
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, "sched.order")) continue;
    MlirAttribute groups = mlirOperationGetAttributeByName(d, piperStr("filters"));
    for (intptr_t g = 0; g < mlirArrayAttrGetNumElements(groups); ++g) {
      MlirAttribute filters = mlirArrayAttrGetElement(groups, g);
      for (intptr_t f = 0; f < mlirArrayAttrGetNumElements(filters); ++f) {
        MlirAttribute filter = mlirArrayAttrGetElement(filters, f);
        if (!namesSplitPass(filter)) continue;
        if (mlirOperationIsNull(func) &&
            mlirOperationIsNull(func = piperTrainingFunction(module, "piper-split-backward")))
          return mlirLogicalResultFailure();
        MlirAttribute node = withoutPass(ctx, filter);
        MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
        for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
             op = mlirOperationGetNextInBlock(op)) {
          char pass[8];
          if (strcmp(piperOpPass(op, pass, sizeof pass), "B") || !piperFilterMatches(op, node))
            continue;
          mlirOperationSetAttributeByName(
              op, piperStr("pass"),
              mlirStringAttrGet(ctx, piperStr(isWeightGradient(op) ? "BW" : "BI")));
        }
      }
    }
  }
  return mlirLogicalResultSuccess();
}

MlirPass piperCreateSplitBackwardPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-split-backward", "BI/BW relabelling",
                               runSplitBackward, arg);
}
