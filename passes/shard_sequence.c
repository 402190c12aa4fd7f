/* --piper-shard-sequence: the `shard_sequence` directive (context parallelism).
 *
 *   {"op":"shard_sequence","tags":{"PP":0},"devices":[0,1]}
 *
 * Runs after place (and shard_tensor), before insert-comm and replicate. The ops whose tags
 * match `tags` must be exactly the ops placed on `devices`, a context-parallel group of G >= 2
 * devices. Their sequence of T positions is cut into 2G chunks of c = T/(2G) rows; member r
 * (its position in the placed, ascending list) holds chunks r and 2G-1-r as its Tl = 2c
 * local rows (causal load balancing, runtime/cp_attention.c). Every member holds the same
 * batch rows, so the group is not a set of batch replicas (piperCpSplitReplicas). Then:
 *   - every batched result (B, T, ...) of a selected op becomes (B, Tl, ...): activations,
 *     their gradients, norm statistics, the inputs (the data loader fills member r's columns,
 *     prt_declare_cp);
 *   - tdag.attention / attention_grad become comm.ring_attention / ring_attention_grad, and
 *     tdag.gqa_attention / gqa_attention_grad the ring_gqa ones (out and the saved
 *     log-sum-exps, the backward reading the forward's out), each with its two point-to-point
 *     tags from the plan's tag counter (insert-comm continues after them);
 *   - embedding, embedding_grad, rope, rope_grad, the inputs and the loss output get
 *     cp_size = G; extraction sets cp_rank = r on each member's instance, and the lowering
 *     calls the kernels' _cp variants (positions from prt_cp_position). Attributes, not a
 *     positions tensor: the positions are a function of (r, G, t) that every kernel computes
 *     in one line, and a tensor would need its own fill, memory and transfers under PP;
 *   - the loss: cross_entropy_grad keeps the whole sequence's row count (total_rows), so a
 *     member's gradient is its share of the mean over all B * T positions; a `replicate`
 *     directive over the same devices sums the parameter gradients over the group (as over
 *     data-parallel replicas), and the reported loss counts each member's mean for 1/G.
 *   - MoE (routing is per token, dropless, no auxiliary loss): the dispatched rows (R, C),
 *     R = Gep * N * min(K, E/Gep) for the N tokens, become (R / G, C) with N (movesRows).
 *     With expert parallelism (shard.c, run before) the experts split over the groups (both
 *     members of group g own its experts), extraction narrows each all-to-all to the members
 *     of the same position (they hold the same chunks of other batch rows), and an expert's
 *     weight gradient, partial on each member, is all-reduced over its owner group
 *     (reduceExpertGradient).
 * The groups are recorded on the module as `piper.cp_groups`.
 *
 * With data parallelism a stage is placed on R * G devices and has one directive per batch
 * replica, each over an aligned run of G of the placed list (piper-sched --cp G --dp R: [0,1]
 * and [2,3] of [0,1,2,3]); the first rewrites the ops, the others record their groups, and the
 * ring's group is narrowed to the member's run at extraction. With pipeline parallelism each
 * stage has its own directives; transfers between stages pair member r with member r, which
 * holds the same chunks.
 *
 * Refused at the directive: a group of fewer than two devices or with a device twice; a tag
 * the model does not have; a filter that matches nothing; ops of the filter not placed on the
 * group (or on a list of which it is an aligned run) or ops on the group the filter leaves out;
 * a sequence T that 2G does not divide; groups of different sizes over the same ops; split ops
 * whose device list the groups do not cover (a replica without its directive); compositions
 * not done yet: tensor parallelism (shard_tensor); a model without a "tokens" input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "passes/tp_layout.h"
#include "piper/checked.h"

/* ---- the layout, shared with extract and replicate (strategy.h) ---- */

MlirAttribute piperCpGroups(MlirOperation module) {
  MlirAttribute g = mlirOperationGetAttributeByName(module, piperStr("piper.cp_groups"));
  return !mlirAttributeIsNull(g) && mlirAttributeIsAArray(g) ? g : mlirAttributeGetNull();
}

/* Whether entries j, j + st, ..., j + (G-1)st of `devices` are exactly a group of `groups`,
 * in its order. */
static bool runIsGroup(MlirAttribute groups, MlirAttribute devices, intptr_t j, intptr_t G,
                       intptr_t st) {
  for (intptr_t g = 0; g < mlirArrayAttrGetNumElements(groups); ++g) {
    MlirAttribute grp = mlirArrayAttrGetElement(groups, g);
    if (piperListLen(grp) != G) continue;
    bool same = true;
    for (intptr_t t = 0; t < G && same; ++t) same = piperListAt(grp, t) == piperListAt(devices, j + t * st);
    if (same) return true;
  }
  return false;
}

