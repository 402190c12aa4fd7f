/* Elastic runs: one role plan, compiled for R replicas of P roles (P * R devices), started
 * on P * R' ranks with R' dividing R. Rank q = r' * P + p runs role p and stands in for the
 * k = R / R' consecutive replicas r' * k .. r' * k + k - 1 of it.
 *
 * Why passes (and not a plan recompiled for R'): the compiled shapes, the arena and the
 * kernels stay exactly as compiled. Each step runs the role's step k times (passes), pass j
 * on replica r' * k + j's rows (its inputs' first rows shift by j times their row count:
 * passes/extract.c gives replica k first_sample + k * rows). A gradient all-reduce over a
 * data-parallel group (a group whose declared members now share ranks: "folded") adds this
 * pass's gradient to a running total instead of standing alone; the last pass adds the total
 * to its gradient before the real all-reduce over the R' ranks. Only the last pass updates
 * (prt_adamw skips in the others: prt_elastic_dry), so every replica's gradient is counted
 * once, in the same sum the R-rank run reduces (the loss already scales by the global batch).
 * The earlier passes still issue their transfers (results unused): every rank runs k passes
 * alike, so the transfers stay matched without a second protocol.
 *
 * ZeRO (shards of c elements, replica r owning [r * c, r * c + c)): the k replicas a rank
 * stands in for own k adjacent shards, so the rank owns their union, [r' * k * c, r' * k * c
 * + k * c): a shard of the same partition cut R' ways. The plan computes every shard's place
 * at run time from ctx->replica (prt_replica_affine(0, c)) and its length from
 * prt_shard_len, so with ctx->replica kept at the first stood-in replica in every pass
 * (nothing else in a step reads it: the rows move by first_sample, and the peers of a
 * replica's pass all map to the same rank) and prt_shard_len giving the union's length, the
 * moments (ZeRO-1/2) and parameter shards (ZeRO-3) are declared, allocated, loaded, updated
 * and saved as the union: the update runs once, on every owned element. The transfers whose
 * compiled size is one shard take k: an all-gather over a folded group gives k shards a rank
 * (prt_elastic_gather_n, in place at the same offset), and a reduce-scatter (ZeRO-2/3)
 * returns k shards into a host buffer the update reads instead of the compiled one-shard
 * output (prt_elastic_scatter, prt_elastic_grad).
 *
 * Tensor parallelism under DP (a replica is a TP group of T devices per pipeline device:
 * T * P roles): the plan declares each TP group as a family, replica k's members being
 * replica 0's + k * stride with stride the replica's T * P devices. Whole replicas fold, so
 * replica r' * k + j's instance maps onto the ranks r' * T * P + role for every pass j: the
 * T ranks of a group run their passes in step, and one communicator (the one mapped from
 * the first stood-in replica's instance) carries every pass's TP collectives, which do not
 * fold (their members stay distinct ranks). prt_elastic_family checks exactly that per
 * family and refuses one whose instances would need different ranks in different passes.
 * Only the data-parallel groups (one member per replica) fold.
 *
 * Not elastic (refused at setup, naming the declaration): expert parallelism (piper-sched and
 * passes/shard.c shard the experts over the replicas themselves, EP = DP: a rank standing in
 * for k replicas would need k replicas' experts where its arena holds one's, and each
 * all-to-all exchanges every replica's tokens at once where the passes run one replica at a
 * time), context parallelism, and device memory the host cannot read (the totals are summed
 * on the host).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_data.h"
#include "prt_elastic.h"

static int64_t prt_elastic_k(const prt_ctx *ctx) {
  return ctx->elastic.k > 1 ? ctx->elastic.k : 1;
}

/* The world sizes this plan runs on: P * R' for each R' dividing R, as "a, b or c". */
static void prt_elastic_sizes(int64_t P, int64_t R, char *out, size_t cap) {
  size_t used = 0;
  out[0] = 0;
  int64_t listed = 0, total = 0;
  for (int64_t d = 1; d <= R; d++) total += R % d == 0;
  for (int64_t d = 1; d <= R && used < cap; d++) {
    if (R % d) continue;
    listed++;
    const char *sep = listed == 1 ? "" : listed == total ? " or " : ", ";
    int w = snprintf(out + used, cap - used, "%s%lld", sep, (long long)(P * d));
    if (w < 0) break;
    used += (size_t)w;
  }
}

