/* --piper-shard-tensor: the `shard_tensor` directive (tensor parallelism, Megatron-LM style).
 *
 *   {"op":"shard_tensor","filter":{"PP":0,"TP":"*"},"devices":[0,1],"stream":"tp_stream"}
 *
 * Runs after place (it needs the placement) and before insert-comm and replicate.
 *
 * Device layout. The directive's `devices` is a tensor-parallel group of T devices. The ops it
 * selects must be placed (by `place`) on a device list L that the groups of the shard_tensor
 * directives cut into aligned runs of T consecutive entries: L = [g_0 ..., g_1 ..., ...], the
 * j-th run being data-parallel replica j's group. Member t of run j is at position j*T + t of
 * L. piper-sched writes device (pp p, dp r, tp t) as id (r*P + p)*T + t, which has this form.
 * The groups are recorded on the module as `piper.tp_groups` (a list of device lists); any op
 * placed on such an L (a "TP list") runs on every member with the whole batch slice of its
 * data-parallel replica j: the batch is split over the runs, not over the members
 * (piperTpSplitReplicas), so ops the filter does not select (layernorms, embeddings, head) run
 * replicated in the group. Their gradients are equal on all members by construction (every
 * activation gradient entering them is whole after the all-reduces below), so they need no
 * reduction over the group; a replicate directive reduces them over the data-parallel
 * replicas of each member (piperTpNarrowGroup).
 *
 * Splits. The selected forward ops fall into regions (connected through the values they
 * exchange). Each must have the form
 *   column linears -> [attention | gqa_attention | rmsnorm | rope | gelu | swiglu | general]*
 *     -> row linear
 * (findRegions, checkRegion; which op plays which part is its row's tp column, PiperTpRule in
 * include/piper/ops.h, so a new op joins by its row): column linears (tdag.linear or
 * tdag.matmul_nt) read a value from outside, exactly one row linear reads a value from
 * inside and is the only op whose result leaves; interior ops read only the region's values
 * (and an rmsnorm its weight). An exported model's general ops may sit between them where
 * each member computes its part from its own (checkRegionSplits, carriedDim): elementwise
 * ones (GeGLU's gelu(gate) * up), and layout ops
 * that keep the split dim whole (GPT-NeoX's per-head packed qkv: a reshape (B,T,3C) ->
 * (B,T,H,3D) moves the split to the heads, slices of a head's features leave it there); their
 * result types follow the split (retypeGeneral). A weight read through its transpose
 * (Hugging Face's Conv1D stores W (K,N): linear(x, permute(W))) splits the stored tensor the
 * other way (T_ROWS, T_COLUMNS). piper-gen's
 * regions: GPT's attention c_attn -> attention -> c_proj and MLP c_fc -> gelu -> c_proj;
 * Qwen3's attention q/k/v_proj -> q_norm, k_norm -> rope -> gqa_attention -> o_proj and MLP
 * gate/up_proj -> swiglu -> down_proj. Anything else is an error at the directive with a note
 * at the op. Then:
 *   column linear W (N,K) [, b (N)]: member t keeps N/T rows. If GPT's attention follows, the
 *     packed qkv rows are cut by heads: member t keeps rows [t*C/T, (t+1)*C/T) of each of q, k
 *     and v (C = N/3), so its local qkv is again packed [q_t | k_t | v_t] for H/T heads.
 *     Otherwise rows [t*N/T, (t+1)*N/T): the FFN dim, or for Qwen3's q_proj the query heads
 *     [t*H/T, (t+1)*H/T) and for k_proj, v_proj the kv heads [t*KV/T, (t+1)*KV/T).
 *   attention runs on H/T heads; gqa_attention on H/T query and KV/T kv heads (H and KV
 *     divisible by T): local query head j' reads local kv head floor(j'*KV/H), which is the
 *     global mapping floor(j*KV/H) restricted to the member, since t*H/T query heads map to
 *     t*KV/T kv heads. With one kv head (multi-query) every member keeps it: the k and v
 *     chains (projections, norm, rope) stay whole and replicated, and the backward's dk and
 *     dv, each member's share, are all-reduced over the group (reduceWholeOperandGrads).
 *     rmsnorm (per chunk of its weight's size D: q_norm, k_norm) and rope (per head) run on
 *     the member's heads, their chunks must not straddle members; gelu and swiglu are
 *     elementwise.
 *   row linear W (N2,K2): member t keeps columns [t*K2/T, (t+1)*K2/T): a strided slice (N2
 *     blocks of K2/T elements, K2 apart). Its product is partial: a comm.all_reduce over the
 *     group (attribute tp_reduce) on the directive's stream sums it (Megatron's g). A biased
 *     tdag.linear first becomes tdag.matmul_nt (no bias) and tdag.bias_add adds the whole,
 *     replicated bias once, after the reduction. The backward is autodiff's, unchanged: the
 *     linear's output gradient is the sum's, whole on every member.
 *   backward: a column linear's input gradient (linear_grad_input on a row-split weight) is a
 *     partial sum over the members: a comm.all_reduce over the group (Megatron's f in
 *     backward), after the adds that sum several of them (q, k, v; gate, up) so there is one
 *     per region (reducePartialInputGrads). A region's rmsnorm weight (q_norm, k_norm) stays
 *     whole on every member, but its gradient sums over the heads and each member sees its
 *     own: that gradient is all-reduced over the group too (reduceWholeOperandGrads), so the
 *     copies get the same update. Every other gradient has the shape of what it
 *     differentiates (result types are re-derived from operand types, program order).
 * Which op does what, forward and backward, is its row's tp column (PiperTpRule, ops.h): the
 * pass implements each rule once (carriedDim, retype, reducePartialInputGrads,
 * reduceWholeOperandGrads) and names no op but the parameters it splits (a tdag.param, or its
 * transpose: weightParam), their AdamW moments and the ops it builds (matmul_nt, bias_add).
 * Each split parameter and its AdamW moments get `tp_full` (the whole tensor's shape) and
 * `tp_slice = [block, stride, blocks, step]`: member t holds `blocks` blocks of `block`
 * elements of the flattened whole tensor, block i at t*step + i*stride. Extraction sets
 * `tp_offset = t*step` on the member's instance; the lowering declares the tensor with its
 * whole shape and that slice (prt_declare_tp_slice), so init, checkpoints and --dump-grads see
 * whole tensors under their single-device names.
 *
 * Errors, at the directive: a group of fewer than two devices, or one that overlaps another
 * directive's group without being equal to it; a filter that selects no op, or ops that are not
 * placed on a list the groups cut into aligned runs; values crossing between a TP list and a
 * list without that layout; heads (query or kv), a column dim or a region norm's heads not
 * divisible by T; a selected region without the column/row structure; a split parameter
 * that an unselected linear also reads (a filter naming one microbatch); an expert op a
 * shard directive gave to one device. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "passes/tp_layout.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

/* Whether the ascending device list `list` (place sorts what it places) holds `d`: a binary
 * search, since a data-parallel TP list has 2 * R entries and every directive asks it for
 * every op it selects (a linear scan made the check quadratic in R). */
