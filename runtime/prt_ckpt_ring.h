/* Periodic checkpoints for long runs (checkpoint_ring.c) and the fault-injection hook the
 * fault suite drives (fault_inject.c). Kept beside prt_internal.h so that the rest of the
 * runtime does not change when these do.
 *
 * A periodic checkpoint (--checkpoint-every N) costs the training loop one assembly of the
 * full tensors on rank 0 and one copy into host memory of those it borrows from live storage
 * (the ones the assembly built, from other ranks' shards or a device, are taken over as they
 * are); PIPER_CKPT_STATS=1 makes rank 0 print what that cost (bench/bench_faults.py); a
 * background thread on rank 0
 * then writes that snapshot (temporary file, fsync, atomic rename: prt_safetensors_write) while
 * the next steps run. With --checkpoint-dir DIR the files form a ring, DIR/step-<K>.safetensors
 * (K the completed steps, at least 6 digits), of which the newest --keep-checkpoints are kept;
 * without it the snapshot replaces --save-checkpoint as before. At most one write is in
 * flight: the next checkpoint (or the end of the run) waits for it, so memory stays at one
 * snapshot and a failed write is reported at the next agreement point. A process killed while
 * the thread writes leaves the previous checkpoint as it was (the temporary is unnamed or
 * removed, the rename is the commit).
 */
#ifndef PRT_CKPT_RING_H
#define PRT_CKPT_RING_H

#include "prt_ctx.h"

/* The writer of one run's periodic checkpoints; opaque. */
typedef struct prt_ckpt_writer prt_ckpt_writer;

/* Local. A writer for files in `dir` (NULL: every snapshot goes to `path`, the
 * --save-checkpoint file) keeping the newest `keep` (>= 1) of them. Rank 0 checks that `dir`
 * is a writable folder, creating it (one level) when it is missing; a problem fills st naming
 * --checkpoint-dir (callers prt_agree after). Returns NULL only with st set. */
prt_ckpt_writer *prt_ckpt_writer_create(const prt_ctx *ctx, const char *dir, const char *path,
                                        int64_t keep, prt_status *st);
/* Collective. Waits for the previous write (rank 0), assembles every parameter and optimizer
 * state tensor on rank 0, copies them into the writer's host snapshot and starts writing it
 * in the background as the checkpoint of `step` completed steps. A previous write that
 * failed fails st on rank 0 (callers prt_agree after). */
int prt_ckpt_periodic(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st);
/* Collective. The run's last checkpoint into the ring (`dir` given), written before it
 * returns, after the write in flight. No-op without a ring. */
int prt_ckpt_ring_final(prt_ckpt_writer *w, prt_ctx *ctx, int64_t step, prt_status *st);
/* Local (rank 0 does the waiting). Waits for the write in flight; its failure fills st
 * unless st already holds an error. */
int prt_ckpt_writer_wait(prt_ckpt_writer *w, prt_status *st);
/* Waits for the write in flight (its failure is dropped: call prt_ckpt_writer_wait first to
 * see it) and frees the writer. NULL is fine. */
void prt_ckpt_writer_destroy(prt_ckpt_writer *w);
/* The ring's file names are the base library's (piper/base/ring.h), shared with piper-run. */

/* ---- fault injection (fault_inject.c) ---- */

/* Where a fault may be injected. */
typedef enum {
  PRT_FAULT_AT_STEP = 0, /* in the step loop, after the plan's step, before the loss agreement */
  PRT_FAULT_AT_SAVE = 1, /* in the background writer, before the checkpoint is committed */
  PRT_FAULT_AT_ALL_TO_ALL = 2, /* an all-to-all issued in the step (drop only) */
} prt_fault_site;
/* The fault kinds that return instead of signalling: the transfer delivers nothing (drop),
 * the rank holds until the run is asked to stop (hold). */
#define PRT_FAULT_DROP (-4)
#define PRT_FAULT_HOLD (-5)
/* Reads PIPER_FAULT once (see fault_inject.c for the syntax) and, when this rank and step
 * match it, injects the fault: SIGKILL or SIGSTOP to this process, or exit(3); a drop or a
 * hold returns 1, and the caller loses the transfer or holds (else 0). Prints one line
 * "piper: fault injected: ..." first, with the wall-clock time, and appends the same as a
 * "fault" line to the metrics file (prt_fault_events_to), so a supervisor can time the
 * recovery. A malformed PIPER_FAULT ends the process with a message naming it. */
int prt_fault_point(prt_fault_site site, int64_t rank, int64_t step);
/* The run's --metrics file (NULL: none), where an injected fault is also said as a "fault"
 * line, appended (a supervisor reads it there: docs/metrics-and-traces.md). Only a file that
 * exists is appended to: rank 0 creates it, and a rank on a host that does not see it (its
 * own /tmp) leaves no stray file there. */
void prt_fault_events_to(const char *metrics_path);
/* The job's ranks, for PIPER_FAULT's ranks=W (prt_main sets it once the backend runs). */
void prt_fault_set_world(int64_t ranks);

#endif
