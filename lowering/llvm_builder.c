/* LlvmBuilder: llvm-dialect ops from C. The attribute spellings mirror what
 * `mlir-opt --mlir-print-op-generic` prints for LLVM 22. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowering/llvm_builder.h"
#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Dialect/LLVM.h"

static MlirAttribute parseAttr(LlvmBuilder *b, const char *text) {
  return mlirAttributeParseGet(b->ctx, piperStr(text));
}

static MlirNamedAttribute named(LlvmBuilder *b, const char *name, MlirAttribute a) {
  return piperNamedAttr(b->ctx, name, a);
}

static void initCommon(LlvmBuilder *b, MlirModule module, MlirLocation loc,
                       const char *symPrefix) {
  memset(b, 0, sizeof *b);
  snprintf(b->symPrefix, sizeof b->symPrefix, "%s", symPrefix);
  b->ctx = mlirModuleGetContext(module);
  b->loc = loc;
  b->moduleBody = mlirModuleGetBody(module);
  b->ptr = mlirLLVMPointerTypeGet(b->ctx, 0);
  b->i64 = mlirIntegerTypeGet(b->ctx, 64);
  b->i32 = mlirIntegerTypeGet(b->ctx, 32);
  b->f32 = mlirF32TypeGet(b->ctx);
  b->voidType = mlirLLVMVoidTypeGet(b->ctx);
}

void lbInit(LlvmBuilder *b, MlirModule module, MlirLocation loc, const char *symPrefix) {
  initCommon(b, module, loc, symPrefix);
  b->declared = &b->ownDeclared;
  piperPtrMapInit(b->declared, 64);
  /* functions already in the module are declared */
  for (MlirOperation op = mlirBlockGetFirstOperation(b->moduleBody); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (piperOpIs(op, "llvm.func")) {
      MlirStringRef name =
          mlirStringAttrGetValue(mlirOperationGetAttributeByName(op, piperStr("sym_name")));
      piperPtrMapPut(b->declared, mlirIdentifierStr(mlirIdentifierGet(b->ctx, name)).data, 1);
    }
}

void lbInitShared(LlvmBuilder *b, MlirModule module, MlirLocation loc, const char *symPrefix,
                  PiperPtrMap *declared) {
  initCommon(b, module, loc, symPrefix);
  b->declared = declared;
}

void lbFree(LlvmBuilder *b) {
  if (b->declared == &b->ownDeclared) piperPtrMapFree(&b->ownDeclared);
}

static MlirOperation append(LlvmBuilder *b, MlirOperation op) {
  mlirBlockAppendOwnedOperation(b->block, op);
  return op;
}

/* llvm.func `name` of type `fnType`; with a body (one block, args from the type) if `define`. */
static MlirOperation makeFunction(LlvmBuilder *b, const char *name, MlirType fnType,
                                  bool define, MlirBlock *body) {
  MlirNamedAttribute attrs[4] = {
      named(b, "sym_name", mlirStringAttrGet(b->ctx, piperStr(name))),
      named(b, "function_type", mlirTypeAttrGet(fnType)),
      named(b, "linkage", parseAttr(b, "#llvm.linkage<external>")),
      named(b, "CConv", parseAttr(b, "#llvm.cconv<ccc>"))};
  MlirOperationState st = mlirOperationStateGet(piperStr("llvm.func"), b->loc);
  mlirOperationStateAddAttributes(&st, 4, attrs);
  MlirRegion region = mlirRegionCreate();
  if (define) {
    intptr_t n = mlirLLVMFunctionTypeGetNumInputs(fnType);
    MlirType args[8];
    MlirLocation locs[8];
    for (intptr_t i = 0; i < n; ++i) {
      args[i] = mlirLLVMFunctionTypeGetInput(fnType, i);
      locs[i] = b->loc;
    }
    *body = mlirBlockCreate(n, args, locs);
    mlirRegionAppendOwnedBlock(region, *body);
  }
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation fn = mlirOperationCreate(&st);
  mlirBlockAppendOwnedOperation(b->moduleBody, fn);
  return fn;
}

MlirValue lbBeginFunction(LlvmBuilder *b, const char *name) {
  MlirType fnType = mlirLLVMFunctionTypeGet(b->voidType, 1, &b->ptr, false);
  makeFunction(b, name, fnType, true, &b->block);
  /* defined here: later calls must not declare it again */
  MlirIdentifier id = mlirIdentifierGet(b->ctx, piperStr(name));
  piperPtrMapPut(b->declared, mlirIdentifierStr(id).data, 1);
  return mlirBlockGetArgument(b->block, 0);
}

