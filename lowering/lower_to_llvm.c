/* --piper-lower-to-llvm: a training graph in tdag -> llvm dialect calling libpiper_rt.
 *
 * The function holding tdag ops becomes two LLVM functions (include/piper/runtime.h):
 *   piper_setup(ctx)  declares every named tensor: parameters, AdamW state, inputs, outputs;
 *   piper_step(ctx)   the fused schedule: one runtime kernel call per tdag op, in program order;
 *   piper_eval_step(ctx)  the same with only the forward ops and forward transfers (pass F) and
 *                     the waits for those: the loss without gradients or updates (--eval-every).
 * Every other tensor value lives in one activation arena. Its layout is planned here, at compile
 * time, from liveness in program order: a value's bytes are reused once its last reader has
 * run, so the arena size is the step's peak activation memory, known before launch. The plan
 * is recorded on the module as `piper.arena_bytes`.
 *
 * A multi-device plan (functions device_0 .. device_{N-1} from --piper-extract) lowers each
 * device function to piper_setup_dev<d> / piper_step_dev<d>; piper_setup and piper_step then
 * declare what every rank shares (world, global batch, communicator groups, streams, in the
 * same order everywhere) and branch on prt_rank. comm ops become nonblocking runtime calls and
 * comm.wait ops the waits for them (lower_comm.c).
 *
 * The gradient norm (--grad-clip, the metrics' grad_norm). Every piper_step calls
 * prt_grad_sq_accum for each tdag.adamw's gradient slice and then prt_grad_norm_sync (one
 * all-reduce over every rank, on the runtime's own communicator) right before its first op of
 * the update pass (pass = "UPD"), or at its end if it has none; the waits of non-update
 * transfers that bring a tensor (gradient reductions, received gradients) move up before that
 * point, so every gradient is final there (placeGradNorm). --piper-extract runs the update pass
 * last on every device, and no op outside it reads anything it produces within the step, so
 * each device's ops before the point depend only on the other devices' ops before theirs: every
 * device reaches the norm, and updates (with the all-gathers and copy refreshes after them)
 * all use the clipped gradient.
 */
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/checked.h"
#include "piper/runtime.h"

/* ---- piper_setup ---- */

/* prt_declare_tensor with aux given as a value (auxV), or the constant aux when auxV is null */
static void declareV(Lowering *L, MlirValue ctx, int64_t id, const char *name, int kind,
                     int init, MlirType t, int64_t aux, MlirValue auxV) {
  LlvmBuilder *b = &L->lb;
  int64_t rank = piperTensorRank(t);
  MlirValue args[11] = {ctx, lbConstI64(b, id), lbString(b, name), lbConstI32(b, kind),
                        lbConstI32(b, init), lbConstI64(b, rank)};
  for (int d = 0; d < 4; ++d) args[6 + d] = lbConstI64(b, d < rank ? piperTensorDim(t, d) : 0);
  /* inputs: first batch row; loss: rows it averages */
  args[10] = auxV.ptr ? auxV : lbConstI64(b, aux);
  lbCall(b, "prt_declare_tensor", (MlirType){NULL}, 11, args);
}

static void declare(Lowering *L, MlirValue ctx, int64_t id, const char *name, int kind,
                    int init, MlirType t, int64_t aux) {
  declareV(L, ctx, id, name, kind, init, t, aux, (MlirValue){NULL});
}

static int initKind(MlirOperation param) {
  char init[16] = "normal";
  piperGetStringAttr(param, "init", init, sizeof init);
  return !strcmp(init, "zeros")    ? PRT_INIT_ZEROS
         : !strcmp(init, "ones")   ? PRT_INIT_ONES
         : !strcmp(init, "buffer") ? PRT_INIT_BUFFER
                                   : PRT_INIT_NORMAL;
}

/* Rows of the batch a loss averages over: the leading dim of its cross_entropy's logits. */
static int64_t lossRows(MlirOperation output) {
  MlirValue v = mlirOperationGetOperand(output, 0);
  if (!mlirValueIsAOpResult(v) || !piperIsOp(mlirOpResultGetOwner(v), PIPER_TDAG_CROSS_ENTROPY))
    return 0;
  return piperTensorDim(mlirValueGetType(mlirOperationGetOperand(mlirOpResultGetOwner(v), 0)), 0);
}

/* Context parallelism (passes/shard_sequence.c): an input or the loss of a member of a
 * context-parallel group -> prt_declare_cp(ctx, id, cp_rank, cp_size). */
static void declareCp(LlvmBuilder *b, MlirValue ctx, MlirOperation op, int64_t id) {
  int64_t G = piperGetIntAttr(op, "cp_size", 1);
  if (G <= 1) return;
  MlirValue args[4] = {ctx, lbConstI64(b, id), lbConstI64(b, piperGetIntAttr(op, "cp_rank", 0)),
                       lbConstI64(b, G)};
  lbCall(b, "prt_declare_cp", (MlirType){NULL}, 4, args);
}

/* String attribute `name` of `op`, whole (a heap copy, "" when absent); free() it. Tensor
 * names key checkpoints, so two long names must never be cut to the same prefix. */
static char *attrText(MlirOperation op, const char *name) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return strdup("");
  MlirStringRef s = mlirStringAttrGetValue(a);
  return strndup(s.data, s.length);
}

/* Tensor parallelism (passes/shard_tensor.c): a split parameter or moment carries tp_full
 * (the whole tensor's dims) and, per member, tp_slice = [block, stride, blocks, step] with
 * tp_offset. It is declared with the whole dims (the checkpoint's shape); `local` otherwise. */
