// Causal attention in FlashAttention-2's structure in fp32 (issue 34): for fp32 plans, with
// the tiling of kernels/cuda_fa2.cuh and no tensor cores (no TF32: every product an fp32 FMA,
// so fp32 stays comparable with PyTorch's fp32 with TF32 off). The code of one thread of a
// block, for the GPU (kernels/cuda_fa2.cu) and the host emulation (test/gpu/block_emu.h,
// test/gpu/fa2-emu.test checks it against the CPU attention at 1e-5).
//
// Layouts as kernels/cuda_fa2.cuh's, in fp32 elements (pointers and rows 16-byte aligned).
//
// The 128 threads of a block form a 16 x 8 grid (ty = tid / 8, tx = tid % 8, the 8 of a row
// in one warp): a thread holds rows ty + 16 i of a tile and columns tx + 8 j of a score tile,
// or the float4 columns 4 tx + 32 g of a head-sized row, so each shared read is a broadcast
// or 8 threads over 32 distinct banks (rows padded by 4 floats).
// - forward: a block owns 64 query rows; Q, then 64-key tiles of K and V double-buffered
//   (separate commit groups), by 16-byte cp.async; S = Q K^T as 4 x 8 scores a thread; the
//   online softmax in base 2 (the row's max and sum over its 8 threads by shuffles, the sum
//   once at the end); P through shared memory to O += P V (4 rows x D/8 columns a thread).
// - backward: a block per 64 keys of one (batch, kv head), as the bf16 one: S^T = K Q^T and
//   dP^T = V dO^T (4 keys x 8 queries a thread), P^T from the saved lse, dS^T = P^T (dP^T -
//   D), both into shared memory; dV += P^T dO and dK += dS^T Q in registers for the block; dQ
//   += scale dS K added to dq itself by atomicAdd (fa2_delta_row_f32 zeroes it first, with D).
//   Query tiles of 64 rows at head size 64, 32 at 128 (the shared memory of 64 would pass 227
//   KB).
#ifndef PIPER_PRT_KERNELS_CUDA_FA2_F32_CUH
#define PIPER_PRT_KERNELS_CUDA_FA2_F32_CUH

#include "kernels/cuda_fa2.cuh"

struct Fa2F4 {
  float x, y, z, w;
};
__host__ __device__ inline Fa2F4 fa2_ld4(const float *p) {
#ifdef __CUDA_ARCH__
  float4 v = *reinterpret_cast<const float4 *>(p);
  return Fa2F4{v.x, v.y, v.z, v.w};
#else
  Fa2F4 v;
  memcpy(&v, p, 16);
  return v;
#endif
}
__host__ __device__ inline float fa2_dot4(Fa2F4 a, Fa2F4 b, float acc) {
  return fmaf(a.w, b.w, fmaf(a.z, b.z, fmaf(a.y, b.y, fmaf(a.x, b.x, acc))));
}
// dst[0..3] = x * mul (dst 16-byte aligned), one vector store on the GPU
__host__ __device__ inline void fa2_store4(float *dst, const float x[4], float mul) {
  fa2_store16(dst, fa2_bits(x[0] * mul), fa2_bits(x[1] * mul), fa2_bits(x[2] * mul),
              fa2_bits(x[3] * mul));
}
// acc += p v, element by element
__host__ __device__ inline void fa2_axpy4(float acc[4], float p, Fa2F4 v) {
  acc[0] = fmaf(p, v.x, acc[0]);
  acc[1] = fmaf(p, v.y, acc[1]);
  acc[2] = fmaf(p, v.z, acc[2]);
  acc[3] = fmaf(p, v.w, acc[3]);
}

// The max (sum) of v over the 8 threads of a row of the 16 x 8 grid (lanes differing in bits
// 0-2)
__host__ __device__ inline float fa2_max8(float v) {
  v = fmaxf(v, flash_shfl_xor(v, 1));
  v = fmaxf(v, flash_shfl_xor(v, 2));
  return fmaxf(v, flash_shfl_xor(v, 4));
}
__host__ __device__ inline float fa2_sum8(float v) {
  v += flash_shfl_xor(v, 1);
  v += flash_shfl_xor(v, 2);
  return v + flash_shfl_xor(v, 4);
}

