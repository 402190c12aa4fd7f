/* The GPU kernels (lowering/gpu_kernels.c) JIT-compiled for the host, for the tests that run
 * them without a GPU (gpu_kernels_emu.c, cuda_host_emu.c): every gpu.func becomes a host
 * function of (thread index, its arguments) -- the six lines that compute the thread index
 * from gpu.block_id/block_dim/thread_id become the argument %i, gpu.return becomes return,
 * and PTX's sqrt.rn.f32 (inline asm) becomes llvm.intr.sqrt, both IEEE-rounded -- lowered by
 * upstream passes and JIT-compiled by the MLIR execution engine. Each function is callable
 * directly (its C signature with the index first) and packed (kernelJitLaunch: arguments as
 * cudaLaunchKernel takes them). Static functions: one copy per test.
 * Two options the fake CUDA runtime sets before kernelJitCreate:
 *   kernelJitTouches   every llvm.load and llvm.store also calls @fake_touch(address, bytes,
 *                      0 load / 1 store), which the caller registers (kernelJitRegister): the
 *                      bytes a kernel reads and writes, counted (fake_cuda.c);
 *   kernelJitTruncate  @piper_bf16 truncates instead of rounding to nearest even: a narrowing
 *                      broken on purpose, the negative control of the bf16 tests. */
#ifndef PIPER_TEST_GPU_KERNEL_JIT_H
#define PIPER_TEST_GPU_KERNEL_JIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/ExecutionEngine.h"
#include "mlir-c/IR.h"
#include "mlir-c/Pass.h"
#include "piper/piper.h"

static int kernelJitTouches, kernelJitTruncate;

/* The bytes of an llvm.load's or llvm.store's type `ty` (f32, i16, !llvm.ptr, ...): 0 if not
 * one of the kernels' */
static int kernelJitTypeBytes(const char *ty) {
  if (!strncmp(ty, "f32", 3) || !strncmp(ty, "i32", 3)) return 4;
  if (!strncmp(ty, "f64", 3) || !strncmp(ty, "i64", 3) || !strncmp(ty, "!llvm.ptr", 9)) return 8;
  if (!strncmp(ty, "i16", 3)) return 2;
  return 0;
}

/* The lines that report one load or store of `line` to @fake_touch (kernelJitTouches), or ""
 * when the line is neither; n numbers the values it defines. */
static void kernelJitTouch(const char *line, int n, char *out, size_t size) {
  const char *ld = strstr(line, "llvm.load "), *st = strstr(line, "llvm.store ");
  char addr[64];
  int bytes = 0;
  out[0] = 0;
  if (ld) { /* %v = llvm.load %p : !llvm.ptr -> T */
    const char *arrow = strstr(ld, "-> ");
    if (!arrow || sscanf(ld + 10, "%63[^ ]", addr) != 1) return;
    bytes = kernelJitTypeBytes(arrow + 3);
  } else if (st) { /* llvm.store %v, %p : T, !llvm.ptr */
    const char *colon = strstr(st, " : ");
    const char *comma = strchr(st, ',');
    if (!colon || !comma || sscanf(comma + 1, " %63[^ ]", addr) != 1) return;
    bytes = kernelJitTypeBytes(colon + 3);
  }
  if (!bytes) return;
  snprintf(out, size,
           "      %%fk_b%d = arith.constant %d : i64\n"
           "      %%fk_w%d = arith.constant %d : i32\n"
           "      func.call @fake_touch(%s, %%fk_b%d, %%fk_w%d) : (!llvm.ptr, i64, i32) -> ()\n",
           n, bytes, n, st != NULL, addr, n, n);
}

