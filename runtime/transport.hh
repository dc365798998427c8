// How steps reach the network. The executor (runtime/executor.hh) hands each step it starts to
// the transport that carries its kind, and asks every transport what completed. Point-to-point
// (p2p_transport.cc: MPI_Isend / MPI_Irecv / MPI_Testsome on tnbc's private communicator)
// carries Send and Recv; a transport for RMA steps (Put, Flag) adds its kinds and does its own
// progress (polling flags, a broadcaster role) in poll().
//
// Every MPI return code is checked here: a failure is a Status naming the collective, the step
// and MPI's error string (the private communicator returns errors instead of aborting).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "runtime/schedule.hh"
#include "runtime/status.hh"

namespace tnbc {

struct InFlight;

// A step started and not yet complete, for handing over to another executor (the calling
// thread's sends go on completing in the progress thread after the call returns). `counts`:
// whether it counts against its driver's send window.
struct Started {
  InFlight* f = nullptr;
  int step = -1;
  MPI_Request request{};
  bool counts = true;
};

// Told about every completion (the executor).
class Completions {
 public:
  virtual ~Completions() = default;
  virtual void completed(InFlight& f, int step, bool counts, long long now_ns) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual bool carries(StepKind k) const = 0;
  virtual Status start(InFlight& f, int step) = 0;
  // Transport-specific progress, then every started step that completed goes to `done`.
  virtual Status poll(Completions& done) = 0;
  // Started and not complete.
  virtual std::size_t busy() const = 0;
  // Gives up every started step (the requests stay alive: adopt() them elsewhere).
  virtual std::vector<Started> release() = 0;
  virtual void adopt(const Started& s) = 0;
};

std::unique_ptr<Transport> make_p2p_transport();
// One of each transport tnbc has (point-to-point, RMA: rma_transport.hh), for a new executor.
std::vector<std::unique_ptr<Transport>> default_transports();

// "MPI_ERR_TRUNCATE: message truncated" for an MPI error code.
std::string mpi_error_text(int code);

}  // namespace tnbc
