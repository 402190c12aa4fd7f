/* --piper-extract: global DAG -> one function per role (or per device), ops in execution
 * order.
 *
 * Roles. Replicas of a pipeline device differ only by their index k. When the DAG's device
 * lists partition the N devices into P roles of one size R > 1, each an arithmetic range
 * start + k * stride (a list is one role; a tensor-parallel list of T-member runs,
 * shard_tensor.c, is T roles, member t's devices at positions t, t + T, ...), the pass
 * writes one function per role, @role_<p> with piper.role = [start, stride, R] (roles
 * ordered by first device), instantiated for replica k = 0, and sets piper.roles = P on the
 * module. The k-dependent values stay symbolic: an input's rows start at
 * first_sample + k * first_sample_stride; a transfer's peer is peer + k * peer_stride
 * (replica k of the peer's role; the lowering ignores `peers`); a replicated update's
 * `replica` is read as "k == 0" at run time; a ZeRO op's `shard` is k (offset k * c, length
 * min(c, n - k * c): the last shard may be shorter); a tensor-parallel group (tp_reduce) is a
 * group family, replica 0's group with group_stride = S, replica k's being its members + k * S
 * (replica k of each member's role, all of stride S). Every other group is the same for every
 * replica and must be whole roles (findRoles checks all of this). The lowering reads k from
 * the rank (prt_declare_roles: rank -> (role, k) from the P ranges, O(P)) and declares a
 * family once (prt_declare_group_family), so the plan, the compile time and the binary are
 * flat in R. Expert parallelism (shard.c) keeps roles: an expert's ops sit on its owner
 * replica alone (ep_local; under TP on the owner's group), replica k's experts being replica
 * 0's shifted by k * E/G, so the role plan holds replica 0's and the lowering renames them
 * for k (epRolesOk below). Otherwise (uneven or non-range lists, R = 1 as in pure pipelines
 * and pure TP, TP groups that are no family, expert names shard.c cannot place) the plan has
 * one function per device, @device_<d>.
 *
 * Order. Each device runs its ops in the order the `order` directive that governs it gives
 * (passes/order.c: ranks by the directive's groups, program position within a rank, updates
 * last; an order cycle is an error at the directive).
 *
 * Waits. Transfers are nonblocking; a comm.wait on each one's token sits right before the
 * first op that reads what it brings, or at the end of the step.
 *
 * Instantiation. An op placed on R replicas becomes, on replica k, an op whose batched types
 * have 1/R of the rows; its inputs read rows [first_sample + k*rows/R, ...) and its loss
 * gradient keeps the whole batch's row count; comm ops get the `peer` of replica k; a
 * whole-tensor tdag.adamw on R > 1 replicas gets `replica` = k (the gradient norm counts it on
 * replica 0 only; a ZeRO update gets `shard` = k instead).
 * The module records `piper.devices` and `piper.global_batch`; the sched directives, now
 * applied, are removed. A device function whose order an `order` directive gave records
 * where that directive is, as `piper.order = "FILE:LINE:COL"` (the directive's line:col in
 * the strategy file), so --piper-verify-plan can name the directive behind a deadlock. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "passes/tp_layout.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

/* Index of device `d` in the op's devices, or -1. Place sorts device lists, so this is a
 * binary search: extraction asks it for every op and every device. */
