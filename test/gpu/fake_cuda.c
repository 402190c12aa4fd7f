/* A fake CUDA runtime and cuBLAS on host memory, for running libpiper_rt_cuda's host side
 * (runtime/kernels/cuda.c) without a GPU: test/gpu/cuda_host_emu.c calls its launchers, and
 * test/gpu/fake-cuda-train.test links a whole --target cuda training binary against it.
 *   cudaLibraryLoadData   JIT-compiles the kernels of lowering/gpu_kernels.c for the host
 *                         (kernel_jit.h) instead of loading the PTX;
 *   cudaLibraryGetKernel  returns the kernel's name; cudaLaunchKernel runs that kernel of the
 *                         host JIT for every thread of grid x block, with the launcher's own
 *                         argument array;
 *   cublasSgemm           is CBLAS's column-major sgemm (the same contract); cublasGemmEx
 *                         and cublasLtMatmul (the bias epilogue) widen bf16 operands first;
 *   cudaMalloc, copies    are calloc and memmove; streams do nothing (every operation runs
 *                         when issued, so the stream order is kept);
 *   graphs                cudaStreamBeginCapture records what is issued (kernels with their
 *                         argument values, cuBLAS calls, copies, memsets, attention launches)
 *                         instead of running it; cudaGraphLaunch runs the record again. As on
 *                         a GPU, a host wait, an allocation or a copy from pageable memory
 *                         while capturing is refused (cudaErrorStreamCaptureUnsupported);
 *   prt_device_cuda_open  gives the CPU device's memory, marked not host visible (staged),
 *                         through a vtable that counts what it does;
 *   prt_device_cuda_count 1 (FAKE_CUDA_DEVICES: more): the backend opens cuda:0;
 * the attention launchers are fake_attention.cc's (through fake_cuda_issue, so they are
 * captured too). Only what cuda.c calls is defined.
 *
 * Counters (FAKE_CUDA_COUNTERS=FILE): what a GPU would see each step pass, from the step marks
 * runtime/kernels/cuda.c's runner gives (prt_cuda_step_mark), one JSON line per pass at exit:
 *   kernels         kernels run in the pass: launches, cuBLAS calls (one kernel each, at
 *                   least), attention launches, and those replayed inside graphs
 *   launch_calls    the host's launch API calls (cudaLaunchKernel, cuBLAS, attention,
 *                   cudaGraphLaunch): what costs host time on a GPU
 *   graph_launches  cudaGraphLaunch calls
 *   syncs_in_step   host waits between the pass's start and its last device operation: a
 *                   stream, device or event synchronize, or a copy to or from pageable host
 *                   memory (the CUDA runtime waits for those)
 *   syncs_after     host waits after the pass's last device operation, until the next pass
 *                   (the loss read, the norm read, the next step's inputs)
 *   allocs, frees   cudaMalloc, cudaMallocHost and the device's alloc (and their frees), from
 *                   this pass's start to the next's
 *   h2d, d2h        bytes copied in that window
 *   conversions     bf16 conversion kernels run in the pass (piper_bf16_widen, _narrow,
 *                   _round): a bf16 plan whose kernels load and store bf16 themselves has none
 *   read, written   device bytes the pass's kernels read and wrote: for each generated kernel
 *                   launch the distinct bytes its threads loaded and stored (every llvm.load
 *                   and llvm.store of the host JIT reports its address: kernel_jit.h
 *                   kernelJitTouches), as a GPU's DRAM would move them with perfect caching
 *                   within the launch; for a cuBLAS call its matrices (A and B read, C written,
 *                   and read where beta != 0; the bias), for an nvcc kernel's host twin the
 *                   tensors it reads and writes (fake_cuda_bytes: its arguments' extents),
 *                   for device copies and memsets their bytes
 * and a first line {"pass": "setup", ...} for what came before the first pass. */
#include <cblas.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "kernel_jit.h"
#include "prt_internal.h"

const char piper_ptx[] __attribute__((weak)) = "// the kernels are the host JIT's";
static MlirExecutionEngine jit;
int fake_cuda_launches; /* kernels run so far, graphs' included (the tests print it) */

static void die(const char *what) {
  fprintf(stderr, "fake CUDA: %s\n", what);
  exit(2);
}

/* ---- counters ---- */

typedef struct {
  int64_t kernels, launch_calls, graph_launches, syncs, allocs, frees, h2d, d2h;
  int64_t conversions, read, written; /* bf16 conversion kernels; device bytes moved */
  int64_t ops; /* device operations issued (run or replayed): where the last one was */
} fake_counts;
enum { FAKE_MAX_PASSES = 256 };
static fake_counts now;
static struct {
  fake_counts begin, last_op; /* at the pass's start; at its last device operation */
  int64_t pass;
  int open;                   /* 1 from its start mark to its end mark */
} passes[FAKE_MAX_PASSES];
static int npasses, passes_dropped;

