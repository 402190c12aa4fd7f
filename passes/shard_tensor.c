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
 *   column linears -> [attention | gqa_attention | rmsnorm | rope | gelu | swiglu]* -> row linear
 * (findRegions, checkRegion): column linears (tdag.linear or tdag.matmul_nt) read a value from
 * outside, exactly one row linear reads a value from inside and is the only op whose result
 * leaves; interior ops read only the region's values (and an rmsnorm its weight). piper-gen's
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
 *     t*KV/T kv heads. rmsnorm (per chunk of its weight's size D: q_norm, k_norm) and rope
 *     (per head) run on the member's heads, their chunks must not straddle members; gelu and
 *     swiglu are elementwise.
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
 *     own: that gradient is all-reduced over the group too (reduceNormWeightGrads), so the
 *     copies get the same update. Every other gradient has the shape of what it
 *     differentiates (result types are re-derived from operand types, program order).
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

/* What a parameter becomes: which slice member t holds. */
typedef enum { WHOLE, ROWS, ROWS_QKV, COLUMNS } SliceKind;

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
  PiperPtrMap headOps;     /* gqa_attention ops whose heads (and kv heads) are split */
  PiperPtrMap normParams;  /* weights of per-head rmsnorms inside regions (qwen3's q_norm and
                            * k_norm): replicated, but each member's weight gradient only sums
                            * its heads' share, so it is all-reduced over the group */
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

/* Records the slice of param `p` (kind) with its whole type, or reports a conflict. */
static bool markParam(Sharder *s, MlirValue p, SliceKind kind, MlirOperation directive) {
  if (!mlirValueIsAOpResult(p) || !piperOpIs(mlirOpResultGetOwner(p), "tdag.param")) {
    piperDirectiveError(directive, "shard_tensor: a split linear's weight or bias must be a "
                                   "tdag.param");
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
                      "| rmsnorm | rope | gelu | swiglu]* -> one row linear, such as "
                      "piper-gen's TP-tagged attention and MLP blocks",
                      what);
  piperEmitNotef(mlirOperationGetLocation(op), "shard_tensor: this op of node %s", label);
}

/* The ops a region may hold between its column and row linears: each works on the split last
 * dim independently per member (elementwise, or per head once the heads divide). */
static bool interiorOp(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return false;
  switch (f->id) {
  case PIPER_TDAG_ATTENTION:      /* GPT's, on packed qkv: heads split */
  case PIPER_TDAG_GELU:           /* elementwise */
  case PIPER_TDAG_GELU_ERF:       /* elementwise: an exported nn.GELU() */
  case PIPER_TDAG_SWIGLU:         /* elementwise on gate and up */
  case PIPER_TDAG_RMSNORM:        /* per chunk (head) of its weight's size: qwen3's q/k_norm */
  case PIPER_TDAG_ROPE:           /* per head, by position */
  case PIPER_TDAG_GQA_ATTENTION:  /* query and kv heads split together */
    return true;
  default: return false;
  }
}

static bool isLinear(MlirOperation op) {
  return piperOpIs(op, "tdag.linear") || piperOpIs(op, "tdag.matmul_nt");
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
    } else if (!interiorOp(o)) {
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
      bool param = mlirValueIsAOpResult(v) && piperOpIs(mlirOpResultGetOwner(v), "tdag.param");
      if ((column && a == 0) || (a > 0 && isLinear(o)) || /* weights: markParam checks */
          (a == 1 && param && piperOpIs(o, "tdag.rmsnorm")))
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
  int64_t N = piperTensorDim(mlirValueGetType(mlirOperationGetOperand(o, 0)), -1);
  if (f->id == PIPER_TDAG_ATTENTION) {
    MlirValue qkv = mlirOperationGetOperand(o, 0);
    MlirOperation from = mlirOpResultGetOwner(qkv);
    if (!isLinear(from) || from.ptr == r->row.ptr) {
      errorAtOp(d->directive, o, "an attention whose packed qkv is not a column linear's "
                                 "output");
      return false;
    }
    int64_t H = piperGetIntAttr(o, "heads", 1);
    if (H % T) {
      piperDirectiveError(d->directive, "shard_tensor: attention has %lld heads, which the "
                                        "group of %lld devices does not divide; use a "
                                        "group size that divides the heads",
                          (long long)H, (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this attention");
      return false;
    }
  } else if (f->id == PIPER_TDAG_GQA_ATTENTION) {
    int64_t H = piperGetIntAttr(o, "heads", 1), KV = piperGetIntAttr(o, "kv_heads", 1);
    if (H % T || KV % T) {
      piperDirectiveError(d->directive,
                          H % T ? "shard_tensor: gqa_attention has %lld query heads, which "
                                  "the group of %lld devices does not divide"
                                : "shard_tensor: gqa_attention has %lld key/value heads, "
                                  "which the group of %lld devices does not divide (member "
                                  "m must hold kv heads [m*KV/T, (m+1)*KV/T) for its query "
                                  "heads); use a group size that divides the kv heads",
                          (long long)(H % T ? H : KV), (long long)T);
      piperEmitNotef(mlirOperationGetLocation(o), "shard_tensor: this attention");
      return false;
    }
  } else if (f->id == PIPER_TDAG_RMSNORM || f->id == PIPER_TDAG_ROPE) {
    int64_t D = f->id == PIPER_TDAG_ROPE
                    ? piperGetIntAttr(o, "head_dim", 1)
                    : piperTensorDim(mlirValueGetType(mlirOperationGetOperand(o, 1)), 0);
    if (D <= 0 || N % D || (N / D) % T) {
      piperDirectiveError(d->directive, "shard_tensor: %s works on %lld heads of %lld "
                                        "features, which the group of %lld devices does not "
                                        "divide",
                          f->id == PIPER_TDAG_ROPE ? "rope" : "a per-head rmsnorm",
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

/* divisibility: the attentions' heads first (the most telling), then the other ops */
static bool checkRegionDivides(Directive *d, const Region *r, int64_t T) {
  for (size_t j = 0; j < 2 * r->n; ++j) {
    MlirOperation o = r->ops[j % r->n];
    const PiperOpFacts *f = piperOpFacts(o);
    bool attention = f->id == PIPER_TDAG_ATTENTION || f->id == PIPER_TDAG_GQA_ATTENTION;
    if ((j < r->n) != attention) continue;
    if (!opDivides(d, r, o, T)) return false;
  }
  return true;
}

/* record: parameters to split, column ops, the row, heads to split, norms with partial
 * weight gradients */
static bool recordRegion(Sharder *s, Directive *d, const Region *r) {
  MlirOperation row = r->row;
  for (size_t i = 0; i < r->n; ++i) {
    MlirOperation o = r->ops[i];
    if (piperOpIs(o, "tdag.rmsnorm")) {
      MlirValue w = mlirOperationGetOperand(o, 1);
      piperPtrMapPut(&s->normParams, mlirOpResultGetOwner(w).ptr, 1);
      continue;
    }
    if (piperOpIs(o, "tdag.gqa_attention")) {
      piperPtrMapPut(&s->headOps, o.ptr, 1);
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
      attention |= piperOpIs(mlirOpOperandGetOwner(u), "tdag.attention");
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
  return checkRegionOps(d, &r) && checkRegionEdges(d, &r) && checkRegionDivides(d, &r, T) &&
         recordRegion(s, d, &r);
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
  } else if (kind == ROWS) {
    block = rows / T * inner, stride = n, blocks = 1, step = block;
  } else { /* COLUMNS: every row's K/T columns */
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
  if (kind == COLUMNS) return shape2(ctx, piperTensorDim(whole, 0), piperTensorDim(whole, 1) / T);
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
  MlirOperation mm = piperOpCreate("tdag.matmul_nt", mlirOperationGetLocation(row), 2, ops, 1, &t,
                                   0, NULL);
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

/* Re-derives the result types of the ops whose shapes follow their operands (program order,
 * so a changed type flows down), and the heads of split attentions. */
static void retype(Sharder *s, int64_t T) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    const PiperOpFacts *f = piperOpFacts(op);
    if (!f) continue;
    MlirValue r0 = mlirOperationGetNumResults(op) ? mlirOperationGetResult(op, 0)
                                                   : (MlirValue){NULL};
    switch (f->id) {
    case PIPER_TDAG_LINEAR:
    case PIPER_TDAG_MATMUL_NT:
      mlirValueSetType(r0, withLast(operandT(op, 0), piperTensorDim(operandT(op, 1), 0)));
      break;
    case PIPER_TDAG_LINEAR_GRAD_INPUT:
      mlirValueSetType(r0, withLast(operandT(op, 0), piperTensorDim(operandT(op, 1), 1)));
      break;
    case PIPER_TDAG_LINEAR_GRAD_WEIGHT:
      mlirValueSetType(r0, shape2(s->ctx, piperTensorDim(operandT(op, 0), -1),
                                  piperTensorDim(operandT(op, 1), -1)));
      break;
    case PIPER_TDAG_BIAS_GRAD:
      mlirValueSetType(r0, mlirRankedTensorTypeGet(
                               1, (int64_t[]){piperTensorDim(operandT(op, 0), -1)},
                               mlirF32TypeGet(s->ctx), mlirAttributeGetNull()));
      break;
    case PIPER_TDAG_ATTENTION:
    case PIPER_TDAG_ATTENTION_GRAD: {
      bool grad = f->id == PIPER_TDAG_ATTENTION_GRAD;
      MlirValue qkv = mlirOperationGetOperand(op, grad ? 1 : 0);
      intptr_t kind;
      if (!mlirValueIsAOpResult(qkv) ||
          !piperPtrMapGet(&s->columnOps, mlirOpResultGetOwner(qkv).ptr, &kind) ||
          piperGetIntAttr(op, "tp_heads_split", 0))
        break;
      int64_t H = piperGetIntAttr(op, "heads", 1) / T;
      mlirOperationSetAttributeByName(op, piperStr("heads"), piperI64Attr(s->ctx, H));
      mlirOperationSetAttributeByName(op, piperStr("tp_heads_split"), piperI64Attr(s->ctx, T));
      MlirType q = mlirValueGetType(qkv);
      if (grad) {
        mlirValueSetType(r0, q);
      } else {
        mlirValueSetType(r0, withLast(q, piperTensorDim(q, -1) / 3));
        mlirValueSetType(mlirOperationGetResult(op, 1), lseOfHeads(s, op, H));
      }
      break;
    }
    case PIPER_TDAG_GQA_ATTENTION:
    case PIPER_TDAG_GQA_ATTENTION_GRAD: {
      bool grad = f->id == PIPER_TDAG_GQA_ATTENTION_GRAD;
      MlirOperation fwd = op;
      if (grad) { /* its forward: the producer of the saved lse */
        MlirValue lse = mlirOperationGetOperand(op, 5);
        if (!mlirValueIsAOpResult(lse)) break;
        fwd = mlirOpResultGetOwner(lse);
      }
      if (!piperPtrMapGet(&s->headOps, fwd.ptr, NULL) || piperGetIntAttr(op, "tp_heads_split", 0))
        break;
      int64_t H = piperGetIntAttr(op, "heads", 1) / T, KV = piperGetIntAttr(op, "kv_heads", 1) / T;
      mlirOperationSetAttributeByName(op, piperStr("heads"), piperI64Attr(s->ctx, H));
      mlirOperationSetAttributeByName(op, piperStr("kv_heads"), piperI64Attr(s->ctx, KV));
      mlirOperationSetAttributeByName(op, piperStr("tp_heads_split"), piperI64Attr(s->ctx, T));
      if (grad) {
        for (int i = 0; i < 3; ++i) mlirValueSetType(mlirOperationGetResult(op, i), operandT(op, 1 + i));
      } else {
        mlirValueSetType(r0, operandT(op, 0));
        mlirValueSetType(mlirOperationGetResult(op, 1), lseOfHeads(s, op, H));
      }
      break;
    }
    case PIPER_TDAG_RMSNORM: /* y like x, rstd one per chunk of the weight's size */
      mlirValueSetType(r0, operandT(op, 0));
      mlirValueSetType(mlirOperationGetResult(op, 1),
                       withLast(operandT(op, 0), piperTensorDim(operandT(op, 0), -1) /
                                                     piperTensorDim(operandT(op, 1), 0)));
      break;
    case PIPER_TDAG_RMSNORM_GRAD: mlirValueSetType(r0, operandT(op, 1)); break;
    case PIPER_TDAG_ROPE:
    case PIPER_TDAG_ROPE_GRAD:
    case PIPER_TDAG_SWIGLU: mlirValueSetType(r0, operandT(op, 0)); break;
    case PIPER_TDAG_SWIGLU_GRAD:
      for (int i = 0; i < 2; ++i) mlirValueSetType(mlirOperationGetResult(op, i), operandT(op, 1 + i));
      break;
    case PIPER_TDAG_GELU:
    case PIPER_TDAG_GELU_ERF: mlirValueSetType(r0, operandT(op, 0)); break;
    case PIPER_TDAG_GELU_GRAD:
    case PIPER_TDAG_GELU_ERF_GRAD: mlirValueSetType(r0, operandT(op, 1)); break;
    case PIPER_TDAG_ADD: mlirValueSetType(r0, operandT(op, 0)); break;
    case PIPER_TDAG_BIAS_ADD: mlirValueSetType(r0, operandT(op, 0)); break;
    default: break;
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
    if (piperOpIs(op, "tdag.linear_grad_input")) {
      MlirValue w = mlirOperationGetOperand(op, 1);
      intptr_t k;
      if (mlirValueIsAOpResult(w) && piperPtrMapGet(&s->sliced, mlirOpResultGetOwner(w).ptr, &k) &&
          ((SliceKind)(k - 1) == ROWS || (SliceKind)(k - 1) == ROWS_QKV))
        piperPtrMapPut(&partial, mlirOperationGetResult(op, 0).ptr, 1);
    } else if (piperOpIs(op, "tdag.add")) {
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
        piperOpIs(mlirOpOperandGetOwner(u), "tdag.add") &&
        piperPtrMapGet(&partial, mlirOperationGetResult(mlirOpOperandGetOwner(u), 0).ptr, NULL))
      continue; /* summed further first */
    allReduceAfter(s, op, v, mlirOperationGetAttributeByName(op, piperStr("devices")), stream);
    op = mlirOperationGetNextInBlock(op); /* past the new all-reduce */
  }
  piperPtrMapFree(&partial);
}

/* A per-head rmsnorm inside a region (qwen3's q_norm, k_norm) keeps its weight (size D)
 * whole on every member, but its weight gradient sums over heads and each member sees only
 * its H/T heads: a partial sum, all-reduced over the group so every member applies the same
 * update (without it the copies would drift apart). */
static void reduceNormWeightGrads(Sharder *s, MlirAttribute stream) {
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "tdag.rmsnorm_grad")) continue;
    MlirValue w = mlirOperationGetOperand(op, 2);
    if (!mlirValueIsAOpResult(w) ||
        !piperPtrMapGet(&s->normParams, mlirOpResultGetOwner(w).ptr, NULL))
      continue;
    allReduceAfter(s, op, mlirOperationGetResult(op, 1),
                   mlirOperationGetAttributeByName(op, piperStr("devices")), stream);
    op = mlirOperationGetNextInBlock(op);
  }
}

/* Splits the recorded chains (see the file comment). */
static void applySplits(Sharder *s, int64_t T, MlirAttribute stream) {
  /* parameters and their moments */
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    intptr_t k;
    if (!piperOpIs(op, "tdag.param") || !piperPtrMapGet(&s->sliced, op.ptr, &k)) continue;
    SliceKind kind = (SliceKind)(k - 1);
    MlirValue p = mlirOperationGetResult(op, 0);
    MlirType whole = mlirValueGetType(p), local = localType(s->ctx, whole, kind, T);
    setSliceAttrs(s->ctx, op, whole, kind, T);
    mlirValueSetType(p, local);
    for (MlirOpOperand u = mlirValueGetFirstUse(p); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation upd = mlirOpOperandGetOwner(u);
      if (!piperOpIs(upd, "tdag.adamw") || mlirOpOperandGetOperandNumber(u) != 0) continue;
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
    if (!piperOpIs(row, "tdag.linear")) continue;
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
    MlirOperation add = piperOpCreate("tdag.bias_add", mlirOperationGetLocation(mm), 2, ops, 1,
                                      &t, 0, NULL);
    piperCopyPlacement(add, mm);
    mlirBlockInsertOwnedOperationAfter(s->body, ar, add);
    mlirValueReplaceAllUsesExcept(ops[0], mlirOperationGetResult(add, 0), 1, &add);
  }
  free(biases);
  reducePartialInputGrads(s, stream);
  reduceNormWeightGrads(s, stream);
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
    if (!(piperOpIs(op, "tdag.linear") || piperOpIs(op, "tdag.matmul_nt")) || !isForward(op) ||
        inRegion(s, op))
      continue;
    for (intptr_t a = 1; ok && a < mlirOperationGetNumOperands(op); ++a) {
      MlirValue v = mlirOperationGetOperand(op, a);
      if (!mlirValueIsAOpResult(v) ||
          !piperPtrMapGet(&s->sliced, mlirOpResultGetOwner(v).ptr, NULL))
        continue;
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
  piperPtrMapInit(&s.normParams, 64);
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
  piperPtrMapFree(&s.normParams);
  free(s.rows);
  free(s.dirs);
  return status;
}

MlirPass piperCreateShardTensorPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-shard-tensor", "shard_tensor directive",
                               runShardTensor, arg);
}