/* The kernel module rewritten for the host (see the file comment); owned. */
static char *hostText(const char *gpu) {
  size_t cap = strlen(gpu) * 2 + 64, len = 0;
  char *out = malloc(cap);
  int touches = 0;
  const char *asmHead = "llvm.inline_asm \"sqrt.rn.f32 $0, $1;\", \"=f,f\" ";
  const char *asmHead64 = "llvm.inline_asm \"sqrt.rn.f64 $0, $1;\", \"=d,d\" "; /* same length */
  for (const char *p = gpu; *p;) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) + 1 : strlen(p);
    char line[512];
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p, n);
    line[n] = 0;
    p += n;
    char buf[1280];
    char *s;
    if (strstr(line, "%tid_") || strstr(line, "gpu.module @piper_kernels")) continue;
    char touch[512] = "";
    if (kernelJitTouches) kernelJitTouch(line, touches++, touch, sizeof touch);
    if (strstr(line, "module attributes {gpu.container_module}")) {
      snprintf(buf, sizeof buf, "module {\n%s",
               kernelJitTouches ? "  func.func private @fake_touch(!llvm.ptr, i64, i32)\n" : "");
    } else if (kernelJitTruncate && strstr(line, "%bias = arith.addi %half, %lsb : i32")) {
      snprintf(buf, sizeof buf, "    %%bias = arith.constant 0 : i32\n");
    } else if ((s = strstr(line, "gpu.func @"))) {
      char *paren = strchr(s, '(');
      char *kernel = strstr(line, ") kernel {");
      if (kernel) memmove(kernel + 1, kernel + 8, strlen(kernel + 8) + 1);
      /* the packed form (kernelJitLaunch) needs the C interface */
      char *brace = strrchr(paren, '{');
      if (brace) *brace = 0;
      snprintf(buf, sizeof buf,
               "%.*sfunc.func %.*s(%%i: i64, %sattributes {llvm.emit_c_interface} {\n",
               (int)(s - line), line, (int)(paren - s - 9), s + 9, paren + 1);
    } else if ((s = strstr(line, "gpu.return"))) {
      snprintf(buf, sizeof buf, "%.*sreturn\n", (int)(s - line), line);
    } else if ((s = strstr(line, asmHead)) || (s = strstr(line, asmHead64))) {
      char *arg = s + strlen(asmHead), *sp = strchr(arg, ' ');
      snprintf(buf, sizeof buf, "%.*sllvm.intr.sqrt(%.*s)%s", (int)(s - line), line,
               (int)(sp - arg), arg, sp);
    } else {
      snprintf(buf, sizeof buf, "%s", line);
    }
    strncat(buf, touch, sizeof buf - strlen(buf) - 1);
    size_t bl = strlen(buf);
    if (len + bl + 1 > cap) {
      cap = 2 * (len + bl + 1);
      out = realloc(out, cap);
      if (!out) {
        fprintf(stderr, "out of memory rewriting the kernels for the host\n");
        exit(2);
      }
    }
    memcpy(out + len, buf, bl);
    len += bl;
  }
  out[len] = 0;
  /* the gpu.module's closing brace: the text ended "}\n}\n", keep one */
  char *last = strrchr(out, '}');
  if (last) {
    *last = 0;
    char *prev = strrchr(out, '}');
    if (prev) strcpy(prev, "}\n");
  }
  return out;
}

/* The context and module the engine was made from: they live until kernelJitDestroy. */
static MlirContext kernelJitCtx;
static MlirModule kernelJitModule;

/* Each kernel's argument count (without the thread index), read from its signature in the
 * module before lowering: what a launcher must pass it (fake_cuda.c checks the count). One
 * entry per function of the module: the device kernels (their count is right) and
 * gpu_kernels.c's helpers (which have no thread index: never launched). */
enum { KERNEL_JIT_MAX_FUNCS = 128, KERNEL_JIT_MAX_ARGS = 31 };
static struct {
  char name[64];
  int nargs;
  unsigned char size[KERNEL_JIT_MAX_ARGS]; /* each argument's bytes: 4 (f32, i32) or 8 */
  unsigned char ptr[KERNEL_JIT_MAX_ARGS];  /* 1: a pointer (!llvm.ptr: a device address) */
  unsigned char use[KERNEL_JIT_MAX_ARGS];  /* a pointer's use: KERNEL_JIT_READS and/or
                                              KERNEL_JIT_WRITES, 0 if not seen */
  int first;                               /* its block argument of argument 0: 1 for a
                                              kernel (the thread index first), 0 for a helper */
} kernelJitSigs[KERNEL_JIT_MAX_FUNCS];
static int kernelJitNSigs;

/* How a kernel uses a pointer argument: an llvm.load or an llvm.store through it (or through
 * llvm.getelementptr and arith.select from it), or a func.call of a helper of the module that
 * does (the bf16 plans' @piper_ld / @piper_st). A pointer loaded from memory (a table's
 * entries) is not traced. */
enum { KERNEL_JIT_READS = 1, KERNEL_JIT_WRITES = 2 };

static int kernelJitOpIs(MlirOperation op, const char *name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && !memcmp(n.data, name, n.length);
}

