// The collectives' files (runtime/coll/) without MPI: each simulated rank's call is laid out and
// prepared by its Collective, with fakes for MPI's datatype answers and the engine's services,
// run by an executor over the loopback transport (loopback.hh), and its receive buffer compared
// with what MPI defines. Both ways a call can run: an early return's staging (send area, receive
// area published into the buffer) and a call completing in it (the program's buffers, the own
// block as a Copy step).
#include <catch2/catch.hpp>

#include <cstring>
#include <numeric>

#include "loopback.hh"
#include "runtime/coll/collective.hh"
#include "runtime/config.hh"
#include "runtime/send_copy.hh"

using namespace tnbc;
using namespace tnbc::test;

namespace {

// Every datatype is one dense byte; staging comes from vectors the fake owns; nothing is fenced.
class FakeServices final : public Services {
 public:
  TypeInfo type(MPI_Datatype) override { return {1, 1, true}; }
  ByteRange span(const void* buf, long long count, MPI_Datatype) override {
    const auto lo = reinterpret_cast<std::uintptr_t>(buf);
    return {lo, lo + static_cast<std::uintptr_t>(count)};
  }
  void fence(const void*, long long, MPI_Datatype) override { ++fences; }
  char* send_area(std::size_t bytes) override { return area(bytes, 0); }
  char* recv_area(std::size_t bytes, const void* user) override {
    return area(bytes, reinterpret_cast<std::uintptr_t>(user) % kPage);
  }
  Status pack(const void* src, long long, MPI_Datatype, char* dst, std::size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return {};
  }
  Policy& policy() override { return *policy_; }
  int fences = 0;

 private:
  char* area(std::size_t bytes, std::size_t shift) {
    areas_.push_back(std::make_unique<std::vector<char>>(bytes + shift + 1, '\x5a'));
    return areas_.back()->data() + shift;
  }
  std::unique_ptr<Policy> policy_ = make_policy(Settings{}, kPage, nullptr);
  std::vector<std::unique_ptr<std::vector<char>>> areas_;
};

// Runs one call per rank (`calls[r]`) to completion; `in_call`: as a call that completes in it.
void run(std::vector<CollCall>& calls, bool in_call) {
  const int n = static_cast<int>(calls.size());
  Network net;
  Loopback::finished_.clear();
  WindowGate gate(0);
  std::vector<Rank> ranks(static_cast<std::size_t>(n));
  std::vector<std::unique_ptr<FakeServices>> services;
  std::vector<std::unique_ptr<Executor>> execs;
  for (int r = 0; r < n; ++r) {
    const CollCall& c = calls[static_cast<std::size_t>(r)];
    services.push_back(std::make_unique<FakeServices>());
    FakeServices& s = *services.back();
    const model::Topology topo = model::Topology::block(n, n, n, 1);
    const CallContext ctx{r, n, kPage, &s, &s.policy(), &topo};
    const Collective& coll = collective(c.kind);
    const Layout l = coll.layout(c, ctx);
    Prepared p;
    REQUIRE(coll.prepare(c, l, in_call, ctx, s, p).ok());
    CHECK(p.local == Reason::None);  // dense types: nothing in the layout keeps it from returning early
    CHECK(s.fences > 0);  // the buffers were fenced before anything was staged
    InFlight& f = *ranks[static_cast<std::size_t>(r)].f;
    f.kind = c.kind;
    f.schedule = std::move(p.schedule);
    f.send_data = p.send_data;
    f.recv_data = p.recv_data;
    f.user_recv = p.user_recv;
    f.ready_to_run();
    if (!p.send_src.empty()) stage_sends(f, p.send_src, false, kPage, false);
    CHECK(p.unpack.empty());  // dense types: published in place
    net.rank_of[&f] = r;
    execs.push_back(std::make_unique<Executor>(gate, loopback(net)));
    execs.back()->add(ranks[static_cast<std::size_t>(r)].f, Scope::All);
  }
  std::vector<Executor*> raw;
  for (auto& e : execs) raw.push_back(e.get());
  run_all(raw, ranks);
}

char byte_of(int rank, std::size_t i) { return static_cast<char>(rank * 41 + i * 7 + 1); }

// Rank r's send data: `bytes` bytes no other rank sends.
std::vector<char> data_of(int r, std::size_t bytes) {
  std::vector<char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = byte_of(r, i);
  return v;
}

// A buffer argument of dense bytes (the fake's only datatype).
BufferArg bytes_at(const void* buf, int count, const int* counts = nullptr, const int* displs = nullptr) {
  return {buf, count, counts, displs, MPI_Datatype{}};
}

}  // namespace