static bool sortedHolds(MlirAttribute list, int64_t d) {
  if (piperDeviceListIsRange(list, NULL)) return piperListFind(list, d) >= 0;
  intptr_t lo = 0, hi = piperListLen(list) - 1;
  while (lo <= hi) {
    intptr_t mid = lo + (hi - lo) / 2;
    int64_t v = piperListAt(list, mid);
    if (v == d) return true;
    if (v < d) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/* ---- the pass ---- */

typedef struct {
  MlirOperation directive;
  MlirAttribute filter, devices, stream; /* devices: its groups, ascending once checked */
  int64_t G;                             /* group size: group_size, else all of devices */
} Directive;

/* What a parameter becomes: which slice member t holds. A linear's weight W (N,K) splits by
 * its rows (a column linear: ROWS, or ROWS_QKV by heads in each third of a packed qkv) or by
 * its columns (a row linear: COLUMNS). A weight stored transposed and read through
 * permute(W', (1, 0)) (Hugging Face's Conv1D: W' (K,N)) splits W' the other way: T_ROWS and
 * T_ROWS_QKV take columns of W', T_COLUMNS rows of it. */
typedef enum { WHOLE, ROWS, ROWS_QKV, COLUMNS, T_ROWS, T_ROWS_QKV, T_COLUMNS } SliceKind;

/* The kind a weight read through a transpose gets for a linear that splits W by `kind`. */
static SliceKind transposedKind(SliceKind kind) {
  return kind == ROWS ? T_ROWS : kind == ROWS_QKV ? T_ROWS_QKV : kind == COLUMNS ? T_COLUMNS : kind;
}

/* Whether a weight of this kind is a column linear's: its input gradient is a partial sum. */
static bool columnKind(SliceKind kind) {
  return kind == ROWS || kind == ROWS_QKV || kind == T_ROWS || kind == T_ROWS_QKV;
}

typedef struct {
  MlirContext ctx;
  MlirBlock body;
  Directive *dirs;
  size_t nDirs, capDirs;
  PiperPtrMap sliced;      /* param op -> SliceKind + 1 */
  PiperPtrMap columnOps;   /* column linear op -> 1 (an attention after it: 2) */
  PiperPtrMap rowOps;      /* row linear op -> 1: each recorded once in rows */
  MlirOperation *rows;     /* the regions' row linears (an all-reduce after each) */
  size_t nRows, capRows;
  PiperPtrMap headOps;     /* attention ops whose heads are split -> 1 (kv heads split too)
                            * or 2 (one kv head, multi-query: k and v whole on every member) */
  PiperPtrMap wholeValues; /* values a region keeps whole on every member while each member's
                            * gradient of them sums only its heads' share: a per-head norm's
                            * weight (qwen3's q_norm, k_norm), a multi-query attention's k and
                            * v. Their gradients are all-reduced over the group
                            * (reduceWholeOperandGrads). */
  PiperPtrMap oldTypes;    /* value -> its type before the split (MlirType.ptr), for the
                            * general ops' result types (retypeGeneral) */
} Sharder;

static MlirType withLast(MlirType t, int64_t last) {
  int64_t rank = piperTensorRank(t), shape[8];
  for (int64_t d = 0; d < rank && d < 8; ++d) shape[d] = piperTensorDim(t, d);
  shape[rank - 1] = last;
  return mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(t),
                                 mlirAttributeGetNull());
}

static MlirType shape2(MlirContext ctx, int64_t a, int64_t b) {
  int64_t s[2] = {a, b};
  return mlirRankedTensorTypeGet(2, s, mlirF32TypeGet(ctx), mlirAttributeGetNull());
}

static bool isForward(MlirOperation op) {
  char pass[8];
  return !strcmp(piperOpPass(op, pass, sizeof pass), "F");
}

/* The parameter op a linear reads as its weight: v's owner, or the parameter v transposes
 * (permute (1, 0) of a 2-D parameter: a weight stored (K,N)); *transposed says which. Null
 * for anything else. */
static MlirOperation weightParam(MlirValue v, bool *transposed) {
  *transposed = false;
  if (!mlirValueIsAOpResult(v)) return (MlirOperation){NULL};
  MlirOperation op = mlirOpResultGetOwner(v);
  if (piperIsOp(op, PIPER_TDAG_PARAM)) return op;
  int64_t perm[2];
  if (!piperIsOp(op, PIPER_TDAG_PERMUTE) || piperTensorRank(mlirValueGetType(v)) != 2 ||
      !piperPermuteOf(op, 2, perm) || perm[0] != 1)
    return (MlirOperation){NULL};
  MlirValue w = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(w) || !piperIsOp(mlirOpResultGetOwner(w), PIPER_TDAG_PARAM))
    return (MlirOperation){NULL};
  *transposed = true;
  return mlirOpResultGetOwner(w);
}

/* Records the slice of param `p` (kind) with its whole type, or reports a conflict. */
static bool markParam(Sharder *s, MlirValue p, SliceKind kind, MlirOperation directive) {
  bool transposed;
  MlirOperation viaT = weightParam(p, &transposed);
  if (transposed) {
    p = mlirOperationGetResult(viaT, 0);
    kind = transposedKind(kind);
  }
  if (!mlirValueIsAOpResult(p) || !piperIsOp(mlirOpResultGetOwner(p), PIPER_TDAG_PARAM)) {
    piperDirectiveError(directive, "shard_tensor: a split linear's weight or bias must be a "
                                   "tdag.param (or a weight's transpose)");
    return false;
  }
  MlirOperation param = mlirOpResultGetOwner(p);
  intptr_t have;
  if (piperPtrMapGet(&s->sliced, param.ptr, &have) && have != (intptr_t)kind + 1) {
    piperDirectiveError(directive, "shard_tensor: a parameter is split two different ways "
                                   "(it feeds a column-parallel and a row-parallel linear)");
    piperEmitNotef(mlirOperationGetLocation(param), "shard_tensor: this parameter");
    return false;
  }
  piperPtrMapPut(&s->sliced, param.ptr, (intptr_t)kind + 1);
  return true;
}

static void errorAtOp(MlirOperation directive, MlirOperation op, const char *what) {
  char label[160];
  piperNodeLabel(op, label, sizeof label);
  piperDirectiveError(directive,
                      "shard_tensor: the filter selects a region without column/row structure "
                      "(%s); it must select regions column linears -> [attention | gqa_attention "
                      "| rmsnorm | rope | gelu | swiglu | general ops each member computes from "
                      "its part]* -> one row linear, such as piper-gen's TP-tagged attention "
                      "and MLP blocks",
                      what);
  piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this op of node %s", label);
}

/* The op's rule: its row's tp column (include/piper/tdag_ops.def), and OPERAND_GRADS for the
 * gradient op of an ELEMENTWISE row (its .gradOp: autodiff's gradElementwise), as ops.h says. */
static PiperTpRule tpRule(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return PIPER_TP_NONE;
  if (f->tp != PIPER_TP_NONE || f->kind != PIPER_OP_BACKWARD) return f->tp;
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);
  for (size_t i = 0; i < nRows; ++i)
    if (rows[i].tp == PIPER_TP_ELEMENTWISE && rows[i].gradOp == f->id)
      return PIPER_TP_OPERAND_GRADS;
  return PIPER_TP_NONE;
}

/* The ops a region may hold between its column and row linears: each works on the split last
 * dim independently per member (elementwise, or per head once the heads divide). */
static bool interiorOp(MlirOperation op) {
  switch (tpRule(op)) {
  case PIPER_TP_ELEMENTWISE:
  case PIPER_TP_PACKED_HEADS:
  case PIPER_TP_GQA_HEADS:
  case PIPER_TP_PER_HEAD:
  case PIPER_TP_HEAD_NORM: return true;
  default: return false; /* a linear, or not an op of a region */
  }
}

static bool isLinear(MlirOperation op) { return tpRule(op) == PIPER_TP_LINEAR; }

/* An exported model's general op (python/piper), which runs on activations and parameters
 * alike (PIPER_BATCH_OPERANDS). */
static bool isGeneral(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return f && f->batch == PIPER_BATCH_OPERANDS && f->kind == PIPER_OP_FORWARD &&
         mlirOperationGetNumResults(op) == 1;
}

/* A general op of parameters alone whose result only linears read as a weight: the transpose
 * of a weight stored (K,N) (Conv1D). Not an activation: markParam splits what it reads. */
static bool isWeightView(MlirOperation op) {
  if (!isGeneral(op) || mlirOperationGetNumOperands(op) != 1) return false;
  bool transposed;
  MlirOperation w = weightParam(mlirOperationGetResult(op, 0), &transposed);
  if (mlirOperationIsNull(w) || !transposed) return false;
  for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, 0));
       !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    if (isForward(mlirOpOperandGetOwner(u)) &&
        (!isLinear(mlirOpOperandGetOwner(u)) || mlirOpOperandGetOperandNumber(u) != 1))
      return false;
  return true;
}

/* ---- general ops between a region's linears ---- */

/* The dim of general op `op`'s result that holds operand k's dim `sd`, the dim a member holds
 * 1/T of (whole shapes `in` and `out`), so a member computes its result from its part alone;
 * -1 where the op moves data across that dim (a reshape mixing it with others, a slice,
 * concat, softmax or reduction along it, a broadcast of it). */
static int64_t carriedDim(MlirOperation op, intptr_t k, int64_t sd, MlirType in, MlirType out,
                          int64_t T) {
  const PiperOpFacts *f = piperOpFacts(op);
  int64_t ri = piperTensorRank(in), ro = piperTensorRank(out);
  if (!f || sd < 0 || sd >= ri) return -1;
  bool hasDim = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("dim")));
  if (hasDim && piperGetIntAttr(op, "dim", -1) == sd) return -1;
  switch (f->tp) { /* the general ops' rules (PiperTpRule) */
  case PIPER_TP_CARRY_RESHAPE: { /* the result dim after as many elements as sd's prefix */
    int64_t prefix = 1, seen = 1;
    for (int64_t i = 0; i < sd; ++i) prefix *= piperTensorDim(in, i);
    for (int64_t d = 0; d < ro; seen *= piperTensorDim(out, d), ++d)
      if (seen == prefix && piperTensorDim(out, d) > 1 && piperTensorDim(out, d) % T == 0)
        return d;
    return -1;
  }
  case PIPER_TP_CARRY_PERMUTE: {
    int64_t perm[PIPER_MAX_RANK];
    if (!piperPermuteOf(op, ri, perm)) return -1;
    for (int64_t d = 0; d < ro; ++d)
      if (perm[d] == sd) return d;
    return -1;
  }
  case PIPER_TP_CARRY_LEADING: return sd < ri - 2 ? sd : -1;
  case PIPER_TP_CARRY_OPERAND0: if (k != 0) return -1; /* the others are whole constants */
  /* fallthrough */
  default: { /* elementwise, broadcast, slice and concat off their dim, sum_to: dims
              * right-aligned */
    int64_t d = sd + (ro - ri);
    return d >= 0 && piperTensorDim(out, d) == piperTensorDim(in, sd) ? d : -1;
  }
  }
}

