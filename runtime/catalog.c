/* The parameter catalog: every parameter name declared on any rank, its full shape, and the
 * element range of the flattened full tensor each rank holds (everything for a replica or a
 * pipeline stage's own parameter, a slice for a shard). Built once by an allgather of every
 * rank's declarations, so every rank holds the same catalog and takes the same decisions
 * from it without talking again.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_internal.h"

static const char *const PLAN_BUG =
    "this is a bug in the compiled plan (piper_setup); recompile it or report the bug";

/* One rank's piece of a parameter. */
typedef struct prt_piece {
  int64_t rank;   /* the rank holding it */
  int64_t id;     /* its tensor id on that rank */
  int64_t offset; /* first element of the flattened full tensor */
  int64_t numel;  /* elements */
} prt_piece;

/* One parameter name of the world. */
typedef struct prt_cat_entry {
  char *name;                  /* owned */
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
};

/* A contiguous run of elements of an entry taken from one piece. */
typedef struct prt_chunk {
  int64_t entry;  /* catalog index */
  int64_t pos;    /* first element in the full tensor */
  int64_t len;    /* elements */
  int64_t piece;  /* index into the entry's pieces */
} prt_chunk;

/* ---- building ---- */

/* The wire record of one local parameter: 8 int64 then the name, padded to 8 bytes. */
enum { PRT_REC_WORDS = 4 + PRT_MAX_DIMS };

static void prt_shape_text(char *out, size_t cap, int64_t ndim, const int64_t *dims) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int64_t i = 0; i < ndim && k < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

static void *prt_pack_params(const prt_ctx *ctx, int64_t *bytes) {
  int64_t total = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (ctx->tensors[i].kind == PRT_PARAM)
      total += 8 * PRT_REC_WORDS + (int64_t)(strlen(ctx->tensors[i].name) + 8) / 8 * 8;
  char *buf = prt_xmalloc((size_t)total, "the parameter catalog"), *p = buf;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind != PRT_PARAM) continue;
    int64_t len = (int64_t)strlen(t->name);
    int64_t w[PRT_REC_WORDS] = {i, t->ndim, t->shard_offset, t->numel};
    memcpy(w + 4, t->dims, sizeof t->dims);
    memcpy(p, w, sizeof w);
    p += sizeof w;
    memset(p, 0, (size_t)(len + 8) / 8 * 8);
    memcpy(p, t->name, (size_t)len);
    p += (len + 8) / 8 * 8;
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

/* Lists the chunks that assemble every entry, each element from the lowest usable piece;
 * usable[e][p] (NULL: all usable). Returns the chunk count, or -1 with *gap_entry, *gap_begin
 * and *gap_end set at the first elements no usable piece holds. */
