/* --piper-lower-to-llvm: a training graph in tdag -> llvm dialect calling libpiper_rt.
 *
 * The function holding tdag ops becomes two LLVM functions (include/piper/runtime.h):
 *   piper_setup(ctx)  declares every named tensor: parameters, AdamW state, inputs, outputs;
 *   piper_step(ctx)   the fused schedule: one runtime kernel call per tdag op, in program order.
 * Every other tensor value lives in one activation arena. Its layout is planned here, at compile
 * time, from liveness in program order: a value's bytes are reused once its last reader has
 * run, so the arena size is the step's peak activation memory, known before launch. The plan
 * is recorded on the module as `piper.arena_bytes`.
 *
 * A multi-device plan (functions device_0 .. device_{N-1} from --piper-extract) lowers each
 * device function to piper_setup_dev<d> / piper_step_dev<d>; piper_setup and piper_step then
 * declare what every rank shares (world, global batch, communicator groups, streams, in the
 * same order everywhere) and branch on prt_rank. comm ops become nonblocking runtime calls: a
 * received or reduced value is waited for right before its first use, sends and refreshes of
 * parameter copies at the end of the step (their buffers stay live until then).
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

/* What every device function of the module shares. */
typedef struct {
  MlirAttribute groups[256]; /* communicator groups (device arrays), id = index */
  int nGroups;
  char streams[32][64];      /* stream names, id = index; 0 is "compute" */
  int nStreams;
} Shared;

typedef struct {
  MlirOperation func;   /* the tdag function being lowered */
  Shared *shared;       /* groups and streams of the module */
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
  PiperPtrMap pending;  /* value ptr -> i64 handle to wait for before its first use */
  MlirValue endWaits[4096]; /* handles waited at the end of the step (sends, refreshes) */
  int nEndWaits;
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

/* ZeRO shard geometry of an op with `shards` (R) and `shard` (k) over a tensor of n elements:
 * shards of c = ceil(n/R), this one at offset k*c with len elements (0 past the end). */
typedef struct {
  int64_t n, R, k, c, offset, len;
} Shard;

static Shard shardOf(MlirOperation op, int64_t n) {
  Shard s = {n, piperGetIntAttr(op, "shards", 1), piperGetIntAttr(op, "shard", 0), 0, 0, 0};
  s.c = (n + s.R - 1) / s.R;
  s.offset = s.k * s.c;
  s.len = n - s.offset < s.c ? n - s.offset : s.c;
  if (s.len < 0) s.len = 0;
  return s;
}

/* Elements an all_gather's buffer holds: every member's padded shard. */
static int64_t gatherElems(MlirOperation op) {
  Shard s = shardOf(op, piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(op, 0))));
  return s.R * s.c;
}

