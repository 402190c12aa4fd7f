/* The `order` directive: {"op":"order","filters":[[F1],[F2,F3],...]}, a list of groups of
 * filters that gives each device the order it runs its ops in. Three passes read it, all
 * through this file:
 *   --piper-split-backward  relabels the backward ops of the nodes that a filter naming PASS
 *                           "BI" or "BW" selects (split_backward.c; piperOrderForEachSplitNode);
 *   --piper-extract         sorts each device's ops (piperOrderDevice) and records on its plan
 *                           which directive ordered it (piperOrderRecord);
 *   --piper-verify-plan     points a deadlock back at that directive (piperOrderDirectiveLoc).
 *
 * Order. Each device runs its ops sorted by (rank, program position). An op's rank is the
 * index of the first group of the `order` directive that governs the device (the first one
 * whose groups select any op there; pipeline replicas share their directive) that selects the
 * op. Ops no group selects run as soon as their inputs allow (the largest rank among their
 * producers on the device), and updates (pass UPD) run last. Program position breaks ties; it
 * is a topological order of the whole graph, so within a rank data dependencies always hold.
 * Across ranks they hold only if the directive agrees with them: a directive that orders an op
 * before an op whose result it needs is an order cycle, reported at the directive.
 *
 * Groups of several filters (piper-sched dualpipev --ep: an overlapped F&B pair). The ops of
 * one such group share a rank, so program position alone would run one node's ops, then the
 * other's (forwards come first in the program), and every all-to-all would wait right after
 * it is issued. Instead the group's ops are interleaved by lane (the filter that selects them;
 * an op no filter selects goes with the op before it): a lane runs until it issues an
 * all-to-all, then the other lane runs until it issues one, and so on, so one microbatch's
 * exchange is in flight while the other computes (DualPipe's overlap). Each lane keeps its
 * program order; if an op would then precede one whose result it reads (a value crossing
 * lanes), the group keeps program order. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "passes/strategy.h"
#include "piper/checked.h"

enum { RANK_FIRST = -1, RANK_LAST = 1 << 30 };

/* The directive's groups: an array of arrays of filters. */
static MlirAttribute groupsOf(MlirOperation order) {
  return mlirOperationGetAttributeByName(order, piperStr("filters"));
}

/* Rank of `op` in directive `order`: the index of the first group that selects it, or -1. */
static int64_t groupOf(MlirOperation order, MlirOperation op) {
  MlirAttribute groups = groupsOf(order);
  for (intptr_t g = 0; g < mlirArrayAttrGetNumElements(groups); ++g) {
    MlirAttribute filters = mlirArrayAttrGetElement(groups, g);
    for (intptr_t f = 0; f < mlirArrayAttrGetNumElements(filters); ++f)
      if (piperFilterMatches(op, mlirArrayAttrGetElement(filters, f))) return g;
  }
  return -1;
}

/* ---- BI/BW: the filters that name a split pass ---- */

/* `filter` without its PASS entry: the node's tags. */
static MlirAttribute withoutPass(MlirContext ctx, MlirAttribute filter) {
  intptr_t total = mlirDictionaryAttrGetNumElements(filter), n = 0;
  MlirNamedAttribute *entries = malloc((total ? total : 1) * sizeof *entries); /* every tag */
  for (intptr_t i = 0; i < total; ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(filter, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    if (!(key.length == 4 && !memcmp(key.data, "PASS", 4))) entries[n++] = e;
  }
  MlirAttribute node = mlirDictionaryAttrGet(ctx, n, entries);
  free(entries);
  return node;
}

static bool namesSplitPass(MlirAttribute filter) {
  MlirAttribute pass = mlirDictionaryAttrGetElementByName(filter, piperStr("PASS"));
  if (mlirAttributeIsNull(pass) || !mlirAttributeIsAString(pass)) return false;
  MlirStringRef p = mlirStringAttrGetValue(pass);
  return p.length == 2 && p.data[0] == 'B' && (p.data[1] == 'I' || p.data[1] == 'W');
}

MlirLogicalResult piperOrderForEachSplitNode(MlirOperation module, PiperOrderNodeFn fn,
                                             void *userData) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, "sched.order")) continue;
    MlirAttribute groups = groupsOf(d);
    for (intptr_t g = 0; g < mlirArrayAttrGetNumElements(groups); ++g) {
      MlirAttribute filters = mlirArrayAttrGetElement(groups, g);
      for (intptr_t f = 0; f < mlirArrayAttrGetNumElements(filters); ++f) {
        MlirAttribute filter = mlirArrayAttrGetElement(filters, f);
        if (!namesSplitPass(filter)) continue;
        if (mlirLogicalResultIsFailure(fn(withoutPass(ctx, filter), userData)))
          return mlirLogicalResultFailure();
      }
    }
  }
  return mlirLogicalResultSuccess();
}

