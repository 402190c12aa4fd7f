// Causal attention in FlashAttention-2's structure (issue 34), bf16 in and out, fp32 inside:
// the code of one thread of a block, written once for the GPU (kernels/cuda_fa2.cu) and for the
// host emulation that checks it (test/gpu/block_emu.h runs a block's threads with real
// barriers, shared memory as an array and the warp instructions from the PTX ISA's tables).
//
// Layouts (as the CPU kernels, runtime/kernels/cpu_attention.c, and AttnShape): q (and dq)
// rows of qs elements holding H heads of D at h*D; k, v (dk, dv) rows of ks holding KV heads,
// query head h reading kv head h*KV/H; out (dout) rows of os. GPT's packed qkv (B, T, 3C) is q,
// k, v at channels 0, C, 2C with qs = ks = 3C (read in place); Qwen3's grouped-query layout is
// q (B, T, H*D), k, v (B, T, KV*D). lse is (B, H, T): the natural log-sum-exp of each query
// row's scaled scores (what the CPU kernels save). Every global pointer and row start must be
// 16-byte aligned (the launchers check): tiles move in 16-byte pieces.
//
// Forward (fa2_fwd_block): a block of 4 warps owns BM query rows of one (batch, head): 128 at
// D = 64 (each warp 2 m-tiles of 16), 64 at D = 128. Its Q tile and then each 64-key tile of
// K and V go into shared memory by 16-byte cp.async, K and V double-buffered in separate
// commit groups (K of tile j+1 loads while tile j's P V runs, V of j+1 while j+1's Q K^T runs).
// Q fragments are taken once by ldmatrix into registers, K's by ldmatrix and V's by
// ldmatrix.trans; every product is mma.sync.m16n8k16 (bf16 operands, fp32 accumulation). The
// softmax is online, in base 2 with scale log2(e) folded into one FMA per score; the causal
// mask is applied only on the tiles the diagonal crosses; the row sum stays per lane until the
// end. The heaviest tiles (a head's last query rows, which see every key) are the grid's first
// blocks. O goes back through shared memory as 16-byte stores.
//
// Backward (FlashAttention-2's): fa2_delta_row first computes D = rowsum(dO o O) per query
// row (O is the forward's output), then a block per 64 keys of one (batch, kv head)
// (fa2_bwd_block) walks every query head reading that kv head and every query tile from the
// keys' own on, with Q, dO (and the tile's lse and D) double-buffered by cp.async. Each warp
// owns 16 keys: S^T = K Q^T and dP^T = V dO^T by mma, P^T = 2^(S^T scale log2 e - lse log2 e)
// (the saved lse, no max pass), dS^T = P^T (dP^T - D), once each; dV += P^T dO and dK +=
// dS^T Q stay in registers for the whole block; dS^T goes to shared memory, and after a block
// barrier each warp forms 16 query rows of dQ += dS K and adds them to an fp32 (B, H, T, D)
// accumulator with atomicAdd (zeroed before the launch). fa2_dq_chunk then writes dq = scale
// dQ as bf16. (The other way FlashAttention-2 offers, a second kernel per query tile that
// recomputes P and dS for dQ alone, trades the atomics for a third Q K^T: to be measured on a
// GPU.)
//
// Shared tiles are rows of 16-byte chunks with chunk c of row r stored at c ^ (r mod 8)
// (fa2_swz), so the 8 rows an ldmatrix reads, and the rows a cp.async wave writes, fall in
// different banks.
#ifndef PIPER_PRT_KERNELS_CUDA_FA2_CUH
#define PIPER_PRT_KERNELS_CUDA_FA2_CUH

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <initializer_list>

#include "kernels/cuda_fa2.h"     /* prt_cuda_fa2_takes, prt_cuda_fa2_aligned */
#include "kernels/cuda_flash.cuh" /* flash_mma, flash_shfl_xor, flash_pack, flash_a_from_c */

enum { FA2_THREADS = 128, FA2_WARPS = FA2_THREADS / 32 };

// The loops over a tile's rows or its head columns, whose index picks no register: unrolled by
// 2 only, so the loads of later iterations do not all stay live at once (full unrolling spills
// the backward's registers)
#ifdef __CUDA_ARCH__
#define FA2_UNROLL2 _Pragma("unroll 2")
#else
#define FA2_UNROLL2
#endif

// Faults the host emulation can put back to show its checks fail (test/gpu/block_emu.h; the
// rest are in the emulated instructions). Never set on a GPU.
enum { PRT_FA2_FAULT_DROP_MASK = 1 };

