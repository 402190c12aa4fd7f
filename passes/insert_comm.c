/* --piper-insert-comm: send/recv for every value that crosses devices.
 *
 * After placement, an SSA edge whose producer and consumer run on different devices becomes
 * comm.send (with the producer's tags and pass, right after it) and comm.recv (with the
 * consumer's, right before it); consumers on the same devices share one recv. Replicated ops
 * pair up one to one: replica k of the producer sends to replica k of the consumer, so both
 * sides need the same number of replicas.
 *
 * A parameter used on other devices than its own (the tied LM head reading the embedding's
 * wte) gets a copy there. Its gradient contributions reach the owner through ordinary
 * send/recv edges (autodiff already sums them at the owner); after the owner's update the new
 * value is sent back into each copy at the end of the step (comm.recv_into), so every copy
 * starts the next step equal to the owner's. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/IRDL.h"
#include "passes/strategy.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

typedef struct {
  MlirContext ctx;
  MlirBlock body;
  int64_t nextTag;         /* transfer ids, pairing sends with recvs */
  /* (value, consumer devices) -> recv already made; linear list, a value has few */
  const void **keyValue, **keyDevices;
  MlirValue *recvd;
  size_t n, cap;
  /* pairs of (uniqued) device lists already found disjoint and of one size: every edge
   * between two stages asks again, and a merge of their lists is O(R) */
  const void **apartFrom, **apartTo;
  size_t nApart, capApart;
} Inserter;

static MlirAttribute devicesOf(MlirOperation op) {
  return mlirOperationGetAttributeByName(op, piperStr("devices"));
}

static void copyAttr(MlirOperation to, MlirOperation from, const char *name) {
  MlirAttribute a = mlirOperationGetAttributeByName(from, piperStr(name));
  if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(to, piperStr(name), a);
}

static MlirType tokenType(MlirContext ctx) {
  return mlirTypeParseGet(ctx, piperStr("!comm.token"));
}

static MlirValue lookup(Inserter *in, MlirValue v, MlirAttribute devices) {
  for (size_t i = 0; i < in->n; ++i)
    if (in->keyValue[i] == v.ptr && in->keyDevices[i] == devices.ptr) return in->recvd[i];
  return (MlirValue){NULL};
}

static void remember(Inserter *in, MlirValue v, MlirAttribute devices, MlirValue r) {
  if (in->n == in->cap) {
    in->cap = in->cap ? in->cap * 2 : 64;
    in->keyValue = realloc(in->keyValue, in->cap * sizeof *in->keyValue);
    in->keyDevices = realloc(in->keyDevices, in->cap * sizeof *in->keyDevices);
    in->recvd = realloc(in->recvd, in->cap * sizeof *in->recvd);
  }
  in->keyValue[in->n] = v.ptr;
  in->keyDevices[in->n] = devices.ptr;
  in->recvd[in->n++] = r;
}

/* Point-to-point transfers are drawn on their own trace lane, "pp". */
static MlirNamedAttribute ppStream(MlirContext ctx) {
  return piperNamedAttr(ctx, "stream", mlirStringAttrGet(ctx, piperStr("pp")));
}

/* comm.send of `v` from `from`'s devices to `to`, placed after `after`, tagged like `like`. */
static void emitSend(Inserter *in, MlirValue v, MlirOperation after, MlirOperation like,
                     MlirAttribute from, MlirAttribute to, int64_t tag) {
  MlirType tok = tokenType(in->ctx);
  MlirNamedAttribute attrs[4] = {
      piperNamedAttr(in->ctx, "peers", to),
      piperNamedAttr(in->ctx, "tag", mlirIntegerAttrGet(mlirIntegerTypeGet(in->ctx, 64), tag)),
      piperNamedAttr(in->ctx, "devices", from), ppStream(in->ctx)};
  MlirOperation send = piperOpCreate("comm.send", mlirOperationGetLocation(like), 1, &v, 1,
                                     &tok, 4, attrs);
  mlirBlockInsertOwnedOperationAfter(in->body, after, send);
  copyAttr(send, like, "tags");
  copyAttr(send, like, "pass");
}

static bool sameSize(MlirAttribute a, MlirAttribute b) {
  return piperListLen(a) == piperListLen(b);
}

