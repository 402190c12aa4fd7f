/* The GPU target's kernels (libpiper_rt_cuda): what a plan compiled with --target cuda calls
 * instead of runtime/kernels/cpu.c. Each prt_cuda_* function has its CPU twin's argument list
 * (the kernel list, include/piper/kernels.def) with device pointers, and launches on the
 * plan's compute stream (ctx->streams[0]) without waiting for the device:
 *   - the device kernels piper-compile generated (lowering/gpu_kernels.c) from the PTX it
 *     embedded in the binary as piper_ptx, JIT-loaded once by prt_cuda_setup through
 *     cudaLibraryLoadData (the CUDA runtime API; the binary never links libcuda);
 *   - cuBLAS sgemm for the matmuls, in CUBLAS_PEDANTIC_MATH (true fp32, no TF32), so the GPU
 *     computes what the CPU and PyTorch with TF32 off compute;
 *   - the fused causal attention of kernels/cuda_attention.cu (built by nvcc).
 * The host waits for the device only where it must read a value: the loss (the runtime's
 * host view of the output tensor) and the gradient norm (prt_cuda_grad_norm_sync).
 *
 * Errors: a failed launch or cuBLAS call is prt_fatal naming the runtime function (the op),
 * the kernel, this file and line, and what to do. A kernel's own fault surfaces at the next
 * synchronization; PIPER_CUDA_SYNC=1 synchronizes after every launch so the failing op is
 * named. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernels/cuda.h"
#include "kernels/cuda_gemm.h"
#include "piper/kernels.h"
#include "prt_internal.h"

/* The PTX of the plan's kernels: a constant the compiled plan defines (piper-compile
 * --target cuda, piperEmbedPtx). */
extern const char piper_ptx[];

/* The device kernels' names (their PTX .entry names), from the kernel list: PRT_DK_<name> is
 * piper_<name>, whose text lowering/gpu_kernels.c writes. */
static const char *const kernel_names[PRT_DK_COUNT] = {
    [PRT_DK_NONE] = "(none)",
#define PRT_DEVICE_KERNEL(name) [PRT_DK_##name] = "piper_" #name,
#include "piper/kernels.def"
};

enum {
  BLOCK = 256,          /* threads per block */
  NORM_THREADS = 4096,  /* grad-norm partial sums */
  COL_CHUNK = 64,       /* rows a thread of a column reduction sums (bias, LayerNorm dw/db) */
  WTE_SLAB_FLOATS = 1 << 24, /* scratch of the token-embedding gradient's chunks (64 MB) */
};

/* Device scratch buffers, grown on first use (the first step): what each holds. */
enum { SCR_ROWLOSS, SCR_COLS, SCR_WTE, SCR_ROPE_FWD, SCR_ROPE_BWD, SCR_MOE_POS, SCR_MOE_ACT,
       SCR_COUNT };

/* What prt_cuda_setup opens once per process (one plan, one GPU per process). */
static struct {
  prt_ctx *ctx;              /* the plan's context: its compute stream, the optimizer state,
                                its backend record (the GPU, device/cuda.c) */
  cudaLibrary_t lib;         /* the loaded piper_ptx */
  cudaKernel_t k[PRT_DK_COUNT]; /* its kernels; NULL where the plan's PTX lacks one */
  cublasHandle_t blas;       /* pedantic fp32 math */
  void *scratch[SCR_COUNT];  /* device scratch: cross-entropy's per-row losses (f64), column
                                reductions' chunk sums (f64), the embedding gradient's
                                chunks (f32), the rotary tables (forward, inverse), the MoE
                                copies' rows (i32) and an expert's activations (f32) */
  size_t scratch_cap[SCR_COUNT]; /* their sizes in bytes */
  double *norm_partial;      /* device scratch: NORM_THREADS partial sums of squares */
  double *norm_sq;           /* device: this step's sum of squared gradients so far */
  int ready;                 /* 1 once the PTX, cuBLAS and the scratch are set up */
  int sync_each;             /* PIPER_CUDA_SYNC=1: synchronize after every launch */
  int64_t rope_key[2][3];    /* (T, D, theta bits) the rotary tables in SCR_ROPE_FWD/BWD hold,
                                so each is computed and uploaded once per shape */
} S;

/* A CUDA failure in `fn` (the runtime function serving an op): fatal, with what to do. */
static void fail_cuda(const char *fn, const char *what, cudaError_t e, int line) {
  prt_fatal("CUDA error in %s (%s): %s: %s at %s:%d; %s", fn, what, cudaGetErrorName(e),
            cudaGetErrorString(e), __FILE__, line,
            e == cudaErrorMemoryAllocation
                ? "free GPU memory (another process?) or shrink the model or batch"
                : "rerun with PIPER_CUDA_SYNC=1 to stop at the failing op; check nvidia-smi "
                  "and the driver version (CUDA 13 needs driver >= 580)");
}
#define CUDA_OR_DIE(fn, what, call)                                                        \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) fail_cuda((fn), (what), e_, __LINE__);                          \
  } while (0)

static cudaStream_t compute_stream(void) {
  prt_ctx *c = S.ctx;
  return c && c->streams && c->nstreams > 0 ? (cudaStream_t)c->streams[0] : (cudaStream_t)0;
}

/* The plan's kernel k, or fatal when the embedded PTX lacks it (a compiler defect). */
static const void *kernel(int k, const char *fn) {
  if (!S.k[k])
    prt_fatal("%s: kernel %s is not in the plan's PTX (a piper-compile defect: "
              "lowering/gpu_kernels.c `uses`); recompile the plan with --target cuda", fn,
              kernel_names[k]);
  return (const void *)S.k[k];
}

/* Launches kernel k over `threads` threads (blocks of BLOCK) on the compute stream. */
static void launch(int k, int64_t threads, void **args, const char *fn) {
  if (threads <= 0) return;
  int64_t blocks = (threads + BLOCK - 1) / BLOCK;
  if (blocks > INT_MAX)
    prt_fatal("%s: %lld threads exceed one CUDA grid (kernel %s); use a smaller batch", fn,
              (long long)threads, kernel_names[k]);
  dim3 grid = {(unsigned)blocks, 1, 1}, block = {BLOCK, 1, 1};
  CUDA_OR_DIE(fn, kernel_names[k],
              cudaLaunchKernel(kernel(k, fn), grid, block, args, 0, compute_stream()));
  if (S.sync_each) CUDA_OR_DIE(fn, kernel_names[k], cudaStreamSynchronize(compute_stream()));
}

