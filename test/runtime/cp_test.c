/* prt-cp-test: the ring attention kernels of context parallelism (runtime/cp_attention.c) on
 * real ranks, against the single-rank blocked kernels on the full sequence.
 *
 *   mpirun -np G prt-cp-test      (G >= 2; every rank is one member of the ring)
 *
 * Every rank builds the same full q, k, v, dout (one seed), runs the single-device kernels
 * (prt_gqa_attention_fwd/bwd, prt_attention_fwd/bwd) over all T = 2Gc rows, takes its own two
 * chunks (r and 2G-1-r, cut here by their own arithmetic, not by prt_cp_position), runs the
 * ring over the world and compares out, lse, dq, dk, dv row by row. Tolerance: |got - want|
 * <= 2e-5 + 1e-4 |want|: the ring adds the same fp32 terms in another order (the keys arrive
 * chunk by chunk), so they differ by rounding only (~1e-6 seen); a wrong mask, position or
 * merge is off by O(1e-2) or more.
 *
 * Each check prints "@name" then "ok" from rank 0 after every rank agreed it passed; a rank
 * that fails prints "FAIL (rank k): <detail>"; the exit code is the failure count. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpi_check.h"
#include "prt_attention.h"
#include "prt_internal.h"

static int64_t W; /* world size; R (this rank) is mpi_check.h's */

static uint64_t rng_state;

static float *rand_vec(int64_t n, float scale) { /* uniform in [-scale, scale) */
  float *v = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    v[i] = scale * (float)((double)(rng_state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
  }
  return v;
}

/* The full row of local row t of member r: chunk r, then chunk 2G-1-r, c rows each. */
static int64_t full_row(int64_t r, int64_t c, int64_t t) {
  return t < c ? r * c + t : (2 * W - 1 - r) * c + t - c;
}

/* local(B, 2c, w) = this rank's rows of full(B, T, w), both of row stride w. */
static float *local_rows(const float *full, int64_t B, int64_t c, int64_t w) {
  int64_t T = 2 * W * c, Tl = 2 * c;
  float *x = malloc((size_t)(B * Tl * w) * sizeof(float));
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < Tl; t++)
      memcpy(x + (b * Tl + t) * w, full + (b * T + full_row(R, c, t)) * w,
             (size_t)w * sizeof(float));
  return x;
}

/* Compares the local rows `got` (B, 2c, w) with this rank's rows of `full` (B, T, w). */
static void close_rows(const char *what, const float *got, const float *full, int64_t B,
                       int64_t c, int64_t w) {
  float *want = local_rows(full, B, c, w);
  for (int64_t i = 0; i < B * 2 * c * w; i++)
    if (!(fabsf(got[i] - want[i]) <= 2e-5f + 1e-4f * fabsf(want[i]))) {
      fail("%s[row %lld, col %lld]: ring %.9g, one device %.9g", what,
           (long long)(i / w), (long long)(i % w), got[i], want[i]);
      break;
    }
  free(want);
}

/* A context of the world as group 0 and each rank alone as group 1 + rank (a ring of one),
 * communicators created. */
static prt_ctx *ring_ctx(void) {
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  prt_declare_group_range(ctx, 0, W, 0, 1);
  for (int64_t r = 0; r < W; r++) prt_declare_group_range(ctx, 1 + r, 1, r, 1);
  prt_declare_stream(ctx, 1, "cp");
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  return ctx;
}

