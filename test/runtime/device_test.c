/* prt-device-test / prt-cuda-test: checks the runtime's device seam (runtime/device.h).
 *
 * prt-device-test (every build, no GPU): the CPU device's whole vtable (alloc, copies in every
 * direction, memset, streams and events, errors), prt_device_open's refusals, and the
 * runtime's staging path on a device that is not host visible: a fake device over host memory
 * whose pointers have bit 62 set, so any place of the runtime that dereferenced device memory
 * directly instead of going through the device would crash. On it, init, data, the loss read,
 * gradient dumps and checkpoint save and load must give bit for bit what the CPU device gives.
 *
 * prt-cuda-test (built with -DPRT_TEST_CUDA where the CUDA toolkit is found): the same vtable
 * and runtime checks on cuda:0, where stream and event order is real (large copies on two
 * streams, each round's result checked). Without a GPU it prints "@cuda_device" and
 * "skipped: <why>" and exits 0; `prt-cuda-test --open-only` opens cuda:0 and nothing more:
 * without a GPU it prints "piper: error: no CUDA device: ..." and exits 1.
 *
 * Each check prints "@name" then "ok" or "FAIL: <detail>"; the exit code is the number of
 * failures (capped at 100). Everything is compared exactly: nothing here computes in floats.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prt_internal.h"
#include "check.h"



/* ---- the vtable, on any device ---- */

static void test_alloc(prt_device *d, const char *label) {
  begin_on("alloc", label);
  prt_status st = {0};
  void *z = NULL, *p = NULL;
  if (prt_device_alloc(d, 0, &z, &st) || !z) fail("alloc of 0 bytes: %s", st.msg);
  size_t n = 1000;
  if (prt_device_alloc(d, n, &p, &st) || !p) fail("alloc of %zu bytes: %s", n, st.msg);
  if (p && (uintptr_t)p % PRT_ALIGN) fail("alloc not %d-byte aligned: %p", PRT_ALIGN, p);
  unsigned char host[1000];
  memset(host, 0xAB, sizeof host);
  if (p && (prt_device_d2h(d, host, p, n, NULL, &st) || prt_device_synchronize(d, &st)))
    fail("d2h: %s", st.msg);
  for (size_t i = 0; i < n; i++)
    if (host[i]) {
      fail("alloc not zeroed: byte %zu is %d", i, host[i]);
      break;
    }
  prt_device_free(d, p);
  prt_device_free(d, z);
  prt_device_free(d, NULL); /* a no-op */
  end();
}

static void test_copies(prt_device *d, const char *label) {
  begin_on("copies", label);
  enum { N = 4096 };
  prt_status st = {0};
  static float a[N], b[N];
  for (int i = 0; i < N; i++) a[i] = (float)i * 0.5f - 7.0f, b[i] = -1.0f;
  void *x = NULL, *y = NULL;
  if (prt_device_alloc(d, N * 4, &x, &st) || prt_device_alloc(d, N * 4, &y, &st))
    fail("alloc: %s", st.msg);
  else if (prt_device_h2d(d, x, a, N * 4, NULL, &st) ||
           prt_device_copy(d, y, x, N * 4, PRT_COPY_D2D, NULL, &st) ||
           prt_device_d2h(d, b, y, N * 4, NULL, &st) || prt_device_synchronize(d, &st))
    fail("round trip: %s", st.msg);
  else if (memcmp(a, b, sizeof a))
    fail("host -> device -> device -> host changed the data");
  /* a range inside: 100 floats at float 10 of y set to bytes 0x3f, then read back at an
   * offset; the neighbours stay */
  if (!check_failed) {
    float *yf = y;
    if (prt_device_memset(d, yf + 10, 0x3f, 100 * 4, NULL, &st) ||
        prt_device_d2h(d, b, y, N * 4, NULL, &st) || prt_device_synchronize(d, &st))
      fail("memset: %s", st.msg);
    float v;
    memset(&v, 0x3f, 4);
    for (int i = 0; i < N && !check_failed; i++)
      if (memcmp(&b[i], i >= 10 && i < 110 ? &v : &a[i], 4))
        fail("after memset of floats [10, 110): float %d is %g", i, b[i]);
    /* partial copies at offsets, both ways */
    if (!check_failed &&
        (prt_device_h2d(d, yf + 200, a + 3, 50 * 4, NULL, &st) ||
         prt_device_d2h(d, b + 1000, yf + 200, 50 * 4, NULL, &st) ||
         prt_device_synchronize(d, &st)))
      fail("offset copies: %s", st.msg);
    if (!check_failed && memcmp(b + 1000, a + 3, 50 * 4)) fail("offset copies differ");
    /* zero bytes: nothing happens, even with NULL pointers */
    if (prt_device_h2d(d, NULL, NULL, 0, NULL, &st)) fail("a 0-byte copy failed: %s", st.msg);
  }
  prt_device_free(d, x);
  prt_device_free(d, y);
  end();
}

