/* bf16 conversions of the mixed-precision policy (include/piper/kernels.def,
 * docs/mixed-precision.md): a bf16 is the upper 16 bits of an IEEE fp32 (sign, the same 8-bit
 * exponent, 7 mantissa bits), so widening is a shift and narrowing rounds the 16 dropped bits. The
 * lowering calls these around every kernel whose operands or results are stored in bf16, so
 * the kernels themselves stay fp32; the fp32 kernels that take bf16 operands (kernels/cpu.c's
 * linear_*_bf16, the experts' rounded intermediates) call them too, never the other way. */
#include <stdint.h>

#include "piper/runtime.h"
#include "prt_safetensors.h"

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
