/* Piper JSON schedule files -> sched dialect ops.
 *
 * A strategy file is a JSON list of directive objects (shared/PIPER.md, README "Strategies").
 * Each becomes one sched op appended to the module, located at the directive's line and column
 * in the JSON file, so every later diagnostic about a directive points into the file the user
 * wrote. This importer checks structure (known ops, required fields, field types, no unknown
 * fields: a typo like "devies" is an error, not a silently ignored option); what needs the
 * model (does a tag exist, is a device in range) is checked by the directive passes.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/checked.h"
#include "piper/piper.h"

/* ---- a JSON reader that keeps positions ---- */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } JKind;

typedef struct JNode {
  JKind kind;
  int line, col;          /* 1-based position of the value's first character */
  bool boolean;           /* J_BOOL */
  double num;             /* J_NUM */
  bool integral;          /* J_NUM written without fraction or exponent */
  char *str;              /* J_STR, owned */
  struct JNode **items;   /* J_ARR / J_OBJ values, owned */
  char **keys;            /* J_OBJ keys, owned; parallel to items */
  int n;                  /* number of items */
} JNode;

typedef struct {
  const char *text, *p; /* whole input, cursor */
  int line, col;        /* cursor position */
  char error[256];      /* first error, empty if none */
  int errLine, errCol;
} JParser;

static void jfree(JNode *n) {
  if (!n) return;
  for (int i = 0; i < n->n; ++i) {
    jfree(n->items[i]);
    if (n->keys) free(n->keys[i]);
  }
  free(n->items);
  free(n->keys);
  free(n->str);
  free(n);
}

static void advance(JParser *j) {
  if (*j->p == '\n') j->line++, j->col = 1;
  else j->col++;
  j->p++;
}

static void skipSpace(JParser *j) {
  while (*j->p && isspace((unsigned char)*j->p)) advance(j);
}

static JNode *jerror(JParser *j, const char *msg) {
  if (!j->error[0]) {
    snprintf(j->error, sizeof j->error, "%s", msg);
    j->errLine = j->line;
    j->errCol = j->col;
  }
  return NULL;
}

static JNode *newNode(JParser *j, JKind kind) {
  JNode *n = calloc(1, sizeof *n);
  n->kind = kind;
  n->line = j->line;
  n->col = j->col;
  return n;
}

static JNode *parseValue(JParser *j, int depth);

static char *parseString(JParser *j) {
  advance(j); /* opening quote */
  size_t cap = 16, len = 0;
  char *s = malloc(cap);
  while (*j->p && *j->p != '"') {
    char c = *j->p;
    if ((unsigned char)c < 0x20) {
      free(s);
      jerror(j, "control character inside a string");
      return NULL;
    }
    if (c == '\\') {
      advance(j);
      switch (*j->p) {
      case '"': case '\\': case '/': c = *j->p; break;
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      default:
        free(s);
        jerror(j, "unsupported escape in string (directive names and values are plain ASCII)");
        return NULL;
      }
    }
    if (len + 2 > cap) s = realloc(s, cap *= 2);
    s[len++] = c;
    advance(j);
  }
  if (*j->p != '"') {
    free(s);
    jerror(j, "unterminated string");
    return NULL;
  }
  advance(j);
  s[len] = 0;
  return s;
}

