// The GPU attention kernels at the bench shape (issue 34): the FlashAttention-2 kernels
// (kernels/cuda_fa2.cu, bf16 in and out) beside the tensor-core kernels the plans run today
// (kernels/cuda_flash.cu, bf16 in and out as a bf16 plan runs them, each operand staged by the
// launch), forward and
// backward, timed with CUDA events (median of `reps` after a warm-up), in TFLOP/s of causal
// attention: forward 2 B H T^2 D, backward 2.5 times that (FlashAttention-2's count).
//
// The fp32 variant (same tiling, fp32 FMAs) beside today's scalar fp32 kernels
// (kernels/cuda_attention.cu) likewise.
//
// First, on the same GPU, the FlashAttention-2 kernels against the CPU attention
// (runtime/kernels/cpu_attention.c) at two small shapes (GPT's packed qkv at head size 64,
// grouped-query at 128, T not a multiple of the tiles), on bf16-rounded inputs, within 1e-2
// (bf16) and 1e-5 (fp32) of each output's max as test/gpu/fa2-emu.test checks the host
// emulation: the check that the real mma, ldmatrix and cp.async do what the emulation says.
// Exits 1 if it fails (the timings still print), 77 where there is no GPU.
//
//   piper-bench-attention-gpu [reps] [B T H D]      (default 20; 16 1024 12 64)
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#include <cuda_runtime.h>

#include "kernels/cuda.h"
#include "kernels/cuda_fa2.h"
#include "kernels/cuda_flash.cuh" /* flash_bf16 */
#include "piper/runtime.h"

// The launchers' tensor arguments (kernels/cuda.h): fp32, or bf16 bits
static prt_fp_in in32(const float *p) { return prt_fp_in{p, 0}; }
static prt_fp_out out32(float *p) { return prt_fp_out{p, 0}; }
static prt_fp_in in16(const uint16_t *p) { return prt_fp_in{p, 1}; }
static prt_fp_out out16(uint16_t *p) { return prt_fp_out{p, 1}; }

#define CK(call)                                                                             \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