static MlirType tpWholeType(MlirOperation op, MlirType local) {
  MlirAttribute full = mlirOperationGetAttributeByName(op, piperStr("tp_full"));
  if (mlirAttributeIsNull(full)) return local;
  int64_t dims[4], rank = mlirArrayAttrGetNumElements(full);
  for (int64_t d = 0; d < rank && d < 4; ++d)
    dims[d] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(full, d));
  return mlirRankedTensorTypeGet(rank < 4 ? rank : 4, dims, mlirShapedTypeGetElementType(local),
                                 mlirAttributeGetNull());
}

/* prt_declare_tp_slice(ctx, id, offset, block, stride, blocks) for a split tensor: this
 * member's blocks of the whole one (before any ZeRO shard of them). */
static void tpDeclareSlice(Lowering *L, MlirValue ctx, MlirOperation op, int64_t id) {
  MlirAttribute slice = mlirOperationGetAttributeByName(op, piperStr("tp_slice"));
  if (mlirAttributeIsNull(slice)) return;
  LlvmBuilder *b = &L->lb;
  MlirValue args[6] = {ctx, lbConstI64(b, id), lbConstI64(b, piperGetIntAttr(op, "tp_offset", 0))};
  for (int i = 0; i < 3; ++i)
    args[3 + i] = lbConstI64(b, mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(slice, i)));
  lbCall(b, "prt_declare_tp_slice", (MlirType){NULL}, 6, args);
}

/* Expert parallelism in a plan per role (passes/shard.c, extract.c): a parameter or moment
 * with ep_expert = [at, len, e, El] is replica 0's expert e; prt_declare_expert renames it to
 * replica k's expert e + k * El. `prefix` is how many bytes precede the parameter's name in the
 * tensor's name ("optim.<slot>." for a moment). Per-device plans hold the right names already. */
static void epDeclareExpert(Lowering *L, MlirValue ctx, MlirOperation op, int64_t id,
                            int64_t prefix) {
  MlirAttribute mark = mlirOperationGetAttributeByName(op, piperStr("ep_expert"));
  if (!L->role || mlirAttributeIsNull(mark) || mlirArrayAttrGetNumElements(mark) != 4) return;
  LlvmBuilder *b = &L->lb;
  MlirValue args[6] = {ctx, lbConstI64(b, id)};
  for (int i = 0; i < 4; ++i)
    args[2 + i] = lbConstI64(b, mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(mark, i)) +
                                    (i == 0 ? prefix : 0));
  lbCall(b, "prt_declare_expert", (MlirType){NULL}, 6, args);
}

/* A hand-written plan's ep_expert must say what prt_declare_expert checks at run time: four
 * integers [at, len, e, stride] with e >= 0, stride >= 1 and e's `len` decimal digits at byte
 * `at` of the parameter's name (the `param` of a moment). Refused at the op otherwise. */
static bool epExpertOk(MlirOperation op) {
  MlirAttribute mark = mlirOperationGetAttributeByName(op, piperStr("ep_expert"));
  if (mlirAttributeIsNull(mark)) return true;
  bool ok = mlirAttributeIsAArray(mark) && mlirArrayAttrGetNumElements(mark) == 4;
  int64_t v[4] = {0};
  for (int i = 0; ok && i < 4; ++i) {
    MlirAttribute x = mlirArrayAttrGetElement(mark, i);
    ok = mlirAttributeIsAInteger(x);
    if (ok) v[i] = mlirIntegerAttrGetValueInt(x);
  }
  char *name = attrText(op, piperIsOp(op, PIPER_TDAG_PARAM) ? "name" : "param"), digits[24];
  ok = ok && (piperIsOp(op, PIPER_TDAG_PARAM) || piperIsOp(op, PIPER_TDAG_ADAM_STATE)) &&
       v[2] >= 0 &&
       v[3] >= 1 && v[0] >= 0 && (size_t)v[0] <= strlen(name) &&
       v[1] == snprintf(digits, sizeof digits, "%lld", (long long)v[2]) &&
       (size_t)v[1] <= strlen(name) - (size_t)v[0] && !memcmp(name + v[0], digits, (size_t)v[1]);
  free(name);
  if (!ok)
    mlirEmitError(mlirOperationGetLocation(op),
                  "piper-lower-to-llvm: ep_expert must be [at, len, e, stride] on a tdag.param or "
                  "tdag.adam_state, with the expert index e (len decimal digits) at byte `at` of "
                  "the parameter's name and stride >= 1 (passes/shard.c writes it)");
  return ok;
}

/* A plan whose receives follow its senders' order (piper.p2p_order = "fifo") ->
 * prt_declare_peer(ctx, peer) once per peer its sends and receives name (in a role's plan
 * peer + k * peer_stride, at run time), before the target's setup, which builds NCCL's
 * communicator per direction from every rank's peers. A plan with many transfers names few
 * peers, so the repeats are found by a linear scan. */
static void declarePeers(Lowering *L, MlirValue ctx) {
  LlvmBuilder *b = &L->lb;
  int64_t (*done)[2] = NULL; /* (peer, peer_stride) declared so far */
  size_t nDone = 0, capDone = 0;
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    if (!piperOpIs(op, "comm.send") && !piperOpIs(op, "comm.recv") &&
        !piperOpIs(op, "comm.recv_into"))
      continue;
    int64_t peer = piperGetIntAttr(op, "peer", -1);
    int64_t stride = L->role ? piperGetIntAttr(op, "peer_stride", 0) : 0;
    bool seen = false;
    for (size_t j = 0; j < nDone && !seen; ++j) seen = done[j][0] == peer && done[j][1] == stride;
    if (seen) continue;
    if (!piperGrow((void **)&done, &capDone, nDone + 1, sizeof *done)) {
      fprintf(stderr, "piper: error: out of memory listing a plan's peers\n");
      exit(1);
    }
    done[nDone][0] = peer;
    done[nDone++][1] = stride;
    MlirValue v = lbConstI64(b, peer);
    if (stride) {
      MlirValue affine[3] = {ctx, v, lbConstI64(b, stride)};
      v = lbCall(b, "prt_replica_affine", b->i64, 3, affine);
    }
    MlirValue args[2] = {ctx, v};
    lbCall(b, "prt_declare_peer", (MlirType){NULL}, 2, args);
  }
  free(done);
}