/* The split dim of region value v (+1 in dims), or -1 when v is not split. */
static int64_t splitOf(PiperPtrMap *dims, MlirValue v) {
  intptr_t d;
  return piperPtrMapGet(dims, v.ptr, &d) ? (int64_t)d - 1 : -1;
}

/* Position of op in the block (program order), for reporting the first offender. */
static intptr_t posOf(PiperPtrMap *pos, MlirOperation op) {
  intptr_t p = 0;
  piperPtrMapGet(pos, op.ptr, &p);
  return p;
}

/* One region of a directive: its ops in program order, the region ids of the directive's
 * selected ops, and its row linear once found. */
typedef struct {
  MlirOperation *ops; /* (n) in program order */
  size_t n;
  PiperPtrMap *ids;   /* selected op -> region id */
  intptr_t id;        /* this region's id */
  MlirOperation row;  /* the row linear, null until checkRegionOps finds it */
} Region;

static bool opInRegion(const Region *r, MlirOperation op) {
  intptr_t got;
  return piperPtrMapGet(r->ids, op.ptr, &got) && got == r->id;
}

static bool valueInRegion(const Region *r, MlirValue v) {
  return mlirValueIsAOpResult(v) && opInRegion(r, mlirOpResultGetOwner(v));
}

/* ops: linears (column: input from outside; row: input from inside, exactly one) and
 * interior ops; sets r->row. */
static bool checkRegionOps(Directive *d, Region *r) {
  for (size_t i = 0; i < r->n; ++i) {
    MlirOperation o = r->ops[i];
    if (isLinear(o)) {
      if (!valueInRegion(r, mlirOperationGetOperand(o, 0))) continue; /* a column linear */
      if (r->row.ptr) {
        errorAtOp(d->directive, o, "a region with two row linears");
        return false;
      }
      r->row = o;
    } else if (!interiorOp(o) && !isGeneral(o)) {
      errorAtOp(d->directive, o, "an op outside every column -> row chain");
      return false;
    }
  }
  if (!r->row.ptr) {
    errorAtOp(d->directive, r->ops[0], "a column linear whose chain has no row linear");
    return false;
  }
  return true;
}

/* values: from outside only into column linears (and parameters: weights, norm weights);
 * out only from the row linear */
static bool checkRegionEdges(Directive *d, const Region *r) {
  for (size_t i = 0; i < r->n; ++i) {
    MlirOperation o = r->ops[i];
    bool column = isLinear(o) && o.ptr != r->row.ptr;
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(o); ++a) {
      MlirValue v = mlirOperationGetOperand(o, a);
      if (valueInRegion(r, v)) continue;
      bool param =
          mlirValueIsAOpResult(v) && piperIsOp(mlirOpResultGetOwner(v), PIPER_TDAG_PARAM);
      if ((column && a == 0) || (a > 0 && isLinear(o)) || /* weights: markParam checks */
          (a == 1 && param && tpRule(o) == PIPER_TP_HEAD_NORM) || (param && isWeightView(o)))
        continue;
      errorAtOp(d->directive, o, "an op inside the region reads a value from outside it; only "
                                 "its column linears may");
      return false;
    }
    for (intptr_t k = 0; k < mlirOperationGetNumResults(o); ++k)
      for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(o, k));
           !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
        MlirOperation user = mlirOpOperandGetOwner(u);
        if (!isForward(user)) continue;
        bool inside = opInRegion(r, user);
        if (inside == (o.ptr != r->row.ptr)) continue;
        errorAtOp(d->directive, o, inside ? "the row linear's output is read inside the region"
                                          : "a value leaving the region other than the row "
                                            "linear's output");
        return false;
      }
  }
  return true;
}

/* Whether the group of T devices divides what op `o` of the region splits: an attention's
 * heads, a per-head op's heads, a column linear's output features. */
