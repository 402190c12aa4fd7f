/* Checked integers and growable tables: the one helper every reader of outside input uses.
 *
 * Sizes, counts, ids and offsets come from files a user (or an attacker) wrote: IR attributes,
 * strategy JSON, checkpoint headers, flags. Each such number is converted with a range check,
 * and each product or sum of them is checked for overflow, so a hostile value ends in a
 * diagnostic instead of a negative index or a wrapped allocation size. Tables that such input
 * can fill grow with piperGrow instead of having a fixed size.
 *
 * Header-only (static inline) so the compiler and the runtime, which link nothing in common,
 * share one definition. */
#ifndef PIPER_CHECKED_H
#define PIPER_CHECKED_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* *out = a + b; false (and *out unspecified) on int64 overflow. */
static inline bool piperAddI64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}

/* *out = a * b; false on int64 overflow. */
static inline bool piperMulI64(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/* *out = a * b for sizes; false on size_t overflow. */
static inline bool piperMulSize(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}

/* A number read as a double (JSON) that must be an integer in [lo, hi]. NaN, infinities,
 * fractions and values outside the range are refused: 1e19 is not INT64_MIN, 2^63 is not -1. */
static inline bool piperDoubleToI64(double d, int64_t lo, int64_t hi, int64_t *out) {
  /* -2^63 and 2^63 are exact doubles; every double in [-2^63, 2^63) converts exactly */
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return false;
  int64_t v = (int64_t)d;
  if ((double)v != d || v < lo || v > hi) return false;
  *out = v;
  return true;
}

/* The whole of `s` as a decimal integer in [lo, hi]; false for empty text, trailing junk,
 * overflow or a value outside the range. */
static inline bool piperParseI64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!s || !*s) return false;
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno == ERANGE || end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = (int64_t)v;
  return true;
}

/* Makes room for at least `need` elements of `elemSize` bytes in the heap array *items of
 * capacity *cap (doubling). Returns false, leaving *items and *cap as they were, if the size
 * overflows or memory runs out. */
static inline bool piperGrow(void **items, size_t *cap, size_t need, size_t elemSize) {
  if (need <= *cap) return true;
  size_t newCap = *cap ? *cap : 8;
  while (newCap < need) {
    if (newCap > SIZE_MAX / 2) return false;
    newCap *= 2;
  }
  size_t bytes;
  if (!piperMulSize(newCap, elemSize, &bytes)) return false;
  void *p = realloc(*items, bytes);
  if (!p) return false;
  *items = p;
  *cap = newCap;
  return true;
}

#endif
