/* Ring attention: causal softmax attention over a context-parallel group of G devices, each
 * holding 2 of the sequence's 2G chunks of c rows, forward and backward, in fp32 on the CPU.
 *
 * Layout (causal load balancing): member r of the group holds chunks r and 2G-1-r, in that
 * order, as its local sequence of Tl = 2c rows; local row t has position prt_cp_position.
 * With chunk r paired with 2G-1-r every member has the same count of visible (query, key)
 * pairs, so no device waits on another's larger triangle.
 *
 * Forward: the member's key/value rows (both chunks, packed in one buffer) travel around the
 * ring: at step s member r holds those of member (r - s) mod G, sends them on to r+1 and
 * receives the next from r-1 while it computes with the ones in hand (the transfers are
 * nonblocking and the block kernels call prt_comm_progress between blocks). Each visit adds
 * its keys to the queries' running softmax (max m, sum l, unnormalised output): the
 * log-sum-exp merge of the partial results, exact in any order. After G steps lse = m + log l.
 *
 * Backward: the key/value rows travel again, now with their gradient accumulators dK, dV: each
 * member adds the gradients of the keys in hand from its own queries (probabilities
 * recomputed from the final lse, D = dO . O from the saved output), then passes keys and
 * accumulators on; after G steps a last shift hands every member its own dK, dV, summed over
 * all members' queries. dQ stays local.
 *
 * Every member issues the same transfers in the same order (G-1 shifts forward, G backward),
 * all to r+1 and from r-1 with tags from `tag`, so the ring cannot hang as long as every
 * member calls the kernel: the IR makes it one collective over the group (see
 * docs/parallelism.md, "Context parallelism"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prt_attention.h"
#include "prt_backend.h"
#include "prt_ctx.h"

/* One ring call's views: local rows Tl = 2c, strides as in cpu_attention.c. */
typedef struct {
  int64_t B, Tl, H, KV, D; /* batch, local rows, query heads, kv heads, head dim */
  int64_t qs, ks, os;      /* row strides of q (dq), k and v (dk, dv), out (dout) */
  int64_t G, r;            /* group size, this member's index */
  int64_t n;               /* floats of one packed buffer of K or V rows: B * Tl * KV * D */
} ring_shape;

/* Copies the KV heads' columns of k's rows (stride ks) into packed rows of KV * D. */
static void pack_rows(float *dst, const float *src, const ring_shape *s) {
  int64_t w = s->KV * s->D;
  for (int64_t r = 0; r < s->B * s->Tl; r++)
    memcpy(dst + r * w, src + r * s->ks, (size_t)w * sizeof(float));
}

static void unpack_rows(float *dst, const float *src, const ring_shape *s) {
  int64_t w = s->KV * s->D;
  for (int64_t r = 0; r < s->B * s->Tl; r++)
    memcpy(dst + r * s->ks, src + r * w, (size_t)w * sizeof(float));
}

/* Head (b, h) of the local queries' chunk qc against chunk kc of the packed key/value rows
 * kv (K then V, n floats each) of member `owner`. */
static prt_attn_head ring_head(const ring_shape *s, const float *q, const float *kv,
                               int64_t owner, int64_t b, int64_t h, int64_t qc, int64_t kc) {
  int64_t c = s->Tl / 2, w = s->KV * s->D, kh = h * s->KV / s->H;
  const float *K = kv + (b * s->Tl + kc * c) * w + kh * s->D;
  return (prt_attn_head){.Q = q + (b * s->Tl + qc * c) * s->qs + h * s->D, .K = K,
                         .V = K + s->n, .qs = s->qs, .ks = w, .D = s->D, .nq = c, .nk = c,
                         .qpos = prt_cp_position(s->r, s->G, c, qc * c),
                         .kpos = prt_cp_position(owner, s->G, c, kc * c),
                         .scale = 1.0f / sqrtf((float)s->D)};
}

