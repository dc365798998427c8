// The send side of an early-returning collective: the program may overwrite its send buffer
// as soon as the call returns, so tnbc must hold the bytes it still has to send.
//
// Eager (TNBC_SEND_COPY=eager): every send piece is copied into staging inside the call.
// Lazy (TNBC_SEND_COPY=lazy; lazy-sends: the same without the own block's Copy step, which is then
// copied into place in the call): only the pieces sent from inside the call (edges) are copied there; the
// pages holding the other pieces become read-only, and the progress thread copies each piece
// into staging just before it posts it, in priority order. A write by the program to such a
// page faults; the region's hook copies the pieces on that page (and any other piece sharing a
// page with them), makes their pages writable again and returns, so the write goes through (one
// fault per piece written, and only what is written is copied in the program's time).
//
//   call:      copy edge pieces -> staging; mprotect(body pages, PROT_READ); return
//   progress:  before Isend(piece i): copy i  (user -> staging) ... last one: pages RW again
//              the own block's Copy steps (whole-page pieces, one per round once the caller
//              has left: executor.cc): user -> receive area directly (coll/exchange.cc; a
//              write fault's hook copies them there too, never into the send staging)
//   program:   write to a body page -> SIGSEGV -> hook: copy its pieces, their pages RW -> retried
//   fences:    free/munmap/read(2)/MPI calls/fork on those pages: the hook copies all left, all RW
//
// Nothing here waits for another rank: a write fault costs at most the copies left to do.
#pragma once

#include <cstddef>
#include <vector>

namespace tnbc {

struct InFlight;

// Stages the Send pieces of `f` and the own block's Copy steps whose first byte is at src[i] in
// the program's send buffer (src[i] unused for other steps). With `lazy`, pieces not marked edge
// are left in place and their pages made read-only; if that is not possible (memory not private
// and writable, on the calling thread's stack, mprotect refused) everything is copied now (the
// own block into the send area). Call before the pieces are submitted. `stream`: the copies bypass
// the cache (runtime/bulk_copy.hh, streams() of everything the call sends); they also do when
// the bytes copied here alone exceed it. Returns what it copied now, and the copies' time (ns).
struct StagedCopies {
  std::size_t bytes = 0, pieces = 0;
  long long ns = 0;
};
StagedCopies stage_sends(InFlight& f, const std::vector<const char*>& src, bool lazy, std::size_t page, bool stream);

// Progress thread, before posting Send piece i: true once its bytes are in staging (copying
// them now if nobody has); false while a program thread is copying it (try again later).
bool send_piece_staged(InFlight& f, int i);

// Runs Copy step i (the own block): copies it into the receive area, from the program's
// read-only send buffer if its bytes are still only there (once: a write fault's hook may have
// copied them into place already, or be copying them now: that memcpy is waited for), else from
// the send area.
void run_copy_step(InFlight& f, int i);

// At retirement: unlists the send regions (every piece has been copied by then).
void retire_send_regions(InFlight& f);

}  // namespace tnbc
