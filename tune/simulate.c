/* One training step of an extracted plan, simulated on the plan itself.
 *
 * Units are the plan's functions: device_<d> (one per device) or role_<p> (one per role, its
 * replica 0 standing for all R replicas, as verify-plan proves them: every replica of a role
 * runs the same ops at the same times, coupled only by whole-role collectives). Each unit runs
 * its ops in order on one host thread:
 *   tdag op        the host is busy for the kernel's time (profile: f(op kind, work))
 *   comm op        issued at the unit's time; it becomes a transfer on its stream once every
 *                  party has issued it: a send and the recv with the same tag between the two
 *                  units, or every unit of a collective's group (collectives are issued in the
 *                  same order by all members, which verify-plan proves); it starts when every
 *                  party has issued it and each party's stream is free (a stream is an ordered
 *                  queue), and takes alpha + beta * bytes for its kind and group size
 *   comm.wait      the host blocks until each waited transfer has ended
 * The runtime adds two world synchronisations the plan does not show: the gradient-norm
 * all-reduce right before the first update op (after every incoming transfer issued so far
 * has arrived: lowering moves those waits up), and the loss all-reduce that ends the step.
 * The step time is the last unit's end. A unit's idle time is split into exposed
 * communication (blocked while a transfer it waits for is moving) and bubble (blocked while a
 * peer has not yet issued its side, or done early and waiting for the step's end). */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/checked.h"
#include "piper/piper.h"
#include "piper/ptrmap.h"
#include "tune/tune.h"

/* One transfer: a send/recv pair or one collective instance. */
typedef struct {
  TuneCommKind kind;
  double bytes;     /* the op's buffer */
  int groupSize;    /* devices taking part (2 for a pair) */
  int needed, got;  /* parties (units) that must issue it, and have */
  double issuedAt;  /* latest issue time so far */
  int party[64];    /* units that issued it (bounded by needed <= 64 or tracked as count) */
  int stream[64];   /* each party's stream index */
  int nParty;       /* recorded parties (at most 64; more are not stream-modelled) */
  bool resolved;
  double start, end;
  const void *key;  /* group attribute, or NULL for a pair */
  int from, to;     /* a pair's units; tag below */
  int64_t tag;
  int seq;          /* a collective: its index in the group's issue order */
} Xfer;

typedef struct {
  const void *name; /* stream attribute (uniqued), NULL = unnamed */
  double freeAt;
} Stream;

typedef struct {
  MlirOperation fn;
  MlirOperation *ops;   /* body in order */
  size_t nOps, pc;
  int64_t replicas;     /* devices this unit stands for (R of a role, else 1) */
  double t;             /* host time */
  double busy;          /* kernel time */
  double exposed;       /* blocked on moving transfers */
  Stream *streams;
  size_t nStreams, capStreams;
  bool normDone, finished;        /* past the gradient-norm sync; past the step's end */
  bool normJoined, lossJoined;    /* issued its side of the runtime's two world syncs */
  size_t normAt;        /* index of the first UPD op (nOps if none) */
  int *pending;         /* incoming transfers issued (for the norm point) */
  size_t nPending, capPending;
  long openSpan;        /* trace: the compute span still open (-1: none) */
  long stepSpan;        /* trace: the unit's "step" span (the runtime's, around piper_step) */
  int syncX;            /* a transfer the host waits for where it issued it (-1: none) */
  bool gradSqDone;      /* ran the gradient norm's sums of squares */
} Unit;

typedef struct {
  Xfer *x;
  size_t n, cap;
  /* collective instances per group: key and count issued per unit */
  const void **groupKeys;
  int **groupSeq; /* [group][unit] how many issued */
  size_t nGroups, capGroups;
  int nUnits;
  int normX, lossX; /* the runtime's gradient-norm and loss all-reduces (-1: not yet) */
  TuneTrace *trace; /* NULL: no trace recorded */
  PiperPtrMap tokenEvent; /* trace: a transfer's token -> its event on the issuing unit */
} World;

