/* --piper-canonicalize: the layout canonical forms of the general ops an exported model holds,
 * ahead of --piper-fuse's patterns (MLIR's habit: canonicalize, then match a few canonical
 * forms). People write one computation in many layouts: Hugging Face applies RoPE after the
 * heads' transpose and repeats kv heads after it (repeat_kv), GPT-NeoX transposes a per-head
 * packed qkv and then chunks it. Here each permute sinks towards its users, through what
 * does not care about the layout, so that every such chain ends in one form: the elementwise
 * work on the (B,T,H,D) value the projection gave, and one permute right before the matmul
 * that needs it. The forms:
 *
 *   reshape(x) of x's own type -> x;  reshape(reshape(x)) -> reshape(x)
 *   permute(x) by the identity -> x;  permute(permute(x, p), q) -> permute(x, p∘q)
 *   broadcast(x) of x's own type -> x;  broadcast(broadcast(x)) -> broadcast(x)
 *   slice(x) of all of dim -> x;  slice(slice(x, d, a), d, b) -> slice(x, d, a + b)
 *   binary(a, broadcast(y)), y a suffix of the result (leading 1s aside) -> binary(a, y)
 *     (tdag.add becomes tdag.add_bcast), the same for masked_fill's mask: the kernels read a
 *     suffix operand cyclically, so the broadcast copy is not needed
 *   sinking a permute p below its user u:
 *     u elementwise of one operand         u(permute(x)) -> permute(u(x))
 *     u elementwise of two, the other the same permute of y, or a value whose broadcast to
 *       the result needs no data movement to lie in x's layout (a table (1,1,T,D) over
 *       (B,H,T,D) becomes (T,1,D) broadcast over (B,T,H,D))
 *                                          u(permute(x), z) -> permute(u(x, z'))
 *     slice on dim d                       -> permute(slice(x, p[d]))
 *     concat on dim d of operands all permuted by p -> permute(concat(xs, p[d]))
 *     broadcast to the same rank           -> permute(broadcast(x))
 *     reshape that splits or merges dims which lie in x in the same order (repeat_kv's
 *       (B,KV,T,D) -> (B,KV,1,T,D), (B,KV,rep,T,D) -> (B,H,T,D); unit dims anywhere)
 *                                          -> permute(reshape(x))
 *
 * Every form computes exactly what it replaces (layout ops move data, never round it), so
 * these rewrites change no number a run computes; test/passes/canonicalize.mlir shows each
 * firing and not firing. A permute whose user is none of the above (a matmul, a softmax, a
 * reduction) stays where it is. */
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/rewrite.h"

#define FAIL false

/* ---- helpers ---- */

static bool isUnaryElementwise(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return false;
  switch (f->id) {
  case PIPER_TDAG_MUL_SCALAR:
  case PIPER_TDAG_ADD_SCALAR:
  case PIPER_TDAG_POW_SCALAR:
  case PIPER_TDAG_EXP:
  case PIPER_TDAG_TANH:
  case PIPER_TDAG_RSQRT:
  case PIPER_TDAG_SILU:
  case PIPER_TDAG_GELU_ERF:
  case PIPER_TDAG_GELU:
  case PIPER_TDAG_RELU: return true;
  default: return false;
  }
}

static bool isBinaryElementwise(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return false;
  switch (f->id) {
  case PIPER_TDAG_ADD:
  case PIPER_TDAG_ADD_BCAST:
  case PIPER_TDAG_SUB:
  case PIPER_TDAG_MUL:
  case PIPER_TDAG_DIV: return true;
  default: return false;
  }
}

/* True if `small`, without its leading dims of 1, is the trailing dims of `big` (the suffix
 * broadcast the general kernels read cyclically). */
static bool suffixOf(MlirValue small, MlirValue big) {
  int64_t rs = piperRank(small), rb = piperRank(big), lead = 0;
  while (lead < rs && piperDim(small, lead) == 1) lead++;
  if (rs - lead > rb) return false;
  for (int64_t i = lead; i < rs; ++i)
    if (piperDim(small, i) != piperDim(big, rb - rs + i)) return false;
  return true;
}

