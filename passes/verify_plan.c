/* --piper-verify-plan: a proof, before any code is emitted, that the per-device plans cannot
 * hang.
 *
 * The plans are straight-line programs, so their communication behaviour is exactly
 * determined: the pass runs them in an abstract machine. Each device walks its ops in order;
 * compute ops and sends never block (sends are nonblocking and buffered until the end of the
 * step); a recv blocks until its peer has issued the send with the same tag; a collective blocks
 * until every member of its group has reached the collective with the same position in that
 * group's sequence, and every member must call the same kind of collective on the same number
 * of elements there. If all unfinished devices are blocked, the plan would deadlock: the pass
 * reports each blocked device with the op it waits at, and fails. It also checks that every
 * send has exactly one matching recv (same tag, the right peers, the same size) and that no
 * recv waits for a send that never comes. Each error that names a device is followed by a
 * note at the `order` directive that ordered that device's plan (its piper.order, set by
 * --piper-extract), so a deadlock points back at the strategy lines that cause it.
 *
 * Two sub-plans are proven. The training step includes the gradient-norm all-reduce the
 * lowering emits on every device before its first update-pass op (a blocking collective of the
 * whole world on the runtime's communicator, modelled here as a world barrier at that point).
 * The evaluation step (--eval-every) runs only the forward ops and forward transfers (pass F)
 * of each plan, in plan order; it is proven on its own. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

typedef struct {
  MlirOperation fn;   /* the device's function, @device_<d> (null if absent); in `ops` it
                       * also stands for the gradient-norm barrier */
  MlirOperation *ops; /* the device's plan */
  size_t n, pc;       /* ops, next to run */
  int64_t arrivedAt;  /* pc at which the device registered at a collective, -1 none */
} Device;

/* Members that reached one collective of a group, and the first of them, for comparison. */
typedef struct {
  intptr_t count, passed;  /* arrived; of those, gone through */
  MlirOperation first;     /* the first arrival's op */
  int64_t firstDevice;     /* and its device */
} Arrivals;

typedef struct {
  int64_t tag, from, to, numel; /* a send issued */
} Sent;

/* Collectives device d has issued on group gid so far, in a map keyed by the pair: only the
 * groups a device belongs to take room (a per-device array of every group would be
 * devices x groups, gigabytes for a large plan). */
static const void *seqKey(int64_t d, int64_t nGroups, intptr_t gid) {
  /* +1: nonzero; << 4: the map hashes key >> 4 (it expects aligned pointers) */
  return (const void *)((((uintptr_t)d * (uintptr_t)nGroups + (uintptr_t)gid) + 1) << 4);
}

static int64_t numelOf(MlirOperation op) {
  MlirType t = piperOpIs(op, "comm.recv") ? mlirValueGetType(mlirOperationGetResult(op, 0))
                                          : mlirValueGetType(mlirOperationGetOperand(op, 0));
  return piperTensorNumel(t);
}

static bool isCollective(MlirOperation op) {
  return piperOpIs(op, "comm.all_reduce") || piperOpIs(op, "comm.reduce_scatter") ||
         piperOpIs(op, "comm.all_gather") || piperOpIs(op, "comm.all_to_all");
}

static void describe(MlirOperation op, char *buf, size_t size) {
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  snprintf(buf, size, "%.*s (tag %lld, peer %lld)", (int)name.length, name.data,
           (long long)piperGetIntAttr(op, "tag", -1), (long long)piperGetIntAttr(op, "peer", -1));
}

/* Notes at the order directive behind device d's plan, once per directive per error
 * (replicas share theirs): `*last` is the previous note's location, null before the first. */
static void noteOrder(const Device *dev, int64_t d, MlirLocation *last) {
  MlirLocation loc;
  if (mlirOperationIsNull(dev[d].fn) || !piperOrderDirectiveLoc(dev[d].fn, &loc)) return;
  if (!mlirLocationIsNull(*last) && mlirLocationEqual(*last, loc)) return;
  piperEmitNotef(loc, "this order directive sets the order device %lld runs its ops in",
                 (long long)d);
  *last = loc;
}

/* pass = "UPD" (the update pass) / "F" (no pass attribute: the forward) */
static bool passIs(MlirOperation op, const char *want) {
  char pass[8];
  return !strcmp(piperOpPass(op, pass, sizeof pass), want);
}

/* In a plan per role, the role whose replica 0 is device `d` (a transfer's `peer` there), or
 * -1. */
static int64_t roleOfDevice(const int64_t *start, int64_t P, int64_t d) {
  for (int64_t p = 0; p < P; ++p)
    if (start[p] == d) return p;
  return -1;
}

