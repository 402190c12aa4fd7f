/* prt_main: the training binary around a compiled plan. Parses flags, runs piper_setup,
 * allocates, opens the data, initialises or loads parameters, runs the step loop with
 * metrics, and saves what was asked for. Every failure prints
 * "piper: error: <what>: <where>; <what to do>" and returns 1 (2 for a bad command line).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prt_internal.h"

/* What the command line asked for. */
typedef struct prt_opts {
  int64_t steps;          /* --steps: training steps to run (>= 0) */
  uint64_t seed;          /* --seed: parameter init seed */
  double lr;              /* --lr: AdamW learning rate */
  double weight_decay;    /* --weight-decay: AdamW decoupled weight decay */
  const char *data;       /* --data: borrowed from argv; NULL = built-in corpus */
  const char *metrics;    /* --metrics: JSON-lines file, borrowed; NULL = none */
  const char *init_ckpt;  /* --init-checkpoint: borrowed; NULL = fresh init */
  const char *save_ckpt;  /* --save-checkpoint: borrowed; NULL = none */
  const char *dump_grads; /* --dump-grads: borrowed; NULL = none */
  int quiet;              /* --quiet: no per-step lines on stdout */
  int help;               /* --help: print usage and exit 0 */
} prt_opts;

static const char *const USAGE =
    "usage: %s [options]\n"
    "Trains the compiled model (one Piper plan) on the bytes of a file (vocabulary 256).\n"
    "  --steps N               training steps (default 20)\n"
    "  --data FILE             training data: its bytes are the tokens\n"
    "                          (default: a built-in English corpus)\n"
    "  --seed S                parameter init seed, a non-negative integer (default 1337)\n"
    "  --lr X                  AdamW learning rate (default 1e-3)\n"
    "  --weight-decay X        AdamW decoupled weight decay for 2-D weights (default 0)\n"
    "  --metrics FILE          write one JSON line per step: step, loss, step_ms,\n"
    "                          tokens_per_s\n"
    "  --init-checkpoint FILE  load parameters from a safetensors file instead of\n"
    "                          initialising them\n"
    "  --save-checkpoint FILE  save parameters (safetensors) after the last step\n"
    "  --dump-grads FILE       save every parameter's gradient at step 0 (safetensors)\n"
    "  --quiet                 no per-step lines on stdout\n"
    "  --help                  this text\n";

/* ---- flags ---- */

typedef enum { PRT_FLAG_COUNT, PRT_FLAG_SEED, PRT_FLAG_REAL, PRT_FLAG_FILE } prt_flag_type;

/* One flag that takes a value. */
typedef struct prt_flag {
  const char *name;   /* "--steps" */
  prt_flag_type type; /* how the value is parsed */
  void *dst;          /* borrowed: int64_t, uint64_t, double or const char * to set */
} prt_flag;

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
  case PRT_FLAG_FILE:
    if (!value[0])
      return prt_fail(st, 2, "%s expects a file name, got an empty string: command line; "
                      "run with --help for usage", f->name);
    *(const char **)f->dst = value;
    return 0;
  }
  return 0;
}

/* args -> { "--help" | "--quiet" | flag value | flag=value } */
static int prt_parse_args(int argc, char **argv, prt_opts *o, prt_status *st) {
  *o = (prt_opts){.steps = 20, .seed = 1337, .lr = 1e-3, .weight_decay = 0.0};
  const prt_flag flags[] = {
      {"--steps", PRT_FLAG_COUNT, &o->steps},
      {"--seed", PRT_FLAG_SEED, &o->seed},
      {"--lr", PRT_FLAG_REAL, &o->lr},
      {"--weight-decay", PRT_FLAG_REAL, &o->weight_decay},
      {"--data", PRT_FLAG_FILE, &o->data},
      {"--metrics", PRT_FLAG_FILE, &o->metrics},
      {"--init-checkpoint", PRT_FLAG_FILE, &o->init_ckpt},
      {"--save-checkpoint", PRT_FLAG_FILE, &o->save_ckpt},
      {"--dump-grads", PRT_FLAG_FILE, &o->dump_grads},
  };
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      o->help = 1;
      continue;
    }
    if (strcmp(arg, "--quiet") == 0) {
      o->quiet = 1;
      continue;
    }
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const prt_flag *f = NULL;
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
      if (strlen(flags[k].name) == len && strncmp(flags[k].name, arg, len) == 0) f = &flags[k];
    if (!f)
      return prt_fail(st, 2, "unknown %s '%s': command line; run with --help for usage",
                      arg[0] == '-' ? "flag" : "argument", arg);
    const char *value = eq ? eq + 1 : NULL;
    if (!value) {
      if (i + 1 >= argc)
        return prt_fail(st, 2, "%s needs a value: command line; run with --help for usage",
                        f->name);
      value = argv[++i];
    }
    if (prt_parse_value(f, value, st)) return st->code;
  }
  if (o->dump_grads && o->steps < 1)
    return prt_fail(st, 2, "--dump-grads captures step 0 but --steps is 0: command line; "
                    "run at least one step");
  return 0;
}

/* ---- the run ---- */