static int streamOf(Unit *u, MlirOperation op) {
  MlirAttribute s = mlirOperationIsNull(op)
                        ? (MlirAttribute){NULL} /* the runtime's own syncs: no stream */
                        : mlirOperationGetAttributeByName(op, piperStr("stream"));
  const void *name = mlirAttributeIsNull(s) ? NULL : s.ptr;
  for (size_t i = 0; i < u->nStreams; ++i)
    if (u->streams[i].name == name) return (int)i;
  if (!piperGrow((void **)&u->streams, &u->capStreams, u->nStreams + 1, sizeof *u->streams))
    return 0;
  u->streams[u->nStreams] = (Stream){name, 0};
  return (int)u->nStreams++;
}

static int newXfer(World *w) {
  if (!piperGrow((void **)&w->x, &w->cap, w->n + 1, sizeof *w->x)) return -1;
  memset(&w->x[w->n], 0, sizeof w->x[w->n]);
  return (int)w->n++;
}

/* Device id -> unit: a device plan's own number, or the role whose range holds it. */
typedef struct {
  int64_t *start, *stride, *count; /* per unit; count 1 stride 1 for device plans */
  int n;
} UnitMap;

static int unitOfDevice(const UnitMap *m, int64_t d) {
  for (int u = 0; u < m->n; ++u) {
    int64_t off = d - m->start[u];
    if (off >= 0 && off % m->stride[u] == 0 && off / m->stride[u] < m->count[u]) return u;
  }
  return -1;
}

static double valueBytes(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (!mlirTypeIsARankedTensor(t)) return 0;
  return (double)piperTensorNumel(t) * (double)piperTensorElementBytes(t);
}

static void resolve(World *w, Unit *units, Xfer *x, const TuneProfile *p) {
  double start = x->issuedAt;
  for (int i = 0; i < x->nParty; ++i) {
    double f = units[x->party[i]].streams[x->stream[i]].freeAt;
    start = f > start ? f : start;
  }
  x->start = start;
  x->end = start + tuneCommNs(p, x->kind, x->groupSize, x->bytes);
  for (int i = 0; i < x->nParty; ++i) units[x->party[i]].streams[x->stream[i]].freeAt = x->end;
  x->resolved = true;
  (void)w;
}

static void addParty(Xfer *x, int unit, int stream, double t) {
  if (x->nParty < 64) x->party[x->nParty] = unit, x->stream[x->nParty++] = stream;
  x->issuedAt = t > x->issuedAt ? t : x->issuedAt;
  x->got++;
}

/* The pair transfer for a send or recv between units from -> to with `tag`: the first such
 * pending one not yet joined by this side, or a new one. */
static int pairXfer(World *w, int from, int to, int64_t tag, bool sender) {
  for (size_t i = 0; i < w->n; ++i) {
    Xfer *x = &w->x[i];
    if (x->key || x->kind != TUNE_P2P || x->resolved || x->from != from || x->to != to ||
        x->tag != tag)
      continue;
    /* seq records which sides joined: bit 1 the sender, bit 2 the receiver */
    bool senderIn, recvIn;
    senderIn = x->seq & 1, recvIn = x->seq & 2;
    if ((sender && !senderIn) || (!sender && !recvIn)) return (int)i;
  }
  int i = newXfer(w);
  if (i < 0) return -1;
  Xfer *x = &w->x[i];
  x->kind = TUNE_P2P, x->needed = from == to ? 1 : 2, x->groupSize = 2;
  x->from = from, x->to = to, x->tag = tag;
  return i;
}

