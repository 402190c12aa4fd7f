/* Replays a fuzz target's corpus without libFuzzer: `NAME-replay DIR|FILE ...` runs every
 * file through LLVMFuzzerTestOneInput once, in name order, and prints how many it ran. Built
 * with the project's own compiler, so `make check` keeps every input that once crashed a
 * target (and every seed) passing without clang; under `make check-asan` the same replay runs
 * with AddressSanitizer and UBSan. A crash or abort is the failure, as in the fuzzer. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on the whole of `path`; false if it cannot be read. */
static bool replayFile(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t cap = 4096, n = 0, got;
  uint8_t *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n, f)) > 0)
    if ((n += got) == cap) buf = realloc(buf, cap *= 2);
  fclose(f);
  LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return true;
}

static int byName(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Replays every regular file in `dir` in name order; returns how many, -1 on error. */
static long replayDir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  size_t n = 0, cap = 64;
  char **names = malloc(cap * sizeof *names);
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) names = realloc(names, (cap *= 2) * sizeof *names);
    names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, byName);
  long ran = 0;
  for (size_t i = 0; i < n; ++i) {
    size_t len = strlen(dir) + strlen(names[i]) + 2;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s", dir, names[i]);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
      if (!replayFile(path)) {
        fprintf(stderr, "replay: error: cannot read '%s'\n", path);
        ran = -1;
      } else if (ran >= 0) {
        ++ran;
      }
    }
    free(path);
    free(names[i]);
  }
  free(names);
  return ran;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  long total = 0;
  for (int i = 1; i < argc; ++i) {
    struct stat st;
    long ran = stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode) ? replayDir(argv[i])
               : replayFile(argv[i])                          ? 1
                                                              : -1;
    if (ran < 0) {
      fprintf(stderr, "replay: error: cannot read '%s'\n", argv[i]);
      return 1;
    }
    total += ran;
  }
  printf("replayed %ld inputs\n", total);
  return 0;
}
