/* --piper-lower-to-llvm: a training graph in tdag -> llvm dialect calling libpiper_rt.
 *
 * The function holding tdag ops becomes two LLVM functions (include/piper/runtime.h):
 *   piper_setup(ctx)  declares every named tensor: parameters, AdamW state, inputs, outputs;
 *   piper_step(ctx)   the fused schedule: one runtime kernel call per tdag op, in program order.
 * Every other tensor value lives in one activation arena. Its layout is planned here, at compile
 * time, from liveness in program order: a value's bytes are reused once its last reader has
 * run, so the arena size is the step's peak activation memory, known before launch. The plan
 * is recorded on the module as `piper.arena_bytes`.
 */
#include <stdlib.h>
#include <string.h>

#include "lowering/llvm_builder.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/runtime.h"

enum { ALIGN = 64 };

/* Where one tensor value lives. */
typedef struct {
  int64_t tensorId;  /* prt_declare_tensor id, or -1 for an arena value */
  int64_t offset;    /* byte offset in the arena (arena values) */
  int64_t bytes;     /* size, rounded up to ALIGN */
  size_t lastUse;    /* index of the last op reading it (its def if unread) */
  MlirValue ptr;     /* the llvm pointer, once materialised in piper_step */
} Buffer;

typedef struct {
  MlirOperation func;   /* the tdag function being lowered */
  MlirOperation *ops;   /* its ops in program order */
  size_t nOps;
  Buffer *bufs;         /* one per tensor value */
  size_t nBufs;
  PiperPtrMap bufOf;    /* value ptr -> index into bufs */
  PiperPtrMap outputId; /* tdag.output op ptr -> its declared tensor id */
  int64_t nTensors;     /* declared tensors */
  int64_t arenaBytes;   /* planned peak */
  LlvmBuilder lb;
  MlirValue ctxArg;     /* piper_step's ctx */
  MlirValue arena;      /* prt_arena(ctx) in piper_step */
} Lowering;

