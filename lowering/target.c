/* The target records (include/piper/target.h) and the kernel columns they carry, both from the
 * kernel list (include/piper/kernels.def). */
#include <string.h>

#include "piper/target.h"

/* prt_<name> for every kernel of the list: the CPU target's functions (libpiper_rt). */
static const char *const cpuKernels[PRT_K_COUNT] = {
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = "prt_" #name,
#include "piper/kernels.def"
};

/* prt_cuda_<name> for every kernel whose gpu column is 1 (libpiper_rt_cuda). */
#define GPU_NAME_1(name) "prt_cuda_" #name
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
     .kernels = cpuKernels,
     .link = {{"serial", ""}, {"mpi", " with Open MPI installed"}}},
    {.name = "cuda",
     .kernels = gpuKernels,
     .setup = "prt_cuda_setup",
     .deviceCode = true,
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
