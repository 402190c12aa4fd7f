/* The context: what piper_setup declares (prt_declare_tensor, prt_declare_arena), the
 * storage behind it (prt_ctx_allocate), and the accessors piper_step calls (prt_tensor,
 * prt_arena, prt_observe_grad). The distributed declarations (world, groups, shards, streams)
 * live in dist.c; the status / fatal / allocation helpers in fail.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_catalog.h"
#include "prt_ctx.h"
#include "prt_elastic.h"
#include "prt_trace.h"

#define PRT_MAX_TENSORS (1 << 24) /* ids beyond this are surely a corrupt plan */
#define PRT_MAX_NUMEL (INT64_C(1) << 40) /* elements in one tensor (4 TiB of fp32) */

static const char *const PLAN_BUG =
    "this is a bug in the compiled plan (piper_setup); recompile it or report the bug";

/* ---- context lifecycle ---- */

prt_ctx *prt_ctx_create(void) {
  prt_ctx *ctx = prt_xmalloc(sizeof *ctx, "the runtime context");
  memset(ctx, 0, sizeof *ctx);
  ctx->arena_activations = ctx->arena_gradients = -1; /* until the plan says */
  ctx->rank = prt_comm_rank();
  ctx->world = prt_comm_size();
  ctx->lr = 1e-3;
  ctx->weight_decay = 0.0;
  ctx->adam_t = 1;
  ctx->adam_beta1 = ctx->adam_beta2 = ctx->adam_eps = NAN; /* the plan's attributes */
  ctx->clip_scale = 1.0f;
  ctx->dump_step = -1;
  ctx->grad_scattered = -1;
  ctx->backend = prt_backend_current(); /* the CPU device until a GPU plan's setup */
  return ctx;
}

void prt_ctx_destroy(prt_ctx *ctx) {
  if (!ctx) return;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    free(ctx->tensors[i].name);
    prt_device_free(ctx->backend->device, ctx->tensors[i].data);
    if (ctx->tensors[i].staging)
      prt_device_host_free(ctx->backend->device, ctx->tensors[i].staging);
    free(ctx->tensors[i].grad_copy);
  }
  free(ctx->tensors);
  free(ctx->export_weights);
  prt_elastic_free(ctx);
  prt_device_free(ctx->backend->device, ctx->arena);
  for (int64_t k = 0; ctx->streams && k < ctx->nstreams; k++)
    prt_device_stream_destroy(ctx->backend->device, ctx->streams[k]);
  free(ctx->streams);
  for (int64_t g = 0; g < ctx->ngroups; g++) {
    if (ctx->groups_created) prt_comm_group_free(&ctx->groups[g]);
    free(ctx->groups[g].members);
  }
  free(ctx->groups);
  free(ctx->peers);
  for (int64_t k = 0; k < ctx->nstreams; k++) free(ctx->stream_names[k]);
  free(ctx->stream_names);
  free(ctx->ops);
  free(ctx->ops_free);
  prt_trace_free(ctx->trace);
  prt_catalog_free(ctx->catalog);
  free(ctx);
}

int64_t prt_ctx_find(const prt_ctx *ctx, const char *name) {
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (ctx->tensors[i].name && strcmp(ctx->tensors[i].name, name) == 0) return i;
  return -1;
}

int64_t prt_ctx_param_count(const prt_ctx *ctx) {
  int64_t n = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (ctx->tensors[i].name && ctx->tensors[i].kind == PRT_PARAM) n += ctx->tensors[i].numel;
  return n;
}

int64_t prt_ctx_bytes(const prt_ctx *ctx, int32_t kind) {
  int64_t n = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (ctx->tensors[i].name && ctx->tensors[i].kind == kind)
      n += prt_tensor_elem_bytes(&ctx->tensors[i]) * ctx->tensors[i].numel;
  return n;
}

/* ---- called by piper_setup ---- */

