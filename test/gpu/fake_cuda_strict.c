/* piper-fakecuda-strict-test SCENARIO: the fake CUDA runtime's strictness (test/gpu/fake_cuda.c)
 * on the CUDA runtime API alone, each detector with its bug put back
 * (test/gpu/fake-cuda-strict.test). A scenario prints what the host sees, one line each; a
 * scenario with a bug is stopped by the fake, naming it (exit 2), or, with that detector off
 * (FAKE_CUDA_CHECK_PINNED=0, FAKE_CUDA_CHECK_RACES=0), prints the wrong data a GPU may show.
 *   lazy                a copy from page-locked memory has not run before the host waits for
 *                       it (peeking at the fake's device memory, which is the host's: run
 *                       with FAKE_CUDA_PROTECT=0), and has after
 *   host-deref          BUG: the host reads device memory directly (a GPU faults)
 *   pinned-late         the copy's source rewritten after the host waited: the first bytes
 *   pinned-early        BUG: rewritten before: the copy, run later, reads the new bytes
 *   graph-pinned        a captured copy replayed twice, the source rewritten between the waits
 *   graph-pinned-early  BUG: rewritten after the graph's launch, before the wait
 *   fresh               cudaMalloc's memory read back: NaN patterns, not zeros
 *   wait                stream 2 copies what stream 1 wrote, after an event wait
 *   no-wait             BUG: the same without the event wait: stale data
 *   unordered-writes    BUG: two streams write one buffer, unordered: which wins depends on
 *                       the interleaving (FAKE_CUDA_SEED)
 *   legacy-order        the legacy stream's implicit order: a copy on it follows a blocking
 *                       stream's memset without an event
 *   nonblocking         BUG: the same with a non-blocking stream, which the legacy stream
 *                       does not follow
 *   capture-legacy      the legacy stream while a blocking stream captures: refused, the
 *                       capture invalidated
 *   capture-wait        a host wait while capturing: refused, the capture invalidated
 *   kernel-write        BUG: a generated kernel (piper_add, its out stored through
 *                       @piper_st) writes x on one stream, another copies x unordered: the
 *                       kernel's pointer argument counts as written, the race named */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

static void check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return;
  fprintf(stderr, "%s: %s\n", what, cudaGetErrorName(e));
  exit(3);
}
#define CHECK(call) check((call), #call)

enum { N = 4096 }; /* floats in each buffer */

/* What a scenario allocated, freed at its end (a sanitized build checks for leaks). */
enum { MAX_HELD = 16 };
static struct {
  void *p;
  int pinned;
} held[MAX_HELD];
static int nheld;
static void *hold(void *p, int pinned) {
  if (nheld == MAX_HELD) {
    fprintf(stderr, "more than MAX_HELD buffers\n");
    exit(3);
  }
  held[nheld].p = p;
  held[nheld++].pinned = pinned;
  return p;
}
static void release_all(void) {
  for (int i = 0; i < nheld; i++)
    CHECK(held[i].pinned ? cudaFreeHost(held[i].p) : cudaFree(held[i].p));
  nheld = 0;
}

static float *dev_floats(void) {
  void *p = NULL;
  CHECK(cudaMalloc(&p, N * sizeof(float)));
  return hold(p, 0);
}
static float *pinned_floats(void) {
  void *p = NULL;
  CHECK(cudaMallocHost(&p, N * sizeof(float)));
  return hold(p, 1);
}
static void fill(float *p, float v) {
  for (int i = 0; i < N; i++) p[i] = v;
}
/* The device's first float, read back through a synchronous copy on stream s. */
static float read_back(const float *dev, cudaStream_t s) {
  float host[N];
  CHECK(cudaMemcpyAsync(host, dev, sizeof host, cudaMemcpyDeviceToHost, s));
  return host[0];
}

/* s2 copies x into y after (with_wait) an event recorded after s1's memset of x. */
static void two_streams(int with_wait) {
  cudaStream_t s1, s2;
  cudaEvent_t e;
  CHECK(cudaStreamCreate(&s1));
  CHECK(cudaStreamCreate(&s2));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  unsigned char *x = (unsigned char *)dev_floats(), *y = (unsigned char *)dev_floats();
  CHECK(cudaMemsetAsync(x, 3, N * sizeof(float), s1));
  CHECK(cudaEventRecord(e, s1));
  if (with_wait) CHECK(cudaStreamWaitEvent(s2, e, 0));
  CHECK(cudaMemcpyAsync(y, x, N * sizeof(float), cudaMemcpyDeviceToDevice, s2));
  unsigned char host[16];
  CHECK(cudaMemcpyAsync(host, y, sizeof host, cudaMemcpyDeviceToHost, s2));
  printf("y[0] = %d\n", host[0]);
  CHECK(cudaEventDestroy(e));
  CHECK(cudaStreamDestroy(s1));
  CHECK(cudaStreamDestroy(s2));
}

/* A blocking or non-blocking stream memsets x; the legacy stream copies it to the host. */
static void legacy_after(unsigned int flags) {
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, flags));
  unsigned char *x = (unsigned char *)dev_floats();
  CHECK(cudaMemsetAsync(x, 5, N * sizeof(float), s));
  unsigned char host[16];
  CHECK(cudaMemcpyAsync(host, x, sizeof host, cudaMemcpyDeviceToHost, NULL));
  printf("x[0] = %d\n", host[0]);
  CHECK(cudaStreamDestroy(s));
}

/* Stream s runs gpu_kernels.c's add (x = a + b, fp32: bf16 mask 0) into x; stream s2 copies
 * x without waiting for it (the bug). */
