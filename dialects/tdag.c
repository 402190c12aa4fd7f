/* Building and querying tdag ops from C, and the shape verifier: IRDL checks op names, operand
 * counts and required attributes; this file checks what it cannot express (element types and
 * how shapes relate), so a malformed model fails at the op that is wrong, not in a kernel. */
#include <stdarg.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/base/shard.h"
#include "piper/checked.h"
#include "piper/directives.h"
#include "piper/piper.h"

bool piperOpIs(MlirOperation op, const char *name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(name) && memcmp(n.data, name, n.length) == 0;
}

bool piperOpInDialect(MlirOperation op, const char *dialect) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t d = strlen(dialect);
  return n.length > d && memcmp(n.data, dialect, d) == 0 && n.data[d] == '.';
}

MlirOperation piperOpCreate(const char *name, MlirLocation loc, intptr_t nOperands,
                            const MlirValue *operands, intptr_t nResults,
                            const MlirType *results, intptr_t nAttrs,
                            const MlirNamedAttribute *attrs) {
  MlirOperationState st = mlirOperationStateGet(piperStr(name), loc);
  if (nOperands) mlirOperationStateAddOperands(&st, nOperands, operands);
  if (nResults) mlirOperationStateAddResults(&st, nResults, results);
  if (nAttrs) mlirOperationStateAddAttributes(&st, nAttrs, attrs);
  return mlirOperationCreate(&st);
}

MlirOperation piperTdagOpCreate(PiperOpId id, MlirLocation loc, intptr_t nOperands,
                                const MlirValue *operands, intptr_t nResults,
                                const MlirType *results, intptr_t nAttrs,
                                const MlirNamedAttribute *attrs) {
  size_t nRows;
  const PiperOpFacts *rows = piperOpFactsTable(&nRows);
  if ((size_t)id >= nRows) return (MlirOperation){NULL};
  return piperOpCreate(rows[id].name, loc, nOperands, operands, nResults,
                       results, nAttrs, attrs);
}

MlirNamedAttribute piperNamedAttr(MlirContext ctx, const char *name, MlirAttribute attr) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, piperStr(name)), attr);
}

MlirType piperTensorWithElement(MlirType t, MlirType elem) {
  intptr_t rank = mlirShapedTypeGetRank(t);
  int64_t shape[16];
  if (rank > 16) return (MlirType){NULL};
  for (intptr_t i = 0; i < rank; ++i) shape[i] = mlirShapedTypeGetDimSize(t, i);
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirRankedTensorTypeGetEncoding(t));
}

void piperCopyPlacement(MlirOperation to, MlirOperation from) {
  static const char *copied[] = {"tags", "pass", "devices"};
  for (int i = 0; i < 3; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(from, piperStr(copied[i]));
    if (!mlirAttributeIsNull(a)) mlirOperationSetAttributeByName(to, piperStr(copied[i]), a);
  }
}

bool piperGetStringAttr(MlirOperation op, const char *name, char *buf, size_t size) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a) || size == 0) return false;
  MlirStringRef s = mlirStringAttrGetValue(a);
  size_t n = s.length < size - 1 ? s.length : size - 1;
  if (n) memcpy(buf, s.data, n); /* an empty StringAttr ("") may have a null data pointer */
  buf[n] = 0;
  return true;
}

int64_t piperGetIntAttr(MlirOperation op, const char *name, int64_t fallback) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return fallback;
  return mlirIntegerAttrGetValueInt(a);
}

double piperGetFloatAttr(MlirOperation op, const char *name, double fallback) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAFloat(a)) return fallback;
  return mlirFloatAttrGetValueDouble(a);
}

void piperNodeLabel(MlirOperation op, char *buf, size_t size) {
  char pass[8] = "F";
  piperGetStringAttr(op, "pass", pass, sizeof pass);
  size_t n = (size_t)snprintf(buf, size, "%s", pass);
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  if (!mlirAttributeIsNull(tags) && !mlirAttributeIsADictionary(tags)) tags = (MlirAttribute){NULL};
  for (intptr_t i = 0; !mlirAttributeIsNull(tags) && i < mlirDictionaryAttrGetNumElements(tags) &&
                       n < size;
       ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(tags, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    n += (size_t)snprintf(buf + n, size - n, " %.*s=%lld", (int)key.length, key.data,
                          mlirAttributeIsAInteger(e.attribute)
                              ? (long long)mlirIntegerAttrGetValueInt(e.attribute)
                              : 0LL);
  }
}

int64_t piperTensorRank(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? mlirShapedTypeGetRank(t) : -1;
}

int64_t piperTensorDim(MlirType t, int64_t i) {
  int64_t r = piperTensorRank(t);
  if (i < 0) i += r;
  return (i >= 0 && i < r) ? mlirShapedTypeGetDimSize(t, i) : -1;
}

int64_t piperTensorNumel(MlirType t) {
  int64_t n = 1;
  for (int64_t i = 0; i < piperTensorRank(t); ++i)
    if (!piperMulI64(n, mlirShapedTypeGetDimSize(t, i), &n)) return -1;
  return n;
}

bool piperTensorIsF32(MlirType t) {
  return mlirTypeIsARankedTensor(t) && mlirTypeIsAF32(mlirShapedTypeGetElementType(t));
}

bool piperTensorIsI32(MlirType t) {
  if (!mlirTypeIsARankedTensor(t)) return false;
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 32;
}

MlirType piperTensorType(MlirContext ctx, int64_t rank, const int64_t *shape, MlirType elem) {
  (void)ctx; /* the builtin tensor type takes its context from elem */
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
}

bool piperTensorIsBf16(MlirType t) {
  return mlirTypeIsARankedTensor(t) && mlirTypeIsABF16(mlirShapedTypeGetElementType(t));
}

/* ---- the verifier ---- */

typedef struct {
  int errors;  /* number of diagnostics emitted */
} Verifier;

static void appendToBuf(MlirStringRef s, void *userData) {
  char *buf = userData;
  size_t used = strlen(buf), room = 95 - used;
  size_t n = s.length < room ? s.length : room;
  memcpy(buf + used, s.data, n);
  buf[used + n] = 0;
}

/* `t` as MLIR prints it, for messages; one of 4 rotating buffers so a message can show two. */
static const char *typeStr(MlirType t) {
  static char bufs[4][96];
  static int next;
  char *b = bufs[next++ & 3];
  b[0] = 0;
  mlirTypePrint(t, appendToBuf, b);
  return b;
}

void piperEmitErrorV(MlirLocation loc, const char *fmt, va_list ap) {
  char msg[640];
  vsnprintf(msg, sizeof msg, fmt, ap);
  mlirEmitError(loc, msg);
}

void piperEmitNotef(MlirLocation loc, const char *fmt, ...) {
  char msg[640];
  size_t n = sizeof PIPER_NOTE_MARKER - 1;
  memcpy(msg, PIPER_NOTE_MARKER, n);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg + n, sizeof msg - n, fmt, ap);
  va_end(ap);
  mlirEmitError(loc, msg);
}

void piperEmitErrorf(MlirLocation loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  piperEmitErrorV(loc, fmt, ap);
  va_end(ap);
}

static void fail(Verifier *v, MlirOperation op, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  piperEmitErrorV(mlirOperationGetLocation(op), fmt, ap);
  va_end(ap);
  v->errors++;
}

static MlirType operandType(MlirOperation op, intptr_t i) {
  return mlirValueGetType(mlirOperationGetOperand(op, i));
}
static MlirType resultType(MlirOperation op, intptr_t i) {
  return mlirValueGetType(mlirOperationGetResult(op, i));
}

static bool sameShape(MlirType a, MlirType b) {
  if (piperTensorRank(a) != piperTensorRank(b)) return false;
  for (int64_t i = 0; i < piperTensorRank(a); ++i)
    if (piperTensorDim(a, i) != piperTensorDim(b, i)) return false;
  return true;
}

/* Same shape as `like` with the last dim replaced by `last` (-1: dropped). */
static bool shapeWithLast(MlirType t, MlirType like, int64_t last) {
  int64_t r = piperTensorRank(like);
  int64_t want = last < 0 ? r - 1 : r;
  if (piperTensorRank(t) != want) return false;
  for (int64_t i = 0; i < r - 1; ++i)
    if (piperTensorDim(t, i) != piperTensorDim(like, i)) return false;
  return last < 0 || piperTensorDim(t, r - 1) == last;
}

static bool isVector(MlirType t, int64_t n) {
  return piperTensorRank(t) == 1 && piperTensorDim(t, 0) == n;
}
static bool isMatrix(MlirType t, int64_t rows, int64_t cols) {
  return piperTensorRank(t) == 2 && piperTensorDim(t, 0) == rows && piperTensorDim(t, 1) == cols;
}

/* True if a statically shaped tensor type's element count, and its byte size rounded up to the
 * arena's 64-byte alignment, fit in int64: the memory plan and the kernels' counts are int64
 * products of the dims, which must not wrap. */
