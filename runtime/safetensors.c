/* The safetensors format: writing a file, reading and checking its header, reading a
 * tensor's bytes.
 *
 *   u64 little-endian header length n | n bytes of JSON header | raw little-endian data
 *   header: {"__metadata__": {"format": "pt", "step": "<completed steps>"},
 *            "<name>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
 *            ...}
 *
 * with offsets relative to the start of the data section. Dtypes are rows of prt_st_dtypes
 * below: F32, BF16 and F16 are read (converted to fp32, exactly: every BF16 and F16 value,
 * subnormals, infinities and NaNs included, is an fp32 value); F32 and BF16 are written (BF16
 * rounded to nearest, ties to even, as torch's float->bfloat16 conversion). We write tensors
 * contiguously in the order given and pad the header with spaces to a multiple of 8 bytes, as
 * the reference implementation does. The header is read with the base library's JSON reader
 * (piper/base/json.h) one value at a time, keeping only what a safetensors header holds
 * (names, dtypes, shapes, offsets, the "step" metadata) and skipping any other value.
 *
 * What goes into a file and what a file must hold to load (which tensors, their names, the
 * resume state) is the checkpoint policy's business: checkpoint.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "piper/base/atomic_file.h"
#include "piper/base/json.h"
#include "piper/checked.h"
#include "prt_safetensors.h"

#define PRT_MAX_HEADER (100u << 20) /* bytes; safetensors' own limit */
#define PRT_ST_MAX_DIMS 8           /* dims we accept in a file's shape */

/* ---- dtypes ---- */

static void prt_f32_load(const void *src, float *dst, size_t n) { memcpy(dst, src, 4 * n); }
static void prt_f32_store(const float *src, void *dst, size_t n) { memcpy(dst, src, 4 * n); }

float prt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  uint32_t u;
  if (exp == 0x1F) { /* inf, or NaN with its payload kept in fp32's top mantissa bits */
    u = sign | 0x7F800000u | man << 13;
  } else if (exp == 0) { /* zero or subnormal: man * 2^-24, exact in fp32 */
    float m = (float)man * 0x1p-24f;
    memcpy(&u, &m, 4);
    u |= sign;
  } else { /* normal: rebias the exponent (15 -> 127) */
    u = sign | (exp + 112u) << 23 | man << 13;
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

/* The 16-bit little-endian element i of b. */
static uint16_t prt_u16_at(const uint8_t *b, size_t i) {
  return (uint16_t)(b[2 * i] | b[2 * i + 1] << 8);
}

static void prt_bf16_load(const void *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = prt_bf16_to_f32(prt_u16_at(src, i));
}

static void prt_bf16_store(const float *src, void *dst, size_t n) {
  uint8_t *b = dst;
  for (size_t i = 0; i < n; i++) {
    uint16_t h = prt_f32_to_bf16(src[i]);
    b[2 * i] = (uint8_t)h;
    b[2 * i + 1] = (uint8_t)(h >> 8);
  }
}

static void prt_f16_load(const void *src, float *dst, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = prt_f16_to_f32(prt_u16_at(src, i));
}

/* The dtypes a checkpoint may hold, one row each (a new one is a row and its converters).
 * store NULL: read only. Keep PRT_ST_DTYPES_READ (prt_internal.h) in step. */
static const prt_st_dtype prt_st_dtypes[] = {
    {"F32", "fp32", 4, prt_f32_load, prt_f32_store},
    {"BF16", "bf16", 2, prt_bf16_load, prt_bf16_store},
    {"F16", "fp16", 2, prt_f16_load, NULL},
};
#define PRT_ST_NDTYPES (sizeof prt_st_dtypes / sizeof prt_st_dtypes[0])

const prt_st_dtype *prt_st_dtype_find(const char *name) {
  for (size_t i = 0; i < PRT_ST_NDTYPES; i++)
    if (strcmp(prt_st_dtypes[i].name, name) == 0) return &prt_st_dtypes[i];
  return NULL;
}

const prt_st_dtype *prt_st_dtype_for_flag(const char *flag) {
  for (size_t i = 0; i < PRT_ST_NDTYPES; i++)
    if (prt_st_dtypes[i].store && strcmp(prt_st_dtypes[i].flag, flag) == 0)
      return &prt_st_dtypes[i];
  return NULL;
}

/* Elements converted per chunk when a tensor is read or written in another dtype. */
#define PRT_ST_CHUNK 4096

/* ---- a growable byte buffer for building the header ---- */

typedef struct prt_buf {
  char *p;    /* owned, NUL-terminated while len < cap */
  size_t len; /* bytes used */
  size_t cap; /* bytes allocated */
} prt_buf;

static void prt_buf_put(prt_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (b->len + n + 1 > cap) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) prt_fatal("out of memory building a safetensors header of %zu bytes", cap);
    b->p = p;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
  b->p[b->len] = 0;
}