/* G if the groups cut `devices` at stride st: for every b and u < st the entries
 * (b*G + c)*st + u, c < G, form a group; else 1. */
static int64_t sizeAtStride(MlirAttribute groups, MlirAttribute devices, intptr_t st) {
  intptr_t n = piperListLen(devices);
  intptr_t G = piperListLen(mlirArrayAttrGetElement(groups, 0)); /* one size */
  if (G < 2 || st < 1 || n % (G * st)) return 1;
  for (intptr_t j = 0; j < n; ++j)
    if ((j / st) % G == 0 && !runIsGroup(groups, devices, j, G, st)) return 1;
  return G;
}

int64_t piperCpSize(MlirAttribute groups, MlirAttribute devices, int64_t T, int64_t *stride) {
  if (stride) *stride = 1;
  if (mlirAttributeIsNull(groups) || mlirAttributeIsNull(devices) ||
      !mlirArrayAttrGetNumElements(groups))
    return 1;
  int64_t G = sizeAtStride(groups, devices, 1); /* runs of consecutive entries */
  if (G > 1 || T < 2) return G;
  G = sizeAtStride(groups, devices, T); /* across a tensor-parallel list's runs of T */
  if (G > 1 && stride) *stride = T;
  return G;
}

void piperCpLayoutInit(PiperCpLayout *l, MlirOperation module) {
  l->groups = piperCpGroups(module);
  piperPtrMapInit(&l->sizeOf, 16);
}

void piperCpLayoutFree(PiperCpLayout *l) { piperPtrMapFree(&l->sizeOf); }

int64_t piperCpSplitReplicas(PiperCpLayout *l, MlirOperation op, int64_t T, int64_t *replicas,
                             int64_t *k, int64_t *stride) {
  MlirAttribute devices = mlirOperationGetAttributeByName(op, piperStr("devices"));
  *stride = 1;
  if (mlirAttributeIsNull(l->groups) || mlirAttributeIsNull(devices)) return 1;
  intptr_t packed; /* G and the stride in one entry: G * 2^32 + stride */
  if (!piperPtrMapGet(&l->sizeOf, devices.ptr, &packed)) { /* once per uniqued list */
    int64_t st, G = piperCpSize(l->groups, devices, T, &st);
    packed = (intptr_t)(G * ((int64_t)1 << 32) + st);
    piperPtrMapPut(&l->sizeOf, devices.ptr, packed);
  }
  int64_t G = (int64_t)packed >> 32;
  *stride = (int64_t)packed & 0xffffffff;
  if (G > 1) {
    *replicas /= G;
    *k /= G;
  }
  return G;
}

void piperCpInstantiate(MlirOperation c, MlirOperation op, int64_t flatK, int64_t G,
                        int64_t st) {
  MlirContext ctx = mlirOperationGetContext(c);
  /* position flatK = (b*G + r)*st + u: member r of the group of (b, u) */
  int64_t r = (flatK / st) % G, first = (flatK / st - r) * st + flatK % st;
  if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("cp_size"))))
    mlirOperationSetAttributeByName(c, piperStr("cp_rank"), piperI64Attr(ctx, r));
  MlirAttribute group = mlirOperationGetAttributeByName(op, piperStr("group"));
  if (piperOpIs(op, "comm.all_to_all") && !mlirAttributeIsNull(group) &&
      piperListLen(group) % (G * st) == 0) {
    /* expert parallelism over the groups: member r exchanges with the members r of the other
     * groups, which hold the same chunks of other batch rows (as a data-parallel reduction
     * pairs them under tensor parallelism) */
    intptr_t n = piperListLen(group), m = 0;
    int64_t *peers = malloc((size_t)n * sizeof *peers);
    for (intptr_t i = 0; i < n; ++i)
      if ((i / st) % G == r && i % st == flatK % st) peers[m++] = piperListAt(group, i);
    mlirOperationSetAttributeByName(c, piperStr("group"), piperListGet(ctx, peers, m));
    free(peers);
    return;
  }
  if (!piperIsRingOp(op)) return;
  /* the ring of this member's group: its run of the placed list (entries st apart) */
  MlirAttribute devs = mlirOperationGetAttributeByName(op, piperStr("devices"));
  int64_t *ids = malloc((size_t)G * sizeof *ids);
  for (int64_t t = 0; t < G; ++t) ids[t] = piperListAt(devs, first + t * st);
  mlirOperationSetAttributeByName(c, piperStr("group"), piperListGet(ctx, ids, G));
  free(ids);
}

