/* Causal attention in FlashAttention-2's structure on the GPU (issue 34): the launchers of
 * kernels/cuda_fa2.cu (nvcc), C-callable. The kernels' code and its layouts are described in
 * kernels/cuda_fa2.cuh; test/gpu/fa2-emu.test checks them against the CPU attention on the
 * host. runtime/kernels/cuda.c's attention ops call them for head sizes 64 and 128 (the
 * fake CUDA runtime runs their blocks on the host: test/gpu/fake_fa2.cc); the bench
 * (bench/bench_attention_gpu.cu) times them on a GPU.
 *
 * Shapes: B batches, T positions, H query heads reading KV kv heads (query head h reads kv
 * head h*KV/H), head size D of 64 or 128. Row strides in elements: qs of q and dq, ks of k, v,
 * dk, dv, os of out and dout (GPT's packed qkv (B, T, 3C): q, k, v at channels 0, C, 2C and qs =
 * ks = 3C, os = C; grouped-query: qs = os = H*D, ks = KV*D). Every pointer 16-byte aligned and
 * every stride a multiple of 8 elements (4 for the fp32 kernels): cudaErrorInvalidValue
 * otherwise, and for another D.
 * lse is (B, H, T): each query row's natural log-sum-exp of its scaled scores. */
#ifndef PIPER_PRT_KERNELS_CUDA_FA2_H
#define PIPER_PRT_KERNELS_CUDA_FA2_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the kernels take a head size D and row strides qs, ks, os (in elements of
 * elem_bytes): D 64 or 128 (the instances built), every row start 16 bytes aligned. The
 * callers (runtime/kernels/cuda.c) keep the scalar kernels for what this refuses. */
static inline int prt_cuda_fa2_takes(int64_t D, int64_t qs, int64_t ks, int64_t os,
                                     int elem_bytes) {
  int64_t per16 = 16 / elem_bytes;
  return (D == 64 || D == 128) && qs % per16 == 0 && ks % per16 == 0 && os % per16 == 0;
}
static inline int prt_cuda_fa2_aligned(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* bf16 in and out (uint16_t: the bf16 bits), fp32 inside. */
cudaError_t prt_cuda_fa2_fwd(uint16_t *out, float *lse, const uint16_t *q, const uint16_t *k,
                             const uint16_t *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                             int64_t D, int64_t qs, int64_t ks, int64_t os, cudaStream_t stream);

/* The device scratch prt_cuda_fa2_bwd needs: the fp32 dQ accumulator (B, H, T, D) and D =
 * rowsum(dO o O) (B, H, T). */
static inline size_t prt_cuda_fa2_bwd_scratch_bytes(int64_t B, int64_t T, int64_t H, int64_t D) {
  return (size_t)(B * H * T) * (size_t)(D + 1) * sizeof(float);
}

/* dq, dk, dv (bf16, overwritten; dk and dv summed over the query heads of each kv head) from
 * dout, the forward's out and lse, and q, k, v; scratch of prt_cuda_fa2_bwd_scratch_bytes.
 * Four launches: D and the zeroed accumulator, the key blocks, dq. */
cudaError_t prt_cuda_fa2_bwd(uint16_t *dq, uint16_t *dk, uint16_t *dv, const uint16_t *dout,
                             const uint16_t *out, const float *lse, const uint16_t *q,
                             const uint16_t *k, const uint16_t *v, float *scratch, int64_t B,
                             int64_t T, int64_t H, int64_t KV, int64_t D, int64_t qs,
                             int64_t ks, int64_t os, cudaStream_t stream);

/* The fp32 kernels of the same tiling (kernels/cuda_fa2_f32.cuh: fp32 FMAs, no tensor cores),
 * fp32 in and out; the backward's scratch is D alone (dq is its own accumulator). */
cudaError_t prt_cuda_fa2_fwd_f32(float *out, float *lse, const float *q, const float *k,
                                 const float *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                                 int64_t D, int64_t qs, int64_t ks, int64_t os,
                                 cudaStream_t stream);
static inline size_t prt_cuda_fa2_bwd_f32_scratch_bytes(int64_t B, int64_t T, int64_t H) {
  return (size_t)(B * H * T) * sizeof(float);
}
cudaError_t prt_cuda_fa2_bwd_f32(float *dq, float *dk, float *dv, const float *dout,
                                 const float *out, const float *lse, const float *q,
                                 const float *k, const float *v, float *scratch, int64_t B,
                                 int64_t T, int64_t H, int64_t KV, int64_t D, int64_t qs,
                                 int64_t ks, int64_t os, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
