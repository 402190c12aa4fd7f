/* --piper-fuse: chains of general tensor ops (what python/piper exports) folded into the fused
 * ops the kernels, the strategy passes and the bf16 policy know. Rewrite patterns on MLIR's C
 * API (passes/rewrite.h), applied greedily after the layout canonical forms of
 * passes/canonicalize.c (applied with them, since a fusion leaves layout ops for them to
 * fold), then the general ops left without users erased:
 *
 *   bmm(softmax_last(mask(bmm(Q, K) * c)), V) with c = 1/sqrt(D), the mask causal
 *     (masked_fill of the cells above the diagonal, or an added triangle holding them, with
 *     -inf or any value <= -1e30 such as torch.finfo(float32).min: exp underflows to exactly
 *     0 either way), and Q, K, V each a strided view of a (B,T,N) value (a projection) through
 *     reshapes, permutes, broadcasts and slices: per head h a block of D features at
 *     offset + h * stride of each token's N (the heads' transpose anywhere, GPT-NeoX's
 *     per-head packed qkv, GPT-2's thirds), K and V maybe repeating KV < H heads (GQA's
 *     repeat_kv before or after the transpose, multi-query: KV = 1)
 *       -> tdag.gqa_attention(q, k, v), or tdag.attention(qkv) when q, k, v are the thirds of
 *          one (B,T,3C) value with as many kv heads as heads
 *   (x * rsqrt(mean(x^2, -1, keepdim) + eps)) * w -> tdag.rmsnorm(x, w) {eps}; w any vector
 *     of the last dim ((1 + w) as Gemma writes it); x of (..., H, D) with w of D (Qwen3's
 *     q_norm on the heads) is normalised as (..., H*D) in chunks of D
 *   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> tdag.gelu(x)
 *   silu(a) * b, same shapes -> tdag.swiglu(a, b)
 *   embed(tokens, wte) + wpe[:T] (maybe reshaped to (1,T,C)) -> tdag.embedding(tokens, wte, wpe)
 *   x * cos + rotate_half(x) * sin, x (B,T,H,R), the tables rotate-half tdag.rope_tables of
 *     head_dim R (the exporter recognised them) -> tdag.rope(x) {head_dim = R, theta}: a RoPE
 *     applied after the heads' transpose reaches this form by canonicalization; a partial
 *     rotary (GPT-NeoX: R < D, the rest of each head passed through) is a rope of the slice
 *   Meta's interleaved RoPE, stack(xr cos - xi sin, xr sin + xi cos, -1) of the pairs
 *     (xr, xi) = x.reshape(..., -1, 2).unbind(-1) over tables of one column per pair
 *     -> tdag.rope(cat(xr, xi, -1)), its output interleaved back
 *
 * Each pattern checks every constant (the scale, the mask's diagonal and values, the softmax's
 * dim, eps > 0, GELU's coefficients, RoPE's tables and halves) and leaves a chain that differs
 * alone: it still runs, on the general ops' kernels. When asked (--fusion-report), the pass
 * says for each op left unfused that starts a pattern's chain which op stopped the match that
 * got furthest (test/passes/fuse*.mlir show each pattern firing and not firing). A training
 * graph (one --piper-autodiff already made) is left as it is: its backward reads the forward's
 * intermediate values, which fusing the forward would not remove. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/rewrite.h"
#include "piper/checked.h"

#define GELU_SQRT_2_OVER_PI 0.7978845608028654 /* sqrt(2 / pi) */
/* A mask value at or below this works as -inf in a softmax: a finite fp32 score plus it, less
 * the row's max, is below -103.98, where expf underflows to exactly 0. */
#define MASKED_AT_MOST -1e30

static MlirType typeOf(MlirValue v) { return mlirValueGetType(v); }

/* For a commutative binary op: sets *a, *b to its operands so that `first` (a predicate) holds
 * for *a, trying both orders; false if neither does. */
typedef bool (*ValuePred)(MlirValue v, void *ctx);
static bool eitherOrder(MlirOperation op, ValuePred first, void *ctx, MlirValue *a,
                        MlirValue *b) {
  for (int k = 0; k < 2; ++k) {
    *a = piperOperand(op, k);
    *b = piperOperand(op, 1 - k);
    if (first(*a, ctx)) return true;
  }
  return false;
}

/* The op of `v` of id `id` with scalar attribute `attr` near `want`, else null. */
static MlirOperation scalarOp(MlirValue v, PiperOpId id, const char *attr, double want) {
  MlirOperation op = piperDefOf(v, id);
  if (mlirOperationIsNull(op) || !piperNear(piperGetFloatAttr(op, attr, NAN), want))
    return (MlirOperation){NULL};
  return op;
}

/* The op defining v (null when v is not an op's result), for a miss's location. */
static MlirOperation ownerOf(MlirValue v) {
  return mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
}

/* ---- strided views: a chain of layout ops read as one ---- */

/* A value read as elements of another: value[i...] = base_flat[offset + sum_k idx_k *
 * stride_k] over the atoms (size, stride) of its dims in row-major order; a broadcast dim has
 * stride 0. Layout ops (reshape, permute, broadcast, slice) only change the atoms. */
enum { VIEW_MAX_ATOMS = 24 };
typedef struct {
  int64_t size, stride;
} Atom;
typedef struct {
  MlirValue base;                /* the value read: the first op of the chain that is not a
                                    layout op */
  int64_t offset;                /* elements into base */
  int64_t nAtoms;
  Atom atoms[VIEW_MAX_ATOMS];
  int64_t rank;
  int64_t end[PIPER_MAX_RANK];   /* dim i holds atoms [end[i-1], end[i]) */
} View;

static int64_t viewBegin(const View *v, int64_t d) { return d ? v->end[d - 1] : 0; }

/* The view of `base` itself: one atom per dim, contiguous. */
static bool viewOfBase(MlirValue base, View *v) {
  int64_t r = piperRank(base), stride = 1;
  if (r > PIPER_MAX_RANK) return false;
  v->base = base;
  v->offset = 0;
  v->rank = r;
  v->nAtoms = r;
  for (int64_t i = r - 1; i >= 0; --i) {
    v->atoms[i] = (Atom){piperDim(base, i), stride};
    stride *= piperDim(base, i);
    v->end[i] = i + 1;
  }
  return true;
}

/* The view regrouped into `shape`: atoms split where a dim boundary falls inside one. */
static bool viewReshape(View *v, int64_t rank, const int64_t *shape) {
  Atom flat[VIEW_MAX_ATOMS];
  int64_t n = 0, k = 0;
  for (int64_t i = 0; i < v->nAtoms; ++i)
    if (v->atoms[i].size != 1) flat[n++] = v->atoms[i];
  View out = *v;
  out.nAtoms = 0;
  out.rank = rank;
  if (rank > PIPER_MAX_RANK) return false;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t want = shape[d], have = 1;
    if (want == 1) {
      if (out.nAtoms >= VIEW_MAX_ATOMS) return false;
      out.atoms[out.nAtoms++] = (Atom){1, 0};
    }
    while (have < want) {
      if (k >= n || out.nAtoms >= VIEW_MAX_ATOMS) return false;
      Atom a = flat[k];
      if (have * a.size <= want) {
        out.atoms[out.nAtoms++] = a;
        have *= a.size;
        ++k;
      } else { /* split a: its outer part here, its inner part for the next dim */
        int64_t outer = want / have;
        if (want % have || a.size % outer) return false;
        out.atoms[out.nAtoms++] = (Atom){outer, a.stride * (a.size / outer)};
        flat[k] = (Atom){a.size / outer, a.stride};
        have = want;
      }
    }
    if (have != want) return false;
    out.end[d] = out.nAtoms;
  }
  if (k != n) return false;
  *v = out;
  return true;
}

static bool viewPermute(View *v, const int64_t *perm) {
  View out = *v;
  out.nAtoms = 0;
  for (int64_t d = 0; d < v->rank; ++d) {
    for (int64_t a = viewBegin(v, perm[d]); a < v->end[perm[d]]; ++a)
      out.atoms[out.nAtoms++] = v->atoms[a];
    out.end[d] = out.nAtoms;
  }
  *v = out;
  return true;
}

/* numpy broadcasting to `shape`: new leading dims and dims of 1 read with stride 0. */
static bool viewBroadcast(View *v, int64_t rank, const int64_t *shape) {
  if (rank < v->rank || rank > PIPER_MAX_RANK) return false;
  View out = *v;
  out.nAtoms = 0;
  out.rank = rank;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t src = d - (rank - v->rank), size = 1;
    if (src >= 0)
      for (int64_t a = viewBegin(v, src); a < v->end[src]; ++a) size *= v->atoms[a].size;
    if (out.nAtoms + (src >= 0 ? v->end[src] - viewBegin(v, src) : 1) > VIEW_MAX_ATOMS)
      return false;
    if (src < 0 || (size == 1 && shape[d] != 1)) {
      out.atoms[out.nAtoms++] = (Atom){shape[d], 0};
    } else {
      for (int64_t a = viewBegin(v, src); a < v->end[src]; ++a)
        out.atoms[out.nAtoms++] = v->atoms[a];
    }
    out.end[d] = out.nAtoms;
  }
  *v = out;
  return true;
}