/* ---- a device's execution order ---- */

static int byRank(const void *a, const void *b) {
  const PiperScheduled *x = a, *y = b;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return x->position < y->position ? -1 : x->position > y->position;
}

/* Index of the first filter of group `g` of `order` that selects `op`, or -1. */
static int64_t filterOf(MlirOperation order, int64_t g, MlirOperation op) {
  MlirAttribute groups = groupsOf(order);
  if (g < 0 || g >= mlirArrayAttrGetNumElements(groups)) return -1;
  MlirAttribute filters = mlirArrayAttrGetElement(groups, g);
  for (intptr_t f = 0; f < mlirArrayAttrGetNumElements(filters); ++f)
    if (piperFilterMatches(op, mlirArrayAttrGetElement(filters, f))) return f;
  return -1;
}

/* Interleaves the m ops of one rank, a group of `lanes` filters, by lane (see the file
 * comment); leaves them in program order if that would break a data dependency. */
static void interleaveRun(MlirOperation order, PiperScheduled *run, size_t m, int64_t lanes) {
  int64_t *lane = malloc(m * sizeof *lane);
  size_t *next = calloc((size_t)lanes, sizeof *next); /* per lane: next index into run to scan */
  PiperScheduled *out = malloc(m * sizeof *out);
  PiperPtrMap at; /* op ptr -> its index in out */
  piperPtrMapInit(&at, m * 2);
  for (size_t i = 0; i < m; ++i) {
    int64_t f = filterOf(order, run[i].rank, run[i].op);
    lane[i] = f >= 0 ? f : i ? lane[i - 1] : 0;
  }
  int64_t cur = 0;
  for (size_t k = 0; k < m; ++k) {
    size_t pick = m;
    for (int64_t tries = 0; tries < lanes && pick == m; ++tries, cur = (cur + 1) % lanes) {
      while (next[cur] < m && lane[next[cur]] != cur) next[cur]++;
      if (next[cur] < m) {
        pick = next[cur]++;
        break;
      }
    }
    out[k] = run[pick];
    piperPtrMapPut(&at, run[pick].op.ptr, (intptr_t)k);
    if (piperOpIs(run[pick].op, "comm.all_to_all")) { /* after a run of exchanges issued, */
      size_t q = next[cur];                             /* the other lane's turn */
      while (q < m && lane[q] != cur) ++q;
      if (q == m || !piperOpIs(run[q].op, "comm.all_to_all")) cur = (cur + 1) % lanes;
    }
  }
  bool ok = true; /* every producer in the run still comes first */
  for (size_t k = 0; k < m && ok; ++k)
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(out[k].op) && ok; ++a) {
      MlirValue v = mlirOperationGetOperand(out[k].op, a);
      intptr_t p;
      if (mlirValueIsAOpResult(v) && piperPtrMapGet(&at, mlirOpResultGetOwner(v).ptr, &p))
        ok = (size_t)p < k;
    }
  if (ok) memcpy(run, out, m * sizeof *out);
  piperPtrMapFree(&at);
  free(out);
  free(next);
  free(lane);
}

/* Interleaves each run of ops whose rank is a group of several filters (see above). */
static void interleaveGroups(MlirOperation order, PiperScheduled *s, size_t n) {
  if (mlirOperationIsNull(order)) return;
  MlirAttribute groups = groupsOf(order);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i; j < n && s[j].rank == s[i].rank; ++j) {
    }
    int64_t g = s[i].rank;
    intptr_t lanes = g >= 0 && g < mlirArrayAttrGetNumElements(groups)
                         ? mlirArrayAttrGetNumElements(mlirArrayAttrGetElement(groups, g))
                         : 0;
    if (lanes >= 2) interleaveRun(order, s + i, j - i, lanes);
  }
}

/* The directive that governs a device: the first of `orders` whose groups select any of its
 * ops, or null. */
static MlirOperation governingOrder(const MlirOperation *orders, size_t nOrders,
                                    const PiperScheduled *s, size_t n) {
  for (size_t o = 0; o < nOrders; ++o)
    for (size_t i = 0; i < n; ++i)
      if (groupOf(orders[o], s[i].op) >= 0) return orders[o];
  return (MlirOperation){NULL};
}

/* The error for op `op` of device d, ranked `rank` by the directive, that needs the result of
 * `late` ranked `needs` > rank: an order cycle. */
