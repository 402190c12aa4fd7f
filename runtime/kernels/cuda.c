/* The GPU target's kernels (libpiper_rt_cuda): what a plan compiled with --target cuda calls
 * instead of runtime/kernels/cpu.c. Each prt_cuda_* function has its CPU twin's argument list
 * (the kernel list, include/piper/kernels.def) with device pointers, and launches on the
 * plan's compute stream (ctx->streams[0]) without waiting for the device:
 *   - the device kernels piper-compile generated (lowering/gpu_kernels.c) from the PTX it
 *     embedded in the binary as piper_ptx, JIT-loaded once by prt_cuda_setup through
 *     cudaLibraryLoadData (the CUDA runtime API; the binary never links libcuda);
 *   - cuBLAS sgemm for the matmuls, in CUBLAS_PEDANTIC_MATH (true fp32, no TF32), so the GPU
 *     computes what the CPU and PyTorch with TF32 off compute; a linear with a bias is one
 *     cuBLASLt matmul with the bias in its epilogue (CUBLAS_COMPUTE_32F: no TF32 either);
 *   - the fused causal attention of kernels/cuda_attention.cu (built by nvcc).
 * The host waits for the device only where it must read a value: the loss (the runtime's
 * host view of the output tensor) and the gradient norm (prt_cuda_grad_norm_sync).
 *
 * Errors: a failed launch or cuBLAS call is prt_fatal naming the runtime function (the op),
 * the kernel, this file and line, and what to do. A kernel's own fault surfaces at the next
 * synchronization; PIPER_CUDA_SYNC=1 synchronizes after every launch so the failing op is
 * named. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "device/cuda_common.h"
#include "kernels/cuda.h"
#include "kernels/cuda_fa2.h"
#include "kernels/cuda_gemm.h"
#include "piper/gpu_tables.h"
#include "piper/kernels.h"
#include "prt_internal.h"

/* The PTX of the plan's kernels: a constant the compiled plan defines (piper-compile
 * --target cuda, piperEmbedPtx). */
extern const char piper_ptx[];

/* The device kernels' names (their PTX .entry names), from the kernel list: PRT_DK_<name> is
 * piper_<name>, whose text lowering/gpu_kernels.c writes. */
static const char *const kernel_names[PRT_DK_COUNT] = {
    [PRT_DK_NONE] = "(none)",
#define PRT_DEVICE_KERNEL(name) [PRT_DK_##name] = "piper_" #name,
#include "piper/kernels.def"
};

enum {
  BLOCK = 256,          /* threads per block */
  NORM_LANES = 64,      /* threads summing one chunk's squares (sumsq_chunks' L) */
  ADAM_GROUPS = 8,      /* distinct (beta1, beta2, eps) of one step's updates */
  COL_CHUNK = 64,       /* rows a thread of a column reduction sums (bias, LayerNorm dw/db) */
  WTE_SLAB_FLOATS = 1 << 24, /* scratch of the token-embedding gradient's chunks (64 MB) */
  CUBLAS_WORKSPACE = 32 << 20, /* bytes: cuBLAS's workspace (cublasSetWorkspace) */
};

/* Device scratch buffers, grown on first use (the first step, which is the warm-up: later
 * steps find them sized and allocate nothing): what each holds. */
enum { SCR_ROWLOSS, SCR_COLS, SCR_WTE, SCR_ROPE_FWD, SCR_ROPE_BWD, SCR_MOE_POS, SCR_MOE_ACT,
       SCR_ATTN_D, SCR_FLASH_STAGE, SCR_NORM, SCR_ADAM_TABLE, SCR_NORM_TABLE, SCR_LINEAR,
       SCR_COUNT };

/* One entry of a multi-tensor table: include/piper/gpu_tables.h's prt_tensor_chunk, the
 * layout lowering/gpu_kernels.c's adamw_multi and sumsq_chunks read. */
typedef prt_tensor_chunk tensor_chunk;

/* A table being built on the host for one launch: the entries in pinned memory (the source
 * of an asynchronous copy, which a captured graph replays), and what the device holds. */
typedef struct {
  tensor_chunk *host;     /* pinned (cudaMallocHost), cap entries */
  tensor_chunk *shadow;   /* the entries last copied to the device (host memory), cap */
  int64_t n, cap;         /* entries this step, capacity */
  int64_t shadow_n;       /* entries the device holds (-1: none yet) */
  int64_t launched;       /* entries [0, launched) already launched this step: a launch reads
                             entries [launched, n), and no entry is rewritten within a step,
                             since its asynchronous copy may not have run yet */
  size_t dev_cap;         /* the device table's capacity when entries were last copied: a
                             growth reallocates it (perhaps at the same address), and the new
                             buffer holds nothing */
} chunk_table;

/* What prt_cuda_setup opens once per process (one plan, one GPU per process). */
static struct {
  prt_ctx *ctx;              /* the plan's context: its compute stream, the optimizer state,
                                its backend record (the GPU, device/cuda.c) */
  cudaLibrary_t lib;         /* the loaded piper_ptx */
  cudaKernel_t k[PRT_DK_COUNT]; /* its kernels; NULL where the plan's PTX lacks one */
  cublasHandle_t blas;       /* pedantic fp32 math */
  void *blas_ws;             /* device: cuBLAS's and cuBLASLt's workspace, CUBLAS_WORKSPACE
                                bytes (their calls are ordered on the compute stream) */
  cublasLtHandle_t lt;       /* the linear forward with its bias (lt_gemm_bias) */
  int lt_off;                /* PIPER_CUDA_LT=0: bias rows, then cuBLAS, instead */
  int attn_env;              /* PIPER_CUDA_ATTN: 1 tc, 0 fp32, -1 unset (FlashAttention-2
                                where it takes the op, else attn_tc decides) */
  void *scratch[SCR_COUNT];  /* device scratch: cross-entropy's per-row losses (f64), column
                                reductions' chunk sums (f64), the embedding gradient's
                                chunks (f32), the rotary tables (forward, inverse), the MoE
                                copies' rows (i32) and an expert's activations (f32) */
  size_t scratch_cap[SCR_COUNT]; /* their sizes in bytes */
  chunk_table norm_tab;      /* the gradient slices grad_sq_accum noted this step */
  chunk_table adam_tab;      /* the updates adamw gathered, not yet launched */
  float adam_key[ADAM_GROUPS][3]; /* each scalar group's (beta1, beta2, eps) as the plan gave
                                     them */
  int adam_groups;           /* groups in use */
  float *adam_scal_host;     /* pinned: ADAM_GROUPS x 8 scalars of this step (adamw_multi) */
  float *adam_scal_dev;      /* device: the same, copied before each adamw_multi */
  double *norm_host;         /* pinned: the step's squared norm, copied after norm_clip */
  float *clip_host;          /* pinned: the clip scale the host computed (several ranks) */
  double *norm_sq_dev;       /* device: norm_clip's squared norm */
  float *clip_dev;           /* device: the clip scale adamw_multi applies */
  int defer;                 /* 1: one plan on one GPU (world 1): adamw calls are gathered
                                and launched as one at the next other operation or the
                                step's end; 0: each launched at once (transfers between the
                                updates may read what they wrote) */
  int norm_in_step;          /* 1: the step computes the norm on the device and the host
                                reads it after the step's last kernel (world 1) */
  int needs_host;            /* 1: an op waited for the device mid-step (MoE's routing):
                                the step cannot be one CUDA graph */
  int graph_off;             /* PIPER_CUDA_GRAPH=0, PIPER_CUDA_SYNC=1, a profile, or a plan
                                of several ranks: every step runs kernel by kernel */
  cudaGraphExec_t graph;     /* the captured step, replayed each pass after the warm-up */
  void (*graph_step)(prt_ctx *); /* the step function the graph holds: another one (the
                                forward-only evaluation) runs kernel by kernel, never as
                                a replay of the training step (the first GPU run with graphs
                                trained an extra step at each evaluation) */
  int capturing;             /* 1 while the step is being captured */
  char capture_error[320];   /* the first CUDA or cuBLAS failure while capturing ("": none);
                                the step then runs kernel by kernel from then on */
  int ready;                 /* 1 once the PTX, cuBLAS and the scratch are set up */
  int sync_each;             /* PIPER_CUDA_SYNC=1: synchronize after every launch */
  int64_t rope_key[2][3];    /* (T, D, theta bits) the rotary tables in SCR_ROPE_FWD/BWD hold,
                                so each is computed and uploaded once per shape */
  int64_t passes;            /* step passes run so far (run_step) */
  size_t free_at_setup;      /* cudaMemGetInfo's free bytes before the plan allocated */
} S;

/* A CUDA failure in `fn` (the runtime function serving an op): fatal, with what to do
 * (prt_cuda_fail's message); while capturing the step, kept for graph_capture instead. */
static void fail_cuda(const char *fn, const char *what, cudaError_t e, int line) {
  prt_status st = {0};
  prt_cuda_fail(&st, e, fn, what, __FILE__, line,
                e == cudaErrorMemoryAllocation
                    ? "free GPU memory (another process?) or shrink the model or batch"
                    : PRT_CUDA_HINT_SYNC);
  if (S.capturing) { /* nothing ran: graph_capture reports it and runs the step again */
    if (!S.capture_error[0]) /* the message's start: the op, the call, the error */
      snprintf(S.capture_error, sizeof S.capture_error, "%.*s",
               (int)sizeof S.capture_error - 1, st.msg);
    return;
  }
  prt_fatal("%s", st.msg);
}
#define CUDA_OR_DIE(fn, what, call)                                                        \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) fail_cuda((fn), (what), e_, __LINE__);                          \
  } while (0)

/* The plan's compute stream (device/cuda_common.h: never the legacy stream). */
static cudaStream_t compute_stream(void) { return prt_cuda_compute_stream(S.ctx); }

/* The plan's kernel k, or fatal when the embedded PTX lacks it (a compiler defect). */
static const void *kernel(int k, const char *fn) {
  if (!S.k[k])
    prt_fatal("%s: kernel %s is not in the plan's PTX (a piper-compile defect: "
              "lowering/gpu_kernels.c `uses`); recompile the plan with --target cuda", fn,
              kernel_names[k]);
  return (const void *)S.k[k];
}

/* ---- timing one step's operations (PIPER_CUDA_PROFILE=FILE) ----
 * The step pass PIPER_CUDA_PROFILE_STEP (default 2: after the warm-up and the first steady
 * pass) runs kernel by kernel, each operation (a device kernel, a cuBLAS call, an attention
 * launch) between two CUDA events on the compute stream; after it the host waits once and
 * writes one JSON line per operation, {"kind": "op", "name": the kernel or library call,
 * "fn": the runtime function (the plan's op), "ms": its time}, then {"kind": "step", "ms":
 * first event to last, "ops": n, "untimed": ops past PROF_MAX} and the device memory,
 * {"kind": "mem", "free_at_setup", "free", "total" (cudaMemGetInfo, bytes), "params",
 * "optim", "arena", "io" (the plan's tensors and arena), "runtime" (this file's device
 * scratch)}. test/gpu/on_gpu_report.py turns it into the per-kernel-class table. */
enum { PROF_MAX = 8192 };
static struct {
  FILE *out;                      /* the profile's file; NULL: not profiling */
  int64_t pass;                   /* the step pass to time */
  int on;                         /* 1 while that pass runs */
  int n, untimed;                 /* operations timed, and past PROF_MAX */
  cudaEvent_t ev[2 * PROF_MAX];   /* start and end of operation i: ev[2i], ev[2i+1] */
  const char *name[PROF_MAX];     /* static strings: the kernel or library call */
  const char *fn[PROF_MAX];       /* static strings: the runtime function */
} P;

static void adam_flush(prt_ctx *ctx);

/* Starts device operation `what` of runtime function `fn`: first the gathered AdamW updates
 * (they precede it in the plan); its profile slot, or -1. */
static int op_begin(const char *what, const char *fn) {
  if (S.adam_tab.n > S.adam_tab.launched && S.ctx) adam_flush(S.ctx);
  if (!P.on) return -1;
  if (P.n >= PROF_MAX) {
    P.untimed++;
    return -1;
  }
  int i = P.n++;
  P.name[i] = what;
  P.fn[i] = fn;
  CUDA_OR_DIE(fn, "profile event", cudaEventRecord(P.ev[2 * i], compute_stream()));
  return i;
}

/* Ends it: its end event when timed; with PIPER_CUDA_SYNC=1 the host waits for it, so a
 * faulting kernel is named by this op. */
static void op_end(int slot, const char *what, const char *fn) {
  if (slot >= 0)
    CUDA_OR_DIE(fn, "profile event", cudaEventRecord(P.ev[2 * slot + 1], compute_stream()));
  if (S.sync_each) CUDA_OR_DIE(fn, what, cudaStreamSynchronize(compute_stream()));
}

