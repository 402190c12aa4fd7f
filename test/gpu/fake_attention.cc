// The attention launchers of kernels/cuda.h on the host, for the fake CUDA runtime
// (fake_cuda.c): the kernels' own row functions (runtime/kernels/cuda_attention.cuh) with one
// lane per row, in the kernels' order (forward; dq and D for every row, then dk and dv). Each
// launcher is one operation of the fake on its stream (fake_cuda_enqueue), with the pointers
// it uses: run when the stream reaches it, or recorded into the CUDA graph being captured
// with its arguments.
#include <math.h>
#include <stdint.h>

#include <initializer_list>

#include "kernels/cuda.h"
#include "kernels/cuda_attention.cuh"
#include "fake_cuda.h"

// The one-lane host instance never exchanges between lanes.
float prt_attn_lanes_exchange(float v, int, int) __attribute__((weak));
float prt_attn_lanes_exchange(float v, int, int) { return v; }

namespace {

constexpr int kMax = PRT_CUDA_ATTENTION_MAX_HEAD;

// Every launcher's arguments in one struct: q (or qkv), k, v, out/dout, lse, the gradients,
// D and the sizes; what a launcher does not use stays null or zero.
struct Args {
  prt_fp_out out, dq, dk, dv;
  float *lse, *D;
  prt_fp_in q, k, v, dout;
  const float *lse_in;
  int64_t B, T, C, H, KV, Dh;
};

// Bytes of n elements of an argument in its precision
int64_t bytes(int bf16, int64_t n) { return (bf16 ? 2 : 4) * n; }

// Each launch's bytes (fake_cuda_bytes): q, k, v, out, dout and the gradients once each in
// their precision, lse and D (fp32) where read or written.
void attention_fwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->B * a->T * a->C, rows = a->B * a->H * a->T;
  fake_cuda_bytes(bytes(a->q.bf16, 3 * n), bytes(a->out.bf16, n) + 4 * rows);
  float buf[2 * kMax];
  float scale = 1.0f / sqrtf((float)(a->C / a->H));
  for (int64_t row = 0; row < a->B * a->H * a->T; row++)
    attention_fwd_row<1, kMax>(row, 0, a->out, a->lse, a->q, a->T, a->C, a->H, scale, buf);
}

void attention_bwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t n = a->B * a->T * a->C, rows = a->B * a->H * a->T;
  fake_cuda_bytes(bytes(a->dout.bf16, n) + bytes(a->q.bf16, 3 * n) + 8 * rows,
                  bytes(a->dq.bf16, 3 * n) + 4 * rows);
  float buf[2 * kMax];
  float scale = 1.0f / sqrtf((float)(a->C / a->H));
  for (int64_t row = 0; row < rows; row++)
    attention_bwd_dq_row<1, kMax>(row, 0, a->dq, a->D, a->dout, a->q, a->lse_in, a->T, a->C,
                                  a->H, scale, buf);
  for (int64_t row = 0; row < rows; row++)
    attention_bwd_dkdv_row<1, kMax>(row, 0, a->dq, a->D, a->dout, a->q, a->lse_in, a->T, a->C,
                                    a->H, scale, buf);
}

void gqa_fwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t nq = a->B * a->T * a->H * a->Dh, nk = a->B * a->T * a->KV * a->Dh;
  fake_cuda_bytes(bytes(a->q.bf16, nq) + bytes(a->k.bf16, nk) + bytes(a->v.bf16, nk),
                  bytes(a->out.bf16, nq) + 4 * a->B * a->H * a->T);
  float buf[2 * kMax];
  float scale = 1.0f / sqrtf((float)a->Dh);
  for (int64_t row = 0; row < a->B * a->H * a->T; row++)
    gqa_fwd_row<1, kMax>(row, 0, a->out, a->lse, a->q, a->k, a->v, a->T, a->H, a->KV, a->Dh,
                         scale, buf);
}

