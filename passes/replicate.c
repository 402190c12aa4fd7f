/* --piper-replicate: the `replicate` directive (data parallelism).
 *
 * Place already put the selected ops on all the replica devices (one op, a device list);
 * extraction gives each replica its slice of the batch. What replicate adds is the gradient
 * reduction: every parameter update among the selected ops gets its gradient summed over the
 * replicas by a comm.all_reduce, issued right after the gradient is produced (on the
 * directive's reduce_stream, so it overlaps the rest of the backward pass) and waited for by
 * the update. All-reduced gradients go in buckets (bucketGradients) of bucket_size MB, by
 * default PIPER_DEFAULT_BUCKET_MB; `bucket_size: 0` gives one all-reduce per gradient.
 *
 * ZeRO, with R replicas and a parameter of n elements cut into R shards of c = ceil(n/R)
 * (replica k owns elements [k*c, k*c + c) ∩ [0, n); extraction sets `shard = k`):
 *   shard_optim (ZeRO-1)  the update runs on the replica's shard only: the AdamW moments are
 *                         c-element tensors; a comm.all_gather then rebuilds the parameter.
 *   shard_grads (ZeRO-2)  and the gradient is reduce-scattered instead of all-reduced into a
 *                         c-element shard (from a padded copy when R does not divide n); each
 *                         reduce-scatter is waited for before the next is issued, so the full
 *                         local gradient is freed long before the update.
 *   shard_params (ZeRO-3) and the parameter itself is stored as its shard; every op that reads
 *                         it gets a comm.all_gather right before it (freed after), and a copy
 *                         of it elsewhere is refreshed from a gathered full value.
 *
 * Refused at the directive: ops placed elsewhere, replicas that do not divide the
 * (micro)batch rows each receives, and with tensor parallelism a list that is not whole
 * shard_tensor groups, two or more (wholeTensorParallelGroups). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "passes/tp_layout.h"
#include "piper/base/shard.h"
#include "piper/checked.h"

/* bucket_size when a replicate directive gives none (MB); `bucket_size: 0` turns buckets off.
 * Smaller than PyTorch DDP's 25 (bucket_cap_mb; 1 MB is DDP's first bucket): a bucket is
 * reduced only once it is full, so the last bucket's reduction cannot overlap anything. 25 MB
 * holds every gradient of the bench GPT (13 MB) and leaves its one reduction after the
 * backward pass; measured exposed communication at DP2 (bench/bench_overlap.py): 25 MB 7.2%
 * of the step, 4 MB 3.6%, 1 MB 2.6%, no buckets 2.4%, at equal step times. */
#define PIPER_DEFAULT_BUCKET_MB 1.0

