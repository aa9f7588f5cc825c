/* common/alloc_internal.h - the library's allocator, with a failure hook for tests (internal). */
#ifndef GCK_ALLOC_INTERNAL_H
#define GCK_ALLOC_INTERNAL_H

#include <stddef.h>

#include "status_internal.h"

/* malloc/calloc/realloc/free that the test hook can make fail. Sizes are
 * checked for overflow by the callers through gck_mul_size. */
GCK_INTERNAL void *gck_malloc(size_t bytes);
GCK_INTERNAL void *gck_calloc(size_t count, size_t size);
GCK_INTERNAL void *gck_realloc(void *p, size_t bytes);
/* 64-byte aligned (SIMD-friendly, one cache line); from 4 MiB on, 2 MiB
 * aligned and advised for transparent huge pages. Free with free(). */
GCK_INTERNAL void *gck_aligned_alloc(size_t bytes);
GCK_INTERNAL char *gck_strdup(const char *s);
/* Asks for the pages of p[0..len) (a read-only file mapping made without
 * read-around) before they are read: read-ahead of the range, then its
 * page tables filled in one call instead of a fault per page
 * (MADV_POPULATE_READ, Linux 5.14 and later). Advice only: failures are
 * ignored. */
GCK_INTERNAL void gck_prefault_read(const void *p, size_t len);
/* 1 when the mapping range p[0..len) looks cached: 64 of its pages, evenly
 * spread with the first and the last, are all in memory (mincore). A hint
 * for choosing how to read it; 0 when it cannot tell. */
GCK_INTERNAL int gck_resident(const void *p, size_t len);

/* *out = a * b; 0 on overflow. */
GCK_INTERNAL int gck_mul_size(size_t a, size_t b, size_t *out);

/* Test hook: the k-th allocation from now (k = 0: the next one) fails, once;
 * k < 0 disables. Lets tests walk every allocation failure of an operation
 * and check that nothing changed. */
GCK_INTERNAL void gck_alloc_fail_after(long k);

#endif /* GCK_ALLOC_INTERNAL_H */
