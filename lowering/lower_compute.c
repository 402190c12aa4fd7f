/* tdag op -> runtime kernel call (include/piper/runtime.h), one rule per op. */
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/runtime.h"

/* The runtime function that computes `op` on the module's target: its row's cpuKernel, or its
 * gpuKernel under --target cuda (the one place the target picks a kernel; the argument lists
 * below are the same on both). */
const char *lwKernelOf(const Shared *sh, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return !f ? NULL : sh->cuda ? f->gpuKernel : f->cpuKernel;
}
static const char *kernelOf(Lowering *L, MlirOperation op) { return lwKernelOf(L->shared, op); }

/* The MoE geometry attributes: E (num_experts) and G (groups, default 1). */
static MlirValue moeE(Lowering *L, MlirOperation op) {
  return lwI64(L, piperGetIntAttr(op, "num_experts", 1));
}
static MlirValue moeG(Lowering *L, MlirOperation op) {
  return lwI64(L, piperGetIntAttr(op, "groups", 1));
}

/* tdag.moe_experts / moe_experts_grad_input: one kernel call per local expert j, with its gate,
 * up and down: operands #first + j, + El + j, + 2El + j (see their rules below). */
static void lowerMoeExperts(Lowering *L, MlirOperation op, bool grad) {
  intptr_t first = grad ? 3 : 2;
  MlirType rows = lwInType(op, 0), hidden = grad ? lwInType(op, 2) : mlirValueGetType(
                                                                         mlirOperationGetResult(op, 1));
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
      lwCall(L, kernelOf(L, op), 13, args);
    } else {
      MlirValue args[13] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                            dims[0], dims[1], dims[2], dims[3], w[0], w[1], w[2], lwI64(L, C),
                            lwI64(L, Fe)};
      lwCall(L, kernelOf(L, op), 13, args);
    }
  }
}

