/* A fake CUDA runtime and cuBLAS on host memory, for running libpiper_rt_cuda's host side
 * (runtime/kernels/cuda.c and runtime/device/cuda.c) without a GPU: test/gpu/cuda_host_emu.c
 * calls its launchers, test/gpu/fake-cuda-train.test links whole --target cuda training
 * binaries against it, and prt-fakecuda-test runs the device seam's checks (device_test.c)
 * on it. It is meant to be at least as strict as a GPU, so that what a GPU would show shows
 * here:
 *   streams     ordered queues that run lazily: an operation runs only when the host must
 *               have it done (a stream, event or device synchronize, a copy to or from
 *               pageable memory, a successful query, cudaFree / cudaFreeHost), and then the
 *               streams it needs run in a random interleaving (FAKE_CUDA_SEED, default 1),
 *               each operation once everything it follows (its stream's earlier work, the
 *               events its stream waited for, the legacy stream's implicit order) completed.
 *               A missing cudaStreamWaitEvent reads stale data, as on a GPU;
 *   copies      read their source when they run, not when issued; a copy from page-locked
 *               memory (cudaMallocHost) is asynchronous, from pageable memory it waits for
 *               its stream first and completes before returning (the CUDA runtime's rule);
 *   memory      cudaMalloc's and cudaMallocHost's blocks start as NaN patterns (0x7ff8 in
 *               every 16 bits: NaN as fp16, bf16, fp32 and fp64), not zeros; cudaMalloc's
 *               are out of the host's reach (PROT_NONE) but while the device runs;
 *   graphs      cudaStreamBeginCapture records what is issued on the stream (kernels with
 *               their argument values, cuBLAS calls, copies, memsets, the launchers'
 *               operations) instead of running it; cudaGraphLaunch puts the record on the
 *               stream again, every detector on. As on a GPU, a host wait, an allocation or a
 *               copy from pageable memory while capturing is refused
 *               (cudaErrorStreamCaptureUnsupported), and work on the legacy stream while a
 *               blocking stream captures too (cudaErrorStreamCaptureImplicit); either ends
 *               the capture invalidated;
 *   kernels     cudaLibraryLoadData JIT-compiles the kernels of lowering/gpu_kernels.c for the
 *               host (kernel_jit.h) instead of loading the PTX; cudaLaunchKernel queues that
 *               kernel of the host JIT for every thread of grid x block, with a copy of the
 *               launcher's argument values; the nvcc kernels' launchers are the fake_*.cc
 *               host twins (through fake_cuda_enqueue, fake_cuda.h);
 *   cuBLAS      cublasSgemm is CBLAS's column-major sgemm (the same contract); cublasGemmEx
 *               and cublasLtMatmul (the bias epilogue) widen bf16 operands first;
 *   devices     prt_device_cuda_count / open are device/cuda.c's own, over this runtime: 1
 *               GPU (FAKE_CUDA_DEVICES: more, one per rank of a --comm nccl run).
 * Detectors, each fatal with a message naming what happened (and the seed):
 *   - the host touching device memory (a GPU faults): the fault names the block;
 *   - page-locked memory rewritten before the host waited for its asynchronous copy (checked
 *     when the copy runs and at every host wait until one covers it): on a GPU the copy may
 *     read the new bytes (the first H200 run's AdamW table bug);
 *   - a race between streams: an operation issued without being ordered after an operation
 *     of another stream that writes memory it uses (ranges of copies, memsets, cuBLAS
 *     outputs and the fake NCCL's buffers; a kernel's pointer arguments as addresses),
 *     ordered meaning by events, the legacy stream's rule, or a host wait in between;
 * and the fake NCCL (fake_nccl.c) checks that each of its calls is ordered after the latest
 * kernel. test/gpu/fake-cuda-strict.test puts each bug back and expects its message. For
 * those negative controls: FAKE_CUDA_IGNORE_WAITS=1 makes cudaStreamWaitEvent do nothing (a
 * runtime without its waits), FAKE_CUDA_CHECK_RACES=0, FAKE_CUDA_CHECK_PINNED=0 and
 * FAKE_CUDA_PROTECT=0 turn a detector off (to show what the bug does to the data, as a GPU
 * would, or to let a test peek at device memory). Only what the runtime calls is defined.
 *
 * Counters (FAKE_CUDA_COUNTERS=FILE): what a GPU would see each step pass, from the step marks
 * runtime/kernels/cuda.c's runner gives (prt_cuda_step_mark), one JSON line per pass at exit:
 *   kernels         kernels issued in the pass: launches, cuBLAS calls (one kernel each, at
 *                   least), attention launches, and those replayed inside graphs
 *   launch_calls    the host's launch API calls (cudaLaunchKernel, cuBLAS, attention,
 *                   cudaGraphLaunch): what costs host time on a GPU
 *   graph_launches  cudaGraphLaunch calls
 *   syncs_in_step   host waits between the pass's start and its last device operation: a
 *                   stream, device or event synchronize, or a copy to or from pageable host
 *                   memory (the CUDA runtime waits for those)
 *   syncs_after     host waits after the pass's last device operation, until the next pass
 *                   (the loss read, the norm read, the next step's inputs)
 *   allocs, frees   cudaMalloc and cudaMallocHost (and their frees), from this pass's start to
 *                   the next's
 *   h2d, d2h        bytes of the copies issued in that window
 *   conversions     bf16 conversion kernels issued in the pass (piper_bf16_widen, _narrow,
 *                   _round): a bf16 plan whose kernels load and store bf16 themselves has none
 *   read, written   device bytes the pass's operations read and wrote when they ran (counted
 *                   to the pass that issued them, whenever the streams run them): for each
 *                   generated kernel launch the distinct bytes its threads loaded and stored
 *                   (every llvm.load and llvm.store of the host JIT reports its address:
 *                   kernel_jit.h kernelJitTouches), as a GPU's DRAM would move them with
 *                   perfect caching within the launch; for a cuBLAS call its matrices (A and B
 *                   read, C written, and read where beta != 0; the bias), for an nvcc kernel's
 *                   host twin the tensors it reads and writes (fake_cuda_bytes: its arguments'
 *                   extents), for device copies and memsets their bytes
 * and a first line {"pass": "setup", ...} for what came before the first pass. */
#include <cblas.h>
#include <execinfo.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fake_cuda.h"
#include "kernel_jit.h"
#include "prt_internal.h"

const char piper_ptx[] __attribute__((weak)) = "// the kernels are the host JIT's";
static MlirExecutionEngine jit;
int fake_cuda_launches; /* kernels issued so far, graphs' included (the tests print it) */

/* FAKE_CUDA_SEED: the interleaving of the streams (default 1: every run the same). */
static uint64_t seed_value(void) {
  const char *v = getenv("FAKE_CUDA_SEED");
  return v && *v ? strtoull(v, NULL, 10) : 1;
}

/* An environment switch: off by default, on only as name=1; or on by default, off as name=0. */
static int env_flag(const char *name, int dflt) {
  const char *v = getenv(name);
  if (!v || !*v) return dflt;
  return dflt ? strcmp(v, "0") != 0 : strcmp(v, "1") == 0;
}

static void die(const char *what) {
  fprintf(stderr, "fake CUDA: %s (FAKE_CUDA_SEED=%llu)\n", what,
          (unsigned long long)seed_value());
  exit(2);
}

