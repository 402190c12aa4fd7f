/* CPU kernels of libpiper_rt for causal softmax attention, in fp32: GPT's multi-head attention
 * on packed qkv (prt_attention_fwd/bwd) and Qwen3's grouped-query attention on separate q, k,
 * v (prt_gqa_attention_fwd/bwd) are one computation on strided views, done once here.
 *
 * For each (b, h): Q is the (T, D) view of q at channel h*D with row stride qs; K and V are the
 * views of kv head kh = floor(h*KV/H) at channel kh*D with row stride ks; the output rows have
 * stride os. GPT is H = KV with q, k, v at channels 0, C and 2C of qkv (qs = ks = 3C, os = C).
 *
 * Memory linear in T (FlashAttention): queries are taken PRT_ATTN_BQ rows and keys
 * PRT_ATTN_BK rows at a time; a block's scores S = scale Q K^T (sgemm) go through an online
 * softmax (each row's running max m and sum l; the output row is rescaled by exp(m_old - m)
 * when m grows), so only a BQ x BK block of scores exists at once. The forward saves one
 * log-sum-exp per query row, lse = m + log l, in the op's second result ((B, H, T), the same
 * as the GPU kernels'). The backward takes PRT_ATTN_BQ query rows at a
 * time against every key they see (a panel of BQ x T scores, freed after the call: O(T)),
 * recomputes the probabilities P = exp(S - lse) from the saved lse, and gets D_t = dO_t . O_t
 * as sum_j P dP from the panel (it has P and dP at hand; the op's out is not read) before dS = P *
 * (dP - D). Scores wholly above the causal diagonal are never computed, which halves the
 * work of the old full T x T products (the bench: bench/bench_attention.py).
 *
 * The block functions take the positions of their first query and key rows, so a block of
 * queries can meet keys from anywhere in the sequence: the ring attention of context
 * parallelism (runtime/cp_attention.c) is these same functions over chunks that travel. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prt_attention.h"
#include "prt_backend.h"

/* S = scale Q[i0, i0+mq) K[j0, j0+mk)^T into S (ld PRT_ATTN_BK). */
static void scores(const prt_attn_head *v, int64_t i0, int64_t mq, int64_t j0, int64_t mk,
                   float *S) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mq, (blasint)mk, (blasint)v->D,
              v->scale, v->Q + i0 * v->qs, (blasint)v->qs, v->K + j0 * v->ks, (blasint)v->ks,
              0.0f, S, PRT_ATTN_BK);
}

/* How many keys of the block starting at key row j0 query row i may see: keys at positions
 * up to the query's own (causal), at most mk; 0 or less when none. */
static int64_t visible(const prt_attn_head *v, int64_t i, int64_t j0, int64_t mk) {
  int64_t n = v->qpos + i - (v->kpos + j0) + 1;
  return n < mk ? n : mk;
}

/* True when the key block at j0 is wholly after the last query of the block (i0, mq): every
 * score of the pair is masked. */
static bool block_masked(const prt_attn_head *v, int64_t i0, int64_t mq, int64_t j0) {
  return v->kpos + j0 > v->qpos + i0 + mq - 1;
}

void prt_attn_fwd_block(const prt_attn_head *v, int64_t i0, int64_t mq, float *O, int64_t os,
                        float *m, float *l, float *S) {
  for (int64_t j0 = 0; j0 < v->nk && !block_masked(v, i0, mq, j0); j0 += PRT_ATTN_BK) {
    int64_t mk = v->nk - j0 < PRT_ATTN_BK ? v->nk - j0 : PRT_ATTN_BK;
    scores(v, i0, mq, j0, mk, S);
    for (int64_t t = 0; t < mq; t++) {
      float *row = S + t * PRT_ATTN_BK;
      int64_t n = visible(v, i0 + t, j0, mk);
      if (n <= 0) { /* this row sees none of the block: it adds nothing */
        memset(row, 0, (size_t)mk * sizeof(float));
        continue;
      }
      float mx = row[0];
      for (int64_t j = 1; j < n; j++) mx = row[j] > mx ? row[j] : mx;
      float mnew = mx > m[t] ? mx : m[t];
      float alpha = expf(m[t] - mnew); /* 0 while m is -inf (no key seen yet) */
      float sum = 0.0f;
      for (int64_t j = 0; j < n; j++) sum += (row[j] = expf(row[j] - mnew));
      for (int64_t j = n; j < mk; j++) row[j] = 0.0f;
      l[t] = l[t] * alpha + sum;
      m[t] = mnew;
      if (alpha != 1.0f) cblas_sscal((blasint)v->D, alpha, O + t * os, 1);
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)mq, (blasint)v->D,
                (blasint)mk, 1.0f, S, PRT_ATTN_BK, v->V + j0 * v->ks, (blasint)v->ks, 1.0f, O,
                (blasint)os);
  }
}