static bool sizeFits(MlirType t) {
  int64_t numel = piperTensorNumel(t), bytes, elemBytes = piperTensorElementBytes(t);
  return numel >= 0 && piperMulI64(numel, elemBytes > 0 ? elemBytes : 4, &bytes) &&
         piperAddI64(bytes, 64, &bytes);
}

/* Refuses a tensor operand or result whose size overflows int64 (see sizeFits). */
static bool checkSizes(Verifier *v, MlirOperation op) {
  for (int res = 0; res < 2; ++res) {
    intptr_t n = res ? mlirOperationGetNumResults(op) : mlirOperationGetNumOperands(op);
    for (intptr_t i = 0; i < n; ++i) {
      MlirType t = res ? resultType(op, i) : operandType(op, i);
      if (mlirTypeIsARankedTensor(t) && mlirShapedTypeHasStaticShape(t) && !sizeFits(t)) {
        fail(v, op, "%s #%d: %s has more elements or bytes than int64 can count",
             res ? "result" : "operand", (int)i, typeStr(t));
        return false;
      }
    }
  }
  return true;
}

/* Whether the bf16 policy (ops.h bf16Results) lets float operand #i / result #i of `op` be
 * bf16: an activation read by a kernel (every kernel widens it) but never what the optimizer
 * updates or a bucket packs, which hold fp32 master weights and gradients; a result only where
 * the row stores it so, or a sum (likeOperand0) of bf16 values. */
static bool bf16Allowed(const PiperOpFacts *f, MlirOperation op, bool result, intptr_t i) {
  if (f->cast) return true; /* a conversion: its maker chose the types */
  if (!result)
    return f->kind != PIPER_OP_UPDATE && f->kind != PIPER_OP_BUFFER && f->kind != PIPER_OP_IO &&
           !piperFactsFp32Operand(f, i);
  if (piperFactsBf16Result(f, i)) return true;
  if (!f->likeOperand0) return false;
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k)
    if (piperTensorIsBf16(operandType(op, k))) return true;
  return false;
}

/* Every operand and result must be a statically shaped tensor of the element type the op's row
 * names (f32, or i32 for its i32Operands, an i32 resultElem and its i32Results; bf16 in place
 * of f32 where bf16Allowed), of a size int64 can count. */
static bool checkElementTypes(Verifier *v, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  for (int res = 0; res < 2; ++res) {
    intptr_t n = res ? mlirOperationGetNumResults(op) : mlirOperationGetNumOperands(op);
    for (intptr_t i = 0; i < n; ++i) {
      MlirType t = res ? resultType(op, i) : operandType(op, i);
      bool wantI32 = res ? f->resultElem == PIPER_ELEM_I32 || (i < 8 && ((f->i32Results >> i) & 1))
                         : i < 8 && ((f->i32Operands >> i) & 1);
      bool bf16 = !wantI32 && piperTensorIsBf16(t);
      if (bf16 && mlirShapedTypeHasStaticShape(t) && !bf16Allowed(f, op, res, i)) {
        fail(v, op, "%s #%d is %s, but the bf16 policy keeps it in f32 (a master weight, "
             "moment, weight gradient, statistic or loss: include/piper/ops.h bf16Results)",
             res ? "result" : "operand", (int)i, typeStr(t));
        return false;
      }
      if (!mlirTypeIsARankedTensor(t) || !mlirShapedTypeHasStaticShape(t) ||
          (wantI32 ? !piperTensorIsI32(t) : !piperTensorIsF32(t) && !bf16)) {
        fail(v, op, "%s #%d must be a statically shaped tensor of %s, got %s",
             res ? "result" : "operand", (int)i, wantI32 ? "i32" : "f32", typeStr(t));
        return false;
      }
    }
  }
  return checkSizes(v, op);
}

/* ---- mixture of experts: the shared geometry (see the MoE ops in include/piper/tdag_ops.def) ---- */

/* The most experts a MoE op may name: kernels keep a per-expert table of this size. */
enum { PIPER_MOE_MAX_EXPERTS = 1 << 20 };

/* Same leading dims (all but the last) in `a` and `b`, and rank >= 2 (tokens, then a last dim). */
static bool sameLeading(MlirType a, MlirType b) {
  int64_t r = piperTensorRank(a);
  if (r < 2 || piperTensorRank(b) != r) return false;
  for (int64_t i = 0; i < r - 1; ++i)
    if (piperTensorDim(a, i) != piperTensorDim(b, i)) return false;
  return true;
}

/* Checks num_experts E >= 1, groups G >= 1 dividing E, K in [1, E] (from the (...,K) expert
 * ids `ex`) and that `rows` is (R, C) with R = G * N * min(K, E/G) for the N tokens of `ex`:
 * the static bound every MoE op's rows share. */
static bool moeGeometry(Verifier *v, MlirOperation op, MlirType ex, MlirType rows, int64_t C) {
  /* R stays -1 in the message when G*N*min(K,E/G) overflows int64 */
  int64_t E = piperGetIntAttr(op, "num_experts", 0), G = piperGetIntAttr(op, "groups", 1);
  int64_t K = piperTensorDim(ex, -1), N = piperTensorNumel(ex) / (K > 0 ? K : 1), R = -1, GK;
  if (E < 1 || E > PIPER_MOE_MAX_EXPERTS || G < 1 || G > PIPER_MAX_DEVICES || E % G) {
    fail(v, op, "num_experts = %lld must be in [1, %d] and divisible by groups = %lld (in "
                "[1, %d])", (long long)E, PIPER_MOE_MAX_EXPERTS, (long long)G,
         PIPER_MAX_DEVICES);
    return false;
  }
  if (piperTensorRank(ex) < 2 || K < 1 || K > E) {
    fail(v, op, "experts must be (...,K) with 1 <= K <= num_experts = %lld, got %s",
         (long long)E, typeStr(ex));
    return false;
  }
  int64_t per = K < E / G ? K : E / G;
  if (!piperMulI64(G, per, &GK) || !piperMulI64(GK, N, &R) || !isMatrix(rows, R, C)) {
    fail(v, op, "rows must be (G*N*min(K,E/G), C) = (%lld,%lld) for %lld tokens, K = %lld, "
                "E = %lld, G = %lld; got %s", (long long)R, (long long)C, (long long)N,
         (long long)K, (long long)E, (long long)G, typeStr(rows));
    return false;
  }
  return true;
}

/* The expert operands of moe_experts / moe_experts_grad_input from operand #`first` on: El
 * gates (Fe,C), El ups (Fe,C), El downs (C,Fe), El >= 1, the same Fe throughout; rows
 * `rows` (R,C) with R divisible by groups G, counts (G*El) i32, hidden (R,2Fe). */
static bool moeExperts(Verifier *v, MlirOperation op, intptr_t first, MlirType rows,
                       MlirType counts, MlirType hidden) {
  intptr_t nw = mlirOperationGetNumOperands(op) - first;
  int64_t G = piperGetIntAttr(op, "groups", 1), C = piperTensorDim(rows, -1), GEl = -1;
  if (nw < 3 || nw % 3) {
    fail(v, op, "expects a gate, an up and a down weight for each local expert: a positive "
                "multiple of 3 weights, got %lld", (long long)nw);
    return false;
  }
  /* the three variadic groups hold one weight per expert each */
  MlirAttribute seg = mlirOperationGetAttributeByName(op, piperStr("operandSegmentSizes"));
  intptr_t nSeg = mlirAttributeIsNull(seg) || !mlirAttributeIsADenseI32Array(seg)
                      ? 0
                      : mlirDenseArrayGetNumElements(seg);
  if (nSeg < 3 || mlirDenseI32ArrayGetElement(seg, nSeg - 1) != nw / 3 ||
      mlirDenseI32ArrayGetElement(seg, nSeg - 2) != nw / 3 ||
      mlirDenseI32ArrayGetElement(seg, nSeg - 3) != nw / 3) {
    fail(v, op, "the gates, ups and downs must be %lld weights each (operandSegmentSizes)",
         (long long)(nw / 3));
    return false;
  }
  int64_t El = nw / 3, Fe = piperTensorDim(operandType(op, first), 0);
  for (int64_t j = 0; j < El; ++j) {
    MlirType g = operandType(op, first + j), u = operandType(op, first + El + j),
             d = operandType(op, first + 2 * El + j);
    if (!isMatrix(g, Fe, C) || !isMatrix(u, Fe, C) || !isMatrix(d, C, Fe)) {
      fail(v, op, "expert %lld: expects gate (Fe,C), up (Fe,C), down (C,Fe) with C = %lld, Fe = "
                  "%lld; got %s, %s, %s", (long long)j, (long long)C, (long long)Fe, typeStr(g),
           typeStr(u), typeStr(d));
      return false;
    }
  }
  if (G < 1 || G > PIPER_MAX_DEVICES || piperTensorRank(rows) != 2 || piperTensorDim(rows, 0) % G) {
    fail(v, op, "rows must be (R,C) with R divisible by groups = %lld, got %s", (long long)G,
         typeStr(rows));
    return false;
  }
  /* A device's op holds its El own experts, counts (G*El). Before --piper-extract (the global
   * DAG that `--piper-apply-strategy` prints) the op of a shard directive still holds all E
   * experts of its G replicas, E/G each: counts (G*E/G) = (E). The lowering takes only the
   * first form (lower_to_llvm.c, moeGlobalForm). */
  bool global = G > 1 && El % G == 0 && isVector(counts, El);
  if (!global && (!piperMulI64(G, El, &GEl) || !isVector(counts, GEl))) {
    fail(v, op, "counts must be (groups * local experts) = (%lld), got %s", (long long)GEl,
         typeStr(counts));
    return false;
  }
  if (!isMatrix(hidden, piperTensorDim(rows, 0), 2 * Fe)) {
    fail(v, op, "hidden must be (R, 2Fe) = (%lld,%lld), got %s",
         (long long)piperTensorDim(rows, 0), (long long)(2 * Fe), typeStr(hidden));
    return false;
  }
  return true;
}