static void prt_buf_str(prt_buf *b, const char *s) { prt_buf_put(b, s, strlen(s)); }

static void prt_buf_printf(prt_buf *b, const char *fmt, ...) {
  char tmp[128];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  prt_buf_put(b, tmp, (size_t)n);
}

/* pb_json_quote's sink for a prt_buf. */
static void prt_buf_sink(void *b, const char *bytes, size_t n) { prt_buf_put(b, bytes, n); }

/* ---- writing ---- */

/* The header: metadata, then each tensor's dtype, shape and offsets; padded with spaces so
 * the data section starts at a multiple of 8 bytes. */
static void prt_st_header_build(prt_buf *h, const prt_st_entry *entries, int64_t n,
                                int64_t step, const prt_st_dtype *dt) {
  prt_buf_str(h, "{\"__metadata__\":{\"format\":\"pt\"");
  if (step >= 0) prt_buf_printf(h, ",\"step\":\"%lld\"", (long long)step);
  prt_buf_put(h, "}", 1);
  uint64_t offset = 0;
  for (int64_t i = 0; i < n; i++) {
    const prt_st_entry *e = &entries[i];
    uint64_t numel = 1;
    prt_buf_put(h, ",", 1);
    pb_json_quote(e->name, prt_buf_sink, h);
    prt_buf_printf(h, ":{\"dtype\":\"%s\",\"shape\":[", dt->name);
    for (int64_t k = 0; k < e->ndim; k++) {
      prt_buf_printf(h, "%s%lld", k ? "," : "", (long long)e->dims[k]);
      numel *= (uint64_t)e->dims[k];
    }
    prt_buf_printf(h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                   (unsigned long long)(offset + dt->size * numel));
    offset += dt->size * numel;
  }
  prt_buf_put(h, "}", 1);
  while ((8 + h->len) % 8) prt_buf_put(h, " ", 1);
}

/* numel fp32 values as dtype dt's bytes to fd: straight for F32, else converted a chunk at a
 * time. 0, or -1 with errno. */
static int prt_st_write_data(int fd, const float *data, size_t numel, const prt_st_dtype *dt) {
  if (dt->store == prt_f32_store) return pb_write_all(fd, data, 4 * numel);
  uint8_t buf[PRT_ST_CHUNK * 4];
  for (size_t i = 0; i < numel; i += PRT_ST_CHUNK) {
    size_t k = numel - i < PRT_ST_CHUNK ? numel - i : PRT_ST_CHUNK;
    dt->store(data + i, buf, k);
    if (pb_write_all(fd, buf, k * dt->size)) return -1;
  }
  return 0;
}

int prt_safetensors_write(const char *path, const prt_st_entry *entries, int64_t n,
                          int64_t step, prt_status *st) {
  return prt_safetensors_write_as(path, entries, n, step, prt_st_dtype_find("F32"), st);
}

int prt_safetensors_write_as(const char *path, const prt_st_entry *entries, int64_t n,
                             int64_t step, const prt_st_dtype *dt, prt_status *st) {
  prt_buf h = {0};
  prt_st_header_build(&h, entries, n, step, dt);
  pb_atomic_file f;
  char err[sizeof st->msg];
  if (pb_atomic_open(&f, path, 0, err, sizeof err)) {
    free(h.p);
    return prt_fail(st, 1, "%s", err);
  }
  uint64_t hlen = h.len; /* little-endian host, checked in prt_internal.h */
  int ok = !pb_write_all(f.fd, &hlen, 8) && !pb_write_all(f.fd, h.p, h.len);
  for (int64_t i = 0; ok && i < n; i++) {
    size_t numel = 1;
    for (int64_t k = 0; k < entries[i].ndim; k++) numel *= (size_t)entries[i].dims[k];
    ok = !prt_st_write_data(f.fd, entries[i].data, numel, dt);
  }
  int e = errno;
  free(h.p);
  if (!ok) {
    pb_atomic_discard(&f);
    return prt_fail(st, 1, "cannot write %s: %s; check the directory is writable and has "
                    "space", path, strerror(e));
  }
  if (pb_atomic_commit(&f, err, sizeof err)) return prt_fail(st, 1, "%s", err);
  return 0;
}

