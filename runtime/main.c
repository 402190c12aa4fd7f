/* prt_main: the training binary around a compiled plan. Starts the comm backend, parses
 * flags, runs piper_setup, checks the plan against the world, allocates, opens the data,
 * initialises or loads parameters, runs the step loop with metrics, and saves what was asked
 * for. Every failure prints "piper: error: <what>: <where>; <what to do>" once (from the
 * lowest rank that saw it, " (rank k)" appended on several devices) and every rank returns 1
 * (2 for a bad command line).
 *
 * Several devices: every rank runs this same function. A rank-local failure (a file, a
 * declaration) never makes a rank leave early: it is carried to the next agreement point
 * (prt_agree), where every rank learns of it and they stop together; in the step loop it
 * rides on the loss allreduce, so the run stops after the next step. Rank 0 alone prints,
 * writes metrics and writes the checkpoint.
 *
 * Before the first step: every output path is checked (prt_check_paths), so a bad one costs
 * nothing; the data's tokens are checked against the vocabulary. During the run: the
 * --timeout watchdog (comm backend) ends every rank when a transfer waits too long, and
 * SIGINT/SIGTERM only set a flag that rides on the loss all-reduce, so all ranks stop after
 * the same step, save what was asked and exit 128 + the signal.
 *
 * Resuming: a checkpoint written by --save-checkpoint holds the parameters, AdamW's moments
 * and the number of completed steps K. A run started from it with --init-checkpoint runs
 * steps K, K+1, ... (AdamW's t, the data loader's batches and the metrics' numbering all
 * continue), so 5 steps then 5 resumed steps equal 10 steps bit for bit, on any layout that
 * computes the same sums. Without optimizer state in the file the run starts at step 0: fresh
 * moments with a late t would apply bias corrections meant for K steps of history to none,
 * so such a run is a new run from the loaded weights, and is counted as one.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "prt_backend.h"
#include "prt_catalog.h"
#include "prt_checkpoint.h"
#include "prt_ckpt_ring.h"
#include "prt_ctx.h"
#include "prt_data.h"
#include "prt_dist.h"
#include "prt_elastic.h"
#include "prt_files.h"
#include "prt_init.h"
#include "prt_main.h"
#include "prt_plan_flags.h"
#include "prt_report.h"
#include "prt_routing.h"
#include "prt_schedule.h"
#include "prt_trace.h"


/* What a bad command line prints after its error: every flag of prt_parse_args, by name
 * (test/e2e/usage-lists-flags.test checks that it names each flag --help explains). */
static const char *const SYNOPSIS =
    "usage: %s [--steps N] [--data FILE] [--data-format bytes|u16|u32] [--seed S] [--lr X]\n"
    "    [--weight-decay X] [--metrics FILE] [--init-checkpoint FILE] [--restart-steps]\n"
    "    [--save-checkpoint FILE] [--save-dtype fp32|bf16] [--checkpoint-every N]\n"
    "    [--checkpoint-dir DIR] [--keep-checkpoints K] [--dump-grads FILE]\n"
    "    [--routing-record FILE] [--routing-replay FILE] [--trace FILE]\n"
    "    [--trace-per-rank] [--timeout SECONDS] [--lr-schedule constant|cosine|linear]\n"
    "    [--warmup-steps W] [--min-lr X] [--total-steps S] [--grad-clip G] [--adam-beta1 X]\n"
    "    [--adam-beta2 X] [--adam-eps X] [--eval-data FILE] [--eval-every N]\n"
    "    [--eval-batches K] [--quiet] [--log-every N] [--comm mpi|nccl] [--help]\n";

