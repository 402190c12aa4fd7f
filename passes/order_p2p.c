/* --piper-order-p2p: every pair's receives in the order its sender sends, so a transport
 * without tags (NCCL) can carry the plan's send/recv.
 *
 * MPI matches a receive to its send by tag, so the plans are free to post a pair's receives in
 * any order; NCCL has no tags: the k-th ncclRecv from a peer gets the k-th ncclSend of that
 * peer on the communicator. The schedules do not keep the two orders alike (GPT 1F1B on two
 * stages: stage 1 sends the tied embedding's gradient, tag 9, before the activation gradient,
 * tag 5, and stage 0 posts the receive of 5 first). The sender's order follows the data (a
 * send sits right after its producer), so this pass moves receives: for each direction a->b,
 * the receives on b from a are put in the order a issues its sends, each receive moved only
 * earlier (right before the receive that must follow it), never later. Moving a receive
 * earlier delays nothing: it is posted sooner and waited for where it was (its comm.wait
 * stays), and in the plans' blocking model (--piper-verify-plan) it waits for a send issued
 * no later than the one the receive it now precedes waited for. It may cost arena (the moved
 * buffer lives longer; GPT PP2 1F1B's largest arena fell from 330496 to 297728 bytes instead,
 * the memory plan placing it otherwise; measured by hand). A comm.recv_into whose buffer is
 * defined after the new place cannot move: that is an error at it.
 *
 * The module then carries piper.p2p_order = "fifo": --piper-verify-plan proves the property
 * (each receive gets the earliest send of its peer still unreceived), and the lowering
 * declares each plan's peers (prt_declare_peer), which the NCCL backend needs to build a
 * communicator per direction. piper-compile runs it for --target cuda plans. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "passes/strategy.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

/* One plan function and its point-to-point ops, in block order. */
typedef struct {
  MlirOperation fn;     /* @device_<d> or @role_<p>; null if the module has none */
  MlirOperation *sends; /* (nSends) comm.send, owned */
  MlirOperation *recvs; /* (nRecvs) comm.recv and comm.recv_into, owned */
  size_t nSends, nRecvs, capSends, capRecvs;
  int64_t start;        /* in a plan per role: its replica 0's device (a peer's value) */
} Plan;

/* A tag as a map key: nonzero, and shifted past the bits the map drops (it hashes key >> 4). */
static const void *tagKey(MlirOperation op) {
  return (const void *)((uintptr_t)(piperGetIntAttr(op, "tag", -1) + 1) << 4);
}

static bool isRecv(MlirOperation op) {
  return piperOpIs(op, "comm.recv") || piperOpIs(op, "comm.recv_into");
}

static bool push(MlirOperation **v, size_t *n, size_t *cap, MlirOperation op) {
  if (!piperGrow((void **)v, cap, *n + 1, sizeof **v)) return false;
  (*v)[(*n)++] = op;
  return true;
}

/* The plan index a transfer's peer attribute names: the device, or in a plan per role the
 * role whose replica 0 it is (-1: none). */
static int64_t planOfPeer(const Plan *plans, int64_t N, int64_t P, int64_t peer) {
  if (P == 0) return peer >= 0 && peer < N ? peer : -1;
  for (int64_t p = 0; p < P; ++p)
    if (!mlirOperationIsNull(plans[p].fn) && plans[p].start == peer) return p;
  return -1;
}

/* Reads the plan functions; false after an error (out of memory). */
static bool readPlans(MlirOperation module, Plan *plans, int64_t N, int64_t P) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    MlirAttribute sym = mlirOperationGetAttributeByName(f, piperStr("sym_name"));
    if (!piperOpIs(f, "func.func") || mlirAttributeIsNull(sym)) continue;
    int64_t d = P > 0 ? piperPlanFunctionNumber(mlirStringAttrGetValue(sym), "role_")
                      : piperDeviceFunctionNumber(mlirStringAttrGetValue(sym));
    if (d < 0 || d >= N) continue;
    Plan *pl = &plans[d];
    pl->fn = f;
    MlirAttribute role = mlirOperationGetAttributeByName(f, piperStr("piper.role"));
    pl->start = P > 0 && !mlirAttributeIsNull(role) && mlirAttributeIsAArray(role) &&
                        mlirArrayAttrGetNumElements(role) == 3
                    ? mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(role, 0))
                    : -1;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    if (mlirBlockIsNull(body)) continue;
    for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op)) {
      bool ok = piperOpIs(op, "comm.send") ? push(&pl->sends, &pl->nSends, &pl->capSends, op)
                : isRecv(op)               ? push(&pl->recvs, &pl->nRecvs, &pl->capRecvs, op)
                                           : true;
      if (!ok) {
        mlirEmitError(mlirOperationGetLocation(op), "piper-order-p2p: out of memory");
        return false;
      }
    }
  }
  return true;
}

/* Moves `r` right before `next` (both in one block, r after next). A comm.recv_into's buffer
 * must be defined before that place; false after an error at r when it is not. */