static bool isShardedParam(MlirValue v) {
  return mlirValueIsAOpResult(v) && piperOpIs(mlirOpResultGetOwner(v), "tdag.param") &&
         !mlirAttributeIsNull(mlirOperationGetAttributeByName(mlirOpResultGetOwner(v),
                                                               piperStr("shards")));
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
      if (!mlirTypeIsARankedTensor(mlirValueGetType(v))) continue; /* !comm.token */
      if (piperOpIs(op, "comm.all_reduce") && r == 0) {
        /* reduced in place: the result is the operand's buffer */
        intptr_t same;
        piperPtrMapGet(&L->bufOf, mlirOperationGetOperand(op, 0).ptr, &same);
        piperPtrMapPut(&L->bufOf, v.ptr, same);
        continue;
      }
      if (L->nBufs == cap) L->bufs = realloc(L->bufs, (cap *= 2) * sizeof *L->bufs);
      Buffer *b = &L->bufs[L->nBufs];
      b->tensorId = declaresTensor(op) ? L->nTensors++ : -1;
      b->bytes = roundUp(piperTensorNumel(mlirValueGetType(v)) * 4);
      if (piperOpIs(op, "comm.all_gather")) /* gathered into R padded shards of c */
        b->bytes = roundUp(gatherElems(op) * 4);
      b->offset = 0;
      b->lastUse = i;
      b->ptr = (MlirValue){NULL};
      piperPtrMapPut(&L->bufOf, v.ptr, (intptr_t)L->nBufs++);
    }
    if (piperOpIs(op, "tdag.output")) piperPtrMapPut(&L->outputId, op.ptr, L->nTensors++);
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      Buffer *b = bufferOf(L, mlirOperationGetOperand(op, k));
      /* a sent buffer is read by the network until the end-of-step wait */
      if (b) b->lastUse = piperOpIs(op, "comm.send") ? L->nOps : i;
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
      if (!mlirTypeIsARankedTensor(mlirValueGetType(mlirOperationGetResult(op, r))) ||
          (piperOpIs(op, "comm.all_reduce") && r == 0))
        continue;
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
                    int init, MlirType t, int64_t aux) {
  LlvmBuilder *b = &L->lb;
  int64_t rank = piperTensorRank(t);
  MlirValue args[11] = {ctx, lbConstI64(b, id), lbString(b, name), lbConstI32(b, kind),
                        lbConstI32(b, init), lbConstI64(b, rank)};
  for (int d = 0; d < 4; ++d) args[6 + d] = lbConstI64(b, d < rank ? piperTensorDim(t, d) : 0);
  args[10] = lbConstI64(b, aux); /* inputs: first batch row; loss: rows it averages */
  lbCall(b, "prt_declare_tensor", (MlirType){NULL}, 11, args);
}

static int initKind(MlirOperation param) {
  char init[16] = "normal";
  piperGetStringAttr(param, "init", init, sizeof init);
  return !strcmp(init, "zeros") ? PRT_INIT_ZEROS
         : !strcmp(init, "ones") ? PRT_INIT_ONES
                                 : PRT_INIT_NORMAL;
}

/* Rows of the batch a loss averages over: the leading dim of its cross_entropy's logits. */
static int64_t lossRows(MlirOperation output) {
  MlirValue v = mlirOperationGetOperand(output, 0);
  if (!mlirValueIsAOpResult(v) || !piperOpIs(mlirOpResultGetOwner(v), "tdag.cross_entropy"))
    return 0;
  return piperTensorDim(mlirValueGetType(mlirOperationGetOperand(mlirOpResultGetOwner(v), 0)), 0);
}

