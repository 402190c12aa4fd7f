/* --piper-fuse: chains of general tensor ops (what python/piper exports) folded into the fused
 * ops the kernels, the strategy passes and the bf16 policy know. Rewrite patterns on MLIR's C
 * API (mlir-c/Rewrite.h), applied greedily, then the general ops left without users erased:
 *
 *   reshape(x) of x's own type -> x;  reshape(reshape(x)) -> reshape(x);
 *   permute(permute(x)) -> one permute (none when the two cancel)
 *   bmm(softmax_last(mask(bmm(Q, K) * c)), V), Q, K, V heads of (B,T,H*D) values by view and
 *     transpose (K, V maybe repeated by expand + reshape: GQA), c = 1/sqrt(D), the mask causal
 *     (masked_fill with a triangle of diagonal 0 holding -inf above it, or an added one)
 *       -> tdag.gqa_attention(q, k, v), or tdag.attention(qkv) when q, k, v are the thirds of
 *          one (B,T,3C) value with as many kv heads as heads
 *   (x * rsqrt(mean(x^2, -1, keepdim) + eps)) * w -> tdag.rmsnorm(x, w) {eps}
 *   0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) -> tdag.gelu(x)
 *   silu(a) * b, same shapes -> tdag.swiglu(a, b)
 *   embed(tokens, wte) + wpe[:T] -> tdag.embedding(tokens, wte, wpe)
 *   x * cos + rotate_half(x) * sin, x (B,T,H,D), the tables rotate-half tdag.rope_tables (the
 *     exporter recognised them) -> tdag.rope(x) {head_dim, theta}
 *
 * Each pattern checks every constant (the scale, the mask's diagonal and values, the softmax's
 * dim, eps > 0, GELU's coefficients, RoPE's tables and halves) and leaves a chain that differs
 * alone: it still runs, on the general ops' kernels. The exact (erf) GELU has its own op and
 * kernel already. Meta's interleaved RoPE (pairs x_2j, x_2j+1) and one applied after the heads'
 * transpose (positions on dim 2) stay unfused: tdag.rope rotates halves of (B,T,H*D) rows
 * (test/passes/fuse*.mlir show each pattern firing and not firing). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Rewrite.h"
#include "piper/piper.h"

#define GELU_SQRT_2_OVER_PI 0.7978845608028654 /* sqrt(2 / pi) */

/* ---- matching helpers ---- */

/* The op defining `v` if it is named `name`, else null. */
static MlirOperation defOf(MlirValue v, const char *name) {
  if (mlirValueIsNull(v) || !mlirValueIsAOpResult(v)) return (MlirOperation){NULL};
  MlirOperation op = mlirOpResultGetOwner(v);
  return piperOpIs(op, name) ? op : (MlirOperation){NULL};
}

/* `v` with the reshapes that made it looked through: the value they started from. */
static MlirValue throughReshapes(MlirValue v) {
  MlirOperation r;
  while (!mlirOperationIsNull(r = defOf(v, "tdag.reshape"))) v = mlirOperationGetOperand(r, 0);
  return v;
}

static MlirValue operandOf(MlirOperation op, intptr_t i) { return mlirOperationGetOperand(op, i); }
static MlirType typeOf(MlirValue v) { return mlirValueGetType(v); }
static int64_t dimOf(MlirValue v, int64_t i) { return piperTensorDim(typeOf(v), i); }
static int64_t rankOf(MlirValue v) { return piperTensorRank(typeOf(v)); }

/* True if |a - b| <= 1e-6 |b|: a constant the exporter wrote from a Python float. */
static bool near(double a, double b) { return fabs(a - b) <= 1e-6 * fabs(b); }

/* The op of `v` named `name` with scalar attribute `attr` near `want`, else null. */
static MlirOperation scalarOp(MlirValue v, const char *name, const char *attr, double want) {
  MlirOperation op = defOf(v, name);
  if (mlirOperationIsNull(op) || !near(piperGetFloatAttr(op, attr, NAN), want))
    return (MlirOperation){NULL};
  return op;
}

/* For a commutative binary op: sets *a, *b to its operands so that `first` (a predicate) holds
 * for *a, trying both orders; false if neither does. */
typedef bool (*ValuePred)(MlirValue v, void *ctx);
static bool eitherOrder(MlirOperation op, ValuePred first, void *ctx, MlirValue *a,
                        MlirValue *b) {
  for (int k = 0; k < 2; ++k) {
    *a = operandOf(op, k);
    *b = operandOf(op, 1 - k);
    if (first(*a, ctx)) return true;
  }
  return false;
}

/* ---- building ---- */