/* A device operation was issued: the counts at it are the pass's "last operation" so far. */
static void op_issued(void) {
  now.ops++;
  if (npasses > 0 && passes[npasses - 1].open) passes[npasses - 1].last_op = now;
}

static void counters_write(void) {
  const char *path = getenv("FAKE_CUDA_COUNTERS");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f) return;
  fake_counts zero = {0}, setup_end = npasses ? passes[0].begin : now;
  fprintf(f, "{\"pass\": \"setup\", \"allocs\": %lld, \"frees\": %lld, \"h2d\": %lld, "
          "\"d2h\": %lld}\n", (long long)(setup_end.allocs - zero.allocs),
          (long long)setup_end.frees, (long long)setup_end.h2d, (long long)setup_end.d2h);
  for (int i = 0; i < npasses; i++) {
    fake_counts b = passes[i].begin, l = passes[i].last_op;
    fake_counts e = i + 1 < npasses ? passes[i + 1].begin : now;
    if (l.ops < b.ops) l = b; /* a pass that issued nothing */
    fprintf(f, "{\"pass\": %lld, \"kernels\": %lld, \"launch_calls\": %lld, "
            "\"graph_launches\": %lld, \"syncs_in_step\": %lld, \"syncs_after\": %lld, "
            "\"allocs\": %lld, \"frees\": %lld, \"h2d\": %lld, \"d2h\": %lld, "
            "\"conversions\": %lld, \"read\": %lld, \"written\": %lld}\n",
            (long long)passes[i].pass, (long long)(l.kernels - b.kernels),
            (long long)(l.launch_calls - b.launch_calls),
            (long long)(l.graph_launches - b.graph_launches), (long long)(l.syncs - b.syncs),
            (long long)(e.syncs - l.syncs), (long long)(e.allocs - b.allocs),
            (long long)(e.frees - b.frees), (long long)(e.h2d - b.h2d),
            (long long)(e.d2h - b.d2h), (long long)(l.conversions - b.conversions),
            (long long)(l.read - b.read), (long long)(l.written - b.written));
  }
  if (passes_dropped) fprintf(f, "{\"passes_not_counted\": %d}\n", passes_dropped);
  fclose(f);
}

/* runtime/kernels/cuda.c's runner: pass `pass` starts (end 0) or ends (end 1). */
void prt_cuda_step_mark(int64_t pass, int end) {
  static int registered;
  if (!registered) {
    registered = 1;
    atexit(counters_write);
  }
  if (end) { /* its last operation is known; the window runs on to the next pass's start */
    if (npasses > 0) passes[npasses - 1].open = 0;
    return;
  }
  if (npasses == FAKE_MAX_PASSES) {
    passes_dropped++;
    return;
  }
  passes[npasses].begin = passes[npasses].last_op = now;
  passes[npasses].open = 1;
  passes[npasses++].pass = pass;
}

/* ---- bytes the kernels move ---- */

/* An nvcc kernel's host twin (fake_norms.cc, fake_attention.cc, fake_flash.cc) reports the
 * bytes its launch reads and writes when it runs (so a replayed graph counts them again). */
void fake_cuda_bytes(int64_t read, int64_t written) {
  now.read += read;
  now.written += written;
}

/* The distinct addresses one generated kernel's launch loaded and stored (fake_touch, called by
 * every llvm.load and llvm.store of the host JIT with FAKE_CUDA_COUNTERS set): a hash set
 * whose slots of another launch (gen) count as empty. */
typedef struct {
  uintptr_t addr;
  uint32_t gen;
  uint8_t rw; /* 1 loaded, 2 stored */
} touch_slot;
static touch_slot *touches;
static size_t touch_cap, touch_used;
static uint32_t touch_gen;

static void touch_begin(void) {
  touch_gen++;
  touch_used = 0;
}

static void touch_grow(void);
static void fake_touch(void *p, int64_t bytes, int32_t write) {
  if (2 * (touch_used + 1) > touch_cap) touch_grow();
  uintptr_t a = (uintptr_t)p;
  size_t i = (size_t)((a >> 1) * 0x9e3779b97f4a7c15ull) & (touch_cap - 1);
  while (touches[i].gen == touch_gen && touches[i].addr != a) i = (i + 1) & (touch_cap - 1);
  touch_slot *s = &touches[i];
  if (s->gen != touch_gen) {
    *s = (touch_slot){a, touch_gen, 0};
    touch_used++;
  }
  uint8_t bit = write ? 2 : 1;
  if (s->rw & bit) return;
  s->rw |= bit;
  *(write ? &now.written : &now.read) += bytes;
}