/* Why the world of W ranks cannot run the plan of P roles x R replicas and global batch B,
 * into ctx->elastic.refusal; 0 where it can (k in *k). */
static int prt_elastic_fit(prt_ctx *ctx, int64_t P, int64_t R, int64_t *k) {
  int64_t W = ctx->world, B = ctx->declared_batch;
  char sizes[256], *why = ctx->elastic.refusal;
  size_t cap = sizeof ctx->elastic.refusal;
  prt_elastic_sizes(P, R, sizes, sizeof sizes);
  if (W > P * R)
    snprintf(why, cap, "this plan is for at most %lld devices (%lld replicas of %lld "
             "device%s, fixed by its compiled shapes) but mpirun started %lld ranks; "
             "run it with mpirun -np %s", (long long)(P * R), (long long)R, (long long)P,
             P == 1 ? "" : "s", (long long)W, sizes);
  else if (W % P)
    snprintf(why, cap, "mpirun started %lld rank%s, which do not hold whole replicas of this "
             "plan (%lld devices each); run it with mpirun -np %s", (long long)W,
             W == 1 ? "" : "s", (long long)P, sizes);
  else if (B > 0 && B % (W / P))
    snprintf(why, cap, "the global batch of %lld rows does not divide over the %lld "
             "replicas that %lld ranks make (%lld device%s each); run it with "
             "mpirun -np %s", (long long)B, (long long)(W / P), (long long)W, (long long)P,
             P == 1 ? "" : "s", sizes);
  else if (R % (W / P))
    snprintf(why, cap, "the global batch of %lld rows is compiled as %lld replica batches "
             "of %lld rows; %lld ranks make %lld replicas, which cannot share those %lld "
             "batches evenly; run it with mpirun -np %s", (long long)B, (long long)R,
             (long long)(B > 0 ? B / R : 0), (long long)W, (long long)(W / P), (long long)R,
             sizes);
  else {
    *k = R / (W / P);
    return 0;
  }
  return 1;
}

void prt_elastic_roles(prt_ctx *ctx, int64_t nroles, const int64_t *start,
                       const int64_t *stride, const int64_t *count) {
  ctx->role = -1;
  ctx->replica = 0;
  ctx->elastic.k = 0;
  int64_t R = nroles > 0 ? count[0] : 0;
  for (int64_t p = 0; p < nroles; p++)
    if (start[p] != p || stride[p] != nroles || count[p] != R) {
      snprintf(ctx->elastic.refusal, sizeof ctx->elastic.refusal, "this plan is for %lld "
               "devices but mpirun started %lld ranks, and its roles are not laid out as "
               "replica * roles + role (role %lld starts at %lld, stride %lld, %lld "
               "replicas), so it cannot run on fewer; run it with mpirun -np %lld",
               (long long)ctx->declared_world, (long long)ctx->world, (long long)p,
               (long long)start[p], (long long)stride[p], (long long)count[p],
               (long long)ctx->declared_world);
      return;
    }
  int64_t k = 0;
  if (nroles < 1 || R < 1 || nroles * R != ctx->declared_world ||
      prt_elastic_fit(ctx, nroles, R, &k))
    return;
  ctx->elastic.k = k;
  ctx->elastic.roles = nroles;
  ctx->role = ctx->rank % nroles;
  ctx->replica = ctx->rank / nroles * k; /* the first stood-in replica, in every pass */
}

int64_t prt_elastic_rank(const prt_ctx *ctx, int64_t device) {
  if (ctx->elastic.k <= 1) return device;
  int64_t P = ctx->elastic.roles;
  return device % P + device / P / ctx->elastic.k * P;
}

static int prt_cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

