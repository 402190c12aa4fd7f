/* The dialects' IRDL text, made when a context is created: tdag's generated from the op list
 * (include/piper/tdag_ops.def), so that an op's signature is written once, next to its facts;
 * sched's from the directive list (include/piper/directives.def, dialects/directives.c); comm
 * stays a hand-written IRDL file (dialects/comm.irdl.mlir), embedded at build time. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/directives.h"
#include "piper/piper.h"

extern const char piper_irdl_files[]; /* comm.irdl.mlir (embed_irdl.cmake) */

/* One op's signature as the list writes it. */
typedef struct {
  const char *name;       /* "linear" */
  const char *attributes; /* "eps: float, ..." */
  const char *operands;   /* "x, weight: T, gates: variadic, ..." */
  const char *results;    /* the same syntax */
} OpSig;

static const OpSig sigs[] = {
#define TDAG_OP(ID, n, KIND, attributes, operands, results, ...) \
  {#n, attributes, operands, results},
#include "piper/tdag_ops.def"
};

/* A growing text; `failed` once out of memory or a list entry was malformed. */
typedef struct {
  char *buf;   /* NUL-terminated (owned) */
  size_t len;  /* bytes before the NUL */
  size_t cap;  /* bytes allocated */
  bool failed; /* nothing more is appended */
  bool oom;    /* failed for want of memory (else a malformed entry, reported) */
} Text;

static void emit(Text *t, const char *fmt, ...) {
  if (t->failed) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0 || t->len + (size_t)n + 1 > t->cap) {
    size_t want = (t->len + (size_t)(n < 0 ? 0 : n) + 1) * 2;
    char *b = n < 0 ? NULL : realloc(t->buf, want);
    if (!b) {
      t->failed = t->oom = true;
      return;
    }
    t->buf = b;
    t->cap = want;
  }
  va_start(ap, fmt);
  vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
  va_end(ap);
  t->len += (size_t)n;
}

/* Reports a malformed entry of the list (a build defect) and stops the text. */
static void malformed(Text *t, const OpSig *op, const char *what, const char *item) {
  fprintf(stderr, "piper: error: include/piper/tdag_ops.def, tdag.%s: %s in '%s'; fix the "
                  "entry and rebuild\n", op->name, what, item);
  t->failed = true;
}

enum { MAX_ITEMS = 16, MAX_WORD = 48 }; /* per list; per name or spec */

/* One item of a signature list: "name" or "name: spec". */
typedef struct {
  char name[MAX_WORD];  /* its name */
  bool variadic;        /* spec says `variadic` */
  bool any;             /* spec says `any` */
  char letter;          /* a shared constraint's capital letter, or 0 */
  char base[MAX_WORD];  /* an attribute's base type */
} Item;

/* Splits `list` into at most MAX_ITEMS items; the count, or -1 after reporting the item. */
static int parseList(Text *t, const OpSig *op, const char *list, bool attribute, Item *items) {
  int n = 0;
  for (const char *p = list; *p;) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    size_t len = strcspn(p, ",");
    char item[2 * MAX_WORD];
    if (n == MAX_ITEMS || len >= sizeof item) {
      malformed(t, op, "more than 16 items or an item over 95 bytes", list);
      return -1;
    }
    memcpy(item, p, len);
    item[len] = 0;
    p += len;
    Item *it = &items[n++];
    memset(it, 0, sizeof *it);
    char spec[2][MAX_WORD] = {"", ""};
    int used = 0, words = sscanf(item, " %47[A-Za-z0-9_]%n", it->name, &used);
    const char *rest = item + used;
    while (*rest == ' ') rest++;
    if (words == 1 && *rest == ':')
      words += sscanf(rest + 1, " %47s %47s", spec[0], spec[1]);
    else if (words == 1 && *rest) /* a name, then neither `: spec` nor the end */
      words = 0;
    if (words < 1 || (attribute && words != 2)) {
      malformed(t, op, attribute ? "an attribute is `name: base`" : "an item is `name[: spec]`",
                item);
      return -1;
    }
    for (int w = 0; w + 1 < words; w++) {
      const char *s = spec[w];
      if (attribute && (!strcmp(s, "string") || !strcmp(s, "float") ||
                        !strcmp(s, "integer") || !strcmp(s, "symbol_ref")))
        snprintf(it->base, sizeof it->base, "%s", s);
      else if (!attribute && w == 0 && !strcmp(s, "variadic"))
        it->variadic = true;
      else if (!attribute && !strcmp(s, "any") && !it->letter)
        it->any = true;
      else if (!attribute && s[0] >= 'A' && s[0] <= 'Z' && !s[1] && !it->any)
        it->letter = s[0];
      else {
        malformed(t, op, "unknown spec (variadic, any, a capital letter; attribute bases: "
                         "string, float, integer, symbol_ref)", item);
        return -1;
      }
    }
  }
  return n;
}