static int byValue(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Sorted copy of a device list (n elements); free() it. */
static int64_t *sortedDevices(MlirAttribute a, intptr_t *n) {
  int64_t *v = piperDeviceListIds(a, n);
  if (v && !piperDeviceListIsRange(a, NULL)) qsort(v, *n, sizeof *v, byValue); /* a range ascends */
  return v;
}

/* Whether two ranges of one step share no device: each holds, modulo the step, one run of
 * residues; disjoint runs of residues, disjoint ids (a pipeline's stages: s + i*P). */
static bool rangesApart(MlirAttribute a, MlirAttribute b) {
  PiperRange x, y;
  if (!piperDeviceListIsRange(a, &x) || !piperDeviceListIsRange(b, &y) || x.step != y.step ||
      x.run + y.run > x.step)
    return false;
  int64_t d = ((y.start - x.start) % x.step + x.step) % x.step; /* y's first residue after x's */
  return d >= x.run && d + y.run <= x.step;
}

/* Whether two device lists share a device: O(1) for two ranges of one step, else a sorted
 * merge, O(R log R) (asked for every edge between stages; O(R^2) took most of a PP8 x DP2048
 * compile). */
static bool overlap(MlirAttribute a, MlirAttribute b) {
  if (rangesApart(a, b)) return false;
  intptr_t na, nb, i = 0, j = 0;
  int64_t *x = sortedDevices(a, &na), *y = sortedDevices(b, &nb);
  bool shared = !x || !y; /* out of memory: refuse, as if they overlapped */
  while (!shared && i < na && j < nb) {
    if (x[i] == y[j]) shared = true;
    else if (x[i] < y[j]) ++i;
    else ++j;
  }
  free(x);
  free(y);
  return shared;
}

/* Two device lists of one size that share no device (the values between them can be sent
 * replica to replica), remembered per pair. */
static bool pairable(Inserter *in, MlirAttribute from, MlirAttribute to) {
  for (size_t i = 0; i < in->nApart; ++i)
    if (in->apartFrom[i] == from.ptr && in->apartTo[i] == to.ptr) return true;
  if (!sameSize(from, to) || overlap(from, to)) return false;
  if (piperGrow((void **)&in->apartFrom, &in->capApart, in->nApart + 1, sizeof *in->apartFrom)) {
    size_t cap = in->capApart;
    const void **to2 = realloc(in->apartTo, cap * sizeof *to2);
    if (!to2) return true; /* not remembered: asked again next time */
    in->apartTo = to2;
    in->apartFrom[in->nApart] = from.ptr;
    in->apartTo[in->nApart++] = to.ptr;
  }
  return true;
}

/* ---- expert parallelism (passes/shard.c) ---- */

/* True if every device of `a` is in `b`. */
static bool subsetOf(MlirAttribute a, MlirAttribute b) {
  if (piperListLen(a) > piperListLen(b)) return false;
  if (piperListLen(a) == 1) { /* an expert's one owner: O(1) in a range, a binary search in
                               * an array, as place sorts lists (sorting `b` for each of E
                               * experts' edges made EP compiles quadratic in devices) */
    int64_t d = piperListAt(a, 0);
    if (piperDeviceListIsRange(b, NULL)) return piperListFind(b, d) >= 0;
    intptr_t lo = 0, hi = piperListLen(b) - 1;
    while (lo <= hi) {
      intptr_t mid = lo + (hi - lo) / 2;
      int64_t v = piperListAt(b, mid);
      if (v == d) return true;
      if (v < d) lo = mid + 1;
      else hi = mid - 1;
    }
    return false;
  }
  intptr_t na, nb, j = 0;
  int64_t *x = sortedDevices(a, &na), *y = sortedDevices(b, &nb);
  bool sub = x && y;
  for (intptr_t i = 0; sub && i < na; ++i) {
    while (j < nb && y[j] < x[i]) ++j;
    sub = j < nb && y[j] == x[i];
  }
  free(x);
  free(y);
  return sub;
}

/* An edge the shard directive made local: an expert's parameter (on its owner replica) read by
 * the stage's moe_experts, or a replica's own rows read by its owner-only weight-gradient op.
 * One side is `ep_local` and runs on a subset of the other's devices: on each device the value
 * is its own replica's (extract keeps a replica's own experts' weights), nothing to send. */
static bool epLocalEdge(MlirOperation op, MlirOperation producer, MlirAttribute from,
                        MlirAttribute to) {
  bool marked = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local"))) ||
                !mlirAttributeIsNull(mlirOperationGetAttributeByName(producer, piperStr("ep_local")));
  return marked && (subsetOf(from, to) || subsetOf(to, from));
}

static MlirOperation updateOf(MlirBlock body, MlirValue param) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (piperOpIs(op, "tdag.adamw") && mlirOperationGetOperand(op, 0).ptr == param.ptr) return op;
  return (MlirOperation){NULL};
}

