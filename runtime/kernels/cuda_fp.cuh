// The loads and stores of the nvcc-built kernels' tensor arguments that the kernel list types
// FP_IN / FP_OUT (include/piper/kernels.def): fp32, or bf16 where the plan stores the value
// bf16 (kernels/cuda.h prt_fp_in, prt_fp_out: the call's mask bit). A bf16 is widened at the
// load (its bits the fp32's upper half: exact) and a result rounded to the nearest bf16 at
// the store, ties to even, a NaN to the one quiet NaN 0x7fc0: prt_f32_to_bf16's operations
// (runtime/prt_internal.h), as the generated kernels' @piper_bf16 (lowering/gpu_kernels.c),
// so a kernel that loads and stores bf16 itself gives the bits of the widen, fp32 kernel,
// narrow sequence it replaces. Host and device alike (the host runs the kernels' rows in the
// fake CUDA runtime and the emulation tests).
#ifndef PIPER_PRT_KERNELS_CUDA_FP_CUH
#define PIPER_PRT_KERNELS_CUDA_FP_CUH

#include <stdint.h>
#include <string.h>

#include "kernels/cuda.h"

#if !defined(__CUDACC__) && !defined(__host__) /* a host compiler without CUDA's headers */
#define __host__
#define __device__
#endif

// x rounded to the nearest bf16 (its 16 bits in the low half)
__host__ __device__ inline uint32_t prt_fp_bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

__host__ __device__ inline float prt_fp_widen(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}

// Element i of t as fp32
__host__ __device__ inline float fp_ld(prt_fp_in t, int64_t i) {
  return t.bf16 ? prt_fp_widen(static_cast<const uint16_t *>(t.p)[i])
                : static_cast<const float *>(t.p)[i];
}

// Element i of t = v, rounded to bf16 where t is bf16
__host__ __device__ inline void fp_st(prt_fp_out t, int64_t i, float v) {
  if (t.bf16) static_cast<uint16_t *>(t.p)[i] = (uint16_t)prt_fp_bf16(v);
  else static_cast<float *>(t.p)[i] = v;
}

// t advanced by i elements of its precision
__host__ __device__ inline prt_fp_in fp_at(prt_fp_in t, int64_t i) {
  t.p = t.bf16 ? (const void *)(static_cast<const uint16_t *>(t.p) + i)
               : (const void *)(static_cast<const float *>(t.p) + i);
  return t;
}
__host__ __device__ inline prt_fp_out fp_at(prt_fp_out t, int64_t i) {
  t.p = t.bf16 ? (void *)(static_cast<uint16_t *>(t.p) + i)
               : (void *)(static_cast<float *>(t.p) + i);
  return t;
}

#endif
