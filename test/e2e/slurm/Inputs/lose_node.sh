#!/usr/bin/env bash
# lose_node.sh SCRIPT HOLD NODE: inside `slurm.sh with`, submits SCRIPT, waits until a rank of
# its run has stopped itself and written its pid to the file HOLD (PIPER_FAULT=stop@...,
# once=HOLD: the run holds still, so the node is lost in the middle of it however fast it is),
# loses NODE (slurm.sh kill-node: its slurmd killed, its cable pulled), and waits for the job
# to end and for Slurm to mark NODE down. Prints the job's final state ("job 1 COMPLETED 0:0
# restarts 0") and NODE's ("node2 down*").
set -u
. "$(dirname "$0")/lib.sh"
script=$1 hold=$2 node=$3
id=$(submit "$script") || exit 1
wait_for '[ -s "$hold" ]' || exit 1
"$PIPER_SLURM" kill-node "$node"
job_final "$id"
wait_for '[ "$(sinfo -h -n "$node" -o %T)" = "down*" ]'
echo "$node $(sinfo -h -n "$node" -o %T)"
