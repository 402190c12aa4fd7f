/* The shared half of the rewrite patterns (passes/rewrite.h): matching by op id, building
 * before the rewritten op, the explanation of a miss, and the greedy driver on MLIR's C
 * rewrite API (mlir-c/Rewrite.h). */
#include "passes/rewrite.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/checked.h"

/* ---- reading ---- */

MlirOperation piperDefOf(MlirValue v, PiperOpId id) {
  if (mlirValueIsNull(v) || !mlirValueIsAOpResult(v)) return (MlirOperation){NULL};
  MlirOperation op = mlirOpResultGetOwner(v);
  return piperIsOp(op, id) ? op : (MlirOperation){NULL};
}

MlirValue piperThroughReshapes(MlirValue v) {
  MlirOperation r;
  while (!mlirOperationIsNull(r = piperDefOf(v, PIPER_TDAG_RESHAPE))) v = piperOperand(r, 0);
  return v;
}

int64_t piperShapeOf(MlirValue v, int64_t *shape) {
  int64_t r = piperRank(v);
  for (int64_t i = 0; i < r && i < PIPER_MAX_RANK; ++i) shape[i] = piperDim(v, i);
  return r;
}

bool piperSameShape(MlirValue a, MlirValue b) {
  int64_t r = piperRank(a);
  if (piperRank(b) != r) return false;
  for (int64_t i = 0; i < r; ++i)
    if (piperDim(a, i) != piperDim(b, i)) return false;
  return true;
}

bool piperNear(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* ---- building ---- */

MlirOperation piperBuild(MlirRewriterBase rw, MlirOperation at, PiperOpId id, intptr_t n,
                         const MlirValue *operands, intptr_t nResults, const MlirType *results,
                         intptr_t nAttrs, const MlirNamedAttribute *attrs) {
  MlirOperation op = piperTdagOpCreate(id, mlirOperationGetLocation(at), n, operands, nResults,
                                       results, nAttrs, attrs);
  piperCopyPlacement(op, at);
  mlirRewriterBaseSetInsertionPointBefore(rw, at);
  return mlirRewriterBaseInsert(rw, op);
}

static MlirType likeWithShape(MlirOperation at, MlirValue v, int64_t rank, const int64_t *shape) {
  return piperTensorType(mlirOperationGetContext(at), rank, shape,
                         mlirShapedTypeGetElementType(mlirValueGetType(v)));
}

MlirValue piperReshapeTo(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                         const int64_t *shape) {
  MlirType t = likeWithShape(at, v, rank, shape);
  if (mlirTypeEqual(t, mlirValueGetType(v))) return v;
  return piperResult(piperBuild(rw, at, PIPER_TDAG_RESHAPE, 1, &v, 1, &t, 0, NULL), 0);
}

MlirValue piperBroadcastTo(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                           const int64_t *shape) {
  MlirType t = likeWithShape(at, v, rank, shape);
  if (mlirTypeEqual(t, mlirValueGetType(v))) return v;
  return piperResult(piperBuild(rw, at, PIPER_TDAG_BROADCAST, 1, &v, 1, &t, 0, NULL), 0);
}

MlirValue piperPermuteBy(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                         const int64_t *perm) {
  MlirContext ctx = mlirOperationGetContext(at);
  int64_t shape[PIPER_MAX_RANK];
  for (int64_t i = 0; i < rank; ++i) shape[i] = piperDim(v, perm[i]);
  MlirType t = likeWithShape(at, v, rank, shape);
  MlirNamedAttribute a = piperNamedAttr(ctx, "perm", mlirDenseI64ArrayGet(ctx, rank, perm));
  return piperResult(piperBuild(rw, at, PIPER_TDAG_PERMUTE, 1, &v, 1, &t, 1, &a), 0);
}

MlirValue piperSliceOf(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t dim,
                       int64_t start, int64_t size) {
  MlirContext ctx = mlirOperationGetContext(at);
  int64_t shape[PIPER_MAX_RANK], rank = piperShapeOf(v, shape);
  if (start == 0 && size == shape[dim]) return v;
  shape[dim] = size;
  MlirType t = likeWithShape(at, v, rank, shape);
  MlirNamedAttribute a[2] = {piperIntAttr(ctx, "dim", dim), piperIntAttr(ctx, "start", start)};
  return piperResult(piperBuild(rw, at, PIPER_TDAG_SLICE, 1, &v, 1, &t, 2, a), 0);
}

MlirNamedAttribute piperIntAttr(MlirContext ctx, const char *name, int64_t value) {
  return piperNamedAttr(ctx, name, mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), value));
}