/* One op before `at` with `at`'s location, tags and placement. */
static MlirOperation build(MlirRewriterBase rw, MlirOperation at, const char *name, intptr_t n,
                           const MlirValue *operands, intptr_t nResults, const MlirType *results,
                           intptr_t nAttrs, const MlirNamedAttribute *attrs) {
  MlirOperation op = piperOpCreate(name, mlirOperationGetLocation(at), n, operands, nResults,
                                   results, nAttrs, attrs);
  piperCopyPlacement(op, at);
  mlirRewriterBaseSetInsertionPointBefore(rw, at);
  return mlirRewriterBaseInsert(rw, op);
}

/* `v` reshaped to `shape` (v itself when it has that shape). */
static MlirValue reshapeTo(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                           const int64_t *shape) {
  MlirType t = piperTensorType(mlirOperationGetContext(at), rank, shape,
                               mlirShapedTypeGetElementType(typeOf(v)));
  if (mlirTypeEqual(t, typeOf(v))) return v;
  return mlirOperationGetResult(build(rw, at, "tdag.reshape", 1, &v, 1, &t, 0, NULL), 0);
}

static MlirValue permuteBy(MlirRewriterBase rw, MlirOperation at, MlirValue v, int64_t rank,
                           const int64_t *perm) {
  MlirContext ctx = mlirOperationGetContext(at);
  int64_t shape[PIPER_MAX_RANK];
  for (int64_t i = 0; i < rank; ++i) shape[i] = dimOf(v, perm[i]);
  MlirType t = piperTensorType(ctx, rank, shape, mlirShapedTypeGetElementType(typeOf(v)));
  MlirNamedAttribute a = piperNamedAttr(ctx, "perm", mlirDenseI64ArrayGet(ctx, rank, perm));
  return mlirOperationGetResult(build(rw, at, "tdag.permute", 1, &v, 1, &t, 1, &a), 0);
}

/* Replaces `op` (one result) by result #0 of `by`, and erases it. */
static void replaceWith(MlirRewriterBase rw, MlirOperation op, MlirOperation by) {
  MlirValue v = mlirOperationGetResult(by, 0);
  mlirRewriterBaseReplaceOpWithValues(rw, op, 1, &v);
}

/* ---- canonical forms of layout ops ---- */

/* reshape(x) : type(x) -> x;  reshape(reshape(x)) -> reshape(x) */
static MlirLogicalResult foldReshape(MlirRewritePattern p, MlirOperation op,
                                     MlirPatternRewriter r, void *u) {
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirValue x = operandOf(op, 0), out = mlirOperationGetResult(op, 0);
  if (mlirTypeEqual(typeOf(x), typeOf(out))) {
    mlirRewriterBaseReplaceOpWithValues(rw, op, 1, &x);
    return mlirLogicalResultSuccess();
  }
  MlirOperation inner = defOf(x, "tdag.reshape");
  if (mlirOperationIsNull(inner)) return mlirLogicalResultFailure();
  mlirRewriterBaseStartOpModification(rw, op);
  mlirOperationSetOperand(op, 0, operandOf(inner, 0));
  mlirRewriterBaseFinalizeOpModification(rw, op);
  return mlirLogicalResultSuccess();
}

/* permute(permute(x, p), q) -> permute(x, p∘q), or x when that is the identity */
static MlirLogicalResult foldPermute(MlirRewritePattern p, MlirOperation op,
                                     MlirPatternRewriter r, void *u) {
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirOperation inner = defOf(operandOf(op, 0), "tdag.permute");
  int64_t rank = rankOf(operandOf(op, 0)), outer[PIPER_MAX_RANK], first[PIPER_MAX_RANK];
  int64_t both[PIPER_MAX_RANK];
  if (mlirOperationIsNull(inner) || !piperPermuteOf(op, rank, outer) ||
      !piperPermuteOf(inner, rank, first))
    return mlirLogicalResultFailure();
  bool identity = true;
  for (int64_t i = 0; i < rank; ++i) {
    both[i] = first[outer[i]];
    identity &= both[i] == i;
  }
  MlirValue x = operandOf(inner, 0);
  MlirValue to = identity ? x : permuteBy(rw, op, x, rank, both);
  mlirRewriterBaseReplaceOpWithValues(rw, op, 1, &to);
  return mlirLogicalResultSuccess();
}

/* ---- attention ---- */

/* One side of attention's matmuls: the (B,T,heads*D) value its heads come from. */
typedef struct {
  MlirValue packed; /* (B,T,heads*D) or (B,T,heads,D): the projection */
  int64_t heads;    /* heads it holds (KV for a repeated k or v) */
} HeadSource;

/* x (B,H,T,D) as `perm` of a (B,T,Hx,D) value, that value's heads possibly repeated by
 * broadcast + reshape (GQA's repeat_kv): fills *src. perm is (0,2,1,3) for q and v, (0,2,3,1)
 * for k^T (B,H,D,T). */