/* prt_declare_tensor of any kind (PRT_BF16_COPY's through prt_declare_bf16_copy). */
static void declare_tensor(prt_ctx *ctx, int64_t id, const char *name, int32_t kind,
                           int32_t init, int64_t ndim, int64_t d0, int64_t d1, int64_t d2,
                           int64_t d3, int64_t first_sample) {
  prt_status *st = &ctx->decl_status;
  const char *shown = name ? name : "(null)";
  if (ctx->allocated) {
    prt_fail(st, 1, "tensor '%s' (id %lld) declared after setup finished: "
             "prt_declare_tensor; %s", shown, (long long)id, PLAN_BUG);
    return;
  }
  if (!name || !name[0]) {
    prt_fail(st, 1, "tensor id %lld declared without a name: prt_declare_tensor; %s",
             (long long)id, PLAN_BUG);
    return;
  }
  if (id < 0 || id >= PRT_MAX_TENSORS) {
    prt_fail(st, 1, "tensor '%s' has id %lld, outside 0..%d: prt_declare_tensor; %s", name,
             (long long)id, PRT_MAX_TENSORS - 1, PLAN_BUG);
    return;
  }
  if (kind == PRT_PARAM && (init < PRT_INIT_NORMAL || init > PRT_INIT_BUFFER)) {
    prt_fail(st, 1, "parameter '%s' (id %lld) has init %d, expected 0..3 (prt_init_kind): "
             "prt_declare_tensor; %s", name, (long long)id, init, PLAN_BUG);
    return;
  }
  if (ndim < 0 || ndim > PRT_MAX_DIMS) {
    prt_fail(st, 1, "tensor '%s' (id %lld) has ndim %lld, expected 0..%d: "
             "prt_declare_tensor; %s", name, (long long)id, (long long)ndim, PRT_MAX_DIMS,
             PLAN_BUG);
    return;
  }
  int64_t d[PRT_MAX_DIMS] = {d0, d1, d2, d3};
  int64_t numel = 1;
  for (int64_t k = 0; k < ndim; k++) {
    if (d[k] <= 0 || d[k] > PRT_MAX_NUMEL / numel) {
      prt_fail(st, 1, "tensor '%s' (id %lld) has dim %lld = %lld, expected a positive size "
               "with at most 2^40 elements in all: prt_declare_tensor; %s", name,
               (long long)id, (long long)k, (long long)d[k], PLAN_BUG);
      return;
    }
    numel *= d[k];
  }
  if (id >= ctx->cap) { /* grow the table to hold id, zeroing the new slots */
    int64_t cap = ctx->cap ? ctx->cap : 64;
    while (cap <= id) cap *= 2;
    prt_tensor_info *t = realloc(ctx->tensors, (size_t)cap * sizeof *t);
    if (!t) prt_fatal("out of memory growing the tensor table to %lld entries; free memory",
                      (long long)cap);
    memset(t + ctx->cap, 0, (size_t)(cap - ctx->cap) * sizeof *t);
    ctx->tensors = t;
    ctx->cap = cap;
  }
  prt_tensor_info *t = &ctx->tensors[id];
  if (t->name) {
    prt_fail(st, 1, "tensor id %lld declared twice, as '%s' and as '%s': "
             "prt_declare_tensor; %s", (long long)id, t->name, name, PLAN_BUG);
    return;
  }
  size_t len = strlen(name);
  t->name = prt_xmalloc(len + 1, "a tensor name");
  memcpy(t->name, name, len + 1);
  t->kind = kind;
  t->init = init;
  t->ndim = ndim;
  for (int k = 0; k < PRT_MAX_DIMS; k++) t->dims[k] = k < ndim ? d[k] : 1;
  t->numel = numel;
  t->full_numel = numel;
  t->first_sample = first_sample;
  if (id >= ctx->ntensors) ctx->ntensors = id + 1;
}

void prt_declare_tensor(prt_ctx *ctx, int64_t id, const char *name, int32_t kind,
                        int32_t init, int64_t ndim, int64_t d0, int64_t d1, int64_t d2,
                        int64_t d3, int64_t first_sample) {
  if (kind < PRT_PARAM || kind > PRT_OUTPUT) {
    prt_fail(&ctx->decl_status, 1, "tensor '%s' (id %lld) has kind %d, expected 0..3 "
             "(prt_tensor_kind): prt_declare_tensor; %s", name ? name : "(null)",
             (long long)id, kind, PLAN_BUG);
    return;
  }
  declare_tensor(ctx, id, name, kind, init, ndim, d0, d1, d2, d3, first_sample);
}

