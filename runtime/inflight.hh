// One collective in flight: its pieces, staging memory, guard regions and progress state.
// Created by the engine in the calling thread, driven by the progress thread, freed when the
// last reference (progress thread, or a caller waiting for completion) lets go.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/guard.hh"
#include "runtime/pool.hh"
#include "runtime/schedule.hh"
#include "runtime/stats.hh"

namespace tnbc {

class Pool;

struct InFlight {
  Kind kind = Kind::Alltoall;
  std::uint64_t sequence = 0;  // per communicator, for messages
  MPI_Comm comm = MPI_COMM_NULL;  // tnbc's private duplicate
  int comm_size = 0;
  int base_tag = 0;
  std::vector<Piece> pieces;

  // Send and receive staging come from separate pools: a receive staging whose pages were swapped
  // back to the program (runtime/uffd.hh) is left empty, and copying the next send data into such
  // a block would fault in every page afresh.
  Pool* pool = nullptr;       // send_block's
  Pool* recv_pool = nullptr;  // recv_block's
  Block send_block, recv_block;
  char* send_data = nullptr;    // what Send pieces read (offsets index it)
  char* recv_data = nullptr;    // what Recv pieces write
  char* user_recv = nullptr;    // where published Recv pieces go (nullptr: the caller unpacks;
                                // == recv_data: MPI received them in place, nothing to copy)
  // Mode optimize, a call with no overlap to gain: the calling thread runs the whole schedule
  // (runtime/in_call.hh), never guarded, and returns when every piece is done, sends included,
  // so send_data and recv_data may be the program's own buffers (engine.cc). The progress
  // thread never sees it.
  bool to_completion = false;
  // How the regions are held back: PROT_NONE (publish through /proc/self/mem, then mprotect) or
  // emptied userfaultfd pages (publish a region with one UFFDIO_COPY from staging).
  enum class Guard : std::uint8_t { None, Protect, Uffd };
  Guard guard = Guard::None;
  // Uffd only: the regions' pages were moved into the staging (runtime/uffd.hh, page swapping)
  // and publication moves them back; else they were emptied and publication copies.
  bool swapped = false;

  std::unique_ptr<Region[]> regions;
  std::size_t region_count = 0;
  std::vector<std::pair<int, int>> piece_regions;  // per piece: [first, last) region index
  std::vector<bool> in_call;  // per piece: must arrive before the call returns
  std::vector<bool> by_caller;  // per piece: posted by the calling thread, not the progress thread

  // Lazy send copy (runtime/send_copy.hh): per Send piece, where its bytes are in the program's
  // send buffer (nullptr: already in staging) and their state: 0 only there, 1 being copied,
  // 2 in staging. The read-only page runs are regions with a hook; `send_open`: 0 read-only,
  // 1 being made writable, 2 writable again.
  std::vector<const char*> send_src;
  std::unique_ptr<std::atomic<std::uint8_t>[]> send_state;
  std::atomic<int> sends_unstaged{0};
  std::unique_ptr<Region[]> send_regions;
  std::size_t send_region_count = 0;
  std::atomic<int> send_open{2};

  std::unique_ptr<std::atomic<std::uint8_t>[]> done;  // per piece
  std::atomic<int> recv_remaining{0};
  std::atomic<int> regions_remaining{0};

  // False while the calling thread is still in the call: bodies wait so that the edge pieces
  // other ranks need before they can return are not queued behind bulk data on the link.
  std::atomic<bool> bodies_released{true};

  // Progress-thread state.
  std::vector<int> unposted_sends;  // indices, by priority
  bool recvs_posted = false;
  int sends_in_flight = 0;
  int sends_remaining = 0;
  long long submitted_ns = 0;        // for the debug log
  long long call_start_ns = 0;       // when the calling thread entered the collective (debug log)
  std::uint64_t polls_at_submit = 0;

  ~InFlight() {
    if (pool) pool->release(send_block);
    if (recv_pool) recv_pool->release(recv_block);
  }
  bool finished() const {
    return recv_remaining.load(std::memory_order_acquire) == 0 && sends_remaining == 0 &&
           regions_remaining.load(std::memory_order_acquire) == 0;
  }
};

// Copies piece `i` into place and publishes every region it completes (progress thread, or the
// caller for pieces it produces itself). Returns false (after logging) if the copy failed.
bool publish_piece(InFlight& f, int i);

}  // namespace tnbc