/* ---- reading the header ---- */

/* uints -> '[' [ uint { ',' uint } ] ']' into out[0..*n), at most cap of them. */
static int prt_st_uints(pb_json *r, uint64_t *out, int64_t cap, int64_t *n) {
  int more;
  *n = 0;
  if (pb_json_open(r, '[', &more)) return -1;
  while (more) {
    if (*n == cap) return pb_json_fail(r, "more than %lld entries in an array", (long long)cap);
    if (pb_json_uint(r, &out[(*n)++]) || pb_json_next(r, ']', &more)) return -1;
  }
  return 0;
}

/* One field of a tensor's object; *have gets the bit of a field it knows (1 dtype, 2 shape,
 * 4 data_offsets). Fields it does not know are skipped. */
static int prt_st_field(pb_json *r, const char *key, prt_st_in *t, int *have) {
  if (strcmp(key, "dtype") == 0) {
    char *dt = NULL;
    int rc = pb_json_string(r, &dt);
    if (!rc) snprintf(t->dtype, sizeof t->dtype, "%s", dt);
    if (!rc) t->type = strlen(dt) < sizeof t->dtype ? prt_st_dtype_find(dt) : NULL;
    free(dt);
    *have |= 1;
    return rc;
  }
  if (strcmp(key, "shape") == 0) {
    uint64_t d[PRT_ST_MAX_DIMS];
    if (prt_st_uints(r, d, PRT_ST_MAX_DIMS, &t->ndim)) return -1;
    for (int64_t k = 0; k < t->ndim; k++) t->dims[k] = (int64_t)d[k];
    *have |= 2;
    return 0;
  }
  if (strcmp(key, "data_offsets") == 0) {
    uint64_t o[2];
    int64_t n = 0;
    if (prt_st_uints(r, o, 2, &n)) return -1;
    if (n != 2) return pb_json_fail(r, "data_offsets needs 2 integers");
    t->begin = o[0];
    t->end = o[1];
    *have |= 4;
    return 0;
  }
  return pb_json_skip(r, 2); /* header object, tensor object, this value */
}

/* tensor -> '{' field { ',' field } '}' with fields "dtype", "shape", "data_offsets". */
static int prt_st_tensor(pb_json *r, prt_st_in *t) {
  int have = 0, more;
  if (pb_json_open(r, '{', &more)) return -1;
  while (more) {
    char *key;
    if (pb_json_key(r, &key)) return -1;
    int rc = prt_st_field(r, key, t, &have);
    free(key);
    if (rc || pb_json_next(r, '}', &more)) return -1;
  }
  if (have != 7)
    return pb_json_fail(r, "tensor '%.100s' lacks \"%s\"", t->name,
                        !(have & 1) ? "dtype" : !(have & 2) ? "shape" : "data_offsets");
  if (t->begin > t->end) return pb_json_fail(r, "data_offsets [begin, end] with begin > end");
  return 0;
}

/* metadata -> '{' [ string ':' value { ',' string ':' value } ] '}': "step" must be a string
 * of decimal digits and goes to *step; every other value, or metadata that is not an object,
 * is skipped. */
static int prt_st_metadata(pb_json *r, int64_t *step) {
  int more;
  if (pb_json_peek(r) != '{') return pb_json_skip(r, 1);
  if (pb_json_open(r, '{', &more)) return -1;
  while (more) {
    char *key, *v = NULL;
    if (pb_json_key(r, &key)) return -1;
    int rc = 0;
    if (strcmp(key, "step") == 0) {
      rc = pb_json_peek(r) == '"' ? pb_json_string(r, &v) : -1;
      size_t len = v ? strlen(v) : 0;
      if (!rc && len > 0 && len <= 18 && strspn(v, "0123456789") == len)
        *step = strtoll(v, NULL, 10);
      else
        rc = pb_json_fail(r, "__metadata__ \"step\" is not a string of decimal digits (the "
                             "number of completed steps)");
    } else {
      rc = pb_json_skip(r, 2);
    }
    free(key);
    free(v);
    if (rc || pb_json_next(r, '}', &more)) return -1;
  }
  return 0;
}

/* header -> '{' [ entry { ',' entry } ] '}' where entry is "__metadata__": metadata or
 * name: tensor. Appends to h (capacity *cap, grown by piperGrow). */
