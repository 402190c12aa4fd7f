/* piper-tune --calibrate: measures the costs of tune/profile.c on this machine.
 *
 * Kernels: every distinct (op kind, shape) of the model's training graph runs through its
 * libpiper_rt CPU kernel, with the arguments lower_compute.c passes, at 1/4, 1/2 and all of
 * its rows (batch rows, tokens, or routed expert rows), the best of 11 runs each; time = fixed
 * + ns_per_work * work (tuneWorkOf's form for the kind: flops of the blocked causal attention,
 * of the routed expert rows, elements touched) is then fitted per op kind by least squares
 * over those points. Every kind of the GPT, Qwen3 and Qwen3-MoE graphs has a caller (GPT's,
 * Qwen3's RMSNorm, RoPE, SwiGLU, GQA attention, embed, and MoE's top-k, dispatch, experts,
 * combine, with their gradients); MoE ops run on an even routing (token n's k-th expert is
 * (n + k) mod E), the one the cost model assumes. AdamW runs through prt_adamw on an empty
 * runtime context at three sizes. A kind without a caller (tdag.output; --verbose names it)
 * keeps the class default: the mean of the measured add and gelu (elementwise) or matmul
 * kinds' fits, written to the profile's "defaults" (the rate of bucket packing, copies and
 * the gradient norm's sums too).
 * Transfers: under mpirun with 2+ ranks, ping-pong between ranks 0 and 1 (p2p) and each
 * collective over all ranks at 4 KB, 128 KB and 1 MB; alpha and beta fitted per kind at that
 * group size. Ranks measure transfers first, together; then rank 0 alone times the kernels
 * (the others have finished MPI and exited, so they do not spin on the cores). */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"
#include "piper/runtime.h"
#include "tune/tune.h"

static double nowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* ---- transfers ---- */

