/* Op facts: one row per tdag op holding what the passes and the lowering must know of it, so
 * that they ask the table (piperOpFacts(op)->batch, ->kernel, ...) instead of keeping
 * their own lists of op names. A new op is one entry of include/piper/tdag_ops.def (its id, its
 * IRDL signature, this row and the names of its rules, declared once) plus any rule of its own
 * that it does not share: the shape
 * rule (verifyOp, dialects/tdag.c), the gradient rule (gradOp, passes/autodiff.c) and the
 * kernel call's arguments (lwLowerCompute, lowering/lower_compute.c). test/dialects/op-facts.test
 * checks that the table and the generated tdag dialect name the same ops, once each, in the same
 * order; each rule file expands the entry's rule column into a table indexed by PiperOpId, so
 * the build refuses a rule named and not written, and an entry must name a rule or NONE.
 *
 * What each fact means and who reads it:
 *   kind            what the op is in the training graph. split (STATE is never split),
 *                   autodiff (BACKWARD/UPDATE: already a training graph; STATE/IO: no
 *                   gradient rule is asked), the directive passes (UPDATE: the training graph
 *                   is there), lower-to-llvm (GRAPH ops are refused).
 *   batch, batchedResults, likeOperand0
 *                   which results carry the batch in dim 0 (piperResultIsBatched,
 *                   passes/strategy.c): split slices them into microbatches, extract gives
 *                   each data-parallel replica its rows, insert-comm marks a recv that
 *                   carries one, split-backward tells a sum of weight gradients (BW) from a
 *                   sum of activation gradients.
 *   weightGradResults, likeOperand0
 *                   which results are weight gradients (or hold them: a bucket) rather than
 *                   activations or activation gradients: split-backward puts an op whose
 *                   results all are into BW, the rest of a backward into BI; the memory plan
 *                   counts their bytes as the gradient class (peakGradients).
 *   alias           whether the op writes its operands or its result is an operand's
 *                   storage: the memory plan gives such a result its operand's buffer.
 *   declaresTensor  the op names storage the runtime owns (prt_declare_tensor): the memory
 *                   plan gives it a tensor id instead of arena bytes; nothing to compute.
 *   i32Operands, resultElem, i32Results
 *                   element types: the verifier (checkElementTypes, dialects/tdag.c) requires
 *                   them; sizes in bytes come from the tensor types (piperTensorElementBytes).
 *   kernel          the runtime kernel lower_compute.c calls for the op: an id of the kernel
 *                   list (include/piper/kernels.def), which names its CPU function (prt_<name>)
 *                   and GPU function (prt_cuda_<name>, or none yet: --target cuda then refuses
 *                   a plan holding the op) and their arguments. PRT_K_NONE where the op is
 *                   storage only (leaves, bucket, view) or is not lowered (node). The values
 *                   passed stay rules of lower_compute.c, checked against the list's
 *                   argument types when the call is built.
 *   tp              shard-tensor: whether a forward op may sit in a tensor-parallel region
 *                   and what it splits there, and how any op's results follow split operands
 *                   and which of its gradients are all-reduced (PiperTpRule): a new op joins
 *                   TP by its row.
 * Comm ops have rows of their own (PiperCommFacts, from include/piper/comm_ops.def) holding the
 * facts more than one pass asks: which are ring attention ops, and their bf16 results. Their
 * other handling is per op in insert_comm.c and lower_comm.c, and under bf16 in precision.c
 * (roundTpSums) and grad_reduce.c. */
#ifndef PIPER_OPS_H
#define PIPER_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mlir-c/IR.h"
#include "piper/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One id per tdag op, in the order of include/piper/tdag_ops.def; the table in dialects/ops.c
 * is indexed by it (row[id].id == id, which test/dialects/op-facts.test checks), and so are the
 * rule tables (verifyOp, gradOp, lwLowerCompute) each rule file expands from the same list. */
typedef enum {
#define TDAG_OP(ID, name, KIND, attributes, operands, results, ...) PIPER_TDAG_##ID,
#include "piper/tdag_ops.def"
} PiperOpId;
/* Rows in the table: one per entry (not an enumerator, which the rule switches would have to
 * name). */
enum {
  PIPER_TDAG_OP_COUNT = 0
#define TDAG_OP(ID, name, KIND, attributes, operands, results, ...) +1
#include "piper/tdag_ops.def"
};