/* A table twice the size, this launch's slots moved into it (the rest are another's). */
static void touch_grow(void) {
  size_t cap = touch_cap ? 2 * touch_cap : 1 << 16, old = touch_cap;
  touch_slot *was = touches;
  touches = calloc(cap, sizeof *touches);
  if (!touches) die("out of memory counting a kernel's bytes");
  touch_cap = cap;
  touch_used = 0;
  for (size_t i = 0; i < old; i++) {
    if (was[i].gen != touch_gen) continue;
    size_t j = (size_t)((was[i].addr >> 1) * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (touches[j].gen == touch_gen) j = (j + 1) & (cap - 1);
    touches[j] = was[i];
    touch_used++;
  }
  free(was);
}

/* ---- page-locked host memory: the blocks cudaMallocHost gave (a copy from elsewhere waits) */

enum { FAKE_MAX_PINNED = 256 };
static struct {
  char *p;
  size_t n;
} pinned[FAKE_MAX_PINNED];
static int npinned;

static int is_pinned(const void *p, size_t n) {
  for (int i = 0; i < npinned; i++)
    if ((const char *)p >= pinned[i].p && (const char *)p + n <= pinned[i].p + pinned[i].n)
      return 1;
  return 0;
}

/* ---- capture and replay ---- */

/* One recorded operation: run(arg) does it; `kernels` counts the kernels it stands for. */
typedef struct fake_op {
  void (*run)(void *arg);
  void *arg; /* owned copy of the operation's arguments */
  int kernels;
  struct fake_op *next;
} fake_op;
typedef struct {
  fake_op *head, *tail;
} fake_graph;
static fake_graph *capturing; /* the graph being recorded; NULL: operations run when issued */

/* Runs the operation now, or records it (with a copy of its `size` bytes of arguments) while
 * capturing. Counts it as a launch call and its kernels. */
void fake_cuda_issue(void (*run)(void *), const void *arg, size_t size, int kernels) {
  if (capturing) {
    fake_op *op = calloc(1, sizeof *op);
    if (!op || !(op->arg = malloc(size ? size : 1))) die("out of memory recording a graph");
    memcpy(op->arg, arg, size);
    op->run = run;
    op->kernels = kernels;
    if (capturing->tail) capturing->tail->next = op;
    else capturing->head = op;
    capturing->tail = op;
    return;
  }
  run((void *)arg);
  now.launch_calls += kernels > 0;
  now.kernels += kernels;
  fake_cuda_launches += kernels;
  op_issued();
}

int fake_cuda_capturing(void) { return capturing != NULL; }

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  if (!s) return cudaErrorStreamCaptureUnsupported; /* the driver's answer for the legacy stream */
  if (capturing) return cudaErrorIllegalState;
  capturing = calloc(1, sizeof *capturing);
  return capturing ? cudaSuccess : cudaErrorMemoryAllocation;
}
/* FAKE_CUDA_BREAK_CAPTURE=1: the capture ends invalidated, as when the driver refused a call
 * in it (the runtime must then run the step kernel by kernel). */
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  if (!capturing) return cudaErrorIllegalState;
  *g = (cudaGraph_t)(void *)capturing;
  capturing = NULL;
  const char *brk = getenv("FAKE_CUDA_BREAK_CAPTURE");
  return brk && !strcmp(brk, "1") ? cudaErrorStreamCaptureInvalidated : cudaSuccess;
}
/* The executable graph is the recorded list itself; cudaGraphDestroy of the template is then
 * a no-op, cudaGraphExecDestroy frees it. */
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long f) {
  *exec = (cudaGraphExec_t)(void *)g;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) { return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  fake_graph *g = (fake_graph *)(void *)exec;
  for (fake_op *op = g->head, *next; op; op = next) {
    next = op->next;
    free(op->arg);
    free(op);
  }
  free(g);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  if (capturing) return cudaErrorStreamCaptureUnsupported;
  fake_graph *g = (fake_graph *)(void *)exec;
  for (fake_op *op = g->head; op; op = op->next) {
    op->run(op->arg);
    now.kernels += op->kernels;
    fake_cuda_launches += op->kernels;
  }
  now.launch_calls++;
  now.graph_launches++;
  op_issued();
  return cudaSuccess;
}

/* ---- the device: the CPU's memory, not host visible, counted ---- */

static size_t fake_in_use; /* device bytes allocated (cudaMemGetInfo) */

/* Asynchronous copies from page-locked memory the host has not waited for yet. Here a copy
 * runs when issued; on a GPU it runs any time before the host's next wait, so its source must
 * keep its bytes until then. Each is checked at that wait: bytes rewritten in between are a
 * race a GPU shows (the first H200 run: AdamW's one-entry table was rewritten for the next
 * update before the copy of the previous one ran, and multi-rank plans updated the wrong
 * tensors). Fatal, naming it. */
typedef struct {
  const void *src;
  size_t n;
  unsigned char *was; /* owned: the bytes when the copy was issued */
} pending_copy;
static pending_copy *pending;
static size_t npending, pending_cap;

/* Notes an asynchronous copy of n bytes from host src to the device: one from page-locked
 * memory outside a capture (a captured copy reads its source at each replay instead). */
