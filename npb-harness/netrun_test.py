#!/usr/bin/env python3
"""Test of netrun.py: a 2-rank is-proxy under the shaped link must verify, its traffic must
have gone through the qdisc, and no namespace may be left behind. Skips (77) where the machine
does not allow network namespaces.

usage: netrun_test.py NETRUN IS_PROXY LIBTNBC
"""
import os
import re
import subprocess
import sys

netrun, is_proxy, lib = sys.argv[1:4]
before = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
cmd = [sys.executable, netrun, "--stats", "--skip-code", "--", "mpirun", "--oversubscribe", "-np", "2",
       "-x", f"LD_PRELOAD={lib}", is_proxy, "S", "3"]
r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
print(r.stdout)
if r.returncode == 77:
    print("SKIP: network namespaces are not allowed here")
    sys.exit(77)
if r.returncode != 0:
    print(f"FAIL: exit status {r.returncode}")
    sys.exit(1)
if "Verification    =               SUCCESSFUL" not in r.stdout:
    print("FAIL: is-proxy did not verify")
    sys.exit(1)
m = re.search(r"qdisc tbf .*?Sent (\d+) bytes", r.stdout, re.S)
if not m or int(m.group(1)) < 100000:
    print("FAIL: the traffic did not go through the shaped loopback")
    sys.exit(1)
after = subprocess.run(["ip", "netns", "list"], stdout=subprocess.PIPE, text=True).stdout
if len(after.splitlines()) > len(before.splitlines()):
    print(f"FAIL: a namespace was left behind:\n{after}")
    sys.exit(1)
print(f"PASS: {m.group(1)} bytes through the shaped link")
