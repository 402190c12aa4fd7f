/* The runtime's leaf helpers: a status that names a failure, the stop that ends every rank,
 * and allocation that never returns NULL. Every file of libpiper_rt may use them; they use
 * nothing of the runtime, so the runtime's file graph has no circle through them (prt_fatal
 * reaches the comm backend only through the hook the backend installs, prt_set_stop).
 */
#ifndef PIPER_PRT_FAIL_H
#define PIPER_PRT_FAIL_H

#include <stddef.h>

typedef struct prt_status {
  int code;       /* 0 ok; otherwise the process exit code to use: 1 error, 2 bad flags */
  char msg[1024]; /* NUL-terminated "<what>: <where>; <what to do>" when code != 0 */
} prt_status;

/* Records the first failure in st (later ones are dropped: the first is the cause) and
 * returns code, so callers can write `return prt_fail(st, 1, ...)`. */
int prt_fail(prt_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints "piper: error: <message>" to stderr and stops with status 1 through the stop hook:
 * every rank under MPI (the others would wait for this one forever), this process alone
 * otherwise. Only for what cannot return a status: ABI misuse inside piper_step, out of
 * memory inside a kernel. */
void prt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* malloc that never returns NULL: out of memory is prt_fatal. (Tensor storage comes from
 * the device: prt_device_alloc, device.h.) */
void *prt_xmalloc(size_t bytes, const char *what);

/* How prt_fatal ends the run: `stop(code)` must not return. The comm backend installs its
 * abort when it starts (backend.c); until then, and with NULL, it is exit(code). */
typedef void (*prt_stop_fn)(int code);
void prt_set_stop(prt_stop_fn stop);

#endif
