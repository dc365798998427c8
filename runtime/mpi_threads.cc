#include "runtime/mpi_threads.hh"

#include <dlfcn.h>
#include <mpi.h>

#include <cstring>
#include <string>
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

// MPICH (4.0 checked) names its device in MPI_Get_library_version's text, a line
// "MPICH Device:<tabs or spaces>ch4:ucx"; "" where the text has no such line.
std::string mpich_device() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (PMPI_Get_library_version(text, &len) != MPI_SUCCESS) return {};
  const std::string_view all(text, strnlen(text, sizeof text));
  constexpr std::string_view kLine = "MPICH Device:";
  const std::size_t at = all.find(kLine);
  if (at == std::string_view::npos) return {};
  const std::size_t from = all.find_first_not_of(" \t", at + kLine.size());
  if (from == std::string_view::npos) return {};
  const std::size_t to = all.find_first_of(" \t\r\n", from);
  return std::string(all.substr(from, to == std::string_view::npos ? std::string_view::npos : to - from));
}

}  // namespace

MpiThreads mpi_threads() {
  MpiThreads m;
  const auto* pml = static_cast<const char*>(dlsym(RTLD_DEFAULT, "mca_pml_base_selected_component"));
  if (pml && field(pml, kProjectAt, kProjectLen) == "ompi" && field(pml, kTypeAt, kTypeLen) == "pml")
    m.transport = "Open MPI pml " + std::string(field(pml, kNameAt, kNameLen));
  else if (const std::string device = mpich_device(); !device.empty())
    m.transport = "MPICH " + device;
  m.progress = thread_progress_of(m.transport);
  return m;
}

}  // namespace tnbc
