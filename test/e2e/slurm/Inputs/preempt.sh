#!/usr/bin/env bash
# preempt.sh SCRIPT OUTPUT HOLD: inside `slurm.sh with`, submits SCRIPT, whose run holds still
# once a rank has stopped itself and written its pid to the file HOLD (PIPER_FAULT=stop@...,
# once=HOLD), then sends SIGUSR1 to the job's batch shell as Slurm's --signal=B:USR1@N warning
# does (scancel --batch --signal=USR1), waits until mpirun has passed it on to the ranks (its
# "Forwarding signal" line in the job's OUTPUT file), continues the stopped rank, and waits
# for the job to end for good (job.sh: its requeued run included). Each wait is at most 300 s.
set -u
now() { date +%s; }
wait_for() { # the shell test $1, at most 300 s
  local end=$(($(now) + 300))
  while [ "$(now)" -le $end ]; do eval "$1" && return 0; sleep 0.2; done
  echo "preempt.sh: gave up waiting for: $1" >&2
  return 1
}
script=$1 output=$2 hold=$3
id=$(sbatch --parsable "$script") || exit 1
id=${id%%;*}
wait_for '[ -s "$hold" ]' || exit 1
scancel --batch --signal=USR1 "$id"
wait_for 'grep -q "Forwarding signal" "$output" 2> /dev/null' || exit 1
kill -CONT "$(cat "$hold")"
# the job, requeued, runs again: job.sh waits for its final state (it resubmits nothing)
for _ in $(seq 1 1500); do
  line=$(scontrol show job "$id" -o 2> /dev/null)
  case "$line" in *JobState=COMPLETED* | *JobState=FAILED* | *JobState=CANCELLED*) break ;; esac
  sleep 0.2
done
echo "job $id $(echo "$line" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p') $(echo "$line" | sed -n 's/.* ExitCode=\([0-9:]*\).*/\1/p') restarts $(echo "$line" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')"
