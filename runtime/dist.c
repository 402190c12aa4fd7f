/* Distributed plans: the declarations piper_setup makes about the world (prt_declare_world,
 * _group, _batch, _shard, _stream), the nonblocking transfers piper_step issues (checked here,
 * carried out by the linked comm backend, drawn in the trace) and the agreements prt_main
 * makes between ranks (statuses, the batch, the step's loss).
 *
 * Handles: slot index in the low 32 bits, the slot's generation above them, so a handle
 * waited twice or never issued is caught even after its slot was reused.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "piper/base/shard.h"
#include "prt_backend.h"
#include "prt_ckpt_ring.h"
#include "prt_ctx.h"
#include "prt_dist.h"
#include "prt_elastic.h"
#include "prt_trace.h"

#define PRT_MAX_GROUPS (1 << 16)  /* group ids beyond this are surely a corrupt plan */
#define PRT_MAX_STREAMS 1024      /* trace lanes */


static const char *const PLAN_BUG =
    "this is a bug in the compiled plan; recompile it or report the bug";

/* ---- called by piper_setup ---- */

/* Records a declaration error (the first one) unless setup already finished. */
static int prt_decl_open(prt_ctx *ctx, const char *fn) {
  if (!ctx->allocated) return 1;
  prt_fail(&ctx->decl_status, 1, "%s called after setup finished: %s; %s", fn, fn, PLAN_BUG);
  return 0;
}

void prt_declare_world(prt_ctx *ctx, int64_t devices) {
  if (!prt_decl_open(ctx, "prt_declare_world")) return;
  if (devices < 1 || (ctx->declared_world && ctx->declared_world != devices)) {
    prt_fail(&ctx->decl_status, 1, "world of %lld devices declared%s: prt_declare_world; %s",
             (long long)devices, ctx->declared_world ? " twice, differently" : "", PLAN_BUG);
    return;
  }
  ctx->declared_world = devices;
}

int64_t prt_rank(prt_ctx *ctx) { return ctx->rank; }

void prt_declare_roles(prt_ctx *ctx, int64_t nroles, const int64_t *start, const int64_t *stride,
                       const int64_t *count) {
  if (!prt_decl_open(ctx, "prt_declare_roles")) return;
  if (ctx->declared_world > 0 && ctx->world != ctx->declared_world &&
      !prt_backend_current()->comm->one_process) { /* serial: the world check's message */
    prt_elastic_roles(ctx, nroles, start, stride, count); /* fewer ranks: elastic.c */
    return;
  }
  ctx->role = -1;
  ctx->replica = 0;
  for (int64_t p = 0; p < nroles; p++) {
    int64_t off = ctx->rank - start[p];
    if (stride[p] < 1 || count[p] < 1) {
      prt_fail(&ctx->decl_status, 1, "role %lld has stride %lld and %lld devices: "
               "prt_declare_roles; %s", (long long)p, (long long)stride[p],
               (long long)count[p], PLAN_BUG);
      return;
    }
    if (off >= 0 && off % stride[p] == 0 && off / stride[p] < count[p]) {
      ctx->role = p;
      ctx->replica = off / stride[p];
      return;
    }
  }
}

int64_t prt_role(prt_ctx *ctx) { return ctx->role; }

int64_t prt_replica_affine(prt_ctx *ctx, int64_t base, int64_t stride) {
  return base + ctx->replica * stride;
}

/* elastic: the rank standing in for replica 0 (its passes count alike; only the last one's
 * sum reaches the norm) */
int32_t prt_first_replica(prt_ctx *ctx) {
  return ctx->replica < (ctx->elastic.k > 1 ? ctx->elastic.k : 1);
}

int64_t prt_shard_len(prt_ctx *ctx, int64_t n, int64_t c) {
  if (ctx->elastic.k <= 1) return pb_shard_len(n, c, ctx->replica);
  /* elastic: the union of the k stood-in replicas' shards, from the first one's (elastic.c) */
  int64_t len = 0;
  for (int64_t j = 0; j < ctx->elastic.k; j++) len += pb_shard_len(n, c, ctx->replica + j);
  return len;
}

void prt_declare_group_range(prt_ctx *ctx, int64_t group, int64_t n, int64_t start,
                             int64_t stride) {
  if (n < 1 || n > (int64_t)1 << 24 || start < 0 || stride < 1) {
    prt_fail(&ctx->decl_status, 1, "group %lld: %lld members from %lld by %lld: "
             "prt_declare_group_range; %s", (long long)group, (long long)n, (long long)start,
             (long long)stride, PLAN_BUG);
    return;
  }
  int64_t *members = malloc((size_t)n * sizeof *members);
  if (!members) prt_fatal("out of memory declaring group %lld", (long long)group);
  for (int64_t k = 0; k < n; k++) members[k] = start + k * stride;
  prt_declare_group(ctx, group, n, members);
  free(members);
}

