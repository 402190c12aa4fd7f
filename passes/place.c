/* --piper-place: the `place` directive. Sets `devices` on every op its filter selects (a
 * later directive overrides an earlier one, as in Piper). Afterwards every op of the training
 * graph must be placed (the `shard` directives, --piper-shard, re-place experts next); a
 * strategy without any place directive puts everything on device 0. Device ids must be dense
 * from 0: the plan's world size is the number of devices used, and
 * is recorded on the module as `piper.devices`. */
#include <stdlib.h>
#include <string.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "passes/strategy.h"
#include "piper/checked.h"
#include "piper/ptrmap.h"

static int ascending(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

/* `devices` in ascending order, canonical (a range stays as it is: it ascends). */
static MlirAttribute sortedDevices(MlirContext ctx, MlirAttribute devices) {
  if (piperDeviceListIsRange(devices, NULL)) return devices;
  intptr_t n;
  int64_t *ids = piperDeviceListIds(devices, &n);
  if (!ids) return devices; /* out of memory: unsorted, which extract's checks refuse */
  qsort(ids, n, sizeof *ids, ascending);
  MlirAttribute sorted = piperListGet(ctx, ids, n);
  free(ids);
  return sorted;
}

/* One tag name of the model with the range of its indices. */
typedef struct {
  MlirStringRef key; /* the tag's name, owned by the context (identifiers are uniqued) */
  int64_t lo, hi;    /* smallest and largest index */
} TagRange;

/* Writes the tag names the model has, with their index ranges, for "matches nothing", in the
 * order first met: "PP 0..1, layer 0..3". What does not fit in `size` bytes is cut and
 * counted at the end, ", ... (N more)"; ", ..." ends a list that ran out of memory. */
static void describeTags(MlirBlock body, char *out, size_t size) {
  TagRange *tags = NULL;
  size_t n = 0, cap = 0;
  bool incomplete = false; /* a tag could not be stored: out of memory */
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute dict = mlirOperationGetAttributeByName(op, piperStr("tags"));
    if (mlirAttributeIsNull(dict)) continue;
    for (intptr_t i = 0; i < mlirDictionaryAttrGetNumElements(dict); ++i) {
      MlirNamedAttribute e = mlirDictionaryAttrGetElement(dict, i);
      MlirStringRef key = mlirIdentifierStr(e.name);
      int64_t v = mlirAttributeIsAInteger(e.attribute) ? mlirIntegerAttrGetValueInt(e.attribute) : 0;
      size_t k = 0;
      while (k < n && !mlirStringRefEqual(tags[k].key, key)) ++k;
      if (k == n) {
        if (!piperGrow((void **)&tags, &cap, n + 1, sizeof *tags)) {
          incomplete = true;
          continue;
        }
        tags[n++] = (TagRange){key, v, v};
      }
      tags[k].lo = v < tags[k].lo ? v : tags[k].lo;
      tags[k].hi = v > tags[k].hi ? v : tags[k].hi;
    }
  }
  enum { MARKER_MAX = 40 }; /* room kept for the marker, ", ... (N more)" */
  size_t used = 0, k = 0;
  out[0] = 0;
  for (; k < n; ++k) {
    const char *sep = k ? ", " : "";
    int keyLen = (int)tags[k].key.length;
    int len = snprintf(NULL, 0, "%s%.*s %lld..%lld", sep, keyLen, tags[k].key.data,
                       (long long)tags[k].lo, (long long)tags[k].hi);
    size_t reserve = k + 1 < n || incomplete ? MARKER_MAX : 0;
    if (len < 0 || used + (size_t)len + reserve >= size) break;
    snprintf(out + used, size - used, "%s%.*s %lld..%lld", sep, keyLen, tags[k].key.data,
             (long long)tags[k].lo, (long long)tags[k].hi);
    used += (size_t)len;
  }
  if (k < n && used < size)
    snprintf(out + used, size - used, "%s... (%zu more)", k ? ", " : "", n - k);
  else if (incomplete && used < size)
    snprintf(out + used, size - used, "%s...", k ? ", " : "");
  free(tags);
}

