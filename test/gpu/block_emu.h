// One thread block of a GPU kernel run on the host (issue 34): the block's threads as
// coroutines of one OS thread, switched only at the points where the GPU synchronises them,
// shared memory as an array, and the warp-wide instructions the FlashAttention-2 kernels use
// (runtime/kernels/cuda_fa2.cuh) computed from the PTX ISA's fragment tables. The kernels'
// device code is the same source: under nvcc's device pass each primitive is its PTX
// instruction, in a host compile it calls the prt_* functions defined here.
//
// What runs where:
// - A warp collective (mma.sync, ldmatrix, shfl.sync) is a barrier of the warp's 32 lanes:
//   each lane leaves its operands and yields; the last to arrive computes every lane's result
//   (one exchange, no second barrier: a lane's next operands go to a separate array from its
//   result). All 32 lanes must arrive at the same kind of collective, or the run stops naming
//   the warp (on a GPU, .sync.aligned instructions diverging is undefined).
// - __syncthreads is a barrier of all the block's threads; a thread that ends while others
//   wait at one is a deadlock, reported as such (a GPU would hang or be undefined).
// - cp.async: each thread's copies are queued with their commit group. EMU_COPY_LATE (the
//   default) performs a copy only when the thread's cp.async.wait_group says the group is
//   done, so a read of shared memory before its wait sees the previous contents; EMU_COPY_EARLY
//   performs it at issue, so a copy into a buffer other warps still read overwrites it under
//   them. The GPU lands a copy anywhere between the two. A copy left un-waited at the end of
//   the thread is dropped and counted in emu.errors (the first one printed).
// - Scheduling: which runnable thread resumes next. EMU_ROUND_ROBIN advances every thread one
//   synchronisation point per round (warps in step); EMU_LOW_FIRST runs the lowest-numbered
//   runnable thread, so warp 0 runs ahead to each block barrier before warp 1 starts
//   (EMU_HIGH_FIRST the reverse). A missing __syncthreads shows as a wrong result under one of
//   the skewed orders, a missing wait under EMU_COPY_LATE.
// - Shared memory starts filled with 0xff bytes (a NaN as bf16 and as fp32), so a read of
//   anything never written shows as NaN in the result; guard bytes after it are checked at the
//   end of the block; every ldmatrix row and cp.async must lie inside it, 16-byte aligned.
//
// Faults a test can inject (EmuFault): the bugs the checks must catch, put back in the
// emulated instructions instead of the kernel (the kernel source stays the one the GPU runs).
//
// One block at a time, one OS thread: atomics are plain adds. Not emulated: timing, bank
// conflicts, and anything between blocks.
#ifndef PIPER_TEST_GPU_BLOCK_EMU_H
#define PIPER_TEST_GPU_BLOCK_EMU_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucontext.h>

#include "kernels/cuda_fa2.cuh"

enum { EMU_WARP = 32, EMU_MAX_THREADS = 256, EMU_MAX_WARPS = EMU_MAX_THREADS / EMU_WARP };

enum EmuSchedule { EMU_ROUND_ROBIN, EMU_LOW_FIRST, EMU_HIGH_FIRST };
// The bugs a test puts back to show the checks catch them: a dropped diagonal mask (in the
// kernel, runtime/kernels/cuda_fa2.cuh), .trans ignored or applied where not asked, two
// registers of mma's A fragment exchanged, every cp.async.wait_group one group short, no
// __syncthreads, a shuffle that returns the lane's own value.
enum EmuFault {
  EMU_NO_FAULT,
  EMU_FAULT_DROP_MASK = PRT_FA2_FAULT_DROP_MASK,
  EMU_FAULT_LDMATRIX_TRANS,
  EMU_FAULT_MMA_A_SWAP,
  EMU_FAULT_WAIT_ONE_LESS,
  EMU_FAULT_NO_SYNCTHREADS,
  EMU_FAULT_SHFL_SELF,
};
static const char *const emu_fault_names[] = {"none",          "drop-mask",      "ldmatrix-trans",
                                              "mma-a-swap",    "wait-one-less",  "no-syncthreads",
                                              "shfl-self"};
enum EmuCopyTiming { EMU_COPY_LATE, EMU_COPY_EARLY };
static const char *const emu_schedule_names[] = {"round-robin", "low-first", "high-first"};
static const char *const emu_copy_names[] = {"late", "early"};