/* Two streams, an event between them, rounds that each overwrite what the last wrote: on a
 * real device a missing wait shows as a stale round's value. */
static void test_streams_events(prt_device *d, const char *label) {
  begin_on("streams_events", label);
  enum { N = 1 << 22 }; /* 16 MiB: long enough on a GPU for a missing wait to show */
  prt_status st = {0};
  prt_dstream *s1 = NULL, *s2 = NULL;
  prt_devent *e1 = NULL, *e2 = NULL;
  int done = 0; /* e2 queried after its synchronize */
  void *x = NULL, *y = NULL;
  unsigned char *host = malloc(N);
  if (prt_device_stream_create(d, &s1, &st) || prt_device_stream_create(d, &s2, &st) ||
      prt_device_event_create(d, &e1, &st) || prt_device_event_create(d, &e2, &st) ||
      prt_device_alloc(d, N, &x, &st) || prt_device_alloc(d, N, &y, &st)) {
    fail("setup: %s", st.msg);
  }
  /* an event never recorded is complete: waiting on it neither blocks nor fails */
  if (!check_failed && (prt_device_event_sync(d, e1, &st) ||
                        prt_device_stream_wait(d, s2, e1, &st)))
    fail("an unrecorded event: %s", st.msg);
  for (int round = 1; round <= 8 && !check_failed; round++) {
    /* s1: x = round; e1. s2: wait e1, y = x; e2. host: wait e2, read y. */
    if (prt_device_memset(d, x, round, N, s1, &st) ||
        prt_device_event_record(d, e1, s1, &st) || prt_device_stream_wait(d, s2, e1, &st) ||
        prt_device_copy(d, y, x, N, PRT_COPY_D2D, s2, &st) ||
        prt_device_event_record(d, e2, s2, &st) || prt_device_event_sync(d, e2, &st) ||
        prt_device_event_query(d, e2, &done, &st) || prt_device_d2h(d, host, y, N, s2, &st) ||
        prt_device_stream_sync(d, s2, &st)) {
      fail("round %d: %s", round, st.msg);
      break;
    }
    if (!done) fail("round %d: an event the host waited for queries as not done", round);
    for (size_t i = 0; i < N; i += 4093)
      if (host[i] != round) {
        fail("round %d: byte %zu of y is %d: the copy on stream 2 did not wait for the memset "
             "on stream 1", round, i, host[i]);
        break;
      }
  }
  if (!check_failed && (prt_device_stream_sync(d, s1, &st) || prt_device_synchronize(d, &st)))
    fail("synchronize: %s", st.msg);
  prt_device_free(d, x);
  prt_device_free(d, y);
  prt_device_event_destroy(d, e1);
  prt_device_event_destroy(d, e2);
  prt_device_stream_destroy(d, s1);
  prt_device_stream_destroy(d, s2);
  free(host);
  end();
}

/* Each misuse fails with code 1 and a message naming the op and the device. */
static void expect_error(prt_status *st, int rc, const char *device, const char *what) {
  if (!rc || st->code != 1) fail("%s: returned %d, code %d; want a failure", what, rc, st->code);
  else if (!strstr(st->msg, what) || !strstr(st->msg, device))
    fail("message lacks '%s' or '%s': %s", what, device, st->msg);
  memset(st, 0, sizeof *st);
}

