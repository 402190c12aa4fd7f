/* --piper-precision=bf16|fp32: the bf16 mixed-precision policy as element types.
 *
 * Under bf16, every result the op-facts table stores as bf16 (include/piper/ops.h
 * bf16Results: activations and activation gradients) becomes tensor<...xbf16>, and a sum
 * (likeOperand0: add) of bf16 values is bf16 too; what the table does not name stays f32
 * (master weights, moments, weight gradients and their buckets, norm statistics, the loss and
 * its probabilities, attention's saved softmax, the router's weights). Transfers follow what
 * they carry: a comm op's tensor results take its operand's element type, a comm.recv its
 * comm.send's (paired by tag). An operand the table keeps fp32 (fp32Operands: the router's
 * scores) keeps its producer's result fp32. The types then size everything downstream
 * (piperTensorElementBytes): the memory plan, sends and all-to-alls move half the bytes. The
 * module gets piper.precision = "bf16", from which the lowering also rounds matmul weights
 * (bf16RoundOperands) and converts at each kernel's boundary (lower_compute.c).
 *
 * It runs after autodiff and the directive passes, before extract: every value of the global
 * DAG exists by then, and extract copies the types into the per-device plans. fp32 (the
 * default) changes nothing, so fp32 output stays byte-identical. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/piper.h"
#include "piper/ptrmap.h"

static bool isF32Tensor(MlirType t) { return piperTensorIsF32(t); }
static bool isBf16Tensor(MlirType t) {
  return mlirTypeIsARankedTensor(t) && mlirTypeIsABF16(mlirShapedTypeGetElementType(t));
}

/* `v` (an f32 tensor) as bf16; true if its type changed. */
static bool toBf16(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (!isF32Tensor(t)) return false;
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t shape[16];
  if (rank > 16) return false; /* the verifier's shapes are far smaller; leave it f32 */
  for (intptr_t i = 0; i < rank; ++i) shape[i] = mlirShapedTypeGetDimSize(t, i);
  mlirValueSetType(v, mlirRankedTensorTypeGet(rank, shape,
                                              mlirBF16TypeGet(mlirValueGetContext(v)),
                                              mlirRankedTensorTypeGetEncoding(t)));
  return true;
}

/* The comm.send ops of one function, found by tag for their comm.recv. */
typedef struct {
  MlirOperation *ops; /* owned */
  size_t n;
} Sends;

static MlirOperation sendTagged(const Sends *s, int64_t tag) {
  for (size_t i = 0; i < s->n; ++i)
    if (piperGetIntAttr(s->ops[i], "tag", -1) == tag) return s->ops[i];
  return (MlirOperation){NULL};
}

/* Every value some op reads as an fp32Operands operand: its producer keeps it fp32. */
static void markFp32Operands(MlirBlock body, PiperPtrMap *keep) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    const PiperOpFacts *f = piperOpFacts(op);
    for (intptr_t k = 0; f && k < mlirOperationGetNumOperands(op); ++k)
      if (piperFactsFp32Operand(f, k)) piperPtrMapPut(keep, mlirOperationGetOperand(op, k).ptr, 1);
  }
}

/* One op under the policy: true if a result's type changed. A tensor all-reduce of bf16
 * values is refused (*failed): the runtime sums fp32 (tensor parallelism's activation
 * all-reduce has no bf16 form yet). */
