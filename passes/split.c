/* --piper-split: the `split` directive. Copies the selected forward and backward ops once per
 * microbatch along the batch dimension; copy i gets tag {dim_name = i}, its inputs read rows
 * [i*B/M, (i+1)*B/M) of the batch, its loss reports the rows it averages over, and its loss
 * gradient keeps the whole batch's row count, so the microbatch gradients sum to exactly the
 * full-batch gradient. Values leaving the selection (weight gradients feeding the update) are
 * summed over the microbatches with tdag.add. Parameters, optimizer state and updates are
 * shared, never copied. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/ptrmap.h"

static bool isSplittable(MlirOperation op) {
  char pass[8];
  const PiperOpFacts *f = piperOpFacts(op); /* state (params, moments) is never split */
  return f && f->kind != PIPER_OP_STATE && strcmp(piperOpPass(op, pass, sizeof pass), "UPD");
}

/* Rows of the batch the op's batched results have (their leading dim), or -1 if none. */
static int64_t batchRows(MlirOperation op) {
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r)
    if (piperResultIsBatched(op, r))
      return piperTensorDim(mlirValueGetType(mlirOperationGetResult(op, r)), 0);
  return -1;
}

/* Rows * sequence positions the op's loss-side tensors cover (cross_entropy logits/probs). */
static int64_t lossRows(MlirOperation op, intptr_t operand) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, operand));
  return piperTensorNumel(t) / piperTensorDim(t, -1);
}

static bool inSelection(const PiperPtrMap *selected, MlirOperation op) {
  return piperPtrMapGet(selected, op.ptr, NULL);
}

