/* libpiper_rt_cuda's kernels (kernels/cuda.c): what a plan compiled with --target cuda calls,
 * the op table's gpuKernel column (include/piper/ops.h). Each has its CPU twin's arguments
 * (include/piper/runtime.h) with device pointers. Also the attention launchers that
 * kernels/cuda_attention.cu (nvcc) defines for cuda.c. */
#ifndef PIPER_PRT_KERNELS_CUDA_H
#define PIPER_PRT_KERNELS_CUDA_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct prt_ctx prt_ctx;

/* The largest head size the fused attention kernels hold in registers (4 per lane). */
enum { PRT_CUDA_ATTENTION_MAX_HEAD = 128 };

/* Opens the GPU (exits 1 with a message where there is none), JIT-loads the plan's PTX
 * (piper_ptx), creates the cuBLAS handle, makes the GPU the context's device. piper_setup
 * calls it first. */
void prt_cuda_setup(prt_ctx *ctx);

void prt_cuda_add(float *out, const float *a, const float *b, int64_t n);
void prt_cuda_copy(float *dst, const float *src, int64_t n);
void prt_cuda_gelu_fwd(float *out, const float *x, int64_t n);
void prt_cuda_gelu_bwd(float *dx, const float *dout, const float *x, int64_t n);
void prt_cuda_embedding_fwd(float *out, const int32_t *tok, const float *wte, const float *wpe,
                            int64_t B, int64_t T, int64_t C);
void prt_cuda_embedding_bwd(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                            int64_t B, int64_t T, int64_t C, int64_t V);
void prt_cuda_layernorm_fwd(float *out, float *mean, float *rstd, const float *x,
                            const float *w, const float *b, int64_t N, int64_t C, float eps);
void prt_cuda_layernorm_bwd(float *dx, float *dw, float *db, const float *dout,
                            const float *x, const float *w, const float *mean,
                            const float *rstd, int64_t N, int64_t C);
void prt_cuda_linear_fwd(float *out, const float *x, const float *w, const float *b, int64_t M,
                         int64_t N, int64_t K);
void prt_cuda_linear_bwd_input(float *dx, const float *dout, const float *w, int64_t M,
                               int64_t N, int64_t K);
void prt_cuda_linear_bwd_weight(float *dw, const float *dout, const float *x, int64_t M,
                                int64_t N, int64_t K);
void prt_cuda_bias_bwd(float *db, const float *dout, int64_t M, int64_t N);
/* probs (B, H, T, T) keeps only each row's log-sum-exp in its first B*H*T floats: the
 * backward recomputes the probabilities, no T x T matrix is written */
void prt_cuda_attention_fwd(float *out, float *probs, const float *qkv, int64_t B, int64_t T,
                            int64_t C, int64_t H);
void prt_cuda_attention_bwd(float *dqkv, const float *dout, const float *qkv,
                            const float *probs, int64_t B, int64_t T, int64_t C, int64_t H);
void prt_cuda_cross_entropy_fwd(float *loss, float *probs, const float *logits,
                                const int32_t *targets, int64_t N, int64_t V);
void prt_cuda_cross_entropy_bwd(float *dlogits, const float *probs, const int32_t *targets,
                                int64_t N, int64_t V, int64_t total_rows);
void prt_cuda_adamw(prt_ctx *ctx, float *p, const float *g, float *m, float *v, int64_t n,
                    float beta1, float beta2, float eps, int32_t decay);
void prt_cuda_grad_sq_accum(prt_ctx *ctx, const float *g, int64_t n, int32_t counted);
void prt_cuda_grad_norm_sync(prt_ctx *ctx);
/* Qwen3's ops: the argument lists of runtime/kernels/cpu_qwen3.c's twins */
void prt_cuda_embed_fwd(float *out, const int32_t *tok, const float *wte, int64_t N, int64_t C,
                        int64_t V);
void prt_cuda_embed_bwd(float *dwte, const float *dout, const int32_t *tok, int64_t N,
                        int64_t C, int64_t V);
void prt_cuda_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int64_t R,
                          int64_t D, float eps);
void prt_cuda_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x,
                          const float *w, const float *rstd, int64_t R, int64_t D);
void prt_cuda_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                       float theta);
void prt_cuda_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t N,
                       int64_t D, float theta);
