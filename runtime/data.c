/* The data loader: a file's tokens, in one of three formats (--data-format): its bytes (V <=
 * 256, the default), or little-endian uint16 or uint32 ids (nanoGPT's pre-tokenized
 * train.bin is u16). Deterministic and stateless: at step s, row b of an input whose first
 * global row is first_sample reads global sample g = first_sample + b at token offset
 *
 *   o = ((s * B_global + g) * T) mod (N - T - 1)
 *   tokens[b]  = data[o     .. o + T)
 *   targets[b] = data[o + 1 .. o + T + 1)
 *
 * B_global is the global batch (prt_declare_batch; one device: the "tokens" B). A
 * context-parallel member (prt_declare_cp) reads, of those T tokens, the columns its chunks
 * hold (prt_cp_position). Every input
 * is filled on its own, so microbatches, data-parallel ranks and pipeline stages holding
 * only targets all see slices of the same global batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prt_backend.h"
#include "prt_cp_layout.h"
#include "prt_ctx.h"
#include "prt_data.h"

int prt_data_format_parse(const char *name, prt_data_format *out, prt_status *st) {
  static const struct {
    const char *name;
    prt_data_format format;
  } formats[] = {{"bytes", PRT_DATA_BYTES}, {"u16", PRT_DATA_U16}, {"u32", PRT_DATA_U32}};
  for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
    if (strcmp(name, formats[i].name) == 0) {
      *out = formats[i].format;
      return 0;
    }
  return prt_fail(st, 2, "--data-format expects bytes, u16 or u32, got '%s': command line; "
                  "u16 is nanoGPT's train.bin (little-endian uint16 token ids)", name);
}

static const char *prt_data_format_name(prt_data_format f) {
  return f == PRT_DATA_U16 ? "u16" : f == PRT_DATA_U32 ? "u32" : "bytes";
}

/* Token i of d (i < d->n): the format's little-endian id, independent of the host's order. */
static inline uint32_t prt_data_token(const prt_data *d, int64_t i) {
  const uint8_t *p = d->bytes + i * (int64_t)d->format;
  switch (d->format) {
  case PRT_DATA_U16: return (uint32_t)p[0] | (uint32_t)p[1] << 8;
  case PRT_DATA_U32:
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  case PRT_DATA_BYTES: break;
  }
  return p[0];
}

int prt_data_open(prt_data *d, const char *path, prt_data_format format, int64_t T, int64_t V,
                  prt_status *st) {
  memset(d, 0, sizeof *d);
  d->format = format;
  const char *shown = path ? path : "<built-in corpus>";
  if (!path) {
    if (format != PRT_DATA_BYTES)
      return prt_fail(st, 2, "--data-format %s needs --data: the built-in corpus is bytes; "
                      "pass a token file to --data", prt_data_format_name(format));
    d->bytes = (const uint8_t *)prt_default_corpus;
    d->n = prt_default_corpus_len;
    d->name = "<built-in corpus>";
  } else {
    d->name = path;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
      return prt_fail(st, 1, "cannot open data file: %s: %s; pass an existing readable "
                      "file to --data", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
      close(fd);
      return prt_fail(st, 1, "data file is not a regular file: %s; pass a file of tokens "
                      "to --data", path);
    }
    if (sb.st_size % (off_t)format) {
      close(fd);
      return prt_fail(st, 1, "data file %s has %lld bytes, not a whole number of %s tokens "
                      "(%d bytes each): is --data-format right for it?", path,
                      (long long)sb.st_size, prt_data_format_name(format), (int)format);
    }
    d->n = (int64_t)sb.st_size / format;
    if (d->n >= T + 2) {
      void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        int e = errno;
        close(fd);
        return prt_fail(st, 1, "cannot read data file: %s: %s; check the file", path,
                        strerror(e));
      }
      d->bytes = m;
      d->mapped = 1;
      d->mapped_bytes = (size_t)sb.st_size;
    }
    close(fd);
  }
  if (d->n < T + 2) {
    int64_t n = d->n;
    prt_data_close(d);
    return prt_fail(st, 1, "data too short: %s has %lld tokens, the model's T = %lld needs "
                    "at least T + 2 = %lld; use a longer --data file", shown, (long long)n,
                    (long long)T, (long long)(T + 2));
  }
  if (format != PRT_DATA_BYTES && V <= 0) {
    prt_data_close(d);
    return prt_fail(st, 1, "--data-format %s: the plan declares no token embedding "
                    "(wte.weight or model.embed_tokens.weight), so token ids cannot be "
                    "checked against its vocabulary; use --data-format bytes",
                    prt_data_format_name(format));
  }
  /* A token past the vocabulary would index past the embedding table in the kernel, so every
   * token is checked once here, before the first step (bytes are below 256 by their width). */
  if (V > 0 && (format != PRT_DATA_BYTES || V < 256))
    for (int64_t i = 0; i < d->n; i++) {
      uint32_t v = prt_data_token(d, i);
      if (v < (uint64_t)V) continue;
      prt_data_close(d);
      if (format == PRT_DATA_BYTES)
        return prt_fail(st, 1, "token %lu at byte %lld of %s is outside the model's "
                        "vocabulary (V = %lld): the data's bytes are its tokens; compile the "
                        "model with --vocab 256 (piper-gen) or pass --data whose bytes are all "
                        "below %lld", (unsigned long)v, (long long)i,
                        path ? path : "the built-in corpus", (long long)V, (long long)V);
      return prt_fail(st, 1, "token %lu at position %lld (byte %lld) of %s is outside the "
                      "model's vocabulary (V = %lld); compile the model with a --vocab above "
                      "the data's largest id (piper-gen), or check --data-format (%s) is the "
                      "file's", (unsigned long)v, (long long)i, (long long)(i * format), shown,
                      (long long)V, prt_data_format_name(format));
    }
  return 0;
}