static bool headsOf(MlirValue x, const int64_t *perm, int64_t H, HeadSource *src) {
  MlirOperation pm = defOf(throughReshapes(x), "tdag.permute");
  int64_t got[4];
  if (mlirOperationIsNull(pm) || rankOf(operandOf(pm, 0)) != 4 || !piperPermuteOf(pm, 4, got) ||
      memcmp(got, perm, sizeof got))
    return false;
  MlirValue bthd = operandOf(pm, 0); /* (B,T,H,D) */
  if (dimOf(bthd, 2) != H) return false;
  src->packed = bthd;
  src->heads = H;
  /* repeat_kv: reshape (B,T,KV,rep,D) <- broadcast <- (B,T,KV,1,D) */
  MlirOperation rs = defOf(bthd, "tdag.reshape");
  MlirOperation bc = mlirOperationIsNull(rs) ? rs : defOf(operandOf(rs, 0), "tdag.broadcast");
  if (!mlirOperationIsNull(bc)) {
    MlirValue wide = mlirOperationGetResult(bc, 0), one = operandOf(bc, 0);
    if (rankOf(wide) == 5 && rankOf(one) == 5 && dimOf(one, 3) == 1 &&
        dimOf(wide, 2) * dimOf(wide, 3) == H && dimOf(one, 2) == dimOf(wide, 2) &&
        dimOf(one, 4) == dimOf(wide, 4)) {
      src->packed = one;
      src->heads = dimOf(one, 2);
    }
  }
  return true;
}

/* The causal mask of a masked_fill(S, mask) {value = -inf} or an add(S, mask): the triangle
 * of diagonal 0 whose cells above the diagonal fill (masked_fill: nonzero, add: -inf) and
 * whose others are 0, of S's (T,T). */
static bool isCausalMask(MlirValue mask, int64_t T, bool additive) {
  MlirOperation tri = defOf(throughReshapes(mask), "tdag.triangle");
  if (mlirOperationIsNull(tri) || dimOf(mlirOperationGetResult(tri, 0), 0) != T ||
      dimOf(mlirOperationGetResult(tri, 0), 1) != T || piperGetIntAttr(tri, "diagonal", 1) != 0)
    return false;
  double inside = piperGetFloatAttr(tri, "inside", NAN);
  double outside = piperGetFloatAttr(tri, "outside", NAN);
  return inside == 0.0 && (additive ? outside == -INFINITY : outside != 0.0 && !isnan(outside));
}

/* The scores S (B,H,T,T) of a causally masked softmax input, or null. */
static MlirValue causalScores(MlirValue masked, int64_t T) {
  MlirOperation mf = defOf(masked, "tdag.masked_fill");
  if (!mlirOperationIsNull(mf))
    return piperGetFloatAttr(mf, "value", 0.0) == -INFINITY &&
                   isCausalMask(operandOf(mf, 1), T, false)
               ? operandOf(mf, 0)
               : (MlirValue){NULL};
  MlirOperation add = defOf(masked, "tdag.add_bcast");
  for (int k = 0; !mlirOperationIsNull(add) && k < 2; ++k)
    if (isCausalMask(operandOf(add, 1 - k), T, true) && rankOf(operandOf(add, k)) == 4)
      return operandOf(add, k);
  return (MlirValue){NULL};
}

/* The (B,T,3C) value whose thirds, in order, q, k and v (each (B,T,C), maybe reshaped) are,
 * when there are as many kv heads as heads (GPT-2's c_attn split); else null. */
static MlirValue packedThirds(const MlirValue *qkv, int64_t H, int64_t KV) {
  MlirOperation thirds[3];
  int64_t C = dimOf(qkv[0], -1);
  bool packed = KV == H;
  for (int i = 0; packed && i < 3; ++i) {
    thirds[i] = defOf(throughReshapes(qkv[i]), "tdag.slice");
    packed = !mlirOperationIsNull(thirds[i]) &&
             mlirValueEqual(operandOf(thirds[i], 0), operandOf(thirds[0], 0)) &&
             piperGetIntAttr(thirds[i], "dim", -1) == 2 &&
             piperGetIntAttr(thirds[i], "start", -1) == i * C &&
             dimOf(operandOf(thirds[i], 0), 2) == 3 * C && rankOf(operandOf(thirds[i], 0)) == 3;
  }
  return packed ? operandOf(thirds[0], 0) : (MlirValue){NULL};
}

/* gqa_attention(q, k, v) with q, k, v the thirds of one projection -> attention(qkv): the
 * exported scaled_dot_product_attention of a fused c_attn */