static JNode *parseContainer(JParser *j, int depth, bool object) {
  JNode *n = newNode(j, object ? J_OBJ : J_ARR);
  char close = object ? '}' : ']';
  int cap = 0;
  advance(j);
  skipSpace(j);
  if (*j->p == close) {
    advance(j);
    return n;
  }
  for (;;) {
    char *key = NULL;
    skipSpace(j);
    if (object) {
      if (*j->p != '"') {
        jfree(n);
        return jerror(j, "expected a \"key\" in object");
      }
      int keyLine = j->line, keyCol = j->col;
      if (!(key = parseString(j))) {
        jfree(n);
        return NULL;
      }
      /* JSON leaves the meaning of a repeated key open (first wins? last?), so a directive
       * that repeats one is ambiguous: refused at the repeat, never guessed. */
      for (int k = 0; k < n->n; ++k)
        if (!strcmp(n->keys[k], key)) {
          char msg[200];
          snprintf(msg, sizeof msg, "duplicate key \"%.100s\" in object: JSON leaves which one "
                                    "counts open; give each key once", key);
          j->line = keyLine, j->col = keyCol; /* the error points at the repeated key */
          free(key);
          jfree(n);
          return jerror(j, msg);
        }
      skipSpace(j);
      if (*j->p != ':') {
        free(key);
        jfree(n);
        return jerror(j, "expected ':' after key");
      }
      advance(j);
    }
    JNode *item = parseValue(j, depth + 1);
    if (!item) {
      free(key);
      jfree(n);
      return NULL;
    }
    if (n->n == cap) {
      cap = cap ? cap * 2 : 4;
      n->items = realloc(n->items, cap * sizeof *n->items);
      if (object) n->keys = realloc(n->keys, cap * sizeof *n->keys);
    }
    if (object) n->keys[n->n] = key;
    n->items[n->n++] = item;
    skipSpace(j);
    if (*j->p == ',') {
      advance(j);
      continue;
    }
    if (*j->p == close) {
      advance(j);
      return n;
    }
    jfree(n);
    return jerror(j, object ? "expected ',' or '}' in object" : "expected ',' or ']' in list");
  }
}

static JNode *parseValue(JParser *j, int depth) {
  if (depth > 64) return jerror(j, "nesting deeper than 64 levels");
  skipSpace(j);
  char c = *j->p;
  if (c == '{' || c == '[') return parseContainer(j, depth, c == '{');
  if (c == '"') {
    JNode *n = newNode(j, J_STR);
    if (!(n->str = parseString(j))) {
      jfree(n);
      return NULL;
    }
    return n;
  }
  if (c == '-' || isdigit((unsigned char)c)) {
    JNode *n = newNode(j, J_NUM);
    char *end;
    n->num = strtod(j->p, &end);
    /* JSON's number grammar only: strtod also takes 0x10, inf and nan */
    for (const char *q = j->p; q < end; ++q)
      if (!strchr("0123456789+-.eE", *q)) {
        jfree(n);
        return jerror(j, "not a JSON number (decimal digits only)");
      }
    n->integral = true;
    for (const char *q = j->p; q < end; ++q)
      if (*q == '.' || *q == 'e' || *q == 'E') n->integral = false;
    while (j->p < end) advance(j);
    return n;
  }
  static const struct { const char *word; JKind kind; bool value; } words[] = {
      {"true", J_BOOL, true}, {"false", J_BOOL, false}, {"null", J_NULL, false}};
  for (size_t i = 0; i < 3; ++i) {
    size_t len = strlen(words[i].word);
    if (!strncmp(j->p, words[i].word, len)) {
      JNode *n = newNode(j, words[i].kind);
      n->boolean = words[i].value;
      for (size_t k = 0; k < len; ++k) advance(j);
      return n;
    }
  }
  return jerror(j, c ? "unexpected character; expected a JSON value" : "unexpected end of file");
}

/* ---- directives -> sched ops ---- */
typedef struct {
  MlirContext ctx;
  const char *path;   /* the JSON file, for locations */
  MlirBlock into;     /* module body */
  int errors;
} Importer;

static MlirLocation locOf(Importer *im, int line, int col) {
  return mlirLocationFileLineColGet(im->ctx, piperStr(im->path), (unsigned)line, (unsigned)col);
}

static void errorAt(Importer *im, const JNode *n, const char *fmt, const char *a,
                    const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  mlirEmitError(locOf(im, n->line, n->col), msg);
  im->errors++;
}

