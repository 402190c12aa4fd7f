/* The pass registry piper-opt and piper-compile share. LLVM 22 cannot register external passes
 * with upstream's pipeline parser, so piper keeps its own table, in pipeline order. It names
 * the passes of passes/ and of lowering/, so it sits above both, beside the tools. */
#include <string.h>

#include "registry.h"

static const PiperPassInfo registry[] = {
    {"piper-verify", "check tdag shapes and element types (also run after every parse)", NULL,
     piperCreateVerifyPass},
    {"piper-fuse",
     "fold general-op chains (an exported PyTorch model's) into the fused ops: causal "
     "attention, RMSNorm, tanh GELU, SwiGLU",
     NULL, piperCreateFusePass},
    {"piper-autodiff",
     "forward graph -> training graph: append backward ops and AdamW updates (idempotent)",
     NULL, piperCreateAutodiffPass},
    {"piper-import-strategy",
     "append the directives of a Piper JSON (or sched .mlir) strategy file as sched ops",
     "piper-import-strategy=FILE", piperCreateImportStrategyPass},
    {"piper-apply-strategy",
     "import FILE and apply its directives: split, split-backward, place, shard, shard-tensor, "
     "shard-sequence, insert-comm, replicate (the global "
     "DAG; add --piper-extract for per-device plans)",
     "piper-apply-strategy=FILE", NULL},
    {"piper-split", "split directive: copy forward/backward ops per microbatch", NULL,
     piperCreateSplitPass},
    {"piper-split-backward", "BI/BW: relabel backward ops of nodes an order names by BI or BW",
     NULL, piperCreateSplitBackwardPass},
    {"piper-place", "place directive: set the devices of the selected ops", NULL,
     piperCreatePlacePass},
    {"piper-shard",
     "shard directive: expert parallelism, each replica of a placed stage owns E/G experts, "
     "with their all-to-alls",
     NULL, piperCreateShardPass},
    {"piper-shard-tensor",
     "shard_tensor directive: Megatron column/row splits of the selected regions over a "
     "tensor-parallel group, with their all-reduces",
     NULL, piperCreateShardTensorPass},
    {"piper-shard-sequence",
     "shard_sequence directive: context parallelism, the selected ops' sequence split over a "
     "group (chunks r and 2G-1-r), attention as ring attention",
     NULL, piperCreateShardSequencePass},
    {"piper-insert-comm", "send/recv for values crossing devices; copies of shared parameters",
     NULL, piperCreateInsertCommPass},
    {"piper-replicate", "replicate directive: gradient all-reduce over data-parallel replicas",
     NULL, piperCreateReplicatePass},
    {"piper-print-dag",
     "write the global DAG (nodes, data and transfer edges, devices) to FILE as Graphviz; "
     "the IR is unchanged",
     "piper-print-dag=FILE.dot", piperCreatePrintDagPass},
    {"piper-precision",
     "mixed precision: with =bf16, activations and their gradients become bf16 per the op-facts "
     "table's bf16Results (fp32: unchanged); run after the directives, before extract",
     "piper-precision=fp32|bf16", piperCreatePrecisionPass},
    {"piper-grad-reduce",
     "with =bf16, gradient all-reduces and ZeRO reduce-scatters move bf16: each replica's "
     "gradient rounded, summed in fp32 pairwise, widened back (fp32: unchanged); run after "
     "piper-precision, before extract",
     "piper-grad-reduce=fp32|bf16", piperCreateGradReducePass},
    {"piper-extract", "order directives + global DAG -> one function per device, in execution "
     "order", NULL, piperCreateExtractPass},
    {"piper-order-p2p",
     "each pair's receives in the order its sender sends (NCCL has no tags); marks the module "
     "piper.p2p_order = \"fifo\", which --piper-verify-plan then proves",
     NULL, piperCreateOrderP2pPass},
    {"piper-verify-plan",
     "prove the per-device plans cannot hang: simulate every send/recv and collective (in a "
     "module --piper-order-p2p marked: a pair's messages also received in send order)",
     NULL, piperCreateVerifyPlanPass},
    {"piper-lower-to-llvm",
     "training graph -> llvm dialect: plan memory, emit piper_setup/piper_step calling "
     "libpiper_rt",
     NULL, piperCreateLowerToLLVMPass},
    {NULL, NULL, NULL, NULL},
};

const PiperPassInfo *piperPassRegistry(void) { return registry; }

/* What --piper-apply-strategy stands for, in Piper's order; the first takes the file. */
static MlirPass (*const strategyPasses[PIPER_STRATEGY_PASSES])(const char *arg) = {
    piperCreateImportStrategyPass, piperCreateSplitPass,        piperCreateSplitBackwardPass,
    piperCreatePlacePass,          piperCreateShardPass,        piperCreateShardTensorPass,
    piperCreateShardSequencePass,  piperCreateInsertCommPass,   piperCreateReplicatePass};

int piperStrategyPasses(const char *file, MlirPass *out, int max) {
  int n = max < PIPER_STRATEGY_PASSES ? max : PIPER_STRATEGY_PASSES;
  for (int i = 0; i < n; ++i) out[i] = strategyPasses[i](i == 0 ? file : NULL);
  return n;
}

const PiperPassInfo *piperLookupPass(const char *name) {
  for (const PiperPassInfo *p = registry; p->name; ++p)
    if (!strcmp(p->name, name)) return p;
  return NULL;
}