static MlirLogicalResult fusePackedAttention(MlirRewritePattern p, MlirOperation op,
                                             MlirPatternRewriter r, void *u) {
  MlirValue qkv[3] = {operandOf(op, 0), operandOf(op, 1), operandOf(op, 2)};
  int64_t H = piperGetIntAttr(op, "heads", 0);
  MlirValue whole = packedThirds(qkv, H, piperGetIntAttr(op, "kv_heads", 0));
  if (mlirValueIsNull(whole)) return mlirLogicalResultFailure();
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirContext ctx = mlirOperationGetContext(op);
  MlirType types[2] = {typeOf(mlirOperationGetResult(op, 0)),
                       typeOf(mlirOperationGetResult(op, 1))};
  MlirNamedAttribute heads =
      piperNamedAttr(ctx, "heads", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), H));
  MlirOperation a = build(rw, op, "tdag.attention", 1, &whole, 2, types, 1, &heads);
  MlirValue res[2] = {mlirOperationGetResult(a, 0), mlirOperationGetResult(a, 1)};
  mlirRewriterBaseReplaceOpWithValues(rw, op, 2, res);
  return mlirLogicalResultSuccess();
}

/* tdag.bmm root: O = P V with P = softmax(causal(Q K^T * 1/sqrt(D))) over the last dim. */
static MlirLogicalResult fuseAttention(MlirRewritePattern p, MlirOperation op,
                                       MlirPatternRewriter r, void *u) {
  static const int64_t qvPerm[4] = {0, 2, 1, 3}, kPerm[4] = {0, 2, 3, 1};
  if (piperGetIntAttr(op, "transpose_a", 1) || piperGetIntAttr(op, "transpose_b", 1))
    return mlirLogicalResultFailure();
  MlirValue probs = throughReshapes(operandOf(op, 0));
  MlirOperation sm = defOf(probs, "tdag.softmax");
  if (mlirOperationIsNull(sm) || rankOf(probs) != 4 || piperGetIntAttr(sm, "dim", 0) != 3)
    return mlirLogicalResultFailure();
  int64_t B = dimOf(probs, 0), H = dimOf(probs, 1), T = dimOf(probs, 2);
  MlirValue scaled = causalScores(operandOf(sm, 0), T);
  MlirOperation scale = mlirValueIsNull(scaled) ? (MlirOperation){NULL}
                                                : defOf(scaled, "tdag.mul_scalar");
  MlirOperation qk = mlirOperationIsNull(scale)
                         ? scale
                         : defOf(throughReshapes(operandOf(scale, 0)), "tdag.bmm");
  if (mlirOperationIsNull(qk) || piperGetIntAttr(qk, "transpose_a", 1) ||
      piperGetIntAttr(qk, "transpose_b", 1))
    return mlirLogicalResultFailure();
  HeadSource q, k, v;
  if (!headsOf(operandOf(qk, 0), qvPerm, H, &q) || !headsOf(operandOf(qk, 1), kPerm, H, &k) ||
      !headsOf(operandOf(op, 1), qvPerm, H, &v) || k.heads != v.heads || H % k.heads)
    return mlirLogicalResultFailure();
  int64_t D = dimOf(q.packed, 3);
  if (dimOf(q.packed, 0) != B || dimOf(q.packed, 1) != T ||
      !near(piperGetFloatAttr(scale, "value", NAN), 1.0 / sqrt((double)D)))
    return mlirLogicalResultFailure();

  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirContext ctx = mlirOperationGetContext(op);
  MlirType f32 = mlirF32TypeGet(ctx);
  int64_t qShape[3] = {B, T, H * D}, kvShape[3] = {B, T, k.heads * D};
  MlirValue qkv[3] = {reshapeTo(rw, op, q.packed, 3, qShape),
                      reshapeTo(rw, op, k.packed, 3, kvShape),
                      reshapeTo(rw, op, v.packed, 3, kvShape)};
  int64_t lseShape[3] = {B, H, T};
  MlirType types[2] = {piperTensorType(ctx, 3, qShape, f32),
                       piperTensorType(ctx, 3, lseShape, f32)};
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirNamedAttribute attrs[2] = {piperNamedAttr(ctx, "heads", mlirIntegerAttrGet(i64, H)),
                                 piperNamedAttr(ctx, "kv_heads",
                                                mlirIntegerAttrGet(i64, k.heads))};
  MlirValue whole = packedThirds(qkv, H, k.heads);
  MlirOperation fused = mlirValueIsNull(whole)
                            ? build(rw, op, "tdag.gqa_attention", 3, qkv, 2, types, 2, attrs)
                            : build(rw, op, "tdag.attention", 1, &whole, 2, types, 1, attrs);
  /* out (B,T,H*D) back to the bmm's (B*H,T,D) through (B,T,H,D) and (B,H,T,D): the layout ops
   * after the bmm undo these, and the canonical forms above remove both */
  int64_t bthd[4] = {B, T, H, D}, bhtd[3] = {B * H, T, D};
  MlirValue o = reshapeTo(rw, op, mlirOperationGetResult(fused, 0), 4, bthd);
  o = reshapeTo(rw, op, permuteBy(rw, op, o, 4, qvPerm), 3, bhtd);
  MlirValue res = mlirOperationGetResult(op, 0);
  int64_t resShape[PIPER_MAX_RANK];
  for (int64_t i = 0; i < rankOf(res) && i < PIPER_MAX_RANK; ++i) resShape[i] = dimOf(res, i);
  MlirValue to = reshapeTo(rw, op, o, rankOf(res), resShape);
  mlirRewriterBaseReplaceOpWithValues(rw, op, 1, &to);
  return mlirLogicalResultSuccess();
}