/* The permute defining v, with its perm into *perm, or null. */
static MlirOperation permuteOf(MlirValue v, int64_t *perm) {
  MlirOperation pm = piperDefOf(v, PIPER_TDAG_PERMUTE);
  if (mlirOperationIsNull(pm) || !piperPermuteOf(pm, piperRank(v), perm))
    return (MlirOperation){NULL};
  return pm;
}

/* The result of `op` as a freshly built op of the same id, attributes and result shape
 * `shape`, on `operands` (the sunk copy of an elementwise op or a slice). */
static MlirOperation cloneOn(MlirRewriterBase rw, MlirOperation op, PiperOpId id, intptr_t n,
                             const MlirValue *operands, int64_t rank, const int64_t *shape,
                             intptr_t nAttrs, const MlirNamedAttribute *attrs) {
  MlirType t = piperTensorType(mlirOperationGetContext(op), rank, shape,
                               mlirShapedTypeGetElementType(mlirValueGetType(piperResult(op, 0))));
  return piperBuild(rw, op, id, n, operands, 1, &t, nAttrs, attrs);
}

/* op's discardable-free attributes (those of its definition: value, exponent, dim, ...),
 * all but `tags` and the placement, which piperBuild copies. */
static intptr_t ownAttrs(MlirOperation op, MlirNamedAttribute *out, intptr_t max) {
  intptr_t n = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op) && n < max; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    MlirStringRef name = mlirIdentifierStr(a.name);
    if ((name.length == 4 && !memcmp(name.data, "tags", 4)) ||
        (name.length == 7 && !memcmp(name.data, "devices", 7)) ||
        (name.length == 4 && !memcmp(name.data, "pass", 4)))
      continue;
    out[n++] = a;
  }
  return n;
}

/* ---- reshape ---- */

typedef struct {
  int kind;                   /* 1 identity, 2 of a reshape, 3 of a permute */
  int64_t rank;               /* kind 3: the new reshape's rank */
  int64_t shape[PIPER_MAX_RANK]; /* kind 3: x reshaped to this */
  int64_t perm[PIPER_MAX_RANK];  /* kind 3: then permuted by this */
} ReshapeFold;

/* A reshape of permute(x, p) as permute(reshape(x, shape), q): possible when each dim of the
 * result is one dim of p's result or a run of them that lies in x in the same order, or a
 * piece of one (a split); unit dims go anywhere (they hold no data). */