void lbReturn(LlvmBuilder *b) {
  append(b, piperOpCreate("llvm.return", b->loc, 0, NULL, 0, NULL, 0, NULL));
}

static MlirValue constant(LlvmBuilder *b, MlirAttribute value, MlirType t) {
  MlirNamedAttribute a = named(b, "value", value);
  return mlirOperationGetResult(
      append(b, piperOpCreate("llvm.mlir.constant", b->loc, 0, NULL, 1, &t, 1, &a)), 0);
}

MlirValue lbConstI64(LlvmBuilder *b, int64_t v) {
  return constant(b, mlirIntegerAttrGet(b->i64, v), b->i64);
}
MlirValue lbConstI32(LlvmBuilder *b, int32_t v) {
  return constant(b, mlirIntegerAttrGet(b->i32, v), b->i32);
}
MlirValue lbConstF32(LlvmBuilder *b, float v) {
  return constant(b, mlirFloatAttrDoubleGet(b->ctx, b->f32, v), b->f32);
}

MlirValue lbNullPtr(LlvmBuilder *b) {
  return mlirOperationGetResult(
      append(b, piperOpCreate("llvm.mlir.zero", b->loc, 0, NULL, 1, &b->ptr, 0, NULL)), 0);
}

MlirValue lbOffset(LlvmBuilder *b, MlirValue base, int64_t byteOffset) {
  if (byteOffset == 0) return base;
  return lbOffsetV(b, base, lbConstI64(b, byteOffset));
}

MlirValue lbOffsetV(LlvmBuilder *b, MlirValue base, MlirValue byteOffset) {
  MlirValue ops[2] = {base, byteOffset};
  int32_t dynamic = INT32_MIN; /* GEP's marker for "index is an operand" */
  MlirNamedAttribute attrs[3] = {
      named(b, "elem_type", mlirTypeAttrGet(mlirIntegerTypeGet(b->ctx, 8))),
      named(b, "rawConstantIndices", mlirDenseI32ArrayGet(b->ctx, 1, &dynamic)),
      named(b, "noWrapFlags", mlirIntegerAttrGet(b->i32, 0))};
  return mlirOperationGetResult(
      append(b, piperOpCreate("llvm.getelementptr", b->loc, 2, ops, 1, &b->ptr, 3, attrs)), 0);
}

/* A private constant global of type `type` holding `value` (named `<prefix>...<n>`), placed
 * after the previous one at the top of the module; returns its address. */
static MlirValue constantGlobal(LlvmBuilder *b, const char *prefix, MlirType type,
                                MlirAttribute value) {
  char sym[64];
  snprintf(sym, sizeof sym, "%s%s%d", prefix, b->symPrefix, b->nStrings++);
  MlirNamedAttribute attrs[6] = {
      named(b, "sym_name", mlirStringAttrGet(b->ctx, piperStr(sym))),
      named(b, "global_type", mlirTypeAttrGet(type)),
      named(b, "linkage", parseAttr(b, "#llvm.linkage<private>")),
      named(b, "constant", mlirUnitAttrGet(b->ctx)),
      named(b, "value", value),
      named(b, "addr_space", mlirIntegerAttrGet(b->i32, 0))};
  MlirOperationState st = mlirOperationStateGet(piperStr("llvm.mlir.global"), b->loc);
  mlirOperationStateAddAttributes(&st, 6, attrs);
  MlirRegion empty = mlirRegionCreate();
  mlirOperationStateAddOwnedRegions(&st, 1, &empty);
  /* Globals sit at the top of the module, in the order they were made. */
  MlirOperation global = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationAfter(b->moduleBody, b->lastString, global);
  b->lastString = global;
  MlirNamedAttribute ref =
      named(b, "global_name", mlirFlatSymbolRefAttrGet(b->ctx, piperStr(sym)));
  return mlirOperationGetResult(
      append(b, piperOpCreate("llvm.mlir.addressof", b->loc, 0, NULL, 1, &b->ptr, 1, &ref)), 0);
}