/* ---- elementwise chains, rooted at tdag.mul ---- */

/* What an RMSNorm's normalised value was computed from. */
typedef struct {
  MlirValue x; /* the value normalised */
  double eps;  /* added to the mean square */
} NormMatch;

/* rstd = rsqrt(mean(x^2 over the last dim, keepdim) + eps), possibly broadcast back to x's
 * shape, of the value m->x (matched when set, set otherwise); m->eps gets eps. */
static bool isRstd(MlirValue v, NormMatch *m) {
  MlirOperation bc = defOf(v, "tdag.broadcast");
  if (!mlirOperationIsNull(bc)) v = operandOf(bc, 0);
  MlirOperation rs = defOf(v, "tdag.rsqrt");
  MlirOperation add = mlirOperationIsNull(rs) ? rs : defOf(operandOf(rs, 0), "tdag.add_scalar");
  if (mlirOperationIsNull(add) || !(piperGetFloatAttr(add, "value", 0.0) > 0.0)) return false;
  MlirValue mean = operandOf(add, 0);
  MlirOperation scale = defOf(mean, "tdag.mul_scalar");
  MlirOperation sum =
      mlirOperationIsNull(scale) ? scale : defOf(operandOf(scale, 0), "tdag.sum_to");
  if (mlirOperationIsNull(sum)) return false;
  MlirValue sq = operandOf(sum, 0);
  int64_t r = rankOf(sq), C = dimOf(sq, -1);
  if (rankOf(mean) != r || dimOf(mean, -1) != 1 ||
      !near(piperGetFloatAttr(scale, "value", NAN), 1.0 / (double)C))
    return false;
  for (int64_t i = 0; i < r - 1; ++i)
    if (dimOf(mean, i) != dimOf(sq, i)) return false;
  MlirValue base;
  MlirOperation pw = scalarOp(sq, "tdag.pow_scalar", "exponent", 2.0);
  MlirOperation mm = defOf(sq, "tdag.mul");
  if (!mlirOperationIsNull(pw)) base = operandOf(pw, 0);
  else if (!mlirOperationIsNull(mm) && mlirValueEqual(operandOf(mm, 0), operandOf(mm, 1)))
    base = operandOf(mm, 0);
  else
    return false;
  if (!mlirValueIsNull(m->x) && !mlirValueEqual(m->x, base)) return false;
  m->x = base;
  m->eps = piperGetFloatAttr(add, "value", 0.0);
  return true;
}

/* normed = x * rstd(x), either order (ctx: the NormMatch to fill) */
static bool isNormed(MlirValue v, void *ctx) {
  MlirOperation mul = defOf(v, "tdag.mul");
  for (int k = 0; !mlirOperationIsNull(mul) && k < 2; ++k) {
    NormMatch m = {operandOf(mul, k), 0.0};
    if (mlirTypeEqual(typeOf(m.x), typeOf(v)) && isRstd(operandOf(mul, 1 - k), &m)) {
      *(NormMatch *)ctx = m;
      return true;
    }
  }
  return false;
}

/* mul(normed, w), w a vector of the last dim -> rmsnorm(x, w) {eps} */
static bool fuseRmsnorm(MlirRewriterBase rw, MlirOperation op) {
  NormMatch m = {{NULL}, 0.0};
  MlirValue normed, w;
  if (!eitherOrder(op, isNormed, &m, &normed, &w) || rankOf(w) != 1 ||
      dimOf(w, 0) != dimOf(normed, -1) ||
      !mlirTypeEqual(typeOf(normed), typeOf(mlirOperationGetResult(op, 0))))
    return false;
  MlirContext ctx = mlirOperationGetContext(op);
  int64_t r = rankOf(m.x), shape[PIPER_MAX_RANK];
  for (int64_t i = 0; i < r; ++i) shape[i] = dimOf(m.x, i);
  shape[r - 1] = 1;
  MlirType types[2] = {typeOf(m.x), piperTensorType(ctx, r, shape, mlirF32TypeGet(ctx))};
  MlirNamedAttribute a =
      piperNamedAttr(ctx, "eps", mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), m.eps));
  MlirValue ops[2] = {m.x, w};
  MlirOperation n = build(rw, op, "tdag.rmsnorm", 2, ops, 2, types, 1, &a);
  replaceWith(rw, op, n);
  return true;
}