/* ---- counters ---- */

typedef struct {
  int64_t kernels, launch_calls, graph_launches, syncs, allocs, frees, h2d, d2h;
  int64_t ops; /* device operations issued (run or replayed): where the last one was */
} fake_counts;
enum { FAKE_MAX_PASSES = 256 };
static fake_counts now;
static struct {
  fake_counts begin, last_op; /* at the pass's start; at its last device operation */
  int64_t pass;
  int open;                   /* 1 from its start mark to its end mark */
  /* what the operations issued in it did when they ran (the streams run them lazily, maybe
   * after the pass): bf16 conversion kernels; device bytes read and written */
  int64_t conversions, read, written;
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
            (long long)(e.d2h - b.d2h), (long long)passes[i].conversions,
            (long long)passes[i].read, (long long)passes[i].written);
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

/* The pass open when a pass's operations are issued (-1: none), and that of the operation
 * running now (op_advance), whose bytes and conversions count to it. */
static int open_pass(void) { return npasses > 0 && passes[npasses - 1].open ? npasses - 1 : -1; }
static int running_pass = -1;

/* ---- bytes the kernels move ---- */

/* Device bytes the running operation read and wrote. */
static void moved(int64_t read, int64_t written) {
  if (running_pass < 0) return;
  passes[running_pass].read += read;
  passes[running_pass].written += written;
}

/* An nvcc kernel's host twin (fake_norms.cc, fake_attention.cc, fake_flash.cc) reports the
 * bytes its launch reads and writes when it runs (so a replayed graph counts them again). */
void fake_cuda_bytes(int64_t read, int64_t written) { moved(read, written); }

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
  if (write) moved(0, bytes);
  else moved(bytes, 0);
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

/* Fresh memory as a GPU gives it: not zeros. 0x7ff8 in every 16 bits is a NaN as fp16, bf16,
 * fp32 and fp64, so a result that relied on zeroed memory comes out NaN. */
static void fill_garbage(void *p, size_t n) {
  unsigned char *b = p;
  for (size_t i = 0; i < n; i++) b[i] = (i & 1) ? 0x7f : 0xf8; /* little-endian 0x7ff8 */
}

/* ---- device memory: out of the host's reach ----
 * cudaMalloc's blocks are mappings of their own, PROT_NONE whenever the host runs: only the
 * device's operations, while they run, may touch them (and a transfer in flight, whose MPI
 * progress runs at any MPI call). A host dereference of device memory faults on a GPU; here
 * it stops the process naming the block (FAKE_CUDA_PROTECT=0: off, for a test that peeks). */

typedef struct {
  char *base;
  size_t n, mapped; /* the bytes asked for; mapped, whole pages */
  int locked;       /* PROT_NONE now */
} dev_block;
static dev_block *blocks;
static size_t nblocks, blocks_cap;
static int device_open; /* 1: every block readable (the device is running operations) */
static int some_open;   /* 1: some block readable (a transfer in flight at the last lock) */

static int protect_on(void) {
  static int on = -1;
  if (on < 0) on = env_flag("FAKE_CUDA_PROTECT", 1);
  return on;
}

static dev_block *block_of(const void *p) {
  for (size_t i = 0; i < nblocks; i++)
    if ((const char *)p >= blocks[i].base && (const char *)p < blocks[i].base + blocks[i].mapped)
      return &blocks[i];
  return NULL;
}

static struct sigaction segv_before; /* the handler ours replaced (ASan's, MPI's, default) */
static void on_segv(int sig, siginfo_t *info, void *uctx) {
  dev_block *b = block_of(info->si_addr);
  if (b && b->locked) {
    char msg[512];
    int len = snprintf(msg, sizeof msg, "fake CUDA: the host touched device memory at %p "
                       "(byte %zu of a cudaMalloc block of %zu bytes): on a GPU the host "
                       "cannot dereference it; copy it to the host (cudaMemcpyAsync, a host "
                       "view) (FAKE_CUDA_SEED=%llu)\n", info->si_addr,
                       (size_t)((char *)info->si_addr - b->base), b->n,
                       (unsigned long long)seed_value());
    if (write(2, msg, (size_t)len) < 0) _exit(2);
    void *frames[32]; /* where: the host code that touched it */
    backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
    _exit(2);
  }
  sigaction(SIGSEGV, &segv_before, NULL); /* not ours: the previous handler, on return */
  if ((segv_before.sa_flags & SA_SIGINFO) && segv_before.sa_sigaction)
    segv_before.sa_sigaction(sig, info, uctx);
}

static void block_protect(dev_block *b, int lock) {
  if (b->locked == lock) return;
  if (mprotect(b->base, b->mapped, lock ? PROT_NONE : PROT_READ | PROT_WRITE))
    die("mprotect of device memory failed");
  b->locked = lock;
}

/* Before the device runs an operation: every block readable. */
static void device_unlock(void) {
  if (!protect_on() || device_open) return;
  for (size_t i = 0; i < nblocks; i++) block_protect(&blocks[i], 0);
  device_open = some_open = 1;
}

static int block_in_flight(const dev_block *b); /* the streams section's */

/* Back on the host: every block out of reach but those of a transfer in flight. */
static void device_lock(void) {
  if (!some_open) return;
  int busy_any = 0;
  for (size_t i = 0; i < nblocks; i++) {
    int busy = block_in_flight(&blocks[i]);
    block_protect(&blocks[i], !busy);
    busy_any |= busy;
  }
  device_open = 0;
  some_open = busy_any;
}

static void *block_new(size_t n) {
  if (nblocks == blocks_cap) {
    size_t cap = blocks_cap ? 2 * blocks_cap : 64;
    dev_block *grown = realloc(blocks, cap * sizeof *grown);
    if (!grown) return NULL;
    blocks = grown;
    blocks_cap = cap;
  }
  size_t page = (size_t)sysconf(_SC_PAGESIZE), mapped = ((n ? n : 1) + page - 1) / page * page;
  char *base = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return NULL;
  fill_garbage(base, n);
  blocks[nblocks] = (dev_block){base, n, mapped, 0};
  if (protect_on()) {
    static int installed;
    if (!installed) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_sigaction = on_segv;
      sa.sa_flags = SA_SIGINFO | SA_NODEFER;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGSEGV, &sa, &segv_before);
      installed = 1;
    }
    block_protect(&blocks[nblocks], !device_open);
  }
  nblocks++;
  return base;
}

/* p's block unmapped; its size (0: not a block of cudaMalloc's). */
static size_t block_free(void *p) {
  for (size_t i = 0; i < nblocks; i++)
    if (blocks[i].base == p) {
      size_t n = blocks[i].n;
      munmap(blocks[i].base, blocks[i].mapped);
      blocks[i] = blocks[--nblocks];
      return n;
    }
  return 0;
}

/* ---- streams: ordered queues, run lazily in a seeded random interleaving ----
 * Every operation gets a clock when issued: for each stream, the last of its operations this
 * one follows (its own stream's earlier work, what events its stream waited for carried, and
 * for the legacy stream's implicit order, every blocking stream's work; a blocking stream
 * follows the legacy stream's). It may run once each of those completed. Nothing runs when
 * issued: the host's waits (host_wait) run the operations their target needs, choosing at
 * each step at random among the streams whose next operation may run. The host's own clock
 * is what it has waited for; an operation issued after that follows it too (race checks).
 * Slot 0 is the legacy stream (cudaStream_t 0). */