void prt_declare_group_family(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *base,
                              int64_t stride) {
  int64_t shift = 0;
  if (n < 1 || n > (int64_t)1 << 24 || !base || stride < 1 ||
      __builtin_mul_overflow(ctx->replica, stride, &shift)) {
    prt_fail(&ctx->decl_status, 1, "group family %lld: %lld members%s shifted by %lld a "
             "replica (replica %lld): prt_declare_group_family; %s", (long long)group,
             (long long)n, base ? "" : " (NULL list)", (long long)stride,
             (long long)ctx->replica, PLAN_BUG);
    return;
  }
  /* elastic: every pass of this rank must find its replica's group on the same ranks */
  if (prt_elastic_family(ctx, group, n, base, stride)) return;
  int64_t *members = malloc((size_t)n * sizeof *members);
  if (!members) prt_fatal("out of memory declaring group %lld", (long long)group);
  for (int64_t i = 0; i < n; i++)
    if (__builtin_add_overflow(base[i], shift, &members[i])) members[i] = -1; /* refused below */
  int fresh = group >= 0 && (group >= ctx->ngroups || !ctx->groups[group].n);
  prt_declare_group(ctx, group, n, members);
  free(members);
  /* declared now (not refused): remember the family, so that ranks of different replicas
   * hash the declaration alike. The shift is taken where the members now are, on ranks
   * (an elastic run maps replica k's devices onto fewer ranks; elsewhere it is k * stride),
   * so members - shift is replica 0's group on every rank. */
  if (fresh && group < ctx->ngroups && ctx->groups[group].n == n) {
    ctx->groups[group].shift = ctx->groups[group].members[0] - prt_elastic_rank(ctx, base[0]);
    ctx->groups[group].stride = stride;
  }
}

void prt_declare_group(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *members) {
  prt_status *st = &ctx->decl_status;
  if (!prt_decl_open(ctx, "prt_declare_group")) return;
  if (group < 0 || group >= PRT_MAX_GROUPS) {
    prt_fail(st, 1, "group id %lld outside 0..%d: prt_declare_group; %s", (long long)group,
             PRT_MAX_GROUPS - 1, PLAN_BUG);
    return;
  }
  if (n < 1 || n > (int64_t)1 << 24 || !members) {
    prt_fail(st, 1, "group %lld has %lld members%s, expected at least 1: prt_declare_group; "
             "%s", (long long)group, (long long)n, members ? "" : " (NULL list)", PLAN_BUG);
    return;
  }
  for (int64_t k = 0; k < n; k++)
    if (members[k] < 0 || (k && members[k] <= members[k - 1])) {
      prt_fail(st, 1, "group %lld: member %lld is %lld; members must be device ids in "
               "strictly ascending order: prt_declare_group; %s", (long long)group,
               (long long)k, (long long)members[k], PLAN_BUG);
      return;
    }
  if (group >= ctx->ngroups) {
    prt_group *g = realloc(ctx->groups, (size_t)(group + 1) * sizeof *g);
    if (!g) prt_fatal("out of memory declaring group %lld", (long long)group);
    memset(g + ctx->ngroups, 0, (size_t)(group + 1 - ctx->ngroups) * sizeof *g);
    ctx->groups = g;
    ctx->ngroups = group + 1;
  }
  prt_group *g = &ctx->groups[group];
  if (g->n) {
    prt_fail(st, 1, "group %lld declared twice: prt_declare_group; %s", (long long)group,
             PLAN_BUG);
    return;
  }
  g->n = n;
  g->members = prt_xmalloc((size_t)n * sizeof *g->members, "a group");
  memcpy(g->members, members, (size_t)n * sizeof *g->members);
  prt_elastic_group(ctx, g->members, &g->n, &g->folded); /* onto ranks, when elastic */
  g->index = -1;
  for (int64_t k = 0; k < g->n; k++)
    if (g->members[k] == ctx->rank) g->index = k;
}

void prt_declare_peer(prt_ctx *ctx, int64_t peer) {
  if (!prt_decl_open(ctx, "prt_declare_peer")) return;
  peer = prt_elastic_rank(ctx, peer); /* as prt_isend maps it */
  if (peer < 0 || peer >= ctx->world || peer == ctx->rank) {
    prt_fail(&ctx->decl_status, 1, "peer %lld declared by rank %lld of a %lld-rank world: "
             "prt_declare_peer; %s", (long long)peer, (long long)ctx->rank,
             (long long)ctx->world, PLAN_BUG);
    return;
  }
  for (int64_t i = 0; i < ctx->npeers; i++)
    if (ctx->peers[i] == peer) return; /* elastic folds may repeat one */
  if (ctx->npeers == ctx->cap_peers) {
    int64_t cap = ctx->cap_peers ? 2 * ctx->cap_peers : 8;
    int64_t *p = realloc(ctx->peers, (size_t)cap * sizeof *p);
    if (!p) prt_fatal("out of memory declaring peer %lld", (long long)peer);
    ctx->peers = p;
    ctx->cap_peers = cap;
  }
  ctx->peers[ctx->npeers++] = peer;
}

void prt_declare_batch(prt_ctx *ctx, int64_t global_batch) {
  if (!prt_decl_open(ctx, "prt_declare_batch")) return;
  if (global_batch < 1 || (ctx->declared_batch && ctx->declared_batch != global_batch)) {
    prt_fail(&ctx->decl_status, 1, "global batch of %lld rows declared%s: prt_declare_batch; "
             "%s", (long long)global_batch, ctx->declared_batch ? " twice, differently" : "",
             PLAN_BUG);
    return;
  }
  ctx->declared_batch = global_batch;
}