static int64_t replicaIndex(MlirOperation op, int64_t d, int64_t *replicas) {
  MlirAttribute devs = mlirOperationGetAttributeByName(op, piperStr("devices"));
  *replicas = 1;
  if (mlirAttributeIsNull(devs)) return d == 0 ? 0 : -1;
  *replicas = piperListLen(devs);
  if (piperDeviceListIsRange(devs, NULL)) return piperListFind(devs, d);
  intptr_t lo = 0, hi = *replicas - 1;
  while (lo <= hi) {
    intptr_t mid = lo + (hi - lo) / 2;
    int64_t v = piperListAt(devs, mid);
    if (v == d) return mid;
    if (v < d) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* An expert's op placed on its owner replica alone (shard.c; see epRolesOk). */
static bool epLocal(MlirOperation op) {
  return !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local")));
}

/* A role: devices start + k * stride, k = 0 .. count-1, that run the same plan. */
typedef struct {
  int64_t start, stride, count; /* device ids; stride >= 1 */
} Role;

/* Stride s >= 1 of the entries first, first + step, ... of a device list if they are
 * a + k * s (one entry: 1), else 0. */
static int64_t rangeStrideAt(MlirAttribute devs, intptr_t first, intptr_t step) {
  intptr_t n = piperListLen(devs);
  if (first >= n) return 0;
  if (first + step >= n) return 1;
  PiperRange r; /* in a range without runs every step-th entry is r.step * step apart; with
                 * runs of `step` ids, entry `first` of each run is r.step after the last */
  if (piperDeviceListIsRange(devs, &r) && r.run == 1) return r.step * step;
  if (piperDeviceListIsRange(devs, &r) && r.run == step && first < r.run) return r.step;
  int64_t a = piperListAt(devs, first), s = piperListAt(devs, first + step) - a;
  if (s < 1) return 0;
  for (intptr_t i = first + 2 * step, k = 2; i < n; i += step, ++k)
    if (piperListAt(devs, i) != a + k * s) return 0;
  return s;
}

typedef struct {
  MlirContext ctx;
  Role *roles;            /* the plan's roles (role mode), ordered by first device */
  size_t nRoles, capRoles;
  int64_t *roleOf;        /* role mode: device -> its role (the roles partition the devices) */
  MlirOperation *ops;     /* global DAG ops in program order (no terminator) */
  size_t nOps;
  MlirOperation *orders;  /* sched.order directives */
  size_t nOrders;
  MlirBlock moduleBody;
  PiperTpLayout tp;           /* its tensor-parallel layout (shard_tensor.c) */
  PiperCpLayout cp;           /* its context-parallel layout (shard_sequence.c) */
  MlirOperation insertBefore; /* new functions go before the training function */
} Extractor;

/* Explicit waits: every comm op's token is waited for by a comm.wait right before the first op
 * that reads the op's tensor result, or at the end of the step if nothing reads it here
 * (sends, refreshes of parameter copies, a parameter rebuilt in place). */
static void insertWaits(MlirBlock body, MlirOperation ret) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpInDialect(op, "comm") || piperOpIs(op, "comm.wait")) continue;
    intptr_t n = mlirOperationGetNumResults(op);
    MlirValue token = mlirOperationGetResult(op, n - 1);
    MlirOperation first = ret;
    if (piperOpIs(op, "comm.reduce_scatter")) {
      /* One reduce-scatter in flight: wait before the next one is issued, so its input, the
       * full local gradient, is freed early (ZeRO-2/3 memory). All-reduces (buckets) are
       * waited for by their readers, several in flight: the runtime advances them between
       * kernels (prt_comm_progress), as MPI moves a nonblocking collective only inside MPI
       * calls. */
      for (MlirOperation o = mlirOperationGetNextInBlock(op); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        if (piperOpIs(o, "comm.reduce_scatter")) {
          first = o;
          break;
        }
    }
    if (n == 2) { /* or the earliest reader of the tensor result, if sooner */
      MlirValue v = mlirOperationGetResult(op, 0);
      bool found = false;
      for (MlirOperation o = mlirOperationGetNextInBlock(op);
           !found && !mlirOperationIsNull(o) && o.ptr != first.ptr;
           o = mlirOperationGetNextInBlock(o))
        for (intptr_t k = 0; k < mlirOperationGetNumOperands(o) && !found; ++k)
          if (mlirOperationGetOperand(o, k).ptr == v.ptr) {
            first = o;
            found = true;
          }
    }
    MlirOperation wait =
        piperOpCreate("comm.wait", mlirOperationGetLocation(op), 1, &token, 0, NULL, 0, NULL);
    mlirBlockInsertOwnedOperationBefore(body, first, wait);
  }
}

/* Expert parallelism (passes/shard.c): the instance `c` on device d of a sharded moe_experts or
 * moe_experts_grad_input `op` keeps only the weights of the experts device d owns (their
 * parameters are placed there alone), each of the three groups (gates, ups, downs) cut alike,
 * and its operandSegmentSizes follows. Other ops are left alone. */
