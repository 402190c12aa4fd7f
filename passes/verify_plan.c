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
 * Under piper.p2p_order = "fifo" (the module attribute --piper-order-p2p sets) a pair's
 * messages must also arrive in the order they are sent, as NCCL, which has no tags, delivers
 * them: a receive must take the earliest send of its peer to it that no receive has taken
 * yet; a receive whose tag is not that send's is an error naming both tags.
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

/* The ring attention ops (context parallelism) are collectives too: their transfers are a fixed
 * ring pattern over the group, completed inside the call, so the op returns on every member
 * exactly when every member has reached it (comm.irdl.mlir). */
static bool isCollective(MlirOperation op) {
  return piperOpIs(op, "comm.all_reduce") || piperOpIs(op, "comm.reduce_scatter") ||
         piperOpIs(op, "comm.all_gather") || piperOpIs(op, "comm.all_to_all") ||
         piperOpIs(op, "comm.ring_attention") || piperOpIs(op, "comm.ring_attention_grad") ||
         piperOpIs(op, "comm.ring_gqa_attention") ||
         piperOpIs(op, "comm.ring_gqa_attention_grad");
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
  if (piperDeviceListIsRange(g, NULL)) return piperListFind(g, d) >= 0;
  intptr_t lo = 0, hi = piperListLen(g) - 1;
  while (lo <= hi) {
    intptr_t mid = lo + (hi - lo) / 2;
    int64_t v = piperListAt(g, mid);
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
  intptr_t n = piperListLen(g);
  int64_t *tally = calloc(P, sizeof *tally), roles = 0, prev = -1;
  bool ok = tally != NULL && n >= 1;
  for (intptr_t i = 0; i < n && ok; ++i) {
    int64_t d = piperListAt(g, i), p = 0;
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

/* The abstract machine of one proof: the plans, the communicator groups their collectives
 * use, and what is in flight while they run. */
typedef struct {
  MlirOperation module;
  int64_t P;                  /* piper.roles: plans per role, or 0 for plans per device */
  int64_t N;                  /* plans run: P, or piper.devices */
  Device *dev;                /* (N) the plans, owned */
  int64_t *roleRange;         /* (3P) per role: start, stride, R (piper.role); owned */
  int64_t *roleStart;         /* (P) per role: its replica 0's device; owned */
  MlirOperation *groupOp;     /* (nGroups) per group id: a collective on it; owned */
  size_t capGroupOp;          /* capacity of groupOp */
  int64_t nGroups;            /* communicator groups numbered so far */
  PiperPtrMap groupId;        /* group key (groupKey, uniqued) -> group id */
  int64_t *groupMembers;      /* (nGroups) plans that meet at each group's collectives */
  PiperPtrMap collSeq;        /* (device, group) -> collectives issued, see seqKey */
  Arrivals (*arrivals)[2];    /* (nGroups) per group: the slots k mod 2, see runCollective */
  Sent *sent;                 /* (nSent) sends issued; a consumed one has to = -1; owned */
  size_t nSent, capSent;      /* sends issued, capacity of sent */
  int64_t normArrived;        /* devices at the gradient-norm barrier (one per step) */
  bool fifo;                  /* a pair's messages are received in send order (NCCL) */
} Machine;

static void machineFree(Machine *m) {
  for (int64_t d = 0; m->dev && d < m->N; ++d) free(m->dev[d].ops);
  free(m->dev);
  free(m->roleStart);
  free(m->roleRange);
  free(m->groupOp);
  free(m->groupMembers);
  free(m->sent);
  free(m->arrivals);
  piperPtrMapFree(&m->groupId);
  piperPtrMapFree(&m->collSeq);
}

/* Role d's piper.role = [start, stride, count] from its function `f` into roleRange; false
 * after an error at `f` when it is malformed. */
static bool readRole(Machine *m, MlirOperation f, int64_t d) {
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
    return false;
  }
  for (int c = 0; c < 3; ++c)
    m->roleRange[3 * d + c] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, c));
  m->roleStart[d] = m->roleRange[3 * d];
  return true;
}

