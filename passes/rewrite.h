/* What the rewrite patterns of --piper-canonicalize (passes/canonicalize.c) and --piper-fuse
 * (passes/fuse.c) share: reading a chain of tdag ops by op id and shape, building ops before
 * the op a pattern rewrites, the pattern tables and their greedy driver, and the explanation
 * a pattern leaves when it does not match (the fusion report). Private to passes/. */
#ifndef PIPER_PASSES_REWRITE_H
#define PIPER_PASSES_REWRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mlir-c/Rewrite.h"
#include "piper/ops.h"
#include "piper/piper.h"

/* ---- reading ---- */

/* The op defining `v` if it is a tdag op of id `id`, else null. */
MlirOperation piperDefOf(MlirValue v, PiperOpId id);
/* `v` with the reshapes that made it looked through: the value they started from. */
MlirValue piperThroughReshapes(MlirValue v);
static inline MlirValue piperOperand(MlirOperation op, intptr_t i) {
  return mlirOperationGetOperand(op, i);
}
static inline MlirValue piperResult(MlirOperation op, intptr_t i) {
  return mlirOperationGetResult(op, i);
}
static inline int64_t piperDim(MlirValue v, int64_t i) {
  return piperTensorDim(mlirValueGetType(v), i);
}
static inline int64_t piperRank(MlirValue v) { return piperTensorRank(mlirValueGetType(v)); }
/* v's dims into shape[0..rank); its rank (at most PIPER_MAX_RANK dims are written). */
int64_t piperShapeOf(MlirValue v, int64_t *shape);
/* Whether a and b have the same shape (element types aside). */
bool piperSameShape(MlirValue a, MlirValue b);
/* True if |a - b| <= 1e-6 |b|: a constant the exporter wrote from a Python float. */
bool piperNear(double a, double b);

/* ---- building: each op goes before `at`, with at's location, tags and placement ---- */
MlirOperation piperBuild(MlirRewriterBase rw, MlirOperation at, PiperOpId id, intptr_t n,
                         const MlirValue *operands, intptr_t nResults, const MlirType *results,
                         intptr_t nAttrs, const MlirNamedAttribute *attrs);
/* `v` reshaped to `shape` (v itself when it has that shape). */
MlirValue piperReshapeTo(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                         const int64_t *shape);
/* permute(v, perm): out dim i = v dim perm[i]. */
MlirValue piperPermuteBy(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                         const int64_t *perm);
/* broadcast(v) to `shape` (v itself when it has that shape). */
MlirValue piperBroadcastTo(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                           const int64_t *shape);
/* v narrowed to [start, start + size) of `dim`. */
MlirValue piperSliceOf(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t dim,
                       int64_t start, int64_t size);
/* An integer and a float attribute named `name`. */
MlirNamedAttribute piperIntAttr(MlirContext ctx, const char *name, int64_t value);
MlirNamedAttribute piperF64Attr(MlirContext ctx, const char *name, double value);
/* Replaces `op`'s results by `values` (as many) and erases it. */
void piperReplaceOp(MlirRewriterBase rw, MlirOperation op, intptr_t n, const MlirValue *values);

/* ---- why a pattern did not match: the fusion report ---- */

/* What one pattern's match got to. A match function takes a Why (may be NULL when nobody
 * asks) and calls piperStep as it accepts each op of its chain and piperMiss where it stops:
 * the report names the op that broke the match furthest along. */
enum { PIPER_WHY_CHAIN_MAX = 48 };
typedef struct {
  int steps;            /* ops of the chain accepted so far */
  const char *chain[PIPER_WHY_CHAIN_MAX]; /* their names (the first PIPER_WHY_CHAIN_MAX) */
  int best;             /* steps of the recorded miss (-1: none) */
  MlirOperation at;     /* the op that broke that match */
  char what[200];       /* why, in words */
  const char *pattern;  /* the pattern that got furthest */
  const char *current;  /* the pattern being tried */
} PiperWhy;
void piperWhyInit(PiperWhy *w);
/* Starts pattern `name` on a fresh count. */
void piperWhyStart(PiperWhy *w, const char *name);
/* Accepts `op` as one op of the chain (w may be NULL); returns true. */
bool piperStep(PiperWhy *w, MlirOperation op);
/* Records that the match stopped at `op` for `fmt` if it got further than any before; returns
 * false, so a matcher writes `return piperMiss(w, op, "...")`. */
bool piperMiss(PiperWhy *w, MlirOperation op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- pattern tables and their driver ---- */

/* A pattern: `match` decides (filling `state`, explaining into w when it is not NULL), and
 * `rewrite` replaces the match, returning the fused op it made (null for a layout form).
 * Separate, so the report can ask why an op left unfused did
 * not match without changing anything. */
typedef bool (*PiperMatchFn)(MlirOperation root, void *state, PiperWhy *w);
typedef MlirOperation (*PiperRewriteFn)(MlirRewriterBase rw, MlirOperation root, void *state);
typedef struct {
  PiperOpId root;        /* the op the pattern starts from */
  const char *name;      /* what it folds, for the report ("attention", "rmsnorm") */
  PiperMatchFn match;
  PiperRewriteFn rewrite;
  size_t stateSize;      /* bytes of its match state (at most PIPER_PATTERN_STATE_MAX) */
  bool fusion;           /* a fusion (reported, explained), not a layout canonical form */
} PiperPattern;
enum { PIPER_PATTERN_STATE_MAX = 512 };

/* One fused op made by a pattern, for the report. */
typedef struct {
  const char *pattern;    /* its pattern's name */
  char op[40];            /* the op it made */
  MlirLocation loc;       /* the root's location */
  char chain[160];        /* the ops it replaced, by name and count */
} PiperFusedRecord;

/* The records of a run (the report), or NULL when nobody asks. */
typedef struct {
  PiperFusedRecord *fused;
  size_t nFused, capFused;
} PiperFusionLog;

/* A short label of where `loc` points, into buf: the module path a name location gives
 * ("h.0.attn", python/piper's exports), then the file's base name and line. */
void piperLocationLabel(MlirLocation loc, char *buf, size_t size);

/* Applies `patterns` (n of them) greedily to `module` until none matches, then erases the
 * forward ops left without users when anything was rewritten. Counts rewrites in *rewrites;
 * records fusions into `log` (may be NULL). Emits an error at the module if the greedy driver
 * did not converge. */
MlirLogicalResult piperApplyPatterns(MlirOperation module, const PiperPattern *patterns,
                                     size_t n, int64_t *rewrites, PiperFusionLog *log);

/* The layout canonical forms (canonicalize.c), for the fusion pass to apply with its own. */
const PiperPattern *piperLayoutPatterns(size_t *n);
/* The fusions (fuse.c), for the report to explain what stayed unfused. */
const PiperPattern *piperFusionPatterns(size_t *n);

#endif
