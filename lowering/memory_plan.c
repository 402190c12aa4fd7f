/* The activation arena's layout, planned at compile time from liveness in program order (a
 * value's bytes are reused once its last reader has run; an op's outputs never share bytes with
 * its inputs), and the ZeRO shard geometry the plan and the lowering agree on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/base/shard.h"
#include "piper/checked.h"
#include "piper/runtime.h"

int64_t lwRoundUp(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

Buffer *lwBufferOf(Lowering *L, MlirValue v) {
  intptr_t i;
  return piperPtrMapGet(&L->bufOf, v.ptr, &i) ? &L->bufs[i] : NULL;
}

bool lwDeclaresTensor(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return f && f->declaresTensor;
}

/* Result #0 of `op` is its operand #0's buffer: a comm.all_reduce reduces in place; a row that
 * writes its operand (pack_into) or views it (view) says so. */
static bool sharesOperand0(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return piperOpIs(op, "comm.all_reduce") ||
         (f && (f->alias == PIPER_ALIAS_RESULT_IS_OPERAND0 ||
                f->alias == PIPER_ALIAS_RESULT_VIEWS_OPERAND0));
}

/* ---- memory plan ---- */

/* Live arena blocks, sorted by offset, for first-fit placement. */
typedef struct {
  int64_t *offset, *bytes; /* per live block: its byte offset and size */
  size_t *owner;   /* buffer index */
  size_t n;        /* live blocks */
  bool overflow;   /* an offset past int64 was needed: the plan is unusable */
} LiveSet;

static int64_t place(LiveSet *live, size_t owner, int64_t bytes) {
  int64_t at = 0, end;
  size_t i = 0;
  for (; i < live->n; ++i) {
    if (live->offset[i] - at >= bytes) break;
    at = live->offset[i] + live->bytes[i]; /* a live block's end: checked when it was placed */
  }
  if (!piperAddI64(at, bytes, &end)) live->overflow = true;
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

Shard lwShardOf(MlirOperation op, int64_t n) {
  /* the verifier refuses shards < 1 and a shard outside [0, shards); pb_shard_of never
   * divides by zero */
  pb_shard g = pb_shard_of(n, piperGetIntAttr(op, "shards", 1), piperGetIntAttr(op, "shard", 0));
  return (Shard){g.n, g.R, g.k, g.c, g.offset, g.len};
}

void lwShardValues(Lowering *L, MlirValue ctx, Shard sh, int64_t elemBytes, MlirValue *offset,
                   MlirValue *len) {
  LlvmBuilder *b = &L->lb;
  if (!L->role || sh.R < 2) {
    *offset = lbConstI64(b, sh.offset * elemBytes);
    *len = lbConstI64(b, sh.len);
    return;
  }
  MlirValue at[3] = {ctx, lbConstI64(b, 0), lbConstI64(b, sh.c * elemBytes)};
  *offset = lbCall(b, "prt_replica_affine", b->i64, 3, at);
  MlirValue n[3] = {ctx, lbConstI64(b, sh.n), lbConstI64(b, sh.c)};
  *len = lbCall(b, "prt_shard_len", b->i64, 3, n);
}

/* Elements an all_gather's buffer holds: every member's padded shard; -1 if that overflows. */
int64_t lwGatherElems(MlirOperation op) {
  Shard s = lwShardOf(op, piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(op, 0))));
  return pb_shard_of(s.n, s.R, s.k).padded;
}

/* Arena bytes of `elems` elements of `elemBytes` bytes, rounded up to ALIGN; -1 if that
 * overflows int64 (the verifier bounds tensor sizes, but a gather's padded size is R times a
 * shard). */
static int64_t arenaBytesOf(int64_t elems, int64_t elemBytes) {
  int64_t bytes;
  if (elems < 0 || !piperMulI64(elems, elemBytes, &bytes) ||
      !piperAddI64(bytes, ALIGN - 1, &bytes))
    return -1;
  return bytes / ALIGN * ALIGN;
}

bool lwIsShardedParam(MlirValue v) {
  return mlirValueIsAOpResult(v) && piperIsOp(mlirOpResultGetOwner(v), PIPER_TDAG_PARAM) &&
         !mlirAttributeIsNull(mlirOperationGetAttributeByName(mlirOpResultGetOwner(v),
                                                               piperStr("shards")));
}

