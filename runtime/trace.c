/* --trace: one Chrome trace (Perfetto opens it) of every rank, written by rank 0 at the end
 * of the run; with --trace-per-rank each rank writes its own file instead.
 *
 *   {"traceEvents": [metadata..., {"name": ..., "cat": "compute" | "comm", "ph": "X",
 *                                  "ts": us, "dur": us, "pid": rank, "tid": stream, ...}, ...],
 *    "displayTimeUnit": "ms",
 *    "otherData": {"world": D, "truncated": bool, "max_events": N, "clock_sync": "...",
 *                  "ranks": [{"rank": k, "events": n, "dropped": m, "truncated": bool,
 *                             "clock_offset_us": x, "clock_rtt_us": r}, ...]}}
 *
 * Processes: one per rank (pid = rank, named "rank k"); threads: one per stream (tid), named
 * by prt_declare_stream ("compute" for an unnamed stream 0, "stream k" otherwise).
 *
 * One clock: every rank's ts is rank 0's CLOCK_MONOTONIC minus rank 0's time at start-up, in
 * microseconds. At prt_trace_start each rank k > 0 pings rank 0 PRT_SYNC_ROUNDS times (its
 * clock t0, rank 0's reply r, its clock t1) and keeps the round with the smallest round trip:
 * offset = r - (t0 + t1) / 2, which is off by at most that round trip / 2 (clock_rtt_us / 2),
 * whatever the ranks' monotonic clocks count from (another host's starts elsewhere). The
 * smallest of several round trips leaves out rounds where a rank was descheduled or rank 0 was
 * busy with another rank; a barrier alone would leave each rank's origin off by however late
 * it left the barrier, with no bound to report.
 *
 * Spans: compute spans come from prt_span_begin/end (nested per stream); a transfer is one
 * span on its stream from issue to the moment the runtime first saw it complete (tested by
 * its own prt_wait, or by another prt_wait, which polls every transfer in flight while
 * tracing), named "send->3 (4096 B)", "recv<-1 (...)", "all_reduce g0 (...)",
 * "reduce_scatter g1 (...)", "all_gather g1 (...)", "all_to_all g1 (...)" (bytes: the whole buffer, for collectives
 * the full side), with args {"bytes", "wait_begin_us", "wait_end_us"}: its own prt_wait.
 * Memory is bounded: at most PRT_TRACE_MAX_EVENTS events (64 bytes each) are kept per rank;
 * later ones are counted in "dropped" and "truncated" says so.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "piper/base/json.h"
#include "prt_backend.h"
#include "prt_ctx.h"
#include "prt_trace.h"

#define PRT_SPAN_DEPTH 64  /* open spans per stream */
#define PRT_SYNC_ROUNDS 16 /* clock ping-pongs per rank with rank 0; the fastest one counts */