static double timeComm(TuneCommKind kind, float *a, float *b, int count, int rank, int size,
                       int reps) {
  /* the best of `reps` barrier-separated runs: on a shared machine a run descheduled midway
   * says more about the other jobs than about the transfer */
  double best = INFINITY;
  for (int r = 0; r < reps; ++r) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request req = MPI_REQUEST_NULL;
    double t0 = nowNs();
    switch (kind) {
    case TUNE_P2P:
      if (rank == 0) {
        MPI_Send(a, count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(b, count, MPI_FLOAT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else if (rank == 1) {
        MPI_Recv(b, count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(a, count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
      }
      break;
    /* the nonblocking collectives runtime/comm/mpi.c issues, waited for at once */
    case TUNE_ALL_REDUCE:
      MPI_Iallreduce(a, b, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
      break;
    case TUNE_REDUCE_SCATTER:
      MPI_Ireduce_scatter_block(a, b, count / size, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req);
      break;
    case TUNE_ALL_GATHER:
      MPI_Iallgather(a, count / size, MPI_FLOAT, b, count / size, MPI_FLOAT, MPI_COMM_WORLD,
                     &req);
      break;
    case TUNE_ALL_TO_ALL:
      MPI_Ialltoall(a, count / size, MPI_FLOAT, b, count / size, MPI_FLOAT, MPI_COMM_WORLD,
                    &req);
      break;
    case TUNE_COMM_COUNT: break;
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    double t = nowNs() - t0;
    best = t < best ? t : best;
  }
  double t = best;
  if (kind == TUNE_P2P) t /= 2; /* one way */
  double worst = t; /* a collective ends for all when the slowest rank is done */
  MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

/* Least squares y = a + b x over n points; a and b clamped at >= 0. */
static void fit(const double *x, const double *y, int n, double *a, double *b) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; ++i) sx += x[i], sy += y[i], sxx += x[i] * x[i], sxy += x[i] * y[i];
  double den = n * sxx - sx * sx;
  *b = den > 0 ? (n * sxy - sx * sy) / den : (sx > 0 ? sy / sx : 0);
  if (*b < 0) *b = 0;
  *a = (sy - *b * sx) / n;
  if (*a < 0) {
    *a = 0;
    *b = sxx > 0 ? sxy / sxx : 0;
  }
}

static void calibrateComm(TuneProfile *p, int rank, int size, bool verbose) {
  enum { SIZES = 3 };
  const int counts[SIZES] = {1024, 32768, 262144}; /* floats: 4 KB, 128 KB, 1 MB (a bucket) */
  int maxCount = counts[SIZES - 1];
  float *a = calloc((size_t)maxCount, sizeof *a), *b = calloc((size_t)maxCount, sizeof *b);
  for (int k = 0; k < TUNE_COMM_COUNT; ++k) {
    double x[SIZES], y[SIZES];
    for (int s = 0; s < SIZES; ++s) {
      int count = counts[s] / size * size;
      timeComm((TuneCommKind)k, a, b, count, rank, size, 2); /* warm the path */
      x[s] = 4.0 * count;
      /* best of 40: on a loaded machine a run where either rank was descheduled is slow, and
       * 10 runs of the 1 MB size left betas 80x too high (18.8 ns/B measured, 0.24 quiet) */
      y[s] = timeComm((TuneCommKind)k, a, b, count, rank, size, 40);
      if (verbose && rank == 0)
        fprintf(stderr, "calibrate: %-14s %d ranks %9.0f B %10.1f us\n", tuneCommNames[k],
                k == TUNE_P2P ? 2 : size, x[s], y[s] / 1e3);
    }
    int g = k == TUNE_P2P ? 2 : size < TUNE_MAX_GROUP ? size : TUNE_MAX_GROUP;
    double alpha, beta;
    fit(x, y, SIZES, &alpha, &beta);
    p->comm[k][g] = (TuneCommCost){alpha, beta, true};
  }
  free(a), free(b);
}

/* ---- kernels ---- */

static int64_t dim(MlirValue v, int64_t i) {
  MlirType t = mlirValueGetType(v);
  int64_t r = piperTensorRank(t);
  return piperTensorDim(t, i < 0 ? r + i : i);
}
static int64_t elems(MlirValue v) { return piperTensorNumel(mlirValueGetType(v)); }

/* The kernel callers below each know one model family's kinds: they run op's kernel on `frac`
 * of its rows (batch rows, tokens or routed rows) with the buffers `in`/`out` (full size,
 * zeroed but for what fillInputs writes) and the arguments lower_compute.c passes, and return
 * false for a kind they do not know. */
#define ROWS(n) ((int64_t)fmax(1, floor((double)(n) * frac)))

/* GPT's kinds (and the linear kinds every model shares). */
static bool callGptKernel(MlirOperation op, const PiperOpFacts *f, double frac, float **in,
                          float **out) {
  MlirValue x0 = mlirOperationGetNumOperands(op) ? mlirOperationGetOperand(op, 0)
                                                 : (MlirValue){NULL};
  switch (f->id) {
  case PIPER_TDAG_LINEAR:
  case PIPER_TDAG_MATMUL_NT: {
    int64_t K = dim(x0, -1), N = dim(mlirOperationGetOperand(op, 1), 0);
    prt_linear_fwd(out[0], in[0], in[1], f->id == PIPER_TDAG_LINEAR ? in[2] : NULL,
                   ROWS(elems(x0) / K), N, K);
    return true;
  }
  case PIPER_TDAG_LINEAR_GRAD_INPUT: { /* (dout(M,N), w(N,K)) */
    int64_t N = dim(x0, -1), K = dim(mlirOperationGetOperand(op, 1), -1);
    prt_linear_bwd_input(out[0], in[0], in[1], ROWS(elems(x0) / N), N, K);
    return true;
  }
  case PIPER_TDAG_LINEAR_GRAD_WEIGHT: { /* (dout(M,N), x(M,K)) */
    int64_t N = dim(x0, -1), K = dim(mlirOperationGetOperand(op, 1), -1);
    prt_linear_bwd_weight(out[0], in[0], in[1], ROWS(elems(x0) / N), N, K);
    return true;
  }
  case PIPER_TDAG_BIAS_GRAD: {
    int64_t N = dim(x0, -1);
    prt_bias_bwd(out[0], in[0], ROWS(elems(x0) / N), N);
    return true;
  }
  case PIPER_TDAG_ATTENTION: {
    prt_attention_fwd(out[0], out[1], in[0], ROWS(dim(x0, 0)), dim(x0, 1), dim(x0, 2) / 3,
                      piperGetIntAttr(op, "heads", 1));
    return true;
  }
  case PIPER_TDAG_ATTENTION_GRAD: { /* (dout, qkv, out, lse) */
    MlirValue qkv = mlirOperationGetOperand(op, 1);
    prt_attention_bwd(out[0], in[0], in[1], in[2], in[3], ROWS(dim(qkv, 0)), dim(qkv, 1),
                      dim(qkv, 2) / 3, piperGetIntAttr(op, "heads", 1));
    return true;
  }
  case PIPER_TDAG_LAYERNORM: {
    int64_t C = dim(x0, -1);
    prt_layernorm_fwd(out[0], out[1], out[2], in[0], in[1], in[2], ROWS(elems(x0) / C), C,
                      1e-5f);
    return true;
  }
  case PIPER_TDAG_LAYERNORM_GRAD: { /* (dy, x, w, mean, rstd) */
    int64_t C = dim(x0, -1);
    prt_layernorm_bwd(out[0], out[1], out[2], in[0], in[1], in[2], in[3], in[4],
                      ROWS(elems(x0) / C), C);
    return true;
  }
  case PIPER_TDAG_GELU: prt_gelu_fwd(out[0], in[0], ROWS(elems(x0))); return true;
  case PIPER_TDAG_GELU_GRAD: prt_gelu_bwd(out[0], in[0], in[1], ROWS(elems(x0))); return true;
  case PIPER_TDAG_ADD: prt_add(out[0], in[0], in[1], ROWS(elems(x0))); return true;
  case PIPER_TDAG_BIAS_ADD: {
    int64_t N = dim(x0, -1);
    prt_bias_add(out[0], in[0], in[1], ROWS(elems(x0) / N), N);
    return true;
  }
  case PIPER_TDAG_CROSS_ENTROPY: { /* (logits, targets: zeros, a valid class) */
    int64_t V = dim(x0, -1);
    prt_cross_entropy_fwd(out[0], out[1], in[0], (const int32_t *)in[1], ROWS(elems(x0) / V), V,
                          0.0f);
    return true;
  }
  case PIPER_TDAG_CROSS_ENTROPY_GRAD: { /* (probs, targets) */
    int64_t V = dim(x0, -1), N = ROWS(elems(x0) / V);
    prt_cross_entropy_bwd(out[0], in[0], (const int32_t *)in[1], N, V, N, 0.0f);
    return true;
  }
  case PIPER_TDAG_EMBEDDING: { /* (tokens(B,T): zeros, wte, wpe) */
    MlirValue wte = mlirOperationGetOperand(op, 1);
    prt_embedding_fwd(out[0], (const int32_t *)in[0], in[1], in[2], ROWS(dim(x0, 0)),
                      dim(x0, 1), dim(wte, 1));
    return true;
  }
  case PIPER_TDAG_PACK_INTO: /* (bucket, grad): prt_copy of grad into the bucket at offset */
    prt_copy(in[0] + piperGetIntAttr(op, "offset", 0), in[1],
             ROWS(elems(mlirOperationGetOperand(op, 1))));
    return true;
  case PIPER_TDAG_EMBEDDING_GRAD: { /* (dy(B,T,C), tokens) -> dwte(V,C), dwpe */
    MlirValue wte = mlirOperationGetResult(op, 0);
    prt_embedding_bwd(out[0], out[1], in[0], (const int32_t *)in[1], ROWS(dim(x0, 0)),
                      dim(x0, 1), dim(x0, 2), dim(wte, 0));
    return true;
  }
  default: return false;
  }
}

/* Qwen3's kinds (runtime/kernels/cpu_qwen3.c, cpu_attention.c). */
static bool callQwen3Kernel(MlirOperation op, const PiperOpFacts *f, double frac, float **in,
                            float **out) {
  MlirValue x0 = mlirOperationGetOperand(op, 0);
  switch (f->id) {
  case PIPER_TDAG_EMBED: { /* (tokens: zeros, wte(V,C)) */
    MlirValue wte = mlirOperationGetOperand(op, 1);
    prt_embed_fwd(out[0], (const int32_t *)in[0], in[1], ROWS(elems(x0)), dim(wte, 1),
                  dim(wte, 0));
    return true;
  }
  case PIPER_TDAG_EMBED_GRAD: { /* (dy, tokens) -> dwte(V,C) */
    MlirValue dwte = mlirOperationGetResult(op, 0);
    prt_embed_bwd(out[0], in[0], (const int32_t *)in[1],
                  ROWS(elems(mlirOperationGetOperand(op, 1))), dim(dwte, 1), dim(dwte, 0));
    return true;
  }
  case PIPER_TDAG_RMSNORM: { /* (x, w(D)): rows of D */
    int64_t D = dim(mlirOperationGetOperand(op, 1), 0);
    prt_rmsnorm_fwd(out[0], out[1], in[0], in[1], ROWS(elems(x0) / D), D, 1e-6f);
    return true;
  }
  case PIPER_TDAG_RMSNORM_GRAD: { /* (dy, x, w, rstd) */
    int64_t D = dim(mlirOperationGetOperand(op, 2), 0);
    prt_rmsnorm_bwd(out[0], out[1], in[0], in[1], in[2], in[3], ROWS(elems(x0) / D), D);
    return true;
  }
  case PIPER_TDAG_ROPE:
  case PIPER_TDAG_ROPE_GRAD: {
    int64_t hd = piperGetIntAttr(op, "head_dim", 2);
    float theta = (float)piperGetFloatAttr(op, "theta", 1e6);
    (f->id == PIPER_TDAG_ROPE ? prt_rope_fwd : prt_rope_bwd)(out[0], in[0], ROWS(dim(x0, 0)),
                                                             dim(x0, 1), dim(x0, 2), hd, theta);
    return true;
  }
  case PIPER_TDAG_SWIGLU: prt_swiglu_fwd(out[0], in[0], in[1], ROWS(elems(x0))); return true;
  case PIPER_TDAG_SWIGLU_GRAD:
    prt_swiglu_bwd(out[0], out[1], in[0], in[1], in[2], ROWS(elems(x0)));
    return true;
  case PIPER_TDAG_GQA_ATTENTION:
  case PIPER_TDAG_GQA_ATTENTION_GRAD: { /* (q, k, v) / (dy, q, k, v, out, lse) */
    bool grad = f->id == PIPER_TDAG_GQA_ATTENTION_GRAD;
    MlirValue q = mlirOperationGetOperand(op, grad ? 1 : 0);
    int64_t H = piperGetIntAttr(op, "heads", 1), KV = piperGetIntAttr(op, "kv_heads", 1);
    int64_t B = ROWS(dim(q, 0)), T = dim(q, 1), D = dim(q, 2) / H;
    if (grad)
      prt_gqa_attention_bwd(out[0], out[1], out[2], in[0], in[1], in[2], in[3], in[4], in[5], B,
                            T, H, KV, D);
    else
      prt_gqa_attention_fwd(out[0], out[1], in[0], in[1], in[2], B, T, H, KV, D);
    return true;
  }
  default: return false;
  }
}

/* The expert ids operand of a MoE routing op (-1: none): its (N, K) i32 operand. */
static int moeExpertsOperand(PiperOpId id) {
  switch (id) {
  case PIPER_TDAG_MOE_TOPK_GRAD: return 2;     /* (dweights, weights, experts) */
  case PIPER_TDAG_MOE_DISPATCH:                /* (h, experts) */
  case PIPER_TDAG_MOE_DISPATCH_GRAD: return 1; /* (drows, experts) */
  case PIPER_TDAG_MOE_COMBINE: return 2;       /* (out, weights, experts) */
  case PIPER_TDAG_MOE_COMBINE_GRAD: return 3;  /* (dy, out, weights, experts) */
  default: return -1;
  }
}

/* The counts operand of an experts op (counts(G*El) i32). */
static int moeCountsOperand(PiperOpId id) {
  return id == PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT ? 2 : 1;
}

/* Expert kernels' rows: every (block, local expert) gets an even share of frac of the routed
 * rows (tuneMoeRoutedRows: the same evenly spread routing the cost model assumes), at most
 * the block's capacity. */
static void fillCounts(MlirOperation op, double frac, int32_t *counts, int64_t G, int64_t El,
                       int64_t cap) {
  double each = floor(frac * tuneMoeRoutedRows(op) / (double)(G * El));
  int64_t n = (int64_t)fmax(1, each);
  if (n * El > cap) n = cap / El;
  for (int64_t i = 0; i < G * El; ++i) counts[i] = (int32_t)n;
}

/* The experts ops (prt_moe_expert_*: one call per local expert j, as lower_compute.c makes). */
static bool callExpertKernel(MlirOperation op, const PiperOpFacts *f, double frac, float **in,
                             float **out) {
  int64_t G = piperGetIntAttr(op, "groups", 1);
  G = G < 1 ? 1 : G;
  int32_t *counts = (int32_t *)in[moeCountsOperand(f->id)];
  if (f->id == PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT) { /* (dout, rows, counts, hidden, wd) */
    MlirValue rows = mlirOperationGetOperand(op, 1), wd = mlirOperationGetOperand(op, 4);
    int64_t El = elems(mlirOperationGetOperand(op, 2)) / G, cap = dim(rows, 0) / G;
    fillCounts(op, frac, counts, G, El, cap);
    prt_moe_expert_bwd_weight(out[0], out[1], out[2], in[0], in[1], counts, in[3], G, cap, El,
                              piperGetIntAttr(op, "expert", 0), in[4], dim(wd, 0), dim(wd, 1));
    return true;
  }
  bool grad = f->id == PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT;
  intptr_t first = grad ? 3 : 2; /* the gates; then the ups, the downs */
  MlirValue rows = mlirOperationGetOperand(op, 0);
  MlirValue hidden = grad ? mlirOperationGetOperand(op, 2) : mlirOperationGetResult(op, 1);
  int64_t El = (mlirOperationGetNumOperands(op) - first) / 3, cap = dim(rows, 0) / G;
  int64_t C = dim(rows, 1), Fe = dim(hidden, 1) / 2;
  fillCounts(op, frac, counts, G, El, cap);
  for (int64_t j = 0; j < El; ++j) {
    float *wg = in[first + j], *wu = in[first + El + j], *wd = in[first + 2 * El + j];
    if (grad)
      prt_moe_expert_bwd_input(out[0], in[0], counts, in[2], G, cap, El, j, wg, wu, wd, C, Fe);
    else
      prt_moe_expert_fwd(out[0], out[1], in[0], counts, G, cap, El, j, wg, wu, wd, C, Fe);
  }
  return true;
}

/* MoE routing, dispatch and combine (runtime/kernels/cpu.c), on the expert ids fillInputs
 * wrote. */
static bool callMoeKernel(MlirOperation op, const PiperOpFacts *f, double frac, float **in,
                          float **out) {
  int64_t E = piperGetIntAttr(op, "num_experts", 1), G = piperGetIntAttr(op, "groups", 1);
  int ex = moeExpertsOperand(f->id);
  MlirValue exV = ex >= 0 ? mlirOperationGetOperand(op, ex) : (MlirValue){NULL};
  int64_t K = ex >= 0 ? dim(exV, -1) : 0, N = ex >= 0 ? ROWS(elems(exV) / K) : 0;
  const int32_t *ids = ex >= 0 ? (const int32_t *)in[ex] : NULL;
  switch (f->id) {
  case PIPER_TDAG_MOE_TOPK: { /* (logits(N,E)) -> weights(N,K), experts */
    MlirValue logits = mlirOperationGetOperand(op, 0);
    int64_t Et = dim(logits, -1), Kt = dim(mlirOperationGetResult(op, 0), -1);
    prt_moe_topk_fwd(out[0], (int32_t *)out[1], in[0], ROWS(elems(logits) / Et), Et, Kt);
    return true;
  }
  case PIPER_TDAG_MOE_TOPK_GRAD: { /* -> dlogits(N,E) */
    int64_t Et = dim(mlirOperationGetResult(op, 0), -1);
    prt_moe_topk_bwd(out[0], in[0], in[1], ids, N, Et, K);
    return true;
  }
  case PIPER_TDAG_MOE_DISPATCH: {
    int64_t C = dim(mlirOperationGetResult(op, 0), 1);
    prt_moe_dispatch_fwd(out[0], (int32_t *)out[1], in[0], ids, N, K, C, E, G);
    return true;
  }
  case PIPER_TDAG_MOE_DISPATCH_GRAD:
    prt_moe_dispatch_bwd(out[0], in[0], ids, N, K, dim(mlirOperationGetOperand(op, 0), 1), E, G);
    return true;
  case PIPER_TDAG_MOE_COMBINE:
    prt_moe_combine_fwd(out[0], in[0], in[1], ids, N, K, dim(mlirOperationGetOperand(op, 0), 1),
                        E, G);
    return true;
  case PIPER_TDAG_MOE_COMBINE_GRAD:
    prt_moe_combine_bwd(out[0], out[1], in[0], in[1], in[2], ids, N, K,
                        dim(mlirOperationGetOperand(op, 1), 1), E, G);
    return true;
  case PIPER_TDAG_MOE_EXPERTS:
  case PIPER_TDAG_MOE_EXPERTS_GRAD_INPUT:
  case PIPER_TDAG_MOE_EXPERTS_GRAD_WEIGHT: return callExpertKernel(op, f, frac, in, out);
  default: return false;
  }
}
#undef ROWS

/* The inputs a kernel checks: a MoE op's expert ids, token n's k-th = (n + k) mod E (K
 * different experts a token, each expert N*K/E tokens: an even routing). Zeros elsewhere are
 * valid (token 0, class 0). */
static void fillInputs(MlirOperation op, const PiperOpFacts *f, float **in) {
  int ex = moeExpertsOperand(f->id);
  if (ex < 0) return;
  MlirValue v = mlirOperationGetOperand(op, ex);
  int64_t K = dim(v, -1), N = elems(v) / K;
  int64_t E = f->id == PIPER_TDAG_MOE_TOPK_GRAD ? dim(mlirOperationGetResult(op, 0), -1)
                                                : piperGetIntAttr(op, "num_experts", 1);
  int32_t *ids = (int32_t *)in[ex];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) ids[n * K + k] = (int32_t)((n + k) % (E > 0 ? E : 1));
}

/* Runs op's kernel on `frac` of its rows; false if no caller knows its kind. */
static bool callKernel(MlirOperation op, double frac, float **in, float **out) {
  const PiperOpFacts *f = piperOpFacts(op);
  return f && (callGptKernel(op, f, frac, in, out) || callQwen3Kernel(op, f, frac, in, out) ||
               callMoeKernel(op, f, frac, in, out));
}

typedef struct {
  double work[64], ns[64]; /* points of one kind */
  int n;
} Points;

/* The runtime's context constructor (runtime/ctx.c; not in the public header): AdamW reads the
 * step count, lr and clip scale from a context, and an empty one holds torch's defaults. */
prt_ctx *prt_ctx_create(void);
void prt_ctx_destroy(prt_ctx *ctx);

/* AdamW (tdag.adamw) through libpiper_rt's prt_adamw at three sizes, best of 11 each: work =
 * the four tensors it reads and writes (p, g, m, v), as tuneWorkOf counts an unsharded one.
 * Its cost per element is several times an add's (a square root and a division each), so the
 * elementwise class rate would under-predict every update. */
static void calibrateAdamw(Points *q) {
  prt_ctx *ctx = prt_ctx_create();
  enum { MAXN = 1 << 18 };
  float *buf = calloc(4 * (size_t)MAXN, sizeof *buf);
  for (int64_t n = MAXN / 16; ctx && buf && n <= MAXN && q->n < 64; n *= 4) {
    float *pp = buf, *g = buf + MAXN, *m = buf + 2 * MAXN, *v = buf + 3 * MAXN;
    prt_adamw(ctx, pp, g, m, v, NULL, n, 0.9f, 0.999f, 1e-8f, 1); /* warm-up */
    double best = INFINITY;
    for (int rep = 0; rep < 11; ++rep) {
      double t0 = nowNs();
      prt_adamw(ctx, pp, g, m, v, NULL, n, 0.9f, 0.999f, 1e-8f, 1);
      double t = nowNs() - t0;
      best = t < best ? t : best;
    }
    q->work[q->n] = 4.0 * (double)n, q->ns[q->n++] = best;
  }
  free(buf);
  prt_ctx_destroy(ctx);
}

static float *zeroed(MlirValue v) {
  int64_t n = elems(v);
  return calloc((size_t)(n > 0 ? n : 1) + 16, sizeof(float));
}

enum { MAX_KERNEL_ARGS = 64 }; /* operands or results of one op (the experts: 2 + 3 El) */

/* AdamW of a plan (--explain): prt_adamw on this replica's ZeRO shard (1/shards of p, as
 * tuneWorkOf counts it), best of 11; calibrateAdamw fits the kind itself. */
static double timeAdamw(MlirOperation op, double frac) {
  int64_t shards = piperGetIntAttr(op, "shards", 1);
  int64_t n = (int64_t)fmax(1, floor(ceil((double)elems(mlirOperationGetOperand(op, 0)) /
                                          (double)(shards > 1 ? shards : 1)) * frac));
  prt_ctx *ctx = prt_ctx_create();
  float *buf = calloc(4 * (size_t)n, sizeof *buf);
  double best = -1;
  if (ctx && buf) {
    float *pp = buf, *g = buf + n, *m = buf + 2 * n, *v = buf + 3 * n;
    prt_adamw(ctx, pp, g, m, v, NULL, n, 0.9f, 0.999f, 1e-8f, 1); /* warm-up */
    best = INFINITY;
    for (int rep = 0; rep < 11; ++rep) {
      double t0 = nowNs();
      prt_adamw(ctx, pp, g, m, v, NULL, n, 0.9f, 0.999f, 1e-8f, 1);
      double t = nowNs() - t0;
      best = t < best ? t : best;
    }
  }
  free(buf);
  if (ctx) prt_ctx_destroy(ctx);
  return best;
}

double tuneTimeKernel(MlirOperation op, double frac) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (f && f->id == PIPER_TDAG_ADAMW) return timeAdamw(op, frac);
  intptr_t nIn = mlirOperationGetNumOperands(op), nOut = mlirOperationGetNumResults(op);
  if (!f || nIn > MAX_KERNEL_ARGS || nOut > MAX_KERNEL_ARGS) return -1;
  float *in[MAX_KERNEL_ARGS] = {0}, *out[MAX_KERNEL_ARGS] = {0};
  bool ok = true;
  for (intptr_t i = 0; i < nIn; ++i) ok &= (in[i] = zeroed(mlirOperationGetOperand(op, i))) != 0;
  for (intptr_t i = 0; i < nOut; ++i) ok &= (out[i] = zeroed(mlirOperationGetResult(op, i))) != 0;
  double best = -1;
  if (ok) fillInputs(op, f, in);
  if (ok && callKernel(op, frac, in, out)) { /* a warm-up, or not callable */
    best = INFINITY;
    /* the best of 11: a shared core deschedules some runs */
    for (int rep = 0; rep < 11; ++rep) {
      double t0 = nowNs();
      callKernel(op, frac, in, out);
      double t = nowNs() - t0;
      best = t < best ? t : best;
    }
  }
  for (intptr_t i = 0; i < nIn; ++i) free(in[i]);
  for (intptr_t i = 0; i < nOut; ++i) free(out[i]);
  return best;
}

/* Times op at 1/4, 1/2 and all of its rows into its kind's points; says so (verbose) for a
 * kind no caller knows, which then takes its class rate. */
static void timeOp(MlirOperation op, const PiperOpFacts *f, double work, Points *pts,
                   bool *missing, bool verbose) {
  const double fracs[3] = {0.25, 0.5, 1.0};
  for (int k = 0; k < 3; ++k) {
    double ns = tuneTimeKernel(op, fracs[k]);
    if (ns < 0) {
      if (verbose && !missing[f->id])
        fprintf(stderr, "calibrate: %s has no kernel call here: it takes its class rate\n",
                f->name);
      missing[f->id] = true;
      return;
    }
    Points *q = &pts[f->id];
    if (q->n < 64) q->work[q->n] = work * fracs[k], q->ns[q->n++] = ns;
  }
}

static void calibrateKernels(MlirOperation module, TuneProfile *p, bool verbose) {
  Points *pts = calloc(PIPER_TDAG_OP_COUNT, sizeof *pts);    /* by op id */
  bool *missing = calloc(PIPER_TDAG_OP_COUNT, sizeof *missing); /* kinds timeOp cannot call */
  /* distinct (kind, work) already timed */
  double seenWork[512];
  int seenId[512], nSeen = 0;
  MlirOperation stack[64];
  int depth = 0;
  stack[depth++] = module;
  while (depth) {
    MlirOperation parent = stack[--depth];
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(parent); ++r)
      for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(parent, r));
           !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
        for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
             op = mlirOperationGetNextInBlock(op)) {
          if (mlirOperationGetNumRegions(op) && depth < 64) stack[depth++] = op;
          const PiperOpFacts *f = piperOpFacts(op);
          bool mm;
          double work = tuneWorkOf(op, &mm);
          /* AdamW: calibrateAdamw, through prt_adamw and its runtime context */
          if (!f || work <= 0 || missing[f->id] || f->id == PIPER_TDAG_ADAMW)
            continue;
          bool seen = false;
          for (int i = 0; i < nSeen && !seen; ++i)
            seen = seenId[i] == (int)f->id && seenWork[i] == work;
          if (seen || nSeen == 512) continue;
          seenId[nSeen] = f->id, seenWork[nSeen++] = work;
          timeOp(op, f, work, pts, missing, verbose);
        }
  }
  calibrateAdamw(&pts[PIPER_TDAG_ADAMW]);
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);
  double mmRate = 0, elRate = 0, mmFixed = 0, elFixed = 0;
  int mmN = 0, elN = 0;
  for (size_t i = 0; i < nRows; ++i) {
    Points *q = &pts[rows[i].id];
    if (q->n < 2) continue;
    double a, b;
    fit(q->work, q->ns, q->n, &a, &b);
    p->kernel[rows[i].id] = (TuneKernelCost){a, b, true};
    bool mm = rows[i].id == PIPER_TDAG_LINEAR || rows[i].id == PIPER_TDAG_MATMUL_NT ||
              rows[i].id == PIPER_TDAG_LINEAR_GRAD_INPUT ||
              rows[i].id == PIPER_TDAG_LINEAR_GRAD_WEIGHT;
    if (mm) mmRate += b, mmFixed += a, ++mmN;
    if (rows[i].id == PIPER_TDAG_ADD || rows[i].id == PIPER_TDAG_GELU)
      elRate += b, elFixed += a, ++elN;
    if (verbose)
      fprintf(stderr, "calibrate: %-28s %d points: %.0f ns + %.4g ns/work\n", rows[i].name,
              q->n, a, b);
  }
  /* the class rates (and per-call costs: the built-in 2 us is far above what a measured
   * small kernel takes) for the kinds this file cannot call; written to the profile */
  if (mmN) p->matmulDefault = (TuneKernelCost){mmFixed / mmN, mmRate / mmN, true};
  if (elN) p->elemDefault = (TuneKernelCost){elFixed / elN, elRate / elN, true};
  free(missing);
  free(pts);
}

