#!/usr/bin/env bash
# lose_host.sh METRICS STEPS HOST HOSTFILE HOLD -- PIPER-RUN COMMAND...: a host lost and given
# back, inside `hosts.sh with` (it needs $PIPER_HOSTS). Runs the piper-run command on node1;
# once METRICS holds STEPS "train" lines, pulls HOST's cable; once piper-run has left the host
# out and the smaller job has completed a step, and (HOLD not "-") run.err holds the text
# HOLD (the smaller job held itself: PIPER_FAULT=hold@step=...,ranks=..., so it cannot end,
# nor time out, before piper-run grows it), plugs the cable back in, waits until nothing runs
# on HOST any more (no orphan of the cut job holds it), rewrites HOSTFILE (the same hosts: the
# operator's word that they are all back), waits for piper-run to say it grows (its stop is
# what releases the held job), and waits for piper-run to end (at most 300 s). Every wait is
# for an event, with a deadline only against a hang: none races the run.
# Prints, one a line:
#   cut-to-step S        seconds from the cut to the first step the job on the hosts left
#                        completed (piper-run's "recovered:" line, polled every 0.05 s)
#   orphans-gone S       seconds from the cable's return until nothing ran on HOST
#   exit N               piper-run's exit status
# piper-run's stdout and stderr go to run.out and run.err, each event with its time to
# lose_host.log (to read when a test fails).
set -u
hosts=$(dirname "$0")/../hosts.sh
metrics=$1 steps=$2 cut=$3 hostfile=$4 hold=$5
shift 6
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
trained() { local n; n=$(grep -c '"train"' "$metrics" 2> /dev/null); echo "${n:-0}"; }
log() { echo "$EPOCHREALTIME $*" >> lose_host.log; }
# waits (0.05 s polls, at most $2 seconds: a deadline, not a count of rounds, which a loaded
# machine stretches) until the shell test $1 holds; 1 if it never did
until_true() {
  local deadline
  deadline=$(awk -v t="$EPOCHREALTIME" -v s="$2" 'BEGIN { printf "%.3f", t + s }')
  while awk -v t="$EPOCHREALTIME" -v d="$deadline" 'BEGIN { exit !(t < d) }'; do
    eval "$1" && return 0
    kill -0 $job 2> /dev/null || return 1
    sleep 0.05
  done
  log "gave up waiting for: $1"
  return 1
}
rm -f lose_host.log
rm -f "$metrics"
: > run.err
"$hosts" run "$PIPER_HOSTS" node1 "$@" > run.out 2> run.err &
job=$!
until_true '[ "$(trained)" -ge "$steps" ]' 120 ||
  echo "lose_host.sh: the run never reached step $steps" >&2
if grep -q "does not answer" run.err; then
  echo "lose_host.sh: $cut was left out before the cut: $(grep 'does not answer' run.err)" >&2
fi
"$hosts" cut "$PIPER_HOSTS" "$cut"
t0=$(now)
log "cut $cut after $(trained) steps"
if until_true 'grep -q "piper-run: recovered:" run.err' 120; then
  echo "cut-to-step $(since "$t0" "$(now)")"
else
  echo "lose_host.sh: no recovery on the hosts left" >&2
fi
if [ "$hold" != - ] && ! until_true 'grep -q -- "$hold" run.err' 120; then
  echo "lose_host.sh: the smaller job never held itself (no '$hold' in run.err)" >&2
fi
"$hosts" heal "$PIPER_HOSTS" "$cut"
t1=$(now)
log "healed $cut"
if until_true '[ -z "$("$hosts" pids "$PIPER_HOSTS" "$cut")" ]' 60; then
  echo "orphans-gone $(since "$t1" "$(now)")"
else
  echo "lose_host.sh: still running on $cut: $("$hosts" pids "$PIPER_HOSTS" "$cut" | tr '\n' ';')" >&2
fi
cp "$hostfile" "$hostfile.new" && mv "$hostfile.new" "$hostfile"
log "rewrote $hostfile"
if [ "$hold" != - ]; then
  until_true 'grep -q "piper-run: .* growing to" run.err' 120 ||
    echo "lose_host.sh: piper-run did not grow" >&2
fi
until_true 'false' 300 # piper-run's end, at most 300 s
kill -0 $job 2> /dev/null && { echo "lose_host.sh: piper-run did not end" >&2; kill -9 $job; }
wait $job
echo "exit $?"
