// The FlashAttention-2 kernels (runtime/kernels/cuda_fa2.cuh, what kernels/cuda_fa2.cu runs)
// checked without a GPU: each block's 128 threads run on the host under test/gpu/block_emu.h
// (real barriers, shared memory as an array, cp.async, ldmatrix and mma.sync from the PTX
// ISA's tables), and the outputs are compared with the CPU attention
// (runtime/kernels/cpu_attention.c, fp32, the kernels the PyTorch oracle tests check).
//
// Inputs: q, k, v, dO drawn uniformly and rounded to bf16; the CPU gets the same rounded
// values as fp32, so the comparison measures only what the kernels do differently: P and dS
// rounded to bf16 before their products, O rounded to bf16 (and D = rowsum(dO o O) taken from
// that O), fp32 sums in another order, ex2.approx for exp. Tolerance: max |got - CPU| over max
// |CPU| <= 1e-2 per output (bf16 keeps 8 significant bits, a relative step of 2^-8 = 3.9e-3;
// one rounding of P or dS per product, averaged over the sums, measures 1e-3 to 4e-3 here).
// lse is compared at 1e-3 (it is fp32 throughout; only exp2 and the order of sums differ).
//
// Shapes: causal; GPT's packed qkv and the grouped-query layout (2 and 3 query heads a kv head,
// one for all, KV = H); head sizes 64 and 128; T below a tile, not a multiple of the 64- and
// 128-row tiles, and an exact multiple. Each shape runs under the three schedules (warps in
// step, warp 0 first, warp 3 first) with copies landing late (at their wait), and the skewed
// ones again with copies landing at issue.
//
// --fault NAME puts one bug back (block_emu.h EmuFault) and runs one shape of each layout and
// head size: every output that the bug touches must FAIL (flash-emu's checks are the same; the
// lit test, fa2-emu.test, asserts the failures).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_fa2.h" /* the backward's scratch bytes */
#include "piper/runtime.h"

#include "fa2_host.h"

static int failures;
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static float uni() { /* in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

// n values in [-scale, scale) rounded to bf16: the bf16 bits into h, their values into f
static void rnd_bf16(uint16_t *h, float *f, int64_t n, float scale) {
  for (int64_t i = 0; i < n; i++) {
    h[i] = (uint16_t)flash_bf16(scale * uni());
    f[i] = fa2_bf16_value(h[i]);
  }
}

// The largest |got - want| over the largest |want| of `rows` rows of `cols` values (row
// stride `stride`), printed; a failure above tol (a NaN is infinite).
static double compare(const char *what, const float *got, const float *want, int64_t rows,
                      int64_t cols, int64_t stride, double tol) {
  double worst = 0, ref = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) ref = fmax(ref, fabs((double)want[r * stride + c]));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      double d = fabs((double)got[r * stride + c] - want[r * stride + c]) / (ref > 0 ? ref : 1);
      if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
  printf("  %-9s max diff / max |ref| %.3g (tol %.0e)%s\n", what, worst, tol,
         worst <= tol ? "" : "  FAIL");
  if (!(worst <= tol)) failures++;
  return worst;
}

static float *bf16_to_f32(const uint16_t *h, int64_t n) {
  float *f = (float *)malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) f[i] = fa2_bf16_value(h[i]);
  return f;
}

typedef Fa2HostRun Run;

// The bf16 kernels of one call, as prt_cuda_fa2_fwd/bwd launch them (fa2_host.h)
template <int D>
static void run_bf16(const Run &run, int64_t B, const AttnShape &s, const uint16_t *q,
                     const uint16_t *k, const uint16_t *v, const uint16_t *dout, uint16_t *out,
                     float *lse, uint16_t *dq, uint16_t *dk, uint16_t *dv) {
  fa2_host_fwd<D>(run, fa2_fwd_args(out, lse, q, k, v, B, s));
  float *scratch = (float *)malloc(prt_cuda_fa2_bwd_scratch_bytes(B, s.T, s.H, D));
  fa2_host_bwd<D>(run, fa2_bwd_args(dk, dv, dout, lse, q, k, v, scratch, B, s), dq, out);
  free(scratch);
}

// The fp32 kernels of one call (prt_cuda_fa2_fwd_f32/bwd_f32)
template <int D>
static void run_f32(const Run &run, int64_t B, const AttnShape &s, const float *q, const float *k,
                    const float *v, const float *dout, float *out, float *lse, float *dq,
                    float *dk, float *dv) {
  fa2_host_fwd_f32<D>(run, fa2_fwd_f32_args(out, lse, q, k, v, B, s));
  float *scratch = (float *)malloc(prt_cuda_fa2_bwd_f32_scratch_bytes(B, s.T, s.H));
  fa2_host_bwd_f32<D>(run, fa2_bwd_f32_args(dq, dk, dv, dout, lse, q, k, v, scratch, B, s), out);
  free(scratch);
}

static void *filled(int64_t n, int size) { /* n elements of `size` bytes, all bits set (NaN) */
  void *p = malloc((size_t)n * size);
  memset(p, 0xff, (size_t)n * size);
  return p;
}

