/* tdag op -> runtime kernel call (include/piper/kernels.def), one rule per op: each opens with
 * the mapping it implements, in the CPU target's names (the GPU target calls prt_cuda_<name>
 * with the same arguments), and passes the arguments to lwCallKernel, which checks them
 * against the kernel list. */
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"

/* The call of op's kernel (its op-facts row's; under the bf16 policy its bf16Kernel where it
 * names one: lwPolicyKernel) with these n arguments. */
static void call(Lowering *L, MlirOperation op, intptr_t n, const MlirValue *args) {
  lwCallKernel(L, op, lwPolicyKernel(L, op), n, args);
}

static MlirType resultType(MlirOperation op, intptr_t r) {
  return mlirValueGetType(mlirOperationGetResult(op, r));
}

/* True for a backward op: a rule shared by an op and its gradient (attention, attention_grad)
 * reads which one it lowers from the op's kind. */
static bool isGradOp(MlirOperation op) { return piperOpFacts(op)->kind == PIPER_OP_BACKWARD; }

/* The MoE geometry attributes: E (num_experts) and G (groups, default 1). */
static MlirValue moeE(Lowering *L, MlirOperation op) {
  return lwI64(L, piperGetIntAttr(op, "num_experts", 1));
}
static MlirValue moeG(Lowering *L, MlirOperation op) {
  return lwI64(L, piperGetIntAttr(op, "groups", 1));
}

/* An elementwise op (shared): kernel(results..., operands..., numel(operand #0)). gelu,
 * gelu_grad, add, swiglu, swiglu_grad; a new elementwise op names it and needs no rule of its
 * own. */
static void lowerElementwise(Lowering *L, MlirOperation op) {
  intptr_t nOut = mlirOperationGetNumResults(op), nIn = mlirOperationGetNumOperands(op);
  MlirValue args[8];
  if (nOut + nIn + 1 > (intptr_t)(sizeof args / sizeof args[0])) {
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: internal error: an elementwise op of %lld results and "
                    "%lld operands exceeds lowerElementwise's 8 arguments",
                    (long long)nOut, (long long)nIn);
    L->failed = true;
    return;
  }
  intptr_t n = 0;
  for (intptr_t r = 0; r < nOut; ++r) args[n++] = lwOut(L, op, r);
  for (intptr_t i = 0; i < nIn; ++i) args[n++] = lwIn(L, op, i);
  args[n++] = lwI64(L, piperTensorNumel(lwInType(op, 0)));
  call(L, op, n, args);
}

/* tdag.pack_into(flat, g) {offset} -> prt_copy(flat + offset, g, numel(g)), in place */
static void lowerPackInto(Lowering *L, MlirOperation op) {
  MlirValue args[3] = {lwOffsetElems(L, lwIn(L, op, 0), piperGetIntAttr(op, "offset", 0)),
                       lwIn(L, op, 1), lwI64(L, piperTensorNumel(lwInType(op, 1)))};
  call(L, op, 3, args);
}

/* tdag.output(v) -> prt_copy(prt_tensor(output id), v, numel) */
static void lowerOutput(Lowering *L, MlirOperation op) {
  intptr_t id = 0;
  piperPtrMapGet(&L->outputId, op.ptr, &id);
  MlirValue t[2] = {L->ctxArg, lwI64(L, id)};
  MlirValue dst = lbCall(&L->lb, "prt_tensor", L->lb.ptr, 2, t);
  MlirValue args[3] = {dst, lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
  call(L, op, 3, args);
}

/* Context parallelism (passes/shard_sequence.c): an op with cp_size = G > 1 runs on member
 * cp_rank of the group, its rows at the positions prt_cp_position gives; its kernel is the
 * _cp variant, with (r, G) appended to the arguments. */
static int64_t cpSize(MlirOperation op) { return piperGetIntAttr(op, "cp_size", 1); }

static void callPositional(Lowering *L, MlirOperation op, prt_kernel_id cpKernel, intptr_t n,
                           MlirValue *args) {
  if (cpSize(op) <= 1) {
    call(L, op, n, args);
    return;
  }
  if (!L->shared->target->contextParallel) { /* the _cp kernels, as the ring's */
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: context parallelism's per-chunk positions run on the "
                    "CPU target only; compile without --target cuda");
    L->failed = true;
    return;
  }
  args[n] = lwI64(L, piperGetIntAttr(op, "cp_rank", 0));
  args[n + 1] = lwI64(L, cpSize(op));
  lwCallKernel(L, op, cpKernel, n + 2, args);
}

/* tdag.embedding(tok, wte, wpe) -> prt_embedding_fwd(out, tok, wte, wpe, B, T, C)
 *   {cp_size = G, cp_rank = r} -> prt_embedding_fwd_cp(out, tok, wte, wpe, B, Tl, C, r, G) */
static void lowerEmbedding(Lowering *L, MlirOperation op) {
  MlirType tok = lwInType(op, 0);
  MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                       lwI64(L, piperTensorDim(tok, 0)), lwI64(L, piperTensorDim(tok, 1)),
                       lwI64(L, piperTensorDim(lwInType(op, 1), 1))};
  callPositional(L, op, PRT_K_embedding_fwd_cp, 7, args);
}

/* tdag.embedding_grad(dy, tok) -> prt_embedding_bwd(dwte, dwpe, dy, tok, B, T, C, V)
 *   {cp_size = G, cp_rank = r} -> prt_embedding_bwd_cp(..., B, Tl, C, V, r, G) */
static void lowerEmbeddingGrad(Lowering *L, MlirOperation op) {
  MlirType dy = lwInType(op, 0), wte = resultType(op, 0);
  MlirValue args[10] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                        lwI64(L, piperTensorDim(dy, 0)), lwI64(L, piperTensorDim(dy, 1)),
                        lwI64(L, piperTensorDim(dy, 2)), lwI64(L, piperTensorDim(wte, 0))};
  callPositional(L, op, PRT_K_embedding_bwd_cp, 8, args);
}

