"""Synthetic tnbc summaries and a trace profile with known numbers, for the report tests.

A main world of 2 ranks (mode nbc) and one world started by MPI_Comm_spawn (1 rank). Every figure
the report computes from them is listed in EXPECTED (docs/reports.md defines each):

  site 1  alltoall in /nonexistent/app+0x1234 (a module that is gone: module+offset)
          rank 0: 10 calls of 2 MiB, 8 early; T 20 ms, D 100 ms, B 30 ms, H 50 ms
          rank 1: 10 calls, 10 early;        T 40 ms, D 100 ms, B 10 ms, H 50 ms
          profile: rank 0 T_CURC 1 ms, R_CRC 1 MiB/ms; rank 1 T_CURC 2 ms, R_CRC 2 MiB/ms
          -> per call min(10 ms, 1 + 2) = 3 ms and min(10, 2 + 1) = 3 ms: I = 30 ms + 30 ms
  site 2  bcast in /bin/true (no debug information), rank 0 only, 4 plain MPI calls, 1 ms each
  site 3  allgather in /bin/false with a build ID that is not the file's (rebuilt since the run)
Wall time 1 s per rank.
"""
import json
import os
import re
import subprocess

MIB = 1 << 20
RUN_ID = "00000000000000aa"


def build_id(path):
    """The GNU build ID of an ELF file (readelf -n), or None."""
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    m = re.search(r"Build ID:\s*([0-9a-f]+)", out)
    return m.group(1) if m else None


def site(kind, module, offset, calls, received, early, in_call_n, plain, reasons, t, d, b, h, waits, blocked,
         observe=(0, 0), timelines=()):
    return {"kind": kind, "lang": "c", "module": module, "offset": offset, "symbol": "?", "calls": calls,
            "bytes": received, "bytes_sent": received, "early_return": early, "completed_in_call": in_call_n,
            "passthrough": plain, "reasons": reasons,
            "time_ns": {"in_call": t, "duration": d, "blocked": b, "hidden": h, "in_early_calls": t},
            "finished": early, "blocked_ns": blocked, "waits": waits,
            "observation": {"ns": observe[0], "waits": observe[1]}, "timelines": list(timelines)}


def waits(fault=0, userfault=0, fence=0, drain=0):
    return {"fault": fault, "userfault": userfault, "fence": fence, "drain": drain}


def timeline(call, t, d, arrival, access):
    return {"call": call, "in_call_ns": t, "duration_ns": d, "bytes": [MIB, MIB], "arrival_ns": arrival,
            "first_access_ns": access}


def summary(rank, size, sites, run_id=RUN_ID, world="main", modules=None, mode="nbc", version=2):
    kinds = {k: {"calls": 0, "fortran_calls": 0, "bytes": 0, "early_return": 0, "completed_in_call": 0,
                 "passthrough": 0, "reasons": {}} for k in ("bcast", "alltoall", "alltoallv", "allgather", "allgatherv")}
    for s in sites:
        k = kinds[s["kind"]]
        for f, g in (("calls", "calls"), ("bytes", "bytes"), ("early_return", "early_return"),
                     ("completed_in_call", "completed_in_call"), ("passthrough", "passthrough")):
            k[f] += s[g]
        for r, n in s["reasons"].items():
            k["reasons"][r] = k["reasons"].get(r, 0) + n
    s = {"format": "tnbc-summary", "version": version, "rank": rank, "size": size, "mode": mode,
         "run": {"id": run_id, "world": world, "wall_ns": 1000000000, "executable": "/nonexistent/app"},
         "placement": {"host": "node%d" % rank, "cpus": "0-1", "cpu_count": 2},
         "collectives": kinds, "guards": {"userfaultfd": 0, "prot_none": 0, "userfaultfd_moved": 0},
         "overhead": {"in_early_calls_s": 0.0, "progress_thread_cpu_s": 0.0, "uffd_listener_cpu_s": -1},
         "sites": sites, "modules": modules or {}}
    if version < 2:
        for x in ("run", "modules"):
            del s[x]
        for x in s["sites"]:
            for f in ("bytes_sent", "time_ns", "finished", "blocked_ns", "waits", "observation", "timelines"):
                del x[f]
    return s


