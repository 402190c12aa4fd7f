/* Helpers shared by the directive passes; see strategy.h for the IR conventions. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/checked.h"

const char *piperOpPass(MlirOperation op, char *buf, size_t size) {
  if (!piperGetStringAttr(op, "pass", buf, size)) snprintf(buf, size, "F");
  return buf;
}

bool piperFilterMatches(MlirOperation op, MlirAttribute filter) {
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  for (intptr_t i = 0; i < mlirDictionaryAttrGetNumElements(filter); ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(filter, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    /* the verifier refuses other kinds in sched ops; a filter that slips through matches
     * nothing rather than being read as the wrong kind */
    if (key.length == 4 && !memcmp(key.data, "PASS", 4)) {
      char pass[8];
      if (!mlirAttributeIsAString(e.attribute)) return false;
      MlirStringRef want = mlirStringAttrGetValue(e.attribute);
      piperOpPass(op, pass, sizeof pass);
      if (strlen(pass) != want.length || memcmp(pass, want.data, want.length)) return false;
      continue;
    }
    if (mlirAttributeIsNull(tags)) return false;
    MlirAttribute have = mlirDictionaryAttrGetElementByName(tags, key);
    if (mlirAttributeIsNull(have)) return false;
    if (mlirAttributeIsAString(e.attribute)) continue; /* "*": any index */
    if (!mlirAttributeIsAInteger(e.attribute) || !mlirAttributeIsAInteger(have) ||
        mlirIntegerAttrGetValueInt(have) != mlirIntegerAttrGetValueInt(e.attribute))
      return false;
  }
  return true;
}

MlirOperation piperTrainingFunction(MlirOperation module, const char *passName) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "func.func")) continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    if (mlirBlockIsNull(body)) continue;
    for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o))
      if (piperOpFacts(o) && piperOpFacts(o)->kind == PIPER_OP_UPDATE) return op;
  }
  char msg[160];
  snprintf(msg, sizeof msg, "%s: no training graph in the module (run --piper-autodiff first)",
           passName);
  mlirEmitError(mlirOperationGetLocation(module), msg);
  return (MlirOperation){NULL};
}

/* PIPER_BATCH_OPERANDS: batched iff some operand is; a sum_to that sums over dim 0 (to a
 * lower rank, or to dim 0 of another size) leaves the batch: its result is a weight
 * gradient's part, summed over the rows it had. */
static bool batchedLikeOperands(MlirOperation op) {
  bool any = false;
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op) && !any; ++k) {
    MlirValue a = mlirOperationGetOperand(op, k);
    any = mlirValueIsAOpResult(a) &&
          piperResultIsBatched(mlirOpResultGetOwner(a), mlirOpResultGetResultNumber(a));
  }
  if (!any || !piperOpIs(op, "tdag.sum_to")) return any;
  MlirType x = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType out = mlirValueGetType(mlirOperationGetResult(op, 0));
  return piperTensorRank(x) == piperTensorRank(out) &&
         piperTensorDim(x, 0) == piperTensorDim(out, 0);
}

bool piperResultIsBatched(MlirOperation op, intptr_t i) {
  if (piperOpIs(op, "comm.recv")) /* marked by insert-comm after the value it carries */
    return i == 0 && !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("batched")));
  if (piperOpIs(op, "comm.all_to_all")) { /* expert parallelism: exchanged rows stay per replica, */
    MlirValue a = mlirOperationGetOperand(op, 0); /* exchanged counts stay per expert */
    return i == 0 && mlirValueIsAOpResult(a) &&
           piperResultIsBatched(mlirOpResultGetOwner(a), mlirOpResultGetResultNumber(a));
  }
  if (piperOpIs(op, "comm.all_reduce")) {
    /* a tensor-parallel sum (shard_tensor.c) is batched as what it sums: activations are, a
     * per-head norm's weight gradient (qwen3's q_norm, k_norm) is not */
    MlirValue a = mlirOperationGetOperand(op, 0);
    return i == 0 &&
           !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce"))) &&
           mlirValueIsAOpResult(a) &&
           piperResultIsBatched(mlirOpResultGetOwner(a), mlirOpResultGetResultNumber(a));
  }
  if (piperIsRingOp(op)) /* context parallelism: every tensor result is per row, the token not */
    return i < mlirOperationGetNumResults(op) - 1;
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return false;
  if (f->likeOperand0) { /* a sum follows what it sums */
    MlirValue a = mlirOperationGetOperand(op, 0);
    return mlirValueIsAOpResult(a) &&
           piperResultIsBatched(mlirOpResultGetOwner(a), mlirOpResultGetResultNumber(a));
  }
  if (f->batch == PIPER_BATCH_SOME) return i >= 0 && i < 8 && ((f->batchedResults >> i) & 1);
  if (f->batch == PIPER_BATCH_OPERANDS) return batchedLikeOperands(op);
  return f->batch == PIPER_BATCH_ALL;
}

MlirType piperSplitBatch(MlirType t, int64_t parts) {
  int64_t rank = piperTensorRank(t);
  int64_t *shape = malloc((rank > 0 ? rank : 1) * sizeof *shape); /* any rank */
  for (int64_t d = 0; d < rank; ++d) shape[d] = piperTensorDim(t, d);
  if (rank > 0) shape[0] /= parts;
  MlirType split = mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(t),
                                           mlirAttributeGetNull());
  free(shape);
  return split;
}

void piperSetTag(MlirOperation op, const char *key, int64_t value) {
  MlirContext ctx = mlirOperationGetContext(op);
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  intptr_t n = mlirAttributeIsNull(tags) ? 0 : mlirDictionaryAttrGetNumElements(tags);
  MlirNamedAttribute *entries = malloc((n + 1) * sizeof *entries); /* every tag is kept */
  intptr_t k = 0;
  for (intptr_t i = 0; i < n; ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(tags, i);
    MlirStringRef name = mlirIdentifierStr(e.name);
    if (name.length == strlen(key) && !memcmp(name.data, key, name.length)) continue;
    entries[k++] = e;
  }
  entries[k++] = piperNamedAttr(ctx, key, mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), value));
  mlirOperationSetAttributeByName(op, piperStr("tags"), mlirDictionaryAttrGet(ctx, k, entries));
  free(entries);
}

void piperDirectiveError(MlirOperation directive, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  piperEmitErrorV(mlirOperationGetLocation(directive), fmt, ap);
  va_end(ap);
}

/* "[0, 1, 2]" into buf (at most `size` bytes, ending "...]" when the list is cut short). */
void piperDescribeDevices(MlirAttribute devices, char *buf, size_t size) {
  if (size < 6) {
    if (size) buf[0] = '\0';
    return;
  }
  size_t used = (size_t)snprintf(buf, size, "[");
  for (intptr_t i = 0; i < piperListLen(devices) && used < size; ++i)
    used += (size_t)snprintf(buf + used, size - used, "%s%lld", i ? ", " : "",
                             (long long)piperListAt(devices, i));
  if (used < size) snprintf(buf + used, size - used, "]");
  else memcpy(buf + size - 5, "...]", 5); /* a long list, cut short */
}

MlirLogicalResult piperApplyDirectives(MlirOperation module, const char *directive,
                                       const char *passName, PiperDirectiveFn apply) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation func = {NULL};
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, directive)) continue;
    if (mlirOperationIsNull(func) &&
        mlirOperationIsNull(func = piperTrainingFunction(module, passName)))
      return mlirLogicalResultFailure();
    if (mlirLogicalResultIsFailure(
            apply(d, mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0)))))
      return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}
