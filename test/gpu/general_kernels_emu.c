/* The general tensor ops' GPU kernels (lowering/gpu_kernels_general.inc), checked without a
 * GPU as gpu_kernels_emu.c checks the others: each gpu.func rewritten for the host and
 * JIT-compiled (kernel_jit.h) runs once per thread index of its grid (a few past the end,
 * which must do nothing), and its output is compared with the CPU kernel it mirrors
 * (runtime/kernels/cpu_general.c, checked against PyTorch by test/frontend).
 *
 * Tolerances (relative to max(1, |CPU value|)): 0 where the GPU does the CPU's operations in
 * its order (binary, scalar and layout kernels, the f64 sums of sum_to and bmm against the
 * CPU's f64 sum... bmm's CPU is sgemm, summing in f32 blocks: 1e-6); 2e-6 where exp or tanh is
 * the helpers' polynomial on the GPU and libm on the CPU (exp, tanh, silu, softmax); 1e-6 for
 * the exact GELU, whose erf is a Chebyshev fit (fractional error 1.2e-7) against libm's erff;
 * 1e-6 for pow's quotients and roots (GCC may contract a multiply into an FMA in the CPU). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/piper.h"
#include "piper/runtime.h"
#include "prt_internal.h"
#include "emu_check.h"
#include "kernel_jit.h"

static MlirExecutionEngine jit;

static void *fn(const char *name) { return kernelJitFn(jit, name); }

enum { N = 6 * 35, EXTRA = 5 }; /* elements; threads past the end that must do nothing */

/* The kernels' host functions: the thread index, the kernel's arguments, its bf16 mask */
typedef void (*Binary)(int64_t, float *, const float *, const float *, int64_t, int64_t, int64_t,
                       int32_t);
typedef void (*Scalar)(int64_t, float *, const float *, float, int64_t, int32_t);
typedef void (*UnaryFwd)(int64_t, float *, const float *, int64_t, int32_t);
typedef void (*UnaryBwd)(int64_t, float *, const float *, const float *, int64_t, int32_t);
typedef void (*Strided)(int64_t, float *, const float *, int64_t, int64_t, int64_t, int64_t,
                        int64_t, int64_t, int64_t, int64_t, int32_t);

static void checkBinary(void) {
  static const struct {
    const char *name;
    void (*cpu)(float *, const float *, const float *, int64_t, int64_t, int64_t);
  } ops[] = {{"add_bcast", prt_add_bcast}, {"sub", prt_sub}, {"mul", prt_mul}, {"div", prt_div}};
  float *a = rnd(N, 3), *b = rnd(N, 3), *g = zeros(N), *w = zeros(N);
  for (int64_t i = 0; i < N; i++) b[i] += b[i] < 0 ? -0.5f : 0.5f; /* no division by ~0 */
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    char gpu[64];
    snprintf(gpu, sizeof gpu, "piper_%s", ops[k].name);
    Binary f = fn(gpu);
    /* both shapes, then b and a suffix-broadcast (35 and 6 elements cycled) */
    int64_t sizes[3][2] = {{N, N}, {N, 35}, {6, N}};
    for (int s = 0; s < 3; s++) {
      begin_on(ops[k].name, s == 0 ? "same shape" : s == 1 ? "b broadcast" : "a broadcast");
      for (int64_t i = 0; i < N + EXTRA; i++) f(i, g, a, b, N, sizes[s][0], sizes[s][1], 0);
      ops[k].cpu(w, a, b, N, sizes[s][0], sizes[s][1]);
      same(ops[k].name, g, w, N, 0);
      end();
    }
  }
}

