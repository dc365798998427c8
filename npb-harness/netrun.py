#!/usr/bin/env python3
"""Runs a command (usually `mpirun ...`) on an emulated cluster network.

One node (default): the whole command runs in a private network namespace whose loopback is
shaped like a NIC: `mtu 9000` and `tc qdisc add dev lo root tbf rate RATE burst 256kb limit L`
(a burst below the MTU stalls TCP; L below, "The NIC's queue"). Open MPI is restricted to TCP over that loopback
(OMPI_MCA_btl=tcp,self, btl/oob_tcp_if_include=lo), so the ranks of this one machine share
one shaped "NIC", like M processes of a cluster node (the T-NBC paper, section 5.2.2).

K nodes (--nodes K): K namespaces node0..node{K-1}, each with one veth `eth0` (10.77.0.i+1/24,
mtu 9000) whose peer is a port of a bridge in a "switch" namespace (10.77.0.254, where the
command runs). Every node's link is shaped in both directions like a full-duplex NIC: tbf on
the node's eth0 (its egress) and on its switch port (its ingress). Open MPI starts its daemons
inside the node namespaces through netrun-agent.sh (plm_rsh_agent: `ip netns exec` instead of
ssh, with the node's own host name `tnbc-nodeI`), from a hostfile with M slots per node, so
ranks are placed block-wise (ranks 0..M-1 on node 0, ...). M = ceil(np / K), np taken from the
command's -np/-n, or --ranks-per-node M. Between nodes the ranks use TCP on 10.77.0.0/24; within
a node shared memory (vader, --intra vader, default) or TCP over the node's unshaped loopback
(--intra tcp). The root namespace's network is not touched.

Per-node CPUs (--nodes K, --node-cpus split, the default): the CPUs this process may use are
split into K contiguous sets, one per node (2 CPUs, 2 nodes: one each; more nodes than CPUs:
nodes share them round-robin, said at start). Each node's daemon and everything it starts run
in a cpuset cgroup of their node's CPUs (cgroup v1 `cpuset` or v2 with the cpuset controller),
so no thread of a node, also one that sets its own affinity (tnbc's progress thread,
TNBC_PROGRESS_CPUS), runs on another node's CPU. Open MPI's hwloc sees only the node's CPUs:
`--bind-to core` (its default at np <= 2) binds each rank to a core of its own node, as on a
cluster, instead of every node's first rank to CPU 0. Where no cpuset cgroup can be made, the
daemon runs under `taskset` (its affinity; a thread may set another) and netrun says so.
`--node-cpus shared`: every node may use every CPU (the behaviour before).

The hostfile gives a slot per rank, so Open MPI never yields on a crowded node (its M ranks
outnumber its CPUs: np 4 on 2 nodes of one CPU each): a rank waiting in MPI spins through its
scheduler slice, as the benchmarks measure it (docs/architecture.md, "Busy polling"). --yield
(with --nodes) sets OMPI_MCA_mpi_yield_when_idle=1 on crowded nodes instead, what Open MPI does
by itself when it knows it oversubscribes one machine (`mpirun --oversubscribe`): the tests that
check results and decisions rather than speed run so (tests/mpi/node_priorities.py: a trace run
of node_prio at np 8 on 2 nodes 2.5x quicker, session 69). A caller's own setting (its
environment, or `--mca` on mpirun) wins.

--pml ucx: Open MPI's UCX messaging and one-sided components (pml ucx, osc ucx) instead of ob1,
over UCX's TCP transport on the same shaped links (UCX_TLS=tcp,posix,self: within a node POSIX
shared memory, no cross-memory attach; UCX_NET_DEVICES the node's link). Open MPI 4.1 selects
UCX only on InfiniBand-class devices unless opal_common_ucx_tls/devices say `any`; set here.
This is the emulated link with usable MPI RMA (ob1's osc pt2pt refuses MPI_THREAD_MULTIPLE).

The NIC's queue (--nic lossless, the default): each tbf holds up to L bytes, L = max(64 MiB, the
send buffers of every TCP flow that can cross the link: (flows + 4) x tcp_wmem's maximum; at most
1 GiB), so it does not drop: what the link cannot take yet waits in the queue (and in the
sender's socket once TCP Small Queues stops it), as behind a NIC with Ethernet flow control or
on an HPC fabric's lossless links. --nic droptail is the queue before (kept to compare): L = the
rate x 100 ms (`latency 100ms`: 12.5 MB at 1 Gbit/s, 50 MB at 4 Gbit/s), tail drop when full.
Where the senders outrun the link (np 4 on 2 nodes at 100 Mbit/s: 4 flows into each queue) the
droptail queue dropped packets in every run and the lossless one none (netrun_test.py). At 1
Gbit/s on this VM neither dropped a packet nor saw a TCP timeout in any quiet run: the 1-3.5 s
stalls of single runs at np 4 on 2 nodes came from the CPUs shared between nodes (--node-cpus
shared), not from the network (docs/harness.md, "The NIC's queue"). Not modelled: a NIC's
per-flow transmit queues (here one FIFO per direction: ACKs wait behind the data queued before
them), switch buffers that overflow, ECN, and pause frames' head-of-line blocking between nodes.

The link's burst (--burst, default 256kb): tbf lets a link that was idle pass its bucket at the
loopback's speed before the rate binds, 2.1 ms of the wire's time at 1 Gbit/s (0.5 ms at 4).
A program that computes between its collectives finds the bucket full at each; one whose early
returns keep the link busy finds less (docs/benchmarks.md, "Session 78": the blocking bcast-proxy W
lost 2.8 ms an iteration without it, its early returns 2.1). A NIC serialises at its rate from
the first frame: a burst of a few frames (above the MTU, which a smaller bucket stalls: 32kb)
emulates one without that credit. A calibration belongs to its burst (the harness's --burst keys
its machine files).

--stats: at the end, each shaped queue's bytes, packets, drops and burst, and each node's TCP counters
(retransmitted segments, retransmission timeouts, tail-loss probes, SYN retransmissions), read
from its namespace's /proc/net/snmp and /proc/net/netstat (counted from the namespace's start).

usage: netrun.py [--rate 4gbit] [--nodes K [--ranks-per-node M] [--intra vader|tcp] [--node-cpus split|shared] [--yield]]
                 [--pml ob1|ucx] [--nic lossless|droptail] [--burst SIZE] [--stats] [--skip-code] -- COMMAND [ARGS]

The namespaces (with their veths and the bridge) and every process still inside them are
removed on exit, on Ctrl-C, SIGTERM and SIGHUP. Without the privileges to create namespaces
(root: CAP_SYS_ADMIN and CAP_NET_ADMIN) it says so and exits 1 (77 with --skip-code, Meson's "skip").
"""
import argparse
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
AGENT = os.path.join(HERE, "netrun-agent.sh")
SUBNET = "10.77.0"
SWITCH_ADDR = f"{SUBNET}.254"
YIELD = "OMPI_MCA_mpi_yield_when_idle"  # Open MPI: a rank waiting in MPI gives up its CPU
BURST = "256kb"  # --burst's default: tbf's bucket (the module's doc, "The link's burst")
# --nic droptail: the queue of the emulation before the lossless one (rate x 100 ms, tail drop).
DROPTAIL_LATENCY = "100ms"
# --nic lossless: the least queue of a link, and flows counted over the ranks' own (daemons, oob).
LOSSLESS_MIN_BYTES = 64 << 20
LOSSLESS_MAX_BYTES = 1 << 30  # tbf's limit is 32 bits; a GiB of backlog is far beyond any run here
EXTRA_FLOWS = 4
# The TCP counters --stats prints per node: (file, group, counter) -> label.
TCP_COUNTERS = {("snmp", "Tcp", "RetransSegs"): "retrans", ("netstat", "TcpExt", "TCPTimeouts"): "timeouts",
                ("netstat", "TcpExt", "TCPLossProbes"): "loss-probes", ("netstat", "TcpExt", "TCPSynRetrans"): "syn-retrans"}