/* The module's piper.init_checkpoint (python/piper: the weights piper.export wrote, an
 * absolute path) -> prt_declare_init_checkpoint(ctx, path): where a run without
 * --init-checkpoint starts. */
static void declareExportWeights(Lowering *L, MlirOperation moduleOp, MlirValue ctx) {
  MlirAttribute a = mlirOperationGetAttributeByName(moduleOp, piperStr("piper.init_checkpoint"));
  if (mlirAttributeIsNull(a)) return;
  if (!mlirAttributeIsAString(a)) {
    mlirEmitError(mlirOperationGetLocation(moduleOp),
                  "piper-lower-to-llvm: piper.init_checkpoint must be a string (the path of the "
                  "weights piper.export wrote)");
    L->failed = true;
    return;
  }
  MlirStringRef s = mlirStringAttrGetValue(a);
  char *path = strndup(s.data, s.length);
  if (!path) {
    mlirEmitError(mlirOperationGetLocation(moduleOp), "piper-lower-to-llvm: out of memory");
    L->failed = true;
    return;
  }
  MlirValue args[2] = {ctx, lbString(&L->lb, path)};
  lbCall(&L->lb, "prt_declare_init_checkpoint", (MlirType){NULL}, 2, args);
  free(path);
}

static void emitSetup(Lowering *L, MlirOperation moduleOp, const char *fnName) {
  LlvmBuilder *b = &L->lb;
  MlirValue ctx = lbBeginFunction(b, fnName);
  if (L->shared->p2pFifo) declarePeers(L, ctx);
  declareExportWeights(L, moduleOp, ctx);
  /* the target's device first (the GPU's setup loads the PTX piper-compile embeds as piper_ptx
   * and makes the GPU the context's device) before anything is declared or allocated */
  if (L->shared->target->setup) lwCall(L, L->shared->target->setup, 1, &ctx);
  int64_t id = 0;
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    char *name = NULL;
    if (piperIsOp(op, PIPER_TDAG_PARAM)) {
      name = attrText(op, "name");
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
      declare(L, ctx, id++, name, PRT_PARAM, initKind(op), tpWholeType(op, t), 0);
      tpDeclareSlice(L, ctx, op, id - 1);
      epDeclareExpert(L, ctx, op, id - 1, 0);
      if (lwIsShardedParam(mlirOperationGetResult(op, 0))) {
        /* ZeRO-3: declared with its full dims, stored as this replica's shard */
        Shard sh = lwShardOf(op, piperTensorNumel(t));
        MlirValue off, len;
        lwShardValues(L, ctx, sh, 1, &off, &len);
        MlirValue args[5] = {ctx, lbConstI64(b, id - 1), off, len, lbConstI64(b, sh.n)};
        lbCall(b, "prt_declare_shard", (MlirType){NULL}, 5, args);
      }
    } else if (piperIsOp(op, PIPER_TDAG_ADAM_STATE)) {
      char *slot = attrText(op, "slot"), *param = attrText(op, "param");
      size_t size = strlen(slot) + strlen(param) + sizeof "optim..";
      name = malloc(size);
      snprintf(name, size, "optim.%s.%s", slot, param);
      int64_t paramAt = (int64_t)(strlen(name) - strlen(param)); /* where the param's name is */
      free(slot);
      free(param);
      MlirValue state = mlirOperationGetResult(op, 0);
      if (mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("shards")))) {
        declare(L, ctx, id++, name, PRT_OPTIM, PRT_INIT_ZEROS,
                tpWholeType(op, mlirValueGetType(state)), 0);
        tpDeclareSlice(L, ctx, op, id - 1);
        epDeclareExpert(L, ctx, op, id - 1, paramAt);
      } else {
        /* ZeRO: declared with its parameter's full dims, so checkpoints hold the whole moment
         * whatever the layout, and stored as this replica's shard of it. The verifier makes
         * the moment's one use a tdag.adamw. */
        MlirOperation upd = mlirOpOperandGetOwner(mlirValueGetFirstUse(state));
        MlirType full = lwInType(upd, 0);
        Shard sh = lwShardOf(op, piperTensorNumel(full));
        declare(L, ctx, id++, name, PRT_OPTIM, PRT_INIT_ZEROS, tpWholeType(op, full), 0);
        tpDeclareSlice(L, ctx, op, id - 1);
        epDeclareExpert(L, ctx, op, id - 1, paramAt);
        MlirValue off, len;
        lwShardValues(L, ctx, sh, 1, &off, &len);
        MlirValue args[5] = {ctx, lbConstI64(b, id - 1), off, len, lbConstI64(b, sh.n)};
        lbCall(b, "prt_declare_shard", (MlirType){NULL}, 5, args);
        /* ZeRO-2: a whole parameter updated from a reduce-scattered gradient. No device holds
         * that gradient whole, so the runtime refuses --dump-grads up front (lower_compute.c
         * does not observe it). */
        MlirValue p = mlirOperationGetOperand(upd, 0), g = mlirOperationGetOperand(upd, 1);
        if (lwIsReduceScattered(g) && !lwIsShardedParam(p) && lwBufferOf(L, p)) {
          MlirValue sc[2] = {ctx, lbConstI64(b, lwBufferOf(L, p)->tensorId)};
          lbCall(b, "prt_declare_grad_scattered", (MlirType){NULL}, 2, sc);
        }
      }
    } else if (piperIsOp(op, PIPER_TDAG_INPUT)) {
      name = attrText(op, "name");
      int64_t first = piperGetIntAttr(op, "first_sample", 0);
      int64_t stride = piperGetIntAttr(op, "first_sample_stride", 0);
      MlirValue row = {NULL};
      if (L->role && stride) { /* replica k's rows: first_sample + k * stride, at run time */
        MlirValue affine[3] = {ctx, lbConstI64(b, first), lbConstI64(b, stride)};
        row = lbCall(b, "prt_replica_affine", b->i64, 3, affine);
      }
      declareV(L, ctx, id++, name, PRT_INPUT, 0, mlirValueGetType(mlirOperationGetResult(op, 0)),
               first, row);
      declareCp(b, ctx, op, id - 1);
    } else if (piperIsOp(op, PIPER_TDAG_OUTPUT)) {
      name = attrText(op, "name");
      declare(L, ctx, id++, name, PRT_OUTPUT, 0, mlirValueGetType(mlirOperationGetOperand(op, 0)),
              lossRows(op));
      declareCp(b, ctx, op, id - 1);
    }
    free(name);
  }
  for (size_t k = 0; k < L->nCopies; ++k) { /* after every other tensor (planBf16Copies) */
    MlirValue copy[3] = {ctx, lbConstI64(b, L->copies[k].tensorId),
                         lbConstI64(b, lwBufferOf(L, L->copies[k].param)->tensorId)};
    lbCall(b, "prt_declare_bf16_copy", (MlirType){NULL}, 3, copy);
  }
  MlirValue args[2] = {ctx, lbConstI64(b, L->arenaBytes)};
  lbCall(b, "prt_declare_arena", (MlirType){NULL}, 2, args);
  MlirValue use[3] = {ctx, lbConstI64(b, L->peakActivations), lbConstI64(b, L->peakGradients)};
  lbCall(b, "prt_declare_arena_use", (MlirType){NULL}, 3, use);
  lbReturn(b);
}