MlirNamedAttribute piperF64Attr(MlirContext ctx, const char *name, double value) {
  return piperNamedAttr(ctx, name, mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), value));
}

void piperReplaceOp(MlirRewriterBase rw, MlirOperation op, intptr_t n, const MlirValue *values) {
  mlirRewriterBaseReplaceOpWithValues(rw, op, n, values);
}

/* ---- why a pattern did not match ---- */

void piperWhyInit(PiperWhy *w) {
  memset(w, 0, sizeof *w);
  w->best = -1;
}

void piperWhyStart(PiperWhy *w, const char *name) {
  w->steps = 0;
  w->current = name;
}

bool piperStep(PiperWhy *w, MlirOperation op) {
  if (!w) return true;
  if (w->steps < PIPER_WHY_CHAIN_MAX) {
    const PiperOpFacts *f = piperOpFacts(op);
    w->chain[w->steps] = f ? f->name : "?";
  }
  w->steps++;
  return true;
}

bool piperMiss(PiperWhy *w, MlirOperation op, const char *fmt, ...) {
  if (!w || w->steps <= w->best) return false;
  w->best = w->steps;
  w->at = op;
  w->pattern = w->current;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->what, sizeof w->what, fmt, ap);
  va_end(ap);
  return false;
}

/* ---- locations ---- */

static void appendRef(char *buf, size_t size, size_t *len, MlirStringRef s) {
  if (*len >= size) return;
  size_t n = s.length < size - 1 - *len ? s.length : size - 1 - *len;
  memcpy(buf + *len, s.data, n);
  *len += n;
  buf[*len] = '\0';
}

void piperLocationLabel(MlirLocation loc, char *buf, size_t size) {
  size_t len = 0;
  if (!size) return;
  buf[0] = '\0';
  if (mlirLocationIsAName(loc)) {
    appendRef(buf, size, &len, mlirIdentifierStr(mlirLocationNameGetName(loc)));
    loc = mlirLocationNameGetChildLoc(loc);
    if (mlirLocationIsAFileLineColRange(loc)) appendRef(buf, size, &len, piperStr(" "));
  }
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef file = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    size_t base = file.length;
    while (base > 0 && file.data[base - 1] != '/') --base;
    appendRef(buf, size, &len, (MlirStringRef){file.data + base, file.length - base});
    if (len < size)
      len += (size_t)snprintf(buf + len, size - len, ":%d",
                              mlirLocationFileLineColRangeGetStartLine(loc));
  }
  if (!len) snprintf(buf, size, "(no location)");
}

/* ---- the driver ---- */

/* What the driver's callback sees: the table and where to count and record. */
typedef struct {
  const PiperPattern *patterns;
  size_t n;
  int64_t *rewrites;
  PiperFusionLog *log;
} Driver;

/* "bmm x2, softmax, ..." from the chain's names, in order of first appearance. */
static void summariseChain(const PiperWhy *w, char *buf, size_t size) {
  size_t len = 0;
  int n = w->steps < PIPER_WHY_CHAIN_MAX ? w->steps : PIPER_WHY_CHAIN_MAX;
  buf[0] = '\0';
  for (int i = 0; i < n && len < size; ++i) {
    bool before = false;
    for (int j = 0; j < i && !before; ++j) before = !strcmp(w->chain[j], w->chain[i]);
    if (before) continue;
    int count = 0;
    for (int j = i; j < n; ++j) count += !strcmp(w->chain[j], w->chain[i]);
    const char *name = strncmp(w->chain[i], "tdag.", 5) ? w->chain[i] : w->chain[i] + 5;
    len += (size_t)snprintf(buf + len, size - len, count > 1 ? "%s%s x%d" : "%s%s",
                            len ? ", " : "", name, count);
  }
}

/* Logs the fused op `made` of pattern p, whose root was at `loc`. */
static void record(PiperFusionLog *log, const PiperPattern *p, MlirLocation loc,
                   MlirOperation made, const PiperWhy *w) {
  if (!log || !p->fusion) return;
  if (!piperGrow((void **)&log->fused, &log->capFused, log->nFused + 1, sizeof *log->fused))
    return; /* the report is best effort; the rewrite stands */
  PiperFusedRecord *r = &log->fused[log->nFused++];
  r->pattern = p->name;
  r->loc = loc;
  const PiperOpFacts *f = mlirOperationIsNull(made) ? NULL : piperOpFacts(made);
  snprintf(r->op, sizeof r->op, "%s", f ? f->name : "?");
  summariseChain(w, r->chain, sizeof r->chain);
}

