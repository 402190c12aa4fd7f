/* Output files: the checks every output path passes before the first step, and the unique
 * temporary files atomic writes go through.
 *
 * Why before the first step: a run that trains for an hour and then finds its checkpoint
 * folder missing, or that truncates its own data file by opening it as --metrics (the data is
 * mmapped: the next read is a SIGBUS), has lost the run. Every such mistake is visible at
 * start-up from the file system.
 *
 * Why unique temporaries: "PATH.tmp" opened with fopen follows a symlink planted there and
 * overwrites its target, two writers of one path clobber each other, and a save killed midway
 * leaves the partial file. An O_TMPFILE file has no name until it is complete; where the file
 * system lacks O_TMPFILE, PATH.XXXXXX created with O_CREAT|O_EXCL|O_NOFOLLOW is a new file of
 * ours or nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#endif
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "prt_internal.h"

/* "a regular file", "a directory", ... for messages. */
static const char *prt_file_kind(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

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
               "for a new or regular file", u->flag, u->path, prt_file_kind(sb[i].st_mode),
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

/* Fills `name` (cap bytes, at least strlen(path) + 8) with a fresh "path.XXXXXX". */
static void prt_temp_name(char *name, size_t cap, const char *path, uint64_t *x) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char suffix[7];
  for (int k = 0; k < 6; k++) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull; /* an LCG: names, not secrets */
    suffix[k] = letters[(*x >> 33) % (sizeof letters - 1)];
  }
  suffix[6] = 0;
  snprintf(name, cap, "%s.%s", path, suffix);
}

static uint64_t prt_temp_seed(const void *p) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
}

/* "cannot write X: it is a FIFO, ..." */
static int prt_refuse_special(const char *path, mode_t m, prt_status *st) {
  return prt_fail(st, 1, "cannot write %s: it is %s, and a save would replace it with a "
                  "regular file; pass a path for a new or regular file", path, prt_file_kind(m));
}

int prt_temp_create(const char *path, prt_temp *t, prt_status *st) {
  *t = (prt_temp){.fd = -1};
  struct stat sb;
  if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
    return prt_refuse_special(path, sb.st_mode, st);
  size_t n = strlen(path) + 8;
  t->name = prt_xmalloc(n, "a file name");
  /* First choice: an unnamed file in the destination's folder (O_TMPFILE). Until it is
   * linked at commit it has no name, so even SIGKILL mid-save leaves nothing behind. */
  char *dir = prt_dir_of(path);
  t->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  free(dir);
  if (t->fd >= 0) {
    t->anonymous = 1;
    t->name[0] = 0;
    return 0;
  }
  /* Else (a file system without O_TMPFILE): a new name of our own, never a planted link. */
  uint64_t x = prt_temp_seed(t->name);
  for (int attempt = 0; attempt < 100; attempt++) {
    prt_temp_name(t->name, n, path, &x);
    t->fd = open(t->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (t->fd >= 0) return 0;
    if (errno != EEXIST) {
      prt_fail(st, 1, "cannot create %s: %s (writing %s); check the directory exists, is "
               "writable and has space", t->name, strerror(errno), path);
      prt_temp_discard(t);
      return st->code;
    }
  }
  prt_fail(st, 1, "cannot create a temporary file next to %s: 100 names taken; remove "
           "stale %s.* files", path, path);
  prt_temp_discard(t);
  return st->code;
}

void prt_temp_discard(prt_temp *t) {
  if (t->name && t->name[0] && !t->anonymous) unlink(t->name);
  if (t->fd >= 0) close(t->fd);
  free(t->name);
  *t = (prt_temp){.fd = -1};
}

int prt_temp_commit(prt_temp *t, const char *path, prt_status *st) {
  struct stat sb;
  /* Checked again right before the rename: something may have appeared at path meanwhile,
   * and rename(2) would replace a device node or FIFO with our file. */
  if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode)) {
    prt_refuse_special(path, sb.st_mode, st);
    prt_temp_discard(t);
    return st->code;
  }
  if (t->anonymous) { /* give the unnamed file a fresh name, then rename that */
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", t->fd);
    uint64_t x = prt_temp_seed(t->name);
    size_t n = strlen(path) + 8;
    int linked = 0, e = 0;
    for (int attempt = 0; attempt < 100 && !linked; attempt++) {
      prt_temp_name(t->name, n, path, &x);
      linked = linkat(AT_FDCWD, proc, AT_FDCWD, t->name, AT_SYMLINK_FOLLOW) == 0 ||
               linkat(t->fd, "", AT_FDCWD, t->name, AT_EMPTY_PATH) == 0;
      e = errno;
      if (!linked && e != EEXIST) break;
    }
    if (!linked) {
      t->name[0] = 0;
      prt_fail(st, 1, "cannot link the finished file into %s: %s; check the directory is "
               "writable", path, strerror(e));
      prt_temp_discard(t);
      return st->code;
    }
    t->anonymous = 0; /* named now: discard unlinks it */
  }
  if (rename(t->name, path) != 0) {
    prt_fail(st, 1, "cannot rename %s to %s: %s; check the directory is writable", t->name,
             path, strerror(errno));
    prt_temp_discard(t);
    return st->code;
  }
  t->name[0] = 0; /* renamed: nothing to unlink */
  prt_temp_discard(t);
  return 0;
}
