// The GPU attention's math, checked without a GPU: the row functions of
// runtime/kernels/cuda_attention.cuh (the code the kernels run, one warp a row) run on the
// host with one lane doing a row's whole work, for every row, and must give what the CPU
// kernels give (runtime/kernels/cpu.c: the full T x T probabilities by sgemm; the oracle the
// CPU path is checked against PyTorch with): once with one lane per row, and once with 32
// lanes per row run as threads in lock step (each exchange a barrier), the GPU's split of
// keys and head elements over a warp. What this does not check: the shuffle instructions
// themselves and the launch geometry, which only a GPU runs.
// Tolerance: max |GPU - CPU| / max |CPU| <= 2e-6 per output (the online softmax and the
// recomputed probabilities sum in another order than sgemm; measured ~1e-7).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "kernels/cuda.h"
#include "kernels/cuda_attention.cuh"
#include "lanes_emu.h"
#include "piper/runtime.h"

// ---- W lanes as W threads in lock step: the GPU's warp, for the row functions ----
// Every lane reaches each exchange in the same order (as on the GPU, where the shuffles need
// the whole warp); a barrier publishes the lanes' values, each lane computes the result, a
// second barrier keeps the values until every lane has read them.
static pthread_barrier_t lanes_barrier;
static float lane_vals[WARP];
static thread_local int my_lane;

float prt_attn_lanes_exchange(float v, int op, int src) {
  lane_vals[my_lane] = v;
  pthread_barrier_wait(&lanes_barrier);
  float r = op == 2 ? lane_vals[src] : op == 1 ? -INFINITY : 0.0f;
  if (op == 0)
    for (int l = 0; l < WARP; l++) r += lane_vals[l];
  if (op == 1)
    for (int l = 0; l < WARP; l++) r = fmaxf(r, lane_vals[l]);
  pthread_barrier_wait(&lanes_barrier);
  return r;
}

// The rows' tensor arguments, fp32 here (kernels/cuda_fp.cuh: the fake runtime's and
// norm_emu's checks cover bf16 loads and stores)
static prt_fp_in I(const float *p) { return prt_fp_in{p, 0}; }
static prt_fp_out O(float *p) { return prt_fp_out{p, 0}; }

// What one row's lanes run: kernel k (0 forward, 1 dq, 2 dk/dv) on `row`.
struct RowJob {
  int kernel;
  int64_t row, T, C, H;
  float scale, *out, *lse, *dqkv, *D, *buf;
  const float *qkv, *dout;
  int lane;
};
enum { RW = 4 }; // the GPU's registers per lane: PRT_CUDA_ATTENTION_MAX_HEAD / 32

static void *run_lane(void *arg) {
  RowJob *j = (RowJob *)arg;
  my_lane = j->lane;
  if (j->kernel == 0)
    attention_fwd_row<WARP, RW>(j->row, j->lane, O(j->out), j->lse, I(j->qkv), j->T, j->C,
                                j->H, j->scale, j->buf);
  else if (j->kernel == 1)
    attention_bwd_dq_row<WARP, RW>(j->row, j->lane, O(j->dqkv), j->D, I(j->dout), I(j->qkv),
                                   j->lse, j->T, j->C, j->H, j->scale, j->buf);
  else
    attention_bwd_dkdv_row<WARP, RW>(j->row, j->lane, O(j->dqkv), j->D, I(j->dout), I(j->qkv),
                                     j->lse, j->T, j->C, j->H, j->scale, j->buf);
  return NULL;
}

// Runs kernel k on every row with WARP lanes (threads) each.
static void run_warp(RowJob job, int64_t rows) {
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD]; // the warp's shared memory
  job.buf = buf;
  for (int64_t row = 0; row < rows; row++) {
    RowJob lanes[WARP];
    for (int l = 0; l < WARP; l++) {
      lanes[l] = job;
      lanes[l].row = row;
      lanes[l].lane = l;
    }
    lanes_run(run_lane, lanes);
  }
}

// R: the lane holds a whole head (the kernels' largest, PRT_CUDA_ATTENTION_MAX_HEAD)
enum { R = 128 };

