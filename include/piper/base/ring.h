/* The checkpoint ring's file names, the one definition the runtime (which writes and prunes
 * the ring: runtime/checkpoint_ring.c) and piper-run (which restarts from it) share:
 * <dir>/step-<K>.safetensors, K the completed steps in at least six digits. */
#ifndef PIPER_BASE_RING_H
#define PIPER_BASE_RING_H

#include <stddef.h>
#include <stdint.h>

/* "<dir>/step-%06lld.safetensors", owned by the caller; NULL when out of memory. */
char *pb_ring_path(const char *dir, int64_t step);
/* The step K of a ring file name "step-<digits>.safetensors" (no folder), or -1 for any
 * other name (or one whose digits overflow int64). */
int64_t pb_ring_step_of(const char *name);
/* The steps of the ring files in `dir`, newest first, into *steps (owned by the caller; NULL
 * when there are none) and their count into *n. 0, or -1 when `dir` cannot be read or memory
 * runs out (then *steps is NULL and *n 0). */
int pb_ring_steps(const char *dir, int64_t **steps, size_t *n);

#endif
