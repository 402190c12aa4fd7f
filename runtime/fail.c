/* The runtime's leaf helpers (fail.h): status, fatal stop, checked allocation. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "fail.h"

static prt_stop_fn prt_stop; /* NULL: exit */

void prt_set_stop(prt_stop_fn stop) { prt_stop = stop; }

int prt_fail(prt_status *st, int code, const char *fmt, ...) {
  if (st->code != 0) return st->code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->msg, sizeof st->msg, fmt, ap);
  va_end(ap);
  st->code = code;
  return code;
}

void prt_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("piper: error: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  fflush(stderr);
  if (prt_stop) prt_stop(1); /* every rank stops: the others would wait for this one */
  exit(1);
}

void *prt_xmalloc(size_t bytes, const char *what) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p)
    prt_fatal("out of memory: %zu bytes for %s; free memory or shrink the model or batch",
              bytes, what);
  return p;
}
