/* --piper-shard: the `shard` directive (expert parallelism), run after --piper-place, once every
 * op is placed.
 *
 * {"op":"shard","filter":{"PP":0,"EP":"*"},"devices":[0,2],"stream":"ep_stream"}: the devices
 * are the data-parallel replicas of the stage whose expert computation (tdag.moe_experts and
 * its gradients) the filter selects. With G devices and E experts (G divides E), replica g owns
 * experts [g*E/G, (g+1)*E/G): their parameters, AdamW state, updates and weight gradients are
 * placed on that device alone (marked `ep_local`, so insert-comm and replicate leave them
 * there: expert gradients are not reduced over the group). Every MoE op of the block gets
 * `groups = G`, and the rows it moves are re-sized to the static bound G*N*min(K, E/G) (N the
 * tokens before the replicas' split: each replica then holds G blocks of cap = N/G*min(K,E/G)
 * rows, one per destination). Five comm.all_to_all over the devices exchange the blocks:
 *   forward   the dispatched rows and the per-expert counts (after moe_dispatch), the experts'
 *             output rows (after moe_experts, back to the tokens' replicas)
 *   backward  the output rows' gradient (after moe_combine_grad, to the experts' replicas) and
 *             the rows' gradient (after moe_experts_grad_input, back)
 * Each all-to-all carries its producer's tags and pass, so an order directive moves it with
 * that node, on the directive's stream. Extraction gives each replica's moe_experts and
 * moe_experts_grad_input only its own experts' weights (extract.c, epLocalWeights). Each expert
 * parameter and moment also gets ep_expert, where its index sits in its name, so one plan per
 * role serves every replica (markExpertNames below).
 *
 * With tensor parallelism (shard_tensor directives whose groups cut the devices into runs of T,
 * shardTensorRuns) the experts split over the G = devices / T data-parallel replicas instead:
 * expert e is placed on every member of run e / (E/G) (the MoE block runs replicated in a
 * group), and extraction narrows each all-to-all's group to the members with the same position
 * in their runs, as for a data-parallel reduction. Context-parallel groups (shard_sequence
 * directives) cut the devices the same way; their members route different positions, so
 * shard_sequence.c all-reduces each expert's weight gradient over its owner group.
 *
 * Diagnostics at the directive: a filter that selects no tdag.moe_experts; devices that are not
 * the selected experts' replicas; experts not divisible by the device count; an expert block
 * selected by two shard directives; shard_tensor groups that do not cut the devices into runs;
 * a filter that selects some of the blocks sharing the experts' weights but not all (one
 * microbatch's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/checked.h"

static int byValue(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* `devices` sorted ascending, as place stores them (uniqued: comparable by pointer). */
static MlirAttribute sortedDevices(MlirContext ctx, MlirAttribute devices) {
  if (piperDeviceListIsRange(devices, NULL)) return devices; /* ascending already */
  intptr_t n;
  int64_t *ids = piperDeviceListIds(devices, &n);
  if (!ids) return devices;
  qsort(ids, n, sizeof *ids, byValue);
  MlirAttribute sorted = piperListGet(ctx, ids, n);
  free(ids);
  return sorted;
}

typedef struct {
  MlirContext ctx;
  MlirBlock body;
  MlirAttribute devices; /* the stage's replicas, sorted: the group of every all-to-all */
  MlirAttribute stream;  /* the directive's stream, or null */
  int64_t G;             /* expert groups: the devices, or with tensor parallelism the
                          * data-parallel replicas (devices / T) */
  int64_t T;             /* tensor-parallel group size (shardTensorRuns), 1 without */
} Sharder;

/* The user of `v` that is op `name`, or null. */
static MlirOperation userNamed(MlirValue v, const char *name) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (piperOpIs(mlirOpOperandGetOwner(u), name)) return mlirOpOperandGetOwner(u);
  return (MlirOperation){NULL};
}

/* `v` with its leading dim set to `rows`. */
static void setRows(MlirValue v, int64_t rows) {
  MlirType t = mlirValueGetType(v);
  int64_t r = piperTensorRank(t);
  int64_t shape[8];
  for (int64_t d = 0; d < r && d < 8; ++d) shape[d] = piperTensorDim(t, d);
  shape[0] = rows;
  mlirValueSetType(v, mlirRankedTensorTypeGet(r, shape, mlirShapedTypeGetElementType(t),
                                              mlirAttributeGetNull()));
}

