/* CPU kernels of libpiper_rt: GPT-2 forward and backward in fp32, llm.c style. Matmuls are
 * OpenBLAS sgemm on row-major matrices; everything else is plain loops. Each kernel writes
 * its outputs (never accumulates) and does exactly the math its comment in
 * <piper/runtime.h> states. Reductions over rows (bias, LayerNorm weight gradients, the
 * loss) accumulate in double so results do not drift with the batch size.
 *
 * Every kernel starts with prt_comm_progress() (attention once per (b, h) too): it advances
 * the gradient reductions in flight while the backward pass computes (see prt_internal.h).
 */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_attention.h"
#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_elastic.h"
#include "prt_safetensors.h"
#include "prt_kernels.h"
#include "prt_routing.h"

#define GELU_SCALE 0.7978845608028654f /* sqrt(2 / pi) */

/* ---- embedding ---- */

/* Tokens come from the loader (bytes, < 256) or a caller; an out-of-range one would index
 * past wte, so it is a fatal error rather than a crash. */
static void prt_check_token(int32_t v, int64_t i, int64_t V, const char *kernel) {
  if (v < 0 || (V > 0 && v >= V))
    prt_fatal("token %d at position %lld is outside the vocabulary [0, %lld): %s; the "
              "data must hold token ids below V", v, (long long)i, (long long)V, kernel);
}

/* Row t's position: t, or for member r of a context-parallel group of G (G > 1) the
 * position prt_cp_position gives local row t of Tl. */
static inline int64_t prt_row_position(int64_t t, int64_t Tl, int64_t r, int64_t G) {
  return G > 1 ? prt_cp_position(r, G, Tl / 2, t) : t;
}

static void prt_embedding(float *out, const int32_t *tok, const float *wte, const float *wpe,
                          int64_t B, int64_t T, int64_t C, int64_t r, int64_t G) {
  prt_comm_progress();
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      int32_t ix = tok[b * T + t];
      prt_check_token(ix, b * T + t, 0, "prt_embedding_fwd");
      float *o = out + (b * T + t) * C;
      const float *e = wte + (int64_t)ix * C, *p = wpe + prt_row_position(t, T, r, G) * C;
      for (int64_t c = 0; c < C; c++) o[c] = e[c] + p[c];
    }
}

/* dwpe has G * T rows (the full sequence) under context parallelism; a member writes the
 * rows of its positions and zeros elsewhere, summed over the group with the other gradients */
static void prt_embedding_grad(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                               int64_t B, int64_t T, int64_t C, int64_t V, int64_t r,
                               int64_t G) {
  prt_comm_progress();
  memset(dwte, 0, (size_t)(V * C) * sizeof(float));
  memset(dwpe, 0, (size_t)((G > 1 ? G : 1) * T * C) * sizeof(float));
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      int32_t ix = tok[b * T + t];
      prt_check_token(ix, b * T + t, V, "prt_embedding_bwd");
      const float *d = dout + (b * T + t) * C;
      float *e = dwte + (int64_t)ix * C, *p = dwpe + prt_row_position(t, T, r, G) * C;
      for (int64_t c = 0; c < C; c++) {
        e[c] += d[c];
        p[c] += d[c];
      }
    }
}

void prt_embedding_fwd(float *out, const int32_t *tok, const float *wte, const float *wpe,
                       int64_t B, int64_t T, int64_t C) {
  prt_embedding(out, tok, wte, wpe, B, T, C, 0, 1);
}

void prt_embedding_bwd(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                       int64_t B, int64_t T, int64_t C, int64_t V) {
  prt_embedding_grad(dwte, dwpe, dout, tok, B, T, C, V, 0, 1);
}

void prt_embedding_fwd_cp(float *out, const int32_t *tok, const float *wte, const float *wpe,
                          int64_t B, int64_t Tl, int64_t C, int64_t r, int64_t G) {
  prt_embedding(out, tok, wte, wpe, B, Tl, C, r, G);
}

void prt_embedding_bwd_cp(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                          int64_t B, int64_t Tl, int64_t C, int64_t V, int64_t r, int64_t G) {
  prt_embedding_grad(dwte, dwpe, dout, tok, B, Tl, C, V, r, G);
}

/* ---- layernorm ---- */

void prt_layernorm_fwd(float *out, float *mean, float *rstd, const float *x, const float *w,
                       const float *b, int64_t N, int64_t C, float eps) {
  prt_comm_progress();
  for (int64_t i = 0; i < N; i++) {
    const float *xi = x + i * C;
    double s = 0.0;
    for (int64_t c = 0; c < C; c++) s += xi[c];
    float m = (float)(s / (double)C);
    double v = 0.0;
    for (int64_t c = 0; c < C; c++) {
      double d = (double)(xi[c] - m);
      v += d * d;
    }
    float r = 1.0f / sqrtf((float)(v / (double)C) + eps); /* biased variance */
    float *oi = out + i * C;
    for (int64_t c = 0; c < C; c++) oi[c] = (xi[c] - m) * r * w[c] + b[c];
    mean[i] = m;
    rstd[i] = r;
  }
}

