// The library's process-wide state: settings, counters, this rank's place in MPI_COMM_WORLD
// and the engine that runs the collectives. Created at MPI_Init, torn down at MPI_Finalize; the
// shim's entry points reach everything through Runtime::get(). Which engine a mode runs is not
// decided here but by the composition root (shim/compose.cc), so runtime/ names no mode's parts.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "runtime/config.hh"
#include "runtime/report.hh"
#include "runtime/stats.hh"

namespace tnbc {

class Engine;

class Runtime {
 public:
  static Runtime& get();

  // Reads the TNBC_* environment (invalid values fall back to running blocking; the messages
  // are printed by start(), once for all ranks). Called before PMPI_Init so `mode == off` can
  // leave MPI untouched.
  void configure();
  // After PMPI_Init*, in this order (shim/compose.cc, the composition root, decides what runs):
  // begin() learns the rank and compares the settings that shape messages between ranks
  // (collective over MPI_COMM_WORLD); say() queues a start-up message; flush_messages() prints
  // them once for all ranks (collective); attach() installs the engine (nullptr: collectives
  // run blocking for `reason`); started() opens the entry points.
  void begin();
  void say(LogLevel level, std::string text) { pending_.push_back({level, std::move(text)}); }
  void flush_messages();
  void attach(std::unique_ptr<Engine> engine, Reason reason_if_none);
  void started() { started_.store(true, std::memory_order_release); }
  // Before PMPI_Finalize: completes every collective in flight, stops the progress thread,
  // writes the per-rank summary.
  void stop();

  const Settings& settings() const { return settings_; }
  Stats& stats() { return stats_; }
  bool intercepting() const { return started_.load(std::memory_order_acquire) && settings_.mode != Mode::Off; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  // nullptr when collectives run blocking (mode, thread level, or disabled after an error).
  Engine* engine() { return engine_.get(); }
  Reason blocking_reason() const { return blocking_reason_; }
  void run_blocking(Reason why) { blocking_reason_ = why; }

 private:
  Runtime();
  ~Runtime();
  void write_summary();
  // Rank 0, with TNBC_OUTPUT_DIR set: what was hidden, the time in the calls, and the command
  // that shows the report (collective over MPI_COMM_WORLD, bounded by TNBC_TIMEOUT).
  void say_totals();
  // Settings that decide the messages (and the page size) differ between ranks: every rank
  // runs blocking, with a message. Collective over MPI_COMM_WORLD.
  void check_uniform_settings();

  Settings settings_;
  Stats stats_;
  std::atomic<bool> started_{false};
  int rank_ = -1, size_ = 0;
  long long init_ns_ = 0;  // when MPI_Init was entered (the run's wall time starts)
  Reason blocking_reason_ = Reason::Mode;
  std::unique_ptr<Engine> engine_;
  std::vector<Message> pending_;  // start-up messages, said in start()
};

}  // namespace tnbc
