/* The tensor catalog: every parameter and optimizer-state name declared on any rank, its full
 * shape, and the element range of the flattened full tensor each rank holds (everything for a
 * replica or a pipeline stage's own tensor, a slice for a shard). Built once by an allgather of
 * every rank's declarations, so every rank holds the same catalog and takes the same decisions
 * from it without talking again.
 *
 * Parameters must be consistent (one shape everywhere, every element held somewhere): anything
 * else is a plan bug and fails the run. Optimizer state is checked the same way, plus one rule:
 * a tensor named "optim.<slot>.<param>" for a parameter of the catalog must have that
 * parameter's full shape (how piper-compile declares AdamW moments). Plans compiled before
 * optimizer shards were declared with prt_declare_shard break one of these rules (each ZeRO
 * rank declares its 1-D slice as if it were the whole tensor); then the optimizer state as a
 * whole is marked unusable (optim_problem says why) and checkpoints carry parameters only,
 * instead of failing the run or writing rank 0's slice as the full moment.
 *
 * Assembly (checkpoints, gradient dumps): every element of a full tensor comes from the
 * lowest rank that holds it (for gradients: the lowest rank that observed it). Every rank
 * computes the same list of chunks (entry, range, source rank) first, so a gap fails on
 * every rank alike before any byte moves; then the other ranks send their chunks to rank 0
 * in list order and rank 0 receives them in list order (blocking point-to-point on the
 * runtime's own communicator: each sender's sequence is a subsequence of rank 0's, so no
 * cycle can form). Rank 0 borrows a tensor it holds whole instead of copying it; it holds
 * every other full tensor at once until the file is written (like a rank-0 full state dict).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_catalog.h"
#include "prt_checkpoint.h"
#include "prt_ctx.h"
#include "prt_safetensors.h"

static const char *const PLAN_BUG =
    "this is a bug in the compiled plan (piper_setup); recompile it or report the bug";

/* One rank's piece of a catalog tensor. */
typedef struct prt_piece {
  int64_t rank;   /* the rank holding it */
  int64_t id;     /* its tensor id on that rank */
  int64_t offset; /* first element of the flattened full tensor */
  int64_t numel;  /* elements */
  int64_t local;  /* where they start in the holder's local storage (a tensor-parallel slice
                     holds several runs of the full tensor, one piece each) */
} prt_piece;

/* One parameter or optimizer-state name of the world. */
typedef struct prt_cat_entry {
  char *name;                  /* owned */
  int32_t kind;                /* PRT_PARAM or PRT_OPTIM */
  int64_t ndim;                /* full shape: ndim, dims */
  int64_t dims[PRT_MAX_DIMS];
  int64_t numel;               /* full elements */
  prt_piece *pieces;           /* owned (npieces), in rank order */
  int64_t npieces;
} prt_cat_entry;

struct prt_catalog {
  prt_cat_entry *e; /* owned (n), in order of first declaration: rank 0's, then rank 1's new
                       names, ... (one device: declaration order) */
  int64_t n;
  int64_t noptim;   /* entries of kind PRT_OPTIM */
  char optim_problem[512]; /* why the optimizer state cannot be assembled into full tensors
                              (first reason found); empty when it can */
};

/* A contiguous run of elements of an entry taken from one piece. */
typedef struct prt_chunk {
  int64_t entry;  /* catalog index */
  int64_t pos;    /* first element in the full tensor */
  int64_t len;    /* elements */
  int64_t piece;  /* index into the entry's pieces */
} prt_chunk;

/* ---- building ---- */

/* The wire record of one contiguous run of a local tensor (a whole tensor or a shard is one
 * run; a tensor-parallel slice one per block): id, ndim, first element in the full tensor,
 * numel, kind, first local element, dims (int64 each) then the name, NUL-padded to a multiple
 * of 8 bytes. */
enum { PRT_REC_WORDS = 6 + PRT_MAX_DIMS };

