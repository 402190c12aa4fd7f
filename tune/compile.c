/* One candidate through piper's own pipeline (passes/pipeline.c), in process, on a copy of
 * the training graph piper-compile builds (piperAddTrainingPasses: --piper-fuse, autodiff):
 *   piperAddPlanPasses (the strategy's passes: import, split, split-backward, place,
 *   shard_tensor, insert-comm, replicate; the precision policy) + extract
 *                                                                -> the per-device/role plans
 *   verify-plan                                                  -> dropped if it rejects them
 *   simulate (simulate.c) on those plans
 *   lower-to-llvm                                                -> each plan's arena, exact
 * Memory per device = its parameters + AdamW moments (their stored shards or TP slices) + the
 * arena the lowering's memory plan declares (prt_declare_arena in piper_setup_dev<d> or
 * piper_setup_role<p>): the figures the training binary's metrics summary reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"
#include "tune/tune.h"

const char *const tuneStatusNames[TUNE_DROP_COUNT] = {
    "ok", "refused by piper-sched", "refused by a strategy pass", "rejected by verify-plan",
    "over --memory"};

/* The first error of a run, kept for the drop reason. */
typedef struct {
  char text[512];
  int errors;
} FirstError;

static void appendText(MlirStringRef s, void *user) {
  FirstError *e = user;
  size_t n = strlen(e->text);
  if (n + 1 < sizeof e->text)
    snprintf(e->text + n, sizeof e->text - n, "%.*s", (int)s.length, s.data);
}

static MlirLogicalResult keepFirst(MlirDiagnostic d, void *user) {
  FirstError *e = user;
  size_t skip = 0;
  if (piperDiagnosticSeverity(d, &skip) != MlirDiagnosticError) return mlirLogicalResultSuccess();
  if (e->errors++ == 0) {
    e->text[0] = '\0';
    mlirDiagnosticPrint(d, appendText, e);
    if (skip && strlen(e->text) >= skip) memmove(e->text, e->text + skip, strlen(e->text) - skip + 1);
  }
  return mlirLogicalResultSuccess();
}

static bool runPasses(MlirOperation op, MlirPass *passes, int n) {
  MlirPassManager pm = mlirPassManagerCreate(mlirOperationGetContext(op));
  for (int i = 0; i < n; ++i) mlirPassManagerAddOwnedPass(pm, passes[i]);
  bool ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, op));
  mlirPassManagerDestroy(pm);
  return ok;
}

enum { MAX_UNITS = 1 << 16 };

/* Plan number of a function: role_<p> / device_<d>, or -1. */
static int64_t unitNumber(MlirOperation fn, bool roles) {
  MlirAttribute sym = mlirOperationGetAttributeByName(fn, piperStr("sym_name"));
  if (mlirAttributeIsNull(sym)) return -1;
  MlirStringRef name = mlirStringAttrGetValue(sym);
  return roles ? piperPlanFunctionNumber(name, "role_") : piperDeviceFunctionNumber(name);
}

static int64_t bytesOf(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? piperTensorNumel(t) * piperTensorElementBytes(t) : 0;
}

/* Stored bytes of a parameter or moment: its ZeRO shard (replica 0's, the largest) of the full
 * tensor when it has `shards`, else its (TP-local) type. */
static int64_t storedBytes(MlirOperation op) {
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
  int64_t R = piperGetIntAttr(op, "shards", 0);
  if (R < 1) return bytesOf(t);
  int64_t n = piperTensorNumel(t);
  if (piperIsOp(op, PIPER_TDAG_ADAM_STATE)) { /* a moment's type is the shard; the full tensor is
                                             its update's parameter */
    MlirValue v = mlirOperationGetResult(op, 0);
    MlirOpOperand use = mlirValueGetFirstUse(v);
    if (!mlirOpOperandIsNull(use))
      n = piperTensorNumel(mlirValueGetType(mlirOperationGetOperand(mlirOpOperandGetOwner(use), 0)));
  }
  return (n + R - 1) / R * piperTensorElementBytes(t);
}

/* Parameters and moments per plan function, before lowering replaces them. */
static void stateBytes(MlirOperation module, int64_t *params, int64_t *optim, int64_t units) {
  bool roles = piperGetIntAttr(module, "piper.roles", 0) > 0;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    int64_t u = unitNumber(f, roles);
    if (u < 0 && units == 1) u = 0;
    if (u < 0 || u >= units || !piperOpIs(f, "func.func")) continue;
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o)) {
      if (piperIsOp(o, PIPER_TDAG_PARAM)) params[u] += storedBytes(o);
      if (piperIsOp(o, PIPER_TDAG_ADAM_STATE)) optim[u] += storedBytes(o);
    }
  }
}