void prt_layernorm_bwd(float *dx, float *dw, float *db, const float *dout, const float *x,
                       const float *w, const float *mean, const float *rstd, int64_t N,
                       int64_t C) {
  prt_comm_progress();
  double *acc = prt_xmalloc((size_t)(2 * C) * sizeof(double), "prt_layernorm_bwd scratch");
  double *dw_acc = acc, *db_acc = acc + C;
  memset(acc, 0, (size_t)(2 * C) * sizeof(double));
  for (int64_t i = 0; i < N; i++) {
    const float *xi = x + i * C, *di = dout + i * C;
    float m = mean[i], r = rstd[i];
    /* dx = rstd * (dnorm - mean(dnorm) - norm * mean(dnorm * norm)), dnorm = w * dout */
    double s1 = 0.0, s2 = 0.0;
    for (int64_t c = 0; c < C; c++) {
      float norm = (xi[c] - m) * r;
      float dnorm = w[c] * di[c];
      s1 += dnorm;
      s2 += (double)dnorm * norm;
      db_acc[c] += di[c];
      dw_acc[c] += (double)norm * di[c];
    }
    float mean_d = (float)(s1 / (double)C), mean_dn = (float)(s2 / (double)C);
    float *dxi = dx + i * C;
    for (int64_t c = 0; c < C; c++) {
      float norm = (xi[c] - m) * r;
      dxi[c] = (w[c] * di[c] - mean_d - norm * mean_dn) * r;
    }
  }
  for (int64_t c = 0; c < C; c++) {
    dw[c] = (float)dw_acc[c];
    db[c] = (float)db_acc[c];
  }
  free(acc);
}

/* ---- linear: one sgemm on the flattened (M, K) matrices each ---- */

void prt_linear_fwd(float *out, const float *x, const float *w, const float *b, int64_t M,
                    int64_t N, int64_t K) {
  prt_comm_progress();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)M, (blasint)N, (blasint)K,
              1.0f, x, (blasint)K, w, (blasint)K, 0.0f, out, (blasint)N);
  if (!b) return;
  for (int64_t i = 0; i < M; i++) {
    float *o = out + i * N;
    for (int64_t j = 0; j < N; j++) o[j] += b[j];
  }
}

void prt_linear_bwd_input(float *dx, const float *dout, const float *w, int64_t M, int64_t N,
                          int64_t K) {
  prt_comm_progress();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)M, (blasint)K, (blasint)N,
              1.0f, dout, (blasint)N, w, (blasint)K, 0.0f, dx, (blasint)K);
}

void prt_linear_bwd_weight(float *dw, const float *dout, const float *x, int64_t M, int64_t N,
                           int64_t K) {
  prt_comm_progress();
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)N, (blasint)K, (blasint)M,
              1.0f, dout, (blasint)N, x, (blasint)K, 0.0f, dw, (blasint)K);
}

void prt_bias_bwd(float *db, const float *dout, int64_t M, int64_t N) {
  prt_comm_progress();
  enum { CHUNK = 512 }; /* columns summed at once, in double, on the stack */
  double acc[CHUNK];
  for (int64_t j0 = 0; j0 < N; j0 += CHUNK) {
    int64_t nj = N - j0 < CHUNK ? N - j0 : CHUNK;
    memset(acc, 0, sizeof acc);
    for (int64_t i = 0; i < M; i++) {
      const float *d = dout + i * N + j0;
      for (int64_t j = 0; j < nj; j++) acc[j] += d[j];
    }
    for (int64_t j = 0; j < nj; j++) db[j0 + j] = (float)acc[j];
  }
}

void prt_linear_bwd_weight_bias(float *dw, float *db, const float *dout, const float *x,
                                int64_t M, int64_t N, int64_t K) {
  prt_linear_bwd_weight(dw, dout, x, M, N, K);
  prt_bias_bwd(db, dout, M, N);
}

/* The linear kernels on bf16 operands (kernels.def linear_*_bf16): the GPU multiplies them on
 * tensor cores with fp32 accumulation; the CPU widens both (exactly) and calls its fp32
 * kernel, so its numbers are those of the widen + fp32 kernel pair the lowering used before. */
static float *widened(const uint16_t *src, int64_t n, const char *what) {
  float *dst = prt_xmalloc((size_t)n * sizeof *dst, what);
  prt_bf16_widen(dst, src, n);
  return dst;
}

void prt_linear_fwd_bf16(float *out, const uint16_t *x, const uint16_t *w, const float *b,
                         int64_t M, int64_t N, int64_t K) {
  float *xf = widened(x, M * K, "prt_linear_fwd_bf16");
  float *wf = widened(w, N * K, "prt_linear_fwd_bf16");
  prt_linear_fwd(out, xf, wf, b, M, N, K);
  free(xf);
  free(wf);
}

void prt_linear_bwd_input_bf16(float *dx, const uint16_t *dout, const uint16_t *w, int64_t M,
                               int64_t N, int64_t K) {
  float *df = widened(dout, M * N, "prt_linear_bwd_input_bf16");
  float *wf = widened(w, N * K, "prt_linear_bwd_input_bf16");
  prt_linear_bwd_input(dx, df, wf, M, N, K);
  free(df);
  free(wf);
}

void prt_linear_bwd_weight_bf16(float *dw, const uint16_t *dout, const uint16_t *x, int64_t M,
                                int64_t N, int64_t K) {
  float *df = widened(dout, M * N, "prt_linear_bwd_weight_bf16");
  float *xf = widened(x, M * K, "prt_linear_bwd_weight_bf16");
  prt_linear_bwd_weight(dw, df, xf, M, N, K);
  free(df);
  free(xf);
}