/* Scratch buffer `slot` of at least `bytes`, grown after the stream's work so far (it may still
 * read the old buffer). */
static void *scratch(int slot, size_t bytes, const char *fn) {
  if (bytes > S.scratch_cap[slot]) {
    CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
    cudaFree(S.scratch[slot]);
    S.scratch[slot] = NULL;
    S.scratch_cap[slot] = 0;
    CUDA_OR_DIE(fn, "device scratch", cudaMalloc(&S.scratch[slot], bytes));
    S.scratch_cap[slot] = bytes;
  }
  return S.scratch[slot];
}

/* out[j] = sum of the chunk sums partial[r, j] (launches piper_col_finish) */
static void col_finish(float *out, double *partial, int64_t chunks, int64_t N, const char *fn) {
  void *args[] = {&out, &partial, &chunks, &N};
  launch(PRT_DK_col_finish, N, args, fn);
}

static void check_blas(cublasStatus_t s, const char *fn, int line) {
  if (s != CUBLAS_STATUS_SUCCESS)
    prt_fatal("cuBLAS error in %s: status %d at %s:%d; rerun with PIPER_CUDA_SYNC=1 to find "
              "an earlier failing op, or check the GPU with nvidia-smi", fn, (int)s, __FILE__,
              line);
}

/* cuBLAS takes int dimensions. */
static int blas_dim(int64_t v, const char *fn) {
  if (v < 0 || v > INT_MAX)
    prt_fatal("%s: matrix dimension %lld exceeds cuBLAS's int range; split the op", fn,
              (long long)v);
  return (int)v;
}

/* The plan's kernels and cuBLAS, once per process; the GPU itself and how the ranks exchange
 * data are the backend record's (backend.c prt_backend_use_gpu), chosen first. */
void prt_cuda_setup(prt_ctx *ctx) {
  prt_backend_use_gpu(ctx); /* every tensor and the arena are then device memory */
  S.ctx = ctx;
  if (S.ready) return;
  S.ready = 1;
  const char *sync = getenv("PIPER_CUDA_SYNC");
  S.sync_each = sync && !strcmp(sync, "1");
  cudaError_t e = cudaLibraryLoadData(&S.lib, piper_ptx, NULL, NULL, 0, NULL, NULL, 0);
  if (e != cudaSuccess)
    prt_fatal("CUDA error in prt_cuda_setup: the driver could not load the plan's PTX "
              "(cudaLibraryLoadData): %s: %s at %s:%d; update the NVIDIA driver (CUDA 13 "
              "needs >= 580), or recompile with piper-compile --gpu-arch set to this GPU's "
              "sm_NN or lower", cudaGetErrorName(e), cudaGetErrorString(e), __FILE__, __LINE__);
  for (int k = PRT_DK_NONE + 1; k < PRT_DK_COUNT; k++)
    if (cudaLibraryGetKernel(&S.k[k], S.lib, kernel_names[k]) != cudaSuccess) {
      (void)cudaGetLastError(); /* a plan without this op's kernel: fine until called */
      S.k[k] = NULL;
    }
  check_blas(cublasCreate(&S.blas), "prt_cuda_setup", __LINE__);
  check_blas(cublasSetMathMode(S.blas, CUBLAS_PEDANTIC_MATH), "prt_cuda_setup", __LINE__);
  CUDA_OR_DIE("prt_cuda_setup", "grad-norm scratch",
              cudaMalloc((void **)&S.norm_partial, NORM_THREADS * sizeof(double)));
  CUDA_OR_DIE("prt_cuda_setup", "grad-norm scratch",
              cudaMalloc((void **)&S.norm_sq, sizeof(double)));
  CUDA_OR_DIE("prt_cuda_setup", "grad-norm scratch", cudaMemset(S.norm_sq, 0, sizeof(double)));
}

/* ---- the launchers of the kernel list's PRT_KERNEL_1D entries (include/piper/kernels.def):
 * prt_cuda_<name>(params) launches device kernel piper_<device> over `threads` threads with
 * the params, in order, as its arguments (elementwise ops, the bf16 conversions, one thread per
 * row or element). Each argument macro gives a (type, name) pair; PRT_MAP writes a list of
 * them as the definition's parameters, then as the launch's argument addresses. ---- */
