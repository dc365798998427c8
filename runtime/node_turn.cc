#include "runtime/node_turn.hh"

#include <cstdio>

namespace tnbc {

NodeTurn node_turn(const model::Level& link, double kernel_bytes) {
  NodeTurn t;
  t.ns_per_byte = link.G_ns_per_byte > 0 ? link.G_ns_per_byte : 0;
  if (link.buffered_send_bytes > 0) {
    t.buffered_bytes = link.buffered_send_bytes;
    t.source = "machine_file";
  } else if (kernel_bytes > 0) {
    t.buffered_bytes = kernel_bytes;
    t.source = "kernel_tcp_wmem_max";
  } else {
    t.buffered_bytes = 0;
    t.source = "unknown_every_send";
  }
  if (t.ns_per_byte <= 0) t.source = "no_link_rate";
  return t;
}

std::string NodeTurn::json() const {
  char b[192];
  std::snprintf(b, sizeof b, "{\"ns_per_byte\": %.6g, \"buffered_send_bytes\": %.0f, \"source\": \"%s\"}", ns_per_byte,
                buffered_bytes, source.c_str());
  return b;
}

}  // namespace tnbc