static bool moveBefore(MlirOperation r, MlirOperation next, int64_t from, int64_t tag) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(r); ++i) {
    MlirValue v = mlirOperationGetOperand(r, i);
    if (!mlirValueIsAOpResult(v)) continue;
    MlirOperation def = mlirOpResultGetOwner(v);
    if (mlirOperationGetBlock(def).ptr == mlirOperationGetBlock(next).ptr &&
        (def.ptr == next.ptr || !mlirOperationIsBeforeInBlock(def, next))) {
      piperEmitErrorf(mlirOperationGetLocation(r),
                      "piper-order-p2p: this receive of tag %lld from plan %lld must be posted "
                      "earlier (its sender sends it before the receive that follows it here), "
                      "but its buffer is defined after that point; NCCL cannot carry this "
                      "plan's send/recv (run with --comm mpi)", (long long)tag,
                      (long long)from);
      return false;
    }
  }
  mlirOperationMoveBefore(r, next);
  return true;
}

/* Orders receiver b's receives from sender a as a sends them. `pos` maps a tag to its place
 * in a's sends to b (+1; 0: not sent, left for --piper-verify-plan to report). */
static bool orderDirection(Plan *plans, int64_t N, int64_t P, int64_t a, int64_t b,
                           PiperPtrMap *pos) {
  Plan *snd = &plans[a], *rcv = &plans[b];
  size_t n = 0;
  for (size_t i = 0; i < snd->nSends; ++i)
    if (planOfPeer(plans, N, P, piperGetIntAttr(snd->sends[i], "peer", -1)) == b)
      piperPtrMapPut(pos, tagKey(snd->sends[i]), (intptr_t)++n);
  if (n == 0) return true;
  /* bySend[k]: the receive of a's k-th send to b (null: b does not receive it) */
  MlirOperation *bySend = calloc(n, sizeof *bySend);
  if (!bySend) {
    mlirEmitError(mlirOperationGetLocation(rcv->fn), "piper-order-p2p: out of memory");
    return false;
  }
  for (size_t i = 0; i < rcv->nRecvs; ++i) {
    MlirOperation r = rcv->recvs[i];
    intptr_t k = 0;
    if (planOfPeer(plans, N, P, piperGetIntAttr(r, "peer", -1)) == a &&
        piperPtrMapGet(pos, tagKey(r), &k) &&
        !bySend[k - 1].ptr)
      bySend[k - 1] = r;
  }
  bool ok = true;
  MlirOperation next = {NULL}; /* the receive that must follow, as placed */
  for (size_t k = n; k-- > 0 && ok;) {
    MlirOperation r = bySend[k];
    if (!r.ptr) continue;
    if (next.ptr && mlirOperationIsBeforeInBlock(next, r))
      ok = moveBefore(r, next, a, piperGetIntAttr(r, "tag", -1));
    next = r;
  }
  free(bySend);
  return ok;
}

static MlirLogicalResult runOrderP2p(MlirOperation module, const char *arg) {
  int64_t P = piperGetIntAttr(module, "piper.roles", 0);
  int64_t N = P > 0 ? P : piperGetIntAttr(module, "piper.devices", 0);
  if (N <= 0 || N > PIPER_MAX_DEVICES) {
    piperEmitErrorf(mlirOperationGetLocation(module),
                    "piper-order-p2p: no per-device plans (piper.devices = %lld; run "
                    "--piper-extract first)", (long long)N);
    return mlirLogicalResultFailure();
  }
  Plan *plans = calloc((size_t)N, sizeof *plans);
  bool ok = plans && readPlans(module, plans, N, P);
  if (!plans) mlirEmitError(mlirOperationGetLocation(module), "piper-order-p2p: out of memory");
  /* each direction a -> b once: the receivers a's sends name, marked while a is done */
  char *seen = ok ? calloc((size_t)N, 1) : NULL;
  if (ok && !seen) {
    mlirEmitError(mlirOperationGetLocation(module), "piper-order-p2p: out of memory");
    ok = false;
  }
  for (int64_t a = 0; a < N && ok; ++a) {
    for (size_t i = 0; i < plans[a].nSends && ok; ++i) {
      int64_t b = planOfPeer(plans, N, P, piperGetIntAttr(plans[a].sends[i], "peer", -1));
      if (b < 0 || seen[b] || mlirOperationIsNull(plans[b].fn)) continue;
      seen[b] = 1;
      PiperPtrMap pos;
      piperPtrMapInit(&pos, 64);
      ok = orderDirection(plans, N, P, a, b, &pos);
      piperPtrMapFree(&pos);
    }
    for (size_t i = 0; i < plans[a].nSends; ++i) {
      int64_t b = planOfPeer(plans, N, P, piperGetIntAttr(plans[a].sends[i], "peer", -1));
      if (b >= 0) seen[b] = 0;
    }
  }
  free(seen);
  for (int64_t d = 0; plans && d < N; ++d) {
    free(plans[d].sends);
    free(plans[d].recvs);
  }
  free(plans);
  if (!ok) return mlirLogicalResultFailure();
  MlirContext ctx = mlirOperationGetContext(module);
  mlirOperationSetAttributeByName(module, piperStr("piper.p2p_order"),
                                  mlirStringAttrGet(ctx, piperStr("fifo")));
  return mlirLogicalResultSuccess();
}

MlirPass piperCreateOrderP2pPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-order-p2p", "receives in the senders' order",
                               runOrderP2p, arg);
}
