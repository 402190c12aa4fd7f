/* --piper-autodiff: forward graph -> training graph, as IR.
 *
 * For every function that reports a loss (tdag.output {name = "loss"}), appends before its
 * return the reverse-mode backward ops and one tdag.adamw per parameter that receives a
 * gradient. Gradients that fan in (the residual stream, the tied wte) are summed with tdag.add.
 * Generated ops carry the tags of the forward op they differentiate and `pass = "B"` (backward)
 * or `pass = "UPD"` (update), which the directive passes group by. A function without a loss, or
 * one that already holds backward ops, is left untouched: the pass is idempotent.
 */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"
#include "piper/ptrmap.h"

/* Gradients live in a PiperPtrMap: forward value ptr -> gradient value ptr. */
static MlirValue mapGet(const PiperPtrMap *m, MlirValue v) {
  intptr_t g = 0;
  return piperPtrMapGet(m, v.ptr, &g) ? (MlirValue){(const void *)g} : (MlirValue){NULL};
}

static void mapPut(PiperPtrMap *m, MlirValue v, MlirValue g) {
  piperPtrMapPut(m, v.ptr, (intptr_t)g.ptr);
}

/* ---- emitting ops before the function's terminator ---- */
typedef struct {
  MlirContext ctx;
  MlirBlock block;        /* the function body */
  MlirOperation before;   /* its terminator: new ops go right before it */
  PiperPtrMap grads;      /* forward value -> its gradient so far */
  PiperPtrMap trained;    /* forward values that depend on a trained parameter: only these
                             get gradients (a buffer, a constant mask, a tdag.param {init =
                             "buffer"} and what is computed from them alone get none) */
  bool failed;            /* a rule has emitted an error */
} Builder;

/* Creates the tdag op `id`, inserts it, and gives it `from`'s tags plus pass = `pass`. */
static MlirOperation emit(Builder *b, PiperOpId id, MlirOperation from, const char *pass,
                          intptr_t nOperands, const MlirValue *operands, intptr_t nResults,
                          const MlirType *results, intptr_t nAttrs,
                          const MlirNamedAttribute *attrs) {
  MlirOperation op = piperTdagOpCreate(id, mlirOperationGetLocation(from), nOperands, operands,
                                       nResults, results, nAttrs, attrs);
  mlirBlockInsertOwnedOperationBefore(b->block, b->before, op);
  MlirAttribute tags = mlirOperationGetAttributeByName(from, piperStr("tags"));
  if (!mlirAttributeIsNull(tags)) mlirOperationSetAttributeByName(op, piperStr("tags"), tags);
  mlirOperationSetAttributeByName(op, piperStr("pass"),
                                  mlirStringAttrGet(b->ctx, piperStr(pass)));
  return op;
}

static MlirType typeOf(MlirValue v) { return mlirValueGetType(v); }

/* True if `v` depends on a trained parameter, so the loss has a gradient for it. */
static bool wantsGrad(const Builder *b, MlirValue v) {
  return piperPtrMapGet(&b->trained, v.ptr, NULL);
}

/* Adds `g` to the gradient of `v`; integer values (tokens, targets) and values that depend on
 * no trained parameter have none. */
static void accumulate(Builder *b, MlirOperation from, MlirValue v, MlirValue g) {
  if (!piperTensorIsF32(typeOf(v)) || !wantsGrad(b, v)) return;
  MlirValue old = mapGet(&b->grads, v);
  if (!old.ptr) {
    mapPut(&b->grads, v, g);
    return;
  }
  MlirValue sum[2] = {old, g};
  MlirType t = typeOf(v);
  MlirOperation add = emit(b, PIPER_TDAG_ADD, from, "B", 2, sum, 1, &t, 0, NULL);
  mapPut(&b->grads, v, mlirOperationGetResult(add, 0));
}

/* One result, operands `ops`, result type like `like`. */
static MlirValue emit1(Builder *b, PiperOpId id, MlirOperation from, intptr_t n,
                       const MlirValue *ops, MlirValue like) {
  MlirType t = typeOf(like);
  return mlirOperationGetResult(emit(b, id, from, "B", n, ops, 1, &t, 0, NULL), 0);
}

