/* Distributed plans (dist.c): the agreements and checks prt_main makes over the ranks, and
 * the step's loss all-reduce. The plan's own transfers are the ABI's (<piper/runtime.h>). */
#ifndef PIPER_PRT_DIST_H
#define PIPER_PRT_DIST_H

#include "prt_ctx.h"

/* Collective: makes one status of every rank's. If any rank failed, every rank returns the
 * largest code; the lowest rank that has a message keeps it, every other rank's status gets
 * that code and an empty message (nothing to print). No-op for one device. */
int prt_agree(const prt_ctx *ctx, prt_status *st);
/* The checks and agreements prt_main needs after piper_setup; collective. Agrees on the
 * global batch and T, checks tokens and losses exist over the world and that the losses'
 * rows add up to the global batch, that every rank declared the same groups, and creates
 * their communicators. *T_out gets the world's T. */
int prt_dist_setup(prt_ctx *ctx, int64_t *T_out, prt_status *st);
/* Collective: the step's loss, sum over ranks and "loss" outputs of value * rows, divided by
 * the global batch; `pending` (0 or 1, this rank failed and must stop) comes back as the
 * world's maximum in *stop, and `signal` (0, SIGINT or SIGTERM: this rank was asked to stop)
 * as the world's strongest in *signal_out (SIGTERM over SIGINT). One allreduce. */
double prt_dist_loss(prt_ctx *ctx, int pending, int signal, int *stop, int *signal_out);

#endif