/* ---- the shape rule of each tdag op (see the op's comment in include/piper/tdag_ops.def) ----
 * verifyOp has checked every operand's and result's element type and size (checkElementTypes)
 * before it calls one of these, so they read ranked, statically shaped tensors. */

/* True for a backward op: a rule shared by an op and its gradient (layernorm, layernorm_grad)
 * reads which one it checks from the op's kind. */
static bool isGradOp(MlirOperation op) { return piperOpFacts(op)->kind == PIPER_OP_BACKWARD; }

/* param -> tensor of at most 4 dims, init "normal" | "zeros" | "ones" | "buffer" */
static void verifyParam(Verifier *v, MlirOperation op) {
  char init[16];
  piperGetStringAttr(op, "init", init, sizeof init);
  if (strcmp(init, "normal") && strcmp(init, "zeros") && strcmp(init, "ones") &&
      strcmp(init, "buffer"))
    fail(v, op, "init must be \"normal\", \"zeros\" or \"ones\", got \"%s\" (or \"buffer\": "
         "state that is not trained)", init);
  if (piperTensorRank(resultType(op, 0)) > 4)
    fail(v, op, "parameters have at most 4 dims, got %s", typeStr(resultType(op, 0)));
}

/* adam_state {slot} -> a moment used exactly once, as its slot's operand of a tdag.adamw */
static void verifyAdamState(Verifier *v, MlirOperation op) {
  /* The lowering declares a moment by the update that reads it (its parameter's full dims
   * under ZeRO): the moment must feed exactly one tdag.adamw, in its slot's operand. */
  char slot[16] = "";
  piperGetStringAttr(op, "slot", slot, sizeof slot);
  int want = !strcmp(slot, "exp_avg") ? 2 : !strcmp(slot, "exp_avg_sq") ? 3 : -1;
  if (want < 0) {
    fail(v, op, "slot must be \"exp_avg\" or \"exp_avg_sq\", got \"%s\"", slot);
    return;
  }
  MlirOpOperand use = mlirValueGetFirstUse(mlirOperationGetResult(op, 0));
  if (mlirOpOperandIsNull(use) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(use)) ||
      !piperIsOp(mlirOpOperandGetOwner(use), PIPER_TDAG_ADAMW) ||
      mlirOpOperandGetOperandNumber(use) != (unsigned)want)
    fail(v, op, "an AdamW moment (slot \"%s\") must be used exactly once, as operand #%d of "
                "a tdag.adamw", slot, want);
}

/* input {name = "tokens" | "targets"} -> (B,T) i32 */
static void verifyInput(Verifier *v, MlirOperation op) {
  char name[16];
  piperGetStringAttr(op, "name", name, sizeof name);
  if (strcmp(name, "tokens") && strcmp(name, "targets"))
    fail(v, op, "input name must be \"tokens\" or \"targets\", got \"%s\"", name);
  if (piperTensorRank(resultType(op, 0)) != 2)
    fail(v, op, "input must be tensor<BxTxi32>, got %s", typeStr(resultType(op, 0)));
}

/* output(scalar) */
static void verifyOutput(Verifier *v, MlirOperation op) {
  if (piperTensorNumel(operandType(op, 0)) != 1)
    fail(v, op, "output must be a scalar tensor<f32>, got %s", typeStr(operandType(op, 0)));
}

/* embedding: tokens(B,T), wte(V,C), wpe(>=T,C) -> (B,T,C) */
static void verifyEmbedding(Verifier *v, MlirOperation op) {
  MlirType tok = operandType(op, 0), wte = operandType(op, 1), wpe = operandType(op, 2);
  MlirType r = resultType(op, 0);
  int64_t C = piperTensorDim(wte, 1), T = piperTensorDim(tok, 1);
  if (piperTensorRank(tok) != 2 || piperTensorRank(wte) != 2 || piperTensorRank(wpe) != 2 ||
      piperTensorDim(wpe, 1) != C || piperTensorDim(wpe, 0) < T)
    fail(v, op, "expects tokens(B,T), wte(V,C), wpe(>=T,C); got %s, %s, %s", typeStr(tok),
         typeStr(wte), typeStr(wpe));
  else if (piperTensorRank(r) != 3 || piperTensorDim(r, 0) != piperTensorDim(tok, 0) ||
           piperTensorDim(r, 1) != T || piperTensorDim(r, 2) != C)
    fail(v, op, "result must be (B,T,C) = (%lld,%lld,%lld), got %s",
         (long long)piperTensorDim(tok, 0), (long long)T, (long long)C, typeStr(r));
}

/* layernorm: x(...,C), w(C), b(C) -> y like x, mean and rstd like x without C;
 * layernorm_grad: dout, x, w, mean, rstd -> dx like x, dw(C), db(C) */
static void verifyLayernorm(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType x = operandType(op, grad ? 1 : 0), w = operandType(op, grad ? 2 : 1);
  int64_t C = piperTensorDim(x, -1);
  if (!isVector(w, C) || (!grad && !isVector(operandType(op, 2), C)))
    fail(v, op, "weight and bias must be (%lld) to match x %s", (long long)C, typeStr(x));
  else if (grad ? (!sameShape(operandType(op, 0), x) || !sameShape(resultType(op, 0), x) ||
                   !isVector(resultType(op, 1), C) || !isVector(resultType(op, 2), C))
                : (!sameShape(resultType(op, 0), x) || !shapeWithLast(resultType(op, 1), x, -1) ||
                   !shapeWithLast(resultType(op, 2), x, -1)))
    fail(v, op, "result shapes do not match x %s", typeStr(x));
}

/* linear, matmul_nt: x(...,K), weight(N,K) [, bias(N)] -> (...,N) */
static void verifyLinear(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0), b = operandType(op, 1), r = resultType(op, 0);
  int64_t K = piperTensorDim(a, -1), N = piperTensorDim(b, 0);
  if (!isMatrix(b, N, K))
    fail(v, op, "weight must be (N,K) with K = %lld from x %s, got %s", (long long)K,
         typeStr(a), typeStr(b));
  else if (mlirOperationGetNumOperands(op) == 3 && !isVector(operandType(op, 2), N))
    fail(v, op, "bias must be (%lld), got %s", (long long)N, typeStr(operandType(op, 2)));
  else if (!shapeWithLast(r, a, N))
    fail(v, op, "result must be x's shape with last dim %lld, got %s", (long long)N, typeStr(r));
}

/* linear_grad_input: dout(...,N), weight(N,K) -> dx(...,K) */
static void verifyLinearGradInput(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0), b = operandType(op, 1), r = resultType(op, 0);
  if (piperTensorRank(b) != 2 || piperTensorDim(a, -1) != piperTensorDim(b, 0) ||
      !shapeWithLast(r, a, piperTensorDim(b, 1)))
    fail(v, op, "expects dout(...,N), weight(N,K) -> dx(...,K); got %s, %s -> %s", typeStr(a),
         typeStr(b), typeStr(r));
}

/* linear_grad_weight: dout(...,N), x(...,K) -> dweight(N,K) */
static void verifyLinearGradWeight(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0), b = operandType(op, 1), r = resultType(op, 0);
  if (!shapeWithLast(b, a, piperTensorDim(b, -1)) ||
      !isMatrix(r, piperTensorDim(a, -1), piperTensorDim(b, -1)))
    fail(v, op, "expects dout(...,N), x(...,K) -> dweight(N,K); got %s, %s -> %s",
         typeStr(a), typeStr(b), typeStr(r));
}

/* bias_add: x(...,N), bias(N) -> y(...,N) */
static void verifyBiasAdd(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0);
  if (!isVector(operandType(op, 1), piperTensorDim(a, -1)) || !sameShape(resultType(op, 0), a))
    fail(v, op, "expects x(...,N), bias(N) -> y(...,N); got %s, %s -> %s", typeStr(a),
         typeStr(operandType(op, 1)), typeStr(resultType(op, 0)));
}