static int prt_st_header_read(pb_json *r, prt_st_header *h, size_t *cap) {
  int more;
  if (pb_json_open(r, '{', &more)) return -1;
  while (more) {
    char *key;
    if (pb_json_key(r, &key)) return -1;
    if (strcmp(key, "__metadata__") == 0) {
      free(key);
      if (prt_st_metadata(r, &h->step)) return -1;
    } else {
      if (!piperGrow((void **)&h->ts, cap, (size_t)h->n + 1, sizeof *h->ts))
        prt_fatal("out of memory reading a safetensors header of %zu bytes", r->n);
      prt_st_in *t = &h->ts[h->n++];
      memset(t, 0, sizeof *t);
      t->name = key;
      if (prt_st_tensor(r, t)) return -1;
    }
    if (pb_json_next(r, '}', &more)) return -1;
  }
  if (!pb_json_at_end(r)) return pb_json_fail(r, "text after the header object");
  return 0;
}

static int prt_st_by_name(const void *a, const void *b) {
  return strcmp(((const prt_st_in *)a)->name, ((const prt_st_in *)b)->name);
}

/* Sorts by where the bytes start; empty tensors before a non-empty one at the same offset. */
static int prt_st_by_offset(const void *a, const void *b) {
  const prt_st_in *x = *(const prt_st_in *const *)a, *y = *(const prt_st_in *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return 0;
}

void prt_st_header_free(prt_st_header *h) {
  for (int64_t j = 0; h->ts && j < h->n; j++) free(h->ts[j].name);
  free(h->ts);
  *h = (prt_st_header){.step = -1};
}

const prt_st_in *prt_st_header_find(const prt_st_header *h, const char *name) {
  prt_st_in key = {.name = (char *)name};
  return h->n ? bsearch(&key, h->ts, (size_t)h->n, sizeof *h->ts, prt_st_by_name) : NULL;
}

/* The safetensors layout rule: sorted by offset, the tensors' byte ranges tile the data
 * section [0, data_bytes) exactly (the format refuses holes, which could hide a second file
 * in the buffer, and overlaps, where one write would change two tensors). */
static int prt_check_tiling(const prt_st_header *h, uint64_t data_bytes, const char *path,
                            prt_status *st) {
  const prt_st_in **by = prt_xmalloc((size_t)(h->n ? h->n : 1) * sizeof *by, "an index");
  for (int64_t j = 0; j < h->n; j++) by[j] = &h->ts[j];
  qsort(by, (size_t)h->n, sizeof *by, prt_st_by_offset);
  uint64_t at = 0;             /* bytes covered so far */
  const prt_st_in *prev = NULL; /* the tensor that ends at `at` */
  for (int64_t j = 0; j < h->n && !st->code; j++) {
    const prt_st_in *t = by[j];
    if (t->end > data_bytes)
      prt_fail(st, 1, "truncated checkpoint: tensor '%s' needs bytes [%llu, %llu) of the data "
               "section but the file holds %llu: %s; the file is incomplete (an interrupted "
               "copy?): re-create it", t->name, (unsigned long long)t->begin,
               (unsigned long long)t->end, (unsigned long long)data_bytes, path);
    else if (t->begin < at)
      prt_fail(st, 1, "bad checkpoint layout: tensor '%s' (data_offsets [%llu, %llu)) "
               "overlaps tensor '%s' ([%llu, %llu)): %s; safetensors tensors must not share "
               "bytes: the file is corrupt or crafted: re-create it", t->name,
               (unsigned long long)t->begin, (unsigned long long)t->end, prev->name,
               (unsigned long long)prev->begin, (unsigned long long)prev->end, path);
    else if (t->begin > at)
      prt_fail(st, 1, "bad checkpoint layout: bytes [%llu, %llu) of the data section belong "
               "to no tensor (the next, '%s', starts at %llu): %s; safetensors data must be "
               "contiguous: the file is corrupt or crafted: re-create it",
               (unsigned long long)at, (unsigned long long)t->begin, t->name,
               (unsigned long long)t->begin, path);
    at = t->end;
    prev = t;
  }
  if (!st->code && data_bytes != PRT_ST_SIZE_UNKNOWN && at != data_bytes)
    prt_fail(st, 1, "bad checkpoint layout: the data section has %llu bytes but its tensors "
             "cover %llu: %s; safetensors data must end with the last tensor: the file is "
             "corrupt or has something appended: re-create it", (unsigned long long)data_bytes,
             (unsigned long long)at, path);
  free(by);
  return st->code;
}

int prt_safetensors_parse(const uint8_t *bytes, uint64_t avail, uint64_t size,
                          const char *path, prt_st_header *h, prt_status *st) {
  *h = (prt_st_header){.step = -1};
  uint64_t hlen = 0;
  if (size < 8 || avail < 8)
    return prt_fail(st, 1, "truncated checkpoint: %s has %llu bytes, fewer than the 8-byte "
                    "header length; re-create the file", path, (unsigned long long)size);
  memcpy(&hlen, bytes, 8); /* little-endian host, checked in prt_internal.h */
  if (hlen > PRT_MAX_HEADER || hlen > size - 8)
    return prt_fail(st, 1, "bad checkpoint header: %s says its header has %llu bytes but the "
                    "file has %llu in all%s; the file is truncated or not safetensors", path,
                    (unsigned long long)hlen, (unsigned long long)size,
                    hlen > PRT_MAX_HEADER ? " (the limit is 100 MB)" : "");
  if (avail - 8 < hlen)
    return prt_fail(st, 1, "cannot read checkpoint header: %s; check the file", path);
  pb_json r;
  pb_json_init(&r, (const char *)bytes + 8, (size_t)hlen);
  size_t cap = 0;
  if (prt_st_header_read(&r, h, &cap)) {
    prt_fail(st, 1, "bad checkpoint header (%.200s at header byte %zu): %s; the file is "
             "corrupt or not safetensors", r.err, r.err_offset, path);
    prt_st_header_free(h);
    return st->code;
  }
  if (h->n > 1) qsort(h->ts, (size_t)h->n, sizeof *h->ts, prt_st_by_name); /* ts is NULL when n is 0 */
  for (int64_t j = 1; j < h->n && !st->code; j++)
    if (strcmp(h->ts[j - 1].name, h->ts[j].name) == 0)
      prt_fail(st, 1, "checkpoint names tensor '%s' twice: %s; the file is corrupt; pass a "
               "checkpoint saved by --save-checkpoint", h->ts[j].name, path);
  if (!st->code)
    prt_check_tiling(h, size == PRT_ST_SIZE_UNKNOWN ? PRT_ST_SIZE_UNKNOWN : size - 8 - hlen,
                     path, st);
  if (st->code) prt_st_header_free(h);
  return st->code;
}


int prt_safetensors_read_header(FILE *f, uint64_t size, const char *path, prt_st_header *h,
                                uint64_t *data_start, prt_status *st) {
  uint8_t *head = NULL;
  uint64_t hlen = 0;
  /* Read the length, then exactly the header it announces (bounded by the file's size and
   * 100 MB inside prt_safetensors_parse before anything that large is allocated). */
  if (size >= 8 && fread(&hlen, 8, 1, f) == 1 && hlen <= PRT_MAX_HEADER && hlen <= size - 8) {
    head = prt_xmalloc(8 + hlen, "a checkpoint header");
    memcpy(head, &hlen, 8);
    if (fread(head + 8, 1, hlen, f) != hlen) {
      free(head);
      *h = (prt_st_header){.step = -1};
      return prt_fail(st, 1, "cannot read checkpoint header: %s; check the file", path);
    }
  } else {
    head = prt_xmalloc(8, "a checkpoint header");
    memcpy(head, &hlen, 8);
    hlen = 0;
  }
  prt_safetensors_parse(head, 8 + hlen, size, path, h, st);
  free(head);
  *data_start = 8 + hlen;
  return st->code;
}

int prt_safetensors_read(FILE *f, uint64_t data_start, const prt_st_in *e, uint64_t first,
                         float *dst, size_t count) {
  const prt_st_dtype *dt = e->type;
  if (!dt) return -1; /* prt_check_entry refuses such a tensor before anything is read */
  off_t at = (off_t)(data_start + e->begin + dt->size * first);
  if (fseeko(f, at, SEEK_SET) != 0) return -1;
  if (dt->load == prt_f32_load) return fread(dst, 4, count, f) == count ? 0 : -1;
  uint8_t buf[PRT_ST_CHUNK * 4];
  for (size_t i = 0; i < count; i += PRT_ST_CHUNK) {
    size_t k = count - i < PRT_ST_CHUNK ? count - i : PRT_ST_CHUNK;
    if (fread(buf, dt->size, k, f) != k) return -1;
    dt->load(buf, dst + i, k);
  }
  return 0;
}
