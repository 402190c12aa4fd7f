/* The costs piper-tune's simulation uses, and the profile file that holds them.
 *
 * Kernel time of a tdag op = fixedNs + nsPerWork * work, per op kind (PiperOpId), where work is
 * tuneWorkOf: multiply-adds x 2 for the matmul kinds, elements touched for the rest. Kinds
 * without an entry use their class's default. Transfer time = alphaNs + betaNsPerB * bytes per
 * kind and group size; a size without an entry uses the largest measured size below it, else
 * the default formula (ring algorithms: all_reduce moves 2(G-1)/G of the buffer, reduce_scatter,
 * all_gather and all_to_all (G-1)/G, a send its bytes).
 *
 * File (JSON, what --calibrate writes):
 *   {"piper_tune_profile": 1, "source": "...",
 *    "kernels": {"tdag.linear": [fixed_ns, ns_per_work], ...},
 *    "defaults": {"matmul": [fixed_ns, ns_per_work], "elementwise": [...]}, the rates of the
 *                kinds without an entry (AdamW, bucket packing, copies, the gradient norm),

 *    "comm": {"all_reduce": {"2": [alpha_ns, beta_ns_per_byte], ...}, ...}} */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"
#include "runtime/prt_attention.h"
#include "tune/tune.h"

const char *const tuneCommNames[TUNE_COMM_COUNT] = {"p2p", "all_reduce", "reduce_scatter",
                                                    "all_gather", "all_to_all"};

/* Built-in rough figures: ~40 GFLOP/s sgemm on one core, ~1 ns per element of a memory-bound
 * loop, 2 us a kernel call; Open MPI over shared memory ~10 us latency, ~4 GB/s. */
void tuneProfileDefault(TuneProfile *p) {
  memset(p, 0, sizeof *p);
  p->matmulDefault = (TuneKernelCost){2000, 0.025, true};
  p->elemDefault = (TuneKernelCost){2000, 1.0, true};
  snprintf(p->source, sizeof p->source, "built-in default (rough; run piper-tune --calibrate)");
}

static int64_t numel(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) ? piperTensorNumel(t) : 0;
}

static int64_t lastDim(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  int64_t r = mlirTypeIsARankedTensor(t) ? piperTensorRank(t) : 0;
  return r > 0 ? piperTensorDim(t, r - 1) : 1;
}

double tuneAttentionPairs(int64_t T) {
  /* runtime/kernels/cpu_attention.c: a block of PRT_ATTN_BQ queries from i0 meets every key
   * block that starts at or before its last query (scores above the diagonal inside a block
   * are computed, then masked), so it costs its rows times min(T, the keys up to the end of
   * the last such block). Up to one block this is the whole T x T; for long T about T^2 / 2. */
  double pairs = 0;
  for (int64_t i0 = 0; i0 < T; i0 += PRT_ATTN_BQ) {
    int64_t mq = T - i0 < PRT_ATTN_BQ ? T - i0 : PRT_ATTN_BQ;
    int64_t keyBlocks = (i0 + mq - 1) / PRT_ATTN_BK + 1;
    int64_t keys = keyBlocks * PRT_ATTN_BK < T ? keyBlocks * PRT_ATTN_BK : T;
    pairs += (double)mq * (double)keys;
  }
  return pairs;
}

/* K (experts per token) of the MoE layer `op` belongs to: the last dim of the expert ids a
 * tdag.moe_dispatch or moe_combine(_grad) of the same block takes (the experts ops do not
 * carry it); 0 when the plan holds none (a stage with experts but not its router). */
static int64_t moeTopK(MlirOperation op) {
  MlirBlock b = mlirOperationGetBlock(op);
  for (MlirOperation o = mlirBlockIsNull(b) ? (MlirOperation){NULL}
                                            : mlirBlockGetFirstOperation(b);
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    const PiperOpFacts *f = piperOpFacts(o);
    if (!f || (f->id != PIPER_TDAG_MOE_DISPATCH && f->id != PIPER_TDAG_MOE_COMBINE))
      continue;
    MlirValue ex = mlirOperationGetOperand(o, f->id == PIPER_TDAG_MOE_DISPATCH ? 1 : 2);
    return lastDim(ex);
  }
  return 0;
}

/* The experts op's shape: R rows of C, G groups, El local experts, Fe expert FFN dim; false
 * for a shape that is not the dialect's. */
