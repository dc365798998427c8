#!/usr/bin/env python3
"""A one-node Slurm cluster on this machine, for tests: munged, slurmctld and slurmd started with
their own key, socket, configuration, state and spool directories and ports (nothing of the
machine's own Slurm or munge is used or touched), the node described as `slurmd -C` sees it,
stopped and removed on exit.

    with OneNodeSlurm() as slurm:
        subprocess.run(["srun", "-n", "2", "hostname"], env=slurm.env())

Raises SlurmUnavailable (with the reason and the daemons' last log lines) when the cluster cannot
be started here: not root (slurmd starts the tasks as their user), a program missing, a daemon
that exits or a node that does not come up.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

PROGRAMS = ("munged", "slurmctld", "slurmd", "srun", "sinfo")
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 15

CONF = """# written by tests/cluster/slurm_cluster.py
ClusterName=tnbctest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={munge_socket}
CredType=cred/munge
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/log/slurmctld.log
SlurmdLogFile={dir}/log/slurmd.log
# No cgroups (containers, machines without a delegated cgroup tree): processes tracked by their
# parent, tasks bound to CPUs with sched_setaffinity (srun --cpu-bind).
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
{node_line} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=tnbc Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
"""


class SlurmUnavailable(Exception):
    pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n=8):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


class OneNodeSlurm:
    def __init__(self):
        self.dir = None
        self.procs = []  # (name, Popen), in start order
        self.node = None
        self.cpus = 0

    # ------------------------------------------------------------------ start
    def __enter__(self):
        try:
            self._start()
        except BaseException:
            self._stop()
            raise
        return self

    def _start(self):
        if os.geteuid() != 0:
            raise SlurmUnavailable("slurmd must run as root (it starts every task as its user)")
        missing = [p for p in PROGRAMS if shutil.which(p) is None]
        if missing:
            raise SlurmUnavailable(f"{', '.join(missing)} not installed (Debian: apt-get install slurm-wlm munge)")
        # Short path: a UNIX socket's path has at most 107 bytes.
        self.dir = tempfile.mkdtemp(prefix="tnbc-slurm-", dir="/tmp")
        for sub in ("munge", "state", "spool", "log"):
            os.makedirs(os.path.join(self.dir, sub))
        os.chmod(self.dir, 0o755)
        os.chmod(os.path.join(self.dir, "munge"), 0o755)  # munged wants its socket's directory reachable
        key = os.path.join(self.dir, "munge.key")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
            f.write(os.urandom(1024))
        self.munge_socket = os.path.join(self.dir, "munge", "munge.socket")
        self._spawn("munged", ["munged", "--foreground", "--force", f"--socket={self.munge_socket}",
                               f"--key-file={key}", f"--pid-file={self.dir}/munge/munged.pid",
                               f"--seed-file={self.dir}/munge/munged.seed", f"--log-file={self.dir}/log/munged.log"])
        self._wait(lambda: os.path.exists(self.munge_socket), "munged did not create its socket")

        # The node as slurmd sees this machine: "NodeName=vm CPUs=2 Boards=1 ... RealMemory=24105".
        probe = subprocess.run(["slurmd", "-C"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               timeout=60)
        node_line = next((l for l in probe.stdout.splitlines() if l.startswith("NodeName=")), None)
        if probe.returncode != 0 or node_line is None:
            raise SlurmUnavailable(f"slurmd -C did not describe this machine: {probe.stdout.strip()[:300]}")
        self.node = re.search(r"NodeName=(\S+)", node_line).group(1)
        self.cpus = int(re.search(r"CPUs=(\d+)", node_line).group(1))
        self.conf = os.path.join(self.dir, "slurm.conf")
        with open(self.conf, "w") as f:
            f.write(CONF.format(node=self.node, node_line=node_line, dir=self.dir, munge_socket=self.munge_socket,
                                ctld_port=free_port(), slurmd_port=free_port()))
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", self.node])
        self._wait(self._node_idle, f"node {self.node} did not become idle")

    def _spawn(self, name, cmd):
        out = open(os.path.join(self.dir, "log", name + ".out"), "w")
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             env=self.env(), start_new_session=True)
        out.close()
        self.procs.append((name, p))

    def _wait(self, ready, what):
        deadline = time.time() + START_TIMEOUT_S
        while time.time() < deadline:
            for name, p in self.procs:
                if p.poll() is not None:
                    raise SlurmUnavailable(f"{name} exited with status {p.returncode}:\n{self.logs()}")
            if ready():
                return
            time.sleep(0.3)
        raise SlurmUnavailable(f"{what} within {START_TIMEOUT_S} s:\n{self.logs()}")

    def _node_idle(self):
        r = subprocess.run(["sinfo", "-h", "-n", self.node, "-o", "%T"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True, env=self.env(), timeout=30)
        return r.returncode == 0 and r.stdout.strip() == "idle"

    # ------------------------------------------------------------------ use
    def env(self, base=None):
        """The environment for srun and friends: this cluster's configuration."""
        env = dict(os.environ if base is None else base)
        if self.dir:
            env["SLURM_CONF"] = os.path.join(self.dir, "slurm.conf")
        return env

    def logs(self):
        if not self.dir:
            return ""
        return "".join(f"--- {name}:\n{tail(os.path.join(self.dir, 'log', name))}"
                       for name in ("munged.out", "munged.log", "slurmctld.out", "slurmctld.log", "slurmd.out",
                                    "slurmd.log"))

    # ------------------------------------------------------------------ stop
    def __exit__(self, *exc):
        self._stop()
        return False

    def _stop(self):
        # The last started first: slurmd (and its steps), slurmctld, munged.
        for name, p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=STOP_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
        self.procs = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