int tuneCalibrate(MlirOperation module, TuneProfile *p, bool verbose) {
  const char *ws = getenv("OMPI_COMM_WORLD_SIZE");
  int rank = 0, size = 1;
  if (ws && atoi(ws) > 1) {
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    calibrateComm(p, rank, size, verbose);
    MPI_Finalize();
  }
  if (rank != 0) {
    p->source[0] = '\0'; /* only rank 0 writes the profile */
    return 0;
  }
  calibrateKernels(module, p, verbose);
  char host[128] = "this host";
  FILE *f = fopen("/proc/sys/kernel/hostname", "r");
  if (f) {
    if (fgets(host, sizeof host, f)) host[strcspn(host, "\n")] = '\0';
    fclose(f);
  }
  snprintf(p->source, sizeof p->source, "piper-tune --calibrate on %s, %d rank%s", host, size,
           size == 1 ? " (no transfers measured: run under mpirun -np 2+)" : "s");
  return 0;
}

/* ---- --explain: the cost model per kernel kind against the kernels run alone ---- */

typedef struct {
  double calls, predNs, measNs; /* summed over the devices */
  bool unmeasured;              /* some op of the kind has no kernel call here */
} ExplainRow;

typedef struct {
  int id[1024];
  double work[1024], ns[1024]; /* distinct (kind, work) already timed */
  int n;
} ExplainCache;