#define F32_OUT(p) (float *, p)
#define F32_IN(p) (const float *, p)
#define I32_OUT(p) (int32_t *, p)
#define I32_IN(p) (const int32_t *, p)
#define BF16_OUT(p) (uint16_t *, p)
#define BF16_IN(p) (const uint16_t *, p)
#define I64_V(v) (int64_t, v)
#define F32_V(v) (float, v)
#define I32_V(v) (int32_t, v)
#define CTX_P(c) (prt_ctx *, c)
#define PAIR_DECL_(type, name) type name
#define PAIR_DECL(pair) PAIR_DECL_ pair
#define PAIR_ADDR_(type, name) &name
#define PAIR_ADDR(pair) PAIR_ADDR_ pair
/* m(x) for each of 1 to 12 arguments, comma-separated */
#define PRT_MAP(m, ...) PRT_MAP_N(PRT_NARGS(__VA_ARGS__), m, __VA_ARGS__)
#define PRT_MAP_N(n, m, ...) PRT_CAT(PRT_MAP_, n)(m, __VA_ARGS__)
#define PRT_CAT(a, b) PRT_CAT_(a, b)
#define PRT_CAT_(a, b) a##b
#define PRT_NARGS(...) PRT_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define PRT_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define PRT_MAP_1(m, a) m(a)
#define PRT_MAP_2(m, a, ...) m(a), PRT_MAP_1(m, __VA_ARGS__)
#define PRT_MAP_3(m, a, ...) m(a), PRT_MAP_2(m, __VA_ARGS__)
#define PRT_MAP_4(m, a, ...) m(a), PRT_MAP_3(m, __VA_ARGS__)
#define PRT_MAP_5(m, a, ...) m(a), PRT_MAP_4(m, __VA_ARGS__)
#define PRT_MAP_6(m, a, ...) m(a), PRT_MAP_5(m, __VA_ARGS__)
#define PRT_MAP_7(m, a, ...) m(a), PRT_MAP_6(m, __VA_ARGS__)
#define PRT_MAP_8(m, a, ...) m(a), PRT_MAP_7(m, __VA_ARGS__)
#define PRT_MAP_9(m, a, ...) m(a), PRT_MAP_8(m, __VA_ARGS__)
#define PRT_MAP_10(m, a, ...) m(a), PRT_MAP_9(m, __VA_ARGS__)
#define PRT_MAP_11(m, a, ...) m(a), PRT_MAP_10(m, __VA_ARGS__)
#define PRT_MAP_12(m, a, ...) m(a), PRT_MAP_11(m, __VA_ARGS__)
#define PRT_KERNEL_1D(name, params, device, threads)                                       \
  void prt_cuda_##name(PRT_MAP(PAIR_DECL, PRT_KERNEL_UNPAREN params)) {                      \
    void *args[] = {PRT_MAP(PAIR_ADDR, PRT_KERNEL_UNPAREN params)};                          \
    launch(PRT_DK_##device, threads, args, "prt_cuda_" #name);                                \
  }
#include "piper/kernels.def"
#undef PAIR_DECL_
#undef PAIR_DECL
#undef PAIR_ADDR_
#undef PAIR_ADDR

/* ---- copy: a PRT_KERNEL of its own, as an in-place copy (dst == src) launches nothing ---- */

void prt_cuda_copy(float *dst, const float *src, int64_t n) {
  if (dst == src) return;
  void *args[] = {&dst, &src, &n};
  launch(PRT_DK_copy, n, args, "prt_cuda_copy");
}

/* ---- embedding (the forward is a PRT_KERNEL_1D) ---- */

/* dwte in chunks of R token rows, as many chunks as 64 MB of V x C slabs hold (at least one,
 * at most one per 256 rows), then the slabs summed in order; dwpe one thread per (t, c). */
void prt_cuda_embedding_bwd(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                            int64_t B, int64_t T, int64_t C, int64_t V) {
  const char *fn = "prt_cuda_embedding_bwd";
  int64_t BT = B * T, VC = V * C;
  int64_t chunks = VC > 0 ? WTE_SLAB_FLOATS / VC : 1;
  if (chunks > (BT + 255) / 256) chunks = (BT + 255) / 256;
  if (chunks < 1) chunks = 1;
  int64_t R = (BT + chunks - 1) / chunks;
  if (R < 1) R = 1;
  chunks = (BT + R - 1) / R;
  float *slabs = scratch(SCR_WTE, (size_t)(chunks > 0 ? chunks : 1) * VC * sizeof(float), fn);
  void *a1[] = {&slabs, &dout, &tok, &BT, &C, &V, &R};
  launch(PRT_DK_embedding_wte_partials, chunks * C, a1, fn);
  void *a3[] = {&dwte, &slabs, &chunks, &VC};
  launch(PRT_DK_sum_slabs, VC, a3, fn);
  void *a2[] = {&dwpe, &dout, &B, &T, &C};
  launch(PRT_DK_embedding_bwd_wpe, T * C, a2, fn);
}

/* ---- layernorm ---- */

void prt_cuda_layernorm_bwd(float *dx, float *dw, float *db, const float *dout,
                            const float *x, const float *w, const float *mean,
                            const float *rstd, int64_t N, int64_t C) {
  const char *fn = "prt_cuda_layernorm_bwd";
  void *a1[] = {&dx, &dout, &x, &w, &mean, &rstd, &N, &C};
  launch(PRT_DK_layernorm_bwd_dx, N, a1, fn);
  int64_t R = COL_CHUNK, chunks = (N + R - 1) / R;
  double *pw = scratch(SCR_COLS, (size_t)(2 * chunks * C + 1) * sizeof(double), fn);
  double *pb = pw + chunks * C;
  void *a2[] = {&pw, &pb, &dout, &x, &mean, &rstd, &N, &C, &R};
  launch(PRT_DK_layernorm_dwdb_partials, chunks * C, a2, fn);
  col_finish(dw, pw, chunks, C, fn);
  col_finish(db, pb, chunks, C, fn);
}

/* ---- linear: cuBLAS on the row-major matrices, seen column-major as their transposes
 * (kernels/cuda_gemm.h holds the arguments; test/gpu checks them through CBLAS) ---- */

static void sgemm(prt_gemm g, const char *fn) {
  float one = 1.0f;
  check_blas(cublasSetStream(S.blas, compute_stream()), fn, __LINE__);
  check_blas(cublasSgemm(S.blas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                         g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, blas_dim(g.m, fn),
                         blas_dim(g.n, fn), blas_dim(g.k, fn), &one, g.A, blas_dim(g.lda, fn),
                         g.B, blas_dim(g.ldb, fn), &g.beta, g.C, blas_dim(g.ldc, fn)),
             fn, __LINE__);
  if (S.sync_each) CUDA_OR_DIE(fn, "cublasSgemm", cudaStreamSynchronize(compute_stream()));
}

void prt_cuda_linear_fwd(float *out, const float *x, const float *w, const float *b, int64_t M,
                         int64_t N, int64_t K) {
  const char *fn = "prt_cuda_linear_fwd";
  if (b) { /* out = bias rows, then out += x w^T: the CPU's (x w^T) + b, one rounding */
    void *args[] = {&out, &b, &M, &N};
    launch(PRT_DK_bias_rows, M * N, args, fn);
  }
  sgemm(prt_gemm_linear_fwd(out, x, w, M, N, K, b ? 1.0f : 0.0f), fn);
}

void prt_cuda_linear_bwd_input(float *dx, const float *dout, const float *w, int64_t M,
                               int64_t N, int64_t K) {
  sgemm(prt_gemm_linear_bwd_input(dx, dout, w, M, N, K), "prt_cuda_linear_bwd_input");
}

