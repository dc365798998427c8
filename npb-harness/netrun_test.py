#!/usr/bin/env python3
"""Test of netrun.py. Skips (77) where the machine does not allow network namespaces.

One node (default): a 2-rank is-proxy under the shaped loopback must verify and its traffic
must have gone through the qdisc, whose bucket is netrun's 256kb, or with --burst 32kb that one
(a bucket below the MTU refused).
--nodes K: a 4-rank is-proxy on K emulated nodes must verify with its traffic through every
node's shaped link (both directions); with all ranks on node 0 (almost) nothing may cross its
link; an incast (2 ranks per node, 4 flows into each queue, at a rate any CPU outruns) must see
no queue drop with the lossless queues (the old tail-drop queue, run as the control, drops);
ranks must be placed block-wise (host name tnbc-nodeI from the agent); SIGTERM and SIGINT
during a run must end it and remove everything; without privileges netrun must say so (exit 1,
77 with --skip-code).
Every run must leave no namespace, no process inside one, and no veth or bridge behind.

usage: netrun_test.py NETRUN IS_PROXY LIBTNBC [--nodes K]
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
NP = 4
RUN_TIMEOUT_S = 240
# lossless_queue: a link every machine outruns (the old queue: rate x 100 ms = 1.25 MB).
INCAST_RATE = "100mbit"
STOP_TIMEOUT_S = 60

ap = argparse.ArgumentParser()
ap.add_argument("netrun")
ap.add_argument("is_proxy")
ap.add_argument("lib")
ap.add_argument("--nodes", type=int, default=1)
a = ap.parse_args()
a.netrun = os.path.abspath(a.netrun)
sys.path.insert(0, os.path.dirname(a.netrun))
import netrun as netrun_module  # noqa: E402 (the module under test: its reading of tc's sizes)


def fail(msg, output=""):
    print(output)
    print(f"FAIL: {msg}")
    sys.exit(1)


def root_links():
    """Veths and bridges of the root namespace (netrun --nodes must create none there)."""
    names = set()
    for kind in ("veth", "bridge"):
        out = subprocess.run(["ip", "-o", "link", "show", "type", kind], stdout=subprocess.PIPE, text=True).stdout
        names |= {line.split(":")[1].strip() for line in out.splitlines()}
    return names


def namespaces_of(output):
    m = re.search(r"netrun: .*; namespaces (.*)", output)
    return m.group(1).split() if m else []


def check_nothing_left(output, links_before):
    names = namespaces_of(output)
    if not names:
        fail("netrun did not name its namespaces", output)
    listed = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
    left = [n for n in names if re.search(rf"^{re.escape(n)}\b", listed, re.M)]
    if left:
        fail(f"namespaces left behind: {left}", output)
    new = root_links() - links_before
    if new:
        fail(f"links left behind in the root namespace: {sorted(new)}", output)
    prefixes = {n.rsplit("-", 1)[0] if n.endswith("-switch") else n for n in names}
    groups = [os.path.join(root, d) for root in cgroup_dirs() for d in os.listdir(root)
              if any(d.startswith(f"{p}-") for p in prefixes)]
    if groups:
        fail(f"cpuset groups left behind: {groups}", output)


def cgroup_dirs():
    """The cgroup hierarchies netrun may make its per-node cpuset groups in."""
    out = []
    with open("/proc/self/mounts") as f:
        for m in (line.split() for line in f):
            if len(m) > 3 and ((m[2] == "cgroup" and "cpuset" in m[3].split(",")) or m[2] == "cgroup2"):
                out.append(m[1])
    return out


def netrun(args, cmd, timeout=RUN_TIMEOUT_S):
    r = subprocess.run([sys.executable, a.netrun, "--stats", "--skip-code"] + args + ["--"] + cmd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    if r.returncode == SKIP:
        print(r.stdout)
        print("SKIP: network namespaces are not allowed here")
        sys.exit(SKIP)
    return r


def sent(output, label):
    m = re.search(rf"netrun: {label}\s+tbf sent (\d+) bytes", output)
    if not m:
        fail(f"no qdisc statistics for {label}", output)
    return int(m.group(1))


def proxy(np):
    return ["mpirun", "--oversubscribe", "-np", str(np), "-x", f"LD_PRELOAD={a.lib}", a.is_proxy, "S", "3"]


def verified(r, what):
    if r.returncode != 0:
        fail(f"{what}: exit status {r.returncode}", r.stdout)
    if "Verification    =               SUCCESSFUL" not in r.stdout:
        fail(f"{what}: is-proxy did not verify", r.stdout)


def test_one_node(links):
    r = netrun([], proxy(2))
    verified(r, "one node")
    check_nothing_left(r.stdout, links)
    lo = sent(r.stdout, "lo")
    if lo < 100000:
        fail(f"only {lo} bytes went through the shaped loopback", r.stdout)
    print(f"PASS: {lo} bytes through the shaped loopback")
    link_burst(r, "256kb")
    # --burst: another bucket (a NIC's few frames), and one a frame does not fit refused.
    r = netrun(["--burst", "32kb"], proxy(2))
    verified(r, "one node, --burst 32kb")
    check_nothing_left(r.stdout, links)
    link_burst(r, "32kb")
    r = netrun(["--burst", "4kb"], ["true"])
    if r.returncode != 2 or "--burst 4kb: a size in bytes above the MTU" not in r.stdout:
        fail(f"--burst 4kb (below the MTU): exit status {r.returncode}, expected 2 and the reason", r.stdout)
    print("PASS: --burst sets the shaped loopback's bucket; below the MTU it is refused")


def link_burst(r, asked):
    """The bucket tc reports for the loopback (--stats; tc keeps it in time units: 32kb reads 32500b)
    within 2 % of the one asked."""
    m = re.search(r"^netrun: lo\s+tbf sent .*, burst (\S+)$", r.stdout, re.M)
    got, want = netrun_module.burst_bytes(m.group(1)) if m else None, netrun_module.burst_bytes(asked)
    if got is None or abs(got - want) > 0.02 * want:
        fail(f"--burst {asked}: the loopback's tbf reports burst {m.group(1) if m else '(none)'}", r.stdout)


def test_nodes(links):
    k = a.nodes
    # --yield (netrun.py): the nodes' ranks outnumber their CPUs here; the bytes are the same, the
    # runs twice as quick.
    r = netrun(["--nodes", str(k), "--yield"], proxy(NP))
    verified(r, f"{k} nodes")
    check_nothing_left(r.stdout, links)
    spread = {f"node{i} {d}": sent(r.stdout, f"node{i} {d}") for i in range(k) for d in ("egress", "ingress")}
    # Every node has ranks (np >= k) and is-proxy sends to every peer: each link carried data.
    low = {q: b for q, b in spread.items() if b < 100000}
    if low:
        fail(f"too little traffic through {low}", r.stdout)
    print(f"PASS: {k} nodes, is-proxy verified; bytes through the shaped links: {spread}")

    # All ranks on node 0: their traffic stays on the node (only the daemons' messages cross).
    r = netrun(["--nodes", str(k), "--ranks-per-node", str(NP), "--yield"], proxy(NP))
    verified(r, "all ranks on node 0")
    check_nothing_left(r.stdout, links)
    alone = sent(r.stdout, "node0 egress")
    if alone * 10 > spread["node0 egress"]:
        fail(f"with all ranks on node 0, {alone} bytes still crossed its link "
             f"({spread['node0 egress']} when spread)", r.stdout)
    print(f"PASS: intra-node traffic stays on the node ({alone} bytes crossed, {spread['node0 egress']} when spread)")

    lossless_queue(links)
    node_cpus(links)
    crowded_yield(links)
    for sig in (signal.SIGTERM, signal.SIGINT):
        stop_during_run(sig, links)
    no_privileges()


def dropped(output):
    """{queue label: packets it dropped} from netrun --stats."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^netrun: (\S+ \S+)\s+tbf sent \d+ bytes \d+ pkt \(dropped (\d+),", output, re.M)}