/* ---- checks ---- */

typedef struct {
  MlirContext ctx;
  MlirOperation directive;
  MlirBlock body;
  MlirAttribute group; /* the placed (ascending) device list: ring order */
  int64_t G, T, Tl;
  bool repeat;         /* the ops are split already (another batch replica's group) */
} Seq;

static void noteAt(MlirOperation op, const char *what) {
  piperEmitNotef(mlirOperationGetLocation(op), "shard_sequence: %s", what);
}

/* The model's tag names, "PP, layer, ..." (each once, cut short within `size`). */
static void modelTags(Seq *s, char *buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
    for (intptr_t i = 0; !mlirAttributeIsNull(tags) && i < mlirDictionaryAttrGetNumElements(tags);
         ++i) {
      MlirStringRef k = mlirIdentifierStr(mlirDictionaryAttrGetElement(tags, i).name);
      char name[64];
      snprintf(name, sizeof name, "%.*s", (int)k.length, k.data);
      bool seen = false; /* a whole entry of the list so far */
      for (const char *p = strstr(buf, name); p && !seen; p = strstr(p + 1, name))
        seen = (p == buf || p[-1] == ' ') && (p[strlen(name)] == ',' || !p[strlen(name)]);
      if (!seen && used + strlen(name) + 3 < size)
        used += (size_t)snprintf(buf + used, size - used, "%s%s", used ? ", " : "", name);
    }
  }
}

/* Every tag the filter names is a tag of some op of the model. */
static bool tagsKnown(Seq *s, MlirAttribute filter) {
  for (intptr_t i = 0; i < mlirDictionaryAttrGetNumElements(filter); ++i) {
    MlirStringRef key = mlirIdentifierStr(mlirDictionaryAttrGetElement(filter, i).name);
    if (key.length == 4 && !memcmp(key.data, "PASS", 4)) continue;
    bool found = false;
    for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op) && !found;
         op = mlirOperationGetNextInBlock(op)) {
      MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
      found = !mlirAttributeIsNull(tags) &&
              !mlirAttributeIsNull(mlirDictionaryAttrGetElementByName(tags, key));
    }
    if (!found) {
      char known[256];
      modelTags(s, known, sizeof known);
      piperDirectiveError(s->directive, "shard_sequence: no op of the model has the tag '%.*s' "
                                        "(the model's tags: %s)",
                          (int)key.length, key.data, known);
      return false;
    }
  }
  return true;
}

/* An op the sequence split does not handle yet: its rows are not (B, T, ...) or it already
 * belongs to another split. */
/* An exported model's general op (PIPER_BATCH_OPERANDS) that is not elementwise on operands
 * of its result's shape: a layout change, a reduction, a matmul, a softmax over a dim, or an
 * operand broadcast over the sequence (a (T, C) position table, a (T, T) mask), none of which
 * a member's rows can compute alone. */
static bool movesSequence(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f || f->batch != PIPER_BATCH_OPERANDS || mlirOperationGetNumResults(op) == 0) return false;
  bool hasDim = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("dim")));
  bool hasPerm = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("perm")));
  if (f->id == PIPER_TDAG_BMM || hasDim || hasPerm) return true;
  MlirType out = mlirValueGetType(mlirOperationGetResult(op, 0));
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k)
    if (!mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(op, k)), out)) return true;
  return false;
}

static const char *unsupported(MlirOperation op, int64_t G) {
  /* comm.all_reduce: reduceExpertGradient's, or shard_tensor's (tp_reduce: a partial
   * activation, summed row by row, or a norm weight's gradient) */
  bool known = !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local"))) ||
               !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("tp_reduce")));
  if (piperOpIs(op, "comm.all_reduce") && !known)
    return "this all-reduce of another directive cannot be split by sequence";
  /* another batch replica's group over the same ops split them already: the same G */
  if (piperGetIntAttr(op, "cp_size", G) != G)
    return "this op is already split over a group of another size by another shard_sequence "
           "directive; give every group of a stage the same size";
  if (movesSequence(op))
    return "this general op (an exported model's, left unfused) may move the sequence off dim "
           "1, where context parallelism splits it, or read a whole-sequence constant; let "
           "piper-compile's --piper-fuse fold its chain, or train the model without "
           "shard_sequence";
  return NULL;
}