static void pending_add(const void *src, size_t n) {
  if (capturing || !is_pinned(src, n)) return;
  if (npending == pending_cap) {
    size_t cap = pending_cap ? 2 * pending_cap : 64;
    pending_copy *grown = realloc(pending, cap * sizeof *grown);
    if (!grown) die("out of memory tracking asynchronous copies");
    pending = grown;
    pending_cap = cap;
  }
  unsigned char *was = malloc(n ? n : 1);
  if (!was) die("out of memory tracking asynchronous copies");
  memcpy(was, src, n);
  pending[npending++] = (pending_copy){src, n, was};
}

static void pending_check(void) {
  for (size_t i = 0; i < npending; i++) {
    if (memcmp(pending[i].src, pending[i].was, pending[i].n))
      die("page-locked memory was rewritten before the host waited for its asynchronous copy "
          "to the device (on a GPU the copy may read the new bytes): keep a copy's source "
          "unchanged until a stream, event or device synchronize");
    free(pending[i].was);
  }
  npending = 0;
}

static cudaError_t host_wait(void) {
  if (capturing) return cudaErrorStreamCaptureUnsupported;
  now.syncs++;
  pending_check();
  return cudaSuccess;
}
static int dev_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  if (capturing) return prt_fail(st, 1, "fake CUDA: device alloc while capturing a graph");
  now.allocs++;
  fake_in_use += bytes;
  return prt_device_cpu()->vt->alloc(d, bytes, out, st);
}
static void dev_free(prt_device *d, void *p) {
  if (p) now.frees++;
  prt_device_cpu()->vt->free(d, p);
}
static int dev_copy(prt_device *d, void *dst, const void *src, size_t bytes, prt_copy_kind kind,
                    prt_dstream *s, prt_status *st) {
  const void *host = kind == PRT_COPY_H2D ? src : kind == PRT_COPY_D2H ? dst : NULL;
  if (host && !is_pinned(host, bytes) && host_wait() != cudaSuccess)
    return prt_fail(st, 1, "fake CUDA: a copy from pageable memory while capturing a graph");
  if (kind == PRT_COPY_H2D) now.h2d += (int64_t)bytes;
  if (kind == PRT_COPY_D2H) now.d2h += (int64_t)bytes;
  if (kind == PRT_COPY_H2D) pending_add(src, bytes);
  if (kind == PRT_COPY_D2D) now.read += (int64_t)bytes, now.written += (int64_t)bytes;
  op_issued();
  return prt_device_cpu()->vt->copy(d, dst, src, bytes, kind, s, st);
}
static int dev_stream_sync(prt_device *d, prt_dstream *s, prt_status *st) {
  return host_wait() == cudaSuccess ? 0 : prt_fail(st, 1, "fake CUDA: a wait while capturing");
}
static int dev_event_sync(prt_device *d, prt_devent *e, prt_status *st) {
  return host_wait() == cudaSuccess ? 0 : prt_fail(st, 1, "fake CUDA: a wait while capturing");
}
static int dev_synchronize(prt_device *d, prt_status *st) {
  return host_wait() == cudaSuccess ? 0 : prt_fail(st, 1, "fake CUDA: a wait while capturing");
}
static int dev_host_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  return cudaMallocHost(out, bytes) == cudaSuccess
             ? 0
             : prt_fail(st, 1, "fake CUDA: cudaMallocHost of %zu bytes failed", bytes);
}
static void dev_host_free(prt_device *d, void *p) { cudaFreeHost(p); }

static prt_device_vtable fake_vt;
static prt_device fake_gpu;

/* prt_device_open("cuda:N") gets a device that is the CPU's (host memory, which the tests
 * read) but says it is not host visible, so the runtime stages its host reads and writes and
 * its transfers through host buffers as it does for a GPU. */
int prt_device_cuda_open(int ordinal, prt_device **out, prt_status *st) {
  fake_gpu = *prt_device_cpu();
  fake_vt = *fake_gpu.vt;
  fake_vt.alloc = dev_alloc;
  fake_vt.free = dev_free;
  fake_vt.copy = dev_copy;
  fake_vt.stream_sync = dev_stream_sync;
  fake_vt.event_sync = dev_event_sync;
  fake_vt.synchronize = dev_synchronize;
  fake_vt.host_alloc = dev_host_alloc;
  fake_vt.host_free = dev_host_free;
  fake_gpu.vt = &fake_vt;
  fake_gpu.host_visible = 0;
  snprintf(fake_gpu.name, sizeof fake_gpu.name, "fakecuda:%d", ordinal);
  *out = &fake_gpu;
  return 0;
}

/* One fake GPU, or FAKE_CUDA_DEVICES of them (one per rank for --comm nccl over the fake
 * NCCL, test/gpu/fake_nccl.c); they all share the host's memory. */