enum { FAKE_MAX_STREAMS = 32 };
typedef int64_t fake_clock[FAKE_MAX_STREAMS];

struct fake_graph;

/* An operation in a stream's queue (or in a graph's record: then only d, arg and size). */
typedef struct fake_op {
  fake_op_desc d;
  void *arg; /* owned copy of the arguments */
  size_t size;
  int stream;
  int64_t seq;          /* its place in its stream, from 1 */
  fake_clock clock;     /* what it follows (clock[stream] = seq) */
  int started;          /* run (for an operation with poll: in flight) */
  int replayed;         /* put on its stream by a graph launch */
  int pass;             /* the counters' pass it was issued in (-1: none) */
  const unsigned char *was; /* d.pinned_src's bytes when issued (the pending copy's) */
  struct fake_op *next;
} fake_op;

/* What the race detector keeps of an issued operation until the host waited for it. */
typedef struct {
  int64_t seq;
  const char *name;
  int n;
  fake_access *access; /* owned */
} fake_tracked;

typedef struct fake_stream {
  int no;               /* its slot */
  int live;             /* made and not destroyed (the legacy stream: always) */
  int blocking;         /* orders with the legacy stream (cudaStreamCreate; not NonBlocking) */
  int64_t issued, done; /* operations put on it, completed (counted from 1, across the
                           slot's reuses) */
  int64_t last_kernel;  /* seq of its latest kernel (0: none) */
  int64_t kernels;      /* kernels issued on it */
  fake_clock clock;     /* what its next operation follows */
  fake_op *head, *tail; /* issued, not completed; the head may be in flight */
  struct fake_graph *capture; /* the graph it records into, or NULL */
  fake_tracked *tracked;      /* operations with accesses the host has not waited for */
  int64_t ntracked, tracked_cap;
} fake_stream;

static fake_stream streams[FAKE_MAX_STREAMS] = {[0] = {.no = 0, .live = 1}};
static int nstreams = 1;
static fake_clock host_clock; /* what the host waited for */
static int ncapturing;       /* streams capturing now */

static uint64_t rng_state;
static uint64_t rng_next(void) { /* xorshift64* */
  if (!rng_state) rng_state = seed_value() * 0x9E3779B97F4A7C15ull + 1;
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1Dull;
}

static void clock_join(int64_t *into, const int64_t *from) {
  for (int j = 0; j < nstreams; j++)
    if (from[j] > into[j]) into[j] = from[j];
}
static int clock_reached(const int64_t *target) {
  for (int j = 0; j < nstreams; j++)
    if (streams[j].done < target[j]) return 0;
  return 1;
}

static fake_stream *stream_of(cudaStream_t s) {
  if (s == NULL || s == cudaStreamLegacy) return &streams[0];
  if (s == cudaStreamPerThread) die("cudaStreamPerThread is not modelled");
  fake_stream *st = (fake_stream *)(void *)s;
  if (st < streams + 1 || st >= streams + nstreams || !st->live)
    die("an operation on a stream this runtime did not make, or one already destroyed");
  return st;
}
static cudaStream_t handle_of(const fake_stream *st) {
  return st->no == 0 ? NULL : (cudaStream_t)(void *)st;
}

/* ---- pending copies: from page-locked memory, until the host waited for them ---- */

/* An asynchronous copy from page-locked memory: on a GPU it runs any time before the host
 * waits for it, so its source must keep its bytes until then. Checked when it runs and at
 * each host wait until one covers it: bytes rewritten in between are a race a GPU shows (the
 * first H200 run: AdamW's one-entry table was rewritten for the next update before the copy
 * of the previous one ran, and multi-rank plans updated the wrong tensors). */
typedef struct {
  const void *src;
  size_t n;
  unsigned char *was; /* owned: the bytes when the copy was issued */
  int stream;
  int64_t seq;
  const char *name;
  int replayed;
} pending_copy;
static pending_copy *pending;
static size_t npending, pending_cap;

static void rewritten(const char *name, size_t n, int stream, int replayed) {
  static int on = -1;
  if (on < 0) on = env_flag("FAKE_CUDA_CHECK_PINNED", 1);
  if (!on) return;
  char msg[512];
  snprintf(msg, sizeof msg, "page-locked memory was rewritten before the host waited for its "
           "asynchronous copy to the device (%s of %zu bytes on stream %d%s; on a GPU the copy "
           "may read the new bytes): keep a copy's source unchanged until a stream, event or "
           "device synchronize", name, n, stream, replayed ? ", in a CUDA graph's replay" : "");
  die(msg);
}

static const unsigned char *pending_add(const fake_op *op) {
  if (npending == pending_cap) {
    size_t cap = pending_cap ? 2 * pending_cap : 64;
    pending_copy *grown = realloc(pending, cap * sizeof *grown);
    if (!grown) die("out of memory tracking asynchronous copies");
    pending = grown;
    pending_cap = cap;
  }
  size_t n = op->d.pinned_bytes;
  unsigned char *was = malloc(n ? n : 1);
  if (!was) die("out of memory tracking asynchronous copies");
  memcpy(was, op->d.pinned_src, n);
  pending[npending++] = (pending_copy){op->d.pinned_src, n, was, op->stream, op->seq,
                                       op->d.name, op->replayed};
  return was;
}

/* At a host wait: every pending copy's source unchanged; those the host now knows complete
 * are done with. */
static void pending_check(void) {
  size_t keep = 0;
  for (size_t i = 0; i < npending; i++) {
    pending_copy *c = &pending[i];
    if (memcmp(c->src, c->was, c->n)) rewritten(c->name, c->n, c->stream, c->replayed);
    if (host_clock[c->stream] >= c->seq) free(c->was);
    else pending[keep++] = *c;
  }
  npending = keep;
}

/* ---- the race detector ---- */

/* Overlapping, and one of them writes (a pointer argument is the byte it points at). */
static int access_conflict(const fake_access *a, const fake_access *b) {
  if (a->mode != FAKE_WRITE && b->mode != FAKE_WRITE) return 0;
  uintptr_t alo = (uintptr_t)a->p, blo = (uintptr_t)b->p;
  uintptr_t ahi = alo + (a->bytes ? a->bytes : 1), bhi = blo + (b->bytes ? b->bytes : 1);
  return alo < bhi && blo < ahi;
}

/* "reads 0x.. (n bytes)", "writes ...", or for a kernel's "writes through its pointer
 * argument 0x..". */
static void access_text(char *buf, size_t cap, const fake_access *a) {
  const char *how = a->mode == FAKE_READ ? "reads" : "writes";
  if (!a->bytes) snprintf(buf, cap, "%s through its pointer argument %p", how, a->p);
  else snprintf(buf, cap, "%s %p (%zu bytes)", how, a->p, a->bytes);
}