/* [start, start + size) of dim d: a dim of several atoms narrows only on its outer one. */
static bool viewSlice(View *v, int64_t d, int64_t start, int64_t size) {
  int64_t first = viewBegin(v, d);
  while (first < v->end[d] - 1 && v->atoms[first].size == 1) ++first;
  int64_t inner = 1;
  for (int64_t a = first + 1; a < v->end[d]; ++a) inner *= v->atoms[a].size;
  if (first >= v->end[d] || start % inner || size % inner) return false;
  v->offset += (start / inner) * v->atoms[first].stride;
  v->atoms[first].size = size / inner;
  return true;
}

/* The view of `value` over the first value up its chain of layout ops that is not one. */
static bool viewOf(MlirValue value, View *v) {
  MlirOperation chain[32];
  int n = 0;
  MlirValue x = value;
  for (;;) {
    MlirOperation op = ownerOf(x);
    const PiperOpFacts *f = mlirOperationIsNull(op) ? NULL : piperOpFacts(op);
    if (!f || (f->id != PIPER_TDAG_RESHAPE && f->id != PIPER_TDAG_PERMUTE &&
               f->id != PIPER_TDAG_BROADCAST && f->id != PIPER_TDAG_SLICE))
      break;
    if (n == 32) return false;
    chain[n++] = op;
    x = piperOperand(op, 0);
  }
  if (!viewOfBase(x, v)) return false;
  for (int i = n - 1; i >= 0; --i) {
    MlirOperation op = chain[i];
    MlirValue out = piperResult(op, 0);
    int64_t shape[PIPER_MAX_RANK], r = piperShapeOf(out, shape), perm[PIPER_MAX_RANK];
    bool ok;
    switch (piperOpFacts(op)->id) {
    case PIPER_TDAG_RESHAPE: ok = viewReshape(v, r, shape); break;
    case PIPER_TDAG_PERMUTE: ok = piperPermuteOf(op, r, perm) && viewPermute(v, perm); break;
    case PIPER_TDAG_BROADCAST: ok = viewBroadcast(v, r, shape); break;
    default:
      ok = viewSlice(v, piperGetIntAttr(op, "dim", 0), piperGetIntAttr(op, "start", 0),
                     piperDim(out, piperGetIntAttr(op, "dim", 0)));
    }
    if (!ok) return false;
  }
  return true;
}

/* ---- attention ---- */

/* Where one of attention's operands reads its heads: per head h (of `heads`), D features at
 * base row feature offset + h * headStride of each token's N features, the base read as
 * (B,T,N). */
typedef struct {
  MlirValue base;
  int64_t N;           /* features per token in base */
  int64_t offset;      /* of head 0 in a token's features */
  int64_t heads;       /* distinct heads read (KV for a repeated k or v) */
  int64_t headStride;  /* features between heads */
} Heads;

/* The atoms of dim d, unit ones dropped and contiguous neighbours merged, into out (at most
 * max); their count (max + 1: more). */
static int64_t atomsOf(const View *v, int64_t d, Atom *out, int64_t max) {
  int64_t n = 0;
  for (int64_t a = viewBegin(v, d); a < v->end[d]; ++a) {
    Atom t = v->atoms[a];
    if (t.size == 1) continue;
    if (n && out[n - 1].stride == t.size * t.stride) /* contiguous with the one before */
      out[n - 1] = (Atom){out[n - 1].size * t.size, t.stride};
    else if (n < max)
      out[n++] = t;
    else
      return max + 1;
  }
  return n;
}

/* The single stride of dim d (of size > 1), or -1 (several atoms); 0 for a dim of size 1. */
static int64_t strideOf(const View *v, int64_t d) {
  Atom a[4];
  int64_t n = atomsOf(v, d, a, 4);
  return n == 0 ? 0 : n == 1 ? a[0].stride : -1;
}

/* x, one of attention's matmul operands, read as (B, H, T, D) by `order` (the dims of x as
 * laid out: b, h, t, d for q and v, b, h, d, t for k^T): fills *h. */
static bool headsOf(MlirValue x, const int64_t *dims, int64_t dOf, int64_t tOf, Heads *h,
                    PiperWhy *w, const char *which) {
  View v;
  MlirOperation at = ownerOf(x);
  if (!viewOf(x, &v) || !viewReshape(&v, 4, dims))
    return piperMiss(w, at, "%s is not a view of one value through reshapes, permutes, "
                            "broadcasts and slices read as (B, H, T, D)", which);
  int64_t B = dims[0], H = dims[1], T = dims[tOf], D = dims[dOf];
  int64_t sB = strideOf(&v, 0), sT = strideOf(&v, tOf), sD = strideOf(&v, dOf);
  Atom ha[4];
  int64_t nh = atomsOf(&v, 1, ha, 4);
  /* heads: (H, s), or GQA's (KV, s)(rep, 0), or multi-query's (H, 0) */
  h->heads = nh == 0 ? 1 : ha[0].stride == 0 ? 1 : ha[0].size;
  h->headStride = nh == 0 || ha[0].stride == 0 ? 0 : ha[0].stride;
  bool headsOk = nh <= 1 || (nh == 2 && ha[1].stride == 0 && ha[0].stride != 0);
  int64_t N = sT;
  if (!headsOk)
    return piperMiss(w, at, "%s repeats its kv heads in another order than repeat_kv's (query "
                            "head h reading kv head h // (H / KV))", which);
  if (sD != (D > 1 ? 1 : 0) || (T > 1 && sT <= 0) || (B > 1 && sB != T * N) ||
      piperTensorNumel(typeOf(v.base)) != B * T * N)
    return piperMiss(w, at, "%s does not read each head's D features contiguously from the "
                            "rows of one (B, T, N) value", which);
  (void)H;
  h->base = v.base;
  h->N = N;
  h->offset = v.offset;
  if (h->offset + (h->heads - 1) * h->headStride + D > N ||
      (h->heads > 1 && h->headStride < D))
    return piperMiss(w, at, "%s's heads overlap or run past a token's features", which);
  return piperStep(w, at);
}

/* The (B,T,heads*D) value the heads of h are, built from its base before `at`: the base
 * itself, a slice of its last dim (heads side by side), or the D-feature slice of each head
 * of a per-head packed base (heads headStride apart). `base3` is the base as (B,T,N), made
 * once for all three operands so that their slices share it, and *perHead its per-head view
 * (B,T,N/headStride,headStride), likewise. */
static MlirValue materialise(MlirRewriterBase rw, MlirOperation at, const Heads *h,
                             MlirValue base3, int64_t B, int64_t T, int64_t D,
                             MlirValue *perHead) {
  if (h->heads == 1 || h->headStride == D) return piperSliceOf(rw, at, base3, 2, h->offset,
                                                               h->heads * D);
  int64_t packed[4] = {B, T, h->N / h->headStride, h->headStride};
  MlirType want = piperTensorType(mlirOperationGetContext(at), 4, packed,
                                  mlirShapedTypeGetElementType(typeOf(base3)));
  MlirOperation made = mlirValueIsNull(*perHead) ? (MlirOperation){NULL} : ownerOf(*perHead);
  MlirValue x = !mlirOperationIsNull(made) && mlirTypeEqual(typeOf(*perHead), want) &&
                        mlirValueEqual(piperOperand(made, 0), base3)
                    ? *perHead
                    : piperReshapeTo(rw, at, base3, 4, packed);
  *perHead = x;
  x = piperSliceOf(rw, at, x, 3, h->offset, D);
  int64_t flat[3] = {B, T, h->heads * D};
  return piperReshapeTo(rw, at, x, 3, flat);
}

/* Whether `value` (a masked_fill's fill, or a triangle's cells) works as -inf in softmax. */
static bool minusInfinity(double value) { return value <= MASKED_AT_MOST; }

/* The causal mask of a masked_fill(S, mask) or an add(S, mask): a triangle of diagonal 0
 * (through reshapes and broadcasts) whose cells above the diagonal are masked (masked_fill:
 * nonzero, add: -inf or <= -1e30) and whose others are 0, of S's (T,T). */
static bool isCausalMask(MlirValue mask, int64_t T, bool additive) {
  MlirOperation op;
  while (!mlirOperationIsNull(op = piperDefOf(mask, PIPER_TDAG_RESHAPE)) ||
         !mlirOperationIsNull(op = piperDefOf(mask, PIPER_TDAG_BROADCAST)))
    mask = piperOperand(op, 0);
  MlirOperation tri = piperDefOf(mask, PIPER_TDAG_TRIANGLE);
  if (mlirOperationIsNull(tri) || piperDim(piperResult(tri, 0), 0) != T ||
      piperDim(piperResult(tri, 0), 1) != T || piperGetIntAttr(tri, "diagonal", 1) != 0)
    return false;
  double inside = piperGetFloatAttr(tri, "inside", NAN);
  double outside = piperGetFloatAttr(tri, "outside", NAN);
  return inside == 0.0 && (additive ? minusInfinity(outside) : outside != 0.0 && !isnan(outside));
}

