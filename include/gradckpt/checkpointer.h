/* gradckpt/checkpointer.h - accumulate per-layer gradients over micro-batches and flush checkpoints. */
#ifndef GRADCKPT_CHECKPOINTER_H
#define GRADCKPT_CHECKPOINTER_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/checkpoint.h>
#include <gradckpt/dtype.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>
#include <gradckpt/tensors.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How the tensors of one layer in one flush window are combined. */
typedef enum gck_accum_mode {
    GCK_ACCUM_SUM,          /**< r = ((0 + t1) + t2) + ... */
    GCK_ACCUM_MEAN,         /**< the sum, then r / count (a true division) */
    GCK_ACCUM_WEIGHTED_MEAN /**< r = r + (t_i * w_i), then r / sum(w_i) unless that is 0 */
} gck_accum_mode;

/**
 * The order in which the tensors of one layer in one flush window are
 * combined (weights, mean and weighted-mean divisions are as the mode says).
 */
typedef enum gck_reduction {
    GCK_REDUCE_SEQUENTIAL, /**< the left fold ((0 + t0) + t1) + t2 ... (the default) */
    /** A fixed pairwise tree over the tensors' indices in the window:
     *  T(i, i + 1) = 0 + t_i * w_i and T(lo, hi) = T(lo, lo + p) + T(lo + p, hi),
     *  p the largest power of two below hi - lo (aligned power-of-two left
     *  subtrees, as the kernels' block tree); the weight sum of
     *  GCK_ACCUM_WEIGHTED_MEAN in the same tree. A window split into aligned
     *  power-of-two blocks can be summed block by block, on other processes,
     *  to the same bits (gradckpt/reduction.h, gradckpt/mpi.h). Streaming:
     *  popcount(count) <= log2(count) + 1 buffers per layer. */
    GCK_REDUCE_TREE
} gck_reduction;

/** Longest layer id accepted (strlen). */
#define GCK_LAYER_ID_MAX 4096

/** Checkpointer configuration; gck_config_init() sets the defaults. */
typedef struct gck_config {
    size_t max_checkpoints;          /**< history bound; default 10; 0 is invalid */
    size_t compression_threshold;    /**< default 1000 (see compressed_size) */
    gck_accum_mode accumulation_mode; /**< default GCK_ACCUM_SUM */
    const double *weights;           /**< GCK_ACCUM_WEIGHTED_MEAN: w_i for the i-th tensor
                                          of a layer in a window (1.0 past the end);
                                          copied at create */
    size_t n_weights;
    int clip_enabled;                /**< default 0 */
    double clip_norm;                /**< max global L2 norm when clip_enabled (> 0) */
    int error_if_nonfinite;          /**< default 0: NaN/Inf global norm fails flush */
    gck_dtype dtype;                 /**< checkpoints: F64 (default), F32 or BF16 (buffers in
                                          f32, rounded once at flush: see gck_flush) */
    gck_checksum checksum;           /**< default GCK_CHECKSUM_FNV1A64 */
    gck_reduction reduction;         /**< default GCK_REDUCE_SEQUENTIAL */
} gck_config;

/**
 * Fills cfg with the defaults above. NULL is ignored.
 *
 * Ownership: writes *cfg.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API void gck_config_init(gck_config *cfg);

/**
 * The gradient checkpointer: a sorted map of layer id -> one accumulation
 * buffer (reused across flushes), and a bounded history of checkpoints.
 * Not thread-safe: one owner at a time. (Large kernels inside it use OpenMP.)
 */
typedef struct gck_checkpointer gck_checkpointer;

/**
 * Creates a checkpointer. cfg may be NULL (the defaults); the weights are
 * copied.
 *
 * Ownership: *out is owned by the caller; free it with gck_checkpointer_destroy.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL out, max_checkpoints 0, an
 *         unknown mode, clip_enabled with clip_norm not > 0 (or NaN), weights
 *         NULL with n_weights > 0, an unknown checksum, dtype or reduction;
 *         GCK_ERR_UNSUPPORTED for a valid dtype other than F64/F32/BF16;
 *         GCK_ERR_NO_MEMORY. *out is unchanged on error.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpointer_create(const gck_config *cfg, gck_checkpointer **out);

/**
 * Frees the checkpointer, its buffers and its references to the history
 * (checkpoints the caller retained stay valid). NULL is fine.
 *
 * Ownership: consumes cp.  Errors: none.  Thread-safety: one owner.
 */