void prt_cuda_swiglu_fwd(float *out, const float *gate, const float *up, int64_t n);
void prt_cuda_swiglu_bwd(float *dgate, float *dup, const float *dout, const float *gate,
                         const float *up, int64_t n);
void prt_cuda_bias_add(float *out, const float *x, const float *b, int64_t M, int64_t N);
/* Mixture of experts: the argument lists of runtime/kernels/cpu.c's prt_moe_* */
void prt_cuda_moe_topk_fwd(float *weights, int32_t *experts, const float *logits, int64_t N,
                           int64_t E, int64_t K);
void prt_cuda_moe_topk_bwd(float *dlogits, const float *dweights, const float *weights,
                           const int32_t *experts, int64_t N, int64_t E, int64_t K);
void prt_cuda_moe_dispatch_fwd(float *rows, int32_t *counts, const float *h,
                               const int32_t *experts, int64_t N, int64_t K, int64_t C,
                               int64_t E, int64_t G);
void prt_cuda_moe_dispatch_bwd(float *dh, const float *drows, const int32_t *experts, int64_t N,
                               int64_t K, int64_t C, int64_t E, int64_t G);
void prt_cuda_moe_combine_fwd(float *y, const float *out, const float *weights,
                              const int32_t *experts, int64_t N, int64_t K, int64_t C,
                              int64_t E, int64_t G);
void prt_cuda_moe_combine_bwd(float *dout, float *dweights, const float *dy, const float *out,
                              const float *weights, const int32_t *experts, int64_t N,
                              int64_t K, int64_t C, int64_t E, int64_t G);
void prt_cuda_moe_expert_fwd(float *out, float *hidden, const float *rows,
                             const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                             int64_t j, const float *wg, const float *wu, const float *wd,
                             int64_t C, int64_t Fe);
void prt_cuda_moe_expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                                   const float *hidden, int64_t G, int64_t cap, int64_t El,
                                   int64_t j, const float *wg, const float *wu,
                                   const float *wd, int64_t C, int64_t Fe);
void prt_cuda_moe_expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                                    const float *rows, const int32_t *counts,
                                    const float *hidden, int64_t G, int64_t cap, int64_t El,
                                    int64_t j, const float *wd, int64_t C, int64_t Fe);
void prt_cuda_gqa_attention_fwd(float *out, float *probs, const float *q, const float *k,
                                const float *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                                int64_t D);
void prt_cuda_gqa_attention_bwd(float *dq, float *dk, float *dv, const float *dout,
                                const float *q, const float *k, const float *v,
                                const float *probs, int64_t B, int64_t T, int64_t H, int64_t KV,
                                int64_t D);

/* kernels/cuda_attention.cu: causal multi-head attention over qkv (B, T, 3C), flash-style
 * (online softmax, one warp per query row; the backward one warp per query row for dq and one
 * per key row for dk, dv). Asynchronous on `stream`; the launch's error, if any. */
cudaError_t prt_cuda_attention_fwd_launch(float *out, float *lse, const float *qkv, int64_t B,
                                          int64_t T, int64_t C, int64_t H,
                                          cudaStream_t stream);
cudaError_t prt_cuda_attention_bwd_launch(float *dqkv, const float *dout, const float *qkv,
                                          const float *lse, int64_t B, int64_t T, int64_t C,
                                          int64_t H, cudaStream_t stream);
/* The same for grouped-query attention (Qwen3): q, out (B, T, H*D), k, v (B, T, KV*D), query
 * head h reading kv head h*KV/H; the backward's dk, dv one warp per (b, kv head, key) row,
 * summing over the query heads sharing it (no atomics). */
cudaError_t prt_cuda_gqa_attention_fwd_launch(float *out, float *lse, const float *q,
                                              const float *k, const float *v, int64_t B,
                                              int64_t T, int64_t H, int64_t KV, int64_t D,
                                              cudaStream_t stream);
cudaError_t prt_cuda_gqa_attention_bwd_launch(float *dq, float *dk, float *dv,
                                              const float *dout, const float *q, const float *k,
                                              const float *v, const float *lse, int64_t B,
                                              int64_t T, int64_t H, int64_t KV, int64_t D,
                                              cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
