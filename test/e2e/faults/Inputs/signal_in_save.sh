#!/usr/bin/env bash
# signal_in_save.sh HOLD SIGNAL THEN -- PIPER-RUN COMMAND...: runs the piper-run command (its
# output to run.out and run.err) with PIPER_FAULT=stop@save=...,once=HOLD set by the caller, so
# rank 0 stops itself while its background writer is about to write a checkpoint and writes its
# pid to HOLD. Then sends SIGNAL to piper-run (its --checkpoint-signal: a scheduler's warning,
# now, during the save), waits until mpirun has passed it on to the ranks ("Forwarding signal"),
# and THEN: "cont" continues rank 0 (the save goes on), "kill" SIGKILLs it (the job ends in the
# middle of the save, as a time limit's SIGKILL would). Prints "exit N", piper-run's status.
# Each wait is at most 300 s.
set -u
hold=$1 sig=$2 then=$3
shift 4
now() { date +%s; }
wait_for() { # the shell test $1, at most 300 s, while piper-run runs
  local end=$(($(now) + 300))
  while [ "$(now)" -le $end ]; do
    eval "$1" && return 0
    kill -0 $run 2> /dev/null || { echo "signal_in_save.sh: piper-run ended first" >&2; return 1; }
    sleep 0.1
  done
  echo "signal_in_save.sh: gave up waiting for: $1" >&2
  return 1
}
"$@" > run.out 2> run.err &
run=$!
wait_for '[ -s "$hold" ]' && kill -"$sig" $run &&
  wait_for 'grep -q "Forwarding signal" run.err' &&
  if [ "$then" = cont ]; then kill -CONT "$(cat "$hold")"; else kill -KILL "$(cat "$hold")"; fi
wait $run
echo "exit $?"