/* The arguments (bit a: argument a, 0-based after a kernel's thread index) address v may be
 * derived from; `first` is the function's block argument of argument 0. */
static uint32_t kernelJitArgsOf(MlirValue v, MlirBlock entry, int first, int depth) {
  if (depth > 64) return 0;
  if (mlirValueIsABlockArgument(v)) {
    intptr_t a = mlirBlockArgumentGetArgNumber(v) - first;
    return mlirBlockEqual(mlirBlockArgumentGetOwner(v), entry) && a >= 0 &&
                   a < KERNEL_JIT_MAX_ARGS ? (uint32_t)1 << a : 0;
  }
  if (!mlirValueIsAOpResult(v)) return 0;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (kernelJitOpIs(def, "llvm.getelementptr"))
    return kernelJitArgsOf(mlirOperationGetOperand(def, 0), entry, first, depth + 1);
  if (kernelJitOpIs(def, "arith.select"))
    return kernelJitArgsOf(mlirOperationGetOperand(def, 1), entry, first, depth + 1) |
           kernelJitArgsOf(mlirOperationGetOperand(def, 2), entry, first, depth + 1);
  return 0;
}

static int kernelJitFind(MlirStringRef name) {
  for (int k = 0; k < kernelJitNSigs; k++)
    if (strlen(kernelJitSigs[k].name) == name.length &&
        !memcmp(kernelJitSigs[k].name, name.data, name.length))
      return k;
  return -1;
}

typedef struct {
  MlirBlock entry;
  unsigned char *use;
  int nargs, first;
  int changed; /* a use newly noted (a helper's reached through a call) */
} kernelJitUses;
static void kernelJitNote(kernelJitUses *u, uint32_t args, int how) {
  for (int a = 0; a < u->nargs; a++)
    if (args >> a & 1 && (u->use[a] | how) != u->use[a]) {
      u->use[a] |= (unsigned char)how;
      u->changed = 1;
    }
}
static MlirWalkResult kernelJitNoteUse(MlirOperation op, void *user) {
  kernelJitUses *u = user;
  if (kernelJitOpIs(op, "llvm.load")) {
    kernelJitNote(u, kernelJitArgsOf(mlirOperationGetOperand(op, 0), u->entry, u->first, 0),
                  KERNEL_JIT_READS);
  } else if (kernelJitOpIs(op, "llvm.store")) {
    kernelJitNote(u, kernelJitArgsOf(mlirOperationGetOperand(op, 1), u->entry, u->first, 0),
                  KERNEL_JIT_WRITES);
  } else if (kernelJitOpIs(op, "func.call")) { /* operand j: the callee's argument j */
    MlirAttribute callee =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("callee"));
    int k = mlirAttributeIsNull(callee) || !mlirAttributeIsAFlatSymbolRef(callee)
                ? -1
                : kernelJitFind(mlirFlatSymbolRefAttrGetValue(callee));
    for (intptr_t j = 0; k >= 0 && j < mlirOperationGetNumOperands(op); j++) {
      intptr_t a = j - kernelJitSigs[k].first;
      if (a >= 0 && a < kernelJitSigs[k].nargs && kernelJitSigs[k].use[a])
        kernelJitNote(u, kernelJitArgsOf(mlirOperationGetOperand(op, j), u->entry, u->first, 0),
                      kernelJitSigs[k].use[a]);
    }
  }
  return MlirWalkResultAdvance;
}

/* Appends printed MLIR text to a bounded buffer (mlirTypePrint's callback). */
static void kernelJitPrintTo(MlirStringRef piece, void *user) {
  char *buf = user;
  size_t len = strlen(buf);
  if (len + piece.length < 32) {
    memcpy(buf + len, piece.data, piece.length);
    buf[len + piece.length] = 0;
  }
}

