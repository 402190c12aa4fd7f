/* PiperPtrMap: linear probing with a multiplicative hash of the pointer. */
#include <stdlib.h>

#include "piper/ptrmap.h"

static size_t slotOf(const void **keys, size_t cap, const void *key) {
  size_t i = (((uintptr_t)key >> 4) * 0x9E3779B97F4A7C15ull) & (cap - 1);
  while (keys[i] && keys[i] != key) i = (i + 1) & (cap - 1);
  return i;
}

void piperPtrMapInit(PiperPtrMap *m, size_t expected) {
  m->cap = 64;
  while (m->cap < expected * 2) m->cap *= 2;
  m->keys = calloc(m->cap, sizeof *m->keys);
  m->vals = calloc(m->cap, sizeof *m->vals);
  m->count = 0;
}

void piperPtrMapFree(PiperPtrMap *m) {
  free(m->keys);
  free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->count = 0;
}

bool piperPtrMapGet(const PiperPtrMap *m, const void *key, intptr_t *val) {
  size_t i = slotOf(m->keys, m->cap, key);
  if (!m->keys[i]) return false;
  if (val) *val = m->vals[i];
  return true;
}

void piperPtrMapPut(PiperPtrMap *m, const void *key, intptr_t val) {
  if ((m->count + 1) * 2 > m->cap) {
    PiperPtrMap bigger;
    piperPtrMapInit(&bigger, m->cap);
    for (size_t i = 0; i < m->cap; ++i)
      if (m->keys[i]) piperPtrMapPut(&bigger, m->keys[i], m->vals[i]);
    piperPtrMapFree(m);
    *m = bigger;
  }
  size_t i = slotOf(m->keys, m->cap, key);
  if (!m->keys[i]) m->count++;
  m->keys[i] = key;
  m->vals[i] = val;
}
