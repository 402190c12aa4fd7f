/* prt-kernel-test: checks libpiper_rt without a compiled plan.
 *
 * Kernels: every backward against central finite differences of its forward, forwards
 * against naive double-precision references, AdamW against a double-precision AdamW,
 * init against values from the Python reimplementation documented in runtime/init.c.
 * Runtime: data offsets, declaration errors, safetensors round trip and every load error,
 * gradient dumps, and prt_main end to end on a tiny bigram model defined here, including
 * resuming from a checkpoint bit for bit (optimizer state and step count) and what happens
 * when the optimizer state is missing, partial or unusable. Distributed plans on one device
 * (the serial comm backend): groups of one, the world check, global batches and
 * microbatches, shard init, traces, and the errors that stop a bad plan.
 *
 * Each check prints "@name" then "ok" or "FAIL: <detail>"; the exit code is the number of
 * failures (capped at 100). Finite differences perturb by h = 1e-2 and measure the change
 * of L = sum(out * R) for a fixed random R, accumulated in double: the truncation error is
 * O(h^2) ~ 1e-4 for these smooth functions and fp32 rounding of the forward adds about
 * 1e-7 * |L| / h ~ 1e-5, so they pass at |analytic - numeric| <= 2e-3 + 2e-2 * |numeric|.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prt_internal.h"
#include "check.h"

static char tmpdir[64];

/* ---- random data ---- */

static uint64_t rng_state = 42;

static float frand(void) { /* uniform in [-1, 1) */
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(rng_state >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
}

static float *rand_vec(int64_t n, float scale) {
  float *v = malloc((size_t)n * sizeof(float));
  for (int64_t i = 0; i < n; i++) v[i] = scale * frand();
  return v;
}

/* ---- finite differences ---- */

/* The scalar L(inputs) a check differentiates; state holds inputs and buffers. */
typedef double (*loss_fn)(void *state);

static double dot_out(const float *out, const float *R, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += (double)out[i] * R[i];
  return s;
}

/* Compares analytic[i] with the central difference of f in x[i], for every i. */
static void fd_check(const char *what, float *x, int64_t n, const float *analytic, loss_fn f,
                     void *state) {
  const float h = 1e-2f;
  for (int64_t i = 0; i < n; i++) {
    float save = x[i];
    float xp = save + h, xm = save - h;
    x[i] = xp;
    double lp = f(state);
    x[i] = xm;
    double lm = f(state);
    x[i] = save;
    double num = (lp - lm) / ((double)xp - (double)xm);
    double err = fabs((double)analytic[i] - num);
    if (!(err <= 2e-3 + 2e-2 * fabs(num))) {
      fail("%s[%lld]: analytic %.7g, finite difference %.7g", what, (long long)i,
           analytic[i], num);
      return;
    }
  }
}

static void close_check(const char *what, const float *got, const double *want, int64_t n,
                        double atol, double rtol) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs((double)got[i] - want[i]) <= atol + rtol * fabs(want[i]))) {
      fail("%s[%lld]: got %.9g, want %.9g (atol %g, rtol %g)", what, (long long)i, got[i],
           want[i], atol, rtol);
      return;
    }
}

/* ---- embedding ---- */

typedef struct emb_state {
  int64_t B, T, C, V; /* sizes */
  int32_t *tok;       /* (B, T) */
  float *wte, *wpe;   /* (V, C), (T, C) */
  float *out, *R;     /* (B, T, C) */
} emb_state;

static double emb_loss(void *p) {
  emb_state *s = p;
  prt_embedding_fwd(s->out, s->tok, s->wte, s->wpe, s->B, s->T, s->C);
  return dot_out(s->out, s->R, s->B * s->T * s->C);
}

static void test_embedding(void) {
  begin("embedding_bwd");
  emb_state s = {.B = 2, .T = 3, .C = 4, .V = 7};
  int32_t tok[6] = {1, 5, 1, 0, 6, 5};
  s.tok = tok;
  s.wte = rand_vec(s.V * s.C, 1);
  s.wpe = rand_vec(s.T * s.C, 1);
  s.out = rand_vec(s.B * s.T * s.C, 1);
  s.R = rand_vec(s.B * s.T * s.C, 1);
  float *dwte = rand_vec(s.V * s.C, 9), *dwpe = rand_vec(s.T * s.C, 9); /* overwritten */
  prt_embedding_bwd(dwte, dwpe, s.R, s.tok, s.B, s.T, s.C, s.V);
  fd_check("dwte", s.wte, s.V * s.C, dwte, emb_loss, &s);
  fd_check("dwpe", s.wpe, s.T * s.C, dwpe, emb_loss, &s);
  /* forward: out = wte[tok] + wpe[t] exactly */
  prt_embedding_fwd(s.out, s.tok, s.wte, s.wpe, s.B, s.T, s.C);
  for (int64_t i = 0; i < s.B * s.T * s.C; i++) {
    int64_t c = i % s.C, t = (i / s.C) % s.T;
    if (s.out[i] != s.wte[tok[i / s.C] * s.C + c] + s.wpe[t * s.C + c]) {
      fail("embedding_fwd out[%lld] differs", (long long)i);
      break;
    }
  }
  free(s.wte), free(s.wpe), free(s.out), free(s.R), free(dwte), free(dwpe);
  end();
}

/* ---- layernorm ---- */

typedef struct ln_state {
  int64_t N, C;              /* sizes */
  float *x, *w, *b;          /* (N, C), (C), (C) */
  float *out, *mean, *rstd;  /* (N, C), (N), (N) */
  float *R;                  /* (N, C) */
} ln_state;

static double ln_loss(void *p) {
  ln_state *s = p;
  prt_layernorm_fwd(s->out, s->mean, s->rstd, s->x, s->w, s->b, s->N, s->C, 1e-5f);
  return dot_out(s->out, s->R, s->N * s->C);
}

static void test_layernorm(void) {
  begin("layernorm_fwd");
  ln_state s = {.N = 5, .C = 8};
  s.x = rand_vec(s.N * s.C, 2);
  s.w = rand_vec(s.C, 1);
  s.b = rand_vec(s.C, 1);
  s.out = rand_vec(s.N * s.C, 1);
  s.mean = rand_vec(s.N, 1);
  s.rstd = rand_vec(s.N, 1);
  s.R = rand_vec(s.N * s.C, 1);
  ln_loss(&s);
  double *want = malloc((size_t)(s.N * s.C) * sizeof(double));
  for (int64_t i = 0; i < s.N; i++) {
    double m = 0, v = 0;
    for (int64_t c = 0; c < s.C; c++) m += s.x[i * s.C + c];
    m /= (double)s.C;
    for (int64_t c = 0; c < s.C; c++) v += (s.x[i * s.C + c] - m) * (s.x[i * s.C + c] - m);
    v /= (double)s.C; /* biased */
    for (int64_t c = 0; c < s.C; c++)
      want[i * s.C + c] = (s.x[i * s.C + c] - m) / sqrt(v + 1e-5) * s.w[c] + s.b[c];
  }
  close_check("out", s.out, want, s.N * s.C, 1e-5, 1e-5); /* fp32 rounding of O(1) values */
  free(want);
  end();

  begin("layernorm_bwd");
  float *dx = rand_vec(s.N * s.C, 1), *dw = rand_vec(s.C, 1), *db = rand_vec(s.C, 1);
  ln_loss(&s);
  prt_layernorm_bwd(dx, dw, db, s.R, s.x, s.w, s.mean, s.rstd, s.N, s.C);
  fd_check("dx", s.x, s.N * s.C, dx, ln_loss, &s);
  fd_check("dw", s.w, s.C, dw, ln_loss, &s);
  fd_check("db", s.b, s.C, db, ln_loss, &s);
  free(s.x), free(s.w), free(s.b), free(s.out), free(s.mean), free(s.rstd), free(s.R);
  free(dx), free(dw), free(db);
  end();
}

/* ---- linear ---- */

typedef struct lin_state {
  int64_t M, N, K; /* sizes */
  float *x, *w, *b; /* (M, K), (N, K), (N) */
  float *out, *R;   /* (M, N) */
} lin_state;

static double lin_loss(void *p) {
  lin_state *s = p;
  prt_linear_fwd(s->out, s->x, s->w, s->b, s->M, s->N, s->K);
  return dot_out(s->out, s->R, s->M * s->N);
}

static void test_linear(void) {
  begin("linear_fwd");
  /* odd sizes, so no sgemm blocking hides a transposition mistake */
  lin_state s = {.M = 7, .N = 5, .K = 6};
  s.x = rand_vec(s.M * s.K, 1);
  s.w = rand_vec(s.N * s.K, 1);
  s.b = rand_vec(s.N, 1);
  s.out = rand_vec(s.M * s.N, 1);
  s.R = rand_vec(s.M * s.N, 1);
  double *want = malloc((size_t)(s.M * s.N) * sizeof(double));
  for (int pass = 0; pass < 2; pass++) { /* with bias, then b = NULL */
    const float *b = pass == 0 ? s.b : NULL;
    prt_linear_fwd(s.out, s.x, s.w, b, s.M, s.N, s.K);
    for (int64_t i = 0; i < s.M; i++)
      for (int64_t j = 0; j < s.N; j++) {
        double acc = b ? b[j] : 0.0;
        for (int64_t k = 0; k < s.K; k++) acc += (double)s.x[i * s.K + k] * s.w[j * s.K + k];
        want[i * s.N + j] = acc;
      }
    close_check(pass == 0 ? "out" : "out (no bias)", s.out, want, s.M * s.N, 1e-5, 1e-5);
  }
  free(want);
  end();

  float *dx = rand_vec(s.M * s.K, 9), *dw = rand_vec(s.N * s.K, 9), *db = rand_vec(s.N, 9);
  begin("linear_bwd_input");
  prt_linear_bwd_input(dx, s.R, s.w, s.M, s.N, s.K);
  fd_check("dx", s.x, s.M * s.K, dx, lin_loss, &s);
  end();
  begin("linear_bwd_weight");
  prt_linear_bwd_weight(dw, s.R, s.x, s.M, s.N, s.K);
  fd_check("dw", s.w, s.N * s.K, dw, lin_loss, &s);
  end();
  begin("bias_bwd");
  prt_bias_bwd(db, s.R, s.M, s.N);
  fd_check("db", s.b, s.N, db, lin_loss, &s);
  end();
  free(s.x), free(s.w), free(s.b), free(s.out), free(s.R), free(dx), free(dw), free(db);
}

/* ---- attention ---- */

typedef struct attn_state {
  int64_t B, T, C, H; /* sizes */
  float *qkv;         /* (B, T, 3C) */
  float *out, *probs; /* (B, T, C), (B, H, T, T) */
  float *R;           /* (B, T, C) */
} attn_state;

static double attn_loss(void *p) {
  attn_state *s = p;
  prt_attention_fwd(s->out, s->probs, s->qkv, s->B, s->T, s->C, s->H);
  return dot_out(s->out, s->R, s->B * s->T * s->C);
}

static void test_attention(void) {
  begin("attention_fwd");
  attn_state s = {.B = 2, .T = 5, .C = 8, .H = 2};
  int64_t B = s.B, T = s.T, C = s.C, H = s.H, hs = C / H;
  s.qkv = rand_vec(B * T * 3 * C, 1.5f);
  s.out = rand_vec(B * T * C, 1);
  s.probs = rand_vec(B * H * T * T, 1); /* garbage above the diagonal must be zeroed */
  s.R = rand_vec(B * T * C, 1);
  attn_loss(&s);
  double *want = calloc((size_t)(B * T * C), sizeof(double));
  double *wantl = calloc((size_t)(B * H * T), sizeof(double));
  double *p = calloc((size_t)T, sizeof(double));
  for (int64_t b = 0; b < B; b++)
    for (int64_t h = 0; h < H; h++)
      for (int64_t t = 0; t < T; t++) {
        const float *q = s.qkv + (b * T + t) * 3 * C + h * hs;
        double mx = -1e300, sum = 0;
        for (int64_t u = 0; u <= t; u++) {
          const float *k = s.qkv + (b * T + u) * 3 * C + C + h * hs;
          double d = 0;
          for (int64_t e = 0; e < hs; e++) d += (double)q[e] * k[e];
          p[u] = d / sqrt((double)hs);
          mx = p[u] > mx ? p[u] : mx;
        }
        for (int64_t u = 0; u <= t; u++) sum += (p[u] = exp(p[u] - mx));
        for (int64_t u = 0; u <= t; u++) p[u] /= sum;
        wantl[(b * H + h) * T + t] = mx + log(sum);
        for (int64_t e = 0; e < hs; e++)
          for (int64_t u = 0; u <= t; u++)
            want[(b * T + t) * C + h * hs + e] +=
                p[u] * s.qkv[(b * T + u) * 3 * C + 2 * C + h * hs + e];
      }
  close_check("out", s.out, want, B * T * C, 1e-5, 1e-5);
  /* the saved result is one log-sum-exp per query row, (B, H, T) */
  close_check("lse", s.probs, wantl, B * H * T, 1e-5, 1e-5);
  free(want), free(wantl), free(p);
  end();

  begin("attention_bwd");
  float *dqkv = rand_vec(B * T * 3 * C, 9);
  attn_loss(&s);
  prt_attention_bwd(dqkv, s.R, s.qkv, s.out, s.probs, B, T, C, H);
  fd_check("dqkv", s.qkv, B * T * 3 * C, dqkv, attn_loss, &s);
  free(s.qkv), free(s.out), free(s.probs), free(s.R), free(dqkv);
  end();
}

/* Causal attention in double over strided views (q, dq stride qs; k, v, dk, dv stride ks;
 * out, dout stride os), the oracle of the blocked kernels: out, lse (B, H, T) and the
 * gradients dq, dk, dv (zeroed here) of sum(out * dout). */