static MlirValue operand(MlirOperation op, intptr_t i) { return mlirOperationGetOperand(op, i); }
static MlirValue result(MlirOperation op, intptr_t i) { return mlirOperationGetResult(op, i); }

/* x @ w^T (+ b): dx = dy w, dw = dy^T x, db = sum(dy). */
static void gradLinear(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), w = operand(op, 1);
  MlirValue inOps[2] = {dy, w}, wOps[2] = {dy, x};
  accumulate(b, op, x, emit1(b, PIPER_TDAG_LINEAR_GRAD_INPUT, op, 2, inOps, x));
  accumulate(b, op, w, emit1(b, PIPER_TDAG_LINEAR_GRAD_WEIGHT, op, 2, wOps, w));
  if (mlirOperationGetNumOperands(op) == 3)
    accumulate(b, op, operand(op, 2), emit1(b, PIPER_TDAG_BIAS_GRAD, op, 1, &dy, operand(op, 2)));
}

/* The MoE ops' geometry attributes (num_experts, groups) that the gradient op of `op` repeats,
 * when present; returns how many were written to `attrs` (at most 2). */
static intptr_t moeAttrs(Builder *b, MlirOperation op, MlirNamedAttribute *attrs) {
  static const char *names[2] = {"num_experts", "groups"};
  intptr_t n = 0;
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(names[i]));
    if (!mlirAttributeIsNull(a)) attrs[n++] = piperNamedAttr(b->ctx, names[i], a);
  }
  return n;
}

/* moe_experts(rows, counts, gates..., ups..., downs...): the rows' gradient in one op (BI),
 * each expert's three weight gradients in an op of its own (BW). */
static void gradMoeExperts(Builder *b, MlirOperation op, MlirValue dy) {
  intptr_t n = mlirOperationGetNumOperands(op), El = (n - 2) / 3;
  MlirValue rows = operand(op, 0), counts = operand(op, 1), hidden = result(op, 1);
  MlirValue *ins = malloc((size_t)(n + 1) * sizeof *ins);
  ins[0] = dy;
  ins[1] = counts;
  ins[2] = hidden;
  for (intptr_t i = 2; i < n; ++i) ins[i + 1] = operand(op, i);
  MlirNamedAttribute attrs[3];
  intptr_t na = moeAttrs(b, op, attrs);
  int32_t seg[6] = {1, 1, 1, (int32_t)El, (int32_t)El, (int32_t)El};
  attrs[na] = piperNamedAttr(b->ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 6, seg));
  MlirType rt = typeOf(rows);
  MlirOperation gi =
      emit(b, PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT, op, "B", n + 1, ins, 1, &rt, na + 1, attrs);
  accumulate(b, op, rows, result(gi, 0));
  free(ins);
  MlirType i64 = mlirIntegerTypeGet(b->ctx, 64);
  for (intptr_t j = 0; j < El; ++j) {
    MlirValue g = operand(op, 2 + j), u = operand(op, 2 + El + j), d = operand(op, 2 + 2 * El + j);
    MlirValue wIns[5] = {dy, rows, counts, hidden, d};
    MlirType types[3] = {typeOf(g), typeOf(u), typeOf(d)};
    attrs[na] = piperNamedAttr(b->ctx, "expert", mlirIntegerAttrGet(i64, j));
    MlirOperation gw =
        emit(b, PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT, op, "B", 5, wIns, 3, types, na + 1, attrs);
    accumulate(b, op, g, result(gw, 0));
    accumulate(b, op, u, result(gw, 1));
    accumulate(b, op, d, result(gw, 2));
  }
}

/* add: dx = dy, dy */
static void gradAdd(Builder *b, MlirOperation op, MlirValue dy) {
  accumulate(b, op, operand(op, 0), dy);
  accumulate(b, op, operand(op, 1), dy);
}

/* bias_add: dx = dy; db = the column sums of dy */
static void gradBiasAdd(Builder *b, MlirOperation op, MlirValue dy) {
  accumulate(b, op, operand(op, 0), dy);
  accumulate(b, op, operand(op, 1), emit1(b, PIPER_TDAG_BIAS_GRAD, op, 1, &dy, operand(op, 1)));
}

/* The shared elementwise rule (gelu, swiglu): y = X(x...), so (dx...) = X_grad(dy, x...),
 * X_grad the row's gradOp, one gradient per operand, each typed like its operand. */
