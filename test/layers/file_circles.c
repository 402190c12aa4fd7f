/* piper-file-circles BUILD_DIR SOURCE_DIR: fails when source files of the build call each other in a
 * circle. The graph is read from the object files, not from the includes: `nm` lists the
 * global symbols each object defines and the ones it uses, and file A depends on file B when A
 * uses a symbol B defines. So a call through a shared internal header (prt_internal.h declares
 * every runtime function) counts as what it is, a call, and a circle spanning two libraries
 * (backend.c in libpiper_rt, comm/nccl.c in libpiper_rt_nccl) counts too.
 *
 * Every object under BUILD_DIR's CMake target folders (…/CMakeFiles/<target>.dir/…) is a node
 * named by its source path relative to the source tree (runtime/kernels/cpu.c): CMake mirrors
 * the source path below the target folder, and "__" stands for "..". A file compiled into
 * several targets is one node. Sources under test/ (test mains, fakes of CUDA and NCCL, the
 * fuzzers) are not read: they are drivers and doubles, not parts of the layers; nor is an
 * object whose source SOURCE_DIR no longer holds (left behind by a file moved or removed).
 *
 * Prints `files N, dependencies E, circles 0` and exits 0; or, for each circle (a strongly
 * connected set of files), `circle: a.c b.c` and one line per dependency inside it,
 * `  a.c -> b.c: sym, sym`, and exits 1. test/layers/no-circles.test runs it on the build and
 * on a scratch pair of files that call each other. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { MAX_NAMES_SHOWN = 6 };

typedef struct {
  char *name;  /* source path, "runtime/backend.c" */
  char **objs; /* the objects compiled from it (owned paths) */
  int nObjs;
} File;

typedef struct {
  char *sym;
  int file;
} Def;

typedef struct {
  int from, to;
  char *names; /* the symbols, ", "-separated; owned */
  int count;   /* how many symbols in all */
} Dep;

static File *files;
static int nFiles, capFiles;
static Def *defs;
static size_t nDefs, capDefs;
static Dep *deps;
static int nDeps, capDeps;
static const char *buildRoot, *sourceRoot;

static void outOfMemory(void) {
  fprintf(stderr, "piper-file-circles: out of memory\n");
  exit(2);
}

static void *grow(void *p, size_t n, size_t size) {
  void *q = realloc(p, n * size);
  if (!q) outOfMemory();
  return q;
}

static char *dup(const char *s) {
  char *d = strdup(s);
  if (!d) outOfMemory();
  return d;
}

/* The source path of object `path` (under buildRoot), or NULL when it is not a target's
 * object: <dir>/CMakeFiles/<target>.dir/<rel>.o -> <dir>/<rel>, with "__" as "..". */
static char *sourceOf(const char *path) {
  size_t n = strlen(path);
  if (n < 3 || strcmp(path + n - 2, ".o")) return NULL;
  const char *cm = strstr(path, "/CMakeFiles/");
  const char *dir = cm ? strstr(cm, ".dir/") : NULL;
  if (!cm || !dir) return NULL;
  const char *rel = path + strlen(buildRoot);
  while (*rel == '/') rel++;
  char parts[64][256];
  int np = 0;
  char buf[4096];
  /* the folder holding CMakeFiles, then the path below the target folder */
  snprintf(buf, sizeof buf, "%.*s/%.*s", (int)(cm - rel), rel,
           (int)(path + n - 2 - (dir + 5)), dir + 5);
  for (char *tok = strtok(buf, "/"); tok; tok = strtok(NULL, "/")) {
    if (!strcmp(tok, "__") || !strcmp(tok, "..")) {
      if (np > 0) np--;
    } else if (strcmp(tok, ".") && np < 64) {
      snprintf(parts[np++], sizeof parts[0], "%s", tok);
    }
  }
  char out[4096] = "";
  for (int i = 0; i < np; i++) {
    if (i) strncat(out, "/", sizeof out - strlen(out) - 1);
    strncat(out, parts[i], sizeof out - strlen(out) - 1);
  }
  return np ? dup(out) : NULL;
}

static int fileNamed(const char *name) {
  for (int i = 0; i < nFiles; i++)
    if (!strcmp(files[i].name, name)) return i;
  if (nFiles == capFiles) files = grow(files, (size_t)(capFiles = capFiles * 2 + 16), sizeof *files);
  files[nFiles] = (File){dup(name), NULL, 0};
  return nFiles++;
}