/* The tdag.param a mask was read from through reshapes and broadcasts, or null. */
static MlirOperation storedMask(MlirValue mask) {
  MlirOperation op;
  while (!mlirOperationIsNull(op = piperDefOf(mask, PIPER_TDAG_RESHAPE)) ||
         !mlirOperationIsNull(op = piperDefOf(mask, PIPER_TDAG_BROADCAST)))
    mask = piperOperand(op, 0);
  return piperDefOf(mask, PIPER_TDAG_PARAM);
}

/* The scores S (B,H,T,T) of a causally masked softmax input, or null (explained in w). */
static MlirValue causalScores(MlirValue masked, int64_t T, PiperWhy *w) {
  MlirOperation mf = piperDefOf(masked, PIPER_TDAG_MASKED_FILL);
  if (!mlirOperationIsNull(mf)) {
    if (!minusInfinity(piperGetFloatAttr(mf, "value", 0.0)))
      return piperMiss(w, mf, "masked_fill's value %g is not -inf or <= -1e30",
                       piperGetFloatAttr(mf, "value", 0.0)),
             (MlirValue){NULL};
    if (!isCausalMask(piperOperand(mf, 1), T, false))
      return piperMiss(w, mf, "masked_fill's mask is not the causal triangle (diagonal 0) of "
                              "the scores' (T, T)"),
             (MlirValue){NULL};
    piperStep(w, mf);
    return piperOperand(mf, 0);
  }
  MlirOperation add = piperDefOf(masked, PIPER_TDAG_ADD_BCAST);
  if (mlirOperationIsNull(add)) add = piperDefOf(masked, PIPER_TDAG_ADD);
  for (int k = 0; !mlirOperationIsNull(add) && k < 2; ++k)
    if (isCausalMask(piperOperand(add, 1 - k), T, true) && piperRank(piperOperand(add, k)) == 4) {
      piperStep(w, add);
      return piperOperand(add, k);
    }
  for (int k = 0; !mlirOperationIsNull(add) && k < 2; ++k) {
    MlirOperation stored = storedMask(piperOperand(add, k));
    char name[96];
    if (!mlirOperationIsNull(stored) && piperGetStringAttr(stored, "name", name, sizeof name))
      return piperMiss(w, add, "the mask is the stored constant %s, whose values the compiler "
                               "cannot see (the exporter writes a causal mask as tdag.triangle "
                               "only when it is a (T, T) triangle with leading dims of 1)",
                       name),
             (MlirValue){NULL};
  }
  return piperMiss(w, ownerOf(masked),
                   "softmax's input is not the scores with a causal mask (masked_fill of the "
                   "cells above the diagonal, or an added triangle of -inf or <= -1e30)"),
         (MlirValue){NULL};
}

typedef struct {
  int64_t B, H, T, D;
  Heads q, k, v;
} AttentionMatch;

/* tdag.bmm root: O = P V with P = softmax(causal(Q K^T * 1/sqrt(D))) over the last dim. */
static bool matchAttention(MlirOperation op, void *state, PiperWhy *w) {
  AttentionMatch *m = state;
  if (piperGetIntAttr(op, "transpose_a", 1) || piperGetIntAttr(op, "transpose_b", 1))
    return piperMiss(w, op, "a matmul with a transposed operand attribute");
  MlirValue probs = piperThroughReshapes(piperOperand(op, 0));
  MlirOperation sm = piperDefOf(probs, PIPER_TDAG_SOFTMAX);
  if (mlirOperationIsNull(sm)) return false; /* not attention's second matmul: nothing to say */
  piperStep(w, op);
  if (piperRank(probs) != 4 || piperGetIntAttr(sm, "dim", 0) != 3)
    return piperMiss(w, sm, "softmax is not over the last dim of (B, H, T, T) scores");
  piperStep(w, sm);
  m->B = piperDim(probs, 0), m->H = piperDim(probs, 1), m->T = piperDim(probs, 2);
  if (piperDim(probs, 3) != m->T)
    return piperMiss(w, sm, "the scores are not (B, H, T, T): queries and keys differ");
  MlirValue scaled = causalScores(piperOperand(sm, 0), m->T, w);
  if (mlirValueIsNull(scaled)) return false;
  MlirOperation scale = piperDefOf(piperThroughReshapes(scaled), PIPER_TDAG_MUL_SCALAR);
  if (mlirOperationIsNull(scale)) scale = piperDefOf(scaled, PIPER_TDAG_MUL_SCALAR);
  if (mlirOperationIsNull(scale))
    return piperMiss(w, ownerOf(scaled), "the scores are not scaled by one constant");
  piperStep(w, scale);
  MlirOperation qk = piperDefOf(piperThroughReshapes(piperOperand(scale, 0)), PIPER_TDAG_BMM);
  if (mlirOperationIsNull(qk) || piperGetIntAttr(qk, "transpose_a", 1) ||
      piperGetIntAttr(qk, "transpose_b", 1))
    return piperMiss(w, scale, "the scaled scores are not one matmul q @ k^T");
  piperStep(w, qk);
  int64_t D = piperDim(piperOperand(qk, 0), -1);
  m->D = D;
  int64_t bhtd[4] = {m->B, m->H, m->T, D}, bhdt[4] = {m->B, m->H, D, m->T};
  if (piperTensorNumel(typeOf(piperOperand(qk, 0))) != m->B * m->H * m->T * D ||
      piperTensorNumel(typeOf(piperOperand(op, 1))) != m->B * m->H * m->T * D)
    return piperMiss(w, qk, "q or v is not (B, H, T, D) for the scores' (B, H, T, T)");
  if (!headsOf(piperOperand(qk, 0), bhtd, 3, 2, &m->q, w, "q") ||
      !headsOf(piperOperand(qk, 1), bhdt, 2, 3, &m->k, w, "k^T") ||
      !headsOf(piperOperand(op, 1), bhtd, 3, 2, &m->v, w, "v"))
    return false;
  if (m->q.heads != m->H)
    return piperMiss(w, qk, "q reads %lld distinct heads of its %lld", (long long)m->q.heads,
                     (long long)m->H);
  if (m->k.heads != m->v.heads || m->H % m->k.heads)
    return piperMiss(w, qk, "k and v read %lld and %lld kv heads, which do not group the %lld "
                            "query heads alike", (long long)m->k.heads, (long long)m->v.heads,
                     (long long)m->H);
  if (!piperNear(piperGetFloatAttr(scale, "value", NAN), 1.0 / sqrt((double)D)))
    return piperMiss(w, scale, "the scale %g is not 1/sqrt(%lld)",
                     piperGetFloatAttr(scale, "value", NAN), (long long)D);
  return true;
}

/* The (B,T,3C) value whose thirds, in order, q, k and v (each (B,T,C), maybe reshaped) are,
 * when there are as many kv heads as heads (GPT-2's c_attn split); else null. */
static MlirValue packedThirds(const MlirValue *qkv, int64_t H, int64_t KV) {
  MlirOperation thirds[3];
  int64_t C = piperDim(qkv[0], -1);
  bool packed = KV == H;
  for (int i = 0; packed && i < 3; ++i) {
    thirds[i] = piperDefOf(piperThroughReshapes(qkv[i]), PIPER_TDAG_SLICE);
    packed = !mlirOperationIsNull(thirds[i]) &&
             mlirValueEqual(piperOperand(thirds[i], 0), piperOperand(thirds[0], 0)) &&
             piperGetIntAttr(thirds[i], "dim", -1) == 2 &&
             piperGetIntAttr(thirds[i], "start", -1) == i * C &&
             piperDim(piperOperand(thirds[i], 0), 2) == 3 * C &&
             piperRank(piperOperand(thirds[i], 0)) == 3;
  }
  return packed ? piperOperand(thirds[0], 0) : (MlirValue){NULL};
}

/* The (B,T,N) form of a base, reused when q, k and v share it. */
static MlirValue base3Of(MlirRewriterBase rw, MlirOperation at, const Heads *h, int64_t B,
                         int64_t T, MlirValue *cache, MlirValue *cacheOf) {
  for (int i = 0; i < 3; ++i)
    if (!mlirValueIsNull(cacheOf[i]) && mlirValueEqual(cacheOf[i], h->base)) return cache[i];
  int64_t shape[3] = {B, T, h->N};
  MlirValue v = piperReshapeTo(rw, at, h->base, 3, shape);
  for (int i = 0; i < 3; ++i)
    if (mlirValueIsNull(cacheOf[i])) {
      cacheOf[i] = h->base;
      cache[i] = v;
      break;
    }
  return v;
}