static MlirLogicalResult matchAndRewrite(MlirRewritePattern pattern, MlirOperation op,
                                         MlirPatternRewriter r, void *userData) {
  const Driver *d = userData;
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return mlirLogicalResultFailure();
  for (size_t i = 0; i < d->n; ++i) {
    const PiperPattern *p = &d->patterns[i];
    if (p->root != f->id) continue;
    _Alignas(max_align_t) unsigned char state[PIPER_PATTERN_STATE_MAX];
    PiperWhy w;
    piperWhyInit(&w);
    piperWhyStart(&w, p->name);
    memset(state, 0, p->stateSize);
    if (!p->match(op, state, &w)) continue;
    MlirLocation loc = mlirOperationGetLocation(op); /* the rewrite erases the root */
    record(d->log, p, loc, p->rewrite(mlirPatternRewriterAsBase(r), op, state), &w);
    ++*d->rewrites;
    return mlirLogicalResultSuccess();
  }
  return mlirLogicalResultFailure();
}

/* Erases forward ops whose results nothing reads, last first, so a chain a pattern replaced
 * goes whole. Leaves stay: a buffer the chain read is still in the weights file, which
 * --init-checkpoint must match. */
static void eraseDead(MlirBlock body) {
  bool again = true;
  while (again) {
    again = false;
    for (MlirOperation op = mlirBlockGetFirstOperation(body), next; !mlirOperationIsNull(op);
         op = next) {
      next = mlirOperationGetNextInBlock(op);
      const PiperOpFacts *f = piperOpFacts(op);
      if (!f || f->kind != PIPER_OP_FORWARD) continue;
      bool used = false;
      for (intptr_t i = 0; i < mlirOperationGetNumResults(op) && !used; ++i)
        used = !mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, i)));
      if (!used) {
        mlirOperationDestroy(op);
        again = true;
      }
    }
  }
}

MlirLogicalResult piperApplyPatterns(MlirOperation module, const PiperPattern *patterns,
                                     size_t n, int64_t *rewrites, PiperFusionLog *log) {
  MlirContext ctx = mlirOperationGetContext(module);
  size_t count;
  const PiperOpFacts *table = piperOpFactsTable(&count);
  Driver d = {patterns, n, rewrites, log};
  MlirRewritePatternSet set = mlirRewritePatternSetCreate(ctx);
  for (size_t i = 0; i < n; ++i) {
    bool first = true; /* one MLIR pattern per root op: the callback tries its rows in order */
    for (size_t j = 0; j < i && first; ++j) first = patterns[j].root != patterns[i].root;
    if (!first) continue;
    MlirRewritePatternCallbacks cb = {0};
    cb.matchAndRewrite = matchAndRewrite;
    mlirRewritePatternSetAdd(set, mlirOpRewritePatternCreate(piperStr(table[patterns[i].root].name),
                                                             1, ctx, cb, &d, 0, NULL));
  }
  MlirFrozenRewritePatternSet frozen = mlirFreezeRewritePattern(set);
  /* freezing moves the patterns out; the emptied set is still ours to free (LLVM 22) */
  mlirRewritePatternSetDestroy(set);
  MlirGreedyRewriteDriverConfig config = mlirGreedyRewriteDriverConfigCreate();
  int64_t before = *rewrites;
  MlirLogicalResult status = mlirApplyPatternsAndFoldGreedilyWithOp(module, frozen, config);
  mlirGreedyRewriteDriverConfigDestroy(config);
  mlirFrozenRewritePatternSetDestroy(frozen);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top);
       *rewrites > before && !mlirOperationIsNull(f); f = mlirOperationGetNextInBlock(f))
    if (piperOpIs(f, "func.func") && !mlirRegionIsNull(mlirOperationGetRegion(f, 0)) &&
        !mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
      eraseDead(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
  if (mlirLogicalResultIsFailure(status))
    mlirEmitError(mlirOperationGetLocation(module),
                  "piper-fuse: the rewrite did not converge in the greedy driver's iterations");
  return status;
}