static int64_t prt_plan_chunks(const prt_catalog *c, char **usable, prt_chunk **out,
                               int64_t *gap_entry, int64_t *gap_begin, int64_t *gap_end) {
  int64_t n = 0, cap = 0;
  prt_chunk *ch = NULL;
  for (int64_t e = 0; e < c->n; e++) {
    const prt_cat_entry *en = &c->e[e];
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

int prt_catalog_build(prt_ctx *ctx, prt_status *st) {
  if (ctx->catalog) return 0;
  int64_t bytes = 0;
  void *mine = prt_pack_params(ctx, &bytes);
  int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
  char *all = prt_comm_allgatherv(mine, bytes, counts);
  free(mine);
  prt_catalog *c = prt_xmalloc(sizeof *c, "the parameter catalog");
  memset(c, 0, sizeof *c);
  int64_t cap = 0;
  char *p = all;
  char want[128], got[128];
  for (int64_t r = 0; r < ctx->world && !st->code; r++) {
    char *end = p + counts[r];
    while (p < end) {
      int64_t w[PRT_REC_WORDS];
      memcpy(w, p, sizeof w);
      const char *name = p + sizeof w;
      p += sizeof w + (strlen(name) + 8) / 8 * 8;
      int64_t k = 0;
      while (k < c->n && strcmp(c->e[k].name, name) != 0) k++;
      if (k == c->n) {
        if (c->n == cap) {
          cap = cap ? 2 * cap : 64;
          prt_cat_entry *g = realloc(c->e, (size_t)cap * sizeof *g);
          if (!g) prt_fatal("out of memory building the parameter catalog");
          c->e = g;
        }
        prt_cat_entry *en = &c->e[c->n++];
        memset(en, 0, sizeof *en);
        size_t len = strlen(name);
        en->name = prt_xmalloc(len + 1, "a parameter name");
        memcpy(en->name, name, len + 1);
        en->ndim = w[1];
        memcpy(en->dims, w + 4, sizeof en->dims);
        en->numel = 1;
        for (int64_t d = 0; d < en->ndim; d++) en->numel *= en->dims[d];
      }
      prt_cat_entry *en = &c->e[k];
      if (w[1] != en->ndim || memcmp(w + 4, en->dims, sizeof en->dims) != 0) {
        prt_shape_text(want, sizeof want, en->ndim, en->dims);
        prt_shape_text(got, sizeof got, w[1], w + 4);
        prt_fail(st, 1, "parameter '%s' has shape %s on rank %lld and %s on rank %lld: "
                 "piper_setup; %s", name, want, (long long)en->pieces[0].rank, got,
                 (long long)r, PLAN_BUG);
        break;
      }
      prt_piece *g = realloc(en->pieces, (size_t)(en->npieces + 1) * sizeof *g);
      if (!g) prt_fatal("out of memory building the parameter catalog");
      en->pieces = g;
      en->pieces[en->npieces++] = (prt_piece){r, w[0], w[2], w[3]};
    }
    p = end;
  }
  free(all);
  free(counts);
  if (!st->code) { /* every element of every parameter must live somewhere */
    prt_chunk *ch = NULL;
    int64_t e = 0, a = 0, b = 0;
    if (prt_plan_chunks(c, NULL, &ch, &e, &a, &b) < 0) {
      prt_shape_text(want, sizeof want, c->e[e].ndim, c->e[e].dims);
      prt_fail(st, 1, "parameter '%s' (shape %s): elements [%lld, %lld) are held by no rank "
               "(prt_declare_shard): piper_setup; %s", c->e[e].name, want, (long long)a,
               (long long)b, PLAN_BUG);
    }
    free(ch);
  }
  if (st->code) {
    prt_catalog_free(c);
    return st->code;
  }
  ctx->catalog = c;
  return 0;
}

int prt_catalog_has(const prt_ctx *ctx, const char *name) {
  const prt_catalog *c = ctx->catalog;
  for (int64_t k = 0; c && k < c->n; k++)
    if (strcmp(c->e[k].name, name) == 0) return 1;
  return 0;
}

int64_t prt_catalog_numel(const prt_ctx *ctx) {
  int64_t n = 0;
  for (int64_t k = 0; ctx->catalog && k < ctx->catalog->n; k++) n += ctx->catalog->e[k].numel;
  return n;
}

/* ---- assembly ---- */

void prt_assembly_free(prt_assembly *a) {
  for (int64_t k = 0; a->bufs && k < a->n; k++) free(a->bufs[k]);
  free(a->bufs);
  free(a->entries);
  memset(a, 0, sizeof *a);
}

/* Local storage of `id` to read from: its values, or its observed gradient. */
static const float *prt_source(const prt_ctx *ctx, int64_t id, int grads) {
  return grads ? ctx->tensors[id].grad_copy : ctx->tensors[id].data;
}

int prt_catalog_assemble(prt_ctx *ctx, int grads, const char *path, prt_assembly *out,
                         prt_status *st) {
  memset(out, 0, sizeof *out);
  if (prt_catalog_build(ctx, st)) return st->code;
  const prt_catalog *c = ctx->catalog;
  char **usable = NULL;
  if (grads) { /* which pieces were observed: every rank's flags, by tensor id */
    char *mine = prt_xmalloc((size_t)ctx->ntensors + 1, "gradient flags");
    for (int64_t i = 0; i < ctx->ntensors; i++) mine[i] = ctx->tensors[i].grad_copy != NULL;
    int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
    char *all = prt_comm_allgatherv(mine, ctx->ntensors, counts);
    int64_t *start = prt_xmalloc((size_t)ctx->world * sizeof *start, "gather offsets");
    for (int64_t r = 0, o = 0; r < ctx->world; o += counts[r], r++) start[r] = o;
    usable = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *usable, "gradient flags");
    for (int64_t e = 0; e < c->n; e++) {
      usable[e] = prt_xmalloc((size_t)c->e[e].npieces, "gradient flags");
      for (int64_t p = 0; p < c->e[e].npieces; p++) {
        const prt_piece *pc = &c->e[e].pieces[p];
        usable[e][p] = pc->id < counts[pc->rank] && all[start[pc->rank] + pc->id];
      }
    }
    free(mine);
    free(all);
    free(counts);
    free(start);
  }
  prt_chunk *ch = NULL;
  int64_t e0 = 0, a = 0, b = 0;
  int64_t nch = prt_plan_chunks(c, usable, &ch, &e0, &a, &b);
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
      const float *src = prt_source(ctx, pc->id, grads) + (ch[k].pos - pc->offset);
      prt_comm_send_bytes(src, 4 * ch[k].len, 0);
    }
    free(ch);
    return 0;
  }
  out->n = c->n;
  out->entries = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *out->entries, "entries");
  out->bufs = prt_xmalloc((size_t)(c->n ? c->n : 1) * sizeof *out->bufs, "entries");
  for (int64_t e = 0, k = 0; e < c->n; e++) {
    const prt_cat_entry *en = &c->e[e];
    int64_t first = k;
    while (k < nch && ch[k].entry == e) k++;
    const prt_piece *p0 = &en->pieces[ch[first].piece];
    out->bufs[e] = NULL;
    out->entries[e] = (prt_st_entry){en->name, en->ndim, en->dims, NULL};
    if (k - first == 1 && p0->rank == 0) { /* held whole here: borrow it */
      out->entries[e].data = prt_source(ctx, p0->id, grads);
      continue;
    }
    float *buf = prt_xmalloc((size_t)en->numel * 4, "an assembled tensor");
    for (int64_t j = first; j < k; j++) {
      const prt_piece *pc = &en->pieces[ch[j].piece];
      if (pc->rank == 0)
        memcpy(buf + ch[j].pos, prt_source(ctx, pc->id, grads) + (ch[j].pos - pc->offset),
               (size_t)ch[j].len * 4);
      else
        prt_comm_recv_bytes(buf + ch[j].pos, 4 * ch[j].len, pc->rank);
    }
    out->bufs[e] = buf;
    out->entries[e].data = buf;
  }
  free(ch);
  return 0;
}