void prt_attn_fwd_start(int64_t mq, int64_t D, float *O, int64_t os, float *m, float *l) {
  for (int64_t t = 0; t < mq; t++) {
    memset(O + t * os, 0, (size_t)D * sizeof(float));
    m[t] = -INFINITY;
    l[t] = 0.0f;
  }
}

void prt_attn_fwd_finish(int64_t mq, int64_t D, float *O, int64_t os, const float *m,
                         const float *l, float *lse) {
  for (int64_t t = 0; t < mq; t++) {
    /* a row that saw no key (not in causal attention, where a query sees itself) is 0 */
    float inv = l[t] > 0.0f ? 1.0f / l[t] : 0.0f;
    cblas_sscal((blasint)D, inv, O + t * os, 1);
    if (lse) lse[t] = l[t] > 0.0f ? m[t] + logf(l[t]) : -INFINITY;
  }
}

void prt_attn_bwd_block(const prt_attn_head *v, const prt_attn_grad *g, int64_t i0, int64_t mq,
                        const float *lse, const float *Dt, float *S, float *dP) {
  const float *dO = g->dO + i0 * g->os, *Q = v->Q + i0 * v->qs;
  for (int64_t j0 = 0; j0 < v->nk && !block_masked(v, i0, mq, j0); j0 += PRT_ATTN_BK) {
    int64_t mk = v->nk - j0 < PRT_ATTN_BK ? v->nk - j0 : PRT_ATTN_BK;
    const float *K = v->K + j0 * v->ks, *V = v->V + j0 * v->ks;
    scores(v, i0, mq, j0, mk, S);
    for (int64_t t = 0; t < mq; t++) { /* P = exp(S - lse), 0 where masked */
      float *row = S + t * PRT_ATTN_BK;
      int64_t n = visible(v, i0 + t, j0, mk);
      n = n < 0 ? 0 : n;
      for (int64_t j = 0; j < n; j++) row[j] = expf(row[j] - lse[t]);
      for (int64_t j = n; j < mk; j++) row[j] = 0.0f;
    }
    /* dV += P^T dO */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)mk, (blasint)v->D, (blasint)mq,
                1.0f, S, PRT_ATTN_BK, dO, (blasint)g->os, 1.0f, g->dV + j0 * g->ks,
                (blasint)g->ks);
    /* dP = dO V^T, then dS = P * (dP - D) in place */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mq, (blasint)mk, (blasint)v->D,
                1.0f, dO, (blasint)g->os, V, (blasint)v->ks, 0.0f, dP, PRT_ATTN_BK);
    for (int64_t t = 0; t < mq; t++) {
      float *d = dP + t * PRT_ATTN_BK;
      const float *p = S + t * PRT_ATTN_BK;
      for (int64_t j = 0; j < mk; j++) d[j] = p[j] * (d[j] - Dt[t]);
    }
    /* S = scale Q K^T: dQ += scale dS K, dK += scale dS^T Q */
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)mq, (blasint)v->D,
                (blasint)mk, v->scale, dP, PRT_ATTN_BK, K, (blasint)v->ks, 1.0f,
                g->dQ + i0 * g->qs, (blasint)g->qs);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)mk, (blasint)v->D, (blasint)mq,
                v->scale, dP, PRT_ATTN_BK, Q, (blasint)v->qs, 1.0f, g->dK + j0 * g->ks,
                (blasint)g->ks);
  }
}

/* Strided views of one attention call (see the top of the file). */
typedef struct {
  int64_t B, T, H, KV, D; /* batch, sequence, query heads, kv heads, head dim */
  int64_t qs, ks, os;     /* row strides of q (and dq), of k and v (and dk, dv), of out/dout */
} prt_attn_shape;

