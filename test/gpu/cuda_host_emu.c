/* The GPU target's host launchers (runtime/kernels/cuda.c) checked without a GPU: this test
 * links kernels/cuda.c against the fake CUDA runtime and cuBLAS of fake_cuda.c (kernels run by
 * the host JIT with the launcher's own argument array, so their order, types and count are
 * what is checked; sgemm by CBLAS) and the attention rows on the host (fake_attention.cc).
 * Each prt_cuda_* function is called as a compiled plan calls it and compared with its CPU
 * twin (runtime/kernels/cpu.c), with gpu_kernels_emu.c's tolerances. Not checked here:
 * everything only a GPU runs. */
#include <cblas.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda.h"
#include "piper/runtime.h"
#include "prt_internal.h"
#include "emu_check.h"

/* The fakes: fake_cuda.c, fake_attention.cc. */
extern int fake_cuda_launches; /* kernels issued: launches, cuBLAS calls, attention launches */
void fake_cuda_destroy(void);

/* The launchers queue their work on the fake GPU's streams, which run it only when the host
 * waits (as a GPU may): every comparison reads the results after a device synchronize. */
void emuBeforeRead(void) {
  if (cudaDeviceSynchronize() != cudaSuccess) {
    fprintf(stderr, "cudaDeviceSynchronize failed\n");
    exit(2);
  }
}

/* ---- the checks ---- */

/* Sizes with ragged edges: rows not a multiple of the 64-row chunks, columns not of 256. */
enum { B = 3, T = 50, C = 20, V = 13, N = B * T };

/* n bf16 patterns of values uniform in [-scale, scale), narrowed from fp32 */
static uint16_t *rndBf16(int64_t n, float scale) {
  uint16_t *h = (uint16_t *)track((float *)malloc((size_t)n * sizeof *h));
  prt_bf16_narrow(h, rnd(n, scale), n);
  return h;
}

/* The linear kernels on bf16 operands (cublasGemmEx, CUDA_R_16BF, fp32 compute; the fake
 * widens and runs CBLAS) against the CPU's (widen, then its fp32 kernel): the same products
 * summed in another order (cuBLAS's column-major transposes), 1e-6 as the fp32 linears. M, K
 * odd and N not a multiple of anything: leading dimensions checked at ragged sizes. */
static void checkLinearBf16(void) {
  enum { M = 37, Nn = 13, K = 21 };
  uint16_t *x = rndBf16(M * K, 1), *w = rndBf16(Nn * K, 1), *dy = rndBf16(M * Nn, 1);
  float *b = rnd(Nn, 1), *g = zeros(M * K + Nn * K), *want = zeros(M * K + Nn * K);
  prt_cuda_linear_fwd_bf16(g, x, w, b, M, Nn, K, 0);
  prt_linear_fwd_bf16(want, x, w, b, M, Nn, K);
  same("linear_fwd_bf16", g, want, M * Nn, 1e-6);
  prt_cuda_linear_fwd_bf16(g, x, w, NULL, M, Nn, K, 0);
  prt_linear_fwd_bf16(want, x, w, NULL, M, Nn, K);
  same("linear_fwd_bf16 no bias", g, want, M * Nn, 1e-6);
  prt_cuda_linear_bwd_input_bf16(g, dy, w, M, Nn, K, 0);
  prt_linear_bwd_input_bf16(want, dy, w, M, Nn, K);
  same("linear_bwd_input_bf16", g, want, M * K, 1e-6);
  prt_cuda_linear_bwd_weight_bf16(g, dy, x, M, Nn, K, 0);
  prt_linear_bwd_weight_bf16(want, dy, x, M, Nn, K);
  same("linear_bwd_weight_bf16", g, want, Nn * K, 1e-6);
  float *db = g + Nn * K, *wantDb = want + Nn * K; /* BGRADB, as checkLinear's (M rows) */
  prt_cuda_linear_bwd_weight_bias_bf16(g, db, dy, x, M, Nn, K, 0);
  prt_linear_bwd_weight_bias_bf16(want, wantDb, dy, x, M, Nn, K);
  same("linear_bwd_weight_bias_bf16 dw", g, want, Nn * K, 1e-6);
  same("linear_bwd_weight_bias_bf16 db", db, wantDb, Nn, (double)(M - 1) * M / 16777216.0);
  /* and the CPU twin is the fp32 kernel on the widened values (the emulation's numbers) */
  float *xf = zeros(M * K), *wf = zeros(Nn * K);
  prt_bf16_widen(xf, x, M * K);
  prt_bf16_widen(wf, w, Nn * K);
  prt_linear_fwd(g, xf, wf, b, M, Nn, K);
  prt_linear_fwd_bf16(want, x, w, b, M, Nn, K);
  same("linear_fwd_bf16 CPU = widen + linear_fwd", g, want, M * Nn, 0);
}