static const JNode *field(const JNode *obj, const char *key) {
  for (int i = 0; i < obj->n; ++i)
    if (!strcmp(obj->keys[i], key)) return obj->items[i];
  return NULL;
}

/* Ranges of the integer fields; a value outside its range is refused at import, where the
 * message can point at the number the user wrote. */
enum {
  TAG_MAX = INT32_MAX,         /* a tag index (PP, layer, mb, ...) */
  MICROBATCHES_MAX = 1 << 20,  /* num_microbatches: split makes that many copies of the ops */
};

/* A JSON integer in [lo, hi] into *out (piperDoubleToI64: no fractions, no 1e19 -> INT64_MIN,
 * no 2^63 -> negative); false otherwise. */
static bool intIn(const JNode *n, int64_t lo, int64_t hi, int64_t *out) {
  return n->kind == J_NUM && n->integral && piperDoubleToI64(n->num, lo, hi, out);
}

/* {"PP": 0, "PASS": "F", "mb": "*"} -> {PP = 0 : i64, PASS = "F", mb = "*"} */
static MlirAttribute filterAttr(Importer *im, const JNode *n, const char *op) {
  if (n->kind != J_OBJ) {
    errorAt(im, n, "'%s': a filter must be an object such as {\"PP\": 0}", op, NULL);
    return mlirAttributeGetNull();
  }
  MlirNamedAttribute *entries = malloc((n->n ? n->n : 1) * sizeof *entries);
  for (int i = 0; i < n->n; ++i) {
    const JNode *v = n->items[i];
    MlirAttribute a = mlirAttributeGetNull();
    if (!strcmp(n->keys[i], "PASS")) {
      if (v->kind == J_STR && (!strcmp(v->str, "F") || !strcmp(v->str, "B") ||
                               !strcmp(v->str, "BI") || !strcmp(v->str, "BW")))
        a = mlirStringAttrGet(im->ctx, piperStr(v->str));
      else
        errorAt(im, v, "'%s': PASS must be \"F\", \"B\", \"BI\" or \"BW\"", op, NULL);
    } else if (v->kind == J_STR && !strcmp(v->str, "*")) {
      a = mlirStringAttrGet(im->ctx, piperStr("*"));
    } else {
      int64_t index;
      if (intIn(v, 0, TAG_MAX, &index))
        a = mlirIntegerAttrGet(mlirIntegerTypeGet(im->ctx, 64), index);
      else
        errorAt(im, v, "'%s': tag '%s' must be an integer index in [0, 2147483647] or \"*\"",
                op, n->keys[i]);
    }
    if (mlirAttributeIsNull(a)) a = mlirStringAttrGet(im->ctx, piperStr("*"));
    entries[i] = piperNamedAttr(im->ctx, n->keys[i], a);
  }
  MlirAttribute d = mlirDictionaryAttrGet(im->ctx, n->n, entries);
  free(entries);
  return d;
}

static MlirAttribute devicesAttr(Importer *im, const JNode *n, const char *op) {
  if (n->kind != J_ARR || n->n == 0) {
    errorAt(im, n, "'%s': devices must be a non-empty list of device ids", op, NULL);
    return mlirAttributeGetNull();
  }
  MlirAttribute *ids = malloc(n->n * sizeof *ids);
  for (int i = 0; i < n->n; ++i) {
    int64_t id = 0;
    if (!intIn(n->items[i], 0, PIPER_MAX_DEVICES - 1, &id)) {
      char range[64];
      snprintf(range, sizeof range, "[0, %d]", PIPER_MAX_DEVICES - 1);
      errorAt(im, n->items[i], "'%s': a device id must be an integer in %s", op, range);
    }
    ids[i] = mlirIntegerAttrGet(mlirIntegerTypeGet(im->ctx, 64), id);
  }
  MlirAttribute a = mlirArrayAttrGet(im->ctx, n->n, ids);
  free(ids);
  return a;
}