// What a thread is doing between two resumptions.
enum EmuState { EMU_RUNNABLE, EMU_AT_WARP, EMU_AT_BLOCK, EMU_DONE };
// The warp collectives (the kind all 32 lanes must agree on).
enum EmuKind { EMU_MMA, EMU_LDMATRIX, EMU_LDMATRIX_T, EMU_SHFL };
static const char *const emu_kind_names[] = {"mma.sync", "ldmatrix", "ldmatrix.trans",
                                             "shfl.sync"};

struct EmuCopy {
  void *dst;       // in shared memory
  const void *src; // global memory (src_bytes of it read; the rest of 16 zero-filled)
  int src_bytes;
  long group;      // the commit group it belongs to (the thread's count of commits so far)
};

struct EmuThread {
  ucontext_t ctx;  // the thread's context where emu_switch is not built
  void *sp;        // its saved stack pointer (x86-64: emu_switch)
  char *stack;
  int tid;
  EmuState state;
  EmuCopy *copies; // queued cp.async (EMU_COPY_LATE), oldest first
  int ncopies, cap;
  long commits;    // cp.async.commit_group calls so far
};

struct EmuWarpSlot {
  int arrived, kind;
  uint32_t a[EMU_WARP][4], b[EMU_WARP][2]; // mma operands
  float c[EMU_WARP][4];                    // mma accumulators in, results out
  const char *row[EMU_WARP];               // ldmatrix row addresses
  uint32_t m[EMU_WARP][4];                 // ldmatrix results
  float v[EMU_WARP], shuffled[EMU_WARP];   // shfl.sync value in, result out
  int mask[EMU_WARP];                      // shfl.sync xor mask
};

// The emulated block's state (one at a time).
struct EmuBlock {
  int nthreads;
  EmuSchedule schedule;
  EmuCopyTiming copy;
  int fault;                     // an EmuFault, or 0
  char *smem;                    // nbytes of shared memory, then EMU_GUARD guard bytes
  size_t smem_bytes;
  EmuThread th[EMU_MAX_THREADS];
  EmuWarpSlot warp[EMU_MAX_WARPS];
  int at_block;                  // threads waiting at __syncthreads
  int ndone;                     // threads finished
  ucontext_t sched;              // the scheduler's context (ucontext)
  void *sched_sp;                // its stack pointer (emu_switch)
  EmuThread *cur;
  void (*body)(void *ctx, int tid, char *smem);
  void *body_ctx;
  long collectives, barriers;    // counted for the report
  long errors;                   // copies never waited for (the first is printed)
};
static EmuBlock emu;
enum { EMU_STACK = 256 * 1024, EMU_GUARD = 64 };

[[noreturn]] static void emu_die(const char *what) {
  fprintf(stderr, "block emulation: %s (thread %d)\n", what, emu.cur ? emu.cur->tid : -1);
  exit(3);
}

// Switching between the scheduler and a thread. On x86-64 a few instructions (callee-saved
// registers, MXCSR and the x87 control word on the old stack; swapcontext would also make a
// system call for the signal mask, at every one of the millions of switches a run makes);
// elsewhere ucontext.
#if defined(__x86_64__)
extern "C" void emu_switch(void **save_sp, void *load_sp);
asm(R"(
  .text
  .globl emu_switch
  .type emu_switch, @function
emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size emu_switch, .-emu_switch
)");
static void emu_to_thread(EmuThread &t) { emu_switch(&emu.sched_sp, t.sp); }
static void emu_yield() { emu_switch(&emu.cur->sp, emu.sched_sp); }
#else
static void emu_to_thread(EmuThread &t) { swapcontext(&emu.sched, &t.ctx); }
static void emu_yield() { swapcontext(&emu.cur->ctx, &emu.sched); }
#endif

static bool emu_in_smem(const void *p, size_t n) {
  const char *c = (const char *)p;
  return c >= emu.smem && c + n <= emu.smem + emu.smem_bytes;
}