bool lwIsReduceScattered(MlirValue g) {
  if (!mlirValueIsAOpResult(g)) return false;
  MlirOperation op = mlirOpResultGetOwner(g);
  const PiperOpFacts *f = piperOpFacts(op);
  if (f && f->cast) return lwIsReduceScattered(mlirOperationGetOperand(op, 0));
  return piperOpIs(op, "comm.reduce_scatter");
}

Bf16Copy *lwBf16CopyOf(const Lowering *L, MlirValue v) {
  for (size_t k = 0; k < L->nCopies; ++k)
    if (mlirValueEqual(L->copies[k].param, v)) return &L->copies[k];
  return NULL;
}

/* The parameters that get a bf16 copy (bf16Io only): read by a BF16_IN parameter as an fp32
 * weight (what would be narrowed at every such call) and updated whole by one tdag.adamw of
 * this function, which then keeps the copy; nothing else writes them (an op that writes its
 * operand in place, a ZeRO shard's update and gather). Their ids follow every other tensor's. */
static void planBf16Copies(Lowering *L) {
  if (!L->bf16Io) return;
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    if (!piperIsOp(op, PIPER_TDAG_ADAMW) ||
        !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards"))))
      continue;
    MlirValue p = mlirOperationGetOperand(op, 0);
    if (!mlirValueIsAOpResult(p) || !piperIsOp(mlirOpResultGetOwner(p), PIPER_TDAG_PARAM) ||
        lwIsShardedParam(p))
      continue;
    int updates = 0;
    bool narrowed = false, writtenElsewhere = false;
    for (size_t j = 0; j < L->nOps; ++j) {
      MlirOperation user = L->ops[j];
      for (intptr_t k = 0; k < mlirOperationGetNumOperands(user); ++k) {
        if (!mlirValueEqual(mlirOperationGetOperand(user, k), p)) continue;
        if (piperIsOp(user, PIPER_TDAG_ADAMW) && k == 0) updates++;
        else if (k == 0 && sharesOperand0(user)) writtenElsewhere = true;
        else if (lwConversionOf(L, user, false, k) == LW_CONV_NARROW_IN) narrowed = true;
      }
    }
    if (updates != 1 || writtenElsewhere || !narrowed) continue;
    if (!piperGrow((void **)&L->copies, &L->capCopies, L->nCopies + 1, sizeof *L->copies)) {
      fprintf(stderr, "piper: error: out of memory planning the bf16 weight copies\n");
      exit(1);
    }
    L->copies[L->nCopies++] = (Bf16Copy){p, 0, {NULL}};
  }
  for (size_t k = 0; k < L->nCopies; ++k) L->copies[k].tensorId = L->nTensors++;
}

LwConversion lwConversionOf(const Lowering *L, MlirOperation op, bool result, intptr_t i) {
  if (piperIsRingOp(op)) { /* fp32 buffers in the runtime: widen bf16 operands, narrow results */
    MlirValue v = result ? mlirOperationGetResult(op, i) : mlirOperationGetOperand(op, i);
    if (!piperTensorIsBf16(mlirValueGetType(v))) return LW_CONV_NONE;
    return result ? LW_CONV_NARROW : LW_CONV_WIDEN;
  }
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f || f->kernel <= PRT_K_NONE || f->kernel >= PRT_K_COUNT ||
      !L->shared->target->kernels[f->kernel])
    return LW_CONV_NONE; /* storage, comm: no kernel call to convert around */
  MlirType t = mlirValueGetType(result ? mlirOperationGetResult(op, i)
                                       : mlirOperationGetOperand(op, i));
  if (!result && lwOperandIsBf16Param(L, op, i)) /* the kernel reads bf16 itself */
    return piperTensorIsBf16(t) ||
                   lwBf16CopyOf(L, mlirOperationGetOperand(op, i)) /* the copy, as it is */
               ? LW_CONV_NONE
               : LW_CONV_NARROW_IN;
  if (piperTensorIsBf16(t))
    return lwValueInOwnPrecision(L, op, result, i) ? LW_CONV_NONE /* the kernel's own load */
           : result                                ? LW_CONV_NARROW
                                                   : LW_CONV_WIDEN;
  if (!result && L->bf16 && piperTensorIsF32(t) && piperFactsBf16RoundOperand(f, i))
    return LW_CONV_ROUND;
  return LW_CONV_NONE;
}