MTU = "9000"
# How long processes left in a namespace get between SIGTERM and SIGKILL when it is removed.
TERM_GRACE_S = 5
NP_OPTIONS = ("-np", "--np", "-n", "--n", "-c")


def run(cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def ucx_environment(device):
    """Open MPI over UCX's TCP transport on `device` (netrun.py --pml ucx)."""
    return {"OMPI_MCA_pml": "ucx", "OMPI_MCA_osc": "ucx", "OMPI_MCA_opal_common_ucx_tls": "any",
            "OMPI_MCA_opal_common_ucx_devices": "any", "UCX_TLS": "tcp,posix,self", "UCX_NET_DEVICES": device}


def node_host(i):
    return f"tnbc-node{i}"


def split_cpus(cpus, k):
    """The CPU list of each of k nodes: contiguous sets of `cpus`, the first ones one larger
    when they do not divide evenly; with more nodes than CPUs, one CPU each, round-robin."""
    cpus = sorted(cpus)
    if k > len(cpus):
        return [[cpus[i % len(cpus)]] for i in range(k)]
    per, extra = divmod(len(cpus), k)
    out, at = [], 0
    for i in range(k):
        n = per + (1 if i < extra else 0)
        out.append(cpus[at:at + n])
        at += n
    return out


def cpu_list(cpus):
    return ",".join(str(c) for c in cpus)


def cpuset_root():
    """(path, version) of a cpuset cgroup hierarchy this process may create groups in, or None."""
    mounts = []
    try:
        with open("/proc/self/mounts") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    for m in mounts:
        if len(m) > 3 and m[2] == "cgroup" and "cpuset" in m[3].split(","):
            if os.access(os.path.join(m[1], "cpuset.cpus"), os.W_OK | os.R_OK):
                return m[1], 1
    for m in mounts:
        if len(m) > 2 and m[2] == "cgroup2":
            try:
                with open(os.path.join(m[1], "cgroup.controllers")) as f:
                    if "cpuset" in f.read().split() and os.access(m[1], os.W_OK):
                        return m[1], 2
            except OSError:
                pass
    return None


class NodeCpus:
    """Each node's CPU set: a cpuset cgroup per node that its daemon joins (netrun-agent.sh),
    or, where none can be made, the CPU list the agent passes to taskset."""

    def __init__(self, prefix, sets):
        self.sets = sets
        self.groups = []
        self.prefix = None  # path prefix of the groups: PREFIX-tnbc-nodeI
        self.how = "taskset (affinity only: a thread may set another)"
        root = cpuset_root()
        if root is None:
            return
        path, version = root
        try:
            if version == 2:
                with open(os.path.join(path, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpuset")
            mems = "0"
            for name in ("cpuset.mems.effective", "cpuset.effective_mems", "cpuset.mems"):
                try:
                    with open(os.path.join(path, name)) as f:
                        mems = f.read().strip() or mems
                    break
                except OSError:
                    continue
            for i, cpus in enumerate(sets):
                d = os.path.join(path, f"{prefix}-{node_host(i)}")
                os.mkdir(d)
                self.groups.append(d)
                with open(os.path.join(d, "cpuset.cpus"), "w") as f:
                    f.write(cpu_list(cpus))
                with open(os.path.join(d, "cpuset.mems"), "w") as f:
                    f.write(mems)
            # The agent runs under `ip netns exec`, which mounts a /sys of its own without the
            # cgroup hierarchies: it reaches them through this process's root.
            self.prefix = f"/proc/{os.getpid()}/root" + os.path.join(path, prefix)
            self.how = f"cpuset cgroup v{version}"
        except OSError as e:
            self.remove()
            self.how = f"taskset (affinity only: a thread may set another; no cpuset cgroup: {e})"

    def environment(self):
        env = {"NETRUN_NODE_CPUS": " ".join(f"{node_host(i)}={cpu_list(c)}" for i, c in enumerate(self.sets))}
        if self.prefix:
            env["NETRUN_CPUSET_PREFIX"] = self.prefix
        return env

    def describe(self):
        return "; ".join(f"{node_host(i)} CPUs {cpu_list(c)}" for i, c in enumerate(self.sets)) + f" ({self.how})"

    def remove(self):
        """After every process of the run is gone (Network.close)."""
        for d in reversed(self.groups):
            try:
                os.rmdir(d)
            except OSError as e:
                print(f"netrun: cannot remove the cpuset group {d}: {e}", file=sys.stderr)
        self.groups = []


def tcp_counters(ns):
    """{label: value} of TCP_COUNTERS in namespace ns (since it was made), or None."""
    values = {}
    for name in ("snmp", "netstat"):
        r = run(["ip", "netns", "exec", ns, "cat", f"/proc/net/{name}"], check=False)
        if r.returncode != 0:
            return None
        lines = r.stdout.splitlines()
        for head, vals in zip(lines[::2], lines[1::2]):
            group, keys = head.split(":", 1)
            for key, val in zip(keys.split(), vals.split(":", 1)[1].split()):
                values[(name, group, key)] = int(val)
    return {label: values.get(key, 0) for key, label in TCP_COUNTERS.items()}


class Network:
    """The namespaces of one run; removing it stops what still runs inside them first."""

    def __init__(self, rate, nic="lossless", flows=0, burst=BURST):
        self.prefix = f"tnbc-{os.getpid()}"
        self.rate = rate
        self.nic = nic
        self.burst = burst
        self.flows = flows  # TCP flows that can cross one link in one direction (--nic lossless)
        self.namespaces = []
        self.qdiscs = []  # (label, namespace, device) of every shaped link, for --stats
        self.hosts = []  # (label, namespace) whose TCP counters --stats prints

    def add_namespace(self, name):
        r = run(["ip", "netns", "add", name], check=False)
        if r.returncode != 0:
            raise PermissionError(r.stdout.strip())
        self.namespaces.append(name)

    @staticmethod
    def step(*cmd):
        r = run(list(cmd), check=False)
        if r.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)}: {r.stdout.strip()}")

    def queue(self, ns):
        """The tbf arguments after the rate: its burst and its queue (--nic; the module's doc)."""
        if self.nic == "droptail":
            return ["burst", self.burst, "latency", DROPTAIL_LATENCY]
        r = run(["ip", "netns", "exec", ns, "cat", "/proc/sys/net/ipv4/tcp_wmem"], check=False)
        fields = r.stdout.split()
        wmem = int(fields[2]) if r.returncode == 0 and len(fields) == 3 else 4 << 20
        limit = max(LOSSLESS_MIN_BYTES, (self.flows + EXTRA_FLOWS) * wmem)
        return ["burst", self.burst, "limit", str(min(limit, LOSSLESS_MAX_BYTES))]

    def shape(self, label, ns, dev):
        self.step("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "tbf",
                  "rate", self.rate, *self.queue(ns))
        self.qdiscs.append((label, ns, dev))

    def describe_queue(self):
        if self.nic == "droptail":
            return f"burst {self.burst}, queues rate x {DROPTAIL_LATENCY}, tail drop (--nic droptail)"
        return f"burst {self.burst}, lossless queues (--nic lossless)"

    def stats(self):
        lines = []
        for label, ns, dev in self.qdiscs:
            out = run(["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev], check=False).stdout
            m = re.search(r"qdisc tbf .*?Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", out, re.S)
            b = re.search(r"qdisc tbf .*?burst (\S+)", out)
            if m:
                lines.append(f"netrun: {label:16} tbf sent {m.group(1)} bytes {m.group(2)} pkt "
                             f"(dropped {m.group(3)}, overlimits {m.group(4)}), burst {b.group(1) if b else '?'}")
            else:
                lines.append(f"netrun: {label:16} no tbf statistics: {out.strip()}")
        for label, ns in self.hosts:
            counters = tcp_counters(ns)
            if counters is None:
                lines.append(f"netrun: {label:16} no TCP counters")
            else:
                lines.append(f"netrun: {label:16} tcp " + " ".join(f"{k} {v}" for k, v in counters.items()))
        return "\n".join(lines)

    @staticmethod
    def pids(ns):
        out = run(["ip", "netns", "pids", ns], check=False).stdout
        return [int(p) for p in out.split() if p.isdigit()]

    def kill_all(self, sig):
        for ns in self.namespaces:
            for pid in self.pids(ns):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass

    def wait_empty(self, seconds):
        deadline = time.monotonic() + seconds
        while any(self.pids(ns) for ns in self.namespaces):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def close(self):
        # Daemonized orteds are no children of ours: whatever still runs inside a namespace
        # would keep it (and its veth) alive after `ip netns del`.
        self.kill_all(signal.SIGTERM)
        if not self.wait_empty(TERM_GRACE_S):
            self.kill_all(signal.SIGKILL)
            self.wait_empty(TERM_GRACE_S)
        for ns in reversed(self.namespaces):
            run(["ip", "netns", "del", ns], check=False)
        self.namespaces = []


class SingleNode(Network):
    """One namespace with a shaped loopback; the command runs in it."""

    def build(self):
        self.head = self.prefix
        self.add_namespace(self.head)
        self.step("ip", "-n", self.head, "link", "set", "lo", "mtu", MTU, "up")
        self.shape("lo", self.head, "lo")
        self.hosts.append(("node", self.head))

    def environment(self):
        return {"OMPI_MCA_btl": "tcp,self", "OMPI_MCA_btl_tcp_if_include": "lo",
                "OMPI_MCA_oob_tcp_if_include": "lo"}

    def describe(self):
        return f"one node, loopback shaped to {self.rate}, {self.describe_queue()}"


class Nodes(Network):
    """K node namespaces joined by veth pairs to a bridge in a switch namespace (the head,
    where mpirun runs); each node's link shaped in both directions."""

    def __init__(self, rate, k, slots, intra, tmpdir, node_cpus="split", nic="lossless", yield_crowded=False,
                 burst=BURST):
        # Out of (into) a node: each of its ranks to (from) each rank of the other nodes.
        super().__init__(rate, nic, slots * slots * (k - 1), burst)
        self.k, self.slots, self.intra, self.tmpdir = k, slots, intra, tmpdir
        self.yield_crowded = yield_crowded
        self.node_cpus = node_cpus
        self.cpus = None  # NodeCpus with --node-cpus split

    def build(self):
        self.head = f"{self.prefix}-switch"
        self.add_namespace(self.head)
        self.step("ip", "-n", self.head, "link", "set", "lo", "up")
        self.step("ip", "-n", self.head, "link", "add", "br0", "mtu", MTU, "type", "bridge")
        self.step("ip", "-n", self.head, "addr", "add", f"{SWITCH_ADDR}/24", "dev", "br0")
        self.step("ip", "-n", self.head, "link", "set", "br0", "up")
        for i in range(self.k):
            ns, port = f"{self.prefix}-{node_host(i)}", f"node{i}"
            self.add_namespace(ns)
            # Both ends are created inside their namespaces: nothing appears in the root one.
            self.step("ip", "link", "add", "eth0", "netns", ns, "mtu", MTU, "type", "veth",
                      "peer", "name", port, "netns", self.head, "mtu", MTU)
            self.step("ip", "-n", self.head, "link", "set", port, "master", "br0", "up")
            self.step("ip", "-n", ns, "addr", "add", f"{SUBNET}.{i + 1}/24", "dev", "eth0")
            self.step("ip", "-n", ns, "link", "set", "eth0", "up")
            self.step("ip", "-n", ns, "link", "set", "lo", "up")
            self.shape(f"node{i} egress", ns, "eth0")
            self.shape(f"node{i} ingress", self.head, port)
            self.hosts.append((f"node{i}", ns))
        if self.node_cpus == "split":
            self.cpus = NodeCpus(self.prefix, split_cpus(os.sched_getaffinity(0), self.k))
        self.hostfile = os.path.join(self.tmpdir, "hostfile")
        with open(self.hostfile, "w") as f:
            f.writelines(f"{node_host(i)} slots={self.slots}\n" for i in range(self.k))

    def yields(self):
        """With --yield: true where a node's ranks outnumber its CPUs (--node-cpus split: the
        node's own share; shared: every node's ranks on all the CPUs) and the caller did not set
        Open MPI's mpi_yield_when_idle itself (an `--mca` on mpirun's command line wins over both)."""
        if not self.yield_crowded or YIELD in os.environ:
            return False
        if self.cpus:
            return self.slots > min(len(s) for s in self.cpus.sets)
        return self.slots * self.k > len(os.sched_getaffinity(0))

    def environment(self):
        # --yield: ranks waiting in MPI give up their CPU on a crowded node (the docstring).
        return {**({YIELD: "1"} if self.yields() else {}),
                "OMPI_MCA_btl": "vader,tcp,self" if self.intra == "vader" else "tcp,self",
                "OMPI_MCA_btl_tcp_if_include": f"{SUBNET}.0/24",
                "OMPI_MCA_oob_tcp_if_include": f"{SUBNET}.0/24",
                "OMPI_MCA_orte_default_hostfile": self.hostfile,
                "OMPI_MCA_rmaps_base_mapping_policy": "slot",
                "OMPI_MCA_plm_rsh_agent": AGENT,
                "OMPI_MCA_plm_rsh_no_tree_spawn": "1",
                "NETRUN_NS_PREFIX": self.prefix,
                **(self.cpus.environment() if self.cpus else {})}

    def describe(self):
        cpus = self.cpus.describe() if self.cpus else "every node on every CPU (--node-cpus shared)"
        shared = self.cpus and self.k > len(os.sched_getaffinity(0))
        return (f"{self.k} nodes x {self.slots} slots (ranks block-wise), links shaped to {self.rate}, "
                f"{self.describe_queue()}, intra-node {self.intra}; {cpus}" + ("; more nodes than CPUs: nodes share CPUs" if shared else "")
                + ("; more ranks than CPUs on a node: ranks yield while waiting (mpi_yield_when_idle)" if self.yields() else ""))

    def close(self):
        super().close()
        if self.cpus:
            self.cpus.remove()


def burst_bytes(size):
    """A tbf burst as tc reads it (40000, 32kb, 32k, 1mb; tc's kb and mb are 1024 and 1024 x 1024
    bytes) in bytes, or None where it is not one of those."""
    m = re.fullmatch(r"(\d+)(b|kb?|mb?)?", size.strip().lower())
    if not m:
        return None
    return int(m.group(1)) * {None: 1, "b": 1, "k": 1024, "kb": 1024, "m": 1 << 20, "mb": 1 << 20}[m.group(2)]


def command_np(cmd):
    """The process count of an mpirun command line (-np N, -n N, --np=N), or None."""
    for i, tok in enumerate(cmd):
        name, _, value = tok.partition("=")
        if name in NP_OPTIONS:
            value = value or (cmd[i + 1] if i + 1 < len(cmd) else "")
            if value.isdigit():
                return int(value)
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="4gbit", help="link rate for tc tbf (default 4gbit)")
    ap.add_argument("--nodes", type=int, default=1, help="number of emulated nodes K (default 1)")
    ap.add_argument("--ranks-per-node", type=int, default=None,
                    help="slots per node M (default: ceil(np / K) with np from the command)")
    ap.add_argument("--intra", choices=("vader", "tcp"), default="vader",
                    help="transport between ranks of one node with --nodes (default vader)")
    ap.add_argument("--node-cpus", choices=("split", "shared"), default="split",
                    help="with --nodes: each node its own share of the CPUs (split, default) or all of them (shared)")
    ap.add_argument("--pml", choices=("ob1", "ucx"), default="ob1",
                    help="Open MPI's messaging: ob1 with btl tcp (default) or UCX over TCP (usable RMA)")
    ap.add_argument("--nic", choices=("lossless", "droptail"), default="lossless",
                    help="the links' queues: lossless (default: never drop) or droptail (rate x 100 ms, the emulation "
                         "before; drops when full)")
    ap.add_argument("--burst", default=BURST,
                    help=f"tbf's bucket (default {BURST}): what a link passes at the loopback's speed after an idle "
                         "gap; a NIC has none: a few frames (at least the MTU, 9000 bytes; 32kb) emulate one without "
                         "that credit")
    ap.add_argument("--yield", dest="yield_crowded", action="store_true",
                    help="with --nodes: ranks waiting in MPI yield their CPU on a node with more ranks than CPUs "
                         "(OMPI_MCA_mpi_yield_when_idle=1; default: they spin, a slot per rank)")
    ap.add_argument("--stats", action="store_true",
                    help="print the queues' statistics (bytes, drops) and each node's TCP counters at the end")
    ap.add_argument("--skip-code", action="store_true", help="exit 77 when namespaces are not allowed")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if not cmd:
        ap.error("no command given")
    if a.nodes < 1 or (a.ranks_per_node is not None and a.ranks_per_node < 1):
        ap.error("--nodes and --ranks-per-node must be at least 1")
    burst = burst_bytes(a.burst)
    if burst is None or burst <= int(MTU):
        ap.error(f"--burst {a.burst}: a size in bytes above the MTU ({MTU}), as tc writes it (32kb, 1mb, 40000): a "
                 "bucket smaller than a frame stalls TCP")
    tools = ("ip", "tc") if a.nodes == 1 else ("ip", "tc", "unshare")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        print(f"netrun: {', '.join(missing)} not found (Debian packages iproute2, util-linux)", file=sys.stderr)
        sys.exit(SKIP if a.skip_code else 1)
    if a.nodes > 1:
        np = command_np(cmd)
        slots = a.ranks_per_node or (-(-np // a.nodes) if np else None)
        if not slots:
            ap.error("--nodes needs the process count: give mpirun -np N in the command or --ranks-per-node M")
        if socket.gethostname() in [node_host(i) for i in range(a.nodes)]:
            ap.error(f"this machine is called {socket.gethostname()}, a name of an emulated node")
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    # No single-copy (CMA) reads into pages that tnbc may guard.
    env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
    child = None

    def stop(_sig, _frame):
        raise KeyboardInterrupt  # handled like Ctrl-C below

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    code = 1
    with tempfile.TemporaryDirectory(prefix="netrun-") as tmpdir:
        if a.nodes == 1:
            np = command_np(cmd) or 0
            net = SingleNode(a.rate, a.nic, np * (np - 1), a.burst)  # every pair, both directions, through lo
        else:
            net = Nodes(a.rate, a.nodes, slots, a.intra, tmpdir, a.node_cpus, a.nic, a.yield_crowded, a.burst)
        try:
            net.build()
            env.update(net.environment())
            if a.pml == "ucx":
                env.update(ucx_environment("lo" if a.nodes == 1 else "eth0"))
            print(f"netrun: {net.describe()}, pml {a.pml}; namespaces {' '.join(net.namespaces)}", file=sys.stderr, flush=True)
            child = subprocess.Popen(["ip", "netns", "exec", net.head] + cmd, env=env, start_new_session=True)
            code = child.wait()
        except KeyboardInterrupt:
            if child and child.poll() is None:
                os.killpg(child.pid, signal.SIGTERM)
                try:
                    child.wait(timeout=TERM_GRACE_S)
                except subprocess.TimeoutExpired:
                    os.killpg(child.pid, signal.SIGKILL)
            code = 130
        except PermissionError as e:
            print(f"netrun: cannot create a network namespace ({e}); "
                  "this needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)", file=sys.stderr)
            code = SKIP if a.skip_code else 1
        except RuntimeError as e:
            print(f"netrun: cannot build the emulated network: {e}", file=sys.stderr)
            code = SKIP if a.skip_code else 1
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(sig, signal.SIG_IGN)  # the clean-up must not be interrupted
            if a.stats and net.qdiscs:
                print(net.stats(), file=sys.stderr)
            net.close()
    sys.exit(code)


if __name__ == "__main__":
    main()