/* 0.5 x, its x to *ctx */
static bool isHalfX(MlirValue v, void *ctx) {
  MlirOperation h = scalarOp(v, "tdag.mul_scalar", "value", 0.5);
  if (mlirOperationIsNull(h)) return false;
  *(MlirValue *)ctx = operandOf(h, 0);
  return true;
}

/* 1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)) of the given x */
static bool isTanhBranch(MlirValue v, MlirValue x) {
  MlirOperation one = scalarOp(v, "tdag.add_scalar", "value", 1.0);
  MlirOperation th = mlirOperationIsNull(one) ? one : defOf(operandOf(one, 0), "tdag.tanh");
  MlirOperation c = mlirOperationIsNull(th) ? th
                                            : scalarOp(operandOf(th, 0), "tdag.mul_scalar",
                                                       "value", GELU_SQRT_2_OVER_PI);
  MlirOperation sum = mlirOperationIsNull(c) ? c : defOf(operandOf(c, 0), "tdag.add");
  for (int k = 0; !mlirOperationIsNull(sum) && k < 2; ++k) {
    MlirOperation cube = scalarOp(operandOf(sum, 1 - k), "tdag.mul_scalar", "value", 0.044715);
    MlirOperation pw = mlirOperationIsNull(cube) ? cube
                                                 : scalarOp(operandOf(cube, 0), "tdag.pow_scalar",
                                                            "exponent", 3.0);
    if (!mlirOperationIsNull(pw) && mlirValueEqual(operandOf(sum, k), x) &&
        mlirValueEqual(operandOf(pw, 0), x))
      return true;
  }
  return false;
}

/* mul(0.5 x, 1 + tanh(...)) -> gelu(x) */
static bool fuseGelu(MlirRewriterBase rw, MlirOperation op) {
  MlirValue x = {NULL}, half, branch;
  if (!eitherOrder(op, isHalfX, &x, &half, &branch) || !isTanhBranch(branch, x) ||
      !mlirTypeEqual(typeOf(x), typeOf(mlirOperationGetResult(op, 0))))
    return false;
  MlirType t = typeOf(x);
  MlirOperation g = build(rw, op, "tdag.gelu", 1, &x, 1, &t, 0, NULL);
  replaceWith(rw, op, g);
  return true;
}

static bool isSilu(MlirValue v, void *ctx) { return !mlirOperationIsNull(defOf(v, "tdag.silu")); }

/* mul(silu(a), b), a, b and the result of one shape -> swiglu(a, b) */
static bool fuseSwiglu(MlirRewriterBase rw, MlirOperation op) {
  MlirValue s, b;
  MlirType t = typeOf(mlirOperationGetResult(op, 0));
  if (!eitherOrder(op, isSilu, NULL, &s, &b) || !mlirTypeEqual(typeOf(s), t) ||
      !mlirTypeEqual(typeOf(b), t))
    return false;
  MlirValue ops[2] = {operandOf(defOf(s, "tdag.silu"), 0), b};
  MlirOperation g = build(rw, op, "tdag.swiglu", 2, ops, 1, &t, 0, NULL);
  replaceWith(rw, op, g);
  return true;
}

static MlirLogicalResult fuseMul(MlirRewritePattern p, MlirOperation op, MlirPatternRewriter r,
                                 void *u) {
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  bool done = fuseRmsnorm(rw, op) || fuseGelu(rw, op) || fuseSwiglu(rw, op);
  return done ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}

/* ---- rotary position embedding ---- */

/* What a RoPE operand was read from. */
typedef struct {
  int64_t D;    /* head_dim */
  double theta; /* the base */
} RopeTable;

/* v = a rotate-half tdag.rope_table {sin = sn} (T, D), reshaped and maybe broadcast, laid over
 * x (B,T,H,D) with its rows on x's dim 1 and its columns on dim 3: fills *tab. */
static bool ropeTableOver(MlirValue v, MlirValue x, int64_t sn, RopeTable *tab) {
  MlirOperation bc = defOf(v, "tdag.broadcast");
  MlirValue own = mlirOperationIsNull(bc) ? v : operandOf(bc, 0);
  MlirOperation rt = defOf(throughReshapes(own), "tdag.rope_table");
  if (mlirOperationIsNull(rt) || piperGetIntAttr(rt, "sin", -1) != sn || rankOf(x) != 4)
    return false;
  MlirValue table = mlirOperationGetResult(rt, 0);
  int64_t D = piperGetIntAttr(rt, "head_dim", 0), T = dimOf(table, 0), r = rankOf(own);
  if (dimOf(table, 1) != D || dimOf(x, 1) != T || dimOf(x, 3) != D || r < 3)
    return false;
  /* own right-aligned to x's 4 dims: (1,) T, 1, D */
  if (dimOf(own, r - 1) != D || dimOf(own, r - 2) != 1 || dimOf(own, r - 3) != T ||
      (r == 4 && dimOf(own, 0) != 1))
    return false;
  if (tab->D && (tab->D != D || tab->theta != piperGetFloatAttr(rt, "theta", 0.0))) return false;
  tab->D = D;
  tab->theta = piperGetFloatAttr(rt, "theta", 0.0);
  return true;
}