static void orderCycleError(MlirOperation order, int64_t d, MlirOperation op, int64_t rank,
                            MlirOperation late, int64_t needs) {
  char msg[400];
  snprintf(msg, sizeof msg,
           "order: on device %lld this directive runs group %lld before group %lld, but an "
           "op of group %lld needs a result of group %lld (an order cycle); swap them",
           (long long)d, (long long)rank, (long long)needs, (long long)rank, (long long)needs);
  mlirEmitError(mlirOperationGetLocation(order), msg);
  char label[160];
  piperNodeLabel(op, label, sizeof label);
  piperEmitNotef(mlirOperationGetLocation(op), "order: this op of node %s (group %lld) would wait",
                 label, (long long)rank);
  piperNodeLabel(late, label, sizeof label);
  piperEmitNotef(mlirOperationGetLocation(late),
                 "order: for the result of this op of node %s (group %lld)", label,
                 (long long)needs);
}

/* Ranks the ops of device d under `order` (may be null; see the file comment). */
static MlirLogicalResult rankOps(MlirOperation order, int64_t d, PiperScheduled *s, size_t n) {
  PiperPtrMap rankOf; /* op ptr -> index into s */
  piperPtrMapInit(&rankOf, n);
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t i = 0; i < n && mlirLogicalResultIsSuccess(status); ++i) {
    MlirOperation op = s[i].op;
    char pass[8];
    int64_t g = mlirOperationIsNull(order) ? -1 : groupOf(order, op);
    int64_t needs = RANK_FIRST; /* the latest rank among its producers here */
    MlirOperation late = {NULL};
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(op); ++a) {
      MlirValue v = mlirOperationGetOperand(op, a);
      intptr_t k;
      if (mlirValueIsAOpResult(v) && piperPtrMapGet(&rankOf, mlirOpResultGetOwner(v).ptr, &k) &&
          s[k].rank > needs) {
        needs = s[k].rank;
        late = s[k].op;
      }
    }
    if (!strcmp(piperOpPass(op, pass, sizeof pass), "UPD")) s[i].rank = RANK_LAST;
    else if (g >= 0) s[i].rank = g;
    else s[i].rank = needs;
    if (s[i].rank < needs) {
      orderCycleError(order, d, op, s[i].rank, late, needs);
      status = mlirLogicalResultFailure();
    }
    piperPtrMapPut(&rankOf, op.ptr, (intptr_t)i);
  }
  piperPtrMapFree(&rankOf);
  return status;
}

MlirLogicalResult piperOrderDevice(const MlirOperation *orders, size_t nOrders, int64_t d,
                                   PiperScheduled *s, size_t n, MlirOperation *order) {
  *order = governingOrder(orders, nOrders, s, n);
  if (mlirLogicalResultIsFailure(rankOps(*order, d, s, n))) return mlirLogicalResultFailure();
  qsort(s, n, sizeof *s, byRank);
  interleaveGroups(*order, s, n);
  return mlirLogicalResultSuccess();
}

/* ---- piper.order: which directive ordered a plan ---- */

void piperOrderRecord(MlirOperation fn, MlirOperation order) {
  if (mlirOperationIsNull(order)) return;
  MlirLocation orderLoc = mlirOperationGetLocation(order);
  if (!mlirLocationIsAFileLineColRange(orderLoc)) return;
  MlirStringRef file = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(orderLoc));
  char where[PIPER_ORDER_WHERE_MAX];
  snprintf(where, sizeof where, "%.*s:%d:%d", (int)file.length, file.data,
           mlirLocationFileLineColRangeGetStartLine(orderLoc),
           mlirLocationFileLineColRangeGetStartColumn(orderLoc));
  mlirOperationSetAttributeByName(
      fn, piperStr("piper.order"),
      mlirStringAttrGet(mlirOperationGetContext(fn), piperStr(where)));
}

bool piperOrderDirectiveLoc(MlirOperation deviceFn, MlirLocation *loc) {
  char where[PIPER_ORDER_WHERE_MAX];
  if (!piperGetStringAttr(deviceFn, "piper.order", where, sizeof where)) return false;
  /* FILE:LINE:COL, split from the right: a file name may hold colons */
  char *colon2 = strrchr(where, ':');
  if (!colon2) return false;
  *colon2 = 0;
  char *colon1 = strrchr(where, ':');
  if (!colon1) return false;
  *colon1 = 0;
  int64_t line, col;
  if (!piperParseI64(colon1 + 1, 1, INT32_MAX, &line) ||
      !piperParseI64(colon2 + 1, 1, INT32_MAX, &col))
    return false;
  *loc = mlirLocationFileLineColGet(mlirOperationGetContext(deviceFn), piperStr(where),
                                    (unsigned)line, (unsigned)col);
  return true;
}
