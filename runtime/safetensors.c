/* Checkpoints and gradient dumps in the safetensors format:
 *
 *   u64 little-endian header length n | n bytes of JSON header | raw little-endian data
 *   header: {"__metadata__": {"format": "pt", "step": "<completed steps>"},
 *            "<name>": {"dtype": "F32", "shape": [d0, ...], "data_offsets": [begin, end]},
 *            ...}
 *
 * with offsets relative to the start of the data section. We write tensors contiguously in
 * declaration order and pad the header with spaces to a multiple of 8 bytes, as the
 * reference implementation does. The reader is a small JSON parser that understands what
 * safetensors headers hold (objects, arrays, strings, non-negative integers) and skips any
 * other value it meets (unknown fields and metadata other than "step").
 *
 * A checkpoint holds the parameters and, to resume exactly, the optimizer state (AdamW's
 * moments, "optim.<slot>.<param>", full tensors whatever the layout that saved them) and the
 * number of completed steps, which is AdamW's step count and the data loader's position.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "piper/checked.h"
#include "prt_internal.h"

#define PRT_MAX_HEADER (100u << 20) /* bytes; safetensors' own limit */
#define PRT_ST_MAX_DIMS 8           /* dims we accept in a file's shape */
#define PRT_JSON_DEPTH 64           /* nesting we accept in skipped values */

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

/* A JSON string literal for s, escaping quotes, backslashes and control bytes. */
static void prt_buf_json_string(prt_buf *b, const char *s) {
  prt_buf_put(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') {
      char e[2] = {'\\', (char)*p};
      prt_buf_put(b, e, 2);
    } else if (*p < 0x20) {
      prt_buf_printf(b, "\\u%04x", *p);
    } else {
      prt_buf_put(b, (const char *)p, 1);
    }
  }
  prt_buf_put(b, "\"", 1);
}

/* "[768, 3072]" for error messages. */
static void prt_shape_str(char *out, size_t cap, int64_t ndim, const int64_t *dims) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int64_t i = 0; i < ndim && k < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

/* ---- writing ---- */

/* fsync the directory holding `path`, so the rename itself is durable. Best effort. */
static void prt_sync_dir(const char *path) {
  char *copy = strdup(path);
  if (!copy) return;
  int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  free(copy);
}

/* write(2) until all n bytes are out; 0 on an error (errno says which). */
static int prt_write_all(int fd, const void *buf, size_t n) {
  const char *p = buf;
  while (n) {
    ssize_t k = write(fd, p, n < ((size_t)1 << 30) ? n : (size_t)1 << 30);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return 0;
    p += k;
    n -= (size_t)k;
  }
  return 1;
}

int prt_safetensors_write(const char *path, const prt_st_entry *entries, int64_t n,
                          int64_t step, prt_status *st) {
  prt_buf h = {0};
  prt_buf_str(&h, "{\"__metadata__\":{\"format\":\"pt\"");
  if (step >= 0) prt_buf_printf(&h, ",\"step\":\"%lld\"", (long long)step);
  prt_buf_put(&h, "}", 1);
  uint64_t offset = 0;
  for (int64_t i = 0; i < n; i++) {
    const prt_st_entry *e = &entries[i];
    uint64_t numel = 1;
    prt_buf_put(&h, ",", 1);
    prt_buf_json_string(&h, e->name);
    prt_buf_str(&h, ":{\"dtype\":\"F32\",\"shape\":[");
    for (int64_t k = 0; k < e->ndim; k++) {
      prt_buf_printf(&h, "%s%lld", k ? "," : "", (long long)e->dims[k]);
      numel *= (uint64_t)e->dims[k];
    }
    prt_buf_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                   (unsigned long long)(offset + 4 * numel));
    offset += 4 * numel;
  }
  prt_buf_put(&h, "}", 1);
  while ((8 + h.len) % 8) prt_buf_put(&h, " ", 1);

  prt_temp t;
  if (prt_temp_create(path, &t, st)) {
    free(h.p);
    return st->code;
  }
  const char *action = "write";
  uint64_t hlen = h.len; /* little-endian host, checked in prt_internal.h */
  int ok = prt_write_all(t.fd, &hlen, 8) && prt_write_all(t.fd, h.p, h.len);
  for (int64_t i = 0; ok && i < n; i++) {
    size_t numel = 1;
    for (int64_t k = 0; k < entries[i].ndim; k++) numel *= (size_t)entries[i].dims[k];
    ok = prt_write_all(t.fd, entries[i].data, 4 * numel);
  }
  if (ok) action = "fsync";
  ok = ok && fsync(t.fd) == 0;
  int e = errno;
  free(h.p);
  if (!ok) {
    prt_temp_discard(&t);
    return prt_fail(st, 1, "cannot %s %s: %s; check the directory is writable and has space",
                    action, path, strerror(e));
  }
  if (prt_temp_commit(&t, path, st)) return st->code;
  prt_sync_dir(path);
  return 0;
}

