/* The pass registry piper-opt and piper-compile share. LLVM 22 cannot register external passes
 * with upstream's pipeline parser, so piper keeps its own table, in pipeline order: the passes
 * below and the directives' own (include/piper/directives.def), merged by rank. It names the
 * passes of passes/ and of lowering/, so it sits above both, beside the tools. */
#include <string.h>

#include "registry.h"

/* A pass and its rank: its place in the pipeline, among the directive passes' ranks
 * (include/piper/directives.def). */
typedef struct {
  PiperPassInfo info;
  int rank;
} Ranked;

/* The passes --piper-apply-strategy stands for besides the directives' own: the import first,
 * split-backward after split (it applies the order directives' BI/BW), insert-comm once the
 * ops are placed and before replicate (it connects what placement cut). */
static const Ranked strategyOthers[] = {
    {{"piper-import-strategy",
      "append the directives of a Piper JSON (or sched .mlir) strategy file as sched ops",
      "piper-import-strategy=FILE", piperCreateImportStrategyPass},
     30},
    {{"piper-split-backward", "BI/BW: relabel backward ops of nodes an order names by BI or BW",
      NULL, piperCreateSplitBackwardPass},
     45},
    {{"piper-insert-comm", "send/recv for values crossing devices; copies of shared parameters",
      NULL, piperCreateInsertCommPass},
     90},
};
_Static_assert(sizeof strategyOthers / sizeof strategyOthers[0] == PIPER_STRATEGY_OTHER_PASSES,
               "PIPER_STRATEGY_OTHER_PASSES (registry.h) must count strategyOthers");

/* The directives' passes, from the list's PASS column (EXTRACT: applied by --piper-extract). */
#define PASS(create, cliName, rank, summary) {{cliName, summary, NULL, create}, rank},
#define EXTRACT
#define DIRECTIVE(ID, name, applied, fields) applied
static const Ranked directivePasses[] = {
#include "piper/directives.def"
};

