/* Atomic file output (include/piper/base/atomic_file.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* O_TMPFILE, AT_EMPTY_PATH */
#endif
#include "piper/base/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PB_TEMP_ATTEMPTS 100 /* fresh names tried before giving up */

const char *pb_file_kind(mode_t m) {
  if (S_ISREG(m)) return "a regular file";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

int pb_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t k = write(fd, p, n < ((size_t)1 << 30) ? n : (size_t)1 << 30);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    if (k == 0) {
      errno = EIO; /* write(2) made no progress and said nothing */
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* An owned copy of the folder part of `path` ("." for a bare name); NULL without memory. */
static char *pb_dir_of(const char *path) {
  char *copy = strdup(path);
  if (!copy) return NULL;
  char *d = strdup(dirname(copy));
  free(copy);
  return d;
}

/* Fills `name` (cap bytes, at least strlen(path) + 8) with a fresh "path.XXXXXX". */
static void pb_temp_name(char *name, size_t cap, const char *path, uint64_t *x) {
  static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  char suffix[7];
  for (int k = 0; k < 6; k++) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull; /* an LCG: names, not secrets */
    suffix[k] = letters[(*x >> 33) % (sizeof letters - 1)];
  }
  suffix[6] = 0;
  snprintf(name, cap, "%s.%s", path, suffix);
}

static uint64_t pb_temp_seed(const void *p) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)p;
}

void pb_atomic_discard(pb_atomic_file *f) {
  if (f->tmp && f->tmp[0] && !f->anonymous && !f->in_place) unlink(f->tmp);
  if (f->fd >= 0) close(f->fd);
  free(f->path);
  free(f->tmp);
  *f = (pb_atomic_file){.fd = -1};
}

/* Writes the message to err, then discards f (the message may name f's paths); -1. */
static int pb_atomic_fail(pb_atomic_file *f, char *err, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int pb_atomic_fail(pb_atomic_file *f, char *err, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (cap) vsnprintf(err, cap, fmt, ap);
  va_end(ap);
  pb_atomic_discard(f);
  return -1;
}

/* A new PATH.XXXXXX of our own (never a planted link); 0 or -1 with err. */
static int pb_atomic_named(pb_atomic_file *f, size_t n, char *err, size_t cap) {
  uint64_t x = pb_temp_seed(f);
  for (int attempt = 0; attempt < PB_TEMP_ATTEMPTS; attempt++) {
    pb_temp_name(f->tmp, n, f->path, &x);
    f->fd = open(f->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (f->fd >= 0) return 0;
    if (errno != EEXIST) {
      int e = errno;
      f->tmp[0] = 0; /* nothing of ours there */
      return pb_atomic_fail(f, err, cap, "cannot create a temporary file next to '%s': %s; "
                            "check the folder exists, is writable and has space", f->path,
                            strerror(e));
    }
  }
  f->tmp[0] = 0;
  return pb_atomic_fail(f, err, cap, "cannot create a temporary file next to '%s': %d names "
                        "taken; remove stale '%s.*' files", f->path, PB_TEMP_ATTEMPTS, f->path);
}

int pb_atomic_open(pb_atomic_file *f, const char *path, int flags, char *err, size_t cap) {
  *f = (pb_atomic_file){.fd = -1};
  struct stat sb;
  int exists = stat(path, &sb) == 0;
  if (exists && S_ISDIR(sb.st_mode))
    return pb_atomic_fail(f, err, cap, "cannot write '%s': it is a directory; pass the name of "
                          "a file", path);
  size_t n = strlen(path) + 8;
  f->path = strdup(path);
  f->tmp = malloc(n);
  if (!f->path || !f->tmp) return pb_atomic_fail(f, err, cap, "out of memory naming '%s'", path);
  f->tmp[0] = 0;
  if (exists && !S_ISREG(sb.st_mode)) {
    if (!(flags & PB_ATOMIC_IN_PLACE))
      return pb_atomic_fail(f, err, cap, "cannot write '%s': it is %s, which a save would "
                            "replace with a regular file; pass a path for a new or regular "
                            "file", path, pb_file_kind(sb.st_mode));
    f->in_place = 1;
    snprintf(f->tmp, n, "%s", path);
    if (flags & PB_ATOMIC_NAMED) return 0;
    f->fd = open(path, O_WRONLY | O_CLOEXEC);
    if (f->fd < 0)
      return pb_atomic_fail(f, err, cap, "cannot write '%s': %s", path, strerror(errno));
    return 0;
  }
  if (!(flags & PB_ATOMIC_NAMED)) {
    char *dir = pb_dir_of(path);
    f->fd = dir ? open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666) : -1;
    free(dir);
    if (f->fd >= 0) {
      f->anonymous = 1;
      return 0;
    }
  }
  return pb_atomic_named(f, n, err, cap);
}

/* Gives the unnamed file a fresh name next to the destination; 0 or -1 with err. */
static int pb_atomic_link(pb_atomic_file *f, char *err, size_t cap) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", f->fd);
  uint64_t x = pb_temp_seed(f);
  size_t n = strlen(f->path) + 8;
  int e = 0;
  for (int attempt = 0; attempt < PB_TEMP_ATTEMPTS; attempt++) {
    pb_temp_name(f->tmp, n, f->path, &x);
    if (linkat(AT_FDCWD, proc, AT_FDCWD, f->tmp, AT_SYMLINK_FOLLOW) == 0 ||
        linkat(f->fd, "", AT_FDCWD, f->tmp, AT_EMPTY_PATH) == 0) {
      f->anonymous = 0; /* named now: discard unlinks it */
      return 0;
    }
    e = errno;
    if (e != EEXIST) break;
  }
  f->tmp[0] = 0; /* the name is someone else's, or nothing */
  return pb_atomic_fail(f, err, cap, "cannot link the finished file into '%s': %s; check the "
                        "folder is writable", f->path, strerror(e));
}

