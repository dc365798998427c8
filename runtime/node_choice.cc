#include "runtime/node_choice.hh"

#include <algorithm>

namespace tnbc {

const char* node_basis_name(NodeBasis b) {
  switch (b) {
    case NodeBasis::Setting: return "setting";
    case NodeBasis::Gains: return "gains";
    case NodeBasis::NoGain: return "no_gain";
    case NodeBasis::OneSender: return "one_sender";
    case NodeBasis::NoProfile: return "no_profile";
    case NodeBasis::NoModel: return "no_model";
    case NodeBasis::NotModelled: return "not_modelled";
  }
  return "?";
}

int link_senders(const model::Topology& t, int node, bool local_on_link) {
  const int m = t.ranks_on(node);
  return m >= 2 && (local_on_link || t.nodes() > 1) ? m : 0;
}

NodeChoice node_choice(const model::Machine& m, const model::Topology& comm, const model::Coll& c,
                       const model::Execution& x, int senders, double margin_share) {
  NodeChoice r;
  if (senders < 2) {
    r.basis = NodeBasis::OneSender;
    return r;
  }
  if (c.kind == Kind::Bcast) {  // the broadcast's timeline does not model the link's order
    r.basis = NodeBasis::NotModelled;
    return r;
  }
  model::Execution plain = x;
  plain.node_priorities = false;
  const model::Timeline tl = model::tnbc_timeline(m, comm, c, plain, true);
  const double after = std::max(0.0, tl.total_ns - tl.in_call_ns);
  r.first_off_ns = tl.in_call_ns + after * (1.0 - tl.last_share / 2);
  r.first_on_ns = tl.in_call_ns + after / senders;
  r.margin_ns = margin_share * model::mpi_blocking_ns(m, comm, c);
  r.on = r.first_off_ns - r.first_on_ns > r.margin_ns;
  r.basis = r.on ? NodeBasis::Gains : NodeBasis::NoGain;
  return r;
}

}  // namespace tnbc
