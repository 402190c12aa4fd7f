/* Evaluation (--eval-data, --eval-every, --eval-batches): the mean loss of the compiled plan's
 * forward-only step (piper_eval_step: the forward ops and forward transfers of every device's
 * plan, in plan order, proven hang-free by --piper-verify-plan) over K fixed batches of a file.
 *
 * Batch k (k = 0..K-1) reads the windows the training loader gives step k: sample b of the
 * global batch B starts at o = ((k*B + b)*T) mod (N - T - 1) of the eval file (N bytes), inputs
 * data[o : o+T], targets data[o+1 : o+T+1]. Every evaluation uses the same K batches, so the
 * numbers of one run are comparable, and every strategy sees the same rows.
 *
 * No side effects on training: the forward step writes only the arena and the loss outputs,
 * both rewritten by the next training step, and the inputs, which the next step refills; no
 * gradient, no update, no optimizer state, no AdamW step count. */
#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_data.h"
#include "prt_dist.h"
#include "prt_elastic.h"
#include "prt_schedule.h"

static void (*prt_eval_fn)(prt_ctx *); /* the generated piper_eval_step; NULL = none */

void prt_set_eval_step(void (*eval_step)(prt_ctx *)) { prt_eval_fn = eval_step; }

void (*prt_eval_step_fn(void))(prt_ctx *) { return prt_eval_fn; }

double prt_eval_loss(prt_ctx *ctx, const prt_loop *lp, const prt_data *data,
                     void (*eval_step)(prt_ctx *)) {
  const char *was = prt_watch.what;
  double sum = 0.0;
  for (int64_t k = 0; k < lp->eval_batches; k++) {
    prt_span_begin(ctx, "eval", 0);
    prt_watch.what = NULL; /* the plan's transfers: named by the backend */
    prt_elastic_step(ctx, data, k, eval_step); /* the inputs, then the step (k passes) */
    prt_span_end(ctx, 0);
    if (ctx->ops_busy)
      prt_fatal("the evaluation step ended with %lld transfer%s never waited: piper_eval_step "
                "(rank %lld); this is a bug in the compiled plan", (long long)ctx->ops_busy,
                ctx->ops_busy == 1 ? "" : "s", (long long)ctx->rank);
    int stop = 0, sig = 0;
    prt_watch.what = "the evaluation loss all-reduce";
    sum += prt_dist_loss(ctx, 0, 0, &stop, &sig);
  }
  prt_watch.what = was;
  return sum / (double)lp->eval_batches;
}
