/* What a run reports while it trains: the per-step stdout line, the --metrics JSON lines and
 * the memory summary at the end.
 *
 * Metrics (docs/metrics-and-traces.md): one JSON object per line, "kind" first:
 *   {"kind": "train", "step": s, "loss": L, ["lr": x,] ["grad_norm": g,] ["page_faults": n,]
 *    "step_ms": ms,
 *    "tokens_per_s": t, "mem": {"params": B, "optim": B, "arena": B}}   one per step
 *   {"kind": "eval", ...}                                                 reserved (--eval-data)
 *   {"kind": "summary", "ranks": [{"rank": k, "params": B, ...}, ...]}    once, at the end
 * A field whose value the run does not know (lr and grad_norm are NaN in the record) is left
 * out, never written as a guess. The stdout line shows the same record:
 *   step 3/20 | loss 5.123456 | lr 1.00e-03 | grad norm 0.8123 | 12.3 ms | 5321 tok/s | eta 0:01
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_report.h"

int prt_metrics_train(FILE *f, const prt_ctx *ctx, const prt_step_record *r) {
  fprintf(f, "{\"kind\": \"train\", \"step\": %lld, ", (long long)r->step);
  if (isfinite(r->loss)) fprintf(f, "\"loss\": %.9g, ", r->loss);
  else fprintf(f, "\"loss\": null, ");
  if (isfinite(r->lr)) fprintf(f, "\"lr\": %.9g, ", r->lr);
  if (isfinite(r->grad_norm)) fprintf(f, "\"grad_norm\": %.9g, ", r->grad_norm);
  if (r->page_faults >= 0) fprintf(f, "\"page_faults\": %lld, ", (long long)r->page_faults);
  fprintf(f, "\"step_ms\": %.6g, \"tokens_per_s\": %.6g, \"mem\": {\"params\": %lld, "
          "\"optim\": %lld, \"arena\": %lld}}\n", r->step_ms, r->tokens_per_s,
          (long long)prt_ctx_bytes(ctx, PRT_PARAM), (long long)prt_ctx_bytes(ctx, PRT_OPTIM),
          (long long)ctx->arena_bytes);
  return fflush(f);
}

char *prt_format_eta(double seconds, char *buf, size_t cap) {
  if (!(seconds >= 0) || seconds > 1e12) { /* NaN, negative or absurd: unknown */
    snprintf(buf, cap, "?");
    return buf;
  }
  long long s = (long long)(seconds + 0.5);
  if (s >= 3600)
    snprintf(buf, cap, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  else
    snprintf(buf, cap, "%lld:%02lld", s / 60, s % 60);
  return buf;
}

void prt_progress_line(FILE *out, const prt_step_record *r) {
  int width = snprintf(NULL, 0, "%lld", (long long)r->total);
  char eta[48];
  fprintf(out, "step %*lld/%lld | loss %.6f", width, (long long)(r->step + 1),
          (long long)r->total, r->loss);
  if (isfinite(r->lr)) fprintf(out, " | lr %.2e", r->lr);
  if (isfinite(r->grad_norm)) fprintf(out, " | grad norm %.4g", r->grad_norm);
  fprintf(out, " | %.1f ms | %.0f tok/s | eta %s\n", r->step_ms, r->tokens_per_s,
          prt_format_eta(r->eta_s, eta, sizeof eta));
  fflush(out);
}

int prt_progress_due(int64_t step, int64_t first, int64_t last, int64_t every) {
  return step == first || step == last || every <= 1 || (step + 1) % every == 0;
}

/* Peak resident set (VmHWM) of this process in bytes; 0 if /proc does not say. */
static int64_t prt_peak_rss(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
  fclose(f);
  return (int64_t)kb * 1024;
}

void prt_report_memory(prt_ctx *ctx, FILE *metrics, const char *metrics_path, int quiet,
                       prt_status *st) {
  enum { K = 6 }; /* params, optim, arena, activations, grads, peak rss */
  int64_t mine[K] = {prt_ctx_bytes(ctx, PRT_PARAM), prt_ctx_bytes(ctx, PRT_OPTIM),
                     ctx->arena_bytes, ctx->arena_activations, ctx->arena_gradients,
                     prt_peak_rss()};
  int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
  int64_t *all = prt_comm_allgatherv(mine, sizeof mine, counts);
  free(counts);
  if (ctx->rank == 0 && metrics) {
    fprintf(metrics, "{\"kind\": \"summary\", \"ranks\": [");
    for (int64_t r = 0; r < ctx->world; r++) {
      const int64_t *m = all + K * r;
      fprintf(metrics, "%s{\"rank\": %lld, \"params\": %lld, \"optim\": %lld, \"arena\": %lld, ",
              r ? ", " : "", (long long)r, (long long)m[0], (long long)m[1], (long long)m[2]);
      if (m[3] >= 0)
        fprintf(metrics, "\"activations\": %lld, \"grads\": %lld, ", (long long)m[3],
                (long long)m[4]);
      fprintf(metrics, "\"peak_rss\": %lld}", (long long)m[5]);
    }
    fprintf(metrics, "]}\n");
    if (fflush(metrics) != 0)
      prt_fail(st, 1, "cannot write metrics file: %s: %s; check the disk has space",
               metrics_path, strerror(errno));
  }
  if (ctx->rank == 0 && !quiet) {
    /* the arena holds activations and gradients; their peaks come from the compiler's plan */
    printf("memory (MB)    params     optim     arena  (activ.    grads)  peak rss\n");
    for (int64_t r = 0; r < ctx->world; r++) {
      const int64_t *m = all + K * r;
      printf("  rank %-4lld %9.2f %9.2f %9.2f %9.2f %8.2f %9.1f\n", (long long)r, m[0] / 1e6,
             m[1] / 1e6, m[2] / 1e6, m[3] >= 0 ? m[3] / 1e6 : 0.0, m[4] >= 0 ? m[4] / 1e6 : 0.0,
             m[5] / 1e6);
    }
    fflush(stdout);
  }
  free(all);
}