static void gradElementwise(Builder *b, MlirOperation op, MlirValue dy) {
  const PiperOpFacts *f = piperOpFacts(op);
  size_t nRows;
  const PiperOpFacts *g = &piperOpFactsTable(&nRows)[f->gradOp];
  intptr_t n = mlirOperationGetNumOperands(op);
  MlirValue ops[8];
  MlirType types[8];
  if (g->kind != PIPER_OP_BACKWARD || n + 1 > 8) { /* a list defect, not the model's */
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-autodiff: internal error: %s shares the elementwise gradient rule "
                    "but its row names no backward .gradOp (include/piper/tdag_ops.def), or it "
                    "has more than 7 operands", f->name);
    b->failed = true;
    return;
  }
  ops[0] = dy;
  for (intptr_t i = 0; i < n; ++i) {
    ops[i + 1] = operand(op, i);
    types[i] = typeOf(operand(op, i));
  }
  MlirOperation gop = emit(b, g->id, op, "B", n + 1, ops, n, types, 0, NULL);
  for (intptr_t i = 0; i < n; ++i) accumulate(b, op, operand(op, i), result(gop, i));
}

/* layernorm: (dx, dw, db) from dy, x, w and the saved mean and rstd */
static void gradLayernorm(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), w = operand(op, 1), bias = operand(op, 2);
  MlirValue ops[5] = {dy, x, w, result(op, 1), result(op, 2)};
  MlirType types[3] = {typeOf(x), typeOf(w), typeOf(bias)};
  MlirOperation g = emit(b, PIPER_TDAG_LAYERNORM_GRAD, op, "B", 5, ops, 3, types, 0, NULL);
  accumulate(b, op, x, result(g, 0));
  accumulate(b, op, w, result(g, 1));
  accumulate(b, op, bias, result(g, 2));
}

/* attention: dqkv from dy, qkv and the forward's out and lse; heads carried over */
static void gradAttention(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue qkv = operand(op, 0);
  MlirValue ops[4] = {dy, qkv, result(op, 0), result(op, 1)};
  MlirType t = typeOf(qkv);
  MlirNamedAttribute heads = piperNamedAttr(
      b->ctx, "heads", mlirOperationGetAttributeByName(op, piperStr("heads")));
  MlirOperation g = emit(b, PIPER_TDAG_ATTENTION_GRAD, op, "B", 4, ops, 1, &t, 1, &heads);
  accumulate(b, op, qkv, result(g, 0));
}

/* embedding: (dwte, dwpe) from dy and the tokens */
static void gradEmbedding(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue wte = operand(op, 1), wpe = operand(op, 2);
  MlirValue ops[2] = {dy, operand(op, 0)};
  MlirType types[2] = {typeOf(wte), typeOf(wpe)};
  MlirOperation g = emit(b, PIPER_TDAG_EMBEDDING_GRAD, op, "B", 2, ops, 2, types, 0, NULL);
  accumulate(b, op, wte, result(g, 0));
  accumulate(b, op, wpe, result(g, 1));
}

/* embed: x = wte[tokens], so dwte = the scatter-sum of dy by token */
static void gradEmbed(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue wte = operand(op, 1);
  MlirValue ops[2] = {dy, operand(op, 0)};
  accumulate(b, op, wte, emit1(b, PIPER_TDAG_EMBED_GRAD, op, 2, ops, wte));
}

/* rmsnorm: y = x * rstd * w, so (dx, dw) from dy, x, w and the saved rstd */
static void gradRmsnorm(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), w = operand(op, 1);
  MlirValue ops[4] = {dy, x, w, result(op, 1)};
  MlirType types[2] = {typeOf(x), typeOf(w)};
  MlirOperation g = emit(b, PIPER_TDAG_RMSNORM_GRAD, op, "B", 4, ops, 2, types, 0, NULL);
  accumulate(b, op, x, result(g, 0));
  accumulate(b, op, w, result(g, 1));
}

