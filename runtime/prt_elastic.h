/* Elastic runs (elastic.c): a role plan compiled for R replicas run on fewer ranks, each rank
 * standing in for k replicas (prt_elastic in prt_ctx.h holds the state). */
#ifndef PIPER_PRT_ELASTIC_H
#define PIPER_PRT_ELASTIC_H

#include "prt_ctx.h"

/* 1 in a pass whose update is skipped (every pass of an elastic step but the last). */
static inline int prt_elastic_dry(const prt_ctx *ctx) {
  return ctx->elastic.pass < ctx->elastic.k - 1;
}
/* prt_declare_roles on a world smaller than the plan's: this rank's role and first replica,
 * and k; or the refusal (elastic.refusal), printed by the world check. */
void prt_elastic_roles(prt_ctx *ctx, int64_t nroles, const int64_t *start,
                       const int64_t *stride, const int64_t *count);
/* The rank that runs the plan's device `device` (itself unless elastic). */
int64_t prt_elastic_rank(const prt_ctx *ctx, int64_t device);
/* A group's declared members onto ranks (in place, sorted, duplicates dropped): *n shrinks
 * and *folded is set where members now share ranks. */
void prt_elastic_group(const prt_ctx *ctx, int64_t *members, int64_t *n, int *folded);
/* A group family (tensor parallelism) in an elastic run: 0 where every pass of this rank
 * finds its replica's instance on the same ranks, one member a rank; else refuses it
 * (prt_elastic_refuse) naming the group, member and devices. 0 where not elastic. */
int prt_elastic_family(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *base,
                       int64_t stride);
/* A declaration an elastic run cannot honour (an expert, a CP chunk): fails
 * the setup naming `what` and why; 0 where the run is not elastic. */
int prt_elastic_refuse(prt_ctx *ctx, const char *what, const char *why);
/* After setup: 0 where the plan runs on this world (elastic or as compiled); else the
 * refusal, printed by rank 0. Notes the elastic run on rank 0. */
int prt_elastic_check(prt_ctx *ctx, int dump_grads, prt_status *st);
/* Before a folded all-reduce of buf (n floats): sums this pass's gradient into the passes'
 * total, and on the last pass adds that total to buf. */
void prt_elastic_fold(prt_ctx *ctx, float *buf, int64_t n, int64_t group);
/* Before a folded reduce-scatter (ZeRO-2/3; *op checked): sums the input over the passes
 * and points the transfer at that sum and at a k-shard result (the union of the stood-in
 * replicas' shards; the compiled output holds one), which prt_elastic_grad hands the update. */
void prt_elastic_scatter(prt_ctx *ctx, prt_comm_op *op);
/* The gradient an update or the norm reads at g: a folded reduce-scatter's k-shard result
 * where g is its compiled output, else g itself. */
const float *prt_elastic_grad(const prt_ctx *ctx, const float *g);
/* Floats each rank gives an all-gather of n (compiled: one shard) over group: k shards over
 * a folded group, n otherwise. */
int64_t prt_elastic_gather_n(const prt_ctx *ctx, int64_t n, int64_t group);
/* Step s: fills the inputs and runs fn once per pass (once when not elastic). */
struct prt_data;
void prt_elastic_step(prt_ctx *ctx, const struct prt_data *data, int64_t s,
                      void (*fn)(prt_ctx *));
/* This rank's sum of loss * rows over its "loss" outputs (the value prt_dist_loss reduces). */
double prt_local_loss(const prt_ctx *ctx);
void prt_elastic_free(prt_ctx *ctx);

#endif
