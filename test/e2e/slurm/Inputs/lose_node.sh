#!/usr/bin/env bash
# lose_node.sh SCRIPT HOLD NODE: inside `slurm.sh with`, submits SCRIPT, waits until a rank of
# its run has stopped itself and written its pid to the file HOLD (PIPER_FAULT=stop@...,
# once=HOLD: the run holds still, so the node is lost in the middle of it however fast it is),
# loses NODE (slurm.sh kill-node: its slurmd killed, its cable pulled), and waits for the job
# to end and for Slurm to mark NODE down. Prints the job's final state ("job 1 COMPLETED 0:0
# restarts 0") and NODE's ("node2 down*"). Each wait is at most 300 s.
set -u
now() { date +%s; }
wait_for() { # the shell test $1, at most 300 s
  local end=$(($(now) + 300))
  while [ "$(now)" -le $end ]; do eval "$1" && return 0; sleep 0.2; done
  echo "lose_node.sh: gave up waiting for: $1" >&2
  return 1
}
script=$1 hold=$2 node=$3
id=$(sbatch --parsable "$script") || exit 1
id=${id%%;*}
wait_for '[ -s "$hold" ]' || exit 1
"$PIPER_SLURM" kill-node "$node"
ended() {
  line=$(scontrol show job "$id" -o 2> /dev/null)
  case "$line" in *JobState=COMPLETED* | *JobState=FAILED* | *JobState=CANCELLED* | *JobState=NODE_FAIL*) return 0 ;; esac
  return 1
}
wait_for ended
echo "job $id $(echo "$line" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') $(echo "$line" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p') restarts $(echo "$line" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')"
wait_for '[ "$(sinfo -h -n "$node" -o %T)" = "down*" ]'
echo "$node $(sinfo -h -n "$node" -o %T)"