/* rope: a rotation per (position, pair), so dx = the inverse rotation of dy, same attributes */
static void gradRope(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  MlirType t = typeOf(x);
  MlirNamedAttribute attrs[2] = {
      piperNamedAttr(b->ctx, "head_dim",
                     mlirOperationGetAttributeByName(op, piperStr("head_dim"))),
      piperNamedAttr(b->ctx, "theta", mlirOperationGetAttributeByName(op, piperStr("theta")))};
  MlirOperation g = emit(b, PIPER_TDAG_ROPE_GRAD, op, "B", 1, &dy, 1, &t, 2, attrs);
  accumulate(b, op, x, result(g, 0));
}

/* gqa_attention: (dq, dk, dv) from dy, q, k, v and the forward's out and lse; heads and
 * kv_heads carried over */
static void gradGqaAttention(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue q = operand(op, 0), k = operand(op, 1), v = operand(op, 2);
  MlirValue ops[6] = {dy, q, k, v, result(op, 0), result(op, 1)};
  MlirType types[3] = {typeOf(q), typeOf(k), typeOf(v)};
  MlirNamedAttribute attrs[2] = {
      piperNamedAttr(b->ctx, "heads", mlirOperationGetAttributeByName(op, piperStr("heads"))),
      piperNamedAttr(b->ctx, "kv_heads",
                     mlirOperationGetAttributeByName(op, piperStr("kv_heads")))};
  MlirOperation g = emit(b, PIPER_TDAG_GQA_ATTENTION_GRAD, op, "B", 6, ops, 3, types, 2, attrs);
  accumulate(b, op, q, result(g, 0));
  accumulate(b, op, k, result(g, 1));
  accumulate(b, op, v, result(g, 2));
}

/* moe_topk: only the weights (#0) have a gradient; the expert ids are integers */
static void gradMoeTopk(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue ops[3] = {dy, result(op, 0), result(op, 1)};
  accumulate(b, op, operand(op, 0), emit1(b, PIPER_TDAG_MOE_TOPK_GRAD, op, 3, ops, operand(op, 0)));
}

/* moe_dispatch: dh = the sum of the gradients of a token's K rows */
static void gradMoeDispatch(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue h = operand(op, 0), ops[2] = {dy, operand(op, 1)};
  MlirNamedAttribute attrs[2];
  intptr_t na = moeAttrs(b, op, attrs);
  MlirType t = typeOf(h);
  MlirOperation g = emit(b, PIPER_TDAG_MOE_DISPATCH_GRAD, op, "B", 2, ops, 1, &t, na, attrs);
  accumulate(b, op, h, result(g, 0));
}

/* moe_combine: (dout, dweights) from dy, out, weights, experts */
static void gradMoeCombine(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue out = operand(op, 0), w = operand(op, 1);
  MlirValue ops[4] = {dy, out, w, operand(op, 2)};
  MlirNamedAttribute attrs[2];
  intptr_t na = moeAttrs(b, op, attrs);
  MlirType types[2] = {typeOf(out), typeOf(w)};
  MlirOperation g = emit(b, PIPER_TDAG_MOE_COMBINE_GRAD, op, "B", 4, ops, 2, types, na, attrs);
  accumulate(b, op, out, result(g, 0));
  accumulate(b, op, w, result(g, 1));
}

/* ---- the general tensor ops (python/piper's): gradients built from the general ops
 * themselves, each emitted only for operands that want one ---- */

static MlirAttribute i64Attr(Builder *b, int64_t v) {
  return mlirIntegerAttrGet(mlirIntegerTypeGet(b->ctx, 64), v);
}
static MlirAttribute f64Attr(Builder *b, double v) {
  return mlirFloatAttrDoubleGet(b->ctx, mlirF64TypeGet(b->ctx), v);
}

/* One op of result type `t` (operands `ops`, attributes `attrs`), its result. */
static MlirValue emitTyped(Builder *b, PiperOpId id, MlirOperation from, intptr_t n,
                           const MlirValue *ops, MlirType t, intptr_t nAttrs,
                           const MlirNamedAttribute *attrs) {
  return result(emit(b, id, from, "B", n, ops, 1, &t, nAttrs, attrs), 0);
}

/* `g` summed down to `like`'s shape where broadcasting made it larger (tdag.sum_to). */
static MlirValue sumToLike(Builder *b, MlirOperation from, MlirValue g, MlirValue like) {
  MlirType t = typeOf(like);
  if (mlirTypeEqual(typeOf(g), t)) return g;
  return emitTyped(b, PIPER_TDAG_SUM_TO, from, 1, &g, t, 0, NULL);
}