static MlirOperation rewriteAttention(MlirRewriterBase rw, MlirOperation op, void *state) {
  AttentionMatch *m = state;
  static const int64_t qvPerm[4] = {0, 2, 1, 3};
  MlirContext ctx = mlirOperationGetContext(op);
  MlirType f32 = mlirF32TypeGet(ctx);
  int64_t B = m->B, T = m->T, H = m->H, D = m->D, KV = m->k.heads;
  MlirValue cache[3] = {{NULL}, {NULL}, {NULL}}, cacheOf[3] = {{NULL}, {NULL}, {NULL}};
  MlirValue qkv[3], perHead = {NULL}; /* a per-head packed base's (B,T,H,3D) view, once */
  const Heads *hs[3] = {&m->q, &m->k, &m->v};
  for (int i = 0; i < 3; ++i)
    qkv[i] = materialise(rw, op, hs[i], base3Of(rw, op, hs[i], B, T, cache, cacheOf), B, T, D,
                         &perHead);
  int64_t qShape[3] = {B, T, H * D}, lseShape[3] = {B, H, T};
  MlirType types[2] = {piperTensorType(ctx, 3, qShape, f32),
                       piperTensorType(ctx, 3, lseShape, f32)};
  MlirNamedAttribute attrs[2] = {piperIntAttr(ctx, "heads", H), piperIntAttr(ctx, "kv_heads", KV)};
  MlirValue whole = packedThirds(qkv, H, KV);
  MlirOperation fused = mlirValueIsNull(whole)
                            ? piperBuild(rw, op, PIPER_TDAG_GQA_ATTENTION, 3, qkv, 2, types, 2,
                                         attrs)
                            : piperBuild(rw, op, PIPER_TDAG_ATTENTION, 1, &whole, 2, types, 1,
                                         attrs);
  /* out (B,T,H*D) back to the bmm's (..,T,D) through (B,T,H,D) and (B,H,T,D): the layout ops
   * after the bmm undo these, and the canonical forms remove both */
  int64_t bthd[4] = {B, T, H, D};
  MlirValue o = piperReshapeTo(rw, op, piperResult(fused, 0), 4, bthd);
  o = piperPermuteBy(rw, op, o, 4, qvPerm);
  MlirValue res = piperResult(op, 0);
  int64_t resShape[PIPER_MAX_RANK], r = piperShapeOf(res, resShape);
  MlirValue to = piperReshapeTo(rw, op, o, r, resShape);
  piperReplaceOp(rw, op, 1, &to);
  return fused;
}

/* gqa_attention(q, k, v) with q, k, v the thirds of one projection -> attention(qkv): the
 * exported scaled_dot_product_attention of a fused c_attn */
typedef struct {
  MlirValue whole;
} PackedMatch;

static bool matchPackedAttention(MlirOperation op, void *state, PiperWhy *w) {
  PackedMatch *m = state;
  MlirValue qkv[3] = {piperOperand(op, 0), piperOperand(op, 1), piperOperand(op, 2)};
  m->whole = packedThirds(qkv, piperGetIntAttr(op, "heads", 0),
                          piperGetIntAttr(op, "kv_heads", 0));
  return !mlirValueIsNull(m->whole);
}

static MlirOperation rewritePackedAttention(MlirRewriterBase rw, MlirOperation op, void *state) {
  PackedMatch *m = state;
  MlirContext ctx = mlirOperationGetContext(op);
  MlirType types[2] = {typeOf(piperResult(op, 0)), typeOf(piperResult(op, 1))};
  MlirNamedAttribute heads = piperIntAttr(ctx, "heads", piperGetIntAttr(op, "heads", 0));
  MlirOperation a = piperBuild(rw, op, PIPER_TDAG_ATTENTION, 1, &m->whole, 2, types, 1, &heads);
  MlirValue res[2] = {piperResult(a, 0), piperResult(a, 1)};
  piperReplaceOp(rw, op, 2, res);
  return a;
}

/* ---- RMSNorm, rooted at tdag.mul ---- */

/* What an RMSNorm's normalised value was computed from. */
typedef struct {
  MlirValue x;  /* the value normalised */
  double eps;   /* added to the mean square */
  MlirValue w;  /* the weight */
  PiperWhy *why;
} NormMatch;

/* rstd = rsqrt(mean(x^2 over the last dim, keepdim) + eps), possibly broadcast back to x's
 * shape, of the value m->x (matched when set, set otherwise); m->eps gets eps. */
static bool isRstd(MlirValue v, NormMatch *m) {
  PiperWhy *w = m->why;
  MlirOperation bc = piperDefOf(v, PIPER_TDAG_BROADCAST);
  if (!mlirOperationIsNull(bc)) v = piperOperand(bc, 0);
  MlirOperation rs = piperDefOf(v, PIPER_TDAG_RSQRT);
  if (mlirOperationIsNull(rs)) return false;
  piperStep(w, rs);
  MlirOperation add = piperDefOf(piperOperand(rs, 0), PIPER_TDAG_ADD_SCALAR);
  if (mlirOperationIsNull(add) || !(piperGetFloatAttr(add, "value", 0.0) > 0.0))
    return piperMiss(w, rs, "rsqrt's operand is not a mean square plus an eps > 0");
  piperStep(w, add);
  MlirValue mean = piperOperand(add, 0);
  MlirOperation scale = piperDefOf(mean, PIPER_TDAG_MUL_SCALAR);
  MlirOperation sum =
      mlirOperationIsNull(scale) ? scale : piperDefOf(piperOperand(scale, 0), PIPER_TDAG_SUM_TO);
  if (mlirOperationIsNull(sum)) return piperMiss(w, add, "eps is not added to a mean");
  MlirValue sq = piperOperand(sum, 0);
  int64_t r = piperRank(sq), C = piperDim(sq, -1);
  if (piperRank(mean) != r || piperDim(mean, -1) != 1 ||
      !piperNear(piperGetFloatAttr(scale, "value", NAN), 1.0 / (double)C))
    return piperMiss(w, scale, "not a mean over the last dim alone (keepdim)");
  for (int64_t i = 0; i < r - 1; ++i)
    if (piperDim(mean, i) != piperDim(sq, i))
      return piperMiss(w, sum, "not a mean over the last dim alone (keepdim)");
  piperStep(w, scale);
  piperStep(w, sum);
  MlirValue base;
  MlirOperation pw = scalarOp(sq, PIPER_TDAG_POW_SCALAR, "exponent", 2.0);
  MlirOperation mm = piperDefOf(sq, PIPER_TDAG_MUL);
  if (!mlirOperationIsNull(pw)) base = piperOperand(pw, 0);
  else if (!mlirOperationIsNull(mm) && mlirValueEqual(piperOperand(mm, 0), piperOperand(mm, 1)))
    base = piperOperand(mm, 0);
  else
    return piperMiss(w, sum, "the mean is not of a square");
  piperStep(w, ownerOf(sq));
  if (!mlirValueIsNull(m->x) && !mlirValueEqual(m->x, base))
    return piperMiss(w, ownerOf(sq), "the statistic is of another tensor than the one it "
                                     "scales");
  m->x = base;
  m->eps = piperGetFloatAttr(add, "value", 0.0);
  return true;
}

/* normed = x * rstd(x), either order (ctx: the NormMatch to fill) */
static bool isNormed(MlirValue v, void *ctx) {
  NormMatch *m = ctx;
  MlirOperation mul = piperDefOf(v, PIPER_TDAG_MUL);
  for (int k = 0; !mlirOperationIsNull(mul) && k < 2; ++k) {
    NormMatch t = {piperOperand(mul, k), 0.0, {NULL}, m->why};
    if (piperSameShape(t.x, v) && isRstd(piperOperand(mul, 1 - k), &t)) {
      piperStep(m->why, mul);
      m->x = t.x;
      m->eps = t.eps;
      return true;
    }
  }
  return false;
}

/* mul(normed, w), w a vector of the last dim -> rmsnorm(x, w) {eps} */
static bool matchRmsnorm(MlirOperation op, void *state, PiperWhy *w) {
  NormMatch *m = state;
  MlirValue normed;
  m->why = w;
  m->x = (MlirValue){NULL};
  if (!eitherOrder(op, isNormed, m, &normed, &m->w)) return false;
  if (piperRank(m->w) != 1 || piperDim(m->w, 0) != piperDim(normed, -1))
    return piperMiss(w, op, "the normalised value is scaled by something other than a vector "
                            "of its last dim");
  if (!piperSameShape(normed, piperResult(op, 0)))
    return piperMiss(w, op, "the weighted result is not the normalised value's shape");
  return piperStep(w, op);
}