/* The (b, h) head of the call: all T queries against all T keys, positions from 0. */
static prt_attn_head head_of(const prt_attn_shape *s, int64_t b, int64_t h, const float *q,
                             const float *k, const float *v) {
  int64_t kh = h * s->KV / s->H, T = s->T, D = s->D;
  return (prt_attn_head){.Q = q + b * T * s->qs + h * D, .K = k + b * T * s->ks + kh * D,
                         .V = v + b * T * s->ks + kh * D, .qs = s->qs, .ks = s->ks, .D = D,
                         .nq = T, .nk = T, .qpos = 0, .kpos = 0,
                         .scale = 1.0f / sqrtf((float)D)};
}

/* out = causal softmax(scale Q K^T) V; lse[b, h, t] the log-sum-exp of each query row. */
static void prt_attn_fwd(const prt_attn_shape *s, float *out, float *lse, const float *q,
                         const float *k, const float *v) {
  prt_comm_progress();
  prt_attn_scratch w = prt_attn_scratch_new();
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++) {
      prt_attn_head hd = head_of(s, b, h, q, k, v);
      float *O = out + b * s->T * s->os + h * s->D, *L = lse + (b * s->H + h) * s->T;
      for (int64_t i0 = 0; i0 < s->T; i0 += PRT_ATTN_BQ) {
        prt_comm_progress(); /* between blocks, so transfers in flight move on */
        int64_t mq = s->T - i0 < PRT_ATTN_BQ ? s->T - i0 : PRT_ATTN_BQ;
        prt_attn_fwd_start(mq, s->D, O + i0 * s->os, s->os, w.m, w.l);
        prt_attn_fwd_block(&hd, i0, mq, O + i0 * s->os, s->os, w.m, w.l, w.S);
        prt_attn_fwd_finish(mq, s->D, O + i0 * s->os, s->os, w.m, w.l, L + i0);
      }
    }
  prt_attn_scratch_free(&w);
}

/* Zeroes the first `cols` floats of each of `rows` rows of stride `stride`. */
static void zero_rows(float *x, int64_t rows, int64_t cols, int64_t stride) {
  for (int64_t r = 0; r < rows; r++) memset(x + r * stride, 0, (size_t)cols * sizeof(float));
}

/* The gradients through query rows [i0, i0+mq) of head v (all its T keys, positions from 0)
 * as one panel of mq x kend scores, kend the keys the block's last query sees: P = exp(S -
 * lse) recomputed, dP = dO V^T, then D_t = sum_j P dP (= dO_t . O_t, without reading O)
 * before dS = P * (dP - D). Sp, dPp hold PRT_ATTN_BQ x T floats each:
 * O(T) per call, not kept. */
static void bwd_panel(const prt_attn_head *v, const prt_attn_grad *g, int64_t i0, int64_t mq,
                      const float *lse, float *Sp, float *dPp) {
  int64_t kend = i0 + mq, ld = v->nk, D = v->D;
  const float *Q = v->Q + i0 * v->qs, *dO = g->dO + i0 * g->os;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mq, (blasint)kend, (blasint)D,
              v->scale, Q, (blasint)v->qs, v->K, (blasint)v->ks, 0.0f, Sp, (blasint)ld);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)mq, (blasint)kend, (blasint)D,
              1.0f, dO, (blasint)g->os, v->V, (blasint)v->ks, 0.0f, dPp, (blasint)ld);
  for (int64_t t = 0; t < mq; t++) {
    float *p = Sp + t * ld, *d = dPp + t * ld, dot = 0.0f;
    int64_t n = i0 + t + 1; /* keys 0 .. i0+t */
    for (int64_t j = 0; j < n; j++) {
      p[j] = expf(p[j] - lse[t]);
      dot += p[j] * d[j];
    }
    for (int64_t j = 0; j < n; j++) d[j] = p[j] * (d[j] - dot);
    for (int64_t j = n; j < kend; j++) p[j] = d[j] = 0.0f;
  }
  /* dV += P^T dO; S = scale Q K^T: dQ += scale dS K, dK += scale dS^T Q */
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)kend, (blasint)D, (blasint)mq,
              1.0f, Sp, (blasint)ld, dO, (blasint)g->os, 1.0f, g->dV, (blasint)g->ks);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)mq, (blasint)D, (blasint)kend,
              v->scale, dPp, (blasint)ld, v->K, (blasint)v->ks, 1.0f, g->dQ + i0 * g->qs,
              (blasint)g->qs);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)kend, (blasint)D, (blasint)mq,
              v->scale, dPp, (blasint)ld, Q, (blasint)v->qs, 1.0f, g->dK, (blasint)g->ks);
}