/* Every other pass. */
static const Ranked others[] = {
    {{"piper-verify", "check tdag shapes and element types (also run after every parse)", NULL,
      piperCreateVerifyPass},
     10},
    {{"piper-canonicalize",
      "layout canonical forms of the general ops (an exported PyTorch model's): permutes sunk "
      "to their users, reshapes, broadcasts and slices folded (piper-fuse applies them too)",
      NULL, piperCreateCanonicalizePass},
     14},
    {{"piper-fuse",
      "fold general-op chains (an exported PyTorch model's), after the layout canonical forms, "
      "into the fused ops: causal attention, RMSNorm, tanh GELU, SwiGLU, RoPE, the GPT-2 "
      "embedding",
      NULL, piperCreateFusePass},
     15},
    {{"piper-fuse-report",
      "piper-fuse, and its report to FILE (- for stdout): per module path or source line what "
      "fused into which op, and for a chain left unfused the op that stopped its pattern",
      "piper-fuse-report=FILE", piperCreateFuseReportPass},
     15},
    {{"piper-autodiff",
      "forward graph -> training graph: append backward ops and AdamW updates (idempotent)",
      NULL, piperCreateAutodiffPass},
     20},
    {{"piper-apply-strategy", NULL /* applySummary: the strategy's passes by name */,
      "piper-apply-strategy=FILE", NULL},
     35},
    {{"piper-print-dag",
      "write the global DAG (nodes, data and transfer edges, devices) to FILE as Graphviz; "
      "the IR is unchanged",
      "piper-print-dag=FILE.dot", piperCreatePrintDagPass},
     110},
    {{"piper-precision",
      "mixed precision: with =bf16, activations and their gradients become bf16 per the op-facts "
      "table's bf16Results (fp32: unchanged); run after the directives, before extract",
      "piper-precision=fp32|bf16", piperCreatePrecisionPass},
     120},
    {{"piper-grad-reduce",
      "with =bf16, gradient all-reduces and ZeRO reduce-scatters move bf16: each replica's "
      "gradient rounded, summed in fp32 pairwise, widened back (fp32: unchanged); run after "
      "piper-precision, before extract",
      "piper-grad-reduce=fp32|bf16", piperCreateGradReducePass},
     130},
    {{"piper-extract", "order directives + global DAG -> one function per device, in execution "
      "order", NULL, piperCreateExtractPass},
     150},
    {{"piper-order-p2p",
      "each pair's receives in the order its sender sends (NCCL has no tags); marks the module "
      "piper.p2p_order = \"fifo\", which --piper-verify-plan then proves",
      NULL, piperCreateOrderP2pPass},
     160},
    {{"piper-verify-plan",
      "prove the per-device plans cannot hang: simulate every send/recv and collective (in a "
      "module --piper-order-p2p marked: a pair's messages also received in send order)",
      NULL, piperCreateVerifyPlanPass},
     170},
    {{"piper-lower-to-llvm",
      "training graph -> llvm dialect: plan memory, emit piper_setup/piper_step calling "
      "libpiper_rt",
      NULL, piperCreateLowerToLLVMPass},
     180},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
enum { N_PASSES = COUNT(strategyOthers) + COUNT(directivePasses) + COUNT(others) };
_Static_assert(COUNT(strategyOthers) + COUNT(directivePasses) == PIPER_STRATEGY_PASSES,
               "PIPER_STRATEGY_PASSES (registry.h) must count the strategy's passes");

/* The registry, ranked (then NULL-terminated), and which of its entries are the strategy's. */
static PiperPassInfo registry[N_PASSES + 1];
static bool isStrategy[N_PASSES];
/* piper-apply-strategy's summary, naming the passes it stands for. */
static char applySummary[1024];

/* A pass while the tables merge, and whether --piper-apply-strategy stands for it. */
typedef struct {
  Ranked pass;
  bool strategy;
} Merged;

static void addRanked(Merged *all, size_t *n, const Ranked *from, size_t k, bool strategy) {
  for (size_t i = 0; i < k; ++i, ++*n) all[*n] = (Merged){from[i], strategy};
}

/* Merges the three tables by rank, once (a stable insertion sort: the tables are short). */
static void build(void) {
  if (registry[0].name) return;
  Merged all[N_PASSES];
  size_t n = 0;
  addRanked(all, &n, strategyOthers, COUNT(strategyOthers), true);
  addRanked(all, &n, directivePasses, COUNT(directivePasses), true);
  addRanked(all, &n, others, COUNT(others), false);
  for (size_t i = 1; i < n; ++i)
    for (size_t j = i; j > 0 && all[j - 1].pass.rank > all[j].pass.rank; --j) {
      Merged r = all[j];
      all[j] = all[j - 1];
      all[j - 1] = r;
    }
  for (size_t i = 0; i < n; ++i) {
    registry[i] = all[i].pass.info;
    isStrategy[i] = all[i].strategy;
  }
  size_t len = (size_t)snprintf(applySummary, sizeof applySummary,
                                "import FILE and apply its directives:");
  for (size_t i = 0, k = 0; i < n && len < sizeof applySummary; ++i)
    if (isStrategy[i] && k++ > 0) /* after the import */
      len += (size_t)snprintf(applySummary + len, sizeof applySummary - len, "%s %s",
                              k > 2 ? "," : "", registry[i].name + strlen("piper-"));
  if (len < sizeof applySummary)
    snprintf(applySummary + len, sizeof applySummary - len,
             " (the global DAG; add --piper-extract for per-device plans)");
  for (size_t i = 0; i < n; ++i)
    if (!registry[i].summary) registry[i].summary = applySummary;
}

const PiperPassInfo *piperPassRegistry(void) {
  build();
  return registry;
}

int piperStrategyPasses(const char *file, MlirPass *out, int max) {
  build();
  int n = 0;
  for (size_t i = 0; i < N_PASSES && n < max; ++i)
    if (isStrategy[i]) {
      out[n] = registry[i].create(n == 0 ? file : NULL); /* the import, ranked first */
      n++;
    }
  return n;
}

const PiperPassInfo *piperLookupPass(const char *name) {
  for (const PiperPassInfo *p = piperPassRegistry(); p->name; ++p)
    if (!strcmp(p->name, name)) return p;
  return NULL;
}