/* tdag.layernorm(x, w, b) -> prt_layernorm_fwd(y, mean, rstd, x, w, b, N, C, eps) */
static void lowerLayernorm(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 0);
  int64_t C = piperTensorDim(x, -1);
  MlirValue args[9] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                       lwIn(L, op, 1), lwIn(L, op, 2), lwI64(L, piperTensorNumel(x) / C),
                       lwI64(L, C), lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "eps", 1e-5))};
  call(L, op, 9, args);
}

/* tdag.layernorm_grad(dy, x, w, mean, rstd)
 *   -> prt_layernorm_bwd(dx, dw, db, dy, x, w, mean, rstd, N, C) */
static void lowerLayernormGrad(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 1);
  int64_t C = piperTensorDim(x, -1);
  MlirValue args[10] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                        lwIn(L, op, 1),  lwIn(L, op, 2),  lwIn(L, op, 3),  lwIn(L, op, 4),
                        lwI64(L, piperTensorNumel(x) / C), lwI64(L, C)};
  call(L, op, 10, args);
}

/* tdag.linear(x, w, b) / tdag.matmul_nt(x, w) -> prt_linear_fwd(y, x, w, b|NULL, M, N, K) */
static void lowerLinear(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 0), w = lwInType(op, 1);
  int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
  MlirValue bias = mlirOperationGetNumOperands(op) == 3 ? lwIn(L, op, 2) : lbNullPtr(&L->lb);
  MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), bias,
                       lwI64(L, piperTensorNumel(x) / K), lwI64(L, N), lwI64(L, K)};
  call(L, op, 7, args);
}

/* tdag.linear_grad_input(dy, w) -> prt_linear_bwd_input(dx, dy, w, M, N, K) */
static void lowerLinearGradInput(Lowering *L, MlirOperation op) {
  MlirType dy = lwInType(op, 0), w = lwInType(op, 1);
  int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(dy) / N), lwI64(L, N), lwI64(L, K)};
  call(L, op, 6, args);
}

/* tdag.linear_grad_weight(dy, x) -> prt_linear_bwd_weight(dw, dy, x, M, N, K) */
static void lowerLinearGradWeight(Lowering *L, MlirOperation op) {
  MlirType dw = resultType(op, 0);
  int64_t N = piperTensorDim(dw, 0), K = piperTensorDim(dw, 1);
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(lwInType(op, 1)) / K), lwI64(L, N), lwI64(L, K)};
  call(L, op, 6, args);
}

/* tdag.bias_grad(dy) -> prt_bias_bwd(db, dy, M, N) */
static void lowerBiasGrad(Lowering *L, MlirOperation op) {
  MlirType dy = lwInType(op, 0);
  int64_t N = piperTensorDim(dy, -1);
  MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorNumel(dy) / N),
                       lwI64(L, N)};
  call(L, op, 4, args);
}

/* tdag.attention(qkv) -> prt_attention_fwd(y, lse, qkv, B, T, C, H)
 * tdag.attention_grad(dy, qkv, out, lse) -> prt_attention_bwd(dqkv, dy, qkv, out, lse, B, T, C, H) */
static void lowerAttention(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType qkv = lwInType(op, grad ? 1 : 0);
  MlirValue dims[4] = {lwI64(L, piperTensorDim(qkv, 0)), lwI64(L, piperTensorDim(qkv, 1)),
                       lwI64(L, piperTensorDim(qkv, 2) / 3),
                       lwI64(L, piperGetIntAttr(op, "heads", 1))};
  if (grad) {
    MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                         lwIn(L, op, 3), dims[0], dims[1], dims[2], dims[3]};
    call(L, op, 9, args);
  } else {
    MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0),
                         dims[0], dims[1], dims[2], dims[3]};
    call(L, op, 7, args);
  }
}

/* tdag.bias_add(x, b) -> prt_bias_add(y, x, b, M, N) */
static void lowerBiasAdd(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 0);
  int64_t N = piperTensorDim(x, -1);
  MlirValue args[5] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(x) / N), lwI64(L, N)};
  call(L, op, 5, args);
}

/* tdag.cross_entropy(logits, tgt) {label_smoothing}
 *   -> prt_cross_entropy_fwd(loss, probs, logits, tgt, N, V, label_smoothing)
 * tdag.cross_entropy_grad(probs, tgt) {label_smoothing}
 *   -> prt_cross_entropy_bwd(dlogits, probs, tgt, N, V, total_rows, label_smoothing) */
static void lowerCrossEntropy(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType logits = lwInType(op, 0);
  int64_t V = piperTensorDim(logits, -1);
  MlirValue n = lwI64(L, piperTensorNumel(logits) / V), v = lwI64(L, V);
  MlirValue e = lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "label_smoothing", 0.0));
  if (!grad) {
    MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1), n, v,
                         e};
    call(L, op, 7, args);
  } else {
    int64_t total = piperGetIntAttr(op, "total_rows", piperTensorNumel(logits) / V);
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), n, v, lwI64(L, total),
                         e};
    call(L, op, 7, args);
  }
}

/* tdag.adamw(p, g, m, v) -> prt_observe_grad(ctx, p id, g);
 *                           prt_adamw(ctx, p, g, m, v, p16, n, beta1, beta2, eps, decay)
 * With ZeRO shards the update covers this replica's len elements at offset k*c: of p (unless p
 * itself is stored as the shard, ZeRO-3) and of g (unless g is already the reduce-scattered
 * shard); the moments are shard-sized. */
