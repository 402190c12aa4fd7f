/* device/cuda_common.h's functions. */
#include "device/cuda_common.h"

int prt_cuda_fail(prt_status *st, cudaError_t e, const char *where, const char *call,
                  const char *file, int line, const char *hint) {
  return prt_fail(st, 1, "CUDA error in %s (%s): %s: %s at %s:%d; %s", where, call,
                  cudaGetErrorName(e), cudaGetErrorString(e), file, line, hint);
}

cudaStream_t prt_cuda_compute_stream(prt_ctx *ctx) {
  static prt_dstream *own; /* one plan a process */
  if (!ctx) return (cudaStream_t)0;
  if (ctx->streams && ctx->nstreams > 0) return (cudaStream_t)ctx->streams[0];
  if (!own) {
    prt_status st = {0};
    if (prt_device_stream_create(ctx->backend->device, &own, &st))
      prt_fatal("%s (the compute stream of a plan without streams)", st.msg);
  }
  return (cudaStream_t)own;
}