static void checkScalarAndUnary(void) {
  float *x = rnd(N, 3), *pos = rnd(N, 1), *dy = rnd(N, 1), *g = zeros(N), *w = zeros(N);
  for (int64_t i = 0; i < N; i++) pos[i] = fabsf(pos[i]) + 0.25f; /* roots and quotients */
  static const float cs[] = {2.0f, 3.0f, 0.5f, -0.5f, -1.0f, 1.0f, 0.0f, -1.5f, -2.0f};
  begin("mul_scalar, add_scalar");
  Scalar ms = fn("piper_mul_scalar"), as = fn("piper_add_scalar");
  for (int64_t i = 0; i < N + EXTRA; i++) ms(i, g, x, -0.375f, N, 0);
  prt_mul_scalar(w, x, -0.375f, N);
  same("mul_scalar", g, w, N, 0);
  for (int64_t i = 0; i < N + EXTRA; i++) as(i, g, x, 1e-5f, N, 0);
  prt_add_scalar(w, x, 1e-5f, N);
  same("add_scalar", g, w, N, 0);
  end();
  Scalar pf = fn("piper_pow_scalar_fwd");
  void (*pb)(int64_t, float *, const float *, const float *, float, int64_t, int32_t) =
      fn("piper_pow_scalar_bwd");
  for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
    char label[32];
    snprintf(label, sizeof label, "exponent %g", cs[k]);
    begin_on("pow_scalar", label);
    for (int64_t i = 0; i < N + EXTRA; i++) pf(i, g, pos, cs[k], N, 0);
    prt_pow_scalar_fwd(w, pos, cs[k], N);
    same("pow_scalar_fwd", g, w, N, 1e-6);
    if (cs[k] != -1.5f && cs[k] != -2.0f) { /* the GPU's exponents (lowerScalar) */
      for (int64_t i = 0; i < N + EXTRA; i++) pb(i, g, dy, pos, cs[k], N, 0);
      prt_pow_scalar_bwd(w, dy, pos, cs[k], N);
      same("pow_scalar_bwd", g, w, N, 1e-6);
    }
    end();
  }
  static const struct {
    const char *name;
    void (*fwd)(float *, const float *, int64_t);
    void (*bwd)(float *, const float *, const float *, int64_t);
    int positive; /* the input must be > 0 */
    double tol;
  } ops[] = {{"exp", prt_exp_fwd, prt_exp_bwd, 0, 2e-6},
             {"tanh", prt_tanh_fwd, prt_tanh_bwd, 0, 2e-6},
             {"rsqrt", prt_rsqrt_fwd, prt_rsqrt_bwd, 1, 1e-6},
             {"silu", prt_silu_fwd, prt_silu_bwd, 0, 2e-6},
             {"gelu_erf", prt_gelu_erf_fwd, prt_gelu_erf_bwd, 0, 1e-6}};
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    char name[64];
    const float *in = ops[k].positive ? pos : x;
    begin(ops[k].name);
    snprintf(name, sizeof name, "piper_%s_fwd", ops[k].name);
    UnaryFwd f = fn(name);
    for (int64_t i = 0; i < N + EXTRA; i++) f(i, g, in, N, 0);
    ops[k].fwd(w, in, N);
    same(name, g, w, N, ops[k].tol);
    snprintf(name, sizeof name, "piper_%s_bwd", ops[k].name);
    UnaryBwd b = fn(name);
    for (int64_t i = 0; i < N + EXTRA; i++) b(i, g, dy, in, N, 0);
    ops[k].bwd(w, dy, in, N);
    same(name, g, w, N, ops[k].tol);
    end();
  }
}

static void checkMasks(void) {
  enum { R = 7, C = 9 };
  float *x = rnd(4 * R * C, 2), *g = zeros(4 * R * C), *w = zeros(4 * R * C);
  begin("triangle");
  void (*tri)(int64_t, float *, int64_t, int64_t, int64_t, float, float,
              int32_t) = fn("piper_triangle");
  for (int64_t d = -2; d <= 2; d++) {
    for (int64_t i = 0; i < R * C + EXTRA; i++) tri(i, g, R, C, d, 0.0f, -INFINITY, 0);
    prt_triangle(w, R, C, d, 0.0f, -INFINITY);
    sameBits("triangle", g, w, R * C, sizeof *g);
  }
  end();
  begin("masked_fill, fill");
  float *mask = zeros(R * C);
  prt_triangle(mask, R, C, 0, 0.0f, 1.0f);
  void (*mf)(int64_t, float *, const float *, const float *, float, int64_t, int64_t, int32_t) =
      fn("piper_masked_fill");
  for (int64_t i = 0; i < 4 * R * C + EXTRA; i++) mf(i, g, x, mask, -INFINITY, 4 * R * C, R * C, 0);
  prt_masked_fill(w, x, mask, -INFINITY, 4 * R * C, R * C);
  sameBits("masked_fill", g, w, 4 * R * C, sizeof *g);
  void (*fl)(int64_t, float *, float, int64_t, int32_t) = fn("piper_fill");
  for (int64_t i = 0; i < 4 * R * C + EXTRA; i++) fl(i, g, 0.25f, 4 * R * C, 0);
  prt_fill(w, 0.25f, 4 * R * C);
  sameBits("fill", g, w, 4 * R * C, sizeof *g);
  end();
}

