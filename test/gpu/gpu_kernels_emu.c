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
  void (*narrow)(int64_t, uint16_t *, const float *, int64_t) = fn("piper_bf16_narrow");
  void (*widen)(int64_t, float *, const uint16_t *, int64_t) = fn("piper_bf16_widen");
  void (*round)(int64_t, float *, const float *, int64_t) = fn("piper_bf16_round");
  begin("bf16_narrow");
  for (int64_t i = 0; i < NP + 5; i++) narrow(i, gh, x, NP); /* threads past n do nothing */
  prt_bf16_narrow(wh, x, NP);
  sameBits("bf16_narrow", gh, wh, NP, sizeof *gh);
  end();
  begin("bf16_widen");
  uint16_t *all = calloc(65536, sizeof *all); /* every bf16 */
  for (int64_t i = 0; i < 65536; i++) all[i] = (uint16_t)i;
  for (int64_t i = 0; i < 65536; i++) widen(i, gf, all, 65536);
  prt_bf16_widen(wf, all, 65536);
  sameBits("bf16_widen", gf, wf, 65536, sizeof *gf);
  end();
  begin("bf16_round");
  for (int64_t i = 0; i < NP; i++) round(i, gr, x, NP);
  prt_bf16_round(wf, x, NP);
  sameBits("bf16_round", gr, wf, NP, sizeof *gr);
  memcpy(gr, x, NP * sizeof *gr);
  for (int64_t i = 0; i < NP; i++) round(i, gr, gr, NP);
  sameBits("bf16_round in place", gr, wf, NP, sizeof *gr);
  end();
  free(all);
  free(gh);
  free(wh);
}