/* The x of mul(x, table): the operand that is not the table (ctx: {sin flag, RopeTable *}). */
typedef struct {
  int64_t sn;
  RopeTable *tab;
  MlirValue x; /* the value rotated, when already known */
} RopeTerm;

static bool ropeTerm(MlirValue term, RopeTerm *t, MlirValue *x) {
  MlirOperation mul = defOf(term, "tdag.mul");
  for (int k = 0; !mlirOperationIsNull(mul) && k < 2; ++k) {
    MlirValue a = operandOf(mul, k), tbl = operandOf(mul, 1 - k);
    if (mlirTypeEqual(typeOf(a), typeOf(term)) && ropeTableOver(tbl, a, t->sn, t->tab)) {
      *x = a;
      return true;
    }
  }
  return false;
}

/* rotate_half(x) = cat(-x[..., D/2:], x[..., :D/2]) over the last dim */
static bool isRotateHalf(MlirValue v, MlirValue x) {
  MlirOperation cat = defOf(v, "tdag.concat");
  if (mlirOperationIsNull(cat) || mlirOperationGetNumOperands(cat) != 2 ||
      piperGetIntAttr(cat, "dim", -1) != rankOf(v) - 1)
    return false;
  int64_t half = dimOf(x, -1) / 2;
  MlirOperation neg = scalarOp(operandOf(cat, 0), "tdag.mul_scalar", "value", -1.0);
  MlirOperation hi = mlirOperationIsNull(neg) ? neg : defOf(operandOf(neg, 0), "tdag.slice");
  MlirOperation lo = defOf(operandOf(cat, 1), "tdag.slice");
  return !mlirOperationIsNull(hi) && !mlirOperationIsNull(lo) &&
         mlirValueEqual(operandOf(hi, 0), x) && mlirValueEqual(operandOf(lo, 0), x) &&
         piperGetIntAttr(hi, "start", -1) == half && piperGetIntAttr(lo, "start", -1) == 0 &&
         piperGetIntAttr(hi, "dim", -1) == rankOf(x) - 1 &&
         piperGetIntAttr(lo, "dim", -1) == rankOf(x) - 1 && dimOf(operandOf(cat, 0), -1) == half;
}

/* add(x * cos, rotate_half(x) * sin), either order, x (B,T,H,D), the tables rotate-half
 * rope_tables of one head_dim and theta -> reshape(rope(reshape(x, (B,T,H*D)))) */
static MlirLogicalResult fuseRope(MlirRewritePattern p, MlirOperation op, MlirPatternRewriter r,
                                  void *u) {
  RopeTable tab = {0, 0.0};
  RopeTerm cosTerm = {0, &tab, {NULL}}, sinTerm = {1, &tab, {NULL}};
  MlirValue x = {NULL}, rot = {NULL};
  bool found = false;
  for (int k = 0; k < 2 && !found; ++k) {
    tab = (RopeTable){0, 0.0};
    found = ropeTerm(operandOf(op, k), &cosTerm, &x) &&
            ropeTerm(operandOf(op, 1 - k), &sinTerm, &rot) && isRotateHalf(rot, x);
  }
  MlirValue out = mlirOperationGetResult(op, 0);
  if (!found || !mlirTypeEqual(typeOf(x), typeOf(out))) return mlirLogicalResultFailure();
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirContext ctx = mlirOperationGetContext(op);
  int64_t B = dimOf(x, 0), T = dimOf(x, 1), H = dimOf(x, 2), D = dimOf(x, 3);
  int64_t packed[3] = {B, T, H * D}, shape[4] = {B, T, H, D};
  MlirValue flat = reshapeTo(rw, op, x, 3, packed);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirNamedAttribute attrs[2] = {
      piperNamedAttr(ctx, "head_dim", mlirIntegerAttrGet(i64, D)),
      piperNamedAttr(ctx, "theta", mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), tab.theta))};
  MlirType t = typeOf(flat);
  MlirOperation rope = build(rw, op, "tdag.rope", 1, &flat, 1, &t, 2, attrs);
  MlirValue y = reshapeTo(rw, op, mlirOperationGetResult(rope, 0), 4, shape);
  mlirRewriterBaseReplaceOpWithValues(rw, op, 1, &y);
  return mlirLogicalResultSuccess();
}

/* ---- embeddings ---- */

static bool isEmbed(MlirValue v, void *ctx) { return !mlirOperationIsNull(defOf(v, "tdag.embed")); }

