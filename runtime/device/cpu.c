/* The CPU device (device.h): host memory. alloc is aligned_alloc + memset for small blocks,
 * and for large ones (the arena, the big tensors) an anonymous mmap, which the kernel hands
 * out zeroed and page by page as it is first touched: memset-ing them up front cost a
 * restarted DP4 job 0.6-1.5 s of its start-up on a loaded machine (bench_faults.py --phases),
 * touching every page twice (zeroing, then the checkpoint load or the first step). Copies are memcpy, memset is memset. Every operation completes before it
 * returns, so a stream is only a handle and an event only remembers that it was recorded:
 * the order the API promises holds trivially. host_visible = 1: the runtime touches this
 * memory in place, with no staging copies. One shared instance (prt_device_cpu). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "device.h"
#include "prt_ctx.h"

/* A stream or event: nothing to track, but distinct non-NULL handles the caller owns. */
struct prt_dstream { int unused; /* streams hold no state: work is done on issue */ };
struct prt_devent { int recorded; /* 1 once recorded (informative only) */ };

static void cpu_destroy(prt_device *d) { (void)d; /* shared: never freed */ }

/* Blocks of at least this many bytes are mapped (cpu_map) rather than allocated. */
#define CPU_MAP_MIN ((size_t)1 << 20)

/* The mapped blocks, so cpu_free knows to munmap them (and their lengths); a growable list,
 * guarded because the device instance is shared. */
static struct {
  void **p;
  size_t *len;
  size_t n, cap;
  pthread_mutex_t mu;
} cpu_maps = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* `bytes` (a multiple of PRT_ALIGN) of zeroed memory from mmap (page-aligned, so
 * PRT_ALIGN-aligned too), or NULL. */
static void *cpu_map(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
  pthread_mutex_lock(&cpu_maps.mu);
  if (cpu_maps.n == cpu_maps.cap) {
    size_t cap = cpu_maps.cap ? 2 * cpu_maps.cap : 16;
    void **np = realloc(cpu_maps.p, cap * sizeof *np);
    if (np) cpu_maps.p = np;
    size_t *nl = np ? realloc(cpu_maps.len, cap * sizeof *nl) : NULL;
    if (nl) cpu_maps.len = nl, cpu_maps.cap = cap;
  }
  int ok = cpu_maps.n < cpu_maps.cap;
  if (ok) {
    cpu_maps.p[cpu_maps.n] = p;
    cpu_maps.len[cpu_maps.n++] = bytes;
  }
  pthread_mutex_unlock(&cpu_maps.mu);
  if (!ok) munmap(p, bytes); /* no room to remember it: the caller says out of memory */
  return ok ? p : NULL;
}

/* munmaps p if cpu_map gave it; 0 if it did not. */
static int cpu_unmap(void *p) {
  pthread_mutex_lock(&cpu_maps.mu);
  size_t i = 0;
  while (i < cpu_maps.n && cpu_maps.p[i] != p) i++;
  int found = i < cpu_maps.n;
  if (found) {
    munmap(p, cpu_maps.len[i]);
    cpu_maps.p[i] = cpu_maps.p[cpu_maps.n - 1];
    cpu_maps.len[i] = cpu_maps.len[--cpu_maps.n];
  }
  pthread_mutex_unlock(&cpu_maps.mu);
  return found;
}

static int cpu_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  size_t rounded = (bytes + PRT_ALIGN - 1) / PRT_ALIGN * PRT_ALIGN;
  if (rounded < bytes) rounded = 0; /* overflow: refused below */
  if (rounded == 0 && bytes) {
    *out = NULL;
    return prt_fail(st, 1, "alloc of %zu bytes on %s: too large for this machine; shrink "
                    "the model or batch", bytes, d->name);
  }
  if (rounded == 0) rounded = PRT_ALIGN;
  void *p = rounded >= CPU_MAP_MIN ? cpu_map(rounded) : aligned_alloc(PRT_ALIGN, rounded);
  if (!p) {
    *out = NULL;
    return prt_fail(st, 1, "alloc of %zu bytes on %s: out of memory; free memory or shrink "
                    "the model or batch", rounded, d->name);
  }
  if (rounded < CPU_MAP_MIN) memset(p, 0, rounded); /* a mapping is zeroed already */
  *out = p;
  return 0;
}

static void cpu_free(prt_device *d, void *p) {
  if (!cpu_unmap(p)) free(p);
}

static int cpu_copy(prt_device *d, void *dst, const void *src, size_t bytes,
                    prt_copy_kind kind, prt_dstream *s, prt_status *st) {
  memmove(dst, src, bytes); /* memmove: a device->device copy may overlap, as cudaMemcpy's */
  return 0;
}

static int cpu_memset(prt_device *d, void *p, int value, size_t bytes, prt_dstream *s,
                      prt_status *st) {
  memset(p, value, bytes);
  return 0;
}

static int cpu_stream_create(prt_device *d, prt_dstream **out, prt_status *st) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return prt_fail(st, 1, "stream create on %s: out of memory; free memory", d->name);
  return 0;
}

static void cpu_stream_destroy(prt_device *d, prt_dstream *s) { free(s); }
static int cpu_stream_sync(prt_device *d, prt_dstream *s, prt_status *st) { return 0; }

static int cpu_event_create(prt_device *d, prt_devent **out, prt_status *st) {
  *out = calloc(1, sizeof **out);
  if (!*out)
    return prt_fail(st, 1, "event create on %s: out of memory; free memory", d->name);
  return 0;
}

static void cpu_event_destroy(prt_device *d, prt_devent *e) { free(e); }

static int cpu_event_record(prt_device *d, prt_devent *e, prt_dstream *s, prt_status *st) {
  e->recorded = 1; /* everything issued before is already done */
  return 0;
}

static int cpu_stream_wait(prt_device *d, prt_dstream *s, prt_devent *e, prt_status *st) {
  return 0; /* e is complete: the work it follows ran at issue */
}

static int cpu_event_sync(prt_device *d, prt_devent *e, prt_status *st) { return 0; }
static int cpu_event_query(prt_device *d, prt_devent *e, int *done, prt_status *st) {
  *done = 1;
  return 0;
}
static int cpu_synchronize(prt_device *d, prt_status *st) { return 0; }

/* The host's own memory is what the CPU device copies from without waiting. */
static int cpu_host_alloc(prt_device *d, size_t bytes, void **out, prt_status *st) {
  *out = malloc(bytes ? bytes : 1);
  if (!*out)
    return prt_fail(st, 1, "host alloc of %zu bytes for %s: out of memory; free memory", bytes,
                    d->name);
  return 0;
}
static void cpu_host_free(prt_device *d, void *p) { free(p); }

static const prt_device_vtable cpu_vtable = {
    cpu_destroy,      cpu_alloc,        cpu_free,          cpu_copy,
    cpu_memset,       cpu_stream_create, cpu_stream_destroy, cpu_stream_sync,
    cpu_event_create, cpu_event_destroy, cpu_event_record,  cpu_stream_wait,
    cpu_event_sync,   cpu_event_query,  cpu_synchronize,   cpu_host_alloc,
    cpu_host_free,
};

static prt_device cpu_device = {&cpu_vtable, "cpu", 1};

prt_device *prt_device_cpu(void) { return &cpu_device; }
