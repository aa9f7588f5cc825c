/* tests/support/sharded_fixture.h - a sample snapshot and a full comparison, on the public API only (the sharded
 * snapshot tests in one process and under mpirun). Include after <cmocka.h> and <gradckpt/gradckpt.h>. */
#ifndef GCK_SHARDED_FIXTURE_H
#define GCK_SHARDED_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t gck_fx_rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t z = *s;
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    return z ^ (z >> 29);
}

/* A snapshot of every kind of item: tensors of several dtypes and sizes (a
 * scalar, an empty one, sizes with ties), optimizer blobs, a loss cid, user
 * and typed metadata. Equal seeds give equal snapshots. */
static gck_snapshot *gck_fx_sample(uint64_t seed, uint64_t step)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(step, &s), GCK_OK);
    static const struct {
        const char *name;
        gck_dtype dtype;
        size_t ndim;
        int64_t shape[3];
    } t[] = {
        {"embed.weight", GCK_DTYPE_F32, 2, {64, 33}},
        {"layer0.w", GCK_DTYPE_F32, 2, {17, 19}},
        {"layer0.b", GCK_DTYPE_F32, 1, {19}},
        {"layer1.w", GCK_DTYPE_BF16, 2, {40, 20}},
        {"layer1.b", GCK_DTYPE_F64, 1, {20}},
        {"head.w", GCK_DTYPE_F16, 3, {5, 7, 9}},
        {"counter", GCK_DTYPE_I64, 0, {0}},
        {"empty", GCK_DTYPE_F32, 1, {0}},
        {"tie.a", GCK_DTYPE_U8, 1, {76}},
        {"tie.b", GCK_DTYPE_U8, 1, {76}},
    };
    uint64_t r = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        size_t count = 1;
        for (size_t d = 0; d < t[i].ndim; d++)
            count *= (size_t)t[i].shape[d];
        const size_t nb = count * gck_dtype_size(t[i].dtype);
        unsigned char *buf = malloc(nb ? nb : 1);
        assert_non_null(buf);
        for (size_t b = 0; b < nb; b++)
            buf[b] = (unsigned char)gck_fx_rnd(&r);
        assert_int_equal(gck_snapshot_add_tensor(s, t[i].name, t[i].dtype, t[i].shape, t[i].ndim, buf), GCK_OK);
        free(buf);
    }
    unsigned char blob[300];
    for (size_t b = 0; b < sizeof blob; b++)
        blob[b] = (unsigned char)gck_fx_rnd(&r);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "layer0.w", blob, sizeof blob), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "head.w", blob, 77), GCK_OK);
    assert_int_equal(gck_snapshot_set_loss_cid(s, "xxh3:00000000deadbeef"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "run", "sharded"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "data.position", 123456789012345ULL), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "lr", 1.0000000000000001e-05), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(s, 1700000000 + step), GCK_OK);
    return s;
}

/* Every field, and the items of want (all of b's when want is a): names,
 * dtypes, shapes, bytes, content ids. */
static void gck_fx_same(const gck_snapshot *want, const gck_snapshot *got)
{
    assert_int_equal(gck_snapshot_step(got), gck_snapshot_step(want));
    assert_int_equal(gck_snapshot_timestamp(got), gck_snapshot_timestamp(want));
    const char *la = gck_snapshot_loss_cid(want), *lb = gck_snapshot_loss_cid(got);
    assert_true((la == NULL) == (lb == NULL));
    if (la != NULL)
        assert_string_equal(la, lb);
    assert_int_equal(gck_snapshot_num_metadata(got), gck_snapshot_num_metadata(want));
    for (size_t i = 0; i < gck_snapshot_num_metadata(want); i++) {
        const char *k = gck_snapshot_metadata_key(want, i);
        assert_string_equal(gck_snapshot_metadata_key(got, i), k);
        assert_string_equal(gck_snapshot_metadata(got, k), gck_snapshot_metadata(want, k));
    }
    assert_int_equal(gck_snapshot_num_tensors(got), gck_snapshot_num_tensors(want));
    for (size_t i = 0; i < gck_snapshot_num_tensors(want); i++) {
        gck_tensor_info a, b;
        assert_int_equal(gck_snapshot_tensor(want, i, &a), GCK_OK);
        assert_int_equal(gck_snapshot_tensor(got, i, &b), GCK_OK);
        assert_string_equal(b.name, a.name);
        assert_int_equal(b.dtype, a.dtype);
        assert_int_equal(b.ndim, a.ndim);
        if (a.ndim)
            assert_memory_equal(b.shape, a.shape, a.ndim * sizeof *a.shape);
        assert_int_equal(b.nbytes, a.nbytes);
        if (a.nbytes)
            assert_memory_equal(b.data, a.data, a.nbytes);
        assert_string_equal(b.content_id, a.content_id);
    }
    assert_int_equal(gck_snapshot_num_optimizer_states(got), gck_snapshot_num_optimizer_states(want));
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(want); i++) {
        const char *pa, *pb;
        const void *ba, *bb;
        size_t na, nb;
        assert_int_equal(gck_snapshot_optimizer_state(want, i, &pa, &ba, &na), GCK_OK);
        assert_int_equal(gck_snapshot_optimizer_state(got, i, &pb, &bb, &nb), GCK_OK);
        assert_string_equal(pb, pa);
        assert_int_equal(nb, na);
        if (na)
            assert_memory_equal(bb, ba, na);
    }
}

#endif /* GCK_SHARDED_FIXTURE_H */