typedef struct ref_attn {
  int64_t B, T, H, KV, D, qs, ks, os; /* sizes and row strides */
  double *out, *lse, *dq, *dk, *dv;   /* like the kernel's, dense at the same strides */
} ref_attn;

static void ref_attention_head(ref_attn *r, int64_t b, int64_t h, const float *q,
                               const float *k, const float *v, const float *dout, double *P) {
  int64_t T = r->T, D = r->D, kh = h * r->KV / r->H;
  double scale = 1.0 / sqrt((double)D);
#define RQ(t) (q + (b * T + (t)) * r->qs + h * D)
#define RK(u) (k + (b * T + (u)) * r->ks + kh * D)
#define RV(u) (v + (b * T + (u)) * r->ks + kh * D)
#define RDO(t) (dout + (b * T + (t)) * r->os + h * D)
  for (int64_t t = 0; t < T; t++) {
    double mx = -1e300, sum = 0, Dt = 0;
    double *p = P + t * T;
    for (int64_t u = 0; u <= t; u++) {
      double d = 0;
      for (int64_t e = 0; e < D; e++) d += (double)RQ(t)[e] * RK(u)[e];
      p[u] = d * scale;
      mx = p[u] > mx ? p[u] : mx;
    }
    for (int64_t u = 0; u <= t; u++) sum += (p[u] = exp(p[u] - mx));
    r->lse[(b * r->H + h) * T + t] = mx + log(sum);
    for (int64_t u = 0; u <= t; u++) p[u] /= sum;
    for (int64_t e = 0; e < D; e++) {
      double o = 0;
      for (int64_t u = 0; u <= t; u++) o += p[u] * RV(u)[e];
      r->out[(b * T + t) * r->os + h * D + e] = o;
      Dt += o * RDO(t)[e];
    }
    for (int64_t u = 0; u <= t; u++) {
      double dp = 0;
      for (int64_t e = 0; e < D; e++) dp += (double)RDO(t)[e] * RV(u)[e];
      double ds = p[u] * (dp - Dt) * scale;
      for (int64_t e = 0; e < D; e++) {
        r->dq[(b * T + t) * r->qs + h * D + e] += ds * RK(u)[e];
        r->dk[(b * T + u) * r->ks + kh * D + e] += ds * RQ(t)[e];
        r->dv[(b * T + u) * r->ks + kh * D + e] += p[u] * RDO(t)[e];
      }
    }
  }
#undef RQ
#undef RK
#undef RV
#undef RDO
}

static void ref_attention(ref_attn *r, const float *q, const float *k, const float *v,
                          const float *dout) {
  int64_t T = r->T;
  r->out = calloc((size_t)(r->B * T * r->os), sizeof(double));
  r->lse = calloc((size_t)(r->B * r->H * T), sizeof(double));
  r->dq = calloc((size_t)(r->B * T * r->qs), sizeof(double));
  r->dk = calloc((size_t)(r->B * T * r->ks), sizeof(double));
  r->dv = calloc((size_t)(r->B * T * r->ks), sizeof(double));
  double *P = calloc((size_t)(T * T), sizeof(double));
  for (int64_t b = 0; b < r->B; b++)
    for (int64_t h = 0; h < r->H; h++) ref_attention_head(r, b, h, q, k, v, dout, P);
  free(P);
}

static void ref_attention_free(ref_attn *r) {
  free(r->out), free(r->lse), free(r->dq), free(r->dk), free(r->dv);
}

/* Compares columns [g0, g0+n) of `got` with columns [0, n) of `want`, each of `rows` rows of
 * stride `stride` (the oracle keeps dk, dv at column 0 of its own rows, packed qkv at C, 2C). */
static void close_cols(const char *what, const float *got, int64_t g0, const double *want,
                       int64_t rows, int64_t stride, int64_t n, double atol, double rtol) {
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < n; c++) {
      double w = want[r * stride + c], g = got[r * stride + g0 + c];
      if (!(fabs(g - w) <= atol + rtol * fabs(w))) {
        fail("%s[row %lld, col %lld]: got %.9g, want %.9g (atol %g, rtol %g)", what,
             (long long)r, (long long)c, g, w, atol, rtol);
        return;
      }
    }
}

/* The blocked kernels at sequence lengths that are not multiples of the blocks (64): the
 * last query and key blocks are partial and the diagonal block is cut. GQA with KV < H (two
 * query heads add into one kv head's dk, dv) and GPT's packed qkv, against the double oracle.
 * Tolerance: fp32 sums of up to T terms of size ~1, relative 1e-4 (the errors seen are ~1e-6). */
static void test_attention_blocks(void) {
  begin("attention_blocks");
  {
    int64_t B = 2, T = 150, H = 4, KV = 2, D = 8;
    float *q = rand_vec(B * T * H * D, 1.5f), *k = rand_vec(B * T * KV * D, 1.5f);
    float *v = rand_vec(B * T * KV * D, 1), *dout = rand_vec(B * T * H * D, 1);
    float *out = rand_vec(B * T * H * D, 1), *lse = rand_vec(B * H * T, 1);
    float *dq = rand_vec(B * T * H * D, 7), *dk = rand_vec(B * T * KV * D, 7);
    float *dv = rand_vec(B * T * KV * D, 7); /* garbage: the kernels overwrite */
    ref_attn r = {.B = B, .T = T, .H = H, .KV = KV, .D = D, .qs = H * D, .ks = KV * D,
                  .os = H * D};
    ref_attention(&r, q, k, v, dout);
    prt_gqa_attention_fwd(out, lse, q, k, v, B, T, H, KV, D);
    prt_gqa_attention_bwd(dq, dk, dv, dout, q, k, v, out, lse, B, T, H, KV, D);
    close_check("gqa out", out, r.out, B * T * H * D, 1e-5, 1e-4);
    close_check("gqa lse", lse, r.lse, B * H * T, 1e-5, 1e-5);
    close_check("gqa dq", dq, r.dq, B * T * H * D, 1e-5, 1e-4);
    close_check("gqa dk", dk, r.dk, B * T * KV * D, 1e-5, 1e-4);
    close_check("gqa dv", dv, r.dv, B * T * KV * D, 1e-5, 1e-4);
    ref_attention_free(&r);
    free(q), free(k), free(v), free(dout), free(out), free(lse), free(dq), free(dk), free(dv);
  }
  {
    int64_t B = 1, T = 129, C = 32, H = 2;
    float *qkv = rand_vec(B * T * 3 * C, 1.5f), *dout = rand_vec(B * T * C, 1);
    float *out = rand_vec(B * T * C, 1), *lse = rand_vec(B * H * T, 1);
    float *dqkv = rand_vec(B * T * 3 * C, 7);
    ref_attn r = {.B = B, .T = T, .H = H, .KV = H, .D = C / H, .qs = 3 * C, .ks = 3 * C,
                  .os = C};
    ref_attention(&r, qkv, qkv + C, qkv + 2 * C, dout);
    prt_attention_fwd(out, lse, qkv, B, T, C, H);
    prt_attention_bwd(dqkv, dout, qkv, out, lse, B, T, C, H);
    close_check("gpt out", out, r.out, B * T * C, 1e-5, 1e-4);
    close_check("gpt lse", lse, r.lse, B * H * T, 1e-5, 1e-5);
    close_cols("gpt dq", dqkv, 0, r.dq, B * T, 3 * C, C, 1e-5, 1e-4);
    close_cols("gpt dk", dqkv, C, r.dk, B * T, 3 * C, C, 1e-5, 1e-4);
    close_cols("gpt dv", dqkv, 2 * C, r.dv, B * T, 3 * C, C, 1e-5, 1e-4);
    ref_attention_free(&r);
    free(qkv), free(dout), free(out), free(lse), free(dqkv);
  }
  end();
}

/* ---- gelu, add, copy ---- */

typedef struct gelu_state {
  int64_t n;            /* elements */
  float *x, *out, *R;   /* (n) each */
} gelu_state;

static double gelu_loss(void *p) {
  gelu_state *s = p;
  prt_gelu_fwd(s->out, s->x, s->n);
  return dot_out(s->out, s->R, s->n);
}

static void test_gelu(void) {
  /* The polynomial tanh behind GELU, against double tanh over its whole range: 2.4e-7 absolute
   * is about 2 float ulps of 1.0, well inside the GPT's 1e-4 oracle tolerances. */
  begin("tanh_approx");
  double worst = 0, at = 0;
  for (int64_t i = -1200000; i <= 1200000; i++) {
    float u = (float)i * 1e-5f;
    double err = fabs((double)prt_tanh_approx(u) - tanh((double)u));
    if (err > worst) worst = err, at = u;
  }
  if (worst > 3e-7) fail("max |tanh_approx - tanh| = %.3g at u = %g, want <= 3e-7", worst, at);
  end();

  begin("gelu_fwd");
  gelu_state s = {.n = 40};
  s.x = rand_vec(s.n, 4);
  s.out = rand_vec(s.n, 1);
  s.R = rand_vec(s.n, 1);
  s.x[0] = 12.0f, s.x[1] = -12.0f, s.x[2] = 0.0f; /* saturated tails and zero */
  double want[40];
  for (int64_t i = 0; i < s.n; i++) {
    double x = s.x[i];
    want[i] = 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  gelu_loss(&s);
  close_check("out", s.out, want, s.n, 1e-6, 1e-5);
  end();

  begin("gelu_bwd");
  float *dx = rand_vec(s.n, 9);
  prt_gelu_bwd(dx, s.R, s.x, s.n);
  fd_check("dx", s.x, s.n, dx, gelu_loss, &s);
  free(s.x), free(s.out), free(s.R), free(dx);
  end();

  /* Exact GELU's vectorized 1 + erf(u), against double erf over [-12, 12] (where it
   * saturates to 0 and 2 in float): within 2.5e-7 absolute (about 2 float ulps of 1.0; libm's
   * erff is within 1 ulp of erf, 6e-8 below 1.0), and for u <= -1, where GELU takes it as
   * erfc(-u) to keep its tail, within 1e-5 relative down to u = -9 (the clamp: erfc(9) = 4e-37,
   * near float's smallest normal; the float rounding of u^2 in e^(-u^2), up to 81 * 6e-8,
   * dominates there). 1 + erff(u) would be 0, all relative error, below u = -3.9. */
  begin("one_plus_erf_approx");
  double worstAbs = 0, worstRel = 0, atAbs = 0, atRel = 0;
  for (int64_t i = -1200000; i <= 1200000; i++) {
    float u = (float)i * 1e-5f;
    double exact = 1.0 + erf((double)u), got = prt_one_plus_erf_approx(u);
    if (u <= -1.0f) exact = erfc(-(double)u);
    double err = fabs(got - exact);
    if (err > worstAbs) worstAbs = err, atAbs = u;
    if (u <= -1.0f && u >= -9.0f && err / exact > worstRel) worstRel = err / exact, atRel = u;
  }
  if (worstAbs > 2.5e-7)
    fail("max |one_plus_erf_approx - (1 + erf)| = %.3g at u = %g, want <= 2.5e-7", worstAbs,
         atAbs);
  if (worstRel > 1e-5)
    fail("max relative error of one_plus_erf_approx over [-9, -1] = %.3g at u = %g, want <= 1e-5",
         worstRel, atRel);
  end();

  /* Exact GELU and its gradient on a grid of [-12, 12], against the same formulas in double:
   * x/2 (1 + erf(x/sqrt(2))) and (1 + erf(x/sqrt(2)))/2 + x e^(-x^2/2)/sqrt(2 pi). */
  begin("gelu_erf");
  enum { GRID = 24001 };
  float *gx = malloc(GRID * sizeof(float)), *gy = malloc(GRID * sizeof(float));
  float *gone = malloc(GRID * sizeof(float)), *gdx = malloc(GRID * sizeof(float));
  double *wantY = malloc(GRID * sizeof(double)), *wantDx = malloc(GRID * sizeof(double));
  for (int64_t i = 0; i < GRID; i++) {
    gx[i] = (float)(i - GRID / 2) * 1e-3f;
    gone[i] = 1.0f;
    double x = gx[i], cdf = 0.5 * erfc(-x / sqrt(2.0));
    wantY[i] = x * cdf;
    wantDx[i] = cdf + x * exp(-0.5 * x * x) / sqrt(2 * M_PI);
  }
  prt_gelu_erf_fwd(gy, gx, GRID);
  close_check("gelu_erf_fwd", gy, wantY, GRID, 2e-7, 2e-7);
  prt_gelu_erf_bwd(gdx, gone, gx, GRID);
  close_check("gelu_erf_bwd", gdx, wantDx, GRID, 3e-7, 2e-7);
  free(gx), free(gy), free(gone), free(gdx), free(wantY), free(wantDx);
  end();

  begin("add_copy");
  float a[5] = {1, 2, 3, 4, 5}, b[5] = {0.5f, -2, 7, 0, 1}, o[5], c[5];
  prt_add(o, a, b, 5);
  prt_copy(c, o, 5);
  for (int i = 0; i < 5; i++)
    if (c[i] != a[i] + b[i])
      fail("add/copy element %d: got %g, want %g", i, c[i], a[i] + b[i]);
  end();

  begin("bias_add"); /* out(M,N) = x + b on every row (tensor parallelism) */
  float x6[6] = {1, 2, 3, 4, 5, 6}, bias[3] = {0.5f, -1, 10}, y6[6];
  prt_bias_add(y6, x6, bias, 2, 3);
  for (int i = 0; i < 6; i++)
    if (y6[i] != x6[i] + bias[i % 3])
      fail("bias_add element %d: got %g, want %g", i, y6[i], x6[i] + bias[i % 3]);
  end();
}

/* ---- relu (added through the op list: include/piper/tdag_ops.def) ---- */

static double relu_loss(void *p) {
  gelu_state *s = p;
  prt_relu_fwd(s->out, s->x, s->n);
  return dot_out(s->out, s->R, s->n);
}

static void test_relu(void) {
  /* The forward against torch.relu's definition, exactly (a comparison and a copy: no
   * rounding), on random values and the special ones: 0 and -0 give +0, a NaN passes, the
   * infinities clamp or pass. */
  begin("relu_fwd");
  gelu_state s = {.n = 48};
  s.x = rand_vec(s.n, 4);
  s.out = rand_vec(s.n, 1);
  s.R = rand_vec(s.n, 1);
  float special[6] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-30f};
  memcpy(s.x + 40, special, sizeof special);
  relu_loss(&s);
  for (int64_t i = 0; i < s.n; i++) {
    float x = s.x[i], want = isnan(x) ? x : (x > 0 ? x : 0.0f);
    if (memcmp(&s.out[i], &want, sizeof want) && !(isnan(x) && isnan(s.out[i])))
      fail("relu_fwd[%lld] of %g: got %g, want %g", (long long)i, x, s.out[i], want);
  }
  end();

  /* The backward against central differences of the forward (1e-2 steps: the inputs are kept
   * 0.05 away from the kink at 0, where the difference would straddle it), and at the special
   * values against torch's threshold_backward: dx = x <= 0 ? 0 : dy, so 0 at x = 0, dy at NaN. */
  begin("relu_bwd");
  s.n = 40;
  for (int64_t i = 0; i < s.n; i++) s.x[i] += s.x[i] < 0 ? -0.05f : 0.05f;
  float *dx = rand_vec(48, 9);
  prt_relu_bwd(dx, s.R, s.x, s.n);
  fd_check("dx", s.x, s.n, dx, relu_loss, &s);
  memcpy(s.x + 40, special, sizeof special);
  prt_relu_bwd(dx, s.R, s.x, 48);
  for (int64_t i = 40; i < 46; i++) {
    float x = s.x[i], want = x <= 0 ? 0.0f : s.R[i];
    if (dx[i] != want) fail("relu_bwd[%lld] at x = %g: got %g, want %g", (long long)i, x, dx[i], want);
  }
  free(s.x), free(s.out), free(s.R), free(dx);
  end();
}