static void test_errors(prt_device *d, const char *label) {
  begin_on("errors", label);
  prt_status st = {0};
  float h[4] = {0};
  void *x = NULL;
  if (prt_device_alloc(d, 16, &x, &st)) fail("alloc: %s", st.msg);
  expect_error(&st, prt_device_h2d(d, NULL, h, 16, NULL, &st), d->name, "copy host->device");
  expect_error(&st, prt_device_d2h(d, h, NULL, 16, NULL, &st), d->name, "copy device->host");
  expect_error(&st, prt_device_copy(d, x, NULL, 16, PRT_COPY_D2D, NULL, &st), d->name,
               "copy device->device");
  expect_error(&st, prt_device_copy(d, x, h, 16, (prt_copy_kind)7, NULL, &st), d->name,
               "copy of kind 7");
  expect_error(&st, prt_device_memset(d, NULL, 0, 16, NULL, &st), d->name, "memset");
  expect_error(&st, prt_device_event_record(d, NULL, NULL, &st), d->name, "event record");
  expect_error(&st, prt_device_stream_wait(d, NULL, NULL, &st), d->name, "stream wait");
  expect_error(&st, prt_device_event_sync(d, NULL, &st), d->name, "event synchronize");
  int done = 1;
  expect_error(&st, prt_device_event_query(d, NULL, &done, &st), d->name, "event query");
  /* the first failure is kept: a second one does not overwrite it */
  prt_device_memset(d, NULL, 0, 16, NULL, &st);
  prt_device_h2d(d, NULL, h, 16, NULL, &st);
  if (!strstr(st.msg, "memset")) fail("the first error was not kept: %s", st.msg);
  prt_device_free(d, x);
  end();
}

/* ---- the runtime on a device ---- */

/* A backend record like the process's with `dev` as its device: the runtime reaches a
 * context's device only through its record (ctx->backend), as a GPU plan's setup arranges
 * with the process's own. One record per device (two devices here: the CPU and `dev`). */
static const prt_backend *backend_on(prt_device *dev) {
  static prt_backend records[2];
  static int n;
  for (int i = 0; i < n; i++)
    if (records[i].device == dev) return &records[i];
  if (n == 2) {
    fail("more than 2 devices in one test: backend_on");
    return prt_backend_current();
  }
  records[n] = *prt_backend_current();
  records[n].device = dev;
  return &records[n++];
}

/* The runtime's small context (as in kernel_test.c) on `dev`: parameters of every init kind,
 * optimizer state, inputs, a loss, two named streams and an arena. */
static prt_ctx *small_ctx(prt_device *dev) {
  prt_ctx *ctx = prt_ctx_create();
  if (ctx->backend != prt_backend_current() || ctx->backend->device != prt_device_cpu())
    fail("a new context is not on the process's backend record and its CPU device");
  ctx->backend = backend_on(dev);
  prt_declare_tensor(ctx, 0, "w", PRT_PARAM, PRT_INIT_NORMAL, 2, 3, 4, 0, 0, 0);
  prt_declare_tensor(ctx, 1, "b", PRT_PARAM, PRT_INIT_ZEROS, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, 2, "ln", PRT_PARAM, PRT_INIT_ONES, 1, 4, 0, 0, 0, 0);
  prt_declare_tensor(ctx, 3, "w.m", PRT_OPTIM, 0, 2, 3, 4, 0, 0, 0);
  prt_declare_tensor(ctx, 4, "tokens", PRT_INPUT, 0, 2, 2, 4, 0, 0, 1);
  prt_declare_tensor(ctx, 5, "targets", PRT_INPUT, 0, 2, 2, 4, 0, 0, 1);
  prt_declare_tensor(ctx, 6, "loss", PRT_OUTPUT, 0, 0, 0, 0, 0, 0, 0);
  prt_declare_stream(ctx, 0, "compute");
  prt_declare_stream(ctx, 1, "comm");
  prt_declare_arena(ctx, 100);
  prt_status st = {0};
  if (prt_ctx_allocate(ctx, &st)) fail("allocate on %s: %s", dev->name, st.msg);
  return ctx;
}

