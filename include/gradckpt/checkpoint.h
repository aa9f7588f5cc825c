/* gradckpt/checkpoint.h - immutable, refcounted gradient checkpoints: layers, norms, diff. */
#ifndef GRADCKPT_CHECKPOINT_H
#define GRADCKPT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/dtype.h>
#include <gradckpt/export.h>
#include <gradckpt/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A flushed checkpoint: the finished (and possibly clipped) gradients of
 * every layer, in bytewise layer-id order, with their norms and a checksum.
 * Immutable after creation and reference counted: safe to read and to
 * retain/release from any number of threads at once.
 */
typedef struct gck_checkpoint gck_checkpoint;

/** Checksum algorithms a checkpoint can carry (gck_config.checksum). */
typedef enum gck_checksum {
    GCK_CHECKSUM_FNV1A64 = 0, /**< FNV-1a 64 (the default): byte-serial, ~1 GB/s */
    GCK_CHECKSUM_XXH3_64,     /**< XXH3-64, seed 0 (libxxhash): ~20+ GB/s */
    GCK_CHECKSUM_NONE         /**< no checksum; gck_checkpoint_checksum() is 0 */
} gck_checksum;

/** One layer of a checkpoint, as returned by gck_checkpoint_layer/find. */
typedef struct gck_tensor_view {
    const char *layer_id; /**< owned by the checkpoint */
    const void *values;   /**< double*, float* or, for BF16, uint16_t* (the bf16 bits in this
                               CPU's byte order: gck_convert_bf16_to_f32 widens them exactly);
                               owned by the checkpoint */
    gck_dtype dtype;      /**< GCK_DTYPE_F64, GCK_DTYPE_F32 or GCK_DTYPE_BF16 */
    size_t n;             /**< number of values */
    uint64_t step;        /**< step of the last tensor accumulated into this layer */
    double norm;          /**< L2 norm of values, after clipping */
} gck_tensor_view;

/** One entry of gck_checkpoint_diff. */
typedef struct gck_layer_distance {
    const char *layer_id; /**< owned by the array (freed with it) */
    double distance;
} gck_layer_distance;

/**
 * Adds a reference and returns c (as a non-const pointer the caller now owns
 * one reference of). NULL gives NULL.
 *
 * Ownership: the caller must gck_checkpoint_release() the result.
 * Errors: none.  Thread-safety: safe from any thread (atomic count).
 */
GCK_API gck_checkpoint *gck_checkpoint_retain(const gck_checkpoint *c);

/**
 * Drops one reference; the checkpoint is freed with the last one. NULL is fine.
 *
 * Ownership: consumes the caller's reference.
 * Errors: none.  Thread-safety: safe from any thread (atomic count).
 */
GCK_API void gck_checkpoint_release(gck_checkpoint *c);

/* Accessors. Each takes a non-NULL checkpoint (NULL gives 0 / GCK_DTYPE_F64),
 * cannot fail and is safe from any thread. */
GCK_API uint64_t gck_checkpoint_id(const gck_checkpoint *c);          /**< 0, 1, 2, ... in flush order */
GCK_API uint64_t gck_checkpoint_step(const gck_checkpoint *c);        /**< global step at flush */
GCK_API uint64_t gck_checkpoint_created_at(const gck_checkpoint *c);  /**< the flush's `now` */
/** bytes if total values <= compression_threshold, else (size_t)(bytes * 0.6) */
GCK_API size_t gck_checkpoint_compressed_size(const gck_checkpoint *c);
/** Checksum of the stored values (see gck_checkpoint_checksum_algo). */
GCK_API uint64_t gck_checkpoint_checksum(const gck_checkpoint *c);
/** Which checksum gck_checkpoint_checksum holds. */
GCK_API gck_checksum gck_checkpoint_checksum_algo(const gck_checkpoint *c);
GCK_API gck_dtype gck_checkpoint_dtype(const gck_checkpoint *c);      /**< F64, F32 or BF16 */
GCK_API size_t gck_checkpoint_num_layers(const gck_checkpoint *c);
/** Total number of values over all layers. */
GCK_API size_t gck_checkpoint_num_values(const gck_checkpoint *c);