/* ---- cross entropy ---- */

typedef struct ce_state {
  int64_t N, V;      /* sizes */
  float *logits;     /* (N, V) */
  float *probs;      /* (N, V) */
  int32_t *targets;  /* (N) */
  float loss;        /* mean loss */
} ce_state;

static double ce_loss(void *p) {
  ce_state *s = p;
  prt_cross_entropy_fwd(&s->loss, s->probs, s->logits, s->targets, s->N, s->V, 0.0f);
  return s->loss;
}

static void test_cross_entropy(void) {
  begin("cross_entropy_fwd");
  int32_t targets[4] = {0, 6, 3, 3};
  ce_state s = {.N = 4, .V = 7, .targets = targets};
  s.logits = rand_vec(s.N * s.V, 3);
  s.probs = rand_vec(s.N * s.V, 1);
  s.logits[2 * 7 + 1] = 1000.0f; /* a huge logit: the softmax must subtract the max */
  ce_loss(&s);
  double want = 0;
  for (int64_t i = 0; i < s.N; i++) {
    const float *l = s.logits + i * s.V;
    double mx = l[0], sum = 0;
    for (int64_t j = 1; j < s.V; j++) mx = l[j] > mx ? l[j] : mx;
    for (int64_t j = 0; j < s.V; j++) sum += exp(l[j] - mx);
    want += (log(sum) - (l[targets[i]] - mx)) / (double)s.N;
  }
  close_check("loss", &s.loss, &want, 1, 1e-5, 1e-6);
  end();

  begin("cross_entropy_bwd");
  s.logits[2 * 7 + 1] = 2.0f; /* back to the smooth regime for finite differences */
  ce_loss(&s);
  float *dlogits = rand_vec(s.N * s.V, 9);
  prt_cross_entropy_bwd(dlogits, s.probs, s.targets, s.N, s.V, s.N, 0.0f);
  fd_check("dlogits", s.logits, s.N * s.V, dlogits, ce_loss, &s);
  free(s.logits), free(s.probs), free(dlogits);
  end();
}

/* ---- adamw ---- */

static void test_adamw(void) {
  begin("adamw");
  enum { n = 16 };
  prt_ctx *ctx = prt_ctx_create();
  ctx->lr = 1e-2;
  ctx->weight_decay = 0.1;
  for (int decay = 0; decay < 2; decay++) {
    float p[n], m[n] = {0}, v[n] = {0};
    double pr[n], mr[n] = {0}, vr[n] = {0};
    for (int i = 0; i < n; i++) pr[i] = p[i] = frand();
    for (int t = 1; t <= 3; t++) {
      float g[n];
      for (int i = 0; i < n; i++) g[i] = frand() * (i % 4 == 0 ? 1e-4f : 1.0f);
      ctx->adam_t = t;
      prt_adamw(ctx, p, g, m, v, NULL, n, 0.9f, 0.999f, 1e-8f, decay);
      /* The reference: AdamW as written in the torch docs, in double. */
      double b1 = 0.9, b2 = 0.999, lr = 1e-2, wd = 0.1, eps = 1e-8;
      for (int i = 0; i < n; i++) {
        if (decay) pr[i] -= lr * wd * pr[i];
        mr[i] = b1 * mr[i] + (1 - b1) * g[i];
        vr[i] = b2 * vr[i] + (1 - b2) * (double)g[i] * g[i];
        double mhat = mr[i] / (1 - pow(b1, t)), vhat = vr[i] / (1 - pow(b2, t));
        pr[i] -= lr * mhat / (sqrt(vhat) + eps);
      }
    }
    /* fp32 state after 3 updates: a few float ulps of the summed terms, which are O(1)
     * for p, O(0.3) for m (ulp 3e-8; m itself may cancel to much less) and O(3e-3) for v */
    close_check(decay ? "p (decay)" : "p", p, pr, n, 1e-6, 1e-6);
    close_check(decay ? "m (decay)" : "m", m, mr, n, 1e-7, 1e-6);
    close_check(decay ? "v (decay)" : "v", v, vr, n, 1e-9, 1e-6);
  }
  prt_ctx_destroy(ctx);
  end();
}

/* ---- init ---- */

static void test_init(void) {
  begin("init_normal");
  /* From the Python reimplementation in the comment of runtime/init.c. */
  static const struct {
    uint64_t seed;
    const char *name;
    float want[5];
  } golden[] = {
      {1337, "h.0.attn.c_attn.weight",
       {-0.0255384892f, -0.00343847275f, -0.0671721771f, 0.00306565454f, 0.0267280377f}},
      {0, "wte", {0.0263168588f, 0.0328948647f, -0.00734785711f, -0.00249925768f,
                  0.033605177f}},
  };
  for (int g = 0; g < 2; g++) {
    float out[5];
    prt_init_normal(out, 5, golden[g].seed, golden[g].name, 0.02);
    for (int i = 0; i < 5; i++)
      if (out[i] != golden[g].want[i])
        fail("%s seed %llu [%d]: got %.9g, want %.9g", golden[g].name,
             (unsigned long long)golden[g].seed, i, out[i], golden[g].want[i]);
  }
  enum { n = 200001 }; /* odd: the last Box-Muller pair is cut */
  float *x = malloc(n * sizeof(float));
  prt_init_normal(x, n, 7, "big", 0.02);
  double s = 0, s2 = 0;
  for (int i = 0; i < n; i++) s += x[i], s2 += (double)x[i] * x[i];
  double mean = s / n, sd = sqrt(s2 / n - mean * mean);
  /* standard errors: mean 0.02/sqrt(n) = 4.5e-5, std 0.02/sqrt(2n) = 3.2e-5; allow 5x */
  if (fabs(mean) > 2.3e-4 || fabs(sd - 0.02) > 1.6e-4)
    fail("normal(0, 0.02) sample has mean %g, std %g", mean, sd);
  free(x);
  end();
}

/* ---- contexts for runtime checks ---- */

/* A context with three parameters (one per init kind), an optimizer tensor and inputs. */
static prt_ctx *small_ctx(void) {
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_tensor(ctx, 0, "w", PRT_PARAM, PRT_INIT_NORMAL, 2, 3, 4, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "b", PRT_PARAM, PRT_INIT_ZEROS, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, 2, "ln", PRT_PARAM, PRT_INIT_ONES, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, 3, "w.m", PRT_OPTIM, 0, 2, 3, 4, 0, 0, 0);
  prt_declare_tensor(ctx, 4, "tokens", PRT_INPUT, 0, 2, 2, 4, 0, 0, 1);
  prt_declare_tensor(ctx, 5, "targets", PRT_INPUT, 0, 2, 2, 4, 0, 0, 1);
  prt_declare_tensor(ctx, 6, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 0);
  prt_declare_arena(ctx, 100);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  return ctx;
}

static void path_in_tmp(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/%s", tmpdir, name);
}

static void test_runtime_basics(void) {
  begin("ctx_init_kinds");
  prt_ctx *ctx = small_ctx();
  prt_init_params(ctx, 1337);
  const float *w = prt_tensor(ctx, 0), *b = prt_tensor(ctx, 1), *ln = prt_tensor(ctx, 2);
  float want_w[12];
  prt_init_normal(want_w, 12, 1337, "w", 0.02);
  if (memcmp(w, want_w, sizeof want_w)) fail("w is not normal(0, 0.02) from (1337, \"w\")");
  for (int i = 0; i < 4; i++)
    if (b[i] != 0.0f || ln[i] != 1.0f) fail("b[%d] = %g, ln[%d] = %g", i, b[i], i, ln[i]);
  if ((uintptr_t)prt_arena(ctx) % 64 || (uintptr_t)prt_tensor(ctx, 3) % 64)
    fail("arena or tensor storage is not 64-byte aligned");
  if (prt_ctx_param_count(ctx) != 20) fail("param count %lld, want 20",
                                           (long long)prt_ctx_param_count(ctx));
  prt_ctx_destroy(ctx);
  end();

  begin("declare_errors");
  static const char *const cases[] = {"gap", "duplicate name", "duplicate id", "bad input",
                                      "bad kind", "zero dim"};
  for (int k = 0; k < 6; k++) {
    ctx = prt_ctx_create();
    switch (k) {
    case 0: prt_declare_tensor(ctx, 1, "a", PRT_PARAM, 0, 1, 4, 0, 0, 0, 0); break;
    case 1:
      prt_declare_tensor(ctx, 0, "a", PRT_PARAM, 0, 1, 4, 0, 0, 0, 0);
      prt_declare_tensor(ctx, 1, "a", PRT_OPTIM, 0, 1, 4, 0, 0, 0, 0);
      break;
    case 2:
      prt_declare_tensor(ctx, 0, "a", PRT_PARAM, 0, 1, 4, 0, 0, 0, 0);
      prt_declare_tensor(ctx, 0, "b", PRT_PARAM, 0, 1, 4, 0, 0, 0, 0);
      break;
    case 3: prt_declare_tensor(ctx, 0, "images", PRT_INPUT, 0, 2, 4, 4, 0, 0, 0); break;
    case 4: prt_declare_tensor(ctx, 0, "a", 9, 0, 1, 4, 0, 0, 0, 0); break;
    case 5: prt_declare_tensor(ctx, 0, "a", PRT_PARAM, 0, 2, 4, 0, 0, 0, 0); break;
    }
    prt_status st = {0};
    if (prt_ctx_allocate(ctx, &st) == 0) fail("%s: accepted", cases[k]);
    else if (!strstr(st.msg, "piper_setup") && !strstr(st.msg, "prt_declare_tensor"))
      fail("%s: message does not say where: %s", cases[k], st.msg);
    prt_ctx_destroy(ctx);
  }
  end();

  begin("data_batches");
  ctx = small_ctx(); /* tokens (B=2, T=4), first_sample 1 */
  char path[256];
  path_in_tmp(path, sizeof path, "data.bin");
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 20; i++) fputc(100 + i, f);
  fclose(f);
  prt_data d;
  prt_status st = {0};
  if (prt_data_open(&d, path, PRT_DATA_BYTES, 4, 0, &st)) fail("open: %s", st.msg);
  else {
    for (int64_t s = 0; s < 4; s++) {
      prt_data_fill(&d, ctx, s);
      const int32_t *tok = prt_tensor(ctx, 4), *tgt = prt_tensor(ctx, 5);
      for (int64_t b = 0; b < 2; b++) {
        int64_t o = ((s * 2 + 1 + b) * 4) % (20 - 4 - 1);
        for (int64_t t = 0; t < 4; t++)
          if (tok[b * 4 + t] != 100 + o + t || tgt[b * 4 + t] != 101 + o + t)
            fail("step %lld row %lld pos %lld: tokens %d targets %d, want offset %lld",
                 (long long)s, (long long)b, (long long)t, tok[b * 4 + t], tgt[b * 4 + t],
                 (long long)o);
      }
    }
    prt_data_close(&d);
  }
  st = (prt_status){0};
  if (prt_data_open(&d, path, PRT_DATA_BYTES, 19, 0, &st) == 0 || !strstr(st.msg, "20 tokens") ||
      !strstr(st.msg, "at least T + 2 = 21"))
    fail("short data not reported with its length and the minimum: %s", st.msg);
  unlink(path);
  st = (prt_status){0};
  path_in_tmp(path, sizeof path, "no-such-file");
  if (prt_data_open(&d, path, PRT_DATA_BYTES, 4, 0, &st) == 0 || !strstr(st.msg, path))
    fail("missing data file not reported by name: %s", st.msg);
  st = (prt_status){0};
  if (prt_data_open(&d, NULL, PRT_DATA_BYTES, 128, 0, &st) || d.n < 8 * 1024) fail("built-in corpus: %s", st.msg);
  else prt_data_close(&d);
  prt_ctx_destroy(ctx);
  end();
}