/* Posts the shift of `n` floats of `send` to member r+1 and of `recv` from member r-1. */
static void ring_shift(prt_ctx *ctx, const prt_group *g, const float *send, float *recv,
                       int64_t n, int64_t tag, int64_t stream, int64_t h[2]) {
  int64_t G = g->n, r = g->index;
  h[0] = prt_irecv(ctx, recv, n, g->members[(r + G - 1) % G], tag, stream);
  h[1] = prt_isend(ctx, send, n, g->members[(r + 1) % G], tag, stream);
}

static const prt_group *ring_group(prt_ctx *ctx, int64_t group, const char *fn) {
  if (group < 0 || group >= ctx->ngroups || ctx->groups[group].n == 0)
    prt_fatal("%s: group %lld is not declared (the plan declares %lld groups)", fn,
              (long long)group, (long long)ctx->ngroups);
  const prt_group *g = &ctx->groups[group];
  if (g->index < 0)
    prt_fatal("%s: this device (rank %lld) is not a member of group %lld", fn,
              (long long)prt_rank(ctx), (long long)group);
  return g;
}

/* Adds the keys of member `owner` (packed in kv) to every local query row's running softmax:
 * O (out, unnormalised), m and l ((B, H, Tl) each). */
static void ring_fwd_visit(const ring_shape *s, const float *q, const float *kv, int64_t owner,
                           float *out, float *m, float *l, float *S) {
  int64_t c = s->Tl / 2;
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++)
      for (int64_t qc = 0; qc < 2; qc++)
        for (int64_t kc = 0; kc < 2; kc++) {
          prt_attn_head hd = ring_head(s, q, kv, owner, b, h, qc, kc);
          int64_t row = (b * s->H + h) * s->Tl + qc * c; /* into m, l */
          float *O = out + (b * s->Tl + qc * c) * s->os + h * s->D;
          for (int64_t i0 = 0; i0 < c; i0 += PRT_ATTN_BQ) {
            prt_comm_progress();
            int64_t mq = c - i0 < PRT_ATTN_BQ ? c - i0 : PRT_ATTN_BQ;
            prt_attn_fwd_block(&hd, i0, mq, O + i0 * s->os, s->os, m + row + i0,
                               l + row + i0, S);
          }
        }
}

static void ring_fwd(prt_ctx *ctx, const ring_shape *s0, float *out, float *lse,
                     const float *q, const float *k, const float *v, int64_t group,
                     int64_t tag) {
  const prt_group *g = ring_group(ctx, group, "prt_ring_attention_fwd");
  ring_shape sv = *s0;
  sv.G = g->n, sv.r = g->index;
  const ring_shape *s = &sv;
  int64_t rows = s->B * s->H * s->Tl;
  /* two packed key/value buffers (the one in hand, the one arriving), then l */
  float *buf =
      prt_xmalloc((size_t)(4 * s->n + rows) * sizeof(float), "ring attention buffers");
  float *kv[2] = {buf, buf + 2 * s->n}, *l = buf + 4 * s->n, *m = lse;
  pack_rows(kv[0], k, s);
  pack_rows(kv[0] + s->n, v, s);
  prt_attn_scratch w = prt_attn_scratch_new();
  for (int64_t r = 0; r < s->B * s->Tl; r++)
    memset(out + r * s->os, 0, (size_t)(s->H * s->D) * sizeof(float));
  for (int64_t i = 0; i < rows; i++) m[i] = -INFINITY, l[i] = 0.0f;
  for (int64_t step = 0; step < s->G; step++) {
    int64_t h[2] = {-1, -1}, owner = (s->r - step + s->G) % s->G;
    if (step + 1 < s->G)
      ring_shift(ctx, g, kv[step % 2], kv[(step + 1) % 2], 2 * s->n, tag, 1, h);
    ring_fwd_visit(s, q, kv[step % 2], owner, out, m, l, w.S);
    if (h[0] >= 0) prt_wait(ctx, h[0]), prt_wait(ctx, h[1]);
  }
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t hh = 0; hh < s->H; hh++) {
      int64_t row = (b * s->H + hh) * s->Tl;
      prt_attn_fwd_finish(s->Tl, s->D, out + b * s->Tl * s->os + hh * s->D, s->os, m + row,
                          l + row, lse + row);
    }
  prt_attn_scratch_free(&w);
  free(buf);
}

