// The launches of runtime/kernels/cuda_fa2.cu on the host: what each of prt_cuda_fa2_*'s
// launches does, its blocks one after another under the block emulation (block_emu.h: the
// threads with real barriers, shared memory an array, cp.async, ldmatrix and mma from the PTX
// ISA's tables), its element-wise launches (D, the dQ accumulator, dq) as loops over their
// threads' work. Shared by fa2_emu.cu (the check against the CPU attention) and fake_fa2.cc
// (the fake CUDA runtime's launchers), so both run the kernels as the GPU's launchers do.
#ifndef PIPER_TEST_GPU_FA2_HOST_H
#define PIPER_TEST_GPU_FA2_HOST_H

#include <stdint.h>
#include <string.h>

#include "kernels/cuda_fa2.cuh"
#include "kernels/cuda_fa2_f32.cuh"

#include "block_emu.h"

// How the blocks run: the schedule of their threads, when cp.async copies land, a fault put
// back (block_emu.h)
struct Fa2HostRun {
  EmuSchedule schedule;
  EmuCopyTiming copy;
  int fault;
};

template <class F> static void fa2_host_blocks(int64_t blocks, int smem, const Fa2HostRun &run,
                                               F f) {
  for (int64_t blk = 0; blk < blocks; blk++)
    emu_block(FA2_THREADS, (size_t)smem, run.schedule, run.copy, run.fault,
              [&](int tid, char *sm) { f(blk, tid, sm); });
}

// prt_cuda_fa2_fwd's launch
template <int D> static void fa2_host_fwd(const Fa2HostRun &run, const Fa2FwdArgs &a) {
  fa2_host_blocks(fa2_fwd_blocks<D>(a.B, a.s), Fa2Fwd<D>::SMEM, run,
                  [&](int64_t blk, int tid, char *sm) { fa2_fwd_block<D>(a, blk, tid, sm); });
}

// prt_cuda_fa2_bwd's launches: D and the zeroed accumulator, the key blocks, dq
template <int D>
static void fa2_host_bwd(const Fa2HostRun &run, const Fa2BwdArgs &a, uint16_t *dq,
                         const uint16_t *out) {
  int64_t rows = a.B * a.s.H * a.s.T;
  for (int64_t r = 0; r < rows; r++)
    fa2_delta_row(const_cast<float *>(a.delta), a.dout, out, a.s, r);
  memset(a.dq_acc, 0, (size_t)(rows * D) * sizeof(float));
  fa2_host_blocks(fa2_bwd_blocks<D>(a.B, a.s), Fa2Bwd<D>::SMEM, run,
                  [&](int64_t blk, int tid, char *sm) { fa2_bwd_block<D>(a, blk, tid, sm); });
  for (int64_t c = 0; c < rows * D / 8; c++) fa2_dq_chunk(dq, a.dq_acc, a.s, a.scale, c);
}

// prt_cuda_fa2_fwd_f32's launch
template <int D> static void fa2_host_fwd_f32(const Fa2HostRun &run, const Fa2FwdF32Args &a) {
  fa2_host_blocks(fa2_fwd_f32_blocks<D>(a.B, a.s), Fa2FwdF32<D>::SMEM, run,
                  [&](int64_t blk, int tid, char *sm) { fa2_fwd_f32_block<D>(a, blk, tid, sm); });
}

// prt_cuda_fa2_bwd_f32's launches: D with dq zeroed, the key blocks
template <int D>
static void fa2_host_bwd_f32(const Fa2HostRun &run, const Fa2BwdF32Args &a, const float *out) {
  int64_t rows = a.B * a.s.H * a.s.T;
  for (int64_t r = 0; r < rows; r++)
    fa2_delta_row_f32(const_cast<float *>(a.delta), a.dq, a.dout, out, a.s, r);
  fa2_host_blocks(fa2_bwd_f32_blocks<D>(a.B, a.s), Fa2BwdF32<D>::SMEM, run,
                  [&](int64_t blk, int tid, char *sm) { fa2_bwd_f32_block<D>(a, blk, tid, sm); });
}

#endif
