/* Tensor parallelism's device layout (passes/tp_layout.h): the module's piper.tp_groups, the
 * T of a device list, and the TP facts of one member's instance of a global op. */
#include <stdlib.h>

#include "passes/tp_layout.h"

/* T if `devices` (sorted) is a TP list of the module's groups: runs of T consecutive entries,
 * each a group (an aligned run of T entries of one of the lists of `groups`, piper.tp_groups)
 * in its order; 1 otherwise. One of those lists itself at once; else O(devices x lists), each
 * device looked up in O(1) in a range. */
static int64_t tpSizeOf(MlirAttribute groups, int64_t T, MlirAttribute devices) {
  if (mlirAttributeIsNull(groups) || mlirAttributeIsNull(devices) || T < 2) return 1;
  intptr_t n = piperListLen(devices), nLists = mlirArrayAttrGetNumElements(groups);
  if (n < 2 || n % T) return 1;
  for (intptr_t l = 0; l < nLists; ++l)
    if (mlirAttributeEqual(mlirArrayAttrGetElement(groups, l), devices)) return T;
  for (intptr_t j = 0; j < n; j += T) {
    int64_t d = piperListAt(devices, j);
    MlirAttribute list = mlirAttributeGetNull();
    intptr_t at = -1;
    for (intptr_t l = 0; l < nLists && at < 0; ++l)
      at = piperListFind(list = mlirArrayAttrGetElement(groups, l), d);
    if (at < 0 || at % T) return 1;
    for (intptr_t t = 1; t < T; ++t)
      if (piperListAt(list, at + t) != piperListAt(devices, j + t)) return 1;
  }
  return T;
}

/* The module's piper.tp_groups and its group size T (piper.tp_size; without it each list is
 * one group and T its length), or null if absent or not a list of device lists each cut into
 * groups of T (IR written by hand: then the plan has no tensor-parallel layout). */
static MlirAttribute tpGroups(MlirOperation module, int64_t *T) {
  MlirAttribute g = mlirOperationGetAttributeByName(module, piperStr("piper.tp_groups"));
  *T = 1;
  if (mlirAttributeIsNull(g) || !mlirAttributeIsAArray(g) || !mlirArrayAttrGetNumElements(g))
    return mlirAttributeGetNull();
  int64_t size = piperGetIntAttr(module, "piper.tp_size",
                                 piperDeviceListLen(mlirArrayAttrGetElement(g, 0)));
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(g); ++i) {
    MlirAttribute list = mlirArrayAttrGetElement(g, i);
    if (size < 1 || !piperDeviceListCheck(list, PIPER_MAX_DEVICES) || piperListLen(list) % size)
      return mlirAttributeGetNull();
  }
  *T = size;
  return g;
}

MlirAttribute piperTpGroups(MlirOperation module, int64_t *T) { return tpGroups(module, T); }

int64_t piperTpSize(MlirOperation module, MlirAttribute devices) {
  int64_t T;
  MlirAttribute groups = tpGroups(module, &T);
  return tpSizeOf(groups, T, devices);
}

void piperTpLayoutInit(PiperTpLayout *l, MlirOperation module) {
  l->groups = tpGroups(module, &l->T);
  piperPtrMapInit(&l->sizeOf, 16);
}

void piperTpLayoutFree(PiperTpLayout *l) { piperPtrMapFree(&l->sizeOf); }

int64_t piperTpLayoutSize(PiperTpLayout *l, MlirAttribute devices) {
  if (mlirAttributeIsNull(l->groups) || mlirAttributeIsNull(devices)) return 1;
  intptr_t T;
  if (piperPtrMapGet(&l->sizeOf, devices.ptr, &T)) return T;
  T = (intptr_t)tpSizeOf(l->groups, l->T, devices);
  piperPtrMapPut(&l->sizeOf, devices.ptr, T);
  return T;
}

int64_t piperTpSplitReplicas(PiperTpLayout *l, MlirOperation op, int64_t *replicas, int64_t *k) {
  int64_t T = piperTpLayoutSize(l, mlirOperationGetAttributeByName(op, piperStr("devices")));
  if (T > 1) {
    *replicas /= T;
    *k /= T;
  }
  return T;
}

/* The sub-list of `group` (a TP list of T-runs) that device position `flatK` reduces over:
 * its own run (tp_reduce: the tensor-parallel group) or the members with its t (a
 * data-parallel reduction of a replicate directive). */
static MlirAttribute narrowGroup(MlirContext ctx, MlirAttribute group, int64_t T, int64_t flatK,
                                 bool tensorParallel) {
  intptr_t n = piperListLen(group);
  PiperRange r; /* a stage's range of runs of T: member t's peers are a range themselves */
  if (!tensorParallel && piperDeviceListIsRange(group, &r) && r.run == T)
    return piperDeviceRangeGet(ctx, (PiperRange){r.start + flatK % T, r.count, r.step, 1});
  if (tensorParallel) { /* the run holding position flatK: T entries */
    int64_t *run = malloc((size_t)T * sizeof *run);
    for (int64_t t = 0; run && t < T; ++t) run[t] = piperListAt(group, flatK - flatK % T + t);
    MlirAttribute a = run ? piperListGet(ctx, run, T) : group;
    free(run);
    return a;
  }
  int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
  intptr_t m = 0;
  for (intptr_t i = 0; i < n; ++i)
    if (tensorParallel ? i / T == flatK / T : i % T == flatK % T)
      ids[m++] = piperListAt(group, i);
  MlirAttribute a = piperListGet(ctx, ids, m);
  free(ids);
  return a;
}

bool piperTpInstantiate(MlirOperation c, MlirOperation op, int64_t flatK, int64_t T) {
  MlirContext ctx = mlirOperationGetContext(c);
  int64_t t = flatK % T;
  /* a split tensor: member t's slice of the whole one */
  MlirAttribute slice = mlirOperationGetAttributeByName(op, piperStr("tp_slice"));
  if (!mlirAttributeIsNull(slice) && mlirAttributeIsAArray(slice) &&
      mlirArrayAttrGetNumElements(slice) == 4 &&
      mlirAttributeIsAInteger(mlirArrayAttrGetElement(slice, 3))) /* else the verifier says */
    mlirOperationSetAttributeByName(c, piperStr("tp_offset"), piperI64Attr(ctx, t * piperListAt(slice, 3)));
  /* collectives: the group the member reduces over */
  MlirAttribute group = mlirOperationGetAttributeByName(op, piperStr("group"));
  if (piperListLen(group) && piperListLen(group) % T == 0) {
    bool tensorParallel =
        !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce")));
    mlirOperationSetAttributeByName(c, piperStr("group"),
                                    narrowGroup(ctx, group, T, flatK, tensorParallel));
  }
  if (piperOpIs(op, "tdag.adamw")) {
    MlirValue p = mlirOperationGetOperand(op, 0);
    bool split = mlirValueIsAOpResult(p) &&
                 !mlirAttributeIsNull(mlirOperationGetAttributeByName(mlirOpResultGetOwner(p),
                                                                      piperStr("tp_slice")));
    if (!split) { /* replicated in the group: the gradient norm counts member 0's copy only */
      mlirOperationSetAttributeByName(c, piperStr("tp_replica"), piperI64Attr(ctx, t));
      if (mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards"))))
        mlirOperationSetAttributeByName(c, piperStr("replica"), piperI64Attr(ctx, flatK));
    }
  }
  /* the loss is reported once per data-parallel replica: by member 0 */
  if (t && piperOpIs(op, "tdag.output")) {
    mlirOperationDestroy(c);
    return true;
  }
  return false;
}
