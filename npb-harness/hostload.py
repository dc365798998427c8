"""What the machine did during a run besides the run (summary.json `host`, docs/harness.md).

A run's processes are started in a cgroup of the harness's own in the cgroup v1 `cpuacct`
hierarchy (every process the launcher, netrun and the MPI daemons fork stays in it, whatever
namespace it enters, and netrun's cpuset groups for its nodes are another hierarchy there; under
cgroup v2 alone netrun would move the daemons out of it, so v2 is not used),
so the CPU time the run used is read from the group; the machine's busy CPU time over the same
interval comes from /proc/stat. Their difference is the CPU time other processes, the kernel's own
threads and the hypervisor (steal) took during the run: a run that shared the machine shows it.
Without a cgroup to write (not root, no cpuacct hierarchy) the run's share is unknown and
only the machine's busy and steal time is recorded.
"""
import os

import speedups  # the one median of the harness

def _mount_point():
    """Where the cgroup v1 hierarchy with the `cpuacct` controller is mounted, or None."""
    try:
        with open("/proc/mounts") as f:
            mounts = [line.split() for line in f]
    except OSError:
        return None
    for m in mounts:
        if len(m) > 3 and m[2] == "cgroup" and "cpuacct" in m[3].split(","):
            return m[1]
    return None


class HostLoad:
    """Counts the CPU time of the runs started with `preexec` and of the machine around them."""

    def __init__(self):
        self.group = None
        root = _mount_point()
        if root is None:
            return
        path = os.path.join(root, f"tnbc-harness-{os.getpid()}")
        try:
            os.makedirs(path, exist_ok=True)
            # The harness itself is not in the group: only what a run starts.
            self.group = path
            self.run_cpu()
        except OSError:
            self.group = None

    def preexec(self):
        """Puts the calling process (a run's first process, before it execs) into the group."""
        if self.group:
            try:
                with open(os.path.join(self.group, "cgroup.procs"), "w") as f:
                    f.write("0")
            except OSError:
                pass  # the run is then not counted; the figures say so (run_cpu_s None)

    def run_cpu(self):
        """CPU seconds of every process that ran in the group so far."""
        with open(os.path.join(self.group, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def sample(self):
        """(machine busy s, steal s, run s or None) so far; None without /proc/stat."""
        try:
            with open("/proc/stat") as f:
                ticks = [int(x) for x in f.readline().split()[1:9]]
        except (OSError, ValueError):
            return None
        hz = os.sysconf("SC_CLK_TCK")
        user, nice, system, _idle, _iowait, irq, softirq, steal = (t / hz for t in ticks)
        run = None
        if self.group:
            try:
                run = self.run_cpu()
            except (OSError, ValueError):
                run = None
        return user + nice + system + irq + softirq + steal, steal, run

    @staticmethod
    def between(before, after):
        """{busy_cpu_s, run_cpu_s, other_cpu_s, steal_s} of the interval (None where unknown)."""
        if before is None or after is None:
            return None
        busy, steal = after[0] - before[0], after[1] - before[1]
        run = after[2] - before[2] if before[2] is not None and after[2] is not None else None
        return {"busy_cpu_s": round(busy, 3), "run_cpu_s": None if run is None else round(run, 3),
                "other_cpu_s": None if run is None else round(max(0.0, busy - run), 3), "steal_s": round(steal, 3)}

    def close(self):
        if self.group:
            try:
                os.rmdir(self.group)
            except OSError:
                pass


# A run's steal is a disturbance where it is this many times the campaign's usual share (a
# machine whose hypervisor always takes a few % would otherwise have every run measured again).
STEAL_OUTLIER = 3.0


def steal_share(host, wall_s, cpus):
    """The share of the machine's CPU time (`cpus` x the run's `wall_s`) the hypervisor took during
    a run (steal: the time a virtual CPU was ready but not run); None where unknown (no /proc/stat)."""
    if not host or host.get("steal_s") is None or wall_s <= 0 or cpus <= 0:
        return None
    return host["steal_s"] / (wall_s * cpus)


# A run during which other work (other processes, kernel threads, the hypervisor's steal) took
# more than this share of the machine's CPU time is named as having shared the machine. Beside an
# NPB run on emulated links a quiet 2-vCPU guest measured 0.8 % (median; one rank per CPU) and
# 2.2 % (4 ranks on 2 CPUs), at most 4.5 % (docs/harness.md).
OTHER_SHARE_NOTE = 0.05


def shared(host, wall_s, cpus, share=OTHER_SHARE_NOTE):
    """Whether other work took more than `share` of the machine's CPU time (`cpus` x the run's
    `wall_s`) during a run. Unknown (no cgroup, no /proc/stat): False."""
    if not host or host.get("other_cpu_s") is None or wall_s <= 0 or cpus <= 0:
        return False
    return host["other_cpu_s"] > share * wall_s * cpus


def stolen(host, wall_s, cpus, limit_pct, usual_share=0.0):
    """Whether the hypervisor took more than `limit_pct` % of the machine's CPU time during a run,
    and more than STEAL_OUTLIER times the `usual_share` of the campaign's runs. Unknown: False."""
    share = steal_share(host, wall_s, cpus)
    return share is not None and share > limit_pct / 100 and share > STEAL_OUTLIER * usual_share


def usual_steal_share(shares, at_least=3):
    """The median of the kept runs' steal shares (None ignored), 0 before `at_least` of them."""
    known = [s for s in shares if s is not None]
    return speedups.median(known) if len(known) >= at_least else 0.0


def run_until_undisturbed(run_once, disturbed, retries, on_retry):
    """run_once() again while disturbed(its result) and fewer than `retries` runs were repeated:
    (the last result, the results of the repeated runs). on_retry(result) is called before each
    repeat (to say why and to clear what the run left). The last run is kept even when it was
    disturbed too: a run's files on disk are always the kept result's."""
    discarded = []
    while True:
        result = run_once()
        if len(discarded) >= retries or not disturbed(result):
            return result, discarded
        discarded.append(result)
        on_retry(result)


# Linux hands free memory back to the hypervisor of a virtual machine with virtio-balloon's free page
# reporting: free blocks of this order and above, about 2 s after they were freed. The next
# allocation of that memory then waits while the hypervisor backs it again, which the guest sees as
# steal (this VM: ~1.4 GiB reported within 5 s of a `tnbc calibrate`, then 0.1-0.3 s of steal every
# ~2.2 s in the runs after it; docs/benchmarks.md, "Session 26"). Above the kernel's largest order no
# block qualifies: reporting is off.
PAGE_REPORTING_ORDER = "/sys/module/page_reporting/parameters/page_reporting_order"
BALLOON_DRIVER = "/sys/bus/virtio/drivers/virtio_balloon"
LARGEST_PAGE_ORDER = 10  # MAX_PAGE_ORDER of x86-64 and arm64 kernels with their default configuration


def free_page_reporting():
    """The page order from which this machine reports free memory to its hypervisor, or None where
    it does not (no virtio-balloon device bound, no page reporting in the kernel, or switched off)."""
    try:
        bound = any(os.path.islink(os.path.join(BALLOON_DRIVER, d)) and d.startswith("virtio")
                    for d in os.listdir(BALLOON_DRIVER))
        with open(PAGE_REPORTING_ORDER) as f:
            order = int(f.read().strip())
    except (OSError, ValueError):
        return None
    return order if bound and order <= LARGEST_PAGE_ORDER else None