/* comm.all_to_all of `v` right after its producer, with the producer's tags and pass; every
 * other reader of `v` now reads the exchanged value. */
static void exchange(Sharder *s, MlirValue v) {
  MlirOperation producer = mlirOpResultGetOwner(v);
  MlirType types[2] = {mlirValueGetType(v), mlirTypeParseGet(s->ctx, piperStr("!comm.token"))};
  MlirNamedAttribute attrs[3] = {piperNamedAttr(s->ctx, "group", s->devices),
                                 piperNamedAttr(s->ctx, "devices", s->devices),
                                 piperNamedAttr(s->ctx, "stream", s->stream)};
  MlirOperation a2a = piperOpCreate("comm.all_to_all", mlirOperationGetLocation(producer), 1, &v,
                                    2, types, mlirAttributeIsNull(s->stream) ? 2 : 3, attrs);
  mlirBlockInsertOwnedOperationAfter(s->body, producer, a2a);
  static const char *copied[] = {"tags", "pass"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(producer, piperStr(copied[i]));
    if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(a2a, piperStr(copied[i]), a);
  }
  mlirValueReplaceAllUsesExcept(v, mlirOperationGetResult(a2a, 0), 1, &a2a);
}

/* Puts `op` on `device` alone, marked ep_local. */
static void placeLocal(Sharder *s, MlirOperation op, MlirAttribute device) {
  mlirOperationSetAttributeByName(op, piperStr("devices"), device);
  mlirOperationSetAttributeByName(op, piperStr("ep_local"), mlirUnitAttrGet(s->ctx));
}

/* The ops that carry expert parameter `p`'s gradient to its update (the per-expert weight
 * gradients and, after a split, their sums over microbatches), and the update with its AdamW
 * state: all on the owner `device`. */
static void placeGradientChain(Sharder *s, MlirValue g, MlirAttribute device) {
  if (!mlirValueIsAOpResult(g)) return;
  MlirOperation op = mlirOpResultGetOwner(g);
  if (piperOpIs(op, "tdag.moe_experts_grad_weight")) return; /* placed with its expert */
  if (!piperOpIs(op, "tdag.add")) return;
  placeLocal(s, op, device);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    placeGradientChain(s, mlirOperationGetOperand(op, i), device);
}

static void placeParam(Sharder *s, MlirValue p, MlirAttribute device) {
  if (!mlirValueIsAOpResult(p)) return;
  placeLocal(s, mlirOpResultGetOwner(p), device);
  for (MlirOpOperand u = mlirValueGetFirstUse(p); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation upd = mlirOpOperandGetOwner(u);
    if (!piperOpIs(upd, "tdag.adamw")) continue;
    placeLocal(s, upd, device);
    for (int i = 2; i < 4; ++i) placeLocal(s, mlirOpResultGetOwner(mlirOperationGetOperand(upd, i)), device);
    placeGradientChain(s, mlirOperationGetOperand(upd, 1), device);
  }
}

/* ---- expert names for plans per role (extract.c, lower_to_llvm.c, prt_declare_expert) ----
 * Replica g's plan is replica 0's with every expert index shifted by g * El, if the experts'
 * names differ only in that index. For each weight group, the decimal run "0" in expert 0's
 * name is the index if expert e's name is that name with e in its place, for every e (the
 * first such run: "layers.0.mlp.experts.0" tries the layer's "0" first, which expert 1's name
 * refutes). Then each expert parameter and its AdamW moments get
 * ep_expert = [at, len, e, El]: its index e is the `len` digits at byte `at` of the parameter's
 * name, and the owner replica k holds index e % El + k * El. Names of any other form get no
 * ep_expert, and extract keeps one plan per device. */

