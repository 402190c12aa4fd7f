/* The tensor catalog (catalog.c): which rank holds which range of every parameter and
 * optimizer-state tensor, for checkpoints and the model's facts (its vocabulary). */
#ifndef PIPER_PRT_CATALOG_H
#define PIPER_PRT_CATALOG_H

#include "prt_ctx.h"

/* Builds ctx->catalog if it is not built yet: every parameter and optimizer-state name
 * declared on any rank with its full shape and the element ranges each rank holds.
 * Collective. Fails (identically on every rank) if ranks disagree on a parameter's shape or
 * kind, or some elements of a parameter are held by no rank. The same faults in optimizer
 * state (or a moment "optim.<slot>.<param>" whose shape is not its parameter's) do not fail:
 * they make prt_catalog_optim_problem say why its state cannot be assembled. */
int prt_catalog_build(prt_ctx *ctx, prt_status *st);
/* PRT_PARAM or PRT_OPTIM if some rank declares a tensor called `name`, else -1 (after
 * prt_catalog_build). */
int32_t prt_catalog_kind(const prt_ctx *ctx, const char *name);
/* The first dimension of the parameter called `name` (its full shape) on any rank, or 0 if
 * no rank declares it: "wte.weight" gives the vocabulary V. */
int64_t prt_catalog_dim0(const prt_ctx *ctx, const char *name);
/* The model's vocabulary V: dim 0 of its token embedding (GPT's wte.weight, Qwen3's
 * model.embed_tokens.weight); 0 if the plan declares neither. */
int64_t prt_catalog_vocab(const prt_ctx *ctx);
/* Sum of the full sizes of every parameter in the world. */
int64_t prt_catalog_numel(const prt_ctx *ctx);
/* Optimizer-state names declared in the world (0: the plan has no optimizer state). */
int64_t prt_catalog_optim_count(const prt_ctx *ctx);
/* NULL if the optimizer state assembles into full tensors; else why not, one line (then
 * checkpoints neither save nor load it). Alike on every rank. */
const char *prt_catalog_optim_problem(const prt_ctx *ctx);
void prt_catalog_free(prt_catalog *c);

#endif
