/* The machine's single-core fp32 matmul rate through OpenBLAS: the ceiling for a training step
 * whose FLOPs are almost all matmuls. Prints one JSON line per size:
 *   {"m": M, "n": N, "k": K, "gflops": G}  (best of `reps` runs, 2*M*N*K flops each) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
  const int sizes[][3] = {{1024, 1024, 1024}, {1024, 768, 256}, {1024, 256, 1024}};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    int M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
    float *a = malloc(sizeof(float) * M * K), *b = malloc(sizeof(float) * N * K),
          *c = malloc(sizeof(float) * M * N);
    for (long i = 0; i < (long)M * K; ++i) a[i] = (float)(i % 7) * 0.1f;
    for (long i = 0; i < (long)N * K; ++i) b[i] = (float)(i % 5) * 0.1f;
    double best = 1e30;
    for (int r = 0; r < 10; ++r) {
      double t0 = now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, c, N);
      double t = now() - t0;
      if (t < best) best = t;
    }
    printf("{\"m\": %d, \"n\": %d, \"k\": %d, \"gflops\": %.2f}\n", M, N, K,
           2.0 * M * N * K / best / 1e9);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
