#!/bin/sh
# hosts.sh: several "hosts" on one Linux machine, to rehearse and test runs across hosts.
#
#   hosts.sh check                 can hosts be made here? exit 0, or 1 saying why not
#   hosts.sh up NAME HOST...       make the hosts of the set NAME, each on a port of one switch
#   hosts.sh env NAME              shell lines that point mpirun at them (eval "$(...)")
#   hosts.sh run NAME HOST CMD...  run CMD on HOST (your environment and folder, its namespaces)
#   hosts.sh agent HOST COMMAND    Open MPI's rsh agent: runs COMMAND on HOST as ssh would
#   hosts.sh cut NAME HOST         pull HOST's cable (its switch port down); `heal` plugs it in
#   hosts.sh pids NAME [HOST]      the processes running on the hosts (none: no output)
#   hosts.sh down NAME             end every process on the hosts and remove them
#   hosts.sh with HOST... -- CMD   up a fresh set, run CMD with its env, always down it after
#
# A host is a network namespace NAME-HOST holding `lo` and `eth0`, a veth whose other end is a
# port of a bridge in the namespace NAME-sw (the switch), with the address 10.77.0.K/24 (K: the
# host's place in `up`'s list, from 1). The subnet exists only inside these namespaces: nothing
# routes out, and sets with other NAMEs never meet (each has its own switch). Each host also has
# a hostname of its own (a UTS namespace), its own /dev/shm (Open MPI's shared-memory segments
# are named by hostname and job: hosts sharing the machine's would collide) and an /etc/hosts
# naming every host of the set (a mount namespace), and a monotonic clock of its own (a time
# namespace): host K's CLOCK_MONOTONIC reads 1000·(K-1) s ahead of the machine's, as another
# machine's clock starts elsewhere, so what aligns clocks across hosts is tested. They share the machine's filesystem (the
# shared-filesystem case: one path holds the binary, the data and the outputs for every host),
# its view of /proc and its CPUs.
#
# Every host runs a small login daemon (`sshd` below, started by `up`, in the host's
# namespaces), which starts the commands the agent hands it (through a FIFO; their output goes
# to files the agent follows until the command ends). So, as with ssh, what runs on a
# host is not a descendant of the mpirun that launched it: killing mpirun (or a supervisor that
# kills its descendants, piper-run) does not kill it, and a host that lost its link keeps its
# processes until they end by themselves. The agent first connects to the host over the network
# (TCP to port 22 of its address, from the caller's host): a refused connection means the host
# answers; no route to it (its cable is out: the kernel gives up on ARP after some 3 s), no
# answer within 20 s, or no such host fails as ssh fails (exit 255, "ssh: connect to host ...",
# "ssh: Could not resolve hostname ...").
#
# Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN), Linux 5.6 or later (time namespaces), iproute2,
# util-linux (unshare, nsenter) and bash (its /dev/tcp). docs/hosts.md shows a run by hand; test/e2e/hosts/ uses it.
set -eu

SUBNET=10.77.0
STATE=/run/piper-hosts
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

die() { echo "hosts.sh: error: $*" >&2; exit 1; }

# The hosts of set $1, one a line.
hosts_of() {
  cat "$STATE/$1/hosts" 2> /dev/null || die "no hosts named $1 (make them: hosts.sh up $1 HOST...)"
}

# The login daemon's pid on host $2 of set $1.
sshd_pid() {
  pid=$(cat "$STATE/$1/$2/pid" 2> /dev/null) || die "no host $2 in the set $1"
  echo "$pid"
}

# Removes set $1: every process in its hosts' namespaces, the namespaces, the state.
set_down() {
  for host in $(cat "$STATE/$1/hosts" 2> /dev/null); do
    for pid in $(ip netns pids "$1-$host" 2> /dev/null); do kill -9 "$pid" 2> /dev/null || true; done
    ip netns del "$1-$host" 2> /dev/null || true
  done
  ip netns del "$1-sw" 2> /dev/null || true
  rm -rf "${STATE:?}/$1"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
check)
  [ "$(id -u)" = 0 ] || { echo "not root: hosts need CAP_NET_ADMIN and CAP_SYS_ADMIN"; exit 1; }
  for tool in ip unshare nsenter bash; do
    command -v $tool > /dev/null || { echo "no '$tool' command"; exit 1; }
  done
  probe=piper-hosts-probe-$$
  out=$(ip netns add "$probe" 2>&1) || { echo "'ip netns add' fails: $out"; exit 1; }
  ok=1
  out=$(ip netns exec "$probe" unshare --uts --mount --propagation private --time --monotonic 1000 sh -c \
        'hostname probe && mount -t tmpfs tmpfs /dev/shm && ip link set lo up' 2>&1) || ok=0
  ip netns del "$probe"
  [ $ok = 1 ] || { echo "a host's namespaces cannot be set up: $out"; exit 1; }
  ;;