static bool epLocal(MlirOperation op) {
  return !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("ep_local")));
}

/* Whether `list` holds device d. */
static bool holds(MlirAttribute list, int64_t d) {
  return piperListFind(list, d) >= 0;
}

/* The first entry of the aligned run of the placed (ascending) list `placed` that holds exactly
 * the devices of `group`, entries st apart, or -1: a stage placed on R * G devices holds R
 * groups, one per batch replica (piper-sched --cp G --dp R: [0,1] and [2,3] of [0,1,2,3]);
 * with tensor parallelism (groups of T, runs of the list) the members of a context-parallel
 * group are T entries apart (--cp 2 --tp 2: [0,2] and [1,3] of [0,1,2,3]). */
static intptr_t runOf(MlirAttribute placed, MlirAttribute group, intptr_t st) {
  if (mlirAttributeIsNull(placed) || mlirAttributeIsNull(group)) return -1;
  intptr_t n = piperListLen(placed), G = piperListLen(group);
  if (G < 1 || st < 1 || n % (G * st)) return -1;
  for (intptr_t j = 0; j < n; ++j) {
    if ((j / st) % G) continue;
    bool same = true;
    for (intptr_t t = 0; t < G && same; ++t) same = holds(group, piperListAt(placed, j + t * st));
    if (same) return j;
  }
  return -1;
}

static bool overlaps(MlirAttribute placed, MlirAttribute group) {
  if (mlirAttributeIsNull(placed)) return false;
  for (intptr_t i = 0; i < piperListLen(placed); ++i)
    if (holds(group, piperListAt(placed, i))) return true;
  return false;
}

/* The group as it runs: its run of the placed list, ascending (member r = position r). */
static MlirAttribute runAttr(MlirContext ctx, MlirAttribute placed, intptr_t j, intptr_t G,
                             intptr_t st) {
  int64_t *ids = malloc((size_t)G * sizeof *ids);
  for (intptr_t t = 0; t < G; ++t) ids[t] = piperListAt(placed, j + t * st);
  MlirAttribute a = piperListGet(ctx, ids, G);
  free(ids);
  return a;
}

/* Whether another shard_sequence directive selects `op` (a device holding two stages, as
 * interleaved 1F1B and DualPipeV place them, has one directive per stage). */
static bool otherDirectiveSelects(Seq *s, MlirOperation op) {
  MlirBlock top = mlirOperationGetBlock(s->directive);
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d))
    if (d.ptr != s->directive.ptr && piperOpIs(d, "sched.shard_sequence") &&
        piperFilterMatches(op, mlirOperationGetAttributeByName(d, piperStr("tags"))))
      return true;
  return false;
}

