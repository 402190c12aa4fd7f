/* Checkpoints (checkpoint.c, catalog.c's assembly): every parameter and optimizer-state tensor
 * saved full and by name from whichever ranks hold its pieces, and loaded into any strategy. */
#ifndef PIPER_PRT_CHECKPOINT_H
#define PIPER_PRT_CHECKPOINT_H

#include "prt_ctx.h"
#include "prt_safetensors.h"

/* Collective. Rank 0 writes every parameter and every optimizer-state tensor declared on any
 * rank, full and by name, in the catalog's order (for one device: declaration order),
 * assembled from the ranks that hold their pieces (the lowest rank where pieces overlap), and
 * `step` (completed training steps; -1 = none) in the metadata. When the optimizer state
 * cannot be assembled (prt_catalog_optim_problem) rank 0 prints one warning and writes the
 * parameters only. Returns rank 0's status on rank 0; other ranks fail only where every rank
 * does (see prt_catalog_build): callers prt_agree after. */
int prt_checkpoint_save(prt_ctx *ctx, const char *path, int64_t step, prt_status *st);
/* prt_checkpoint_save with the parameters stored as dtype dt (--save-dtype; NULL or F32: the
 * same as prt_checkpoint_save). Any other dtype writes the parameters only, no optimizer
 * state, and rank 0 warns that the file is an inference checkpoint. Collective. */
int prt_checkpoint_save_as(prt_ctx *ctx, const char *path, int64_t step,
                           const prt_st_dtype *dt, prt_status *st);

/* What a checkpoint held besides parameters (prt_checkpoint_load). */
typedef struct prt_ckpt_info {
  int64_t step;      /* __metadata__ "step": steps the saving run completed; -1 = absent */
  int optim;         /* 1: every local PRT_OPTIM tensor was loaded; 0: they are untouched */
  int foreign_optim; /* the file holds "optim.*" tensors, none of this plan's */
  int optim_skipped; /* the file holds this plan's optimizer state, but the plan's state
                        cannot be mapped to full tensors (prt_catalog_optim_problem) */
} prt_ckpt_info;
/* Collective (it builds the catalog). Reads every local PRT_PARAM (a shard: its slice) from
 * `path`; the file must hold each as F32 with the declared full shape. Optimizer state: if the
 * file holds any tensor named like a PRT_OPTIM tensor of some rank, it must hold every local
 * one as well, F32 with its full shape (a partial set is an error naming what is missing), and
 * each local one (a shard: its slice) is read; if it holds none, they stay as they are. Other
 * tensors must be parameters of some rank, or named "optim.*" (ignored). The file is read only
 * after the whole header checked out. `info` (may be NULL) gets the step and what happened to
 * the optimizer state; alike on every rank that succeeds (it depends on the file and the
 * catalog only). */
int prt_checkpoint_load(prt_ctx *ctx, const char *path, prt_ckpt_info *info, prt_status *st);
/* Collective, like prt_checkpoint_save, for the gradients captured by prt_observe_grad; an
 * error names the first parameter whose gradient no rank observed. */
int prt_grads_save(prt_ctx *ctx, const char *path, prt_status *st);

/* Full tensors assembled on rank 0 from the ranks holding their pieces (catalog.c). */
typedef struct prt_assembly {
  prt_st_entry *entries; /* rank 0: owned (n) in catalog order; names and dims borrow the
                            catalog, data borrows local storage or bufs */
  int64_t n;             /* entries (0 on other ranks) */
  float **bufs;          /* owned (n): tensors assembled here; NULL where an entry borrows */
} prt_assembly;
/* Collective. Rank 0 gets every parameter in full (and every optimizer-state tensor if
 * `with_optim`: only when prt_catalog_optim_problem is NULL), each element taken from the
 * lowest rank holding it (`grads`: the parameters' gradients, from the lowest rank that
 * observed them); other ranks send their pieces. Fails on every rank alike when some elements
 * have no source; `path` is the file being written, for messages. */
int prt_catalog_assemble(prt_ctx *ctx, int grads, int with_optim, const char *path,
                         prt_assembly *out, prt_status *st);
void prt_assembly_free(prt_assembly *a);
/* Collective: what prt_checkpoint_save writes, assembled on rank 0 (the catalog built, the
 * optimizer state included unless prt_catalog_optim_problem says why not, in which case rank
 * 0 prints the one warning naming `path`). prt_checkpoint_save writes it at once; the
 * background writer (checkpoint_ring.c) copies it and writes it later. */
int prt_checkpoint_assemble(prt_ctx *ctx, const char *path, prt_assembly *as, prt_status *st);

#endif