static MlirOperation rewriteRmsnorm(MlirRewriterBase rw, MlirOperation op, void *state) {
  NormMatch *m = state;
  MlirContext ctx = mlirOperationGetContext(op);
  int64_t shape[PIPER_MAX_RANK], r = piperShapeOf(m->x, shape);
  MlirValue x = m->x;
  /* (..., H, D) normalised per head: rmsnorm's chunks of D on (..., H*D), the zoo's q_norm */
  if (r >= 4) {
    shape[r - 2] *= shape[r - 1];
    x = piperReshapeTo(rw, op, x, --r, shape);
  }
  int64_t rstd[PIPER_MAX_RANK];
  memcpy(rstd, shape, sizeof rstd);
  rstd[r - 1] = shape[r - 1] / piperDim(m->w, 0);
  MlirType types[2] = {typeOf(x), piperTensorType(ctx, r, rstd, mlirF32TypeGet(ctx))};
  MlirNamedAttribute a = piperF64Attr(ctx, "eps", m->eps);
  MlirValue ops[2] = {x, m->w};
  MlirOperation n = piperBuild(rw, op, PIPER_TDAG_RMSNORM, 2, ops, 2, types, 1, &a);
  int64_t out[PIPER_MAX_RANK], ro = piperShapeOf(piperResult(op, 0), out);
  MlirValue y = piperReshapeTo(rw, op, piperResult(n, 0), ro, out);
  piperReplaceOp(rw, op, 1, &y);
  return n;
}

/* ---- GELU (tanh), rooted at tdag.mul ---- */

typedef struct {
  MlirValue x;
} GeluMatch;

/* 0.5 x, its x to *ctx */
static bool isHalfX(MlirValue v, void *ctx) {
  MlirOperation h = scalarOp(v, PIPER_TDAG_MUL_SCALAR, "value", 0.5);
  if (mlirOperationIsNull(h)) return false;
  *(MlirValue *)ctx = piperOperand(h, 0);
  return true;
}

/* 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)) of the given x */
static bool isTanhBranch(MlirValue v, MlirValue x, PiperWhy *w) {
  MlirOperation one = scalarOp(v, PIPER_TDAG_ADD_SCALAR, "value", 1.0);
  MlirOperation th = mlirOperationIsNull(one) ? one : piperDefOf(piperOperand(one, 0), PIPER_TDAG_TANH);
  if (mlirOperationIsNull(th)) return piperMiss(w, ownerOf(v), "not 1 + tanh(...)");
  piperStep(w, one);
  piperStep(w, th);
  MlirOperation c = scalarOp(piperOperand(th, 0), PIPER_TDAG_MUL_SCALAR, "value", GELU_SQRT_2_OVER_PI);
  MlirOperation sum = mlirOperationIsNull(c) ? c : piperDefOf(piperOperand(c, 0), PIPER_TDAG_ADD);
  if (mlirOperationIsNull(sum))
    return piperMiss(w, th, "tanh's argument is not sqrt(2/pi) (x + 0.044715 x^3)");
  piperStep(w, c);
  for (int k = 0; k < 2; ++k) {
    MlirOperation cube = scalarOp(piperOperand(sum, 1 - k), PIPER_TDAG_MUL_SCALAR, "value", 0.044715);
    MlirOperation pw = mlirOperationIsNull(cube) ? cube
                                                 : scalarOp(piperOperand(cube, 0), PIPER_TDAG_POW_SCALAR,
                                                            "exponent", 3.0);
    if (!mlirOperationIsNull(pw) && mlirValueEqual(piperOperand(sum, k), x) &&
        mlirValueEqual(piperOperand(pw, 0), x)) {
      piperStep(w, sum);
      piperStep(w, cube);
      return piperStep(w, pw);
    }
  }
  return piperMiss(w, sum, "not x + 0.044715 x^3 of the x halved");
}

/* mul(0.5 x, 1 + tanh(...)) -> gelu(x) */
static bool matchGelu(MlirOperation op, void *state, PiperWhy *w) {
  GeluMatch *m = state;
  MlirValue half, branch;
  m->x = (MlirValue){NULL};
  if (!eitherOrder(op, isHalfX, &m->x, &half, &branch)) return false;
  piperStep(w, op);
  piperStep(w, ownerOf(half));
  if (!isTanhBranch(branch, m->x, w)) return false;
  if (!piperSameShape(m->x, piperResult(op, 0)))
    return piperMiss(w, op, "x is broadcast against the tanh branch");
  return true;
}

static MlirOperation rewriteGelu(MlirRewriterBase rw, MlirOperation op, void *state) {
  GeluMatch *m = state;
  MlirType t = typeOf(m->x);
  MlirOperation g = piperBuild(rw, op, PIPER_TDAG_GELU, 1, &m->x, 1, &t, 0, NULL);
  MlirValue y = piperResult(g, 0);
  piperReplaceOp(rw, op, 1, &y);
  return g;
}

/* ---- SwiGLU, rooted at tdag.mul ---- */

typedef struct {
  MlirValue gate, up;
} SwigluMatch;

static bool isSilu(MlirValue v, void *ctx) {
  return !mlirOperationIsNull(piperDefOf(v, PIPER_TDAG_SILU));
}

/* mul(silu(a), b), a, b and the result of one shape -> swiglu(a, b) */
static bool matchSwiglu(MlirOperation op, void *state, PiperWhy *w) {
  SwigluMatch *m = state;
  MlirValue s;
  if (!eitherOrder(op, isSilu, NULL, &s, &m->up)) return false;
  piperStep(w, op);
  piperStep(w, ownerOf(s));
  MlirValue out = piperResult(op, 0);
  if (!piperSameShape(s, out) || !piperSameShape(m->up, out))
    return piperMiss(w, op, "silu(a) * b with a broadcast operand");
  m->gate = piperOperand(piperDefOf(s, PIPER_TDAG_SILU), 0);
  return true;
}

static MlirOperation rewriteSwiglu(MlirRewriterBase rw, MlirOperation op, void *state) {
  SwigluMatch *m = state;
  MlirType t = typeOf(piperResult(op, 0));
  MlirValue ops[2] = {m->gate, m->up};
  MlirOperation g = piperBuild(rw, op, PIPER_TDAG_SWIGLU, 2, ops, 1, &t, 0, NULL);
  MlirValue y = piperResult(g, 0);
  piperReplaceOp(rw, op, 1, &y);
  return g;
}

/* ---- rotary position embedding, rooted at tdag.add ---- */

/* What a RoPE operand was read from. */
typedef struct {
  int64_t D;    /* head_dim */
  double theta; /* the base */
} RopeTable;

/* v = a rotate-half tdag.rope_table {sin = sn} (T, D), reshaped and maybe broadcast, laid over
 * x (B,T,H,D) with its rows on x's dim 1 and its columns on dim 3: fills *tab. */
static bool ropeTableOver(MlirValue v, MlirValue x, int64_t sn, RopeTable *tab) {
  MlirOperation bc = piperDefOf(v, PIPER_TDAG_BROADCAST);
  MlirValue own = mlirOperationIsNull(bc) ? v : piperOperand(bc, 0);
  MlirOperation rt = piperDefOf(piperThroughReshapes(own), PIPER_TDAG_ROPE_TABLE);
  if (mlirOperationIsNull(rt) || piperGetIntAttr(rt, "sin", -1) != sn || piperRank(x) != 4)
    return false;
  MlirValue table = piperResult(rt, 0);
  int64_t D = piperGetIntAttr(rt, "head_dim", 0), T = piperDim(table, 0), r = piperRank(own);
  if (piperDim(table, 1) != D || piperDim(x, 1) != T || piperDim(x, 3) != D || r < 3)
    return false;
  /* own right-aligned to x's 4 dims: (1,) T, 1, D */
  if (piperDim(own, r - 1) != D || piperDim(own, r - 2) != 1 || piperDim(own, r - 3) != T ||
      (r == 4 && piperDim(own, 0) != 1))
    return false;
  if (tab->D && (tab->D != D || tab->theta != piperGetFloatAttr(rt, "theta", 0.0))) return false;
  tab->D = D;
  tab->theta = piperGetFloatAttr(rt, "theta", 0.0);
  return true;
}

/* The x of mul(x, table): the operand that is not the table. */
static bool ropeTerm(MlirValue term, int64_t sn, RopeTable *tab, MlirValue *x) {
  MlirOperation mul = piperDefOf(term, PIPER_TDAG_MUL);
  for (int k = 0; !mlirOperationIsNull(mul) && k < 2; ++k) {
    MlirValue a = piperOperand(mul, k), tbl = piperOperand(mul, 1 - k);
    if (mlirTypeEqual(typeOf(a), typeOf(term)) && ropeTableOver(tbl, a, sn, tab)) {
      *x = a;
      return true;
    }
  }
  return false;
}

/* Whether s is x[..., start : start + size(s, -1)] over the last dim: a slice of x, or, x being
 * itself such a slice of some b, the slice of b it makes (the canonical forms fold a slice of
 * a slice). */
