/* libpiper_rt_cuda's kernels (kernels/cuda.c): what a plan compiled with --target cuda calls,
 * declared from the kernel list (include/piper/kernels.def) with their CPU twins' arguments
 * and device pointers. Also the attention launchers that kernels/cuda_attention.cu (nvcc)
 * defines for cuda.c. */
#ifndef PIPER_PRT_KERNELS_CUDA_H
#define PIPER_PRT_KERNELS_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#include "piper/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prt_ctx prt_ctx;

/* A tensor argument of the nvcc-built kernels that the kernel list types FP_IN / FP_OUT: p
 * points at fp32, or at bf16 bits where bf16 is 1 (the bit of the runtime call's mask;
 * kernels/cuda_fp.cuh loads and stores them). */
typedef struct {
  const void *p;
  int bf16;
} prt_fp_in;
typedef struct {
  void *p;
  int bf16;
} prt_fp_out;

/* The largest head size the fused attention kernels hold in registers (4 per lane). */
enum { PRT_CUDA_ATTENTION_MAX_HEAD = 128 };

/* Has the backend record open this rank's GPU and resolve --comm (prt_backend_use_gpu: exits
 * 1 with a message where there is no GPU), then JIT-loads the plan's PTX (piper_ptx) and
 * creates the cuBLAS handle. piper_setup calls it first. */
void prt_cuda_setup(prt_ctx *ctx);

/* The GPU target's prt_cuda_<name> for every PRT_KERNEL entry of include/piper/kernels.def
 * whose gpu column is 1: the CPU twin's argument list, with device pointers, and the call's
 * bf16 mask (bit k: the k-th tensor argument holds bf16; PRT_BF16_BIT). */
#define PRT_KERNEL_GPU_1(decl) decl
#define PRT_KERNEL_GPU_0(decl)
#define PRT_KERNEL(name, gpu, params, launches)                                            \
  PRT_KERNEL_GPU_##gpu(void prt_cuda_##name(PRT_KERNEL_UNPAREN params, int32_t bf16);)
#include "piper/kernels.def"
#undef PRT_KERNEL_GPU_1
#undef PRT_KERNEL_GPU_0

/* kernels/cuda_attention.cu: causal multi-head attention over qkv (B, T, 3C), flash-style
 * (online softmax, one warp per query row; the backward one warp per query row for dq and one
 * per key row for dk, dv). Asynchronous on `stream`; the launch's error, if any. */
cudaError_t prt_cuda_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in qkv, int64_t B,
                                          int64_t T, int64_t C, int64_t H,
                                          cudaStream_t stream);
cudaError_t prt_cuda_attention_bwd_launch(prt_fp_out dqkv, prt_fp_in dout, prt_fp_in qkv,
                                          const float *lse, float *D, int64_t B, int64_t T,
                                          int64_t C, int64_t H, cudaStream_t stream);
/* The backwards take D, device scratch of B*H*T floats (kernels/cuda.c's, sized in the warm-up
 * step: the launchers allocate nothing). The same for grouped-query attention (Qwen3): q, out (B, T, H*D), k, v (B, T, KV*D), query
 * head h reading kv head h*KV/H; the backward's dk, dv one warp per (b, kv head, key) row,
 * summing over the query heads sharing it (no atomics). */
cudaError_t prt_cuda_gqa_attention_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q,
                                              prt_fp_in k, prt_fp_in v, int64_t B,
                                              int64_t T, int64_t H, int64_t KV, int64_t D,
                                              cudaStream_t stream);
cudaError_t prt_cuda_gqa_attention_bwd_launch(prt_fp_out dq, prt_fp_out dk, prt_fp_out dv,
                                              prt_fp_in dout, prt_fp_in q, prt_fp_in k,
                                              prt_fp_in v, const float *lse, float *Dbuf,
                                              int64_t B, int64_t T, int64_t H, int64_t KV,
                                              int64_t D, cudaStream_t stream);

/* The largest head size kernels/cuda_flash.cu is built for (its FLASH_HEAD). */
enum { PRT_CUDA_FLASH_MAX_HEAD = 64 };