/* reshape: dx = dy reshaped back */
static void gradReshape(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  if (wantsGrad(b, x))
    accumulate(b, op, x, emitTyped(b, PIPER_TDAG_RESHAPE, op, 1, &dy, typeOf(x), 0, NULL));
}

/* permute {perm}: dx = dy permuted by the inverse permutation */
static void gradPermute(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  int64_t r = piperTensorRank(typeOf(x)), perm[PIPER_MAX_RANK], inverse[PIPER_MAX_RANK];
  if (!wantsGrad(b, x) || !piperPermuteOf(op, r, perm)) return; /* the verifier checked perm */
  for (int64_t i = 0; i < r; ++i) inverse[perm[i]] = i;
  MlirNamedAttribute attr =
      piperNamedAttr(b->ctx, "perm", mlirDenseI64ArrayGet(b->ctx, r, inverse));
  accumulate(b, op, x, emitTyped(b, PIPER_TDAG_PERMUTE, op, 1, &dy, typeOf(x), 1, &attr));
}

/* broadcast: dx = dy summed over the broadcast dims */
static void gradBroadcast(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  if (wantsGrad(b, x)) accumulate(b, op, x, sumToLike(b, op, dy, x));
}

/* sum_to: dx = dy broadcast back */
static void gradSumTo(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  if (wantsGrad(b, x))
    accumulate(b, op, x, emitTyped(b, PIPER_TDAG_BROADCAST, op, 1, &dy, typeOf(x), 0, NULL));
}

/* slice {dim, start}: dx = zeros with dy at the slice (slice_grad, same attributes) */
static void gradSlice(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  if (!wantsGrad(b, x)) return;
  MlirNamedAttribute attrs[2] = {
      piperNamedAttr(b->ctx, "dim", mlirOperationGetAttributeByName(op, piperStr("dim"))),
      piperNamedAttr(b->ctx, "start", mlirOperationGetAttributeByName(op, piperStr("start")))};
  accumulate(b, op, x, emitTyped(b, PIPER_TDAG_SLICE_GRAD, op, 1, &dy, typeOf(x), 2, attrs));
}

/* concat {dim}: each operand's gradient is dy's slice at the operand's place */
static void gradConcat(Builder *b, MlirOperation op, MlirValue dy) {
  int64_t d = piperGetIntAttr(op, "dim", 0), start = 0;
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
    MlirValue x = operand(op, k);
    if (wantsGrad(b, x)) {
      MlirNamedAttribute attrs[2] = {piperNamedAttr(b->ctx, "dim", i64Attr(b, d)),
                                     piperNamedAttr(b->ctx, "start", i64Attr(b, start))};
      accumulate(b, op, x, emitTyped(b, PIPER_TDAG_SLICE, op, 1, &dy, typeOf(x), 2, attrs));
    }
    start += piperTensorDim(typeOf(x), d);
  }
}

/* One bmm {transpose_a = ta, transpose_b = tb} of `l` and `r` typed like `like`. */
static MlirValue emitBmm(Builder *b, MlirOperation from, MlirValue l, MlirValue r, bool ta,
                         bool tb, MlirValue like) {
  MlirValue ops[2] = {l, r};
  MlirNamedAttribute attrs[2] = {piperNamedAttr(b->ctx, "transpose_a", i64Attr(b, ta)),
                                 piperNamedAttr(b->ctx, "transpose_b", i64Attr(b, tb))};
  return emitTyped(b, PIPER_TDAG_BMM, from, 2, ops, typeOf(like), 2, attrs);
}

/* bmm: C = op(A) op(B), so dA = dC op(B)^T (or op(B) dC^T when A was transposed), dB = op(A)^T
 * dC (or dC^T op(A) when B was) */
static void gradBmm(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue a = operand(op, 0), bb = operand(op, 1);
  bool ta = piperGetIntAttr(op, "transpose_a", 0), tb = piperGetIntAttr(op, "transpose_b", 0);
  if (wantsGrad(b, a))
    accumulate(b, op, a, ta ? emitBmm(b, op, bb, dy, tb, true, a)
                            : emitBmm(b, op, dy, bb, false, !tb, a));
  if (wantsGrad(b, bb))
    accumulate(b, op, bb, tb ? emitBmm(b, op, dy, a, true, ta, bb)
                             : emitBmm(b, op, a, dy, !ta, false, bb));
}