static int groupIndex(World *w, const void *key) {
  for (size_t g = 0; g < w->nGroups; ++g)
    if (w->groupKeys[g] == key) return (int)g;
  size_t cap = w->capGroups;
  if (!piperGrow((void **)&w->groupKeys, &cap, w->nGroups + 1, sizeof *w->groupKeys) ||
      !piperGrow((void **)&w->groupSeq, &w->capGroups, w->nGroups + 1, sizeof *w->groupSeq))
    return -1;
  w->groupKeys[w->nGroups] = key;
  w->groupSeq[w->nGroups] = calloc((size_t)w->nUnits, sizeof(int));
  return (int)w->nGroups++;
}

static TuneCommKind kindOf(MlirOperation op) {
  return piperOpIs(op, "comm.all_reduce") ? TUNE_ALL_REDUCE
         : piperOpIs(op, "comm.reduce_scatter") ? TUNE_REDUCE_SCATTER
         : piperOpIs(op, "comm.all_gather") ? TUNE_ALL_GATHER
         : piperOpIs(op, "comm.all_to_all") ? TUNE_ALL_TO_ALL
                                            : TUNE_P2P;
}

/* A collective instance for unit u: the group's next instance in u's issue order (every
 * member issues a group's collectives in the same order: verify-plan proves it). */
static int collectiveXfer(World *w, const UnitMap *map, int u, MlirOperation op) {
  MlirAttribute group = mlirOperationGetAttributeByName(op, piperStr("group"));
  const void *key = group.ptr;
  int g = groupIndex(w, key);
  if (g < 0) return -1;
  int seq = w->groupSeq[g][u]++;
  for (size_t i = 0; i < w->n; ++i)
    if (w->x[i].key == key && w->x[i].seq == seq) return (int)i;
  int i = newXfer(w);
  if (i < 0) return -1;
  Xfer *x = &w->x[i];
  x->key = key, x->seq = seq;
  x->kind = kindOf(op);
  intptr_t n = piperDeviceListLen(group);
  if (piperDeviceListIsRange(group, NULL)) {
    /* a range is a role plan's (lists of more than 64): its group is whole roles, or a family
     * listing replica 0 of each (verify-plan proves it), so a unit takes part iff its replica
     * 0 does: O(units), not O(members) */
    for (int v = 0; v < map->n; ++v) x->needed += piperDeviceListFind(group, map->start[v]) >= 0;
  } else {
    bool *seen = calloc((size_t)map->n, sizeof *seen);
    for (intptr_t k = 0; seen && k < n; ++k) {
      int v = unitOfDevice(map, piperDeviceListAt(group, k));
      if (v >= 0 && !seen[v]) seen[v] = true, x->needed++;
    }
    free(seen);
  }
  if (x->needed == 0) x->needed = 1;
  x->groupSize = (int)n;
  x->bytes = valueBytes(mlirOperationGetOperand(op, 0));
  if (x->kind == TUNE_ALL_GATHER) /* the operand is the whole tensor; the buffer is R shards */
    x->bytes = valueBytes(mlirOperationGetResult(op, 0));
  return i;
}

static bool isComm(MlirOperation op) { return piperOpInDialect(op, "comm"); }

static bool opPassIs(MlirOperation op, const char *pass) {
  char buf[8];
  return piperGetStringAttr(op, "pass", buf, sizeof buf) && !strcmp(buf, pass);
}

/* Waits (blocking the host) until xfer i ends; false if it has not resolved yet. */
static bool waitFor(World *w, Unit *u, int i) {
  Xfer *x = &w->x[i];
  if (!x->resolved) return false;
  if (x->end > u->t) {
    double moving = x->start > u->t ? x->start : u->t;
    u->exposed += x->end - moving;
    u->t = x->end;
  }
  return true;
}

/* ---- the trace (tuneSimulateTraced) ---- */

static long pushEvent(TuneTrace *t, TuneEvent e) {
  if (!piperGrow((void **)&t->ev, &t->cap, t->n + 1, sizeof *t->ev)) return -1;
  t->ev[t->n] = e;
  return (long)t->n++;
}

