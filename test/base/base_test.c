/* Checks libpiper_base on its own (it links nothing else): the JSON reader on good and bad
 * text (values, positions, the first error and its place), the escaper against the reader,
 * the ZeRO shard geometry, atomic file output and the checkpoint ring's names. Each check prints "@name", then "ok" or
 * one "FAIL: <first cause>" line; main returns the number of failed checks (check.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "piper/base/atomic_file.h"
#include "piper/base/json.h"
#include "piper/base/ring.h"
#include "piper/base/shard.h"

/* ---- JSON ---- */

/* Parses the whole of text (n bytes) as one value with `flags`; NULL on an error, which r
 * then holds. Text after the value is an error too. */
static pb_json_value *parse_all(pb_json *r, const char *text, size_t n, int flags) {
  pb_json_init(r, text, n);
  pb_json_value *v = pb_json_parse_value(r, flags);
  if (v && !pb_json_at_end(r)) {
    pb_json_free(v);
    pb_json_fail(r, "text after the value");
    return NULL;
  }
  return v;
}

static void test_json_tree(void) {
  begin("json_tree_values_and_positions");
  const char *text = "{\n  \"a\": [1, -2.5e1, true, null],\n\t\"b\": {\"c\": \"x\\u00e9\"},\n"
                     "  \"d\": false\n}\n";
  pb_json r;
  pb_json_value *v = parse_all(&r, text, strlen(text), PB_JSON_UNIQUE_KEYS);
  if (!v) {
    fail("valid JSON refused: %s at %d:%d", r.err, r.err_line, r.err_col);
    end();
    return;
  }
  const pb_json_value *a = pb_json_get(v, "a"), *b = pb_json_get(v, "b");
  const pb_json_value *d = pb_json_get(v, "d");
  const pb_json_value *c = b ? pb_json_get(b, "c") : NULL;
  if (v->kind != PB_JSON_OBJECT || v->n != 3 || v->pos.line != 1 || v->pos.col != 1)
    fail("root: kind %d, %ld items at %d:%d; want an object of 3 at 1:1", v->kind, (long)v->n,
         v->pos.line, v->pos.col);
  else if (!a || a->kind != PB_JSON_ARRAY || a->n != 4 || a->pos.line != 2 || a->pos.col != 8)
    fail("\"a\": want a list of 4 at 2:8");
  else if (a->items[0]->kind != PB_JSON_NUMBER || a->items[0]->number != 1 ||
           !a->items[0]->integral || a->items[1]->number != -25 || a->items[1]->integral ||
           a->items[1]->pos.col != 12)
    fail("\"a\" numbers: %g (integral %d), %g (integral %d) at col %d; want 1 (1), -25 (0) "
         "at col 12", a->items[0]->number, a->items[0]->integral, a->items[1]->number,
         a->items[1]->integral, a->items[1]->pos.col);
  else if (a->items[2]->kind != PB_JSON_BOOL || !a->items[2]->boolean ||
           a->items[3]->kind != PB_JSON_NULL)
    fail("\"a\" literals: want true, null");
  else if (!c || c->kind != PB_JSON_STRING || strcmp(c->string, "x\xc3\xa9") ||
           c->pos.line != 3 || c->pos.col != 13)
    fail("\"c\": want \"x\\u00e9\" decoded to UTF-8 at 3:13 (a tab is one column)");
  else if (!d || d->kind != PB_JSON_BOOL || d->boolean || d->pos.line != 4)
    fail("\"d\": want false on line 4");
  else if (pb_json_get(v, "zz") || pb_json_get(a, "a"))
    fail("pb_json_get found a key that is not there (or looked into a list)");
  pb_json_free(v);
  end();
}

