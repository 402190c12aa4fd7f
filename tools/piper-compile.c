/* piper-compile: model.mlir -> an ahead-of-time compiled training binary.
 *   parse + verify -> --piper-autodiff -> --piper-lower-to-llvm -> LLVM IR -> x86-64 object
 *   -> linked with libpiper_rt (and its main) by the system C compiler driver.
 * --target cuda: the host plan calls libpiper_rt_cuda, and the device kernels it needs
 *   (lowering/gpu_kernels.c) go gpu dialect -> NVVM -> PTX (lowering/emit_ptx.c), embedded in
 *   the binary as piper_ptx; piper-compile itself links no CUDA library.
 * Exit codes: 0 success, 1 bad input or a failed step, 2 bad command line. */
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mlir-c/BuiltinAttributes.h"
#include "piper/piper.h"
#include "piper/target.h"
#include "registry.h"

extern char **environ;

static void usage(FILE *out) {
  fprintf(out,
          "usage: piper-compile MODEL.mlir -o OUTPUT [--strategy FILE] [--emit=exe|obj|asm|ll|mlir]\n"
          "                     [--target cpu|cuda] [--gpu-arch sm_NN] [--emit-ptx FILE]\n"
          "                     [--emit-gpu-mlir FILE]\n"
          "Compiles a tdag model (forward graph, or a training graph already built by\n"
          "--piper-autodiff) into a training binary linked with libpiper_rt.\n\n"
          "  -o OUTPUT      the file to write (required)\n"
          "  --strategy FILE  a Piper JSON schedule (piper-sched writes them) or a sched-dialect\n"
          "                 .mlir file; the binary then holds one plan per device and runs\n"
          "                 under `mpirun -np DEVICES`\n"
          "  --emit=KIND    exe (default): linked binary; obj: object file; asm: assembly;\n"
          "                 ll: LLVM IR; mlir: the lowered llvm-dialect module\n"
          "  --cc=DRIVER    C compiler driver used to link (default: $CC or cc)\n"
          "  --target T     cpu (default): OpenBLAS and C kernels; cuda: one NVIDIA GPU (CUDA\n"
          "                 kernels, cuBLAS); the binary needs the CUDA runtime, not piper-compile\n"
          "  --gpu-arch A   the PTX target for --target cuda (default sm_80: A100 and newer)\n"
          "  --emit-ptx F   with --target cuda: also write the plan's device kernels as PTX\n"
          "                 (-o is then optional)\n"
          "  --emit-gpu-mlir F  with --target cuda: write them in the gpu dialect, before NVVM\n"
          "Run the binary with --help for its flags.\n");
}

static void printToFile(MlirStringRef s, void *userData) {
  fwrite(s.data, 1, s.length, (FILE *)userData);
}

/* Directory of the runtime libraries: <prefix>/lib next to <prefix>/bin/piper-compile. */
static void runtimeLibDir(char *out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = 0;
  snprintf(out, size, "%s/../lib", dirname(exe));
}

/* Writes `text` to `path` through PiperOutput (no half-written file on failure); 0 on
 * success. */
static int writeText(const char *path, const char *text) {
  PiperOutput out;
  if (!piperOutputOpen(&out, path)) return 1;
  fputs(text, out.file);
  return piperOutputCommit(&out, true);
}

/* --target cuda after lowering: the device kernels the host plan calls, in the gpu dialect
 * (--emit-gpu-mlir), as PTX for `arch` (--emit-ptx), and embedded in the host module as
 * piper_ptx when a binary or object is made (`embed`). 0 on success. */
static int emitDeviceCode(MlirOperation module, const char *arch, const char *ptxOut,
                          const char *gpuMlirOut, bool embed) {
  char *text = piperGpuModuleForHost(module);
  if (!text) return 1;
  int rc = gpuMlirOut ? writeText(gpuMlirOut, text) : 0;
  char *ptx = rc || (!ptxOut && !embed) ? NULL : piperGpuKernelsToPtx(text, arch, NULL);
  if (!rc && (ptxOut || embed) && !ptx) rc = 1;
  if (!rc && ptxOut) rc = writeText(ptxOut, ptx);
  if (!rc && embed) piperEmbedPtx(module, ptx);
  free(ptx);
  free(text);
  return rc;
}

