/* The device seam: where the runtime's tensors live and how bytes move to and from them.
 * IREE-style: a backend is a small vtable behind `prt_device`; the runtime calls the
 * prt_device_* wrappers below and never a backend directly. Two backends:
 *   device/cpu.c   "cpu": host memory (aligned_alloc, memcpy); streams and events exist but
 *                  every operation completes before it returns, so they order nothing.
 *                  host_visible = 1: the runtime reads and writes its memory in place.
 *   device/cuda.c  "cuda" / "cuda:N": the CUDA runtime API (cudaMalloc, cudaMemcpyAsync,
 *                  streams, events), in libpiper_rt_cuda, built only where the CUDA toolkit is
 *                  found. host_visible = 0: the runtime stages through host buffers.
 *
 * Streams are ordered queues of device work (a plan's named stream maps to one, see
 * prt_ctx.streams); an event recorded on one stream and waited on by another makes the
 * cross-stream dependency explicit, as in comm's streams. A NULL stream is the device's
 * default stream, which every operation on it follows in program order.
 *
 * Errors: every function that can fail returns 0 or a non-zero code and fills a prt_status
 * with "<op> on <device>: <what went wrong>; <what to do>" (prt_fail: the first failure
 * wins). Misuse (a NULL pointer with a non-zero size) is an error too, not a crash.
 * Asynchronous copies may report a failure at a later call on the same stream (as CUDA
 * does); prt_device_synchronize reports anything still pending.
 */
#ifndef PIPER_PRT_DEVICE_H
#define PIPER_PRT_DEVICE_H

#include <stddef.h>

typedef struct prt_status prt_status;   /* prt_internal.h */
typedef struct prt_device prt_device;
typedef struct prt_dstream prt_dstream; /* a backend's stream (opaque) */
typedef struct prt_devent prt_devent;   /* a backend's event (opaque) */

/* Direction of a copy; names the memory each side lives in. */
typedef enum {
  PRT_COPY_H2D = 0, /* host -> device */
  PRT_COPY_D2H = 1, /* device -> host */
  PRT_COPY_D2D = 2, /* device -> device (same device) */
} prt_copy_kind;

/* What a backend implements. Every entry is required. Pointers marked "device" came from
 * this device's alloc; "host" pointers are ordinary process memory. */
typedef struct prt_device_vtable {
  /* Releases the device and everything the backend holds for it. */
  void (*destroy)(prt_device *d);
  /* *out = `bytes` of zeroed device memory aligned to PRT_ALIGN (at least one byte's worth:
   * bytes 0 gives a valid, freeable pointer). Synchronous. */
  int (*alloc)(prt_device *d, size_t bytes, void **out, prt_status *st);
  /* Frees what alloc returned, after the device finished with it; NULL is a no-op. */
  void (*free)(prt_device *d, void *p);
  /* Copies `bytes` from src to dst in direction `kind`, ordered on stream s. */
  int (*copy)(prt_device *d, void *dst, const void *src, size_t bytes, prt_copy_kind kind,
              prt_dstream *s, prt_status *st);
  /* Sets `bytes` bytes of device memory at p to (unsigned char)value, ordered on s. */
  int (*memset)(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                prt_status *st);
  int (*stream_create)(prt_device *d, prt_dstream **out, prt_status *st);
  void (*stream_destroy)(prt_device *d, prt_dstream *s); /* waits for its work; NULL ok */
  /* Blocks the host until everything issued on s so far has completed. */
  int (*stream_sync)(prt_device *d, prt_dstream *s, prt_status *st);
  int (*event_create)(prt_device *d, prt_devent **out, prt_status *st);
  void (*event_destroy)(prt_device *d, prt_devent *e); /* NULL ok */
  /* e completes when everything issued on s before this call has completed. */
  int (*event_record)(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st);
  /* Work issued on s after this call starts only after e's last record completed (an event
   * never recorded is complete). Does not block the host. */
  int (*stream_wait)(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st);
  /* Blocks the host until e's last record completed. */
  int (*event_sync)(prt_device *d, prt_devent *e, prt_status *st);
  /* *done = 1 when e's last record completed, 0 while it has not; does not block the host
   * (the NCCL engine's test, comm/nccl.c). */
  int (*event_query)(prt_device *d, prt_devent *e, int *done, prt_status *st);
  /* Blocks the host until every stream of the device is idle; reports pending errors. */
  int (*synchronize)(prt_device *d, prt_status *st);
  /* *out = `bytes` of host memory the device copies to and from without the host waiting
   * (CUDA: page-locked, cudaMallocHost; the CPU: ordinary memory). Synchronous. */
  int (*host_alloc)(prt_device *d, size_t bytes, void **out, prt_status *st);
  void (*host_free)(prt_device *d, void *p); /* what host_alloc returned; NULL ok */
} prt_device_vtable;

/* A device; backends embed it first in their own struct. */
struct prt_device {
  const prt_device_vtable *vt; /* the backend */
  char name[32];               /* "cpu", "cuda:0": in every message about it */
  int host_visible;            /* 1: the host may read and write device memory in place
                                  (no staging copies); 0: only through copy */
};

