/* Differential fuzzer of the intercepted collectives (C bindings).
 *
 * For each seed, a reproducible sequence of random ops: MPI_Bcast (random root), MPI_Alltoall,
 * MPI_Alltoallv (random counts with zeros; receive displacements in random order with gaps;
 * send displacements with gaps or overlapping), MPI_Allgather and MPI_Allgatherv (per-rank
 * counts with zeros, receive blocks in random order with gaps), sometimes MPI_IN_PLACE, sometimes two or three
 * back to back on the same buffers; sizes from 0 B to --max-size, biased to page multiples
 * +-1..100 bytes and to sub-messages of three pages and more (the ones tnbc returns early);
 * random datatypes (fuzz_types.h) on buffers in heap, static, stack and mmapped memory at random
 * alignments (fuzz_memory.h); right after the call, a random mix of accesses (fuzz_access.h),
 * nested ops on another communicator included. Every intercepted call (MPI_*) is compared byte
 * for byte with the blocking reference (PMPI_*, never intercepted by tnbc) on copies of the same
 * inputs in the same process: the whole receive buffer (gaps and datatype holes included),
 * every byte an access read, what neighbours received from it, and the send buffer (unchanged).
 *
 * usage: fuzz [--seeds A:B | --seed S] [--ops N] [--max-size BYTES[k|M]] [--soak]
 *             [--self-test] [--verbose]
 *   --ops N      top-level ops per seed (default 40); nested and back-to-back calls come on top
 *   --soak       seeds 1:1000 with 100 ops each: 10^5 top-level ops (hours; not in CI)
 *   --self-test  corrupts one received byte on rank 0 in one op: the run must then report
 *                exactly that mismatch and exit 1 (proves the comparison can fail)
 * Rank 0 ends with "fuzz: N collectives, M mismatches" (calls summed over ranks) and, when
 * TNBC_OUTPUT_DIR holds tnbc's per-rank summaries, how many of them returned early. Exit status
 * 0 only without mismatches. A run is reproduced by the same arguments and number of ranks. */
#define _GNU_SOURCE
#include <alloca.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fuzz_access.h"
#include "fuzz_check.h"
#include "fuzz_memory.h"
#include "fuzz_rng.h"
#include "fuzz_summary.h"
#include "fuzz_types.h"

#define PAGE ((size_t)4096)
#define MAX_ACCESSES 6
#define MAX_REPEAT 3

enum { OP_BCAST, OP_ALLTOALL, OP_ALLTOALLV, OP_ALLGATHER, OP_ALLGATHERV };
static const char* op_name[] = {"bcast", "alltoall", "alltoallv", "allgather", "allgatherv"};
enum { REF_BEFORE, REF_RIGHT_AFTER, REF_AFTER_ACCESSES };
static const char* ref_name[] = {"before", "right-after", "after-accesses"};
enum { COMM_WORLD, COMM_DUP, COMM_REVERSED, COMM_HALF, COMM_KINDS };
static const char* comm_name[] = {"world", "dup", "reversed", "half"};

static struct {
  uint64_t seed_lo, seed_hi;
  long ops;
  size_t max_size;
  int self_test, verbose;
} opt = {1, 1, 40, (size_t)4 << 20, 0, 0};

static int world_rank, world_size;
static MPI_Comm comms[COMM_KINDS];
static long calls, failed_ops, self_test_corrupted;

typedef struct {
  /* equal on every rank of the communicator */
  int kind, comm, base, unit, in_place, repeat, ref_when, naccess, nested_comm;
  int roots[MAX_REPEAT];   /* Bcast: the root of each call */
  int refill[MAX_REPEAT];  /* the sender writes new data before call k (else it sends what it has) */
  int chain;               /* Alltoall(v): calls alternate direction, the receive buffer of one
                              is the send buffer of the next (types, counts, displs swapped) */
  int access[MAX_ACCESSES];
  /* this rank's */
  int n, me;
  const FuzzType *stype, *rtype;
  int scount, rcount;          /* Bcast, Alltoall, Allgather; Allgatherv: scount */
  int *sc, *sd, *rc, *rd;      /* Alltoallv; Allgatherv: rc, rd */
  size_t send_len, recv_len;   /* 0 send_len: no separate send buffer (Bcast, in place) */
  int smem, rmem;
  size_t salign, ralign;
} Op;

