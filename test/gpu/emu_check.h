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

static void emuFreeArrays(void) {
  for (int i = 0; i < narrays; i++) free(arrays[i]);
  narrays = 0;
}

/* Prints the largest difference of got from want, relative to max(1, |want|), and fails the
 * check if it is above tol (a NaN anywhere counts as infinite). */
static void same(const char *what, const float *got, const float *want, int64_t n, double tol) {
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