/* What emuStep runs: two tensors (n of 5000 and 3: more than one chunk of the tables, and a
 * tensor without decay), their gradients noted for the norm (and one slice not counted). */
static struct {
  int64_t n;
  float *p, *g, *m, *v, *q, *gq, *mq, *vq;
} E;
static void emuStep(prt_ctx *ctx) {
  prt_cuda_grad_sq_accum(ctx, E.g, E.n, 1, 0);
  prt_cuda_grad_sq_accum(ctx, E.g, E.n, 0, 0); /* not counted */
  prt_cuda_grad_sq_accum(ctx, E.gq, 3, 1, 0);
  prt_cuda_grad_norm_sync(ctx, 0);
  prt_cuda_adamw(ctx, E.p, E.g, E.m, E.v, NULL, E.n, 0.9f, 0.95f, 1e-8f, 1, 0);
  prt_cuda_adamw(ctx, E.q, E.gq, E.mq, E.vq, NULL, 3, 0.9f, 0.95f, 1e-8f, 0, 0);
}

/* The optimizer and the norm as a plan of one rank runs them: through the step runner
 * (kernels/cuda.c run_step), twice, with another lr and step count the second time. The first
 * pass runs kernel by kernel, the second is captured as a CUDA graph and replayed (the fake
 * records and replays it), so the second also checks that the replay uses that step's
 * scalars. Each pass: the norm (read after the step) and the clip scale the device applied,
 * against the CPU's prt_grad_norm_sync and prt_adamw on copies, 1e-6 (gpu_kernels_emu.c's). */
static void checkAdamwAndNorm(prt_ctx *ctx) {
  begin("adamw_and_norm");
  int64_t n = E.n = 5000;
  E.p = rnd(n, 1), E.g = rnd(n, 1), E.m = rnd(n, 0.1f), E.v = zeros(n);
  /* the small tensor's values are fixed, not drawn: the checks after this one see the
   * random stream they were written against (the MoE bf16 twins sit near rounding ties) */
  E.q = zeros(3), E.gq = zeros(3), E.mq = zeros(3), E.vq = zeros(3);
  for (int i = 0; i < 3; i++)
    E.q[i] = 0.5f - 0.25f * i, E.gq[i] = 0.75f - 0.5f * i, E.mq[i] = 0.01f * i,
    E.vq[i] = 0.001f * (i + 1);
  float *p2 = zeros(n), *m2 = zeros(n), *v2 = zeros(n), q2[3], mq2[3], vq2[3];
  for (int64_t i = 0; i < n; i++) E.v[i] = fabsf(uni()) * 0.01f;
  memcpy(p2, E.p, n * 4);
  memcpy(m2, E.m, n * 4);
  memcpy(v2, E.v, n * 4);
  memcpy(q2, E.q, sizeof q2);
  memcpy(mq2, E.mq, sizeof mq2);
  memcpy(vq2, E.vq, sizeof vq2);
  double want = 0;
  for (int64_t i = 0; i < n; i++) want += (double)E.g[i] * E.g[i];
  for (int64_t i = 0; i < 3; i++) want += (double)E.gq[i] * E.gq[i];
  ctx->weight_decay = 0.1;
  ctx->grad_clip = 1.0; /* below the norm: clipped */
  for (int pass = 0; pass < 2; pass++) {
    ctx->lr = pass ? 1e-3 : 3e-3;
    ctx->adam_t = pass + 1;
    prt_backend_run_step(ctx, emuStep);
    float gn = (float)ctx->grad_norm, wn = (float)sqrt(want);
    same(pass ? "grad_norm (graph)" : "grad_norm", &gn, &wn, 1, 1e-7);
    ctx->grad_sq = want;
    prt_grad_norm_sync(ctx); /* the CPU's clip scale, which prt_adamw applies */
    if (!(ctx->clip_scale < 1.0f)) fail("adamw_and_norm: the clip case was not exercised");
    prt_adamw(ctx, p2, E.g, m2, v2, NULL, n, 0.9f, 0.95f, 1e-8f, 1);
    prt_adamw(ctx, q2, E.gq, mq2, vq2, NULL, 3, 0.9f, 0.95f, 1e-8f, 0);
    same(pass ? "adamw p (graph)" : "adamw p", E.p, p2, n, 1e-6);
    same(pass ? "adamw m (graph)" : "adamw m", E.m, m2, n, 1e-6);
    same(pass ? "adamw v (graph)" : "adamw v", E.v, v2, n, 1e-6);
    same(pass ? "adamw no decay (graph)" : "adamw no decay", E.q, q2, 3, 1e-6);
  }
  end();
}