static int byValue(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The same set of devices, in any order: O(R log R) (sorted copies), O(1) for the same
 * uniqued list. Asked for every selected op, so never O(R^2): 16,384 replicas would take
 * minutes. */
static bool sameDevices(MlirAttribute a, MlirAttribute b) {
  if (mlirAttributeEqual(a, b)) return true;
  intptr_t n = piperListLen(a);
  if (n != piperListLen(b)) return false;
  int64_t *x = malloc(2 * (n ? n : 1) * sizeof *x), *y = x + n;
  if (!x) return false;
  for (intptr_t i = 0; i < n; ++i) {
    x[i] = piperListAt(a, i);
    y[i] = piperListAt(b, i);
  }
  qsort(x, n, sizeof *x, byValue);
  qsort(y, n, sizeof *y, byValue);
  bool same = !memcmp(x, y, n * sizeof *x);
  free(x);
  return same;
}

/* A comm collective `name` over `devices` on `value`, result type `t`, placed after `anchor`
 * (before it if `like` is `anchor`'s reader, see below), with the tags and pass of `like`. */
static MlirOperation collective(MlirContext ctx, MlirBlock body, const char *name, MlirValue value,
                                MlirType t, MlirAttribute devices, MlirAttribute stream,
                                int64_t shards, MlirOperation anchor, bool before,
                                MlirOperation like) {
  MlirType types[2] = {t, mlirTypeParseGet(ctx, piperStr("!comm.token"))};
  MlirNamedAttribute attrs[4] = {piperNamedAttr(ctx, "group", devices),
                                 piperNamedAttr(ctx, "devices", devices),
                                 piperNamedAttr(ctx, "shards", piperI64Attr(ctx, shards)),
                                 piperNamedAttr(ctx, "stream", stream)};
  MlirOperation op = piperOpCreate(name, mlirOperationGetLocation(like), 1, &value, 2, types,
                                   mlirAttributeIsNull(stream) ? 3 : 4, attrs);
  if (before) mlirBlockInsertOwnedOperationBefore(body, anchor, op);
  else mlirBlockInsertOwnedOperationAfter(body, anchor, op);
  static const char *copied[] = {"tags", "pass"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(like, piperStr(copied[i]));
    if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(op, piperStr(copied[i]), a);
  }
  return op;
}

/* Gradient reduction (unless a bucket already reduces it) and ZeRO sharding for one update
 * `upd` (see the file comment). */
static void shardUpdate(MlirContext ctx, MlirBlock body, MlirOperation upd, MlirAttribute devices,
                        MlirAttribute stream, MlirAttribute gatherStream, int zero,
                        bool bucketed, int64_t tp) {
  MlirValue p = mlirOperationGetOperand(upd, 0), g = mlirOperationGetOperand(upd, 1);
  MlirOperation producer = mlirOpResultGetOwner(g), param = mlirOpResultGetOwner(p);
  /* on a tensor-parallel list (shard_tensor.c) the replicas are its tp-size runs; extraction
   * narrows each collective's group to the member's data-parallel peers */
  int64_t R = piperListLen(devices) / tp;
  int64_t n = piperTensorNumel(mlirValueGetType(p));
  pb_shard geometry = pb_shard_of(n, R, 0);
  int64_t c = geometry.c, padded = geometry.padded;
  MlirType f32 = mlirF32TypeGet(ctx);
  MlirType chunk = mlirRankedTensorTypeGet(1, &c, f32, mlirAttributeGetNull());
  MlirType paddedType = mlirRankedTensorTypeGet(1, &padded, f32, mlirAttributeGetNull());
  if (bucketed) {
    /* the gradient is a view of a reduced bucket */
  } else if (zero < 2) { /* the whole gradient, summed */
    MlirOperation ar = collective(ctx, body, "comm.all_reduce", g, mlirValueGetType(g), devices,
                                  stream, 1, producer, false, producer);
    mlirOperationRemoveAttributeByName(ar, piperStr("shards"));
    mlirOperationSetOperand(upd, 1, mlirOperationGetResult(ar, 0));
  } else { /* this replica's shard of the sum: c elements */
    MlirOperation after = producer;
    MlirValue in = g;
    if (padded != n) { /* reduce-scatter cuts R equal blocks: pad a copy of the gradient */
      MlirNamedAttribute attrs[3] = {piperNamedAttr(ctx, "devices", devices),
                                     piperNamedAttr(ctx, "pass", mlirStringAttrGet(ctx, piperStr("B"))),
                                     piperNamedAttr(ctx, "offset", piperI64Attr(ctx, 0))};
      MlirOperation bucket = piperTdagOpCreate(PIPER_TDAG_BUCKET,
                                               mlirOperationGetLocation(producer), 0, NULL, 1,
                                               &paddedType, 2, attrs);
      mlirBlockInsertOwnedOperationAfter(body, producer, bucket);
      MlirValue ops[2] = {mlirOperationGetResult(bucket, 0), g};
      MlirOperation pack = piperTdagOpCreate(PIPER_TDAG_PACK_INTO,
                                             mlirOperationGetLocation(producer), 2, ops, 1,
                                             &paddedType, 3, attrs);
      mlirBlockInsertOwnedOperationAfter(body, bucket, pack);
      in = mlirOperationGetResult(pack, 0);
      after = pack;
    }
    MlirOperation rs = collective(ctx, body, "comm.reduce_scatter", in, chunk, devices, stream,
                                  R, after, false, producer);
    mlirOperationSetOperand(upd, 1, mlirOperationGetResult(rs, 0));
  }
  if (zero == 0) return;
  mlirOperationSetAttributeByName(upd, piperStr("shards"), piperI64Attr(ctx, R));
  for (int i = 2; i < 4; ++i) { /* the AdamW moments: one shard each */
    MlirValue m = mlirOperationGetOperand(upd, i);
    mlirValueSetType(m, chunk);
    mlirOperationSetAttributeByName(mlirOpResultGetOwner(m), piperStr("shards"), piperI64Attr(ctx, R));
  }
  if (zero < 3) { /* rebuild the full parameter from the updated shards */
    collective(ctx, body, "comm.all_gather", p, mlirValueGetType(p), devices, gatherStream, R,
               upd, false, upd);
    return;
  }
  /* ZeRO-3: the parameter lives as its shard; gather it right before each reader. */
  mlirOperationSetAttributeByName(param, piperStr("shards"), piperI64Attr(ctx, R));
  MlirOpOperand use = mlirValueGetFirstUse(p);
  while (!mlirOpOperandIsNull(use)) {
    MlirOpOperand next = mlirOpOperandGetNextUse(use);
    MlirOperation reader = mlirOpOperandGetOwner(use);
    if (reader.ptr != upd.ptr) {
      MlirOperation ag = collective(ctx, body, "comm.all_gather", p, mlirValueGetType(p), devices,
                                    gatherStream, R, reader, true, reader);
      mlirOperationSetOperand(reader, mlirOpOperandGetOperandNumber(use),
                              mlirOperationGetResult(ag, 0));
    }
    use = next;
  }
}

/* Program position of every op of `body`, for ordering gradients by when they are produced. */
static size_t positionOf(MlirBlock body, MlirOperation target) {
  size_t i = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op), ++i)
    if (op.ptr == target.ptr) return i;
  return i;
}

