/* --piper-precision=bf16|fp32: the bf16 mixed-precision policy as element types.
 *
 * Under bf16, every result the op-facts table stores as bf16 (include/piper/ops.h
 * bf16Results: activations and activation gradients) becomes tensor<...xbf16>, and a sum
 * (likeOperand0: add) of bf16 values is bf16 too; what the table does not name stays f32
 * (master weights, moments, weight gradients and their buckets, norm statistics, the loss and
 * its probabilities, attention's saved softmax, the router's weights; and a general op's result
 * that is not batched: computed from parameters and constants alone). Transfers follow what
 * they carry: a comm op's tensor results take its operand's element type, a comm.recv its
 * comm.send's (paired by tag). An operand the table keeps fp32 (fp32Operands: the router's
 * scores) keeps its producer's result fp32. A tensor-parallel sum (tp_reduce) of activations
 * or activation gradients is summed fp32 and rounded once after (roundTpSums): its partials stay
 * fp32, and a tdag.cast rounds the sum for the readers that want bf16. Context parallelism's
 * ring attention ops follow their rows' bf16Results (include/piper/comm_ops.def). The types
 * then size everything downstream (piperTensorElementBytes): the memory plan, sends and
 * all-to-alls move half the bytes. The module gets piper.precision = "bf16", from which the
 * lowering also rounds matmul weights (bf16RoundOperands) and converts at each kernel's
 * boundary (lower_compute.c).
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

/* `v` (an f32 tensor) as bf16; true if its type changed. */
static bool toBf16(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (!isF32Tensor(t)) return false;
  MlirType bf16 = piperTensorWithElement(t, mlirBF16TypeGet(mlirValueGetContext(v)));
  if (mlirTypeIsNull(bf16)) return false; /* past 16 dims, far beyond the verifier's: f32 */
  mlirValueSetType(v, bf16);
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

/* Whether `v` would be stored bf16 by the table's policy, before any value is kept fp32: a
 * result the producer's row stores bf16, or a sum (likeOperand0) of such values. `depth`
 * bounds the walk through chains of sums (a TP region sums at most a few partials). */
static bool policyWantsBf16(MlirValue v, int depth) {
  if (!mlirValueIsAOpResult(v) || depth > 16) return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f || f->cast) return false;
  if (piperFactsBf16Result(f, mlirOpResultGetResultNumber(v))) return true;
  for (intptr_t k = 0; f->likeOperand0 && k < mlirOperationGetNumOperands(op); ++k)
    if (policyWantsBf16(mlirOperationGetOperand(op, k), depth + 1)) return true;
  return false;
}

/* `v`, a partial sum a tensor-parallel all-reduce completes, and the partials summed into it
 * (the operands of likeOperand0 sums: Qwen3's q, k and v input gradients) stay fp32. */
static void keepPartial(MlirValue v, PiperPtrMap *keep, int depth) {
  piperPtrMapPut(keep, v.ptr, 1);
  if (!mlirValueIsAOpResult(v) || depth > 16) return;
  MlirOperation op = mlirOpResultGetOwner(v);
  const PiperOpFacts *f = piperOpFacts(op);
  for (intptr_t k = 0; f && f->likeOperand0 && !f->cast && k < mlirOperationGetNumOperands(op);
       ++k)
    keepPartial(mlirOperationGetOperand(op, k), keep, depth + 1);
}

/* Tensor parallelism's sums of activations (and of activation gradients) under bf16: each
 * member's partial product stays fp32, the all-reduce sums fp32, and the sum is rounded to
 * bf16 once, after it: by a tdag.cast placed before its first reader, which every reader
 * then reads, except a reader that takes it in fp32 (fp32Operands: the row-parallel linear's
 * bias_add, whose own bf16 result is then the one rounding of sum + bias, as the one-device
 * linear rounds x W^T + b once). A TP run then equals the one-device bf16 run up to the order
 * of the fp32 sums. Weight gradients the group sums (Qwen3's q_norm, k_norm) are fp32 under the
 * policy anyway and are left alone. */
