/* The target records (include/piper/target.h) and the kernel columns they carry, both from the
 * kernel list (include/piper/kernels.def). */
#include <string.h>

#include "piper/target.h"

/* <prefix><name> for every kernel of the list: the CPU target's functions (libpiper_rt). */
static const char *const cpuKernels[PRT_K_COUNT] = {
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = PIPER_CPU_KERNEL_PREFIX #name,
#include "piper/kernels.def"
};

/* <prefix><name> for every kernel whose gpu column is 1 (libpiper_rt_cuda). */
#define GPU_NAME_1(name) PIPER_CUDA_KERNEL_PREFIX #name
#define GPU_NAME_0(name) NULL
static const char *const gpuKernels[PRT_K_COUNT] = {
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = GPU_NAME_##gpu(name),
#include "piper/kernels.def"
};
#undef GPU_NAME_1
#undef GPU_NAME_0

#define CUDA_REBUILD                                                                       \
  " where the CUDA toolkit is found (/usr/local/cuda), or compile for the CPU (no --target)"

/* The first is the default. The link files are data: a runtime library renamed is one string
 * changed here. */
static const PiperTarget targets[] = {
    {.name = "cpu",
     .kernelPrefix = PIPER_CPU_KERNEL_PREFIX,
     .kernels = cpuKernels,
     .contextParallel = true, /* runtime/cp_attention.c and the _cp kernels are the CPU's */
     .bf16Sums = true,        /* the MPI and serial backends sum bf16 (comm/mpi.c) */
     .link = {{"serial", ""}, {"mpi", " with Open MPI installed"}}},
    {.name = "cuda",
     .kernelPrefix = PIPER_CUDA_KERNEL_PREFIX,
     .kernels = gpuKernels,
     .setup = "prt_cuda_setup",
     .codegen = &piperNvptxCodegen,
     .p2pInOrder = true, /* --comm nccl runs send/recv on NCCL, which has no tags */
     .bf16Io = true,     /* the device kernels load and store bf16 (lowering/gpu_kernels.c) */
     .gemmEpilogues = true, /* cuBLASLt's (runtime/kernels/cuda.c lt_gemm_epilogue) */
     .link = {{"cuda", CUDA_REBUILD}, {"cuda_mpi", CUDA_REBUILD}}},
};
enum { N_TARGETS = sizeof targets / sizeof targets[0] };

const PiperTarget *piperTargetNamed(MlirStringRef name) {
  for (size_t t = 0; t < N_TARGETS; ++t)
    if (strlen(targets[t].name) == name.length && !memcmp(targets[t].name, name.data, name.length))
      return &targets[t];
  return NULL;
}

const PiperTarget *piperTargetDefault(void) { return &targets[0]; }

const char *piperTargetNames(void) {
  static char names[256];
  if (!names[0])
    for (size_t t = 0; t < N_TARGETS; ++t) {
      strncat(names, t == 0 ? "" : t + 1 == N_TARGETS ? " or " : ", ",
              sizeof names - strlen(names) - 1);
      strncat(names, targets[t].name, sizeof names - strlen(names) - 1);
    }
  return names;
}
