/* MoE routing, recorded and replayed (--routing-record, --routing-replay): how a test holds a
 * mixed-precision MoE plan to the one-device run precisely.
 *
 * Routing is not continuous: a token whose two best router logits are within a rounding step of
 * each other goes to another expert once two runs differ in one bit, and then that token's
 * whole contribution moves to another expert. Two correct runs of a bf16 MoE (one device, and
 * a plan that sums its gradients in another order) differ in the last bit from the first
 * reduction on, so which tokens flip, and when, depends on the processor's BLAS kernels. So:
 *   - the one-device run records every token's expert choices, every step and every router
 *     (--routing-record FILE: a safetensors file, tensor "routing.step<S>.site<I>" of shape
 *     (tokens, K) holding the expert ids of router I, the I-th moe_topk of step S, for every
 *     token of the global batch in row order);
 *   - the plan replays them (--routing-replay FILE): each moe_topk still picks its own experts,
 *     the runtime compares them with the recorded ones, then routes by the recording and
 *     weights the recorded experts by the plan's own router probabilities. Every token thus
 *     goes where it went on one device, so the plan's parameters can be compared with one
 *     device's at bounds that do not have to admit a flipped token;
 *   - every token whose own choice differed is a flip; rank 0 prints each (step, router,
 *     token, the two choices and the logit gap between what it chose and what was recorded)
 *     and a summary line. A test bounds their number and their gaps: a flip from rounding has
 *     a gap of a rounding step, a wrong plan (a router fed the wrong rows) flips many tokens
 *     by whole logits.
 * The hook is the CPU kernel prt_moe_topk_fwd's; it is active only inside training steps (an
 * evaluation routes on its own). A rank's tokens are rows first_sample * T ... of the global
 * batch, from its one "tokens" input, so replay runs plans whose ranks each hold one whole
 * slice of the batch (data, expert and tensor parallelism, one microbatch) and refuses the
 * others. */
#include "prt_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/checked.h"

/* One flipped token, as rank 0 reports it. Plain data: gathered over ranks as bytes. */
typedef struct prt_flip {
  int64_t step, site, token;      /* the step, the router, the token's global row */
  int32_t own[PRT_ROUTING_MAX_K]; /* what the plan chose */
  int32_t rec[PRT_ROUTING_MAX_K]; /* what the recording holds */
  int32_t k;                      /* experts per token */
  float gap;                      /* largest logit of a chosen-not-recorded expert minus the
                                     smallest of a recorded-not-chosen one (>= 0) */
  float scale;                    /* the token's largest |logit| */
} prt_flip;

/* One router's choices in one step, recorded (record mode). */
typedef struct prt_routing_rec {
  char name[64];  /* "routing.step<S>.site<I>" */
  int64_t dims[2]; /* (tokens, K) */
  float *ids;     /* owned: expert ids as floats (exact below 2^24) */
} prt_routing_rec;

struct prt_routing {
  int replay;              /* 0: record, 1: replay */
  const char *path;        /* the flag's file: borrowed from argv */
  int64_t row0;            /* this rank's first token in global row order */
  int64_t step;            /* the training step running */
  int64_t site;            /* routers seen so far in this step */
  int64_t sites;           /* routers a step: -1 until the first step ends */
  /* record */
  prt_routing_rec *recs;   /* owned (nrecs, capacity caprecs) */
  size_t nrecs, caprecs;
  /* replay */
  FILE *f;                 /* the recording, open */
  prt_st_header h;         /* its header */
  uint64_t data_start;     /* its data section's offset */
  float *buf;              /* scratch for one router's recorded rows: owned (capbuf floats) */
  size_t capbuf;
  prt_flip *flips;         /* this rank's flips: owned (nflips, capacity capflips) */
  size_t nflips, capflips;
  int64_t choices;         /* tokens routed by replay on this rank (for the summary) */
};

/* The router hook prt_moe_topk_fwd calls: non-NULL only inside a training step of a run with
 * --routing-record or --routing-replay. */
prt_routing *prt_routing_active;

