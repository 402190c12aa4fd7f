/* ZeRO shard geometry, the one definition the compiler (verifier, replicate pass, memory
 * plan) and the runtime (a role's shard length at run time) share.
 *
 * A tensor of n elements over R replicas is cut into R shards of c = ceil(n / R) elements;
 * replica k holds elements [k * c, k * c + len) with len = min(c, n - k * c) clamped at 0
 * (when R does not divide n the last shards are short, or empty). A reduce-scatter or
 * all-gather buffer holds R whole shards: n plus R * c - n elements of padding.
 */
#ifndef PIPER_BASE_SHARD_H
#define PIPER_BASE_SHARD_H

#include <stdint.h>

/* Replica k's shard of an n-element tensor over R replicas. */
typedef struct pb_shard {
  int64_t n;      /* elements of the whole tensor, >= 0 */
  int64_t R;      /* replicas, >= 1 */
  int64_t k;      /* this replica, in [0, R) */
  int64_t c;      /* elements per shard: ceil(n / R) */
  int64_t offset; /* replica k's first element: k * c */
  int64_t len;    /* elements replica k holds: min(c, n - k * c), at least 0 */
  int64_t padded; /* R * c: a reduce-scatter or all-gather buffer; -1 if that overflows */
} pb_shard;

/* ceil(n / R) for n >= 0; R < 1 counts as 1 (callers verify R, but never divide by zero). */
int64_t pb_shard_size(int64_t n, int64_t R);
/* Elements replica k holds of an n-element tensor cut in shards of c: min(c, n - k * c),
 * clamped at 0. */
int64_t pb_shard_len(int64_t n, int64_t c, int64_t k);
/* Everything above for replica k (R < 1 counts as 1). */
pb_shard pb_shard_of(int64_t n, int64_t R, int64_t k);

#endif
