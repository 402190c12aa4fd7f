/* The reporting the MPI runtime tests share (comm_test.c, cp_test.c): each check prints "@name"
 * from rank 0 (matched by CHECK-LABEL), a rank that fails prints "FAIL (rank k): <first
 * cause>", and the check passes only when every rank agrees it did (an all-reduce in end(), so
 * every rank must call it); main() returns the number of failed checks. The single-process
 * tests' check.h is the same without the agreement. The including file defines R (this rank)
 * and calls end() only after the comm backend is up (prt_comm_init). */
#ifndef PIPER_TEST_RUNTIME_MPI_CHECK_H
#define PIPER_TEST_RUNTIME_MPI_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "prt_backend.h"

static int64_t R;        /* this rank, set by main once the backend runs */
static int failures;     /* checks that failed on some rank: main's exit code */
static int check_failed; /* set by fail() during the current check, on this rank */

static void begin(const char *name) {
  if (R == 0) printf("@%s\n", name);
  check_failed = 0;
}

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  if (!check_failed) { /* one FAIL line per check and rank: the first cause */
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL (rank %lld): ", (long long)R);
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
  }
  check_failed = 1;
}

/* Collective: ends the current check, failed if it failed on any rank. */
static void end(void) {
  int64_t any = check_failed;
  prt_comm_allreduce_i64(&any, 1, PRT_REDUCE_MAX);
  if (any) failures++;
  else if (R == 0) printf("ok\n");
  fflush(stdout);
}

#endif