static void epLocalWeights(MlirContext ctx, MlirOperation op, MlirOperation c, int64_t d) {
  bool fwd = piperOpIs(op, "tdag.moe_experts");
  if ((!fwd && !piperOpIs(op, "tdag.moe_experts_grad_input")) ||
      piperGetIntAttr(op, "groups", 1) <= 1)
    return;
  intptr_t first = fwd ? 2 : 3, n = mlirOperationGetNumOperands(op), E = (n - first) / 3;
  MlirValue *keep = malloc((size_t)n * sizeof *keep);
  intptr_t k = 0, local = 0;
  for (intptr_t i = 0; i < first; ++i) keep[k++] = mlirOperationGetOperand(op, i);
  for (int w = 0; w < 3; ++w)
    for (intptr_t e = 0; e < E; ++e) {
      MlirValue v = mlirOperationGetOperand(op, first + w * E + e);
      int64_t R;
      if (mlirValueIsAOpResult(v) && replicaIndex(mlirOpResultGetOwner(v), d, &R) >= 0) {
        keep[k++] = v;
        local += w == 0;
      }
    }
  mlirOperationSetOperands(c, k, keep);
  int32_t seg[6] = {1, 1, 1, (int32_t)local, (int32_t)local, (int32_t)local};
  int32_t *s = fwd ? seg + 1 : seg;
  mlirOperationSetAttributeByName(c, piperStr("operandSegmentSizes"),
                                  mlirDenseI32ArrayGet(ctx, fwd ? 5 : 6, s));
  free(keep);
}

/* The empty plan function of device d, or (role >= 0) of role `role`, before the training
 * function: @device_<d> or @role_<p> with piper.role, and piper.order when `order` ordered
 * it. Returns its body. */
static MlirBlock planFunction(Extractor *ex, int64_t d, int64_t role, MlirOperation order) {
  char name[32];
  if (role >= 0) snprintf(name, sizeof name, "role_%lld", (long long)role);
  else snprintf(name, sizeof name, "device_%lld", (long long)d);
  MlirLocation loc = mlirOperationGetLocation(ex->insertBefore);
  MlirType fnType = mlirFunctionTypeGet(ex->ctx, 0, NULL, 0, NULL);
  MlirNamedAttribute fattrs[2] = {
      piperNamedAttr(ex->ctx, "sym_name", mlirStringAttrGet(ex->ctx, piperStr(name))),
      piperNamedAttr(ex->ctx, "function_type", mlirTypeAttrGet(fnType))};
  MlirOperationState st = mlirOperationStateGet(piperStr("func.func"), loc);
  mlirOperationStateAddAttributes(&st, 2, fattrs);
  MlirRegion region = mlirRegionCreate();
  MlirBlock body = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(region, body);
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation fn = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(ex->moduleBody, ex->insertBefore, fn);
  if (role >= 0) {
    const Role *r = &ex->roles[role];
    MlirAttribute range[3] = {piperI64Attr(ex->ctx, r->start), piperI64Attr(ex->ctx, r->stride),
                              piperI64Attr(ex->ctx, r->count)};
    mlirOperationSetAttributeByName(fn, piperStr("piper.role"),
                                    mlirArrayAttrGet(ex->ctx, 3, range));
  }
  piperOrderRecord(fn, order);
  return body;
}

/* Points the operands of clone `c` of `op` at their instances on this device (cloneOf);
 * failure after an error when one has none. */
static MlirLogicalResult linkOperands(MlirOperation op, MlirOperation c, PiperPtrMap *cloneOf) {
  for (intptr_t a = 0; a < mlirOperationGetNumOperands(c); ++a) {
    intptr_t v;
    if (!piperPtrMapGet(cloneOf, mlirOperationGetOperand(c, a).ptr, &v)) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "extract: an input of this op is not on its device and no recv brings "
                    "it (run --piper-insert-comm before --piper-extract)");
      return mlirLogicalResultFailure();
    }
    mlirOperationSetOperand(c, a, (MlirValue){(const void *)v});
  }
  return mlirLogicalResultSuccess();
}

/* Gives the batched results of clone `c` of `op` (on R replicas) 1/R of the rows, and records
 * every result in cloneOf; failure after an error when R does not divide the rows. */
static MlirLogicalResult splitResults(MlirOperation op, MlirOperation c, int64_t R,
                                      PiperPtrMap *cloneOf) {
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (intptr_t r = 0; r < mlirOperationGetNumResults(c); ++r) {
    MlirValue res = mlirOperationGetResult(c, r);
    if (R > 1 && piperResultIsBatched(op, r)) {
      int64_t rows = piperTensorDim(mlirValueGetType(res), 0);
      if (rows % R) {
        mlirEmitError(mlirOperationGetLocation(op),
                      "extract: the replicas of this op do not divide its batch rows evenly; "
                      "use a replica count that divides the (micro)batch");
        status = mlirLogicalResultFailure();
      }
      mlirValueSetType(res, piperSplitBatch(mlirValueGetType(res), R));
    }
    piperPtrMapPut(cloneOf, mlirOperationGetResult(op, r).ptr, (intptr_t)res.ptr);
  }
  return status;
}

