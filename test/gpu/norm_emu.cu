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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "kernels/cuda_norms.cuh"
#include "lanes_emu.h"
#include "piper/runtime.h"

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
  float eps, *out, *mean, *rstd;
  const float *x, *w, *b, *dy;
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
  Job job = {0, 0, 0, C, 1e-5f, g, gm, gr, x, w, b, dy};
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

int main() {
  pthread_barrier_init(&lanes_barrier, NULL, WARP);
  for (int warp = 0; warp < 2; warp++) {
    check(3, 20, warp);  // fewer elements than lanes: lanes past C add nothing
    check(5, 100, warp); // not a multiple of 32
    check(2, 768, warp); // the GPT's width
  }
  printf("%d failed\n", failures);
  return failures;
}