void prt_linear_bwd_weight_bias_bf16(float *dw, float *db, const uint16_t *dout,
                                     const uint16_t *x, int64_t M, int64_t N, int64_t K) {
  float *df = widened(dout, M * N, "prt_linear_bwd_weight_bias_bf16");
  float *xf = widened(x, M * K, "prt_linear_bwd_weight_bias_bf16");
  prt_linear_bwd_weight_bias(dw, db, df, xf, M, N, K);
  free(df);
  free(xf);
}

/* ---- attention: kernels/cpu_attention.c ---- */

/* ---- elementwise ---- */

/* Hot elementwise loops get an AVX2+FMA clone picked at load time (GCC function
 * multiversioning), so the binary still runs on any x86-64 while using 8-wide vectors where
 * the CPU has them. */
#define PRT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))

/* e^z in a form GCC vectorizes, for z in [-87, 88] (the caller clamps): Cephes' range
 * reduction z = n ln2 + r, |r| <= ln2/2, with ln2 split in two so n*ln2 is exact, and a
 * degree-7 Taylor polynomial for e^r (truncation < 1e-8 relative); 2^n goes straight into the
 * exponent bits, which is why z must keep 2^n a normal float. */
static inline float exp_vec(float z) {
  float n = floorf(z * 1.44269504088896341f + 0.5f);
  float r = z - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  int32_t bits = ((int32_t)n + 127) << 23;
  float scale;
  memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

/* tanh(u) vectorized (libm's tanhf is a scalar call and cost a quarter of a GPT step):
 * tanh(u) = 1 - 2 / (e^(2u) + 1), u clamped to [-9, 9], where tanh already rounds to +-1 in
 * float. Max abs error vs double tanh: 2.4e-7 (kernel_test checks it over [-12, 12]). */
static inline float tanh_vec(float u) {
  u = u < -9.0f ? -9.0f : (u > 9.0f ? 9.0f : u);
  return 1.0f - 2.0f / (exp_vec(2.0f * u) + 1.0f);
}

/* 1 + erf(u) vectorized (libm's erff is a scalar call: with the expf of its gradient it took
 * 28% of a GPT-NeoX step with exact GELU). Both branches are computed and one selected, so
 * the loop has no branch:
 *   |u| < 1:  1 + u P(u^2), P of degree 6 fitted to erf(u)/u (relative error 1.3e-9);
 *   |u| >= 1: erfc(a) = t exp(-a^2 + R(t)), a = |u| clamped to 9 (erfc(9) = 4e-37, still a
 *             normal float for exp_vec), t = 1/(1 + a/2), R of degree 9 fitted to
 *             log(erfc(a)/t) + a^2 over [1, 9] (Numerical Recipes' erfcc form; relative error
 *             of erfc 1.4e-9); then 1 + erf(u) = erfc(a) for u < 0, 2 - erfc(a) otherwise.
 * Taking erfc directly for u < 0 keeps GELU's far negative tail accurate relative to its
 * size, where 1 + erff(u) cancels. The fits are least squares in double (the coefficients
 * below, rounded to float); max abs error vs double 1 + erf in float arithmetic: kernel_test
 * checks it over [-12, 12]. */
static inline float one_plus_erf_vec(float u) {
  float a = fabsf(u), s = u * u;
  float p = 7.84725913e-05f;
  p = p * s - 8.00818932e-04f;
  p = p * s + 5.18809889e-03f;
  p = p * s - 2.68536911e-02f;
  p = p * s + 1.12835822e-01f;
  p = p * s - 3.76126256e-01f;
  p = p * s + 1.12837917f;
  float near0 = 1.0f + u * p;
  float ac = a < 1.0f ? 1.0f : (a > 9.0f ? 9.0f : a);
  float t = 1.0f / (1.0f + 0.5f * ac);
  float r = 0.208172177f;
  r = r * t - 1.0289176f;
  r = r * t + 1.94308373f;
  r = r * t - 1.66895526f;
  r = r * t + 0.6512895f;
  r = r * t - 0.346801527f;
  r = r * t + 0.139483887f;
  r = r * t + 0.367337919f;
  r = r * t + 1.00060154f;
  r = r * t - 1.26553282f;
  float erfc = t * exp_vec(r - ac * ac);
  float tail = u < 0.0f ? erfc : 2.0f - erfc;
  return a < 1.0f ? near0 : tail;
}

float prt_tanh_approx(float u) { return tanh_vec(u); }
float prt_one_plus_erf_approx(float u) { return one_plus_erf_vec(u); }

PRT_VECTOR_CLONES
void prt_gelu_fwd(float *out, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i], cube = 0.044715f * xi * xi * xi;
    out[i] = 0.5f * xi * (1.0f + tanh_vec(GELU_SCALE * (xi + cube)));
  }
}

PRT_VECTOR_CLONES
void prt_gelu_bwd(float *dx, const float *dout, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i], cube = 0.044715f * xi * xi * xi;
    float th = tanh_vec(GELU_SCALE * (xi + cube));
    float sech2 = 1.0f - th * th; /* 1 / cosh^2, without cosh's overflow */
    float local = 0.5f * (1.0f + th) +
                  xi * 0.5f * sech2 * GELU_SCALE * (1.0f + 3.0f * 0.044715f * xi * xi);
    dx[i] = local * dout[i];
  }
}

