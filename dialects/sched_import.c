/* Piper JSON schedule files -> sched dialect ops.
 *
 * A strategy file is a JSON list of directive objects (shared/PIPER.md,
 * docs/strategies-and-directives.md).
 * Each becomes one sched op appended to the module, located at the directive's line and column
 * in the JSON file, so every later diagnostic about a directive points into the file the user
 * wrote. This importer checks structure (the directives and their fields are
 * include/piper/directives.def's: known ops, required fields, field types, no unknown
 * fields: a typo like "devies" is an error, not a silently ignored option); what needs the
 * model (does a tag exist, is a device in range) is checked by the directive passes. The JSON
 * is read by the base library's reader (include/piper/base/json.h) as a tree with positions.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/base/json.h"
#include "piper/checked.h"
#include "piper/directives.h"
#include "piper/piper.h"

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

static void errorAt(Importer *im, const pb_json_value *n, const char *fmt, const char *a,
                    const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  mlirEmitError(locOf(im, n->pos.line, n->pos.col), msg);
  im->errors++;
}

/* Ranges of the integer fields; a value outside its range is refused at import, where the
 * message can point at the number the user wrote. */
enum {
  TAG_MAX = INT32_MAX,         /* a tag index (PP, layer, mb, ...); num_microbatches' bound is
                                  PIPER_MAX_MICROBATCHES (include/piper/directives.h) */
};

/* A JSON integer in [lo, hi] into *out (piperDoubleToI64: no fractions, no 1e19 -> INT64_MIN,
 * no 2^63 -> negative); false otherwise. */
static bool intIn(const pb_json_value *n, int64_t lo, int64_t hi, int64_t *out) {
  return n->kind == PB_JSON_NUMBER && n->integral && piperDoubleToI64(n->number, lo, hi, out);
}