/* Assembles full tensors on rank 0 (values or gradients) and writes them there. */
static int prt_save_assembled(prt_ctx *ctx, int grads, int with_optim, int64_t step,
                              const char *path, prt_status *st) {
  prt_assembly as;
  if (prt_catalog_assemble(ctx, grads, with_optim, path, &as, st)) return st->code;
  if (ctx->rank == 0) prt_safetensors_write(path, as.entries, as.n, step, st);
  prt_assembly_free(&as);
  return st->code;
}

int prt_checkpoint_save(prt_ctx *ctx, const char *path, int64_t step, prt_status *st) {
  if (prt_catalog_build(ctx, st)) return st->code;
  const char *problem = prt_catalog_optim_problem(ctx);
  if (problem && ctx->rank == 0) {
    fprintf(stderr, "piper: warning: %s: %s holds parameters only (no optimizer state); a "
            "run resumed from it restarts AdamW; recompile the plan with a current "
            "piper-compile to checkpoint optimizer state\n", problem, path);
    fflush(stderr);
  }
  return prt_save_assembled(ctx, 0, !problem, step, path, st);
}

int prt_grads_save(prt_ctx *ctx, const char *path, prt_status *st) {
  return prt_save_assembled(ctx, 1, 0, -1, path, st);
}

/* ---- reading: a JSON reader for safetensors headers ---- */

typedef struct prt_jr {
  const char *s; /* borrowed header text, not NUL-terminated */
  size_t n;      /* bytes in s */
  size_t i;      /* cursor */
  char err[240]; /* what went wrong when a function returned -1 */
} prt_jr;

static int prt_jr_fail(prt_jr *r, const char *what) {
  snprintf(r->err, sizeof r->err, "%.200s at header byte %zu", what, r->i);
  return -1;
}

static void prt_jr_ws(prt_jr *r) {
  while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' ||
                         r->s[r->i] == '\r'))
    r->i++;
}

/* Skips whitespace; returns the next byte without consuming it, or 0 at the end. */
static char prt_jr_peek(prt_jr *r) {
  prt_jr_ws(r);
  return r->i < r->n ? r->s[r->i] : 0;
}

static int prt_jr_expect(prt_jr *r, char c) {
  if (prt_jr_peek(r) != c) {
    char what[32];
    snprintf(what, sizeof what, "expected '%c'", c);
    return prt_jr_fail(r, what);
  }
  r->i++;
  return 0;
}

static int prt_jr_hex4(prt_jr *r, unsigned *out) {
  if (r->n - r->i < 4) return prt_jr_fail(r, "truncated \\u escape");
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    char c = r->s[r->i++];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return prt_jr_fail(r, "bad hex digit in \\u escape");
  }
  *out = v;
  return 0;
}

