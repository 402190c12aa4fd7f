// The rows of the GPU's fused causal attention (kernels/cuda_attention.cu), as functions of
// one (b, h, t) row run by W lanes: W = 32 on the GPU (a warp). test/gpu/attention_emu.cu
// runs the same code on the host against the CPU kernels, with W = 1 (one lane does a row's
// work) and with W = 32 lanes as threads in lock step (the GPU's split of the work).
//
// Work split in a warp: keys (queries, for a key's row) are taken W at a time, one per lane:
// a lane computes its key's whole dot product (the row's q, dO, k or v staged in `buf`,
// shared memory on the GPU), then one max and one sum across lanes per W keys, and each
// output element d = lane + r W accumulates the W keys' contributions, their weights
// broadcast from the lane that computed them. Per W keys: W + 2 log2 W shuffles, one exp per
// lane (a lane per head element instead needs 2 log2 W shuffles and 2 exps per key).
//
// Layout as the CPU kernel (runtime/kernels/cpu_attention.c), for GPT: qkv is (B, T, 3C) with q at channel h*hs,
// k at C + h*hs, v at 2C + h*hs; out and dout are (B, T, C); lse and D are (B, H, T).
//   forward:  for query t, over keys j <= t: s = scale q.k_j; running max m, sum l and
//             accumulator acc rescaled as m grows; out = acc / l; lse[t] = m + log l.
//   backward: P_tj = exp(s_tj - lse_t) recomputed; D_t = sum_j P_tj (dO_t . v_j);
//             dS_tj = P_tj (dO_t . v_j - D_t); dq_t = scale sum_j dS_tj k_j (a row per query);
//             dk_j = scale sum_t dS_tj q_t, dv_j = sum_t P_tj dO_t (a row per key, t >= j).
//             Every row writes only its own elements: no atomics.
// q, k, v, out, dout, dq, dk, dv are in their values' own precision (kernels/cuda_fp.cuh: a
// bf16 widened as it is read, rounded as it is stored); lse and D are fp32.
#ifndef PIPER_PRT_KERNELS_CUDA_ATTENTION_CUH
#define PIPER_PRT_KERNELS_CUDA_ATTENTION_CUH

#include <math.h>
#include <stdint.h>

#include "kernels/cuda_fp.cuh"

#if !defined(__CUDACC__) && !defined(__host__) /* a host compiler without CUDA's headers */
#define __host__
#define __device__
#endif