/* The strided kernels on one 4-dim walk of x (2,3,4,5): a permutation (copy), its inverse
 * (place) and sums over dims 1 and 3 (strides of the (2,1,4,1) result: 0 on the summed). */
static void checkStrided(void) {
  enum { A = 2, Bd = 3, Cd = 4, D = 5, NX = A * Bd * Cd * D };
  float *x = rnd(NX, 2), *g = zeros(NX), *w = zeros(NX);
  int64_t n[4] = {Cd, A, D, Bd}, s[4] = {D, Bd * Cd * D, 1, Cd * D}; /* x permuted (2,0,3,1) */
  begin("strided_copy, strided_place");
  Strided cp = fn("piper_strided_copy"), pl = fn("piper_strided_place");
  for (int64_t i = 0; i < NX + EXTRA; i++)
    cp(i, g, x, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3], 0);
  prt_strided_copy(w, x, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3]);
  sameBits("strided_copy", g, w, NX, sizeof *g);
  float *gb = zeros(NX), *wb = zeros(NX);
  for (int64_t i = 0; i < NX + EXTRA; i++)
    pl(i, gb, w, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3], 0);
  prt_strided_place(wb, w, n[0], n[1], n[2], n[3], s[0], s[1], s[2], s[3]);
  sameBits("strided_place", gb, wb, NX, sizeof *gb);
  sameBits("strided_place undoes strided_copy", gb, x, NX, sizeof *gb);
  end();
  begin("strided_sum");
  void (*sm)(int64_t, float *, const float *, int64_t, int64_t, int64_t, int64_t, int64_t,
             int64_t, int64_t, int64_t, int64_t, int32_t) = fn("piper_strided_sum");
  int64_t out = A * Cd, ss[4] = {Cd, 0, 1, 0};
  for (int64_t i = 0; i < out + EXTRA; i++) sm(i, g, x, out, A, Bd, Cd, D, ss[0], ss[1], ss[2],
                                               ss[3], 0);
  prt_strided_sum(w, x, out, A, Bd, Cd, D, ss[0], ss[1], ss[2], ss[3]);
  sameBits("strided_sum dims 1, 3", g, w, out, sizeof *g);
  int64_t all[4] = {0, 0, 0, 0}; /* everything into one value */
  for (int64_t i = 0; i < 1 + EXTRA; i++) sm(i, g, x, 1, A, Bd, Cd, D, all[0], all[1], all[2],
                                             all[3], 0);
  prt_strided_sum(w, x, 1, A, Bd, Cd, D, all[0], all[1], all[2], all[3]);
  sameBits("strided_sum all", g, w, 1, sizeof *g);
  end();
}

