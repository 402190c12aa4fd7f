/* The CUDA device (device.h) over the CUDA runtime API: cudaMalloc, cudaMemcpyAsync,
 * cudaMemsetAsync, streams and events. Lives in libpiper_rt_cuda, built only where the CUDA
 * toolkit is found, so CPU binaries carry no CUDA dependency. It links the CUDA runtime
 * statically (cudart_static), never libcuda: cudart loads the driver itself, so a binary
 * starts on a machine with no GPU or driver and prt_device_cuda_open says so (DESIGN.md, GPU).
 *
 * Memory is device memory (host_visible = 0): the runtime stages host reads and writes
 * through host buffers (prt_host_view_begin/end). The NULL stream is the legacy default
 * stream; streams are created with cudaStreamCreate, so they also order against it. Events
 * are created with timing disabled (cheapest for cross-stream waits).
 *
 * Every CUDA call goes through CUDA_CHECK, which turns a failure into a status naming the
 * call, the device, the CUDA error, file:line and what to do. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "device.h"
#include "device/cuda_common.h"
#include "prt_internal.h"

int prt_device_cuda_open(int ordinal, prt_device **out, prt_status *st);
int prt_device_cuda_count(void);

typedef struct prt_cuda_device {
  prt_device base; /* first: a prt_device * is a prt_cuda_device * */
  int ordinal;     /* CUDA device number (cudaSetDevice) */
} prt_cuda_device;

static int cuda_ordinal(prt_device *d) { return ((prt_cuda_device *)d)->ordinal; }

/* Fills st for a failed CUDA call (prt_cuda_fail's message, naming the device) and returns
 * 1. Clears CUDA's last error, so a later call does not report this one again (sticky
 * errors stay: the device is then unusable). */
static int cuda_fail(prt_device *d, prt_status *st, const char *call, const char *file,
                     int line, cudaError_t e, const char *hint) {
  (void)cudaGetLastError();
  return prt_cuda_fail(st, e, d ? d->name : "cuda", call, file, line, hint);
}

/* Runs a CUDA call; on failure returns from the calling function with st filled. */
#define CUDA_CHECK(d, st, call, hint)                                                      \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) return cuda_fail((d), (st), #call, __FILE__, __LINE__, e_, hint); \
  } while (0)

static const char *const HINT_MEM =
    "free device memory (another process on this GPU?) or shrink the model or batch";
static const char *const HINT_BUG =
    "an earlier kernel or copy may have failed; rerun with CUDA_LAUNCH_BLOCKING=1 to find it";

/* Makes d the calling thread's current device (cheap when it already is). */
#define CUDA_USE(d, st)                                                                    \
  CUDA_CHECK(d, st, cudaSetDevice(cuda_ordinal(d)), "check that the device still exists")

static void cuda_destroy(prt_device *d) {
  if (cudaSetDevice(cuda_ordinal(d)) == cudaSuccess) (void)cudaDeviceSynchronize();
  free(d);
}

static int cuda_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  *out = NULL;
  size_t n = bytes ? bytes : PRT_ALIGN; /* cudaMalloc aligns to >= 256 B >= PRT_ALIGN */
  CUDA_USE(d, st);
  void *p = NULL;
  CUDA_CHECK(d, st, cudaMalloc(&p, n), HINT_MEM);
  cudaError_t e = cudaMemset(p, 0, n);
  if (e == cudaSuccess) e = cudaDeviceSynchronize(); /* zeroed before anyone reads it */
  if (e != cudaSuccess) {
    (void)cudaFree(p);
    return cuda_fail(d, st, "cudaMemset(p, 0, n)", __FILE__, __LINE__, e, HINT_BUG);
  }
  *out = p;
  return 0;
}

static void cuda_free(prt_device *d, void *p) {
  /* cudaFree waits for the device; a failure here has nowhere to go and frees nothing. */
  if (cudaSetDevice(cuda_ordinal(d)) == cudaSuccess) (void)cudaFree(p);
}

static const enum cudaMemcpyKind cuda_kind[] = {cudaMemcpyHostToDevice,
                                                cudaMemcpyDeviceToHost,
                                                cudaMemcpyDeviceToDevice};

static int cuda_copy(prt_device *d, void *dst, const void *src, size_t bytes,
                     prt_copy_kind kind, prt_dstream *s, prt_status *st) {
  CUDA_USE(d, st);
  CUDA_CHECK(d, st, cudaMemcpyAsync(dst, src, bytes, cuda_kind[kind], (cudaStream_t)s),
             "check that the device pointer came from this device's alloc and the range "
             "lies inside it");
  return 0;
}

static int cuda_memset(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                       prt_status *st) {
  CUDA_USE(d, st);
  CUDA_CHECK(d, st, cudaMemsetAsync(p, value, bytes, (cudaStream_t)s),
             "check that the pointer came from this device's alloc and the range lies "
             "inside it");
  return 0;
}

/* A prt_dstream * is the cudaStream_t itself; a prt_devent * the cudaEvent_t. */
static int cuda_stream_create(prt_device *d, prt_dstream **out, prt_status *st) {
  *out = NULL;
  CUDA_USE(d, st);
  cudaStream_t s = NULL;
  CUDA_CHECK(d, st, cudaStreamCreate(&s), HINT_MEM);
  *out = (prt_dstream *)s;
  return 0;
}

