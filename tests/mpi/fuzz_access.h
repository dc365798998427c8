/* What the fuzzed program does right after a collective returns, and the journal of it.
 *
 * Accesses touch the receive buffer while tnbc may still be holding it back: reads (forward,
 * reverse, pages in random order), writes into it, write(2) of it to a pipe, a file or
 * /dev/null, read(2) of known bytes into it, MPI_Send of part of it to the next rank and
 * MPI_Recv of known bytes into another part from the previous one; or they overwrite the send
 * buffer. What an access saw and what it changed goes into a journal; once the blocking
 * reference is known, the journal is replayed onto it in order: what was seen is compared with
 * the reference at that point, what was changed is applied to it. So every read is checked, and
 * a write or read(2) that landed before the data (and was then overwritten by it) shows as a
 * mismatch in the final comparison. */
#ifndef TNBC_FUZZ_ACCESS_H
#define TNBC_FUZZ_ACCESS_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "fuzz_rng.h"

enum {
  ACC_READ_FORWARD,
  ACC_READ_REVERSE,
  ACC_READ_RANDOM,    /* pages in random order, one byte each */
  ACC_WRITE_SEND,     /* overwrite the send buffer (in place: write into the receive buffer) */
  ACC_WRITE_RECV,     /* write a range of the receive buffer, last byte first */
  ACC_WRITE_SYSCALL,  /* write(2)/writev(2) of a range to a pipe, a file or /dev/null */
  ACC_READ_SYSCALL,   /* read(2)/pread(2)/readv(2) of known bytes into a range */
  ACC_NEIGHBOUR,      /* MPI_Send / MPI_Recv with the next and previous rank (collective) */
  ACC_NESTED,         /* a whole fuzzed op on another communicator (run by fuzz.c) */
  ACC_KINDS
};
extern const char* fuzz_access_name[ACC_KINDS];

#define JOURNAL_MAX 16

typedef struct {
  int kind;            /* J_PATCH, J_SEEN, J_SEEN_SPARSE, J_SENT */
  size_t off, len;     /* range of the receive buffer (J_SEEN_SPARSE: len = number of bytes) */
  unsigned char* data; /* J_PATCH: new bytes; J_SEEN*: bytes read; J_SENT: the reference at replay */
  size_t* offsets;     /* J_SEEN_SPARSE */
  unsigned char* got;  /* J_SENT: what this rank received from the previous rank */
  size_t got_len;
  int owned;           /* data is freed with the journal */
} JournalEntry;

typedef struct {
  JournalEntry e[JOURNAL_MAX];
  int n;
} Journal;

typedef struct {
  unsigned char* recv;
  size_t recv_len;
  unsigned char* send; /* NULL when the op has no separate send buffer */
  size_t send_len;
  int send_written;    /* set when an access overwrote the send buffer */
  MPI_Comm comm;
  Rng* shared;         /* choices every rank of comm makes alike */
  Rng* local;          /* this rank's choices */
  uint64_t pattern;    /* seeds the bytes written (equal on all ranks for an op) */
  Journal journal;
} AccessTarget;

/* Creates the file read(2) accesses read from (known bytes). */
void fuzz_access_init(uint64_t seed);
void fuzz_access_finish(void);
/* Runs one access (not ACC_NESTED). ACC_NEIGHBOUR must be run by every rank of t->comm. */
void fuzz_access_run(int kind, AccessTarget* t);
/* Replays the journal onto `ref` (the reference receive buffer, recv_len bytes), checking
 * every recorded read, then exchanges the reference of sent ranges with the neighbours and
 * checks what was received (collective on t->comm). */
void fuzz_access_replay(AccessTarget* t, unsigned char* ref);
void fuzz_access_free(AccessTarget* t);
/* Fills n bytes from a stream (fast, 8 bytes per draw). */
void fuzz_fill(unsigned char* p, size_t n, Rng* r);

#endif
