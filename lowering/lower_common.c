/* piper_step's helpers shared by the op rules (lower_compute.c, lower_comm.c) and the pass
 * (lower_to_llvm.c): the pointer of a tensor value, constants, and calls of runtime functions,
 * a kernel's checked against the kernel list (include/piper/kernels.def). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowering/lowering.h"
#include "mlir-c/BuiltinTypes.h"

/* Each kernel's parameter types as letters: p pointer (tensor or context), l i64, f f32, i i32;
 * NUL-terminated. */
#define F32_OUT(p) 'p'
#define F32_IN(p) 'p'
#define I32_OUT(p) 'p'
#define I32_IN(p) 'p'
#define BF16_OUT(p) 'p'
#define BF16_IN(p) 'p'
#define FP_OUT(p) 'p'
#define FP_IN(p) 'p'
#define CTX_P(c) 'p'
#define I64_V(v) 'l'
#define F32_V(v) 'f'
#define I32_V(v) 'i'
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = {PRT_KERNEL_UNPAREN params},
static const char kernelParams[PRT_K_COUNT][LW_MAX_KERNEL_PARAMS] = {
#include "piper/kernels.def"
};
/* Each kernel's parameters by what its bf16 mask needs: F a tensor in its value's own
 * precision on a bf16Io target (FP_IN, FP_OUT), B bf16 always (BF16_IN, BF16_OUT), T another
 * tensor, c the context, v a value. */
