/* What the compiler knows of a target: one record per target, chosen once from --target
 * (piper-compile) or the module's piper.target attribute (the lowering), instead of a
 * `cuda` flag tested wherever the two differ (MLIR's #nvvm.target, IREE's HAL drivers). */
#ifndef PIPER_TARGET_H
#define PIPER_TARGET_H

#include <stdbool.h>
#include <stddef.h>

#include "mlir-c/Support.h"
#include "piper/kernels.h"

typedef struct {
  const char *name;            /* --target and piper.target: "cpu", "cuda" */
  const char *const *kernels;  /* the runtime function of each kernel of the kernel list,
                                  indexed by prt_kernel_id; NULL where this target has none */
  const char *setup;           /* what piper_setup calls first (opens the device), or NULL */
  bool deviceCode;             /* the plan's device kernels are generated (PTX) and embedded */
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

#endif