/* Launches kernel k over `threads` threads (blocks of BLOCK) on the compute stream. */
static void launch(int k, int64_t threads, void **args, const char *fn) {
  if (threads <= 0) return;
  int64_t blocks = (threads + BLOCK - 1) / BLOCK;
  if (blocks > INT_MAX)
    prt_fatal("%s: %lld threads exceed one CUDA grid (kernel %s); use a smaller batch", fn,
              (long long)threads, kernel_names[k]);
  dim3 grid = {(unsigned)blocks, 1, 1}, block = {BLOCK, 1, 1};
  int slot = op_begin(kernel_names[k], fn);
  CUDA_OR_DIE(fn, kernel_names[k],
              cudaLaunchKernel(kernel(k, fn), grid, block, args, 0, compute_stream()));
  op_end(slot, kernel_names[k], fn);
}

/* Launches kernel k over `threads` threads with the arguments' addresses listed and, last,
 * the device kernel's bf16 mask `io` (bit j for its j-th pointer argument: lowering/
 * gpu_kernels.c's @piper_ld / @piper_st). */
#define LAUNCH(k, threads, io, fn, ...)                                                    \
  do {                                                                                     \
    int32_t io_ = (io);                                                                    \
    void *args_[] = {__VA_ARGS__, &io_};                                                   \
    launch((k), (threads), args_, (fn));                                                   \
  } while (0)

/* Bit `to` of a device kernel's bf16 mask: bit `from` of the runtime kernel's (the kernel
 * list's tensor argument `from` passed on as the device kernel's pointer argument `to`). */
static int32_t io_bit(int32_t mask, int from, int to) { return PRT_BF16_BIT(mask, from) << to; }

/* Tensor argument k of a runtime kernel (`mask` its call's bf16 mask), as an nvcc-built
 * kernel takes an FP_IN / FP_OUT one (kernels/cuda_fp.cuh). */
static prt_fp_in fp_in(const float *p, int32_t mask, int k) {
  return (prt_fp_in){p, PRT_BF16_BIT(mask, k)};
}
static prt_fp_out fp_out(float *p, int32_t mask, int k) {
  return (prt_fp_out){p, PRT_BF16_BIT(mask, k)};
}
/* The same `off` elements (of its precision) in: a column of GPT's packed qkv */
static prt_fp_in fp_in_at(const float *p, int32_t mask, int k, int64_t off) {
  int bf16 = PRT_BF16_BIT(mask, k);
  return (prt_fp_in){(const char *)p + off * (bf16 ? 2 : 4), bf16};
}
static prt_fp_out fp_out_at(float *p, int32_t mask, int k, int64_t off) {
  int bf16 = PRT_BF16_BIT(mask, k);
  return (prt_fp_out){(char *)p + off * (bf16 ? 2 : 4), bf16};
}

static void graph_drop(void);

/* Scratch buffer `slot` of at least `bytes`, grown after the stream's work so far (it may still
 * read the old buffer). Growing happens in the warm-up step; a later growth (an evaluation of
 * another shape) drops the captured graph, which holds the old address, and is fatal while
 * capturing (the step would differ from the warm-up's: a runtime defect). */
static void *scratch(int slot, size_t bytes, const char *fn) {
  if (bytes > S.scratch_cap[slot]) {
    if (S.capturing)
      prt_fatal("%s: scratch %d must grow to %zu bytes while the step is captured as a CUDA "
                "graph (it did not in the warm-up step); rerun with PIPER_CUDA_GRAPH=0 and "
                "report it", fn, slot, bytes);
    graph_drop();
    CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
    cudaFree(S.scratch[slot]);
    S.scratch[slot] = NULL;
    S.scratch_cap[slot] = 0;
    CUDA_OR_DIE(fn, "device scratch", cudaMalloc(&S.scratch[slot], bytes));
    S.scratch_cap[slot] = bytes;
  }
  return S.scratch[slot];
}

/* out[j] = sum of the chunk sums partial[r, j] (launches piper_col_finish) */
static void col_finish(float *out, double *partial, int64_t chunks, int64_t N, const char *fn) {
  LAUNCH(PRT_DK_col_finish, N, 0, fn, &out, &partial, &chunks, &N);
}

static void check_blas(cublasStatus_t s, const char *fn, int line) {
  if (s != CUBLAS_STATUS_SUCCESS && S.capturing) {
    if (!S.capture_error[0])
      snprintf(S.capture_error, sizeof S.capture_error, "cuBLAS in %s: status %d at %s:%d", fn,
               (int)s, __FILE__, line);
    return;
  }
  if (s != CUBLAS_STATUS_SUCCESS)
    prt_fatal("cuBLAS error in %s: status %d at %s:%d; rerun with PIPER_CUDA_SYNC=1 to find "
              "an earlier failing op, or check the GPU with nvidia-smi", fn, (int)s, __FILE__,
              line);
}

static void check_lt(cublasStatus_t s, const char *fn, const char *call, int line) {
  if (s != CUBLAS_STATUS_SUCCESS && S.capturing) {
    if (!S.capture_error[0])
      snprintf(S.capture_error, sizeof S.capture_error, "cuBLASLt in %s (%s): status %d at "
               "%s:%d", fn, call, (int)s, __FILE__, line);
    return;
  }
  if (s != CUBLAS_STATUS_SUCCESS)
    prt_fatal("cuBLASLt error in %s (%s): status %d at %s:%d; rerun with PIPER_CUDA_LT=0 to "
              "use cuBLAS instead, or PIPER_CUDA_SYNC=1 to find an earlier failing op", fn,
              call, (int)s, __FILE__, line);
}
#define LT_OR_DIE(fn, call) check_lt((call), (fn), #call, __LINE__)

/* cuBLAS takes int dimensions. */
static int blas_dim(int64_t v, const char *fn) {
  if (v < 0 || v > INT_MAX)
    prt_fatal("%s: matrix dimension %lld exceeds cuBLAS's int range; split the op", fn,
              (long long)v);
  return (int)v;
}

/* PIPER_CUDA_PROFILE's file and events, at setup (fatal when the file cannot be written). */
static void profile_open(void) {
  const char *path = getenv("PIPER_CUDA_PROFILE");
  if (!path || !*path) return;
  const char *step = getenv("PIPER_CUDA_PROFILE_STEP");
  P.pass = step ? atoll(step) : 2;
  P.out = fopen(path, "w");
  if (!P.out)
    prt_fatal("PIPER_CUDA_PROFILE=%s: cannot write the file; name a writable path", path);
  for (int i = 0; i < 2 * PROF_MAX; i++)
    CUDA_OR_DIE("prt_cuda_setup", "profile events", cudaEventCreate(&P.ev[i]));
}

/* Device bytes the plan declared of kind `kind` (tensors) */
static long long plan_bytes(const prt_ctx *ctx, int kind) {
  return (long long)prt_ctx_bytes(ctx, kind);
}

/* The timed pass's operations and the device memory, to the profile file (one host wait). */
static void profile_write(prt_ctx *ctx) {
  const char *fn = "the kernel profile (PIPER_CUDA_PROFILE)";
  CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
  for (int i = 0; i < P.n; i++) {
    float ms = 0.0f;
    CUDA_OR_DIE(fn, "cudaEventElapsedTime", cudaEventElapsedTime(&ms, P.ev[2 * i], P.ev[2 * i + 1]));
    fprintf(P.out, "{\"kind\": \"op\", \"name\": \"%s\", \"fn\": \"%s\", \"ms\": %.6g}\n",
            P.name[i], P.fn[i], ms);
  }
  float step_ms = 0.0f;
  if (P.n > 0)
    CUDA_OR_DIE(fn, "cudaEventElapsedTime",
                cudaEventElapsedTime(&step_ms, P.ev[0], P.ev[2 * P.n - 1]));
  fprintf(P.out, "{\"kind\": \"step\", \"pass\": %lld, \"ms\": %.6g, \"ops\": %d, "
          "\"untimed\": %d}\n", (long long)P.pass, step_ms, P.n, P.untimed);
  size_t free_b = 0, total = 0, scratch_b =
      CUBLAS_WORKSPACE + ADAM_GROUPS * PRT_ADAM_SCALARS * sizeof(float);
  CUDA_OR_DIE(fn, "cudaMemGetInfo", cudaMemGetInfo(&free_b, &total));
  for (int k = 0; k < SCR_COUNT; k++) scratch_b += S.scratch_cap[k];
  fprintf(P.out, "{\"kind\": \"mem\", \"free_at_setup\": %zu, \"free\": %zu, \"total\": %zu, "
          "\"params\": %lld, \"optim\": %lld, \"arena\": %lld, \"io\": %lld, "
          "\"runtime\": %zu}\n", S.free_at_setup, free_b, total, plan_bytes(ctx, PRT_PARAM),
          plan_bytes(ctx, PRT_OPTIM), (long long)ctx->arena_bytes,
          plan_bytes(ctx, PRT_INPUT) + plan_bytes(ctx, PRT_OUTPUT), scratch_b);
  if (fclose(P.out)) prt_fatal("%s: writing the profile failed; check the disk", fn);
  P.out = NULL;
}

/* Test instrumentation: the fake CUDA runtime (test/gpu/fake_cuda.c) defines it to count
 * per step; a real binary has none. */
void prt_cuda_step_mark(int64_t pass, int end) __attribute__((weak));

static void adam_scalars_fill(prt_ctx *ctx);

/* Drops the captured step (a scratch buffer moved): the next pass captures it again. */
static void graph_drop(void) {
  if (!S.graph) return;
  CUDA_OR_DIE("the step's CUDA graph", "cudaGraphExecDestroy", cudaGraphExecDestroy(S.graph));
  S.graph = NULL;
}

/* Captures one pass of `step` on the compute stream as a CUDA graph (nothing runs yet). The
 * host side of the step runs as usual; what it issues (kernels, cuBLAS, copies from pinned
 * memory) becomes the graph. Returns 0 when the capture failed (a call the driver refuses
 * while capturing, or the graph not instantiated): nothing of the step ran, so the caller
 * runs it kernel by kernel, as every later step (a warning says so once). */
static int graph_capture(prt_ctx *ctx, void (*step)(prt_ctx *)) {
  cudaGraph_t g = NULL;
  S.capture_error[0] = 0;
  cudaError_t e = cudaStreamBeginCapture(compute_stream(), cudaStreamCaptureModeThreadLocal);
  if (e == cudaSuccess) {
    S.capturing = 1;
    step(ctx);
    adam_flush(ctx);
    S.capturing = 0;
    e = cudaStreamEndCapture(compute_stream(), &g);
    if (e == cudaSuccess && !S.capture_error[0]) e = cudaGraphInstantiate(&S.graph, g, 0);
    if (g) (void)cudaGraphDestroy(g);
  }
  if (e == cudaSuccess && !S.capture_error[0]) {
    S.graph_step = step;
    return 1;
  }
  (void)cudaGetLastError();
  if (S.graph) (void)cudaGraphExecDestroy(S.graph);
  S.graph = NULL;
  S.graph_off = 1;
  /* what the failed capture recorded as on the device is not: copy the tables again */
  S.adam_tab.shadow_n = S.norm_tab.shadow_n = -1;
  memset(S.rope_key, 0, sizeof S.rope_key);
  if (ctx->rank == 0)
    fprintf(stderr, "piper: warning: the training step could not be captured as a CUDA graph "
            "(%s); running it kernel by kernel (set PIPER_CUDA_GRAPH=0 to do so from the "
            "start)\n", S.capture_error[0] ? S.capture_error : cudaGetErrorName(e));
  return 0;
}

/* After the step's last kernel: the norm computed on the device, read by the host (the one
 * wait of the step before the loss's), and what the metrics show of it. */
static void step_end(prt_ctx *ctx) {
  if (!S.norm_in_step) return;
  const char *fn = "prt_cuda_grad_norm_sync";
  CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
  ctx->grad_sq = 0.0;
  ctx->grad_norm = sqrt(*S.norm_host);
  ctx->clip_scale = 1.0f;
  if (ctx->grad_clip > 0.0) { /* prt_grad_norm_sync's, for what the run reports */
    float coef = (float)ctx->grad_clip / ((float)ctx->grad_norm + 1e-6f);
    if (coef < 1.0f) ctx->clip_scale = coef;
  }
}

/* The backend record's step runner (prt_backend_run_step): one pass of the plan's step. The
 * first pass (the warm-up: scratch and tables sized, the MoE's host round trips seen) runs
 * kernel by kernel; from the second on, a plan of one rank whose step never waited for the
 * device is captured once as a CUDA graph and replayed, one launch a step, with this step's
 * optimizer scalars written to the pinned memory its captured copy reads. */