/* Bytes of a sub-message: mostly page multiples +-1..100 and three pages or more. */
static size_t pick_bytes(Rng* r, size_t max) {
  size_t b;
  const size_t c = rng_below(r, 100);
  if (c < 8) {
    b = rng_below(r, 65);
  } else if (c < 20) {
    b = rng_below(r, 3 * PAGE);
  } else if (c < 65) {
    size_t maxk = max / PAGE;
    maxk = maxk < 1 ? 1 : maxk > 96 ? 96 : maxk;
    /* around tnbc's threshold (three pages) or anywhere above it */
    const size_t k = rng_chance(r, 400) ? 1 + rng_below(r, maxk < 6 ? maxk : 6)
                     : maxk > 3           ? 3 + rng_below(r, maxk - 2)
                                          : 1 + rng_below(r, maxk);
    long d = rng_chance(r, 300) ? (rng_chance(r, 500) ? 1 : -1) : (long)rng_below(r, 201) - 100;
    b = (size_t)((long)(k * PAGE) + d);
  } else if (c < 92) {
    b = 3 * PAGE + rng_below(r, max > 3 * PAGE ? max - 3 * PAGE + 1 : 1);
  } else {
    b = max - rng_below(r, max / 8 + 1);
  }
  return b > max ? max : b;
}

/* Base elements (a multiple of the op's unit) for a sub-message. */
static long pick_elems(Rng* r, const Op* op, size_t max) {
  const long e = (long)(pick_bytes(r, max) / (size_t)fuzz_base_size(op->base));
  return e / op->unit * op->unit;
}

/* Displacements (in items) for blocks in a random order with gaps; returns the items spanned. */
static long layout_gaps(Rng* r, int n, const int* counts, int* displs, MPI_Aint extent) {
  int order[64];
  for (int i = 0; i < n; i++) order[i] = i;
  for (int i = n; i > 1; i--) {
    const int j = (int)rng_below(r, (size_t)i), x = order[i - 1];
    order[i - 1] = order[j];
    order[j] = x;
  }
  long at = rng_chance(r, 700) ? 0 : (long)rng_below(r, 4);
  for (int k = 0; k < n; k++) {
    const int p = order[k];
    if (counts[p] == 0) { /* never read: any value */
      displs[p] = (int)rng_below(r, 1000000) - 1000;
      continue;
    }
    displs[p] = (int)at;
    at += counts[p];
    const size_t g = rng_below(r, 10);
    at += g < 5 ? 0 : g < 8 ? 1 + (long)rng_below(r, 3) : (long)rng_below(r, 2 * PAGE / (size_t)extent + 2);
  }
  return at;
}