static bool opDivides(Directive *d, const Region *r, MlirOperation o, int64_t T) {
  const PiperOpFacts *f = piperOpFacts(o);
  const char *name = f->name + strlen("tdag.");
  int64_t N = piperTensorDim(mlirValueGetType(mlirOperationGetOperand(o, 0)), -1);
  if (f->tp == PIPER_TP_PACKED_HEADS) {
    MlirValue qkv = mlirOperationGetOperand(o, 0);
    MlirOperation from = mlirOpResultGetOwner(qkv);
    if (!isLinear(from) || from.ptr == r->row.ptr) {
      char what[96];
      snprintf(what, sizeof what, "an %s whose packed qkv is not a column linear's output",
               name);
      errorAtOp(d->directive, o, what);
      return false;
    }
    int64_t H = piperGetIntAttr(o, "heads", 1);
    if (H % T) {
      piperDirectiveError(d->directive, "shard_tensor: %s has %lld heads, which the group of "
                                        "%lld devices does not divide; use a group size "
                                        "that divides the heads",
                          name, (long long)H, (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this attention");
      return false;
    }
  } else if (f->tp == PIPER_TP_GQA_HEADS) {
    int64_t H = piperGetIntAttr(o, "heads", 1), KV = piperGetIntAttr(o, "kv_heads", 1);
    if (H % T || (KV % T && KV != 1)) {
      piperDirectiveError(d->directive,
                          H % T ? "shard_tensor: %s has %lld query heads, which the group of "
                                  "%lld devices does not divide"
                                : "shard_tensor: %s has %lld key/value heads, which the group "
                                  "of %lld devices does not divide (member m must hold kv "
                                  "heads [m*KV/T, (m+1)*KV/T) for its query heads; one kv head "
                                  "is held whole by every member); use a group size that "
                                  "divides the kv heads",
                          name, (long long)(H % T ? H : KV), (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this attention");
      return false;
    }
  } else if (f->tp == PIPER_TP_PER_HEAD || f->tp == PIPER_TP_HEAD_NORM) {
    int64_t D = f->tp == PIPER_TP_PER_HEAD
                    ? piperGetIntAttr(o, "head_dim", 1)
                    : piperTensorDim(mlirValueGetType(mlirOperationGetOperand(o, 1)), 0);
    if (D <= 0 || N % D || (N / D) % T) {
      piperDirectiveError(d->directive, "shard_tensor: %s%s works on %lld heads of %lld "
                                        "features, which the group of %lld devices does not "
                                        "divide",
                          f->tp == PIPER_TP_HEAD_NORM ? "a per-head " : "", name,
                          (long long)(D > 0 ? N / D : 0), (long long)D, (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this op");
      return false;
    }
  } else if (isLinear(o) && o.ptr != r->row.ptr) {
    int64_t out = piperTensorDim(mlirValueGetType(mlirOperationGetResult(o, 0)), -1);
    if (out % T) {
      piperDirectiveError(d->directive, "shard_tensor: a column-parallel linear has %lld "
                                        "output features (the FFN dim), which the group of "
                                        "%lld devices does not divide",
                          (long long)out, (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this linear");
      return false;
    }
  }
  /* the row linear's input dim is the columns' split dim, so it divides too */
  return true;
}

/* Whether gqa_attention `o` has one kv head shared by every member (multi-query). */
static bool sharedKv(MlirOperation o, int64_t T) {
  return tpRule(o) == PIPER_TP_GQA_HEADS && piperGetIntAttr(o, "kv_heads", 1) == 1 && T > 1;
}

/* The ops of the region that compute a multi-query attention's k and v (up from its operands
 * 1 and 2 through the region's ops to the column linears): whole on every member, into rep. */
static void sharedKvChains(const Region *r, int64_t T, PiperPtrMap *rep) {
  for (size_t i = 0; i < r->n; ++i) {
    if (!sharedKv(r->ops[i], T)) continue;
    for (intptr_t a = 1; a <= 2; ++a) {
      MlirValue v = mlirOperationGetOperand(r->ops[i], a);
      while (valueInRegion(r, v)) {
        MlirOperation from = mlirOpResultGetOwner(v);
        piperPtrMapPut(rep, from.ptr, 1);
        if (isLinear(from)) break;
        v = mlirOperationGetOperand(from, 0);
      }
    }
  }
}

/* The split dims through the region, in program order: a column linear's output is split on
 * its last dim; the fused ops take and give it there; a general op carries it to the dim of
 * its result carriedDim finds (a reshape of (B,T,3C) to GPT-NeoX's per-head (B,T,H,3D) to
 * the heads), or is refused: a member could not compute its part from its own. */
static bool checkRegionSplits(Directive *d, const Region *r, int64_t T, PiperPtrMap *rep) {
  PiperPtrMap dims;
  piperPtrMapInit(&dims, 2 * r->n + 8);
  bool ok = true;
  for (size_t i = 0; ok && i < r->n; ++i) {
    MlirOperation o = r->ops[i];
    if (isWeightView(o)) continue;
    if (piperPtrMapGet(rep, o.ptr, NULL)) { /* a multi-query k or v: whole, not split */
      for (intptr_t k = 0; k < mlirOperationGetNumResults(o); ++k)
        piperPtrMapPut(&dims, mlirOperationGetResult(o, k).ptr, 0);
      continue;
    }
    MlirValue out = mlirOperationGetResult(o, 0);
    int64_t last = piperTensorRank(mlirValueGetType(out)) - 1, at = -2;
    if (isLinear(o) && o.ptr != r->row.ptr) {
      at = last;
    } else if (isGeneral(o)) {
      for (intptr_t a = 0; ok && a < mlirOperationGetNumOperands(o); ++a) {
        MlirValue x = mlirOperationGetOperand(o, a);
        int64_t here = carriedDim(o, a, splitOf(&dims, x), mlirValueGetType(x),
                                  mlirValueGetType(out), T);
        ok = here >= 0 && (at == -2 || at == here);
        at = here;
      }
      if (!ok) {
        errorAtOp(d->directive, o, "a general op that moves the split features across the "
                                   "members: it must keep the dim a column linear splits (a "
                                   "reshape may split it into heads, a slice or concat may work "
                                   "on other dims)");
        break;
      }
    } else {
      int64_t need = piperTensorRank(mlirValueGetType(mlirOperationGetOperand(o, 0))) - 1;
      if (splitOf(&dims, mlirOperationGetOperand(o, 0)) != need) {
        errorAtOp(d->directive, o, "an op that needs its input split on the last dim reads one "
                                   "split on another (through a general op's reshape)");
        ok = false;
        break;
      }
      at = last;
    }
    if (o.ptr != r->row.ptr) piperPtrMapPut(&dims, out.ptr, at + 1);
  }
  piperPtrMapFree(&dims);
  return ok;
}

/* divisibility: the attentions' heads first (the most telling), then the other ops */
static bool checkRegionDivides(Directive *d, const Region *r, int64_t T, PiperPtrMap *rep) {
  for (size_t j = 0; j < 2 * r->n; ++j) {
    MlirOperation o = r->ops[j % r->n];
    if (piperPtrMapGet(rep, o.ptr, NULL)) continue; /* whole on every member */
    PiperTpRule tp = tpRule(o);
    bool attention = tp == PIPER_TP_PACKED_HEADS || tp == PIPER_TP_GQA_HEADS;
    if ((j < r->n) != attention) continue;
    if (!opDivides(d, r, o, T)) return false;
  }
  return true;
}

/* record: parameters to split, column ops, the row, heads to split, whole values with partial
 * gradients */
static bool recordRegion(Sharder *s, Directive *d, const Region *r, int64_t T,
                         PiperPtrMap *rep) {
  MlirOperation row = r->row;
  for (size_t i = 0; i < r->n; ++i) {
    MlirOperation o = r->ops[i];
    if (piperPtrMapGet(rep, o.ptr, NULL)) continue; /* whole on every member */
    PiperTpRule tp = tpRule(o);
    if (tp == PIPER_TP_HEAD_NORM) { /* its weight: whole on every member */
      piperPtrMapPut(&s->wholeValues, mlirOperationGetOperand(o, 1).ptr, 1);
      continue;
    }
    if (tp == PIPER_TP_PACKED_HEADS || tp == PIPER_TP_GQA_HEADS) {
      bool shared = sharedKv(o, T);
      piperPtrMapPut(&s->headOps, o.ptr, shared ? 2 : 1);
      for (intptr_t a = 1; shared && a <= 2; ++a) /* k and v: whole on every member */
        piperPtrMapPut(&s->wholeValues, mlirOperationGetOperand(o, a).ptr, 1);
      continue;
    }
    if (!isLinear(o)) continue;
    if (o.ptr == row.ptr) {
      if (!markParam(s, mlirOperationGetOperand(o, 1), COLUMNS, d->directive)) return false;
      continue;
    }
    bool attention = false; /* GPT's packed qkv: cut by heads in each third */
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(o, 0));
         !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
      attention |= tpRule(mlirOpOperandGetOwner(u)) == PIPER_TP_PACKED_HEADS;
    for (intptr_t a = 1; a < mlirOperationGetNumOperands(o); ++a)
      if (!markParam(s, mlirOperationGetOperand(o, a), attention ? ROWS_QKV : ROWS,
                     d->directive))
        return false;
    if (!piperPtrMapGet(&s->columnOps, o.ptr, NULL))
      piperPtrMapPut(&s->columnOps, o.ptr, attention ? 2 : 1);
  }
  if (!piperPtrMapGet(&s->rowOps, row.ptr, NULL)) { /* not another directive's */
    piperPtrMapPut(&s->rowOps, row.ptr, 1);
    if (!piperGrow((void **)&s->rows, &s->capRows, s->nRows + 1, sizeof *s->rows)) {
      piperDirectiveError(d->directive, "shard_tensor: out of memory");
      return false;
    }
    s->rows[s->nRows++] = row;
  }
  return true;
}


/* Checks one region (ops `ops`, n of them, in program order, all of region id `id` in
 * `ids`) of directive d, then records its splits (see the file comment). */
static bool checkRegion(Sharder *s, Directive *d, MlirOperation *ops, size_t n,
                        PiperPtrMap *ids, intptr_t id, int64_t T) {
  Region r = {.ops = ops, .n = n, .ids = ids, .id = id};
  PiperPtrMap rep; /* a multi-query attention's k and v chains: whole on every member */
  piperPtrMapInit(&rep, 16);
  bool ok = checkRegionOps(d, &r) && checkRegionEdges(d, &r);
  if (ok) sharedKvChains(&r, T, &rep);
  ok = ok && checkRegionDivides(d, &r, T, &rep) && checkRegionSplits(d, &r, T, &rep) &&
       recordRegion(s, d, &r, T, &rep);
  piperPtrMapFree(&rep);
  return ok;
}

static PiperPtrMap *sortPos; /* program positions for byPosition (qsort has no context) */

static int byPosition(const void *a, const void *b) {
  intptr_t pa = posOf(sortPos, *(const MlirOperation *)a);
  intptr_t pb = posOf(sortPos, *(const MlirOperation *)b);
  return (pa > pb) - (pa < pb);
}

/* Finds the regions among the selected forward ops of directive `di` (connected through the
 * values they exchange), checks each and records its splits. */
static bool findRegions(Sharder *s, size_t di, int64_t T) {
  Directive *d = &s->dirs[di];
  PiperPtrMap sel, pos, region;
  piperPtrMapInit(&sel, 256);
  piperPtrMapInit(&pos, 1024);
  piperPtrMapInit(&region, 256);
  size_t nSel = 0;
  intptr_t p = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    piperPtrMapPut(&pos, op.ptr, p++);
    if (piperOpInDialect(op, "tdag") && isForward(op) && piperFilterMatches(op, d->filter) &&
        piperOpFacts(op) && piperOpFacts(op)->kind == PIPER_OP_FORWARD) {
      piperPtrMapPut(&sel, op.ptr, 1);
      nSel++;
    }
  }
  MlirOperation *list = NULL;
  size_t cap = 0;
  intptr_t id = 0;
  bool ok = true;
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); ok && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperPtrMapGet(&sel, op.ptr, NULL) || piperPtrMapGet(&region, op.ptr, NULL)) continue;
    /* a new region: every selected op connected to op through values */
    ++id;
    size_t n = 0;
    if (!piperGrow((void **)&list, &cap, 1, sizeof *list)) {
      ok = false;
      break;
    }
    list[n++] = op;
    piperPtrMapPut(&region, op.ptr, id);
    for (size_t i = 0; ok && i < n; ++i) {
      MlirOperation o = list[i];
      for (intptr_t a = 0; ok && a < mlirOperationGetNumOperands(o); ++a) {
        MlirValue v = mlirOperationGetOperand(o, a);
        if (!mlirValueIsAOpResult(v)) continue;
        MlirOperation from = mlirOpResultGetOwner(v);
        if (!piperPtrMapGet(&sel, from.ptr, NULL) || piperPtrMapGet(&region, from.ptr, NULL))
          continue;
        if (!(ok = piperGrow((void **)&list, &cap, n + 1, sizeof *list))) break;
        list[n++] = from;
        piperPtrMapPut(&region, from.ptr, id);
      }
      for (intptr_t k = 0; ok && k < mlirOperationGetNumResults(o); ++k)
        for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(o, k));
             ok && !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
          MlirOperation user = mlirOpOperandGetOwner(u);
          if (!piperPtrMapGet(&sel, user.ptr, NULL) || piperPtrMapGet(&region, user.ptr, NULL))
            continue;
          if (!(ok = piperGrow((void **)&list, &cap, n + 1, sizeof *list))) break;
          list[n++] = user;
          piperPtrMapPut(&region, user.ptr, id);
        }
    }
    if (!ok) {
      piperDirectiveError(d->directive, "shard_tensor: out of memory");
      break;
    }
    sortPos = &pos;
    qsort(list, n, sizeof *list, byPosition);
    sortPos = NULL;
    ok = checkRegion(s, d, list, n, &region, id, T);
  }
  if (ok && !nSel) {
    piperDirectiveError(d->directive, "shard_tensor: the filter selects no forward op to split");
    ok = false;
  }
  free(list);
  piperPtrMapFree(&sel);
  piperPtrMapFree(&pos);
  piperPtrMapFree(&region);
  return ok;
}

/* tp_full and tp_slice on a split parameter or moment of whole type `whole`. */
static void setSliceAttrs(MlirContext ctx, MlirOperation op, MlirType whole, SliceKind kind,
                          int64_t T) {
  int64_t rank = piperTensorRank(whole), n = piperTensorNumel(whole);
  MlirAttribute dims[2];
  for (int64_t i = 0; i < rank && i < 2; ++i) dims[i] = piperI64Attr(ctx, piperTensorDim(whole, i));
  int64_t rows = piperTensorDim(whole, 0), inner = n / rows; /* elements a row */
  int64_t block, stride, blocks, step;
  if (kind == ROWS_QKV) { /* 3 blocks: q, k, v rows of this member */
    block = rows / 3 / T * inner, stride = rows / 3 * inner, blocks = 3, step = block;
  } else if (kind == ROWS || kind == T_COLUMNS) {
    block = rows / T * inner, stride = n, blocks = 1, step = block;
  } else if (kind == T_ROWS_QKV) { /* every row's q, k, v columns of this member */
    int64_t third = piperTensorDim(whole, 1) / 3;
    block = third / T, stride = third, blocks = 3 * rows, step = block;
  } else { /* COLUMNS, T_ROWS: every row's K/T columns */
    int64_t K = piperTensorDim(whole, 1);
    block = K / T, stride = K, blocks = rows, step = block;
  }
  MlirAttribute s[4] = {piperI64Attr(ctx, block), piperI64Attr(ctx, stride), piperI64Attr(ctx, blocks),
                        piperI64Attr(ctx, step)};
  mlirOperationSetAttributeByName(op, piperStr("tp_full"), mlirArrayAttrGet(ctx, rank, dims));
  mlirOperationSetAttributeByName(op, piperStr("tp_slice"), mlirArrayAttrGet(ctx, 4, s));
}

/* Member t's type of a split parameter of type `whole`. */
static MlirType localType(MlirContext ctx, MlirType whole, SliceKind kind, int64_t T) {
  if (kind == COLUMNS || kind == T_ROWS || kind == T_ROWS_QKV)
    return shape2(ctx, piperTensorDim(whole, 0), piperTensorDim(whole, 1) / T);
  if (piperTensorRank(whole) == 1)
    return mlirRankedTensorTypeGet(1, (int64_t[]){piperTensorDim(whole, 0) / T},
                                   mlirF32TypeGet(ctx), mlirAttributeGetNull());
  return shape2(ctx, piperTensorDim(whole, 0) / T, piperTensorDim(whole, 1));
}

/* A comm.all_reduce over the TP list `devices` (tp_reduce: within each group) of `v`, right
 * after `after`, tagged like `like`; every other use of v reads its result. */
static MlirOperation allReduceAfter(Sharder *s, MlirOperation after, MlirValue v,
                                    MlirAttribute devices, MlirAttribute stream) {
  MlirContext ctx = s->ctx;
  MlirType types[2] = {mlirValueGetType(v), mlirTypeParseGet(ctx, piperStr("!comm.token"))};
  MlirNamedAttribute attrs[4] = {piperNamedAttr(ctx, "group", devices),
                                 piperNamedAttr(ctx, "devices", devices),
                                 piperNamedAttr(ctx, "tp_reduce", mlirUnitAttrGet(ctx)),
                                 piperNamedAttr(ctx, "stream", stream)};
  MlirOperation ar = piperOpCreate("comm.all_reduce", mlirOperationGetLocation(after), 1, &v, 2,
                                   types, mlirAttributeIsNull(stream) ? 3 : 4, attrs);
  mlirBlockInsertOwnedOperationAfter(s->body, after, ar);
  static const char *copied[] = {"tags", "pass"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(after, piperStr(copied[i]));
    if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(ar, piperStr(copied[i]), a);
  }
  mlirValueReplaceAllUsesExcept(v, mlirOperationGetResult(ar, 0), 1, &ar);
  return ar;
}

/* The row linear y = x W^T + b becomes matmul_nt(x, W) (its partial product); returns it. */
static MlirOperation withoutBias(Sharder *s, MlirOperation row) {
  MlirValue ops[2] = {mlirOperationGetOperand(row, 0), mlirOperationGetOperand(row, 1)};
  MlirType t = mlirValueGetType(mlirOperationGetResult(row, 0));
  MlirOperation mm = piperTdagOpCreate(PIPER_TDAG_MATMUL_NT, mlirOperationGetLocation(row), 2,
                                       ops, 1, &t, 0, NULL);
  piperCopyPlacement(mm, row);
  mlirBlockInsertOwnedOperationBefore(s->body, row, mm);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(row, 0), mlirOperationGetResult(mm, 0));
  return mm;
}