/* The group: two or more devices, each once; the selected ops exactly those placed on it. */
static MlirLogicalResult checkSelection(Seq *s, MlirAttribute filter, MlirAttribute devices) {
  intptr_t n = piperListLen(devices);
  for (intptr_t i = 0; i < n; ++i)
    for (intptr_t j = 0; j < i; ++j)
      if (piperListAt(devices, i) == piperListAt(devices, j)) {
        piperDirectiveError(s->directive, "shard_sequence: device %lld is listed twice",
                            (long long)piperListAt(devices, i));
        return mlirLogicalResultFailure();
      }
  if (n < 2) {
    piperDirectiveError(s->directive, "shard_sequence: a context-parallel group needs two or "
                                      "more devices, got %lld", (long long)n);
    return mlirLogicalResultFailure();
  }
  if (!tagsKnown(s, filter)) return mlirLogicalResultFailure();
  int matched = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (piperOpIs(op, "func.return")) continue;
    MlirAttribute placed = mlirOperationGetAttributeByName(op, piperStr("devices"));
    /* an expert's parameter, state, update and weight gradients sit on its owner group alone
     * (shard.c under context parallelism): another group's directive covers them */
    bool selected = piperFilterMatches(op, filter) && !(epLocal(op) && !overlaps(placed, devices));
    /* on a tensor-parallel list (runs of T, the TP groups) a group takes one member of each
     * of G runs, the same member of each: its devices T entries apart */
    intptr_t st = selected ? piperTpSize(mlirOperationGetParentOperation(s->directive), placed)
                           : 1;
    intptr_t run = selected ? runOf(placed, devices, st) : -1;
    const char *why = NULL;
    if (selected && run < 0 && st > 1)
      why = "with tensor parallelism a context-parallel group must take the same member of G "
            "different tensor-parallel groups (the stage's list in runs of T, its devices T "
            "entries apart: piper-sched --cp 2 --tp 2 writes the rings [0,2] and [1,3] across "
            "the groups [0,1] and [2,3]); a group within one tensor-parallel group would sum "
            "partial products of different positions";
    else if (selected && run < 0)
      why = "the tags select this op, which is not placed on the group (the group must be the "
            "op's device list, or one aligned run of G of it per batch replica); give place "
            "and shard_sequence matching device lists";
    else if (!selected && overlaps(placed, devices) && !otherDirectiveSelects(s, op))
      why = "this op runs on the group but its tags are not selected: every op a member runs "
            "must see its share of the sequence; select the whole stage (e.g. {\"PP\": 0})";
    else if (selected)
      why = unsupported(op, s->G);
    if (why) {
      piperDirectiveError(s->directive, "shard_sequence: %s", why);
      noteAt(op, "this op");
      return mlirLogicalResultFailure();
    }
    if (selected) {
      matched++;
      s->group = runAttr(s->ctx, placed, run, s->G, st);
      s->repeat = s->repeat || piperIsRingOp(op) ||
                  !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("cp_size")));
    }
  }
  if (!matched) {
    piperDirectiveError(s->directive, "shard_sequence: the tags match no op of the model");
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

/* T from the model's "tokens" input (whole, or already split by an earlier directive); 2G
 * chunks must divide it. */
static MlirLogicalResult findSequence(Seq *s) {
  s->T = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(s->body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    char name[16];
    if (piperOpIs(op, "tdag.input") && piperGetStringAttr(op, "name", name, sizeof name) &&
        !strcmp(name, "tokens"))
      s->T = piperTensorDim(mlirValueGetType(mlirOperationGetResult(op, 0)), 1) *
             piperGetIntAttr(op, "cp_size", 1);
  }
  if (s->T <= 0) {
    piperDirectiveError(s->directive, "shard_sequence: the model has no \"tokens\" input "
                                      "(B, T) to take the sequence length from");
    return mlirLogicalResultFailure();
  }
  if (s->T % (2 * s->G)) {
    piperDirectiveError(s->directive, "shard_sequence: a group of %lld devices cuts the "
                        "sequence into 2G = %lld chunks (member r holds chunks r and 2G-1-r), "
                        "which must divide T = %lld; use a group size G with 2G dividing T",
                        (long long)s->G, (long long)(2 * s->G), (long long)s->T);
    return mlirLogicalResultFailure();
  }
  s->Tl = s->T / s->G;
  return mlirLogicalResultSuccess();
}

/* ---- rewrite ---- */

static bool isAttention(MlirOperation op) {
  return piperOpIs(op, "tdag.attention") || piperOpIs(op, "tdag.gqa_attention");
}

/* `t` with dim 1 set to `d`. */
static MlirType withDim1(MlirType t, int64_t d) {
  int64_t rank = piperTensorRank(t), shape[8];
  for (int64_t i = 0; i < rank && i < 8; ++i) shape[i] = piperTensorDim(t, i);
  shape[1] = d;
  return mlirRankedTensorTypeGet(rank, shape, mlirShapedTypeGetElementType(t),
                                 mlirAttributeGetNull());
}

/* The loss gradient divides by the whole sequence's rows, B * T: set from the probabilities'
 * type before any type is narrowed (split sets it already when it copied the op). */
static void keepTotalRows(Seq *s, MlirOperation op) {
  if (!piperOpIs(op, "tdag.cross_entropy_grad") ||
      !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("total_rows"))))
    return;
  MlirType p = mlirValueGetType(mlirOperationGetOperand(op, 0)); /* whole (B, T, V) */
  mlirOperationSetAttributeByName(
      op, piperStr("total_rows"), piperI64Attr(s->ctx, piperTensorNumel(p) / piperTensorDim(p, -1)));
}

/* Whether `op` moves MoE rows: tdag.moe_* and expert parallelism's all-to-alls. Their
 * batched rank-2 results are dispatched rows (R, C) (or (R, 2Fe)), R = Gep * N * min(K, E/Gep)
 * for the N = B * T tokens (moeGeometry): R is linear in T, so a member's rows are R / G. No
 * MoE op returns a (B, T) tensor, so rank 2 tells the rows apart. */
static bool movesRows(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return (n.length > 9 && !memcmp(n.data, "tdag.moe_", 9)) || piperOpIs(op, "comm.all_to_all");
}

