/* cuDNN loaded at run time (kernels/cuda_cudnn.h): dlopen, the calls piper uses resolved by
 * name, a handle on the current device, and the one line that says why the attention falls
 * back to piper's own kernels. */
#include "kernels/cuda_cudnn.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cudnn_graph.h>

/* The calls resolved from the library: the handle's, then the backend API the attention graph
 * is built with. */
#define PRT_CUDNN_CALLS(X)                                                                     \
  X(cudnnGetVersion, size_t, (void))                                                           \
  X(cudnnGetErrorString, const char *, (cudnnStatus_t))                                        \
  X(cudnnCreate, cudnnStatus_t, (cudnnHandle_t *))                                             \
  X(cudnnDestroy, cudnnStatus_t, (cudnnHandle_t))                                              \
  X(cudnnSetStream, cudnnStatus_t, (cudnnHandle_t, cudaStream_t))                              \
  X(cudnnBackendCreateDescriptor, cudnnStatus_t,                                               \
    (cudnnBackendDescriptorType_t, cudnnBackendDescriptor_t *))                                \
  X(cudnnBackendDestroyDescriptor, cudnnStatus_t, (cudnnBackendDescriptor_t))                  \
  X(cudnnBackendSetAttribute, cudnnStatus_t,                                                   \
    (cudnnBackendDescriptor_t, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t,       \
     int64_t, const void *))                                                                   \
  X(cudnnBackendGetAttribute, cudnnStatus_t,                                                   \
    (cudnnBackendDescriptor_t const, cudnnBackendAttributeName_t, cudnnBackendAttributeType_t, \
     int64_t, int64_t *, void *))                                                              \
  X(cudnnBackendFinalize, cudnnStatus_t, (cudnnBackendDescriptor_t))                           \
  X(cudnnBackendExecute, cudnnStatus_t,                                                        \
    (cudnnHandle_t, cudnnBackendDescriptor_t, cudnnBackendDescriptor_t))

struct prt_cudnn {
  void *lib;             /* dlopen's handle */
  char path[4096];       /* the file it came from */
  cudnnHandle_t handle;  /* on the device current at prt_cudnn_open */
#define PRT_CUDNN_FIELD(name, ret, args) ret(*name) args;
  PRT_CUDNN_CALLS(PRT_CUDNN_FIELD)
#undef PRT_CUDNN_FIELD
};

enum { PRT_CUDNN_TRIED = 512 };

/* Appends to the `tried` list (what the failure message names) */
static void tried_add(char *tried, const char *fmt, ...) {
  size_t used = strlen(tried);
  if (used + 3 >= PRT_CUDNN_TRIED) return;
  if (used) strcpy(tried + used, "; "), used += 2;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(tried + used, PRT_CUDNN_TRIED - used, fmt, ap);
  va_end(ap);
}

/* dlopen of `file`, its path kept in c->path; on failure dlerror's text goes to `tried` */
static bool try_open(prt_cudnn *c, const char *file, const char *where, char *tried) {
  c->lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (!c->lib) {
    tried_add(tried, "%s: %s", where, dlerror());
    return false;
  }
  snprintf(c->path, sizeof c->path, "%s", file);
  return true;
}

/* The PyTorch wheels' cuDNN: the first nvidia/cudnn/lib/libcudnn.so.9 of a python3*'s
 * site-packages or dist-packages under these roots that loads */
