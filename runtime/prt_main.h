/* The training binary's command line (main.c): the flags, parsed without side effects. */
#ifndef PIPER_PRT_MAIN_H
#define PIPER_PRT_MAIN_H

#include "prt_data.h"
#include "prt_safetensors.h"
#include "prt_schedule.h"

/* What the command line asked for. */
typedef struct prt_opts {
  int64_t steps;          /* --steps: training steps to run (>= 0) */
  uint64_t seed;          /* --seed: parameter init seed */
  double lr;              /* --lr: AdamW learning rate */
  double weight_decay;    /* --weight-decay: AdamW decoupled weight decay */
  const char *data;       /* --data: borrowed from argv; NULL = built-in corpus */
  prt_data_format data_format; /* --data-format: how --data and --eval-data hold tokens */
  const char *metrics;    /* --metrics: JSON-lines file, borrowed; NULL = none */
  const char *init_ckpt;  /* --init-checkpoint: borrowed; NULL = fresh init */
  const char *save_ckpt;  /* --save-checkpoint: borrowed; NULL = none */
  const char *dump_grads; /* --dump-grads: borrowed; NULL = none */
  const char *routing_record; /* --routing-record: borrowed; NULL = none */
  const char *routing_replay; /* --routing-replay: borrowed; NULL = none */
  const char *trace;      /* --trace: borrowed; NULL = none */
  double timeout;         /* --timeout: seconds a transfer may wait (watchdog); 0 = forever */
  int64_t ckpt_every;     /* --checkpoint-every: save every N steps; 0 = only at the end */
  int quiet;              /* --quiet: no per-step lines on stdout */
  int64_t log_every;      /* --log-every: print every N-th step, the first and the last (>= 1) */
  int trace_per_rank;     /* --trace-per-rank: each rank writes its own trace file */
  int restart_steps;      /* --restart-steps: count from step 0 despite the checkpoint's step */
  int help;               /* --help: print usage and exit 0 */
  const char *lr_schedule; /* --lr-schedule: borrowed name, parsed into loop.schedule */
  prt_loop loop;          /* schedule, clipping, AdamW overrides, evaluation (schedule.c) */
  int comm;               /* --comm: a prt_comm_choice; PRT_COMM_AUTO when not given */
  const char *ckpt_dir;   /* --checkpoint-dir: ring of periodic checkpoints, borrowed; NULL = none */
  int64_t keep_ckpts;     /* --keep-checkpoints: ring files kept (>= 1, default 3) */
  const prt_st_dtype *save_dtype; /* --save-dtype: --save-checkpoint's parameters (F32) */
  const char *data_format_name; /* --data-format, --comm and --save-dtype as given, borrowed */
  const char *comm_name;        /* (NULL when absent): parsed into data_format, comm and */
  const char *save_dtype_name;  /* save_dtype once every flag is read */
} prt_opts;
/* Reads argv into *o (defaults first; strings borrow from argv). Only parses: no file is
 * touched, nothing is printed, nothing exits; a bad command line fills st (code 2) naming the
 * flag and returns non-zero. Cross-flag rules that need the plan are checked later. */
int prt_parse_args(int argc, char **argv, prt_opts *o, prt_status *st);

#endif
