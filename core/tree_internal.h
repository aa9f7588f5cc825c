/* core/tree_internal.h - the tree order of micro-batches: one layer's pending subtrees (internal). */
#ifndef GCK_TREE_INTERNAL_H
#define GCK_TREE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/dtype.h>
#include <gradckpt/status.h>

#include "attributes.h"

/*
 * GCK_REDUCE_TREE: the tensors t_0 .. t_{k-1} of a layer in one window are
 * combined as T(0, k), where T(lo, lo + 1) = 0 + (t_lo * w_lo) and, for a
 * longer range, T(lo, hi) = T(lo, lo + p) + T(lo + p, hi) with p the largest
 * power of two below hi - lo (aligned power-of-two left subtrees, as the
 * kernels' block tree). Streaming, as a binary counter: after c tensors the
 * layer holds popcount(c) complete subtrees, sizes decreasing, level 0 (the
 * largest, in the layer's own buffer) first; tensor j either opens a new
 * level (j even) or is added to the last one and the completed subtrees are
 * merged left + right (j odd). So about log2(k) + 1 buffers per layer. The
 * flush folds the levels from the right (the last T(lo, hi) splits) into a
 * separate buffer, leaving the levels as they were.
 *
 * Sums of zeros: every leaf is 0 + t*w, so no subtree is ever -0 and adding
 * the product t*w to a subtree equals adding the leaf 0 + t*w.
 */
typedef struct gck_tree {
    void **lev;      /* lev[d] for 1 <= d < nlev: level d's buffer, cap elements (lev[0] unused) */
    double *wlev;    /* wlev[d]: the weight sum of level d's subtree, same order of additions */
    size_t nlev;     /* levels allocated, level 0 included */
    size_t cap;
    void *fold;      /* the flush's folded sum when more than one level is pending */
    size_t fold_cap;
} gck_tree;

/* Levels tensor j of a window needs (level 0 included). */
GCK_INTERNAL size_t gck_tree_levels_for(size_t j);

/* Makes levels [1, nlev) hold n elements of esz bytes each. The levels hold
 * nothing the window needs when this grows cap (n grows only for an idle
 * layer), so they are replaced. Fails with GCK_ERR_NO_MEMORY (message names
 * layer id) and then keeps what it had: nothing observable changes. */
GCK_INTERNAL gck_status gck_tree_reserve(gck_tree *t, size_t nlev, size_t n, size_t esz, const char *id);

/* Adds elements [lo, lo + len) of tensor j (of in_dtype, the whole tensor at
 * values) with weight w to the levels: buf0 is level 0 (the layer's own
 * buffer), storage the levels' dtype, weighted 0 for plain sums (w is then 1).
 * Elementwise, so any cut of [0, n) into pieces gives the same bits. With
 * stream, a level the tensor opens is written with streaming stores (the
 * same values; for windows larger than the last-level cache, where the
 * level would be evicted before it is read: no read for ownership). */
GCK_INTERNAL void gck_tree_add_piece(gck_tree *t, void *buf0, gck_dtype storage, size_t j, const void *values,
                                     gck_dtype in_dtype, size_t lo, size_t len, int weighted, double w, int stream);

/* The weight bookkeeping of tensor j (weight w), once per tensor. */
GCK_INTERNAL void gck_tree_add_weight(gck_tree *t, size_t j, double w);

/* The window's sum T(0, count) of a layer of n elements: buf0 itself when
 * count is a power of two (one level), else the levels folded from the right
 * into the tree's fold buffer (allocated on first need: GCK_ERR_NO_MEMORY
 * naming id, nothing changed). *wsum gets the weights' sum in the same order.
 * The levels are not changed. */
GCK_INTERNAL gck_status gck_tree_fold(gck_tree *t, void *buf0, gck_dtype storage, size_t count, size_t n,
                                      const char *id, void **sum, double *wsum);

GCK_INTERNAL void gck_tree_free(gck_tree *t);

#endif /* GCK_TREE_INTERNAL_H */