void prt_declare_shard(prt_ctx *ctx, int64_t id, int64_t offset, int64_t numel,
                       int64_t full_numel) {
  prt_status *st = &ctx->decl_status;
  if (!prt_decl_open(ctx, "prt_declare_shard")) return;
  if (id < 0 || id >= ctx->ntensors || !ctx->tensors[id].name ||
      (ctx->tensors[id].kind != PRT_PARAM && ctx->tensors[id].kind != PRT_OPTIM)) {
    prt_fail(st, 1, "shard of tensor id %lld, which is not a parameter or optimizer state "
             "declared before it: prt_declare_shard; %s", (long long)id, PLAN_BUG);
    return;
  }
  prt_tensor_info *t = &ctx->tensors[id];
  /* a shard of a tensor-parallel slice counts slice elements */
  int64_t whole = t->tp_blocks ? t->tp_block * t->tp_blocks : t->full_numel;
  if (t->is_shard || full_numel != whole || offset < 0 || numel < 1 ||
      offset > full_numel - numel) {
    prt_fail(st, 1, "%s '%s' (id %lld, %lld elements) cannot hold elements "
             "[%lld, %lld) of %lld%s: prt_declare_shard; %s",
             t->kind == PRT_PARAM ? "parameter" : "optimizer state", t->name, (long long)id,
             (long long)t->full_numel, (long long)offset, (long long)(offset + numel),
             (long long)full_numel, t->is_shard ? " (declared a shard twice)" : "", PLAN_BUG);
    return;
  }
  t->is_shard = 1;
  t->shard_offset = offset;
  t->numel = numel;
}

void prt_declare_cp(prt_ctx *ctx, int64_t id, int64_t r, int64_t G) {
  prt_status *st = &ctx->decl_status;
  if (!prt_decl_open(ctx, "prt_declare_cp")) return;
  if (prt_elastic_refuse(ctx, "context parallelism (shard_sequence)",
                         "each member of a group holds its own chunks of the sequence"))
    return;
  const prt_tensor_info *t = id >= 0 && id < ctx->ntensors ? &ctx->tensors[id] : NULL;
  int ok = t && t->name && G >= 2 && r >= 0 && r < G &&
           ((t->kind == PRT_INPUT && t->ndim == 2 && t->dims[1] % 2 == 0) ||
            (t->kind == PRT_OUTPUT && strcmp(t->name, "loss") == 0));
  if (!ok) {
    prt_fail(st, 1, "prt_declare_cp(id %lld, member %lld of %lld): expected an input (B, Tl) "
             "with Tl even, or the loss, declared before it, and 0 <= member < G, G >= 2: "
             "piper_setup; %s", (long long)id, (long long)r, (long long)G, PLAN_BUG);
    return;
  }
  ctx->tensors[id].cp_rank = r;
  ctx->tensors[id].cp_size = G;
}

void prt_declare_tp_slice(prt_ctx *ctx, int64_t id, int64_t offset, int64_t block,
                          int64_t stride, int64_t blocks) {
  prt_status *st = &ctx->decl_status;
  if (!prt_decl_open(ctx, "prt_declare_tp_slice")) return;
  if (id < 0 || id >= ctx->ntensors || !ctx->tensors[id].name ||
      (ctx->tensors[id].kind != PRT_PARAM && ctx->tensors[id].kind != PRT_OPTIM)) {
    prt_fail(st, 1, "slice of tensor id %lld, which is not a parameter or optimizer state "
             "declared before it: prt_declare_tp_slice; %s", (long long)id, PLAN_BUG);
    return;
  }
  prt_tensor_info *t = &ctx->tensors[id];
  /* blocks in order, disjoint, inside the tensor: the last one ends by full_numel */
  int64_t last = 0, numel = 0;
  int ok = !t->is_shard && !t->tp_blocks && offset >= 0 && block >= 1 && blocks >= 1 &&
           (blocks == 1 || stride >= block) &&
           !__builtin_mul_overflow(blocks - 1, stride, &last) &&
           !__builtin_add_overflow(last, offset, &last) &&
           !__builtin_add_overflow(last, block, &last) && last <= t->full_numel &&
           !__builtin_mul_overflow(block, blocks, &numel);
  if (!ok) {
    prt_fail(st, 1, "%s '%s' (id %lld, %lld elements) cannot hold %lld blocks of %lld "
             "elements at %lld + i * %lld%s: prt_declare_tp_slice; %s",
             t->kind == PRT_PARAM ? "parameter" : "optimizer state", t->name, (long long)id,
             (long long)t->full_numel, (long long)blocks, (long long)block, (long long)offset,
             (long long)stride, t->is_shard || t->tp_blocks ? " (declared twice, or after "
             "its shard)" : "", PLAN_BUG);
    return;
  }
  t->tp_blocks = blocks;
  t->tp_block = block;
  t->tp_stride = stride;
  t->tp_offset = offset;
  t->numel = numel;
}

/* ---- expert parallelism under roles (passes/shard.c, extract.c) ----
 * Replica k of a role owns the experts of replica 0 shifted by k * stride; its expert tensors'
 * names differ only in the decimal expert index, which this rewrites in place. */