/* add_bcast, sub, mul, div with suffix broadcast: each operand's gradient at the result's
 * shape, summed down to the operand's. a + b: dy, dy; a - b: dy, -dy; a * b: dy b, dy a;
 * a / b: dy / b, -(dy / b) (a / b). */
static void gradBinary(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x[2] = {operand(op, 0), operand(op, 1)}, g[2] = {dy, dy};
  PiperOpId id = piperOpFacts(op)->id;
  MlirNamedAttribute minus = piperNamedAttr(b->ctx, "value", f64Attr(b, -1.0));
  if (id == PIPER_TDAG_SUB && wantsGrad(b, x[1]))
    g[1] = emitTyped(b, PIPER_TDAG_MUL_SCALAR, op, 1, &dy, typeOf(dy), 1, &minus);
  if (id == PIPER_TDAG_MUL)
    for (int k = 0; k < 2; ++k)
      if (wantsGrad(b, x[k])) {
        MlirValue ops[2] = {dy, x[1 - k]};
        g[k] = emitTyped(b, PIPER_TDAG_MUL, op, 2, ops, typeOf(dy), 0, NULL);
      }
  if (id == PIPER_TDAG_DIV && (wantsGrad(b, x[0]) || wantsGrad(b, x[1]))) {
    MlirValue ops[2] = {dy, x[1]};
    g[0] = emitTyped(b, PIPER_TDAG_DIV, op, 2, ops, typeOf(dy), 0, NULL);
    if (wantsGrad(b, x[1])) {
      MlirValue prod[2] = {g[0], result(op, 0)};
      MlirValue t = emitTyped(b, PIPER_TDAG_MUL, op, 2, prod, typeOf(dy), 0, NULL);
      g[1] = emitTyped(b, PIPER_TDAG_MUL_SCALAR, op, 1, &t, typeOf(dy), 1, &minus);
    }
  }
  for (int k = 0; k < 2; ++k)
    if (wantsGrad(b, x[k])) accumulate(b, op, x[k], sumToLike(b, op, g[k], x[k]));
}

/* mul_scalar {value}: dx = dy * value */
static void gradMulScalar(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0);
  MlirNamedAttribute value =
      piperNamedAttr(b->ctx, "value", mlirOperationGetAttributeByName(op, piperStr("value")));
  if (wantsGrad(b, x))
    accumulate(b, op, x, emitTyped(b, PIPER_TDAG_MUL_SCALAR, op, 1, &dy, typeOf(x), 1, &value));
}

/* add_scalar: dx = dy */
static void gradAddScalar(Builder *b, MlirOperation op, MlirValue dy) {
  accumulate(b, op, operand(op, 0), dy);
}

/* pow_scalar {exponent}: dx = pow_scalar_grad(dy, x) {exponent} */
static void gradPowScalar(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), ops[2] = {dy, x};
  MlirNamedAttribute e = piperNamedAttr(
      b->ctx, "exponent", mlirOperationGetAttributeByName(op, piperStr("exponent")));
  if (wantsGrad(b, x))
    accumulate(b, op, x, emitTyped(b, PIPER_TDAG_POW_SCALAR_GRAD, op, 2, ops, typeOf(x), 1, &e));
}

/* softmax, log_softmax {dim}: dx = the row's .gradOp (dy, y) {dim}, from the saved result y */
static void gradSoftmax(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), ops[2] = {dy, result(op, 0)};
  size_t nRows;
  const PiperOpFacts *g = &piperOpFactsTable(&nRows)[piperOpFacts(op)->gradOp];
  MlirNamedAttribute dim =
      piperNamedAttr(b->ctx, "dim", mlirOperationGetAttributeByName(op, piperStr("dim")));
  if (wantsGrad(b, x)) accumulate(b, op, x, emitTyped(b, g->id, op, 2, ops, typeOf(x), 1, &dim));
}