void prt_declare_bf16_copy(prt_ctx *ctx, int64_t id, int64_t of) {
  prt_status *st = &ctx->decl_status;
  if (of < 0 || of >= ctx->ntensors || !ctx->tensors[of].name ||
      ctx->tensors[of].kind != PRT_PARAM) {
    prt_fail(st, 1, "tensor id %lld declared as the bf16 copy of tensor %lld, which is not a "
             "declared parameter: prt_declare_bf16_copy; %s", (long long)id, (long long)of,
             PLAN_BUG);
    return;
  }
  const prt_tensor_info *p = &ctx->tensors[of];
  size_t len = strlen(p->name) + sizeof ".bf16";
  char *name = prt_xmalloc(len, "a tensor name");
  snprintf(name, len, "%s.bf16", p->name);
  int failed = st->code;
  declare_tensor(ctx, id, name, PRT_BF16_COPY, 0, p->ndim, p->dims[0], p->dims[1], p->dims[2],
                 p->dims[3], 0);
  free(name);
  if (!failed && !st->code) ctx->tensors[id].copy_of = of;
}

void prt_bf16_copies_refresh(prt_ctx *ctx) {
  prt_device *dev = ctx->backend->device;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    prt_tensor_info *t = &ctx->tensors[i];
    if (!t->name || t->kind != PRT_BF16_COPY) continue;
    const prt_tensor_info *p = &ctx->tensors[t->copy_of];
    size_t n = (size_t)t->numel;
    float *src = prt_host_view_begin(dev, p->data, n * 4, PRT_VIEW_READ, p->name);
    uint16_t *dst = prt_host_view_begin(dev, t->data, n * 2, PRT_VIEW_WRITE, t->name);
    prt_bf16_narrow(dst, src, (int64_t)n);
    prt_host_view_end(dev, t->data, dst, n * 2, PRT_VIEW_WRITE, t->name);
    prt_host_view_end(dev, p->data, src, n * 4, 0, p->name);
  }
}

void prt_declare_arena(prt_ctx *ctx, int64_t bytes) {
  if (ctx->allocated) {
    prt_fail(&ctx->decl_status, 1, "arena declared after setup finished: "
             "prt_declare_arena; %s", PLAN_BUG);
    return;
  }
  if (bytes < 0) {
    prt_fail(&ctx->decl_status, 1, "arena size %lld is negative: prt_declare_arena; %s",
             (long long)bytes, PLAN_BUG);
    return;
  }
  /* A second call keeps the larger size: the arena serves both. */
  if (bytes > ctx->arena_bytes) ctx->arena_bytes = bytes;
}

void prt_declare_arena_use(prt_ctx *ctx, int64_t activation_bytes, int64_t gradient_bytes) {
  if (activation_bytes < 0 || gradient_bytes < 0) {
    prt_fail(&ctx->decl_status, 1, "negative arena use (%lld, %lld): prt_declare_arena_use; %s",
             (long long)activation_bytes, (long long)gradient_bytes, PLAN_BUG);
    return;
  }
  ctx->arena_activations = activation_bytes;
  ctx->arena_gradients = gradient_bytes;
}

/* Names that may be declared more than once: a plan's microbatches each get their own. */
static int prt_may_repeat(const prt_tensor_info *t) {
  if (t->kind == PRT_INPUT) return strcmp(t->name, "tokens") == 0 ||
                                   strcmp(t->name, "targets") == 0;
  return t->kind == PRT_OUTPUT && strcmp(t->name, "loss") == 0;
}

/* Checks input `i` (tokens/targets, (B, T), rows inside the declared batch) and sets the
 * rank's T and default global batch from it. */