/* --data-format u16 / u32: little-endian ids, written here byte by byte so the test does not
 * depend on the host's order; the windows are those of the bytes format, in tokens. */
static void test_data_formats(void) {
  begin("data_formats");
  static const prt_data_format formats[] = {PRT_DATA_U16, PRT_DATA_U32};
  for (int fi = 0; fi < 2; fi++) {
    prt_data_format fmt = formats[fi];
    prt_ctx *ctx = small_ctx(); /* tokens (B=2, T=4), first_sample 1 */
    char path[256];
    path_in_tmp(path, sizeof path, "tokens.bin");
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 20; i++) { /* token i = 40000 + 7 i: above 255, below 65536 */
      uint32_t v = 40000u + 7u * (uint32_t)i;
      for (int k = 0; k < (int)fmt; k++) fputc((int)(v >> (8 * k)) & 0xff, f);
    }
    fclose(f);
    prt_data d;
    prt_status st = {0};
    if (prt_data_open(&d, path, fmt, 4, 50000, &st)) fail("open %d: %s", (int)fmt, st.msg);
    else {
      if (d.n != 20) fail("%d-byte tokens: n = %lld, want 20", (int)fmt, (long long)d.n);
      prt_data_fill(&d, ctx, 1);
      const int32_t *tok = prt_tensor(ctx, 4), *tgt = prt_tensor(ctx, 5);
      for (int64_t b = 0; b < 2; b++) {
        int64_t o = ((1 * 2 + 1 + b) * 4) % (20 - 4 - 1);
        for (int64_t t = 0; t < 4; t++)
          if (tok[b * 4 + t] != 40000 + 7 * (o + t) || tgt[b * 4 + t] != 40000 + 7 * (o + t + 1))
            fail("%d-byte tokens row %lld pos %lld: %d %d, want offset %lld", (int)fmt,
                 (long long)b, (long long)t, tok[b * 4 + t], tgt[b * 4 + t], (long long)o);
      }
      prt_data_close(&d);
    }
    /* token 3 (40021) is the first at or past V = 40020: named with its position */
    st = (prt_status){0};
    if (prt_data_open(&d, path, fmt, 4, 40020, &st) == 0 || !strstr(st.msg, "token 40021") ||
        !strstr(st.msg, "position 3") || !strstr(st.msg, path))
      fail("%d-byte token past V not named with its position: %s", (int)fmt, st.msg);
    /* no vocabulary to check against: refused rather than unchecked */
    st = (prt_status){0};
    if (prt_data_open(&d, path, fmt, 4, 0, &st) == 0 || !strstr(st.msg, "vocabulary"))
      fail("%d-byte tokens without V accepted: %s", (int)fmt, st.msg);
    /* a size that is not a whole number of tokens */
    f = fopen(path, "ab");
    fputc(1, f);
    fclose(f);
    st = (prt_status){0};
    if (prt_data_open(&d, path, fmt, 4, 50000, &st) == 0 || !strstr(st.msg, "whole number"))
      fail("%d-byte tokens with a trailing byte accepted: %s", (int)fmt, st.msg);
    unlink(path);
    prt_ctx_destroy(ctx);
  }
  prt_data_format out;
  prt_status st = {0};
  if (prt_data_format_parse("u8", &out, &st) != 2 || !strstr(st.msg, "--data-format"))
    fail("--data-format u8 accepted: %s", st.msg);
  st = (prt_status){0};
  if (prt_data_format_parse("u16", &out, &st) || out != PRT_DATA_U16) fail("u16 not parsed");
  end();
}

/* ---- checkpoints ---- */

/* Loads `path` into a fresh small context; 0 on success, else the status message in msg.
 * Also checks a failed load leaves the parameters as they were. */
static int try_load(const char *path, char *msg, size_t cap) {
  prt_ctx *ctx = small_ctx();
  prt_init_params(ctx, 99);
  float before[12];
  memcpy(before, prt_tensor(ctx, 0), sizeof before);
  prt_status st = {0};
  int rc = prt_checkpoint_load(ctx, path, NULL, &st);
  snprintf(msg, cap, "%s", st.msg);
  if (rc && memcmp(before, prt_tensor(ctx, 0), sizeof before))
    fail("a failed load changed the parameters");
  prt_ctx_destroy(ctx);
  return rc;
}

/* Expects loading `path` to fail with a message containing each of the strings. */
static void expect_load_error(const char *path, const char *a, const char *b) {
  char msg[1024];
  if (try_load(path, msg, sizeof msg) == 0) {
    fail("loading %s succeeded", path);
    return;
  }
  if (!strstr(msg, path) || (a && !strstr(msg, a)) || (b && !strstr(msg, b)))
    fail("message lacks the file, '%s' or '%s': %s", a ? a : "", b ? b : "", msg);
}

static void write_raw(const char *path, const char *header, size_t data_bytes) {
  FILE *f = fopen(path, "wb");
  uint64_t n = strlen(header);
  fwrite(&n, 8, 1, f);
  fwrite(header, 1, n, f);
  for (size_t i = 0; i < data_bytes; i++) fputc(0, f);
  fclose(f);
}

/* Entries for hand-made checkpoint files: w (3, 4), b (4), ln (4), all zeros; the shapes
 * d34, d4, d5 and zeros serve the variations. */
static float zeros[16];
static int64_t d34[2] = {3, 4}, d4[1] = {4}, d5[1] = {5};
static void ckpt_entries(prt_st_entry *w, prt_st_entry *b, prt_st_entry *ln) {
  *w = (prt_st_entry){"w", 2, d34, zeros};
  *b = (prt_st_entry){"b", 1, d4, zeros};
  *ln = (prt_st_entry){"ln", 1, d4, zeros};
}

static void test_checkpoint_roundtrip(void) {
  begin("checkpoint_roundtrip");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  char tmp[300];
  /* parameters and optimizer state ("w.m") by name, and the step in the metadata */
  prt_ctx *a = small_ctx(), *b = small_ctx();
  prt_init_params(a, 5);
  ((float *)prt_tensor(a, 1))[2] = 0.25f; /* make every tensor non-trivial */
  for (int i = 0; i < 12; i++) ((float *)prt_tensor(a, 3))[i] = (float)i / 3;
  prt_status st = {0};
  if (prt_checkpoint_save(a, path, 7, &st)) fail("save: %s", st.msg);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  if (access(tmp, F_OK) == 0) fail("%s left behind", tmp);
  FILE *f = fopen(path, "rb");
  uint64_t hlen = 0;
  if (!f || fread(&hlen, 8, 1, f) != 1 || hlen % 8) fail("header length %llu not a multiple "
                                                         "of 8", (unsigned long long)hlen);
  char header[1024] = {0};
  if (f && hlen < sizeof header && fread(header, 1, hlen, f) != hlen) fail("short header");
  if (f) fclose(f);
  if (!strstr(header, "\"__metadata__\":{\"format\":\"pt\",\"step\":\"7\"}"))
    fail("metadata lacks the step: %s", header);
  struct stat sb;
  if (stat(path, &sb) || (uint64_t)sb.st_size != 8 + hlen + (20 + 12) * 4)
    fail("file does not hold exactly the 20 parameters and 12 optimizer floats");
  prt_ckpt_info info;
  if (prt_checkpoint_load(b, path, &info, &st)) fail("load: %s", st.msg);
  for (int64_t id = 0; id < 4; id++)
    if (memcmp(prt_tensor(a, id), prt_tensor(b, id), (size_t)a->tensors[id].numel * 4))
      fail("tensor %s differs after the round trip", a->tensors[id].name);
  if (info.step != 7 || !info.optim) fail("load says step %lld, optim %d; want 7, 1",
                                          (long long)info.step, info.optim);
  prt_ctx_destroy(a);
  prt_ctx_destroy(b);
  end();
}

static void test_checkpoint_missing_tensor(void) {
  begin("checkpoint_missing_tensor");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  prt_st_entry w, bb, ln;
  ckpt_entries(&w, &bb, &ln);
  prt_st_entry e1[] = {w, ln};
  prt_status st = {0};
  prt_safetensors_write(path, e1, 2, -1, &st);
  if (st.code) fail("writing the test file: %s", st.msg);
  expect_load_error(path, "lacks parameter 'b'", "[4]");
  end();
}

static void test_checkpoint_wrong_shape(void) {
  begin("checkpoint_wrong_shape");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  prt_st_entry w, bb, ln;
  ckpt_entries(&w, &bb, &ln);
  prt_status st = {0};
  prt_st_entry e2[] = {w, {"b", 1, d5, zeros}, ln};
  prt_safetensors_write(path, e2, 3, -1, &st);
  if (st.code) fail("writing the test file: %s", st.msg);
  expect_load_error(path, "shape [5]", "expected [4]");
  end();
}

static void test_checkpoint_wrong_dtype(void) {
  begin("checkpoint_wrong_dtype");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  char msg[1024];
  /* I8 and F64 are not read (the message names the tensor, the dtype and the file); BF16 and
   * F16 are, when their bytes are 2 per element */
  write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},"
                  "\"b\":{\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[48,52]},"
                  "\"ln\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[52,68]}}", 68);
  expect_load_error(path, "'b' has dtype I8", "reads F32, BF16 or F16");
  write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},"
                  "\"b\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[48,80]},"
                  "\"ln\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[80,96]}}", 96);
  expect_load_error(path, "'b' has dtype F64", "reads F32, BF16 or F16");
  write_raw(path, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]},"
                  "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[48,64]},"
                  "\"ln\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[64,80]}}", 80);
  expect_load_error(path, "'b' spans 16 bytes", "BF16 [4] needs 8");
  const char *half[] = {"BF16", "F16"};
  for (int k = 0; k < 2; k++) {
    char hdr[400];
    snprintf(hdr, sizeof hdr, "{\"w\":{\"dtype\":\"%s\",\"shape\":[3,4],\"data_offsets\":"
             "[0,24]},\"b\":{\"dtype\":\"%s\",\"shape\":[4],\"data_offsets\":[24,32]},"
             "\"ln\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[32,48]}}", half[k],
             half[k]);
    write_raw(path, hdr, 48);
    if (try_load(path, msg, sizeof msg)) fail("a %s checkpoint did not load: %s", half[k], msg);
  }
  end();
}

static void test_half_conversions(void) {
  begin("half_conversions");
  /* bit patterns against values worked out by hand (the e2e test checkpoint-bf16.test checks
   * every BF16 and F16 pattern against PyTorch) */
  struct { uint16_t h; float f; } f16[] = {
      {0x3C00, 1.0f}, {0xC000, -2.0f}, {0x7BFF, 65504.0f}, {0x0001, 0x1p-24f},
      {0x03FF, 1023 * 0x1p-24f}, {0x0400, 0x1p-14f}, {0x8000, -0.0f}, {0x7C00, INFINITY},
      {0xFC00, -INFINITY}};
  for (size_t i = 0; i < sizeof f16 / sizeof f16[0]; i++) {
    float got = prt_f16_to_f32(f16[i].h);
    if (memcmp(&got, &f16[i].f, 4)) fail("F16 0x%04X -> %a, want %a", f16[i].h, got, f16[i].f);
  }
  if (!isnan(prt_f16_to_f32(0x7E01))) fail("F16 NaN 0x7E01 is not a NaN");
  if (prt_bf16_to_f32(0x3F81) != 1.0078125f) fail("BF16 0x3F81 is not 1.0078125");
  /* fp32 -> BF16, ties to even: 1+2^-8 is halfway between 0x3F80 (even) and 0x3F81 */
  struct { uint32_t u; uint16_t h; } rne[] = {
      {0x3F808000, 0x3F80}, {0x3F818000, 0x3F82}, {0x3F808001, 0x3F81}, {0x3F807FFF, 0x3F80},
      {0xBF818000, 0xBF82}, {0x7F7FFFFF, 0x7F80}, {0x7F800000, 0x7F80}, {0x7FC00001, 0x7FC0},
      {0xFFFFFFFF, 0x7FC0}};
  for (size_t i = 0; i < sizeof rne / sizeof rne[0]; i++) {
    float f;
    memcpy(&f, &rne[i].u, 4);
    if (prt_f32_to_bf16(f) != rne[i].h)
      fail("fp32 0x%08X -> BF16 0x%04X, want 0x%04X", rne[i].u, prt_f32_to_bf16(f), rne[i].h);
  }
  end();
}

static void test_checkpoint_extra_tensor(void) {
  begin("checkpoint_extra_tensor");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  prt_st_entry w, bb, ln;
  ckpt_entries(&w, &bb, &ln);
  prt_status st = {0};
  char msg[1024];
  prt_st_entry e3[] = {w, bb, ln, {"head", 1, d4, zeros}};
  prt_safetensors_write(path, e3, 4, -1, &st);
  expect_load_error(path, "'head'", "optim.");
  prt_st_entry e4[] = {{"optim.w.m", 2, d34, zeros}, w, bb, ln};
  prt_safetensors_write(path, e4, 4, -1, &st);
  if (try_load(path, msg, sizeof msg)) fail("optim.* tensor not ignored: %s", msg);
  if (st.code) fail("writing test files: %s", st.msg);
  end();
}

