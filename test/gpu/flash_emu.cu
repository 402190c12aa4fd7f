// The tensor-core attention's indexing, checked without a GPU: the warp functions of
// runtime/kernels/cuda_flash.cuh (what kernels/cuda_flash.cu runs) on the host, 32 lanes as
// threads in lock step, with the mma and the shuffle defined from the PTX ISA's fragment
// tables (flash_lanes.h). The lanes' own loads and stores (which lane loads which q, k, v, dO element into which register, and
// where each accumulator element goes) are the kernel's code, so a wrong index shows up as a
// wrong output against the CPU kernels (runtime/kernels/cpu_attention.c: fp32, the oracle
// the CPU path is checked against PyTorch with). Causal; grouped-query (2 and 3 query heads
// a kv head, one kv head for all, KV = H) and GPT's packed qkv; T below, past and not a
// multiple of the 16-row tile; head sizes 8, 16, 40 and 64 (the largest the kernels are built
// for: kernels/cuda_flash.cuh FLASH_HEAD).
// Tolerance: max |got - CPU| / max |CPU| <= 1e-2 per output (q, k, v, dO and the
// probabilities are rounded to bf16 before each product: 8 significant bits); the measured
// differences are printed, and each is above 1e-5, which shows the bf16 path ran.
// What this does not check: the mma and shuffle instructions themselves, and speed.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cuda_flash.cuh"
#include "piper/runtime.h"

#include "flash_lanes.h"

static float *rnd(int64_t n, float scale) {
  float *p = (float *)malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; i++) p[i] = scale * uni();
  return p;
}

// cols values of each of rows rows (stride `stride`) of got and want, within 1e-2 of want's
// max (lanes_emu.h same) and above 1e-5 (the bf16 path ran)
static void close_bf16(const char *what, const float *got, const float *want, int64_t rows,
                       int64_t cols, int64_t stride) {
  float *g = (float *)malloc((size_t)(rows * cols) * 4), *w = (float *)malloc((size_t)(rows * cols) * 4);
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++)
      g[r * cols + c] = got[r * stride + c], w[r * cols + c] = want[r * stride + c];
  if (!(same(what, g, w, rows * cols, 1e-2) > 1e-5)) {
    printf("FAIL: %s matches fp32 (the bf16 path did not run)\n", what);
    failures++;
  }
  free(g);
  free(w);
}

// Grouped-query attention over separate q (B, T, H*D) and k, v (B, T, KV*D) against
// prt_gqa_attention_fwd/bwd; KV = H is plain multi-head attention.
static void check_gqa(int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D) {
  printf("@gqa_B%lld_T%lld_H%lld_KV%lld_D%lld\n", (long long)B, (long long)T, (long long)H,
         (long long)KV, (long long)D);
  int64_t nq = B * T * H * D, nk = B * T * KV * D, rows = B * H * T;
  float *q = rnd(nq, 2), *k = rnd(nk, 2), *v = rnd(nk, 2), *dout = rnd(nq, 1);
  float *out = (float *)calloc(nq, 4), *lse = (float *)calloc(rows, 4);
  float *Dbuf = (float *)calloc(rows, 4), *dq = (float *)calloc(nq, 4);
  float *dk = (float *)calloc(nk, 4), *dv = (float *)calloc(nk, 4);
  Job job = {0, 0, 0, 0, attn_gqa(T, H, KV, D), 1.0f / sqrtf((float)D), {out, 0}, lse,
             {dq, 0}, {dk, 0}, {dv, 0}, Dbuf, {q, 0}, {k, 0}, {v, 0}, {dout, 0}, 0};
  uint16_t *staged = (uint16_t *)malloc(prt_cuda_flash_stage_bytes(B, T, H, KV));
  run_fwd(job, B, staged);
  run_bwd(job, B, staged);
  free(staged);
  float *wout = (float *)calloc(nq, 4), *probs = (float *)calloc(B * H * T * T, 4);
  float *wdq = (float *)calloc(nq, 4), *wdk = (float *)calloc(nk, 4), *wdv = (float *)calloc(nk, 4);
  prt_gqa_attention_fwd(wout, probs, q, k, v, B, T, H, KV, D);
  prt_gqa_attention_bwd(wdq, wdk, wdv, dout, q, k, v, wout, probs, B, T, H, KV, D);
  close_bf16("out", out, wout, 1, nq, nq);
  close_bf16("lse", lse, probs, 1, rows, rows); /* the CPU keeps the (B, H, T) lse there too */
  close_bf16("dq", dq, wdq, 1, nq, nq);
  close_bf16("dk", dk, wdk, 1, nk, nk);
  close_bf16("dv", dv, wdv, 1, nk, nk);
  free(q); free(k); free(v); free(dout); free(out); free(lse); free(Dbuf); free(dq); free(dk);
  free(dv); free(wout); free(probs); free(wdq); free(wdk); free(wdv);
}

