/* comm op -> nonblocking runtime transfer, whose handle the op's token stands for;
 * comm.wait(token) -> prt_wait(handle). Extraction puts each wait right before the first reader
 * of what the transfer brings (or at the end of the step); the memory plan keeps a sent buffer
 * live until its wait. */
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/checked.h"
#include "piper/runtime.h"

/* Out of memory while growing a table: nothing sensible is left to do. */
static void outOfMemory(const char *what) {
  fprintf(stderr, "piper: error: out of memory growing the %s table\n", what);
  exit(1);
}

/* Id of the op's stream ("compute" when it names none), its whole name (not truncated). A
 * plan names few streams, so the lookup is linear. */
int64_t lwStreamOf(Lowering *L, MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr("stream"));
  MlirStringRef name = !mlirAttributeIsNull(a) && mlirAttributeIsAString(a)
                           ? mlirStringAttrGetValue(a)
                           : piperStr("compute");
  Shared *sh = L->shared;
  for (size_t i = 0; i < sh->nStreams; ++i)
    if (strlen(sh->streams[i]) == name.length && !memcmp(sh->streams[i], name.data, name.length))
      return (int64_t)i;
  if (!piperGrow((void **)&sh->streams, &sh->capStreams, sh->nStreams + 1, sizeof *sh->streams))
    outOfMemory("stream");
  sh->streams[sh->nStreams] = strndup(name.data, name.length);
  if (!sh->streams[sh->nStreams]) outOfMemory("stream");
  return (int64_t)sh->nStreams++;
}

/* Id of the op's communicator group. Attributes are uniqued, so the pointer is the key; a
 * group family (group_stride S in a role's plan, extract.c) is keyed by [group, S], apart from
 * the plain group with the same members. */
int64_t lwGroupOf(Lowering *L, MlirOperation op) {
  MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
  int64_t stride = L->role ? piperGetIntAttr(op, "group_stride", 0) : 0;
  MlirAttribute key = g;
  if (stride) {
    MlirContext ctx = mlirOperationGetContext(op);
    MlirAttribute pair[2] = {g, mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), stride)};
    key = mlirArrayAttrGet(ctx, 2, pair);
  }
  Shared *sh = L->shared;
  intptr_t id;
  if (piperPtrMapGet(&sh->groupOf, key.ptr, &id)) return id;
  if (!piperGrow((void **)&sh->groups, &sh->capGroups, sh->nGroups + 1, sizeof *sh->groups))
    outOfMemory("communicator group");
  sh->groups[sh->nGroups] = (PlanGroup){g, stride};
  piperPtrMapPut(&sh->groupOf, key.ptr, (intptr_t)sh->nGroups);
  return (int64_t)sh->nGroups++;
}

/* The op's token (its last result) now stands for handle `h` (null: nothing to wait for). */
static void setHandle(Lowering *L, MlirOperation op, MlirValue h) {
  MlirValue token = mlirOperationGetResult(op, mlirOperationGetNumResults(op) - 1);
  piperPtrMapPut(&L->handleOf, token.ptr, (intptr_t)h.ptr);
}

/* The count a transfer of tensor type `t` passes: the runtime moves 4-byte words (its MPI
 * datatype is a float), so a bf16 tensor (--precision bf16) travels as half as many words,
 * rounded up (arena buffers are ALIGN-rounded, so the last word is there). f32 and i32: numel,
 * as before. */
static int64_t words(MlirType t) {
  return (piperTensorNumel(t) * piperTensorElementBytes(t) + 3) / 4;
}