static int visit(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st;
  (void)ftw;
  if (type != FTW_F) return 0;
  char *src = sourceOf(path);
  if (!src) return 0;
  char there[8192];
  snprintf(there, sizeof there, "%s/%s", sourceRoot, src);
  struct stat sst;
  if (strncmp(src, "test/", 5) && stat(there, &sst) == 0) {
    int i = fileNamed(src); /* may move files */
    File *f = &files[i];
    f->objs = grow(f->objs, (size_t)f->nObjs + 1, sizeof *f->objs);
    f->objs[f->nObjs++] = dup(path);
  }
  free(src);
  return 0;
}

/* A global symbol an object defines or uses, as `nm` lists it. */
typedef struct {
  int file;
  char *sym;
  bool defined;
} Sym;

static Sym *syms;
static size_t nSyms, capSyms;

/* Reads the global symbols `nm` lists for every object into syms: one nm for them all (a
 * process per object made the test several times slower on a loaded machine), its lines
 * "OBJECT: SYMBOL TYPE ..." in the order of the objects given. */
static void readSymbols(void) {
  size_t cap = 64, len = 0;
  char *cmd = grow(NULL, cap, 1);
  int nObjs = 0;
  for (int f = 0; f < nFiles; f++)
    for (int o = 0; o < files[f].nObjs; o++, nObjs++) {
      size_t need = len + strlen(files[f].objs[o]) + 16;
      if (need > cap) cmd = grow(cmd, cap = 2 * need, 1);
      len += (size_t)snprintf(cmd + len, cap - len, "%s'%s'", len ? " " : "nm -A -P ",
                              files[f].objs[o]);
    }
  FILE *p = popen(cmd, "r");
  if (!p) {
    fprintf(stderr, "piper-file-circles: cannot run nm\n");
    exit(2);
  }
  int f = 0, o = 0; /* the object nm is listing */
  char line[8192], sym[2048], type[8];
  while (fgets(line, sizeof line, p)) {
    /* the object of this line: the one listed now, or a later one (an object without
     * symbols prints nothing) */
    while (f < nFiles) {
      const char *obj = files[f].objs[o];
      size_t n = strlen(obj);
      if (!strncmp(line, obj, n) && line[n] == ':') break;
      if (++o == files[f].nObjs) o = 0, f++;
    }
    if (f == nFiles) break;
    const char *rest = line + strlen(files[f].objs[o]) + 1;
    if (sscanf(rest, "%2047s %7s", sym, type) != 2) continue;
    char t = type[0];
    bool used = t == 'U' || t == 'w' || t == 'v'; /* undefined, weak undefined */
    if (!used && !strchr("TDBRWVGSCiu", t)) continue; /* lower case: file-private */
    if (nSyms == capSyms) syms = grow(syms, capSyms = capSyms * 2 + 1024, sizeof *syms);
    syms[nSyms++] = (Sym){f, dup(sym), !used};
  }
  int rc = pclose(p);
  free(cmd);
  if (rc != 0 || f == nFiles) {
    fprintf(stderr, "piper-file-circles: nm failed on the %d objects (exit %d)\n", nObjs, rc);
    exit(2);
  }
}

static void addDef(int file, const char *sym) {
  if (nDefs == capDefs) defs = grow(defs, capDefs = capDefs * 2 + 256, sizeof *defs);
  defs[nDefs++] = (Def){dup(sym), file};
}

static int byDefSym(const void *a, const void *b) {
  const Def *x = a, *y = b;
  int c = strcmp(x->sym, y->sym);
  return c ? c : x->file - y->file;
}

static void addUse(int file, const char *sym) {
  size_t lo = 0, hi = nDefs; /* the first definition of sym (defs is sorted) */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (strcmp(defs[mid].sym, sym) < 0) lo = mid + 1;
    else hi = mid;
  }
  Def *d = &defs[lo]; /* none: a library's symbol (libc, MPI, MLIR) */
  for (; d < defs + nDefs && !strcmp(d->sym, sym); d++) {
    if (d->file == file) continue;
    Dep *e = NULL;
    for (int i = 0; i < nDeps && !e; i++)
      if (deps[i].from == file && deps[i].to == d->file) e = &deps[i];
    if (!e) {
      if (nDeps == capDeps) deps = grow(deps, (size_t)(capDeps = capDeps * 2 + 64), sizeof *deps);
      e = &deps[nDeps++];
      *e = (Dep){file, d->file, dup(""), 0};
    }
    bool seen = false; /* the same symbol from two objects of one file */
    for (const char *s = strstr(e->names, sym); s && !seen; s = strstr(s + 1, sym)) {
      size_t n = strlen(sym);
      seen = (s == e->names || s[-1] == ' ') && (s[n] == ',' || s[n] == 0);
    }
    if (seen) continue;
    e->count++;
    size_t n = strlen(e->names) + strlen(sym) + 3;
    e->names = grow(e->names, n, 1);
    if (e->names[0]) strcat(e->names, ", ");
    strcat(e->names, sym);
  }
}