void prt_cuda_linear_bwd_weight(float *dw, const float *dout, const float *x, int64_t M,
                                int64_t N, int64_t K) {
  sgemm(prt_gemm_linear_bwd_weight(dw, dout, x, M, N, K), "prt_cuda_linear_bwd_weight");
}

/* The same product on bf16 operands (A and B hold uint16_t bf16 patterns; prt_gemm's float
 * pointers carry them untouched): cublasGemmEx with CUDA_R_16BF inputs, an fp32 C and
 * CUBLAS_COMPUTE_32F, so the products of bf16 values are accumulated in fp32 on tensor cores
 * (the pedantic math mode does not apply to a 16-bit input type's compute). */
static void gemm_bf16(prt_gemm g, const char *fn) {
  float one = 1.0f;
  check_blas(cublasSetStream(S.blas, compute_stream()), fn, __LINE__);
  check_blas(cublasGemmEx(S.blas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                          g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, blas_dim(g.m, fn),
                          blas_dim(g.n, fn), blas_dim(g.k, fn), &one, g.A, CUDA_R_16BF,
                          blas_dim(g.lda, fn), g.B, CUDA_R_16BF, blas_dim(g.ldb, fn), &g.beta,
                          g.C, CUDA_R_32F, blas_dim(g.ldc, fn), CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT),
             fn, __LINE__);
  if (S.sync_each) CUDA_OR_DIE(fn, "cublasGemmEx", cudaStreamSynchronize(compute_stream()));
}

void prt_cuda_linear_fwd_bf16(float *out, const uint16_t *x, const uint16_t *w, const float *b,
                              int64_t M, int64_t N, int64_t K) {
  const char *fn = "prt_cuda_linear_fwd_bf16";
  if (b) { /* out = bias rows, then out += x w^T in fp32, as prt_cuda_linear_fwd */
    void *args[] = {&out, &b, &M, &N};
    launch(PRT_DK_bias_rows, M * N, args, fn);
  }
  gemm_bf16(prt_gemm_linear_fwd(out, (const float *)x, (const float *)w, M, N, K,
                                b ? 1.0f : 0.0f),
            fn);
}

void prt_cuda_linear_bwd_input_bf16(float *dx, const uint16_t *dout, const uint16_t *w,
                                    int64_t M, int64_t N, int64_t K) {
  gemm_bf16(prt_gemm_linear_bwd_input(dx, (const float *)dout, (const float *)w, M, N, K),
            "prt_cuda_linear_bwd_input_bf16");
}

void prt_cuda_linear_bwd_weight_bf16(float *dw, const uint16_t *dout, const uint16_t *x,
                                     int64_t M, int64_t N, int64_t K) {
  gemm_bf16(prt_gemm_linear_bwd_weight(dw, (const float *)dout, (const float *)x, M, N, K),
            "prt_cuda_linear_bwd_weight_bf16");
}

void prt_cuda_bias_bwd(float *db, const float *dout, int64_t M, int64_t N) {
  const char *fn = "prt_cuda_bias_bwd";
  int64_t R = COL_CHUNK, chunks = (M + R - 1) / R;
  double *partial = scratch(SCR_COLS, (size_t)(chunks * N + 1) * sizeof(double), fn);
  void *args[] = {&partial, &dout, &M, &N, &R};
  launch(PRT_DK_col_partials, chunks * N, args, fn);
  col_finish(db, partial, chunks, N, fn);
}

/* ---- attention: kernels/cuda_attention.cu ---- */

/* The fused kernels hold a head in registers: a larger head is refused by name. */
static void check_heads(int64_t C, int64_t H, const char *fn) {
  if (H <= 0 || C % H || C / H > PRT_CUDA_ATTENTION_MAX_HEAD)
    prt_fatal("%s: head size C/H = %lld/%lld is not an integer <= %d, which the GPU attention "
              "kernel (kernels/cuda_attention.cu) needs; use more heads or the CPU target", fn,
              (long long)C, (long long)H, PRT_CUDA_ATTENTION_MAX_HEAD);
}

void prt_cuda_attention_fwd(float *out, float *probs, const float *qkv, int64_t B, int64_t T,
                            int64_t C, int64_t H) {
  check_heads(C, H, "prt_cuda_attention_fwd");
  cudaError_t e = prt_cuda_attention_fwd_launch(out, probs, qkv, B, T, C, H, compute_stream());
  if (e != cudaSuccess) fail_cuda("prt_cuda_attention_fwd", "flash attention forward", e, __LINE__);
  if (S.sync_each)
    CUDA_OR_DIE("prt_cuda_attention_fwd", "flash attention forward",
                cudaStreamSynchronize(compute_stream()));
}

void prt_cuda_attention_bwd(float *dqkv, const float *dout, const float *qkv,
                            const float *probs, int64_t B, int64_t T, int64_t C, int64_t H) {
  check_heads(C, H, "prt_cuda_attention_bwd");
  cudaError_t e =
      prt_cuda_attention_bwd_launch(dqkv, dout, qkv, probs, B, T, C, H, compute_stream());
  if (e != cudaSuccess) fail_cuda("prt_cuda_attention_bwd", "flash attention backward", e, __LINE__);
  if (S.sync_each)
    CUDA_OR_DIE("prt_cuda_attention_bwd", "flash attention backward",
                cudaStreamSynchronize(compute_stream()));
}

/* ---- loss ---- */

void prt_cuda_cross_entropy_fwd(float *loss, float *probs, const float *logits,
                                const int32_t *targets, int64_t N, int64_t V) {
  const char *fn = "prt_cuda_cross_entropy_fwd";
  double *rows = scratch(SCR_ROWLOSS, (size_t)(N > 0 ? N : 1) * sizeof(double), fn);
  void *a1[] = {&probs, &rows, &logits, &targets, &N, &V};
  launch(PRT_DK_cross_entropy_fwd, N, a1, fn);
  void *a2[] = {&loss, &rows, &N};
  launch(PRT_DK_mean_rows, 1, a2, fn);
}

