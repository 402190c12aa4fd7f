#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

/* Reading and parsing input, shared by every tool and by passes that read files. */
#include "piper/piper.h"

char *piperReadInput(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
  if (!f) {
    fprintf(stderr, "piper: error: cannot open '%s': %s\n", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += got;
    if (cap - n - 1 == 0) buf = realloc(buf, cap *= 2);
  }
  bool bad = ferror(f);
  if (f != stdin) fclose(f);
  if (bad) {
    fprintf(stderr, "piper: error: cannot read '%s'\n", path);
    free(buf);
    return NULL;
  }
  buf[n] = 0;
  const char *nul = memchr(buf, 0, n);
  if (nul) { /* text is read as a C string: a NUL would silently cut it short */
    fprintf(stderr, "piper: error: '%s' holds a NUL byte at offset %zu: it is not MLIR or JSON "
                    "text\n", path, (size_t)(nul - buf));
    free(buf);
    return NULL;
  }
  if (len) *len = n;
  return buf;
}

/* True if the first token of `text`, past blanks and // comments, starts a module op. */
static bool startsWithModule(const char *text) {
  for (const char *p = text; *p;) {
    if (isspace((unsigned char)*p)) {
      ++p;
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') ++p;
    } else {
      return !strncmp(p, "module", 6) || !strncmp(p, "\"builtin.module\"", 16);
    }
  }
  return false;
}

/* Counts the errors reported while it is attached, and lets them through to the tool's
 * printer. */
static MlirLogicalResult countError(MlirDiagnostic d, void *userData) {
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError) ++*(int *)userData;
  return mlirLogicalResultFailure(); /* not handled: the next handler prints it */
}

/* Where the first op of piper's dialects written in custom form (`tdag.add %a ...` instead of
 * `"tdag.add"(%a) ...`) starts in `text`; false if there is none. */
static bool findCustomFormOp(const char *text, int *line, int *col, char *name, size_t size) {
  static const char *const dialects[] = {"tdag.", "comm.", "sched."};
  int ln = 1, cl = 1;
  for (const char *p = text; *p; ++p) {
    bool wordStart = p == text || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' ||
                                     p[-1] == '.' || p[-1] == '"' || p[-1] == '!' ||
                                     p[-1] == '#' || p[-1] == '@' || p[-1] == '%');
    for (int d = 0; wordStart && d < 3; ++d) {
      size_t k = strlen(dialects[d]);
      if (strncmp(p, dialects[d], k) || !isalpha((unsigned char)p[k])) continue;
      size_t n = k;
      while (isalnum((unsigned char)p[n]) || p[n] == '_') ++n;
      snprintf(name, size, "%.*s", (int)n, p);
      *line = ln, *col = cl;
      return true;
    }
    if (*p == '\n') ++ln, cl = 1;
    else ++cl;
  }
  return false;
}

/* The largest result number an SSA use (`%v#N`) may carry. MLIR's parser sizes its table of
 * a name's results by N (N + 1 entries of 16 bytes) when the use comes before the definition,
 * before it can know how many results the op has, so `%v#2147483648` asks for 32 GiB and
 * ends in "LLVM ERROR: out of memory" instead of a diagnostic (mlir-opt does the same). A
 * real N is below its op's result count, and each result is written out as a type in the
 * op's signature. Piper's ops have at most 4 results (the largest N in every test input and
 * in a 32-layer Qwen3's PP4 x DP2 plan is 3); only tdag.node's are variadic, one per value
 * crossing a node boundary. 2^20 results would take over 5 MiB of `f32, ` in one op, and the
 * table this bound allows costs the parser 16 MiB at most. */
#define PIPER_MAX_RESULT_NUMBER ((1u << 20) - 1)

static bool isSuffixIdChar(char c) {
  return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '.' || c == '-';
}

/* Finds an SSA use whose result number is above PIPER_MAX_RESULT_NUMBER, following MLIR's
 * lexer: a `#digits` token right after a `%name` token (blanks and // comments may sit
 * between, as the parser allows), never inside a string literal or a comment. Sets the
 * place of the `#` (1-based line and byte column) and the use as written. */