/* Field kinds of a directive; keep in sync with sched.irdl.mlir and README "Strategies". */
typedef enum { F_FILTER, F_DEVICES, F_STRING, F_BOOL, F_COUNT, F_NUMBER, F_FILTER_GROUPS } FieldKind;
typedef struct { const char *name; FieldKind kind; bool required; } FieldSpec;
typedef struct { const char *op; FieldSpec fields[10]; } DirectiveSpec;

static const DirectiveSpec directives[] = {
    {"place", {{"filter", F_FILTER, true}, {"devices", F_DEVICES, true}, {"stream", F_STRING, false}}},
    {"replicate",
     {{"filter", F_FILTER, true}, {"devices", F_DEVICES, true}, {"gather_stream", F_STRING, false},
      {"reduce_stream", F_STRING, false}, {"shard_params", F_BOOL, false},
      {"shard_grads", F_BOOL, false}, {"shard_optim", F_BOOL, false},
      {"bucket_size", F_NUMBER, false}}},
    {"shard", {{"filter", F_FILTER, true}, {"devices", F_DEVICES, true}, {"stream", F_STRING, false}}},
    {"split",
     {{"filter", F_FILTER, true}, {"dim_name", F_STRING, true}, {"num_microbatches", F_COUNT, true}}},
    {"order", {{"filters", F_FILTER_GROUPS, true}}},
    /* tensor parallelism (passes/shard_tensor.c) */
    {"shard_tensor",
     {{"filter", F_FILTER, true}, {"devices", F_DEVICES, true}, {"stream", F_STRING, false}}},
};

static MlirAttribute fieldAttr(Importer *im, const FieldSpec *f, const JNode *v, const char *op) {
  switch (f->kind) {
  case F_FILTER: return filterAttr(im, v, op);
  case F_DEVICES: return devicesAttr(im, v, op);
  case F_STRING:
    if (v->kind == J_STR && v->str[0]) return mlirStringAttrGet(im->ctx, piperStr(v->str));
    errorAt(im, v, "'%s': field '%s' must be a non-empty string", op, f->name);
    break;
  case F_BOOL:
    if (v->kind == J_BOOL) return v->boolean ? mlirUnitAttrGet(im->ctx) : mlirAttributeGetNull();
    errorAt(im, v, "'%s': field '%s' must be true or false", op, f->name);
    break;
  case F_COUNT: {
    int64_t count;
    if (intIn(v, 1, MICROBATCHES_MAX, &count))
      return mlirIntegerAttrGet(mlirIntegerTypeGet(im->ctx, 64), count);
    errorAt(im, v, "'%s': field '%s' must be an integer in [1, 1048576]", op, f->name);
    break;
  }
  case F_NUMBER: /* bucket_size, MB: 0 turns buckets off */
    if (v->kind == J_NUM && isfinite(v->num) && v->num >= 0)
      return mlirFloatAttrDoubleGet(im->ctx, mlirF64TypeGet(im->ctx), v->num);
    errorAt(im, v, "'%s': field '%s' must be a number >= 0", op, f->name);
    break;
  case F_FILTER_GROUPS: {
    if (v->kind != J_ARR || v->n < 2) {
      errorAt(im, v, "'%s': filters must be a list of at least two groups of filters, "
                     "[[{...}], [{...}]]", op, NULL);
      break;
    }
    MlirAttribute *groups = malloc(v->n * sizeof *groups);
    for (int g = 0; g < v->n; ++g) {
      const JNode *grp = v->items[g];
      if (grp->kind != J_ARR || grp->n == 0) {
        errorAt(im, grp, "'%s': each group of filters must be a non-empty list", op, NULL);
        groups[g] = mlirArrayAttrGet(im->ctx, 0, NULL);
        continue;
      }
      MlirAttribute *fs = malloc(grp->n * sizeof *fs);
      for (int k = 0; k < grp->n; ++k) {
        fs[k] = filterAttr(im, grp->items[k], op);
        if (mlirAttributeIsNull(fs[k])) fs[k] = mlirDictionaryAttrGet(im->ctx, 0, NULL);
      }
      groups[g] = mlirArrayAttrGet(im->ctx, grp->n, fs);
      free(fs);
    }
    MlirAttribute a = mlirArrayAttrGet(im->ctx, v->n, groups);
    free(groups);
    return a;
  }
  }
  return mlirAttributeGetNull();
}