/* --help: what every flag does, and how the binary is run. */
static const char *const USAGE =
    "usage: %s [options]\n"
    "Trains the compiled model (one Piper plan) on the tokens of a file.\n"
    "  --steps N               training steps (default 20)\n"
    "  --data FILE             training data: its bytes are the tokens\n"
    "                          (default: a built-in English corpus)\n"
    "  --data-format F         how --data and --eval-data hold tokens: bytes (default),\n"
    "                          u16 or u32 (little-endian ids, nanoGPT's train.bin is u16)\n"
    "  --seed S                parameter init seed, a non-negative integer (default 1337)\n"
    "  --lr X                  AdamW learning rate (default 1e-3)\n"
    "  --weight-decay X        AdamW decoupled weight decay for 2-D weights (default 0)\n"
    "  --metrics FILE          JSON lines, \"kind\" first: one \"train\" line per step\n"
    "                          (step, loss, page_faults, step_ms, tokens_per_s, mem: rank\n"
    "                          0's bytes and page faults),\n"
    "                          then one \"summary\" line with every rank's memory and peak\n"
    "                          RSS (schema: docs/metrics-and-traces.md)\n"
    "  --init-checkpoint FILE  load parameters from a safetensors file instead of\n"
    "                          initialising them; with the optimizer state and step a\n"
    "                          --save-checkpoint file holds, training resumes exactly:\n"
    "                          steps K, K+1, ... for a file saved after K steps (AdamW's\n"
    "                          step count, the batches and the metrics continue). A file\n"
    "                          without optimizer state starts a new run at step 0\n"
    "  --restart-steps         with --init-checkpoint: count steps from 0 anyway (AdamW's\n"
    "                          bias correction and the batches restart; moments still load)\n"
    "  --save-checkpoint FILE  save parameters, optimizer state and the number of completed\n"
    "                          steps (safetensors) after the last step\n"
    "  --save-dtype fp32|bf16  --save-checkpoint's parameters: fp32 (default), or bf16\n"
    "                          (rounded to nearest even): an inference checkpoint without\n"
    "                          optimizer state (periodic checkpoints stay fp32 and whole)\n"
    "  --dump-grads FILE       save every parameter's gradient at the first step run\n"
    "                          (step 0, or K when resuming) (safetensors)\n"
    "  --routing-record FILE   (MoE, tests) save every token's expert choices of every\n"
    "                          step; one device, --target cpu (docs/testing.md)\n"
    "  --routing-replay FILE   (MoE, tests) route every token as FILE records, report\n"
    "                          each token whose own choice differs (a flip) and the\n"
    "                          logit gap; plans of one microbatch, no PP or CP\n"
    "  --trace FILE            one Chrome trace JSON of every rank (a process per rank,\n"
    "                          clocks aligned to rank 0's), written by rank 0 at the end\n"
    "                          (open in Perfetto / chrome://tracing)\n"
    "  --trace-per-rank        with --trace: each rank writes its own file instead, FILE\n"
    "                          with .rank<k> before its extension (same aligned clock)\n"
    "  --checkpoint-every N    also write --save-checkpoint (or, with --checkpoint-dir,\n"
    "                          a ring file) every N steps during the run, atomically and\n"
    "                          from a background thread, so a run killed hard can resume\n"
    "  --checkpoint-dir DIR    periodic checkpoints go to DIR/step-<K>.safetensors (K the\n"
    "                          completed steps), and the last one too; piper-run resumes\n"
    "                          from the newest complete one\n"
    "  --keep-checkpoints K    ring files kept in --checkpoint-dir (default 3)\n"
    "  --timeout SECONDS       a transfer or collective that waits longer ends every rank\n"
    "                          with a message naming it (default 300; 0 = wait forever)\n"
    "  --lr-schedule NAME      constant (default), cosine or linear (docs/models.md)\n"
    "  --warmup-steps W        linear warm-up: step s < W uses lr*(s+1)/W (default 0)\n"
    "  --min-lr X              where cosine and linear end (default 0)\n"
    "  --total-steps S         the schedule's length (default: the checkpoint's step K\n"
    "                          plus --steps; give the whole run's length when resuming)\n"
    "  --grad-clip G           clip gradients to global L2 norm G (torch clip_grad_norm_)\n"
    "  --adam-beta1 X          AdamW beta1; overrides the plan's (default 0.9)\n"
    "  --adam-beta2 X          AdamW beta2; overrides the plan's (default 0.95)\n"
    "  --adam-eps X            AdamW eps; overrides the plan's (default 1e-8)\n"
    "  --eval-data FILE        evaluate on this file's bytes (needs --eval-every)\n"
    "  --eval-every N          after every step s with (s+1) %% N == 0: the mean loss of\n"
    "                          --eval-batches batches of --eval-data, without updates\n"
    "  --eval-batches K        batches per evaluation: batch k reads the windows training\n"
    "                          step k would (default 1)\n"
    "  --quiet                 no per-step lines on stdout\n"
    "  --log-every N           print every N-th step's line, and the first and last\n"
    "                          (default 1; --metrics still gets every step)\n"
    "  --comm mpi|nccl         a --target cuda binary's transfers: nccl runs collectives\n"
    "                          on the GPUs (needs NCCL and one GPU per rank), mpi stages\n"
    "                          them through host memory (ranks may share a GPU); default\n"
    "                          mpi (nccl is not yet verified on several GPUs; PIPER_COMM=...\n"
    "                          if not given)\n"
    "  --help                  this text\n"
    "A plan for D devices runs as D MPI ranks: mpirun -np D %s [options]\n"
    "(as root, Open MPI also wants --allow-run-as-root; more ranks than cores, --oversubscribe).\n"
    "SIGINT or SIGTERM: every rank finishes the current step, writes --save-checkpoint,\n"
    "metrics and traces, and the run exits 130 (SIGINT) or 143 (SIGTERM). SIGUSR1 (how\n"
    "piper-run asks for a stop through mpirun) is taken as SIGTERM.\n"
    "Exit codes: 0 done, 1 error, 2 bad command line, 130/143 stopped by a signal.\n";

/* ---- flags ---- */

/* One flag: its row of plan_flags.def and where its value goes. */
typedef struct prt_flag {
  const char *name;   /* "--steps" */
  prt_flag_type type; /* how the value is parsed */
  void *dst;          /* borrowed: int64_t, uint64_t, double, const char * or (BOOL) int */
} prt_flag;

static const prt_plan_flag prt_flag_table[] = {
#define PRT_PLAN_FLAG(name, type, field) {name, PRT_FLAG_##type},
#include "plan_flags.def"
#undef PRT_PLAN_FLAG
};

const prt_plan_flag *prt_plan_flags(size_t *n) {
  *n = sizeof prt_flag_table / sizeof *prt_flag_table;
  return prt_flag_table;
}

const prt_plan_flag *prt_plan_flag_find(const char *arg) {
  const char *eq = strchr(arg, '=');
  size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  for (size_t k = 0; k < sizeof prt_flag_table / sizeof *prt_flag_table; k++)
    if (strlen(prt_flag_table[k].name) == len && !strncmp(prt_flag_table[k].name, arg, len))
      return &prt_flag_table[k];
  return NULL;
}

