/* Fuzz target: the training data reader (prt_data_open), which maps a file and checks every
 * token against the model's vocabulary before the first step.
 *
 * Input: byte 0 picks the model's sequence length T (1..64, its low 6 bits) and the format
 * (its top 2 bits: 1 = u16, 2 = u32, else bytes); byte 1 the vocabulary V (1..256 for bytes,
 * 1 + 257 * byte for the wide formats, so ids on both sides of V occur); the rest is the data
 * file, handed over through a memfd. The open must succeed only when the file is a whole
 * number of tokens, at least T + 2 of them, all below V, and otherwise fail with a message,
 * never read out of bounds or leak the mapping. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prt_internal.h"

/* Token i of the file as the format reads it: little-endian, width w. */
static uint32_t token(const uint8_t *file, size_t i, int w) {
  uint32_t v = 0;
  for (int k = 0; k < w; ++k) v |= (uint32_t)file[i * (size_t)w + (size_t)k] << (8 * k);
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int64_t T = 1 + (data[0] & 63) % 64;
  int sel = data[0] >> 6;
  prt_data_format fmt = sel == 1 ? PRT_DATA_U16 : sel == 2 ? PRT_DATA_U32 : PRT_DATA_BYTES;
  int w = (int)fmt;
  int64_t V = fmt == PRT_DATA_BYTES ? 1 + data[1] : 1 + 257 * (int64_t)data[1];
  const uint8_t *file = data + 2;
  size_t n = size - 2;
  int fd = memfd_create("piper-data-fuzz", 0);
  if (fd < 0 || (n && write(fd, file, n) != (ssize_t)n)) abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  bool valid = n % (size_t)w == 0 && (int64_t)(n / (size_t)w) >= T + 2;
  for (size_t i = 0; valid && (fmt != PRT_DATA_BYTES || V < 256) && i < n / (size_t)w; ++i)
    valid = token(file, i, w) < (uint64_t)V;
  prt_data d;
  prt_status st = {0};
  int rc = prt_data_open(&d, path, fmt, T, V, &st);
  if ((rc == 0) != valid) abort();         /* accepted exactly the valid files */
  if (rc != 0 && !st.msg[0]) abort();      /* a refusal says why */
  if (rc == 0) {
    if (d.n != (int64_t)(n / (size_t)w) || d.format != fmt ||
        memcmp(d.bytes, file, n) != 0) /* the mapping is the file */
      abort();
    prt_data_close(&d);
  }
  close(fd);
  return 0;
}