static void checkSoftmaxAndBmm(void) {
  enum { O = 3, Nn = 7, I = 4, NS = O * Nn * I };
  float *x = rnd(NS, 4), *dy = rnd(NS, 1), *g = zeros(NS), *w = zeros(NS), *y = zeros(NS);
  static const struct {
    const char *name;
    void (*fwd)(float *, const float *, int64_t, int64_t, int64_t);
    void (*bwd)(float *, const float *, const float *, int64_t, int64_t, int64_t);
  } ops[] = {{"softmax", prt_softmax_fwd, prt_softmax_bwd},
             {"log_softmax", prt_log_softmax_fwd, prt_log_softmax_bwd}};
  for (size_t k = 0; k < 2; k++)
    for (int inner = 0; inner < 2; inner++) { /* the middle dim, then the last (inner 1) */
      int64_t o = inner ? O * Nn : O, n = inner ? I : Nn, in = inner ? 1 : I;
      char name[64];
      begin_on(ops[k].name, inner ? "last dim" : "middle dim");
      snprintf(name, sizeof name, "piper_%s_fwd", ops[k].name);
      void (*f)(int64_t, float *, const float *, int64_t, int64_t, int64_t, int32_t) = fn(name);
      for (int64_t i = 0; i < o * in + EXTRA; i++) f(i, g, x, o, n, in, 0);
      ops[k].fwd(w, x, o, n, in);
      same(name, g, w, NS, 2e-6);
      snprintf(name, sizeof name, "piper_%s_bwd", ops[k].name);
      void (*b)(int64_t, float *, const float *, const float *, int64_t, int64_t, int64_t,
                int32_t) =
          fn(name);
      memcpy(y, w, NS * sizeof *y);
      for (int64_t i = 0; i < o * in + EXTRA; i++) b(i, g, dy, y, o, n, in, 0);
      ops[k].bwd(w, dy, y, o, n, in);
      same(name, g, w, NS, 2e-6);
      end();
    }
  enum { BT = 3, M = 5, Nm = 4, K = 6 };
  float *a = rnd(BT * M * K, 1), *bb = rnd(BT * K * Nm, 1), *go = zeros(BT * M * Nm),
        *wo = zeros(BT * M * Nm);
  void (*bmm)(int64_t, float *, const float *, const float *, int64_t, int64_t, int64_t, int64_t,
              int32_t, int32_t, int32_t) = fn("piper_bmm");
  for (int32_t ta = 0; ta < 2; ta++)
    for (int32_t tb = 0; tb < 2; tb++) {
      char label[32];
      snprintf(label, sizeof label, "ta %d tb %d", ta, tb);
      begin_on("bmm", label);
      for (int64_t i = 0; i < BT * M * Nm + EXTRA; i++) bmm(i, go, a, bb, BT, M, Nm, K, ta, tb, 0);
      prt_bmm(wo, a, bb, BT, M, Nm, K, ta, tb);
      same("bmm", go, wo, BT * M * Nm, 1e-6);
      end();
    }
}

/* rope_angles: the gather from rope's host table (the launcher uploads prt_rope_table's) into
 * the rotate-half (N = D) and per-pair (N = D/2) layouts, cos and sin: bit for bit */
static void checkRopeAngles(void) {
  enum { T = 9, D = 8 };
  float *cs = zeros(2 * T * (D / 2)), *g = zeros(T * D), *w = zeros(T * D);
  prt_rope_table(cs, T, D, 10000.0f, 1.0);
  void (*ra)(int64_t, float *, const float *, int64_t, int64_t, int64_t, int64_t, int32_t) =
      fn("piper_rope_angles");
  for (int64_t N = D; N >= D / 2; N -= D / 2)
    for (int32_t sn = 0; sn < 2; sn++) {
      char label[32];
      snprintf(label, sizeof label, "N %lld %s", (long long)N, sn ? "sin" : "cos");
      begin_on("rope_angles", label);
      for (int64_t i = 0; i < T * N + EXTRA; i++) ra(i, g, cs, T, N, D, sn, 0);
      prt_rope_angles(w, T, N, D, 10000.0f, sn);
      sameBits("rope_angles", g, w, T * N, sizeof *g);
      end();
    }
}

int main(void) {
  (void)bf16Patterns; /* emu_check.h's, for the bf16 kernels: none here */
  emuSetup(0x2545f4914f6cdd1dull, "GPU kernel", "CPU kernel");
  jit = kernelJitCreate();
  checkBinary();
  checkScalarAndUnary();
  checkMasks();
  checkStrided();
  checkSoftmaxAndBmm();
  checkRopeAngles();
  kernelJitDestroy(jit);
  emuFreeArrays();
  printf("%d failed\n", failures);
  return failures;
}