/* The key a collective's group is numbered by: the group attribute (uniqued), or in a plan per
 * role a group family's [group, group_stride] (replica k's members are the group's + k * S;
 * extract.c), apart from a plain group with the same members. */
static MlirAttribute groupKey(MlirOperation op, int64_t P) {
  MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
  int64_t S = P > 0 ? piperGetIntAttr(op, "group_stride", 0) : 0;
  if (!S) return g;
  MlirContext ctx = mlirOperationGetContext(op);
  MlirAttribute pair[2] = {g, mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), S)};
  return mlirArrayAttrGet(ctx, 2, pair);
}

/* True if device d is in the ascending device list g (binary search). */
static bool inGroup(MlirAttribute g, int64_t d) {
  intptr_t lo = 0, hi = mlirArrayAttrGetNumElements(g) - 1;
  while (lo <= hi) {
    intptr_t mid = lo + (hi - lo) / 2;
    int64_t v = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(g, mid));
    if (v == d) return true;
    if (v < d) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/* In a plan per role (role p: range[3p .. 3p+2] = start, stride, count), how many roles the
 * group of collective `op` couples, i.e. its members in the machine of replica 0, or -1 if the
 * group does not follow the roles. A group family (group_stride S) lists replica 0 of each of
 * its roles, all of stride S, ascending; a plain group is every device of each of its roles,
 * ascending (the same group for every replica). O(members x roles), once per group. A role
 * with no plan function has range 0, 0, 0 and holds no device. */
static int64_t roleGroupMembers(MlirOperation op, const int64_t *range, int64_t P) {
  MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
  int64_t S = piperGetIntAttr(op, "group_stride", 0);
  intptr_t n = mlirArrayAttrGetNumElements(g);
  int64_t *tally = calloc(P, sizeof *tally), roles = 0, prev = -1;
  bool ok = tally != NULL && n >= 1;
  for (intptr_t i = 0; i < n && ok; ++i) {
    int64_t d = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(g, i)), p = 0;
    ok = d > prev;
    prev = d;
    for (; p < P; ++p) { /* the role holding d (as replica 0 in a family) */
      int64_t off = d - range[3 * p], stride = range[3 * p + 1];
      if (stride < 1) continue; /* a role without a plan function: no devices */
      if (S ? off == 0 && stride == S
            : off >= 0 && off % stride == 0 && off / stride < range[3 * p + 2])
        break;
    }
    ok = ok && p < P;
    if (ok) roles += tally[p]++ == 0;
  }
  for (int64_t p = 0; p < P && ok && !S; ++p) /* plain: whole roles */
    ok = tally[p] == 0 || tally[p] == range[3 * p + 2];
  free(tally);
  return ok ? roles : -1;
}

/* One proof: the training step (evalStep false, with the gradient-norm barrier) or the
 * forward-only evaluation step. */
