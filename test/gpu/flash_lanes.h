// The tensor-core attention's warps (runtime/kernels/cuda_flash.cuh) run on the host: 32 lanes
// as threads in lock step, with the two warp-wide operations the kernels use defined from the
// PTX ISA's fragment tables for mma.m16n8k16 (bf16; "Matrix Fragments for mma.m16n8k16 with
// floating point type"): prt_flash_mma finds every element of A and B in the lane and
// register the table gives and forms each lane's D (the products of bf16 values summed in
// fp32, k in order), prt_flash_shfl_xor exchanges between lanes. Shared by flash_emu.cu (the
// check against the CPU kernels) and fake_flash.cc (the fake CUDA runtime's launchers). One
// warp runs at a time (the exchange state is global).
#ifndef PIPER_TEST_GPU_FLASH_LANES_H
#define PIPER_TEST_GPU_FLASH_LANES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "kernels/cuda.h" /* prt_cuda_flash_staged, prt_cuda_flash_stage_parts */
#include "kernels/cuda_flash.cuh"
#include "lanes_emu.h"

// ---- the warp: 32 lanes as threads, each exchange between two barriers ----
static pthread_barrier_t lanes_barrier;
static pthread_once_t lanes_once = PTHREAD_ONCE_INIT;
static void lanes_init() { pthread_barrier_init(&lanes_barrier, NULL, WARP); }
static thread_local int my_lane;
static uint32_t frag_a[WARP][4], frag_b[WARP][2];
static float shuffled[WARP];

static float bf16_value(uint32_t reg, int half) {
  uint32_t u = ((reg >> (16 * half)) & 0xffffu) << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
// A (16 x 16, row) element (row, col): lane 4 (row % 8) + (col % 8) / 2; register 0 for rows
// 0-7 and cols 0-7, 1 for rows 8-15, 2 for cols 8-15, 3 for both; the odd column the high half
static float elem_a(int row, int col) {
  int lane = 4 * (row % 8) + (col % 8) / 2, reg = (row >= 8) + 2 * (col >= 8);
  return bf16_value(frag_a[lane][reg], col & 1);
}
// B (16 x 8, col) element (k, n): lane 4 n + (k % 8) / 2; register 0 for k 0-7, 1 for 8-15
static float elem_b(int k, int n) {
  int lane = 4 * n + (k % 8) / 2;
  return bf16_value(frag_b[lane][k >= 8], k & 1);
}

// The block emulation (block_emu.h), where it is linked beside these lanes (the fake CUDA
// runtime: fake_fa2.cc), takes the warp instructions of the block it is running; weak, so
// flash_emu.cu links without it.
int block_emu_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2])
    __attribute__((weak));
int block_emu_flash_shfl_xor(float *v, int mask) __attribute__((weak));

// d (this lane's c0..c3: rows g, g, g+8, g+8, cols 2t, 2t+1, 2t, 2t+1) += A B
void prt_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  if (block_emu_flash_mma && block_emu_flash_mma(d, a, b)) return;
  memcpy(frag_a[my_lane], a, sizeof frag_a[0]);
  memcpy(frag_b[my_lane], b, sizeof frag_b[0]);
  pthread_barrier_wait(&lanes_barrier);
  int g = my_lane >> 2, t = my_lane & 3;
  float r[4];
  for (int i = 0; i < 4; i++) {
    int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 16; k++) acc += elem_a(row, k) * elem_b(k, col);
    r[i] = acc;
  }
  pthread_barrier_wait(&lanes_barrier);
  memcpy(d, r, sizeof r);
}

float prt_flash_shfl_xor(float v, int mask) {
  if (block_emu_flash_shfl_xor && block_emu_flash_shfl_xor(&v, mask)) return v;
  shuffled[my_lane] = v;
  pthread_barrier_wait(&lanes_barrier);
  float r = shuffled[my_lane ^ mask];
  pthread_barrier_wait(&lanes_barrier);
  return r;
}