/* ---- piper_step ---- */

/* True for an op of the update pass (pass = "UPD"). */
static bool isUpdate(MlirOperation op) {
  char pass[8];
  return piperGetStringAttr(op, "pass", pass, sizeof pass) && !strcmp(pass, "UPD");
}

/* Sets L->normAt to the index of the first update op (nOps if none), after moving before it,
 * in order, every comm.wait found after it whose transfer is outside the update pass and
 * brings a tensor (what an update may read must be complete when the norm is taken). The
 * transfers themselves were issued before that point, so only their waits move earlier. */
static void placeGradNorm(Lowering *L) {
  size_t u = 0;
  while (u < L->nOps && !isUpdate(L->ops[u])) u++;
  size_t hoisted = u;
  for (size_t i = u; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    if (!piperOpIs(op, "comm.wait")) continue;
    MlirValue token = mlirOperationGetOperand(op, 0);
    if (!mlirValueIsAOpResult(token)) continue;
    MlirOperation from = mlirOpResultGetOwner(token);
    if (isUpdate(from) || mlirOperationGetNumResults(from) < 2) continue;
    memmove(&L->ops[hoisted + 1], &L->ops[hoisted], (i - hoisted) * sizeof *L->ops);
    L->ops[hoisted++] = op;
  }
  L->normAt = hoisted;
}

/* prt_grad_sq_accum for every update's gradient slice, then prt_grad_norm_sync. */
static void emitGradNorm(Lowering *L) {
  for (size_t i = 0; i < L->nOps; ++i)
    if (piperIsOp(L->ops[i], PIPER_TDAG_ADAMW)) lwLowerGradSq(L, L->ops[i]);
  lwCallKernel(L, L->func, PRT_K_grad_norm_sync, 1, &L->ctxArg);
}

/* True if the evaluation step runs `op`: a forward op or transfer, or the wait for one. */
static bool inEvalStep(MlirOperation op) {
  if (piperOpIs(op, "comm.wait")) {
    MlirValue token = mlirOperationGetOperand(op, 0);
    if (!mlirValueIsAOpResult(token)) return false;
    op = mlirOpResultGetOwner(token);
  }
  char pass[8];
  return !piperGetStringAttr(op, "pass", pass, sizeof pass) || !strcmp(pass, "F");
}

/* piper_step (evalStep false) or piper_eval_step: the ops in order, the latter only those
 * inEvalStep keeps. The arena layout planned for the whole step holds for any subset of its
 * ops in the same order. */
