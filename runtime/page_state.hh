// What a page of this process holds, asked of /proc/self/pagemap, and what publication does
// with a page of the program's buffer that it finds already there (userfaultfd's EEXIST).
//
// Publication installs a region's pages from the staging: UFFDIO_MOVE takes the staging's pages
// (which leaves the staging's pages empty), UFFDIO_COPY copies them. A page of the program's
// that is already there when publication comes to it was not supposed to be (the region's pages
// were emptied when it was held back, and only publication fills them): its data is then in the
// staging's page, or, when that page is empty, already in the program's page (moved there) —
// copying an empty staging page would read zeros and write them over the received data
// (seen once in CI, session 68: Linux 6.17-6.18's UFFDIO_MOVE moving pages it did not count,
// which uffd.cc now counts itself). The staging's page decides:
//
//   staging page holds data (in memory or swapped out)   copy it over the program's page
//   staging page empty (never written, or moved away)    leave the program's page as it is
//   pagemap unreadable                                   an error: the caller cannot publish
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/status.hh"

namespace tnbc {

enum class PageHolds { Data, Nothing, Unknown };
// The page at `addr` (any address in it): Data if it is mapped (the shared zero page included)
// or swapped out; Nothing if it has never been touched, was emptied (MADV_DONTNEED) or moved
// away; Unknown if /proc/self/pagemap cannot be read.
PageHolds page_holds(std::uintptr_t addr);

// Settles the program's page at `dst` (page-aligned, found already there) from the staging's
// `page` bytes at `src`, by the table above. `copied`: whether it wrote (for the caller's word).
Status settle_present_page(std::uintptr_t dst, const char* src, std::size_t page, bool& copied);

}  // namespace tnbc