static int prt_check_input(prt_ctx *ctx, int64_t i, prt_status *st) {
  const prt_tensor_info *t = &ctx->tensors[i];
  int is_tokens = strcmp(t->name, "tokens") == 0;
  if (!is_tokens && strcmp(t->name, "targets") != 0)
    return prt_fail(st, 1, "input '%s' (id %lld) is neither \"tokens\" nor \"targets\": "
                    "piper_setup; %s", t->name, (long long)i, PLAN_BUG);
  if (t->ndim != 2)
    return prt_fail(st, 1, "input '%s' (id %lld) has %lld dims, expected 2 (B, T): "
                    "piper_setup; %s", t->name, (long long)i, (long long)t->ndim, PLAN_BUG);
  if (t->first_sample < 0)
    return prt_fail(st, 1, "input '%s' (id %lld) has first_sample %lld, expected >= 0: "
                    "piper_setup; %s", t->name, (long long)i, (long long)t->first_sample,
                    PLAN_BUG);
  /* the model's T: a context-parallel member holds Tl = T / G of it (prt_declare_cp) */
  int64_t T = t->dims[1] * (t->cp_size > 1 ? t->cp_size : 1);
  if (ctx->seq_len && T != ctx->seq_len)
    return prt_fail(st, 1, "inputs disagree: '%s' (id %lld) has T = %lld, an earlier input "
                    "T = %lld: piper_setup; %s", t->name, (long long)i, (long long)T,
                    (long long)ctx->seq_len, PLAN_BUG);
  ctx->seq_len = T;
  if (ctx->declared_batch && t->first_sample + t->dims[0] > ctx->declared_batch)
    return prt_fail(st, 1, "input '%s' (id %lld) holds batch rows [%lld, %lld), outside the "
                    "global batch of %lld: piper_setup; %s", t->name, (long long)i,
                    (long long)t->first_sample, (long long)(t->first_sample + t->dims[0]),
                    (long long)ctx->declared_batch, PLAN_BUG);
  if (is_tokens && !ctx->global_batch) ctx->global_batch = t->dims[0];
  return 0;
}

/* Checks the groups: dense ids, members inside the plan's world. */
static int prt_check_groups(const prt_ctx *ctx, prt_status *st) {
  int64_t world = ctx->declared_world ? ctx->declared_world : 1;
  for (int64_t g = 0; g < ctx->ngroups; g++) {
    const prt_group *gr = &ctx->groups[g];
    if (!gr->n)
      return prt_fail(st, 1, "group %lld was never declared (group ids must be dense, "
                      "0..%lld): piper_setup; %s", (long long)g, (long long)ctx->ngroups - 1,
                      PLAN_BUG);
    for (int64_t k = 0; k < gr->n; k++)
      if (gr->members[k] >= world)
        return prt_fail(st, 1, "group %lld has member %lld, but the plan is for %lld "
                        "device%s: piper_setup; %s", (long long)g, (long long)gr->members[k],
                        (long long)world, world == 1 ? "" : "s", PLAN_BUG);
  }
  return 0;
}

