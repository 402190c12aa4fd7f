/* Atomic file output for the compiler and the runtime alike: a file appears at its
 * destination complete or not at all.
 *
 *   pb_atomic_open     a new temporary in the destination's folder: unnamed (O_TMPFILE) where
 *                      the file system allows, so even SIGKILL leaves nothing behind; else, or
 *                      when the writer needs a name (a linker, LLVM's emitter), a new unique
 *                      PATH.XXXXXX created O_CREAT|O_EXCL|O_NOFOLLOW, never through a planted
 *                      symlink ("PATH.tmp" opened with fopen follows one and overwrites its
 *                      target; two writers of one fixed name clobber each other)
 *   (write)            to fd, e.g. with pb_write_all
 *   pb_atomic_commit   fsync, a name for an unnamed file, rename over the destination, fsync
 *                      of the folder (best effort) so the rename itself is durable
 *   pb_atomic_discard  on failure: closes and removes the temporary
 *
 * A destination that exists and is not a regular file is refused (a rename would replace a
 * device node or FIFO with a regular file) unless PB_ATOMIC_IN_PLACE asks to write it as it
 * is (/dev/null, a pipe); a directory is always refused. Errors are messages in the caller's
 * buffer ("cannot ...: why; what to do"), without a prefix: each caller adds its own.
 */
#ifndef PIPER_BASE_ATOMIC_FILE_H
#define PIPER_BASE_ATOMIC_FILE_H

#include <stddef.h>
#include <sys/types.h>

/* A file being written, to appear at its destination only when complete. */
typedef struct pb_atomic_file {
  int fd;        /* open for writing; -1 when closed (after commit or discard, or by a caller
                    that writes by name: commit then reopens the name to fsync it) */
  char *path;    /* owned: the destination */
  char *tmp;     /* owned: what is written: PATH.XXXXXX; "" while unnamed (O_TMPFILE) and once
                    renamed; the destination itself when in place */
  int anonymous; /* 1: an O_TMPFILE file with no name yet */
  int in_place;  /* 1: the destination is a device or FIFO written as it is (never renamed) */
} pb_atomic_file;

enum {
  /* The temporary has a name from the start (f->tmp), for writers that take a file name. */
  PB_ATOMIC_NAMED = 1,
  /* A destination that is a device or FIFO is written in place instead of refused; with
   * PB_ATOMIC_NAMED it is not even opened (a FIFO would block until read). */
  PB_ATOMIC_IN_PLACE = 2,
};

/* Starts writing `path`. Returns 0, or -1 with a message in err (cap bytes) and nothing
 * created. */
int pb_atomic_open(pb_atomic_file *f, const char *path, int flags, char *err, size_t cap);
/* Makes the written file the destination (see above); closes fd and frees the names. Returns
 * 0, or -1 with a message in err after removing what it created. */
int pb_atomic_commit(pb_atomic_file *f, char *err, size_t cap);
/* Closes and removes the temporary and frees the names; the destination is untouched. Safe
 * on a file already committed or discarded. */
void pb_atomic_discard(pb_atomic_file *f);

/* write(2) until all n bytes are out (EINTR retried); 0, or -1 with errno set. */
int pb_write_all(int fd, const void *buf, size_t n);
/* "a regular file", "a directory", "a FIFO", ... for messages. */
const char *pb_file_kind(mode_t mode);

#endif