static MlirLogicalResult verifyStep(MlirOperation module, bool evalStep) {
  /* Plans per role (piper.roles = P, functions role_<p> with piper.role = [start, stride, R]):
   * the proof runs the P plans of replica 0 only, each collective over the roles its group
   * couples (a member count of one per role) and each transfer to replica 0 of the peer
   * role. Why that covers every k: --piper-extract makes roles only when every role has the
   * same R, every collective's group is either whole roles (the same group for every k) or a
   * group family (tensor parallelism: replica k's group is replica k of each of its roles,
   * group + k * group_stride), and every transfer of replica k goes to replica k of the other
   * role (peer + k * peer_stride); roleGroupMembers checks the groups' form here. Replica k's
   * ops, sizes and tags do not depend on k: its batch slice has the same rows, and a ZeRO
   * collective moves c = ceil(n/R) elements on every replica (the reduce-scatter's input and
   * the all-gather's buffer are padded to R * c), so only the local offset and length of the
   * shard (shorter or empty at the end) vary with k, and they never touch communication. So
   * the N-device machine is R copies of the P-device machine (one per k; transfers and
   * families stay inside a copy), coupled only through collectives over whole roles and the
   * world barrier. The machine is deterministic (straight-line plans, blocking receives,
   * collectives that wait for all members), so the copies advance in lock step: a collective
   * over whole roles is reached by all R replicas of its roles exactly when their replica 0s
   * reach it, and every k's run equals k = 0's. A deadlock or mismatch for some k is one for
   * k = 0, and a clean run for k = 0 is one for all k. */
  int64_t P = piperGetIntAttr(module, "piper.roles", 0);
  int64_t N = P > 0 ? P : piperGetIntAttr(module, "piper.devices", 0);
  if (N <= 0) {
    mlirEmitError(mlirOperationGetLocation(module),
                  "piper-verify-plan: no per-device plans (run --piper-extract first)");
    return mlirLogicalResultFailure();
  }
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  if (N > PIPER_MAX_DEVICES) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-verify-plan: piper.devices = %lld is more than the %d devices a plan "
                    "may have", (long long)N, PIPER_MAX_DEVICES);
    return mlirLogicalResultFailure();
  }
  Device *dev = calloc(N, sizeof *dev);
  int64_t *roleRange = P > 0 ? calloc(3 * P, sizeof *roleRange) : NULL; /* start, stride, R */
  int64_t *roleStart = P > 0 ? calloc(P, sizeof *roleStart) : NULL;
  MlirOperation *groupOp = NULL; /* per group id: a collective on it */
  size_t capGroupOp = 0;
  MlirLogicalResult status = mlirLogicalResultSuccess();
  /* Communicator groups, id = index: a plan for thousands of devices has thousands. Group
   * attributes are uniqued by MLIR, so the pointer is the lookup key. */
  PiperPtrMap groupId;
  piperPtrMapInit(&groupId, 64);
  int64_t nGroups = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    MlirAttribute sym = mlirOperationGetAttributeByName(f, piperStr("sym_name"));
    if (!piperOpIs(f, "func.func") || mlirAttributeIsNull(sym)) continue;
    int64_t d = P > 0 ? piperPlanFunctionNumber(mlirStringAttrGetValue(sym), "role_")
                      : piperDeviceFunctionNumber(mlirStringAttrGetValue(sym));
    if (d < 0 || d >= N) continue;
    if (P > 0) {
      MlirAttribute range = mlirOperationGetAttributeByName(f, piperStr("piper.role"));
      bool wellFormed = !mlirAttributeIsNull(range) && mlirAttributeIsAArray(range) &&
                        mlirArrayAttrGetNumElements(range) == 3;
      for (int c = 0; c < 3 && wellFormed; ++c) /* integers, start >= 0, stride, count >= 1 */
        wellFormed = mlirAttributeIsAInteger(mlirArrayAttrGetElement(range, c)) &&
                     mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, c)) >= (c > 0);
      if (!wellFormed) {
        mlirEmitError(mlirOperationGetLocation(f), "piper-verify-plan: a role's plan needs "
                                                   "piper.role = [start, stride, count] "
                                                   "(integers, stride and count at least 1)");
        for (int64_t e = 0; e < N; ++e) free(dev[e].ops); /* the roles read before this one */
        free(dev);
        free(roleStart);
        free(roleRange);
        free(groupOp);
        piperPtrMapFree(&groupId);
        return mlirLogicalResultFailure();
      }
      for (int c = 0; c < 3; ++c)
        roleRange[3 * d + c] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, c));
      roleStart[d] = roleRange[3 * d];
    }
    /* one function per device: symbol names are unique and the exact-name rule is one to
     * one (`device_0x` or `device_00` is no device's plan) */
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    dev[d].fn = f;
    if (mlirBlockIsNull(body)) continue; /* a declaration: no ops, an empty plan */
    size_t cap = 64;
    dev[d].ops = malloc(cap * sizeof *dev[d].ops);
    bool normed = evalStep; /* the norm barrier: the function op itself stands for it */
    for (MlirOperation op = mlirBlockGetFirstOperation(body);; op = mlirOperationGetNextInBlock(op)) {
      bool end = mlirOperationIsNull(op) || piperOpIs(op, "func.return");
      if (!normed && (end || passIs(op, "UPD"))) {
        normed = true;
        if (dev[d].n == cap) dev[d].ops = realloc(dev[d].ops, (cap *= 2) * sizeof *dev[d].ops);
        dev[d].ops[dev[d].n++] = f;
      }
      if (end) break;
      if (!piperOpInDialect(op, "comm")) continue; /* compute never blocks */
      if (evalStep && !piperOpIs(op, "comm.wait") && !passIs(op, "F")) continue;
      if (dev[d].n == cap) dev[d].ops = realloc(dev[d].ops, (cap *= 2) * sizeof *dev[d].ops);
      dev[d].ops[dev[d].n++] = op;
      if (isCollective(op)) {
        MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group")),
                      key = groupKey(op, P);
        if (P > 0 && !inGroup(g, roleStart[d])) {
          mlirEmitError(mlirOperationGetLocation(op), "piper-verify-plan: in a plan per role, a "
                                                      "collective's group must hold its own "
                                                      "role's replica 0");
          status = mlirLogicalResultFailure();
        }
        if (!piperPtrMapGet(&groupId, key.ptr, NULL)) {
          if (!piperGrow((void **)&groupOp, &capGroupOp, (size_t)nGroups + 1, sizeof *groupOp)) {
            mlirEmitError(mlirOperationGetLocation(op), "piper-verify-plan: out of memory");
            status = mlirLogicalResultFailure();
            break;
          }
          groupOp[nGroups] = op;
          piperPtrMapPut(&groupId, key.ptr, nGroups++);
        }
      }
    }
  }
  /* per group: how many plans of the machine meet at its collectives (per role: its roles) */
  int64_t *groupMembers = calloc(nGroups ? nGroups : 1, sizeof *groupMembers);
  for (int64_t gid = 0; gid < nGroups && groupMembers; ++gid) {
    MlirAttribute g = mlirOperationGetAttributeByName(groupOp[gid], piperStr("group"));
    groupMembers[gid] = P > 0 ? roleGroupMembers(groupOp[gid], roleRange, P)
                              : mlirArrayAttrGetNumElements(g);
    if (groupMembers[gid] < 0) {
      mlirEmitError(mlirOperationGetLocation(groupOp[gid]),
                    "piper-verify-plan: in a plan per role, a collective's group must be whole "
                    "roles, or with group_stride S replica 0 of roles of stride S (a group "
                    "family), in ascending order");
      status = mlirLogicalResultFailure();
    }
  }
  if (!groupMembers) status = mlirLogicalResultFailure();
  for (int64_t d = 0; d < N; ++d) dev[d].arrivedAt = -1;
  PiperPtrMap collSeq; /* (device, group) -> collectives issued, see seqKey */
  piperPtrMapInit(&collSeq, 64);
  Arrivals (*arrivals)[2] = calloc(nGroups ? nGroups : 1, sizeof *arrivals);

  size_t nSent = 0, capSent = 256;
  Sent *sent = malloc(capSent * sizeof *sent);
  int64_t normArrived = 0; /* devices at the gradient-norm barrier (one per step) */
  for (bool progress = true; progress && mlirLogicalResultIsSuccess(status);) {
    progress = false;
    for (int64_t d = 0; d < N && mlirLogicalResultIsSuccess(status); ++d) {
      while (dev[d].pc < dev[d].n) {
        MlirOperation op = dev[d].ops[dev[d].pc];
        if (op.ptr == dev[d].fn.ptr) { /* the world's gradient-norm all-reduce */
          if (dev[d].arrivedAt != (int64_t)dev[d].pc) {
            dev[d].arrivedAt = (int64_t)dev[d].pc;
            normArrived++;
          }
          if (normArrived < N) break;
        } else if (piperOpIs(op, "comm.send")) {
          if (nSent == capSent) sent = realloc(sent, (capSent *= 2) * sizeof *sent);
          int64_t to = piperGetIntAttr(op, "peer", -1);
          sent[nSent++] = (Sent){piperGetIntAttr(op, "tag", -1), d,
                                 P > 0 ? roleOfDevice(roleStart, P, to) : to, numelOf(op)};
        } else if (piperOpIs(op, "comm.recv") || piperOpIs(op, "comm.recv_into")) {
          int64_t tag = piperGetIntAttr(op, "tag", -1), peer = piperGetIntAttr(op, "peer", -1);
          if (P > 0) peer = roleOfDevice(roleStart, P, peer);
          size_t k = 0;
          while (k < nSent && !(sent[k].tag == tag && sent[k].from == peer && sent[k].to == d)) ++k;
          if (k == nSent) break; /* blocked: the send has not been issued yet */
          if (sent[k].numel != numelOf(op)) {
            char msg[256];
            snprintf(msg, sizeof msg, "piper-verify-plan: device %lld receives %lld elements "
                                      "with tag %lld but device %lld sends %lld",
                     (long long)d, (long long)numelOf(op), (long long)tag, (long long)peer,
                     (long long)sent[k].numel);
            mlirEmitError(mlirOperationGetLocation(op), msg);
            MlirLocation last = {NULL};
            noteOrder(dev, peer, &last);
            noteOrder(dev, d, &last);
            status = mlirLogicalResultFailure();
            break;
          }
          sent[k].to = -1; /* consumed */
        } else if (isCollective(op)) {
          intptr_t gid = 0;
          piperPtrMapGet(&groupId, groupKey(op, P).ptr, &gid); /* numbered above */
          /* Arrival counting, O(1) per device: every member must reach the same collective, its
           * k-th on this group. Members are at most one collective apart (none passes k + 1
           * before all passed k), so two slots, k mod 2, hold the arrivals. */
          intptr_t seq = 0;
          piperPtrMapGet(&collSeq, seqKey(d, nGroups, gid), &seq);
          Arrivals *a = &arrivals[gid][seq & 1];
          if (dev[d].arrivedAt != (int64_t)dev[d].pc) {
            dev[d].arrivedAt = (int64_t)dev[d].pc;
            if (a->count == 0) {
              a->first = op;
              a->firstDevice = d;
            } else if (!mlirStringRefEqual(mlirIdentifierStr(mlirOperationGetName(a->first)),
                                           mlirIdentifierStr(mlirOperationGetName(op))) ||
                       numelOf(a->first) != numelOf(op)) {
              /* the whole name: comm.all_reduce and comm.all_to_all have the same length */
              char msg[256];
              snprintf(msg, sizeof msg, "piper-verify-plan: devices %lld and %lld reach "
                                        "different collectives on the same group at the same "
                                        "point (a hang or a wrong result)",
                       (long long)a->firstDevice, (long long)d);
              mlirEmitError(mlirOperationGetLocation(a->first), msg);
              piperEmitNotef(mlirOperationGetLocation(op),
                             "piper-verify-plan: device %lld reaches this one there",
                             (long long)d);
              MlirLocation last = {NULL};
              noteOrder(dev, a->firstDevice, &last);
              noteOrder(dev, d, &last);
              status = mlirLogicalResultFailure();
              break;
            }
            a->count++;
          }
          /* wait for the others (per role: replica 0 of each role stands for the role) */
          if (a->count < groupMembers[gid]) break;
          piperPtrMapPut(&collSeq, seqKey(d, nGroups, gid), seq + 1);
          if (++a->passed == a->count) a->count = a->passed = 0; /* the slot is free again */
        }
        dev[d].pc++;
        progress = true;
      }
    }
  }
  if (mlirLogicalResultIsSuccess(status)) {
    int blocked = 0;
    for (int64_t d = 0; d < N; ++d)
      if (dev[d].pc < dev[d].n) {
        char what[160], node[160] = "", msg[400];
        MlirOperation at = dev[d].ops[dev[d].pc];
        if (at.ptr == dev[d].fn.ptr)
          snprintf(what, sizeof what, "the gradient-norm all-reduce before its first update");
        else describe(at, what, sizeof what);
        if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(at, piperStr("tags")))) {
          char label[140];
          piperNodeLabel(at, label, sizeof label);
          snprintf(node, sizeof node, " of node %s", label);
        }
        snprintf(msg, sizeof msg, "piper-verify-plan: the plan deadlocks: device %lld waits "
                                  "forever at %s%s", (long long)d, what, node);
        mlirEmitError(mlirOperationGetLocation(dev[d].ops[dev[d].pc]), msg);
        MlirLocation last = {NULL};
        noteOrder(dev, d, &last);
        blocked++;
      }
    for (size_t k = 0; k < nSent && !blocked; ++k)
      if (sent[k].to >= 0) {
        char msg[200];
        snprintf(msg, sizeof msg, "piper-verify-plan: device %lld sends tag %lld to device %lld, "
                                  "which never receives it", (long long)sent[k].from,
                 (long long)sent[k].tag, (long long)sent[k].to);
        mlirEmitError(mlirOperationGetLocation(module), msg);
        blocked++;
      }
    if (blocked) status = mlirLogicalResultFailure();
  }
  for (int64_t d = 0; d < N; ++d) {
    free(dev[d].ops);
  }
  free(dev);
  free(roleStart);
  free(roleRange);
  free(groupOp);
  free(groupMembers);
  free(sent);
  free(arrivals);
  piperPtrMapFree(&groupId);
  piperPtrMapFree(&collSeq);
  return status;
}

static MlirLogicalResult runVerifyPlan(MlirOperation module, const char *arg) {
  if (mlirLogicalResultIsFailure(verifyStep(module, false))) return mlirLogicalResultFailure();
  if (mlirLogicalResultIsSuccess(verifyStep(module, true))) return mlirLogicalResultSuccess();
  mlirEmitError(mlirOperationGetLocation(module),
                "piper-verify-plan: (the errors above are of the evaluation step: the forward "
                "ops and forward transfers of each plan, which --eval-every runs)");
  return mlirLogicalResultFailure();
}

MlirPass piperCreateVerifyPlanPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-verify-plan", "no-hang proof", runVerifyPlan, arg);
}