/* The replica-dependent attributes of clone `c` of `op` as replica k of R (flatK: its
 * position in the device list; role >= 0: a plan per role, k's values symbolic). ZeRO shards
 * and the gradient norm's count follow stateK of stateR: k of R, but under context
 * parallelism every device of the list (its members share batch rows, not state). */
static void setReplicaAttrs(Extractor *ex, MlirOperation op, MlirOperation c, int64_t R,
                            int64_t k, int64_t flatK, int64_t role, int64_t stateK,
                            int64_t stateR) {
  if (piperOpIs(op, "tdag.input") && R > 1) {
    int64_t rows = piperTensorDim(mlirValueGetType(mlirOperationGetResult(c, 0)), 0);
    mlirOperationSetAttributeByName(
        c, piperStr("first_sample"),
        piperI64Attr(ex->ctx, piperGetIntAttr(op, "first_sample", 0) + k * rows));
    if (role >= 0) /* replica k's first row: first_sample + k * first_sample_stride */
      mlirOperationSetAttributeByName(c, piperStr("first_sample_stride"), piperI64Attr(ex->ctx, rows));
  } else if (piperOpIs(op, "tdag.cross_entropy_grad") &&
             mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("total_rows")))) {
    MlirType p = mlirValueGetType(mlirOperationGetOperand(op, 0));
    mlirOperationSetAttributeByName(
        c, piperStr("total_rows"),
        piperI64Attr(ex->ctx, piperTensorNumel(p) / piperTensorDim(p, -1)));
  }
  if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards"))))
    mlirOperationSetAttributeByName(c, piperStr("shard"), piperI64Attr(ex->ctx, stateK)); /* ZeRO */
  else if (stateR > 1 && piperOpIs(op, "tdag.adamw"))
    /* a whole-tensor update on stateR devices holding the same reduced gradient */
    mlirOperationSetAttributeByName(c, piperStr("replica"), piperI64Attr(ex->ctx, stateK)); /* norm once */
  MlirAttribute peers = mlirOperationGetAttributeByName(op, piperStr("peers"));
  if (!mlirAttributeIsNull(peers)) {
    mlirOperationSetAttributeByName(c, piperStr("peer"), piperI64Attr(ex->ctx, piperListAt(peers, flatK)));
    if (role >= 0) /* replica k's peer: peer + k * peer_stride (replica k of the other role;
                    * the comm dialect keeps the `peers` list, one uniqued attribute a stage) */
      mlirOperationSetAttributeByName(
          c, piperStr("peer_stride"),
          piperI64Attr(ex->ctx, ex->roles[ex->roleOf[piperListAt(peers, flatK)]].stride));
  }
}

/* Appends to `body` the instance on device d (replica 0 of role `role` when role >= 0) of
 * global op `op`, its operands linked through cloneOf. */