static void lowerAdamw(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  MlirValue p = mlirOperationGetOperand(op, 0);
  int64_t n = piperTensorNumel(lwInType(op, 0));
  bool sharded = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards")));
  Shard sh = sharded ? lwShardOf(op, n) : (Shard){n, 1, 0, n, 0, n};
  /* a reduce-scattered gradient is this replica's shard, whatever its element count */
  MlirValue g = mlirOperationGetOperand(op, 1);
  bool wholeGrad = !lwIsReduceScattered(g);
  int64_t pBytes = piperTensorElementBytes(lwInType(op, 0));
  int64_t gBytes = piperTensorElementBytes(lwInType(op, 1));
  MlirValue pp, gp, len;
  if (L->role && sharded) { /* k-dependent in a role's plan */
    MlirValue pOff, gOff;
    lwShardValues(L, L->ctxArg, sh, pBytes, &pOff, &len);
    lwShardValues(L, L->ctxArg, sh, gBytes, &gOff, &len);
    pp = lwIsShardedParam(p) ? lwIn(L, op, 0) : lbOffsetV(b, lwIn(L, op, 0), pOff);
    gp = wholeGrad ? lbOffsetV(b, lwIn(L, op, 1), gOff) : lwIn(L, op, 1);
  } else {
    pp = lwIsShardedParam(p) ? lwIn(L, op, 0) : lbOffset(b, lwIn(L, op, 0), sh.offset * pBytes);
    gp = wholeGrad ? lbOffset(b, lwIn(L, op, 1), sh.offset * gBytes) : lwIn(L, op, 1);
    len = lwI64(L, sh.len);
  }
  /* --dump-grads sees whole gradients (no ZeRO, ZeRO-1) and ZeRO-3's shards, which the runtime
   * assembles; ZeRO-2 holds neither (a shard of a whole parameter), so it is not observed and
   * --dump-grads reports the gradient missing */
  if (!sharded || wholeGrad || lwIsShardedParam(p)) {
    MlirValue observe[3] = {L->ctxArg, lwI64(L, lwBufferOf(L, p)->tensorId),
                            lwIsShardedParam(p) ? gp : lwIn(L, op, 1)};
    lwCall(L, "prt_observe_grad", 3, observe);
  }
  /* a replica past the end of a small tensor owns nothing (in a role's plan: len 0) */
  if (!L->role && sh.len == 0) return;
  /* the copy of a whole parameter (planBf16Copies), rounded as the update writes p */
  MlirValue args[11] = {L->ctxArg,
                        pp,
                        gp,
                        lwIn(L, op, 2),
                        lwIn(L, op, 3),
                        lwBf16CopyPtr(L, p),
                        len,
                        lbConstF32(b, (float)piperGetFloatAttr(op, "beta1", 0.9)),
                        lbConstF32(b, (float)piperGetFloatAttr(op, "beta2", 0.95)),
                        lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-8)),
                        lbConstI32(b, (int32_t)piperGetIntAttr(op, "decay", 0))};
  call(L, op, 11, args);
}

/* tdag.embed(tok, wte) -> prt_embed_fwd(out, tok, wte, B*T, C, V) */
static void lowerEmbed(Lowering *L, MlirOperation op) {
  MlirType wte = lwInType(op, 1);
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(lwInType(op, 0))),
                       lwI64(L, piperTensorDim(wte, 1)), lwI64(L, piperTensorDim(wte, 0))};
  call(L, op, 6, args);
}

/* tdag.embed_grad(dy, tok) -> prt_embed_bwd(dwte, dy, tok, B*T, C, V) */
static void lowerEmbedGrad(Lowering *L, MlirOperation op) {
  MlirType dwte = resultType(op, 0);
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(lwInType(op, 1))),
                       lwI64(L, piperTensorDim(dwte, 1)), lwI64(L, piperTensorDim(dwte, 0))};
  call(L, op, 6, args);
}

/* tdag.rmsnorm(x, w) {eps} -> prt_rmsnorm_fwd(y, rstd, x, w, rows, D, eps), rows = numel(x) / D
 * chunks of D */
static void lowerRmsnorm(Lowering *L, MlirOperation op) {
  int64_t D = piperTensorDim(lwInType(op, 1), 0);
  MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(lwInType(op, 0)) / D), lwI64(L, D),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "eps", 1e-6))};
  call(L, op, 7, args);
}

/* tdag.rmsnorm_grad(dy, x, w, rstd) -> prt_rmsnorm_bwd(dx, dw, dy, x, w, rstd, rows, D) */
static void lowerRmsnormGrad(Lowering *L, MlirOperation op) {
  int64_t D = piperTensorDim(lwInType(op, 2), 0);
  MlirValue args[8] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwIn(L, op, 2),  lwIn(L, op, 3),
                       lwI64(L, piperTensorNumel(lwInType(op, 1)) / D), lwI64(L, D)};
  call(L, op, 8, args);
}

/* tdag.rope(x) / tdag.rope_grad(dy) {head_dim, theta}
 *   -> prt_rope_fwd / prt_rope_bwd(y, x, B, T, N, D, theta); theta passes as f32 (exact for
 *   the usual 1e4, 1e6) and the kernel computes the angles in double */
static void lowerRope(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 0);
  MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorDim(x, 0)),
                       lwI64(L, piperTensorDim(x, 1)), lwI64(L, piperTensorDim(x, 2)),
                       lwI64(L, piperGetIntAttr(op, "head_dim", 2)),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "theta", 1e6))};
  /* {cp_size = G, cp_rank = r}: prt_rope_fwd_cp / prt_rope_bwd_cp(..., theta, r, G) */
  callPositional(L, op,
                 piperIsOp(op, PIPER_TDAG_ROPE_GRAD) ? PRT_K_rope_bwd_cp : PRT_K_rope_fwd_cp, 7,
                 args);
}

/* tdag.gqa_attention(q, k, v) -> prt_gqa_attention_fwd(out, lse, q, k, v, B, T, H, KV, D)
 * tdag.gqa_attention_grad(dy, q, k, v, out, lse)
 *   -> prt_gqa_attention_bwd(dq, dk, dv, dy, q, k, v, out, lse, B, T, H, KV, D) */