// Across the W lanes of a row (every lane gets the result). On the host, W = 1 is one lane;
// W > 1 exists only in test/gpu/attention_emu.cu, which runs the W lanes as threads in lock
// step and defines prt_attn_lanes_exchange (op 0: sum, 1: max, 2: lane src's value, 3: a
// barrier), so the host can check the same lane split the GPU runs.
#ifndef __CUDA_ARCH__
float prt_attn_lanes_exchange(float v, int op, int src);
#endif
template <int W> __host__ __device__ inline float lanes_sum(float s) {
#ifdef __CUDA_ARCH__
  for (int o = W / 2; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
#else
  if (W > 1) s = prt_attn_lanes_exchange(s, 0, 0);
#endif
  return s;
}
template <int W> __host__ __device__ inline float lanes_max(float s) {
#ifdef __CUDA_ARCH__
  for (int o = W / 2; o > 0; o >>= 1) s = fmaxf(s, __shfl_xor_sync(0xffffffffu, s, o));
#else
  if (W > 1) s = prt_attn_lanes_exchange(s, 1, 0);
#endif
  return s;
}
// lane src's v, to every lane
template <int W> __host__ __device__ inline float lanes_bcast(float v, int src) {
#ifdef __CUDA_ARCH__
  return __shfl_sync(0xffffffffu, v, src);
#else
  return W > 1 ? prt_attn_lanes_exchange(v, 2, src) : v;
#endif
}
// the lanes' writes to buf are seen by every lane after this
template <int W> __host__ __device__ inline void lanes_sync() {
#ifdef __CUDA_ARCH__
  __syncwarp();
#else
  if (W > 1) prt_attn_lanes_exchange(0.0f, 3, 0);
#endif
}

// The strided views of one attention call: q (and dq) rows of qs floats, k and v (and dk, dv)
// rows of ks, out (and dout) rows of os; H query heads of D floats read KV kv heads, query
// head h reading kv head h*KV/H. GPT's packed qkv is H = KV, qs = ks = 3C, os = C with k and v
// at channels C and 2C of qkv (attn_packed); Qwen3's grouped-query attention is separate q
// (B, T, H*D) and k, v (B, T, KV*D) (attn_gqa). One set of row functions serves both, as
// runtime/kernels/cpu_attention.c does on the CPU.
struct AttnShape {
  int64_t T, H, KV, D; // sequence, query heads, kv heads, head size
  int64_t qs, ks, os;  // row strides of q/dq, of k/v/dk/dv, of out/dout
};
__host__ __device__ inline AttnShape attn_packed(int64_t T, int64_t C, int64_t H) {
  return AttnShape{T, H, H, C / H, 3 * C, 3 * C, C};
}
__host__ __device__ inline AttnShape attn_gqa(int64_t T, int64_t H, int64_t KV, int64_t D) {
  return AttnShape{T, H, KV, D, H * D, KV * D, H * D};
}

// Query row `row` of the (B, H, T) numbering lse and D use: batch b, head h, position t, and
// the kv head kh that head h reads.
struct AttnRow {
  int64_t b, h, t, kh;
};
__host__ __device__ inline AttnRow attn_row(int64_t row, const AttnShape &s) {
  AttnRow r;
  r.t = row % s.T;
  int64_t bh = row / s.T;
  r.h = bh % s.H;
  r.b = bh / s.H;
  r.kh = r.h * s.KV / s.H;
  return r;
}

__host__ __device__ inline float dot(const float *a, prt_fp_in b, int64_t n) {
  float s = 0.0f;
  for (int64_t d = 0; d < n; d++) s += a[d] * fp_ld(b, d);
  return s;
}
__host__ __device__ inline float dot(prt_fp_in a, const float *b, int64_t n) {
  float s = 0.0f;
  for (int64_t d = 0; d < n; d++) s += fp_ld(a, d) * b[d];
  return s;
}

// out and lse of one (b, h, t) query row. buf: head size floats of the row's own (shared
// memory of its warp on the GPU).
template <int W, int R>
__host__ __device__ inline void attn_fwd_row(int64_t row, int lane, prt_fp_out out, float *lse,
                                             prt_fp_in q, prt_fp_in k, prt_fp_in v,
                                             const AttnShape &s, float scale, float *buf) {
  AttnRow a = attn_row(row, s);
  int64_t T = s.T, D = s.D;
  prt_fp_in qr = fp_at(q, (a.b * T + a.t) * s.qs + a.h * D);
  for (int64_t d = lane; d < D; d += W) buf[d] = fp_ld(qr, d);
  lanes_sync<W>();
  float acc[R];
  for (int r = 0; r < R; r++) acc[r] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  for (int64_t j0 = 0; j0 <= a.t; j0 += W) {
    int64_t j = j0 + lane; /* this lane's key */
    float sc = -INFINITY;
    if (j <= a.t) sc = dot(buf, fp_at(k, (a.b * T + j) * s.ks + a.kh * D), D) * scale;
    float mn = fmaxf(m, lanes_max<W>(sc)), corr = expf(m - mn);
    float p = j <= a.t ? expf(sc - mn) : 0.0f;
    l = l * corr + lanes_sum<W>(p);
    for (int r = 0; r < R; r++) acc[r] *= corr;
    for (int jj = 0; jj < W && j0 + jj <= a.t; jj++) { /* the same count on every lane */
      float pj = lanes_bcast<W>(p, jj);
      prt_fp_in vj = fp_at(v, (a.b * T + j0 + jj) * s.ks + a.kh * D);
      for (int r = 0; r < R; r++) {
        int64_t d = lane + (int64_t)r * W;
        if (d < D) acc[r] += pj * fp_ld(vj, d);
      }
    }
    m = mn;
  }
  prt_fp_out o = fp_at(out, (a.b * T + a.t) * s.os + a.h * D);
  for (int r = 0; r < R; r++) {
    int64_t d = lane + (int64_t)r * W;
    if (d < D) fp_st(o, d, acc[r] / l);
  }
  if (lane == 0) lse[row] = m + logf(l);
}

// dq of one (b, h, t) query row, and D_t for the key rows. buf: q and dO of the row.
template <int W, int R>
__host__ __device__ inline void attn_bwd_dq_row(int64_t row, int lane, prt_fp_out dq,
                                                float *Dbuf, prt_fp_in dout, prt_fp_in q,
                                                prt_fp_in k, prt_fp_in v, const float *lse,
                                                const AttnShape &s, float scale, float *buf) {
  AttnRow a = attn_row(row, s);
  int64_t T = s.T, D = s.D;
  prt_fp_in qr = fp_at(q, (a.b * T + a.t) * s.qs + a.h * D);
  prt_fp_in dO = fp_at(dout, (a.b * T + a.t) * s.os + a.h * D);
  float *qsb = buf, *dos = buf + D;
  for (int64_t d = lane; d < D; d += W) {
    qsb[d] = fp_ld(qr, d);
    dos[d] = fp_ld(dO, d);
  }
  lanes_sync<W>();
  float acc[R];
  for (int r = 0; r < R; r++) acc[r] = 0.0f;
  float L = lse[row], Dt = 0.0f;
  for (int pass = 0; pass < 2; pass++) // D first, then dq with it
    for (int64_t j0 = 0; j0 <= a.t; j0 += W) {
      int64_t j = j0 + lane; /* this lane's key */
      float P = 0.0f, dp = 0.0f;
      if (j <= a.t) {
        P = expf(dot(qsb, fp_at(k, (a.b * T + j) * s.ks + a.kh * D), D) * scale - L);
        dp = dot(dos, fp_at(v, (a.b * T + j) * s.ks + a.kh * D), D);
      }
      if (pass == 0) {
        Dt += lanes_sum<W>(P * dp);
        continue;
      }
      float dS = P * (dp - Dt);
      for (int jj = 0; jj < W && j0 + jj <= a.t; jj++) {
        float w = lanes_bcast<W>(dS, jj);
        prt_fp_in kj = fp_at(k, (a.b * T + j0 + jj) * s.ks + a.kh * D);
        for (int r = 0; r < R; r++) {
          int64_t d = lane + (int64_t)r * W;
          if (d < D) acc[r] += w * fp_ld(kj, d);
        }
      }
    }
  prt_fp_out o = fp_at(dq, (a.b * T + a.t) * s.qs + a.h * D);
  for (int r = 0; r < R; r++) {
    int64_t d = lane + (int64_t)r * W;
    if (d < D) fp_st(o, d, scale * acc[r]);
  }
  if (lane == 0) Dbuf[row] = Dt;
}

// dk and dv of one (b, kv head, key j) row (rows 0 .. B*KV*T), after every D_t is known:
// the sum, in head order and then query order, over every query head that reads the kv head
// and every query t >= j, W queries at a time. Each row writes only its own elements (no
// atomics), so the sum is deterministic. buf: k and v of the row.
template <int W, int R>
__host__ __device__ inline void attn_bwd_dkdv_row(int64_t row, int lane, prt_fp_out dk,
                                                  prt_fp_out dv, const float *Dbuf,
                                                  prt_fp_in dout, prt_fp_in q, prt_fp_in k,
                                                  prt_fp_in v, const float *lse,
                                                  const AttnShape &s, float scale, float *buf) {
  int64_t T = s.T, H = s.H, KV = s.KV, D = s.D;
  int64_t j = row % T, bk = row / T, kh = bk % KV, b = bk / KV;
  prt_fp_in kr = fp_at(k, (b * T + j) * s.ks + kh * D), vr = fp_at(v, (b * T + j) * s.ks + kh * D);
  float *ksb = buf, *vsb = buf + D;
  for (int64_t d = lane; d < D; d += W) {
    ksb[d] = fp_ld(kr, d);
    vsb[d] = fp_ld(vr, d);
  }
  lanes_sync<W>();
  float adk[R], adv[R];
  for (int r = 0; r < R; r++) adk[r] = adv[r] = 0.0f;
  for (int64_t h = 0; h < H; h++) {
    if (h * KV / H != kh) continue; /* a query head of another kv head (same on all lanes) */
    for (int64_t t0 = j; t0 < T; t0 += W) {
      int64_t t = t0 + lane;
      float P = 0.0f, dS = 0.0f;
      if (t < T) {
        int64_t qrow = (b * H + h) * T + t;
        P = expf(dot(fp_at(q, (b * T + t) * s.qs + h * D), ksb, D) * scale - lse[qrow]);
        dS = P * (dot(fp_at(dout, (b * T + t) * s.os + h * D), vsb, D) - Dbuf[qrow]);
      }
      for (int tt = 0; tt < W && t0 + tt < T; tt++) {
        float pt = lanes_bcast<W>(P, tt), st = lanes_bcast<W>(dS, tt);
        prt_fp_in qt = fp_at(q, (b * T + t0 + tt) * s.qs + h * D);
        prt_fp_in dOt = fp_at(dout, (b * T + t0 + tt) * s.os + h * D);
        for (int r = 0; r < R; r++) {
          int64_t d = lane + (int64_t)r * W;
          if (d < D) {
            adv[r] += pt * fp_ld(dOt, d);
            adk[r] += st * fp_ld(qt, d);
          }
        }
      }
    }
  }
  prt_fp_out ok = fp_at(dk, (b * T + j) * s.ks + kh * D);
  prt_fp_out ov = fp_at(dv, (b * T + j) * s.ks + kh * D);
  for (int r = 0; r < R; r++) {
    int64_t d = lane + (int64_t)r * W;
    if (d < D) {
      fp_st(ok, d, scale * adk[r]);
      fp_st(ov, d, adv[r]);
    }
  }
}

// ---- GPT's attention on packed qkv (tdag.attention, the CPU's prt_attention_*) ----
template <int W, int R>
__host__ __device__ inline void attention_fwd_row(int64_t row, int lane, prt_fp_out out,
                                                  float *lse, prt_fp_in qkv, int64_t T,
                                                  int64_t C, int64_t H, float scale, float *buf) {
  attn_fwd_row<W, R>(row, lane, out, lse, qkv, fp_at(qkv, C), fp_at(qkv, 2 * C),
                     attn_packed(T, C, H), scale, buf);
}

template <int W, int R>
__host__ __device__ inline void attention_bwd_dq_row(int64_t row, int lane, prt_fp_out dqkv,
                                                     float *Dbuf, prt_fp_in dout,
                                                     prt_fp_in qkv, const float *lse,
                                                     int64_t T, int64_t C, int64_t H,
                                                     float scale, float *buf) {
  attn_bwd_dq_row<W, R>(row, lane, dqkv, Dbuf, dout, qkv, fp_at(qkv, C), fp_at(qkv, 2 * C), lse,
                        attn_packed(T, C, H), scale, buf);
}

// With KV = H the dk/dv rows are the (b, h, key) rows.
template <int W, int R>
__host__ __device__ inline void attention_bwd_dkdv_row(int64_t row, int lane, prt_fp_out dqkv,
                                                       const float *Dbuf, prt_fp_in dout,
                                                       prt_fp_in qkv, const float *lse,
                                                       int64_t T, int64_t C, int64_t H,
                                                       float scale, float *buf) {
  attn_bwd_dkdv_row<W, R>(row, lane, fp_at(dqkv, C), fp_at(dqkv, 2 * C), Dbuf, dout, qkv,
                          fp_at(qkv, C), fp_at(qkv, 2 * C), lse, attn_packed(T, C, H), scale,
                          buf);
}

// ---- grouped-query attention (Qwen3: tdag.gqa_attention, the CPU's prt_gqa_attention_*) ----
template <int W, int R>
__host__ __device__ inline void gqa_fwd_row(int64_t row, int lane, prt_fp_out out, float *lse,
                                            prt_fp_in q, prt_fp_in k, prt_fp_in v, int64_t T,
                                            int64_t H, int64_t KV, int64_t D, float scale,
                                            float *buf) {
  attn_fwd_row<W, R>(row, lane, out, lse, q, k, v, attn_gqa(T, H, KV, D), scale, buf);
}

template <int W, int R>
__host__ __device__ inline void gqa_bwd_dq_row(int64_t row, int lane, prt_fp_out dq, float *Dbuf,
                                               prt_fp_in dout, prt_fp_in q, prt_fp_in k,
                                               prt_fp_in v, const float *lse, int64_t T,
                                               int64_t H, int64_t KV, int64_t D, float scale,
                                               float *buf) {
  attn_bwd_dq_row<W, R>(row, lane, dq, Dbuf, dout, q, k, v, lse, attn_gqa(T, H, KV, D), scale,
                        buf);
}

template <int W, int R>
__host__ __device__ inline void gqa_bwd_dkdv_row(int64_t row, int lane, prt_fp_out dk,
                                                 prt_fp_out dv, const float *Dbuf,
                                                 prt_fp_in dout, prt_fp_in q, prt_fp_in k,
                                                 prt_fp_in v, const float *lse, int64_t T,
                                                 int64_t H, int64_t KV, int64_t D, float scale,
                                                 float *buf) {
  attn_bwd_dkdv_row<W, R>(row, lane, dk, dv, Dbuf, dout, q, k, v, lse, attn_gqa(T, H, KV, D),
                          scale, buf);
}

#endif
