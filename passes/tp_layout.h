/* Tensor parallelism's device layout (passes/tp_layout.c): which device lists the module's
 * shard_tensor groups cut into tensor-parallel runs, and what a member's instance of a global
 * op becomes. --piper-shard-tensor (passes/shard_tensor.c) records the groups; replicate,
 * shard_sequence and extract read them. */
#ifndef PIPER_PASSES_TP_LAYOUT_H
#define PIPER_PASSES_TP_LAYOUT_H

#include "passes/strategy.h"

/* A "TP list" is a device list that the module's piper.tp_groups cut into runs of T consecutive
 * entries, one tensor-parallel group per data-parallel replica; position k of it is member
 * k % T of replica k / T. piper.tp_groups lists sorted device lists, each cut into groups of T
 * consecutive entries (piper.tp_size = T where a list holds several; else each list is one
 * group): a stage's replicas are then one list, a range, not a group each. */
/* The module's groups (piper.tp_groups) and *T, their size; null (T 1) without. */
MlirAttribute piperTpGroups(MlirOperation module, int64_t *T);
/* T if `devices` is a TP list, else 1. */
int64_t piperTpSize(MlirOperation module, MlirAttribute devices);
/* The module's groups and, per device-list attribute asked about, its T: a pass that asks for
 * every op holds one (lists are few, ops many; asking piperTpSize costs O(list x groups)). */
typedef struct {
  MlirAttribute groups; /* piper.tp_groups, null without tensor parallelism */
  int64_t T;            /* the size of its groups */
  PiperPtrMap sizeOf;   /* device-list attribute -> T (1: not a TP list) */
} PiperTpLayout;
void piperTpLayoutInit(PiperTpLayout *l, MlirOperation module);
void piperTpLayoutFree(PiperTpLayout *l);
/* T of `devices` (piperTpSize), asked once per distinct (uniqued) device-list attribute. */
int64_t piperTpLayoutSize(PiperTpLayout *l, MlirAttribute devices);
/* For an op on a TP list: divides *replicas and *k (its position in the list) by T, so they
 * count data-parallel replicas (batch slices, ZeRO shards), and returns T; else returns 1. */
int64_t piperTpSplitReplicas(PiperTpLayout *l, MlirOperation op, int64_t *replicas, int64_t *k);
/* Instantiates the TP facts of global op `op` on clone `c`, member flatK % T of a TP list:
 * slice offsets, collective groups narrowed to the member's TP or DP group,
 * gradient-norm counting. Returns true if it destroyed `c` (an op member 0 alone runs). */
bool piperTpInstantiate(MlirOperation c, MlirOperation op, int64_t flatK, int64_t T);

#endif