/* The op's stream as the lowering numbers it (lwStreamOf): "compute" (0) when it names none,
 * else by first appearance; -1 when out of memory. */
static int traceStream(TuneTrace *t, MlirOperation op) {
  char name[64] = "compute";
  if (!mlirOperationIsNull(op)) piperGetStringAttr(op, "stream", name, sizeof name);
  for (size_t i = 0; i < t->nStreams; ++i)
    if (!strcmp(t->streams[i], name)) return (int)i;
  if (!piperGrow((void **)&t->streams, &t->capStreams, t->nStreams + 1, sizeof *t->streams))
    return -1;
  t->streams[t->nStreams] = strdup(name);
  return t->streams[t->nStreams] ? (int)t->nStreams++ : -1;
}

/* The op's group as the lowering numbers it (lwGroupOf): by first appearance of the group, a
 * role plan's group family (group_stride S) apart from the plain group. */
static int traceGroup(TuneTrace *t, MlirOperation op, bool roles) {
  const void *key = mlirOperationGetAttributeByName(op, piperStr("group")).ptr;
  int64_t stride = roles ? piperGetIntAttr(op, "group_stride", 0) : 0;
  for (size_t g = 0; g < t->nGroups; ++g)
    if (t->groups[g] == key && t->groupStride[g] == stride) return (int)g;
  if (!piperGrow((void **)&t->groups, &t->capGroups, t->nGroups + 1, sizeof *t->groups) ||
      !piperGrow((void **)&t->groupStride, &t->capGroupStride, t->nGroups + 1,
                 sizeof *t->groupStride))
    return -1;
  t->groups[t->nGroups] = key, t->groupStride[t->nGroups] = stride;
  return (int)t->nGroups++;
}

/* Numbers streams and groups in the lowering's order: the plans in order, their ops in order. */
static void traceNumber(TuneTrace *t, const Unit *units, int n, bool roles) {
  traceStream(t, (MlirOperation){NULL});
  for (int u = 0; u < n; ++u)
    for (size_t i = 0; i < units[u].nOps; ++i) {
      MlirOperation op = units[u].ops[i];
      if (!piperOpInDialect(op, "comm") || piperOpIs(op, "comm.wait")) continue;
      traceStream(t, op);
      if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("group"))))
        traceGroup(t, op, roles);
    }
}

/* Ends the unit's open compute span at its current time (the runtime ends a span when the next
 * node's op starts, before a wait, and at the step's end). */
static void traceClose(World *w, Unit *u) {
  if (!w->trace || u->openSpan < 0) return;
  w->trace->ev[u->openSpan].end = u->t;
  u->openSpan = -1;
}

/* A kernel of `ns` starting at u->t: extends the open span of its node or opens one. */
static void traceCompute(World *w, Unit *u, int ui, MlirOperation op) {
  if (!w->trace) return;
  TuneEvent e = {.unit = ui, .start = u->t, .end = u->t, .wait0 = -1, .wait1 = -1, .xfer = -1};
  piperNodeLabel(op, e.name, sizeof e.name);
  if (u->openSpan >= 0 && !strcmp(w->trace->ev[u->openSpan].name, e.name)) return;
  traceClose(w, u);
  u->openSpan = pushEvent(w->trace, e);
}

/* The issuing side of transfer `x` by unit ui's op: its span starts now; its end is the
 * transfer's, filled in when the simulation is over. */