/* fsync of the folder holding `path`, so the rename itself is durable. Best effort. */
static void pb_sync_dir(const char *path) {
  char *dir = pb_dir_of(path);
  int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(dir);
}

int pb_atomic_commit(pb_atomic_file *f, char *err, size_t cap) {
  if (!f->path) {
    if (cap) snprintf(err, cap, "nothing to commit: the file was already committed or "
                                "discarded");
    return -1;
  }
  if (f->in_place) {
    pb_atomic_discard(f); /* closes; in place, nothing to remove */
    return 0;
  }
  /* a writer that took the name may have replaced the file: sync what the name holds now */
  int fd = f->fd >= 0 ? f->fd : open(f->tmp, O_RDONLY | O_CLOEXEC);
  int synced = fd >= 0 && fsync(fd) == 0, e = errno;
  if (fd >= 0 && fd != f->fd) close(fd);
  if (!synced)
    return pb_atomic_fail(f, err, cap, "cannot write '%s': %s (syncing the finished file); "
                          "check the folder has space", f->path, strerror(e));
  struct stat sb;
  /* Checked again right before the rename: something may have appeared at the destination
   * meanwhile, and rename(2) would replace a device node or FIFO with our file. */
  if (lstat(f->path, &sb) == 0 && !S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
    return pb_atomic_fail(f, err, cap, "cannot write '%s': it is now %s, which a rename would "
                          "replace; not replacing it", f->path, pb_file_kind(sb.st_mode));
  if (f->anonymous && pb_atomic_link(f, err, cap)) return -1;
  if (rename(f->tmp, f->path) != 0)
    return pb_atomic_fail(f, err, cap, "cannot rename '%s' to '%s': %s; check the folder is "
                          "writable", f->tmp, f->path, strerror(errno));
  f->tmp[0] = 0; /* renamed: nothing to unlink */
  pb_sync_dir(f->path);
  pb_atomic_discard(f);
  return 0;
}