/* op, about to be queued, against the operations of other streams it does not follow. */
static void race_check(const fake_op *op) {
  static int on = -1;
  if (on < 0) on = env_flag("FAKE_CUDA_CHECK_RACES", 1);
  if (!op->d.naccess || !on) return;
  fake_clock after;
  memcpy(after, op->clock, sizeof after);
  clock_join(after, host_clock);
  for (int j = 0; j < nstreams; j++) {
    if (j == op->stream) continue;
    fake_stream *o = &streams[j];
    for (int64_t t = o->ntracked - 1; t >= 0 && o->tracked[t].seq > after[j]; t--)
      for (int a = 0; a < op->d.naccess; a++)
        for (int b = 0; b < o->tracked[t].n; b++) {
          const fake_access *x = &op->d.access[a], *y = &o->tracked[t].access[b];
          if (!access_conflict(x, y)) continue;
          char msg[768], xs[96], ys[96];
          access_text(xs, sizeof xs, x);
          access_text(ys, sizeof ys, y);
          snprintf(msg, sizeof msg, "a race between streams: %s on stream %d%s %s; %s on "
                   "stream %d %s, and the first is not ordered after it (no event wait, "
                   "legacy-stream order or host wait between them): on a GPU they may run in "
                   "either order", op->d.name, op->stream,
                   op->replayed ? " (a CUDA graph's replay)" : "", xs, o->tracked[t].name, j,
                   ys);
          die(msg);
        }
  }
}

static void race_track(const fake_op *op) {
  if (!op->d.naccess) return;
  fake_stream *st = &streams[op->stream];
  if (st->ntracked == st->tracked_cap) {
    int64_t cap = st->tracked_cap ? 2 * st->tracked_cap : 256;
    fake_tracked *grown = realloc(st->tracked, (size_t)cap * sizeof *grown);
    if (!grown) die("out of memory tracking operations");
    st->tracked = grown;
    st->tracked_cap = cap;
  }
  fake_tracked *t = &st->tracked[st->ntracked++];
  t->seq = op->seq;
  t->name = op->d.name;
  t->n = op->d.naccess;
  t->access = malloc((size_t)t->n * sizeof *t->access);
  if (!t->access) die("out of memory tracking operations");
  memcpy(t->access, op->d.access, (size_t)t->n * sizeof *t->access);
}

/* What the host waited for is ordered before everything issued later: forgotten. */
static void race_forget(void) {
  for (int j = 0; j < nstreams; j++) {
    fake_stream *st = &streams[j];
    int64_t k = 0;
    while (k < st->ntracked && st->tracked[k].seq <= host_clock[j]) free(st->tracked[k++].access);
    if (k) {
      memmove(st->tracked, st->tracked + k, (size_t)(st->ntracked - k) * sizeof *st->tracked);
      st->ntracked -= k;
    }
  }
}

/* ---- queueing and running ---- */

struct fake_graph {
  fake_op *head, *tail;
  int invalid; /* a call the driver refuses was made while capturing */
};

/* Ends every capture invalidated (a refused call): its EndCapture reports it. */
static void captures_invalidate(void) {
  for (int j = 0; j < nstreams; j++)
    if (streams[j].capture) streams[j].capture->invalid = 1;
}

/* The legacy stream while a blocking stream captures: refused (the implicit order would
 * reach into the capture). */
static int capture_implicit(const fake_stream *st) {
  if (st->no != 0 || !ncapturing) return 0;
  for (int j = 1; j < nstreams; j++)
    if (streams[j].capture && streams[j].blocking) return 1;
  return 0;
}

/* What st's next operation follows: its clock, with the legacy stream's implicit order (the
 * legacy stream follows every blocking stream's work, a blocking stream the legacy one's). */
static void next_clock(const fake_stream *st, int64_t *c) {
  if (c != st->clock) memcpy(c, st->clock, sizeof(fake_clock));
  if (st->no == 0) {
    for (int j = 1; j < nstreams; j++)
      if (streams[j].live && streams[j].blocking) clock_join(c, streams[j].clock);
  } else if (st->blocking) {
    clock_join(c, streams[0].clock);
  }
}

static fake_op *op_new(const fake_op_desc *d, const void *arg, size_t size) {
  fake_op *op = calloc(1, sizeof *op);
  if (!op || !(op->arg = malloc(size ? size : 1))) die("out of memory queueing an operation");
  memcpy(op->arg, arg, size);
  op->d = *d;
  op->size = size;
  if (op->d.naccess > FAKE_MAX_ACCESSES) die("an operation with more than FAKE_MAX_ACCESSES");
  return op;
}

static void op_free(fake_op *op) {
  free(op->arg);
  free(op);
}

/* Queues op on st (not capturing): its clock, the race check, the counts. */
static void op_put(fake_stream *st, fake_op *op) {
  device_lock(); /* the host is issuing: the device's memory out of its reach again */
  next_clock(st, st->clock);
  op->stream = st->no;
  op->pass = open_pass();
  op->seq = ++st->issued;
  st->clock[st->no] = op->seq;
  memcpy(op->clock, st->clock, sizeof op->clock);
  race_check(op);
  race_track(op);
  if (op->d.pinned_src) op->was = pending_add(op);
  if (op->d.kernels) {
    st->last_kernel = op->seq;
    st->kernels += op->d.kernels;
  }
  now.kernels += op->d.kernels;
  now.h2d += op->d.h2d;
  now.d2h += op->d.d2h;
  fake_cuda_launches += op->d.kernels;
  if (st->tail) st->tail->next = op;
  else st->head = op;
  st->tail = op;
}

/* Its stream's next operation may run: what it follows on other streams completed. */
static int op_ready(const fake_op *op) {
  for (int j = 0; j < nstreams; j++)
    if (j != op->stream && streams[j].done < op->clock[j]) return 0;
  return 1;
}

/* A transfer in flight (started, waiting for its peer) uses memory in block b. */
static int block_in_flight(const dev_block *b) {
  for (int j = 0; j < nstreams; j++) {
    const fake_op *op = streams[j].head;
    if (!op || !op->started) continue;
    for (int a = 0; a < op->d.naccess; a++) {
      const char *p = op->d.access[a].p;
      size_t bytes = op->d.access[a].bytes ? op->d.access[a].bytes : 1;
      if (p < b->base + b->mapped && p + bytes > b->base) return 1;
    }
  }
  return 0;
}

/* Runs (or polls, when in flight) stream st's next operation. 2: it started or completed; 1:
 * still in flight. */
static int op_advance(fake_stream *st) {
  fake_op *op = st->head;
  if (!op->started) {
    if (op->was && memcmp(op->d.pinned_src, op->was, op->d.pinned_bytes))
      rewritten(op->d.name, op->d.pinned_bytes, op->stream, op->replayed);
    op->started = 1;
    device_unlock();
    running_pass = op->pass;
    op->d.run(op->arg);
    running_pass = -1;
    if (op->d.poll && !op->d.poll(op->arg)) return 2;
  } else if (!op->d.poll(op->arg)) {
    return 1;
  }
  st->head = op->next;
  if (!st->head) st->tail = NULL;
  st->done = op->seq;
  op_free(op);
  return 2;
}

/* One step toward target (NULL: any work): a random stream among those whose next operation
 * may run or is in flight. 0: none. */
static int device_step(const int64_t *target) {
  int cand[FAKE_MAX_STREAMS], n = 0;
  for (int j = 0; j < nstreams; j++) {
    fake_stream *st = &streams[j];
    if (!st->head || (target && st->done >= target[j])) continue;
    if (st->head->started || op_ready(st->head)) cand[n++] = j;
  }
  if (!n) return 0;
  return op_advance(&streams[cand[rng_next() % (uint64_t)n]]);
}

