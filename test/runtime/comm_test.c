/* prt-comm-test: checks the MPI comm backend and multi-rank libpiper_rt, on real ranks.
 *
 *   mpirun -np N prt-comm-test             every check below, on N ranks (N >= 2)
 *   mpirun -np N prt-comm-test plan P ...  prt_main with plan P and the flags that follow
 *
 * Checks: every transfer (send/recv, all-reduce, reduce-scatter, all-gather, in place too)
 * against values computed here independently, on the whole world and on groups that are
 * strict subsets of it, with handles waited out of issue order; status agreement; the
 * step's loss reduction; checkpoint and gradient assembly from replicas, pipeline stages and
 * uneven shards, read back and compared with full tensors computed here on one rank; and the
 * errors a bad plan gets on every rank alike (gaps, shape disagreement, unobserved grads).
 * Transfers move small integers in fp32, so every sum is exact: the checks compare exactly.
 *
 * Each check prints "@name" then "ok" from rank 0, after every rank agreed it passed; a rank
 * that fails prints "FAIL (rank k): <detail>" and the exit code is the failure count.
 *
 * Plans, on a bigram model (logits = wte[tok] head^T, V 256, C 8, T 16, global batch 4):
 *   ref    one device, the whole batch (the single-rank reference)
 *   dp     data parallel on every rank: replicas, batch slices, all-reduced gradients
 *   zero   ZeRO-3: every parameter and its AdamW moments sharded over the world,
 *          parameters all-gathered for the step, gradients reduce-scattered, AdamW on the
 *          shard
 *   zero1d zero with its moments declared as 1-D slices without prt_declare_shard (plans
 *          compiled before optimizer shards were declared)
 *   pp     two pipeline stages x N/2 data-parallel replicas, two microbatches per replica:
 *          several "tokens"/"targets"/"loss" per rank, send/recv of activations, groups
 *   world3 declares 3 devices (for the world-size error)
 *   badwait  waits one handle twice (an ABI misuse: every rank must stop, none may hang)
 * comm.test compares dp, zero and pp with ref (losses, step-0 gradients, final checkpoint with
 * optimizer state), and runs resumed from one layout's checkpoint under another.
 */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpi_check.h"
#include "prt_internal.h"

static int64_t W; /* world size; R (this rank) is mpi_check.h's */
static char tmpdir[64];

/* ---- contexts ---- */

/* Groups of the transfer checks: 0 = the world, 1 = ranks 1..W-1, 2 = even ranks,
 * 3 = {W-1}; 1..3 are strict subsets. */
enum { G_ALL, G_TAIL, G_EVEN, G_LAST, NGROUPS };

static int64_t group_members(int g, int64_t *m) {
  int64_t n = 0;
  for (int64_t r = 0; r < W; r++)
    if (g == G_ALL || (g == G_TAIL && r >= 1) || (g == G_EVEN && r % 2 == 0) ||
        (g == G_LAST && r == W - 1))
      m[n++] = r;
  return n;
}

static int64_t group_index(int g) {
  int64_t m[64], n = group_members(g, m);
  for (int64_t k = 0; k < n; k++)
    if (m[k] == R) return k;
  return -1;
}

/* A context for transfers: the world and the groups above, communicators created. */
static prt_ctx *comm_ctx(void) {
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  for (int g = 0; g < NGROUPS; g++) {
    int64_t m[64], n = group_members(g, m);
    prt_declare_group(ctx, g, n, m);
  }
  prt_declare_stream(ctx, 1, "comm");
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  return ctx;
}

static void expect_eq(const char *what, const float *got, const float *want, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (got[i] != want[i]) {
      fail("%s[%lld] = %g, want %g", what, (long long)i, got[i], want[i]);
      return;
    }
}

/* ---- transfers ---- */

/* The transfer checks' buffers (N floats each) and their neighbours on the ring. */
enum { XFER_N = 1000 };
static float xa[XFER_N], xb[XFER_N], xc[XFER_N], xwant[XFER_N];

/* world: the ranks and the groups as the context sees them. */
static void test_world(prt_ctx *ctx) {
  begin("world");
  int64_t bits = (int64_t)1 << R, sum = bits;
  prt_comm_allreduce_i64(&sum, 1, PRT_REDUCE_SUM);
  if (prt_rank(ctx) != R || ctx->world != W || sum != ((int64_t)1 << W) - 1)
    fail("rank %lld of %lld, ranks' bits %llx", (long long)prt_rank(ctx),
         (long long)ctx->world, (unsigned long long)sum);
  for (int g = 0; g < NGROUPS; g++)
    if (ctx->groups[g].index != group_index(g)) fail("group %d index", g);
  end();
}

/* send_recv_ring: each rank sends to the next around the ring and receives from the
 * previous. */
static void test_send_recv_ring(prt_ctx *ctx) {
  begin("send_recv_ring");
  enum { N = XFER_N };
  float *a = xa, *b = xb, *want = xwant;
  int64_t next = (R + 1) % W, prev = (R + W - 1) % W;
  for (int i = 0; i < N; i++) a[i] = (float)(R * 10000 + i);
  int64_t hs = prt_isend(ctx, a, N, next, 7, 1);
  int64_t hr = prt_irecv(ctx, b, N, prev, 7, 1);
  prt_wait(ctx, hr);
  prt_wait(ctx, hs);
  for (int i = 0; i < N; i++) want[i] = (float)(prev * 10000 + i);
  expect_eq("received", b, want, N);
  end();
}

/* send_recv_tags_out_of_order: two messages to one peer, told apart by tag, waited out of
 * order. */
static void test_send_recv_tags_out_of_order(prt_ctx *ctx) {
  begin("send_recv_tags_out_of_order");
  enum { N = XFER_N };
  float *a = xa, *b = xb, *c = xc, *want = xwant;
  int64_t next = (R + 1) % W, prev = (R + W - 1) % W;
  /* two messages to the same peer; the receiver posts tag 2 first and waits tag 1 first */
  for (int i = 0; i < N; i++) a[i] = (float)(1000 + i), c[i] = (float)(2000 + i);
  int64_t s1 = prt_isend(ctx, a, N, next, 1, 1), s2 = prt_isend(ctx, c, 10, next, 2, 1);
  int64_t r2 = prt_irecv(ctx, want, 10, prev, 2, 1), r1 = prt_irecv(ctx, b, N, prev, 1, 1);
  prt_wait(ctx, r1);
  prt_wait(ctx, s2);
  prt_wait(ctx, r2);
  prt_wait(ctx, s1);
  expect_eq("tag 1", b, a, N);
  expect_eq("tag 2", want, c, 10);
  end();
}

/* all_reduce: sums over the world and over strict subsets of it. */
static void test_all_reduce(prt_ctx *ctx) {
  begin("all_reduce");
  enum { N = XFER_N };
  float *a = xa, *want = xwant;
  for (int g = 0; g < NGROUPS; g++) {
    if (group_index(g) < 0) continue; /* ranks outside a group skip it */
    int64_t m[64], n = group_members(g, m), msum = 0;
    for (int64_t k = 0; k < n; k++) msum += m[k] + 1;
    for (int i = 0; i < N; i++) a[i] = (float)((R + 1) * (i % 17));
    prt_wait(ctx, prt_iall_reduce(ctx, a, N, g, 1));
    for (int i = 0; i < N; i++) want[i] = (float)(msum * (i % 17));
    expect_eq(g == G_ALL ? "world sum" : "group sum", a, want, N);
  }
  prt_wait(ctx, prt_iall_reduce(ctx, a, 0, G_ALL, 1)); /* nothing to move is fine */
  end();
}

/* reduce_scatter: each member keeps its block of the sum, into another buffer and in
 * place. */
static void test_reduce_scatter(prt_ctx *ctx) {
  begin("reduce_scatter");
  float *a = xa, *b = xb, *c = xc, *want = xwant;
  for (int g = 0; g < NGROUPS; g++) {
    int64_t k = group_index(g);
    if (k < 0) continue;
    int64_t m[64], n = group_members(g, m);
    const int64_t n_out = 5;
    for (int64_t i = 0; i < n_out * n; i++) a[i] = (float)(R * 100 + i);
    prt_wait(ctx, prt_ireduce_scatter(ctx, a, b, n_out, g, 1));
    for (int64_t i = 0; i < n_out; i++) {
      want[i] = 0;
      for (int64_t j = 0; j < n; j++) want[i] += (float)(m[j] * 100 + k * n_out + i);
    }
    expect_eq("block", b, want, n_out);
    /* in place: in == out holds the whole input and gets the block at its start */
    for (int64_t i = 0; i < n_out * n; i++) c[i] = (float)(R * 100 + i);
    prt_wait(ctx, prt_ireduce_scatter(ctx, c, c, n_out, g, 1));
    expect_eq("block in place", c, want, n_out);
  }
  end();
}

