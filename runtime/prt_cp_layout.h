/* Context parallelism's row layout (causal load balancing): member r of a group of G devices
 * holds the sequence's chunks r and 2G-1-r, of c rows each, in that order, as its local
 * sequence of Tl = 2c rows. A pure index map, shared by the ring attention
 * (cp_attention.c), the kernels that need a row's position (RoPE, the mask: kernels/cpu*.c)
 * and the data loader (data.c), none of which calls another for it. */
#ifndef PRT_CP_LAYOUT_H
#define PRT_CP_LAYOUT_H

#include <stdint.h>

/* The sequence position of local row t (0 <= t < 2c) of member r of G. */
static inline int64_t prt_cp_position(int64_t r, int64_t G, int64_t c, int64_t t) {
  return t < c ? r * c + t : (2 * G - 1 - r) * c + (t - c);
}

#endif