/* Waiting on a peer's transfer: yield, and after many turns nap 50 us, so that a long wait
 * leaves the cores to the ranks that must move (as the runtime's own MPI waits do). */
static void idle(long *spins) {
  if (++*spins < 2000) {
    sched_yield();
    return;
  }
  struct timespec nap = {0, 50000};
  nanosleep(&nap, NULL);
}

int fake_cuda_progress(void) {
  static long spins;
  int r = device_step(NULL);
  if (r == 2) spins = 0;
  else idle(&spins);
  return r != 0;
}

/* Runs what target needs. While that waits on a peer (an operation in flight), the device
 * goes on with other work too, as a GPU would. */
static void drain(const int64_t *target) {
  long spins = 0;
  while (!clock_reached(target)) {
    int r = device_step(target);
    if (r == 2) {
      spins = 0;
      continue;
    }
    int other = device_step(NULL);
    if (r == 0 && other == 0)
      die("no operation can run, yet the host waits for some (a defect of the fake)");
    if (other == 2) spins = 0;
    else idle(&spins);
  }
}

/* Everything issued so far, on every stream. */
static void clock_all(int64_t *c) {
  memset(c, 0, sizeof(fake_clock));
  for (int j = 0; j < nstreams; j++) c[j] = streams[j].issued;
}

/* The host learns that target completed (a wait, a successful query). */
static void host_knows(const int64_t *target) {
  device_lock();
  clock_join(host_clock, target);
  pending_check();
  race_forget();
}

/* A host wait for target: refused while capturing; counted; runs what it needs. */
static cudaError_t host_wait(const int64_t *target) {
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  now.syncs++;
  drain(target);
  host_knows(target);
  return cudaSuccess;
}

/* The device finishes everything (cudaFree, cudaFreeHost, the exit), not counted as a wait. */
static void device_idle(void) {
  fake_clock all;
  clock_all(all);
  drain(all);
  host_knows(all);
}

/* Puts an operation on stream s, or into the graph s captures. */
static cudaError_t enqueue(cudaStream_t s, const fake_op_desc *d, const void *arg,
                           size_t size, fake_stream **on) {
  fake_stream *st = stream_of(s);
  *on = st;
  if (capture_implicit(st)) {
    captures_invalidate();
    return cudaErrorStreamCaptureImplicit;
  }
  fake_op *op = op_new(d, arg, size);
  if (st->capture) {
    if (st->capture->tail) st->capture->tail->next = op;
    else st->capture->head = op;
    st->capture->tail = op;
    return cudaSuccess;
  }
  op_put(st, op);
  return cudaSuccess;
}

/* A launcher's or a copy's operation: counted as a launch call when it holds kernels. */
cudaError_t fake_cuda_enqueue(cudaStream_t s, const fake_op_desc *d, const void *arg,
                              size_t size) {
  fake_stream *st;
  cudaError_t e = enqueue(s, d, arg, size, &st);
  if (e != cudaSuccess || st->capture) return e;
  now.launch_calls += d->kernels > 0;
  op_issued();
  return cudaSuccess;
}

int fake_cuda_unordered_kernels(cudaStream_t s, int *stream_no, int64_t *kernels) {
  fake_stream *st = stream_of(s);
  fake_clock after;
  next_clock(st, after);
  for (int j = 0; j < nstreams; j++)
    if (j != st->no && streams[j].last_kernel > after[j]) {
      *stream_no = j;
      *kernels = streams[j].kernels;
      return 1;
    }
  return 0;
}

/* At exit: what is still queued is dropped unrun (the process ends; a GPU's context too). */
static void streams_release(void) {
  for (int j = 0; j < nstreams; j++) {
    fake_stream *st = &streams[j];
    for (fake_op *op = st->head, *next; op; op = next) {
      next = op->next;
      op_free(op);
    }
    st->head = st->tail = NULL;
    for (int64_t k = 0; k < st->ntracked; k++) free(st->tracked[k].access);
    free(st->tracked);
    st->tracked = NULL;
    st->ntracked = st->tracked_cap = 0;
  }
  for (size_t i = 0; i < npending; i++) free(pending[i].was);
  free(pending);
  pending = NULL;
  npending = pending_cap = 0;
}
static void streams_at_exit(void) {
  static int registered;
  if (!registered) {
    registered = 1;
    atexit(streams_release);
  }
}

/* ---- capture and replay ---- */

int fake_cuda_capturing(void) { return ncapturing > 0; }

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  fake_stream *st = stream_of(s);
  if (st->no == 0) return cudaErrorStreamCaptureUnsupported; /* the driver's answer */
  if (st->capture) return cudaErrorIllegalState;
  st->capture = calloc(1, sizeof *st->capture);
  if (!st->capture) return cudaErrorMemoryAllocation;
  ncapturing++;
  return cudaSuccess;
}

static void graph_free(struct fake_graph *g) {
  for (fake_op *op = g->head, *next; op; op = next) {
    next = op->next;
    op_free(op);
  }
  free(g);
}

/* FAKE_CUDA_BREAK_CAPTURE=1: the capture ends invalidated, as when the driver refused a call
 * in it (the runtime must then run the step kernel by kernel). An invalidated capture gives
 * no graph. */
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) {
  fake_stream *st = stream_of(s);
  *g = NULL;
  if (!st->capture) return cudaErrorIllegalState;
  struct fake_graph *graph = st->capture;
  st->capture = NULL;
  ncapturing--;
  const char *brk = getenv("FAKE_CUDA_BREAK_CAPTURE");
  if (graph->invalid || (brk && !strcmp(brk, "1"))) {
    graph_free(graph);
    return cudaErrorStreamCaptureInvalidated;
  }
  *g = (cudaGraph_t)(void *)graph;
  return cudaSuccess;
}
/* The executable graph is the recorded list itself; cudaGraphDestroy of the template is then
 * a no-op, cudaGraphExecDestroy frees it. */
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t g, unsigned long long f) {
  *exec = (cudaGraphExec_t)(void *)g;
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) { return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  graph_free((struct fake_graph *)(void *)exec); /* queued replays hold their own copies */
  return cudaSuccess;
}
/* The record's operations on stream s, each as if issued now: its pinned sources are read
 * when it runs, every detector on. */
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
  fake_stream *st = stream_of(s);
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  struct fake_graph *g = (struct fake_graph *)(void *)exec;
  for (fake_op *rec = g->head; rec; rec = rec->next) {
    fake_op *op = op_new(&rec->d, rec->arg, rec->size);
    op->replayed = 1;
    op_put(st, op);
  }
  now.launch_calls++;
  now.graph_launches++;
  op_issued();
  return cudaSuccess;
}

/* ---- streams and events ---- */

