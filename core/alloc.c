/* core/alloc.c - allocation with an injectable failure (tests walk every failure path). */
#include "alloc_internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

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
