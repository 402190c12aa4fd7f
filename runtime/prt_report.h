/* Progress and metrics (report.c): the per-step line, the --metrics records and the memory
 * summary. */
#ifndef PIPER_PRT_REPORT_H
#define PIPER_PRT_REPORT_H

#include <stdio.h>

#include "prt_ctx.h"

/* One training step as reported: the stdout line (prt_progress_line) and the --metrics
 * "train" record (prt_metrics_train). Rank 0 fills it after the step's loss all-reduce. */
typedef struct prt_step_record {
  int64_t step;        /* 0-based step index (metrics "step"; stdout shows step + 1) */
  int64_t total;       /* the step count the run ends at: first step + --steps (S in "s/S") */
  double loss;         /* mean loss over the global batch, before this step's update */
  double lr;           /* learning rate this step's update used; NaN = not known, not shown */
  double grad_norm;    /* global L2 norm of the gradient; NaN = not known, not shown */
  double step_ms;      /* wall milliseconds of the step, its loss all-reduce included */
  double tokens_per_s; /* global batch x T / step time */
  double eta_s;        /* seconds left: remaining steps x mean step time so far; NaN = ? */
  int64_t page_faults; /* this rank's minor page faults during the step; -1 = not known */
} prt_step_record;

/* Writes r as one {"kind": "train", ...} line and flushes; returns fflush's result. */
int prt_metrics_train(FILE *f, const prt_ctx *ctx, const prt_step_record *r);
/* Prints "step s/S | loss L [| lr x] [| grad norm g] | ms | tok/s | eta m:ss" to out. */
void prt_progress_line(FILE *out, const prt_step_record *r);
/* "m:ss" below an hour, "h:mm:ss" from one on; "?" for NaN or a negative time. Returns buf. */
char *prt_format_eta(double seconds, char *buf, size_t cap);
/* 1 if step's line is printed under --log-every `every`: the first and last step of the run
 * always, and every step whose 1-based number (step + 1) is a multiple of `every`. */
int prt_progress_due(int64_t step, int64_t first, int64_t last, int64_t every);
/* Collective: gathers every rank's memory; rank 0 writes {"kind": "summary", "ranks": [...]}
 * to metrics (if not NULL; a write failure fills st naming metrics_path) and prints a table
 * unless quiet. */
void prt_report_memory(prt_ctx *ctx, FILE *metrics, const char *metrics_path, int quiet,
                       prt_status *st);

#endif