// Computes the collective of warp w once all 32 lanes left their operands.
static void emu_complete(EmuWarpSlot &w) {
  emu.collectives++;
  if (w.kind == EMU_MMA) {
    // PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type" (the same table
    // as test/gpu/flash_lanes.h): A (16 x 16) element (row, col) is in lane 4 (row % 8) +
    // (col % 8) / 2, register (row >= 8) + 2 (col >= 8), the odd column in the high half;
    // B (16 x 8) element (k, n) in lane 4 n + (k % 8) / 2, register k >= 8; C, D: lane 4 g +
    // t holds rows g (c0, c1) and g + 8 (c2, c3), columns 2t and 2t + 1.
    auto bf = [](uint32_t reg, int half) {
      uint32_t u = ((reg >> (16 * half)) & 0xffffu) << 16;
      float f;
      memcpy(&f, &u, sizeof f);
      return f;
    };
    float A[16][16], Bm[16][8];
    for (int row = 0; row < 16; row++)
      for (int col = 0; col < 16; col++) {
        int lane = 4 * (row % 8) + (col % 8) / 2, reg = (row >= 8) + 2 * (col >= 8);
        if (emu.fault == EMU_FAULT_MMA_A_SWAP) reg ^= (reg == 1 || reg == 2) ? 3 : 0;
        A[row][col] = bf(w.a[lane][reg], col & 1);
      }
    for (int k = 0; k < 16; k++)
      for (int n = 0; n < 8; n++) Bm[k][n] = bf(w.b[4 * n + (k % 8) / 2][k >= 8], k & 1);
    for (int lane = 0; lane < EMU_WARP; lane++) {
      int g = lane >> 2, t = lane & 3;
      for (int i = 0; i < 4; i++) {
        int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
        float acc = w.c[lane][i];
        for (int k = 0; k < 16; k++) acc += A[row][k] * Bm[k][col];
        w.c[lane][i] = acc;
      }
    }
  } else if (w.kind == EMU_LDMATRIX || w.kind == EMU_LDMATRIX_T) {
    // PTX ISA, "ldmatrix": for .x4, lane 8 i + r gives the address of row r of matrix i (8
    // rows of 8 b16, 16 contiguous bytes each); result register i of lane 4 r + c holds
    // elements (r, 2c) and (r, 2c + 1) of matrix i, the first in the low half. With .trans
    // the matrix is read column by column: lane 4 r + c gets elements (2c, r) and (2c + 1, r).
    bool trans = w.kind == EMU_LDMATRIX_T;
    if (emu.fault == EMU_FAULT_LDMATRIX_TRANS) trans = !trans;
    for (int lane = 0; lane < EMU_WARP; lane++)
      for (int i = 0; i < 4; i++) {
        int r = lane >> 2, c = lane & 3;
        uint16_t lo, hi;
        if (!trans) {
          memcpy(&lo, w.row[8 * i + r] + 2 * (2 * c), 2);
          memcpy(&hi, w.row[8 * i + r] + 2 * (2 * c + 1), 2);
        } else {
          memcpy(&lo, w.row[8 * i + 2 * c] + 2 * r, 2);
          memcpy(&hi, w.row[8 * i + 2 * c + 1] + 2 * r, 2);
        }
        w.m[lane][i] = (uint32_t)lo | (uint32_t)hi << 16;
      }
  } else {
    for (int lane = 0; lane < EMU_WARP; lane++)
      w.shuffled[lane] = w.v[emu.fault == EMU_FAULT_SHFL_SELF ? lane : lane ^ w.mask[lane]];
  }
}

// The calling lane arrives at a collective of `kind` (its operands already in the slot) and
// returns once the warp's result is in the slot.
static void emu_collective(EmuWarpSlot &w, int kind) {
  if (w.arrived == 0) w.kind = kind;
  else if (w.kind != kind) {
    char msg[160];
    snprintf(msg, sizeof msg, "warp %d: lanes at different collectives (%s and %s)",
             emu.cur->tid / EMU_WARP, emu_kind_names[w.kind], emu_kind_names[kind]);
    emu_die(msg);
  }
  if (++w.arrived < EMU_WARP) {
    emu.cur->state = EMU_AT_WARP;
  } else {
    emu_complete(w);
    w.arrived = 0;
    int w0 = emu.cur->tid / EMU_WARP * EMU_WARP;
    for (int l = 0; l < EMU_WARP; l++) emu.th[w0 + l].state = EMU_RUNNABLE;
  }
  emu_yield();
}

static EmuWarpSlot &emu_my_warp() { return emu.warp[emu.cur->tid / EMU_WARP]; }
static int emu_lane() { return emu.cur->tid % EMU_WARP; }

// ---- the hooks runtime/kernels/cuda_fa2.cuh and cuda_flash.cuh call on the host ----
static void emu_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  EmuWarpSlot &w = emu_my_warp();
  int l = emu_lane();
  memcpy(w.a[l], a, sizeof w.a[l]);
  memcpy(w.b[l], b, sizeof w.b[l]);
  memcpy(w.c[l], d, sizeof w.c[l]);
  emu_collective(w, EMU_MMA);
  memcpy(d, w.c[l], sizeof w.c[l]);
}

static float emu_flash_shfl_xor(float v, int mask) {
  EmuWarpSlot &w = emu_my_warp();
  int l = emu_lane();
  w.v[l] = v;
  w.mask[l] = mask;
  emu_collective(w, EMU_SHFL);
  return w.shuffled[l];
}

