// The GPU norms' math, checked without a GPU: the row functions of
// runtime/kernels/cuda_norms.cuh (what kernels/cuda_norms.cu runs, a warp a row) on the host,
// against the CPU kernels (runtime/kernels/cpu.c prt_layernorm_fwd/bwd, cpu_qwen3.c
// prt_rmsnorm_fwd/bwd: the oracles the CPU path is checked against PyTorch with): once with
// one lane a row, and once with 32 lanes a row run as threads in lock step (each exchange a
// barrier), the GPU's split of a row's elements over a warp. Widths below, at and above a
// warp, not multiples of 32, and the GPT's 768. What this does not check: the shuffles
// themselves and the launch geometry, which only a GPU runs.
// Tolerance: one lane sums a row in the CPU's order, so it must give the CPU's bits (0); 32
// lanes add 32 f64 partial sums in another order, which changes a sum rounded to f32 only
// when it sits on a rounding boundary: 1e-7 of the output's max (measured: 0).
// bf16 (@..._bf16): x, dy, y and dx in bf16 (the rows' own loads and stores,
// kernels/cuda_fp.cuh), one lane a row, give the bits of the sequence they replace: the
// operands widened, the CPU kernel, its result narrowed (runtime/kernels/cpu_bf16.c); 0.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "kernels/cuda_norms.cuh"
#include "lanes_emu.h"
#include "piper/runtime.h"
#include "prt_internal.h"

// ---- W lanes as W threads in lock step: the GPU's warp, for the row functions ----
static pthread_barrier_t lanes_barrier;
static double lane_vals[WARP];
static thread_local int my_lane;

// The lanes' sum, in lane order (the GPU adds them in a butterfly: another order, as here).
double prt_norm_lanes_sum(double s) {
  lane_vals[my_lane] = s;
  pthread_barrier_wait(&lanes_barrier);
  double r = 0.0;
  for (int l = 0; l < WARP; l++) r += lane_vals[l];
  pthread_barrier_wait(&lanes_barrier);
  return r;
}

// One row's work for kernel k: 0 layernorm forward, 1 its dx, 2 rmsnorm forward, 3 its dx.
struct Job {
  int kernel, lane;
  int64_t row, C;
  float eps;
  prt_fp_out out;
  float *mean, *rstd;
  prt_fp_in x;
  const float *w, *b;
  prt_fp_in dy;
};

template <int W> static void run_row(const Job &j) {
  switch (j.kernel) {
  case 0: layernorm_fwd_row<W>(j.row, j.lane, j.out, j.mean, j.rstd, j.x, j.w, j.b, j.C, j.eps); break;
  case 1: layernorm_dx_row<W>(j.row, j.lane, j.out, j.dy, j.x, j.w, j.mean, j.rstd, j.C); break;
  case 2: rmsnorm_fwd_row<W>(j.row, j.lane, j.out, j.rstd, j.x, j.w, j.C, j.eps); break;
  default: rmsnorm_dx_row<W>(j.row, j.lane, j.out, j.dy, j.x, j.w, j.rstd, j.C); break;
  }
}

static void *run_lane(void *arg) {
  Job *j = (Job *)arg;
  my_lane = j->lane;
  run_row<WARP>(*j);
  return NULL;
}

// Runs job's kernel on every row: with 32 lanes (threads) a row, or one lane.
static void run(Job job, int64_t rows, bool warp) {
  for (int64_t row = 0; row < rows; row++) {
    job.row = row;
    if (!warp) {
      run_row<1>(job);
      continue;
    }
    Job lanes[WARP];
    for (int l = 0; l < WARP; l++) {
      lanes[l] = job;
      lanes[l].lane = l;
    }
    lanes_run(run_lane, lanes);
  }
}

static float *rnd(int64_t n, float scale) {
  float *p = (float *)malloc((size_t)n * sizeof *p);
  for (int64_t i = 0; i < n; i++) p[i] = scale * uni();
  return p;
}