static void lowerGqaAttention(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType q = lwInType(op, grad ? 1 : 0);
  int64_t H = piperGetIntAttr(op, "heads", 1);
  MlirValue dims[5] = {lwI64(L, piperTensorDim(q, 0)), lwI64(L, piperTensorDim(q, 1)),
                       lwI64(L, H), lwI64(L, piperGetIntAttr(op, "kv_heads", 1)),
                       lwI64(L, piperTensorDim(q, 2) / H)};
  if (grad) {
    MlirValue args[14] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                          lwIn(L, op, 1),  lwIn(L, op, 2),  lwIn(L, op, 3),  lwIn(L, op, 4),
                          lwIn(L, op, 5),  dims[0], dims[1], dims[2], dims[3], dims[4]};
    call(L, op, 14, args);
  } else {
    MlirValue args[10] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                          lwIn(L, op, 2),  dims[0], dims[1], dims[2], dims[3], dims[4]};
    call(L, op, 10, args);
  }
}

/* tdag.moe_topk(logits) -> prt_moe_topk_fwd(weights, experts, logits, N, E, K)
 * tdag.moe_topk_grad(dw, w, ex) -> prt_moe_topk_bwd(dlogits, dw, w, ex, N, E, K) */
static void lowerMoeTopk(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType logits = grad ? resultType(op, 0) : lwInType(op, 0);
  int64_t E = piperTensorDim(logits, -1), N = piperTensorNumel(logits) / E;
  int64_t K = piperTensorDim(grad ? lwInType(op, 0) : resultType(op, 0), -1);
  if (grad) {
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                         lwI64(L, N), lwI64(L, E), lwI64(L, K)};
    call(L, op, 7, args);
  } else {
    MlirValue args[6] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwI64(L, N),
                         lwI64(L, E), lwI64(L, K)};
    call(L, op, 6, args);
  }
}

/* tdag.moe_dispatch(h, ex) -> prt_moe_dispatch_fwd(rows, counts, h, ex, N, K, C, E, G)
 * tdag.moe_dispatch_grad(drows, ex) -> prt_moe_dispatch_bwd(dh, drows, ex, N, K, C, E, G) */
static void lowerMoeDispatch(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType ex = lwInType(op, 1), rows = grad ? lwInType(op, 0) : resultType(op, 0);
  int64_t K = piperTensorDim(ex, -1);
  MlirValue dims[5] = {lwI64(L, piperTensorNumel(ex) / K), lwI64(L, K),
                       lwI64(L, piperTensorDim(rows, 1)), moeE(L, op), moeG(L, op)};
  if (grad) {
    MlirValue args[8] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), dims[0],
                         dims[1],         dims[2],        dims[3],        dims[4]};
    call(L, op, 8, args);
  } else {
    MlirValue args[9] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         dims[0],         dims[1],         dims[2],        dims[3], dims[4]};
    call(L, op, 9, args);
  }
}

/* tdag.moe_experts(rows, counts, wg..., wu..., wd...) -> for each local expert j:
 *   prt_moe_expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg_j, wu_j, wd_j, C, Fe)
 * tdag.moe_experts_grad_input(dout, counts, hidden, wg..., wu..., wd...) -> for each j:
 *   prt_moe_expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg_j, wu_j, wd_j,
 *                            C, Fe)
 * Expert j's gate, up and down are operands #first + j, + El + j, + 2El + j. */
static void lowerMoeExperts(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  intptr_t first = grad ? 3 : 2;
  MlirType rows = lwInType(op, 0), hidden = grad ? lwInType(op, 2) : resultType(op, 1);
  int64_t G = piperGetIntAttr(op, "groups", 1), El = (mlirOperationGetNumOperands(op) - first) / 3;
  int64_t C = piperTensorDim(rows, 1), Fe = piperTensorDim(hidden, 1) / 2;
  for (int64_t j = 0; j < El; ++j) {
    MlirValue w[3] = {lwIn(L, op, first + j), lwIn(L, op, first + El + j),
                      lwIn(L, op, first + 2 * El + j)};
    MlirValue dims[4] = {lwI64(L, G), lwI64(L, piperTensorDim(rows, 0) / G), lwI64(L, El),
                         lwI64(L, j)};
    if (grad) {
      MlirValue args[13] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                            dims[0], dims[1], dims[2], dims[3], w[0], w[1], w[2], lwI64(L, C),
                            lwI64(L, Fe)};
      call(L, op, 13, args);
    } else {
      MlirValue args[13] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                            dims[0], dims[1], dims[2], dims[3], w[0], w[1], w[2], lwI64(L, C),
                            lwI64(L, Fe)};
      call(L, op, 13, args);
    }
  }
}

/* tdag.moe_experts_grad_weight(dout, rows, counts, hidden, wd) {expert = j}
 *   -> prt_moe_expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j,
 *                                wd, C, Fe) */
static void lowerMoeExpertsGradWeight(Lowering *L, MlirOperation op) {
  MlirType rows = lwInType(op, 1), wd = lwInType(op, 4);
  int64_t G = piperGetIntAttr(op, "groups", 1);
  MlirValue args[14] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                        lwIn(L, op, 1), lwIn(L, op, 2), lwIn(L, op, 3), lwI64(L, G),
                        lwI64(L, piperTensorDim(rows, 0) / G),
                        lwI64(L, piperTensorNumel(lwInType(op, 2)) / G),
                        lwI64(L, piperGetIntAttr(op, "expert", 0)), lwIn(L, op, 4),
                        lwI64(L, piperTensorDim(wd, 0)), lwI64(L, piperTensorDim(wd, 1))};
  call(L, op, 14, args);
}

/* tdag.moe_combine(out, w, ex) -> prt_moe_combine_fwd(y, out, w, ex, N, K, C, E, G)
 * tdag.moe_combine_grad(dy, out, w, ex)
 *   -> prt_moe_combine_bwd(dout, dw, dy, out, w, ex, N, K, C, E, G) */