/* Adds the gradients through the keys of member `owner` (packed in kv) from every local
 * query: into dq (local) and dkv (the owner's packed dK then dV accumulators). */
static void ring_bwd_visit(const ring_shape *s, const float *q, const float *kv, float *dkv,
                           int64_t owner, const float *dout, float *dq, const float *lse,
                           const float *Dt, prt_attn_scratch *w) {
  int64_t c = s->Tl / 2, wd = s->KV * s->D;
  for (int64_t b = 0; b < s->B; b++)
    for (int64_t h = 0; h < s->H; h++)
      for (int64_t qc = 0; qc < 2; qc++)
        for (int64_t kc = 0; kc < 2; kc++) {
          prt_attn_head hd = ring_head(s, q, kv, owner, b, h, qc, kc);
          int64_t row = (b * s->H + h) * s->Tl + qc * c, kh = h * s->KV / s->H;
          float *dK = dkv + (b * s->Tl + kc * c) * wd + kh * s->D;
          prt_attn_grad gr = {.dO = dout + (b * s->Tl + qc * c) * s->os + h * s->D,
                              .os = s->os,
                              .dQ = dq + (b * s->Tl + qc * c) * s->qs + h * s->D,
                              .qs = s->qs, .dK = dK, .dV = dK + s->n, .ks = wd};
          for (int64_t i0 = 0; i0 < c; i0 += PRT_ATTN_BQ) {
            prt_comm_progress();
            int64_t mq = c - i0 < PRT_ATTN_BQ ? c - i0 : PRT_ATTN_BQ;
            prt_attn_bwd_block(&hd, &gr, i0, mq, lse + row + i0, Dt + row + i0, w->S, w->dP);
          }
        }
}

static void ring_bwd(prt_ctx *ctx, const ring_shape *s0, float *dq, float *dk, float *dv,
                     const float *dout, const float *out, const float *q, const float *k,
                     const float *v, const float *lse, int64_t group, int64_t tag) {
  const prt_group *g = ring_group(ctx, group, "prt_ring_attention_bwd");
  ring_shape sv = *s0;
  sv.G = g->n, sv.r = g->index;
  const ring_shape *s = &sv;
  int64_t rows = s->B * s->H * s->Tl;
  /* two slots of [K, V, dK, dV] (in hand, arriving), then D per query row */
  float *buf =
      prt_xmalloc((size_t)(8 * s->n + rows) * sizeof(float), "ring attention buffers");
  float *slot[2] = {buf, buf + 4 * s->n}, *Dt = buf + 8 * s->n;
  pack_rows(slot[0], k, s);
  pack_rows(slot[0] + s->n, v, s);
  memset(slot[0] + 2 * s->n, 0, (size_t)(2 * s->n) * sizeof(float));
  for (int64_t b = 0; b < s->B; b++) /* D = dO . O per query row */
    for (int64_t h = 0; h < s->H; h++)
      for (int64_t t = 0; t < s->Tl; t++) {
        const float *o = out + (b * s->Tl + t) * s->os + h * s->D;
        const float *d = dout + (b * s->Tl + t) * s->os + h * s->D;
        float acc = 0.0f;
        for (int64_t e = 0; e < s->D; e++) acc += o[e] * d[e];
        Dt[(b * s->H + h) * s->Tl + t] = acc;
      }
  for (int64_t r = 0; r < s->B * s->Tl; r++)
    memset(dq + r * s->qs, 0, (size_t)(s->H * s->D) * sizeof(float));
  prt_attn_scratch w = prt_attn_scratch_new();
  for (int64_t step = 0; step < s->G; step++) {
    int64_t owner = (s->r - step + s->G) % s->G, hk[2] = {-1, -1}, hd[2] = {-1, -1};
    float *cur = slot[step % 2], *next = slot[(step + 1) % 2];
    /* the keys move on while they are used; their accumulators once this member has added
     * to them. After the last visit only dK, dV move: member r then holds member r+1's,
     * summed over every member's queries, and this shift hands them to their owner. */
    if (step + 1 < s->G) ring_shift(ctx, g, cur, next, 2 * s->n, tag, 1, hk);
    ring_bwd_visit(s, q, cur, cur + 2 * s->n, owner, dout, dq, lse, Dt, &w);
    if (s->G > 1) ring_shift(ctx, g, cur + 2 * s->n, next + 2 * s->n, 2 * s->n, tag + 1, 1, hd);
    for (int i = 0; i < 2; i++) {
      if (hk[i] >= 0) prt_wait(ctx, hk[i]);
      if (hd[i] >= 0) prt_wait(ctx, hd[i]);
    }
  }
  /* the last dK, dV shift landed in slot G mod 2; with G = 1 nothing moved (slot 0) */
  float *mine = slot[s->G == 1 ? 0 : s->G % 2] + 2 * s->n;
  unpack_rows(dk, mine, s);
  unpack_rows(dv, mine + s->n, s);
  prt_attn_scratch_free(&w);
  free(buf);
}

