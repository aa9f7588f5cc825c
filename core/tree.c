/* core/tree.c - the tree order of micro-batches (GCK_REDUCE_TREE): streaming pairwise subtrees per layer.
 *
 * See tree_internal.h for the order. The checkpointer calls in here from its
 * accumulate and flush paths; everything numeric is a public kernel. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/kernels.h>
#include <gradckpt/reduction.h>

#include "alloc_internal.h"
#include "tree_internal.h"

static size_t gck_popcount(size_t x)
{
    size_t c = 0;
    for (; x != 0; x &= x - 1)
        c++;
    return c;
}

static size_t gck_trailing_ones(size_t x)
{
    size_t c = 0;
    for (; x & 1u; x >>= 1)
        c++;
    return c;
}

size_t gck_tree_levels_for(size_t j)
{
    return gck_popcount(j) + ((j & 1u) == 0);
}

gck_status gck_tree_reserve(gck_tree *t, size_t nlev, size_t n, size_t esz, const char *id)
{
    const int grow = n > t->cap && t->nlev > 1;
    if (nlev <= t->nlev && !grow)
        return GCK_OK;
    const size_t want = nlev > t->nlev ? nlev : t->nlev;
    const size_t cap = n > t->cap ? n : t->cap;
    size_t bytes;
    void **lev = gck_calloc(want, sizeof *lev);
    double *wlev = gck_calloc(want, sizeof *wlev);
    int ok = lev != NULL && wlev != NULL && gck_mul_size(cap, esz, &bytes);
    for (size_t d = 1; ok && d < want; d++) {
        lev[d] = d < t->nlev && !grow ? t->lev[d] : gck_aligned_alloc(bytes ? bytes : 1);
        ok = lev[d] != NULL;
    }
    if (!ok) {
        for (size_t d = 1; lev != NULL && d < want; d++)
            if (d >= t->nlev || grow)
                free(lev[d]);
        free(lev), free(wlev);
        return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': cannot allocate %zu levels of %zu values", id, want, n);
    }
    for (size_t d = 1; d < t->nlev; d++) {
        if (grow)
            free(t->lev[d]);
    }
    if (t->nlev > 0)
        memcpy(wlev, t->wlev, t->nlev * sizeof *wlev);
    free(t->lev), free(t->wlev);
    t->lev = lev;
    t->wlev = wlev;
    t->nlev = want;
    t->cap = cap;
    return GCK_OK;
}

static void *gck_level(gck_tree *t, void *buf0, size_t d, size_t off)
{
    return (char *)(d == 0 ? buf0 : t->lev[d]) + off;
}

/* acc + (xs[0] + (xs[1] + ... + xs[m-1])) into acc, one pass (m >= 1). */
static void gck_add_rfold_same(gck_dtype storage, void *acc, const void *const *xs, size_t m, size_t len)
{
    if (storage == GCK_DTYPE_F64)
        gck_add_rfold_f64(acc, (const double *const *)xs, m, len);
    else
        gck_add_rfold_f32(acc, (const float *const *)xs, m, len);
}

/* dst = 0 + (x * w) when init, else dst = dst + (x * w) (dst + x unweighted):
 * the kernels gck_*_K for storage S (float or double) and input dtype K. */
