#!/usr/bin/env bash
# Several "hosts" on one machine, for testing and measuring data-parallel
# training across a network: each host is a Linux network namespace with its
# own interface (eth0), address and hostname, joined to the others by a veth
# pair on one bridge, so the processes of an MPI job can only reach each other
# over TCP, and the links can be slowed with tc to a chosen rate.
#
#   scripts/hosts.sh up 2 [RATE]     hosts host1, host2 at 10.77.0.1, .2 (the bridge, in this
#                                    namespace, is 10.77.0.254); RATE like 1gbit or 10gbit
#   scripts/hosts.sh rate RATE|none  limit every link (both directions) to RATE, or lift it
#   scripts/hosts.sh link 2 down     host2's interface goes down (its network disappears); `up` again
#   scripts/hosts.sh mpirun ARGS...  mpirun with one process per host, over TCP only, e.g.
#                                    scripts/hosts.sh mpirun build/bin/rnnsearch --out runs/x ...
#   scripts/hosts.sh down            remove them
#
# What it stands for: two machines on one switch with links of RATE. What it
# does not: the hosts share this machine's cores, memory and disk (a run
# folder is one folder, as on a shared file system), and no latency is added
# (netem is missing on these machines), so a figure that depends on latency
# says so. Across real machines the same job is
#
#   mpirun --hostfile hosts --map-by node -np 2 --mca btl tcp,self \
#     --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 \
#     --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 2 \
#     --mca oob_tcp_keepalive_probes 3 build/bin/rnnsearch ...
#
# with the hostnames in `hosts` (one per line, "slots=1"), ssh between them
# without a password, and the build and run folder at the same paths everywhere.
#
# Needs root (namespaces, links, tc). RG_HOSTS_NET (default rg; up to 10
# letters and digits) prefixes every name and RG_HOSTS_SUBNET (default
# 10.77.0, a /24 not otherwise in use) sets the addresses, so that a test can
# make its own hosts beside a user's.
set -euo pipefail
net=${RG_HOSTS_NET:-rg}
subnet=${RG_HOSTS_SUBNET:-10.77.0}
bridge=$net-br
state=/run/rg-hosts-$net # the hostfile, and how many hosts there are

die() {
  echo "error: scripts/hosts.sh: $*" >&2
  exit 1
}
# Names become interface names (15 characters at most: "$net-v16") and paths.
[[ $net =~ ^[a-z][a-z0-9]{0,9}$ ]] ||
  die "RG_HOSTS_NET '$net' must be 1 to 10 lower-case letters and digits, starting with a letter"
[[ $subnet =~ ^(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})(\.(25[0-5]|2[0-4][0-9]|1?[0-9]{1,2})){2}$ ]] ||
  die "RG_HOSTS_SUBNET '$subnet' must be the first three numbers of an IPv4 /24 network, like 10.77.0"
count() {
  [ -f "$state/count" ] || die "no hosts '$net' are up (scripts/hosts.sh up N first)"
  cat "$state/count"
}
# A host's number, 1 to the count of hosts up (decimal: no sign, no leading zero).
host_number() {
  local n
  n=$(count) || exit 1
  [[ $1 =~ ^[1-9][0-9]?$ ]] && (($1 <= n)) || die "there is no host '$1' (hosts 1 to $n are up)"
}
# A link rate for tc: a number and a unit (kbit, mbit, gbit), or none.
check_rate() {
  [[ $1 == none || $1 =~ ^[1-9][0-9]{0,5}(kbit|mbit|gbit)$ ]] ||
    die "rate '$1': give a whole number and kbit, mbit or gbit (1gbit, 10gbit, 500mbit), or none"
}

# Each link is limited in both directions: a host's eth0 shapes what it sends,
# the bridge's end of its veth pair what it receives. tbf's bucket must hold at
# least one of the 64 KiB packets that segmentation offload makes. A link that
# is down stays down.
set_rate() {
  local rate=$1 n i
  check_rate "$rate"
  n=$(count) || exit 1
  for ((i = 1; i <= n; ++i)); do
    if [ "$rate" = none ]; then # (tc del fails when there is no qdisc: ignored)
      ip netns exec "$net-h$i" tc qdisc del dev eth0 root 2> /dev/null || true
      tc qdisc del dev "$net-v$i" root 2> /dev/null || true
    else
      ip netns exec "$net-h$i" tc qdisc replace dev eth0 root tbf rate "$rate" burst 1mb latency 100ms
      tc qdisc replace dev "$net-v$i" root tbf rate "$rate" burst 1mb latency 100ms
    fi
  done
}