static MlirType operandT(MlirOperation op, intptr_t i) {
  return mlirValueGetType(mlirOperationGetOperand(op, i));
}

/* An attention forward's lse (B, H, T) with H heads */
static MlirType lseOfHeads(Sharder *s, MlirOperation op, int64_t H) {
  MlirType l = mlirValueGetType(mlirOperationGetResult(op, 1));
  int64_t sh[3] = {piperTensorDim(l, 0), H, piperTensorDim(l, 2)};
  return mlirRankedTensorTypeGet(3, sh, mlirF32TypeGet(s->ctx), mlirAttributeGetNull());
}

/* A general op's result type after the split: the first operand whose type the split changed
 * (against s->oldTypes) names the dim it shrank; the result's dim carrying it (carriedDim)
 * shrinks alike. Forward ops of a region were checked to carry it (checkRegionSplits); their
 * gradients (reshape, permute, slice_grad, slices of a concat's, products) carry it back. */
static void retypeGeneral(Sharder *s, MlirOperation op) {
  MlirValue r0 = mlirOperationGetResult(op, 0);
  intptr_t oldOut;
  if (!piperPtrMapGet(&s->oldTypes, r0.ptr, &oldOut)) return;
  MlirType out = {(const void *)oldOut};
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
    MlirValue x = mlirOperationGetOperand(op, k);
    intptr_t was;
    if (!piperPtrMapGet(&s->oldTypes, x.ptr, &was) || mlirTypeEqual((MlirType){(const void *)was},
                                                                    mlirValueGetType(x)))
      continue;
    MlirType in = {(const void *)was}, now = mlirValueGetType(x);
    int64_t sd = -1, rank = piperTensorRank(in);
    for (int64_t i = 0; i < rank && sd < 0; ++i)
      if (piperTensorDim(in, i) != piperTensorDim(now, i)) sd = i;
    int64_t parts = sd < 0 ? 1 : piperTensorDim(in, sd) / piperTensorDim(now, sd);
    int64_t d = carriedDim(op, k, sd, in, out, parts);
    if (d < 0) return;
    int64_t ro = piperTensorRank(out), shape[PIPER_MAX_RANK];
    for (int64_t i = 0; i < ro && i < PIPER_MAX_RANK; ++i) shape[i] = piperTensorDim(out, i);
    shape[d] /= parts;
    mlirValueSetType(r0, mlirRankedTensorTypeGet(ro, shape, mlirShapedTypeGetElementType(out),
                                                 mlirAttributeGetNull()));
    return;
  }
}

/* Divides the heads of `op`, an attention or its gradient, where the region split its forward
 * `fwd`: `heads` by T, and `kv_heads` (where it has them) too unless one kv head stays whole on
 * every member (headOps 2); tp_heads_split records T. Returns the member's heads, or 0 where
 * nothing is split. */
static int64_t splitHeads(Sharder *s, MlirOperation op, MlirOperation fwd, int64_t T) {
  intptr_t how;
  if (mlirOperationIsNull(fwd) || !piperPtrMapGet(&s->headOps, fwd.ptr, &how) ||
      piperGetIntAttr(op, "tp_heads_split", 0))
    return 0;
  int64_t H = piperGetIntAttr(op, "heads", 1) / T;
  mlirOperationSetAttributeByName(op, piperStr("heads"), piperI64Attr(s->ctx, H));
  if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("kv_heads")))) {
    int64_t KV = piperGetIntAttr(op, "kv_heads", 1);
    if (how == 1) KV /= T;
    mlirOperationSetAttributeByName(op, piperStr("kv_heads"), piperI64Attr(s->ctx, KV));
  }
  mlirOperationSetAttributeByName(op, piperStr("tp_heads_split"), piperI64Attr(s->ctx, T));
  return H;
}

/* The forward of an OPERAND_GRADS op: the producer of its last operand (a result the forward
 * saved for it, as the attentions' lse), or null. */