/* string -> '"' { char | escape } '"'; *out (if out) gets an owned, decoded UTF-8 copy. */
static int prt_jr_string(prt_jr *r, char **out) {
  if (prt_jr_expect(r, '"')) return -1;
  /* Decoded text is never longer than the escaped text, so the bytes up to the closing quote
   * bound it; sizing by them (not by the rest of the header) keeps memory proportional to the
   * file: a 100,000-name header must not cost 100,000 pages. */
  size_t end = r->i;
  while (end < r->n && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  char *o = out ? prt_xmalloc((end < r->n ? end : r->n) - r->i + 1, "a header string") : NULL;
  size_t k = 0;
  for (;;) {
    if (r->i >= r->n) {
      free(o);
      return prt_jr_fail(r, "unterminated string");
    }
    unsigned char c = (unsigned char)r->s[r->i++];
    if (c == '"') break;
    if (c < 0x20) {
      free(o);
      return prt_jr_fail(r, "control byte in string");
    }
    if (c != '\\') {
      if (o) o[k++] = (char)c;
      continue;
    }
    if (r->i >= r->n) {
      free(o);
      return prt_jr_fail(r, "unterminated string");
    }
    char e = r->s[r->i++];
    unsigned cp = 0;
    switch (e) {
    case '"': cp = '"'; break;
    case '\\': cp = '\\'; break;
    case '/': cp = '/'; break;
    case 'b': cp = '\b'; break;
    case 'f': cp = '\f'; break;
    case 'n': cp = '\n'; break;
    case 'r': cp = '\r'; break;
    case 't': cp = '\t'; break;
    case 'u':
      if (prt_jr_hex4(r, &cp)) {
        free(o);
        return -1;
      }
      if (cp >= 0xD800 && cp < 0xDC00) { /* high surrogate: a low one must follow */
        unsigned lo;
        if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u') {
          free(o);
          return prt_jr_fail(r, "unpaired surrogate in \\u escape");
        }
        r->i += 2;
        if (prt_jr_hex4(r, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
          free(o);
          return prt_jr_fail(r, "unpaired surrogate in \\u escape");
        }
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      } else if (cp >= 0xDC00 && cp < 0xE000) {
        free(o);
        return prt_jr_fail(r, "unpaired surrogate in \\u escape");
      }
      if (cp == 0) {
        free(o);
        return prt_jr_fail(r, "\\u0000 in string");
      }
      break;
    default:
      free(o);
      return prt_jr_fail(r, "bad escape in string");
    }
    if (!o) continue;
    if (cp < 0x80) {
      o[k++] = (char)cp;
    } else if (cp < 0x800) {
      o[k++] = (char)(0xC0 | (cp >> 6));
      o[k++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      o[k++] = (char)(0xE0 | (cp >> 12));
      o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
      o[k++] = (char)(0x80 | (cp & 0x3F));
    } else {
      o[k++] = (char)(0xF0 | (cp >> 18));
      o[k++] = (char)(0x80 | ((cp >> 12) & 0x3F));
      o[k++] = (char)(0x80 | ((cp >> 6) & 0x3F));
      o[k++] = (char)(0x80 | (cp & 0x3F));
    }
  }
  if (o) {
    o[k] = 0;
    *out = o;
  }
  return 0;
}

/* uint -> digit { digit }, fitting in 63 bits (no sign, fraction or exponent). */
static int prt_jr_uint(prt_jr *r, uint64_t *out) {
  char c = prt_jr_peek(r);
  if (c < '0' || c > '9') return prt_jr_fail(r, "expected a non-negative integer");
  uint64_t v = 0;
  while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
    v = v * 10 + (uint64_t)(r->s[r->i++] - '0');
    if (v > (uint64_t)INT64_MAX / 10) return prt_jr_fail(r, "integer too large");
  }
  if (r->i < r->n && (r->s[r->i] == '.' || r->s[r->i] == 'e' || r->s[r->i] == 'E'))
    return prt_jr_fail(r, "expected an integer, found a fraction");
  *out = v;
  return 0;
}

/* value -> string | number | object | array | true | false | null, skipped. */
static int prt_jr_skip(prt_jr *r, int depth) {
  if (depth > PRT_JSON_DEPTH) return prt_jr_fail(r, "nesting too deep");
  char c = prt_jr_peek(r);
  if (c == '"') return prt_jr_string(r, NULL);
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    r->i++;
    if (prt_jr_peek(r) == close) {
      r->i++;
      return 0;
    }
    for (;;) {
      if (c == '{' && (prt_jr_string(r, NULL) || prt_jr_expect(r, ':'))) return -1;
      if (prt_jr_skip(r, depth + 1)) return -1;
      char d = prt_jr_peek(r);
      r->i++;
      if (d == close) return 0;
      if (d != ',') {
        r->i--;
        return prt_jr_fail(r, c == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
      }
    }
  }
  static const char *const words[] = {"true", "false", "null"};
  for (int k = 0; k < 3; k++) {
    size_t len = strlen(words[k]);
    if (r->n - r->i >= len && memcmp(r->s + r->i, words[k], len) == 0) {
      r->i += len;
      return 0;
    }
  }
  if (c == '-' || (c >= '0' && c <= '9')) {
    size_t start = r->i;
    while (r->i < r->n && strchr("+-.eE0123456789", r->s[r->i])) r->i++;
    char *end;
    char tmp[64];
    size_t len = r->i - start < sizeof tmp - 1 ? r->i - start : sizeof tmp - 1;
    memcpy(tmp, r->s + start, len);
    tmp[len] = 0;
    strtod(tmp, &end);
    if (*end) return prt_jr_fail(r, "malformed number");
    return 0;
  }
  return prt_jr_fail(r, "expected a JSON value");
}

/* uints -> '[' [ uint { ',' uint } ] ']' into out[0..*n), at most cap of them. */
static int prt_jr_uints(prt_jr *r, uint64_t *out, int64_t cap, int64_t *n) {
  if (prt_jr_expect(r, '[')) return -1;
  *n = 0;
  if (prt_jr_peek(r) == ']') {
    r->i++;
    return 0;
  }
  for (;;) {
    if (*n == cap) return prt_jr_fail(r, "too many entries in an array");
    if (prt_jr_uint(r, &out[(*n)++])) return -1;
    char d = prt_jr_peek(r);
    if (d == ']') {
      r->i++;
      return 0;
    }
    if (d != ',') return prt_jr_fail(r, "expected ',' or ']'");
    r->i++;
  }
}

/* tensor -> '{' field { ',' field } '}' with fields "dtype", "shape", "data_offsets". */
static int prt_jr_tensor(prt_jr *r, prt_st_in *t) {
  int have_dtype = 0, have_shape = 0, have_offsets = 0;
  if (prt_jr_expect(r, '{')) return -1;
  if (prt_jr_peek(r) != '}') {
    for (;;) {
      char *key;
      if (prt_jr_string(r, &key)) return -1;
      int rc = prt_jr_expect(r, ':');
      if (!rc && strcmp(key, "dtype") == 0) {
        char *dt = NULL;
        rc = prt_jr_string(r, &dt);
        if (!rc) snprintf(t->dtype, sizeof t->dtype, "%s", dt);
        free(dt);
        have_dtype = 1;
      } else if (!rc && strcmp(key, "shape") == 0) {
        uint64_t d[PRT_ST_MAX_DIMS];
        rc = prt_jr_uints(r, d, PRT_ST_MAX_DIMS, &t->ndim);
        for (int64_t k = 0; !rc && k < t->ndim; k++) t->dims[k] = (int64_t)d[k];
        have_shape = 1;
      } else if (!rc && strcmp(key, "data_offsets") == 0) {
        uint64_t o[2];
        int64_t n = 0;
        rc = prt_jr_uints(r, o, 2, &n);
        if (!rc && n != 2) rc = prt_jr_fail(r, "data_offsets needs 2 integers");
        if (!rc) {
          t->begin = o[0];
          t->end = o[1];
        }
        have_offsets = 1;
      } else if (!rc) {
        rc = prt_jr_skip(r, 1);
      }
      free(key);
      if (rc) return -1;
      char d = prt_jr_peek(r);
      r->i++;
      if (d == '}') break;
      if (d != ',') {
        r->i--;
        return prt_jr_fail(r, "expected ',' or '}'");
      }
    }
  } else {
    r->i++;
  }
  if (!have_dtype || !have_shape || !have_offsets) {
    char what[200];
    snprintf(what, sizeof what, "tensor '%s' lacks \"%s\"", t->name,
             !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    return prt_jr_fail(r, what);
  }
  if (t->begin > t->end) return prt_jr_fail(r, "data_offsets [begin, end] with begin > end");
  return 0;
}

/* metadata -> '{' [ string ':' value { ',' string ':' value } ] '}': "step" must be a string
 * of decimal digits and goes to *step; every other value, or metadata that is not an object,
 * is skipped. */
static int prt_jr_metadata(prt_jr *r, int64_t *step) {
  if (prt_jr_peek(r) != '{') return prt_jr_skip(r, 1);
  r->i++;
  if (prt_jr_peek(r) == '}') {
    r->i++;
    return 0;
  }
  for (;;) {
    char *key, *v = NULL;
    if (prt_jr_string(r, &key)) return -1;
    int rc = prt_jr_expect(r, ':');
    if (!rc && strcmp(key, "step") == 0) {
      rc = prt_jr_peek(r) == '"' ? prt_jr_string(r, &v) : -1;
      size_t len = v ? strlen(v) : 0;
      if (!rc && len > 0 && len <= 18 && strspn(v, "0123456789") == len)
        *step = strtoll(v, NULL, 10);
      else
        rc = prt_jr_fail(r, "__metadata__ \"step\" is not a string of decimal digits (the "
                            "number of completed steps)");
    } else if (!rc) {
      rc = prt_jr_skip(r, 2);
    }
    free(key);
    free(v);
    if (rc) return -1;
    char d = prt_jr_peek(r);
    r->i++;
    if (d == '}') return 0;
    if (d != ',') {
      r->i--;
      return prt_jr_fail(r, "expected ',' or '}'");
    }
  }
}

/* header -> '{' [ entry { ',' entry } ] '}' where entry is "__metadata__": metadata or
 * name: tensor. Appends to *ts (owned array of *n, capacity *cap, grown by piperGrow);
 * *step gets the metadata's "step". */
static int prt_jr_header(prt_jr *r, prt_st_in **ts, int64_t *n, size_t *cap, int64_t *step) {
  if (prt_jr_expect(r, '{')) return -1;
  if (prt_jr_peek(r) == '}') {
    r->i++;
  } else {
    for (;;) {
      char *key;
      if (prt_jr_string(r, &key)) return -1;
      if (prt_jr_expect(r, ':')) {
        free(key);
        return -1;
      }
      if (strcmp(key, "__metadata__") == 0) {
        free(key);
        if (prt_jr_metadata(r, step)) return -1;
      } else {
        if (!piperGrow((void **)ts, cap, (size_t)*n + 1, sizeof **ts))
          prt_fatal("out of memory reading a safetensors header of %zu bytes", r->n);
        prt_st_in *t = &(*ts)[(*n)++];
        memset(t, 0, sizeof *t);
        t->name = key;
        if (prt_jr_tensor(r, t)) return -1;
      }
      char d = prt_jr_peek(r);
      r->i++;
      if (d == '}') break;
      if (d != ',') {
        r->i--;
        return prt_jr_fail(r, "expected ',' or '}'");
      }
    }
  }
  if (prt_jr_peek(r) != 0) return prt_jr_fail(r, "text after the header object");
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
  if (!st->code && at != data_bytes)
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
  prt_jr r = {(const char *)bytes + 8, (size_t)hlen, 0, {0}};
  size_t cap = 0;
  if (prt_jr_header(&r, &h->ts, &h->n, &cap, &h->step)) {
    prt_fail(st, 1, "bad checkpoint header (%s): %s; the file is corrupt or not safetensors",
             r.err, path);
    prt_st_header_free(h);
    return st->code;
  }
  if (h->n > 1) qsort(h->ts, (size_t)h->n, sizeof *h->ts, prt_st_by_name); /* ts is NULL when n is 0 */
  for (int64_t j = 1; j < h->n && !st->code; j++)
    if (strcmp(h->ts[j - 1].name, h->ts[j].name) == 0)
      prt_fail(st, 1, "checkpoint names tensor '%s' twice: %s; the file is corrupt; pass a "
               "checkpoint saved by --save-checkpoint", h->ts[j].name, path);
  if (!st->code) prt_check_tiling(h, size - 8 - hlen, path, st);
  if (st->code) prt_st_header_free(h);
  return st->code;
}

static int prt_has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Checks that file tensor e can fill local tensor t (F32, t's full shape, the bytes that
 * takes); `what` names t's kind in messages. */
static int prt_check_entry(const prt_tensor_info *t, const prt_st_in *e, const char *what,
                           const char *path, const char *fix, prt_status *st) {
  char want[128], got[128];
  prt_shape_str(want, sizeof want, t->ndim, t->dims);
  prt_shape_str(got, sizeof got, e->ndim, e->dims);
  if (strcmp(e->dtype, "F32") != 0)
    return prt_fail(st, 1, "%s '%s' has dtype %s in the checkpoint, expected F32: %s; %s",
                    what, t->name, e->dtype, path, fix);
  int same = e->ndim == t->ndim;
  for (int64_t k = 0; same && k < t->ndim; k++) same = e->dims[k] == t->dims[k];
  if (!same)
    return prt_fail(st, 1, "%s '%s' has shape %s in the checkpoint, expected %s: %s; %s",
                    what, t->name, got, want, path, fix);
  if (e->end - e->begin != (uint64_t)t->full_numel * 4)
    return prt_fail(st, 1, "%s '%s' spans %llu bytes in the checkpoint, but F32 %s needs "
                    "%llu: %s; the file is corrupt: re-create it", what, t->name,
                    (unsigned long long)(e->end - e->begin), want,
                    (unsigned long long)t->full_numel * 4, path);
  return 0;
}

/* Checks the header's tensors: each names a parameter or optimizer state of some rank (the
 * catalog) or "optim.*"; each local parameter is there with its full shape, and so is each
 * local optimizer-state tensor if the file holds any of the world's. Fills idx[id] with the
 * tensor to read into local tensor id (NULL: none) and info->optim. */
static int prt_check_tensors(const prt_ctx *ctx, const char *path, const prt_st_header *h,
                             const prt_st_in **idx, prt_ckpt_info *info, prt_status *st) {
  const char *fix = "pass a checkpoint saved by a binary of the same model "
                    "(--save-checkpoint)";
  int64_t ours = 0; /* tensors of the file that are optimizer state of this plan */
  for (int64_t j = 0; j < h->n; j++) {
    const prt_st_in *t = &h->ts[j];
    int32_t kind = prt_catalog_kind(ctx, t->name);
    ours += kind == PRT_OPTIM;
    if (kind < 0 && prt_has_prefix(t->name, "optim.")) info->foreign_optim = 1;
    else if (kind < 0) /* a tensor of no rank */
      return prt_fail(st, 1, "checkpoint has tensor '%s', which is not a parameter of this "
                      "model: %s; %s (optimizer tensors must be named \"optim.*\")",
                      t->name, path, fix);
  }
  if (ours) info->foreign_optim = 0;
  int load_optim = ours > 0 && !prt_catalog_optim_problem(ctx);
  info->optim_skipped = ours > 0 && !load_optim;
  char want[128];
  for (int64_t i = 0; i < ctx->ntensors; i++) idx[i] = NULL;
  for (int64_t k = 0; k < 2 * ctx->ntensors; k++) { /* parameters first, then the state */
    int64_t i = k % ctx->ntensors;
    const prt_tensor_info *t = &ctx->tensors[i];
    if (k < ctx->ntensors ? t->kind != PRT_PARAM : !(t->kind == PRT_OPTIM && load_optim))
      continue;
    const prt_st_in *e = prt_st_header_find(h, t->name);
    prt_shape_str(want, sizeof want, t->ndim, t->dims);
    if (!e && t->kind == PRT_PARAM)
      return prt_fail(st, 1, "checkpoint lacks parameter '%s' (F32 %s): %s; %s", t->name,
                      want, path, fix);
    if (!e)
      return prt_fail(st, 1, "checkpoint has optimizer state but lacks '%s' (F32 %s): %s; "
                      "pass a checkpoint with this model's whole optimizer state (saved by "
                      "--save-checkpoint) or with none (AdamW then starts fresh)", t->name,
                      want, path);
    if (prt_check_entry(t, e, t->kind == PRT_PARAM ? "parameter" : "optimizer state", path,
                        fix, st))
      return st->code;
    idx[i] = e;
  }
  info->optim = load_optim;
  return 0;
}

int prt_checkpoint_load(prt_ctx *ctx, const char *path, prt_ckpt_info *info, prt_status *st) {
  prt_ckpt_info mine;
  if (!info) info = &mine;
  *info = (prt_ckpt_info){.step = -1};
  if (prt_catalog_build(ctx, st)) return st->code; /* collective: before any local exit */
  FILE *f = fopen(path, "rb");
  if (!f)
    return prt_fail(st, 1, "cannot open checkpoint: %s: %s; pass an existing safetensors "
                    "file to --init-checkpoint", path, strerror(errno));
  struct stat sb;
  uint8_t *head = NULL;
  prt_st_header h = {.step = -1};
  const prt_st_in **idx = NULL;
  uint64_t hlen = 0, size = 0;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    prt_fail(st, 1, "checkpoint is not a regular file: %s; pass a safetensors file", path);
    goto done;
  }
  size = (uint64_t)sb.st_size;
  /* Read the length, then exactly the header it announces (bounded by the file's size and
   * 100 MB inside prt_safetensors_parse before anything that large is allocated). */
  if (size >= 8 && fread(&hlen, 8, 1, f) == 1 && hlen <= PRT_MAX_HEADER && hlen <= size - 8) {
    head = prt_xmalloc(8 + hlen, "a checkpoint header");
    memcpy(head, &hlen, 8);
    if (fread(head + 8, 1, hlen, f) != hlen) {
      prt_fail(st, 1, "cannot read checkpoint header: %s; check the file", path);
      goto done;
    }
  } else {
    head = prt_xmalloc(8, "a checkpoint header");
    memcpy(head, &hlen, 8);
    hlen = 0;
  }
  if (prt_safetensors_parse(head, 8 + hlen, size, path, &h, st)) goto done;
  idx = prt_xmalloc((size_t)(ctx->ntensors ? ctx->ntensors : 1) * sizeof *idx, "an index");
  if (prt_check_tensors(ctx, path, &h, idx, info, st)) goto done;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    if (!idx[i]) continue;
    prt_tensor_info *t = &ctx->tensors[i];
    /* Straight into storage on a host-visible device; else through a host buffer. Each
     * contiguous run of the full tensor (one for a whole tensor or a shard, one per block of a
     * tensor-parallel slice). */
    size_t bytes = (size_t)t->numel * 4;
    float *view = prt_host_view_begin(ctx->device, t->data, bytes, PRT_VIEW_WRITE, t->name);
    int ok = 1;
    for (int64_t j = 0, full, run; ok && j < t->numel; j += run) {
      run = prt_tensor_run(t, j, &full);
      off_t at = (off_t)(8 + hlen + idx[i]->begin + 4 * (uint64_t)full);
      ok = fseeko(f, at, SEEK_SET) == 0 && fread(view + j, 4, (size_t)run, f) == (size_t)run;
    }
    prt_host_view_end(ctx->device, t->data, view, bytes, ok ? PRT_VIEW_WRITE : 0, t->name);
    if (!ok) {
      prt_fail(st, 1, "cannot read %s '%s' from checkpoint: %s; the file changed or "
               "is unreadable", t->kind == PRT_PARAM ? "parameter" : "optimizer state",
               t->name, path);
      goto done;
    }
  }
  info->step = h.step;
done:
  if (st->code) info->optim = 0;
  prt_st_header_free(&h);
  free(idx);
  free(head);
  fclose(f);
  return st->code;
}