def tcp_counter(output, name):
    """A TCP counter of netrun --stats, summed over the nodes."""
    return sum(int(v) for v in re.findall(rf"^netrun: node\d+\s+tcp .*\b{name} (\d+)", output, re.M))


def lossless_queue(links):
    """Incast: 2 ranks per node exchange with the 2 of the other node (4 TCP flows into each
    queue) at a rate any CPU outruns (INCAST_RATE), so the queues fill. The lossless queue
    (--nic lossless, default) must drop nothing; the old one (--nic droptail, rate x 100 ms)
    is run as the control and drops here (said, not required: a very slow machine may not fill it)."""
    cmd = ["mpirun", "--oversubscribe", "-np", str(NP), a.is_proxy, "A", "2"]  # the network alone: no tnbc
    got = {}
    for nic in ("lossless", "droptail"):
        r = netrun(["--nodes", str(a.nodes), "--rate", INCAST_RATE, "--nic", nic], cmd)
        verified(r, f"incast at {INCAST_RATE}, --nic {nic}")
        check_nothing_left(r.stdout, links)
        drops = dropped(r.stdout)
        if len(drops) != 2 * a.nodes:
            fail(f"--nic {nic}: no drop count for every queue: {drops}", r.stdout)
        got[nic] = (sum(drops.values()), tcp_counter(r.stdout, "timeouts"), tcp_counter(r.stdout, "retrans"))
        if nic == "lossless" and got[nic][0]:
            fail(f"--nic lossless dropped packets: {drops}", r.stdout)
    (_, timeouts, retrans), (old_drops, old_timeouts, old_retrans) = got["lossless"], got["droptail"]
    print(f"PASS: incast at {INCAST_RATE}: lossless queues dropped 0 packets (TCP timeouts {timeouts}, "
          f"retransmitted segments {retrans}); the old droptail queues dropped {old_drops} (timeouts {old_timeouts}, "
          f"retransmitted {old_retrans})" + ("" if old_drops else " -- note: the control did not fill its queues here"))