static int64_t roundUp(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

static Buffer *bufferOf(Lowering *L, MlirValue v) {
  intptr_t i;
  return piperPtrMapGet(&L->bufOf, v.ptr, &i) ? &L->bufs[i] : NULL;
}

static bool declaresTensor(MlirOperation op) {
  return piperOpIs(op, "tdag.param") || piperOpIs(op, "tdag.adam_state") ||
         piperOpIs(op, "tdag.input");
}

/* ---- memory plan ---- */

/* Live arena blocks, sorted by offset, for first-fit placement. */
typedef struct {
  int64_t *offset, *bytes;
  size_t *owner;   /* buffer index */
  size_t n;
} LiveSet;

static int64_t place(LiveSet *live, size_t owner, int64_t bytes) {
  int64_t at = 0;
  size_t i = 0;
  for (; i < live->n; ++i) {
    if (live->offset[i] - at >= bytes) break;
    at = live->offset[i] + live->bytes[i];
  }
  memmove(live->offset + i + 1, live->offset + i, (live->n - i) * sizeof *live->offset);
  memmove(live->bytes + i + 1, live->bytes + i, (live->n - i) * sizeof *live->bytes);
  memmove(live->owner + i + 1, live->owner + i, (live->n - i) * sizeof *live->owner);
  live->offset[i] = at;
  live->bytes[i] = bytes;
  live->owner[i] = owner;
  live->n++;
  return at;
}

static void release(LiveSet *live, size_t owner) {
  for (size_t i = 0; i < live->n; ++i)
    if (live->owner[i] == owner) {
      memmove(live->offset + i, live->offset + i + 1, (live->n - i - 1) * sizeof *live->offset);
      memmove(live->bytes + i, live->bytes + i + 1, (live->n - i - 1) * sizeof *live->bytes);
      memmove(live->owner + i, live->owner + i + 1, (live->n - i - 1) * sizeof *live->owner);
      live->n--;
      return;
    }
}

/* Gives every result a Buffer: declared tensors get ids, the rest arena offsets. */
static void planMemory(Lowering *L) {
  size_t cap = 16;
  L->bufs = malloc(cap * sizeof *L->bufs);
  piperPtrMapInit(&L->bufOf, L->nOps * 2);
  piperPtrMapInit(&L->outputId, 4);
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      if (L->nBufs == cap) L->bufs = realloc(L->bufs, (cap *= 2) * sizeof *L->bufs);
      Buffer *b = &L->bufs[L->nBufs];
      b->tensorId = declaresTensor(op) ? L->nTensors++ : -1;
      b->bytes = roundUp(piperTensorNumel(mlirValueGetType(v)) * 4);
      b->offset = 0;
      b->lastUse = i;
      b->ptr = (MlirValue){NULL};
      piperPtrMapPut(&L->bufOf, v.ptr, (intptr_t)L->nBufs++);
    }
    if (piperOpIs(op, "tdag.output")) piperPtrMapPut(&L->outputId, op.ptr, L->nTensors++);
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      Buffer *b = bufferOf(L, mlirOperationGetOperand(op, k));
      if (b) b->lastUse = i;
    }
  }
  /* Walk program order: results are placed before the op's dead inputs are released, so a
   * kernel never writes over a value it is still reading. */
  LiveSet live = {malloc(L->nBufs * sizeof(int64_t)), malloc(L->nBufs * sizeof(int64_t)),
                  malloc(L->nBufs * sizeof(size_t)), 0};
  size_t *dying = malloc(L->nBufs * sizeof *dying);
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    size_t nDying = 0;
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      intptr_t idx;
      piperPtrMapGet(&L->bufOf, mlirOperationGetResult(op, r).ptr, &idx);
      Buffer *b = &L->bufs[idx];
      if (b->tensorId >= 0) continue;
      b->offset = place(&live, (size_t)idx, b->bytes);
      if (b->offset + b->bytes > L->arenaBytes) L->arenaBytes = b->offset + b->bytes;
      if (b->lastUse == i) dying[nDying++] = (size_t)idx;
    }
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      intptr_t idx;
      if (piperPtrMapGet(&L->bufOf, mlirOperationGetOperand(op, k).ptr, &idx) &&
          L->bufs[idx].tensorId < 0 && L->bufs[idx].lastUse == i)
        dying[nDying++] = (size_t)idx;
    }
    for (size_t d = 0; d < nDying; ++d) release(&live, dying[d]);
  }
  free(dying);
  free(live.offset);
  free(live.bytes);
  free(live.owner);
}

/* ---- piper_setup ---- */

static void declare(Lowering *L, MlirValue ctx, int64_t id, const char *name, int kind,
                    int init, MlirType t) {
  LlvmBuilder *b = &L->lb;
  int64_t rank = piperTensorRank(t);
  MlirValue args[11] = {ctx, lbConstI64(b, id), lbString(b, name), lbConstI32(b, kind),
                        lbConstI32(b, init), lbConstI64(b, rank)};
  for (int d = 0; d < 4; ++d) args[6 + d] = lbConstI64(b, d < rank ? piperTensorDim(t, d) : 0);
  args[10] = lbConstI64(b, 0); /* first_sample: this device sees the batch from row 0 */
  lbCall(b, "prt_declare_tensor", (MlirType){NULL}, 11, args);
}

static int initKind(MlirOperation param) {
  char init[16] = "normal";
  piperGetStringAttr(param, "init", init, sizeof init);
  return !strcmp(init, "zeros") ? PRT_INIT_ZEROS
         : !strcmp(init, "ones") ? PRT_INIT_ONES
                                 : PRT_INIT_NORMAL;
}