// Rows [r0, r0 + ROWS) of a matrix of fp32 rows (stride `stride` floats, COLS of them from src)
// into dst (rows of LD floats), by 16-byte cp.async over the block's threads; rows at or past T
// are zero.
template <int ROWS, int COLS, int LD>
__host__ __device__ inline void fa2_load_f32(float *dst, const float *src, int64_t stride,
                                             int64_t r0, int64_t T, int tid) {
  constexpr int CPR = COLS / 4, CHUNKS = ROWS * CPR;
  FLASH_UNROLL
  for (int c = tid; c < CHUNKS; c += FA2_THREADS) {
    int row = c / CPR, ch = c % CPR;
    bool in = r0 + row < T;
    fa2_cp_async16(dst + row * LD + ch * 4, src + (in ? (r0 + row) * stride : 0) + ch * 4,
                   in ? 16 : 0);
  }
}

// ---- forward ----
template <int D> struct Fa2FwdF32 {
  static_assert(D == 64 || D == 128, "head sizes 64 and 128");
  static constexpr int BM = 64, BN = 64, LD = D + 4, LDP = BN + 4, G = D / 32;
  // Q, K[2], V[2], P
  static constexpr int SMEM = (BM * LD + 4 * BN * LD + BM * LDP) * 4;
};

struct Fa2FwdF32Args {
  const float *q, *k, *v;
  float *out, *lse; // out rows of s.os; lse (B, H, T)
  AttnShape s;
  int64_t B;
  float scale_log2;
};

// A forward launch's arguments (prt_cuda_fa2_fwd_f32's, and the host twins' in test/gpu)
__host__ __device__ inline Fa2FwdF32Args fa2_fwd_f32_args(float *out, float *lse, const float *q,
                                                         const float *k, const float *v,
                                                         int64_t B, const AttnShape &s) {
  return Fa2FwdF32Args{q, k, v, out, lse, s, B, FA2_LOG2E / sqrtf((float)s.D)};
}

template <int D>
__host__ __device__ inline int64_t fa2_fwd_f32_blocks(int64_t B, const AttnShape &s) {
  return B * s.H * ((s.T + Fa2FwdF32<D>::BM - 1) / Fa2FwdF32<D>::BM);
}