static bool reshapeThroughPermute(const int64_t *X, int64_t n, const int64_t *p,
                                  const int64_t *O, int64_t m, ReshapeFold *s) {
  if (n > PIPER_MAX_RANK || m > PIPER_MAX_RANK) return false;
  int64_t P[PIPER_MAX_RANK], A[PIPER_MAX_RANK], Bo[PIPER_MAX_RANK], na = 0, nb = 0;
  int64_t xpos[PIPER_MAX_RANK]; /* x dim -> its place among x's non-unit dims */
  for (int64_t i = 0, k = 0; i < n; ++i) xpos[i] = X[i] != 1 ? k++ : -1;
  for (int64_t i = 0; i < n; ++i) {
    P[i] = X[p[i]];
    if (P[i] != 1) A[na++] = i;
  }
  for (int64_t j = 0; j < m; ++j)
    if (O[j] != 1) Bo[nb++] = j;
  /* groups: [a0, a1) of A against [b0, b1) of Bo, one side a single dim */
  int64_t ga[PIPER_MAX_RANK + 1], gb[PIPER_MAX_RANK + 1], ng = 0, ia = 0, ib = 0;
  while (ia < na && ib < nb) {
    int64_t a1 = ia + 1, b1 = ib + 1, pa = P[A[ia]], pb = O[Bo[ib]];
    while (pa != pb) {
      if (pa < pb && a1 < na) pa *= P[A[a1++]];
      else if (pb < pa && b1 < nb) pb *= O[Bo[b1++]];
      else return false;
    }
    if (a1 - ia > 1 && b1 - ib > 1) return false; /* many to many: not a split or a merge */
    for (int64_t k = ia; k + 1 < a1; ++k) /* a merge must read x's dims in order */
      if (xpos[p[A[k + 1]]] != xpos[p[A[k]]] + 1) return false;
    ga[ng] = ia;
    gb[ng++] = ib;
    ia = a1;
    ib = b1;
  }
  if (ia != na || ib != nb) return false;
  ga[ng] = na;
  gb[ng] = nb;
  /* the groups in x's order (by the x place of each group's first dim) */
  int64_t order[PIPER_MAX_RANK];
  for (int64_t g = 0; g < ng; ++g) order[g] = g;
  for (int64_t i = 1; i < ng; ++i)
    for (int64_t j = i; j > 0 && xpos[p[A[ga[order[j - 1]]]]] > xpos[p[A[ga[order[j]]]]]; --j) {
      int64_t t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  /* the new shape as result dims: leading unit dims, then each group's result dims, each
   * followed by the unit dims that follow it in the result */
  int64_t oidx[PIPER_MAX_RANK], k = 0;
  for (int64_t j = 0; j < m && O[j] == 1; ++j) oidx[k++] = j;
  for (int64_t g = 0; g < ng; ++g)
    for (int64_t b = gb[order[g]]; b < gb[order[g] + 1]; ++b)
      for (int64_t j = Bo[b]; j < m && (j == Bo[b] || O[j] == 1); ++j) oidx[k++] = j;
  if (k != m) return false;
  for (int64_t i = 0; i < m; ++i) {
    s->shape[i] = O[oidx[i]];
    s->perm[oidx[i]] = i;
  }
  s->rank = m;
  return true;
}

static bool matchReshape(MlirOperation op, void *state, PiperWhy *w) {
  ReshapeFold *s = state;
  MlirValue x = piperOperand(op, 0), out = piperResult(op, 0);
  if (mlirTypeEqual(mlirValueGetType(x), mlirValueGetType(out))) return s->kind = 1, true;
  if (!mlirOperationIsNull(piperDefOf(x, PIPER_TDAG_RESHAPE))) return s->kind = 2, true;
  int64_t p[PIPER_MAX_RANK], X[PIPER_MAX_RANK], O[PIPER_MAX_RANK];
  MlirOperation pm = permuteOf(x, p);
  if (mlirOperationIsNull(pm)) return FAIL;
  int64_t n = piperShapeOf(piperOperand(pm, 0), X), m = piperShapeOf(out, O);
  if (!reshapeThroughPermute(X, n, p, O, m, s)) return FAIL;
  return s->kind = 3, true;
}

static MlirOperation rewriteReshape(MlirRewriterBase rw, MlirOperation op, void *state) {
  ReshapeFold *s = state;
  MlirValue x = piperOperand(op, 0);
  if (s->kind == 1) {
    piperReplaceOp(rw, op, 1, &x);
  } else if (s->kind == 2) {
    mlirRewriterBaseStartOpModification(rw, op);
    mlirOperationSetOperand(op, 0, piperOperand(mlirOpResultGetOwner(x), 0));
    mlirRewriterBaseFinalizeOpModification(rw, op);
  } else {
    MlirValue src = piperOperand(mlirOpResultGetOwner(x), 0);
    MlirValue y = piperReshapeTo(rw, op, src, s->rank, s->shape);
    bool identity = true;
    for (int64_t i = 0; i < s->rank; ++i) identity &= s->perm[i] == i;
    MlirValue to = identity ? y : piperPermuteBy(rw, op, y, s->rank, s->perm);
    piperReplaceOp(rw, op, 1, &to);
  }
  return (MlirOperation){NULL};
}

/* ---- permute ---- */

typedef struct {
  bool identity;                 /* permute by the identity */
  int64_t both[PIPER_MAX_RANK];  /* of a permute: the composition */
  bool cancels;                  /* of a permute: the composition is the identity */
} PermuteFold;

/* permute(x) by the identity -> x; permute(permute(x, p), q) -> permute(x, p∘q) */
static bool matchPermute(MlirOperation op, void *state, PiperWhy *w) {
  PermuteFold *s = state;
  int64_t rank = piperRank(piperOperand(op, 0)), outer[PIPER_MAX_RANK], first[PIPER_MAX_RANK];
  if (!piperPermuteOf(op, rank, outer)) return FAIL;
  s->identity = true;
  for (int64_t i = 0; i < rank; ++i) s->identity &= outer[i] == i;
  if (s->identity) return true;
  MlirOperation inner = permuteOf(piperOperand(op, 0), first);
  if (mlirOperationIsNull(inner)) return FAIL;
  s->cancels = true;
  for (int64_t i = 0; i < rank; ++i) {
    s->both[i] = first[outer[i]];
    s->cancels &= s->both[i] == i;
  }
  return true;
}

static MlirOperation rewritePermute(MlirRewriterBase rw, MlirOperation op, void *state) {
  PermuteFold *s = state;
  MlirValue x = piperOperand(op, 0);
  if (!s->identity) {
    x = piperOperand(mlirOpResultGetOwner(x), 0);
    if (!s->cancels) x = piperPermuteBy(rw, op, x, piperRank(x), s->both);
  }
  piperReplaceOp(rw, op, 1, &x);
  return (MlirOperation){NULL};
}

/* ---- broadcast ---- */

typedef struct {
  int kind; /* 1 identity, 2 of a broadcast, 3 of a permute */
  int64_t perm[PIPER_MAX_RANK];
} BroadcastFold;

static bool matchBroadcast(MlirOperation op, void *state, PiperWhy *w) {
  BroadcastFold *s = state;
  MlirValue x = piperOperand(op, 0), out = piperResult(op, 0);
  if (mlirTypeEqual(mlirValueGetType(x), mlirValueGetType(out))) return s->kind = 1, true;
  if (!mlirOperationIsNull(piperDefOf(x, PIPER_TDAG_BROADCAST))) return s->kind = 2, true;
  if (piperRank(x) == piperRank(out) && !mlirOperationIsNull(permuteOf(x, s->perm)))
    return s->kind = 3, true;
  return FAIL;
}

static MlirOperation rewriteBroadcast(MlirRewriterBase rw, MlirOperation op, void *state) {
  BroadcastFold *s = state;
  MlirValue x = piperOperand(op, 0), out = piperResult(op, 0), to = x;
  if (s->kind == 2) {
    mlirRewriterBaseStartOpModification(rw, op);
    mlirOperationSetOperand(op, 0, piperOperand(mlirOpResultGetOwner(x), 0));
    mlirRewriterBaseFinalizeOpModification(rw, op);
    return (MlirOperation){NULL};
  }
  if (s->kind == 3) { /* out dim i = x's source dim perm[i]: broadcast the source to match */
    MlirValue src = piperOperand(mlirOpResultGetOwner(x), 0);
    int64_t r = piperRank(out), shape[PIPER_MAX_RANK];
    for (int64_t i = 0; i < r; ++i) shape[s->perm[i]] = piperDim(out, i);
    to = piperPermuteBy(rw, op, piperBroadcastTo(rw, op, src, r, shape), r, s->perm);
  }
  piperReplaceOp(rw, op, 1, &to);
  return (MlirOperation){NULL};
}

/* ---- slice ---- */

typedef struct {
  int kind; /* 1 all of dim, 2 of a slice on the same dim, 3 of a permute */
  int64_t perm[PIPER_MAX_RANK];
} SliceFold;

static bool matchSlice(MlirOperation op, void *state, PiperWhy *w) {
  SliceFold *s = state;
  MlirValue x = piperOperand(op, 0);
  int64_t d = piperGetIntAttr(op, "dim", -1);
  if (piperSameShape(x, piperResult(op, 0))) return s->kind = 1, true;
  MlirOperation inner = piperDefOf(x, PIPER_TDAG_SLICE);
  if (!mlirOperationIsNull(inner) && piperGetIntAttr(inner, "dim", -2) == d)
    return s->kind = 2, true;
  if (!mlirOperationIsNull(permuteOf(x, s->perm))) return s->kind = 3, true;
  return FAIL;
}

static MlirOperation rewriteSlice(MlirRewriterBase rw, MlirOperation op, void *state) {
  SliceFold *s = state;
  MlirValue x = piperOperand(op, 0), out = piperResult(op, 0), to = x;
  int64_t d = piperGetIntAttr(op, "dim", 0), start = piperGetIntAttr(op, "start", 0);
  MlirOperation inner = mlirOpResultGetOwner(x);
  if (s->kind == 2)
    to = piperSliceOf(rw, op, piperOperand(inner, 0), d,
                      start + piperGetIntAttr(inner, "start", 0), piperDim(out, d));
  else if (s->kind == 3)
    to = piperPermuteBy(rw, op,
                        piperSliceOf(rw, op, piperOperand(inner, 0), s->perm[d], start,
                                     piperDim(out, d)),
                        piperRank(x), s->perm);
  piperReplaceOp(rw, op, 1, &to);
  return (MlirOperation){NULL};
}

/* ---- concat ---- */

typedef struct {
  int64_t perm[PIPER_MAX_RANK];
} ConcatSink;

/* concat(permute(x_i, p)..., dim d) -> permute(concat(x_i..., dim p[d]), p) */
static bool matchConcat(MlirOperation op, void *state, PiperWhy *w) {
  ConcatSink *s = state;
  intptr_t n = mlirOperationGetNumOperands(op);
  int64_t r = piperRank(piperResult(op, 0)), p[PIPER_MAX_RANK];
  if (n < 1 || mlirOperationIsNull(permuteOf(piperOperand(op, 0), s->perm))) return FAIL;
  for (intptr_t k = 1; k < n; ++k)
    if (mlirOperationIsNull(permuteOf(piperOperand(op, k), p)) ||
        memcmp(p, s->perm, (size_t)r * sizeof *p))
      return FAIL;
  return true;
}

static MlirOperation rewriteConcat(MlirRewriterBase rw, MlirOperation op, void *state) {
  ConcatSink *s = state;
  intptr_t n = mlirOperationGetNumOperands(op);
  MlirValue xs[64];
  if (n > 64) return (MlirOperation){NULL}; /* not reached: matchConcat's callers are small */
  for (intptr_t k = 0; k < n; ++k) xs[k] = piperOperand(mlirOpResultGetOwner(piperOperand(op, k)), 0);
  MlirValue out = piperResult(op, 0);
  int64_t r = piperRank(out), d = piperGetIntAttr(op, "dim", 0), shape[PIPER_MAX_RANK];
  for (int64_t i = 0; i < r; ++i) shape[s->perm[i]] = piperDim(out, i);
  MlirNamedAttribute dim = piperIntAttr(mlirOperationGetContext(op), "dim", s->perm[d]);
  MlirOperation cat = cloneOn(rw, op, PIPER_TDAG_CONCAT, n, xs, r, shape, 1, &dim);
  MlirValue to = piperPermuteBy(rw, op, piperResult(cat, 0), r, s->perm);
  piperReplaceOp(rw, op, 1, &to);
  return (MlirOperation){NULL};
}

/* ---- elementwise ---- */

/* How an elementwise op's other operand z comes along when a permute p sinks below it. */
typedef enum {
  OTHER_NONE,     /* a unary op */
  OTHER_PERMUTED, /* z = permute(y, p): y */
  OTHER_RELAID,   /* z broadcasts to the result with its non-unit dims in x's order: reshaped
                     (and broadcast where the suffix rule does not reach) */
} OtherKind;

typedef struct {
  int64_t perm[PIPER_MAX_RANK];
  int permuted;          /* which operand is the permute (0 or 1) */
  OtherKind other;
  int64_t otherRank;     /* OTHER_RELAID: z's new shape, right-aligned to x */
  int64_t otherShape[PIPER_MAX_RANK];
  int suffixFold;        /* >0: no sinking; operand suffixFold-1 is a broadcast of a suffix */
} ElementwiseSink;

/* z (its broadcast source, if a broadcast) as the operand of the op in x's layout: the dims of
 * z right-aligned to the rank r result, moved by the inverse of p; fine when its non-unit
 * dims keep their order (a reshape moves them). Fills s->otherShape with leading 1s dropped. */
static bool relay(MlirValue z, int64_t r, const int64_t *p, ElementwiseSink *s) {
  int64_t rz = piperRank(z), padded[PIPER_MAX_RANK], moved[PIPER_MAX_RANK];
  if (rz > r) return false;
  for (int64_t i = 0; i < r; ++i) padded[i] = i < r - rz ? 1 : piperDim(z, i - (r - rz));
  for (int64_t i = 0; i < r; ++i) moved[p[i]] = padded[i]; /* out dim i is x dim p[i] */
  int64_t last = -1; /* the non-unit dims of padded, in moved's order, must be increasing */
  for (int64_t j = 0; j < r; ++j) {
    if (moved[j] == 1) continue;
    int64_t from = -1;
    for (int64_t i = 0; i < r; ++i)
      if (p[i] == j) from = i;
    if (from < last) return false;
    last = from;
  }
  int64_t lead = 0;
  while (lead < r - 1 && moved[lead] == 1) lead++;
  s->otherRank = r - lead;
  memcpy(s->otherShape, moved + lead, (size_t)s->otherRank * sizeof *moved);
  return true;
}

static bool matchElementwise(MlirOperation op, void *state, PiperWhy *w) {
  ElementwiseSink *s = state;
  MlirValue out = piperResult(op, 0);
  int64_t r = piperRank(out), q[PIPER_MAX_RANK];
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n == 1)
    return isUnaryElementwise(op) && !mlirOperationIsNull(permuteOf(piperOperand(op, 0), s->perm))
               ? (s->other = OTHER_NONE, true)
               : FAIL;
  if (n != 2) return FAIL;
  bool masked = piperIsOp(op, PIPER_TDAG_MASKED_FILL);
  if (!isBinaryElementwise(op) && !masked) return FAIL;
  /* an operand that is a broadcast of what the kernels read cyclically anyway */
  for (int k = masked ? 1 : 0; k < 2; ++k) {
    MlirOperation bc = piperDefOf(piperOperand(op, k), PIPER_TDAG_BROADCAST);
    if (!mlirOperationIsNull(bc) && piperSameShape(piperOperand(op, 1 - k), out) &&
        suffixOf(piperOperand(bc, 0), out))
      return s->suffixFold = k + 1, true;
  }
  if (masked) return FAIL;
  for (int k = 0; k < 2; ++k) {
    MlirValue a = piperOperand(op, k), z = piperOperand(op, 1 - k);
    if (!piperSameShape(a, out) || mlirOperationIsNull(permuteOf(a, s->perm))) continue;
    s->permuted = k;
    if (!mlirOperationIsNull(permuteOf(z, q)) && piperSameShape(z, out) &&
        !memcmp(q, s->perm, (size_t)r * sizeof *q))
      return s->other = OTHER_PERMUTED, true;
    if (piperSameShape(z, out) && mlirOperationIsNull(piperDefOf(z, PIPER_TDAG_BROADCAST)))
      continue; /* a whole activation in the result's layout: it would need a permute */
    MlirOperation bc = piperDefOf(z, PIPER_TDAG_BROADCAST);
    if (relay(mlirOperationIsNull(bc) ? z : piperOperand(bc, 0), r, s->perm, s))
      return s->other = OTHER_RELAID, true;
  }
  return FAIL;
}

