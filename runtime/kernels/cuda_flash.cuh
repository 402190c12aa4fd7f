// Causal attention on tensor cores, FlashAttention-2 style (issue 29): the warp-level code of
// kernels/cuda_flash.cu, written once for the GPU and for its host check. Each warp owns 16
// query rows (the forward and dq) or 16 keys (dk, dv) and runs every product as
// mma.sync.m16n8k16 with bf16 operands and fp32 accumulation; q, k, v, dO and the
// probabilities P and dS are rounded to bf16 as they enter a product (the scores, the
// softmax and every sum stay fp32). On the host, test/gpu/flash_emu.cu runs the 32 lanes as
// threads in lock step and defines the two exchanges (the mma across the warp, the shuffle)
// from the PTX ISA's fragment tables, so the lanes' indexing below is checked against the
// CPU attention without a GPU.
//
// Fragments (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point type"), lane =
// 4 g + t (g = groupID, t = threadID_in_group):
//   A (16 x 16, row): reg 0 = (row g, cols 2t, 2t+1), reg 1 = (row g+8, same cols),
//                     reg 2 = (row g, cols 2t+8, 2t+9), reg 3 = (row g+8, cols 2t+8, 2t+9);
//   B (16 x 8, col):  reg 0 = (rows 2t, 2t+1, col g), reg 1 = (rows 2t+8, 2t+9, col g);
//   C, D (16 x 8):    c0, c1 = (row g, cols 2t, 2t+1), c2, c3 = (row g+8, cols 2t, 2t+1);
// each .b32 register holds two bf16, the lower-numbered element in its low half. So a
// 16 x 16 block held as two accumulators (columns 0-7, 8-15) is an A operand as it is
// (a_from_c): the softmax's P and the backward's dS feed the next product in registers.
//
// The math (as kernels/cuda_attention.cuh's, s = scale q.k):
//   forward   per 16 keys j0.. <= the tile's last query: S = Q K^T, running max m, sum l,
//             O = O corr + P V (P = e^(s - m)); out = O / l, lse = m + log l;
//   dq        P = e^(s - lse) recomputed; first pass D_t = sum_j P_tj (dO_t . v_j), then
//             dS = P (dO V^T - D), dq = scale dS K; D goes to Dbuf for the dk/dv warps;
//   dk, dv    per 16 keys, over every query tile from the keys' own on and every query head
//             reading this kv head (head order, then query order: no atomics):
//             S^T = K Q^T, P^T = e^(s - lse), dP^T = V dO^T, dS^T = P^T (dP^T - D),
//             dv += P^T dO, dk += scale dS^T Q.
// Head size up to FLASH_HEAD (64); T and the head size need not be multiples of 16 (stores
// past them are skipped).
//
// Staged operands: q, k, v and dO reach the warps as bf16 copies the launch makes first
// (flash_stage_at, one pass over each): per (batch, head) a T16 x FLASH_HEAD block (T16 = T
// rounded up to the tile), zero past T and past the head size. Every warp that reads a key
// tile used to load it as fp32 and round it to bf16 itself (a key tile is read by every
// query tile after it: 32 times on average at T = 1024); now a fragment register is one
// 32-bit load of two bf16 (A and K^T-side B fragments) or two 16-bit loads (V-side B
// fragments, whose two elements are a column apart), with no bounds checks: the zero padding
// is what a load past T or D used to read. The results are bit for bit those of rounding at
// each load.
#ifndef PIPER_PRT_KERNELS_CUDA_FLASH_CUH
#define PIPER_PRT_KERNELS_CUDA_FLASH_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels/cuda_attention.cuh" /* AttnShape */
#include "kernels/cuda_fp.cuh"



// Unrolls the loop over fragments in device code (the register arrays stay registers); a
// host compiler unrolls as it likes.
#ifdef __CUDA_ARCH__
#define FLASH_UNROLL _Pragma("unroll")
#else
#define FLASH_UNROLL
#endif