/* bias_grad: dout(...,N) -> dbias(N) */
static void verifyBiasGrad(Verifier *v, MlirOperation op) {
  if (!isVector(resultType(op, 0), piperTensorDim(operandType(op, 0), -1)))
    fail(v, op, "expects dout(...,N) -> dbias(N); got %s -> %s", typeStr(operandType(op, 0)),
         typeStr(resultType(op, 0)));
}

/* lse is (B, H, T): one log-sum-exp per query row of each head */
static bool isLse(MlirType lse, int64_t B, int64_t H, int64_t T) {
  return piperTensorRank(lse) == 3 && piperTensorDim(lse, 0) == B &&
         piperTensorDim(lse, 1) == H && piperTensorDim(lse, 2) == T;
}

/* attention {heads}: qkv(B,T,3C) -> out(B,T,C), lse(B,H,T);
 * attention_grad: dout, qkv, out, lse -> dqkv like qkv (dout and out (B,T,C)) */
static void verifyAttention(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType qkv = operandType(op, grad ? 1 : 0);
  int64_t H = piperGetIntAttr(op, "heads", 0);
  int64_t B = piperTensorDim(qkv, 0), T = piperTensorDim(qkv, 1), C3 = piperTensorDim(qkv, 2);
  MlirType lse = grad ? operandType(op, 3) : resultType(op, 1);
  MlirType out = grad ? operandType(op, 2) : resultType(op, 0);
  if (piperTensorRank(qkv) != 3 || C3 % 3 != 0)
    fail(v, op, "qkv must be (B,T,3C), got %s", typeStr(qkv));
  else if (H <= 0 || (C3 / 3) % H != 0)
    fail(v, op, "heads = %lld must be positive and divide C = %lld", (long long)H,
         (long long)(C3 / 3));
  else if (!shapeWithLast(out, qkv, C3 / 3) || !isLse(lse, B, H, T))
    fail(v, op, "expects out (B,T,C) and lse (B,H,T) for qkv %s, got %s and %s",
         typeStr(qkv), typeStr(out), typeStr(lse));
  else if (grad && !sameShape(operandType(op, 0), out))
    fail(v, op, "dout %s must have out's shape %s", typeStr(operandType(op, 0)), typeStr(out));
  else if (grad && !sameShape(resultType(op, 0), qkv))
    fail(v, op, "dqkv must have qkv's shape %s", typeStr(qkv));
}

/* gelu, add, gelu_grad (shared): every operand has result #0's shape */
static void verifyElementwise(Verifier *v, MlirOperation op) {
  MlirType r = resultType(op, 0);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (!sameShape(operandType(op, i), r)) {
      fail(v, op, "operand #%d %s and result %s must have the same shape", (int)i,
           typeStr(operandType(op, i)), typeStr(r));
      return;
    }
}

/* An absent label_smoothing, or a float attribute in [0, 1]. */
static bool labelSmoothingOk(MlirOperation op) {
  MlirAttribute e = mlirOperationGetAttributeByName(op, piperStr("label_smoothing"));
  if (mlirAttributeIsNull(e)) return true;
  if (!mlirAttributeIsAFloat(e)) return false;
  double x = mlirFloatAttrGetValueDouble(e);
  return x >= 0.0 && x <= 1.0;
}

/* cross_entropy: logits(...,V), targets(...) -> loss(scalar), probs like logits;
 * cross_entropy_grad: probs(...,V), targets(...) -> dlogits like probs */
static void verifyCrossEntropy(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType a = operandType(op, 0);
  if (!shapeWithLast(operandType(op, 1), a, -1))
    fail(v, op, "targets %s must be logits %s without the last dim",
         typeStr(operandType(op, 1)), typeStr(a));
  else if (grad ? !sameShape(resultType(op, 0), a)
                : (piperTensorNumel(resultType(op, 0)) != 1 || !sameShape(resultType(op, 1), a)))
    fail(v, op, "result shapes do not match logits %s", typeStr(a));
  else if (!labelSmoothingOk(op))
    fail(v, op, "label_smoothing must be a float in [0, 1] (torch's F.cross_entropy)");
}

/* embedding_grad: dout(B,T,C), tokens(B,T) -> dwte(V,C), dwpe(T,C) */
static void verifyEmbeddingGrad(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0);
  if (piperTensorRank(a) != 3 || !shapeWithLast(operandType(op, 1), a, -1) ||
      piperTensorDim(resultType(op, 0), 1) != piperTensorDim(a, 2) ||
      piperTensorDim(resultType(op, 1), 1) != piperTensorDim(a, 2))
    fail(v, op, "expects dout(B,T,C), tokens(B,T) -> dwte(V,C), dwpe(T,C)");
}

/* bucket -> (n) */
static void verifyBucket(Verifier *v, MlirOperation op) {
  if (piperTensorRank(resultType(op, 0)) != 1)
    fail(v, op, "a bucket is a flat tensor, got %s", typeStr(resultType(op, 0)));
}

/* pack_into {offset}: bucket(n), x -> bucket, with x inside [offset, n) */
static void verifyPackInto(Verifier *v, MlirOperation op) {
  int64_t offset = piperGetIntAttr(op, "offset", -1), end;
  if (piperTensorRank(operandType(op, 0)) != 1 || offset < 0 ||
      !piperAddI64(offset, piperTensorNumel(operandType(op, 1)), &end) ||
      end > piperTensorNumel(operandType(op, 0)))
    fail(v, op, "packs %s at offset %lld into %s, which does not hold it",
         typeStr(operandType(op, 1)), (long long)offset, typeStr(operandType(op, 0)));
}

/* view {offset}: bucket(n) -> x, with x inside [offset, n) */
static void verifyView(Verifier *v, MlirOperation op) {
  int64_t offset = piperGetIntAttr(op, "offset", -1), end;
  if (piperTensorRank(operandType(op, 0)) != 1 || offset < 0 ||
      !piperAddI64(offset, piperTensorNumel(resultType(op, 0)), &end) ||
      end > piperTensorNumel(operandType(op, 0)))
    fail(v, op, "views %s at offset %lld of %s, which is not a flat tensor that holds it",
         typeStr(resultType(op, 0)), (long long)offset, typeStr(operandType(op, 0)));
}

/* adamw {shards = R}: param, grad, exp_avg, exp_avg_sq; all the param's shape, or under ZeRO
 * (R > 0) moments of ceil(n/R) and a whole or sharded gradient */
static void verifyAdamw(Verifier *v, MlirOperation op) {
  int64_t R = piperGetIntAttr(op, "shards", 0), n = piperTensorNumel(operandType(op, 0));
  int64_t c = R > 0 ? pb_shard_size(n, R) : 0;
  for (intptr_t i = 1; i < 4 && R == 0; ++i)
    if (!sameShape(operandType(op, i), operandType(op, 0))) {
      fail(v, op, "operand #%d %s must have the parameter's shape %s", (int)i,
           typeStr(operandType(op, i)), typeStr(operandType(op, 0)));
      return;
    }
  /* ZeRO: moments are c = ceil(n/R) elements; the gradient is whole (ZeRO-1) or this
   * replica's c-element shard (ZeRO-2/3) */
  if (R > 0 && (!isVector(operandType(op, 2), c) || !isVector(operandType(op, 3), c) ||
                (piperTensorNumel(operandType(op, 1)) != n &&
                 piperTensorNumel(operandType(op, 1)) != c))) {
    fail(v, op, "with %lld shards of a %lld-element parameter the moments must be (%lld) and "
                "the gradient %lld or %lld elements", (long long)R, (long long)n, (long long)c,
         (long long)n, (long long)c);
    return;
  }
  MlirValue param = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(param) ||
      !piperIsOp(mlirOpResultGetOwner(param), PIPER_TDAG_PARAM))
    fail(v, op, "the updated operand must be a tdag.param");
}

/* embed: tokens(B,T), wte(V,C) -> (B,T,C); embed_grad: dout(B,T,C), tokens(B,T) -> (V,C) */
static void verifyEmbed(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType tok = operandType(op, grad ? 1 : 0);
  MlirType wte = grad ? resultType(op, 0) : operandType(op, 1);
  MlirType x = grad ? operandType(op, 0) : resultType(op, 0);
  if (piperTensorRank(tok) != 2 || piperTensorRank(wte) != 2 || piperTensorRank(x) != 3 ||
      piperTensorDim(x, 0) != piperTensorDim(tok, 0) ||
      piperTensorDim(x, 1) != piperTensorDim(tok, 1) ||
      piperTensorDim(x, 2) != piperTensorDim(wte, 1))
    fail(v, op, "expects tokens(B,T), wte(V,C) and x(B,T,C); got tokens %s, wte %s, x %s",
         typeStr(tok), typeStr(wte), typeStr(x));
}

