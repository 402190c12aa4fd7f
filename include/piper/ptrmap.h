/* A hash map from pointers (MlirValue.ptr, MlirOperation.ptr) to intptr_t, open addressing.
 * Passes use it to attach facts to IR objects: a value's gradient, its buffer, an op's node. */
#ifndef PIPER_PTRMAP_H
#define PIPER_PTRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  const void **keys; /* NULL = empty slot */
  intptr_t *vals;    /* value for keys[i] */
  size_t cap;        /* power of two, at least twice count */
  size_t count;      /* occupied slots */
} PiperPtrMap;

void piperPtrMapInit(PiperPtrMap *m, size_t expected);
void piperPtrMapFree(PiperPtrMap *m);
/* True and *val set if `key` is present. */
bool piperPtrMapGet(const PiperPtrMap *m, const void *key, intptr_t *val);
void piperPtrMapPut(PiperPtrMap *m, const void *key, intptr_t val);

#endif
