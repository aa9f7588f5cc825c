/* tests/support/store_fixtures.h - the store suites' "training run": version v's snapshot, and comparisons (cmocka). */
#ifndef GCK_STORE_FIXTURES_H
#define GCK_STORE_FIXTURES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include <gradckpt/snapshot.h>
#include <gradckpt/store.h>

#include "gck_test.h"

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

/* The content of version v of the test's "training run": a frozen tensor, two
 * that drift a little each version, a scalar, one that appears at v = 3, one
 * whose size changes, optimizer blobs (one frozen), metadata. */
static gck_snapshot *make_snapshot(uint64_t v)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(v * 10, &s), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(s, 1000 + v), GCK_OK);
    uint64_t r = 12345;
    float frozen[64 * 33];
    for (size_t i = 0; i < 64 * 33; i++)
        frozen[i] = (float)(rng_next(&r) % 1000) / 7.0f;
    const int64_t fs[2] = {64, 33};
    assert_int_equal(gck_snapshot_add_tensor(s, "frozen.w", GCK_DTYPE_F32, fs, 2, frozen), GCK_OK);
    float w[300 * 7];
    r = 777;
    for (size_t i = 0; i < 300 * 7; i++)
        w[i] = (float)(rng_next(&r) % 100000) / 1000.0f - 50.0f + (float)v * 1e-4f * (float)(i % 5);
    const int64_t ws[2] = {300, 7};
    assert_int_equal(gck_snapshot_add_tensor(s, "layer.w", GCK_DTYPE_F32, ws, 2, w), GCK_OK);
    double b[129];
    for (size_t i = 0; i < 129; i++)
        b[i] = (double)i * 0.25 - (double)v / 3.0;
    b[5] = (double)NAN; /* bits must survive as they are */
    b[6] = -0.0;
    b[7] = 1e-310;
    const int64_t bs = 129;
    assert_int_equal(gck_snapshot_add_tensor(s, "layer.b", GCK_DTYPE_F64, &bs, 1, b), GCK_OK);
    const int64_t step = (int64_t)v;
    assert_int_equal(gck_snapshot_add_tensor(s, "step", GCK_DTYPE_I64, NULL, 0, &step), GCK_OK);
    /* later dtypes: 2-, 8- and 1-byte planes that change from version to version */
    uint16_t u16[33];
    uint64_t u64[5];
    unsigned char f8[21];
    for (int i = 0; i < 33; i++)
        u16[i] = (uint16_t)(i * 1000 + (int)v * (i % 4 == 0));
    for (int i = 0; i < 5; i++)
        u64[i] = UINT64_C(0xfedcba9876543210) + (uint64_t)i * v;
    for (int i = 0; i < 21; i++)
        f8[i] = (unsigned char)(0x38 + (int)(v % 3) * (i % 2));
    const int64_t s33 = 33, s5 = 5, s21 = 21;
    assert_int_equal(gck_snapshot_add_tensor(s, "counts", GCK_DTYPE_U16, &s33, 1, u16), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "ids", GCK_DTYPE_U64, &s5, 1, u64), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "scales", GCK_DTYPE_F8_E4M3, &s21, 1, f8), GCK_OK);
    if (v >= 3) {
        unsigned char u[17];
        for (int i = 0; i < 17; i++)
            u[i] = (unsigned char)(i * 3);
        const int64_t us = 17;
        assert_int_equal(gck_snapshot_add_tensor(s, "new.t", GCK_DTYPE_U8, &us, 1, u), GCK_OK);
    }
    float rz[64];
    for (int i = 0; i < 64; i++)
        rz[i] = (float)i;
    const int64_t rs = (int64_t)(10 + v % 40);
    assert_int_equal(gck_snapshot_add_tensor(s, "resized", GCK_DTYPE_F32, &rs, 1, rz), GCK_OK);
    unsigned char blob[1000];
    for (int i = 0; i < 1000; i++)
        blob[i] = (unsigned char)(i + (int)v * (i % 3 == 0));
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "layer.w", blob, sizeof blob), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "frozen.w", frozen, 100), GCK_OK);
    char note[32];
    snprintf(note, sizeof note, "v%llu", (unsigned long long)v);
    assert_int_equal(gck_snapshot_set_metadata(s, "note", note), GCK_OK);
    assert_int_equal(gck_snapshot_set_loss_cid(s, note), GCK_OK);
    return s;
}