/* This rank's first global token: its one "tokens" input's first_sample * T. */
static int prt_routing_rows(prt_routing *r, const prt_ctx *ctx, prt_status *st) {
  const prt_tensor_info *tokens = NULL;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (!t->name || t->kind != PRT_INPUT || strcmp(t->name, "tokens") != 0) continue;
    if (tokens)
      return prt_fail(st, 2, "%s needs every rank to hold one slice of the batch, but this "
                      "plan gives rank %lld several microbatches: command line; replay with "
                      "a plan of one microbatch and no pipeline stages",
                      r->replay ? "--routing-replay" : "--routing-record", (long long)ctx->rank);
    tokens = t;
  }
  if (!tokens)
    return prt_fail(st, 2, "%s needs every rank to hold its tokens, but rank %lld of this plan "
                    "has none (a pipeline stage after the first): command line; replay with a "
                    "plan without pipeline stages", r->replay ? "--routing-replay" :
                    "--routing-record", (long long)ctx->rank);
  if (tokens->cp_size > 1)
    return prt_fail(st, 2, "%s cannot follow tokens split by context parallelism (rank %lld "
                    "holds positions of several sequences): command line; replay with a plan "
                    "without context parallelism", r->replay ? "--routing-replay" :
                    "--routing-record", (long long)ctx->rank);
  r->row0 = tokens->first_sample * tokens->dims[1];
  return 0;
}

int prt_routing_open(prt_routing **out, prt_ctx *ctx, const char *record, const char *replay,
                     prt_status *st) {
  *out = NULL;
  if (!record && !replay) return 0;
  if (record && replay)
    return prt_fail(st, 2, "--routing-record and --routing-replay exclude each other: command "
                    "line; record on one device, replay on the plan");
  if (record && ctx->world != 1)
    return prt_fail(st, 2, "--routing-record records the one-device run's routing, but this "
                    "run has %lld ranks: command line; record with a plan for one device",
                    (long long)ctx->world);
  if (ctx->elastic.k > 1)
    return prt_fail(st, 2, "%s cannot follow an elastic run's passes: command line; run the "
                    "plan on all %lld of its devices", replay ? "--routing-replay" :
                    "--routing-record", (long long)ctx->declared_world);
  prt_routing *r = prt_xmalloc(sizeof *r, "routing replay");
  memset(r, 0, sizeof *r);
  r->replay = replay != NULL;
  r->path = replay ? replay : record;
  r->sites = -1;
  *out = r;
  if (prt_routing_rows(r, ctx, st)) return st->code;
  if (!r->replay) return 0;
  r->f = fopen(replay, "rb");
  if (!r->f)
    return prt_fail(st, 1, "cannot open the routing recording: %s: %s; record it with "
                    "--routing-record on the one-device run", replay, strerror(errno));
  if (fseek(r->f, 0, SEEK_END) != 0 || ftell(r->f) < 0)
    return prt_fail(st, 1, "cannot read the routing recording: %s: %s", replay,
                    strerror(errno));
  uint64_t size = (uint64_t)ftell(r->f);
  rewind(r->f);
  return prt_safetensors_read_header(r->f, size, replay, &r->h, &r->data_start, st);
}

void prt_routing_step_begin(prt_routing *r, int64_t step) {
  if (!r) return;
  r->step = step;
  r->site = 0;
  prt_routing_active = r;
}

int prt_routing_step_end(prt_routing *r, prt_status *st) {
  prt_routing_active = NULL;
  if (!r) return 0;
  if (r->site == 0)
    return prt_fail(st, 2, "%s: step %lld routed no token (the plan has no MoE layer, or runs "
                    "its routers on a GPU): command line; record and replay MoE models "
                    "compiled for --target cpu", r->replay ? "--routing-replay" :
                    "--routing-record", (long long)r->step);
  if (r->sites >= 0 && r->site != r->sites)
    return prt_fail(st, 1, "%s: step %lld ran %lld routers, the steps before %lld: this is a "
                    "bug in the compiled plan", r->replay ? "--routing-replay" :
                    "--routing-record", (long long)r->step, (long long)r->site,
                    (long long)r->sites);
  r->sites = r->site;
  return 0;
}

/* The recorded tensor of router `site` in step `step`, checked against this call's shape;
 * fatal (inside a kernel) with the file and what to do. */
