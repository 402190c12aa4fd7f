// Causal attention on tensor cores (FlashAttention-2 style, kernels/cuda_flash.cuh): a warp
// per 16 query rows (forward, dq) or 16 keys (dk, dv), four warps a block, every product an
// mma.sync.m16n8k16 on bf16 operands with fp32 accumulation. Opt-in (PIPER_CUDA_ATTN=tc,
// runtime/kernels/cuda.c): it rounds q, k, v, dO and the probabilities to bf16, so an fp32
// plan keeps the fp32 kernels of cuda_attention.cu. Each launch first stages q, k, v (and dO)
// as zero-padded bf16 copies in the caller's scratch (flash_stage, kernels/cuda_flash.cuh).
// Not yet: K/V tiles in shared memory by the block and 16-byte loads (each warp reads its
// staged operands from global memory, through L1/L2).
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

// One operand to stage: dst = the staged copy of src ((B, T) rows of rs floats holding `heads`
// heads of D), n elements
struct StageJob {
  uint16_t *dst;
  prt_fp_in src;
  int64_t rs, heads, n;
};
// A launch's operands, one per grid row (blockIdx.y): one kernel stages all of them
struct StageJobs {
  StageJob op[4];
};

__global__ void flash_stage(StageJobs jobs, int64_t T, int64_t D) {
  const StageJob &j = jobs.op[blockIdx.y];
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < j.n;
       i += (int64_t)gridDim.x * blockDim.x)
    j.dst[i] = flash_stage_at(j.src, j.rs, T, j.heads, D, i);
}

template <int ND>
__global__ void flash_fwd(prt_fp_out out, float *lse, FlashStaged st, AttnShape s, int64_t warps,
                          float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.H, s.T);
  flash_fwd_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, out, lse, st, s, scale);
}

template <int ND>
__global__ void flash_dq(prt_fp_out dq, float *Dbuf, FlashStaged st, const float *lse, AttnShape s,
                         int64_t warps, float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.H, s.T);
  flash_dq_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, dq, Dbuf, st, lse, s, scale);
}

template <int ND>
__global__ void flash_dkdv(prt_fp_out dk, prt_fp_out dv, const float *Dbuf, FlashStaged st,
                           const float *lse, AttnShape s, int64_t warps, float scale) {
  int64_t w = warp_index();
  if (w >= warps) return;
  Tile t = tile_of(w, s.KV, s.T);
  flash_dkdv_warp<ND>(threadIdx.x % kWarp, t.b, t.h, t.r0, dk, dv, Dbuf, st, lse, s, scale);
}

// Blocks for `warps` warps, or 0 when they do not fit one grid.
unsigned blocks_for(int64_t warps) {
  int64_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return blocks > INT32_MAX ? 0u : (unsigned)blocks;
}

// Stages the `count` operands of `jobs` (one launch; q's size is the largest); its error
cudaError_t stage(StageJobs jobs, unsigned count, int64_t T, int64_t D, cudaStream_t stream) {
  int64_t blocks = (jobs.op[0].n + 255) / 256;
  dim3 grid((unsigned)(blocks < 65536 ? blocks : 65536), count);
  flash_stage<<<grid, 256, 0, stream>>>(jobs, T, D);
  return cudaGetLastError();
}

// The staged operands of a launch in `staged` (prt_cuda_flash_stage_bytes): q, k, v, then dO
StageJobs stage_jobs(uint16_t *staged, prt_fp_in q, prt_fp_in k, prt_fp_in v, prt_fp_in dout,
                     const AttnShape &s, int64_t B) {
  int64_t nq = prt_cuda_flash_staged(B, s.T, s.H), nk = prt_cuda_flash_staged(B, s.T, s.KV);
  uint16_t *part[4];
  prt_cuda_flash_stage_parts(staged, B, s.T, s.H, s.KV, part);
  StageJobs j;
  j.op[0] = StageJob{part[0], q, s.qs, s.H, nq};
  j.op[1] = StageJob{part[1], k, s.ks, s.KV, nk};
  j.op[2] = StageJob{part[2], v, s.ks, s.KV, nk};
  j.op[3] = StageJob{part[3], dout, s.os, s.H, nq};
  return j;
}

} // namespace

extern "C" cudaError_t prt_cuda_flash_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q,
                                                 prt_fp_in k, prt_fp_in v,
                                                 uint16_t *staged, int64_t B, int64_t T,
                                                 int64_t H, int64_t KV, int64_t D, int64_t qs,
                                                 int64_t ks, int64_t os, cudaStream_t stream) {
  AttnShape s{T, H, KV, D, qs, ks, os};
  int64_t warps = B * s.H * ((s.T + 15) / 16);
  if (warps <= 0) return cudaSuccess;
  unsigned blocks = blocks_for(warps);
  if (!blocks || s.D > FLASH_HEAD) return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)s.D);
  StageJobs j = stage_jobs(staged, q, k, v, prt_fp_in{nullptr, 0}, s, B);
  cudaError_t e = stage(j, 3, T, D, stream);
  if (e != cudaSuccess) return e;
  FlashStaged st{j.op[0].dst, j.op[1].dst, j.op[2].dst, nullptr};
  flash_fwd<FLASH_ND><<<blocks, kWarpsPerBlock * kWarp, 0, stream>>>(out, lse, st, s, warps,
                                                                     scale);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_flash_bwd_launch(prt_fp_out dq, prt_fp_out dk, prt_fp_out dv,
                                                 float *Dbuf, prt_fp_in dout, prt_fp_in q,
                                                 prt_fp_in k, prt_fp_in v,
                                                 const float *lse, uint16_t *staged, int64_t B,
                                                 int64_t T, int64_t H, int64_t KV, int64_t D,
                                                 int64_t qs, int64_t ks, int64_t os,
                                                 cudaStream_t stream) {
  AttnShape s{T, H, KV, D, qs, ks, os};
  int64_t qwarps = B * s.H * ((s.T + 15) / 16), kwarps = B * s.KV * ((s.T + 15) / 16);
  if (qwarps <= 0) return cudaSuccess;
  unsigned qb = blocks_for(qwarps), kb = blocks_for(kwarps);
  if (!qb || !kb || s.D > FLASH_HEAD) return cudaErrorInvalidValue;
  float scale = 1.0f / sqrtf((float)s.D);
  StageJobs j = stage_jobs(staged, q, k, v, dout, s, B);
  cudaError_t e = stage(j, 4, T, D, stream);
  if (e != cudaSuccess) return e;
  FlashStaged st{j.op[0].dst, j.op[1].dst, j.op[2].dst, j.op[3].dst};
  flash_dq<FLASH_ND><<<qb, kWarpsPerBlock * kWarp, 0, stream>>>(dq, Dbuf, st, lse, s, qwarps,
                                                                scale);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  flash_dkdv<FLASH_ND><<<kb, kWarpsPerBlock * kWarp, 0, stream>>>(dk, dv, Dbuf, st, lse, s,
                                                                  kwarps, scale);
  return cudaGetLastError();
}