static int fake_count(void) {
  const char *v = getenv("FAKE_CUDA_DEVICES");
  int n = v ? atoi(v) : 1;
  return n > 0 ? n : 1;
}
int prt_device_cuda_count(void) { return fake_count(); }

cudaError_t cudaGetDeviceCount(int *n) {
  *n = fake_count();
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) {
  return e == cudaErrorStreamCaptureUnsupported   ? "cudaErrorStreamCaptureUnsupported"
         : e == cudaErrorStreamCaptureInvalidated ? "cudaErrorStreamCaptureInvalidated"
                                                  : "fakeError";
}
const char *cudaGetErrorString(cudaError_t e) { return "an error of the fake CUDA runtime"; }
static const char *library_ptx; /* the PTX the plan loaded (NUL-terminated) */
cudaError_t cudaLibraryLoadData(cudaLibrary_t *lib, const void *code,
                                enum cudaJitOption *jo, void **jv, unsigned int nj,
                                enum cudaLibraryOption *lo, void **lv, unsigned int nl) {
  if (mlirExecutionEngineIsNull(jit)) {
    kernelJitTouches = getenv("FAKE_CUDA_COUNTERS") != NULL;
    kernelJitTruncate = getenv("FAKE_CUDA_BF16_TRUNCATE") != NULL;
    jit = kernelJitCreate();
    if (kernelJitTouches)
      mlirExecutionEngineRegisterSymbol(jit, mlirStringRefCreateFromCString("fake_touch"),
                                        (void *)fake_touch);
  }
  *lib = (cudaLibrary_t)(void *)&jit;
  library_ptx = code;
  return cudaSuccess;
}
/* As the driver: only a kernel the loaded PTX defines (".entry NAME(") is found, so the
 * runtime sees the plan's kernel set as on a GPU (a bf16 plan's PTX has the conversions).
 * Without a plan (the launcher tests: this file's own piper_ptx, no .entry) every kernel is. */
cudaError_t cudaLibraryGetKernel(cudaKernel_t *k, cudaLibrary_t lib, const char *name) {
  *k = NULL;
  if (!library_ptx || !strstr(library_ptx, ".entry ")) {
    *k = (cudaKernel_t)(void *)name;
    return cudaSuccess;
  }
  size_t len = strlen(name);
  for (const char *at = library_ptx; (at = strstr(at, ".entry ")) != NULL;) {
    at += strlen(".entry ");
    if (!strncmp(at, name, len) && at[len] == '(') {
      *k = (cudaKernel_t)(void *)name; /* cuda.c's kernel_names: static strings */
      return cudaSuccess;
    }
  }
  return cudaErrorSymbolNotFound;
}

/* ---- memory ---- */

/* A device of FAKE_TOTAL_GB, of which what cudaMalloc and the device's alloc hold is in use
 * (the blocks' sizes are kept in a header before each cudaMalloc block; the device's allocs
 * are counted when made and not given back: the plan frees them only at exit). */
enum { FAKE_TOTAL_GB = 80, HEADER = 64 };
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  *total = (size_t)FAKE_TOTAL_GB << 30;
  *free_b = *total - fake_in_use;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
  if (capturing) return cudaErrorStreamCaptureUnsupported;
  char *b = calloc(1, HEADER + (n ? n : 1));
  if (!b) return cudaErrorMemoryAllocation;
  memcpy(b, &n, sizeof n);
  fake_in_use += n;
  now.allocs++;
  *p = b + HEADER;
  return cudaSuccess;
}
cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  char *b = (char *)p - HEADER;
  size_t n;
  memcpy(&n, b, sizeof n);
  fake_in_use -= n;
  now.frees++;
  free(b);
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
  if (capturing) return cudaErrorStreamCaptureUnsupported;
  if (npinned == FAKE_MAX_PINNED) die("more than FAKE_MAX_PINNED page-locked blocks");
  *p = calloc(1, n ? n : 1);
  if (!*p) return cudaErrorMemoryAllocation;
  pinned[npinned].p = *p;
  pinned[npinned++].n = n;
  now.allocs++;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) {
  if (!p) return cudaSuccess;
  pending_check(); /* cudaFreeHost waits for the device first */
  for (int i = 0; i < npinned; i++)
    if (pinned[i].p == p) {
      pinned[i] = pinned[--npinned];
      now.frees++;
      free(p);
      return cudaSuccess;
    }
  return cudaErrorInvalidValue;
}
cudaError_t cudaMemset(void *p, int v, size_t n) {
  memset(p, v, n);
  return cudaSuccess;
}

typedef struct {
  void *p;
  int v;
  size_t n;
} memset_args;
static void run_memset(void *a) {
  memset_args *m = a;
  memset(m->p, m->v, m->n);
  now.written += (int64_t)m->n;
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  memset_args m = {p, v, n};
  fake_cuda_issue(run_memset, &m, sizeof m, 0);
  return cudaSuccess;
}