static MlirOperation forwardOf(MlirOperation op) {
  intptr_t n = mlirOperationGetNumOperands(op);
  MlirValue saved = n ? mlirOperationGetOperand(op, n - 1) : (MlirValue){NULL};
  return saved.ptr && mlirValueIsAOpResult(saved) ? mlirOpResultGetOwner(saved)
                                                  : (MlirOperation){NULL};
}

/* Re-derives the result types of every op from its operands' by its rule (PiperTpRule), in
 * program order so that a changed type flows down, and the heads of split attentions. */
static void retype(Sharder *s, int64_t T) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    const PiperOpFacts *f = piperOpFacts(op);
    if (!f || !mlirOperationGetNumResults(op)) continue;
    MlirValue r0 = mlirOperationGetResult(op, 0);
    switch (tpRule(op)) {
    case PIPER_TP_LINEAR:
      mlirValueSetType(r0, withLast(operandT(op, 0), piperTensorDim(operandT(op, 1), 0)));
      break;
    case PIPER_TP_LINEAR_GRAD_INPUT:
      mlirValueSetType(r0, withLast(operandT(op, 0), piperTensorDim(operandT(op, 1), 1)));
      break;
    case PIPER_TP_LINEAR_GRAD_WEIGHT:
      mlirValueSetType(r0, shape2(s->ctx, piperTensorDim(operandT(op, 0), -1),
                                  piperTensorDim(operandT(op, 1), -1)));
      break;
    case PIPER_TP_BIAS_GRAD:
      mlirValueSetType(r0, mlirRankedTensorTypeGet(
                               1, (int64_t[]){piperTensorDim(operandT(op, 0), -1)},
                               mlirF32TypeGet(s->ctx), mlirAttributeGetNull()));
      break;
    case PIPER_TP_PACKED_HEADS:
    case PIPER_TP_GQA_HEADS: {
      int64_t H = splitHeads(s, op, op, T);
      if (!H) break;
      MlirType q = operandT(op, 0); /* a packed qkv: its first third */
      if (f->tp == PIPER_TP_PACKED_HEADS) q = withLast(q, piperTensorDim(q, -1) / 3);
      mlirValueSetType(r0, q);
      mlirValueSetType(mlirOperationGetResult(op, 1), lseOfHeads(s, op, H));
      break;
    }
    case PIPER_TP_HEAD_NORM: /* y like x, rstd one per chunk of the weight's size */
      mlirValueSetType(r0, operandT(op, 0));
      mlirValueSetType(mlirOperationGetResult(op, 1),
                       withLast(operandT(op, 0), piperTensorDim(operandT(op, 0), -1) /
                                                     piperTensorDim(operandT(op, 1), 0)));
      break;
    case PIPER_TP_OPERAND_GRADS:
      splitHeads(s, op, forwardOf(op), T);
      for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
        mlirValueSetType(mlirOperationGetResult(op, i), operandT(op, 1 + i));
      break;
    case PIPER_TP_ELEMENTWISE:
    case PIPER_TP_PER_HEAD:
    case PIPER_TP_LIKE_OPERAND0:
    case PIPER_TP_SUM: mlirValueSetType(r0, operandT(op, 0)); break;
    case PIPER_TP_NONE:
    case PIPER_TP_CARRY_RESHAPE:
    case PIPER_TP_CARRY_PERMUTE:
    case PIPER_TP_CARRY_LEADING:
    case PIPER_TP_CARRY_OPERAND0: /* a general op: the dim its operand's split carries */
      if (f->batch == PIPER_BATCH_OPERANDS && mlirOperationGetNumResults(op) == 1)
        retypeGeneral(s, op);
      break;
    }
  }
}

/* The column linears' input gradients are partial sums over the members (Megatron's f in
 * backward). Where autodiff sums several of them (qwen3's q, k and v read one normed input;
 * gate and up another) the sum is partial too: one all-reduce after the last such add instead
 * of one per linear. A partial value is reduced where it has a use other than a single-use
 * add of two partials. */
static void reducePartialInputGrads(Sharder *s, MlirAttribute stream) {
  PiperPtrMap partial; /* value -> 1 */
  piperPtrMapInit(&partial, 64);
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    PiperTpRule tp = tpRule(op);
    if (tp == PIPER_TP_LINEAR_GRAD_INPUT) {
      bool transposed;
      MlirOperation w = weightParam(mlirOperationGetOperand(op, 1), &transposed);
      intptr_t k;
      if (!mlirOperationIsNull(w) && piperPtrMapGet(&s->sliced, w.ptr, &k) &&
          columnKind((SliceKind)(k - 1)))
        piperPtrMapPut(&partial, mlirOperationGetResult(op, 0).ptr, 1);
    } else if (tp == PIPER_TP_SUM) {
      bool both = true;
      for (intptr_t a = 0; a < 2; ++a) {
        MlirValue v = mlirOperationGetOperand(op, a);
        MlirOpOperand u = mlirValueGetFirstUse(v);
        both = both && piperPtrMapGet(&partial, v.ptr, NULL) &&
               mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
      }
      if (both) piperPtrMapPut(&partial, mlirOperationGetResult(op, 0).ptr, 1);
    }
  }
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!mlirOperationGetNumResults(op)) continue;
    MlirValue v = mlirOperationGetResult(op, 0);
    if (!piperPtrMapGet(&partial, v.ptr, NULL)) continue;
    MlirOpOperand u = mlirValueGetFirstUse(v);
    if (!mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) &&
        tpRule(mlirOpOperandGetOwner(u)) == PIPER_TP_SUM &&
        piperPtrMapGet(&partial, mlirOperationGetResult(mlirOpOperandGetOwner(u), 0).ptr, NULL))
      continue; /* summed further first */
    allReduceAfter(s, op, v, mlirOperationGetAttributeByName(op, piperStr("devices")), stream);
    op = mlirOperationGetNextInBlock(op); /* past the new all-reduce */
  }
  piperPtrMapFree(&partial);
}

/* A value a region keeps whole on every member while each member computes from its own heads
 * (s->wholeValues: a per-head rmsnorm's weight, qwen3's q_norm and k_norm; a multi-query
 * attention's k and v) gets from each member's backward only its heads' share of its gradient:
 * a partial sum, all-reduced over the group so that every member sees the whole gradient (the
 * weight's copies get the same update; the k and v projections' whole weights the whole
 * gradient). The OPERAND_GRADS ops give them: result r is operand 1 + r's gradient. */
static void reduceWholeOperandGrads(Sharder *s, MlirAttribute stream) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (tpRule(op) != PIPER_TP_OPERAND_GRADS) continue;
    MlirOperation last = op;
    /* each right after the op, the last result's first: they end in result order */
    for (intptr_t r = mlirOperationGetNumResults(op) - 1; r >= 0; --r) {
      if (1 + r >= mlirOperationGetNumOperands(op) ||
          !piperPtrMapGet(&s->wholeValues, mlirOperationGetOperand(op, 1 + r).ptr, NULL))
        continue;
      MlirOperation ar = allReduceAfter(s, op, mlirOperationGetResult(op, r),
                                        mlirOperationGetAttributeByName(op, piperStr("devices")),
                                        stream);
      if (last.ptr == op.ptr) last = ar;
    }
    op = last; /* past the new all-reduces */
  }
}

/* Splits the recorded chains (see the file comment). */
static void applySplits(Sharder *s, int64_t T, MlirAttribute stream) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
      MlirValue v = mlirOperationGetResult(op, i);
      piperPtrMapPut(&s->oldTypes, v.ptr, (intptr_t)mlirValueGetType(v).ptr);
    }
  /* parameters and their moments */
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    intptr_t k;
    if (!piperIsOp(op, PIPER_TDAG_PARAM) || !piperPtrMapGet(&s->sliced, op.ptr, &k)) continue;
    SliceKind kind = (SliceKind)(k - 1);
    MlirValue p = mlirOperationGetResult(op, 0);
    MlirType whole = mlirValueGetType(p), local = localType(s->ctx, whole, kind, T);
    setSliceAttrs(s->ctx, op, whole, kind, T);
    mlirValueSetType(p, local);
    for (MlirOpOperand u = mlirValueGetFirstUse(p); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation upd = mlirOpOperandGetOwner(u);
      if (!piperIsOp(upd, PIPER_TDAG_ADAMW) || mlirOpOperandGetOperandNumber(u) != 0) continue;
      for (int i = 2; i < 4; ++i) { /* the moments */
        MlirValue m = mlirOperationGetOperand(upd, i);
        if (!mlirValueIsAOpResult(m)) continue;
        setSliceAttrs(s->ctx, mlirOpResultGetOwner(m), whole, kind, T);
        mlirValueSetType(m, local);
      }
    }
  }
  /* row linears: a biased one becomes its partial product (no bias) first; the bias waits
   * for the sum. A matmul_nt (no bias: qwen3) is already its partial product. */
  MlirValue *biases = malloc((s->nRows ? s->nRows : 1) * sizeof *biases);
  for (size_t i = 0; i < s->nRows; ++i) {
    MlirOperation row = s->rows[i];
    biases[i] = (MlirValue){NULL};
    if (mlirOperationGetNumOperands(row) < 3) continue; /* x, W: no bias */
    biases[i] = mlirOperationGetOperand(row, 2);
    s->rows[i] = withoutBias(s, row);
    mlirOperationDestroy(row);
  }
  retype(s, T);
  /* then the forward all-reduce (Megatron's g) and the bias, once, on the sum */
  for (size_t i = 0; i < s->nRows; ++i) {
    MlirOperation mm = s->rows[i];
    MlirOperation ar = allReduceAfter(s, mm, mlirOperationGetResult(mm, 0),
                                      mlirOperationGetAttributeByName(mm, piperStr("devices")),
                                      stream);
    if (!biases[i].ptr) continue;
    MlirValue ops[2] = {mlirOperationGetResult(ar, 0), biases[i]};
    MlirType t = mlirValueGetType(ops[0]);
    MlirOperation add = piperTdagOpCreate(PIPER_TDAG_BIAS_ADD, mlirOperationGetLocation(mm), 2,
                                          ops, 1, &t, 0, NULL);
    piperCopyPlacement(add, mm);
    mlirBlockInsertOwnedOperationAfter(s->body, ar, add);
    mlirValueReplaceAllUsesExcept(ops[0], mlirOperationGetResult(add, 0), 1, &add);
  }
  free(biases);
  reducePartialInputGrads(s, stream);
  reduceWholeOperandGrads(s, stream);
}