/* {"PP": 0, "PASS": "F", "mb": "*"} -> {PP = 0 : i64, PASS = "F", mb = "*"} */
static MlirAttribute filterAttr(Importer *im, const pb_json_value *n, const char *op) {
  if (n->kind != PB_JSON_OBJECT) {
    errorAt(im, n, "'%s': a filter must be an object such as {\"PP\": 0}", op, NULL);
    return mlirAttributeGetNull();
  }
  MlirNamedAttribute *entries = malloc((n->n ? n->n : 1) * sizeof *entries);
  for (intptr_t i = 0; i < n->n; ++i) {
    const pb_json_value *v = n->items[i];
    MlirAttribute a = mlirAttributeGetNull();
    if (!strcmp(n->keys[i], "PASS")) {
      if (v->kind == PB_JSON_STRING && (!strcmp(v->string, "F") || !strcmp(v->string, "B") ||
                               !strcmp(v->string, "BI") || !strcmp(v->string, "BW")))
        a = mlirStringAttrGet(im->ctx, piperStr(v->string));
      else
        errorAt(im, v, "'%s': PASS must be \"F\", \"B\", \"BI\" or \"BW\"", op, NULL);
    } else if (v->kind == PB_JSON_STRING && !strcmp(v->string, "*")) {
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

/* {"start": A, "count": N, "step": K, "run": R} (step defaults to run, run to 1): the ids
 * A + i*K + j for i < N, j < R, ascending (R <= K), below PIPER_MAX_DEVICES -> the canonical
 * device list (include/piper/piper.h: a range attribute when long, so a million replicas are
 * four numbers in the file and in the IR). */
static MlirAttribute rangeAttr(Importer *im, const pb_json_value *n, const char *op) {
  static const char *const keys[] = {"start", "count", "step", "run"};
  int64_t v[4] = {-1, -1, -1, 1}; /* step -1: not given */
  for (intptr_t i = 0; i < n->n; ++i) {
    int k = 0;
    while (k < 4 && strcmp(n->keys[i], keys[k])) ++k;
    if (k == 4) {
      errorAt(im, n->items[i], "'%s': a device range has the fields start, count, step and run, "
                               "not '%s'", op, n->keys[i]);
      return mlirAttributeGetNull();
    }
    if (!intIn(n->items[i], k == 0 ? 0 : 1, PIPER_MAX_DEVICES, &v[k])) {
      char what[96];
      snprintf(what, sizeof what, "'%%s': a device range's %s must be an integer in [%d, %d]",
               keys[k], k == 0 ? 0 : 1, PIPER_MAX_DEVICES);
      errorAt(im, n->items[i], what, op, NULL);
      return mlirAttributeGetNull();
    }
  }
  if (v[0] < 0 || v[1] < 0) {
    errorAt(im, n, "'%s': a device range needs start and count, e.g. {\"start\": 0, "
                   "\"count\": 1024} (and step, run: ids start + i*step + j, j < run)", op, NULL);
    return mlirAttributeGetNull();
  }
  PiperRange r = {v[0], v[1], v[2] < 0 ? v[3] : v[2], v[3]};
  if (r.step < r.run) {
    errorAt(im, n, "'%s': a device range's step must be at least its run (the runs of ids "
                   "start + i*step .. + run-1 may not overlap)", op, NULL);
    return mlirAttributeGetNull();
  }
  /* each field is at most 2^20: the products fit int64 */
  if (r.start + (r.count - 1) * r.step + r.run - 1 >= PIPER_MAX_DEVICES) {
    char range[64];
    snprintf(range, sizeof range, "[0, %d]", PIPER_MAX_DEVICES - 1);
    errorAt(im, n, "'%s': a device range's last id is outside %s", op, range);
    return mlirAttributeGetNull();
  }
  return piperDeviceRangeGet(im->ctx, r);
}

static MlirAttribute devicesAttr(Importer *im, const pb_json_value *n, const char *op) {
  if (n->kind == PB_JSON_OBJECT) return rangeAttr(im, n, op);
  if (n->kind != PB_JSON_ARRAY || n->n == 0) {
    errorAt(im, n, "'%s': devices must be a non-empty list of device ids, or a range "
                   "{\"start\": A, \"count\": N, \"step\": K, \"run\": R}", op, NULL);
    return mlirAttributeGetNull();
  }
  int64_t *ids = malloc(n->n * sizeof *ids);
  for (intptr_t i = 0; i < n->n; ++i) {
    ids[i] = 0;
    if (!intIn(n->items[i], 0, PIPER_MAX_DEVICES - 1, &ids[i])) {
      char range[64];
      snprintf(range, sizeof range, "[0, %d]", PIPER_MAX_DEVICES - 1);
      errorAt(im, n->items[i], "'%s': a device id must be an integer in %s", op, range);
    }
  }
  MlirAttribute a = piperDeviceListGet(im->ctx, ids, n->n);
  free(ids);
  return a;
}

/* The attribute field `f` of directive `op` gets from JSON value `v` (include/piper/directives.h
 * says what each kind of field holds); null after an error at `v`. */
static MlirAttribute fieldAttr(Importer *im, const PiperDirectiveField *f,
                               const pb_json_value *v, const char *op) {
  switch (f->kind) {
  case PIPER_FIELD_FILTER: return filterAttr(im, v, op);
  case PIPER_FIELD_DEVICES: return devicesAttr(im, v, op);
  case PIPER_FIELD_STRING:
    if (v->kind == PB_JSON_STRING && v->string[0])
      return mlirStringAttrGet(im->ctx, piperStr(v->string));
    errorAt(im, v, "'%s': field '%s' must be a non-empty string", op, f->name);
    break;
  case PIPER_FIELD_BOOL:
    if (v->kind == PB_JSON_BOOL)
      return v->boolean ? mlirUnitAttrGet(im->ctx) : mlirAttributeGetNull();
    errorAt(im, v, "'%s': field '%s' must be true or false", op, f->name);
    break;
  case PIPER_FIELD_COUNT: {
    int64_t count;
    if (intIn(v, 1, PIPER_MAX_MICROBATCHES, &count))
      return mlirIntegerAttrGet(mlirIntegerTypeGet(im->ctx, 64), count);
    char msg[96];
    snprintf(msg, sizeof msg, "'%%s': field '%%s' must be an integer in [1, %d]",
             PIPER_MAX_MICROBATCHES);
    errorAt(im, v, msg, op, f->name);
    break;
  }
  case PIPER_FIELD_NUMBER: /* bucket_size, MB: 0 turns buckets off */
    if (v->kind == PB_JSON_NUMBER && isfinite(v->number) && v->number >= 0)
      return mlirFloatAttrDoubleGet(im->ctx, mlirF64TypeGet(im->ctx), v->number);
    errorAt(im, v, "'%s': field '%s' must be a number >= 0", op, f->name);
    break;
  case PIPER_FIELD_FILTER_GROUPS: {
    if (v->kind != PB_JSON_ARRAY || v->n < 2) {
      errorAt(im, v, "'%s': filters must be a list of at least two groups of filters, "
                     "[[{...}], [{...}]]", op, NULL);
      break;
    }
    MlirAttribute *groups = malloc(v->n * sizeof *groups);
    for (intptr_t g = 0; g < v->n; ++g) {
      const pb_json_value *grp = v->items[g];
      if (grp->kind != PB_JSON_ARRAY || grp->n == 0) {
        errorAt(im, grp, "'%s': each group of filters must be a non-empty list", op, NULL);
        groups[g] = mlirArrayAttrGet(im->ctx, 0, NULL);
        continue;
      }
      MlirAttribute *fs = malloc(grp->n * sizeof *fs);
      for (intptr_t k = 0; k < grp->n; ++k) {
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

static void importDirective(Importer *im, const pb_json_value *d) {
  if (d->kind != PB_JSON_OBJECT) {
    errorAt(im, d, "a directive must be an object such as {\"op\": \"place\", ...}", NULL, NULL);
    return;
  }
  const pb_json_value *opNode = pb_json_get(d, "op");
  if (!opNode || opNode->kind != PB_JSON_STRING) {
    errorAt(im, d, "directive without \"op\": expected one of %s", piperDirectiveNames(), NULL);
    return;
  }
  const PiperDirective *spec = piperDirectiveNamed(opNode->string);
  if (!spec) {
    errorAt(im, opNode, "unknown directive '%s': expected one of %s", opNode->string,
            piperDirectiveNames());
    return;
  }
  /* one attribute per key at most (keys are unique: PB_JSON_UNIQUE_KEYS) */
  MlirNamedAttribute *attrs = malloc((d->n ? d->n : 1) * sizeof *attrs);
  int nAttrs = 0;
  for (intptr_t k = 0; k < d->n; ++k) {
    if (!strcmp(d->keys[k], "op")) continue;
    const PiperDirectiveField *f = NULL;
    for (int i = 0; i < spec->nFields; ++i)
      if (!strcmp(spec->fields[i].name, d->keys[k])) f = &spec->fields[i];
    if (!f) {
      errorAt(im, d->items[k], "'%s' has no field '%s' (misspelt?)", spec->name, d->keys[k]);
      continue;
    }
    MlirAttribute a = fieldAttr(im, f, d->items[k], spec->name);
    if (!mlirAttributeIsNull(a)) attrs[nAttrs++] = piperNamedAttr(im->ctx, f->name, a);
  }
  for (int i = 0; i < spec->nFields; ++i)
    if (spec->fields[i].required && !pb_json_get(d, spec->fields[i].name))
      errorAt(im, d, "'%s' needs field '%s'", spec->name, spec->fields[i].name);
  char name[64];
  snprintf(name, sizeof name, "sched.%s", spec->name);
  MlirOperation op = piperOpCreate(name, locOf(im, d->pos.line, d->pos.col), 0, NULL, 0, NULL,
                                  nAttrs, attrs);
  free(attrs);
  mlirBlockAppendOwnedOperation(im->into, op);
}

MlirLogicalResult piperImportStrategyJSON(MlirModule module, const char *path, const char *text) {
  Importer im = {mlirModuleGetContext(module), path, mlirModuleGetBody(module), 0};
  pb_json j;
  pb_json_init(&j, text, strlen(text));
  /* a directive that repeats a key is ambiguous: refused at the repeat, never guessed */
  pb_json_value *root = pb_json_parse_value(&j, PB_JSON_UNIQUE_KEYS);
  if (root && !pb_json_at_end(&j)) {
    pb_json_free(root);
    root = NULL;
    pb_json_fail(&j, "unexpected text after the directive list");
  }
  if (!root) {
    char msg[320];
    snprintf(msg, sizeof msg, "invalid JSON: %s", j.err);
    mlirEmitError(locOf(&im, j.err_line, j.err_col), msg);
    return mlirLogicalResultFailure();
  }
  if (root->kind != PB_JSON_ARRAY) {
    errorAt(&im, root, "a strategy is a JSON list of directives, [{\"op\": ...}, ...]", NULL, NULL);
  } else {
    for (intptr_t i = 0; i < root->n; ++i) importDirective(&im, root->items[i]);
  }
  pb_json_free(root);
  return im.errors ? mlirLogicalResultFailure() : mlirLogicalResultSuccess();
}
