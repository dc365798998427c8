// What the cost model knows about the machine: LogGP parameters per level (LogGPH: inside a
// node, between nodes), PLogP-style size-dependent overheads and gaps, the node's shared
// resources, tnbc's guard costs, memcpy and the progress thread's noticing cost. Written by
// `tnbc calibrate` (tools/calibrate_main.cc, runtime/model/calibrate.hh) as a versioned JSON file
// (format "tnbc-machine", docs/formats.md), read back with TNBC_MACHINE=FILE; without a file the
// start-up probe (runtime/model/probe.hh) fills the same structure from fewer measurements.
//
//   one message of m bytes at a level    T(m) = o_s(m) + L + (m - 1) G + o_r(m)   (LogGP, PLogP)
//   back-to-back messages                 one every g(m)
//   the CPU a message costs its ends      o_s(m), o_r(m) (LogGOPS: o + O m; the kernel's TCP
//                                         copies count here, on the thread that drives MPI)
//   all ranks of a node at once           node_out: bytes leaving the node, per byte;
//                                         node_bi: bytes in and out together, per byte
//                                         (a full-duplex link: node_bi ~ node_out / 2; one shared
//                                         queue or memory bus: node_bi ~ node_out)
//
// Pure: no MPI (the `tnbc` tool and the unit tests link it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/status.hh"

namespace tnbc::model {

inline constexpr const char* kMachineFormat = "tnbc-machine";
// 2: o_s/o_r measured without idle polls (1 carried O ~ G); 3: the node's rate per message size
// and per ranks taking part (node_sweep)
inline constexpr int kMachineVersion = 3;

// One measured cost: `ns` at `bytes`.
struct CostPoint {
  double bytes = 0, ns = 0;
};

// A cost t(bytes) = ns + ns_per_byte * bytes. Where calibrate kept the sizes it measured
// (`points`, increasing sizes), at() goes through them instead: linear between two points, in
// proportion to the size below the first (a copy's or a page move's cost has no fixed part worth
// a line's intercept there), on the last two points' slope beyond the last. A least-squares line
// through a 64 KiB-4 MiB sweep is ruled by the largest sizes: its intercept (16-54 us on the
// emulated nodes) was 2-3x the whole cost measured at 64 KiB (docs/benchmarks.md, "Session 20").
struct Line {
  Line() = default;
  Line(double fixed_ns, double per_byte_ns) : ns(fixed_ns), ns_per_byte(per_byte_ns) {}
  double ns = 0, ns_per_byte = 0;
  std::vector<CostPoint> points;  // optional
  double at(double bytes) const { return points.empty() ? ns + ns_per_byte * bytes : through_points(bytes); }
  // Something was measured: points kept, or a line other than {0, 0}.
  bool measured() const { return !points.empty() || ns > 0 || ns_per_byte > 0; }

