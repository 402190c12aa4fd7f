/* What the fake CUDA runtime (fake_cuda.c) offers the other fakes: its kernels' host launchers
 * (fake_attention.cc, fake_norms.cc, fake_flash.cc) and the fake NCCL (fake_nccl.c) put their
 * operations on its streams through fake_cuda_enqueue, so they run in their stream's order,
 * lazily, with the detectors on (fake_cuda.c's header says how). */
#ifndef PIPER_TEST_GPU_FAKE_CUDA_H
#define PIPER_TEST_GPU_FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How an operation touches memory, for the race detector: a range it reads or writes (a copy,
 * a memset, a GEMM's operands, a collective's buffers), or with bytes 0 a kernel's pointer
 * argument, the address it reads or writes from (its extent unknown: the byte at p). */
enum { FAKE_READ = 1, FAKE_WRITE = 2 };
enum { FAKE_MAX_ACCESSES = 32 };
typedef struct {
  const void *p;
  size_t bytes; /* 0: a pointer argument */
  int mode;
} fake_access;

/* One device operation as a launcher describes it. */
typedef struct {
  const char *name;         /* for messages: the kernel or the call (a static string) */
  void (*run)(void *arg);   /* does it when its stream reaches it (starts it, with poll) */
  int (*poll)(void *arg);   /* NULL: complete when run returns; else 1 once it completed
                               (a transfer waiting for its peer) */
  int kernels;              /* kernels it stands for (the counters; 0: a copy, a memset) */
  int64_t h2d, d2h;         /* bytes it copies to and from the host (the counters) */
  const void *pinned_src;   /* page-locked host memory it reads when it runs (NULL: none):
                               the host must not rewrite it before waiting for it */
  size_t pinned_bytes;
  int naccess;
  fake_access access[FAKE_MAX_ACCESSES];
} fake_op_desc;

/* A launcher's kernel operation (name a static string), with no accesses yet. */
static inline fake_op_desc fake_kernel_op(const char *name, void (*run)(void *), int kernels) {
  fake_op_desc d;
  memset(&d, 0, sizeof d);
  d.name = name;
  d.run = run;
  d.kernels = kernels;
  return d;
}
/* Notes pointer argument p (NULL: none) as an address the operation reads (FAKE_READ) or
 * writes (FAKE_WRITE) from. */
static inline void fake_op_uses(fake_op_desc *d, const void *p, int mode) {
  if (!p || d->naccess >= FAKE_MAX_ACCESSES) return;
  d->access[d->naccess].p = p;
  d->access[d->naccess].bytes = 0;
  d->access[d->naccess++].mode = mode;
}

/* Puts the operation (its description and `size` bytes of arguments, copied) on stream s, or
 * into the graph s is capturing. cudaErrorStreamCaptureImplicit where a GPU refuses it (the
 * legacy stream while a blocking stream captures). */
cudaError_t fake_cuda_enqueue(cudaStream_t s, const fake_op_desc *d, const void *arg,
                              size_t size);

/* For the counters (FAKE_CUDA_COUNTERS): the device bytes the running operation reads and
 * writes, as an nvcc kernel's host twin reports them (its arguments' extents). */
void fake_cuda_bytes(int64_t read, int64_t written);

/* One step of the device's own progress: runs one operation that is ready, or polls those
 * in flight. For a host that blocks on something else (the fake NCCL's MPI waits): a GPU
 * goes on meanwhile. Returns 0 when nothing could move. */
int fake_cuda_progress(void);

/* Kernels issued so far on every stream (launches, cuBLAS calls, attention launches, those
 * of graph replays). */
extern int fake_cuda_launches;

/* For the fake NCCL's ordering check: 0 when stream s is ordered after the latest kernel
 * issued on every other stream; else 1, with *stream_no that stream's number and *kernels
 * its kernels issued. */
int fake_cuda_unordered_kernels(cudaStream_t s, int *stream_no, int64_t *kernels);

/* The stream an event was last recorded on (NULL: the legacy stream, or never recorded) and
 * the kernels issued when it was. */
cudaStream_t fake_cuda_event_stream(cudaEvent_t e);
long fake_cuda_event_launches(cudaEvent_t e);

/* Hooks the fake NCCL defines (weak here): a stream made, an event recorded, a stream told to
 * wait (return 1 to skip that wait: fake_nccl.c's negative controls). */
void fake_cuda_on_stream_create(cudaStream_t s, unsigned int flags) __attribute__((weak));
void fake_cuda_on_event_record(cudaEvent_t e, cudaStream_t s) __attribute__((weak));
int fake_cuda_on_stream_wait(cudaStream_t s, cudaEvent_t e) __attribute__((weak));

#ifdef __cplusplus
}
#endif

#endif