void prt_declare_expert(prt_ctx *ctx, int64_t id, int64_t at, int64_t len, int64_t base,
                        int64_t stride) {
  prt_status *st = &ctx->decl_status;
  if (!prt_decl_open(ctx, "prt_declare_expert")) return;
  if (prt_elastic_refuse(ctx, "expert parallelism", "the experts are sharded over the "
                         "replicas themselves (EP = DP): a rank standing in for k replicas "
                         "would hold k replicas' experts where its arena holds one's, and each "
                         "all-to-all needs every replica's tokens at once where the passes run "
                         "one replica at a time"))
    return;
  if (id < 0 || id >= ctx->ntensors || !ctx->tensors[id].name ||
      (ctx->tensors[id].kind != PRT_PARAM && ctx->tensors[id].kind != PRT_OPTIM)) {
    prt_fail(st, 1, "expert index of tensor id %lld, which is not a parameter or optimizer "
             "state declared before it: prt_declare_expert; %s", (long long)id, PLAN_BUG);
    return;
  }
  prt_tensor_info *t = &ctx->tensors[id];
  size_t n = strlen(t->name);
  char digits[24];
  int dl = snprintf(digits, sizeof digits, "%lld", (long long)base);
  /* the name must hold replica 0's index `base`, `len` digits at byte `at` */
  if (base < 0 || stride < 1 || at < 0 || len != dl || (size_t)at > n ||
      (size_t)len > n - (size_t)at || memcmp(t->name + at, digits, (size_t)len)) {
    prt_fail(st, 1, "tensor '%s' (id %lld) has no expert index %lld at byte %lld "
             "(%lld digits): prt_declare_expert; %s", t->name, (long long)id, (long long)base,
             (long long)at, (long long)len, PLAN_BUG);
    return;
  }
  int64_t e = base + ctx->replica * stride; /* no overflow: replica < 2^24, stride a count */
  dl = snprintf(digits, sizeof digits, "%lld", (long long)e);
  char *name = prt_xmalloc(n - (size_t)len + (size_t)dl + 1, "a tensor name");
  memcpy(name, t->name, (size_t)at);
  memcpy(name + at, digits, (size_t)dl);
  memcpy(name + at + dl, t->name + at + len, n - (size_t)at - (size_t)len + 1);
  free(t->name);
  t->name = name;
}

int64_t prt_tensor_run(const prt_tensor_info *t, int64_t j, int64_t *full) {
  int64_t i = t->shard_offset + j; /* slice (or full) coordinates */
  if (!t->tp_blocks) {
    *full = i;
    return t->numel - j;
  }
  int64_t b = i / t->tp_block, w = i % t->tp_block, run = t->tp_block - w;
  *full = t->tp_offset + b * t->tp_stride + w;
  return run < t->numel - j ? run : t->numel - j;
}

void prt_declare_grad_scattered(prt_ctx *ctx, int64_t param_id) {
  if (!prt_decl_open(ctx, "prt_declare_grad_scattered")) return;
  if (param_id < 0 || param_id >= ctx->ntensors || !ctx->tensors[param_id].name ||
      ctx->tensors[param_id].kind != PRT_PARAM) {
    prt_fail(&ctx->decl_status, 1, "tensor id %lld is not a parameter declared before it: "
             "prt_declare_grad_scattered; %s", (long long)param_id, PLAN_BUG);
    return;
  }
  if (ctx->grad_scattered < 0) ctx->grad_scattered = param_id;
}

void prt_declare_stream(prt_ctx *ctx, int64_t stream, const char *name) {
  if (!prt_decl_open(ctx, "prt_declare_stream")) return;
  if (stream < 0 || stream >= PRT_MAX_STREAMS || !name || !name[0]) {
    prt_fail(&ctx->decl_status, 1, "stream %lld named '%s', expected an id in 0..%d and a "
             "name: prt_declare_stream; %s", (long long)stream, name ? name : "(null)",
             PRT_MAX_STREAMS - 1, PLAN_BUG);
    return;
  }
  if (stream >= ctx->nstreams) {
    char **s = realloc(ctx->stream_names, (size_t)(stream + 1) * sizeof *s);
    if (!s) prt_fatal("out of memory naming stream %lld", (long long)stream);
    memset(s + ctx->nstreams, 0, (size_t)(stream + 1 - ctx->nstreams) * sizeof *s);
    ctx->stream_names = s;
    ctx->nstreams = stream + 1;
  }
  free(ctx->stream_names[stream]);
  size_t len = strlen(name);
  ctx->stream_names[stream] = prt_xmalloc(len + 1, "a stream name");
  memcpy(ctx->stream_names[stream], name, len + 1);
}

/* ---- nonblocking transfers ---- */

static const char *const PRT_OP_ABI[] = {"prt_isend", "prt_irecv", "prt_iall_reduce",
                                         "prt_ireduce_scatter", "prt_iall_gather",
                                         "prt_iall_to_all"};

