#include "runtime/mpi_threads.hh"

#include <dlfcn.h>

#include <cstring>
#include <string_view>

namespace tnbc {

namespace {

// Open MPI (4.1 checked) keeps the messaging component it selected at MPI_Init in the exported
// `mca_pml_base_selected_component`, which begins with an mca_base_component_t (opal/mca/mca.h):
// three ints, the project name (16 chars), three ints, the framework's type name (32), three
// ints, the component's name (64). Read only when the project and type names are where that
// layout puts them; anything else is a library tnbc does not know.
constexpr std::size_t kProjectAt = 3 * sizeof(int), kProjectLen = 16;
constexpr std::size_t kTypeAt = kProjectAt + kProjectLen + 3 * sizeof(int), kTypeLen = 32;
constexpr std::size_t kNameAt = kTypeAt + kTypeLen + 3 * sizeof(int), kNameLen = 64;

std::string_view field(const char* base, std::size_t at, std::size_t len) {
  return {base + at, strnlen(base + at, len)};
}

}  // namespace

MpiThreads mpi_threads() {
  MpiThreads m;
  const auto* pml = static_cast<const char*>(dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component"));
  if (!pml || field(pml, kProjectAt, kProjectLen) != "ompi" || field(pml, kTypeAt, kTypeLen) != "pml") return m;
  const std::string_view name = field(pml, kNameAt, kNameLen);
  m.transport = "Open MPI pml " + std::string(name);
  m.progress = thread_progress_of(m.transport);
  return m;
}

}  // namespace tnbc
