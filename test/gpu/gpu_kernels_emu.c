/* The GPU kernels' arithmetic, checked without a GPU: every gpu.func of lowering/gpu_kernels.c,
 * rewritten for the host and JIT-compiled (kernel_jit.h), runs once per thread index of its
 * grid, and its outputs are compared with the CPU kernel it mirrors (runtime/kernels/cpu.c,
 * the oracle the CPU path is checked against PyTorch with). What this does not check: the
 * PTX lowering itself (ptxas.test assembles it), the host launchers (cuda_host_emu.c) and the
 * launch geometry on a real GPU (the gpu-only tests).
 *
 * Tolerances: the kernels do the CPU's operations in the CPU's order, so most agree to the
 * bit; column sums (bias, LayerNorm dw/db: f64) and the token-embedding gradient (f32) are
 * added by chunks of rows on the GPU, in another association (1e-7, 1e-6); exp is a
 * polynomial on the GPU and libm's expf on the CPU (softmax: 2e-6 relative), and GCC may
 * contract a multiply-add into an FMA in the CPU's AVX2 clones (GELU, AdamW: 1e-6 relative). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "kernels/cuda_gemm.h"
#include "piper/gpu_tables.h"
#include "piper/piper.h"
#include "piper/runtime.h"
#include "prt_internal.h"
#include "emu_check.h"
#include "kernel_jit.h"

static MlirExecutionEngine jit;

static void *fn(const char *name) { return kernelJitFn(jit, name); }

enum { B = 3, T = 5, C = 12, V = 11, N = B * T };

/* A cuBLAS call's arguments run through CBLAS's column-major sgemm (cublasSgemm's contract). */
static void replay(prt_gemm a) {
  if (a.m <= 0 || a.n <= 0) return;
  cblas_sgemm(CblasColMajor, a.transA ? CblasTrans : CblasNoTrans,
              a.transB ? CblasTrans : CblasNoTrans, (int)a.m, (int)a.n, (int)a.k, 1.0f, a.A,
              (int)a.lda, a.B, (int)a.ldb, a.beta, a.C, (int)a.ldc);
}

/* The bf16 conversions (kernels.def bf16_*): each device kernel against its CPU function
 * (runtime/kernels/cpu_bf16.c, checked against torch.Tensor.bfloat16() by
 * test/runtime/bf16.test), bit for bit, NaN, inf, ties and subnormals included
 * (bf16Patterns). round may run in place (the expert twins' use). */
static void checkBf16(void) {
  enum { NP = 200000 };
  float *x = bf16Patterns(NP), *gf = zeros(NP), *wf = zeros(NP), *gr = zeros(NP);
  uint16_t *gh = calloc(NP, sizeof *gh), *wh = calloc(NP, sizeof *wh);
  void (*narrow)(int64_t, uint16_t *, const float *, int64_t, int32_t) = fn("piper_bf16_narrow");
  void (*widen)(int64_t, float *, const uint16_t *, int64_t, int32_t) = fn("piper_bf16_widen");
  void (*round)(int64_t, float *, const float *, int64_t, int32_t) = fn("piper_bf16_round");
  begin("bf16_narrow");
  for (int64_t i = 0; i < NP + 5; i++) narrow(i, gh, x, NP, 0); /* threads past n do nothing */
  prt_bf16_narrow(wh, x, NP);
  sameBits("bf16_narrow", gh, wh, NP, sizeof *gh);
  end();
  begin("bf16_widen");
  uint16_t *all = calloc(65536, sizeof *all); /* every bf16 */
  for (int64_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  for (int64_t i = 0; i < 65536; i++) widen(i, gf, all, 65536, 0);
  prt_bf16_widen(wf, all, 65536);
  sameBits("bf16_widen", gf, wf, 65536, sizeof *gf);
  end();
  begin("bf16_round");
  for (int64_t i = 0; i < NP; i++) round(i, gr, x, NP, 0);
  prt_bf16_round(wf, x, NP);
  sameBits("bf16_round", gr, wf, NP, sizeof *gr);
  memcpy(gr, x, NP * sizeof *gr);
  for (int64_t i = 0; i < NP; i++) round(i, gr, gr, NP, 0);
  sameBits("bf16_round in place", gr, wf, NP, sizeof *gr);
  end();
  free(all);
  free(gh);
  free(wh);
}

/* ---- elementwise: one array of n values each, a and b in [-3, 3) ---- */

typedef struct {
  int64_t n;
  float *a, *b, *dy, *g, *w; /* inputs; the GPU's and the CPU's outputs */
} Elementwise;

static void checkAdd(const Elementwise *e) {
  begin("add");
  void (*add)(int64_t, float *, const float *, const float *, int64_t, int32_t) = fn("piper_add");
  for (int64_t i = 0; i < e->n + 7; i++) add(i, e->g, e->a, e->b, e->n,
                                             0); /* threads past n idle */
  prt_add(e->w, e->a, e->b, e->n);
  same("add", e->g, e->w, e->n, 0);
  end();
}

static void checkCopy(const Elementwise *e) {
  begin("copy");
  void (*copy)(int64_t, float *, const float *, int64_t, int32_t) = fn("piper_copy");
  for (int64_t i = 0; i < e->n; i++) copy(i, e->g, e->a, e->n, 0);
  same("copy", e->g, e->a, e->n, 0);
  end();
}

static void checkGeluFwd(const Elementwise *e) {
  begin("gelu_fwd");
  void (*gf)(int64_t, float *, const float *, int64_t, int32_t) = fn("piper_gelu_fwd");
  for (int64_t i = 0; i < e->n; i++) gf(i, e->g, e->a, e->n, 0);
  prt_gelu_fwd(e->w, e->a, e->n);
  same("gelu_fwd", e->g, e->w, e->n, 1e-6);
  end();
}

static void checkGeluBwd(const Elementwise *e) {
  begin("gelu_bwd");
  void (*gb)(int64_t, float *, const float *, const float *, int64_t,
             int32_t) = fn("piper_gelu_bwd");
  for (int64_t i = 0; i < e->n; i++) gb(i, e->g, e->dy, e->a, e->n, 0);
  prt_gelu_bwd(e->w, e->dy, e->a, e->n);
  same("gelu_bwd", e->g, e->w, e->n, 1e-6);
  end();
}

/* relu: a comparison and a select, bit for bit, with 0, -0, a NaN and the infinities first
 * (checkElementwise puts them in a) */
static void checkReluFwd(const Elementwise *e) {
  begin("relu_fwd");
  void (*rf)(int64_t, float *, const float *, int64_t, int32_t) = fn("piper_relu_fwd");
  for (int64_t i = 0; i < e->n + 3; i++) rf(i, e->g, e->a, e->n, 0); /* threads past n idle */
  prt_relu_fwd(e->w, e->a, e->n);
  sameBits("relu_fwd", e->g, e->w, e->n, sizeof *e->g);
  end();
}

static void checkReluBwd(const Elementwise *e) {
  begin("relu_bwd");
  void (*rb)(int64_t, float *, const float *, const float *, int64_t,
             int32_t) = fn("piper_relu_bwd");
  for (int64_t i = 0; i < e->n; i++) rb(i, e->g, e->dy, e->a, e->n, 0);
  prt_relu_bwd(e->w, e->dy, e->a, e->n);
  sameBits("relu_bwd", e->g, e->w, e->n, sizeof *e->g);
  end();
}

static void checkElementwise(void) {
  int64_t n = N * C;
  Elementwise e = {n, rnd(n, 3.0f), rnd(n, 3.0f), NULL, zeros(n), zeros(n)};
  e.dy = rnd(n, 1);
  checkAdd(&e);
  checkCopy(&e);
  checkGeluFwd(&e);
  checkGeluBwd(&e);
  float special[6] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-30f};
  memcpy(e.a, special, sizeof special);
  checkReluFwd(&e);
  checkReluBwd(&e);
}