static void test_checkpoint_truncated(void) {
  begin("checkpoint_truncated");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  prt_st_entry w, bb, ln;
  ckpt_entries(&w, &bb, &ln);
  prt_status st = {0};
  struct stat sb;
  prt_st_entry e5[] = {w, bb, ln};
  prt_safetensors_write(path, e5, 3, -1, &st);
  if (st.code || stat(path, &sb)) fail("writing the test file: %s", st.msg);
  if (truncate(path, sb.st_size - 4)) fail("truncate failed"); /* cuts the last tensor */
  expect_load_error(path, "truncated", "'ln'");
  if (truncate(path, 40)) fail("truncate failed"); /* inside the header */
  expect_load_error(path, "header", NULL);
  if (truncate(path, 5)) fail("truncate failed"); /* not even the header length */
  expect_load_error(path, "truncated", NULL);
  end();
}

static void test_checkpoint_bad_header(void) {
  begin("checkpoint_bad_header");
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  char msg[1024];
  static const char *const bad[] = {
      /* no closing brace */
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}",
      /* negative dim */
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,-4],\"data_offsets\":[0,48]}}",
      /* no data_offsets */
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4]}}",
      /* begin > end */
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[48,0]}}",
      /* not an object, missing ':', trailing text */
      "[1, 2, 3]",
      "{\"w\" {}}",
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}} junk",
  };
  for (int k = 0; k < 7; k++) {
    write_raw(path, bad[k], 72);
    expect_load_error(path, "bad checkpoint header", NULL);
  }
  /* escapes and unknown fields are fine: "\u0077" is "w" */
  write_raw(path, "{\"__metadata__\":{\"a\":[1,{\"b\":null}]},"
                  "\"\\u0077\":{\"dtype\":\"F32\",\"x\":-1.5e3,\"shape\":[3,4],"
                  "\"data_offsets\":[0,48]},"
                  "\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[48,64]},"
                  "\"ln\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[64,80]}}   ", 80);
  if (try_load(path, msg, sizeof msg)) fail("valid header with escapes rejected: %s", msg);
  end();
}

static void test_checkpoint_missing_file(void) {
  begin("checkpoint_missing_file");
  char tmp[300];
  path_in_tmp(tmp, sizeof tmp, "absent.safetensors");
  expect_load_error(tmp, "cannot open", NULL);
  prt_status st = {0};
  prt_ctx *c = small_ctx();
  path_in_tmp(tmp, sizeof tmp, "no-dir/x.safetensors");
  if (prt_checkpoint_save(c, tmp, -1, &st) == 0 || !strstr(st.msg, "no-dir"))
    fail("save into a missing directory not reported: %s", st.msg);
  prt_ctx_destroy(c);
  end();
}

static void test_grads_dump(void) {
  begin("grads_dump");
  char path[256];
  prt_ctx *c = small_ctx();
  c->dump_step = 0;
  c->step = 0;
  float gw[12], gb[4] = {1, 2, 3, 4}, gl[4] = {-1, -2, -3, -4};
  for (int i = 0; i < 12; i++) gw[i] = (float)i / 7;
  prt_observe_grad(c, 0, gw);
  prt_observe_grad(c, 1, gb);
  path_in_tmp(path, sizeof path, "grads.safetensors");
  prt_status st = {0};
  if (prt_grads_save(c, path, &st) == 0 || !strstr(st.msg, "'ln'"))
    fail("a parameter whose gradient was never observed not reported: %s", st.msg);
  prt_observe_grad(c, 2, gl);
  st = (prt_status){0};
  if (prt_grads_save(c, path, &st)) fail("dump: %s", st.msg);
  prt_ctx *r = small_ctx(); /* the dump is keyed by parameter name: load it as parameters */
  if (prt_checkpoint_load(r, path, NULL, &st)) fail("reading the dump: %s", st.msg);
  if (memcmp(prt_tensor(r, 0), gw, sizeof gw) || memcmp(prt_tensor(r, 1), gb, sizeof gb) ||
      memcmp(prt_tensor(r, 2), gl, sizeof gl))
    fail("dumped gradients differ from the observed ones");
  c->step = 1; /* other steps are not captured */
  gw[0] = 99;
  prt_observe_grad(c, 0, gw);
  if (c->tensors[0].grad_copy[0] == 99) fail("step 1 overwrote the step-0 gradient");
  prt_ctx_destroy(c);
  prt_ctx_destroy(r);
  unlink(path);
  end();
}

static void test_checkpoints(void) {
  test_checkpoint_roundtrip();
  test_checkpoint_missing_tensor();
  test_checkpoint_wrong_shape();
  test_checkpoint_wrong_dtype();
  test_half_conversions();
  test_checkpoint_extra_tensor();
  test_checkpoint_truncated();
  test_checkpoint_bad_header();
  test_checkpoint_missing_file();
  char path[256];
  path_in_tmp(path, sizeof path, "ckpt.safetensors");
  unlink(path); /* the file the checks above wrote */
  test_grads_dump();
}

/* ---- prt_main on a bigram model: logits = wte[tok] @ head^T, mean cross entropy ---- */

enum { BG_B = 4, BG_T = 16, BG_C = 8, BG_V = 256 };

static void bigram_setup(prt_ctx *ctx) {
  prt_declare_tensor(ctx, 0, "wte", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "head", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 2, "optim.wte.m", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 3, "optim.wte.v", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 4, "optim.head.m", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 5, "optim.head.v", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 6, "tokens", PRT_INPUT, 0, 2, BG_B, BG_T, 0, 0, 0);
  prt_declare_tensor(ctx, 7, "targets", PRT_INPUT, 0, 2, BG_B, BG_T, 0, 0, 0);
  prt_declare_tensor(ctx, 8, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 0);
  /* x, wpe (zero), logits, probs, dlogits, dx, dwte, dwpe, dhead */
  int64_t N = BG_B * BG_T;
  prt_declare_arena(ctx, 4 * (2 * N * BG_C + BG_T * BG_C + 3 * N * BG_V + BG_V * BG_C +
                              BG_T * BG_C + BG_V * BG_C));
}

static void bigram_step(prt_ctx *ctx) {
  int64_t N = BG_B * BG_T;
  float *wte = prt_tensor(ctx, 0), *head = prt_tensor(ctx, 1);
  const int32_t *tok = prt_tensor(ctx, 6), *tgt = prt_tensor(ctx, 7);
  float *x = prt_arena(ctx), *dx = x + N * BG_C, *wpe = dx + N * BG_C;
  float *logits = wpe + BG_T * BG_C, *probs = logits + N * BG_V, *dlogits = probs + N * BG_V;
  float *dwte = dlogits + N * BG_V, *dwpe = dwte + BG_V * BG_C, *dhead = dwpe + BG_T * BG_C;
  memset(wpe, 0, BG_T * BG_C * sizeof(float));
  prt_embedding_fwd(x, tok, wte, wpe, BG_B, BG_T, BG_C);
  prt_linear_fwd(logits, x, head, NULL, N, BG_V, BG_C);
  prt_cross_entropy_fwd(prt_tensor(ctx, 8), probs, logits, tgt, N, BG_V, 0.0f);
  prt_cross_entropy_bwd(dlogits, probs, tgt, N, BG_V, N, 0.0f);
  prt_linear_bwd_weight(dhead, dlogits, x, N, BG_V, BG_C);
  prt_linear_bwd_input(dx, dlogits, head, N, BG_V, BG_C);
  prt_embedding_bwd(dwte, dwpe, dx, tok, BG_B, BG_T, BG_C, BG_V);
  prt_observe_grad(ctx, 0, dwte);
  prt_observe_grad(ctx, 1, dhead);
  prt_adamw(ctx, wte, dwte, prt_tensor(ctx, 2), prt_tensor(ctx, 3), NULL,
            BG_V * BG_C, 0.9f, 0.999f, 1e-8f, 1);
  prt_adamw(ctx, head, dhead, prt_tensor(ctx, 4), prt_tensor(ctx, 5), NULL,
            BG_V * BG_C, 0.9f, 0.999f, 1e-8f, 1);
}

/* The plan run_main runs: the bigram unless a check swaps it. */
static void (*main_setup)(prt_ctx *) = bigram_setup;
static void (*main_step)(prt_ctx *) = bigram_step;

/* prt_main(argv = {"prt-kernel-test", args..., up to a NULL}) on the bigram model. */
static int run_main(const char *arg, ...) {
  char *argv[32] = {"prt-kernel-test"};
  int argc = 1;
  va_list ap;
  va_start(ap, arg);
  for (; arg && argc < 31; arg = va_arg(ap, const char *)) argv[argc++] = (char *)arg;
  va_end(ap);
  fflush(stdout);
  return prt_main(argc, argv, main_setup, main_step);
}

/* Reads the "loss" of each line of a metrics file into loss[]; returns the line count. */
static int read_losses(const char *path, double *loss, int cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (n < cap && fgets(line, sizeof line, f)) {
    if (strstr(line, "{\"kind\": \"phases\", ") == line) continue; /* start-up, first */
    char *p = strstr(line, "\"loss\": ");
    if (!p || !strstr(line, "\"step_ms\"") || !strstr(line, "\"tokens_per_s\"")) break;
    loss[n++] = strtod(p + 8, NULL);
  }
  fclose(f);
  return n;
}

/* ---- distributed plans on one device (the serial backend) ---- */

/* Runs fn in a child process with stderr in a file; returns its exit status (-1 if it did
 * not exit) and what it printed in err. For paths that end the process (prt_fatal). */
