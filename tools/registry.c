/* The pass registry piper-opt uses. LLVM 22 cannot register external passes with upstream's
 * pipeline parser, so piper keeps its own table, in pipeline order: passes/'s rows
 * (piperPassRows: include/piper/passes.def's and the directives' passes, ranked) and the
 * lowering's rows of passes.def, merged by rank. It names the passes of passes/ and of
 * lowering/, so it sits above both, beside the tools. */
#include <string.h>

#include "registry.h"

/* The lowering's rows of passes.def (passes/ does not know the lowering). */
#define PIPER_PASS_ROW_PASSES(name, create, rank, argHelp, summary)
#define PIPER_PASS_ROW_STRATEGY(name, create, rank, argHelp, summary)
#define PIPER_PASS_ROW_LOWERING(name, create, rank, argHelp, summary) \
  {name, summary, argHelp, create, rank, false},
#define PIPER_PASS(name, create, rank, layer, argHelp, summary) \
  PIPER_PASS_ROW_##layer(name, create, rank, argHelp, summary)
static const PiperPassRow lowering[] = {
#include "piper/passes.def"
};

/* Every row of passes.def and every directive's pass: the registry's size. */
#define PIPER_PASS(name, create, rank, layer, argHelp, summary) +1
#define PASS(create, cliName, rank, summary) +1
#define EXTRACT
#define DIRECTIVE(ID, name, applied, fields) applied
enum {
  N_LOWERING = sizeof lowering / sizeof lowering[0],
  N_PASSES = 0
#include "piper/passes.def"
#include "piper/directives.def"
};

/* The registry, merged by rank (then NULL-terminated). */
static PiperPassInfo registry[N_PASSES + 1];

static void build(void) {
  if (registry[0].name) return;
  size_t n, k = 0, l = 0;
  const PiperPassRow *rows = piperPassRows(&n); /* N_PASSES - N_LOWERING of them */
  for (size_t i = 0; (i < n || l < N_LOWERING) && k < N_PASSES; ++k) {
    bool low = l < N_LOWERING && (i == n || lowering[l].rank < rows[i].rank);
    const PiperPassRow *r = low ? &lowering[l++] : &rows[i++];
    registry[k] = (PiperPassInfo){r->name, r->summary, r->argHelp, r->create};
  }
}

const PiperPassInfo *piperPassRegistry(void) {
  build();
  return registry;
}

const PiperPassInfo *piperLookupPass(const char *name) {
  for (const PiperPassInfo *p = piperPassRegistry(); p->name; ++p)
    if (!strcmp(p->name, name)) return p;
  return NULL;
}