/* `comm`: the communicator for a nested op (-1: a random one). */
static void gen_op(Op* op, Rng* shared, Rng* local, int depth, int comm, long* matrix) {
  const size_t k = rng_below(shared, 100);
  op->kind = k < 25 ? OP_BCAST : k < 50 ? OP_ALLTOALL : k < 70 ? OP_ALLTOALLV : k < 85 ? OP_ALLGATHER : OP_ALLGATHERV;
  const size_t c = rng_below(shared, 100);
  op->comm = comm >= 0 ? comm : c < 50 ? COMM_WORLD : c < 70 ? COMM_DUP : c < 85 ? COMM_REVERSED : COMM_HALF;
  op->nested_comm = (op->comm + 1 + (int)rng_below(shared, COMM_KINDS - 1)) % COMM_KINDS;
  MPI_Comm_size(comms[op->comm], &op->n);
  MPI_Comm_rank(comms[op->comm], &op->me);
  const size_t b = rng_below(shared, 4);
  op->base = b < 2 ? BASE_BYTE : b == 2 ? BASE_INT : BASE_DOUBLE;
  static const int units[] = {1, 1, 1, 2, 3, 6};
  op->unit = units[rng_below(shared, 6)];
  op->in_place = op->kind != OP_BCAST && rng_chance(shared, 200);
  const size_t rep = rng_below(shared, 100);
  op->repeat = rep < 80 ? 1 : rep < 95 ? 2 : 3;
  const int a2a = op->kind == OP_ALLTOALL || op->kind == OP_ALLTOALLV;
  op->chain = a2a && !op->in_place && op->repeat > 1 && rng_chance(shared, 500);
  for (int k = 0; k < MAX_REPEAT; k++) {
    op->roots[k] = (int)rng_below(shared, (size_t)op->n);
    op->refill[k] = k > 0 && !op->chain && (op->kind != OP_BCAST || rng_chance(shared, 500));
  }
  const size_t w = rng_below(shared, 10);
  op->ref_when = w < 5 ? REF_BEFORE : w < 7 ? REF_RIGHT_AFTER : REF_AFTER_ACCESSES;
  op->naccess = (int)rng_below(shared, MAX_ACCESSES);
  for (int i = 0; i < op->naccess; i++) op->access[i] = (int)rng_below(shared, ACC_NESTED);
  if (depth == 0 && rng_chance(shared, 120)) { /* a nested op, usually before any touch */
    const int at = rng_chance(shared, 700) || op->naccess == 0 ? 0 : (int)rng_below(shared, (size_t)op->naccess);
    if (op->naccess == MAX_ACCESSES) op->naccess--;
    memmove(op->access + at + 1, op->access + at, sizeof(int) * (size_t)(op->naccess - at));
    op->access[at] = ACC_NESTED;
    op->naccess++;
  }

  const int n = op->n, me = op->me;
  /* Allgather(v): both types from the shared stream, the same on every rank: Open MPI 4.1's tuned
   * Allgatherv sizes the message as the send (in place: receive) type's size times the receive
   * counts, so ranks with types of other sizes pick different algorithms and the reference itself
   * hangs. */
  const int gather = op->kind == OP_ALLGATHER || op->kind == OP_ALLGATHERV;
  op->stype = fuzz_type_pick(gather ? shared : local, op->base, op->unit);
  op->rtype = fuzz_type_pick(gather ? shared : local, op->base, op->unit);
  if (op->in_place) op->stype = op->rtype;
  op->send_len = 0;
  op->sc = op->sd = op->rc = op->rd = NULL;
  if (op->kind == OP_BCAST) {
    const long e = pick_elems(shared, op, opt.max_size);
    op->rcount = (int)(e / op->rtype->k);
    op->recv_len = (size_t)op->rcount * (size_t)op->rtype->extent;
  } else if (op->kind == OP_ALLTOALL) {
    const long e = pick_elems(shared, op, opt.max_size / (size_t)n);
    op->scount = (int)(e / op->stype->k);
    op->rcount = (int)(e / op->rtype->k);
    op->recv_len = (size_t)n * (size_t)op->rcount * (size_t)op->rtype->extent;
    if (!op->in_place) op->send_len = (size_t)n * (size_t)op->scount * (size_t)op->stype->extent;
  } else if (op->kind == OP_ALLGATHER) {
    const long e = pick_elems(shared, op, opt.max_size / (size_t)n);
    op->scount = (int)(e / op->stype->k);
    op->rcount = (int)(e / op->rtype->k);
    op->recv_len = (size_t)n * (size_t)op->rcount * (size_t)op->rtype->extent;
    if (!op->in_place) op->send_len = (size_t)op->scount * (size_t)op->stype->extent;
  } else if (op->kind == OP_ALLGATHERV) {
    /* matrix[p]: base elements rank p contributes (the same on every rank). */
    for (int p = 0; p < n; p++) matrix[p] = rng_chance(shared, 200) ? 0 : pick_elems(shared, op, opt.max_size / (size_t)n);
    op->sc = malloc(4 * sizeof(int) * (size_t)n);
    op->sd = op->sc + n, op->rc = op->sd + n, op->rd = op->rc + n;
    for (int p = 0; p < n; p++) op->rc[p] = (int)(matrix[p] / op->rtype->k);
    op->scount = (int)(matrix[me] / op->stype->k);
    op->recv_len = (size_t)layout_gaps(local, n, op->rc, op->rd, op->rtype->extent) * (size_t)op->rtype->extent;
    if (!op->in_place) op->send_len = (size_t)op->scount * (size_t)op->stype->extent;
  } else {
    /* matrix[i * n + j]: base elements rank i sends to rank j (symmetric in place). */
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++)
        matrix[i * n + j] = rng_chance(shared, 200) ? 0 : pick_elems(shared, op, opt.max_size / (size_t)n);
    if (op->in_place)
      for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) matrix[i * n + j] = matrix[j * n + i];
    op->sc = malloc(4 * sizeof(int) * (size_t)n);
    op->sd = op->sc + n, op->rc = op->sd + n, op->rd = op->rc + n;
    long span = 0;
    for (int p = 0; p < n; p++) {
      op->sc[p] = (int)(matrix[me * n + p] / op->stype->k);
      op->rc[p] = (int)(matrix[p * n + me] / op->rtype->k);
    }
    op->recv_len = (size_t)layout_gaps(local, n, op->rc, op->rd, op->rtype->extent) * (size_t)op->rtype->extent;
    if (!op->in_place) {
      if (!op->chain && rng_chance(local, 400)) { /* overlapping send blocks (legal: only read) */
        long total = 0;
        for (int p = 0; p < n; p++) total += op->sc[p];
        for (int p = 0; p < n; p++) {
          op->sd[p] = (int)rng_below(local, (size_t)(total - op->sc[p] + 1));
          if (op->sc[p] && op->sd[p] + op->sc[p] > span) span = op->sd[p] + op->sc[p];
        }
      } else {
        span = layout_gaps(local, n, op->sc, op->sd, op->stype->extent);
      }
      op->send_len = (size_t)span * (size_t)op->stype->extent;
    }
  }
  op->rmem = fuzz_mem_pick(local, op->recv_len);
  op->smem = fuzz_mem_pick(local, op->send_len);
  op->ralign = fuzz_align_pick(local);
  op->salign = fuzz_align_pick(local);
}

