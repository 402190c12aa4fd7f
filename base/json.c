/* JSON reader and string escaper (include/piper/base/json.h). */
#include "piper/base/json.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "piper/checked.h"

void pb_json_init(pb_json *r, const char *s, size_t n) {
  memset(r, 0, sizeof *r);
  r->s = s;
  r->n = n;
  r->line = 1;
}

pb_json_pos pb_json_here(const pb_json *r) {
  return (pb_json_pos){r->i, r->line, (int)(r->i - r->line_start + 1)};
}

static int pb_json_vfail(pb_json *r, pb_json_pos at, const char *fmt, va_list ap) {
  if (r->err[0]) return -1;
  vsnprintf(r->err, sizeof r->err, fmt, ap);
  if (!r->err[0]) snprintf(r->err, sizeof r->err, "error"); /* never record an empty one */
  r->err_offset = at.offset;
  r->err_line = at.line;
  r->err_col = at.col;
  return -1;
}

int pb_json_fail(pb_json *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pb_json_vfail(r, pb_json_here(r), fmt, ap);
  va_end(ap);
  return -1;
}

int pb_json_fail_at(pb_json *r, pb_json_pos at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  pb_json_vfail(r, at, fmt, ap);
  va_end(ap);
  return -1;
}

/* Newlines occur only in whitespace (a string refuses control bytes), so this is the one
 * place that counts lines. */
static void pb_json_ws(pb_json *r) {
  for (; r->i < r->n; r->i++) {
    char c = r->s[r->i];
    if (c == '\n') {
      r->line++;
      r->line_start = r->i + 1;
    } else if (c != ' ' && c != '\t' && c != '\r') {
      return;
    }
  }
}

int pb_json_peek(pb_json *r) {
  pb_json_ws(r);
  return r->i < r->n ? (unsigned char)r->s[r->i] : PB_JSON_END;
}

int pb_json_at_end(pb_json *r) { return pb_json_peek(r) == PB_JSON_END; }

/* ---- containers ---- */

int pb_json_open(pb_json *r, char open, int *more) {
  if (pb_json_peek(r) != open) return pb_json_fail(r, "expected '%c'", open);
  r->i++;
  char close = open == '{' ? '}' : ']';
  *more = pb_json_peek(r) != close;
  if (!*more) r->i++;
  return 0;
}

int pb_json_next(pb_json *r, char close, int *more) {
  int c = pb_json_peek(r);
  if (c != ',' && c != close)
    return pb_json_fail(r, close == '}' ? "expected ',' or '}' in object"
                                        : "expected ',' or ']' in list");
  r->i++;
  *more = c == ',';
  return 0;
}

int pb_json_key(pb_json *r, char **key) {
  if (pb_json_peek(r) != '"') return pb_json_fail(r, "expected a \"key\" in object");
  char *k = NULL;
  if (pb_json_string(r, key ? &k : NULL)) return -1;
  if (pb_json_peek(r) != ':') {
    free(k);
    return pb_json_fail(r, "expected ':' after key");
  }
  r->i++;
  if (key) *key = k;
  return 0;
}

/* ---- strings ---- */

static int pb_json_hex4(pb_json *r, unsigned *out) {
  if (r->n - r->i < 4) return pb_json_fail(r, "truncated \\u escape");
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    char c = r->s[r->i];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return pb_json_fail(r, "bad hex digit in \\u escape");
    r->i++;
  }
  *out = v;
  return 0;
}

/* escape -> '\' ( '"' | '\' | '/' | 'b' | 'f' | 'n' | 'r' | 't' | 'u' hex4 [ '\u' hex4 ] ),
 * the cursor past the backslash; *cp gets the code point. */
