/* Device lists in their two forms (include/piper/piper.h): an array of integer ids, or a range
 * array<i64: START, COUNT, STEP, RUN> holding START + i*STEP + j for i < COUNT, j < RUN. Every
 * reader of a device-list attribute goes through these functions, so a range of a million ids
 * reads like the array it stands for, at no cost per id.
 *
 * Canonical form (what piperDeviceListGet and piperDeviceRangeGet build, and the only range
 * the verifier accepts): a range only for more than PIPER_LIST_EXPLICIT_MAX ids, and then
 *   contiguous ids            START, COUNT, 1, 1
 *   runs of RUN > 1 ids       START, COUNT >= 2, STEP > RUN, RUN
 *   single ids STEP > 1 apart START, COUNT, STEP, 1
 * so a list of ids has exactly one canonical attribute and the passes may compare lists by
 * identity, as they compare arrays. */
#include <stdlib.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "piper/piper.h"

/* The last few lists decoded (per thread: passes may run in parallel on functions): a loop
 * over the ids of a list asks for the same attribute again and again, and decoding it takes
 * six calls into MLIR, while an id of a range is two multiplications. */
enum { DECODED = 4 };
typedef struct {
  const void *ptr; /* the attribute (uniqued: its pointer is its identity); NULL: empty slot */
  bool range;      /* a range (else an array) */
  PiperRange r;    /* the range's fields */
} Decoded;
static _Thread_local Decoded decoded[DECODED];
static _Thread_local unsigned decodedNext;

static const Decoded *decode(MlirAttribute a) {
  for (int i = 0; i < DECODED; ++i)
    if (decoded[i].ptr == a.ptr && a.ptr) return &decoded[i];
  Decoded *d = &decoded[decodedNext++ % DECODED];
  *d = (Decoded){a.ptr, false, {0, 0, 0, 0}};
  if (!mlirAttributeIsNull(a) && mlirAttributeIsADenseI64Array(a) &&
      mlirDenseArrayGetNumElements(a) == 4) {
    d->range = true;
    d->r = (PiperRange){mlirDenseI64ArrayGetElement(a, 0), mlirDenseI64ArrayGetElement(a, 1),
                        mlirDenseI64ArrayGetElement(a, 2), mlirDenseI64ArrayGetElement(a, 3)};
  }
  return d;
}

bool piperDeviceListIsRange(MlirAttribute a, PiperRange *r) {
  if (mlirAttributeIsNull(a)) return false;
  const Decoded *d = decode(a);
  if (d->range && r) *r = d->r;
  return d->range;
}

/* The range is canonical (file comment) with its ids in [0, limit). */
static bool canonicalRange(PiperRange r, int64_t limit) {
  if (r.start < 0 || r.count < 1 || r.run < 1 || r.step < 1 || r.count > limit ||
      r.run > limit || r.step > limit || r.count * r.run <= PIPER_LIST_EXPLICIT_MAX)
    return false; /* each field at most limit (2^20): the products below fit int64 */
  bool shape = r.run == 1 ? r.count >= 2 : r.count >= 2 && r.step > r.run;
  return shape && r.start + (r.count - 1) * r.step + r.run - 1 < limit;
}

bool piperDeviceListCheck(MlirAttribute a, int64_t limit) {
  PiperRange r;
  if (piperDeviceListIsRange(a, &r)) return canonicalRange(r, limit);
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAArray(a) || !mlirArrayAttrGetNumElements(a))
    return false;
  for (intptr_t i = 0; i < mlirArrayAttrGetNumElements(a); ++i) {
    MlirAttribute e = mlirArrayAttrGetElement(a, i);
    if (!mlirAttributeIsAInteger(e) || mlirIntegerAttrGetValueInt(e) < 0 ||
        mlirIntegerAttrGetValueInt(e) >= limit)
      return false;
  }
  return true;
}

intptr_t piperDeviceListLen(MlirAttribute a) {
  PiperRange r;
  if (piperDeviceListIsRange(a, &r)) return (intptr_t)(r.count * r.run);
  return !mlirAttributeIsNull(a) && mlirAttributeIsAArray(a) ? mlirArrayAttrGetNumElements(a) : 0;
}