/* A gradient flag (prt_catalog_assemble): the tensor is a buffer, which has no gradient. */
enum { PRT_NO_GRAD = 2 };

/* The kinds the catalog holds. */
static int prt_cataloged(int32_t kind) { return kind == PRT_PARAM || kind == PRT_OPTIM; }

static void prt_shape_text(char *out, size_t cap, int64_t ndim, const int64_t *dims) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int64_t i = 0; i < ndim && k < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

static void *prt_pack_tensors(const prt_ctx *ctx, int64_t *bytes) {
  int64_t total = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (prt_cataloged(ctx->tensors[i].kind)) {
      const prt_tensor_info *t = &ctx->tensors[i];
      int64_t runs = 0, full;
      for (int64_t j = 0; j < t->numel; j += prt_tensor_run(t, j, &full)) runs++;
      if (!runs) runs = 1; /* an empty tensor still has its record */
      total += runs * (8 * PRT_REC_WORDS + (int64_t)(strlen(t->name) + 8) / 8 * 8);
    }
  char *buf = prt_xmalloc((size_t)(total ? total : 1), "the tensor catalog"), *p = buf;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (!prt_cataloged(t->kind)) continue;
    int64_t len = (int64_t)strlen(t->name);
    int64_t j = 0; /* one record per contiguous run, at least one */
    do {
      int64_t full = t->shard_offset, run = 0;
      if (t->numel) run = prt_tensor_run(t, j, &full);
      int64_t w[PRT_REC_WORDS] = {i, t->ndim, full, run, t->kind, j};
      memcpy(w + 6, t->dims, sizeof t->dims);
      memcpy(p, w, sizeof w);
      p += sizeof w;
      memset(p, 0, (size_t)(len + 8) / 8 * 8);
      memcpy(p, t->name, (size_t)len);
      p += (len + 8) / 8 * 8;
      j += run;
    } while (j < t->numel);
  }
  *bytes = total;
  return buf;
}

void prt_catalog_free(prt_catalog *c) {
  if (!c) return;
  for (int64_t k = 0; k < c->n; k++) {
    free(c->e[k].name);
    free(c->e[k].pieces);
  }
  free(c->e);
  free(c);
}

/* Lists the chunks that assemble every entry of kind `kind` (-1: every kind), each element
 * from the lowest usable piece; usable[e][p] (NULL: all usable). Returns the chunk count, or
 * -1 with *gap_entry, *gap_begin and *gap_end set at the first elements no usable piece
 * holds. */
static int64_t prt_plan_chunks(const prt_catalog *c, int32_t kind, char **usable,
                               prt_chunk **out, int64_t *gap_entry, int64_t *gap_begin,
                               int64_t *gap_end) {
  int64_t n = 0, cap = 0;
  prt_chunk *ch = NULL;
  for (int64_t e = 0; e < c->n; e++) {
    const prt_cat_entry *en = &c->e[e];
    if (kind >= 0 && en->kind != kind) continue;
    if (usable && en->npieces && usable[e][0] == PRT_NO_GRAD) continue; /* a buffer */
    for (int64_t pos = 0; pos < en->numel;) {
      int64_t best = -1;
      for (int64_t p = 0; p < en->npieces; p++) {
        const prt_piece *pc = &en->pieces[p];
        if ((usable && !usable[e][p]) || pc->offset > pos || pos >= pc->offset + pc->numel)
          continue;
        if (best < 0 || pc->rank < en->pieces[best].rank) best = p;
      }
      if (best < 0) { /* a gap: up to the next usable piece */
        int64_t end = en->numel;
        for (int64_t p = 0; p < en->npieces; p++)
          if ((!usable || usable[e][p]) && en->pieces[p].offset > pos &&
              en->pieces[p].offset < end)
            end = en->pieces[p].offset;
        free(ch);
        *gap_entry = e, *gap_begin = pos, *gap_end = end;
        return -1;
      }
      /* until the piece ends or a lower rank's usable piece begins */
      int64_t end = en->pieces[best].offset + en->pieces[best].numel;
      for (int64_t p = 0; p < en->npieces; p++) {
        const prt_piece *pc = &en->pieces[p];
        if ((!usable || usable[e][p]) && pc->rank < en->pieces[best].rank && pc->offset > pos &&
            pc->offset < end)
          end = pc->offset;
      }
      if (n == cap) {
        cap = cap ? 2 * cap : 64;
        prt_chunk *g = realloc(ch, (size_t)cap * sizeof *g);
        if (!g) prt_fatal("out of memory planning a checkpoint");
        ch = g;
      }
      ch[n++] = (prt_chunk){e, pos, end - pos, best};
      pos = end;
    }
  }
  *out = ch;
  return n;
}

