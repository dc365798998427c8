// What the trace's guard costs a program's page beyond a warm access: the first access after the
// page's protection went to PROT_NONE and back (the tracer guards a call's whole pages, and opens a
// sub-message's pages at its first touch). The program then pays it once per page it reads, in the
// gaps between its first touches, which a run without the trace does not. On a PVM guest (shadow
// page tables) 4-7 us a page, 10-13 under ASan, session 44; on bare metal about a TLB miss.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tnbc::trace {

// Measured on `pages` pages of scratch: the median over `rounds` of (a read of one byte per page
// after PROT_NONE and back - the same read warm) / pages, at least 0; 0 when the scratch cannot
// be mapped or protected. ~pages x rounds x the cost (2 ms on the PVM guest).
std::uint64_t measure_page_reopen_ns(std::size_t page, int pages = 64, int rounds = 5);

// The whole pages of `bytes` (0 without a page size): what a reader of them pays the reopening for.
inline std::uint64_t reopened_pages(std::uint64_t bytes, std::uint64_t page) { return page ? bytes / page : 0; }

// A gap between two first touches without the reopening of the `bytes` the first one opened
// (their whole pages, which an in-order reader reads before the next first touch), at least 0.
double gap_without_reopen(double gap_ns, std::uint64_t bytes, std::uint64_t page, std::uint64_t reopen_ns);

}  // namespace tnbc::trace
