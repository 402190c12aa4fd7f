/* Checkpoints and gradient dumps: which tensors a file holds, under which names, and what a
 * run resumes from. The bytes are the safetensors format's business (safetensors.c).
 *
 * A checkpoint holds the parameters, full and by name whatever the layout that saved them
 * (shards and tensor-parallel slices are assembled on rank 0, catalog.c), and, to resume
 * exactly, the optimizer state (AdamW's moments, "optim.<slot>.<param>", full tensors too)
 * and the number of completed steps (__metadata__ "step"), which is AdamW's step count and
 * the data loader's position. Loading checks the whole header against this plan's catalog
 * before reading a byte: every local parameter must be there with its full shape; optimizer
 * state is all or nothing; a tensor that is neither a parameter of some rank nor "optim.*"
 * means the file is another model's. Tensors may be F32, BF16 or F16 (a Hugging Face
 * checkpoint ships in bf16): converted to the fp32 master weights as they are read.
 * --save-dtype bf16 writes an inference checkpoint: the parameters rounded to BF16, no
 * optimizer state (prt_checkpoint_save_as).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prt_backend.h"
#include "prt_catalog.h"
#include "prt_checkpoint.h"
#include "prt_ctx.h"
#include "prt_safetensors.h"

/* "[768, 3072]" for error messages. */
static void prt_shape_str(char *out, size_t cap, int64_t ndim, const int64_t *dims) {
  size_t k = (size_t)snprintf(out, cap, "[");
  for (int64_t i = 0; i < ndim && k < cap; i++)
    k += (size_t)snprintf(out + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
  if (k < cap) snprintf(out + k, cap - k, "]");
}

/* ---- saving ---- */


int prt_checkpoint_assemble(prt_ctx *ctx, const char *path, prt_assembly *as, prt_status *st) {
  if (prt_catalog_build(ctx, st)) return st->code;
  const char *problem = prt_catalog_optim_problem(ctx);
  if (problem && ctx->rank == 0) {
    fprintf(stderr, "piper: warning: %s: %s holds parameters only (no optimizer state); a "
            "run resumed from it restarts AdamW; recompile the plan with a current "
            "piper-compile to checkpoint optimizer state\n", problem, path);
    fflush(stderr);
  }
  return prt_catalog_assemble(ctx, 0, !problem, path, as, st);
}

int prt_checkpoint_save(prt_ctx *ctx, const char *path, int64_t step, prt_status *st) {
  prt_assembly as;
  if (prt_checkpoint_assemble(ctx, path, &as, st)) return st->code;
  if (ctx->rank == 0) prt_safetensors_write(path, as.entries, as.n, step, st);
  prt_assembly_free(&as);
  return st->code;
}

int prt_checkpoint_save_as(prt_ctx *ctx, const char *path, int64_t step,
                           const prt_st_dtype *dt, prt_status *st) {
  if (!dt || strcmp(dt->name, "F32") == 0) return prt_checkpoint_save(ctx, path, step, st);
  /* Another dtype is for inference: rounded moments would not resume AdamW exactly, so the
   * file holds the parameters only (a run started from it restarts AdamW, and says so). */
  if (prt_catalog_build(ctx, st)) return st->code;
  if (ctx->rank == 0 && prt_catalog_optim_count(ctx)) {
    fprintf(stderr, "piper: warning: --save-dtype %s: %s holds the parameters in %s only (an "
            "inference checkpoint: no optimizer state; a run started from it restarts AdamW "
            "from the rounded weights)\n", dt->flag, path, dt->name);
    fflush(stderr);
  }
  prt_assembly as;
  if (prt_catalog_assemble(ctx, 0, 0, path, &as, st)) return st->code;
  if (ctx->rank == 0) prt_safetensors_write_as(path, as.entries, as.n, step, dt, st);
  prt_assembly_free(&as);
  return st->code;
}

int prt_grads_save(prt_ctx *ctx, const char *path, prt_status *st) {
  prt_assembly as;
  if (prt_catalog_assemble(ctx, 1, 0, path, &as, st)) return st->code;
  if (ctx->rank == 0) prt_safetensors_write(path, as.entries, as.n, -1, st);
  prt_assembly_free(&as);
  return st->code;
}

/* ---- loading ---- */

static int prt_has_prefix(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Checks that file tensor e can fill local tensor t (a dtype Piper reads, t's full shape, the
 * bytes that takes in that dtype); `what` names t's kind in messages. */
static int prt_check_entry(const prt_tensor_info *t, const prt_st_in *e, const char *what,
                           const char *path, const char *fix, prt_status *st) {
  char want[128], got[128];
  prt_shape_str(want, sizeof want, t->ndim, t->dims);
  prt_shape_str(got, sizeof got, e->ndim, e->dims);
  if (!e->type)
    return prt_fail(st, 1, "%s '%s' has dtype %s in the checkpoint, which Piper does not read "
                    "(it reads %s, converted to fp32): %s; convert the tensor to one of "
                    "those (e.g. tensor.float() in PyTorch)", what, t->name, e->dtype,
                    PRT_ST_DTYPES_READ, path);
  int same = e->ndim == t->ndim;
  for (int64_t k = 0; same && k < t->ndim; k++) same = e->dims[k] == t->dims[k];
  if (!same)
    return prt_fail(st, 1, "%s '%s' has shape %s in the checkpoint, expected %s: %s; %s",
                    what, t->name, got, want, path, fix);
  if (e->end - e->begin != (uint64_t)t->full_numel * e->type->size)
    return prt_fail(st, 1, "%s '%s' spans %llu bytes in the checkpoint, but %s %s needs "
                    "%llu: %s; the file is corrupt: re-create it", what, t->name,
                    (unsigned long long)(e->end - e->begin), e->type->name, want,
                    (unsigned long long)t->full_numel * e->type->size, path);
  return 0;
}

/* Checks the header's tensors: each names a parameter or optimizer state of some rank (the
 * catalog) or "optim.*"; each local parameter is there with its full shape, and so is each
 * local optimizer-state tensor if the file holds any of the world's. Fills idx[id] with the
 * tensor to read into local tensor id (NULL: none) and info->optim. */
static int prt_check_tensors(const prt_ctx *ctx, const char *path, const prt_st_header *h,
                             const prt_st_in **idx, prt_ckpt_info *info, prt_status *st) {
  const char *fix = "pass a checkpoint saved by a binary of the same model "
                    "(--save-checkpoint)";
  int64_t ours = 0; /* tensors of the file that are optimizer state of this plan */
  for (int64_t j = 0; j < h->n; j++) {
    const prt_st_in *t = &h->ts[j];
    int32_t kind = prt_catalog_kind(ctx, t->name);
    ours += kind == PRT_OPTIM;
    if (kind < 0 && prt_has_prefix(t->name, "optim.")) info->foreign_optim = 1;
    else if (kind < 0) /* a tensor of no rank */
      return prt_fail(st, 1, "checkpoint has tensor '%s', which is not a parameter of this "
                      "model: %s; %s (optimizer tensors must be named \"optim.*\")",
                      t->name, path, fix);
  }
  if (ours) info->foreign_optim = 0;
  int load_optim = ours > 0 && !prt_catalog_optim_problem(ctx);
  info->optim_skipped = ours > 0 && !load_optim;
  char want[128];
  for (int64_t i = 0; i < ctx->ntensors; i++) idx[i] = NULL;
  for (int64_t k = 0; k < 2 * ctx->ntensors; k++) { /* parameters first, then the state */
    int64_t i = k % ctx->ntensors;
    const prt_tensor_info *t = &ctx->tensors[i];
    if (k < ctx->ntensors ? t->kind != PRT_PARAM : !(t->kind == PRT_OPTIM && load_optim))
      continue;
    const prt_st_in *e = prt_st_header_find(h, t->name);
    prt_shape_str(want, sizeof want, t->ndim, t->dims);
    if (!e && t->kind == PRT_PARAM)
      return prt_fail(st, 1, "checkpoint lacks parameter '%s' (F32 %s): %s; %s", t->name,
                      want, path, fix);
    if (!e)
      return prt_fail(st, 1, "checkpoint has optimizer state but lacks '%s' (F32 %s): %s; "
                      "pass a checkpoint with this model's whole optimizer state (saved by "
                      "--save-checkpoint) or with none (AdamW then starts fresh)", t->name,
                      want, path);
    if (prt_check_entry(t, e, t->kind == PRT_PARAM ? "parameter" : "optimizer state", path,
                        fix, st))
      return st->code;
    idx[i] = e;
  }
  info->optim = load_optim;
  return 0;
}

int prt_checkpoint_load(prt_ctx *ctx, const char *path, prt_ckpt_info *info, prt_status *st) {
  prt_ckpt_info mine;
  if (!info) info = &mine;
  *info = (prt_ckpt_info){.step = -1};
  if (prt_catalog_build(ctx, st)) return st->code; /* collective: before any local exit */
  FILE *f = fopen(path, "rb");
  if (!f)
    return prt_fail(st, 1, "cannot open checkpoint: %s: %s; pass an existing safetensors "
                    "file to --init-checkpoint", path, strerror(errno));
  struct stat sb;
  prt_st_header h = {.step = -1};
  const prt_st_in **idx = NULL;
  uint64_t data_start = 0;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    prt_fail(st, 1, "checkpoint is not a regular file: %s; pass a safetensors file", path);
    goto done;
  }
  if (prt_safetensors_read_header(f, (uint64_t)sb.st_size, path, &h, &data_start, st))
    goto done;
  idx = prt_xmalloc((size_t)(ctx->ntensors ? ctx->ntensors : 1) * sizeof *idx, "an index");
  if (prt_check_tensors(ctx, path, &h, idx, info, st)) goto done;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    if (!idx[i]) continue;
    prt_tensor_info *t = &ctx->tensors[i];
    /* Straight into storage on a host-visible device; else through a host buffer. Each
     * contiguous run of the full tensor (one for a whole tensor or a shard, one per block of a
     * tensor-parallel slice). */
    size_t bytes = (size_t)t->numel * 4;
    float *view =
        prt_host_view_begin(ctx->backend->device, t->data, bytes, PRT_VIEW_WRITE, t->name);
    int ok = 1;
    for (int64_t j = 0, full, run; ok && j < t->numel; j += run) {
      run = prt_tensor_run(t, j, &full);
      ok = !prt_safetensors_read(f, data_start, idx[i], (uint64_t)full, view + j, (size_t)run);
    }
    prt_host_view_end(ctx->backend->device, t->data, view, bytes, ok ? PRT_VIEW_WRITE : 0, t->name);
    if (!ok) {
      prt_fail(st, 1, "cannot read %s '%s' from checkpoint: %s; the file changed or "
               "is unreadable", t->kind == PRT_PARAM ? "parameter" : "optimizer state",
               t->name, path);
      goto done;
    }
  }
  info->step = h.step;
  prt_bf16_copies_refresh(ctx); /* the parameters changed: their bf16 copies follow */
done:
  if (st->code) info->optim = 0;
  prt_st_header_free(&h);
  free(idx);
  fclose(f);
  return st->code;
}