static MlirLogicalResult instantiateOp(Extractor *ex, MlirBlock body, MlirOperation op,
                                       int64_t d, int64_t role, PiperPtrMap *cloneOf) {
  MlirOperation c = mlirOperationClone(op);
  int64_t R, k = replicaIndex(op, d, &R);
  /* tensor parallelism (shard_tensor.c): on a TP list R and k count data-parallel
   * replicas; flatK is the position in the device list (peers pair up by it) */
  int64_t flatK = k, tpT = piperTpSplitReplicas(&ex->tp, op, &R, &k);
  /* context parallelism (shard_sequence.c): the members of a group hold the same batch rows
   * (R and k count batch replicas) but their optimizer state and gradient-norm count are
   * per device, as for data-parallel replicas: stateK is the position in the list (with
   * tensor parallelism, among the devices holding the same slice: the position over T) */
  int64_t stateK = k, cpStride, cpG = piperCpSplitReplicas(&ex->cp, op, tpT, &R, &k, &cpStride);
  mlirBlockAppendOwnedOperation(body, c);
  epLocalWeights(ex->ctx, op, c, d);
  MlirLogicalResult status = linkOperands(op, c, cloneOf);
  if (mlirLogicalResultIsFailure(splitResults(op, c, R, cloneOf)))
    status = mlirLogicalResultFailure();
  setReplicaAttrs(ex, op, c, R, k, flatK, role, stateK, R * cpG);
  if (tpT > 1 && piperTpInstantiate(c, op, flatK, tpT)) return status;
  if (cpG > 1) piperCpInstantiate(c, op, flatK, cpG, cpStride);
  if (role >= 0 && epLocal(op)) /* one replica's expert: every replica counts its own in the
                                 * gradient norm (on TP member 0: tp_replica), not "k == 0" */
    mlirOperationRemoveAttributeByName(c, piperStr("replica"));
  MlirAttribute group = mlirOperationGetAttributeByName(c, piperStr("group"));
  if (role >= 0 && tpT > 1 && !mlirAttributeIsNull(group) &&
      !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce"))))
    /* replica k's tensor-parallel group: replica 0's + k * group_stride (findRoles) */
    mlirOperationSetAttributeByName(
        c, piperStr("group_stride"),
        piperI64Attr(ex->ctx, ex->roles[ex->roleOf[piperListAt(group, 0)]].stride));
  mlirOperationRemoveAttributeByName(c, piperStr("devices"));
  return status;
}

/* The plan of device d, or (role >= 0) of role `role`, whose replica 0 is device d: then its
 * k-dependent values stay symbolic (see the file comment). */
static MlirLogicalResult extractDevice(Extractor *ex, int64_t d, int64_t role) {
  PiperScheduled *s = malloc((ex->nOps ? ex->nOps : 1) * sizeof *s);
  size_t n = 0;
  for (size_t i = 0; i < ex->nOps; ++i) {
    int64_t R;
    if (replicaIndex(ex->ops[i], d, &R) >= 0) s[n++] = (PiperScheduled){ex->ops[i], i, 0};
  }
  MlirOperation order;
  if (mlirLogicalResultIsFailure(piperOrderDevice(ex->orders, ex->nOrders, d, s, n, &order))) {
    free(s);
    return mlirLogicalResultFailure();
  }
  MlirBlock body = planFunction(ex, d, role, order);
  PiperPtrMap cloneOf; /* global value -> its instance on this device */
  piperPtrMapInit(&cloneOf, n * 2);
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t i = 0; i < n && mlirLogicalResultIsSuccess(status); ++i)
    status = instantiateOp(ex, body, s[i].op, d, role, &cloneOf);
  MlirLocation loc = mlirOperationGetLocation(ex->insertBefore);
  MlirOperation ret = piperOpCreate("func.return", loc, 0, NULL, 0, NULL, 0, NULL);
  mlirBlockAppendOwnedOperation(body, ret);
  if (mlirLogicalResultIsSuccess(status)) insertWaits(body, ret);
  piperPtrMapFree(&cloneOf);
  free(s);
  return status;
}

static int byStart(const void *a, const void *b) {
  const Role *x = a, *y = b;
  return x->start < y->start ? -1 : x->start > y->start;
}

/* ---- expert parallelism under roles (passes/shard.c) ----
 * An expert's parameters, moments, updates and weight gradients are `ep_local`: placed on the
 * one replica that owns the expert. Replica k owns replica 0's experts shifted by k * E/G and
 * runs the same ops on them (shard.c builds every expert alike), so replica 0's plan serves
 * every k if what differs, the names, can be computed from k: every ep_local parameter and
 * moment carries ep_expert (shard.c: the expert index's place in the name), which the lowering
 * turns into prt_declare_expert. Role mode then also needs each ep_local op on one device, or
 * under tensor parallelism on the owner replica's TP group (each member a role's device), and,
 * as a check of the symmetry, every replica of a role holding the same sequence of them (op
 * names, result types and member index, in program order, compared by a hash per device). */

/* The ep_local ops agree with the roles (see above); ex->roles is the partition. */
static bool epRolesOk(Extractor *ex, int64_t devices) {
  uint64_t *sig = calloc((size_t)devices, sizeof *sig); /* per device: its ep_local ops' hash */
  bool ok = sig != NULL;
  for (size_t i = 0; i < ex->nOps && ok; ++i) {
    MlirOperation op = ex->ops[i];
    if (!epLocal(op)) continue;
    MlirAttribute devs = mlirOperationGetAttributeByName(op, piperStr("devices"));
    /* one device, or under tensor parallelism the owner replica's group (T members) */
    int64_t n = piperListLen(devs), count = n, k = 0;
    bool nameless = !piperOpIs(op, "tdag.param") && !piperOpIs(op, "tdag.adam_state");
    ok = (n == 1 || piperTpSplitReplicas(&ex->tp, op, &count, &k) == n) &&
         (nameless ||
          !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_expert"))));
    for (int64_t t = 0; t < n && ok; ++t) {
      int64_t d = piperListAt(devs, t);
      ok = d >= 0 && d < devices;
      if (!ok) break;
      /* FNV-1a over the uniqued name and result types (context-owned, so pointers compare)
       * and the member index t */
      uint64_t h = sig[d] ^ (uint64_t)(uintptr_t)mlirIdentifierStr(mlirOperationGetName(op)).data;
      h = (h * 1099511628211ull) ^ (uint64_t)t;
      h *= 1099511628211ull;
      for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
        h ^= (uint64_t)(uintptr_t)mlirValueGetType(mlirOperationGetResult(op, r)).ptr;
        h *= 1099511628211ull;
      }
      sig[d] = h;
    }
  }
  for (size_t p = 0; p < ex->nRoles && ok; ++p) /* the partition covers every device */
    for (int64_t k = 1; k < ex->roles[p].count && ok; ++k)
      ok = sig[ex->roles[p].start + k * ex->roles[p].stride] == sig[ex->roles[p].start];
  free(sig);
  return ok;
}