static bool lastDimSliceOf(MlirValue s, MlirValue x, int64_t start) {
  MlirOperation sl = piperDefOf(s, PIPER_TDAG_SLICE);
  int64_t last = piperRank(x) - 1;
  if (mlirOperationIsNull(sl) || piperGetIntAttr(sl, "dim", -1) != last) return false;
  if (mlirValueEqual(piperOperand(sl, 0), x)) return piperGetIntAttr(sl, "start", -1) == start;
  MlirOperation outer = piperDefOf(x, PIPER_TDAG_SLICE);
  return !mlirOperationIsNull(outer) && piperGetIntAttr(outer, "dim", -1) == last &&
         mlirValueEqual(piperOperand(sl, 0), piperOperand(outer, 0)) &&
         piperGetIntAttr(sl, "start", -1) == piperGetIntAttr(outer, "start", 0) + start;
}

/* rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]) over the last dim */
static bool isRotateHalf(MlirValue v, MlirValue x) {
  MlirOperation cat = piperDefOf(v, PIPER_TDAG_CONCAT);
  if (mlirOperationIsNull(cat) || mlirOperationGetNumOperands(cat) != 2 ||
      piperGetIntAttr(cat, "dim", -1) != piperRank(v) - 1)
    return false;
  int64_t half = piperDim(x, -1) / 2;
  MlirOperation neg = scalarOp(piperOperand(cat, 0), PIPER_TDAG_MUL_SCALAR, "value", -1.0);
  return !mlirOperationIsNull(neg) && piperDim(piperOperand(cat, 0), -1) == half &&
         piperDim(x, -1) == 2 * half && lastDimSliceOf(piperOperand(neg, 0), x, half) &&
         lastDimSliceOf(piperOperand(cat, 1), x, 0);
}

typedef struct {
  MlirValue x;
  RopeTable tab;
} RopeMatch;

/* add(x * cos, rotate_half(x) * sin), either order, x (B,T,H,D), the tables rotate-half
 * rope_tables of one head_dim and theta -> reshape(rope(reshape(x, (B,T,H*D)))) */
static bool matchRope(MlirOperation op, void *state, PiperWhy *w) {
  RopeMatch *m = state;
  MlirValue rot = {NULL};
  bool terms = false, found = false;
  for (int k = 0; k < 2 && !found; ++k) {
    m->tab = (RopeTable){0, 0.0};
    MlirValue x = {NULL};
    bool here = ropeTerm(piperOperand(op, k), 0, &m->tab, &x) &&
                ropeTerm(piperOperand(op, 1 - k), 1, &m->tab, &rot);
    terms |= here;
    if (here && isRotateHalf(rot, x)) {
      found = true;
      m->x = x;
      MlirOperation cat = ownerOf(rot);
      piperStep(w, ownerOf(piperOperand(op, 0)));
      piperStep(w, ownerOf(piperOperand(op, 1)));
      piperStep(w, cat);
      piperStep(w, ownerOf(piperOperand(cat, 0)));
      piperStep(w, ownerOf(piperOperand(ownerOf(piperOperand(cat, 0)), 0)));
      piperStep(w, ownerOf(piperOperand(cat, 1)));

    }
  }
  if (!terms) { /* a RoPE table over a layout the fused op does not take: say so */
    for (int k = 0; k < 2; ++k) {
      MlirOperation mul = piperDefOf(piperOperand(op, k), PIPER_TDAG_MUL);
      for (int j = 0; !mlirOperationIsNull(mul) && j < 2; ++j) {
        MlirValue t = piperOperand(mul, 1 - j);
        MlirOperation bc = piperDefOf(t, PIPER_TDAG_BROADCAST);
        if (!mlirOperationIsNull(bc)) t = piperOperand(bc, 0);
        MlirOperation rt = piperDefOf(piperThroughReshapes(t), PIPER_TDAG_ROPE_TABLE);
        if (mlirOperationIsNull(rt) ||
            piperDim(piperResult(rt, 0), 1) != piperGetIntAttr(rt, "head_dim", 0))
          continue; /* a table of one column per pair: the interleaved pattern's to explain */
        piperStep(w, op);
        return piperMiss(w, mul, "a RoPE table that does not lie over x (B, T, H, D) with the "
                                 "positions on dim 1 and the head's features on dim 3");
      }
    }
    return false;
  }
  piperStep(w, op);
  if (!found)
    return piperMiss(w, op, "x * cos + y * sin with y not rotate_half(x) = cat(-x[..., D/2:], "
                            "x[..., :D/2]), or the tables of two bases");
  if (!mlirTypeEqual(typeOf(m->x), typeOf(piperResult(op, 0))))
    return piperMiss(w, op, "x is broadcast against the tables");
  return true;
}

/* tdag.rope of `flat` (B, T, H*D) with the table's head dim and base, before `op`: the one op
 * both RoPE layouts (rotate-half and Meta's interleaved pairs) rewrite into. */
static MlirOperation buildRope(MlirRewriterBase rw, MlirOperation op, MlirValue flat,
                               int64_t headDim, double theta) {
  MlirContext ctx = mlirOperationGetContext(op);
  MlirNamedAttribute attrs[2] = {piperIntAttr(ctx, "head_dim", headDim),
                                 piperF64Attr(ctx, "theta", theta)};
  MlirType t = typeOf(flat);
  return piperBuild(rw, op, PIPER_TDAG_ROPE, 1, &flat, 1, &t, 2, attrs);
}

static MlirOperation rewriteRope(MlirRewriterBase rw, MlirOperation op, void *state) {
  RopeMatch *m = state;
  MlirValue x = m->x;
  int64_t B = piperDim(x, 0), T = piperDim(x, 1), H = piperDim(x, 2), D = piperDim(x, 3);
  int64_t packed[3] = {B, T, H * D}, shape[4] = {B, T, H, D};
  MlirValue flat = piperReshapeTo(rw, op, x, 3, packed);
  MlirOperation rope = buildRope(rw, op, flat, D, m->tab.theta);
  MlirValue y = piperReshapeTo(rw, op, piperResult(rope, 0), 4, shape);
  piperReplaceOp(rw, op, 1, &y);
  return rope;
}

/* ---- Meta's interleaved RoPE, rooted at tdag.concat ---- */

/* Meta's layout rotates pairs (x_2j, x_2j+1) by angle j: as (B,T,H,D/2,2) rows, the
 * "real" parts xr = x[..., 0] and "imaginary" xi = x[..., 1] become
 * stack(xr cos - xi sin, xr sin + xi cos, -1). That is tdag.rope (pairs (j, j + D/2)) of
 * x' = cat(xr, xi, -1), its output interleaved back; rope_tables of one column per pair. */
typedef struct {
  MlirValue xr, xi;   /* (B,T,H,D/2) */
  RopeTable tab;
} InterleavedMatch;

/* v = reshape(slice(x5, 4, part, 1)) of the (B,T,H,D/2,2) value x5: its x5 into *x5. */
static bool pairPart(MlirValue v, int64_t part, MlirValue *x5) {
  MlirOperation rs = piperDefOf(v, PIPER_TDAG_RESHAPE);
  MlirOperation sl = mlirOperationIsNull(rs) ? rs : piperDefOf(piperOperand(rs, 0), PIPER_TDAG_SLICE);
  if (mlirOperationIsNull(sl) || piperGetIntAttr(sl, "dim", -1) != 4 ||
      piperGetIntAttr(sl, "start", -1) != part || piperRank(piperOperand(sl, 0)) != 5 ||
      piperDim(piperOperand(sl, 0), 4) != 2 || piperRank(v) != 4)
    return false;
  if (!mlirValueIsNull(*x5) && !mlirValueEqual(*x5, piperOperand(sl, 0))) return false;
  *x5 = piperOperand(sl, 0);
  return true;
}

/* A (T, D/2) rope_table {sin = sn}, reshaped and maybe broadcast, laid over (B,T,H,D/2). */
static bool pairTableOver(MlirValue v, MlirValue x, int64_t sn, RopeTable *tab) {
  MlirOperation bc = piperDefOf(v, PIPER_TDAG_BROADCAST);
  MlirValue own = mlirOperationIsNull(bc) ? v : piperOperand(bc, 0);
  MlirOperation rt = piperDefOf(piperThroughReshapes(own), PIPER_TDAG_ROPE_TABLE);
  if (mlirOperationIsNull(rt) || piperGetIntAttr(rt, "sin", -1) != sn) return false;
  int64_t D = piperGetIntAttr(rt, "head_dim", 0), r = piperRank(own);
  MlirValue table = piperResult(rt, 0);
  if (piperDim(table, 1) != D / 2 || piperDim(x, 3) != D / 2 || piperDim(x, 1) != piperDim(table, 0) ||
      r < 3 || piperDim(own, r - 1) != D / 2 || piperDim(own, r - 2) != 1 ||
      piperDim(own, r - 3) != piperDim(table, 0) || (r == 4 && piperDim(own, 0) != 1))
    return false;
  if (tab->D && (tab->D != D || tab->theta != piperGetFloatAttr(rt, "theta", 0.0))) return false;
  tab->D = D;
  tab->theta = piperGetFloatAttr(rt, "theta", 0.0);
  return true;
}

