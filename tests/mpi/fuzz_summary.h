/* The fuzzer's closing line about tnbc: how many intercepted calls returned early, read from
 * the per-rank summaries tnbc writes at MPI_Finalize into TNBC_OUTPUT_DIR (docs/formats.md). */
#ifndef TNBC_FUZZ_SUMMARY_H
#define TNBC_FUZZ_SUMMARY_H

/* Call after MPI_Finalize on rank 0. Prints the early-return share per kind; returns 1 if
 * tnbc counted another number of calls than `calls_made` (summed over ranks), else 0 (also
 * when there are no summaries to read). */
int fuzz_summary_report(int np, long calls_made);

#endif
