/* The directive table (include/piper/directives.h), expanded from include/piper/directives.def,
 * and what follows from it alone: the sched dialect's IRDL text and the directives' names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/directives.h"
#include "piper/piper.h"

#define PIPER_REQ_REQUIRED true
#define PIPER_REQ_OPTIONAL false
#define FIELD(n, KIND, REQ) {#n, PIPER_FIELD_##KIND, PIPER_REQ_##REQ},
#define DIRECTIVE(ID, n, applied, fields)                                                  \
  [PIPER_DIRECTIVE_##ID] = {PIPER_DIRECTIVE_##ID, #n, {fields},                           \
                            sizeof((PiperDirectiveField[]){fields}) /                    \
                                sizeof(PiperDirectiveField)},
static const PiperDirective table[PIPER_DIRECTIVE_COUNT] = {
#include "piper/directives.def"
};
/* and a compile-time refusal of a directive with more fields than a row holds */
#define FIELD(n, KIND, REQ) {#n, PIPER_FIELD_##KIND, PIPER_REQ_##REQ},
#define DIRECTIVE(ID, n, applied, fields)                                                  \
  _Static_assert(sizeof((PiperDirectiveField[]){fields}) <=                               \
                     PIPER_DIRECTIVE_MAX_FIELDS * sizeof(PiperDirectiveField),            \
                 "directive " #n " has more than PIPER_DIRECTIVE_MAX_FIELDS fields");
#include "piper/directives.def"

const PiperDirective *piperDirectiveTable(size_t *n) {
  *n = PIPER_DIRECTIVE_COUNT;
  return table;
}

const PiperDirective *piperDirectiveNamed(const char *name) {
  for (size_t i = 0; i < PIPER_DIRECTIVE_COUNT; ++i)
    if (!strcmp(table[i].name, name)) return &table[i];
  return NULL;
}

const PiperDirective *piperDirectiveOf(MlirOperation op) {
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
  if (name.length < 6 || memcmp(name.data, "sched.", 6)) return NULL;
  for (size_t i = 0; i < PIPER_DIRECTIVE_COUNT; ++i)
    if (strlen(table[i].name) == name.length - 6 &&
        !memcmp(table[i].name, name.data + 6, name.length - 6))
      return &table[i];
  return NULL;
}

const char *piperDirectiveNames(void) {
  static char names[512];
  if (!names[0])
    for (size_t i = 0; i < PIPER_DIRECTIVE_COUNT; ++i)
      snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
               table[i].name);
  return names;
}

/* The attribute a field of `kind` becomes, as an IRDL base. */
static const char *irdlBase(PiperFieldKind kind) {
  switch (kind) {
  case PIPER_FIELD_FILTER: return "#builtin.dictionary";
  case PIPER_FIELD_FILTER_GROUPS: return "#builtin.array";
  case PIPER_FIELD_DEVICES: return "#builtin.array";
  case PIPER_FIELD_STRING: return "#builtin.string";
  case PIPER_FIELD_BOOL: return "#builtin.unit";
  case PIPER_FIELD_COUNT: return "#builtin.integer";
  case PIPER_FIELD_NUMBER: return "#builtin.float";
  }
  return "#builtin.unit";
}

char *piperSchedIrdlCreate(void) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  /* every line below is far shorter than what is left of cap once it is doubled */
#define APPEND(...)                                                                        \
  do {                                                                                     \
    if (cap - len < 512) {                                                                 \
      char *b = realloc(buf, cap *= 2);                                                    \
      if (!b) {                                                                            \
        free(buf);                                                                         \
        return NULL;                                                                       \
      }                                                                                    \
      buf = b;                                                                             \
    }                                                                                      \
    len += (size_t)snprintf(buf + len, cap - len, __VA_ARGS__);                            \
  } while (0)
  APPEND("irdl.dialect @sched {\n");
  for (size_t i = 0; i < PIPER_DIRECTIVE_COUNT; ++i) {
    const PiperDirective *d = &table[i];
    APPEND("  irdl.operation @%s {\n", d->name);
    int nRequired = 0;
    for (int f = 0; f < d->nFields; ++f)
      if (d->fields[f].required && d->fields[f].kind == PIPER_FIELD_DEVICES) {
        /* an array of ids or a range (include/piper/piper.h: device lists) */
        APPEND("    %%ids%d = irdl.base \"#builtin.array\"\n", nRequired);
        APPEND("    %%range%d = irdl.base \"#builtin.dense_array\"\n", nRequired);
        APPEND("    %%a%d = irdl.any_of(%%ids%d, %%range%d)\n", nRequired, nRequired, nRequired);
        nRequired++;
      } else if (d->fields[f].required) {
        APPEND("    %%a%d = irdl.base \"%s\"\n", nRequired++, irdlBase(d->fields[f].kind));
      }
    if (nRequired) {
      APPEND("    irdl.attributes {");
      for (int f = 0, k = 0; f < d->nFields; ++f)
        if (d->fields[f].required) {
          APPEND("%s \"%s\" = %%a%d", k ? "," : "", d->fields[f].name, k);
          k++;
        }
      APPEND(" }\n");
    }
    APPEND("  }\n");
  }
  APPEND("}\n");
#undef APPEND
  return buf;
}