static int pb_json_escape(pb_json *r, unsigned *cp) {
  static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
  if (r->i >= r->n) return pb_json_fail(r, "unterminated string");
  char e = r->s[r->i];
  const char *hit = e ? strchr(from, e) : NULL;
  if (hit) {
    r->i++;
    *cp = (unsigned char)to[hit - from];
    return 0;
  }
  if (e != 'u')
    return pb_json_fail(r, "bad escape in string: JSON has \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                           "and \\uXXXX");
  r->i++;
  if (pb_json_hex4(r, cp)) return -1;
  if (*cp >= 0xD800 && *cp < 0xDC00) { /* a high surrogate: a low one must follow */
    unsigned lo;
    if (r->n - r->i < 2 || r->s[r->i] != '\\' || r->s[r->i + 1] != 'u')
      return pb_json_fail(r, "unpaired surrogate in \\u escape");
    r->i += 2;
    if (pb_json_hex4(r, &lo)) return -1;
    if (lo < 0xDC00 || lo > 0xDFFF) return pb_json_fail(r, "unpaired surrogate in \\u escape");
    *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (*cp >= 0xDC00 && *cp < 0xE000) {
    return pb_json_fail(r, "unpaired surrogate in \\u escape");
  }
  if (*cp == 0) return pb_json_fail(r, "\\u0000 in string (strings end at a NUL byte)");
  return 0;
}

/* Appends code point cp as UTF-8 at o + *k. */
static void pb_json_utf8(char *o, size_t *k, unsigned cp) {
  if (cp < 0x80) {
    o[(*k)++] = (char)cp;
  } else if (cp < 0x800) {
    o[(*k)++] = (char)(0xC0 | (cp >> 6));
    o[(*k)++] = (char)(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    o[(*k)++] = (char)(0xE0 | (cp >> 12));
    o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[(*k)++] = (char)(0x80 | (cp & 0x3F));
  } else {
    o[(*k)++] = (char)(0xF0 | (cp >> 18));
    o[(*k)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[(*k)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[(*k)++] = (char)(0x80 | (cp & 0x3F));
  }
}

int pb_json_string(pb_json *r, char **out) {
  if (pb_json_peek(r) != '"') return pb_json_fail(r, "expected a string");
  r->i++;
  /* Decoded text is never longer than the escaped text (\uXXXX is 6 bytes for at most 3 of
   * UTF-8, a surrogate pair 12 for 4), so the bytes up to the closing quote bound it: memory
   * stays proportional to what the string holds, not to the rest of the text. */
  size_t end = r->i;
  while (end < r->n && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  char *o = NULL;
  if (out && !(o = malloc((end < r->n ? end : r->n) - r->i + 1)))
    return pb_json_fail(r, "out of memory reading a string of %zu bytes", end - r->i);
  size_t k = 0;
  for (;;) {
    if (r->i >= r->n) {
      free(o);
      return pb_json_fail(r, "unterminated string");
    }
    unsigned char c = (unsigned char)r->s[r->i];
    if (c == '"') break;
    if (c < 0x20) {
      free(o);
      return pb_json_fail(r, "control character inside a string");
    }
    r->i++;
    unsigned cp = c;
    if (c == '\\' && pb_json_escape(r, &cp)) {
      free(o);
      return -1;
    }
    if (o && c == '\\') pb_json_utf8(o, &k, cp);
    else if (o) o[k++] = (char)c;
  }
  r->i++; /* the closing quote */
  if (o) {
    o[k] = 0;
    *out = o;
  }
  return 0;
}

/* ---- numbers and literals ---- */

static int pb_json_digit(const pb_json *r, size_t at) {
  return at < r->n && r->s[at] >= '0' && r->s[at] <= '9';
}

/* number -> [ '-' ] ( '0' | digit1-9 { digit } ) [ '.' digit { digit } ]
 *           [ ( 'e' | 'E' ) [ '+' | '-' ] digit { digit } ]
 * The length of the number at the cursor, 0 if there is none; *integral: no '.' or exponent.
 * A number that runs on into more number-like bytes ("0x10", "01", "1.5.2", "-inf") is not
 * one: JSON has no such token, and reading "0" of "0x10" would report the wrong problem. */
static size_t pb_json_number_len(const pb_json *r, int *integral) {
  size_t at = r->i;
  *integral = 1;
  if (at < r->n && r->s[at] == '-') at++;
  if (!pb_json_digit(r, at)) return 0;
  if (r->s[at] == '0') at++;
  else
    while (pb_json_digit(r, at)) at++;
  if (at < r->n && r->s[at] == '.') {
    *integral = 0;
    if (!pb_json_digit(r, ++at)) return 0;
    while (pb_json_digit(r, at)) at++;
  }
  if (at < r->n && (r->s[at] == 'e' || r->s[at] == 'E')) {
    *integral = 0;
    at++;
    if (at < r->n && (r->s[at] == '+' || r->s[at] == '-')) at++;
    if (!pb_json_digit(r, at)) return 0;
    while (pb_json_digit(r, at)) at++;
  }
  char c = at < r->n ? r->s[at] : ' ';
  if ((c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c == '+' ||
      c == '-' || c == '.')
    return 0;
  return at - r->i;
}

int pb_json_number(pb_json *r, double *value, int *integral) {
  int whole;
  pb_json_ws(r);
  size_t len = pb_json_number_len(r, &whole);
  if (!len) return pb_json_fail(r, "not a JSON number (decimal digits only)");
  /* strtod needs a NUL after the number, which the text need not have */
  char small[64], *copy = len < sizeof small ? small : malloc(len + 1);
  if (!copy) return pb_json_fail(r, "out of memory reading a number of %zu bytes", len);
  memcpy(copy, r->s + r->i, len);
  copy[len] = 0;
  *value = strtod(copy, NULL);
  if (copy != small) free(copy);
  if (integral) *integral = whole;
  r->i += len;
  return 0;
}

int pb_json_uint(pb_json *r, uint64_t *out) {
  int c = pb_json_peek(r), whole;
  if (c < '0' || c > '9') return pb_json_fail(r, "expected a non-negative integer");
  size_t len = pb_json_number_len(r, &whole);
  if (!len) return pb_json_fail(r, "not a JSON number (decimal digits only)");
  if (!whole) return pb_json_fail(r, "expected an integer, found a fraction");
  uint64_t v = 0;
  for (size_t k = 0; k < len; k++) {
    unsigned d = (unsigned)(r->s[r->i + k] - '0');
    if (v > ((uint64_t)INT64_MAX - d) / 10) return pb_json_fail(r, "integer too large");
    v = v * 10 + d;
  }
  r->i += len;
  *out = v;
  return 0;
}

int pb_json_literal(pb_json *r, int *kind, int *boolean) {
  static const struct { const char *word; int kind, value; } words[] = {
      {"true", PB_JSON_BOOL, 1}, {"false", PB_JSON_BOOL, 0}, {"null", PB_JSON_NULL, 0}};
  pb_json_ws(r);
  for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
    size_t len = strlen(words[k].word);
    if (r->n - r->i >= len && !memcmp(r->s + r->i, words[k].word, len)) {
      r->i += len;
      *kind = words[k].kind;
      if (boolean) *boolean = words[k].value;
      return 0;
    }
  }
  return pb_json_fail(r, r->i < r->n ? "unexpected character; expected a JSON value"
                                     : "unexpected end of file");
}

/* ---- any value ---- */

static int pb_json_depth_ok(pb_json *r, int depth) {
  if (depth <= PB_JSON_MAX_DEPTH) return 0;
  return pb_json_fail(r, "nesting deeper than %d levels", PB_JSON_MAX_DEPTH);
}

int pb_json_skip(pb_json *r, int depth) {
  int c = pb_json_peek(r), more, kind;
  if (pb_json_depth_ok(r, depth)) return -1;
  if (c == '"') return pb_json_string(r, NULL);
  if (c == '-' || (c >= '0' && c <= '9')) {
    double ignored;
    return pb_json_number(r, &ignored, NULL);
  }
  if (c != '{' && c != '[') return pb_json_literal(r, &kind, NULL);
  char close = c == '{' ? '}' : ']';
  if (pb_json_open(r, (char)c, &more)) return -1;
  while (more) {
    if (c == '{' && pb_json_key(r, NULL)) return -1;
    if (pb_json_skip(r, depth + 1) || pb_json_next(r, close, &more)) return -1;
  }
  return 0;
}

/* ---- the tree ---- */

void pb_json_free(pb_json_value *v) {
  if (!v) return;
  for (intptr_t i = 0; i < v->n; ++i) {
    pb_json_free(v->items[i]);
    if (v->keys) free(v->keys[i]);
  }
  free(v->items);
  free(v->keys);
  free(v->string);
  free(v);
}

const pb_json_value *pb_json_get(const pb_json_value *v, const char *key) {
  for (intptr_t i = 0; v->kind == PB_JSON_OBJECT && i < v->n; ++i)
    if (!strcmp(v->keys[i], key)) return v->items[i];
  return NULL;
}

static pb_json_value *pb_json_node(pb_json *r, pb_json_kind kind) {
  pb_json_value *v = calloc(1, sizeof *v);
  if (!v) {
    pb_json_fail(r, "out of memory");
    return NULL;
  }
  v->kind = kind;
  v->pos = pb_json_here(r);
  return v;
}

/* Appends item (and, in an object, key: both then owned by v); false if memory runs out. */
static int pb_json_append(pb_json_value *v, size_t *cap, char *key, pb_json_value *item) {
  size_t itemsCap = *cap, keysCap = *cap;
  if (!piperGrow((void **)&v->items, &itemsCap, (size_t)v->n + 1, sizeof *v->items) ||
      (v->kind == PB_JSON_OBJECT &&
       !piperGrow((void **)&v->keys, &keysCap, (size_t)v->n + 1, sizeof *v->keys)))
    return 0;
  *cap = itemsCap;
  if (v->kind == PB_JSON_OBJECT) v->keys[v->n] = key;
  v->items[v->n++] = item;
  return 1;
}

static pb_json_value *pb_json_tree(pb_json *r, int flags, int depth);

/* An object's key, refused (at the key) when PB_JSON_UNIQUE_KEYS and v has it already. */
static int pb_json_member_key(pb_json *r, int flags, const pb_json_value *v, char **key) {
  pb_json_peek(r);
  pb_json_pos at = pb_json_here(r);
  if (pb_json_key(r, key)) return -1;
  if (!(flags & PB_JSON_UNIQUE_KEYS) || !pb_json_get(v, *key)) return 0;
  pb_json_fail_at(r, at, "duplicate key \"%.100s\" in object: JSON leaves which one counts "
                         "open; give each key once", *key);
  free(*key);
  return -1;
}

static pb_json_value *pb_json_container(pb_json *r, int flags, int depth, char open) {
  pb_json_value *v = pb_json_node(r, open == '{' ? PB_JSON_OBJECT : PB_JSON_ARRAY);
  size_t cap = 0;
  int more;
  if (!v || pb_json_open(r, open, &more)) goto fail;
  while (more) {
    char *key = NULL;
    if (open == '{' && pb_json_member_key(r, flags, v, &key)) goto fail;
    pb_json_value *item = pb_json_tree(r, flags, depth + 1);
    if (!item || !pb_json_append(v, &cap, key, item)) {
      if (item) pb_json_fail(r, "out of memory");
      pb_json_free(item);
      free(key);
      goto fail;
    }
    if (pb_json_next(r, open == '{' ? '}' : ']', &more)) goto fail;
  }
  return v;
fail:
  pb_json_free(v);
  return NULL;
}

static pb_json_value *pb_json_tree(pb_json *r, int flags, int depth) {
  int c = pb_json_peek(r);
  if (pb_json_depth_ok(r, depth)) return NULL;
  if (c == '{' || c == '[') return pb_json_container(r, flags, depth, (char)c);
  pb_json_value *v = pb_json_node(r, PB_JSON_NULL);
  int rc = -1, kind = PB_JSON_NULL;
  if (!v) return NULL;
  if (c == '"') {
    v->kind = PB_JSON_STRING;
    rc = pb_json_string(r, &v->string);
  } else if (c == '-' || (c >= '0' && c <= '9')) {
    v->kind = PB_JSON_NUMBER;
    rc = pb_json_number(r, &v->number, &v->integral);
  } else {
    rc = pb_json_literal(r, &kind, &v->boolean);
    v->kind = (pb_json_kind)kind;
  }
  if (!rc) return v;
  pb_json_free(v);
  return NULL;
}

pb_json_value *pb_json_parse_value(pb_json *r, int flags) { return pb_json_tree(r, flags, 0); }

/* ---- writing ---- */

void pb_json_quote(const char *s, pb_json_sink *put, void *target) {
  put(target, "\"", 1);
  const char *run = s; /* bytes that need no escape, written in one piece */
  for (const char *p = s; *p; p++) {
    unsigned char c = (unsigned char)*p;
    if (c != '"' && c != '\\' && c >= 0x20) continue;
    put(target, run, (size_t)(p - run));
    char e[8];
    if (c < 0x20) snprintf(e, sizeof e, "\\u%04x", c);
    else snprintf(e, sizeof e, "\\%c", c);
    put(target, e, strlen(e));
    run = p + 1;
  }
  put(target, run, strlen(run));
  put(target, "\"", 1);
}

void pb_json_sink_file(void *file, const char *bytes, size_t n) {
  fwrite(bytes, 1, n, (FILE *)file);
}