/* Parses `value` of `flag` into its destination; 2 with a message if it is malformed. */
static int prt_parse_value(const prt_flag *f, const char *value, prt_status *st) {
  char *end = NULL;
  errno = 0;
  switch (f->type) {
  case PRT_FLAG_COUNT: {
    long long v = strtoll(value, &end, 10);
    if (!value[0] || *end || errno || v < 0)
      return prt_fail(st, 2, "%s expects a non-negative integer, got '%s': command line; "
                      "run with --help for usage", f->name, value);
    *(int64_t *)f->dst = v;
    return 0;
  }
  case PRT_FLAG_SEED: {
    unsigned long long v = strtoull(value, &end, 10);
    if (!value[0] || *end || errno || strchr(value, '-'))
      return prt_fail(st, 2, "%s expects a non-negative integer below 2^64, got '%s': "
                      "command line; run with --help for usage", f->name, value);
    *(uint64_t *)f->dst = v;
    return 0;
  }
  case PRT_FLAG_REAL: {
    double v = strtod(value, &end);
    if (!value[0] || *end || errno || !isfinite(v) || v < 0)
      return prt_fail(st, 2, "%s expects a non-negative number, got '%s': command line; "
                      "run with --help for usage", f->name, value);
    *(double *)f->dst = v;
    return 0;
  }
  case PRT_FLAG_WORD:
    *(const char **)f->dst = value;
    return 0;
  case PRT_FLAG_BOOL: /* takes no value: never reached with one */
    *(int *)f->dst = 1;
    return 0;
  case PRT_FLAG_FILE:
    if (!value[0])
      return prt_fail(st, 2, "%s expects a file name, got an empty string: command line; "
                      "run with --help for usage", f->name);
    *(const char **)f->dst = value;
    return 0;
  }
  return 0;
}

/* args -> { bool flag | flag value | flag=value }, by the table plan_flags.def. */
int prt_parse_args(int argc, char **argv, prt_opts *o, prt_status *st) {
  *o = (prt_opts){.steps = PRT_DEFAULT_STEPS, .seed = 1337, .lr = 1e-3, .weight_decay = 0.0,
                  .timeout = 300,
                  .loop = {.total = -1, .grad_clip = -1, .beta1 = NAN, .beta2 = NAN,
                           .eps = NAN, .eval_batches = 1}};
  o->log_every = 1;
  o->keep_ckpts = 3;
  o->data_format = PRT_DATA_BYTES;
  const prt_flag flags[] = {
#define PRT_PLAN_FLAG(name, type, field) {name, PRT_FLAG_##type, &o->field},
#include "plan_flags.def"
#undef PRT_PLAN_FLAG
  };
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    const prt_plan_flag *row = prt_plan_flag_find(arg);
    if (!row)
      return prt_fail(st, 2, "unknown %s '%s': command line; run with --help for usage",
                      arg[0] == '-' ? "flag" : "argument", arg);
    const prt_flag *f = &flags[row - prt_flag_table];
    const char *value = strchr(arg, '=');
    if (f->type == PRT_FLAG_BOOL) {
      if (value)
        return prt_fail(st, 2, "%s takes no value, got '%s': command line; run with --help "
                        "for usage", f->name, arg);
      prt_parse_value(f, "", st);
      continue;
    }
    if (value) {
      value++;
    } else {
      if (i + 1 >= argc)
        return prt_fail(st, 2, "%s needs a value: command line; run with --help for usage",
                        f->name);
      value = argv[++i];
    }
    if (strncmp(value, "--", 2) == 0) /* `--metrics --steps 5`: the value was forgotten */
      return prt_fail(st, 2, "%s needs a value, but the next argument is the flag %s: "
                      "command line; give %s its value (name a file that starts with '--' "
                      "as ./%s)", f->name, value, f->name, value);
    if (prt_parse_value(f, value, st)) return st->code;
  }
  if (o->log_every < 1)
    return prt_fail(st, 2, "--log-every expects a positive integer, got 0: command line; "
                    "pass 1 to print every step, or --quiet for none");
  if (o->trace_per_rank && !o->trace)
    return prt_fail(st, 2, "--trace-per-rank needs --trace (the file name to derive the "
                    "per-rank names from): command line; run with --help for usage");
  if (o->dump_grads && o->steps < 1)
    return prt_fail(st, 2, "--dump-grads captures the first step but --steps is 0: command "
                    "line; run at least one step");
  if (o->ckpt_every && !o->save_ckpt && !o->ckpt_dir)
    return prt_fail(st, 2, "--checkpoint-every needs --save-checkpoint (the file to write): "
                    "command line; or --checkpoint-dir (a folder for numbered checkpoints); "
                    "run with --help for usage");
  if (o->keep_ckpts < 1)
    return prt_fail(st, 2, "--keep-checkpoints expects a positive integer, got 0: command "
                    "line; keep at least the newest checkpoint");
  if (o->restart_steps && !o->init_ckpt)
    return prt_fail(st, 2, "--restart-steps needs --init-checkpoint (a run without one "
                    "starts at step 0 anyway): command line; run with --help for usage");
  const char *comm = o->comm_name, *save_dtype = o->save_dtype_name;
  if (comm) {
    if (!strcmp(comm, "mpi")) o->comm = PRT_COMM_MPI;
    else if (!strcmp(comm, "nccl")) o->comm = PRT_COMM_NCCL;
    else
      return prt_fail(st, 2, "--comm expects mpi (transfers staged through host memory) or "
                      "nccl (collectives on the GPUs), got '%s': command line", comm);
  }
  o->save_dtype = prt_st_dtype_for_flag(save_dtype ? save_dtype : "fp32");
  if (!o->save_dtype)
    return prt_fail(st, 2, "--save-dtype expects fp32 or bf16, got '%s': command line; run "
                    "with --help for usage", save_dtype);
  if (save_dtype && !o->save_ckpt)
    return prt_fail(st, 2, "--save-dtype needs --save-checkpoint (the file it sets the dtype "
                    "of): command line; run with --help for usage");
  if (o->data_format_name && prt_data_format_parse(o->data_format_name, &o->data_format, st))
    return st->code;
  if (o->lr_schedule && prt_schedule_parse(o->lr_schedule, &o->loop.schedule, st))
    return st->code;
  return prt_loop_check(&o->loop, o->lr, o->steps, st);
}

