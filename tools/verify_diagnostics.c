/* piper-opt --verify-diagnostics: the expected-* annotations of the input against the
 * diagnostics a run emits, matched by severity, line and substring of the message. */
#include "verify_diagnostics.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlir-c/Diagnostics.h"
#include "piper/checked.h"
#include "piper/piper.h"

typedef struct {
  MlirDiagnosticSeverity severity; /* the kind the annotation expects */
  int line;                        /* the line the diagnostic must be at (1-based) */
  int annotationLine, annotationCol; /* where the annotation itself is, for reports */
  char *text;                      /* the substring the message must contain, owned */
  bool met;                        /* a diagnostic matched it */
} Expectation;

struct PiperDiagVerifier {
  MlirContext ctx;             /* borrowed */
  MlirDiagnosticHandlerID id;  /* our handler while attached */
  char *fileName;              /* the input's name as locations spell it, owned */
  FILE *out;                   /* where reports go (borrowed) */
  Expectation *exp;            /* the annotations, in file order; owned */
  size_t nExp, capExp;         /* count and capacity of exp */
  bool failed;                 /* an unexpected diagnostic (or a malformed annotation) */
};

static const char *const kindNames[] = {"error", "warning", "note", "remark"}; /* by severity */

static const char *severityName(MlirDiagnosticSeverity s) {
  return (unsigned)s < 4 ? kindNames[s] : "diagnostic";
}

/* The 1-based number of the line `p` is on. */
static int lineOf(const char *text, const char *p) {
  int line = 1;
  for (const char *q = text; q < p; ++q) line += *q == '\n';
  return line;
}

/* The start of line `line` of `text`, or NULL past the end. */
static const char *lineStart(const char *text, int line) {
  const char *p = text;
  for (int l = 1; l < line && p; ++l) {
    p = strchr(p, '\n');
    if (p) ++p;
  }
  return p;
}

/* True if line `line` exists and holds no expected-* annotation (an @above/@below target). */
static bool isTargetLine(const char *text, int line) {
  const char *p = lineStart(text, line);
  if (!p) return false;
  const char *end = strchr(p, '\n');
  size_t n = end ? (size_t)(end - p) : strlen(p);
  for (size_t k = 0; k + 9 <= n; ++k)
    if (!strncmp(p + k, "expected-", 9)) return false;
  return true;
}

static void addExpectation(PiperDiagVerifier *v, Expectation e) {
  if (!piperGrow((void **)&v->exp, &v->capExp, v->nExp + 1, sizeof *v->exp)) {
    fprintf(v->out, "piper-opt: error: out of memory reading expected-* annotations\n");
    free(e.text);
    v->failed = true;
    return;
  }
  v->exp[v->nExp++] = e;
}

/* expected-KIND [@+N | @-N | @above | @below] {{TEXT}} */
static void parseAnnotations(PiperDiagVerifier *v, const char *text) {
  for (const char *p = strstr(text, "expected-"); p; p = strstr(p + 1, "expected-")) {
    const char *q = p + 9;
    int kind = -1;
    for (int k = 0; k < 4; ++k)
      if (!strncmp(q, kindNames[k], strlen(kindNames[k]))) kind = k, q += strlen(kindNames[k]);
    if (kind < 0) continue; /* some other word: not an annotation */
    int here = lineOf(text, p), line = here;
    int col = (int)(p - (lineStart(text, here))) + 1;
    const char *bad = NULL;
    if (*q == '@') {
      ++q;
      if (!strncmp(q, "above", 5)) {
        q += 5;
        do --line; while (line > 0 && !isTargetLine(text, line));
      } else if (!strncmp(q, "below", 5)) {
        q += 5;
        int last = lineOf(text, text + strlen(text));
        do ++line; while (line <= last && !isTargetLine(text, line));
      } else if (*q == '+' || *q == '-') {
        char num[16];
        size_t n = 1;
        while (n < sizeof num - 1 && q[n] >= '0' && q[n] <= '9') ++n;
        snprintf(num, sizeof num, "%.*s", (int)n, q);
        int64_t off;
        if (piperParseI64(num, -1000000, 1000000, &off)) line += (int)off;
        else bad = "a line offset @+N or @-N needs a number";
        q += n;
      } else {
        bad = "expected @+N, @-N, @above or @below after '@'";
      }
    }
    while (*q == ' ' || *q == '\t') ++q;
    const char *end = NULL;
    if (!bad && strncmp(q, "{{", 2)) bad = "expected {{message}} after the annotation";
    if (!bad && !(end = strstr(q + 2, "}}"))) bad = "the {{message}} is not closed by }}";
    if (!bad && (end - q) > 2 && memchr(q + 2, '\n', (size_t)(end - q - 2)))
      bad = "the {{message}} is not closed by }} on its line";
    if (!bad && line < 1) bad = "the annotation points before the first line";
    if (bad) {
      fprintf(v->out, "%s:%d:%d: error: malformed expected-%s: %s\n", v->fileName, here, col,
              kindNames[kind], bad);
      v->failed = true;
      continue;
    }
    size_t n = (size_t)(end - q - 2);
    char *msg = malloc(n + 1);
    if (!msg) {
      v->failed = true;
      continue;
    }
    memcpy(msg, q + 2, n);
    msg[n] = 0;
    addExpectation(v, (Expectation){(MlirDiagnosticSeverity)kind, line, here, col, msg, false});
  }
}