#define SQRT1_2 0.70710678118654752f    /* 1/sqrt(2) */
#define INV_SQRT_2PI 0.3989422804014327f /* 1/sqrt(2 pi) */

/* Exact GELU (nn.GELU(), F.gelu without `approximate`): x/2 (1 + erf(x/sqrt(2))). */
PRT_VECTOR_CLONES
void prt_gelu_erf_fwd(float *out, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = 0.5f * x[i] * one_plus_erf_vec(x[i] * SQRT1_2);
}

/* dx = dout (Phi(x) + x phi(x)): (1 + erf(x/sqrt(2)))/2 + x e^(-x^2/2)/sqrt(2 pi), the
 * exponent clamped at -87 for exp_vec (e^-87 is 0 to the sum in float). */
PRT_VECTOR_CLONES
void prt_gelu_erf_bwd(float *dx, const float *dout, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i], z = -0.5f * xi * xi;
    float density = INV_SQRT_2PI * exp_vec(z < -87.0f ? -87.0f : z);
    dx[i] = dout[i] * (0.5f * one_plus_erf_vec(xi * SQRT1_2) + xi * density);
  }
}

/* x <= 0 rather than x > 0: a NaN fails the test and passes through, as in torch.relu and its
 * threshold_backward */
void prt_relu_fwd(float *out, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = x[i] <= 0.0f ? 0.0f : x[i];
}

void prt_relu_bwd(float *dx, const float *dout, const float *x, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) dx[i] = x[i] <= 0.0f ? 0.0f : dout[i];
}

void prt_add(float *out, const float *a, const float *b, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void prt_bias_add(float *out, const float *x, const float *b, int64_t M, int64_t N) {
  prt_comm_progress();
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) out[i * N + j] = x[i * N + j] + b[j];
}

void prt_copy(float *dst, const float *src, int64_t n) {
  prt_comm_progress();
  if (dst != src) memmove(dst, src, (size_t)n * sizeof(float));
}

/* ---- loss ---- */

void prt_cross_entropy_fwd(float *loss, float *probs, const float *logits,
                           const int32_t *targets, int64_t N, int64_t V, float smoothing) {
  prt_comm_progress();
  double total = 0.0;
  for (int64_t i = 0; i < N; i++) {
    const float *l = logits + i * V;
    float *p = probs + i * V;
    int32_t y = targets[i];
    prt_check_token(y, i, V, "prt_cross_entropy_fwd");
    float mx = l[0];
    for (int64_t j = 1; j < V; j++) mx = l[j] > mx ? l[j] : mx;
    double sum = 0.0, shifted = 0.0; /* sum of e^(l - max), and of l - max */
    for (int64_t j = 0; j < V; j++) {
      p[j] = expf(l[j] - mx);
      sum += p[j];
      shifted += (double)(l[j] - mx);
    }
    float inv = (float)(1.0 / sum);
    for (int64_t j = 0; j < V; j++) p[j] *= inv;
    /* -log softmax[y] = log(sum) - (l[y] - max): finite even when p[y] underflows */
    double nll = log(sum) - (double)(l[y] - mx);
    /* label smoothing: mean_j(-log p[j]) = log(sum) - mean_j(l[j] - max) */
    total += smoothing == 0.0f ? nll
                               : (1.0 - smoothing) * nll + smoothing * (log(sum) - shifted / V);
  }
  loss[0] = (float)(total / (double)N);
}

void prt_cross_entropy_bwd(float *dlogits, const float *probs, const int32_t *targets,
                           int64_t N, int64_t V, int64_t total_rows, float smoothing) {
  prt_comm_progress();
  float inv_n = 1.0f / (float)total_rows;
  float uniform = smoothing / (float)V, hit = 1.0f - smoothing; /* e / V; 1 - e */
  for (int64_t i = 0; i < N; i++) {
    const float *p = probs + i * V;
    float *d = dlogits + i * V;
    int32_t y = targets[i];
    prt_check_token(y, i, V, "prt_cross_entropy_bwd");
    for (int64_t j = 0; j < V; j++) d[j] = (p[j] - uniform) * inv_n;
    d[y] = (p[y] - hit - uniform) * inv_n;
  }
}

/* ---- optimizer ---- */

/* The shortest decimal that rounds to x, as a double: 0.9f -> 0.9, 0.999f -> 0.999. The
 * ABI passes betas as float but torch computes 1 - beta and beta^t in double from the
 * Python literal; at beta2 = 0.999 using the float directly would shift the t = 1 bias
 * correction by 1.3e-5 relative. Rounding to k decimals as n / 10^k (or n * 10^-k) with
 * exact powers of ten gives the double nearest the decimal. */
static double prt_decimal_of(float x) {
  if (x == 0.0f || !isfinite(x)) return (double)x;
  int e10 = (int)floor(log10(fabs((double)x)));
  for (int digits = 1; digits <= 9; digits++) {
    int k = digits - 1 - e10; /* decimals after the point */
    if (k > 22 || k < -22) break; /* 10^|k| no longer exact */
    double p = pow(10.0, abs(k));
    double d = k >= 0 ? nearbyint((double)x * p) / p : nearbyint((double)x / p) * p;
    if ((float)d == x) return d;
  }
  return (double)x;
}