static void traceIssue(World *w, Unit *u, int ui, MlirOperation op, int x) {
  if (!w->trace) return;
  bool send = piperOpIs(op, "comm.send");
  bool recv = piperOpIs(op, "comm.recv") || piperOpIs(op, "comm.recv_into");
  TuneEvent e = {.unit = ui, .comm = true, .start = u->t, .wait0 = -1, .wait1 = -1, .xfer = x,
                 .bytes = w->x[x].bytes, .peer = -1, .group = -1};
  e.stream = traceStream(w->trace, op);
  if (e.stream < 0) e.stream = 0;
  if (send || recv) {
    e.kind = send ? 0 : 1;
    e.peer = piperGetIntAttr(op, "peer", -1);
    e.peerStride = piperGetIntAttr(op, "peer_stride", 0);
    e.bytes = piperOpIs(op, "comm.recv") ? valueBytes(mlirOperationGetResult(op, 0))
                                         : valueBytes(mlirOperationGetOperand(op, 0));
  } else {
    e.kind = 2 + (int)kindOf(op) - (int)TUNE_ALL_REDUCE;
    e.group = traceGroup(w->trace, op, w->trace->roles);
  }
  long i = pushEvent(w->trace, e);
  intptr_t nr = mlirOperationGetNumResults(op);
  if (i >= 0 && nr > 0) piperPtrMapPut(&w->tokenEvent, mlirOperationGetResult(op, nr - 1).ptr, i);
}

/* Unit ui waits for the transfer behind `token` from `from` to u->t. */
static void traceWaited(World *w, Unit *u, MlirValue token, double from) {
  intptr_t i;
  if (!w->trace || !piperPtrMapGet(&w->tokenEvent, token.ptr, &i)) return;
  TuneEvent *e = &w->trace->ev[i];
  if (e->wait1 >= 0) return; /* waited already: the unit re-runs a wait it blocked in */
  e->wait0 = from, e->wait1 = u->t;
}

/* The runtime waits for an all-gather into a whole parameter (ZeRO-1/2, after its sharded
 * update) right where it issues it, then copies the result back into the parameter
 * (lowering/lower_comm.c); only a ZeRO-3 shard's all-gather runs behind later ops. */
static bool blocksHost(MlirOperation op) {
  if (!piperOpIs(op, "comm.all_gather")) return false;
  MlirValue v = mlirOperationGetOperand(op, 0);
  bool fromShard = mlirValueIsAOpResult(v) && piperOpIs(mlirOpResultGetOwner(v), "tdag.param") &&
                   !mlirAttributeIsNull(mlirOperationGetAttributeByName(mlirOpResultGetOwner(v),
                                                                        piperStr("shards")));
  return !fromShard;
}

/* Unit ui issues the transfer of comm op `op` (not a wait): its side of a pair or of its
 * group's next collective, started once every party has issued it. Returns the transfer, -1
 * when out of memory. */
static int issue(World *w, Unit *units, int ui, const UnitMap *map, PiperPtrMap *tokenXfer,
                 const TuneProfile *p, MlirOperation op) {
  Unit *u = &units[ui];
  int x;
  bool send = piperOpIs(op, "comm.send");
  bool recv = piperOpIs(op, "comm.recv") || piperOpIs(op, "comm.recv_into");
  if (send || recv) {
    int other = unitOfDevice(map, piperGetIntAttr(op, "peer", -1));
    if (other < 0) other = ui;
    int64_t tag = piperGetIntAttr(op, "tag", 0);
    x = pairXfer(w, send ? ui : other, send ? other : ui, tag, send);
    if (x < 0) return -1;
    Xfer *X = &w->x[x];
    X->seq |= send ? 1 : 2;
    if (send) X->bytes = valueBytes(mlirOperationGetOperand(op, 0));
    addParty(X, ui, streamOf(u, op), u->t);
    if (X->needed == 1) X->got = 1;
  } else {
    x = collectiveXfer(w, map, ui, op);
    if (x < 0) return -1;
    if (piperOpIs(op, "comm.all_gather")) { /* the runtime copies this replica's shard in */
      double ns = tuneCopyNs(p, (double)piperTensorNumel(mlirValueGetType(
                                    mlirOperationGetResult(op, 0))) / w->x[x].groupSize);
      u->t += ns, u->busy += ns;
    }
    addParty(&w->x[x], ui, streamOf(u, op), u->t);
  }
  Xfer *X = &w->x[x];
  if (!X->resolved && X->got >= X->needed) resolve(w, units, X, p);
  traceIssue(w, u, ui, op, x);
  intptr_t nr = mlirOperationGetNumResults(op);
  if (nr > 0) piperPtrMapPut(tokenXfer, mlirOperationGetResult(op, nr - 1).ptr, x);
  if (!send && !opPassIs(op, "UPD") &&
      piperGrow((void **)&u->pending, &u->capPending, u->nPending + 1, sizeof *u->pending))
    u->pending[u->nPending++] = x;
  return x;
}