template <int D>
__host__ __device__ inline void fa2_fwd_f32_block(const Fa2FwdF32Args &a, int64_t blk, int tid,
                                                  char *smem) {
  using C = Fa2FwdF32<D>;
  constexpr int BM = C::BM, BN = C::BN, LD = C::LD, LDP = C::LDP, G = C::G;
  const AttnShape &s = a.s;
  const int64_t T = s.T, tiles = (T + BM - 1) / BM;
  Fa2Tile t = fa2_tile_of(blk, a.B, s.H, tiles - 1, -1); /* the last query tiles first */
  const int64_t q0 = t.tile * BM, kh = t.h * s.KV / s.H;
  const int ty = tid / 8, tx = tid % 8;
  float *sq = (float *)smem, *sk = sq + BM * LD, *sv = sk + 2 * BN * LD, *sp = sv + 2 * BN * LD;
  const float *qg = a.q + t.b * T * s.qs + t.h * D;
  const float *kg = a.k + t.b * T * s.ks + kh * D, *vg = a.v + t.b * T * s.ks + kh * D;
  const int64_t nkt = ((q0 + BM < T ? q0 + BM : T) - 1) / BN + 1;

  fa2_load_f32<BM, D, LD>(sq, qg, s.qs, q0, T, tid);
  fa2_load_f32<BN, D, LD>(sk, kg, s.ks, 0, T, tid);
  fa2_cp_async_commit();
  fa2_load_f32<BN, D, LD>(sv, vg, s.ks, 0, T, tid);
  fa2_cp_async_commit();

  float o[4][G][4], m[4], l[4];
  FLASH_UNROLL
  for (int i = 0; i < 4; i++) {
    m[i] = -INFINITY, l[i] = 0.0f;
    FLASH_UNROLL
    for (int g = 0; g < G; g++)
      FLASH_UNROLL
      for (int e = 0; e < 4; e++) o[i][g][e] = 0.0f;
  }
  for (int64_t j = 0; j < nkt; j++) {
    const int64_t k0 = j * BN;
    const float *kb = sk + (j & 1) * BN * LD, *vb = sv + (j & 1) * BN * LD;
    fa2_cp_async_wait<1>(); /* K j (and Q) landed */
    fa2_sync();             /* every thread's; tile j-1 (and P) done with */
    if (j + 1 < nkt) fa2_load_f32<BN, D, LD>(sk + ((j + 1) & 1) * BN * LD, kg, s.ks, k0 + BN, T, tid);
    fa2_cp_async_commit();
    float sc[4][8];
    FLASH_UNROLL
    for (int i = 0; i < 4; i++)
      FLASH_UNROLL
      for (int c = 0; c < 8; c++) sc[i][c] = 0.0f;
    FLASH_UNROLL
    for (int d = 0; d < D; d += 4) {
      Fa2F4 qv[4], kv[8];
      FLASH_UNROLL
      for (int i = 0; i < 4; i++) qv[i] = fa2_ld4(sq + (ty + 16 * i) * LD + d);
      FLASH_UNROLL
      for (int c = 0; c < 8; c++) kv[c] = fa2_ld4(kb + (tx + 8 * c) * LD + d);
      FLASH_UNROLL
      for (int i = 0; i < 4; i++)
        FLASH_UNROLL
        for (int c = 0; c < 8; c++) sc[i][c] = fa2_dot4(qv[i], kv[c], sc[i][c]);
    }
    bool diagonal = k0 + BN - 1 > q0;
#ifndef __CUDA_ARCH__
    if (prt_fa2_fault(PRT_FA2_FAULT_DROP_MASK)) diagonal = false;
#endif
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) {
      if (diagonal)
        FLASH_UNROLL
        for (int c = 0; c < 8; c++)
          if (k0 + tx + 8 * c > q0 + ty + 16 * i) sc[i][c] = -INFINITY;
      float mx = -INFINITY;
      FLASH_UNROLL
      for (int c = 0; c < 8; c++) mx = fmaxf(mx, sc[i][c]);
      float mn = fmaxf(m[i], fa2_max8(mx) * a.scale_log2); /* finite from tile 0 (key 0) on */
      float corr = fa2_exp2(m[i] - mn), sum = 0.0f;
      m[i] = mn;
      FLASH_UNROLL
      for (int c = 0; c < 8; c++) {
        float p = fa2_exp2(fmaf(sc[i][c], a.scale_log2, -mn));
        sum += p;
        sp[(ty + 16 * i) * LDP + tx + 8 * c] = p;
      }
      l[i] = l[i] * corr + sum;
      FLASH_UNROLL
      for (int g = 0; g < G; g++)
        FLASH_UNROLL
        for (int e = 0; e < 4; e++) o[i][g][e] *= corr;
    }
    fa2_cp_async_wait<1>(); /* V j landed */
    fa2_sync();             /* ... and P is written */
    if (j + 1 < nkt) fa2_load_f32<BN, D, LD>(sv + ((j + 1) & 1) * BN * LD, vg, s.ks, k0 + BN, T, tid);
    fa2_cp_async_commit();
    FA2_UNROLL2
    for (int c = 0; c < BN; c++) { /* O += P V */
      Fa2F4 vv[G];
      FLASH_UNROLL
      for (int g = 0; g < G; g++) vv[g] = fa2_ld4(vb + c * LD + 4 * tx + 32 * g);
      FLASH_UNROLL
      for (int i = 0; i < 4; i++) {
        float p = sp[(ty + 16 * i) * LDP + c];
        FLASH_UNROLL
        for (int g = 0; g < G; g++) fa2_axpy4(o[i][g], p, vv[g]);
      }
    }
  }
  fa2_cp_async_wait<0>();
  float *og = a.out + t.b * T * s.os + t.h * D;
  FLASH_UNROLL
  for (int i = 0; i < 4; i++) {
    int64_t row = q0 + ty + 16 * i;
    float lr = fa2_sum8(l[i]), inv = 1.0f / lr;
    if (row >= T) continue;
    FLASH_UNROLL
    for (int g = 0; g < G; g++) fa2_store4(og + row * s.os + 4 * tx + 32 * g, o[i][g], inv);
    if (tx == 0) a.lse[(t.b * s.H + t.h) * T + row] = (m[i] + log2f(lr)) * 0.69314718056f;
  }
}