/* mul(a, table {sin = sn}) with a = the wanted part (xr or xi), either order */
static bool pairTerm(MlirValue term, MlirValue want, int64_t sn, RopeTable *tab) {
  MlirOperation mul = piperDefOf(term, PIPER_TDAG_MUL);
  for (int k = 0; !mlirOperationIsNull(mul) && k < 2; ++k)
    if (mlirValueEqual(piperOperand(mul, k), want) &&
        pairTableOver(piperOperand(mul, 1 - k), want, sn, tab))
      return true;
  return false;
}

static bool matchInterleavedRope(MlirOperation op, void *state, PiperWhy *w) {
  InterleavedMatch *m = state;
  MlirValue out = piperResult(op, 0);
  if (mlirOperationGetNumOperands(op) != 2 || piperRank(out) != 5 ||
      piperGetIntAttr(op, "dim", -1) != 4 || piperDim(out, 4) != 2)
    return false;
  MlirOperation re = piperDefOf(piperOperand(op, 0), PIPER_TDAG_RESHAPE);
  MlirOperation im = piperDefOf(piperOperand(op, 1), PIPER_TDAG_RESHAPE);
  MlirOperation sub = mlirOperationIsNull(re) ? re : piperDefOf(piperOperand(re, 0), PIPER_TDAG_SUB);
  MlirOperation add = mlirOperationIsNull(im) ? im : piperDefOf(piperOperand(im, 0), PIPER_TDAG_ADD);
  if (mlirOperationIsNull(sub) || mlirOperationIsNull(add)) return false;
  piperStep(w, op);
  MlirValue x5 = {NULL};
  MlirOperation m0 = piperDefOf(piperOperand(sub, 0), PIPER_TDAG_MUL);
  for (int k = 0; !mlirOperationIsNull(m0) && k < 2 && mlirValueIsNull(m->xr); ++k)
    if (pairPart(piperOperand(m0, k), 0, &x5)) m->xr = piperOperand(m0, k);
  MlirOperation m1 = piperDefOf(piperOperand(sub, 1), PIPER_TDAG_MUL);
  for (int k = 0; !mlirOperationIsNull(m1) && k < 2 && mlirValueIsNull(m->xi); ++k)
    if (pairPart(piperOperand(m1, k), 1, &x5)) m->xi = piperOperand(m1, k);
  if (mlirValueIsNull(m->xr) || mlirValueIsNull(m->xi))
    return piperMiss(w, sub, "not xr * cos - xi * sin of the pairs x[..., 0], x[..., 1] of one "
                             "(B, T, H, D/2, 2) value");
  m->tab = (RopeTable){0, 0.0};
  if (!pairTerm(piperOperand(sub, 0), m->xr, 0, &m->tab) ||
      !pairTerm(piperOperand(sub, 1), m->xi, 1, &m->tab))
    return piperMiss(w, sub, "xr * cos - xi * sin over tables that are not rope_tables of one "
                             "column per pair, positions on dim 1");
  piperStep(w, sub);
  bool sinFirst = pairTerm(piperOperand(add, 0), m->xr, 1, &m->tab) &&
                  pairTerm(piperOperand(add, 1), m->xi, 0, &m->tab);
  bool cosFirst = !sinFirst && pairTerm(piperOperand(add, 0), m->xi, 0, &m->tab) &&
                  pairTerm(piperOperand(add, 1), m->xr, 1, &m->tab);
  if (!sinFirst && !cosFirst)
    return piperMiss(w, add, "the second of each pair is not xr * sin + xi * cos over the same "
                             "tables");
  piperStep(w, add);
  if (!piperSameShape(m->xr, piperResult(sub, 0)) || piperDim(m->xr, 3) * 2 != m->tab.D)
    return piperMiss(w, op, "the pairs are broadcast against the tables");
  return true;
}

static MlirOperation rewriteInterleavedRope(MlirRewriterBase rw, MlirOperation op, void *state) {
  InterleavedMatch *m = state;
  MlirContext ctx = mlirOperationGetContext(op);
  int64_t B = piperDim(m->xr, 0), T = piperDim(m->xr, 1), H = piperDim(m->xr, 2);
  int64_t half = piperDim(m->xr, 3), D = 2 * half;
  MlirValue parts[2] = {m->xr, m->xi};
  int64_t bthd[4] = {B, T, H, D}, flat[3] = {B, T, H * D}, one[5] = {B, T, H, half, 1};
  MlirNamedAttribute dim3 = piperIntAttr(ctx, "dim", 3);
  MlirType f32 = mlirShapedTypeGetElementType(typeOf(m->xr));
  MlirType t4 = piperTensorType(ctx, 4, bthd, f32);
  MlirValue x = piperResult(piperBuild(rw, op, PIPER_TDAG_CONCAT, 2, parts, 1, &t4, 1, &dim3), 0);
  MlirValue xf = piperReshapeTo(rw, op, x, 3, flat);
  MlirOperation rope = buildRope(rw, op, xf, D, m->tab.theta);
  MlirValue y = piperReshapeTo(rw, op, piperResult(rope, 0), 4, bthd);
  MlirValue halves[2];
  for (int i = 0; i < 2; ++i)
    halves[i] = piperReshapeTo(rw, op, piperSliceOf(rw, op, y, 3, i * half, half), 5, one);
  MlirNamedAttribute dim4 = piperIntAttr(ctx, "dim", 4);
  MlirType t5 = typeOf(piperResult(op, 0));
  MlirValue back = piperResult(piperBuild(rw, op, PIPER_TDAG_CONCAT, 2, halves, 1, &t5, 1, &dim4), 0);
  piperReplaceOp(rw, op, 1, &back);
  return rope;
}

/* ---- embeddings ---- */

typedef struct {
  MlirValue tokens, wte, table;
} EmbeddingMatch;

static bool isEmbed(MlirValue v, void *ctx) {
  return !mlirOperationIsNull(piperDefOf(v, PIPER_TDAG_EMBED));
}

/* add_bcast(embed(tokens, wte), P), P the first T rows of a table W (W itself, or its slice
 * from row 0, maybe reshaped to (1,T,C)) -> embedding(tokens, wte, W): GPT-2's
 * wte(idx) + wpe(arange(T)) */
static bool matchEmbedding(MlirOperation op, void *state, PiperWhy *w) {
  EmbeddingMatch *m = state;
  MlirValue tok, pos;
  if (!eitherOrder(op, isEmbed, NULL, &tok, &pos)) return false;
  pos = piperThroughReshapes(pos);
  if (mlirOperationIsNull(piperDefOf(pos, PIPER_TDAG_SLICE)) &&
      mlirOperationIsNull(piperDefOf(pos, PIPER_TDAG_PARAM)))
    return false; /* a residual add, not a position table: nothing to say */
  piperStep(w, op);
  MlirOperation embed = piperDefOf(tok, PIPER_TDAG_EMBED), rows = piperDefOf(pos, PIPER_TDAG_SLICE);
  m->table = pos;
  if (!mlirOperationIsNull(rows)) {
    if (piperGetIntAttr(rows, "dim", -1) != 0 || piperGetIntAttr(rows, "start", -1) != 0)
      return piperMiss(w, rows, "positions other than the table's first T rows");
    m->table = piperOperand(rows, 0);
  }
  m->tokens = piperOperand(embed, 0);
  m->wte = piperOperand(embed, 1);
  if (piperRank(tok) != 3 || piperRank(pos) != 2 || piperDim(pos, 0) != piperDim(tok, 1) ||
      piperDim(pos, 1) != piperDim(tok, 2) || piperRank(m->table) != 2 ||
      piperDim(m->table, 1) != piperDim(tok, 2) ||
      mlirOperationIsNull(piperDefOf(m->table, PIPER_TDAG_PARAM)))
    return piperMiss(w, op, "the token embedding plus something other than a parameter table's "
                            "rows 0..T-1");
  return true;
}

static MlirOperation rewriteEmbedding(MlirRewriterBase rw, MlirOperation op, void *state) {
  EmbeddingMatch *m = state;
  MlirValue ops[3] = {m->tokens, m->wte, m->table};
  MlirType t = typeOf(piperResult(op, 0));
  MlirOperation e = piperBuild(rw, op, PIPER_TDAG_EMBEDDING, 3, ops, 1, &t, 0, NULL);
  MlirValue y = piperResult(e, 0);
  piperReplaceOp(rw, op, 1, &y);
  return e;
}

/* ---- the pass ---- */