/* all_gather: every member's block, into another buffer and in place. */
static void test_all_gather(prt_ctx *ctx) {
  begin("all_gather");
  float *a = xa, *b = xb, *c = xc, *want = xwant;
  for (int g = 0; g < NGROUPS; g++) {
    int64_t k = group_index(g);
    if (k < 0) continue;
    int64_t m[64], n = group_members(g, m);
    const int64_t n_in = 3;
    for (int64_t i = 0; i < n_in; i++) a[i] = (float)(R * 10 + i);
    prt_wait(ctx, prt_iall_gather(ctx, a, b, n_in, g, 1));
    for (int64_t j = 0; j < n; j++)
      for (int64_t i = 0; i < n_in; i++) want[j * n_in + i] = (float)(m[j] * 10 + i);
    expect_eq("gathered", b, want, n * n_in);
    /* in place: this member's block already sits in out */
    memset(c, 0, XFER_N * sizeof *c);
    memcpy(c + k * n_in, a, n_in * sizeof(float));
    prt_wait(ctx, prt_iall_gather(ctx, c + k * n_in, c, n_in, g, 1));
    expect_eq("gathered in place", c, want, n * n_in);
  }
  end();
}

/* handles_out_of_order: five transfers in flight at once, waited in reverse; slots reused
 * with a new generation. */
static void test_handles_out_of_order(prt_ctx *ctx) {
  begin("handles_out_of_order");
  enum { N = XFER_N };
  float *a = xa, *want = xwant;
  int64_t next = (R + 1) % W, prev = (R + W - 1) % W;
  /* five transfers in flight at once, waited in reverse; collectives are issued in the
   * same order on every member, as MPI requires, but may complete in any order */
  static float x[N], y[N], z[4 * 64], e[N];
  for (int i = 0; i < N; i++) x[i] = (float)(R + i), a[i] = (float)(R * 7 + i);
  float gin[4] = {(float)R, (float)R + 0.5f, (float)-R, 3};
  int64_t h[5], nh = 0;
  h[nh++] = prt_iall_reduce(ctx, x, N, G_ALL, 1);
  h[nh++] = prt_isend(ctx, a, N, next, 9, 2);
  h[nh++] = prt_irecv(ctx, y, N, prev, 9, 2);
  h[nh++] = prt_iall_gather(ctx, gin, z, 4, G_ALL, 1);
  int even = group_index(G_EVEN) >= 0;
  for (int i = 0; i < N; i++) e[i] = 1;
  if (even) h[nh++] = prt_iall_reduce(ctx, e, N, G_EVEN, 1);
  if (ctx->ops_busy != nh) fail("%lld transfers in flight, want %lld",
                                (long long)ctx->ops_busy, (long long)nh);
  while (nh > 0) prt_wait(ctx, h[--nh]);
  if (ctx->ops_busy != 0) fail("%lld transfers still in flight", (long long)ctx->ops_busy);
  for (int i = 0; i < N; i++) want[i] = (float)(W * (W - 1) / 2 + W * i);
  expect_eq("all_reduce", x, want, N);
  for (int i = 0; i < N; i++) want[i] = (float)(prev * 7 + i);
  expect_eq("recv", y, want, N);
  for (int64_t r = 0; r < W; r++) {
    float w4[4] = {(float)r, (float)r + 0.5f, (float)-r, 3};
    expect_eq("all_gather", z + 4 * r, w4, 4);
  }
  int64_t neven = (W + 1) / 2;
  for (int i = 0; even && i < N; i++)
    if (e[i] != (float)neven) fail("even all_reduce[%d] = %g, want %lld", i, e[i],
                                   (long long)neven);
  /* a slot is reused with a new generation: an old handle is not a new one */
  int64_t h1 = prt_iall_reduce(ctx, x, 1, G_ALL, 1);
  prt_wait(ctx, h1);
  int64_t h2 = prt_iall_reduce(ctx, x, 1, G_ALL, 1);
  if ((h1 & 0xffffffff) != (h2 & 0xffffffff) || h1 == h2)
    fail("handles %llx then %llx: a freed slot should be reused with a new generation",
         (unsigned long long)h1, (unsigned long long)h2);
  prt_wait(ctx, h2);
  end();
}

/* The transfer checks, in order, on one context over the world and its groups. */
static void test_transfers(void) {
  prt_ctx *ctx = comm_ctx();
  test_world(ctx);
  test_send_recv_ring(ctx);
  test_send_recv_tags_out_of_order(ctx);
  test_all_reduce(ctx);
  test_reduce_scatter(ctx);
  test_all_gather(ctx);
  test_handles_out_of_order(ctx);
  prt_ctx_destroy(ctx);
}

/* ---- bf16 sums (--grad-reduce bf16) ---- */

/* prt_iall_reduce_bf16 and prt_ireduce_scatter_bf16: small integers (exact in bf16) sum
 * exactly, like the fp32 collectives above; a tie is rounded to nearest even after each pair
 * (hand-derived: 1 + 2^-8 lies halfway between the bf16 values 1 and 1 + 2^-7 and rounds to 1,
 * where an fp32 sum of four ranks' 1, 2^-8, 2^-8, 2^-8 would give 1 + 2^-7 after one rounding);
 * and every member ends with the same sum. */
static void test_bf16_sums(void) {
  enum { N = 64 };
  uint16_t a[N], b[N];
  float got[N], want[N];
  prt_ctx *ctx = comm_ctx();
  begin("bf16_all_reduce");
  for (int g = 0; g < NGROUPS; g++) {
    if (group_index(g) < 0) continue;
    int64_t m[64], n = group_members(g, m), msum = 0;
    for (int64_t k = 0; k < n; k++) msum += m[k] + 1;
    for (int i = 0; i < N; i++) a[i] = prt_f32_to_bf16((float)((R + 1) * (i % 5)));
    prt_wait(ctx, prt_iall_reduce_bf16(ctx, a, N, g, 1));
    for (int i = 0; i < N; i++) got[i] = prt_bf16_to_f32(a[i]);
    for (int i = 0; i < N; i++) want[i] = (float)(msum * (i % 5)); /* <= 4 * 10: exact */
    expect_eq("bf16 sum", got, want, N);
  }
  /* the tie: rank 0 gives 1, every other rank 2^-8 */
  a[0] = prt_f32_to_bf16(R == 0 ? 1.0f : 0x1p-8f);
  prt_wait(ctx, prt_iall_reduce_bf16(ctx, a, 1, G_ALL, 1));
  float tie = prt_bf16_to_f32(a[0]);
  if (W == 2 && tie != 1.0f) fail("bf16 tie: 1 + 2^-8 gave %a, want 1 (nearest even)", tie);
  if (tie != 1.0f && tie != 1.0f + 0x1p-7f)
    fail("bf16 tie: 1 + %lld * 2^-8 gave %a, want 1 or 1 + 2^-7", (long long)(W - 1), tie);
  /* the same on every member: the fp32 sum of the members' results is W of them (exact) */
  float all = tie;
  prt_wait(ctx, prt_iall_reduce(ctx, &all, 1, G_ALL, 1));
  if (all != (float)W * tie) fail("bf16 sums differ between members: %a summed to %a", tie, all);
  end();
  begin("bf16_reduce_scatter");
  for (int g = 0; g < NGROUPS; g++) {
    int64_t k = group_index(g);
    if (k < 0) continue;
    int64_t m[64], n = group_members(g, m);
    const int64_t n_out = 5;
    for (int64_t i = 0; i < n_out * n; i++) a[i] = prt_f32_to_bf16((float)(R * 10 + i));
    prt_wait(ctx, prt_ireduce_scatter_bf16(ctx, a, b, n_out, g, 1));
    for (int64_t i = 0; i < n_out; i++) {
      got[i] = prt_bf16_to_f32(b[i]);
      want[i] = 0;
      for (int64_t j = 0; j < n; j++) want[i] += (float)(m[j] * 10 + k * n_out + i);
    }
    expect_eq("bf16 block", got, want, n_out); /* integers <= 4 * (30 + 19) < 256: exact */
  }
  end();
  prt_ctx_destroy(ctx);
}

/* ---- agreement and the loss ---- */