static const prt_st_in *prt_routing_find(prt_routing *r, int64_t N, int64_t K) {
  char name[64];
  snprintf(name, sizeof name, "routing.step%lld.site%lld", (long long)r->step,
           (long long)r->site);
  const prt_st_in *e = prt_st_header_find(&r->h, name);
  if (!e)
    prt_fatal("--routing-replay: %s holds no tensor '%s' (step %lld, router %lld); record as "
              "many steps, from the same starting step, with the same model", r->path, name,
              (long long)r->step, (long long)r->site);
  if (e->ndim != 2 || e->dims[1] != K || e->dims[0] < r->row0 + N)
    prt_fatal("--routing-replay: %s: tensor '%s' has shape (%lld, %lld), but this plan routes "
              "tokens %lld..%lld to %lld experts each: record with the same model and batch",
              r->path, name, (long long)(e->ndim > 0 ? e->dims[0] : 0),
              (long long)(e->ndim > 1 ? e->dims[1] : 0), (long long)r->row0,
              (long long)(r->row0 + N - 1), (long long)K);
  return e;
}

/* The logit gap of a flipped token: the largest logit among the experts it chose and the
 * recording did not, minus the smallest among those the recording chose and it did not. */
static float prt_flip_gap(const int32_t *own, const int32_t *rec, const float *l, int64_t K) {
  float hi = -INFINITY, lo = INFINITY;
  for (int64_t a = 0; a < K; a++) {
    bool inRec = false, inOwn = false;
    for (int64_t b = 0; b < K; b++) {
      inRec |= own[a] == rec[b];
      inOwn |= rec[a] == own[b];
    }
    if (!inRec && l[own[a]] > hi) hi = l[own[a]];
    if (!inOwn && l[rec[a]] < lo) lo = l[rec[a]];
  }
  return hi - lo;
}

static void prt_routing_replay(prt_routing *r, int32_t *experts, const float *logits, int64_t N,
                               int64_t E, int64_t K) {
  const prt_st_in *e = prt_routing_find(r, N, K);
  size_t n = (size_t)(N * K);
  if (!piperGrow((void **)&r->buf, &r->capbuf, n, sizeof *r->buf))
    prt_fatal("--routing-replay: out of memory for %lld choices", (long long)n);
  if (prt_safetensors_read(r->f, r->data_start, e, (uint64_t)(r->row0 * K), r->buf, n) != 0)
    prt_fatal("--routing-replay: cannot read tensor '%s' of %s: the file is cut short or not "
              "F32; record it again", e->name, r->path);
  for (int64_t t = 0; t < N; t++) {
    int32_t rec[PRT_ROUTING_MAX_K], *own = experts + t * K;
    bool same = true;
    for (int64_t k = 0; k < K; k++) {
      float v = r->buf[t * K + k];
      if (!(v >= 0 && v < (float)E && v == floorf(v)))
        prt_fatal("--routing-replay: %s: '%s' routes token %lld to expert %g, not one of "
                  "0..%lld: the file is not a routing recording of this model",
                  r->path, e->name, (long long)(r->row0 + t), v, (long long)(E - 1));
      rec[k] = (int32_t)v;
      for (int64_t q = 0; q < k; q++)
        if (rec[q] == rec[k])
          prt_fatal("--routing-replay: %s: '%s' routes token %lld to expert %d twice: the "
                    "file is not a routing recording", r->path, e->name,
                    (long long)(r->row0 + t), rec[k]);
      bool chosen = false;
      for (int64_t q = 0; q < K; q++) chosen |= own[q] == rec[k];
      same &= chosen;
    }
    if (!same) {
      if (!piperGrow((void **)&r->flips, &r->capflips, r->nflips + 1, sizeof *r->flips))
        prt_fatal("--routing-replay: out of memory for the flips");
      prt_flip *f = &r->flips[r->nflips++];
      *f = (prt_flip){.step = r->step, .site = r->site, .token = r->row0 + t, .k = (int32_t)K};
      memcpy(f->own, own, (size_t)K * sizeof *own);
      memcpy(f->rec, rec, (size_t)K * sizeof *rec);
      const float *l = logits + t * E;
      f->gap = prt_flip_gap(own, rec, l, K);
      for (int64_t x = 0; x < E; x++) f->scale = fmaxf(f->scale, fabsf(l[x]));
    }
    memcpy(own, rec, (size_t)K * sizeof *rec); /* route as recorded, in the recorded order */
  }
  r->choices += N;
}