typedef struct {
  MlirOperation upd; /* the update */
  size_t produced;   /* program position of its gradient's producer */
} Pending;

static int byProduction(const void *a, const void *b) {
  const Pending *x = a, *y = b;
  return (x->produced > y->produced) - (x->produced < y->produced);
}

/* bucket_size: gradients, in the order they are produced, are grouped into buckets of about
 * `bytes`; each bucket of two or more becomes a tdag.bucket filled by tdag.pack_into right
 * after each gradient is produced -> one comm.all_reduce -> a tdag.view per update. These carry
 * no tags, so they run as soon as their inputs exist; the views carry pass UPD, so the wait for the reduction comes with the
 * updates and the reduction overlaps the rest of the backward pass. Marks bucketed updates. */
static void bucketGradients(MlirContext ctx, MlirBlock body, MlirOperation *updates, int n,
                            bool *bucketed, MlirAttribute devices, MlirAttribute stream,
                            double bytes) {
  Pending *order = malloc((n ? n : 1) * sizeof *order);
  for (int i = 0; i < n; ++i)
    order[i] = (Pending){updates[i],
                         positionOf(body, mlirOpResultGetOwner(mlirOperationGetOperand(updates[i], 1)))};
  qsort(order, n, sizeof *order, byProduction);
  MlirType f32 = mlirF32TypeGet(ctx);
  MlirNamedAttribute devAttr = piperNamedAttr(ctx, "devices", devices);
  MlirNamedAttribute passB = piperNamedAttr(ctx, "pass", mlirStringAttrGet(ctx, piperStr("B")));
  MlirNamedAttribute passUpd = piperNamedAttr(ctx, "pass", mlirStringAttrGet(ctx, piperStr("UPD")));
  for (int first = 0; first < n;) {
    int last = first;
    double size = 4.0 * piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(order[first].upd, 1)));
    while (last + 1 < n && size < bytes) {
      ++last;
      size += 4.0 * piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(order[last].upd, 1)));
    }
    if (last > first) {
      int k = last - first + 1;
      MlirValue *grads = malloc(k * sizeof *grads);
      int64_t total = 0;
      for (int i = 0; i < k; ++i) {
        grads[i] = mlirOperationGetOperand(order[first + i].upd, 1);
        total += piperTensorNumel(mlirValueGetType(grads[i]));
      }
      MlirType flat = mlirRankedTensorTypeGet(1, &total, f32, mlirAttributeGetNull());
      /* the bucket, then each gradient copied in right after it is produced */
      MlirNamedAttribute packAttrs[3] = {devAttr, passB, devAttr}; /* [2]: the offset, below */
      MlirOperation firstProducer = mlirOpResultGetOwner(grads[0]);
      MlirOperation bucket = piperTdagOpCreate(PIPER_TDAG_BUCKET,
                                               mlirOperationGetLocation(firstProducer), 0, NULL,
                                               1, &flat, 2, packAttrs);
      mlirBlockInsertOwnedOperationBefore(body, firstProducer, bucket);
      MlirValue packed = mlirOperationGetResult(bucket, 0);
      MlirOperation after = bucket;
      int64_t at = 0;
      for (int i = 0; i < k; ++i) {
        MlirOperation producer = mlirOpResultGetOwner(grads[i]);
        packAttrs[2] = piperNamedAttr(ctx, "offset", piperI64Attr(ctx, at));
        MlirValue ops[2] = {packed, grads[i]};
        MlirOperation pack = piperTdagOpCreate(PIPER_TDAG_PACK_INTO,
                                               mlirOperationGetLocation(producer), 2, ops, 1,
                                               &flat, 3, packAttrs);
        /* after the gradient and after the previous copy: program order stays topological */
        MlirOperation anchor = positionOf(body, producer) > positionOf(body, after) ? producer : after;
        mlirBlockInsertOwnedOperationAfter(body, anchor, pack);
        packed = mlirOperationGetResult(pack, 0);
        after = pack;
        at += piperTensorNumel(mlirValueGetType(grads[i]));
      }
      MlirType types[2] = {flat, mlirTypeParseGet(ctx, piperStr("!comm.token"))};
      MlirNamedAttribute arAttrs[4] = {piperNamedAttr(ctx, "group", devices), devAttr, passB,
                                       piperNamedAttr(ctx, "stream", stream)};
      MlirOperation ar = piperOpCreate("comm.all_reduce", mlirOperationGetLocation(after), 1,
                                       &packed, 2, types, mlirAttributeIsNull(stream) ? 3 : 4,
                                       arAttrs);
      mlirBlockInsertOwnedOperationAfter(body, after, ar);
      MlirValue reduced = mlirOperationGetResult(ar, 0);
      int64_t offset = 0;
      for (int i = 0; i < k; ++i) {
        MlirOperation upd = order[first + i].upd;
        MlirType t = mlirValueGetType(grads[i]);
        MlirNamedAttribute viewAttrs[3] = {
            piperNamedAttr(ctx, "offset", piperI64Attr(ctx, offset)), devAttr, passUpd};
        MlirOperation view = piperTdagOpCreate(PIPER_TDAG_VIEW, mlirOperationGetLocation(upd), 1,
                                               &reduced, 1, &t, 3, viewAttrs);
        mlirBlockInsertOwnedOperationBefore(body, upd, view);
        mlirOperationSetOperand(upd, 1, mlirOperationGetResult(view, 0));
        offset += piperTensorNumel(t);
        for (int u = 0; u < n; ++u)
          if (updates[u].ptr == upd.ptr) bucketed[u] = true;
      }
      free(grads);
    }
    first = last + 1;
  }
  free(order);
}