static void roundTpSums(MlirBlock body, PiperPtrMap *keep) {
  for (MlirOperation ar = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(ar);
       ar = mlirOperationGetNextInBlock(ar)) {
    if (!piperOpIs(ar, "comm.all_reduce") ||
        mlirAttributeIsNull(mlirOperationGetAttributeByName(ar, piperStr("tp_reduce"))) ||
        !policyWantsBf16(mlirOperationGetOperand(ar, 0), 0))
      continue;
    keepPartial(mlirOperationGetOperand(ar, 0), keep, 0);
    MlirValue sum = mlirOperationGetResult(ar, 0);
    piperPtrMapPut(keep, sum.ptr, 1);
    /* the first reader (in block order) that wants bf16: the cast goes right before it, so the
     * all-reduce's wait (extract puts it before the first reader) still overlaps what lies
     * between them */
    MlirOperation first = {NULL};
    for (MlirOperation o = mlirOperationGetNextInBlock(ar); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o)) {
      const PiperOpFacts *f = piperOpFacts(o);
      for (intptr_t k = 0; mlirOperationIsNull(first) && k < mlirOperationGetNumOperands(o); ++k)
        if (mlirValueEqual(mlirOperationGetOperand(o, k), sum) && !piperFactsFp32Operand(f, k))
          first = o;
      if (!mlirOperationIsNull(first)) break;
    }
    if (mlirOperationIsNull(first)) continue; /* every reader takes fp32: bias_add */
    MlirType t = mlirValueGetType(sum);
    MlirOperation cast = piperTdagOpCreate(PIPER_TDAG_CAST, mlirOperationGetLocation(ar), 1,
                                           &sum, 1, &t, 0, NULL);
    piperCopyPlacement(cast, ar);
    mlirBlockInsertOwnedOperationBefore(body, first, cast);
    MlirValue rounded = mlirOperationGetResult(cast, 0);
    toBf16(rounded);
    /* every reader but the fp32 ones reads the rounded sum */
    for (MlirOperation o = cast; !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
      const PiperOpFacts *f = piperOpFacts(o);
      if (mlirOperationEqual(o, cast)) continue;
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(o); ++k)
        if (mlirValueEqual(mlirOperationGetOperand(o, k), sum) && !piperFactsFp32Operand(f, k))
          mlirOperationSetOperand(o, k, rounded);
    }
  }
}

/* One op under the policy: true if a result's type changed. An all-reduce of bf16 values is
 * refused (*failed): the runtime sums fp32, and tensor parallelism's sums are kept fp32 before
 * this runs (roundTpSums), so one left is a plan this pass does not know. */
static bool applyOp(MlirOperation op, const Sends *sends, PiperPtrMap *keep, bool *failed) {
  bool changed = false;
  const PiperOpFacts *f = piperOpFacts(op);
  if (f && f->cast) return false; /* its maker chose its types */
  if (f) {
    bool sum = false; /* a sum of bf16 values is one */
    for (intptr_t k = 0; f->likeOperand0 && k < mlirOperationGetNumOperands(op); ++k)
      sum = sum || piperTensorIsBf16(mlirValueGetType(mlirOperationGetOperand(op, k)));
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      intptr_t kept;
      /* a general op (an exported model's) computes activations when batched, else from
       * parameters and constants alone: a weight, a weight gradient, a mask, kept fp32 */
      if (f->batch == PIPER_BATCH_OPERANDS && !piperResultIsBatched(op, r)) continue;
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
  if (!from.ptr || !piperTensorIsBf16(mlirValueGetType(from))) return false;
  if (piperIsRingOp(op)) {
    /* context parallelism's ring attention: its row's bf16Results (include/piper/comm_ops.def).
     * The lowering widens the ring's bf16 operands into fp32 scratch and narrows its bf16
     * results (lwConversionOf), so runtime/cp_attention.c computes in fp32 as before and its
     * blocks travel in fp32. */
    uint8_t bf16Results = piperCommFacts(op)->bf16Results;
    for (intptr_t r = 0; r + 1 < mlirOperationGetNumResults(op) && r < 8; ++r)
      if ((bf16Results >> r) & 1) changed |= toBf16(mlirOperationGetResult(op, r));
    return changed;
  }
  if (piperOpIs(op, "comm.all_reduce")) {
    if (!*failed)
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-precision: this all-reduce sums bf16 values, which the runtime "
                    "cannot (it sums fp32; a tensor-parallel sum, tp_reduce, is kept fp32 and "
                    "rounded after); compile with --precision fp32");
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
  roundTpSums(body, &keep);
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