/* The first MAX_NAMES_SHOWN names of dependency e, then how many more. */
static void printNames(const Dep *e) {
  const char *s = e->names;
  for (int i = 0; i < MAX_NAMES_SHOWN && *s; i++) {
    size_t n = strcspn(s, ",");
    printf("%s%.*s", i ? ", " : "", (int)n, s);
    s += n;
    while (*s == ',' || *s == ' ') s++;
  }
  if (e->count > MAX_NAMES_SHOWN) printf(", and %d more", e->count - MAX_NAMES_SHOWN);
}

/* Tarjan's strongly connected components over files and deps. */
static int *indexOf, *lowOf, *stack, *comp, nStack, counter, nComps;
static bool *onStack;

static void strongConnect(int v) {
  indexOf[v] = lowOf[v] = counter++;
  stack[nStack++] = v;
  onStack[v] = true;
  for (int i = 0; i < nDeps; i++) {
    if (deps[i].from != v) continue;
    int w = deps[i].to;
    if (indexOf[w] < 0) {
      strongConnect(w);
      if (lowOf[w] < lowOf[v]) lowOf[v] = lowOf[w];
    } else if (onStack[w] && indexOf[w] < lowOf[v]) {
      lowOf[v] = indexOf[w];
    }
  }
  if (lowOf[v] != indexOf[v]) return;
  int w;
  do {
    w = stack[--nStack];
    onStack[w] = false;
    comp[w] = nComps;
  } while (w != v);
  nComps++;
}

static int byName(const void *a, const void *b) {
  return strcmp(((const File *)a)->name, ((const File *)b)->name);
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: piper-file-circles BUILD_DIR SOURCE_DIR (a CMake build tree of "
                    "piper and its sources)\n");
    return 2;
  }
  buildRoot = argv[1];
  sourceRoot = argv[2];
  if (nftw(buildRoot, visit, 32, FTW_PHYS) != 0) {
    fprintf(stderr, "piper-file-circles: cannot walk %s\n", buildRoot);
    return 2;
  }
  if (nFiles == 0) {
    fprintf(stderr, "piper-file-circles: no object files of a CMake target under %s; build "
                    "first\n", buildRoot);
    return 2;
  }
  qsort(files, (size_t)nFiles, sizeof *files, byName); /* a stable report */
  readSymbols();
  for (size_t i = 0; i < nSyms; i++)
    if (syms[i].defined) addDef(syms[i].file, syms[i].sym);
  qsort(defs, nDefs, sizeof *defs, byDefSym);
  for (size_t i = 0; i < nSyms; i++)
    if (!syms[i].defined) addUse(syms[i].file, syms[i].sym);

  indexOf = grow(NULL, (size_t)nFiles, sizeof *indexOf);
  lowOf = grow(NULL, (size_t)nFiles, sizeof *lowOf);
  stack = grow(NULL, (size_t)nFiles, sizeof *stack);
  comp = grow(NULL, (size_t)nFiles, sizeof *comp);
  onStack = grow(NULL, (size_t)nFiles, sizeof *onStack);
  for (int v = 0; v < nFiles; v++) indexOf[v] = -1, onStack[v] = false;
  for (int v = 0; v < nFiles; v++)
    if (indexOf[v] < 0) strongConnect(v);

  int circles = 0;
  for (int c = 0; c < nComps; c++) {
    int members = 0;
    for (int v = 0; v < nFiles; v++) members += comp[v] == c;
    if (members < 2) continue;
    circles++;
    printf("circle:");
    for (int v = 0; v < nFiles; v++)
      if (comp[v] == c) printf(" %s", files[v].name);
    printf("\n");
    for (int v = 0; v < nFiles; v++)
      for (int i = 0; i < nDeps; i++)
        if (deps[i].from == v && comp[v] == c && comp[deps[i].to] == c) {
          printf("  %s -> %s: ", files[v].name, files[deps[i].to].name);
          printNames(&deps[i]);
          printf("\n");
        }
  }
  printf("files %d, dependencies %d, circles %d\n", nFiles, nDeps, circles);
  return circles ? 1 : 0;
}