static void emitSetup(Lowering *L, const char *fnName) {
  LlvmBuilder *b = &L->lb;
  MlirValue ctx = lbBeginFunction(b, fnName);
  int64_t id = 0;
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    char name[256], slot[32], param[200];
    if (piperOpIs(op, "tdag.param")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
      declare(L, ctx, id++, name, PRT_PARAM, initKind(op), t, 0);
      if (isShardedParam(mlirOperationGetResult(op, 0))) {
        /* ZeRO-3: declared with its full dims, stored as this replica's shard */
        Shard sh = shardOf(op, piperTensorNumel(t));
        MlirValue args[5] = {ctx, lbConstI64(b, id - 1), lbConstI64(b, sh.offset),
                             lbConstI64(b, sh.len), lbConstI64(b, sh.n)};
        lbCall(b, "prt_declare_shard", (MlirType){NULL}, 5, args);
      }
    } else if (piperOpIs(op, "tdag.adam_state")) {
      piperGetStringAttr(op, "slot", slot, sizeof slot);
      piperGetStringAttr(op, "param", param, sizeof param);
      snprintf(name, sizeof name, "optim.%s.%s", slot, param);
      declare(L, ctx, id++, name, PRT_OPTIM, PRT_INIT_ZEROS,
              mlirValueGetType(mlirOperationGetResult(op, 0)), 0);
    } else if (piperOpIs(op, "tdag.input")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      declare(L, ctx, id++, name, PRT_INPUT, 0, mlirValueGetType(mlirOperationGetResult(op, 0)),
              piperGetIntAttr(op, "first_sample", 0));
    } else if (piperOpIs(op, "tdag.output")) {
      piperGetStringAttr(op, "name", name, sizeof name);
      declare(L, ctx, id++, name, PRT_OUTPUT, 0, mlirValueGetType(mlirOperationGetOperand(op, 0)),
              lossRows(op));
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

/* Before an op reads a value still in flight (received or reduced), wait for it. */
static void awaitOperands(Lowering *L, MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    intptr_t h;
    MlirValue v = mlirOperationGetOperand(op, i);
    if (piperPtrMapGet(&L->pending, v.ptr, &h) && h) {
      MlirValue args[2] = {L->ctxArg, (MlirValue){(const void *)h}};
      lbCall(&L->lb, "prt_wait", (MlirType){NULL}, 2, args);
      piperPtrMapPut(&L->pending, v.ptr, 0);
    }
  }
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

/* Id of the op's stream ("compute" when it names none). */
static int64_t streamOf(Lowering *L, MlirOperation op) {
  char name[64] = "compute";
  piperGetStringAttr(op, "stream", name, sizeof name);
  Shared *sh = L->shared;
  for (int i = 0; i < sh->nStreams; ++i)
    if (!strcmp(sh->streams[i], name)) return i;
  snprintf(sh->streams[sh->nStreams], sizeof sh->streams[0], "%s", name);
  return sh->nStreams++;
}

/* Id of the op's communicator group. */
static int64_t groupOf(Lowering *L, MlirOperation op) {
  MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
  Shared *sh = L->shared;
  for (int i = 0; i < sh->nGroups; ++i)
    if (mlirAttributeEqual(sh->groups[i], g)) return i;
  sh->groups[sh->nGroups] = g;
  return sh->nGroups++;
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
     * tdag.cross_entropy_grad(probs, tgt)
     *   -> prt_cross_entropy_bwd(dlogits, probs, tgt, N, V, total_rows) */
    MlirType logits = inType(op, 0);
    int64_t V = piperTensorDim(logits, -1);
    MlirValue n = i64c(L, piperTensorNumel(logits) / V), v = i64c(L, V);
    if (piperOpIs(op, "tdag.cross_entropy")) {
      MlirValue args[6] = {out(L, op, 0), out(L, op, 1), in(L, op, 0), in(L, op, 1), n, v};
      call(L, "prt_cross_entropy_fwd", 6, args);
    } else {
      int64_t total = piperGetIntAttr(op, "total_rows", piperTensorNumel(logits) / V);
      MlirValue args[6] = {out(L, op, 0), in(L, op, 0), in(L, op, 1), n, v, i64c(L, total)};
      call(L, "prt_cross_entropy_bwd", 6, args);
    }
  } else if (piperOpIs(op, "comm.send") || piperOpIs(op, "comm.recv") ||
             piperOpIs(op, "comm.recv_into")) {
    /* comm.send(v)       -> h = prt_isend(ctx, v, n, peer, tag, stream); wait at step end
     * comm.recv()        -> h = prt_irecv(ctx, out, n, peer, tag, stream); wait at first use
     * comm.recv_into(p)  -> h = prt_irecv(ctx, p, n, peer, tag, stream); wait at step end */
    bool send = piperOpIs(op, "comm.send"), into = piperOpIs(op, "comm.recv_into");
    MlirValue buf = (send || into) ? in(L, op, 0) : out(L, op, 0);
    MlirType t = (send || into) ? inType(op, 0) : mlirValueGetType(mlirOperationGetResult(op, 0));
    MlirValue args[6] = {L->ctxArg, buf, i64c(L, piperTensorNumel(t)),
                         i64c(L, piperGetIntAttr(op, "peer", 0)),
                         i64c(L, piperGetIntAttr(op, "tag", 0)), i64c(L, streamOf(L, op))};
    MlirValue h = lbCall(b, send ? "prt_isend" : "prt_irecv", b->i64, 6, args);
    if (send || into) L->endWaits[L->nEndWaits++] = h;
    else piperPtrMapPut(&L->pending, mlirOperationGetResult(op, 0).ptr, (intptr_t)h.ptr);
  } else if (piperOpIs(op, "comm.reduce_scatter")) {
    /* comm.reduce_scatter(g) -> copy g into the R*c result buffer;
     *   h = prt_ireduce_scatter(ctx, buf, buf, c, group, stream): in place, this replica's
     *   shard of the sum lands in the first c elements; wait at the first use */
    Shard sh = shardOf(op, piperTensorNumel(inType(op, 0)));
    MlirValue res = out(L, op, 0);
    MlirValue copy[3] = {res, in(L, op, 0), i64c(L, sh.n)};
    call(L, "prt_copy", 3, copy);
    MlirValue args[6] = {L->ctxArg, res, res, i64c(L, sh.c), i64c(L, groupOf(L, op)),
                         i64c(L, streamOf(L, op))};
    MlirValue h = lbCall(b, "prt_ireduce_scatter", b->i64, 6, args);
    piperPtrMapPut(&L->pending, mlirOperationGetResult(op, 0).ptr, (intptr_t)h.ptr);
  } else if (piperOpIs(op, "comm.all_gather")) {
    /* comm.all_gather(p) -> put this replica's shard at k*c of the R*c result buffer;
     *   h = prt_iall_gather(ctx, buf + k*c, buf, c, group, stream) in place.
     * From a ZeRO-3 shard the result is the full parameter, waited for at its first use;
     * from a whole parameter (ZeRO-1/2, after its sharded update) it is copied back into it. */
    MlirValue p = mlirOperationGetOperand(op, 0);
    Shard sh = shardOf(op, piperTensorNumel(inType(op, 0)));
    MlirValue res = out(L, op, 0), mine = lbOffset(b, res, sh.offset * 4);
    bool fromShard = isShardedParam(p);
    if (sh.len > 0) {
      MlirValue copy[3] = {mine, fromShard ? in(L, op, 0) : lbOffset(b, in(L, op, 0), sh.offset * 4),
                           i64c(L, sh.len)};
      call(L, "prt_copy", 3, copy);
    }
    MlirValue args[6] = {L->ctxArg, mine, res, i64c(L, sh.c), i64c(L, groupOf(L, op)),
                         i64c(L, streamOf(L, op))};
    MlirValue h = lbCall(b, "prt_iall_gather", b->i64, 6, args);
    if (fromShard) {
      piperPtrMapPut(&L->pending, mlirOperationGetResult(op, 0).ptr, (intptr_t)h.ptr);
    } else {
      MlirValue wait[2] = {L->ctxArg, h};
      call(L, "prt_wait", 2, wait);
      MlirValue back[3] = {in(L, op, 0), res, i64c(L, sh.n)};
      call(L, "prt_copy", 3, back);
    }
  } else if (piperOpIs(op, "comm.all_reduce")) {
    /* comm.all_reduce(g) -> h = prt_iall_reduce(ctx, g, n, group, stream) in place; wait at
     * the first use of the result */
    MlirValue args[5] = {L->ctxArg, in(L, op, 0), i64c(L, piperTensorNumel(inType(op, 0))),
                         i64c(L, groupOf(L, op)), i64c(L, streamOf(L, op))};
    MlirValue h = lbCall(b, "prt_iall_reduce", b->i64, 5, args);
    piperPtrMapPut(&L->pending, mlirOperationGetResult(op, 0).ptr, (intptr_t)h.ptr);
  } else if (piperOpIs(op, "tdag.adamw")) {
    /* tdag.adamw(p, g, m, v) -> prt_observe_grad(ctx, p id, g);
     *                           prt_adamw(ctx, p, g, m, v, n, beta1, beta2, eps, decay)
     * With ZeRO shards the update covers this replica's len elements at offset k*c: of p
     * (unless p itself is stored as the shard, ZeRO-3) and of g (unless g is already the
     * reduce-scattered shard); the moments are shard-sized. */
    MlirValue p = mlirOperationGetOperand(op, 0);
    int64_t n = piperTensorNumel(inType(op, 0));
    bool sharded = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards")));
    Shard sh = sharded ? shardOf(op, n) : (Shard){n, 1, 0, n, 0, n};
    /* a reduce-scattered gradient is this replica's shard, whatever its element count */
    MlirValue g = mlirOperationGetOperand(op, 1);
    bool wholeGrad = !(mlirValueIsAOpResult(g) &&
                       piperOpIs(mlirOpResultGetOwner(g), "comm.reduce_scatter"));
    MlirValue pp = isShardedParam(p) ? in(L, op, 0) : lbOffset(b, in(L, op, 0), sh.offset * 4);
    MlirValue gp = wholeGrad ? lbOffset(b, in(L, op, 1), sh.offset * 4) : in(L, op, 1);
    /* --dump-grads sees whole gradients (no ZeRO, ZeRO-1) and ZeRO-3's shards, which the
     * runtime assembles; ZeRO-2 holds neither (a shard of a whole parameter), so it is not
     * observed and --dump-grads reports the gradient missing */
    if (!sharded || wholeGrad || isShardedParam(p)) {
      MlirValue observe[3] = {L->ctxArg, i64c(L, bufferOf(L, p)->tensorId),
                              isShardedParam(p) ? gp : in(L, op, 1)};
      call(L, "prt_observe_grad", 3, observe);
    }
    if (sh.len == 0) return; /* a replica past the end of a small tensor owns nothing */
    MlirValue args[10] = {L->ctxArg,
                          pp,
                          gp,
                          in(L, op, 2),
                          in(L, op, 3),
                          i64c(L, sh.len),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta1", 0.9)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "beta2", 0.95)),
                          lbConstF32(b, (float)piperGetFloatAttr(op, "eps", 1e-8)),
                          lbConstI32(b, (int32_t)piperGetIntAttr(op, "decay", 0))};
    call(L, "prt_adamw", 10, args);
  }
}

/* The trace name of the global-DAG node `op` belongs to: its pass and tags, "B PP=1 mb=3". */
static void nodeLabel(MlirOperation op, char *buf, size_t size) {
  char pass[8] = "F";
  piperGetStringAttr(op, "pass", pass, sizeof pass);
  size_t n = (size_t)snprintf(buf, size, "%s", pass);
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  for (intptr_t i = 0; !mlirAttributeIsNull(tags) && i < mlirDictionaryAttrGetNumElements(tags) &&
                       n < size;
       ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(tags, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    n += (size_t)snprintf(buf + n, size - n, " %.*s=%lld", (int)key.length, key.data,
                          mlirAttributeIsAInteger(e.attribute)
                              ? (long long)mlirIntegerAttrGetValueInt(e.attribute)
                              : 0LL);
  }
}

static void emitStep(Lowering *L, const char *fnName) {
  L->ctxArg = lbBeginFunction(&L->lb, fnName);
  L->arena = lbCall(&L->lb, "prt_arena", L->lb.ptr, 1, &L->ctxArg);
  /* --trace: each run of consecutive ops of one node is a span on the compute lane (comm ops
   * are traced by the runtime on their own lanes). */
  char open[160] = "";
  MlirValue compute = lbConstI64(&L->lb, 0);
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    /* waiting is idle time: close the open span before waiting for an input in flight */
    bool waits = false;
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      intptr_t h;
      waits |= piperPtrMapGet(&L->pending, mlirOperationGetOperand(op, k).ptr, &h) && h;
    }
    if (waits && open[0]) {
      MlirValue end[2] = {L->ctxArg, compute};
      lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
      open[0] = 0;
    }
    awaitOperands(L, op);
    if (piperOpInDialect(op, "tdag") && !declaresTensor(op)) {
      char label[160];
      nodeLabel(op, label, sizeof label);
      if (strcmp(label, open)) {
        MlirValue end[2] = {L->ctxArg, compute};
        if (open[0]) lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
        MlirValue begin[3] = {L->ctxArg, lbString(&L->lb, label), compute};
        lbCall(&L->lb, "prt_span_begin", (MlirType){NULL}, 3, begin);
        snprintf(open, sizeof open, "%s", label);
      }
    }
    lowerOp(L, op);
  }
  if (open[0]) {
    MlirValue end[2] = {L->ctxArg, compute};
    lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
  }
  for (int i = 0; i < L->nEndWaits; ++i) {
    MlirValue args[2] = {L->ctxArg, L->endWaits[i]};
    lbCall(&L->lb, "prt_wait", (MlirType){NULL}, 2, args);
  }
  lbReturn(&L->lb);
}