TEST_CASE("collectives: Allgather through its file, in place and not, staged and in the call") {
  const int n = 4;
  const std::size_t block = 5 * kPage + 77;  // head, body pieces, tail
  for (bool in_call : {false, true})
    for (bool in_place : {false, true}) {
      CAPTURE(in_call, in_place);
      std::vector<std::vector<char>> send(n), recv(n);
      std::vector<CollCall> calls(n);
      for (int r = 0; r < n; ++r) {
        auto& s = send[static_cast<std::size_t>(r)] = data_of(r, block);
        auto& v = recv[static_cast<std::size_t>(r)];
        v.assign(n * block, '\0');
        if (in_place) std::copy(s.begin(), s.end(), v.begin() + r * static_cast<long>(block));
        CollCall& c = calls[static_cast<std::size_t>(r)];
        c.kind = Kind::Allgather;
        c.in_place = in_place;
        c.send = bytes_at(in_place ? nullptr : s.data(), static_cast<int>(block));
        c.recv = bytes_at(v.data(), static_cast<int>(block));
      }
      run(calls, in_call);
      for (int r = 0; r < n; ++r)
        for (int p = 0; p < n; ++p)
          CHECK(std::equal(send[static_cast<std::size_t>(p)].begin(), send[static_cast<std::size_t>(p)].end(),
                           recv[static_cast<std::size_t>(r)].begin() + p * static_cast<long>(block)));
    }
}

TEST_CASE("collectives: Allgatherv leaves the gaps between blocks untouched, blocks in any order") {
  const int n = 3;
  // Block sizes (one of them empty) and displacements in reverse order with gaps.
  const std::vector<int> counts{static_cast<int>(3 * kPage + 5), 0, static_cast<int>(7 * kPage + 11)};
  const std::vector<int> displs{static_cast<int>(12 * kPage + 100), static_cast<int>(11 * kPage), 9};
  const std::size_t total = 16 * kPage;
  for (bool in_call : {false, true}) {
    CAPTURE(in_call);
    std::vector<std::vector<char>> send(n), recv(n);
    std::vector<CollCall> calls(n);
    for (int r = 0; r < n; ++r) {
      const int count = counts[static_cast<std::size_t>(r)];
      send[static_cast<std::size_t>(r)] = data_of(r, static_cast<std::size_t>(count));
      recv[static_cast<std::size_t>(r)].assign(total, '#');
      CollCall& c = calls[static_cast<std::size_t>(r)];
      c.kind = Kind::Allgatherv;
      c.send = bytes_at(send[static_cast<std::size_t>(r)].data(), count);
      c.recv = bytes_at(recv[static_cast<std::size_t>(r)].data(), 0, counts.data(), displs.data());
    }
    run(calls, in_call);
    for (int r = 0; r < n; ++r) {
      std::vector<char> expect(total, '#');
      for (int p = 0; p < n; ++p)
        std::copy(send[static_cast<std::size_t>(p)].begin(), send[static_cast<std::size_t>(p)].end(),
                  expect.begin() + displs[static_cast<std::size_t>(p)]);
      CHECK(recv[static_cast<std::size_t>(r)] == expect);
    }
  }
}

TEST_CASE("collectives: Alltoall through its file, staged and in the call") {
  const int n = 3;
  const std::size_t per = 4 * kPage + 3;
  for (bool in_call : {false, true}) {
    CAPTURE(in_call);
    std::vector<std::vector<char>> send(n), recv(n);
    std::vector<CollCall> calls(n);
    for (int r = 0; r < n; ++r) {
      send[static_cast<std::size_t>(r)] = data_of(r, n * per);
      recv[static_cast<std::size_t>(r)].assign(n * per, '\0');
      CollCall& c = calls[static_cast<std::size_t>(r)];
      c.kind = Kind::Alltoall;
      c.send = bytes_at(send[static_cast<std::size_t>(r)].data(), static_cast<int>(per));
      c.recv = bytes_at(recv[static_cast<std::size_t>(r)].data(), static_cast<int>(per));
    }
    run(calls, in_call);
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        CHECK(std::equal(recv[static_cast<std::size_t>(r)].begin() + p * static_cast<long>(per),
                         recv[static_cast<std::size_t>(r)].begin() + (p + 1) * static_cast<long>(per),
                         send[static_cast<std::size_t>(p)].begin() + r * static_cast<long>(per)));
  }
}