/* True if some tdag op of `body` matches both filters. */
static bool filtersOverlap(MlirBlock body, MlirAttribute a, MlirAttribute b) {
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    if (piperOpInDialect(op, "tdag") && piperFilterMatches(op, a) && piperFilterMatches(op, b))
      return true;
  return false;
}

/* Place directives apply in order and a later one overrides an earlier one on the ops both
 * select. When that takes every op away from a device a directive lists, the plan would have
 * a device with nothing to run (and a world size that counts it): an error at the directive
 * that lists the device, with a note at each later directive that took its ops. */
static MlirLogicalResult checkNoDeviceLeftEmpty(MlirBlock body, const MlirOperation *places,
                                                int nPlaces, const int *listedBy,
                                                const bool *used, int64_t maxDevice) {
  bool *holds = calloc((size_t)maxDevice + 1, sizeof *holds);
  if (!holds) return mlirLogicalResultFailure();
  PiperPtrMap seen; /* device lists already walked (uniqued attributes): each list once, not
                     * once per op, which was O(ops x devices) with thousands of experts */
  piperPtrMapInit(&seen, 16);
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute devices = mlirOperationGetAttributeByName(op, piperStr("devices"));
    if (!piperOpInDialect(op, "tdag") || mlirAttributeIsNull(devices) ||
        piperPtrMapGet(&seen, devices.ptr, NULL))
      continue;
    piperPtrMapPut(&seen, devices.ptr, 1);
    intptr_t n;
    int64_t *ids = piperDeviceListIds(devices, &n);
    for (intptr_t i = 0; ids && i < n; ++i) holds[ids[i]] = true;
    free(ids);
  }
  piperPtrMapFree(&seen);
  MlirLogicalResult status = mlirLogicalResultSuccess();
  for (int64_t dev = 0; dev <= maxDevice; ++dev) {
    if (!used[dev] || holds[dev]) continue;
    int k = listedBy[dev] - 1; /* the last place directive that lists it */
    MlirOperation d = places[k];
    MlirAttribute filter = mlirOperationGetAttributeByName(d, piperStr("filter"));
    piperDirectiveError(d, "place: device %lld is left with no op: a later place directive "
                           "selects every op this one puts there and overrides it; make the "
                           "filters of the place directives disjoint, or drop device %lld",
                        (long long)dev, (long long)dev);
    for (int e = k + 1; e < nPlaces; ++e) {
      MlirAttribute later = mlirOperationGetAttributeByName(places[e], piperStr("filter"));
      if (filtersOverlap(body, filter, later))
        piperEmitNotef(mlirOperationGetLocation(places[e]),
                       "this place directive takes over those ops from device %lld",
                       (long long)dev);
    }
    status = mlirLogicalResultFailure();
  }
  free(holds);
  return status;
}

