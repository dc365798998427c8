// Point-to-point transport (runtime/transport.hh): one MPI message per Send or Recv step, on
// tnbc's private duplicate of the program's communicator, tag = the collective's base tag +
// the step's tag offset. The requests of one driver are tested together (MPI_Testsome).
#include <string>

#include "runtime/futex.hh"
#include "runtime/inflight.hh"
#include "runtime/rma_transport.hh"
#include "runtime/transport.hh"

namespace tnbc {

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (PMPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(len));
}

namespace {

Status step_error(const InFlight& f, int i, const char* what, int code) {
  const Step& s = f.schedule[static_cast<std::size_t>(i)];
  return Status::error(std::string(what) + " of " + std::to_string(s.length) + " bytes " +
                           (s.kind == StepKind::Send ? "to" : "from") + " rank " + std::to_string(s.peer) + " in " +
                           kind_name(f.kind) + " #" + std::to_string(f.sequence) + " failed: " + mpi_error_text(code),
                       code);
}

class P2pTransport final : public Transport {
 public:
  bool carries(StepKind k) const override { return k == StepKind::Send || k == StepKind::Recv; }

  Status start(InFlight& f, int i) override {
    const Step& s = f.schedule[static_cast<std::size_t>(i)];
    MPI_Request req = MPI_REQUEST_NULL;
    const int tag = f.base_tag + s.tag_offset;
    const int count = static_cast<int>(s.length);
    const int rc = s.kind == StepKind::Send
                       ? PMPI_Isend(f.send_data + s.offset, count, MPI_BYTE, s.peer, tag, f.comm, &req)
                       : PMPI_Irecv(f.recv_data + s.offset, count, MPI_BYTE, s.peer, tag, f.comm, &req);
    if (rc != MPI_SUCCESS) return step_error(f, i, s.kind == StepKind::Send ? "MPI_Isend" : "MPI_Irecv", rc);
    requests_.push_back(req);
    owners_.push_back({&f, i, {}, true});
    return {};
  }

  Status poll(Completions& done) override {
    if (requests_.empty()) return {};
    indices_.resize(requests_.size());
    statuses_.resize(requests_.size());
    int count = 0;
    const int rc = PMPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices_.data(),
                                 statuses_.data());
    if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return Status::error("MPI_Testsome failed: " + mpi_error_text(rc), rc);
    if (count == MPI_UNDEFINED || count == 0) return {};
    Status first;
    const long long now = futex::now_ns();
    for (int k = 0; k < count; ++k) {
      const Started& o = owners_[static_cast<std::size_t>(indices_[static_cast<std::size_t>(k)])];
      const int err = rc == MPI_ERR_IN_STATUS ? statuses_[static_cast<std::size_t>(k)].MPI_ERROR : MPI_SUCCESS;
      if (err != MPI_SUCCESS) {
        if (first.ok()) first = step_error(*o.f, o.step, "a message", err);
        continue;
      }
      done.completed(*o.f, o.step, o.counts, now);
    }
    std::size_t w = 0;
    for (std::size_t r = 0; r < requests_.size(); ++r) {
      if (requests_[r] == MPI_REQUEST_NULL) continue;
      requests_[w] = requests_[r];
      owners_[w] = owners_[r];
      ++w;
    }
    requests_.resize(w);
    owners_.resize(w);
    return first;
  }

  std::size_t busy() const override { return requests_.size(); }

  std::vector<Started> release() override {
    std::vector<Started> out;
    for (std::size_t r = 0; r < requests_.size(); ++r) out.push_back({owners_[r].f, owners_[r].step, requests_[r], false});
    requests_.clear();
    owners_.clear();
    return out;
  }

  void adopt(const Started& s) override {
    requests_.push_back(s.request);
    owners_.push_back({s.f, s.step, {}, s.counts});
  }

 private:
  std::vector<MPI_Request> requests_;
  std::vector<Started> owners_;  // parallel to requests_ (request field unused)
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
};

}  // namespace

std::unique_ptr<Transport> make_p2p_transport() { return std::make_unique<P2pTransport>(); }

std::vector<std::unique_ptr<Transport>> default_transports() {
  std::vector<std::unique_ptr<Transport>> t;
  t.push_back(make_p2p_transport());
  t.push_back(make_rma_transport());
  return t;
}

}  // namespace tnbc
