#!/bin/sh
# slurm.sh: a real Slurm cluster on one Linux machine, on the hosts of test/e2e/hosts/hosts.sh.
#
#   slurm.sh check                    can a cluster be made here? exit 0, or 1 saying why not
#   slurm.sh with NODE... -- CMD...   make one, run CMD on its login host, always remove it after
#
# `with` makes a set of hosts (hosts.sh up): `ctl`, the controller and login host, and the
# NODEs, each a host of its own (its hostname, address, /dev/shm and clock). It writes a
# slurm.conf naming the nodes by their addresses, starts one munged on `ctl` (its socket and key
# in the cluster's folder: the hosts share the filesystem, so every daemon and client reaches it
# there, as a site's shared /etc/munge and identical keys would), slurmctld on `ctl` and one
# slurmd on each node, all as root in the foreground of their host (no systemd, no cgroups: the
# hosts are namespaces, so processes are tracked by their parents, proctrack/linuxproc), waits
# until every node is idle, and runs CMD on `ctl` in the caller's folder with SLURM_CONF set
# (sbatch, srun, squeue, scontrol work as on a cluster's login node). It then removes the
# set (every daemon and job process with it) and the cluster's folder, whatever CMD did.
# In CMD: SLURM_CLUSTER_DIR is the cluster's folder (slurmctld.log, NODE/slurmd.log),
# PIPER_HOSTS the set's name (hosts.sh cut "$PIPER_HOSTS" node2 pulls node2's cable), and
# `slurm.sh kill-node NODE` ends NODE's slurmd and pulls its cable (a node lost).
#
# Needs what hosts.sh needs, and Debian's slurmctld, slurmd, slurm-client and munge
# (the Makefile's deps install them; their services are not started).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
SELF=$HERE/$(basename "$0")
HOSTS=$HERE/../hosts/hosts.sh

die() { echo "slurm.sh: error: $*" >&2; exit 1; }