/* masked_fill(x, mask) {value}: dx = masked_fill(dy, mask) {value = 0}; the mask is constant */
static void gradMaskedFill(Builder *b, MlirOperation op, MlirValue dy) {
  MlirValue x = operand(op, 0), ops[2] = {dy, operand(op, 1)};
  MlirNamedAttribute zero = piperNamedAttr(b->ctx, "value", f64Attr(b, 0.0));
  if (wantsGrad(b, x))
    accumulate(b, op, x, emitTyped(b, PIPER_TDAG_MASKED_FILL, op, 2, ops, typeOf(x), 1, &zero));
}

/* True for a tdag.param that is trained: not a buffer (init = "buffer": non-trained state). */
static bool isTrainedParam(MlirOperation op) {
  char init[16] = "";
  return piperIsOp(op, PIPER_TDAG_PARAM) && !(piperGetStringAttr(op, "init", init, sizeof init) &&
                                          !strcmp(init, "buffer"));
}

/* Marks every value computed from a trained parameter (Builder.trained), in program order. */
static void markTrained(Builder *b, MlirOperation *ops, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    bool trained = isTrainedParam(ops[i]);
    for (intptr_t k = 0; !trained && k < mlirOperationGetNumOperands(ops[i]); ++k)
      trained = wantsGrad(b, operand(ops[i], k));
    for (intptr_t r = 0; trained && r < mlirOperationGetNumResults(ops[i]); ++r)
      piperPtrMapPut(&b->trained, result(ops[i], r).ptr, 1);
  }
}

/* The gradient rule of each op, by id: the grad column of include/piper/tdag_ops.def. NONE:
 * leaves, the loss (seeded by differentiate), ops autodiff itself emits and ops of later
 * passes. */