up)
  [ $# -ge 2 ] || die "usage: hosts.sh up NAME HOST..."
  name=$1
  shift
  # sets `with` made and could not remove (it was killed first): their owner is gone
  for old in "$STATE"/*/owner; do
    [ -e "$old" ] || continue
    kill -0 "$(cat "$old")" 2> /dev/null || set_down "$(basename "$(dirname "$old")")"
  done
  [ ! -e "$STATE/$name" ] || die "a set named $name exists already (hosts.sh down $name)"
  mkdir -p "$STATE/$name"
  [ -z "${PIPER_HOSTS_OWNER:-}" ] || echo "$PIPER_HOSTS_OWNER" > "$STATE/$name/owner"
  printf '127.0.0.1 localhost\n' > "$STATE/$name/etc-hosts"
  k=0
  for host in "$@"; do
    k=$((k + 1))
    printf '%s.%d %s\n' "$SUBNET" $k "$host" >> "$STATE/$name/etc-hosts"
  done
  [ $k -le 250 ] || die "at most 250 hosts"
  ip netns add "$name-sw"
  ip -n "$name-sw" link add br0 type bridge
  ip -n "$name-sw" link set br0 up
  k=0
  for host in "$@"; do
    k=$((k + 1))
    h=$name-$host
    mkdir "$STATE/$name/$host"
    echo "$host" >> "$STATE/$name/hosts"
    ip netns add "$h"
    ip -n "$name-sw" link add "p$k" type veth peer name eth0 netns "$h"
    ip -n "$name-sw" link set "p$k" master br0 up
    ip -n "$h" addr add "$SUBNET.$k/24" dev eth0
    ip -n "$h" link set eth0 up
    ip -n "$h" link set lo up
    # the host's login daemon, in its own hostname and mount namespaces, detached from us
    setsid ip netns exec "$h" unshare --fork --uts --mount --propagation private \
      --time --monotonic $(((k - 1) * 1000)) --boottime $(((k - 1) * 1000)) sh -c \
      'hostname "$1" && mount -t tmpfs -o mode=1777,size=1g "shm-$1" /dev/shm &&
       mount --bind "$2/etc-hosts" /etc/hosts && exec "$3" sshd "$2/$1"' \
      sh "$host" "$STATE/$name" "$SELF" < /dev/null > /dev/null 2>&1 &
  done
  for host in "$@"; do # wait until every daemon listens
    for i in $(seq 1 100); do [ -s "$STATE/$name/$host/pid" ] && break; sleep 0.05; done
    [ -s "$STATE/$name/$host/pid" ] || die "host $host's login daemon did not start"
  done
  ;;
sshd)
  # (internal) a host's login daemon: reads request folders from its ctl FIFO and runs each
  # one's command (its `cmd` file) with stdout and stderr into the folder's `out` and `err`,
  # its process id into `pid` once started and its exit status into `rc` at the end.
  dir=$1
  keep=$(env | grep -E '^(ASAN|LSAN|UBSAN)_OPTIONS=|^ASAN_SYMBOLIZER_PATH=|^(OMPI|PMIX)_MCA_mca_base_component_disable_dlclose=|^OPENBLAS_CORETYPE=' | tr '\n' ' ' || true)
  mkfifo "$dir/ctl"
  exec 3<> "$dir/ctl"
  echo $$ > "$dir/pid"
  while read -r req <&3; do
    [ -f "$req/cmd" ] || continue
    (
      set +e
      exec < /dev/null > "$req/out" 2> "$req/err"
      # a login's environment, not the caller's (what mpirun -x passes is all that travels),
      # plus the sanitizers' settings, as a cluster's site environment would hold them, and
      # OpenBLAS's kernel: the hosts are one processor, so make check-kernels' choice holds
      # on every host as on this one (without it the ranks in the hosts ran this processor's
      # own kernel against a reference run under the chosen one)
      env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/sh \
        PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin $keep \
        sh -c "$(cat "$req/cmd")" &
      echo $! > "$req/pid.new" && mv "$req/pid.new" "$req/pid"
      wait $!
      echo $? > "$req/rc.new" && mv "$req/rc.new" "$req/rc"
    ) &
  done
  ;;
env)
  [ $# = 1 ] || die "usage: hosts.sh env NAME"
  hosts_of "$1" > /dev/null
  echo "export PIPER_HOSTS=$1"
  echo "export OMPI_MCA_plm_rsh_agent='$SELF agent'"
  echo "export OMPI_MCA_btl_tcp_if_include=$SUBNET.0/24"
  echo "export OMPI_MCA_oob_tcp_if_include=$SUBNET.0/24"
  ;;
run)
  [ $# -ge 3 ] || die "usage: hosts.sh run NAME HOST CMD..."
  pid=$(sshd_pid "$1" "$2")
  shift 2
  # the working folder by its path inside the host's mount namespace (nsenter --wd would keep
  # the caller's, whose relative paths then resolve in the caller's mounts)
  exec nsenter -t "$pid" -n -u -m -T -- sh -c 'cd "$0" && exec "$@"' "$PWD" "$@"
  ;;
agent)
  # Open MPI calls it as it calls ssh: `agent [ssh options] HOST 'command line'`.
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
  [ $# -ge 2 ] || die "usage: hosts.sh agent HOST COMMAND"
  [ -n "${PIPER_HOSTS:-}" ] || die "PIPER_HOSTS is not set: eval \"\$(hosts.sh env NAME)\" first"
  host=$1
  shift
  addr=$(awk -v h="$host" '$2 == h { print $1 }' "$STATE/$PIPER_HOSTS/etc-hosts" 2> /dev/null)
  if [ -z "$addr" ] || [ ! -p "$STATE/$PIPER_HOSTS/$host/ctl" ]; then
    echo "ssh: Could not resolve hostname $host: Name or service not known" >&2
    exit 255
  fi
  # Over the network, as ssh connects: refused (nothing listens on 22) is an answer; a host
  # whose cable is out gives "No route to host" once ARP gives up (some 3 s), or nothing.
  probe=$(timeout 20 bash -c "exec 3<> /dev/tcp/$addr/22" 2>&1 || true)
  case "$probe" in
  *refused*) ;;
  *"No route"*)
    echo "ssh: connect to host $host port 22: No route to host" >&2
    exit 255
    ;;
  *)
    echo "ssh: connect to host $host port 22: Connection timed out" >&2
    exit 255
    ;;
  esac
  req=$(mktemp -d "$STATE/$PIPER_HOSTS/$host/req.XXXXXX")
  printf '%s\n' "$*" > "$req/cmd"
  echo "$req" > "$STATE/$PIPER_HOSTS/$host/ctl"
  for _ in $(seq 1 1500); do [ -s "$req/pid" ] && break; sleep 0.02; done
  [ -s "$req/pid" ] || die "host $host's login daemon did not start the command"
  # its output as it comes, until the command has ended and all of it is read
  pid=$(cat "$req/pid")
  tail -q -s 0.1 -c +1 -f --pid="$pid" "$req/out" &
  tail -q -s 0.1 -c +1 -f --pid="$pid" "$req/err" >&2 &
  wait
  while [ ! -e "$req/rc" ]; do sleep 0.02; done
  rc=$(cat "$req/rc")
  rm -rf "$req"
  exit "$rc"
  ;;
cut | heal)
  [ $# = 2 ] || die "usage: hosts.sh $cmd NAME HOST"
  k=$(hosts_of "$1" | grep -n -x -F "$2" | cut -d: -f1)
  [ -n "$k" ] || die "no host $2 in the set $1"
  ip -n "$1-sw" link set "p$k" "$([ "$cmd" = cut ] && echo down || echo up)"
  # Forget its link-layer address everywhere: once cut, as hosts would once it stays silent (a
  # connection to it then fails "No route to host" after ARP's 3 s, every time); once healed,
  # the failed lookups of the cut, so it answers at once.
  for h in $(hosts_of "$1"); do
    ip -n "$1-$h" neigh flush to "$SUBNET.$k" 2> /dev/null || true
  done
  if [ "$cmd" = heal ]; then # back when another host reaches it (connection refused: an answer)
    other=$(hosts_of "$1" | grep -v -x -F "$2" | head -n 1)
    for _ in $(seq 1 50); do
      [ -z "$other" ] && break
      probe=$(nsenter -t "$(sshd_pid "$1" "$other")" -n \
              timeout 1 bash -c "exec 3<> /dev/tcp/$SUBNET.$k/22" 2>&1 || true)
      case "$probe" in *refused*) break ;; esac
      sleep 0.1
    done
  fi
  ;;
pids)
  # every process on the hosts but their login daemons: "HOST PID COMMAND LINE"
  [ $# -ge 1 ] || die "usage: hosts.sh pids NAME [HOST]"
  name=$1
  list=$(if [ $# -ge 2 ]; then echo "$2"; else hosts_of "$name"; fi)
  for host in $list; do
    sshd=$(sshd_pid "$name" "$host")
    keeper=$(cut -d' ' -f4 "/proc/$sshd/stat" 2> /dev/null || true) # unshare, its parent
    for pid in $(ip netns pids "$name-$host" 2> /dev/null); do
      [ "$pid" = "$sshd" ] || [ "$pid" = "$keeper" ] && continue
      line=$( (tr '\0' ' ' < "/proc/$pid/cmdline") 2> /dev/null | cut -c1-160) || continue
      [ -n "$line" ] && echo "$host $pid $line"
    done
  done
  ;;
down)
  [ $# = 1 ] || die "usage: hosts.sh down NAME"
  set_down "$1"
  ;;
with)
  hosts=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do hosts="$hosts $1"; shift; done
  [ $# -ge 2 ] || die "usage: hosts.sh with HOST... -- CMD..."
  shift
  name=ph$$
  trap 'set_down "$name"' EXIT
  trap 'exit 130' INT TERM HUP
  # shellcheck disable=SC2086
  PIPER_HOSTS_OWNER=$$ "$SELF" up "$name" $hosts
  eval "$("$SELF" env "$name")"
  set +e
  "$@"
  exit $?
  ;;
*)
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
  ;;
esac
