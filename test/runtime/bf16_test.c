/* prt-bf16-test: the bf16 conversions of runtime/kernels/cpu_bf16.c.
 *
 * @hand: patterns derived by hand (each case's comment shows the arithmetic), so the check
 *   does not lean on the code under test: ties to even both ways, a carry into the exponent,
 *   overflow to inf, infinities, NaNs of both signs, subnormals, signed zero.
 * @round_is_narrow_widen: bf16_round(x) == widen(narrow(x)) bit for bit, and widen is exact.
 * Then, with `--dump FILE`, writes "input_bits narrow_bits" lines (hex) for the hand cases
 * and 100000 pseudo-random patterns (every exponent, with the dropped halves near ties
 * favoured) for test/runtime/bf16.test to check against torch.Tensor.bfloat16().
 * Exit code: the number of failed checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "piper/runtime.h"

typedef struct {
  uint32_t in;   /* fp32 bit pattern */
  uint16_t want; /* the bf16 bit pattern round-to-nearest-even gives */
} Case;

/* bf16 keeps the upper 16 bits; the dropped half d decides: d < 0x8000 down, d > 0x8000 up,
 * d == 0x8000 (a tie) to the even kept half. */
static const Case hand[] = {
    {0x3f800000u, 0x3f80u}, /* 1.0: d = 0, exact */
    {0x3f808000u, 0x3f80u}, /* 1 + 2^-8: tie, kept 0x3f80 is even: down */
    {0x3f818000u, 0x3f82u}, /* tie, kept 0x3f81 is odd: up to 0x3f82 */
    {0x3f807fffu, 0x3f80u}, /* just below the tie: down */
    {0x3f808001u, 0x3f81u}, /* just above the tie: up */
    {0xbf818000u, 0xbf82u}, /* the negative of the odd tie: away from zero by magnitude */
    {0x3fffc000u, 0x4000u}, /* 1.99...: d = 0xc000 up, 0x3fff + 1 carries into the exponent */
    {0x7f7fffffu, 0x7f80u}, /* FLT_MAX: up past the largest bf16 (0x7f7f): inf */
    {0x7f7f7fffu, 0x7f7fu}, /* below the tie at the largest bf16: stays finite */
    {0x7f800000u, 0x7f80u}, /* +inf */
    {0xff800000u, 0xff80u}, /* -inf */
    {0x7fc00000u, 0x7fc0u}, /* quiet NaN */
    {0x7f800001u, 0x7fc0u}, /* signalling NaN, payload only in the dropped half: a NaN, not inf */
    {0xffffffffu, 0x7fc0u}, /* negative NaN, all payload bits: would carry into the sign */
    {0x00000001u, 0x0000u}, /* smallest subnormal: d = 1, down to +0 */
    {0x00008000u, 0x0000u}, /* subnormal tie, kept 0 even: down */
    {0x00018000u, 0x0002u}, /* subnormal tie, kept 1 odd: up */
    {0x007fffffu, 0x0080u}, /* largest subnormal: up to the smallest normal 0x0080 */
    {0x80008001u, 0x8001u}, /* negative subnormal above the tie: up in magnitude */
    {0x80000000u, 0x8000u}, /* -0 keeps its sign */
};
enum { NHAND = sizeof hand / sizeof hand[0] };

static float asFloat(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static uint32_t asBits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static uint64_t rng = 7;
static uint32_t next32(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (uint32_t)(rng >> 32);
}

/* A random pattern; one in four has its dropped half within 2 of a tie. */
static uint32_t randomPattern(void) {
  uint32_t u = next32();
  if ((next32() & 3) == 0) u = (u & 0xffff0000u) | (0x7ffeu + (next32() % 5));
  return u;
}

static void checkHand(void) {
  begin("hand");
  for (int i = 0; i < NHAND; ++i) {
    float x = asFloat(hand[i].in);
    uint16_t got;
    prt_bf16_narrow(&got, &x, 1);
    if (got != hand[i].want)
      fail("narrow(0x%08x) = 0x%04x, expected 0x%04x", hand[i].in, got, hand[i].want);
  }
  end();
}

static void checkRound(void) {
  begin("round_is_narrow_widen");
  enum { N = 4096 };
  static float x[N], r[N], w[N];
  static uint16_t h[N];
  for (int i = 0; i < N; ++i) x[i] = asFloat(randomPattern());
  prt_bf16_narrow(h, x, N);
  prt_bf16_widen(w, h, N);
  prt_bf16_round(r, x, N);
  for (int i = 0; i < N; ++i) {
    if (asBits(w[i]) != (uint32_t)h[i] << 16)
      fail("widen(0x%04x) = 0x%08x, expected 0x%04x0000", h[i], asBits(w[i]), h[i]);
    if (asBits(r[i]) != asBits(w[i]))
      fail("round(0x%08x) = 0x%08x, narrow then widen gives 0x%08x", asBits(x[i]),
           asBits(r[i]), asBits(w[i]));
  }
  end();
}

/* The hand cases and random patterns with their narrowed bits, for the PyTorch check. */
static int dump(const char *path) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "prt-bf16-test: cannot write %s\n", path);
    return 1;
  }
  for (int i = 0; i < NHAND + 100000; ++i) {
    uint32_t u = i < NHAND ? hand[i].in : randomPattern();
    float x = asFloat(u);
    uint16_t h;
    prt_bf16_narrow(&h, &x, 1);
    fprintf(f, "%08x %04x\n", u, h);
  }
  return fclose(f) != 0;
}

int main(int argc, char **argv) {
  checkHand();
  checkRound();
  if (argc == 3 && !strcmp(argv[1], "--dump") && dump(argv[2])) failures++;
  return failures > 100 ? 100 : failures;
}