/* add_bcast(embed(tokens, wte), P), P the first T rows of a table W (W itself, or its slice
 * from row 0) -> embedding(tokens, wte, W): GPT-2's wte(idx) + wpe(arange(T)) */
static MlirLogicalResult fuseEmbedding(MlirRewritePattern p, MlirOperation op,
                                       MlirPatternRewriter r, void *u) {
  MlirValue tok, pos;
  if (!eitherOrder(op, isEmbed, NULL, &tok, &pos)) return mlirLogicalResultFailure();
  MlirOperation embed = defOf(tok, "tdag.embed"), rows = defOf(pos, "tdag.slice");
  MlirValue table = pos;
  if (!mlirOperationIsNull(rows)) {
    if (piperGetIntAttr(rows, "dim", -1) != 0 || piperGetIntAttr(rows, "start", -1) != 0)
      return mlirLogicalResultFailure();
    table = operandOf(rows, 0);
  }
  MlirValue tokens = operandOf(embed, 0);
  if (rankOf(tok) != 3 || rankOf(pos) != 2 || dimOf(pos, 0) != dimOf(tok, 1) ||
      dimOf(pos, 1) != dimOf(tok, 2) || rankOf(table) != 2 || dimOf(table, 1) != dimOf(tok, 2) ||
      mlirOperationIsNull(defOf(table, "tdag.param")))
    return mlirLogicalResultFailure();
  MlirRewriterBase rw = mlirPatternRewriterAsBase(r);
  MlirValue ops[3] = {tokens, operandOf(embed, 1), table};
  MlirType t = typeOf(tok);
  replaceWith(rw, op, build(rw, op, "tdag.embedding", 3, ops, 1, &t, 0, NULL));
  return mlirLogicalResultSuccess();
}

/* ---- the pass ---- */

typedef MlirLogicalResult (*PatternFn)(MlirRewritePattern, MlirOperation, MlirPatternRewriter,
                                       void *);
static const struct {
  const char *root;
  PatternFn fn;
} patterns[] = {
    {"tdag.reshape", foldReshape},
    {"tdag.permute", foldPermute},
    {"tdag.bmm", fuseAttention},
    {"tdag.mul", fuseMul},
    {"tdag.add_bcast", fuseEmbedding},
    {"tdag.add", fuseRope},
    {"tdag.gqa_attention", fusePackedAttention},
};

/* Erases forward ops whose results nothing reads, last first, so a chain a pattern replaced
 * goes whole (run only after a rewrite: a module the patterns left alone is left as it was).
 * Leaves stay: a buffer the chain read is still in the weights file, which --init-checkpoint
 * must match. */
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

/* A pattern of the table, counting its rewrites in *userData (an int64_t). */
static MlirLogicalResult counted(MlirRewritePattern p, MlirOperation op, MlirPatternRewriter r,
                                 void *userData) {
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; ++i)
    if (piperOpIs(op, patterns[i].root) &&
        mlirLogicalResultIsSuccess(patterns[i].fn(p, op, r, NULL))) {
      ++*(int64_t *)userData;
      return mlirLogicalResultSuccess();
    }
  return mlirLogicalResultFailure();
}

MlirLogicalResult piperFuse(MlirOperation module) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirRewritePatternSet set = mlirRewritePatternSetCreate(ctx);
  int64_t rewrites = 0;
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; ++i) {
    MlirRewritePatternCallbacks cb = {0};
    cb.matchAndRewrite = counted;
    mlirRewritePatternSetAdd(set, mlirOpRewritePatternCreate(piperStr(patterns[i].root), 1, ctx,
                                                             cb, &rewrites, 0, NULL));
  }
  MlirFrozenRewritePatternSet frozen = mlirFreezeRewritePattern(set);
  /* freezing moves the patterns out; the emptied set is still ours to free (LLVM 22) */
  mlirRewritePatternSetDestroy(set);
  MlirGreedyRewriteDriverConfig config = mlirGreedyRewriteDriverConfigCreate();
  MlirLogicalResult status = mlirApplyPatternsAndFoldGreedilyWithOp(module, frozen, config);
  mlirGreedyRewriteDriverConfigDestroy(config);
  mlirFrozenRewritePatternSetDestroy(frozen);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); rewrites && !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f))
    if (piperOpIs(f, "func.func") && !mlirRegionIsNull(mlirOperationGetRegion(f, 0)) &&
        !mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0))))
      eraseDead(mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0)));
  if (mlirLogicalResultIsFailure(status))
    mlirEmitError(mlirOperationGetLocation(module),
                  "piper-fuse: the rewrite did not converge in the greedy driver's iterations");
  return status;
}

static MlirLogicalResult runFuse(MlirOperation module, const char *arg) {
  return piperFuse(module);
}

MlirPass piperCreateFusePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-fuse",
                               "fold general-op chains into fused ops (attention, rmsnorm, gelu, "
                               "swiglu)",
                               runFuse, arg);
}