GCK_API void gck_checkpointer_destroy(gck_checkpointer *cp);

/**
 * Adds one tensor of n values to the pending buffer of layer_id (created on
 * first use) and increments the global step by one. The first tensor of a
 * flush window fixes the layer's length; values are combined as the mode
 * says, in the accumulation dtype: F64 storage accumulates in f64, F32 and
 * BF16 storage in f32 (f64 inputs into F32 or BF16 storage are rounded to
 * float on arrival: an f32 accumulator cannot hold more, and refusing them
 * would only move that rounding to the caller; f32 inputs into F64 storage
 * are widened exactly).
 * Non-finite values are accepted (judged at flush). `step` is recorded as the
 * layer's step.
 *
 * Ownership: reads values; keeps no reference to it or to layer_id.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL cp or layer_id, values NULL with
 *         n > 0, an empty id or one longer than GCK_LAYER_ID_MAX;
 *         GCK_ERR_DIMENSION_MISMATCH when n differs from the layer's length
 *         in this window ("dimension mismatch for layer 'fc1': expected 4,
 *         got 3"); GCK_ERR_NO_MEMORY. On error nothing changes (not the
 *         buffer, not the global step).
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_accumulate_f64(gck_checkpointer *cp, const char *layer_id, const double *values, size_t n,
                                      uint64_t step);
/** As gck_accumulate_f64, for f32 input values. */
GCK_API gck_status gck_accumulate_f32(gck_checkpointer *cp, const char *layer_id, const float *values, size_t n,
                                      uint64_t step);

/**
 * All layers of one micro-batch in one call: exactly what calling
 * gck_accumulate_f32(cp, layer_ids[i], values[i], lens[i], step) for i = 0,
 * 1, ..., count - 1 in that order does, bit for bit, including the global
 * step, which grows by count (one per tensor, as count separate calls would:
 * the global step counts accumulated tensors, not calls). A layer may appear
 * more than once; its tensors are then combined in list order (and take the
 * next weights in GCK_ACCUM_WEIGHTED_MEAN), exactly as separate calls.
 * Every layer's step becomes `step`. count 0 is a no-op (the arrays may then
 * be NULL).
 *
 * The layers' kernels run on OpenMP threads (big tensors split in fixed
 * blocks, small ones spread over threads); the result does not depend on the
 * thread count.
 *
 * Ownership: reads the arrays and the values; keeps no reference to them.
 * Errors: all-or-nothing: every argument is checked before anything changes,
 *         and on any error nothing has changed (no buffer, no layer, not the
 *         global step). GCK_ERR_INVALID_ARGUMENT for NULL cp, NULL arrays
 *         with count > 0, and, naming the index, a NULL/empty/too long id or
 *         NULL values with lens[i] > 0; GCK_ERR_DIMENSION_MISMATCH when
 *         lens[i] differs from the layer's length in this window (or from an
 *         earlier entry of the same layer in this call), with the message of
 *         gck_accumulate_f32; GCK_ERR_NO_MEMORY.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_accumulate_many_f32(gck_checkpointer *cp, const char *const *layer_ids,
                                           const float *const *values, const size_t *lens, size_t count,
                                           uint64_t step);
/** As gck_accumulate_many_f32, for f64 input values (gck_accumulate_f64 per tensor). */
GCK_API gck_status gck_accumulate_many_f64(gck_checkpointer *cp, const char *const *layer_ids,
                                           const double *const *values, const size_t *lens, size_t count,
                                           uint64_t step);

