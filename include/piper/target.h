/* What the compiler knows of a target: one record per target, chosen once from --target
 * (piper-compile) or the module's piper.target attribute (the lowering), instead of a
 * `cuda` flag tested wherever the two differ (MLIR's #nvvm.target, IREE's HAL drivers). A new
 * target is a record here (lowering/target.c), its runtime functions (libpiper_rt_<name>) and,
 * when its kernels are generated, a code generator (PiperCodegen); nothing else asks which
 * target it has. */
#ifndef PIPER_TARGET_H
#define PIPER_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "piper/kernels.h"

/* The runtime function prefixes of the targets' kernels: kernel `name` of the kernel list is
 * <prefix><name> (prt_linear_fwd, prt_cuda_linear_fwd). Macros, so that the records' kernel
 * tables are built from them at compile time. */
#define PIPER_CPU_KERNEL_PREFIX "prt_"
#define PIPER_CUDA_KERNEL_PREFIX "prt_cuda_"

/* How a target's device kernels are generated and carried in the binary (the GPU's: the gpu
 * dialect -> NVVM -> NVPTX -> PTX embedded in the host object, lowering/emit_ptx.c). */
typedef struct {
  const char *triple;       /* the device code's LLVM target triple: "nvptx64-nvidia-cuda" */
  const char *toLlvm;       /* the upstream MLIR pipeline that lowers the kernels' gpu.module
                               to the LLVM dialect (convert-gpu-to-nvvm, ...) */
  const char *pipeline;     /* the LLVM pass pipeline run on the device IR: "default<O3>" */
  const char *defaultArch;  /* the chip when --gpu-arch is not given: "sm_80" */
  /* True for a chip name the code generator knows (--gpu-arch). */
  bool (*archValid)(const char *arch);
  /* The device kernels (MLIR text, owned) of the functions a lowered host module calls;
   * NULL after a message. */
  char *(*deviceModule)(MlirOperation hostModule);
  /* That text -> device assembly for `arch` (owned; PTX), the NVVM-level module printed to
   * dumpLowered when not NULL; NULL after a message on stderr. */
  char *(*assemble)(const char *mlirText, const char *arch, FILE *dumpLowered);
  /* Adds the assembly to the host module, for the target's setup to load at start-up. */
  void (*embed)(MlirOperation hostModule, const char *assembly);
} PiperCodegen;

typedef struct {
  const char *name;            /* --target and piper.target: "cpu", "cuda" */
  const char *kernelPrefix;    /* its runtime functions' prefix: PIPER_*_KERNEL_PREFIX */
  const char *const *kernels;  /* the runtime function of each kernel of the kernel list,
                                  indexed by prt_kernel_id (kernelPrefix + the list's name);
                                  NULL where this target has none */
  const char *setup;           /* what piper_setup calls first (opens the device), or NULL */
  const PiperCodegen *codegen; /* how its device kernels are generated (PTX) and embedded;
                                  NULL: the plan is host code calling the runtime alone */
  /* The target's facts, which the lowering and piper-compile ask instead of its name: */
  bool contextParallel;        /* it has context parallelism's kernels: ring attention
                                  (runtime/cp_attention.c) and the per-chunk _cp variants */
  bool bf16Sums;               /* its comm backends sum bf16 values (--grad-reduce bf16) */
  bool bf16Io;                 /* its kernels read and write bf16 tensors themselves where the
                                  kernel list says FP_IN/FP_OUT, and each takes the call's bf16
                                  mask after the list's arguments; otherwise the lowering
                                  converts around every call (widen, fp32 kernel, narrow) */
  bool gemmEpilogues;          /* it fuses work into its GEMMs' epilogues: a linear_grad_weight
                                  and the bias_grad of the same dout lower to one
                                  linear_bwd_weight_bias call (lwPairEpilogues) */
  bool p2pInOrder;             /* its send/recv may run on an engine without tags (NCCL), so
                                  every plan's receives are put in each sender's order
                                  (--piper-order-p2p) */
  struct {
    const char *file;          /* the runtime's link flags: <lib dir>/piper_rt_<file>.link,
                                  written by the build (runtime/CMakeLists.txt) */
    const char *rebuild;       /* how to rebuild piper when that file is missing */
  } link[2];                   /* [0] a plan of one device, [1] of several */
} PiperTarget;

/* The record named `name` ("cpu", "cuda"), or NULL for a target piper does not know. */
const PiperTarget *piperTargetNamed(MlirStringRef name);
/* The CPU target: what a module without piper.target is compiled for. */
const PiperTarget *piperTargetDefault(void);
/* The targets' names for a message, "cpu or cuda". */
const char *piperTargetNames(void);

/* The NVPTX code generator (lowering/emit_ptx.c): the CUDA target's. */
extern const PiperCodegen piperNvptxCodegen;

#endif
