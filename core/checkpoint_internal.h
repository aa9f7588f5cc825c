/* core/checkpoint_internal.h - the checkpoint's layout, shared by the checkpointer and file I/O (internal). */
#ifndef GCK_CHECKPOINT_INTERNAL_H
#define GCK_CHECKPOINT_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <gradckpt/checkpoint.h>

#include "status_internal.h"

typedef struct gck_ckpt_layer {
    const char *id; /* points into the checkpoint's id block */
    void *values;   /* points into the checkpoint's value arena (64-byte aligned) */
    size_t n;
    uint64_t step;
    double sumsq; /* sum of squares of the stored values (canonical kernel sum) */
    double norm;  /* L2 norm of the stored values */
} gck_ckpt_layer;

struct gck_checkpoint {
    atomic_size_t refs;
    uint64_t id, step, created_at;
    gck_dtype dtype;
    gck_checksum checksum_algo;
    uint64_t checksum;
    size_t compressed_size;
    size_t n_values;
    double global_norm;      /* of the stored (clipped) values */
    double norm_before_clip; /* global norm of the finished values before clipping */
    double clip_coef;        /* the clip factor applied, 1.0 when not clipped */
    size_t n_layers;
    gck_ckpt_layer *layers; /* in bytewise id order */
    void *arena;            /* every layer's values, each 64-byte aligned */
    size_t arena_bytes;
};

/* Allocates a checkpoint of n_layers layers with ids[] (copied) and lens[]
 * values each: the layer array and ids in one block, the values in a 64-byte
 * aligned arena. When reuse is not NULL and its reuse_bytes are enough, that
 * arena is used instead of a new one (c->arena == reuse: the caller then
 * detaches it from its previous owner, e.g. gck_checkpoint_take_arena).
 * refs = 1, norm_before_clip and clip_coef unset (NaN, 1.0). NULL on
 * allocation failure (nothing leaks, reuse untouched). */
GCK_INTERNAL gck_checkpoint *gck_checkpoint_new(gck_dtype dtype, size_t n_layers, const char *const *ids,
                                                const size_t *lens, void *reuse, size_t reuse_bytes);

/* Bytes of value arena a checkpoint with these lengths needs. */
GCK_INTERNAL size_t gck_checkpoint_arena_bytes(gck_dtype dtype, size_t n_layers, const size_t *lens);

/* Detaches c's arena so releasing c does not free it (it now belongs to the
 * checkpoint that was built on it). */
GCK_INTERNAL void gck_checkpoint_take_arena(gck_checkpoint *c);

/* The layer's norm from its sum of squares: sqrt(sumsq) when that is in
 * range, else the rescaled gck_l2norm of the values (an extra pass, only for
 * sums that overflowed or lost precision to underflow). */
GCK_INTERNAL double gck_layer_norm(const void *values, size_t n, gck_dtype dtype, double sumsq);
/* gck_sumsq_* of n values of dtype (F64, F32 or BF16). */
GCK_INTERNAL double gck_values_sumsq(const void *values, size_t n, gck_dtype dtype);

/* The global norm of layers with these sums of squares and norms: sqrt of
 * the left-to-right sum of sumsq, or, when that overflows or underflows with
 * finite layer norms, max * sqrt(sum((norm/max)^2)). */
GCK_INTERNAL double gck_global_norm_of(const gck_ckpt_layer *layers, size_t n);

/* Computes the checksum of every stored value with algo and stores it. */
GCK_INTERNAL void gck_checkpoint_seal(gck_checkpoint *c, gck_checksum algo);

/* Copies layer i's values from src[i] (c->layers[i].n values of c's dtype)
 * into c and computes the checksum with algo in the same pass, a cache-sized
 * piece at a time (the hash reads what was just written, from cache): the
 * values and checksum are those of copying, then gck_checkpoint_seal. */
GCK_INTERNAL void gck_checkpoint_fill_seal(gck_checkpoint *c, const void *const *src, gck_checksum algo);

#endif /* GCK_CHECKPOINT_INTERNAL_H */
