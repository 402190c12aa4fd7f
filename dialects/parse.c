#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

MlirModule piperParseAndVerify(MlirContext ctx, const char *text, const char *sourceName) {
  /* mlirOperationCreateParse wants one top-level op; a file of several ops (or none) is
   * wrapped in a module the way mlir-opt does implicitly. The wrapper opens on line 1, which
   * keeps every line number; only columns on line 1 move, and that line is almost always a
   * comment (or the padding of a --split-input-file chunk). */
  char *wrapped = NULL;
  if (!startsWithModule(text)) {
    size_t n = strlen(text);
    wrapped = malloc(n + 16);
    snprintf(wrapped, n + 16, "module {%s\n}", text);
  }
  MlirOperation op =
      mlirOperationCreateParse(ctx, piperStr(wrapped ? wrapped : text), piperStr(sourceName));
  free(wrapped);
  if (mlirOperationIsNull(op)) return (MlirModule){NULL};
  MlirModule module = mlirModuleFromOperation(op);
  if (!mlirOperationVerify(op) || mlirLogicalResultIsFailure(piperVerifyTdag(op))) {
    mlirModuleDestroy(module);
    return (MlirModule){NULL};
  }
  return module;
}

void piperOutputPrepare(PiperOutput *o, const char *path) {
  struct stat st;
  bool inPlace = stat(path, &st) == 0 && !S_ISREG(st.st_mode);
  o->file = NULL;
  snprintf(o->path, sizeof o->path, "%s", path);
  snprintf(o->tmp, sizeof o->tmp, inPlace ? "%s" : "%s.tmp", path);
}

bool piperOutputOpen(PiperOutput *o, const char *path) {
  piperOutputPrepare(o, path);
  if (!(o->file = fopen(o->tmp, "w"))) {
    fprintf(stderr, "piper: error: cannot write '%s': %s\n", path, strerror(errno));
    return false;
  }
  return true;
}

int piperOutputCommit(PiperOutput *o, bool ok) {
  bool inPlace = !strcmp(o->tmp, o->path);
  if (o->file && fclose(o->file)) ok = false;
  o->file = NULL;
  if (inPlace) return ok ? 0 : 1;
  if (ok && rename(o->tmp, o->path) == 0) return 0;
  if (ok) fprintf(stderr, "piper: error: cannot write '%s': %s\n", o->path, strerror(errno));
  remove(o->tmp);
  return 1;
}
