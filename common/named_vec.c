/* common/named_vec.c - a vector of named items kept sorted bytewise by name. */
#include "named_vec_internal.h"

#include <stdint.h>
#include <string.h>

#include "alloc_internal.h"

size_t gck_named_find(const gck_named_vec *v, const char *name, int *found)
{
    size_t lo = 0, hi = v->n;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int c = strcmp(*(char *const *)v->items[mid], name);
        if (c == 0) {
            *found = 1;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

int gck_named_reserve(gck_named_vec *v)
{
    return gck_named_reserve_n(v, 1);
}

int gck_named_reserve_n(gck_named_vec *v, size_t k)
{
    if (k <= v->cap - v->n)
        return 1;
    if (k > SIZE_MAX / sizeof(void *) / 2 - v->n)
        return 0;
    size_t ncap = v->cap ? 2 * v->cap : 8;
    if (ncap - v->n < k)
        ncap = v->n + k;
    void **ni = gck_realloc(v->items, ncap * sizeof *ni);
    if (ni == NULL)
        return 0;
    v->items = ni;
    v->cap = ncap;
    return 1;
}

void gck_named_insert(gck_named_vec *v, size_t at, void *item)
{
    memmove(&v->items[at + 1], &v->items[at], (v->n - at) * sizeof *v->items);
    v->items[at] = item;
    v->n++;
}
