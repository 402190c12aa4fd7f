/* Piper's compiler API: the context with piper's dialects loaded, helpers to build and query
 * tdag ops, the pass registry, and code emission. Used by the tools (piper-opt, piper-compile)
 * and by every pass. Naming follows the MLIR C API: ...Create owns, ...Get borrows. */
#ifndef PIPER_PIPER_H
#define PIPER_PIPER_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "mlir-c/IR.h"
#include "mlir-c/Diagnostics.h"
#include "mlir-c/Pass.h"
#include "piper/base/atomic_file.h"
#include "piper/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device ids are in [0, PIPER_MAX_DEVICES): the strategy importer, the devices verifier and
 * place agree on this bound, so a plan never indexes a per-device table with a hostile id.
 * 2^20 = 1,048,576 devices, the largest clusters being built; a count of devices fits int32,
 * a product of counts (devices x microbatches, rows x features) is taken in int64. */
enum { PIPER_MAX_DEVICES = 1 << 20 };

/* ---- dialects/dialects.c ---- */

/* A context with the upstream dialects (builtin, func, llvm, ...) registered and piper's IRDL
 * dialects (tdag, comm, sched) loaded. Returns a null context if the embedded IRDL failed to
 * load, which is a build defect. Destroy with mlirContextDestroy. */
MlirContext piperContextCreate(void);

/* The IRDL text of piper's dialects as piperContextCreate loads it, one module: tdag generated
 * from include/piper/tdag_ops.def, then comm and sched. Owned by the caller (free); NULL after
 * printing why (a malformed list entry, out of memory). */
char *piperIrdlSourceCreate(void);

/* Prints every diagnostic of `ctx` to `out` as `file:line:col: error: message`, the form lit
 * tests match; returns the handler id. `errorCount` (may be NULL) counts errors. */
MlirDiagnosticHandlerID piperAttachDiagnosticPrinter(MlirContext ctx, FILE *out,
                                                      int *errorCount);

/* ---- dialects/parse.c ---- */
/* The whole of `path` ("-" = stdin) as a NUL-terminated string, or NULL after printing an
 * error that names the file. *len (may be NULL) gets the length. Free with free(). */
char *piperReadInput(const char *path, size_t *len);
/* Parses `text` as a module whose locations name `sourceName` (a file of several top-level ops
 * is wrapped in a module, keeping line numbers); null module on failure, with the diagnostics
 * already out. Then verifies IRDL constraints and tdag shapes. */
MlirModule piperParseAndVerify(MlirContext ctx, const char *text, const char *sourceName);

/* Where output goes: through the base library's atomic file (piper/base/atomic_file.h). A
 * regular or new file is written as a new temporary next to it (unnamed where the file system
 * allows, else a unique `path.XXXXXX` created O_EXCL|O_NOFOLLOW, so a symlink planted there is
 * never followed), synced and renamed over `path` only on success, so a failure, SIGINT or
 * SIGTERM never leaves a partial file or a stray temporary; anything else that exists
 * (/dev/null, a pipe, /dev/stdout) is written in place and never renamed over. */
typedef struct {
  FILE *file;        /* open for writing (piperOutputOpen), or NULL */
  char *tmp;         /* the name to write (piperOutputPrepare): the temporary, or the
                        destination itself in place; borrowed from `out` */
  pb_atomic_file out; /* the temporary and its destination */
} PiperOutput;
/* Opens `o` for `path`; prints an error naming it and returns false on failure (nothing to
 * commit then). */
bool piperOutputOpen(PiperOutput *o, const char *path);
/* Creates the file to write for `path` (the temporary, or path in place) without keeping it
 * open, for writers that take a name (LLVM's emitters, the linker); then piperOutputCommit.
 * Prints an error and returns false if it cannot. */
bool piperOutputPrepare(PiperOutput *o, const char *path);
/* Closes the file if open; on `ok` moves it into place, otherwise removes it; frees o's
 * names. Returns 0 on success, 1 (after printing an error) if the output could not be
 * completed. */
int piperOutputCommit(PiperOutput *o, bool ok);

/* ---- dialects/sched_import.c ---- */
/* Appends one sched op per directive of the JSON strategy `text` (read from `path`, which
 * names the locations) to `module`. Emits a diagnostic at the directive's line:col for each
 * malformed directive and returns failure if there was any. */
