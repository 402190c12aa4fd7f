// LayerNorm and RMSNorm for the GPU target, a warp a row (issue 29: the generated kernels ran a
// thread a row, each reading its row alone, uncoalesced). The math of a row is
// kernels/cuda_norms.cuh, shared with its host check (test/gpu/norm_emu.cu); here each warp
// runs one row, four warps a block. Built with -fmad=false (runtime/CMakeLists.txt) so every
// element is the CPU's operations without contracted multiply-adds.
#include <stdint.h>

#include "kernels/cuda.h"
#include "kernels/cuda_norms.cuh"

namespace {

constexpr int kWarp = 32;
constexpr int kWarpsPerBlock = 4;

// The warp's row, or -1 past the end (a whole warp alike, so its shuffles stay full).
__device__ inline int64_t warp_row(int64_t rows) {
  int64_t w = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) / kWarp;
  return w < rows ? w : -1;
}

__global__ void layernorm_fwd(prt_fp_out out, float *mean, float *rstd, prt_fp_in x,
                              const float *w, const float *b, int64_t N, int64_t C, float eps) {
  int64_t row = warp_row(N);
  if (row >= 0)
    layernorm_fwd_row<kWarp>(row, threadIdx.x % kWarp, out, mean, rstd, x, w, b, C, eps);
}

__global__ void layernorm_dx(prt_fp_out dx, prt_fp_in dy, prt_fp_in x, const float *w,
                             const float *mean, const float *rstd, int64_t N, int64_t C) {
  int64_t row = warp_row(N);
  if (row >= 0) layernorm_dx_row<kWarp>(row, threadIdx.x % kWarp, dx, dy, x, w, mean, rstd, C);
}

__global__ void rmsnorm_fwd(prt_fp_out out, float *rstd, prt_fp_in x, const float *w,
                            int64_t R, int64_t D, float eps) {
  int64_t row = warp_row(R);
  if (row >= 0) rmsnorm_fwd_row<kWarp>(row, threadIdx.x % kWarp, out, rstd, x, w, D, eps);
}

__global__ void rmsnorm_dx(prt_fp_out dx, prt_fp_in dy, prt_fp_in x, const float *w,
                           const float *rstd, int64_t R, int64_t D) {
  int64_t row = warp_row(R);
  if (row >= 0) rmsnorm_dx_row<kWarp>(row, threadIdx.x % kWarp, dx, dy, x, w, rstd, D);
}

// The grid of `rows` rows, or 0 blocks when it does not fit one (the launcher's error).
unsigned blocks_for(int64_t rows) {
  int64_t blocks = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  return blocks > INT32_MAX ? 0u : (unsigned)blocks;
}

} // namespace

#define NORM_LAUNCH(kernel, rows, ...)                                                     \
  do {                                                                                     \
    if ((rows) <= 0) return cudaSuccess;                                                   \
    unsigned blocks_ = blocks_for(rows);                                                   \
    if (!blocks_) return cudaErrorInvalidValue;                                            \
    kernel<<<blocks_, kWarpsPerBlock * kWarp, 0, stream>>>(__VA_ARGS__);                   \
    return cudaGetLastError();                                                             \
  } while (0)

extern "C" cudaError_t prt_cuda_layernorm_fwd_launch(prt_fp_out out, float *mean, float *rstd,
                                                     prt_fp_in x, const float *w,
                                                     const float *b, int64_t N, int64_t C,
                                                     float eps, cudaStream_t stream) {
  NORM_LAUNCH(layernorm_fwd, N, out, mean, rstd, x, w, b, N, C, eps);
}

extern "C" cudaError_t prt_cuda_layernorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x,
                                                    const float *w, const float *mean,
                                                    const float *rstd, int64_t N, int64_t C,
                                                    cudaStream_t stream) {
  NORM_LAUNCH(layernorm_dx, N, dx, dy, x, w, mean, rstd, N, C);
}

extern "C" cudaError_t prt_cuda_rmsnorm_fwd_launch(prt_fp_out out, float *rstd, prt_fp_in x,
                                                   const float *w, int64_t R, int64_t D,
                                                   float eps, cudaStream_t stream) {
  NORM_LAUNCH(rmsnorm_fwd, R, out, rstd, x, w, R, D, eps);
}

extern "C" cudaError_t prt_cuda_rmsnorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x,
                                                  const float *w, const float *rstd, int64_t R,
                                                  int64_t D, cudaStream_t stream) {
  NORM_LAUNCH(rmsnorm_dx, R, dx, dy, x, w, rstd, R, D);
}
