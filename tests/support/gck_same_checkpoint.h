/* tests/support/gck_same_checkpoint.h - two checkpoints hold the same bits (public API only: usable by tests that
 * link the shared libraries, such as the MPI ones). Include after <cmocka.h>. */
#ifndef GCK_SAME_CHECKPOINT_H
#define GCK_SAME_CHECKPOINT_H

#include <string.h>

#include <gradckpt/checkpoint.h>

static inline void gck_same_double(double a, double b, const char *what)
{
    if (memcmp(&a, &b, sizeof a) != 0)
        fail_msg("%s differs: %.17g vs %.17g", what, a, b);
}

/* Same step, layers, values, norms, clip factor, dtype, size and checksum, and the same id when
 * check_id (created_at aside). */
static inline void gck_assert_same_checkpoint_id(const gck_checkpoint *a, const gck_checkpoint *b, int check_id)
{
    assert_int_equal(gck_checkpoint_num_layers(a), gck_checkpoint_num_layers(b));
    assert_true(gck_checkpoint_checksum(a) == gck_checkpoint_checksum(b));
    assert_int_equal(gck_checkpoint_checksum_algo(a), gck_checkpoint_checksum_algo(b));
    assert_int_equal(gck_checkpoint_dtype(a), gck_checkpoint_dtype(b));
    assert_int_equal(gck_checkpoint_compressed_size(a), gck_checkpoint_compressed_size(b));
    assert_int_equal(gck_checkpoint_step(a), gck_checkpoint_step(b));
    if (check_id)
        assert_int_equal(gck_checkpoint_id(a), gck_checkpoint_id(b));
    gck_same_double(gck_checkpoint_global_norm(a), gck_checkpoint_global_norm(b), "global norm");
    gck_same_double(gck_checkpoint_norm_before_clip(a), gck_checkpoint_norm_before_clip(b), "pre-clip norm");
    gck_same_double(gck_checkpoint_clip_coef(a), gck_checkpoint_clip_coef(b), "clip coef");
    const size_t esz = gck_dtype_size(gck_checkpoint_dtype(a));
    for (size_t i = 0; i < gck_checkpoint_num_layers(a); i++) {
        gck_tensor_view va, vb;
        assert_int_equal(gck_checkpoint_layer(a, i, &va), GCK_OK);
        assert_int_equal(gck_checkpoint_layer(b, i, &vb), GCK_OK);
        assert_string_equal(va.layer_id, vb.layer_id);
        assert_int_equal(va.n, vb.n);
        assert_int_equal(va.step, vb.step);
        gck_same_double(va.norm, vb.norm, "layer norm");
        if (va.n > 0 && memcmp(va.values, vb.values, va.n * esz) != 0)
            fail_msg("layer '%s': values differ", va.layer_id);
    }
}

/* As gck_assert_same_checkpoint_id, ids included. */
static inline void gck_assert_same_checkpoint(const gck_checkpoint *a, const gck_checkpoint *b)
{
    gck_assert_same_checkpoint_id(a, b, 1);
}

#endif /* GCK_SAME_CHECKPOINT_H */