static void run_step(prt_ctx *ctx, void (*step)(prt_ctx *)) {
  int64_t pass = S.passes++;
  P.on = P.out && pass == P.pass;
  if (prt_cuda_step_mark) prt_cuda_step_mark(pass, 0);
  S.adam_tab.n = S.adam_tab.launched = 0; /* the pass's updates, not yet gathered */
  /* another step function than the captured one (an evaluation between training steps)
   * runs kernel by kernel */
  if (pass > 0 && !S.graph_off && !S.needs_host && ctx->world == 1 &&
      (S.graph ? S.graph_step == step : graph_capture(ctx, step))) {
    adam_scalars_fill(ctx);
    CUDA_OR_DIE("the step's CUDA graph", "cudaGraphLaunch",
                cudaGraphLaunch(S.graph, compute_stream()));
  } else {
    step(ctx);
    adam_flush(ctx);
  }
  step_end(ctx);
  if (prt_cuda_step_mark) prt_cuda_step_mark(pass, 1);
  if (P.on) {
    P.on = 0;
    profile_write(ctx);
  }
}

/* The plan's kernels and cuBLAS, once per process; the GPU itself and how the ranks exchange
 * data are the backend record's (backend.c prt_backend_use_gpu), chosen first. */
void prt_cuda_setup(prt_ctx *ctx) {
  prt_backend_use_gpu(ctx); /* every tensor and the arena are then device memory */
  S.ctx = ctx;
  if (S.ready) return;
  S.ready = 1;
  prt_backend_use_step_runner(run_step);
  const char *sync = getenv("PIPER_CUDA_SYNC");
  S.sync_each = sync && !strcmp(sync, "1");
  size_t total = 0;
  CUDA_OR_DIE("prt_cuda_setup", "cudaMemGetInfo", cudaMemGetInfo(&S.free_at_setup, &total));
  profile_open();
  cudaError_t e = cudaLibraryLoadData(&S.lib, piper_ptx, NULL, NULL, 0, NULL, NULL, 0);
  if (e != cudaSuccess)
    prt_fatal("CUDA error in prt_cuda_setup: the driver could not load the plan's PTX "
              "(cudaLibraryLoadData): %s: %s at %s:%d; update the NVIDIA driver (CUDA 13 "
              "needs >= 580), or recompile with piper-compile --gpu-arch set to this GPU's "
              "sm_NN or lower", cudaGetErrorName(e), cudaGetErrorString(e), __FILE__, __LINE__);
  for (int k = PRT_DK_NONE + 1; k < PRT_DK_COUNT; k++)
    if (cudaLibraryGetKernel(&S.k[k], S.lib, kernel_names[k]) != cudaSuccess) {
      (void)cudaGetLastError(); /* a plan without this op's kernel: fine until called */
      S.k[k] = NULL;
    }
  check_blas(cublasCreate(&S.blas), "prt_cuda_setup", __LINE__);
  check_blas(cublasSetMathMode(S.blas, CUBLAS_PEDANTIC_MATH), "prt_cuda_setup", __LINE__);
  /* the step's fixed-size buffers, once: the optimizer's scalars, the norm and clip scale */
  const char *fn = "prt_cuda_setup";
  size_t scal = ADAM_GROUPS * PRT_ADAM_SCALARS * sizeof(float);
  CUDA_OR_DIE(fn, "AdamW scalars", cudaMallocHost((void **)&S.adam_scal_host, scal));
  CUDA_OR_DIE(fn, "AdamW scalars", cudaMalloc((void **)&S.adam_scal_dev, scal));
  CUDA_OR_DIE(fn, "gradient norm", cudaMallocHost((void **)&S.norm_host, sizeof(double)));
  CUDA_OR_DIE(fn, "clip scale", cudaMallocHost((void **)&S.clip_host, sizeof(float)));
  CUDA_OR_DIE(fn, "gradient norm", cudaMalloc((void **)&S.norm_sq_dev, sizeof(double)));
  CUDA_OR_DIE(fn, "clip scale", cudaMalloc((void **)&S.clip_dev, sizeof(float)));
  S.norm_tab.shadow_n = S.adam_tab.shadow_n = -1;
  /* cuBLAS's workspace, ours from the start: a CUDA graph cannot capture its allocation */
  CUDA_OR_DIE(fn, "cuBLAS workspace", cudaMalloc(&S.blas_ws, CUBLAS_WORKSPACE));
  check_blas(cublasSetWorkspace(S.blas, S.blas_ws, CUBLAS_WORKSPACE), fn, __LINE__);
  const char *attn = getenv("PIPER_CUDA_ATTN");
  if (attn && strcmp(attn, "tc") && strcmp(attn, "fp32"))
    prt_fatal("PIPER_CUDA_ATTN=%s: expected tc (attention on tensor cores, bf16 operands) or "
              "fp32 (the scalar reference kernels); unset: FlashAttention-2 for head sizes 64 "
              "and 128", attn);
  S.attn_env = attn ? !strcmp(attn, "tc") : -1;
  const char *lt = getenv("PIPER_CUDA_LT");
  S.lt_off = lt && !strcmp(lt, "0");
  if (!S.lt_off) LT_OR_DIE(fn, cublasLtCreate(&S.lt));
  const char *graph = getenv("PIPER_CUDA_GRAPH");
  S.graph_off = (graph && !strcmp(graph, "0")) || S.sync_each || P.out;
  S.defer = ctx->world == 1;
}

/* ---- the launchers of the kernel list's PRT_KERNEL_1D entries (include/piper/kernels.def):
 * prt_cuda_<name>(params) launches device kernel piper_<device> over `threads` threads with
 * the params, in order, as its arguments (elementwise ops, the bf16 conversions, one thread per
 * row or element). Each argument macro gives a (type, name) pair; PRT_MAP writes a list of
 * them as the definition's parameters, then as the launch's argument addresses. ---- */
#define F32_OUT(p) (float *, p)
#define F32_IN(p) (const float *, p)
#define I32_OUT(p) (int32_t *, p)
#define I32_IN(p) (const int32_t *, p)
#define BF16_OUT(p) (uint16_t *, p)
#define BF16_IN(p) (const uint16_t *, p)
#define FP_OUT(p) (float *, p)
#define FP_IN(p) (const float *, p)
#define I64_V(v) (int64_t, v)
#define F32_V(v) (float, v)
#define I32_V(v) (int32_t, v)
#define CTX_P(c) (prt_ctx *, c)
#define PAIR_DECL_(type, name) type name
#define PAIR_DECL(pair) PAIR_DECL_ pair
#define PAIR_ADDR_(type, name) &name
#define PAIR_ADDR(pair) PAIR_ADDR_ pair
/* m(x) for each of 1 to 12 arguments, comma-separated */
#define PRT_MAP(m, ...) PRT_MAP_N(PRT_NARGS(__VA_ARGS__), m, __VA_ARGS__)
#define PRT_MAP_N(n, m, ...) PRT_CAT(PRT_MAP_, n)(m, __VA_ARGS__)
#define PRT_CAT(a, b) PRT_CAT_(a, b)
#define PRT_CAT_(a, b) a##b
#define PRT_NARGS(...) PRT_NARGS_(__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define PRT_NARGS_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define PRT_MAP_1(m, a) m(a)
#define PRT_MAP_2(m, a, ...) m(a), PRT_MAP_1(m, __VA_ARGS__)
#define PRT_MAP_3(m, a, ...) m(a), PRT_MAP_2(m, __VA_ARGS__)
#define PRT_MAP_4(m, a, ...) m(a), PRT_MAP_3(m, __VA_ARGS__)
#define PRT_MAP_5(m, a, ...) m(a), PRT_MAP_4(m, __VA_ARGS__)
#define PRT_MAP_6(m, a, ...) m(a), PRT_MAP_5(m, __VA_ARGS__)
#define PRT_MAP_7(m, a, ...) m(a), PRT_MAP_6(m, __VA_ARGS__)
#define PRT_MAP_8(m, a, ...) m(a), PRT_MAP_7(m, __VA_ARGS__)
#define PRT_MAP_9(m, a, ...) m(a), PRT_MAP_8(m, __VA_ARGS__)
#define PRT_MAP_10(m, a, ...) m(a), PRT_MAP_9(m, __VA_ARGS__)
#define PRT_MAP_11(m, a, ...) m(a), PRT_MAP_10(m, __VA_ARGS__)
#define PRT_MAP_12(m, a, ...) m(a), PRT_MAP_11(m, __VA_ARGS__)
#define PRT_KERNEL_1D(name, params, device, threads)                                       \
  void prt_cuda_##name(PRT_MAP(PAIR_DECL, PRT_KERNEL_UNPAREN params), int32_t bf16) {        \
    LAUNCH(PRT_DK_##device, threads, bf16, "prt_cuda_" #name,                                \
           PRT_MAP(PAIR_ADDR, PRT_KERNEL_UNPAREN params));                                   \
  }
#include "piper/kernels.def"
#undef PAIR_DECL_
#undef PAIR_DECL
#undef PAIR_ADDR_
#undef PAIR_ADDR

/* ---- copy: a PRT_KERNEL of its own, as an in-place copy (dst == src) launches nothing ---- */

void prt_cuda_copy(float *dst, const float *src, int64_t n, int32_t bf16) {
  if (dst == src) return;
  LAUNCH(PRT_DK_copy, n, bf16, "prt_cuda_copy", &dst, &src, &n);
}

/* ---- embedding (the forward is a PRT_KERNEL_1D) ---- */

/* dwte in chunks of R token rows, as many chunks as 64 MB of V x C slabs hold (at least one,
 * at most one per 256 rows), then the slabs summed in order; dwpe one thread per (t, c). */
void prt_cuda_embedding_bwd(float *dwte, float *dwpe, const float *dout, const int32_t *tok,
                            int64_t B, int64_t T, int64_t C, int64_t V, int32_t bf16) {
  const char *fn = "prt_cuda_embedding_bwd";
  int64_t BT = B * T, VC = V * C;
  int64_t chunks = VC > 0 ? WTE_SLAB_FLOATS / VC : 1;
  if (chunks > (BT + 255) / 256) chunks = (BT + 255) / 256;
  if (chunks < 1) chunks = 1;
  int64_t R = (BT + chunks - 1) / chunks;
  if (R < 1) R = 1;
  chunks = (BT + R - 1) / R;
  float *slabs = scratch(SCR_WTE, (size_t)(chunks > 0 ? chunks : 1) * VC * sizeof(float), fn);
  int32_t dy = io_bit(bf16, 2, 1); /* dout, the kernels' argument 1 */
  LAUNCH(PRT_DK_embedding_wte_partials, chunks * C, dy, fn, &slabs, &dout, &tok, &BT, &C, &V,
         &R);
  LAUNCH(PRT_DK_sum_slabs, VC, 0, fn, &dwte, &slabs, &chunks, &VC);
  LAUNCH(PRT_DK_embedding_bwd_wpe, T * C, dy, fn, &dwpe, &dout, &B, &T, &C);
}

/* A launch `call` of our nvcc-built kernels (cuda_attention.cu, cuda_norms.cu) for runtime
 * function fn: fatal on failure, timed as one op (the profile's "what"). */
#define NVCC_OP(fn, what, call)                                                            \
  do {                                                                                     \
    int slot_ = op_begin((what), (fn));                                                    \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) fail_cuda((fn), (what), e_, __LINE__);                          \
    op_end(slot_, (what), (fn));                                                           \
  } while (0)

/* ---- layernorm: dx and the forward a warp a row (kernels/cuda_norms.cu), dw and db column
 * sums (chunks of COL_CHUNK rows, f64) finished by one launch ---- */

void prt_cuda_layernorm_fwd(float *out, float *mean, float *rstd, const float *x,
                            const float *w, const float *b, int64_t N, int64_t C, float eps,
                            int32_t bf16) {
  const char *fn = "prt_cuda_layernorm_fwd";
  NVCC_OP(fn, "layernorm forward (warp a row)",
          prt_cuda_layernorm_fwd_launch(fp_out(out, bf16, 0), mean, rstd, fp_in(x, bf16, 3), w,
                                        b, N, C, eps, compute_stream()));
}

void prt_cuda_layernorm_bwd(float *dx, float *dw, float *db, const float *dout,
                            const float *x, const float *w, const float *mean,
                            const float *rstd, int64_t N, int64_t C, int32_t bf16) {
  const char *fn = "prt_cuda_layernorm_bwd";
  NVCC_OP(fn, "layernorm dx (warp a row)",
          prt_cuda_layernorm_dx_launch(fp_out(dx, bf16, 0), fp_in(dout, bf16, 3),
                                       fp_in(x, bf16, 4), w, mean, rstd, N, C,
                                       compute_stream()));
  int64_t R = COL_CHUNK, chunks = (N + R - 1) / R;
  double *pw = scratch(SCR_COLS, (size_t)(2 * chunks * C + 1) * sizeof(double), fn);
  double *pb = pw + chunks * C;
  LAUNCH(PRT_DK_layernorm_dwdb_partials, chunks * C, io_bit(bf16, 3, 2) | io_bit(bf16, 4, 3), fn,
         &pw, &pb, &dout, &x, &mean, &rstd, &N, &C, &R);
  /* pb follows pw: one launch finishes both */
  LAUNCH(PRT_DK_col_finish2, 2 * C, 0, fn, &dw, &db, &pw, &chunks, &C);
}