namespace {

// Two datatypes told apart by their handles: the send type of 4 bytes, the receive type of 8.
// Every call asks Collective::size (the pass-through path too): it must need each type's size
// only, never the layout questions type() asks MPI (extent, true extent, combiners).
MPI_Datatype handle(std::uintptr_t id) {
  MPI_Datatype t{};
  static_assert(sizeof t <= sizeof id);
  std::memcpy(&t, &id, sizeof t);
  return t;
}

class SizeOnlyTypes final : public Types {
 public:
  TypeInfo type(MPI_Datatype t) override {
    ++layout_questions;
    return {size(t), static_cast<std::ptrdiff_t>(size(t)), true};
  }
  std::size_t size(MPI_Datatype t) override {
    ++size_questions;
    return t == handle(1) ? 4 : t == handle(2) ? 8 : 0;
  }
  ByteRange span(const void*, long long, MPI_Datatype) override { return {}; }
  int layout_questions = 0, size_questions = 0;
};

// Implements type() only: size() is its size.
class TypeOnlyTypes final : public Types {
 public:
  TypeInfo type(MPI_Datatype) override { return {12, 16, false}; }
  ByteRange span(const void*, long long, MPI_Datatype) override { return {}; }
};

}  // namespace

TEST_CASE("collectives: a call's size asks the datatypes' sizes only") {
  const int n = 4, rank = 2;
  const int counts_up[n] = {1, 2, 3, 4}, counts_down[n] = {4, 3, 2, 1}, displs[n] = {0, 4, 8, 12};
  const MPI_Datatype four = handle(1), eight = handle(2);
  int dummy = 0;
  auto size_of = [&](const CollCall& c) {
    SizeOnlyTypes types;
    const model::Topology topo = model::Topology::block(n, n, n, 1);
    const CallContext ctx{rank, n, kPage, &types, nullptr, &topo};
    const Collective::Size s = collective(c.kind).size(c, ctx);
    CHECK(types.layout_questions == 0);
    CHECK(types.size_questions > 0);
    return s;
  };
  CollCall c;
  c.send = {&dummy, 6, nullptr, nullptr, four};
  c.recv = {&dummy, 3, nullptr, nullptr, eight};
  SECTION("Alltoall") {
    c.kind = Kind::Alltoall;
    const Collective::Size s = size_of(c);
    CHECK(s.received == 3 * 8 * n);
    CHECK(s.unit == 3 * 8);
    CHECK(s.sent == 6 * 4 * n);
  }
  SECTION("Alltoallv") {
    c.kind = Kind::Alltoallv;
    c.send = {&dummy, 0, counts_down, displs, four};
    c.recv = {&dummy, 0, counts_up, displs, eight};
    const Collective::Size s = size_of(c);
    CHECK(s.received == (1 + 2 + 3 + 4) * 8);
    CHECK(s.unit == kNoUnit);
    CHECK(s.sent == (4 + 3 + 2 + 1) * 4);
  }
  SECTION("Allgather and Allgatherv") {
    c.kind = Kind::Allgather;
    CHECK(size_of(c).received == 3 * 8 * n);
    c.kind = Kind::Allgatherv;
    c.recv = {&dummy, 0, counts_up, displs, eight};
    const Collective::Size s = size_of(c);
    CHECK(s.received == (1 + 2 + 3 + 4) * 8);
    CHECK(s.unit == 4 * 8);
    CHECK(s.sent == 3 * 8 * n);  // its own block (counts[rank] = 3) to every rank
  }
  SECTION("Bcast, at the root and elsewhere") {
    c.kind = Kind::Bcast;
    c.recv = {&dummy, 5, nullptr, nullptr, eight};
    c.root = rank;
    CHECK(size_of(c).sent == 5 * 8);
    c.root = 0;
    const Collective::Size s = size_of(c);
    CHECK(s.received == 5 * 8);
    CHECK(s.sent == 0);
  }
}

TEST_CASE("collectives: a Types that answers type() alone gives its size") {
  TypeOnlyTypes types;
  CHECK(types.size(handle(7)) == 12);
}