def cpus_of(text):
    """A CPU list like 0-2,5 as a set."""
    out = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def node_cpus(links):
    """--node-cpus split (default): each node's ranks run on their node's share of the CPUs and
    cannot leave it by setting their own affinity; shared: every rank may use every CPU."""
    allowed = sorted(os.sched_getaffinity(0))
    k = a.nodes
    cpus = 'sed -n "s/^Cpus_allowed_list:\\s*//p" /proc/self/status'
    show = (f'before=$({cpus}); taskset -p -c 0-1023 $$ >/dev/null 2>&1; '
            f'echo "rank $OMPI_COMM_WORLD_RANK cpus $before after $({cpus})"')
    for mode in ("split", "shared"):
        r = netrun(["--nodes", str(k), "--node-cpus", mode], ["mpirun", "--oversubscribe", "--bind-to", "none",
                                                              "-np", str(NP), "sh", "-c", show])
        if r.returncode != 0:
            fail(f"--node-cpus {mode}: exit status {r.returncode}", r.stdout)
        check_nothing_left(r.stdout, links)
        cgroup = "cpuset cgroup" in r.stdout
        found = re.findall(r"^rank (\d+) cpus (\S+) after (\S+)", r.stdout, re.M)
        seen = {int(rank): cpus_of(c) for rank, c, _ in found}
        # In a cpuset cgroup a rank cannot widen its own affinity (taskset -p); under taskset it can.
        if mode == "split" and cgroup and any(cpus_of(c) != cpus_of(after) for _, c, after in found):
            fail("--node-cpus split: a rank left its node's CPUs by setting its affinity", r.stdout)
        if len(seen) != NP:
            fail(f"--node-cpus {mode}: not every rank said its CPUs", r.stdout)
        per_node = -(-NP // k)
        for rank, cpus in seen.items():
            node = rank // per_node
            if mode == "shared" or k > len(allowed):
                want = set(allowed) if mode == "shared" else {allowed[node % len(allowed)]}
            else:
                size, extra = divmod(len(allowed), k)
                start = node * size + min(node, extra)
                want = set(allowed[start:start + size + (1 if node < extra else 0)])
            if cpus != want:
                fail(f"--node-cpus {mode}: rank {rank} (node {node}) may run on CPUs {sorted(cpus)}, "
                     f"not {sorted(want)}", r.stdout)
        if mode == "split" and not cgroup:
            print("note: no cpuset cgroup here (taskset): a rank could set another affinity")
        print(f"PASS: --node-cpus {mode}: each rank's CPUs {dict(sorted(seen.items()))}")


def crowded_yield(links):
    """--yield: on nodes with more ranks than CPUs the ranks get OMPI_MCA_mpi_yield_when_idle=1;
    without it (the default), or where every rank has a CPU, they do not."""
    if "OMPI_MCA_mpi_yield_when_idle" in os.environ:
        print("note: OMPI_MCA_mpi_yield_when_idle is set here: netrun leaves it alone, --yield not checked")
        return
    allowed, k = len(os.sched_getaffinity(0)), a.nodes
    crowded = -(-NP // k) > max(1, allowed // k)
    show = 'echo "rank $OMPI_COMM_WORLD_RANK yield ${OMPI_MCA_mpi_yield_when_idle:-unset}"'
    for flag in ([], ["--yield"]):
        r = netrun(["--nodes", str(k)] + flag, ["mpirun", "--oversubscribe", "-np", str(NP), "sh", "-c", show])
        if r.returncode != 0:
            fail(f"netrun {' '.join(flag)}: exit status {r.returncode}", r.stdout)
        check_nothing_left(r.stdout, links)
        seen = dict(re.findall(r"^rank (\d+) yield (\S+)", r.stdout, re.M))
        want = "1" if flag and crowded else "unset"
        if len(seen) != NP or set(seen.values()) != {want}:
            fail(f"netrun {' '.join(flag) or '(default)'}: the ranks' mpi_yield_when_idle {seen}, expected {want} "
                 f"({-(-NP // k)} ranks per node, {allowed} CPUs)", r.stdout)
    print(f"PASS: --yield: ranks yield on crowded nodes ({'yes' if crowded else 'none crowded here'}), not by default")


def stop_during_run(sig, links):
    """Block-wise placement, then `sig` to netrun while the ranks sleep on their nodes."""
    token = str(7000 + os.getpid() % 1000)  # the ranks' `sleep` argument, to find leftovers
    cmd = [sys.executable, a.netrun, "--nodes", str(a.nodes), "--", "mpirun", "--oversubscribe", "-np", str(NP),
           "sh", "-c", f'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"; exec sleep {token}']
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while sum(line.startswith("rank ") for line in lines) < NP:
        line = p.stdout.readline()
        if not line or time.monotonic() > deadline:
            p.kill()
            fail("the ranks did not start", "".join(lines))
        lines.append(line)
    output = "".join(lines)
    per_node = -(-NP // a.nodes)
    for rank, host in re.findall(r"^rank (\d+) on (\S+)", output, re.M):
        if host != f"tnbc-node{int(rank) // per_node}":
            p.kill()
            fail(f"rank {rank} runs on {host}, not block-wise", output)
    time.sleep(1)  # let the ranks reach their sleep
    p.send_signal(sig)
    try:
        rest, _ = p.communicate(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"netrun did not end within {STOP_TIMEOUT_S} s of {sig.name}", output)
    output += rest
    if p.returncode == 0:
        fail(f"netrun exited 0 after {sig.name}", output)
    check_nothing_left(output, links)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[:2] == [b"sleep", token.encode()]:
                    fail(f"a rank (pid {pid}) survived {sig.name}", output)
        except OSError:
            pass
    print(f"PASS: ranks placed block-wise; {sig.name} ended the run (exit {p.returncode}) and removed everything")


def no_privileges():
    """Without CAP_SYS_ADMIN and CAP_NET_ADMIN netrun cannot create namespaces: a clear message,
    exit 1 (77 with --skip-code)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        print("note: not root or no setpriv: the missing-privileges case is not tested")
        return
    drop = ["setpriv", "--bounding-set=-net_admin,-sys_admin"]
    for extra, want in (([], 1), (["--skip-code"], SKIP)):
        r = subprocess.run(drop + [sys.executable, a.netrun, "--nodes", str(a.nodes)] + extra +
                           ["--", "mpirun", "-np", str(NP), "true"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
        if r.returncode != want or "this needs root" not in r.stdout:
            fail(f"without privileges: exit {r.returncode} (want {want}) and no clear message", r.stdout)
    print("PASS: without privileges netrun says so (exit 1, 77 with --skip-code)")


links_before = root_links()
if a.nodes == 1:
    test_one_node(links_before)
else:
    test_nodes(links_before)
