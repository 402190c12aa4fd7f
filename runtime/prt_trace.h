/* The trace (trace.c): compute spans and transfers on a clock aligned over the ranks, written
 * as a Chrome/Perfetto trace (--trace). */
#ifndef PIPER_PRT_TRACE_H
#define PIPER_PRT_TRACE_H

#include "prt_ctx.h"

#define PRT_TRACE_MAX_EVENTS (1 << 20) /* per rank; later events are counted, not kept */

/* Collective: aligns this rank's trace clock with rank 0's (min-RTT ping-pong, see trace.c),
 * then starts recording spans. */
void prt_trace_start(prt_ctx *ctx);
/* Microseconds on the trace clock: rank 0's monotonic clock since its trace started. */
double prt_trace_now(const prt_ctx *ctx);
/* Records a complete compute span `name` (borrowed) on lane `stream`. */
void prt_trace_event(prt_ctx *ctx, const char *name, int64_t stream, double t0, double t1);
/* Records transfer `op` from its issue t0 to t1, when the runtime first saw it complete; its
 * own prt_wait ran from wait0 to wait1. */
void prt_trace_transfer(prt_ctx *ctx, const prt_comm_op *op, double t0, double t1,
                        double wait0, double wait1);
/* Collective unless per_rank: rank 0 writes every rank's events to `path`, one process per
 * rank. per_rank (local): each rank writes path with ".rank<k>" before its extension. */
int prt_trace_write(const prt_ctx *ctx, const char *path, int per_rank, prt_status *st);
/* "trace.json" -> "trace.rank3.json", owned (allocated: no length limit, no truncation). */
char *prt_trace_path(const char *path, int64_t rank);
void prt_trace_free(prt_trace *t);

#endif
