#!/usr/bin/env bash
# cut_link.sh [--until-empty] METRICS STEPS HOST -- COMMAND...: the cut-link scenario, inside
# `hosts.sh with`. Runs COMMAND on node1 (the first host, where a user starts mpirun or
# piper-run), waits until METRICS holds STEPS "train" lines (training is under way, every host
# in it), pulls HOST's cable, and waits for COMMAND to end (at most 120 s: a hang fails the
# test, then everything is killed by the set's cleanup). Prints, one a line:
#   exit N                  COMMAND's exit status
#   ended S                 seconds from the cut to COMMAND's end
#   left HOST: ...          what still runs on each host ("none") once nothing is left on
#                           the other hosts and no rank on the cut one (with --until-empty:
#                           nothing at all on the cut one either, its daemon having ended by
#                           its own keepalive probes), or at the latest 5 s after the end
#                           (30 s with --until-empty); on the cut host the plan's processes
#                           (its ranks) and the others told apart: "ranks K, others J"
#   ranks-gone HOST S       seconds from the cut until the cut host's last rank exited (each
#                           rank watched through a pidfd, exit_times.py: the exit's own time,
#                           not a polling round's, which a loaded machine stretches; ranks
#                           still running 30 s after COMMAND's end: no line)
#   healed-empty HOST S     after its cable is back: seconds until nothing runs there (30 s max)
# COMMAND's output goes to cmd.out, and each event with its time to METRICS's name with .events
# for its suffix (m.jsonl: m.events), to read when a test fails. Every wait is bounded in
# seconds, not in rounds of its loop, which a loaded machine stretches. Needs $PIPER_HOSTS
# (hosts.sh with sets it).
set -u
hosts=$(dirname "$0")/../hosts.sh
until_empty=0
[ "$1" = --until-empty ] && until_empty=1 && shift
metrics=$1 steps=$2 cut=$3
shift 4
plan_ran() { # how many of the plan's ranks run on host $1 (processes with "--steps" flags)
  "$hosts" pids "$PIPER_HOSTS" "$1" | grep -c -- " --steps " || true
}
since() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; } # seconds from $1 to $2
before() { awk -v t="$EPOCHREALTIME" -v d="$1" 'BEGIN { exit !(t < d) }'; } # now < deadline $1
after() { awk -v t="$EPOCHREALTIME" -v s="$1" 'BEGIN { printf "%.3f", t + s }'; } # now + $1 s
log() { echo "$EPOCHREALTIME $*" >> "$events"; }
events=${metrics%.*}.events # this run's log, beside its metrics
rm -f "$metrics" "$events"
log "start: $*"
"$hosts" run "$PIPER_HOSTS" node1 "$@" > cmd.out 2>&1 &
job=$!
deadline=$(after 120)
while before "$deadline"; do
  n=$(grep -c '"train"' "$metrics" 2> /dev/null); [ "${n:-0}" -ge "$steps" ] && break
  kill -0 $job 2> /dev/null || break
  sleep 0.1
done
log "steps in $metrics: ${n:-0}; the command $(kill -0 $job 2> /dev/null && echo runs || echo ended)"
"$hosts" cut "$PIPER_HOSTS" "$cut"
t0=$EPOCHREALTIME
log "cut $cut"
# the cut host's ranks, each watched until it exits (their last exit time, or "alive N")
rank_pids=$("$hosts" pids "$PIPER_HOSTS" "$cut" | grep -- " --steps " | cut -d' ' -f2 | tr '\n' ' ')
log "ranks on $cut: $rank_pids"
# shellcheck disable=SC2086
"$(dirname "$0")/exit_times.py" 150 $rank_pids > "$events.ranks" &
watcher=$!
deadline=$(after 120)
while before "$deadline"; do
  kill -0 $job 2> /dev/null || break
  sleep 0.1
done
if kill -0 $job 2> /dev/null; then
  echo "cut_link.sh: the command did not end within 120 s of the cut" >&2
  kill -9 $job
fi
wait $job
rc=$?
t1=$EPOCHREALTIME
log "the command ended: $rc"
echo "exit $rc"
echo "ended $(since "$t0" "$t1")"
settled() { # nothing on the hosts but the cut one, and no rank there (--until-empty: nothing)
  local h
  for h in $(cat "/run/piper-hosts/$PIPER_HOSTS/hosts"); do
    if [ "$h" = "$cut" ] && [ $until_empty = 0 ]; then
      [ "$(plan_ran "$h")" = 0 ] || return 1
    else
      [ "$("$hosts" pids "$PIPER_HOSTS" "$h" | wc -l)" = 0 ] || return 1
    fi
  done
}
deadline=$(after $((until_empty ? 30 : 5)))
while before "$deadline"; do # settle: what is exiting exits (a stable count was not enough:
  settled && break           # once, under load, node2's ranks went 1.1 s after mpirun ended)
  sleep 0.1
done
"$hosts" pids "$PIPER_HOSTS" | sed 's/^/left: /' >> "$events"
for h in $(cat "/run/piper-hosts/$PIPER_HOSTS/hosts"); do
  n=$("$hosts" pids "$PIPER_HOSTS" "$h" | wc -l)
  if [ "$h" = "$cut" ]; then
    r=$(plan_ran "$h")
    echo "left $h: ranks $r, others $((n - r))"
  elif [ "$n" = 0 ]; then
    echo "left $h: none"
  else
    echo "left $h: $("$hosts" pids "$PIPER_HOSTS" "$h" | tr '\n' ';')"
  fi
done
deadline=$(after 30) # the ranks' exits, as the watcher saw them
while kill -0 $watcher 2> /dev/null && before "$deadline"; do sleep 0.1; done
kill $watcher 2> /dev/null
gone=$(cat "$events.ranks")
log "ranks on $cut exited: $gone"
case $gone in
[0-9]*) echo "ranks-gone $cut $(since "$t0" "$gone")" ;;
esac
"$hosts" heal "$PIPER_HOSTS" "$cut"
t2=$EPOCHREALTIME
log "healed $cut"
deadline=$(after 30)
while before "$deadline"; do
  if [ "$("$hosts" pids "$PIPER_HOSTS" "$cut" | wc -l)" = 0 ]; then
    echo "healed-empty $cut $(since "$t2" "$EPOCHREALTIME")"
    log "$cut empty"
    break
  fi
  sleep 0.2
done
exit 0