/* Checks what every transfer needs; prt_fatal on a plan bug. */
static void prt_check_op(prt_ctx *ctx, const prt_comm_op *op) {
  const char *fn = PRT_OP_ABI[op->kind];
  if (!ctx->groups_created)
    prt_fatal("%s called before the runtime set up communication (during piper_setup?): "
              "%s; %s", fn, fn, PLAN_BUG);
  if (op->n < 0 || op->n > ((int64_t)1 << 40))
    prt_fatal("%s of %lld floats: %s (rank %lld); %s", fn, (long long)op->n, fn,
              (long long)ctx->rank, PLAN_BUG);
  if (op->stream < 0 || op->stream >= PRT_MAX_STREAMS)
    prt_fatal("%s on stream %d, expected 0..%d: %s (rank %lld); %s", fn, op->stream,
              PRT_MAX_STREAMS - 1, fn, (long long)ctx->rank, PLAN_BUG);
  int needs_in = op->kind == PRT_OP_SEND || op->kind == PRT_OP_REDUCE_SCATTER ||
                 op->kind == PRT_OP_ALL_GATHER || op->kind == PRT_OP_ALL_TO_ALL;
  int needs_out = op->kind != PRT_OP_SEND;
  if (op->n > 0 && ((needs_in && !op->in) || (needs_out && !op->out)))
    prt_fatal("%s got a NULL buffer: %s (rank %lld); %s", fn, fn, (long long)ctx->rank,
              PLAN_BUG);
  if (op->kind == PRT_OP_SEND || op->kind == PRT_OP_RECV) {
    if (op->peer < 0 || op->peer >= ctx->world || op->peer == ctx->rank)
      prt_fatal("%s between rank %lld and rank %lld: %s; a transfer needs another device "
                "of the %lld-device world; %s", fn, (long long)ctx->rank, (long long)op->peer,
                fn, (long long)ctx->world, PLAN_BUG);
    if (op->tag < 0 || op->tag > 32767)
      prt_fatal("%s with tag %lld, expected 0..32767: %s (rank %lld); %s", fn,
                (long long)op->tag, fn, (long long)ctx->rank, PLAN_BUG);
    return;
  }
  if (op->group < 0 || op->group >= ctx->ngroups)
    prt_fatal("%s on group %lld, which is not declared (0..%lld): %s (rank %lld); %s", fn,
              (long long)op->group, (long long)ctx->ngroups - 1, fn, (long long)ctx->rank,
              PLAN_BUG);
  if (ctx->groups[op->group].index < 0)
    prt_fatal("%s on group %lld, which rank %lld is not a member of: %s; %s", fn,
              (long long)op->group, (long long)ctx->rank, fn, PLAN_BUG);
}

/* Elements the op's input and output hold (comm_op's comment); the group's size scales the
 * gathered or scattered side. */
static void prt_op_sizes(const prt_ctx *ctx, const prt_comm_op *op, int64_t *nin,
                         int64_t *nout) {
  int64_t g = op->group >= 0 ? ctx->groups[op->group].n : 1;
  *nin = op->kind == PRT_OP_RECV ? 0 : op->kind == PRT_OP_REDUCE_SCATTER ? op->n * g : op->n;
  *nout = op->kind == PRT_OP_SEND ? 0 : op->kind == PRT_OP_ALL_GATHER ? op->n * g : op->n;
}

/* A transfer of device memory the backend cannot read (a GPU's, with MPI): the device's work
 * so far is waited for, the input copied to a host buffer, and the backend runs on host
 * buffers; prt_wait copies the output back (prt_unstage). Correct and simple, not fast: it
 * lets several ranks share one GPU (tests), where NCCL refuses. */
static void prt_stage_out(prt_ctx *ctx, prt_op_slot *s) {
  prt_comm_op *op = &s->op;
  int64_t nin, nout;
  prt_op_sizes(ctx, op, &nin, &nout);
  prt_status st = {0};
  /* the copy on the default stream follows the compute stream's kernels; only that stream
   * is waited for, not the device: a collective in flight on its own stream (NCCL) may need
   * this rank's transfer first */
  s->host_in = nin ? prt_xmalloc((size_t)nin * sizeof(float), "a staged transfer") : NULL;
  if (nin && (prt_device_d2h(ctx->backend->device, s->host_in, op->in, (size_t)nin * sizeof(float),
                             NULL, &st) ||
              prt_device_stream_sync(ctx->backend->device, NULL, &st)))
    prt_fatal("staging %s on rank %lld: %s", PRT_OP_ABI[op->kind], (long long)ctx->rank,
              st.msg);
  s->dev_out = op->out;
  s->out_bytes = (size_t)nout * sizeof(float);
  s->host_out = NULL;
  if (op->kind == PRT_OP_ALL_REDUCE) { /* in place: one host buffer */
    s->host_out = s->host_in;
    s->host_in = NULL;
  } else if (nout) {
    s->host_out = prt_xmalloc(s->out_bytes, "a staged transfer");
  }
  op->in = op->kind == PRT_OP_ALL_REDUCE ? s->host_out : s->host_in;
  op->out = s->host_out;
}

/* The end of a staged transfer: its output back to the device, the host copies freed. */
static void prt_unstage(prt_ctx *ctx, prt_op_slot *s) {
  prt_status st = {0};
  if (s->out_bytes && (prt_device_h2d(ctx->backend->device, s->dev_out, s->host_out, s->out_bytes,
                                      NULL, &st) ||
                       prt_device_stream_sync(ctx->backend->device, NULL, &st)))
    prt_fatal("unstaging %s on rank %lld: %s", PRT_OP_ABI[s->op.kind], (long long)ctx->rank,
              st.msg);
  free(s->host_in);
  free(s->host_out);
  s->host_in = s->host_out = s->dev_out = NULL;
  s->out_bytes = 0;
}