static cudaError_t stream_make(cudaStream_t *out, int blocking, unsigned int flags) {
  streams_at_exit();
  int no = 0;
  for (int j = 1; j < nstreams && !no; j++) /* a destroyed stream's slot, once idle */
    if (!streams[j].live && !streams[j].head) no = j;
  if (!no) {
    if (nstreams == FAKE_MAX_STREAMS) die("more than FAKE_MAX_STREAMS streams");
    no = nstreams++;
  }
  fake_stream *st = &streams[no];
  st->no = no;
  st->live = 1;
  st->blocking = blocking;
  memset(st->clock, 0, sizeof st->clock);
  st->clock[no] = st->issued; /* a reused slot's numbering goes on */
  *out = (cudaStream_t)(void *)st;
  if (fake_cuda_on_stream_create) fake_cuda_on_stream_create(*out, flags);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return stream_make(s, 1, cudaStreamDefault); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  return stream_make(s, !(flags & cudaStreamNonBlocking), flags);
}
/* Its work still completes (it stays queued); the slot is reused once it has. */
cudaError_t cudaStreamDestroy(cudaStream_t s) {
  fake_stream *st = stream_of(s);
  if (st->no == 0) return cudaErrorInvalidResourceHandle;
  if (st->capture) return cudaErrorIllegalState;
  st->live = 0;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  fake_stream *st = stream_of(s);
  return host_wait(st->clock);
}
cudaError_t cudaDeviceSynchronize(void) {
  fake_clock all;
  clock_all(all);
  return host_wait(all);
}

/* An event: the clock of a marker put on its stream when recorded, which notes the host's
 * time when it runs (cudaEventElapsedTime: the host JIT's time between two markers). */
typedef struct fake_event {
  int recorded;
  fake_clock clock;   /* what it completes after */
  fake_stream *on;    /* the stream of its last record */
  long launches;      /* kernels issued at that record (the fake NCCL's log) */
  int64_t gen;        /* its records so far: a marker stamps only the latest's time */
  int refs;           /* the owner's, and one per marker not yet run */
  double ms;
  int stamped;        /* the latest record's marker ran */
} fake_event;

static double fake_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static void event_unref(fake_event *ev) {
  if (--ev->refs == 0) free(ev);
}
typedef struct {
  fake_event *ev;
  int64_t gen;
} marker_args;
static void run_marker(void *a) {
  marker_args *m = a;
  if (m->ev->gen == m->gen) {
    m->ev->ms = fake_now_ms();
    m->ev->stamped = 1;
  }
  event_unref(m->ev);
}

cudaError_t cudaEventCreate(cudaEvent_t *e) {
  fake_event *ev = calloc(1, sizeof *ev);
  if (!ev) return cudaErrorMemoryAllocation;
  ev->refs = 1;
  *e = (cudaEvent_t)(void *)ev;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  return cudaEventCreate(e);
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  if (e) event_unref((fake_event *)(void *)e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  fake_event *ev = (fake_event *)(void *)e;
  fake_stream *st = stream_of(s);
  if (st->capture) die("an event recorded on a stream being captured is not modelled");
  if (capture_implicit(st)) {
    captures_invalidate();
    return cudaErrorStreamCaptureImplicit;
  }
  marker_args m = {ev, ++ev->gen};
  fake_op_desc d = {.name = "event record", .run = run_marker};
  fake_op *op = op_new(&d, &m, sizeof m);
  ev->refs++;
  op_put(st, op);
  memcpy(ev->clock, op->clock, sizeof ev->clock);
  ev->recorded = 1;
  ev->stamped = 0;
  ev->on = st;
  ev->launches = fake_cuda_launches;
  if (fake_cuda_on_event_record) fake_cuda_on_event_record(e, s);
  return cudaSuccess;
}
/* Work issued on s after this follows what e's record followed (an event never recorded is
 * complete). */
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  fake_event *ev = (fake_event *)(void *)e;
  fake_stream *st = stream_of(s);
  static int ignore = -1;
  if (ignore < 0) ignore = env_flag("FAKE_CUDA_IGNORE_WAITS", 0);
  if (ignore || (fake_cuda_on_stream_wait && fake_cuda_on_stream_wait(s, e))) return cudaSuccess;
  if (!ev->recorded) return cudaSuccess;
  if (st->capture) { /* an event recorded outside the capture: the driver refuses it */
    captures_invalidate();
    return cudaErrorStreamCaptureIsolation;
  }
  clock_join(st->clock, ev->clock);
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  fake_event *ev = (fake_event *)(void *)e;
  if (!ev->recorded) return ncapturing ? cudaErrorStreamCaptureUnsupported : cudaSuccess;
  return host_wait(ev->clock);
}
/* A query lets the device take one step toward the target, then says whether it is there (a
 * GPU may or may not be): a caller that polls gets there. */
static cudaError_t query(const int64_t *target) {
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  if (!clock_reached(target)) device_step(target);
  if (!clock_reached(target)) {
    device_lock();
    return cudaErrorNotReady;
  }
  host_knows(target);
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  fake_event *ev = (fake_event *)(void *)e;
  return ev->recorded ? query(ev->clock) : cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t s) { return query(stream_of(s)->clock); }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end) {
  fake_event *a = (fake_event *)(void *)start, *b = (fake_event *)(void *)end;
  if (!a->stamped || !b->stamped) return cudaErrorNotReady;
  *ms = (float)(b->ms - a->ms);
  return cudaSuccess;
}

cudaStream_t fake_cuda_event_stream(cudaEvent_t e) {
  fake_event *ev = (fake_event *)(void *)e;
  return ev->recorded ? handle_of(ev->on) : NULL;
}
long fake_cuda_event_launches(cudaEvent_t e) { return ((fake_event *)(void *)e)->launches; }

/* ---- the device ---- */

/* One fake GPU, or FAKE_CUDA_DEVICES of them (one per rank for --comm nccl over the fake
 * NCCL, test/gpu/fake_nccl.c); they all share the host's memory. */
static int fake_count(void) {
  const char *v = getenv("FAKE_CUDA_DEVICES");
  int n = v ? atoi(v) : 1;
  return n > 0 ? n : 1;
}

cudaError_t cudaGetDeviceCount(int *n) {
  *n = fake_count();
  return cudaSuccess;
}
static int current_device;
cudaError_t cudaSetDevice(int d) {
  if (d < 0 || d >= fake_count()) return cudaErrorInvalidDevice;
  current_device = d;
  return cudaSuccess;
}
cudaError_t cudaGetDevice(int *d) {
  *d = current_device;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
const char *cudaGetErrorName(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "cudaSuccess";
  case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
  case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
  case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
  case cudaErrorNotReady: return "cudaErrorNotReady";
  case cudaErrorIllegalState: return "cudaErrorIllegalState";
  case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
  case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
  case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
  case cudaErrorStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
  case cudaErrorSymbolNotFound: return "cudaErrorSymbolNotFound";
  default: return "fakeError";
  }
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

/* A device of FAKE_TOTAL_GB, of which what cudaMalloc holds is in use (each block a mapping
 * of its own: page-aligned, beyond cudaMalloc's 256 bytes). */
enum { FAKE_TOTAL_GB = 80 };
static size_t fake_in_use; /* device bytes allocated (cudaMemGetInfo) */
cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total) {
  *total = (size_t)FAKE_TOTAL_GB << 30;
  *free_b = *total - fake_in_use;
  return cudaSuccess;
}
cudaError_t cudaMalloc(void **p, size_t n) {
  *p = NULL;
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  if (n > ((size_t)FAKE_TOTAL_GB << 30) - fake_in_use) return cudaErrorMemoryAllocation;
  *p = block_new(n);
  if (!*p) return cudaErrorMemoryAllocation;
  fake_in_use += n;
  now.allocs++;
  return cudaSuccess;
}
/* cudaFree waits for the device first (not counted among the host waits); cudaFree(NULL)
 * only makes the context. */
cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  device_idle();
  dev_block *b = block_of(p);
  if (!b || b->base != p) return cudaErrorInvalidValue;
  fake_in_use -= block_free(p);
  now.frees++;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) {
  *p = NULL;
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  if (npinned == FAKE_MAX_PINNED) die("more than FAKE_MAX_PINNED page-locked blocks");
  *p = malloc(n ? n : 1);
  if (!*p) return cudaErrorMemoryAllocation;
  fill_garbage(*p, n);
  pinned[npinned].p = *p;
  pinned[npinned++].n = n;
  now.allocs++;
  return cudaSuccess;
}
/* cudaFreeHost waits for the device first. */
cudaError_t cudaFreeHost(void *p) {
  if (!p) return cudaSuccess;
  if (ncapturing) {
    captures_invalidate();
    return cudaErrorStreamCaptureUnsupported;
  }
  device_idle();
  for (int i = 0; i < npinned; i++)
    if (pinned[i].p == p) {
      pinned[i] = pinned[--npinned];
      now.frees++;
      free(p);
      return cudaSuccess;
    }
  return cudaErrorInvalidValue;
}

typedef struct {
  void *p;
  int v;
  size_t n;
} memset_args;
static void run_memset(void *a) {
  memset_args *m = a;
  memset(m->p, m->v, m->n);
  moved(0, (int64_t)m->n);
}
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s) {
  memset_args m = {p, v, n};
  fake_op_desc d = {.name = "cudaMemsetAsync", .run = run_memset, .naccess = 1,
                    .access = {{p, n, FAKE_WRITE}}};
  return fake_cuda_enqueue(s, &d, &m, sizeof m);
}
/* On the legacy stream, asynchronous to the host as cudaMemsetAsync (device memory). */
cudaError_t cudaMemset(void *p, int v, size_t n) { return cudaMemsetAsync(p, v, n, NULL); }

typedef struct {
  void *d;
  const void *s;
  size_t n;
  enum cudaMemcpyKind k; /* the bytes it moves on the device */
} memcpy_args;
static void run_memcpy(void *a) {
  memcpy_args *m = a;
  memmove(m->d, m->s, m->n);
  if (m->k != cudaMemcpyDeviceToHost) moved(0, (int64_t)m->n); /* on the device */
  if (m->k != cudaMemcpyHostToDevice) moved((int64_t)m->n, 0);
}
/* A copy to or from host memory that cudaMallocHost did not give waits for its stream first
 * (the CUDA runtime's rule for pageable memory) and cannot be captured: one to the host is
 * complete when this returns; one from the host has read its source (it runs now), but the
 * host does not know it landed (CUDA returns once the source is staged), so another stream's
 * operation must still be ordered after it. One from page-locked memory reads it when it
 * runs. */
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t st) {
  const void *host = k == cudaMemcpyHostToDevice ? s : k == cudaMemcpyDeviceToHost ? d : NULL;
  int pageable = host && !is_pinned(host, n);
  if (pageable) {
    cudaError_t e = host_wait(stream_of(st)->clock);
    if (e != cudaSuccess) return e;
  }
  memcpy_args m = {d, s, n, k};
  fake_op_desc op = {.name = "cudaMemcpyAsync", .run = run_memcpy, .naccess = 2,
                     .access = {{s, n, FAKE_READ}, {d, n, FAKE_WRITE}}};
  if (k == cudaMemcpyHostToDevice) op.h2d = (int64_t)n;
  if (k == cudaMemcpyDeviceToHost) op.d2h = (int64_t)n;
  if (k == cudaMemcpyHostToDevice && !pageable) op.pinned_src = s, op.pinned_bytes = n;
  cudaError_t e = fake_cuda_enqueue(st, &op, &m, sizeof m);
  if (e == cudaSuccess && pageable) { /* the source read before returning */
    fake_stream *on = stream_of(st);
    drain(on->clock);
    if (k == cudaMemcpyDeviceToHost) host_knows(on->clock);
    else device_lock();
  }
  return e;
}
cudaError_t cudaMemcpy(void *d, const void *s, size_t n, enum cudaMemcpyKind k) {
  cudaError_t e = cudaMemcpyAsync(d, s, n, k, NULL);
  return e == cudaSuccess ? cudaStreamSynchronize(NULL) : e;
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
  if (running_pass >= 0 && !strncmp(l->name, "piper_bf16_", strlen("piper_bf16_")))
    passes[running_pass].conversions++;
}
/* Its pointer arguments are the addresses it reads or writes from, as the kernel's loads and
 * stores through them say (kernel_jit.h; one it only passes on counts as read), for the race
 * detector. */
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args,
                             size_t shmem, cudaStream_t s) {
  launch_args l = {(const char *)func,
                   (int64_t)grid.x * grid.y * grid.z * block.x * block.y * block.z, 0, {0}};
  l.nargs = nargs_of(l.name);
  fake_op_desc d = fake_kernel_op(l.name, run_launch, 1);
  for (int i = 0; i < l.nargs; i++) {
    memcpy(&l.vals[i], args[i], kernelJitArgSize(l.name, i));
    if (kernelJitArgIsPointer(l.name, i))
      fake_op_uses(&d, (const void *)(uintptr_t)l.vals[i],
                   kernelJitArgUse(l.name, i) & KERNEL_JIT_WRITES ? FAKE_WRITE : FAKE_READ);
  }
  return fake_cuda_enqueue(s, &d, &l, sizeof l);
}
/* ---- cuBLAS ---- */

/* A handle is the stream its calls go on (cublasSetStream; the legacy stream at first). */
typedef struct {
  cudaStream_t stream;
} fake_blas;
enum { FAKE_MAX_BLAS = 16 };
static fake_blas blas_handles[FAKE_MAX_BLAS];
static int nblas;
cublasStatus_t cublasCreate_v2(cublasHandle_t *h) {
  if (nblas == FAKE_MAX_BLAS) return CUBLAS_STATUS_ALLOC_FAILED;
  *h = (cublasHandle_t)(void *)&blas_handles[nblas++];
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
  return mode == CUBLAS_PEDANTIC_MATH ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  ((fake_blas *)(void *)h)->stream = s;
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
  moved(ab * ((int64_t)g->m * g->k + (int64_t)g->k * g->n) + (g->beta != 0.0f) * cb * mn +
            (bias ? 4 * (int64_t)g->m : 0),
        cb * mn);
  free(wa);
  free(wb);
  free(wc);
}
static void run_gemm(void *a) { gemm_then_bias(a, NULL); }
/* The bytes a column-major operand spans: op(X) is rowsOp x colsOp, leading dimension ld. */
static size_t matrix_bytes(cublasOperation_t t, int rowsOp, int colsOp, int ld, size_t elem) {
  int64_t rows = t == CUBLAS_OP_T ? colsOp : rowsOp, cols = t == CUBLAS_OP_T ? rowsOp : colsOp;
  return rows > 0 && cols > 0 ? (size_t)((cols - 1) * ld + rows) * elem : 0;
}
/* A GEMM's operation: A and B read (elem bytes an element), C written (bf16 or fp32), over the
 * bytes they span. */