#define FUSION(ROOT, NAME, MATCH, REWRITE, STATE) \
  {PIPER_TDAG_##ROOT, NAME, MATCH, REWRITE, sizeof(STATE), true}
static const PiperPattern fusionPatterns[] = {
    FUSION(BMM, "attention", matchAttention, rewriteAttention, AttentionMatch),
    FUSION(MUL, "rmsnorm", matchRmsnorm, rewriteRmsnorm, NormMatch),
    FUSION(MUL, "gelu", matchGelu, rewriteGelu, GeluMatch),
    FUSION(MUL, "swiglu", matchSwiglu, rewriteSwiglu, SwigluMatch),
    FUSION(ADD_BCAST, "embedding", matchEmbedding, rewriteEmbedding, EmbeddingMatch),
    FUSION(ADD, "embedding", matchEmbedding, rewriteEmbedding, EmbeddingMatch),
    FUSION(ADD, "rope", matchRope, rewriteRope, RopeMatch),
    FUSION(CONCAT, "rope (interleaved)", matchInterleavedRope, rewriteInterleavedRope,
           InterleavedMatch),
    FUSION(GQA_ATTENTION, "attention (packed qkv)", matchPackedAttention, rewritePackedAttention,
           PackedMatch),
};
_Static_assert(sizeof(AttentionMatch) <= PIPER_PATTERN_STATE_MAX,
               "a pattern's state must fit the driver's buffer");

const PiperPattern *piperFusionPatterns(size_t *n) {
  *n = sizeof fusionPatterns / sizeof fusionPatterns[0];
  return fusionPatterns;
}

/* Whether `module` is a training graph already (an op of --piper-autodiff's making): its
 * backward reads the forward's intermediate values, so a fused forward would leave them all
 * computed beside it. */
static bool isTrainingGraph(MlirOperation module) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!piperOpIs(f, "func.func") || mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
      continue;
    for (MlirOperation op = mlirBlockGetFirstOperation(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
         !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
      const PiperOpFacts *facts = piperOpFacts(op);
      if (facts && (facts->kind == PIPER_OP_BACKWARD || facts->kind == PIPER_OP_UPDATE)) return true;
    }
  }
  return false;
}

MlirLogicalResult piperFuseLogged(MlirOperation module, PiperFusionLog *log) {
  if (isTrainingGraph(module)) return mlirLogicalResultSuccess(); /* fusion is the forward's */
  size_t nl, nf;
  const PiperPattern *layout = piperLayoutPatterns(&nl), *fusions = piperFusionPatterns(&nf);
  PiperPattern *all = malloc((nl + nf) * sizeof *all);
  if (!all) {
    mlirEmitError(mlirOperationGetLocation(module), "piper-fuse: out of memory");
    return mlirLogicalResultFailure();
  }
  memcpy(all, fusions, nf * sizeof *all); /* fusions first: a root tries them before a form */
  memcpy(all + nf, layout, nl * sizeof *all);
  int64_t rewrites = 0;
  /* the canonical forms first, so the fusions meet them; then both, since a fusion leaves
   * layout ops for the forms to fold */
  MlirLogicalResult status = piperApplyPatterns(module, layout, nl, &rewrites, NULL);
  if (mlirLogicalResultIsSuccess(status))
    status = piperApplyPatterns(module, all, nl + nf, &rewrites, log);
  free(all);
  return status;
}

MlirLogicalResult piperFuse(MlirOperation module) { return piperFuseLogged(module, NULL); }

/* ---- the fusion report ---- */

/* One line of the report, sortable by where it points. */
typedef struct {
  char where[160];
  char text[480];
} ReportLine;

/* Where a label's ":LINE" starts (its end when it has none). */
static size_t lineAt(const char *label) {
  const char *colon = strrchr(label, ':');
  return colon ? (size_t)(colon - label) : strlen(label);
}

/* By the label before its line, then by line number, then by text. */
static int byWhere(const void *a, const void *b) {
  const ReportLine *x = a, *y = b;
  size_t lx = lineAt(x->where), ly = lineAt(y->where);
  int c = strncmp(x->where, y->where, lx < ly ? lx : ly);
  if (!c && lx != ly) c = lx < ly ? -1 : 1;
  if (!c) {
    long nx = x->where[lx] ? strtol(x->where + lx + 1, NULL, 10) : 0;
    long ny = y->where[ly] ? strtol(y->where + ly + 1, NULL, 10) : 0;
    c = nx < ny ? -1 : nx > ny;
  }
  return c ? c : strcmp(x->text, y->text);
}

static bool addLine(ReportLine **lines, size_t *n, size_t *cap, MlirLocation loc) {
  if (!piperGrow((void **)lines, cap, *n + 1, sizeof **lines)) return false;
  piperLocationLabel(loc, (*lines)[*n].where, sizeof (*lines)[*n].where);
  return true;
}

/* Each op left that starts some fusion's chain, with the miss of the pattern that got
 * furthest (at least one op past its root); the general ops left, counted by name. */
static void explainUnfused(MlirBlock body, ReportLine **lines, size_t *n, size_t *cap,
                           size_t *missed, char *left, size_t leftSize) {
  size_t np;
  const PiperPattern *patterns = piperFusionPatterns(&np);
  const char *names[PIPER_TDAG_OP_COUNT] = {0};
  int counts[PIPER_TDAG_OP_COUNT] = {0};
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    const PiperOpFacts *f = piperOpFacts(op);
    if (!f) continue;
    if (f->kind == PIPER_OP_FORWARD && f->batch == PIPER_BATCH_OPERANDS &&
        mlirOperationGetNumOperands(op) > 0) {
      names[f->id] = f->name;
      counts[f->id]++;
    }
    PiperWhy w;
    piperWhyInit(&w);
    for (size_t i = 0; i < np; ++i) {
      if (patterns[i].root != f->id) continue;
      _Alignas(max_align_t) unsigned char state[PIPER_PATTERN_STATE_MAX];
      memset(state, 0, patterns[i].stateSize);
      piperWhyStart(&w, patterns[i].name);
      patterns[i].match(op, state, &w);
    }
    if (w.best <= 0 || !addLine(lines, n, cap, mlirOperationGetLocation(op))) continue;
    char at[160];
    piperLocationLabel(mlirOperationIsNull(w.at) ? mlirOperationGetLocation(op)
                                                 : mlirOperationGetLocation(w.at),
                       at, sizeof at);
    const PiperOpFacts *af = mlirOperationIsNull(w.at) ? NULL : piperOpFacts(w.at);
    snprintf((*lines)[*n].text, sizeof (*lines)[*n].text,
             "not fused: %s, from %s: stopped at %s (%s): %s", w.pattern, f->name,
             af ? af->name : "?", at, w.what);
    ++*n;
    ++*missed;
  }
  size_t len = 0;
  left[0] = '\0';
  for (int id = 0; id < PIPER_TDAG_OP_COUNT && len < leftSize; ++id)
    if (counts[id])
      len += (size_t)snprintf(left + len, leftSize - len, counts[id] > 1 ? "%s%s x%d" : "%s%s",
                              len ? ", " : "", names[id] + strlen("tdag."), counts[id]);
  if (!len) snprintf(left, leftSize, "none");
}

MlirLogicalResult piperFuseReport(MlirOperation module, FILE *out) {
  PiperFusionLog log = {0};
  MlirLogicalResult status = piperFuseLogged(module, &log);
  ReportLine *lines = NULL;
  size_t n = 0, cap = 0, missed = 0;
  for (size_t i = 0; i < log.nFused; ++i) {
    const PiperFusedRecord *r = &log.fused[i];
    if (!addLine(&lines, &n, &cap, r->loc)) break;
    snprintf(lines[n].text, sizeof lines[n].text, "fused: %s -> %s <- %s", r->pattern, r->op,
             r->chain);
    ++n;
  }
  char left[1024];
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  left[0] = '\0';
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (piperOpIs(f, "func.func") && !mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
      explainUnfused(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)), &lines, &n, &cap,
                     &missed, left, sizeof left);
  if (n) qsort(lines, n, sizeof *lines, byWhere);
  fprintf(out, "piper-fuse: %zu fused op%s, %zu chain%s left unfused; general ops left: %s\n",
          log.nFused, log.nFused == 1 ? "" : "s", missed, missed == 1 ? "" : "s", left);
  for (size_t i = 0; i < n; ++i) fprintf(out, "  %s: %s\n", lines[i].where, lines[i].text);
  fflush(out);
  free(lines);
  free(log.fused);
  return status;
}

static MlirLogicalResult runFuse(MlirOperation module, const char *arg) {
  return piperFuse(module);
}

/* --piper-fuse-report=FILE: the fusion, its report written to FILE ("-": stdout). */
static MlirLogicalResult runFuseReport(MlirOperation module, const char *arg) {
  bool toStdout = !arg || !strcmp(arg, "-");
  FILE *out = toStdout ? stdout : fopen(arg, "w");
  if (!out) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-fuse: cannot write the fusion report to %s", arg);
    return mlirLogicalResultFailure();
  }
  MlirLogicalResult status = piperFuseReport(module, out);
  if (!toStdout && fclose(out) != 0) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-fuse: writing the fusion report to %s failed", arg);
    return mlirLogicalResultFailure();
  }
  return status;
}

MlirPass piperCreateFuseReportPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-fuse-report",
                               "--piper-fuse, writing the fusion report to a file", runFuseReport,
                               arg);
}

MlirPass piperCreateFusePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-fuse",
                               "fold general-op chains into fused ops (attention, rmsnorm, gelu, "
                               "swiglu, rope, embedding)",
                               runFuse, arg);
}