static void describe(const Op* op, const FuzzBuf* sb, const FuzzBuf* rb, char* out, size_t len) {
  int at = snprintf(out, len, "%s%s comm=%s(n=%d) ", op_name[op->kind], op->in_place ? "(MPI_IN_PLACE)" : "",
                    comm_name[op->comm], op->n);
  if (op->kind == OP_BCAST)
    at += snprintf(out + at, len - (size_t)at, "root=%d count=%d type=%s", op->roots[0], op->rcount, op->rtype->name);
  else if (op->kind == OP_ALLTOALL || op->kind == OP_ALLGATHER)
    at += snprintf(out + at, len - (size_t)at, "send %d x %s, recv %d x %s", op->scount, op->stype->name, op->rcount,
                   op->rtype->name);
  else if (op->kind == OP_ALLGATHERV) {
    at += snprintf(out + at, len - (size_t)at, "send %d x %s, recv %s counts/displs:", op->scount, op->stype->name,
                   op->rtype->name);
    for (int p = 0; p < op->n && at < (int)len - 64; p++)
      at += snprintf(out + at, len - (size_t)at, " %d@%d", op->rc[p], op->rd[p]);
  }
  else {
    at += snprintf(out + at, len - (size_t)at, "send %s recv %s counts/displs s:", op->stype->name, op->rtype->name);
    for (int p = 0; p < op->n && at < (int)len - 64; p++)
      at += snprintf(out + at, len - (size_t)at, " %d@%d", op->sc[p], op->in_place ? 0 : op->sd[p]);
    at += snprintf(out + at, len - (size_t)at, " r:");
    for (int p = 0; p < op->n && at < (int)len - 64; p++)
      at += snprintf(out + at, len - (size_t)at, " %d@%d", op->rc[p], op->rd[p]);
  }
  at += snprintf(out + at, len - (size_t)at, "; recv %s+%zu (%zu B)", fuzz_mem_name[rb->kind], rb->align, rb->len);
  if (sb) at += snprintf(out + at, len - (size_t)at, ", send %s+%zu (%zu B)", fuzz_mem_name[sb->kind], sb->align, sb->len);
  at += snprintf(out + at, len - (size_t)at, "; x%d%s", op->repeat, op->chain ? " chained" : "");
  for (int k = 1; k < op->repeat && op->kind == OP_BCAST; k++)
    at += snprintf(out + at, len - (size_t)at, " root %d%s", op->roots[k], op->refill[k] ? "" : " (forwards)");
  at += snprintf(out + at, len - (size_t)at, ", reference %s; accesses:", ref_name[op->ref_when]);
  for (int i = 0; i < op->naccess && at < (int)len - 24; i++)
    at += snprintf(out + at, len - (size_t)at, " %s", fuzz_access_name[op->access[i]]);
}