/* fp32 scratch bytes op's conversions take at once (each value ALIGN-rounded); -1 on
 * overflow. */
static int64_t conversionBytes(const Lowering *L, MlirOperation op) {
  int64_t total = 0;
  for (int res = 0; res < 2; ++res) {
    intptr_t n = res ? mlirOperationGetNumResults(op) : mlirOperationGetNumOperands(op);
    for (intptr_t i = 0; i < n; ++i) {
      if (lwConversionOf(L, op, res, i) == LW_CONV_NONE) continue;
      MlirValue v = res ? mlirOperationGetResult(op, i) : mlirOperationGetOperand(op, i);
      int64_t bytes = arenaBytesOf(piperTensorNumel(mlirValueGetType(v)), 4);
      if (bytes < 0 || !piperAddI64(total, bytes, &total)) return -1;
    }
  }
  return total;
}

/* Gives every result a Buffer: declared tensors get ids, the rest arena offsets. */
/* Weight gradients and what carries them (sums, buckets, reductions, transfers); what is
 * neither a parameter nor one of these is an activation or an activation's gradient. */
static bool isGradient(Lowering *L, MlirOperation op, intptr_t r) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (piperFactsWeightGrad(f, r) || piperOpIs(op, "comm.reduce_scatter")) return true;
  if (f && f->likeOperand0) { /* a sum is what it sums */
    Buffer *b = lwBufferOf(L, mlirOperationGetOperand(op, 0));
    return b && b->gradient;
  }
  if (piperOpIs(op, "comm.recv")) /* insert-comm marks received activations as batched */
    return mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("batched")));
  return false;
}

