/* Fuzz target: the training data reader (prt_data_open), which maps a file and checks every
 * token against the model's vocabulary before the first step.
 *
 * Input: byte 0 picks the model's sequence length T (1..64), byte 1 its vocabulary V
 * (1..256); the rest is the data file, handed over through a memfd. The open must succeed
 * only when the file holds at least T + 2 tokens all below V, and otherwise fail with a
 * message, never read out of bounds or leak the mapping. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "prt_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  int64_t T = 1 + data[0] % 64, V = 1 + data[1];
  const uint8_t *file = data + 2;
  size_t n = size - 2;
  int fd = memfd_create("piper-data-fuzz", 0);
  if (fd < 0 || (n && write(fd, file, n) != (ssize_t)n)) abort();
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  bool valid = (int64_t)n >= T + 2;
  for (size_t i = 0; valid && V < 256 && i < n; ++i) valid = file[i] < V;
  prt_data d;
  prt_status st = {0};
  int rc = prt_data_open(&d, path, T, V, &st);
  if ((rc == 0) != valid) abort();         /* accepted exactly the valid files */
  if (rc != 0 && !st.msg[0]) abort();      /* a refusal says why */
  if (rc == 0) {
    if (d.n != (int64_t)n || (n && d.bytes[n - 1] != file[n - 1])) abort();
    prt_data_close(&d);
  }
  close(fd);
  return 0;
}
