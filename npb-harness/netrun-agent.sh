#!/bin/sh
# Open MPI's plm_rsh_agent for `netrun.py --nodes K`: "ssh HOST COMMAND" into an emulated node.
# HOST is a node's name (tnbc-nodeI, from netrun's hostfile); COMMAND (orted and its arguments)
# runs, like ssh's remote command, through sh inside that node's network namespace
# ($NETRUN_NS_PREFIX-HOST) with its own UTS namespace whose host name is HOST, so that the
# daemon and its ranks know which node they are on.
host=$1
shift
ns="$NETRUN_NS_PREFIX-$host"
if [ -z "$NETRUN_NS_PREFIX" ] || ! ip netns pids "$ns" >/dev/null 2>&1; then
    echo "netrun-agent.sh: no emulated node '$host' (namespace '$ns'); only netrun.py --nodes starts this" >&2
    exit 1
fi
# The node's CPUs (netrun.py --node-cpus split): join its cpuset cgroup, whose CPUs no thread of
# the daemon or its ranks can leave; else run under taskset with the node's CPU list.
cpus=
for entry in $NETRUN_NODE_CPUS; do
    case $entry in "$host="*) cpus=${entry#*=} ;; esac
done
if [ -n "$NETRUN_CPUSET_PREFIX" ]; then
    if ! echo $$ >"$NETRUN_CPUSET_PREFIX-$host/cgroup.procs"; then
        echo "netrun-agent.sh: cannot join the CPU set of '$host' ($NETRUN_CPUSET_PREFIX-$host)" >&2
        exit 1
    fi
    cpus=
fi
if [ -n "$cpus" ]; then
    exec taskset -c "$cpus" ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
fi
exec ip netns exec "$ns" unshare --uts sh -c 'hostname "$0" && exec sh -c "$1"' "$host" "$*"
