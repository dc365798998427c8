/* Buffers for the differential fuzzer: the kinds of memory a program hands to MPI, each at a
 * chosen alignment (offset from a page boundary). Stack memory is allocated by the caller
 * (alloca in the frame that runs the collective) and passed in. */
#ifndef TNBC_FUZZ_MEMORY_H
#define TNBC_FUZZ_MEMORY_H

#include <stddef.h>

#include "fuzz_rng.h"

enum {
  MEM_HEAP,         /* malloc (large blocks are mmapped by glibc) */
  MEM_BSS,          /* static, zero-initialised (anonymous mapping) */
  MEM_DATA,         /* static, initialised (private file mapping of the executable) */
  MEM_STACK,        /* alloca in the caller's frame */
  MEM_MMAP,         /* mmap MAP_PRIVATE | MAP_ANONYMOUS */
  MEM_MMAP_FILE,    /* mmap MAP_PRIVATE of a temporary file */
  MEM_MMAP_SHARED,  /* mmap MAP_SHARED | MAP_ANONYMOUS: tnbc must complete in the call */
  MEM_KINDS
};
extern const char* fuzz_mem_name[MEM_KINDS];

/* Largest buffer placed on the stack (the default stack is 8 MiB; an op holds two, nested ops two more). */
#define FUZZ_STACK_MAX ((size_t)768 << 10)

typedef struct {
  unsigned char* p;  /* the buffer: len bytes */
  size_t len;
  int kind;
  size_t align;      /* p's offset from the start of its page */
  void* base;        /* what to free or unmap */
  size_t map_len;
  size_t pool_mark;  /* static pools: top of the pool before this buffer */
} FuzzBuf;

/* A kind of memory for a buffer of `len` bytes (stack and static pools only when it fits). */
int fuzz_mem_pick(Rng* r, size_t len);
/* An offset from a page boundary, biased to 0, small odd values and the end of a page. */
size_t fuzz_align_pick(Rng* r);
/* Bytes the caller must alloca for a MEM_STACK buffer. */
size_t fuzz_stack_bytes(size_t len, size_t align);
/* The buffer (its bytes are unspecified); another kind is used when the requested one cannot
 * hold it. Buffers from the static pools must be released in reverse order. */
FuzzBuf fuzz_buf_get(int kind, size_t len, size_t align, void* stack);
void fuzz_buf_put(FuzzBuf* b);

#endif
