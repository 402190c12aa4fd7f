// Causal attention in FlashAttention-2's structure (kernels/cuda_fa2.cuh holds the blocks'
// code and its description; kernels/cuda_fa2.h the C interface): the __global__ wrappers, one
// block of FA2_THREADS per tile, and their launchers.
#include <stdint.h>

#include "kernels/cuda_fa2.cuh"
#include "kernels/cuda_fa2.h"
#include "kernels/cuda_fa2_f32.cuh"

namespace {

template <int D>
__global__ void __launch_bounds__(FA2_THREADS) fa2_fwd(Fa2FwdArgs a) {
  extern __shared__ __align__(128) char smem[];
  fa2_fwd_block<D>(a, blockIdx.x, threadIdx.x, smem);
}

template <int D>
__global__ void __launch_bounds__(FA2_THREADS) fa2_bwd(Fa2BwdArgs a) {
  extern __shared__ __align__(128) char smem[];
  fa2_bwd_block<D>(a, blockIdx.x, threadIdx.x, smem);
}

template <int D>
__global__ void __launch_bounds__(FA2_THREADS) fa2_fwd_f32(Fa2FwdF32Args a) {
  extern __shared__ __align__(128) char smem[];
  fa2_fwd_f32_block<D>(a, blockIdx.x, threadIdx.x, smem);
}

template <int D>
__global__ void __launch_bounds__(FA2_THREADS) fa2_bwd_f32(Fa2BwdF32Args a) {
  extern __shared__ __align__(128) char smem[];
  fa2_bwd_f32_block<D>(a, blockIdx.x, threadIdx.x, smem);
}

__global__ void fa2_delta_f32(float *delta, float *dq, const float *dout, const float *out,
                              AttnShape s, int64_t rows) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride)
    fa2_delta_row_f32(delta, dq, dout, out, s, r);
}

// D of every query row, and the dQ accumulator zeroed (rows * D floats)
__global__ void fa2_delta(float *delta, float *acc, const uint16_t *dout, const uint16_t *out,
                          AttnShape s, int64_t rows) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += stride)
    fa2_delta_row(delta, dout, out, s, r);
  float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * s.D / 4; i += stride)
    reinterpret_cast<float4 *>(acc)[i] = zero;
}

__global__ void fa2_dq(uint16_t *dq, const float *acc, AttnShape s, float scale, int64_t chunks) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < chunks; c += stride)
    fa2_dq_chunk(dq, acc, s, scale, c);
}

// A grid that fits a launch
bool fits(int64_t blocks) { return blocks > 0 && blocks <= INT32_MAX; }

// Every kernel's dynamic shared memory limit raised to what it uses, past the default 48 KB:
// once, at the first launch (the warm-up step; not a stream operation, never inside a graph
// capture); the first error, if any
cudaError_t raise_smem_limits() {
  cudaError_t e = cudaSuccess;
  auto raise = [&e](auto kernel, int smem) {
    if (e == cudaSuccess && smem > 48 * 1024)
      e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  };
  raise(fa2_fwd<64>, Fa2Fwd<64>::SMEM);
  raise(fa2_fwd<128>, Fa2Fwd<128>::SMEM);
  raise(fa2_bwd<64>, Fa2Bwd<64>::SMEM);
  raise(fa2_bwd<128>, Fa2Bwd<128>::SMEM);
  raise(fa2_fwd_f32<64>, Fa2FwdF32<64>::SMEM);
  raise(fa2_fwd_f32<128>, Fa2FwdF32<128>::SMEM);
  raise(fa2_bwd_f32<64>, Fa2BwdF32<64>::SMEM);
  raise(fa2_bwd_f32<128>, Fa2BwdF32<128>::SMEM);
  return e;
}
cudaError_t smem_limits() {
  static const cudaError_t e = raise_smem_limits();
  return e;
}

// Launches `kernel` over `blocks` blocks with `smem` bytes of dynamic shared memory
template <class Args>
cudaError_t launch(void (*kernel)(Args), int smem, int64_t blocks, const Args &a,
                   cudaStream_t stream) {
  cudaError_t limits = smem_limits();
  if (limits != cudaSuccess) return limits;
  kernel<<<(unsigned)blocks, FA2_THREADS, smem, stream>>>(a);
  return cudaGetLastError();
}

unsigned grid_for(int64_t n, int per_thread_block) {
  int64_t g = (n + per_thread_block - 1) / per_thread_block;
  return (unsigned)(g < 1 ? 1 : g > 65536 ? 65536 : g);
}

} // namespace