/* op's kernel at the plan's shape, timed once per distinct (kind, work); -1: not callable. */
static double explainTime(ExplainCache *c, MlirOperation op, int id, double work) {
  for (int i = 0; i < c->n; ++i)
    if (c->id[i] == id && c->work[i] == work) return c->ns[i];
  double ns = tuneTimeKernel(op, 1.0);
  if (c->n < 1024) c->id[c->n] = id, c->work[c->n] = work, c->ns[c->n++] = ns;
  return ns;
}

/* Every kernel op of every plan function into rows[kind], weighted by the devices the function
 * stands for (a role's replicas). */
static void explainCollect(MlirOperation plans, const TuneProfile *p, ExplainRow *rows,
                           ExplainCache *cache) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(plans, 0));
  for (MlirOperation fn = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(fn);
       fn = mlirOperationGetNextInBlock(fn)) {
    if (!piperOpIs(fn, "func.func")) continue;
    MlirAttribute range = mlirOperationGetAttributeByName(fn, piperStr("piper.role"));
    double devices = 1;
    if (!mlirAttributeIsNull(range) && mlirAttributeIsAArray(range) &&
        mlirArrayAttrGetNumElements(range) == 3)
      devices = (double)mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(range, 2));
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
    for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op)) {
      const PiperOpFacts *f = piperOpFacts(op);
      bool mm;
      double work = tuneWorkOf(op, &mm);
      if (!f || work <= 0) continue;
      ExplainRow *r = &rows[f->id];
      r->calls += devices;
      r->predNs += devices * tuneKernelNs(p, op);
      double ns = explainTime(cache, op, f->id, work);
      if (ns < 0) r->unmeasured = true;
      else r->measNs += devices * ns;
    }
  }
}

