/* The CPU attention kernels, forward + backward, at the bench GPT shapes: the dense baseline
 * (attention_dense.c, the T x T probabilities saved) against the blocked kernels of
 * libpiper_rt (one log-sum-exp per row saved), alternating in one run so machine noise hits
 * both alike. Prints one JSON line per (shape, kernel):
 *   {"B", "T", "H", "D", "impl", "fwd_ms", "bwd_ms", "saved_bytes"}  (medians of `reps`)
 * Usage: bench_attention T [reps] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "attention_dense.c"

void prt_attention_fwd(float *out, float *lse, const float *qkv, int64_t B, int64_t T,
                       int64_t C, int64_t H);
void prt_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                       const float *lse, int64_t B, int64_t T, int64_t C, int64_t H);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { MAX_REPS = 32 };

int main(int argc, char **argv) {
  int64_t T = argc > 1 ? atol(argv[1]) : 128;
  int reps = argc > 2 ? atoi(argv[2]) : 5;
  if (T <= 0 || reps <= 0 || reps > MAX_REPS) {
    fprintf(stderr, "usage: bench_attention T [reps 1..%d]\n", MAX_REPS);
    return 2;
  }
  const int64_t shapes[][3] = {{8, 256, 4}, {8, 512, 8}}; /* B, C, H of bench_gpt.py */
  for (size_t sh = 0; sh < 2; sh++) {
    int64_t B = shapes[sh][0], C = shapes[sh][1], H = shapes[sh][2];
    size_t n3 = (size_t)(B * T * 3 * C), n1 = (size_t)(B * T * C);
    float *qkv = malloc(n3 * sizeof(float)), *dqkv = malloc(n3 * sizeof(float));
    float *out = malloc(n1 * sizeof(float)), *dout = malloc(n1 * sizeof(float));
    float *probs = malloc((size_t)(B * H * T) * (size_t)T * sizeof(float));
    if (!qkv || !dqkv || !out || !dout || !probs) {
      fprintf(stderr, "bench_attention: out of memory at T %lld\n", (long long)T);
      return 1;
    }
    for (size_t i = 0; i < n3; i++) qkv[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
    for (size_t i = 0; i < n1; i++) dout[i] = (float)((i * 40503u) % 1000) / 1000.0f - 0.5f;
    prt_attn_shape s = {B, T, H, H, C / H, 3 * C, 3 * C, C};
    double t[2][2][MAX_REPS]; /* [impl][fwd, bwd][rep] */
    for (int r = 0; r < reps; r++)
      for (int impl = 0; impl < 2; impl++) {
        double t0 = now();
        if (impl == 0) dense_attn_fwd(&s, out, probs, qkv, qkv + C, qkv + 2 * C);
        else prt_attention_fwd(out, probs, qkv, B, T, C, H);
        double t1 = now();
        if (impl == 0)
          dense_attn_bwd(&s, dqkv, dqkv + C, dqkv + 2 * C, dout, qkv, qkv + C, qkv + 2 * C,
                         probs);
        else prt_attention_bwd(dqkv, dout, qkv, out, probs, B, T, C, H);
        t[impl][0][r] = (t1 - t0) * 1e3, t[impl][1][r] = (now() - t1) * 1e3;
      }
    for (int impl = 0; impl < 2; impl++) {
      qsort(t[impl][0], (size_t)reps, sizeof(double), cmp);
      qsort(t[impl][1], (size_t)reps, sizeof(double), cmp);
      long long saved = (long long)(B * H * T * 4) * (impl == 0 ? T : 1);
      printf("{\"B\": %lld, \"T\": %lld, \"C\": %lld, \"H\": %lld, \"impl\": \"%s\", "
             "\"fwd_ms\": %.3f, \"bwd_ms\": %.3f, \"saved_bytes\": %lld}\n",
             (long long)B, (long long)T, (long long)C, (long long)H,
             impl == 0 ? "dense" : "blocked", t[impl][0][reps / 2], t[impl][1][reps / 2],
             saved);
    }
    free(qkv), free(dqkv), free(out), free(dout), free(probs);
  }
  return 0;
}