 private:
  double through_points(double bytes) const;
};

// A cost with a warm figure beside its cold one: `warm_line` at `bytes` where the call is warm
// (Machine::warm) and that line was measured at all (it keeps points), else `cold`.
inline double at_warm_or_cold(const Line& cold, const Line& warm_line, double bytes, bool warm) {
  return warm && !warm_line.points.empty() ? warm_line.at(bytes) : cold.at(bytes);
}

// A cost as Line::at prices it, for people: where the sizes measured were kept, the cost at each
// ("4.5 us at 64 KiB, 90.0 us at 1 MiB, 1.25 ms at 16 MiB"), else "A us + B us/MiB". (The
// least-squares line through kept points is not what the model uses: "Session 20".)
std::string cost_text(const Line& l);

// Least squares line through (x, y) points (at least one); negative terms (noise) clamp to 0.
Line fit(const std::vector<double>& x, const std::vector<double>& y);
// The same line, keeping the points (x increasing) for Line::at.
Line fit_through(const std::vector<double>& x, const std::vector<double>& y);
// The median of `v` (not empty; of an even count the mean of the middle two).
double median_of(std::vector<double> v);
// Several passes over the same `sizes` (passes[k][i]: pass k's figure at sizes[i], < 0 where not
// measured): per size the median over the passes that measured it, the line through them
// (fit_through); {0, 0} with fewer than two sizes measured.
Line fit_through_pass_medians(const std::vector<double>& sizes, const std::vector<std::vector<double>>& passes);

// One PLogP measurement at message size `bytes` (ns): half the ping-pong round trip T(m), the
// CPU time the sender and the receiver spend on the message (o_s(m), o_r(m)), and the gap
// between back-to-back messages g(m); and the sender's time in MPI_Isend alone per message when
// it posts a train of them back to back (post_ns: what a broadcast's root pays in its call for
// each send it starts there; optional in the file, -1 where not measured: calibrate writes it
// since session 20).
struct SizePoint {
  double bytes = 0, t_ns = 0, os_ns = 0, or_ns = 0, g_ns = 0, post_ns = -1;
};

// LogGP's L from a size sweep (sizes increasing): T(m) - o_s(m) - o_r(m) of the fastest point up
// to kLatencySweepBytes. T grows with the size, so a small size slower than a larger one was
// disturbed: one MPICH calibration of 3 ranks on 2 CPUs (ranks spinning) measured T(1 B) 2 ms and
// T(64 B) 150 ns, and the 1-byte point alone priced every MPICH broadcast at 6 ms.
inline constexpr double kLatencySweepBytes = 1024;
double latency_of(const std::vector<SizePoint>& sweep);

// The node's shared resource at one message size with `ranks` ranks of every node taking part at
// once (PLogP's G(m) at the node level, LogGPH's contention): what one per-byte rate cannot
// describe on shared memory, where the copies share the node's CPUs and memory and their rate
// changes with the size (caches) and with how many ranks copy at once.
//   exchange  every pair of the `ranks` exchanges one message of `bytes` at once and each copies
//             its own block (the exchange family's pattern): ns per byte received on the node
//   ring      each of the `ranks` sends one message of `bytes` to the next (one flow per rank, a
//             tree's edges): ns per byte moved on the node
struct NodePoint {
  double bytes = 0;
  int ranks = 2;
  double exchange_ns_per_byte = 0, ring_ns_per_byte = 0;
  // The MPI library's own MPI_Alltoall of `bytes` per peer on a communicator of these ranks, as a
  // program calls it (buffers reused, the caches emptied once per round of sizes, MPI's own waits), per byte received
  // on the node. Optional in the file (`tnbc calibrate` writes it since session 14); 0: not measured.
  double mpi_alltoall_ns_per_byte = 0;
};

enum class LevelKind { IntraNode, InterNode };
inline constexpr int kLevels = 2;
const char* level_name(LevelKind k);  // "intra_node", "inter_node"

// LogGP(H) parameters of one level. Without a sweep (the probe) the size-dependent values come
// from the LogGP(OPS) line: T(m) = os + L + (m-1) G + or, o_s(m) = os + Os m, o_r(m) = or + Or m,
// g(m) = max(g, m G).
struct Level {
  bool measured = false;
  double L_ns = 0, os_ns = 0, or_ns = 0, g_ns = 0;
  double G_ns_per_byte = 0;
  double Os_ns_per_byte = 0, Or_ns_per_byte = 0;  // CPU per byte (LogGOPS O)
  double node_out_ns_per_byte = 0;  // all of a node's ranks sending at this level at once
  double node_bi_ns_per_byte = 0;   // ... and receiving at the same time (bytes in + out)
  int flows = 1;                    // concurrent flows in those two measurements
  std::vector<SizePoint> sweep;     // PLogP table, sorted by size (may be empty)
  std::vector<NodePoint> node_sweep;  // sorted by ranks, then size (may be empty: node_bi / node_out)
  // The most bytes a blocking MPI_Send left for its receiver in the transport's buffers when it
  // returned (the receiver receiving at once; the largest over message sizes): a send of up to
  // this many bytes completes before its receiver has it (TCP: the kernel's socket buffers; a
  // rendezvous over shared memory: ~0). Optional in the file (`tnbc calibrate` writes it since
  // session 10); 0: not measured, or nothing buffered.
  double buffered_send_bytes = 0;
  // What a transfer at this level takes from a computation that shares one CPU with it, against
  // the computation alone, per exchange of `bytes` each way with one peer (ns, per message and
  // byte): the polls and MPI's copies (what the progress thread does), the kernel's work for the
  // messages on that CPU and the caches they evict. Measured by `tnbc calibrate` (since session 17:
  // a loop on the CPU of a rank whose thread exchanges with the pair's other rank, polled as the
  // progress thread polls); optional in the file, {0, 0}: not measured (the model then counts the
  // progress thread's own CPU only).
  Line shared_cpu;
  bool shared_cpu_measured() const { return shared_cpu.ns > 0 || shared_cpu.ns_per_byte > 0; }

