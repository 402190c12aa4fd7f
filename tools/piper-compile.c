/* piper-compile: model.mlir -> an ahead-of-time compiled training binary.
 *   parse + verify -> --piper-fuse -> --piper-autodiff -> --piper-lower-to-llvm -> LLVM IR
 *   -> x86-64 object
 *   -> linked with libpiper_rt (and its main) by the system C compiler driver.
 * --target cuda: the host plan calls libpiper_rt_cuda, and the device kernels it needs
 *   (lowering/gpu_kernels.c) go gpu dialect -> NVVM -> PTX (lowering/emit_ptx.c), embedded in
 *   the binary as piper_ptx; piper-compile itself links no CUDA library.
 * Exit codes: 0 success, 1 bad input or a failed step, 2 bad command line. */
#include <libgen.h>
#include <limits.h>
#include <spawn.h>
#include <stddef.h>
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
          "                     [--emit-gpu-mlir FILE] [--precision fp32|bf16]\n"
          "                     [--grad-reduce fp32|bf16] [--bf16-io native|convert]\n"
          "                     [--no-fuse] [--fusion-report[=FILE]]\n"
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
          "  --precision P  fp32 (default) or bf16: mixed precision, activations and their\n"
          "                 gradients stored in bf16, matmul weights rounded to bf16, fp32\n"
          "                 master weights, optimizer state, gradients and statistics (the CPU\n"
          "                 target emulates it exactly; docs/mixed-precision.md)\n"
          "  --grad-reduce G  fp32 (default) or bf16: data-parallel gradient all-reduces and\n"
          "                 ZeRO reduce-scatters move bf16, half the bytes (each replica's\n"
          "                 gradient rounded, pairs summed in fp32, the sum widened back to\n"
          "                 fp32 for AdamW); the CPU target (MPI) only\n"
          "  --bf16-io I    with --target cuda --precision bf16: native (default): the GPU\n"
          "                 kernels load and store bf16 themselves (fp32 inside); convert:\n"
          "                 every kernel sees fp32 and the plan converts around it (the CPU\n"
          "                 target's way, kept as the reference the native plan is checked\n"
          "                 against bit for bit: test/gpu/fake-cuda-bf16-io.test)\n"
          "  --no-fuse      skip --piper-fuse, which otherwise runs first and folds general-op\n"
          "                 chains (a model python/piper exported) into the fused ops\n"
          "  --fusion-report[=FILE]  write what --piper-fuse fused, per module path or source\n"
          "                 line, and for each chain left unfused the op that stopped it, to\n"
          "                 FILE (default: stdout)\n"
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
static int emitDeviceCode(MlirOperation module, const PiperCodegen *cg, const char *arch,
                          const char *ptxOut, const char *gpuMlirOut, bool embed) {
  char *text = cg->deviceModule(module);
  if (!text) return 1;
  int rc = gpuMlirOut ? writeText(gpuMlirOut, text) : 0;
  char *ptx = rc || (!ptxOut && !embed) ? NULL : cg->assemble(text, arch, NULL);
  if (!rc && (ptxOut || embed) && !ptx) rc = 1;
  if (!rc && ptxOut) rc = writeText(ptxOut, ptx);
  if (!rc && embed) cg->embed(module, ptx);
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

/* What the command line asks for. */
typedef struct {
  const char *input, *output; /* the model; the file to write (NULL: only device code) */
  const char *emit;           /* exe, obj, asm, ll or mlir */
  const char *strategy;       /* a Piper JSON or sched-dialect strategy, or NULL */
  const char *target;         /* cpu or cuda */
  const char *gpuArch;        /* the PTX's sm_NN under --target cuda; NULL: the default */
  const char *ptxOut, *gpuMlirOut; /* where the PTX / gpu-dialect kernels go, or NULL */
  const char *cc;             /* the C compiler driver that links */
  const char *precision;      /* fp32 or bf16 (--piper-precision) */
  const char *bf16Io;         /* --bf16-io: native, convert, or NULL (the target's way) */
  const char *gradReduce;     /* fp32 or bf16 (--piper-grad-reduce) */
  bool noFuse;                /* --no-fuse: leave general-op chains unfused (bench/ measures) */
  const char *fusionReport;   /* --fusion-report: where the fusion report goes ("-": stdout),
                                 or NULL */
} Options;

/* True if `flag` takes its value as the next argument and names one of the target slots. */
static bool isTargetFlag(const char *flag) {
  return !strcmp(flag, "--target") || !strcmp(flag, "--gpu-arch") ||
         !strcmp(flag, "--emit-ptx") || !strcmp(flag, "--emit-gpu-mlir");
}

/* The flags whose value is one of two words: the option each sets, and its two words. */
static const struct {
  const char *flag;
  size_t slot; /* offsetof(Options, ...) */
  const char *words[2];
} choiceFlags[] = {
    {"--precision", offsetof(Options, precision), {"fp32", "bf16"}},
    {"--bf16-io", offsetof(Options, bf16Io), {"native", "convert"}},
    {"--grad-reduce", offsetof(Options, gradReduce), {"fp32", "bf16"}},
};

/* Choice flag c's value v (NULL: none given) into `o`: 0, or 2 with the error printed. */
static int parseChoice(Options *o, size_t c, const char *v) {
  const char *flag = choiceFlags[c].flag, *const *words = choiceFlags[c].words;
  if (!v) {
    fprintf(stderr, "piper-compile: error: %s needs a value (%s or %s)\n", flag, words[0],
            words[1]);
    return 2;
  }
  if (strcmp(v, words[0]) && strcmp(v, words[1])) {
    fprintf(stderr, "piper-compile: error: %s %s: expected %s or %s\n", flag, v, words[0],
            words[1]);
    return 2;
  }
  *(const char **)((char *)o + choiceFlags[c].slot) = v;
  return 0;
}

/* One argument (and its value) into `o`: 0 to go on, 1 for --help (done), 2 for an error
 * already printed. `*i` moves past a value it consumed. */
static int parseArg(Options *o, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  bool hasValue = *i + 1 < argc;
  for (size_t c = 0; c < sizeof choiceFlags / sizeof *choiceFlags; c++)
    if (!strcmp(a, choiceFlags[c].flag))
      return parseChoice(o, c, hasValue ? argv[++*i] : NULL);
  if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
    usage(stdout);
    return 1;
  } else if (!strcmp(a, "-o") && hasValue) {
    o->output = argv[++*i];
  } else if (!strncmp(a, "--emit=", 7)) {
    o->emit = a + 7;
    if (strcmp(o->emit, "exe") && strcmp(o->emit, "obj") && strcmp(o->emit, "asm") &&
        strcmp(o->emit, "ll") && strcmp(o->emit, "mlir")) {
      fprintf(stderr, "piper-compile: error: --emit=%s: expected exe, obj, asm, ll or mlir\n",
              o->emit);
      return 2;
    }
  } else if (!strcmp(a, "--strategy") && hasValue) {
    o->strategy = argv[++*i];
  } else if (!strcmp(a, "--no-fuse")) {
    o->noFuse = true;
  } else if (!strcmp(a, "--fusion-report")) {
    o->fusionReport = "-";
  } else if (!strncmp(a, "--fusion-report=", 16) && a[16]) {
    o->fusionReport = a + 16;
  } else if (isTargetFlag(a) && hasValue) {
    const char **slot = a[2] == 't' ? &o->target : a[2] == 'g' ? &o->gpuArch
                        : !strcmp(a, "--emit-ptx") ? &o->ptxOut : &o->gpuMlirOut;
    *slot = argv[++*i];
  } else if (isTargetFlag(a) || !strcmp(a, "--strategy=") || !strcmp(a, "--cc=")) {
    fprintf(stderr, "piper-compile: error: %s needs a value\n", a);
    return 2;
  } else if (!strncmp(a, "--strategy=", 11)) {
    o->strategy = a + 11;
  } else if (!strncmp(a, "--cc=", 5)) {
    o->cc = a + 5;
  } else if (!strcmp(a, "-o") || !strcmp(a, "--strategy")) {
    fprintf(stderr, "piper-compile: error: %s needs a value (%s)\n", a,
            a[1] == 'o' ? "-o OUTPUT" : "--strategy FILE");
    return 2;
  } else if (a[0] == '-' && a[1]) {
    fprintf(stderr, "piper-compile: error: unknown option '%s'; see piper-compile --help\n", a);
    return 2;
  } else if (o->input) {
    fprintf(stderr, "piper-compile: error: more than one input ('%s', '%s')\n", o->input, a);
    return 2;
  } else {
    o->input = a;
  }
  return 0;
}