static void test_agreement(void) {
  begin("agree");
  prt_ctx *ctx = prt_ctx_create();
  prt_status st = {0};
  if (prt_agree(ctx, &st) != 0) fail("all ok, but agree says %d", st.code);
  if (R == W - 1) prt_fail(&st, 1, "boom on the last rank");
  if (prt_agree(ctx, &st) != 1) fail("one rank failed, agree says %d", st.code);
  if ((R == W - 1) != (strcmp(st.msg, "boom on the last rank") == 0))
    fail("message '%s' on the wrong rank", st.msg);
  /* two ranks fail: the lowest keeps its message, the other's goes quiet */
  st = (prt_status){0};
  if (R == 1) prt_fail(&st, 2, "first");
  if (R == W - 1 && W > 2) prt_fail(&st, 1, "second");
  if (prt_agree(ctx, &st) != 2) fail("codes 2 and 1 agreed as %d, want the largest", st.code);
  if ((R == 1) != (st.msg[0] != 0)) fail("message '%s' kept on rank %lld", st.msg,
                                         (long long)R);
  prt_ctx_destroy(ctx);
  end();

  begin("loss_reduce");
  /* rank r reports r + 1 losses of one row each with value r + 0.25, and the batch is the
   * sum of the rows: loss = sum_r (r + 1)(r + 0.25) / sum_r (r + 1) */
  ctx = prt_ctx_create();
  int64_t G = W * (W + 1) / 2;
  prt_declare_batch(ctx, G);
  for (int64_t k = 0; k <= R; k++)
    prt_declare_tensor(ctx, k, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 1);
  st = (prt_status){0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  for (int64_t k = 0; k <= R; k++) *(float *)prt_tensor(ctx, k) = (float)R + 0.25f;
  double want = 0;
  for (int64_t r = 0; r < W; r++) want += (double)(r + 1) * (r + 0.25);
  want /= (double)G;
  int stop = 1, sig = -1;
  double L = prt_dist_loss(ctx, 0, 0, &stop, &sig);
  if (fabs(L - want) > 1e-12 || stop) fail("loss %.17g (stop %d), want %.17g", L, stop, want);
  if (sig) fail("signal %d without one sent", sig);
  L = prt_dist_loss(ctx, R == W - 1, R == 0 ? SIGTERM : 0, &stop, &sig);
  if (!stop) fail("the last rank asked to stop, but rank %lld was not told", (long long)R);
  if (sig != SIGTERM) fail("rank 0 got SIGTERM, but rank %lld was told %d", (long long)R, sig);
  prt_ctx_destroy(ctx);
  end();
}

/* ---- checkpoint and gradient assembly ---- */

enum { SEED = 11 };

/* Rank r's piece of "shard" (21 elements): [bound(r), bound(r + 1)) with uneven lengths. */
static int64_t shard_bound(int64_t r) { return 21 * r * r / (W * W); }

/* The writer's declarations; values as described in expected_full. */
static prt_ctx *writer_ctx(void) {
  prt_ctx *ctx = prt_ctx_create();
  int64_t id = 0;
  char name[32];
  prt_declare_world(ctx, W);
  prt_declare_tensor(ctx, id++, "rep", PRT_PARAM, PRT_INIT_NORMAL, 2, 3, 5, 0, 0, 0);
  snprintf(name, sizeof name, "stage.%lld", (long long)R);
  prt_declare_tensor(ctx, id++, name, PRT_PARAM, PRT_INIT_NORMAL, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, id, "shard", PRT_PARAM, PRT_INIT_NORMAL, 2, 7, 3, 0, 0, 0);
  prt_declare_shard(ctx, id++, shard_bound(R), shard_bound(R + 1) - shard_bound(R), 21);
  prt_declare_tensor(ctx, id, "mixed", PRT_PARAM, PRT_INIT_ONES, 1, 10, 0, 0, 0, 0);
  if (R > 0) /* rank 0 holds it whole, the others overlapping slices */
    prt_declare_shard(ctx, id, 10 * (R - 1) / (W - 1), 10 * R / (W - 1) - 10 * (R - 1) / (W - 1),
                      10);
  id++;
  if (R > 0) { /* rank 1 [0, 12), rank 2 [6, 20), rank 3+ all; W = 2: rank 1 all */
    prt_declare_tensor(ctx, id, "patch", PRT_PARAM, PRT_INIT_ZEROS, 1, 20, 0, 0, 0, 0);
    if (W > 2 && R == 1) prt_declare_shard(ctx, id, 0, 12, 20);
    if (W > 2 && R == 2) prt_declare_shard(ctx, id, 6, 14, 20);
    id++;
  }
  prt_declare_tensor(ctx, id++, "optim.rep.m", PRT_OPTIM, 0, 2, 3, 5, 0, 0, 0);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  return ctx;
}

/* The full tensor `name` that assembly must produce (n elements), computed on this rank. */
static void expected_full(const char *name, float *out, int64_t n) {
  if (strcmp(name, "mixed") == 0) { /* rank 0's values win over the others' slices */
    for (int64_t g = 0; g < n; g++) out[g] = 0.5f + (float)g;
  } else if (strcmp(name, "patch") == 0) { /* the lowest holder of each element */
    for (int64_t g = 0; g < n; g++) {
      int64_t src = W == 2 ? 1 : g < 12 ? 1 : 2;
      out[g] = (float)(100 * src + g);
    }
  } else {
    prt_init_normal(out, n, SEED, name, 0.02);
  }
}

/* Sets the values expected_full describes, as each holder's own (so a wrong source shows). */
static void set_writer_values(prt_ctx *ctx) {
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    prt_tensor_info *t = &ctx->tensors[i];
    float *p = t->data;
    for (int64_t k = 0; k < t->numel; k++) {
      int64_t g = t->shard_offset + k;
      if (strcmp(t->name, "mixed") == 0) p[k] = R == 0 ? 0.5f + (float)g : (float)(1000 * R);
      if (strcmp(t->name, "patch") == 0) p[k] = (float)(100 * R + g);
    }
  }
}

/* A context declaring every parameter whole, on every rank (to read the file back). */
static prt_ctx *reader_ctx(int with_patch) {
  prt_ctx *ctx = prt_ctx_create();
  int64_t id = 0;
  char name[32];
  prt_declare_tensor(ctx, id++, "rep", PRT_PARAM, 0, 2, 3, 5, 0, 0, 0);
  for (int64_t r = 0; r < W; r++) {
    snprintf(name, sizeof name, "stage.%lld", (long long)r);
    prt_declare_tensor(ctx, id++, name, PRT_PARAM, 0, 1, 4, 0, 0, 0, 0);
  }
  prt_declare_tensor(ctx, id++, "shard", PRT_PARAM, 0, 2, 7, 3, 0, 0, 0);
  prt_declare_tensor(ctx, id++, "mixed", PRT_PARAM, 0, 1, 10, 0, 0, 0, 0);
  if (with_patch) prt_declare_tensor(ctx, id++, "patch", PRT_PARAM, 0, 1, 20, 0, 0, 0, 0);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  return ctx;
}

/* Every local parameter of ctx against expected(name), sliced to its piece. */
static void compare_local(prt_ctx *ctx, void (*expected)(const char *, float *, int64_t),
                          const char *what) {
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind != PRT_PARAM) continue;
    float *full = malloc((size_t)t->full_numel * sizeof *full);
    expected(t->name, full, t->full_numel);
    char label[96];
    snprintf(label, sizeof label, "%s '%s'", what, t->name);
    expect_eq(label, t->data, full + t->shard_offset, t->numel);
    free(full);
  }
}

/* shard_init: a sharded parameter draws its slice of what one device would draw for it.
 * Returns the writer context (writer_ctx) the next checks use. */
static prt_ctx *test_shard_init(void) {
  begin("shard_init");
  prt_ctx *wr = writer_ctx();
  prt_init_params(wr, SEED); /* shards draw their slice of the full tensor */
  float full[21];
  prt_init_normal(full, 21, SEED, "shard", 0.02);
  int64_t sid = prt_ctx_find(wr, "shard");
  if (wr->tensors[sid].numel != shard_bound(R + 1) - shard_bound(R))
    fail("shard storage %lld elements", (long long)wr->tensors[sid].numel);
  expect_eq("shard slice", prt_tensor(wr, sid), full + shard_bound(R),
            wr->tensors[sid].numel);
  end();
  return wr;
}

/* checkpoint_assembly: the writer's pieces saved to `path` read back whole on every rank, and
 * as each rank's own pieces again. */