/* The bf16 elements of one operand of `heads` heads staged for kernels/cuda_flash.cu: per
 * (batch, head) T rounded up to 16 rows of PRT_CUDA_FLASH_MAX_HEAD. */
static inline int64_t prt_cuda_flash_staged(int64_t B, int64_t T, int64_t heads) {
  return B * heads * ((T + 15) / 16 * 16) * PRT_CUDA_FLASH_MAX_HEAD;
}
/* The scratch bytes a flash launch stages its operands in: q, dO (H heads), k, v (KV). */
static inline size_t prt_cuda_flash_stage_bytes(int64_t B, int64_t T, int64_t H, int64_t KV) {
  return (size_t)(2 * prt_cuda_flash_staged(B, T, H) + 2 * prt_cuda_flash_staged(B, T, KV)) *
         sizeof(uint16_t);
}
/* Where each operand's copy starts in that scratch: part[0..3] = q, k, v, dO. */
static inline void prt_cuda_flash_stage_parts(uint16_t *staged, int64_t B, int64_t T, int64_t H,
                                              int64_t KV, uint16_t *part[4]) {
  int64_t nq = prt_cuda_flash_staged(B, T, H), nk = prt_cuda_flash_staged(B, T, KV);
  part[0] = staged;
  part[1] = part[0] + nq;
  part[2] = part[1] + nk;
  part[3] = part[2] + nk;
}

/* kernels/cuda_flash.cu: causal attention on tensor cores (bf16 operands, fp32 accumulation;
 * PIPER_CUDA_ATTN=tc), head sizes up to PRT_CUDA_FLASH_MAX_HEAD: q (B, T, *) rows of qs
 * elements holding H heads of D at h*D, k and v rows of ks holding KV heads (query head
 * h reads kv head h*KV/H), out and dout rows of os, each fp32 or bf16 (prt_fp_in / out: a
 * bf16 operand is staged as it is, a result rounded at its store); lse and Dbuf (B, H, T)
 * fp32. dq has q's layout,
 * dk and dv k's (GPT's packed qkv: q, k, v at channels 0, C, 2C of rows of 3C). `staged`:
 * prt_cuda_flash_stage_bytes of device scratch, where each launch first writes its operands
 * as bf16. Asynchronous on `stream`; the launch's error. */
cudaError_t prt_cuda_flash_fwd_launch(prt_fp_out out, float *lse, prt_fp_in q, prt_fp_in k,
                                      prt_fp_in v, uint16_t *staged, int64_t B, int64_t T,
                                      int64_t H, int64_t KV, int64_t D, int64_t qs, int64_t ks,
                                      int64_t os, cudaStream_t stream);
cudaError_t prt_cuda_flash_bwd_launch(prt_fp_out dq, prt_fp_out dk, prt_fp_out dv, float *Dbuf,
                                      prt_fp_in dout, prt_fp_in q, prt_fp_in k, prt_fp_in v,
                                      const float *lse, uint16_t *staged, int64_t B, int64_t T,
                                      int64_t H, int64_t KV, int64_t D, int64_t qs, int64_t ks,
                                      int64_t os, cudaStream_t stream);

/* kernels/cuda_norms.cu: LayerNorm's and RMSNorm's forward and input gradient, a warp a row
 * (the row math is kernels/cuda_norms.cuh). Asynchronous on `stream`; the launch's error. */
cudaError_t prt_cuda_layernorm_fwd_launch(prt_fp_out out, float *mean, float *rstd, prt_fp_in x,
                                          const float *w, const float *b, int64_t N, int64_t C,
                                          float eps, cudaStream_t stream);
cudaError_t prt_cuda_layernorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x,
                                         const float *w, const float *mean, const float *rstd,
                                         int64_t N, int64_t C, cudaStream_t stream);
cudaError_t prt_cuda_rmsnorm_fwd_launch(prt_fp_out out, float *rstd, prt_fp_in x, const float *w,
                                        int64_t R, int64_t D, float eps, cudaStream_t stream);
cudaError_t prt_cuda_rmsnorm_dx_launch(prt_fp_out dx, prt_fp_in dy, prt_fp_in x, const float *w,
                                       const float *rstd, int64_t R, int64_t D,
                                       cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