/* The gradient norm's kernels the lowering puts before its sync: a sum of squares over each
 * updated gradient (its ZeRO shard), then the world all-reduce (modelled in advance). */
static double gradSqNs(const Unit *u, const TuneProfile *p) {
  double ns = 0;
  for (size_t i = 0; i < u->nOps; ++i) {
    if (!piperOpIs(u->ops[i], "tdag.adamw")) continue;
    double n = (double)piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(u->ops[i], 0)));
    int64_t shards = piperGetIntAttr(u->ops[i], "shards", 1);
    ns += tuneElementwiseNs(p, n / (double)(shards > 1 ? shards : 1));
  }
  return ns;
}

/* Runs unit `ui` until it blocks or ends; returns whether it advanced. */
static bool advance(World *w, Unit *units, int ui, const UnitMap *map, PiperPtrMap *tokenXfer,
                    const TuneProfile *p, int64_t devices) {
  Unit *u = &units[ui];
  bool moved = false;
  while (!u->finished) {
    bool atNorm = !u->normDone && u->pc == u->normAt, atEnd = !atNorm && u->pc == u->nOps;
    if (atNorm || atEnd) {
      /* the gradient norm waits for every incoming transfer issued so far */
      for (size_t k = 0; atNorm && k < u->nPending; ++k)
        if (!waitFor(w, u, u->pending[k])) return moved;
      if (atNorm && !u->gradSqDone) {
        double ns = gradSqNs(u, p);
        u->t += ns, u->busy += ns, u->gradSqDone = true;
      }
      if (atEnd) traceClose(w, u);
      if (atEnd && w->trace && u->stepSpan >= 0) w->trace->ev[u->stepSpan].end = u->t;
      int *slot = atNorm ? &w->normX : &w->lossX;
      if (*slot < 0) {
        *slot = newXfer(w);
        if (*slot < 0) return moved;
        Xfer *X = &w->x[*slot];
        X->kind = TUNE_ALL_REDUCE, X->bytes = 8, X->groupSize = (int)devices, X->needed = w->nUnits;
      }
      Xfer *X = &w->x[*slot];
      bool *joined = atNorm ? &u->normJoined : &u->lossJoined;
      if (!*joined) {
        *joined = true;
        addParty(X, ui, streamOf(u, (MlirOperation){NULL}), u->t);
        if (X->got == X->needed) resolve(w, units, X, p);
      }
      if (!waitFor(w, u, *slot)) return moved;
      if (atNorm) u->normDone = true;
      else u->finished = true;
      moved = true;
      continue;
    }
    MlirOperation op = u->ops[u->pc];
    if (piperOpIs(op, "comm.wait")) {
      traceClose(w, u);
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
        intptr_t x;
        double from = u->t;
        MlirValue token = mlirOperationGetOperand(op, k);
        if (!piperPtrMapGet(tokenXfer, token.ptr, &x)) continue;
        if (!waitFor(w, u, (int)x)) return moved;
        traceWaited(w, u, token, from);
      }
    } else if (isComm(op)) {
      int x = u->syncX;
      if (x < 0) x = issue(w, units, ui, map, tokenXfer, p, op), moved = true;
      if (x < 0) return moved;
      if (u->syncX >= 0 || blocksHost(op)) { /* waited for right away (see blocksHost) */
        u->syncX = x;
        double from = u->t;
        if (!waitFor(w, u, x)) return moved;
        intptr_t nr = mlirOperationGetNumResults(op);
        traceWaited(w, u, mlirOperationGetResult(op, nr - 1), from);
        double ns = tuneCopyNs(p, (double)piperTensorNumel(mlirValueGetType(
                                      mlirOperationGetOperand(op, 0))));
        u->t += ns, u->busy += ns; /* the rebuilt parameter copied back */
        u->syncX = -1;
      }
    } else {
      double ns = tuneKernelNs(p, op);
      const PiperOpFacts *f = piperOpFacts(op);
      if (!f || !f->declaresTensor) traceCompute(w, u, ui, op); /* the lowering's spans */
      u->t += ns;
      u->busy += ns;
    }
    u->pc++;
    moved = true;
  }
  return moved;
}