bool lwPlanMemory(Lowering *L) {
  bool ok = true;
  size_t cap = 16;
  L->bufs = malloc(cap * sizeof *L->bufs);
  piperPtrMapInit(&L->bufOf, L->nOps * 2);
  piperPtrMapInit(&L->outputId, 4);
  piperPtrMapInit(&L->viewOffset, 16);
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      if (!mlirTypeIsARankedTensor(mlirValueGetType(v))) continue; /* !comm.token */
      if (sharesOperand0(op) && r == 0) {
        /* in place (reduced, packed) or a view: the result is the operand's buffer; a view's
         * elements start at its offset */
        const PiperOpFacts *f = piperOpFacts(op);
        if (f && f->alias == PIPER_ALIAS_RESULT_VIEWS_OPERAND0)
          piperPtrMapPut(&L->viewOffset, v.ptr,
                         piperGetIntAttr(op, "offset", 0) *
                             piperTensorElementBytes(lwInType(op, 0)));
        intptr_t same;
        piperPtrMapGet(&L->bufOf, mlirOperationGetOperand(op, 0).ptr, &same);
        piperPtrMapPut(&L->bufOf, v.ptr, same);
        continue;
      }
      if (L->nBufs == cap) L->bufs = realloc(L->bufs, (cap *= 2) * sizeof *L->bufs);
      Buffer *b = &L->bufs[L->nBufs];
      b->tensorId = lwDeclaresTensor(op) ? L->nTensors++ : -1;
      b->gradient = isGradient(L, op, r);
      int64_t elemBytes = piperTensorElementBytes(mlirValueGetType(v));
      int64_t elems = piperTensorNumel(mlirValueGetType(v));
      b->bytes = arenaBytesOf(elems, elemBytes);
      if (piperOpIs(op, "comm.all_gather")) /* gathered into R padded shards of c */
        b->bytes = arenaBytesOf(lwGatherElems(op), elemBytes);
      if (b->bytes < 0) ok = false;
      b->offset = 0;
      b->lastUse = i;
      b->ptr = (MlirValue){NULL};
      piperPtrMapPut(&L->bufOf, v.ptr, (intptr_t)L->nBufs++);
    }
    if (piperIsOp(op, PIPER_TDAG_OUTPUT)) piperPtrMapPut(&L->outputId, op.ptr, L->nTensors++);
    /* the earlier op of a pair lowered as one call (lwPairEpilogues) is read where the call
     * is made, at the later op */
    intptr_t partner = 0;
    piperPtrMapGet(&L->epilogue, op.ptr, &partner);
    size_t readAt = partner < 0 ? (size_t)(-partner - 1) : i;
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      Buffer *b = lwBufferOf(L, mlirOperationGetOperand(op, k));
      if (b && b->lastUse < readAt) b->lastUse = readAt;
    }
    /* what a transfer reads (a sent buffer, a collective's input) is read by the network
     * until the transfer's comm.wait */
    for (intptr_t k = 0; piperOpIs(op, "comm.wait") && k < mlirOperationGetNumOperands(op); ++k) {
      MlirOperation from = mlirOpResultGetOwner(mlirOperationGetOperand(op, k));
      for (intptr_t a = 0; a < mlirOperationGetNumOperands(from); ++a) {
        Buffer *b = lwBufferOf(L, mlirOperationGetOperand(from, a));
        if (b && b->lastUse < i) b->lastUse = i;
      }
    }
  }
  /* Walk program order: results are placed before the op's dead inputs are released, so a
   * kernel never writes over a value it is still reading. */
  int64_t acts = 0, grads = 0; /* live bytes of each class */
  LiveSet live = {malloc(L->nBufs * sizeof(int64_t)), malloc(L->nBufs * sizeof(int64_t)),
                  malloc(L->nBufs * sizeof(size_t)), 0, false};
  if (!ok) live.overflow = true;
  size_t *dying = malloc(L->nBufs * sizeof *dying);
  for (size_t i = 0; i < L->nOps && !live.overflow; ++i) {
    MlirOperation op = L->ops[i];
    size_t nDying = 0;
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      intptr_t idx;
      if (!mlirTypeIsARankedTensor(mlirValueGetType(mlirOperationGetResult(op, r))) ||
          (sharesOperand0(op) && r == 0))
        continue;
      piperPtrMapGet(&L->bufOf, mlirOperationGetResult(op, r).ptr, &idx);
      Buffer *b = &L->bufs[idx];
      if (b->tensorId >= 0) continue;
      b->offset = place(&live, (size_t)idx, b->bytes);
      int64_t *cls = b->gradient ? &grads : &acts;
      if (live.overflow || !piperAddI64(*cls, b->bytes, cls)) {
        live.overflow = true;
        break;
      }
      if (acts > L->peakActivations) L->peakActivations = acts;
      if (grads > L->peakGradients) L->peakGradients = grads;
      if (b->offset + b->bytes > L->arenaBytes) L->arenaBytes = b->offset + b->bytes;
    }
    /* Release whatever is past its last use. A buffer can outlive its last reader (a
     * transfer reads it until its comm.wait, which names only the token), so this goes by
     * lastUse, not by the op's operands. */
    for (size_t k = 0; k < live.n; ++k)
      if (L->bufs[live.owner[k]].lastUse <= i) dying[nDying++] = live.owner[k];
    for (size_t d = 0; d < nDying; ++d) {
      release(&live, dying[d]);
      *(L->bufs[dying[d]].gradient ? &grads : &acts) -= L->bufs[dying[d]].bytes;
    }
  }
  free(dying);
  planBf16Copies(L); /* before the scratch: a weight with a copy converts nothing */
  /* the conversions' fp32 scratch after the tensors: one op's at a time, as kernels run one
   * at a time (transfers read and write tensors' own buffers, never scratch) */
  for (size_t i = 0; i < L->nOps && !live.overflow; ++i) {
    int64_t w = conversionBytes(L, L->ops[i]);
    if (w < 0) live.overflow = true;
    else if (w > L->workspace) L->workspace = w;
  }
  L->scratchAt = L->arenaBytes;
  if (!piperAddI64(L->arenaBytes, L->workspace, &L->arenaBytes)) live.overflow = true;
  free(live.offset);
  free(live.bytes);
  free(live.owner);
  return !live.overflow;
}