static MlirLogicalResult runPlace(MlirOperation module, const char *arg) {
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(module, 0));
  MlirOperation func = piperTrainingFunction(module, "piper-place");
  if (mlirOperationIsNull(func)) return mlirLogicalResultFailure();
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  MlirContext ctx = mlirOperationGetContext(module);
  bool *used = calloc(PIPER_MAX_DEVICES, sizeof *used);
  int *listedBy = calloc(PIPER_MAX_DEVICES, sizeof *listedBy); /* last place (1-based) naming it */
  int nPlaces = 0;
  MlirOperation *places = NULL; /* the place directives in order (listedBy indexes it) */
  size_t capPlaces = 0;
  int64_t maxDevice = -1;
  MlirOperation firstPlace = {NULL};
  MlirLogicalResult status = mlirLogicalResultSuccess();

  for (MlirOperation d = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(d);
       d = mlirOperationGetNextInBlock(d)) {
    if (!piperOpIs(d, "sched.place")) continue;
    if (mlirOperationIsNull(firstPlace)) firstPlace = d;
    if (!piperGrow((void **)&places, &capPlaces, (size_t)nPlaces + 1, sizeof *places)) {
      piperDirectiveError(d, "place: out of memory");
      status = mlirLogicalResultFailure();
      goto done; /* one place frees the tables */
    }
    places[nPlaces++] = d;
    MlirAttribute filter = mlirOperationGetAttributeByName(d, piperStr("filter"));
    MlirAttribute devices = mlirOperationGetAttributeByName(d, piperStr("devices"));
    intptr_t n;
    int64_t *ids = piperDeviceListIds(devices, &n); /* freed after the loop or before its gotos */
    for (intptr_t i = 0; i < n; ++i) {
      int64_t dev = ids ? ids[i] : piperListAt(devices, i);
      if (dev < 0 || dev >= PIPER_MAX_DEVICES) { /* a hand-written .mlir strategy */
        piperDirectiveError(d, "place: device %lld is outside [0, %d]", (long long)dev,
                            PIPER_MAX_DEVICES - 1);
        status = mlirLogicalResultFailure();
        free(ids);
        goto done; /* one place frees the tables */
      }
      if (listedBy[dev] == nPlaces) { /* O(1) per id: lists reach thousands of devices */
        piperDirectiveError(d, "place: device %lld is listed twice", (long long)dev);
        status = mlirLogicalResultFailure();
        free(ids);
        goto done; /* one place frees the tables */
      }
      listedBy[dev] = nPlaces;
      used[dev] = true;
      maxDevice = dev > maxDevice ? dev : maxDevice;
    }
    free(ids);
    /* Canonical order: replica k is the k-th smallest device everywhere, the order MPI gives
     * a group's members, so shard k, batch slice k and communicator rank k coincide whatever
     * order the strategy listed the devices in. */
    MlirAttribute sorted = sortedDevices(ctx, devices);
    int matched = 0;
    for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      if (piperOpInDialect(op, "tdag") && piperFilterMatches(op, filter)) {
        mlirOperationSetAttributeByName(op, piperStr("devices"), sorted);
        matched++;
      }
    if (!matched) {
      char tags[512];
      describeTags(body, tags, sizeof tags);
      piperDirectiveError(d, "place: the filter matches no op of the model (its tags are: %s)",
                          tags);
      status = mlirLogicalResultFailure();
      goto done; /* one place frees the tables */
    }
  }
  if (mlirOperationIsNull(firstPlace)) {
    /* no placement at all: a single-device plan */
    int64_t zero = 0;
    MlirAttribute dev0 = mlirArrayAttrGet(ctx, 1, (MlirAttribute[]){mlirIntegerAttrGet(
                                                      mlirIntegerTypeGet(ctx, 64), zero)});
    for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
         op = mlirOperationGetNextInBlock(op))
      if (piperOpInDialect(op, "tdag")) mlirOperationSetAttributeByName(op, piperStr("devices"), dev0);
    maxDevice = 0;
  } else {
    status = checkNoDeviceLeftEmpty(body, places, nPlaces, listedBy, used, maxDevice);
    for (int64_t dev = 0; dev <= maxDevice && mlirLogicalResultIsSuccess(status); ++dev)
      if (!used[dev]) {
        piperDirectiveError(firstPlace, "place: device %lld is out of range: device ids must "
                                        "be dense from 0, but device %lld is never used; "
                                        "renumber the devices",
                            (long long)maxDevice, (long long)dev);
        status = mlirLogicalResultFailure();
        break;
      }
    for (MlirOperation op = mlirBlockGetFirstOperation(body);
         !mlirOperationIsNull(op) && mlirLogicalResultIsSuccess(status);
         op = mlirOperationGetNextInBlock(op))
      if (piperOpInDialect(op, "tdag") &&
          mlirAttributeIsNull(mlirOperationGetAttributeByName(op, piperStr("devices")))) {
        mlirEmitError(mlirOperationGetLocation(op),
                      "place: no place directive selects this op; add one whose filter matches "
                      "its tags");
        status = mlirLogicalResultFailure();
      }
  }
done:
  free(used);
  free(listedBy);
  free(places);
  if (mlirLogicalResultIsSuccess(status))
    mlirOperationSetAttributeByName(
        module, piperStr("piper.devices"),
        mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), maxDevice + 1));
  return status;
}

MlirPass piperCreatePlacePass(const char *arg) {
  static int64_t typeId;
  return piperCreateModulePass(&typeId, "piper-place", "place directive", runPlace, arg);
}
