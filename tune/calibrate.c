/* piper-tune --calibrate: measures the costs of tune/profile.c on this machine.
 *
 * Kernels: every distinct (op kind, shape) of the model's training graph whose CPU kernel this
 * file knows how to call (the GPT kinds: embedding, layernorm, linear and its two gradients,
 * matmul_nt, bias_grad, attention, gelu, add, bias_add, cross_entropy, and their gradients)
 * runs through libpiper_rt at 1/4, 1/2 and all of its rows (batch rows, or tokens), the best of
 * a few repetitions; time = fixed + ns_per_work * work is then fitted per op kind by least
 * squares over those points. AdamW runs through prt_adamw on an empty runtime context at
 * three sizes. Kinds it cannot call (Qwen3, MoE) keep the class default: the mean of the
 * measured add and gelu (elementwise) or matmul kinds' fits, written to the profile's
 * "defaults" (the rate of bucket packing, copies and the gradient norm's sums too).
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

/* Runs op's kernel on `frac` of its rows with buffers `in`/`out` (zeroed, full size); false if
 * this file does not know how to call it. */
static bool callKernel(MlirOperation op, double frac, float **in, float **out) {
  const PiperOpFacts *f = piperOpFacts(op);
  MlirValue x0 = mlirOperationGetNumOperands(op) ? mlirOperationGetOperand(op, 0)
                                                 : (MlirValue){NULL};
#define ROWS(n) ((int64_t)fmax(1, floor((double)(n) * frac)))
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
  case PIPER_TDAG_ATTENTION_GRAD: { /* (dout, qkv, probs) */
    MlirValue qkv = mlirOperationGetOperand(op, 1);
    prt_attention_bwd(out[0], in[0], in[1], in[2], ROWS(dim(qkv, 0)), dim(qkv, 1),
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
    prt_cross_entropy_fwd(out[0], out[1], in[0], (const int32_t *)in[1], ROWS(elems(x0) / V), V);
    return true;
  }
  case PIPER_TDAG_CROSS_ENTROPY_GRAD: { /* (probs, targets) */
    int64_t V = dim(x0, -1), N = ROWS(elems(x0) / V);
    prt_cross_entropy_bwd(out[0], in[0], (const int32_t *)in[1], N, V, N);
    return true;
  }
  case PIPER_TDAG_EMBEDDING: { /* (tokens(B,T): zeros, wte, wpe) */
    MlirValue wte = mlirOperationGetOperand(op, 1);
    prt_embedding_fwd(out[0], (const int32_t *)in[0], in[1], in[2], ROWS(dim(x0, 0)),
                      dim(x0, 1), dim(wte, 1));
    return true;
  }
  case PIPER_TDAG_EMBEDDING_GRAD: { /* (dy(B,T,C), tokens) -> dwte(V,C), dwpe */
    MlirValue wte = mlirOperationGetResult(op, 0);
    prt_embedding_bwd(out[0], out[1], in[0], (const int32_t *)in[1], ROWS(dim(x0, 0)),
                      dim(x0, 1), dim(x0, 2), dim(wte, 0));
    return true;
  }
  default: return false;
  }
#undef ROWS
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
    prt_adamw(ctx, pp, g, m, v, n, 0.9f, 0.999f, 1e-8f, 1); /* warm-up */
    double best = INFINITY;
    for (int rep = 0; rep < 11; ++rep) {
      double t0 = nowNs();
      prt_adamw(ctx, pp, g, m, v, n, 0.9f, 0.999f, 1e-8f, 1);
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

static void calibrateKernels(MlirOperation module, TuneProfile *p, bool verbose) {
  Points *pts = calloc(64, sizeof *pts);
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
          if (!f || work <= 0 || f->id >= 64) continue;
          bool seen = false;
          for (int i = 0; i < nSeen && !seen; ++i)
            seen = seenId[i] == (int)f->id && seenWork[i] == work;
          if (seen || nSeen == 512) continue;
          seenId[nSeen] = f->id, seenWork[nSeen++] = work;
          intptr_t nIn = mlirOperationGetNumOperands(op), nOut = mlirOperationGetNumResults(op);
          float *in[8] = {0}, *out[8] = {0};
          for (intptr_t i = 0; i < nIn && i < 8; ++i) in[i] = zeroed(mlirOperationGetOperand(op, i));
          for (intptr_t i = 0; i < nOut && i < 8; ++i) out[i] = zeroed(mlirOperationGetResult(op, i));
          const double fracs[3] = {0.25, 0.5, 1.0};
          for (int k = 0; k < 3 && nIn <= 8 && nOut <= 8; ++k) {
            if (!callKernel(op, fracs[k], in, out)) break; /* warm-up, or not callable */
            double best = INFINITY;
            /* the best of 11: a shared core deschedules some runs */
            for (int rep = 0; rep < 11; ++rep) {
              double t0 = nowNs();
              callKernel(op, fracs[k], in, out);
              double t = nowNs() - t0;
              best = t < best ? t : best;
            }
            Points *q = &pts[f->id];
            if (q->n < 64) q->work[q->n] = work * fracs[k], q->ns[q->n++] = best;
          }
          for (int i = 0; i < 8; ++i) free(in[i]), free(out[i]);
        }
  }
  calibrateAdamw(&pts[PIPER_TDAG_ADAMW]);
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);
  double mmRate = 0, elRate = 0, mmFixed = 0, elFixed = 0;
  int mmN = 0, elN = 0;
  for (size_t i = 0; i < nRows && i < 64; ++i) {
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