static void check(int64_t B, int64_t T, int64_t C, int64_t H, bool warp) {
  printf("@B%lld_T%lld_C%lld_H%lld_%s\n", (long long)B, (long long)T, (long long)C,
         (long long)H, warp ? "warp" : "lane");
  int64_t n3 = B * T * 3 * C, n = B * T * C, rows = B * H * T;
  float scale = 1.0f / sqrtf((float)(C / H));
  float *qkv = (float *)malloc(n3 * 4), *dout = (float *)malloc(n * 4);
  for (int64_t i = 0; i < n3; i++) qkv[i] = 2.0f * uni();
  for (int64_t i = 0; i < n; i++) dout[i] = uni();
  float *out = (float *)calloc(n, 4), *lse = (float *)calloc(rows, 4);
  float *D = (float *)calloc(rows, 4);
  float *dqkv = (float *)calloc(n3, 4);
  if (warp) { /* 32 lanes in lock step, as a warp */
    RowJob job = {0, 0, T, C, H, scale, out, lse, dqkv, D, NULL, qkv, dout, 0};
    for (int k = 0; k < 3; k++) {
      job.kernel = k;
      run_warp(job, rows);
    }
  } else { /* one lane a row */
    float buf[2 * R]; /* the row's staged vectors (a warp's shared memory on the GPU) */
    for (int64_t row = 0; row < rows; row++)
      attention_fwd_row<1, R>(row, 0, O(out), lse, I(qkv), T, C, H, scale, buf);
    for (int64_t row = 0; row < rows; row++)
      attention_bwd_dq_row<1, R>(row, 0, O(dqkv), D, I(dout), I(qkv), lse, T, C, H, scale, buf);
    for (int64_t row = 0; row < rows; row++)
      attention_bwd_dkdv_row<1, R>(row, 0, O(dqkv), D, I(dout), I(qkv), lse, T, C, H, scale,
                                   buf);
  }
  float *wout = (float *)calloc(n, 4), *probs = (float *)calloc(B * H * T * T, 4);
  float *wd = (float *)calloc(n3, 4);
  prt_attention_fwd(wout, probs, qkv, B, T, C, H);
  prt_attention_bwd(wd, dout, qkv, wout, probs, B, T, C, H);
  same("out", out, wout, n, 2e-6);
  // lse against the CPU's: its blocked kernels keep the same (B, H, T) log-sum-exps in the
  // first B*H*T floats of the probs result
  same("lse", lse, probs, rows, 2e-6);
  // dq, dk, dv: the q, k and v thirds of each row of dqkv
  for (int part = 0; part < 3; part++) {
    float *g = (float *)malloc(n * 4), *w = (float *)malloc(n * 4);
    for (int64_t bt = 0; bt < B * T; bt++)
      for (int64_t c = 0; c < C; c++) {
        g[bt * C + c] = dqkv[bt * 3 * C + part * C + c];
        w[bt * C + c] = wd[bt * 3 * C + part * C + c];
      }
    same(part == 0 ? "dq" : part == 1 ? "dk" : "dv", g, w, n, 2e-6);
    free(g);
    free(w);
  }
  free(qkv); free(dout); free(out); free(lse); free(D); free(dqkv); free(wout); free(probs);
  free(wd);
}

// ---- grouped-query attention (gqa_*_row) against prt_gqa_attention_* ----
struct GqaJob {
  int kernel; // 0 forward, 1 dq, 2 dk/dv
  int64_t row, T, H, KV, D;
  float scale, *out, *lse, *dq, *dk, *dv, *Dbuf, *buf;
  const float *q, *k, *v, *dout;
  int lane;
};

static void *run_gqa_lane(void *arg) {
  GqaJob *j = (GqaJob *)arg;
  my_lane = j->lane;
  if (j->kernel == 0)
    gqa_fwd_row<WARP, RW>(j->row, j->lane, O(j->out), j->lse, I(j->q), I(j->k), I(j->v), j->T,
                          j->H, j->KV, j->D, j->scale, j->buf);
  else if (j->kernel == 1)
    gqa_bwd_dq_row<WARP, RW>(j->row, j->lane, O(j->dq), j->Dbuf, I(j->dout), I(j->q), I(j->k),
                             I(j->v), j->lse, j->T, j->H, j->KV, j->D, j->scale, j->buf);
  else
    gqa_bwd_dkdv_row<WARP, RW>(j->row, j->lane, O(j->dk), O(j->dv), j->Dbuf, I(j->dout),
                               I(j->q), I(j->k), I(j->v), j->lse, j->T, j->H, j->KV, j->D,
                               j->scale, j->buf);
  return NULL;
}