static fake_op_desc gemm_op(const char *name, void (*run)(void *), const gemm_args *g,
                            size_t elem) {
  fake_op_desc d = {.name = name, .run = run, .kernels = 1, .naccess = 3};
  d.access[0] = (fake_access){g->A, matrix_bytes(g->ta, g->m, g->k, g->lda, elem), FAKE_READ};
  d.access[1] = (fake_access){g->B, matrix_bytes(g->tb, g->k, g->n, g->ldb, elem), FAKE_READ};
  d.access[2] = (fake_access){g->C, matrix_bytes(CUBLAS_OP_N, g->m, g->n, g->ldc,
                                                 g->c_bf16 ? 2 : 4), FAKE_WRITE};
  return d;
}
static cublasStatus_t blas_status(cudaError_t e) {
  return e == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}
cublasStatus_t cublasSgemm_v2(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                              int m, int n, int k, const float *alpha, const float *A, int lda,
                              const float *B, int ldb, const float *beta, float *C, int ldc) {
  gemm_args g = {ta, tb, m, n, k, lda, ldb, ldc, 0, *alpha, *beta, A, B, C, 0};
  fake_op_desc d = gemm_op("cublasSgemm", run_gemm, &g, 4);
  return blas_status(fake_cuda_enqueue(((fake_blas *)(void *)h)->stream, &d, &g, sizeof g));
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
  fake_op_desc d = gemm_op("cublasGemmEx", run_gemm, &g, 2);
  return blas_status(fake_cuda_enqueue(((fake_blas *)(void *)h)->stream, &d, &g, sizeof g));
}

/* ---- cuBLASLt: what cuda.c's lt_gemm_epilogue uses. Descriptors are the fake's own
 * structs; cublasLtMatmul is run_gemm (beta 0) and then the epilogue, as cuBLASLt documents
 * each:
 *   BIAS    D[i, j] += bias[i] on the column-major D, after the product is rounded (as the
 *           CPU's (x w^T) + b), and a bf16 D rounded once after that;
 *   BGRADB  D = op(A) op(B) unchanged, and bias[j] = the sum of op(B)[l, j] over the GEMM's
 *           k (l = 0..k-1), one per column of D: the bias gradient reduced from B, summed in
 *           fp32 (bf16 B widened exactly) in order of l, as a GPU's fp32 accumulator would,
 *           its order of summation aside. FAKE_CUDA_EPILOGUE_BUG=bgradb leaves out l = k-1
 *           (a reduction one row short, put in on purpose: the negative control).
 * Only the combinations cuda.c asks for are accepted: compute 32F, scale 32F, fp32 or bf16 A
 * and B, C = D fp32 (or bf16 with bf16 A and B), BIAS with an fp32 bias, BGRADB with an fp32
 * bias and fp32 D, alpha 1 and beta 0. ---- */
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
  *h = (cublasLtHandle_t)(void *)&jit; /* its calls name their stream */
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
/* The epilogues the fake runs: BIAS, and BGRADB into an fp32 D. */
static int lt_epilogue_ok(const fake_lt_desc *f, const fake_lt_layout *c) {
  return f->epilogue == CUBLASLT_EPILOGUE_BIAS ||
         (f->epilogue == CUBLASLT_EPILOGUE_BGRADB && c->type == CUDA_R_32F);
}
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
                                              cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t p, int want,
                                              cublasLtMatmulHeuristicResult_t r[], int *found) {
  fake_lt_desc *f = (fake_lt_desc *)(void *)d;
  fake_lt_layout *a = (fake_lt_layout *)(void *)A, *b = (fake_lt_layout *)(void *)B;
  fake_lt_layout *c = (fake_lt_layout *)(void *)C;
  int ok = !f->bad && lt_epilogue_ok(f, c) && f->bias_type == CUDA_R_32F &&
           a->type == b->type && (a->type == CUDA_R_32F || a->type == CUDA_R_16BF) &&
           (c->type == CUDA_R_32F || (c->type == CUDA_R_16BF && a->type == CUDA_R_16BF)) &&
           C == D;
  *found = ok && want > 0;
  if (*found) memset(&r[0], 0, sizeof r[0]);
  return CUBLAS_STATUS_SUCCESS;
}

typedef struct {
  gemm_args g;
  cublasLtEpilogue_t epilogue;
  const float *bias;
} lt_args;
/* op(B)[l, j] of the GEMM g, widened where B is bf16 */
static float op_b_at(const gemm_args *g, int64_t l, int64_t j) {
  int64_t at = g->tb == CUBLAS_OP_T ? j + l * g->ldb : l + j * g->ldb;
  if (!g->bf16) return ((const float *)g->B)[at];
  float v;
  prt_bf16_widen(&v, (const uint16_t *)g->B + at, 1);
  return v;
}
static void run_lt(void *a) {
  lt_args *l = a;
  if (l->epilogue == CUBLASLT_EPILOGUE_BIAS) {
    gemm_then_bias(&l->g, l->bias);
    return;
  }
  gemm_then_bias(&l->g, NULL); /* BGRADB */
  static int bug = -1;
  if (bug < 0) {
    const char *which = getenv("FAKE_CUDA_EPILOGUE_BUG");
    bug = which && !strcmp(which, "bgradb");
  }
  float *db = (float *)l->bias;
  int64_t rows = bug && l->g.k > 0 ? l->g.k - 1 : l->g.k;
  for (int64_t j = 0; j < l->g.n; j++) {
    float sum = 0.0f;
    for (int64_t r = 0; r < rows; r++) sum += op_b_at(&l->g, r, j);
    db[j] = sum;
  }
  moved(0, (int64_t)l->g.n * 4);
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
  int bgrad = f->epilogue == CUBLASLT_EPILOGUE_BGRADB;
  if (f->bad || !lt_epilogue_ok(f, c) || !f->bias || C != D || Cd != Dd ||
      *(const float *)alpha != 1.0f || *(const float *)beta != 0.0f)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  int m = (int)c->rows, n = (int)c->cols;
  int k = (int)(f->ta == CUBLAS_OP_T ? a->rows : a->cols);
  lt_args l = {{f->ta, f->tb, m, n, k, (int)a->ld, (int)b->ld, (int)c->ld,
                a->type == CUDA_R_16BF, 1.0f, 0.0f, A, B, D, c->type == CUDA_R_16BF},
               f->epilogue, f->bias};
  fake_op_desc op = gemm_op("cublasLtMatmul", run_lt, &l.g, a->type == CUDA_R_16BF ? 2 : 4);
  op.access[op.naccess++] =
      bgrad ? (fake_access){f->bias, (size_t)n * sizeof(float), FAKE_WRITE}
            : (fake_access){f->bias, (size_t)m * sizeof(float), FAKE_READ};
  return blas_status(fake_cuda_enqueue(s, &op, &l, sizeof l));
}

/* The engine, for a test that ends cleanly (a training binary just exits). */
void fake_cuda_destroy(void) {
  if (!mlirExecutionEngineIsNull(jit)) kernelJitDestroy(jit);
  jit = (MlirExecutionEngine){NULL};
}