/* 0 if every tensor of a (on its device) holds exactly what the same tensor of b holds. */
static int same_storage(prt_ctx *a, prt_ctx *b, const char *when) {
  for (int64_t i = 0; i < a->ntensors; i++) {
    size_t bytes = (size_t)a->tensors[i].numel * 4;
    prt_device *da = a->backend->device, *db = b->backend->device;
    void *ha = prt_host_view_begin(da, a->tensors[i].data, bytes, PRT_VIEW_READ, "a");
    void *hb = prt_host_view_begin(db, b->tensors[i].data, bytes, PRT_VIEW_READ, "b");
    int differ = memcmp(ha, hb, bytes) != 0;
    prt_host_view_end(da, a->tensors[i].data, ha, bytes, 0, "a");
    prt_host_view_end(db, b->tensors[i].data, hb, bytes, 0, "b");
    if (differ) {
      fail("%s: tensor '%s' differs between %s and %s", when, a->tensors[i].name, da->name,
           db->name);
      return 1;
    }
  }
  return 0;
}

/* Everything the runtime does to storage outside piper_step, on `dev` and on the CPU: the
 * results must agree bit for bit. */
static void test_runtime_on(prt_device *dev, const char *label) {
  begin_on("runtime", label);
  prt_device *cpu = prt_device_cpu();
  prt_ctx *a = small_ctx(cpu), *b = small_ctx(dev);
  if (check_failed) goto out;
  if (!b->streams || !b->streams[0] || !b->streams[1])
    fail("the plan's two streams have no device streams");
  prt_status st = {0};
  prt_data data;
  if (prt_data_open(&data, NULL, PRT_DATA_BYTES, 4, 256, &st)) {
    fail("data: %s", st.msg);
    goto out;
  }
  prt_init_params(a, 5);
  prt_init_params(b, 5);
  prt_data_fill(&data, a, 3);
  prt_data_fill(&data, b, 3);
  prt_data_close(&data);
  if (same_storage(a, b, "after init and data")) goto out;

  /* optimizer state and the loss written by "the step" (here: copies from the host) */
  float m[12], loss = 2.5f;
  for (int i = 0; i < 12; i++) m[i] = (float)i / 3;
  memcpy(a->tensors[3].data, m, sizeof m);
  memcpy(a->tensors[6].data, &loss, 4);
  if (prt_device_h2d(dev, b->tensors[3].data, m, sizeof m, NULL, &st) ||
      prt_device_h2d(dev, b->tensors[6].data, &loss, 4, NULL, &st) ||
      prt_device_synchronize(dev, &st)) {
    fail("h2d: %s", st.msg);
    goto out;
  }
  int stop = 0, sig = 0;
  double la = prt_dist_loss(a, 0, 0, &stop, &sig), lb = prt_dist_loss(b, 0, 0, &stop, &sig);
  if (la != 2.5 || lb != 2.5) fail("loss read as %g on cpu and %g on %s; want 2.5", la, lb,
                                   dev->name);

  /* the gradient dump copies device memory (here the arena) to the host */
  b->dump_step = b->step = 0;
  if (prt_device_h2d(dev, b->arena, m, sizeof m, NULL, &st) ||
      prt_device_synchronize(dev, &st))
    fail("h2d: %s", st.msg);
  prt_observe_grad(b, 0, b->arena);
  if (!b->tensors[0].grad_copy || memcmp(b->tensors[0].grad_copy, m, sizeof m))
    fail("prt_observe_grad did not copy the gradient from %s", dev->name);

  /* checkpoints: saved from the device, loaded onto the CPU and onto the device */
  char path[64];
  snprintf(path, sizeof path, "/tmp/prt-device-test-%d.safetensors", (int)getpid());
  if (prt_checkpoint_save(b, path, 7, &st)) fail("save from %s: %s", dev->name, st.msg);
  prt_ctx *c = small_ctx(cpu), *e = small_ctx(dev);
  prt_ckpt_info info;
  if (!check_failed && prt_checkpoint_load(c, path, &info, &st))
    fail("load onto cpu: %s", st.msg);
  if (!check_failed && (info.step != 7 || !info.optim))
    fail("load says step %lld, optim %d; want 7, 1", (long long)info.step, info.optim);
  if (!check_failed && prt_checkpoint_load(e, path, &info, &st))
    fail("load onto %s: %s", dev->name, st.msg);
  remove(path);
  for (int64_t i = 0; i < 4 && !check_failed; i++) { /* parameters and state only */
    size_t bytes = (size_t)a->tensors[i].numel * 4;
    void *he = prt_host_view_begin(dev, e->tensors[i].data, bytes, PRT_VIEW_READ, "e");
    if (memcmp(a->tensors[i].data, c->tensors[i].data, bytes) ||
        memcmp(a->tensors[i].data, he, bytes))
      fail("tensor '%s' differs after a checkpoint round trip through %s",
           a->tensors[i].name, dev->name);
    prt_host_view_end(dev, e->tensors[i].data, he, bytes, 0, "e");
  }
  prt_ctx_destroy(c);
  prt_ctx_destroy(e);
out:
  prt_ctx_destroy(a);
  prt_ctx_destroy(b);
  end();
}

