/* What the CPU kernels (kernels/cpu*.c) share with the GPU launchers (kernels/cuda.c) and the
 * tests: host-side helpers both targets compute alike (the rotary table, the experts' row
 * layout, the AdamW scalars) and the GELU's tanh, exposed for its accuracy test. The kernels
 * themselves are the ABI's (<piper/runtime.h>, include/piper/kernels.def). */
#ifndef PIPER_PRT_KERNELS_H
#define PIPER_PRT_KERNELS_H

#include "prt_ctx.h"

/* The rotary embedding's table: cs[2 (t D/2 + j)] = cos(a), cs[... + 1] = dir sin(a) with
 * a = t theta^(-2j/D) in double, for t < T, j < D/2 (kernels/cpu_qwen3.c; the GPU's
 * prt_cuda_rope_* upload the same table, so both targets rotate by the same floats). */
void prt_rope_table(float *cs, int64_t T, int64_t D, float theta, double dir);
/* Mixture of experts (kernels/cpu.c), shared with the GPU launchers (kernels/cuda.c), which
 * compute the copies' rows and the experts' row segments on the host the same way:
 * pos[n*K+k] = the row of token n's k-th copy and counts[e] (may be NULL) the copies of
 * expert e; a bad expert id is prt_fatal naming `kernel`. */
void prt_moe_positions(int32_t *pos, int32_t *counts, const int32_t *ex, int64_t N, int64_t K,
                       int64_t E, int64_t G, const char *kernel);
/* First row and row count of local expert j in block s of `cap` rows; counts that overflow
 * the block are prt_fatal. */
void prt_moe_segment(const int32_t *counts, int64_t s, int64_t cap, int64_t El, int64_t j,
                     int64_t *first, int64_t *len, const char *kernel);
/* Rows of block s its El experts use. */
int64_t prt_moe_block_used(const int32_t *counts, int64_t s, int64_t El);

/* The vectorizable tanh GELU uses and the 1 + erf(u) of exact GELU (kernels/cpu.c), exposed
 * for their accuracy tests. */
float prt_tanh_approx(float u);
float prt_one_plus_erf_approx(float u);

/* The scalars of one AdamW update at the context's step, lr and flags, as prt_adamw computes
 * them (kernels/cpu.c); the GPU's update (kernels/cuda.c) takes the same ones. */
typedef struct {
  float beta1, beta2, eps; /* the plan's, or --adam-beta1/--adam-beta2/--adam-eps */
  float clip;              /* ctx->clip_scale: every gradient is multiplied by it */
  float keep;              /* 1 - lr * weight_decay (decoupled decay) */
  float one_minus_b1, one_minus_b2; /* 1 - beta in double, then rounded, as torch */
  float bc2_sqrt;          /* sqrt(1 - beta2^t) */
  float neg_step;          /* -lr / (1 - beta1^t) */
} prt_adam_scalars;
prt_adam_scalars prt_adam_scalars_of(const prt_ctx *ctx, float beta1, float beta2, float eps);

#endif