/* True if `op` is a func.func holding tdag ops. */
static bool isGraph(MlirOperation op) {
  if (!piperOpIs(op, "func.func")) return false;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  if (mlirBlockIsNull(body)) return false;
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    if (piperOpInDialect(o, "tdag")) return true;
  return false;
}

/* Lowers one graph function into `setupName` / `stepName`; erases it. */
static MlirLogicalResult lowerFunction(MlirOperation moduleOp, MlirOperation func, Shared *shared,
                                       const char *setupName, const char *stepName,
                                       const char *symPrefix, int64_t *arenaBytes) {
  Lowering L = {0};
  L.func = func;
  L.shared = shared;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return")) continue;
    if ((!piperOpInDialect(op, "tdag") && !piperOpInDialect(op, "comm")) ||
        piperOpIs(op, "tdag.node") || piperOpIs(op, "comm.all_to_all") ||
        piperOpIs(op, "comm.wait")) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: only tdag compute ops and comm send/recv/all_reduce/"
                    "reduce_scatter/all_gather can be lowered here; run the strategy passes "
                    "first for graph-level ops");
      return mlirLogicalResultFailure();
    }
    L.nOps++;
  }
  if (mlirLogicalResultIsFailure(piperVerifyTdag(func))) return mlirLogicalResultFailure();
  L.ops = malloc((L.nOps ? L.nOps : 1) * sizeof *L.ops);
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (!piperOpIs(op, "func.return")) L.ops[n++] = op;

  planMemory(&L);
  piperPtrMapInit(&L.pending, 64);
  lbInit(&L.lb, mlirModuleFromOperation(moduleOp), mlirOperationGetLocation(func), symPrefix);
  emitSetup(&L, setupName);
  emitStep(&L, stepName);
  lbFree(&L.lb);
  *arenaBytes = L.arenaBytes;
  mlirOperationDestroy(func);
  piperPtrMapFree(&L.bufOf);
  piperPtrMapFree(&L.outputId);
  piperPtrMapFree(&L.pending);
  free(L.bufs);
  free(L.ops);
  return mlirLogicalResultSuccess();
}