/* ---- signals ---- */

/* SIGINT or SIGTERM received (the first one), 0 before. The handler only records it: the
 * step loop reads it at the end of each step and carries it in the loss all-reduce, so every
 * rank stops after the same step and the checkpoint it writes is a consistent state. */
static volatile sig_atomic_t prt_signal_seen;

static void prt_on_signal(int sig) {
  /* SIGUSR1 is how piper-run asks for a stop: mpirun forwards it to every rank, on every
   * host, without killing them a second later as it does after forwarding SIGTERM. */
  if (!prt_signal_seen) prt_signal_seen = sig == SIGUSR1 ? SIGTERM : sig;
}

/* Routes SIGINT and SIGTERM to prt_on_signal (after MPI_Init, which may install its own). */
static void prt_catch_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = prt_on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART; /* file writes and MPI polls carry on; the flag does the rest */
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGUSR1, &sa, NULL);
}

/* ---- the files a run names ---- */

/* Local, on every rank. Every output the run will write (rank 0's metrics, checkpoints,
 * gradient dump and trace, or with --trace-per-rank each rank's trace file) passes
 * prt_files_check against the inputs and each other before the first step, so a bad path
 * costs nothing instead of the run. */
static int prt_check_paths(const prt_ctx *ctx, const prt_opts *o, prt_status *st) {
  int64_t ntrace = !o->trace ? 0 : o->trace_per_rank ? ctx->world : 1;
  int64_t n = 0, cap = 8 + ntrace;
  prt_file_use *u = prt_xmalloc((size_t)cap * sizeof *u, "file checks");
  char **names = prt_xmalloc((size_t)(cap - 8 + 1) * sizeof *names, "file checks");
  int64_t nnames = 0;
  if (o->data) u[n++] = (prt_file_use){"--data", o->data, 0, 0};
  if (o->init_ckpt) u[n++] = (prt_file_use){"--init-checkpoint", o->init_ckpt, 0, 1};
  if (o->loop.eval_data) u[n++] = (prt_file_use){"--eval-data", o->loop.eval_data, 0, 0};
  if (o->metrics) u[n++] = (prt_file_use){"--metrics", o->metrics, 1, 0};
  if (o->save_ckpt) u[n++] = (prt_file_use){"--save-checkpoint", o->save_ckpt, 1, 1};
  if (o->dump_grads) u[n++] = (prt_file_use){"--dump-grads", o->dump_grads, 1, 0};
  if (o->routing_record) u[n++] = (prt_file_use){"--routing-record", o->routing_record, 1, 0};
  if (o->routing_replay) u[n++] = (prt_file_use){"--routing-replay", o->routing_replay, 0, 0};
  if (o->trace && !o->trace_per_rank) u[n++] = (prt_file_use){"--trace", o->trace, 1, 0};
  for (int64_t r = 0; o->trace_per_rank && r < ntrace; r++) {
    names[nnames] = prt_trace_path(o->trace, r);
    u[n++] = (prt_file_use){"--trace", names[nnames++], 1, 0};
  }
  prt_files_check(u, n, st);
  for (int64_t k = 0; k < nnames; k++) free(names[k]);
  free(names);
  free(u);
  return st->code;
}

/* --dump-grads saves whole gradients; under ZeRO-2 no rank ever holds one (the update reads
 * a reduce-scattered shard of each), so the dump is refused before the first step instead of
 * failing after it. Local: a rank that declared such a parameter fails naming it; the next
 * prt_agree makes it every rank's. */
static int prt_check_dump(const prt_ctx *ctx, const prt_opts *o, prt_status *st) {
  if (!o->dump_grads || ctx->grad_scattered < 0) return 0;
  return prt_fail(st, 2, "--dump-grads cannot work with this plan: it reduce-scatters the "
                  "gradients (ZeRO-2), so no rank ever holds a whole gradient (of '%s', for "
                  "one) to save: command line; drop --dump-grads, or dump from a plan without "
                  "ZeRO-2 (ZeRO-1 and ZeRO-3 compute the same gradients)",
                  ctx->tensors[ctx->grad_scattered].name);
}

/* ---- the run ---- */

static double prt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* The world check: the plan's device count against the world the backend runs; a role plan
 * on fewer ranks runs elastic where it can (elastic.c decided at prt_declare_roles). Local. */
static int prt_check_world(prt_ctx *ctx, const prt_opts *o, prt_status *st) {
  int64_t planned = ctx->declared_world ? ctx->declared_world : 1;
  if (planned == ctx->world) return 0;
  if (ctx->elastic.k > 1) return prt_elastic_check(ctx, o->dump_grads != NULL, st);
  if (ctx->rank == 0) { /* printed here: it is no rank's fault, so no " (rank k)" */
    if (ctx->elastic.refusal[0])
      fprintf(stderr, "piper: error: %s\n", ctx->elastic.refusal);
    else if (prt_backend_current()->comm->one_process)
      fprintf(stderr, "piper: error: this plan is for %lld devices but this binary runs on "
              "one (it is linked with the serial comm backend); link it with piper_rt_mpi "
              "and run it with mpirun -np %lld\n", (long long)planned, (long long)planned);
    else
      fprintf(stderr, "piper: error: this plan is for %lld device%s but mpirun started %lld "
              "rank%s; run it with mpirun -np %lld\n", (long long)planned,
              planned == 1 ? "" : "s", (long long)ctx->world, ctx->world == 1 ? "" : "s",
              (long long)planned);
    fflush(stderr);
  }
  st->code = 1; /* quiet everywhere: the line above is the message */
  st->msg[0] = 0;
  return 1;
}