#ifndef __CUDA_ARCH__
// The host emulation of the block's synchronising instructions (test/gpu/block_emu.h).
void prt_fa2_syncthreads(void);
void prt_fa2_ldmatrix_x4(uint32_t r[4], const void *row, int trans);
void prt_fa2_cp_async16(void *dst, const void *src, int src_bytes);
void prt_fa2_cp_async_commit(void);
void prt_fa2_cp_async_wait(int pending);
int prt_fa2_fault(int which);
#endif

// ---- the instructions ----
__host__ __device__ inline void fa2_sync() {
#ifdef __CUDA_ARCH__
  __syncthreads();
#else
  prt_fa2_syncthreads();
#endif
}

// 16 bytes from global src to shared dst, asynchronously; src_bytes < 16 reads that many and
// zero-fills the rest (0: no read at all, src need only be a valid address).
__host__ __device__ inline void fa2_cp_async16(void *dst, const void *src, int src_bytes) {
#ifdef __CUDA_ARCH__
  unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
               "r"(src_bytes));
#else
  prt_fa2_cp_async16(dst, src, src_bytes);
#endif
}
__host__ __device__ inline void fa2_cp_async_commit() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.commit_group;\n" ::);
#else
  prt_fa2_cp_async_commit();
#endif
}
// Waits until at most `PENDING` of this thread's newest commit groups are still in flight
// (other threads' copies are visible only after a barrier too).
template <int PENDING> __host__ __device__ inline void fa2_cp_async_wait() {
#ifdef __CUDA_ARCH__
  asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING));
#else
  prt_fa2_cp_async_wait(PENDING);
#endif
}

// Four 8 x 8 b16 matrices: lane 8 i + r gives the address of row r of matrix i; register i
// gets matrix i's (row lane/4, columns 2 (lane%4), +1), or with trans its (rows 2 (lane%4),
// +1, column lane/4): the mma fragment of a row-major tile, or of its transpose.
__host__ __device__ inline void fa2_ldmatrix(uint32_t r[4], const void *row) {
#ifdef __CUDA_ARCH__
  unsigned s = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
#else
  prt_fa2_ldmatrix_x4(r, row, 0);
#endif
}
__host__ __device__ inline void fa2_ldmatrix_trans(uint32_t r[4], const void *row) {
#ifdef __CUDA_ARCH__
  unsigned s = (unsigned)__cvta_generic_to_shared(row);
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(s));
#else
  prt_fa2_ldmatrix_x4(r, row, 1);
#endif
}

// 2^x (the GPU's ex2.approx: 2 ulp, 2^-inf = 0)
__host__ __device__ inline float fa2_exp2(float x) {
#ifdef __CUDA_ARCH__
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#else
  return exp2f(x);
#endif
}

// *p += v, atomically between blocks (the host emulation runs one thread at a time)
__host__ __device__ inline void fa2_atomic_add(float *p, float v) {
#ifdef __CUDA_ARCH__
  atomicAdd(p, v);
#else
  *p += v;
#endif
}

// 16 bytes from src to dst (both 16-byte aligned), one vector load and store on the GPU
__host__ __device__ inline void fa2_copy16(void *dst, const void *src) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
#else
  memcpy(dst, src, 16);
#endif
}

// 16 bytes of four 32-bit words to dst (16-byte aligned), one vector store on the GPU
__host__ __device__ inline void fa2_store16(void *dst, uint32_t x, uint32_t y, uint32_t z,
                                            uint32_t w) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<uint4 *>(dst) = make_uint4(x, y, z, w);
#else
  uint32_t v[4] = {x, y, z, w};
  memcpy(dst, v, 16);
#endif
}

__host__ __device__ inline void fa2_store_u32(void *dst, uint32_t v) {
#ifdef __CUDA_ARCH__
  *reinterpret_cast<uint32_t *>(dst) = v;
#else
  memcpy(dst, &v, 4);
#endif
}

__host__ __device__ inline uint32_t fa2_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