/* The sched.shard_tensor directive of `module` whose group (or, with group_size, one of whose
 * groups) is `group` (any order), or null. */
static MlirOperation shardTensorOf(MlirOperation module, MlirAttribute group) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "sched.shard_tensor")) continue;
    MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (!piperListLen(g)) continue;
    if (mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("group_size")))) {
      if (sameDevices(g, group)) return op;
    } else if (piperListLen(group) && piperListFind(g, piperListAt(group, 0)) >= 0) {
      return op; /* its groups cut its list; the caller's group is one of them */
    }
  }
  return (MlirOperation){NULL};
}

/* With tensor parallelism (the module's piper.tp_groups, shard_tensor.c) a replicate lists
 * whole groups, two or more, one per data-parallel replica, as piper-sched --tp T --dp R
 * writes them: each member then reduces with the members of the same rank in the other groups.
 * A list inside one group has no other replica to reduce with (the directive would silently do
 * nothing), and a list holding part of a group, or a group and devices outside every group,
 * has no such pairing. A list that touches no group is not concerned. False after an error at
 * the directive. */
static bool wholeTensorParallelGroups(MlirOperation d, MlirAttribute devices) {
  MlirOperation module = mlirOperationGetParentOperation(d);
  MlirContext ctx = mlirOperationGetContext(d);
  int64_t T;
  MlirAttribute lists = piperTpGroups(module, &T);
  if (mlirAttributeIsNull(lists)) return true;
  intptr_t n = piperListLen(devices), nLists = mlirArrayAttrGetNumElements(lists);
  for (intptr_t l = 0; l < nLists; ++l) /* a stage's own list of groups: whole by definition */
    if (mlirAttributeEqual(mlirArrayAttrGetElement(lists, l), devices) && n >= 2 * T) return true;
  /* the group of each listed device: (list, run) packed as list * 2^21 + run + 1 (runs are
   * fewer than 2^20); the devices listed, as id + 1 (0 is the maps' empty key) */
  PiperPtrMap touchedGroups, listed;
  piperPtrMapInit(&touchedGroups, 64);
  piperPtrMapInit(&listed, n ? (size_t)n : 1);
  for (intptr_t i = 0; i < n; ++i)
    piperPtrMapPut(&listed, (const void *)(intptr_t)(piperListAt(devices, i) + 1), 1);
  int64_t outside = -1, inside = -1; /* a device in no group, one in a group */
  intptr_t touched = 0, *firstOf = malloc((size_t)(n ? n : 1) * sizeof *firstOf);
  MlirAttribute *listOf = malloc((size_t)(n ? n : 1) * sizeof *listOf);
  if (!firstOf || !listOf) {
    free(firstOf), free(listOf);
    piperPtrMapFree(&touchedGroups);
    piperPtrMapFree(&listed);
    piperDirectiveError(d, "replicate: out of memory");
    return false;
  }
  for (intptr_t i = 0; i < n; ++i) {
    int64_t dev = piperListAt(devices, i);
    intptr_t at = -1, l = 0;
    for (; l < nLists && at < 0; ++l) at = piperListFind(mlirArrayAttrGetElement(lists, l), dev);
    if (at < 0) {
      if (outside < 0) outside = dev;
      continue;
    }
    if (inside < 0) inside = dev;
    const void *key = (const void *)(intptr_t)(((int64_t)(l - 1) << 21) + at / T + 1);
    if (piperPtrMapGet(&touchedGroups, key, NULL)) continue;
    piperPtrMapPut(&touchedGroups, key, 1);
    listOf[touched] = mlirArrayAttrGetElement(lists, l - 1);
    firstOf[touched++] = at - at % T;
  }
  bool ok = true;
  char list[256], grp[256];
  piperDescribeDevices(devices, list, sizeof list);
  int64_t *ids = malloc((size_t)T * sizeof *ids);
  if (inside < 0) {
    /* not a tensor-parallel stage's list */
  } else if (outside >= 0) {
    piperDirectiveError(d, "replicate: devices %s mix devices of tensor-parallel groups (%lld) "
                           "with devices in none (%lld); a replicate over a tensor-parallel "
                           "stage lists the devices of all its groups, one group per "
                           "data-parallel replica, as piper-sched --tp --dp writes it",
                        list, (long long)inside, (long long)outside);
    ok = false;
  } else {
    /* each touched group must be listed whole */
    for (intptr_t g = 0; g < touched && ok && ids; ++g) {
      for (int64_t t = 0; t < T; ++t) ids[t] = piperListAt(listOf[g], firstOf[g] + t);
      for (int64_t t = 0; t < T && ok; ++t) {
        if (piperPtrMapGet(&listed, (const void *)(intptr_t)(ids[t] + 1), NULL)) continue;
        MlirAttribute group = piperListGet(ctx, ids, T);
        piperDescribeDevices(group, grp, sizeof grp);
        piperDirectiveError(d, "replicate: devices %s hold part of the tensor-parallel group "
                               "%s (not device %lld); a replicate lists whole groups, one per "
                               "data-parallel replica (each member reduces with the members "
                               "of its rank in the other groups): list every device of the "
                               "groups it replicates, the list its stage is placed on",
                            list, grp, (long long)ids[t]);
        MlirOperation st = shardTensorOf(module, group);
        if (!mlirOperationIsNull(st))
          piperEmitNotef(mlirOperationGetLocation(st), "replicate: the group's shard_tensor");
        ok = false;
      }
    }
    if (ok && touched == 1 && ids) {
      for (int64_t t = 0; t < T; ++t) ids[t] = piperListAt(listOf[0], firstOf[0] + t);
      MlirAttribute group = piperListGet(ctx, ids, T);
      piperDescribeDevices(group, grp, sizeof grp);
      piperDirectiveError(d, "replicate: devices %s are one tensor-parallel group, whose %lld "
                             "members split one replica between them: there is no other "
                             "replica to reduce gradients with. For data parallelism place the "
                             "stage on two or more groups, give each its shard_tensor and "
                             "replicate over all their devices (piper-sched --tp %lld --dp 2: "
                             "groups [0..%lld] and [%lld..%lld], replicate over [0..%lld]); "
                             "else drop this replicate",
                          list, (long long)T, (long long)T, (long long)(T - 1), (long long)T,
                          (long long)(2 * T - 1), (long long)(2 * T - 1));
      MlirOperation st = shardTensorOf(module, group);
      if (!mlirOperationIsNull(st))
        piperEmitNotef(mlirOperationGetLocation(st), "replicate: the group's shard_tensor");
      ok = false;
    }
  }
  free(ids);
  free(firstOf);
  free(listOf);
  piperPtrMapFree(&touchedGroups);
  piperPtrMapFree(&listed);
  return ok;
}