static void lowerMoeCombine(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  intptr_t o = grad ? 1 : 0;
  MlirType ex = lwInType(op, o + 2);
  int64_t K = piperTensorDim(ex, -1);
  MlirValue dims[5] = {lwI64(L, piperTensorNumel(ex) / K), lwI64(L, K),
                       lwI64(L, piperTensorDim(lwInType(op, o), 1)), moeE(L, op), moeG(L, op)};
  if (grad) {
    MlirValue args[11] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                          lwIn(L, op, 2),  lwIn(L, op, 3),  dims[0],        dims[1],
                          dims[2],         dims[3],         dims[4]};
    call(L, op, 11, args);
  } else {
    MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                         dims[0],         dims[1],        dims[2],        dims[3], dims[4]};
    call(L, op, 9, args);
  }
}

/* ---- the general tensor ops (python/piper's) ---- */

/* Up to PIPER_MAX_RANK dims of a strided walk: sizes n and element strides s, slowest first,
 * as the strided kernels take them (at most four after merging). */
typedef struct {
  int64_t rank;
  int64_t n[PIPER_MAX_RANK];
  int64_t s[PIPER_MAX_RANK];
} Strides;

/* Row-major element strides of type `t` into st[0..rank). */
static void rowMajor(MlirType t, int64_t *st) {
  int64_t r = piperTensorRank(t), run = 1;
  for (int64_t d = r - 1; d >= 0; --d) {
    st[d] = run;
    run *= piperTensorDim(t, d);
  }
}

/* The walk over `shape` with strides `st`, dims of size 1 dropped and a dim merged into the next
 * where that one continues it (s[k] == s[k+1] * n[k+1], broadcasts' zero strides included). */
static Strides mergedWalk(MlirType shape, const int64_t *st) {
  Strides w = {0};
  for (int64_t d = 0; d < piperTensorRank(shape); ++d) {
    int64_t n = piperTensorDim(shape, d);
    if (n == 1) continue;
    if (w.rank && w.s[w.rank - 1] == st[d] * n) {
      w.n[w.rank - 1] *= n;
      w.s[w.rank - 1] = st[d];
      continue;
    }
    w.n[w.rank] = n;
    w.s[w.rank++] = st[d];
  }
  return w;
}

/* Calls strided kernel `k` (strided_copy, strided_place, strided_sum) on `out` and `x` for walk
 * `w`, with `extra` (strided_sum's out_n, or none) before the dims; false, with an error, where
 * more than four dims remain. */
static bool callStrided(Lowering *L, MlirOperation op, prt_kernel_id k, MlirValue out,
                        MlirValue x, const MlirValue *extra, Strides w) {
  if (w.rank > 4) {
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: this layout change walks %lld dims that do not merge; "
                    "the strided kernels take at most 4 (reshape to fewer dims first)",
                    (long long)w.rank);
    L->failed = true;
    return false;
  }
  MlirValue args[11];
  intptr_t n = 0;
  args[n++] = out;
  args[n++] = x;
  if (extra) args[n++] = *extra;
  int64_t pad = 4 - w.rank; /* leading dims of size 1 */
  for (int64_t d = 0; d < 4; ++d) {
    args[n + d] = lwI64(L, d < pad ? 1 : w.n[d - pad]);
    args[n + 4 + d] = lwI64(L, d < pad ? 0 : w.s[d - pad]);
  }
  lwCallKernel(L, op, k, n + 8, args);
  return true;
}

/* tdag.reshape(x) -> prt_copy(out, x, numel) */
static void lowerReshape(Lowering *L, MlirOperation op) {
  MlirValue args[3] = {lwOut(L, op, 0), lwIn(L, op, 0),
                       lwI64(L, piperTensorNumel(lwInType(op, 0)))};
  call(L, op, 3, args);
}

/* tdag.permute(x) {perm} -> prt_strided_copy(out, x, out dims, x's strides permuted) */
static void lowerPermute(Lowering *L, MlirOperation op) {
  MlirType x = lwInType(op, 0);
  int64_t r = piperTensorRank(x), perm[PIPER_MAX_RANK], st[PIPER_MAX_RANK], ps[PIPER_MAX_RANK];
  piperPermuteOf(op, r, perm); /* the verifier checked it */
  rowMajor(x, st);
  for (int64_t i = 0; i < r; ++i) ps[i] = st[perm[i]];
  callStrided(L, op, PRT_K_strided_copy, lwOut(L, op, 0), lwIn(L, op, 0), NULL,
              mergedWalk(resultType(op, 0), ps));
}

/* Strides of `small` read at the positions of `big` it broadcasts to (right-aligned, 0 where
 * small has no dim or a dim of 1), into st[0..rank(big)). */
static void broadcastStrides(MlirType small, MlirType big, int64_t *st) {
  int64_t rs = piperTensorRank(small), rb = piperTensorRank(big), own[PIPER_MAX_RANK];
  rowMajor(small, own);
  for (int64_t d = 0; d < rb; ++d) {
    int64_t k = d - (rb - rs);
    st[d] = k >= 0 && piperTensorDim(small, k) != 1 ? own[k] : 0;
  }
}

/* tdag.broadcast(x) -> prt_strided_copy(out, x, out dims, x's strides with 0 where broadcast) */
static void lowerBroadcast(Lowering *L, MlirOperation op) {
  int64_t st[PIPER_MAX_RANK];
  broadcastStrides(lwInType(op, 0), resultType(op, 0), st);
  callStrided(L, op, PRT_K_strided_copy, lwOut(L, op, 0), lwIn(L, op, 0), NULL,
              mergedWalk(resultType(op, 0), st));
}

/* tdag.sum_to(x) -> prt_strided_sum(out, x, numel(out), x dims, out's strides with 0 where
 * summed) */
static void lowerSumTo(Lowering *L, MlirOperation op) {
  int64_t st[PIPER_MAX_RANK];
  MlirValue outN = lwI64(L, piperTensorNumel(resultType(op, 0)));
  broadcastStrides(resultType(op, 0), lwInType(op, 0), st);
  callStrided(L, op, PRT_K_strided_sum, lwOut(L, op, 0), lwIn(L, op, 0), &outN,
              mergedWalk(lwInType(op, 0), st));
}

