// The tensor-core attention's launchers of kernels/cuda.h for the fake CUDA runtime
// (fake_cuda.c): the kernels' own warp functions (runtime/kernels/cuda_flash.cuh) with 32
// lanes as threads in lock step and the mma's fragments emulated (flash_lanes.h), one warp
// after another. Each launch is one operation of the fake on its stream (fake_cuda_enqueue),
// with the pointers it uses: run when the stream reaches it, or recorded into the CUDA graph
// being captured.
#include <stdint.h>

#include <initializer_list>

#include "kernels/cuda.h"
#include "flash_lanes.h"
#include "fake_cuda.h"

namespace {

struct Launch {
  Job job;       // the arguments (kernel: 0 forward, 1 backward)
  int64_t B;
  uint16_t *staged;
};

// Bytes of n elements of an argument in its precision
int64_t bytes(int bf16, int64_t n) { return (bf16 ? 2 : 4) * n; }

// A launch's bytes (fake_cuda_bytes): the staging reads q, k, v (and dO) in their precision
// and writes their bf16 blocks, which the kernels read back; out or the gradients written in
// their precision, lse and D (fp32).
void flash(void *p) {
  Launch *l = static_cast<Launch *>(p);
  const Job &j = l->job;
  const AttnShape &s = j.s;
  int64_t nq = l->B * s.T * s.H * s.D, nk = l->B * s.T * s.KV * s.D, rows = l->B * s.H * s.T;
  int64_t staged = 2 * (prt_cuda_flash_staged(l->B, s.T, s.H) * (j.kernel ? 2 : 1) +
                        2 * prt_cuda_flash_staged(l->B, s.T, s.KV));
  int64_t in = bytes(j.q.bf16, nq) + bytes(j.k.bf16, nk) + bytes(j.v.bf16, nk);
  if (j.kernel == 0) {
    fake_cuda_bytes(in + staged, staged + bytes(j.out.bf16, nq) + 4 * rows);
    run_fwd(l->job, l->B, l->staged);
  } else {
    fake_cuda_bytes(in + bytes(j.dout.bf16, nq) + staged + 8 * rows,
                    staged + bytes(j.dq.bf16, nq) + bytes(j.dk.bf16, nk) +
                        bytes(j.dv.bf16, nk) + 4 * rows);
    run_bwd(l->job, l->B, l->staged);
  }
}

// One launch on stream s: the forward writes out and lse, the backward dq, dk, dv and D and
// reads lse; both write the staging and read q, k, v (and dout).
cudaError_t issue(const char *name, const Launch &l, int kernels, cudaStream_t s) {
  fake_op_desc d = fake_kernel_op(name, flash, kernels);
  const Job &j = l.job;
  for (const void *p : {(const void *)j.out.p, (const void *)j.dq.p, (const void *)j.dk.p,
                        (const void *)j.dv.p, (const void *)j.Dbuf, (const void *)l.staged})
    fake_op_uses(&d, p, FAKE_WRITE);
  fake_op_uses(&d, j.lse, j.kernel == 0 ? FAKE_WRITE : FAKE_READ);
  for (const void *p : {j.q.p, j.k.p, j.v.p, j.dout.p}) fake_op_uses(&d, p, FAKE_READ);
  return fake_cuda_enqueue(s, &d, &l, sizeof l);
}

}  // namespace

extern "C" cudaError_t prt_cuda_flash_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q,
                                                 prt_fp_in k, prt_fp_in v,
                                                 uint16_t *staged, int64_t B, int64_t T,
                                                 int64_t H, int64_t KV, int64_t D, int64_t qs,
                                                 int64_t ks, int64_t os, cudaStream_t s) {
  Launch l = {};
  l.job.s = AttnShape{T, H, KV, D, qs, ks, os};
  l.job.scale = 1.0f / sqrtf((float)D);
  l.job.out = out, l.job.lse = lse, l.job.q = q, l.job.k = k, l.job.v = v;
  l.B = B, l.staged = staged;
  return issue("flash attention forward", l, 2, s); /* the staging, the forward */
}

extern "C" cudaError_t prt_cuda_flash_bwd_launch(prt_fp_out dq, prt_fp_out dk, prt_fp_out dv,
                                                 float *Dbuf,
                                                 prt_fp_in dout, prt_fp_in q,
                                                 prt_fp_in k, prt_fp_in v,
                                                 const float *lse, uint16_t *staged, int64_t B,
                                                 int64_t T, int64_t H, int64_t KV, int64_t D,
                                                 int64_t qs, int64_t ks, int64_t os,
                                                 cudaStream_t s) {
  Launch l = {};
  l.job.kernel = 1;
  l.job.s = AttnShape{T, H, KV, D, qs, ks, os};
  l.job.scale = 1.0f / sqrtf((float)D);
  l.job.dq = dq, l.job.dk = dk, l.job.dv = dv, l.job.Dbuf = Dbuf, l.job.dout = dout;
  l.job.q = q, l.job.k = k, l.job.v = v, l.job.lse = const_cast<float *>(lse); /* read */
  l.B = B, l.staged = staged;
  return issue("flash attention backward", l, 3, s); /* the staging, dq, dk/dv */
}
