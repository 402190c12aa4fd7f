/* --trace: a Chrome trace (Perfetto opens it) per rank, written at the end of the run.
 *
 *   {"traceEvents": [metadata..., {"name": ..., "ph": "X", "ts": us, "dur": us, "pid": rank,
 *                                  "tid": stream, ...}, ...],
 *    "displayTimeUnit": "ms", "otherData": {"rank": k, "world": D, "events": n,
 *                                           "dropped": m, "truncated": bool, ...}}
 *
 * Compute spans come from prt_span_begin/end (nested per stream); a transfer is one span on
 * its stream from issue to the return of its prt_wait, named "send->3 (4096 B)",
 * "recv<-1 (...)", "all_reduce g0 (...)", "reduce_scatter g1 (...)", "all_gather g1 (...)"
 * (bytes: the whole buffer, for collectives the full side). Lanes get "thread_name" metadata
 * from prt_declare_stream ("compute" for an unnamed stream 0, "stream k" otherwise). Memory
 * is bounded: at most PRT_TRACE_MAX_EVENTS events (48 bytes each) are kept per rank; later
 * ones are counted in "dropped" and "truncated" says so.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "prt_internal.h"

#define PRT_SPAN_DEPTH 64 /* open spans per stream */

/* One complete event. */
typedef struct prt_trace_ev {
  const char *name; /* borrowed constant of the compiled plan; NULL: a transfer */
  double ts;        /* start, microseconds since the trace started */
  double dur;       /* microseconds */
  int64_t bytes;    /* transfer: bytes moved (see the file comment) */
  int32_t stream;   /* lane */
  int32_t kind;     /* transfer: prt_op_kind */
  int32_t who;      /* transfer: peer (send/recv) or group id */
} prt_trace_ev;

/* A span begun and not yet ended. */
typedef struct prt_open_span {
  const char *name; /* borrowed */
  double t0;        /* microseconds */
} prt_open_span;

struct prt_trace {
  double origin;           /* CLOCK_MONOTONIC microseconds at prt_trace_start */
  prt_trace_ev *ev;        /* owned (cap), n used */
  int64_t n, cap;          /* events kept, allocated */
  int64_t dropped;         /* events past PRT_TRACE_MAX_EVENTS */
  prt_open_span (*open)[PRT_SPAN_DEPTH]; /* owned (nlanes) stacks */
  int64_t *depth;          /* owned (nlanes) open spans per stream */
  int64_t nlanes;          /* 1 + the largest stream seen */
};

static double prt_mono_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

void prt_trace_start(prt_ctx *ctx) {
  prt_comm_barrier();
  prt_trace *t = prt_xmalloc(sizeof *t, "the trace");
  memset(t, 0, sizeof *t);
  t->origin = prt_mono_us();
  ctx->trace = t;
}

double prt_trace_now(const prt_ctx *ctx) { return prt_mono_us() - ctx->trace->origin; }

void prt_trace_free(prt_trace *t) {
  if (!t) return;
  free(t->ev);
  free(t->open);
  free(t->depth);
  free(t);
}

/* Makes lanes 0..stream exist. */
static void prt_trace_lane(prt_trace *t, int64_t stream) {
  if (stream < t->nlanes) return;
  int64_t n = stream + 1;
  void *o = realloc(t->open, (size_t)n * sizeof *t->open);
  int64_t *d = realloc(t->depth, (size_t)n * sizeof *d);
  if (!o || !d) prt_fatal("out of memory adding trace lane %lld", (long long)stream);
  t->open = o;
  t->depth = d;
  memset(d + t->nlanes, 0, (size_t)(n - t->nlanes) * sizeof *d);
  t->nlanes = n;
}

void prt_trace_event(prt_ctx *ctx, const char *name, const prt_comm_op *op, int64_t stream,
                     double t0, double t1) {
  prt_trace *t = ctx->trace;
  prt_trace_lane(t, stream);
  if (t->n == t->cap) {
    if (t->cap == PRT_TRACE_MAX_EVENTS) {
      t->dropped++;
      return;
    }
    int64_t cap = t->cap ? 2 * t->cap : 4096;
    if (cap > PRT_TRACE_MAX_EVENTS) cap = PRT_TRACE_MAX_EVENTS;
    prt_trace_ev *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
    if (!ev) prt_fatal("out of memory growing the trace to %lld events; trace fewer steps",
                       (long long)cap);
    t->ev = ev;
    t->cap = cap;
  }
  prt_trace_ev *e = &t->ev[t->n++];
  *e = (prt_trace_ev){name, t0, t1 - t0, 0, (int32_t)stream, -1, -1};
  if (name) return;
  e->kind = op->kind;
  e->who = (int32_t)(op->kind <= PRT_OP_RECV ? op->peer : op->group);
  int64_t whole = op->n;
  if (op->kind == PRT_OP_REDUCE_SCATTER || op->kind == PRT_OP_ALL_GATHER)
    whole *= ctx->groups[op->group].n;
  e->bytes = 4 * whole;
}