static void prt_banner(const prt_ctx *ctx, const prt_opts *o, const prt_data *data,
                       int64_t T, int64_t start) {
  int64_t np = prt_ctx_param_count(ctx);
  char from[64] = "";
  if (start > 0) snprintf(from, sizeof from, " from step %lld (resumed)", (long long)start);
  if (ctx->world == 1) {
    printf("piper: %lld params (%.2f M, %.1f MB), arena %.1f MB, batch %lld x %lld, "
           "data %s (%lld bytes), %lld steps%s\n", (long long)np, np / 1e6, np * 4 / 1e6,
           ctx->arena_bytes / 1e6, (long long)ctx->global_batch, (long long)T, data->name,
           (long long)data->n, (long long)o->steps, from);
  } else {
    int64_t all = prt_catalog_numel(ctx);
    printf("piper: %lld devices (%s), %lld params (%.2f M); rank 0 holds %.1f MB, arena "
           "%.1f MB; global batch %lld x %lld, data %s (%lld bytes), %lld steps%s\n",
           (long long)ctx->world, prt_backend_current()->comm->name, (long long)all, all / 1e6, np * 4 / 1e6,
           ctx->arena_bytes / 1e6, (long long)ctx->global_batch, (long long)T, data->name,
           (long long)data->n, (long long)o->steps, from);
  }
  fflush(stdout);
}

/* The first step of this run after loading a checkpoint: its step K when it also restored
 * the optimizer state (and --restart-steps is not given), else 0. Rank 0 says why when the
 * plan's optimizer state starts fresh. Alike on every rank (info depends on the file and the
 * catalog only). */
static int64_t prt_resume_step(const prt_ctx *ctx, const prt_opts *o, const prt_ckpt_info *in,
                               prt_status *st) {
  int64_t start = in->optim && in->step > 0 && !o->restart_steps ? in->step : 0;
  if (start > INT64_MAX - o->steps) {
    prt_fail(st, 1, "checkpoint step %lld plus --steps %lld overflows the step count: %s; "
             "pass fewer steps or --restart-steps", (long long)in->step, (long long)o->steps,
             o->init_ckpt);
    return 0;
  }
  if (ctx->rank != 0 || in->optim || !prt_catalog_optim_count(ctx)) return start;
  char why[96] = "";
  if (in->step > 0)
    snprintf(why, sizeof why, " at step 0 (the file was saved after step %lld)",
             (long long)in->step);
  if (in->optim_skipped)
    fprintf(stderr, "piper: warning: the checkpoint's optimizer state is not loaded: %s; "
            "AdamW starts fresh%s\n", prt_catalog_optim_problem(ctx), why);
  else
    fprintf(stderr, "piper: note: checkpoint has no optimizer state%s: AdamW starts fresh%s\n",
            in->foreign_optim ? " for this model (its optim.* tensors are another's)" : "",
            why);
  fflush(stderr);
  return start;
}

/* One evaluation's metrics line (rank 0). */
static int prt_write_eval_metrics(FILE *f, int64_t s, double loss) {
  if (isfinite(loss))
    fprintf(f, "{\"kind\": \"eval\", \"step\": %lld, \"eval_loss\": %.9g}\n", (long long)s, loss);
  else fprintf(f, "{\"kind\": \"eval\", \"step\": %lld, \"eval_loss\": null}\n", (long long)s);
  return fflush(f);
}

/* What one run carries from the plan's setup through its steps to its end (prt_run). */
typedef struct prt_run_state {
  prt_ctx *ctx;
  prt_data data;
  prt_data eval_data;            /* --eval-data, open when evaluating */
  void (*eval_step)(prt_ctx *);  /* the binary's evaluation step; NULL: none */
  FILE *metrics;                 /* rank 0's --metrics file; NULL: none */
  int64_t T;                     /* the world's sequence length */
  int64_t start;                 /* the first step this run executes */
  int64_t completed;             /* steps done, what a checkpoint written now records */
  int stop_signal;               /* SIGINT/SIGTERM agreed by every rank: stop after this step */
  int pending;                   /* this rank failed (a metrics write): every rank stops
                                    after this step */
  double ms_sum;                 /* wall milliseconds of the steps run so far (for the ETA) */
  prt_loop loop;                 /* the schedule's length is resolved once the start is known */
  prt_ckpt_writer *writer;       /* --checkpoint-every's background writer; NULL: none */
  prt_routing *routing;          /* --routing-record/--routing-replay; NULL: neither */
} prt_run_state;