static void emitSetup(Lowering *L) {
  LlvmBuilder *b = &L->lb;
  MlirValue ctx = lbBeginFunction(b, "piper_setup");
  int64_t id = 0;
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    char name[256], slot[32], param[200];
    if (piperOpIs(op, "tdag.param")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      declare(L, ctx, id++, name, PRT_PARAM, initKind(op),
              mlirValueGetType(mlirOperationGetResult(op, 0)));
    } else if (piperOpIs(op, "tdag.adam_state")) {
      piperGetStringAttr(op, "slot", slot, sizeof slot);
      piperGetStringAttr(op, "param", param, sizeof param);
      snprintf(name, sizeof name, "optim.%s.%s", slot, param);
      declare(L, ctx, id++, name, PRT_OPTIM, PRT_INIT_ZEROS,
              mlirValueGetType(mlirOperationGetResult(op, 0)));
    } else if (piperOpIs(op, "tdag.input")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      declare(L, ctx, id++, name, PRT_INPUT, 0, mlirValueGetType(mlirOperationGetResult(op, 0)));
    } else if (piperOpIs(op, "tdag.output")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      declare(L, ctx, id++, name, PRT_OUTPUT, 0, mlirValueGetType(mlirOperationGetOperand(op, 0)));
    }
  }
  MlirValue args[2] = {ctx, lbConstI64(b, L->arenaBytes)};
  lbCall(b, "prt_declare_arena", (MlirType){NULL}, 2, args);
  lbReturn(b);
}

/* ---- piper_step ---- */

/* The pointer to value `v`, materialised on first use in piper_step. */
static MlirValue ptrOf(Lowering *L, MlirValue v) {
  Buffer *buf = bufferOf(L, v);
  if (!buf->ptr.ptr) {
    if (buf->tensorId >= 0) {
      MlirValue args[2] = {L->ctxArg, lbConstI64(&L->lb, buf->tensorId)};
      buf->ptr = lbCall(&L->lb, "prt_tensor", L->lb.ptr, 2, args);
    } else {
      buf->ptr = lbOffset(&L->lb, L->arena, buf->offset);
    }
  }
  return buf->ptr;
}

static MlirValue in(Lowering *L, MlirOperation op, intptr_t i) {
  return ptrOf(L, mlirOperationGetOperand(op, i));
}
static MlirValue out(Lowering *L, MlirOperation op, intptr_t i) {
  return ptrOf(L, mlirOperationGetResult(op, i));
}
static MlirType inType(MlirOperation op, intptr_t i) {
  return mlirValueGetType(mlirOperationGetOperand(op, i));
}
static MlirValue i64c(Lowering *L, int64_t v) { return lbConstI64(&L->lb, v); }

static void call(Lowering *L, const char *fn, intptr_t n, const MlirValue *args) {
  lbCall(&L->lb, fn, (MlirType){NULL}, n, args);
}