/* ---- embeddings: N token ids with repeats (the backward sums them) ---- */

static void tokens(int32_t *tok) {
  for (int i = 0; i < N; i++) tok[i] = (i * 7 + 3) % V;
}

static void checkEmbeddingFwd(const int32_t *tok, const float *wte, const float *wpe) {
  begin("embedding_fwd");
  float *g = zeros(N * C), *w = zeros(N * C);
  void (*ef)(int64_t, float *, const int32_t *, const float *, const float *, int64_t, int64_t,
             int64_t, int32_t) = fn("piper_embedding_fwd");
  for (int64_t i = 0; i < N * C; i++) ef(i, g, tok, wte, wpe, B, T, C, 0);
  prt_embedding_fwd(w, tok, wte, wpe, B, T, C);
  same("embedding_fwd", g, w, N * C, 0);
  end();
}

/* dwte by chunks of 4 token rows (the last one shorter): 4 slabs of V x C, summed in order;
 * the slabs and outputs start as garbage (the kernels overwrite them) */
static void checkEmbeddingBwd(const int32_t *tok) {
  begin("embedding_bwd");
  float *dy = rnd(N * C, 1), *gte = rnd(V * C, 9), *gpe = rnd(T * C, 9);
  float *wte2 = zeros(V * C), *wpe2 = zeros(T * C);
  int64_t Rw = 4, chunks = (N + Rw - 1) / Rw;
  float *slabs = rnd(chunks * V * C, 9);
  void (*bw)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
             int64_t, int32_t) = fn("piper_embedding_wte_partials");
  void (*sl)(int64_t, float *, const float *, int64_t, int64_t, int32_t) = fn("piper_sum_slabs");
  void (*bp)(int64_t, float *, const float *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_embedding_bwd_wpe");
  for (int64_t i = 0; i < chunks * C; i++) bw(i, slabs, dy, tok, N, C, V, Rw, 0);
  for (int64_t i = 0; i < V * C; i++) sl(i, gte, slabs, chunks, V * C, 0);
  for (int64_t i = 0; i < T * C; i++) bp(i, gpe, dy, B, T, C, 0);
  prt_embedding_bwd(wte2, wpe2, dy, tok, B, T, C, V);
  same("embedding_bwd dwte", gte, wte2, V * C, 1e-6); /* summed by chunks */
  same("embedding_bwd dwpe", gpe, wpe2, T * C, 0);
  end();
}

static void checkEmbedding(void) {
  int32_t tok[N];
  tokens(tok);
  float *wte = rnd(V * C, 1), *wpe = rnd(T * C, 1);
  checkEmbeddingFwd(tok, wte, wpe);
  checkEmbeddingBwd(tok);
}

/* ---- column sums: LayerNorm's weight and bias gradients, the bias gradient, bias rows.
 * LayerNorm's forward and input gradient run a warp a row in kernels/cuda_norms.cu
 * (norm_emu.cu checks them). Sums by chunks of 4 rows (N = 15: the last one 3), their f64
 * sums added in order: 1e-7 against the CPU's f64 sums. ---- */

enum { RC = 4, CHUNKS = (N + RC - 1) / RC };