/* The chip the device code is for: --gpu-arch, else the target's code generator's default. */
static const char *gpuArch(const Options *o, const PiperTarget *tgt) {
  return o->gpuArch ? o->gpuArch : tgt->codegen->defaultArch;
}

/* The options that only make sense together; the target record, or NULL after an error. */
static const PiperTarget *checkOptions(const Options *o) {
  const PiperTarget *tgt = piperTargetNamed(piperStr(o->target));
  if (!tgt) {
    fprintf(stderr, "piper-compile: error: --target %s: expected %s\n", o->target,
            piperTargetNames());
    return NULL;
  }
  if (!tgt->codegen && (o->ptxOut || o->gpuMlirOut)) {
    fprintf(stderr, "piper-compile: error: %s needs --target cuda\n",
            o->ptxOut ? "--emit-ptx" : "--emit-gpu-mlir");
    return NULL;
  }
  if (tgt->codegen && !tgt->codegen->archValid(gpuArch(o, tgt))) {
    fprintf(stderr, "piper-compile: error: --gpu-arch %s: expected sm_NN with NN >= 50 "
                    "(sm_80: A100, sm_90: H100)\n", gpuArch(o, tgt));
    return NULL;
  }
  if (o->noFuse && o->fusionReport) {
    fprintf(stderr, "piper-compile: error: --fusion-report reports what --piper-fuse did; drop "
                    "--no-fuse\n");
    return NULL;
  }
  if (o->bf16Io && (!tgt->bf16Io || strcmp(o->precision, "bf16"))) {
    fprintf(stderr, "piper-compile: error: --bf16-io %s needs --precision bf16 and a target "
                    "whose kernels read bf16 (--target cuda); the CPU target always converts\n",
            o->bf16Io);
    return NULL;
  }
  if (!o->input || (!o->output && !o->ptxOut && !o->gpuMlirOut)) {
    fprintf(stderr, "piper-compile: error: %s; see piper-compile --help\n",
            !o->input ? "no input model given" : "no output given (-o OUTPUT)");
    return NULL;
  }
  return tgt;
}

