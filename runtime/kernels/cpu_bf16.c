/* bf16 conversions of the mixed-precision policy (include/piper/kernels.def,
 * docs/mixed-precision.md): a bf16 is the upper 16 bits of an IEEE fp32 (sign, the same 8-bit
 * exponent, 7 mantissa bits), so widening is a shift and narrowing rounds the 16 dropped bits. The
 * lowering calls these around every kernel whose operands or results are stored in bf16, so
 * the kernels themselves stay fp32. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "piper/runtime.h"
#include "prt_internal.h"

/* One element: prt_f32_to_bf16 and prt_bf16_to_f32 (prt_internal.h), the checkpoints' own. */
void prt_bf16_widen(float *dst, const uint16_t *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = prt_bf16_to_f32(src[i]);
}

void prt_bf16_narrow(uint16_t *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = prt_f32_to_bf16(src[i]);
}

void prt_bf16_round(float *dst, const float *src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = prt_bf16_to_f32(prt_f32_to_bf16(src[i]));
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