static int run_child(void (*fn)(void), char *err, size_t cap) {
  char path[256];
  path_in_tmp(path, sizeof path, "child.err");
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    fn();
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(err, 1, cap - 1, f) : 0;
  err[n] = 0;
  if (f) fclose(f);
  unlink(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The children below end in prt_fatal's exit with their context still allocated, on purpose;
 * a global root keeps it reachable, so LeakSanitizer does not report the deliberate exit as a
 * leak (whether a stack slot still held the pointer at exit was luck of the code layout). */
static prt_ctx *volatile serial_ctx_alive; /* volatile: a store never read is kept */

/* A context with the world of one, group 0 = {0}, and communication set up. */
static prt_ctx *serial_ctx(void) {
  prt_ctx *ctx = serial_ctx_alive = prt_ctx_create();
  int64_t zero = 0;
  prt_declare_world(ctx, 1);
  prt_declare_group(ctx, 0, 1, &zero);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  return ctx;
}

static void send_to_self(void) { prt_isend(serial_ctx(), NULL, 0, 0, 0, 0); }
static void wait_twice(void) {
  prt_ctx *ctx = serial_ctx();
  float x = 1;
  int64_t h = prt_iall_reduce(ctx, &x, 1, 0, 0);
  prt_wait(ctx, h);
  prt_wait(ctx, h);
}
static void not_a_member(void) {
  prt_ctx *ctx = serial_ctx();
  float x = 1;
  prt_iall_reduce(ctx, &x, 1, 1, 0);
}

static void world2_setup(prt_ctx *ctx) {
  prt_declare_world(ctx, 2);
  bigram_setup(ctx);
}
static void world2_main(void) {
  char *argv[] = {"prt-kernel-test", "--quiet", NULL};
  exit(prt_main(2, argv, world2_setup, bigram_step));
}

static int64_t micro_batch = BG_B; /* the global batch micro_setup declares */

/* The bigram split into two microbatches of B/2 rows: two tokens/targets/loss each, the
 * global batch declared; gradients are the full batch's (prt_cross_entropy_bwd's total). */
static void micro_setup(prt_ctx *ctx) {
  prt_declare_tensor(ctx, 0, "wte", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "head", PRT_PARAM, PRT_INIT_NORMAL, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 2, "optim.wte.m", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 3, "optim.wte.v", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 4, "optim.head.m", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_tensor(ctx, 5, "optim.head.v", PRT_OPTIM, 0, 2, BG_V, BG_C, 0, 0, 0);
  prt_declare_batch(ctx, micro_batch);
  for (int m = 0; m < 2; m++) {
    prt_declare_tensor(ctx, 6 + 3 * m, "tokens", PRT_INPUT, 0, 2, BG_B / 2, BG_T, 0, 0,
                       m * BG_B / 2);
    prt_declare_tensor(ctx, 7 + 3 * m, "targets", PRT_INPUT, 0, 2, BG_B / 2, BG_T, 0, 0,
                       m * BG_B / 2);
    prt_declare_tensor(ctx, 8 + 3 * m, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, BG_B / 2);
  }
  int64_t N = BG_B / 2 * BG_T;
  prt_declare_arena(ctx, 4 * (2 * N * BG_C + 2 * BG_T * BG_C + 3 * N * BG_V + 4 * BG_V * BG_C));
}

static void micro_step(prt_ctx *ctx) {
  int64_t Bm = BG_B / 2, N = Bm * BG_T;
  float *wte = prt_tensor(ctx, 0), *head = prt_tensor(ctx, 1);
  float *x = prt_arena(ctx), *dx = x + N * BG_C, *wpe = dx + N * BG_C;
  float *logits = wpe + BG_T * BG_C, *probs = logits + N * BG_V, *dlogits = probs + N * BG_V;
  float *dwte = dlogits + N * BG_V, *dwpe = dwte + BG_V * BG_C, *dhead = dwpe + BG_T * BG_C;
  float *gw = dhead + BG_V * BG_C, *gh = gw + BG_V * BG_C;
  memset(wpe, 0, BG_T * BG_C * sizeof(float));
  memset(gw, 0, 2 * BG_V * BG_C * sizeof(float));
  for (int m = 0; m < 2; m++) {
    const int32_t *tok = prt_tensor(ctx, 6 + 3 * m), *tgt = prt_tensor(ctx, 7 + 3 * m);
    prt_span_begin(ctx, "microbatch", 0);
    prt_embedding_fwd(x, tok, wte, wpe, Bm, BG_T, BG_C);
    prt_linear_fwd(logits, x, head, NULL, N, BG_V, BG_C);
    prt_cross_entropy_fwd(prt_tensor(ctx, 8 + 3 * m), probs, logits, tgt, N, BG_V, 0.0f);
    prt_cross_entropy_bwd(dlogits, probs, tgt, N, BG_V, BG_B * BG_T, 0.0f);
    prt_linear_bwd_weight(dhead, dlogits, x, N, BG_V, BG_C);
    prt_linear_bwd_input(dx, dlogits, head, N, BG_V, BG_C);
    prt_embedding_bwd(dwte, dwpe, dx, tok, Bm, BG_T, BG_C, BG_V);
    prt_add(gw, gw, dwte, BG_V * BG_C);
    prt_add(gh, gh, dhead, BG_V * BG_C);
    prt_span_end(ctx, 0);
  }
  prt_observe_grad(ctx, 0, gw);
  prt_observe_grad(ctx, 1, gh);
  prt_adamw(ctx, wte, gw, prt_tensor(ctx, 2), prt_tensor(ctx, 3), NULL,
            BG_V * BG_C, 0.9f, 0.999f, 1e-8f, 1);
  prt_adamw(ctx, head, gh, prt_tensor(ctx, 4), prt_tensor(ctx, 5), NULL,
            BG_V * BG_C, 0.9f, 0.999f, 1e-8f, 1);
}

static void test_serial_groups_of_one(void) {
  begin("serial_groups_of_one");
  prt_ctx *ctx = serial_ctx();
  float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {0};
  prt_wait(ctx, prt_iall_reduce(ctx, a, 6, 0, 0));
  prt_wait(ctx, prt_ireduce_scatter(ctx, a, b, 3, 0, 0));
  if (a[5] != 6 || b[0] != 1 || b[2] != 3 || b[3] != 0)
    fail("all_reduce or reduce_scatter over one member changed values");
  memset(b, 0, sizeof b);
  prt_wait(ctx, prt_iall_gather(ctx, a + 1, b, 4, 0, 0));
  if (b[0] != 2 || b[3] != 5 || b[4] != 0) fail("all_gather over one member is not a copy");
  prt_wait(ctx, prt_iall_gather(ctx, a, a, 6, 0, 0)); /* in place */
  if (prt_rank(ctx) != 0 || ctx->world != 1 || ctx->ops_busy) fail("rank, world or handles");
  prt_ctx_destroy(ctx);
  end();
}

static void test_serial_plan_errors(void) {
  begin("serial_plan_errors");
  char err[2048];
  int rc = run_child(send_to_self, err, sizeof err);
  if (rc != 1 || !strstr(err, "piper: error: prt_isend between rank 0 and rank 0"))
    fail("send to self: exit %d, '%s'", rc, err);
  rc = run_child(wait_twice, err, sizeof err);
  if (rc != 1 || !strstr(err, "not a transfer in flight (waited twice"))
    fail("wait twice: exit %d, '%s'", rc, err);
  rc = run_child(not_a_member, err, sizeof err);
  if (rc != 1 || !strstr(err, "group 1, which is not declared"))
    fail("undeclared group: exit %d, '%s'", rc, err);
  rc = run_child(world2_main, err, sizeof err);
  if (rc != 1 || !strstr(err, "piper: error: this plan is for 2 devices but this binary runs "
                              "on one (it is linked with the serial comm backend)"))
    fail("world 2 on the serial backend: exit %d, '%s'", rc, err);
  end();
}

static void test_dist_declare_errors(void) {
  begin("dist_declare_errors");
  prt_ctx *ctx;
  int rc;
  static const char *const cases[] = {"member outside the world", "shard past the end",
                                      "shard of an input", "shard size", "group not dense",
                                      "repeated loss with rows 0 twice: fine here",
                                      "input outside the batch"};
  for (int k = 0; k < 7; k++) {
    ctx = prt_ctx_create();
    int64_t m[2] = {0, 1};
    prt_declare_tensor(ctx, 0, "w", PRT_PARAM, 0, 2, 4, 4, 0, 0, 0);
    switch (k) {
    case 0: prt_declare_world(ctx, 1), prt_declare_group(ctx, 0, 2, m); break;
    case 1: prt_declare_shard(ctx, 0, 10, 8, 16); break;
    case 2:
      prt_declare_tensor(ctx, 1, "tokens", PRT_INPUT, 0, 2, 2, 4, 0, 0, 0);
      prt_declare_shard(ctx, 1, 0, 4, 8);
      break;
    case 3: prt_declare_shard(ctx, 0, 0, 4, 15); break;
    case 4: prt_declare_group(ctx, 1, 1, m); break;
    case 5:
      prt_declare_tensor(ctx, 1, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 0);
      prt_declare_tensor(ctx, 2, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 0);
      break;
    case 6:
      prt_declare_batch(ctx, 4);
      prt_declare_tensor(ctx, 1, "tokens", PRT_INPUT, 0, 2, 2, 4, 0, 0, 3);
      break;
    }
    prt_status st = {0};
    rc = prt_ctx_allocate(ctx, &st);
    if (k == 5 ? rc != 0 : rc == 0) fail("%s: %s", cases[k], rc ? st.msg : "accepted");
    else if (rc && !strstr(st.msg, "piper_setup") && !strstr(st.msg, "prt_declare"))
      fail("%s: message does not say where: %s", cases[k], st.msg);
    prt_ctx_destroy(ctx);
  }
  end();
}

/* The rank arithmetic of a million devices, on the last rank of 2^20 (the world set by hand:
 * no backend starts a million ranks here): the roles of PP8 x DP131072 and of DP 2^20, a range
 * group of 131072 members, a ZeRO shard of 2^20, and an elastic run of the DP 2^20 plan on two
 * ranks (each standing in for 2^19 replicas). Every product of counts stays in int64. */
static void test_million_devices(void) {
  begin("million_devices");
  const int64_t N = (int64_t)1 << 20, last = N - 1;
  prt_ctx *ctx = prt_ctx_create();
  ctx->world = N, ctx->rank = last;
  prt_declare_world(ctx, N);
  int64_t start[8], stride[8], count[8];
  for (int p = 0; p < 8; p++) start[p] = p, stride[p] = 8, count[p] = N / 8;
  prt_declare_roles(ctx, 8, start, stride, count); /* PP8 x DP131072: rank = r*8 + p */
  if (prt_role(ctx) != 7 || prt_replica_affine(ctx, 0, 1) != N / 8 - 1)
    fail("PP8 x DP131072, rank %lld: role %lld replica %lld, want 7 and %lld", (long long)last,
         (long long)prt_role(ctx), (long long)prt_replica_affine(ctx, 0, 1), (long long)(N / 8 - 1));
  /* the stage's data-parallel group: 131072 members 7, 15, ..., as a range */
  prt_declare_group_range(ctx, 0, N / 8, 7, 8);
  if (ctx->ngroups != 1 || ctx->groups[0].n != N / 8 || ctx->groups[0].index != N / 8 - 1 ||
      ctx->groups[0].members[N / 8 - 1] != last)
    fail("a group of %lld members from 7 by 8: rank %lld is not its last member",
         (long long)(N / 8), (long long)last);
  /* a replica's first row and a transfer's peer at k = 131071 (first_sample + k * stride) */
  if (prt_replica_affine(ctx, 3, (int64_t)1 << 30) != 3 + (N / 8 - 1) * ((int64_t)1 << 30))
    fail("an affine value of replica %lld overflowed", (long long)(N / 8 - 1));
  prt_ctx_destroy(ctx);

  ctx = prt_ctx_create(); /* DP 2^20: one role, replica = rank; ZeRO's last shard */
  ctx->world = N, ctx->rank = last;
  prt_declare_world(ctx, N);
  int64_t s0 = 0, st1 = 1;
  prt_declare_roles(ctx, 1, &s0, &st1, &N);
  /* 3000 * 2^20 - 1 floats (past 2^31) in shards of 3000: the last holds 2999 */
  int64_t n = 3000 * N - 1, c = (n + N - 1) / N;
  if (prt_role(ctx) != 0 || prt_replica_affine(ctx, 0, 1) != last || c != 3000 ||
      prt_shard_len(ctx, n, c) != 2999)
    fail("DP 2^20, rank %lld: role %lld replica %lld, shard %lld of %lld floats", (long long)last,
         (long long)prt_role(ctx), (long long)prt_replica_affine(ctx, 0, 1),
         (long long)prt_shard_len(ctx, n, c), (long long)n);
  prt_ctx_destroy(ctx);

  ctx = prt_ctx_create(); /* the same plan elastic on 2 ranks: rank 1 runs replicas 2^19.. */
  ctx->world = 2, ctx->rank = 1;
  prt_declare_world(ctx, N);
  prt_declare_batch(ctx, N);
  prt_elastic_roles(ctx, 1, &s0, &st1, &N);
  if (ctx->elastic.k != N / 2 || prt_replica_affine(ctx, 0, 1) != N / 2 ||
      prt_elastic_rank(ctx, last) != 1 || prt_elastic_rank(ctx, N / 2 - 1) != 0)
    fail("DP 2^20 on 2 ranks: k %lld, rank 1's first replica %lld, device %lld on rank %lld "
         "(%s)", (long long)ctx->elastic.k, (long long)prt_replica_affine(ctx, 0, 1),
         (long long)last, (long long)prt_elastic_rank(ctx, last), ctx->elastic.refusal);
  prt_ctx_destroy(ctx);
  end();
}

static void test_shard_init(void) {
  begin("shard_init");
  prt_ctx *ctx;
  float full[37], part[37];
  prt_init_normal(full, 37, 5, "x", 0.02);
  for (int64_t off = 0; off < 37; off += 3)
    for (int64_t n = 1; off + n <= 37; n += 5) {
      prt_init_normal_range(part, off, n, 5, "x", 0.02);
      if (memcmp(part, full + off, (size_t)n * sizeof(float)))
        fail("elements [%lld, %lld) differ from the full tensor's", (long long)off,
             (long long)(off + n));
    }
  ctx = prt_ctx_create();
  prt_declare_tensor(ctx, 0, "x", PRT_PARAM, PRT_INIT_NORMAL, 1, 37, 0, 0, 0, 0);
  prt_declare_shard(ctx, 0, 11, 9, 37);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_init_params(ctx, 5);
  if (ctx->tensors[0].numel != 9 || memcmp(prt_tensor(ctx, 0), full + 11, 9 * sizeof(float)))
    fail("a shard's init is not its slice of the full tensor");
  prt_ctx_destroy(ctx);
  end();
}

static void test_data_global_batch(void) {
  begin("data_global_batch");
  prt_status st = {0};
  prt_ctx *ctx;
  /* batch 6; tokens as two microbatches (rows 1-2 and 3-5), targets rows 1-5 */
  ctx = prt_ctx_create();
  prt_declare_batch(ctx, 6);
  prt_declare_tensor(ctx, 0, "tokens", PRT_INPUT, 0, 2, 2, 4, 0, 0, 1);
  prt_declare_tensor(ctx, 1, "tokens", PRT_INPUT, 0, 2, 3, 4, 0, 0, 3);
  prt_declare_tensor(ctx, 2, "targets", PRT_INPUT, 0, 2, 5, 4, 0, 0, 1);
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  char path[256];
  path_in_tmp(path, sizeof path, "data6.bin");
  FILE *f = fopen(path, "wb");
  for (int i = 0; i < 200; i++) fputc(i, f);
  fclose(f);
  prt_data d;
  if (prt_data_open(&d, path, PRT_DATA_BYTES, 4, 0, &st)) fail("open: %s", st.msg);
  else {
    for (int64_t s = 0; s < 3; s++) {
      prt_data_fill(&d, ctx, s);
      for (int64_t id = 0; id < 3; id++) {
        const prt_tensor_info *t = &ctx->tensors[id];
        const int32_t *x = t->data;
        for (int64_t b = 0; b < t->dims[0]; b++) {
          int64_t o = ((s * 6 + t->first_sample + b) * 4) % (200 - 4 - 1) + (id == 2);
          if (x[b * 4] != o || x[b * 4 + 3] != o + 3)
            fail("step %lld input %lld row %lld starts at %d, want %lld", (long long)s,
                 (long long)id, (long long)b, x[b * 4], (long long)o);
        }
      }
    }
    prt_data_close(&d);
  }
  unlink(path);
  prt_ctx_destroy(ctx);
  end();
}

static void test_trace_path(void) {
  begin("trace_path");
  static const char *const paths[][2] = {{"trace.json", "trace.rank3.json"},
                                         {"out.d/trace", "out.d/trace.rank3"},
                                         {"a/b.c.json", "a/b.c.rank3.json"},
                                         {".trace", ".trace.rank3"}};
  for (int k = 0; k < 4; k++) {
    char *out = prt_trace_path(paths[k][0], 3);
    if (strcmp(out, paths[k][1])) fail("%s -> %s, want %s", paths[k][0], out, paths[k][1]);
    free(out);
  }
  end();
}

static void test_progress_eta(void) {
  begin("progress_eta");
  /* m:ss under an hour, h:mm:ss from one on, rounded to the nearest second; "?" unknown */
  static const struct { double s; const char *want; } etas[] = {
      {0, "0:00"}, {0.49, "0:00"}, {0.5, "0:01"}, {59.4, "0:59"}, {61, "1:01"},
      {3599.4, "59:59"}, {3599.5, "1:00:00"}, {3725, "1:02:05"}, {360000, "100:00:00"},
      {NAN, "?"}, {-1, "?"}, {INFINITY, "?"}};
  for (size_t k = 0; k < sizeof etas / sizeof etas[0]; k++) {
    char buf[48];
    if (strcmp(prt_format_eta(etas[k].s, buf, sizeof buf), etas[k].want))
      fail("eta %g s -> '%s', want '%s'", etas[k].s, buf, etas[k].want);
  }
  /* --log-every 10 over steps 0..24: the first, every 10th (1-based 10, 20) and the last */
  char shown[64] = "";
  for (int64_t st = 0; st < 25; st++)
    if (prt_progress_due(st, 0, 24, 10))
      snprintf(shown + strlen(shown), sizeof shown - strlen(shown), "%lld ", (long long)st);
  if (strcmp(shown, "0 9 19 24 ")) fail("--log-every 10 shows steps '%s', want '0 9 19 24 '", shown);
  end();
}

static void test_dist(void) {
  test_serial_groups_of_one();
  test_serial_plan_errors();
  test_dist_declare_errors();
  test_million_devices();
  test_shard_init();
  test_data_global_batch();
  test_trace_path();
  test_progress_eta();
}

static void test_main(void) {
  char metrics[256], ckpt[256], grads[256], data[256];
  path_in_tmp(metrics, sizeof metrics, "metrics.jsonl");
  path_in_tmp(ckpt, sizeof ckpt, "bigram.safetensors");
  path_in_tmp(grads, sizeof grads, "bigram-grads.safetensors");
  path_in_tmp(data, sizeof data, "tiny.bin");
  double loss[64], loss2[64];

  begin("main_bad_flags");
  if (run_main("--steps", "ten", NULL) != 2) fail("--steps ten not exit 2");
  if (run_main("--steps", NULL) != 2) fail("--steps without value not exit 2");
  if (run_main("--frobnicate", NULL) != 2) fail("unknown flag not exit 2");
  if (run_main("--lr", "-1", NULL) != 2) fail("--lr -1 not exit 2");
  if (run_main("--seed", "1x", NULL) != 2) fail("--seed 1x not exit 2");
  if (run_main("--steps", "0", "--dump-grads", grads, NULL) != 2)
    fail("--dump-grads with 0 steps not exit 2");
  end();

  begin("main_errors");
  FILE *f = fopen(data, "wb");
  fputs("too short", f);
  fclose(f);
  if (run_main("--quiet", "--data", data, NULL) != 1) fail("short --data not exit 1");
  if (run_main("--quiet", "--init-checkpoint", data, NULL) != 1)
    fail("bad --init-checkpoint not exit 1");
  end();

  begin("main_train");
  char mflag[300];
  snprintf(mflag, sizeof mflag, "--metrics=%s", metrics);
  if (run_main("--quiet", "--steps", "40", "--lr", "1e-2", mflag, "--save-checkpoint",
               ckpt, NULL) != 0)
    fail("training run failed");
  int n = read_losses(metrics, loss, 64);
  if (n != 40) fail("metrics file has %d well-formed lines, want 40", n);
  else if (!(fabs(loss[0] - log(256.0)) < 0.05)) fail("step 0 loss %g, want ~ln 256", loss[0]);
  else if (!(loss[39] < loss[0] - 1.0)) fail("loss did not fall: %g -> %g", loss[0], loss[39]);
  end();

  begin("main_deterministic");
  if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", mflag, NULL) != 0 ||
      read_losses(metrics, loss2, 64) != 5)
    fail("second run failed");
  for (int i = 0; i < 5; i++)
    if (loss2[i] != loss[i]) fail("step %d loss %.9g vs %.9g in the first run", i, loss2[i],
                                  loss[i]);
  if (run_main("--quiet", "--steps", "1", "--seed", "7", mflag, "--lr", "1e-2", NULL) != 0 ||
      read_losses(metrics, loss2, 64) != 1 || loss2[0] == loss[0])
    fail("--seed 7 gave the same step-0 loss as seed 1337");
  end();

  begin("main_resume");
  /* The first step from the checkpoint (step 40) evaluates the model trained for 40 steps. */
  char iflag[300];
  snprintf(iflag, sizeof iflag, "--init-checkpoint=%s", ckpt);
  if (run_main("--quiet", "--steps", "1", iflag, mflag, "--lr=1e-2", NULL) != 0 ||
      read_losses(metrics, loss2, 64) != 1)
    fail("resumed run failed");
  else if (!(loss2[0] < loss[0] - 1.0)) fail("resumed step-0 loss %g is not the trained one "
                                             "(fresh %g)", loss2[0], loss[0]);
  end();

  begin("main_dump_grads");
  if (run_main("--quiet", "--steps", "2", "--dump-grads", grads, NULL) != 0)
    fail("run failed");
  else {
    prt_ctx *ctx = prt_ctx_create();
    bigram_setup(ctx);
    prt_status st = {0};
    if (prt_ctx_allocate(ctx, &st) || prt_checkpoint_load(ctx, grads, NULL, &st))
      fail("reading the dump: %s", st.msg);
    const float *g = prt_tensor(ctx, 1);
    double s = 0;
    for (int i = 0; i < BG_V * BG_C; i++) s += fabs(g[i]);
    if (!(s > 0)) fail("dumped head gradient is all zero");
    prt_ctx_destroy(ctx);
  }
  end();
  unlink(metrics), unlink(ckpt), unlink(grads), unlink(data);
}

/* Reads a whole small file into buf (cap bytes, NUL-terminated); its length or -1. */
static long read_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, cap - 1, f);
  buf[n] = 0;
  fclose(f);
  return (long)n;
}