void prt_data_close(prt_data *d) {
  if (d->mapped) munmap((void *)d->bytes, d->mapped_bytes);
  memset(d, 0, sizeof *d);
}

/* Fills input t (tokens, or targets when `shift` is 1) for step s. On a device that is not
 * host visible the rows go to the tensor's page-locked staging (prt_ctx_allocate) and are
 * copied from there without the host waiting: the copy is ordered before the step's kernels
 * on the device, and the staging is next written only after the host read the step's loss,
 * which waited for the device (every caller reads a loss between two fills: the step loop,
 * an elastic step's passes, the evaluation). */
static void prt_fill_input(const prt_data *d, prt_device *dev, const prt_tensor_info *t,
                           int64_t B_global, int64_t step, int shift) {
  /* a context-parallel member (prt_declare_cp) holds Tl of the T columns: chunks r and
   * 2G-1-r of c = Tl/2 tokens each */
  int64_t G = t->cp_size > 1 ? t->cp_size : 1, B = t->dims[0], Tl = t->dims[1], T = Tl * G;
  size_t bytes = (size_t)(B * Tl) * sizeof(int32_t);
  int32_t *rows = t->staging ? t->staging
                             : prt_host_view_begin(dev, t->data, bytes, PRT_VIEW_WRITE, t->name);
  /* o = (s * (B_global * T) + g * T) mod span, reduced as we go so nothing overflows. */
  typedef unsigned __int128 u128;
  u128 span = (u128)(uint64_t)(d->n - T - 1);
  u128 step_part = ((u128)(uint64_t)step % span) * (((u128)(uint64_t)B_global * T) % span);
  for (int64_t b = 0; b < B; b++) {
    u128 g = (u128)(uint64_t)(t->first_sample + b);
    int64_t o = (int64_t)((step_part % span + (g * (uint64_t)T) % span) % span) + shift;
    for (int64_t k = 0; k < Tl; k++) {
      int64_t at = G > 1 ? prt_cp_position(t->cp_rank, G, Tl / 2, k) : k;
      rows[b * Tl + k] = (int32_t)prt_data_token(d, o + at);
    }
  }
  if (!t->staging) {
    prt_host_view_end(dev, t->data, rows, bytes, PRT_VIEW_WRITE, t->name);
    return;
  }
  prt_status st = {0};
  if (prt_device_h2d(dev, t->data, rows, bytes, NULL, &st))
    prt_fatal("%s (uploading %s)", st.msg, t->name);
}

void prt_data_fill(const prt_data *d, prt_ctx *ctx, int64_t step) {
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind != PRT_INPUT) continue;
    prt_fill_input(d, ctx->backend->device, t, ctx->global_batch, step,
                   strcmp(t->name, "targets") == 0);
  }
}