/* torch.optim.AdamW (single-tensor path, torch 1.13), element for element:
 *   p.mul_(1 - lr*wd)                                   if decay
 *   m.mul_(b1).add_(g, alpha=1-b1)
 *   v.mul_(b2).addcmul_(g, g, value=1-b2)
 *   denom = (v.sqrt() / sqrt(1 - b2^t)).add_(eps)
 *   p.addcdiv_(m, denom, value=-lr / (1 - b1^t))
 * Scalars are computed in double as Python does and rounded to float where torch's kernels
 * see them; tensor arithmetic is float in the same order (torch's vectorised paths may
 * fuse a multiply-add, so the last bit can differ). */
prt_adam_scalars prt_adam_scalars_of(const prt_ctx *ctx, float beta1, float beta2, float eps) {
  /* --adam-beta1/--adam-beta2/--adam-eps win over the plan's attributes when given */
  double b1 = isnan(ctx->adam_beta1) ? prt_decimal_of(beta1) : ctx->adam_beta1;
  double b2 = isnan(ctx->adam_beta2) ? prt_decimal_of(beta2) : ctx->adam_beta2;
  prt_adam_scalars a;
  a.beta1 = isnan(ctx->adam_beta1) ? beta1 : (float)ctx->adam_beta1;
  a.beta2 = isnan(ctx->adam_beta2) ? beta2 : (float)ctx->adam_beta2;
  a.eps = isnan(ctx->adam_eps) ? eps : (float)ctx->adam_eps;
  a.clip = ctx->clip_scale; /* --grad-clip: g * min(1, G / (norm + 1e-6)), as torch */
  double t = (double)ctx->adam_t;
  double bc1 = 1.0 - pow(b1, t), bc2 = 1.0 - pow(b2, t);
  a.keep = (float)(1.0 - ctx->lr * ctx->weight_decay);
  a.one_minus_b1 = (float)(1.0 - b1);
  a.one_minus_b2 = (float)(1.0 - b2);
  a.bc2_sqrt = (float)sqrt(bc2);
  a.neg_step = (float)(-(ctx->lr / bc1));
  return a;
}

void prt_adamw(prt_ctx *ctx, float *p, const float *g, float *m, float *v, uint16_t *p16,
               int64_t n, float beta1, float beta2, float eps, int32_t decay) {
  prt_comm_progress();
  if (prt_elastic_dry(ctx)) return; /* an elastic step updates in its last pass only */
  g = prt_elastic_grad(ctx, g); /* an elastic ZeRO-2/3 rank's k shards (elastic.c) */
  prt_adam_scalars a = prt_adam_scalars_of(ctx, beta1, beta2, eps);
  beta1 = a.beta1;
  beta2 = a.beta2;
  eps = a.eps;
  float clip = a.clip, keep = a.keep, one_minus_b1 = a.one_minus_b1;
  float one_minus_b2 = a.one_minus_b2, bc2_sqrt = a.bc2_sqrt, neg_step = a.neg_step;
  for (int64_t i = 0; i < n; i++) {
    float pi = p[i], gi = clip == 1.0f ? g[i] : g[i] * clip;
    if (decay) pi = pi * keep;
    float mi = m[i] * beta1 + one_minus_b1 * gi;
    float vi = v[i] * beta2 + one_minus_b2 * gi * gi;
    float denom = sqrtf(vi) / bc2_sqrt + eps;
    p[i] = pi + neg_step * mi / denom;
    m[i] = mi;
    v[i] = vi;
    if (p16) p16[i] = prt_f32_to_bf16(p[i]);
  }
}

/* ---- mixture of experts (layout: include/piper/tdag_ops.def, "mixture of experts") ---- */

/* pos[n*K+k] = the row of token n's k-th copy; counts[e] (may be NULL) = copies per expert.
 * Group g's rows start at g*cap, expert e's after those of the lower experts of its group, each
 * expert's copies in token order: a stable counting sort, so every op recomputes the same rows
 * from the expert ids alone. */
void prt_moe_positions(int32_t *pos, int32_t *counts, const int32_t *ex, int64_t N, int64_t K,
                       int64_t E, int64_t G, const char *kernel) {
  int64_t El = E / G, cap = N * (K < El ? K : El);
  int64_t *next = prt_xmalloc((size_t)E * sizeof *next, "MoE positions scratch");
  memset(next, 0, (size_t)E * sizeof *next);
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
      int32_t e = ex[n * K + k];
      if (e < 0 || e >= E)
        prt_fatal("%s: expert id %d of token %lld is outside [0, %lld)", kernel, e, (long long)n,
                  (long long)E);
      for (int64_t q = 0; q < k; q++)
        if (ex[n * K + q] == e)
          prt_fatal("%s: token %lld names expert %d twice", kernel, (long long)n, e);
      next[e]++;
    }
  if (counts)
    for (int64_t e = 0; e < E; e++) counts[e] = (int32_t)next[e];
  /* next[e] = the first row of expert e */
  for (int64_t g = 0; g < G; g++) {
    int64_t row = g * cap;
    for (int64_t e = g * El; e < (g + 1) * El; e++) {
      int64_t c = next[e];
      next[e] = row;
      row += c;
    }
  }
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) pos[n * K + k] = (int32_t)next[ex[n * K + k]]++;
  free(next);
}