static MlirOperation rewriteElementwise(MlirRewriterBase rw, MlirOperation op, void *state) {
  ElementwiseSink *s = state;
  MlirValue out = piperResult(op, 0);
  const PiperOpFacts *f = piperOpFacts(op);
  MlirNamedAttribute attrs[8];
  intptr_t na = ownAttrs(op, attrs, 8), n = mlirOperationGetNumOperands(op);
  int64_t r = piperRank(out), shape[PIPER_MAX_RANK];
  if (s->suffixFold) { /* binary(a, broadcast(y)) -> binary(a, y) */
    MlirValue ops[2] = {piperOperand(op, 0), piperOperand(op, 1)};
    int k = s->suffixFold - 1;
    ops[k] = piperOperand(mlirOpResultGetOwner(ops[k]), 0);
    PiperOpId id = f->id == PIPER_TDAG_ADD ? PIPER_TDAG_ADD_BCAST : f->id;
    piperShapeOf(out, shape);
    MlirValue to = piperResult(cloneOn(rw, op, id, 2, ops, r, shape, na, attrs), 0);
    piperReplaceOp(rw, op, 1, &to);
    return (MlirOperation){NULL};
  }
  for (int64_t i = 0; i < r; ++i) shape[s->perm[i]] = piperDim(out, i);
  MlirValue ops[2];
  ops[s->permuted] = piperOperand(mlirOpResultGetOwner(piperOperand(op, s->permuted)), 0);
  PiperOpId id = f->id;
  if (n == 2) {
    MlirValue z = piperOperand(op, 1 - s->permuted);
    if (s->other == OTHER_PERMUTED) {
      z = piperOperand(mlirOpResultGetOwner(z), 0);
    } else {
      MlirOperation bc = piperDefOf(z, PIPER_TDAG_BROADCAST);
      if (!mlirOperationIsNull(bc)) z = piperOperand(bc, 0);
      z = piperReshapeTo(rw, op, z, s->otherRank, s->otherShape);
      /* where the reshaped z is not a suffix of the result, the suffix rule cannot read it:
       * broadcast it over the dims from its first non-unit one */
      int64_t lead = 0;
      while (lead < s->otherRank && s->otherShape[lead] == 1) lead++;
      bool suffix = true;
      for (int64_t i = lead; i < s->otherRank; ++i)
        suffix &= s->otherShape[i] == shape[r - s->otherRank + i];
      if (!suffix) {
        int64_t from = r - (s->otherRank - lead);
        z = piperBroadcastTo(rw, op, z, r - from, shape + from);
      }
      if (id == PIPER_TDAG_ADD) id = PIPER_TDAG_ADD_BCAST;
    }
    ops[1 - s->permuted] = z;
    if (id == PIPER_TDAG_ADD && !piperSameShape(ops[0], ops[1])) id = PIPER_TDAG_ADD_BCAST;
  }
  MlirOperation sunk = cloneOn(rw, op, id, n, ops, r, shape, na, attrs);
  MlirValue to = piperPermuteBy(rw, op, piperResult(sunk, 0), r, s->perm);
  piperReplaceOp(rw, op, 1, &to);
  return (MlirOperation){NULL};
}

