// The attention launchers of kernels/cuda.h on the host, for the fake CUDA runtime
// (fake_cuda.c): the kernels' own row functions (runtime/kernels/cuda_attention.cuh) with one
// lane per row, in the kernels' order (forward; dq and D for every row, then dk and dv).
#include <math.h>
#include <stdint.h>

#include "kernels/cuda.h"
#include "kernels/cuda_attention.cuh"

// The one-lane host instance never exchanges between lanes.
float prt_attn_lanes_exchange(float v, int, int) __attribute__((weak));
float prt_attn_lanes_exchange(float v, int, int) { return v; }

extern "C" cudaError_t prt_cuda_attention_fwd_launch(float *out, float *lse, const float *qkv,
                                                     int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t) {
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD];
  float scale = 1.0f / sqrtf((float)(C / H));
  for (int64_t row = 0; row < B * H * T; row++)
    attention_fwd_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, out, lse, qkv, T, C, H, scale,
                                                      buf);
  return cudaSuccess;
}

extern "C" cudaError_t prt_cuda_attention_bwd_launch(float *dqkv, const float *dout,
                                                     const float *qkv, const float *lse,
                                                     int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t) {
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD];
  float scale = 1.0f / sqrtf((float)(C / H));
  int64_t rows = B * H * T;
  float *D = new float[rows > 0 ? rows : 1];
  for (int64_t row = 0; row < rows; row++)
    attention_bwd_dq_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, dqkv, D, dout, qkv, lse, T, C,
                                                         H, scale, buf);
  for (int64_t row = 0; row < rows; row++)
    attention_bwd_dkdv_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, dqkv, D, dout, qkv, lse, T,
                                                           C, H, scale, buf);
  delete[] D;
  return cudaSuccess;
}

extern "C" cudaError_t prt_cuda_gqa_attention_fwd_launch(float *out, float *lse, const float *q,
                                                         const float *k, const float *v,
                                                         int64_t B, int64_t T, int64_t H,
                                                         int64_t KV, int64_t D, cudaStream_t) {
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD];
  float scale = 1.0f / sqrtf((float)D);
  for (int64_t row = 0; row < B * H * T; row++)
    gqa_fwd_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, out, lse, q, k, v, T, H, KV, D, scale,
                                                buf);
  return cudaSuccess;
}

extern "C" cudaError_t prt_cuda_gqa_attention_bwd_launch(float *dq, float *dk, float *dv,
                                                         const float *dout, const float *q,
                                                         const float *k, const float *v,
                                                         const float *lse, int64_t B, int64_t T,
                                                         int64_t H, int64_t KV, int64_t D,
                                                         cudaStream_t) {
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD];
  float scale = 1.0f / sqrtf((float)D);
  int64_t rows = B * H * T;
  float *Dv = new float[rows > 0 ? rows : 1];
  for (int64_t row = 0; row < rows; row++)
    gqa_bwd_dq_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, dq, Dv, dout, q, k, v, lse, T, H, KV,
                                                   D, scale, buf);
  for (int64_t row = 0; row < B * KV * T; row++)
    gqa_bwd_dkdv_row<1, PRT_CUDA_ATTENTION_MAX_HEAD>(row, 0, dk, dv, Dv, dout, q, k, v, lse, T,
                                                     H, KV, D, scale, buf);
  delete[] Dv;
  return cudaSuccess;
}
