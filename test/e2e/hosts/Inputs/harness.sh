#!/usr/bin/env bash
# harness.sh PLAN: what makes hosts.sh's hosts separate hosts, inside `hosts.sh with node1
# node2` ($PIPER_HOSTS): prints one line per property (harness.test checks them).
set -u
hosts=$(dirname "$0")/../hosts.sh
on() { "$hosts" run "$PIPER_HOSTS" "$@"; }
echo "hostnames: $(on node1 hostname) $(on node2 hostname)"
echo "addresses: $(on node1 ip -o -4 addr show eth0 | awk '{print $4}') $(on node2 ip -o -4 addr show eth0 | awk '{print $4}')"
on node1 sh -c 'echo x > /dev/shm/piper-harness-probe'
echo "shm: node1 $(on node1 sh -c 'ls /dev/shm/piper-harness-probe 2>/dev/null | wc -l'), node2 $(on node2 sh -c 'ls /dev/shm/piper-harness-probe 2>/dev/null | wc -l'), machine $(ls /dev/shm/piper-harness-probe 2>/dev/null | wc -l)"
# node2's clock against node1's, from reads in the order node1, node2, node1: node2's read came
# between the two of node1, so the offset lies in [up2 - b, up2 - a] (widened by /proc/uptime's
# 0.01 s resolution) however long each read takes on a loaded machine. The narrowest of up to
# 20 such brackets must hold 1000 s and be under 0.5 s wide (so 999 or 1001 would not pass).
best=""
for _ in $(seq 1 20); do
  a=$(on node1 cut -d' ' -f1 /proc/uptime) up2=$(on node2 cut -d' ' -f1 /proc/uptime)
  b=$(on node1 cut -d' ' -f1 /proc/uptime)
  best=$(awk -v a="$a" -v b="$b" -v u="$up2" -v best="$best" 'BEGIN {
    lo = u - b - 0.01; hi = u - a + 0.01; split(best, o, " ")
    if (best == "" || hi - lo < o[2] - o[1]) print lo, hi; else print best }')
  awk -v best="$best" 'BEGIN { split(best, o, " "); exit !(o[2] - o[1] < 0.5) }' && break
done
echo "clock: node2 - node1 = $(awk -v best="$best" 'BEGIN { split(best, o, " ")
  if (o[1] <= 1000 && 1000 <= o[2] && o[2] - o[1] < 0.5) print "1000"
  else printf "not shown to be 1000: in [%.2f, %.2f]", o[1], o[2] }') s"
# the agent, as mpirun calls it from node1: a login's environment, and ssh's failures
echo "agent env: $(OMP_NUM_THREADS=7 on node1 "$hosts" agent node2 'echo OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset} on $(hostname)')"
on node1 "$hosts" agent node3 true 2>&1
echo "agent exit $?"
"$hosts" cut "$PIPER_HOSTS" node2
on node1 "$hosts" agent node2 true 2>&1
echo "agent exit $?"
"$hosts" heal "$PIPER_HOSTS" node2
echo "healed: $(on node1 "$hosts" agent node2 hostname)"
# Open MPI: shared memory cannot join two hosts (Open MPI says so, and that the job will abort,
# but then leaves the plan's first transfer pending: its --timeout watchdog ends it), TCP does
printf 'node1 slots=2\nnode2 slots=2\n' > hosts
timeout 60 "$hosts" run "$PIPER_HOSTS" node1 mpirun --allow-run-as-root -np 4 --hostfile hosts \
  --mca btl self,vader "./$1" --steps 1 --quiet --timeout 3 > shm-only.out 2>&1
echo "shared memory only: exit $?"
timeout 60 "$hosts" run "$PIPER_HOSTS" node1 mpirun --allow-run-as-root -np 4 --hostfile hosts \
  --mca btl self,tcp "./$1" --steps 1 > tcp.out 2>&1
echo "tcp: exit $?"
for _ in $(seq 1 50); do # what a killed job leaves ends (mpirun's SIGTERM reaches both hosts)
  [ "$("$hosts" pids "$PIPER_HOSTS" | wc -l)" = 0 ] && break
  sleep 0.1
done
echo "left: $("$hosts" pids "$PIPER_HOSTS" | wc -l)"
