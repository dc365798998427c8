// The per-rank trace file (format "TNBC-TRACE", version 1; docs/formats.md). Written by the
// tracer at MPI_Finalize (or, best effort, at exit), read by `tnbc merge`. Line-oriented text:
// one record per line, space-separated tokens, strings percent-escaped, a checksum in the last
// line so that truncated or corrupted files are recognised. No MPI in here (the tool links it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/status.hh"

namespace tnbc::trace {

inline constexpr const char* kTraceMagic = "TNBC-TRACE";
inline constexpr int kTraceVersion = 2;      // 2: the page_reopen_ns line (session 44)
inline constexpr int kTraceVersionOldest = 1;  // still read: page_reopen_ns 0

// How a sub-message (or the send buffer) was first reached.
//   Read / Write: a fault of the program's code (the code address says where);
//   Syscall:      a system call tnbc interposes (read, write, ...) on the buffer;
//   MpiCall:      an MPI call on the buffer (a fence with a known range);
//   FenceAll:     an MPI call whose buffers tnbc cannot bound (MPI_Waitall, v-variants...)
//                 opened every guarded region: not a first touch, ignored for orders.
enum class How : std::uint8_t { None, Read, Write, Syscall, MpiCall, FenceAll };
char how_char(How h);                 // '-', 'R', 'W', 'S', 'M', 'F'
How how_from_char(char c, bool* ok);  // inverse

struct Frame {
  std::string module;        // basename of the shared object or executable
  std::uint64_t offset = 0;  // return address - module base (stable under ASLR)
  std::string symbol;        // may be empty
  bool operator==(const Frame&) const = default;
};

struct SiteInfo {
  std::uint64_t site = 0;    // hash of frames, kind and communicator size
  std::string kind;          // "bcast" | "alltoall" | "alltoallv"
  int comm_size = 0;
  std::vector<Frame> frames;  // innermost first (the frame that called MPI)
  bool operator==(const SiteInfo&) const = default;
};

struct SubRecord {
  std::uint64_t bytes = 0;
  bool guarded = false;      // some page of it was protected (else it lay in partial pages)
  bool shared = false;       // first touch on a page shared with another sub-message
                             // (attributed by faulting address)
  bool masked = false;       // never seen: all its pages were opened by a neighbour's touch
  int order = -1;            // 0-based position among first touches of this call; -1: none
  std::int64_t t_ns = -1;    // time from the call's return to the first touch
  How how = How::None;
  std::string code;          // "module+0xoffset" of the faulting instruction, or empty
  bool operator==(const SubRecord&) const = default;
};

struct CallRecord {
  std::uint64_t seq = 0;         // index among this rank's intercepted collectives
  std::uint64_t site = 0;        // SiteInfo::site
  std::uint64_t key = 0;         // site + per-peer size signature (+ root): the instance key
  std::uint64_t occurrence = 0;  // how many earlier calls on this rank had the same key
  int comm_rank = 0;
  int root = -1;                 // bcast only
  std::int64_t dur_ns = 0;       // time spent in the blocking collective
  bool traced = false;           // false: ran blocking without guards (reason says why)
  std::string reason;            // empty when traced
  std::uint64_t send_bytes = 0;
  bool send_guarded = false;
  std::int64_t send_t_ns = -1;   // first write to the send buffer after return; -1: none seen
  How send_how = How::None;
  std::string send_code;
  std::vector<SubRecord> subs;   // one per sub-message (peer for all-to-all, chunk for bcast)
  bool operator==(const CallRecord&) const = default;
};

struct TraceFile {
  int version = kTraceVersion;
  int rank = 0, size = 0;
  std::string executable;        // /proc/self/exe
  std::string run_id;            // the same on every rank of one run (broadcast at start)
  std::string clock;             // "tsc" or "monotonic"
  std::uint64_t page = 4096;
  // What a page's first access after the guard's protection change costs beyond a warm access,
  // measured by the rank at start (trace/page_reopen.hh); 0: not measured. Part of every gap
  // between first touches of a program that reads the pages in between.
  std::uint64_t page_reopen_ns = 0;
  std::string ended_by;          // "finalize" or "exit" (then possibly incomplete)
  std::uint64_t dropped = 0;     // calls not recorded (storage limit)
  std::vector<SiteInfo> sites;
  std::vector<CallRecord> calls;
  bool operator==(const TraceFile&) const = default;
};

std::string serialize(const TraceFile& t);
// `name` is used in error messages ("FILE line N: ..."), which name the file.
Result<TraceFile> parse(const std::string& text, const std::string& name);
Result<TraceFile> read_trace_file(const std::string& path);
// The file name of `rank`'s trace inside the output directory.
std::string trace_file_name(int rank);

// Percent-escaping of one token (space, '%', control characters; empty -> "-").
std::string escape_token(const std::string& s);
std::string unescape_token(const std::string& s);

std::string hex64(std::uint64_t v);  // "0x%016llx"

}  // namespace tnbc::trace