/* The plan's setup and the checks every rank agrees on before anything is read. */
static int prt_run_setup(prt_run_state *r, const prt_opts *o, void (*setup)(prt_ctx *),
                         prt_status *st) {
  prt_ctx *ctx = r->ctx;
  ctx->lr = o->lr;
  ctx->comm = o->comm;
  ctx->weight_decay = o->weight_decay;
  ctx->adam_beta1 = r->loop.beta1;
  ctx->adam_beta2 = r->loop.beta2;
  ctx->adam_eps = r->loop.eps;
  ctx->grad_clip = r->loop.grad_clip > 0 ? r->loop.grad_clip : 0.0;

  setup(ctx);
  prt_watch.timeout_s = o->timeout;
  prt_watch.step = -1;
  if (ctx->comm == PRT_COMM_NCCL && !ctx->comm_resolved) /* no GPU setup consumed it */
    prt_fail(st, 2, "--comm nccl needs a binary compiled with --target cuda (this one runs on "
             "the CPU, over MPI): command line; drop --comm or pass --comm mpi");
  else if (!prt_check_world(ctx, o, st) && !prt_check_paths(ctx, o, st) && !prt_ctx_allocate(ctx, st))
    prt_check_dump(ctx, o, st);
  if (!st->code && (o->ckpt_every || o->ckpt_dir))
    r->writer = prt_ckpt_writer_create(ctx, o->ckpt_dir, o->save_ckpt, o->keep_ckpts, st);
  if (!st->code)
    prt_routing_open(&r->routing, ctx, o->routing_record, o->routing_replay, st);
  if (prt_agree(ctx, st)) return st->code;
  if (!prt_dist_setup(ctx, &r->T, st)) prt_catalog_build(ctx, st); /* alike on every rank */
  return prt_agree(ctx, st);
}

/* The data, the parameters (fresh or from the checkpoint), the metrics file, the schedule,
 * the evaluation data, the trace's clock. */
static int prt_run_open(prt_run_state *r, const prt_opts *o, prt_status *st) {
  prt_ctx *ctx = r->ctx;
  int64_t V = prt_catalog_vocab(ctx);
  if (prt_data_open(&r->data, o->data, o->data_format, r->T, V, st) == 0) {
    prt_ckpt_info info;
    if (!o->init_ckpt) prt_init_params(ctx, o->seed);
    else if (prt_checkpoint_load(ctx, o->init_ckpt, &info, st) == 0)
      r->start = prt_resume_step(ctx, o, &info, st);
  }
  ctx->dump_step = o->dump_grads ? r->start : -1;
  if (!st->code && ctx->rank == 0 && o->metrics && !(r->metrics = fopen(o->metrics, "w")))
    prt_fail(st, 1, "cannot open metrics file: %s: %s; check the directory exists and is "
             "writable", o->metrics, strerror(errno));
  /* appended to: a rank that injects a fault adds its "fault" line there (fault_inject.c),
   * which rank 0's later lines must not overwrite */
  if (r->metrics) fcntl(fileno(r->metrics), F_SETFL, O_APPEND);
  if (!st->code) prt_loop_resolve(&r->loop, r->start, o->steps, st); /* alike on every rank */
  if (!st->code && r->loop.eval_data && !r->eval_step)
    prt_fail(st, 1, "this binary has no evaluation step (piper_eval_step): --eval-every; "
             "compile the model again with this version of piper-compile");
  if (!st->code && r->loop.eval_data) { /* the loader's message names --data: say which file */
    prt_status es = {0};
    if (prt_data_open(&r->eval_data, r->loop.eval_data, o->data_format, r->T, V, &es))
      prt_fail(st, es.code, "--eval-data: %s", es.msg);
  }
  if (prt_agree(ctx, st)) return st->code;
  prt_watch.what = "the trace's clock sync";
  if (o->trace) prt_trace_start(ctx);
  prt_watch.what = NULL;
  return 0;
}

/* This process's minor page faults so far (-1 if getrusage fails). */
static int64_t prt_minor_faults(void) {
  struct rusage u;
  return getrusage(RUSAGE_SELF, &u) == 0 ? (int64_t)u.ru_minflt : -1;
}

/* Step s's record: the --metrics line and (when due) the progress line. */
static void prt_run_report(prt_run_state *r, const prt_opts *o, int64_t s, float L, double ms,
                           int64_t faults, prt_status *st) {
  prt_ctx *ctx = r->ctx;
  prt_step_record rec = {.step = s, .total = r->start + o->steps, .loss = L, .lr = ctx->lr,
                         .grad_norm = ctx->grad_norm, .step_ms = ms, .tokens_per_s = 0,
                         .page_faults = faults};
  if (ms > 0) rec.tokens_per_s = (double)(ctx->global_batch * r->T) / (ms * 1e-3);
  /* ETA: the steps left times the mean step time of this run's steps so far */
  rec.eta_s = (double)(rec.total - s - 1) * (r->ms_sum / (double)(s - r->start + 1)) * 1e-3;
  if (r->metrics && prt_metrics_train(r->metrics, ctx, &rec) != 0) {
    prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space",
             o->metrics, strerror(errno));
    r->pending = 1;
  }
  if (ctx->rank == 0 && !o->quiet &&
      (prt_progress_due(s, r->start, r->start + o->steps - 1, o->log_every) || r->stop_signal ||
       !isfinite(L)))
    prt_progress_line(stdout, &rec);
}

/* The evaluation due after step s (collective): its loss to --metrics and stdout. */
static void prt_run_eval(prt_run_state *r, const prt_opts *o, int64_t s, prt_status *st) {
  double E = prt_eval_loss(r->ctx, &r->loop, &r->eval_data, r->eval_step);
  if (r->metrics && prt_write_eval_metrics(r->metrics, s, E) != 0) {
    prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space",
             o->metrics, strerror(errno));
    r->pending = 1;
  }
  if (r->ctx->rank == 0 && !o->quiet) {
    printf("eval %4lld | eval_loss %.6f\n", (long long)s, E);
    fflush(stdout);
  }
}

/* How a step ends the loop: the next step, a stop every rank agreed on (a signal: the run
 * still saves), or a failure (straight to the end). */
enum { PRT_STEP_NEXT, PRT_STEP_STOP, PRT_STEP_FAIL };