/* The bf16 policy's launchers (kernels.def bf16_*, moe_expert_*_bf16): the conversions bit for
 * bit with the CPU's on bf16Patterns (more than one block of threads); the expert twins
 * against the CPU's twins at the fp32 experts' tolerances (the rounded intermediates are the
 * same bits unless an fp32 sum of another order lands across a bf16 rounding boundary, which
 * these sizes do not show; the fp32 experts are checked at 2e-6 above), and the CPU's fp32
 * experts differ from those twins by far more (the check that the twins round at all). */
static void checkBf16(const int32_t *cnt, const float *rows, const float *hid,
                      const float *dout, float *const *wg, float *const *wu,
                      float *const *wd, int64_t G, int64_t cap, int64_t El, int64_t Fe) {
  enum { NP = 3000 };
  float *x = bf16Patterns(NP), *g = zeros(NP), *w = zeros(NP);
  uint16_t gh[NP], wh[NP];
  prt_cuda_bf16_narrow(gh, x, NP, 0);
  prt_bf16_narrow(wh, x, NP);
  sameBits("bf16_narrow", gh, wh, NP, sizeof *gh);
  prt_cuda_bf16_widen(g, wh, NP, 0);
  prt_bf16_widen(w, wh, NP);
  sameBits("bf16_widen", g, w, NP, sizeof *g);
  prt_cuda_bf16_round(g, x, NP, 0);
  prt_bf16_round(w, x, NP);
  sameBits("bf16_round", g, w, NP, sizeof *g);
  int64_t R = G * cap;
  float *go = zeros(R * C), *gd = zeros(R * 2 * Fe), *wo = zeros(R * C), *wdh = zeros(R * 2 * Fe);
  float *fo = zeros(R * C), *fh = zeros(R * 2 * Fe);
  for (int64_t j = 0; j < El; j++) {
    prt_cuda_moe_expert_fwd_bf16(go, gd, rows, cnt, G, cap, El, j, wg[j], wu[j], wd[j], C, Fe, 0);
    prt_moe_expert_fwd_bf16(wo, wdh, rows, cnt, G, cap, El, j, wg[j], wu[j], wd[j], C, Fe);
    prt_moe_expert_fwd(fo, fh, rows, cnt, G, cap, El, j, wg[j], wu[j], wd[j], C, Fe);
  }
  same("moe_expert_fwd_bf16 hidden", gd, wdh, R * 2 * Fe, 1e-6);
  same("moe_expert_fwd_bf16 out", go, wo, R * C, 2e-6);
  double off = 0; /* the negative control, outside same(): it must differ */
  for (int64_t i = 0; i < R * C; i++)
    off = fmax(off, fabs((double)fo[i] - wo[i]) / fmax(1.0, fabs((double)wo[i])));
  printf("moe_expert_fwd fp32 against the bf16 twin: max rel diff %.3g\n", off);
  if (!(off > 1e-4)) fail("the bf16 twin gives the fp32 experts' output (%.3g)", off);
  float *gdr = zeros(R * C), *wdr = zeros(R * C);
  for (int64_t j = 0; j < El; j++) {
    prt_cuda_moe_expert_bwd_input_bf16(gdr, dout, cnt, hid, G, cap, El, j, wg[j], wu[j], wd[j],
                                       C, Fe, 0);
    prt_moe_expert_bwd_input_bf16(wdr, dout, cnt, hid, G, cap, El, j, wg[j], wu[j], wd[j], C,
                                  Fe);
  }
  same("moe_expert_bwd_input_bf16", gdr, wdr, R * C, 2e-6);
  float *gw[3], *ww[3];
  for (int k = 0; k < 3; k++) gw[k] = rnd(Fe * C, 1), ww[k] = zeros(Fe * C);
  prt_cuda_moe_expert_bwd_weight_bf16(gw[0], gw[1], gw[2], dout, rows, cnt, hid, G, cap, El, 0,
                                      wd[0], C, Fe, 0);
  prt_moe_expert_bwd_weight_bf16(ww[0], ww[1], ww[2], dout, rows, cnt, hid, G, cap, El, 0,
                                 wd[0], C, Fe);
  same("moe_expert_bwd_weight_bf16 dwg", gw[0], ww[0], Fe * C, 2e-6);
  same("moe_expert_bwd_weight_bf16 dwu", gw[1], ww[1], Fe * C, 2e-6);
  same("moe_expert_bwd_weight_bf16 dwd", gw[2], ww[2], C * Fe, 2e-6);
  checkLinearBf16();
}