/* What an op is in the training graph. */
typedef enum {
  PIPER_OP_STATE,    /* param, adam_state: named storage that persists across steps */
  PIPER_OP_IO,       /* input, output: a step's batch in, its reported scalars out */
  PIPER_OP_FORWARD,  /* forward compute (add also sums gradients in a backward) */
  PIPER_OP_BACKWARD, /* a gradient op, built by --piper-autodiff */
  PIPER_OP_UPDATE,   /* the optimizer update, built by --piper-autodiff */
  PIPER_OP_BUFFER,   /* bucket, pack_into, view: gradient buckets (replicate's bucket_size) */
  PIPER_OP_GRAPH,    /* node: the global DAG's grouping of ops */
} PiperOpKind;

/* Which results carry the batch in dim 0. */
typedef enum {
  PIPER_BATCH_NONE, /* none: parameters, weight gradients, buckets */
  PIPER_BATCH_ALL,  /* every result */
  PIPER_BATCH_SOME, /* result r iff bit r of batchedResults */
  PIPER_BATCH_OPERANDS, /* every result iff some operand is batched (the general ops, which
                           run on activations and constants alike); a tdag.sum_to only where
                           it keeps dim 0 (passes/strategy.c) */
} PiperBatchRule;

/* How the op's results or writes relate to its operands' storage. */
typedef enum {
  PIPER_ALIAS_NONE,                  /* fresh results; operands only read */
  PIPER_ALIAS_UPDATES_OPERANDS,      /* adamw: writes param and moments in place, no results */
  PIPER_ALIAS_RESULT_IS_OPERAND0,    /* pack_into: result #0 is operand #0, written in place */
  PIPER_ALIAS_RESULT_VIEWS_OPERAND0, /* view: result #0 is operand #0's elements from `offset` */
} PiperAliasRule;

/* What an op does under tensor parallelism (--piper-shard-tensor, passes/shard_tensor.c): one
 * behaviour each, which the pass implements once, so a new op joins TP by its row's `tp`
 * (0, NONE, for the rows that name none).
 *
 * A region is column linears -> [ops of the interior rules]* -> one row linear, each member
 * of the group of T computing 1/T of the features. A forward row's rule says whether it may
 * sit in one and what it splits there; NONE: the op is not one of a region's fused ops (an
 * exported model's general op may still sit in one where it keeps the split dim, by the
 * layout rules at the end). After the split the pass re-derives every result type from the
 * operand types, in program order, by the same rule, and all-reduces over the group the
 * gradients that a member computes only its share of (partial sums).
 *
 * Rows of no rule (NONE) keep their result types, but for two kinds the pass derives from the
 * row's other facts: a general op (PIPER_BATCH_OPERANDS, one result) shrinks the dim of its
 * result that holds its operand's split dim (its dims right-aligned, or its layout rule); the
 * .gradOp of an ELEMENTWISE row (autodiff's gradElementwise) behaves as OPERAND_GRADS. */
typedef enum {
  PIPER_TP_NONE,
  /* ---- a region's forward ops ---- */
  PIPER_TP_LINEAR,       /* x W^T [+ b] (operands x, W (N,K) [, b]): a column linear (input from
                            outside the region) keeps N/T of W's rows (and of its bias), the row
                            linear K/T of its columns and its product is partial: all-reduced
                            over the group, a bias added once after the sum. Result (...,N) with
                            N W's rows. */
  PIPER_TP_ELEMENTWISE,  /* on each member's features alone (gelu, swiglu): result like
                            operand #0 */
  PIPER_TP_PACKED_HEADS, /* `heads` heads on a packed qkv (B,T,3C) from a column linear: H/T
                            heads a member (T must divide them), the qkv weight cut by heads
                            in each third; result #0 a third of the qkv, #1 the lse (B,H/T,T) */
  PIPER_TP_GQA_HEADS,    /* q, k, v of `heads` and `kv_heads` heads: H/T and KV/T a member;
                            one kv head (multi-query) stays whole on every member and its
                            gradients are all-reduced; result #0 like q, #1 the lse */
  PIPER_TP_PER_HEAD,     /* per head of `head_dim` features (rope): the heads divide by T;
                            result like operand #0 */
  PIPER_TP_HEAD_NORM,    /* per chunk of its weight's (operand #1) size (qwen3's q/k_norm):
                            the heads divide by T; the weight stays whole on every member and
                            its gradient, each member's heads' share, is all-reduced; result #0
                            like operand #0, #1 one per chunk */
  /* ---- the other ops: how their results follow split operands ---- */
  PIPER_TP_LIKE_OPERAND0,      /* result #0 has operand #0's type (bias_add, rope_grad) */
  PIPER_TP_SUM,                /* add: LIKE_OPERAND0, and a sum of two partial input gradients
                                  (each read by it alone: autodiff summing q, k and v's) is
                                  partial: one all-reduce after the sum instead of one each */
  PIPER_TP_LINEAR_GRAD_INPUT,  /* dx(...,K) from dout and W (operand #1, (N,K)); partial, so
                                  all-reduced, where W is a column linear's split weight */
  PIPER_TP_LINEAR_GRAD_WEIGHT, /* dW (N,K) from dout(...,N) and x(...,K) */
  PIPER_TP_BIAS_GRAD,          /* db (N) from dout(...,N) */
  PIPER_TP_OPERAND_GRADS,      /* result r is the gradient of operand #1 + r, of its type (a
                                  forward's dout first); the gradient of an operand a region
                                  keeps whole on every member (a HEAD_NORM's weight, a
                                  multi-query attention's k and v) is partial: all-reduced. A
                                  `heads` (and `kv_heads`) attribute is split as its forward's,
                                  the op whose result (a saved lse) is its last operand */
  /* ---- a general op in a region: which dim of its result holds the dim of an operand the
   * split shrank, so a member computes its part from its own. Without one of these (NONE):
   * the dims right-aligned and of the same size (elementwise, broadcast, slice and concat off
   * their `dim`, sum_to). An op with a `dim` attribute never carries a split along it. ---- */
  PIPER_TP_CARRY_RESHAPE,  /* the result dim after as many elements as the split dim's prefix,
                              one T divides (a split into heads) */
  PIPER_TP_CARRY_PERMUTE,  /* where its `perm` moves the split dim */
  PIPER_TP_CARRY_LEADING,  /* a leading (batch) dim alone, not the last two (bmm) */
  PIPER_TP_CARRY_OPERAND0, /* right-aligned, from operand #0 only: the others are whole
                              constants (masked_fill's mask) */
} PiperTpRule;