int tuneExplain(const char *tool, MlirOperation training, const char *json,
                const TuneProfile *p, const char *what, FILE *out) {
  MlirOperation plans = tuneCompileOrReport(tool, training, json, what);
  if (mlirOperationIsNull(plans)) return 1;
  ExplainRow *rows = calloc(PIPER_TDAG_OP_COUNT, sizeof *rows); /* by op id */
  ExplainCache *cache = calloc(1, sizeof *cache);
  if (!rows || !cache) {
    fprintf(stderr, "%s: error: out of memory\n", tool);
    free(rows), free(cache), mlirOperationDestroy(plans);
    return 1;
  }
  explainCollect(plans, p, rows, cache);
  fprintf(out, "\nkernels of one step, summed over the devices: predicted (the profile's cost "
               "of each op) vs each op's CPU kernel run alone at the plan's shape (best of "
               "11; MoE on an even routing)\n");
  fprintf(out, "| kernel | cost | calls | predicted us | run alone us | alone / predicted |\n"
               "|---|---|---|---|---|---|\n");
  size_t nRows;
  const PiperOpFacts *facts = piperOpFactsTable(&nRows);
  double predAll = 0, predMeasured = 0, measAll = 0;
  for (size_t i = 0; i < nRows; ++i) {
    const ExplainRow *r = &rows[facts[i].id];
    if (r->calls == 0) continue;
    const char *cost = p->kernel[facts[i].id].set ? "own fit" : "class rate";
    predAll += r->predNs;
    if (r->unmeasured) {
      fprintf(out, "| %s | %s | %.0f | %.1f | - | - |\n", facts[i].name, cost, r->calls,
              r->predNs / 1e3);
      continue;
    }
    predMeasured += r->predNs, measAll += r->measNs;
    fprintf(out, "| %s | %s | %.0f | %.1f | %.1f | %.2f |\n", facts[i].name, cost, r->calls,
            r->predNs / 1e3, r->measNs / 1e3, r->predNs > 0 ? r->measNs / r->predNs : 0);
  }
  fprintf(out, "| all kernels | | | %.1f | %.1f (of %.1f predicted) | %.2f |\n", predAll / 1e3,
          measAll / 1e3, predMeasured / 1e3, predMeasured > 0 ? measAll / predMeasured : 0);
  free(rows), free(cache);
  mlirOperationDestroy(plans);
  return 0;
}
