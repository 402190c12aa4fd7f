/* libpiper_rt internals: the prt_ctx behind the opaque handle in <piper/runtime.h>, and the
 * pieces prt_main wires together (declarations, init, data, checkpoints). Not part of the ABI
 * that generated code sees; tests include it to drive the runtime without a compiled plan.
 *
 * Errors: a function that can fail for reasons outside the program (a file, a flag, a plan
 * that declares something inconsistent) returns an int status (0 ok) and fills a prt_status
 * with one line "<what>: <where>; <what to do>"; prt_main prints it as
 * "piper: error: <line>" and exits with the status's code. Misuse of the ABI from inside
 * piper_step (a bad tensor id) cannot be reported that way and goes through prt_fatal.
 */
#ifndef PIPER_PRT_INTERNAL_H
#define PIPER_PRT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "piper/runtime.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libpiper_rt writes safetensors by copying memory: it needs a little-endian host"
#endif

#define PRT_MAX_DIMS 4       /* most dims a declared tensor has (d0..d3 in the ABI) */
#define PRT_ALIGN 64         /* byte alignment of every tensor and of the arena */

/* ---- status ---- */

typedef struct prt_status {
  int code;       /* 0 ok; otherwise the process exit code to use: 1 error, 2 bad flags */
  char msg[1024]; /* NUL-terminated "<what>: <where>; <what to do>" when code != 0 */
} prt_status;

/* Records the first failure in st (later ones are dropped: the first is the cause) and
 * returns code, so callers can write `return prt_fail(st, 1, ...)`. */
