#!/usr/bin/env bash
# bad_hosts.sh PLAN: the bad inputs of runs across hosts, inside `hosts.sh with node1 node2`
# ($PIPER_HOSTS), each launched from node1 under plain mpirun and under piper-run (DP4, 2 slots
# a host, PLAN a DP4 binary in the current folder). Each case runs with a 60 s limit; its output
# goes to CASE.out, and one line is printed:
#   CASE exit N in S s; left: none      (or what still runs on the hosts 5 s after the end:
#                                        an orphan; a daemon mpirun was still starting when
#                                        it gave up takes a moment to find mpirun gone)
# The cases:
#   unknown      the hostfile names node3, which no name resolves (ssh cannot find it)
#   cut          node2's cable is out before the launch (ssh cannot connect)
#   slots        8 ranks for the 4 slots the hostfile lists
#   missing      the plan exists only on node1 (a folder mounted there alone)
set -u
hosts=$(dirname "$0")/../hosts.sh
plan=$1
now() { date +%s.%N; }
# one case: NAME COMMAND... (run on node1)
case_run() {
  local name=$1 t0 rc left
  shift
  t0=$(now)
  timeout 60 "$hosts" run "$PIPER_HOSTS" node1 "$@" > "$name.out" 2>&1
  rc=$?
  local took
  took=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  for _ in $(seq 1 50); do
    left=$("$hosts" pids "$PIPER_HOSTS" | tr '\n' ';')
    [ -z "$left" ] && break
    sleep 0.1
  done
  echo "$name exit $rc in $took s; left: ${left:-none}"
}
mpi=(mpirun --allow-run-as-root -np 4 -x OMP_NUM_THREADS=1)
sup=(piper-run -np 4 --max-restarts 2)
flags=(--steps 3 --quiet --timeout 10)
printf 'node1 slots=2\nnode2 slots=2\n' > hosts
printf 'node1 slots=2\nnode2 slots=2\nnode3 slots=2\n' > hosts3

case_run unknown-mpirun "${mpi[@]}" --hostfile hosts3 "./$plan" "${flags[@]}"
case_run unknown-piper-run "${sup[@]}" --hostfile hosts3 -- "./$plan" "${flags[@]}"

"$hosts" cut "$PIPER_HOSTS" node2
case_run cut-mpirun "${mpi[@]}" --hostfile hosts "./$plan" "${flags[@]}"
case_run cut-piper-run "${sup[@]}" --hostfile hosts -- "./$plan" "${flags[@]}"
case_run cut-piper-run-min "${sup[@]}" --hostfile hosts --min-ranks 2 -- "./$plan" "${flags[@]}"
"$hosts" heal "$PIPER_HOSTS" node2

case_run slots-mpirun mpirun --allow-run-as-root -np 8 --hostfile hosts "./$plan" "${flags[@]}"
case_run slots-piper-run piper-run -np 8 --hostfile hosts -- "./$plan" "${flags[@]}"

mkdir -p node1-only
"$hosts" run "$PIPER_HOSTS" node1 sh -c "mount -t tmpfs node1-only node1-only && cp $plan node1-only/"
case_run missing-mpirun "${mpi[@]}" --hostfile hosts "node1-only/$plan" "${flags[@]}"
case_run missing-piper-run "${sup[@]}" --hostfile hosts -- "node1-only/$plan" "${flags[@]}"
exit 0