// The head sizes the kernels are built for: up to FLASH_HEAD (64: the GPT's; 4 d-steps of
// 16), a smaller head's extra columns read as 0. A larger head (Qwen3's 128) keeps the fp32
// kernels (runtime/kernels/cuda.c): the fully unrolled 8-step instance would add 0.5 MB of
// SASS per architecture to every --target cuda binary.
enum { FLASH_HEAD = 64, FLASH_ND = FLASH_HEAD / 16 };

#ifndef __CUDA_ARCH__
// The host's warp (test/gpu/flash_emu.cu): d += A B over the 32 lanes' fragments, and the
// value of lane (this lane ^ mask).
void prt_flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]);
float prt_flash_shfl_xor(float v, int mask);
#endif

__host__ __device__ inline void flash_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
#ifdef __CUDA_ARCH__
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
  prt_flash_mma(d, a, b);
#endif
}

__host__ __device__ inline float flash_shfl_xor(float v, int mask) {
#ifdef __CUDA_ARCH__
  return __shfl_xor_sync(0xffffffffu, v, mask);
#else
  return prt_flash_shfl_xor(v, mask);
#endif
}

// x rounded to the nearest bf16, ties to even (a NaN to the quiet NaN): prt_f32_to_bf16's rule
__host__ __device__ inline uint32_t flash_bf16(float x) { return prt_fp_bf16(x); }
__host__ __device__ inline uint32_t flash_pack(float lo, float hi) {
  return flash_bf16(lo) | (flash_bf16(hi) << 16);
}

// The staged copy's element i of `src` ((B, T) rows of rs floats holding `heads` heads of D at
// h * D): element (row r, column c) of block (b, h) is at ((b heads + h) T16 + r) FLASH_HEAD
// + c; x rounded to bf16 inside the head and the sequence, 0 outside
__host__ __device__ inline int64_t flash_t16(int64_t T) { return (T + 15) / 16 * 16; }
__host__ __device__ inline uint16_t flash_stage_at(prt_fp_in src, int64_t rs, int64_t T,
                                                   int64_t heads, int64_t D, int64_t i) {
  int64_t T16 = flash_t16(T), c = i % FLASH_HEAD, r = (i / FLASH_HEAD) % T16;
  int64_t bh = i / (FLASH_HEAD * T16), h = bh % heads, b = bh / heads;
  return r < T && c < D ? (uint16_t)flash_bf16(fp_ld(src, (b * T + r) * rs + h * D + c)) : 0;
}
// The block of (b, h) in a staged copy of `heads` heads
__host__ __device__ inline const uint16_t *flash_block(const uint16_t *staged, int64_t b,
                                                       int64_t h, int64_t heads, int64_t T) {
  return staged + (b * heads + h) * flash_t16(T) * FLASH_HEAD;
}

// Staged elements (r, c) and (r, c + 1) of a block as one register (c even: 4-byte aligned)
__host__ __device__ inline uint32_t flash_pair(const uint16_t *m, int64_t r, int64_t c) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint32_t *>(m + r * FLASH_HEAD + c);
#else
  uint32_t u;
  memcpy(&u, m + r * FLASH_HEAD + c, sizeof u);
  return u;
#endif
}
// Staged elements (r, c) and (r + 1, c) as one register
__host__ __device__ inline uint32_t flash_column_pair(const uint16_t *m, int64_t r, int64_t c) {
  return (uint32_t)m[r * FLASH_HEAD + c] | (uint32_t)m[(r + 1) * FLASH_HEAD + c] << 16;
}

// A = M[r0 .. r0+15][c0 .. c0+15] of a staged block M
__host__ __device__ inline void flash_load_a(uint32_t a[4], const uint16_t *m, int64_t r0,
                                             int64_t c0, int lane) {
  int64_t r = r0 + (lane >> 2), c = c0 + 2 * (lane & 3);
  a[0] = flash_pair(m, r, c);
  a[1] = flash_pair(m, r + 8, c);
  a[2] = flash_pair(m, r, c + 8);
  a[3] = flash_pair(m, r + 8, c + 8);
}