/* Element type of a row's results (every result has the same). */
typedef enum {
  PIPER_ELEM_F32, /* tensor<...xf32> */
  PIPER_ELEM_I32, /* tensor<...xi32>: token ids, targets */
} PiperElemType;

typedef struct {
  PiperOpId id;              /* its index in the table */
  const char *name;          /* full op name, "tdag.linear" */
  PiperOpKind kind;          /* see PiperOpKind */
  PiperBatchRule batch;      /* which results carry the batch (unless likeOperand0) */
  uint8_t batchedResults;    /* PIPER_BATCH_SOME: bit r = result r carries the batch */
  uint8_t weightGradResults; /* bit r = result r is a weight gradient (or holds them) */
  bool likeOperand0;         /* add: a sum is what it sums; its result is batched and a weight
                                gradient exactly when its operand #0 is (overrides the two
                                above) */
  PiperAliasRule alias;      /* see PiperAliasRule */
  bool declaresTensor;       /* names storage the runtime owns (prt_declare_tensor) */
  uint8_t i32Operands;       /* bit k = operand k is an i32 tensor; the others are f32 */
  PiperElemType resultElem;  /* element type of every result (but those of i32Results) */
  uint8_t i32Results;        /* bit r = result r is an i32 tensor whatever resultElem says: the
                                MoE ops that return expert ids or counts next to f32 values */
  prt_kernel_id kernel;      /* its kernel in include/piper/kernels.def, or PRT_K_NONE */
  PiperOpId gradOp;          /* the backward op of the shared gradient rule gradElementwise
                                (passes/autodiff.c): X -> X_grad(dy, X's operands...) with
                                one gradient per operand; unused by the other rules */
  /* The bf16 mixed-precision policy (--piper-precision=bf16, passes/precision.c;
   * docs/mixed-precision.md). An activation, or an activation's gradient, is stored in bf16; what
   * stays fp32 (master weights, moments, weight gradients, norm statistics, the loss and its
   * probabilities, attention's saved softmax, the router's weights and ids) is simply not
   * named. A likeOperand0 row (add) is bf16 when what it sums is. */
  uint8_t bf16Results;       /* bit r = result r is stored as bf16 under the bf16 policy */
  uint8_t bf16RoundOperands; /* bit k = operand k is a matmul's weight: an fp32 operand is
                                rounded to bf16 values before the kernel reads it */
  bool bf16RoundTail;        /* every operand after the last one bf16RoundOperands names is
                                rounded too: the experts' variadic weights */
  prt_kernel_id bf16Kernel;  /* the kernel under the bf16 policy where it is not `kernel`: a
                                fused kernel that must round its internal intermediates (the
                                experts), or one that takes bf16 operands (BF16_IN: the
                                linears, lwPolicyKernel); PRT_K_NONE: `kernel` */
  uint8_t fp32Operands;      /* bit k = operand k is kept fp32 under the bf16 policy, so its
                                producer stores it fp32 whatever that producer's row says: the
                                MoE router's scores (a linear's output) feeding moe_topk */
  bool cast;                 /* the op converts its operand to its result's element type
                                (tdag.cast): the pass that made it chose both types, so the
                                precision pass leaves them and the verifier accepts bf16 on
                                either side */
  PiperTpRule tp;            /* its part in tensor parallelism, see PiperTpRule */
} PiperOpFacts;

