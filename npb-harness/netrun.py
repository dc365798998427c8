#!/usr/bin/env python3
"""Runs a command (usually `mpirun ...`) on an emulated cluster link.

The whole command runs in a private network namespace whose loopback is shaped like a NIC:
`mtu 9000` and `tc qdisc add dev lo root tbf rate RATE burst 256kb latency 100ms` (a burst
below the MTU stalls TCP). Open MPI is restricted to TCP over that loopback
(OMPI_MCA_btl=tcp,self, btl/oob_tcp_if_include=lo), so the ranks of this one machine share
one shaped "NIC", like M processes of a cluster node (the T-NBC paper, section 5.2.2).

usage: netrun.py [--rate 4gbit] [--stats] [--skip-code] -- COMMAND [ARGS]

The namespace is removed on exit, on Ctrl-C and on SIGTERM. Without the privileges to create
namespaces (root or CAP_NET_ADMIN) it says so and exits 1 (77 with --skip-code, Meson's "skip").
"""
import argparse
import os
import shutil
import signal
import subprocess
import sys

SKIP = 77


def run(cmd, check=True):
    return subprocess.run(cmd, check=check, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


class Namespace:
    def __init__(self, rate):
        self.name = f"tnbc-{os.getpid()}"
        self.rate = rate
        self.created = False

    def __enter__(self):
        r = run(["ip", "netns", "add", self.name], check=False)
        if r.returncode != 0:
            raise PermissionError(r.stdout.strip())
        self.created = True
        steps = [["ip", "-n", self.name, "link", "set", "lo", "mtu", "9000", "up"],
                 ["ip", "netns", "exec", self.name, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
                  "rate", self.rate, "burst", "256kb", "latency", "100ms"]]
        for step in steps:
            r = run(step, check=False)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(step)}: {r.stdout.strip()}")
        return self

    def stats(self):
        return run(["ip", "netns", "exec", self.name, "tc", "-s", "qdisc", "show", "dev", "lo"], check=False).stdout

    def __exit__(self, *exc):
        if self.created:
            run(["ip", "netns", "del", self.name], check=False)
            self.created = False


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rate", default="4gbit", help="link rate for tc tbf (default 4gbit)")
    ap.add_argument("--stats", action="store_true", help="print the qdisc statistics at the end")
    ap.add_argument("--skip-code", action="store_true", help="exit 77 when namespaces are not allowed")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command and a.command[0] == "--" else a.command
    if not cmd:
        ap.error("no command given")
    missing = [t for t in ("ip", "tc") if shutil.which(t) is None]
    if missing:
        print(f"netrun: {', '.join(missing)} not found (Debian package iproute2)", file=sys.stderr)
        sys.exit(SKIP if a.skip_code else 1)
    env = dict(os.environ)
    env.update({"OMPI_MCA_btl": "tcp,self", "OMPI_MCA_btl_tcp_if_include": "lo",
                "OMPI_MCA_oob_tcp_if_include": "lo", "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    child = None

    def forward(sig, _frame):
        if child and child.poll() is None:
            os.killpg(child.pid, sig)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, forward)
    try:
        with Namespace(a.rate) as ns:
            child = subprocess.Popen(["ip", "netns", "exec", ns.name] + cmd, env=env, start_new_session=True)
            try:
                code = child.wait()
            except KeyboardInterrupt:
                if child.poll() is None:
                    os.killpg(child.pid, signal.SIGTERM)
                    try:
                        child.wait(timeout=10)
                    except subprocess.TimeoutExpired:
                        os.killpg(child.pid, signal.SIGKILL)
                code = 130
            if a.stats:
                print(ns.stats(), file=sys.stderr)
            sys.exit(code)
    except PermissionError as e:
        print(f"netrun: cannot create a network namespace ({e}); this needs root or CAP_NET_ADMIN",
              file=sys.stderr)
        sys.exit(SKIP if a.skip_code else 1)
    except RuntimeError as e:
        print(f"netrun: cannot shape the link: {e}", file=sys.stderr)
        sys.exit(SKIP if a.skip_code else 1)


if __name__ == "__main__":
    main()