MlirLogicalResult piperImportStrategyJSON(MlirModule module, const char *path, const char *text);

/* ---- dialects/device_list.c: device lists ----
 * The `devices`, `group` and `peers` attributes and the directives' device fields hold device
 * lists, in one of two forms with one meaning:
 *   [0 : i64, 2 : i64, 4 : i64]          an array of device ids, in any order;
 *   array<i64: START, COUNT, STEP, RUN>   a range: the ids START + i*STEP + j, i < COUNT,
 *                                        j < RUN (COUNT*RUN ids, ascending: 1 <= RUN <= STEP).
 * The lists the compiler builds are canonical (piperDeviceListGet): a range when the ids are
 * more than PIPER_LIST_EXPLICIT_MAX and, ascending, form one; the array otherwise. Equal
 * canonical lists are then one uniqued attribute, and a plan over a million devices holds four
 * numbers per list instead of a million integer attributes (the data-parallel replicas of a
 * stage are START + i*STEP; under tensor parallelism runs of RUN consecutive ids). */
enum { PIPER_LIST_EXPLICIT_MAX = 64 };
typedef struct {
  int64_t start, count, step, run; /* ids start + i*step + j, i < count, j < run */
} PiperRange;
/* `a` is a range attribute (array<i64: ...> of four), read into *r (may be NULL). Does not
 * check the fields: piperDeviceListCheck does. */
bool piperDeviceListIsRange(MlirAttribute a, PiperRange *r);
/* `a` is a device list: a non-empty array of integers or a range, every id in [0, limit). */
bool piperDeviceListCheck(MlirAttribute a, int64_t limit);
/* The number of ids in a device list (either form); 0 for anything else. */
intptr_t piperDeviceListLen(MlirAttribute a);
/* Id i of a device list (0 <= i < piperDeviceListLen). */
int64_t piperDeviceListAt(MlirAttribute a, intptr_t i);
/* The position of id d in a device list, or -1: O(1) for a range, a scan for an array. */
intptr_t piperDeviceListFind(MlirAttribute a, int64_t d);
/* The ids of a device list into a new array (owned; NULL when out of memory or empty). */
int64_t *piperDeviceListIds(MlirAttribute a, intptr_t *n);
/* The canonical list of n ids in the order given (a range only when ascending). */
MlirAttribute piperDeviceListGet(MlirContext ctx, const int64_t *ids, intptr_t n);
/* The canonical list of a range (an array when it is short). */
MlirAttribute piperDeviceRangeGet(MlirContext ctx, PiperRange r);
/* Whether two device lists hold the same ids in the same order (either form). */
bool piperDeviceListEqual(MlirAttribute a, MlirAttribute b);

/* ---- dialects/tdag.c: building and querying ops ---- */

static inline MlirStringRef piperStr(const char *s) { return mlirStringRefCreateFromCString(s); }

/* True if `op` is named `name` (e.g. "tdag.linear"). */
bool piperOpIs(MlirOperation op, const char *name);
/* True if `op` belongs to dialect `dialect` ("tdag"). */
bool piperOpInDialect(MlirOperation op, const char *dialect);
/* Creates (unowned, not inserted) an op from its parts: the generic builder. */
MlirOperation piperOpCreate(const char *name, MlirLocation loc, intptr_t nOperands,
                            const MlirValue *operands, intptr_t nResults,
                            const MlirType *results, intptr_t nAttrs,
                            const MlirNamedAttribute *attrs);
MlirNamedAttribute piperNamedAttr(MlirContext ctx, const char *name, MlirAttribute attr);
/* The ranked tensor type `t` with element type `elem` (shape and encoding kept); a null type
 * past 16 dims, which no tdag value has. */
MlirType piperTensorWithElement(MlirType t, MlirType elem);
/* Gives `to`, an op a pass inserts for `from`, the placement `from` has (its tags, pass and
 * devices), so the later passes place and split it as they do `from`. */
void piperCopyPlacement(MlirOperation to, MlirOperation from);
/* A string attribute of `op` copied into `buf` (NUL-terminated); false if absent. */
bool piperGetStringAttr(MlirOperation op, const char *name, char *buf, size_t size);
/* An integer attribute of `op`, or `fallback` if absent. */
int64_t piperGetIntAttr(MlirOperation op, const char *name, int64_t fallback);
/* A float attribute of `op`, or `fallback` if absent. */
double piperGetFloatAttr(MlirOperation op, const char *name, double fallback);