/* tdag.slice(x) {dim, start} -> prt_strided_copy(out, x + start * stride(dim), out dims,
 * x's strides) */
static void lowerSlice(Lowering *L, MlirOperation op) {
  int64_t st[PIPER_MAX_RANK];
  rowMajor(lwInType(op, 0), st);
  MlirValue x = lwOffsetElems(L, lwIn(L, op, 0),
                           piperGetIntAttr(op, "start", 0) * st[piperGetIntAttr(op, "dim", 0)]);
  callStrided(L, op, PRT_K_strided_copy, lwOut(L, op, 0), x, NULL,
              mergedWalk(resultType(op, 0), st));
}

/* tdag.slice_grad(x) {dim, start} -> prt_fill(out, 0, numel(out));
 *   prt_strided_place(out + start * stride(dim), x, x dims, out's strides) */
static void lowerSliceGrad(Lowering *L, MlirOperation op) {
  MlirType out = resultType(op, 0);
  int64_t st[PIPER_MAX_RANK];
  rowMajor(out, st);
  MlirValue fill[3] = {lwOut(L, op, 0), lbConstF32(&L->lb, 0.0f), lwI64(L, piperTensorNumel(out))};
  lwCallKernel(L, op, PRT_K_fill, 3, fill);
  MlirValue at = lwOffsetElems(L, lwOut(L, op, 0),
                            piperGetIntAttr(op, "start", 0) * st[piperGetIntAttr(op, "dim", 0)]);
  callStrided(L, op, PRT_K_strided_place, at, lwIn(L, op, 0), NULL,
              mergedWalk(lwInType(op, 0), st));
}

/* tdag.concat(xs...) {dim} -> for each x: prt_strided_place(out + offset * stride(dim), x,
 * x dims, out's strides), offset the sizes of dim before it */
static void lowerConcat(Lowering *L, MlirOperation op) {
  int64_t st[PIPER_MAX_RANK], d = piperGetIntAttr(op, "dim", 0), offset = 0;
  rowMajor(resultType(op, 0), st);
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
    MlirType x = lwInType(op, k);
    if (!callStrided(L, op, PRT_K_strided_place, lwOffsetElems(L, lwOut(L, op, 0), offset * st[d]),
                     lwIn(L, op, k), NULL, mergedWalk(x, st)))
      return;
    offset += piperTensorDim(x, d);
  }
}

/* tdag.bmm(a, b) {transpose_a, transpose_b}
 *   -> prt_bmm(out, a, b, batch, M, N, K, transpose_a, transpose_b) */
static void lowerBmm(Lowering *L, MlirOperation op) {
  MlirType out = resultType(op, 0), a = lwInType(op, 0);
  int64_t M = piperTensorDim(out, -2), N = piperTensorDim(out, -1);
  int32_t ta = (int32_t)piperGetIntAttr(op, "transpose_a", 0);
  MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(out) / (M * N)), lwI64(L, M), lwI64(L, N),
                       lwI64(L, piperTensorDim(a, ta ? -2 : -1)), lbConstI32(&L->lb, ta),
                       lbConstI32(&L->lb, (int32_t)piperGetIntAttr(op, "transpose_b", 0))};
  call(L, op, 9, args);
}

/* tdag.add_bcast / sub / mul / div(a, b) -> prt_<op>(out, a, b, numel(out), numel(a),
 * numel(b)) */
static void lowerBinary(Lowering *L, MlirOperation op) {
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lwI64(L, piperTensorNumel(resultType(op, 0))),
                       lwI64(L, piperTensorNumel(lwInType(op, 0))),
                       lwI64(L, piperTensorNumel(lwInType(op, 1)))};
  call(L, op, 6, args);
}

/* tdag.mul_scalar / add_scalar (x) {value}, pow_scalar (x) {exponent}
 *   -> prt_<kernel>(out, x, c, numel)
 * tdag.pow_scalar_grad(dy, x) {exponent} -> prt_pow_scalar_bwd(dx, dy, x, c, numel) */
static void lowerScalar(Lowering *L, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirAttribute e = mlirOperationGetAttributeByName(op, piperStr("exponent"));
  double c = mlirAttributeIsNull(e) ? piperGetFloatAttr(op, "value", 0.0)
                                    : piperGetFloatAttr(op, "exponent", 1.0);
  /* the GPU's pow kernels know the exponents torch special-cases whose derivative's exponent
   * is one too (lowering/gpu_kernels_general.inc) */
  static const double gpuExponents[] = {2.0, 3.0, 0.5, -0.5, -1.0, 1.0, 0.0};
  bool gpuOk = mlirAttributeIsNull(e);
  for (size_t k = 0; !gpuOk && k < sizeof gpuExponents / sizeof gpuExponents[0]; ++k)
    gpuOk = (double)(float)c == gpuExponents[k];
  if (L->shared->target->codegen && !gpuOk) { /* a target with generated device kernels */
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: x ** %g has no GPU kernel (the GPU's exponents are 2, "
                    "3, 0.5, -0.5, -1, 1 and 0); compile for the CPU, or write the power as "
                    "products", c);
    L->failed = true;
    return;
  }
  MlirValue args[5];
  intptr_t n = 0;
  args[n++] = lwOut(L, op, 0);
  args[n++] = lwIn(L, op, 0);
  if (grad) args[n++] = lwIn(L, op, 1);
  args[n++] = lbConstF32(&L->lb, (float)c);
  args[n++] = lwI64(L, piperTensorNumel(resultType(op, 0)));
  call(L, op, n, args);
}

/* tdag.softmax / log_softmax(x) {dim} -> prt_<op>_fwd(out, x, outer, n, inner)
 * tdag.softmax_grad / log_softmax_grad(dy, y) {dim} -> prt_<op>_bwd(dx, dy, y, outer, n, inner)
 * with n the size of dim, outer and inner the products of the dims before and after it */