/* Appends `op` to device d's plan. */
static void pushOp(Device *dev, size_t *cap, MlirOperation op) {
  if (dev->n == *cap) dev->ops = realloc(dev->ops, (*cap *= 2) * sizeof *dev->ops);
  dev->ops[dev->n++] = op;
}

/* Gives the group of collective `op` (on device d's plan) an id if it has none; false after
 * an error at `op` when out of memory. */
static bool numberGroup(Machine *m, MlirOperation op, int64_t d, MlirLogicalResult *status) {
  MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group")),
                key = groupKey(op, m->P);
  if (m->P > 0 && !inGroup(g, m->roleStart[d])) {
    mlirEmitError(mlirOperationGetLocation(op), "piper-verify-plan: in a plan per role, a "
                                                "collective's group must hold its own "
                                                "role's replica 0");
    *status = mlirLogicalResultFailure();
  }
  if (piperPtrMapGet(&m->groupId, key.ptr, NULL)) return true;
  if (!piperGrow((void **)&m->groupOp, &m->capGroupOp, (size_t)m->nGroups + 1,
                 sizeof *m->groupOp)) {
    mlirEmitError(mlirOperationGetLocation(op), "piper-verify-plan: out of memory");
    *status = mlirLogicalResultFailure();
    return false;
  }
  m->groupOp[m->nGroups] = op;
  piperPtrMapPut(&m->groupId, key.ptr, m->nGroups++);
  return true;
}

/* Device d's plan from its function `f`: its comm ops in order (in the evaluation step those
 * of the forward, and the waits), and in the training step the function op itself standing
 * for the gradient-norm barrier before the first update op. */
static void readPlan(Machine *m, MlirOperation f, int64_t d, bool evalStep,
                     MlirLogicalResult *status) {
  /* one function per device: symbol names are unique and the exact-name rule is one to
   * one (`device_0x` or `device_00` is no device's plan) */
  Device *dev = &m->dev[d];
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  dev->fn = f;
  if (mlirBlockIsNull(body)) return; /* a declaration: no ops, an empty plan */
  size_t cap = 64;
  dev->ops = malloc(cap * sizeof *dev->ops);
  bool normed = evalStep; /* the norm barrier: the function op itself stands for it */
  for (MlirOperation op = mlirBlockGetFirstOperation(body);; op = mlirOperationGetNextInBlock(op)) {
    bool end = mlirOperationIsNull(op) || piperOpIs(op, "func.return");
    if (!normed && (end || passIs(op, "UPD"))) {
      normed = true;
      pushOp(dev, &cap, f);
    }
    if (end) break;
    if (!piperOpInDialect(op, "comm")) continue; /* compute never blocks */
    if (evalStep && !piperOpIs(op, "comm.wait") && !passIs(op, "F")) continue;
    pushOp(dev, &cap, op);
    if (isCollective(op) && !numberGroup(m, op, d, status)) break;
  }
}

/* Reads every plan function of the module into the machine; failure after an error at a
 * malformed role, which ends the proof at once. Other errors go to `*status`. */
static MlirLogicalResult readPlans(Machine *m, bool evalStep, MlirLogicalResult *status) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(m->module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    MlirAttribute sym = mlirOperationGetAttributeByName(f, piperStr("sym_name"));
    if (!piperOpIs(f, "func.func") || mlirAttributeIsNull(sym)) continue;
    int64_t d = m->P > 0 ? piperPlanFunctionNumber(mlirStringAttrGetValue(sym), "role_")
                         : piperDeviceFunctionNumber(mlirStringAttrGetValue(sym));
    if (d < 0 || d >= m->N) continue;
    if (m->P > 0 && !readRole(m, f, d)) return mlirLogicalResultFailure();
    readPlan(m, f, d, evalStep, status);
  }
  return mlirLogicalResultSuccess();
}