static int run(char *const argv[]) {
  pid_t pid;
  if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ)) {
    fprintf(stderr, "piper-compile: error: cannot run '%s'; install a C compiler (gcc) or pass "
                    "--cc=DRIVER\n", argv[0]);
    return 1;
  }
  int status;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv) {
  const char *input = NULL, *output = NULL, *emit = "exe", *strategy = NULL;
  /* --target cuda and its outputs: the arch of the PTX, where the PTX and the gpu-dialect
   * kernels go (NULL: not written) */
  const char *target = "cpu", *gpuArch = "sm_80", *ptxOut = NULL, *gpuMlirOut = NULL;
  const char *cc = getenv("CC") ? getenv("CC") : "cc";
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
      output = argv[++i];
    } else if (!strncmp(argv[i], "--emit=", 7)) {
      emit = argv[i] + 7;
      if (strcmp(emit, "exe") && strcmp(emit, "obj") && strcmp(emit, "asm") &&
          strcmp(emit, "ll") && strcmp(emit, "mlir")) {
        fprintf(stderr, "piper-compile: error: --emit=%s: expected exe, obj, asm, ll or mlir\n",
                emit);
        return 2;
      }
    } else if (!strcmp(argv[i], "--strategy") && i + 1 < argc) {
      strategy = argv[++i];
    } else if ((!strcmp(argv[i], "--target") || !strcmp(argv[i], "--gpu-arch") ||
                !strcmp(argv[i], "--emit-ptx") || !strcmp(argv[i], "--emit-gpu-mlir")) &&
               i + 1 < argc) {
      const char **slot = argv[i][2] == 't' ? &target : argv[i][2] == 'g' ? &gpuArch
                          : !strcmp(argv[i], "--emit-ptx") ? &ptxOut : &gpuMlirOut;
      *slot = argv[++i];
    } else if (!strcmp(argv[i], "--target") || !strcmp(argv[i], "--gpu-arch") ||
               !strcmp(argv[i], "--emit-ptx") || !strcmp(argv[i], "--emit-gpu-mlir")) {
      fprintf(stderr, "piper-compile: error: %s needs a value\n", argv[i]);
      return 2;
    } else if (!strcmp(argv[i], "--strategy=") || !strcmp(argv[i], "--cc=")) {
      fprintf(stderr, "piper-compile: error: %s needs a value\n", argv[i]);
      return 2;
    } else if (!strncmp(argv[i], "--strategy=", 11)) {
      strategy = argv[i] + 11;
    } else if (!strncmp(argv[i], "--cc=", 5)) {
      cc = argv[i] + 5;
    } else if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--strategy")) {
      fprintf(stderr, "piper-compile: error: %s needs a value (%s)\n", argv[i],
              argv[i][1] == 'o' ? "-o OUTPUT" : "--strategy FILE");
      return 2;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      fprintf(stderr, "piper-compile: error: unknown option '%s'; see piper-compile --help\n",
              argv[i]);
      return 2;
    } else if (input) {
      fprintf(stderr, "piper-compile: error: more than one input ('%s', '%s')\n", input, argv[i]);
      return 2;
    } else {
      input = argv[i];
    }
  }
  const PiperTarget *tgt = piperTargetNamed(piperStr(target));
  if (!tgt) {
    fprintf(stderr, "piper-compile: error: --target %s: expected cpu or cuda\n", target);
    return 2;
  }
  if (!tgt->deviceCode && (ptxOut || gpuMlirOut)) {
    fprintf(stderr, "piper-compile: error: %s needs --target cuda\n",
            ptxOut ? "--emit-ptx" : "--emit-gpu-mlir");
    return 2;
  }
  if (tgt->deviceCode && !piperGpuArchValid(gpuArch)) {
    fprintf(stderr, "piper-compile: error: --gpu-arch %s: expected sm_NN with NN >= 50 "
                    "(sm_80: A100, sm_90: H100)\n", gpuArch);
    return 2;
  }
  if (!input || (!output && !ptxOut && !gpuMlirOut)) {
    fprintf(stderr, "piper-compile: error: %s; see piper-compile --help\n",
            !input ? "no input model given" : "no output given (-o OUTPUT)");
    return 2;
  }

  char *text = piperReadInput(input, NULL);
  if (!text) return 1;
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  piperAttachDiagnosticPrinter(ctx, stderr, NULL);
  MlirModule module = piperParseAndVerify(ctx, text, strcmp(input, "-") ? input : "<stdin>");
  free(text);
  if (mlirModuleIsNull(module)) return 1;

  if (tgt != piperTargetDefault()) /* the lowering reads the target from the module */
    mlirOperationSetAttributeByName(mlirModuleGetOperation(module), piperStr("piper.target"),
                                    mlirStringAttrGet(ctx, piperStr(tgt->name)));
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  mlirPassManagerAddOwnedPass(pm, piperCreateAutodiffPass(NULL));
  if (strategy) {
    MlirPass passes[PIPER_STRATEGY_PASSES];
    int n = piperStrategyPasses(strategy, passes, PIPER_STRATEGY_PASSES);
    for (int k = 0; k < n; ++k) mlirPassManagerAddOwnedPass(pm, passes[k]);
    mlirPassManagerAddOwnedPass(pm, piperCreateExtractPass(NULL));
    mlirPassManagerAddOwnedPass(pm, piperCreateVerifyPlanPass(NULL));
  }
  mlirPassManagerAddOwnedPass(pm, piperCreateLowerToLLVMPass(NULL));
  MlirOperation op = mlirModuleGetOperation(module);
  int rc = mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op));
  mlirPassManagerDestroy(pm);
  if (!rc && tgt->deviceCode) rc = emitDeviceCode(op, gpuArch, ptxOut, gpuMlirOut, output != NULL);
  if (!output) { /* only device code was asked for */
    mlirModuleDestroy(module);
    mlirContextDestroy(ctx);
    return rc;
  }

  if (!rc && !strcmp(emit, "mlir")) {
    PiperOutput out;
    rc = 1;
    if (piperOutputOpen(&out, output)) {
      mlirOperationPrint(op, printToFile, out.file);
      fputc('\n', out.file);
      rc = piperOutputCommit(&out, true);
    }
  } else if (!rc && strcmp(emit, "exe")) {
    rc = piperEmitModule(op, output, emit);
  } else if (!rc) {
    char libDir[PATH_MAX], libFlag[PATH_MAX + 2];
    PiperOutput exe;
    if (!piperOutputPrepare(&exe, output)) {
      mlirModuleDestroy(module);
      mlirContextDestroy(ctx);
      return 1;
    }
    char *tmpExe = exe.tmp;
    /* The object goes next to the executable's unique temporary (any length, never a fixed,
     * guessable name), and is removed once linked. */
    size_t objLen = strlen(tmpExe) + 3;
    char *obj = malloc(objLen);
    if (!obj) {
      fprintf(stderr, "piper-compile: error: out of memory naming '%s'\n", output);
      piperOutputCommit(&exe, false);
      mlirModuleDestroy(module);
      mlirContextDestroy(ctx);
      return 1;
    }
    snprintf(obj, objLen, "%s.o", tmpExe);
    runtimeLibDir(libDir, sizeof libDir);
    snprintf(libFlag, sizeof libFlag, "-L%s", libDir);
    rc = piperEmitModule(op, obj, "obj");
    if (!rc) {
      /* A plan for several devices talks MPI; one device links the serial backend. The build
       * writes each backend's full library list (runtime + its dependencies) to a file. */
      int64_t devices = 1;
      MlirAttribute d = mlirOperationGetAttributeByName(op, piperStr("piper.devices"));
      if (!mlirAttributeIsNull(d)) devices = mlirIntegerAttrGetValueInt(d);
      char *link[64] = {(char *)cc, "-o", tmpExe, obj, libFlag};
      int n = 5;
      char linkFile[PATH_MAX + 32], lines[48][PATH_MAX];
      int several = devices > 1;
      snprintf(linkFile, sizeof linkFile, "%s/piper_rt_%s.link", libDir,
               tgt->link[several].file);
      FILE *f = fopen(linkFile, "r");
      if (!f) {
        fprintf(stderr, "piper-compile: error: cannot read %s (the runtime's link flags, written "
                        "by the build); rebuild piper%s\n", linkFile,
                tgt->link[several].rebuild);
        rc = 1;
      }
      for (int k = 0; f && k < 48 && n < 62 && fgets(lines[k], sizeof lines[k], f); ++k) {
        lines[k][strcspn(lines[k], "\n")] = 0;
        if (lines[k][0]) link[n++] = lines[k];
      }
      if (f) fclose(f);
      link[n] = NULL;
      if (!rc) rc = run(link);
      if (rc) fprintf(stderr, "piper-compile: error: linking '%s' failed (runtime libraries "
                              "looked up in %s)\n", output, libDir);
    }
    remove(obj);
    free(obj);
    rc = piperOutputCommit(&exe, rc == 0) || rc;
  }
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return rc;
}
