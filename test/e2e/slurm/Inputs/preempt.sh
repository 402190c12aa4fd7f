#!/usr/bin/env bash
# preempt.sh SCRIPT OUTPUT HOLD: inside `slurm.sh with`, submits SCRIPT, whose run holds still
# once a rank has stopped itself and written its pid to the file HOLD (PIPER_FAULT=stop@...,
# once=HOLD), then sends SIGUSR1 to the job's batch shell as Slurm's --signal=B:USR1@N warning
# does (scancel --batch --signal=USR1), waits until mpirun has passed it on to the ranks (its
# "Forwarding signal" line in the job's OUTPUT file), continues the stopped rank, and waits
# for the job to end for good, its requeued run included (job_final).
set -u
. "$(dirname "$0")/lib.sh"
script=$1 output=$2 hold=$3
id=$(submit "$script") || exit 1
wait_for '[ -s "$hold" ]' || exit 1
scancel --batch --signal=USR1 "$id"
wait_for 'grep -q "Forwarding signal" "$output" 2> /dev/null' || exit 1
kill -CONT "$(cat "$hold")"
job_final "$id"