/* `t` with dim 0 divided by `g`. */
static MlirType rowsOver(MlirType t, int64_t g) {
  int64_t shape[2] = {piperTensorDim(t, 0) / g, piperTensorDim(t, 1)};
  return mlirRankedTensorTypeGet(2, shape, mlirShapedTypeGetElementType(t),
                                 mlirAttributeGetNull());
}

/* Batched (B, T, ...) results -> (B, Tl, ...), MoE rows (R, C) -> (R / G, C); the attention
 * ops' lse (B, H, T) is replaced with the ring's (B, H, Tl) later. */
static void retype(Seq *s, MlirOperation op) {
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
    MlirValue v = mlirOperationGetResult(op, r);
    MlirType t = mlirValueGetType(v);
    if (isAttention(op) && r == 1) continue;
    if (!mlirTypeIsARankedTensor(t) || !piperResultIsBatched(op, r)) continue;
    if (movesRows(op) && piperTensorRank(t) == 2) {
      mlirValueSetType(v, rowsOver(t, s->G));
      continue;
    }
    if (piperTensorRank(t) < 2 || piperTensorRank(t) > 8 || piperTensorDim(t, 1) != s->T)
      continue;
    mlirValueSetType(v, withDim1(t, s->Tl));
  }
  static const char *positional[] = {"tdag.input",          "tdag.embedding", "tdag.rope",
                                     "tdag.embedding_grad", "tdag.rope_grad"};
  bool cp = piperOpIs(op, "tdag.output");
  for (size_t i = 0; i < sizeof positional / sizeof *positional; ++i)
    cp = cp || piperOpIs(op, positional[i]);
  if (cp) mlirOperationSetAttributeByName(op, piperStr("cp_size"), piperI64Attr(s->ctx, s->G));
}

/* The next free point-to-point tag: past every tag the DAG holds (a ring op takes two). */
static int64_t nextTag(MlirBlock body) {
  int64_t next = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    int64_t tag = piperGetIntAttr(op, "tag", -1);
    int64_t end = tag + (piperIsRingOp(op) ? 2 : 1);
    if (tag >= 0 && end > next) next = end;
  }
  return next;
}

/* The ring op `name` standing for `old` (its operands, results: tensors then a token). */
static MlirOperation ringOp(Seq *s, MlirOperation old, const char *name, intptr_t nIn,
                            const MlirValue *in, intptr_t nOut, const MlirType *out) {
  MlirType types[4];
  for (intptr_t i = 0; i < nOut; ++i) types[i] = out[i];
  types[nOut] = mlirTypeParseGet(s->ctx, piperStr("!comm.token"));
  MlirNamedAttribute attrs[4] = {
      piperNamedAttr(s->ctx, "group", s->group),
      piperNamedAttr(s->ctx, "tag", piperI64Attr(s->ctx, nextTag(s->body))),
      piperNamedAttr(s->ctx, "heads", piperI64Attr(s->ctx, piperGetIntAttr(old, "heads", 1))),
      piperNamedAttr(s->ctx, "kv_heads", piperI64Attr(s->ctx, piperGetIntAttr(old, "kv_heads", 1)))};
  bool gqa = !mlirAttributeIsNull(mlirOperationGetAttributeByName(old, piperStr("kv_heads")));
  MlirOperation r = piperOpCreate(name, mlirOperationGetLocation(old), nIn, in, nOut + 1, types,
                                  gqa ? 4 : 3, attrs);
  piperCopyPlacement(r, old);
  mlirBlockInsertOwnedOperationBefore(s->body, old, r);
  for (intptr_t i = 0; i < mlirOperationGetNumResults(old) && i < nOut; ++i)
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(old, i), mlirOperationGetResult(r, i));
  return r;
}

/* attention(qkv) -> ring_attention(qkv): (out, lse); gqa_attention(q, k, v) alike. The
 * lse is (B, H, Tl), the local rows' of the op's (B, H, T). */
static void ringForward(Seq *s, MlirOperation op) {
  bool gqa = piperOpIs(op, "tdag.gqa_attention");
  intptr_t nIn = mlirOperationGetNumOperands(op);
  MlirValue in[3];
  for (intptr_t i = 0; i < nIn && i < 3; ++i) in[i] = mlirOperationGetOperand(op, i);
  MlirType outT = mlirValueGetType(mlirOperationGetResult(op, 0));
  int64_t lse[3] = {piperTensorDim(outT, 0), piperGetIntAttr(op, "heads", 1), s->Tl};
  MlirType types[2] = {outT, mlirRankedTensorTypeGet(3, lse, mlirF32TypeGet(s->ctx),
                                                     mlirAttributeGetNull())};
  ringOp(s, op, gqa ? "comm.ring_gqa_attention" : "comm.ring_attention", nIn, in, 2, types);
}