/* Call k of the op through tnbc (intercepted MPI_*) or the blocking reference (PMPI_*). */
static void collective(const Op* op, int k, int reference, const void* send, void* recv) {
  const MPI_Comm comm = comms[op->comm];
  const void* s = op->in_place ? MPI_IN_PLACE : send;
  const int sw = op->chain && k % 2; /* the other direction */
  const MPI_Datatype st = (sw ? op->rtype : op->stype)->type, rt = (sw ? op->stype : op->rtype)->type;
  switch (op->kind) {
    case OP_BCAST:
      (reference ? PMPI_Bcast : MPI_Bcast)(recv, op->rcount, op->rtype->type, op->roots[k], comm);
      break;
    case OP_ALLTOALL:
      (reference ? PMPI_Alltoall : MPI_Alltoall)(s, sw ? op->rcount : op->scount, st, recv,
                                                 sw ? op->scount : op->rcount, rt, comm);
      break;
    case OP_ALLGATHER:
      (reference ? PMPI_Allgather : MPI_Allgather)(s, op->scount, st, recv, op->rcount, rt, comm);
      break;
    case OP_ALLGATHERV:
      (reference ? PMPI_Allgatherv : MPI_Allgatherv)(s, op->scount, st, recv, op->rc, op->rd, rt, comm);
      break;
    default:
      (reference ? PMPI_Alltoallv : MPI_Alltoallv)(s, sw ? op->rc : op->sc, sw ? op->rd : op->sd, st, recv,
                                                   sw ? op->sc : op->rc, sw ? op->sd : op->rd, rt, comm);
  }
  if (!reference) calls++;
}

/* The reference of call k on the expected contents `ref` (receive buffer) and `ref_s` (send
 * buffer): what the sender wrote before the call first, then the blocking collective. */
static void reference(const Op* op, int k, unsigned char* const* fill, unsigned char* ref, unsigned char* ref_s) {
  if (fill[k]) memcpy(op->kind == OP_BCAST ? ref : ref_s, fill[k], op->kind == OP_BCAST ? op->recv_len : op->send_len);
  const int sw = op->chain && k % 2;
  collective(op, k, 1, sw ? ref : ref_s, sw ? ref_s : ref);
}

/* One op: buffers, the call(s) and references, accesses, then every check. `comm`: the
 * communicator of a nested op (-1: a random one). */
