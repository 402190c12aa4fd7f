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
// x, dy, out and dx are in their values' own precision (kernels/cuda_fp.cuh: a bf16 widened
// at the load and rounded at the store); the statistics and weights are fp32.
// The weight and bias gradients stay column sums of lowering/gpu_kernels.c (chunks of rows).
#ifndef PIPER_PRT_KERNELS_CUDA_NORMS_CUH
#define PIPER_PRT_KERNELS_CUDA_NORMS_CUH

#include <math.h>
#include <stdint.h>

#include "kernels/cuda_fp.cuh"

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
__host__ __device__ inline void layernorm_fwd_row(int64_t row, int lane, prt_fp_out out,
                                                  float *mean, float *rstd, prt_fp_in x,
                                                  const float *w, const float *b, int64_t C,
                                                  float eps) {
  prt_fp_in xi = fp_at(x, row * C);
  double s = 0.0;
  for (int64_t c = lane; c < C; c += W) s += fp_ld(xi, c);
  float m = (float)(norm_lanes_sum<W>(s) / (double)C);
  double v = 0.0;
  for (int64_t c = lane; c < C; c += W) {
    double d = (double)(fp_ld(xi, c) - m);
    v += d * d;
  }
  float r = 1.0f / sqrtf((float)(norm_lanes_sum<W>(v) / (double)C) + eps);
  prt_fp_out oi = fp_at(out, row * C);
  for (int64_t c = lane; c < C; c += W) fp_st(oi, c, (fp_ld(xi, c) - m) * r * w[c] + b[c]);
  if (lane == 0) mean[row] = m, rstd[row] = r;
}

template <int W>
__host__ __device__ inline void layernorm_dx_row(int64_t row, int lane, prt_fp_out dx,
                                                 prt_fp_in dy, prt_fp_in x, const float *w,
                                                 const float *mean, const float *rstd,
                                                 int64_t C) {
  prt_fp_in xi = fp_at(x, row * C), di = fp_at(dy, row * C);
  float m = mean[row], r = rstd[row];
  double s1 = 0.0, s2 = 0.0;
  for (int64_t c = lane; c < C; c += W) {
    float norm = (fp_ld(xi, c) - m) * r;
    float dnorm = w[c] * fp_ld(di, c);
    s1 += dnorm;
    s2 += (double)dnorm * norm;
  }
  float mean_d = (float)(norm_lanes_sum<W>(s1) / (double)C);
  float mean_dn = (float)(norm_lanes_sum<W>(s2) / (double)C);
  prt_fp_out dxi = fp_at(dx, row * C);
  for (int64_t c = lane; c < C; c += W) {
    float norm = (fp_ld(xi, c) - m) * r;
    fp_st(dxi, c, (w[c] * fp_ld(di, c) - mean_d - norm * mean_dn) * r);
  }
}

template <int W>
__host__ __device__ inline void rmsnorm_fwd_row(int64_t row, int lane, prt_fp_out out,
                                                float *rstd, prt_fp_in x, const float *w,
                                                int64_t D, float eps) {
  prt_fp_in xi = fp_at(x, row * D);
  double ss = 0.0;
  for (int64_t c = lane; c < D; c += W) {
    float xv = fp_ld(xi, c);
    ss += (double)xv * xv;
  }
  float r = 1.0f / sqrtf((float)(norm_lanes_sum<W>(ss) / (double)D) + eps);
  prt_fp_out oi = fp_at(out, row * D);
  for (int64_t c = lane; c < D; c += W) fp_st(oi, c, fp_ld(xi, c) * r * w[c]);
  if (lane == 0) rstd[row] = r;
}

template <int W>
__host__ __device__ inline void rmsnorm_dx_row(int64_t row, int lane, prt_fp_out dx,
                                               prt_fp_in dy, prt_fp_in x, const float *w,
                                               const float *rstd, int64_t D) {
  prt_fp_in xi = fp_at(x, row * D), di = fp_at(dy, row * D);
  float r = rstd[row];
  double s = 0.0;
  for (int64_t c = lane; c < D; c += W) {
    float n = fp_ld(xi, c) * r;
    s += (double)(w[c] * fp_ld(di, c)) * n;
  }
  float mean_dn = (float)(norm_lanes_sum<W>(s) / (double)D);
  prt_fp_out dxi = fp_at(dx, row * D);
  for (int64_t c = lane; c < D; c += W)
    fp_st(dxi, c, (w[c] * fp_ld(di, c) - fp_ld(xi, c) * r * mean_dn) * r);
}

#endif