static void test_vtable(prt_device *d, const char *label) {
  test_alloc(d, label);
  test_copies(d, label);
  test_streams_events(d, label);
  test_errors(d, label);
}

#ifndef PRT_TEST_CUDA

/* ---- a device that is not host visible, over host memory ---- */

/* Device pointers are host pointers with bit 62 set: non-canonical on x86-64 (and on
 * AArch64 with 48-bit addresses), so dereferencing one faults at once. */
#define FAKE_BIT ((uintptr_t)1 << 62)
static void *to_host(const void *p) { return (void *)((uintptr_t)p & ~FAKE_BIT); }
static void *to_dev(void *p) { return (void *)((uintptr_t)p | FAKE_BIT); }

static int64_t fake_h2d, fake_d2h; /* copies seen, by direction */

static void fake_destroy(prt_device *d) {}
static int fake_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  prt_device *cpu = prt_device_cpu();
  if (cpu->vt->alloc(cpu, bytes, out, st)) return st->code;
  *out = to_dev(*out);
  return 0;
}
/* the CPU device's free: its alloc may map a large block rather than malloc it */
static void fake_free(prt_device *d, void *p) {
  prt_device_cpu()->vt->free(prt_device_cpu(), to_host(p));
}
static int fake_copy(prt_device *d, void *dst, const void *src, size_t bytes,
                     prt_copy_kind kind, prt_dstream *s, prt_status *st) {
  if (kind == PRT_COPY_H2D) fake_h2d++;
  if (kind == PRT_COPY_D2H) fake_d2h++;
  if (kind != PRT_COPY_D2H) dst = to_host(dst);
  if (kind != PRT_COPY_H2D) src = to_host(src);
  memmove(dst, src, bytes);
  return 0;
}
static int fake_memset(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                       prt_status *st) {
  memset(to_host(p), value, bytes);
  return 0;
}
/* streams and events: the CPU device's (nothing here is asynchronous) */
static int fake_stream_create(prt_device *d, prt_dstream **out, prt_status *st) {
  return prt_device_cpu()->vt->stream_create(prt_device_cpu(), out, st);
}
static void fake_stream_destroy(prt_device *d, prt_dstream *s) {
  prt_device_cpu()->vt->stream_destroy(prt_device_cpu(), s);
}
static int fake_ok_stream(prt_device *d, prt_dstream *s, prt_status *st) { return 0; }
static int fake_event_create(prt_device *d, prt_devent **out, prt_status *st) {
  return prt_device_cpu()->vt->event_create(prt_device_cpu(), out, st);
}
static void fake_event_destroy(prt_device *d, prt_devent *e) {
  prt_device_cpu()->vt->event_destroy(prt_device_cpu(), e);
}
static int fake_ok_event(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st) {
  return 0;
}
static int fake_ok_wait(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st) {
  return 0;
}
static int fake_ok_sync(prt_device *d, prt_devent *e, prt_status *st) { return 0; }
static int fake_done(prt_device *d, prt_devent *e, int *done, prt_status *st) {
  *done = 1;
  return 0;
}
static int fake_ok(prt_device *d, prt_status *st) { return 0; }

static int fake_host_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  *out = malloc(bytes ? bytes : 1);
  return *out ? 0 : prt_fail(st, 1, "out of memory");
}
static void fake_host_free(prt_device *d, void *p) { free(p); }

static const prt_device_vtable fake_vtable = {
    fake_destroy,      fake_alloc,         fake_free,           fake_copy,
    fake_memset,       fake_stream_create, fake_stream_destroy, fake_ok_stream,
    fake_event_create, fake_event_destroy, fake_ok_event,       fake_ok_wait,
    fake_ok_sync,      fake_done,          fake_ok,             fake_host_alloc,
    fake_host_free,
};
static prt_device fake_device = {&fake_vtable, "staging", 0};