/**
 * The checksum of the stored values, recomputed now with algorithm `algo`:
 * over the little-endian bytes of every value, layers in layer-id order
 * (FNV-1a 64 from GCK_FNV1A64_INIT, or XXH3-64 with seed 0, of that byte
 * stream; 0 for GCK_CHECKSUM_NONE). Equal to gck_checkpoint_checksum() for
 * the checkpoint's own algorithm unless its memory was corrupted.
 *
 * Ownership: none.  Errors: none (an unknown algo gives 0).
 * Thread-safety: safe from any thread.
 */
GCK_API uint64_t gck_checkpoint_compute_checksum(const gck_checkpoint *c, gck_checksum algo);

/**
 * Layer i in bytewise layer-id order (the seed's replay order).
 *
 * Ownership: pointers in *out are borrowed from c; valid while c is alive.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL c/out or i >= num_layers;
 *         *out is then unchanged.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpoint_layer(const gck_checkpoint *c, size_t i, gck_tensor_view *out);

/**
 * The layer named layer_id (bytewise comparison, binary search).
 *
 * Ownership: pointers in *out are borrowed from c.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments; GCK_ERR_NOT_FOUND
 *         when no layer has that id. *out is unchanged on error.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpoint_find(const gck_checkpoint *c, const char *layer_id, gck_tensor_view *out);

/**
 * The global L2 norm of the stored (clipped) values: sqrt of the layers'
 * sums of squares added left to right in layer-id order, computed by scaling
 * when that sum overflows although every value is finite. NaN/Inf values
 * give NaN/Inf. NULL gives NaN.
 *
 * Ownership: none.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API double gck_checkpoint_global_norm(const gck_checkpoint *c);

/**
 * The global L2 norm of the finished values before clipping (what PyTorch's
 * clip_grad_norm_ returns and trainers log to spot spikes), computed as
 * gck_checkpoint_global_norm is, over the values before they were scaled.
 * Equal to gck_checkpoint_global_norm, bit for bit, when clipping did not
 * fire. NaN/Inf when a value was NaN/Inf. NULL gives NaN. A checkpoint loaded from a file written before
 * this field existed reports its global norm (the file has no record).
 *
 * Ownership: none.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API double gck_checkpoint_norm_before_clip(const gck_checkpoint *c);

/**
 * The clip factor applied to the values: clip_norm / norm_before_clip when
 * clipping fired (in [0, 1): F64 values were multiplied by it, F32 values by
 * (float) of it, BF16 values are the f32 values multiplied by (float) of it,
 * then rounded), else exactly 1.0 (clipping off, the norm within the bound,
 * or NaN). NULL gives NaN. A checkpoint loaded from a file written before
 * this field existed reports 1.0.
 *
 * Ownership: none.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API double gck_checkpoint_clip_coef(const gck_checkpoint *c);

/**
 * Per-layer L2 distance between a and b: one entry per layer present in
 * either, in layer-id order. Layers in both: the L2 distance between their
 * value vectors, the shorter padded with zeros (values of different dtypes
 * are widened exactly and compared in f64); a layer in only one: that layer's own norm.
 *
 * Ownership: *out is one allocation (entries and their ids) the caller frees
 *            with gck_free(); *out is NULL when *n_out is 0.
 * Errors: GCK_ERR_INVALID_ARGUMENT for NULL arguments; GCK_ERR_NO_MEMORY.
 *         On error *out and *n_out are unchanged.
 * Thread-safety: safe from any thread.
 */
GCK_API gck_status gck_checkpoint_diff(const gck_checkpoint *a, const gck_checkpoint *b,
                                       gck_layer_distance **out, size_t *n_out);

/**
 * Frees an array the library allocated for the caller (gck_checkpoint_diff).
 * NULL is fine.
 *
 * Ownership: consumes p.  Errors: none.  Thread-safety: safe from any thread.
 */
GCK_API void gck_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* GRADCKPT_CHECKPOINT_H */