/* The constant operand `i` of `call`, or -1. */
static int64_t constOperand(MlirOperation call, intptr_t i) {
  if (mlirOperationGetNumOperands(call) <= i) return -1;
  MlirValue v = mlirOperationGetOperand(call, i);
  if (!mlirValueIsAOpResult(v)) return -1;
  MlirOperation c = mlirOpResultGetOwner(v);
  MlirAttribute a = mlirOperationGetAttributeByName(c, piperStr("value"));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : -1;
}

/* Each plan's declared arena, from the lowered module's piper_setup{,_dev<d>,_role<p>}. */
static void arenaBytes(MlirOperation module, int64_t *arena, int64_t units) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    MlirAttribute sym = mlirOperationGetAttributeByName(f, piperStr("sym_name"));
    if (mlirAttributeIsNull(sym) || mlirOperationGetNumRegions(f) < 1) continue;
    MlirStringRef name = mlirStringAttrGetValue(sym);
    int64_t u = -1;
    if (name.length == 11 && !strncmp(name.data, "piper_setup", 11)) u = units == 1 ? 0 : -1;
    else if (name.length > 15 && !strncmp(name.data, "piper_setup_dev", 15))
      u = piperPlanFunctionNumber(name, "piper_setup_dev");
    else if (name.length > 16 && !strncmp(name.data, "piper_setup_role", 16))
      u = piperPlanFunctionNumber(name, "piper_setup_role");
    if (u < 0 || u >= units) continue;
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
    for (MlirOperation o = mlirBlockIsNull(b) ? (MlirOperation){NULL} : mlirBlockGetFirstOperation(b);
         !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
      MlirAttribute callee = mlirOperationGetAttributeByName(o, piperStr("callee"));
      if (!piperOpIs(o, "llvm.call") || mlirAttributeIsNull(callee)) continue;
      MlirStringRef c = mlirFlatSymbolRefAttrGetValue(callee);
      if (c.length == 17 && !strncmp(c.data, "prt_declare_arena", 17))
        arena[u] = constOperand(o, 1);
    }
  }
}

bool tuneBuildTraining(MlirOperation module) {
  MlirPassManager pm = mlirPassManagerCreate(mlirOperationGetContext(module));
  PiperPipeline pipeline = {.fuse = true};
  piperAddTrainingPasses(pm, &pipeline);
  bool ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  mlirPassManagerDestroy(pm);
  return ok;
}

MlirModule tuneLoadTraining(MlirContext ctx, const char *path) {
  char *text = piperReadInput(path, NULL);
  if (!text) return (MlirModule){NULL};
  MlirModule module = piperParseAndVerify(ctx, text, strcmp(path, "-") ? path : "<stdin>");
  free(text);
  if (mlirModuleIsNull(module)) return module;
  if (!tuneBuildTraining(mlirModuleGetOperation(module))) {
    mlirModuleDestroy(module);
    return (MlirModule){NULL};
  }
  return module;
}

/* Writes `json` to a fresh file under $TMPDIR (or /tmp) whose name goes to path; false after
 * a reason in why. */
static bool writeTemp(const char *json, char *path, size_t size, char *why, size_t whySize) {
  const char *tmp = getenv("TMPDIR");
  for (int attempt = 0; attempt < 2; ++attempt) {
    snprintf(path, size, "%s/piper-tune-XXXXXX", attempt == 0 && tmp && *tmp ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) continue;
    bool ok = write(fd, json, strlen(json)) == (ssize_t)strlen(json);
    close(fd);
    if (ok) return true;
    unlink(path);
  }
  snprintf(why, whySize, "cannot write a temporary strategy file under $TMPDIR or /tmp");
  return false;
}

