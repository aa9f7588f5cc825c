/* gradckpt/reduction.h - a flush window summed elsewhere: hooks for transports that combine windows across processes. */
#ifndef GRADCKPT_REDUCTION_H
#define GRADCKPT_REDUCTION_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/checkpointer.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * With GCK_REDUCE_TREE, a window of K micro-batches split into aligned
 * power-of-two blocks [f, f + m) (f a multiple of m) has, per layer, one sum
 * per block, and the tree combines the blocks' sums to the bits one
 * checkpointer holding all K would get. A transport (gradckpt/mpi.h is one)
 * reads each process's block sums with gck_pending_sum_get, combines them in
 * the tree order, and finishes the window with gck_flush_reduced.
 */

/** One pending layer's window sum, as the checkpointer holds it. */
typedef struct gck_pending_sum {
    const char *layer_id; /**< borrowed */
    const void *data;     /**< the window's sum (before any division): n values of the
                               accumulation dtype (the storage dtype; f32 for BF16 storage),
                               in the configured order; borrowed, valid until the next call
                               that changes the checkpointer */
    size_t n;             /**< the layer's length */
    size_t count;         /**< tensors accumulated in the window */
    double wsum;          /**< GCK_ACCUM_WEIGHTED_MEAN: the weights' sum, in the same order */
    uint64_t step;        /**< the step of the layer's last tensor */
} gck_pending_sum;

/**
 * The k-th pending layer's window sum, layers in bytewise id order (as
 * gck_pending_layers). In tree order with a count that is not a power of two
 * the pending subtrees are first folded into a buffer the checkpointer keeps
 * (the subtrees are unchanged).
 *
 * Ownership: *out borrows from cp (see data).
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL cp or out, k past the pending
 *         layers; GCK_ERR_NO_MEMORY (the fold buffer). *out is unchanged on error.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_pending_sum_get(gck_checkpointer *cp, size_t k, gck_pending_sum *out);

/** What gck_flush_reduced finishes for one pending layer. */
typedef struct gck_reduced_layer {
    void *data;     /**< the combined sum, the layer's length of the accumulation dtype (as
                         gck_pending_sum's); may be overwritten (finished in place) */
    size_t count;   /**< the number of tensors summed (GCK_ACCUM_MEAN's divisor) */
    double wsum;    /**< the weights' sum (GCK_ACCUM_WEIGHTED_MEAN's divisor, unless 0) */
    uint64_t step;  /**< the layer's step in the checkpoint */
} gck_reduced_layer;

/**
 * Closes the flush window as gck_flush does (finishing, norms, clipping,
 * checksum, history, ids, gck_flush_count), but from the given sums instead
 * of the checkpointer's own: layers[k] for the k-th pending layer in
 * bytewise id order, each of that layer's length. The checkpoint's step is
 * `step` (not this checkpointer's global step, which is unchanged).
 *
 * Ownership: reads (and may overwrite) layers[k].data; keeps no reference.
 *            *out (optional) as gck_flush.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL cp, NULL layers with layers
 *         pending, NULL data for a layer of nonzero length; otherwise as gck_flush, with the same
 *         guarantee that on error nothing changed.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_flush_reduced(gck_checkpointer *cp, uint64_t now, uint64_t step,
                                     const gck_reduced_layer *layers, gck_checkpoint **out);

/*
 * Finishing in place: a transport that receives the combined sums piece by
 * piece may finish each piece itself and write it straight into the memory
 * of the checkpoint the window will record, so that the flush reads the
 * values only when clipping fires or a checksum is configured. The calls:
 * gck_flush_stage (the checkpoint's memory), gck_flush_finish_values per
 * piece (the flush's own finishing arithmetic), gck_flush_finished (norms,
 * clipping, checksum, record). F32 and F64 storage only.
 */