/* The one pipeline (passes/pipeline.c): fuse -> autodiff -> the strategy's passes ->
 * precision, grad-reduce (bf16 only) -> extract, order-p2p (GPU targets) and verify-plan (with
 * --strategy); then the lowering, and the device code under a GPU target. 0 on success. */
static int compileModule(MlirOperation op, const Options *o, const PiperTarget *tgt) {
  MlirContext ctx = mlirOperationGetContext(op);
  if (tgt != piperTargetDefault()) /* the lowering reads the target from the module */
    mlirOperationSetAttributeByName(op, piperStr("piper.target"),
                                    mlirStringAttrGet(ctx, piperStr(tgt->name)));
  if (o->bf16Io && !strcmp(o->bf16Io, "convert")) /* the lowering reads it from the module */
    mlirOperationSetAttributeByName(op, piperStr("piper.bf16_io"),
                                    mlirStringAttrGet(ctx, piperStr("convert")));
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  PiperPipeline pipeline = {.fuse = !o->noFuse, .fusionReport = o->fusionReport,
                            .strategy = o->strategy, .precision = o->precision,
                            .gradReduce = o->gradReduce, .extract = o->strategy != NULL,
                            .orderP2p = tgt->p2pInOrder, .verifyPlan = true};
  piperAddTrainingPasses(pm, &pipeline);
  piperAddPlanPasses(pm, &pipeline);
  mlirPassManagerAddOwnedPass(pm, piperCreateLowerToLLVMPass(NULL));
  int rc = mlirLogicalResultIsFailure(mlirPassManagerRunOnOp(pm, op));
  mlirPassManagerDestroy(pm);
  if (!rc && tgt->codegen)
    rc = emitDeviceCode(op, tgt->codegen, gpuArch(o, tgt), o->ptxOut, o->gpuMlirOut,
                        o->output != NULL);
  return rc;
}

/* The most arguments a runtime .link file may hold; a longer one is refused, not cut. */
enum { LINK_FILE_LINES = 48 };

/* `cc -o exe obj -L<libDir> <the target's link file, one argument a line>`; 0 once linked. A
 * plan for several devices links the multi-device backend (MPI), one device the serial one;
 * the build writes each backend's full library list (runtime + its dependencies) to a file. */