/* ---- optimizer and gradient norm ---- */

/* prt_adamw's scalars (runtime/kernels/cpu.c: in double as Python computes them, rounded to
 * float where torch's kernels see them), then one thread per element. */
void prt_cuda_adamw(prt_ctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                    float beta1, float beta2, float eps, int32_t decay) {
  if (prt_elastic_dry(ctx)) return; /* an elastic step updates in its last pass only */
  prt_adam_scalars a = prt_adam_scalars_of(ctx, beta1, beta2, eps);
  void *args[] = {&p,      &g,        &m,        &v,          &n,
                  &a.beta1, &a.beta2, &a.eps,    &a.keep,     &a.one_minus_b1,
                  &a.one_minus_b2, &a.bc2_sqrt, &a.neg_step, &a.clip, &decay};
  launch(PRT_DK_adamw, n, args, "prt_cuda_adamw");
}

/* Adds sum(g^2) to the device's running sum: NORM_THREADS strided partial sums, then one
 * thread adds them in order (deterministic; no atomics). */
void prt_cuda_grad_sq_accum(prt_ctx *ctx, const float *g, int64_t n, int32_t counted) {
  if (!counted || n <= 0) return;
  int64_t P = n < NORM_THREADS ? n : NORM_THREADS;
  double *partial = S.norm_partial, *acc = S.norm_sq;
  void *a1[] = {&partial, &g, &n, &P};
  launch(PRT_DK_sum_squares, P, a1, "prt_cuda_grad_sq_accum");
  void *a2[] = {&acc, &partial, &P};
  launch(PRT_DK_sum_partials, 1, a2, "prt_cuda_grad_sq_accum");
}

/* The step's squared norm to the host (a wait for the backward pass: the norm scales every
 * update), then the CPU path's all-reduce and clip scale. */
void prt_cuda_grad_norm_sync(prt_ctx *ctx) {
  const char *fn = "prt_cuda_grad_norm_sync";
  double sq = 0.0;
  CUDA_OR_DIE(fn, "copy of the squared gradient norm",
              cudaMemcpyAsync(&sq, S.norm_sq, sizeof sq, cudaMemcpyDeviceToHost,
                              compute_stream()));
  CUDA_OR_DIE(fn, "cudaMemsetAsync",
              cudaMemsetAsync(S.norm_sq, 0, sizeof(double), compute_stream()));
  CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
  ctx->grad_sq += sq;
  prt_grad_norm_sync(ctx);
}

/* ---- Qwen3's ops (runtime/kernels/cpu_qwen3.c's twins) ---- */

/* dwte as prt_cuda_embedding_bwd's: chunks of R token rows summed into V x C slabs, then the
 * slabs added in order (no atomics); no position table. */
void prt_cuda_embed_bwd(float *dwte, const float *dout, const int32_t *tok, int64_t N,
                        int64_t C, int64_t V) {
  const char *fn = "prt_cuda_embed_bwd";
  int64_t VC = V * C;
  int64_t chunks = VC > 0 ? WTE_SLAB_FLOATS / VC : 1;
  if (chunks > (N + 255) / 256) chunks = (N + 255) / 256;
  if (chunks < 1) chunks = 1;
  int64_t R = (N + chunks - 1) / chunks;
  if (R < 1) R = 1;
  chunks = (N + R - 1) / R;
  float *slabs = scratch(SCR_WTE, (size_t)(chunks > 0 ? chunks : 1) * VC * sizeof(float), fn);
  void *a1[] = {&slabs, &dout, &tok, &N, &C, &V, &R};
  launch(PRT_DK_embedding_wte_partials, chunks * C, a1, fn);
  void *a2[] = {&dwte, &slabs, &chunks, &VC};
  launch(PRT_DK_sum_slabs, VC, a2, fn);
}

/* dx one row per thread; dw by chunks of COL_CHUNK rows (f64), the chunks added in order. */
void prt_cuda_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x,
                          const float *w, const float *rstd, int64_t R, int64_t D) {
  const char *fn = "prt_cuda_rmsnorm_bwd";
  void *a1[] = {&dx, &dout, &x, &w, &rstd, &R, &D};
  launch(PRT_DK_rmsnorm_bwd_dx, R, a1, fn);
  int64_t Rc = COL_CHUNK, chunks = (R + Rc - 1) / Rc;
  double *pw = scratch(SCR_COLS, (size_t)(chunks * D + 1) * sizeof(double), fn);
  void *a2[] = {&pw, &dout, &x, &rstd, &R, &D, &Rc};
  launch(PRT_DK_rmsnorm_dw_partials, chunks * D, a2, fn);
  col_finish(dw, pw, chunks, D, fn);
}

/* The rotary table for (T, D, theta) and direction (slot SCR_ROPE_FWD: +angle, SCR_ROPE_BWD:
 * -angle), computed on the host by the CPU's prt_rope_table and uploaded the first time a
 * shape is seen (the host waits for that copy only then). */
static const float *rope_table(int slot, int64_t T, int64_t D, float theta, const char *fn) {
  int dir = slot == SCR_ROPE_FWD ? 0 : 1;
  uint32_t tb;
  memcpy(&tb, &theta, sizeof tb);
  int64_t key[3] = {T, D, (int64_t)tb};
  size_t bytes = (size_t)(2 * T * (D / 2)) * sizeof(float);
  if (bytes == 0) bytes = sizeof(float);
  if (S.scratch[slot] && S.scratch_cap[slot] >= bytes && !memcmp(S.rope_key[dir], key, sizeof key))
    return S.scratch[slot];
  float *dev = scratch(slot, bytes, fn);
  float *host = prt_xmalloc(bytes, "rotary table");
  prt_rope_table(host, T, D, theta, dir ? -1.0 : 1.0);
  CUDA_OR_DIE(fn, "rotary table upload",
              cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, compute_stream()));
  CUDA_OR_DIE(fn, "rotary table upload", cudaStreamSynchronize(compute_stream()));
  free(host);
  memcpy(S.rope_key[dir], key, sizeof key);
  return dev;
}