static void kernelJitReadSignatures(MlirModule m) {
  MlirStringRef typeName = mlirStringRefCreateFromCString("function_type");
  MlirStringRef symName = mlirStringRefCreateFromCString("sym_name");
  kernelJitNSigs = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute type = mlirOperationGetAttributeByName(op, typeName);
    MlirAttribute sym = mlirOperationGetAttributeByName(op, symName);
    if (mlirAttributeIsNull(type) || mlirAttributeIsNull(sym) ||
        !mlirAttributeIsAType(type) || !mlirTypeIsAFunction(mlirTypeAttrGetValue(type)))
      continue;
    MlirStringRef name = mlirStringAttrGetValue(sym);
    if (kernelJitNSigs == KERNEL_JIT_MAX_FUNCS || name.length >= sizeof kernelJitSigs[0].name) {
      fprintf(stderr, "kernel_jit.h: more than %d functions or a name over %zu bytes (%.*s); "
              "raise KERNEL_JIT_MAX_FUNCS or the name's size\n", KERNEL_JIT_MAX_FUNCS,
              sizeof kernelJitSigs[0].name - 1, (int)name.length, name.data);
      exit(2);
    }
    memcpy(kernelJitSigs[kernelJitNSigs].name, name.data, name.length);
    kernelJitSigs[kernelJitNSigs].name[name.length] = 0;
    /* the host rewrite put a kernel's thread index first (and gave it the C interface) */
    MlirType fnType = mlirTypeAttrGetValue(type);
    int first = !mlirAttributeIsNull(mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("llvm.emit_c_interface")));
    int nargs = (int)mlirFunctionTypeGetNumInputs(fnType) - first;
    if (nargs > KERNEL_JIT_MAX_ARGS) {
      fprintf(stderr, "kernel_jit.h: %.*s has %d arguments, more than %d\n", (int)name.length,
              name.data, nargs, KERNEL_JIT_MAX_ARGS);
      exit(2);
    }
    for (int a = 0; a < nargs; a++) {
      MlirType t = mlirFunctionTypeGetInput(fnType, a + first);
      int four = mlirTypeIsAF32(t) || (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 32);
      char printed[32] = "";
      mlirTypePrint(t, kernelJitPrintTo, printed);
      kernelJitSigs[kernelJitNSigs].size[a] = four ? 4 : 8;
      kernelJitSigs[kernelJitNSigs].ptr[a] = !strcmp(printed, "!llvm.ptr");
    }
    kernelJitSigs[kernelJitNSigs].nargs = nargs;
    kernelJitSigs[kernelJitNSigs].first = first;
    memset(kernelJitSigs[kernelJitNSigs].use, 0, sizeof kernelJitSigs[0].use);
    kernelJitNSigs++;
  }
  /* the pointers' uses, again until none is new: a call reaches its callee's (in any order) */
  for (int changed = 1; changed;) {
    changed = 0;
    for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
         !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
      MlirAttribute sym = mlirOperationGetAttributeByName(op, symName);
      int k = mlirAttributeIsNull(sym) ? -1 : kernelJitFind(mlirStringAttrGetValue(sym));
      MlirRegion body = k < 0 || !mlirOperationGetNumRegions(op) ? (MlirRegion){NULL}
                                                                  : mlirOperationGetRegion(op, 0);
      if (mlirRegionIsNull(body) || mlirBlockIsNull(mlirRegionGetFirstBlock(body))) continue;
      kernelJitUses u = {mlirRegionGetFirstBlock(body), kernelJitSigs[k].use,
                         kernelJitSigs[k].nargs, kernelJitSigs[k].first, 0};
      mlirOperationWalk(op, kernelJitNoteUse, &u, MlirWalkPreOrder);
      changed |= u.changed;
    }
  }
}

/* The argument count of kernel `name` (piper_<name>), or -1 when the module has none. */
__attribute__((unused)) static int kernelJitArgCount(const char *name) {
  for (int k = 0; k < kernelJitNSigs; k++)
    if (!strcmp(kernelJitSigs[k].name, name)) return kernelJitSigs[k].nargs;
  return -1;
}

/* The byte size of argument a of kernel `name` (4 or 8), or 0 when it has none such. */
__attribute__((unused)) static int kernelJitArgSize(const char *name, int a) {
  for (int k = 0; k < kernelJitNSigs; k++)
    if (!strcmp(kernelJitSigs[k].name, name))
      return a >= 0 && a < kernelJitSigs[k].nargs ? kernelJitSigs[k].size[a] : 0;
  return 0;
}

/* 1 when argument a of kernel `name` is a pointer (a device address), else 0. */
__attribute__((unused)) static int kernelJitArgIsPointer(const char *name, int a) {
  for (int k = 0; k < kernelJitNSigs; k++)
    if (!strcmp(kernelJitSigs[k].name, name))
      return a >= 0 && a < kernelJitSigs[k].nargs && kernelJitSigs[k].ptr[a];
  return 0;
}

