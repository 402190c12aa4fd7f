/* safetensors files (safetensors.c): the dtypes Piper reads and writes, the header parser
 * and checker, and the atomic writer. Needs no context: the fuzzer drives the parser alone. */
#ifndef PIPER_PRT_SAFETENSORS_H
#define PIPER_PRT_SAFETENSORS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fail.h"

/* A dtype a safetensors file may hold (a row of safetensors.c's table): its name in the
 * header, its --save-dtype name, its size and its converters from and to fp32 (store NULL:
 * read only). Little-endian bytes either way. */
typedef struct prt_st_dtype {
  const char *name;                                       /* "F32", "BF16", "F16" */
  const char *flag;                                       /* "fp32", "bf16", "fp16" */
  size_t size;                                            /* bytes per element */
  void (*load)(const void *src, float *dst, size_t n);    /* file elements -> fp32, exact */
  void (*store)(const float *src, void *dst, size_t n);   /* fp32 -> file elements (RNE) */
} prt_st_dtype;
/* The dtypes prt_st_dtype_find knows, for messages. */
#define PRT_ST_DTYPES_READ "F32, BF16 or F16"
/* The row of header dtype `name`, or NULL (a dtype Piper does not read). */
const prt_st_dtype *prt_st_dtype_find(const char *name);
/* The row --save-dtype `flag` names among the written ones ("fp32", "bf16"), or NULL. */
const prt_st_dtype *prt_st_dtype_for_flag(const char *flag);
/* The scalar conversions, shared by the checkpoint dtypes (safetensors.c) and the bf16 kernels
 * of the mixed-precision policy (kernels/cpu_bf16.c), inline for the kernels' loops. BF16 and
 * F16 to fp32 are exact (F16 subnormals, infinities and NaN payloads kept). fp32 to BF16 is
 * torch.Tensor.bfloat16() (c10::round_to_nearest_even): adding 0x7fff plus the lowest kept bit
 * carries into the kept half exactly when the dropped half is above one half ulp, or equal to
 * it with an odd kept half; the carry also walks a finite value past the largest bf16 into
 * inf's pattern (0x7f80), as rounding should. A NaN would carry into the sign or become inf,
 * so it is kept apart: every NaN becomes 0x7FC0, what c10's scalar conversion gives (its
 * vectorized one gives 0xFFFF). */
static inline float prt_bf16_to_f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16; /* bf16 is fp32's top half */
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint16_t prt_f32_to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
float prt_f16_to_f32(uint16_t h);

/* One tensor to write: fp32, shape dims[0..ndim). */
typedef struct prt_st_entry {
  const char *name;     /* borrowed, NUL-terminated */
  int64_t ndim;         /* 0..PRT_MAX_DIMS */
  const int64_t *dims;  /* borrowed (ndim) */
  const float *data;    /* borrowed (product of dims) */
} prt_st_entry;

/* Writes a safetensors file atomically (piper/base/atomic_file.h: a new temporary next to
 * it, fsync, rename). On failure nothing is left at `path` that was not there before and the
 * temporary is removed; a `path` that is a device node, FIFO or directory is refused.
 * __metadata__ holds "format": "pt" and, when step >= 0, "step": "<step>". */
int prt_safetensors_write(const char *path, const prt_st_entry *entries, int64_t n,
                          int64_t step, prt_status *st);
/* The same with every tensor stored as dtype dt (a row with a store converter). */
int prt_safetensors_write_as(const char *path, const prt_st_entry *entries, int64_t n,
                             int64_t step, const prt_st_dtype *dt, prt_status *st);
/* One tensor of a safetensors header, as read. */
typedef struct prt_st_in {
  char *name;                     /* owned, decoded UTF-8 */
  char dtype[16];                 /* e.g. "F32"; longer names are cut (and never match) */
  const prt_st_dtype *type;       /* dtype's row; NULL: a dtype Piper does not read */
  int64_t ndim;                   /* 0..8 */
  int64_t dims[8];                /* shape */
  uint64_t begin, end;            /* data_offsets, bytes into the data section */
} prt_st_in;

/* A parsed and checked safetensors header (prt_safetensors_parse). */
typedef struct prt_st_header {
  prt_st_in *ts;   /* owned (n), sorted by name (strcmp), names unique */
  int64_t n;       /* tensors */
  int64_t step;    /* __metadata__ "step"; -1 = absent */
} prt_st_header;

/* Parses the `size` bytes of a whole safetensors file image's first part: the 8-byte header
 * length, then the JSON header, given that the file holds `size` bytes in all (only the
 * first 8 + header length of them need be at `bytes`: pass avail = what is there). Checks,
 * as the safetensors format does: the header length fits the file (and 100 MB), the header is
 * a JSON object of tensors {dtype, shape, data_offsets} and optional __metadata__, names are
 * unique, and the tensors' data_offsets tile the data section exactly (sorted by offset, each
 * begins where the previous ended, the first at 0, the last ends at the file's end: no holes,
 * no overlaps, nothing after). Time O(n log n) and memory O(header bytes). On failure fills
 * st (code 1) naming `path` and leaves *h empty; on success the caller frees *h with
 * prt_st_header_free. Needs no context: the fuzz target (test/fuzz) drives it directly.
 * size = PRT_ST_SIZE_UNKNOWN checks everything but where the data section ends (the tensors
 * still tile it from 0): piper-run, which reads only the header, compares the end itself. */
#define PRT_ST_SIZE_UNKNOWN UINT64_MAX
int prt_safetensors_parse(const uint8_t *bytes, uint64_t avail, uint64_t size,
                          const char *path, prt_st_header *h, prt_status *st);
void prt_st_header_free(prt_st_header *h);
/* The tensor called `name` in h, or NULL (binary search). */
const prt_st_in *prt_st_header_find(const prt_st_header *h, const char *name);
/* Reads and checks (prt_safetensors_parse) the header of the safetensors file open at f's
 * start, `size` bytes in all; *data_start gets the file offset of the data section. On
 * failure fills st naming `path` and leaves *h empty. */
int prt_safetensors_read_header(FILE *f, uint64_t size, const char *path, prt_st_header *h,
                                uint64_t *data_start, prt_status *st);
/* Reads `count` elements of tensor e, from its element `first` on, into dst as fp32
 * (converted from e's dtype); 0, or -1 if the file could not be read there or e's dtype is
 * not one Piper reads. */
int prt_safetensors_read(FILE *f, uint64_t data_start, const prt_st_in *e, uint64_t first,
                         float *dst, size_t count);

#endif