void prt_elastic_group(const prt_ctx *ctx, int64_t *members, int64_t *n, int *folded) {
  *folded = 0;
  if (ctx->elastic.k <= 1) return;
  for (int64_t i = 0; i < *n; i++) members[i] = prt_elastic_rank(ctx, members[i]);
  qsort(members, (size_t)*n, sizeof *members, prt_cmp_i64);
  int64_t m = 0;
  for (int64_t i = 0; i < *n; i++)
    if (!m || members[i] != members[m - 1]) members[m++] = members[i];
  *folded = m < *n;
  *n = m;
}

int prt_elastic_family(prt_ctx *ctx, int64_t group, int64_t n, const int64_t *base,
                       int64_t stride) {
  int64_t k = prt_elastic_k(ctx);
  if (k == 1) return 0;
  /* pass j runs replica ctx->replica + j: its instance of the family, base[i] + (replica +
   * j) * stride, must sit on the ranks of pass 0's (one communicator serves every pass), on
   * n ranks (a member per rank, as compiled) */
  char why[320];
  for (int64_t i = 0; i < n; i++) {
    int64_t d0 = base[i] + ctx->replica * stride, r0 = prt_elastic_rank(ctx, d0);
    for (int64_t j = 1; j < k; j++) {
      int64_t d = d0 + j * stride, r = prt_elastic_rank(ctx, d);
      if (r == r0) continue;
      snprintf(why, sizeof why, "group %lld's member %lld is device %lld in replica %lld's "
               "instance and device %lld in replica %lld's, which rank %lld would run on "
               "ranks %lld and %lld: one communicator cannot serve both passes", (long long)group,
               (long long)i, (long long)d0, (long long)ctx->replica, (long long)d,
               (long long)(ctx->replica + j), (long long)ctx->rank, (long long)r0,
               (long long)r);
      return prt_elastic_refuse(ctx, "a tensor-parallel group family", why);
    }
    for (int64_t m = 0; m < i; m++)
      if (prt_elastic_rank(ctx, base[m] + ctx->replica * stride) == r0) {
        snprintf(why, sizeof why, "group %lld's members %lld and %lld (devices %lld and "
                 "%lld) would both run on rank %lld", (long long)group, (long long)m,
                 (long long)i, (long long)(base[m] + ctx->replica * stride), (long long)d0,
                 (long long)r0);
        return prt_elastic_refuse(ctx, "a tensor-parallel group family", why);
      }
  }
  return 0;
}

int prt_elastic_refuse(prt_ctx *ctx, const char *what, const char *why) {
  if (ctx->elastic.k <= 1) return 0;
  int64_t P = ctx->elastic.roles, R = ctx->declared_world / P;
  prt_fail(&ctx->decl_status, 1, "this plan is for %lld devices and cannot run on the %lld "
           "rank%s mpirun started: %s is not elastic (%s): piper_setup; run it with mpirun "
           "-np %lld", (long long)(P * R), (long long)ctx->world, ctx->world == 1 ? "" : "s",
           what, why, (long long)(P * R));
  return 1;
}

int prt_elastic_check(prt_ctx *ctx, int dump_grads, prt_status *st) {
  int64_t k = prt_elastic_k(ctx);
  if (k == 1 || ctx->decl_status.code) return 0; /* a refused declaration: allocate says it */
  if (!ctx->backend->device->host_visible)
    return prt_fail(st, 1, "an elastic run (%lld ranks for the plan's %lld devices) sums "
                    "the gradients of its passes on the host, and this device's memory is "
                    "not host visible: command line; run it with mpirun -np %lld",
                    (long long)ctx->world, (long long)ctx->declared_world,
                    (long long)ctx->declared_world);
  if (dump_grads)
    return prt_fail(st, 2, "--dump-grads cannot work in an elastic run (%lld ranks for the "
                    "plan's %lld devices): each pass sees one replica's gradient: command "
                    "line; drop --dump-grads or run with mpirun -np %lld",
                    (long long)ctx->world, (long long)ctx->declared_world,
                    (long long)ctx->declared_world);
  for (int64_t i = 0; i < ctx->ntensors; i++)
    if (ctx->tensors[i].name && ctx->tensors[i].kind == PRT_INPUT)
      ctx->tensors[i].first_sample0 = ctx->tensors[i].first_sample;
  if (ctx->rank == 0) {
    fprintf(stderr, "piper: note: elastic run: %lld rank%s run%s the plan's %lld devices; "
            "each rank stands in for %lld replicas (%lld passes a step, gradients summed "
            "before the all-reduce)\n", (long long)ctx->world, ctx->world == 1 ? "" : "s",
            ctx->world == 1 ? "s" : "", (long long)ctx->declared_world, (long long)k,
            (long long)k);
    fflush(stderr);
  }
  return 0;
}