/* prt_cuda_setup made the (fake) GPU the device of the process's backend record and resolved
 * the collectives (one rank, no --comm: MPI's engine). */
static void checkSetup(prt_ctx *ctx) {
  begin("setup");
  const prt_device *gpu = ctx->backend->device;
  if (ctx->backend != prt_backend_current() || gpu->host_visible || strcmp(gpu->name, "cuda:0"))
    fail("prt_cuda_setup did not make the (fake) GPU the device of the process's backend "
         "record (the context's is '%s')", gpu->name);
  if (!ctx->comm_resolved || prt_backend_current()->collectives != PRT_COMM_MPI)
    fail("one rank without --comm: the collectives should be resolved to MPI's engine");
  end();
}

/* The elementwise launchers (generated PRT_KERNEL_1D and copy) against the CPU's. */
static void checkElementwise(void) {
  begin("elementwise");
  int64_t n = N * C;
  float *a = rnd(n, 3), *b = rnd(n, 3), *g = zeros(n), *w = zeros(n), *dy = rnd(n, 1);
  prt_cuda_add(g, a, b, n, 0);
  prt_add(w, a, b, n);
  same("add", g, w, n, 0);
  prt_cuda_copy(g, a, n, 0);
  same("copy", g, a, n, 0);
  prt_cuda_gelu_fwd(g, a, n, 0);
  prt_gelu_fwd(w, a, n);
  same("gelu_fwd", g, w, n, 1e-6);
  prt_cuda_gelu_bwd(g, dy, a, n, 0);
  prt_gelu_bwd(w, dy, a, n);
  same("gelu_bwd", g, w, n, 1e-6);
  end();
}

/* The GPT embedding, forward and backward (dwte by chunk slabs, dwpe). */
static void checkEmbedding(void) {
  begin("embedding");
  int32_t tok[N];
  for (int i = 0; i < N; i++) tok[i] = (i * 7 + 3) % V;
  float *wte = rnd(V * C, 1), *wpe = rnd(T * C, 1), *g = zeros(N * C), *w = zeros(N * C);
  prt_cuda_embedding_fwd(g, tok, wte, wpe, B, T, C, 0);
  prt_embedding_fwd(w, tok, wte, wpe, B, T, C);
  same("embedding_fwd", g, w, N * C, 0);
  float *dy = rnd(N * C, 1), *gte = rnd(V * C, 9), *gpe = rnd(T * C, 9);
  float *wte2 = zeros(V * C), *wpe2 = zeros(T * C);
  prt_cuda_embedding_bwd(gte, gpe, dy, tok, B, T, C, V, 0);
  prt_embedding_bwd(wte2, wpe2, dy, tok, B, T, C, V);
  same("embedding_bwd dwte", gte, wte2, V * C, 1e-6);
  same("embedding_bwd dwpe", gpe, wpe2, T * C, 0);
  end();
}

/* LayerNorm (a warp a row, kernels/cuda_norms.cu, through the fake's one lane) and the
 * column sums of its dw, db and of the bias gradient. */