/* Per group: how many plans of the machine meet at its collectives (per role: its roles). */
static void countGroupMembers(Machine *m, MlirLogicalResult *status) {
  m->groupMembers = calloc(m->nGroups ? m->nGroups : 1, sizeof *m->groupMembers);
  for (int64_t gid = 0; gid < m->nGroups && m->groupMembers; ++gid) {
    MlirAttribute g = mlirOperationGetAttributeByName(m->groupOp[gid], piperStr("group"));
    m->groupMembers[gid] = m->P > 0 ? roleGroupMembers(m->groupOp[gid], m->roleRange, m->P)
                                    : piperListLen(g);
    if (m->groupMembers[gid] < 0) {
      mlirEmitError(mlirOperationGetLocation(m->groupOp[gid]),
                    "piper-verify-plan: in a plan per role, a collective's group must be whole "
                    "roles, or with group_stride S replica 0 of roles of stride S (a group "
                    "family), in ascending order");
      *status = mlirLogicalResultFailure();
    }
  }
  if (!m->groupMembers) *status = mlirLogicalResultFailure();
}

/* What one op of a plan did when the machine ran it. */
typedef enum {
  STEP_DONE,    /* went through: the device moves on */
  STEP_BLOCKED, /* waits for another device */
  STEP_FAILED,  /* a mismatch, reported */
} StepResult;

/* The world's gradient-norm all-reduce: device d waits until every device is there. */
static StepResult runNormBarrier(Machine *m, int64_t d) {
  Device *dev = &m->dev[d];
  if (dev->arrivedAt != (int64_t)dev->pc) {
    dev->arrivedAt = (int64_t)dev->pc;
    m->normArrived++;
  }
  return m->normArrived < m->N ? STEP_BLOCKED : STEP_DONE;
}

/* comm.send: never blocks; recorded for its recv. */
static StepResult runSend(Machine *m, int64_t d, MlirOperation op) {
  if (m->nSent == m->capSent) m->sent = realloc(m->sent, (m->capSent *= 2) * sizeof *m->sent);
  int64_t to = piperGetIntAttr(op, "peer", -1);
  m->sent[m->nSent++] = (Sent){piperGetIntAttr(op, "tag", -1), d,
                               m->P > 0 ? roleOfDevice(m->roleStart, m->P, to) : to,
                               numelOf(op)};
  return STEP_DONE;
}

/* comm.recv, comm.recv_into: blocks until its peer has sent the same tag, of the same size. */
static StepResult runRecv(Machine *m, int64_t d, MlirOperation op) {
  int64_t tag = piperGetIntAttr(op, "tag", -1), peer = piperGetIntAttr(op, "peer", -1);
  if (m->P > 0) peer = roleOfDevice(m->roleStart, m->P, peer);
  size_t k = 0; /* fifo: the pair's earliest send still unreceived, whatever its tag */
  while (k < m->nSent && !((m->fifo || m->sent[k].tag == tag) && m->sent[k].from == peer &&
                           m->sent[k].to == d))
    ++k;
  if (k == m->nSent) return STEP_BLOCKED; /* the send has not been issued yet */
  if (m->sent[k].tag != tag) {
    piperEmitErrorf(mlirOperationGetLocation(op), "piper-verify-plan: device %lld receives "
                    "tag %lld from device %lld first, but device %lld sends it tag %lld "
                    "before that: without tags (NCCL) the pair's messages arrive in send "
                    "order; run --piper-order-p2p (piper-compile does for --target cuda)",
                    (long long)d, (long long)tag, (long long)peer, (long long)peer,
                    (long long)m->sent[k].tag);
    MlirLocation last = {NULL};
    noteOrder(m->dev, peer, &last);
    noteOrder(m->dev, d, &last);
    return STEP_FAILED;
  }
  if (m->sent[k].numel != numelOf(op)) {
    char msg[256];
    snprintf(msg, sizeof msg, "piper-verify-plan: device %lld receives %lld elements "
                              "with tag %lld but device %lld sends %lld",
             (long long)d, (long long)numelOf(op), (long long)tag, (long long)peer,
             (long long)m->sent[k].numel);
    mlirEmitError(mlirOperationGetLocation(op), msg);
    MlirLocation last = {NULL};
    noteOrder(m->dev, peer, &last);
    noteOrder(m->dev, d, &last);
    return STEP_FAILED;
  }
  m->sent[k].to = -1; /* consumed */
  return STEP_DONE;
}

