/* The reporting the single-process runtime tests share (kernel_test.c, device_test.c): each
 * check prints "@name" (matched by CHECK-LABEL), then "ok" or one "FAIL: <first cause>"
 * line, and main() returns the number of failed checks, so a test that fails cannot exit 0.
 * (comm_test.c has its own, agreed over MPI ranks.) */
#ifndef PIPER_TEST_RUNTIME_CHECK_H
#define PIPER_TEST_RUNTIME_CHECK_H

#include <stdarg.h>
#include <stdio.h>

static int failures;     /* checks that failed so far: main's exit code */
static int check_failed; /* set by fail() during the current check */

/* Starts check `name`, printed as "@name", or "@name_label" when label is not NULL. */
static void begin_on(const char *name, const char *label) {
  if (label) printf("@%s_%s\n", name, label);
  else printf("@%s\n", name);
  check_failed = 0;
}

static inline void begin(const char *name) { begin_on(name, NULL); }

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...) {
  if (!check_failed) { /* one FAIL line per check: the first cause */
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
  }
  check_failed = 1;
}

/* Ends the current check: "ok", or counts it as failed. */
static void end(void) {
  if (check_failed) failures++;
  else printf("ok\n");
  fflush(stdout);
}

#endif