static unsigned long long rng = 0x2545f4914f6cdd1dull;
static float uni() { /* in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}
static float bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

template <class X> static X *dev(size_t n) {
  X *p;
  CK(cudaMalloc(&p, n * sizeof(X)));
  return p;
}
template <class X> static X *up(const std::vector<X> &h) {
  X *p = dev<X>(h.size());
  CK(cudaMemcpy(p, h.data(), h.size() * sizeof(X), cudaMemcpyHostToDevice));
  return p;
}
template <class X> static std::vector<X> down(const X *d, size_t n) {
  std::vector<X> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(X), cudaMemcpyDeviceToHost));
  return h;
}

// max |got - want| / max |want| over `cols` of each row (stride `stride`)
static double diff(const std::vector<float> &got, const std::vector<float> &want, int64_t rows,
                   int64_t cols, int64_t stride, int64_t off) {
  double worst = 0, ref = 0;
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) ref = fmax(ref, fabs(want[off + r * stride + c]));
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      double d = fabs(got[off + r * stride + c] - want[off + r * stride + c]) / (ref > 0 ? ref : 1);
      if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
  return worst;
}

// n values in [-scale, scale) rounded to bf16: bits and values
static void rnd(std::vector<uint16_t> &h, std::vector<float> &f, size_t n, float scale) {
  h.resize(n), f.resize(n);
  for (size_t i = 0; i < n; i++) h[i] = (uint16_t)flash_bf16(scale * uni()), f[i] = bf16_value(h[i]);
}
static std::vector<float> widen(const std::vector<uint16_t> &h) {
  std::vector<float> f(h.size());
  for (size_t i = 0; i < h.size(); i++) f[i] = bf16_value(h[i]);
  return f;
}

// out, lse, dq, dk, dv: v[2] holds the gradients' buffer (q, k, v's layout); dk and dv are
// copies of it from k's and v's start (grouped-query) or the same (packed: report's offsets)
static void split_grads(std::vector<float> v[5], bool packed, size_t ko, size_t vo) {
  v[3] = v[4] = v[2];
  if (!packed) {
    v[3].erase(v[3].begin(), v[3].begin() + ko);
    v[4].erase(v[4].begin(), v[4].begin() + vo);
  }
}

// Prints the five outputs' differences; returns how many are past tol
static int report(const char *variant, double tol, const std::vector<float> *got,
                  const std::vector<float> *want, bool packed, int64_t B, int64_t T, int64_t H,
                  int64_t C, int64_t qs, int64_t ks) {
  int64_t kw = packed ? C : ks, koff = packed ? C : 0, voff = packed ? 2 * C : 0;
  double d[5] = {diff(got[0], want[0], B * T, C, C, 0), diff(got[1], want[1], 1, B * H * T, 0, 0),
                 diff(got[2], want[2], B * T, C, qs, 0), diff(got[3], want[3], B * T, kw, ks, koff),
                 diff(got[4], want[4], B * T, kw, ks, voff)};
  const char *names[5] = {"out", "lse", "dq", "dk", "dv"};
  int bad = 0;
  printf("  %s:", variant);
  for (int i = 0; i < 5; i++) {
    printf(" %s %.3g", names[i], d[i]);
    bad += !(d[i] <= tol);
  }
  printf("%s (tol %.0e)\n", bad ? "  FAIL" : "", tol);
  return bad;
}

// The FlashAttention-2 kernels, bf16 and fp32, on this GPU against the CPU on the same inputs
// (bf16 values): packed qkv (KV = 0) or grouped query. Returns the number of outputs past
// their tolerance (1e-2 bf16, 1e-5 fp32).
static int check(int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  bool packed = KV == 0;
  KV = packed ? H : KV;
  int64_t C = H * D, qs = packed ? 3 * C : C, ks = packed ? 3 * C : KV * D, os = C;
  // packed: q, k, v at 0, C, 2C of one buffer; grouped-query: at 0, nq, nq + nk
  size_t nq = (size_t)(B * T * qs), nk = packed ? 0 : (size_t)(B * T * ks), no = (size_t)(B * T * os);
  size_t n = nq + 2 * nk, ko = packed ? C : nq, vo = packed ? 2 * C : nq + nk, rows = (size_t)(B * H * T);
  printf("check %s B%lld T%lld H%lld KV%lld D%lld\n", packed ? "packed" : "gqa", (long long)B,
         (long long)T, (long long)H, (long long)KV, (long long)D);
  std::vector<uint16_t> hx, hdo;
  std::vector<float> fx, fdo;
  rnd(hx, fx, n, 2.0f), rnd(hdo, fdo, no, 1.0f);
  std::vector<float> want[5] = {std::vector<float>(no), std::vector<float>(rows),
                                std::vector<float>(n), {}, {}};
  float *wd = want[2].data();
  if (packed) {
    prt_attention_fwd(want[0].data(), want[1].data(), fx.data(), B, T, C, H);
    prt_attention_bwd(wd, fdo.data(), fx.data(), want[0].data(), want[1].data(), B, T, C, H);
  } else {
    prt_gqa_attention_fwd(want[0].data(), want[1].data(), fx.data(), fx.data() + ko,
                          fx.data() + vo, B, T, H, KV, D);
    prt_gqa_attention_bwd(wd, wd + ko, wd + vo, fdo.data(), fx.data(), fx.data() + ko,
                          fx.data() + vo, want[0].data(), want[1].data(), B, T, H, KV, D);
  }
  split_grads(want, packed, ko, vo);
  float *lse = dev<float>(rows);
  int bad = 0;
  { // bf16
    uint16_t *x = up(hx), *dout = up(hdo), *out = dev<uint16_t>(no), *d = dev<uint16_t>(n);
    float *scratch = (float *)dev<char>(prt_cuda_fa2_bwd_scratch_bytes(B, T, H, D));
    CK(prt_cuda_fa2_fwd(out, lse, x, x + ko, x + vo, B, T, H, KV, D, qs, ks, os, 0));
    CK(prt_cuda_fa2_bwd(d, d + ko, d + vo, dout, out, lse, x, x + ko, x + vo, scratch, B, T, H,
                        KV, D, qs, ks, os, 0));
    CK(cudaDeviceSynchronize());
    std::vector<float> got[5] = {widen(down(out, no)), down(lse, rows), widen(down(d, n)), {}, {}};
    split_grads(got, packed, ko, vo);
    bad += report("bf16", 1e-2, got, want, packed, B, T, H, C, qs, ks);
    CK(cudaFree(x));
    CK(cudaFree(dout));
    CK(cudaFree(out));
    CK(cudaFree(d));
    CK(cudaFree(scratch));
  }
  { // fp32
    float *x = up(fx), *dout = up(fdo), *out = dev<float>(no), *d = dev<float>(n);
    float *scratch = (float *)dev<char>(prt_cuda_fa2_bwd_f32_scratch_bytes(B, T, H));
    CK(prt_cuda_fa2_fwd_f32(out, lse, x, x + ko, x + vo, B, T, H, KV, D, qs, ks, os, 0));
    CK(prt_cuda_fa2_bwd_f32(d, d + ko, d + vo, dout, out, lse, x, x + ko, x + vo, scratch, B, T,
                            H, KV, D, qs, ks, os, 0));
    CK(cudaDeviceSynchronize());
    std::vector<float> got[5] = {down(out, no), down(lse, rows), down(d, n), {}, {}};
    split_grads(got, packed, ko, vo);
    bad += report("fp32", 1e-5, got, want, packed, B, T, H, C, qs, ks);
    CK(cudaFree(x));
    CK(cudaFree(dout));
    CK(cudaFree(out));
    CK(cudaFree(d));
    CK(cudaFree(scratch));
  }
  CK(cudaFree(lse));
  return bad;
}

// The median milliseconds of `reps` runs of f (after two warm-up runs)
template <class F> static double time_ms(int reps, F f) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  f(), f();
  std::vector<double> ms;
  for (int r = 0; r < reps; r++) {
    CK(cudaEventRecord(a));
    f();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float t;
    CK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

static void row(const char *name, double fwd_ms, double bwd_ms, double flops) {
  printf("| %s | %.3f | %.3f | %.1f | %.1f | %.1f |\n", name, fwd_ms, bwd_ms,
         flops / fwd_ms * 1e-9, 2.5 * flops / bwd_ms * 1e-9, 3.5 * flops / (fwd_ms + bwd_ms) * 1e-9);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 20;
  int64_t B = 16, T = 1024, H = 12, D = 64;
  if (argc == 6) B = atol(argv[2]), T = atol(argv[3]), H = atol(argv[4]), D = atol(argv[5]);
  if (reps < 1 || (argc != 1 && argc != 2 && argc != 6) || B < 1 || T < 1 || H < 1 ||
      (D != 64 && D != 128)) {
    fprintf(stderr, "usage: piper-bench-attention-gpu [reps >= 1] [B T H D (64 or 128)]\n");
    return 2;
  }
  int ngpu = 0;
  if (cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu == 0) {
    printf("skipped: no GPU\n");
    return 77;
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s\n", prop.name);
  int bad = (check(2, 200, 4, 0, 64) > 0) + (check(1, 130, 4, 2, 128) > 0); /* shapes failed */

  // the bench shape: GPT's packed qkv (B, T, 3C)
  int64_t C = H * D;
  size_t n3 = (size_t)(B * T * 3 * C), n = (size_t)(B * T * C), rows = (size_t)(B * H * T);
  std::vector<uint16_t> hqkv, hdo;
  std::vector<float> fqkv, fdo;
  rnd(hqkv, fqkv, n3, 2.0f), rnd(hdo, fdo, n, 1.0f);
  uint16_t *qkv = up(hqkv), *dout = up(hdo), *out = dev<uint16_t>(n), *dqkv = dev<uint16_t>(n3);
  float *lse = dev<float>(rows);
  float *scratch = (float *)dev<char>(prt_cuda_fa2_bwd_scratch_bytes(B, T, H, D));
  double flops = 2.0 * B * H * (double)T * T * D;
  double f2 = time_ms(reps, [&] {
    CK(prt_cuda_fa2_fwd(out, lse, qkv, qkv + C, qkv + 2 * C, B, T, H, H, D, 3 * C, 3 * C, C, 0));
  });
  double b2 = time_ms(reps, [&] {
    CK(prt_cuda_fa2_bwd(dqkv, dqkv + C, dqkv + 2 * C, dout, out, lse, qkv, qkv + C, qkv + 2 * C,
                        scratch, B, T, H, H, D, 3 * C, 3 * C, C, 0));
  });
  printf("\nB%lld T%lld H%lld D%lld causal; TFLOP/s of forward 2 B H T^2 D, backward 2.5x\n\n",
         (long long)B, (long long)T, (long long)H, (long long)D);
  printf("| kernel | fwd ms | bwd ms | fwd TFLOP/s | bwd TFLOP/s | fwd+bwd TFLOP/s |\n");
  printf("|---|---|---|---|---|---|\n");
  row("fa2 (cuda_fa2.cu, bf16 I/O)", f2, b2, flops);
  double tc_total = 0;

  // today's tensor-core kernels as a bf16 plan runs them (bf16 I/O, each operand staged by
  // the launch; head sizes up to 64)
  if (D <= PRT_CUDA_FLASH_MAX_HEAD) {
    uint16_t *to = dev<uint16_t>(n), *tdq = dev<uint16_t>(n3);
    float *Dbuf = dev<float>(rows);
    uint16_t *staged = (uint16_t *)dev<char>(prt_cuda_flash_stage_bytes(B, T, H, H));
    double ft = time_ms(reps, [&] {
      CK(prt_cuda_flash_fwd_launch(out16(to), lse, in16(qkv), in16(qkv + C), in16(qkv + 2 * C),
                                   staged, B, T, H, H, D, 3 * C, 3 * C, C, 0));
    });
    double bt = time_ms(reps, [&] {
      CK(prt_cuda_flash_bwd_launch(out16(tdq), out16(tdq + C), out16(tdq + 2 * C), Dbuf,
                                   in16(dout), in16(qkv), in16(qkv + C), in16(qkv + 2 * C), lse,
                                   staged, B, T, H, H, D, 3 * C, 3 * C, C, 0));
    });
    row("tc (cuda_flash.cu, today's, bf16 I/O)", ft, bt, flops);
    tc_total = ft + bt;
  }
  // fp32: the FlashAttention-2 tiling in fp32 FMAs against today's scalar kernels (a warp a
  // row; slow: a quarter of the repetitions)
  {
    float *fq = up(fqkv), *fd = up(fdo), *fo = dev<float>(n), *fdq = dev<float>(n3);
    float *flse = dev<float>(rows);
    float *s32 = (float *)dev<char>(prt_cuda_fa2_bwd_f32_scratch_bytes(B, T, H));
    double ff = time_ms(reps, [&] {
      CK(prt_cuda_fa2_fwd_f32(fo, flse, fq, fq + C, fq + 2 * C, B, T, H, H, D, 3 * C, 3 * C, C, 0));
    });
    double bf = time_ms(reps, [&] {
      CK(prt_cuda_fa2_bwd_f32(fdq, fdq + C, fdq + 2 * C, fd, fo, flse, fq, fq + C, fq + 2 * C, s32,
                              B, T, H, H, D, 3 * C, 3 * C, C, 0));
    });
    row("fa2 fp32 (cuda_fa2.cu, fp32 FMA)", ff, bf, flops);
    int sreps = reps / 4 > 3 ? reps / 4 : 3;
    double fs = time_ms(sreps, [&] {
      CK(prt_cuda_attention_fwd_launch(out32(fo), flse, in32(fq), B, T, C, H, 0));
    });
    double bs = time_ms(sreps, [&] {
      CK(prt_cuda_attention_bwd_launch(out32(fdq), in32(fd), in32(fq), flse, s32, B, T, C, H,
                                       0));
    });
    row("scalar fp32 (cuda_attention.cu, today's fp32)", fs, bs, flops);
  }
  CK(cudaDeviceSynchronize());
  printf("\nchecks: %d passed, %d failed; fa2 fwd+bwd %.1f TFLOP/s", 2 - bad, bad,
         3.5 * flops / (f2 + b2) * 1e-9);
  if (tc_total > 0) printf(" (today's tensor-core kernels %.1f)", 3.5 * flops / tc_total * 1e-9);
  printf("\n");
  if (bad) printf("FAIL: %d shapes where the FlashAttention-2 kernels are past their tolerance\n", bad);
  return bad ? 1 : 0;
}