int main(void) {
  emuSetup(0x9e3779b97f4a7c15ull, "GPU kernel", "CPU kernel");
  jit = kernelJitCreate();

  /* ---- elementwise ---- */
  {
    int64_t n = N * C;
    float *a = rnd(n, 3.0f), *b = rnd(n, 3.0f), *g = zeros(n), *w = zeros(n), *dy = rnd(n, 1);
    begin("add");
    void (*add)(int64_t, float *, const float *, const float *, int64_t) = fn("piper_add");
    for (int64_t i = 0; i < n + 7; i++) add(i, g, a, b, n); /* threads past n do nothing */
    prt_add(w, a, b, n);
    same("add", g, w, n, 0);
    end();
    begin("copy");
    void (*copy)(int64_t, float *, const float *, int64_t) = fn("piper_copy");
    for (int64_t i = 0; i < n; i++) copy(i, g, a, n);
    same("copy", g, a, n, 0);
    end();
    begin("gelu_fwd");
    void (*gf)(int64_t, float *, const float *, int64_t) = fn("piper_gelu_fwd");
    for (int64_t i = 0; i < n; i++) gf(i, g, a, n);
    prt_gelu_fwd(w, a, n);
    same("gelu_fwd", g, w, n, 1e-6);
    end();
    begin("gelu_bwd");
    void (*gb)(int64_t, float *, const float *, const float *, int64_t) = fn("piper_gelu_bwd");
    for (int64_t i = 0; i < n; i++) gb(i, g, dy, a, n);
    prt_gelu_bwd(w, dy, a, n);
    same("gelu_bwd", g, w, n, 1e-6);
    end();
    /* relu: a comparison and a select, bit for bit, with 0, -0, a NaN and the infinities */
    float special[6] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-30f};
    memcpy(a, special, sizeof special);
    begin("relu_fwd");
    void (*rf)(int64_t, float *, const float *, int64_t) = fn("piper_relu_fwd");
    for (int64_t i = 0; i < n + 3; i++) rf(i, g, a, n); /* threads past n do nothing */
    prt_relu_fwd(w, a, n);
    sameBits("relu_fwd", g, w, n, sizeof *g);
    end();
    begin("relu_bwd");
    void (*rb)(int64_t, float *, const float *, const float *, int64_t) = fn("piper_relu_bwd");
    for (int64_t i = 0; i < n; i++) rb(i, g, dy, a, n);
    prt_relu_bwd(w, dy, a, n);
    sameBits("relu_bwd", g, w, n, sizeof *g);
    end();
  }

  /* ---- embedding ---- */
  {
    int32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (i * 7 + 3) % V; /* repeats: the backward sums */
    float *wte = rnd(V * C, 1), *wpe = rnd(T * C, 1), *g = zeros(N * C), *w = zeros(N * C);
    begin("embedding_fwd");
    void (*ef)(int64_t, float *, const int32_t *, const float *, const float *, int64_t, int64_t,
               int64_t) = fn("piper_embedding_fwd");
    for (int64_t i = 0; i < N * C; i++) ef(i, g, tok, wte, wpe, B, T, C);
    prt_embedding_fwd(w, tok, wte, wpe, B, T, C);
    same("embedding_fwd", g, w, N * C, 0);
    end();
    begin("embedding_bwd");
    float *dy = rnd(N * C, 1), *gte = rnd(V * C, 9), *gpe = rnd(T * C, 9); /* overwritten */
    float *wte2 = zeros(V * C), *wpe2 = zeros(T * C);
    /* chunks of 4 token rows (the last one shorter): 4 slabs of V x C, summed in order */
    int64_t Rw = 4, chunks = (N + Rw - 1) / Rw;
    float *slabs = rnd(chunks * V * C, 9); /* zeroed by the kernel */
    void (*bw)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
               int64_t) = fn("piper_embedding_wte_partials");
    void (*sl)(int64_t, float *, const float *, int64_t, int64_t) = fn("piper_sum_slabs");
    void (*bp)(int64_t, float *, const float *, int64_t, int64_t, int64_t) =
        fn("piper_embedding_bwd_wpe");
    for (int64_t i = 0; i < chunks * C; i++) bw(i, slabs, dy, tok, N, C, V, Rw);
    for (int64_t i = 0; i < V * C; i++) sl(i, gte, slabs, chunks, V * C);
    for (int64_t i = 0; i < T * C; i++) bp(i, gpe, dy, B, T, C);
    prt_embedding_bwd(wte2, wpe2, dy, tok, B, T, C, V);
    same("embedding_bwd dwte", gte, wte2, V * C, 1e-6); /* summed by chunks */
    same("embedding_bwd dwpe", gpe, wpe2, T * C, 0);
    end();
  }

  /* ---- layernorm, bias ---- */
  {
    float *x = rnd(N * C, 2), *lw = rnd(C, 1), *lb = rnd(C, 1), *dy = rnd(N * C, 1);
    float *g = zeros(N * C), *w = zeros(N * C), gm[N], gr[N], wm[N], wr[N];
    begin("layernorm_fwd");
    void (*lf)(int64_t, float *, float *, float *, const float *, const float *, const float *,
               int64_t, int64_t, float) = fn("piper_layernorm_fwd");
    for (int64_t i = 0; i < N; i++) lf(i, g, gm, gr, x, lw, lb, N, C, 1e-5f);
    prt_layernorm_fwd(w, wm, wr, x, lw, lb, N, C, 1e-5f);
    same("layernorm_fwd y", g, w, N * C, 0);
    same("layernorm_fwd mean", gm, wm, N, 0);
    same("layernorm_fwd rstd", gr, wr, N, 0);
    end();
    begin("layernorm_bwd");
    float gdw[C], gdb[C], wdw[C], wdb[C];
    void (*ld)(int64_t, float *, const float *, const float *, const float *, const float *,
               const float *, int64_t, int64_t) = fn("piper_layernorm_bwd_dx");
    /* chunks of 4 rows (N = 15: the last one 3), their f64 sums added in order */
    int64_t Rc = 4, chunks = (N + Rc - 1) / Rc;
    double pw[4 * C], pb[4 * C];
    void (*lwb)(int64_t, double *, double *, const float *, const float *, const float *,
                const float *, int64_t, int64_t, int64_t) = fn("piper_layernorm_dwdb_partials");
    void (*cfin)(int64_t, float *, const double *, int64_t, int64_t) = fn("piper_col_finish");
    for (int64_t i = 0; i < N; i++) ld(i, g, dy, x, lw, wm, wr, N, C);
    for (int64_t i = 0; i < chunks * C + 5; i++) lwb(i, pw, pb, dy, x, wm, wr, N, C, Rc);
    for (int64_t i = 0; i < C; i++) cfin(i, gdw, pw, chunks, C);
    for (int64_t i = 0; i < C; i++) cfin(i, gdb, pb, chunks, C);
    prt_layernorm_bwd(w, wdw, wdb, dy, x, lw, wm, wr, N, C);
    same("layernorm_bwd dx", g, w, N * C, 0);
    same("layernorm_bwd dw", gdw, wdw, C, 1e-7); /* f64 sums associated by chunks */
    same("layernorm_bwd db", gdb, wdb, C, 1e-7);
    end();
    begin("bias_bwd");
    void (*bb)(int64_t, double *, const float *, int64_t, int64_t, int64_t) =
        fn("piper_col_partials");
    for (int64_t i = 0; i < chunks * C + 5; i++) bb(i, pb, dy, N, C, Rc);
    for (int64_t i = 0; i < C; i++) cfin(i, gdb, pb, chunks, C);
    prt_bias_bwd(wdb, dy, N, C);
    same("bias_bwd", gdb, wdb, C, 1e-7);
    end();
    begin("bias_rows");
    void (*br)(int64_t, float *, const float *, int64_t, int64_t) = fn("piper_bias_rows");
    for (int64_t i = 0; i < N * C; i++) br(i, g, lb, N, C);
    for (int64_t i = 0; i < N * C; i++) w[i] = lb[i % C];
    same("bias_rows", g, w, N * C, 0);
    end();
  }

  /* ---- loss: logits with a wide range (one row far below its max underflows exp) ---- */
  {
    float *logits = rnd(N * V, 8), *gp = zeros(N * V), *wp = zeros(N * V), gl, wl;
    logits[3] = -200.0f;
    int32_t tgt[N];
    for (int i = 0; i < N; i++) tgt[i] = (i * 5 + 1) % V;
    double rows[N];
    begin("cross_entropy_fwd");
    void (*cf)(int64_t, float *, double *, const float *, const int32_t *, int64_t, int64_t) =
        fn("piper_cross_entropy_fwd");
    void (*mr)(int64_t, float *, const double *, int64_t) = fn("piper_mean_rows");
    for (int64_t i = 0; i < N; i++) cf(i, gp, rows, logits, tgt, N, V);
    for (int64_t i = 0; i < 3; i++) mr(i, &gl, rows, N); /* only thread 0 writes */
    prt_cross_entropy_fwd(&wl, wp, logits, tgt, N, V);
    same("cross_entropy_fwd probs", gp, wp, N * V, 2e-6);
    same("cross_entropy_fwd loss", &gl, &wl, 1, 1e-6);
    end();
    begin("cross_entropy_bwd");
    float *gd = zeros(N * V), *wd = zeros(N * V);
    void (*cb)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t) =
        fn("piper_cross_entropy_bwd");
    for (int64_t i = 0; i < N * V; i++) cb(i, gd, wp, tgt, N, V, 2 * N);
    prt_cross_entropy_bwd(wd, wp, tgt, N, V, 2 * N);
    same("cross_entropy_bwd", gd, wd, N * V, 0);
    end();
  }

  /* ---- AdamW at step 3 with decay and a clip scale; the gradient norm ---- */
  {
    int64_t n = 97;
    prt_ctx *c = prt_ctx_create();
    c->lr = 3e-3;
    c->weight_decay = 0.1;
    c->adam_t = 3;
    c->clip_scale = 0.5f;
    float *p = rnd(n, 1), *g = rnd(n, 1), *m = rnd(n, 0.1f), *v = zeros(n);
    for (int64_t i = 0; i < n; i++) v[i] = fabsf(uni()) * 0.01f;
    float *p2 = zeros(n), *m2 = zeros(n), *v2 = zeros(n);
    memcpy(p2, p, n * 4);
    memcpy(m2, m, n * 4);
    memcpy(v2, v, n * 4);
    begin("adamw");
    prt_adam_scalars a = prt_adam_scalars_of(c, 0.9f, 0.95f, 1e-8f);
    void (*ad)(int64_t, float *, const float *, float *, float *, int64_t, float, float, float,
               float, float, float, float, float, float, int32_t) = fn("piper_adamw");
    for (int64_t i = 0; i < n; i++)
      ad(i, p, g, m, v, n, a.beta1, a.beta2, a.eps, a.keep, a.one_minus_b1, a.one_minus_b2,
         a.bc2_sqrt, a.neg_step, a.clip, 1);
    prt_adamw(c, p2, g, m2, v2, n, 0.9f, 0.95f, 1e-8f, 1);
    same("adamw p", p, p2, n, 1e-6);
    same("adamw m", m, m2, n, 1e-6);
    same("adamw v", v, v2, n, 1e-6);
    end();
    begin("grad_sq");
    double partial[16], acc = 0.25, want = 0.25;
    int64_t P = 16;
    void (*ss)(int64_t, double *, const float *, int64_t, int64_t) = fn("piper_sum_squares");
    void (*sp)(int64_t, double *, const double *, int64_t) = fn("piper_sum_partials");
    for (int64_t i = 0; i < P; i++) ss(i, partial, g, n, P);
    sp(0, &acc, partial, P);
    for (int64_t i = 0; i < n; i++) want += (double)g[i] * g[i];
    float accf = (float)acc, wantf = (float)want;
    same("grad_sq", &accf, &wantf, 1, 1e-7);
    end();
    prt_ctx_destroy(c);
  }
  /* ---- Qwen3's ops (runtime/kernels/cpu_qwen3.c) ---- */
  {
    enum { H = 2, D = 6, NC = H * D }; /* rows of 2 heads of 6 (3 rotary pairs) */
    int32_t tok[N];
    for (int i = 0; i < N; i++) tok[i] = (i * 7 + 3) % V; /* repeats: the backward sums */
    float *wte = rnd(V * C, 1), *g = zeros(N * C), *w = zeros(N * C);
    begin("embed_fwd");
    void (*ef)(int64_t, float *, const int32_t *, const float *, int64_t, int64_t, int64_t) =
        fn("piper_embed_fwd");
    for (int64_t i = 0; i < N * C + 3; i++) ef(i, g, tok, wte, N, C, V);
    prt_embed_fwd(w, tok, wte, N, C, V);
    same("embed_fwd", g, w, N * C, 0);
    int32_t badtok[N];
    memcpy(badtok, tok, sizeof tok);
    badtok[2] = V; /* outside the vocabulary: NaN on the GPU (the CPU stops) */
    for (int64_t i = 0; i < N * C; i++) ef(i, g, badtok, wte, N, C, V);
    if (!isnan(g[2 * C]) || isnan(g[3 * C])) fail("embed_fwd: token V gives no NaN row");
    end();
    begin("embed_bwd");
    float *dy = rnd(N * C, 1), *gte = rnd(V * C, 9), *wte2 = zeros(V * C);
    int64_t Rw = 4, chunks = (N + Rw - 1) / Rw;
    float *slabs = rnd(chunks * V * C, 9); /* zeroed by the kernel */
    void (*bw)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t,
               int64_t) = fn("piper_embedding_wte_partials");
    void (*sl)(int64_t, float *, const float *, int64_t, int64_t) = fn("piper_sum_slabs");
    for (int64_t i = 0; i < chunks * C; i++) bw(i, slabs, dy, tok, N, C, V, Rw);
    for (int64_t i = 0; i < V * C; i++) sl(i, gte, slabs, chunks, V * C);
    prt_embed_bwd(wte2, dy, tok, N, C, V);
    same("embed_bwd", gte, wte2, V * C, 1e-6); /* f32 sums associated by chunks */
    end();

    float *x = rnd(N * C, 2), *nw = rnd(C, 1), gr[N], wr[N];
    begin("rmsnorm_fwd");
    void (*rf)(int64_t, float *, float *, const float *, const float *, int64_t, int64_t,
               float) = fn("piper_rmsnorm_fwd");
    for (int64_t i = 0; i < N + 2; i++) rf(i, g, gr, x, nw, N, C, 1e-6f);
    prt_rmsnorm_fwd(w, wr, x, nw, N, C, 1e-6f);
    same("rmsnorm_fwd y", g, w, N * C, 0);
    same("rmsnorm_fwd rstd", gr, wr, N, 0);
    end();
    begin("rmsnorm_bwd");
    float gdw[C], wdw[C];
    int64_t Rc = 4, nch = (N + Rc - 1) / Rc;
    double pw[4 * C];
    void (*rd)(int64_t, float *, const float *, const float *, const float *, const float *,
               int64_t, int64_t) = fn("piper_rmsnorm_bwd_dx");
    void (*rp)(int64_t, double *, const float *, const float *, const float *, int64_t,
               int64_t, int64_t) = fn("piper_rmsnorm_dw_partials");
    void (*cfin)(int64_t, float *, const double *, int64_t, int64_t) = fn("piper_col_finish");
    for (int64_t i = 0; i < N; i++) rd(i, g, dy, x, nw, wr, N, C);
    for (int64_t i = 0; i < nch * C + 5; i++) rp(i, pw, dy, x, wr, N, C, Rc);
    for (int64_t i = 0; i < C; i++) cfin(i, gdw, pw, nch, C);
    prt_rmsnorm_bwd(w, wdw, dy, x, nw, wr, N, C);
    same("rmsnorm_bwd dx", g, w, N * C, 0);
    same("rmsnorm_bwd dw", gdw, wdw, C, 1e-7); /* f64 sums associated by chunks */
    end();

    /* rope over B x T rows of H heads of D, theta 10000 (Qwen3's 1e6 too) */
    for (int dir = 0; dir < 2; dir++)
      for (int th = 0; th < 2; th++) {
        float theta = th ? 1e6f : 1e4f;
        begin_on(dir ? "rope_bwd" : "rope_fwd", th ? "theta1e6" : "theta1e4");
        float *rx = rnd(N * NC, 2), *go = zeros(N * NC), *wo = zeros(N * NC);
        float *cs = zeros(2 * T * (D / 2));
        prt_rope_table(cs, T, D, theta, dir ? -1.0 : 1.0);
        void (*ro)(int64_t, float *, const float *, const float *, int64_t, int64_t, int64_t,
                   int64_t) = fn("piper_rope");
        for (int64_t i = 0; i < N * H * (D / 2) + 4; i++) ro(i, go, rx, cs, N, T, NC, D);
        if (dir) prt_rope_bwd(wo, rx, B, T, NC, D, theta);
        else prt_rope_fwd(wo, rx, B, T, NC, D, theta);
        same("rope", go, wo, N * NC, 1e-6); /* GCC may contract x1 c - x2 s into an FMA */
        end();
      }

    int64_t n = N * C;
    float *gate = rnd(n, 6), *up = rnd(n, 2), *d2 = rnd(n, 1), *g2 = zeros(n), *w2 = zeros(n);
    gate[0] = -95.0f; /* e^-g overflows on the CPU: -0 there, below 1e-35 here */
    gate[1] = 40.0f;
    begin("swiglu_fwd");
    void (*sf)(int64_t, float *, const float *, const float *, int64_t) = fn("piper_swiglu_fwd");
    for (int64_t i = 0; i < n + 3; i++) sf(i, g, gate, up, n);
    prt_swiglu_fwd(w, gate, up, n);
    same("swiglu_fwd", g, w, n, 2e-6); /* exp: polynomial here, libm's expf on the CPU */
    end();
    begin("swiglu_bwd");
    void (*sb)(int64_t, float *, float *, const float *, const float *, const float *,
               int64_t) = fn("piper_swiglu_bwd");
    for (int64_t i = 0; i < n; i++) sb(i, g, g2, d2, gate, up, n);
    prt_swiglu_bwd(w, w2, d2, gate, up, n);
    same("swiglu_bwd dgate", g, w, n, 2e-6);
    same("swiglu_bwd dup", g2, w2, n, 2e-6);
    end();
    begin("bias_add");
    float *bb = rnd(C, 1);
    void (*ba)(int64_t, float *, const float *, const float *, int64_t, int64_t) =
        fn("piper_bias_add");
    for (int64_t i = 0; i < n + 3; i++) ba(i, g, x, bb, N, C);
    prt_bias_add(w, x, bb, N, C);
    same("bias_add", g, w, n, 0);
    end();
  }
  /* ---- mixture of experts: N tokens, E = 4 experts in G = 2 groups of El = 2, top K = 2.
   * The launchers (runtime/kernels/cuda.c) compute the copies' rows on the host by the CPU's
   * prt_moe_positions and run the expert matmuls as cuBLAS calls (prt_gemm_row_major,
   * replayed here through CBLAS); the device kernels' part is checked against the whole CPU
   * kernel. Tolerances: top-k's e^x is piper_exp in f32 here, libm's double exp on the CPU
   * (2e-6); the expert activations' sigmoid likewise (2e-6 through the matmuls); the rest
   * is the CPU's operations in its order (0, or 1e-6 where GCC may contract a multiply-add
   * into an FMA). ---- */
  {
    enum { E = 4, K = 2, G = 2, El = E / G, Fe = 6, NK = N * K, CAP = N * K, R = G * CAP };
    float *logits = rnd(N * E, 2);
    logits[0] = logits[1] = logits[2] = 0.5f; /* ties: the lower index wins */
    logits[3] = 0.25f;
    for (int e = 0; e < E; e++) logits[E + e] = 1.0f; /* all four tied */
    float *gw = zeros(NK), *ww = zeros(NK), *gexf = zeros(NK), *wexf = zeros(NK);
    int32_t gex[NK], wex[NK];
    begin("moe_topk_fwd");
    void (*tf)(int64_t, float *, int32_t *, const float *, int64_t, int64_t, int64_t) =
        fn("piper_moe_topk_fwd");
    for (int64_t i = 0; i < N + 3; i++) tf(i, gw, gex, logits, N, E, K);
    prt_moe_topk_fwd(ww, wex, logits, N, E, K);
    for (int i = 0; i < NK; i++) gexf[i] = (float)gex[i], wexf[i] = (float)wex[i];
    same("moe_topk_fwd experts", gexf, wexf, NK, 0);
    same("moe_topk_fwd weights", gw, ww, NK, 2e-6);
    end();
    begin("moe_topk_bwd");
    float *dw = rnd(NK, 1), *gdl = zeros(N * E), *wdl = zeros(N * E);
    for (int i = 0; i < N * E; i++) gdl[i] = 7.0f; /* the kernel writes every element */
    void (*tb)(int64_t, float *, const float *, const float *, const int32_t *, int64_t,
               int64_t, int64_t) = fn("piper_moe_topk_bwd");
    for (int64_t i = 0; i < N + 3; i++) tb(i, gdl, dw, ww, wex, N, E, K);
    prt_moe_topk_bwd(wdl, dw, ww, wex, N, E, K);
    same("moe_topk_bwd", gdl, wdl, N * E, 0);
    end();

    int32_t pos[NK], gcnt[E], wcnt[E];
    prt_moe_positions(pos, gcnt, wex, N, K, E, G, "emu");
    float *h = rnd(N * C, 1), *grows = zeros(R * C), *wrows = zeros(R * C);
    begin("moe_dispatch_fwd");
    void (*sr)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t) =
        fn("piper_moe_scatter_rows");
    for (int64_t i = 0; i < NK * C + 3; i++) sr(i, grows, h, pos, NK, K, C);
    prt_moe_dispatch_fwd(wrows, wcnt, h, wex, N, K, C, E, G);
    same("moe_dispatch_fwd rows", grows, wrows, R * C, 0);
    float gcf[E], wcf[E];
    for (int e = 0; e < E; e++) gcf[e] = (float)gcnt[e], wcf[e] = (float)wcnt[e];
    same("moe_dispatch_fwd counts", gcf, wcf, E, 0);
    end();
    begin("moe_dispatch_bwd");
    float *drows = rnd(R * C, 1), *gdh = zeros(N * C), *wdh = zeros(N * C);
    void (*gs)(int64_t, float *, const float *, const int32_t *, int64_t, int64_t, int64_t) =
        fn("piper_moe_gather_sum");
    for (int64_t i = 0; i < N * C + 3; i++) gs(i, gdh, drows, pos, N, K, C);
    prt_moe_dispatch_bwd(wdh, drows, wex, N, K, C, E, G);
    same("moe_dispatch_bwd", gdh, wdh, N * C, 0);
    end();
    begin("moe_combine_fwd");
    float *eout = rnd(R * C, 1), *gy = zeros(N * C), *wy = zeros(N * C);
    void (*cf)(int64_t, float *, const float *, const float *, const int32_t *, int64_t,
               int64_t, int64_t) = fn("piper_moe_combine_fwd");
    for (int64_t i = 0; i < N * C + 3; i++) cf(i, gy, eout, ww, pos, N, K, C);
    prt_moe_combine_fwd(wy, eout, ww, wex, N, K, C, E, G);
    same("moe_combine_fwd", gy, wy, N * C, 1e-6);
    end();
    begin("moe_combine_bwd");
    float *dy = rnd(N * C, 1), *gdo = zeros(R * C), *wdo = zeros(R * C);
    float *gdw = zeros(NK), *wdw = zeros(NK);
    void (*cb)(int64_t, float *, float *, const float *, const float *, const float *,
               const int32_t *, int64_t, int64_t, int64_t) = fn("piper_moe_combine_bwd");
    for (int64_t i = 0; i < NK + 3; i++) cb(i, gdo, gdw, dy, eout, ww, pos, N, K, C);
    prt_moe_combine_bwd(wdo, wdw, dy, eout, ww, wex, N, K, C, E, G);
    same("moe_combine_bwd dout", gdo, wdo, R * C, 0);
    same("moe_combine_bwd dweights", gdw, wdw, NK, 1e-6);
    end();

    /* the experts: each launcher's sequence (cuda.c) with its kernels and sgemm arguments,
     * for local expert j = 1 (the last: it zeroes the unused rows too) */
    int32_t bc[G * El];
    for (int s = 0; s < G; s++)
      for (int q = 0; q < El; q++) bc[s * El + q] = wcnt[s * El + q];
    float *wg = rnd(Fe * C, 1), *wu = rnd(Fe * C, 1), *wd = rnd(C * Fe, 1);
    float *go = zeros(R * C), *wo = zeros(R * C), *gh = zeros(R * 2 * Fe), *wh = zeros(R * 2 * Fe);
    float *act = zeros(3 * CAP * Fe);
    void (*sm)(int64_t, float *, const float *, int64_t, int64_t) = fn("piper_moe_silu_mul");
    void (*dgu)(int64_t, float *, float *, const float *, int64_t, int64_t) = fn("piper_moe_dgu");
    int64_t j = El - 1;
    begin("moe_expert_fwd");
    for (int64_t s = 0; s < G; s++) {
      int64_t first, n;
      prt_moe_segment(bc, s, CAP, El, j, &first, &n, "emu");
      const float *x = wrows + first * C;
      float *hid = gh + first * 2 * Fe, *o = go + first * C;
      replay(prt_gemm_row_major(false, true, n, Fe, C, x, C, wg, C, 0.0f, hid, 2 * Fe));
      replay(prt_gemm_row_major(false, true, n, Fe, C, x, C, wu, C, 0.0f, hid + Fe, 2 * Fe));
      for (int64_t i = 0; i < n * Fe + 3; i++) sm(i, act, hid, n, Fe);
      replay(prt_gemm_row_major(false, true, n, C, Fe, act, Fe, wd, Fe, 0.0f, o, C));
    }
    prt_moe_expert_fwd(wo, wh, wrows, bc, G, CAP, El, j, wg, wu, wd, C, Fe);
    same("moe_expert_fwd hidden", gh, wh, R * 2 * Fe, 1e-6);
    same("moe_expert_fwd out", go, wo, R * C, 2e-6);
    end();
    begin("moe_expert_bwd_weight");
    float *dout = rnd(R * C, 1), *gwg = zeros(Fe * C), *gwu = zeros(Fe * C), *gwd = zeros(C * Fe);
    float *wwg = zeros(Fe * C), *wwu = zeros(Fe * C), *wwd = zeros(C * Fe);
    for (int64_t s = 0; s < G; s++) {
      int64_t first, n;
      prt_moe_segment(bc, s, CAP, El, j, &first, &n, "emu");
      if (n == 0) continue;
      const float *x = wrows + first * C, *d = dout + first * C, *hid = wh + first * 2 * Fe;
      float *dg = act, *du = act + n * Fe, *ac = act + 2 * n * Fe;
      for (int64_t i = 0; i < n * Fe; i++) sm(i, ac, hid, n, Fe);
      replay(prt_gemm_row_major(false, false, n, Fe, C, d, C, wd, Fe, 0.0f, dg, Fe));
      for (int64_t i = 0; i < n * Fe + 3; i++) dgu(i, dg, du, hid, n, Fe);
      replay(prt_gemm_row_major(true, false, C, Fe, n, d, C, ac, Fe, 1.0f, gwd, Fe));
      replay(prt_gemm_row_major(true, false, Fe, C, n, dg, Fe, x, C, 1.0f, gwg, C));
      replay(prt_gemm_row_major(true, false, Fe, C, n, du, Fe, x, C, 1.0f, gwu, C));
    }
    prt_moe_expert_bwd_weight(wwg, wwu, wwd, dout, wrows, bc, wh, G, CAP, El, j, wd, C, Fe);
    same("moe_expert_bwd_weight dwg", gwg, wwg, Fe * C, 2e-6);
    same("moe_expert_bwd_weight dwu", gwu, wwu, Fe * C, 2e-6);
    same("moe_expert_bwd_weight dwd", gwd, wwd, C * Fe, 2e-6);
    end();
  }
  /* ---- the cuBLAS calls' arguments, replayed through CBLAS's column-major sgemm ---- */
  {
    enum { M = 7, Nn = 5, K = 3 };
    float *x = rnd(M * K, 1), *w = rnd(Nn * K, 1), *dy = rnd(M * Nn, 1), *b = rnd(Nn, 1);
    float g[M * Nn > M * K ? M * Nn : M * K], want[M * Nn > M * K ? M * Nn : M * K];
    const struct {
      const char *name;
      prt_gemm gemm;
      int64_t n;
    } cases[] = {{"linear_fwd", prt_gemm_linear_fwd(g, x, w, M, Nn, K, 0.0f), M * Nn},
                 {"linear_fwd_bias", prt_gemm_linear_fwd(g, x, w, M, Nn, K, 1.0f), M * Nn},
                 {"linear_bwd_input", prt_gemm_linear_bwd_input(g, dy, w, M, Nn, K), M * K},
                 {"linear_bwd_weight", prt_gemm_linear_bwd_weight(g, dy, x, M, Nn, K), Nn * K}};
    for (int c = 0; c < 4; c++) {
      begin_on("cublas_args", cases[c].name);
      prt_gemm a = cases[c].gemm;
      for (int64_t i = 0; i < M * Nn; i++) g[i] = b[i % Nn]; /* the bias rows (beta 1) */
      cblas_sgemm(CblasColMajor, a.transA ? CblasTrans : CblasNoTrans,
                  a.transB ? CblasTrans : CblasNoTrans, (int)a.m, (int)a.n, (int)a.k, 1.0f,
                  a.A, (int)a.lda, a.B, (int)a.ldb, a.beta, a.C, (int)a.ldc);
      if (c == 0) prt_linear_fwd(want, x, w, NULL, M, Nn, K);
      if (c == 1) prt_linear_fwd(want, x, w, b, M, Nn, K);
      if (c == 2) prt_linear_bwd_input(want, dy, w, M, Nn, K);
      if (c == 3) prt_linear_bwd_weight(want, dy, x, M, Nn, K);
      same(cases[c].name, g, want, cases[c].n, 1e-6);
      end();
    }
  }
  checkBf16();
  kernelJitDestroy(jit);
  emuFreeArrays();
  printf("%d failed\n", failures);
  return failures;
}