/* One complete event. */
typedef struct prt_trace_ev {
  const char *name; /* borrowed constant of the compiled plan; NULL: a transfer */
  double ts;        /* start, microseconds since the trace started */
  double dur;       /* microseconds */
  double wait0;     /* transfer: its prt_wait began, microseconds */
  double wait1;     /* transfer: its prt_wait returned, microseconds */
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
  double origin;           /* this rank's CLOCK_MONOTONIC microseconds at rank 0's origin */
  double offset;           /* rank 0's clock minus this rank's, microseconds (estimated) */
  double rtt;              /* round trip of the ping that estimated offset: the error of the
                              offset is at most rtt / 2; 0 on rank 0 */
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

/* Sets t->origin, offset and rtt (see the file comment); collective. */
static void prt_trace_sync(const prt_ctx *ctx, prt_trace *t) {
  prt_comm_barrier();
  if (ctx->rank == 0) {
    double origin = prt_mono_us();
    for (int64_t r = 1; r < ctx->world; r++)
      for (int k = 0; k < PRT_SYNC_ROUNDS; k++) {
        double ping;
        prt_comm_recv_bytes(&ping, sizeof ping, r);
        double reply[2] = {prt_mono_us(), origin};
        prt_comm_send_bytes(reply, sizeof reply, r);
      }
    t->origin = origin;
  } else {
    double origin0 = 0;
    t->rtt = INFINITY;
    for (int k = 0; k < PRT_SYNC_ROUNDS; k++) {
      double t0 = prt_mono_us(), reply[2];
      prt_comm_send_bytes(&t0, sizeof t0, 0);
      prt_comm_recv_bytes(reply, sizeof reply, 0);
      double t1 = prt_mono_us();
      if (t1 - t0 < t->rtt) {
        t->rtt = t1 - t0;
        t->offset = reply[0] - 0.5 * (t0 + t1);
      }
      origin0 = reply[1];
    }
    t->origin = origin0 - t->offset; /* rank 0's origin, read on this rank's clock */
  }
  prt_comm_barrier();
}

void prt_trace_start(prt_ctx *ctx) {
  prt_trace *t = prt_xmalloc(sizeof *t, "the trace");
  memset(t, 0, sizeof *t);
  prt_trace_sync(ctx, t);
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

/* Appends an event and returns it, or NULL once the trace is full (then it is counted). */
static prt_trace_ev *prt_trace_push(prt_ctx *ctx, int64_t stream) {
  prt_trace *t = ctx->trace;
  prt_trace_lane(t, stream);
  if (t->n == t->cap) {
    if (t->cap == PRT_TRACE_MAX_EVENTS) {
      t->dropped++;
      return NULL;
    }
    int64_t cap = t->cap ? 2 * t->cap : 4096;
    if (cap > PRT_TRACE_MAX_EVENTS) cap = PRT_TRACE_MAX_EVENTS;
    prt_trace_ev *ev = realloc(t->ev, (size_t)cap * sizeof *ev);
    if (!ev) prt_fatal("out of memory growing the trace to %lld events; trace fewer steps",
                       (long long)cap);
    t->ev = ev;
    t->cap = cap;
  }
  return &t->ev[t->n++];
}

void prt_trace_event(prt_ctx *ctx, const char *name, int64_t stream, double t0, double t1) {
  prt_trace_ev *e = prt_trace_push(ctx, stream);
  if (e) *e = (prt_trace_ev){name, t0, t1 - t0, 0, 0, 0, (int32_t)stream, -1, -1};
}

void prt_trace_transfer(prt_ctx *ctx, const prt_comm_op *op, double t0, double t1,
                        double wait0, double wait1) {
  int64_t stream = op->stream < 0 ? 0 : op->stream;
  prt_trace_ev *e = prt_trace_push(ctx, stream);
  if (!e) return;
  int64_t whole = op->n;
  if (op->kind == PRT_OP_REDUCE_SCATTER || op->kind == PRT_OP_ALL_GATHER)
    whole *= ctx->groups[op->group].n;
  /* 4-byte words, or 2-byte bf16 values for a bf16 sum (--grad-reduce bf16) */
  *e = (prt_trace_ev){NULL, t0, t1 - t0, wait0, wait1, (op->bf16 ? 2 : 4) * whole,
                      (int32_t)stream, op->kind,
                      (int32_t)(op->kind <= PRT_OP_RECV ? op->peer : op->group)};
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
  prt_trace_event(ctx, s.name, stream, s.t0, prt_trace_now(ctx));
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

/* A JSON string literal for s (the base library's escaper). */
static void prt_json_string(FILE *f, const char *s) { pb_json_quote(s, pb_json_sink_file, f); }

/* This rank's events as JSON array elements, each after ",\n" (the very first without the
 * comma when `first`): process and lane names, then every span. */
static void prt_trace_events(FILE *f, const prt_ctx *ctx, int first) {
  static const char *const op_name[] = {"send", "recv", "all_reduce", "reduce_scatter",
                                        "all_gather", "all_to_all"};
  const prt_trace *t = ctx->trace;
  long long pid = (long long)ctx->rank;
  fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": 0, "
          "\"args\": {\"name\": \"rank %lld\"}}", first ? "" : ",\n", pid, pid);
  fprintf(f, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %lld, "
          "\"tid\": 0, \"args\": {\"sort_index\": %lld}}", pid, pid);
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
    fprintf(f, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %lld, \"tid\": %d",
            e->ts, e->dur, pid, e->stream);
    if (!e->name)
      fprintf(f, ", \"args\": {\"bytes\": %lld, \"wait_begin_us\": %.3f, "
              "\"wait_end_us\": %.3f}", (long long)e->bytes, e->wait0, e->wait1);
    fputc('}', f);
  }
}

/* What otherData says about one rank. */
typedef struct prt_trace_stats {
  int64_t rank, events, dropped; /* events kept and dropped */
  double offset, rtt;            /* the clock sync's estimate and its round trip, us */
} prt_trace_stats;

static void prt_trace_stats_json(FILE *f, const prt_trace_stats *s) {
  fprintf(f, "{\"rank\": %lld, \"events\": %lld, \"dropped\": %lld, \"truncated\": %s, "
          "\"clock_offset_us\": %.3f, \"clock_rtt_us\": %.3f}", (long long)s->rank,
          (long long)s->events, (long long)s->dropped, s->dropped ? "true" : "false",
          s->offset, s->rtt);
}

/* Closes the file's JSON: otherData with the ranks' stats. */
static void prt_trace_footer(FILE *f, const prt_ctx *ctx, const prt_trace_stats *s, int64_t n) {
  int truncated = 0;
  for (int64_t k = 0; k < n; k++) truncated |= s[k].dropped > 0;
  fprintf(f, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {");
  if (n == 1) fprintf(f, "\"rank\": %lld, ", (long long)s[0].rank);
  fprintf(f, "\"world\": %lld, \"truncated\": %s, \"max_events\": %d, \"clock_sync\": "
          "\"min-RTT ping-pong with rank 0, %d rounds; ts is rank 0's clock\", \"ranks\": [",
          (long long)ctx->world, truncated ? "true" : "false", PRT_TRACE_MAX_EVENTS,
          PRT_SYNC_ROUNDS);
  for (int64_t k = 0; k < n; k++) {
    if (k) fprintf(f, ", ");
    prt_trace_stats_json(f, &s[k]);
  }
  fprintf(f, "]}}\n");
}

/* Opens `file` for writing, or fills st. */
static FILE *prt_trace_open(const char *file, prt_status *st) {
  FILE *f = fopen(file, "w");
  if (!f)
    prt_fail(st, 1, "cannot write trace file: %s: %s; check the directory exists and is "
             "writable", file, strerror(errno));
  return f;
}

static void prt_trace_close(FILE *f, const char *file, prt_status *st) {
  int bad = ferror(f);
  if (fclose(f) != 0 || bad)
    prt_fail(st, 1, "cannot write trace file: %s: %s; check the disk has space", file,
             strerror(errno));
}

int prt_trace_write(const prt_ctx *ctx, const char *path, int per_rank, prt_status *st) {
  const prt_trace *t = ctx->trace;
  prt_trace_stats mine = {ctx->rank, t->n, t->dropped, t->offset, t->rtt};
  if (per_rank) { /* local */
    char *file = prt_trace_path(path, ctx->rank);
    FILE *f = prt_trace_open(file, st);
    if (f) {
      fprintf(f, "{\"traceEvents\": [\n");
      prt_trace_events(f, ctx, 1);
      prt_trace_footer(f, ctx, &mine, 1);
      prt_trace_close(f, file, st);
    }
    free(file);
    return st->code;
  }
  /* merged: every rank's stats to every rank (small), events to rank 0 one rank at a time */
  int64_t *counts = prt_xmalloc((size_t)ctx->world * sizeof *counts, "gather counts");
  prt_trace_stats *all = prt_comm_allgatherv(&mine, sizeof mine, counts);
  free(counts);
  if (ctx->rank != 0) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m) prt_fatal("out of memory formatting the trace (rank %lld)", (long long)ctx->rank);
    prt_trace_events(m, ctx, 0);
    if (fclose(m) != 0) prt_fatal("out of memory formatting the trace (rank %lld)",
                                  (long long)ctx->rank);
    int64_t n = (int64_t)len;
    prt_comm_send_bytes(&n, sizeof n, 0);
    prt_comm_send_bytes(buf, n, 0);
    free(buf);
    free(all);
    return st->code;
  }
  FILE *f = prt_trace_open(path, st); /* on failure rank 0 still takes every rank's events */
  if (f) {
    fprintf(f, "{\"traceEvents\": [\n");
    prt_trace_events(f, ctx, 1);
  }
  for (int64_t r = 1; r < ctx->world; r++) {
    int64_t n = 0;
    prt_comm_recv_bytes(&n, sizeof n, r);
    char *buf = prt_xmalloc((size_t)(n ? n : 1), "a rank's trace");
    prt_comm_recv_bytes(buf, n, r);
    if (f) fwrite(buf, 1, (size_t)n, f);
    free(buf);
  }
  if (f) {
    prt_trace_footer(f, ctx, all, ctx->world);
    prt_trace_close(f, path, st);
  }
  free(all);
  return st->code;
}