static bool applyOp(MlirOperation op, const Sends *sends, PiperPtrMap *keep, bool *failed) {
  bool changed = false;
  const PiperOpFacts *f = piperOpFacts(op);
  if (f) {
    bool sum = false; /* a sum of bf16 values is one */
    for (intptr_t k = 0; f->likeOperand0 && k < mlirOperationGetNumOperands(op); ++k)
      sum = sum || isBf16Tensor(mlirValueGetType(mlirOperationGetOperand(op, k)));
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      intptr_t kept;
      if ((piperFactsBf16Result(f, r) || sum) && !piperPtrMapGet(keep, v.ptr, &kept))
        changed |= toBf16(v);
    }
    return changed;
  }
  if (!piperOpInDialect(op, "comm") || piperOpIs(op, "comm.send") ||
      piperOpIs(op, "comm.recv_into") || piperOpIs(op, "comm.wait"))
    return false;
  MlirValue from = {NULL}; /* what the transfer carries */
  if (piperOpIs(op, "comm.recv")) {
    MlirOperation s = sendTagged(sends, piperGetIntAttr(op, "tag", -1));
    if (!mlirOperationIsNull(s)) from = mlirOperationGetOperand(s, 0);
  } else if (mlirOperationGetNumOperands(op) > 0) {
    from = mlirOperationGetOperand(op, 0);
  }
  if (!from.ptr || !isBf16Tensor(mlirValueGetType(from))) return false;
  if (piperIsRingOp(op)) { /* runtime/cp_attention.c computes in fp32 on fp32 buffers */
    if (!*failed)
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-precision: this ring attention (context parallelism, "
                    "shard_sequence) reads bf16 activations, which --precision bf16 does not "
                    "support yet; compile with --precision fp32, or without shard_sequence");
    *failed = true;
    return false;
  }
  if (piperOpIs(op, "comm.all_reduce")) {
    if (!*failed)
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-precision: this all-reduce sums bf16 activations (tensor "
                    "parallelism), which --precision bf16 does not support yet; compile with "
                    "--precision fp32, or without tensor parallelism");
    *failed = true;
    return false;
  }
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r)
    changed |= toBf16(mlirOperationGetResult(op, r));
  return changed;
}

/* Applies the policy to one function until no type changes: a recv may come before its send
 * in program order, and what the send carries may itself follow from a recv. Types only ever
 * go from f32 to bf16, so this ends. */
static MlirLogicalResult applyFunction(MlirOperation func) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  Sends sends = {NULL, 0};
  size_t cap = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "comm.send")) continue;
    if (sends.n == cap) {
      cap = cap ? 2 * cap : 16;
      MlirOperation *grown = realloc(sends.ops, cap * sizeof *grown);
      if (!grown) {
        free(sends.ops);
        mlirEmitError(mlirOperationGetLocation(func), "piper-precision: out of memory");
        return mlirLogicalResultFailure();
      }
      sends.ops = grown;
    }
    sends.ops[sends.n++] = op;
  }
  PiperPtrMap keep;
  piperPtrMapInit(&keep, 16);
  markFp32Operands(body, &keep);
  bool changed = true, failed = false;
  while (changed && !failed) {
    changed = false;
    for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      changed |= applyOp(op, &sends, &keep, &failed);
  }
  piperPtrMapFree(&keep);
  free(sends.ops);
  return failed ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

static MlirLogicalResult runPrecision(MlirOperation module, const char *arg) {
  if (!arg || !strcmp(arg, "fp32")) return mlirLogicalResultSuccess();
  if (strcmp(arg, "bf16")) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-precision: '%s': expected fp32 or bf16", arg);
    return mlirLogicalResultFailure();
  }
  /* Every target has the conversions' kernels (include/piper/kernels.def bf16_*): the CPU
   * emulates, the GPU converts with device kernels of the same arithmetic. A target without
   * them is refused by the lowering at the first conversion, as any op whose kernel it lacks. */
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (piperOpIs(f, "func.func") && mlirLogicalResultIsFailure(applyFunction(f)))
      return mlirLogicalResultFailure();
  MlirContext ctx = mlirOperationGetContext(module);
  mlirOperationSetAttributeByName(module, piperStr("piper.precision"),
                                  mlirStringAttrGet(ctx, piperStr("bf16")));
  return mlirLogicalResultSuccess();
}

MlirPass piperCreatePrecisionPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-precision",
                               "mixed precision: store activations and their gradients as bf16",
                               runPrecision, arg);
}
