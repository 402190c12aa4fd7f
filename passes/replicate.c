/* --piper-replicate: the `replicate` directive (data parallelism).
 *
 * Place already put the selected ops on all the replica devices (one op, a device list);
 * extraction gives each replica its slice of the batch. What replicate adds is the gradient
 * reduction: every parameter update among the selected ops gets its gradient summed over the
 * replicas by a comm.all_reduce, issued right after the gradient is produced (on the
 * directive's reduce_stream, so it overlaps the rest of the backward pass) and waited for by
 * the update. The ZeRO variants (shard_optim, shard_grads, shard_params) are refused for now
 * with a diagnostic rather than silently run unsharded. */
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"

static bool sameDevices(MlirAttribute a, MlirAttribute b) {
  if (mlirArrayAttrGetNumElements(a) != mlirArrayAttrGetNumElements(b)) return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(a); ++i) {
    int64_t x = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(a, i)), found = 0;
    for (intptr_t j = 0; j < mlirArrayAttrGetNumElements(b); ++j)
      found |= x == mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(b, j));
    if (!found) return false;
  }
  return true;
}

static MlirLogicalResult applyReplicate(MlirOperation d, MlirBlock body) {
  MlirContext ctx = mlirOperationGetContext(d);
  static const char *zero[] = {"shard_optim", "shard_grads", "shard_params"};
  for (int i = 0; i < 3; ++i)
    if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(d, piperStr(zero[i])))) {
      piperDirectiveError(d, "replicate: %s (ZeRO) is not implemented yet; drop it to run plain "
                             "data parallelism", zero[i]);
      return mlirLogicalResultFailure();
    }
  MlirAttribute filter = mlirOperationGetAttributeByName(d, piperStr("filter"));
  MlirAttribute devices = mlirOperationGetAttributeByName(d, piperStr("devices"));
  MlirAttribute stream = mlirOperationGetAttributeByName(d, piperStr("reduce_stream"));
  int matched = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpInDialect(op, "tdag") || !piperFilterMatches(op, filter)) continue;
    matched++;
    MlirAttribute placed = mlirOperationGetAttributeByName(op, piperStr("devices"));
    /* a parameter's copy lives with the consumers that read it (insert-comm), elsewhere */
    if (!piperOpIs(op, "tdag.param") && !sameDevices(placed, devices)) {
      piperDirectiveError(d, "replicate: the selected ops are placed on other devices than "
                             "this directive's; give place and replicate the same device list");
      return mlirLogicalResultFailure();
    }
    if (!piperOpIs(op, "tdag.adamw") || mlirArrayAttrGetNumElements(devices) < 2) continue;
    MlirValue g = mlirOperationGetOperand(op, 1);
    MlirType types[2] = {mlirValueGetType(g), mlirTypeParseGet(ctx, piperStr("!comm.token"))};
    MlirNamedAttribute attrs[3] = {piperNamedAttr(ctx, "group", devices),
                                   piperNamedAttr(ctx, "devices", devices),
                                   piperNamedAttr(ctx, "stream", stream)};
    MlirOperation producer = mlirOpResultGetOwner(g);
    MlirOperation ar = piperOpCreate("comm.all_reduce", mlirOperationGetLocation(producer), 1,
                                     &g, 2, types, mlirAttributeIsNull(stream) ? 2 : 3, attrs);
    mlirBlockInsertOwnedOperationAfter(body, producer, ar);
    MlirAttribute tags = mlirOperationGetAttributeByName(producer, piperStr("tags"));
    MlirAttribute pass = mlirOperationGetAttributeByName(producer, piperStr("pass"));
    if (!mlirAttributeIsNull(tags)) mlirOperationSetAttributeByName(ar, piperStr("tags"), tags);
    if (!mlirAttributeIsNull(pass)) mlirOperationSetAttributeByName(ar, piperStr("pass"), pass);
    mlirOperationSetOperand(op, 1, mlirOperationGetResult(ar, 0));
  }
  if (!matched) {
    piperDirectiveError(d, "replicate: the filter matches no op of the model");
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runReplicate(MlirOperation module, const char *arg) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation func = {NULL};
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, "sched.replicate")) continue;
    if (mlirOperationIsNull(func) &&
        mlirOperationIsNull(func = piperTrainingFunction(module, "piper-replicate")))
      return mlirLogicalResultFailure();
    if (mlirLogicalResultIsFailure(
            applyReplicate(d, mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0)))))
      return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

MlirPass piperCreateReplicatePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-replicate", "replicate directive", runReplicate,
                               arg);
}