/* The name of expert parameter `v` (a heap copy), or NULL if it is not a tdag.param's. */
static char *expertName(MlirValue v) {
  if (!mlirValueIsAOpResult(v) || !piperOpIs(mlirOpResultGetOwner(v), "tdag.param")) return NULL;
  MlirAttribute a = mlirOperationGetAttributeByName(mlirOpResultGetOwner(v), piperStr("name"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return NULL;
  MlirStringRef r = mlirStringAttrGetValue(a);
  return strndup(r.data, r.length);
}

/* Byte offset of the expert index in the names of group w's E experts, or -1. */
static int64_t expertIndexAt(MlirOperation x, int w, int64_t E) {
  char *n0 = expertName(mlirOperationGetOperand(x, 2 + w * E));
  if (!n0) return -1;
  size_t len = strlen(n0);
  int64_t found = -1;
  for (size_t at = 0; at < len && found < 0; ++at) {
    bool run = n0[at] == '0' && (at == 0 || n0[at - 1] < '0' || n0[at - 1] > '9') &&
               (n0[at + 1] < '0' || n0[at + 1] > '9');
    bool all = run;
    for (int64_t e = 1; e < E && all; ++e) {
      char *ne = expertName(mlirOperationGetOperand(x, 2 + w * E + e));
      char digits[24];
      int dl = snprintf(digits, sizeof digits, "%lld", (long long)e);
      all = ne && strlen(ne) == len - 1 + (size_t)dl && !strncmp(ne, n0, at) &&
            !strncmp(ne + at, digits, (size_t)dl) && !strcmp(ne + at + dl, n0 + at + 1);
      free(ne);
    }
    if (all) found = (int64_t)at;
  }
  free(n0);
  return found;
}

static void markExpertNames(Sharder *s, MlirOperation x, int64_t E, int64_t El) {
  for (int w = 0; w < 3; ++w) {
    int64_t at = expertIndexAt(x, w, E);
    if (at < 0) continue;
    for (int64_t e = 0; e < E; ++e) {
      char digits[24];
      int dl = snprintf(digits, sizeof digits, "%lld", (long long)e);
      MlirAttribute v[4] = {piperI64Attr(s->ctx, at), piperI64Attr(s->ctx, dl), piperI64Attr(s->ctx, e),
                            piperI64Attr(s->ctx, El)};
      MlirAttribute mark = mlirArrayAttrGet(s->ctx, 4, v);
      MlirValue p = mlirOperationGetOperand(x, 2 + w * E + e);
      mlirOperationSetAttributeByName(mlirOpResultGetOwner(p), piperStr("ep_expert"), mark);
      for (MlirOpOperand u = mlirValueGetFirstUse(p); !mlirOpOperandIsNull(u);
           u = mlirOpOperandGetNextUse(u)) {
        MlirOperation upd = mlirOpOperandGetOwner(u);
        if (!piperOpIs(upd, "tdag.adamw")) continue;
        for (int i = 2; i < 4; ++i) {
          MlirValue m = mlirOperationGetOperand(upd, i);
          if (mlirValueIsAOpResult(m) && piperOpIs(mlirOpResultGetOwner(m), "tdag.adam_state"))
            mlirOperationSetAttributeByName(mlirOpResultGetOwner(m), piperStr("ep_expert"), mark);
        }
      }
    }
  }
}

/* The devices that own replica g's experts: its device, or with tensor parallelism every
 * member of its group (the MoE block runs replicated in the group). Null if out of memory. */
static MlirAttribute ownerDevices(Sharder *s, int64_t g) {
  int64_t *devs = malloc((size_t)s->T * sizeof *devs);
  if (!devs) return (MlirAttribute){NULL};
  for (int64_t t = 0; t < s->T; ++t) devs[t] = piperListAt(s->devices, g * s->T + t);
  MlirAttribute list = piperListGet(s->ctx, devs, s->T);
  free(devs);
  return list;
}

/* One moe_experts op `x` (one microbatch's expert block): groups, rows, exchanges, owners. */
static MlirLogicalResult shardBlock(Sharder *s, MlirOperation directive, MlirOperation x) {
  MlirValue rows = mlirOperationGetOperand(x, 0);
  MlirOperation dispatch = mlirValueIsAOpResult(rows) ? mlirOpResultGetOwner(rows)
                                                      : (MlirOperation){NULL};
  if (mlirOperationIsNull(dispatch) || !piperOpIs(dispatch, "tdag.moe_dispatch")) {
    piperDirectiveError(directive, "shard: the selected tdag.moe_experts does not read the rows "
                                   "of a tdag.moe_dispatch; expert parallelism needs the "
                                   "dispatch/experts/combine block piper-gen writes");
    return mlirLogicalResultFailure();
  }
  int64_t E = (mlirOperationGetNumOperands(x) - 2) / 3, G = s->G;
  if (E % G && s->T > 1) {
    /* with tensor parallelism the experts split over the groups, not the devices: name the
     * count the user changes (the groups listed) and the device count they read */
    piperDirectiveError(directive, "shard: %lld experts are not divisible by the %lld "
                                   "tensor-parallel groups of these %lld devices (each group "
                                   "of %lld owns a share of the experts); list a number of "
                                   "groups that divides %lld",
                        (long long)E, (long long)G, (long long)(G * s->T), (long long)s->T,
                        (long long)E);
    return mlirLogicalResultFailure();
  }
  if (E % G) {
    piperDirectiveError(directive, "shard: %lld experts are not divisible by the %lld devices; "
                                   "give a device count that divides %lld",
                        (long long)E, (long long)G, (long long)E);
    return mlirLogicalResultFailure();
  }
  if (E != piperGetIntAttr(dispatch, "num_experts", -1)) {
    piperDirectiveError(directive, "shard: the selected tdag.moe_experts holds %lld experts, "
                                   "its dispatch %lld", (long long)E,
                        (long long)piperGetIntAttr(dispatch, "num_experts", -1));
    return mlirLogicalResultFailure();
  }
  int64_t El = E / G;
  MlirValue experts = mlirOperationGetOperand(dispatch, 1);
  MlirType exT = mlirValueGetType(experts);
  int64_t K = piperTensorDim(exT, -1), N = piperTensorNumel(exT) / K;
  int64_t R = G * N * (K < El ? K : El);

  /* the block's ops: forward, then the backward autodiff wrote (absent in an inference graph) */
  MlirValue out = mlirOperationGetResult(x, 0), hidden = mlirOperationGetResult(x, 1);
  MlirOperation combine = userNamed(out, "tdag.moe_combine");
  MlirOperation combineGrad = userNamed(out, "tdag.moe_combine_grad");
  MlirOperation gradIn = userNamed(hidden, "tdag.moe_experts_grad_input");
  MlirOperation dispatchGrad = mlirOperationIsNull(gradIn)
                                   ? (MlirOperation){NULL}
                                   : userNamed(mlirOperationGetResult(gradIn, 0),
                                               "tdag.moe_dispatch_grad");
  MlirOperation block[6] = {dispatch, x, combine, combineGrad, gradIn, dispatchGrad};
  for (int i = 0; i < 6; ++i)
    if (!mlirOperationIsNull(block[i]))
      mlirOperationSetAttributeByName(block[i], piperStr("groups"), piperI64Attr(s->ctx, G));
  for (MlirOpOperand u = mlirValueGetFirstUse(hidden); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (piperOpIs(mlirOpOperandGetOwner(u), "tdag.moe_experts_grad_weight"))
      mlirOperationSetAttributeByName(mlirOpOperandGetOwner(u), piperStr("groups"),
                                      piperI64Attr(s->ctx, G));

  /* rows: the static bound of G destinations */
  setRows(mlirOperationGetResult(dispatch, 0), R);
  setRows(out, R);
  setRows(hidden, R);
  if (!mlirOperationIsNull(combineGrad)) setRows(mlirOperationGetResult(combineGrad, 0), R);
  if (!mlirOperationIsNull(gradIn)) setRows(mlirOperationGetResult(gradIn, 0), R);

  /* the exchanges, in program order of their producers */
  exchange(s, mlirOperationGetResult(dispatch, 0));
  exchange(s, mlirOperationGetResult(dispatch, 1));
  exchange(s, out);
  if (!mlirOperationIsNull(combineGrad)) exchange(s, mlirOperationGetResult(combineGrad, 0));
  if (!mlirOperationIsNull(gradIn)) exchange(s, mlirOperationGetResult(gradIn, 0));

  /* each expert's weight-gradient op (the first reader of `hidden` for it), found in one
   * pass over the readers: a search per expert is O(E^2), minutes at thousands of experts */
  MlirOperation *gradOf = calloc((size_t)E, sizeof *gradOf);
  if (!gradOf) {
    piperDirectiveError(directive, "shard: out of memory");
    return mlirLogicalResultFailure();
  }
  for (MlirOpOperand u = mlirValueGetFirstUse(hidden); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation gw = mlirOpOperandGetOwner(u);
    int64_t e = piperOpIs(gw, "tdag.moe_experts_grad_weight") ? piperGetIntAttr(gw, "expert", -1)
                                                              : -1;
    if (e >= 0 && e < E && mlirOperationIsNull(gradOf[e])) gradOf[e] = gw;
  }
  /* owners: expert e on replica e / El; its weight gradients keep the local index e % El */
  for (int64_t e = 0; e < E; ++e) {
    MlirAttribute device = ownerDevices(s, e / El);
    if (mlirAttributeIsNull(device)) {
      piperDirectiveError(directive, "shard: out of memory");
      free(gradOf);
      return mlirLogicalResultFailure();
    }
    for (int w = 0; w < 3; ++w) placeParam(s, mlirOperationGetOperand(x, 2 + w * E + e), device);
    if (!mlirOperationIsNull(gradOf[e])) {
      placeLocal(s, gradOf[e], device);
      mlirOperationSetAttributeByName(gradOf[e], piperStr("expert"), piperI64Attr(s->ctx, e % El));
    }
  }
  free(gradOf);
  markExpertNames(s, x, E, El);
  return mlirLogicalResultSuccess();
}

/* Tensor parallelism with expert parallelism: T if the module's shard_tensor directives (see
 * shard_tensor.c) cut `devices` (sorted) into aligned runs of T devices, each a group; 1 if no
 * group holds any of them; 0 (after an error at the directive) if groups hold some of them
 * without that layout (shard_tensor checks the groups themselves later). The experts then split over the runs (the data-parallel replicas), and
 * each all-to-all pairs member t of a run with member t of the others (extraction narrows its
 * group as for a data-parallel reduction). */
/* Whether a directive named `name` lists one of `devices`. */
static bool groupOnDevices(MlirBlock top, const char *name, MlirAttribute devices) {
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (!piperOpIs(op, name) || !piperDeviceListCheck(g, PIPER_MAX_DEVICES)) continue;
    for (intptr_t i = 0; i < piperListLen(g); ++i) /* a group is small; devices a range */
      if (piperListFind(devices, piperListAt(g, i)) >= 0) return true;
  }
  return false;
}

static int64_t shardTensorRuns(MlirOperation directive, MlirAttribute devices) {
  MlirBlock top = mlirOperationGetBlock(directive);
  if (groupOnDevices(top, "sched.shard_tensor", devices) &&
      groupOnDevices(top, "sched.shard_sequence", devices)) {
    /* the experts would split over one kind of group; their owners would need the other's
     * reductions too (not done) */
    piperDirectiveError(directive, "shard: expert parallelism over devices that are cut into "
                                   "both tensor-parallel (shard_tensor) and context-parallel "
                                   "(shard_sequence) groups is not supported yet; drop one of "
                                   "them");
    return 0;
  }
  intptr_t n = piperListLen(devices), T = 0;
  bool any = false, aligned = n > 0;
  for (intptr_t j = 0; j < n; ++j) {
    int64_t d = piperListAt(devices, j);
    MlirAttribute group = {NULL};
    for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op)) {
      /* context-parallel groups (shard_sequence) cut the list the same way: the experts
       * split over the groups, each member exchanging with its peers of the same position */
      if (!piperOpIs(op, "sched.shard_tensor") && !piperOpIs(op, "sched.shard_sequence"))
        continue;
      MlirAttribute g = mlirOperationGetAttributeByName(op, piperStr("devices"));
      /* hand-written IR may hold anything: shard_tensor reports it */
      if (!piperDeviceListCheck(g, PIPER_MAX_DEVICES) || group.ptr) continue;
      g = sortedDevices(mlirOperationGetContext(directive), g);
      intptr_t at = piperListFind(g, d);
      int64_t G = piperGetIntAttr(op, "group_size", piperListLen(g)); /* groups of G in g */
      if (at < 0 || G < 1 || G > PIPER_MAX_DEVICES || piperListLen(g) % G) continue;
      int64_t *ids = malloc((size_t)G * sizeof *ids);
      for (int64_t t = 0; ids && t < G; ++t) ids[t] = piperListAt(g, at - at % G + t);
      if (ids) group = piperListGet(mlirOperationGetContext(directive), ids, G);
      free(ids);
    }
    if (!group.ptr) {
      aligned = false;
      continue;
    }
    any = true;
    intptr_t t = piperListLen(group);
    if (!T) T = t;
    /* member j % T of run j / T must be the group's (j % T)-th device */
    aligned = aligned && t == T && n % T == 0 && piperListAt(group, j % T) == d;
  }
  if (!any) return 1;
  if (!aligned) {
    piperDirectiveError(directive, "shard: the shard_tensor groups do not cut these devices "
                                   "(sorted) into runs of consecutive devices, one "
                                   "tensor-parallel group per data-parallel replica, as "
                                   "piper-sched --tp --ep writes them");
    return 0;
  }
  return T;
}