/* The entries first, first + step, ... of `list` are whole roles, each device once: a
 * collective group that every replica of its roles shares. `stamp` marks the devices met
 * (value `mark`, fresh for each call), `tally` counts members per role (zeroed again on
 * return). */
static bool wholeRoles(Extractor *ex, MlirAttribute list, intptr_t first, intptr_t step,
                       int64_t devices, int64_t *stamp, int64_t mark, int64_t *tally) {
  intptr_t n, members = 0, roles = 0;
  int64_t *ids = piperDeviceListIds(list, &n); /* one pass over a range, not a call an id */
  bool ok = ids != NULL;
  for (intptr_t i = first; i < n && ok; i += step, ++members) {
    int64_t d = ids[i];
    ok = d >= 0 && d < devices && stamp[d] != mark;
    if (ok) {
      stamp[d] = mark;
      roles += tally[ex->roleOf[d]]++ == 0;
    }
  }
  for (intptr_t i = first; ids && i < n; i += step) { /* every role touched is whole */
    int64_t d = ids[i];
    if (d < 0 || d >= devices) break;
    tally[ex->roleOf[d]] = 0;
  }
  free(ids);
  return ok && members == roles * ex->roles[0].count;
}

/* The group of collective `op` (on a list of T members a replica), as piperTpInstantiate
 * narrows it, follows the roles: a tensor-parallel reduction's (tp_reduce) instance for
 * replica k, positions k*T .. k*T+T-1, is replica k of the roles of replica 0's members, all
 * of one stride S (a group family: replica 0's group + k * S); any other group is the same
 * for every replica and must be whole roles. */
static bool groupOk(Extractor *ex, MlirOperation op, MlirAttribute g, int64_t T, int64_t devices,
                    int64_t *stamp, int64_t *mark, int64_t *tally) {
  intptr_t n = piperListLen(g);
  int64_t R = ex->roles[0].count;
  if (T < 2 || n % T) return wholeRoles(ex, g, 0, 1, devices, stamp, ++*mark, tally);
  if (mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce")))) {
    for (intptr_t t = 0; t < T; ++t) /* member t's data-parallel group */
      if (!wholeRoles(ex, g, t, T, devices, stamp, ++*mark, tally)) return false;
    return true;
  }
  if (n != R * T) return false;
  int64_t S = 0;
  for (intptr_t i = 0; i < T; ++i) {
    int64_t d = piperListAt(g, i);
    if (d < 0 || d >= devices) return false;
    const Role *r = &ex->roles[ex->roleOf[d]];
    if (r->start != d || (S && r->stride != S)) return false;
    S = r->stride;
    for (int64_t k = 1; k < R; ++k)
      if (piperListAt(g, k * T + i) != d + k * S) return false;
  }
  return true;
}

/* A transfer's peers (indexed like the op's devices, k * T + t) are replica k of the role of
 * replica 0's peer. */
static bool peersOk(Extractor *ex, MlirAttribute peers, MlirAttribute devs, int64_t devices) {
  intptr_t n = piperListLen(peers);
  int64_t R = ex->roles[0].count;
  if (n != piperListLen(devs) || n % R) return false;
  intptr_t T = n / R;
  PiperRange pr; /* a range of single ids: replica k's peer is the first + k * step */
  bool single = piperDeviceListIsRange(peers, &pr) && pr.run == 1 && T == 1;
  for (intptr_t t = 0; t < T; ++t) {
    int64_t d = piperListAt(peers, t);
    if (d < 0 || d >= devices) return false;
    const Role *r = &ex->roles[ex->roleOf[d]];
    if (r->start != d) return false;
    if (single) return pr.step == r->stride;
    for (int64_t k = 1; k < R; ++k)
      if (piperListAt(peers, k * T + t) != d + k * r->stride) return false;
  }
  return true;
}