/* piper_setup / piper_step of a multi-device plan: shared declarations, then per rank. */
static void emitDispatch(MlirOperation moduleOp, Shared *sh, int64_t devices, int64_t batch) {
  LlvmBuilder lb;
  lbInit(&lb, mlirModuleFromOperation(moduleOp), mlirOperationGetLocation(moduleOp), "_plan");
  for (int which = 0; which < 2; ++which) {
    const char *prefix = which ? "piper_step" : "piper_setup";
    MlirValue ctx = lbBeginFunction(&lb, prefix);
    if (!which) {
      MlirValue w[2] = {ctx, lbConstI64(&lb, devices)};
      lbCall(&lb, "prt_declare_world", (MlirType){NULL}, 2, w);
      if (batch > 0) {
        MlirValue bt[2] = {ctx, lbConstI64(&lb, batch)};
        lbCall(&lb, "prt_declare_batch", (MlirType){NULL}, 2, bt);
      }
      for (int g = 0; g < sh->nGroups; ++g) {
        int64_t members[1024];
        intptr_t n = mlirArrayAttrGetNumElements(sh->groups[g]);
        for (intptr_t i = 0; i < n && i < 1024; ++i)
          members[i] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(sh->groups[g], i));
        MlirValue args[4] = {ctx, lbConstI64(&lb, g), lbConstI64(&lb, n),
                             lbI64Array(&lb, n, members)};
        lbCall(&lb, "prt_declare_group", (MlirType){NULL}, 4, args);
      }
      for (int st = 0; st < sh->nStreams; ++st) {
        MlirValue args[3] = {ctx, lbConstI64(&lb, st), lbString(&lb, sh->streams[st])};
        lbCall(&lb, "prt_declare_stream", (MlirType){NULL}, 3, args);
      }
    }
    if (devices == 1) {
      lbCall(&lb, which ? "piper_step_dev0" : "piper_setup_dev0", (MlirType){NULL}, 1, &ctx);
      lbReturn(&lb);
      continue;
    }
    /* if (rank == 0) f0(ctx) else if (rank == 1) f1(ctx) ... ; a rank beyond the plan runs
     * nothing: the runtime's world check then reports the mismatch */
    MlirValue rank = lbCall(&lb, "prt_rank", lb.i64, 1, &ctx);
    MlirBlock done = lbNewBlock(&lb, false);
    for (int64_t d = 0; d < devices; ++d) {
      MlirBlock call = lbNewBlock(&lb, false), next = d + 1 < devices ? lbNewBlock(&lb, false) : done;
      lbCondBr(&lb, lbICmpEq(&lb, rank, lbConstI64(&lb, d)), call, next);
      lbSetBlock(&lb, call);
      char fn[48];
      snprintf(fn, sizeof fn, "%s_dev%lld", prefix, (long long)d);
      lbCall(&lb, fn, (MlirType){NULL}, 1, &ctx);
      lbReturn(&lb);
      lbSetBlock(&lb, next);
    }
    lbReturn(&lb);
  }
  lbFree(&lb);
}

