#!/usr/bin/env bash
# reworded_mpirun.sh MPIRUN-ARGS...: mpirun as piper-run's --mpirun, with every line the plan
# prints reworded ("piper: " becomes "PLAN-SAYS "), as a runtime whose log lines were
# rephrased would print them. With HIDE_METRICS=FILE in the environment, the plan's --metrics
# FILE is written to FILE.hidden instead, where piper-run does not look (as by a rank 0 whose
# disk piper-run cannot read).
set -u
args=()
for a in "$@"; do
  [ -n "${HIDE_METRICS:-}" ] && [ "$a" = "$HIDE_METRICS" ] && a=$HIDE_METRICS.hidden
  args+=("$a")
done
exec mpirun "${args[@]}" > >(sed -u 's/piper: /PLAN-SAYS /') 2> >(sed -u 's/piper: /PLAN-SAYS /' >&2)