static bool findHugeResultNumber(const char *text, int *line, int *col, char *use,
                                 size_t size) {
  const char *lineStart = text, *name = NULL;
  size_t nameLen = 0;
  int ln = 1;
  for (const char *p = text; *p;) {
    if (*p == '\n') {
      lineStart = ++p, ++ln;
    } else if (isspace((unsigned char)*p)) {
      ++p;
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') ++p;
    } else if (*p == '"') { /* a string ends at its quote or, unterminated, at the line's end */
      for (++p; *p && *p != '"' && *p != '\n'; ++p)
        if (p[0] == '\\' && p[1] && p[1] != '\n') ++p;
      if (*p == '"') ++p;
      name = NULL;
    } else if (*p == '%') {
      const char *start = p++;
      while (isSuffixIdChar(*p)) ++p;
      name = p - start > 1 ? start : NULL;
      nameLen = (size_t)(p - start);
    } else if (*p == '#' && name && isdigit((unsigned char)p[1])) {
      const char *start = p++;
      unsigned long long n = 0;
      bool digits = true;
      for (; isSuffixIdChar(*p); ++p) {
        if (!isdigit((unsigned char)*p)) digits = false;
        else if (n <= PIPER_MAX_RESULT_NUMBER) n = n * 10 + (unsigned)(*p - '0');
      }
      if (digits && n > PIPER_MAX_RESULT_NUMBER) {
        *line = ln, *col = (int)(start - lineStart) + 1;
        snprintf(use, size, "%.*s%s%.*s", (int)(nameLen < 64 ? nameLen : 64), name,
                 name + nameLen == start ? "" : " ", (int)(p - start < 32 ? p - start : 32),
                 start);
        return true;
      }
      name = NULL;
    } else {
      ++p;
      name = NULL;
    }
  }
  return false;
}

MlirModule piperParseAndVerify(MlirContext ctx, const char *text, const char *sourceName) {
  /* mlirOperationCreateParse wants one top-level op; a file of several ops (or none) is
   * wrapped in a module the way mlir-opt does implicitly. The wrapper opens on line 1, which
   * keeps every line number; only columns on line 1 move, and that line is almost always a
   * comment (or the padding of a --split-input-file chunk). */
  int line, col;
  char use[128];
  if (findHugeResultNumber(text, &line, &col, use, sizeof use)) {
    piperEmitErrorf(mlirLocationFileLineColGet(ctx, piperStr(sourceName), line, col),
                    "result number of '%s' is out of range: at most %u (no op has more "
                    "results than that)", use, PIPER_MAX_RESULT_NUMBER);
    return (MlirModule){NULL};
  }
  char *wrapped = NULL;
  if (!startsWithModule(text)) {
    size_t n = strlen(text);
    wrapped = malloc(n + 16);
    snprintf(wrapped, n + 16, "module {%s\n}", text);
  }
  int errors = 0;
  MlirDiagnosticHandlerID counter = mlirContextAttachDiagnosticHandler(ctx, countError, &errors, NULL);
  MlirOperation op =
      mlirOperationCreateParse(ctx, piperStr(wrapped ? wrapped : text), piperStr(sourceName));
  mlirContextDetachDiagnosticHandler(ctx, counter);
  free(wrapped);
  if (mlirOperationIsNull(op) && errors == 0) {
    /* IRDL ops have no custom assembly format, and MLIR 22's parser then fails without a
     * word: say what the user can do about it, at the op when it can be found. */
    int line = 1, col = 1;
    char name[64];
    bool found = findCustomFormOp(text, &line, &col, name, sizeof name);
    MlirLocation loc = mlirLocationFileLineColGet(ctx, piperStr(sourceName), line, col);
    if (found)
      piperEmitErrorf(loc, "'%s' must be written in generic form, e.g. \"%s\"(%%a, %%b) "
                      "{attrs} : (operand types) -> result types: piper's dialects (IRDL) "
                      "have no custom assembly syntax", name, name);
    else
      mlirEmitError(loc, "cannot parse this file as MLIR (the parser gave no reason)");
  }
  if (mlirOperationIsNull(op)) return (MlirModule){NULL};
  MlirModule module = mlirModuleFromOperation(op);
  if (!mlirOperationVerify(op) || mlirLogicalResultIsFailure(piperVerifyTdag(op))) {
    mlirModuleDestroy(module);
    return (MlirModule){NULL};
  }
  return module;
}

/* ---- PiperOutput: the base library's atomic file, plus cleanup on SIGINT/SIGTERM ---- */