/* rmsnorm {eps}: x(...,N), w(D) with D dividing N -> y like x, rstd like x with last dim N/D;
 * rmsnorm_grad: dout, x, w, rstd -> dx like x, dw like w */
static void verifyRmsnorm(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType x = operandType(op, grad ? 1 : 0), w = operandType(op, grad ? 2 : 1);
  MlirType rstd = grad ? operandType(op, 3) : resultType(op, 1);
  int64_t N = piperTensorDim(x, -1), D = piperTensorDim(w, 0);
  if (piperTensorRank(x) < 1 || piperTensorRank(w) != 1 || D <= 0 || N % D != 0)
    fail(v, op, "weight must be (D) with D dividing the last dim of x %s, got %s", typeStr(x),
         typeStr(w));
  else if (!shapeWithLast(rstd, x, N / D))
    fail(v, op, "rstd must be x's shape with last dim %lld (one per chunk of %lld), got %s",
         (long long)(N / D), (long long)D, typeStr(rstd));
  else if (!sameShape(resultType(op, 0), x) ||
           (grad && (!sameShape(operandType(op, 0), x) || !sameShape(resultType(op, 1), w))))
    fail(v, op, "shapes do not match x %s and weight %s", typeStr(x), typeStr(w));
  else if (!grad && !(piperGetFloatAttr(op, "eps", -1.0) > 0.0))
    fail(v, op, "eps must be positive");
}

/* rope, rope_grad {head_dim = D, theta > 0}: x(B,T,H*D), D even -> same shape */
static void verifyRope(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0);
  int64_t D = piperGetIntAttr(op, "head_dim", 0), N = piperTensorDim(a, -1);
  double theta = piperGetFloatAttr(op, "theta", 0.0);
  if (piperTensorRank(a) != 3)
    fail(v, op, "x must be (B,T,H*D), got %s", typeStr(a));
  else if (D <= 0 || D % 2 != 0 || N % D != 0)
    fail(v, op, "head_dim = %lld must be positive, even and divide the last dim of %s",
         (long long)D, typeStr(a));
  else if (!(theta > 0.0))
    fail(v, op, "theta must be positive, got %g", theta);
  else if (!sameShape(resultType(op, 0), a))
    fail(v, op, "result %s must have x's shape %s", typeStr(resultType(op, 0)), typeStr(a));
}

/* swiglu, swiglu_grad (shared): every operand and result has operand #0's shape */
static void verifySameShape(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0);
  for (int res = 0; res < 2; ++res)
    for (intptr_t i = 0; i < (res ? mlirOperationGetNumResults(op)
                                  : mlirOperationGetNumOperands(op)); ++i)
      if (!sameShape(res ? resultType(op, i) : operandType(op, i), a)) {
        fail(v, op, "%s #%d %s must have operand #0's shape %s", res ? "result" : "operand",
             (int)i, typeStr(res ? resultType(op, i) : operandType(op, i)), typeStr(a));
        return;
      }
}

/* gqa_attention {heads = H, kv_heads = KV}: q(B,T,H*D), k, v(B,T,KV*D), KV dividing H ->
 * out like q, lse(B,H,T); gqa_attention_grad: dout, q, k, v, out, lse -> dq, dk, dv (dout and
 * out like q) */
static void verifyGqaAttention(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  int o = grad ? 1 : 0;
  MlirType q = operandType(op, o), k = operandType(op, o + 1), vv = operandType(op, o + 2);
  MlirType out = grad ? operandType(op, 4) : resultType(op, 0);
  MlirType lse = grad ? operandType(op, 5) : resultType(op, 1);
  int64_t H = piperGetIntAttr(op, "heads", 0), KV = piperGetIntAttr(op, "kv_heads", 0);
  int64_t B = piperTensorDim(q, 0), T = piperTensorDim(q, 1), HD = piperTensorDim(q, 2);
  if (H <= 0 || KV <= 0 || H % KV != 0)
    fail(v, op, "heads = %lld and kv_heads = %lld must be positive, kv_heads dividing heads",
         (long long)H, (long long)KV);
  else if (piperTensorRank(q) != 3 || HD % H != 0)
    fail(v, op, "q must be (B,T,H*D) with H = %lld, got %s", (long long)H, typeStr(q));
  else if (!shapeWithLast(k, q, HD / H * KV) || !sameShape(vv, k))
    fail(v, op, "k and v must be (B,T,KV*D) = (%lld,%lld,%lld) for q %s, got %s and %s",
         (long long)B, (long long)T, (long long)(HD / H * KV), typeStr(q), typeStr(k),
         typeStr(vv));
  else if (!sameShape(out, q) || !isLse(lse, B, H, T))
    fail(v, op, "expects out like q %s and lse (B,H,T), got %s and %s", typeStr(q),
         typeStr(out), typeStr(lse));
  else if (grad && !sameShape(operandType(op, 0), q))
    fail(v, op, "dout %s must have out's shape %s", typeStr(operandType(op, 0)), typeStr(out));
  else if (grad && (!sameShape(resultType(op, 0), q) || !sameShape(resultType(op, 1), k) ||
                    !sameShape(resultType(op, 2), vv)))
    fail(v, op, "dq, dk, dv must have the shapes of q, k, v");
}

/* moe_topk {top_k = K}: logits(...,E) -> weights(...,K), experts(...,K);
 * moe_topk_grad: dweights, weights, experts -> dlogits(...,E) */
static void verifyMoeTopk(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType logits = grad ? resultType(op, 0) : operandType(op, 0);
  MlirType w = grad ? operandType(op, 1) : resultType(op, 0);
  MlirType ex = grad ? operandType(op, 2) : resultType(op, 1);
  int64_t E = piperTensorDim(logits, -1), K = piperTensorDim(w, -1);
  if (!grad && piperGetIntAttr(op, "top_k", 0) != K)
    fail(v, op, "top_k = %lld must be the last dim of the weights %s",
         (long long)piperGetIntAttr(op, "top_k", 0), typeStr(w));
  else if (!sameLeading(w, logits) || !sameShape(ex, w) || K < 1 || K > E ||
           (grad && !sameShape(operandType(op, 0), w)))
    fail(v, op, "expects logits (...,E), weights and experts (...,K) with 1 <= K <= E; got %s, "
                "%s, %s", typeStr(logits), typeStr(w), typeStr(ex));
}

/* moe_dispatch: h(...,C), experts(...,K) -> rows(R,C), counts(E);
 * moe_dispatch_grad: drows(R,C), experts(...,K) -> dh(...,C) */
static void verifyMoeDispatch(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  MlirType h = grad ? resultType(op, 0) : operandType(op, 0);
  MlirType rows = grad ? operandType(op, 0) : resultType(op, 0);
  MlirType ex = operandType(op, 1);
  if (!sameLeading(h, ex)) {
    fail(v, op, "h %s and experts %s must have the same leading (token) dims", typeStr(h),
         typeStr(ex));
    return;
  }
  if (!moeGeometry(v, op, ex, rows, piperTensorDim(h, -1))) return;
  if (!grad && !isVector(resultType(op, 1), piperGetIntAttr(op, "num_experts", 0)))
    fail(v, op, "counts must be (num_experts) = (%lld), got %s",
         (long long)piperGetIntAttr(op, "num_experts", 0), typeStr(resultType(op, 1)));
}

/* moe_experts: rows(R,C), counts, gates, ups, downs -> out like rows, hidden(R,2Fe) */
static void verifyMoeExperts(Verifier *v, MlirOperation op) {
  MlirType rows = operandType(op, 0);
  if (moeExperts(v, op, 2, rows, operandType(op, 1), resultType(op, 1)) &&
      !sameShape(resultType(op, 0), rows))
    fail(v, op, "out must have the rows' shape %s, got %s", typeStr(rows),
         typeStr(resultType(op, 0)));
}

/* moe_experts_grad_input: dout(R,C), counts, hidden, gates, ups, downs -> drows like dout */
static void verifyMoeExpertsGradInput(Verifier *v, MlirOperation op) {
  MlirType dout = operandType(op, 0);
  if (moeExperts(v, op, 3, dout, operandType(op, 1), operandType(op, 2)) &&
      !sameShape(resultType(op, 0), dout))
    fail(v, op, "drows must have dout's shape %s, got %s", typeStr(dout),
         typeStr(resultType(op, 0)));
}

/* moe_experts_grad_weight {groups = G, expert = j}: dout, rows(R,C), counts(G*El),
 * hidden(R,2Fe), down(C,Fe) -> dgate(Fe,C), dup(Fe,C), ddown(C,Fe) of local expert j */
