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

void flash(void *p) {
  Launch *l = static_cast<Launch *>(p);
  if (l->job.kernel == 0) run_fwd(l->job, l->B, l->staged);
  else run_bwd(l->job, l->B, l->staged);
}

// One launch on stream s: the forward writes out and lse, the backward dq, dk, dv and D and
// reads lse; both write the staging and read q, k, v (and dout).
cudaError_t issue(const char *name, const Launch &l, int kernels, cudaStream_t s) {
  fake_op_desc d = fake_kernel_op(name, flash, kernels);
  const Job &j = l.job;
  for (const void *p : {(const void *)j.out, (const void *)j.dq, (const void *)j.dk,
                        (const void *)j.dv, (const void *)j.Dbuf, (const void *)l.staged})
    fake_op_uses(&d, p, FAKE_WRITE);
  fake_op_uses(&d, j.lse, j.kernel == 0 ? FAKE_WRITE : FAKE_READ);
  for (const void *p : {j.q, j.k, j.v, j.dout}) fake_op_uses(&d, p, FAKE_READ);
  return fake_cuda_enqueue(s, &d, &l, sizeof l);
}

}  // namespace

extern "C" cudaError_t prt_cuda_flash_fwd_launch(float *out, float *lse, const float *q,
                                                 const float *k, const float *v,
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

extern "C" cudaError_t prt_cuda_flash_bwd_launch(float *dq, float *dk, float *dv, float *Dbuf,
                                                 const float *dout, const float *q,
                                                 const float *k, const float *v,
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