up() {
  local n=$1 rate=${2:-none} i
  [[ $n =~ ^[1-9][0-9]?$ ]] && ((n <= 16)) || die "up: '$n' hosts; give 1 to 16"
  check_rate "$rate"
  [ "$(id -u)" = 0 ] || die "up: making network namespaces needs root"
  down # whatever an earlier run left
  # Another set of hosts (or anything else) on the same network would take its traffic.
  if [ -n "$(ip -4 route show "$subnet.0/24")" ]; then
    die "up: the network $subnet.0/24 is in use here ($(ip -4 route show "$subnet.0/24" | head -n 1)); set RG_HOSTS_SUBNET to another"
  fi
  mkdir -p "$state"
  ip link add "$bridge" type bridge
  ip addr add "$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
  : > "$state/hostfile"
  for ((i = 1; i <= n; ++i)); do
    ip netns add "$net-h$i"
    ip link add "$net-v$i" type veth peer name eth0 netns "$net-h$i"
    ip link set "$net-v$i" master "$bridge" up
    ip -n "$net-h$i" addr add "$subnet.$i/24" dev eth0
    ip -n "$net-h$i" link set eth0 up
    ip -n "$net-h$i" link set lo up
    echo "$subnet.$i slots=1" >> "$state/hostfile"
  done
  echo "$n" > "$state/count"
  set_rate "$rate" || { down; die "up: could not limit the links to $rate"; }
  echo "hosts.sh: $n hosts up: host1..host$n at $subnet.1..$n, links ${rate/none/unlimited}"
}

down() {
  local n i
  n=$(cat "$state/count" 2> /dev/null || echo 16) # (16: all there can be, when an `up` failed midway)
  for ((i = 1; i <= n; ++i)); do
    # A process left in a namespace (a rank cut off from mpirun) keeps it, and its link, alive.
    ip netns pids "$net-h$i" 2> /dev/null | xargs -r kill -9 2> /dev/null || true
    ip netns del "$net-h$i" 2> /dev/null || true
    ip link del "$net-v$i" 2> /dev/null || true
  done
  ip link del "$bridge" 2> /dev/null || true
  rm -rf "$state"
}

# mpirun starts its daemon on each host as ssh would: `agent [options] HOST
# COMMAND...`, the command to be run by the host's shell. Here the host's
# shell runs in its namespace, with its own hostname (a UTS namespace), so
# that every rank reports the host it is on.
agent() {
  while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done # ssh options, if any
  [ $# -ge 2 ] || die "agent: usage: scripts/hosts.sh agent HOST COMMAND... (mpirun calls it)"
  local host=$1 i
  shift
  i=${host##*.}
  [ "$host" = "$subnet.$i" ] && host_number "$i" > /dev/null || die "agent: $host is none of the hosts"
  exec ip netns exec "$net-h$i" unshare --uts sh -c "hostname host$i; $*"
}

run_mpirun() {
  local n
  n=$(count) || exit 1
  # OpenMPI reads these as --mca settings; they reach the daemons on the hosts too.
  export OMPI_MCA_plm_rsh_agent="$(realpath "$0") agent"
  export OMPI_MCA_plm_rsh_no_tree_spawn=1
  export OMPI_MCA_btl=tcp,self
  export OMPI_MCA_btl_tcp_if_include=$subnet.0/24
  export OMPI_MCA_oob_tcp_if_include=$subnet.0/24
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 RG_HOSTS_NET="$net" RG_HOSTS_SUBNET="$subnet"
  # -x: the variables every rank gets from here (OpenMP's threads, the library settings).
  local pass=() v
  for v in OMP_NUM_THREADS OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS RG_GEMM; do
    [ -n "${!v:-}" ] && pass+=(-x "$v")
  done
  # A host that vanishes (its link down, its machine off) leaves mpirun's TCP
  # connection to its daemon silent: keepalives every 2 s after 5 s of quiet,
  # 3 missed, end the job about 10 s later with "ORTE has lost communication
  # with a remote daemon ... on node ADDRESS" (by default it takes 8 minutes).
  export OMPI_MCA_oob_tcp_keepalive_time=5 OMPI_MCA_oob_tcp_keepalive_intvl=2 OMPI_MCA_oob_tcp_keepalive_probes=3
  local r
  for ((r = 0; r < n; ++r)); do echo "hosts.sh: rank $r runs on host$((r + 1)) ($subnet.$((r + 1)))" >&2; done
  exec mpirun --hostfile "$state/hostfile" --map-by node -np "$n" --bind-to none "${pass[@]}" "$@"
}

usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit 2
}
case ${1:-} in
  up) [ $# -ge 2 ] || usage; up "$2" "${3:-none}" ;;
  down) down ;;
  rate) [ $# -ge 2 ] || usage; set_rate "$2" ;;
  link)
    [ $# -ge 3 ] || usage
    host_number "$2"
    [[ $3 =~ ^(up|down)$ ]] || die "link: say up or down, not '$3'"
    ip -n "$net-h$2" link set eth0 "$3" ;;
  mpirun) shift; run_mpirun "$@" ;;
  agent) shift; agent "$@" ;;
  *) usage ;;
esac