static void cuda_stream_destroy(prt_device *d, prt_dstream *s) {
  /* cudaStreamDestroy returns at once; the stream's work still completes. */
  if (cudaSetDevice(cuda_ordinal(d)) == cudaSuccess)
    (void)cudaStreamDestroy((cudaStream_t)s);
}

static int cuda_stream_sync(prt_device *d, prt_dstream *s, prt_status *st) {
  CUDA_CHECK(d, st, cudaStreamSynchronize((cudaStream_t)s), HINT_BUG);
  return 0;
}

static int cuda_event_create(prt_device *d, prt_devent **out, prt_status *st) {
  CUDA_USE(d, st);
  cudaEvent_t e = NULL;
  CUDA_CHECK(d, st, cudaEventCreateWithFlags(&e, cudaEventDisableTiming), HINT_MEM);
  *out = (prt_devent *)e;
  return 0;
}

static void cuda_event_destroy(prt_device *d, prt_devent *e) {
  if (cudaSetDevice(cuda_ordinal(d)) == cudaSuccess) (void)cudaEventDestroy((cudaEvent_t)e);
}

static int cuda_event_record(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st) {
  CUDA_CHECK(d, st, cudaEventRecord((cudaEvent_t)e, (cudaStream_t)s),
             "check that the event and the stream belong to this device");
  return 0;
}

static int cuda_stream_wait(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st) {
  CUDA_CHECK(d, st, cudaStreamWaitEvent((cudaStream_t)s, (cudaEvent_t)e, 0),
             "check that the event and the stream belong to this device");
  return 0;
}

static int cuda_event_sync(prt_device *d, prt_devent *e, prt_status *st) {
  CUDA_CHECK(d, st, cudaEventSynchronize((cudaEvent_t)e), HINT_BUG);
  return 0;
}

static int cuda_event_query(prt_device *d, prt_devent *e, int *done, prt_status *st) {
  cudaError_t r = cudaEventQuery((cudaEvent_t)e);
  *done = r == cudaSuccess;
  if (r == cudaErrorNotReady) (void)cudaGetLastError(); /* not an error: still running */
  else if (r != cudaSuccess)
    return cuda_fail(d, st, "cudaEventQuery", __FILE__, __LINE__, r, HINT_BUG);
  return 0;
}

static int cuda_synchronize(prt_device *d, prt_status *st) {
  CUDA_USE(d, st);
  CUDA_CHECK(d, st, cudaDeviceSynchronize(), HINT_BUG);
  return 0;
}

/* Page-locked host memory: a copy from it is asynchronous (from pageable memory the CUDA
 * runtime first waits for the stream). */
static int cuda_host_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  *out = NULL;
  CUDA_USE(d, st);
  CUDA_CHECK(d, st, cudaMallocHost(out, bytes ? bytes : 1), HINT_MEM);
  return 0;
}

static void cuda_host_free(prt_device *d, void *p) {
  if (p && cudaSetDevice(cuda_ordinal(d)) == cudaSuccess) (void)cudaFreeHost(p);
}

static const prt_device_vtable cuda_vtable = {
    cuda_destroy,      cuda_alloc,         cuda_free,          cuda_copy,
    cuda_memset,       cuda_stream_create, cuda_stream_destroy, cuda_stream_sync,
    cuda_event_create, cuda_event_destroy, cuda_event_record,  cuda_stream_wait,
    cuda_event_sync,   cuda_event_query,   cuda_synchronize,    cuda_host_alloc,
    cuda_host_free,
};

int prt_device_cuda_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0; /* no driver or no GPU: none to open */
  (void)cudaGetLastError();
  return n;
}

int prt_device_cuda_open(int ordinal, prt_device **out, prt_status *st) {
  *out = NULL;
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    (void)cudaGetLastError();
    return prt_fail(st, 1, "no CUDA device: cudaGetDeviceCount says %s (%s) at %s:%d; run on "
                    "a machine with an NVIDIA GPU and driver (nvidia-smi lists it) or use the "
                    "CPU binary", e == cudaSuccess ? "0 devices" : cudaGetErrorName(e),
                    e == cudaSuccess ? "no GPU visible: CUDA_VISIBLE_DEVICES?"
                                     : cudaGetErrorString(e),
                    __FILE__, __LINE__);
  }
  if (ordinal >= n)
    return prt_fail(st, 1, "no CUDA device %d: this machine has %d (0..%d): "
                    "prt_device_cuda_open; ask for cuda:0..cuda:%d", ordinal, n, n - 1, n - 1);
  prt_cuda_device *d = calloc(1, sizeof *d);
  if (!d) return prt_fail(st, 1, "out of memory opening cuda:%d; free memory", ordinal);
  d->base.vt = &cuda_vtable;
  snprintf(d->base.name, sizeof d->base.name, "cuda:%d", ordinal);
  d->base.host_visible = 0;
  d->ordinal = ordinal;
  e = cudaSetDevice(ordinal);
  if (e == cudaSuccess) e = cudaFree(NULL); /* creates the context now: errors surface here */
  if (e != cudaSuccess) {
    cuda_fail(&d->base, st, "cudaSetDevice + cudaFree(NULL)", __FILE__, __LINE__, e,
              "the GPU or driver is not usable; check nvidia-smi");
    free(d);
    return 1;
  }
  *out = &d->base;
  return 0;
}