/* attention_grad(dout, qkv, out, lse) -> ring_attention_grad(dout, out, qkv, lse);
 * gqa_attention_grad(dout, q, k, v, out, lse) -> ring_gqa_attention_grad(dout, out, q, k, v,
 * lse). out and lse are by now the forward ring op's (ringForward replaced them). */
static bool ringBackward(Seq *s, MlirOperation op) {
  bool gqa = piperOpIs(op, "tdag.gqa_attention_grad");
  intptr_t n = mlirOperationGetNumOperands(op);
  MlirValue lse = mlirOperationGetOperand(op, n - 1);
  if (!mlirValueIsAOpResult(lse) || !piperIsRingOp(mlirOpResultGetOwner(lse))) {
    piperDirectiveError(s->directive, "shard_sequence: this attention gradient's forward is "
                                      "not among the selected ops; select both");
    noteAt(op, "this op");
    return false;
  }
  MlirValue in[6];
  intptr_t k = 0;
  in[k++] = mlirOperationGetOperand(op, 0);     /* dout */
  in[k++] = mlirOperationGetOperand(op, n - 2); /* out */
  for (intptr_t i = 1; i < n - 2; ++i) in[k++] = mlirOperationGetOperand(op, i);
  in[k++] = lse;
  MlirType out[3];
  intptr_t nOut = mlirOperationGetNumResults(op);
  for (intptr_t i = 0; i < nOut && i < 3; ++i)
    out[i] = mlirValueGetType(mlirOperationGetResult(op, i));
  ringOp(s, op, gqa ? "comm.ring_gqa_attention_grad" : "comm.ring_attention_grad", k, in, nOut,
         out);
  return true;
}

/* Expert parallelism (shard.c) puts expert e on every member of its owner group, and each
 * member routes its own positions to it: the expert's weight gradient is partial on each
 * member (under tensor parallelism the members see the same tokens and it is whole). A
 * comm.all_reduce over the owner group, right after the gradient is produced, sums it, so every
 * member applies the same update; replicate leaves ep_local gradients alone. */
static void reduceExpertGradient(Seq *s, MlirOperation update) {
  MlirAttribute owners = mlirOperationGetAttributeByName(update, piperStr("devices"));
  MlirValue g = mlirOperationGetOperand(update, 1);
  if (!epLocal(update) || mlirAttributeIsNull(owners) ||
      piperListLen(owners) != s->G || !mlirValueIsAOpResult(g))
    return;
  MlirOperation after = mlirOpResultGetOwner(g);
  MlirType types[2] = {mlirValueGetType(g), mlirTypeParseGet(s->ctx, piperStr("!comm.token"))};
  MlirNamedAttribute attrs[2] = {piperNamedAttr(s->ctx, "group", owners),
                                 piperNamedAttr(s->ctx, "devices", owners)};
  MlirOperation ar = piperOpCreate("comm.all_reduce", mlirOperationGetLocation(after), 1, &g, 2,
                                   types, 2, attrs);
  mlirBlockInsertOwnedOperationAfter(s->body, after, ar);
  static const char *copied[] = {"tags", "pass", "ep_local"};
  for (int i = 0; i < 3; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(after, piperStr(copied[i]));
    if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(ar, piperStr(copied[i]), a);
  }
  mlirValueReplaceAllUsesExcept(g, mlirOperationGetResult(ar, 0), 1, &ar);
}

static void recordGroup(Seq *s) {
  MlirOperation module = mlirOperationGetParentOperation(s->directive);
  MlirAttribute old = piperCpGroups(module);
  intptr_t n = mlirAttributeIsNull(old) ? 0 : mlirArrayAttrGetNumElements(old);
  MlirAttribute *groups = malloc((size_t)(n + 1) * sizeof *groups);
  for (intptr_t i = 0; i < n; ++i) groups[i] = mlirArrayAttrGetElement(old, i);
  groups[n] = s->group;
  mlirOperationSetAttributeByName(module, piperStr("piper.cp_groups"),
                                  mlirArrayAttrGet(s->ctx, n + 1, groups));
  free(groups);
}