static void run_op(int depth, uint64_t seed, long index, int comm) {
  Rng shared = rng_derive(seed, (uint64_t)index, (uint64_t)depth, 0x5EED);
  Rng local = rng_derive(seed, (uint64_t)index, (uint64_t)depth, 0x10CA1 + (uint64_t)world_rank);
  Rng data = rng_derive(seed, (uint64_t)index, (uint64_t)depth, 0xDA7A + (uint64_t)world_rank);
  long matrix[64 * 64];
  Op op;
  gen_op(&op, &shared, &local, depth, comm, matrix);
  void* rstack = op.rmem == MEM_STACK ? alloca(fuzz_stack_bytes(op.recv_len, op.ralign)) : NULL;
  void* sstack = op.send_len && op.smem == MEM_STACK ? alloca(fuzz_stack_bytes(op.send_len, op.salign)) : NULL;
  FuzzBuf rb = fuzz_buf_get(op.rmem, op.recv_len, op.ralign, rstack);
  FuzzBuf sb = {0};
  if (op.send_len) sb = fuzz_buf_get(op.smem, op.send_len, op.salign, sstack);
  FuzzContext ctx = {seed, index, depth, "", 0, NULL};
  describe(&op, op.send_len ? &sb : NULL, &rb, ctx.desc, sizeof ctx.desc);
  fuzz_context_push(&ctx);
  if (opt.verbose && world_rank == 0) printf("seed %llu op %ld%s: %s\n", (unsigned long long)seed, index,
                                             depth ? " (nested)" : "", ctx.desc);

  /* Expected contents: ref (receive buffer), ref_s (send buffer); fill[k]: what the sender
   * wrote before call k (Alltoall(v): the send buffer; Bcast: the root's buffer). */
  unsigned char* ref = malloc(op.recv_len + 1);
  unsigned char* ref_s = malloc(op.send_len + 1);
  unsigned char* fill[MAX_REPEAT] = {NULL};
  fuzz_fill(rb.p, op.recv_len, &data);
  memcpy(ref, rb.p, op.recv_len);
  if (op.send_len) {
    fuzz_fill(sb.p, op.send_len, &data);
    memcpy(ref_s, sb.p, op.send_len);
  }
  for (int k = 0; k < op.repeat; k++) {
    const int sw = op.chain && k % 2;
    FuzzBuf* writer = op.kind == OP_BCAST ? (op.me == op.roots[k] ? &rb : NULL) : op.send_len ? &sb : NULL;
    if (op.refill[k] && writer) {
      fuzz_fill(writer->p, writer->len, &data);
      fill[k] = malloc(writer->len + 1);
      memcpy(fill[k], writer->p, writer->len);
    }
    if (op.ref_when == REF_BEFORE) reference(&op, k, fill, ref, ref_s);
    collective(&op, k, 0, sw ? rb.p : sb.p, sw ? sb.p : rb.p);
    if (op.ref_when == REF_RIGHT_AFTER) reference(&op, k, fill, ref, ref_s);
  }

  /* The last call's receive buffer is what the accesses touch (chained: maybe the first send buffer). */
  const int last_sw = op.chain && (op.repeat - 1) % 2;
  FuzzBuf* fin_r = last_sw ? &sb : &rb;
  FuzzBuf* fin_s = last_sw ? &rb : &sb;
  AccessTarget t = {fin_r->p, fin_r->len, op.send_len ? fin_s->p : NULL, op.send_len ? fin_s->len : 0, 0,
                    comms[op.comm], &shared, &local, seed * 1000003u + (uint64_t)index * 31u + (uint64_t)depth,
                    {{{0}}, 0}};
  for (int i = 0; i < op.naccess; i++) {
    if (op.access[i] == ACC_NESTED) run_op(depth + 1, seed, index, op.nested_comm);
    else fuzz_access_run(op.access[i], &t);
  }
  if (op.ref_when == REF_AFTER_ACCESSES)
    for (int k = 0; k < op.repeat; k++) reference(&op, k, fill, ref, ref_s);
  unsigned char* fin_r_ref = last_sw ? ref_s : ref;
  unsigned char* fin_s_ref = last_sw ? ref : ref_s;
  if (opt.self_test && !self_test_corrupted && world_rank == 0 && depth == 0 && seed == opt.seed_lo &&
      index >= opt.ops / 2 && t.recv_len > 0) {
    t.recv[t.recv_len / 2] ^= 0x5A;
    self_test_corrupted = 1;
    printf("fuzz: self-test: byte %zu of the receive buffer of op %ld corrupted on rank 0\n", t.recv_len / 2, index);
    fflush(stdout);
  }
  fuzz_access_replay(&t, fin_r_ref);
  fuzz_compare("receive buffer", t.recv, fin_r_ref, t.recv_len, 0);
  if (t.send && !t.send_written)
    fuzz_compare("send buffer (must be left unchanged)", t.send, fin_s_ref, t.send_len, 0);

  fuzz_access_free(&t);
  for (int k = 0; k < op.repeat; k++) free(fill[k]);
  free(ref);
  free(ref_s);
  if (op.send_len) fuzz_buf_put(&sb);
  fuzz_buf_put(&rb);
  free(op.sc);
  failed_ops += fuzz_context_pop();
}

