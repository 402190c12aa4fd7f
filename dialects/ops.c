/* The op-facts table (include/piper/ops.h): one row per op of dialects/tdag.irdl.mlir, in the
 * IRDL file's order. Rows name what each pass and the lowering ask of the op; rules that are
 * code (shape, gradient, kernel arguments) stay with the pass that applies them. */
#include <string.h>

#include "mlir-c/BuiltinTypes.h"
#include "piper/ops.h"

/* ROW(ID, "name", KIND, facts...): the row of tdag.name at index PIPER_TDAG_ID; facts not
 * named are 0 (NULL, false): not batched, no weight gradient, no alias, f32, no kernel. */
#define ROW(ID, n, k, ...) \
  [PIPER_TDAG_##ID] = {.id = PIPER_TDAG_##ID, .name = "tdag." n, .kind = PIPER_OP_##k, __VA_ARGS__}

static const PiperOpFacts table[PIPER_TDAG_OP_COUNT] = {
    /* ---- leaves ---- */
    ROW(PARAM, "param", STATE, .declaresTensor = true),
    ROW(ADAM_STATE, "adam_state", STATE, .declaresTensor = true),
    ROW(INPUT, "input", IO, .batch = PIPER_BATCH_ALL, .declaresTensor = true,
        .resultElem = PIPER_ELEM_I32),
    ROW(OUTPUT, "output", IO, .cpuKernel = "prt_copy"),
    /* ---- forward ---- */
    ROW(EMBEDDING, "embedding", FORWARD, .batch = PIPER_BATCH_ALL, .i32Operands = 1u << 0,
        .cpuKernel = "prt_embedding_fwd"),
    ROW(LAYERNORM, "layernorm", FORWARD, .batch = PIPER_BATCH_ALL,
        .cpuKernel = "prt_layernorm_fwd"),
    ROW(LINEAR, "linear", FORWARD, .batch = PIPER_BATCH_ALL, .cpuKernel = "prt_linear_fwd"),
    ROW(MATMUL_NT, "matmul_nt", FORWARD, .batch = PIPER_BATCH_ALL, .cpuKernel = "prt_linear_fwd"),
    ROW(ATTENTION, "attention", FORWARD, .batch = PIPER_BATCH_ALL,
        .cpuKernel = "prt_attention_fwd"),
    ROW(GELU, "gelu", FORWARD, .batch = PIPER_BATCH_ALL, .cpuKernel = "prt_gelu_fwd"),
    ROW(ADD, "add", FORWARD, .likeOperand0 = true, .cpuKernel = "prt_add"),
    /* the loss (#0) is a scalar of the whole batch; probs (#1) are per row */
    ROW(CROSS_ENTROPY, "cross_entropy", FORWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 1, .i32Operands = 1u << 1, .cpuKernel = "prt_cross_entropy_fwd"),
    /* ---- backward ---- */
    ROW(EMBEDDING_GRAD, "embedding_grad", BACKWARD, .weightGradResults = 3u << 0,
        .i32Operands = 1u << 1, .cpuKernel = "prt_embedding_bwd"),
    /* dx (#0) is per row; dweight, dbias (#1, #2) are weight gradients */
    ROW(LAYERNORM_GRAD, "layernorm_grad", BACKWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 0, .weightGradResults = 3u << 1, .cpuKernel = "prt_layernorm_bwd"),
    ROW(LINEAR_GRAD_INPUT, "linear_grad_input", BACKWARD, .batch = PIPER_BATCH_ALL,
        .cpuKernel = "prt_linear_bwd_input"),
    ROW(LINEAR_GRAD_WEIGHT, "linear_grad_weight", BACKWARD, .weightGradResults = 1u << 0,
        .cpuKernel = "prt_linear_bwd_weight"),
    ROW(BIAS_GRAD, "bias_grad", BACKWARD, .weightGradResults = 1u << 0,
        .cpuKernel = "prt_bias_bwd"),
    ROW(ATTENTION_GRAD, "attention_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .cpuKernel = "prt_attention_bwd"),
    ROW(GELU_GRAD, "gelu_grad", BACKWARD, .batch = PIPER_BATCH_ALL, .cpuKernel = "prt_gelu_bwd"),
    ROW(CROSS_ENTROPY_GRAD, "cross_entropy_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 1, .cpuKernel = "prt_cross_entropy_bwd"),
    /* ---- optimizer ---- */
    ROW(ADAMW, "adamw", UPDATE, .alias = PIPER_ALIAS_UPDATES_OPERANDS, .cpuKernel = "prt_adamw"),
    /* ---- gradient buckets: a bucket holds weight gradients ---- */
    ROW(BUCKET, "bucket", BUFFER, .weightGradResults = 1u << 0),
    ROW(PACK_INTO, "pack_into", BUFFER, .alias = PIPER_ALIAS_RESULT_IS_OPERAND0,
        .cpuKernel = "prt_copy"),
    ROW(VIEW, "view", BUFFER, .alias = PIPER_ALIAS_RESULT_VIEWS_OPERAND0),
    /* ---- graph level: a node's results are what its ops compute, batched as before ---- */
    ROW(NODE, "node", GRAPH, .batch = PIPER_BATCH_ALL),
};

#undef ROW

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

int64_t piperTensorElementBytes(MlirType t) {
  if (!mlirTypeIsAShaped(t) || !mlirShapedTypeHasRank(t)) return 0;
  MlirType e = mlirShapedTypeGetElementType(t);
  if (mlirTypeIsAInteger(e)) return (mlirIntegerTypeGetWidth(e) + 7) / 8;
  if (mlirTypeIsAIndex(e)) return 8;
  if (mlirTypeIsAFloat(e)) return (mlirFloatTypeGetWidth(e) + 7) / 8;
  return 0;
}
