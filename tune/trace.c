/* The simulated step (simulate.c's TuneTrace) as a predicted trace and as a text timeline.
 *
 * The trace is runtime/trace.c's format, so a predicted and a measured trace open side by side
 * in Perfetto (ui.perfetto.dev: open both files) and compare by name:
 *   {"traceEvents": [process_name "rank d" and thread_name per stream for every device,
 *                    {"name", "cat": "compute" | "comm", "ph": "X", "ts", "dur" (us),
 *                     "pid": device, "tid": stream}, ...],
 *    "displayTimeUnit": "ms", "otherData": {"world": N, "predicted": true, ...}}
 * with the runtime's names: a compute span is its node's label ("F PP=0 layer=1 mb=0"), a
 * transfer "send->3 (4096 B)", "recv<-1 (...)", "all_reduce g0 (...)" (its group in the
 * lowering's numbering) with args {"bytes", "wait_begin_us", "wait_end_us"}, tid the
 * lowering's stream number (0 "compute"). The predicted trace is one step from ts 0; a
 * measured one holds every step a run traced. A role's plan (role_<p>, one unit for R devices)
 * is written once per device of the role, its peers shifted (peer + k * peer_stride). */
#include <stdlib.h>
#include <string.h>

#include "piper/base/json.h"
#include "piper/piper.h"
#include "tune/tune.h"

static const char *const kindNames[] = {"send", "recv", "all_reduce", "reduce_scatter",
                                        "all_gather", "all_to_all"};

void tuneTraceFree(TuneTrace *t) {
  if (!t) return;
  for (size_t i = 0; i < t->nStreams; ++i) free(t->streams[i]);
  free(t->streams);
  free(t->ev);
  free(t->groups);
  free(t->groupStride);
  free(t->units);
  *t = (TuneTrace){0};
}

static void quote(FILE *f, const char *s) { pb_json_quote(s, pb_json_sink_file, f); }

/* Process and thread names of device `pid`, as runtime/trace.c writes them. */
static void writeNames(const TuneTrace *t, int64_t pid, bool first, FILE *f) {
  fprintf(f, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": 0, "
          "\"args\": {\"name\": \"rank %lld\"}}", first ? "" : ",\n", (long long)pid,
          (long long)pid);
  fprintf(f, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %lld, "
          "\"tid\": 0, \"args\": {\"sort_index\": %lld}}", (long long)pid, (long long)pid);
  for (size_t k = 0; k < t->nStreams; ++k) {
    fprintf(f, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %zu, "
            "\"args\": {\"name\": ", (long long)pid, k);
    quote(f, t->streams[k]);
    fprintf(f, "}}");
  }
}

/* One span of replica k's copy of its unit, on device pid. */
static void writeEvent(const TuneEvent *e, int64_t pid, int64_t k, FILE *f) {
  fprintf(f, ",\n{\"name\": ");
  if (!e->comm) {
    quote(f, e->name);
    fprintf(f, ", \"cat\": \"compute\"");
  } else if (e->kind <= 1) {
    fprintf(f, "\"%s%s%lld (%.0f B)\", \"cat\": \"comm\"", kindNames[e->kind],
            e->kind == 0 ? "->" : "<-", (long long)(e->peer + k * e->peerStride), e->bytes);
  } else {
    fprintf(f, "\"%s g%d (%.0f B)\", \"cat\": \"comm\"", kindNames[e->kind], e->group, e->bytes);
  }
  fprintf(f, ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": %lld, \"tid\": %d",
          e->start / 1e3, (e->end - e->start) / 1e3, (long long)pid, e->stream);
  if (e->comm)
    fprintf(f, ", \"args\": {\"bytes\": %.0f, \"wait_begin_us\": %.3f, \"wait_end_us\": %.3f}",
            e->bytes, (e->wait0 < 0 ? e->end : e->wait0) / 1e3,
            (e->wait1 < 0 ? e->end : e->wait1) / 1e3);
  fputc('}', f);
}