// ---- backward ----
template <int D> struct Fa2BwdF32 {
  static_assert(D == 64 || D == 128, "head sizes 64 and 128");
  static constexpr int BN = 64, BM = D == 64 ? 64 : 32, LD = D + 4, LDS = BM + 4, G = D / 32;
  static constexpr int QI = BM / 16, QJ = BM / 8; /* a thread's query rows (dQ), columns (S^T) */
  // K, V, Q[2], dO[2], P^T, dS^T, then lse log2(e) [2][BM] and D [2][BM]
  static constexpr int SMEM = (2 * BN * LD + 4 * BM * LD + 2 * BN * LDS + 4 * BM) * 4;
};

struct Fa2BwdF32Args {
  const float *q, *k, *v, *dout, *lse, *delta; // delta (B, H, T): fa2_delta_row_f32
  float *dq, *dk, *dv;                         // dq zeroed by fa2_delta_row_f32, summed into
  AttnShape s;
  int64_t B;
  float scale, scale_log2;
};

// A backward launch's arguments: scratch (prt_cuda_fa2_bwd_f32_scratch_bytes) holds D
__host__ __device__ inline Fa2BwdF32Args fa2_bwd_f32_args(float *dq, float *dk, float *dv,
                                                         const float *dout, const float *lse,
                                                         const float *q, const float *k,
                                                         const float *v, float *scratch,
                                                         int64_t B, const AttnShape &s) {
  float scale = 1.0f / sqrtf((float)s.D);
  return Fa2BwdF32Args{q, k, v, dout, lse, scratch, dq, dk, dv, s, B, scale, scale * FA2_LOG2E};
}

template <int D>
__host__ __device__ inline int64_t fa2_bwd_f32_blocks(int64_t B, const AttnShape &s) {
  return B * s.KV * ((s.T + Fa2BwdF32<D>::BN - 1) / Fa2BwdF32<D>::BN);
}

// D of query row `row` ((B, H, T) numbering) from fp32 dO and O, and that row of dq zeroed
__host__ __device__ inline void fa2_delta_row_f32(float *delta, float *dq, const float *dout,
                                                  const float *out, const AttnShape &s,
                                                  int64_t row) {
  int64_t t = row % s.T, bh = row / s.T, h = bh % s.H, b = bh / s.H;
  const float *dr = dout + (b * s.T + t) * s.os + h * s.D, *orow = out + (b * s.T + t) * s.os + h * s.D;
  float sum = 0.0f;
  for (int64_t d = 0; d < s.D; d++) sum = fmaf(dr[d], orow[d], sum);
  delta[row] = sum;
  float *q = dq + (b * s.T + t) * s.qs + h * s.D;
  for (int64_t d = 0; d < s.D; d++) q[d] = 0.0f;
}

