#include "runtime/model/mpi_algorithms.hh"

namespace tnbc::model {

bool known_rules(std::string_view mpi_library) { return mpi_library.starts_with("Open MPI v4.1"); }

MpiExchange mpi_alltoall_algorithm(std::string_view mpi_library, int n, double bytes) {
  if (!known_rules(mpi_library) || n < 2 || n >= 16) return MpiExchange::Unknown;
  // n = 2: linear_sync, two_proc and pairwise all exchange with the one peer at once.
  if (n == 2 || n >= 8) return MpiExchange::Linear;  // 8..15: linear_sync below 256 KiB, linear above
  // 3..7 ranks: linear / linear_sync everywhere but pairwise from 512 KiB to 1 MiB.
  return bytes >= 524288 && bytes < 1048576 ? MpiExchange::Pairwise : MpiExchange::Linear;
}

MpiBcast mpi_bcast_algorithm(std::string_view mpi_library, int n, double b) {
  if (!known_rules(mpi_library) || n < 2 || n >= 16) return MpiBcast::Unknown;
  // knomial (radix 4 by default) is counted as binomial: at these sizes one round or two.
  if (n < 4) {
    if (b < 32) return MpiBcast::Chain;  // pipeline: a chain of fan-out 1
    if (b < 256) return MpiBcast::Binary;
    if (b < 512) return MpiBcast::Chain;
    if (b < 1024) return MpiBcast::Binomial;
    if (b < 32768) return MpiBcast::Linear;
    if (b < 131072) return MpiBcast::Binary;
    if (b < 262144) return MpiBcast::Chain;
    if (b < 524288) return MpiBcast::Linear;
    if (b < 1048576) return MpiBcast::Binomial;
    return MpiBcast::Binary;
  }
  if (n < 8) {
    if (b < 64) return MpiBcast::Binary;
    if (b < 128) return MpiBcast::Binomial;
    if (b < 2048) return MpiBcast::Binary;
    if (b < 8192) return MpiBcast::Binomial;
    if (b < 1048576) return MpiBcast::Linear;
    return MpiBcast::Chain;
  }
  if (b < 8) return MpiBcast::Binomial;
  if (b < 64) return MpiBcast::Binary;
  if (b < 4096) return MpiBcast::Binomial;
  if (b < 16384) return MpiBcast::Binary;
  if (b < 32768) return MpiBcast::Binomial;
  return MpiBcast::Linear;
}

}  // namespace tnbc::model