/* Records why the optimizer state cannot be assembled (the first reason wins). */
static void prt_optim_problem(prt_catalog *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void prt_optim_problem(prt_catalog *c, const char *fmt, ...) {
  if (c->optim_problem[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->optim_problem, sizeof c->optim_problem, fmt, ap);
  va_end(ap);
}

static int64_t prt_catalog_index(const prt_catalog *c, const char *name) {
  for (int64_t k = 0; k < c->n; k++)
    if (strcmp(c->e[k].name, name) == 0) return k;
  return -1;
}

/* Optimizer state named "optim.<slot>.<param>" must have its parameter's full shape. */
static void prt_check_optim_shapes(prt_catalog *c) {
  char want[128], got[128];
  for (int64_t k = 0; k < c->n && !c->optim_problem[0]; k++) {
    const prt_cat_entry *en = &c->e[k];
    if (en->kind != PRT_OPTIM || strncmp(en->name, "optim.", 6) != 0) continue;
    const char *dot = strchr(en->name + 6, '.');
    int64_t p = dot ? prt_catalog_index(c, dot + 1) : -1;
    if (p < 0 || c->e[p].kind != PRT_PARAM) continue;
    const prt_cat_entry *pe = &c->e[p];
    if (pe->ndim == en->ndim && memcmp(pe->dims, en->dims, sizeof pe->dims) == 0) continue;
    prt_shape_text(got, sizeof got, en->ndim, en->dims);
    prt_shape_text(want, sizeof want, pe->ndim, pe->dims);
    prt_optim_problem(c, "optimizer state '%s' is declared with shape %s but its parameter "
                      "'%s' has %s (a ZeRO slice declared without prt_declare_shard?)",
                      en->name, got, pe->name, want);
  }
}

int prt_catalog_build(prt_ctx *ctx, prt_status *st) {
  if (ctx->catalog) return 0;
  int64_t bytes = 0;
  void *mine = prt_pack_tensors(ctx, &bytes);
  int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
  char *all = prt_comm_allgatherv(mine, bytes, counts);
  free(mine);
  prt_catalog *c = prt_xmalloc(sizeof *c, "the tensor catalog");
  memset(c, 0, sizeof *c);
  int64_t cap = 0;
  char *p = all;
  char want[128], got[128];
  static const char *const kind_name[] = {"a parameter", "optimizer state"};
  for (int64_t r = 0; r < ctx->world && !st->code; r++) {
    char *end = p + counts[r];
    while (p < end) {
      int64_t w[PRT_REC_WORDS];
      memcpy(w, p, sizeof w);
      const char *name = p + sizeof w;
      p += sizeof w + (strlen(name) + 8) / 8 * 8;
      int64_t k = prt_catalog_index(c, name);
      if (k < 0) {
        if (c->n == cap) {
          cap = cap ? 2 * cap : 64;
          prt_cat_entry *g = realloc(c->e, (size_t)cap * sizeof *g);
          if (!g) prt_fatal("out of memory building the tensor catalog");
          c->e = g;
        }
        k = c->n++;
        prt_cat_entry *en = &c->e[k];
        memset(en, 0, sizeof *en);
        size_t len = strlen(name);
        en->name = prt_xmalloc(len + 1, "a tensor name");
        memcpy(en->name, name, len + 1);
        en->kind = (int32_t)w[4];
        en->ndim = w[1];
        memcpy(en->dims, w + 6, sizeof en->dims);
        en->numel = 1;
        for (int64_t d = 0; d < en->ndim; d++) en->numel *= en->dims[d];
        c->noptim += en->kind == PRT_OPTIM;
      }
      prt_cat_entry *en = &c->e[k];
      if (w[4] != en->kind) {
        prt_fail(st, 1, "tensor '%s' is %s on rank %lld and %s on rank %lld: piper_setup; %s",
                 name, kind_name[en->kind == PRT_OPTIM], (long long)en->pieces[0].rank,
                 kind_name[w[4] == PRT_OPTIM], (long long)r, PLAN_BUG);
        break;
      }
      if (w[1] != en->ndim || memcmp(w + 6, en->dims, sizeof en->dims) != 0) {
        prt_shape_text(want, sizeof want, en->ndim, en->dims);
        prt_shape_text(got, sizeof got, w[1], w + 6);
        if (en->kind == PRT_OPTIM) { /* the layout is unusable, the run is not */
          prt_optim_problem(c, "optimizer state '%s' has shape %s on rank %lld and %s on rank "
                            "%lld", name, want, (long long)en->pieces[0].rank, got,
                            (long long)r);
          continue;
        }
        prt_fail(st, 1, "parameter '%s' has shape %s on rank %lld and %s on rank %lld: "
                 "piper_setup; %s", name, want, (long long)en->pieces[0].rank, got,
                 (long long)r, PLAN_BUG);
        break;
      }
      prt_piece *g = realloc(en->pieces, (size_t)(en->npieces + 1) * sizeof *g);
      if (!g) prt_fatal("out of memory building the tensor catalog");
      en->pieces = g;
      en->pieces[en->npieces++] = (prt_piece){r, w[0], w[2], w[3], w[5]};
    }
    p = end;
  }
  free(all);
  free(counts);
  if (!st->code) { /* every element of every parameter must live somewhere */
    prt_chunk *ch = NULL;
    int64_t e = 0, a = 0, b = 0;
    if (prt_plan_chunks(c, PRT_PARAM, NULL, &ch, &e, &a, &b) < 0) {
      prt_shape_text(want, sizeof want, c->e[e].ndim, c->e[e].dims);
      prt_fail(st, 1, "parameter '%s' (shape %s): elements [%lld, %lld) are held by no rank "
               "(prt_declare_shard): piper_setup; %s", c->e[e].name, want, (long long)a,
               (long long)b, PLAN_BUG);
    }
    free(ch);
  }
  if (!st->code && c->noptim && !c->optim_problem[0]) { /* the same for optimizer state */
    prt_chunk *ch = NULL;
    int64_t e = 0, a = 0, b = 0;
    if (prt_plan_chunks(c, PRT_OPTIM, NULL, &ch, &e, &a, &b) < 0) {
      prt_shape_text(want, sizeof want, c->e[e].ndim, c->e[e].dims);
      prt_optim_problem(c, "optimizer state '%s' (shape %s): elements [%lld, %lld) are held "
                        "by no rank", c->e[e].name, want, (long long)a, (long long)b);
    }
    free(ch);
    prt_check_optim_shapes(c);
  }
  if (st->code) {
    prt_catalog_free(c);
    return st->code;
  }
  ctx->catalog = c;
  return 0;
}

int32_t prt_catalog_kind(const prt_ctx *ctx, const char *name) {
  int64_t k = ctx->catalog ? prt_catalog_index(ctx->catalog, name) : -1;
  return k < 0 ? -1 : ctx->catalog->e[k].kind;
}

int64_t prt_catalog_dim0(const prt_ctx *ctx, const char *name) {
  int64_t k = ctx->catalog ? prt_catalog_index(ctx->catalog, name) : -1;
  return k < 0 || ctx->catalog->e[k].ndim < 1 ? 0 : ctx->catalog->e[k].dims[0];
}

int64_t prt_catalog_vocab(const prt_ctx *ctx) {
  static const char *const embeddings[] = {"wte.weight", "model.embed_tokens.weight"};
  for (size_t i = 0; i < sizeof embeddings / sizeof embeddings[0]; i++) {
    int64_t V = prt_catalog_dim0(ctx, embeddings[i]);
    if (V > 0) return V;
  }
  return 0;
}

int64_t prt_catalog_numel(const prt_ctx *ctx) {
  int64_t n = 0;
  for (int64_t k = 0; ctx->catalog && k < ctx->catalog->n; k++)
    if (ctx->catalog->e[k].kind == PRT_PARAM) n += ctx->catalog->e[k].numel;
  return n;
}

int64_t prt_catalog_optim_count(const prt_ctx *ctx) {
  return ctx->catalog ? ctx->catalog->noptim : 0;
}

const char *prt_catalog_optim_problem(const prt_ctx *ctx) {
  return ctx->catalog && ctx->catalog->optim_problem[0] ? ctx->catalog->optim_problem : NULL;
}

/* ---- assembly ---- */

void prt_assembly_free(prt_assembly *a) {
  for (int64_t k = 0; a->bufs && k < a->n; k++) free(a->bufs[k]);
  free(a->bufs);
  free(a->entries);
  memset(a, 0, sizeof *a);
}

/* Local storage of `id` to read from: its values (device memory), or its observed gradient
 * (host memory). */
static const float *prt_source(const prt_ctx *ctx, int64_t id, int grads) {
  return grads ? ctx->tensors[id].grad_copy : ctx->tensors[id].data;
}

/* 1 if prt_source(ctx, id, grads) may be read by the host in place. */
static int prt_source_on_host(const prt_ctx *ctx, int grads) {
  return grads || ctx->backend->device->host_visible;
}

/* dst (host) = n floats of a source at src: memcpy, or a copy from the device. */
static void prt_read_source(prt_ctx *ctx, int grads, float *dst, const float *src, int64_t n,
                            const char *name) {
  if (prt_source_on_host(ctx, grads)) {
    memcpy(dst, src, (size_t)n * 4);
    return;
  }
  prt_status st = {0};
  if (prt_device_d2h(ctx->backend->device, dst, src, (size_t)n * 4, NULL, &st) ||
      prt_device_synchronize(ctx->backend->device, &st))
    prt_fatal("%s (reading '%s' for a checkpoint)", st.msg, name);
}

int prt_catalog_assemble(prt_ctx *ctx, int grads, int with_optim, const char *path,
                         prt_assembly *out, prt_status *st) {
  memset(out, 0, sizeof *out);
  if (prt_catalog_build(ctx, st)) return st->code;
  const prt_catalog *c = ctx->catalog;
  int32_t kind = with_optim && !grads ? -1 : PRT_PARAM; /* which entries: -1 all */
  if (kind < 0 && c->optim_problem[0])
    return prt_fail(st, 1, "cannot assemble optimizer state: %s; this is a bug in the "
                    "runtime (prt_checkpoint_save checks it first)", c->optim_problem);
  char **usable = NULL;
  if (grads) { /* which pieces were observed: every rank's flags, by tensor id */
    char *mine = prt_xmalloc((size_t)ctx->ntensors + 1, "gradient flags");
    /* 1 observed, 0 not, PRT_NO_GRAD a buffer (non-trained state: no gradient, not dumped) */
    for (int64_t i = 0; i < ctx->ntensors; i++)
      mine[i] = ctx->tensors[i].init == PRT_INIT_BUFFER ? PRT_NO_GRAD
                                                         : ctx->tensors[i].grad_copy != NULL;
    int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
    char *all = prt_comm_allgatherv(mine, ctx->ntensors, counts);
    int64_t *start = prt_xmalloc((size_t)ctx->world * sizeof *start, "gather offsets");
    for (int64_t r = 0, o = 0; r < ctx->world; o += counts[r], r++) start[r] = o;
    usable = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *usable, "gradient flags");
    for (int64_t e = 0; e < c->n; e++) {
      usable[e] = prt_xmalloc((size_t)c->e[e].npieces, "gradient flags");
      for (int64_t p = 0; p < c->e[e].npieces; p++) {
        const prt_piece *pc = &c->e[e].pieces[p];
        usable[e][p] = pc->id < counts[pc->rank] ? all[start[pc->rank] + pc->id] : 0;
      }
    }
    free(mine);
    free(all);
    free(counts);
    free(start);
  }
  prt_chunk *ch = NULL;
  int64_t e0 = 0, a = 0, b = 0;
  int64_t nch = prt_plan_chunks(c, kind, usable, &ch, &e0, &a, &b);
  for (int64_t e = 0; usable && e < c->n; e++) free(usable[e]);
  free(usable);
  if (nch < 0) { /* only gradients can have gaps here: the catalog checked the values */
    if (ctx->world == 1)
      return prt_fail(st, 1, "the gradient of parameter '%s' was not observed at step %lld: "
                      "--dump-grads %s; the compiled plan must call prt_observe_grad for "
                      "every parameter", c->e[e0].name, (long long)ctx->dump_step, path);
    return prt_fail(st, 1, "the gradient of parameter '%s', elements [%lld, %lld), was not "
                    "observed on any rank at step %lld: --dump-grads %s; the compiled plan "
                    "must call prt_observe_grad for every parameter", c->e[e0].name,
                    (long long)a, (long long)b, (long long)ctx->dump_step, path);
  }
  if (ctx->rank != 0) { /* send my chunks, in list order */
    for (int64_t k = 0; k < nch; k++) {
      const prt_piece *pc = &c->e[ch[k].entry].pieces[ch[k].piece];
      if (pc->rank != ctx->rank) continue;
      const float *src = prt_source(ctx, pc->id, grads) + pc->local + (ch[k].pos - pc->offset);
      const char *name = c->e[ch[k].entry].name;
      if (prt_source_on_host(ctx, grads)) {
        prt_comm_send_bytes(src, 4 * ch[k].len, 0);
        continue;
      }
      float *host = prt_xmalloc((size_t)ch[k].len * 4, "a checkpoint piece");
      prt_read_source(ctx, grads, host, src, ch[k].len, name);
      prt_comm_send_bytes(host, 4 * ch[k].len, 0);
      free(host);
    }
    free(ch);
    return 0;
  }
  out->entries = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *out->entries, "entries");
  out->bufs = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *out->bufs, "entries");
  for (int64_t k = 0; k < nch;) { /* the chunks of one entry follow each other */
    const prt_cat_entry *en = &c->e[ch[k].entry];
    int64_t first = k, n = out->n++;
    while (k < nch && ch[k].entry == ch[first].entry) k++;
    const prt_piece *p0 = &en->pieces[ch[first].piece];
    out->bufs[n] = NULL;
    out->entries[n] = (prt_st_entry){en->name, en->ndim, en->dims, NULL};
    if (k - first == 1 && p0->rank == 0 && prt_source_on_host(ctx, grads)) {
      out->entries[n].data = prt_source(ctx, p0->id, grads); /* held whole here: borrow */
      continue;
    }
    float *buf = prt_xmalloc((size_t)en->numel * 4, "an assembled tensor");
    for (int64_t j = first; j < k; j++) {
      const prt_piece *pc = &en->pieces[ch[j].piece];
      if (pc->rank == 0)
        prt_read_source(ctx, grads, buf + ch[j].pos,
                        prt_source(ctx, pc->id, grads) + pc->local + (ch[j].pos - pc->offset),
                        ch[j].len,
                        en->name);
      else
        prt_comm_recv_bytes(buf + ch[j].pos, 4 * ch[j].len, pc->rank);
    }
    out->bufs[n] = buf;
    out->entries[n].data = buf;
  }
  free(ch);
  return 0;
}