static void lowerSoftmax(Lowering *L, MlirOperation op) {
  MlirType t = resultType(op, 0);
  int64_t d = piperGetIntAttr(op, "dim", 0), outer = 1, inner = 1;
  for (int64_t i = 0; i < piperTensorRank(t); ++i)
    if (i < d) outer *= piperTensorDim(t, i);
    else if (i > d) inner *= piperTensorDim(t, i);
  MlirValue args[6];
  intptr_t n = 0;
  args[n++] = lwOut(L, op, 0);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) args[n++] = lwIn(L, op, i);
  args[n++] = lwI64(L, outer);
  args[n++] = lwI64(L, piperTensorDim(t, d));
  args[n++] = lwI64(L, inner);
  call(L, op, n, args);
}

/* tdag.masked_fill(x, mask) {value} -> prt_masked_fill(out, x, mask, value, numel(x),
 * numel(mask)) */
static void lowerMaskedFill(Lowering *L, MlirOperation op) {
  MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "value", 0.0)),
                       lwI64(L, piperTensorNumel(lwInType(op, 0))),
                       lwI64(L, piperTensorNumel(lwInType(op, 1)))};
  call(L, op, 6, args);
}

/* tdag.triangle {diagonal, inside, outside} -> prt_triangle(out, R, C, diagonal, inside,
 * outside) */
static void lowerTriangle(Lowering *L, MlirOperation op) {
  MlirType t = resultType(op, 0);
  MlirValue args[6] = {lwOut(L, op, 0), lwI64(L, piperTensorDim(t, 0)),
                       lwI64(L, piperTensorDim(t, 1)), lwI64(L, piperGetIntAttr(op, "diagonal", 0)),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "inside", 0.0)),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "outside", 0.0))};
  call(L, op, 6, args);
}

/* tdag.rope_table {head_dim, theta, sin} -> prt_rope_angles(out, T, N, head_dim, theta, sin) */
static void lowerRopeTable(Lowering *L, MlirOperation op) {
  MlirType t = resultType(op, 0);
  MlirValue args[6] = {lwOut(L, op, 0), lwI64(L, piperTensorDim(t, 0)),
                       lwI64(L, piperTensorDim(t, 1)), lwI64(L, piperGetIntAttr(op, "head_dim", 2)),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "theta", 1e4)),
                       lbConstI32(&L->lb, (int32_t)piperGetIntAttr(op, "sin", 0))};
  call(L, op, 6, args);
}

/* tdag.full {value} -> prt_fill(out, value, numel) */
static void lowerFull(Lowering *L, MlirOperation op) {
  MlirValue args[3] = {lwOut(L, op, 0),
                       lbConstF32(&L->lb, (float)piperGetFloatAttr(op, "value", 0.0)),
                       lwI64(L, piperTensorNumel(resultType(op, 0)))};
  call(L, op, 3, args);
}

/* The kernel-call rule of each op, by id: the lower column of include/piper/tdag_ops.def (NONE:
 * storage only, or not lowered). */
typedef void (*LowerRule)(Lowering *L, MlirOperation op);
#define NONE NULL
static const LowerRule lowerRules[PIPER_TDAG_OP_COUNT] = {
#define TDAG_OP(ID, n, KIND, attributes, operands, results, shape, grad, lower, ...) \
  [PIPER_TDAG_##ID] = lower,
#include "piper/tdag_ops.def"
};
#undef NONE

/* ---- GEMM epilogues (PiperTarget.gemmEpilogues) ----
 * A tdag.linear_grad_weight(dy, x) and a tdag.bias_grad(dy) of the same dy lower to one call,
 * linear_bwd_weight_bias(dw, db, dy, x, M, N, K) (_bf16 where the weight gradient's kernel is
 * the bf16 one), made at the later op of the pair; the earlier emits nothing. The earlier
 * op's result is then written later than the plan says, so a pair is made only where that
 * changes nothing: no op between them, nor the gradient norm, reads it (every reader comes
 * after the later op, and it has one: the memory plan keeps its bytes from its op to its last
 * reader); the earlier op's operands are read at the later op, and the memory plan, made
 * after the pairs, keeps them there (lwPlanMemory: NeoX's parallel residual gives two linears
 * one dy, and the first linear's x would otherwise be dead, its bytes reused, by the
 * second's bias_grad); both are in the same pass, and neither op converts around its call (the bf16
 * scratch serves one op). */
static bool convertsAround(const Lowering *L, MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (lwConversionOf(L, op, false, i) != LW_CONV_NONE) return true;
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r)
    if (lwConversionOf(L, op, true, r) != LW_CONV_NONE) return true;
  return false;
}

/* Whether a and b carry the same `pass` attribute (or neither has one): the evaluation step
 * lowers the ops of pass F and those without, so a pair is in both steps or in neither. */
static bool samePass(MlirOperation a, MlirOperation b) {
  char pa[8] = "", pb[8] = "";
  return piperGetStringAttr(a, "pass", pa, sizeof pa) ==
             piperGetStringAttr(b, "pass", pb, sizeof pb) &&
         !strcmp(pa, pb);
}

/* Whether every reader of `v` has an index in (after, ...) and there is one. */
static bool readAfter(const PiperPtrMap *index, MlirValue v, size_t after) {
  bool any = false;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    intptr_t at;
    if (!piperPtrMapGet(index, mlirOpOperandGetOwner(u).ptr, &at) || (size_t)at <= after)
      return false;
    any = true;
  }
  return any;
}