static void rope(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                 float theta, int slot, const char *fn) {
  if (D <= 0 || D % 2 || N % D)
    prt_fatal("%s: head size %lld must be even and divide the row width %lld", fn,
              (long long)D, (long long)N);
  const float *cs = rope_table(slot, T, D, theta, fn);
  int64_t BT = B * T;
  void *args[] = {&out, &x, &cs, &BT, &T, &N, &D};
  launch(PRT_DK_rope, BT * (N / D) * (D / 2), args, fn);
}

void prt_cuda_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                       float theta) {
  rope(out, x, B, T, N, D, theta, SCR_ROPE_FWD, "prt_cuda_rope_fwd");
}

void prt_cuda_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t N,
                       int64_t D, float theta) {
  rope(dx, dout, B, T, N, D, theta, SCR_ROPE_BWD, "prt_cuda_rope_bwd");
}

/* Grouped-query attention (kernels/cuda_attention.cu): probs is the CPU's (B, H, T, T) result,
 * of which the first B*H*T floats hold each query row's log-sum-exp, as in
 * prt_cuda_attention_fwd. */
static void check_gqa(int64_t H, int64_t KV, int64_t D, const char *fn) {
  if (H <= 0 || KV <= 0 || KV > H || D <= 0 || D > PRT_CUDA_ATTENTION_MAX_HEAD)
    prt_fatal("%s: %lld query heads over %lld kv heads of size %lld: the GPU attention kernel "
              "(kernels/cuda_attention.cu) needs 0 < KV <= H and a head size <= %d; use the "
              "CPU target", fn, (long long)H, (long long)KV, (long long)D,
              PRT_CUDA_ATTENTION_MAX_HEAD);
}

void prt_cuda_gqa_attention_fwd(float *out, float *probs, const float *q, const float *k,
                                const float *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                                int64_t D) {
  const char *fn = "prt_cuda_gqa_attention_fwd";
  check_gqa(H, KV, D, fn);
  cudaError_t e =
      prt_cuda_gqa_attention_fwd_launch(out, probs, q, k, v, B, T, H, KV, D, compute_stream());
  if (e != cudaSuccess) fail_cuda(fn, "flash GQA forward", e, __LINE__);
  if (S.sync_each)
    CUDA_OR_DIE(fn, "flash GQA forward", cudaStreamSynchronize(compute_stream()));
}

void prt_cuda_gqa_attention_bwd(float *dq, float *dk, float *dv, const float *dout,
                                const float *q, const float *k, const float *v,
                                const float *probs, int64_t B, int64_t T, int64_t H, int64_t KV,
                                int64_t D) {
  const char *fn = "prt_cuda_gqa_attention_bwd";
  check_gqa(H, KV, D, fn);
  cudaError_t e = prt_cuda_gqa_attention_bwd_launch(dq, dk, dv, dout, q, k, v, probs, B, T, H,
                                                    KV, D, compute_stream());
  if (e != cudaSuccess) fail_cuda(fn, "flash GQA backward", e, __LINE__);
  if (S.sync_each)
    CUDA_OR_DIE(fn, "flash GQA backward", cudaStreamSynchronize(compute_stream()));
}

/* ---- mixture of experts (runtime/kernels/cpu.c's prt_moe_* twins) ----
 * Which row each token copy lands on, and each expert's segment of rows, depend on the expert
 * ids and counts, which live on the device. The host learns them by a small synchronous
 * device-to-host copy per op (N K ids, or G El counts: bytes, against the op's N C floats),
 * computes the rows by the CPU's own counting sort (prt_moe_positions, prt_moe_segment: the
 * same rows, the same fatal diagnostics for a bad id or a corrupt exchange) and uploads them;
 * the device kernels then gather and scatter with one writer per element (no atomics), and
 * the expert matmuls are one cuBLAS sgemm per segment in use. The copies wait for the compute
 * stream, so an MoE layer costs a few host round trips per step: simple and deterministic,
 * not fast. */

/* n i32 of the device's src into the host's dst, after the stream's work so far. */
static void moe_d2h(int32_t *dst, const int32_t *src, int64_t n, const char *what,
                    const char *fn) {
  if (n <= 0) return;
  CUDA_OR_DIE(fn, what,
              cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyDeviceToHost,
                              compute_stream()));
  CUDA_OR_DIE(fn, what, cudaStreamSynchronize(compute_stream()));
}

/* n i32 of the host's src into the device's dst; waits for the copy (src is freed next). */
static void moe_h2d(int32_t *dst, const int32_t *src, int64_t n, const char *what,
                    const char *fn) {
  if (n <= 0) return;
  CUDA_OR_DIE(fn, what,
              cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyHostToDevice,
                              compute_stream()));
  CUDA_OR_DIE(fn, what, cudaStreamSynchronize(compute_stream()));
}

/* The device rows of the N K token copies (scratch SCR_MOE_POS), from the device's expert ids;
 * counts_dev (may be NULL) receives the copies per expert as well. */
static const int32_t *moe_positions(const int32_t *experts, int32_t *counts_dev, int64_t N,
                                    int64_t K, int64_t E, int64_t G, const char *fn) {
  if (N < 0 || K < 0 || E <= 0 || G <= 0 || E % G)
    prt_fatal("%s: %lld experts in %lld groups (N = %lld, K = %lld): the groups must divide "
              "the experts; %s", fn, (long long)E, (long long)G, (long long)N, (long long)K,
              "a piper-compile defect (the plan's MoE attributes)");
  int64_t NK = N * K;
  int32_t *ex = prt_xmalloc((size_t)(NK > 0 ? NK : 1) * sizeof *ex, "MoE expert ids");
  int32_t *pos = prt_xmalloc((size_t)(NK > 0 ? NK : 1) * sizeof *pos, "MoE positions");
  int32_t *counts = counts_dev ? prt_xmalloc((size_t)E * sizeof *counts, "MoE counts") : NULL;
  moe_d2h(ex, experts, NK, "copy of the expert ids to the host", fn);
  prt_moe_positions(pos, counts, ex, N, K, E, G, fn);
  int32_t *dev = scratch(SCR_MOE_POS, (size_t)(NK > 0 ? NK : 1) * sizeof *dev, fn);
  moe_h2d(dev, pos, NK, "upload of the copies' rows", fn);
  if (counts_dev) moe_h2d(counts_dev, counts, E, "upload of the expert counts", fn);
  free(ex);
  free(pos);
  free(counts);
  return dev;
}