void prt_moe_topk_fwd(float *weights, int32_t *experts, const float *logits, int64_t N,
                      int64_t E, int64_t K) {
  prt_comm_progress();
  for (int64_t n = 0; n < N; n++) { /* each token's K best experts, best first */
    const float *l = logits + n * E;
    int32_t *ex = experts + n * K;
    for (int64_t k = 0; k < K; k++) {
      int64_t best = -1; /* the largest not yet chosen; ">" keeps the lower index on ties */
      for (int64_t e = 0; e < E; e++) {
        bool taken = false;
        for (int64_t q = 0; q < k; q++) taken |= ex[q] == e;
        if (!taken && (best < 0 || l[e] > l[best])) best = e;
      }
      ex[k] = (int32_t)best;
    }
  }
  /* a test recording or replaying the routing sees (and may replace) the choices here, before
   * they are weighted (runtime/routing.c) */
  if (prt_routing_active) prt_routing_apply(experts, logits, N, E, K);
  for (int64_t n = 0; n < N; n++) { /* their probabilities, renormalized over the K */
    const float *l = logits + n * E;
    const int32_t *ex = experts + n * K;
    float *w = weights + n * K;
    float m = l[0];
    for (int64_t e = 1; e < E; e++) m = l[e] > m ? l[e] : m;
    double z = 0.0; /* softmax denominator: p_e = exp(l_e - m) / z */
    for (int64_t e = 0; e < E; e++) z += exp((double)(l[e] - m));
    double sum = 0.0;
    for (int64_t k = 0; k < K; k++) {
      w[k] = (float)(exp((double)(l[ex[k]] - m)) / z); /* p, as torch's softmax */
      sum += w[k];
    }
    for (int64_t k = 0; k < K; k++) w[k] = (float)(w[k] / sum);
  }
}

void prt_moe_topk_bwd(float *dlogits, const float *dweights, const float *weights,
                      const int32_t *experts, int64_t N, int64_t E, int64_t K) {
  prt_comm_progress();
  memset(dlogits, 0, (size_t)(N * E) * sizeof(float));
  for (int64_t n = 0; n < N; n++) {
    const float *dw = dweights + n * K, *w = weights + n * K;
    double s = 0.0;
    for (int64_t k = 0; k < K; k++) s += (double)dw[k] * w[k];
    for (int64_t k = 0; k < K; k++) {
      int32_t e = experts[n * K + k];
      if (e < 0 || e >= E)
        prt_fatal("prt_moe_topk_bwd: expert id %d of token %lld is outside [0, %lld)", e,
                  (long long)n, (long long)E);
      dlogits[n * E + e] = (float)(w[k] * (dw[k] - s));
    }
  }
}

void prt_moe_dispatch_fwd(float *rows, int32_t *counts, const float *h, const int32_t *experts,
                          int64_t N, int64_t K, int64_t C, int64_t E, int64_t G) {
  prt_comm_progress();
  int64_t El = E / G, R = G * N * (K < El ? K : El);
  int32_t *pos = prt_xmalloc((size_t)(N * K) * sizeof *pos, "prt_moe_dispatch_fwd scratch");
  prt_moe_positions(pos, counts, experts, N, K, E, G, "prt_moe_dispatch_fwd");
  memset(rows, 0, (size_t)(R * C) * sizeof(float));
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++)
      memcpy(rows + (int64_t)pos[n * K + k] * C, h + n * C, (size_t)C * sizeof(float));
  free(pos);
}

void prt_moe_dispatch_bwd(float *dh, const float *drows, const int32_t *experts, int64_t N,
                          int64_t K, int64_t C, int64_t E, int64_t G) {
  prt_comm_progress();
  int32_t *pos = prt_xmalloc((size_t)(N * K) * sizeof *pos, "prt_moe_dispatch_bwd scratch");
  prt_moe_positions(pos, NULL, experts, N, K, E, G, "prt_moe_dispatch_bwd");
  for (int64_t n = 0; n < N; n++) {
    float *d = dh + n * C;
    memset(d, 0, (size_t)C * sizeof(float));
    for (int64_t k = 0; k < K; k++) {
      const float *r = drows + (int64_t)pos[n * K + k] * C;
      for (int64_t c = 0; c < C; c++) d[c] += r[c];
    }
  }
  free(pos);
}

void prt_moe_combine_fwd(float *y, const float *out, const float *weights,
                         const int32_t *experts, int64_t N, int64_t K, int64_t C, int64_t E,
                         int64_t G) {
  prt_comm_progress();
  int32_t *pos = prt_xmalloc((size_t)(N * K) * sizeof *pos, "prt_moe_combine_fwd scratch");
  prt_moe_positions(pos, NULL, experts, N, K, E, G, "prt_moe_combine_fwd");
  for (int64_t n = 0; n < N; n++) {
    float *yn = y + n * C;
    memset(yn, 0, (size_t)C * sizeof(float));
    for (int64_t k = 0; k < K; k++) {
      const float *o = out + (int64_t)pos[n * K + k] * C;
      float w = weights[n * K + k];
      for (int64_t c = 0; c < C; c++) yn[c] += w * o[c];
    }
  }
  free(pos);
}