template <int D>
__host__ __device__ inline void fa2_bwd_f32_block(const Fa2BwdF32Args &a, int64_t blk, int tid,
                                                  char *smem) {
  using C = Fa2BwdF32<D>;
  constexpr int BN = C::BN, BM = C::BM, LD = C::LD, LDS = C::LDS, G = C::G, QI = C::QI, QJ = C::QJ;
  const AttnShape &s = a.s;
  const int64_t T = s.T;
  Fa2Tile t = fa2_tile_of(blk, a.B, s.KV, 0, 1); /* key tile 0 first */
  const int64_t k0 = t.tile * BN, kh = t.h;
  const int ty = tid / 8, tx = tid % 8;
  float *sK = (float *)smem, *sV = sK + BN * LD, *sQ = sV + BN * LD, *sdO = sQ + 2 * BM * LD;
  float *sP = sdO + 2 * BM * LD, *sS = sP + BN * LDS, *sL = sS + BN * LDS, *sD = sL + 2 * BM;
  const int64_t h0 = (kh * s.H + s.KV - 1) / s.KV, h1 = ((kh + 1) * s.H + s.KV - 1) / s.KV;
  const int64_t qt0 = k0 / BM, qtiles = (T + BM - 1) / BM - qt0, steps = (h1 - h0) * qtiles;
  auto load_step = [&](int64_t i, int buf) {
    int64_t h = h0 + i / qtiles, q0 = (qt0 + i % qtiles) * BM;
    fa2_load_f32<BM, D, LD>(sQ + buf * BM * LD, a.q + t.b * T * s.qs + h * D, s.qs, q0, T, tid);
    fa2_load_f32<BM, D, LD>(sdO + buf * BM * LD, a.dout + t.b * T * s.os + h * D, s.os, q0, T, tid);
    for (int r = tid; r < BM; r += FA2_THREADS) {
      int64_t row = (t.b * s.H + h) * T + q0 + r;
      sL[buf * BM + r] = q0 + r < T ? a.lse[row] * 1.44269504089f : INFINITY;
      sD[buf * BM + r] = q0 + r < T ? a.delta[row] : 0.0f;
    }
  };
  fa2_load_f32<BN, D, LD>(sK, a.k + t.b * T * s.ks + kh * D, s.ks, k0, T, tid);
  fa2_load_f32<BN, D, LD>(sV, a.v + t.b * T * s.ks + kh * D, s.ks, k0, T, tid);
  load_step(0, 0);
  fa2_cp_async_commit();

  float dk[4][G][4], dv[4][G][4];
  FLASH_UNROLL
  for (int i = 0; i < 4; i++)
    FLASH_UNROLL
    for (int g = 0; g < G; g++)
      FLASH_UNROLL
      for (int e = 0; e < 4; e++) dk[i][g][e] = dv[i][g][e] = 0.0f;
  for (int64_t i = 0; i < steps; i++) {
    const int buf = i & 1;
    const int64_t h = h0 + i / qtiles, q0 = (qt0 + i % qtiles) * BM;
    const float *qb = sQ + buf * BM * LD, *dob = sdO + buf * BM * LD;
    const float *L = sL + buf * BM, *Dl = sD + buf * BM;
    fa2_cp_async_wait<0>();
    fa2_sync(); /* step i landed for every thread; step i-1 done with P, dS and the buffers */
    if (i + 1 < steps) {
      load_step(i + 1, buf ^ 1);
      fa2_cp_async_commit();
    }
    // S^T and dP^T: keys ty + 16 r, queries tx + 8 c
    float st[4][QJ], dp[4][QJ];
    FLASH_UNROLL
    for (int r = 0; r < 4; r++)
      FLASH_UNROLL
      for (int c = 0; c < QJ; c++) st[r][c] = dp[r][c] = 0.0f;
    FA2_UNROLL2
    for (int d = 0; d < D; d += 4) {
      Fa2F4 kv[4], vv[4];
      FLASH_UNROLL
      for (int r = 0; r < 4; r++) {
        kv[r] = fa2_ld4(sK + (ty + 16 * r) * LD + d);
        vv[r] = fa2_ld4(sV + (ty + 16 * r) * LD + d);
      }
      FLASH_UNROLL
      for (int c = 0; c < QJ; c++) {
        Fa2F4 qv = fa2_ld4(qb + (tx + 8 * c) * LD + d), dov = fa2_ld4(dob + (tx + 8 * c) * LD + d);
        FLASH_UNROLL
        for (int r = 0; r < 4; r++) {
          st[r][c] = fa2_dot4(kv[r], qv, st[r][c]);
          dp[r][c] = fa2_dot4(vv[r], dov, dp[r][c]);
        }
      }
    }
    bool diagonal = k0 + BN - 1 > q0;
#ifndef __CUDA_ARCH__
    if (prt_fa2_fault(PRT_FA2_FAULT_DROP_MASK)) diagonal = false;
#endif
    FLASH_UNROLL
    for (int r = 0; r < 4; r++)
      FLASH_UNROLL
      for (int c = 0; c < QJ; c++) {
        int qc = tx + 8 * c;
        float p = fa2_exp2(fmaf(st[r][c], a.scale_log2, -L[qc]));
        if (diagonal && k0 + ty + 16 * r > q0 + qc) p = 0.0f;
        sP[(ty + 16 * r) * LDS + qc] = p;
        sS[(ty + 16 * r) * LDS + qc] = p * (dp[r][c] - Dl[qc]);
      }
    fa2_sync();
    // dV += P^T dO, dK += dS^T Q: keys ty + 16 r, columns 4 tx + 32 g
    FA2_UNROLL2
    for (int q = 0; q < BM; q++) {
      Fa2F4 dov[G], qv[G];
      FLASH_UNROLL
      for (int g = 0; g < G; g++) {
        dov[g] = fa2_ld4(dob + q * LD + 4 * tx + 32 * g);
        qv[g] = fa2_ld4(qb + q * LD + 4 * tx + 32 * g);
      }
      FLASH_UNROLL
      for (int r = 0; r < 4; r++) {
        float p = sP[(ty + 16 * r) * LDS + q], ds = sS[(ty + 16 * r) * LDS + q];
        FLASH_UNROLL
        for (int g = 0; g < G; g++) {
          fa2_axpy4(dv[r][g], p, dov[g]);
          fa2_axpy4(dk[r][g], ds, qv[g]);
        }
      }
    }
    // dq += scale dS K: queries ty + 16 r, columns 4 tx + 32 g, added to dq
    float acc[QI][G][4];
    FLASH_UNROLL
    for (int r = 0; r < QI; r++)
      FLASH_UNROLL
      for (int g = 0; g < G; g++)
        FLASH_UNROLL
        for (int e = 0; e < 4; e++) acc[r][g][e] = 0.0f;
    FA2_UNROLL2
    for (int key = 0; key < BN; key++) {
      Fa2F4 kv[G];
      FLASH_UNROLL
      for (int g = 0; g < G; g++) kv[g] = fa2_ld4(sK + key * LD + 4 * tx + 32 * g);
      FLASH_UNROLL
      for (int r = 0; r < QI; r++) {
        float ds = sS[key * LDS + ty + 16 * r];
        FLASH_UNROLL
        for (int g = 0; g < G; g++) fa2_axpy4(acc[r][g], ds, kv[g]);
      }
    }
    float *dqg = a.dq + t.b * T * s.qs + h * D;
    FLASH_UNROLL
    for (int r = 0; r < QI; r++) {
      int64_t row = q0 + ty + 16 * r;
      if (row >= T) continue;
      FLASH_UNROLL
      for (int g = 0; g < G; g++)
        FLASH_UNROLL
        for (int e = 0; e < 4; e++)
          fa2_atomic_add(dqg + row * s.qs + 4 * tx + 32 * g + e, acc[r][g][e] * a.scale);
    }
  }
  fa2_cp_async_wait<0>();
  float *dkg = a.dk + t.b * T * s.ks + kh * D, *dvg = a.dv + t.b * T * s.ks + kh * D;
  FLASH_UNROLL
  for (int r = 0; r < 4; r++) {
    int64_t key = k0 + ty + 16 * r;
    if (key >= T) continue;
    FLASH_UNROLL
    for (int g = 0; g < G; g++) {
      fa2_store4(dkg + key * s.ks + 4 * tx + 32 * g, dk[r][g], a.scale);
      fa2_store4(dvg + key * s.ks + 4 * tx + 32 * g, dv[r][g], 1.0f);
    }
  }
}

#endif
