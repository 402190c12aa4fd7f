/* Parameter init (init.c): every parameter from (seed, name), so every strategy starts from
 * the same weights. */
#ifndef PIPER_PRT_INIT_H
#define PIPER_PRT_INIT_H

#include "prt_ctx.h"

/* Fills every PRT_PARAM by its init kind; PRT_INIT_NORMAL uses prt_init_normal. A shard gets
 * its slice of the full tensor, so every rank agrees without communication. */
void prt_init_params(prt_ctx *ctx, uint64_t seed);
/* out[0..n) = std * normal(0, 1) from the generator seeded by (seed, name); see init.c for
 * the exact algorithm. */
void prt_init_normal(float *out, int64_t n, uint64_t seed, const char *name, double std);
/* out[0..n) = elements [begin, begin + n) of what prt_init_normal draws for a longer n, without
 * drawing the first `begin` (the generator is a counter: it jumps). */
void prt_init_normal_range(float *out, int64_t begin, int64_t n, uint64_t seed,
                           const char *name, double std);

#endif
