/* The bf16 kernel policy: which kernel an op calls under --precision bf16, and which of its
 * operands that kernel reads as bf16. It reads only the op-facts table and the kernel list
 * (include/piper/kernels.def), so the memory plan, the op rules and the pass all stand on it. */
#include "lowering/lowering.h"

/* Each kernel's parameters as letters, by what the bf16 lowering needs: h a bf16
 * operand (BF16_IN), f a tensor in its value's own precision on a bf16Io target (FP_IN,
 * FP_OUT), t any other tensor, c the context, v a value. A kernel takes its results' pointers
 * first, then its operands' (the list's convention), so an op's operand i is tensor parameter
 * nResults + i, counting t, f and h. */
#define F32_OUT(p) 't'
#define F32_IN(p) 't'
#define I32_OUT(p) 't'
#define I32_IN(p) 't'
#define BF16_OUT(p) 't'
#define BF16_IN(p) 'h'
#define FP_OUT(p) 'f'
#define FP_IN(p) 'f'
#define CTX_P(c) 'c'
#define I64_V(v) 'v'
#define F32_V(v) 'v'
#define I32_V(v) 'v'
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = {PRT_KERNEL_UNPAREN params},
static const char kernelTensors[PRT_K_COUNT][LW_MAX_KERNEL_PARAMS] = {
#include "piper/kernels.def"
};

/* The letter of kernel k's tensor parameter `at` (t, f or h), or 0 past its tensors. */
static char tensorParam(prt_kernel_id k, intptr_t at) {
  if (k <= PRT_K_NONE || k >= PRT_K_COUNT) return 0;
  intptr_t n = 0;
  const char *params = kernelTensors[k];
  for (const char *s = params; s < params + LW_MAX_KERNEL_PARAMS && *s; ++s) {
    if (*s != 't' && *s != 'f' && *s != 'h') continue;
    if (n++ == at) return *s;
  }
  return 0;
}

/* Whether kernel k's tensor parameter `at` is a bf16 operand. */
static bool tensorParamIsBf16(prt_kernel_id k, intptr_t at) { return tensorParam(k, at) == 'h'; }

prt_kernel_id lwPolicyKernel(const Lowering *L, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return PRT_K_NONE;
  if (!L->bf16 || !f->bf16Kernel) return f->kernel;
  intptr_t nOut = mlirOperationGetNumResults(op);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (tensorParamIsBf16(f->bf16Kernel, nOut + i) &&
        !piperTensorIsBf16(lwInType(op, i)) && !piperFactsBf16RoundOperand(f, i))
      return f->kernel; /* an fp32 operand the policy keeps unrounded (the router's gradient) */
  return f->bf16Kernel;
}

bool lwOperandIsBf16Param(const Lowering *L, MlirOperation op, intptr_t i) {
  return tensorParamIsBf16(lwPolicyKernel(L, op), mlirOperationGetNumResults(op) + i);
}


bool lwValueInOwnPrecision(const Lowering *L, MlirOperation op, bool result, intptr_t i) {
  return L->bf16Io &&
         tensorParam(lwPolicyKernel(L, op), result ? i : mlirOperationGetNumResults(op) + i) ==
             'f';
}