static ring_shape gqa_ring(int64_t B, int64_t Tl, int64_t H, int64_t KV, int64_t D,
                           const char *fn) {
  if (Tl % 2 != 0)
    prt_fatal("%s: the local sequence (%lld rows) must be two chunks of equal length", fn,
              (long long)Tl);
  return (ring_shape){B, Tl, H, KV, D, H * D, KV * D, H * D, 0, 0, B * Tl * KV * D};
}

void prt_ring_gqa_attention_fwd(prt_ctx *ctx, float *out, float *lse, const float *q,
                                const float *k, const float *v, int64_t B, int64_t Tl,
                                int64_t H, int64_t KV, int64_t D, int64_t group, int64_t tag) {
  ring_shape s = gqa_ring(B, Tl, H, KV, D, "prt_ring_gqa_attention_fwd");
  ring_fwd(ctx, &s, out, lse, q, k, v, group, tag);
}

void prt_ring_gqa_attention_bwd(prt_ctx *ctx, float *dq, float *dk, float *dv,
                                const float *dout, const float *out, const float *q,
                                const float *k, const float *v, const float *lse, int64_t B,
                                int64_t Tl, int64_t H, int64_t KV, int64_t D, int64_t group,
                                int64_t tag) {
  ring_shape s = gqa_ring(B, Tl, H, KV, D, "prt_ring_gqa_attention_bwd");
  ring_bwd(ctx, &s, dq, dk, dv, dout, out, q, k, v, lse, group, tag);
}

void prt_ring_attention_fwd(prt_ctx *ctx, float *out, float *lse, const float *qkv, int64_t B,
                            int64_t Tl, int64_t C, int64_t H, int64_t group, int64_t tag) {
  ring_shape s = gqa_ring(B, Tl, H, H, C / H, "prt_ring_attention_fwd");
  s.qs = s.ks = 3 * C;
  ring_fwd(ctx, &s, out, lse, qkv, qkv + C, qkv + 2 * C, group, tag);
}

void prt_ring_attention_bwd(prt_ctx *ctx, float *dqkv, const float *dout, const float *out,
                            const float *qkv, const float *lse, int64_t B, int64_t Tl,
                            int64_t C, int64_t H, int64_t group, int64_t tag) {
  ring_shape s = gqa_ring(B, Tl, H, H, C / H, "prt_ring_attention_bwd");
  s.qs = s.ks = 3 * C;
  ring_bwd(ctx, &s, dqkv, dqkv + C, dqkv + 2 * C, dout, out, qkv, qkv + C, qkv + 2 * C, lse,
           group, tag);
}