/**
 * Creates the checkpoint the window will record (on the memory of the one
 * it will evict, when that is free) and lends its values: values[k] (np
 * entries, np the pending layers) receives the k-th pending layer's values
 * in bytewise id order, each the layer's length of the storage dtype, in
 * increasing addresses (values[k + 1] at or after the end of values[k];
 * the gaps are padding nobody reads). Staging again releases the previous
 * staged checkpoint.
 *
 * Ownership: the memory belongs to the staged checkpoint, which lives until
 *            gck_flush_finished, gck_flush_unstage or any other call that
 *            accumulates, flushes or destroys cp. No other call on cp may
 *            run between staging and gck_flush_finished. The memory may be
 *            the history's oldest checkpoint's (when nobody else holds it and
 *            error_if_nonfinite is off, as gck_flush recycles it): stage only
 *            when nothing can fail before gck_flush_finished, since values
 *            written and then unstaged stay in that checkpoint.
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL cp or values),
 *         GCK_ERR_NO_ACCUMULATED_GRADIENTS (nothing pending),
 *         GCK_ERR_UNSUPPORTED (BF16 storage), GCK_ERR_NO_MEMORY; nothing
 *         staged then.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_flush_stage(gck_checkpointer *cp, void **values);

/**
 * The flush's finishing of n values of a layer whose window summed `count`
 * tensors with weight sum wsum (GCK_ACCUM_WEIGHTED_MEAN): dst = src / d, or
 * the copy src * 1, exactly as gck_flush_reduced would store them when
 * every pending layer has this count and wsum; returns gck_sumsq_f32 (or
 * _f64) of dst. dst may equal src. Pieces cut at multiples of 8192
 * elements from the layer's start (the kernels' block, kernels.h) give sums
 * of squares that combine into the layer's as the kernels combine blocks:
 * aligned power-of-two runs of blocks, pairwise.
 *
 * Ownership: reads src, writes dst (storage dtype, n values).
 * Errors: none (NaN for NULL cp or BF16 storage).
 * Thread-safety: any thread, on disjoint dst, while cp is not changed.
 */
GCK_API double gck_flush_finish_values(const gck_checkpointer *cp, size_t count, double wsum, void *dst,
                                       const void *src, size_t n);

/** What gck_flush_finished records for one pending layer. */
typedef struct gck_finished_layer {
    double sumsq;  /**< the sum of squares of the layer's finished values (see gck_flush_finish_values) */
    uint64_t step; /**< the layer's step in the checkpoint */
} gck_finished_layer;

/**
 * Closes the window as gck_flush_reduced does, from the staged checkpoint
 * whose values the caller has finished (every value of every layer, with
 * gck_flush_finish_values): layer norms, global norm, clipping (in place),
 * checksum, history, ids, gck_flush_count. The checkpoint's step is `step`.
 *
 * Ownership: *out (optional) as gck_flush. The staged checkpoint is consumed
 *            (on error too).
 * Errors: GCK_ERR_INVALID_ARGUMENT (NULL cp or layers, nothing staged, the
 *         pending layers changed since staging); GCK_ERR_NONFINITE as
 *         gck_flush (the pending state kept). On error nothing but the
 *         staged checkpoint changed.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_flush_finished(gck_checkpointer *cp, uint64_t now, uint64_t step,
                                      const gck_finished_layer *layers, gck_checkpoint **out);

/** Releases a staged checkpoint (nothing for NULL cp or none staged). One owner. */
GCK_API void gck_flush_unstage(gck_checkpointer *cp);

/**
 * The checkpointer's configuration (weights point at its own copy), or NULL
 * for NULL. Borrowed: valid while cp lives. One owner.
 */
GCK_API const gck_config *gck_checkpointer_config(const gck_checkpointer *cp);

/**
 * Sets the calling thread's gck_last_error() message (a printf format) and
 * returns s: for libraries built on gradckpt (libgradckpt_mpi) whose errors
 * callers read as gradckpt's.
 *
 * Ownership: copies the message.  Errors: none.  Thread-safety: any thread.
 */
GCK_API gck_status gck_report_error(gck_status s, const char *fmt, ...) GCK_PRINTF(2, 3);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_REDUCTION_H */