static double prt_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

/* Checks what prt_main itself needs from the plan: tokens to fill and a loss to report. */
static int prt_check_plan(const prt_ctx *ctx, prt_status *st) {
  const char *fix = "the compiled plan must declare it in piper_setup; recompile it";
  if (ctx->tokens_id < 0)
    return prt_fail(st, 1, "the plan declares no PRT_INPUT \"tokens\": piper_setup; %s", fix);
  if (ctx->loss_id < 0)
    return prt_fail(st, 1, "the plan declares no PRT_OUTPUT \"loss\": piper_setup; %s", fix);
  return 0;
}

static int prt_run(const prt_opts *o, void (*setup)(prt_ctx *), void (*step)(prt_ctx *),
                   prt_status *st) {
  prt_ctx *ctx = prt_ctx_create();
  prt_data data = {0};
  FILE *metrics = NULL;
  ctx->lr = o->lr;
  ctx->weight_decay = o->weight_decay;
  ctx->dump_step = o->dump_grads ? 0 : -1;

  setup(ctx);
  if (prt_ctx_allocate(ctx, st) || prt_check_plan(ctx, st)) goto done;
  const prt_tensor_info *tok = &ctx->tensors[ctx->tokens_id];
  int64_t B = tok->dims[0], T = tok->dims[1];
  if (prt_data_open(&data, o->data, T, st)) goto done;
  if (o->init_ckpt) {
    if (prt_checkpoint_load(ctx, o->init_ckpt, st)) goto done;
  } else {
    prt_init_params(ctx, o->seed);
  }
  if (o->metrics && !(metrics = fopen(o->metrics, "w"))) {
    prt_fail(st, 1, "cannot open metrics file: %s: %s; check the directory exists and is "
             "writable", o->metrics, strerror(errno));
    goto done;
  }

  if (!o->quiet) {
    int64_t np = prt_ctx_param_count(ctx);
    printf("piper: %lld params (%.2f M, %.1f MB), arena %.1f MB, batch %lld x %lld, "
           "data %s (%lld bytes), %lld steps\n", (long long)np, np / 1e6, np * 4 / 1e6,
           ctx->arena_bytes / 1e6, (long long)B, (long long)T, data.name, (long long)data.n,
           (long long)o->steps);
    fflush(stdout);
  }
  const float *loss = ctx->tensors[ctx->loss_id].data;
  for (int64_t s = 0; s < o->steps; s++) {
    ctx->step = s;
    ctx->adam_t = s + 1;
    double t0 = prt_now_ms();
    prt_data_fill(&data, ctx, s);
    step(ctx);
    double ms = prt_now_ms() - t0;
    double tps = ms > 0 ? (double)(B * T) / (ms * 1e-3) : 0.0; /* this device's tokens */
    float L = loss[0];
    if (metrics) {
      if (isfinite(L)) fprintf(metrics, "{\"step\": %lld, \"loss\": %.9g, ", (long long)s, L);
      else fprintf(metrics, "{\"step\": %lld, \"loss\": null, ", (long long)s);
      fprintf(metrics, "\"step_ms\": %.6g, \"tokens_per_s\": %.6g}\n", ms, tps);
      if (fflush(metrics) != 0) {
        prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space",
                 o->metrics, strerror(errno));
        goto done;
      }
    }
    if (!o->quiet) {
      printf("step %4lld | loss %.6f | %.1f ms | %.0f tok/s\n", (long long)s, L, ms, tps);
      fflush(stdout);
    }
    if (!isfinite(L)) {
      prt_fail(st, 1, "loss is %s at step %lld: training diverged; lower --lr, or check the "
               "data and the compiled plan", isnan(L) ? "NaN" : "infinite", (long long)s);
      goto done;
    }
    if (s == ctx->dump_step && prt_grads_save(ctx, o->dump_grads, st)) goto done;
  }
  if (o->save_ckpt) prt_checkpoint_save(ctx, o->save_ckpt, st);

done:
  if (metrics && fclose(metrics) != 0 && !st->code)
    prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space", o->metrics,
             strerror(errno));
  prt_data_close(&data);
  prt_ctx_destroy(ctx);
  return st->code;
}

int prt_main(int argc, char **argv, void (*setup)(prt_ctx *), void (*step)(prt_ctx *)) {
  const char *prog = argc > 0 && argv[0] ? argv[0] : "piper-train";
  prt_opts o;
  prt_status st = {0};
  if (prt_parse_args(argc, argv, &o, &st)) {
    fprintf(stderr, "piper: error: %s\n", st.msg);
    fprintf(stderr, "usage: %s [--steps N] [--data FILE] [--seed S] [--lr X] "
            "[--weight-decay X] [--metrics FILE] [--init-checkpoint FILE] "
            "[--save-checkpoint FILE] [--dump-grads FILE] [--quiet] [--help]\n", prog);
    return st.code;
  }
  if (o.help) {
    printf(USAGE, prog);
    return 0;
  }
  if (prt_run(&o, setup, step, &st)) {
    fprintf(stderr, "piper: error: %s\n", st.msg);
    return st.code;
  }
  return 0;
}