/* ---- linear: cuBLAS on the row-major matrices, seen column-major as their transposes
 * (kernels/cuda_gemm.h holds the arguments; test/gpu checks them through CBLAS) ---- */

static void sgemm(prt_gemm g, const char *fn) {
  float one = 1.0f;
  check_blas(cublasSetStream(S.blas, compute_stream()), fn, __LINE__);
  int slot = op_begin("cublasSgemm", fn);
  check_blas(cublasSgemm(S.blas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                         g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, blas_dim(g.m, fn),
                         blas_dim(g.n, fn), blas_dim(g.k, fn), &one, g.A, blas_dim(g.lda, fn),
                         g.B, blas_dim(g.ldb, fn), &g.beta, g.C, blas_dim(g.ldc, fn)),
             fn, __LINE__);
  op_end(slot, "cublasSgemm", fn);
}

/* ---- cuBLASLt: the linear forward's product and its bias in one kernel ----
 * D = op(A) op(B) + bias, the bias added to each row i of the column-major D (each column of
 * the row-major out) after the fp32 accumulation, as the CPU's (x w^T) + b
 * (CUBLASLT_EPILOGUE_BIAS, CUBLAS_COMPUTE_32F: no TF32); A and B fp32 or bf16, D fp32 or
 * (with bf16 A and B) bf16, the sum rounded once at the store. One plan (descriptors and the
 * heuristic's algorithm) per shape, made the first time (the warm-up). Where cuBLASLt offers
 * no algorithm, its table is full, or PIPER_CUDA_LT=0, the launcher falls back to bias rows
 * then cuBLAS adding to them (sgemm / GemmEx beta 1). */
enum { LT_PLANS = 64 };
typedef struct {
  prt_gemm key;                   /* the shape, transposes and leading dimensions (pointers
                                     and beta ignored) */
  int bf16;                       /* A and B bf16 */
  int out_bf16;                   /* C = D bf16 */
  cublasLtEpilogue_t epi;         /* BIAS (the forward's bias added) or BGRADB (the bias
                                     gradient reduced from B) */
  cublasLtMatmulDesc_t desc;      /* compute 32F, the transposes, the epilogue */
  cublasLtMatrixLayout_t a, b, c; /* A, B, and C = D */
  cublasLtMatmulAlgo_t algo;      /* the heuristic's first */
  int ok;                         /* 0: cuBLASLt has no algorithm: use the fallback */
} lt_plan;
static lt_plan lt_plans[LT_PLANS];
static int lt_nplans;

static int lt_same_shape(const prt_gemm *x, const prt_gemm *y) {
  return x->transA == y->transA && x->transB == y->transB && x->m == y->m && x->n == y->n &&
         x->k == y->k && x->lda == y->lda && x->ldb == y->ldb && x->ldc == y->ldc;
}

/* The plan of g's shape and epilogue, made on first use; NULL when the table is full. */
static lt_plan *lt_plan_of(prt_gemm g, cublasLtEpilogue_t epi, int bf16, int out_bf16,
                           const char *fn) {
  for (int i = 0; i < lt_nplans; i++)
    if (lt_plans[i].bf16 == bf16 && lt_plans[i].out_bf16 == out_bf16 &&
        lt_plans[i].epi == epi && lt_same_shape(&lt_plans[i].key, &g))
      return &lt_plans[i];
  if (lt_nplans == LT_PLANS) return NULL;
  lt_plan *p = &lt_plans[lt_nplans++];
  p->key = g;
  p->bf16 = bf16;
  p->out_bf16 = out_bf16;
  p->epi = epi;
  cublasOperation_t ta = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t tb = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cudaDataType_t in = bf16 ? CUDA_R_16BF : CUDA_R_32F, f32 = CUDA_R_32F;
  LT_OR_DIE(fn, cublasLtMatmulDescCreate(&p->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  LT_OR_DIE(fn, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
                                               sizeof ta));
  LT_OR_DIE(fn, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
                                               sizeof tb));
  LT_OR_DIE(fn, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi,
                                               sizeof epi));
  LT_OR_DIE(fn, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                               &f32, sizeof f32));
  /* stored shapes: op(A) is m x k, so A is m x k (N) or k x m (T); B likewise k x n */
  LT_OR_DIE(fn, cublasLtMatrixLayoutCreate(&p->a, in, g.transA ? g.k : g.m,
                                           g.transA ? g.m : g.k, g.lda));
  LT_OR_DIE(fn, cublasLtMatrixLayoutCreate(&p->b, in, g.transB ? g.n : g.k,
                                           g.transB ? g.k : g.n, g.ldb));
  LT_OR_DIE(fn, cublasLtMatrixLayoutCreate(&p->c, out_bf16 ? CUDA_R_16BF : CUDA_R_32F, g.m, g.n,
                                           g.ldc));
  cublasLtMatmulPreference_t pref;
  size_t ws = CUBLAS_WORKSPACE;
  LT_OR_DIE(fn, cublasLtMatmulPreferenceCreate(&pref));
  LT_OR_DIE(fn, cublasLtMatmulPreferenceSetAttribute(
                    pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t r;
  int found = 0;
  cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(S.lt, p->desc, p->a, p->b, p->c, p->c,
                                                     pref, 1, &r, &found);
  LT_OR_DIE(fn, cublasLtMatmulPreferenceDestroy(pref));
  p->ok = st == CUBLAS_STATUS_SUCCESS && found > 0;
  if (p->ok) p->algo = r.algo;
  return p;
}

/* g (beta 0) with the epilogue `epi` on the fp32 vector `bias` (BIAS: read and added;
 * BGRADB: written), as one cuBLASLt call; 0 when the caller must use the fallback. */
static int lt_gemm_epilogue(prt_gemm g, cublasLtEpilogue_t epi, const float *bias, int bf16,
                            int out_bf16, const char *fn) {
  if (S.lt_off || g.m > INT_MAX || g.n > INT_MAX || g.k > INT_MAX) return 0;
  lt_plan *p = lt_plan_of(g, epi, bf16, out_bf16, fn);
  if (!p || !p->ok) return 0;
  LT_OR_DIE(fn, cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                               &bias, sizeof bias));
  float one = 1.0f, zero = 0.0f;
  const char *what = epi == CUBLASLT_EPILOGUE_BGRADB
                         ? (bf16 ? "cublasLtMatmul bf16 + bgradb" : "cublasLtMatmul + bgradb")
                         : (bf16 ? "cublasLtMatmul bf16 + bias" : "cublasLtMatmul + bias");
  int slot = op_begin(what, fn);
  LT_OR_DIE(fn, cublasLtMatmul(S.lt, p->desc, &one, g.A, p->a, g.B, p->b, &zero, g.C, p->c,
                               g.C, p->c, &p->algo, S.blas_ws, CUBLAS_WORKSPACE,
                               compute_stream()));
  op_end(slot, what, fn);
  return 1;
}

void prt_cuda_linear_fwd(float *out, const float *x, const float *w, const float *b, int64_t M,
                         int64_t N, int64_t K, int32_t bf16) {
  const char *fn = "prt_cuda_linear_fwd";
  if (b && lt_gemm_epilogue(prt_gemm_linear_fwd(out, x, w, M, N, K, 0.0f),
                            CUBLASLT_EPILOGUE_BIAS, b, 0, 0, fn))
    return;
  if (b) { /* out = bias rows, then out += x w^T */
    LAUNCH(PRT_DK_bias_rows, M * N, 0, fn, &out, &b, &M, &N);
  }
  sgemm(prt_gemm_linear_fwd(out, x, w, M, N, K, b ? 1.0f : 0.0f), fn);
}

void prt_cuda_linear_bwd_input(float *dx, const float *dout, const float *w, int64_t M,
                               int64_t N, int64_t K, int32_t bf16) {
  sgemm(prt_gemm_linear_bwd_input(dx, dout, w, M, N, K), "prt_cuda_linear_bwd_input");
}

void prt_cuda_linear_bwd_weight(float *dw, const float *dout, const float *x, int64_t M,
                                int64_t N, int64_t K, int32_t bf16) {
  sgemm(prt_gemm_linear_bwd_weight(dw, dout, x, M, N, K), "prt_cuda_linear_bwd_weight");
}

/* The same product on bf16 operands (A and B hold uint16_t bf16 patterns; prt_gemm's float
 * pointers carry them untouched): cublasGemmEx with CUDA_R_16BF inputs and CUBLAS_COMPUTE_32F,
 * so the products of bf16 values are accumulated in fp32 on tensor cores (the pedantic math
 * mode does not apply to a 16-bit input type's compute); C fp32, or bf16 where out_bf16 (the
 * fp32 sum rounded once at the store, beta 0). */