/**
 * As gck_accumulate_f32, for bf16 / f16 input values (uint16_t bits, see
 * kernels.h): every value is widened exactly to its f32 value and combined
 * with the SPEC formulas in the accumulation dtype (f32 for F32 and BF16
 * storage, f64 for F64), so the
 * buffers, and every flush, are bit-identical to accumulating the widened
 * f32 tensors with gck_accumulate_f32. Errors and thread-safety: as
 * gck_accumulate_f32.
 */
GCK_API gck_status gck_accumulate_bf16(gck_checkpointer *cp, const char *layer_id, const uint16_t *values, size_t n,
                                       uint64_t step);
/** f16 version of gck_accumulate_bf16. */
GCK_API gck_status gck_accumulate_f16(gck_checkpointer *cp, const char *layer_id, const uint16_t *values, size_t n,
                                      uint64_t step);
/** As gck_accumulate_many_f32, for bf16 input values (gck_accumulate_bf16 per tensor). */
GCK_API gck_status gck_accumulate_many_bf16(gck_checkpointer *cp, const char *const *layer_ids,
                                            const uint16_t *const *values, const size_t *lens, size_t count,
                                            uint64_t step);
/** As gck_accumulate_many_f32, for f16 input values (gck_accumulate_f16 per tensor). */
GCK_API gck_status gck_accumulate_many_f16(gck_checkpointer *cp, const char *const *layer_ids,
                                           const uint16_t *const *values, const size_t *lens, size_t count,
                                           uint64_t step);

/**
 * The global step: the number of tensors accumulated so far, i.e. the
 * number of gck_accumulate_* calls, a gck_accumulate_many_* call counting
 * one per tensor (the seed's meaning: not optimizer steps, not flushes; see
 * gck_flush_count for those). Failed calls and discards do not change it.
 * 0 for NULL. One owner.
 */
GCK_API uint64_t gck_global_step(const gck_checkpointer *cp);

/**
 * The number of flush windows completed: successful gck_flush calls plus
 * successful gck_flush_into calls, including those that record nothing
 * (out NULL). Discards and failed flushes do not count. For a trainer that
 * flushes once per optimizer step this is the optimizer step count. 0 for
 * NULL. One owner.
 */
GCK_API uint64_t gck_flush_count(const gck_checkpointer *cp);

/**
 * Finishes every pending layer (mean / weighted division), computes the
 * layer and global L2 norms, clips by the global norm if configured and it
 * exceeds clip_norm, checksums the stored values, and appends the new
 * checkpoint (id 0, 1, 2, ...; step = global step; created_at = now) to the
 * history, evicting the oldest when max_checkpoints are held. The pending
 * state is then cleared (buffers are kept for reuse). The checkpoint keeps
 * the pre-clip global norm and the clip factor
 * (gck_checkpoint_norm_before_clip, gck_checkpoint_clip_coef).
 *
 * Memory: the new checkpoint's values are written into the memory of the
 * checkpoint this flush evicts (no fresh pages, no page faults) only when
 * all of these hold: the history is full (max_checkpoints held),
 * error_if_nonfinite is off, and nobody else holds a reference to the
 * evicted checkpoint. Otherwise fresh memory is allocated, and its first
 * touch costs page faults, about as much as another pass over the values.
 * So release your reference to a flushed checkpoint before the next flush
 * (with max_checkpoints 1: before the next flush, every time) and the flush
 * runs in steady state; a trainer that needs no history at all uses
 * gck_flush_into with out NULL instead.
 *
 * Ownership: when out is not NULL, *out receives a new reference the caller
 *            releases; the history keeps its own.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL cp;
 *         GCK_ERR_NO_ACCUMULATED_GRADIENTS when nothing is pending;
 *         GCK_ERR_NONFINITE when error_if_nonfinite is set and the global
 *         norm is NaN/Inf (the pending state stays for inspection or
 *         gck_checkpointer_discard_pending); GCK_ERR_NO_MEMORY. On error
 *         the checkpointer is unchanged and *out is untouched.
 * Thread-safety: one owner; layers are finished on OpenMP threads with
 *         results independent of the thread count.
 *
 * BF16 storage: each layer is finished in f32 exactly as F32 storage
 * finishes it, then rounded once to bf16 (round to nearest even, every NaN
 * 0xFFFF: gck_convert_f32_to_bf16). Clipping is decided on the global norm
 * of those rounded values, so every norm the checkpoint records describes
 * bf16 values: gck_checkpoint_norm_before_clip is the norm of what would
 * have been stored without clipping (equal to the global norm when clipping
 * did not fire), and the layer norms and global norm are those of the
 * stored values (what gck_checkpoint_load recomputes). When clipping fires,
 * each f32 value is multiplied by (float)(clip_norm / norm) and rounded to
 * bf16 from there (never from an already rounded value). The checksum is
 * over the stored bf16 bits, little-endian. The flush keeps an f32 and a
 * bf16 staging copy of the values (6 bytes a value, reused by later
 * flushes), so a failure (NO_MEMORY, NONFINITE) still changes nothing.
 */
