// Fused causal attention for the GPU target, flash-style: the T x T score matrix is never
// stored. Written in CUDA C and built by nvcc into libpiper_rt_cuda rather than generated
// in the gpu dialect: it needs warp shuffles, per-lane register arrays and an online softmax
// whose loop carries several values -- expressible in the gpu dialect, but far clearer and
// easier to tune here, and it does not depend on the plan (shapes are arguments), so
// generating it per plan would buy nothing.
//
// The math of a row is kernels/cuda_attention.cuh (shared with the host check in
// test/gpu/attention_emu.cu); here each warp runs one row: the forward and dq kernels a query
// row each, the dk/dv kernel a key row each (after the dq kernel wrote every D_t), with the
// row's own vectors staged in the warp's slice of shared memory.
#include <math.h>
#include <stdint.h>

#include "kernels/cuda.h"
#include "kernels/cuda_attention.cuh"

namespace {

constexpr int kWarp = 32;
constexpr int kRegs = PRT_CUDA_ATTENTION_MAX_HEAD / kWarp; // elements of a head per lane
constexpr int kWarpsPerBlock = 4;

// The warp's row index over (b, h, t) rows, or -1 past the end (a whole warp alike).
__device__ inline int64_t warp_row(int64_t rows) {
  int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  return w < rows ? w : -1;
}

// Each warp's staging buffer for its row (q; q and dO; k and v), in shared memory.
#define WARP_BUF()                                                                         \
  __shared__ float buf_[kWarpsPerBlock][2 * PRT_CUDA_ATTENTION_MAX_HEAD];                  \
  float *buf = buf_[threadIdx.x / kWarp]

__global__ void attention_fwd(prt_fp_out out, float *lse, prt_fp_in qkv, int64_t B, int64_t T,
                              int64_t C, int64_t H, float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * H * T);
  if (row >= 0)
    attention_fwd_row<kWarp, kRegs>(row, threadIdx.x % kWarp, out, lse, qkv, T, C, H, scale,
                                    buf);
}

__global__ void attention_bwd_dq(prt_fp_out dqkv, float *Dbuf, prt_fp_in dout, prt_fp_in qkv,
                                 const float *lse, int64_t B, int64_t T, int64_t C, int64_t H,
                                 float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * H * T);
  if (row >= 0)
    attention_bwd_dq_row<kWarp, kRegs>(row, threadIdx.x % kWarp, dqkv, Dbuf, dout, qkv, lse, T,
                                       C, H, scale, buf);
}

__global__ void attention_bwd_dkdv(prt_fp_out dqkv, const float *Dbuf, prt_fp_in dout,
                                   prt_fp_in qkv, const float *lse, int64_t B, int64_t T,
                                   int64_t C, int64_t H, float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * H * T);
  if (row >= 0)
    attention_bwd_dkdv_row<kWarp, kRegs>(row, threadIdx.x % kWarp, dqkv, Dbuf, dout, qkv, lse,
                                         T, C, H, scale, buf);
}

__global__ void gqa_fwd(prt_fp_out out, float *lse, prt_fp_in q, prt_fp_in k, prt_fp_in v,
                        int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D, float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * H * T);
  if (row >= 0)
    gqa_fwd_row<kWarp, kRegs>(row, threadIdx.x % kWarp, out, lse, q, k, v, T, H, KV, D, scale,
                              buf);
}

__global__ void gqa_bwd_dq(prt_fp_out dq, float *Dbuf, prt_fp_in dout, prt_fp_in q,
                           prt_fp_in k, prt_fp_in v, const float *lse, int64_t B,
                           int64_t T, int64_t H, int64_t KV, int64_t D, float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * H * T);
  if (row >= 0)
    gqa_bwd_dq_row<kWarp, kRegs>(row, threadIdx.x % kWarp, dq, Dbuf, dout, q, k, v, lse, T, H,
                                 KV, D, scale, buf);
}