/* Runs step s and what follows it: the loss over the ranks, the reports, the gradient dump,
 * the evaluation and the periodic checkpoint that are due. */
static int prt_run_step(prt_run_state *r, const prt_opts *o, void (*step)(prt_ctx *),
                        int64_t s, prt_status *st) {
  prt_ctx *ctx = r->ctx;
  ctx->step = s;
  prt_watch.step = s;
  ctx->adam_t = s + 1;
  ctx->lr = prt_lr_at(&r->loop, o->lr, s);
  double t0 = prt_now_ms();
  int64_t f0 = prt_minor_faults();
  prt_span_begin(ctx, "step", 0);
  prt_routing_step_begin(r->routing, s);
  prt_elastic_step(ctx, &r->data, s, step); /* the inputs, then the step (k passes) */
  if (prt_routing_step_end(r->routing, st)) r->pending = 1; /* every rank stops after it */
  if (prt_fault_point(PRT_FAULT_AT_STEP, ctx->rank, s)) /* PIPER_FAULT=hold: until a stop */
    while (!prt_signal_seen) nanosleep(&(struct timespec){0, 10000000}, NULL);
  if (ctx->ops_busy)
    prt_fatal("step %lld ended with %lld transfer%s never waited: piper_step (rank %lld); "
              "every prt_isend/prt_irecv/collective needs its prt_wait: this is a bug in "
              "the compiled plan", (long long)s, (long long)ctx->ops_busy,
              ctx->ops_busy == 1 ? "" : "s", (long long)ctx->rank);
  prt_span_end(ctx, 0);
  int stop = 0;
  prt_watch.what = "the step's loss and stop flags";
  float L = (float)prt_dist_loss(ctx, r->pending, prt_signal_seen, &stop, &r->stop_signal);
  prt_watch.what = NULL;
  double ms = prt_now_ms() - t0;
  int64_t f1 = prt_minor_faults();
  if (stop) return PRT_STEP_FAIL; /* the failing rank's status says why */
  r->ms_sum += ms;
  prt_run_report(r, o, s, L, ms, f0 >= 0 && f1 >= 0 ? f1 - f0 : -1, st);
  if (!isfinite(L)) { /* every rank sees the same loss: they all stop here */
    prt_fail(st, 1, "loss is %s at step %lld: training diverged; lower --lr, or check the "
             "data and the compiled plan", isnan(L) ? "NaN" : "infinite", (long long)s);
    return PRT_STEP_FAIL;
  }
  if (s == ctx->dump_step) {
    prt_grads_save(ctx, o->dump_grads, st);
    if (prt_agree(ctx, st)) return PRT_STEP_FAIL;
  }
  r->completed = s + 1;
  if (r->stop_signal) return PRT_STEP_STOP;
  if (r->loop.eval_every && r->completed % r->loop.eval_every == 0) prt_run_eval(r, o, s, st);
  if (o->ckpt_every && (r->completed - r->start) % o->ckpt_every == 0 &&
      r->completed < r->start + o->steps) {
    prt_watch.what = "a periodic checkpoint";
    prt_ckpt_periodic(r->writer, ctx, r->completed, st);
    if (prt_agree(ctx, st)) return PRT_STEP_FAIL;
    prt_watch.what = NULL;
  }
  return PRT_STEP_NEXT;
}

/* After the last step: the final checkpoint, what a signal stopped, the memory report. */
static void prt_run_end(prt_run_state *r, const prt_opts *o, prt_status *st) {
  prt_ctx *ctx = r->ctx;
  prt_watch.what = "the final checkpoint";
  prt_ckpt_writer_wait(r->writer, st); /* the periodic write in flight ends before the last */
  if (prt_agree(ctx, st)) return;
  if (o->save_ckpt) prt_checkpoint_save_as(ctx, o->save_ckpt, r->completed, o->save_dtype, st);
  if (prt_agree(ctx, st)) return;
  prt_ckpt_ring_final(r->writer, ctx, r->completed, st);
  if (prt_agree(ctx, st)) return;
  prt_routing_finish(r->routing, ctx, st);
  if (prt_agree(ctx, st)) return;
  prt_watch.what = NULL;
  if (r->stop_signal && r->metrics) { /* what a supervisor reads: stopped, and where */
    fprintf(r->metrics, "{\"kind\": \"stop\", \"signal\": \"%s\", \"steps\": %lld}\n",
            r->stop_signal == SIGINT ? "SIGINT" : "SIGTERM", (long long)r->completed);
    if (fflush(r->metrics) != 0)
      prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space",
               o->metrics, strerror(errno));
  }
  if (r->stop_signal && ctx->rank == 0) {
    const char *name = r->stop_signal == SIGINT ? "SIGINT" : "SIGTERM";
    bool resumable = !o->save_dtype || strcmp(o->save_dtype->name, "F32") == 0;
    if (o->save_ckpt && resumable)
      fprintf(stderr, "piper: stopped by %s after step %lld: saved %s (%lld steps completed); "
              "resume with --init-checkpoint %s\n", name, (long long)(r->completed - 1),
              o->save_ckpt, (long long)r->completed, o->save_ckpt);
    else if (o->save_ckpt) /* an inference checkpoint: no optimizer state to resume from */
      fprintf(stderr, "piper: stopped by %s after step %lld: saved %s (%lld steps completed) "
              "as %s parameters only, which cannot resume the run exactly (AdamW restarts); "
              "to stop and resume, save with --save-dtype fp32 or keep a --checkpoint-dir "
              "ring\n", name, (long long)(r->completed - 1), o->save_ckpt,
              (long long)r->completed, o->save_dtype->name);
    else
      fprintf(stderr, "piper: stopped by %s after step %lld; no checkpoint saved (pass "
              "--save-checkpoint to keep the run)\n", name, (long long)(r->completed - 1));
    fflush(stderr);
  }
  prt_report_memory(ctx, r->metrics, o->metrics, o->quiet, st);
}

