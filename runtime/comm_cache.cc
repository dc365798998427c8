#include "runtime/comm_cache.hh"

#include <sched.h>

#include <algorithm>
#include <string>

#include "runtime/engine.hh"
#include "runtime/fatal.hh"
#include "runtime/fnv1a.hh"
#include "runtime/futex.hh"
#include "runtime/log.hh"
#include "runtime/rma_transport.hh"
#include "runtime/roll_call.hh"

namespace tnbc {

namespace {
int delete_private(MPI_Comm, int, void* value, void*) {
  auto* pc = static_cast<PrivateComm*>(value);
  // Nothing of tnbc may still use the duplicate when the user's communicator goes away:
  // sends still waiting for the window would be posted on a freed communicator.
  if (Engine* e = Engine::current()) e->drain();
  rma_release(*pc);
  if (pc->comm != MPI_COMM_NULL) PMPI_Comm_free(&pc->comm);
  delete pc;
  return MPI_SUCCESS;
}
int delete_topology(MPI_Comm, int, void* value, void*) {
  delete static_cast<model::Topology*>(value);
  return MPI_SUCCESS;
}
}  // namespace

CommCache::CommCache() {
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_private, &keyval_, nullptr);
  PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_topology, &topology_keyval_, nullptr);
}

const model::Topology& CommCache::topology(MPI_Comm user, const model::Topology& world) {
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(user, topology_keyval_, &value, &found);
  if (found) return *static_cast<model::Topology*>(value);
  auto* t = new model::Topology(model::comm_topology(user, world));
  PMPI_Comm_set_attr(user, topology_keyval_, t);
  return *t;
}

void wait_collective(MPI_Request& req, MPI_Comm user, long long timeout_ns, const char* what, const char* role,
                     const char* step, RollCallAt* at) {
  long long start = futex::now_ns();
  bool waited_again = false;
  for (int done = 0; PMPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done;) {
    if (at) at->roll->answer(at->call);
    if (futex::now_ns() - start <= timeout_ns) {
      sched_yield();
      continue;
    }
    int n = 0, me = 0;
    PMPI_Comm_size(user, &n);
    PMPI_Comm_rank(user, &me);
    const long long timeout_s = timeout_ns / 1000000000LL;
    if (!at) {
      log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) in %s, %s on a communicator of %d ranks (this is rank %d "
                           "of it): %s did not complete, so some rank of it never called this collective",
          timeout_s, what, role, n, me, step);
      end_job();  // pauses first: the launcher forwards the report before the abort
    }
    // The others answer within microseconds from this same loop; a tenth of the timeout leaves
    // room for a crowded node's scheduler. A rank that comes during it may complete the
    // collective before its wait answers: then every rank came.
    const std::vector<int> missing = at->roll->absent(at->call, timeout_ns / 10, at->members);
    int came = 0;
    PMPI_Test(&req, &came, MPI_STATUS_IGNORE);
    if (came || (missing.empty() && !waited_again)) {
      log(LogLevel::Warn, "%s in %s, %s on a communicator of %d ranks (this is rank %d of it), did not complete "
                          "within TNBC_TIMEOUT=%llds: %s",
          step, what, role, n, me, timeout_s,
          came ? "it completed during a roll call (a rank came late)"
               : "every rank answered a roll call (one came late), so it waits once more as long");
      if (came) return;
      waited_again = true;
      start = futex::now_ns();
      continue;
    }
    std::string absent;
    for (int r : missing) absent += (absent.empty() ? "" : ", ") + std::to_string(r);
    if (missing.empty())
      log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) in %s, %s on a communicator of %d ranks (this is rank "
                           "%d of it): %s did not complete in twice the timeout, though every rank answered a "
                           "roll call in it (MPI did not complete it)",
          timeout_s, what, role, n, me, step);
    else
      log(LogLevel::Error, "timeout (TNBC_TIMEOUT=%llds) in %s, %s on a communicator of %d ranks (this is rank %d "
                           "of it): %s did not complete, so some rank of it never called this collective; ranks of "
                           "it that did not answer a roll call within a tenth of the timeout, so never reached this "
                           "collective: %s",
          timeout_s, what, role, n, me, step, absent.c_str());
    end_job();
  }
}

RollCallAt CommCache::world_roll_call(MPI_Comm user) const {
  RollCallAt at;
  void* value = nullptr;
  int found = 0, inter = 0;
  PMPI_Comm_test_inter(user, &inter);
  if (inter || PMPI_Comm_get_attr(MPI_COMM_WORLD, keyval_, &value, &found) != MPI_SUCCESS || !found) return at;
  auto* world = static_cast<PrivateComm*>(value);
  if (!world->roll) return at;
  MPI_Group mine = MPI_GROUP_NULL, all = MPI_GROUP_NULL;
  int n = 0;
  PMPI_Comm_group(user, &mine);
  PMPI_Comm_group(world->comm, &all);
  PMPI_Group_size(mine, &n);
  std::vector<int> ranks(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) ranks[static_cast<std::size_t>(i)] = i;
  at.members.assign(ranks.size(), MPI_UNDEFINED);
  PMPI_Group_translate_ranks(mine, n, ranks.data(), all, at.members.data());
  PMPI_Group_free(&mine);
  PMPI_Group_free(&all);
  // A communicator of processes MPI_COMM_WORLD does not hold (spawned, connected): no roll call.
  if (std::find(at.members.begin(), at.members.end(), MPI_UNDEFINED) != at.members.end()) return {};
  // The collective's number: its members' world ranks (the same list on each of them), in a range
  // the votes' counts never reach.
  std::uint64_t h = kFnv1aBasis;
  for (int r : at.members) h = fnv1a_word(h, static_cast<std::uint64_t>(r));
  at.call = h | kFirstCollectiveCall;
  at.roll = &*world->roll;
  return at;
}

PrivateComm& CommCache::get(MPI_Comm user, long long timeout_ns, const char* what) {
  void* value = nullptr;
  int found = 0;
  PMPI_Comm_get_attr(user, keyval_, &value, &found);
  if (found) return *static_cast<PrivateComm*>(value);
  auto* pc = new PrivateComm();
  MPI_Request req;
  PMPI_Comm_idup(user, &pc->comm, &req);
  RollCallAt world = world_roll_call(user);
  wait_collective(req, user, timeout_ns, what, "the first collective tnbc runs",
                  "tnbc's private duplicate of that communicator (MPI_Comm_idup)", world.roll ? &world : nullptr);
  PMPI_Comm_set_errhandler(pc->comm, MPI_ERRORS_ARE_FATAL);
  PMPI_Comm_rank(pc->comm, &pc->rank);
  PMPI_Comm_size(pc->comm, &pc->size);
  int* ub = nullptr;
  int has_ub = 0;
  PMPI_Comm_get_attr(pc->comm, MPI_TAG_UB, &ub, &has_ub);
  if (has_ub && ub) pc->tag_ub = *ub;
  pc->roll.emplace(pc->comm, pc->rank, pc->size, pc->tag_ub);  // tag_ub: above every block of base_tag()
  if (node_links_) pc->node = node_links_(pc->comm);
  PMPI_Comm_set_attr(user, keyval_, pc);
  return *pc;
}

}  // namespace tnbc