static void checkLayernormDwDb(const float *x, const float *dy, const float *lw,
                               const float *mean, const float *rstd) {
  begin("layernorm_bwd");
  float gdw[C], gdb[C], wdw[C], wdb[C], *wdx = zeros(N * C);
  double pwb[2 * CHUNKS * C]; /* dw's chunk sums, then db's, as the launcher lays them out */
  void (*lwb)(int64_t, double *, double *, const float *, const float *, const float *,
              const float *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_layernorm_dwdb_partials");
  void (*cfin2)(int64_t, float *, float *, const double *, int64_t, int64_t, int32_t) =
      fn("piper_col_finish2");
  for (int64_t i = 0; i < CHUNKS * C + 5; i++)
    lwb(i, pwb, pwb + CHUNKS * C, dy, x, mean, rstd, N, C, RC, 0);
  for (int64_t i = 0; i < 2 * C + 5; i++) cfin2(i, gdw, gdb, pwb, CHUNKS, C, 0);
  prt_layernorm_bwd(wdx, wdw, wdb, dy, x, lw, mean, rstd, N, C);
  same("layernorm_bwd dw", gdw, wdw, C, 1e-7);
  same("layernorm_bwd db", gdb, wdb, C, 1e-7);
  end();
}

static void checkBiasBwd(const float *dy) {
  begin("bias_bwd");
  float gdb[C], wdb[C];
  double partial[CHUNKS * C];
  void (*bb)(int64_t, double *, const float *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_col_partials");
  void (*cfin)(int64_t, float *, const double *, int64_t, int64_t,
               int32_t) = fn("piper_col_finish");
  for (int64_t i = 0; i < CHUNKS * C + 5; i++) bb(i, partial, dy, N, C, RC, 0);
  for (int64_t i = 0; i < C; i++) cfin(i, gdb, partial, CHUNKS, C, 0);
  prt_bias_bwd(wdb, dy, N, C);
  same("bias_bwd", gdb, wdb, C, 1e-7);
  end();
}

static void checkBiasRows(const float *b) {
  begin("bias_rows");
  float *g = zeros(N * C), *w = zeros(N * C);
  void (*br)(int64_t, float *, const float *, int64_t, int64_t, int32_t) = fn("piper_bias_rows");
  for (int64_t i = 0; i < N * C; i++) br(i, g, b, N, C, 0);
  for (int64_t i = 0; i < N * C; i++) w[i] = b[i % C];
  same("bias_rows", g, w, N * C, 0);
  end();
}

static void checkColumnSums(void) {
  float *x = rnd(N * C, 2), *lw = rnd(C, 1), *lb = rnd(C, 1), *dy = rnd(N * C, 1);
  float *y = zeros(N * C), mean[N], rstd[N];
  prt_layernorm_fwd(y, mean, rstd, x, lw, lb, N, C, 1e-5f); /* the saved statistics */
  checkLayernormDwDb(x, dy, lw, mean, rstd);
  checkBiasBwd(dy);
  checkBiasRows(lb);
}

/* ---- loss: logits with a wide range (one far below its row's max underflows exp) ---- */

/* Both with label smoothing e = 0 (plain cross entropy) and 0.1 (torch's smoothed loss). */
static void checkCrossEntropyFwd(const float *logits, const int32_t *tgt, float *wp) {
  begin("cross_entropy_fwd");
  float *gp = zeros(N * V), gl, wl;
  double rows[N];
  void (*cf)(int64_t, float *, double *, const float *, const int32_t *, int64_t, int64_t,
             float, int32_t) = fn("piper_cross_entropy_fwd");
  void (*mr)(int64_t, float *, const double *, int64_t, int32_t) = fn("piper_mean_rows");
  for (int s = 1; s >= 0; s--) { /* smoothed first: wp ends as the plain run's probs */
    float e = s ? 0.1f : 0.0f;
    for (int64_t i = 0; i < N; i++) cf(i, gp, rows, logits, tgt, N, V, e, 0);
    for (int64_t i = 0; i < 3; i++) mr(i, &gl, rows, N, 0); /* only thread 0 writes */
    prt_cross_entropy_fwd(&wl, wp, logits, tgt, N, V, e);
    same(s ? "cross_entropy_fwd smoothed probs" : "cross_entropy_fwd probs", gp, wp, N * V, 2e-6);
    same(s ? "cross_entropy_fwd smoothed loss" : "cross_entropy_fwd loss", &gl, &wl, 1, 1e-6);
  }
  end();
}

static void checkCrossEntropyBwd(const float *probs, const int32_t *tgt) {
  begin("cross_entropy_bwd");
  float *gd = zeros(N * V), *wd = zeros(N * V);
  void (*cb)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
             float, int32_t) = fn("piper_cross_entropy_bwd");
  for (int s = 0; s < 2; s++) {
    float e = s ? 0.1f : 0.0f;
    for (int64_t i = 0; i < N * V; i++) cb(i, gd, probs, tgt, N, V, 2 * N, e, 0);
    prt_cross_entropy_bwd(wd, probs, tgt, N, V, 2 * N, e);
    same(s ? "cross_entropy_bwd smoothed" : "cross_entropy_bwd", gd, wd, N * V, 0);
  }
  end();
}

static void checkLoss(void) {
  float *logits = rnd(N * V, 8), *probs = zeros(N * V);
  logits[3] = -200.0f;
  int32_t tgt[N];
  for (int i = 0; i < N; i++) tgt[i] = (i * 5 + 1) % V;
  checkCrossEntropyFwd(logits, tgt, probs);
  checkCrossEntropyBwd(probs, tgt);
}

/* ---- AdamW at step 3 with decay and a clip scale; the gradient norm. A table of two
 * tensors in chunks of CH = 64 elements (the layout of runtime/kernels/cuda.c's
 * tensor_chunk): p (97 elements: a full chunk and a short one, decay, with a bf16 copy p16
 * that must get the CPU's p16 bits) and q (40, no decay, no copy). ---- */

enum { CH = 64, NP = 97, NQ = 40, NORM_L = 4 };

typedef struct {
  prt_ctx *c;
  float *p, *g, *m, *v, *q, *gq, *mq, *vq; /* the tensors the kernels update */
  uint16_t *p16;                           /* p's bf16 copy */
  prt_tensor_chunk table[3];               /* their chunks */
} AdamFixture;

static void checkAdamw(AdamFixture *f) {
  begin("adamw");
  float *p2 = zeros(NP), *m2 = zeros(NP), *v2 = zeros(NP);
  float *q2 = zeros(NQ), *mq2 = zeros(NQ), *vq2 = zeros(NQ);
  memcpy(p2, f->p, NP * 4);
  memcpy(m2, f->m, NP * 4);
  memcpy(v2, f->v, NP * 4);
  memcpy(q2, f->q, NQ * 4);
  memcpy(mq2, f->mq, NQ * 4);
  memcpy(vq2, f->vq, NQ * 4);
  prt_adam_scalars a = prt_adam_scalars_of(f->c, 0.9f, 0.95f, 1e-8f);
  float scal[PRT_ADAM_SCALARS];
  scal[PRT_ADAM_BETA1] = a.beta1, scal[PRT_ADAM_BETA2] = a.beta2, scal[PRT_ADAM_EPS] = a.eps;
  scal[PRT_ADAM_KEEP] = a.keep, scal[PRT_ADAM_OMB1] = a.one_minus_b1;
  scal[PRT_ADAM_OMB2] = a.one_minus_b2, scal[PRT_ADAM_BC2S] = a.bc2_sqrt;
  scal[PRT_ADAM_NEGSTEP] = a.neg_step;
  void (*ad)(int64_t, const int64_t *, const float *, const float *, int64_t, int64_t, int32_t) =
      fn("piper_adamw_multi");
  for (int64_t i = 0; i < 3 * CH; i++) ad(i, &f->table[0].p, scal, &f->c->clip_scale, 3, CH, 0);
  uint16_t *w16 = calloc(NP, sizeof *w16), *want16 = calloc(NP, sizeof *want16);
  prt_adamw(f->c, p2, f->g, m2, v2, w16, NP, 0.9f, 0.95f, 1e-8f, 1);
  prt_adamw(f->c, q2, f->gq, mq2, vq2, NULL, NQ, 0.9f, 0.95f, 1e-8f, 0);
  same("adamw p", f->p, p2, NP, 1e-6);
  prt_bf16_narrow(want16, f->p, NP); /* the GPU's p, rounded: its copy must be that */
  sameBits("adamw p16 (the copy of p)", f->p16, want16, NP, sizeof *want16);
  free(w16);
  free(want16);
  same("adamw m", f->m, m2, NP, 1e-6);
  same("adamw v", f->v, v2, NP, 1e-6);
  same("adamw p (no decay)", f->q, q2, NQ, 1e-6);
  same("adamw m (no decay)", f->mq, mq2, NQ, 1e-6);
  same("adamw v (no decay)", f->vq, vq2, NQ, 1e-6);
  end();
}

/* the norm over the table's gradients, NORM_L lanes a chunk, then the clip scale for a max
 * norm below it (and none), against prt_grad_norm_sync's */
static void checkGradSq(AdamFixture *f) {
  begin("grad_sq");
  double partial[3 * NORM_L], csum[3], sq = 0, want = 0;
  float clip = 0;
  void (*ss)(int64_t, double *, const int64_t *, int64_t, int64_t,
             int32_t) = fn("piper_sumsq_chunks");
  void (*sl)(int64_t, double *, const double *, int64_t, int64_t, int32_t) = fn("piper_sum_lanes");
  void (*nc)(int64_t, double *, float *, const double *, int64_t, float,
             int32_t) = fn("piper_norm_clip");
  for (int64_t i = 0; i < 3 * NORM_L; i++) ss(i, partial, &f->table[0].p, 3, NORM_L, 0);
  for (int64_t i = 0; i < 3; i++) sl(i, csum, partial, 3, NORM_L, 0);
  nc(0, &sq, &clip, csum, 3, 2.5f, 0);
  for (int64_t i = 0; i < NP; i++) want += (double)f->g[i] * f->g[i];
  for (int64_t i = 0; i < NQ; i++) want += (double)f->gq[i] * f->gq[i];
  float sqf = (float)sq, wantf = (float)want;
  same("grad_sq", &sqf, &wantf, 1, 1e-7);
  f->c->grad_sq = want;
  f->c->grad_clip = 2.5;
  prt_grad_norm_sync(f->c);
  if (!(f->c->clip_scale < 1.0f)) fail("grad_sq: the clip case was not exercised");
  same("clip scale", &clip, &f->c->clip_scale, 1, 0);
  nc(0, &sq, &clip, csum, 3, 0.0f, 0); /* no clipping */
  float onef = 1.0f;
  same("clip scale (none)", &clip, &onef, 1, 0);
  end();
}

static int64_t addr(const void *p) { return (int64_t)(intptr_t)p; }

static void checkOptimizer(void) {
  AdamFixture f = {.c = prt_ctx_create()};
  f.c->lr = 3e-3;
  f.c->weight_decay = 0.1;
  f.c->adam_t = 3;
  f.c->clip_scale = 0.5f;
  f.p = rnd(NP, 1), f.g = rnd(NP, 1), f.m = rnd(NP, 0.1f), f.v = zeros(NP);
  for (int64_t i = 0; i < NP; i++) f.v[i] = fabsf(uni()) * 0.01f;
  f.q = rnd(NQ, 1), f.gq = rnd(NQ, 1), f.mq = rnd(NQ, 0.1f), f.vq = zeros(NQ);
  f.p16 = calloc(NP, sizeof *f.p16);
  prt_tensor_chunk t[3] = {{addr(f.p), addr(f.g), addr(f.m), addr(f.v), 0, CH, 1, 0, addr(f.p16)},
                           {addr(f.p), addr(f.g), addr(f.m), addr(f.v), CH, NP - CH, 1, 0,
                            addr(f.p16)},
                           {addr(f.q), addr(f.gq), addr(f.mq), addr(f.vq), 0, NQ, 0, 0, 0}};
  memcpy(f.table, t, sizeof t);
  checkAdamw(&f);
  checkGradSq(&f);
  free(f.p16);
  prt_ctx_destroy(f.c);
}

/* ---- Qwen3's ops (runtime/kernels/cpu_qwen3.c); RMSNorm's forward and input gradient run a
 * warp a row in kernels/cuda_norms.cu (norm_emu.cu checks them) ---- */

static void checkEmbedFwd(const int32_t *tok, const float *wte) {
  begin("embed_fwd");
  float *g = zeros(N * C), *w = zeros(N * C);
  void (*ef)(int64_t, float *, const int32_t *, const float *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_embed_fwd");
  for (int64_t i = 0; i < N * C + 3; i++) ef(i, g, tok, wte, N, C, V, 0);
  prt_embed_fwd(w, tok, wte, N, C, V);
  same("embed_fwd", g, w, N * C, 0);
  int32_t badtok[N];
  memcpy(badtok, tok, sizeof badtok);
  badtok[2] = V; /* outside the vocabulary: NaN on the GPU (the CPU stops) */
  for (int64_t i = 0; i < N * C; i++) ef(i, g, badtok, wte, N, C, V, 0);
  if (!isnan(g[2 * C]) || isnan(g[3 * C])) fail("embed_fwd: token V gives no NaN row");
  end();
}

static void checkEmbedBwd(const int32_t *tok, const float *dy) {
  begin("embed_bwd");
  float *gte = rnd(V * C, 9), *wte2 = zeros(V * C);
  int64_t Rw = 4, chunks = (N + Rw - 1) / Rw;
  float *slabs = rnd(chunks * V * C, 9); /* zeroed by the kernel */
  void (*bw)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
             int64_t, int32_t) = fn("piper_embedding_wte_partials");
  void (*sl)(int64_t, float *, const float *, int64_t, int64_t, int32_t) = fn("piper_sum_slabs");
  for (int64_t i = 0; i < chunks * C; i++) bw(i, slabs, dy, tok, N, C, V, Rw, 0);
  for (int64_t i = 0; i < V * C; i++) sl(i, gte, slabs, chunks, V * C, 0);
  prt_embed_bwd(wte2, dy, tok, N, C, V);
  same("embed_bwd", gte, wte2, V * C, 1e-6); /* f32 sums associated by chunks */
  end();
}

static void checkRmsnormDw(const float *x, const float *dy, const float *nw) {
  begin("rmsnorm_bwd");
  float gdw[C], wdw[C], *y = zeros(N * C), *wdx = zeros(N * C), rstd[N];
  double pw[CHUNKS * C];
  prt_rmsnorm_fwd(y, rstd, x, nw, N, C, 1e-6f); /* the saved rstd */
  void (*rp)(int64_t, double *, const float *, const float *, const float *, int64_t,
             int64_t, int64_t, int32_t) = fn("piper_rmsnorm_dw_partials");
  void (*cfin)(int64_t, float *, const double *, int64_t, int64_t,
               int32_t) = fn("piper_col_finish");
  for (int64_t i = 0; i < CHUNKS * C + 5; i++) rp(i, pw, dy, x, rstd, N, C, RC, 0);
  for (int64_t i = 0; i < C; i++) cfin(i, gdw, pw, CHUNKS, C, 0);
  prt_rmsnorm_bwd(wdx, wdw, dy, x, nw, rstd, N, C);
  same("rmsnorm_bwd dw", gdw, wdw, C, 1e-7); /* f64 sums associated by chunks */
  end();
}

/* rope over B x T rows of H heads of D (3 rotary pairs), theta 10000 and Qwen3's 1e6; dir 1:
 * the backward (the inverse rotation) */
static void checkRope(int dir, int th) {
  enum { H = 2, D = 6, NC = H * D };
  float theta = th ? 1e6f : 1e4f;
  begin_on(dir ? "rope_bwd" : "rope_fwd", th ? "theta1e6" : "theta1e4");
  float *rx = rnd(N * NC, 2), *go = zeros(N * NC), *wo = zeros(N * NC);
  float *cs = zeros(2 * T * (D / 2));
  prt_rope_table(cs, T, D, theta, dir ? -1.0 : 1.0);
  void (*ro)(int64_t, float *, const float *, const float *, int64_t, int64_t, int64_t,
             int64_t, int32_t) = fn("piper_rope");
  for (int64_t i = 0; i < N * H * (D / 2) + 4; i++) ro(i, go, rx, cs, N, T, NC, D, 0);
  if (dir) prt_rope_bwd(wo, rx, B, T, NC, D, theta);
  else prt_rope_fwd(wo, rx, B, T, NC, D, theta);
  same("rope", go, wo, N * NC, 1e-6); /* GCC may contract x1 c - x2 s into an FMA */
  end();
}

/* SwiGLU's gate with e^-g overflowing on the CPU (-0 there, below 1e-35 here) and a large
 * positive value; exp is a polynomial here, libm's expf on the CPU: 2e-6 */
static void checkSwigluFwd(const float *gate, const float *up, int64_t n) {
  begin("swiglu_fwd");
  float *g = zeros(n), *w = zeros(n);
  void (*sf)(int64_t, float *, const float *, const float *, int64_t,
             int32_t) = fn("piper_swiglu_fwd");
  for (int64_t i = 0; i < n + 3; i++) sf(i, g, gate, up, n, 0);
  prt_swiglu_fwd(w, gate, up, n);
  same("swiglu_fwd", g, w, n, 2e-6);
  end();
}

static void checkSwigluBwd(const float *gate, const float *up, const float *dout, int64_t n) {
  begin("swiglu_bwd");
  float *g = zeros(n), *g2 = zeros(n), *w = zeros(n), *w2 = zeros(n);
  void (*sb)(int64_t, float *, float *, const float *, const float *, const float *,
             int64_t, int32_t) = fn("piper_swiglu_bwd");
  for (int64_t i = 0; i < n; i++) sb(i, g, g2, dout, gate, up, n, 0);
  prt_swiglu_bwd(w, w2, dout, gate, up, n);
  same("swiglu_bwd dgate", g, w, n, 2e-6);
  same("swiglu_bwd dup", g2, w2, n, 2e-6);
  end();
}

static void checkBiasAdd(const float *x) {
  begin("bias_add");
  float *bb = rnd(C, 1), *g = zeros(N * C), *w = zeros(N * C);
  void (*ba)(int64_t, float *, const float *, const float *, int64_t, int64_t, int32_t) =
      fn("piper_bias_add");
  for (int64_t i = 0; i < N * C + 3; i++) ba(i, g, x, bb, N, C, 0);
  prt_bias_add(w, x, bb, N, C);
  same("bias_add", g, w, N * C, 0);
  end();
}

static void checkQwen3(void) {
  int32_t tok[N];
  tokens(tok);
  float *wte = rnd(V * C, 1);
  checkEmbedFwd(tok, wte);
  float *dy = rnd(N * C, 1);
  checkEmbedBwd(tok, dy);
  float *x = rnd(N * C, 2), *nw = rnd(C, 1);
  checkRmsnormDw(x, dy, nw);
  for (int dir = 0; dir < 2; dir++)
    for (int th = 0; th < 2; th++) checkRope(dir, th);
  int64_t n = N * C;
  float *gate = rnd(n, 6), *up = rnd(n, 2), *d2 = rnd(n, 1);
  gate[0] = -95.0f;
  gate[1] = 40.0f;
  checkSwigluFwd(gate, up, n);
  checkSwigluBwd(gate, up, d2, n);
  checkBiasAdd(x);
}

/* ---- mixture of experts: N tokens, E = 4 experts in G = 2 groups of El = 2, top K = 2.
 * The launchers (runtime/kernels/cuda.c) compute the copies' rows on the host by the CPU's
 * prt_moe_positions and run the expert matmuls as cuBLAS calls (prt_gemm_row_major,
 * replayed here through CBLAS); the device kernels' part is checked against the whole CPU
 * kernel. Tolerances: top-k's e^x is piper_exp in f32 here, libm's double exp on the CPU
 * (2e-6); the expert activations' sigmoid likewise (2e-6 through the matmuls); the rest
 * is the CPU's operations in its order (0, or 1e-6 where GCC may contract a multiply-add
 * into an FMA). ---- */

enum { E = 4, K = 2, G = 2, El = E / G, Fe = 6, NK = N * K, CAP = N * K, R = G * CAP };

typedef struct {
  float *ww;                   /* the CPU's router weights (N, K) */
  int32_t wex[NK], pos[NK];    /* its experts; each copy's row */
  int32_t wcnt[E];             /* copies per expert */
  float *wrows;                /* the CPU's dispatched rows (R, C) */
} MoeFixture;

static void checkMoeTopkFwd(MoeFixture *f) {
  begin("moe_topk_fwd");
  float *logits = rnd(N * E, 2);
  logits[0] = logits[1] = logits[2] = 0.5f; /* ties: the lower index wins */
  logits[3] = 0.25f;
  for (int e = 0; e < E; e++) logits[E + e] = 1.0f; /* all four tied */
  float *gw = zeros(NK), *gexf = zeros(NK), *wexf = zeros(NK);
  int32_t gex[NK];
  f->ww = zeros(NK);
  void (*tf)(int64_t, float *, int32_t *, const float *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_moe_topk_fwd");
  for (int64_t i = 0; i < N + 3; i++) tf(i, gw, gex, logits, N, E, K, 0);
  prt_moe_topk_fwd(f->ww, f->wex, logits, N, E, K);
  for (int i = 0; i < NK; i++) gexf[i] = (float)gex[i], wexf[i] = (float)f->wex[i];
  same("moe_topk_fwd experts", gexf, wexf, NK, 0);
  same("moe_topk_fwd weights", gw, f->ww, NK, 2e-6);
  end();
}

static void checkMoeTopkBwd(const MoeFixture *f) {
  begin("moe_topk_bwd");
  float *dw = rnd(NK, 1), *gdl = zeros(N * E), *wdl = zeros(N * E);
  for (int i = 0; i < N * E; i++) gdl[i] = 7.0f; /* the kernel writes every element */
  void (*tb)(int64_t, float *, const float *, const float *, const int32_t *, int64_t,
             int64_t, int64_t, int32_t) = fn("piper_moe_topk_bwd");
  for (int64_t i = 0; i < N + 3; i++) tb(i, gdl, dw, f->ww, f->wex, N, E, K, 0);
  prt_moe_topk_bwd(wdl, dw, f->ww, f->wex, N, E, K);
  same("moe_topk_bwd", gdl, wdl, N * E, 0);
  end();
}

static void checkMoeDispatchFwd(MoeFixture *f) {
  int32_t gcnt[E];
  prt_moe_positions(f->pos, gcnt, f->wex, N, K, E, G, "emu");
  float *h = rnd(N * C, 1), *grows = zeros(R * C);
  f->wrows = zeros(R * C);
  begin("moe_dispatch_fwd");
  void (*sr)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_moe_scatter_rows");
  for (int64_t i = 0; i < NK * C + 3; i++) sr(i, grows, h, f->pos, NK, K, C, 0);
  prt_moe_dispatch_fwd(f->wrows, f->wcnt, h, f->wex, N, K, C, E, G);
  same("moe_dispatch_fwd rows", grows, f->wrows, R * C, 0);
  float gcf[E], wcf[E];
  for (int e = 0; e < E; e++) gcf[e] = (float)gcnt[e], wcf[e] = (float)f->wcnt[e];
  same("moe_dispatch_fwd counts", gcf, wcf, E, 0);
  end();
}

static void checkMoeDispatchBwd(const MoeFixture *f) {
  begin("moe_dispatch_bwd");
  float *drows = rnd(R * C, 1), *gdh = zeros(N * C), *wdh = zeros(N * C);
  void (*gs)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_moe_gather_sum");
  for (int64_t i = 0; i < N * C + 3; i++) gs(i, gdh, drows, f->pos, N, K, C, 0);
  prt_moe_dispatch_bwd(wdh, drows, f->wex, N, K, C, E, G);
  same("moe_dispatch_bwd", gdh, wdh, N * C, 0);
  end();
}

static void checkMoeCombineFwd(const MoeFixture *f, const float *eout) {
  begin("moe_combine_fwd");
  float *gy = zeros(N * C), *wy = zeros(N * C);
  void (*cf)(int64_t, float *, const float *, const float *, const int32_t *, int64_t,
             int64_t, int64_t, int32_t) = fn("piper_moe_combine_fwd");
  for (int64_t i = 0; i < N * C + 3; i++) cf(i, gy, eout, f->ww, f->pos, N, K, C, 0);
  prt_moe_combine_fwd(wy, eout, f->ww, f->wex, N, K, C, E, G);
  same("moe_combine_fwd", gy, wy, N * C, 1e-6);
  end();
}

static void checkMoeCombineBwd(const MoeFixture *f, const float *eout) {
  begin("moe_combine_bwd");
  float *dy = rnd(N * C, 1), *gdo = zeros(R * C), *wdo = zeros(R * C);
  float *gdw = zeros(NK), *wdw = zeros(NK);
  void (*cb)(int64_t, float *, float *, const float *, const float *, const float *,
             const int32_t *, int64_t, int64_t, int64_t, int32_t) = fn("piper_moe_combine_bwd");
  for (int64_t i = 0; i < NK + 3; i++) cb(i, gdo, gdw, dy, eout, f->ww, f->pos, N, K, C, 0);
  prt_moe_combine_bwd(wdo, wdw, dy, eout, f->ww, f->wex, N, K, C, E, G);
  same("moe_combine_bwd dout", gdo, wdo, R * C, 0);
  same("moe_combine_bwd dweights", gdw, wdw, NK, 1e-6);
  end();
}

/* The experts: each launcher's sequence (cuda.c) with its kernels and sgemm arguments, for
 * local expert j = El - 1 (the last: it zeroes the unused rows too), on block counts bc. */
typedef struct {
  int32_t bc[G * El];
  float *wg, *wu, *wd; /* the expert's weights */
  float *wh;           /* the CPU's hidden rows (R, 2 Fe), from the forward */
  float *act;          /* scratch of 3 CAP Fe */
} ExpertFixture;

static void checkMoeExpertFwd(const MoeFixture *f, ExpertFixture *x) {
  begin("moe_expert_fwd");
  float *go = zeros(R * C), *wo = zeros(R * C), *gh = zeros(R * 2 * Fe);
  void (*sm)(int64_t, float *, const float *, int64_t, int64_t, int32_t) = fn("piper_moe_silu_mul");
  int64_t j = El - 1;
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(x->bc, s, CAP, El, j, &first, &n, "emu");
    const float *in = f->wrows + first * C;
    float *hid = gh + first * 2 * Fe, *o = go + first * C;
    replay(prt_gemm_row_major(false, true, n, Fe, C, in, C, x->wg, C, 0.0f, hid, 2 * Fe));
    replay(prt_gemm_row_major(false, true, n, Fe, C, in, C, x->wu, C, 0.0f, hid + Fe, 2 * Fe));
    for (int64_t i = 0; i < n * Fe + 3; i++) sm(i, x->act, hid, n, Fe, 0);
    replay(prt_gemm_row_major(false, true, n, C, Fe, x->act, Fe, x->wd, Fe, 0.0f, o, C));
  }
  prt_moe_expert_fwd(wo, x->wh, f->wrows, x->bc, G, CAP, El, j, x->wg, x->wu, x->wd, C, Fe);
  same("moe_expert_fwd hidden", gh, x->wh, R * 2 * Fe, 1e-6);
  same("moe_expert_fwd out", go, wo, R * C, 2e-6);
  end();
}

static void checkMoeExpertBwdWeight(const MoeFixture *f, const ExpertFixture *x) {
  begin("moe_expert_bwd_weight");
  float *dout = rnd(R * C, 1), *gwg = zeros(Fe * C), *gwu = zeros(Fe * C), *gwd = zeros(C * Fe);
  float *wwg = zeros(Fe * C), *wwu = zeros(Fe * C), *wwd = zeros(C * Fe);
  void (*sm)(int64_t, float *, const float *, int64_t, int64_t, int32_t) = fn("piper_moe_silu_mul");
  void (*dgu)(int64_t, float *, float *, const float *, int64_t, int64_t,
              int32_t) = fn("piper_moe_dgu");
  int64_t j = El - 1;
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(x->bc, s, CAP, El, j, &first, &n, "emu");
    if (n == 0) continue;
    const float *in = f->wrows + first * C, *d = dout + first * C, *hid = x->wh + first * 2 * Fe;
    float *dg = x->act, *du = x->act + n * Fe, *ac = x->act + 2 * n * Fe;
    for (int64_t i = 0; i < n * Fe; i++) sm(i, ac, hid, n, Fe, 0);
    replay(prt_gemm_row_major(false, false, n, Fe, C, d, C, x->wd, Fe, 0.0f, dg, Fe));
    for (int64_t i = 0; i < n * Fe + 3; i++) dgu(i, dg, du, hid, n, Fe, 0);
    replay(prt_gemm_row_major(true, false, C, Fe, n, d, C, ac, Fe, 1.0f, gwd, Fe));
    replay(prt_gemm_row_major(true, false, Fe, C, n, dg, Fe, in, C, 1.0f, gwg, C));
    replay(prt_gemm_row_major(true, false, Fe, C, n, du, Fe, in, C, 1.0f, gwu, C));
  }
  prt_moe_expert_bwd_weight(wwg, wwu, wwd, dout, f->wrows, x->bc, x->wh, G, CAP, El, j, x->wd,
                            C, Fe);
  same("moe_expert_bwd_weight dwg", gwg, wwg, Fe * C, 2e-6);
  same("moe_expert_bwd_weight dwu", gwu, wwu, Fe * C, 2e-6);
  same("moe_expert_bwd_weight dwd", gwd, wwd, C * Fe, 2e-6);
  end();
}

