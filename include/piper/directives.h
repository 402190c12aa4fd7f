/* The strategy directives (include/piper/directives.def) as a table: what each is called, its
 * fields and what each field holds. The JSON importer (dialects/sched_import.c), the verifier
 * of hand-written sched ops (dialects/tdag.c) and the sched dialect's IRDL text
 * (dialects/directives.c) read it; the passes that apply the directives are named by the pass
 * registry (tools/registry.c), which expands the list's PASS column itself. */
#ifndef PIPER_DIRECTIVES_H
#define PIPER_DIRECTIVES_H

#include <stdbool.h>
#include <stddef.h>

#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One id per directive, in the order of include/piper/directives.def. */
typedef enum {
#define DIRECTIVE(ID, name, applied, fields) PIPER_DIRECTIVE_##ID,
#include "piper/directives.def"
  PIPER_DIRECTIVE_COUNT
} PiperDirectiveId;

/* What a field's value is (directives.def FIELD kinds). */
typedef enum {
  PIPER_FIELD_FILTER,        /* {"PP": 0, "PASS": "F"}: a dictionary of tag indices or "*" */
  PIPER_FIELD_FILTER_GROUPS, /* [[filter, ...], ...]: at least two non-empty groups */
  PIPER_FIELD_DEVICES,       /* a non-empty list of device ids in [0, PIPER_MAX_DEVICES) */
  PIPER_FIELD_STRING,        /* a non-empty string (a stream or dimension name) */
  PIPER_FIELD_BOOL,          /* true: a unit attribute; false: no attribute */
  PIPER_FIELD_COUNT,         /* an integer in [1, PIPER_MAX_MICROBATCHES] */
  PIPER_FIELD_NUMBER,        /* a finite number >= 0, as f64 */
} PiperFieldKind;

/* num_microbatches' bound: split makes that many copies of the ops it selects. */
enum { PIPER_MAX_MICROBATCHES = 1 << 20 };

/* The most fields a directive has (replicate has 8). */
enum { PIPER_DIRECTIVE_MAX_FIELDS = 10 };

typedef struct {
  const char *name;    /* the JSON key and the sched op's attribute: "devices" */
  PiperFieldKind kind; /* what its value is */
  bool required;       /* the directive needs it (and the sched dialect requires it) */
} PiperDirectiveField;

typedef struct {
  PiperDirectiveId id; /* its index in the table */
  const char *name;    /* "place": the JSON "op"; the sched op is sched.<name> */
  PiperDirectiveField fields[PIPER_DIRECTIVE_MAX_FIELDS]; /* the first nFields */
  int nFields;
} PiperDirective;

/* The table, in directives.def's order: *n gets its row count. */
const PiperDirective *piperDirectiveTable(size_t *n);
/* The directive called `name` ("place"), or NULL. */
const PiperDirective *piperDirectiveNamed(const char *name);
/* The directive of sched op `op` (sched.place), or NULL for any other op. */
const PiperDirective *piperDirectiveOf(MlirOperation op);
/* "place, replicate, ...": every directive's name, for messages. */
const char *piperDirectiveNames(void);
/* The sched dialect's IRDL text (irdl.dialect @sched {...}), owned; NULL when out of memory.
 * Each directive's REQUIRED fields become its op's required attributes. */
char *piperSchedIrdlCreate(void);

#ifdef __cplusplus
}
#endif
#endif
