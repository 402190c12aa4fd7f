/* gpu-dialect kernels -> PTX text, the chain shared/examples/gpu-smoke verified on an H100:
 *   the kernels' MLIR text (lowering/gpu_kernels.c) parsed in a context of its own
 *   -> upstream gpu.module(convert-scf-to-cf, convert-gpu-to-nvvm, reconcile-unrealized-casts)
 *   -> the gpu.module's llvm.func ops moved into a plain module
 *   -> mlirTranslateModuleToLLVMIR -> LLVM's default<O3> pipeline for the NVPTX target
 *      (inlines the math helpers, infers global address spaces, NVVMReflect)
 *   -> the LLVM C API's NVPTX target machine -> PTX for the chosen sm_XX.
 * The triple and both pipelines are the CUDA target's code generator record, piperNvptxCodegen.
 * Compile time only: no CUDA library and no GPU is needed (ptxas, the driver's JIT, or
 * cudaLibraryLoadData at run time turn the PTX into machine code). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llvm-c/Core.h"
#include "llvm-c/Target.h"
#include "llvm-c/TargetMachine.h"
#include "llvm-c/Transforms/PassBuilder.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "mlir-c/RegisterEverything.h"
#include "mlir-c/Target/LLVMIR.h"
#include "piper/checked.h"
#include "piper/piper.h"
#include "piper/target.h"

/* The CUDA target's code generator (include/piper/target.h): its triple and pipelines are read
 * by piperGpuKernelsToPtx below. */
const PiperCodegen piperNvptxCodegen = {
    .triple = "nvptx64-nvidia-cuda",
    .toLlvm = "builtin.module(gpu.module(convert-scf-to-cf,"
              "convert-gpu-to-nvvm{index-bitwidth=64},reconcile-unrealized-casts))",
    .pipeline = "default<O3>",
    .defaultArch = "sm_80",
    .archValid = piperGpuArchValid,
    .deviceModule = piperGpuModuleForHost,
    .assemble = piperGpuKernelsToPtx,
    .embed = piperEmbedPtx,
};

static void printToFile(MlirStringRef s, void *userData) {
  fwrite(s.data, 1, s.length, (FILE *)userData);
}

/* sm_XX with XX a number >= 50 (what LLVM's NVPTX target knows); the PTX ISA version the
 * kernels need is the one LLVM picks for that arch (+ptxNN is not forced). */
bool piperGpuArchValid(const char *arch) {
  if (!arch || strncmp(arch, "sm_", 3) || !arch[3]) return false;
  int v = 0;
  for (const char *p = arch + 3; *p; ++p) {
    if (*p == 'a' && !p[1] && p > arch + 3) break; /* sm_90a: arch-specific features */
    if (*p < '0' || *p > '9' || v > 1000) return false;
    v = v * 10 + (*p - '0');
  }
  return v >= 50;
}

/* Moves the body of the gpu.module in `m` into a new plain module (the NVVM ops translate
 * only from a builtin module); NULL module if `m` holds no gpu.module. */
static MlirModule deviceModuleOf(MlirModule m) {
  MlirOperation gm = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
  while (!mlirOperationIsNull(gm) && !piperOpIs(gm, "gpu.module"))
    gm = mlirOperationGetNextInBlock(gm);
  if (mlirOperationIsNull(gm)) return (MlirModule){NULL};
  MlirModule dev = mlirModuleCreateEmpty(mlirOperationGetLocation(gm));
  MlirBlock src = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
  for (MlirOperation op = mlirBlockGetFirstOperation(src), nx; !mlirOperationIsNull(op);
       op = nx) {
    nx = mlirOperationGetNextInBlock(op);
    mlirOperationRemoveFromParent(op);
    mlirBlockAppendOwnedOperation(mlirModuleGetBody(dev), op);
  }
  return dev;
}