/* Whether `op` is a column or row linear of a selected region. */
static bool inRegion(Sharder *s, MlirOperation op) {
  return piperPtrMapGet(&s->columnOps, op.ptr, NULL) || piperPtrMapGet(&s->rowOps, op.ptr, NULL);
}

/* Every forward linear (linear or matmul_nt) that reads a parameter the regions split is one
 * of the regions' own: a filter that selects some copies of a block (one microbatch's, say)
 * would leave the other copies reading a slice as if it were whole. Reports at the directive
 * that split it. */
static bool splitParamsOnlyInRegions(Sharder *s) {
  bool ok = true;
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); ok && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!isLinear(op) || !isForward(op) || inRegion(s, op))
      continue;
    for (intptr_t a = 1; ok && a < mlirOperationGetNumOperands(op); ++a) {
      bool transposed;
      MlirOperation w = weightParam(mlirOperationGetOperand(op, a), &transposed);
      if (mlirOperationIsNull(w) || !piperPtrMapGet(&s->sliced, w.ptr, NULL)) continue;
      MlirValue v = mlirOperationGetOperand(op, a);
      MlirOperation directive = s->dirs[0].directive; /* the one selecting a split reader */
      for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
           u = mlirOpOperandGetNextUse(u))
        for (size_t d = 0; d < s->nDirs; ++d)
          if (inRegion(s, mlirOpOperandGetOwner(u)) &&
              piperFilterMatches(mlirOpOperandGetOwner(u), s->dirs[d].filter))
            directive = s->dirs[d].directive;
      char label[160];
      piperNodeLabel(op, label, sizeof label);
      piperDirectiveError(directive, "shard_tensor: the filter splits parameters that a linear "
                                     "it does not select also reads (the same block of another "
                                     "microbatch, say); select every copy of the block, e.g. "
                                     "{\"PP\": 0, \"TP\": \"*\"} without mb");
      piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this linear of node %s reads "
                                                   "a split parameter and is not selected", label);
      ok = false;
    }
  }
  return ok;
}

/* The module's shard_tensor directives, in order, into s->dirs; failure after an error. */
static MlirLogicalResult collectDirectives(Sharder *s, MlirBlock top) {
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, "sched.shard_tensor")) continue;
    if (!piperGrow((void **)&s->dirs, &s->capDirs, s->nDirs + 1, sizeof *s->dirs)) {
      piperDirectiveError(d, "shard_tensor: out of memory");
      return mlirLogicalResultFailure();
    }
    MlirAttribute stream = mlirOperationGetAttributeByName(d, piperStr("stream"));
    if (!mlirAttributeIsNull(stream) && !mlirAttributeIsAString(stream)) { /* hand-written */
      piperDirectiveError(d, "shard_tensor: stream must be a string (a trace lane's name)");
      return mlirLogicalResultFailure();
    }
    MlirAttribute devices = mlirOperationGetAttributeByName(d, piperStr("devices"));
    s->dirs[s->nDirs++] = (Directive){d, mlirOperationGetAttributeByName(d, piperStr("filter")),
                                      devices, stream,
                                      piperGetIntAttr(d, "group_size", piperListLen(devices))};
  }
  return mlirLogicalResultSuccess();
}

static int ascendingIds(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* Directive d's groups: its devices each listed once, in ascending order (sorts d->devices:
 * member t of a group is its t-th smallest), cut into groups of d->G >= 2 devices, as many as
 * the groups before it (*T, 0 before the first, then set). Failure after an error. */
static MlirLogicalResult checkGroupSize(Sharder *s, Directive *d, int64_t *T) {
  intptr_t n = piperListLen(d->devices);
  if (!piperDeviceListIsRange(d->devices, NULL)) { /* a range ascends, each id once */
    int64_t *ids = piperDeviceListIds(d->devices, &n);
    if (!ids && n) {
      piperDirectiveError(d->directive, "shard_tensor: out of memory");
      return mlirLogicalResultFailure();
    }
    qsort(ids, (size_t)n, sizeof *ids, ascendingIds);
    for (intptr_t a = 1; a < n; ++a)
      if (ids[a] == ids[a - 1]) {
        piperDirectiveError(d->directive, "shard_tensor: device %lld is listed twice",
                            (long long)ids[a]);
        free(ids);
        return mlirLogicalResultFailure();
      }
    d->devices = piperListGet(s->ctx, ids, n);
    free(ids);
  }
  if (d->G < 2) {
    piperDirectiveError(d->directive, "shard_tensor: a tensor-parallel group needs at least "
                                      "two devices, got %lld", (long long)d->G);
    return mlirLogicalResultFailure();
  }
  if (n % d->G) {
    piperDirectiveError(d->directive, "shard_tensor: %lld devices do not cut into groups of "
                                      "group_size %lld", (long long)n, (long long)d->G);
    return mlirLogicalResultFailure();
  }
  if (*T && d->G != *T) {
    piperDirectiveError(d->directive, "shard_tensor: groups of %lld and %lld devices; every "
                                      "shard_tensor group must have the same size",
                        (long long)*T, (long long)d->G);
    return mlirLogicalResultFailure();
  }
  *T = d->G;
  return mlirLogicalResultSuccess();
}

/* the groups: at least two devices, each listed once, each group disjoint from every other
 * directive's groups or equal to one of them (a device's group is the same whichever
 * directive names it: O(devices) with a table of each device's first directive); sets the
 * group size *T and the list of the directives' distinct device lists *groupList, each cut
 * into groups of T (piper.tp_groups) */
static MlirLogicalResult checkGroups(Sharder *s, int64_t *T, MlirAttribute *groupList) {
  MlirAttribute *lists = malloc((s->nDirs ? s->nDirs : 1) * sizeof *lists);
  int32_t *first = calloc(PIPER_MAX_DEVICES, sizeof *first); /* device -> directive + 1 */
  intptr_t nLists = 0;
  MlirLogicalResult status = lists && first ? mlirLogicalResultSuccess()
                                            : mlirLogicalResultFailure();
  if (!lists || !first) piperDirectiveError(s->dirs[0].directive, "shard_tensor: out of memory");
  *T = 0;
  for (size_t i = 0; i < s->nDirs && mlirLogicalResultIsSuccess(status); ++i) {
    Directive *d = &s->dirs[i];
    status = checkGroupSize(s, d, T);
    if (mlirLogicalResultIsFailure(status)) break;
    bool known = false;
    for (intptr_t l = 0; l < nLists && !known; ++l) known = mlirAttributeEqual(lists[l], d->devices);
    if (known) continue; /* the same groups again (another stage's filter on them) */
    intptr_t n;
    int64_t *ids = piperDeviceListIds(d->devices, &n);
    if (!ids) {
      piperDirectiveError(d->directive, "shard_tensor: out of memory");
      status = mlirLogicalResultFailure();
    }
    for (intptr_t a = 0; ids && a < n && mlirLogicalResultIsSuccess(status); a += d->G) {
      bool same = true, apart = true;
      size_t e = 0; /* a directive that names one of the group's devices */
      for (intptr_t t = 0; t < d->G; ++t) {
        int64_t dev = ids[a + t];
        if (dev < 0 || dev >= PIPER_MAX_DEVICES) continue; /* the verifier refuses it */
        if (!first[dev]) {
          same = false;
          continue;
        }
        apart = false;
        e = (size_t)first[dev] - 1;
      }
      if (!apart) { /* then the whole group must be one of directive e's */
        intptr_t at = piperListFind(s->dirs[e].devices, ids[a]);
        same = same && at >= 0 && at % *T == 0;
        for (intptr_t t = 0; same && t < d->G; ++t)
          same = piperListAt(s->dirs[e].devices, at + t) == ids[a + t];
      }
      if (!apart && !same) {
        piperDirectiveError(d->directive, "shard_tensor: this group overlaps another "
                                          "shard_tensor directive's group without being equal "
                                          "to it; tensor-parallel groups must be disjoint");
        piperEmitNotef(mlirOperationGetLocation(s->dirs[e].directive),
                       "shard_tensor: the other group");
        status = mlirLogicalResultFailure();
      }
      for (intptr_t t = 0; apart && t < d->G; ++t) {
        int64_t dev = ids[a + t];
        if (dev >= 0 && dev < PIPER_MAX_DEVICES) first[dev] = (int32_t)i + 1;
      }
    }
    free(ids);
    if (mlirLogicalResultIsSuccess(status)) lists[nLists++] = d->devices;
  }
  *groupList = mlirArrayAttrGet(s->ctx, nLists, lists);
  free(lists);
  free(first);
  return status;
}