static void prt_routing_record(prt_routing *r, const int32_t *experts, int64_t N, int64_t K) {
  if (!piperGrow((void **)&r->recs, &r->caprecs, r->nrecs + 1, sizeof *r->recs))
    prt_fatal("--routing-record: out of memory");
  prt_routing_rec *rec = &r->recs[r->nrecs++];
  snprintf(rec->name, sizeof rec->name, "routing.step%lld.site%lld", (long long)r->step,
           (long long)r->site);
  rec->dims[0] = N;
  rec->dims[1] = K;
  rec->ids = prt_xmalloc((size_t)(N * K) * sizeof *rec->ids, "--routing-record");
  for (int64_t i = 0; i < N * K; i++) rec->ids[i] = (float)experts[i];
}

void prt_routing_apply(int32_t *experts, const float *logits, int64_t N, int64_t E, int64_t K) {
  prt_routing *r = prt_routing_active;
  if (K > PRT_ROUTING_MAX_K)
    prt_fatal("%s: routers that pick more than %d experts a token are not supported (this one "
              "picks %lld)", r->replay ? "--routing-replay" : "--routing-record",
              PRT_ROUTING_MAX_K, (long long)K);
  if (r->replay) prt_routing_replay(r, experts, logits, N, E, K);
  else prt_routing_record(r, experts, N, K);
  r->site++;
}

/* Rank 0: every flip of every rank, then the summary. */
static void prt_routing_report(prt_routing *r, prt_ctx *ctx) {
  int64_t bytes = (int64_t)(r->nflips * sizeof *r->flips);
  int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "routing report");
  prt_flip *all = prt_comm_allgatherv(r->flips, bytes, counts);
  int64_t total = 0, choices = 0;
  for (int64_t k = 0; k < ctx->world; k++) total += counts[k] / (int64_t)sizeof *r->flips;
  int64_t *chosen = prt_comm_allgatherv(&r->choices, sizeof r->choices, counts);
  for (int64_t k = 0; k < ctx->world; k++) choices += chosen[k];
  if (ctx->rank == 0) {
    float worst = 0, worstRel = 0;
    for (int64_t i = 0; i < total; i++) {
      const prt_flip *f = &all[i];
      char own[64] = "", rec[64] = "";
      for (int32_t k = 0, a = 0, b = 0; k < f->k; k++) {
        a += snprintf(own + a, sizeof own - (size_t)a, k ? " %d" : "%d", f->own[k]);
        b += snprintf(rec + b, sizeof rec - (size_t)b, k ? " %d" : "%d", f->rec[k]);
      }
      float rel = f->scale > 0 ? f->gap / f->scale : 0;
      printf("piper: routing flip: step %lld router %lld token %lld chose {%s}, recorded {%s}, "
             "logit gap %.3g (%.3g of its largest |logit|)\n", (long long)f->step,
             (long long)f->site, (long long)f->token, own, rec, f->gap, rel);
      worst = fmaxf(worst, f->gap);
      worstRel = fmaxf(worstRel, rel);
    }
    /* tokens routed once per router and step; TP ranks route the same tokens again */
    printf("piper: routing replay: %lld flips in %lld token routings from %s (largest logit "
           "gap %.3g, %.3g of its token's largest |logit|)\n", (long long)total,
           (long long)choices, r->path, worst, worstRel);
    fflush(stdout);
  }
  free(chosen);
  free(all);
  free(counts);
}

int prt_routing_finish(prt_routing *r, prt_ctx *ctx, prt_status *st) {
  if (!r) return 0;
  prt_routing_active = NULL;
  if (r->replay) {
    prt_routing_report(r, ctx);
    return 0;
  }
  prt_st_entry *e = prt_xmalloc((r->nrecs ? r->nrecs : 1) * sizeof *e, "--routing-record");
  for (size_t i = 0; i < r->nrecs; i++)
    e[i] = (prt_st_entry){r->recs[i].name, 2, r->recs[i].dims, r->recs[i].ids};
  prt_safetensors_write(r->path, e, (int64_t)r->nrecs, -1, st); /* one rank: see open */
  free(e);
  return st->code;
}

void prt_routing_free(prt_routing *r) {
  if (!r) return;
  if (prt_routing_active == r) prt_routing_active = NULL;
  for (size_t i = 0; i < r->nrecs; i++) free(r->recs[i].ids);
  free(r->recs);
  if (r->f) fclose(r->f);
  prt_st_header_free(&r->h);
  free(r->buf);
  free(r->flips);
  free(r);
}