static void test_checkpoint_assembly(prt_ctx *wr, const char *path) {
  begin("checkpoint_assembly");
  set_writer_values(wr);
  prt_status st = {0};
  prt_checkpoint_save(wr, path, -1, &st);
  if (prt_agree(wr, &st)) fail("save: %s", st.msg);
  prt_ctx *rd = reader_ctx(1); /* the whole file, on every rank */
  st = (prt_status){0};
  if (prt_checkpoint_load(rd, path, NULL, &st)) fail("load whole: %s", st.msg);
  compare_local(rd, expected_full, "whole");
  prt_ctx_destroy(rd);
  prt_ctx *back = writer_ctx(); /* and each rank's own pieces again */
  st = (prt_status){0};
  if (prt_checkpoint_load(back, path, NULL, &st)) fail("load pieces: %s", st.msg);
  compare_local(back, expected_full, "piece");
  prt_ctx_destroy(back);
  end();
}

/* checkpoint_load_errors: a file lacking a parameter some ranks hold (written to `gpath`),
 * and one (`path`) with a parameter no rank declares. */
static void test_checkpoint_load_errors(const char *path, const char *gpath) {
  begin("checkpoint_load_errors");
  /* a file lacking "patch" (held by ranks 1..): those ranks fail, naming it */
  prt_ctx *rd = reader_ctx(0);
  prt_init_params(rd, SEED);
  for (int64_t i = 0; i < rd->ntensors; i++) /* mixed as rank 0 holds it */
    if (strcmp(rd->tensors[i].name, "mixed") == 0) expected_full("mixed", rd->tensors[i].data, 10);
  prt_status st = {0};
  prt_checkpoint_save(rd, gpath, -1, &st);
  if (prt_agree(rd, &st)) fail("save without patch: %s", st.msg);
  prt_ctx_destroy(rd);
  prt_ctx *back = writer_ctx();
  st = (prt_status){0};
  int rc = prt_checkpoint_load(back, gpath, NULL, &st);
  if ((R > 0) != (rc != 0) || (R > 0 && !strstr(st.msg, "lacks parameter 'patch'")))
    fail("load of a file without 'patch': rc %d, '%s'", rc, st.msg);
  prt_ctx_destroy(back);
  /* a file with a parameter no rank declares: every rank fails, naming it */
  back = prt_ctx_create();
  prt_declare_tensor(back, 0, "rep", PRT_PARAM, 0, 2, 3, 5, 0, 0, 0);
  st = (prt_status){0};
  if (prt_ctx_allocate(back, &st) == 0 && prt_checkpoint_load(back, path, NULL, &st) == 0)
    fail("a file with parameters no rank declares was accepted");
  else if (!strstr(st.msg, "not a parameter of this model")) fail("message: %s", st.msg);
  prt_ctx_destroy(back);
  end();
}

/* grads_assembly: observed gradients assembled from the lowest rank that observed each
 * element, saved to `gpath` and read back; an unobserved one fails every rank alike. */
static void test_grads_assembly(prt_ctx *wr, const char *gpath) {
  begin("grads_assembly");
  /* "rep": ranks 1.. observe (10 r + i): rank 1's wins; "shard": every rank observes its
   * slice (2 g); "stage.r": each its own (r + i) */
  wr->dump_step = wr->step = 0;
  for (int64_t i = 0; i < wr->ntensors; i++) {
    prt_tensor_info *t = &wr->tensors[i];
    if (t->kind != PRT_PARAM) continue;
    float *g = malloc((size_t)t->numel * sizeof *g);
    for (int64_t k = 0; k < t->numel; k++) {
      int64_t e = t->shard_offset + k;
      g[k] = strcmp(t->name, "rep") == 0 ? (float)(10 * R + e)
             : strcmp(t->name, "shard") == 0 ? (float)(2 * e)
             : strncmp(t->name, "stage.", 6) == 0 ? (float)(R + e)
                                                  : (float)(e + 0.5f);
    }
    if (strcmp(t->name, "rep") != 0 || R > 0) prt_observe_grad(wr, i, g);
    free(g);
  }
  prt_status st = {0};
  prt_grads_save(wr, gpath, &st);
  if (prt_agree(wr, &st)) fail("save grads: %s", st.msg);
  prt_ctx *rd = reader_ctx(1);
  st = (prt_status){0};
  if (prt_checkpoint_load(rd, gpath, NULL, &st)) fail("load grads: %s", st.msg);
  for (int64_t i = 0; i < rd->ntensors; i++) {
    const prt_tensor_info *t = &rd->tensors[i];
    const float *g = t->data;
    for (int64_t e = 0; e < t->numel; e++) {
      float want = strcmp(t->name, "rep") == 0 ? (float)(10 + e)
                   : strcmp(t->name, "shard") == 0 ? (float)(2 * e)
                   : strncmp(t->name, "stage.", 6) == 0 ? (float)(atoi(t->name + 6) + e)
                   : strcmp(t->name, "patch") == 0 ? (float)(e + 0.5f)
                                                   : (float)(e + 0.5f);
      if (g[e] != want) {
        fail("grad '%s'[%lld] = %g, want %g", t->name, (long long)e, g[e], want);
        break;
      }
    }
  }
  prt_ctx_destroy(rd);
  /* nobody observed "rep": every rank fails alike, naming it and the elements */
  for (int64_t i = 0; i < wr->ntensors; i++)
    if (strcmp(wr->tensors[i].name, "rep") == 0) {
      free(wr->tensors[i].grad_copy);
      wr->tensors[i].grad_copy = NULL;
    }
  st = (prt_status){0};
  if (prt_grads_save(wr, gpath, &st) == 0 ||
      !strstr(st.msg, "gradient of parameter 'rep', elements [0, 15), was not observed"))
    fail("unobserved gradient: %s", st.msg);
  end();
}

/* catalog_errors: elements no rank holds, and ranks that disagree on a shape or a kind. */
static void test_catalog_errors(const char *path) {
  begin("catalog_errors");
  /* "holey": rank 0 holds [0, 4), the last rank [6, 10): elements [4, 6) are nowhere */
  prt_ctx *c = prt_ctx_create();
  if (R == 0 || R == W - 1) {
    prt_declare_tensor(c, 0, "holey", PRT_PARAM, 0, 2, 2, 5, 0, 0, 0);
    prt_declare_shard(c, 0, R == 0 ? 0 : 6, 4, 10);
  }
  prt_status st = {0};
  if (prt_ctx_allocate(c, &st)) fail("allocate: %s", st.msg);
  st = (prt_status){0};
  if (prt_checkpoint_save(c, path, -1, &st) == 0 ||
      !strstr(st.msg, "parameter 'holey' (shape [2, 5]): elements [4, 6) are held by no rank"))
    fail("gap: %s", st.msg);
  prt_ctx_destroy(c);
  /* ranks disagree on a shape */
  c = prt_ctx_create();
  prt_declare_tensor(c, 0, "p", PRT_PARAM, 0, 2, R == 0 ? 4 : 2, R == 0 ? 2 : 4, 0, 0, 0);
  st = (prt_status){0};
  if (prt_ctx_allocate(c, &st)) fail("allocate: %s", st.msg);
  st = (prt_status){0};
  if (prt_catalog_build(c, &st) == 0 ||
      !strstr(st.msg, "parameter 'p' has shape [4, 2] on rank 0 and [2, 4] on rank 1"))
    fail("shape disagreement: %s", st.msg);
  prt_ctx_destroy(c);
  /* a name that is a parameter on one rank and optimizer state on another */
  c = prt_ctx_create();
  prt_declare_tensor(c, 0, "k", R == 0 ? PRT_PARAM : PRT_OPTIM, 0, 1, 4, 0, 0, 0, 0);
  st = (prt_status){0};
  if (prt_ctx_allocate(c, &st)) fail("allocate: %s", st.msg);
  st = (prt_status){0};
  if (prt_catalog_build(c, &st) == 0 ||
      !strstr(st.msg, "tensor 'k' is a parameter on rank 0 and optimizer state on rank 1"))
    fail("kind disagreement: %s", st.msg);
  prt_ctx_destroy(c);
  end();
}

/* optim_assembly: unevenly sharded moments assemble whole and load into other layouts;
 * optimizer state that cannot be assembled leaves checkpoints with parameters only. */