static void gemm_bf16(prt_gemm g, int out_bf16, const char *fn) {
  float one = 1.0f;
  check_blas(cublasSetStream(S.blas, compute_stream()), fn, __LINE__);
  int slot = op_begin("cublasGemmEx", fn);
  check_blas(cublasGemmEx(S.blas, g.transA ? CUBLAS_OP_T : CUBLAS_OP_N,
                          g.transB ? CUBLAS_OP_T : CUBLAS_OP_N, blas_dim(g.m, fn),
                          blas_dim(g.n, fn), blas_dim(g.k, fn), &one, g.A, CUDA_R_16BF,
                          blas_dim(g.lda, fn), g.B, CUDA_R_16BF, blas_dim(g.ldb, fn), &g.beta,
                          g.C, out_bf16 ? CUDA_R_16BF : CUDA_R_32F, blas_dim(g.ldc, fn),
                          CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
             fn, __LINE__);
  op_end(slot, "cublasGemmEx", fn);
}

/* out (M, N) = x w^T + b on bf16 x and w; out fp32, or bf16 (bit 0 of the mask): the fp32 sum
 * of product and bias rounded once. Without a cuBLASLt algorithm for the bias (or with
 * PIPER_CUDA_LT=0) the bias rows and the product are summed in fp32 as before, into scratch
 * for a bf16 out, which one bf16_narrow then rounds: the fallback alone converts. */
void prt_cuda_linear_fwd_bf16(float *out, const uint16_t *x, const uint16_t *w, const float *b,
                              int64_t M, int64_t N, int64_t K, int32_t bf16) {
  const char *fn = "prt_cuda_linear_fwd_bf16";
  int out16 = PRT_BF16_BIT(bf16, 0);
  const float *xf = (const float *)x, *wf = (const float *)w;
  if (b && lt_gemm_epilogue(prt_gemm_linear_fwd(out, xf, wf, M, N, K, 0.0f),
                            CUBLASLT_EPILOGUE_BIAS, b, 1, out16, fn))
    return;
  if (!b) {
    gemm_bf16(prt_gemm_linear_fwd(out, xf, wf, M, N, K, 0.0f), out16, fn);
    return;
  }
  /* acc = bias rows, then acc += x w^T in fp32, as prt_cuda_linear_fwd */
  float *acc = out16 ? scratch(SCR_LINEAR, (size_t)(M * N > 0 ? M * N : 1) * sizeof(float), fn)
                     : out;
  LAUNCH(PRT_DK_bias_rows, M * N, 0, fn, &acc, &b, &M, &N);
  gemm_bf16(prt_gemm_linear_fwd(acc, xf, wf, M, N, K, 1.0f), 0, fn);
  int64_t n = M * N;
  if (out16) LAUNCH(PRT_DK_bf16_narrow, n, 1, fn, &out, &acc, &n);
}

void prt_cuda_linear_bwd_input_bf16(float *dx, const uint16_t *dout, const uint16_t *w,
                                    int64_t M, int64_t N, int64_t K, int32_t bf16) {
  gemm_bf16(prt_gemm_linear_bwd_input(dx, (const float *)dout, (const float *)w, M, N, K),
            PRT_BF16_BIT(bf16, 0), "prt_cuda_linear_bwd_input_bf16");
}

void prt_cuda_linear_bwd_weight_bf16(float *dw, const uint16_t *dout, const uint16_t *x,
                                     int64_t M, int64_t N, int64_t K, int32_t bf16) {
  gemm_bf16(prt_gemm_linear_bwd_weight(dw, (const float *)dout, (const float *)x, M, N, K), 0,
            "prt_cuda_linear_bwd_weight_bf16");
}

/* db (N) = the column sums of dout (M, N): chunk partials in f64, then their sum
 * (`io`: col_partials' bf16 mask, bit 1 where dout holds bf16) */
static void bias_bwd(float *db, const float *dout, int64_t M, int64_t N, int32_t io,
                     const char *fn) {
  int64_t R = COL_CHUNK, chunks = (M + R - 1) / R;
  double *partial = scratch(SCR_COLS, (size_t)(chunks * N + 1) * sizeof(double), fn);
  LAUNCH(PRT_DK_col_partials, chunks * N, io, fn, &partial, &dout, &M, &N, &R);
  col_finish(db, partial, chunks, N, fn);
}

void prt_cuda_bias_bwd(float *db, const float *dout, int64_t M, int64_t N, int32_t bf16) {
  bias_bwd(db, dout, M, N, io_bit(bf16, 1, 1), "prt_cuda_bias_bwd");
}

/* dw = dout^T x with db = dout's column sums in the same cuBLASLt call: in
 * prt_gemm_linear_bwd_weight's product dw^T = x^T op(B), op(B) = dout (M x N) is B, and
 * CUBLASLT_EPILOGUE_BGRADB writes the sums of op(B) over the product's k (= M, the rows) for
 * each of D's N columns: db. Without a cuBLASLt algorithm (or with PIPER_CUDA_LT=0) the GEMM
 * and bias_bwd's kernels, as the unfused ops. */
static void linear_bwd_weight_bias(float *dw, float *db, const float *dout, const float *x,
                                   int64_t M, int64_t N, int64_t K, int bf16, const char *fn) {
  prt_gemm g = prt_gemm_linear_bwd_weight(dw, dout, x, M, N, K);
  if (lt_gemm_epilogue(g, CUBLASLT_EPILOGUE_BGRADB, db, bf16, 0, fn)) return;
  if (bf16) gemm_bf16(g, 0, fn);
  else sgemm(g, fn);
  bias_bwd(db, dout, M, N, bf16 ? 1 << 1 : 0, fn);
}

void prt_cuda_linear_bwd_weight_bias(float *dw, float *db, const float *dout, const float *x,
                                     int64_t M, int64_t N, int64_t K, int32_t bf16) {
  linear_bwd_weight_bias(dw, db, dout, x, M, N, K, 0, "prt_cuda_linear_bwd_weight_bias");
}

void prt_cuda_linear_bwd_weight_bias_bf16(float *dw, float *db, const uint16_t *dout,
                                          const uint16_t *x, int64_t M, int64_t N, int64_t K,
                                          int32_t bf16) {
  linear_bwd_weight_bias(dw, db, (const float *)dout, (const float *)x, M, N, K, 1,
                         "prt_cuda_linear_bwd_weight_bias_bf16");
}

/* ---- attention: kernels/cuda_attention.cu ---- */

/* The fused kernels hold a head in registers: a larger head is refused by name. */
static void check_heads(int64_t C, int64_t H, const char *fn) {
  if (H <= 0 || C % H || C / H > PRT_CUDA_ATTENTION_MAX_HEAD)
    prt_fatal("%s: head size C/H = %lld/%lld is not an integer <= %d, which the GPU attention "
              "kernel (kernels/cuda_attention.cu) needs; use more heads or the CPU target", fn,
              (long long)C, (long long)H, PRT_CUDA_ATTENTION_MAX_HEAD);
}

/* attn_tc (PIPER_CUDA_ATTN=tc, or unset in a bf16 plan): the attention ops run
 * kernels/cuda_flash.cu (tensor cores, bf16 operands, fp32 accumulation) on GPT's packed qkv
 * (rows of 3C: q, k, v at channels 0, C, 2C) or Qwen3's separate q, k, v, for head sizes up
 * to PRT_CUDA_FLASH_MAX_HEAD (larger ones keep the fp32 kernels); the same probs/lse and D
 * scratch as the fp32 kernels, and scratch for the launch's bf16 copies of its operands.
 * Unset, a bf16 plan is one whose attention reads bf16 (`q16`: its q's mask bit), or that
 * converts around fp32 kernels (--bf16-io convert: its PTX holds bf16_widen): tensor cores,
 * 15x faster on an H200 (docs/gpu-speed.md); an fp32 plan keeps the fp32 kernels, whose
 * results stay comparable with PyTorch's fp32. */
static int attn_tc(int64_t head, int q16) {
  int tc = S.attn_env >= 0 ? S.attn_env : q16 || S.k[PRT_DK_bf16_widen] != NULL;
  return tc && head <= PRT_CUDA_FLASH_MAX_HEAD;
}
static uint16_t *flash_staging(int64_t B, int64_t T, int64_t H, int64_t KV, const char *fn) {
  return scratch(SCR_FLASH_STAGE, prt_cuda_flash_stage_bytes(B, T, H, KV), fn);
}

/* FlashAttention-2 (kernels/cuda_fa2.cu: blocks of 4 warps, K/V tiles in shared memory, the
 * backward's D from the forward's out) runs an attention op unless PIPER_CUDA_ATTN asks for
 * the older kernels. Its precision follows the op's tensors, the bits `args` of its bf16 mask:
 * the bf16 kernels when every one is bf16 (a bf16 plan: q, k, v read in place and O, dq, dk,
 * dv written as bf16, no staging copy), the fp32 ones (fp32 FMAs, no TF32) when none is (an
 * fp32 plan, or a bf16 one converting at each kernel's edge). What it refuses keeps the older
 * kernels (cuda_flash.cu or the scalar cuda_attention.cu, as attn_tc picks), each for a reason:
 * - a head size other than 64 or 128 (prt_cuda_fa2_takes): the kernels are instanced for the
 *   two the models use, a tile's head columns being whole ldmatrix/mma steps and the
 *   registers sized by D; the suite's small models (C/H = 16) run the older kernels;
 * - tensors of mixed precision: neither instance reads them;
 * - a tensor not 16-byte aligned, or a row stride that is not a multiple of 16 bytes (then
 *   neither are k and v at C, 2C of the packed rows): the tiles move by 16-byte cp.async.
 * Returns the element size of the kernels to run (2 bf16, 4 fp32), 0 for the older ones. */
static int fa2_elem(int64_t D, int64_t qs, int64_t ks, int64_t os, int32_t bf16, int32_t args,
                    const void *const *ptrs, int nptrs) {
  if (S.attn_env >= 0) return 0;
  int32_t in16 = bf16 & args;
  int elem = in16 == args ? 2 : in16 == 0 ? 4 : 0;
  if (!elem || !prt_cuda_fa2_takes(D, qs, ks, os, elem)) return 0;
  for (int i = 0; i < nptrs; i++)
    if (!prt_cuda_fa2_aligned(ptrs[i])) return 0;
  return elem;
}
#define FA2_ELEM(D, qs, ks, os, bf16, args, ...)                                               \
  fa2_elem((D), (qs), (ks), (os), (bf16), (args), (const void *const[]){__VA_ARGS__},          \
           (int)(sizeof((const void *const[]){__VA_ARGS__}) / sizeof(const void *)))

/* The FA2 backward's scratch: the bf16 kernels' fp32 dQ accumulator and D, the fp32 ones' D */
static float *fa2_scratch(int elem, int64_t B, int64_t T, int64_t H, int64_t D, const char *fn) {
  size_t bytes = elem == 2 ? prt_cuda_fa2_bwd_scratch_bytes(B, T, H, D)
                           : prt_cuda_fa2_bwd_f32_scratch_bytes(B, T, H);
  return scratch(SCR_ATTN_D, bytes > 0 ? bytes : 1, fn);
}

/* The profile's names of FlashAttention-2's calls: [GQA][backward][fp32]. */
static const char *const fa2_names[2][2][2] = {
    {{"FlashAttention-2 forward (bf16)", "FlashAttention-2 forward (fp32)"},
     {"FlashAttention-2 backward (bf16)", "FlashAttention-2 backward (fp32)"}},
    {{"FlashAttention-2 GQA forward (bf16)", "FlashAttention-2 GQA forward (fp32)"},
     {"FlashAttention-2 GQA backward (bf16)", "FlashAttention-2 GQA backward (fp32)"}},
};

/* FlashAttention-2's forward in fa2_elem's precision (2: bf16 bits, 4: fp32) on q, k, v, each
 * a tensor of that element type, with row strides qs, ks (v's as k's) and os (in elements):
 * the packed attention passes its (B, T, 3C) rows with KV = H, the GQA op its three tensors. */
static void fa2_forward(int elem, int gqa, float *out, float *lse, const void *q, const void *k,
                        const void *v, int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D,
                        int64_t qs, int64_t ks, int64_t os, const char *fn) {
  const char *what = fa2_names[gqa][0][elem == 4];
  if (elem == 2)
    NVCC_OP(fn, what,
            prt_cuda_fa2_fwd((uint16_t *)out, lse, q, k, v, B, T, H, KV, D, qs, ks, os,
                             compute_stream()));
  else
    NVCC_OP(fn, what,
            prt_cuda_fa2_fwd_f32(out, lse, q, k, v, B, T, H, KV, D, qs, ks, os,
                                 compute_stream()));
}

/* Its backward, as fa2_forward's: dq, dk, dv from dout, the forward's out and lse, and q, k,
 * v, with the scratch fa2_scratch sizes. */
static void fa2_backward(int elem, int gqa, void *dq, void *dk, void *dv, const void *dout,
                         const void *out, const float *lse, const void *q, const void *k,
                         const void *v, int64_t B, int64_t T, int64_t H, int64_t KV, int64_t D,
                         int64_t qs, int64_t ks, int64_t os, const char *fn) {
  const char *what = fa2_names[gqa][1][elem == 4];
  float *scr = fa2_scratch(elem, B, T, H, D, fn);
  if (elem == 2)
    NVCC_OP(fn, what,
            prt_cuda_fa2_bwd(dq, dk, dv, dout, out, lse, q, k, v, scr, B, T, H, KV, D, qs, ks,
                             os, compute_stream()));
  else
    NVCC_OP(fn, what,
            prt_cuda_fa2_bwd_f32(dq, dk, dv, dout, out, lse, q, k, v, scr, B, T, H, KV, D, qs,
                                 ks, os, compute_stream()));
}

void prt_cuda_attention_fwd(float *out, float *probs, const float *qkv, int64_t B, int64_t T,
                            int64_t C, int64_t H, int32_t bf16) {
  const char *fn = "prt_cuda_attention_fwd";
  check_heads(C, H, fn);
  int64_t Dh = C / H;
  /* q, k, v at channels 0, C, 2C of the (B, T, 3C) rows, read in place */
  int elem = FA2_ELEM(Dh, 3 * C, 3 * C, C, bf16, 1 << 0 | 1 << 2, out, qkv);
  if (elem) { /* q, k, v at element offsets 0, C, 2C of each row */
    const char *x = (const char *)qkv;
    fa2_forward(elem, 0, out, probs, x, x + C * elem, x + 2 * C * elem, B, T, H, H, Dh, 3 * C,
                3 * C, C, fn);
    return;
  }
  if (attn_tc(C / H, PRT_BF16_BIT(bf16, 2))) {
    uint16_t *staged = flash_staging(B, T, H, H, fn);
    NVCC_OP(fn, "flash attention forward (tensor cores)",
            prt_cuda_flash_fwd_launch(fp_out(out, bf16, 0), probs, fp_in(qkv, bf16, 2),
                                      fp_in_at(qkv, bf16, 2, C), fp_in_at(qkv, bf16, 2, 2 * C),
                                      staged, B, T, H, H, C / H, 3 * C, 3 * C, C,
                                      compute_stream()));
    return;
  }
  NVCC_OP(fn, "flash attention forward",
          prt_cuda_attention_fwd_launch(fp_out(out, bf16, 0), probs, fp_in(qkv, bf16, 2), B, T,
                                        C, H, compute_stream()));
}

/* `out` (the forward's) gives FlashAttention-2's backward D = rowsum(dout o out); the older
 * kernels take D from the probabilities they recompute */
void prt_cuda_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *out,
                            const float *probs, int64_t B, int64_t T, int64_t C, int64_t H,
                            int32_t bf16) {
  const char *fn = "prt_cuda_attention_bwd";
  check_heads(C, H, fn);
  int64_t Dh = C / H;
  int elem = FA2_ELEM(Dh, 3 * C, 3 * C, C, bf16, 1 << 0 | 1 << 1 | 1 << 2 | 1 << 3, dqkv, dout,
                      qkv, out);
  if (elem) {
    const char *x = (const char *)qkv;
    char *dx = (char *)dqkv;
    fa2_backward(elem, 0, dx, dx + C * elem, dx + 2 * C * elem, dout, out, probs, x,
                 x + C * elem, x + 2 * C * elem, B, T, H, H, Dh, 3 * C, 3 * C, C, fn);
    return;
  }
  float *D = scratch(SCR_ATTN_D, (size_t)(B * H * T > 0 ? B * H * T : 1) * sizeof(float), fn);
  if (attn_tc(C / H, PRT_BF16_BIT(bf16, 2))) {
    uint16_t *staged = flash_staging(B, T, H, H, fn);
    NVCC_OP(fn, "flash attention backward (tensor cores)",
            prt_cuda_flash_bwd_launch(fp_out(dqkv, bf16, 0), fp_out_at(dqkv, bf16, 0, C),
                                      fp_out_at(dqkv, bf16, 0, 2 * C), D, fp_in(dout, bf16, 1),
                                      fp_in(qkv, bf16, 2), fp_in_at(qkv, bf16, 2, C),
                                      fp_in_at(qkv, bf16, 2, 2 * C), probs, staged, B, T, H, H,
                                      C / H, 3 * C, 3 * C, C, compute_stream()));
    return;
  }
  NVCC_OP(fn, "flash attention backward",
          prt_cuda_attention_bwd_launch(fp_out(dqkv, bf16, 0), fp_in(dout, bf16, 1),
                                        fp_in(qkv, bf16, 2), probs, D, B, T, C, H,
                                        compute_stream()));
}