static int linkExecutable(MlirOperation op, const Options *o, const PiperTarget *tgt,
                          const char *obj, const char *exe) {
  char libDir[PATH_MAX], libFlag[PATH_MAX + 2];
  runtimeLibDir(libDir, sizeof libDir);
  snprintf(libFlag, sizeof libFlag, "-L%s", libDir);
  int64_t devices = 1;
  MlirAttribute d = mlirOperationGetAttributeByName(op, piperStr("piper.devices"));
  if (!mlirAttributeIsNull(d)) devices = mlirIntegerAttrGetValueInt(d);
  int several = devices > 1;
  char linkFile[PATH_MAX + 32];
  snprintf(linkFile, sizeof linkFile, "%s/piper_rt_%s.link", libDir, tgt->link[several].file);
  FILE *f = fopen(linkFile, "r");
  if (!f) {
    fprintf(stderr, "piper-compile: error: cannot read %s (the runtime's link flags, written "
                    "by the build); rebuild piper%s\n", linkFile, tgt->link[several].rebuild);
    return 1;
  }
  static char lines[LINK_FILE_LINES + 1][PATH_MAX];
  char *link[LINK_FILE_LINES + 6] = {(char *)o->cc, "-o", (char *)exe, (char *)obj, libFlag};
  int n = 5, k = 0, rc = 0;
  for (; k <= LINK_FILE_LINES && fgets(lines[k], sizeof lines[k], f); ++k) {
    lines[k][strcspn(lines[k], "\n")] = 0;
    if (lines[k][0]) link[n++] = lines[k];
  }
  fclose(f);
  if (k > LINK_FILE_LINES) {
    fprintf(stderr, "piper-compile: error: %s holds more than %d arguments; rebuild piper, "
                    "or raise LINK_FILE_LINES in tools/piper-compile.c\n", linkFile,
            LINK_FILE_LINES);
    return 1;
  }
  link[n] = NULL;
  rc = run(link);
  if (rc) fprintf(stderr, "piper-compile: error: linking '%s' failed (runtime libraries "
                          "looked up in %s)\n", o->output, libDir);
  return rc;
}

/* The lowered module -> the executable -o names: an object beside the executable's unique
 * temporary (any length, never a fixed, guessable name), linked, removed, and the executable
 * renamed into place only when the link succeeded. */
static int writeExecutable(MlirOperation op, const Options *o, const PiperTarget *tgt) {
  PiperOutput exe;
  if (!piperOutputPrepare(&exe, o->output)) return 1;
  size_t objLen = strlen(exe.tmp) + 3;
  char *obj = malloc(objLen);
  if (!obj) {
    fprintf(stderr, "piper-compile: error: out of memory naming '%s'\n", o->output);
    piperOutputCommit(&exe, false);
    return 1;
  }
  snprintf(obj, objLen, "%s.o", exe.tmp);
  int rc = piperEmitModule(op, obj, "obj");
  if (!rc) rc = linkExecutable(op, o, tgt, obj, exe.tmp);
  remove(obj);
  free(obj);
  return piperOutputCommit(&exe, rc == 0) || rc;
}

/* -o in the form --emit asks for. */
static int writeOutput(MlirOperation op, const Options *o, const PiperTarget *tgt) {
  if (!strcmp(o->emit, "mlir")) {
    PiperOutput out;
    if (!piperOutputOpen(&out, o->output)) return 1;
    mlirOperationPrint(op, printToFile, out.file);
    fputc('\n', out.file);
    return piperOutputCommit(&out, true);
  }
  if (strcmp(o->emit, "exe")) return piperEmitModule(op, o->output, o->emit);
  return writeExecutable(op, o, tgt);
}

int main(int argc, char **argv) {
  Options o = {.emit = "exe", .target = "cpu", .precision = "fp32",
               .gradReduce = "fp32",
               .cc = getenv("CC") ? getenv("CC") : "cc"};
  for (int i = 1; i < argc; ++i) {
    int rc = parseArg(&o, argc, argv, &i);
    if (rc) return rc == 1 ? 0 : rc;
  }
  const PiperTarget *tgt = checkOptions(&o);
  if (!tgt) return 2;

  char *text = piperReadInput(o.input, NULL);
  if (!text) return 1;
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  piperAttachDiagnosticPrinter(ctx, stderr, NULL);
  MlirModule module = piperParseAndVerify(ctx, text, strcmp(o.input, "-") ? o.input : "<stdin>");
  free(text);
  if (mlirModuleIsNull(module)) return 1;
  MlirOperation op = mlirModuleGetOperation(module);
  int rc = compileModule(op, &o, tgt);
  if (!rc && o.output) rc = writeOutput(op, &o, tgt);
  mlirModuleDestroy(module);
  mlirContextDestroy(ctx);
  return rc;
}
