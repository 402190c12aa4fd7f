/* The cuBLAS sgemm calls of the GPU's linear kernels (kernels/cuda.c), as data: cuBLAS is
 * column-major and the runtime's matrices row-major, so each call multiplies the transposes.
 * Kept apart from CUDA's headers so test/gpu/gpu_kernels_emu.c replays the same arguments
 * through CBLAS's column-major sgemm (the same contract as cublasSgemm) against the CPU
 * kernels, without a GPU. */
#ifndef PIPER_PRT_KERNELS_CUDA_GEMM_H
#define PIPER_PRT_KERNELS_CUDA_GEMM_H

#include <stdbool.h>
#include <stdint.h>

/* C (m x n, ld ldc) = op(A) (m x k) op(B) (k x n) + beta C, column-major. */
typedef struct {
  bool transA, transB; /* op(X) = X^T when set */
  int64_t m, n, k;     /* C is m x n, the product's inner dimension is k */
  const float *A;      /* column-major, leading dimension lda */
  int64_t lda;
  const float *B;      /* column-major, leading dimension ldb */
  int64_t ldb;
  float beta;          /* 0: C is overwritten; 1: added to (the bias rows already there) */
  float *C;            /* column-major, leading dimension ldc */
  int64_t ldc;
} prt_gemm;

/* out (M, N) = x (M, K) w (N, K)^T [+ out when beta = 1]: out^T = w x^T, w stored K x N. */
static inline prt_gemm prt_gemm_linear_fwd(float *out, const float *x, const float *w,
                                           int64_t M, int64_t N, int64_t K, float beta) {
  return (prt_gemm){true, false, N, M, K, w, K, x, K, beta, out, N};
}
/* dx (M, K) = dy (M, N) w (N, K): dx^T (K x M) = w^T (K x N) dy^T (N x M). */
static inline prt_gemm prt_gemm_linear_bwd_input(float *dx, const float *dy, const float *w,
                                                 int64_t M, int64_t N, int64_t K) {
  return (prt_gemm){false, false, K, M, N, w, K, dy, N, 0.0f, dx, K};
}
/* dw (N, K) = dy (M, N)^T x (M, K): dw^T (K x N) = x^T (K x M) dy (M x N). */
static inline prt_gemm prt_gemm_linear_bwd_weight(float *dw, const float *dy, const float *x,
                                                  int64_t M, int64_t N, int64_t K) {
  return (prt_gemm){false, true, K, N, M, x, K, dy, N, 0.0f, dw, K};
}
/* Row-major C (M x N, ld ldc) = op(A) (M x K) op(B) (K x N) + beta C, as cblas_sgemm's
 * CblasRowMajor call with the same arguments (the MoE experts' products, whose rows are one
 * expert's segment and whose hidden rows have stride 2 Fe): C^T = op(B)^T op(A)^T. */
static inline prt_gemm prt_gemm_row_major(bool transA, bool transB, int64_t M, int64_t N,
                                          int64_t K, const float *A, int64_t lda,
                                          const float *B, int64_t ldb, float beta, float *C,
                                          int64_t ldc) {
  return (prt_gemm){transB, transA, N, M, K, B, ldb, A, lda, beta, C, ldc};
}

#endif