#define F32_OUT(p) 'T'
#define F32_IN(p) 'T'
#define I32_OUT(p) 'T'
#define I32_IN(p) 'T'
#define BF16_OUT(p) 'B'
#define BF16_IN(p) 'B'
#define FP_OUT(p) 'F'
#define FP_IN(p) 'F'
#define CTX_P(c) 'c'
#define I64_V(v) 'v'
#define F32_V(v) 'v'
#define I32_V(v) 'v'
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = {PRT_KERNEL_UNPAREN params},
static const char kernelKinds[PRT_K_COUNT][LW_MAX_KERNEL_PARAMS] = {
#include "piper/kernels.def"
};
/* and a compile-time refusal of a kernel whose parameters would not fit with their NUL */
#define F32_OUT(p) 'p'
#define F32_IN(p) 'p'
#define I32_OUT(p) 'p'
#define I32_IN(p) 'p'
#define BF16_OUT(p) 'p'
#define BF16_IN(p) 'p'
#define FP_OUT(p) 'p'
#define FP_IN(p) 'p'
#define CTX_P(c) 'p'
#define I64_V(v) 'l'
#define F32_V(v) 'f'
#define I32_V(v) 'i'
#define PRT_KERNEL(name, gpu, params, launches)                                            \
  _Static_assert(sizeof((char[]){PRT_KERNEL_UNPAREN params}) < LW_MAX_KERNEL_PARAMS,       \
                 "prt_" #name " has more parameters than lowering.h's LW_MAX_KERNEL_PARAMS");
#include "piper/kernels.def"

/* The base pointer of `buf`, materialised on first use in piper_step. */
static MlirValue bufferPtr(Lowering *L, Buffer *buf) {
  if (!buf->ptr.ptr) {
    if (buf->tensorId >= 0) {
      MlirValue args[2] = {L->ctxArg, lbConstI64(&L->lb, buf->tensorId)};
      buf->ptr = lbCall(&L->lb, "prt_tensor", L->lb.ptr, 2, args);
    } else {
      buf->ptr = lbOffset(&L->lb, L->arena, buf->offset);
    }
  }
  return buf->ptr;
}

MlirValue lwPtrOf(Lowering *L, MlirValue v) {
  intptr_t offset = 0;
  bool view = piperPtrMapGet(&L->viewOffset, v.ptr, &offset); /* a view into a shared buffer */
  MlirValue base = bufferPtr(L, lwBufferOf(L, v));
  return view ? lbOffset(&L->lb, base, offset) : base;
}

void lwMarkBf16(Lowering *L, MlirValue p) { piperPtrMapPut(&L->bf16Ptr, p.ptr, 1); }

static bool markedBf16(const Lowering *L, MlirValue p) {
  intptr_t v;
  return p.ptr && piperPtrMapGet(&L->bf16Ptr, p.ptr, &v);
}

/* The pointer of value v, marked when it points at bf16 data. A mark is on an SSA value, so
 * a bf16 value at the arena's start gets a pointer of its own rather than the arena's, which
 * the fp32 values placed there share. */
static MlirValue ownPtr(Lowering *L, MlirValue v) {
  MlirValue p = lwPtrOf(L, v);
  if (!piperTensorIsBf16(mlirValueGetType(v))) return p;
  if (mlirValueEqual(p, L->arena)) p = lbOffsetV(&L->lb, p, lbConstI64(&L->lb, 0));
  lwMarkBf16(L, p);
  return p;
}

MlirValue lwBf16CopyPtr(Lowering *L, MlirValue v) {
  Bf16Copy *c = lwBf16CopyOf(L, v);
  MlirValue p;
  if (!c) {
    p = lbNullPtr(&L->lb);
  } else {
    if (!c->ptr.ptr) {
      MlirValue args[2] = {L->ctxArg, lbConstI64(&L->lb, c->tensorId)};
      c->ptr = lbCall(&L->lb, "prt_tensor", L->lb.ptr, 2, args);
    }
    p = c->ptr;
  }
  lwMarkBf16(L, p);
  return p;
}

/* An operand or result the current op converts reads or writes its scratch: fp32, but for a
 * weight narrowed for a BF16_IN parameter (bf16). A weight with a bf16 copy gives a BF16_IN
 * parameter the copy. */
MlirValue lwIn(Lowering *L, MlirOperation op, intptr_t i) {
  if (mlirOperationEqual(L->conv.op, op) && L->conv.in[i].ptr) return L->conv.in[i];
  MlirValue v = mlirOperationGetOperand(op, i);
  if (lwOperandIsBf16Param(L, op, i) && lwBf16CopyOf(L, v)) return lwBf16CopyPtr(L, v);
  return ownPtr(L, v);
}
MlirValue lwOut(Lowering *L, MlirOperation op, intptr_t i) {
  if (mlirOperationEqual(L->conv.op, op) && L->conv.out[i].ptr) return L->conv.out[i];
  return ownPtr(L, mlirOperationGetResult(op, i));
}
MlirValue lwI64(Lowering *L, int64_t v) { return lbConstI64(&L->lb, v); }

MlirValue lwOffsetElems(Lowering *L, MlirValue p, int64_t elems) {
  if (!elems) return p;
  bool bf16 = markedBf16(L, p);
  MlirValue q = lbOffset(&L->lb, p, elems * (bf16 ? 2 : 4));
  if (bf16) lwMarkBf16(L, q);
  return q;
}

void lwCall(Lowering *L, const char *fn, intptr_t n, const MlirValue *args) {
  lbCall(&L->lb, fn, (MlirType){NULL}, n, args);
}

const char *lwKernelName(const Lowering *L, prt_kernel_id k) {
  return k > PRT_K_NONE && k < PRT_K_COUNT ? L->shared->target->kernels[k] : NULL;
}

const char *lwKernelOf(const Shared *sh, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  return f && f->kernel > PRT_K_NONE && f->kernel < PRT_K_COUNT ? sh->target->kernels[f->kernel]
                                                                : NULL;
}

/* Each kernel's name in the list, without a target's prefix. */
static const char *const kernelNames[PRT_K_COUNT] = {
#define PRT_KERNEL(name, gpu, params, launches) [PRT_K_##name] = #name,
#include "piper/kernels.def"
};

/* The LLVM type parameter letter `c` of kernelParams stands for. */
static MlirType paramType(const LlvmBuilder *b, char c) {
  return c == 'p' ? b->ptr : c == 'l' ? b->i64 : c == 'f' ? b->f32 : b->i32;
}

/* The bf16 mask of a call of kernel k with these arguments (include/piper/kernels.def: bit k
 * for its k-th tensor argument); -1 - i where argument i holds bf16 but the parameter takes
 * fp32 only, or the other way round (a rule that passed the wrong buffer: a compiler defect). */
static int64_t bf16Mask(const Lowering *L, prt_kernel_id k, intptr_t n, const MlirValue *args) {
  const char *kinds = kernelKinds[k];
  int64_t mask = 0;
  int bit = 0;
  for (intptr_t i = 0; i < n && kinds[i]; ++i) {
    char kind = kinds[i];
    if (kind != 'F' && kind != 'B' && kind != 'T') continue;
    bool bf16 = markedBf16(L, args[i]);
    if ((bf16 && kind == 'T') || (bf16 && kind == 'F' && !L->bf16Io) || (!bf16 && kind == 'B'))
      return -1 - i;
    if (bf16) mask |= (int64_t)1 << bit;
    bit++;
  }
  return mask;
}

void lwCallKernel(Lowering *L, MlirOperation at, prt_kernel_id k, intptr_t n,
                  const MlirValue *args) {
  const char *fn = lwKernelName(L, k);
  const char *params = k > PRT_K_NONE && k < PRT_K_COUNT ? kernelParams[k] : "";
  intptr_t want = (intptr_t)strlen(params), bad = -1;
  for (intptr_t i = 0; i < n && i < want && bad < 0; ++i)
    if (!mlirTypeEqual(mlirValueGetType(args[i]), paramType(&L->lb, params[i]))) bad = i;
  int64_t mask = fn && n == want && bad < 0 ? bf16Mask(L, k, n, args) : 0;
  if (!fn || n != want || bad >= 0 || mask < 0) {
    char why[160];
    if (mask < 0)
      snprintf(why, sizeof why, "argument #%lld holds %s, which its parameter does not take",
               (long long)(-1 - mask), markedBf16(L, args[-1 - mask]) ? "bf16" : "fp32");
    else if (!fn)
      snprintf(why, sizeof why, "target %s has no %s%s", L->shared->target->name,
               L->shared->target->kernelPrefix,
               k > PRT_K_NONE && k < PRT_K_COUNT ? kernelNames[k] : "?");
    else if (n != want)
      snprintf(why, sizeof why, "%lld argument(s) passed, %lld taken", (long long)n,
               (long long)want);
    else
      snprintf(why, sizeof why, "argument #%lld has the wrong type", (long long)bad);
    piperEmitErrorf(mlirOperationGetLocation(at),
                    "piper-lower-to-llvm: internal error: the call of kernel #%d (%s): %s; "
                    "lowering/lower_compute.c's rule and the kernel list "
                    "(include/piper/kernels.def) disagree",
                    (int)k, fn ? fn : "-", why);
    L->failed = true;
    return;
  }
  if (!L->shared->target->bf16Io) {
    lwCall(L, fn, n, args);
    return;
  }
  /* the target's kernels take the call's bf16 mask last */
  MlirValue withMask[LW_MAX_KERNEL_PARAMS + 1];
  memcpy(withMask, args, (size_t)n * sizeof *args);
  withMask[n] = lbConstI32(&L->lb, (int32_t)mask);
  lwCall(L, fn, n + 1, withMask);
}

/* Scratch for `v` (fp32, numel elements) at *at in the arena's scratch; moves *at past it. */
static MlirValue scratchFor(Lowering *L, MlirValue v, int64_t *at) {
  /* a pointer of its own (never the arena's, even at offset 0): a bf16 one is marked */
  MlirValue p = lbOffsetV(&L->lb, L->arena, lbConstI64(&L->lb, L->scratchAt + *at));
  *at += lwRoundUp(piperTensorNumel(mlirValueGetType(v)) * 4);
  return p;
}

/* The conversion kernel k (bf16_widen, bf16_round, bf16_narrow) of n elements, src -> dst. */
static void convert(Lowering *L, MlirOperation op, prt_kernel_id k, MlirValue dst, MlirValue src,
                    MlirValue v) {
  MlirValue args[3] = {dst, src, lwI64(L, piperTensorNumel(mlirValueGetType(v)))};
  lwCallKernel(L, op, k, 3, args);
}

/* The same offsets as conversionBytes (memory_plan.c) reserved, operands then results. */
void lwConvertBegin(Lowering *L, MlirOperation op) {
  intptr_t nIn = mlirOperationGetNumOperands(op), nOut = mlirOperationGetNumResults(op);
  bool any = false;
  for (intptr_t i = 0; i < nIn && !any; ++i) any = lwConversionOf(L, op, false, i) != LW_CONV_NONE;
  for (intptr_t r = 0; r < nOut && !any; ++r) any = lwConversionOf(L, op, true, r) != LW_CONV_NONE;
  if (!any) return;
  L->conv.op = op;
  L->conv.in = calloc((size_t)nIn + 1, sizeof *L->conv.in);
  L->conv.out = calloc((size_t)nOut + 1, sizeof *L->conv.out);
  if (!L->conv.in || !L->conv.out) {
    fprintf(stderr, "piper: error: out of memory lowering a bf16 conversion\n");
    exit(1);
  }
  int64_t at = 0;
  for (intptr_t i = 0; i < nIn; ++i) {
    LwConversion c = lwConversionOf(L, op, false, i);
    if (c == LW_CONV_NONE) continue;
    MlirValue v = mlirOperationGetOperand(op, i), own = ownPtr(L, v);
    L->conv.in[i] = scratchFor(L, v, &at);
    if (c == LW_CONV_NARROW_IN) lwMarkBf16(L, L->conv.in[i]); /* a bf16 copy */
    convert(L, op,
            c == LW_CONV_WIDEN ? PRT_K_bf16_widen
            : c == LW_CONV_ROUND ? PRT_K_bf16_round
                                 : PRT_K_bf16_narrow,
            L->conv.in[i], own, v);
  }
  for (intptr_t r = 0; r < nOut; ++r)
    if (lwConversionOf(L, op, true, r) == LW_CONV_NARROW)
      L->conv.out[r] = scratchFor(L, mlirOperationGetResult(op, r), &at);
}

void lwConvertEnd(Lowering *L, MlirOperation op) {
  if (!mlirOperationEqual(L->conv.op, op)) return;
  for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
    if (!L->conv.out[r].ptr) continue;
    MlirValue v = mlirOperationGetResult(op, r);
    convert(L, op, PRT_K_bf16_narrow, ownPtr(L, v), L->conv.out[r], v);
  }
  free(L->conv.in);
  free(L->conv.out);
  L->conv = (Conversions){{NULL}, NULL, NULL};
}
