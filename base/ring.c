/* The checkpoint ring's file names (include/piper/base/ring.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/base/ring.h"

char *pb_ring_path(const char *dir, int64_t step) {
  size_t n = strlen(dir) + 48; /* "/step-" + 19 digits + ".safetensors" + NUL */
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/step-%06lld.safetensors", dir, (long long)step);
  return p;
}

int64_t pb_ring_step_of(const char *name) {
  static const char prefix[] = "step-", suffix[] = ".safetensors";
  size_t n = strlen(name), np = sizeof prefix - 1, ns = sizeof suffix - 1;
  if (n <= np + ns || strncmp(name, prefix, np) || strcmp(name + n - ns, suffix)) return -1;
  int64_t v = 0;
  for (size_t i = np; i < n - ns; i++) {
    if (name[i] < '0' || name[i] > '9') return -1;
    int d = name[i] - '0';
    if (v > (INT64_MAX - d) / 10) return -1; /* v * 10 + d would overflow */
    v = v * 10 + d;
  }
  return v;
}

static int newestFirst(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

int pb_ring_steps(const char *dir, int64_t **steps, size_t *n) {
  *steps = NULL;
  *n = 0;
  DIR *d = opendir(dir);
  if (!d) return -1;
  size_t cap = 0;
  int rc = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    int64_t s = pb_ring_step_of(e->d_name);
    if (s < 0) continue;
    if (*n == cap) {
      cap = cap ? 2 * cap : 16;
      int64_t *grown = realloc(*steps, cap * sizeof *grown);
      if (!grown) {
        rc = -1;
        break;
      }
      *steps = grown;
    }
    (*steps)[(*n)++] = s;
  }
  closedir(d);
  if (rc) {
    free(*steps);
    *steps = NULL;
    *n = 0;
    return rc;
  }
  if (*n) qsort(*steps, *n, sizeof **steps, newestFirst);
  return 0;
}
