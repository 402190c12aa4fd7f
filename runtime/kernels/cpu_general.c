/* CPU kernels of the general tensor ops (include/piper/tdag_ops.def, "general tensor ops"):
 * what a PyTorch module exported by python/piper computes where --piper-fuse found no fused
 * op. Each does the math of its kernel-list comment (include/piper/kernels.def) in fp32 as
 * PyTorch's CPU kernels do (libm's expf, tanhf; pow's special exponents), so an exported
 * model trained here follows the same module trained by torch to float rounding. Exact GELU
 * (gelu_erf) is in kernels/cpu.c beside the tanh GELU, vectorized as torch's is (its 1 + erf
 * within 2.5e-7 of double's, as libm's erff is within an ulp). Sums over a dim accumulate in
 * double, so they do not drift with the size summed. Every kernel starts with
 * prt_comm_progress(), as the others (runtime/kernels/cpu.c). */
#include <cblas.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

/* ---- strided addressing: up to four dims, i0 slowest ---- */

void prt_strided_copy(float *out, const float *x, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                      int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
  prt_comm_progress();
  for (int64_t a = 0; a < n0; a++)
    for (int64_t b = 0; b < n1; b++)
      for (int64_t c = 0; c < n2; c++) {
        const float *src = x + a * s0 + b * s1 + c * s2;
        float *dst = out + ((a * n1 + b) * n2 + c) * n3;
        if (s3 == 1) memcpy(dst, src, (size_t)n3 * sizeof(float));
        else
          for (int64_t d = 0; d < n3; d++) dst[d] = src[d * s3];
      }
}

void prt_strided_place(float *out, const float *x, int64_t n0, int64_t n1, int64_t n2,
                       int64_t n3, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
  prt_comm_progress();
  for (int64_t a = 0; a < n0; a++)
    for (int64_t b = 0; b < n1; b++)
      for (int64_t c = 0; c < n2; c++) {
        const float *src = x + ((a * n1 + b) * n2 + c) * n3;
        float *dst = out + a * s0 + b * s1 + c * s2;
        if (s3 == 1) memcpy(dst, src, (size_t)n3 * sizeof(float));
        else
          for (int64_t d = 0; d < n3; d++) dst[d * s3] = src[d];
      }
}

void prt_strided_sum(float *out, const float *x, int64_t out_n, int64_t n0, int64_t n1,
                     int64_t n2, int64_t n3, int64_t s0, int64_t s1, int64_t s2, int64_t s3) {
  prt_comm_progress();
  double *acc = prt_xmalloc((size_t)(out_n > 0 ? out_n : 1) * sizeof(double),
                            "prt_strided_sum accumulators");
  memset(acc, 0, (size_t)out_n * sizeof(double));
  for (int64_t a = 0; a < n0; a++)
    for (int64_t b = 0; b < n1; b++)
      for (int64_t c = 0; c < n2; c++) {
        const float *src = x + ((a * n1 + b) * n2 + c) * n3;
        double *dst = acc + a * s0 + b * s1 + c * s2;
        for (int64_t d = 0; d < n3; d++) dst[d * s3] += src[d];
      }
  for (int64_t i = 0; i < out_n; i++) out[i] = (float)acc[i];
  free(acc);
}

void prt_fill(float *out, float value, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = value;
}

void prt_triangle(float *out, int64_t R, int64_t C, int64_t diagonal, float inside,
                  float outside) {
  prt_comm_progress();
  for (int64_t i = 0; i < R; i++)
    for (int64_t j = 0; j < C; j++) out[i * C + j] = j - i <= diagonal ? inside : outside;
}

/* ---- matmul ---- */

void prt_bmm(float *out, const float *a, const float *b, int64_t batch, int64_t M, int64_t N,
             int64_t K, int32_t ta, int32_t tb) {
  prt_comm_progress();
  for (int64_t i = 0; i < batch; i++)
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                (blasint)M, (blasint)N, (blasint)K, 1.0f, a + i * M * K,
                (blasint)(ta ? M : K), b + i * K * N, (blasint)(tb ? K : N), 0.0f,
                out + i * M * N, (blasint)N);
}

/* ---- elementwise: binary with suffix broadcast, scalar, unary ---- */

#define BINARY(name, expr)                                                                   \
  void prt_##name(float *out, const float *a, const float *b, int64_t n, int64_t na,          \
                  int64_t nb) {                                                              \
    prt_comm_progress();                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                        \
      float x = a[na == n ? i : i % na], y = b[nb == n ? i : i % nb];                        \
      out[i] = (expr);                                                                       \
    }                                                                                        \
  }
BINARY(add_bcast, x + y)
BINARY(sub, x - y)
BINARY(mul, x * y)
BINARY(div, x / y)
#undef BINARY

void prt_mul_scalar(float *out, const float *x, float c, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = x[i] * c;
}

void prt_add_scalar(float *out, const float *x, float c, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = x[i] + c;
}