/* One tdag op -> its runtime kernel call. Each rule opens with the mapping it implements. */
void lwLowerCompute(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  const PiperOpFacts *f = piperOpFacts(op);
  if (!kernelOf(L, op)) /* storage only (declared tensors, a bucket's arena bytes, a view into */
    return;          /* them): pointers are fetched where first used. An op with a CPU kernel
                        and no GPU one never gets here: the pass refused it (checkTarget). */
  switch (f->id) {
  case PIPER_TDAG_PACK_INTO: {
    /* tdag.pack_into(flat, g) {offset} -> prt_copy(flat + offset, g, numel(g)), in place */
    MlirValue args[3] = {lbOffset(b, lwIn(L, op, 0), piperGetIntAttr(op, "offset", 0) *
                                                        piperTensorElementBytes(lwInType(op, 0))),
                         lwIn(L, op, 1), lwI64(L, piperTensorNumel(lwInType(op, 1)))};
    lwCall(L, kernelOf(L, op), 3, args);
    break;
  }
  case PIPER_TDAG_OUTPUT: {
    /* tdag.output(v) -> prt_copy(prt_tensor(output id), v, numel) */
    intptr_t id = 0;
    piperPtrMapGet(&L->outputId, op.ptr, &id);
    MlirValue t[2] = {L->ctxArg, lwI64(L, id)};
    MlirValue dst = lbCall(b, "prt_tensor", b->ptr, 2, t);
    MlirValue args[3] = {dst, lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 3, args);
    break;
  }
  case PIPER_TDAG_EMBEDDING: {
    /* tdag.embedding(tok, wte, wpe) -> prt_embedding_fwd(out, tok, wte, wpe, B, T, C) */
    MlirType tok = lwInType(op, 0);
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                         lwI64(L, piperTensorDim(tok, 0)), lwI64(L, piperTensorDim(tok, 1)),
                         lwI64(L, piperTensorDim(lwInType(op, 1), 1))};
    lwCall(L, kernelOf(L, op), 7, args);
    break;
  }
  case PIPER_TDAG_EMBEDDING_GRAD: {
    /* tdag.embedding_grad(dy, tok) -> prt_embedding_bwd(dwte, dwpe, dy, tok, B, T, C, V) */
    MlirType dy = lwInType(op, 0);
    MlirType wte = mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue args[8] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorDim(dy, 0)), lwI64(L, piperTensorDim(dy, 1)),
                         lwI64(L, piperTensorDim(dy, 2)), lwI64(L, piperTensorDim(wte, 0))};
    lwCall(L, kernelOf(L, op), 8, args);
    break;
  }
  case PIPER_TDAG_LAYERNORM: {
    /* tdag.layernorm(x, w, b) -> prt_layernorm_fwd(y, mean, rstd, x, w, b, N, C, eps) */
    MlirType x = lwInType(op, 0);
    int64_t C = piperTensorDim(x, -1);
    MlirValue args[9] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                         lwIn(L, op, 1), lwIn(L, op, 2), lwI64(L, piperTensorNumel(x) / C),
                         lwI64(L, C), lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-5))};
    lwCall(L, kernelOf(L, op), 9, args);
    break;
  }
  case PIPER_TDAG_LAYERNORM_GRAD: {
    /* tdag.layernorm_grad(dy, x, w, mean, rstd)
     *   -> prt_layernorm_bwd(dx, dw, db, dy, x, w, mean, rstd, N, C) */
    MlirType x = lwInType(op, 1);
    int64_t C = piperTensorDim(x, -1);
    MlirValue args[10] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                          lwIn(L, op, 1),  lwIn(L, op, 2),  lwIn(L, op, 3),  lwIn(L, op, 4),
                          lwI64(L, piperTensorNumel(x) / C), lwI64(L, C)};
    lwCall(L, kernelOf(L, op), 10, args);
    break;
  }
  case PIPER_TDAG_LINEAR:
  case PIPER_TDAG_MATMUL_NT: {
    /* tdag.linear(x, w, b) / tdag.matmul_nt(x, w) -> prt_linear_fwd(y, x, w, b|NULL, M, N, K) */
    MlirType x = lwInType(op, 0), w = lwInType(op, 1);
    int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
    MlirValue bias = mlirOperationGetNumOperands(op) == 3 ? lwIn(L, op, 2) : lbNullPtr(b);
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), bias,
                         lwI64(L, piperTensorNumel(x) / K), lwI64(L, N), lwI64(L, K)};
    lwCall(L, kernelOf(L, op), 7, args);
    break;
  }
  case PIPER_TDAG_LINEAR_GRAD_INPUT: {
    /* tdag.linear_grad_input(dy, w) -> prt_linear_bwd_input(dx, dy, w, M, N, K) */
    MlirType dy = lwInType(op, 0), w = lwInType(op, 1);
    int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(dy) / N), lwI64(L, N), lwI64(L, K)};
    lwCall(L, kernelOf(L, op), 6, args);
    break;
  }
  case PIPER_TDAG_LINEAR_GRAD_WEIGHT: {
    /* tdag.linear_grad_weight(dy, x) -> prt_linear_bwd_weight(dw, dy, x, M, N, K) */
    MlirType dw = mlirValueGetType(mlirOperationGetResult(op, 0));
    int64_t N = piperTensorDim(dw, 0), K = piperTensorDim(dw, 1);
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 1)) / K), lwI64(L, N), lwI64(L, K)};
    lwCall(L, kernelOf(L, op), 6, args);
    break;
  }
  case PIPER_TDAG_BIAS_GRAD: {
    /* tdag.bias_grad(dy) -> prt_bias_bwd(db, dy, M, N) */
    MlirType dy = lwInType(op, 0);
    int64_t N = piperTensorDim(dy, -1);
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorNumel(dy) / N),
                         lwI64(L, N)};
    lwCall(L, kernelOf(L, op), 4, args);
    break;
  }
  case PIPER_TDAG_ATTENTION:
  case PIPER_TDAG_ATTENTION_GRAD: {
    /* tdag.attention(qkv) -> prt_attention_fwd(y, probs, qkv, B, T, C, H)
     * tdag.attention_grad(dy, qkv, probs) -> prt_attention_bwd(dqkv, dy, qkv, probs, B,T,C,H) */
    bool grad = f->id == PIPER_TDAG_ATTENTION_GRAD;
    MlirType qkv = lwInType(op, grad ? 1 : 0);
    MlirValue dims[4] = {lwI64(L, piperTensorDim(qkv, 0)), lwI64(L, piperTensorDim(qkv, 1)),
                         lwI64(L, piperTensorDim(qkv, 2) / 3),
                         lwI64(L, piperGetIntAttr(op, "heads", 1))};
    if (grad) {
      MlirValue args[8] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                           dims[0], dims[1], dims[2], dims[3]};
      lwCall(L, kernelOf(L, op), 8, args);
    } else {
      MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0),
                           dims[0], dims[1], dims[2], dims[3]};
      lwCall(L, kernelOf(L, op), 7, args);
    }
    break;
  }
  case PIPER_TDAG_GELU: {
    /* tdag.gelu(x) -> prt_gelu_fwd(y, x, n) */
    MlirValue args[3] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 3, args);
    break;
  }
  case PIPER_TDAG_GELU_GRAD: {
    /* tdag.gelu_grad(dy, x) -> prt_gelu_bwd(dx, dy, x, n) */
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 4, args);
    break;
  }
  case PIPER_TDAG_BIAS_ADD: {
    /* tdag.bias_add(x, b) -> prt_bias_add(y, x, b, M, N) */
    MlirType x = lwInType(op, 0);
    int64_t N = piperTensorDim(x, -1);
    MlirValue args[5] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(x) / N), lwI64(L, N)};
    lwCall(L, kernelOf(L, op), 5, args);
    break;
  }
  case PIPER_TDAG_ADD: {
    /* tdag.add(a, b) -> prt_add(y, a, b, n) */
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 4, args);
    break;
  }
  case PIPER_TDAG_CROSS_ENTROPY:
  case PIPER_TDAG_CROSS_ENTROPY_GRAD: {
    /* tdag.cross_entropy(logits, tgt) -> prt_cross_entropy_fwd(loss, probs, logits, tgt, N, V)
     * tdag.cross_entropy_grad(probs, tgt)
     *   -> prt_cross_entropy_bwd(dlogits, probs, tgt, N, V, total_rows) */
    MlirType logits = lwInType(op, 0);
    int64_t V = piperTensorDim(logits, -1);
    MlirValue n = lwI64(L, piperTensorNumel(logits) / V), v = lwI64(L, V);
    if (f->id == PIPER_TDAG_CROSS_ENTROPY) {
      MlirValue args[6] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1), n, v};
      lwCall(L, kernelOf(L, op), 6, args);
    } else {
      int64_t total = piperGetIntAttr(op, "total_rows", piperTensorNumel(logits) / V);
      MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), n, v, lwI64(L, total)};
      lwCall(L, kernelOf(L, op), 6, args);
    }
    break;
  }
  case PIPER_TDAG_ADAMW: {
    /* tdag.adamw(p, g, m, v) -> prt_observe_grad(ctx, p id, g);
     *                           prt_adamw(ctx, p, g, m, v, n, beta1, beta2, eps, decay)
     * With ZeRO shards the update covers this replica's len elements at offset k*c: of p
     * (unless p itself is stored as the shard, ZeRO-3) and of g (unless g is already the
     * reduce-scattered shard); the moments are shard-sized. */
    MlirValue p = mlirOperationGetOperand(op, 0);
    int64_t n = piperTensorNumel(lwInType(op, 0));
    bool sharded = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards")));
    Shard sh = sharded ? lwShardOf(op, n) : (Shard){n, 1, 0, n, 0, n};
    /* a reduce-scattered gradient is this replica's shard, whatever its element count */
    MlirValue g = mlirOperationGetOperand(op, 1);
    bool wholeGrad = !(mlirValueIsAOpResult(g) &&
                       piperOpIs(mlirOpResultGetOwner(g), "comm.reduce_scatter"));
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
    /* --dump-grads sees whole gradients (no ZeRO, ZeRO-1) and ZeRO-3's shards, which the
     * runtime assembles; ZeRO-2 holds neither (a shard of a whole parameter), so it is not
     * observed and --dump-grads reports the gradient missing */
    if (!sharded || wholeGrad || lwIsShardedParam(p)) {
      MlirValue observe[3] = {L->ctxArg, lwI64(L, lwBufferOf(L, p)->tensorId),
                              lwIsShardedParam(p) ? gp : lwIn(L, op, 1)};
      lwCall(L, "prt_observe_grad", 3, observe);
    }
    /* a replica past the end of a small tensor owns nothing (in a role's plan: len 0) */
    if (!L->role && sh.len == 0) return;
    MlirValue args[10] = {L->ctxArg,
                          pp,
                          gp,
                          lwIn(L, op, 2),
                          lwIn(L, op, 3),
                          len,
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta1", 0.9)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta2", 0.95)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-8)),
                          lbConstI32(b, (int32_t)piperGetIntAttr(op, "decay", 0))};
    lwCall(L, kernelOf(L, op), 10, args);
    break;
  }
  case PIPER_TDAG_EMBED: {
    /* tdag.embed(tok, wte) -> prt_embed_fwd(out, tok, wte, B*T, C, V) */
    MlirType wte = lwInType(op, 1);
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0))),
                         lwI64(L, piperTensorDim(wte, 1)), lwI64(L, piperTensorDim(wte, 0))};
    lwCall(L, kernelOf(L, op), 6, args);
    break;
  }
  case PIPER_TDAG_EMBED_GRAD: {
    /* tdag.embed_grad(dy, tok) -> prt_embed_bwd(dwte, dy, tok, B*T, C, V) */
    MlirType dwte = mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 1))),
                         lwI64(L, piperTensorDim(dwte, 1)), lwI64(L, piperTensorDim(dwte, 0))};
    lwCall(L, kernelOf(L, op), 6, args);
    break;
  }
  case PIPER_TDAG_RMSNORM: {
    /* tdag.rmsnorm(x, w) {eps} -> prt_rmsnorm_fwd(y, rstd, x, w, rows, D, eps), rows =
     * numel(x) / D chunks of D */
    int64_t D = piperTensorDim(lwInType(op, 1), 0);
    MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)) / D), lwI64(L, D),
                         lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-6))};
    lwCall(L, kernelOf(L, op), 7, args);
    break;
  }
  case PIPER_TDAG_RMSNORM_GRAD: {
    /* tdag.rmsnorm_grad(dy, x, w, rstd) -> prt_rmsnorm_bwd(dx, dw, dy, x, w, rstd, rows, D) */
    int64_t D = piperTensorDim(lwInType(op, 2), 0);
    MlirValue args[8] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwIn(L, op, 2),  lwIn(L, op, 3),
                         lwI64(L, piperTensorNumel(lwInType(op, 1)) / D), lwI64(L, D)};
    lwCall(L, kernelOf(L, op), 8, args);
    break;
  }
  case PIPER_TDAG_ROPE:
  case PIPER_TDAG_ROPE_GRAD: {
    /* tdag.rope(x) / tdag.rope_grad(dy) {head_dim, theta}
     *   -> prt_rope_fwd / prt_rope_bwd(y, x, B, T, N, D, theta); theta passes as f32 (exact
     *   for the usual 1e4, 1e6) and the kernel computes the angles in double */
    MlirType x = lwInType(op, 0);
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorDim(x, 0)),
                         lwI64(L, piperTensorDim(x, 1)), lwI64(L, piperTensorDim(x, 2)),
                         lwI64(L, piperGetIntAttr(op, "head_dim", 2)),
                         lbConstF32(b, (float)piperGetFloatAttr(op, "theta", 1e6))};
    lwCall(L, kernelOf(L, op), 7, args);
    break;
  }
  case PIPER_TDAG_SWIGLU: {
    /* tdag.swiglu(gate, up) -> prt_swiglu_fwd(y, gate, up, n) */
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 4, args);
    break;
  }
  case PIPER_TDAG_SWIGLU_GRAD: {
    /* tdag.swiglu_grad(dy, gate, up) -> prt_swiglu_bwd(dgate, dup, dy, gate, up, n) */
    MlirValue args[6] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwIn(L, op, 2), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(L, op), 6, args);
    break;
  }
  case PIPER_TDAG_GQA_ATTENTION:
  case PIPER_TDAG_GQA_ATTENTION_GRAD: {
    /* tdag.gqa_attention(q, k, v) -> prt_gqa_attention_fwd(out, probs, q, k, v, B, T, H, KV, D)
     * tdag.gqa_attention_grad(dy, q, k, v, probs)
     *   -> prt_gqa_attention_bwd(dq, dk, dv, dy, q, k, v, probs, B, T, H, KV, D) */
    bool grad = f->id == PIPER_TDAG_GQA_ATTENTION_GRAD;
    MlirType q = lwInType(op, grad ? 1 : 0);
    int64_t H = piperGetIntAttr(op, "heads", 1);
    MlirValue dims[5] = {lwI64(L, piperTensorDim(q, 0)), lwI64(L, piperTensorDim(q, 1)),
                         lwI64(L, H), lwI64(L, piperGetIntAttr(op, "kv_heads", 1)),
                         lwI64(L, piperTensorDim(q, 2) / H)};
    if (grad) {
      MlirValue args[13] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                            lwIn(L, op, 1),  lwIn(L, op, 2),  lwIn(L, op, 3),  lwIn(L, op, 4),
                            dims[0], dims[1], dims[2], dims[3], dims[4]};
      lwCall(L, kernelOf(L, op), 13, args);
    } else {
      MlirValue args[10] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                            lwIn(L, op, 2),  dims[0], dims[1], dims[2], dims[3], dims[4]};
      lwCall(L, kernelOf(L, op), 10, args);
    }
    break;
  }
  case PIPER_TDAG_MOE_TOPK:
  case PIPER_TDAG_MOE_TOPK_GRAD: {
    /* tdag.moe_topk(logits) -> prt_moe_topk_fwd(weights, experts, logits, N, E, K)
     * tdag.moe_topk_grad(dw, w, ex) -> prt_moe_topk_bwd(dlogits, dw, w, ex, N, E, K) */
    bool grad = f->id == PIPER_TDAG_MOE_TOPK_GRAD;
    MlirType logits = grad ? mlirValueGetType(mlirOperationGetResult(op, 0)) : lwInType(op, 0);
    int64_t E = piperTensorDim(logits, -1), N = piperTensorNumel(logits) / E;
    int64_t K = piperTensorDim(grad ? lwInType(op, 0) : mlirValueGetType(
                                                            mlirOperationGetResult(op, 0)), -1);
    if (grad) {
      MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                           lwI64(L, N), lwI64(L, E), lwI64(L, K)};
      lwCall(L, kernelOf(L, op), 7, args);
    } else {
      MlirValue args[6] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwI64(L, N),
                           lwI64(L, E), lwI64(L, K)};
      lwCall(L, kernelOf(L, op), 6, args);
    }
    break;
  }
  case PIPER_TDAG_MOE_DISPATCH:
  case PIPER_TDAG_MOE_DISPATCH_GRAD: {
    /* tdag.moe_dispatch(h, ex) -> prt_moe_dispatch_fwd(rows, counts, h, ex, N, K, C, E, G)
     * tdag.moe_dispatch_grad(drows, ex) -> prt_moe_dispatch_bwd(dh, drows, ex, N, K, C, E, G) */
    bool grad = f->id == PIPER_TDAG_MOE_DISPATCH_GRAD;
    MlirType ex = lwInType(op, 1), rows = grad ? lwInType(op, 0) : mlirValueGetType(
                                                                       mlirOperationGetResult(op, 0));
    int64_t K = piperTensorDim(ex, -1);
    MlirValue dims[5] = {lwI64(L, piperTensorNumel(ex) / K), lwI64(L, K),
                         lwI64(L, piperTensorDim(rows, 1)), moeE(L, op), moeG(L, op)};
    if (grad) {
      MlirValue args[8] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), dims[0],
                           dims[1],         dims[2],        dims[3],        dims[4]};
      lwCall(L, kernelOf(L, op), 8, args);
    } else {
      MlirValue args[9] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                           dims[0],         dims[1],         dims[2],        dims[3], dims[4]};
      lwCall(L, kernelOf(L, op), 9, args);
    }
    break;
  }
  case PIPER_TDAG_MOE_EXPERTS:
    /* tdag.moe_experts(rows, counts, wg..., wu..., wd...) -> for each local expert j:
     *   prt_moe_expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg_j, wu_j, wd_j, C, Fe) */
    lowerMoeExperts(L, op, false);
    break;
  case PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT:
    /* tdag.moe_experts_grad_input(dout, counts, hidden, wg..., wu..., wd...) -> for each j:
     *   prt_moe_expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg_j, wu_j, wd_j,
     *                            C, Fe) */
    lowerMoeExperts(L, op, true);
    break;
  case PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT: {
    /* tdag.moe_experts_grad_weight(dout, rows, counts, hidden, wd) {expert = j}
     *   -> prt_moe_expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j,
     *                                wd, C, Fe) */
    MlirType rows = lwInType(op, 1), wd = lwInType(op, 4);
    int64_t G = piperGetIntAttr(op, "groups", 1);
    MlirValue args[14] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                          lwIn(L, op, 1), lwIn(L, op, 2), lwIn(L, op, 3), lwI64(L, G),
                          lwI64(L, piperTensorDim(rows, 0) / G),
                          lwI64(L, piperTensorNumel(lwInType(op, 2)) / G),
                          lwI64(L, piperGetIntAttr(op, "expert", 0)), lwIn(L, op, 4),
                          lwI64(L, piperTensorDim(wd, 0)), lwI64(L, piperTensorDim(wd, 1))};
    lwCall(L, kernelOf(L, op), 14, args);
    break;
  }
  case PIPER_TDAG_MOE_COMBINE:
  case PIPER_TDAG_MOE_COMBINE_GRAD: {
    /* tdag.moe_combine(out, w, ex) -> prt_moe_combine_fwd(y, out, w, ex, N, K, C, E, G)
     * tdag.moe_combine_grad(dy, out, w, ex)
     *   -> prt_moe_combine_bwd(dout, dw, dy, out, w, ex, N, K, C, E, G) */
    bool grad = f->id == PIPER_TDAG_MOE_COMBINE_GRAD;
    intptr_t o = grad ? 1 : 0;
    MlirType ex = lwInType(op, o + 2);
    int64_t K = piperTensorDim(ex, -1);
    MlirValue dims[5] = {lwI64(L, piperTensorNumel(ex) / K), lwI64(L, K),
                         lwI64(L, piperTensorDim(lwInType(op, o), 1)), moeE(L, op), moeG(L, op)};
    if (grad) {
      MlirValue args[11] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                            lwIn(L, op, 2),  lwIn(L, op, 3),  dims[0],        dims[1],
                            dims[2],         dims[3],         dims[4]};
      lwCall(L, kernelOf(L, op), 11, args);
    } else {
      MlirValue args[9] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                           dims[0],         dims[1],        dims[2],        dims[3], dims[4]};
      lwCall(L, kernelOf(L, op), 9, args);
    }
    break;
  }
  case PIPER_TDAG_PARAM: /* no kernel: handled above */
  case PIPER_TDAG_ADAM_STATE:
  case PIPER_TDAG_INPUT:
  case PIPER_TDAG_BUCKET:
  case PIPER_TDAG_VIEW:
  case PIPER_TDAG_NODE: /* refused by the pass before lowering */
    break;
  }
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
  bool wholeGrad = !(mlirValueIsAOpResult(g) &&
                     piperOpIs(mlirOpResultGetOwner(g), "comm.reduce_scatter"));
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
  lwCall(L, lwTargetFn(L, "prt_grad_sq_accum", "prt_cuda_grad_sq_accum"), 4, args);
}