void lwPairEpilogues(Lowering *L) {
  piperPtrMapInit(&L->epilogue, 16);
  if (!L->shared->target->gemmEpilogues) return;
  PiperPtrMap index;
  piperPtrMapInit(&index, L->nOps + 1);
  for (size_t i = 0; i < L->nOps; ++i) piperPtrMapPut(&index, L->ops[i].ptr, (intptr_t)i);
  for (size_t b = 0; b < L->nOps; ++b) {
    MlirOperation bias = L->ops[b];
    intptr_t w, taken;
    if (!piperIsOp(bias, PIPER_TDAG_BIAS_GRAD) || convertsAround(L, bias)) continue;
    MlirValue dy = mlirOperationGetOperand(bias, 0);
    for (MlirOpOperand u = mlirValueGetFirstUse(dy); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation weight = mlirOpOperandGetOwner(u);
      if (mlirOpOperandGetOperandNumber(u) != 0 ||
          !piperIsOp(weight, PIPER_TDAG_LINEAR_GRAD_WEIGHT) ||
          !piperPtrMapGet(&index, weight.ptr, &w) ||
          piperPtrMapGet(&L->epilogue, weight.ptr, &taken) || !samePass(weight, bias) ||
          convertsAround(L, weight))
        continue;
      size_t first = (size_t)w < b ? (size_t)w : b, later = (size_t)w < b ? b : (size_t)w;
      MlirOperation early = L->ops[first];
      if ((first < L->normAt && L->normAt <= later) ||
          !readAfter(&index, mlirOperationGetResult(early, 0), later))
        continue;
      piperPtrMapPut(&L->epilogue, L->ops[later].ptr, (intptr_t)first + 1);
      piperPtrMapPut(&L->epilogue, early.ptr, -((intptr_t)later + 1));
      break;
    }
  }
  piperPtrMapFree(&index);
}

/* The pair's call: linear_grad_weight(dy, x) -> dw and bias_grad(dy) -> db, at op `at` */
static void lowerLinearGradWeightBias(Lowering *L, MlirOperation weight, MlirOperation bias,
                                      MlirOperation at) {
  MlirType dw = resultType(weight, 0);
  int64_t N = piperTensorDim(dw, 0), K = piperTensorDim(dw, 1);
  MlirValue args[7] = {lwOut(L, weight, 0), lwOut(L, bias, 0), lwIn(L, weight, 0),
                       lwIn(L, weight, 1), lwI64(L, piperTensorNumel(lwInType(weight, 1)) / K),
                       lwI64(L, N), lwI64(L, K)};
  prt_kernel_id k = lwPolicyKernel(L, weight) == PRT_K_linear_bwd_weight_bf16
                        ? PRT_K_linear_bwd_weight_bias_bf16
                        : PRT_K_linear_bwd_weight_bias;
  lwCallKernel(L, at, k, 7, args);
}

/* One tdag op -> its runtime kernel call, by the rule for its id. Storage-only ops (declared
 * tensors, a bucket's arena bytes, a view into them) have no kernel and lower to nothing:
 * pointers are fetched where first used. An op with a CPU kernel and no GPU one never gets here
 * under --target cuda: the pass refused it; a graph-level node neither. */
void lwLowerCompute(Lowering *L, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!lwKernelOf(L->shared, op)) return;
  intptr_t partner;
  if (piperPtrMapGet(&L->epilogue, op.ptr, &partner)) {
    if (partner < 0) return; /* the later op of its pair makes the call */
    MlirOperation other = L->ops[partner - 1];
    bool weightFirst = piperIsOp(other, PIPER_TDAG_LINEAR_GRAD_WEIGHT);
    lowerLinearGradWeightBias(L, weightFirst ? other : op, weightFirst ? op : other, op);
    return;
  }
  if (!lowerRules[f->id]) { /* a list defect: a kernel and no rule to call it */
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: internal error: %s has a kernel but its entry in "
                    "include/piper/tdag_ops.def names no lowering rule", f->name);
    L->failed = true;
    return;
  }
  lwConvertBegin(L, op); /* bf16 operands and results: fp32 scratch around the call */
  lowerRules[f->id](L, op);
  lwConvertEnd(L, op);
}

/* tdag.adamw(p, g, m, v) -> prt_grad_sq_accum(ctx, g slice, len, counted): the squared norm of
 * the gradient slice this update applies (the same slice prt_adamw reads). It counts towards
 * the global norm unless it is a whole-tensor update replicated over data-parallel replicas
 * (extract marks those with `replica` = k) on a replica other than 0, so every element of
 * every parameter is counted exactly once over the world. */
void lwLowerGradSq(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  int64_t n = piperTensorNumel(lwInType(op, 0));
  bool sharded = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards")));
  Shard sh = sharded ? lwShardOf(op, n) : (Shard){n, 1, 0, n, 0, n};
  if (sh.len == 0) return; /* k = 0 in a role's plan: never empty */
  MlirValue g = mlirOperationGetOperand(op, 1);
  bool wholeGrad = !lwIsReduceScattered(g);
  int64_t gBytes = piperTensorElementBytes(lwInType(op, 1));
  MlirValue gp, len;
  if (L->role && sharded) { /* replica k's shard, at run time (possibly empty) */
    MlirValue off;
    lwShardValues(L, L->ctxArg, sh, gBytes, &off, &len);
    gp = wholeGrad ? lbOffsetV(b, lwIn(L, op, 1), off) : lwIn(L, op, 1);
  } else {
    gp = wholeGrad ? lbOffset(b, lwIn(L, op, 1), sh.offset * gBytes) : lwIn(L, op, 1);
    len = lwI64(L, sh.len);
  }
  /* tp_replica: a parameter replicated in a tensor-parallel group counts on member 0 only */
  int32_t counted = (sharded || piperGetIntAttr(op, "replica", 0) == 0) &&
                    piperGetIntAttr(op, "tp_replica", 0) == 0;
  /* in a role's plan a replicated update is counted on replica 0, known at run time (a TP
   * member other than 0 never counts its copy: tp_replica is k-independent) */
  bool replicated = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("replica")));
  bool tpMember0 = piperGetIntAttr(op, "tp_replica", 0) == 0;
  MlirValue count = L->role && !sharded && replicated && tpMember0
                        ? lbCall(b, "prt_first_replica", b->i32, 1, &L->ctxArg)
                        : lbConstI32(b, counted);
  MlirValue args[4] = {L->ctxArg, gp, len, count};
  lwCallKernel(L, op, PRT_K_grad_sq_accum, 4, args);
}