static void emitStep(Lowering *L, const char *fnName, bool evalStep) {
  for (size_t i = 0; i < L->nBufs; ++i) L->bufs[i].ptr = (MlirValue){NULL}; /* per function */
  for (size_t k = 0; k < L->nCopies; ++k) L->copies[k].ptr = (MlirValue){NULL};
  piperPtrMapFree(&L->handleOf);
  piperPtrMapInit(&L->handleOf, 64);
  L->ctxArg = lbBeginFunction(&L->lb, fnName);
  L->arena = lbCall(&L->lb, "prt_arena", L->lb.ptr, 1, &L->ctxArg);
  /* --trace: each run of consecutive ops of one node is a span on the compute lane (comm ops
   * are traced by the runtime on their own lanes). */
  char open[160] = "";
  MlirValue compute = lbConstI64(&L->lb, 0);
  for (size_t i = 0; i < L->nOps; ++i) {
    MlirOperation op = L->ops[i];
    if (evalStep && !inEvalStep(op)) continue;
    if (i == L->normAt && !evalStep) emitGradNorm(L);
    /* waiting is idle time: close the open span before a wait */
    if (piperOpIs(op, "comm.wait") && open[0]) {
      MlirValue end[2] = {L->ctxArg, compute};
      lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
      open[0] = 0;
    }
    if (piperOpInDialect(op, "tdag") && !lwDeclaresTensor(op)) {
      char label[160];
      piperNodeLabel(op, label, sizeof label);
      if (strcmp(label, open)) {
        MlirValue end[2] = {L->ctxArg, compute};
        if (open[0]) lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
        MlirValue begin[3] = {L->ctxArg, lbString(&L->lb, label), compute};
        lbCall(&L->lb, "prt_span_begin", (MlirType){NULL}, 3, begin);
        snprintf(open, sizeof open, "%s", label);
      }
    }
    if (piperOpInDialect(op, "comm")) lwLowerComm(L, op);
    else lwLowerCompute(L, op);
  }
  if (L->normAt >= L->nOps && !evalStep) emitGradNorm(L); /* no update: still one a step */
  if (open[0]) {
    MlirValue end[2] = {L->ctxArg, compute};
    lbCall(&L->lb, "prt_span_end", (MlirType){NULL}, 2, end);
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

/* Frees what lowering one function built (maps never initialised free as empty). */
static void freeLowering(Lowering *L) {
  piperPtrMapFree(&L->bufOf);
  piperPtrMapFree(&L->outputId);
  piperPtrMapFree(&L->handleOf);
  piperPtrMapFree(&L->viewOffset);
  piperPtrMapFree(&L->bf16Ptr);
  piperPtrMapFree(&L->epilogue);
  free(L->copies);
  free(L->bufs);
  free(L->ops);
}

/* True for a moe_experts / moe_experts_grad_input that still holds the experts of all its
 * `groups` replicas (the global DAG's form, counts (E) rather than (groups * local experts);
 * see moeExperts in dialects/tdag.c): the kernels index counts by G*El, so only a device's
 * op, after --piper-extract, can be lowered. */
static bool moeGlobalForm(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f || (f->id != PIPER_TDAG_MOE_EXPERTS && f->id != PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT))
    return false;
  intptr_t first = f->id == PIPER_TDAG_MOE_EXPERTS ? 2 : 3;
  int64_t G = piperGetIntAttr(op, "groups", 1), GEl;
  int64_t El = (mlirOperationGetNumOperands(op) - first) / 3;
  return !piperMulI64(G, El, &GEl) ||
         piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(op, 1))) != GEl;
}

/* Lowers one graph function into `setupName` / `stepName`; erases it. */
static MlirLogicalResult lowerFunction(MlirOperation moduleOp, MlirOperation func, Shared *shared,
                                       const char *setupName, const char *stepName,
                                       const char *symPrefix, int64_t *arenaBytes) {
  Lowering L = {0};
  L.func = func;
  L.shared = shared;
  L.role = !mlirAttributeIsNull(mlirOperationGetAttributeByName(func, piperStr("piper.role")));
  char precision[8];
  L.bf16 = piperGetStringAttr(moduleOp, "piper.precision", precision, sizeof precision) &&
           !strcmp(precision, "bf16");
  char io[16];
  L.bf16Io = L.bf16 && shared->target->bf16Io &&
             !(piperGetStringAttr(moduleOp, "piper.bf16_io", io, sizeof io) &&
               !strcmp(io, "convert"));
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return")) continue;
    if ((!piperOpInDialect(op, "tdag") && !piperOpInDialect(op, "comm")) ||
        (piperOpFacts(op) && piperOpFacts(op)->kind == PIPER_OP_GRAPH)) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: only tdag compute ops and comm send/recv/all_reduce/"
                    "reduce_scatter/all_gather/all_to_all can be lowered here; run the strategy "
                    "passes first for graph-level ops");
      return mlirLogicalResultFailure();
    }
    /* a kernel on the CPU and none on the target: the op cannot run there */
    const PiperOpFacts *f = piperOpFacts(op);
    if (f && f->kernel && !lwKernelOf(shared, op)) {
      piperEmitErrorf(mlirOperationGetLocation(op),
                      "piper-lower-to-llvm: '%s' has no GPU kernel (its kernel in "
                      "include/piper/kernels.def has none), so --target cuda cannot compile this "
                      "plan; compile it for the CPU (no --target), or give the op a kernel in "
                      "runtime/kernels/cuda.c and set its gpu column", f->name);
      return mlirLogicalResultFailure();
    }
    L.nOps++;
  }
  if (mlirLogicalResultIsFailure(piperVerifyTdag(func))) return mlirLogicalResultFailure();
  bool experts = true;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    experts = epExpertOk(op) && experts;
  if (!experts) return mlirLogicalResultFailure();
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (moeGlobalForm(op)) {
      mlirEmitError(mlirOperationGetLocation(op),
                    "piper-lower-to-llvm: this expert op still holds the experts of all its "
                    "groups' devices (a shard directive's global DAG); run --piper-extract first, "
                    "which gives each device its own experts");
      return mlirLogicalResultFailure();
    }
  /* piper_step(ctx) has no other inputs or outputs: every tensor comes from a tdag.param,
   * adam_state or input op and leaves through a tdag.output, so a value from an argument would
   * have no storage, and a returned one would be dropped. */
  MlirType fnType = mlirTypeAttrGetValue(
      mlirOperationGetAttributeByName(func, piperStr("function_type")));
  if (mlirBlockGetNumArguments(body) > 0 || mlirFunctionTypeGetNumResults(fnType) > 0) {
    MlirStringRef name =
        mlirStringAttrGetValue(mlirOperationGetAttributeByName(func, piperStr("sym_name")));
    piperEmitErrorf(mlirOperationGetLocation(func),
                    "piper-lower-to-llvm: the graph function @%.*s has %lld argument(s) and "
                    "%lld result(s); a training graph takes its tensors from tdag.param and "
                    "tdag.input ops and reports through tdag.output, so it must be `() -> ()`",
                    (int)name.length, name.data, (long long)mlirBlockGetNumArguments(body),
                    (long long)mlirFunctionTypeGetNumResults(fnType));
    return mlirLogicalResultFailure();
  }
  L.ops = malloc((L.nOps ? L.nOps : 1) * sizeof *L.ops);
  size_t n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (!piperOpIs(op, "func.return")) L.ops[n++] = op;
  placeGradNorm(&L);

  piperPtrMapInit(&L.bf16Ptr, 64);
  lwPairEpilogues(&L); /* before the memory plan, which keeps a pair's operands to its call
                          (its bf16 copies are not planned yet: a weight operand counts as
                          converting, so no pair is made on it) */
  if (!lwPlanMemory(&L)) {
    mlirEmitError(mlirOperationGetLocation(func),
                  "piper-lower-to-llvm: the activation arena of this function would need more "
                  "bytes than int64 can count; use smaller tensors or more devices");
    freeLowering(&L);
    return mlirLogicalResultFailure();
  }
  piperPtrMapInit(&L.handleOf, 64); /* emitStep starts it afresh for each function */
  lbInitShared(&L.lb, mlirModuleFromOperation(moduleOp), mlirOperationGetLocation(func),
               symPrefix, &shared->declared);
  emitSetup(&L, moduleOp, setupName);
  emitStep(&L, stepName, false);
  char evalName[64];
  snprintf(evalName, sizeof evalName, "piper_eval%s", stepName + strlen("piper"));
  emitStep(&L, evalName, true);
  lbFree(&L.lb);
  *arenaBytes = L.arenaBytes;
  bool failed = L.failed; /* a kernel call refused: its diagnostic is out */
  if (!failed) mlirOperationDestroy(func);
  freeLowering(&L);
  return failed ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