/* A collective: blocks until every member of its group has reached the same one, its k-th
 * on the group; a member that reaches another kind or size there is a mismatch. */
static StepResult runCollective(Machine *m, int64_t d, MlirOperation op) {
  Device *dev = &m->dev[d];
  intptr_t gid = 0;
  piperPtrMapGet(&m->groupId, groupKey(op, m->P).ptr, &gid); /* numbered by readPlan */
  /* Arrival counting, O(1) per device: every member must reach the same collective, its
   * k-th on this group. Members are at most one collective apart (none passes k + 1
   * before all passed k), so two slots, k mod 2, hold the arrivals. */
  intptr_t seq = 0;
  piperPtrMapGet(&m->collSeq, seqKey(d, m->nGroups, gid), &seq);
  Arrivals *a = &m->arrivals[gid][seq & 1];
  if (dev->arrivedAt != (int64_t)dev->pc) {
    dev->arrivedAt = (int64_t)dev->pc;
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
                     "piper-verify-plan: device %lld reaches this one there", (long long)d);
      MlirLocation last = {NULL};
      noteOrder(m->dev, a->firstDevice, &last);
      noteOrder(m->dev, d, &last);
      return STEP_FAILED;
    }
    a->count++;
  }
  /* wait for the others (per role: replica 0 of each role stands for the role) */
  if (a->count < m->groupMembers[gid]) return STEP_BLOCKED;
  piperPtrMapPut(&m->collSeq, seqKey(d, m->nGroups, gid), seq + 1);
  if (++a->passed == a->count) a->count = a->passed = 0; /* the slot is free again */
  return STEP_DONE;
}

/* The op at device d's pc, run once. */
static StepResult runOp(Machine *m, int64_t d) {
  MlirOperation op = m->dev[d].ops[m->dev[d].pc];
  if (op.ptr == m->dev[d].fn.ptr) return runNormBarrier(m, d);
  if (piperOpIs(op, "comm.send")) return runSend(m, d, op);
  if (piperOpIs(op, "comm.recv") || piperOpIs(op, "comm.recv_into")) return runRecv(m, d, op);
  if (isCollective(op)) return runCollective(m, d, op);
  return STEP_DONE; /* comm.wait: its op has been issued */
}

/* Runs every device as far as it goes, round after round, until none moves. */
static MlirLogicalResult runMachine(Machine *m) {
  for (bool progress = true; progress;) {
    progress = false;
    for (int64_t d = 0; d < m->N; ++d) {
      while (m->dev[d].pc < m->dev[d].n) {
        StepResult r = runOp(m, d);
        if (r == STEP_FAILED) return mlirLogicalResultFailure();
        if (r == STEP_BLOCKED) break;
        m->dev[d].pc++;
        progress = true;
      }
    }
  }
  return mlirLogicalResultSuccess();
}

/* After the run: an error at each device that did not finish (a deadlock), else at each
 * send no recv took. Failure if there was one. */