// B[k][n] = M[n0 + n][k0 + k] (16 x 8): M's rows are B's columns (K in Q K^T)
__host__ __device__ inline void flash_load_bt(uint32_t b[2], const uint16_t *m, int64_t k0,
                                              int64_t n0, int lane) {
  int64_t n = n0 + (lane >> 2), k = k0 + 2 * (lane & 3);
  b[0] = flash_pair(m, n, k);
  b[1] = flash_pair(m, n, k + 8);
}

// B[k][n] = M[k0 + k][n0 + n] (16 x 8) of a staged block M (V in P V)
__host__ __device__ inline void flash_load_b(uint32_t b[2], const uint16_t *m, int64_t k0,
                                             int64_t n0, int lane) {
  int64_t n = n0 + (lane >> 2), k = k0 + 2 * (lane & 3);
  b[0] = flash_column_pair(m, k, n);
  b[1] = flash_column_pair(m, k + 8, n);
}

// The 16 x 16 block held as accumulators c0 (columns 0-7) and c1 (8-15), as an A operand
__host__ __device__ inline void flash_a_from_c(uint32_t a[4], const float c0[4],
                                               const float c1[4]) {
  a[0] = flash_pack(c0[0], c0[1]);
  a[1] = flash_pack(c0[2], c0[3]);
  a[2] = flash_pack(c1[0], c1[1]);
  a[3] = flash_pack(c1[2], c1[3]);
}

// The sum (or max) of v over the 4 lanes holding one accumulator row (lanes 4g .. 4g+3)
__host__ __device__ inline float flash_row_sum(float v) {
  v += flash_shfl_xor(v, 1);
  return v + flash_shfl_xor(v, 2);
}
__host__ __device__ inline float flash_row_max(float v) {
  v = fmaxf(v, flash_shfl_xor(v, 1));
  return fmaxf(v, flash_shfl_xor(v, 2));
}

// Accumulator element i of n-tile nt (8 columns from n0) of a tile whose rows start at r0:
// its row and column.
__host__ __device__ inline int64_t flash_c_row(int64_t r0, int lane, int i) {
  return r0 + (lane >> 2) + (i >= 2 ? 8 : 0);
}
__host__ __device__ inline int64_t flash_c_col(int64_t n0, int lane, int i) {
  return n0 + 2 * (lane & 3) + (i & 1);
}

// dst[row * rs + col] = mul acc[nt][i] for the NT accumulator tiles of the 16 rows from r0,
// the rows below rlim and the columns below clim
template <int NT>
__host__ __device__ inline void flash_store(prt_fp_out dst, int64_t rs, const float acc[NT][4],
                                            int64_t r0, int64_t rlim, int64_t clim, float mul,
                                            int lane) {
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) {
      int64_t row = flash_c_row(r0, lane, i), col = flash_c_col(nt * 8, lane, i);
      if (row < rlim && col < clim) fp_st(dst, row * rs + col, acc[nt][i] * mul);
    }
}

// acc[nt] += A B_nt for the NT n-tiles of 8 columns of a staged block M from row k0: B_nt[k][n]
// = M[k0 + k][8 nt + n] (P V, dS K, P^T dO, dS^T Q)
template <int NT>
__host__ __device__ inline void flash_mma_rows(float acc[NT][4], const uint32_t a[4],
                                               const uint16_t *m, int64_t k0, int lane) {
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++) {
    uint32_t b[2];
    flash_load_b(b, m, k0, nt * 8, lane);
    flash_mma(acc[nt], a, b);
  }
}