static void test_json_strings(void) {
  begin("json_string_escapes");
  static const struct { const char *json, *want; } cases[] = {
      {"\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"", "\" \\ / \b \f \n \r \t"},
      {"\"\\u0041\\u00e9\\u20ac\"", "A\xc3\xa9\xe2\x82\xac"},
      {"\"\\ud83d\\ude00\"", "\xf0\x9f\x98\x80"}, /* a surrogate pair: U+1F600 */
      {"\"caf\xc3\xa9\"", "caf\xc3\xa9"},          /* UTF-8 passes through */
      {"\"\"", ""},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    pb_json r;
    char *s = NULL;
    pb_json_init(&r, cases[k].json, strlen(cases[k].json));
    if (pb_json_string(&r, &s) || strcmp(s, cases[k].want) || !pb_json_at_end(&r))
      fail("%s: got '%s' (%s)", cases[k].json, s ? s : "", r.err);
    free(s);
  }
  end();
}

static void test_json_numbers(void) {
  begin("json_numbers");
  static const struct { const char *json; double value; int integral; } good[] = {
      {"0", 0, 1},       {"-0", 0, 1},     {"12345", 12345, 1}, {"1.5", 1.5, 0},
      {"-2.5e1", -25, 0}, {"1E2", 100, 0}, {"1e+2", 100, 0},    {"25e-1", 2.5, 0},
  };
  for (size_t k = 0; k < sizeof good / sizeof *good; k++) {
    pb_json r;
    double v = -1;
    int integral = -1;
    pb_json_init(&r, good[k].json, strlen(good[k].json));
    if (pb_json_number(&r, &v, &integral) || v != good[k].value ||
        integral != good[k].integral || !pb_json_at_end(&r))
      fail("%s: got %g (integral %d, %s); want %g (%d)", good[k].json, v, integral, r.err,
           good[k].value, good[k].integral);
  }
  /* strtod reads all of these; JSON has none of them */
  static const char *const bad[] = {"01", "0x10", "-inf", "-", "1.", ".5", "1e", "+1",
                                    "1.5.2", "1e5e5", "-nan", "1x"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    pb_json r;
    double v;
    pb_json_init(&r, bad[k], strlen(bad[k]));
    if (!pb_json_number(&r, &v, NULL))
      fail("%s accepted as a number (%g)", bad[k], v);
    else if (!strstr(r.err, "not a JSON number") || r.err_offset != 0)
      fail("%s: error '%s' at byte %zu; want 'not a JSON number' at 0", bad[k], r.err,
           r.err_offset);
  }
  end();

  begin("json_uint_exact_and_bounded");
  static const struct { const char *json; uint64_t want; const char *err; } cases[] = {
      {"0", 0, NULL},
      {"9223372036854775807", 9223372036854775807ull, NULL}, /* 2^63 - 1, exactly */
      {"9007199254740993", 9007199254740993ull, NULL},       /* not a double: 2^53 + 1 */
      {"9223372036854775808", 0, "integer too large"},
      {"99999999999999999999999", 0, "integer too large"},
      {"-1", 0, "expected a non-negative integer"},
      {"1.0", 0, "expected an integer, found a fraction"},
      {"1e3", 0, "expected an integer, found a fraction"},
      {"\"7\"", 0, "expected a non-negative integer"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    pb_json r;
    uint64_t v = 12345;
    pb_json_init(&r, cases[k].json, strlen(cases[k].json));
    int rc = pb_json_uint(&r, &v);
    if (!cases[k].err && (rc || v != cases[k].want))
      fail("%s: got %llu (%s)", cases[k].json, (unsigned long long)v, r.err);
    else if (cases[k].err && (!rc || !strstr(r.err, cases[k].err)))
      fail("%s: accepted (%llu) or wrong error '%s'; want '%s'", cases[k].json,
           (unsigned long long)v, r.err, cases[k].err);
  }
  end();
}

/* Bad JSON: each is refused with its message at its line and column. */
static void test_json_bad(void) {
  begin("json_bad_input_error_and_place");
  static const struct { const char *json; const char *err; int line, col; } cases[] = {
      {"", "unexpected end of file", 1, 1},
      {"   \n  ", "unexpected end of file", 2, 3},
      {"[1, 2", "expected ',' or ']' in list", 1, 6},
      {"[1 2]", "expected ',' or ']' in list", 1, 4},
      {"[1,]", "unexpected character; expected a JSON value", 1, 4},
      {"{\"a\" 1}", "expected ':' after key", 1, 6},
      {"{\"a\": 1,}", "expected a \"key\" in object", 1, 9},
      {"{1: 2}", "expected a \"key\" in object", 1, 2},
      {"{\"a\": 1\n \"b\": 2}", "expected ',' or '}' in object", 2, 2},
      {"\"abc", "unterminated string", 1, 5},
      {"\"a\nb\"", "control character inside a string", 1, 3},
      {"\"a\\qb\"", "bad escape in string", 1, 4},
      {"\"\\u12zz\"", "bad hex digit in \\u escape", 1, 6},
      {"\"\\u12", "truncated \\u escape", 1, 4},
      {"\"\\ud83d\"", "unpaired surrogate", 1, 8},
      {"\"\\ude00\"", "unpaired surrogate", 1, 8},
      {"\"\\u0000\"", "\\u0000 in string", 1, 8},
      {"tru", "unexpected character; expected a JSON value", 1, 1},
      {"nul", "unexpected character; expected a JSON value", 1, 1},
      {"@", "unexpected character; expected a JSON value", 1, 1},
      {"\f[]", "unexpected character; expected a JSON value", 1, 1}, /* not JSON space */
      {"[0x10]", "not a JSON number (decimal digits only)", 1, 2},
      {"{\"a\": 1, \"b\": 2,\n \"a\": 3}", "duplicate key \"a\" in object", 2, 2},
      {"[] []", "text after the value", 1, 4},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    pb_json r;
    pb_json_value *v = parse_all(&r, cases[k].json, strlen(cases[k].json),
                                 PB_JSON_UNIQUE_KEYS);
    if (v) {
      fail("case %zu accepted: %s", k, cases[k].json);
      pb_json_free(v);
    } else if (!strstr(r.err, cases[k].err) || r.err_line != cases[k].line ||
               r.err_col != cases[k].col) {
      fail("case %zu (%s): '%s' at %d:%d; want '%s' at %d:%d", k, cases[k].json, r.err,
           r.err_line, r.err_col, cases[k].err, cases[k].line, cases[k].col);
    }
  }
  end();

  begin("json_duplicate_keys_only_when_asked");
  pb_json r;
  pb_json_value *v = parse_all(&r, "{\"a\": 1, \"a\": 2}", 16, 0);
  if (!v || v->n != 2 || pb_json_get(v, "a")->number != 1)
    fail("without PB_JSON_UNIQUE_KEYS a repeated key is kept (the first wins in lookups)");
  pb_json_free(v);
  end();

  begin("json_nesting_limit");
  char deep[2 * (PB_JSON_MAX_DEPTH + 2) + 1];
  for (int levels = PB_JSON_MAX_DEPTH; levels <= PB_JSON_MAX_DEPTH + 1; levels++) {
    /* levels brackets around "0": the 0 sits at depth `levels` */
    int n = 0;
    for (int k = 0; k < levels; k++) deep[n++] = '[';
    deep[n++] = '0';
    for (int k = 0; k < levels; k++) deep[n++] = ']';
    v = parse_all(&r, deep, (size_t)n, 0);
    int ok = levels <= PB_JSON_MAX_DEPTH;
    if (!!v != ok)
      fail("%d levels: %s; want %s", levels, v ? "accepted" : r.err, ok ? "accepted" : "refused");
    else if (!v && !strstr(r.err, "nesting deeper than 64 levels"))
      fail("%d levels: '%s'", levels, r.err);
    pb_json_free(v);
    pb_json_init(&r, deep, (size_t)n);
    if ((pb_json_skip(&r, 0) == 0) != ok) fail("pb_json_skip and the tree disagree at %d", levels);
  }
  end();

  begin("json_reads_only_its_bytes");
  /* the text need not end in NUL: the reader stops at n bytes */
  const char buf[] = "[1, 2]garbage";
  v = parse_all(&r, buf, 6, 0);
  if (!v || v->n != 2) fail("[1, 2] (6 bytes of a longer buffer): %s", r.err);
  pb_json_free(v);
  v = parse_all(&r, buf, 5, 0);
  if (v || !strstr(r.err, "expected ',' or ']'") || r.err_offset != 5)
    fail("[1, 2 (5 bytes): '%s' at byte %zu; want the list unfinished at 5", r.err,
         r.err_offset);
  pb_json_free(v);
  const char nul[] = "[1]\0 ";
  v = parse_all(&r, nul, 5, 0);
  if (v || r.err_offset != 3) fail("a NUL byte after the value is text, not the end");
  pb_json_free(v);
  end();

  begin("json_first_error_is_kept");
  pb_json_init(&r, "x", 1);
  pb_json_fail(&r, "first");
  r.i = 1;
  pb_json_fail(&r, "second");
  if (strcmp(r.err, "first") || r.err_offset != 0) fail("'%s' at %zu", r.err, r.err_offset);
  end();
}

static void test_json_pull(void) {
  begin("json_pull_skip_and_keys");
  const char *text = "{\"skip\": {\"x\": [1, {\"y\": \"\\u0041\"}], \"z\": null}, \"keep\": 7}";
  pb_json r;
  int more;
  char *key = NULL;
  uint64_t seven = 0;
  pb_json_init(&r, text, strlen(text));
  int rc = pb_json_open(&r, '{', &more) || !more || pb_json_key(&r, &key) ||
           strcmp(key, "skip") || pb_json_skip(&r, 1) || pb_json_next(&r, '}', &more) ||
           !more;
  free(key);
  key = NULL;
  rc = rc || pb_json_key(&r, &key) || strcmp(key, "keep") || pb_json_uint(&r, &seven) ||
       pb_json_next(&r, '}', &more) || more || !pb_json_at_end(&r);
  if (rc || seven != 7) fail("reading past a skipped value: %s", r.err);
  free(key);
  pb_json_init(&r, "[]", 2);
  if (pb_json_open(&r, '[', &more) || more || !pb_json_at_end(&r))
    fail("[]: the empty list is read whole by pb_json_open");
  pb_json_init(&r, "[]", 2);
  if (!pb_json_open(&r, '{', &more) || strcmp(r.err, "expected '{'")) fail("'{' in []");
  end();
}

/* Appends to a fixed buffer (the tests' sink). */
typedef struct { char s[2048]; size_t n; } Buf;
static void buf_put(void *target, const char *bytes, size_t n) {
  Buf *b = target;
  if (b->n + n < sizeof b->s) memcpy(b->s + b->n, bytes, n), b->n += n;
  b->s[b->n] = 0;
}

static void test_json_quote(void) {
  begin("json_quote_escapes");
  Buf b = {.n = 0};
  pb_json_quote("a\"b\\c\n\x01\x1f\xc3\xa9/", buf_put, &b);
  const char *want = "\"a\\\"b\\\\c\\u000a\\u0001\\u001f\xc3\xa9/\"";
  if (strcmp(b.s, want)) fail("got %s, want %s", b.s, want);
  end();

  begin("json_quote_reads_back");
  /* every byte 1..255: what the escaper writes, the reader gives back unchanged */
  char all[256];
  for (int k = 1; k < 256; k++) all[k - 1] = (char)k;
  all[255] = 0;
  b.n = 0;
  pb_json_quote(all, buf_put, &b);
  pb_json r;
  char *back = NULL;
  pb_json_init(&r, b.s, b.n);
  if (pb_json_string(&r, &back) || strcmp(back, all) || !pb_json_at_end(&r))
    fail("round trip of bytes 1..255: %s", r.err[0] ? r.err : "differs");
  free(back);
  end();
}

/* ---- shard geometry ---- */

static void test_shard(void) {
  begin("shard_geometry");
  static const int64_t ns[] = {0, 1, 7, 8, 9, 10, 1000003};
  static const int64_t Rs[] = {1, 2, 3, 4, 8, 16};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
    for (size_t j = 0; j < sizeof Rs / sizeof *Rs; j++) {
      int64_t n = ns[i], R = Rs[j], c = (n + R - 1) / R, covered = 0;
      if (pb_shard_size(n, R) != c) fail("pb_shard_size(%lld, %lld)", (long long)n, (long long)R);
      for (int64_t k = 0; k < R; k++) {
        pb_shard s = pb_shard_of(n, R, k);
        /* the shards tile [0, n) in order: each starts where the last ended, or is empty */
        if (s.c != c || s.offset != k * c || s.padded != R * c || s.len < 0 || s.len > c ||
            (s.len > 0 && s.offset != covered) || s.len != pb_shard_len(n, c, k))
          fail("n %lld R %lld k %lld: c %lld offset %lld len %lld padded %lld", (long long)n,
               (long long)R, (long long)k, (long long)s.c, (long long)s.offset,
               (long long)s.len, (long long)s.padded);
        covered += s.len;
      }
      if (covered != n) fail("n %lld R %lld: shards cover %lld", (long long)n, (long long)R,
                             (long long)covered);
    }
  /* 10 over 4: 3, 3, 3, 1; 9 over 4: 3, 3, 3, 0 */
  if (pb_shard_of(10, 4, 3).len != 1 || pb_shard_of(9, 4, 3).len != 0 ||
      pb_shard_of(10, 4, 0).padded != 12)
    fail("10 or 9 over 4 replicas");
  /* no division by zero, no overflow near INT64_MAX */
  if (pb_shard_size(5, 0) != 5 || pb_shard_of(5, -3, 0).R != 1)
    fail("R < 1 counts as 1");
  if (pb_shard_size(INT64_MAX, 2) != INT64_MAX / 2 + 1) fail("ceil(INT64_MAX / 2)");
  if (pb_shard_of(INT64_MAX, 3, 0).padded != -1) fail("3 * ceil(INT64_MAX / 3) overflows: -1");
  if (pb_shard_of(INT64_MAX, 2, 0).padded != -1) fail("2 * ceil(INT64_MAX / 2) overflows: -1");
  if (pb_shard_len(10, 3, INT64_MAX) != 0) fail("a replica far beyond the tensor holds 0");
  end();
}

/* ---- atomic files ---- */

static char dir[PATH_MAX];

/* How many names folder d holds, "." and ".." aside. */
static int entries_in(const char *d) {
  DIR *h = opendir(d);
  int n = 0;
  for (struct dirent *e; h && (e = readdir(h));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  if (h) closedir(h);
  return n;
}

static int read_text(const char *path, char *out, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  fclose(f);
  return 0;
}

static void test_atomic_commit_and_discard(void) {
  char path[PATH_MAX + 16], text[64], err[512];
  snprintf(path, sizeof path, "%s/out.txt", dir);
  begin("atomic_commit_replaces_whole");
  pb_atomic_file f;
  FILE *old = fopen(path, "w");
  if (old) fputs("old", old), fclose(old);
  if (pb_atomic_open(&f, path, 0, err, sizeof err)) fail("open: %s", err);
  else if (pb_write_all(f.fd, "new text", 8)) fail("write: %s", strerror(errno));
  else if (read_text(path, text, sizeof text) || strcmp(text, "old"))
    fail("the destination changed before the commit: '%s'", text);
  else if (pb_atomic_commit(&f, err, sizeof err)) fail("commit: %s", err);
  else if (read_text(path, text, sizeof text) || strcmp(text, "new text"))
    fail("after commit: '%s'", text);
  else if (entries_in(dir) != 1) fail("%d files in %s after a commit; want 1", entries_in(dir),
                                      dir);
  else if (f.fd != -1 || f.path || f.tmp) fail("commit leaves the struct closed and freed");
  else if (!pb_atomic_commit(&f, err, sizeof err)) fail("a second commit succeeded");
  end();

  begin("atomic_discard_leaves_nothing");
  for (int named = 0; named < 2; named++) {
    if (pb_atomic_open(&f, path, named ? PB_ATOMIC_NAMED : 0, err, sizeof err)) {
      fail("open: %s", err);
      break;
    }
    if (named && (!f.tmp[0] || access(f.tmp, F_OK))) fail("named: no file at '%s'", f.tmp);
    pb_write_all(f.fd, "junk", 4);
    pb_atomic_discard(&f);
    pb_atomic_discard(&f); /* twice is harmless */
    if (read_text(path, text, sizeof text) || strcmp(text, "new text"))
      fail("discard changed the destination: '%s'", text);
    if (entries_in(dir) != 1) fail("named %d: %d files left", named, entries_in(dir));
  }
  end();

  begin("atomic_named_writer_replaces_the_file");
  /* a linker writes the temporary by name, replacing the file we created */
  if (pb_atomic_open(&f, path, PB_ATOMIC_NAMED, err, sizeof err)) {
    fail("open: %s", err);
  } else {
    close(f.fd);
    f.fd = -1;
    char other[PATH_MAX + 32];
    snprintf(other, sizeof other, "%s/linker-out", dir);
    FILE *w = fopen(other, "w");
    if (w) fputs("linked", w), fclose(w);
    if (rename(other, f.tmp)) fail("rename: %s", strerror(errno));
    else if (pb_atomic_commit(&f, err, sizeof err)) fail("commit: %s", err);
    else if (read_text(path, text, sizeof text) || strcmp(text, "linked"))
      fail("after commit: '%s'", text);
    if (entries_in(dir) != 1) fail("%d files left", entries_in(dir));
  }
  end();
}

static void test_atomic_refusals(void) {
  char path[PATH_MAX + 32], err[PATH_MAX + 512];
  pb_atomic_file f;
  begin("atomic_refuses_fifo_and_directory");
  snprintf(path, sizeof path, "%s/fifo", dir);
  if (mkfifo(path, 0600)) fail("mkfifo: %s", strerror(errno));
  else if (!pb_atomic_open(&f, path, 0, err, sizeof err) || !strstr(err, "it is a FIFO"))
    fail("a FIFO destination: '%s'", err);
  /* in place (piper-opt -o pipe): not even opened with NAMED (it would block) */
  else if (pb_atomic_open(&f, path, PB_ATOMIC_IN_PLACE | PB_ATOMIC_NAMED, err, sizeof err) ||
           !f.in_place || f.fd != -1 || strcmp(f.tmp, path))
    fail("in place: %s", err);
  else if (pb_atomic_commit(&f, err, sizeof err)) fail("in-place commit: %s", err);
  struct stat sb;
  if (stat(path, &sb) || !S_ISFIFO(sb.st_mode)) fail("the FIFO was replaced");
  unlink(path);
  if (!pb_atomic_open(&f, dir, PB_ATOMIC_IN_PLACE, err, sizeof err) ||
      !strstr(err, "it is a directory"))
    fail("a directory destination: '%s'", err);
  snprintf(path, sizeof path, "%s/no/such/folder/x", dir);
  if (!pb_atomic_open(&f, path, 0, err, sizeof err) ||
      !strstr(err, "cannot create a temporary file next to") || !strstr(err, path) ||
      !strstr(err, strerror(ENOENT)))
    fail("a missing folder: '%s'", err);
  if (f.fd != -1 || f.path) fail("a failed open leaves the struct empty");
  end();

  begin("atomic_never_follows_planted_link");
  /* every PATH.XXXXXX name that could be chosen is unknowable, but a link at PATH.tmp and
   * one at the destination's usual temporaries must stay as they are */
  char victim[PATH_MAX + 16], planted[PATH_MAX + 16], text[64];
  snprintf(victim, sizeof victim, "%s/victim", dir);
  snprintf(path, sizeof path, "%s/dest", dir);
  snprintf(planted, sizeof planted, "%s/dest.tmp", dir);
  FILE *w = fopen(victim, "w");
  if (w) fputs("precious", w), fclose(w);
  if (symlink(victim, planted)) fail("symlink: %s", strerror(errno));
  for (int named = 0; named < 2; named++) {
    if (pb_atomic_open(&f, path, named ? PB_ATOMIC_NAMED : 0, err, sizeof err) ||
        pb_write_all(f.fd, "out", 3) || pb_atomic_commit(&f, err, sizeof err))
      fail("save: %s", err);
  }
  if (read_text(victim, text, sizeof text) || strcmp(text, "precious")) fail("victim: '%s'", text);
  if (read_text(path, text, sizeof text) || strcmp(text, "out")) fail("dest: '%s'", text);
  end();
}

/* The ring's names: the path of a step, the step of a name (and every other name refused),
 * and a folder's ring files newest first, whatever else it holds. */
static void test_ring(void) {
  begin("ring_names_and_listing");
  char *p = pb_ring_path("ring", 12);
  if (!p || strcmp(p, "ring/step-000012.safetensors")) fail("pb_ring_path(ring, 12) = %s", p);
  free(p);
  p = pb_ring_path("r", 1234567);
  if (!p || strcmp(p, "r/step-1234567.safetensors")) fail("pb_ring_path(r, 1234567) = %s", p);
  free(p);
  static const struct {
    const char *name;
    int64_t step;
  } names[] = {{"step-000012.safetensors", 12}, {"step-0.safetensors", 0},
               {"step-9223372036854775807.safetensors", INT64_MAX},
               {"step-9223372036854775808.safetensors", -1}, {"step-.safetensors", -1},
               {"step-12.safetensors.tmp", -1}, {"step-1a.safetensors", -1},
               {"step-12.st", -1}, {"xstep-12.safetensors", -1}, {"final.safetensors", -1}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (pb_ring_step_of(names[i].name) != names[i].step)
      fail("pb_ring_step_of(%s) = %lld, expected %lld", names[i].name,
           (long long)pb_ring_step_of(names[i].name), (long long)names[i].step);
  char ring[PATH_MAX + 8];
  snprintf(ring, sizeof ring, "%s/ring", dir);
  static const char *files[] = {"step-000004.safetensors", "step-000012.safetensors",
                                "step-000008.safetensors", "other.txt",
                                "step-000010.safetensors.tmp"};
  if (mkdir(ring, 0700) != 0) fail("cannot create %s", ring);
  for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", ring, files[i]);
    FILE *f = fopen(path, "w");
    if (!f || fclose(f)) fail("cannot create %s", path);
  }
  int64_t *steps;
  size_t n;
  if (pb_ring_steps(ring, &steps, &n) || n != 3 || steps[0] != 12 || steps[1] != 8 ||
      steps[2] != 4)
    fail("pb_ring_steps listed %zu steps, expected 12, 8, 4", n);
  free(steps);
  snprintf(ring, sizeof ring, "%s/missing", dir);
  if (pb_ring_steps(ring, &steps, &n) != -1 || steps || n) fail("a missing folder is not -1");
  end();
}

int main(void) {
  test_json_tree();
  test_json_strings();
  test_json_numbers();
  test_json_bad();
  test_json_pull();
  test_json_quote();
  test_shard();
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/piper-base-test.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    fprintf(stderr, "piper-base-test: cannot create a directory under /tmp\n");
    return 100;
  }
  test_atomic_commit_and_discard();
  /* a fresh folder: the refusals count files too */
  char cmd[PATH_MAX + 32];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0 || mkdir(dir, 0700) != 0) return 101;
  test_atomic_refusals();
  if (system(cmd) != 0 || mkdir(dir, 0700) != 0) return 102;
  test_ring();
  if (system(cmd) != 0) return 103;
  printf("%d checks failed\n", failures);
  return failures;
}
