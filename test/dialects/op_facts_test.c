/* Checks the op-facts table (include/piper/ops.h) against the tdag dialect as IRDL defines it
 * (the definitions piper's tools load, generated from include/piper/tdag_ops.def): every tdag
 * op has exactly one row and every row names a tdag op, so a new op cannot be forgotten by the
 * passes; each row's per-operand and per-result bits fit the op's operand and result counts;
 * and MLIR's verifier, with the generated dialect loaded, accepts an op built to the declared
 * signature and refuses one with an operand too few or too many or a required attribute
 * missing. Prints `@check` then `ok` per check; exits with a distinct non-zero code on the
 * first failure. `--print-irdl` prints the IRDL text the tools load instead. */
#include <stdio.h>
#include <string.h>

#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Diagnostics.h"
#include "piper/piper.h"

enum { MAX_OPS = 256, MAX_ATTRS = 8 };

typedef struct {
  char name[64];    /* "tdag.linear" */
  int nOperands;    /* operands irdl.operands declares (-1 if variadic) */
  int nResults;     /* results irdl.results declares (-1 if variadic) */
  int nDecl[2];     /* operands, results declared (a variadic group counts once) */
  int nVariadicOperands; /* operand groups that are variadic */
  int nAttrs;       /* required attributes */
  char attr[MAX_ATTRS][32];   /* their names */
  char attrBase[MAX_ATTRS][32]; /* their base types, "#builtin.float" */
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

/* How many entries of an irdl.operands op are variadic. */
static int variadicGroups(MlirOperation op) {
  MlirAttribute v = mlirOperationGetAttributeByName(op, piperStr("variadicity"));
  if (mlirAttributeIsNull(v)) return 0;
  char buf[256] = "";
  mlirAttributePrint(v, printToBuf, buf);
  int n = 0;
  for (const char *p = strstr(buf, "variadic"); p; p = strstr(p + 1, "variadic"))
    n += p[-1] != '<'; /* not the attribute's own name, variadicity_array */
  return n;
}

/* The names and base types of an irdl.attributes op's entries into r. */
static void readAttributes(MlirOperation op, IrdlOp *r) {
  MlirAttribute names = mlirOperationGetAttributeByName(op, piperStr("attributeValueNames"));
  intptr_t n = mlirAttributeIsNull(names) ? 0 : mlirArrayAttrGetNumElements(names);
  for (intptr_t i = 0; i < n && r->nAttrs < MAX_ATTRS; i++) {
    MlirStringRef s = mlirStringAttrGetValue(mlirArrayAttrGetElement(names, i));
    snprintf(r->attr[r->nAttrs], sizeof r->attr[0], "%.*s", (int)s.length, s.data);
    MlirValue c = mlirOperationGetOperand(op, i);
    r->attrBase[r->nAttrs][0] = 0;
    if (mlirValueIsAOpResult(c))
      piperGetStringAttr(mlirOpResultGetOwner(c), "base_name", r->attrBase[r->nAttrs],
                         sizeof r->attrBase[0]);
    r->nAttrs++;
  }
}

/* The ops of `dialect` ("tdag", "comm") the IRDL source defines; returns how many (or -1). */
static int irdlOps(MlirContext ctx, const char *dialect, IrdlOp *ops) {
  char *source = piperIrdlSourceCreate();
  MlirModule m = source ? mlirModuleCreateParse(ctx, piperStr(source)) : (MlirModule){NULL};
  free(source);
  if (mlirModuleIsNull(m)) return -1;
  int n = 0;
  MlirBlock top = mlirModuleGetBody(m);
  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    char name[32] = "";
    if (!piperOpIs(d, "irdl.dialect") ||
        !piperGetStringAttr(d, "sym_name", name, sizeof name) || strcmp(name, dialect))
      continue;
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(d, 0));
    for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
         o = mlirOperationGetNextInBlock(o)) {
      char name[48] = "";
      if (!piperOpIs(o, "irdl.operation") || n == MAX_OPS) continue;
      piperGetStringAttr(o, "sym_name", name, sizeof name);
      IrdlOp *r = &ops[n++];
      memset(r, 0, sizeof *r);
      snprintf(r->name, sizeof r->name, "%s.%s", dialect, name);
      MlirBlock ob = mlirRegionGetFirstBlock(mlirOperationGetRegion(o, 0));
      for (MlirOperation c = mlirBlockGetFirstOperation(ob); !mlirOperationIsNull(c);
           c = mlirOperationGetNextInBlock(c)) {
        int *count = piperOpIs(c, "irdl.operands") ? &r->nOperands
                     : piperOpIs(c, "irdl.results") ? &r->nResults
                                                    : NULL;
        if (count) *count = isVariadic(c) ? -1 : (int)mlirOperationGetNumOperands(c);
        if (count) r->nDecl[count == &r->nResults] = (int)mlirOperationGetNumOperands(c);
        if (count == &r->nOperands) r->nVariadicOperands = variadicGroups(c);
        if (piperOpIs(c, "irdl.attributes")) readAttributes(c, r);
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

/* An attribute of base type `base` ("#builtin.float"), or a null one for an unknown base. */
static MlirAttribute attrOfBase(MlirContext ctx, const char *base) {
  if (!strcmp(base, "#builtin.string")) return mlirStringAttrGet(ctx, piperStr("x"));
  if (!strcmp(base, "#builtin.float")) return mlirFloatAttrDoubleGet(ctx, mlirF64TypeGet(ctx), 1.0);
  if (!strcmp(base, "#builtin.integer")) return mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 1);
  if (!strcmp(base, "#builtin.symbol_ref")) return mlirFlatSymbolRefAttrGet(ctx, piperStr("f"));
  return mlirAttributeGetNull();
}

/* Whether MLIR's verifier accepts `o` built with nIn operands, its declared results, and its
 * required attributes but attribute `skipAttr` (-1: all). Every value is one tensor type, which
 * satisfies each constraint (shared ones too); a variadic group gets one value. */
static bool verifies(MlirContext ctx, MlirBlock values, const IrdlOp *o, int nIn, int skipAttr) {
  MlirLocation loc = mlirLocationUnknownGet(ctx);
  MlirType t = mlirValueGetType(mlirBlockGetArgument(values, 0));
  MlirOperationState st = mlirOperationStateGet(piperStr(o->name), loc);
  MlirValue ins[16];
  MlirType outs[16];
  for (int i = 0; i < nIn && i < 16; i++) ins[i] = mlirBlockGetArgument(values, i);
  for (int r = 0; r < o->nDecl[1] && r < 16; r++) outs[r] = t;
  mlirOperationStateAddOperands(&st, nIn, ins);
  mlirOperationStateAddResults(&st, o->nDecl[1], outs);
  MlirNamedAttribute attrs[MAX_ATTRS + 1];
  int na = 0;
  for (int a = 0; a < o->nAttrs; a++)
    if (a != skipAttr)
      attrs[na++] = piperNamedAttr(ctx, o->attr[a], attrOfBase(ctx, o->attrBase[a]));
  if (o->nVariadicOperands > 1) { /* which operands form which group: one each */
    int32_t seg[16];
    for (int i = 0; i < o->nDecl[0] && i < 16; i++) seg[i] = 1;
    attrs[na++] = piperNamedAttr(ctx, "operandSegmentSizes",
                                 mlirDenseI32ArrayGet(ctx, o->nDecl[0], seg));
  }
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation op = mlirOperationCreate(&st);
  bool ok = mlirOperationVerify(op);
  mlirOperationDestroy(op);
  return ok;
}

static MlirLogicalResult quiet(MlirDiagnostic d, void *userData) {
  return mlirLogicalResultSuccess(); /* the refusals are expected; FAIL lines say what broke */
}

/* 0 if the verifier enforces o's declared signature, else a distinct exit code (printed). */
static int checkSignature(MlirContext ctx, MlirBlock values, const IrdlOp *o) {
  for (int a = 0; a < o->nAttrs; a++)
    if (mlirAttributeIsNull(attrOfBase(ctx, o->attrBase[a]))) {
      printf("FAIL: %s: attribute %s has base %s, not one the op list allows\n", o->name,
             o->attr[a], o->attrBase[a]);
      return 9;
    }
  if (o->nDecl[0] > 15 || o->nDecl[1] > 16 || !verifies(ctx, values, o, o->nDecl[0], -1)) {
    printf("FAIL: %s: the verifier refuses the op built to its signature (%d operands, %d "
           "results, %d attributes)\n", o->name, o->nDecl[0], o->nDecl[1], o->nAttrs);
    return 10;
  }
  bool fixed = o->nOperands >= 0; /* a variadic group takes any count */
  if (fixed && ((o->nDecl[0] > 0 && verifies(ctx, values, o, o->nDecl[0] - 1, -1)) ||
                verifies(ctx, values, o, o->nDecl[0] + 1, -1))) {
    printf("FAIL: %s: the verifier accepts %d operands, one more or fewer than the %d "
           "declared\n", o->name, o->nDecl[0] - 1, o->nDecl[0]);
    return 11;
  }
  for (int a = 0; a < o->nAttrs; a++)
    if (verifies(ctx, values, o, o->nDecl[0], a)) {
      printf("FAIL: %s: the verifier accepts the op without its attribute %s\n", o->name,
             o->attr[a]);
      return 12;
    }
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "--print-irdl")) {
    char *source = piperIrdlSourceCreate();
    if (!source) return 1;
    fputs(source, stdout);
    free(source);
    return 0;
  }
  MlirContext ctx = piperContextCreate();
  if (mlirContextIsNull(ctx)) return 1;
  static IrdlOp ops[MAX_OPS];
  int nOps = irdlOps(ctx, "tdag", ops);
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);

  printf("@irdl_op_has_one_row\n");
  if (nOps <= 0) {
    printf("FAIL: no tdag ops found in the embedded IRDL source\n");
    return 2;
  }
  for (int i = 0; i < nOps; ++i) {
    if (i < (int)nRows && strcmp(rows[i].name, ops[i].name)) {
      printf("FAIL: row %d is %s, but op #%d of the tdag dialect is %s: keep PiperOpId in the "
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
      printf("FAIL: row %s names no op of the generated tdag dialect\n", rows[r].name);
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

  /* gradElementwise builds the gradOp with the forward's operands after dy and one result per
   * operand: the two signatures must agree */
  printf("@grad_op_fits_elementwise_rule\n");
  for (int i = 0; i < nOps; ++i) {
    const PiperOpFacts *f = piperOpFactsByName(piperStr(ops[i].name));
    if (f->gradOp == PIPER_TDAG_PARAM) continue; /* not set: 0 */
    const PiperOpFacts *g = &rows[f->gradOp];
    const IrdlOp *go = NULL;
    for (int k = 0; k < nOps; ++k)
      if (!strcmp(ops[k].name, g->name)) go = &ops[k];
    if (g->kind != PIPER_OP_BACKWARD || f->kind != PIPER_OP_FORWARD || !go ||
        ops[i].nOperands < 0 || go->nOperands != ops[i].nOperands + 1 ||
        go->nResults != ops[i].nOperands) {
      printf("FAIL: %s: gradOp %s must be a backward op of %d operands (dy, then %s's) and %d "
             "results (one gradient per operand)\n", ops[i].name, g->name,
             ops[i].nOperands + 1, ops[i].name, ops[i].nOperands);
      return 13;
    }
  }
  printf("ok\n");

  /* the tp column (passes/shard_tensor.c, PiperTpRule in ops.h): a region's rules on forward
   * ops only, OPERAND_GRADS on backward ops; each rule reads the operands and gives the results
   * it names (a linear and a head norm read their weight at operand #1, an attention gives
   * its out and lse, an OPERAND_GRADS op's result r is operand 1 + r's gradient) */
  printf("@tp_rule_fits_op\n");
  for (int i = 0; i < nOps; ++i) {
    const PiperOpFacts *f = piperOpFactsByName(piperStr(ops[i].name));
    int in = ops[i].nOperands, out = ops[i].nResults;
    bool fits = in >= 1 && out >= 1;
    switch (f->tp) {
    case PIPER_TP_NONE: continue;
    case PIPER_TP_LINEAR:
    case PIPER_TP_HEAD_NORM: fits = fits && f->kind == PIPER_OP_FORWARD && in >= 2; break;
    case PIPER_TP_ELEMENTWISE:
    case PIPER_TP_PER_HEAD: fits = fits && f->kind == PIPER_OP_FORWARD && out == 1; break;
    case PIPER_TP_PACKED_HEADS:
    case PIPER_TP_GQA_HEADS: fits = fits && f->kind == PIPER_OP_FORWARD && out == 2; break;
    case PIPER_TP_LIKE_OPERAND0: break;
    case PIPER_TP_SUM: fits = fits && in == 2 && out == 1; break;
    case PIPER_TP_LINEAR_GRAD_INPUT:
    case PIPER_TP_LINEAR_GRAD_WEIGHT:
      fits = fits && f->kind == PIPER_OP_BACKWARD && in == 2 && out == 1;
      break;
    case PIPER_TP_BIAS_GRAD: fits = fits && f->kind == PIPER_OP_BACKWARD && out == 1; break;
    case PIPER_TP_OPERAND_GRADS:
      fits = fits && f->kind == PIPER_OP_BACKWARD && in >= out + 2;
      break;
    case PIPER_TP_CARRY_RESHAPE:
    case PIPER_TP_CARRY_PERMUTE:
    case PIPER_TP_CARRY_LEADING:
    case PIPER_TP_CARRY_OPERAND0: /* a general op */
      fits = fits && f->kind == PIPER_OP_FORWARD && f->batch == PIPER_BATCH_OPERANDS && out == 1;
      break;
    }
    if (!fits) {
      printf("FAIL: %s: its .tp (%d) does not fit a %s op of %d operands and %d results\n",
             ops[i].name, (int)f->tp, f->kind == PIPER_OP_FORWARD ? "forward" : "non-forward",
             in, out);
      return 17;
    }
  }
  printf("ok\n");

  printf("@signature_enforced_by_verifier\n");
  MlirType t = mlirRankedTensorTypeGet(1, (int64_t[]){2}, mlirF32TypeGet(ctx),
                                       mlirAttributeGetNull());
  MlirType types[17];
  MlirLocation locs[17];
  for (int i = 0; i < 17; i++) {
    types[i] = t;
    locs[i] = mlirLocationUnknownGet(ctx);
  }
  MlirBlock values = mlirBlockCreate(17, types, locs);
  MlirDiagnosticHandlerID h = mlirContextAttachDiagnosticHandler(ctx, quiet, NULL, NULL);
  for (int i = 0; i < nOps; ++i) {
    int code = checkSignature(ctx, values, &ops[i]);
    if (code) return code;
  }
  mlirContextDetachDiagnosticHandler(ctx, h);
  mlirBlockDestroy(values);
  printf("ok\n");
  printf("checked %d tdag ops\n", nOps);

  /* the comm facts (include/piper/comm_ops.def) name comm.irdl.mlir's ops in its order */
  printf("@comm_row_per_irdl_op\n");
  static IrdlOp commOps[MAX_OPS];
  int nComm = irdlOps(ctx, "comm", commOps);
  size_t nCommRows;
  const PiperCommFacts *commRows = piperCommFactsTable(&nCommRows);
  if (nComm <= 0 || (size_t)nComm != nCommRows) {
    printf("FAIL: the comm dialect has %d ops, include/piper/comm_ops.def %zu\n", nComm,
           nCommRows);
    return 14;
  }
  for (int i = 0; i < nComm; ++i)
    if (commRows[i].id != (PiperCommOpId)i || strcmp(commRows[i].name, commOps[i].name)) {
      printf("FAIL: comm row %d is %s, but op #%d of the comm dialect is %s: keep "
             "include/piper/comm_ops.def in comm.irdl.mlir's order\n", i, commRows[i].name, i,
             commOps[i].name);
      return 15;
    }
  int nRing = 0;
  for (int i = 0; i < nComm; ++i) {
    /* a ring op's bf16 results leave its last result, the token, alone */
    if (commRows[i].ring && (commOps[i].nResults < 2 ||
                             (commRows[i].bf16Results >> (commOps[i].nResults - 1)))) {
      printf("FAIL: %s: bf16Results names its token or a result it does not have\n",
             commRows[i].name);
      return 16;
    }
    nRing += commRows[i].ring;
  }
  printf("ok\n");
  printf("checked %d comm ops, %d ring ops\n", nComm, nRing);
  mlirContextDestroy(ctx);
  return 0;
}