static bool moeExpertShape(MlirOperation op, PiperOpId id, int64_t *R, int64_t *C, int64_t *G,
                           int64_t *El, int64_t *Fe) {
  MlirType rows = mlirValueGetType(
      mlirOperationGetOperand(op, id == PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT ? 1 : 0));
  if (!mlirTypeIsARankedTensor(rows) || piperTensorRank(rows) != 2) return false;
  *R = piperTensorDim(rows, 0), *C = piperTensorDim(rows, 1);
  *G = piperGetIntAttr(op, "groups", 1);
  if (*G < 1) *G = 1;
  if (id == PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT) { /* (dout, rows, counts(G*El), hidden, wd(C,Fe)) */
    *El = numel(mlirOperationGetOperand(op, 2)) / *G;
    *Fe = lastDim(mlirOperationGetOperand(op, 4));
  } else { /* (rows|dout, counts, [hidden,] gates(Fe,C) x El, ups x El, downs x El) */
    intptr_t first = id == PIPER_TDAG_MOE_EXPERTS ? 2 : 3;
    *El = (mlirOperationGetNumOperands(op) - first) / 3;
    *Fe = *El > 0 ? piperTensorDim(mlirValueGetType(mlirOperationGetOperand(op, first)), 0) : *C;
  }
  if (*El < 1) *El = 1;
  return true;
}

/* The op's R = G * cap rows (cap = N * min(K, El): room for the worst routing) hold
 * N*K*El/E routed copies a block, the fraction K / (G * min(K, El)) = max(1/G, K/E) of R:
 * under EP2 with K <= El half the rows are padding, and the kernels (prt_moe_segment) multiply
 * only each expert's counts[] rows. Tokens are taken as spread evenly over the E experts. */
double tuneMoeRoutedRows(MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  int64_t R, C, G, El, Fe;
  if (!f || !moeExpertShape(op, f->id, &R, &C, &G, &El, &Fe)) return 0;
  int64_t K = moeTopK(op), E = G * El;
  double frac = 1.0 / (double)G;
  if (K > 0 && (double)K / (double)E > frac) frac = (double)K / (double)E;
  return (double)R * frac;
}

/* Each routed row (C wide) through its expert's three (Fe,C) products, in each of the three
 * kernels (prt_moe_expert_*: three sgemms per expert): 2 * 3 * rows * Fe * C. The fused ops
 * (forward, grad_input) run all El local experts; grad_weight is one expert (`expert` = j):
 * its share, rows / El. */
static double moeExpertWork(MlirOperation op, PiperOpId id) {
  int64_t R, C, G, El, Fe;
  if (!moeExpertShape(op, id, &R, &C, &G, &El, &Fe))
    return (double)numel(mlirOperationGetOperand(op, 0));
  double routed = tuneMoeRoutedRows(op);
  if (id == PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT) routed /= (double)El;
  return 6.0 * routed * (double)C * (double)Fe;
}