/* Product of num_microbatches of the module's split directives that selected `op` (its
 * copies keep the tags the filter matched), 1 if none: for saying what the rows are. */
static int64_t microbatchesOf(MlirOperation module, MlirOperation op) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  int64_t M = 1;
  for (MlirOperation s = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(s);
       s = mlirOperationGetNextInBlock(s)) {
    if (!piperOpIs(s, "sched.split")) continue;
    MlirAttribute filter = mlirOperationGetAttributeByName(s, piperStr("filter"));
    int64_t m = piperGetIntAttr(s, "num_microbatches", 1);
    if (!mlirAttributeIsNull(filter) && piperFilterMatches(op, filter) && m > 1 &&
        M <= INT64_MAX / m)
      M *= m;
  }
  return M;
}

/* Extraction gives each of the R replicas rows / R of every batched result: R must divide
 * them. Said here, at the directive, in the user's terms (batch, microbatches, replicas);
 * extract keeps its check at the op for a place without replicate. False after an error. */
static bool replicasDivideBatch(MlirOperation d, MlirOperation op, int64_t R, int64_t T) {
  if (R < 2) return true;
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
    if (!piperResultIsBatched(op, r)) continue;
    int64_t rows = piperTensorDim(mlirValueGetType(mlirOperationGetResult(op, r)), 0);
    if (rows <= 0 || rows % R == 0) continue;
    char replicas[128];
    if (T > 1)
      snprintf(replicas, sizeof replicas, "%lld replicas (%lld devices in tensor-parallel "
                                          "groups of %lld)",
               (long long)R, (long long)(R * T), (long long)T);
    else snprintf(replicas, sizeof replicas, "%lld replicas", (long long)R);
    int64_t M = microbatchesOf(mlirOperationGetParentOperation(d), op);
    if (M > 1)
      piperDirectiveError(d, "replicate: %s do not divide a microbatch of %lld rows (the batch "
                             "of %lld rows in %lld microbatches); use replicas x microbatches "
                             "that divide %lld",
                          replicas, (long long)rows, (long long)(rows * M), (long long)M,
                          (long long)(rows * M));
    else
      piperDirectiveError(d, "replicate: %s do not divide the batch of %lld rows; use a "
                             "replica count that divides %lld",
                          replicas, (long long)rows, (long long)rows);
    return false;
  }
  return true;
}