static void micro_bad_batch(void) {
  micro_batch = 6; /* the losses cover 4 rows */
  char *argv[] = {"prt-kernel-test", "--quiet", NULL};
  exit(prt_main(2, argv, micro_setup, micro_step));
}

static void test_main_dist(void) {
  char metrics[256], ckpt[256], ckpt2[256], trace[256], trace0[300], mflag[300];
  path_in_tmp(metrics, sizeof metrics, "m.jsonl");
  path_in_tmp(ckpt, sizeof ckpt, "whole.safetensors");
  path_in_tmp(ckpt2, sizeof ckpt2, "micro.safetensors");
  path_in_tmp(trace, sizeof trace, "trace.json");
  snprintf(mflag, sizeof mflag, "--metrics=%s", metrics);
  double loss[8], loss2[8];

  begin("main_microbatches");
  /* Two microbatches of 2 rows with the global batch declared train as one batch of 4: same
   * losses and parameters up to float rounding (the sums run in another order): relative
   * 1e-6 on losses, 1e-6 of the largest |parameter| after 5 AdamW steps. */
  if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", mflag, "--save-checkpoint", ckpt,
               NULL) != 0 || read_losses(metrics, loss, 8) != 5)
    fail("whole-batch run failed");
  main_setup = micro_setup, main_step = micro_step;
  if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", mflag, "--save-checkpoint", ckpt2,
               NULL) != 0 || read_losses(metrics, loss2, 8) != 5)
    fail("microbatch run failed");
  main_setup = bigram_setup, main_step = bigram_step;
  for (int i = 0; i < 5; i++)
    if (!(fabs(loss2[i] - loss[i]) <= 1e-6 * fabs(loss[i])))
      fail("step %d loss %.9g, whole batch %.9g", i, loss2[i], loss[i]);
  prt_ctx *a = prt_ctx_create(), *b = prt_ctx_create();
  bigram_setup(a);
  bigram_setup(b);
  prt_status st = {0};
  if (prt_ctx_allocate(a, &st) || prt_ctx_allocate(b, &st) ||
      prt_checkpoint_load(a, ckpt, NULL, &st) || prt_checkpoint_load(b, ckpt2, NULL, &st))
    fail("reading the checkpoints: %s", st.msg);
  for (int64_t id = 0; id < 2 && !st.code; id++) {
    const float *x = prt_tensor(a, id), *y = prt_tensor(b, id);
    double scale = 0;
    for (int i = 0; i < BG_V * BG_C; i++) scale = fmax(scale, fabs(x[i]));
    for (int i = 0; i < BG_V * BG_C; i++)
      if (!(fabs(x[i] - y[i]) <= 1e-6 * scale)) {
        fail("%s[%d] = %.9g, whole batch %.9g", a->tensors[id].name, i, y[i], x[i]);
        break;
      }
  }
  prt_ctx_destroy(a);
  prt_ctx_destroy(b);
  char err[2048];
  int rc = run_child(micro_bad_batch, err, sizeof err);
  if (rc != 1 || !strstr(err, "average over 4 batch rows in all, but the global batch has 6"))
    fail("losses not covering the batch: exit %d, '%s'", rc, err);
  end();

  begin("main_metrics_memory");
  /* the "phases" line first; every "train" line has rank 0's memory; a last "summary" line
   * has every rank's */
  static char text[1 << 16];
  if (read_file(metrics, text, sizeof text) < 0) fail("no metrics file");
  else if (strstr(text, "{\"kind\": \"phases\", \"main\": ") != text ||
           !strstr(text, "}\n{\"kind\": \"train\", \"step\": 0, \"loss\": ") ||
           !strstr(text, "\"mem\": {\"params\": 16384, \"optim\": 32768, \"arena\": ") ||
           !strstr(text, "\n{\"kind\": \"summary\", \"ranks\": [{\"rank\": 0, \"params\": 16384, "
                   "\"optim\": 32768, ") ||
           !strstr(text, "\"peak_rss\": "))
    fail("memory fields missing: %s", text);
  end();

  begin("main_trace");
  char tflag[300];
  snprintf(tflag, sizeof tflag, "--trace=%s", trace);
  main_setup = micro_setup, main_step = micro_step;
  if (run_main("--quiet", "--steps", "2", tflag, NULL) != 0) fail("traced run failed");
  main_setup = bigram_setup, main_step = bigram_step;
  snprintf(trace0, sizeof trace0, "%s", trace); /* one device: the merged trace is rank 0's */
  if (read_file(trace0, text, sizeof text) < 0) {
    fail("no trace at %s", trace0);
  } else {
    const char *want[] = {"{\"traceEvents\": [", "\"name\": \"thread_name\"",
                          "\"args\": {\"name\": \"compute\"}", "\"name\": \"step\"",
                          "\"name\": \"microbatch\"", "\"ph\": \"X\"", "\"truncated\": false",
                          "\"args\": {\"name\": \"rank 0\"}"};
    for (int k = 0; k < 8; k++)
      if (!strstr(text, want[k])) fail("trace lacks %s", want[k]);
    int steps = 0;
    for (const char *p = text; (p = strstr(p, "\"name\": \"step\"")); p++) steps++;
    if (steps != 2) fail("%d step spans, want 2", steps);
  }
  unlink(trace0), unlink(metrics), unlink(ckpt), unlink(ckpt2);
  end();
}

/* ---- resuming exactly: parameters, optimizer state and the step count ---- */

/* The "step" and "loss" of each step line of a metrics file; returns the line count. */
static int read_steps(const char *path, int64_t *step, double *loss, int cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  char line[512];
  int n = 0;
  while (n < cap && fgets(line, sizeof line, f)) {
    const char *train = "{\"kind\": \"train\", \"step\": ";
    if (strstr(line, "{\"kind\": \"phases\", ") == line) continue; /* start-up, first */
    char *s = strstr(line, train), *l = strstr(line, "\"loss\": ");
    if (!s || !l) break;
    step[n] = strtoll(s + strlen(train), NULL, 10);
    loss[n++] = strtod(l + 8, NULL);
  }
  fclose(f);
  return n;
}

/* A bigram context loaded from `path` (info may be NULL); NULL after a FAIL if it cannot. */
static prt_ctx *bigram_load(const char *path, prt_ckpt_info *info) {
  prt_ctx *ctx = prt_ctx_create();
  bigram_setup(ctx);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st) || prt_checkpoint_load(ctx, path, info, &st)) {
    fail("loading %s: %s", path, st.msg);
    prt_ctx_destroy(ctx);
    return NULL;
  }
  return ctx;
}

/* Writes the bigram tensors whose ids have their bit set in `ids` (0 wte, 1 head, 2-5
 * optim) to path, with `step` in the metadata. */
static void write_bigram(const prt_ctx *ctx, const char *path, unsigned ids, int64_t step) {
  prt_st_entry e[6];
  int n = 0;
  for (int id = 0; id < 6; id++)
    if (ids >> id & 1) {
      const prt_tensor_info *t = &ctx->tensors[id];
      e[n++] = (prt_st_entry){t->name, t->ndim, t->dims, t->data};
    }
  prt_status st = {0};
  if (prt_safetensors_write(path, e, n, step, &st)) fail("writing %s: %s", path, st.msg);
}

/* Whole-file equality, byte for byte. */
static int same_file(const char *a, const char *b) {
  static char x[1 << 17], y[1 << 17];
  FILE *f = fopen(a, "rb"), *g = fopen(b, "rb");
  size_t n = f ? fread(x, 1, sizeof x, f) : 0, m = g ? fread(y, 1, sizeof y, g) : 1;
  if (f) fclose(f);
  if (g) fclose(g);
  return f && g && n == m && n < sizeof x && memcmp(x, y, n) == 0;
}

/* For run_child: a resumed run whose stderr a check reads. */
static char child_iflag[300], child_mflag[300], child_save[256];
static void resume_child(void) {
  exit(run_main("--quiet", "--steps", "5", "--lr", "1e-2", child_iflag, child_mflag,
                "--save-checkpoint", child_save, NULL));
}

/* A plan compiled before optimizer shards were declared: each ZeRO rank declared its moment
 * as a 1-D tensor of its slice's length. On one device: "optim.exp_avg.w" (12) for "w" (3, 4). */
static prt_ctx *legacy_ctx(void) {
  prt_ctx *ctx = prt_ctx_create();
  prt_declare_tensor(ctx, 0, "w", PRT_PARAM, PRT_INIT_NORMAL, 2, 3, 4, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "optim.exp_avg.w", PRT_OPTIM, 0, 1, 12, 0, 0, 0, 0);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate: %s", st.msg);
  prt_init_params(ctx, 3);
  return ctx;
}
static char legacy_path[256];
static void legacy_save_child(void) {
  prt_ctx *ctx = legacy_ctx();
  prt_status st = {0};
  int rc = prt_checkpoint_save(ctx, legacy_path, 3, &st);
  prt_ctx_destroy(ctx);
  exit(rc);
}