extern "C" cudaError_t prt_cuda_fa2_fwd(uint16_t *out, float *lse, const uint16_t *q,
                                        const uint16_t *k, const uint16_t *v, int64_t B,
                                        int64_t T, int64_t H, int64_t KV, int64_t D, int64_t qs,
                                        int64_t ks, int64_t os, cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 2, {out, q, k, v})) return cudaErrorInvalidValue;
  Fa2FwdArgs a = fa2_fwd_args(out, lse, q, k, v, B, s);
  int64_t blocks = D == 64 ? fa2_fwd_blocks<64>(B, s) : fa2_fwd_blocks<128>(B, s);
  if (!fits(blocks)) return cudaErrorInvalidValue;
  return D == 64 ? launch(fa2_fwd<64>, Fa2Fwd<64>::SMEM, blocks, a, stream)
                 : launch(fa2_fwd<128>, Fa2Fwd<128>::SMEM, blocks, a, stream);
}

extern "C" cudaError_t prt_cuda_fa2_bwd(uint16_t *dq, uint16_t *dk, uint16_t *dv,
                                        const uint16_t *dout, const uint16_t *out,
                                        const float *lse, const uint16_t *q, const uint16_t *k,
                                        const uint16_t *v, float *scratch, int64_t B, int64_t T,
                                        int64_t H, int64_t KV, int64_t D, int64_t qs,
                                        int64_t ks, int64_t os, cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 2, {dq, dk, dv, dout, out, q, k, v, scratch}))
    return cudaErrorInvalidValue;
  int64_t rows = B * H * T;
  Fa2BwdArgs a = fa2_bwd_args(dk, dv, dout, lse, q, k, v, scratch, B, s);
  int64_t blocks = D == 64 ? fa2_bwd_blocks<64>(B, s) : fa2_bwd_blocks<128>(B, s);
  if (!fits(blocks)) return cudaErrorInvalidValue;
  fa2_delta<<<grid_for(rows, 256), 256, 0, stream>>>(const_cast<float *>(a.delta), a.dq_acc,
                                                      dout, out, s, rows);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  e = D == 64 ? launch(fa2_bwd<64>, Fa2Bwd<64>::SMEM, blocks, a, stream)
              : launch(fa2_bwd<128>, Fa2Bwd<128>::SMEM, blocks, a, stream);
  if (e != cudaSuccess) return e;
  fa2_dq<<<grid_for(rows * D / 8, 256), 256, 0, stream>>>(dq, a.dq_acc, s, a.scale,
                                                           rows * D / 8);
  return cudaGetLastError();
}

extern "C" cudaError_t prt_cuda_fa2_fwd_f32(float *out, float *lse, const float *q,
                                            const float *k, const float *v, int64_t B,
                                            int64_t T, int64_t H, int64_t KV, int64_t D,
                                            int64_t qs, int64_t ks, int64_t os,
                                            cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 4, {out, q, k, v})) return cudaErrorInvalidValue;
  Fa2FwdF32Args a = fa2_fwd_f32_args(out, lse, q, k, v, B, s);
  int64_t blocks = D == 64 ? fa2_fwd_f32_blocks<64>(B, s) : fa2_fwd_f32_blocks<128>(B, s);
  if (!fits(blocks)) return cudaErrorInvalidValue;
  return D == 64 ? launch(fa2_fwd_f32<64>, Fa2FwdF32<64>::SMEM, blocks, a, stream)
                 : launch(fa2_fwd_f32<128>, Fa2FwdF32<128>::SMEM, blocks, a, stream);
}

extern "C" cudaError_t prt_cuda_fa2_bwd_f32(float *dq, float *dk, float *dv, const float *dout,
                                            const float *out, const float *lse, const float *q,
                                            const float *k, const float *v, float *scratch,
                                            int64_t B, int64_t T, int64_t H, int64_t KV,
                                            int64_t D, int64_t qs, int64_t ks, int64_t os,
                                            cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 4, {dq, dk, dv, dout, out, q, k, v, scratch}))
    return cudaErrorInvalidValue;
  int64_t rows = B * H * T;
  Fa2BwdF32Args a = fa2_bwd_f32_args(dq, dk, dv, dout, lse, q, k, v, scratch, B, s);
  int64_t blocks = D == 64 ? fa2_bwd_f32_blocks<64>(B, s) : fa2_bwd_f32_blocks<128>(B, s);
  if (!fits(blocks)) return cudaErrorInvalidValue;
  fa2_delta_f32<<<grid_for(rows, 256), 256, 0, stream>>>(scratch, dq, dout, out, s, rows);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  return D == 64 ? launch(fa2_bwd_f32<64>, Fa2BwdF32<64>::SMEM, blocks, a, stream)
                 : launch(fa2_bwd_f32<128>, Fa2BwdF32<128>::SMEM, blocks, a, stream);
}