  double T(double m) const;    // one message alone, ns
  double g(double m) const;    // gap between back-to-back messages
  double o_s(double m) const;  // sender's CPU
  double o_r(double m) const;  // receiver's CPU
  // The sender's time in MPI_Isend for a message of m bytes (SizePoint::post_ns); where the sweep
  // lacks it, o_s of at most `page` bytes (the send's envelope; before session 20 the model priced
  // every send started in a call so).
  double post(double m, double page) const;
  // The node's ns per byte for messages of `m` bytes with `ranks` of its ranks taking part: the
  // node sweep's points at the most ranks measured up to `ranks` (the fewest measured when none
  // is), interpolated in log(m) and held at its ends; without a sweep node_bi().
  double node_exchange(double m, int ranks) const;
  // The level's one rate (a link's does not depend on the size; the per-byte bounds count the
  // ranks that share it): node_bi / node_out, or from G when not measured.
  double node_bi() const { return node_bi_ns_per_byte > 0 ? node_bi_ns_per_byte : G_ns_per_byte / 2; }
  double node_out() const { return node_out_ns_per_byte > 0 ? node_out_ns_per_byte : G_ns_per_byte; }
  // The bytes a transfer through an idle link gets past before the link's rate applies: the
  // largest sweep size's m - (T(m) - L) / G, >= 0 (a shaper's burst, a NIC's or switch's buffer;
  // on the emulated links tbf's 256 KiB burst: 245-250 KiB measured, so a single 64 KiB message
  // took 0.14 ms where 64 KiB at 1 Gbit/s is 0.52 ms; docs/benchmarks.md, "Session 20").
  double head_bytes() const;
  // The share of a transfer at this level that is its ranks' CPU work: (O_s + O_r per byte) / G,
  // at most 1; 1 where not measured (unknown: taken as CPU work). Shared memory: the receiver
  // copies every byte (1.0); a network stack over a shaped loopback: the wire's time, 0.06-0.36.
  double cpu_share() const;
  // One flow's ns per byte in the node's one-way train (node_out was measured with `flows` of
  // them at once, 8 distinct messages each: data from memory, not a buffer in the cache), or G.
  // Where each flow's CPUs bound the train (shared memory), one flow alone moves 1/flows of its
  // bytes in that time; where the wire binds it (a network stack over a shaped loopback), one
  // flow alone gets the wire: node_out x max(1, flows x cpu_share()). Until session 75 node_out x
  // flows everywhere, which priced a 4 MiB broadcast at np 4 on one node at 4 Gbit/s 32 % high.
  double one_flow() const;
  double node_ring(double m, int ranks) const;
  // MPI_Alltoall's own rate on the node (NodePoint::mpi_alltoall_ns_per_byte), picked and
  // interpolated as node_exchange; node_exchange where the sweep has no such points.
  double node_mpi_alltoall(double m, int ranks) const;
  bool mpi_alltoall_measured() const;  // every node sweep point has it
};

// Hold back and publish costs of one guard backend, and what a reader that touches a page
// still held back pays until it may go on (fault round trip).
struct GuardCost {
  Line hold;      // in the call, per run of regions (fixed) and per byte
  Line publish;   // after the data is in, per region (fixed) and per byte
  double fault_ns = 0;
  // The hold where the call's data is in the cache (Machine::warm): measured by calibrate at the
  // sizes below Machine::warm_below_bytes, caches left as the last cycle left them. Optional in
  // the file (since session 24); no points: not measured, and `hold` prices every call.
  Line hold_warm;
  // What a reader's first accesses to the published pages cost beyond the same accesses to pages
  // left in place, by the bytes published: on the reader's CPU, after the publication. On the
  // Firecracker guest of session 57 a page the kernel filled for the guard (UFFDIO_COPY,
  // /proc/self/mem) cost ~5 us at its first access from the program, ~1.2 ns/B: reading 4 MiB
  // after an early return took 5-6 ms more CPU than after the blocking call (docs/benchmarks.md,
  // "Session 57"). Optional in the file (since session 57); without it `publish` includes them.
  Line first_read;
  double hold_at(double bytes, bool warm) const { return at_warm_or_cold(hold, hold_warm, bytes, warm); }
};

// The backends by the name the probe and the summary use (runtime/guard_backend.hh).
inline constexpr std::string_view kGuardNames[] = {"userfaultfd_move", "userfaultfd_copy", "prot_none"};
inline constexpr int kGuardBackends = 3;
int guard_index(std::string_view name);  // -1 if unknown

// A calibration during which other processes or the hypervisor took more than this share of its
// machines' CPU time is reported as disturbed (Machine::disturbed). Quiet calibrations here:
// 1.2-1.8 % (docs/benchmarks.md, "Session 30").
inline constexpr double kLoadNoteShare = 0.05;
inline bool load_disturbed(double others_cpu_share, double steal_share) {
  return others_cpu_share > kLoadNoteShare || steal_share > kLoadNoteShare;
}
// "other processes took 31 % of the CPU time (the hypervisor 0 %)": the words every message about
// a disturbed calibration uses (calibrate, --combine, a run's start, tnbc report).
std::string load_words(double others_cpu_share, double steal_share);
// What those messages advise: calibrate again on a quiet node; where only the hypervisor took the
// time (steal), that may be the host's steady share, which runs there meet too.
std::string load_advice(double others_cpu_share, double steal_share);
// "calibrated while <load_words>: its prices are likely high; <load_advice>": what a run's start
// and tnbc report say of a disturbed machine file.
std::string load_note(double others_cpu_share, double steal_share);

struct Machine {
  std::string method;       // "calibrate" or "probe"
  std::string created;      // ISO time, calibrate only
  std::string host;         // where rank 0 ran
  std::string mpi_library;  // first line of MPI_Get_library_version
  // The messaging layer the library selected (runtime/mpi_threads.hh: "Open MPI pml ob1"); "" where
  // not recognised or in a file written before session 60. The offline tools price
  // TNBC_BCAST_SEND_WINDOW=auto by it, as the runtime decides it by the running library's.
  std::string mpi_transport;
  int ranks = 0, nodes = 0, ranks_per_node = 0, cpus_per_node = 0;
  std::size_t page = 4096;
  // What other processes and the hypervisor (steal) took of the CPUs its ranks may use while
  // `tnbc calibrate` measured, as a share of those CPUs' time: the largest over the machines its
  // ranks ran on (runtime/model/calibrate_load.hh). A file measured beside a build or another
  // job prices transfers and tnbc's own call high; calibrate, each run using the file and `tnbc
  // report` say so above kLoadNoteShare. Optional in the file (`tnbc calibrate` writes it since
  // session 30); -1: not known (the start-up probe, older files, no /proc/stat).
  double others_cpu_share = -1, steal_share = -1;
  bool load_known() const { return others_cpu_share >= 0 && steal_share >= 0; }
  bool disturbed() const { return load_disturbed(others_cpu_share, steal_share); }
  Level level[kLevels];
  GuardCost guard[kGuardBackends];
  bool guard_measured[kGuardBackends] = {false, false, false};
  Line memcpy_cost;
  // memcpy into a destination never touched before (fresh pages: their first-touch faults in
  // the copy). Optional in the file (`tnbc calibrate` writes it since session 10); {0, 0}: not
  // measured (the start-up probe, older files).
  Line memcpy_cold;
  bool memcpy_cold_measured() const { return memcpy_cold.ns > 0 || memcpy_cold.ns_per_byte > 0; }
  // The same into fresh staging of whole huge pages (runtime/pool.hh, map_staging: one fault per
  // huge page), and that huge page; optional (since session 81), {0, 0} and 0: not measured.
  Line memcpy_cold_huge;
  double huge_page_bytes = 0;
  bool memcpy_cold_huge_measured() const {
    return huge_page_bytes > 0 && (memcpy_cold_huge.ns > 0 || memcpy_cold_huge.ns_per_byte > 0);
  }
  // What copying into a fresh staging block of `capacity` bytes costs: the huge line where the
  // block is whole huge pages of the calibrated size, else memcpy_cold.
  const Line& fresh_staging(double capacity) const {
    const bool huge = memcpy_cold_huge_measured() && capacity >= huge_page_bytes &&
                      std::fmod(capacity, huge_page_bytes) == 0;
    return huge ? memcpy_cold_huge : memcpy_cold;
  }
  // tnbc's own copies in a collective's call (runtime/bulk_copy.hh: the own block into place,
  // the send staging) as a call finds them: neither side in the caches, every rank of the job
  // copying at once (ranks sharing a memory bus share its bandwidth); the slowest rank's line.
  // Optional in the file (`tnbc calibrate` writes it since session 17); {0, 0}: not measured (the
  // start-up probe, older files), and the model prices those copies with memcpy_cost.
  Line memcpy_in_call;
  bool memcpy_in_call_measured() const { return memcpy_in_call.ns_per_byte > 0; }
  const Line& in_call_copy() const { return memcpy_in_call_measured() ? memcpy_in_call : memcpy_cost; }
  // The same copies with one rank of the job copying while the others wait asleep, as a
  // broadcast's root copies what it sends (its receivers copy nothing in the call): faster where
  // ranks share memory bandwidth (a node's ranks; this VM's emulated nodes: a broadcast root's
  // copies ran at 0.5-0.9x the line above in Table 1, docs/benchmarks.md, "Session 29"). Optional
  // in the file (`tnbc calibrate` since session 29); without it, in_call_copy prices them.
  Line memcpy_in_call_alone;
  bool memcpy_in_call_alone_measured() const { return memcpy_in_call_alone.ns_per_byte > 0; }
  const Line& in_call_copy_alone() const { return memcpy_in_call_alone_measured() ? memcpy_in_call_alone : in_call_copy(); }
  // What tnbc's own early return took in its call beyond the parts the model prices (its copies,
  // the guard's hold, the posts, the wait, the hand-over): its bookkeeping on cold caches, by
  // bytes received from the other ranks; `tnbc calibrate` measures it last, running tnbc's engine
  // (tools/calibrate_own_call.hh). Optional in the file (since session 23); {0, 0}: not measured
  // (the start-up probe, older files), and the model charges none.
  Line in_call_rest;
  bool in_call_rest_measured() const { return in_call_rest.measured(); }
  // The same where the call's data is in the cache (warm): measured with the caches left as the
  // previous call left them, at the sizes below warm_below_bytes, each call after a computation
  // (since session 37: back to back, the call's wake-up of the progress thread never preempted
  // the caller, as it does in a program's calls). Optional (since session 24).
  Line in_call_rest_warm;
  double rest(double bytes, bool warm) const { return at_warm_or_cold(in_call_rest, in_call_rest_warm, bytes, warm); }
  // The same for a broadcast's receiving ranks (every rank but the root), by the bytes received:
  // calibrate measures tnbc's own MPI_Bcast after its MPI_Alltoall. A receiver's call does less
  // than an exchange's (no own block, no staging, one message's regions), and the exchange's rest
  // priced it high: Table 1's 1 MiB broadcast on 2 emulated nodes spent 0.18-0.21 ms in the
  // receiver's call where the exchange's rest priced 0.27 (docs/benchmarks.md, "Session 32").
  // Optional (since session 32); not measured (older files; ranks sharing a node, where calibrate
  // measures the warm line only since session 38): rest() prices it.
  Line in_call_rest_bcast, in_call_rest_bcast_warm;
  bool in_call_rest_bcast_measured() const { return in_call_rest_bcast.measured(); }
  // Its own lines where either was measured (where ranks share a node calibrate measures the warm
  // line only: tools/calibrate_own_call.hh), else the exchange's.
  double rest_bcast(double bytes, bool warm) const {
    return in_call_rest_bcast_measured() || !in_call_rest_bcast_warm.points.empty()
               ? at_warm_or_cold(in_call_rest_bcast, in_call_rest_bcast_warm, bytes, warm)
               : rest(bytes, warm);
  }
  // The same for a broadcast's root, by the bytes it sends: beyond its copy alone
  // (memcpy_in_call_alone), the sends it starts and the hand-over. Before session 36 the root's
  // call was not measured, and Table 1's roots on 2 emulated nodes spent 0.10 ms (4 MiB) and
  // 0.24-0.32 ms (16 MiB) above those parts; calibrate measures 42-46 us of it at 4 MiB
  // (docs/benchmarks.md, "Session 36"). Optional (since session 36); not measured (older files;
  // ranks sharing a node, where calibrate measures the warm line only since session 38): none
  // charged, as before.
  Line in_call_rest_bcast_root, in_call_rest_bcast_root_warm;
  bool in_call_rest_bcast_root_measured() const { return in_call_rest_bcast_root.measured(); }
  double rest_bcast_root(double bytes, bool warm) const {
    return at_warm_or_cold(in_call_rest_bcast_root, in_call_rest_bcast_root_warm, bytes, warm);
  }
  // A call touching fewer bytes than this (what it sends and receives, its own block included)
  // finds them, tnbc's structures and the kernel's page tables in the cache — the program has just
  // written what it sends — and pays the warm figures (hold_warm, in_call_rest_warm,
  // handover_warm_ns) where they were measured: this CPU's L2 cache per core, the size above which
  // tnbc's copies stream past the cache (runtime/bulk_copy.hh). Measured cold, Table 1's 64 KiB
  // calls cost 2-3x less in the call than priced (docs/benchmarks.md, "Session 24"). Only where
  // tnbc's own call was measured warm too (in_call_rest_warm): the warm figures replace the cold
  // ones as a set (shared memory np 2 in session 24, with the warm ones and no rest: Tinit's median
  // error 63 %, 54 % with the cold ones). Where ranks share a node calibrate measures that call
  // warm only (since session 38; before it, none there: every call priced cold). Optional in the
  // file (calibrate writes it since session 24); 0: every call priced cold.
  double warm_below_bytes = 0;
  bool fits_cache(double touched) const { return warm_below_bytes > 0 && touched < warm_below_bytes; }
  // The warm figures price some calls at all (what tnbc report says of the machine).
  bool prices_warm() const { return warm_below_bytes > 0 && !in_call_rest_warm.points.empty(); }
  bool warm(double touched) const { return prices_warm() && fits_cache(touched); }
  // What one rank of an exchange of `per_peer` bytes over `ranks` ranks touches (the `touched` of
  // fits_cache and warm): its sends and receives, its own block included.
  static double exchange_touched(int ranks, double per_peer) { return 2.0 * ranks * per_peer; }
  // The progress thread's poll: one MPI_Testsome over pending requests, and how long a sleep
  // of TNBC_POLL_MIN_US really lasts (timer slack). O_r, the cost of noticing that a message or
  // request arrived (seed 000's RMA broadcast: its Broadcaster's busy-wait), is test + sleep / 2.
  double test_ns = 0, sleep_ns = 0;
  double O_r_ns() const { return test_ns + sleep_ns / 2; }
  // How much longer that sleep lasts when a busy thread shares the sleeper's CPU (model/measure.hh,
  // loaded_wake_ns): what a progress thread waits for the scheduler at each wake-up where a node's
  // threads outnumber its CPUs. Optional in the file (`tnbc calibrate` writes it; files before it
  // and the start-up probe: -1, not measured, and the model charges no such wait).
  double wake_loaded_ns = -1;
  // What the end of an early return costs its caller (model/measure.hh, handover_ns): the poke
  // that wakes the progress thread and, where that thread shares the caller's CPU, the switch to
  // it and back. Optional in the file (`tnbc calibrate` writes it since session 23; files before
  // it and the start-up probe: -1, not measured, and the model charges none).
  double handover_ns = -1;
  // The same with the caches warm (Machine::warm); optional (since session 24), -1: not measured.
  double handover_warm_ns = -1;
  double handover(bool warm) const { return std::max(0.0, warm && handover_warm_ns >= 0 ? handover_warm_ns : handover_ns); }
  // After the hand-over, while the program computes, how long until the progress thread's first
  // round (model/measure.hh, Handover::first_round_ns): where that thread shares the caller's CPU
  // the bodies start that much later (66 us here, calibrate's stand-in and Table 1's calls alike:
  // docs/benchmarks.md, "Session 24"); a program that reads at once sleeps in its first fault and
  // lets it in at once. Optional (calibrate writes it since session 24); -1: not measured, none.
  double first_round_ns = -1;
  double first_round() const { return std::max(0.0, first_round_ns); }
  // What tnbc's own early return takes from a computation on the rank's only CPU while its
  // progress thread moves the data, against the computation alone, by bytes a rank receives (the
  // slowest rank's; a broadcast's root among them): the progress thread's wake-ups, polls, pieces
  // and publication, the kernel's work for its messages and the caches they evict. `tnbc
  // calibrate` measures it running tnbc's engine where each rank has a node of one CPU to itself
  // (tools/calibrate_own_call.hh). The levels' shared_cpu, a plain polled exchange, is a stand-in
  // that moved 0.97-2.95 ms at 1 MiB between calibrations where Table 1's 1 MiB Alltoall on 2
  // one-CPU emulated nodes at 1 Gbit/s lost 1.35-1.98 ms of its computation, and it charges a
  // broadcast an exchange's both ways (docs/benchmarks.md, "Session 33"). Optional (since session
  // 33); not measured: the model prices it with the driver's CPU and shared_cpu alone.
  Line cpu_taken, cpu_taken_bcast;

  const Level& at(LevelKind k) const { return level[static_cast<int>(k)]; }
  Level& at(LevelKind k) { return level[static_cast<int>(k)]; }
};

// The machine file's text (format "tnbc-machine", version kMachineVersion).
std::string machine_json(const Machine& m);
// Reads one: every required field with its type, the format and the version; an error names
// the file, the field and its line.
Result<Machine> parse_machine(std::string_view text, const std::string& name);
Result<Machine> read_machine(const std::string& path);

// What a run is, for checking that a machine file describes it.
struct RunFacts {
  std::string mpi_library;
  int nodes = 1;
  int max_ranks_per_node = 1;
};
// Empty when `m` fits the run; else one sentence saying why not (another MPI library, another
// node count, a level the run uses that was not measured).
std::string misfit(const Machine& m, const RunFacts& run);

// A hash of everything the model reads from `m` (ranks compare it: equal inputs decide alike).
std::uint64_t machine_hash(const Machine& m);

}  // namespace tnbc::model