double tuneWorkOf(MlirOperation op, bool *isMatmul) {
  const PiperOpFacts *f = piperOpFacts(op);
  *isMatmul = false;
  if (!f || f->kernel == PRT_K_NONE) return 0;
  intptr_t nIn = mlirOperationGetNumOperands(op), nOut = mlirOperationGetNumResults(op);
  switch (f->id) {
  case PIPER_TDAG_LINEAR:
  case PIPER_TDAG_MATMUL_NT: { /* x(M,K) w(N,K) */
    MlirValue x = mlirOperationGetOperand(op, 0), w = mlirOperationGetOperand(op, 1);
    *isMatmul = true;
    return 2.0 * (double)numel(x) * (double)piperTensorDim(mlirValueGetType(w), 0);
  }
  case PIPER_TDAG_LINEAR_GRAD_INPUT:  /* dout(M,N) w(N,K) */
  case PIPER_TDAG_LINEAR_GRAD_WEIGHT: /* dout(M,N) x(M,K) */ {
    MlirValue a = mlirOperationGetOperand(op, 0), b = mlirOperationGetOperand(op, 1);
    *isMatmul = true;
    return 2.0 * (double)numel(a) * (double)lastDim(b);
  }
  case PIPER_TDAG_ATTENTION:
  case PIPER_TDAG_ATTENTION_GRAD:
  case PIPER_TDAG_GQA_ATTENTION:
  case PIPER_TDAG_GQA_ATTENTION_GRAD: {
    /* QK^T and PV over the (query, key) pairs the blocked kernel computes: 4 B (H D) pairs
     * forward, twice that backward (tuneAttentionPairs) */
    MlirValue q = mlirOperationGetOperand(op, f->id == PIPER_TDAG_ATTENTION_GRAD ||
                                                      f->id == PIPER_TDAG_GQA_ATTENTION_GRAD
                                                  ? 1 : 0);
    MlirType t = mlirValueGetType(q);
    if (piperTensorRank(t) < 3) return (double)numel(q);
    double B = (double)piperTensorDim(t, 0);
    double HD = (double)piperTensorDim(t, 2);
    if (f->id == PIPER_TDAG_ATTENTION || f->id == PIPER_TDAG_ATTENTION_GRAD) HD /= 3; /* qkv */
    bool grad = f->id == PIPER_TDAG_ATTENTION_GRAD || f->id == PIPER_TDAG_GQA_ATTENTION_GRAD;
    *isMatmul = true;
    return (grad ? 8.0 : 4.0) * B * tuneAttentionPairs(piperTensorDim(t, 1)) * HD;
  }
  case PIPER_TDAG_MOE_EXPERTS:
  case PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT:
  case PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT:
    *isMatmul = true;
    return moeExpertWork(op, f->id);
  case PIPER_TDAG_MOE_DISPATCH:
  case PIPER_TDAG_MOE_DISPATCH_GRAD:
  case PIPER_TDAG_MOE_COMBINE:
  case PIPER_TDAG_MOE_COMBINE_GRAD: {
    /* the routed copies: N*K rows of C moved one by one (prt_moe_dispatch_*, combine_*). Not
     * the elements of the R-row buffer: it is cleared at memset speed, and under EP half of it
     * is padding that no copy touches (counted, EP2's dispatch and combine were predicted
     * 1.2-1.7x what they take, measured with --explain) */
    int ex = f->id == PIPER_TDAG_MOE_DISPATCH || f->id == PIPER_TDAG_MOE_DISPATCH_GRAD ? 1
             : f->id == PIPER_TDAG_MOE_COMBINE ? 2 : 3;
    int64_t C = lastDim(mlirOperationGetResult(op, 0)); /* rows, dh, y, dout: all (.., C) */
    return (double)numel(mlirOperationGetOperand(op, ex)) * (double)C;
  }
  case PIPER_TDAG_ADAMW: { /* (p, g, m, v) over this replica's ZeRO shard of p, in place */
    double n = (double)numel(mlirOperationGetOperand(op, 0));
    int64_t shards = piperGetIntAttr(op, "shards", 1);
    return 4.0 * ceil(n / (double)(shards > 1 ? shards : 1));
  }
  case PIPER_TDAG_PACK_INTO: /* (bucket, grad): copies grad into the bucket, in place */
    return 2.0 * (double)numel(mlirOperationGetOperand(op, 1));
  default: {
    double elems = 0;
    for (intptr_t i = 0; i < nIn; ++i) elems += (double)numel(mlirOperationGetOperand(op, i));
    for (intptr_t i = 0; i < nOut; ++i) elems += (double)numel(mlirOperationGetResult(op, i));
    return elems;
  }
  }
}

double tuneKernelNs(const TuneProfile *p, MlirOperation op) {
  bool mm;
  double work = tuneWorkOf(op, &mm);
  if (work <= 0) return 0;
  const PiperOpFacts *f = piperOpFacts(op);
  const TuneKernelCost *c = f && p->kernel[f->id].set ? &p->kernel[f->id]
                            : mm ? &p->matmulDefault : &p->elemDefault;
  return c->fixedNs + c->nsPerWork * work;
}

double tuneElementwiseNs(const TuneProfile *p, double elements) {
  return elements > 0 ? p->elemDefault.fixedNs + p->elemDefault.nsPerWork * elements : 0;
}

double tuneCopyNs(const TuneProfile *p, double elements) {
  return tuneElementwiseNs(p, 2 * elements); /* read and written: two elements touched each */
}

double tuneCommNs(const TuneProfile *p, TuneCommKind kind, int groupSize, double bytes) {
  int g = groupSize < 1 ? 1 : groupSize > TUNE_MAX_GROUP ? TUNE_MAX_GROUP : groupSize;
  if (kind == TUNE_P2P) g = 2;
  for (int k = g; k >= 2; --k)
    if (p->comm[kind][k].set) {
      const TuneCommCost *c = &p->comm[kind][k];
      double scale = kind == TUNE_P2P ? 1 : (double)(g - 1) / g * k / (k - 1);
      return c->alphaNs * (g > k ? log2(g) / log2(k) : 1) + c->betaNsPerB * bytes * scale;
    }
  if (groupSize <= 1 && kind != TUNE_P2P) return 0;
  double f = kind == TUNE_P2P ? 1 : kind == TUNE_ALL_REDUCE ? 2.0 * (g - 1) / g : (double)(g - 1) / g;
  return 10000.0 * (kind == TUNE_P2P ? 1 : ceil(log2(g))) + 0.25 * f * bytes;
}