/* However the run ended: the trace, the metrics file, one status over the ranks, the
 * resources; the exit code. */
static int prt_run_close(prt_run_state *r, const prt_opts *o, prt_status *st) {
  prt_ctx *ctx = r->ctx;
  prt_watch.what = "gathering the trace";
  if (ctx->trace) prt_trace_write(ctx, o->trace, o->trace_per_rank, st);
  prt_watch.what = NULL;
  if (r->metrics && fclose(r->metrics) != 0 && !st->code)
    prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space", o->metrics,
             strerror(errno));
  prt_ckpt_writer_wait(r->writer, st);
  prt_agree(ctx, st);
  prt_ckpt_writer_destroy(r->writer);
  prt_routing_free(r->routing);
  prt_data_close(&r->data);
  prt_data_close(&r->eval_data);
  prt_ctx_destroy(ctx);
  if (!st->code && r->stop_signal) st->code = 128 + r->stop_signal; /* the shell's convention */
  return st->code;
}

/* Start-up phases for a supervisor to time a restart by: wall-clock seconds when prt_main was
 * entered, MPI_Init returned, the plan was set up and allocated (prt_run_setup), and the
 * parameters were initialised or loaded (prt_run_open). Rank 0 writes them as the --metrics
 * file's "phases" line before the first step (piper-run --phases reads it there), and with
 * PIPER_PHASES=1 in the environment prints them in one line on stderr too. */
static struct {
  double main, mpi, setup, open;
} prt_phase;

static double prt_wall_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void prt_phases_print(const prt_ctx *ctx, FILE *metrics, const char *path,
                             prt_status *st) {
  if (metrics) {
    fprintf(metrics, "{\"kind\": \"phases\", \"main\": %.3f, \"mpi_init\": %.3f, "
            "\"setup\": %.3f, \"open\": %.3f}\n", prt_phase.main, prt_phase.mpi,
            prt_phase.setup, prt_phase.open);
    if (fflush(metrics) != 0)
      prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space", path,
               strerror(errno));
  }
  const char *env = getenv("PIPER_PHASES");
  if (ctx->rank != 0 || !env || strcmp(env, "1")) return;
  fprintf(stderr, "piper: phases: main %.3f mpi_init %.3f setup %.3f open %.3f\n",
          prt_phase.main, prt_phase.mpi, prt_phase.setup, prt_phase.open);
  fflush(stderr);
}

static int prt_run(const prt_opts *o, void (*setup)(prt_ctx *), void (*step)(prt_ctx *),
                   prt_status *st) {
  prt_run_state r = {.ctx = prt_ctx_create(), .eval_step = prt_eval_step_fn(), .loop = o->loop};
  int ready = !prt_run_setup(&r, o, setup, st);
  prt_phase.setup = prt_wall_s();
  if (ready && !prt_run_open(&r, o, st)) {
    prt_phase.open = prt_wall_s();
    prt_phases_print(r.ctx, r.metrics, o->metrics, st);
    if (r.ctx->rank == 0 && !o->quiet) prt_banner(r.ctx, o, &r.data, r.T, r.start);
    r.completed = r.start;
    int how = PRT_STEP_NEXT;
    for (int64_t s = r.start; how == PRT_STEP_NEXT && s < r.start + o->steps; s++)
      how = prt_run_step(&r, o, step, s, st);
    if (how != PRT_STEP_FAIL) prt_run_end(&r, o, st);
  }
  return prt_run_close(&r, o, st);
}

int prt_main(int argc, char **argv, void (*setup)(prt_ctx *), void (*step)(prt_ctx *)) {
  prt_phase.main = prt_wall_s();
  /* The flags are read before MPI_Init (which leaves argv as mpirun gave it), so that the
   * --timeout watchdog covers the ranks' first connections in it too (comm/mpi.c); a bad
   * command line is said after it, by rank 0. */
  prt_opts o;
  prt_status st = {0};
  int bad = prt_parse_args(argc, argv, &o, &st);
  prt_watch.timeout_s = o.timeout > 0 ? o.timeout : 0;
  if (!bad) prt_fault_events_to(o.metrics); /* an injected fault is said there too */
  int owner = prt_comm_init(&argc, &argv); /* MPI_Init before anything else */
  prt_phase.mpi = prt_wall_s();
  int64_t rank = prt_comm_rank(), world = prt_comm_size();
  prt_catch_signals();
  prt_fault_set_world(world);
  const char *prog = argc > 0 && argv[0] ? argv[0] : "piper-train";
  int rc = 0;
  if (bad) { /* alike on every rank: rank 0 says it */
    if (rank == 0) {
      fprintf(stderr, "piper: error: %s\n", st.msg);
      fprintf(stderr, SYNOPSIS, prog);
    }
    rc = st.code;
  } else if (o.help) {
    if (rank == 0) printf(USAGE, prog, prog);
  } else if (prt_run(&o, setup, step, &st)) {
    if (st.msg[0] && world > 1)
      fprintf(stderr, "piper: error: %s (rank %lld)\n", st.msg, (long long)rank);
    else if (st.msg[0])
      fprintf(stderr, "piper: error: %s\n", st.msg);
    rc = st.code;
  }
  fflush(stdout);
  fflush(stderr);
  if (owner) prt_comm_finalize();
  return rc;
}