static void verifyMoeExpertsGradWeight(Verifier *v, MlirOperation op) {
  MlirType dout = operandType(op, 0), rows = operandType(op, 1), counts = operandType(op, 2);
  MlirType hidden = operandType(op, 3), down = operandType(op, 4);
  int64_t G = piperGetIntAttr(op, "groups", 1), j = piperGetIntAttr(op, "expert", -1);
  int64_t C = piperTensorDim(rows, -1), Fe = piperTensorDim(down, 1), R = piperTensorDim(rows, 0);
  int64_t El = G > 0 ? piperTensorNumel(counts) / G : 0;
  if (G < 1 || G > PIPER_MAX_DEVICES || piperTensorRank(rows) != 2 || R % G || !sameShape(dout, rows) ||
      !isMatrix(down, C, Fe) || !isMatrix(hidden, R, 2 * Fe) || piperTensorRank(counts) != 1 ||
      piperTensorNumel(counts) % G)
    fail(v, op, "expects dout and rows (R,C), counts (G*El), hidden (R,2Fe), down (C,Fe) with "
                "groups = %lld dividing R; got %s, %s, %s, %s, %s", (long long)G, typeStr(dout),
         typeStr(rows), typeStr(counts), typeStr(hidden), typeStr(down));
  else if (j < 0 || j >= El)
    fail(v, op, "expert = %lld must be a local expert index in [0, %lld)", (long long)j,
         (long long)El);
  else if (!isMatrix(resultType(op, 0), Fe, C) || !isMatrix(resultType(op, 1), Fe, C) ||
           !isMatrix(resultType(op, 2), C, Fe))
    fail(v, op, "results must be dgate (Fe,C), dup (Fe,C), ddown (C,Fe) = (%lld,%lld), "
                "(%lld,%lld), (%lld,%lld)", (long long)Fe, (long long)C, (long long)Fe,
         (long long)C, (long long)C, (long long)Fe);
}

/* moe_combine: out(R,C), weights(...,K), experts(...,K) -> y(...,C);
 * moe_combine_grad: dy, out, weights, experts -> dout like out, dweights like weights */
static void verifyMoeCombine(Verifier *v, MlirOperation op) {
  bool grad = isGradOp(op);
  intptr_t o = grad ? 1 : 0; /* the grad's operands are dy, then the forward's */
  MlirType out = operandType(op, o), w = operandType(op, o + 1), ex = operandType(op, o + 2);
  MlirType y = grad ? operandType(op, 0) : resultType(op, 0);
  if (!sameShape(w, ex) || !sameLeading(y, ex) || piperTensorDim(y, -1) != piperTensorDim(out, -1)) {
    fail(v, op, "expects weights and experts (...,K) and y (...,C) over the same tokens, C = "
                "the rows' last dim; got %s, %s, %s, %s", typeStr(w), typeStr(ex), typeStr(y),
         typeStr(out));
    return;
  }
  if (!moeGeometry(v, op, ex, out, piperTensorDim(y, -1))) return;
  if (grad && (!sameShape(resultType(op, 0), out) || !sameShape(resultType(op, 1), w)))
    fail(v, op, "results must be dout %s and dweights %s", typeStr(out), typeStr(w));
}

/* ---- the general tensor ops (python/piper's; include/piper/tdag_ops.def) ---- */

bool piperPermuteOf(MlirOperation op, int64_t rank, int64_t *perm) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr("perm"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI64Array(a) || rank > PIPER_MAX_RANK ||
      mlirDenseArrayGetNumElements(a) != rank)
    return false;
  bool seen[PIPER_MAX_RANK] = {false};
  for (int64_t i = 0; i < rank; ++i) {
    perm[i] = mlirDenseI64ArrayGetElement(a, i);
    if (perm[i] < 0 || perm[i] >= rank || seen[perm[i]]) return false;
    seen[perm[i]] = true;
  }
  return true;
}

/* True if `small` broadcasts to `big` by numpy's rule: dims right-aligned, each of small's 1
 * or big's. */
static bool broadcastsTo(MlirType small, MlirType big) {
  int64_t rs = piperTensorRank(small), rb = piperTensorRank(big);
  if (rs > rb) return false;
  for (int64_t i = 1; i <= rs; ++i) {
    int64_t s = piperTensorDim(small, rs - i);
    if (s != 1 && s != piperTensorDim(big, rb - i)) return false;
  }
  return true;
}

/* True if `small`, without its leading dims of 1, is the trailing dims of `big`: read
 * cyclically (small[i % numel(small)]) it is big's numpy broadcast (the suffix broadcast). */
static bool suffixOf(MlirType small, MlirType big) {
  int64_t rs = piperTensorRank(small), rb = piperTensorRank(big), lead = 0;
  while (lead < rs && piperTensorDim(small, lead) == 1) lead++;
  if (rs - lead > rb) return false;
  for (int64_t i = lead; i < rs; ++i)
    if (piperTensorDim(small, i) != piperTensorDim(big, rb - rs + i)) return false;
  return true;
}

/* reshape: x and out hold as many elements */
static void verifyReshape(Verifier *v, MlirOperation op) {
  if (piperTensorNumel(operandType(op, 0)) != piperTensorNumel(resultType(op, 0)))
    fail(v, op, "reshape keeps the element count: %s cannot become %s",
         typeStr(operandType(op, 0)), typeStr(resultType(op, 0)));
}

/* permute {perm}: out dim i = x dim perm[i] */
static void verifyPermute(Verifier *v, MlirOperation op) {
  MlirType x = operandType(op, 0), out = resultType(op, 0);
  int64_t r = piperTensorRank(x), perm[PIPER_MAX_RANK];
  if (!piperPermuteOf(op, r, perm)) {
    fail(v, op, "needs `perm`, a permutation of 0..%lld as array<i64: ...>, for x %s "
         "(at most %d dims)", (long long)(r - 1), typeStr(x), PIPER_MAX_RANK);
    return;
  }
  bool ok = piperTensorRank(out) == r;
  for (int64_t i = 0; ok && i < r; ++i) ok = piperTensorDim(out, i) == piperTensorDim(x, perm[i]);
  if (!ok) fail(v, op, "result %s is not x %s permuted by perm", typeStr(out), typeStr(x));
}

/* broadcast: x broadcasts to out */
static void verifyBroadcast(Verifier *v, MlirOperation op) {
  if (!broadcastsTo(operandType(op, 0), resultType(op, 0)))
    fail(v, op, "x %s does not broadcast to %s (dims right-aligned, each 1 or the result's)",
         typeStr(operandType(op, 0)), typeStr(resultType(op, 0)));
}

/* sum_to: out broadcasts to x */
static void verifySumTo(Verifier *v, MlirOperation op) {
  if (!broadcastsTo(resultType(op, 0), operandType(op, 0)))
    fail(v, op, "result %s must broadcast to x %s: it sums the dims broadcasting adds",
         typeStr(resultType(op, 0)), typeStr(operandType(op, 0)));
}

/* slice {dim, start}: out is x narrowed to [start, start + out[dim]) of dim;
 * slice_grad: the same with x and out swapped */
static void verifySlice(Verifier *v, MlirOperation op) {
  bool grad = piperIsOp(op, PIPER_TDAG_SLICE_GRAD);
  MlirType whole = grad ? resultType(op, 0) : operandType(op, 0);
  MlirType part = grad ? operandType(op, 0) : resultType(op, 0);
  int64_t r = piperTensorRank(whole), d = piperGetIntAttr(op, "dim", -1);
  int64_t start = piperGetIntAttr(op, "start", -1);
  bool ok = d >= 0 && d < r && piperTensorRank(part) == r && start >= 0 &&
            start <= piperTensorDim(whole, d) - piperTensorDim(part, d);
  for (int64_t i = 0; ok && i < r; ++i)
    ok = i == d || piperTensorDim(part, i) == piperTensorDim(whole, i);
  if (!ok)
    fail(v, op, "%s is not a slice of %s at dim = %lld, start = %lld", typeStr(part),
         typeStr(whole), (long long)d, (long long)start);
}

/* concat {dim}: operands equal but in dim, where their sizes may differ; out's dim is their
 * sum */
static void verifyConcat(Verifier *v, MlirOperation op) {
  MlirType out = resultType(op, 0);
  int64_t r = piperTensorRank(out), d = piperGetIntAttr(op, "dim", -1), sum = 0;
  intptr_t n = mlirOperationGetNumOperands(op);
  bool ok = n > 0 && d >= 0 && d < r;
  for (intptr_t k = 0; ok && k < n; ++k) {
    MlirType x = operandType(op, k);
    ok = piperTensorRank(x) == r;
    for (int64_t i = 0; ok && i < r; ++i)
      ok = i == d || piperTensorDim(x, i) == piperTensorDim(out, i);
    sum += ok ? piperTensorDim(x, d) : 0;
  }
  if (!ok || sum != piperTensorDim(out, d))
    fail(v, op, "operands must equal the result %s but in dim = %lld, whose sizes sum to its",
         typeStr(out), (long long)d);
}

/* bmm {transpose_a, transpose_b}: a, b, out of one rank >= 3 with equal leading dims; op(a)
 * (M,K), op(b) (K,N), out (M,N) */
