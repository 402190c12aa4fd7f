/* What the runtime's CUDA code shares (device/cuda.c, kernels/cuda.c, comm/nccl.c): one way
 * to report a failed CUDA call, and one compute stream. Compiled into libpiper_rt_cuda and,
 * for the tests, the fake CUDA runtime's library (device/cuda_common.c). */
#ifndef PIPER_PRT_DEVICE_CUDA_COMMON_H
#define PIPER_PRT_DEVICE_CUDA_COMMON_H

#include <cuda_runtime_api.h>

#include "prt_internal.h"

/* Fills st for CUDA error e of `call` made by `where` (an op, a device, an engine) at
 * file:line, with what to do (`hint`), and returns 1: "CUDA error in WHERE (CALL):
 * cudaErrorName: its description at FILE:LINE; HINT". The callers decide what follows (the
 * device layer returns the status, the kernels stop or, while capturing a graph, keep it for
 * later; the NCCL engine stops). */
int prt_cuda_fail(prt_status *st, cudaError_t e, const char *where, const char *call,
                  const char *file, int line, const char *hint);

/* The hint for an error a kernel or an earlier asynchronous call may have caused. */
#define PRT_CUDA_HINT_SYNC                                                                 \
  "rerun with PIPER_CUDA_SYNC=1 to stop at the failing op; check nvidia-smi and the driver " \
  "version (CUDA 13 needs driver >= 580)"

/* `call` (a CUDA runtime call made by `where`) and, on failure, prt_fatal with its message. */
#define PRT_CUDA_OR_DIE(where, call, hint)                                                 \
  do {                                                                                     \
    cudaError_t e_ = (call);                                                               \
    if (e_ != cudaSuccess) {                                                               \
      prt_status st_ = {0};                                                                \
      prt_cuda_fail(&st_, e_, (where), #call, __FILE__, __LINE__, (hint));                 \
      prt_fatal("%s", st_.msg);                                                            \
    }                                                                                      \
  } while (0)

/* The stream the plan's kernels run on: its stream 0, or for a plan that declared no stream
 * (one device) a stream of its own, made on first use through the context's device
 * (device/cuda.c: cudaStreamCreate, so the staged copies and the loss read on the legacy
 * stream still order against it). Never the legacy stream itself: cudaStreamBeginCapture
 * refuses it (cudaErrorStreamCaptureUnsupported), as the first GPU run showed, and no step
 * was ever captured. The kernels and the NCCL engine both order by it. */
cudaStream_t prt_cuda_compute_stream(prt_ctx *ctx);

#endif
