/* common/alloc.c - allocation with an injectable failure (tests walk every failure path). */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MADV_HUGEPAGE */
#endif
#include "alloc_internal.h"

#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Buffers from this size on are placed on 2 MiB boundaries and marked for
 * transparent huge pages: first touches then fault once per 2 MiB instead of
 * once per 4 KiB, which on VMs (a fault costs microseconds there) is the
 * difference between ~3 and ~10 GB/s for a freshly allocated snapshot. */
#define GCK_HUGE_MIN ((size_t)4 << 20)
#define GCK_HUGE_PAGE ((size_t)2 << 20)

static _Atomic long gck_alloc_countdown = -1;

void gck_alloc_fail_after(long k)
{
    atomic_store(&gck_alloc_countdown, k < 0 ? -1 : k);
}

/* 1 when this allocation must fail (the hook's count reached zero). */
static int gck_alloc_should_fail(void)
{
    long c = atomic_load(&gck_alloc_countdown);
    while (c >= 0) {
        if (atomic_compare_exchange_weak(&gck_alloc_countdown, &c, c - 1))
            return c == 0;
    }
    return 0;
}

void *gck_malloc(size_t bytes)
{
    return gck_alloc_should_fail() ? NULL : malloc(bytes ? bytes : 1);
}

void *gck_calloc(size_t count, size_t size)
{
    return gck_alloc_should_fail() ? NULL : calloc(count ? count : 1, size ? size : 1);
}

void *gck_realloc(void *p, size_t bytes)
{
    return gck_alloc_should_fail() ? NULL : realloc(p, bytes ? bytes : 1);
}

void *gck_aligned_alloc(size_t bytes)
{
    if (gck_alloc_should_fail())
        return NULL;
    void *p = NULL;
    if (bytes >= GCK_HUGE_MIN && bytes <= SIZE_MAX - GCK_HUGE_PAGE) {
        const size_t rounded = (bytes + GCK_HUGE_PAGE - 1) / GCK_HUGE_PAGE * GCK_HUGE_PAGE;
        if (posix_memalign(&p, GCK_HUGE_PAGE, rounded) != 0)
            return NULL;
#ifdef MADV_HUGEPAGE
        (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice only: no THP is still correct */
#endif
        return p;
    }
    return posix_memalign(&p, 64, bytes ? bytes : 1) == 0 ? p : NULL;
}

char *gck_strdup(const char *s)
{
    const size_t len = strlen(s) + 1;
    char *d = gck_malloc(len);
    if (d != NULL)
        memcpy(d, s, len);
    return d;
}

int gck_mul_size(size_t a, size_t b, size_t *out)
{
    if (b != 0 && a > (size_t)-1 / b)
        return 0;
    *out = a * b;
    return 1;
}

/* The pages gck_resident looks at: enough to tell a cached file from a
 * cold one, few enough to cost microseconds (mincore of every page of a
 * 121 MB mapping took about 2 ms, as much as it saved). */
#define GCK_RESIDENT_SAMPLES 64

int gck_resident(const void *p, size_t len)
{
    const long page = sysconf(_SC_PAGESIZE);
    if (p == NULL || len == 0 || page <= 0)
        return 1;
    const uintptr_t lo = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page;
    const size_t pages = (size_t)((uintptr_t)p + len - lo + (uintptr_t)page - 1) / (size_t)page;
    const size_t k = pages < GCK_RESIDENT_SAMPLES ? pages : GCK_RESIDENT_SAMPLES;
    for (size_t i = 0; i < k; i++) {
        /* evenly spread, the first and the last page included */
        const size_t at = k > 1 ? i * (pages - 1) / (k - 1) : 0;
        unsigned char v = 0;
        if (mincore((void *)(lo + at * (size_t)page), (size_t)page, &v) != 0 || !(v & 1))
            return 0;
    }
    return 1;
}

void gck_prefault_read(const void *p, size_t len)
{
    const long page = sysconf(_SC_PAGESIZE);
    if (p == NULL || len == 0 || page <= 0)
        return;
    const uintptr_t lo = (uintptr_t)p / (uintptr_t)page * (uintptr_t)page;
    const size_t span = (size_t)((uintptr_t)p + len - lo);
    /* first the read-ahead of the whole range (pages not yet in memory come
     * in large reads: populating alone read a cold file's mapping page by
     * page, a partial restore 24 -> 110 ms), then the page tables */
    (void)posix_madvise((void *)lo, span, POSIX_MADV_WILLNEED);
#ifdef MADV_POPULATE_READ
    (void)madvise((void *)lo, span, MADV_POPULATE_READ); /* Linux 5.14 and later */
#endif
}