void gqa_bwd(void *p) {
  Args *a = static_cast<Args *>(p);
  int64_t nq = a->B * a->T * a->H * a->Dh, nk = a->B * a->T * a->KV * a->Dh;
  int64_t rows = a->B * a->H * a->T;
  fake_cuda_bytes(bytes(a->dout.bf16, nq) + bytes(a->q.bf16, nq) + bytes(a->k.bf16, nk) +
                      bytes(a->v.bf16, nk) + 8 * rows,
                  bytes(a->dq.bf16, nq) + bytes(a->dk.bf16, nk) + bytes(a->dv.bf16, nk) +
                      4 * rows);
  float buf[2 * kMax];
  float scale = 1.0f / sqrtf((float)a->Dh);
  for (int64_t row = 0; row < a->B * a->H * a->T; row++)
    gqa_bwd_dq_row<1, kMax>(row, 0, a->dq, a->D, a->dout, a->q, a->k, a->v, a->lse_in, a->T,
                            a->H, a->KV, a->Dh, scale, buf);
  for (int64_t row = 0; row < a->B * a->KV * a->T; row++)
    gqa_bwd_dkdv_row<1, kMax>(row, 0, a->dk, a->dv, a->D, a->dout, a->q, a->k, a->v, a->lse_in,
                              a->T, a->H, a->KV, a->Dh, scale, buf);
}

// One launch on stream s, with the pointers it writes (its outputs) and reads.
cudaError_t issue(const char *name, void (*run)(void *), const Args &a, int kernels,
                  cudaStream_t s) {
  fake_op_desc d = fake_kernel_op(name, run, kernels);
  for (const void *p : {(const void *)a.out.p, (const void *)a.lse, (const void *)a.dq.p,
                        (const void *)a.dk.p, (const void *)a.dv.p, (const void *)a.D})
    fake_op_uses(&d, p, FAKE_WRITE);
  for (const void *p : {a.q.p, a.k.p, a.v.p, a.dout.p, (const void *)a.lse_in})
    fake_op_uses(&d, p, FAKE_READ);
  return fake_cuda_enqueue(s, &d, &a, sizeof a);
}

}  // namespace

extern "C" cudaError_t prt_cuda_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in qkv,
                                                     int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t s) {
  Args a = {};
  a.out = out, a.lse = lse, a.q = qkv, a.B = B, a.T = T, a.C = C, a.H = H;
  return issue("attention forward", attention_fwd, a, 1, s);
}

extern "C" cudaError_t prt_cuda_attention_bwd_launch(prt_fp_out dqkv, prt_fp_in dout,
                                                     prt_fp_in qkv, const float *lse,
                                                     float *D, int64_t B, int64_t T, int64_t C,
                                                     int64_t H, cudaStream_t s) {
  Args a = {};
  a.dq = dqkv, a.dout = dout, a.q = qkv, a.lse_in = lse, a.D = D, a.B = B, a.T = T, a.C = C;
  a.H = H;
  return issue("attention backward", attention_bwd, a, 2, s);
}

extern "C" cudaError_t prt_cuda_gqa_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q,
                                                         prt_fp_in k, prt_fp_in v,
                                                         int64_t B, int64_t T, int64_t H,
                                                         int64_t KV, int64_t D, cudaStream_t s) {
  Args a = {};
  a.out = out, a.lse = lse, a.q = q, a.k = k, a.v = v, a.B = B, a.T = T, a.H = H, a.KV = KV;
  a.Dh = D;
  return issue("gqa attention forward", gqa_fwd, a, 1, s);
}

extern "C" cudaError_t prt_cuda_gqa_attention_bwd_launch(prt_fp_out dq, prt_fp_out dk,
                                                         prt_fp_out dv,
                                                         prt_fp_in dout, prt_fp_in q,
                                                         prt_fp_in k, prt_fp_in v,
                                                         const float *lse, float *Dv,
                                                         int64_t B, int64_t T, int64_t H,
                                                         int64_t KV, int64_t D, cudaStream_t s) {
  Args a = {};
  a.dq = dq, a.dk = dk, a.dv = dv, a.dout = dout, a.q = q, a.k = k, a.v = v, a.lse_in = lse;
  a.D = Dv, a.B = B, a.T = T, a.H = H, a.KV = KV, a.Dh = D;
  return issue("gqa attention backward", gqa_bwd, a, 2, s);
}