/* ---- loss ---- */

void prt_cuda_cross_entropy_fwd(float *loss, float *probs, const float *logits,
                                const int32_t *targets, int64_t N, int64_t V, float smoothing,
                                int32_t bf16) {
  const char *fn = "prt_cuda_cross_entropy_fwd";
  double *rows = scratch(SCR_ROWLOSS, (size_t)(N > 0 ? N : 1) * sizeof(double), fn);
  LAUNCH(PRT_DK_cross_entropy_fwd, N, io_bit(bf16, 2, 2), fn, &probs, &rows, &logits, &targets,
         &N, &V, &smoothing);
  LAUNCH(PRT_DK_mean_rows, 1, 0, fn, &loss, &rows, &N);
}

/* ---- optimizer and gradient norm: every tensor of the step in one launch ----
 * prt_cuda_adamw and prt_cuda_grad_sq_accum note their tensor in a table of PRT_TABLE_CHUNK-element
 * chunks (tensor_chunk); adamw_multi runs the whole AdamW table as one kernel, and
 * grad_norm_sync sums every noted gradient in one pass (sumsq_chunks: NORM_LANES threads a
 * chunk; sum_lanes; norm_clip: the squared norm and the clip scale, on the device). A table
 * the device already holds is not copied again, so from the second step on only the scalars
 * of the step (lr, bias corrections: ADAM_GROUPS x 8 floats) cross to the device. With one
 * rank the host learns the norm once, after the step's last kernel (step_end); with several
 * it reads the squared norm at grad_norm_sync (the all-reduce needs it) and sends the clip
 * scale back. */

/* Appends the chunks of one tensor of n elements to table t (pinned, grown in the warm-up). */
static void table_add(chunk_table *t, tensor_chunk e, int64_t n, const char *fn) {
  int64_t add = (n + PRT_TABLE_CHUNK - 1) / PRT_TABLE_CHUNK;
  if (t->n + add > t->cap) {
    if (S.capturing)
      prt_fatal("%s: the update table grows while the step is captured (the warm-up step had "
                "fewer tensors); rerun with PIPER_CUDA_GRAPH=0 and report it", fn);
    int64_t cap = 2 * (t->n + add);
    tensor_chunk *h = NULL;
    CUDA_OR_DIE(fn, "update table", cudaMallocHost((void **)&h, (size_t)cap * sizeof *h));
    if (t->n) memcpy(h, t->host, (size_t)t->n * sizeof *h);
    CUDA_OR_DIE(fn, "cudaFreeHost", cudaFreeHost(t->host));
    t->host = h;
    tensor_chunk *shadow = realloc(t->shadow, (size_t)cap * sizeof *h);
    if (!shadow) prt_fatal("%s: out of host memory for the update table; free memory", fn);
    t->shadow = shadow;
    t->cap = cap;
  }
  for (int64_t k = 0; k < add; k++) {
    e.start = k * PRT_TABLE_CHUNK;
    e.len = n - e.start < PRT_TABLE_CHUNK ? n - e.start : PRT_TABLE_CHUNK;
    t->host[t->n++] = e;
  }
}

/* Entries [from, t->n) of table t on the device (scratch `slot`, returned at entry 0),
 * copied from the pinned host only when they differ from the copy the device holds; all of
 * them when the table moved. */
static const tensor_chunk *table_upload(chunk_table *t, int64_t from, int slot,
                                        const char *fn) {
  size_t bytes = (size_t)t->n * sizeof *t->host;
  tensor_chunk *dev = scratch(slot, bytes ? bytes : sizeof *t->host, fn);
  if (S.scratch_cap[slot] != t->dev_cap) { /* a new buffer holds nothing yet */
    t->dev_cap = S.scratch_cap[slot];
    t->shadow_n = -1;
    from = 0;
  }
  size_t off = (size_t)from * sizeof *t->host, span = bytes - off;
  if (span == 0) { /* nothing to send (an empty table has no host array yet: memcpy(NULL)) */
    if (t->shadow_n < t->n) t->shadow_n = t->n;
    return dev;
  }
  if (t->shadow_n < t->n || memcmp(t->shadow + from, t->host + from, span)) {
    CUDA_OR_DIE(fn, "update table upload",
                cudaMemcpyAsync(dev + from, t->host + from, span, cudaMemcpyHostToDevice,
                                compute_stream()));
    memcpy(t->shadow + from, t->host + from, span);
    if (t->shadow_n < t->n) t->shadow_n = t->n;
  }
  return dev;
}

/* The scalar group of (beta1, beta2, eps), added the first time it is seen. */
static int64_t adam_group(float beta1, float beta2, float eps, const char *fn) {
  for (int i = 0; i < S.adam_groups; i++)
    if (S.adam_key[i][0] == beta1 && S.adam_key[i][1] == beta2 && S.adam_key[i][2] == eps)
      return i;
  if (S.adam_groups == ADAM_GROUPS)
    prt_fatal("%s: more than %d distinct AdamW (beta1, beta2, eps) in one plan; raise "
              "ADAM_GROUPS in runtime/kernels/cuda.c", fn, ADAM_GROUPS);
  float *k = S.adam_key[S.adam_groups];
  k[0] = beta1, k[1] = beta2, k[2] = eps;
  return S.adam_groups++;
}

/* Every group's scalars for this step (lr, t) into the pinned host row (prt_adam_scalars_of:
 * the CPU's arithmetic), which the copy before adamw_multi, captured or not, reads. */
static void adam_scalars_fill(prt_ctx *ctx) {
  for (int i = 0; i < S.adam_groups; i++) {
    prt_adam_scalars a = prt_adam_scalars_of(ctx, S.adam_key[i][0], S.adam_key[i][1],
                                             S.adam_key[i][2]);
    float *row = S.adam_scal_host + PRT_ADAM_SCALARS * i;
    row[PRT_ADAM_BETA1] = a.beta1;
    row[PRT_ADAM_BETA2] = a.beta2;
    row[PRT_ADAM_EPS] = a.eps;
    row[PRT_ADAM_KEEP] = a.keep;
    row[PRT_ADAM_OMB1] = a.one_minus_b1;
    row[PRT_ADAM_OMB2] = a.one_minus_b2;
    row[PRT_ADAM_BC2S] = a.bc2_sqrt;
    row[PRT_ADAM_NEGSTEP] = a.neg_step;
  }
}

/* Launches the gathered updates as one adamw_multi (nothing when none are pending). */
static void adam_flush(prt_ctx *ctx) {
  const char *fn = "prt_cuda_adamw";
  int64_t from = S.adam_tab.launched;
  if (S.adam_tab.n <= from) return;
  const tensor_chunk *table = table_upload(&S.adam_tab, from, SCR_ADAM_TABLE, fn) + from;
  adam_scalars_fill(ctx);
  CUDA_OR_DIE(fn, "AdamW scalars upload",
              cudaMemcpyAsync(S.adam_scal_dev, S.adam_scal_host,
                              (size_t)S.adam_groups * 8 * sizeof(float),
                              cudaMemcpyHostToDevice, compute_stream()));
  int64_t nchunk = S.adam_tab.n - from, CH = PRT_TABLE_CHUNK;
  S.adam_tab.launched = S.adam_tab.n; /* before the launch: launch() flushes first */
  LAUNCH(PRT_DK_adamw_multi, nchunk * CH, 0, fn, &table, &S.adam_scal_dev, &S.clip_dev, &nchunk,
         &CH);
}

void prt_cuda_adamw(prt_ctx *ctx, float *p, const float *g, float *m, float *v, uint16_t *p16,
                    int64_t n, float beta1, float beta2, float eps, int32_t decay,
                    int32_t bf16) {
  const char *fn = "prt_cuda_adamw";
  if (prt_elastic_dry(ctx) || n <= 0) return; /* an elastic step updates in its last pass */
  tensor_chunk e = {.p = (int64_t)(intptr_t)p,
                    .g = (int64_t)(intptr_t)g,
                    .m = (int64_t)(intptr_t)m,
                    .v = (int64_t)(intptr_t)v,
                    .decay = decay != 0,
                    .group = adam_group(beta1, beta2, eps, fn),
                    .p16 = (int64_t)(intptr_t)p16};
  table_add(&S.adam_tab, e, n, fn);
  if (!S.defer) adam_flush(ctx);
}

void prt_cuda_grad_sq_accum(prt_ctx *ctx, const float *g, int64_t n, int32_t counted,
                            int32_t bf16) {
  if (!counted || n <= 0) return;
  tensor_chunk e = {.g = (int64_t)(intptr_t)g};
  table_add(&S.norm_tab, e, n, "prt_cuda_grad_sq_accum");
}

/* The squared norm of every noted gradient and, with one rank, the clip scale, on the device;
 * with several, the host all-reduces the squared norm (prt_grad_norm_sync) and sends the
 * clip scale back. */
void prt_cuda_grad_norm_sync(prt_ctx *ctx, int32_t bf16) {
  const char *fn = "prt_cuda_grad_norm_sync";
  int64_t nchunk = S.norm_tab.n, L = NORM_LANES;
  const tensor_chunk *table = table_upload(&S.norm_tab, 0, SCR_NORM_TABLE, fn);
  S.norm_tab.n = 0;
  double *partial = scratch(SCR_NORM, (size_t)(nchunk * (L + 1) + 1) * sizeof(double), fn);
  double *csum = partial + nchunk * L;
  float maxnorm = ctx->world == 1 && ctx->grad_clip > 0.0 ? (float)ctx->grad_clip : 0.0f;
  LAUNCH(PRT_DK_sumsq_chunks, nchunk * L, 0, fn, &partial, &table, &nchunk, &L);
  LAUNCH(PRT_DK_sum_lanes, nchunk, 0, fn, &csum, &partial, &nchunk, &L);
  LAUNCH(PRT_DK_norm_clip, 1, 0, fn, &S.norm_sq_dev, &S.clip_dev, &csum, &nchunk, &maxnorm);
  CUDA_OR_DIE(fn, "copy of the squared gradient norm",
              cudaMemcpyAsync(S.norm_host, S.norm_sq_dev, sizeof(double),
                              cudaMemcpyDeviceToHost, compute_stream()));
  if (ctx->world == 1) { /* read after the step's last kernel (step_end) */
    S.norm_in_step = 1;
    return;
  }
  CUDA_OR_DIE(fn, "cudaStreamSynchronize", cudaStreamSynchronize(compute_stream()));
  ctx->grad_sq += *S.norm_host;
  prt_grad_norm_sync(ctx);
  *S.clip_host = ctx->clip_scale;
  CUDA_OR_DIE(fn, "clip scale upload",
              cudaMemcpyAsync(S.clip_dev, S.clip_host, sizeof(float), cudaMemcpyHostToDevice,
                              compute_stream()));
}

/* ---- Qwen3's ops (runtime/kernels/cpu_qwen3.c's twins) ---- */

/* dwte as prt_cuda_embedding_bwd's: chunks of R token rows summed into V x C slabs, then the
 * slabs added in order (no atomics); no position table. */
void prt_cuda_embed_bwd(float *dwte, const float *dout, const int32_t *tok, int64_t N,
                        int64_t C, int64_t V, int32_t bf16) {
  const char *fn = "prt_cuda_embed_bwd";
  int64_t VC = V * C;
  int64_t chunks = VC > 0 ? WTE_SLAB_FLOATS / VC : 1;
  if (chunks > (N + 255) / 256) chunks = (N + 255) / 256;
  if (chunks < 1) chunks = 1;
  int64_t R = (N + chunks - 1) / chunks;
  if (R < 1) R = 1;
  chunks = (N + R - 1) / R;
  float *slabs = scratch(SCR_WTE, (size_t)(chunks > 0 ? chunks : 1) * VC * sizeof(float), fn);
  LAUNCH(PRT_DK_embedding_wte_partials, chunks * C, io_bit(bf16, 1, 1), fn, &slabs, &dout, &tok,
         &N, &C, &V, &R);
  LAUNCH(PRT_DK_sum_slabs, VC, 0, fn, &dwte, &slabs, &chunks, &VC);
}