/* The passes' total of folded transfer i of a step (n floats), grown as needed; the same
 * plan issues the same transfers every pass, so a size that changes after pass 0 is a bug. */
static float *prt_elastic_total(prt_ctx *ctx, int64_t i, int64_t n, const char *what) {
  prt_elastic *e = &ctx->elastic;
  if (i >= e->nacc) {
    size_t m = (size_t)(i + 1);
    float **acc = realloc(e->acc, m * sizeof *acc);
    if (acc) e->acc = acc;
    int64_t *an = realloc(e->acc_n, m * sizeof *an);
    if (an) e->acc_n = an;
    const void **key = realloc(e->rs_key, m * sizeof *key);
    if (key) e->rs_key = key;
    int64_t *at = realloc(e->rs_at, m * sizeof *at);
    if (at) e->rs_at = at;
    if (!acc || !an || !key || !at)
      prt_fatal("out of memory keeping an elastic run's gradient totals");
    for (int64_t j = e->nacc; j <= i; j++)
      e->acc[j] = NULL, e->acc_n[j] = 0, e->rs_key[j] = NULL, e->rs_at[j] = 0;
    e->nacc = i + 1;
  }
  if (e->acc_n[i] != n) {
    if (e->pass > 0)
      prt_fatal("elastic run: %s %lld of pass %lld has %lld floats, pass 0's had %lld (rank "
                "%lld); the passes of a step must issue the same transfers: this is a bug in "
                "the compiled plan", what, (long long)i, (long long)e->pass, (long long)n,
                (long long)e->acc_n[i], (long long)ctx->rank);
    free(e->acc[i]);
    e->acc[i] = prt_xmalloc((size_t)(n ? n : 1) * sizeof(float), "an elastic gradient total");
    e->acc_n[i] = n;
  }
  return e->acc[i];
}

void prt_elastic_fold(prt_ctx *ctx, float *buf, int64_t n, int64_t group) {
  prt_elastic *e = &ctx->elastic;
  if (e->k <= 1 || group < 0 || group >= ctx->ngroups || !ctx->groups[group].folded) return;
  int64_t i = e->seq++;
  float *a = prt_elastic_total(ctx, i, n, "all-reduce");
  e->rs_key[i] = NULL;
  if (e->pass == 0) memcpy(a, buf, (size_t)n * sizeof(float));
  else if (prt_elastic_dry(ctx)) for (int64_t x = 0; x < n; x++) a[x] += buf[x];
  else for (int64_t x = 0; x < n; x++) buf[x] += a[x];
}

void prt_elastic_scatter(prt_ctx *ctx, prt_comm_op *op) {
  prt_elastic *e = &ctx->elastic;
  int64_t g = op->group;
  if (e->k <= 1 || g < 0 || g >= ctx->ngroups || !ctx->groups[g].folded) return;
  /* compiled: R shards of c in, one out; folded to R' = R / k ranks, k shards each */
  int64_t c = op->n, kc = c * e->k, nin = kc * ctx->groups[g].n, i = e->seq++;
  float *a = prt_elastic_total(ctx, i, nin + kc, "reduce-scatter");
  const float *in = op->in;
  if (e->pass == 0) memcpy(a, in, (size_t)nin * sizeof(float));
  else for (int64_t x = 0; x < nin; x++) a[x] += in[x];
  e->rs_key[i] = op->out;
  e->rs_at[i] = nin;
  op->in = a; /* the total so far; only the last pass's result is read (the others are dry) */
  op->out = a + nin;
  op->n = kc;
}