typedef void (*GradRule)(Builder *b, MlirOperation op, MlirValue dy);
#define NONE NULL
static const GradRule gradRules[PIPER_TDAG_OP_COUNT] = {
#define TDAG_OP(ID, n, KIND, attributes, operands, results, shape, grad, lower, ...) \
  [PIPER_TDAG_##ID] = grad,
#include "piper/tdag_ops.def"
};
#undef NONE

/* The vector-Jacobian product of one forward op, given its output gradient `dy`. */
static MlirLogicalResult gradOp(Builder *b, MlirOperation op, MlirValue dy) {
  GradRule rule = gradRules[piperOpFacts(op)->id];
  if (rule) {
    rule(b, op, dy);
    return b->failed ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
  }
  char msg[160];
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  snprintf(msg, sizeof msg, "piper-autodiff: no gradient rule for '%.*s'", (int)n.length,
           n.data);
  mlirEmitError(mlirOperationGetLocation(op), msg);
  return mlirLogicalResultFailure();
}

/* A gradient or an update: the function is a training graph already. */
static bool isTrainingOp(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return f && (f->kind == PIPER_OP_BACKWARD || f->kind == PIPER_OP_UPDATE);
}

/* AdamW for parameter `param` with gradient `g`: two state tensors and the in-place update. */
static void emitUpdate(Builder *b, MlirOperation param, MlirValue g) {
  MlirValue p = result(param, 0);
  MlirType t = typeOf(p);
  /* the parameter's name attribute itself: whole, however long */
  MlirAttribute name = mlirOperationGetAttributeByName(param, piperStr("name"));
  MlirValue state[2];
  const char *slots[2] = {"exp_avg", "exp_avg_sq"};
  for (int i = 0; i < 2; ++i) {
    MlirNamedAttribute attrs[2] = {
        piperNamedAttr(b->ctx, "param", name),
        piperNamedAttr(b->ctx, "slot", mlirStringAttrGet(b->ctx, piperStr(slots[i])))};
    state[i] = result(emit(b, PIPER_TDAG_ADAM_STATE, param, "UPD", 0, NULL, 1, &t, 2, attrs), 0);
  }
  MlirType f64 = mlirF64TypeGet(b->ctx), i64 = mlirIntegerTypeGet(b->ctx, 64);
  /* Weight decay applies to matrices only (embeddings and linear weights), as in nanoGPT. */
  MlirNamedAttribute attrs[4] = {
      piperNamedAttr(b->ctx, "beta1", mlirFloatAttrDoubleGet(b->ctx, f64, 0.9)),
      piperNamedAttr(b->ctx, "beta2", mlirFloatAttrDoubleGet(b->ctx, f64, 0.95)),
      piperNamedAttr(b->ctx, "eps", mlirFloatAttrDoubleGet(b->ctx, f64, 1e-8)),
      piperNamedAttr(b->ctx, "decay",
                     mlirIntegerAttrGet(i64, piperTensorRank(t) == 2 ? 1 : 0))};
  MlirValue ops[4] = {p, g, state[0], state[1]};
  emit(b, PIPER_TDAG_ADAMW, param, "UPD", 4, ops, 0, NULL, 4, attrs);
}

static MlirLogicalResult differentiate(MlirContext ctx, MlirBlock body) {
  MlirOperation lossOut = {NULL};
  size_t nOps = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    char name[16];
    if (isTrainingOp(op)) return mlirLogicalResultSuccess(); /* already a training graph */
    if (piperIsOp(op, PIPER_TDAG_OUTPUT) && piperGetStringAttr(op, "name", name, sizeof name) &&
        !strcmp(name, "loss"))
      lossOut = op;
    nOps++;
  }
  if (mlirOperationIsNull(lossOut)) return mlirLogicalResultSuccess(); /* nothing to train */

  MlirValue loss = operand(lossOut, 0);
  MlirOperation lossOp = mlirValueIsAOpResult(loss) ? mlirOpResultGetOwner(loss)
                                                    : (MlirOperation){NULL};
  if (mlirOperationIsNull(lossOp) || !piperIsOp(lossOp, PIPER_TDAG_CROSS_ENTROPY) ||
      mlirOpResultGetResultNumber(loss) != 0) {
    mlirEmitError(mlirOperationGetLocation(lossOut),
                  "piper-autodiff: the loss must be result #0 of a tdag.cross_entropy");
    return mlirLogicalResultFailure();
  }

  MlirOperation *ops = malloc(nOps * sizeof *ops);
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ops[n++] = op;

  Builder b = {ctx, body, mlirBlockGetTerminator(body), {0}, {0}, false};
  piperPtrMapInit(&b.grads, nOps);
  piperPtrMapInit(&b.trained, nOps * 2);
  markTrained(&b, ops, n);
  MlirLogicalResult status = mlirLogicalResultSuccess();

  /* The seed: d(loss)/d(logits) of the mean cross-entropy, smoothed as the loss is. */
  MlirValue ceOps[2] = {result(lossOp, 1), operand(lossOp, 1)};
  MlirAttribute smoothing = mlirOperationGetAttributeByName(lossOp, piperStr("label_smoothing"));
  MlirNamedAttribute ceAttr = piperNamedAttr(ctx, "label_smoothing", smoothing);
  accumulate(&b, lossOp, operand(lossOp, 0),
             emitTyped(&b, PIPER_TDAG_CROSS_ENTROPY_GRAD, lossOp, 2, ceOps,
                       typeOf(operand(lossOp, 0)), mlirAttributeIsNull(smoothing) ? 0 : 1,
                       &ceAttr));

  for (size_t i = n; i-- > 0 && mlirLogicalResultIsSuccess(status);) {
    MlirOperation op = ops[i];
    const PiperOpFacts *f = piperOpFacts(op); /* leaves have no gradient rule */
    if (!f || op.ptr == lossOp.ptr || mlirOperationGetNumResults(op) == 0 ||
        f->kind == PIPER_OP_STATE || f->kind == PIPER_OP_IO)
      continue;
    MlirValue dy = mapGet(&b.grads, result(op, 0));
    if (!dy.ptr) continue; /* does not reach the loss */
    status = gradOp(&b, op, dy);
  }
  for (size_t i = 0; i < n && mlirLogicalResultIsSuccess(status); ++i) {
    if (!isTrainedParam(ops[i])) continue;
    MlirValue g = mapGet(&b.grads, result(ops[i], 0));
    if (g.ptr) emitUpdate(&b, ops[i], g);
  }
  piperPtrMapFree(&b.grads);
  piperPtrMapFree(&b.trained);
  free(ops);
  return status;
}

MlirLogicalResult piperAutodiff(MlirOperation module) {
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "func.func")) continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    if (mlirBlockIsNull(body)) continue; /* a declaration */
    if (mlirLogicalResultIsFailure(differentiate(ctx, body))) return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runAutodiff(MlirOperation module, const char *arg) {
  return piperAutodiff(module);
}

MlirPass piperCreateAutodiffPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-autodiff", "build the training graph",
                               runAutodiff, arg);
}