/* One tdag op -> its runtime call(s). Each rule opens with the mapping it implements. */
static void lowerOp(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  if (declaresTensor(op)) {
    return; /* storage only: pointers are fetched where first used */
  } else if (piperOpIs(op, "tdag.output")) {
    /* tdag.output(v) -> prt_copy(prt_tensor(output id), v, numel) */
    intptr_t id = 0;
    piperPtrMapGet(&L->outputId, op.ptr, &id);
    MlirValue t[2] = {L->ctxArg, i64c(L, id)};
    MlirValue dst = lbCall(b, "prt_tensor", b->ptr, 2, t);
    MlirValue args[3] = {dst, in(L, op, 0), i64c(L, piperTensorNumel(inType(op, 0)))};
    call(L, "prt_copy", 3, args);
  } else if (piperOpIs(op, "tdag.embedding")) {
    /* tdag.embedding(tok, wte, wpe) -> prt_embedding_fwd(out, tok, wte, wpe, B, T, C) */
    MlirType tok = inType(op, 0);
    MlirValue args[7] = {out(L, op, 0), in(L, op, 0), in(L, op, 1), in(L, op, 2),
                         i64c(L, piperTensorDim(tok, 0)), i64c(L, piperTensorDim(tok, 1)),
                         i64c(L, piperTensorDim(inType(op, 1), 1))};
    call(L, "prt_embedding_fwd", 7, args);
  } else if (piperOpIs(op, "tdag.embedding_grad")) {
    /* tdag.embedding_grad(dy, tok) -> prt_embedding_bwd(dwte, dwpe, dy, tok, B, T, C, V) */
    MlirType dy = inType(op, 0);
    MlirType wte = mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue args[8] = {out(L, op, 0), out(L, op, 1), in(L, op, 0), in(L, op, 1),
                         i64c(L, piperTensorDim(dy, 0)), i64c(L, piperTensorDim(dy, 1)),
                         i64c(L, piperTensorDim(dy, 2)), i64c(L, piperTensorDim(wte, 0))};
    call(L, "prt_embedding_bwd", 8, args);
  } else if (piperOpIs(op, "tdag.layernorm")) {
    /* tdag.layernorm(x, w, b) -> prt_layernorm_fwd(y, mean, rstd, x, w, b, N, C, eps) */
    MlirType x = inType(op, 0);
    int64_t C = piperTensorDim(x, -1);
    MlirValue args[9] = {out(L, op, 0), out(L, op, 1), out(L, op, 2), in(L, op, 0),
                         in(L, op, 1), in(L, op, 2), i64c(L, piperTensorNumel(x) / C),
                         i64c(L, C), lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-5))};
    call(L, "prt_layernorm_fwd", 9, args);
  } else if (piperOpIs(op, "tdag.layernorm_grad")) {
    /* tdag.layernorm_grad(dy, x, w, mean, rstd)
     *   -> prt_layernorm_bwd(dx, dw, db, dy, x, w, mean, rstd, N, C) */
    MlirType x = inType(op, 1);
    int64_t C = piperTensorDim(x, -1);
    MlirValue args[10] = {out(L, op, 0), out(L, op, 1), out(L, op, 2), in(L, op, 0),
                          in(L, op, 1),  in(L, op, 2),  in(L, op, 3),  in(L, op, 4),
                          i64c(L, piperTensorNumel(x) / C), i64c(L, C)};
    call(L, "prt_layernorm_bwd", 10, args);
  } else if (piperOpIs(op, "tdag.linear") || piperOpIs(op, "tdag.matmul_nt")) {
    /* tdag.linear(x, w, b) / tdag.matmul_nt(x, w) -> prt_linear_fwd(y, x, w, b|NULL, M, N, K) */
    MlirType x = inType(op, 0), w = inType(op, 1);
    int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
    MlirValue bias = mlirOperationGetNumOperands(op) == 3 ? in(L, op, 2) : lbNullPtr(b);
    MlirValue args[7] = {out(L, op, 0), in(L, op, 0), in(L, op, 1), bias,
                         i64c(L, piperTensorNumel(x) / K), i64c(L, N), i64c(L, K)};
    call(L, "prt_linear_fwd", 7, args);
  } else if (piperOpIs(op, "tdag.linear_grad_input")) {
    /* tdag.linear_grad_input(dy, w) -> prt_linear_bwd_input(dx, dy, w, M, N, K) */
    MlirType dy = inType(op, 0), w = inType(op, 1);
    int64_t N = piperTensorDim(w, 0), K = piperTensorDim(w, 1);
    MlirValue args[6] = {out(L, op, 0), in(L, op, 0), in(L, op, 1),
                         i64c(L, piperTensorNumel(dy) / N), i64c(L, N), i64c(L, K)};
    call(L, "prt_linear_bwd_input", 6, args);
  } else if (piperOpIs(op, "tdag.linear_grad_weight")) {
    /* tdag.linear_grad_weight(dy, x) -> prt_linear_bwd_weight(dw, dy, x, M, N, K) */
    MlirType dw = mlirValueGetType(mlirOperationGetResult(op, 0));
    int64_t N = piperTensorDim(dw, 0), K = piperTensorDim(dw, 1);
    MlirValue args[6] = {out(L, op, 0), in(L, op, 0), in(L, op, 1),
                         i64c(L, piperTensorNumel(inType(op, 1)) / K), i64c(L, N), i64c(L, K)};
    call(L, "prt_linear_bwd_weight", 6, args);
  } else if (piperOpIs(op, "tdag.bias_grad")) {
    /* tdag.bias_grad(dy) -> prt_bias_bwd(db, dy, M, N) */
    MlirType dy = inType(op, 0);
    int64_t N = piperTensorDim(dy, -1);
    MlirValue args[4] = {out(L, op, 0), in(L, op, 0), i64c(L, piperTensorNumel(dy) / N),
                         i64c(L, N)};
    call(L, "prt_bias_bwd", 4, args);
  } else if (piperOpIs(op, "tdag.attention") || piperOpIs(op, "tdag.attention_grad")) {
    /* tdag.attention(qkv) -> prt_attention_fwd(y, probs, qkv, B, T, C, H)
     * tdag.attention_grad(dy, qkv, probs) -> prt_attention_bwd(dqkv, dy, qkv, probs, B,T,C,H) */
    bool grad = piperOpIs(op, "tdag.attention_grad");
    MlirType qkv = inType(op, grad ? 1 : 0);
    MlirValue dims[4] = {i64c(L, piperTensorDim(qkv, 0)), i64c(L, piperTensorDim(qkv, 1)),
                         i64c(L, piperTensorDim(qkv, 2) / 3),
                         i64c(L, piperGetIntAttr(op, "heads", 1))};
    if (grad) {
      MlirValue args[8] = {out(L, op, 0), in(L, op, 0), in(L, op, 1), in(L, op, 2),
                           dims[0], dims[1], dims[2], dims[3]};
      call(L, "prt_attention_bwd", 8, args);
    } else {
      MlirValue args[7] = {out(L, op, 0), out(L, op, 1), in(L, op, 0),
                           dims[0], dims[1], dims[2], dims[3]};
      call(L, "prt_attention_fwd", 7, args);
    }
  } else if (piperOpIs(op, "tdag.gelu")) {
    /* tdag.gelu(x) -> prt_gelu_fwd(y, x, n) */
    MlirValue args[3] = {out(L, op, 0), in(L, op, 0), i64c(L, piperTensorNumel(inType(op, 0)))};
    call(L, "prt_gelu_fwd", 3, args);
  } else if (piperOpIs(op, "tdag.gelu_grad")) {
    /* tdag.gelu_grad(dy, x) -> prt_gelu_bwd(dx, dy, x, n) */
    MlirValue args[4] = {out(L, op, 0), in(L, op, 0), in(L, op, 1),
                         i64c(L, piperTensorNumel(inType(op, 0)))};
    call(L, "prt_gelu_bwd", 4, args);
  } else if (piperOpIs(op, "tdag.add")) {
    /* tdag.add(a, b) -> prt_add(y, a, b, n) */
    MlirValue args[4] = {out(L, op, 0), in(L, op, 0), in(L, op, 1),
                         i64c(L, piperTensorNumel(inType(op, 0)))};
    call(L, "prt_add", 4, args);
  } else if (piperOpIs(op, "tdag.cross_entropy") || piperOpIs(op, "tdag.cross_entropy_grad")) {
    /* tdag.cross_entropy(logits, tgt) -> prt_cross_entropy_fwd(loss, probs, logits, tgt, N, V)
     * tdag.cross_entropy_grad(probs, tgt) -> prt_cross_entropy_bwd(dlogits, probs, tgt, N, V) */
    MlirType logits = inType(op, 0);
    int64_t V = piperTensorDim(logits, -1);
    MlirValue n = i64c(L, piperTensorNumel(logits) / V), v = i64c(L, V);
    if (piperOpIs(op, "tdag.cross_entropy")) {
      MlirValue args[6] = {out(L, op, 0), out(L, op, 1), in(L, op, 0), in(L, op, 1), n, v};
      call(L, "prt_cross_entropy_fwd", 6, args);
    } else {
      MlirValue args[5] = {out(L, op, 0), in(L, op, 0), in(L, op, 1), n, v};
      call(L, "prt_cross_entropy_bwd", 5, args);
    }
  } else if (piperOpIs(op, "tdag.adamw")) {
    /* tdag.adamw(p, g, m, v) -> prt_observe_grad(ctx, p id, g);
     *                           prt_adamw(ctx, p, g, m, v, n, beta1, beta2, eps, decay) */
    MlirValue observe[3] = {L->ctxArg,
                            i64c(L, bufferOf(L, mlirOperationGetOperand(op, 0))->tensorId),
                            in(L, op, 1)};
    call(L, "prt_observe_grad", 3, observe);
    MlirValue args[10] = {L->ctxArg,
                          in(L, op, 0),
                          in(L, op, 1),
                          in(L, op, 2),
                          in(L, op, 3),
                          i64c(L, piperTensorNumel(inType(op, 0))),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta1", 0.9)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta2", 0.95)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-8)),
                          lbConstI32(b, (int32_t)piperGetIntAttr(op, "decay", 0))};
    call(L, "prt_adamw", 10, args);
  }
}

