/* Training data (data.c): a token file (or the built-in corpus) and the batches of each step,
 * a function of (step, global sample index). */
#ifndef PIPER_PRT_DATA_H
#define PIPER_PRT_DATA_H

#include "prt_ctx.h"

/* How a data file holds its tokens (--data-format). The values are the bytes per token. */
typedef enum {
  PRT_DATA_BYTES = 1, /* "bytes": each byte is a token (V <= 256); the default */
  PRT_DATA_U16 = 2,   /* "u16": little-endian uint16 ids, nanoGPT's train.bin */
  PRT_DATA_U32 = 4,   /* "u32": little-endian uint32 ids, for vocabularies past 65536 */
} prt_data_format;

/* "bytes" | "u16" | "u32" -> *out; 2 with a message naming --data-format otherwise. */
int prt_data_format_parse(const char *name, prt_data_format *out, prt_status *st);

/* Training tokens: a file's (or the built-in corpus's) tokens in one of the formats. */
typedef struct prt_data {
  const uint8_t *bytes;   /* the file's mmap (owned) or prt_default_corpus (borrowed) */
  int64_t n;              /* N, in tokens (the file's size over the token width) */
  prt_data_format format; /* the token width and so how bytes is read */
  int mapped;             /* 1 if bytes is an mmap to unmap */
  size_t mapped_bytes;    /* the mapping's length, for munmap */
  const char *name;       /* borrowed: the file name, or "<built-in corpus>" */
} prt_data;

/* Opens `path` (NULL: the built-in corpus, bytes only) as `format` and checks its size is a
 * whole number of tokens, it holds at least T + 2 of them and, when V > 0, that every token is
 * below V (naming the first one that is not and its position). A wide format needs V > 0: an
 * id the model cannot embed would index past its table. */
int prt_data_open(prt_data *d, const char *path, prt_data_format format, int64_t T, int64_t V,
                  prt_status *st);
void prt_data_close(prt_data *d);
/* Fills every "tokens" and "targets" input for step s (see data.c for the offsets). */
void prt_data_fill(const prt_data *d, prt_ctx *ctx, int64_t step);

extern const char prt_default_corpus[];  /* public-domain English prose, NUL-terminated */
extern const int64_t prt_default_corpus_len; /* strlen(prt_default_corpus) */

#endif
