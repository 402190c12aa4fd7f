/* Output files: the checks every output path passes before the first step. (Atomic writes
 * go through the base library's temporary files, piper/base/atomic_file.h.)
 *
 * Why before the first step: a run that trains for an hour and then finds its checkpoint
 * folder missing, or that truncates its own data file by opening it as --metrics (the data is
 * mmapped: the next read is a SIGBUS), has lost the run. Every such mistake is visible at
 * start-up from the file system.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "piper/base/atomic_file.h"
#include "prt_files.h"

/* An owned copy of the folder part of `path` ("." for a bare name). */
static char *prt_dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) prt_fatal("out of memory copying a file name");
  char *d = strdup(dirname(copy));
  free(copy);
  if (!d) prt_fatal("out of memory copying a file name");
  return d;
}

/* An owned canonical name for `path`, which may not exist yet: realpath of its folder plus
 * its last component. NULL if the folder cannot be resolved. */
static char *prt_resolved(const char *path) {
  char *dir = prt_dir_of(path);
  char *rdir = realpath(dir, NULL);
  free(dir);
  if (!rdir) return NULL;
  char *copy = strdup(path);
  if (!copy) prt_fatal("out of memory copying a file name");
  const char *base = basename(copy);
  size_t n = strlen(rdir) + strlen(base) + 2;
  char *out = prt_xmalloc(n, "a file name");
  snprintf(out, n, "%s/%s", rdir, base);
  free(rdir);
  free(copy);
  return out;
}

int prt_files_check(const prt_file_use *files, int64_t n, prt_status *st) {
  struct stat *sb = prt_xmalloc((size_t)(n ? n : 1) * sizeof *sb, "file checks");
  int *exists = prt_xmalloc((size_t)(n ? n : 1) * sizeof *exists, "file checks");
  char **canon = prt_xmalloc((size_t)(n ? n : 1) * sizeof *canon, "file checks");
  for (int64_t i = 0; i < n; i++) canon[i] = NULL;
  for (int64_t i = 0; i < n && !st->code; i++) {
    const prt_file_use *u = &files[i];
    exists[i] = stat(u->path, &sb[i]) == 0;
    int e = errno;
    if (!exists[i] && e != ENOENT) { /* a name too long (shown cut) or a bad folder */
      size_t len = strlen(u->path);
      prt_fail(st, 1, "cannot use %s %.200s%s (%zu bytes): %s; pass a file name the system "
               "accepts", u->flag, u->path, len > 200 ? "..." : "", len, strerror(e));
      break;
    }
    if (!u->output) continue; /* inputs: their own readers report them */
    if (exists[i] && !S_ISREG(sb[i].st_mode)) {
      prt_fail(st, 1, "%s %s is %s, not a regular file: writing it would %s; pass a path "
               "for a new or regular file", u->flag, u->path, pb_file_kind(sb[i].st_mode),
               S_ISDIR(sb[i].st_mode) ? "fail after training" : "replace or block on it");
      break;
    }
    char *dir = prt_dir_of(u->path);
    struct stat db;
    if (stat(dir, &db) != 0) {
      prt_fail(st, 1, "%s %s: its folder %s: %s; create the folder first (the run checks "
               "this before training, not after)", u->flag, u->path, dir, strerror(errno));
    } else if (!S_ISDIR(db.st_mode)) {
      prt_fail(st, 1, "%s %s: %s is not a folder; pass a path inside a folder", u->flag,
               u->path, dir);
    } else if (access(dir, W_OK | X_OK) != 0) {
      prt_fail(st, 1, "%s %s: its folder %s is not writable (%s); pass a path in a "
               "writable folder", u->flag, u->path, dir, strerror(errno));
    }
    free(dir);
  }
  for (int64_t i = 0; i < n && !st->code; i++) canon[i] = prt_resolved(files[i].path);
  /* Two uses of one file, at least one an output: by inode where both exist, else by name. */
  for (int64_t i = 0; i < n && !st->code; i++)
    for (int64_t j = 0; j < i && !st->code; j++) {
      if (!files[i].output && !files[j].output) continue;
      if (files[i].in_place_ok && files[j].in_place_ok) continue;
      int same = exists[i] && exists[j] ? sb[i].st_dev == sb[j].st_dev &&
                                              sb[i].st_ino == sb[j].st_ino
                                        : canon[i] && canon[j] && !strcmp(canon[i], canon[j]);
      if (same)
        prt_fail(st, 1, "%s %s and %s %s are the same file: the %s would %s; pass different "
                 "files", files[j].flag, files[j].path, files[i].flag, files[i].path,
                 files[j].output && files[i].output ? "outputs" : "output",
                 files[j].output && files[i].output ? "overwrite each other"
                                                    : "overwrite the input it reads");
    }
  for (int64_t i = 0; i < n; i++) free(canon[i]);
  free(canon);
  free(exists);
  free(sb);
  return st->code;
}
