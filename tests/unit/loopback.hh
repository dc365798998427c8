// Simulated ranks in one process for the executor's unit tests: a loopback transport on which a
// Send and the Recv of the same (from, to, tag) meet, and a loop that polls executors until every
// rank's collective is done. Shared by test_executor.cc and test_collectives.cc.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "runtime/executor.hh"

namespace tnbc::test {

inline constexpr std::size_t kPage = 4096;

// Messages between the simulated ranks: a Send and the Recv of the same (from, to, tag) meet.
struct Network {
  std::map<const InFlight*, int> rank_of;
  struct Posted {
    InFlight* f;
    int step;
    bool counts;
  };
  std::map<std::tuple<int, int, int>, Posted> sends, recvs;  // (from, to, tag)
  std::vector<std::pair<const InFlight*, int>> send_order;   // as started, for the order checks
};

class Loopback final : public Transport {
 public:
  explicit Loopback(Network& net) : net_(net) {}
  bool carries(StepKind k) const override { return k == StepKind::Send || k == StepKind::Recv; }
  Status start(InFlight& f, int i) override {
    const Step& s = f.schedule[static_cast<std::size_t>(i)];
    for (int d : f.schedule.after(static_cast<std::size_t>(i))) REQUIRE(f.done(static_cast<std::size_t>(d)));
    const int me = net_.rank_of.at(&f);
    if (s.kind == StepKind::Send) {
      net_.sends[{me, s.peer, s.tag_offset}] = {&f, i, true};
      net_.send_order.emplace_back(&f, i);
    } else {
      net_.recvs[{s.peer, me, s.tag_offset}] = {&f, i, true};
    }
    mine_.emplace_back(&f, i);
    return {};
  }
  Status poll(Completions& done) override {
    for (auto it = net_.sends.begin(); it != net_.sends.end();) {
      auto r = net_.recvs.find(it->first);
      if (r == net_.recvs.end()) {
        ++it;
        continue;
      }
      const Step& s = it->second.f->schedule[static_cast<std::size_t>(it->second.step)];
      const Step& q = r->second.f->schedule[static_cast<std::size_t>(r->second.step)];
      REQUIRE(s.length == q.length);
      std::copy_n(it->second.f->send_data + s.offset, s.length, r->second.f->recv_data + q.offset);
      finished_.push_back(it->second);
      finished_.push_back(r->second);
      net_.recvs.erase(r);
      it = net_.sends.erase(it);
    }
    // Complete only what this transport started (or adopted).
    for (auto it = finished_.begin(); it != finished_.end();) {
      auto m = std::find(mine_.begin(), mine_.end(), std::pair{it->f, it->step});
      if (m == mine_.end()) {
        ++it;
        continue;
      }
      mine_.erase(m);
      done.completed(*it->f, it->step, true, 1000 + static_cast<long long>(it->step));
      it = finished_.erase(it);
    }
    return {};
  }
  std::size_t busy() const override { return mine_.size(); }
  std::vector<Started> release() override {
    std::vector<Started> out;
    for (auto [f, i] : mine_) out.push_back({f, i, {}, false});
    mine_.clear();
    return out;
  }
  void adopt(const Started& s) override { mine_.emplace_back(s.f, s.step); }
  // Completions seen by no transport yet (shared between the executors of the test).
  static inline std::vector<Network::Posted> finished_;

 private:
  Network& net_;
  std::vector<std::pair<InFlight*, int>> mine_;
};

inline std::vector<std::unique_ptr<Transport>> loopback(Network& net) {
  std::vector<std::unique_ptr<Transport>> t;
  t.push_back(std::make_unique<Loopback>(net));
  return t;
}

// A simulated rank's collective, its areas owned by the test.
struct Rank {
  std::shared_ptr<InFlight> f = std::make_shared<InFlight>();
  std::vector<char> send, recv;
};

inline void run_all(std::vector<Executor*> ex, std::vector<Rank>& ranks) {
  for (int round = 0; round < 10000; ++round) {
    bool all = true;
    for (Rank& r : ranks) all = all && r.f->steps_left.load() == 0;
    if (all) return;
    for (Executor* e : ex) {
      bool moved = false;
      REQUIRE(e->poll(moved).ok());
    }
  }
  FAIL("the schedules did not finish");
}

}  // namespace tnbc::test