static void checkLayernorm(void) {
  begin("layernorm");
  float *x = rnd(N * C, 2), *lw = rnd(C, 1), *lb = rnd(C, 1), *dy = rnd(N * C, 1);
  float *g = zeros(N * C), *w = zeros(N * C), *gm = zeros(N), *gr = zeros(N), *wm = zeros(N);
  float *wr = zeros(N), *gdw = zeros(C), *gdb = zeros(C), *wdw = zeros(C), *wdb = zeros(C);
  prt_cuda_layernorm_fwd(g, gm, gr, x, lw, lb, N, C, 1e-5f, 0);
  prt_layernorm_fwd(w, wm, wr, x, lw, lb, N, C, 1e-5f);
  same("layernorm_fwd y", g, w, N * C, 0);
  same("layernorm_fwd rstd", gr, wr, N, 0);
  prt_cuda_layernorm_bwd(g, gdw, gdb, dy, x, lw, wm, wr, N, C, 0);
  prt_layernorm_bwd(w, wdw, wdb, dy, x, lw, wm, wr, N, C);
  same("layernorm_bwd dx", g, w, N * C, 0);
  same("layernorm_bwd dw", gdw, wdw, C, 1e-7);
  same("layernorm_bwd db", gdb, wdb, C, 1e-7);
  prt_cuda_bias_bwd(gdb, dy, N, C, 0);
  prt_bias_bwd(wdb, dy, N, C);
  same("bias_bwd", gdb, wdb, C, 1e-7);
  end();
}

/* The linears: cuBLASLt with the bias epilogue, sgemm without a bias, both gradients. */
static void checkLinear(void) {
  begin("linear");
  enum { K = 7, Nn = 11 };
  float *x = rnd(N * K, 1), *w = rnd(Nn * K, 1), *b = rnd(Nn, 1), *dy = rnd(N * Nn, 1);
  float *g = zeros(N * Nn), *want = zeros(N * Nn), *gx = zeros(N * K), *wx = zeros(N * K);
  float *gw = zeros(Nn * K), *ww = zeros(Nn * K);
  prt_cuda_linear_fwd(g, x, w, b, N, Nn, K, 0);
  prt_linear_fwd(want, x, w, b, N, Nn, K);
  same("linear_fwd bias", g, want, N * Nn, 1e-6);
  prt_cuda_linear_fwd(g, x, w, NULL, N, Nn, K, 0);
  prt_linear_fwd(want, x, w, NULL, N, Nn, K);
  same("linear_fwd", g, want, N * Nn, 1e-6);
  prt_cuda_linear_bwd_input(gx, dy, w, N, Nn, K, 0);
  prt_linear_bwd_input(wx, dy, w, N, Nn, K);
  same("linear_bwd_input", gx, wx, N * K, 1e-6);
  prt_cuda_linear_bwd_weight(gw, dy, x, N, Nn, K, 0);
  prt_linear_bwd_weight(ww, dy, x, N, Nn, K);
  same("linear_bwd_weight", gw, ww, Nn * K, 1e-6);
  /* the weight gradient with the bias gradient in its epilogue (cuBLASLt BGRADB: dy's column
   * sums in fp32, the CPU's in f64): N values in [-1, 1] summed in fp32 err by at most
   * (N - 1) 2^-24 N = 1.3e-3; the fake's BGRADB one row short (FAKE_CUDA_EPILOGUE_BUG=bgradb)
   * misses a value of up to 1 */
  float *gb = g, *wb = want; /* the forward's, done with (the test's arrays are bounded) */
  double sumBound = (double)(N - 1) * N / 16777216.0;
  prt_cuda_linear_bwd_weight_bias(gw, gb, dy, x, N, Nn, K, 0);
  prt_linear_bwd_weight_bias(ww, wb, dy, x, N, Nn, K);
  same("linear_bwd_weight_bias dw", gw, ww, Nn * K, 1e-6);
  same("linear_bwd_weight_bias db", gb, wb, Nn, sumBound);
  end();
}

