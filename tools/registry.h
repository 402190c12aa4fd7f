/* The pass registry piper-opt and piper-compile share (tools/registry.c): every piper pass by
 * its command-line name, in pipeline order. It links the passes and the lowering; neither of
 * them knows it. */
#ifndef PIPER_TOOLS_REGISTRY_H
#define PIPER_TOOLS_REGISTRY_H

#include "piper/piper.h"

/* One pass piper-opt can run by name. `create` gets the text after `=` (or NULL). */
typedef struct {
  const char *name;        /* command-line name, without the leading dashes */
  const char *summary;     /* one line for --help */
  const char *argHelp;     /* "=FILE" style hint for passes taking a value, or NULL */
  MlirPass (*create)(const char *arg); /* NULL for piper-apply-strategy: piperStrategyPasses */
} PiperPassInfo;

/* The registry, in pipeline order; terminated by an entry with name == NULL. */
const PiperPassInfo *piperPassRegistry(void);
const PiperPassInfo *piperLookupPass(const char *name);

/* How many passes --piper-apply-strategy stands for: the import, split-backward and
 * insert-comm (registry.c strategyOthers), and one per directive its pass applies
 * (include/piper/directives.def PASS; order is extract's). */
enum { PIPER_STRATEGY_OTHER_PASSES = 3 };
#define PASS(create, cliName, rank, summary) +1
#define EXTRACT
#define DIRECTIVE(ID, name, applied, fields) applied
enum {
  PIPER_STRATEGY_PASSES = PIPER_STRATEGY_OTHER_PASSES
#include "piper/directives.def"
};
/* The passes --piper-apply-strategy=FILE stands for, by rank: import FILE, split,
 * split-backward, place, shard, shard-tensor, shard-sequence, insert-comm, replicate (the
 * result is the global DAG; --piper-extract then makes the per-device plans). Writes up to
 * `max` new passes to `out`; returns how many. */
int piperStrategyPasses(const char *file, MlirPass *out, int max);

#endif