static MlirLogicalResult reportUnfinished(Machine *m) {
  int blocked = 0;
  for (int64_t d = 0; d < m->N; ++d)
    if (m->dev[d].pc < m->dev[d].n) {
      char what[160], node[160] = "", msg[400];
      MlirOperation at = m->dev[d].ops[m->dev[d].pc];
      if (at.ptr == m->dev[d].fn.ptr)
        snprintf(what, sizeof what, "the gradient-norm all-reduce before its first update");
      else describe(at, what, sizeof what);
      if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(at, piperStr("tags")))) {
        char label[140];
        piperNodeLabel(at, label, sizeof label);
        snprintf(node, sizeof node, " of node %s", label);
      }
      snprintf(msg, sizeof msg, "piper-verify-plan: the plan deadlocks: device %lld waits "
                                "forever at %s%s", (long long)d, what, node);
      mlirEmitError(mlirOperationGetLocation(at), msg);
      MlirLocation last = {NULL};
      noteOrder(m->dev, d, &last);
      blocked++;
    }
  for (size_t k = 0; k < m->nSent && !blocked; ++k)
    if (m->sent[k].to >= 0) {
      char msg[200];
      snprintf(msg, sizeof msg, "piper-verify-plan: device %lld sends tag %lld to device %lld, "
                                "which never receives it", (long long)m->sent[k].from,
               (long long)m->sent[k].tag, (long long)m->sent[k].to);
      mlirEmitError(mlirOperationGetLocation(m->module), msg);
      blocked++;
    }
  return blocked ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

/* One proof: the training step (evalStep false, with the gradient-norm barrier) or the
 * forward-only evaluation step. */
static MlirLogicalResult verifyStep(MlirOperation module, bool evalStep, bool fifo) {
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
  if (N > PIPER_MAX_DEVICES) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-verify-plan: piper.devices = %lld is more than the %d devices a plan "
                    "may have", (long long)N, PIPER_MAX_DEVICES);
    return mlirLogicalResultFailure();
  }
  Machine m = {.module = module, .P = P, .N = N, .capSent = 256, .fifo = fifo};
  m.dev = calloc(N, sizeof *m.dev);
  m.roleRange = P > 0 ? calloc(3 * P, sizeof *m.roleRange) : NULL;
  m.roleStart = P > 0 ? calloc(P, sizeof *m.roleStart) : NULL;
  /* Communicator groups, id = index: a plan for thousands of devices has thousands. Group
   * attributes are uniqued by MLIR, so the pointer is the lookup key. */
  piperPtrMapInit(&m.groupId, 64);
  piperPtrMapInit(&m.collSeq, 64);
  MlirLogicalResult status = mlirLogicalResultSuccess();
  if (mlirLogicalResultIsFailure(readPlans(&m, evalStep, &status))) {
    machineFree(&m);
    return mlirLogicalResultFailure();
  }
  countGroupMembers(&m, &status);
  for (int64_t d = 0; d < N; ++d) m.dev[d].arrivedAt = -1;
  m.arrivals = calloc(m.nGroups ? m.nGroups : 1, sizeof *m.arrivals);
  m.sent = malloc(m.capSent * sizeof *m.sent);
  if (mlirLogicalResultIsSuccess(status)) status = runMachine(&m);
  if (mlirLogicalResultIsSuccess(status)) status = reportUnfinished(&m);
  machineFree(&m);
  return status;
}

static MlirLogicalResult runVerifyPlan(MlirOperation module, const char *arg) {
  MlirAttribute order = mlirOperationGetAttributeByName(module, piperStr("piper.p2p_order"));
  bool fifo = !mlirAttributeIsNull(order) && mlirAttributeIsAString(order) &&
              mlirStringRefEqual(mlirStringAttrGetValue(order), piperStr("fifo"));
  if (mlirLogicalResultIsFailure(verifyStep(module, false, fifo)))
    return mlirLogicalResultFailure();
  if (mlirLogicalResultIsSuccess(verifyStep(module, true, fifo))) return mlirLogicalResultSuccess();
  mlirEmitError(mlirOperationGetLocation(module),
                "piper-verify-plan: (the errors above are of the evaluation step: the forward "
                "ops and forward transfers of each plan, which --eval-every runs)");
  return mlirLogicalResultFailure();
}

MlirPass piperCreateVerifyPlanPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-verify-plan", "no-hang proof", runVerifyPlan, arg);
}
