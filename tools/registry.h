/* The pass registry piper-opt shares (tools/registry.c): every piper pass by its command-line
 * name, in pipeline order: passes/'s table (piperPassRows: include/piper/passes.def and the
 * directives' passes) and the lowering's row. It links the passes and the lowering; neither
 * of them knows it. */
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

#endif