static void verifyBmm(Verifier *v, MlirOperation op) {
  MlirType a = operandType(op, 0), b = operandType(op, 1), out = resultType(op, 0);
  int64_t r = piperTensorRank(out);
  bool ta = piperGetIntAttr(op, "transpose_a", 0), tb = piperGetIntAttr(op, "transpose_b", 0);
  bool ok = r >= 3 && piperTensorRank(a) == r && piperTensorRank(b) == r;
  for (int64_t i = 0; ok && i < r - 2; ++i)
    ok = piperTensorDim(a, i) == piperTensorDim(out, i) &&
         piperTensorDim(b, i) == piperTensorDim(out, i);
  int64_t M = piperTensorDim(a, ta ? -1 : -2), K = piperTensorDim(a, ta ? -2 : -1);
  int64_t Kb = piperTensorDim(b, tb ? -1 : -2), N = piperTensorDim(b, tb ? -2 : -1);
  if (!ok || K != Kb || piperTensorDim(out, -2) != M || piperTensorDim(out, -1) != N)
    fail(v, op, "expects a (...,M,K) and b (...,K,N) (after transpose_a = %d, transpose_b = "
         "%d) of equal leading dims, at least one, -> (...,M,N); got %s, %s -> %s", ta, tb,
         typeStr(a), typeStr(b), typeStr(out));
}

/* add_bcast, sub, mul, div: each operand the result's shape or a suffix broadcast of it */
static void verifyBinary(Verifier *v, MlirOperation op) {
  MlirType out = resultType(op, 0);
  if (!sameShape(operandType(op, 0), out) && !sameShape(operandType(op, 1), out)) {
    fail(v, op, "one operand must have the result's shape %s, got %s and %s", typeStr(out),
         typeStr(operandType(op, 0)), typeStr(operandType(op, 1)));
    return;
  }
  for (intptr_t k = 0; k < 2; ++k)
    if (!suffixOf(operandType(op, k), out)) {
      fail(v, op, "operand #%d %s must be the result's shape %s or its trailing dims (leading "
           "1s allowed)", (int)k, typeStr(operandType(op, k)), typeStr(out));
      return;
    }
}

/* masked_fill: x like out; mask the result's shape or its suffix broadcast */
static void verifyMaskedFill(Verifier *v, MlirOperation op) {
  MlirType out = resultType(op, 0);
  if (!sameShape(operandType(op, 0), out) || !suffixOf(operandType(op, 1), out))
    fail(v, op, "expects x of the result's shape %s and a mask of its trailing dims; got %s, %s",
         typeStr(out), typeStr(operandType(op, 0)), typeStr(operandType(op, 1)));
}

/* softmax, log_softmax and their gradients: elementwise shapes, dim within the rank */
static void verifySoftmax(Verifier *v, MlirOperation op) {
  int64_t d = piperGetIntAttr(op, "dim", -1), r = piperTensorRank(resultType(op, 0));
  if (d < 0 || d >= r)
    fail(v, op, "dim = %lld is outside 0..%lld", (long long)d, (long long)(r - 1));
  else verifyElementwise(v, op);
}

/* triangle: out (R,C) */
static void verifyTriangle(Verifier *v, MlirOperation op) {
  if (piperTensorRank(resultType(op, 0)) != 2)
    fail(v, op, "result must be (R,C), got %s", typeStr(resultType(op, 0)));
}

/* rope_table {head_dim = D, theta > 0}: out (T, N), N = D or D/2, D even */
static void verifyRopeTable(Verifier *v, MlirOperation op) {
  MlirType t = resultType(op, 0);
  int64_t D = piperGetIntAttr(op, "head_dim", 0), N = piperTensorDim(t, 1);
  if (piperTensorRank(t) != 2 || D <= 0 || D % 2 || (N != D && N != D / 2) ||
      !(piperGetFloatAttr(op, "theta", 0.0) > 0.0))
    fail(v, op, "expects (T, head_dim) or (T, head_dim / 2) for an even head_dim %lld and "
         "theta > 0, got %s", (long long)D, typeStr(t));
}

/* full: any shape */
static void verifyFull(Verifier *v, MlirOperation op) {}

/* The shape rule of each op, by id: the shape column of include/piper/tdag_ops.def (NONE: IRDL's
 * checks are all it has). */
typedef void (*ShapeRule)(Verifier *v, MlirOperation op);
#define NONE NULL
static const ShapeRule shapeRules[PIPER_TDAG_OP_COUNT] = {
#define TDAG_OP(ID, n, KIND, attributes, operands, results, shape, grad, lower, ...) \
  [PIPER_TDAG_##ID] = shape,
#include "piper/tdag_ops.def"
};
#undef NONE

/* The shape rule of one tdag op: its element types, then the rule of its id. */
static void verifyOp(Verifier *v, MlirOperation op) {
  const PiperOpFacts *f = piperOpFacts(op);
  if (!f) return; /* not a tdag op IRDL defines: IRDL has said so */
  if (!shapeRules[f->id]) return; /* a graph-level op (node): IRDL checks it */
  if (!checkElementTypes(v, op)) return;
  shapeRules[f->id](v, op);
}

/* A device-id list attribute `name` of `op` (devices, group, peers), if present: a non-empty
 * array of integers in [0, PIPER_MAX_DEVICES), or a canonical range of such ids
 * (dialects/device_list.c). Passes index per-device tables with these. */
static void verifyDeviceList(Verifier *v, MlirOperation op, const char *name) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a) || piperDeviceListCheck(a, PIPER_MAX_DEVICES)) return;
  fail(v, op, "%s must be a non-empty list of device ids in [0, %d], or a range array<i64: "
       "START, COUNT, STEP, RUN> of more than %d of them (COUNT >= 2; STEP = 1 with RUN = 1, "
       "or STEP > RUN)", name, PIPER_MAX_DEVICES - 1, PIPER_LIST_EXPLICIT_MAX);
}

/* An integer attribute `name` of `op`, if present, in [lo, hi]; false after an error. */
static bool verifyIntAttr(Verifier *v, MlirOperation op, const char *name, int64_t lo,
                          int64_t hi) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(name));
  if (mlirAttributeIsNull(a)) return true;
  if (mlirAttributeIsAInteger(a) && mlirIntegerAttrGetValueInt(a) >= lo &&
      mlirIntegerAttrGetValueInt(a) <= hi)
    return true;
  fail(v, op, "%s must be an integer in [%lld, %lld]", name, (long long)lo, (long long)hi);
  return false;
}

/* `tags`, if present, is a dictionary of integer tags (the annotations: PP = 1, layer = 3,
 * mb = 2): every pass that groups or filters ops reads it as one. */
static void verifyTags(Verifier *v, MlirOperation op) {
  MlirAttribute tags = mlirOperationGetAttributeByName(op, piperStr("tags"));
  if (mlirAttributeIsNull(tags)) return;
  bool ok = mlirAttributeIsADictionary(tags);
  for (intptr_t i = 0; ok && i < mlirDictionaryAttrGetNumElements(tags); ++i)
    ok = mlirAttributeIsAInteger(mlirDictionaryAttrGetElement(tags, i).attribute);
  if (!ok) fail(v, op, "tags must be a dictionary of integer tags, e.g. {PP = 0 : i64, layer = 1 : i64}");
}

/* What passes read from any tdag or comm op: device lists, ZeRO shard geometry (shards = R
 * replicas >= 1, shard = k in [0, R): the memory plan divides by R and offsets by k), tensor
 * sizes int64 can count. */
static void verifyPlacement(Verifier *v, MlirOperation op) {
  verifyTags(v, op);
  verifyDeviceList(v, op, "devices");
  verifyDeviceList(v, op, "group");
  verifyDeviceList(v, op, "peers");
  verifyIntAttr(v, op, "peer", 0, PIPER_MAX_DEVICES - 1);
  /* extraction gives replica k the peer at position k */
  MlirAttribute devices = mlirOperationGetAttributeByName(op, piperStr("devices"));
  MlirAttribute peers = mlirOperationGetAttributeByName(op, piperStr("peers"));
  if (piperDeviceListLen(devices) && piperDeviceListLen(peers) &&
      piperDeviceListLen(devices) != piperDeviceListLen(peers))
    fail(v, op, "peers must list one device per device in devices (%lld), got %lld",
         (long long)piperDeviceListLen(devices), (long long)piperDeviceListLen(peers));
  if (verifyIntAttr(v, op, "shards", 1, PIPER_MAX_DEVICES))
    verifyIntAttr(v, op, "shard", 0, piperGetIntAttr(op, "shards", 1) - 1);
  /* piperGetIntAttr reads a non-integer as its fallback: `groups = "2"` would pass as one
   * group, `tp_offset = 1.5` as offset 0; their ranges are checked where they are used
   * (the MoE shape rules, verifyTpSlice) */
  static const char *intAttrs[] = {"groups", "tp_offset"};
  for (int i = 0; i < 2; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(intAttrs[i]));
    if (!mlirAttributeIsNull(a) && !mlirAttributeIsAInteger(a))
      fail(v, op, "%s must be an integer", intAttrs[i]);
  }
  if (piperOpInDialect(op, "comm")) checkSizes(v, op);
}

