// The FlashAttention-2 launchers of kernels/cuda_fa2.h for the fake CUDA runtime
// (fake_cuda.c): each launch's blocks run the kernels' own code (runtime/kernels/cuda_fa2.cuh,
// cuda_fa2_f32.cuh) under the block emulation (fa2_host.h, block_emu.h: 128 threads as
// coroutines with real barriers, shared memory an array filled with NaN, cp.async landing at
// its wait, ldmatrix and mma from the PTX ISA's tables), so a --target cuda plan's attention on
// the fake runtime is the FA2 algorithm the GPU runs. Each launcher is one operation of the
// fake on its stream (fake_cuda_enqueue), with the pointers it uses: run when the stream
// reaches it, or recorded into the CUDA graph being captured.
//
// FAKE_CUDA_FA2_FAULT=NAME puts one of block_emu.h's bugs back (drop-mask, wait-one-less,
// no-syncthreads, shfl-self, ldmatrix-trans, mma-a-swap): the negative control of the training
// tests that run these kernels (test/gpu/fake-cuda-fa2.test). An unknown name is refused.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <initializer_list>

#define BLOCK_EMU_BESIDE_FLASH_LANES /* fake_flash.cc's lanes define prt_flash_mma */
#include "kernels/cuda_fa2.h"
#include "fa2_host.h"
#include "fake_cuda.h"

namespace {

// Every launcher's arguments: the kernels' (one of the four), out and dq of the backward's
// element-wise launches
struct Launch {
  int kind; // 0 forward, 1 backward, 2 fp32 forward, 3 fp32 backward
  Fa2FwdArgs fwd;
  Fa2BwdArgs bwd;
  Fa2FwdF32Args fwd32;
  Fa2BwdF32Args bwd32;
  uint16_t *dq;
  const void *out;
};

// The blocks' thread schedule and copy timing (warps in step, copies landing at their wait:
// a missing wait shows), and the fault FAKE_CUDA_FA2_FAULT asks for (read once)
Fa2HostRun host_run() {
  static int fault = -1;
  if (fault < 0) {
    const char *name = getenv("FAKE_CUDA_FA2_FAULT");
    fault = 0;
    if (name && *name) {
      for (int f = 1; f < (int)(sizeof emu_fault_names / sizeof *emu_fault_names); f++)
        if (!strcmp(name, emu_fault_names[f])) fault = f;
      if (!fault) { /* the names from block_emu.h's own table */
        fprintf(stderr, "fake CUDA: FAKE_CUDA_FA2_FAULT=%s: not a fault of test/gpu/block_emu.h "
                        "(", name);
        for (int f = 1; f < (int)(sizeof emu_fault_names / sizeof *emu_fault_names); f++)
          fprintf(stderr, "%s%s", f > 1 ? ", " : "", emu_fault_names[f]);
        fprintf(stderr, ")\n");
        exit(2);
      }
    }
  }
  return Fa2HostRun{EMU_ROUND_ROBIN, EMU_COPY_LATE, fault};
}

// Runs a launch, after reporting its bytes (fake_cuda_bytes): q, k, v (and dO, O) read, out
// or the gradients written, lse and D (fp32); the bf16 backward's dQ accumulator (fp32,
// B H T D) zeroed, added to by the key blocks' atomics and read by the dq launch
void run(void *p) {
  const Launch &l = *static_cast<Launch *>(p);
  const AttnShape &s = l.kind == 0 ? l.fwd.s : l.kind == 1 ? l.bwd.s : l.kind == 2 ? l.fwd32.s
                                                                                  : l.bwd32.s;
  int64_t B = l.kind == 0 ? l.fwd.B : l.kind == 1 ? l.bwd.B : l.kind == 2 ? l.fwd32.B : l.bwd32.B;
  int64_t e = l.kind < 2 ? 2 : 4, nq = B * s.T * s.H * s.D, nk = B * s.T * s.KV * s.D;
  int64_t rows = B * s.H * s.T, in = e * (nq + 2 * nk), acc = l.kind == 1 ? 8 * rows * s.D : 0;
  Fa2HostRun r = host_run();
  if (l.kind % 2 == 0) {
    fake_cuda_bytes(in, e * nq + 4 * rows);
  } else {
    fake_cuda_bytes(in + 2 * e * nq + 8 * rows + acc, e * (nq + 2 * nk) + 4 * rows + acc);
  }
  bool d64 = s.D == 64;
  switch (l.kind) {
  case 0:
    d64 ? fa2_host_fwd<64>(r, l.fwd) : fa2_host_fwd<128>(r, l.fwd);
    break;
  case 1:
    d64 ? fa2_host_bwd<64>(r, l.bwd, l.dq, (const uint16_t *)l.out)
        : fa2_host_bwd<128>(r, l.bwd, l.dq, (const uint16_t *)l.out);
    break;
  case 2:
    d64 ? fa2_host_fwd_f32<64>(r, l.fwd32) : fa2_host_fwd_f32<128>(r, l.fwd32);
    break;
  default:
    d64 ? fa2_host_bwd_f32<64>(r, l.bwd32, (const float *)l.out)
        : fa2_host_bwd_f32<128>(r, l.bwd32, (const float *)l.out);
  }
  if (emu.errors) { /* a copy never waited for: the kernel read a tile before it landed */
    fprintf(stderr, "fake CUDA: FlashAttention-2 block left %ld cp.async copies un-waited\n",
            emu.errors);
    exit(3);
  }
}

// One launch on stream s: `kernels` launches of the GPU's, with the pointers they read and
// write (the race detector's)
cudaError_t issue(const char *name, const Launch &l, int kernels,
                  std::initializer_list<const void *> writes,
                  std::initializer_list<const void *> reads, cudaStream_t s) {
  fake_op_desc d = fake_kernel_op(name, run, kernels);
  for (const void *p : writes) fake_op_uses(&d, p, FAKE_WRITE);
  for (const void *p : reads) fake_op_uses(&d, p, FAKE_READ);
  return fake_cuda_enqueue(s, &d, &l, sizeof l);
}

} // namespace

