/* The CPU attention kernels as they were before the blocked (flash) rewrite, kept only as the
 * baseline of bench_attention.c: for each (b, h) the full T x T scores by one sgemm, the part
 * above the diagonal zeroed, a row softmax, and the (B, H, T, T) probabilities saved for the
 * backward. Not part of the runtime. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define prt_comm_progress() ((void)0)
#define prt_xmalloc(n, what) malloc(n)

/* Strided views of one attention call (see the top of the file). */
typedef struct {
  int64_t B, T, H, KV, D; /* batch, sequence, query heads, kv heads, head dim */
  int64_t qs, ks, os;     /* row strides of q (and dq), of k and v (and dk, dv), of out/dout */
} prt_attn_shape;

/* probs[b, h] = causal softmax(scale Q K^T); out = P V. */
static void dense_attn_fwd(const prt_attn_shape *s, float *out, float *probs, const float *q,
                         const float *k, const float *v) {
  prt_comm_progress();
  int64_t T = s->T, D = s->D;
  float scale = 1.0f / sqrtf((float)D);
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++) {
      prt_comm_progress();
      int64_t kh = h * s->KV / s->H;
      const float *Q = q + b * T * s->qs + h * D;
      const float *K = k + b * T * s->ks + kh * D, *V = v + b * T * s->ks + kh * D;
      float *P = probs + (b * s->H + h) * T * T;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)T, (blasint)D,
                  scale, Q, (blasint)s->qs, K, (blasint)s->ks, 0.0f, P, (blasint)T);
      for (int64_t t = 0; t < T; t++) { /* causal softmax of row t over 0..t */
        float *row = P + t * T;
        float mx = row[0];
        for (int64_t j = 1; j <= t; j++) mx = row[j] > mx ? row[j] : mx;
        float sum = 0.0f;
        for (int64_t j = 0; j <= t; j++) {
          row[j] = expf(row[j] - mx);
          sum += row[j];
        }
        float inv = 1.0f / sum;
        for (int64_t j = 0; j <= t; j++) row[j] *= inv;
        for (int64_t j = t + 1; j < T; j++) row[j] = 0.0f;
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)T, (blasint)D, (blasint)T,
                  1.0f, P, (blasint)T, V, (blasint)s->ks, 0.0f, out + b * T * s->os + h * D,
                  (blasint)s->os);
    }
}

/* dq, dk, dv (overwritten) from dout and the saved probs. With KV < H several query heads
 * add into one kv head's dk, dv, so those start at zero and accumulate (beta 1); with KV = H
 * each is written once (beta 0), the same floats either way. */
static void dense_attn_bwd(const prt_attn_shape *s, float *dq, float *dk, float *dv,
                         const float *dout, const float *q, const float *k, const float *v,
                         const float *probs) {
  prt_comm_progress();
  int64_t T = s->T, D = s->D;
  float scale = 1.0f / sqrtf((float)D);
  float beta = s->KV == s->H ? 0.0f : 1.0f;
  if (beta != 0.0f) /* the kv heads' columns of every row (dk, dv may be views into dqkv) */
    for (int64_t r = 0; r < s->B * T; r++) {
      memset(dk + r * s->ks, 0, (size_t)(s->KV * D) * sizeof(float));
      memset(dv + r * s->ks, 0, (size_t)(s->KV * D) * sizeof(float));
    }
  float *dS = prt_xmalloc((size_t)(T * T) * sizeof(float), "attention backward scratch");
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++) {
      prt_comm_progress();
      int64_t kh = h * s->KV / s->H;
      const float *Q = q + b * T * s->qs + h * D, *dO = dout + b * T * s->os + h * D;
      const float *K = k + b * T * s->ks + kh * D, *V = v + b * T * s->ks + kh * D;
      const float *P = probs + (b * s->H + h) * T * T;
      float *dQ = dq + b * T * s->qs + h * D;
      float *dK = dk + b * T * s->ks + kh * D, *dV = dv + b * T * s->ks + kh * D;
      /* dV (+)= P^T dO */
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)T, (blasint)D, (blasint)T,
                  1.0f, P, (blasint)T, dO, (blasint)s->os, beta, dV, (blasint)s->ks);
      /* dP = dO V^T, then softmax backward in place: dS = P * (dP - sum_j P dP) */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)T, (blasint)T, (blasint)D,
                  1.0f, dO, (blasint)s->os, V, (blasint)s->ks, 0.0f, dS, (blasint)T);
      for (int64_t t = 0; t < T; t++) {
        float *row = dS + t * T;
        const float *prow = P + t * T;
        float dot = 0.0f;
        for (int64_t j = 0; j <= t; j++) dot += prow[j] * row[j];
        for (int64_t j = 0; j <= t; j++) row[j] = prow[j] * (row[j] - dot);
        for (int64_t j = t + 1; j < T; j++) row[j] = 0.0f;
      }
      /* S = scale Q K^T: dQ = scale dS K, dK (+)= scale dS^T Q */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)T, (blasint)D, (blasint)T,
                  scale, dS, (blasint)T, K, (blasint)s->ks, 0.0f, dQ, (blasint)s->qs);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)T, (blasint)D, (blasint)T,
                  scale, dS, (blasint)T, Q, (blasint)s->qs, beta, dK, (blasint)s->ks);
    }
  free(dS);
}

