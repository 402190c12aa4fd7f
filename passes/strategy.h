/* What the directive passes share: matching Piper filters against ops, reading the strategy's
 * sched ops, and which values carry the batch dimension.
 *
 * The global training DAG is the training function itself. Every op carries
 *   tags    {PP = 1, layer = 3, mb = 2}: annotation tags, plus the microbatch index after split
 *   pass    "F" (the default when absent), "B", "BI", "BW" or "UPD"
 *   devices [0, 2]: set by place; more than one device = data-parallel replicas of one op,
 *           instantiated per device (with its slice of the batch) by extraction
 * A global-DAG node is the set of ops sharing (tags, pass); the DAG's edges are the SSA values
 * between nodes (data) and the order directives (temporal). Keeping replicas as one op with a
 * device list keeps the IR the size of the model, not of the cluster. */
#ifndef PIPER_PASSES_STRATEGY_H
#define PIPER_PASSES_STRATEGY_H

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"
#include "piper/ptrmap.h"

/* An i64 integer attribute: the device ids, tags and sizes the passes write. */
static inline MlirAttribute piperI64Attr(MlirContext ctx, int64_t v) {
  return mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), v);
}
/* Device lists, in either form (an array of ids or a range: include/piper/piper.h): the number
 * of ids, id i, the position of id d or -1 (O(1) in a range), and the canonical list of ids. */
static inline intptr_t piperListLen(MlirAttribute list) { return piperDeviceListLen(list); }
static inline int64_t piperListAt(MlirAttribute list, intptr_t i) {
  return piperDeviceListAt(list, i);
}
static inline intptr_t piperListFind(MlirAttribute list, int64_t d) {
  return piperDeviceListFind(list, d);
}
static inline MlirAttribute piperListGet(MlirContext ctx, const int64_t *ids, intptr_t n) {
  return piperDeviceListGet(ctx, ids, n);
}

/* "F" when the op has no pass attribute. */
const char *piperOpPass(MlirOperation op, char *buf, size_t size);
/* True if every entry of `filter` holds for `op`: tag entries compare the op's tags (an
 * integer index, or "*" for any index of that tag), PASS compares the op's pass. */
bool piperFilterMatches(MlirOperation op, MlirAttribute filter);
/* The function holding the training graph, or null after an error at the module. */
MlirOperation piperTrainingFunction(MlirOperation module, const char *passName);
/* True if result `i` of `op` has the batch as its leading dimension (activations and their
 * gradients), false for parameters, optimizer state, weight gradients and the loss. */
bool piperResultIsBatched(MlirOperation op, intptr_t i);
/* `t` with its leading dimension divided by `parts`. */
MlirType piperSplitBatch(MlirType t, int64_t parts);
/* Sets or replaces entry `key` of op's `tags` dictionary. */
void piperSetTag(MlirOperation op, const char *key, int64_t value);
/* A printf-formatted error at `directive`, i.e. at the directive's line:col in the strategy
 * file the user wrote. */
void piperDirectiveError(MlirOperation directive, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A device list as "[0, 1, 2]" for diagnostics, cut to "...]" within `size` bytes. */
void piperDescribeDevices(MlirAttribute devices, char *buf, size_t size);

/* Calls `apply` on each `directive` op ("sched.split") of the module, in order, with the
 * training graph's body; stops at the first failure. */
typedef MlirLogicalResult (*PiperDirectiveFn)(MlirOperation directive, MlirBlock body);
MlirLogicalResult piperApplyDirectives(MlirOperation module, const char *directive,
                                       const char *passName, PiperDirectiveFn apply);

/* ---- the order directive (passes/order.c) ---- */
/* Calls `fn` with the node (the filter without its PASS entry) of each filter of the module's
 * order directives that names PASS "BI" or "BW", in order; stops at the first failure. */
typedef MlirLogicalResult (*PiperOrderNodeFn)(MlirAttribute node, void *userData);
MlirLogicalResult piperOrderForEachSplitNode(MlirOperation module, PiperOrderNodeFn fn,
                                             void *userData);
/* One op of a device's plan while it is being ordered. */
typedef struct {
  MlirOperation op; /* in the global DAG */
  size_t position;  /* program position */
  int64_t rank;     /* execution rank on the device, set by piperOrderDevice */
} PiperScheduled;
/* Sorts the n ops of device d (`position` set, in program order) into the order it runs them
 * in, under the directive of `orders` that governs the device, which *order receives (null if
 * none does). Failure after an error at the directive: an order cycle. */
MlirLogicalResult piperOrderDevice(const MlirOperation *orders, size_t nOrders, int64_t d,
                                   PiperScheduled *s, size_t n, MlirOperation *order);
/* piper.order on a device function: "FILE:LINE:COL" of the order directive that ordered it,
 * at most this many bytes with the NUL. */
enum { PIPER_ORDER_WHERE_MAX = 4096 };
/* Records piper.order on plan function `fn` when `order` (may be null) has a file location. */
void piperOrderRecord(MlirOperation fn, MlirOperation order);
/* The location piper.order of `deviceFn` names, or false if it has none (or a malformed one). */
bool piperOrderDirectiveLoc(MlirOperation deviceFn, MlirLocation *loc);

/* Applies one `shard` directive (expert parallelism, passes/shard.c) to the placed training
 * graph `body`; --piper-shard calls it for every shard directive, after --piper-place. */
MlirLogicalResult piperApplyShard(MlirOperation directive, MlirBlock body);

/* ---- context parallelism (passes/shard_sequence.c) ----
 * A "CP list" is a device list that the module's piper.cp_groups cut into runs of G
 * consecutive entries (one context-parallel group each); position k of it is member k % G of
 * batch replica k / G. */
/* The module's groups (piper.cp_groups: a list of device lists), null without. */
MlirAttribute piperCpGroups(MlirOperation module);
/* G if `devices` is a CP list of `groups`, else 1. With tensor parallelism (T > 1: `devices`
 * cut into runs of T, tensor-parallel groups) a group's members may also be T entries apart:
 * position (b*G + c)*T + t is member c of the group of (b, t). *stride (if not null) gets the
 * distance, 1 or T. */
int64_t piperCpSize(MlirAttribute groups, MlirAttribute devices, int64_t T, int64_t *stride);
/* The module's groups and, per device-list attribute asked about, its G: extraction asks for
 * every op on every device (lists are few, ops many; piperCpSize costs O(list x groups)). */
typedef struct {
  MlirAttribute groups; /* piper.cp_groups, null without context parallelism */
  PiperPtrMap sizeOf;   /* device-list attribute -> G (1: not a CP list) */
} PiperCpLayout;
void piperCpLayoutInit(PiperCpLayout *l, MlirOperation module);
void piperCpLayoutFree(PiperCpLayout *l);
/* For an op on a CP list (its tensor-parallel size T, 1 without): divides *replicas and *k
 * (already divided by T) by G, so they count batch replicas (the members of a group hold the
 * same batch rows), sets *stride (piperCpSize) and returns G; else returns 1. */
int64_t piperCpSplitReplicas(PiperCpLayout *l, MlirOperation op, int64_t T, int64_t *replicas,
                             int64_t *k, int64_t *stride);
/* Instantiates the CP facts of global op `op` on clone `c`, position flatK of a CP list of
 * groups of G, members `stride` entries apart: cp_rank = (flatK / stride) % G where the op has
 * cp_size, a ring op's group narrowed to the member's group, an expert all-to-all's to the
 * members of the same rank. */
void piperCpInstantiate(MlirOperation c, MlirOperation op, int64_t flatK, int64_t G,
                        int64_t stride);

#endif