#ifndef BLOCK_EMU_BESIDE_FLASH_LANES
void prt_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) { emu_flash_mma(d, a, b); }
float prt_flash_shfl_xor(float v, int mask) { return emu_flash_shfl_xor(v, mask); }
#else
// In the fake CUDA runtime the tensor-core attention's lane emulation (flash_lanes.h, in
// fake_flash.cc) defines prt_flash_mma and prt_flash_shfl_xor too: it hands them here while a
// block runs (1: done here; 0: no block is running).
int block_emu_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  if (!emu.cur) return 0;
  emu_flash_mma(d, a, b);
  return 1;
}
int block_emu_flash_shfl_xor(float *v, int mask) {
  if (!emu.cur) return 0;
  *v = emu_flash_shfl_xor(*v, mask);
  return 1;
}
#endif

void prt_fa2_ldmatrix_x4(uint32_t r[4], const void *row, int trans) {
  if (!emu_in_smem(row, 16) || ((uintptr_t)row & 15))
    emu_die("ldmatrix row address outside shared memory or not 16-byte aligned");
  EmuWarpSlot &w = emu_my_warp();
  int l = emu_lane();
  w.row[l] = (const char *)row;
  emu_collective(w, trans ? EMU_LDMATRIX_T : EMU_LDMATRIX);
  memcpy(r, w.m[l], sizeof w.m[l]);
}

void prt_fa2_syncthreads() {
  if (emu.fault == EMU_FAULT_NO_SYNCTHREADS) return;
  emu.barriers++;
  if (++emu.at_block < emu.nthreads) {
    emu.cur->state = EMU_AT_BLOCK;
  } else {
    emu.at_block = 0;
    for (int t = 0; t < emu.nthreads; t++)
      if (emu.th[t].state == EMU_AT_BLOCK) emu.th[t].state = EMU_RUNNABLE;
  }
  emu_yield();
}

static void emu_do_copy(const EmuCopy &c) {
  if (c.src_bytes) memcpy(c.dst, c.src, (size_t)c.src_bytes);
  memset((char *)c.dst + c.src_bytes, 0, (size_t)(16 - c.src_bytes));
}

void prt_fa2_cp_async16(void *dst, const void *src, int src_bytes) {
  if (!emu_in_smem(dst, 16) || ((uintptr_t)dst & 15))
    emu_die("cp.async destination outside shared memory or not 16-byte aligned");
  if (src_bytes < 0 || src_bytes > 16 || (src_bytes && ((uintptr_t)src & 15)))
    emu_die("cp.async source not 16-byte aligned, or a size outside 0..16");
  EmuThread &t = *emu.cur;
  EmuCopy c = {dst, src, src_bytes, t.commits};
  if (emu.copy == EMU_COPY_EARLY) {
    emu_do_copy(c);
    return;
  }
  if (t.ncopies == t.cap) {
    t.cap = t.cap ? 2 * t.cap : 64;
    t.copies = (EmuCopy *)realloc(t.copies, (size_t)t.cap * sizeof(EmuCopy));
    if (!t.copies) emu_die("out of memory for the cp.async queue");
  }
  t.copies[t.ncopies++] = c;
}

void prt_fa2_cp_async_commit() { emu.cur->commits++; }

// Completes the thread's copies of every committed group but the newest `pending`.
void prt_fa2_cp_async_wait(int pending) {
  EmuThread &t = *emu.cur;
  if (emu.fault == EMU_FAULT_WAIT_ONE_LESS) pending++;
  long upto = t.commits - pending; /* groups [0, upto) must be complete */
  int kept = 0;
  for (int i = 0; i < t.ncopies; i++) {
    if (t.copies[i].group < upto) emu_do_copy(t.copies[i]);
    else t.copies[kept++] = t.copies[i];
  }
  t.ncopies = kept;
}

int prt_fa2_fault(int which) { return emu.fault == which; }

// ---- running a block ----
static void emu_entry() {
  EmuThread &t = *emu.cur;
  emu.body(emu.body_ctx, t.tid, emu.smem);
  if (t.ncopies) { /* counted, not fatal, so the run's results still show what it did */
    if (!emu.errors++)
      fprintf(stderr, "block emulation: thread %d ends with %d cp.async copies never waited for\n",
              t.tid, t.ncopies);
    t.ncopies = 0;
  }
  t.state = EMU_DONE;
  emu.ndone++;
#if defined(__x86_64__)
  emu_yield(); /* never resumed */
  emu_die("a finished thread resumed");
#endif
  // ucontext: uc_link returns to the scheduler
}

