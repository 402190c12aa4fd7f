// The norm launchers of kernels/cuda.h on the host, for the fake CUDA runtime (fake_cuda.c):
// the kernels' own row functions (runtime/kernels/cuda_norms.cuh) with one lane a row. Each
// launcher is one operation of the fake on its stream (fake_cuda_enqueue), with the pointers it
// uses: run when the stream reaches it, or recorded into the CUDA graph being captured.
// test/gpu/norm_emu.cu checks the rows with 32 lanes too.
#include <stdint.h>

#include <initializer_list>

#include "kernels/cuda.h"
#include "kernels/cuda_norms.cuh"
#include "fake_cuda.h"

// The host has one lane: the sum across lanes is the lane's own.
double prt_norm_lanes_sum(double s) __attribute__((weak));
double prt_norm_lanes_sum(double s) { return s; }

namespace {

// Every launcher's arguments; what one does not use stays null or zero.
struct Args {
  prt_fp_out out;
  float *mean, *rstd;
  prt_fp_in x, dy;
  const float *w, *b, *mean_in, *rstd_in;
  int64_t rows, C;
  float eps;
};

// Bytes of n elements of an argument in its precision
int64_t bytes(int bf16, int64_t n) { return (bf16 ? 2 : 4) * n; }

// Each launch's bytes (fake_cuda_bytes): its tensors, the rows' x, dy, out, dx in their
// precision, the weights and statistics fp32.
void layernorm_fwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->rows * a->C;
  fake_cuda_bytes(bytes(a->x.bf16, n) + 8 * a->C, bytes(a->out.bf16, n) + 8 * a->rows);
  for (int64_t r = 0; r < a->rows; r++)
    layernorm_fwd_row<1>(r, 0, a->out, a->mean, a->rstd, a->x, a->w, a->b, a->C, a->eps);
}
void layernorm_dx(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->rows * a->C;
  fake_cuda_bytes(bytes(a->dy.bf16, n) + bytes(a->x.bf16, n) + 4 * a->C + 8 * a->rows,
                  bytes(a->out.bf16, n));
  for (int64_t r = 0; r < a->rows; r++)
    layernorm_dx_row<1>(r, 0, a->out, a->dy, a->x, a->w, a->mean_in, a->rstd_in, a->C);
}
void rmsnorm_fwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->rows * a->C;
  fake_cuda_bytes(bytes(a->x.bf16, n) + 4 * a->C, bytes(a->out.bf16, n) + 4 * a->rows);
  for (int64_t r = 0; r < a->rows; r++)
    rmsnorm_fwd_row<1>(r, 0, a->out, a->rstd, a->x, a->w, a->C, a->eps);
}
void rmsnorm_dx(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->rows * a->C;
  fake_cuda_bytes(bytes(a->dy.bf16, n) + bytes(a->x.bf16, n) + 4 * a->C + 4 * a->rows,
                  bytes(a->out.bf16, n));
  for (int64_t r = 0; r < a->rows; r++)
    rmsnorm_dx_row<1>(r, 0, a->out, a->dy, a->x, a->w, a->rstd_in, a->C);
}

cudaError_t issue(const char *name, void (*run)(void *), const Args &a, cudaStream_t s) {
  fake_op_desc d = fake_kernel_op(name, run, 1);
  for (const void *p : {(const void *)a.out.p, (const void *)a.mean, (const void *)a.rstd})
    fake_op_uses(&d, p, FAKE_WRITE);
  for (const void *p : {a.x.p, a.dy.p, (const void *)a.w, (const void *)a.b,
                        (const void *)a.mean_in, (const void *)a.rstd_in})
    fake_op_uses(&d, p, FAKE_READ);
  return fake_cuda_enqueue(s, &d, &a, sizeof a);
}

}  // namespace

extern "C" cudaError_t prt_cuda_layernorm_fwd_launch(prt_fp_out out, float *mean, float *rstd,
                                                     prt_fp_in x, const float *w,
                                                     const float *b, int64_t N, int64_t C,
                                                     float eps, cudaStream_t s) {
  Args a = {};
  a.out = out, a.mean = mean, a.rstd = rstd, a.x = x, a.w = w, a.b = b, a.rows = N, a.C = C;
  a.eps = eps;
  return issue("layernorm fwd", layernorm_fwd, a, s);
}

extern "C" cudaError_t prt_cuda_layernorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x,
                                                    const float *w, const float *mean,
                                                    const float *rstd, int64_t N, int64_t C,
                                                    cudaStream_t s) {
  Args a = {};
  a.out = dx, a.dy = dy, a.x = x, a.w = w, a.mean_in = mean, a.rstd_in = rstd, a.rows = N;
  a.C = C;
  return issue("layernorm dx", layernorm_dx, a, s);
}

extern "C" cudaError_t prt_cuda_rmsnorm_fwd_launch(prt_fp_out out, float *rstd, prt_fp_in x,
                                                   const float *w, int64_t R, int64_t D,
                                                   float eps, cudaStream_t s) {
  Args a = {};
  a.out = out, a.rstd = rstd, a.x = x, a.w = w, a.rows = R, a.C = D, a.eps = eps;
  return issue("rmsnorm fwd", rmsnorm_fwd, a, s);
}

extern "C" cudaError_t prt_cuda_rmsnorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x,
                                                  const float *w, const float *rstd, int64_t R,
                                                  int64_t D, cudaStream_t s) {
  Args a = {};
  a.out = dx, a.dy = dy, a.x = x, a.w = w, a.rstd_in = rstd, a.rows = R, a.C = D;
  return issue("rmsnorm dx", rmsnorm_dx, a, s);
}