/* Role mode applies when the plan's device lists partition the N devices into roles of one
 * size R > 1, each start + k * stride: a list is one role, or a tensor-parallel list
 * (shard_tensor.c) of T roles, member t's devices at positions t, t + T, ... Then device
 * start + k * stride of a role runs exactly that role's ops, as replica k, if what the
 * instances of its ops name follows k (groupOk, peersOk). Fills ex->roles and ex->roleOf;
 * false: per device. */
static bool findRoles(Extractor *ex, int64_t devices) {
  /* context parallelism: a member's positions (cp_rank) are constants of its plan, so each
   * device gets its own */
  if (devices < 2 || !mlirAttributeIsNull(ex->cp.groups)) return false;
  PiperPtrMap listSeen; /* device-list attributes already cut into roles */
  piperPtrMapInit(&listSeen, 16);
  bool ok = true;
  for (size_t i = 0; i < ex->nOps && ok; ++i) {
    MlirOperation op = ex->ops[i];
    MlirAttribute devs = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (mlirAttributeIsNull(devs)) {
      ok = false;
      break;
    }
    if (epLocal(op)) continue; /* one replica's expert: epRolesOk checks these */
    if (piperPtrMapGet(&listSeen, devs.ptr, NULL)) continue;
    piperPtrMapPut(&listSeen, devs.ptr, 1);
    int64_t count = piperListLen(devs), k = 0;
    int64_t T = piperTpSplitReplicas(&ex->tp, op, &count, &k); /* count: per member */
    for (int64_t t = 0; t < T && ok; ++t) {
      int64_t stride = rangeStrideAt(devs, t, T);
      ok = stride && count &&
           piperGrow((void **)&ex->roles, &ex->capRoles, ex->nRoles + 1, sizeof *ex->roles);
      if (ok) ex->roles[ex->nRoles++] = (Role){piperListAt(devs, t), stride, count};
    }
  }
  piperPtrMapFree(&listSeen);
  /* lists share roles (a TP list and its members' lists): one entry per start, alike */
  if (ok && ex->nRoles) {
    qsort(ex->roles, ex->nRoles, sizeof *ex->roles, byStart);
    size_t m = 1;
    for (size_t p = 1; p < ex->nRoles && ok; ++p) {
      const Role *a = &ex->roles[m - 1], *b = &ex->roles[p];
      if (a->start != b->start) ex->roles[m++] = *b;
      else ok = a->stride == b->stride && a->count == b->count;
    }
    ex->nRoles = m;
  }
  int64_t R = ok && ex->nRoles ? ex->roles[0].count : 0, covered = 0;
  for (size_t p = 0; p < ex->nRoles && ok; ++p) {
    ok = ex->roles[p].count == R;
    covered += ex->roles[p].count;
  }
  ok = ok && R > 1 && covered == devices;
  int64_t *stamp = NULL, *tally = NULL, mark = 0;
  if (ok) { /* a partition: R * roles devices, each in exactly one role */
    ex->roleOf = malloc((size_t)devices * sizeof *ex->roleOf);
    stamp = calloc((size_t)devices, sizeof *stamp);
    tally = calloc(ex->nRoles, sizeof *tally);
    ok = ex->roleOf && stamp && tally;
    for (int64_t d = 0; d < devices && ok; ++d) ex->roleOf[d] = -1;
    for (size_t p = 0; p < ex->nRoles && ok; ++p)
      for (int64_t k = 0; k < R && ok; ++k) {
        int64_t d = ex->roles[p].start + k * ex->roles[p].stride;
        ok = d >= 0 && d < devices && ex->roleOf[d] < 0;
        if (ok) ex->roleOf[d] = (int64_t)p;
      }
  }
  /* every group and peer list follows the roles; a group once per (group, T, tp_reduce) */
  PiperPtrMap checked;
  piperPtrMapInit(&checked, 16);
  for (size_t i = 0; i < ex->nOps && ok; ++i) {
    MlirOperation op = ex->ops[i];
    MlirAttribute devs = mlirOperationGetAttributeByName(op, piperStr("devices"));
    MlirAttribute peers = mlirOperationGetAttributeByName(op, piperStr("peers"));
    MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
    if (!mlirAttributeIsNull(peers)) ok = peersOk(ex, peers, devs, devices);
    if (!ok || mlirAttributeIsNull(g)) continue;
    int64_t count = piperListLen(devs), k = 0;
    int64_t T = epLocal(op) ? 1 : piperTpSplitReplicas(&ex->tp, op, &count, &k);
    bool tpReduce =
        !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce")));
    intptr_t how = 2 * (intptr_t)T + tpReduce, seen;
    if (piperPtrMapGet(&checked, g.ptr, &seen) && seen == how) continue;
    ok = groupOk(ex, op, g, T, devices, stamp, &mark, tally);
    piperPtrMapPut(&checked, g.ptr, how);
  }
  piperPtrMapFree(&checked);
  free(stamp);
  free(tally);
  ok = ok && epRolesOk(ex, devices);
  if (!ok) {
    ex->nRoles = 0;
    free(ex->roleOf);
    ex->roleOf = NULL;
  }
  return ok;
}