/* piper_setup / piper_step of a multi-device plan: shared declarations, then per rank.
 * piper_setup -> prt_declare_world; prt_declare_batch; prt_declare_group per group (its exact
 *   member list as a constant array); prt_declare_stream per stream; switch (rank) -> dev<d>
 * piper_step  -> switch (prt_rank(ctx)) { case d: piper_step_dev<d>(ctx) }
 * piper_eval_step alike with piper_eval_step_dev<d> */
/* A plan per role (roles > 0, role functions role_<p> with piper.role = [start, stride, R]):
 * piper_setup also calls prt_declare_roles(start[], stride[], count[]) before the groups;
 * groups that are ranges are declared as ranges (prt_declare_group_range: three numbers, not
 * R members); a group family (a tensor-parallel group, group_stride S: replica k's members are
 * replica 0's + k * S) as its replica-0 members and S (prt_declare_group_family, after the
 * roles that give k); and the switch is on prt_role, one case per role, calling _role<p>. The
 * binary thus has the same size for every replica count. */
static bool groupRange(MlirAttribute g, int64_t *start, int64_t *stride) {
  PiperRange r;
  if (piperDeviceListIsRange(g, &r)) { /* run 1: start + i * step; runs: no progression */
    *start = r.start, *stride = r.step;
    return r.run == 1;
  }
  intptr_t n = piperDeviceListLen(g);
  *start = n ? piperDeviceListAt(g, 0) : 0;
  *stride = n > 1 ? piperDeviceListAt(g, 1) - *start : 1;
  if (*stride < 1 || n < 1) return false;
  for (intptr_t i = 2; i < n; ++i)
    if (piperDeviceListAt(g, i) != *start + i * *stride) return false;
  return true;
}