/* Opens a device by kind: "cpu", "cuda" (device 0) or "cuda:N". *out is owned: close it with
 * prt_device_close. Fails with a message (never a crash) for an unknown kind, for "cuda" in
 * a binary without libpiper_rt_cuda ("built without CUDA"), and for "cuda" on a machine with
 * no usable GPU ("no CUDA device: ..."). */
int prt_device_open(const char *kind, prt_device **out, prt_status *st);
void prt_device_close(prt_device *d); /* NULL ok; the shared CPU device is never freed */
/* The process's CPU device, shared (prt_device_close on it does nothing); cannot fail. */
prt_device *prt_device_cpu(void);
/* How many devices of `kind` ("cpu" or "cuda") this process can open: 1 for the CPU, the
 * GPUs the CUDA runtime sees (0 without libpiper_rt_cuda, a driver or a GPU). Cannot fail. */
int prt_device_count(const char *kind);
/* "cuda:N" is opened by prt_device_cuda_open(N, out, st), defined in libpiper_rt_cuda
 * (device/cuda.c) and weakly referenced by prt_device_open: a binary that wants CUDA links
 * -lpiper_rt_cuda -lcudart with -Wl,-u,prt_device_cuda_open; one that does not, has no CUDA
 * dependency at all. prt_device_count("cuda") asks its prt_device_cuda_count(), referenced
 * the same way. */

/* ---- what the runtime calls: the vtable, with the sizes checked ---- */

static inline int prt_device_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  return d->vt->alloc(d, bytes, out, st);
}
static inline void prt_device_free(prt_device *d, void *p) {
  if (p) d->vt->free(d, p);
}
/* Fails (naming the op and the device) when bytes > 0 and dst or src is NULL. */
int prt_device_copy(prt_device *d, void *dst, const void *src, size_t bytes,
                    prt_copy_kind kind, prt_dstream *s, prt_status *st);
int prt_device_memset(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                      prt_status *st);
static inline int prt_device_h2d(prt_device *d, void *dst, const void *src, size_t bytes,
                                 prt_dstream *s, prt_status *st) {
  return prt_device_copy(d, dst, src, bytes, PRT_COPY_H2D, s, st);
}
static inline int prt_device_d2h(prt_device *d, void *dst, const void *src, size_t bytes,
                                 prt_dstream *s, prt_status *st) {
  return prt_device_copy(d, dst, src, bytes, PRT_COPY_D2H, s, st);
}
static inline int prt_device_stream_create(prt_device *d, prt_dstream **out, prt_status *st) {
  return d->vt->stream_create(d, out, st);
}
static inline void prt_device_stream_destroy(prt_device *d, prt_dstream *s) {
  if (s) d->vt->stream_destroy(d, s);
}
static inline int prt_device_stream_sync(prt_device *d, prt_dstream *s, prt_status *st) {
  return d->vt->stream_sync(d, s, st);
}
int prt_device_event_create(prt_device *d, prt_devent **out, prt_status *st);
static inline void prt_device_event_destroy(prt_device *d, prt_devent *e) {
  if (e) d->vt->event_destroy(d, e);
}
/* These four fail (naming the op) on a NULL event. The GPU transfers' engine (comm/nccl.c)
 * orders its streams against the compute stream and reports completions with them. */
int prt_device_event_record(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st);
int prt_device_stream_wait(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st);
int prt_device_event_sync(prt_device *d, prt_devent *e, prt_status *st);
int prt_device_event_query(prt_device *d, prt_devent *e, int *done, prt_status *st);
static inline int prt_device_host_alloc(prt_device *d, size_t bytes, void **out,
                                        prt_status *st) {
  return d->vt->host_alloc(d, bytes, out, st);
}
static inline void prt_device_host_free(prt_device *d, void *p) { d->vt->host_free(d, p); }
static inline int prt_device_synchronize(prt_device *d, prt_status *st) {
  return d->vt->synchronize(d, st);
}

/* ---- host views: how host code (init, data, checkpoints) touches device memory ---- */

enum {
  PRT_VIEW_READ = 1,  /* the view starts with the device's bytes */
  PRT_VIEW_WRITE = 2, /* the view's bytes go back to the device at prt_host_view_end */
};
/* Host-addressable memory for `bytes` of device memory at `dev`. On a host_visible device
 * it is `dev` itself (no copy, no allocation: the CPU path costs nothing); otherwise a host
 * buffer, filled from the device if mode has PRT_VIEW_READ. A device error here happens in
 * the middle of a collective or a step and cannot be returned: it is prt_fatal (every rank
 * stops) with the device's message and `what`. */
void *prt_host_view_begin(prt_device *d, const void *dev, size_t bytes, int mode,
                          const char *what);
/* Ends a view: writes it back if mode has PRT_VIEW_WRITE (and the device is not host
 * visible), then frees the host buffer. mode 0 discards it (a failed read). */
void prt_host_view_end(prt_device *d, void *dev, void *host, size_t bytes, int mode,
                       const char *what);

#endif