static MlirLogicalResult runExtract(MlirOperation module, const char *arg) {
  MlirOperation func = piperTrainingFunction(module, "piper-extract");
  if (mlirOperationIsNull(func)) return mlirLogicalResultFailure();
  Extractor ex = {.ctx = mlirOperationGetContext(module),
                  .moduleBody = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0)),
                  .insertBefore = func};
  piperTpLayoutInit(&ex.tp, module);
  piperCpLayoutInit(&ex.cp, module);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  size_t cap = 256;
  ex.ops = malloc(cap * sizeof *ex.ops);
  int64_t globalBatch = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return")) continue;
    if (ex.nOps == cap) ex.ops = realloc(ex.ops, (cap *= 2) * sizeof *ex.ops);
    ex.ops[ex.nOps++] = op;
    char name[16];
    if (piperOpIs(op, "tdag.input") && piperGetStringAttr(op, "name", name, sizeof name) &&
        !strcmp(name, "tokens")) {
      int64_t end = piperGetIntAttr(op, "first_sample", 0) +
                    piperTensorDim(mlirValueGetType(mlirOperationGetResult(op, 0)), 0);
      globalBatch = end > globalBatch ? end : globalBatch;
    }
  }
  cap = 8;
  ex.orders = malloc(cap * sizeof *ex.orders);
  for (MlirOperation d = mlirBlockGetFirstOperation(ex.moduleBody); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d))
    if (piperOpIs(d, "sched.order")) {
      if (ex.nOrders == cap) ex.orders = realloc(ex.orders, (cap *= 2) * sizeof *ex.orders);
      ex.orders[ex.nOrders++] = d;
    }
  int64_t devices = piperGetIntAttr(module, "piper.devices", 1);
  MlirLogicalResult status = mlirLogicalResultSuccess();
  if (devices < 1 || devices > PIPER_MAX_DEVICES) { /* one plan per device: never loop 10^9 */
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-extract: piper.devices = %lld is outside [1, %d]", (long long)devices,
                    PIPER_MAX_DEVICES);
    status = mlirLogicalResultFailure();
  }
  bool roles = mlirLogicalResultIsSuccess(status) && findRoles(&ex, devices);
  for (size_t p = 0; roles && p < ex.nRoles && mlirLogicalResultIsSuccess(status); ++p)
    status = extractDevice(&ex, ex.roles[p].start, (int64_t)p);
  for (int64_t d = 0; !roles && d < devices && mlirLogicalResultIsSuccess(status); ++d)
    status = extractDevice(&ex, d, -1);
  if (mlirLogicalResultIsSuccess(status)) {
    mlirOperationDestroy(func);
    /* the directives are applied: the plans are all that remains */
    for (MlirOperation d = mlirBlockGetFirstOperation(ex.moduleBody); !mlirOperationIsNull(d);) {
      MlirOperation next = mlirOperationGetNextInBlock(d);
      if (piperOpInDialect(d, "sched")) mlirOperationDestroy(d);
      d = next;
    }
    mlirOperationSetAttributeByName(module, piperStr("piper.devices"), piperI64Attr(ex.ctx, devices));
    mlirOperationSetAttributeByName(module, piperStr("piper.global_batch"),
                                    piperI64Attr(ex.ctx, globalBatch));
    if (roles)
      mlirOperationSetAttributeByName(module, piperStr("piper.roles"),
                                      piperI64Attr(ex.ctx, (int64_t)ex.nRoles));
  }
  free(ex.ops);
  free(ex.orders);
  free(ex.roles);
  free(ex.roleOf);
  piperTpLayoutFree(&ex.tp);
  piperCpLayoutFree(&ex.cp);
  return status;
}

MlirPass piperCreateExtractPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-extract", "per-device plans", runExtract, arg);
}
