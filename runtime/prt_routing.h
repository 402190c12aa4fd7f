/* MoE routing recorded and replayed (routing.c; --routing-record, --routing-replay): a test
 * records the experts every token of a one-device run chose, and replays them in a
 * distributed run, reporting every token whose own choice differs. */
#ifndef PIPER_PRT_ROUTING_H
#define PIPER_PRT_ROUTING_H

#include "prt_ctx.h"

/* Experts a token may be routed to, at most, under record or replay (the flips' arrays). */
#define PRT_ROUTING_MAX_K 8
typedef struct prt_routing prt_routing;
/* The hook prt_moe_topk_fwd calls with its own choices: non-NULL only inside a training step
 * of a run that records or replays. */
extern prt_routing *prt_routing_active;
/* Local. *out = NULL when neither flag is given; else checks the plan can be followed (one
 * device to record; every rank one whole slice of the batch to replay) and opens the
 * recording to replay. Fills st naming the flag on failure (*out then still needs
 * prt_routing_free). */
int prt_routing_open(prt_routing **out, prt_ctx *ctx, const char *record, const char *replay,
                     prt_status *st);
/* Around each training step (not evaluations): routers are counted from 0 within a step, and
 * every step must run as many as the first (and at least one). NULL r: no-ops. */
void prt_routing_step_begin(prt_routing *r, int64_t step);
int prt_routing_step_end(prt_routing *r, prt_status *st);
/* The router's hook: records experts[N][K] (this rank's tokens' choices) or compares them
 * with the recording and overwrites them with it, noting every token that differed. */
void prt_routing_apply(int32_t *experts, const float *logits, int64_t N, int64_t E, int64_t K);
/* Collective, after the last step: the replaying ranks' flips printed by rank 0, one line
 * each and a summary; or the recording written (atomically). */
int prt_routing_finish(prt_routing *r, prt_ctx *ctx, prt_status *st);
void prt_routing_free(prt_routing *r); /* NULL ok */

#endif