__global__ void gqa_bwd_dkdv(prt_fp_out dk, prt_fp_out dv, const float *Dbuf, prt_fp_in dout,
                             prt_fp_in q, prt_fp_in k, prt_fp_in v, const float *lse,
                             int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D,
                             float scale) {
  WARP_BUF();
  int64_t row = warp_row(B * KV * T);
  if (row >= 0)
    gqa_bwd_dkdv_row<kWarp, kRegs>(row, threadIdx.x % kWarp, dk, dv, Dbuf, dout, q, k, v, lse,
                                   T, H, KV, D, scale, buf);
}

dim3 grid_for(int64_t rows) {
  int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return dim3((unsigned)blocks, 1, 1);
}

} // namespace

extern "C" cudaError_t prt_cuda_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in qkv,
                                                     int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t stream) {
  int64_t rows = B * H * T, hs = C / H;
  if (rows <= 0) return cudaSuccess;
  if (hs > PRT_CUDA_ATTENTION_MAX_HEAD || (rows + kWarpsPerBlock - 1) / kWarpsPerBlock > INT32_MAX)
    return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)hs);
  attention_fwd<<<grid_for(rows), kWarpsPerBlock * kWarp, 0, stream>>>(out, lse, qkv, B, T, C,
                                                                       H, scale);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_attention_bwd_launch(prt_fp_out dqkv, prt_fp_in dout,
                                                     prt_fp_in qkv, const float *lse,
                                                     float *D, int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t stream) {
  int64_t rows = B * H * T, hs = C / H;
  if (rows <= 0) return cudaSuccess;
  if (hs > PRT_CUDA_ATTENTION_MAX_HEAD || (rows + kWarpsPerBlock - 1) / kWarpsPerBlock > INT32_MAX)
    return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)hs);
  attention_bwd_dq<<<grid_for(rows), kWarpsPerBlock * kWarp, 0, stream>>>(
      dqkv, D, dout, qkv, lse, B, T, C, H, scale);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  attention_bwd_dkdv<<<grid_for(rows), kWarpsPerBlock * kWarp, 0, stream>>>(
      dqkv, D, dout, qkv, lse, B, T, C, H, scale);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_gqa_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q,
                                                         prt_fp_in k, prt_fp_in v,
                                                         int64_t B, int64_t T, int64_t H,
                                                         int64_t KV, int64_t D,
                                                         cudaStream_t stream) {
  int64_t rows = B * H * T;
  if (rows <= 0) return cudaSuccess;
  if (D > PRT_CUDA_ATTENTION_MAX_HEAD || (rows + kWarpsPerBlock - 1) / kWarpsPerBlock > INT32_MAX)
    return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)D);
  gqa_fwd<<<grid_for(rows), kWarpsPerBlock * kWarp, 0, stream>>>(out, lse, q, k, v, B, T, H, KV,
                                                                 D, scale);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_gqa_attention_bwd_launch(prt_fp_out dq, prt_fp_out dk,
                                                         prt_fp_out dv,
                                                         prt_fp_in dout, prt_fp_in q,
                                                         prt_fp_in k, prt_fp_in v,
                                                         const float *lse, float *Dbuf,
                                                         int64_t B, int64_t T, int64_t H,
                                                         int64_t KV, int64_t D,
                                                         cudaStream_t stream) {
  int64_t rows = B * H * T, krows = B * KV * T;
  if (rows <= 0) return cudaSuccess;
  if (D > PRT_CUDA_ATTENTION_MAX_HEAD || (rows + kWarpsPerBlock - 1) / kWarpsPerBlock > INT32_MAX)
    return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)D);
  gqa_bwd_dq<<<grid_for(rows), kWarpsPerBlock * kWarp, 0, stream>>>(dq, Dbuf, dout, q, k, v,
                                                                    lse, B, T, H, KV, D, scale);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  gqa_bwd_dkdv<<<grid_for(krows), kWarpsPerBlock * kWarp, 0, stream>>>(
      dk, dv, Dbuf, dout, q, k, v, lse, B, T, H, KV, D, scale);
  return cudaGetLastError();
}
