/* The training loop's math beside the plan: the learning-rate schedule (--lr-schedule,
 * --warmup-steps, --min-lr, --total-steps), global-norm gradient clipping (--grad-clip) and
 * the checks of these flags and of --adam-beta1/--adam-beta2/--adam-eps.
 *
 * Clipping. The compiled plan of every device calls prt_grad_sq_accum once for the gradient
 * slice of each of its AdamW updates that counts towards the norm, then prt_grad_norm_sync,
 * and only then its first update (the lowering puts these calls after every non-update op and
 * every wait of a transfer that brings a gradient, before the first op of the update pass; see
 * lowering/lower_to_llvm.c). The slices counted over the whole world are each parameter's
 * elements exactly once: a sharded (ZeRO) update counts the shard it updates, a replicated
 * whole-tensor update only on replica 0, and a parameter has one update in the plan (the tied
 * embedding's copy on the last stage is refreshed from its owner, not updated). So the norm is
 * the one-device norm, summed in another order.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_elastic.h"
#include "prt_schedule.h"

/* ---- learning rate ---- */

int prt_schedule_parse(const char *name, prt_lr_schedule *out, prt_status *st) {
  static const char *const names[] = {"constant", "cosine", "linear"}; /* prt_lr_schedule order */
  for (int i = 0; i < 3; i++)
    if (strcmp(name, names[i]) == 0) {
      *out = (prt_lr_schedule)i;
      return 0;
    }
  return prt_fail(st, 2, "--lr-schedule expects constant, cosine or linear, got '%s': command "
                  "line; run with --help for usage", name);
}

double prt_lr_at(const prt_loop *lp, double lr, int64_t s) {
  int64_t W = lp->warmup, S = lp->total;
  if (s < W) return lr * (double)(s + 1) / (double)W;
  if (lp->schedule == PRT_LR_CONSTANT || S <= W) return lr;
  double u = (double)(s - W) / (double)(S - W);
  if (lp->schedule == PRT_LR_COSINE)
    return lp->min_lr + (lr - lp->min_lr) * 0.5 * (1.0 + cos(M_PI * u));
  return lr + (lp->min_lr - lr) * u; /* linear */
}

int prt_loop_check(const prt_loop *lp, double lr, int64_t steps, prt_status *st) {
  if (lp->grad_clip == 0.0)
    return prt_fail(st, 2, "--grad-clip expects a positive norm, got 0: command line; leave "
                    "the flag out for no clipping");
  if (lp->min_lr > lr)
    return prt_fail(st, 2, "--min-lr %g is above --lr %g: command line; the schedule decays "
                    "from --lr to --min-lr, so pass --min-lr <= --lr", lp->min_lr, lr);
  if (lp->total >= 0 && lp->total < steps)
    return prt_fail(st, 2, "--total-steps %lld is below --steps %lld: command line; the "
                    "schedule must cover every step run", (long long)lp->total,
                    (long long)steps);
  const double *betas[2] = {&lp->beta1, &lp->beta2};
  for (int i = 0; i < 2; i++)
    if (!isnan(*betas[i]) && !(*betas[i] < 1.0))
      return prt_fail(st, 2, "--adam-beta%d expects a number in [0, 1), got %g: command line; "
                      "run with --help for usage", i + 1, *betas[i]);
  if (!isnan(lp->eps) && !(lp->eps > 0.0))
    return prt_fail(st, 2, "--adam-eps expects a positive number, got %g: command line; run "
                    "with --help for usage", lp->eps);
  if (lp->eval_every && !lp->eval_data)
    return prt_fail(st, 2, "--eval-every needs --eval-data (the file to evaluate on): command "
                    "line; run with --help for usage");
  if (lp->eval_data && !lp->eval_every)
    return prt_fail(st, 2, "--eval-data needs --eval-every N (evaluate every N steps): command "
                    "line; run with --help for usage");
  if (lp->eval_data && lp->eval_batches < 1)
    return prt_fail(st, 2, "--eval-batches expects a positive count, got %lld: command line; "
                    "run with --help for usage", (long long)lp->eval_batches);
  return 0;
}

int prt_loop_resolve(prt_loop *lp, int64_t start, int64_t steps, prt_status *st) {
  if (lp->total < 0) lp->total = start + steps; /* the default: the steps of this run */
  else if (lp->total < start + steps)
    return prt_fail(st, 2, "--total-steps %lld is below the last step this run reaches (%lld: "
                    "the checkpoint's %lld plus --steps %lld): command line; pass "
                    "--total-steps >= %lld", (long long)lp->total, (long long)(start + steps),
                    (long long)start, (long long)steps, (long long)(start + steps));
  if (lp->warmup > 0 && lp->warmup >= lp->total)
    return prt_fail(st, 2, "--warmup-steps %lld is not below the schedule's %lld steps: command "
                    "line; warm up for fewer steps than the run (--steps, or --total-steps "
                    "when resuming)", (long long)lp->warmup, (long long)lp->total);
  return 0;
}

/* ---- clipping ---- */

void prt_grad_sq_accum(prt_ctx *ctx, const float *g, int64_t n, int32_t counted) {
  if (!counted) return;
  g = prt_elastic_grad(ctx, g); /* an elastic ZeRO-2/3 rank's k shards (elastic.c) */
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) sum += (double)g[i] * (double)g[i];
  ctx->grad_sq += sum;
}

void prt_grad_norm_sync(prt_ctx *ctx) {
  double sq = ctx->grad_sq;
  const char *was = prt_watch.what;
  prt_watch.what = "the gradient-norm all-reduce";
  prt_comm_allreduce_f64(&sq, 1); /* the runtime's own communicator: never the plan's */
  prt_watch.what = was;
  ctx->grad_sq = 0.0;
  ctx->grad_norm = sqrt(sq);
  ctx->clip_scale = 1.0f;
  if (ctx->grad_clip > 0.0) { /* torch.nn.utils.clip_grad_norm_: fp32 coefficient, clamped */
    float coef = (float)ctx->grad_clip / ((float)ctx->grad_norm + 1e-6f);
    if (coef < 1.0f) ctx->clip_scale = coef;
  }
}