static void emitDispatch(MlirOperation moduleOp, Shared *sh, int64_t devices, int64_t batch,
                         int64_t roles, const int64_t *roleRange) {
  LlvmBuilder lb;
  lbInitShared(&lb, mlirModuleFromOperation(moduleOp), mlirOperationGetLocation(moduleOp),
               "_plan", &sh->declared);
  int64_t *ranks = malloc(devices * sizeof *ranks);
  MlirBlock *calls = malloc(devices * sizeof *calls);
  for (int which = 0; which < 3; ++which) {
    const char *prefix = which == 2 ? "piper_eval_step" : which ? "piper_step" : "piper_setup";
    MlirValue ctx = lbBeginFunction(&lb, prefix);
    if (!which) {
      MlirValue w[2] = {ctx, lbConstI64(&lb, devices)};
      lbCall(&lb, "prt_declare_world", (MlirType){NULL}, 2, w);
      if (batch > 0) {
        MlirValue bt[2] = {ctx, lbConstI64(&lb, batch)};
        lbCall(&lb, "prt_declare_batch", (MlirType){NULL}, 2, bt);
      }
      if (roles > 0) {
        int64_t *col = malloc(3 * roles * sizeof *col);
        for (int c = 0; c < 3; ++c)
          for (int64_t p = 0; p < roles; ++p) col[c * roles + p] = roleRange[3 * p + c];
        MlirValue args[5] = {ctx, lbConstI64(&lb, roles), lbI64Array(&lb, roles, col),
                             lbI64Array(&lb, roles, col + roles),
                             lbI64Array(&lb, roles, col + 2 * roles)};
        lbCall(&lb, "prt_declare_roles", (MlirType){NULL}, 5, args);
        free(col);
      }
      for (size_t g = 0; g < sh->nGroups; ++g) {
        int64_t start, stride;
        MlirAttribute group = sh->groups[g].members;
        intptr_t n = piperDeviceListLen(group);
        if (roles > 0 && sh->groups[g].familyStride) { /* replica 0's members, shifted by k */
          int64_t *base = malloc((n ? n : 1) * sizeof *base);
          for (intptr_t i = 0; i < n; ++i) base[i] = piperDeviceListAt(group, i);
          MlirValue args[5] = {ctx, lbConstI64(&lb, (int64_t)g), lbConstI64(&lb, n),
                               lbI64Array(&lb, n, base),
                               lbConstI64(&lb, sh->groups[g].familyStride)};
          lbCall(&lb, "prt_declare_group_family", (MlirType){NULL}, 5, args);
          free(base);
          continue;
        }
        if (roles > 0 && groupRange(group, &start, &stride)) {
          MlirValue args[5] = {ctx, lbConstI64(&lb, (int64_t)g), lbConstI64(&lb, n),
                               lbConstI64(&lb, start), lbConstI64(&lb, stride)};
          lbCall(&lb, "prt_declare_group_range", (MlirType){NULL}, 5, args);
          continue;
        }
        /* every member, however many: the verifier bounds them to device ids */
        int64_t *members = malloc((n ? n : 1) * sizeof *members);
        for (intptr_t i = 0; i < n; ++i) members[i] = piperDeviceListAt(group, i);
        MlirValue args[4] = {ctx, lbConstI64(&lb, (int64_t)g), lbConstI64(&lb, n),
                             lbI64Array(&lb, n, members)};
        lbCall(&lb, "prt_declare_group", (MlirType){NULL}, 4, args);
        free(members);
      }
      for (size_t st = 0; st < sh->nStreams; ++st) {
        MlirValue args[3] = {ctx, lbConstI64(&lb, (int64_t)st), lbString(&lb, sh->streams[st])};
        lbCall(&lb, "prt_declare_stream", (MlirType){NULL}, 3, args);
      }
    }
    if (devices == 1 && roles == 0) {
      char fn0[48];
      snprintf(fn0, sizeof fn0, "%s_dev0", prefix);
      lbCall(&lb, fn0, (MlirType){NULL}, 1, &ctx);
      lbReturn(&lb);
      continue;
    }
    /* one switch on the rank; a rank beyond the plan runs nothing: the runtime's world check
     * then reports the mismatch */
    MlirValue rank = lbCall(&lb, roles > 0 ? "prt_role" : "prt_rank", lb.i64, 1, &ctx);
    MlirBlock entry = lb.block, done = lbNewBlock(&lb, false);
    int64_t cases = roles > 0 ? roles : devices;
    for (int64_t d = 0; d < cases; ++d) {
      ranks[d] = d;
      calls[d] = lbNewBlock(&lb, true);
      char fn[48];
      snprintf(fn, sizeof fn, roles > 0 ? "%s_role%lld" : "%s_dev%lld", prefix, (long long)d);
      lbCall(&lb, fn, (MlirType){NULL}, 1, &ctx);
      lbReturn(&lb);
    }
    lbSetBlock(&lb, entry);
    lbSwitch(&lb, rank, done, cases, ranks, calls);
    lbSetBlock(&lb, done);
    lbReturn(&lb);
  }
  free(ranks);
  free(calls);
  lbFree(&lb);
}

/* Frees what `sh` owns. */
static void freeShared(Shared *sh) {
  for (size_t i = 0; i < sh->nStreams; ++i) free(sh->streams[i]);
  free(sh->streams);
  free(sh->groups);
  piperPtrMapFree(&sh->groupOf);
  piperPtrMapFree(&sh->declared);
}

/* The module's target: the record its piper.target string attribute names (the CPU when
 * absent); NULL with a diagnostic at the module for anything else. */
static const PiperTarget *targetOf(MlirOperation moduleOp) {
  MlirAttribute t = mlirOperationGetAttributeByName(moduleOp, piperStr("piper.target"));
  if (mlirAttributeIsNull(t)) return piperTargetDefault();
  const PiperTarget *target = mlirAttributeIsAString(t) ? piperTargetNamed(mlirStringAttrGetValue(t))
                                                        : NULL;
  if (!target)
    mlirEmitError(mlirOperationGetLocation(moduleOp),
                  "piper-lower-to-llvm: piper.target must be the string \"cpu\" or \"cuda\"");
  return target;
}