/* x ** c with the exponents torch computes without pow (aten pow_tensor_scalar_optimized). */
static inline float powScalar(float x, float c) {
  if (c == 2.0f) return x * x;
  if (c == 3.0f) return x * x * x;
  if (c == 0.5f) return sqrtf(x);
  if (c == -0.5f) return 1.0f / sqrtf(x);
  if (c == -1.0f) return 1.0f / x;
  if (c == 1.0f) return x;
  if (c == 0.0f) return 1.0f;
  if (c == -1.5f) return 1.0f / (x * sqrtf(x));
  if (c == -2.0f) return 1.0f / (x * x);
  return powf(x, c);
}

void prt_pow_scalar_fwd(float *out, const float *x, float c, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = powScalar(x[i], c);
}

void prt_pow_scalar_bwd(float *dx, const float *dout, const float *x, float c, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) dx[i] = dout[i] * (c * powScalar(x[i], c - 1.0f));
}

#define UNARY(name, fwd, bwd)                                                                \
  void prt_##name##_fwd(float *out, const float *in, int64_t n) {                            \
    prt_comm_progress();                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                        \
      float x = in[i];                                                                       \
      out[i] = (fwd);                                                                        \
    }                                                                                        \
  }                                                                                          \
  void prt_##name##_bwd(float *dx, const float *dout, const float *in, int64_t n) {          \
    prt_comm_progress();                                                                     \
    for (int64_t i = 0; i < n; i++) {                                                        \
      float x = in[i];                                                                       \
      dx[i] = dout[i] * (bwd);                                                               \
    }                                                                                        \
  }
static inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
static inline float cube(float y) { return y * y * y; }
UNARY(exp, expf(x), expf(x))
UNARY(tanh, tanhf(x), 1.0f - tanhf(x) * tanhf(x))
UNARY(rsqrt, 1.0f / sqrtf(x), -0.5f * cube(1.0f / sqrtf(x))) /* torch: -0.5 * dout * y^3 */
UNARY(silu, x * sigmoid(x), sigmoid(x) * (1.0f + x * (1.0f - sigmoid(x))))
#undef UNARY

/* ---- softmax over the middle dim of (outer, n, inner) ---- */

static void softmaxRows(float *out, const float *x, int64_t outer, int64_t n, int64_t inner,
                        bool logarithm) {
  prt_comm_progress();
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      const float *xi = x + o * n * inner + k;
      float *yi = out + o * n * inner + k;
      float max = -INFINITY;
      for (int64_t j = 0; j < n; j++) max = fmaxf(max, xi[j * inner]);
      double sum = 0.0;
      for (int64_t j = 0; j < n; j++) sum += expf(xi[j * inner] - max);
      if (logarithm) {
        float lse = logf((float)sum);
        for (int64_t j = 0; j < n; j++) yi[j * inner] = xi[j * inner] - max - lse;
      } else {
        float inv = (float)(1.0 / sum);
        for (int64_t j = 0; j < n; j++) yi[j * inner] = expf(xi[j * inner] - max) * inv;
      }
    }
}

void prt_softmax_fwd(float *out, const float *x, int64_t outer, int64_t n, int64_t inner) {
  softmaxRows(out, x, outer, n, inner, false);
}

void prt_log_softmax_fwd(float *out, const float *x, int64_t outer, int64_t n, int64_t inner) {
  softmaxRows(out, x, outer, n, inner, true);
}

/* softmax: dx = y (dout - sum(dout y)); log_softmax: dx = dout - exp(y) sum(dout) */
static void softmaxGradRows(float *dx, const float *dout, const float *y, int64_t outer,
                            int64_t n, int64_t inner, bool logarithm) {
  prt_comm_progress();
  for (int64_t o = 0; o < outer; o++)
    for (int64_t k = 0; k < inner; k++) {
      int64_t at = o * n * inner + k;
      double s = 0.0;
      for (int64_t j = 0; j < n; j++)
        s += logarithm ? dout[at + j * inner] : (double)dout[at + j * inner] * y[at + j * inner];
      float sum = (float)s;
      for (int64_t j = 0; j < n; j++) {
        int64_t i = at + j * inner;
        dx[i] = logarithm ? dout[i] - expf(y[i]) * sum : y[i] * (dout[i] - sum);
      }
    }
}

void prt_softmax_bwd(float *dx, const float *dout, const float *y, int64_t outer, int64_t n,
                     int64_t inner) {
  softmaxGradRows(dx, dout, y, outer, n, inner, false);
}

void prt_log_softmax_bwd(float *dx, const float *dout, const float *y, int64_t outer, int64_t n,
                         int64_t inner) {
  softmaxGradRows(dx, dout, y, outer, n, inner, true);
}

void prt_rope_angles(float *out, int64_t T, int64_t N, int64_t D, float theta, int32_t sn) {
  prt_comm_progress();
  int64_t half = D / 2;
  float *cs = prt_xmalloc((size_t)(2 * (T > 0 ? T : 1) * half) * sizeof(float),
                          "prt_rope_angles table");
  prt_rope_table(cs, T, D, theta, 1.0); /* tdag.rope's own angles */
  for (int64_t t = 0; t < T; t++)
    for (int64_t j = 0; j < N; j++) out[t * N + j] = cs[2 * (t * half + j % half) + (sn != 0)];
  free(cs);
}

void prt_masked_fill(float *out, const float *x, const float *mask, float value, int64_t n,
                     int64_t nm) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) out[i] = mask[nm == n ? i : i % nm] != 0.0f ? value : x[i];
}
