// Holding a collective's received pages back until their data is there: the regions
// (runtime/guard.hh) are planned once, then the backends the policy names are tried in order
// until one holds them (hold_back). Two backends:
//
//   userfaultfd  (uffd_backend.cc) the pages leave the buffer (moved into the staging, or
//                emptied); a reader sleeps in the kernel until publication puts them back
//                (UFFDIO_MOVE) or installs copies (UFFDIO_COPY). Needs anonymous memory whose
//                every byte this collective writes (or is the rank's own block).
//   PROT_NONE    (protect_backend.cc) mprotect; a reader faults into tnbc's SIGSEGV handler and
//                waits; publication writes through /proc/self/mem, then one mprotect opens a
//                region. Works for any private memory (static data, buffers with gaps).
//
// A backend also publishes what it held back (publish.cc asks it per step and per region) and
// can run one hold-and-publish cycle on scratch memory, which is what the start-up probe
// measures (runtime/model/probe.hh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "runtime/coll/collective.hh"
#include "runtime/function_ref.hh"
#include "runtime/guard.hh"
#include "runtime/policy.hh"
#include "runtime/stats.hh"

namespace tnbc {

struct InFlight;

class GuardBackend {
 public:
  enum class Hold { Held, Unusable, HandlerLost };
  virtual ~GuardBackend() = default;
  virtual GuardKind kind() const = 0;
  // Holds back the regions of `f` (listed in the guard table already). Unusable / HandlerLost:
  // nothing changed, the next backend may try.
  virtual Hold hold(InFlight& f, const RegionPlan& plan, const GuardSpan& g) = 0;
  // Writes the bytes of landing step `i` that go to the program's memory ([dst, dst + n)).
  virtual Status write(InFlight& f, int i, char* dst, const char* src, std::size_t n) = 0;
  // Gives region `r` (its last step is in) back to the program.
  virtual Status open(InFlight& f, Region& r) = 0;
  // What the summary counts for a call it held (and whether its pages were swapped).
  virtual Stats::GuardUsed stats_kind() const = 0;
  // The start-up probe and `tnbc calibrate` (runtime/model/probe.hh): hold back and publish
  // [user, user + bytes) once, from `staging`; the two phases' times in `t` (ns). `receive` runs
  // between them, untimed: it writes the staging as the MPI library's receive would.
  struct CycleTimes {
    double hold_ns = 0, publish_ns = 0;
  };
  virtual bool cycle(char* user, char* staging, std::size_t bytes, CycleTimes& t, FunctionRef<void()> receive) = 0;
  virtual const char* probe_name() const = 0;
};

// `swap`: move pages where the kernel can (UFFDIO_MOVE) rather than copy.
std::unique_ptr<GuardBackend> make_uffd_backend(bool swap);
std::unique_ptr<GuardBackend> make_protect_backend();

// Plans the regions of `f`'s receive layout (`g`), lists them in the guard table and holds them
// back with the first of `backends` that can; sets f.guard. Reason::None: the call may return
// early. Else why it completes in the call, with nothing held (f.in_call marks the steps that
// must arrive before an early return either way).
Reason hold_back(InFlight& f, const GuardSpan& g, std::span<GuardBackend* const> backends, std::size_t page);

}  // namespace tnbc