static MlirLogicalResult applyReplicate(MlirOperation d, MlirBlock body) {
  MlirContext ctx = mlirOperationGetContext(d);
  MlirAttribute filter = mlirOperationGetAttributeByName(d, piperStr("filter"));
  MlirAttribute devices = mlirOperationGetAttributeByName(d, piperStr("devices"));
  MlirAttribute stream = mlirOperationGetAttributeByName(d, piperStr("reduce_stream"));
  if (!wholeTensorParallelGroups(d, devices)) return mlirLogicalResultFailure();
  int matched = 0;
  int64_t tp = 0; /* tensor-parallel group size of the placed list (shard_tensor.c), 1 none */
  int64_t cp = 0; /* context-parallel group size of the placed list (shard_sequence.c) */
  MlirOperation *updates = NULL; /* the selected updates: one per parameter, any number */
  size_t nUpdates = 0, capUpdates = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpInDialect(op, "tdag") || !piperFilterMatches(op, filter)) continue;
    matched++;
    /* an expert's parameter, gradient and update, owned by one replica (the shard directive,
     * passes/shard.c): not reduced over the replicas */
    if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local")))) continue;
    MlirAttribute placed = mlirOperationGetAttributeByName(op, piperStr("devices"));
    /* a parameter's copy lives with the consumers that read it (insert-comm), elsewhere */
    if (!piperIsOp(op, PIPER_TDAG_PARAM) && !sameDevices(placed, devices)) {
      piperDirectiveError(d, "replicate: the selected ops are placed on other devices than "
                             "this directive's; give place and replicate the same device list");
      free(updates);
      return mlirLogicalResultFailure();
    }
    /* of the placed (sorted) list, not of a parameter copy elsewhere; the directive's own
     * list may be in any order */
    if (!tp && (piperIsOp(op, PIPER_TDAG_ADAMW) || sameDevices(placed, devices)))
      tp = piperTpSize(mlirOperationGetParentOperation(d), placed);
    /* every op but a parameter is on this directive's devices (checked above), so tp is set */
    /* context parallelism (shard_sequence.c): a group's members share batch rows, not
     * gradients or state: the reduction and ZeRO's shards span every device of the list
     * (extraction gives device k of it shard k), the batch only its groups */
    if (!cp && (piperIsOp(op, PIPER_TDAG_ADAMW) || sameDevices(placed, devices)))
      cp = piperCpSize(piperCpGroups(mlirOperationGetParentOperation(d)), placed,
                       tp ? tp : 1, NULL);
    if (!piperIsOp(op, PIPER_TDAG_PARAM) && tp &&
        !replicasDivideBatch(d, op, piperListLen(devices) / tp / (cp ? cp : 1),
                             tp)) {
      free(updates);
      return mlirLogicalResultFailure();
    }
    if (!piperIsOp(op, PIPER_TDAG_ADAMW) || piperListLen(devices) / tp < 2) continue;
    if (!piperGrow((void **)&updates, &capUpdates, nUpdates + 1, sizeof *updates)) {
      piperDirectiveError(d, "replicate: out of memory");
      free(updates);
      return mlirLogicalResultFailure();
    }
    updates[nUpdates++] = op;
  }
  if (!matched) {
    piperDirectiveError(d, "replicate: the filter matches no op of the model");
    free(updates);
    return mlirLogicalResultFailure();
  }
  /* the group is the placed (sorted) device list: member k holds shard k */
  if (nUpdates) devices = mlirOperationGetAttributeByName(updates[0], piperStr("devices"));
  int zero = !mlirAttributeIsNull(mlirOperationGetAttributeByName(d, piperStr("shard_params"))) ? 3
             : !mlirAttributeIsNull(mlirOperationGetAttributeByName(d, piperStr("shard_grads"))) ? 2
             : !mlirAttributeIsNull(mlirOperationGetAttributeByName(d, piperStr("shard_optim"))) ? 1
                                                                                               : 0;
  MlirAttribute gatherStream = mlirOperationGetAttributeByName(d, piperStr("gather_stream"));
  bool *bucketed = calloc(nUpdates ? nUpdates : 1, sizeof *bucketed);
  MlirAttribute bucket = mlirOperationGetAttributeByName(d, piperStr("bucket_size"));
  double bucketMB = mlirAttributeIsNull(bucket) ? PIPER_DEFAULT_BUCKET_MB
                                                : mlirFloatAttrGetValueDouble(bucket);
  if (bucketMB > 0 && zero < 2) {
    bucketGradients(ctx, body, updates, nUpdates, bucketed, devices, stream,
                    bucketMB * (1 << 20));
  } else if (!mlirAttributeIsNull(bucket) && bucketMB > 0) {
    /* The C API has no warning diagnostics: say it on stderr, with the directive's place. */
    MlirLocation at = mlirOperationGetLocation(d);
    if (mlirLocationIsAFileLineColRange(at)) {
      MlirStringRef file = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(at));
      fprintf(stderr, "%.*s:%d:%d: ", (int)file.length, file.data,
              mlirLocationFileLineColRangeGetStartLine(at),
              mlirLocationFileLineColRangeGetStartColumn(at));
    }
    fprintf(stderr, "warning: replicate: bucket_size buckets all-reduced gradients; with "
                    "shard_grads each gradient is reduce-scattered on its own\n");
  }
  if (!tp) tp = 1;
  for (size_t u = 0; u < nUpdates; ++u)
    shardUpdate(ctx, body, updates[u], devices, stream, gatherStream, zero, bucketed[u], tp);
  free(bucketed);
  free(updates);
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runReplicate(MlirOperation module, const char *arg) {
  return piperApplyDirectives(module, "sched.replicate", "piper-replicate", applyReplicate);
}

MlirPass piperCreateReplicatePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-replicate", "replicate directive", runReplicate,
                               arg);
}