MlirLogicalResult piperLowerToLLVM(MlirOperation moduleOp) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(moduleOp, 0));
  MlirOperation graphs[4096];
  int nGraphs = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (isGraph(op)) {
      if (nGraphs == 4096) break;
      graphs[nGraphs++] = op;
    }
  if (nGraphs == 0) {
    mlirEmitError(mlirOperationGetLocation(moduleOp),
                  "piper-lower-to-llvm: no function with tdag ops to lower");
    return mlirLogicalResultFailure();
  }
  MlirAttribute devAttr = mlirOperationGetAttributeByName(moduleOp, piperStr("piper.devices"));
  bool plan = !mlirAttributeIsNull(devAttr);
  int64_t devices = plan ? mlirIntegerAttrGetValueInt(devAttr) : 1;
  if (!plan && nGraphs > 1) {
    mlirEmitError(mlirOperationGetLocation(graphs[1]),
                  "piper-lower-to-llvm: a module lowers one device function; found a second");
    return mlirLogicalResultFailure();
  }
  Shared shared = {.nStreams = 1};
  snprintf(shared.streams[0], sizeof shared.streams[0], "compute");
  MlirContext ctx = mlirOperationGetContext(moduleOp);
  int64_t peak = 0;
  for (int g = 0; g < nGraphs; ++g) {
    char setup[48], step[48], name[64] = "", prefix[32] = "";
    int64_t d = 0, arena = 0;
    if (plan) {
      MlirAttribute sym = mlirOperationGetAttributeByName(graphs[g], piperStr("sym_name"));
      MlirStringRef sr = mlirStringAttrGetValue(sym);
      snprintf(name, sizeof name, "%.*s", (int)sr.length, sr.data);
      if (sscanf(name, "device_%lld", (long long *)&d) != 1 || d < 0 || d >= devices) {
        mlirEmitError(mlirOperationGetLocation(graphs[g]),
                      "piper-lower-to-llvm: in a plan of piper.devices devices, graph functions "
                      "must be named device_0 .. device_{N-1} (run --piper-extract)");
        return mlirLogicalResultFailure();
      }
    }
    if (plan) snprintf(prefix, sizeof prefix, "_dev%lld_", (long long)d);
    snprintf(setup, sizeof setup, plan ? "piper_setup_dev%lld" : "piper_setup", (long long)d);
    snprintf(step, sizeof step, plan ? "piper_step_dev%lld" : "piper_step", (long long)d);
    if (mlirLogicalResultIsFailure(
            lowerFunction(moduleOp, graphs[g], &shared, setup, step, prefix, &arena)))
      return mlirLogicalResultFailure();
    peak = arena > peak ? arena : peak;
  }
  if (plan)
    emitDispatch(moduleOp, &shared, devices,
                 piperGetIntAttr(moduleOp, "piper.global_batch", 0));
  mlirOperationSetAttributeByName(moduleOp, piperStr("piper.arena_bytes"),
                                  mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), peak));
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