/* The copy of parameter `param` on devices `to` (made on first use). */
static MlirValue paramCopy(Inserter *in, MlirOperation param, MlirAttribute to) {
  MlirValue v = mlirOperationGetResult(param, 0);
  MlirValue have = lookup(in, v, to);
  if (have.ptr) return have;
  MlirOperation copy = mlirOperationClone(param);
  mlirBlockInsertOwnedOperationAfter(in->body, param, copy);
  mlirOperationSetAttributeByName(copy, piperStr("devices"), to);
  MlirValue c = mlirOperationGetResult(copy, 0);
  remember(in, v, to, c);
  /* Refresh the copy after the owner's update: send after adamw, receive at the step's end. */
  MlirOperation upd = updateOf(in->body, v);
  if (!mlirOperationIsNull(upd)) {
    int64_t tag = in->nextTag++;
    emitSend(in, v, upd, upd, devicesOf(param), to, tag);
    MlirType tok = tokenType(in->ctx);
    MlirNamedAttribute attrs[4] = {
        piperNamedAttr(in->ctx, "peers", devicesOf(param)),
        piperNamedAttr(in->ctx, "tag", mlirIntegerAttrGet(mlirIntegerTypeGet(in->ctx, 64), tag)),
        piperNamedAttr(in->ctx, "devices", to), ppStream(in->ctx)};
    MlirOperation recv = piperOpCreate("comm.recv_into", mlirOperationGetLocation(upd), 1, &c,
                                       1, &tok, 4, attrs);
    mlirBlockInsertOwnedOperationBefore(in->body, mlirBlockGetTerminator(in->body), recv);
    copyAttr(recv, upd, "tags");
    copyAttr(recv, upd, "pass");
  }
  return c;
}

static MlirLogicalResult runInsertComm(MlirOperation module, const char *arg) {
  MlirOperation func = piperTrainingFunction(module, "piper-insert-comm");
  if (mlirOperationIsNull(func)) return mlirLogicalResultFailure();
  Inserter in = {.ctx = mlirOperationGetContext(module),
                 .body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0))};
  /* Snapshot the ops: the pass inserts as it goes. */
  size_t n = 0, cap = 256;
  MlirOperation *ops = malloc(cap * sizeof *ops);
  for (MlirOperation op = mlirBlockGetFirstOperation(in.body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (n == cap) ops = realloc(ops, (cap *= 2) * sizeof *ops);
    ops[n++] = op;
  }
  /* the plan's tag counter continues past the tags already taken (shard_sequence's ring ops
   * take two each: tag, tag + 1) */
  for (size_t k = 0; k < n; ++k) {
    int64_t tag = piperGetIntAttr(ops[k], "tag", -1);
    int64_t end = tag + (piperIsRingOp(ops[k]) ? 2 : 1);
    if (tag >= 0 && end > in.nextTag) in.nextTag = end;
  }
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t k = 0; k < n && mlirLogicalResultIsSuccess(status); ++k) {
    MlirOperation op = ops[k];
    MlirAttribute to = devicesOf(op);
    if (mlirAttributeIsNull(to)) continue;
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(op); ++a) {
      MlirValue v = mlirOperationGetOperand(op, a);
      if (!mlirValueIsAOpResult(v)) continue;
      MlirOperation producer = mlirOpResultGetOwner(v);
      MlirAttribute from = devicesOf(producer);
      if (mlirAttributeIsNull(from) || mlirAttributeEqual(from, to)) continue;
      if (epLocalEdge(op, producer, from, to)) continue;
      if (!pairable(&in, from, to)) {
        mlirEmitError(mlirOperationGetLocation(op),
                      "insert-comm: this op's input comes from a different set of devices with "
                      "a different number of replicas (or sharing some devices); place both "
                      "sides on the same number of disjoint devices");
        status = mlirLogicalResultFailure();
        break;
      }
      if (piperOpIs(producer, "tdag.param")) {
        mlirOperationSetOperand(op, a, paramCopy(&in, producer, to));
        continue;
      }
      MlirValue r = lookup(&in, v, to);
      if (!r.ptr) {
        int64_t tag = in.nextTag++;
        emitSend(&in, v, producer, producer, from, to, tag);
        MlirType types[2] = {mlirValueGetType(v), tokenType(in.ctx)};
        MlirNamedAttribute attrs[4] = {
            piperNamedAttr(in.ctx, "peers", from),
            piperNamedAttr(in.ctx, "tag", mlirIntegerAttrGet(mlirIntegerTypeGet(in.ctx, 64), tag)),
            piperNamedAttr(in.ctx, "devices", to), ppStream(in.ctx)};
        MlirOperation recv = piperOpCreate("comm.recv", mlirOperationGetLocation(op), 0, NULL,
                                           2, types, 4, attrs);
        mlirBlockInsertOwnedOperationBefore(in.body, op, recv);
        copyAttr(recv, op, "tags");
        copyAttr(recv, op, "pass");
        if (piperResultIsBatched(producer, mlirOpResultGetResultNumber(v)))
          mlirOperationSetAttributeByName(recv, piperStr("batched"), mlirUnitAttrGet(in.ctx));
        r = mlirOperationGetResult(recv, 0);
        remember(&in, v, to, r);
      }
      mlirOperationSetOperand(op, a, r);
    }
  }
  free(ops);
  free(in.keyValue);
  free(in.keyDevices);
  free(in.recvd);
  free(in.apartFrom);
  free(in.apartTo);
  return status;
}

MlirPass piperCreateInsertCommPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-insert-comm", "send/recv insertion",
                               runInsertComm, arg);
}