/* How kernel `name` uses pointer argument a (KERNEL_JIT_READS | KERNEL_JIT_WRITES; 0 when no
 * load or store through it was seen). */
__attribute__((unused)) static int kernelJitArgUse(const char *name, int a) {
  for (int k = 0; k < kernelJitNSigs; k++)
    if (!strcmp(kernelJitSigs[k].name, name))
      return a >= 0 && a < kernelJitSigs[k].nargs ? kernelJitSigs[k].use[a] : 0;
  return 0;
}

/* Every kernel of gpu_kernels.c, JIT-compiled for the host; exits 2 when that fails. */
static MlirExecutionEngine kernelJitCreate(void) {
  MlirContext ctx = kernelJitCtx = piperContextCreate();
  /* every GPU function of the kernel list, hence every device kernel one launches */
#define JIT_GPU_1(name) "prt_cuda_" #name,
#define JIT_GPU_0(name)
#define PRT_KERNEL(name, gpu, params, launches) JIT_GPU_##gpu(name)
  const char *all[] = {
#include "piper/kernels.def"
  };
#undef JIT_GPU_1
#undef JIT_GPU_0
  char *gpu = piperGpuKernelModule(all, sizeof all / sizeof all[0]);
  char *text = hostText(gpu);
  MlirModule m = kernelJitModule =
      mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(text));
  if (mlirModuleIsNull(m)) {
    fprintf(stderr, "the host rewrite of the kernels did not parse:\n%s\n", text);
    exit(2);
  }
  kernelJitReadSignatures(m);
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  if (mlirLogicalResultIsFailure(mlirParsePassPipeline(
          mlirPassManagerGetAsOpPassManager(pm),
          mlirStringRefCreateFromCString(
              "builtin.module(convert-scf-to-cf,convert-to-llvm,reconcile-unrealized-casts)"),
          NULL, NULL)) ||
      mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m)))) {
    fprintf(stderr, "lowering the host rewrite failed\n");
    exit(2);
  }
  /* optimization level 0: the tests' shapes are tiny, so compiling every kernel is most of a
   * fake-CUDA process's CPU time (level 2: 1.35 s of CPU for a 5-step GPT run; level 0: 0.40
   * s). No fast-math flag is set either way, so each fp32 operation rounds as IEEE says at
   * any level; the fake runs are compared with the CPU binary within the tests' tolerances,
   * and with each other bit for bit only at the same level. */
  MlirExecutionEngine jit = mlirExecutionEngineCreate(m, 0, 0, NULL, false, false);
  if (mlirExecutionEngineIsNull(jit)) {
    fprintf(stderr, "the JIT did not start\n");
    exit(2);
  }
  mlirPassManagerDestroy(pm);
  free(text);
  free(gpu);
  return jit;
}

/* Kernel `name`'s host function in the engine (its thread index first, then its arguments);
 * exits 2 naming it when the engine has none. */
__attribute__((unused)) static void *kernelJitFn(MlirExecutionEngine jit, const char *name) {
  void *f = mlirExecutionEngineLookup(jit, mlirStringRefCreateFromCString(name));
  if (!f) {
    fprintf(stderr, "no function %s in the JIT module\n", name);
    exit(2);
  }
  return f;
}

static void kernelJitDestroy(MlirExecutionEngine jit) {
  mlirExecutionEngineDestroy(jit);
  mlirModuleDestroy(kernelJitModule);
  mlirContextDestroy(kernelJitCtx);
}

/* Runs kernel `name` for thread indices 0 .. threads-1, its arguments as cudaLaunchKernel
 * takes them (args[k] points at argument k); 0, or 1 if the engine has no such kernel. */
__attribute__((unused)) static int kernelJitLaunch(MlirExecutionEngine jit, const char *name, int64_t threads,
                           void **args, int nargs) {
  void *packed[32];
  if (nargs + 1 > 32) return 1;
  int64_t i = 0;
  packed[0] = &i;
  for (int k = 0; k < nargs; k++) packed[k + 1] = args[k];
  /* looked up once per launch, not once per thread: an ORC lookup (locks, allocations) per
   * thread index was most of a fake-CUDA training step's time */
  void (*fn)(void **) = (void (*)(void **))mlirExecutionEngineLookupPacked(
      jit, mlirStringRefCreateFromCString(name));
  if (!fn) return 1;
  for (i = 0; i < threads; i++) fn(packed);
  return 0;
}

#endif