typedef struct {
  void *d;
  const void *s;
  size_t n;
  enum cudaMemcpyKind k;
} memcpy_args;
static void run_memcpy(void *a) {
  memcpy_args *m = a;
  memmove(m->d, m->s, m->n);
  if (m->k == cudaMemcpyHostToDevice) now.h2d += (int64_t)m->n;
  if (m->k == cudaMemcpyDeviceToHost) now.d2h += (int64_t)m->n;
  if (m->k != cudaMemcpyDeviceToHost) now.written += (int64_t)m->n; /* on the device */
  if (m->k != cudaMemcpyHostToDevice) now.read += (int64_t)m->n;
}
/* A copy to or from host memory that cudaMallocHost did not give waits for the stream first
 * (the CUDA runtime's rule for pageable memory), and cannot be captured. */
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t st) {
  const void *host = k == cudaMemcpyHostToDevice ? s : k == cudaMemcpyDeviceToHost ? d : NULL;
  if (host && !is_pinned(host, n)) {
    cudaError_t e = host_wait();
    if (e != cudaSuccess) return e;
  }
  memcpy_args m = {d, s, n, k};
  if (k == cudaMemcpyHostToDevice) pending_add(s, n);
  fake_cuda_issue(run_memcpy, &m, sizeof m, 0);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) { return host_wait(); }

/* ---- events: they time the host (the fake runs each operation when issued, so an event
 * recorded after one is recorded after its work: PIPER_CUDA_PROFILE's times are the host
 * JIT's). fake_nccl.c has events of its own, which win where it is linked (its
 * cudaEventRecord is strong): the first bytes of ours are room for its fields. ---- */
typedef struct {
  char nccl_fields[64];
  double ms;
} fake_event;
static double fake_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) {
  *e = (cudaEvent_t)calloc(1, sizeof(fake_event));
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}
__attribute__((weak)) cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  ((fake_event *)e)->ms = fake_now_ms();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = (float)(((fake_event *)end)->ms - ((fake_event *)start)->ms);
  return cudaSuccess;
}

/* ---- kernels ---- */

/* Kernel arguments by name: how many the launcher must pass, from the kernel's signature in
 * the JIT's module (kernel_jit.h), so a new device kernel needs no entry here. */
static int nargs_of(const char *name) {
  int n = kernelJitArgCount(name);
  if (n >= 0) return n;
  fprintf(stderr, "fake cudaLaunchKernel: unknown kernel %s\n", name);
  exit(2);
}

/* A launch with its argument values copied (each 4 or 8 bytes, by the kernel's signature),
 * so a captured launch replays with the values it was given. */
typedef struct {
  const char *name;
  int64_t threads;
  int nargs;
  uint64_t vals[KERNEL_JIT_MAX_ARGS];
} launch_args;
static void run_launch(void *a) {
  launch_args *l = a;
  void *args[KERNEL_JIT_MAX_ARGS];
  for (int i = 0; i < l->nargs; i++) args[i] = &l->vals[i];
  touch_begin();
  if (kernelJitLaunch(jit, l->name, l->threads, args, l->nargs)) {
    fprintf(stderr, "fake cudaLaunchKernel: %s failed in the JIT\n", l->name);
    exit(2);
  }
  now.conversions += !strncmp(l->name, "piper_bf16_", strlen("piper_bf16_"));
}
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                             size_t shmem, cudaStream_t s) {
  launch_args l = {(const char *)func,
                   (int64_t)grid.x * grid.y * grid.z * block.x * block.y * block.z, 0, {0}};
  l.nargs = nargs_of(l.name);
  for (int i = 0; i < l.nargs; i++) memcpy(&l.vals[i], args[i], kernelJitArgSize(l.name, i));
  fake_cuda_issue(run_launch, &l, sizeof l, 1);
  return cudaSuccess;
}

/* ---- cuBLAS ---- */

cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
  *h = (cublasHandle_t)(void *)&jit;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  return mode == CUBLAS_PEDANTIC_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void *ws, size_t bytes) {
  return ws && bytes ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}

/* A GEMM's arguments by value; bf16 1: A and B hold bf16 patterns (cublasGemmEx); c_bf16 1:
 * so does C, the fp32 result rounded to nearest even at the store. */
typedef struct {
  cublasOperation_t ta, tb;
  int m, n, k, lda, ldb, ldc, bf16;
  float alpha, beta;
  const void *A, *B;
  void *C;
  int c_bf16;
} gemm_args;

/* A bf16 matrix widened exactly to fp32: X is rows x cols, column-major with leading
 * dimension ld; its last column ends at (cols - 1) ld + rows, past which the caller's buffer
 * may end */