/* ---- spans (the ABI) ---- */

void prt_span_begin(prt_ctx *ctx, const char *name, int64_t stream) {
  prt_trace *t = ctx->trace;
  if (!t) return;
  if (stream < 0 || stream >= 1024 || !name)
    prt_fatal("prt_span_begin('%s') on stream %lld, expected a name and a stream in 0..1023: "
              "prt_span_begin; this is a bug in the compiled plan", name ? name : "(null)",
              (long long)stream);
  prt_trace_lane(t, stream);
  if (t->depth[stream] == PRT_SPAN_DEPTH)
    prt_fatal("more than %d spans open on stream %lld (a prt_span_end missing?): "
              "prt_span_begin('%s'); this is a bug in the compiled plan", PRT_SPAN_DEPTH,
              (long long)stream, name);
  t->open[stream][t->depth[stream]++] = (prt_open_span){name, prt_trace_now(ctx)};
}

void prt_span_end(prt_ctx *ctx, int64_t stream) {
  prt_trace *t = ctx->trace;
  if (!t) return;
  if (stream < 0 || stream >= t->nlanes || t->depth[stream] == 0)
    prt_fatal("prt_span_end on stream %lld, which has no open span: prt_span_end; this is a "
              "bug in the compiled plan", (long long)stream);
  prt_open_span s = t->open[stream][--t->depth[stream]];
  prt_trace_event(ctx, s.name, NULL, stream, s.t0, prt_trace_now(ctx));
}

/* ---- writing ---- */

char *prt_trace_path(const char *path, int64_t rank) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  const char *dot = strrchr(base, '.');
  if (!dot || dot == base) dot = path + strlen(path); /* no extension (or a dot file) */
  size_t n = strlen(path) + 32;
  char *out = prt_xmalloc(n, "a trace file name");
  snprintf(out, n, "%.*s.rank%lld%s", (int)(dot - path), path, (long long)rank, dot);
  return out;
}

static void prt_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

int prt_trace_write(const prt_ctx *ctx, const char *path, prt_status *st) {
  static const char *const op_name[] = {"send", "recv", "all_reduce", "reduce_scatter",
                                        "all_gather"};
  const prt_trace *t = ctx->trace;
  char *file = prt_trace_path(path, ctx->rank);
  FILE *f = fopen(file, "w");
  if (!f) {
    prt_fail(st, 1, "cannot write trace file: %s: %s; check the directory exists and "
             "is writable", file, strerror(errno));
    free(file);
    return st->code;
  }
  long long pid = (long long)ctx->rank;
  fprintf(f, "{\"traceEvents\": [\n{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, "
          "\"tid\": 0, \"args\": {\"name\": \"rank %lld\"}}", pid, pid);
  int64_t lanes = t->nlanes > ctx->nstreams ? t->nlanes : ctx->nstreams;
  if (lanes < 1) lanes = 1;
  for (int64_t k = 0; k < lanes; k++) {
    char dflt[32];
    snprintf(dflt, sizeof dflt, k == 0 ? "compute" : "stream %lld", (long long)k);
    const char *name = k < ctx->nstreams && ctx->stream_names[k] ? ctx->stream_names[k] : dflt;
    fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %lld, "
            "\"args\": {\"name\": ", pid, (long long)k);
    prt_json_string(f, name);
    fprintf(f, "}}");
  }
  for (int64_t i = 0; i < t->n; i++) {
    const prt_trace_ev *e = &t->ev[i];
    fprintf(f, ",\n{\"name\": ");
    if (e->name) {
      prt_json_string(f, e->name);
      fprintf(f, ", \"cat\": \"compute\"");
    } else {
      const char *arrow = e->kind == PRT_OP_SEND ? "->" : e->kind == PRT_OP_RECV ? "<-" : " g";
      fprintf(f, "\"%s%s%d (%lld B)\", \"cat\": \"comm\"", op_name[e->kind], arrow, e->who,
              (long long)e->bytes);
    }
    fprintf(f, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %lld, \"tid\": %d}",
            e->ts, e->dur, pid, e->stream);
  }
  fprintf(f, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"rank\": %lld, "
          "\"world\": %lld, \"events\": %lld, \"dropped\": %lld, \"truncated\": %s, "
          "\"max_events\": %d}}\n", pid, (long long)ctx->world, (long long)t->n,
          (long long)t->dropped, t->dropped ? "true" : "false", PRT_TRACE_MAX_EVENTS);
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    prt_fail(st, 1, "cannot write trace file: %s: %s; check the disk has space", file,
             strerror(errno));
  free(file);
  return st->code;
}
