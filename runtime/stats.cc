#include "runtime/stats.hh"

#include <dlfcn.h>

#include <cstdio>
#include <sstream>

namespace tnbc {

const char* reason_name(Reason r) {
  switch (r) {
    case Reason::None: return "none";
    case Reason::Mode: return "mode";
    case Reason::BelowThreshold: return "below_threshold";
    case Reason::Intercommunicator: return "intercommunicator";
    case Reason::NoncontiguousDatatype: return "noncontiguous_datatype";
    case Reason::NotGuardable: return "not_guardable";
    case Reason::ThreadLevel: return "thread_level";
    case Reason::Disabled: return "disabled";
    case Reason::ReceiveTypeMismatch: return "type_size_mismatch";
  }
  return "unknown";
}

void Stats::record(Kind kind, CallSite site, std::uint64_t bytes, Outcome outcome, Reason reason) {
  std::lock_guard lock(mutex_);
  auto& k = kinds_[static_cast<std::size_t>(kind)];
  ++k.calls;
  if (site.lang == Lang::Fortran) ++k.fortran_calls;
  k.bytes += bytes;
  switch (outcome) {
    case Outcome::EarlyReturn: ++k.early_return; break;
    case Outcome::CompletedInCall: ++k.completed_in_call; break;
    case Outcome::Passthrough: ++k.passthrough; break;
  }
  if (reason != Reason::None) ++k.reasons[reason_name(reason)];
  auto& s = sites_[{static_cast<int>(kind), static_cast<int>(site.lang), site.return_address}];
  ++s.calls;
  s.bytes += bytes;
}

KindCounters Stats::kind(Kind k) const {
  std::lock_guard lock(mutex_);
  return kinds_[static_cast<std::size_t>(k)];
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') { out += '\\'; out += c; }
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      out += b;
    } else out += c;
  }
  return out;
}

std::string Stats::summary_json(int rank, int size, const std::string& mode) const {
  std::lock_guard lock(mutex_);
  std::ostringstream j;
  j << "{\"format\": \"tnbc-summary\", \"version\": 1, \"rank\": " << rank << ", \"size\": " << size
    << ", \"mode\": \"" << json_escape(mode) << "\",\n \"collectives\": {";
  for (std::size_t i = 0; i < kinds_.size(); ++i) {
    const auto& k = kinds_[i];
    j << (i ? ",\n   " : "\n   ") << "\"" << kKindNames[i] << "\": {\"calls\": " << k.calls
      << ", \"fortran_calls\": " << k.fortran_calls << ", \"bytes\": " << k.bytes
      << ", \"early_return\": " << k.early_return << ", \"completed_in_call\": " << k.completed_in_call
      << ", \"passthrough\": " << k.passthrough << ", \"reasons\": {";
    bool first = true;
    for (const auto& [name, n] : k.reasons) {
      j << (first ? "" : ", ") << "\"" << name << "\": " << n;
      first = false;
    }
    j << "}}";
  }
  j << "},\n \"sites\": [";
  bool first = true;
  for (const auto& [key, s] : sites_) {
    const auto& [kind, lang, addr] = key;
    Dl_info info{};
    std::string module = "?", symbol = "?";
    std::uintptr_t offset = reinterpret_cast<std::uintptr_t>(addr);
    // The return address points after the call; step back one byte to stay inside it.
    if (addr && dladdr(static_cast<const char*>(addr) - 1, &info)) {
      if (info.dli_fname) module = info.dli_fname;
      if (info.dli_sname) symbol = info.dli_sname;
      offset -= reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    }
    char off[32];
    std::snprintf(off, sizeof off, "0x%zx", static_cast<std::size_t>(offset));
    j << (first ? "\n  " : ",\n  ") << "{\"kind\": \"" << kKindNames[static_cast<std::size_t>(kind)]
      << "\", \"lang\": \"" << (lang == static_cast<int>(Lang::Fortran) ? "fortran" : "c")
      << "\", \"module\": \"" << json_escape(module) << "\", \"offset\": \"" << off
      << "\", \"symbol\": \"" << json_escape(symbol) << "\", \"calls\": " << s.calls
      << ", \"bytes\": " << s.bytes << "}";
    first = false;
  }
  j << "]}\n";
  return j.str();
}

}  // namespace tnbc