static float *widenMatrix(const void *X, cublasOperation_t t, int rowsOp, int colsOp, int ld) {
  int64_t rows = t == CUBLAS_OP_T ? colsOp : rowsOp, cols = t == CUBLAS_OP_T ? rowsOp : colsOp;
  int64_t n = cols > 0 ? (cols - 1) * ld + rows : 0;
  float *w = calloc((size_t)(cols * ld + 1), sizeof *w);
  prt_bf16_widen(w, X, n);
  return w;
}
/* The m x n column-major result of a bf16 C (leading dimension ldc), fp32, into C rounded
 * (prt_bf16_narrow's rule; FAKE_CUDA_BF16_TRUNCATE=1: truncated instead, the rounding
 * broken on purpose for a negative control) */
static void narrowMatrix(void *C, const float *acc, int m, int n, int ldc) {
  static int truncate = -1;
  if (truncate < 0) truncate = getenv("FAKE_CUDA_BF16_TRUNCATE") != NULL;
  for (int64_t j = 0; j < n; j++) {
    uint16_t *col = (uint16_t *)C + j * ldc;
    const float *src = acc + j * ldc;
    if (!truncate) {
      prt_bf16_narrow(col, src, m);
      continue;
    }
    for (int i = 0; i < m; i++) {
      uint32_t u;
      memcpy(&u, &src[i], sizeof u);
      col[i] = (uint16_t)(u >> 16);
    }
  }
}

/* C = alpha op(A) op(B) + beta C in fp32 (CBLAS), bf16 operands widened; a bf16 C is worked
 * on as fp32 (widened first when beta reads it) and rounded at the end. Then `bias` (NULL:
 * none) is added to each row i of the fp32 result, before a bf16 C's rounding. */
static void gemm_then_bias(gemm_args *g, const float *bias) {
  const float *A = g->A, *B = g->B;
  float *wa = NULL, *wb = NULL, *C = g->C, *wc = NULL;
  if (g->bf16) {
    A = wa = widenMatrix(g->A, g->ta, g->m, g->k, g->lda);
    B = wb = widenMatrix(g->B, g->tb, g->k, g->n, g->ldb);
  }
  if (g->c_bf16) C = wc = widenMatrix(g->C, CUBLAS_OP_N, g->m, g->n, g->ldc);
  cblas_sgemm(CblasColMajor, g->ta == CUBLAS_OP_T ? CblasTrans : CblasNoTrans,
              g->tb == CUBLAS_OP_T ? CblasTrans : CblasNoTrans, g->m, g->n, g->k, g->alpha, A,
              g->lda, B, g->ldb, g->beta, C, g->ldc);
  if (bias)
    for (int j = 0; j < g->n; j++)
      for (int i = 0; i < g->m; i++) C[i + (int64_t)j * g->ldc] += bias[i];
  if (g->c_bf16) narrowMatrix(g->C, C, g->m, g->n, g->ldc);
  int64_t ab = g->bf16 ? 2 : 4, cb = g->c_bf16 ? 2 : 4, mn = (int64_t)g->m * g->n;
  now.read += ab * ((int64_t)g->m * g->k + (int64_t)g->k * g->n) + (g->beta != 0.0f) * cb * mn +
              (bias ? 4 * (int64_t)g->m : 0);
  now.written += cb * mn;
  free(wa);
  free(wb);
  free(wc);
}
static void run_gemm(void *a) { gemm_then_bias(a, NULL); }
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc) {
  gemm_args g = {ta, tb, m, n, k, lda, ldb, ldc, 0, *alpha, *beta, A, B, C, 0};
  fake_cuda_issue(run_gemm, &g, sizeof g, 1);
  return CUBLAS_STATUS_SUCCESS;
}

