/* Ids of the kernel list (include/piper/kernels.def), shared by the compiler (the op table's
 * kernel column, the lowering's calls, the GPU kernels' module) and the runtime (the device
 * kernels cuda.c launches). Plain C, no MLIR: the runtime includes it. */
#ifndef PIPER_KERNELS_H
#define PIPER_KERNELS_H

/* A runtime kernel: PRT_K_<name> for PRT_KERNEL(name, ...); PRT_K_NONE (0) is "no kernel",
 * what an op-facts row that computes nothing names. */
typedef enum {
  PRT_K_NONE,
#define PRT_KERNEL(name, gpu, params, launches) PRT_K_##name,
#include "piper/kernels.def"
  PRT_K_COUNT
} prt_kernel_id;

/* A device kernel of the GPU target: PRT_DK_<name> for PRT_DEVICE_KERNEL(name); PRT_DK_NONE
 * (0) ends a runtime kernel's launch list. */
typedef enum {
  PRT_DK_NONE,
#define PRT_DEVICE_KERNEL(name) PRT_DK_##name,
#include "piper/kernels.def"
  PRT_DK_COUNT
} prt_device_kernel_id;

/* The most device kernels one runtime kernel launches (the `launches` column). */
enum { PRT_MAX_LAUNCHES = 4 };

/* Bit k of a GPU kernel call's bf16 mask (the argument after the list's, include/piper/
 * kernels.def): 1 where its k-th tensor argument holds bf16, 0 where fp32. */
#define PRT_BF16_BIT(mask, k) (((mask) >> (k)) & 1)

/* (a, b, c) -> a, b, c: opens a parenthesised column of the list. */
#define PRT_KERNEL_UNPAREN(...) __VA_ARGS__

#endif