/* Context parallelism's ring attention (comm.irdl.mlir) -> one blocking runtime call:
 *   comm.ring_attention(qkv)
 *     -> prt_ring_attention_fwd(ctx, out, lse, qkv, B, Tl, C, H, group, tag)
 *   comm.ring_attention_grad(dout, out, qkv, lse)
 *     -> prt_ring_attention_bwd(ctx, dqkv, dout, out, qkv, lse, B, Tl, C, H, group, tag)
 *   comm.ring_gqa_attention(q, k, v)
 *     -> prt_ring_gqa_attention_fwd(ctx, out, lse, q, k, v, B, Tl, H, KV, D, group, tag)
 *   comm.ring_gqa_attention_grad(dout, out, q, k, v, lse)
 *     -> prt_ring_gqa_attention_bwd(ctx, dq, dk, dv, dout, out, q, k, v, lse, B, Tl, H, KV,
 *        D, group, tag)
 * The call completes the ring, so the op's token stands for nothing. Returns false for an op
 * that is not a ring op. */
static bool lowerRing(Lowering *L, MlirOperation op) {
  if (!piperIsRingOp(op)) return false;
  bool gqa = piperOpIs(op, "comm.ring_gqa_attention") ||
             piperOpIs(op, "comm.ring_gqa_attention_grad");
  bool grad = piperOpIs(op, "comm.ring_attention_grad") ||
              piperOpIs(op, "comm.ring_gqa_attention_grad");
  if (!L->shared->target->contextParallel) { /* the ring kernels: runtime/cp_attention.c */
    piperEmitErrorf(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: context parallelism's ring attention runs on the CPU "
                    "target only; compile without --target cuda");
    L->failed = true;
    return true;
  }
  /* under bf16, bf16 operands widened into fp32 scratch and bf16 results narrowed from it
   * (lwConversionOf): lwIn and lwOut hand the call the scratch */
  lwConvertBegin(L, op);
  MlirValue a[18];
  intptr_t n = 0, nIn = mlirOperationGetNumOperands(op);
  a[n++] = L->ctxArg;
  for (intptr_t r = 0; r + 1 < mlirOperationGetNumResults(op); ++r) a[n++] = lwOut(L, op, r);
  for (intptr_t i = 0; i < nIn; ++i) a[n++] = lwIn(L, op, i);
  /* q (or qkv) is operand 0 of the forward, 2 of the backward */
  MlirType q = lwInType(op, grad ? 2 : 0);
  int64_t H = piperGetIntAttr(op, "heads", 1), B = piperTensorDim(q, 0);
  int64_t Tl = piperTensorDim(q, 1), last = piperTensorDim(q, 2);
  a[n++] = lwI64(L, B);
  a[n++] = lwI64(L, Tl);
  if (gqa) {
    a[n++] = lwI64(L, H);
    a[n++] = lwI64(L, piperGetIntAttr(op, "kv_heads", 1));
    a[n++] = lwI64(L, last / H);
  } else {
    a[n++] = lwI64(L, last / 3);
    a[n++] = lwI64(L, H);
  }
  a[n++] = lwI64(L, lwGroupOf(L, op));
  a[n++] = lwI64(L, piperGetIntAttr(op, "tag", 0));
  lwCall(L,
         gqa ? (grad ? "prt_ring_gqa_attention_bwd" : "prt_ring_gqa_attention_fwd")
             : (grad ? "prt_ring_attention_bwd" : "prt_ring_attention_fwd"),
         n, a);
  lwConvertEnd(L, op);
  setHandle(L, op, (MlirValue){NULL});
  return true;
}

/* Whether the target can run `op`, a sum: one of bf16 values (--grad-reduce bf16) needs the
 * runtime's bf16 sums, which the CPU's comm backends have (MPI, serial) and a GPU plan's (NCCL,
 * or MPI staged through fp32-sized host buffers) has not; refused at the op otherwise. */
static bool bf16SumOnTarget(Lowering *L, MlirOperation op) {
  if (!piperTensorIsBf16(lwInType(op, 0)) || L->shared->target->bf16Sums) return true;
  piperEmitErrorf(mlirOperationGetLocation(op),
                  "piper-lower-to-llvm: this gradient reduction moves bf16 (--grad-reduce bf16), "
                  "which runs on the CPU target only; compile with --grad-reduce fp32, or "
                  "without --target cuda");
  L->failed = true;
  return false;
}