// S (16 queries from q0 x 16 keys from k0) = Q K^T of this head, scaled and causally masked
// (-inf where key > query or key >= T); qa: Q's A fragments for the head's ND d-steps.
template <int ND>
__host__ __device__ inline void flash_scores(float sc[2][4], const uint32_t qa[][4],
                                             const uint16_t *kb, int64_t q0, int64_t k0,
                                             int64_t T, float scale, int lane) {
  FLASH_UNROLL
  for (int nt = 0; nt < 2; nt++) {
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) sc[nt][i] = 0.0f;
    FLASH_UNROLL
    for (int ds = 0; ds < ND; ds++) {
      uint32_t bk[2];
      flash_load_bt(bk, kb, ds * 16, k0 + 8 * nt, lane);
      flash_mma(sc[nt], qa[ds], bk);
    }
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) {
      int64_t key = flash_c_col(k0 + 8 * nt, lane, i), row = flash_c_row(q0, lane, i);
      sc[nt][i] = key <= row && key < T ? sc[nt][i] * scale : -INFINITY;
    }
  }
}

// A launch's staged operands (flash_stage_at): q and dO of H heads, k and v of KV heads (the
// forward stages no dO).
struct FlashStaged {
  const uint16_t *q, *k, *v, *dout;
};

// The forward of the 16 query rows from q0 of (batch b, query head h). ND: the d-steps of 16
// the head needs at most (a compile-time count, so the fragments stay in registers).
template <int ND>
__host__ __device__ inline void flash_fwd_warp(int lane, int64_t b, int64_t h, int64_t q0,
                                               prt_fp_out out, float *lse,
                                               const FlashStaged &st,
                                               const AttnShape &s, float scale) {
  int64_t T = s.T, D = s.D, kh = h * s.KV / s.H;
  constexpr int NT = 2 * ND;
  const uint16_t *qb = flash_block(st.q, b, h, s.H, T), *kb = flash_block(st.k, b, kh, s.KV, T);
  const uint16_t *vb = flash_block(st.v, b, kh, s.KV, T);
  uint32_t qa[ND][4];
  FLASH_UNROLL
  for (int ds = 0; ds < ND; ds++) flash_load_a(qa[ds], qb, q0, ds * 16, lane);
  float acc[NT][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) acc[nt][i] = 0.0f;
  int64_t kend = q0 + 16 < T ? q0 + 16 : T; /* causal: no key past the tile's last query */
  for (int64_t k0 = 0; k0 < kend; k0 += 16) {
    float sc[2][4];
    flash_scores<ND>(sc, qa, kb, q0, k0, T, scale, lane);
    FLASH_UNROLL
    for (int r = 0; r < 2; r++) { /* rows g (elements 0, 1) and g + 8 (2, 3) */
      float mx = fmaxf(fmaxf(sc[0][2 * r], sc[0][2 * r + 1]),
                       fmaxf(sc[1][2 * r], sc[1][2 * r + 1]));
      float mn = fmaxf(m[r], flash_row_max(mx)); /* finite: key 0 is every row's */
      float corr = expf(m[r] - mn), sum = 0.0f;
      FLASH_UNROLL
      for (int nt = 0; nt < 2; nt++)
        for (int i = 2 * r; i < 2 * r + 2; i++) {
          sc[nt][i] = expf(sc[nt][i] - mn);
          sum += sc[nt][i];
        }
      l[r] = l[r] * corr + flash_row_sum(sum);
      m[r] = mn;
      FLASH_UNROLL
      for (int nt = 0; nt < NT; nt++) acc[nt][2 * r] *= corr, acc[nt][2 * r + 1] *= corr;
    }
    uint32_t pa[4];
    flash_a_from_c(pa, sc[0], sc[1]);
    flash_mma_rows<NT>(acc, pa, vb, k0, lane); /* O += P V */
  }
  prt_fp_out ob = fp_at(out, b * T * s.os + h * D);
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) {
      int64_t row = flash_c_row(q0, lane, i), col = flash_c_col(nt * 8, lane, i);
      if (row < T && col < D) fp_st(ob, row * s.os + col, acc[nt][i] / l[i >> 1]);
    }
  if ((lane & 3) == 0)
    FLASH_UNROLL
    for (int r = 0; r < 2; r++) {
      int64_t row = q0 + (lane >> 2) + 8 * r;
      if (row < T) lse[(b * s.H + h) * T + row] = m[r] + logf(l[r]);
    }
}