// The five outputs of a variant against the CPU's: out, lse, dq, dk, dv (in the layout `s`,
// whose dq, dk, dv are the columns [0, C), [C, 2C), [2C, 3C) of one buffer when packed)
static void compare_all(const char *variant, double tol, const AttnShape &s, int64_t B,
                        bool packed, const float *out, const float *lse, const float *dq,
                        const float *dk, const float *dv, const float *wout, const float *wlse,
                        const float *wdq, const float *wdk, const float *wdv) {
  int64_t C = s.H * s.D, rows = B * s.H * s.T, qw = packed ? C : s.qs, kw = packed ? C : s.ks;
  char what[32];
  snprintf(what, sizeof what, "%s out", variant);
  compare(what, out, wout, B * s.T, s.os, s.os, tol);
  snprintf(what, sizeof what, "%s lse", variant);
  compare(what, lse, wlse, 1, rows, rows, tol < 1e-3 ? tol : 1e-3);
  snprintf(what, sizeof what, "%s dq", variant);
  compare(what, dq, wdq, B * s.T, qw, s.qs, tol);
  snprintf(what, sizeof what, "%s dk", variant);
  compare(what, dk, wdk, B * s.T, kw, s.ks, tol);
  snprintf(what, sizeof what, "%s dv", variant);
  compare(what, dv, wdv, B * s.T, kw, s.ks, tol);
}

// GPT's packed qkv (B, T, 3C) or the grouped-query layout: the bf16 and the fp32 kernels on the
// same inputs (bf16 values) against the CPU; one line per variant and output.
template <int D>
static void check(const char *layout, int64_t B, int64_t T, int64_t H, int64_t KV,
                  const Run &run) {
  bool packed = !strcmp(layout, "packed");
  int64_t C = H * D;
  AttnShape s = packed ? attn_packed(T, C, H) : attn_gqa(T, H, KV, D);
  printf("@%s_B%lld_T%lld_H%lld_KV%lld_D%d %s/%s%s%s\n", layout, (long long)B, (long long)T,
         (long long)H, (long long)s.KV, D, emu_schedule_names[run.schedule],
         emu_copy_names[run.copy], run.fault ? " fault " : "",
         run.fault ? emu_fault_names[run.fault] : "");
  // packed: one (B, T, 3C) buffer for q, k, v (and one for dq, dk, dv) at offsets 0, C, 2C;
  // grouped-query: q (nq) and k, v (nk each) in one buffer at offsets 0, nq, nq + nk
  int64_t nq = B * T * s.qs, nk = packed ? 0 : B * T * s.ks, no = B * T * s.os, rows = B * H * T;
  int64_t n = nq + 2 * nk, ko = packed ? C : nq, vo = packed ? 2 * C : nq + nk;
  uint16_t *hx = (uint16_t *)malloc((size_t)n * 2), *hdo = (uint16_t *)malloc((size_t)no * 2);
  float *fx = (float *)malloc((size_t)n * 4), *fdo = (float *)malloc((size_t)no * 4);
  rnd_bf16(hx, fx, n, 2.0f);
  rnd_bf16(hdo, fdo, no, 1.0f);

  // the CPU on the same values
  float *wout = (float *)calloc((size_t)no, 4), *wlse = (float *)calloc((size_t)rows, 4);
  float *wd = (float *)calloc((size_t)n, 4);
  if (packed) {
    prt_attention_fwd(wout, wlse, fx, B, T, C, H);
    prt_attention_bwd(wd, fdo, fx, wout, wlse, B, T, C, H);
  } else {
    prt_gqa_attention_fwd(wout, wlse, fx, fx + ko, fx + vo, B, T, H, KV, D);
    prt_gqa_attention_bwd(wd, wd + ko, wd + vo, fdo, fx, fx + ko, fx + vo, wout, wlse, B, T, H,
                          KV, D);
  }

  // bf16 (outputs start as NaN: one never written shows)
  uint16_t *hout = (uint16_t *)filled(no, 2), *hd = (uint16_t *)filled(n, 2);
  float *lse = (float *)filled(rows, 4);
  run_bf16<D>(run, B, s, hx, hx + ko, hx + vo, hdo, hout, lse, hd, hd + ko, hd + vo);
  float *gout = bf16_to_f32(hout, no), *gd = bf16_to_f32(hd, n);
  compare_all("bf16", 1e-2, s, B, packed, gout, lse, gd, gd + ko, gd + vo, wout, wlse, wd,
              wd + ko, wd + vo);
  free(hout), free(hd), free(gout), free(gd);

  // fp32
  float *fout = (float *)filled(no, 4), *fd = (float *)filled(n, 4);
  run_f32<D>(run, B, s, fx, fx + ko, fx + vo, fdo, fout, lse, fd, fd + ko, fd + vo);
  compare_all("fp32", 1e-5, s, B, packed, fout, lse, fd, fd + ko, fd + vo, wout, wlse, wd,
              wd + ko, wd + vo);
  free(fout), free(fd), free(lse), free(hx), free(hdo), free(fx), free(fdo), free(wout);
  free(wlse), free(wd);
}