/* The named temporaries being written (piper-compile nests the object inside the
 * executable's), removed by the signal handler if SIGINT or SIGTERM comes before their rename.
 * Each entry is the watcher's own copy of the name. */
#define PIPER_MAX_ACTIVE 8
static char *volatile piperActive[PIPER_MAX_ACTIVE];
static int piperNumActive; /* entries in use; the handlers are ours while it is > 0 */
static struct sigaction piperOldInt, piperOldTerm;

static void piperOutputOnSignal(int sig) {
  for (int k = 0; k < PIPER_MAX_ACTIVE; k++)
    if (piperActive[k]) unlink(piperActive[k]); /* async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

/* Watches a named temporary; an unnamed one (O_TMPFILE) vanishes with the process anyway. A
 * ninth at once goes unwatched: it is still removed on every path but a signal. */
static void piperOutputWatch(const char *tmp) {
  if (!tmp[0]) return;
  for (int k = 0; k < PIPER_MAX_ACTIVE; k++) {
    if (piperActive[k]) continue;
    char *copy = strdup(tmp);
    if (!copy) return;
    if (piperNumActive++ == 0) {
      struct sigaction sa;
      memset(&sa, 0, sizeof sa);
      sa.sa_handler = piperOutputOnSignal;
      sigemptyset(&sa.sa_mask);
      sigaction(SIGINT, &sa, &piperOldInt);
      sigaction(SIGTERM, &sa, &piperOldTerm);
    }
    piperActive[k] = copy;
    return;
  }
}

/* The watch slot holding `tmp`, or -1. */
static int piperOutputSlot(const char *tmp) {
  for (int k = 0; k < PIPER_MAX_ACTIVE; k++)
    if (tmp[0] && piperActive[k] && !strcmp(piperActive[k], tmp)) return k;
  return -1;
}

static void piperOutputUnwatch(int k) {
  if (k < 0) return;
  char *name = piperActive[k];
  piperActive[k] = NULL;
  free(name);
  if (--piperNumActive == 0) {
    sigaction(SIGINT, &piperOldInt, NULL);
    sigaction(SIGTERM, &piperOldTerm, NULL);
  }
}

/* Starts o for `path` (PB_ATOMIC_* flags); prints the error and returns false if it cannot. */
static bool piperOutputStart(PiperOutput *o, const char *path, int flags) {
  char err[1024];
  o->file = NULL;
  o->tmp = NULL;
  if (pb_atomic_open(&o->out, path, flags | PB_ATOMIC_IN_PLACE, err, sizeof err)) {
    fprintf(stderr, "piper: error: %s\n", err);
    return false;
  }
  o->tmp = o->out.tmp;
  if (!o->out.in_place) piperOutputWatch(o->out.tmp);
  return true;
}

bool piperOutputPrepare(PiperOutput *o, const char *path) {
  if (!piperOutputStart(o, path, PB_ATOMIC_NAMED)) return false;
  if (o->out.fd >= 0) close(o->out.fd); /* the writer opens the name itself */
  o->out.fd = -1;
  return true;
}

bool piperOutputOpen(PiperOutput *o, const char *path) {
  if (!piperOutputStart(o, path, 0)) return false;
  /* stdio gets its own descriptor: fclose closes that one, commit syncs and closes ours */
  int fd = dup(o->out.fd);
  if (fd < 0 || !(o->file = fdopen(fd, "w"))) {
    fprintf(stderr, "piper: error: cannot write '%s': %s\n", path, strerror(errno));
    if (fd >= 0) close(fd);
    piperOutputCommit(o, false);
    return false;
  }
  return true;
}

int piperOutputCommit(PiperOutput *o, bool ok) {
  if (!o->out.path) return 1;
  if (o->file && fclose(o->file)) ok = false;
  o->file = NULL;
  int slot = piperOutputSlot(o->out.tmp); /* watched until renamed or removed */
  char err[1024];
  int rc = 0;
  if (!ok) {
    pb_atomic_discard(&o->out);
    rc = 1;
  } else if (pb_atomic_commit(&o->out, err, sizeof err)) {
    fprintf(stderr, "piper: error: %s\n", err);
    rc = 1;
  }
  piperOutputUnwatch(slot);
  o->tmp = NULL;
  return rc;
}