#define GCK_LEAF(S, K)                                                                       \
    (init ? gck_axpy_init_##K(dst, (S)w, x, len)                                             \
          : weighted ? gck_axpy_##K(dst, (S)w, x, len) : gck_add_##K(dst, x, len))
/* init == GCK_LEAF_STREAM: a level opened with streaming stores (same-type inputs) */
#define GCK_LEAF_STREAM 2
static void gck_leaf(gck_dtype storage, void *dst, const void *x, gck_dtype in_dtype, size_t len, int init,
                     int weighted, double w)
{
    if (init == GCK_LEAF_STREAM && storage == in_dtype) {
        if (storage == GCK_DTYPE_F64)
            gck_axpy_init_nt_f64(dst, w, x, len);
        else
            gck_axpy_init_nt_f32(dst, (float)w, x, len);
        return;
    }
    if (storage == GCK_DTYPE_F64) {
        switch (in_dtype) {
        case GCK_DTYPE_F64: GCK_LEAF(double, f64); break;
        case GCK_DTYPE_F32: GCK_LEAF(double, f32_to_f64); break;
        case GCK_DTYPE_BF16: GCK_LEAF(double, bf16_to_f64); break;
        default: GCK_LEAF(double, f16_to_f64); break; /* F16: the inputs the checkpointer takes */
        }
    } else {
        switch (in_dtype) {
        case GCK_DTYPE_F32: GCK_LEAF(float, f32); break;
        case GCK_DTYPE_F64: GCK_LEAF(float, f64_to_f32); break;
        case GCK_DTYPE_BF16: GCK_LEAF(float, bf16_to_f32); break;
        default: GCK_LEAF(float, f16_to_f32); break;
        }
    }
}
#undef GCK_LEAF

/* Elements per block of a weighted or converted leaf that completes more
 * than one pair: its product passes through a block on the stack (in L1). */
#define GCK_TREE_BLOCK 1024

void gck_tree_add_piece(gck_tree *t, void *buf0, gck_dtype storage, size_t j, const void *values,
                        gck_dtype in_dtype, size_t lo, size_t len, int weighted, double w, int stream)
{
    const size_t esz = gck_dtype_size(storage), isz = gck_dtype_size(in_dtype);
    const size_t depth = gck_popcount(j);
    const size_t merges = gck_trailing_ones(j);
    const char *x = (const char *)values + lo * isz;
    if (merges <= 1) {
        /* j even: a new level; j odd: complete the last level's pair */
        const size_t d = merges == 0 ? depth : depth - 1;
        const int init = merges == 0 ? (stream ? GCK_LEAF_STREAM : 1) : 0;
        gck_leaf(storage, gck_level(t, buf0, d, lo * esz), x, in_dtype, len, init, weighted, w);
        return;
    }
    /* The leaf completes the last level's pair, then each completed pair of
     * equal subtrees merges into the level to its left, left + right:
     * level[depth - merges] + (level[depth - merges + 1] + (... +
     * (level[depth - 1] + leaf))), one pass over the levels it closes
     * (gck_add_rfold; addition is commutative bit for bit). The levels are
     * read once and only the target is written: 64 Mi f32, merges closing
     * 2, 3, 4 levels 58, 80, 94 -> 52, 68-72, 84-91 ms against the sums
     * through a block on the stack (hand-written single passes: 54, 71, 87). */
    const void *xs[64]; /* merges <= bits of size_t */
    for (size_t q = 0; q + 1 < merges; q++)
        xs[q] = gck_level(t, buf0, depth - merges + 1 + q, lo * esz);
    void *acc = gck_level(t, buf0, depth - merges, lo * esz);
    if (!weighted && in_dtype == storage) {
        xs[merges - 1] = x;
        gck_add_rfold_same(storage, acc, xs, merges, len);
        return;
    }
    /* a weighted or converted leaf: level[depth - 1] + leaf in the block,
     * then the fold of the others and the block */
    double block[GCK_TREE_BLOCK];
    const size_t last = merges - 2; /* xs[last] is level[depth - 1], replaced by the block */
    const char *lev_last = xs[last];
    for (size_t b = 0; b < len; b += GCK_TREE_BLOCK) {
        const size_t m = len - b < GCK_TREE_BLOCK ? len - b : GCK_TREE_BLOCK;
        memcpy(block, lev_last + b * esz, m * esz);
        gck_leaf(storage, block, x + b * isz, in_dtype, m, 0, weighted, w);
        const void *ys[64];
        for (size_t q = 0; q < last; q++)
            ys[q] = (const char *)xs[q] + b * esz;
        ys[last] = block;
        gck_add_rfold_same(storage, (char *)acc + b * esz, ys, merges - 1, m);
    }
}

void gck_tree_add_weight(gck_tree *t, size_t j, double w)
{
    const size_t depth = gck_popcount(j);
    const size_t merges = gck_trailing_ones(j);
    if (merges == 0) {
        t->wlev[depth] = 0.0 + w;
        return;
    }
    t->wlev[depth - 1] = t->wlev[depth - 1] + w;
    for (size_t s = 1; s < merges; s++)
        t->wlev[depth - 1 - s] = t->wlev[depth - 1 - s] + t->wlev[depth - s];
}

gck_status gck_tree_fold(gck_tree *t, void *buf0, gck_dtype storage, size_t count, size_t n, const char *id,
                         void **sum, double *wsum)
{
    const size_t depth = gck_popcount(count);
    if (depth <= 1) {
        *sum = buf0;
        *wsum = t->wlev != NULL ? t->wlev[0] : 0.0;
        return GCK_OK;
    }
    const size_t esz = gck_dtype_size(storage);
    if (n > t->fold_cap) {
        size_t bytes;
        void *f = gck_mul_size(n, esz, &bytes) ? gck_aligned_alloc(bytes ? bytes : 1) : NULL;
        if (f == NULL)
            return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': cannot allocate the folded sum of %zu values", id, n);
        free(t->fold);
        t->fold = f;
        t->fold_cap = n;
    }
    /* T(lo, hi) = level d + T(rest), from the right: level 0 + (level 1 +
     * (... + level depth-1)), a copy of level 0 and one pass over the others
     * (gck_add_rfold). No level is -0 (tree_internal.h), so this equals the
     * sum started from 0 + level depth-1. */
    void *f = t->fold;
    if (n > 0)
        memcpy(f, buf0, n * esz);
    const void *xs[64];
    for (size_t d = 1; d < depth; d++)
        xs[d - 1] = t->lev[d];
    gck_add_rfold_same(storage, f, xs, depth - 1, n);
    double w = t->wlev[depth - 1];
    for (size_t d = depth - 1; d-- > 0;)
        w = t->wlev[d] + w;
    *sum = f;
    *wsum = w;
    return GCK_OK;
}

void gck_tree_free(gck_tree *t)
{
    for (size_t d = 1; d < t->nlev; d++)
        free(t->lev[d]);
    free(t->lev);
    free(t->wlev);
    free(t->fold);
    *t = (gck_tree){0};
}

gck_status gck_report_error(gck_status s, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    const int len = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return len < 0 ? gck_fail(s, "%s", gck_status_name(s)) : gck_fail(s, "%s", buf);
}