static void emitStep(Lowering *L) {
  L->ctxArg = lbBeginFunction(&L->lb, "piper_step");
  L->arena = lbCall(&L->lb, "prt_arena", L->lb.ptr, 1, &L->ctxArg);
  for (size_t i = 0; i < L->nOps; ++i) lowerOp(L, L->ops[i]);
  lbReturn(&L->lb);
}

/* The one function in `module` that holds tdag ops; emits an error if none or several. */
static MlirOperation findGraph(MlirOperation module) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation found = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "func.func")) continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    if (mlirBlockIsNull(body)) continue;
    bool hasTdag = false;
    for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o))
      hasTdag |= piperOpInDialect(o, "tdag");
    if (!hasTdag) continue;
    if (!mlirOperationIsNull(found)) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: a module lowers one device function; found a second");
      return (MlirOperation){NULL};
    }
    found = op;
  }
  if (mlirOperationIsNull(found))
    mlirEmitError(mlirOperationGetLocation(module),
                  "piper-lower-to-llvm: no function with tdag ops to lower");
  return found;
}

MlirLogicalResult piperLowerToLLVM(MlirOperation moduleOp) {
  Lowering L = {0};
  L.func = findGraph(moduleOp);
  if (mlirOperationIsNull(L.func)) return mlirLogicalResultFailure();
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(L.func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return")) continue;
    if (!piperOpInDialect(op, "tdag") || piperOpIs(op, "tdag.node")) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: only tdag compute ops can be lowered here; run the "
                    "strategy passes first for graph-level ops");
      return mlirLogicalResultFailure();
    }
    L.nOps++;
  }
  if (mlirLogicalResultIsFailure(piperVerifyTdag(L.func))) return mlirLogicalResultFailure();
  L.ops = malloc((L.nOps ? L.nOps : 1) * sizeof *L.ops);
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (!piperOpIs(op, "func.return")) L.ops[n++] = op;

  planMemory(&L);
  MlirModule module = mlirModuleFromOperation(moduleOp);
  lbInit(&L.lb, module, mlirOperationGetLocation(L.func));
  emitSetup(&L);
  emitStep(&L);
  lbFree(&L.lb);

  MlirContext ctx = mlirOperationGetContext(moduleOp);
  mlirOperationSetAttributeByName(
      moduleOp, piperStr("piper.arena_bytes"),
      mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), L.arenaBytes));
  mlirOperationDestroy(L.func);
  piperPtrMapFree(&L.bufOf);
  piperPtrMapFree(&L.outputId);
  free(L.bufs);
  free(L.ops);
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runLower(MlirOperation module, const char *arg) {
  return piperLowerToLLVM(module);
}

MlirPass piperCreateLowerToLLVMPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-lower-to-llvm", "tdag -> llvm dialect",
                               runLower, arg);
}
