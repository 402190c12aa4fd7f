/* The training binary's flags as a table (plan_flags.def), exported by libpiper_rt so that
 * whatever reads a plan's command line (piper-run) reads it by the rules prt_parse_args
 * applies, and the defaults it relies on. */
#ifndef PIPER_PRT_PLAN_FLAGS_H
#define PIPER_PRT_PLAN_FLAGS_H

#include <stddef.h>

/* How a flag's value is read (plan_flags.def says which flag is which). */
typedef enum {
  PRT_FLAG_COUNT, PRT_FLAG_SEED, PRT_FLAG_REAL, PRT_FLAG_FILE, PRT_FLAG_WORD, PRT_FLAG_BOOL
} prt_flag_type;

/* One row of the table. */
typedef struct prt_plan_flag {
  const char *name;   /* "--steps" */
  prt_flag_type type; /* PRT_FLAG_BOOL: takes no value */
} prt_plan_flag;

/* --steps when not given. */
#define PRT_DEFAULT_STEPS 20

/* Every flag, in plan_flags.def's order; *n gets how many. */
const prt_plan_flag *prt_plan_flags(size_t *n);
/* The row of the flag `arg` names (alone or as name=value), or NULL. */
const prt_plan_flag *prt_plan_flag_find(const char *arg);

#endif