char *piperGpuKernelsToPtx(const char *mlirText, const char *arch, FILE *dumpLowered) {
  if (!piperGpuArchValid(arch)) {
    fprintf(stderr, "piper: error: --gpu-arch %s: expected sm_NN with NN >= 50 (sm_80: A100, "
                    "sm_90: H100)\n", arch ? arch : "(none)");
    return NULL;
  }
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return NULL;
  piperAttachDiagnosticPrinter(ctx, stderr, NULL);
  char *ptx = NULL;
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(mlirText));
  if (mlirModuleIsNull(m)) {
    fprintf(stderr, "piper: error: the GPU kernels' MLIR did not parse (a compiler defect: "
                    "lowering/gpu_kernels.c)\n");
    mlirContextDestroy(ctx);
    return NULL;
  }
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  const char *pipe = piperNvptxCodegen.toLlvm;
  MlirModule dev = {NULL};
  LLVMContextRef lctx = NULL;
  LLVMModuleRef lm = NULL;
  LLVMTargetMachineRef tm = NULL;
  char *err = NULL;
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm), mlirStringRefCreateFromCString(pipe),
          printToFile, stderr)) ||
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m)))) {
    fprintf(stderr, "piper: error: lowering the GPU kernels to NVVM failed (a compiler "
                    "defect: lowering/gpu_kernels.c)\n");
    goto done;
  }
  dev = deviceModuleOf(m);
  if (mlirModuleIsNull(dev)) {
    fprintf(stderr, "piper: error: the GPU kernels' MLIR has no gpu.module\n");
    goto done;
  }
  if (dumpLowered) {
    mlirOperationPrint(mlirModuleGetOperation(dev), printToFile, dumpLowered);
    fputc('\n', dumpLowered);
  }
  lctx = LLVMContextCreate();
  lm = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(dev), lctx);
  if (!lm) {
    fprintf(stderr, "piper: error: translating the GPU kernels to LLVM IR failed\n");
    goto done;
  }
  /* the func-to-llvm patterns add C-interface wrappers of the helpers; nothing calls them */
  for (LLVMValueRef fn = LLVMGetFirstFunction(lm), next; fn; fn = next) {
    next = LLVMGetNextFunction(fn);
    size_t len = 0;
    const char *name = LLVMGetValueName2(fn, &len);
    if (len > 13 && !strncmp(name, "_mlir_ciface_", 13) && !LLVMGetFirstUse(fn))
      LLVMDeleteFunction(fn);
  }
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
  const char *triple = piperNvptxCodegen.triple;
  LLVMTargetRef t;
  if (LLVMGetTargetFromTriple(triple, &t, &err)) {
    fprintf(stderr, "piper: error: this LLVM has no NVPTX target (%s); install an LLVM built "
                    "with it (Debian's llvm-22 has it)\n", err ? err : "?");
    goto done;
  }
  tm = LLVMCreateTargetMachine(t, triple, arch, "", LLVMCodeGenLevelAggressive,
                               LLVMRelocDefault, LLVMCodeModelDefault);
  LLVMSetTarget(lm, triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(lm, dl);
  LLVMDisposeTargetData(dl);
  /* O3 on the device IR: the math helpers (func.func in the gpu.module) inline, loads and
   * stores through kernel pointers become ld.global/st.global */
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef perr = LLVMRunPasses(lm, piperNvptxCodegen.pipeline, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (perr) {
    char *msg = LLVMGetErrorMessage(perr);
    fprintf(stderr, "piper: error: optimizing the GPU kernels failed: %s\n", msg);
    LLVMDisposeErrorMessage(msg);
    goto done;
  }
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, lm, LLVMAssemblyFile, &err, &buf)) {
    fprintf(stderr, "piper: error: NVPTX code generation failed: %s\n", err ? err : "?");
    goto done;
  }
  size_t n = LLVMGetBufferSize(buf);
  ptx = malloc(n + 1);
  if (ptx) {
    memcpy(ptx, LLVMGetBufferStart(buf), n);
    ptx[n] = 0;
  } else {
    fprintf(stderr, "piper: error: out of memory holding %zu bytes of PTX\n", n);
  }
  LLVMDisposeMemoryBuffer(buf);
done:
  if (err) LLVMDisposeMessage(err);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (lm) LLVMDisposeModule(lm);
  if (lctx) LLVMContextDispose(lctx);
  if (!mlirModuleIsNull(dev)) mlirModuleDestroy(dev);
  mlirPassManagerDestroy(pm);
  mlirModuleDestroy(m);
  mlirContextDestroy(ctx);
  return ptx;
}

char *piperGpuModuleForHost(MlirOperation hostModule) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(hostModule, 0));
  char **fns = NULL; /* owned copies of the libpiper_rt_cuda functions the host calls */
  size_t n = 0, cap = 0;
  bool ok = true;
  for (MlirOperation op = mlirBlockGetFirstOperation(top); ok && !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!piperOpIs(op, "llvm.func")) continue;
    MlirStringRef name =
        mlirStringAttrGetValue(mlirOperationGetAttributeByName(op, piperStr("sym_name")));
    char *copy = strndup(name.data, name.length);
    if (copy && !piperGpuRuntimeFnKnown(copy)) {
      free(copy);
      continue;
    }
    ok = copy && piperGrow((void **)&fns, &cap, n + 1, sizeof *fns);
    if (ok) fns[n++] = copy;
    else free(copy);
  }
  char *text = ok ? piperGpuKernelModule((const char *const *)fns, n) : NULL;
  if (!ok) fprintf(stderr, "piper: error: out of memory listing the GPU kernels\n");
  for (size_t i = 0; i < n; ++i) free(fns[i]);
  free(fns);
  return text;
}

void piperEmbedPtx(MlirOperation hostModule, const char *ptx) {
  MlirContext ctx = mlirOperationGetContext(hostModule);
  MlirLocation loc = mlirOperationGetLocation(hostModule);
  size_t n = strlen(ptx) + 1;
  MlirType i8 = mlirIntegerTypeGet(ctx, 8);
  MlirType arr = mlirLLVMArrayTypeGet(i8, (unsigned)n);
  MlirNamedAttribute attrs[6] = {
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("sym_name")),
                            mlirStringAttrGet(ctx, piperStr("piper_ptx"))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("global_type")),
                            mlirTypeAttrGet(arr)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("linkage")),
                            mlirAttributeParseGet(ctx, piperStr("#llvm.linkage<external>"))),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("constant")), mlirUnitAttrGet(ctx)),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("value")),
                            mlirStringAttrGet(ctx, (MlirStringRef){ptx, n})),
      mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr("addr_space")),
                            mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), 0))};
  MlirOperationState st = mlirOperationStateGet(piperStr("llvm.mlir.global"), loc);
  mlirOperationStateAddAttributes(&st, 6, attrs);
  MlirRegion empty = mlirRegionCreate();
  mlirOperationStateAddOwnedRegions(&st, 1, &empty);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(hostModule, 0));
  mlirBlockAppendOwnedOperation(top, mlirOperationCreate(&st));
}