extern "C" cudaError_t prt_cuda_fa2_fwd(uint16_t *out, float *lse, const uint16_t *q,
                                        const uint16_t *k, const uint16_t *v, int64_t B,
                                        int64_t T, int64_t H, int64_t KV, int64_t D, int64_t qs,
                                        int64_t ks, int64_t os, cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 2, {out, q, k, v})) return cudaErrorInvalidValue;
  Launch l = {};
  l.kind = 0;
  l.fwd = fa2_fwd_args(out, lse, q, k, v, B, s);
  return issue("fa2 forward", l, 1, {out, lse}, {q, k, v}, stream);
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
  Launch l = {};
  l.kind = 1;
  l.bwd = fa2_bwd_args(dk, dv, dout, lse, q, k, v, scratch, B, s);
  l.dq = dq, l.out = out;
  return issue("fa2 backward", l, 3, {dq, dk, dv, scratch}, {dout, out, lse, q, k, v}, stream);
}

extern "C" cudaError_t prt_cuda_fa2_fwd_f32(float *out, float *lse, const float *q,
                                            const float *k, const float *v, int64_t B,
                                            int64_t T, int64_t H, int64_t KV, int64_t D,
                                            int64_t qs, int64_t ks, int64_t os,
                                            cudaStream_t stream) {
  if (B * T * H == 0) return cudaSuccess;
  AttnShape s{T, H, KV, D, qs, ks, os};
  if (!fa2_launchable(s, 4, {out, q, k, v})) return cudaErrorInvalidValue;
  Launch l = {};
  l.kind = 2;
  l.fwd32 = fa2_fwd_f32_args(out, lse, q, k, v, B, s);
  return issue("fa2 forward fp32", l, 1, {out, lse}, {q, k, v}, stream);
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
  Launch l = {};
  l.kind = 3;
  l.bwd32 = fa2_bwd_f32_args(dq, dk, dv, dout, lse, q, k, v, scratch, B, s);
  l.out = out;
  return issue("fa2 backward fp32", l, 2, {dq, dk, dv, scratch}, {dout, out, lse, q, k, v},
               stream);
}