static void on_mpi_error(MPI_Comm* comm, int* code, ...) {
  (void)comm;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(*code, text, &len);
  fprintf(stderr, "fuzz: MPI error on rank %d: %s\n", world_rank, text);
  fuzz_print_context("  during");
  MPI_Abort(MPI_COMM_WORLD, 5);
}

static size_t parse_size(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'k' || *end == 'K') v *= 1024;
  else if (*end == 'm' || *end == 'M') v *= 1024 * 1024;
  return (size_t)v;
}

static void usage(void) {
  if (world_rank == 0)
    fprintf(stderr, "usage: fuzz [--seeds A:B | --seed S] [--ops N] [--max-size BYTES[k|M]] [--soak] "
                    "[--self-test] [--verbose]\n");
  MPI_Finalize();
  exit(2);
}

static void parse_args(int argc, char** argv) {
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--seeds") && v) {
      if (sscanf(v, "%llu:%llu", (unsigned long long*)&opt.seed_lo, (unsigned long long*)&opt.seed_hi) != 2) usage();
      i++;
    } else if (!strcmp(a, "--seed") && v) {
      opt.seed_lo = opt.seed_hi = strtoull(v, NULL, 0);
      i++;
    } else if (!strcmp(a, "--ops") && v) {
      opt.ops = atol(v);
      i++;
    } else if (!strcmp(a, "--max-size") && v) {
      opt.max_size = parse_size(v);
      i++;
    } else if (!strcmp(a, "--soak")) {
      opt.seed_lo = 1, opt.seed_hi = 1000, opt.ops = 100;
    } else if (!strcmp(a, "--self-test")) {
      opt.self_test = 1;
    } else if (!strcmp(a, "--verbose")) {
      opt.verbose = 1;
    } else {
      usage();
    }
  }
  if (opt.seed_hi < opt.seed_lo || opt.ops < 1 || opt.max_size < 1) usage();
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  parse_args(argc, argv);
  if (world_size > 64) {
    if (world_rank == 0) fprintf(stderr, "fuzz: at most 64 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Errhandler handler;
  MPI_Comm_create_errhandler(on_mpi_error, &handler);
  comms[COMM_WORLD] = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comms[COMM_DUP]);
  MPI_Comm_split(MPI_COMM_WORLD, 0, world_size - world_rank, &comms[COMM_REVERSED]);
  MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_rank, &comms[COMM_HALF]);
  for (int c = 0; c < COMM_KINDS; c++) MPI_Comm_set_errhandler(comms[c], handler);
  fuzz_check_init(world_rank);
  fuzz_types_init();
  fuzz_access_init(opt.seed_lo);

  const time_t start = time(NULL);
  for (uint64_t seed = opt.seed_lo; seed <= opt.seed_hi; seed++) {
    for (long i = 0; i < opt.ops; i++) run_op(0, seed, i, -1);
    if (world_rank == 0 && opt.seed_hi > opt.seed_lo && (seed - opt.seed_lo) % 10 == 9) {
      printf("fuzz: seed %llu done, %ld s\n", (unsigned long long)seed, (long)(time(NULL) - start));
      fflush(stdout);
    }
  }

  long totals[2] = {calls, failed_ops}, sums[2];
  PMPI_Allreduce(totals, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (world_rank == 0) {
    printf("fuzz: %ld collectives, %ld mismatches (calls summed over %d ranks; seeds %llu:%llu, %ld ops each, "
           "max size %zu B, %ld s)\n", sums[0], sums[1], world_size, (unsigned long long)opt.seed_lo,
           (unsigned long long)opt.seed_hi, opt.ops, opt.max_size, (long)(time(NULL) - start));
    fflush(stdout);
  }
  fuzz_access_finish();
  fuzz_types_free();
  for (int c = 1; c < COMM_KINDS; c++) MPI_Comm_free(&comms[c]);
  MPI_Errhandler_free(&handler);
  MPI_Finalize();
  int status = sums[1] != 0;
  if (world_rank == 0) status |= fuzz_summary_report(world_size, sums[0]);
  return status;
}