MlirOperation tuneCompilePlan(MlirOperation trainingModule, const char *json, TuneStatus *status,
                              char *why, size_t whySize) {
  char path[4096];
  *status = TUNE_OK;
  why[0] = '\0';
  if (!writeTemp(json, path, sizeof path, why, whySize)) {
    *status = TUNE_DROP_COMPILE;
    return (MlirOperation){NULL};
  }
  MlirContext ctx = mlirOperationGetContext(trainingModule);
  FirstError err = {{0}, 0};
  MlirDiagnosticHandlerID h = mlirContextAttachDiagnosticHandler(ctx, keepFirst, &err, NULL);
  MlirOperation module = mlirOperationClone(trainingModule);
  /* verify-plan apart, so a plan it rejects is told from one the strategy refused */
  PiperPipeline pipeline = {.strategy = path, .extract = true};
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  piperAddPlanPasses(pm, &pipeline);
  bool ok = mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, module));
  mlirPassManagerDestroy(pm);
  if (!ok) *status = TUNE_DROP_COMPILE;
  if (ok) { /* a pass is owned by the pass manager it joins: create it only to run it */
    MlirPass verify = piperCreateVerifyPlanPass(NULL);
    if (!(ok = runPasses(module, &verify, 1))) *status = TUNE_DROP_VERIFY;
  }
  mlirContextDetachDiagnosticHandler(ctx, h);
  unlink(path);
  if (ok) return module;
  snprintf(why, whySize, "%s", err.text[0] ? err.text : "failed without a message");
  mlirOperationDestroy(module);
  return (MlirOperation){NULL};
}

MlirOperation tuneCompileOrReport(const char *tool, MlirOperation trainingModule,
                                  const char *json, const char *what) {
  TuneStatus status;
  char why[512];
  MlirOperation plans = tuneCompilePlan(trainingModule, json, &status, why, sizeof why);
  if (mlirOperationIsNull(plans))
    fprintf(stderr, "%s: error: %s does not compile (%s): %s\n", tool, what,
            tuneStatusNames[status], why);
  return plans;
}

TuneResult tuneEvaluate(MlirOperation trainingModule, const TuneCandidate *c,
                        const TuneProfile *p, int64_t memoryBytes) {
  TuneResult r = {.status = TUNE_OK};
  MlirOperation module = tuneCompilePlan(trainingModule, c->json, &r.status, r.why, sizeof r.why);
  if (mlirOperationIsNull(module)) return r;
  MlirContext ctx = mlirOperationGetContext(trainingModule);
  FirstError err = {{0}, 0};
  MlirDiagnosticHandlerID h = mlirContextAttachDiagnosticHandler(ctx, keepFirst, &err, NULL);
  bool ok = true;
  int64_t units = 0, *params = NULL, *optim = NULL, *arena = NULL;
  {
    int64_t roles = piperGetIntAttr(module, "piper.roles", 0);
    units = roles > 0 ? roles : piperGetIntAttr(module, "piper.devices", 1);
    if (units < 1 || units > MAX_UNITS) units = 1;
    params = calloc((size_t)units, sizeof *params);
    optim = calloc((size_t)units, sizeof *optim);
    arena = calloc((size_t)units, sizeof *arena);
    stateBytes(module, params, optim, units);
    r.sim = tuneSimulate(module, p);
    if (r.sim.error[0]) {
      r.status = TUNE_DROP_VERIFY;
      snprintf(r.why, sizeof r.why, "the simulation found the plan stuck: %s", r.sim.error);
      ok = false;
    }
  }
  if (ok) {
    MlirPass lower = piperCreateLowerToLLVMPass(NULL);
    if (!(ok = runPasses(module, &lower, 1))) r.status = TUNE_DROP_COMPILE;
  }
  if (ok) {
    for (int64_t u = 0; u < units; ++u) arena[u] = -1;
    arenaBytes(module, arena, units);
    for (int64_t u = 0; u < units; ++u) {
      if (arena[u] < 0) { /* no per-plan figure: the module's peak stands for every plan */
        arena[u] = piperGetIntAttr(module, "piper.arena_bytes", 0);
      }
      int64_t total = params[u] + optim[u] + arena[u];
      if (total > r.peakBytes) {
        r.peakBytes = total, r.paramBytes = params[u], r.optimBytes = optim[u];
      }
      if (arena[u] > r.arenaBytes) r.arenaBytes = arena[u];
    }
    if (memoryBytes > 0 && r.peakBytes > memoryBytes) {
      r.status = TUNE_DROP_MEMORY;
      snprintf(r.why, sizeof r.why, "needs %lld bytes on a device (params %lld + AdamW %lld + "
               "arena up to %lld), over --memory %lld", (long long)r.peakBytes,
               (long long)r.paramBytes, (long long)r.optimBytes, (long long)r.arenaBytes,
               (long long)memoryBytes);
    }
  }
  if (r.status != TUNE_OK && !r.why[0])
    snprintf(r.why, sizeof r.why, "%s", err.text[0] ? err.text : "failed without a message");
  mlirContextDetachDiagnosticHandler(ctx, h);
  mlirOperationDestroy(module);
  free(params), free(optim), free(arena);
  return r;
}
