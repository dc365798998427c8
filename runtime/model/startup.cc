#include "runtime/model/startup.hh"

#include "runtime/guard_backend.hh"
#include "runtime/log.hh"
#include "runtime/model/probe.hh"
#include "runtime/output_file.hh"
#include "runtime/stats.hh"

namespace tnbc::model {

std::shared_ptr<const Inputs> start_model(const Settings& s, MPI_Comm world_dup, GuardBackend* backend,
                                          std::size_t page, Stats& stats) {
  int rank = 0;
  PMPI_Comm_rank(world_dup, &rank);
  const World w = gather_world(world_dup);
  Obtained got = obtain_machine(s.machine, world_dup, w, backend, page, s.poll_min_us * 1000);
  auto in = std::make_shared<Inputs>();
  in->machine = std::move(got.machine);
  in->world = w.topology();
  in->source = got.source;
  in->file = got.file;
  in->summary->set_start(*in, got.problem, got.ms);
  std::shared_ptr<Summary> summary = in->summary;
  stats.add_block("model", [summary] { return summary->json(); });
  if (rank == 0) {
    if (!got.problem.empty())
      log(LogLevel::Warn, "%s; the cost model uses the start-up probe's measurements instead", got.problem.c_str());
    if (got.source == "file" && in->machine.disturbed())
      log(LogLevel::Warn, "the machine file %s was %s", got.file.c_str(),
          load_note(in->machine.others_cpu_share, in->machine.steal_share).c_str());
    if (log_enabled(LogLevel::Info)) {
      const Level& l = in->machine.at(in->world.nodes() > 1 ? LevelKind::InterNode : LevelKind::IntraNode);
      log(LogLevel::Info, "cost model: machine from %s (%s; %.1f ms): L %.1f us, G %.3f ns/B (%.0f MB/s), o %.1f us, "
          "%d node%s, %d rank%s per node, %d CPU%s per node",
          got.source == "file" ? "the machine file" : "the start-up probe", got.source == "file" ? got.file.c_str() : "measured now",
          got.ms, l.L_ns / 1e3, l.G_ns_per_byte, l.G_ns_per_byte > 0 ? 1e3 / l.G_ns_per_byte : 0.0, l.os_ns / 1e3,
          in->world.nodes(), in->world.nodes() == 1 ? "" : "s", in->world.max_per_node(),
          in->world.max_per_node() == 1 ? "" : "s", in->world.cpus_per_node, in->world.cpus_per_node == 1 ? "" : "s");
    }
    if (!s.output_dir.empty())
      if (Status st = write_output_file(s.output_dir, kMachineFileName, machine_json(in->machine)); !st.ok())
        log(LogLevel::Warn, "%s; the machine the cost model used is not written", st.message().c_str());
  }
  return in;
}

}  // namespace tnbc::model