/* ---- the table and the pass ---- */

#define LAYOUT(ROOT, NAME, MATCH, REWRITE, STATE) \
  {PIPER_TDAG_##ROOT, NAME, MATCH, REWRITE, sizeof(STATE), false}
static const PiperPattern layoutPatterns[] = {
    LAYOUT(RESHAPE, "reshape", matchReshape, rewriteReshape, ReshapeFold),
    LAYOUT(PERMUTE, "permute", matchPermute, rewritePermute, PermuteFold),
    LAYOUT(BROADCAST, "broadcast", matchBroadcast, rewriteBroadcast, BroadcastFold),
    LAYOUT(SLICE, "slice", matchSlice, rewriteSlice, SliceFold),
    LAYOUT(CONCAT, "concat", matchConcat, rewriteConcat, ConcatSink),
    LAYOUT(MUL_SCALAR, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(ADD_SCALAR, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(POW_SCALAR, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(EXP, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(TANH, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(RSQRT, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(SILU, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(GELU_ERF, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(GELU, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(RELU, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(ADD, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(ADD_BCAST, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(SUB, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(MUL, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(DIV, "sink permute", matchElementwise, rewriteElementwise, ElementwiseSink),
    LAYOUT(MASKED_FILL, "suffix mask", matchElementwise, rewriteElementwise, ElementwiseSink),
};
_Static_assert(sizeof(ReshapeFold) <= PIPER_PATTERN_STATE_MAX &&
                   sizeof(ElementwiseSink) <= PIPER_PATTERN_STATE_MAX,
               "a pattern's state must fit the driver's buffer");

const PiperPattern *piperLayoutPatterns(size_t *n) {
  *n = sizeof layoutPatterns / sizeof layoutPatterns[0];
  return layoutPatterns;
}

MlirLogicalResult piperCanonicalizeLayout(MlirOperation module) {
  size_t n;
  const PiperPattern *p = piperLayoutPatterns(&n);
  int64_t rewrites = 0;
  return piperApplyPatterns(module, p, n, &rewrites, NULL);
}

static MlirLogicalResult runCanonicalize(MlirOperation module, const char *arg) {
  return piperCanonicalizeLayout(module);
}

MlirPass piperCreateCanonicalizePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-canonicalize",
                               "layout canonical forms of the general ops: permutes sunk to "
                               "their users, reshapes, broadcasts and slices folded",
                               runCanonicalize, arg);
}
