/* The block functions of the CPU's causal attention (runtime/kernels/cpu_attention.c), shared
 * by the single-device kernels and the ring attention of context parallelism: one head's
 * queries against one run of keys, with an online softmax, so that only a block of
 * PRT_ATTN_BQ x PRT_ATTN_BK scores exists at a time. Causality is by position: query row i
 * (position qpos + i) sees key row j (position kpos + j) when kpos + j <= qpos + i. */
#ifndef PRT_ATTENTION_H
#define PRT_ATTENTION_H

#include <stdbool.h>
#include <stdint.h>

#include "piper/runtime.h"
#include "prt_cp_layout.h"

/* Block sizes: 64 x 64 scores (16 KiB) stay in L1/L2 and keep sgemm efficient at D = 64..128. */
enum { PRT_ATTN_BQ = 64, PRT_ATTN_BK = 64 };

/* One head's views: nq query rows and nk key/value rows. */
typedef struct {
  const float *Q;      /* (nq, D) query rows, row stride qs */
  const float *K, *V;  /* (nk, D) key and value rows, row stride ks */
  int64_t qs, ks;      /* row strides in floats */
  int64_t D;           /* head dim */
  int64_t nq, nk;      /* rows of Q and of K, V */
  int64_t qpos, kpos;  /* sequence positions of Q's and K's first rows (the causal mask) */
  float scale;         /* 1 / sqrt(D) */
} prt_attn_head;

/* The gradients of one head (added into, never overwritten). */
typedef struct {
  const float *dO;     /* (nq, D) gradient of the output, row stride os */
  int64_t os;
  float *dQ;           /* (nq, D) row stride qs (that of Q) */
  int64_t qs;
  float *dK, *dV;      /* (nk, D) row stride ks */
  int64_t ks;
} prt_attn_grad;

/* Work space of one call, one allocation (S first). */
typedef struct {
  float *S, *dP;       /* (BQ, BK) scores / probabilities and their gradient */
  float *m, *l;        /* (BQ) running max and sum of a block of query rows */
} prt_attn_scratch;

prt_attn_scratch prt_attn_scratch_new(void);
void prt_attn_scratch_free(prt_attn_scratch *w);

/* Sets mq output rows (stride os) to 0, m to -inf and l to 0: no key seen. */
void prt_attn_fwd_start(int64_t mq, int64_t D, float *O, int64_t os, float *m, float *l);
/* Adds the keys of v (all nk, causally masked) to query rows [i0, i0+mq) of v: O holds those
 * rows unnormalised (sum of exp(s - m) v), m and l their running max and sum. Any number of
 * calls with different keys, in any order, give the same softmax: the log-sum-exp merge. */
void prt_attn_fwd_block(const prt_attn_head *v, int64_t i0, int64_t mq, float *O, int64_t os,
                        float *m, float *l, float *S);
/* O /= l, and lse = m + log l when lse is not NULL (-inf for a row that saw no key). */
void prt_attn_fwd_finish(int64_t mq, int64_t D, float *O, int64_t os, const float *m,
                         const float *l, float *lse);
/* Adds to dQ rows [i0, i0+mq) and to dK, dV (all nk rows) the gradients through the keys of v,
 * from the final lse and Dt = dO . O of the query rows (mq each). */
void prt_attn_bwd_block(const prt_attn_head *v, const prt_attn_grad *g, int64_t i0, int64_t mq,
                        const float *lse, const float *Dt, float *S, float *dP);

/* ---- ring attention over a context-parallel group (runtime/cp_attention.c) ----
 * Member r of the G members of `group` holds sequence chunks r and 2G-1-r (c rows each) as
 * its Tl = 2c local rows; every member calls the same kernel, whose transfers (to member r+1,
 * from r-1, tags `tag` and `tag` + 1) all members issue in the same order. lse is (B, H, Tl);
 * the backward takes the forward's out and lse. q (B, Tl, H*D), k and v (B, Tl, KV*D), or
 * GPT's packed qkv (B, Tl, 3C). */
void prt_ring_gqa_attention_fwd(prt_ctx *ctx, float *out, float *lse, const float *q,
                                const float *k, const float *v, int64_t B, int64_t Tl,
                                int64_t H, int64_t KV, int64_t D, int64_t group, int64_t tag);
void prt_ring_gqa_attention_bwd(prt_ctx *ctx, float *dq, float *dk, float *dv,
                                const float *dout, const float *out, const float *q,
                                const float *k, const float *v, const float *lse, int64_t B,
                                int64_t Tl, int64_t H, int64_t KV, int64_t D, int64_t group,
                                int64_t tag);
void prt_ring_attention_fwd(prt_ctx *ctx, float *out, float *lse, const float *qkv, int64_t B,
                            int64_t Tl, int64_t C, int64_t H, int64_t group, int64_t tag);
void prt_ring_attention_bwd(prt_ctx *ctx, float *dqkv, const float *dout, const float *out,
                            const float *qkv, const float *lse, int64_t B, int64_t Tl,
                            int64_t C, int64_t H, int64_t group, int64_t tag);

#endif