/* The plan functions of `module`: role_<p> or device_<d>, by number. */
static int collectUnits(MlirOperation module, Unit **out, UnitMap *map) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  int64_t roles = piperGetIntAttr(module, "piper.roles", 0);
  int n = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (piperOpIs(f, "func.func")) ++n;
  Unit *units = calloc((size_t)(n ? n : 1), sizeof *units);
  for (int u = 0; units && u < n; ++u) units[u].openSpan = -1, units[u].syncX = -1;
  map->start = calloc((size_t)(n ? n : 1), sizeof(int64_t));
  map->stride = calloc((size_t)(n ? n : 1), sizeof(int64_t));
  map->count = calloc((size_t)(n ? n : 1), sizeof(int64_t));
  int got = 0;
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!piperOpIs(f, "func.func")) continue;
    MlirStringRef name = mlirStringAttrGetValue(
        mlirOperationGetAttributeByName(f, piperStr("sym_name")));
    int64_t k = roles > 0 ? piperPlanFunctionNumber(name, "role_")
                          : piperDeviceFunctionNumber(name);
    if (n == 1 && k < 0) k = 0; /* a single-device training graph */
    if (k < 0 || k >= n) continue;
    Unit *u = &units[k];
    u->fn = f;
    map->start[k] = k, map->stride[k] = 1, map->count[k] = 1;
    MlirAttribute range = mlirOperationGetAttributeByName(f, piperStr("piper.role"));
    if (roles > 0 && !mlirAttributeIsNull(range) && mlirArrayAttrGetNumElements(range) == 3) {
      map->start[k] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, 0));
      map->stride[k] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, 1));
      map->count[k] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, 2));
      if (map->stride[k] < 1) map->stride[k] = 1;
    }
    u->replicas = map->count[k];
    size_t cap = 0;
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    u->normAt = SIZE_MAX;
    for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o)) {
      if (!piperOpInDialect(o, "tdag") && !isComm(o)) continue;
      if (!piperGrow((void **)&u->ops, &cap, u->nOps + 1, sizeof *u->ops)) break;
      if (u->normAt == SIZE_MAX && opPassIs(o, "UPD")) u->normAt = u->nOps;
      u->ops[u->nOps++] = o;
    }
    if (u->normAt == SIZE_MAX) u->normAt = u->nOps;
    ++got;
  }
  map->n = n;
  *out = units;
  return got == n ? n : -1;
}

/* The step's figures from the finished units; r.error names a unit that did not finish. */
static void summarize(const Unit *units, int n, TuneSimResult *r) {
  double step = 0, busy = 0, exposed = 0, weight = 0;
  for (int u = 0; u < n; ++u) {
    if (!units[u].finished && !r->error[0]) {
      MlirOperation at = units[u].pc < units[u].nOps ? units[u].ops[units[u].pc]
                                                     : (MlirOperation){NULL};
      char label[96] = "the step's end";
      if (!mlirOperationIsNull(at)) piperNodeLabel(at, label, sizeof label);
      snprintf(r->error, sizeof r->error, "unit %d is stuck at op %zu (%s)", u, units[u].pc,
               label);
    }
    step = units[u].t > step ? units[u].t : step;
  }
  for (int u = 0; u < n; ++u) {
    double R = (double)units[u].replicas;
    busy += R * units[u].busy, exposed += R * units[u].exposed, weight += R;
  }
  r->stepNs = step;
  r->units = n;
  if (step > 0 && weight > 0) {
    r->exposedComm = exposed / (weight * step);
    r->bubble = 1 - busy / (weight * step) - r->exposedComm;
    if (r->bubble < 0) r->bubble = 0;
  }
}

