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
up1=$(on node1 cut -d' ' -f1 /proc/uptime) up2=$(on node2 cut -d' ' -f1 /proc/uptime)
echo "clock: node2 - node1 = $(awk -v a="$up1" -v b="$up2" 'BEGIN { printf "%.0f", b - a }') s"
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