// A new thread's stack (x86-64): what emu_switch pops, then emu_entry as its return address
// above a null one (emu_entry starts as if called, the stack 16-byte aligned before the call)
static void emu_start(EmuThread &t) {
#if defined(__x86_64__)
  uint64_t *top = (uint64_t *)(t.stack + EMU_STACK);
  uint64_t *sp = top - 2 - 6 - 1;
  uint32_t csr[2];
  asm volatile("stmxcsr %0\n\tfnstcw %1" : "=m"(csr[0]), "=m"(csr[1]));
  memcpy(sp, csr, 8);                  /* MXCSR, x87 control word */
  memset(sp + 1, 0, 6 * 8);            /* r15 .. rbp */
  sp[7] = (uint64_t)(uintptr_t)emu_entry;
  sp[8] = 0;
  t.sp = sp;
#else
  getcontext(&t.ctx);
  t.ctx.uc_stack.ss_sp = t.stack;
  t.ctx.uc_stack.ss_size = EMU_STACK;
  t.ctx.uc_link = &emu.sched;
  makecontext(&t.ctx, emu_entry, 0);
#endif
}

// Runs body(ctx, tid, smem) for tid = 0 .. nthreads-1 as one block with smem_bytes of shared
// memory. Dies (exit 3, naming the problem) on a deadlock, a diverged warp, a bad address or
// a guard byte overwritten.
static void emu_run_block(int nthreads, size_t smem_bytes, EmuSchedule schedule,
                          EmuCopyTiming copy, int fault,
                          void (*body)(void *ctx, int tid, char *smem), void *ctx) {
  if (nthreads <= 0 || nthreads > EMU_MAX_THREADS || nthreads % EMU_WARP)
    emu_die("a block is 1 to 8 whole warps");
  static char *stacks; /* one allocation for every block's thread stacks */
  if (!stacks && !(stacks = (char *)malloc((size_t)EMU_MAX_THREADS * EMU_STACK)))
    emu_die("out of memory for the thread stacks");
  emu.nthreads = nthreads;
  emu.schedule = schedule;
  emu.copy = copy;
  emu.fault = fault;
  emu.smem_bytes = smem_bytes;
  emu.smem = (char *)aligned_alloc(128, (smem_bytes + EMU_GUARD + 127) / 128 * 128);
  if (!emu.smem) emu_die("out of memory for shared memory");
  memset(emu.smem, 0xff, smem_bytes); /* NaN as bf16 and as fp32 */
  memset(emu.smem + smem_bytes, 0x5a, EMU_GUARD);
  emu.body = body;
  emu.body_ctx = ctx;
  emu.at_block = 0;
  memset(emu.warp, 0, sizeof emu.warp);
  for (int i = 0; i < nthreads; i++) {
    EmuThread &t = emu.th[i];
    t.tid = i;
    t.state = EMU_RUNNABLE;
    t.ncopies = 0;
    t.commits = 0;
    t.stack = stacks + (size_t)i * EMU_STACK;
    emu_start(t);
  }
  int last = -1;
  emu.ndone = 0;
  while (emu.ndone < nthreads) {
    int pick = -1;
    for (int k = 0; k < nthreads && pick < 0; k++) {
      int i = schedule == EMU_ROUND_ROBIN ? (last + 1 + k) % nthreads
              : schedule == EMU_LOW_FIRST ? k
                                          : nthreads - 1 - k;
      if (emu.th[i].state == EMU_RUNNABLE) pick = i;
    }
    if (pick < 0) {
      emu.cur = nullptr;
      emu_die(emu.at_block ? "deadlock: threads wait at __syncthreads that others never reach"
                           : "deadlock: lanes wait at a warp collective that others never reach");
    }
    last = pick;
    emu.cur = &emu.th[pick];
    emu_to_thread(*emu.cur);
  }
  emu.cur = nullptr;
  for (int i = 0; i < EMU_GUARD; i++)
    if ((unsigned char)emu.smem[smem_bytes + i] != 0x5a)
      emu_die("a write past the end of shared memory");
  free(emu.smem);
  emu.smem = nullptr;
}

// A callable as a block body
template <class F> static void emu_call(void *f, int tid, char *smem) {
  (*(F *)f)(tid, smem);
}
template <class F>
static void emu_block(int nthreads, size_t smem_bytes, EmuSchedule schedule, EmuCopyTiming copy,
                      int fault, F f) {
  emu_run_block(nthreads, smem_bytes, schedule, copy, fault, emu_call<F>, &f);
}

#endif