int prt_fail(prt_status *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints "piper: error: <message>" to stderr and exits 1. Only for what cannot return a
 * status: ABI misuse inside piper_step, out of memory inside a kernel. */
void prt_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* malloc / aligned zeroed alloc that never return NULL: out of memory is prt_fatal. */
void *prt_xmalloc(size_t bytes, const char *what);
void *prt_xalloc_aligned(size_t bytes, const char *what); /* PRT_ALIGN-aligned, zeroed */

/* ---- the context ---- */

/* One declared tensor. */
typedef struct prt_tensor_info {
  char *name;                  /* owned copy of the declared name; NULL = id not declared */
  int32_t kind;                /* prt_tensor_kind */
  int32_t init;                /* prt_init_kind (used for PRT_PARAM only) */
  int64_t ndim;                /* 0..PRT_MAX_DIMS; 0 is a scalar */
  int64_t dims[PRT_MAX_DIMS];  /* dims[0..ndim) in elements; the rest are 1 */
  int64_t numel;               /* product of dims (1 for a scalar) */
  int64_t first_sample;        /* PRT_INPUT: global index of this device's first batch row */
  void *data;                  /* owned, PRT_ALIGN-aligned: numel fp32 (int32 for inputs),
                                  NULL until prt_ctx_allocate */
  float *grad_copy;            /* owned (numel) copy of the gradient handed to
                                  prt_observe_grad during the dump step; NULL otherwise */
} prt_tensor_info;

struct prt_ctx {
  prt_tensor_info *tensors; /* owned array (ntensors), indexed by tensor id */
  int64_t ntensors;         /* 1 + the largest id declared so far */
  int64_t cap;              /* allocated length of tensors */
  int64_t arena_bytes;      /* bytes requested by prt_declare_arena (0 if never called) */
  void *arena;              /* owned, PRT_ALIGN-aligned, arena_bytes (at least PRT_ALIGN) */
  int allocated;            /* 1 once prt_ctx_allocate succeeded: storage exists */
  prt_status decl_status;   /* first error made during piper_setup, reported by allocate */

  int64_t tokens_id;        /* id of the PRT_INPUT "tokens" (B, T); -1 if none */
  int64_t targets_id;       /* id of the PRT_INPUT "targets" (B, T); -1 if none */
  int64_t loss_id;          /* id of the PRT_OUTPUT "loss"; -1 if none */

  double lr;                /* AdamW learning rate (--lr) */
  double weight_decay;      /* AdamW decoupled weight decay (--weight-decay) */
  int64_t adam_t;           /* AdamW step count, 1 for the first update (step s uses s+1) */

  int64_t dump_step;        /* step whose gradients prt_observe_grad captures; -1 = none */
  int64_t step;             /* the step now running (0-based) */
};

/* An empty context with defaults (lr 1e-3, no weight decay, t = 1, no dump). */
prt_ctx *prt_ctx_create(void);
void prt_ctx_destroy(prt_ctx *ctx); /* frees everything; NULL is fine */
/* After piper_setup: checks the declarations (every id 0..n-1 declared once, unique names,
 * inputs "tokens"/"targets" of the same (B, T), one output "loss") and allocates zeroed
 * storage for every tensor and the arena. */
int prt_ctx_allocate(prt_ctx *ctx, prt_status *st);
/* Sum of numel over PRT_PARAM tensors. */
int64_t prt_ctx_param_count(const prt_ctx *ctx);
/* Id of the tensor named `name`, or -1. */
int64_t prt_ctx_find(const prt_ctx *ctx, const char *name);

/* ---- init (init.c) ---- */

/* Fills every PRT_PARAM by its init kind; PRT_INIT_NORMAL uses prt_init_normal. */
void prt_init_params(prt_ctx *ctx, uint64_t seed);
/* out[0..n) = std * normal(0, 1) from the generator seeded by (seed, name); see init.c for
 * the exact algorithm. */
void prt_init_normal(float *out, int64_t n, uint64_t seed, const char *name, double std);

/* ---- data (data.c) ---- */

/* Training tokens: the bytes of a file (or the built-in corpus), V = 256. */
typedef struct prt_data {
  const uint8_t *bytes; /* N bytes: the file's mmap (owned) or prt_default_corpus (borrowed) */
  int64_t n;            /* N, in bytes = tokens */
  int mapped;           /* 1 if bytes is an mmap to unmap */
  const char *name;     /* borrowed: the file name, or "<built-in corpus>" */
} prt_data;

/* Opens `path` (NULL: the built-in corpus) and checks it holds at least T + 2 tokens. */
int prt_data_open(prt_data *d, const char *path, int64_t T, prt_status *st);
void prt_data_close(prt_data *d);
/* Fills the "tokens" and "targets" inputs for step s (see data.c for the offsets). */
void prt_data_fill(const prt_data *d, prt_ctx *ctx, int64_t step);

/* The vectorizable tanh GELU uses (kernels/cpu.c), exposed for its accuracy test. */
float prt_tanh_approx(float u);

extern const char prt_default_corpus[];  /* public-domain English prose, NUL-terminated */
extern const int64_t prt_default_corpus_len; /* strlen(prt_default_corpus) */

/* ---- safetensors (safetensors.c) ---- */

/* One tensor to write: fp32, shape dims[0..ndim). */
typedef struct prt_st_entry {
  const char *name;     /* borrowed, NUL-terminated */
  int64_t ndim;         /* 0..PRT_MAX_DIMS */
  const int64_t *dims;  /* borrowed (ndim) */
  const float *data;    /* borrowed (product of dims) */
} prt_st_entry;

/* Writes a safetensors file atomically: path.tmp, fsync, rename. On failure nothing is
 * left at `path` that was not there before and path.tmp is removed. */
int prt_safetensors_write(const char *path, const prt_st_entry *entries, int64_t n,
                          prt_status *st);
/* Writes every PRT_PARAM, by name, in declaration order. */
int prt_checkpoint_save(const prt_ctx *ctx, const char *path, prt_status *st);
/* Reads every PRT_PARAM from `path`. The file must hold each one as F32 with the declared
 * shape and nothing else except tensors named "optim.*" (ignored). Parameters are only
 * written after the whole header checked out. */
int prt_checkpoint_load(prt_ctx *ctx, const char *path, prt_status *st);
/* Writes the gradients captured by prt_observe_grad (all of them, or an error naming the
 * first parameter whose gradient was not observed). */
int prt_grads_save(const prt_ctx *ctx, const char *path, prt_status *st);

#endif