/* Whether every device of directive d's groups is in `placed` (the ascending list its ops
 * sit on). */
static bool placedHoldsGroups(const Directive *d, MlirAttribute placed) {
  if (mlirAttributeEqual(placed, d->devices)) return true; /* a stage's list of groups */
  intptr_t n;
  int64_t *ids = piperDeviceListIds(d->devices, &n);
  bool holds = ids != NULL;
  for (intptr_t a = 0; holds && a < n; ++a) holds = sortedHolds(placed, ids[a]);
  free(ids);
  return holds;
}

/* every selected op is placed on a list the groups cut into aligned runs */
static MlirLogicalResult checkPlacement(Sharder *s, PiperTpLayout *layout, int64_t T) {
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (size_t i = 0; i < s->nDirs && mlirLogicalResultIsSuccess(status); ++i) {
    Directive *d = &s->dirs[i];
    int matched = 0;
    PiperPtrMap verdict; /* placed list -> 1 + whether it holds the groups: once per list */
    piperPtrMapInit(&verdict, 8);
    for (MlirOperation op = mlirBlockGetFirstOperation(s->body);
         !mlirOperationIsNull(op) && mlirLogicalResultIsSuccess(status);
         op = mlirOperationGetNextInBlock(op)) {
      if (!piperOpInDialect(op, "tdag") || !piperFilterMatches(op, d->filter)) continue;
      matched++;
      MlirAttribute placed = mlirOperationGetAttributeByName(op, piperStr("devices"));
      intptr_t known = 0;
      bool holds = !mlirAttributeIsNull(placed);
      if (holds && !piperPtrMapGet(&verdict, placed.ptr, &known)) {
        known = 1 + placedHoldsGroups(d, placed);
        piperPtrMapPut(&verdict, placed.ptr, known);
      }
      holds = holds && known == 2;
      if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local")))) {
        /* a shard directive (passes/shard.c, run before this pass) gave it to one device */
        char label[160];
        piperNodeLabel(op, label, sizeof label);
        piperDirectiveError(d->directive, "shard_tensor: the filter selects an expert's op that "
                                          "a shard directive gave to one device of its group; "
                                          "tensor parallelism cannot also split expert-parallel "
                                          "experts: select only the TP-tagged blocks");
        piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this op of node %s", label);
        status = mlirLogicalResultFailure();
      } else if (!holds || piperTpLayoutSize(layout, placed) != T) {
        char label[160];
        piperNodeLabel(op, label, sizeof label);
        piperDirectiveError(d->directive,
                            "shard_tensor: the selected ops must be placed on this group's "
                            "devices, or on a list of such groups (one per data-parallel "
                            "replica, each a run of %lld consecutive devices); place them with "
                            "a place directive on the same devices",
                            (long long)T);
        piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this op of node %s", label);
        status = mlirLogicalResultFailure();
      }
    }
    piperPtrMapFree(&verdict);
    if (!matched && mlirLogicalResultIsSuccess(status)) {
      piperDirectiveError(d->directive, "shard_tensor: the filter matches no op of the model");
      status = mlirLogicalResultFailure();
    }
  }
  return status;
}

/* a value crossing between a TP list and a list without that layout would carry the whole
 * batch to replicas that expect a slice of it (or the reverse) */
static MlirLogicalResult checkOneLayout(Sharder *s, PiperTpLayout *layout) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute here = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (!piperOpInDialect(op, "tdag") || mlirAttributeIsNull(here)) continue;
    for (intptr_t a = 0; a < mlirOperationGetNumOperands(op); ++a) {
      MlirValue v = mlirOperationGetOperand(op, a);
      if (!mlirValueIsAOpResult(v)) continue;
      MlirOperation from = mlirOpResultGetOwner(v);
      MlirAttribute there = mlirOperationGetAttributeByName(from, piperStr("devices"));
      if (mlirAttributeIsNull(there) || mlirAttributeEqual(here, there) ||
          (piperTpLayoutSize(layout, here) > 1) == (piperTpLayoutSize(layout, there) > 1))
        continue;
      char label[160];
      piperNodeLabel(op, label, sizeof label);
      piperDirectiveError(s->dirs[0].directive,
                          "shard_tensor: ops placed on tensor-parallel groups exchange values "
                          "with ops placed without them; give every stage the same "
                          "tensor-parallel layout (a shard_tensor directive per stage)");
      piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this op of node %s reads a "
                                                   "value from the other layout", label);
      return mlirLogicalResultFailure();
    }
  }
  return mlirLogicalResultSuccess();
}

/* Finds, checks and records the regions of every directive, then checks no other linear
 * reads what they split. */
static MlirLogicalResult findAllRegions(Sharder *s, int64_t T) {
  /* directives with the same filter on the groups of other replicas select the same ops:
   * find each op's chain once (filters are uniqued attributes: a map, not a search) */
  PiperPtrMap seen;
  piperPtrMapInit(&seen, 16);
  bool ok = true;
  for (size_t i = 0; i < s->nDirs && ok; ++i) {
    if (piperPtrMapGet(&seen, s->dirs[i].filter.ptr, NULL)) continue;
    piperPtrMapPut(&seen, s->dirs[i].filter.ptr, 1);
    ok = findRegions(s, i, T);
  }
  piperPtrMapFree(&seen);
  if (!ok) return mlirLogicalResultFailure();
  return splitParamsOnlyInRegions(s) ? mlirLogicalResultSuccess() : mlirLogicalResultFailure();
}

static MlirLogicalResult runShardTensor(MlirOperation module, const char *arg) {
  (void)arg;
  MlirContext ctx = mlirOperationGetContext(module);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  Sharder s = {.ctx = ctx};
  if (mlirLogicalResultIsFailure(collectDirectives(&s, top))) {
    free(s.dirs);
    return mlirLogicalResultFailure();
  }
  if (!s.nDirs) return mlirLogicalResultSuccess();
  MlirOperation func = piperTrainingFunction(module, "piper-shard-tensor");
  if (mlirOperationIsNull(func)) {
    free(s.dirs);
    return mlirLogicalResultFailure();
  }
  s.body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));

  int64_t T;
  MlirAttribute groupList;
  MlirLogicalResult status = checkGroups(&s, &T, &groupList);
  PiperTpLayout layout = {.groups = groupList, .T = T}; /* T of each placed list, asked once */
  piperPtrMapInit(&layout.sizeOf, 16);
  if (mlirLogicalResultIsSuccess(status)) status = checkPlacement(&s, &layout, T);
  if (mlirLogicalResultIsSuccess(status)) status = checkOneLayout(&s, &layout);

  piperPtrMapInit(&s.sliced, 64);
  piperPtrMapInit(&s.columnOps, 64);
  piperPtrMapInit(&s.rowOps, 64);
  piperPtrMapInit(&s.headOps, 64);
  piperPtrMapInit(&s.wholeValues, 64);
  piperPtrMapInit(&s.oldTypes, 1024);
  if (mlirLogicalResultIsSuccess(status)) status = findAllRegions(&s, T);
  if (mlirLogicalResultIsSuccess(status)) {
    applySplits(&s, T, s.dirs[0].stream);
    mlirOperationSetAttributeByName(module, piperStr("piper.tp_groups"), groupList);
    bool several = false; /* a list of several groups: T is not its length */
    for (intptr_t l = 0; l < mlirArrayAttrGetNumElements(groupList); ++l)
      several |= piperListLen(mlirArrayAttrGetElement(groupList, l)) > T;
    if (several)
      mlirOperationSetAttributeByName(module, piperStr("piper.tp_size"), piperI64Attr(ctx, T));
  }
  piperTpLayoutFree(&layout);
  piperPtrMapFree(&s.sliced);
  piperPtrMapFree(&s.columnOps);
  piperPtrMapFree(&s.rowOps);
  piperPtrMapFree(&s.headOps);
  piperPtrMapFree(&s.wholeValues);
  piperPtrMapFree(&s.oldTypes);
  free(s.rows);
  free(s.dirs);
  return status;
}

MlirPass piperCreateShardTensorPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-shard-tensor", "shard_tensor directive",
                               runShardTensor, arg);
}