/* What the resume checks share: their files, and the losses of the uninterrupted 10-step run
 * (main_resume_exact) the later checks compare with. */
typedef struct {
  char m10[256], m5[256], mres[256];                    /* --metrics files */
  char full10[256], half5[256], res10[256], edited[256]; /* checkpoints */
  double l10[16];                                       /* the 10-step run's losses */
} Resume;

static void test_main_resume_exact(Resume *r) {
  begin("main_resume_exact");
  char mflag[300], iflag[300];
  snprintf(iflag, sizeof iflag, "--init-checkpoint=%s", r->half5);
  int64_t s10[16], s5[16], sr[16];
  double l5[16], lr[16];
  /* 10 steps at once, and 5 then 5 more resumed from the 5-step checkpoint: one computation
   * (same t, batches and moments), so every loss and the final file agree bit for bit. */
  snprintf(mflag, sizeof mflag, "--metrics=%s", r->m10);
  if (run_main("--quiet", "--steps", "10", "--lr", "1e-2", mflag, "--save-checkpoint", r->full10,
               NULL) != 0 || read_steps(r->m10, s10, r->l10, 16) != 10)
    fail("10-step run failed");
  snprintf(mflag, sizeof mflag, "--metrics=%s", r->m5);
  if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", mflag, "--save-checkpoint", r->half5,
               NULL) != 0 || read_steps(r->m5, s5, l5, 16) != 5)
    fail("5-step run failed");
  snprintf(mflag, sizeof mflag, "--metrics=%s", r->mres);
  if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", iflag, mflag, "--save-checkpoint",
               r->res10, NULL) != 0 || read_steps(r->mres, sr, lr, 16) != 5)
    fail("resumed run failed");
  for (int i = 0; i < 5 && !check_failed; i++) {
    if (s5[i] != i || l5[i] != r->l10[i])
      fail("first run's line %d: step %lld loss %.9g, want step %d loss %.9g", i,
           (long long)s5[i], l5[i], i, r->l10[i]);
    if (sr[i] != 5 + i || lr[i] != r->l10[5 + i])
      fail("resumed line %d: step %lld loss %.9g, want step %d loss %.9g", i,
           (long long)sr[i], lr[i], 5 + i, r->l10[5 + i]);
  }
  if (!check_failed && !same_file(r->full10, r->res10))
    fail("%s (5 + 5 steps) differs from %s (10 steps)", r->res10, r->full10);
  end();
}

static void test_checkpoint_step_metadata(Resume *r) {
  begin("checkpoint_step_metadata");
  prt_ckpt_info info;
  prt_ctx *ctx = bigram_load(r->half5, &info);
  if (ctx && (info.step != 5 || !info.optim))
    fail("%s: step %lld, optim %d; want 5, 1", r->half5, (long long)info.step, info.optim);
  prt_ctx_destroy(ctx);
  ctx = bigram_load(r->res10, &info);
  if (ctx && (info.step != 10 || !info.optim))
    fail("%s: step %lld, optim %d; want 10 (5 resumed + 5), 1", r->res10, (long long)info.step,
         info.optim);
  prt_ctx_destroy(ctx);
  static const char *const bad_step[] = {"\"5x\"", "\"\"", "5", "\"-1\""};
  for (int k = 0; k < 4; k++) {
    char h[256];
    snprintf(h, sizeof h, "{\"__metadata__\":{\"format\":\"pt\",\"step\":%s},"
             "\"w\":{\"dtype\":\"F32\",\"shape\":[3,4],\"data_offsets\":[0,48]}}", bad_step[k]);
    write_raw(r->edited, h, 48);
    expect_load_error(r->edited, "bad checkpoint header", "\"step\"");
  }
  end();
}

static void test_main_resume_needs_optimizer_state(Resume *r) {
  begin("main_resume_needs_optimizer_state");
  char mflag[300], iflag[300];
  snprintf(mflag, sizeof mflag, "--metrics=%s", r->mres);
  int64_t sr[16];
  double lr[16];
  char err[4096];
  prt_ckpt_info info;
  prt_ctx *ctx;
  /* The control: the same parameters and step with zeroed moments load as optimizer state,
   * so the run continues at step 5 on the same batch (step 5's loss is the uninterrupted
   * one: the update comes after it) but every later step differs. Without optimizer tensors
   * the run is a new one: a note, step 0, and other final parameters. */
  ctx = bigram_load(r->half5, NULL);
  if (ctx) {
    for (int id = 2; id < 6; id++) memset(ctx->tensors[id].data, 0, BG_V * BG_C * 4);
    write_bigram(ctx, r->edited, 0x3f, 5);
    snprintf(iflag, sizeof iflag, "--init-checkpoint=%s", r->edited);
    if (run_main("--quiet", "--steps", "5", "--lr", "1e-2", iflag, mflag, NULL) != 0 ||
        read_steps(r->mres, sr, lr, 16) != 5)
      fail("run from zeroed moments failed");
    else if (sr[0] != 5 || lr[0] != r->l10[5])
      fail("zeroed moments: step %lld loss %.9g, want step 5 loss %.9g", (long long)sr[0],
           lr[0], r->l10[5]);
    else if (lr[1] == r->l10[6] || lr[4] == r->l10[9])
      fail("zeroed moments gave the uninterrupted losses %.9g, %.9g: the test cannot tell "
           "a resumed optimizer from a fresh one", lr[1], lr[4]);
    write_bigram(ctx, r->edited, 0x3, 5); /* parameters only */
    prt_ctx_destroy(ctx);
    snprintf(child_iflag, sizeof child_iflag, "--init-checkpoint=%s", r->edited);
    snprintf(child_mflag, sizeof child_mflag, "--metrics=%s", r->mres);
    path_in_tmp(child_save, sizeof child_save, "fresh.safetensors");
    int rc = run_child(resume_child, err, sizeof err);
    if (rc != 0 || !strstr(err, "piper: note: checkpoint has no optimizer state: AdamW starts "
                                "fresh at step 0 (the file was saved after step 5)"))
      fail("parameters-only resume: exit %d, stderr '%s'", rc, err);
    else if (read_steps(r->mres, sr, lr, 16) != 5 || sr[0] != 0 || sr[4] != 4)
      fail("parameters-only resume is not numbered from step 0");
    prt_ctx *a = bigram_load(r->full10, NULL), *b = bigram_load(child_save, &info);
    if (a && b && (info.step != 5 ||
                   !memcmp(a->tensors[1].data, b->tensors[1].data, BG_V * BG_C * 4)))
      fail("parameters-only resume: saved step %lld (want 5), head %s the 10-step run's",
           (long long)info.step,
           memcmp(a->tensors[1].data, b->tensors[1].data, BG_V * BG_C * 4) ? "differs from"
                                                                             : "equals");
    prt_ctx_destroy(a);
    prt_ctx_destroy(b);
    unlink(child_save);
  }
  end();
}

static void test_checkpoint_partial_optimizer_state(Resume *r) {
  begin("checkpoint_partial_optimizer_state");
  char iflag[300];
  prt_ctx *ctx;
  ctx = bigram_load(r->half5, NULL);
  prt_status st = {0};
  if (ctx) {
    write_bigram(ctx, r->edited, 0xf, 5); /* wte's moments, not head's */
    prt_ctx *c = prt_ctx_create();
    bigram_setup(c);
    if (prt_ctx_allocate(c, &st) || prt_checkpoint_load(c, r->edited, NULL, &st) == 0 ||
        !strstr(st.msg, "checkpoint has optimizer state but lacks 'optim.head.m' (F32 [256, "
                        "8])"))
      fail("partial optimizer state: '%s'", st.msg);
    prt_ctx_destroy(c);
    snprintf(iflag, sizeof iflag, "--init-checkpoint=%s", r->edited);
    if (run_main("--quiet", "--steps", "1", iflag, NULL) != 1)
      fail("a run from partial optimizer state did not exit 1");
    int64_t swapped[2] = {BG_C, BG_V}; /* head's second moment transposed */
    memcpy(ctx->tensors[5].dims, swapped, sizeof swapped);
    write_bigram(ctx, r->edited, 0x3f, 5);
    c = prt_ctx_create();
    bigram_setup(c);
    st = (prt_status){0};
    if (prt_ctx_allocate(c, &st) || prt_checkpoint_load(c, r->edited, NULL, &st) == 0 ||
        !strstr(st.msg, "optimizer state 'optim.head.v' has shape [8, 256] in the checkpoint, "
                        "expected [256, 8]"))
      fail("optimizer state of the wrong shape: '%s'", st.msg);
    prt_ctx_destroy(c);
    prt_ctx_destroy(ctx);
  }
  end();
}

static void test_main_restart_steps(Resume *r) {
  begin("main_restart_steps");
  char mflag[300], iflag[300];
  snprintf(mflag, sizeof mflag, "--metrics=%s", r->mres);
  int64_t sr[16];
  double lr[16];
  prt_ckpt_info info;
  prt_ctx *ctx;
  /* --restart-steps: the 5-step checkpoint's moments load, but counting starts at 0 */
  snprintf(iflag, sizeof iflag, "--init-checkpoint=%s", r->half5);
  if (run_main("--quiet", "--steps", "2", "--lr", "1e-2", iflag, "--restart-steps", mflag,
               "--save-checkpoint", r->edited, NULL) != 0 || read_steps(r->mres, sr, lr, 16) != 2 ||
      sr[0] != 0 || sr[1] != 1)
    fail("--restart-steps run failed or is not numbered 0, 1");
  ctx = bigram_load(r->edited, &info);
  if (ctx && info.step != 2) fail("saved step %lld, want 2", (long long)info.step);
  prt_ctx_destroy(ctx);
  if (run_main("--restart-steps", NULL) != 2) fail("--restart-steps alone not exit 2");
  end();
}

static void test_checkpoint_legacy_optimizer_state(Resume *r) {
  begin("checkpoint_legacy_optimizer_state");
  char err[4096];
  prt_ckpt_info info;
  prt_ctx *ctx;
  prt_status st = {0};
  /* A moment whose shape is not its parameter's is a ZeRO slice the plan declared as whole:
   * saving it would pass a slice off as the moment. Checkpoints carry parameters only (one
   * warning), and loading a full moment into such a plan leaves its state fresh. */
  path_in_tmp(legacy_path, sizeof legacy_path, "legacy.safetensors");
  int rc = run_child(legacy_save_child, err, sizeof err);
  struct stat sb;
  if (rc != 0 || !strstr(err, "piper: warning: optimizer state 'optim.exp_avg.w' is declared "
                              "with shape [12] but its parameter 'w' has [3, 4]"))
    fail("legacy save: exit %d, stderr '%s'", rc, err);
  else if (stat(legacy_path, &sb) || sb.st_size > 8 + 256 + 12 * 4)
    fail("legacy save wrote more than the parameter");
  float ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  prt_st_entry full[] = {{"w", 2, d34, ones}, {"optim.exp_avg.w", 2, d34, ones}};
  st = (prt_status){0};
  prt_safetensors_write(r->edited, full, 2, 4, &st);
  ctx = legacy_ctx();
  if (prt_checkpoint_load(ctx, r->edited, &info, &st)) fail("legacy load: %s", st.msg);
  else if (info.optim || !info.optim_skipped || ((float *)prt_tensor(ctx, 1))[0] != 0.0f ||
           ((float *)prt_tensor(ctx, 0))[0] != 1.0f)
    fail("legacy load: optim %d, skipped %d, moment[0] %g, w[0] %g", info.optim,
         info.optim_skipped, ((float *)prt_tensor(ctx, 1))[0], ((float *)prt_tensor(ctx, 0))[0]);
  prt_ctx_destroy(ctx);
  end();
  unlink(r->m10), unlink(r->m5), unlink(r->mres), unlink(r->full10), unlink(r->half5), unlink(r->res10);
  unlink(r->edited), unlink(legacy_path);
}

static void test_main_resume(void) {
  Resume r;
  path_in_tmp(r.m10, sizeof r.m10, "m10.jsonl");
  path_in_tmp(r.m5, sizeof r.m5, "m5.jsonl");
  path_in_tmp(r.mres, sizeof r.mres, "mres.jsonl");
  path_in_tmp(r.full10, sizeof r.full10, "full10.safetensors");
  path_in_tmp(r.half5, sizeof r.half5, "half5.safetensors");
  path_in_tmp(r.res10, sizeof r.res10, "res10.safetensors");
  path_in_tmp(r.edited, sizeof r.edited, "edited.safetensors");
  test_main_resume_exact(&r);
  test_checkpoint_step_metadata(&r);
  test_main_resume_needs_optimizer_state(&r);
  test_checkpoint_partial_optimizer_state(&r);
  test_main_restart_steps(&r);
  test_checkpoint_legacy_optimizer_state(&r);
  unlink(r.m10), unlink(r.m5), unlink(r.mres), unlink(r.full10), unlink(r.half5);
  unlink(r.res10), unlink(r.edited), unlink(legacy_path);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/prt-kernel-test-XXXXXX");
  if (!mkdtemp(tmpdir)) {
    fprintf(stderr, "prt-kernel-test: cannot create a directory under /tmp\n");
    return 100;
  }
  test_embedding();
  test_layernorm();
  test_linear();
  test_attention();
  test_attention_blocks();
  test_gelu();
  test_relu();
  test_cross_entropy();
  test_adamw();
  test_init();
  test_runtime_basics();
  test_data_formats();
  test_checkpoints();
  test_dist();
  test_main();
  test_main_dist();
  test_main_resume();
  rmdir(tmpdir);
  printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
  return failures > 100 ? 100 : failures;
}
