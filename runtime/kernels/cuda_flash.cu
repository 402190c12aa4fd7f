// Causal attention on tensor cores (FlashAttention-2 style, kernels/cuda_flash.cuh): a warp
// per 16 query rows (forward, dq) or 16 keys (dk, dv), four warps a block, every product an
// mma.sync.m16n8k16 on bf16 operands with fp32 accumulation. Opt-in (PIPER_CUDA_ATTN=tc,
// runtime/kernels/cuda.c): it rounds q, k, v, dO and the probabilities to bf16, so an fp32
// plan keeps the fp32 kernels of cuda_attention.cu. Not yet: K/V tiles staged in shared
// memory by the block and 16-byte loads (each warp reads its operands from global memory,
// through L1/L2).
#include <stdint.h>

#include "kernels/cuda.h"
#include "kernels/cuda_flash.cuh"

static_assert((int)FLASH_HEAD == (int)PRT_CUDA_FLASH_MAX_HEAD,
              "kernels/cuda.h must state the head sizes the kernels are built for");

namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 4;

__device__ inline int64_t warp_index() {
  return ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
}

// Warp w of the (b, head, 16-row tile) numbering: its batch, head and first row.
struct Tile {
  int64_t b, h, r0;
};
__host__ __device__ inline Tile tile_of(int64_t w, int64_t heads, int64_t T) {
  int64_t tiles = (T + 15) / 16;
  return Tile{w / (heads * tiles), (w / tiles) % heads, (w % tiles) * 16};
}

template <int ND>
__global__ void flash_fwd(float *out, float *lse, const float *q, const float *k,
                          const float *v, AttnShape s, int64_t warps, float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.H, s.T);
  flash_fwd_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, out, lse, q, k, v, s, scale);
}

template <int ND>
__global__ void flash_dq(float *dq, float *Dbuf, const float *dout, const float *q,
                         const float *k, const float *v, const float *lse, AttnShape s,
                         int64_t warps, float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.H, s.T);
  flash_dq_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, dq, Dbuf, dout, q, k, v, lse, s,
                    scale);
}

template <int ND>
__global__ void flash_dkdv(float *dk, float *dv, const float *Dbuf, const float *dout,
                           const float *q, const float *k, const float *v, const float *lse,
                           AttnShape s, int64_t warps, float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.KV, s.T);
  flash_dkdv_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, dk, dv, Dbuf, dout, q, k, v, lse, s,
                      scale);
}

// Blocks for `warps` warps, or 0 when they do not fit one grid.
unsigned blocks_for(int64_t warps) {
  int64_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return blocks > INT32_MAX ? 0u : (unsigned)blocks;
}

// The kernels' instance for ND d-steps, launched on `blocks` blocks.
template <int ND>
void launch_fwd(unsigned blocks, cudaStream_t stream, float *out, float *lse, const float *q,
                const float *k, const float *v, AttnShape s, int64_t warps, float scale) {
  flash_fwd<ND><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(out, lse, q, k, v, s, warps,
                                                              scale);
}
template <int ND>
void launch_dq(unsigned blocks, cudaStream_t stream, float *dq, float *Dbuf, const float *dout,
               const float *q, const float *k, const float *v, const float *lse, AttnShape s,
               int64_t warps, float scale) {
  flash_dq<ND><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(dq, Dbuf, dout, q, k, v, lse, s,
                                                             warps, scale);
}
template <int ND>
void launch_dkdv(unsigned blocks, cudaStream_t stream, float *dk, float *dv, const float *Dbuf,
                 const float *dout, const float *q, const float *k, const float *v,
                 const float *lse, AttnShape s, int64_t warps, float scale) {
  flash_dkdv<ND><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(dk, dv, Dbuf, dout, q, k, v,
                                                               lse, s, warps, scale);
}

} // namespace

extern "C" cudaError_t prt_cuda_flash_fwd_launch(float *out, float *lse, const float *q,
                                                 const float *k, const float *v, int64_t B,
                                                 int64_t T, int64_t H, int64_t KV, int64_t D,
                                                 int64_t qs, int64_t ks, int64_t os,
                                                 cudaStream_t stream) {
  AttnShape s{T, H, KV, D, qs, ks, os};
  int64_t warps = B * s.H * ((s.T + 15) / 16);
  if (warps <= 0) return cudaSuccess;
  unsigned blocks = blocks_for(warps);
  if (!blocks || s.D > FLASH_HEAD) return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)s.D);
  launch_fwd<FLASH_ND>(blocks, stream, out, lse, q, k, v, s, warps, scale);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_flash_bwd_launch(float *dq, float *dk, float *dv, float *Dbuf,
                                                 const float *dout, const float *q,
                                                 const float *k, const float *v,
                                                 const float *lse, int64_t B, int64_t T,
                                                 int64_t H, int64_t KV, int64_t D, int64_t qs,
                                                 int64_t ks, int64_t os, cudaStream_t stream) {
  AttnShape s{T, H, KV, D, qs, ks, os};
  int64_t qwarps = B * s.H * ((s.T + 15) / 16), kwarps = B * s.KV * ((s.T + 15) / 16);
  if (qwarps <= 0) return cudaSuccess;
  unsigned qb = blocks_for(qwarps), kb = blocks_for(kwarps);
  if (!qb || !kb || s.D > FLASH_HEAD) return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)s.D);
  launch_dq<FLASH_ND>(qb, stream, dq, Dbuf, dout, q, k, v, lse, s, qwarps, scale);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  launch_dkdv<FLASH_ND>(kb, stream, dk, dv, Dbuf, dout, q, k, v, lse, s, kwarps, scale);
  return cudaGetLastError();
}