def main_world_summaries():
    true_id = build_id("/bin/true")
    modules = {"/nonexistent/app": {"build_id": None}, "/bin/true": {"build_id": true_id},
               "/bin/false": {"build_id": "0123456789abcdef0123456789abcdef01234567"}}
    r0 = [site("alltoall", "/nonexistent/app", "0x1234", 10, 20 * MIB, 8, 0, 2, {"below_threshold": 2},
               20000000, 100000000, 30000000, 50000000, waits(userfault=5, fence=2),
               waits(userfault=20000000, fence=10000000), observe=(1000000, 3),
               timelines=[timeline(0, 2000000, 10000000, [3000000, 8000000], [4000000, 5000000]),
                          timeline(1, 2000000, 12000000, [5000000, 10000000], [6500000, 7000000])]),
          site("bcast", "/bin/true", "0x2010", 4, 4 * 4096, 0, 0, 4, {"single_rank": 4},
               4000000, 4000000, 0, 0, waits(), waits())]
    r1 = [site("alltoall", "/nonexistent/app", "0x1234", 10, 20 * MIB, 10, 0, 0, {},
               40000000, 100000000, 10000000, 50000000, waits(userfault=1), waits(userfault=10000000),
               timelines=[timeline(0, 4000000, 8000000, [2000000, 6000000], [-1, 3000000])]),
          site("allgather", "/bin/false", "0x2020", 2, 2 * MIB, 2, 0, 0, {},
               2000000, 2000000, 0, 0, waits(), waits())]
    # Mode nbc's trial at the alltoall site (runtime/site_trial.hh): early returns slower on rank 0 only.
    r0[0]["trial"] = {"trials": 1, "early_ns": 10500000, "in_call_ns": 9600000, "verdict": "in_call"}
    r1[0]["trial"] = {"trials": 1, "early_ns": 10600000, "in_call_ns": 10700000, "verdict": "early_return"}
    s = [summary(0, 2, r0, modules=modules), summary(1, 2, r1, modules=modules)]
    # tnbc's copies in its calls: 7.2 ms over the world's 20 calls on tnbc's schedule (all early
    # returns), priced 6.0 ms (1.20x).
    for x, took in zip(s, (0.0045, 0.0027)):
        x["overhead"]["in_call_copies"] = {"copies": 20, "bytes": 20 * MIB, "s": took, "priced_s": 0.0030}
    return s


def spawned_world_summaries():
    s = [site("alltoall", "/nonexistent/app", "0x1234", 3, 3 * MIB, 3, 0, 0, {},
              3000000, 9000000, 0, 6000000, waits(), waits())]
    return [summary(0, 1, s, run_id="0000000000000abc", world="spawned")]


def profile():
    """tnbc merge's profile of the same program: site 1 only."""
    rank = lambda r, curc, rate: {"rank": r, "receives": True, "order": [0, 1], "keys": ["0x1"], "calls": 10,
                                  "traced": 10, "bytes_per_call": 2 * MIB, "duration_ns": 8000000,
                                  "curc_ns": curc, "r_crc_bytes_per_s": rate, "gaps_ns": [100]}
    return {"format": "tnbc-profile", "version": 1, "np": 2, "executable": "/nonexistent/app", "run_id": RUN_ID,
            "notes": [],
            "sites": [{"site": "0x18fdad14da2165e1", "kind": "alltoall", "comm_size": 2, "sub_messages": 2,
                       "frames": [{"module": "app", "offset": "0x0000000000001234", "symbol": "main"}],
                       "consensus_order": [0, 1],
                       "ranks": [rank(0, 1000000, MIB * 1000.0), rank(1, 2000000, 2 * MIB * 1000.0)]}]}


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def write_run(d, with_spawned=True):
    """The synthetic run in directory d (and its profile as d/app.profile)."""
    os.makedirs(d, exist_ok=True)
    for s in main_world_summaries():
        write_json(os.path.join(d, "tnbc-summary.%d.json" % s["rank"]), s)
    if with_spawned:
        w = os.path.join(d, "spawned-0000000000000abc")
        os.makedirs(w, exist_ok=True)
        for s in spawned_world_summaries():
            write_json(os.path.join(w, "tnbc-summary.%d.json" % s["rank"]), s)
    write_json(os.path.join(d, "app.profile"), profile())
    return os.path.join(d, "app.profile")


def write_optimize_run(d):
    """The main world as mode optimize ran it (no spawned world): the profile's decisions per
    site, with the cost model's time in the call of an early return (Tinit). The 20 early returns
    (alltoall 18, allgather 2) took 7.2 ms in their calls over the ranks (0.36 ms each); the
    decisions that returned early price 18 calls at 0.30 ms and 2 at 0.48 ms (0.318 ms over the 20,
    the run's 1.13x it); a site completed in the call has an estimate too, which does not count."""
    os.makedirs(d, exist_ok=True)
    def decision(site, kind, how, calls, in_call):
        basis = "overlap_pays" if how == "early_return" else "no_overlap_to_gain"
        return {"site": site, "kind": kind, "where": "main (app+0x1234)", "decision": how, "basis": basis,
                "calls": calls, "comm_ns": 10000000, "overlap_ns": 3000000, "cost_ns": 500000, "saved_ns": 2500000,
                "in_call_ns": in_call}

    # The broadcast's site 0x2 is its root's own (trace/gain.hh, follow_receivers): its decision
    # is the receivers' site's, which it names.
    root_own = dict(decision("0x2", "bcast", "blocking", 4, 900000), receivers="receive (app+0x5678)")
    for s, early_s, decisions in zip(main_world_summaries(), (0.0036, 0.0036),
                                     ([decision("0x1", "alltoall", "early_return", 8, 300000), root_own],
                                      [decision("0x1", "alltoall", "early_return", 10, 300000),
                                       decision("0x3", "allgather", "early_return", 2, 480000)])):
        s["mode"] = "optimize"
        s["overhead"]["in_early_calls_s"] = early_s
        s["overhead"]["in_early_calls_waiting_s"] = early_s / 2  # half of it waiting for peers
        # Rank 1 called 2 times at a site the profile does not hold and 3 times at sizes it did not record.
        s["profile"] = {"file": os.path.join(d, "app.profile"), "status": "loaded", "calls_ordered": 0,
                        "calls_unknown_site": 2 * s["rank"], "calls_other_sizes": 3 * s["rank"], "blocking": "model",
                        "calls_blocking": 4 if s["rank"] == 0 else 0, "decisions": decisions}
        s["model"] = model_block(s["rank"])
        write_json(os.path.join(d, "tnbc-summary.%d.json" % s["rank"]), s)