/* A filter of a sched op: tag entries are an integer index >= 0 or "*", PASS one of F, B, BI,
 * BW (piperFilterMatches reads them as such). */
static bool filterOk(MlirAttribute f) {
  if (!mlirAttributeIsADictionary(f)) return false;
  for (intptr_t i = 0; i < mlirDictionaryAttrGetNumElements(f); ++i) {
    MlirNamedAttribute e = mlirDictionaryAttrGetElement(f, i);
    MlirStringRef key = mlirIdentifierStr(e.name);
    if (key.length == 4 && !memcmp(key.data, "PASS", 4)) {
      if (!mlirAttributeIsAString(e.attribute)) return false;
      MlirStringRef p = mlirStringAttrGetValue(e.attribute);
      char pass[4] = "";
      if (p.length > 2) return false;
      if (p.length) memcpy(pass, p.data, p.length); /* "" may have a null data pointer */
      if (strcmp(pass, "F") && strcmp(pass, "B") && strcmp(pass, "BI") && strcmp(pass, "BW"))
        return false;
    } else if (mlirAttributeIsAString(e.attribute)) {
      MlirStringRef p = mlirStringAttrGetValue(e.attribute);
      if (p.length != 1 || p.data[0] != '*') return false;
    } else if (!mlirAttributeIsAInteger(e.attribute) ||
               mlirIntegerAttrGetValueInt(e.attribute) < 0) {
      return false;
    }
  }
  return true;
}

/* A sched op written by hand (a .mlir strategy) must hold what the JSON importer guarantees of
 * its directive's fields (include/piper/directives.def): well-formed filters, device lists,
 * counts and names, so the directive passes can read them. Kinds are checked in this order;
 * BOOL and NUMBER fields are read by their passes, which take a missing or odd one as absent. */
static void verifySched(Verifier *v, MlirOperation op) {
  static const char *filterHelp =
      "a filter maps tag names to an integer index >= 0 or \"*\", and PASS to \"F\", \"B\", "
      "\"BI\" or \"BW\"";
  const PiperDirective *d = piperDirectiveOf(op);
  static const PiperFieldKind order[] = {PIPER_FIELD_FILTER, PIPER_FIELD_FILTER_GROUPS,
                                         PIPER_FIELD_DEVICES, PIPER_FIELD_COUNT,
                                         PIPER_FIELD_STRING};
  for (size_t o = 0; d && o < sizeof order / sizeof order[0]; ++o)
    for (int f = 0; f < d->nFields; ++f) {
      const PiperDirectiveField *field = &d->fields[f];
      MlirAttribute a = mlirOperationGetAttributeByName(op, piperStr(field->name));
      if (field->kind != order[o] || mlirAttributeIsNull(a)) continue;
      switch (field->kind) {
      case PIPER_FIELD_FILTER:
        if (!filterOk(a)) fail(v, op, "%s: %s", field->name, filterHelp);
        break;
      case PIPER_FIELD_FILTER_GROUPS: {
        bool ok = mlirAttributeIsAArray(a);
        for (intptr_t g = 0; ok && g < mlirArrayAttrGetNumElements(a); ++g) {
          MlirAttribute fs = mlirArrayAttrGetElement(a, g);
          ok = mlirAttributeIsAArray(fs);
          for (intptr_t k = 0; ok && k < mlirArrayAttrGetNumElements(fs); ++k)
            ok = filterOk(mlirArrayAttrGetElement(fs, k));
        }
        if (!ok)
          fail(v, op, "%s must be a list of lists of filters; %s", field->name, filterHelp);
        break;
      }
      case PIPER_FIELD_DEVICES: verifyDeviceList(v, op, field->name); break;
      case PIPER_FIELD_COUNT: verifyIntAttr(v, op, field->name, 1, PIPER_MAX_MICROBATCHES); break;
      case PIPER_FIELD_STRING:
        /* stream names: the passes copy them onto comm ops, whose lowering would read a
         * non-string as "compute" without a word */
        if (!mlirAttributeIsAString(a) || mlirStringAttrGetValue(a).length == 0)
          fail(v, op, "%s must be a non-empty string", field->name);
        break;
      case PIPER_FIELD_BOOL:
      case PIPER_FIELD_NUMBER: break;
      }
    }
}

/* An array of n (n_lo..n_hi) integers >= lo into out; false if it is not one. */
static bool intList(MlirAttribute a, intptr_t nLo, intptr_t nHi, int64_t lo, int64_t *out) {
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAArray(a)) return false;
  intptr_t n = mlirArrayAttrGetNumElements(a);
  if (n < nLo || n > nHi) return false;
  for (intptr_t i = 0; i < n; ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(a, i);
    if (!mlirAttributeIsAInteger(e) || mlirIntegerAttrGetValueInt(e) < lo) return false;
    out[i] = mlirIntegerAttrGetValueInt(e);
  }
  return true;
}

/* Tensor parallelism (passes/shard_tensor.c): a split parameter or moment's tp_full (the
 * whole shape, 1..4 dims) and tp_slice = [block, stride, blocks, step] must describe its own
 * type: blocks * block elements, inside the whole tensor (with tp_offset, the member's first
 * element, when extraction set it). The lowering and the runtime size storage from them. */
static void verifyTpSlice(Verifier *v, MlirOperation op) {
  MlirAttribute full = mlirOperationGetAttributeByName(op, piperStr("tp_full"));
  MlirAttribute slice = mlirOperationGetAttributeByName(op, piperStr("tp_slice"));
  if (mlirAttributeIsNull(full) && mlirAttributeIsNull(slice)) return;
  if (!piperIsOp(op, PIPER_TDAG_PARAM) && !piperIsOp(op, PIPER_TDAG_ADAM_STATE)) {
    fail(v, op, "tp_full and tp_slice belong on a tdag.param or tdag.adam_state");
    return;
  }
  int64_t dims[4], sl[4], wholeN = 1, local, last;
  bool ok = intList(full, 1, 4, 1, dims) && intList(slice, 4, 4, 1, sl);
  for (intptr_t i = 0; ok && i < mlirArrayAttrGetNumElements(full); ++i)
    ok = piperMulI64(wholeN, dims[i], &wholeN);
  int64_t offset = piperGetIntAttr(op, "tp_offset", 0);
  /* ZeRO over the data-parallel replicas of a slice types a moment as ceil(local / shards)
   * elements (a ZeRO-3 parameter keeps the slice's type) */
  int64_t R = piperGetIntAttr(op, "shards", 1), n = piperTensorNumel(resultType(op, 0));
  ok = ok && offset >= 0 && R >= 1 && piperMulI64(sl[0], sl[2], &local) &&
       (local == n || (R > 1 && pb_shard_size(local, R) == n)) && (sl[2] == 1 || sl[1] >= sl[0]) &&
       piperMulI64(sl[2] - 1, sl[1], &last) && piperAddI64(last, sl[0], &last) &&
       piperAddI64(last, offset, &last) && last <= wholeN;
  if (!ok)
    fail(v, op, "tp_full and tp_slice must be the whole shape and [block, stride, blocks, "
                "step] (positive integers) of blocks * block = %lld elements (or, with shards, "
                "a ZeRO shard of that many) inside it",
         (long long)piperTensorNumel(resultType(op, 0)));
}

static MlirWalkResult verifyWalk(MlirOperation op, void *userData) {
  if (piperOpInDialect(op, "tdag")) verifyTpSlice(userData, op);
  if (piperOpInDialect(op, "tdag")) verifyOp(userData, op);
  if (piperOpInDialect(op, "tdag") || piperOpInDialect(op, "comm")) verifyPlacement(userData, op);
  if (piperOpInDialect(op, "sched")) verifySched(userData, op);
  return MlirWalkResultAdvance;
}

MlirLogicalResult piperVerifyTdag(MlirOperation root) {
  Verifier v = {0};
  mlirOperationWalk(root, verifyWalk, &v, MlirWalkPreOrder);
  return v.errors ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}

int64_t piperPlanFunctionNumber(MlirStringRef name, const char *prefix) {
  size_t k = strlen(prefix);
  char buf[32];
  if (name.length <= k || name.length - k >= sizeof buf || memcmp(name.data, prefix, k))
    return -1;
  memcpy(buf, name.data + k, name.length - k);
  buf[name.length - k] = 0;
  int64_t d;
  if (!(buf[0] >= '0' && buf[0] <= '9') || (buf[0] == '0' && buf[1]) ||
      !piperParseI64(buf, 0, PIPER_MAX_DEVICES - 1, &d))
    return -1;
  return d;
}

int64_t piperDeviceFunctionNumber(MlirStringRef name) {
  return piperPlanFunctionNumber(name, "device_");
}
