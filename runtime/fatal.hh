// Ending the job after tnbc has said why (a timeout report, an MPI error while exchanging
// tnbc's messages, a publication that failed): the program may have returned from the call long
// ago, so no error handler can take it; every rank ends, not just this one.
#pragma once

namespace tnbc {

// TNBC_ABORT_FLUSH_US: how long end_job() waits for the launcher to forward the report (MPICH's
// hydra drops what a rank wrote just before aborting).
void set_abort_flush_us(long long us);
// Async-signal-safe (the SIGSEGV handler's timeout calls it): pause, PMPI_Abort(MPI_COMM_WORLD).
[[noreturn]] void end_job();

}  // namespace tnbc