/* The loss: per-row softmax cross-entropy and its mean, and the logits' gradient. */
static void checkCrossEntropy(void) {
  begin("cross_entropy");
  float *logits = rnd(N * V, 8), *gp = zeros(N * V), *wp = zeros(N * V), gl = 0, wl = 0;
  int32_t tgt[N];
  for (int i = 0; i < N; i++) tgt[i] = (i * 5 + 1) % V;
  float *gd = zeros(N * V), *wd = zeros(N * V);
  for (int s = 0; s < 2; s++) { /* label smoothing 0 and 0.1 */
    float e = s ? 0.1f : 0.0f;
    prt_cuda_cross_entropy_fwd(&gl, gp, logits, tgt, N, V, e, 0);
    prt_cross_entropy_fwd(&wl, wp, logits, tgt, N, V, e);
    same("cross_entropy_fwd probs", gp, wp, N * V, 2e-6);
    same("cross_entropy_fwd loss", &gl, &wl, 1, 1e-6);
    prt_cuda_cross_entropy_bwd(gd, wp, tgt, N, V, 2 * N, e, 0);
    prt_cross_entropy_bwd(wd, wp, tgt, N, V, 2 * N, e);
    same("cross_entropy_bwd", gd, wd, N * V, 0);
  }
  end();
}

/* The fused attention's launchers (fake_attention.cc: the kernels' row functions). */
static void checkAttention(void) {
  begin("attention");
  enum { H = 4, Ca = 32 }; /* head size 8 */
  float *qkv = rnd(B * T * 3 * Ca, 2), *dy = rnd(B * T * Ca, 1);
  float *g = zeros(B * T * Ca), *w = zeros(B * T * Ca);
  float *probs = zeros(B * H * T * T), *lse = zeros(B * H * T * T);
  float *gd = zeros(B * T * 3 * Ca), *wd = zeros(B * T * 3 * Ca);
  prt_cuda_attention_fwd(g, lse, qkv, B, T, Ca, H, 0);
  prt_attention_fwd(w, probs, qkv, B, T, Ca, H);
  same("attention_fwd", g, w, B * T * Ca, 1e-6);
  prt_cuda_attention_bwd(gd, dy, qkv, g, lse, B, T, Ca, H, 0);
  prt_attention_bwd(wd, dy, qkv, w, probs, B, T, Ca, H);
  same("attention_bwd", gd, wd, B * T * 3 * Ca, 1e-6);
  end();
}