/* The G El per-block expert counts on the host (freed by the caller). */
static int32_t *moe_counts(const int32_t *counts, int64_t G, int64_t El, const char *fn) {
  if (G <= 0 || El <= 0)
    prt_fatal("%s: %lld blocks of %lld local experts: a piper-compile defect (the plan's MoE "
              "attributes)", fn, (long long)G, (long long)El);
  int32_t *h = prt_xmalloc((size_t)(G * El) * sizeof *h, "MoE counts");
  moe_d2h(h, counts, G * El, "copy of the expert counts to the host", fn);
  return h;
}

static void moe_zero(float *p, int64_t n, const char *fn) {
  if (n <= 0) return;
  CUDA_OR_DIE(fn, "cudaMemsetAsync",
              cudaMemsetAsync(p, 0, (size_t)n * sizeof(float), compute_stream()));
}

void prt_cuda_moe_dispatch_fwd(float *rows, int32_t *counts, const float *h,
                               const int32_t *experts, int64_t N, int64_t K, int64_t C,
                               int64_t E, int64_t G) {
  const char *fn = "prt_cuda_moe_dispatch_fwd";
  const int32_t *pos = moe_positions(experts, counts, N, K, E, G, fn);
  int64_t El = E / G, R = G * N * (K < El ? K : El), NK = N * K;
  moe_zero(rows, R * C, fn);
  void *args[] = {&rows, &h, &pos, &NK, &K, &C};
  launch(PRT_DK_moe_scatter_rows, NK * C, args, fn);
}

void prt_cuda_moe_dispatch_bwd(float *dh, const float *drows, const int32_t *experts, int64_t N,
                               int64_t K, int64_t C, int64_t E, int64_t G) {
  const char *fn = "prt_cuda_moe_dispatch_bwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  void *args[] = {&dh, &drows, &pos, &N, &K, &C};
  launch(PRT_DK_moe_gather_sum, N * C, args, fn);
}

void prt_cuda_moe_combine_fwd(float *y, const float *out, const float *weights,
                              const int32_t *experts, int64_t N, int64_t K, int64_t C,
                              int64_t E, int64_t G) {
  const char *fn = "prt_cuda_moe_combine_fwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  void *args[] = {&y, &out, &weights, &pos, &N, &K, &C};
  launch(PRT_DK_moe_combine_fwd, N * C, args, fn);
}

void prt_cuda_moe_combine_bwd(float *dout, float *dweights, const float *dy, const float *out,
                              const float *weights, const int32_t *experts, int64_t N,
                              int64_t K, int64_t C, int64_t E, int64_t G) {
  const char *fn = "prt_cuda_moe_combine_bwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  int64_t El = E / G, R = G * N * (K < El ? K : El);
  moe_zero(dout, R * C, fn);
  void *args[] = {&dout, &dweights, &dy, &out, &weights, &pos, &N, &K, &C};
  launch(PRT_DK_moe_combine_bwd, N * K, args, fn);
}

/* act (n, Fe) = silu(g) u of n hidden rows (stride 2 Fe) */
static void moe_silu_mul(float *act, const float *hid, int64_t n, int64_t Fe, const char *fn) {
  void *args[] = {&act, &hid, &n, &Fe};
  launch(PRT_DK_moe_silu_mul, n * Fe, args, fn);
}

/* x (n) rounded in place to bf16 values (prt_bf16_round's device kernel) */
static void round_bf16(float *x, int64_t n, const char *fn) {
  void *args[] = {&x, &x, &n};
  launch(PRT_DK_bf16_round, n, args, fn);
}

/* prt_moe_expert_dgu: dg = dout wd (n, Fe), then dg and du in place from hidden; with bf16,
 * dact, dg and du rounded to bf16 values where the CPU's twin rounds them. */
static void moe_dgu(float *dg, float *du, const float *dout, const float *hid,
                    const float *wd, int64_t n, int64_t C, int64_t Fe, bool bf16,
                    const char *fn) {
  sgemm(prt_gemm_row_major(false, false, n, Fe, C, dout, C, wd, Fe, 0.0f, dg, Fe), fn);
  if (bf16) round_bf16(dg, n * Fe, fn);
  void *args[] = {&dg, &du, &hid, &n, &Fe};
  launch(PRT_DK_moe_dgu, n * Fe, args, fn);
  if (bf16) {
    round_bf16(dg, n * Fe, fn);
    round_bf16(du, n * Fe, fn);
  }
}

/* The experts (kernels.def moe_expert_*): the fp32 kernels, and with bf16 their bf16-policy
 * twins (moe_expert_*_bf16), which round the intermediates where runtime/kernels/cpu.c's
 * twins do (g and u, silu(g) u; dact, dg, du), with the same conversion as prt_bf16_round. */
static void expert_fwd(float *out, float *hidden, const float *rows, const int32_t *counts,
                       int64_t G, int64_t cap, int64_t El, int64_t j, const float *wg,
                       const float *wu, const float *wd, int64_t C, int64_t Fe, bool bf16,
                       const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n > 0) {
      const float *x = rows + first * C;
      float *hid = hidden + first * 2 * Fe, *o = out + first * C;
      /* hidden[:, :Fe] = x wg^T, hidden[:, Fe:] = x wu^T (row stride 2Fe) */
      sgemm(prt_gemm_row_major(false, true, n, Fe, C, x, C, wg, C, 0.0f, hid, 2 * Fe), fn);
      sgemm(prt_gemm_row_major(false, true, n, Fe, C, x, C, wu, C, 0.0f, hid + Fe, 2 * Fe), fn);
      if (bf16) round_bf16(hid, n * 2 * Fe, fn); /* n whole rows of 2Fe */
      float *act = scratch(SCR_MOE_ACT, (size_t)(n * Fe) * sizeof(float), fn);
      moe_silu_mul(act, hid, n, Fe, fn);
      if (bf16) round_bf16(act, n * Fe, fn);
      sgemm(prt_gemm_row_major(false, true, n, C, Fe, act, Fe, wd, Fe, 0.0f, o, C), fn);
    }
    if (j == El - 1) { /* the block's rows past its last expert's */
      int64_t used = prt_moe_block_used(cnt, s, El);
      moe_zero(out + (s * cap + used) * C, (cap - used) * C, fn);
      moe_zero(hidden + (s * cap + used) * 2 * Fe, (cap - used) * 2 * Fe, fn);
    }
  }
  free(cnt);
}