/* Checks op, takes a free slot, starts the transfer and returns its handle. */
static int64_t prt_issue(prt_ctx *ctx, const prt_comm_op *op) {
  prt_check_op(ctx, op);
  if (ctx->ops_busy == ctx->ops_cap) { /* full: double the table, new slots on the free list */
    int64_t cap = ctx->ops_cap ? 2 * ctx->ops_cap : 64;
    if (cap > ((int64_t)1 << 31))
      prt_fatal("more than 2^31 transfers in flight: %s (rank %lld); %s", PRT_OP_ABI[op->kind],
                (long long)ctx->rank, PLAN_BUG);
    prt_op_slot *s = realloc(ctx->ops, (size_t)cap * sizeof *s);
    int64_t *f = realloc(ctx->ops_free, (size_t)cap * sizeof *f);
    if (!s || !f) prt_fatal("out of memory growing the transfer table to %lld entries",
                            (long long)cap);
    memset(s + ctx->ops_cap, 0, (size_t)(cap - ctx->ops_cap) * sizeof *s);
    for (int64_t k = cap - 1; k >= ctx->ops_cap; k--) f[ctx->ops_nfree++] = k;
    ctx->ops = s;
    ctx->ops_free = f;
    ctx->ops_cap = cap;
  }
  int64_t k = ctx->ops_free[--ctx->ops_nfree];
  prt_op_slot *s = &ctx->ops[k];
  s->op = *op;
  /* the backend's engine for this kind; one on host memory needs a device's tensors staged */
  s->xfer = ctx->backend->xfer[op->kind];
  /* a bf16 sum runs on the world's own engine, on host memory (staging copies floats) */
  const prt_comm_vtable *world = ctx->backend->comm;
  if (op->bf16 && (!world->start_bf16 || s->xfer != &world->xfer ||
                   !ctx->backend->device->host_visible))
    prt_fatal("%s_bf16 (--grad-reduce bf16) on the %s engine%s, which has no bf16 sum (rank "
              "%lld); compile without --grad-reduce bf16", PRT_OP_ABI[op->kind], s->xfer->name,
              ctx->backend->device->host_visible ? "" : " staged through host memory",
              (long long)ctx->rank);
  if (!s->xfer->device_memory && !ctx->backend->device->host_visible) prt_stage_out(ctx, s);
  s->busy = 1;
  s->gen++;
  ctx->ops_busy++;
  if (ctx->trace) s->t_issue = prt_trace_now(ctx);
  (op->bf16 ? world->start_bf16 : s->xfer->start)(ctx, &s->op, &s->req);
  return (int64_t)s->gen << 32 | k;
}

/* The plan's stream number as a transfer records it, or -1 where it does not fit the
 * record's 32 bits, which prt_check_op refuses as out of range. */
static int32_t prt_op_stream(int64_t stream) {
  return stream == (int32_t)stream ? (int32_t)stream : -1;
}

int64_t prt_isend(prt_ctx *ctx, const float *buf, int64_t n, int64_t peer, int64_t tag,
                  int64_t stream) {
  prt_comm_op op = {PRT_OP_SEND, prt_op_stream(stream), buf, NULL, n, prt_elastic_rank(ctx, peer),
                    tag, -1, 0};
  return prt_issue(ctx, &op);
}

int64_t prt_irecv(prt_ctx *ctx, float *buf, int64_t n, int64_t peer, int64_t tag,
                  int64_t stream) {
  prt_comm_op op = {PRT_OP_RECV, prt_op_stream(stream), NULL, buf, n, prt_elastic_rank(ctx, peer),
                    tag, -1, 0};
  return prt_issue(ctx, &op);
}

int64_t prt_iall_reduce(prt_ctx *ctx, float *buf, int64_t n, int64_t group, int64_t stream) {
  prt_comm_op op = {PRT_OP_ALL_REDUCE, prt_op_stream(stream), buf, buf, n, -1, 0, group, 0};
  prt_check_op(ctx, &op); /* before the fold reads buf */
  prt_elastic_fold(ctx, buf, n, group);
  return prt_issue(ctx, &op);
}

int64_t prt_ireduce_scatter(prt_ctx *ctx, const float *in, float *out, int64_t n_out,
                            int64_t group, int64_t stream) {
  prt_comm_op op = {PRT_OP_REDUCE_SCATTER, prt_op_stream(stream), in, out, n_out, -1, 0, group, 0};
  prt_check_op(ctx, &op); /* before the elastic sum reads in */
  prt_elastic_scatter(ctx, &op);
  return prt_issue(ctx, &op);
}

/* An elastic run folds several replicas' gradients into one rank's fp32 sums
 * (runtime/elastic.c), which a bf16 transfer would not hold: refused at the first. */
static void prt_bf16_not_folded(prt_ctx *ctx, int64_t group, const char *fn) {
  if (ctx->elastic.k > 1 && group >= 0 && group < ctx->ngroups && ctx->groups[group].folded)
    prt_fatal("%s (--grad-reduce bf16) in an elastic run on fewer ranks than replicas: its "
              "folded gradient sums are fp32 (rank %lld); run on as many ranks as the plan "
              "has replicas, or compile without --grad-reduce bf16", fn, (long long)ctx->rank);
}

int64_t prt_iall_reduce_bf16(prt_ctx *ctx, uint16_t *buf, int64_t n, int64_t group,
                             int64_t stream) {
  prt_comm_op op = {PRT_OP_ALL_REDUCE, prt_op_stream(stream), (float *)buf, (float *)buf, n, -1, 0,
                    group, 1};
  prt_check_op(ctx, &op);
  prt_bf16_not_folded(ctx, group, "prt_iall_reduce_bf16");
  return prt_issue(ctx, &op);
}

