/* The files a command line names (files.c): checked before anything is written. */
#ifndef PIPER_PRT_FILES_H
#define PIPER_PRT_FILES_H

#include <stdint.h>

#include "fail.h"

/* A file the command line names. */
typedef struct prt_file_use {
  const char *flag; /* "--metrics", for messages */
  const char *path; /* borrowed */
  int output;       /* 1: the run writes it; 0: it reads it */
  int in_place_ok;  /* 1 on --init-checkpoint and --save-checkpoint: one file may be both
                       (resuming in place is safe: the input is read whole before the first
                       step and the output replaces it atomically) */
} prt_file_use;
/* Local. Checks, before anything is written: every output's folder exists, is a folder and is
 * writable; an output that exists is a regular file (not a device, FIFO or directory); no
 * output is the same file as an input or another output (same device and inode where both
 * exist, else the same resolved name), except two entries marked in_place_ok. Fails naming
 * the flag(s) and file(s). */
int prt_files_check(const prt_file_use *files, int64_t n, prt_status *st);
/* Outputs are written atomically through the base library (piper/base/atomic_file.h). */

#endif
