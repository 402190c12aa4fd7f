/* The data loader: the bytes of a file are the tokens (V = 256). Deterministic and
 * stateless: at step s, row b of an input whose first global row is first_sample reads
 * global sample g = first_sample + b at offset
 *
 *   o = ((s * B_global + g) * T) mod (N - T - 1)
 *   tokens[b]  = data[o     .. o + T)
 *   targets[b] = data[o + 1 .. o + T + 1)
 *
 * B_global is the global batch (prt_declare_batch; one device: the "tokens" B). Every input
 * is filled on its own, so microbatches, data-parallel ranks and pipeline stages holding
 * only targets all see slices of the same global batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "prt_internal.h"

int prt_data_open(prt_data *d, const char *path, int64_t T, int64_t V, prt_status *st) {
  memset(d, 0, sizeof *d);
  if (!path) {
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
      return prt_fail(st, 1, "data file is not a regular file: %s; pass a file of bytes "
                      "to --data", path);
    }
    d->n = (int64_t)sb.st_size;
    if (d->n >= T + 2) {
      void *m = mmap(NULL, (size_t)d->n, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        int e = errno;
        close(fd);
        return prt_fail(st, 1, "cannot read data file: %s: %s; check the file", path,
                        strerror(e));
      }
      d->bytes = m;
      d->mapped = 1;
    }
    close(fd);
  }
  if (d->n < T + 2) {
    int64_t n = d->n;
    prt_data_close(d);
    return prt_fail(st, 1, "data too short: %s has %lld bytes, the model's T = %lld needs "
                    "at least T + 2 = %lld; use a longer --data file",
                    path ? path : "<built-in corpus>", (long long)n, (long long)T,
                    (long long)(T + 2));
  }
  /* Tokens are bytes (< 256); a model with a smaller vocabulary would index past wte in the
   * embedding kernel, so every token is checked once here, before the first step. */
  for (int64_t i = 0; V > 0 && V < 256 && i < d->n; i++)
    if (d->bytes[i] >= V) {
      int64_t v = d->bytes[i];
      prt_data_close(d);
      return prt_fail(st, 1, "token %lld at byte %lld of %s is outside the model's vocabulary "
                      "(V = %lld): the data's bytes are its tokens; compile the model with "
                      "--vocab 256 (piper-gen) or pass --data whose bytes are all below %lld",
                      (long long)v, (long long)i, path ? path : "the built-in corpus",
                      (long long)V, (long long)V);
    }
  return 0;
}

void prt_data_close(prt_data *d) {
  if (d->mapped) munmap((void *)d->bytes, (size_t)d->n);
  memset(d, 0, sizeof *d);
}

/* Fills input t (tokens, or targets when `shift` is 1) for step s. */
static void prt_fill_input(const prt_data *d, prt_device *dev, const prt_tensor_info *t,
                           int64_t B_global, int64_t step, int shift) {
  int64_t B = t->dims[0], T = t->dims[1];
  size_t bytes = (size_t)(B * T) * sizeof(int32_t);
  int32_t *rows = prt_host_view_begin(dev, t->data, bytes, PRT_VIEW_WRITE, t->name);
  /* o = (s * (B_global * T) + g * T) mod span, reduced as we go so nothing overflows. */
  typedef unsigned __int128 u128;
  u128 span = (u128)(uint64_t)(d->n - T - 1);
  u128 step_part = ((u128)(uint64_t)step % span) * (((u128)(uint64_t)B_global * T) % span);
  for (int64_t b = 0; b < B; b++) {
    u128 g = (u128)(uint64_t)(t->first_sample + b);
    int64_t o = (int64_t)((step_part % span + (g * (uint64_t)T) % span) % span) + shift;
    for (int64_t k = 0; k < T; k++) rows[b * T + k] = d->bytes[o + k];
  }
  prt_host_view_end(dev, t->data, rows, bytes, PRT_VIEW_WRITE, t->name);
}

void prt_data_fill(const prt_data *d, prt_ctx *ctx, int64_t step) {
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind != PRT_INPUT) continue;
    prt_fill_input(d, ctx->device, t, ctx->global_batch, step, strcmp(t->name, "targets") == 0);
  }
}