// The GQA row functions over B x H x T query rows (B x KV x T key rows for dk/dv), with one
// lane a row or WARP lanes in lock step, against the CPU kernels (same tolerance).
static void check_gqa(int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D, bool warp) {
  printf("@gqa_B%lld_T%lld_H%lld_KV%lld_D%lld_%s\n", (long long)B, (long long)T, (long long)H,
         (long long)KV, (long long)D, warp ? "warp" : "lane");
  int64_t nq = B * T * H * D, nk = B * T * KV * D, rows = B * H * T, krows = B * KV * T;
  float scale = 1.0f / sqrtf((float)D);
  float *q = (float *)malloc(nq * 4), *k = (float *)malloc(nk * 4), *v = (float *)malloc(nk * 4);
  float *dout = (float *)malloc(nq * 4);
  for (int64_t i = 0; i < nq; i++) q[i] = 2.0f * uni();
  for (int64_t i = 0; i < nk; i++) k[i] = 2.0f * uni();
  for (int64_t i = 0; i < nk; i++) v[i] = 2.0f * uni();
  for (int64_t i = 0; i < nq; i++) dout[i] = uni();
  float *out = (float *)calloc(nq, 4), *lse = (float *)calloc(rows, 4);
  float *Dbuf = (float *)calloc(rows, 4), *dq = (float *)calloc(nq, 4);
  float *dk = (float *)calloc(nk, 4), *dv = (float *)calloc(nk, 4);
  float buf[2 * PRT_CUDA_ATTENTION_MAX_HEAD];
  GqaJob job = {0, 0, T, H, KV, D, scale, out, lse, dq, dk, dv, Dbuf, buf, q, k, v, dout, 0};
  for (int kern = 0; kern < 3; kern++) {
    int64_t n = kern == 2 ? krows : rows;
    for (int64_t row = 0; row < n; row++) {
      if (!warp) {
        if (kern == 0)
          gqa_fwd_row<1, R>(row, 0, O(out), lse, I(q), I(k), I(v), T, H, KV, D, scale, buf);
        else if (kern == 1)
          gqa_bwd_dq_row<1, R>(row, 0, O(dq), Dbuf, I(dout), I(q), I(k), I(v), lse, T, H, KV, D,
                               scale, buf);
        else
          gqa_bwd_dkdv_row<1, R>(row, 0, O(dk), O(dv), Dbuf, I(dout), I(q), I(k), I(v), lse, T,
                                 H, KV, D, scale, buf);
        continue;
      }
      GqaJob lanes[WARP];
      for (int l = 0; l < WARP; l++) {
        lanes[l] = job;
        lanes[l].kernel = kern;
        lanes[l].row = row;
        lanes[l].lane = l;
      }
      lanes_run(run_gqa_lane, lanes);
    }
  }
  float *wout = (float *)calloc(nq, 4), *probs = (float *)calloc(B * H * T * T, 4);
  float *wdq = (float *)calloc(nq, 4), *wdk = (float *)calloc(nk, 4), *wdv = (float *)calloc(nk, 4);
  prt_gqa_attention_fwd(wout, probs, q, k, v, B, T, H, KV, D);
  prt_gqa_attention_bwd(wdq, wdk, wdv, dout, q, k, v, wout, probs, B, T, H, KV, D);
  same("out", out, wout, nq, 2e-6);
  // lse against the CPU's (B, H, T) log-sum-exps
  same("lse", lse, probs, rows, 2e-6);
  same("dq", dq, wdq, nq, 2e-6);
  same("dk", dk, wdk, nk, 2e-6);
  same("dv", dv, wdv, nk, 2e-6);
  free(q); free(k); free(v); free(dout); free(out); free(lse); free(Dbuf); free(dq); free(dk);
  free(dv); free(wout); free(probs); free(wdq); free(wdk); free(wdv);
}

int main() {
  pthread_barrier_init(&lanes_barrier, NULL, WARP);
  for (int warp = 0; warp < 2; warp++) {
    check(2, 7, 24, 3, warp);   // head size 8: most of a lane's registers unused
    check(1, 33, 128, 2, warp); // head size 64, as the GPT's; T not a multiple of 32
    check(1, 5, 128, 1, warp);  // head size 128, the largest the kernels take
  }
  check(1, 70, 64, 1, true);    // three blocks of 32 keys, the last one partial
  for (int warp = 0; warp < 2; warp++) {
    check_gqa(2, 7, 4, 2, 8, warp);    // 2 query heads per kv head, head size 8
    check_gqa(1, 37, 6, 2, 64, warp);  // 3 per kv head; T past one block of 32 keys
    check_gqa(1, 5, 3, 3, 128, warp);  // KV = H (plain multi-head), the largest head
    check_gqa(2, 9, 4, 1, 16, warp);   // one kv head for all (multi-query)
  }
  printf("%d failed\n", failures);
  return failures;
}
