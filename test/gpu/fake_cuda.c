/* A fake CUDA runtime and cuBLAS on host memory, for running libpiper_rt_cuda's host side
 * (runtime/kernels/cuda.c) without a GPU: test/gpu/cuda_host_emu.c calls its launchers, and
 * test/gpu/fake-cuda-train.test links a whole --target cuda training binary against it.
 *   cudaLibraryLoadData   JIT-compiles the kernels of lowering/gpu_kernels.c for the host
 *                         (kernel_jit.h) instead of loading the PTX;
 *   cudaLibraryGetKernel  returns the kernel's name; cudaLaunchKernel runs that kernel of the
 *                         host JIT for every thread of grid x block, with the launcher's own
 *                         argument array;
 *   cublasSgemm           is CBLAS's column-major sgemm (the same contract);
 *   cudaMalloc, copies    are calloc and memmove; streams and events do nothing;
 *   prt_device_cuda_open  gives the CPU device's memory, marked not host visible (staged);
 *   prt_device_cuda_count 1: the backend opens cuda:0;
 * the attention launchers are fake_attention.cc's. Only what cuda.c calls is defined. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernel_jit.h"
#include "prt_internal.h"

const char piper_ptx[] __attribute__((weak)) = "// the kernels are the host JIT's";
static MlirExecutionEngine jit;
int fake_cuda_launches; /* kernels launched so far (the tests print it) */

/* prt_device_open("cuda:N") gets a device that is the CPU's (host memory, which the tests
 * read) but says it is not host visible, so the runtime stages its host reads and writes and
 * its transfers through host buffers as it does for a GPU. */
static prt_device fake_gpu;
int prt_device_cuda_open(int ordinal, prt_device **out, prt_status *st) {
  fake_gpu = *prt_device_cpu();
  fake_gpu.host_visible = 0;
  snprintf(fake_gpu.name, sizeof fake_gpu.name, "fakecuda:%d", ordinal);
  *out = &fake_gpu;
  return 0;
}

/* One fake GPU, or FAKE_CUDA_DEVICES of them (one per rank for --comm nccl over the fake
 * NCCL, test/gpu/fake_nccl.c); they all share the host's memory. */
static int fake_count(void) {
  const char *v = getenv("FAKE_CUDA_DEVICES");
  int n = v ? atoi(v) : 1;
  return n > 0 ? n : 1;
}
int prt_device_cuda_count(void) { return fake_count(); }

cudaError_t cudaGetDeviceCount(int *n) {
  *n = fake_count();
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) { return "fakeError"; }
const char *cudaGetErrorString(cudaError_t e) { return "an error of the fake CUDA runtime"; }
cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                enum cudaJitOption *jo, void **jv, unsigned int nj,
                                enum cudaLibraryOption *lo, void **lv, unsigned int nl) {
  if (mlirExecutionEngineIsNull(jit)) jit = kernelJitCreate();
  *lib = (cudaLibrary_t)(void *)&jit;
  return cudaSuccess;
}
cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib, const char *name) {
  *k = (cudaKernel_t)(void *)name; /* cuda.c's kernel_names: static strings */
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
  *p = calloc(1, n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void *p) {
  free(p);
  return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t st) {
  memmove(d, s, n);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return cudaSuccess; }

/* Kernel arguments by name: how many the launcher must pass, from the kernel's signature in
 * the JIT's module (kernel_jit.h), so a new device kernel needs no entry here. */
static int nargs_of(const char *name) {
  int n = kernelJitArgCount(name);
  if (n >= 0) return n;
  fprintf(stderr, "fake cudaLaunchKernel: unknown kernel %s\n", name);
  exit(2);
}

cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                             size_t shmem, cudaStream_t s) {
  const char *name = (const char *)func;
  int64_t threads = (int64_t)grid.x * grid.y * grid.z * block.x * block.y * block.z;
  fake_cuda_launches++;
  if (kernelJitLaunch(jit, name, threads, args, nargs_of(name))) {
    fprintf(stderr, "fake cudaLaunchKernel: %s failed in the JIT\n", name);
    exit(2);
  }
  return cudaSuccess;
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
  *h = (cublasHandle_t)(void *)&jit;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  return mode == CUBLAS_PEDANTIC_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc) {
  cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
              tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, *alpha, A, lda, B, ldb,
              *beta, C, ldc);
  return CUBLAS_STATUS_SUCCESS;
}

/* cublasGemmEx as the bf16 linear kernels call it (CUDA_R_16BF A and B, fp32 C,
 * CUBLAS_COMPUTE_32F): A and B widened exactly to fp32, then CBLAS's column-major sgemm, the
 * products of bf16 values summed in fp32 (a tensor core's order of summation aside). Any
 * other combination of types is refused, so a launcher that passes others fails its test. */
static float *widenMatrix(const void *X, cublasOperation_t t, int rowsOp, int colsOp, int ld) {
  /* X is rows x cols, column-major with leading dimension ld: its last column ends at
   * (cols - 1) ld + rows, past which the caller's buffer may end */
  int64_t rows = t == CUBLAS_OP_T ? colsOp : rowsOp, cols = t == CUBLAS_OP_T ? rowsOp : colsOp;
  int64_t n = cols > 0 ? (cols - 1) * ld + rows : 0;
  float *w = calloc((size_t)(cols * ld + 1), sizeof *w);
  prt_bf16_widen(w, X, n);
  return w;
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                            int lda, const void *B, cudaDataType Btype, int ldb,
                            const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (Atype != CUDA_R_16BF || Btype != CUDA_R_16BF || Ctype != CUDA_R_32F ||
      compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  float *a = widenMatrix(A, ta, m, k, lda), *b = widenMatrix(B, tb, k, n, ldb);
  cblas_sgemm(CblasColMajor, ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
              tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, m, n, k, *(const float *)alpha, a,
              lda, b, ldb, *(const float *)beta, C, ldc);
  free(a);
  free(b);
  return CUBLAS_STATUS_SUCCESS;
}

/* The engine, for a test that ends cleanly (a training binary just exits). */
void fake_cuda_destroy(void) {
  if (!mlirExecutionEngineIsNull(jit)) kernelJitDestroy(jit);
  jit = (MlirExecutionEngine){NULL};
}
