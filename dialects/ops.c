/* The op-facts table (include/piper/ops.h): one row per op of dialects/tdag.irdl.mlir, in the
 * IRDL file's order. Rows name what each pass and the lowering ask of the op; rules that are
 * code (shape, gradient, kernel arguments) stay with the pass that applies them. */
#include <string.h>

#include "mlir-c/BuiltinTypes.h"
#include "piper/ops.h"

/* ROW(ID, "name", KIND, facts...): the row of tdag.name at index PIPER_TDAG_ID; facts not
 * named are 0 (NULL, false, PRT_K_NONE): not batched, no weight gradient, no alias, f32, no
 * kernel. A kernel is named by its id in the kernel list (include/piper/kernels.def), which
 * gives its name and arguments on every target. */
#define ROW(ID, n, k, ...) \
  [PIPER_TDAG_##ID] = {.id = PIPER_TDAG_##ID, .name = "tdag." n, .kind = PIPER_OP_##k, __VA_ARGS__}

static const PiperOpFacts table[PIPER_TDAG_OP_COUNT] = {
    /* ---- leaves ---- */
    ROW(PARAM, "param", STATE, .declaresTensor = true),
    ROW(ADAM_STATE, "adam_state", STATE, .declaresTensor = true),
    ROW(INPUT, "input", IO, .batch = PIPER_BATCH_ALL, .declaresTensor = true,
        .resultElem = PIPER_ELEM_I32),
    ROW(OUTPUT, "output", IO, .kernel = PRT_K_copy),
    /* ---- forward ---- */
    ROW(EMBEDDING, "embedding", FORWARD, .batch = PIPER_BATCH_ALL, .i32Operands = 1u << 0,
        .kernel = PRT_K_embedding_fwd,
        .bf16Results = 1u << 0),
    ROW(LAYERNORM, "layernorm", FORWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_layernorm_fwd,
        .bf16Results = 1u << 0),
    ROW(LINEAR, "linear", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_linear_fwd,
        .bf16Results = 1u << 0, .bf16RoundOperands = 1u << 1,
        .bf16Kernel = PRT_K_linear_fwd_bf16),
    ROW(MATMUL_NT, "matmul_nt", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_linear_fwd,
        .bf16Results = 1u << 0, .bf16RoundOperands = 1u << 1,
        .bf16Kernel = PRT_K_linear_fwd_bf16),
    ROW(ATTENTION, "attention", FORWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_attention_fwd, .rowResults = 1u << 1,
        .bf16Results = 1u << 0),
    ROW(GELU, "gelu", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_gelu_fwd,
        .bf16Results = 1u << 0),
    ROW(ADD, "add", FORWARD, .likeOperand0 = true, .kernel = PRT_K_add),
    /* the loss (#0) is a scalar of the whole batch; probs (#1) are per row */
    ROW(CROSS_ENTROPY, "cross_entropy", FORWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 1, .i32Operands = 1u << 1, .kernel = PRT_K_cross_entropy_fwd),
    /* ---- backward ---- */
    ROW(EMBEDDING_GRAD, "embedding_grad", BACKWARD, .weightGradResults = 3u << 0,
        .i32Operands = 1u << 1, .kernel = PRT_K_embedding_bwd),
    /* dx (#0) is per row; dweight, dbias (#1, #2) are weight gradients */
    ROW(LAYERNORM_GRAD, "layernorm_grad", BACKWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 0, .weightGradResults = 3u << 1, .kernel = PRT_K_layernorm_bwd,
        .bf16Results = 1u << 0),
    ROW(LINEAR_GRAD_INPUT, "linear_grad_input", BACKWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_linear_bwd_input,
        .bf16Results = 1u << 0, .bf16RoundOperands = 1u << 1,
        .bf16Kernel = PRT_K_linear_bwd_input_bf16),
    ROW(LINEAR_GRAD_WEIGHT, "linear_grad_weight", BACKWARD, .weightGradResults = 1u << 0,
        .kernel = PRT_K_linear_bwd_weight, .bf16Kernel = PRT_K_linear_bwd_weight_bf16),
    ROW(BIAS_GRAD, "bias_grad", BACKWARD, .weightGradResults = 1u << 0,
        .kernel = PRT_K_bias_bwd),
    ROW(ATTENTION_GRAD, "attention_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_attention_bwd,
        .bf16Results = 1u << 0),
    ROW(GELU_GRAD, "gelu_grad", BACKWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_gelu_bwd,
        .bf16Results = 1u << 0),
    ROW(CROSS_ENTROPY_GRAD, "cross_entropy_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 1, .kernel = PRT_K_cross_entropy_bwd,
        .bf16Results = 1u << 0),
    /* ---- optimizer ---- */
    /* fp32 master weight, gradient and moments: a parameter read as an activation (a linear's
     * x) still gets an fp32 gradient */
    ROW(ADAMW, "adamw", UPDATE, .alias = PIPER_ALIAS_UPDATES_OPERANDS, .kernel = PRT_K_adamw,
        .fp32Operands = 0xfu),
    /* ---- gradient buckets: a bucket holds weight gradients ---- */
    ROW(BUCKET, "bucket", BUFFER, .weightGradResults = 1u << 0),
    ROW(PACK_INTO, "pack_into", BUFFER, .alias = PIPER_ALIAS_RESULT_IS_OPERAND0,
        .kernel = PRT_K_copy),
    ROW(VIEW, "view", BUFFER, .alias = PIPER_ALIAS_RESULT_VIEWS_OPERAND0),
    /* ---- Qwen3 forward (piper-gen qwen3) ---- */
    ROW(EMBED, "embed", FORWARD, .batch = PIPER_BATCH_ALL, .i32Operands = 1u << 0,
        .kernel = PRT_K_embed_fwd,
        .bf16Results = 1u << 0),
    /* y (#0) and rstd (#1, one per normalized chunk) are both per row */
    ROW(RMSNORM, "rmsnorm", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_rmsnorm_fwd,
        .bf16Results = 1u << 0),
    ROW(ROPE, "rope", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_rope_fwd,
        .bf16Results = 1u << 0),
    ROW(SWIGLU, "swiglu", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_swiglu_fwd,
        .bf16Results = 1u << 0),
    /* out (#0) and the saved probs (#1, (B,H,T,T)) are per row */
    ROW(GQA_ATTENTION, "gqa_attention", FORWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_gqa_attention_fwd, .rowResults = 1u << 1,
        .bf16Results = 1u << 0),
    /* ---- Qwen3 backward ---- */
    ROW(EMBED_GRAD, "embed_grad", BACKWARD, .weightGradResults = 1u << 0,
        .i32Operands = 1u << 1, .kernel = PRT_K_embed_bwd),
    /* dx (#0) is per row; dweight (#1) is a weight gradient */
    ROW(RMSNORM_GRAD, "rmsnorm_grad", BACKWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 0, .weightGradResults = 1u << 1, .kernel = PRT_K_rmsnorm_bwd,
        .bf16Results = 1u << 0),
    ROW(ROPE_GRAD, "rope_grad", BACKWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_rope_bwd,
        .bf16Results = 1u << 0),
    ROW(SWIGLU_GRAD, "swiglu_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_swiglu_bwd,
        .bf16Results = 3u << 0),
    ROW(GQA_ATTENTION_GRAD, "gqa_attention_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .kernel = PRT_K_gqa_attention_bwd,
        .bf16Results = 7u << 0),
    /* ---- mixture of experts. Dispatched rows (R, C) carry the batch in dim 0 too: R is a
     * static multiple of the tokens (see moe_dispatch), so a split or a replica's slice of the
     * batch scales it the same way. Expert ids and counts are i32. ---- */
    /* the router's scores (#0 in) and weights (#0 out) stay fp32 under bf16 */
    ROW(MOE_TOPK, "moe_topk", FORWARD, .batch = PIPER_BATCH_ALL, .i32Results = 1u << 1,
        .kernel = PRT_K_moe_topk_fwd, .fp32Operands = 1u << 0),
    ROW(MOE_TOPK_GRAD, "moe_topk_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 2, .kernel = PRT_K_moe_topk_bwd),
    /* rows (#0) are per token copy; counts (#1) are per expert, not per row */
    ROW(MOE_DISPATCH, "moe_dispatch", FORWARD, .batch = PIPER_BATCH_SOME,
        .batchedResults = 1u << 0, .i32Operands = 1u << 1, .i32Results = 1u << 1,
        .kernel = PRT_K_moe_dispatch_fwd,
        .bf16Results = 1u << 0),
    ROW(MOE_DISPATCH_GRAD, "moe_dispatch_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 1, .kernel = PRT_K_moe_dispatch_bwd,
        .bf16Results = 1u << 0),
    /* one kernel call per local expert (lower_compute.c) */
    ROW(MOE_EXPERTS, "moe_experts", FORWARD, .batch = PIPER_BATCH_ALL, .i32Operands = 1u << 1,
        .kernel = PRT_K_moe_expert_fwd, .bf16Kernel = PRT_K_moe_expert_fwd_bf16,
        .bf16Results = 3u << 0, .bf16RoundOperands = 1u << 2, .bf16RoundTail = true),
    ROW(MOE_EXPERTS_GRAD_INPUT, "moe_experts_grad_input", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 1, .kernel = PRT_K_moe_expert_bwd_input, .bf16Kernel = PRT_K_moe_expert_bwd_input_bf16,
        .bf16Results = 1u << 0, .bf16RoundOperands = 1u << 3, .bf16RoundTail = true),
    /* one op per expert: its three weight gradients */
    ROW(MOE_EXPERTS_GRAD_WEIGHT, "moe_experts_grad_weight", BACKWARD,
        .weightGradResults = 7u << 0, .i32Operands = 1u << 2,
        .kernel = PRT_K_moe_expert_bwd_weight, .bf16Kernel = PRT_K_moe_expert_bwd_weight_bf16,
        .bf16RoundOperands = 1u << 4),
    ROW(MOE_COMBINE, "moe_combine", FORWARD, .batch = PIPER_BATCH_ALL, .i32Operands = 1u << 2,
        .kernel = PRT_K_moe_combine_fwd,
        .bf16Results = 1u << 0),
    /* drows (#0) and dweights (#1): activation gradients */
    ROW(MOE_COMBINE_GRAD, "moe_combine_grad", BACKWARD, .batch = PIPER_BATCH_ALL,
        .i32Operands = 1u << 3, .kernel = PRT_K_moe_combine_bwd,
        .bf16Results = 1u << 0),
    /* ---- tensor parallelism: a bias added after a row-parallel all-reduce ---- */
    ROW(BIAS_ADD, "bias_add", FORWARD, .batch = PIPER_BATCH_ALL, .kernel = PRT_K_bias_add,
        .bf16Results = 1u << 0),
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