static void kernel_then_copy(cudaStream_t s) {
  cudaLibrary_t lib;
  CHECK(cudaLibraryLoadData(&lib, "", NULL, NULL, 0, NULL, NULL, 0)); /* the host JIT */
  cudaKernel_t add;
  CHECK(cudaLibraryGetKernel(&add, lib, "piper_add"));
  cudaStream_t s2;
  CHECK(cudaStreamCreate(&s2));
  float *x = dev_floats(), *a = dev_floats(), *b = dev_floats(), *y = dev_floats();
  CHECK(cudaMemsetAsync(a, 0, N * sizeof(float), s));
  CHECK(cudaMemsetAsync(b, 0, N * sizeof(float), s));
  int64_t n = N;
  int32_t io = 0;
  void *args[] = {&x, &a, &b, &n, &io};
  dim3 grid = {N / 256, 1, 1}, block = {256, 1, 1};
  CHECK(cudaLaunchKernel((const void *)add, grid, block, args, 0, s));
  CHECK(cudaMemcpyAsync(y, x, N * sizeof(float), cudaMemcpyDeviceToDevice, s2));
  CHECK(cudaDeviceSynchronize());
  printf("the copy was not stopped\n");
  CHECK(cudaStreamDestroy(s2));
}

int main(int argc, char **argv) {
  const char *what = argc == 2 ? argv[1] : "";
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  if (!strcmp(what, "lazy")) {
    float *src = pinned_floats(), *dev = dev_floats();
    fill(src, 7);
    CHECK(cudaMemcpyAsync(dev, src, N * sizeof(float), cudaMemcpyHostToDevice, s));
    printf("before the wait: %g\n", dev[0]); /* the fake's device memory is the host's */
    CHECK(cudaStreamSynchronize(s));
    printf("after the wait: %g\n", dev[0]);
  } else if (!strcmp(what, "host-deref")) {
    float *src = pinned_floats(), *dev = dev_floats();
    fill(src, 7);
    CHECK(cudaMemcpyAsync(dev, src, N * sizeof(float), cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamSynchronize(s));
    printf("the device holds %g\n", dev[3]); /* the bug */
  } else if (!strcmp(what, "pinned-late") || !strcmp(what, "pinned-early")) {
    int early = !strcmp(what, "pinned-early");
    float *src = pinned_floats(), *dev = dev_floats();
    fill(src, 1);
    CHECK(cudaMemcpyAsync(dev, src, N * sizeof(float), cudaMemcpyHostToDevice, s));
    if (early) fill(src, 2); /* the bug: the copy may not have run */
    CHECK(cudaStreamSynchronize(s));
    if (!early) fill(src, 2);
    printf("the device holds %g\n", read_back(dev, s));
  } else if (!strcmp(what, "graph-pinned") || !strcmp(what, "graph-pinned-early")) {
    int early = !strcmp(what, "graph-pinned-early");
    float *src = pinned_floats(), *dev = dev_floats();
    cudaGraph_t g;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemcpyAsync(dev, src, N * sizeof(float), cudaMemcpyHostToDevice, s));
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    for (int replay = 1; replay <= 2; replay++) {
      fill(src, (float)replay);
      CHECK(cudaGraphLaunch(exec, s));
      if (early) fill(src, 10.0f * replay); /* the bug: the replayed copy may not have run */
      CHECK(cudaStreamSynchronize(s));
      printf("replay %d: the device holds %g\n", replay, read_back(dev, s));
    }
    CHECK(cudaGraphExecDestroy(exec));
  } else if (!strcmp(what, "fresh")) {
    float *dev = dev_floats();
    float v = read_back(dev, s);
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    printf("fresh device memory: %g (0x%08x)\n", v, (unsigned)bits);
  } else if (!strcmp(what, "wait") || !strcmp(what, "no-wait")) {
    two_streams(!strcmp(what, "wait"));
  } else if (!strcmp(what, "unordered-writes")) {
    cudaStream_t s2;
    CHECK(cudaStreamCreate(&s2));
    unsigned char *x = (unsigned char *)dev_floats();
    CHECK(cudaMemsetAsync(x, 1, N * sizeof(float), s));
    CHECK(cudaMemsetAsync(x, 2, N * sizeof(float), s2));
    CHECK(cudaDeviceSynchronize());
    unsigned char host[16];
    CHECK(cudaMemcpyAsync(host, x, sizeof host, cudaMemcpyDeviceToHost, s));
    printf("x[0] = %d\n", host[0]);
    CHECK(cudaStreamDestroy(s2));
  } else if (!strcmp(what, "legacy-order")) {
    legacy_after(cudaStreamDefault);
  } else if (!strcmp(what, "nonblocking")) {
    legacy_after(cudaStreamNonBlocking);
  } else if (!strcmp(what, "capture-legacy") || !strcmp(what, "capture-wait")) {
    float *dev = dev_floats();
    cudaStream_t other;
    CHECK(cudaStreamCreate(&other));
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaMemsetAsync(dev, 0, N * sizeof(float), s));
    cudaError_t e = !strcmp(what, "capture-legacy")
                        ? cudaMemsetAsync(dev, 0, N * sizeof(float), NULL)
                        : cudaStreamSynchronize(other);
    printf("while capturing: %s\n", cudaGetErrorName(e));
    e = cudaStreamEndCapture(s, &g);
    printf("the capture ends: %s, graph %s\n", cudaGetErrorName(e), g ? "given" : "none");
    CHECK(cudaStreamDestroy(other));
  } else if (!strcmp(what, "kernel-write")) {
    kernel_then_copy(s);
  } else {
    fprintf(stderr, "usage: piper-fakecuda-strict-test SCENARIO (see fake_cuda_strict.c)\n");
    return 2;
  }
  CHECK(cudaDeviceSynchronize());
  release_all();
  CHECK(cudaStreamDestroy(s));
  return 0;
}