GCK_API gck_status gck_flush(gck_checkpointer *cp, uint64_t now, gck_checkpoint **out);

/**
 * Where gck_flush_into writes: one buffer per pending layer.
 *
 * tensors.data[i] receives tensors.lens[i] values of the checkpointer's
 * storage dtype (tensors.dtype, or every tensors.dtypes[i], must equal
 * gck_config.dtype: no conversion; BF16 storage writes bf16 buffers, which a
 * trainer with bf16 gradients hands straight to its optimizer). layer_ids NULL: buffer i is for the
 * i-th pending layer in bytewise layer-id order (gck_pending_layers' order,
 * not the order the layers were accumulated in: a model's tensor order
 * needs layer_ids); otherwise buffer i is for layer layer_ids[i], in any
 * order (a binary search per id). Either way every pending layer gets
 * exactly one buffer of exactly its length.
 * Buffers may not overlap each other (a trainer's contiguous gradient buffer
 * cut into its tensors is the intended case).
 */
typedef struct gck_flush_dst {
    const char *const *layer_ids; /**< optional: tensors.count layer ids, each pending once */
    gck_tensor_list tensors;      /**< the caller's buffers (see gck_tensor_list) */
} gck_flush_dst;

/**
 * Finishes the flush window into the caller's buffers: the values written
 * to dst are exactly, bit for bit, the values gck_flush would store in its
 * checkpoint (mean / weighted division, clipping by the global norm when
 * configured and triggered), and the window is closed as gck_flush closes it
 * (pending state cleared, buffers kept for reuse, gck_flush_count + 1).
 *
 * out NULL: nothing is recorded and nothing is copied: no checkpoint, no
 * checksum, the history and the id sequence untouched. The work is one
 * fused pass per layer into dst (divide or copy, and the sum of squares),
 * and one in-place scaling pass only when clipping fires. When clipping
 * fired in the previous window and every layer is a plain copy (sum, mean
 * of one micro-batch) or is divided by the same divisor (mean over the same
 * number of micro-batches), it is instead one pass over the checkpointer's
 * own buffers for the norm (dividing them in place) and one pass writing
 * the clipped values into dst: the same values, with less memory traffic.
 * out not NULL: the checkpoint is also recorded exactly as gck_flush records
 * it (the next id, step, created_at = now, the same values, norms, checksum,
 * pre-clip norm and clip factor, the same eviction and memory reuse), and
 * *out receives a new reference the caller releases. This costs one more
 * pass: the finished values are copied from dst into the checkpoint and
 * checksummed in the same pass.
 *
 * info (optional) receives total_norm = the global norm before clipping (as
 * gck_checkpoint_norm_before_clip), coef = the clip factor (as
 * gck_checkpoint_clip_coef: 1.0 when not clipped) and clipped = 1 when
 * clipping fired. The clip rule is the checkpointer's (clip_norm / norm when
 * norm > clip_norm), not gck_tensors_clip_by_norm's eps rule.
 *
 * BF16 storage: the values are gck_flush's (finished and clipped in its
 * staging copies, then copied to dst), so nothing is written to dst on any
 * error, error_if_nonfinite or not.
 *
 * With error_if_nonfinite the values are first finished into a staging copy
 * the checkpointer keeps (memory for one more copy of the gradients, reused
 * by later calls), so that a NaN/Inf norm can fail without touching dst; dst
 * then receives them in one more pass.
 *
 * Ownership: writes the dst buffers (and reads nothing from them); keeps no
 *            reference to dst. *out as above.
 * Errors: on every error nothing changes: not the checkpointer (pending
 *         state, history, ids, counts), not dst, not *out.
 *         GCK_ERR_INVALID_ARGUMENT for NULL cp or dst, NULL arrays in dst
 *         with a count, NULL data with a length, a NULL layer id, a layer
 *         named twice, a count different from the number of pending layers
 *         (naming a pending layer that has no buffer);
 *         GCK_ERR_NO_ACCUMULATED_GRADIENTS when nothing is pending;
 *         GCK_ERR_NOT_FOUND for a layer id with nothing pending;
 *         GCK_ERR_DIMENSION_MISMATCH for a buffer whose length is not its
 *         layer's ("dimension mismatch for layer 'fc1': expected 4, got 3");
 *         GCK_ERR_UNSUPPORTED for a buffer dtype other than the storage
 *         dtype; GCK_ERR_NONFINITE as gck_flush (the pending state stays;
 *         *info, if given, still receives the non-finite total_norm, coef
 *         1.0, clipped 0); GCK_ERR_NO_MEMORY.
 * Thread-safety: one owner; layers are finished on OpenMP threads with
 *         results independent of the thread count.
 */