/* Two tensors: name, dtype, shape, bytes and content id. */
static void assert_same_tensor(const gck_tensor_info *x, const gck_tensor_info *y)
{
    assert_string_equal(x->name, y->name);
    assert_int_equal(x->dtype, y->dtype);
    assert_int_equal(x->ndim, y->ndim);
    for (size_t d = 0; d < x->ndim; d++)
        assert_int_equal(x->shape[d], y->shape[d]);
    assert_int_equal(x->nbytes, y->nbytes);
    assert_memory_equal(x->data, y->data, x->nbytes);
    assert_string_equal(x->content_id, y->content_id);
}

/* Everything a snapshot holds, compared byte for byte. */
static void assert_same_snapshot(const gck_snapshot *a, const gck_snapshot *b)
{
    assert_int_equal(gck_snapshot_step(a), gck_snapshot_step(b));
    assert_int_equal(gck_snapshot_timestamp(a), gck_snapshot_timestamp(b));
    const char *la = gck_snapshot_loss_cid(a), *lb = gck_snapshot_loss_cid(b);
    assert_true((la == NULL) == (lb == NULL));
    if (la != NULL)
        assert_string_equal(la, lb);
    assert_int_equal(gck_snapshot_num_metadata(a), gck_snapshot_num_metadata(b));
    for (size_t i = 0; i < gck_snapshot_num_metadata(a); i++) {
        const char *k = gck_snapshot_metadata_key(a, i);
        assert_string_equal(k, gck_snapshot_metadata_key(b, i));
        assert_string_equal(gck_snapshot_metadata(a, k), gck_snapshot_metadata(b, k));
    }
    assert_int_equal(gck_snapshot_num_tensors(a), gck_snapshot_num_tensors(b));
    for (size_t i = 0; i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info x, y;
        assert_int_equal(gck_snapshot_tensor(a, i, &x), GCK_OK);
        assert_int_equal(gck_snapshot_tensor(b, i, &y), GCK_OK);
        assert_same_tensor(&x, &y);
    }
    assert_int_equal(gck_snapshot_num_optimizer_states(a), gck_snapshot_num_optimizer_states(b));
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(a); i++) {
        const char *pa, *pb;
        const void *da, *db;
        size_t na, nb;
        assert_int_equal(gck_snapshot_optimizer_state(a, i, &pa, &da, &na), GCK_OK);
        assert_int_equal(gck_snapshot_optimizer_state(b, i, &pb, &db, &nb), GCK_OK);
        assert_string_equal(pa, pb);
        assert_int_equal(na, nb);
        assert_memory_equal(da, db, na);
    }
}

/* Every retained version restores to make_snapshot(version). */
static void assert_all_restore(gck_store *st)
{
    uint64_t vs[256];
    const size_t n = gck_store_versions(st, vs, 256);
    assert_true(n <= 256);
    for (size_t i = 0; i < n; i++) {
        gck_snapshot *got = NULL, *want = make_snapshot(vs[i]);
        assert_int_equal(gck_store_restore(st, vs[i], &got), GCK_OK);
        assert_same_snapshot(want, got);
        gck_snapshot_destroy(got);
        gck_snapshot_destroy(want);
    }
    size_t checked = 0;
    assert_int_equal(gck_store_verify(st, &checked), GCK_OK);
    assert_int_equal(checked, n);
}

#endif /* GCK_STORE_FIXTURES_H */
