/* The pass table of passes/ and the one pipeline every tool builds from it. The table is
 * include/piper/passes.def's rows of passes/ (layers PASSES and STRATEGY) and the directives'
 * passes (include/piper/directives.def's PASS column), merged by rank; piper-opt's registry
 * (tools/registry.c) adds the lowering's row. piper-compile, piper-tune and piper-sched --model
 * build their pipelines here, so the graph piper-tune plans is the one piper-compile
 * compiles: fused, differentiated, through the strategy and the precision policy. */
#include <stdio.h>
#include <string.h>

#include "piper/piper.h"

/* The rows, in the order of the .def files, before ranking. */
#define PIPER_PASS_ROW_PASSES(name, create, rank, argHelp, summary) \
  {name, summary, argHelp, create, rank, false},
#define PIPER_PASS_ROW_STRATEGY(name, create, rank, argHelp, summary) \
  {name, summary, argHelp, create, rank, true},
#define PIPER_PASS_ROW_LOWERING(name, create, rank, argHelp, summary)
#define PIPER_PASS(name, create, rank, layer, argHelp, summary) \
  PIPER_PASS_ROW_##layer(name, create, rank, argHelp, summary)
#define PASS(create, cliName, rank, summary) {cliName, summary, NULL, create, rank, true},
#define EXTRACT
#define DIRECTIVE(ID, name, applied, fields) applied
static const PiperPassRow unranked[] = {
#include "piper/passes.def"
#include "piper/directives.def"
};
#undef PIPER_PASS_ROW_PASSES
#undef PIPER_PASS_ROW_STRATEGY
#undef PIPER_PASS_ROW_LOWERING

enum { N_ROWS = sizeof unranked / sizeof unranked[0] };
_Static_assert((int)PIPER_STRATEGY_PASSES <= (int)N_ROWS,
               "PIPER_STRATEGY_PASSES counts rows of the table");

static PiperPassRow ranked[N_ROWS];
/* piper-apply-strategy's summary, naming the passes it stands for. */
static char applySummary[1024];

/* Ranks the rows once (a stable insertion sort: the table is short) and writes
 * piper-apply-strategy's summary. */
static void build(void) {
  if (ranked[0].name) return;
  memcpy(ranked, unranked, sizeof ranked);
  for (size_t i = 1; i < N_ROWS; ++i)
    for (size_t j = i; j > 0 && ranked[j - 1].rank > ranked[j].rank; --j) {
      PiperPassRow r = ranked[j];
      ranked[j] = ranked[j - 1];
      ranked[j - 1] = r;
    }
  size_t len = (size_t)snprintf(applySummary, sizeof applySummary,
                                "import FILE and apply its directives:");
  for (size_t i = 0, k = 0; i < N_ROWS && len < sizeof applySummary; ++i)
    if (ranked[i].strategy && k++ > 0) /* after the import */
      len += (size_t)snprintf(applySummary + len, sizeof applySummary - len, "%s %s",
                              k > 2 ? "," : "", ranked[i].name + strlen("piper-"));
  if (len < sizeof applySummary)
    snprintf(applySummary + len, sizeof applySummary - len,
             " (the global DAG; add --piper-extract for per-device plans)");
  for (size_t i = 0; i < N_ROWS; ++i)
    if (!ranked[i].summary) ranked[i].summary = applySummary;
}

const PiperPassRow *piperPassRows(size_t *n) {
  build();
  *n = N_ROWS;
  return ranked;
}

int piperStrategyPasses(const char *file, MlirPass *out, int max) {
  build();
  int n = 0;
  for (size_t i = 0; i < N_ROWS && n < max; ++i)
    if (ranked[i].strategy) {
      out[n] = ranked[i].create(n == 0 ? file : NULL); /* the import, ranked first */
      n++;
    }
  return n;
}

/* fuse (or fuse with its report) -> autodiff */
void piperAddTrainingPasses(MlirPassManager pm, const PiperPipeline *p) {
  if (p->fuse)
    mlirPassManagerAddOwnedPass(pm, p->fusionReport ? piperCreateFuseReportPass(p->fusionReport)
                                                    : piperCreateFusePass(NULL));
  mlirPassManagerAddOwnedPass(pm, piperCreateAutodiffPass(NULL));
}

/* the strategy's passes -> precision, grad-reduce (bf16 only) -> extract, order-p2p and
 * verify-plan (as asked) */
void piperAddPlanPasses(MlirPassManager pm, const PiperPipeline *p) {
  if (p->strategy) {
    MlirPass passes[PIPER_STRATEGY_PASSES];
    int n = piperStrategyPasses(p->strategy, passes, PIPER_STRATEGY_PASSES);
    for (int k = 0; k < n; ++k) mlirPassManagerAddOwnedPass(pm, passes[k]);
  }
  /* after the directives, so every transfer they insert carries its value's type */
  if (p->precision && !strcmp(p->precision, "bf16"))
    mlirPassManagerAddOwnedPass(pm, piperCreatePrecisionPass(p->precision));
  /* after precision, whose policy leaves the gradients it reduces fp32 */
  if (p->gradReduce && !strcmp(p->gradReduce, "bf16"))
    mlirPassManagerAddOwnedPass(pm, piperCreateGradReducePass(p->gradReduce));
  if (p->extract) mlirPassManagerAddOwnedPass(pm, piperCreateExtractPass(NULL));
  /* a GPU plan may run its send/recv on NCCL (--comm nccl), which has no tags */
  if (p->extract && p->orderP2p) mlirPassManagerAddOwnedPass(pm, piperCreateOrderP2pPass(NULL));
  if (p->extract && p->verifyPlan) mlirPassManagerAddOwnedPass(pm, piperCreateVerifyPlanPass(NULL));
}
