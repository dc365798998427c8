/* Buffers for the differential fuzzer (see fuzz_memory.h). */
#define _GNU_SOURCE
#include "fuzz_memory.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

const char* fuzz_mem_name[MEM_KINDS] = {"heap", "bss", "data", "stack", "mmap", "mmap-file", "mmap-shared"};

#define PAGE ((size_t)4096)
#define BSS_POOL ((size_t)24 << 20)
#define DATA_POOL ((size_t)1 << 20)
static unsigned char bss_pool[BSS_POOL] __attribute__((aligned(4096)));
static unsigned char data_pool[DATA_POOL] __attribute__((aligned(4096))) = {1};
static size_t bss_top, data_top;

int fuzz_mem_pick(Rng* r, size_t len) {
  static const int weights[MEM_KINDS] = {30, 14, 6, 14, 20, 8, 8};
  for (;;) {
    size_t w = rng_below(r, 100);
    int kind = 0;
    while (w >= (size_t)weights[kind]) w -= (size_t)weights[kind++];
    if (kind == MEM_STACK && len > FUZZ_STACK_MAX) continue;
    if (kind == MEM_DATA && len > DATA_POOL / 4) continue;
    if (kind == MEM_BSS && len > BSS_POOL / 4) continue;
    return kind;
  }
}

size_t fuzz_align_pick(Rng* r) {
  static const size_t common[] = {0, 0, 1, 3, 8, 16, 64, 4032, 4095};
  if (rng_chance(r, 600)) return common[rng_below(r, sizeof common / sizeof common[0])];
  return rng_below(r, PAGE);
}

size_t fuzz_stack_bytes(size_t len, size_t align) { return len + align + PAGE; }

/* The first offset at or after the pool's top with the wanted alignment: buffers may share a
 * partial page with the one before. */
static unsigned char* from_pool(unsigned char* pool, size_t size, size_t* top, size_t len, size_t align,
                                size_t* mark) {
  size_t start = *top / PAGE * PAGE + align;
  if (start < *top) start += PAGE;
  if (start + len > size) return NULL;
  *mark = *top;
  *top = start + len;
  return pool + start;
}

static unsigned char* mapped(FuzzBuf* b, int flags, int fd) {
  b->map_len = (b->align + b->len + PAGE - 1) / PAGE * PAGE + PAGE;
  if (fd >= 0 && ftruncate(fd, (off_t)b->map_len) != 0) return NULL;
  void* p = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, flags, fd, 0);
  if (p == MAP_FAILED) return NULL;
  b->base = p;
  return (unsigned char*)p + b->align;
}

FuzzBuf fuzz_buf_get(int kind, size_t len, size_t align, void* stack) {
  FuzzBuf b = {NULL, len, kind, align, NULL, 0, 0};
  switch (kind) {
    case MEM_BSS: b.p = from_pool(bss_pool, BSS_POOL, &bss_top, len, align, &b.pool_mark); break;
    case MEM_DATA: b.p = from_pool(data_pool, DATA_POOL, &data_top, len, align, &b.pool_mark); break;
    case MEM_STACK:
      if (stack) b.p = (unsigned char*)(((uintptr_t)stack + PAGE - 1) / PAGE * PAGE + align);
      break;
    case MEM_MMAP: b.p = mapped(&b, MAP_PRIVATE | MAP_ANONYMOUS, -1); break;
    case MEM_MMAP_SHARED: b.p = mapped(&b, MAP_SHARED | MAP_ANONYMOUS, -1); break;
    case MEM_MMAP_FILE: {
      char path[] = "/tmp/tnbc-fuzz-map-XXXXXX";
      const int fd = mkstemp(path);
      if (fd >= 0) {
        unlink(path);
        b.p = mapped(&b, MAP_PRIVATE, fd);
        close(fd);
      }
      break;
    }
    default: break;
  }
  if (!b.p) { /* the heap always works */
    b.kind = MEM_HEAP;
    b.base = malloc(len + 2 * PAGE);
    if (!b.base) {
      fprintf(stderr, "fuzz: out of memory (%zu bytes)\n", len);
      exit(2);
    }
    b.p = (unsigned char*)(((uintptr_t)b.base + PAGE - 1) / PAGE * PAGE + align);
  }
  return b;
}

void fuzz_buf_put(FuzzBuf* b) {
  size_t* top = b->kind == MEM_BSS ? &bss_top : b->kind == MEM_DATA ? &data_top : NULL;
  if (top) {
    const unsigned char* pool = b->kind == MEM_BSS ? bss_pool : data_pool;
    if ((size_t)(b->p - pool) + b->len != *top) {
      fprintf(stderr, "fuzz: internal error: static buffers released out of order\n");
      abort();
    }
    *top = b->pool_mark;
  } else if (b->kind == MEM_HEAP) {
    free(b->base);
  } else if (b->map_len) {
    munmap(b->base, b->map_len);
  }
  b->p = NULL;
}