/* The MoE launchers as a plan calls them, then the bf16 twins on the same data (checkBf16). */
static void checkMoe(void) {
  begin("moe");
  int launches0 = fake_cuda_launches;
  /* N tokens, 4 experts in 2 groups, top 2; the expert launchers for both local experts,
   * as the plan calls them (the last one zeroes each block's unused rows) */
  enum { E = 4, K = 2, G = 2, El = E / G, Fe = 6, NK = N * K, CAP = N * K, R = G * CAP };
  float *logits = rnd(N * E, 2), *gw = zeros(NK), *ww = zeros(NK);
  int32_t *gex = calloc(NK, sizeof *gex), *wex = calloc(NK, sizeof *wex);
  prt_cuda_moe_topk_fwd(gw, gex, logits, N, E, K, 0);
  prt_moe_topk_fwd(ww, wex, logits, N, E, K);
  emuBeforeRead();
  if (memcmp(gex, wex, NK * sizeof *gex)) fail("moe_topk_fwd chose other experts");
  same("moe_topk_fwd", gw, ww, NK, 2e-6);
  float *dw = rnd(NK, 1), *gdl = zeros(N * E), *wdl = zeros(N * E);
  prt_cuda_moe_topk_bwd(gdl, dw, ww, wex, N, E, K, 0);
  prt_moe_topk_bwd(wdl, dw, ww, wex, N, E, K);
  same("moe_topk_bwd", gdl, wdl, N * E, 0);
  float *h = rnd(N * C, 1), *grows = rnd(R * C, 1), *wrows = zeros(R * C);
  int32_t gcnt[E], wcnt[E];
  prt_cuda_moe_dispatch_fwd(grows, gcnt, h, wex, N, K, C, E, G, 0);
  prt_moe_dispatch_fwd(wrows, wcnt, h, wex, N, K, C, E, G);
  same("moe_dispatch_fwd", grows, wrows, R * C, 0); /* (after a synchronize) */
  if (memcmp(gcnt, wcnt, sizeof gcnt)) fail("moe_dispatch_fwd counted otherwise");
  float *wg[El], *wu[El], *wd[El];
  for (int j = 0; j < El; j++) wg[j] = rnd(Fe * C, 1), wu[j] = rnd(Fe * C, 1), wd[j] = rnd(C * Fe, 1);
  float *go = rnd(R * C, 1), *gh = rnd(R * 2 * Fe, 1), *wo = zeros(R * C), *wh = zeros(R * 2 * Fe);
  for (int j = 0; j < El; j++) {
    prt_cuda_moe_expert_fwd(go, gh, wrows, wcnt, G, CAP, El, j, wg[j], wu[j], wd[j], C, Fe, 0);
    prt_moe_expert_fwd(wo, wh, wrows, wcnt, G, CAP, El, j, wg[j], wu[j], wd[j], C, Fe);
  }
  same("moe_expert_fwd hidden", gh, wh, R * 2 * Fe, 1e-6);
  same("moe_expert_fwd out", go, wo, R * C, 2e-6);
  float *dout = rnd(R * C, 1), *gdr = rnd(R * C, 1), *wdr = zeros(R * C);
  for (int j = 0; j < El; j++) {
    prt_cuda_moe_expert_bwd_input(gdr, dout, wcnt, wh, G, CAP, El, j, wg[j], wu[j], wd[j], C,
                                  Fe, 0);
    prt_moe_expert_bwd_input(wdr, dout, wcnt, wh, G, CAP, El, j, wg[j], wu[j], wd[j], C, Fe);
  }
  same("moe_expert_bwd_input", gdr, wdr, R * C, 2e-6);
  float *gwg = rnd(Fe * C, 1), *gwu = rnd(Fe * C, 1), *gwd = rnd(C * Fe, 1);
  float *wwg = zeros(Fe * C), *wwu = zeros(Fe * C), *wwd = zeros(C * Fe);
  prt_cuda_moe_expert_bwd_weight(gwg, gwu, gwd, dout, wrows, wcnt, wh, G, CAP, El, 0, wd[0],
                                 C, Fe, 0);
  prt_moe_expert_bwd_weight(wwg, wwu, wwd, dout, wrows, wcnt, wh, G, CAP, El, 0, wd[0], C, Fe);
  same("moe_expert_bwd_weight dwg", gwg, wwg, Fe * C, 2e-6);
  same("moe_expert_bwd_weight dwu", gwu, wwu, Fe * C, 2e-6);
  same("moe_expert_bwd_weight dwd", gwd, wwd, C * Fe, 2e-6);
  float *gdh = zeros(N * C), *wdh = zeros(N * C);
  prt_cuda_moe_dispatch_bwd(gdh, wdr, wex, N, K, C, E, G, 0);
  prt_moe_dispatch_bwd(wdh, wdr, wex, N, K, C, E, G);
  same("moe_dispatch_bwd", gdh, wdh, N * C, 0);
  float *gy = zeros(N * C), *wy = zeros(N * C);
  prt_cuda_moe_combine_fwd(gy, wo, ww, wex, N, K, C, E, G, 0);
  prt_moe_combine_fwd(wy, wo, ww, wex, N, K, C, E, G);
  same("moe_combine_fwd", gy, wy, N * C, 1e-6);
  float *dy = rnd(N * C, 1), *gdo = rnd(R * C, 1), *wdo = zeros(R * C);
  float *gdw = zeros(NK), *wdw = zeros(NK);
  prt_cuda_moe_combine_bwd(gdo, gdw, dy, wo, ww, wex, N, K, C, E, G, 0);
  prt_moe_combine_bwd(wdo, wdw, dy, wo, ww, wex, N, K, C, E, G);
  same("moe_combine_bwd dout", gdo, wdo, R * C, 0);
  same("moe_combine_bwd dweights", gdw, wdw, NK, 1e-6);
  free(gex);
  free(wex);
  printf("%d kernel launches\n", fake_cuda_launches - launches0);
  end();
  begin("bf16");
  checkBf16(wcnt, wrows, wh, dout, wg, wu, wd, G, CAP, El, Fe);
  end();
}

int main(void) {
  emuSetup(0x2545f4914f6cdd1dull, "prt_cuda", "CPU");
  prt_ctx *ctx = prt_ctx_create();
  prt_cuda_setup(ctx);
  checkSetup(ctx);
  checkElementwise();
  checkEmbedding();
  checkLayernorm();
  checkLinear();
  checkCrossEntropy();
  checkAdamwAndNorm(ctx);
  checkAttention();
  checkMoe();
  prt_ctx_destroy(ctx);
  fake_cuda_destroy();
  emuFreeArrays();
  printf("%d failed\n", failures);
  return failures;
}