static void importDirective(Importer *im, const JNode *d) {
  if (d->kind != J_OBJ) {
    errorAt(im, d, "a directive must be an object such as {\"op\": \"place\", ...}", NULL, NULL);
    return;
  }
  const JNode *opNode = field(d, "op");
  if (!opNode || opNode->kind != J_STR) {
    errorAt(im, d, "directive without \"op\": expected one of place, replicate, shard, split, "
                   "order, shard_tensor", NULL, NULL);
    return;
  }
  const DirectiveSpec *spec = NULL;
  for (size_t i = 0; i < sizeof directives / sizeof *directives; ++i)
    if (!strcmp(directives[i].op, opNode->str)) spec = &directives[i];
  if (!spec) {
    errorAt(im, opNode, "unknown directive '%s': expected one of place, replicate, shard, split, "
                        "order, shard_tensor", opNode->str, NULL);
    return;
  }
  /* one attribute per key at most (keys are unique, see parseContainer) */
  MlirNamedAttribute *attrs = malloc((d->n ? d->n : 1) * sizeof *attrs);
  int nAttrs = 0;
  for (int k = 0; k < d->n; ++k) {
    if (!strcmp(d->keys[k], "op")) continue;
    const FieldSpec *f = NULL;
    for (int i = 0; i < 10 && spec->fields[i].name; ++i)
      if (!strcmp(spec->fields[i].name, d->keys[k])) f = &spec->fields[i];
    if (!f) {
      errorAt(im, d->items[k], "'%s' has no field '%s' (misspelt?)", spec->op, d->keys[k]);
      continue;
    }
    MlirAttribute a = fieldAttr(im, f, d->items[k], spec->op);
    if (!mlirAttributeIsNull(a)) attrs[nAttrs++] = piperNamedAttr(im->ctx, f->name, a);
  }
  for (int i = 0; i < 10 && spec->fields[i].name; ++i)
    if (spec->fields[i].required && !field(d, spec->fields[i].name))
      errorAt(im, d, "'%s' needs field '%s'", spec->op, spec->fields[i].name);
  char name[32];
  snprintf(name, sizeof name, "sched.%s", spec->op);
  MlirOperation op = piperOpCreate(name, locOf(im, d->line, d->col), 0, NULL, 0, NULL, nAttrs, attrs);
  free(attrs);
  mlirBlockAppendOwnedOperation(im->into, op);
}

MlirLogicalResult piperImportStrategyJSON(MlirModule module, const char *path, const char *text) {
  Importer im = {mlirModuleGetContext(module), path, mlirModuleGetBody(module), 0};
  JParser j = {text, text, 1, 1, "", 0, 0};
  JNode *root = parseValue(&j, 0);
  if (root) {
    skipSpace(&j);
    if (*j.p) {
      jfree(root);
      root = jerror(&j, "unexpected text after the directive list");
    }
  }
  if (!root) {
    char msg[320];
    snprintf(msg, sizeof msg, "invalid JSON: %s", j.error);
    mlirEmitError(locOf(&im, j.errLine, j.errCol), msg);
    return mlirLogicalResultFailure();
  }
  if (root->kind != J_ARR) {
    errorAt(&im, root, "a strategy is a JSON list of directives, [{\"op\": ...}, ...]", NULL, NULL);
  } else {
    for (int i = 0; i < root->n; ++i) importDirective(&im, root->items[i]);
  }
  jfree(root);
  return im.errors ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}