/* ---- the file ---- */

bool tuneProfileWrite(const TuneProfile *p, FILE *out) {
  fprintf(out, "{\"piper_tune_profile\": 1, \"source\": \"%s\",\n \"kernels\": {", p->source);
  size_t n = 0;
  const PiperOpFacts *rows = piperOpFactsTable(&n);
  bool first = true;
  for (size_t i = 0; i < n; ++i)
    if (p->kernel[rows[i].id].set) {
      fprintf(out, "%s\n  \"%s\": [%.6g, %.6g]", first ? "" : ",", rows[i].name,
              p->kernel[rows[i].id].fixedNs, p->kernel[rows[i].id].nsPerWork);
      first = false;
    }
  fprintf(out, "},\n \"defaults\": {\"matmul\": [%.6g, %.6g], \"elementwise\": [%.6g, %.6g]},",
          p->matmulDefault.fixedNs, p->matmulDefault.nsPerWork, p->elemDefault.fixedNs,
          p->elemDefault.nsPerWork);
  fprintf(out, "\n \"comm\": {");
  first = true;
  for (int k = 0; k < TUNE_COMM_COUNT; ++k) {
    bool any = false;
    for (int g = 2; g <= TUNE_MAX_GROUP; ++g) {
      if (!p->comm[k][g].set) continue;
      if (!any) fprintf(out, "%s\n  \"%s\": {", first ? "" : ",", tuneCommNames[k]);
      fprintf(out, "%s\"%d\": [%.6g, %.6g]", any ? ", " : "", g, p->comm[k][g].alphaNs,
              p->comm[k][g].betaNsPerB);
      any = true, first = false;
    }
    if (any) fputc('}', out);
  }
  fprintf(out, "}}\n");
  return !ferror(out);
}

/* A minimal JSON reader for the profile: objects, arrays, numbers, strings (no escapes but
 * \" and \\), true/false/null skipped. Errors name the byte offset. */
typedef struct {
  const char *s, *at; /* text, cursor */
  const char *path;
  bool failed;
} Reader;

static void fail(Reader *r, const char *what) {
  if (!r->failed)
    fprintf(stderr, "piper-tune: error: %s: %s at byte %ld; a profile is what piper-tune "
                    "--calibrate -o FILE writes\n", r->path, what, (long)(r->at - r->s));
  r->failed = true;
}

static void ws(Reader *r) {
  while (*r->at == ' ' || *r->at == '\n' || *r->at == '\t' || *r->at == '\r') r->at++;
}

static bool eat(Reader *r, char c) {
  ws(r);
  if (*r->at != c) return false;
  r->at++;
  return true;
}

/* A string into buf (cut to size); false at anything else. */
static bool str(Reader *r, char *buf, size_t size) {
  if (!eat(r, '"')) return fail(r, "expected a string"), false;
  size_t n = 0;
  for (; *r->at && *r->at != '"'; r->at++) {
    if (*r->at == '\\' && r->at[1]) r->at++;
    if (n + 1 < size) buf[n++] = *r->at;
  }
  buf[n] = '\0';
  if (!eat(r, '"')) return fail(r, "unterminated string"), false;
  return true;
}

static bool num(Reader *r, double *out) {
  ws(r);
  char *end;
  *out = strtod(r->at, &end);
  if (end == r->at || !isfinite(*out)) return fail(r, "expected a number"), false;
  r->at = end;
  return true;
}

/* [a, b] with both >= 0 */
static bool pair(Reader *r, double *a, double *b) {
  if (!eat(r, '[') || !num(r, a) || !eat(r, ',') || !num(r, b) || !eat(r, ']'))
    return fail(r, "expected [fixed, per-unit], two numbers"), false;
  if (*a < 0 || *b < 0) return fail(r, "a cost is negative"), false;
  return true;
}