int64_t prt_ireduce_scatter_bf16(prt_ctx *ctx, const uint16_t *in, uint16_t *out, int64_t n_out,
                                 int64_t group, int64_t stream) {
  prt_comm_op op = {PRT_OP_REDUCE_SCATTER, prt_op_stream(stream), (const float *)in, (float *)out,
                    n_out, -1, 0, group, 1};
  prt_check_op(ctx, &op);
  prt_bf16_not_folded(ctx, group, "prt_ireduce_scatter_bf16");
  return prt_issue(ctx, &op);
}

int64_t prt_iall_gather(prt_ctx *ctx, const float *in, float *out, int64_t n_in,
                        int64_t group, int64_t stream) {
  prt_comm_op op = {PRT_OP_ALL_GATHER, prt_op_stream(stream), in, out, n_in, -1, 0, group, 0};
  prt_check_op(ctx, &op);
  op.n = prt_elastic_gather_n(ctx, n_in, group); /* k shards a rank when elastic */
  return prt_issue(ctx, &op);
}

/* Where a dropped all-to-all (PIPER_FAULT=drop@all_to_all, fault_inject.c) writes instead of
 * its output: device memory, grown as needed and kept to the end of the process. */
static float *prt_fault_sink(prt_ctx *ctx, int64_t n) {
  static void *sink;
  static int64_t cap;
  if (n > cap) {
    prt_status st = {0};
    ctx->backend->device->vt->free(ctx->backend->device, sink);
    sink = NULL;
    if (prt_device_alloc(ctx->backend->device, (size_t)n * sizeof(float), &sink, &st))
      prt_fatal("PIPER_FAULT drop: %s", st.msg);
    cap = n;
  }
  return sink;
}

int64_t prt_iall_to_all(prt_ctx *ctx, const float *in, float *out, int64_t n, int64_t group,
                        int64_t stream) {
  prt_comm_op op = {PRT_OP_ALL_TO_ALL, prt_op_stream(stream), in, out, n, -1, 0, group, 0};
  prt_check_op(ctx, &op);
  if (ctx->groups[group].n < 1 || n % ctx->groups[group].n)
    prt_fatal("prt_iall_to_all of %lld elements over %lld ranks: the blocks are not equal "
              "(rank %lld); %s", (long long)n, (long long)ctx->groups[group].n,
              (long long)ctx->rank, PLAN_BUG);
  if (prt_fault_point(PRT_FAULT_AT_ALL_TO_ALL, ctx->rank, ctx->step))
    op.out = prt_fault_sink(ctx, n); /* a negative control: `out` keeps what it held */
  return prt_issue(ctx, &op);
}

/* Tracing only: tests every transfer in flight that is not yet seen complete, and stamps
 * those that are with the time the test saw it. A send waited at the end of the
 * step then ends where it completed, not at its own late prt_wait. */
static void prt_poll_inflight(prt_ctx *ctx) {
  for (int64_t k = 0; k < ctx->ops_cap; k++) {
    prt_op_slot *o = &ctx->ops[k];
    if (o->busy && !o->done && o->xfer->test(ctx, &o->op, &o->req)) {
      o->done = 1;
      /* stamped when the test returns: the test itself may drive the transfer to its end
       * (MPI progress), so a time taken before it could precede the completion */
      o->t_done = prt_trace_now(ctx);
    }
  }
}

void prt_wait(prt_ctx *ctx, int64_t handle) {
  int64_t k = handle & 0xffffffff;
  uint32_t gen = (uint32_t)((uint64_t)handle >> 32);
  if (handle < 0 || k >= ctx->ops_cap || !ctx->ops[k].busy || ctx->ops[k].gen != gen)
    prt_fatal("prt_wait on handle %lld, which is not a transfer in flight (waited twice, or "
              "never issued): prt_wait (rank %lld); %s", (long long)handle,
              (long long)ctx->rank, PLAN_BUG);
  prt_op_slot *s = &ctx->ops[k];
  if (s->xfer->device_memory) { /* ordered on the device: finished whatever a test said */
    s->xfer->finish(ctx, &s->op, &s->req);
    if (ctx->trace) { /* host times: the device completes it later, on its own stream */
      double now = prt_trace_now(ctx);
      prt_trace_transfer(ctx, &s->op, s->t_issue, now, now, now);
    }
  } else if (!ctx->trace) {
    s->xfer->finish(ctx, &s->op, &s->req);
  } else { /* the span ends when the runtime first sees the transfer complete */
    double w0 = prt_trace_now(ctx);
    prt_poll_inflight(ctx);
    if (!s->done) {
      s->xfer->finish(ctx, &s->op, &s->req);
      s->done = 1; /* finished: its request is gone, the poll must not test it */
      s->t_done = prt_trace_now(ctx);
      prt_poll_inflight(ctx);
    }
    prt_trace_transfer(ctx, &s->op, s->t_issue, s->t_done, w0, prt_trace_now(ctx));
  }
  if (s->host_in || s->host_out) prt_unstage(ctx, s);
  s->busy = 0;
  s->done = 0;
  ctx->ops_busy--;
  ctx->ops_free[ctx->ops_nfree++] = k;
}

/* ---- agreements between ranks ---- */