/* Declares the constraints of `items` (one per item, one per shared letter) and writes
 * `irdl.<what>(name: %c, ...)`; *next numbers the constraint values. */
static void emitValues(Text *t, const char *what, const Item *items, int n, int *next,
                       bool letters[26]) {
  if (n == 0) return;
  for (int i = 0; i < n; i++) {
    if (items[i].letter) {
      if (letters[items[i].letter - 'A']) continue;
      letters[items[i].letter - 'A'] = true;
      emit(t, "    %%%c = irdl.base \"!builtin.tensor\"\n", items[i].letter);
    } else {
      emit(t, "    %%c%d = %s\n", *next + i, items[i].any ? "irdl.any"
                                                         : "irdl.base \"!builtin.tensor\"");
    }
  }
  emit(t, "    irdl.%s(", what);
  for (int i = 0; i < n; i++) {
    emit(t, "%s%s: %s", i ? ", " : "", items[i].name, items[i].variadic ? "variadic " : "");
    if (items[i].letter)
      emit(t, "%%%c", items[i].letter);
    else
      emit(t, "%%c%d", *next + i);
  }
  emit(t, ")\n");
  *next += n;
}

static void emitOp(Text *t, const OpSig *op) {
  Item attrs[MAX_ITEMS], ins[MAX_ITEMS], outs[MAX_ITEMS];
  int na = parseList(t, op, op->attributes, true, attrs);
  int ni = parseList(t, op, op->operands, false, ins);
  int no = parseList(t, op, op->results, false, outs);
  if (na < 0 || ni < 0 || no < 0) return;
  emit(t, "  irdl.operation @%s {\n", op->name);
  int next = 0;
  if (na) {
    for (int i = 0; i < na; i++)
      emit(t, "    %%a%d = irdl.base \"#builtin.%s\"\n", i, attrs[i].base);
    emit(t, "    irdl.attributes {");
    for (int i = 0; i < na; i++) emit(t, "%s \"%s\" = %%a%d", i ? "," : "", attrs[i].name, i);
    emit(t, " }\n");
  }
  bool letters[26] = {false};
  emitValues(t, "operands", ins, ni, &next, letters);
  emitValues(t, "results", outs, no, &next, letters);
  emit(t, "  }\n");
}

char *piperIrdlSourceCreate(void) {
  Text t = {NULL, 0, 0, false, false};
  emit(&t, "module {\nirdl.dialect @tdag {\n");
  for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) emitOp(&t, &sigs[i]);
  char *sched = piperSchedIrdlCreate();
  if (!sched) t.failed = t.oom = true;
  emit(&t, "}\n%s%s}\n", piper_irdl_files, sched ? sched : "");
  free(sched);
  if (t.failed) {
    if (t.oom)
      fprintf(stderr, "piper: error: out of memory building the tdag dialect's IRDL text\n");
    free(t.buf);
    return NULL;
  }
  return t.buf;
}
