#!/usr/bin/env python3
"""`tnbc predict --profile` (docs/predict.md) on synthetic profiles and machine files with known
numbers: the SimGrid simulation against what the platform must give, and bad input.

usage: predict_test.py --tool TNBC (physics | variants | bad-input | report)

physics    a blocking Alltoall between two nodes of 1 Gb/s takes the bytes over the link (within
           10%); a broadcast's blocking time grows with the tree; tnbc's time in the call is a
           small part of the blocking time for 1 MiB blocks, and holds the machine's hand-over
           once per call; 4 ranks on a node of 2 cores take
           twice their CURC (the cores are shared), and a trace taken so (--traced-ranks-per-node)
           gives back the measured time; 2 ranks per node that busy-poll on 1 core (platform
           slice) exchange through shared memory a fragment per two slices, far slower than on 2
           cores, while with ranks <= cores, or ranks that yield, nothing changes; an Alltoallv
           with uneven blocks per peer (the profile's sub_bytes) is slower than its mean-block
           version where one rank's link carries the most, and a profile without them says so
variants   a program that computes long enough after the call hides most of the transfer (nbc,
           optimize: hidden share > 60%, speedup > 1); one that reads at once hides nothing and
           optimize completes it in the call as MPI's ('plain'); the JSON has every figure; weak,
           strong and fixed scaling give the sizes they say; 256 ranks run; a collective reached
           from two sites on different ranks is counted once; --skip-first leaves out each rank's
           first calls of a kind where the profile places them (first_calls), and says it cannot
           for a profile without them; where the MPI library's ranks busy-poll on fewer cores than
           ranks, a site that reads at once completes in the call through tnbc's schedule, faster
           than blocking ('own_call'), and as the library's call where the cores suffice
bad-input  one clear message each, exit status 2, never a traceback: a profile of another format
           version, an executable rebuilt after its profile, a profile of another program
           (--program), a machine file of another MPI library, N below the profile's np under
           strong scaling, a platform with too few nodes, a bad --skip-first, a bad bandwidth unit,
           an unknown key, an XML platform with too few hosts
report     `tnbc report RUN --html PAGE --profile P --machine M --what-if-np N,...`: the page's section
           "predicted at other process counts" holds, per N, the figures `tnbc predict --json` gives
           for the same inputs (picture and table); inputs that do not fit (N below the profile's np
           under strong scaling, a machine file of another MPI library) give one message each and the
           page without the section, or with the N that could be predicted
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

LEVEL = {"L_ns": 50000, "o_s_ns": 10000, "o_r_ns": 10000, "g_ns": 10000, "G_ns_per_byte": 8.0,
         "O_s_ns_per_byte": 0.3, "O_r_ns_per_byte": 0.3, "node_out_ns_per_byte": 8.0,
         "node_bi_ns_per_byte": 8.0, "flows": 1, "sweep": [], "node_sweep": []}


def machine(mpi=""):
    intra = dict(LEVEL, L_ns=1000, G_ns_per_byte=0.2, node_out_ns_per_byte=0.2, node_bi_ns_per_byte=0.2)
    return {"format": "tnbc-machine", "version": 3, "method": "calibrate", "created": "", "host": "",
            "mpi_library": mpi, "ranks": 2, "nodes": 2, "ranks_per_node": 1, "cpus_per_node": 2, "page": 4096,
            "levels": {"intra_node": intra, "inter_node": LEVEL},
            "guard": {"memcpy": {"ns": 10, "ns_per_byte": 0.1}, "userfaultfd_move": None,
                      "userfaultfd_copy": None, "prot_none": None},
            "progress": {"test_ns": 1000, "sleep_ns": 20000, "O_r_ns": 11000}}


def profile(np=2, per_peer=1 << 20, curc=50e6, rcrc=1e9, kind="alltoall", calls=10, exe="/nonexistent/app",
            version=1, subs=None, blocks=None):
    """blocks: [dst][src] bytes received per call (an exchange's `sub_bytes`), instead of per_peer."""
    subs = subs or np
    order = list(range(subs))
    ranks = [{"rank": r, "calls": calls, "traced": calls, "order": order, "receives": not (kind == "bcast" and r == 0),
              "keys": ["0x1"], "bytes_per_call": per_peer * (np if kind != "bcast" else 1), "duration_ns": 5e6,
              "curc_ns": curc, "r_crc_bytes_per_s": rcrc, "gaps_ns": []} for r in range(np)]
    if blocks:
        for r in ranks:
            r["sub_bytes"] = blocks[r["rank"]]
            r["bytes_per_call"] = sum(blocks[r["rank"]])
    return {"format": "tnbc-profile", "version": version, "np": np, "executable": exe, "sites": [
        {"site": "0x18fdad14da2165e1", "kind": kind, "comm_size": np, "frames": [], "sub_messages": subs,
         "consensus_order": order, "ranks": ranks}]}


def fail(msg, out=""):
    print(f"FAIL: {msg}")
    if out:
        print("---- output ----\n" + out)
    sys.exit(1)


def run_tnbc(tool, command, *args, status=0):
    """`tool command args...` (stdout and stderr together), printed; fails unless it exits `status`."""
    p = subprocess.run([tool, command] + list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(p.stdout)
    if p.returncode != status:
        fail(f"{command} {' '.join(args)}: exit {p.returncode}, expected {status}", p.stdout)
    return p.stdout


class Env:
    def __init__(self, tool, d):
        self.tool, self.d, self.n = tool, d, 0

    def file(self, name, content):
        path = os.path.join(self.d, name)
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return path

    def run(self, prof, mach, *args, status=0, platform=None):
        self.n += 1
        cmd = [self.tool, "predict", "--profile", self.file(f"p{self.n}.profile", prof) if isinstance(prof, dict) else prof,
               "--machine", self.file(f"m{self.n}.json", mach), *args]
        if platform:
            cmd += ["--platform", self.file(f"pl{self.n}.txt", platform)]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
        out = r.stdout + r.stderr
        if r.returncode != status:
            fail(f"{' '.join(cmd)}: exit {r.returncode}, expected {status}", out)
        if "Traceback" in out or "terminate called" in out:
            fail("a crash instead of a message", out)
        return out

    def json(self, prof, mach, *args, platform=None):
        path = os.path.join(self.d, f"out{self.n + 1}.json")
        out = self.run(prof, mach, *args, "--json", path, platform=platform)
        with open(path) as f:
            return json.load(f), out


TWO_NODES = "nodes 2\ncores 2\nlink_bw 1Gbps\nlink_lat 50us\nloopback_bw 5GBps\nloopback_lat 1us\n"


def physics(e):
    j, out = e.json(profile(np=2, per_peer=4 << 20), machine(), "--np", "2", "--ranks-per-node", "1", platform=TWO_NODES)
    s = j["sites"][0]
    expect = 4 * 2**20 / (1e9 / 8)
    if abs(s["blocking_s"] - expect) / expect > 0.10:
        fail(f"blocking Alltoall of 4 MiB over 1 Gb/s: {s['blocking_s']:.4f} s, expected {expect:.4f} s", out)
    if not 0 < s["nbc"]["call_s"] < 0.2 * s["blocking_s"]:
        fail(f"tnbc's time in the call {s['nbc']['call_s']} s is not a small part of {s['blocking_s']} s", out)
    # The hand-over that ends an early return (the machine file's progress.handover_ns, 5 ms here
    # to stand out) is in tnbc's time in the call, once per call.
    slow = machine()
    slow["progress"]["handover_ns"] = 5e6
    jh, outh = e.json(profile(np=2, per_peer=4 << 20), slow, "--np", "2", "--ranks-per-node", "1", platform=TWO_NODES)
    handover = jh["sites"][0]["nbc"]["call_s"] - s["nbc"]["call_s"]
    if abs(handover - 5e-3) > 0.5e-3:
        fail(f"a hand-over of 5 ms added {handover * 1e3:.2f} ms to tnbc's time in the call, expected 5 ms", outh)
    # tnbc's bookkeeping in the call (guard.in_call_rest, the exchange's; in_call_rest_bcast, a
    # broadcast receiver's, since session 32): 5 ms of a receiver's rest adds 5 ms to a broadcast's
    # time in the call; without its own line the exchange's prices the receiver.
    def rests(exchange_ns, receiver_ns=None):
        m = machine()
        m["guard"]["in_call_rest"] = {"ns": exchange_ns, "ns_per_byte": 0}
        if receiver_ns is not None:
            m["guard"]["in_call_rest_bcast"] = {"ns": receiver_ns, "ns_per_byte": 0}
        jr, outr = e.json(profile(np=2, per_peer=1 << 20, kind="bcast", subs=3), m, "--np", "2", "--ranks-per-node", "1",
                          platform=TWO_NODES)
        return jr["sites"][0]["nbc"]["call_s"], outr
    calls = {k: rests(*v) for k, v in {"none": (0,), "own": (0, 5e6), "exchange's": (5e6,)}.items()}
    for k in ("own", "exchange's"):
        added = calls[k][0] - calls["none"][0]
        if abs(added - 5e-3) > 0.5e-3:
            fail(f"a receiver's rest of 5 ms ({k} line) added {added * 1e3:.2f} ms to a broadcast's time in the call, "
                 "expected 5 ms", calls[k][1])
    # The progress thread's first round after the return (progress.first_round_ns, 5 ms here): on
    # nodes of one core the bodies start that much later, at most T_CURC later (2 ms here: the
    # reader then waits for the whole transfer, ~34 ms); on nodes of two cores not at all.
    one_core = TWO_NODES.replace("cores 2", "cores 1")
    late = machine()
    late["progress"]["first_round_ns"] = 5e6
    totals = {}
    for name, plat in (("one core", one_core), ("two cores", TWO_NODES)):
        for label, mach in (("without", machine()), ("with", late)):
            jl, outl = e.json(profile(np=2, per_peer=4 << 20, curc=2e6), mach, "--np", "2", "--ranks-per-node", "1",
                              platform=plat)
            totals[name, label] = jl["sites"][0]["nbc"]["total_s"]
    for name, expect in (("one core", 2e-3), ("two cores", 0.0)):
        added = totals[name, "with"] - totals[name, "without"]
        if abs(added - expect) > 0.5e-3:
            fail(f"a first round 5 ms late after T_CURC 2 ms added {added * 1e3:.2f} ms to tnbc's total on nodes of "
                 f"{name}, expected {expect * 1e3:.0f} ms", outl)
    big = "nodes 8\ncores 1\nlink_bw 1Gbps\nlink_lat 50us\n"
    times = []
    for n in (2, 8):
        j, out = e.json(profile(np=2, per_peer=1 << 20, kind="bcast", subs=3), machine(), "--np", str(n),
                        "--ranks-per-node", "1", "--scaling", "fixed", platform=big)
        times.append(j["sites"][0]["blocking_s"])
    if not times[1] > 1.5 * times[0]:
        fail(f"a broadcast to 8 nodes ({times[1]} s) is not slower than to 2 ({times[0]} s)", out)
    # CPU shared: 4 ranks on one node of 2 cores, computing 100 ms each after a blocking call,
    # take 200 ms; a profile traced so (4 ranks on the machine file's 2 CPUs) measured 200 ms of
    # wall time for 100 ms of CPU work, which the simulation gives back.
    one = "nodes 1\ncores 2\nlink_bw 1Gbps\nlink_lat 50us\nloopback_bw 5GBps\nloopback_lat 1us\n"
    curc = {}
    # Without --traced-ranks-per-node the machine file's placement (1 rank per node) is the traced
    # one, not the prediction's 4 per node.
    for traced in ("1", "4", ""):
        opt = ["--traced-ranks-per-node", traced] if traced else []
        j, out = e.json(profile(np=4, per_peer=64 << 10, curc=200e6 if traced == "4" else 100e6, rcrc=1e15),
                        machine(), "--np", "4", "--ranks-per-node", "4", *opt, platform=one)
        s4 = j["sites"][0]
        curc[traced] = s4["blocking_total_s"] - s4["blocking_s"]
        if traced == "4":
            out4 = out
    out = out4
    if not all(0.19 < c < 0.21 for c in curc.values()):
        fail(f"4 ranks on 2 cores computing 100 ms of CPU: after the call {curc} s, expected 0.2 s", out)
    if "share the cores" not in out or "CPU work / 2" not in out:
        fail("no note on the shared cores and the traced node's oversubscription", out)
    spin = busy_polling(e)
    skew = uneven_blocks(e)
    print(f"physics ok: Alltoall {s['blocking_s']:.4f} s (link: {expect:.4f} s), Bcast 2 -> 8 nodes "
          f"{times[0]:.4f} -> {times[1]:.4f} s; {spin}; {skew}")


def uneven_blocks(e):
    """An Alltoallv whose rank 0 sends 4 MiB to every peer and the others 256 KiB, one rank per node
    of 1 Gb/s: with the profile's blocks per peer (sub_bytes) rank 0's link carries 12 MiB (~101 ms);
    the same profile without them (an older merge) is simulated with the ranks' mean block, 3.6 MiB
    per link (~30 ms), and says so. Blocks per peer of an Alltoall are even: nothing changes."""
    big, small = 4 << 20, 256 << 10
    blocks = [[big] + [small] * 3 for _ in range(4)]
    plat = "nodes 4\ncores 1\nlink_bw 1Gbps\nlink_lat 50us\n"
    args = ("--np", "4", "--ranks-per-node", "1")
    skewed, out = e.json(profile(np=4, kind="alltoallv", blocks=blocks, curc=1e6, rcrc=1e12), machine(), *args,
                         platform=plat)
    mean, out_mean = e.json(profile(np=4, kind="alltoallv", per_peer=(big + 3 * small) // 4, curc=1e6, rcrc=1e12),
                            machine(), *args, platform=plat)
    t, t_mean = skewed["sites"][0]["blocking_s"], mean["sites"][0]["blocking_s"]
    expect = 3 * big / (1e9 / 8)
    if abs(t - expect) / expect > 0.10:
        fail(f"uneven Alltoallv: blocking {t:.4f} s, expected rank 0's link, {expect:.4f} s", out)
    if not t > 2.5 * t_mean:
        fail(f"uneven Alltoallv {t:.4f} s is not slower than its mean-block version {t_mean:.4f} s", out)
    if skewed["sites"][0]["blocks"] != "per_peer" or mean["sites"][0]["blocks"] != "mean":
        fail("the JSON's blocks does not say which site used blocks per peer", out)
    if "blocks per peer from the profile" not in out or "no blocks per peer" not in out_mean:
        fail("the output does not say whether blocks per peer were used", out + out_mean)
    even, out_even = e.json(profile(np=4, per_peer=1 << 20, blocks=[[1 << 20] * 4] * 4), machine(), *args,
                            platform=plat)
    plain, _ = e.json(profile(np=4, per_peer=1 << 20), machine(), *args, platform=plat)
    if even["sites"] != plain["sites"] or "blocks per peer" in out_even:
        fail("even blocks per peer changed an Alltoall's prediction", out_even)
    return f"uneven Alltoallv {t:.4f} s, mean block {t_mean:.4f} s"


def busy_polling(e):
    """2 ranks per node that busy-poll on 1 core (slice 4 ms): their shared-memory exchange moves a
    32 KiB fragment per two slices each way, so 1 MiB takes 32 x 8 ms, far longer than the link's
    4 MiB per node at 1 Gb/s (34 ms); with 2 cores (ranks <= cores) the slice changes nothing, and
    ranks that yield (no slice) wait without CPU as before. tnbc's own call does not wait for slices,
    and a tiny eager exchange takes one slice, not two."""
    base = "nodes 2\nlink_bw 1Gbps\nlink_lat 50us\nloopback_bw 5GBps\nloopback_lat 1us\n"
    spin = "slice 4ms\nshm_fragment 32KiB\n"
    got = {}
    for name, plat in (("1 core, spin", base + "cores 1\n" + spin), ("2 cores, spin", base + "cores 2\n" + spin),
                       ("2 cores", base + "cores 2\n"), ("1 core, yield", base + "cores 1\n")):
        j, out = e.json(profile(np=4, per_peer=1 << 20, curc=1e6, rcrc=1e12), machine(), "--np", "4",
                        "--ranks-per-node", "2", platform=plat)
        got[name] = (j["sites"][0], out)
    spun, free = got["1 core, spin"][0]["blocking_s"], got["2 cores, spin"][0]["blocking_s"]
    if not (spun > 3 * free and 0.2 < spun < 0.4):
        fail(f"2 busy-polling ranks on 1 core: blocking Alltoall {spun:.4f} s, expected 0.2-0.4 s and > 3 x the "
             f"{free:.4f} s of 2 cores", got["1 core, spin"][1])
    if "busy-polls in slices of 4 ms" not in got["1 core, spin"][1]:
        fail("the output does not state the busy polling", got["1 core, spin"][1])
    if got["2 cores, spin"][0] != got["2 cores"][0]:
        fail("ranks <= cores: the slice changed the prediction", got["2 cores, spin"][1])
    if got["1 core, yield"][0]["blocking_s"] != got["2 cores"][0]["blocking_s"]:
        fail("ranks that yield: the cores changed the blocking call", got["1 core, yield"][1])
    nbc = got["1 core, spin"][0]["nbc"]
    if not nbc["total_s"] > 0:
        fail("nbc on a busy-polling node", got["1 core, spin"][1])
    # tnbc's calling thread yields (Policy::waiting): its edges do not wait for slices.
    if not nbc["call_s"] < 0.004:
        fail(f"tnbc's call on a busy-polling node took {nbc['call_s']:.4f} s: it waited for a 4 ms slice",
             got["1 core, spin"][1])
    # A 4-byte Alltoall (the MPI library's: below the threshold) between 2 spinning ranks on 1 core:
    # the first on the core puts its message into the FIFO (an eager send completes there), the
    # other, on the core a slice later, takes it and puts its own, then leaves the call and the
    # first takes it at once: about one slice, not two.
    j, out = e.json(profile(np=4, per_peer=4, curc=0, rcrc=1e12), machine(), "--np", "4", "--ranks-per-node", "2",
                    platform=base + "cores 1\n" + spin)
    tiny = j["sites"][0]["blocking_s"]
    if not 0.0035 < tiny < 0.006:
        fail(f"a 4-byte Alltoall between 2 busy-polling ranks on 1 core: {tiny * 1e3:.2f} ms, expected about one "
             f"4 ms slice", out)
    return f"busy polling: 1 core {spun:.3f} s, 2 cores {free:.3f} s; 4-byte Alltoall {tiny * 1e3:.2f} ms"


def variants(e):
    j, out = e.json(profile(np=2, per_peer=4 << 20, curc=200e6), machine(), "--np", "2", "--ranks-per-node", "1",
                    platform=TWO_NODES)
    for v in ("nbc", "optimize", "optimize+node"):
        f = j["sites"][0][v]
        if not (f["hidden_share"] > 0.6 and f["speedup"] > 1.0):
            fail(f"{v}: a program computing 200 ms after a 34 ms call hides {f['hidden_share']:.2f}, "
                 f"speedup {f['speedup']:.3f}", out)
    if not j["program"]["nbc"]["speedup"] > 1.0 or j["program"]["blocking_s"] <= 0:
        fail("the program's figures do not follow the site's", out)
    j, out = e.json(profile(np=2, per_peer=4 << 20, curc=0, rcrc=1e12), machine(), "--np", "2", "--ranks-per-node",
                    "1", platform=TWO_NODES)
    s = j["sites"][0]
    if s["nbc"]["hidden_share"] > 0.05:
        fail(f"a program that reads at once hides {s['nbc']['hidden_share']:.2f} with nbc", out)
    if not s["optimize"]["plain"] or abs(s["optimize"]["speedup"] - 1) > 1e-9:
        fail("optimize does not complete a site without gain in the call as MPI's", out)
    # One collective reached from two sites (IS's rank(): rank 0's call compiled apart from the
    # others'): each site is simulated for the mean calls over all ranks, 10 collectives in all.
    split = profile(np=2, per_peer=1 << 20, calls=10)
    other = json.loads(json.dumps(split["sites"][0]))
    other["site"] = "0x28fdad14da2165e2"
    split["sites"].append(other)
    split["sites"][0]["ranks"][1]["calls"] = split["sites"][0]["ranks"][1]["traced"] = 0
    other["ranks"][0]["calls"] = other["ranks"][0]["traced"] = 0
    j, out = e.json(split, machine(), "--np", "2", "--ranks-per-node", "1", platform=TWO_NODES)
    got = sorted(site["calls"] for site in j["sites"])
    if got != [5, 5] or "the mean over the 2 ranks" not in out:
        fail(f"a collective reached from two sites: calls simulated {got}, expected 5 and 5 with a note", out)
    # --skip-first 1: a set-up call (its own site, the rank's first Alltoall) and the first call
    # of the timed site on the other ranks are left out where first_calls place them.
    lead = profile(np=2, per_peer=1 << 20, calls=10)
    init = json.loads(json.dumps(lead["sites"][0]))
    init["site"] = "0x38fdad14da2165e3"
    for r in init["ranks"]:
        r["calls"] = r["traced"] = 1
        r["first_calls"] = [3]
    for r in lead["sites"][0]["ranks"]:
        r["first_calls"] = list(range(4, 14))
    lead["sites"].append(init)
    j, out = e.json(lead, machine(), "--np", "2", "--ranks-per-node", "1", "--skip-first", "1", platform=TWO_NODES)
    if [site["calls"] for site in j["sites"]] != [10] or "--skip-first" not in out or j.get("skip_first") != 1:
        fail(f"--skip-first 1: sites {[(x['site'], x['calls']) for x in j['sites']]}, expected only the timed one, "
             f"10 calls", out)
    j, out = e.json(lead, machine(), "--np", "2", "--ranks-per-node", "1", "--skip-first", "2", platform=TWO_NODES)
    if [site["calls"] for site in j["sites"]] != [9]:
        fail(f"--skip-first 2: {[x['calls'] for x in j['sites']]}, expected 9 calls of the timed site", out)
    # tnbc's first staging block of a size is made in untouched pages: the program's first call at
    # that size (the set-up site) copies at the machine's memcpy_cold line (here 100 ns/B against
    # 0.1: +105 ms for 1 MiB sent), later calls and sites of that size at its memcpy line; without
    # the line, at the memcpy line with a note; with the set-up call left out, nothing is cold.
    cold = machine()
    cold["guard"]["memcpy_cold"] = {"ns": 0, "ns_per_byte": 100.0}
    calls = lambda j: {x["calls"]: x["nbc"]["call_s"] for x in j["sites"]}
    j0, out0 = e.json(lead, machine(), "--np", "2", "--ranks-per-node", "1", platform=TWO_NODES)
    j1, out1 = e.json(lead, cold, "--np", "2", "--ranks-per-node", "1", platform=TWO_NODES)
    j2, _ = e.json(lead, cold, "--np", "2", "--ranks-per-node", "1", "--skip-first", "1", platform=TWO_NODES)
    c0, c1, c2 = calls(j0), calls(j1), calls(j2)
    if not (0.09 < c1[1] - c0[1] < 0.12 and abs(c1[10] - c0[10]) < 1e-6 and abs(c2[10] - c0[10]) < 1e-6):
        fail(f"the first call into untouched staging pages: nbc call {c0} without memcpy_cold, {c1} with it, {c2} "
             f"with the set-up call left out; expected +105 ms at the set-up site only", out1)
    if "no memcpy_cold line" not in out0 or "memcpy_cold line, 100 ns/B" not in out1:
        fail("the output does not say how the first staging copy is priced", out0 + out1)
    for site in lead["sites"]:
        for r in site["ranks"]:
            del r["first_calls"]
    j, out = e.json(lead, machine(), "--np", "2", "--ranks-per-node", "1", "--skip-first", "1", platform=TWO_NODES)
    if sorted(x["calls"] for x in j["sites"]) != [1, 10] or "no first_calls" not in out:
        fail("a profile without first_calls: every call simulated, with a note", out)
    # An Alltoallv (sizes differ between ranks) takes tnbc's schedule at every call where some size
    # returns early on the communicator, and runs as the MPI library's where none does (here: a
    # memcpy at 100 ns/B, slower than the link's 8, so no size's transfer covers tnbc's copies), as
    # the runtime routes it (runtime/policy.cc, never_returns_early).
    slow = machine()
    slow["guard"]["memcpy"] = {"ns": 10, "ns_per_byte": 100.0}
    for mach, routed in ((machine(), False), (slow, True)):
        j, out = e.json(profile(np=2, per_peer=4 << 20, curc=200e6, kind="alltoallv"), mach, "--np", "2",
                        "--ranks-per-node", "1", platform=TWO_NODES)
        nbc = j["sites"][0]["nbc"]
        said = "no size returns early here" in out
        if said != routed or (abs(nbc["speedup"] - 1) < 1e-9) != routed:
            fail(f"Alltoallv with memcpy at {mach['guard']['memcpy']['ns_per_byte']} ns/B: nbc speedup "
                 f"{nbc['speedup']:.3f}, note {'printed' if said else 'absent'}; expected "
                 f"{'the MPI library' if routed else 'tnbc'}'s call", out)
    # An Alltoallv whose mean block (8 KiB) returns early nowhere while larger sizes do: the site
    # takes tnbc's schedule, and a rank whose call does not return early completes through it
    # (runtime/policy.cc early_return_pays, the engine's below_threshold), faster or not than the
    # library's call: every variant but blocking is the schedule in the call, and the notes say so.
    j, out = e.json(profile(np=2, per_peer=8 << 10, curc=200e6, kind="alltoallv"), machine(), "--np", "2",
                    "--ranks-per-node", "1", platform=TWO_NODES)
    s = j["sites"][0]
    own = s.get("own_call")
    if not own or any(not s[v]["own_call"] or abs(s[v]["total_s"] - own["total_s"]) > 1e-12
                      for v in ("nbc", "optimize", "optimize+node")):
        fail(f"Alltoallv at 8 KiB (returns early from larger sizes): every variant but blocking should be "
             f"tnbc's schedule in the call {own}: {s}", out)
    if "(the mean block) does not return early here" not in out or "the site's route" not in out:
        fail("the notes do not say that the Alltoallv site completes in the call by its route", out)
    # scaling: a profile at np 4 with 1 MiB blocks, predicted at 16 ranks
    sizes = {}
    for sc in ("strong", "weak", "fixed"):
        j, out = e.json(profile(np=4, per_peer=1 << 20), machine(), "--np", "16", "--ranks-per-node", "2",
                        "--scaling", sc, platform="nodes 8\ncores 2\nlink_bw 10Gbps\nlink_lat 2us\n")
        sizes[sc] = j["sites"][0]["bytes"]
        if sc not in out:
            fail(f"the output does not state the scaling ({sc})", out)
    want = {"strong": 2**20 / 16, "weak": 2**20 / 4, "fixed": 2**20}
    if any(abs(sizes[k] - want[k]) > 1 for k in want):
        fail(f"block sizes at 16 ranks {sizes}, expected {want}")
    t0 = time.time()
    j, out = e.json(profile(np=4, per_peer=1 << 20), machine(), "--np", "256", "--ranks-per-node", "8",
                    "--scaling", "strong", platform="nodes 32\ncores 8\nlink_bw 40Gbps\nlink_lat 1.5us\n")
    if j["np"] != 256 or j["sites"][0]["blocking_s"] <= 0:
        fail("256 ranks", out)
    own = own_call(e)
    placement = run_topology(e)
    print(f"variants ok: block sizes {sizes}; 256 ranks simulated in {time.time() - t0:.1f} s; {own}; {placement}")


def spinning_machine():
    """machine() calibrated with 2 ranks per node on 1 CPU whose MPI library busy-polls: the
    intra-node ping-pong took a 2 ms scheduler slice, plus two slices per 48 KiB (busy_poll.hh)."""
    m = machine()
    m.update(ranks=4, ranks_per_node=2, cpus_per_node=1)
    slice_ns, fragment = 2e6, 48 * 1024
    sweep = [{"bytes": b, "T_ns": slice_ns + 2 * slice_ns * b / fragment, "o_s_ns": 500, "o_r_ns": 700, "g_ns": 1300,
              "post_ns": 100} for b in (1, 64 * 1024, 1 << 20)]
    m["levels"]["intra_node"] = dict(m["levels"]["intra_node"], L_ns=slice_ns, sweep=sweep)
    return m


def own_call(e):
    """Where the MPI library's ranks busy-poll on fewer cores than ranks, tnbc's schedule completed
    in the call beats the library's call (model::own_call_bands): the site's `own_call` figures
    (and the note) show it faster than blocking, and optimize takes the better of it and the early
    return (marked o where it is the schedule in the call); with 2 cores per node (nothing spins)
    there is no such figure, and a site that reads at once completes as the library's ('plain')."""
    got = {}
    for cores in (1, 2):
        plat = f"nodes 2\ncores {cores}\nlink_bw 1Gbps\nlink_lat 50us\nloopback_bw 5GBps\nloopback_lat 1us\n" \
               f"slice 2ms\nshm_fragment 48KiB\n"
        got[cores] = e.json(profile(np=4, per_peer=64 << 10, curc=0, rcrc=1e12), spinning_machine(), "--np", "4",
                            "--ranks-per-node", "2", platform=plat)
    (j, out), (j2, out2) = got[1], got[2]
    s, opt = j["sites"][0], j["sites"][0]["optimize"]
    own = s.get("own_call")
    if not own or not (own["call_s"] < 0.8 * s["blocking_s"] and own["total_s"] < 0.8 * s["blocking_total_s"]):
        fail(f"busy-polling ranks: tnbc's schedule in the call {own} should beat the library's "
             f"{s['blocking_s']:.4f} s", out)
    if "tnbc's schedule completed in the call takes" not in out:
        fail("no note on tnbc's schedule in the call", out)
    if opt["total_s"] > min(own["total_s"], s["nbc"]["total_s"]) * (1 + 1e-9) or opt["plain"]:
        fail(f"optimize {opt} should take the better of the schedule in the call {own} and the early return "
             f"{s['nbc']}", out)
    if opt["own_call"] != (own["total_s"] <= s["nbc"]["total_s"]) or opt["own_call"] != ("xo|" in out):
        fail(f"optimize's own_call flag {opt['own_call']} does not follow the figures or the table's mark", out)
    s2 = j2["sites"][0]
    if "own_call" in s2 or s2["optimize"]["own_call"] or not s2["optimize"]["plain"]:
        fail(f"2 cores per node (nothing spins): no schedule in the call, the site as the library's call: {s2}", out2)
    return (f"own call: {own['call_s'] * 1e3:.1f} ms against the library's {s['blocking_s'] * 1e3:.1f} ms "
            f"(optimize: {'in the call' if opt['own_call'] else 'early return'})")


def run_topology(e):
    """The early-return sizes are found on the run's placement, the platform's cores per node, as
    the runtime's topology has them: 2 ranks per core whose library busy-polls (spinning_machine,
    copies at 8 ns/B) pay the scheduler's slices in the library's call, so that 1 MiB per peer
    returns early (~1.15x). Priced with a core per rank (until session 44) the same site ran as
    the library's call in every variant."""
    m = spinning_machine()
    m["guard"]["memcpy"] = {"ns": 10, "ns_per_byte": 8.0}
    plat = "nodes 2\ncores 1\nlink_bw 1Gbps\nlink_lat 50us\nloopback_bw 5GBps\nloopback_lat 1us\n" \
           "slice 2ms\nshm_fragment 48KiB\n"
    j, out = e.json(profile(np=4, per_peer=1 << 20, curc=50e6, rcrc=1e9), m, "--np", "4", "--ranks-per-node", "2",
                    platform=plat)
    nbc = j["sites"][0]["nbc"]
    if nbc["plain"] or nbc["own_call"] or not nbc["speedup"] > 1.05 or "outside the sizes" in out:
        fail(f"2 ranks per core, busy-polling library: 1 MiB per peer should return early on the run's "
             f"placement: nbc {nbc}", out)
    return f"run's placement: 1 MiB returns early at 2 ranks per core ({nbc['speedup']:.3f}x)"


def bad_input(e):
    m = machine()
    cases = [
        ("another profile version", profile(version=2), m, [], None, "version"),
        ("another MPI library", profile(), machine("Intel(R) MPI Library 2021.9 for Linux* OS"), [], None,
         "calibrated with Intel(R) MPI Library 2021.9"),
        ("N below np, strong", profile(np=4), m, ["--np", "2"], None, "below the profile's 4 processes"),
        ("too few nodes", profile(), m, ["--ranks-per-node", "1", "--np", "4"], "nodes 2\nlink_bw 1Gbps\n", "has 2 nodes"),
        ("a bad --skip-first", profile(), m, ["--skip-first", "17"], None, "from 0 to 16"),
        ("bad unit", profile(), m, ["--np", "2"], "nodes 2\nlink_bw 1Gbs\n", "unknown unit 'Gbs'"),
        ("unknown key", profile(), m, ["--np", "2"], "nodes 2\nlink_bw 1Gbps\nlink_speed 3\n", "unknown key 'link_speed'"),
        ("zero bandwidth", profile(), m, ["--np", "2"], "nodes 2\nlink_bw 0\n", "must be positive"),
        ("XML with too few hosts", profile(), m, ["--np", "4", "--ranks-per-node", "1"],
         '<?xml version="1.0"?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n<platform version="4.1">\n'
         '<zone id="z" routing="Full"><host id="a" speed="1Gf"/><host id="b" speed="1Gf"/>\n'
         '<link id="l" bandwidth="1GBps" latency="1us"/><route src="a" dst="b"><link_ctn id="l"/></route></zone>\n'
         '</platform>\n', "has 2 hosts"),
    ]
    for what, prof, mach, args, plat, words in cases:
        if "--np" not in args:
            args = args + ["--np", "2"]
        out = e.run(prof, mach, *args, status=2, platform=plat)
        if words not in out or len(out.strip().splitlines()) != 1:
            fail(f"{what}: expected one line saying '{words}'", out)
    # an executable rebuilt after its profile, and a profile of another program
    exe = e.file("app", "#!/bin/sh\n")
    prof = e.file("app.profile", json.dumps(profile(exe=exe)))
    out = e.run(prof, m, "--np", "2", "--program", "/bin/true", status=2)
    if "not /bin/true" not in out:
        fail("a profile of another program", out)
    later = time.time() + 5
    os.utime(exe, (later, later))
    out = e.run(prof, m, "--np", "2", status=2)
    if "rebuilt after" not in out:
        fail("an executable rebuilt after its profile", out)
    print(f"bad-input ok: {len(cases) + 2} cases")


def report(e):
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "report"))
    import synthetic  # the report tests' run of known numbers (tests/report/synthetic.py)
    run = os.path.join(e.d, "run")
    synthetic.write_run(run, with_spawned=False)
    prof = e.file("app.profile", profile(np=2, per_peer=1 << 20, curc=20e6))
    mach = e.file("m.json", machine())
    plat = e.file("eight.txt", TWO_NODES.replace("nodes 2", "nodes 8"))
    page, data = os.path.join(e.d, "page.html"), os.path.join(e.d, "page.json")
    common = ["--profile", prof, "--machine", mach, "--ranks-per-node", "1", "--platform", plat]

    def tnbc_report(*args):
        r = subprocess.run([e.tool, "report", run, "--html", page, "--json", data, *args], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=600)
        if r.returncode != 0 or "Traceback" in r.stderr or "terminate called" in r.stderr:
            fail(f"tnbc report {' '.join(args)}: exit {r.returncode}", r.stdout + r.stderr)
        sections = [s for s in json.load(open(data))["runs"][0]["worlds"][0]["sections"] if s["key"] == "what_if"]
        return sections, open(page).read(), r.stderr

    sections, html, err = tnbc_report(*common, "--what-if-np", "2,4,8")
    if len(sections) != 1 or err.strip():
        fail("--what-if-np 2,4,8: one predicted section, no message", err + html)
    points = json.loads(sections[0]["data"])["points"] if isinstance(sections[0]["data"], str) else \
        sections[0]["data"]["points"]
    if [p["np"] for p in points] != [2, 4, 8]:
        fail(f"the section's points are for N = {[p['np'] for p in points]}, not 2, 4, 8", html)
    j, _ = e.json(profile(np=2, per_peer=1 << 20, curc=20e6), machine(), "--np", "4", "--ranks-per-node", "1",
                  platform=TWO_NODES.replace("nodes 2", "nodes 8"))
    at4 = points[1]
    for v in ("nbc", "optimize", "optimize+node"):
        for k in ("hidden_share", "speedup"):
            if abs(at4[v][k] - j["program"][v][k]) > 1e-6:
                fail(f"N = 4, {v} {k}: the report's {at4[v][k]} is not tnbc predict's {j['program'][v][k]}", html)
    if html.count('<svg class="what-if"') != 1 or html.count('class="what-if-line"') != 6 or \
            html.count('<tr class="what-if-row">') != 3:
        fail("the page lacks the picture (6 lines) or the table (3 rows)", html)
    # N below the profile's np under strong scaling: the others are shown, the message names N = 1.
    sections, html, err = tnbc_report(*common, "--what-if-np", "1,4")
    if len(sections) != 1 or "not predicted: N = 1: --np 1 is below the profile's 2 processes" not in err:
        fail("--what-if-np 1,4: the section for N = 4 and one message for N = 1", err)
    # Nothing fits (a machine file of another MPI library): one message, the page without the section.
    other = e.file("other.json", machine("Intel(R) MPI Library 2021.9 for Linux* OS"))
    sections, html, err = tnbc_report("--profile", prof, "--machine", other, "--what-if-np", "2,4")
    if sections or "<section id=\"what-if\">" in html or len(err.strip().splitlines()) != 1 or \
            "no predicted section: N = 2, 4: " not in err or "calibrated with Intel(R) MPI Library" not in err:
        fail("a machine file of another MPI library: one message, no section", err)
    if "<svg class=\"timeline\"" not in html:
        fail("the page without the section lacks the rest of the report", html)
    print("report ok: the predicted section for N = 2, 4, 8 matches tnbc predict; 2 bad inputs")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("what", choices=["physics", "variants", "bad-input", "report"])
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tnbc-predict-") as d:
        e = Env(a.tool, d)
        {"physics": physics, "variants": variants, "bad-input": bad_input, "report": report}[a.what](e)


if __name__ == "__main__":
    main()