static void test_optim_assembly(const char *path) {
  begin("optim_assembly");
  /* Moments sharded unevenly (rank r holds [bound(r), bound(r + 1)) of 21, value 3 g + 1)
   * assemble whole, and load back into another layout: whole on every rank, and reversed
   * slices (rank r holds what rank W-1-r wrote). */
  prt_status st = {0};
  for (int layout = 0; layout < 3; layout++) {
    prt_ctx *c = prt_ctx_create();
    prt_declare_tensor(c, 0, "s", PRT_PARAM, PRT_INIT_NORMAL, 2, 7, 3, 0, 0, 0);
    prt_declare_tensor(c, 1, "optim.exp_avg.s", PRT_OPTIM, 0, 2, 7, 3, 0, 0, 0);
    int64_t q = layout == 2 ? W - 1 - R : R;
    for (int64_t id = 0; id < 2 && layout != 1; id++)
      prt_declare_shard(c, id, shard_bound(q), shard_bound(q + 1) - shard_bound(q), 21);
    st = (prt_status){0};
    if (prt_ctx_allocate(c, &st)) fail("allocate: %s", st.msg);
    prt_tensor_info *m = &c->tensors[1];
    if (layout == 0) {
      for (int64_t k = 0; k < m->numel; k++)
        ((float *)m->data)[k] = 3.0f * (m->shard_offset + k) + 1;
      prt_checkpoint_save(c, path, 9, &st);
      if (prt_agree(c, &st)) fail("save: %s", st.msg);
    } else {
      prt_ckpt_info info;
      if (prt_checkpoint_load(c, path, &info, &st)) fail("load (layout %d): %s", layout, st.msg);
      else if (!info.optim || info.step != 9)
        fail("layout %d: optim %d, step %lld", layout, info.optim, (long long)info.step);
      for (int64_t k = 0; k < m->numel; k++)
        if (((float *)m->data)[k] != 3.0f * (m->shard_offset + k) + 1) {
          fail("layout %d: moment element %lld = %g", layout, (long long)(m->shard_offset + k),
               ((float *)m->data)[k]);
          break;
        }
    }
    prt_ctx_destroy(c);
  }
  /* Optimizer state that cannot be assembled does not fail the run: 1-D slices of uneven
   * length declared whole (ranks disagree on the shape), or elements no rank holds. The
   * catalog says why, and checkpoints hold parameters only. */
  for (int k = 0; k < 2; k++) {
    prt_ctx *c = prt_ctx_create();
    prt_declare_tensor(c, 0, "p", PRT_PARAM, 0, 1, 10, 0, 0, 0, 0);
    if (k == 0) {
      prt_declare_tensor(c, 1, "optim.m.p", PRT_OPTIM, 0, 1, R + 1, 0, 0, 0, 0);
    } else if (R == 0) {
      prt_declare_tensor(c, 1, "optim.m.p", PRT_OPTIM, 0, 1, 10, 0, 0, 0, 0);
      prt_declare_shard(c, 1, 0, 4, 10);
    }
    st = (prt_status){0};
    if (prt_ctx_allocate(c, &st) || prt_catalog_build(c, &st)) fail("build: %s", st.msg);
    const char *why = prt_catalog_optim_problem(c);
    const char *want = k == 0 ? "optimizer state 'optim.m.p' has shape [1] on rank 0 and [2] on "
                                "rank 1"
                              : "optimizer state 'optim.m.p' (shape [10]): elements [4, 10) are "
                                "held by no rank";
    if (!why || strcmp(why, want)) fail("problem '%s', want '%s'", why ? why : "(none)", want);
    st = (prt_status){0};
    prt_checkpoint_save(c, path, -1, &st);
    if (prt_agree(c, &st)) fail("save: %s", st.msg);
    prt_ctx_destroy(c);
    c = prt_ctx_create();
    prt_declare_tensor(c, 0, "p", PRT_PARAM, 0, 1, 10, 0, 0, 0, 0);
    prt_declare_tensor(c, 1, "optim.m.p", PRT_OPTIM, 0, 1, 10, 0, 0, 0, 0);
    prt_ckpt_info info;
    st = (prt_status){0};
    if (prt_ctx_allocate(c, &st) || prt_checkpoint_load(c, path, &info, &st))
      fail("load: %s", st.msg);
    else if (info.optim) fail("the file holds optimizer state");
    prt_ctx_destroy(c);
  }
  end();
}

/* The assembly checks, in order, on one writer context (shard_init to grads_assembly). */
static void test_assembly(void) {
  char path[256], gpath[256];
  snprintf(path, sizeof path, "%s/assembled.safetensors", tmpdir);
  snprintf(gpath, sizeof gpath, "%s/grads.safetensors", tmpdir);
  prt_ctx *wr = test_shard_init();
  test_checkpoint_assembly(wr, path);
  test_checkpoint_load_errors(path, gpath);
  test_grads_assembly(wr, gpath);
  prt_ctx_destroy(wr);
  test_catalog_errors(path);
  test_optim_assembly(path);
  unlink(path);
  unlink(gpath);
}

/* ---- plans for prt_main: a bigram model ---- */

enum { BG_G = 4, BG_T = 16, BG_C = 8, BG_V = 256, BG_P = BG_V * BG_C };

/* Scratch of one forward + backward over `rows` rows, carved from the arena. */
typedef struct bg_scratch {
  float *x, *dx;                   /* (rows, T, C) */
  float *wpe;                      /* (T, C), zero */
  float *logits, *probs, *dlogits; /* (rows * T, V) */
  float *dwpe;                     /* (T, C) */
  float *tmp;                      /* (V, C): one microbatch's gradient before summing */
} bg_scratch;

static int64_t bg_scratch_floats(int64_t rows) {
  int64_t N = rows * BG_T;
  return 2 * N * BG_C + 2 * BG_T * BG_C + 3 * N * BG_V + BG_P;
}

static float *bg_carve(bg_scratch *s, float *p, int64_t rows) {
  int64_t N = rows * BG_T;
  s->x = p, p += N * BG_C;
  s->dx = p, p += N * BG_C;
  s->wpe = p, p += BG_T * BG_C;
  s->logits = p, p += N * BG_V;
  s->probs = p, p += N * BG_V;
  s->dlogits = p, p += N * BG_V;
  s->dwpe = p, p += BG_T * BG_C;
  s->tmp = p, p += BG_P;
  memset(s->wpe, 0, BG_T * BG_C * sizeof(float));
  return p;
}

static void bg_add(float *acc, const float *g, int64_t n) {
  for (int64_t i = 0; i < n; i++) acc[i] += g[i];
}

/* The head of the model on `rows` rows of x: loss, and dlogits of the global batch's mean
 * (so the sum over every slice is the full-batch gradient); dhead += , dx = . */
static void bg_head(bg_scratch *s, float *loss, const int32_t *tgt, const float *head,
                    float *dhead, int64_t rows) {
  int64_t N = rows * BG_T;
  prt_linear_fwd(s->logits, s->x, head, NULL, N, BG_V, BG_C);
  prt_cross_entropy_fwd(loss, s->probs, s->logits, tgt, N, BG_V, 0.0f);
  prt_cross_entropy_bwd(s->dlogits, s->probs, tgt, N, BG_V, BG_G * BG_T, 0.0f);
  prt_linear_bwd_weight(s->tmp, s->dlogits, s->x, N, BG_V, BG_C);
  bg_add(dhead, s->tmp, BG_P);
  prt_linear_bwd_input(s->dx, s->dlogits, head, N, BG_V, BG_C);
}

static void bg_adamw(prt_ctx *ctx, float *p, const float *g, int64_t m_id, int64_t n) {
  prt_adamw(ctx, p, g, prt_tensor(ctx, m_id), prt_tensor(ctx, m_id + 1), NULL, n, 0.9f, 0.999f,
            1e-8f, 1);
}

/* AdamW's moments of wte and head (ids 2-5), "optim.<slot>.<param>" as piper-compile names
 * them: checkpoints move between layouts by these names. */
static const char *const BG_MOMENTS[4] = {"optim.exp_avg.wte", "optim.exp_avg_sq.wte",
                                          "optim.exp_avg.head", "optim.exp_avg_sq.head"};

/* ref: one device, the whole batch. ids: 0 wte, 1 head, 2-5 optim, 6 tokens, 7 targets,
 * 8 loss. Also "dp" on each rank with its slice: B rows from first_sample. */
static int64_t dp_rows(void) { return BG_G / W; }