/* One comm op -> its runtime call(s). */
void lwLowerComm(Lowering *L, MlirOperation op) {
  LlvmBuilder *b = &L->lb;
  if (lowerRing(L, op)) return;
  if (piperOpIs(op, "comm.wait")) {
    /* comm.wait(tokens) -> prt_wait(ctx, handle) for each */
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
      intptr_t h = 0;
      piperPtrMapGet(&L->handleOf, mlirOperationGetOperand(op, i).ptr, &h);
      if (!h) continue;
      MlirValue args[2] = {L->ctxArg, (MlirValue){(const void *)h}};
      lwCall(L, "prt_wait", 2, args);
    }
    return;
  }
  if (piperOpIs(op, "comm.send") || piperOpIs(op, "comm.recv") ||
             piperOpIs(op, "comm.recv_into")) {
    /* comm.send(v)       -> h = prt_isend(ctx, v, n, peer, tag, stream); wait at step end
     * comm.recv()        -> h = prt_irecv(ctx, out, n, peer, tag, stream); wait at first use
     * comm.recv_into(p)  -> h = prt_irecv(ctx, p, n, peer, tag, stream); wait at step end */
    bool send = piperOpIs(op, "comm.send"), into = piperOpIs(op, "comm.recv_into");
    MlirValue buf = (send || into) ? lwIn(L, op, 0) : lwOut(L, op, 0);
    MlirType t = (send || into) ? lwInType(op, 0) : mlirValueGetType(mlirOperationGetResult(op, 0));
    /* in a role's plan the peer is replica k of the other role: peer + k * peer_stride */
    MlirValue peer = lwI64(L, piperGetIntAttr(op, "peer", 0));
    if (L->role && piperGetIntAttr(op, "peer_stride", 0)) {
      MlirValue affine[3] = {L->ctxArg, peer, lwI64(L, piperGetIntAttr(op, "peer_stride", 0))};
      peer = lbCall(b, "prt_replica_affine", b->i64, 3, affine);
    }
    MlirValue args[6] = {L->ctxArg, buf, lwI64(L, words(t)), peer,
                         lwI64(L, piperGetIntAttr(op, "tag", 0)), lwI64(L, lwStreamOf(L, op))};
    MlirValue h = lbCall(b, send ? "prt_isend" : "prt_irecv", b->i64, 6, args);
    setHandle(L, op, h);
  } else if (piperOpIs(op, "comm.reduce_scatter")) {
    /* comm.reduce_scatter(g: R*c elements) -> h = prt_ireduce_scatter(ctx, g, out, c, group,
     *   stream): out (c elements) = this replica's block of the sum; of bf16 values
     *   (--grad-reduce bf16) prt_ireduce_scatter_bf16, the same arguments */
    if (!bf16SumOnTarget(L, op)) return;
    Shard sh = lwShardOf(op, piperTensorNumel(lwInType(op, 0)));
    MlirValue args[6] = {L->ctxArg, lwIn(L, op, 0), lwOut(L, op, 0), lwI64(L, sh.n / sh.R),
                         lwI64(L, lwGroupOf(L, op)), lwI64(L, lwStreamOf(L, op))};
    const char *fn = piperTensorIsBf16(lwInType(op, 0)) ? "prt_ireduce_scatter_bf16"
                                                        : "prt_ireduce_scatter";
    setHandle(L, op, lbCall(b, fn, b->i64, 6, args));
  } else if (piperOpIs(op, "comm.all_gather")) {
    /* comm.all_gather(p) -> put this replica's shard at k*c of the R*c result buffer;
     *   h = prt_iall_gather(ctx, buf + k*c, buf, c, group, stream) in place.
     * From a ZeRO-3 shard the result is the full parameter, waited for at its first use;
     * from a whole parameter (ZeRO-1/2, after its sharded update) it is copied back into it. */
    MlirValue p = mlirOperationGetOperand(op, 0);
    Shard sh = lwShardOf(op, piperTensorNumel(lwInType(op, 0)));
    int64_t elemBytes = piperTensorElementBytes(lwInType(op, 0));
    MlirValue off = {NULL}, len; /* k-dependent in a role's plan */
    if (L->role) lwShardValues(L, L->ctxArg, sh, elemBytes, &off, &len);
    else len = lwI64(L, sh.len);
    MlirValue res = lwOut(L, op, 0), mine = L->role ? lbOffsetV(b, res, off)
                                                    : lbOffset(b, res, sh.offset * elemBytes);
    bool fromShard = lwIsShardedParam(p);
    if (L->role || sh.len > 0) {
      MlirValue src = fromShard ? lwIn(L, op, 0)
                      : L->role ? lbOffsetV(b, lwIn(L, op, 0), off)
                                : lbOffset(b, lwIn(L, op, 0), sh.offset * elemBytes);
      MlirValue copy[3] = {mine, src, len};
      lwCallKernel(L, op, PRT_K_copy, 3, copy);
    }
    MlirValue args[6] = {L->ctxArg, mine, res, lwI64(L, sh.c), lwI64(L, lwGroupOf(L, op)),
                         lwI64(L, lwStreamOf(L, op))};
    MlirValue h = lbCall(b, "prt_iall_gather", b->i64, 6, args);
    if (fromShard) {
      setHandle(L, op, h);
    } else { /* rebuilt in place now: its comm.wait has nothing left to wait for */
      MlirValue wait[2] = {L->ctxArg, h};
      lwCall(L, "prt_wait", 2, wait);
      MlirValue back[3] = {lwIn(L, op, 0), res, lwI64(L, sh.n)};
      lwCallKernel(L, op, PRT_K_copy, 3, back);
      setHandle(L, op, (MlirValue){NULL});
    }
  } else if (piperOpIs(op, "comm.all_to_all")) {
    /* comm.all_to_all(x) -> h = prt_iall_to_all(ctx, x, out, n, group, stream): block k of x
     * to member k, block s of out from member s; wait at the first use of out. n is in words
     * (see words): a bf16 block must be whole words. */
    MlirType x = lwInType(op, 0);
    MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("group"));
    int64_t members = piperDeviceListLen(g) ? piperDeviceListLen(g) : 1;
    if (piperTensorElementBytes(x) != 4 && members > 0 &&
        (piperTensorNumel(x) * piperTensorElementBytes(x)) % (4 * members)) {
      piperEmitErrorf(mlirOperationGetLocation(op),
                      "piper-lower-to-llvm: this all-to-all's %lld bf16 elements do not split "
                      "into %lld blocks of whole 4-byte words, which the runtime moves; use an "
                      "even number of elements per member (e.g. an even hidden size)",
                      (long long)piperTensorNumel(x), (long long)members);
      L->failed = true;
      return;
    }
    MlirValue args[6] = {L->ctxArg, lwIn(L, op, 0), lwOut(L, op, 0),
                         lwI64(L, words(x)), lwI64(L, lwGroupOf(L, op)),
                         lwI64(L, lwStreamOf(L, op))};
    setHandle(L, op, lbCall(b, "prt_iall_to_all", b->i64, 6, args));
  } else if (piperOpIs(op, "comm.all_reduce")) {
    /* comm.all_reduce(g) -> h = prt_iall_reduce(ctx, g, n, group, stream) in place; wait at
     * the first use of the result. Of bf16 values (--grad-reduce bf16): prt_iall_reduce_bf16,
     * the same arguments. */
    if (!bf16SumOnTarget(L, op)) return;
    MlirValue args[5] = {L->ctxArg, lwIn(L, op, 0), lwI64(L, piperTensorNumel(lwInType(op, 0))),
                         lwI64(L, lwGroupOf(L, op)), lwI64(L, lwStreamOf(L, op))};
    const char *fn =
        piperTensorIsBf16(lwInType(op, 0)) ? "prt_iall_reduce_bf16" : "prt_iall_reduce";
    setHandle(L, op, lbCall(b, fn, b->i64, 5, args));
  }
}
