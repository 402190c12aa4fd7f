/* libpiper_rt internals: one header per module, each opening with what the module is for, and
 * this one including them all (for the tests, which drive the runtime without a compiled plan,
 * and the GPU files). A runtime file includes the modules' headers it uses. Not part of the ABI
 * that generated code sees.
 *   prt_ctx.h          the context (prt_ctx), its tensors, groups and transfers in flight
 *   prt_kernels.h      what the CPU kernels share with the GPU launchers and the tests
 *   prt_elastic.h      elastic runs (elastic.c)
 *   prt_backend.h      the backend record and the comm backends' vtables (backend.c, comm/)
 *   prt_dist.h         the agreements over the ranks and the loss all-reduce (dist.c)
 *   prt_files.h        the files a command line names (files.c)
 *   prt_trace.h        the trace (trace.c)
 *   prt_report.h       progress lines, metrics, the memory summary (report.c)
 *   prt_catalog.h      which rank holds which piece of each tensor (catalog.c)
 *   prt_init.h         parameter init (init.c)
 *   prt_data.h         training data (data.c, default_corpus.c)
 *   prt_routing.h      MoE routing recorded and replayed (routing.c)
 *   prt_safetensors.h  safetensors files (safetensors.c)
 *   prt_checkpoint.h   checkpoints (checkpoint.c)
 *   prt_schedule.h     the learning-rate schedule, clipping, evaluation (schedule.c, eval.c)
 *   prt_main.h         the command line (main.c)
 * beside device.h (the device seam), fail.h (status and fatal stop), prt_attention.h,
 * prt_cp_layout.h and prt_ckpt_ring.h.
 *
 * Errors: a function that can fail for reasons outside the program (a file, a flag, a plan
 * that declares something inconsistent) returns an int status (0 ok) and fills a prt_status
 * with one line "<what>: <where>; <what to do>"; prt_main prints it as
 * "piper: error: <line>" and exits with the status's code. Misuse of the ABI from inside
 * piper_step (a bad tensor id) cannot be reported that way and goes through prt_fatal, which
 * also stops every other rank (MPI_Abort) so a multi-device run never hangs on one failure.
 *
 * Several processes: every function marked "collective" must be called by every rank, in the
 * same order, whatever happened locally; the others touch only this rank. A failure seen by
 * one rank reaches the others through prt_agree, at fixed points of prt_main.
 */
#ifndef PIPER_PRT_INTERNAL_H
#define PIPER_PRT_INTERNAL_H

#include "prt_backend.h"
#include "prt_catalog.h"
#include "prt_checkpoint.h"
#include "prt_ctx.h"
#include "prt_data.h"
#include "prt_dist.h"
#include "prt_elastic.h"
#include "prt_files.h"
#include "prt_init.h"
#include "prt_kernels.h"
#include "prt_main.h"
#include "prt_report.h"
#include "prt_routing.h"
#include "prt_safetensors.h"
#include "prt_schedule.h"
#include "prt_trace.h"

#endif