void prt_moe_combine_bwd(float *dout, float *dweights, const float *dy, const float *out,
                         const float *weights, const int32_t *experts, int64_t N, int64_t K,
                         int64_t C, int64_t E, int64_t G) {
  prt_comm_progress();
  int64_t El = E / G, R = G * N * (K < El ? K : El);
  int32_t *pos = prt_xmalloc((size_t)(N * K) * sizeof *pos, "prt_moe_combine_bwd scratch");
  prt_moe_positions(pos, NULL, experts, N, K, E, G, "prt_moe_combine_bwd");
  memset(dout, 0, (size_t)(R * C) * sizeof(float));
  for (int64_t n = 0; n < N; n++)
    for (int64_t k = 0; k < K; k++) {
      const float *d = dy + n * C, *o = out + (int64_t)pos[n * K + k] * C;
      float *g = dout + (int64_t)pos[n * K + k] * C, w = weights[n * K + k];
      double s = 0.0;
      for (int64_t c = 0; c < C; c++) {
        g[c] = w * d[c];
        s += (double)d[c] * o[c];
      }
      dweights[n * K + k] = (float)s;
    }
  free(pos);
}

/* First row and row count of local expert j in block s; counts that are negative or overflow
 * the block (a corrupt exchange) are fatal rather than out-of-bounds writes. */
void prt_moe_segment(const int32_t *counts, int64_t s, int64_t cap, int64_t El, int64_t j,
                     int64_t *first, int64_t *len, const char *kernel) {
  int64_t off = 0;
  for (int64_t q = 0; q < El; q++) {
    int32_t c = counts[s * El + q];
    if (c < 0 || off + c > cap)
      prt_fatal("%s: block %lld's expert counts overflow its %lld rows", kernel, (long long)s,
                (long long)cap);
    if (q < j) off += c;
  }
  *first = s * cap + off;
  *len = counts[s * El + j];
}

/* Rows of block s past its last expert's, which the j = El-1 calls zero. */
int64_t prt_moe_block_used(const int32_t *counts, int64_t s, int64_t El) {
  int64_t used = 0;
  for (int64_t q = 0; q < El; q++) used += counts[s * El + q];
  return used;
}

static float prt_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* bf16: the bf16 policy's twin (kernels.def moe_expert_*_bf16): the intermediates an unfused
 * graph stores (g, u, silu(g) u; in the backward dact, dg, du) rounded to bf16 values, as the
 * reference (test/oracle/moe_torch.py) rounds them. */
static void expertFwd(float *out, float *hidden, const float *rows, const int32_t *counts,
                      int64_t G, int64_t cap, int64_t El, int64_t j, const float *wg,
                      const float *wu, const float *wd, int64_t C, int64_t Fe, bool bf16) {
  prt_comm_progress();
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(counts, s, cap, El, j, &first, &n, "prt_moe_expert_fwd");
    if (n > 0) {
      const float *x = rows + first * C;
      float *hid = hidden + first * 2 * Fe, *o = out + first * C;
      /* hidden[:, :Fe] = x wg^T, hidden[:, Fe:] = x wu^T (row stride 2Fe) */
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)Fe, (blasint)C,
                  1.0f, x, (blasint)C, wg, (blasint)C, 0.0f, hid, (blasint)(2 * Fe));
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)Fe, (blasint)C,
                  1.0f, x, (blasint)C, wu, (blasint)C, 0.0f, hid + Fe, (blasint)(2 * Fe));
      if (bf16) prt_bf16_round(hid, hid, n * 2 * Fe); /* n whole rows of 2Fe */
      float *act = prt_xmalloc((size_t)(n * Fe) * sizeof *act, "prt_moe_expert_fwd scratch");
      for (int64_t i = 0; i < n; i++)
        for (int64_t f = 0; f < Fe; f++) {
          float g = hid[i * 2 * Fe + f], u = hid[i * 2 * Fe + Fe + f];
          act[i * Fe + f] = g * prt_sigmoid(g) * u;
        }
      if (bf16) prt_bf16_round(act, act, n * Fe);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (blasint)n, (blasint)C, (blasint)Fe,
                  1.0f, act, (blasint)Fe, wd, (blasint)Fe, 0.0f, o, (blasint)C);
      free(act);
    }
    if (j == El - 1) {
      int64_t used = prt_moe_block_used(counts, s, El);
      memset(out + (s * cap + used) * C, 0, (size_t)((cap - used) * C) * sizeof(float));
      memset(hidden + (s * cap + used) * 2 * Fe, 0,
             (size_t)((cap - used) * 2 * Fe) * sizeof(float));
    }
  }
}

void prt_moe_expert_fwd(float *out, float *hidden, const float *rows, const int32_t *counts,
                        int64_t G, int64_t cap, int64_t El, int64_t j, const float *wg,
                        const float *wu, const float *wd, int64_t C, int64_t Fe) {
  expertFwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, false);
}
void prt_moe_expert_fwd_bf16(float *out, float *hidden, const float *rows,
                             const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                             int64_t j, const float *wg, const float *wu, const float *wd,
                             int64_t C, int64_t Fe) {
  expertFwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, true);
}

/* dact = dout wd for n rows, then dg, du in place of two (n, Fe) buffers, from hidden; with
 * bf16, dact, dg and du rounded to bf16 values. */
