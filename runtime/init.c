/* Parameter init without a checkpoint: PRT_INIT_NORMAL draws normal(0, 0.02), ZEROS and
 * ONES fill constants. Optimizer state, inputs and outputs stay as allocated (zero).
 *
 * The normal generator, exactly (so another implementation can reproduce it bit for bit
 * up to the final libm log/sqrt/cos/sin, which are correctly rounded in practice):
 *
 *   h = fnv1a64(name):  h = 0xcbf29ce484222325; for each byte c of name (no NUL):
 *                         h = (h ^ c) * 0x100000001b3              (mod 2^64)
 *   state = seed ^ h                                                (uint64)
 *   next(): splitmix64 -- state += 0x9e3779b97f4a7c15;
 *                         z = state;
 *                         z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
 *                         z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
 *                         return z ^ (z >> 31)
 *   uniform(): u = ((next() >> 11) + 1) * 2^-53                     (double in (0, 1])
 *   for i = 0, 2, 4, ... < n:            (Box-Muller, in double)
 *       u1 = uniform(); u2 = uniform();
 *       r = sqrt(-2 * log(u1)); a = 2 * pi * u2;
 *       out[i] = (float)(std * r * cos(a)); out[i+1] = (float)(std * r * sin(a)) if i+1 < n
 *
 * In Python (numpy-free):
 *   M = 2**64 - 1
 *   h = 0xcbf29ce484222325
 *   for c in name.encode(): h = ((h ^ c) * 0x100000001b3) & M
 *   state = seed ^ h
 *   def nxt():
 *       global state
 *       state = (state + 0x9e3779b97f4a7c15) & M
 *       z = state
 *       z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M
 *       z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M
 *       return z ^ (z >> 31)
 *   u = ((nxt() >> 11) + 1) * 2.0**-53
 *
 * The state after d draws is (seed ^ h) + d * 0x9e3779b97f4a7c15, so a shard (elements
 * [offset, offset + n) of the full tensor) jumps straight to its first pair and draws
 * exactly the values the full tensor has there.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_init.h"

static uint64_t prt_fnv1a64(const char *s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    h ^= *p;
    h *= 0x100000001b3ull;
  }
  return h;
}

static uint64_t prt_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* A double in (0, 1]: never 0, so log() below is finite. */
static double prt_uniform(uint64_t *state) {
  return (double)((prt_splitmix64(state) >> 11) + 1) * 0x1.0p-53;
}

void prt_init_normal_range(float *out, int64_t begin, int64_t n, uint64_t seed,
                           const char *name, double std) {
  /* Element i comes from draws 2*(i/2) and 2*(i/2)+1 (cos for even i, sin for odd), and the
   * generator's state after d draws is (seed ^ h) + d * increment: jump to the first pair. */
  int64_t pair = begin / 2;
  uint64_t state = (seed ^ prt_fnv1a64(name)) + (uint64_t)(2 * pair) * 0x9e3779b97f4a7c15ull;
  const double two_pi = 6.283185307179586476925286766559;
  for (int64_t i = 2 * pair; i < begin + n; i += 2) {
    double u1 = prt_uniform(&state);
    double u2 = prt_uniform(&state);
    double r = sqrt(-2.0 * log(u1));
    double a = two_pi * u2;
    if (i >= begin) out[i - begin] = (float)(std * r * cos(a));
    if (i + 1 < begin + n) out[i + 1 - begin] = (float)(std * r * sin(a));
  }
}

void prt_init_normal(float *out, int64_t n, uint64_t seed, const char *name, double std) {
  prt_init_normal_range(out, 0, n, seed, name, std);
}

void prt_init_params(prt_ctx *ctx, uint64_t seed) {
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind != PRT_PARAM) continue;
    size_t bytes = (size_t)t->numel * sizeof(float);
    float *p =
        prt_host_view_begin(ctx->backend->device, t->data, bytes, PRT_VIEW_WRITE, t->name);
    switch (t->init) {
    case PRT_INIT_NORMAL:
      /* each run of the full tensor held here (a tensor-parallel slice has several) */
      for (int64_t j = 0, full, run; j < t->numel; j += run) {
        run = prt_tensor_run(t, j, &full);
        prt_init_normal_range(p + j, full, run, seed, t->name, 0.02);
      }
      break;
    case PRT_INIT_ZEROS: memset(p, 0, (size_t)t->numel * sizeof(float)); break;
    case PRT_INIT_ONES:
      for (int64_t k = 0; k < t->numel; k++) p[k] = 1.0f;
      break;
    case PRT_INIT_BUFFER:
      prt_fatal("'%s' is a buffer (non-trained state) whose values only a checkpoint holds: "
                "run with --init-checkpoint FILE (the weights piper.export wrote)", t->name);
    }
    prt_host_view_end(ctx->backend->device, t->data, p, bytes, PRT_VIEW_WRITE, t->name);
  }
  prt_bf16_copies_refresh(ctx); /* and the bf16 copies of the new values */
}

void prt_declare_init_checkpoint(prt_ctx *ctx, const char *path) {
  free(ctx->export_weights);
  size_t n = strlen(path) + 1;
  ctx->export_weights = memcpy(prt_xmalloc(n, "the export's weights file name"), path, n);
}