/* The trace's units (their device ranges) and numbering before the run; the transfers' ends
 * after it (a transfer that never completed, in a stuck plan, ends at the step's end). */
static void traceBegin(TuneTrace *t, Unit *units, const UnitMap *map, int n,
                       MlirOperation module) {
  t->devices = piperGetIntAttr(module, "piper.devices", 1);
  t->roles = piperGetIntAttr(module, "piper.roles", 0) > 0;
  t->units = calloc((size_t)n, sizeof *t->units);
  t->nUnits = t->units ? n : 0;
  for (int u = 0; u < t->nUnits; ++u)
    t->units[u][0] = map->start[u], t->units[u][1] = map->stride[u], t->units[u][2] = map->count[u];
  traceNumber(t, units, n, t->roles);
  for (int u = 0; u < n; ++u) { /* the runtime's span around each step's piper_step */
    TuneEvent e = {.unit = u, .wait0 = -1, .wait1 = -1, .xfer = -1, .name = "step"};
    units[u].stepSpan = pushEvent(t, e);
  }
}

static void traceEnd(TuneTrace *t, const World *w, double stepNs) {
  for (size_t i = 0; i < t->n; ++i) {
    TuneEvent *e = &t->ev[i];
    if (!e->comm) continue;
    const Xfer *x = &w->x[e->xfer];
    e->end = x->resolved ? x->end : stepNs;
    if (e->end < e->start) e->end = e->start;
  }
  t->stepNs = stepNs;
}

TuneSimResult tuneSimulate(MlirOperation module, const TuneProfile *p) {
  return tuneSimulateTraced(module, p, NULL);
}

TuneSimResult tuneSimulateTraced(MlirOperation module, const TuneProfile *p, TuneTrace *trace) {
  TuneSimResult r = {0};
  Unit *units = NULL;
  UnitMap map = {0};
  int n = collectUnits(module, &units, &map);
  int64_t devices = piperGetIntAttr(module, "piper.devices", 1);
  if (n <= 0) {
    snprintf(r.error, sizeof r.error, "the plan's functions are not device_0.. or role_0.. "
                                      "(run --piper-extract)");
  } else {
    World w = {.nUnits = n, .normX = -1, .lossX = -1, .trace = trace};
    PiperPtrMap tokenXfer;
    piperPtrMapInit(&tokenXfer, 256);
    piperPtrMapInit(&w.tokenEvent, trace ? 256 : 1);
    if (trace) traceBegin(trace, units, &map, n, module);
    for (bool moved = true; moved;) {
      moved = false;
      for (int u = 0; u < n; ++u) moved |= advance(&w, units, u, &map, &tokenXfer, p, devices);
    }
    summarize(units, n, &r);
    if (trace) traceEnd(trace, &w, r.stepNs);
    piperPtrMapFree(&tokenXfer);
    piperPtrMapFree(&w.tokenEvent);
    for (size_t g = 0; g < w.nGroups; ++g) free(w.groupSeq[g]);
    free(w.groupSeq);
    free(w.groupKeys);
    free(w.x);
  }
  for (int u = 0; u < (n > 0 ? n : 0); ++u) {
    free(units[u].ops);
    free(units[u].streams);
    free(units[u].pending);
  }
  free(units);
  free(map.start), free(map.stride), free(map.count);
  return r;
}