static void skipValue(Reader *r) {
  ws(r);
  char c = *r->at;
  if (c == '"') {
    char tmp[2];
    str(r, tmp, sizeof tmp);
  } else if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    r->at++;
    if (eat(r, close)) return;
    do {
      if (c == '{') {
        char tmp[2];
        if (!str(r, tmp, sizeof tmp) || !eat(r, ':')) return fail(r, "expected \"key\":");
      }
      skipValue(r);
    } while (!r->failed && eat(r, ','));
    if (!eat(r, close)) fail(r, "unclosed object or array");
  } else if (!strncmp(r->at, "true", 4) || !strncmp(r->at, "null", 4)) {
    r->at += 4;
  } else if (!strncmp(r->at, "false", 5)) {
    r->at += 5;
  } else {
    double d;
    num(r, &d);
  }
}

bool tuneProfileRead(TuneProfile *p, const char *path) {
  size_t len;
  char *text = piperReadInput(path, &len);
  if (!text) return false;
  Reader r = {text, text, path, false};
  char key[128];
  if (!eat(&r, '{')) fail(&r, "expected '{'");
  bool versioned = false, sourced = false;
  while (!r.failed && !eat(&r, '}')) {
    if (!str(&r, key, sizeof key) || !eat(&r, ':')) {
      fail(&r, "expected \"key\":");
      break;
    }
    if (!strcmp(key, "piper_tune_profile")) {
      double v;
      if (num(&r, &v) && v != 1) fail(&r, "unknown profile version (this piper-tune reads 1)");
      versioned = true;
    } else if (!strcmp(key, "source")) {
      str(&r, p->source, sizeof p->source);
      sourced = true;
    } else if (!strcmp(key, "kernels")) {
      if (!eat(&r, '{')) fail(&r, "\"kernels\" must be an object");
      while (!r.failed && !eat(&r, '}')) {
        double a, b;
        if (!str(&r, key, sizeof key) || !eat(&r, ':') || !pair(&r, &a, &b)) break;
        const PiperOpFacts *f = piperOpFactsByName(piperStr(key));
        if (!f) {
          fail(&r, "unknown op in \"kernels\"");
          break;
        }
        p->kernel[f->id] = (TuneKernelCost){a, b, true};
        eat(&r, ',');
      }
    } else if (!strcmp(key, "defaults")) { /* the class rates of kinds without their own */
      if (!eat(&r, '{')) fail(&r, "\"defaults\" must be an object");
      while (!r.failed && !eat(&r, '}')) {
        double a, b;
        if (!str(&r, key, sizeof key) || !eat(&r, ':') || !pair(&r, &a, &b)) break;
        bool mm = !strcmp(key, "matmul");
        if (!mm && strcmp(key, "elementwise")) {
          fail(&r, "unknown class in \"defaults\" (matmul, elementwise)");
          break;
        }
        *(mm ? &p->matmulDefault : &p->elemDefault) = (TuneKernelCost){a, b, true};
        eat(&r, ',');
      }
    } else if (!strcmp(key, "comm")) {
      if (!eat(&r, '{')) fail(&r, "\"comm\" must be an object");
      while (!r.failed && !eat(&r, '}')) {
        if (!str(&r, key, sizeof key) || !eat(&r, ':') || !eat(&r, '{')) {
          fail(&r, "expected \"kind\": {\"group size\": [alpha, beta], ...}");
          break;
        }
        int k = 0;
        while (k < TUNE_COMM_COUNT && strcmp(key, tuneCommNames[k])) ++k;
        if (k == TUNE_COMM_COUNT) {
          fail(&r, "unknown transfer kind in \"comm\" (p2p, all_reduce, reduce_scatter, "
                   "all_gather, all_to_all)");
          break;
        }
        while (!r.failed && !eat(&r, '}')) {
          char gs[16];
          double a, b;
          if (!str(&r, gs, sizeof gs) || !eat(&r, ':') || !pair(&r, &a, &b)) break;
          int g = atoi(gs);
          if (g < 2 || g > TUNE_MAX_GROUP) {
            fail(&r, "a group size must be 2..64");
            break;
          }
          p->comm[k][g] = (TuneCommCost){a, b, true};
          eat(&r, ',');
        }
        eat(&r, ',');
      }
    } else {
      skipValue(&r);
    }
    eat(&r, ',');
  }
  if (!r.failed && !versioned) fail(&r, "no \"piper_tune_profile\": 1 field");
  free(text);
  if (!sourced) p->source[0] = '\0'; /* not the built-in default's: the file's own figures */
  if (!r.failed && !strstr(p->source, path)) {
    size_t n = strlen(p->source);
    snprintf(p->source + n, sizeof p->source - n, n ? " (%s)" : "%s", path);
  }
  return !r.failed;
}
