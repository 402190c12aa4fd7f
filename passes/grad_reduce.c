/* --piper-grad-reduce=bf16|fp32: the data-parallel gradient reductions move bf16.
 *
 * Under bf16, each gradient reduction (a comm.all_reduce of weight gradients or a bucket of
 * them, from replicate and the expert passes; a ZeRO comm.reduce_scatter) reads a bf16 copy of
 * its fp32 gradient and gives a bf16 result, which a tdag.cast widens back to fp32 before the
 * first reader (the AdamW update, a bucket's views):
 *
 *   %g16 = tdag.cast(%g) : f32 -> bf16           each replica's gradient rounded once
 *   %s16, %t = comm.all_reduce(%g16)            half the bytes; the runtime adds each pair
 *                                               in fp32 and rounds the sum to bf16
 *   %s = tdag.cast(%s16) : bf16 -> f32           exact; AdamW and its moments stay fp32
 *
 * The lowering calls prt_iall_reduce_bf16 / prt_ireduce_scatter_bf16 for a bf16 collective
 * (lower_comm.c). Tensor parallelism's sums of activations (tp_reduce, batched: their rounding
 * is --precision's, passes/precision.c) and the parameter all-gathers of ZeRO stay as they are.
 * It runs after the directives and --piper-precision, before extract, so the casts are placed
 * like any op and the waits and the memory plan follow the types. fp32 (the default) changes
 * nothing. */
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/piper.h"

/* A tdag.cast of `v` to `t`, placed like `like` (its tags, pass and devices), before `at`. */
static MlirValue castBefore(MlirBlock body, MlirOperation at, MlirOperation like, MlirValue v,
                            MlirType t) {
  MlirOperation cast = piperTdagOpCreate(PIPER_TDAG_CAST, mlirOperationGetLocation(like), 1, &v,
                                         1, &t, 0, NULL);
  piperCopyPlacement(cast, like);
  mlirBlockInsertOwnedOperationBefore(body, at, cast);
  return mlirOperationGetResult(cast, 0);
}

/* Whether `op` reduces weight gradients: every reduce-scatter (ZeRO), and every all-reduce but
 * tensor parallelism's batched sums of activations. */
static bool isGradientReduction(MlirOperation op) {
  if (piperOpIs(op, "comm.reduce_scatter")) return true;
  return piperOpIs(op, "comm.all_reduce") && !piperResultIsBatched(op, 0);
}

/* One gradient reduction `op` to bf16 (see the file comment); false (with a diagnostic) if its
 * operand is not an fp32 tensor of at most 16 dims. */
static bool reduceInBf16(MlirBlock body, MlirOperation op) {
  MlirValue g = mlirOperationGetOperand(op, 0);
  MlirType t = mlirValueGetType(g);
  if (!piperTensorIsF32(t) || mlirShapedTypeGetRank(t) > 16) {
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-grad-reduce: this gradient reduction reads %s, expected an fp32 "
                    "tensor of at most 16 dims (the gradients the policy keeps fp32)",
                    piperTensorIsF32(t) ? "a tensor of more than 16 dims" : "a non-fp32 value");
    return false;
  }
  MlirContext ctx = mlirOperationGetContext(op);
  MlirType bf16 = mlirBF16TypeGet(ctx), f32 = mlirF32TypeGet(ctx);
  mlirOperationSetOperand(op, 0, castBefore(body, op, op, g, piperTensorWithElement(t, bf16)));
  MlirValue sum = mlirOperationGetResult(op, 0);
  MlirType sumType = mlirValueGetType(sum);
  mlirValueSetType(sum, piperTensorWithElement(sumType, bf16));
  /* the widening cast before the first reader: the transfer stays in flight until then */
  MlirOperation first = {NULL};
  for (MlirOperation o = mlirOperationGetNextInBlock(op);
       mlirOperationIsNull(first) && !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(o); ++k)
      if (mlirValueEqual(mlirOperationGetOperand(o, k), sum)) first = o;
  if (mlirOperationIsNull(first)) return true; /* nothing reads the sum here */
  MlirValue wide = castBefore(body, first, op, sum, piperTensorWithElement(sumType, f32));
  MlirOperation cast = mlirOpResultGetOwner(wide);
  mlirValueReplaceAllUsesExcept(sum, wide, 1, &cast);
  return true;
}

static MlirLogicalResult runGradReduce(MlirOperation module, const char *arg) {
  if (!arg || !strcmp(arg, "fp32")) return mlirLogicalResultSuccess();
  if (strcmp(arg, "bf16")) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-grad-reduce: '%s': expected fp32 or bf16", arg);
    return mlirLogicalResultFailure();
  }
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  bool ok = true;
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!piperOpIs(f, "func.func")) continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    if (mlirBlockIsNull(body)) continue;
    for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      if (isGradientReduction(op) && !reduceInBf16(body, op)) ok = false;
  }
  return ok ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}

MlirPass piperCreateGradReducePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-grad-reduce",
                               "gradient reductions in bf16: round each replica's gradient, "
                               "sum in fp32 pairwise, widen the sum back to fp32",
                               runGradReduce, arg);
}