void prt_cuda_moe_expert_fwd(float *out, float *hidden, const float *rows,
                             const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                             int64_t j, const float *wg, const float *wu, const float *wd,
                             int64_t C, int64_t Fe) {
  expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, false,
             "prt_cuda_moe_expert_fwd");
}
void prt_cuda_moe_expert_fwd_bf16(float *out, float *hidden, const float *rows,
                                  const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                                  int64_t j, const float *wg, const float *wu, const float *wd,
                                  int64_t C, int64_t Fe) {
  expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, true,
             "prt_cuda_moe_expert_fwd_bf16");
}

static void expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                             const float *hidden, int64_t G, int64_t cap, int64_t El, int64_t j,
                             const float *wg, const float *wu, const float *wd, int64_t C,
                             int64_t Fe, bool bf16, const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n > 0) {
      float *dg = scratch(SCR_MOE_ACT, (size_t)(2 * n * Fe) * sizeof(float), fn);
      float *du = dg + n * Fe, *dx = drows + first * C;
      moe_dgu(dg, du, dout + first * C, hidden + first * 2 * Fe, wd, n, C, Fe, bf16, fn);
      sgemm(prt_gemm_row_major(false, false, n, C, Fe, dg, Fe, wg, C, 0.0f, dx, C), fn);
      sgemm(prt_gemm_row_major(false, false, n, C, Fe, du, Fe, wu, C, 1.0f, dx, C), fn);
    }
    if (j == El - 1) {
      int64_t used = prt_moe_block_used(cnt, s, El);
      moe_zero(drows + (s * cap + used) * C, (cap - used) * C, fn);
    }
  }
  free(cnt);
}

void prt_cuda_moe_expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                                   const float *hidden, int64_t G, int64_t cap, int64_t El,
                                   int64_t j, const float *wg, const float *wu,
                                   const float *wd, int64_t C, int64_t Fe) {
  expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, false,
                   "prt_cuda_moe_expert_bwd_input");
}
void prt_cuda_moe_expert_bwd_input_bf16(float *drows, const float *dout,
                                        const int32_t *counts, const float *hidden, int64_t G,
                                        int64_t cap, int64_t El, int64_t j, const float *wg,
                                        const float *wu, const float *wd, int64_t C,
                                        int64_t Fe) {
  expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, true,
                   "prt_cuda_moe_expert_bwd_input_bf16");
}

static void expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                              const float *rows, const int32_t *counts, const float *hidden,
                              int64_t G, int64_t cap, int64_t El, int64_t j, const float *wd,
                              int64_t C, int64_t Fe, bool bf16, const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  moe_zero(dwg, Fe * C, fn);
  moe_zero(dwu, Fe * C, fn);
  moe_zero(dwd, C * Fe, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n == 0) continue;
    const float *x = rows + first * C, *d = dout + first * C, *hid = hidden + first * 2 * Fe;
    float *dg = scratch(SCR_MOE_ACT, (size_t)(3 * n * Fe) * sizeof(float), fn);
    float *du = dg + n * Fe, *act = dg + 2 * n * Fe;
    moe_silu_mul(act, hid, n, Fe, fn);
    if (bf16) round_bf16(act, n * Fe, fn);
    moe_dgu(dg, du, d, hid, wd, n, C, Fe, bf16, fn);
    /* dwd += dout^T act, dwg += dg^T x, dwu += du^T x */
    sgemm(prt_gemm_row_major(true, false, C, Fe, n, d, C, act, Fe, 1.0f, dwd, Fe), fn);
    sgemm(prt_gemm_row_major(true, false, Fe, C, n, dg, Fe, x, C, 1.0f, dwg, C), fn);
    sgemm(prt_gemm_row_major(true, false, Fe, C, n, du, Fe, x, C, 1.0f, dwu, C), fn);
  }
  free(cnt);
}
void prt_cuda_moe_expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                                    const float *rows, const int32_t *counts,
                                    const float *hidden, int64_t G, int64_t cap, int64_t El,
                                    int64_t j, const float *wd, int64_t C, int64_t Fe) {
  expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, false,
                    "prt_cuda_moe_expert_bwd_weight");
}
void prt_cuda_moe_expert_bwd_weight_bf16(float *dwg, float *dwu, float *dwd, const float *dout,
                                         const float *rows, const int32_t *counts,
                                         const float *hidden, int64_t G, int64_t cap,
                                         int64_t El, int64_t j, const float *wd, int64_t C,
                                         int64_t Fe) {
  expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, true,
                    "prt_cuda_moe_expert_bwd_weight_bf16");
}

/* ---- the general tensor ops' kernels that are not PRT_KERNEL_1D ---- */

/* rope_angles: the forward rotation's (cos, sin) table, computed on the host by the CPU's
 * prt_rope_table and kept on the device as rope's, gathered into the (T, N) layout */
void prt_cuda_rope_angles(float *out, int64_t T, int64_t N, int64_t D, float theta, int32_t sn) {
  const char *fn = "prt_cuda_rope_angles";
  if (D <= 0 || D % 2 || (N != D && N != D / 2))
    prt_fatal("%s: a table of width %lld for head size %lld: it must be even and the width "
              "the head size or its half", fn, (long long)N, (long long)D);
  const float *cs = rope_table(SCR_ROPE_FWD, T, D, theta, fn);
  int64_t s = sn != 0;
  void *args[] = {&out, &cs, &T, &N, &D, &s};
  launch(PRT_DK_rope_angles, T * N, args, fn);
}