static void expect_open_error(const char *kind, int code, const char *what) {
  prt_status st = {0};
  prt_device *d = (prt_device *)1;
  int rc = prt_device_open(kind, &d, &st);
  if (rc != code || st.code != code || d) fail("open '%s': returned %d, code %d, device %p; "
                                               "want %d and NULL", kind, rc, st.code,
                                               (void *)d, code);
  else if (!strstr(st.msg, what)) fail("open '%s': message lacks '%s': %s", kind, what, st.msg);
}

int main(void) {
  begin_on("device_open", NULL);
  prt_status st = {0};
  prt_device *cpu = NULL;
  if (prt_device_open("cpu", &cpu, &st) || cpu != prt_device_cpu())
    fail("open cpu: %s", st.msg);
  else if (strcmp(cpu->name, "cpu") || !cpu->host_visible)
    fail("the cpu device is '%s', host_visible %d", cpu->name, cpu->host_visible);
  prt_device_close(cpu); /* shared: stays usable */
  expect_open_error("tpu", 2, "unknown device 'tpu'");
  expect_open_error(NULL, 2, "unknown device '(null)'");
  expect_open_error("cuda:x", 2, "bad device 'cuda:x'");
  expect_open_error("cudax", 2, "unknown device 'cudax'");
  expect_open_error("cuda", 1, "built without CUDA");
  end();

  test_vtable(prt_device_cpu(), "cpu");

  begin_on("alloc_too_large", "cpu");
  void *p = (void *)1;
  st = (prt_status){0};
  if (!prt_device_alloc(prt_device_cpu(), SIZE_MAX - 8, &p, &st) || p)
    fail("an alloc of SIZE_MAX - 8 bytes succeeded");
  else if (!strstr(st.msg, "alloc of") || !strstr(st.msg, "cpu"))
    fail("message: %s", st.msg);
  end();

  test_vtable(&fake_device, "staging");
  test_runtime_on(&fake_device, "staging");
  begin_on("staging_copies_seen", NULL); /* the runtime really went through the device */
  if (fake_h2d < 10 || fake_d2h < 10)
    fail("only %lld host->device and %lld device->host copies", (long long)fake_h2d,
         (long long)fake_d2h);
  end();
  test_runtime_on(prt_device_cpu(), "cpu");

  printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
  return failures > 100 ? 100 : failures;
}

#else /* PRT_TEST_CUDA */

int main(int argc, char **argv) {
  int open_only = argc == 2 && strcmp(argv[1], "--open-only") == 0;
  if (argc > 1 && !open_only) {
    fprintf(stderr, "usage: prt-cuda-test [--open-only]\n");
    return 2;
  }
  prt_status st = {0};
  prt_device *d = NULL;
  if (open_only) {
    if (prt_device_open("cuda", &d, &st)) {
      fprintf(stderr, "piper: error: %s\n", st.msg);
      return st.code;
    }
    printf("opened %s\n", d->name);
    prt_device_close(d);
    return 0;
  }
  begin_on("cuda_device", NULL);
  if (prt_device_open("cuda:0", &d, &st)) {
    printf("skipped: %s\n", st.msg); /* no GPU here: nothing to check, and that is no fault */
    return 0;
  }
  if (strcmp(d->name, "cuda:0") || d->host_visible)
    fail("the device is '%s', host_visible %d", d->name, d->host_visible);
  st = (prt_status){0};
  prt_device *none = NULL;
  if (!prt_device_open("cuda:1000", &none, &st) || !strstr(st.msg, "no CUDA device 1000"))
    fail("cuda:1000 opened or said: %s", st.msg);
  end();
  test_vtable(d, "cuda");
  begin_on("alloc_too_large", "cuda");
  void *p = (void *)1;
  st = (prt_status){0};
  if (!prt_device_alloc(d, (size_t)1 << 50, &p, &st) || p)
    fail("an alloc of 1 PiB succeeded");
  else if (!strstr(st.msg, "cudaMalloc") || !strstr(st.msg, "cuda:0"))
    fail("message: %s", st.msg);
  end();
  test_runtime_on(d, "cuda");
  prt_device_close(d);
  printf(failures ? "%d check(s) FAILED\n" : "all checks passed\n", failures);
  return failures > 100 ? 100 : failures;
}

#endif