static bool try_pytorch(prt_cudnn *c, char *tried) {
  char roots[5][1024];
  int nr = 0;
  static const char *const fixed[] = {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    snprintf(roots[nr++], sizeof roots[0], "%s", fixed[i]);
  const char *e;
  if ((e = getenv("VIRTUAL_ENV")) && *e) snprintf(roots[nr++], sizeof roots[0], "%s/lib", e);
  if ((e = getenv("HOME")) && *e) snprintf(roots[nr++], sizeof roots[0], "%s/.local/lib", e);
  for (int i = 0; i < nr; i++)
    for (int site = 0; site < 2; site++) {
      char pattern[1200];
      snprintf(pattern, sizeof pattern, "%.1000s/python3*/%s/nvidia/cudnn/lib/libcudnn.so.9",
               roots[i], site ? "dist-packages" : "site-packages");
      glob_t g;
      bool opened = false;
      if (glob(pattern, 0, NULL, &g) == 0)
        for (size_t k = 0; k < g.gl_pathc && !opened; k++)
          opened = try_open(c, g.gl_pathv[k], g.gl_pathv[k], tried);
      globfree(&g);
      if (opened) return true;
    }
  tried_add(tried, "no PyTorch nvidia/cudnn/lib/libcudnn.so.9 under /usr/local/lib, /usr/lib, "
                   "/opt/conda/lib, $VIRTUAL_ENV/lib, ~/.local/lib");
  return false;
}

static bool load(prt_cudnn *c, char *tried) {
  const char *env = getenv("PIPER_CUDNN");
  if (env && *env) { /* a file, or the folder holding libcudnn.so.9: the only place looked */
    char file[4096];
    size_t len = strlen(env);
    bool folder = len >= 1 && env[len - 1] == '/';
    snprintf(file, sizeof file, "%s%slibcudnn.so.9", env, folder ? "" : "/");
    if (try_open(c, env, "PIPER_CUDNN", tried)) return true;
    return try_open(c, file, "PIPER_CUDNN folder", tried);
  }
  if (try_open(c, "libcudnn.so.9", "the system's libcudnn.so.9", tried)) return true;
  return try_pytorch(c, tried);
}

prt_cudnn *prt_cudnn_open(char *why, size_t n) {
  char tried[PRT_CUDNN_TRIED] = "";
  prt_cudnn *c = calloc(1, sizeof *c);
  if (!c) {
    snprintf(why, n, "out of memory");
    return NULL;
  }
  if (!load(c, tried)) {
    snprintf(why, n, "cannot load libcudnn.so.9 (%s)", tried);
    free(c);
    return NULL;
  }
#define PRT_CUDNN_RESOLVE(name, ret, args)                                                     \
  if (!(*(void **)&c->name = dlsym(c->lib, #name))) {                                          \
    snprintf(why, n, "%s has no %s (cuDNN 9 has it: an older library?)", c->path, #name);      \
    prt_cudnn_close(c);                                                                        \
    return NULL;                                                                               \
  }
  PRT_CUDNN_CALLS(PRT_CUDNN_RESOLVE)
#undef PRT_CUDNN_RESOLVE
  size_t v = c->cudnnGetVersion();
  if (v / 10000 != 9) {
    snprintf(why, n, "%s is cuDNN %zu.%zu, not 9", c->path, v / 10000, v / 100 % 100);
    prt_cudnn_close(c);
    return NULL;
  }
  cudnnStatus_t s = c->cudnnCreate(&c->handle);
  if (s != CUDNN_STATUS_SUCCESS) {
    snprintf(why, n, "cuDNN %zu.%zu.%zu from %.700s: cudnnCreate: %s", v / 10000, v / 100 % 100,
             v % 100, c->path, c->cudnnGetErrorString(s));
    c->handle = NULL;
    prt_cudnn_close(c);
    return NULL;
  }
  return c;
}

void prt_cudnn_close(prt_cudnn *c) {
  if (!c) return;
  if (c->handle) c->cudnnDestroy(c->handle);
  if (c->lib) dlclose(c->lib);
  free(c);
}

size_t prt_cudnn_version(const prt_cudnn *c) { return c->cudnnGetVersion(); }
const char *prt_cudnn_path(const prt_cudnn *c) { return c->path; }

prt_cudnn *prt_cudnn_attention_engine(void) {
  char why[1024];
  prt_cudnn *c = prt_cudnn_open(why, sizeof why);
  if (c) { /* the attention graph is what is missing */
    size_t v = c->cudnnGetVersion();
    snprintf(why, sizeof why,
             "cuDNN %zu.%zu.%zu loaded from %.700s, but piper does not build its fused attention "
             "graph yet (issue 34)",
             v / 10000, v / 100 % 100, v % 100, c->path);
    prt_cudnn_close(c);
    c = NULL;
  }
  fprintf(stderr, "piper: attention: %s; using piper's own kernels (kernels/cuda_fa2.cu)\n",
          why);
  return c;
}
