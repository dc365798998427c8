#include "shim/fortran.hh"

#include <dlfcn.h>
#include <mpi.h>

#include <cctype>
#include <cstdlib>
#include <string>

#include "runtime/log.hh"

namespace tnbc::shim {

namespace {

// Open MPI: the Fortran sentinels are common symbols; their addresses are what a Fortran
// program passes for MPI_IN_PLACE / MPI_BOTTOM.
const char* const kInPlaceSymbols[] = {"mpi_fortran_in_place_", "mpi_fortran_in_place",
                                       "mpi_fortran_in_place__", "MPI_FORTRAN_IN_PLACE"};
const char* const kBottomSymbols[] = {"mpi_fortran_bottom_", "mpi_fortran_bottom",
                                      "mpi_fortran_bottom__", "MPI_FORTRAN_BOTTOM"};

// MPICH: the sentinels live in the common block MPIPRIV1 of mpif.h; the pointer variables
// MPIR_F_MPI_IN_PLACE / MPIR_F_MPI_BOTTOM hold their addresses once `mpirinitf_` has run.
// MPICH's Fortran bindings run it on their first call (MPIR_F_NeedInit says whether it has run);
// tnbc replaces mpi_init_, so a program may reach tnbc's wrappers first: run it here then.
void* mpich_sentinel(const char* pointer_symbol) {
  auto* need_init = static_cast<int*>(dlsym(RTLD_DEFAULT, "MPIR_F_NeedInit"));
  auto* init = reinterpret_cast<void (*)()>(dlsym(RTLD_DEFAULT, "mpirinitf_"));
  auto* pointer = static_cast<void**>(dlsym(RTLD_DEFAULT, pointer_symbol));
  if (need_init == nullptr || init == nullptr || pointer == nullptr) return nullptr;
  if (*need_init) {
    init();
    *need_init = 0;
  }
  return *pointer;
}

struct Sentinels {
  void* in_place[std::size(kInPlaceSymbols) + 1] = {};
  void* bottom[std::size(kBottomSymbols) + 1] = {};
  Sentinels() {
    for (std::size_t i = 0; i < std::size(kInPlaceSymbols); ++i)
      in_place[i] = dlsym(RTLD_DEFAULT, kInPlaceSymbols[i]);
    for (std::size_t i = 0; i < std::size(kBottomSymbols); ++i)
      bottom[i] = dlsym(RTLD_DEFAULT, kBottomSymbols[i]);
    in_place[std::size(kInPlaceSymbols)] = mpich_sentinel("MPIR_F_MPI_IN_PLACE");
    bottom[std::size(kBottomSymbols)] = mpich_sentinel("MPIR_F_MPI_BOTTOM");
  }
};

const Sentinels& sentinels() {
  static const Sentinels s;  // looked up once, after the Fortran library is loaded
  return s;
}

}  // namespace

void* fortran_buffer(void* p) {
  if (p == nullptr) return p;
  const auto& s = sentinels();
  for (void* q : s.in_place)
    if (q && p == q) return MPI_IN_PLACE;
  for (void* q : s.bottom)
    if (q && p == q) return MPI_BOTTOM;
  return p;
}

void* fortran_next(const char* lower_name) {
  std::string lower(lower_name), upper;
  for (char c : lower) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const std::string& n : {lower + "_", lower, lower + "__", upper}) {
    if (void* f = dlsym(RTLD_NEXT, n.c_str())) return f;
  }
  log(LogLevel::Error, "the MPI library has no Fortran binding for %s; cannot continue", lower_name);
  std::abort();
}

void* fortran_next_symbol(const char* symbol) {
  if (void* f = dlsym(RTLD_NEXT, symbol)) return f;
  log(LogLevel::Error, "the MPI library has no Fortran binding %s; cannot continue", symbol);
  std::abort();
}

namespace {
thread_local const void* tls_fortran_caller [[gnu::tls_model("initial-exec")]] = nullptr;
}  // namespace

FortranCaller::FortranCaller(const void* return_address) { tls_fortran_caller = return_address; }

FortranCaller::~FortranCaller() { tls_fortran_caller = nullptr; }

CallSite c_call_site(const void* return_address) {
  if (const void* fortran = tls_fortran_caller) {
    tls_fortran_caller = nullptr;
    return {fortran, Lang::Fortran};
  }
  return {return_address, Lang::C};
}

}  // namespace tnbc::shim
