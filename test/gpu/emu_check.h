/* The test data and the comparison the GPU target's host-emulation tests share
 * (gpu_kernels_emu.c, cuda_host_emu.c): reproducible random arrays, all freed together at the
 * end (a sanitized build checks for leaks), and same(), which compares a GPU path's output
 * with the CPU kernel's and fails the current check of ../runtime/check.h. Static functions
 * and state, as in check.h, whose failure count same() adds to: one copy per test. */
#ifndef PIPER_TEST_GPU_EMU_CHECK_H
#define PIPER_TEST_GPU_EMU_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../runtime/check.h"

/* The xorshift state uni() advances; emuSetup seeds it, each test with its own seed, so
 * that a test's arrays (and so its measured differences) do not depend on the other's. */
static uint64_t rng;
/* What same()'s FAIL line calls the output checked and the CPU kernel's (emuSetup). */
static const char *emuGotName = "got", *emuWantName = "want";

/* Call first in main: the generator's seed and the two names of same()'s FAIL line. */
static void emuSetup(uint64_t seed, const char *gotName, const char *wantName) {
  rng = seed;
  emuGotName = gotName;
  emuWantName = wantName;
}

static float uni(void) { /* in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

/* Every test array, freed by emuFreeArrays at the end. */
enum { EMU_MAX_ARRAYS = 128 };
static void *arrays[EMU_MAX_ARRAYS];
static int narrays;

static float *track(float *p) {
  if (narrays == EMU_MAX_ARRAYS) {
    fprintf(stderr, "more than %d test arrays (EMU_MAX_ARRAYS in emu_check.h)\n",
            EMU_MAX_ARRAYS);
    exit(2);
  }
  return arrays[narrays++] = p;
}

/* n values uniform in [-scale, scale) */
static float *rnd(int64_t n, float scale) {
  float *p = track(malloc((size_t)n * sizeof *p));
  for (int64_t i = 0; i < n; i++) p[i] = scale * uni();
  return p;
}

static float *zeros(int64_t n) { return track(calloc((size_t)n, sizeof(float))); }

/* n (> 32) fp32 bit patterns for the bf16 conversions: first the cases a rounding rule gets
 * wrong (ties to even both ways, one past a tie, the largest finite fp32 and the last value
 * that rounds below inf, both infs, zeros of both signs, subnormals with a tie, NaNs whose
 * payload sits in either half and a negative NaN), then random 32-bit patterns: every
 * exponent, so subnormals, infs and NaNs come up again. */
static float *bf16Patterns(int64_t n) {
  static const uint32_t edge[] = {
      0x3f808000u, 0x3f818000u, 0x3f808001u, 0x3f817fffu, 0xbf808000u, 0xbf818000u,
      0x7f7fffffu, 0x7f7f7fffu, 0x7f7f8000u, 0xff7fffffu, 0x7f800000u, 0xff800000u,
      0x00000000u, 0x80000000u, 0x00008000u, 0x00018000u, 0x00000001u, 0x807fffffu,
      0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xffc00001u, 0x7f810000u, 0xff800001u,
      0x3f800000u, 0x3f7fffffu, 0x4b7fffffu, 0x33800000u, 0x00800000u, 0x007fffffu,
      0x407f8000u, 0x40ff8000u};
  enum { N_EDGE = sizeof edge / sizeof edge[0] };
  if (n < N_EDGE) {
    fprintf(stderr, "bf16Patterns: %lld patterns, fewer than its %d edge cases\n",
            (long long)n, N_EDGE);
    exit(2);
  }
  float *p = track(malloc((size_t)n * sizeof *p));
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = i < N_EDGE ? edge[i] : (uint32_t)(rng ^= rng << 13, rng ^= rng >> 7,
                                                   rng ^= rng << 17, rng >> 32);
    memcpy(&p[i], &u, sizeof u);
  }
  return p;
}

/* Called before a comparison reads a result, where a test defines it: cuda_host_emu.c waits
 * for the fake GPU there (its launchers only queue their work, as on a GPU). */
void emuBeforeRead(void) __attribute__((weak));

/* Whether n values are the same bits (NaNs included): prints how many differ, fails if any. */
static void sameBits(const char *what, const void *got, const void *want, int64_t n,
                     size_t size) {
  if (emuBeforeRead) emuBeforeRead();
  int64_t differ = 0, first = -1;
  for (int64_t i = 0; i < n; i++)
    if (memcmp((const char *)got + i * size, (const char *)want + i * size, size)) {
      if (first < 0) first = i;
      differ++;
    }
  printf("%s: %lld of %lld differ in a bit\n", what, (long long)differ, (long long)n);
  if (differ) fail("%s[%lld]: %s and %s differ in bits", what, (long long)first, emuGotName,
                   emuWantName);
}

static void emuFreeArrays(void) {
  for (int i = 0; i < narrays; i++) free(arrays[i]);
  narrays = 0;
}

/* Prints the largest difference of got from want, relative to max(1, |want|), and fails the
 * check if it is above tol (a NaN anywhere counts as infinite). */
static void same(const char *what, const float *got, const float *want, int64_t n, double tol) {
  if (emuBeforeRead) emuBeforeRead();
  double worst = 0;
  int64_t at = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]) / fmax(1.0, fabs((double)want[i]));
    if (!(d <= worst)) { /* NaN counts */
      worst = isnan(d) ? INFINITY : d;
      at = i;
    }
  }
  printf("%s: max rel diff %.3g (tol %.1g)\n", what, worst, tol);
  if (!(worst <= tol))
    fail("%s[%lld]: %s %.9g, %s %.9g", what, (long long)at, emuGotName, got[at], emuWantName,
         want[at]);
}

#endif
