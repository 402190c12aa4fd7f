/* ZeRO shard geometry (include/piper/base/shard.h). */
#include "piper/base/shard.h"

#include "piper/checked.h"

int64_t pb_shard_size(int64_t n, int64_t R) {
  if (R < 1) R = 1;
  /* (n + R - 1) / R, without its overflow near INT64_MAX (and as before for n <= 0, which
   * callers' checks refuse: an unknown size is -1) */
  return n > 0 ? n / R + (n % R != 0) : (n + R - 1) / R;
}

int64_t pb_shard_len(int64_t n, int64_t c, int64_t k) {
  int64_t start;
  if (k < 0 || c < 0 || !piperMulI64(k, c, &start) || start >= n) return 0;
  return n - start < c ? n - start : c;
}

pb_shard pb_shard_of(int64_t n, int64_t R, int64_t k) {
  pb_shard s = {.n = n, .R = R < 1 ? 1 : R, .k = k};
  s.c = pb_shard_size(n, s.R);
  s.len = pb_shard_len(n, s.c, k);
  if (!piperMulI64(k, s.c, &s.offset)) s.offset = INT64_MAX;
  if (!piperMulI64(s.R, s.c, &s.padded)) s.padded = -1;
  return s;
}