int64_t piperDeviceListAt(MlirAttribute a, intptr_t i) {
  PiperRange r;
  if (piperDeviceListIsRange(a, &r)) return r.start + (i / r.run) * r.step + i % r.run;
  return mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(a, i));
}

intptr_t piperDeviceListFind(MlirAttribute a, int64_t d) {
  PiperRange r;
  if (piperDeviceListIsRange(a, &r)) {
    int64_t off = d - r.start;
    if (off < 0 || off % r.step >= r.run || off / r.step >= r.count) return -1;
    return (intptr_t)((off / r.step) * r.run + off % r.step);
  }
  for (intptr_t i = 0; i < piperDeviceListLen(a); ++i)
    if (piperDeviceListAt(a, i) == d) return i;
  return -1;
}

int64_t *piperDeviceListIds(MlirAttribute a, intptr_t *n) {
  *n = piperDeviceListLen(a);
  int64_t *ids = *n ? malloc((size_t)*n * sizeof *ids) : NULL;
  PiperRange r;
  if (ids && piperDeviceListIsRange(a, &r)) { /* a nanosecond an id, no call into MLIR */
    intptr_t k = 0;
    for (int64_t i = 0; i < r.count; ++i)
      for (int64_t j = 0; j < r.run; ++j) ids[k++] = r.start + i * r.step + j;
    return ids;
  }
  for (intptr_t i = 0; ids && i < *n; ++i) ids[i] = piperDeviceListAt(a, i);
  return ids;
}

static MlirAttribute explicitList(MlirContext ctx, const int64_t *ids, intptr_t n) {
  MlirAttribute *attrs = malloc((n ? (size_t)n : 1) * sizeof *attrs);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  for (intptr_t i = 0; i < n; ++i) attrs[i] = mlirIntegerAttrGet(i64, ids[i]);
  MlirAttribute list = mlirArrayAttrGet(ctx, n, attrs);
  free(attrs);
  return list;
}

MlirAttribute piperDeviceRangeGet(MlirContext ctx, PiperRange r) {
  if (r.count * r.run <= PIPER_LIST_EXPLICIT_MAX) {
    int64_t ids[PIPER_LIST_EXPLICIT_MAX];
    intptr_t n = 0;
    for (int64_t i = 0; i < r.count; ++i)
      for (int64_t j = 0; j < r.run; ++j) ids[n++] = r.start + i * r.step + j;
    return explicitList(ctx, ids, n);
  }
  if (r.step == r.run) r = (PiperRange){r.start, r.count * r.run, 1, 1}; /* contiguous */
  if (r.count == 1) r = (PiperRange){r.start, r.run, 1, 1};
  int64_t v[4] = {r.start, r.count, r.step, r.run};
  return mlirDenseI64ArrayGet(ctx, 4, v);
}

MlirAttribute piperDeviceListGet(MlirContext ctx, const int64_t *ids, intptr_t n) {
  if (n > PIPER_LIST_EXPLICIT_MAX) {
    intptr_t run = 1;
    while (run < n && ids[run] == ids[0] + run) ++run;
    int64_t step = run < n ? ids[run] - ids[0] : run;
    bool range = step > run || run == n;
    for (intptr_t i = run; range && i < n; ++i)
      range = ids[i] == ids[0] + (i / run) * step + i % run;
    if (range && n % run == 0)
      return piperDeviceRangeGet(ctx, (PiperRange){ids[0], n / run, step, run});
  }
  return explicitList(ctx, ids, n);
}

bool piperDeviceListEqual(MlirAttribute a, MlirAttribute b) {
  if (mlirAttributeEqual(a, b)) return true;
  intptr_t n = piperDeviceListLen(a);
  if (n != piperDeviceListLen(b)) return false;
  for (intptr_t i = 0; i < n; ++i)
    if (piperDeviceListAt(a, i) != piperDeviceListAt(b, i)) return false;
  return true;
}