__host__ __device__ inline float fa2_bf16_value(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

// ---- shared tiles ----
// Byte offset of element (row, col) in a tile of rows of COLS 16-bit elements: 16-byte chunk
// c of row r at c ^ (r mod 8) (mod the chunks a row has, when fewer than 8).
template <int COLS> __host__ __device__ inline int fa2_swz(int row, int col) {
  constexpr int CPR = COLS / 8, MASK = CPR < 8 ? CPR - 1 : 7;
  static_assert(COLS % 8 == 0 && (CPR & (CPR - 1)) == 0, "rows of whole, power-of-2 chunks");
  return row * COLS * 2 + ((((col >> 3) ^ row) & MASK) | ((col >> 3) & ~MASK)) * 16 +
         (col & 7) * 2;
}

// Rows [r0, r0 + ROWS) of a matrix of 16-bit rows (row stride `stride` elements, COLS of them
// from src) into the swizzled tile dst, by 16-byte cp.async over the block's threads; rows at
// or past T are zero.
template <int ROWS, int COLS>
__host__ __device__ inline void fa2_load_tile(char *dst, const uint16_t *src, int64_t stride,
                                              int64_t r0, int64_t T, int tid) {
  constexpr int CPR = COLS / 8, CHUNKS = ROWS * CPR;
  FLASH_UNROLL
  for (int c = tid; c < CHUNKS; c += FA2_THREADS) {
    int row = c / CPR, ch = c % CPR;
    bool in = r0 + row < T;
    fa2_cp_async16(dst + fa2_swz<COLS>(row, ch * 8), src + (in ? (r0 + row) * stride : 0) + ch * 8,
                   in ? 16 : 0);
  }
}

// The A fragment of the 16 x 16 block of a swizzled tile at (r0, c0)
template <int COLS>
__host__ __device__ inline void fa2_frag_a(uint32_t a[4], const char *tile, int r0, int c0,
                                           int lane) {
  fa2_ldmatrix(a, tile + fa2_swz<COLS>(r0 + (lane & 15), c0 + (lane >> 4) * 8));
}
// B fragments of two n-tiles: B[k][n] = M[n0 + n][k0 + k] for n0 = r0 (b[0], b[1]) and r0 + 8
// (b[2], b[3]), k0 = c0: the tile's rows are B's columns (K in Q K^T)
template <int COLS>
__host__ __device__ inline void fa2_frag_bt(uint32_t b[4], const char *tile, int r0, int c0,
                                            int lane) {
  fa2_ldmatrix(b, tile + fa2_swz<COLS>(r0 + (lane & 7) + ((lane >> 4) << 3),
                                       c0 + ((lane >> 3) & 1) * 8));
}
// B fragments of two n-tiles: B[k][n] = M[r0 + k][n0 + n] for n0 = c0 (b[0], b[1]) and c0 + 8
// (b[2], b[3]): the tile's rows are B's rows (V in P V), by ldmatrix.trans
template <int COLS>
__host__ __device__ inline void fa2_frag_b(uint32_t b[4], const char *tile, int r0, int c0,
                                           int lane) {
  fa2_ldmatrix_trans(b, tile + fa2_swz<COLS>(r0 + (lane & 7) + ((lane >> 3) & 1) * 8,
                                             c0 + (lane >> 4) * 8));
}
// The A fragment of the 16 x 16 block at (r0, c0) of the transpose of a swizzled tile M:
// A[r][c] = M[c0 + c][r0 + r] (dS from a stored dS^T), by ldmatrix.trans
template <int COLS>
__host__ __device__ inline void fa2_frag_at(uint32_t a[4], const char *tile, int r0, int c0,
                                            int lane) {
  fa2_ldmatrix_trans(a, tile + fa2_swz<COLS>(c0 + (lane & 7) + ((lane >> 4) & 1) * 8,
                                             r0 + ((lane >> 3) & 1) * 8));
}

// acc[2 j], acc[2 j + 1] += A B for the n-tile pairs j of a tile's columns [0, 16 NP): B from
// rows r0.. of the tile, by fa2_frag_b (P V, dS K, P^T dO, dS^T Q)
template <int NP, int COLS>
__host__ __device__ inline void fa2_mma_rows(float acc[][4], const uint32_t a[4],
                                             const char *tile, int r0, int lane) {
  FLASH_UNROLL
  for (int j = 0; j < NP; j++) {
    uint32_t b[4];
    fa2_frag_b<COLS>(b, tile, r0, 16 * j, lane);
    flash_mma(acc[2 * j], a, b);
    flash_mma(acc[2 * j + 1], a, b + 2);
  }
}

// The (b, head, tile) a block works on. The grid's first blocks take every (b, head)'s tile
// `first`, then the next, in the order `step` walks the tiles.
struct Fa2Tile {
  int64_t b, h, tile;
};
__host__ __device__ inline Fa2Tile fa2_tile_of(int64_t blk, int64_t B, int64_t heads,
                                               int64_t first, int64_t step) {
  int64_t bh = blk % (B * heads);
  return Fa2Tile{bh / heads, bh % heads, first + step * (blk / (B * heads))};
}

// ---- forward ----
template <int D> struct Fa2Fwd {
  static_assert(D == 64 || D == 128, "head sizes 64 and 128");
  static constexpr int MT = D <= 64 ? 2 : 1;          // 16-row m-tiles a warp
  static constexpr int BM = FA2_WARPS * 16 * MT;      // query rows a block
  static constexpr int BN = 64;                       // keys a tile
  static constexpr int TILE_Q = BM * D * 2, TILE_KV = BN * D * 2;
  static constexpr int SMEM = TILE_Q + 4 * TILE_KV;   // Q, K[2], V[2]
};

struct Fa2FwdArgs {
  const uint16_t *q, *k, *v; // bf16 (layouts above)
  uint16_t *out;             // bf16, rows of s.os
  float *lse;                // (B, H, T)
  AttnShape s;
  int64_t B;
  float scale_log2;          // log2(e) / sqrt(D)
};

// The checks every launcher makes (kernels/cuda_fa2.cu's, and the fake CUDA runtime's in
// test/gpu/fake_fa2.cc) on a shape with elements of `elem` bytes: 0 < KV <= H, a head size and
// row strides the kernels take, every pointer 16-byte aligned
inline bool fa2_launchable(const AttnShape &s, int elem,
                           std::initializer_list<const void *> ptrs) {
  if (s.KV <= 0 || s.KV > s.H || !prt_cuda_fa2_takes(s.D, s.qs, s.ks, s.os, elem)) return false;
  for (const void *p : ptrs)
    if (!prt_cuda_fa2_aligned(p)) return false;
  return true;
}

// log2(e): scores are exponentiated in base 2 with it folded into the scale
constexpr float FA2_LOG2E = 1.44269504088896341f;

// A forward launch's arguments (prt_cuda_fa2_fwd's, and the host twins' in test/gpu)
__host__ __device__ inline Fa2FwdArgs fa2_fwd_args(uint16_t *out, float *lse, const uint16_t *q,
                                                   const uint16_t *k, const uint16_t *v,
                                                   int64_t B, const AttnShape &s) {
  return Fa2FwdArgs{q, k, v, out, lse, s, B, FA2_LOG2E / sqrtf((float)s.D)};
}

// Blocks of a forward launch
template <int D> __host__ __device__ inline int64_t fa2_fwd_blocks(int64_t B, const AttnShape &s) {
  return B * s.H * ((s.T + Fa2Fwd<D>::BM - 1) / Fa2Fwd<D>::BM);
}

template <int D>
__host__ __device__ inline void fa2_fwd_block(const Fa2FwdArgs &a, int64_t blk, int tid,
                                              char *smem) {
  using C = Fa2Fwd<D>;
  constexpr int MT = C::MT, BM = C::BM, BN = C::BN, KS = D / 16, NT = BN / 8, OT = D / 8;
  const AttnShape &s = a.s;
  const int64_t T = s.T, tiles = (T + BM - 1) / BM;
  Fa2Tile t = fa2_tile_of(blk, a.B, s.H, tiles - 1, -1); /* the last query tiles first */
  const int64_t q0 = t.tile * BM, kh = t.h * s.KV / s.H;
  const int warp = tid / 32, lane = tid % 32, wr = warp * 16 * MT; /* the warp's first row */
  char *sq = smem, *sk = smem + C::TILE_Q, *sv = sk + 2 * C::TILE_KV;
  const uint16_t *qg = a.q + t.b * T * s.qs + t.h * D;
  const uint16_t *kg = a.k + t.b * T * s.ks + kh * D, *vg = a.v + t.b * T * s.ks + kh * D;
  const int64_t nkt = ((q0 + BM < T ? q0 + BM : T) - 1) / BN + 1; /* key tiles it sees */

  // groups: {Q, K0}, {V0}, then per tile j: {K j+1}, {V j+1} (empty past the last)
  fa2_load_tile<BM, D>(sq, qg, s.qs, q0, T, tid);
  fa2_load_tile<BN, D>(sk, kg, s.ks, 0, T, tid);
  fa2_cp_async_commit();
  fa2_load_tile<BN, D>(sv, vg, s.ks, 0, T, tid);
  fa2_cp_async_commit();

  uint32_t qa[MT][KS][4];
  float o[MT][OT][4], m[MT][2], l[MT][2];
  FLASH_UNROLL
  for (int mt = 0; mt < MT; mt++) {
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
    FLASH_UNROLL
    for (int n = 0; n < OT; n++)
      FLASH_UNROLL
      for (int i = 0; i < 4; i++) o[mt][n][i] = 0.0f;
  }
  for (int64_t j = 0; j < nkt; j++) {
    const int64_t k0 = j * BN;
    const char *kb = sk + (j & 1) * C::TILE_KV, *vb = sv + (j & 1) * C::TILE_KV;
    fa2_cp_async_wait<1>(); /* K j (and Q) landed; V j may be in flight */
    fa2_sync();             /* ... for every thread's copies; and tile j-1 is done with */
    if (j + 1 < nkt)
      fa2_load_tile<BN, D>(sk + ((j + 1) & 1) * C::TILE_KV, kg, s.ks, k0 + BN, T, tid);
    fa2_cp_async_commit();
    if (j == 0)
      FLASH_UNROLL
      for (int mt = 0; mt < MT; mt++)
        FLASH_UNROLL
        for (int ks = 0; ks < KS; ks++) fa2_frag_a<D>(qa[mt][ks], sq, wr + 16 * mt, 16 * ks, lane);

    float sc[MT][NT][4]; /* S = Q K^T, unscaled */
    FLASH_UNROLL
    for (int mt = 0; mt < MT; mt++)
      FLASH_UNROLL
      for (int n = 0; n < NT; n++)
        FLASH_UNROLL
        for (int i = 0; i < 4; i++) sc[mt][n][i] = 0.0f;
    FLASH_UNROLL
    for (int ks = 0; ks < KS; ks++)
      FLASH_UNROLL
      for (int np = 0; np < NT / 2; np++) {
        uint32_t bk[4];
        fa2_frag_bt<D>(bk, kb, 16 * np, 16 * ks, lane);
        FLASH_UNROLL
        for (int mt = 0; mt < MT; mt++) {
          flash_mma(sc[mt][2 * np], qa[mt][ks], bk);
          flash_mma(sc[mt][2 * np + 1], qa[mt][ks], bk + 2);
        }
      }
    bool diagonal = k0 + BN - 1 > q0; /* some key of the tile is after some query */
#ifndef __CUDA_ARCH__
    if (prt_fa2_fault(PRT_FA2_FAULT_DROP_MASK)) diagonal = false;
#endif
    if (diagonal)
      FLASH_UNROLL
      for (int mt = 0; mt < MT; mt++)
        FLASH_UNROLL
        for (int n = 0; n < NT; n++)
          FLASH_UNROLL
          for (int i = 0; i < 4; i++) {
            int64_t key = flash_c_col(k0 + 8 * n, lane, i);
            int64_t row = flash_c_row(q0 + wr + 16 * mt, lane, i);
            if (key > row) sc[mt][n][i] = -INFINITY;
          }
    // online softmax, base 2: every row sees key 0 in tile 0, so m is finite from there on and
    // a row the diagonal hides from the whole tile keeps its m (p = 2^-inf = 0)
    FLASH_UNROLL
    for (int mt = 0; mt < MT; mt++)
      FLASH_UNROLL
      for (int r = 0; r < 2; r++) {
        float mx = -INFINITY;
        FLASH_UNROLL
        for (int n = 0; n < NT; n++) mx = fmaxf(mx, fmaxf(sc[mt][n][2 * r], sc[mt][n][2 * r + 1]));
        float mn = fmaxf(m[mt][r], flash_row_max(mx) * a.scale_log2);
        float corr = fa2_exp2(m[mt][r] - mn), sum = 0.0f;
        m[mt][r] = mn;
        FLASH_UNROLL
        for (int n = 0; n < NT; n++)
          FLASH_UNROLL
          for (int i = 2 * r; i < 2 * r + 2; i++) {
            sc[mt][n][i] = fa2_exp2(fmaf(sc[mt][n][i], a.scale_log2, -mn));
            sum += sc[mt][n][i];
          }
        l[mt][r] = l[mt][r] * corr + sum; /* this lane's part of the row; summed at the end */
        FLASH_UNROLL
        for (int n = 0; n < OT; n++) o[mt][n][2 * r] *= corr, o[mt][n][2 * r + 1] *= corr;
      }

    fa2_cp_async_wait<1>(); /* V j landed; K j+1 may be in flight */
    fa2_sync();
    if (j + 1 < nkt)
      fa2_load_tile<BN, D>(sv + ((j + 1) & 1) * C::TILE_KV, vg, s.ks, k0 + BN, T, tid);
    fa2_cp_async_commit();
    FLASH_UNROLL
    for (int kk = 0; kk < BN / 16; kk++) /* O += P V */
      FLASH_UNROLL
      for (int mt = 0; mt < MT; mt++) {
        uint32_t pa[4];
        flash_a_from_c(pa, sc[mt][2 * kk], sc[mt][2 * kk + 1]);
        fa2_mma_rows<D / 16, D>(o[mt], pa, vb, 16 * kk, lane);
      }
  }
  fa2_cp_async_wait<0>(); /* the last two groups are empty */

  // O / l as bf16 into the warp's own rows of the Q tile (only this warp read them), then the
  // block's rows out in 16-byte stores
  FLASH_UNROLL
  for (int mt = 0; mt < MT; mt++)
    FLASH_UNROLL
    for (int r = 0; r < 2; r++) {
      float lr = flash_row_sum(l[mt][r]), inv = 1.0f / lr;
      int row = wr + 16 * mt + (lane >> 2) + 8 * r;
      FLASH_UNROLL
      for (int n = 0; n < OT; n++)
        fa2_store_u32(sq + fa2_swz<D>(row, 8 * n + 2 * (lane & 3)),
                      flash_pack(o[mt][n][2 * r] * inv, o[mt][n][2 * r + 1] * inv));
      if ((lane & 3) == 0 && q0 + row < T)
        a.lse[(t.b * s.H + t.h) * T + q0 + row] = (m[mt][r] + log2f(lr)) * 0.69314718056f;
    }
  fa2_sync();
  uint16_t *og = a.out + t.b * T * s.os + t.h * D;
  FLASH_UNROLL
  for (int c = tid; c < BM * D / 8; c += FA2_THREADS) {
    int row = c / (D / 8), ch = c % (D / 8);
    if (q0 + row < T) fa2_copy16(og + (q0 + row) * s.os + ch * 8, sq + fa2_swz<D>(row, ch * 8));
  }
}

// ---- backward ----
template <int D> struct Fa2Bwd {
  static_assert(D == 64 || D == 128, "head sizes 64 and 128");
  static constexpr int BN = FA2_WARPS * 16;           // keys a block, 16 a warp
  static constexpr int BM = FA2_WARPS * 16;           // query rows a step (16 a warp for dQ)
  static constexpr int TILE_K = BN * D * 2, TILE_Q = BM * D * 2, TILE_S = BN * BM * 2;
  // K, V, Q[2], dO[2], dS^T, then lse log2(e) [2][BM] and D [2][BM]
  static constexpr int SMEM = 2 * TILE_K + 4 * TILE_Q + TILE_S + 4 * BM * 4;
};

struct Fa2BwdArgs {
  const uint16_t *q, *k, *v, *dout; // bf16 (layouts above)
  const float *lse;                 // (B, H, T), the forward's
  const float *delta;               // (B, H, T), rowsum(dO o O) (fa2_delta_row)
  float *dq_acc;                    // (B, H, T, D) fp32, zero at the start: dS K
  uint16_t *dk, *dv;                // bf16, rows of s.ks
  AttnShape s;
  int64_t B;
  float scale, scale_log2;          // 1/sqrt(D), log2(e)/sqrt(D)
};

// A backward launch's arguments: scratch (prt_cuda_fa2_bwd_scratch_bytes) holds the fp32
// dQ accumulator (B, H, T, D), then D (B, H, T)
__host__ __device__ inline Fa2BwdArgs fa2_bwd_args(uint16_t *dk, uint16_t *dv,
                                                   const uint16_t *dout, const float *lse,
                                                   const uint16_t *q, const uint16_t *k,
                                                   const uint16_t *v, float *scratch, int64_t B,
                                                   const AttnShape &s) {
  float scale = 1.0f / sqrtf((float)s.D);
  float *acc = scratch, *delta = scratch + B * s.H * s.T * s.D;
  return Fa2BwdArgs{q, k, v, dout, lse, delta, acc, dk, dv, s, B, scale, scale * FA2_LOG2E};
}

template <int D> __host__ __device__ inline int64_t fa2_bwd_blocks(int64_t B, const AttnShape &s) {
  return B * s.KV * ((s.T + Fa2Bwd<D>::BN - 1) / Fa2Bwd<D>::BN);
}

// D of query row `row` ((B, H, T) numbering) from dO and O (bf16, rows of os)
__host__ __device__ inline void fa2_delta_row(float *delta, const uint16_t *dout,
                                              const uint16_t *out, const AttnShape &s,
                                              int64_t row) {
  int64_t t = row % s.T, bh = row / s.T, h = bh % s.H, b = bh / s.H;
  int64_t off = (b * s.T + t) * s.os + h * s.D;
  float sum = 0.0f;
  for (int64_t d = 0; d < s.D; d++)
    sum += fa2_bf16_value(dout[off + d]) * fa2_bf16_value(out[off + d]);
  delta[row] = sum;
}

// dq elements [8 c, 8 c + 8) of the (B, H, T, D) accumulator: scale times it, as bf16 into q's
// layout (one 16-byte store)
__host__ __device__ inline void fa2_dq_chunk(uint16_t *dq, const float *acc, const AttnShape &s,
                                             float scale, int64_t c) {
  int64_t e = 8 * c, d = e % s.D, row = e / s.D, t = row % s.T, bh = row / s.T;
  int64_t h = bh % s.H, b = bh / s.H;
  const float *x = acc + e;
  fa2_store16(dq + (b * s.T + t) * s.qs + h * s.D + d, flash_pack(x[0] * scale, x[1] * scale),
              flash_pack(x[2] * scale, x[3] * scale), flash_pack(x[4] * scale, x[5] * scale),
              flash_pack(x[6] * scale, x[7] * scale));
}

template <int D>
__host__ __device__ inline void fa2_bwd_block(const Fa2BwdArgs &a, int64_t blk, int tid,
                                              char *smem) {
  using C = Fa2Bwd<D>;
  constexpr int BN = C::BN, BM = C::BM, KS = D / 16, NQ = BM / 8, OT = D / 8;
  const AttnShape &s = a.s;
  const int64_t T = s.T;
  Fa2Tile t = fa2_tile_of(blk, a.B, s.KV, 0, 1); /* key tile 0 (every query sees it) first */
  const int64_t k0 = t.tile * BN, kh = t.h;
  const int warp = tid / 32, lane = tid % 32, wk = warp * 16; /* the warp's first key */
  char *sK = smem, *sV = sK + C::TILE_K, *sQ = sV + C::TILE_K, *sdO = sQ + 2 * C::TILE_Q;
  char *sS = sdO + 2 * C::TILE_Q;
  float *sL = (float *)(sS + C::TILE_S), *sD = sL + 2 * BM;
  // the steps: every query head reading kv head kh (h KV / H = kh), each query tile from the
  // one holding key k0 on
  const int64_t h0 = (kh * s.H + s.KV - 1) / s.KV, h1 = ((kh + 1) * s.H + s.KV - 1) / s.KV;
  const int64_t qt0 = k0 / BM, qtiles = (T + BM - 1) / BM - qt0, steps = (h1 - h0) * qtiles;

  // a step's Q and dO by cp.async (into buffer `buf`), its lse (times log2 e; +inf past T, so
  // P = 0 there) and D by plain stores
  auto load_step = [&](int64_t i, int buf) {
    int64_t h = h0 + i / qtiles, q0 = (qt0 + i % qtiles) * BM;
    fa2_load_tile<BM, D>(sQ + buf * C::TILE_Q, a.q + t.b * T * s.qs + h * D, s.qs, q0, T, tid);
    fa2_load_tile<BM, D>(sdO + buf * C::TILE_Q, a.dout + t.b * T * s.os + h * D, s.os, q0, T,
                         tid);
    for (int r = tid; r < BM; r += FA2_THREADS) {
      int64_t row = (t.b * s.H + h) * T + q0 + r;
      sL[buf * BM + r] = q0 + r < T ? a.lse[row] * 1.44269504089f : INFINITY;
      sD[buf * BM + r] = q0 + r < T ? a.delta[row] : 0.0f;
    }
  };
  fa2_load_tile<BN, D>(sK, a.k + t.b * T * s.ks + kh * D, s.ks, k0, T, tid);
  fa2_load_tile<BN, D>(sV, a.v + t.b * T * s.ks + kh * D, s.ks, k0, T, tid);
  load_step(0, 0);
  fa2_cp_async_commit();

  float dk[OT][4], dv[OT][4];
  FLASH_UNROLL
  for (int n = 0; n < OT; n++)
    FLASH_UNROLL
    for (int i = 0; i < 4; i++) dk[n][i] = dv[n][i] = 0.0f;
  for (int64_t i = 0; i < steps; i++) {
    const int buf = i & 1;
    const int64_t h = h0 + i / qtiles, q0 = (qt0 + i % qtiles) * BM;
    const char *qb = sQ + buf * C::TILE_Q, *dob = sdO + buf * C::TILE_Q;
    const float *L = sL + buf * BM, *Dl = sD + buf * BM;
    fa2_cp_async_wait<0>(); /* step i's tiles landed */
    fa2_sync();             /* ... every thread's; step i-1 is done with the other buffers */
    if (i + 1 < steps) {
      load_step(i + 1, buf ^ 1);
      fa2_cp_async_commit();
    }
    // S^T = K Q^T and dP^T = V dO^T: this warp's 16 keys against the step's BM queries
    float p[NQ][4], ds[NQ][4];
    FLASH_UNROLL
    for (int n = 0; n < NQ; n++)
      FLASH_UNROLL
      for (int e = 0; e < 4; e++) p[n][e] = ds[n][e] = 0.0f;
    FA2_UNROLL2
    for (int ks = 0; ks < KS; ks++) {
      uint32_t ka[4], va[4];
      fa2_frag_a<D>(ka, sK, wk, 16 * ks, lane);
      fa2_frag_a<D>(va, sV, wk, 16 * ks, lane);
      FLASH_UNROLL
      for (int np = 0; np < NQ / 2; np++) {
        uint32_t bq[4], bd[4];
        fa2_frag_bt<D>(bq, qb, 16 * np, 16 * ks, lane);
        flash_mma(p[2 * np], ka, bq);
        flash_mma(p[2 * np + 1], ka, bq + 2);
        fa2_frag_bt<D>(bd, dob, 16 * np, 16 * ks, lane);
        flash_mma(ds[2 * np], va, bd);
        flash_mma(ds[2 * np + 1], va, bd + 2);
      }
    }
    bool diagonal = k0 + BN - 1 > q0;
#ifndef __CUDA_ARCH__
    if (prt_fa2_fault(PRT_FA2_FAULT_DROP_MASK)) diagonal = false;
#endif
    // P^T = 2^(S^T scale log2 e - lse log2 e), masked on the diagonal; dS^T = P^T (dP^T - D)
    FLASH_UNROLL
    for (int n = 0; n < NQ; n++)
      FLASH_UNROLL
      for (int e = 0; e < 4; e++) {
        int qc = flash_c_col(8 * n, lane, e);
        float pr = fa2_exp2(fmaf(p[n][e], a.scale_log2, -L[qc]));
        if (diagonal && flash_c_row(k0 + wk, lane, e) > q0 + qc) pr = 0.0f;
        p[n][e] = pr;
        ds[n][e] = pr * (ds[n][e] - Dl[qc]);
      }
    // dV += P^T dO, dK += dS^T Q (k over the step's queries); dS^T into shared memory
    FLASH_UNROLL
    for (int kk = 0; kk < BM / 16; kk++) {
      uint32_t pa[4], sa[4];
      flash_a_from_c(pa, p[2 * kk], p[2 * kk + 1]);
      flash_a_from_c(sa, ds[2 * kk], ds[2 * kk + 1]);
      fa2_mma_rows<D / 16, D>(dv, pa, dob, 16 * kk, lane);
      fa2_mma_rows<D / 16, D>(dk, sa, qb, 16 * kk, lane);
    }
    FLASH_UNROLL
    for (int n = 0; n < NQ; n++)
      FLASH_UNROLL
      for (int r = 0; r < 2; r++)
        fa2_store_u32(sS + fa2_swz<BM>(wk + (lane >> 2) + 8 * r, 8 * n + 2 * (lane & 3)),
                      flash_pack(ds[n][2 * r], ds[n][2 * r + 1]));
    fa2_sync();
    // dQ += dS K for the warp's 16 query rows of the step, over the block's BN keys, added to
    // the accumulator
    uint32_t sa[BN / 16][4];
    FLASH_UNROLL
    for (int kk = 0; kk < BN / 16; kk++) fa2_frag_at<BM>(sa[kk], sS, 16 * warp, 16 * kk, lane);
    float *acc = a.dq_acc + ((t.b * s.H + h) * T + q0 + 16 * warp) * D;
    FA2_UNROLL2
    for (int dp = 0; dp < D / 16; dp++) {
      float g[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
      FLASH_UNROLL
      for (int kk = 0; kk < BN / 16; kk++) {
        uint32_t bk[4];
        fa2_frag_b<D>(bk, sK, 16 * kk, 16 * dp, lane);
        flash_mma(g[0], sa[kk], bk);
        flash_mma(g[1], sa[kk], bk + 2);
      }
      FLASH_UNROLL
      for (int hn = 0; hn < 2; hn++)
        FLASH_UNROLL
        for (int e = 0; e < 4; e++) {
          int row = flash_c_row(0, lane, e);
          if (q0 + 16 * warp + row < T)
            fa2_atomic_add(acc + row * D + flash_c_col(16 * dp + 8 * hn, lane, e), g[hn][e]);
        }
    }
  }
  fa2_cp_async_wait<0>();
  // dK = scale dS^T Q, dV: the warp's 16 keys, straight from the accumulators
  uint16_t *dkg = a.dk + t.b * T * s.ks + kh * D, *dvg = a.dv + t.b * T * s.ks + kh * D;
  FLASH_UNROLL
  for (int r = 0; r < 2; r++) {
    int64_t key = k0 + wk + (lane >> 2) + 8 * r;
    if (key >= T) continue;
    FLASH_UNROLL
    for (int n = 0; n < OT; n++) {
      int col = 8 * n + 2 * (lane & 3);
      fa2_store_u32(dkg + key * s.ks + col,
                    flash_pack(dk[n][2 * r] * a.scale, dk[n][2 * r + 1] * a.scale));
      fa2_store_u32(dvg + key * s.ks + col, flash_pack(dv[n][2 * r], dv[n][2 * r + 1]));
    }
  }
}

#endif
