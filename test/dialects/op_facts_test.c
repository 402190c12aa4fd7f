/* Checks the op-facts table (include/piper/ops.h) against the tdag dialect as IRDL defines it
 * (the definitions piper's tools load, dialects/tdag.irdl.mlir): every tdag op has exactly
 * one row and every row names a tdag op, so a new op cannot be forgotten by the passes; and
 * each row's per-operand and per-result bits fit the op's operand and result counts. Prints
 * `@check` then `ok` per check; exits with a distinct non-zero code on the first failure. */
#include <stdio.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "piper/piper.h"

extern const char piper_irdl_source[]; /* the IRDL files as the tools embed them */

enum { MAX_OPS = 256 };

typedef struct {
  char name[64];    /* "tdag.linear" */
  int nOperands;    /* operands irdl.operands declares (-1 if variadic) */
  int nResults;     /* results irdl.results declares (-1 if variadic) */
} IrdlOp;

static void printToBuf(MlirStringRef s, void *userData) {
  char *buf = userData;
  size_t used = strlen(buf), room = 255 - used;
  size_t n = s.length < room ? s.length : room;
  memcpy(buf + used, s.data, n);
  buf[used + n] = 0;
}

/* True if an irdl.operands / irdl.results op declares a variadic or optional entry: its
 * `variadicity` attribute prints as #irdl<variadicity_array[single, variadic]>. */
static bool isVariadic(MlirOperation op) {
  MlirAttribute v = mlirOperationGetAttributeByName(op, piperStr("variadicity"));
  if (mlirAttributeIsNull(v)) return false;
  char buf[256] = "";
  mlirAttributePrint(v, printToBuf, buf);
  const char *list = strchr(buf, '[');
  return list && (strstr(list, "variadic") || strstr(list, "optional"));
}

/* The tdag ops the IRDL source defines; returns how many (or -1). */
static int irdlOps(MlirContext ctx, IrdlOp *ops) {
  MlirModule m = mlirModuleCreateParse(ctx, piperStr(piper_irdl_source));
  if (mlirModuleIsNull(m)) return -1;
  int n = 0;
  MlirBlock top = mlirModuleGetBody(m);
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    char dialect[32] = "";
    if (!piperOpIs(d, "irdl.dialect") ||
        !piperGetStringAttr(d, "sym_name", dialect, sizeof dialect) || strcmp(dialect, "tdag"))
      continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(d, 0));
    for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o)) {
      char name[48] = "";
      if (!piperOpIs(o, "irdl.operation") || n == MAX_OPS) continue;
      piperGetStringAttr(o, "sym_name", name, sizeof name);
      IrdlOp *r = &ops[n++];
      snprintf(r->name, sizeof r->name, "tdag.%s", name);
      r->nOperands = r->nResults = 0;
      MlirBlock ob = mlirRegionGetFirstBlock(mlirOperationGetRegion(o, 0));
      for (MlirOperation c = mlirBlockGetFirstOperation(ob); !mlirOperationIsNull(c);
           c = mlirOperationGetNextInBlock(c)) {
        int *count = piperOpIs(c, "irdl.operands") ? &r->nOperands
                     : piperOpIs(c, "irdl.results") ? &r->nResults
                                                    : NULL;
        if (count) *count = isVariadic(c) ? -1 : (int)mlirOperationGetNumOperands(c);
      }
    }
  }
  mlirModuleDestroy(m);
  return n;
}

/* True if every bit of `mask` is below `count` (-1: variadic, any bit fits). */
static bool bitsFit(unsigned mask, int count) {
  return count < 0 || count >= 8 || (mask >> count) == 0;
}

int main(void) {
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  static IrdlOp ops[MAX_OPS];
  int nOps = irdlOps(ctx, ops);
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);

  printf("@irdl_op_has_one_row\n");
  if (nOps <= 0) {
    printf("FAIL: no tdag ops found in the embedded IRDL source\n");
    return 2;
  }
  for (int i = 0; i < nOps; ++i) {
    if (i < (int)nRows && strcmp(rows[i].name, ops[i].name)) {
      printf("FAIL: row %d is %s, but op #%d of tdag.irdl.mlir is %s: keep PiperOpId in the "
             "IRDL file's order\n", i, rows[i].name, i, ops[i].name);
      return 8;
    }
    int found = 0;
    for (size_t r = 0; r < nRows; ++r) found += !strcmp(rows[r].name, ops[i].name);
    if (found != 1) {
      printf("FAIL: %s has %d rows in dialects/ops.c, expected exactly 1\n", ops[i].name, found);
      return 3;
    }
    if (piperOpFactsByName(piperStr(ops[i].name)) == NULL) {
      printf("FAIL: piperOpFactsByName does not find %s\n", ops[i].name);
      return 4;
    }
  }
  printf("ok\n");

  printf("@row_names_irdl_op\n");
  for (size_t r = 0; r < nRows; ++r) {
    if (!rows[r].name || rows[r].id != (PiperOpId)r) {
      printf("FAIL: row %zu is empty or has id %d: every PiperOpId needs its row\n", r,
             (int)rows[r].id);
      return 7;
    }
    int found = 0;
    for (int i = 0; i < nOps; ++i) found += !strcmp(rows[r].name, ops[i].name);
    if (found != 1 || !mlirContextIsRegisteredOperation(ctx, piperStr(rows[r].name))) {
      printf("FAIL: row %s names no op of dialects/tdag.irdl.mlir\n", rows[r].name);
      return 5;
    }
  }
  printf("ok\n");

  printf("@row_bits_fit_op\n");
  for (int i = 0; i < nOps; ++i) {
    const PiperOpFacts *f = piperOpFactsByName(piperStr(ops[i].name));
    bool some = f->batch == PIPER_BATCH_SOME;
    if (!bitsFit(f->i32Operands, ops[i].nOperands) ||
        !bitsFit(f->batchedResults, ops[i].nResults) ||
        !bitsFit(f->weightGradResults, ops[i].nResults) ||
        !bitsFit(f->i32Results, ops[i].nResults) || (some && !f->batchedResults) ||
        (!some && f->batchedResults) || (f->likeOperand0 && ops[i].nOperands == 0) ||
        (f->alias >= PIPER_ALIAS_RESULT_IS_OPERAND0 &&
         (ops[i].nOperands == 0 || ops[i].nResults == 0)) ||
        (f->declaresTensor && f->kernel)) {
      printf("FAIL: %s: a fact names an operand or result the op does not have (%d operands, "
             "%d results)\n", ops[i].name, ops[i].nOperands, ops[i].nResults);
      return 6;
    }
  }
  printf("ok\n");
  printf("checked %d tdag ops\n", nOps);
  mlirContextDestroy(ctx);
  return 0;
}