/* Grouped-query attention (H 4 over KV 2, D 8) with chunks of c rows, B 2. */
static void check_gqa(prt_ctx *ctx, int64_t c) {
  int64_t B = 2, H = 4, KV = 2, D = 8, T = 2 * W * c, Tl = 2 * c, nq = H * D, nk = KV * D;
  rng_state = 1234 + (uint64_t)c;
  float *q = rand_vec(B * T * nq, 1.5f), *k = rand_vec(B * T * nk, 1.5f);
  float *v = rand_vec(B * T * nk, 1), *dout = rand_vec(B * T * nq, 1);
  float *out = malloc((size_t)(B * T * nq) * sizeof(float));
  float *lse = malloc((size_t)(B * H * T) * sizeof(float));
  float *dq = malloc((size_t)(B * T * nq) * sizeof(float));
  float *dk = malloc((size_t)(B * T * nk) * sizeof(float));
  float *dv = malloc((size_t)(B * T * nk) * sizeof(float));
  prt_gqa_attention_fwd(out, lse, q, k, v, B, T, H, KV, D);
  prt_gqa_attention_bwd(dq, dk, dv, dout, q, k, v, out, lse, B, T, H, KV, D);

  float *lq = local_rows(q, B, c, nq), *lk = local_rows(k, B, c, nk);
  float *lv = local_rows(v, B, c, nk), *ldo = local_rows(dout, B, c, nq);
  float *lout = malloc((size_t)(B * Tl * nq) * sizeof(float));
  float *llse = malloc((size_t)(B * H * Tl) * sizeof(float));
  float *ldq = malloc((size_t)(B * Tl * nq) * sizeof(float));
  float *ldk = malloc((size_t)(B * Tl * nk) * sizeof(float));
  float *ldv = malloc((size_t)(B * Tl * nk) * sizeof(float));
  prt_ring_gqa_attention_fwd(ctx, lout, llse, lq, lk, lv, B, Tl, H, KV, D, 0, 50);
  prt_ring_gqa_attention_bwd(ctx, ldq, ldk, ldv, ldo, lout, lq, lk, lv, llse, B, Tl, H, KV, D,
                             0, 50);
  close_rows("out", lout, out, B, c, nq);
  /* lse is (B, H, T): per (b, h) the rows of a sequence, width 1 */
  close_rows("lse", llse, lse, B * H, c, 1);
  close_rows("dq", ldq, dq, B, c, nq);
  close_rows("dk", ldk, dk, B, c, nk);
  close_rows("dv", ldv, dv, B, c, nk);
  float *all[] = {q, k, v, dout, out, lse, dq, dk, dv, lq, lk, lv, ldo, lout, llse, ldq, ldk,
                  ldv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* A ring of one member (G = 1: chunks 0 and 1, the whole sequence of 2c rows, no transfer)
 * against the single-device kernels: GQA with B 2, H 4 over KV 2, D 8. */
static void check_alone(prt_ctx *ctx, int64_t c) {
  int64_t B = 2, H = 4, KV = 2, D = 8, T = 2 * c, nq = H * D, nk = KV * D;
  rng_state = 77 + (uint64_t)c;
  float *q = rand_vec(B * T * nq, 1.5f), *k = rand_vec(B * T * nk, 1.5f);
  float *v = rand_vec(B * T * nk, 1), *dout = rand_vec(B * T * nq, 1);
  float *o[2], *l[2], *dq[2], *dk[2], *dv[2]; /* [0] one device, [1] the ring of one */
  for (int i = 0; i < 2; i++) {
    o[i] = malloc((size_t)(B * T * nq) * sizeof(float));
    l[i] = malloc((size_t)(B * H * T) * sizeof(float));
    dq[i] = malloc((size_t)(B * T * nq) * sizeof(float));
    dk[i] = malloc((size_t)(B * T * nk) * sizeof(float));
    dv[i] = malloc((size_t)(B * T * nk) * sizeof(float));
  }
  prt_gqa_attention_fwd(o[0], l[0], q, k, v, B, T, H, KV, D);
  prt_gqa_attention_bwd(dq[0], dk[0], dv[0], dout, q, k, v, o[0], l[0], B, T, H, KV, D);
  prt_ring_gqa_attention_fwd(ctx, o[1], l[1], q, k, v, B, T, H, KV, D, 1 + R, 70);
  prt_ring_gqa_attention_bwd(ctx, dq[1], dk[1], dv[1], dout, o[1], q, k, v, l[1], B, T, H, KV,
                             D, 1 + R, 70);
  const struct { const char *what; float *got, *want; int64_t n; } cmp[] = {
      {"alone out", o[1], o[0], B * T * nq}, {"alone lse", l[1], l[0], B * H * T},
      {"alone dq", dq[1], dq[0], B * T * nq}, {"alone dk", dk[1], dk[0], B * T * nk},
      {"alone dv", dv[1], dv[0], B * T * nk}};
  for (size_t j = 0; j < sizeof cmp / sizeof *cmp; j++)
    for (int64_t i = 0; i < cmp[j].n; i++)
      if (!(fabsf(cmp[j].got[i] - cmp[j].want[i]) <= 2e-5f + 1e-4f * fabsf(cmp[j].want[i]))) {
        fail("%s[%lld]: ring of one %.9g, one device %.9g", cmp[j].what, (long long)i,
             cmp[j].got[i], cmp[j].want[i]);
        break;
      }
  for (int i = 0; i < 2; i++) free(o[i]), free(l[i]), free(dq[i]), free(dk[i]), free(dv[i]);
  free(q), free(k), free(v), free(dout);
}

/* GPT's packed qkv (C 32, H 2) with chunks of c rows, B 1. */
static void check_packed(prt_ctx *ctx, int64_t c) {
  int64_t B = 1, C = 32, H = 2, T = 2 * W * c, Tl = 2 * c;
  rng_state = 99 + (uint64_t)c;
  float *qkv = rand_vec(B * T * 3 * C, 1.5f), *dout = rand_vec(B * T * C, 1);
  float *out = malloc((size_t)(B * T * C) * sizeof(float));
  float *lse = malloc((size_t)(B * H * T) * sizeof(float));
  float *dqkv = malloc((size_t)(B * T * 3 * C) * sizeof(float));
  prt_attention_fwd(out, lse, qkv, B, T, C, H);
  prt_attention_bwd(dqkv, dout, qkv, out, lse, B, T, C, H);
  float *lqkv = local_rows(qkv, B, c, 3 * C), *ldo = local_rows(dout, B, c, C);
  float *lout = malloc((size_t)(B * Tl * C) * sizeof(float));
  float *llse = malloc((size_t)(B * H * Tl) * sizeof(float));
  float *ldqkv = malloc((size_t)(B * Tl * 3 * C) * sizeof(float));
  prt_ring_attention_fwd(ctx, lout, llse, lqkv, B, Tl, C, H, 0, 60);
  prt_ring_attention_bwd(ctx, ldqkv, ldo, lout, lqkv, llse, B, Tl, C, H, 0, 60);
  close_rows("out", lout, out, B, c, C);
  close_rows("lse", llse, lse, B * H, c, 1);
  close_rows("dqkv", ldqkv, dqkv, B, c, 3 * C);
  float *all[] = {qkv, dout, out, lse, dqkv, lqkv, ldo, lout, llse, ldqkv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

/* prt_cp_position agrees with the layout above, and causal load balancing holds: every
 * member's queries see the same number of keys (sum over its rows of position + 1). */
static void check_layout(int64_t c) {
  int64_t mine = 0;
  for (int64_t t = 0; t < 2 * c; t++) {
    int64_t p = prt_cp_position(R, W, c, t);
    if (p != full_row(R, c, t)) fail("prt_cp_position(%lld) = %lld", (long long)t, (long long)p);
    mine += p + 1;
  }
  int64_t most = mine, least = -mine;
  prt_comm_allreduce_i64(&most, 1, PRT_REDUCE_MAX);
  prt_comm_allreduce_i64(&least, 1, PRT_REDUCE_MAX);
  if (most != -least) fail("visible pairs differ over members: %lld to %lld", (long long)-least,
                           (long long)most);
}

int main(int argc, char **argv) {
  int owner = prt_comm_init(&argc, &argv);
  R = prt_comm_rank();
  W = prt_comm_size();
  if (W < 2) {
    fprintf(stderr, "prt-cp-test: run it under mpirun -np 2 or more\n");
    if (owner) prt_comm_finalize();
    return 100;
  }
  prt_ctx *ctx = ring_ctx();
  begin("layout");
  check_layout(37);
  end();
  /* chunks shorter than a block, and longer (partial blocks, a cut diagonal) */
  begin("ring_gqa");
  check_gqa(ctx, 5);
  check_gqa(ctx, 70);
  end();
  begin("ring_alone");
  check_alone(ctx, 45);
  end();
  begin("ring_packed");
  check_packed(ctx, 3);
  check_packed(ctx, 67);
  end();
  prt_ctx_destroy(ctx);
  if (R == 0) printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
  fflush(stdout);
  if (owner) prt_comm_finalize();
  return failures;
}
