/* The training loop's math (schedule.c, eval.c): the learning-rate schedule, clipping and
 * AdamW overrides, and the evaluation loss. */
#ifndef PIPER_PRT_SCHEDULE_H
#define PIPER_PRT_SCHEDULE_H

#include "prt_ctx.h"
#include "prt_data.h"

/* --lr-schedule; keep in sync with the names in prt_schedule_parse. */
typedef enum { PRT_LR_CONSTANT = 0, PRT_LR_COSINE = 1, PRT_LR_LINEAR = 2 } prt_lr_schedule;

/* The loop flags beside the plan: schedule, clipping, AdamW overrides, evaluation. */
typedef struct prt_loop {
  prt_lr_schedule schedule; /* --lr-schedule (constant) */
  int64_t warmup;           /* --warmup-steps W (0) */
  double min_lr;            /* --min-lr (0): where cosine and linear end */
  int64_t total;            /* --total-steps S; -1 = not given (then K + --steps) */
  double grad_clip;         /* --grad-clip G; -1 = not given (no clipping); 0 is refused */
  double beta1, beta2, eps; /* --adam-beta1/2, --adam-eps; NAN = the plan's attributes */
  const char *eval_data;    /* --eval-data FILE, borrowed; NULL = no evaluation */
  int64_t eval_every;       /* --eval-every N (0 = never) */
  int64_t eval_batches;     /* --eval-batches K (default 1) */
} prt_loop;

/* "constant" | "cosine" | "linear" -> *out; 2 with a message otherwise. */
int prt_schedule_parse(const char *name, prt_lr_schedule *out, prt_status *st);
/* The learning rate of step s (0-based), for lp->total resolved: lr*(s+1)/W while s < W;
 * then, with u = (s-W)/(S-W): constant lr, cosine min + (lr-min)*0.5*(1+cos(pi*u)), linear
 * lr + (min-lr)*u. */
double prt_lr_at(const prt_loop *lp, double lr, int64_t s);
/* Collective, every --eval-every steps after step s: the mean over batches k = 0..K-1 of the
 * loss of `eval_step` on batch k of `data` (the windows prt_data_fill gives step k), through
 * prt_dist_loss like a training step's. Touches no parameter, gradient or optimizer state. */
/* What prt_set_eval_step recorded (NULL: the binary has no evaluation step). */
void (*prt_eval_step_fn(void))(prt_ctx *);
double prt_eval_loss(prt_ctx *ctx, const prt_loop *lp, const prt_data *data,
                     void (*eval_step)(prt_ctx *));
/* Checks of the parsed flags that need no checkpoint (exit 2 on failure). */
int prt_loop_check(const prt_loop *lp, double lr, int64_t steps, prt_status *st);
/* Once the first step K is known: sets the schedule length (K + steps unless --total-steps)
 * and checks it against the warm-up and the steps run (exit 2 on failure). */
int prt_loop_resolve(prt_loop *lp, int64_t start, int64_t steps, prt_status *st);

#endif