// ---- running the warps ----
struct Job {
  int kernel;                   // 0 forward, 1 dq, 2 dk/dv
  int64_t b, h, r0;             // the warp's batch, head (kv head for 2) and first row
  AttnShape s;
  float scale;
  prt_fp_out out;
  float *lse;
  prt_fp_out dq, dk, dv;
  float *Dbuf;
  prt_fp_in q, k, v, dout;       // dout.p null: none (the forward)
  int lane;
  FlashStaged st;               // the staged operands (stage_operands)
};

static void *run_lane(void *arg) {
  Job *j = (Job *)arg;
  my_lane = j->lane;
  if (j->kernel == 0) {
    flash_fwd_warp<FLASH_ND>(j->lane, j->b, j->h, j->r0, j->out, j->lse, j->st, j->s,
                             j->scale);
  } else if (j->kernel == 1) {
    flash_dq_warp<FLASH_ND>(j->lane, j->b, j->h, j->r0, j->dq, j->Dbuf, j->st, j->lse, j->s,
                            j->scale);
  } else {
    flash_dkdv_warp<FLASH_ND>(j->lane, j->b, j->h, j->r0, j->dk, j->dv, j->Dbuf, j->st,
                              j->lse, j->s, j->scale);
  }
  return NULL;
}

// A launch's first kernels (prt_cuda_flash_*_launch): q, k, v and, for the backward, dO staged
// into `staged` (prt_cuda_flash_stage_bytes) by the kernels' own flash_stage_at
static void stage_one(uint16_t *dst, prt_fp_in src, int64_t rs, int64_t B, int64_t T,
                      int64_t heads, int64_t D) {
  int64_t n = prt_cuda_flash_staged(B, T, heads);
  for (int64_t i = 0; i < n; i++) dst[i] = flash_stage_at(src, rs, T, heads, D, i);
}
static void stage_operands(Job &j, int64_t B, uint16_t *staged) {
  const AttnShape &s = j.s;
  uint16_t *part[4]; /* q, k, v, dO: the launchers' layout */
  prt_cuda_flash_stage_parts(staged, B, s.T, s.H, s.KV, part);
  stage_one(part[0], j.q, s.qs, B, s.T, s.H, s.D);
  stage_one(part[1], j.k, s.ks, B, s.T, s.KV, s.D);
  stage_one(part[2], j.v, s.ks, B, s.T, s.KV, s.D);
  if (j.dout.p) stage_one(part[3], j.dout, s.os, B, s.T, s.H, s.D);
  j.st = FlashStaged{part[0], part[1], part[2], j.dout.p ? part[3] : nullptr};
}

// Every warp of `kernel` (B x heads x 16-row tiles), 32 lane threads each.
static void run(Job job, int64_t B, int64_t heads) {
  pthread_once(&lanes_once, lanes_init);
  for (job.b = 0; job.b < B; job.b++)
    for (job.h = 0; job.h < heads; job.h++)
      for (job.r0 = 0; job.r0 < job.s.T; job.r0 += 16) {
        Job lanes[WARP];
        for (int l = 0; l < WARP; l++) {
          lanes[l] = job;
          lanes[l].lane = l;
        }
        lanes_run(run_lane, lanes);
      }
}

// The forward of one launch (its operands staged first into `staged`).
__attribute__((unused)) static void run_fwd(Job job, int64_t B, uint16_t *staged) {
  job.kernel = 0;
  job.dout = prt_fp_in{nullptr, 0};
  stage_operands(job, B, staged);
  run(job, B, job.s.H);
}

// The backward of one launch: the operands staged, then dq and D for every query tile of
// every head, then dk and dv for every key tile of every kv head (prt_cuda_flash_bwd_launch's
// kernels).
__attribute__((unused)) static void run_bwd(Job job, int64_t B, uint16_t *staged) {
  stage_operands(job, B, staged);
  job.kernel = 1;
  run(job, B, job.s.H);
  job.kernel = 2;
  run(job, B, job.s.KV);
}

#endif
