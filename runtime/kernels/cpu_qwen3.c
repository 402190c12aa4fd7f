/* CPU kernels of libpiper_rt for the Qwen3 ops (piper-gen qwen3): token embedding without a
 * position table, RMSNorm over chunks of the last dim, rotary position embedding and SwiGLU,
 * forward and backward, in fp32 (grouped-query attention shares GPT's kernel in
 * cpu_attention.c). Same conventions as cpu.c: outputs are written (never accumulated), row
 * reductions into weight gradients accumulate in double, and every kernel starts with
 * prt_comm_progress(). The math of each kernel is stated at its prototype in
 * <piper/runtime.h>. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prt_attention.h"
#include "prt_backend.h"
#include "prt_kernels.h"

/* ---- embedding ---- */

/* A token id outside [0, V) would index past wte: a fatal error naming its position. */
static void prt_qwen3_check_token(int32_t v, int64_t i, int64_t V, const char *kernel) {
  if (v < 0 || v >= V)
    prt_fatal("token %d at position %lld is outside the vocabulary [0, %lld): %s; the data "
              "must hold token ids below V", v, (long long)i, (long long)V, kernel);
}

void prt_embed_fwd(float *out, const int32_t *tok, const float *wte, int64_t N, int64_t C,
                   int64_t V) {
  prt_comm_progress();
  for (int64_t i = 0; i < N; i++) {
    prt_qwen3_check_token(tok[i], i, V, "prt_embed_fwd");
    memcpy(out + i * C, wte + (int64_t)tok[i] * C, (size_t)C * sizeof(float));
  }
}

void prt_embed_bwd(float *dwte, const float *dout, const int32_t *tok, int64_t N, int64_t C,
                   int64_t V) {
  prt_comm_progress();
  memset(dwte, 0, (size_t)(V * C) * sizeof(float));
  for (int64_t i = 0; i < N; i++) {
    prt_qwen3_check_token(tok[i], i, V, "prt_embed_bwd");
    float *e = dwte + (int64_t)tok[i] * C;
    const float *d = dout + i * C;
    for (int64_t c = 0; c < C; c++) e[c] += d[c];
  }
}

/* ---- RMSNorm over rows of D ---- */

void prt_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int64_t R,
                     int64_t D, float eps) {
  prt_comm_progress();
  for (int64_t i = 0; i < R; i++) {
    const float *xi = x + i * D;
    double ss = 0.0;
    for (int64_t c = 0; c < D; c++) ss += (double)xi[c] * xi[c];
    float r = 1.0f / sqrtf((float)(ss / (double)D) + eps);
    float *oi = out + i * D;
    for (int64_t c = 0; c < D; c++) oi[c] = xi[c] * r * w[c];
    rstd[i] = r;
  }
}

void prt_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                     const float *rstd, int64_t R, int64_t D) {
  prt_comm_progress();
  double *dw_acc = prt_xmalloc((size_t)D * sizeof(double), "prt_rmsnorm_bwd scratch");
  memset(dw_acc, 0, (size_t)D * sizeof(double));
  for (int64_t i = 0; i < R; i++) {
    const float *xi = x + i * D, *di = dout + i * D;
    float r = rstd[i];
    /* n = x * rstd, y = n * w: dx = rstd * (dn - n * mean(dn * n)), dn = w * dout */
    double s = 0.0;
    for (int64_t c = 0; c < D; c++) {
      float n = xi[c] * r;
      s += (double)(w[c] * di[c]) * n;
      dw_acc[c] += (double)n * di[c];
    }
    float mean_dn = (float)(s / (double)D);
    float *dxi = dx + i * D;
    for (int64_t c = 0; c < D; c++) dxi[c] = (w[c] * di[c] - xi[c] * r * mean_dn) * r;
  }
  for (int64_t c = 0; c < D; c++) dw[c] = (float)dw_acc[c];
  free(dw_acc);
}

/* ---- rotary position embedding ---- */

void prt_rope_table(float *cs, int64_t T, int64_t D, float theta, double dir) {
  int64_t half = D / 2;
  for (int64_t t = 0; t < T; t++)
    for (int64_t j = 0; j < half; j++) {
      double a = (double)t * pow((double)theta, -2.0 * (double)j / (double)D);
      cs[2 * (t * half + j)] = (float)cos(a);
      cs[2 * (t * half + j) + 1] = (float)(dir * sin(a));
    }
}

/* y = the rotation of x by +angle (dir = 1) or -angle (dir = -1, the gradient): per row t,
 * head h and pair j < D/2, angle pos(t) * theta^(-2j/D) computed in double. pos(t) = t, or
 * for member r of a context-parallel group of G (G > 1) prt_cp_position(r, G, T/2, t): the
 * table then covers the full sequence G * T. */
static void prt_rope(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                     float theta, double dir, int64_t r, int64_t G) {
  prt_comm_progress();
  int64_t half = D / 2, H = N / D, Tfull = G > 1 ? G * T : T;
  float *cs = prt_xmalloc((size_t)(2 * Tfull * half) * sizeof(float), "prt_rope table");
  prt_rope_table(cs, Tfull, D, theta, dir);
  for (int64_t b = 0; b < B; b++)
    for (int64_t t = 0; t < T; t++) {
      int64_t p = G > 1 ? prt_cp_position(r, G, T / 2, t) : t;
      for (int64_t h = 0; h < H; h++) {
        const float *xi = x + (b * T + t) * N + h * D;
        float *oi = out + (b * T + t) * N + h * D;
        for (int64_t j = 0; j < half; j++) {
          float c = cs[2 * (p * half + j)], s = cs[2 * (p * half + j) + 1];
          float x1 = xi[j], x2 = xi[j + half];
          oi[j] = x1 * c - x2 * s;
          oi[j + half] = x2 * c + x1 * s;
        }
      }
    }
  free(cs);
}

void prt_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                  float theta) {
  prt_rope(out, x, B, T, N, D, theta, 1.0, 0, 1);
}

void prt_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t N, int64_t D,
                  float theta) {
  prt_rope(dx, dout, B, T, N, D, theta, -1.0, 0, 1);
}

void prt_rope_fwd_cp(float *out, const float *x, int64_t B, int64_t Tl, int64_t N, int64_t D,
                     float theta, int64_t r, int64_t G) {
  prt_rope(out, x, B, Tl, N, D, theta, 1.0, r, G);
}

void prt_rope_bwd_cp(float *dx, const float *dout, int64_t B, int64_t Tl, int64_t N, int64_t D,
                     float theta, int64_t r, int64_t G) {
  prt_rope(dx, dout, B, Tl, N, D, theta, -1.0, r, G);
}

/* ---- SwiGLU ---- */

void prt_swiglu_fwd(float *out, const float *gate, const float *up, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) {
    float g = gate[i];
    out[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

void prt_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate,
                    const float *up, int64_t n) {
  prt_comm_progress();
  for (int64_t i = 0; i < n; i++) {
    float g = gate[i], sig = 1.0f / (1.0f + expf(-g));
    /* silu'(g) = sig * (1 + g * (1 - sig)) */
    dgate[i] = dout[i] * up[i] * sig * (1.0f + g * (1.0f - sig));
    dup[i] = dout[i] * g * sig;
  }
}