/* A tdag.moe_experts outside `filter` that reads one of the expert weights of the selected
 * block `x` (the same block of another microbatch, when the filter names one), or null:
 * sharding `x` moves those weights to their owners, away from the devices it runs on. */
static MlirOperation unselectedSharer(MlirOperation x, MlirAttribute filter) {
  for (intptr_t i = 2; i < mlirOperationGetNumOperands(x); ++i)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetOperand(x, i));
         !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
      MlirOperation other = mlirOpOperandGetOwner(u);
      if (piperOpIs(other, "tdag.moe_experts") && !piperFilterMatches(other, filter)) return other;
    }
  return (MlirOperation){NULL};
}

MlirLogicalResult piperApplyShard(MlirOperation directive, MlirBlock body) {
  MlirContext ctx = mlirOperationGetContext(directive);
  MlirAttribute filter = mlirOperationGetAttributeByName(directive, piperStr("filter"));
  Sharder s = {ctx, body,
               sortedDevices(ctx, mlirOperationGetAttributeByName(directive, piperStr("devices"))),
               mlirOperationGetAttributeByName(directive, piperStr("stream")), 0, 1};
  s.G = piperListLen(s.devices);
  s.T = shardTensorRuns(directive, s.devices);
  if (!s.T) return mlirLogicalResultFailure();
  s.G /= s.T;
  /* the expert blocks first: sharding inserts ops */
  MlirOperation *blocks = NULL;
  size_t n = 0, cap = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "tdag.moe_experts") || !piperFilterMatches(op, filter)) continue;
    if (!piperGrow((void **)&blocks, &cap, n + 1, sizeof *blocks)) {
      piperDirectiveError(directive, "shard: out of memory");
      free(blocks);
      return mlirLogicalResultFailure();
    }
    blocks[n++] = op;
  }
  MlirLogicalResult status = mlirLogicalResultSuccess();
  if (!n) {
    piperDirectiveError(directive, "shard: the filter selects no expert computation (no "
                                   "tdag.moe_experts op); the experts carry the tag EP in "
                                   "piper-gen's MoE models, e.g. {\"PP\": 0, \"EP\": \"*\"}");
    status = mlirLogicalResultFailure();
  }
  for (size_t i = 0; i < n && mlirLogicalResultIsSuccess(status); ++i) {
    MlirAttribute placed = mlirOperationGetAttributeByName(blocks[i], piperStr("devices"));
    if (!mlirAttributeIsNull(mlirOperationGetAttributeByName(blocks[i], piperStr("groups")))) {
      piperDirectiveError(directive, "shard: these experts are already sharded by an earlier "
                                     "shard directive; give each stage's experts one");
      status = mlirLogicalResultFailure();
    } else if (mlirAttributeIsNull(placed) || !mlirAttributeEqual(placed, s.devices)) {
      char want[256] = "?", have[256] = "?";
      piperDescribeDevices(s.devices, want, sizeof want);
      if (!mlirAttributeIsNull(placed)) piperDescribeDevices(placed, have, sizeof have);
      piperDirectiveError(directive, "shard: devices %s are not the replicas of the selected "
                                     "experts' stage, which is placed on %s; list the stage's "
                                     "data-parallel replicas", want, have);
      status = mlirLogicalResultFailure();
    } else if (!mlirOperationIsNull(unselectedSharer(blocks[i], filter))) {
      piperDirectiveError(directive, "shard: the filter selects some of the expert blocks that "
                                     "share these experts' weights but not all (one microbatch's, "
                                     "say); select every block of the stage, e.g. "
                                     "{\"PP\": 0, \"EP\": \"*\"} without mb");
      piperEmitNotef(mlirOperationGetLocation(unselectedSharer(blocks[i], filter)),
                     "shard: this block reads the same expert weights and is not selected");
      status = mlirLogicalResultFailure();
    } else if (s.G > 1) {
      status = shardBlock(&s, directive, blocks[i]);
    }
  }
  free(blocks);
  return status;
}

static MlirLogicalResult runShard(MlirOperation module, const char *arg) {
  return piperApplyDirectives(module, "sched.shard", "piper-shard", piperApplyShard);
}

MlirPass piperCreateShardPass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-shard", "shard directive", runShard, arg);
}