static MlirLogicalResult applySplit(MlirOperation directive, MlirBlock body) {
  MlirContext ctx = mlirOperationGetContext(directive);
  MlirAttribute filter = mlirOperationGetAttributeByName(directive, piperStr("filter"));
  char *dim = NULL; /* the whole name: it becomes a tag later filters must match */
  {
    MlirAttribute a = mlirOperationGetAttributeByName(directive, piperStr("dim_name"));
    MlirStringRef r = mlirAttributeIsAString(a) ? mlirStringAttrGetValue(a) : piperStr("mb");
    dim = strndup(r.data, r.length);
  }
  int64_t M = piperGetIntAttr(directive, "num_microbatches", 1);

  size_t n = 0, cap = 64;
  MlirOperation *ops = malloc(cap * sizeof *ops);
  PiperPtrMap selected;
  piperPtrMapInit(&selected, 256);
  int64_t B = -1;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!isSplittable(op) || !piperFilterMatches(op, filter)) continue;
    MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
    if (!mlirAttributeIsNull(tags) &&
        !mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(tags, piperStr(dim)))) {
      piperDirectiveError(directive, "split: ops are already split along '%s'; give each "
                                     "split its own dim_name", dim);
      goto fail;
    }
    int64_t rows = batchRows(op);
    if (rows > 0 && B < 0) B = rows;
    if (rows > 0 && rows % M) {
      piperDirectiveError(directive, "split: %lld microbatches do not divide the batch of "
                                     "%lld rows; use a divisor of %lld",
                          (long long)M, (long long)rows, (long long)rows);
      goto fail;
    }
    if (n == cap) ops = realloc(ops, (cap *= 2) * sizeof *ops);
    ops[n++] = op;
    piperPtrMapPut(&selected, op.ptr, 1);
  }
  if (n == 0 || B < 0) {
    piperDirectiveError(directive, "split: the filter matches no forward or backward op of the "
                                   "model; check its tag names and indices");
    goto fail;
  }

  PiperPtrMap *copyOf = malloc(M * sizeof *copyOf); /* original value -> its copy in mb i */
  for (int64_t i = 0; i < M; ++i) piperPtrMapInit(&copyOf[i], n * 2);
  for (size_t k = 0; k < n; ++k) {
    MlirOperation op = ops[k];
    for (int64_t i = 0; i < M; ++i) {
      MlirOperation c = mlirOperationClone(op);
      mlirBlockInsertOwnedOperationBefore(body, op, c);
      for (intptr_t a = 0; a < mlirOperationGetNumOperands(c); ++a) {
        intptr_t v;
        if (piperPtrMapGet(&copyOf[i], mlirOperationGetOperand(c, a).ptr, &v))
          mlirOperationSetOperand(c, a, (MlirValue){(const void *)v});
      }
      for (intptr_t r = 0; r < mlirOperationGetNumResults(c); ++r) {
        MlirValue res = mlirOperationGetResult(c, r);
        if (piperResultIsBatched(op, r))
          mlirValueSetType(res, piperSplitBatch(mlirValueGetType(res), M));
        piperPtrMapPut(&copyOf[i], mlirOperationGetResult(op, r).ptr, (intptr_t)res.ptr);
      }
      piperSetTag(c, dim, i);
      if (piperIsOp(op, PIPER_TDAG_INPUT)) {
        int64_t first = piperGetIntAttr(op, "first_sample", 0);
        mlirOperationSetAttributeByName(c, piperStr("first_sample"),
                                        piperI64Attr(ctx, first + i * (B / M)));
      } else if (piperIsOp(op, PIPER_TDAG_CROSS_ENTROPY_GRAD)) {
        /* the gradient of the whole batch's mean loss: divide by all rows, not this copy's */
        mlirOperationSetAttributeByName(
            c, piperStr("total_rows"),
            piperI64Attr(ctx, piperGetIntAttr(op, "total_rows", lossRows(op, 0))));
      }
    }
  }
  /* Values used outside the selection: weight gradients are summed over microbatches. */
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t k = 0; k < n && mlirLogicalResultIsSuccess(status); ++k) {
    MlirOperation op = ops[k];
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue orig = mlirOperationGetResult(op, r);
      bool escapes = false;
      for (MlirOpOperand u = mlirValueGetFirstUse(orig); !mlirOpOperandIsNull(u);
           u = mlirOpOperandGetNextUse(u))
        escapes |= !inSelection(&selected, mlirOpOperandGetOwner(u));
      if (!escapes) continue;
      if (piperResultIsBatched(op, r)) {
        mlirEmitError(mlirOperationGetLocation(op),
                      "split: this activation leaves the split part of the model, which would "
                      "need its microbatches joined again; split the whole model "
                      "(filter {\"PP\": \"*\"})");
        status = mlirLogicalResultFailure();
        break;
      }
      intptr_t v;
      piperPtrMapGet(&copyOf[0], orig.ptr, &v);
      MlirValue acc = {(const void *)v};
      MlirType t = mlirValueGetType(orig);
      for (int64_t i = 1; i < M; ++i) {
        piperPtrMapGet(&copyOf[i], orig.ptr, &v);
        MlirValue pair[2] = {acc, {(const void *)v}};
        MlirOperation add = piperTdagOpCreate(PIPER_TDAG_ADD, mlirOperationGetLocation(op), 2,
                                              pair, 1, &t, 0, NULL);
        mlirBlockInsertOwnedOperationBefore(body, op, add);
        MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
        if (!mlirAttributeIsNull(tags)) mlirOperationSetAttributeByName(add, piperStr("tags"), tags);
        mlirOperationSetAttributeByName(add, piperStr("pass"),
                                        mlirOperationGetAttributeByName(op, piperStr("pass")));
        /* No microbatch tag: an order directive cannot pin the sum to one microbatch's
         * backward, so microbatches may run their backwards in any order; it runs as soon as
         * both addends exist (see --piper-extract). */
        acc = mlirOperationGetResult(add, 0);
      }
      /* rewire the outside users, then drop the original */
      MlirOpOperand u = mlirValueGetFirstUse(orig);
      while (!mlirOpOperandIsNull(u)) {
        MlirOpOperand next = mlirOpOperandGetNextUse(u);
        MlirOperation owner = mlirOpOperandGetOwner(u);
        if (!inSelection(&selected, owner))
          mlirOperationSetOperand(owner, mlirOpOperandGetOperandNumber(u), acc);
        u = next;
      }
    }
  }
  if (mlirLogicalResultIsSuccess(status))
    for (size_t k = n; k-- > 0;) mlirOperationDestroy(ops[k]);
  for (int64_t i = 0; i < M; ++i) piperPtrMapFree(&copyOf[i]);
  free(copyOf);
  piperPtrMapFree(&selected);
  free(ops);
  free(dim);
  return status;
fail:
  piperPtrMapFree(&selected);
  free(ops);
  free(dim);
  return mlirLogicalResultFailure();
}

static MlirLogicalResult runSplit(MlirOperation module, const char *arg) {
  return piperApplyDirectives(module, "sched.split", "piper-split", applySplit);
}

MlirPass piperCreateSplitPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-split", "microbatch split", runSplit, arg);
}