bool tuneTraceWrite(const TuneTrace *t, const TuneSimResult *r, const char *profileSource,
                    FILE *f) {
  fprintf(f, "{\"traceEvents\": [\n");
  bool first = true;
  for (int u = 0; u < t->nUnits; ++u)
    for (int64_t k = 0; k < t->units[u][2]; ++k) {
      int64_t pid = t->units[u][0] + k * t->units[u][1];
      writeNames(t, pid, first, f);
      first = false;
      for (size_t i = 0; i < t->n; ++i)
        if (t->ev[i].unit == u) writeEvent(&t->ev[i], pid, k, f);
    }
  fprintf(f, "\n],\n\"displayTimeUnit\": \"ms\",\n\"otherData\": {\"world\": %lld, "
          "\"predicted\": true, \"simulator\": \"piper-tune's (tune/simulate.c), one step\", "
          "\"step_ms\": %.6f, \"bubble\": %.4f, \"exposed_comm\": %.4f, \"profile\": ",
          (long long)t->devices, r->stepNs / 1e6, r->bubble, r->exposedComm);
  quote(f, profileSource);
  fprintf(f, "}}\n");
  return !ferror(f);
}

/* The letter a span shows in the timeline: its pass (F, B, I for BI, W for BW, U for UPD). */
static char passLetter(const char *label) {
  if (!strncmp(label, "BI", 2)) return 'I';
  if (!strncmp(label, "BW", 2)) return 'W';
  if (!strncmp(label, "UPD", 3)) return 'U';
  return label[0] ? label[0] : '?';
}

/* One row: for each column, the span of (unit, stream) covering the column's middle. */
static void printRow(const TuneTrace *t, int u, int stream, int width, char *row) {
  double col = t->stepNs / width;
  memset(row, '.', (size_t)width);
  row[width] = '\0';
  for (size_t i = 0; i < t->n; ++i) {
    const TuneEvent *e = &t->ev[i];
    if (e->unit != u || e->stream != stream || e->end <= e->start || !strcmp(e->name, "step"))
      continue;
    for (int c = (int)(e->start / col); c < width && (c + 0.5) * col < e->end; ++c)
      if ((c + 0.5) * col >= e->start) row[c] = e->comm ? '=' : passLetter(e->name);
  }
}

void tuneTimelinePrint(const TuneTrace *t, const TuneSimResult *r, int width, FILE *out) {
  char *row = malloc((size_t)width + 1);
  if (!row || t->stepNs <= 0) {
    free(row);
    fprintf(out, "(no timeline: the simulated step takes no time)\nstep %.3f ms (simulated)\n",
            r->stepNs / 1e6);
    return;
  }
  fprintf(out, "timeline: %d columns of %.3f ms; F forward, B backward, I input gradient "
          "(BI), W weight gradient (BW), U update, = a transfer in flight, . idle\n", width,
          t->stepNs / 1e6 / width);
  for (int u = 0; u < t->nUnits; ++u) {
    char who[48];
    if (t->units[u][2] > 1)
      snprintf(who, sizeof who, "role %d (devices %lld+%lldk)", u, (long long)t->units[u][0],
               (long long)t->units[u][1]);
    else
      snprintf(who, sizeof who, "device %lld", (long long)t->units[u][0]);
    for (size_t s = 0; s < t->nStreams; ++s) {
      bool any = false;
      for (size_t i = 0; i < t->n && !any; ++i)
        any = t->ev[i].unit == u && t->ev[i].stream == (int)s;
      if (!any && s > 0) continue;
      printRow(t, u, (int)s, width, row);
      fprintf(out, "%-28s %-8s |%s|\n", s == 0 ? who : "", t->streams[s], row);
    }
  }
  fprintf(out, "step %.3f ms (simulated); bubble %.1f%%, exposed communication %.1f%% of "
          "devices x step\n", r->stepNs / 1e6, 100 * r->bubble, 100 * r->exposedComm);
  free(row);
}

int tuneSimulateStrategy(const char *tool, MlirOperation training, const char *json,
                         const TuneProfile *profile, const char *what, const char *traceOut) {
  MlirOperation plans = tuneCompileOrReport(tool, training, json, what);
  if (mlirOperationIsNull(plans)) return 1;
  TuneTrace trace = {0};
  TuneSimResult r = tuneSimulateTraced(plans, profile, &trace);
  int rc = 0;
  if (r.error[0]) {
    fprintf(stderr, "%s: error: %s: the simulation is stuck: %s\n", tool, what,
            r.error);
    rc = 1;
  } else {
    tuneTimelinePrint(&trace, &r, 100, stdout);
  }
  if (!rc && traceOut) {
    PiperOutput out;
    rc = 1;
    if (piperOutputOpen(&out, traceOut))
      rc = piperOutputCommit(&out, tuneTraceWrite(&trace, &r, profile->source, out.file));
  }
  tuneTraceFree(&trace);
  mlirOperationDestroy(plans);
  return rc;
}