MlirLogicalResult piperLowerToLLVM(MlirOperation moduleOp) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(moduleOp, 0));
  MlirOperation *graphs = NULL; /* every graph function, however many devices the plan has */
  size_t nGraphs = 0, capGraphs = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (isGraph(op)) {
      if (!piperGrow((void **)&graphs, &capGraphs, nGraphs + 1, sizeof *graphs)) {
        mlirEmitError(mlirOperationGetLocation(op), "piper-lower-to-llvm: out of memory");
        free(graphs);
        return mlirLogicalResultFailure();
      }
      graphs[nGraphs++] = op;
    }
  if (nGraphs == 0) {
    mlirEmitError(mlirOperationGetLocation(moduleOp),
                  "piper-lower-to-llvm: no function with tdag ops to lower");
    return mlirLogicalResultFailure();
  }
  MlirAttribute devAttr = mlirOperationGetAttributeByName(moduleOp, piperStr("piper.devices"));
  bool plan = !mlirAttributeIsNull(devAttr);
  const PiperTarget *target = targetOf(moduleOp);
  if (!target) {
    free(graphs);
    return mlirLogicalResultFailure();
  }
  int64_t devices = plan && mlirAttributeIsAInteger(devAttr) ? mlirIntegerAttrGetValueInt(devAttr)
                    : plan ? -1 : 1;
  /* A plan has exactly one function per device, device_0 .. device_{N-1}: the rank dispatch
   * calls each of them, and is as large as the plan (never a loop over a hostile count). */
  /* A plan per role (piper.roles = P): exactly the functions role_0 .. role_{P-1}. */
  int64_t roles = plan ? piperGetIntAttr(moduleOp, "piper.roles", 0) : 0;
  int64_t units = roles > 0 ? roles : devices;
  if (plan && (devices < 1 || devices > PIPER_MAX_DEVICES || roles < 0 || roles > devices ||
               (size_t)units != nGraphs)) {
    piperEmitErrorf(mlirOperationGetLocation(moduleOp),
                    "piper-lower-to-llvm: piper.devices must be an integer in [1, %d] equal to "
                    "the number of device functions, or piper.roles to that of role functions "
                    "(%zu here)",
                    PIPER_MAX_DEVICES, nGraphs);
    free(graphs);
    return mlirLogicalResultFailure();
  }
  if (!plan && nGraphs > 1) {
    mlirEmitError(mlirOperationGetLocation(graphs[1]),
                  "piper-lower-to-llvm: a module lowers one device function; found a second");
    free(graphs);
    return mlirLogicalResultFailure();
  }
  int64_t *deviceOf = calloc(nGraphs, sizeof *deviceOf);
  bool *seen = plan ? calloc(units, sizeof *seen) : NULL;
  int64_t *roleRange = roles > 0 ? calloc(3 * roles, sizeof *roleRange) : NULL;
  for (size_t g = 0; plan && g < nGraphs; ++g) {
    MlirAttribute sym = mlirOperationGetAttributeByName(graphs[g], piperStr("sym_name"));
    MlirStringRef name = mlirStringAttrGetValue(sym);
    int64_t d = -1;
    MlirAttribute range = mlirOperationGetAttributeByName(graphs[g], piperStr("piper.role"));
    if (roles == 0) {
      d = piperDeviceFunctionNumber(name);
    } else if (!mlirAttributeIsNull(range) && mlirAttributeIsAArray(range) &&
               mlirArrayAttrGetNumElements(range) == 3) {
      /* the name rule verify-plan proves by: role_01 is no role's plan */
      d = piperPlanFunctionNumber(name, "role_");
      if (d >= roles) d = -1;
      for (int c = 0; c < 3 && d >= 0; ++c)
        roleRange[3 * d + c] = mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, c));
    }
    if (d < 0 || d >= units || seen[d]) {
      mlirEmitError(mlirOperationGetLocation(graphs[g]),
                    "piper-lower-to-llvm: in a plan of piper.devices devices, graph functions "
                    "must be named device_0 .. device_{N-1} (or role_0 .. role_{P-1} with "
                    "piper.role in a plan of piper.roles), each once (run --piper-extract)");
      free(graphs);
      free(deviceOf);
      free(seen);
      free(roleRange);
      return mlirLogicalResultFailure();
    }
    seen[d] = true;
    deviceOf[g] = d;
  }
  free(seen);
  Shared shared = {0};
  shared.target = target;
  MlirAttribute order = mlirOperationGetAttributeByName(moduleOp, piperStr("piper.p2p_order"));
  shared.p2pFifo = !mlirAttributeIsNull(order) && mlirAttributeIsAString(order) &&
                   mlirStringRefEqual(mlirStringAttrGetValue(order), piperStr("fifo"));
  piperPtrMapInit(&shared.groupOf, 16);
  if (!piperGrow((void **)&shared.streams, &shared.capStreams, 1, sizeof *shared.streams)) {
    free(graphs);
    free(deviceOf);
    free(roleRange);
    return mlirLogicalResultFailure();
  }
  shared.streams[shared.nStreams++] = strdup("compute");
  { /* one scan for functions the module already has; the builders then share the map */
    LlvmBuilder scan;
    lbInit(&scan, mlirModuleFromOperation(moduleOp), mlirOperationGetLocation(moduleOp), "");
    shared.declared = scan.ownDeclared;
  }
  MlirContext ctx = mlirOperationGetContext(moduleOp);
  int64_t peak = 0;
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t g = 0; g < nGraphs; ++g) {
    char setup[48], step[48], prefix[32] = "";
    int64_t d = deviceOf[g], arena = 0;
    const char *unit = roles > 0 ? "role" : "dev";
    if (plan) snprintf(prefix, sizeof prefix, "_%s%lld_", unit, (long long)d);
    if (plan) {
      snprintf(setup, sizeof setup, "piper_setup_%s%lld", unit, (long long)d);
      snprintf(step, sizeof step, "piper_step_%s%lld", unit, (long long)d);
    } else {
      snprintf(setup, sizeof setup, "piper_setup");
      snprintf(step, sizeof step, "piper_step");
    }
    status = lowerFunction(moduleOp, graphs[g], &shared, setup, step, prefix, &arena);
    if (mlirLogicalResultIsFailure(status)) break;
    peak = arena > peak ? arena : peak;
  }
  if (mlirLogicalResultIsSuccess(status)) {
    if (plan)
      emitDispatch(moduleOp, &shared, devices,
                   piperGetIntAttr(moduleOp, "piper.global_batch", 0), roles, roleRange);
    mlirOperationSetAttributeByName(moduleOp, piperStr("piper.arena_bytes"),
                                    mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), peak));
  }
  freeShared(&shared);
  free(graphs);
  free(deviceOf);
  free(roleRange);
  return status;
}

static MlirLogicalResult runLower(MlirOperation module, const char *arg) {
  return piperLowerToLLVM(module);
}

MlirPass piperCreateLowerToLLVMPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-lower-to-llvm", "tdag -> llvm dialect",
                               runLower, arg);
}