/* dq, dk, dv (overwritten) from dout, q, k, v and the saved lse. Every panel adds into them,
 * so they start at zero (dk, dv may be views into dqkv: only their heads' columns). */
static void prt_attn_bwd(const prt_attn_shape *s, float *dq, float *dk, float *dv,
                         const float *dout, const float *q, const float *k, const float *v,
                         const float *lse) {
  prt_comm_progress();
  int64_t T = s->T, D = s->D;
  zero_rows(dq, s->B * T, s->H * D, s->qs);
  zero_rows(dk, s->B * T, s->KV * D, s->ks);
  zero_rows(dv, s->B * T, s->KV * D, s->ks);
  float *Sp = prt_xmalloc((size_t)(2 * PRT_ATTN_BQ * T) * sizeof(float),
                          "attention backward panels");
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++) {
      prt_attn_head hd = head_of(s, b, h, q, k, v);
      int64_t kh = h * s->KV / s->H;
      prt_attn_grad g = {.dO = dout + b * T * s->os + h * D, .os = s->os,
                         .dQ = dq + b * T * s->qs + h * D, .qs = s->qs,
                         .dK = dk + b * T * s->ks + kh * D, .dV = dv + b * T * s->ks + kh * D,
                         .ks = s->ks};
      for (int64_t i0 = 0; i0 < T; i0 += PRT_ATTN_BQ) {
        prt_comm_progress();
        int64_t mq = T - i0 < PRT_ATTN_BQ ? T - i0 : PRT_ATTN_BQ;
        bwd_panel(&hd, &g, i0, mq, lse + (b * s->H + h) * T + i0, Sp, Sp + PRT_ATTN_BQ * T);
      }
    }
  free(Sp);
}

prt_attn_scratch prt_attn_scratch_new(void) {
  size_t n = 2 * PRT_ATTN_BQ * PRT_ATTN_BK + 2 * PRT_ATTN_BQ;
  float *all = prt_xmalloc(n * sizeof(float), "attention block scratch");
  prt_attn_scratch w = {.S = all, .dP = all + PRT_ATTN_BQ * PRT_ATTN_BK};
  w.m = w.dP + PRT_ATTN_BQ * PRT_ATTN_BK;
  w.l = w.m + PRT_ATTN_BQ;
  return w;
}

void prt_attn_scratch_free(prt_attn_scratch *w) {
  free(w->S);
  w->S = NULL;
}

/* GPT: qkv (B, T, 3C) packed, H heads of C/H. */
static prt_attn_shape prt_attn_packed(int64_t B, int64_t T, int64_t C, int64_t H) {
  return (prt_attn_shape){B, T, H, H, C / H, 3 * C, 3 * C, C};
}

void prt_attention_fwd(float *out, float *lse, const float *qkv, int64_t B, int64_t T,
                       int64_t C, int64_t H) {
  prt_attn_shape s = prt_attn_packed(B, T, C, H);
  prt_attn_fwd(&s, out, lse, qkv, qkv + C, qkv + 2 * C);
}

/* `out` (the forward's) is not read: D = dO . O is taken as sum_j P dP from the panel the
 * backward forms anyway (bwd_panel), which in a bf16 plan is also more accurate than a dot
 * with the bf16-stored out. The GPU's FlashAttention-2 backward reads it. */
void prt_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, int64_t B, int64_t T, int64_t C, int64_t H) {
  (void)out;
  prt_attn_shape s = prt_attn_packed(B, T, C, H);
  prt_attn_bwd(&s, dqkv, dqkv + C, dqkv + 2 * C, dout, qkv, qkv + C, qkv + 2 * C, lse);
}

/* Qwen3: q (B, T, H*D), k and v (B, T, KV*D). */
void prt_gqa_attention_fwd(float *out, float *lse, const float *q, const float *k,
                           const float *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                           int64_t D) {
  prt_attn_shape s = {B, T, H, KV, D, H * D, KV * D, H * D};
  prt_attn_fwd(&s, out, lse, q, k, v);
}

void prt_gqa_attention_bwd(float *dq, float *dk, float *dv, const float *dout, const float *q,
                           const float *k, const float *v, const float *out, const float *lse,
                           int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  (void)out; /* as prt_attention_bwd's */
  prt_attn_shape s = {B, T, H, KV, D, H * D, KV * D, H * D};
  prt_attn_bwd(&s, dq, dk, dv, dout, q, k, v, lse);
}
