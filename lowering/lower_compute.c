/* tdag op -> runtime kernel call (include/piper/runtime.h), one rule per op. */
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/runtime.h"

/* The runtime function that computes `op` on this target: its row's cpuKernel (the one target
 * today; the GPU backend picks the row's gpuKernel here). The rules below build its arguments. */
static const char *kernelOf(MlirOperation op) { return piperOpFacts(op)->cpuKernel; }

/* One tdag op -> its runtime kernel call. Each rule opens with the mapping it implements. */
void lwLowerCompute(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f || !f->cpuKernel) /* storage only (declared tensors, a bucket's arena bytes, a view */
    return;                /* into them): pointers are fetched where first used */
  switch (f->id) {
  case PIPER_TDAG_PACK_INTO: {
    /* tdag.pack_into(flat, g) {offset} -> prt_copy(flat + offset, g, numel(g)), in place */
    MlirValue args[3] = {lbOffset(b, lwIn(L, op, 0), piperGetIntAttr(op, "offset", 0) *
                                                        piperTensorElementBytes(lwInType(op, 0))),
                         lwIn(L, op, 1), lwI64(L, piperTensorNumel(lwInType(op, 1)))};
    lwCall(L, kernelOf(op), 3, args);
    break;
  }
  case PIPER_TDAG_OUTPUT: {
    /* tdag.output(v) -> prt_copy(prt_tensor(output id), v, numel) */
    intptr_t id = 0;
    piperPtrMapGet(&L->outputId, op.ptr, &id);
    MlirValue t[2] = {L->ctxArg, lwI64(L, id)};
    MlirValue dst = lbCall(b, "prt_tensor", b->ptr, 2, t);
    MlirValue args[3] = {dst, lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(op), 3, args);
    break;
  }
  case PIPER_TDAG_EMBEDDING: {
    /* tdag.embedding(tok, wte, wpe) -> prt_embedding_fwd(out, tok, wte, wpe, B, T, C) */
    MlirType tok = lwInType(op, 0);
    MlirValue args[7] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), lwIn(L, op, 2),
                         lwI64(L, piperTensorDim(tok, 0)), lwI64(L, piperTensorDim(tok, 1)),
                         lwI64(L, piperTensorDim(lwInType(op, 1), 1))};
    lwCall(L, kernelOf(op), 7, args);
    break;
  }
  case PIPER_TDAG_EMBEDDING_GRAD: {
    /* tdag.embedding_grad(dy, tok) -> prt_embedding_bwd(dwte, dwpe, dy, tok, B, T, C, V) */
    MlirType dy = lwInType(op, 0);
    MlirType wte = mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue args[8] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorDim(dy, 0)), lwI64(L, piperTensorDim(dy, 1)),
                         lwI64(L, piperTensorDim(dy, 2)), lwI64(L, piperTensorDim(wte, 0))};
    lwCall(L, kernelOf(op), 8, args);
    break;
  }
  case PIPER_TDAG_LAYERNORM: {
    /* tdag.layernorm(x, w, b) -> prt_layernorm_fwd(y, mean, rstd, x, w, b, N, C, eps) */
    MlirType x = lwInType(op, 0);
    int64_t C = piperTensorDim(x, -1);
    MlirValue args[9] = {lwOut(L, op, 0), lwOut(L, op, 1), lwOut(L, op, 2), lwIn(L, op, 0),
                         lwIn(L, op, 1), lwIn(L, op, 2), lwI64(L, piperTensorNumel(x) / C),
                         lwI64(L, C), lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-5))};
    lwCall(L, kernelOf(op), 9, args);
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
    lwCall(L, kernelOf(op), 10, args);
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
    lwCall(L, kernelOf(op), 7, args);
    break;
  }
  case PIPER_TDAG_LINEAR_GRAD_INPUT: {
    /* tdag.linear_grad_input(dy, w) -> prt_linear_bwd_input(dx, dy, w, M, N, K) */
    MlirType dy = lwInType(op, 0), w = lwInType(op, 1);
    int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(dy) / N), lwI64(L, N), lwI64(L, K)};
    lwCall(L, kernelOf(op), 6, args);
    break;
  }
  case PIPER_TDAG_LINEAR_GRAD_WEIGHT: {
    /* tdag.linear_grad_weight(dy, x) -> prt_linear_bwd_weight(dw, dy, x, M, N, K) */
    MlirType dw = mlirValueGetType(mlirOperationGetResult(op, 0));
    int64_t N = piperTensorDim(dw, 0), K = piperTensorDim(dw, 1);
    MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 1)) / K), lwI64(L, N), lwI64(L, K)};
    lwCall(L, kernelOf(op), 6, args);
    break;
  }
  case PIPER_TDAG_BIAS_GRAD: {
    /* tdag.bias_grad(dy) -> prt_bias_bwd(db, dy, M, N) */
    MlirType dy = lwInType(op, 0);
    int64_t N = piperTensorDim(dy, -1);
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorNumel(dy) / N),
                         lwI64(L, N)};
    lwCall(L, kernelOf(op), 4, args);
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
      lwCall(L, kernelOf(op), 8, args);
    } else {
      MlirValue args[7] = {lwOut(L, op, 0), lwOut(L, op, 1), lwIn(L, op, 0),
                           dims[0], dims[1], dims[2], dims[3]};
      lwCall(L, kernelOf(op), 7, args);
    }
    break;
  }
  case PIPER_TDAG_GELU: {
    /* tdag.gelu(x) -> prt_gelu_fwd(y, x, n) */
    MlirValue args[3] = {lwOut(L, op, 0), lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(op), 3, args);
    break;
  }
  case PIPER_TDAG_GELU_GRAD: {
    /* tdag.gelu_grad(dy, x) -> prt_gelu_bwd(dx, dy, x, n) */
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(op), 4, args);
    break;
  }
  case PIPER_TDAG_ADD: {
    /* tdag.add(a, b) -> prt_add(y, a, b, n) */
    MlirValue args[4] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1),
                         lwI64(L, piperTensorNumel(lwInType(op, 0)))};
    lwCall(L, kernelOf(op), 4, args);
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
      lwCall(L, kernelOf(op), 6, args);
    } else {
      int64_t total = piperGetIntAttr(op, "total_rows", piperTensorNumel(logits) / V);
      MlirValue args[6] = {lwOut(L, op, 0), lwIn(L, op, 0), lwIn(L, op, 1), n, v, lwI64(L, total)};
      lwCall(L, kernelOf(op), 6, args);
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
    lwCall(L, kernelOf(op), 10, args);
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
  int32_t counted = sharded || piperGetIntAttr(op, "replica", 0) == 0;
  /* in a role's plan a replicated update is counted on replica 0, known at run time */
  bool replicated = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("replica")));
  MlirValue count = L->role && !sharded && replicated
                        ? lbCall(b, "prt_first_replica", b->i32, 1, &L->ctxArg)
                        : lbConstI32(b, counted);
  MlirValue args[4] = {L->ctxArg, gp, len, count};
  lwCall(L, "prt_grad_sq_accum", 4, args);
}