int prt_ctx_allocate(prt_ctx *ctx, prt_status *st) {
  if (ctx->allocated) return 0;
  if (ctx->decl_status.code) {
    *st = ctx->decl_status;
    return st->code;
  }
  ctx->seq_len = 0;
  ctx->global_batch = ctx->declared_batch;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    prt_tensor_info *t = &ctx->tensors[i];
    if (!t->name)
      return prt_fail(st, 1, "tensor id %lld was never declared (ids must be dense, "
                      "0..%lld): piper_setup; %s", (long long)i, (long long)ctx->ntensors - 1,
                      PLAN_BUG);
    int64_t other = prt_ctx_find(ctx, t->name);
    if (other != i && !(prt_may_repeat(t) && prt_may_repeat(&ctx->tensors[other])))
      return prt_fail(st, 1, "tensor name '%s' declared twice, ids %lld and %lld: "
                      "piper_setup; %s", t->name, (long long)other, (long long)i, PLAN_BUG);
    if (t->kind == PRT_INPUT && prt_check_input(ctx, i, st)) return st->code;
    if (t->kind == PRT_OUTPUT && strcmp(t->name, "loss") == 0 && t->first_sample < 0)
      return prt_fail(st, 1, "output 'loss' (id %lld) averages over %lld rows, expected >= 0 "
                      "(0 = the global batch): piper_setup; %s", (long long)i,
                      (long long)t->first_sample, PLAN_BUG);
  }
  if (prt_check_groups(ctx, st)) return st->code;
  prt_device *dev = ctx->backend->device;
  for (int64_t i = 0; i < ctx->ntensors; i++) { /* fp32 and int32: 4 B an element */
    prt_tensor_info *t = &ctx->tensors[i];
    prt_status a = {0};
    /* a bf16 copy holds what its parameter holds here (a tensor-parallel slice: the slice) */
    if (t->kind == PRT_BF16_COPY) t->numel = ctx->tensors[t->copy_of].numel;
    if (prt_device_alloc(dev, (size_t)(t->numel * prt_tensor_elem_bytes(t)), &t->data, &a))
      return prt_fail(st, a.code, "%s (tensor '%s')", a.msg, t->name);
    if ((t->kind == PRT_INPUT || t->kind == PRT_OUTPUT) && !dev->host_visible &&
        prt_device_host_alloc(dev, (size_t)t->numel * 4, &t->staging, &a))
      return prt_fail(st, a.code, "%s (the staging of '%s')", a.msg, t->name);
  }
  if (prt_device_alloc(dev, (size_t)ctx->arena_bytes, &ctx->arena, st)) return st->code;
  ctx->streams = prt_xmalloc((size_t)(ctx->nstreams ? ctx->nstreams : 1) *
                             sizeof *ctx->streams, "the stream table");
  memset(ctx->streams, 0, (size_t)(ctx->nstreams ? ctx->nstreams : 1) * sizeof *ctx->streams);
  for (int64_t k = 0; k < ctx->nstreams; k++)
    if (prt_device_stream_create(dev, &ctx->streams[k], st)) return st->code;
  ctx->allocated = 1;
  return 0;
}

/* ---- called by piper_step ---- */

void *prt_tensor(prt_ctx *ctx, int64_t id) {
  if (!ctx->allocated)
    prt_fatal("prt_tensor(%lld) called before the runtime allocated storage (during "
              "piper_setup?): prt_tensor; %s", (long long)id, PLAN_BUG);
  if (id < 0 || id >= ctx->ntensors)
    prt_fatal("tensor id %lld is not declared (ids are 0..%lld): prt_tensor; %s",
              (long long)id, (long long)ctx->ntensors - 1, PLAN_BUG);
  return ctx->tensors[id].data;
}

void *prt_arena(prt_ctx *ctx) {
  if (!ctx->allocated)
    prt_fatal("prt_arena called before the runtime allocated storage (during "
              "piper_setup?): prt_arena; %s", PLAN_BUG);
  return ctx->arena;
}

void prt_observe_grad(prt_ctx *ctx, int64_t param_id, const float *grad) {
  if (ctx->dump_step < 0 || ctx->step != ctx->dump_step) return;
  if (param_id < 0 || param_id >= ctx->ntensors || ctx->tensors[param_id].kind != PRT_PARAM)
    prt_fatal("prt_observe_grad got id %lld, which is not a declared parameter: "
              "prt_observe_grad; %s", (long long)param_id, PLAN_BUG);
  if (!grad)
    prt_fatal("prt_observe_grad got a NULL gradient for '%s': prt_observe_grad; %s",
              ctx->tensors[param_id].name, PLAN_BUG);
  prt_tensor_info *t = &ctx->tensors[param_id];
  if (!t->grad_copy) t->grad_copy = prt_xmalloc((size_t)t->numel * 4, "a gradient dump");
  prt_status st = {0}; /* the gradient is device memory; the copy is the host's */
  prt_device *dev = ctx->backend->device;
  if (prt_device_d2h(dev, t->grad_copy, grad, (size_t)t->numel * 4, NULL, &st) ||
      prt_device_synchronize(dev, &st))
    prt_fatal("%s (the gradient of '%s'): prt_observe_grad", st.msg, t->name);
}