static void checkMoe(void) {
  MoeFixture f;
  checkMoeTopkFwd(&f);
  checkMoeTopkBwd(&f);
  checkMoeDispatchFwd(&f);
  checkMoeDispatchBwd(&f);
  float *eout = rnd(R * C, 1);
  checkMoeCombineFwd(&f, eout);
  checkMoeCombineBwd(&f, eout);
  ExpertFixture x;
  for (int s = 0; s < G; s++)
    for (int q = 0; q < El; q++) x.bc[s * El + q] = f.wcnt[s * El + q];
  x.wg = rnd(Fe * C, 1), x.wu = rnd(Fe * C, 1), x.wd = rnd(C * Fe, 1);
  x.wh = zeros(R * 2 * Fe), x.act = zeros(3 * CAP * Fe);
  checkMoeExpertFwd(&f, &x);
  checkMoeExpertBwdWeight(&f, &x);
}

/* ---- the cuBLAS calls' arguments (kernels/cuda_gemm.h), replayed through CBLAS's
 * column-major sgemm, against the CPU's linear kernels ---- */

enum { GM = 7, GN = 5, GK = 3, GMAX = GM * GN > GM * GK ? GM * GN : GM * GK };

static void checkCublasArgs(int c, const float *x, const float *w, const float *dy,
                            const float *b) {
  float g[GMAX], want[GMAX];
  const struct {
    const char *name;
    prt_gemm gemm;
    int64_t n;
  } cases[] = {{"linear_fwd", prt_gemm_linear_fwd(g, x, w, GM, GN, GK, 0.0f), GM * GN},
               {"linear_fwd_bias", prt_gemm_linear_fwd(g, x, w, GM, GN, GK, 1.0f), GM * GN},
               {"linear_bwd_input", prt_gemm_linear_bwd_input(g, dy, w, GM, GN, GK), GM * GK},
               {"linear_bwd_weight", prt_gemm_linear_bwd_weight(g, dy, x, GM, GN, GK), GN * GK}};
  begin_on("cublas_args", cases[c].name);
  prt_gemm a = cases[c].gemm;
  for (int64_t i = 0; i < GM * GN; i++) g[i] = b[i % GN]; /* the bias rows (beta 1) */
  cblas_sgemm(CblasColMajor, a.transA ? CblasTrans : CblasNoTrans,
              a.transB ? CblasTrans : CblasNoTrans, (int)a.m, (int)a.n, (int)a.k, 1.0f, a.A,
              (int)a.lda, a.B, (int)a.ldb, a.beta, a.C, (int)a.ldc);
  if (c == 0) prt_linear_fwd(want, x, w, NULL, GM, GN, GK);
  if (c == 1) prt_linear_fwd(want, x, w, b, GM, GN, GK);
  if (c == 2) prt_linear_bwd_input(want, dy, w, GM, GN, GK);
  if (c == 3) prt_linear_bwd_weight(want, dy, x, GM, GN, GK);
  same(cases[c].name, g, want, cases[c].n, 1e-6);
  end();
}

static void checkCublas(void) {
  float *x = rnd(GM * GK, 1), *w = rnd(GN * GK, 1), *dy = rnd(GM * GN, 1), *b = rnd(GN, 1);
  for (int c = 0; c < 4; c++) checkCublasArgs(c, x, w, dy, b);
}

int main(void) {
  emuSetup(0x9e3779b97f4a7c15ull, "GPU kernel", "CPU kernel");
  jit = kernelJitCreate();
  checkElementwise();
  checkEmbedding();
  checkColumnSums();
  checkLoss();
  checkOptimizer();
  checkQwen3();
  checkMoe();
  checkCublas();
  checkBf16();
  kernelJitDestroy(jit);
  emuFreeArrays();
  printf("%d failed\n", failures);
  return failures;
}
