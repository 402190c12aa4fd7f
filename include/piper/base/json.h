/* JSON for the compiler and the runtime alike: one reader and one string escaper.
 *
 * The reader is a cursor over a byte buffer (NUL-terminated or not) that knows where it is
 * (byte offset, line, column) and keeps the first error with its place, so each caller words
 * its diagnostic its own way: a strategy file's errors point at line:column, a checkpoint
 * header's at a byte offset. It reads RFC 8259 JSON and nothing else: JSON's whitespace,
 * JSON's number grammar (no hex, inf, nan or leading zeros), every string escape (\uXXXX with
 * surrogate pairs, decoded to UTF-8; \u0000 is refused, strings are C strings), nesting at
 * most PB_JSON_MAX_DEPTH deep. Nothing it reads can make it crash, overflow or loop, and what
 * it allocates is proportional to what it has read.
 *
 * Two ways to read, one grammar:
 *   pull   pb_json_open / pb_json_key / pb_json_next / pb_json_string / pb_json_uint /
 *          pb_json_skip: one value at a time, nothing kept but what the caller keeps (the
 *          safetensors header: 100 MB of it must not become a tree of 50 million nodes);
 *   tree   pb_json_parse_value: the next value as a tree of pb_json_value with positions
 *          (strategy files, whose directives are looked up by key), built from the pull
 *          functions above.
 *
 * Every reading function returns 0 on success and -1 on failure; after a failure the reader
 * holds the first error (err, err_offset, err_line, err_col) and the caller stops reading.
 */
#ifndef PIPER_BASE_JSON_H
#define PIPER_BASE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PB_JSON_MAX_DEPTH 64 /* nesting levels a value may have below the first one */
#define PB_JSON_END (-1)     /* pb_json_peek at the end of the text */

/* A cursor over JSON text and its first error. */
typedef struct pb_json {
  const char *s;      /* borrowed text; need not be NUL-terminated */
  size_t n;           /* bytes in s */
  size_t i;           /* the cursor: offset of the next byte to read */
  int line;           /* 1-based line of the cursor */
  size_t line_start;  /* offset of the first byte of the cursor's line */
  char err[240];      /* the first error's message; empty while there is none */
  size_t err_offset;  /* where it happened: byte offset into s */
  int err_line;       /* ... 1-based line */
  int err_col;        /* ... 1-based column, in bytes */
} pb_json;

/* A place in the text. */
typedef struct pb_json_pos {
  size_t offset; /* bytes from the start */
  int line;      /* 1-based */
  int col;       /* 1-based, in bytes */
} pb_json_pos;

/* Starts reading the n bytes at s from the beginning. */
void pb_json_init(pb_json *r, const char *s, size_t n);
/* Where the cursor is. */
pb_json_pos pb_json_here(const pb_json *r);
/* Records an error (printf format) at the cursor, or at `at`, unless one is recorded already
 * (the first error is the cause); returns -1, so callers can `return pb_json_fail(...)`. */
int pb_json_fail(pb_json *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int pb_json_fail_at(pb_json *r, pb_json_pos at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Skips whitespace; returns the next byte (0..255) without reading it, or PB_JSON_END. */
int pb_json_peek(pb_json *r);
/* Skips whitespace; true if nothing but whitespace was left. */
int pb_json_at_end(pb_json *r);

/* container -> '{' [ member { ',' member } ] '}' | '[' [ value { ',' value } ']'
 * pb_json_open reads `open` ('{' or '['), and the closing bracket too when the container is
 * empty; *more says whether an item follows. After each item, pb_json_next reads ',' (*more
 * = 1) or `close` (*more = 0). An object's item is pb_json_key then its value. */
int pb_json_open(pb_json *r, char open, int *more);
int pb_json_next(pb_json *r, char close, int *more);
/* member -> string ':' value: reads the key and the colon; *key (if key) gets an owned copy. */
int pb_json_key(pb_json *r, char **key);

/* string -> '"' { char | escape } '"'; *out (if out) gets an owned, decoded UTF-8 copy. */
int pb_json_string(pb_json *r, char **out);
/* number -> JSON's number grammar; *value gets its double (overflow gives +-HUGE_VAL),
 * *integral (if given) whether it was written without fraction or exponent. */
int pb_json_number(pb_json *r, double *value, int *integral);
/* A number that is a non-negative integer of at most 63 bits, exactly. */
int pb_json_uint(pb_json *r, uint64_t *out);
/* true | false | null: *kind gets PB_JSON_BOOL (and *boolean the value) or PB_JSON_NULL. */
int pb_json_literal(pb_json *r, int *kind, int *boolean);
/* Reads any value and throws it away; depth: its nesting level (0 for a document's root). */
int pb_json_skip(pb_json *r, int depth);

/* ---- the tree ---- */

typedef enum pb_json_kind {
  PB_JSON_NULL,
  PB_JSON_BOOL,
  PB_JSON_NUMBER,
  PB_JSON_STRING,
  PB_JSON_ARRAY,
  PB_JSON_OBJECT,
} pb_json_kind;

/* A value read by pb_json_parse_value; the tree owns everything below it. */
typedef struct pb_json_value {
  pb_json_kind kind;
  pb_json_pos pos;               /* the value's first byte */
  int boolean;                   /* PB_JSON_BOOL */
  double number;                 /* PB_JSON_NUMBER */
  int integral;                  /* PB_JSON_NUMBER written without fraction or exponent */
  char *string;                  /* PB_JSON_STRING: owned, decoded UTF-8 */
  struct pb_json_value **items;  /* PB_JSON_ARRAY, PB_JSON_OBJECT: owned (n) */
  char **keys;                   /* PB_JSON_OBJECT: owned (n), the key of each item */
  intptr_t n;                    /* items */
} pb_json_value;

enum {
  /* An object that repeats a key is an error at the repeated key: JSON leaves open which of
   * the two counts, so a reader of configuration refuses to guess. O(keys^2) per object. */
  PB_JSON_UNIQUE_KEYS = 1,
};

/* The next value as a tree (the text may go on: check pb_json_at_end); NULL on failure. */
pb_json_value *pb_json_parse_value(pb_json *r, int flags);
void pb_json_free(pb_json_value *v);
/* The item of object v under `key` (the first, if keys repeat), or NULL. */
const pb_json_value *pb_json_get(const pb_json_value *v, const char *key);

/* ---- writing ---- */

/* Where escaped text goes: n bytes at a time. */
typedef void pb_json_sink(void *target, const char *bytes, size_t n);
/* Writes s as a JSON string literal: in quotes, with '"' and '\\' escaped by a backslash and
 * bytes below 0x20 as \u00XX; other bytes (UTF-8 included) as they are. */
void pb_json_quote(const char *s, pb_json_sink *put, void *target);
/* A sink for a FILE * target (fwrite). */
void pb_json_sink_file(void *file, const char *bytes, size_t n);

#endif