int prt_agree(const prt_ctx *ctx, prt_status *st) {
  if (ctx->world <= 1) return st->code;
  /* [largest code, world - lowest rank with a message] */
  int64_t v[2] = {st->code, st->code && st->msg[0] ? ctx->world - ctx->rank : 0};
  prt_comm_allreduce_i64(v, 2, PRT_REDUCE_MAX);
  if (v[0] == 0) return 0;
  if (!st->code || ctx->world - v[1] != ctx->rank) st->msg[0] = 0;
  st->code = (int)v[0];
  return st->code;
}

/* FNV-1a over the group declarations, 63 bits: equal on every rank that declared alike. A
 * family counts as declared (replica 0's members and the stride), not as this replica's
 * instance. */
static int64_t prt_groups_hash(const prt_ctx *ctx) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t g = 0; g < ctx->ngroups; g++) {
    const prt_group *gr = &ctx->groups[g];
    for (int64_t k = -2; k < gr->n; k++) {
      uint64_t x = k == -2 ? (uint64_t)gr->stride
                   : k < 0 ? (uint64_t)gr->n
                           : (uint64_t)(gr->members[k] - gr->shift);
      for (int b = 0; b < 8; b++) h = (h ^ ((x >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    }
  }
  return (int64_t)(h >> 1);
}

int prt_dist_setup(prt_ctx *ctx, int64_t *T_out, prt_status *st) {
  const char *fix = "the compiled plan must declare it in piper_setup; recompile it";
  int64_t ntok = 0, nloss = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    ntok += t->kind == PRT_INPUT && strcmp(t->name, "tokens") == 0;
    nloss += t->kind == PRT_OUTPUT && strcmp(t->name, "loss") == 0;
  }
  /* Every rank must agree on these; max(x) and max(-x) give the range. NONE: no value. */
  const int64_t NONE = INT64_MIN + 1;
  int64_t T = ctx->seq_len ? ctx->seq_len : NONE;
  int64_t B = ctx->declared_batch ? ctx->declared_batch : NONE;
  int64_t h = prt_groups_hash(ctx);
  int64_t mx[7] = {T, T == NONE ? NONE : -T, B, B == NONE ? NONE : -B, h, -h,
                   ctx->global_batch};
  int64_t sum[2] = {ntok, nloss};
  prt_comm_allreduce_i64(mx, 7, PRT_REDUCE_MAX);
  prt_comm_allreduce_i64(sum, 2, PRT_REDUCE_SUM);
  /* From here on every rank decides alike. */
  if (sum[0] == 0)
    return prt_fail(st, 1, "the plan declares no PRT_INPUT \"tokens\"%s: piper_setup; %s",
                    ctx->world > 1 ? " on any rank" : "", fix);
  if (sum[1] == 0)
    return prt_fail(st, 1, "the plan declares no PRT_OUTPUT \"loss\"%s: piper_setup; %s",
                    ctx->world > 1 ? " on any rank" : "", fix);
  if (mx[0] != -mx[1])
    return prt_fail(st, 1, "ranks disagree on the sequence length: inputs have T = %lld on "
                    "one rank and %lld on another: piper_setup; %s", (long long)-mx[1],
                    (long long)mx[0], PLAN_BUG);
  if (mx[2] != NONE && mx[2] != -mx[3])
    return prt_fail(st, 1, "ranks disagree on the global batch: %lld and %lld rows: "
                    "piper_setup; %s", (long long)-mx[3], (long long)mx[2], PLAN_BUG);
  if (mx[4] != -mx[5])
    return prt_fail(st, 1, "ranks declared different groups (every rank must declare every "
                    "group, alike and in the same order): piper_setup; %s", PLAN_BUG);
  ctx->global_batch = mx[2] != NONE ? mx[2] : mx[6];
  *T_out = mx[0];
  /* The losses' rows must cover the global batch exactly once. */
  double rows = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (t->kind == PRT_OUTPUT && strcmp(t->name, "loss") == 0)
      rows += (double)(t->first_sample ? t->first_sample : ctx->global_batch) /
              (double)(t->cp_size > 1 ? t->cp_size : 1); /* a share of the sequence */
  }
  if (ctx->elastic.k > 1) rows *= (double)ctx->elastic.k; /* one loss a pass */
  prt_comm_allreduce_f64(&rows, 1);
  if (rows != (double)ctx->global_batch)
    return prt_fail(st, 1, "the plan's \"loss\" outputs average over %.0f batch rows in all, "
                    "but the global batch has %lld: piper_setup; each row must be counted by "
                    "exactly one loss (aux = its rows); %s", rows,
                    (long long)ctx->global_batch, PLAN_BUG);
  prt_comm_groups_create(ctx);
  ctx->groups_created = 1;
  return 0;
}

double prt_dist_loss(prt_ctx *ctx, int pending, int signal, int *stop, int *signal_out) {
  /* [sum of value * rows, ranks that failed, ranks told SIGINT, ranks told SIGTERM]: one
   * allreduce carries the loss and every reason to stop, so all ranks leave the loop after
   * the same step and agree on why. */
  double v[4] = {prt_local_loss(ctx) + ctx->elastic.loss, pending ? 1.0 : 0.0,
                  signal == SIGINT, signal == SIGTERM};
  ctx->elastic.loss = 0.0; /* the earlier passes' losses (prt_elastic_step), counted once */
  prt_comm_allreduce_f64(v, 4);
  *stop = v[1] > 0;
  *signal_out = v[3] > 0 ? SIGTERM : v[2] > 0 ? SIGINT : 0; /* SIGTERM wins: the stronger */
  return v[0] / (double)ctx->global_batch;
}