// GPT's packed qkv (B, T, 3C): q, k, v at channels 0, C, 2C of each row, against
// prt_attention_fwd/bwd; dq, dk, dv are the thirds of dqkv.
static void check_packed(int64_t B, int64_t T, int64_t C, int64_t H) {
  printf("@packed_B%lld_T%lld_C%lld_H%lld\n", (long long)B, (long long)T, (long long)C,
         (long long)H);
  int64_t n3 = B * T * 3 * C, n = B * T * C, rows = B * H * T;
  float *qkv = rnd(n3, 2), *dout = rnd(n, 1);
  float *out = (float *)calloc(n, 4), *lse = (float *)calloc(rows, 4);
  float *Dbuf = (float *)calloc(rows, 4), *dqkv = (float *)calloc(n3, 4);
  Job job = {0, 0, 0, 0, attn_packed(T, C, H), 1.0f / sqrtf((float)(C / H)), {out, 0}, lse,
             {dqkv, 0}, {dqkv + C, 0}, {dqkv + 2 * C, 0}, Dbuf, {qkv, 0}, {qkv + C, 0},
             {qkv + 2 * C, 0}, {dout, 0}, 0};
  uint16_t *staged = (uint16_t *)malloc(prt_cuda_flash_stage_bytes(B, T, H, H));
  run_fwd(job, B, staged);
  run_bwd(job, B, staged);
  free(staged);
  float *wout = (float *)calloc(n, 4), *probs = (float *)calloc(B * H * T * T, 4);
  float *wd = (float *)calloc(n3, 4);
  prt_attention_fwd(wout, probs, qkv, B, T, C, H);
  prt_attention_bwd(wd, dout, qkv, wout, probs, B, T, C, H);
  close_bf16("out", out, wout, 1, n, n);
  close_bf16("lse", lse, probs, 1, rows, rows);
  close_bf16("dq", dqkv, wd, B * T, C, 3 * C);
  close_bf16("dk", dqkv + C, wd + C, B * T, C, 3 * C);
  close_bf16("dv", dqkv + 2 * C, wd + 2 * C, B * T, C, 3 * C);
  free(qkv); free(dout); free(out); free(lse); free(Dbuf); free(dqkv); free(wout); free(probs);
  free(wd);
}

int main() {
  check_gqa(2, 7, 4, 2, 8);    // T below one tile, 2 query heads a kv head, head size 8
  check_gqa(1, 37, 6, 2, 64);  // 3 tiles, the last partial; 3 query heads a kv head
  check_gqa(1, 20, 3, 3, 40);  // KV = H; a head of 2.5 d-steps
  check_gqa(2, 18, 4, 1, 16);  // one kv head for all
  check_packed(1, 33, 128, 2); // GPT's packed qkv, head size 64 (the largest built)
  printf("%d failed\n", failures);
  return failures;
}