static void prt_moe_expert_dgu(float *dg, float *du, const float *dout, const float *hid,
                               const float *wd, int64_t n, int64_t C, int64_t Fe, bool bf16) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)Fe, (blasint)C,
              1.0f, dout, (blasint)C, wd, (blasint)Fe, 0.0f, dg, (blasint)Fe);
  if (bf16) prt_bf16_round(dg, dg, n * Fe);
  for (int64_t i = 0; i < n; i++)
    for (int64_t f = 0; f < Fe; f++) {
      float g = hid[i * 2 * Fe + f], u = hid[i * 2 * Fe + Fe + f], sg = prt_sigmoid(g);
      float da = dg[i * Fe + f];
      du[i * Fe + f] = da * g * sg;                             /* d/du of silu(g) u */
      dg[i * Fe + f] = da * u * sg * (1.0f + g * (1.0f - sg)); /* silu'(g) */
    }
  if (bf16) {
    prt_bf16_round(dg, dg, n * Fe);
    prt_bf16_round(du, du, n * Fe);
  }
}

static void expertBwdInput(float *drows, const float *dout, const int32_t *counts,
                           const float *hidden, int64_t G, int64_t cap, int64_t El, int64_t j,
                           const float *wg, const float *wu, const float *wd, int64_t C,
                           int64_t Fe, bool bf16) {
  prt_comm_progress();
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(counts, s, cap, El, j, &first, &n, "prt_moe_expert_bwd_input");
    if (n > 0) {
      float *buf = prt_xmalloc((size_t)(2 * n * Fe) * sizeof *buf, "prt_moe_expert_bwd_input");
      float *dg = buf, *du = buf + n * Fe;
      prt_moe_expert_dgu(dg, du, dout + first * C, hidden + first * 2 * Fe, wd, n, C, Fe,
                         bf16);
      float *dx = drows + first * C;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)C, (blasint)Fe,
                  1.0f, dg, (blasint)Fe, wg, (blasint)C, 0.0f, dx, (blasint)C);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (blasint)n, (blasint)C, (blasint)Fe,
                  1.0f, du, (blasint)Fe, wu, (blasint)C, 1.0f, dx, (blasint)C);
      free(buf);
    }
    if (j == El - 1) {
      int64_t used = prt_moe_block_used(counts, s, El);
      memset(drows + (s * cap + used) * C, 0, (size_t)((cap - used) * C) * sizeof(float));
    }
  }
}

void prt_moe_expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                              const float *hidden, int64_t G, int64_t cap, int64_t El,
                              int64_t j, const float *wg, const float *wu, const float *wd,
                              int64_t C, int64_t Fe) {
  expertBwdInput(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, false);
}
void prt_moe_expert_bwd_input_bf16(float *drows, const float *dout, const int32_t *counts,
                                   const float *hidden, int64_t G, int64_t cap, int64_t El,
                                   int64_t j, const float *wg, const float *wu, const float *wd,
                                   int64_t C, int64_t Fe) {
  expertBwdInput(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, true);
}

static void expertBwdWeight(float *dwg, float *dwu, float *dwd, const float *dout,
                            const float *rows, const int32_t *counts, const float *hidden,
                            int64_t G, int64_t cap, int64_t El, int64_t j, const float *wd,
                            int64_t C, int64_t Fe, bool bf16) {
  prt_comm_progress();
  memset(dwg, 0, (size_t)(Fe * C) * sizeof(float));
  memset(dwu, 0, (size_t)(Fe * C) * sizeof(float));
  memset(dwd, 0, (size_t)(C * Fe) * sizeof(float));
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(counts, s, cap, El, j, &first, &n, "prt_moe_expert_bwd_weight");
    if (n == 0) continue;
    const float *x = rows + first * C, *d = dout + first * C, *hid = hidden + first * 2 * Fe;
    float *buf = prt_xmalloc((size_t)(3 * n * Fe) * sizeof *buf, "prt_moe_expert_bwd_weight");
    float *dg = buf, *du = buf + n * Fe, *act = buf + 2 * n * Fe;
    for (int64_t i = 0; i < n; i++)
      for (int64_t f = 0; f < Fe; f++) {
        float g = hid[i * 2 * Fe + f], u = hid[i * 2 * Fe + Fe + f];
        act[i * Fe + f] = g * prt_sigmoid(g) * u;
      }
    if (bf16) prt_bf16_round(act, act, n * Fe);
    prt_moe_expert_dgu(dg, du, d, hid, wd, n, C, Fe, bf16);
    /* dwd += dout^T act, dwg += dg^T x, dwu += du^T x */
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)C, (blasint)Fe, (blasint)n,
                1.0f, d, (blasint)C, act, (blasint)Fe, 1.0f, dwd, (blasint)Fe);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)Fe, (blasint)C, (blasint)n,
                1.0f, dg, (blasint)Fe, x, (blasint)C, 1.0f, dwg, (blasint)C);
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (blasint)Fe, (blasint)C, (blasint)n,
                1.0f, du, (blasint)Fe, x, (blasint)C, 1.0f, dwu, (blasint)C);
    free(buf);
  }
}
void prt_moe_expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                               const float *rows, const int32_t *counts, const float *hidden,
                               int64_t G, int64_t cap, int64_t El, int64_t j, const float *wd,
                               int64_t C, int64_t Fe) {
  expertBwdWeight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, false);
}
void prt_moe_expert_bwd_weight_bf16(float *dwg, float *dwu, float *dwd, const float *dout,
                                    const float *rows, const int32_t *counts,
                                    const float *hidden, int64_t G, int64_t cap, int64_t El,
                                    int64_t j, const float *wd, int64_t C, int64_t Fe) {
  expertBwdWeight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, true);
}