# The slurm.conf of a cluster in folder $1 whose nodes are $2... (addresses from the set's
# /etc/hosts: ctl is 10.77.0.1, the nodes follow in order). Two CPUs a node whatever the
# machine has (config_overrides): the tests run 2 ranks a node.
write_conf() {
  dir=$1
  shift
  cat << EOF
ClusterName=piper
SlurmctldHost=ctl(10.77.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/ctl
SlurmdSpoolDir=$dir/%n
SlurmctldPidFile=$dir/ctl/slurmctld.pid
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmctldLogFile=$dir/ctl/slurmctld.log
SlurmdLogFile=$dir/%n/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=10
InactiveLimit=0
KillWait=5
MinJobAge=600
JobRequeue=1
EOF
  k=1
  for node in "$@"; do
    k=$((k + 1))
    echo "NodeName=$node NodeAddr=10.77.0.$k CPUs=2 RealMemory=1000 State=UNKNOWN"
  done
  echo "PartitionName=main Nodes=$(echo "$@" | tr ' ' ',') Default=YES MaxTime=INFINITE State=UP"
}

# Waits at most $2 s until the shell test $1 holds; 1 if it never did.
until_true() {
  end=$(($(date +%s) + $2))
  while [ "$(date +%s)" -le $end ]; do
    eval "$1" && return 0
    sleep 0.2
  done
  return 1
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
check)
  why=$(sh "$HOSTS" check) || { echo "$why"; exit 1; }
  for tool in slurmctld slurmd sbatch scontrol munged; do
    command -v $tool > /dev/null ||
      { echo "no '$tool' command (install Debian's slurmctld, slurmd, slurm-client and munge)"; exit 1; }
  done
  ;;
with)
  nodes=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do nodes="$nodes $1"; shift; done
  [ $# -ge 2 ] && [ -n "$nodes" ] || die "usage: slurm.sh with NODE... -- CMD..."
  shift
  name=ps$$
  # the cluster's folder: not in /tmp, which is each node's own (below)
  mkdir -p /run/piper-slurm
  dir=$(mktemp -d /run/piper-slurm/XXXXXX)
  trap 'sh "$HOSTS" down "$name"; [ -n "${PIPER_SLURM_KEEP:-}" ] || rm -rf "$dir"' EXIT
  trap 'exit 130' INT TERM HUP
  # shellcheck disable=SC2086
  PIPER_HOSTS_OWNER=$$ sh "$HOSTS" up "$name" ctl $nodes
  mkdir -p "$dir/munge" "$dir/ctl"
  for node in $nodes; do mkdir -p "$dir/$node"; done
  chmod 700 "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2> /dev/null
  chmod 400 "$dir/munge/munge.key"
  # shellcheck disable=SC2086
  write_conf "$dir" $nodes > "$dir/slurm.conf"
  export SLURM_CONF="$dir/slurm.conf" SLURM_CLUSTER_DIR="$dir"
  # the daemons, each in its host's namespaces, detached (hosts.sh down ends them)
  start() { # HOST LOG COMMAND...
    host=$1 log=$2
    shift 2
    setsid sh "$HOSTS" run "$name" "$host" "$@" < /dev/null > "$log" 2>&1 &
  }
  start ctl "$dir/munge/munged.out" munged -F --force --socket="$dir/munge/munge.socket" \
    --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"
  until_true '[ -S "$dir/munge/munge.socket" ]' 30 ||
    die "munged did not start: $(cat "$dir/munge/munged.out" "$dir/munge/munged.log" 2> /dev/null)"
  start ctl "$dir/ctl/slurmctld.out" slurmctld -D -c -f "$SLURM_CONF"
  # The caller's folder is the cluster's shared filesystem. When it lies in /tmp (a checkout
  # cloned there), each node sees the folder of /tmp holding it at its own path, bound over
  # the node's private /tmp (below), as a site mounts a shared filesystem into each node.
  shared_tmp=""
  case "$PWD" in /tmp/?*) shared_tmp=/tmp/$(printf '%s' "${PWD#/tmp/}" | cut -d/ -f1) ;; esac
  for node in $nodes; do
    # A node's /tmp is its own, as on a cluster (Slurm's PMIx plugin names its folders there
    # by job and step only: nodes sharing one collide). slurmd looks for cgroups at start-up
    # whatever the plugins (22.05: no cgroup, no start), and a host's /sys is its network
    # namespace's own sysfs, without them: an empty named hierarchy of its own (cgroup v1, no
    # controller; nothing is constrained or tracked in it).
    start "$node" "$dir/$node/slurmd.out" sh -c 'keep="$3/shared-tmp" &&
      { [ -z "$2" ] || { mkdir -p "$keep" && mount --bind "$2" "$keep"; }; } &&
      mount -t tmpfs -o mode=1777,size=1g "tmp-$1" /tmp &&
      { [ -z "$2" ] || { mkdir -p "$2" && mount --bind "$keep" "$2"; }; } &&
      mount -t tmpfs -o size=1m cgroup /sys/fs/cgroup &&
      mkdir /sys/fs/cgroup/systemd && mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd &&
      exec slurmd -D -f "$0" -N "$1"' "$SLURM_CONF" "$node" "$shared_tmp" "$dir/$node"
  done
  count=$(echo $nodes | wc -w)
  idle() {
    n=$(sh "$HOSTS" run "$name" ctl sinfo -h -N -o '%N %T' 2> /dev/null | grep -c ' idle$') || true
    [ "${n:-0}" -eq "$count" ]
  }
  until_true idle 60 || die "the nodes did not come up: $(sh "$HOSTS" run "$name" ctl sinfo -N 2>&1 |
    tr '\n' ';'); see $(tail -n 3 "$dir/ctl/slurmctld.log" 2> /dev/null | tr '\n' ';')"
  export PIPER_HOSTS=$name PIPER_SLURM=$SELF
  set +e
  sh "$HOSTS" run "$name" ctl "$@"
  exit $?
  ;;
kill-node)
  [ $# = 1 ] || die "usage: slurm.sh kill-node NODE (inside slurm.sh with)"
  [ -n "${PIPER_HOSTS:-}" ] && [ -n "${SLURM_CLUSTER_DIR:-}" ] || die "not inside slurm.sh with"
  kill -9 "$(cat "$SLURM_CLUSTER_DIR/$1/slurmd.pid")" 2> /dev/null || true
  sh "$HOSTS" cut "$PIPER_HOSTS" "$1"
  ;;
*)
  sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