/* The forward and dx a warp a row (kernels/cuda_norms.cu); dw by chunks of COL_CHUNK rows
 * (f64), the chunks added in order. */
void prt_cuda_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, int64_t R,
                          int64_t D, float eps, int32_t bf16) {
  NVCC_OP("prt_cuda_rmsnorm_fwd", "rmsnorm forward (warp a row)",
          prt_cuda_rmsnorm_fwd_launch(fp_out(out, bf16, 0), rstd, fp_in(x, bf16, 2), w, R, D,
                                      eps, compute_stream()));
}

void prt_cuda_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x,
                          const float *w, const float *rstd, int64_t R, int64_t D, int32_t bf16) {
  const char *fn = "prt_cuda_rmsnorm_bwd";
  NVCC_OP(fn, "rmsnorm dx (warp a row)",
          prt_cuda_rmsnorm_dx_launch(fp_out(dx, bf16, 0), fp_in(dout, bf16, 2),
                                     fp_in(x, bf16, 3), w, rstd, R, D, compute_stream()));
  int64_t Rc = COL_CHUNK, chunks = (R + Rc - 1) / Rc;
  double *pw = scratch(SCR_COLS, (size_t)(chunks * D + 1) * sizeof(double), fn);
  LAUNCH(PRT_DK_rmsnorm_dw_partials, chunks * D, io_bit(bf16, 2, 1) | io_bit(bf16, 3, 2), fn, &pw,
         &dout, &x, &rstd, &R, &D, &Rc);
  col_finish(dw, pw, chunks, D, fn);
}

/* The rotary table for (T, D, theta) and direction (slot SCR_ROPE_FWD: +angle, SCR_ROPE_BWD:
 * -angle), computed on the host by the CPU's prt_rope_table and uploaded the first time a
 * shape is seen (the host waits for that copy only then). */
static const float *rope_table(int slot, int64_t T, int64_t D, float theta, const char *fn) {
  int dir = slot == SCR_ROPE_FWD ? 0 : 1;
  uint32_t tb;
  memcpy(&tb, &theta, sizeof tb);
  int64_t key[3] = {T, D, (int64_t)tb};
  size_t bytes = (size_t)(2 * T * (D / 2)) * sizeof(float);
  if (bytes == 0) bytes = sizeof(float);
  if (S.scratch[slot] && S.scratch_cap[slot] >= bytes && !memcmp(S.rope_key[dir], key, sizeof key))
    return S.scratch[slot];
  graph_drop(); /* a captured step reads the table this overwrites (an evaluation of another T) */
  float *dev = scratch(slot, bytes, fn);
  float *host = prt_xmalloc(bytes, "rotary table");
  prt_rope_table(host, T, D, theta, dir ? -1.0 : 1.0);
  CUDA_OR_DIE(fn, "rotary table upload",
              cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, compute_stream()));
  CUDA_OR_DIE(fn, "rotary table upload", cudaStreamSynchronize(compute_stream()));
  free(host);
  memcpy(S.rope_key[dir], key, sizeof key);
  return dev;
}

static void rope(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                 float theta, int slot, int32_t bf16, const char *fn) {
  if (D <= 0 || D % 2 || N % D)
    prt_fatal("%s: head size %lld must be even and divide the row width %lld", fn,
              (long long)D, (long long)N);
  const float *cs = rope_table(slot, T, D, theta, fn);
  int64_t BT = B * T;
  LAUNCH(PRT_DK_rope, BT * (N / D) * (D / 2), bf16 & 3, fn, &out, &x, &cs, &BT, &T, &N, &D);
}

void prt_cuda_rope_fwd(float *out, const float *x, int64_t B, int64_t T, int64_t N, int64_t D,
                       float theta, int32_t bf16) {
  rope(out, x, B, T, N, D, theta, SCR_ROPE_FWD, bf16, "prt_cuda_rope_fwd");
}

void prt_cuda_rope_bwd(float *dx, const float *dout, int64_t B, int64_t T, int64_t N,
                       int64_t D, float theta, int32_t bf16) {
  rope(dx, dout, B, T, N, D, theta, SCR_ROPE_BWD, bf16, "prt_cuda_rope_bwd");
}

/* Grouped-query attention (kernels/cuda_attention.cu): probs is the CPU's (B, H, T, T) result,
 * of which the first B*H*T floats hold each query row's log-sum-exp, as in
 * prt_cuda_attention_fwd. */
static void check_gqa(int64_t H, int64_t KV, int64_t D, const char *fn) {
  if (H <= 0 || KV <= 0 || KV > H || D <= 0 || D > PRT_CUDA_ATTENTION_MAX_HEAD)
    prt_fatal("%s: %lld query heads over %lld kv heads of size %lld: the GPU attention kernel "
              "(kernels/cuda_attention.cu) needs 0 < KV <= H and a head size <= %d; use the "
              "CPU target", fn, (long long)H, (long long)KV, (long long)D,
              PRT_CUDA_ATTENTION_MAX_HEAD);
}

void prt_cuda_gqa_attention_fwd(float *out, float *probs, const float *q, const float *k,
                                const float *v, int64_t B, int64_t T, int64_t H, int64_t KV,
                                int64_t D, int32_t bf16) {
  const char *fn = "prt_cuda_gqa_attention_fwd";
  check_gqa(H, KV, D, fn);
  int elem = FA2_ELEM(D, H * D, KV * D, H * D, bf16, 1 << 0 | 1 << 2 | 1 << 3 | 1 << 4, out, q,
                      k, v);
  if (elem) {
    fa2_forward(elem, 1, out, probs, q, k, v, B, T, H, KV, D, H * D, KV * D, H * D, fn);
    return;
  }
  if (attn_tc(D, PRT_BF16_BIT(bf16, 2))) {
    uint16_t *staged = flash_staging(B, T, H, KV, fn);
    NVCC_OP(fn, "flash GQA forward (tensor cores)",
            prt_cuda_flash_fwd_launch(fp_out(out, bf16, 0), probs, fp_in(q, bf16, 2),
                                      fp_in(k, bf16, 3), fp_in(v, bf16, 4), staged, B, T, H,
                                      KV, D, H * D, KV * D, H * D, compute_stream()));
    return;
  }
  NVCC_OP(fn, "flash GQA forward",
          prt_cuda_gqa_attention_fwd_launch(fp_out(out, bf16, 0), probs, fp_in(q, bf16, 2),
                                            fp_in(k, bf16, 3), fp_in(v, bf16, 4), B, T, H, KV,
                                            D, compute_stream()));
}

void prt_cuda_gqa_attention_bwd(float *dq, float *dk, float *dv, const float *dout,
                                const float *q, const float *k, const float *v,
                                const float *out, const float *probs, int64_t B, int64_t T,
                                int64_t H, int64_t KV, int64_t D, int32_t bf16) {
  const char *fn = "prt_cuda_gqa_attention_bwd";
  check_gqa(H, KV, D, fn);
  int elem = FA2_ELEM(D, H * D, KV * D, H * D, bf16, 0xff, dq, dk, dv, dout, q, k, v, out);
  if (elem) { /* `out` as prt_cuda_attention_bwd's */
    fa2_backward(elem, 1, dq, dk, dv, dout, out, probs, q, k, v, B, T, H, KV, D, H * D, KV * D,
                 H * D, fn);
    return;
  }
  float *Dbuf =
      scratch(SCR_ATTN_D, (size_t)(B * H * T > 0 ? B * H * T : 1) * sizeof(float), fn);
  if (attn_tc(D, PRT_BF16_BIT(bf16, 4))) {
    uint16_t *staged = flash_staging(B, T, H, KV, fn);
    NVCC_OP(fn, "flash GQA backward (tensor cores)",
            prt_cuda_flash_bwd_launch(fp_out(dq, bf16, 0), fp_out(dk, bf16, 1),
                                      fp_out(dv, bf16, 2), Dbuf, fp_in(dout, bf16, 3),
                                      fp_in(q, bf16, 4), fp_in(k, bf16, 5), fp_in(v, bf16, 6),
                                      probs, staged, B, T, H, KV, D, H * D, KV * D, H * D,
                                      compute_stream()));
    return;
  }
  NVCC_OP(fn, "flash GQA backward",
          prt_cuda_gqa_attention_bwd_launch(fp_out(dq, bf16, 0), fp_out(dk, bf16, 1),
                                            fp_out(dv, bf16, 2), fp_in(dout, bf16, 3),
                                            fp_in(q, bf16, 4), fp_in(k, bf16, 5),
                                            fp_in(v, bf16, 6), probs, Dbuf, B, T, H, KV, D,
                                            compute_stream()));
}

/* ---- mixture of experts (runtime/kernels/cpu.c's prt_moe_* twins) ----
 * Which row each token copy lands on, and each expert's segment of rows, depend on the expert
 * ids and counts, which live on the device. The host learns them by a small synchronous
 * device-to-host copy per op (N K ids, or G El counts: bytes, against the op's N C floats),
 * computes the rows by the CPU's own counting sort (prt_moe_positions, prt_moe_segment: the
 * same rows, the same fatal diagnostics for a bad id or a corrupt exchange) and uploads them;
 * the device kernels then gather and scatter with one writer per element (no atomics), and
 * the expert matmuls are one cuBLAS sgemm per segment in use. The copies wait for the compute
 * stream, so an MoE layer costs a few host round trips per step: simple and deterministic,
 * not fast. */

/* n i32 of the device's src into the host's dst, after the stream's work so far. */
static void moe_d2h(int32_t *dst, const int32_t *src, int64_t n, const char *what,
                    const char *fn) {
  S.needs_host = 1; /* this plan's steps wait for the device: no CUDA graph */
  if (n <= 0) return;
  CUDA_OR_DIE(fn, what,
              cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyDeviceToHost,
                              compute_stream()));
  CUDA_OR_DIE(fn, what, cudaStreamSynchronize(compute_stream()));
}

/* n i32 of the host's src into the device's dst; waits for the copy (src is freed next). */
static void moe_h2d(int32_t *dst, const int32_t *src, int64_t n, const char *what,
                    const char *fn) {
  if (n <= 0) return;
  CUDA_OR_DIE(fn, what,
              cudaMemcpyAsync(dst, src, (size_t)n * sizeof *dst, cudaMemcpyHostToDevice,
                              compute_stream()));
  CUDA_OR_DIE(fn, what, cudaStreamSynchronize(compute_stream()));
}

/* The device rows of the N K token copies (scratch SCR_MOE_POS), from the device's expert ids;
 * counts_dev (may be NULL) receives the copies per expert as well. */
static const int32_t *moe_positions(const int32_t *experts, int32_t *counts_dev, int64_t N,
                                    int64_t K, int64_t E, int64_t G, const char *fn) {
  if (N < 0 || K < 0 || E <= 0 || G <= 0 || E % G)
    prt_fatal("%s: %lld experts in %lld groups (N = %lld, K = %lld): the groups must divide "
              "the experts; %s", fn, (long long)E, (long long)G, (long long)N, (long long)K,
              "a piper-compile defect (the plan's MoE attributes)");
  int64_t NK = N * K;
  int32_t *ex = prt_xmalloc((size_t)(NK > 0 ? NK : 1) * sizeof *ex, "MoE expert ids");
  int32_t *pos = prt_xmalloc((size_t)(NK > 0 ? NK : 1) * sizeof *pos, "MoE positions");
  int32_t *counts = counts_dev ? prt_xmalloc((size_t)E * sizeof *counts, "MoE counts") : NULL;
  moe_d2h(ex, experts, NK, "copy of the expert ids to the host", fn);
  prt_moe_positions(pos, counts, ex, N, K, E, G, fn);
  int32_t *dev = scratch(SCR_MOE_POS, (size_t)(NK > 0 ? NK : 1) * sizeof *dev, fn);
  moe_h2d(dev, pos, NK, "upload of the copies' rows", fn);
  if (counts_dev) moe_h2d(counts_dev, counts, E, "upload of the expert counts", fn);
  free(ex);
  free(pos);
  free(counts);
  return dev;
}

/* The G El per-block expert counts on the host (freed by the caller). */
static int32_t *moe_counts(const int32_t *counts, int64_t G, int64_t El, const char *fn) {
  if (G <= 0 || El <= 0)
    prt_fatal("%s: %lld blocks of %lld local experts: a piper-compile defect (the plan's MoE "
              "attributes)", fn, (long long)G, (long long)El);
  int32_t *h = prt_xmalloc((size_t)(G * El) * sizeof *h, "MoE counts");
  moe_d2h(h, counts, G * El, "copy of the expert counts to the host", fn);
  return h;
}