MlirValue lbString(LlvmBuilder *b, const char *s) {
  size_t n = strlen(s) + 1;
  MlirType arr = mlirLLVMArrayTypeGet(mlirIntegerTypeGet(b->ctx, 8), (unsigned)n);
  return constantGlobal(b, "piper_str", arr, mlirStringAttrGet(b->ctx, (MlirStringRef){s, n}));
}

MlirBlock lbNewBlock(LlvmBuilder *b, bool enter) {
  MlirBlock block = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(mlirBlockGetParentRegion(b->block), block);
  if (enter) b->block = block;
  return block;
}

void lbSetBlock(LlvmBuilder *b, MlirBlock block) { b->block = block; }

void lbSwitch(LlvmBuilder *b, MlirValue value, MlirBlock dflt, intptr_t n, const int64_t *values,
              const MlirBlock *cases) {
  int64_t len = n;
  MlirType vec = mlirVectorTypeGet(1, &len, b->i64);
  int32_t *segments = calloc(n ? n : 1, sizeof *segments); /* no block arguments anywhere */
  int32_t operandSegments[3] = {1, 0, 0};
  MlirNamedAttribute attrs[3] = {
      named(b, "case_values", mlirDenseElementsAttrInt64Get(vec, n, values)),
      named(b, "case_operand_segments", mlirDenseI32ArrayGet(b->ctx, n, segments)),
      named(b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 3, operandSegments))};
  MlirOperationState st = mlirOperationStateGet(piperStr("llvm.switch"), b->loc);
  mlirOperationStateAddOperands(&st, 1, &value);
  mlirOperationStateAddSuccessors(&st, 1, &dflt);
  mlirOperationStateAddSuccessors(&st, n, cases);
  mlirOperationStateAddAttributes(&st, 3, attrs);
  append(b, mlirOperationCreate(&st));
  free(segments);
}

MlirValue lbI64Array(LlvmBuilder *b, intptr_t n, const int64_t *values) {
  int64_t shape = n;
  MlirType tensor = mlirRankedTensorTypeGet(1, &shape, b->i64, mlirAttributeGetNull());
  return constantGlobal(b, "piper_i64s", mlirLLVMArrayTypeGet(b->i64, (unsigned)n),
                        mlirDenseElementsAttrInt64Get(tensor, n, values));
}

MlirValue lbCall(LlvmBuilder *b, const char *callee, MlirType ret, intptr_t n,
                 const MlirValue *args) {
  MlirIdentifier id = mlirIdentifierGet(b->ctx, piperStr(callee)); /* interned: stable key */
  if (!piperPtrMapGet(b->declared, mlirIdentifierStr(id).data, NULL)) {
    /* the declaration's parameter types are the arguments', however many there are (the
     * stack holds the usual counts; the kernels take up to 14) */
    MlirType small[16], *types = n <= 16 ? small : malloc((size_t)n * sizeof *types);
    if (!types) {
      fprintf(stderr, "piper: error: out of memory declaring %s (%lld parameters)\n", callee,
              (long long)n);
      exit(1);
    }
    for (intptr_t i = 0; i < n; ++i) types[i] = mlirValueGetType(args[i]);
    MlirType fnType = mlirLLVMFunctionTypeGet(mlirTypeIsNull(ret) ? b->voidType : ret, n,
                                              types, false);
    if (types != small) free(types);
    MlirBlock unused;
    makeFunction(b, callee, fnType, false, &unused);
    piperPtrMapPut(b->declared, mlirIdentifierStr(id).data, 1);
  }
  int32_t segments[2] = {(int32_t)n, 0};
  MlirNamedAttribute attrs[6] = {
      named(b, "callee", mlirFlatSymbolRefAttrGet(b->ctx, piperStr(callee))),
      named(b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 2, segments)),
      named(b, "op_bundle_sizes", mlirDenseI32ArrayGet(b->ctx, 0, NULL)),
      named(b, "CConv", parseAttr(b, "#llvm.cconv<ccc>")),
      named(b, "TailCallKind", parseAttr(b, "#llvm.tailcallkind<none>")),
      named(b, "fastmathFlags", parseAttr(b, "#llvm.fastmath<none>"))};
  bool hasResult = !mlirTypeIsNull(ret);
  MlirOperation call =
      append(b, piperOpCreate("llvm.call", b->loc, n, args, hasResult ? 1 : 0, &ret, 6, attrs));
  return hasResult ? mlirOperationGetResult(call, 0) : (MlirValue){NULL};
}