/* cublasGemmEx as the bf16 linear kernels call it (CUDA_R_16BF A and B, fp32 or bf16 C,
 * CUBLAS_COMPUTE_32F): A and B widened exactly to fp32, then CBLAS's column-major sgemm, the
 * products of bf16 values summed in fp32 (a tensor core's order of summation aside), a bf16
 * C rounded once at the end. Any other combination of types is refused, so a launcher that
 * passes others fails its test. */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                            int lda, const void *B, cudaDataType Btype, int ldb,
                            const void *beta, void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (Atype != CUDA_R_16BF || Btype != CUDA_R_16BF ||
      (Ctype != CUDA_R_32F && Ctype != CUDA_R_16BF) || compute != CUBLAS_COMPUTE_32F)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  gemm_args g = {ta, tb, m, n, k, lda, ldb, ldc, 1, *(const float *)alpha,
                 *(const float *)beta, A, B, C, Ctype == CUDA_R_16BF};
  fake_cuda_issue(run_gemm, &g, sizeof g, 1);
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuBLASLt: what cuda.c's lt_gemm_bias uses. Descriptors are the fake's own structs;
 * cublasLtMatmul is run_gemm (beta 0) and then the bias epilogue, D[i, j] += bias[i] on the
 * column-major D, after the product is rounded (as the CPU's (x w^T) + b), and a bf16 D
 * rounded once after that. Only the combinations cuda.c asks for are accepted: compute 32F,
 * scale 32F, fp32 or bf16 A and B, C = D fp32 (or bf16 with bf16 A and B), the BIAS epilogue
 * with an fp32 bias, alpha 1 and beta 0. ---- */
typedef struct {
  cublasOperation_t ta, tb;
  cublasLtEpilogue_t epilogue;
  cudaDataType_t bias_type;
  const float *bias;
  int bad; /* an attribute or type the fake does not model */
} fake_lt_desc;
typedef struct {
  cudaDataType type;
  uint64_t rows, cols;
  int64_t ld;
} fake_lt_layout;

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  *h = (cublasLtHandle_t)(void *)&jit;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  fake_lt_desc *f = calloc(1, sizeof *f);
  if (!f) return CUBLAS_STATUS_ALLOC_FAILED;
  f->bad = compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F;
  *d = (cublasLtMatmulDesc_t)(void *)f;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
  fake_lt_desc *f = (fake_lt_desc *)(void *)d;
  switch (attr) {
  case CUBLASLT_MATMUL_DESC_TRANSA: memcpy(&f->ta, buf, sizeof f->ta); break;
  case CUBLASLT_MATMUL_DESC_TRANSB: memcpy(&f->tb, buf, sizeof f->tb); break;
  case CUBLASLT_MATMUL_DESC_EPILOGUE: memcpy(&f->epilogue, buf, sizeof f->epilogue); break;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: memcpy(&f->bias_type, buf, sizeof f->bias_type);
    break;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER: memcpy(&f->bias, buf, sizeof f->bias); break;
  default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  fake_lt_layout *f = calloc(1, sizeof *f);
  if (!f) return CUBLAS_STATUS_ALLOC_FAILED;
  *f = (fake_lt_layout){type, rows, cols, ld};
  *l = (cublasLtMatrixLayout_t)(void *)f;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  *p = (cublasLtMatmulPreference_t)calloc(1, sizeof(cublasLtMatmulPreferenceOpaque_t));
  return *p ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                    cublasLtMatmulPreferenceAttributes_t a,
                                                    const void *buf, size_t size) {
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  free(p);
  return CUBLAS_STATUS_SUCCESS;
}
/* One "algorithm" for what the fake models, none otherwise (the caller's fallback runs). */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t p, int want,
                                              cublasLtMatmulHeuristicResult_t r[], int *found) {
  fake_lt_desc *f = (fake_lt_desc *)(void *)d;
  fake_lt_layout *a = (fake_lt_layout *)(void *)A, *b = (fake_lt_layout *)(void *)B;
  fake_lt_layout *c = (fake_lt_layout *)(void *)C;
  int ok = !f->bad && f->epilogue == CUBLASLT_EPILOGUE_BIAS && f->bias_type == CUDA_R_32F &&
           a->type == b->type && (a->type == CUDA_R_32F || a->type == CUDA_R_16BF) &&
           (c->type == CUDA_R_32F || (c->type == CUDA_R_16BF && a->type == CUDA_R_16BF)) &&
           C == D;
  *found = ok && want > 0;
  if (*found) memset(&r[0], 0, sizeof r[0]);
  return CUBLAS_STATUS_SUCCESS;
}

typedef struct {
  gemm_args g;
  const float *bias;
} lt_args;
static void run_lt(void *a) {
  lt_args *l = a;
  gemm_then_bias(&l->g, l->bias);
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Ad, const void *B,
                              cublasLtMatrixLayout_t Bd, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cd, void *D, cublasLtMatrixLayout_t Dd,
                              const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsBytes,
                              cudaStream_t s) {
  fake_lt_desc *f = (fake_lt_desc *)(void *)d;
  fake_lt_layout *a = (fake_lt_layout *)(void *)Ad, *b = (fake_lt_layout *)(void *)Bd;
  fake_lt_layout *c = (fake_lt_layout *)(void *)Cd;
  if (f->bad || f->epilogue != CUBLASLT_EPILOGUE_BIAS || !f->bias || C != D || Cd != Dd ||
      *(const float *)alpha != 1.0f || *(const float *)beta != 0.0f)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int m = (int)c->rows, n = (int)c->cols;
  int k = (int)(f->ta == CUBLAS_OP_T ? a->rows : a->cols);
  lt_args l = {{f->ta, f->tb, m, n, k, (int)a->ld, (int)b->ld, (int)c->ld,
                a->type == CUDA_R_16BF, 1.0f, 0.0f, A, B, D, c->type == CUDA_R_16BF},
               f->bias};
  fake_cuda_issue(run_lt, &l, sizeof l, 1);
  return CUBLAS_STATUS_SUCCESS;
}

/* The engine, for a test that ends cleanly (a training binary just exits). */
void fake_cuda_destroy(void) {
  if (!mlirExecutionEngineIsNull(jit)) kernelJitDestroy(jit);
  jit = (MlirExecutionEngine){NULL};
}