static MlirLogicalResult applyShardSequence(MlirOperation d, MlirBlock body) {
  Seq s = {.ctx = mlirOperationGetContext(d), .directive = d, .body = body};
  MlirAttribute filter = mlirOperationGetAttributeByName(d, piperStr("tags"));
  MlirAttribute devices = mlirOperationGetAttributeByName(d, piperStr("devices"));
  s.G = piperListLen(devices);
  if (mlirLogicalResultIsFailure(checkSelection(&s, filter, devices)) ||
      mlirLogicalResultIsFailure(findSequence(&s)))
    return mlirLogicalResultFailure();
  if (s.repeat) { /* one more batch replica's group: the ops are split, record it */
    recordGroup(&s);
    return mlirLogicalResultSuccess();
  }
  /* snapshot the selection: the rewrite inserts and erases ops */
  size_t n = 0, cap = 0;
  MlirOperation *ops = NULL;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperFilterMatches(op, filter)) continue;
    if (!piperGrow((void **)&ops, &cap, n + 1, sizeof *ops)) {
      piperDirectiveError(d, "shard_sequence: out of memory");
      free(ops);
      return mlirLogicalResultFailure();
    }
    ops[n++] = op;
  }
  for (size_t i = 0; i < n; ++i) keepTotalRows(&s, ops[i]);
  for (size_t i = 0; i < n; ++i) retype(&s, ops[i]);
  for (size_t i = 0; i < n; ++i) /* forward before backward: program order */
    if (isAttention(ops[i])) ringForward(&s, ops[i]);
  bool ok = true;
  for (size_t i = 0; i < n && ok; ++i)
    if (piperOpIs(ops[i], "tdag.attention_grad") || piperOpIs(ops[i], "tdag.gqa_attention_grad")) {
      ok = ringBackward(&s, ops[i]);
      if (ok) { /* the later loops skip it: its memory is gone */
        mlirOperationDestroy(ops[i]);
        ops[i] = (MlirOperation){NULL};
      }
    }
  if (!ok) {
    free(ops);
    return mlirLogicalResultFailure();
  }
  for (size_t i = 0; i < n; ++i)
    if (!mlirOperationIsNull(ops[i]) && isAttention(ops[i])) {
      mlirOperationDestroy(ops[i]);
      ops[i] = (MlirOperation){NULL};
    }
  for (size_t i = 0; i < n; ++i)
    if (!mlirOperationIsNull(ops[i]) && piperOpIs(ops[i], "tdag.adamw"))
      reduceExpertGradient(&s, ops[i]);
  free(ops);
  recordGroup(&s);
  return mlirLogicalResultSuccess();
}

/* Every split op's device list is cut into groups: a stage on R * G devices needs a directive
 * per batch replica, or its other devices would run the split ops with no group. */
static MlirLogicalResult checkCovered(MlirOperation module) {
  MlirAttribute groups = piperCpGroups(module);
  if (mlirAttributeIsNull(groups)) return mlirLogicalResultSuccess();
  MlirOperation func = piperTrainingFunction(module, "piper-shard-sequence");
  if (mlirOperationIsNull(func)) return mlirLogicalResultFailure();
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    bool split = piperIsRingOp(op) ||
                 !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("cp_size")));
    MlirAttribute placed = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (!split || piperCpSize(groups, placed, piperTpSize(module, placed), NULL) > 1) continue;
    char list[128];
    piperDescribeDevices(placed, list, sizeof list);
    MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
    MlirOperation at = op;
    for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
         d = mlirOperationGetNextInBlock(d))
      if (piperOpIs(d, "sched.shard_sequence") &&
          piperFilterMatches(op, mlirOperationGetAttributeByName(d, piperStr("tags")))) {
        at = d;
        break;
      }
    piperEmitErrorf(mlirOperationGetLocation(at),
                    "shard_sequence: the split ops run on %s, which the shard_sequence groups "
                    "do not cut into groups of one size; give one directive per batch replica, "
                    "each over an aligned run of the list", list);
    noteAt(op, "this op");
    return mlirLogicalResultFailure();
  }
  return mlirLogicalResultSuccess();
}

static MlirLogicalResult runShardSequence(MlirOperation module, const char *arg) {
  (void)arg;
  if (mlirLogicalResultIsFailure(piperApplyDirectives(
          module, "sched.shard_sequence", "piper-shard-sequence", applyShardSequence)))
    return mlirLogicalResultFailure();
  return checkCovered(module);
}

MlirPass piperCreateShardSequencePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-shard-sequence", "shard_sequence directive",
                               runShardSequence, arg);
}