static void check(int64_t N, int64_t C, bool warp) {
  printf("@N%lld_C%lld_%s\n", (long long)N, (long long)C, warp ? "warp" : "lane");
  double tol = warp ? 1e-7 : 0.0;
  int64_t n = N * C;
  float *x = rnd(n, 2), *dy = rnd(n, 1), *w = rnd(C, 1), *b = rnd(C, 1);
  x[0] += 3.0f; /* a row whose mean is off zero */
  float *g = (float *)calloc(n, 4), *want = (float *)calloc(n, 4);
  float *gm = (float *)calloc(N, 4), *gr = (float *)calloc(N, 4);
  float *wm = (float *)calloc(N, 4), *wr = (float *)calloc(N, 4);
  float *dw = (float *)calloc(C, 4), *db = (float *)calloc(C, 4);
  Job job = {0, 0, 0, C, 1e-5f, {g, 0}, gm, gr, {x, 0}, w, b, {dy, 0}};
  run(job, N, warp);
  prt_layernorm_fwd(want, wm, wr, x, w, b, N, C, 1e-5f);
  same("layernorm_fwd y", g, want, n, tol);
  same("layernorm_fwd mean", gm, wm, N, tol);
  same("layernorm_fwd rstd", gr, wr, N, tol);
  job.kernel = 1, job.mean = wm, job.rstd = wr; /* the CPU's saved statistics */
  run(job, N, warp);
  prt_layernorm_bwd(want, dw, db, dy, x, w, wm, wr, N, C);
  same("layernorm_bwd dx", g, want, n, tol);
  job.kernel = 2, job.rstd = gr, job.eps = 1e-6f;
  run(job, N, warp);
  prt_rmsnorm_fwd(want, wr, x, w, N, C, 1e-6f);
  same("rmsnorm_fwd y", g, want, n, tol);
  same("rmsnorm_fwd rstd", gr, wr, N, tol);
  job.kernel = 3, job.rstd = wr;
  run(job, N, warp);
  prt_rmsnorm_bwd(want, dw, dy, x, w, wr, N, C);
  same("rmsnorm_bwd dx", g, want, n, tol);
  free(x); free(dy); free(w); free(b); free(g); free(want); free(gm); free(gr); free(wm);
  free(wr); free(dw); free(db);
}

// The rows on bf16 x, dy and results, one lane a row, against widen, CPU kernel, narrow.
static void check_bf16(int64_t N, int64_t C) {
  printf("@N%lld_C%lld_bf16\n", (long long)N, (long long)C);
  int64_t n = N * C;
  float *x = rnd(n, 2), *dy = rnd(n, 1), *w = rnd(C, 1), *b = rnd(C, 1);
  x[0] += 3.0f;
  uint16_t *x16 = (uint16_t *)calloc(n, 2), *dy16 = (uint16_t *)calloc(n, 2);
  uint16_t *g16 = (uint16_t *)calloc(n, 2), *want16 = (uint16_t *)calloc(n, 2);
  prt_bf16_narrow(x16, x, n);
  prt_bf16_narrow(dy16, dy, n);
  prt_bf16_widen(x, x16, n); /* the values the bf16 operands stand for */
  prt_bf16_widen(dy, dy16, n);
  float *want = (float *)calloc(n, 4), *gm = (float *)calloc(N, 4), *gr = (float *)calloc(N, 4);
  float *wm = (float *)calloc(N, 4), *wr = (float *)calloc(N, 4);
  float *dw = (float *)calloc(C, 4), *db = (float *)calloc(C, 4);
  Job job = {0, 0, 0, C, 1e-5f, {g16, 1}, gm, gr, {x16, 1}, w, b, {dy16, 1}};
  run(job, N, false);
  prt_layernorm_fwd(want, wm, wr, x, w, b, N, C, 1e-5f);
  prt_bf16_narrow(want16, want, n);
  sameBits("layernorm_fwd y bf16", g16, want16, n, 2);
  same("layernorm_fwd rstd", gr, wr, N, 0);
  job.kernel = 1, job.mean = wm, job.rstd = wr;
  run(job, N, false);
  prt_layernorm_bwd(want, dw, db, dy, x, w, wm, wr, N, C);
  prt_bf16_narrow(want16, want, n);
  sameBits("layernorm_bwd dx bf16", g16, want16, n, 2);
  job.kernel = 2, job.rstd = gr, job.eps = 1e-6f;
  run(job, N, false);
  prt_rmsnorm_fwd(want, wr, x, w, N, C, 1e-6f);
  prt_bf16_narrow(want16, want, n);
  sameBits("rmsnorm_fwd y bf16", g16, want16, n, 2);
  job.kernel = 3, job.rstd = wr;
  run(job, N, false);
  prt_rmsnorm_bwd(want, dw, dy, x, w, wr, N, C);
  prt_bf16_narrow(want16, want, n);
  sameBits("rmsnorm_bwd dx bf16", g16, want16, n, 2);
  free(x); free(dy); free(w); free(b); free(x16); free(dy16); free(g16); free(want16);
  free(want); free(gm); free(gr); free(wm); free(wr); free(dw); free(db);
}

int main() {
  pthread_barrier_init(&lanes_barrier, NULL, WARP);
  for (int warp = 0; warp < 2; warp++) {
    check(3, 20, warp);  // fewer elements than lanes: lanes past C add nothing
    check(5, 100, warp); // not a multiple of 32
    check(2, 768, warp); // the GPT's width
  }
  check_bf16(5, 100);
  check_bf16(2, 768);
  printf("%d failed\n", failures);
  return failures;
}