// dq of the 16 query rows from q0 of (b, h), and their D into Dbuf ((B, H, T) as lse).
template <int ND>
__host__ __device__ inline void flash_dq_warp(int lane, int64_t b, int64_t h, int64_t q0,
                                              prt_fp_out dq, float *Dbuf, const FlashStaged &st,
                                              const float *lse, const AttnShape &s,
                                              float scale) {
  int64_t T = s.T, D = s.D, kh = h * s.KV / s.H;
  constexpr int NT = 2 * ND;
  const uint16_t *qb = flash_block(st.q, b, h, s.H, T), *kb = flash_block(st.k, b, kh, s.KV, T);
  const uint16_t *vb = flash_block(st.v, b, kh, s.KV, T);
  const uint16_t *dob = flash_block(st.dout, b, h, s.H, T);
  uint32_t qa[ND][4], da[ND][4];
  FLASH_UNROLL
  for (int ds = 0; ds < ND; ds++) {
    flash_load_a(qa[ds], qb, q0, ds * 16, lane);
    flash_load_a(da[ds], dob, q0, ds * 16, lane);
  }
  float L[2], Dr[2] = {0.0f, 0.0f}, acc[NT][4];
  FLASH_UNROLL
  for (int r = 0; r < 2; r++) {
    int64_t row = q0 + (lane >> 2) + 8 * r;
    L[r] = row < T ? lse[(b * s.H + h) * T + row] : 0.0f;
  }
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) acc[nt][i] = 0.0f;
  int64_t kend = q0 + 16 < T ? q0 + 16 : T;
  for (int pass = 0; pass < 2; pass++) { /* 0: D; 1: dS and dq */
    for (int64_t k0 = 0; k0 < kend; k0 += 16) {
      float p[2][4], dp[2][4];
      flash_scores<ND>(p, qa, kb, q0, k0, T, scale, lane);
      FLASH_UNROLL
      for (int nt = 0; nt < 2; nt++) {
        FLASH_UNROLL
        for (int i = 0; i < 4; i++) {
          p[nt][i] = expf(p[nt][i] - L[i >> 1]); /* masked: e^-inf = 0 */
          dp[nt][i] = 0.0f;
        }
        FLASH_UNROLL
        for (int ds = 0; ds < ND; ds++) { /* dP = dO V^T */
          uint32_t bv[2];
          flash_load_bt(bv, vb, ds * 16, k0 + 8 * nt, lane);
          flash_mma(dp[nt], da[ds], bv);
        }
      }
      if (pass == 0) {
        FLASH_UNROLL
        for (int nt = 0; nt < 2; nt++)
          FLASH_UNROLL
          for (int i = 0; i < 4; i++) Dr[i >> 1] += p[nt][i] * dp[nt][i];
        continue;
      }
      FLASH_UNROLL
      for (int nt = 0; nt < 2; nt++)
        FLASH_UNROLL
        for (int i = 0; i < 4; i++) p[nt][i] *= dp[nt][i] - Dr[i >> 1]; /* dS */
      uint32_t sa[4];
      flash_a_from_c(sa, p[0], p[1]);
      flash_mma_rows<NT>(acc, sa, kb, k0, lane); /* dq += dS K */
    }
    if (pass == 0)
      FLASH_UNROLL
      for (int r = 0; r < 2; r++) Dr[r] = flash_row_sum(Dr[r]);
  }
  flash_store<NT>(fp_at(dq, b * T * s.qs + h * D), s.qs, acc, q0, T, D, scale, lane);
  if ((lane & 3) == 0)
    FLASH_UNROLL
    for (int r = 0; r < 2; r++) {
      int64_t row = q0 + (lane >> 2) + 8 * r;
      if (row < T) Dbuf[(b * s.H + h) * T + row] = Dr[r];
    }
}