def model_block(rank):
    """A summary's `model` block (runtime/model/summary.hh) with a machine file's figures: one level
    between nodes, what tnbc's own transfer takes from a computation, the copies (tnbc's in-call copies
    at calibrate's sizes: the model goes through them), Tinit's measured parts (calibrate's rests,
    the hand-over; the exchange's rest and the guard's hold warm, which price the calls that touch
    less than warm_below_bytes) and one guard;
    the site 0x1 decided on both ranks, the broadcast's site 0x2 on rank 0 only."""
    def line(ns, per_byte, points=None):
        return {"ns": ns, "ns_per_byte": per_byte, **({"points": points} if points else {})}

    def site(name, kind, decision, basis):
        return {"site": name, "kind": kind, "where": "main (app+0x1234)", "decision": decision, "basis": basis,
                "blocking_ns": 10e6, "model_blocking_ns": 9.5e6, "in_call_ns": 3e5, "hidden_ns": 3e6, "cost_ns": 5e5,
                "saved_ns": 2.5e6}

    machine = {"load": {"others_cpu_share": 0.0, "steal_share": 0.0},
               "levels": {"inter_node": {"L_ns": 8000, "G_ns_per_byte": 8.0, "o_s_ns": 6000, "o_r_ns": 2000,
                                         "node_out_ns_per_byte": 8.0, "node_bi_ns_per_byte": 4.5,
                                         "buffered_send_bytes": 2 * MIB, "shared_cpu": line(50000, 0.5)}},
               "progress": {"cpu_taken": line(100000, 1.0), "cpu_taken_bcast": line(0, 0.75), "handover_ns": 20000,
                            "handover_warm_ns": 10000},
               "guard": {"memcpy": line(0, 0.03), "memcpy_cold": line(3000, 0.3),
                         "memcpy_in_call": line(10000, 0.05, [[65536, 4500], [MIB, 90000], [16 * MIB, 1.25e6]]),
                         "memcpy_in_call_alone": line(2000, 0.04), "in_call_rest": line(60000, 0.01),
                         "in_call_rest_warm": line(0, 0, [[65536, 12000]]),
                         "in_call_rest_bcast": line(70000, 0.0125),
                         "in_call_rest_bcast_root": line(20000, 0.07, [[65536, 30000], [MIB, 90000]]),
                         "in_call_rest_bcast_root_warm": line(0, 0, [[65536, 5000]]), "warm_below_bytes": MIB,
                         "userfaultfd_move": {"hold": line(50000, 0.02), "publish": line(4000, 0.02), "fault_ns": 6000,
                                              "hold_warm": line(7000, 0.03, [[4096, 7300], [65536, 9200]])}}}
    sites = [site("0x1", "alltoall", "early_return", "overlap_pays")]
    if rank == 0:  # held back by the margin alone (trace::Decision::early_at_pct)
        sites.append(dict(site("0x2", "bcast", "plain", "no_overlap_to_gain"), early_at_pct=7,
                          margin_setting="TNBC_EARLY_RETURN_MARGIN_TCOMM_PCT"))
    return {"source": "file", "file": "/nonexistent/machine.json", "file_problem": None, "machine": machine,
            "thresholds": {"alltoall": None, "bcast": 16384}, "sites": sites}


def write_trace_run(d):
    """The same program's trace pass: blocking, nothing hidden (for --compare)."""
    os.makedirs(d, exist_ok=True)
    for r in range(2):
        s = [site("alltoall", "/nonexistent/app", "0x1234", 10, 20 * MIB, 0, 0, 10, {"mode": 10},
                  80000000, 80000000, 0, 0, waits(), waits())]
        write_json(os.path.join(d, "tnbc-summary.%d.json" % r), summary(r, 2, s, run_id="00000000000000bb", mode="trace"))
