// The rows of the GPU's LayerNorm and RMSNorm (kernels/cuda_norms.cu), as functions of one
// row run by W lanes: W = 32 on the GPU (a warp a row, issue 29), W = 1 and W = 32 lanes as
// threads in lock step on the host (test/gpu/norm_emu.cu checks both against the CPU kernels;
// test/gpu/fake_norms.cc runs W = 1 for the fake CUDA runtime).
//
// Lane l takes the row's elements l, l + W, ... (consecutive lanes read consecutive floats:
// coalesced); the row's sums are f64 partial sums per lane, added across the lanes (the
// CPU's f64 sums in another association, rounded to f32 the same unless a sum sits on a
// rounding boundary), and every element is then the CPU's formula, operation for operation
// (the .cu is built with -fmad=false, so no multiply-add is contracted into an FMA):
//   layernorm_fwd  m = sum x / C, v = sum (x - m)^2 / C (f64), r = 1 / sqrtf(v + eps),
//                  y = (x - m) r w + b; mean and rstd saved     (runtime/kernels/cpu.c)
//   layernorm_dx   dn = w dy, n = (x - m) r, s1 = sum dn, s2 = sum dn n (f64):
//                  dx = (dn - s1 / C - n s2 / C) r
//   rmsnorm_fwd    r = 1 / sqrtf(sum x^2 / D + eps), y = x r w   (runtime/kernels/cpu_qwen3.c)
//   rmsnorm_dx     s = sum (w dy) n, n = x r: dx = (w dy - x r s / D) r
// The weight and bias gradients stay column sums of lowering/gpu_kernels.c (chunks of rows).
#ifndef PIPER_PRT_KERNELS_CUDA_NORMS_CUH
#define PIPER_PRT_KERNELS_CUDA_NORMS_CUH

#include <math.h>
#include <stdint.h>

#if !defined(__CUDACC__) && !defined(__host__) /* a host compiler without CUDA's headers */
#define __host__
#define __device__
#endif

// The sum of the W lanes' s, to every lane. W > 1 on the host exists only in
// test/gpu/norm_emu.cu, which runs the lanes as threads in lock step and defines the exchange.
#ifndef __CUDA_ARCH__
double prt_norm_lanes_sum(double s);
#endif
template <int W> __host__ __device__ inline double norm_lanes_sum(double s) {
#ifdef __CUDA_ARCH__
  for (int o = W / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#else
  if (W > 1) s = prt_norm_lanes_sum(s);
#endif
  return s;
}

template <int W>
__host__ __device__ inline void layernorm_fwd_row(int64_t row, int lane, float *out,
                                                  float *mean, float *rstd, const float *x,
                                                  const float *w, const float *b, int64_t C,
                                                  float eps) {
  const float *xi = x + row * C;
  double s = 0.0;
  for (int64_t c = lane; c < C; c += W) s += xi[c];
  float m = (float)(norm_lanes_sum<W>(s) / (double)C);
  double v = 0.0;
  for (int64_t c = lane; c < C; c += W) {
    double d = (double)(xi[c] - m);
    v += d * d;
  }
  float r = 1.0f / sqrtf((float)(norm_lanes_sum<W>(v) / (double)C) + eps);
  float *oi = out + row * C;
  for (int64_t c = lane; c < C; c += W) oi[c] = (xi[c] - m) * r * w[c] + b[c];
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

template <int W>
__host__ __device__ inline void layernorm_dx_row(int64_t row, int lane, float *dx,
                                                 const float *dy, const float *x,
                                                 const float *w, const float *mean,
                                                 const float *rstd, int64_t C) {
  const float *xi = x + row * C, *di = dy + row * C;
  float m = mean[row], r = rstd[row];
  double s1 = 0.0, s2 = 0.0;
  for (int64_t c = lane; c < C; c += W) {
    float norm = (xi[c] - m) * r;
    float dnorm = w[c] * di[c];
    s1 += dnorm;
    s2 += (double)dnorm * norm;
  }
  float mean_d = (float)(norm_lanes_sum<W>(s1) / (double)C);
  float mean_dn = (float)(norm_lanes_sum<W>(s2) / (double)C);
  float *dxi = dx + row * C;
  for (int64_t c = lane; c < C; c += W) {
    float norm = (xi[c] - m) * r;
    dxi[c] = (w[c] * di[c] - mean_d - norm * mean_dn) * r;
  }
}

template <int W>
__host__ __device__ inline void rmsnorm_fwd_row(int64_t row, int lane, float *out, float *rstd,
                                                const float *x, const float *w, int64_t D,
                                                float eps) {
  const float *xi = x + row * D;
  double ss = 0.0;
  for (int64_t c = lane; c < D; c += W) ss += (double)xi[c] * xi[c];
  float r = 1.0f / sqrtf((float)(norm_lanes_sum<W>(ss) / (double)D) + eps);
  float *oi = out + row * D;
  for (int64_t c = lane; c < D; c += W) oi[c] = xi[c] * r * w[c];
  if (lane == 0) rstd[row] = r;
}

template <int W>
__host__ __device__ inline void rmsnorm_dx_row(int64_t row, int lane, float *dx,
                                               const float *dy, const float *x, const float *w,
                                               const float *rstd, int64_t D) {
  const float *xi = x + row * D, *di = dy + row * D;
  float r = rstd[row];
  double s = 0.0;
  for (int64_t c = lane; c < D; c += W) {
    float n = xi[c] * r;
    s += (double)(w[c] * di[c]) * n;
  }
  float mean_dn = (float)(norm_lanes_sum<W>(s) / (double)D);
  float *dxi = dx + row * D;
  for (int64_t c = lane; c < D; c += W) dxi[c] = (w[c] * di[c] - xi[c] * r * mean_dn) * r;
}

#endif
