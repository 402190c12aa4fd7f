/* The op-facts tables (include/piper/ops.h): one row per entry of include/piper/tdag_ops.def,
 * in its order, and one per entry of include/piper/comm_ops.def. Rows name what each pass and
 * the lowering ask of the op; rules that are code (shape, gradient, kernel arguments) stay with
 * the pass that applies them. */
#include <string.h>

#include "mlir-c/BuiltinTypes.h"
#include "piper/ops.h"

/* Row PIPER_TDAG_<ID> of every entry of the op list: its id, name, kind and the facts it
 * names; facts not named are 0 (NULL, false, PRT_K_NONE). A kernel is named by its id in the
 * kernel list (include/piper/kernels.def), which gives its name and arguments on every target. */
static const PiperOpFacts table[PIPER_TDAG_OP_COUNT] = {
#define TDAG_OP(ID, n, KIND, attributes, operands, results, shape, grad, lower, ...)             \
  [PIPER_TDAG_##ID] = {.id = PIPER_TDAG_##ID, .name = "tdag." #n, .kind = PIPER_OP_##KIND,      \
                       __VA_ARGS__},
#include "piper/tdag_ops.def"
};

const PiperOpFacts *piperOpFactsTable(size_t *n) {
  *n = PIPER_TDAG_OP_COUNT;
  return table;
}

const PiperOpFacts *piperOpFactsByName(MlirStringRef name) {
  if (name.length < 5 || memcmp(name.data, "tdag.", 5)) return NULL;
  for (size_t i = 0; i < PIPER_TDAG_OP_COUNT; ++i)
    if (table[i].name && strlen(table[i].name) == name.length &&
        !memcmp(table[i].name, name.data, name.length))
      return &table[i];
  return NULL;
}

const PiperOpFacts *piperOpFacts(MlirOperation op) {
  return piperOpFactsByName(mlirIdentifierStr(mlirOperationGetName(op)));
}

/* strlen of each row's name, computed by the compiler (the literal's size less its NUL). */
static const size_t nameLength[PIPER_TDAG_OP_COUNT] = {
#define TDAG_OP(ID, n, ...) [PIPER_TDAG_##ID] = sizeof("tdag." #n) - 1,
#include "piper/tdag_ops.def"
};

bool piperIsOp(MlirOperation op, PiperOpId id) {
  if (mlirOperationIsNull(op) || (unsigned)id >= PIPER_TDAG_OP_COUNT) return false;
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  return name.length == nameLength[id] && !memcmp(name.data, table[id].name, name.length);
}

/* Row PIPER_COMM_<ID> of every entry of the comm op list. */
static const PiperCommFacts commTable[PIPER_COMM_OP_COUNT] = {
#define COMM_OP(ID, n, ...) \
  [PIPER_COMM_##ID] = {.id = PIPER_COMM_##ID, .name = "comm." #n, __VA_ARGS__},
#include "piper/comm_ops.def"
};

const PiperCommFacts *piperCommFactsTable(size_t *n) {
  *n = PIPER_COMM_OP_COUNT;
  return commTable;
}

const PiperCommFacts *piperCommFacts(MlirOperation op) {
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  if (name.length < 5 || memcmp(name.data, "comm.", 5)) return NULL;
  for (size_t i = 0; i < PIPER_COMM_OP_COUNT; ++i)
    if (strlen(commTable[i].name) == name.length &&
        !memcmp(commTable[i].name, name.data, name.length))
      return &commTable[i];
  return NULL;
}

int64_t piperTensorElementBytes(MlirType t) {
  if (!mlirTypeIsAShaped(t) || !mlirShapedTypeHasRank(t)) return 0;
  MlirType e = mlirShapedTypeGetElementType(t);
  if (mlirTypeIsAInteger(e)) return (mlirIntegerTypeGetWidth(e) + 7) / 8;
  if (mlirTypeIsAIndex(e)) return 8;
  if (mlirTypeIsAFloat(e)) return (mlirFloatTypeGetWidth(e) + 7) / 8;
  return 0;
}