GCK_API gck_status gck_flush_into(gck_checkpointer *cp, uint64_t now, const gck_flush_dst *dst, gck_clip_info *info,
                                  gck_checkpoint **out);

/**
 * The most recent checkpoint in the history, or NULL.
 *
 * Ownership: borrowed; valid until the next call that changes cp (retain
 *            it to keep it longer).
 * Errors: none.  Thread-safety: one owner.
 */
GCK_API const gck_checkpoint *gck_latest_checkpoint(const gck_checkpointer *cp);

/** The checkpoint with that id if still in the history, else NULL. Borrowed, as above. */
GCK_API const gck_checkpoint *gck_checkpoint_by_id(const gck_checkpointer *cp, uint64_t id);

/**
 * Drops every pending tensor and starts a new window, as a flush does,
 * without making a checkpoint. The global step is unchanged.
 *
 * Ownership: none.  Errors: GCK_ERR_INVALID_ARGUMENT for NULL cp.
 * Thread-safety: one owner.
 */
GCK_API gck_status gck_checkpointer_discard_pending(gck_checkpointer *cp);

/** Number of tensors accumulated since the last flush/discard (0 for NULL). */
GCK_API size_t gck_pending_count(const gck_checkpointer *cp);

/**
 * Writes up to cap pending layer ids, in bytewise order, to names and returns
 * the total number of pending layers (names may be NULL when cap is 0).
 *
 * Ownership: the names are borrowed; valid until the next call that changes cp.
 * Errors: none (NULL cp gives 0).  Thread-safety: one owner.
 */
GCK_API size_t gck_pending_layers(const gck_checkpointer *cp, const char **names, size_t cap);

/** Statistics over the checkpointer's current state. */
typedef struct gck_checkpointer_stats {
    size_t total_checkpoints;   /**< checkpoints held in the history */
    uint64_t total_steps;       /**< == global step */
    double avg_checkpoint_norm; /**< mean global norm over held checkpoints (0 if none) */
    double max_checkpoint_norm; /**< max global norm over held checkpoints (0 if none) */
    size_t pending_tensors;     /**< == gck_pending_count */
} gck_checkpointer_stats;

/** Current statistics (all zero for NULL). One owner. */
GCK_API gck_checkpointer_stats gck_checkpointer_stats_get(const gck_checkpointer *cp);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_CHECKPOINTER_H */