/* n elements of `elem` bytes (4: fp32; 2: bf16) from p set to zero */
static void moe_zero_elems(void *p, int64_t n, size_t elem, const char *fn) {
  if (n <= 0) return;
  int slot = op_begin("cudaMemsetAsync", fn);
  CUDA_OR_DIE(fn, "cudaMemsetAsync", cudaMemsetAsync(p, 0, (size_t)n * elem, compute_stream()));
  op_end(slot, "cudaMemsetAsync", fn);
}
static void moe_zero(float *p, int64_t n, const char *fn) { moe_zero_elems(p, n, 4, fn); }

void prt_cuda_moe_dispatch_fwd(float *rows, int32_t *counts, const float *h,
                               const int32_t *experts, int64_t N, int64_t K, int64_t C,
                               int64_t E, int64_t G, int32_t bf16) {
  const char *fn = "prt_cuda_moe_dispatch_fwd";
  const int32_t *pos = moe_positions(experts, counts, N, K, E, G, fn);
  int64_t El = E / G, R = G * N * (K < El ? K : El), NK = N * K;
  moe_zero_elems(rows, R * C, PRT_BF16_BIT(bf16, 0) ? 2 : 4, fn);
  LAUNCH(PRT_DK_moe_scatter_rows, NK * C, io_bit(bf16, 0, 0) | io_bit(bf16, 2, 1), fn, &rows, &h,
         &pos, &NK, &K, &C);
}

void prt_cuda_moe_dispatch_bwd(float *dh, const float *drows, const int32_t *experts, int64_t N,
                               int64_t K, int64_t C, int64_t E, int64_t G, int32_t bf16) {
  const char *fn = "prt_cuda_moe_dispatch_bwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  LAUNCH(PRT_DK_moe_gather_sum, N * C, bf16 & 3, fn, &dh, &drows, &pos, &N, &K, &C);
}

void prt_cuda_moe_combine_fwd(float *y, const float *out, const float *weights,
                              const int32_t *experts, int64_t N, int64_t K, int64_t C,
                              int64_t E, int64_t G, int32_t bf16) {
  const char *fn = "prt_cuda_moe_combine_fwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  LAUNCH(PRT_DK_moe_combine_fwd, N * C, bf16 & 3, fn, &y, &out, &weights, &pos, &N, &K, &C);
}

void prt_cuda_moe_combine_bwd(float *dout, float *dweights, const float *dy, const float *out,
                              const float *weights, const int32_t *experts, int64_t N,
                              int64_t K, int64_t C, int64_t E, int64_t G, int32_t bf16) {
  const char *fn = "prt_cuda_moe_combine_bwd";
  const int32_t *pos = moe_positions(experts, NULL, N, K, E, G, fn);
  int64_t El = E / G, R = G * N * (K < El ? K : El);
  moe_zero_elems(dout, R * C, PRT_BF16_BIT(bf16, 0) ? 2 : 4, fn);
  /* dout, dy and out are the device kernel's arguments 0, 2 and 3, as the runtime kernel's */
  LAUNCH(PRT_DK_moe_combine_bwd, N * K, bf16 & 0xd, fn, &dout, &dweights, &dy, &out, &weights,
         &pos, &N, &K, &C);
}

/* act (n, Fe) = silu(g) u of n hidden rows (stride 2 Fe) */
static void moe_silu_mul(float *act, const float *hid, int64_t n, int64_t Fe, const char *fn) {
  LAUNCH(PRT_DK_moe_silu_mul, n * Fe, 0, fn, &act, &hid, &n, &Fe);
}

/* x (n) rounded in place to bf16 values (prt_bf16_round's device kernel) */
static void round_bf16(float *x, int64_t n, const char *fn) {
  LAUNCH(PRT_DK_bf16_round, n, 0, fn, &x, &x, &n);
}

/* prt_moe_expert_dgu: dg = dout wd (n, Fe), then dg and du in place from hidden; with bf16,
 * dact, dg and du rounded to bf16 values where the CPU's twin rounds them. */
static void moe_dgu(float *dg, float *du, const float *dout, const float *hid,
                    const float *wd, int64_t n, int64_t C, int64_t Fe, bool bf16,
                    const char *fn) {
  sgemm(prt_gemm_row_major(false, false, n, Fe, C, dout, C, wd, Fe, 0.0f, dg, Fe), fn);
  if (bf16) round_bf16(dg, n * Fe, fn);
  LAUNCH(PRT_DK_moe_dgu, n * Fe, 0, fn, &dg, &du, &hid, &n, &Fe);
  if (bf16) {
    round_bf16(dg, n * Fe, fn);
    round_bf16(du, n * Fe, fn);
  }
}

/* The experts (kernels.def moe_expert_*): the fp32 kernels, and with bf16 their bf16-policy
 * twins (moe_expert_*_bf16), which round the intermediates where runtime/kernels/cpu.c's
 * twins do (g and u, silu(g) u; dact, dg, du), with the same conversion as prt_bf16_round. */
static void expert_fwd(float *out, float *hidden, const float *rows, const int32_t *counts,
                       int64_t G, int64_t cap, int64_t El, int64_t j, const float *wg,
                       const float *wu, const float *wd, int64_t C, int64_t Fe, bool bf16,
                       const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n > 0) {
      const float *x = rows + first * C;
      float *hid = hidden + first * 2 * Fe, *o = out + first * C;
      /* hidden[:, :Fe] = x wg^T, hidden[:, Fe:] = x wu^T (row stride 2Fe) */
      sgemm(prt_gemm_row_major(false, true, n, Fe, C, x, C, wg, C, 0.0f, hid, 2 * Fe), fn);
      sgemm(prt_gemm_row_major(false, true, n, Fe, C, x, C, wu, C, 0.0f, hid + Fe, 2 * Fe), fn);
      if (bf16) round_bf16(hid, n * 2 * Fe, fn); /* n whole rows of 2Fe */
      float *act = scratch(SCR_MOE_ACT, (size_t)(n * Fe) * sizeof(float), fn);
      moe_silu_mul(act, hid, n, Fe, fn);
      if (bf16) round_bf16(act, n * Fe, fn);
      sgemm(prt_gemm_row_major(false, true, n, C, Fe, act, Fe, wd, Fe, 0.0f, o, C), fn);
    }
    if (j == El - 1) { /* the block's rows past its last expert's */
      int64_t used = prt_moe_block_used(cnt, s, El);
      moe_zero(out + (s * cap + used) * C, (cap - used) * C, fn);
      moe_zero(hidden + (s * cap + used) * 2 * Fe, (cap - used) * 2 * Fe, fn);
    }
  }
  free(cnt);
}

void prt_cuda_moe_expert_fwd(float *out, float *hidden, const float *rows,
                             const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                             int64_t j, const float *wg, const float *wu, const float *wd,
                             int64_t C, int64_t Fe, int32_t bf16) {
  expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, false,
             "prt_cuda_moe_expert_fwd");
}
void prt_cuda_moe_expert_fwd_bf16(float *out, float *hidden, const float *rows,
                                  const int32_t *counts, int64_t G, int64_t cap, int64_t El,
                                  int64_t j, const float *wg, const float *wu, const float *wd,
                                  int64_t C, int64_t Fe, int32_t bf16) {
  expert_fwd(out, hidden, rows, counts, G, cap, El, j, wg, wu, wd, C, Fe, true,
             "prt_cuda_moe_expert_fwd_bf16");
}

static void expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                             const float *hidden, int64_t G, int64_t cap, int64_t El, int64_t j,
                             const float *wg, const float *wu, const float *wd, int64_t C,
                             int64_t Fe, bool bf16, const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n > 0) {
      float *dg = scratch(SCR_MOE_ACT, (size_t)(2 * n * Fe) * sizeof(float), fn);
      float *du = dg + n * Fe, *dx = drows + first * C;
      moe_dgu(dg, du, dout + first * C, hidden + first * 2 * Fe, wd, n, C, Fe, bf16, fn);
      sgemm(prt_gemm_row_major(false, false, n, C, Fe, dg, Fe, wg, C, 0.0f, dx, C), fn);
      sgemm(prt_gemm_row_major(false, false, n, C, Fe, du, Fe, wu, C, 1.0f, dx, C), fn);
    }
    if (j == El - 1) {
      int64_t used = prt_moe_block_used(cnt, s, El);
      moe_zero(drows + (s * cap + used) * C, (cap - used) * C, fn);
    }
  }
  free(cnt);
}

void prt_cuda_moe_expert_bwd_input(float *drows, const float *dout, const int32_t *counts,
                                   const float *hidden, int64_t G, int64_t cap, int64_t El,
                                   int64_t j, const float *wg, const float *wu,
                                   const float *wd, int64_t C, int64_t Fe, int32_t bf16) {
  expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, false,
                   "prt_cuda_moe_expert_bwd_input");
}
void prt_cuda_moe_expert_bwd_input_bf16(float *drows, const float *dout,
                                        const int32_t *counts, const float *hidden, int64_t G,
                                        int64_t cap, int64_t El, int64_t j, const float *wg,
                                        const float *wu, const float *wd, int64_t C,
                                        int64_t Fe, int32_t bf16) {
  expert_bwd_input(drows, dout, counts, hidden, G, cap, El, j, wg, wu, wd, C, Fe, true,
                   "prt_cuda_moe_expert_bwd_input_bf16");
}

static void expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                              const float *rows, const int32_t *counts, const float *hidden,
                              int64_t G, int64_t cap, int64_t El, int64_t j, const float *wd,
                              int64_t C, int64_t Fe, bool bf16, const char *fn) {
  int32_t *cnt = moe_counts(counts, G, El, fn);
  moe_zero(dwg, Fe * C, fn);
  moe_zero(dwu, Fe * C, fn);
  moe_zero(dwd, C * Fe, fn);
  for (int64_t s = 0; s < G; s++) {
    int64_t first, n;
    prt_moe_segment(cnt, s, cap, El, j, &first, &n, fn);
    if (n == 0) continue;
    const float *x = rows + first * C, *d = dout + first * C, *hid = hidden + first * 2 * Fe;
    float *dg = scratch(SCR_MOE_ACT, (size_t)(3 * n * Fe) * sizeof(float), fn);
    float *du = dg + n * Fe, *act = dg + 2 * n * Fe;
    moe_silu_mul(act, hid, n, Fe, fn);
    if (bf16) round_bf16(act, n * Fe, fn);
    moe_dgu(dg, du, d, hid, wd, n, C, Fe, bf16, fn);
    /* dwd += dout^T act, dwg += dg^T x, dwu += du^T x */
    sgemm(prt_gemm_row_major(true, false, C, Fe, n, d, C, act, Fe, 1.0f, dwd, Fe), fn);
    sgemm(prt_gemm_row_major(true, false, Fe, C, n, dg, Fe, x, C, 1.0f, dwg, C), fn);
    sgemm(prt_gemm_row_major(true, false, Fe, C, n, du, Fe, x, C, 1.0f, dwu, C), fn);
  }
  free(cnt);
}
void prt_cuda_moe_expert_bwd_weight(float *dwg, float *dwu, float *dwd, const float *dout,
                                    const float *rows, const int32_t *counts,
                                    const float *hidden, int64_t G, int64_t cap, int64_t El,
                                    int64_t j, const float *wd, int64_t C, int64_t Fe,
                                    int32_t bf16) {
  expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, false,
                    "prt_cuda_moe_expert_bwd_weight");
}
void prt_cuda_moe_expert_bwd_weight_bf16(float *dwg, float *dwu, float *dwd, const float *dout,
                                         const float *rows, const int32_t *counts,
                                         const float *hidden, int64_t G, int64_t cap,
                                         int64_t El, int64_t j, const float *wd, int64_t C,
                                         int64_t Fe, int32_t bf16) {
  expert_bwd_weight(dwg, dwu, dwd, dout, rows, counts, hidden, G, cap, El, j, wd, C, Fe, true,
                    "prt_cuda_moe_expert_bwd_weight_bf16");
}

/* ---- the general tensor ops' kernels that are not PRT_KERNEL_1D ---- */

/* rope_angles: the forward rotation's (cos, sin) table, computed on the host by the CPU's
 * prt_rope_table and kept on the device as rope's, gathered into the (T, N) layout */
void prt_cuda_rope_angles(float *out, int64_t T, int64_t N, int64_t D, float theta, int32_t sn,
                          int32_t bf16) {
  const char *fn = "prt_cuda_rope_angles";
  if (D <= 0 || D % 2 || (N != D && N != D / 2))
    prt_fatal("%s: a table of width %lld for head size %lld: it must be even and the width "
              "the head size or its half", fn, (long long)N, (long long)D);
  const float *cs = rope_table(SCR_ROPE_FWD, T, D, theta, fn);
  int64_t s = sn != 0;
  LAUNCH(PRT_DK_rope_angles, T * N, io_bit(bf16, 0, 0), fn, &out, &cs, &T, &N, &D, &s);
}