const float *prt_elastic_grad(const prt_ctx *ctx, const float *g) {
  const prt_elastic *e = &ctx->elastic;
  if (e->k <= 1) return g;
  /* the newest this pass: the arena may reuse an output buffer once its update has read it */
  for (int64_t i = (e->seq < e->nacc ? e->seq : e->nacc) - 1; i >= 0; i--)
    if (e->rs_key[i] == (const void *)g) return e->acc[i] + e->rs_at[i];
  return g;
}

int64_t prt_elastic_gather_n(const prt_ctx *ctx, int64_t n, int64_t group) {
  const prt_elastic *e = &ctx->elastic;
  if (e->k <= 1 || group < 0 || group >= ctx->ngroups || !ctx->groups[group].folded) return n;
  return n * e->k;
}

/* Whether tensor t is one of the plan's losses. */
static int prt_is_loss(const prt_tensor_info *t) {
  return t->kind == PRT_OUTPUT && t->name && strcmp(t->name, "loss") == 0;
}

double prt_local_loss(const prt_ctx *ctx) {
  prt_device *dev = ctx->backend->device;
  /* on a device the host cannot read, every loss is copied into its page-locked staging
   * (prt_ctx_allocate) and the host waits once for all of them */
  prt_status st = {0};
  int staged = 0;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (!prt_is_loss(t) || !t->staging) continue;
    if (prt_device_d2h(dev, t->staging, t->data, sizeof(float), NULL, &st))
      prt_fatal("%s (reading the loss)", st.msg);
    staged = 1;
  }
  if (staged && prt_device_synchronize(dev, &st)) prt_fatal("%s (reading the loss)", st.msg);
  double sum = 0.0;
  for (int64_t i = 0; i < ctx->ntensors; i++) {
    const prt_tensor_info *t = &ctx->tensors[i];
    if (!prt_is_loss(t)) continue;
    int64_t rows = t->first_sample ? t->first_sample : ctx->global_batch;
    float *loss = t->staging ? t->staging
                             : prt_host_view_begin(dev, t->data, sizeof *loss, PRT_VIEW_READ,
                                                   "the loss");
    /* a context-parallel member's loss averages over 1/G of the sequence (prt_declare_cp) */
    sum += (double)loss[0] * (double)rows / (double)(t->cp_size > 1 ? t->cp_size : 1);
    if (!t->staging) prt_host_view_end(dev, t->data, loss, sizeof *loss, 0, "the loss");
  }
  return sum;
}

void prt_elastic_step(prt_ctx *ctx, const prt_data *data, int64_t s, void (*fn)(prt_ctx *)) {
  prt_elastic *e = &ctx->elastic;
  int64_t k = prt_elastic_k(ctx);
  e->loss = 0.0;
  /* ctx->replica stays at the first stood-in replica: it places the union of the owned ZeRO
   * shards (see the top); the pass's rows move by first_sample */
  for (int64_t j = 0; j < k; j++) {
    e->pass = j;
    e->seq = 0;
    for (int64_t i = 0; k > 1 && i < ctx->ntensors; i++) {
      prt_tensor_info *t = &ctx->tensors[i];
      if (t->name && t->kind == PRT_INPUT) t->first_sample = t->first_sample0 + j * t->dims[0];
    }
    prt_data_fill(data, ctx, s);
    prt_backend_run_step(ctx, fn);
    if (j + 1 < k) {
      if (ctx->ops_busy)
        prt_fatal("pass %lld of step %lld ended with %lld transfers never waited (rank "
                  "%lld); this is a bug in the compiled plan", (long long)j, (long long)s,
                  (long long)ctx->ops_busy, (long long)ctx->rank);
      e->loss += prt_local_loss(ctx);
    }
  }
  e->pass = 0;
}

void prt_elastic_free(prt_ctx *ctx) {
  for (int64_t i = 0; i < ctx->elastic.nacc; i++) free(ctx->elastic.acc[i]);
  free(ctx->elastic.acc);
  free(ctx->elastic.acc_n);
  free(ctx->elastic.rs_key);
  free(ctx->elastic.rs_at);
  ctx->elastic.acc = NULL;
  ctx->elastic.acc_n = NULL;
  ctx->elastic.rs_key = NULL;
  ctx->elastic.rs_at = NULL;
  ctx->elastic.nacc = 0;
}