// dk and dv of the 16 keys from k0 of (b, kv head kh), summed over the query heads reading it.
template <int ND>
__host__ __device__ inline void flash_dkdv_warp(int lane, int64_t b, int64_t kh, int64_t k0,
                                                prt_fp_out dk, prt_fp_out dv, const float *Dbuf,
                                                const FlashStaged &st, const float *lse,
                                                const AttnShape &s, float scale) {
  int64_t T = s.T, D = s.D;
  constexpr int NT = 2 * ND;
  const uint16_t *kb = flash_block(st.k, b, kh, s.KV, T), *vb = flash_block(st.v, b, kh, s.KV, T);
  uint32_t ka[ND][4], va[ND][4];
  FLASH_UNROLL
  for (int ds = 0; ds < ND; ds++) {
    flash_load_a(ka[ds], kb, k0, ds * 16, lane);
    flash_load_a(va[ds], vb, k0, ds * 16, lane);
  }
  float gk[NT][4], gv[NT][4];
  FLASH_UNROLL
  for (int nt = 0; nt < NT; nt++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) gk[nt][i] = gv[nt][i] = 0.0f;
  for (int64_t h = 0; h < s.H; h++) {
    if (h * s.KV / s.H != kh) continue;
    const uint16_t *qb = flash_block(st.q, b, h, s.H, T), *dob = flash_block(st.dout, b, h, s.H, T);
    const float *Lh = lse + (b * s.H + h) * T, *Dh = Dbuf + (b * s.H + h) * T;
    for (int64_t q0 = k0; q0 < T; q0 += 16) { /* the queries that see these keys */
      float p[2][4], dp[2][4];
      FLASH_UNROLL
      for (int nt = 0; nt < 2; nt++) {
        FLASH_UNROLL
        for (int i = 0; i < 4; i++) p[nt][i] = dp[nt][i] = 0.0f;
        FLASH_UNROLL
        for (int ds = 0; ds < ND; ds++) {
          uint32_t bq[2], bd[2];
          flash_load_bt(bq, qb, ds * 16, q0 + 8 * nt, lane); /* S^T = K Q^T */
          flash_mma(p[nt], ka[ds], bq);
          flash_load_bt(bd, dob, ds * 16, q0 + 8 * nt, lane); /* dP^T = V dO^T */
          flash_mma(dp[nt], va[ds], bd);
        }
        FLASH_UNROLL
        for (int i = 0; i < 4; i++) {
          int64_t key = flash_c_row(k0, lane, i), qr = flash_c_col(q0 + 8 * nt, lane, i);
          int ok = key <= qr && qr < T && key < T;
          p[nt][i] = ok ? expf(p[nt][i] * scale - Lh[qr]) : 0.0f;
          dp[nt][i] = ok ? p[nt][i] * (dp[nt][i] - Dh[qr]) : 0.0f; /* dS^T */
        }
      }
      uint32_t pa[4], sa[4];
      flash_a_from_c(pa, p[0], p[1]);
      flash_a_from_c(sa, dp[0], dp[1]);
      flash_mma_rows<NT>(gv, pa, dob, q0, lane); /* dv += P^T dO */
      flash_mma_rows<NT>(gk, sa, qb, q0, lane);  /* dk += dS^T Q */
    }
  }
  flash_store<NT>(fp_at(dk, b * T * s.ks + kh * D), s.ks, gk, k0, T, D, scale, lane);
  flash_store<NT>(fp_at(dv, b * T * s.ks + kh * D), s.ks, gv, k0, T, D, 1.0f, lane);
}

#endif
