// What the GPU kernels' warp emulation tests share (attention_emu.cu, norm_emu.cu,
// flash_emu.cu, and flash_lanes.h for the fake runtime): a warp of WARP lanes run as threads
// started together (the kernels' exchanges are barriers among them), the test data's
// generator, and the comparison against the CPU kernels. Static, one copy per test.
#ifndef PIPER_TEST_GPU_LANES_EMU_H
#define PIPER_TEST_GPU_LANES_EMU_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

enum { WARP = 32 };

// Runs lane(&jobs[l]) for l = 0 .. WARP-1, each on its own thread, and waits for all of them.
template <class Job> static void lanes_run(void *(*lane)(void *), Job *jobs) {
  pthread_t th[WARP];
  for (int l = 0; l < WARP; l++)
    if (pthread_create(&th[l], NULL, lane, &jobs[l])) {
      fprintf(stderr, "cannot start lane threads\n");
      exit(2);
    }
  for (int l = 0; l < WARP; l++) pthread_join(th[l], NULL);
}

static int failures;
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
__attribute__((unused)) static float uni() { /* in [-1, 1) */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 8388608.0)) - 1.0f;
}

// The largest |got - want| over the largest |want| (a NaN: infinite), printed; counted as a
// failure above tol. Returns it.
__attribute__((unused)) static double same(const char *what, const float *got,
                                           const float *want, int64_t n, double tol) {
  double worst = 0, ref = 0;
  for (int64_t i = 0; i < n; i++) ref = fmax(ref, fabs((double)want[i]));
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]) / (ref > 0 ? ref : 1);
    if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
  }
  printf("%s: max diff / max |ref| %.3g (tol %.0e)\n", what, worst, tol);
  if (!(worst <= tol)) {
    printf("FAIL: %s\n", what);
    failures++;
  }
  return worst;
}

// Whether n values of `size` bytes are the same bits: prints how many differ, fails if any.
__attribute__((unused)) static void sameBits(const char *what, const void *got,
                                             const void *want, int64_t n, size_t size) {
  int64_t differ = 0;
  for (int64_t i = 0; i < n; i++)
    differ += memcmp((const char *)got + i * size, (const char *)want + i * size, size) != 0;
  printf("%s: %lld of %lld differ in a bit\n", what, (long long)differ, (long long)n);
  if (differ) {
    printf("FAIL: %s\n", what);
    failures++;
  }
}

#endif