/* The `perm` of a tdag.permute (a dense i64 array attribute) into perm[0..rank); false if it
 * is absent, not `rank` long, or not a permutation of 0..rank-1 (rank <= PIPER_MAX_RANK). */
enum { PIPER_MAX_RANK = 8 };
bool piperPermuteOf(MlirOperation op, int64_t rank, int64_t *perm);

/* mlirEmitError with a printf-style message. */
void piperEmitErrorV(MlirLocation loc, const char *fmt, va_list ap);
void piperEmitErrorf(MlirLocation loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A note that belongs to the error emitted just before it (e.g. the directive that caused it).
 * LLVM 22's C API can emit only errors (mlirEmitError) and cannot attach notes, so a note is
 * an error whose message starts with PIPER_NOTE_MARKER; piper's diagnostic printer and
 * --verify-diagnostics report it as a note and do not count it as an error. */
#define PIPER_NOTE_MARKER "\x1fpiper-note\x1f"
void piperEmitNotef(MlirLocation loc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The severity of `d`, counting a PIPER_NOTE_MARKER error as a note; `*skip` (may be NULL)
 * gets how many leading bytes of its message are the marker. */
MlirDiagnosticSeverity piperDiagnosticSeverity(MlirDiagnostic d, size_t *skip);

/* The name of the global-DAG node `op` belongs to: its pass ("F" when absent) and tags,
 * e.g. "B PP=1 layer=3 mb=2"; used for trace spans and DAG drawings. */
void piperNodeLabel(MlirOperation op, char *buf, size_t size);

/* d if `name` is exactly "device_<d>" (decimal, no sign, no leading zeros, below
 * PIPER_MAX_DEVICES): the per-device plan functions --piper-extract writes; else -1. */
int64_t piperDeviceFunctionNumber(MlirStringRef name);
/* The same rule for any plan-function prefix ("device_", "role_"): n if `name` is exactly
 * `prefix` followed by n, else -1. */
int64_t piperPlanFunctionNumber(MlirStringRef name, const char *prefix);

/* Ranked tensor helpers. numel of a 0-d tensor is 1; -1 if the count overflows int64 (the
 * verifier refuses such types, so passes that run on verified IR never see -1). */
int64_t piperTensorRank(MlirType t);
int64_t piperTensorDim(MlirType t, int64_t i);
int64_t piperTensorNumel(MlirType t);
bool piperTensorIsF32(MlirType t);
bool piperTensorIsI32(MlirType t);
/* The ranked tensor type shape[0..rank) of elem, without an encoding. */
MlirType piperTensorType(MlirContext ctx, int64_t rank, const int64_t *shape, MlirType elem);
bool piperTensorIsBf16(MlirType t);

/* Checks what IRDL cannot: tensor element types and that shapes agree for every tdag op, e.g.
 * linear's x(...,K) against weight(N,K). Emits an error at the op's location per problem. */
MlirLogicalResult piperVerifyTdag(MlirOperation root);

/* ---- dialects/module_pass.c (the registry of passes by name: tools/registry.h) ---- */

/* Wraps `run` as an MLIR external pass anchored on builtin.module. `run` returns failure
 * after emitting diagnostics; the pass manager then stops. `typeId` is any 8-byte aligned
 * static unique to the pass; `arg` (copied, may be NULL) is handed to every run. */
typedef MlirLogicalResult (*PiperModuleRunFn)(MlirOperation module, const char *arg);
MlirPass piperCreateModulePass(void *typeId, const char *name, const char *summary,
                               PiperModuleRunFn run, const char *arg);

/* ---- passes ---- */
/* Forward graph -> training graph: appends backward ops and AdamW updates. */
MlirLogicalResult piperAutodiff(MlirOperation module);
/* --piper-fuse (passes/fuse.c): general-op chains (python/piper's exports) folded into the
 * fused ops: attention, rmsnorm, gelu, swiglu. piper-compile runs it first. */
MlirLogicalResult piperFuse(MlirOperation module);
MlirPass piperCreateFusePass(const char *arg);
MlirPass piperCreateAutodiffPass(const char *arg);
MlirPass piperCreateVerifyPass(const char *arg);
/* Appends the directives of a JSON or .mlir strategy file (the pass argument) as sched ops. */
MlirPass piperCreateImportStrategyPass(const char *arg);
/* The pass's work on text already read: `path` (which names the locations) ending in .mlir
 * means a module of sched ops, anything else a Piper JSON strategy. */
MlirLogicalResult piperImportStrategyText(MlirOperation module, const char *path,
                                          const char *text);
/* Directive passes, in Piper's order (passes/strategy.h describes the IR they share). */
MlirPass piperCreateSplitPass(const char *arg);
MlirPass piperCreateSplitBackwardPass(const char *arg);
MlirPass piperCreatePlacePass(const char *arg);
MlirPass piperCreateShardPass(const char *arg);
MlirPass piperCreateInsertCommPass(const char *arg);
MlirPass piperCreateReplicatePass(const char *arg);
MlirPass piperCreateShardTensorPass(const char *arg);
MlirPass piperCreateShardSequencePass(const char *arg);
MlirPass piperCreateExtractPass(const char *arg);
MlirPass piperCreateVerifyPlanPass(const char *arg);
/* --piper-order-p2p (passes/order_p2p.c): each pair's receives in its sender's send order, for
 * a transport without tags (NCCL); marks the module piper.p2p_order = "fifo". */
MlirPass piperCreateOrderP2pPass(const char *arg);
MlirPass piperCreatePrintDagPass(const char *arg);
/* --piper-precision=fp32|bf16 (passes/precision.c): the bf16 mixed-precision policy of the
 * op-facts table as element types; fp32 (the default) changes nothing. */
MlirPass piperCreatePrecisionPass(const char *arg);
/* --piper-grad-reduce=fp32|bf16 (passes/grad_reduce.c): gradient all-reduces and ZeRO
 * reduce-scatters move bf16 (each replica's gradient rounded, summed pairwise in fp32, widened
 * back to fp32 for the update); fp32 (the default) changes nothing. */
MlirPass piperCreateGradReducePass(const char *arg);

/* ---- lowering ---- */
/* Training graph (tdag) -> llvm dialect: piper_setup and piper_step calling libpiper_rt. */
MlirLogicalResult piperLowerToLLVM(MlirOperation module);
MlirPass piperCreateLowerToLLVMPass(const char *arg);
/* llvm-dialect module -> LLVM IR -> file. `kind` is "obj", "asm" or "ll". Returns 0 on
 * success; otherwise prints `piper: error: ...` and returns non-zero. */
int piperEmitModule(MlirOperation module, const char *path, const char *kind);

/* ---- the GPU target (--target cuda): lowering/gpu_kernels.c, lowering/emit_ptx.c ---- */
/* The gpu-dialect module (MLIR text, owned by the caller) holding the device kernels that the
 * given libpiper_rt_cuda functions launch, and the math helpers; NULL when out of memory. */
char *piperGpuKernelModule(const char *const *runtimeFns, size_t nFns);
/* True if `runtimeFn` is a libpiper_rt_cuda function gpu_kernels.c knows. */
bool piperGpuRuntimeFnKnown(const char *runtimeFn);
/* True for an NVPTX arch name LLVM knows: sm_NN (NN >= 50), optionally with an `a` suffix. */
bool piperGpuArchValid(const char *arch);
/* The PTX text (owned by the caller) of the gpu-dialect module `mlirText` for `arch`; the
 * NVVM-level module is printed to dumpLowered when not NULL. NULL after a message on stderr. */
char *piperGpuKernelsToPtx(const char *mlirText, const char *arch, FILE *dumpLowered);
/* The gpu-dialect module of the kernels a lowered host module (--piper-lower-to-llvm with
 * piper.target = "cuda") calls: one per libpiper_rt_cuda function it declares. Owned; NULL
 * after a message. */
char *piperGpuModuleForHost(MlirOperation hostModule);
/* Adds `ptx` to the lowered host module as the NUL-terminated constant @piper_ptx, which
 * libpiper_rt_cuda's prt_cuda_setup loads at start-up (cudaLibraryLoadData). */
void piperEmbedPtx(MlirOperation hostModule, const char *ptx);

#ifdef __cplusplus
}
#endif
#endif