/* The row of `op`, or NULL for an op that is not a tdag op. */
const PiperOpFacts *piperOpFacts(MlirOperation op);
/* True if `op` (null allowed) is the tdag op `id`. The passes and the lowering identify tdag
 * ops this way, by id, never by a "tdag.<op>" literal: one length check and one compare of its
 * name with the row's, no search of the table. (piperOpIs in piper.h, by name, is for the
 * comm, sched and func ops.) */
bool piperIsOp(MlirOperation op, PiperOpId id);
/* Creates (unowned, not inserted) the tdag op `id` from its parts: piperOpCreate (piper.h)
 * with its row's name. The passes build tdag ops this way, by id, never by a "tdag.<op>"
 * literal. */
MlirOperation piperTdagOpCreate(PiperOpId id, MlirLocation loc, intptr_t nOperands,
                                const MlirValue *operands, intptr_t nResults,
                                const MlirType *results, intptr_t nAttrs,
                                const MlirNamedAttribute *attrs);
/* The row named `name` ("tdag.linear"), or NULL. */
const PiperOpFacts *piperOpFactsByName(MlirStringRef name);
/* The whole table: *n gets its row count. */
const PiperOpFacts *piperOpFactsTable(size_t *n);

/* One id per comm op, in the order of include/piper/comm_ops.def (and of comm.irdl.mlir). */
typedef enum {
#define COMM_OP(ID, name, ...) PIPER_COMM_##ID,
#include "piper/comm_ops.def"
  PIPER_COMM_OP_COUNT
} PiperCommOpId;

/* What the passes and the lowering know of a comm op (include/piper/comm_ops.def). */
typedef struct {
  PiperCommOpId id;    /* its index in the table */
  const char *name;    /* full op name, "comm.ring_attention" */
  bool ring;           /* context parallelism's ring attention: a collective of its group that
                          completes in its call, tags `tag` and `tag` + 1, CPU fp32 buffers */
  uint8_t bf16Results; /* bit r = result r is bf16 under the bf16 policy when it reads bf16 */
} PiperCommFacts;

/* The row of `op`, or NULL for an op that is not a comm op. */
const PiperCommFacts *piperCommFacts(MlirOperation op);
/* The whole table: *n gets its row count. */
const PiperCommFacts *piperCommFactsTable(size_t *n);
/* comm.ring_attention(_grad), comm.ring_gqa_attention(_grad): the rows with `ring`. */
static inline bool piperIsRingOp(MlirOperation op) {
  const PiperCommFacts *f = piperCommFacts(op);
  return f && f->ring;
}

/* True if result `r` of an op with row `f` is stored as bf16 under the bf16 policy. */
static inline bool piperFactsBf16Result(const PiperOpFacts *f, intptr_t r) {
  return f && r >= 0 && r < 8 && ((f->bf16Results >> r) & 1);
}

/* True if operand `k` of an op with row `f` is kept fp32 under the bf16 policy. */
static inline bool piperFactsFp32Operand(const PiperOpFacts *f, intptr_t k) {
  return f && k >= 0 && k < 8 && ((f->fp32Operands >> k) & 1);
}

/* True if operand `k` of an op with row `f` is a matmul weight rounded to bf16 under the bf16
 * policy. */
static inline bool piperFactsBf16RoundOperand(const PiperOpFacts *f, intptr_t k) {
  if (!f || k < 0 || !f->bf16RoundOperands) return false;
  if (k < 8 && ((f->bf16RoundOperands >> k) & 1)) return true;
  int last = 7;
  while (!((f->bf16RoundOperands >> last) & 1)) last--;
  return f->bf16RoundTail && k > last;
}

/* True if result `r` of an op with row `f` is a weight gradient by the row alone (not through
 * likeOperand0). */
static inline bool piperFactsWeightGrad(const PiperOpFacts *f, intptr_t r) {
  return f && r >= 0 && r < 8 && ((f->weightGradResults >> r) & 1);
}

/* Bytes of one element of the ranked tensor or memref type `t` (f32, i32: 4; any int or float
 * width rounded up to whole bytes; index: 8); 0 if `t` has no such element type. Lowering
 * scales element offsets and counts by it instead of assuming 4. */
int64_t piperTensorElementBytes(MlirType t);

#ifdef __cplusplus
}
#endif
#endif
