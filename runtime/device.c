/* The device seam's generic half: opening a device by kind, the checked wrappers around the
 * vtable, and host views (device.h). Backend-independent: it knows no backend's types. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "prt_ctx.h"

/* Weak: resolved only when libpiper_rt_cuda is linked (with -u prt_device_cuda_open). */
extern int prt_device_cuda_open(int ordinal, prt_device **out, prt_status *st)
    __attribute__((weak));

/* Weak as well, and pulled in with prt_device_cuda_open (the same file). */
extern int prt_device_cuda_count(void) __attribute__((weak));

int prt_device_count(const char *kind) {
  if (kind && !strcmp(kind, "cpu")) return 1;
  if (kind && !strcmp(kind, "cuda") && prt_device_cuda_count) return prt_device_cuda_count();
  return 0;
}

int prt_device_open(const char *kind, prt_device **out, prt_status *st) {
  *out = NULL;
  if (kind && strcmp(kind, "cpu") == 0) {
    *out = prt_device_cpu();
    return 0;
  }
  if (kind && strncmp(kind, "cuda", 4) == 0) {
    int ordinal = 0;
    const char *n = kind + 4;
    if (*n == ':') {
      char *end = NULL;
      long v = strtol(n + 1, &end, 10);
      if (end == n + 1 || *end || v < 0 || v > 1023)
        return prt_fail(st, 2, "bad device '%s': prt_device_open; write cuda:N with N a "
                        "device number (0, 1, ...)", kind);
      ordinal = (int)v;
    } else if (*n) {
      return prt_fail(st, 2, "unknown device '%s': prt_device_open; use cpu, cuda or "
                      "cuda:N", kind);
    }
    if (!prt_device_cuda_open)
      return prt_fail(st, 1, "device '%s' asked for, but this binary was built without CUDA "
                      "(libpiper_rt_cuda not linked): prt_device_open; use the CPU device, or "
                      "rebuild where the CUDA toolkit is found and link -lpiper_rt_cuda",
                      kind);
    return prt_device_cuda_open(ordinal, out, st);
  }
  return prt_fail(st, 2, "unknown device '%s': prt_device_open; use cpu, cuda or cuda:N",
                  kind ? kind : "(null)");
}

void prt_device_close(prt_device *d) {
  if (d && d != prt_device_cpu()) d->vt->destroy(d);
}

static const char *const copy_name[] = {"copy host->device", "copy device->host",
                                        "copy device->device"};

int prt_device_copy(prt_device *d, void *dst, const void *src, size_t bytes,
                    prt_copy_kind kind, prt_dstream *s, prt_status *st) {
  if ((unsigned)kind > PRT_COPY_D2D)
    return prt_fail(st, 1, "copy of kind %d on %s: prt_device_copy; expected PRT_COPY_H2D, "
                    "D2H or D2D (a bug in the runtime)", (int)kind, d->name);
  if (bytes == 0) return 0;
  if (!dst || !src)
    return prt_fail(st, 1, "%s of %zu bytes on %s with a NULL %s: prt_device_copy; a bug in "
                    "the runtime (storage not allocated?)", copy_name[kind], bytes, d->name,
                    !dst ? "destination" : "source");
  return d->vt->copy(d, dst, src, bytes, kind, s, st);
}

int prt_device_memset(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                      prt_status *st) {
  if (bytes == 0) return 0;
  if (!p)
    return prt_fail(st, 1, "memset of %zu bytes on %s at NULL: prt_device_memset; a bug in "
                    "the runtime (storage not allocated?)", bytes, d->name);
  return d->vt->memset(d, p, value, bytes, s, st);
}

int prt_device_event_create(prt_device *d, prt_devent **out, prt_status *st) {
  *out = NULL;
  return d->vt->event_create(d, out, st);
}

int prt_device_event_record(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st) {
  if (!e)
    return prt_fail(st, 1, "event record on %s with a NULL event: prt_device_event_record; "
                    "create it with prt_device_event_create first", d->name);
  return d->vt->event_record(d, e, s, st);
}

int prt_device_stream_wait(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st) {
  if (!e)
    return prt_fail(st, 1, "stream wait on %s with a NULL event: prt_device_stream_wait; "
                    "create it with prt_device_event_create first", d->name);
  return d->vt->stream_wait(d, s, e, st);
}

int prt_device_event_query(prt_device *d, prt_devent *e, int *done, prt_status *st) {
  *done = 0;
  if (!e)
    return prt_fail(st, 1, "event query on %s with a NULL event: prt_device_event_query; "
                    "create it with prt_device_event_create first", d->name);
  return d->vt->event_query(d, e, done, st);
}

int prt_device_event_sync(prt_device *d, prt_devent *e, prt_status *st) {
  if (!e)
    return prt_fail(st, 1, "event synchronize on %s with a NULL event: "
                    "prt_device_event_sync; create it with prt_device_event_create first",
                    d->name);
  return d->vt->event_sync(d, e, st);
}

/* ---- host views ---- */

void *prt_host_view_begin(prt_device *d, const void *dev, size_t bytes, int mode,
                          const char *what) {
  if (d->host_visible) return (void *)dev;
  void *host = prt_xmalloc(bytes, what);
  if (mode & PRT_VIEW_READ) {
    prt_status st = {0};
    if (prt_device_d2h(d, host, dev, bytes, NULL, &st) || prt_device_synchronize(d, &st))
      prt_fatal("%s (reading %s)", st.msg, what);
  }
  return host;
}

void prt_host_view_end(prt_device *d, void *dev, void *host, size_t bytes, int mode,
                       const char *what) {
  if (d->host_visible) return;
  if (mode & PRT_VIEW_WRITE) {
    prt_status st = {0};
    if (prt_device_h2d(d, dev, host, bytes, NULL, &st) || prt_device_synchronize(d, &st))
      prt_fatal("%s (writing %s)", st.msg, what);
  }
  free(host);
}