static void bg_declare_replicas(prt_ctx *ctx, int64_t B, int64_t first) {
  prt_declare_tensor(ctx, 0, "wte", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "head", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  for (int64_t k = 0; k < 4; k++) /* named as piper-compile names AdamW's moments */
    prt_declare_tensor(ctx, 2 + k, BG_MOMENTS[k], PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 6, "tokens", PRT_INPUT, 0, 2, B, BG_T, 0, 0, first);
  prt_declare_tensor(ctx, 7, "targets", PRT_INPUT, 0, 2, B, BG_T, 0, 0, first);
  prt_declare_tensor(ctx, 8, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, B == BG_G ? 0 : B);
  prt_declare_arena(ctx, 4 * (bg_scratch_floats(B) + 2 * BG_P));
}

static void ref_setup(prt_ctx *ctx) { bg_declare_replicas(ctx, BG_G, 0); }

/* One forward + backward of the whole model on `rows` rows; grads into dwte, dhead. */
static void bg_local_step(prt_ctx *ctx, int64_t rows, float *dwte, float *dhead,
                          bg_scratch *s) {
  const float *wte = prt_tensor(ctx, 0), *head = prt_tensor(ctx, 1);
  const int32_t *tok = prt_tensor(ctx, 6), *tgt = prt_tensor(ctx, 7);
  prt_span_begin(ctx, "forward+backward", 0);
  memset(dhead, 0, BG_P * sizeof(float));
  prt_embedding_fwd(s->x, tok, wte, s->wpe, rows, BG_T, BG_C);
  bg_head(s, prt_tensor(ctx, 8), tgt, head, dhead, rows);
  prt_embedding_bwd(dwte, s->dwpe, s->dx, tok, rows, BG_T, BG_C, BG_V);
  prt_span_end(ctx, 0);
}

static void ref_step(prt_ctx *ctx) {
  bg_scratch s;
  float *dwte = bg_carve(&s, prt_arena(ctx), BG_G), *dhead = dwte + BG_P;
  bg_local_step(ctx, BG_G, dwte, dhead, &s);
  prt_observe_grad(ctx, 0, dwte);
  prt_observe_grad(ctx, 1, dhead);
  bg_adamw(ctx, prt_tensor(ctx, 0), dwte, 2, BG_P);
  bg_adamw(ctx, prt_tensor(ctx, 1), dhead, 4, BG_P);
}

static void dp_setup(prt_ctx *ctx) {
  int64_t all[64];
  prt_declare_world(ctx, W);
  for (int64_t r = 0; r < W; r++) all[r] = r;
  prt_declare_group(ctx, 0, W, all);
  prt_declare_batch(ctx, BG_G);
  prt_declare_stream(ctx, 0, "compute");
  prt_declare_stream(ctx, 1, "dp-allreduce");
  bg_declare_replicas(ctx, dp_rows(), prt_rank(ctx) * dp_rows());
}

static void dp_step(prt_ctx *ctx) {
  bg_scratch s;
  float *dwte = bg_carve(&s, prt_arena(ctx), dp_rows()), *dhead = dwte + BG_P;
  bg_local_step(ctx, dp_rows(), dwte, dhead, &s);
  /* each rank's gradient is its rows' share of the global mean: the sum is the full one */
  int64_t h1 = prt_iall_reduce(ctx, dwte, BG_P, 0, 1);
  int64_t h2 = prt_iall_reduce(ctx, dhead, BG_P, 0, 1);
  prt_wait(ctx, h2);
  prt_wait(ctx, h1);
  prt_observe_grad(ctx, 0, dwte);
  prt_observe_grad(ctx, 1, dhead);
  bg_adamw(ctx, prt_tensor(ctx, 0), dwte, 2, BG_P);
  bg_adamw(ctx, prt_tensor(ctx, 1), dhead, 4, BG_P);
}

/* zero: wte and head sharded over the world (S elements each rank), optimizer state too
 * (declared with the full dims, like the parameters). ids as ref; the step gathers both
 * parameters in full into the arena. zero1d: the same, but each rank declares its moments as
 * 1-D tensors of S elements without prt_declare_shard, as piper-compile did before optimizer
 * shards were declared (checkpoints then carry parameters only, with a warning). */
static int64_t zero_shard(void) { return BG_P / W; }
static int zero_legacy; /* 1: zero1d */

static void zero_setup(prt_ctx *ctx) {
  int64_t all[64], S = zero_shard(), r = prt_rank(ctx), B = dp_rows();
  prt_declare_world(ctx, W);
  for (int64_t k = 0; k < W; k++) all[k] = k;
  prt_declare_group(ctx, 0, W, all);
  prt_declare_batch(ctx, BG_G);
  prt_declare_stream(ctx, 1, "zero-gather");
  prt_declare_stream(ctx, 2, "zero-scatter");
  prt_declare_tensor(ctx, 0, "wte", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_shard(ctx, 0, r * S, S, BG_P);
  prt_declare_tensor(ctx, 1, "head", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_shard(ctx, 1, r * S, S, BG_P);
  for (int64_t k = 0; k < 4; k++) {
    if (zero_legacy) {
      prt_declare_tensor(ctx, 2 + k, BG_MOMENTS[k], PRT_OPTIM, 0, 1, S, 0, 0, 0, 0);
      continue;
    }
    prt_declare_tensor(ctx, 2 + k, BG_MOMENTS[k], PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
    prt_declare_shard(ctx, 2 + k, r * S, S, BG_P);
  }
  prt_declare_tensor(ctx, 6, "tokens", PRT_INPUT, 0, 2, B, BG_T, 0, 0, r * B);
  prt_declare_tensor(ctx, 7, "targets", PRT_INPUT, 0, 2, B, BG_T, 0, 0, r * B);
  prt_declare_tensor(ctx, 8, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, B);
  prt_declare_arena(ctx, 4 * (bg_scratch_floats(B) + 4 * BG_P + 2 * S));
}

static void zero_step(prt_ctx *ctx) {
  int64_t S = zero_shard(), B = dp_rows();
  bg_scratch s;
  float *wte = bg_carve(&s, prt_arena(ctx), B), *head = wte + BG_P;
  float *dwte = head + BG_P, *dhead = dwte + BG_P, *gw = dhead + BG_P, *gh = gw + S;
  int64_t h1 = prt_iall_gather(ctx, prt_tensor(ctx, 0), wte, S, 0, 1);
  int64_t h2 = prt_iall_gather(ctx, prt_tensor(ctx, 1), head, S, 0, 1);
  prt_wait(ctx, h2);
  prt_wait(ctx, h1);
  const int32_t *tok = prt_tensor(ctx, 6), *tgt = prt_tensor(ctx, 7);
  prt_span_begin(ctx, "forward+backward", 0);
  memset(dhead, 0, BG_P * sizeof(float));
  prt_embedding_fwd(s.x, tok, wte, s.wpe, B, BG_T, BG_C);
  bg_head(&s, prt_tensor(ctx, 8), tgt, head, dhead, B);
  prt_embedding_bwd(dwte, s.dwpe, s.dx, tok, B, BG_T, BG_C, BG_V);
  prt_span_end(ctx, 0);
  h1 = prt_ireduce_scatter(ctx, dwte, gw, S, 0, 2);
  h2 = prt_ireduce_scatter(ctx, dhead, gh, S, 0, 2);
  prt_wait(ctx, h1);
  prt_wait(ctx, h2);
  prt_observe_grad(ctx, 0, gw); /* the shard's gradient, by the shard's id */
  prt_observe_grad(ctx, 1, gh);
  bg_adamw(ctx, prt_tensor(ctx, 0), gw, 2, S);
  bg_adamw(ctx, prt_tensor(ctx, 1), gh, 4, S);
}

/* pp: stage 0 (ranks 0..D-1) embeds, stage 1 (ranks D..W-1) runs the head; D = W/2
 * replicas per stage, each replica its slice of the batch in two microbatches. Groups: 0 =
 * stage 0's replicas, 1 = stage 1's. Tags: activations m, their gradients 100 + m. */
enum { PP_M = 2 };
static int64_t pp_dp(void) { return W / 2; }
static int64_t pp_mb(void) { return BG_G / pp_dp() / PP_M; } /* rows of one microbatch */

static void pp_setup(prt_ctx *ctx) {
  int64_t D = pp_dp(), r = prt_rank(ctx), stage = r / D, d = r % D, mb = pp_mb();
  int64_t g0[32], g1[32];
  for (int64_t k = 0; k < D; k++) g0[k] = k, g1[k] = D + k;
  prt_declare_world(ctx, W);
  prt_declare_group(ctx, 0, D, g0);
  prt_declare_group(ctx, 1, D, g1);
  prt_declare_batch(ctx, BG_G);
  prt_declare_stream(ctx, 0, "compute");
  prt_declare_stream(ctx, 1, "p2p");
  prt_declare_stream(ctx, 2, "dp-allreduce");
  const char *p = stage == 0 ? "wte" : "head";
  const char *m = BG_MOMENTS[2 * stage], *v = BG_MOMENTS[2 * stage + 1];
  prt_declare_tensor(ctx, 0, p, PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 1, m, PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 2, v, PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  for (int64_t k = 0; k < PP_M; k++) { /* ids 3.. : the microbatches' inputs (and losses) */
    int64_t first = d * (BG_G / D) + k * mb;
    if (stage == 0) {
      prt_declare_tensor(ctx, 3 + k, "tokens", PRT_INPUT, 0, 2, mb, BG_T, 0, 0, first);
    } else {
      prt_declare_tensor(ctx, 3 + 2 * k, "targets", PRT_INPUT, 0, 2, mb, BG_T, 0, 0, first);
      prt_declare_tensor(ctx, 4 + 2 * k, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, mb);
    }
  }
  prt_declare_arena(ctx, 4 * (PP_M * bg_scratch_floats(mb) + BG_P));
}

static void pp_step(prt_ctx *ctx) {
  int64_t D = pp_dp(), r = prt_rank(ctx), stage = r / D, mb = pp_mb(), N = mb * BG_T;
  bg_scratch s[PP_M];
  float *p = prt_arena(ctx);
  for (int k = 0; k < PP_M; k++) p = bg_carve(&s[k], p, mb);
  float *grad = p, *param = prt_tensor(ctx, 0);
  int64_t h[2 * PP_M];
  memset(grad, 0, BG_P * sizeof(float));
  if (stage == 0) {
    for (int k = 0; k < PP_M; k++) {
      prt_span_begin(ctx, "embed", 0);
      prt_embedding_fwd(s[k].x, prt_tensor(ctx, 3 + k), param, s[k].wpe, mb, BG_T, BG_C);
      prt_span_end(ctx, 0);
      h[k] = prt_isend(ctx, s[k].x, N * BG_C, r + D, k, 1);
      h[PP_M + k] = prt_irecv(ctx, s[k].dx, N * BG_C, r + D, 100 + k, 1);
    }
    for (int k = PP_M - 1; k >= 0; k--) { /* last microbatch first: out of issue order */
      prt_wait(ctx, h[PP_M + k]);
      prt_wait(ctx, h[k]);
      prt_span_begin(ctx, "embed_bwd", 0);
      prt_embedding_bwd(s[k].tmp, s[k].dwpe, s[k].dx, prt_tensor(ctx, 3 + k), mb, BG_T, BG_C,
                        BG_V);
      bg_add(grad, s[k].tmp, BG_P);
      prt_span_end(ctx, 0);
    }
  } else {
    for (int k = 0; k < PP_M; k++) {
      prt_wait(ctx, prt_irecv(ctx, s[k].x, N * BG_C, r - D, k, 1));
      prt_span_begin(ctx, "head", 0);
      bg_head(&s[k], prt_tensor(ctx, 4 + 2 * k), prt_tensor(ctx, 3 + 2 * k), param, grad, mb);
      prt_span_end(ctx, 0);
      h[k] = prt_isend(ctx, s[k].dx, N * BG_C, r - D, 100 + k, 1);
    }
    for (int k = 0; k < PP_M; k++) prt_wait(ctx, h[k]);
  }
  if (D > 1) prt_wait(ctx, prt_iall_reduce(ctx, grad, BG_P, stage, 2));
  prt_observe_grad(ctx, 0, grad);
  prt_adamw(ctx, param, grad, prt_tensor(ctx, 1), prt_tensor(ctx, 2), NULL, BG_P, 0.9f, 0.999f,
            1e-8f, 1);
}

/* world3: a plan for 3 devices. */
static void world3_setup(prt_ctx *ctx) {
  prt_declare_world(ctx, 3);
  bg_declare_replicas(ctx, BG_G, 0);
}

/* badwait: waits a handle twice on every rank. */
static void badwait_setup(prt_ctx *ctx) {
  int64_t all[64];
  prt_declare_world(ctx, W);
  for (int64_t r = 0; r < W; r++) all[r] = r;
  prt_declare_group(ctx, 0, W, all);
  prt_declare_batch(ctx, BG_G);
  bg_declare_replicas(ctx, dp_rows(), prt_rank(ctx) * dp_rows());
}

static void badwait_step(prt_ctx *ctx) {
  int64_t h = prt_iall_reduce(ctx, prt_arena(ctx), 4, 0, 0);
  prt_wait(ctx, h);
  prt_wait(ctx, h);
}

typedef struct plan {
  const char *name;
  void (*setup)(prt_ctx *);
  void (*step)(prt_ctx *);
} plan;

static void zero1d_setup(prt_ctx *ctx) {
  zero_legacy = 1;
  zero_setup(ctx);
}

static const plan plans[] = {
    {"ref", ref_setup, ref_step},         {"dp", dp_setup, dp_step},
    {"zero", zero_setup, zero_step},      {"pp", pp_setup, pp_step},
    {"world3", world3_setup, ref_step},   {"badwait", badwait_setup, badwait_step},
    {"zero1d", zero1d_setup, zero_step},
};

/* ---- plans per role: rank -> (role, k), range groups, more than 256 groups ---- */

/* roles: a rank's role and replica index, and the affine values of its replica. */
static void test_roles(void) {
  begin("roles");
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  /* two roles, like PP2 x DP(W/2): role 0 on the even ranks, role 1 on the odd ones */
  int64_t start[2] = {0, 1}, stride[2] = {2, 2}, count[2] = {W / 2, W / 2};
  prt_declare_roles(ctx, 2, start, stride, count);
  if (prt_role(ctx) != R % 2 || prt_replica_affine(ctx, 0, 1) != R / 2 ||
      prt_replica_affine(ctx, 5, 3) != 5 + 3 * (R / 2) || prt_first_replica(ctx) != (R < 2))
    fail("rank %lld: role %lld, k %lld", (long long)R, (long long)prt_role(ctx),
         (long long)prt_replica_affine(ctx, 0, 1));
  prt_ctx_destroy(ctx);
  end();
}

/* expert_names: an expert parameter's name follows its replica's expert index. */
static void test_expert_names(void) {
  begin("expert_names");
  /* expert parallelism per role: replica k's expert is replica 0's index 9 + k * 3 (9 + 3k
   * digits may grow: 9 -> 12), the rest of the name kept; a name without that index at that
   * place fails setup with a plan-bug message */
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  int64_t one[1] = {0}, stride1[1] = {1}, countW[1] = {W};
  prt_declare_roles(ctx, 1, one, stride1, countW);
  prt_declare_tensor(ctx, 0, "layers.0.experts.9.w", PRT_PARAM, PRT_INIT_NORMAL, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "optim.exp_avg.layers.0.experts.9.w", PRT_OPTIM, PRT_INIT_ZEROS, 1,
                     4, 0, 0, 0, 0);
  prt_declare_expert(ctx, 0, 17, 1, 9, 3);
  prt_declare_expert(ctx, 1, 31, 1, 9, 3);
  char want[64];
  snprintf(want, sizeof want, "layers.0.experts.%lld.w", (long long)(9 + 3 * R));
  if (prt_ctx_find(ctx, want) != 0) fail("rank %lld: no tensor '%s'", (long long)R, want);
  snprintf(want, sizeof want, "optim.exp_avg.layers.0.experts.%lld.w", (long long)(9 + 3 * R));
  if (prt_ctx_find(ctx, want) != 1) fail("rank %lld: no tensor '%s'", (long long)R, want);
  if (ctx->decl_status.code) fail("rank %lld: %s", (long long)R, ctx->decl_status.msg);
  prt_declare_expert(ctx, 0, 2, 1, 9, 3); /* "y" is no index 9 */
  if (!ctx->decl_status.code || !strstr(ctx->decl_status.msg, "no expert index 9 at byte 2"))
    fail("rank %lld: a wrong expert index was accepted: '%s'", (long long)R,
         ctx->decl_status.msg);
  prt_ctx_destroy(ctx);
  end();
}

/* many_range_groups: 300 groups declared as ranges, each all-reduced on. */
static void test_many_range_groups(void) {
  begin("many_range_groups");
  /* 300 groups (once a fixed table of 256): group g holds ranks g % W .. W-1, declared as a
   * range; each is all-reduced on and checked */
  enum { G = 300, N = 16 };
  static float a[N];
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  for (int g = 0; g < G; g++) prt_declare_group_range(ctx, g, W - g % W, g % W, 1);
  prt_declare_stream(ctx, 1, "comm");
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  for (int g = 0; g < G && !check_failed; g++) {
    int64_t first = g % W;
    if (R < first) continue; /* ranks outside a group skip it */
    for (int i = 0; i < N; i++) a[i] = (float)(R + 1);
    prt_wait(ctx, prt_iall_reduce(ctx, a, N, g, 1));
    float want = (float)((W * (W + 1) - first * (first + 1)) / 2);
    if (a[0] != want || a[N - 1] != want) fail("group %d: sum %g, want %g", g, a[0], want);
  }
  prt_ctx_destroy(ctx);
  end();
}

/* group_family: a group family gives each replica a communicator of its own. */
static void test_group_family(void) {
  begin("group_family");
  enum { N = 16 };
  static float a[N];
  prt_status st = {0};
  /* TP2 x DP(W/2): device 2k + t is member t of replica k; roles t = 0, 1 (stride 2). One
   * family, replica 0's group [0, 1] with stride 2: replica k's instance is [2k, 2k + 1], a
   * communicator of its own (on 4 ranks a single communicator of every member would sum
   * 1 + 2 + 3 + 4 = 10, not 4k + 3) */
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  int64_t tpStart[2] = {0, 1}, tpStride[2] = {2, 2}, tpCount[2] = {W / 2, W / 2};
  prt_declare_roles(ctx, 2, tpStart, tpStride, tpCount);
  int64_t base[2] = {0, 1};
  prt_declare_group_family(ctx, 0, 2, base, 2);
  prt_declare_stream(ctx, 1, "tp");
  int64_t k = R / 2;
  const prt_group *fam = ctx->ngroups > 0 ? &ctx->groups[0] : NULL;
  if (ctx->decl_status.code) fail("rank %lld: %s", (long long)R, ctx->decl_status.msg);
  else if (!fam || fam->n != 2 || fam->members[0] != 2 * k || fam->members[1] != 2 * k + 1 ||
           fam->index != R % 2)
    fail("rank %lld: family instance [%lld, %lld] at %lld, want [%lld, %lld] at %lld",
         (long long)R, fam ? (long long)fam->members[0] : -1LL,
         fam ? (long long)fam->members[1] : -1LL, fam ? (long long)fam->index : -1LL,
         (long long)(2 * k), (long long)(2 * k + 1), (long long)(R % 2));
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  for (int i = 0; i < N && !check_failed; i++) a[i] = (float)(R + 1);
  if (!check_failed) prt_wait(ctx, prt_iall_reduce(ctx, a, N, 0, 1));
  if (!check_failed && (a[0] != (float)(4 * k + 3) || a[N - 1] != (float)(4 * k + 3)))
    fail("rank %lld: family sum %g, want %lld", (long long)R, a[0], (long long)(4 * k + 3));
  prt_ctx_destroy(ctx);
  /* a family with no stride is a plan bug, refused at declaration */
  ctx = prt_ctx_create();
  prt_declare_world(ctx, W);
  prt_declare_group_family(ctx, 0, 2, base, 0);
  if (!ctx->decl_status.code || !strstr(ctx->decl_status.msg, "prt_declare_group_family"))
    fail("rank %lld: a family of stride 0 was accepted: '%s'", (long long)R,
         ctx->decl_status.msg);
  prt_ctx_destroy(ctx);
  end();
}

/* Roles, expert names and groups: declared as a plan per role declares them. */
static void test_roles_and_many_groups(void) {
  test_roles();
  test_expert_names();
  test_many_range_groups();
  test_group_family();
}

/* ---- a group family in an elastic run (runtime/elastic.c) ----
 * TP2 x DP(W): 2W devices, device 2k + t member t of replica k, run on the W ranks, so each
 * rank stands in for k = 2 replicas (rank 2r' + t runs member t of replicas 2r', 2r' + 1).
 * Replica 2r' + j's instance [4r' + 2j, 4r' + 2j + 1] maps onto ranks [2r', 2r' + 1] for
 * both passes: one communicator per pair of ranks, not folded, its all-reduce summing the
 * pair's values (4r' + 3). A family of stride 4 (twice the replica's 2 devices) would need
 * other ranks in the second pass: refused, naming the group and the devices. */
static void test_family_elastic(void) {
  static float a[8];
  begin("group_family_elastic");
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_world(ctx, 2 * W);
  int64_t start[2] = {0, 1}, stride[2] = {2, 2}, count[2] = {W, W}, base[2] = {0, 1};
  prt_declare_roles(ctx, 2, start, stride, count);
  prt_declare_group_family(ctx, 0, 2, base, 2);
  prt_declare_stream(ctx, 1, "tp");
  int64_t q = R / 2; /* r' */
  const prt_group *fam = ctx->ngroups > 0 ? &ctx->groups[0] : NULL;
  if (ctx->elastic.k != 2) fail("rank %lld: k %lld, want 2", (long long)R,
                                (long long)ctx->elastic.k);
  else if (ctx->decl_status.code) fail("rank %lld: %s", (long long)R, ctx->decl_status.msg);
  else if (!fam || fam->n != 2 || fam->folded || fam->members[0] != 2 * q ||
           fam->members[1] != 2 * q + 1 || fam->index != R % 2 || fam->shift != 2 * q)
    fail("rank %lld: family on ranks [%lld, %lld] at %lld, shift %lld%s; want [%lld, %lld] "
         "at %lld, shift %lld", (long long)R, fam ? (long long)fam->members[0] : -1LL,
         fam ? (long long)fam->members[1] : -1LL, fam ? (long long)fam->index : -1LL,
         fam ? (long long)fam->shift : -1LL, fam && fam->folded ? " (folded)" : "",
         (long long)(2 * q), (long long)(2 * q + 1), (long long)(R % 2), (long long)(2 * q));
  prt_status st = {0};
  if (!check_failed && prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  if (!check_failed) {
    prt_comm_groups_create(ctx);
    ctx->groups_created = 1;
    for (int i = 0; i < 8; i++) a[i] = (float)(R + 1);
    prt_wait(ctx, prt_iall_reduce(ctx, a, 8, 0, 1));
    if (a[0] != (float)(4 * q + 3) || a[7] != (float)(4 * q + 3))
      fail("rank %lld: family sum %g, want %lld", (long long)R, a[0], (long long)(4 * q + 3));
  }
  prt_ctx_destroy(ctx);
  ctx = prt_ctx_create();
  prt_declare_world(ctx, 2 * W);
  prt_declare_roles(ctx, 2, start, stride, count);
  prt_declare_group_family(ctx, 0, 2, base, 4);
  char want[160];
  snprintf(want, sizeof want, "group 0's member 0 is device %lld in replica %lld's instance "
           "and device %lld in replica %lld's", (long long)(8 * q), (long long)(2 * q),
           (long long)(8 * q + 4), (long long)(2 * q + 1));
  if (!ctx->decl_status.code || !strstr(ctx->decl_status.msg, want) ||
      !strstr(ctx->decl_status.msg, "a tensor-parallel group family is not elastic"))
    fail("rank %lld: a family of stride 4 was %s: '%s'", (long long)R,
         ctx->decl_status.code ? "refused otherwise" : "accepted", ctx->decl_status.msg);
  prt_ctx_destroy(ctx);
  end();
}

int main(int argc, char **argv) {
  int owner = prt_comm_init(&argc, &argv);
  R = prt_comm_rank();
  W = prt_comm_size();
  int rc = 0;
  if (argc >= 3 && strcmp(argv[1], "plan") == 0) {
    const plan *p = NULL;
    for (size_t k = 0; k < sizeof plans / sizeof plans[0]; k++)
      if (strcmp(plans[k].name, argv[2]) == 0) p = &plans[k];
    if (!p) {
      fprintf(stderr, "prt-comm-test: no plan '%s'\n", argv[2]);
      rc = 100;
    } else {
      argv[2] = argv[0]; /* prt_main sees: prt-comm-test flags... */
      rc = prt_main(argc - 2, argv + 2, p->setup, p->step);
    }
  } else if (W < 2 || W > 32 || BG_G % W || BG_P % W) {
    if (R == 0) fprintf(stderr, "prt-comm-test: run it under mpirun -np 2 or 4\n");
    rc = 100;
  } else {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/prt-comm-test-XXXXXX");
    int64_t ok = R != 0 || mkdtemp(tmpdir) != NULL;
    prt_comm_allreduce_i64(&ok, 1, PRT_REDUCE_SUM);
    /* every rank uses rank 0's directory: the file system is shared on one machine */
    int64_t counts[64];
    char *dir = prt_comm_allgatherv(tmpdir, sizeof tmpdir, counts);
    memcpy(tmpdir, dir, sizeof tmpdir);
    free(dir);
    if (ok != W) {
      fprintf(stderr, "prt-comm-test: cannot create a directory under /tmp\n");
      rc = 100;
    } else {
      test_transfers();
      test_bf16_sums();
      test_agreement();
      test_assembly();
      test_roles_and_many_groups();
      test_family_elastic();
      prt_comm_barrier();
      if (R == 0) rmdir(tmpdir);
      if (R == 0) printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
      rc = failures > 100 ? 100 : failures;
    }
  }
  fflush(stdout);
  if (owner) prt_comm_finalize();
  return rc;
}