// Every shape under every schedule (or, with a fault, one shape a layout and head size).
template <int D> static void shapes(const Run *runs, int nruns, bool quick) {
  for (int r = 0; r < nruns; r++) {
    check<D>("gqa", 1, D == 64 ? 150 : 100, 4, 2, runs[r]); /* 2 query heads a kv head */
    check<D>("packed", 1, 70, 2, 2, runs[r]);                /* GPT's qkv, read in place */
    if (quick) continue;
    check<D>("gqa", 2, 37, 3, 1, runs[r]);  /* T below a tile; one kv head for 3 */
    check<D>("gqa", 1, 128, 2, 2, runs[r]); /* KV = H; T a multiple of both tiles */
  }
}

int main(int argc, char **argv) {
  int fault = 0;
  if (argc == 3 && !strcmp(argv[1], "--fault")) {
    for (int f = 1; f < (int)(sizeof emu_fault_names / sizeof *emu_fault_names); f++)
      if (!strcmp(argv[2], emu_fault_names[f])) fault = f;
    if (!fault) {
      fprintf(stderr, "fa2-emu: unknown fault %s\n", argv[2]);
      return 2;
    }
  } else if (argc != 1) {
    fprintf(stderr, "usage: piper-fa2-emu-test [--fault NAME]\n");
    return 2;
  }
  if (fault) {
    // the schedule that exposes the bug: warp 0 first with copies at their wait
    Run run = {EMU_LOW_FIRST, EMU_COPY_LATE, fault};
    shapes<64>(&run, 1, true);
    shapes<128>(&run, 1, true);
  } else {
    const Run runs[] = {{EMU_ROUND_ROBIN, EMU_COPY_LATE, 0}, {EMU_LOW_FIRST, EMU_COPY_LATE, 0},
                        {EMU_HIGH_FIRST, EMU_COPY_LATE, 0}, {EMU_LOW_FIRST, EMU_COPY_EARLY, 0},
                        {EMU_HIGH_FIRST, EMU_COPY_EARLY, 0}};
    shapes<64>(runs, 5, false);
    shapes<128>(runs, 5, false);
  }
  if (emu.errors) {
    printf("FAIL: %ld cp.async copies never waited for\n", emu.errors);
    failures++;
  }
  printf("%d failed (%ld warp collectives, %ld block barriers emulated)\n", failures,
         emu.collectives, emu.barriers);
  return failures ? 1 : 0;
}