typedef struct {
  char *data;     /* the text so far, NUL-terminated; owned */
  size_t len, cap; /* bytes used (without the NUL) and allocated */
} Buffer;

static void appendToBuffer(MlirStringRef s, void *userData) {
  Buffer *b = userData;
  if (!piperGrow((void **)&b->data, &b->cap, b->len + s.length + 1, 1)) return;
  memcpy(b->data + b->len, s.data, s.length);
  b->len += s.length;
  b->data[b->len] = 0;
}

/* The file, line and column of `loc`: those of a file:line:col location, or else of the
 * first `"file":line:col` its printed form holds (fused, named and call-site locations).
 * Returns false for a location without a file position (unknown). `file` is owned. */
static bool locationOf(MlirLocation loc, char **file, int *line, int *col) {
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef name = mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    *file = strndup(name.data, name.length);
    *line = mlirLocationFileLineColRangeGetStartLine(loc);
    *col = mlirLocationFileLineColRangeGetStartColumn(loc);
    return *file != NULL;
  }
  Buffer b = {0};
  mlirLocationPrint(loc, appendToBuffer, &b);
  bool found = false;
  for (char *p = b.data ? strchr(b.data, '"') : NULL; p && !found; p = strchr(p + 1, '"')) {
    char *close = strchr(p + 1, '"');
    if (!close) break;
    int l, c;
    if (sscanf(close, "\":%d:%d", &l, &c) == 2) {
      *file = strndup(p + 1, (size_t)(close - p - 1));
      *line = l, *col = c;
      found = *file != NULL;
    }
    p = close;
  }
  free(b.data);
  return found;
}

/* Matches one diagnostic (not its notes) or reports it as unexpected. */
static void matchOne(PiperDiagVerifier *v, MlirDiagnostic d) {
  size_t skip;
  MlirDiagnosticSeverity sev = piperDiagnosticSeverity(d, &skip); /* piper's notes too */
  Buffer msg = {0};
  mlirDiagnosticPrint(d, appendToBuffer, &msg);
  const char *text = msg.data && msg.len >= skip ? msg.data + skip : "";
  char *file = NULL;
  int line = 0, col = 0;
  bool located = locationOf(mlirDiagnosticGetLocation(d), &file, &line, &col);
  if (located && !strcmp(file, v->fileName)) {
    for (size_t k = 0; k < v->nExp; ++k) {
      Expectation *e = &v->exp[k];
      if (e->met || e->severity != sev || e->line != line || !strstr(text, e->text)) continue;
      e->met = true;
      free(file);
      free(msg.data);
      return;
    }
  }
  if (located)
    fprintf(v->out, "%s:%d:%d: error: unexpected %s: %s\n", file, line, col,
            severityName(sev), text);
  else
    fprintf(v->out, "%s: error: unexpected %s (at a location without a line): %s\n",
            v->fileName, severityName(sev), text);
  v->failed = true;
  free(file);
  free(msg.data);
}

static MlirLogicalResult handle(MlirDiagnostic d, void *userData) {
  PiperDiagVerifier *v = userData;
  matchOne(v, d);
  for (intptr_t i = 0; i < mlirDiagnosticGetNumNotes(d); ++i) {
    MlirDiagnostic note = mlirDiagnosticGetNote(d, i);
    /* MLIR adds this note to verifier errors; mlir-opt turns it off under
     * --verify-diagnostics, which the C API cannot, so it is not matched. */
    Buffer msg = {0};
    mlirDiagnosticPrint(note, appendToBuffer, &msg);
    bool opDump = msg.data && !strncmp(msg.data, "see current operation: ", 23);
    free(msg.data);
    if (!opDump) matchOne(v, note);
  }
  return mlirLogicalResultSuccess(); /* handled: the printer never sees it */
}

PiperDiagVerifier *piperDiagVerifierCreate(MlirContext ctx, const char *text,
                                           const char *fileName, FILE *out) {
  PiperDiagVerifier *v = calloc(1, sizeof *v);
  if (!v || !(v->fileName = strdup(fileName))) {
    fprintf(out, "piper-opt: error: out of memory\n");
    free(v);
    return NULL;
  }
  v->ctx = ctx;
  v->out = out;
  parseAnnotations(v, text);
  v->id = mlirContextAttachDiagnosticHandler(ctx, handle, v, NULL);
  return v;
}

int piperDiagVerifierFinish(PiperDiagVerifier *v) {
  if (!v) return 1;
  mlirContextDetachDiagnosticHandler(v->ctx, v->id);
  bool failed = v->failed;
  for (size_t k = 0; k < v->nExp; ++k) {
    Expectation *e = &v->exp[k];
    if (!e->met) {
      fprintf(v->out, "%s:%d:%d: error: expected %s \"%s\" was not produced (at line %d)\n",
              v->fileName, e->annotationLine, e->annotationCol, severityName(e->severity),
              e->text, e->line);
      failed = true;
    }
    free(e->text);
  }
  free(v->exp);
  free(v->fileName);
  free(v);
  return failed ? 1 : 0;
}
