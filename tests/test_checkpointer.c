/* tests/test_checkpointer.c - the checkpointer's behaviour (SPEC 1.3; the seed's unit tests in spirit). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "support/gck_test.h"

#include "alloc_internal.h"

static gck_checkpointer *make(gck_accum_mode mode, gck_dtype dt, size_t max)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.accumulation_mode = mode;
    cfg.dtype = dt;
    cfg.max_checkpoints = max;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    return cp;
}

static void test_config_defaults_and_errors(void **state)
{
    (void)state;
    gck_config cfg;
    gck_config_init(&cfg);
    assert_int_equal(cfg.max_checkpoints, 10);
    assert_int_equal(cfg.compression_threshold, 1000);
    assert_int_equal(cfg.accumulation_mode, GCK_ACCUM_SUM);
    assert_int_equal(cfg.clip_enabled, 0);
    assert_int_equal(cfg.error_if_nonfinite, 0);
    assert_int_equal(cfg.dtype, GCK_DTYPE_F64);
    assert_int_equal(cfg.checksum, GCK_CHECKSUM_FNV1A64);
    gck_checkpointer *cp = (gck_checkpointer *)0x1;
    assert_int_equal(gck_checkpointer_create(NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    gck_config bad = cfg;
    bad.max_checkpoints = 0;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "max_checkpoints"));
    bad = cfg, bad.clip_enabled = 1, bad.clip_norm = 0.0;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "clip_norm"));
    bad.clip_norm = NAN;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    bad = cfg, bad.accumulation_mode = (gck_accum_mode)7;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    bad = cfg, bad.n_weights = 3;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    bad = cfg, bad.dtype = GCK_DTYPE_F16;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_UNSUPPORTED);
    bad = cfg, bad.dtype = (gck_dtype)99;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    bad = cfg, bad.checksum = (gck_checksum)9;
    assert_int_equal(gck_checkpointer_create(&bad, &cp), GCK_ERR_INVALID_ARGUMENT);
    assert_ptr_equal(cp, (gck_checkpointer *)0x1); /* untouched on every error */
    assert_int_equal(gck_checkpointer_create(NULL, &cp), GCK_OK); /* NULL config: defaults */
    gck_checkpointer_destroy(cp);
    gck_checkpointer_destroy(NULL);
}

static void test_accumulate_and_steps(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 10);
    const double a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
    assert_int_equal(gck_accumulate_f64(cp, "layer.b", a, 3, 1), GCK_OK);
    assert_int_equal(gck_accumulate_f64(cp, "layer.a", a, 3, 2), GCK_OK);
    assert_int_equal(gck_accumulate_f64(cp, "layer.b", b, 3, 3), GCK_OK);
    assert_int_equal(gck_global_step(cp), 3);
    assert_int_equal(gck_pending_count(cp), 3);
    const char *names[4] = {0};
    assert_int_equal(gck_pending_layers(cp, names, 4), 2);
    assert_string_equal(names[0], "layer.a");
    assert_string_equal(names[1], "layer.b");
    assert_int_equal(gck_pending_layers(cp, names, 1), 2); /* total, even past cap */
    assert_int_equal(gck_pending_layers(cp, NULL, 0), 2);

    /* a length mismatch is refused and changes nothing */
    const double c4[4] = {5, 5, 5, 5};
    assert_int_equal(gck_accumulate_f64(cp, "layer.b", c4, 4, 9), GCK_ERR_DIMENSION_MISMATCH);
    assert_string_equal(gck_last_error(), "dimension mismatch for layer 'layer.b': expected 3, got 4");
    assert_int_equal(gck_global_step(cp), 3);
    assert_int_equal(gck_pending_count(cp), 3);

    gck_checkpoint *ck = NULL;
    assert_int_equal(gck_flush(cp, 1234, &ck), GCK_OK);
    assert_int_equal(gck_checkpoint_id(ck), 0);
    assert_int_equal(gck_checkpoint_step(ck), 3);
    assert_int_equal(gck_checkpoint_created_at(ck), 1234);
    assert_int_equal(gck_checkpoint_num_layers(ck), 2);
    assert_int_equal(gck_checkpoint_dtype(ck), GCK_DTYPE_F64);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_find(ck, "layer.b", &v), GCK_OK);
    const double *vb = v.values;
    assert_true(vb[0] == 11 && vb[1] == 22 && vb[2] == 33);
    assert_int_equal(v.step, 3);
    assert_true(v.norm == sqrt(11.0 * 11 + 22 * 22 + 33 * 33) || fabs(v.norm - sqrt(1694.0)) < 1e-12);
    assert_int_equal(gck_pending_count(cp), 0);
    assert_int_equal(gck_pending_layers(cp, NULL, 0), 0);
    assert_int_equal(gck_checkpoint_find(ck, "nope", &v), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "nope"));

    /* after a flush a layer may come with another length */
    assert_int_equal(gck_accumulate_f64(cp, "layer.b", c4, 4, 10), GCK_OK);
    assert_int_equal(gck_flush(cp, 1235, NULL), GCK_OK);
    assert_int_equal(gck_checkpoint_id(gck_latest_checkpoint(cp)), 1);
    assert_int_equal(gck_checkpoint_find(gck_latest_checkpoint(cp), "layer.b", &v), GCK_OK);
    assert_int_equal(v.n, 4);
    assert_int_equal(gck_checkpoint_find(gck_latest_checkpoint(cp), "layer.a", &v), GCK_ERR_NOT_FOUND);
    gck_checkpoint_release(ck);
    gck_checkpointer_destroy(cp);
}

static void test_flush_empty_and_history(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 3);
    gck_checkpoint *sentinel = (gck_checkpoint *)0x2;
    assert_int_equal(gck_flush(cp, 0, &sentinel), GCK_ERR_NO_ACCUMULATED_GRADIENTS);
    assert_ptr_equal(sentinel, (gck_checkpoint *)0x2);
    assert_null(gck_latest_checkpoint(cp));
    const double x[2] = {3, 4}, y[2] = {6, 8};
    gck_checkpoint *first = NULL;
    for (int i = 0; i < 5; i++) {
        /* evicted, unretained checkpoints are recycled: values must still be right */
        assert_int_equal(gck_accumulate_f64(cp, "w", i == 0 ? x : y, 2, (uint64_t)i), GCK_OK);
        assert_int_equal(gck_flush(cp, (uint64_t)(100 + i), i == 0 ? &first : NULL), GCK_OK);
    }
    /* ids 2, 3, 4 remain; 0 and 1 were evicted */
    assert_null(gck_checkpoint_by_id(cp, 0));
    assert_null(gck_checkpoint_by_id(cp, 1));
    for (uint64_t id = 2; id <= 4; id++) {
        assert_non_null(gck_checkpoint_by_id(cp, id));
        assert_int_equal(gck_checkpoint_created_at(gck_checkpoint_by_id(cp, id)), 100 + id);
    }
    assert_int_equal(gck_checkpoint_id(gck_latest_checkpoint(cp)), 4);
    /* a retained checkpoint outlives its eviction and the checkpointer */
    assert_int_equal(gck_checkpoint_id(first), 0);
    const gck_checkpointer_stats st = gck_checkpointer_stats_get(cp);
    assert_int_equal(st.total_checkpoints, 3);
    assert_int_equal(st.total_steps, 5);
    assert_true(st.avg_checkpoint_norm == 10.0 && st.max_checkpoint_norm == 10.0);
    gck_tensor_view lv;
    assert_int_equal(gck_checkpoint_find(gck_latest_checkpoint(cp), "w", &lv), GCK_OK);
    assert_true(((const double *)lv.values)[0] == 6.0 && lv.norm == 10.0);
    assert_int_equal(st.pending_tensors, 0);
    gck_checkpointer_destroy(cp);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_layer(first, 0, &v), GCK_OK);
    assert_true(v.norm == 5.0);
    /* its memory was not recycled by later flushes: it was retained */
    assert_true(((const double *)v.values)[0] == 3.0 && ((const double *)v.values)[1] == 4.0);
    assert_int_equal(gck_checkpoint_layer(first, 1, &v), GCK_ERR_INVALID_ARGUMENT);
    gck_checkpoint_release(first);
    gck_checkpoint_release(NULL);
}

static void test_modes(void **state)
{
    (void)state;
    const double t1[2] = {1, 2}, t2[2] = {3, 6};
    gck_tensor_view v;
    /* mean: (t1 + t2) / 2 */
    gck_checkpointer *cp = make(GCK_ACCUM_MEAN, GCK_DTYPE_F64, 2);
    gck_accumulate_f64(cp, "l", t1, 2, 1);
    gck_accumulate_f64(cp, "l", t2, 2, 2);
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_OK);
    gck_checkpoint_find(gck_latest_checkpoint(cp), "l", &v);
    assert_true(((const double *)v.values)[0] == 2 && ((const double *)v.values)[1] == 4);
    gck_checkpointer_destroy(cp);
    /* weighted mean: (1*t1 + 3*t2) / 4, then weight 1.0 past the end */
    gck_config cfg;
    gck_config_init(&cfg);
    const double w[2] = {1.0, 3.0};
    cfg.accumulation_mode = GCK_ACCUM_WEIGHTED_MEAN;
    cfg.weights = w;
    cfg.n_weights = 2;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    gck_accumulate_f64(cp, "l", t1, 2, 1);
    gck_accumulate_f64(cp, "l", t2, 2, 2);
    gck_flush(cp, 0, NULL);
    gck_checkpoint_find(gck_latest_checkpoint(cp), "l", &v);
    assert_true(((const double *)v.values)[0] == 2.5 && ((const double *)v.values)[1] == 5);
    gck_accumulate_f64(cp, "l", t1, 2, 1);
    gck_accumulate_f64(cp, "l", t2, 2, 2);
    gck_accumulate_f64(cp, "l", t2, 2, 3); /* third tensor: weight 1.0 */
    gck_flush(cp, 0, NULL);
    gck_checkpoint_find(gck_latest_checkpoint(cp), "l", &v);
    assert_true(((const double *)v.values)[0] == (1 + 9 + 3) / 5.0);
    gck_checkpointer_destroy(cp);
    /* weights summing to zero: no division */
    const double wz[2] = {1.0, -1.0};
    cfg.weights = wz;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    gck_accumulate_f64(cp, "l", t1, 2, 1);
    gck_accumulate_f64(cp, "l", t2, 2, 2);
    gck_flush(cp, 0, NULL);
    gck_checkpoint_find(gck_latest_checkpoint(cp), "l", &v);
    assert_true(((const double *)v.values)[0] == -2 && ((const double *)v.values)[1] == -4);
    gck_checkpointer_destroy(cp);
    /* the first tensor is 0 + t: -0.0 becomes +0.0 */
    cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F32, 1);
    const float negz[1] = {-0.0f};
    gck_accumulate_f32(cp, "z", negz, 1, 1);
    gck_flush(cp, 0, NULL);
    gck_checkpoint_find(gck_latest_checkpoint(cp), "z", &v);
    assert_false(signbit(((const float *)v.values)[0]));
    gck_checkpointer_destroy(cp);
}

static void test_replay_order_bytewise(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F32, 2);
    const char *ids[] = {"b", "a", "\xc3\xa9t\xc3\xa9", "B", "a.b", "a/b", "aa", "Z9"};
    const float one[1] = {1};
    for (size_t i = 0; i < 8; i++)
        assert_int_equal(gck_accumulate_f32(cp, ids[i], one, 1, i), GCK_OK);
    gck_flush(cp, 0, NULL);
    const gck_checkpoint *c = gck_latest_checkpoint(cp);
    const char *want[] = {"B", "Z9", "a", "a.b", "a/b", "aa", "b", "\xc3\xa9t\xc3\xa9"};
    for (size_t i = 0; i < 8; i++) {
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_layer(c, i, &v), GCK_OK);
        assert_string_equal(v.layer_id, want[i]);
        assert_int_equal(v.dtype, GCK_DTYPE_F32);
    }
    gck_checkpointer_destroy(cp);
}

static void test_diff(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 4);
    const double a1[3] = {1, 1, 1}, a2[2] = {4, 5}, onlya[2] = {3, 4};
    const double b1[3] = {1, 3, 1}, b2[3] = {4, 5, 12}, onlyb[1] = {7};
    gck_accumulate_f64(cp, "l1", a1, 3, 0);
    gck_accumulate_f64(cp, "l2", a2, 2, 0);
    gck_accumulate_f64(cp, "only_a", onlya, 2, 0);
    gck_checkpoint *A = NULL, *B = NULL;
    gck_flush(cp, 0, &A);
    gck_accumulate_f64(cp, "l1", b1, 3, 0);
    gck_accumulate_f64(cp, "l2", b2, 3, 0);
    gck_accumulate_f64(cp, "only_b", onlyb, 1, 0);
    gck_flush(cp, 0, &B);
    gck_layer_distance *d = NULL;
    size_t n = 0;
    assert_int_equal(gck_checkpoint_diff(A, B, &d, &n), GCK_OK);
    assert_int_equal(n, 4);
    assert_string_equal(d[0].layer_id, "l1");
    assert_true(d[0].distance == 2.0);
    assert_string_equal(d[1].layer_id, "l2");
    assert_true(d[1].distance == 12.0); /* shorter one padded with zero */
    assert_string_equal(d[2].layer_id, "only_a");
    assert_true(d[2].distance == 5.0); /* its own norm */
    assert_string_equal(d[3].layer_id, "only_b");
    assert_true(d[3].distance == 7.0);
    gck_free(d);
    assert_int_equal(gck_checkpoint_diff(A, A, &d, &n), GCK_OK);
    for (size_t i = 0; i < n; i++)
        assert_true(d[i].distance == 0.0);
    gck_free(d);
    assert_int_equal(gck_checkpoint_diff(A, NULL, &d, &n), GCK_ERR_INVALID_ARGUMENT);
    gck_checkpoint_release(A);
    gck_checkpoint_release(B);
    gck_checkpointer_destroy(cp);
}

static void test_clipping_and_norms(void **state)
{
    (void)state;
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.clip_enabled = 1;
    cfg.clip_norm = 1.0;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    const double a[2] = {3, 0}, b[1] = {4};
    gck_accumulate_f64(cp, "a", a, 2, 0);
    gck_accumulate_f64(cp, "b", b, 1, 0);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
    gck_tensor_view v;
    gck_checkpoint_find(c, "a", &v);
    assert_true(((const double *)v.values)[0] == 3.0 * (1.0 / 5.0));
    assert_true(fabs(gck_checkpoint_global_norm(c) - 1.0) < 1e-15);
    assert_true(fabs(v.norm - 0.6) < 1e-15);
    gck_checkpoint_release(c);
    /* below the bound: untouched */
    const double s[1] = {0.5};
    gck_accumulate_f64(cp, "a", s, 1, 0);
    gck_flush(cp, 0, &c);
    gck_checkpoint_find(c, "a", &v);
    assert_true(((const double *)v.values)[0] == 0.5 && gck_checkpoint_global_norm(c) == 0.5);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);

    /* values whose squares overflow: norms stay finite */
    cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 2);
    const double big[2] = {3e200, 4e200}, big2[1] = {1e300};
    gck_accumulate_f64(cp, "a", big, 2, 0);
    gck_accumulate_f64(cp, "b", big2, 1, 0);
    gck_flush(cp, 0, &c);
    gck_checkpoint_find(c, "a", &v);
    assert_true(fabs(v.norm / 5e200 - 1.0) < 1e-15);
    assert_true(isfinite(gck_checkpoint_global_norm(c)));
    assert_true(fabs(gck_checkpoint_global_norm(c) / 1e300 - 1.0) < 1e-15);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

static void test_nonfinite(void **state)
{
    (void)state;
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.error_if_nonfinite = 1;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    const double ok[2] = {1, 2}, bad[2] = {NAN, 1};
    gck_accumulate_f64(cp, "a", ok, 2, 0);
    assert_int_equal(gck_accumulate_f64(cp, "b", bad, 2, 0), GCK_OK); /* accepted, judged at flush */
    gck_checkpoint *c = (gck_checkpoint *)0x3;
    assert_int_equal(gck_flush(cp, 0, &c), GCK_ERR_NONFINITE);
    assert_ptr_equal(c, (gck_checkpoint *)0x3);
    assert_non_null(strstr(gck_last_error(), "NaN"));
    assert_int_equal(gck_pending_count(cp), 2); /* pending kept */
    assert_null(gck_latest_checkpoint(cp));
    assert_int_equal(gck_checkpointer_discard_pending(cp), GCK_OK);
    assert_int_equal(gck_pending_count(cp), 0);
    assert_int_equal(gck_global_step(cp), 2); /* unchanged by discard */
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_ERR_NO_ACCUMULATED_GRADIENTS);
    const double inf[1] = {INFINITY};
    gck_accumulate_f64(cp, "a", inf, 1, 0);
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_ERR_NONFINITE);
    assert_non_null(strstr(gck_last_error(), "infinite"));
    assert_int_equal(gck_checkpointer_discard_pending(NULL), GCK_ERR_INVALID_ARGUMENT);
    gck_checkpointer_destroy(cp);
    /* without the flag, a NaN flushes */
    cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 2);
    gck_accumulate_f64(cp, "b", bad, 2, 0);
    assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
    assert_true(isnan(gck_checkpoint_global_norm(c)));
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F64, 2);
    const double x[1] = {1};
    assert_int_equal(gck_accumulate_f64(NULL, "a", x, 1, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_accumulate_f64(cp, NULL, x, 1, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_accumulate_f64(cp, "a", NULL, 1, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_accumulate_f64(cp, "", x, 1, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "empty"));
    char *longid = malloc(GCK_LAYER_ID_MAX + 2);
    memset(longid, 'x', GCK_LAYER_ID_MAX + 1);
    longid[GCK_LAYER_ID_MAX + 1] = '\0';
    assert_int_equal(gck_accumulate_f64(cp, longid, x, 1, 0), GCK_ERR_INVALID_ARGUMENT);
    longid[GCK_LAYER_ID_MAX] = '\0'; /* exactly the limit: fine */
    assert_int_equal(gck_accumulate_f64(cp, longid, x, 1, 0), GCK_OK);
    free(longid);
    assert_int_equal(gck_accumulate_f64(cp, "empty", NULL, 0, 0), GCK_OK); /* NULL with n = 0 */
    assert_int_equal(gck_global_step(cp), 2);
    assert_int_equal(gck_flush(NULL, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_OK);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_find(gck_latest_checkpoint(cp), "empty", &v), GCK_OK);
    assert_int_equal(v.n, 0);
    assert_true(v.norm == 0.0);
    assert_int_equal(gck_global_step(NULL), 0);
    assert_int_equal(gck_pending_count(NULL), 0);
    assert_null(gck_latest_checkpoint(NULL));
    gck_checkpointer_destroy(cp);
}

/* Every allocation failure of accumulate and flush leaves the checkpointer
 * exactly as it was: the same inputs then flush to the same checkpoint. */
static void test_allocation_failures_change_nothing(void **state)
{
    (void)state;
    double x[300];
    for (int i = 0; i < 300; i++)
        x[i] = i * 0.25 - 7;
    for (long k = 0; k < 64; k++) {
        gck_checkpointer *cp = make(GCK_ACCUM_MEAN, GCK_DTYPE_F64, 2);
        assert_int_equal(gck_accumulate_f64(cp, "keep", x, 300, 1), GCK_OK);
        gck_alloc_fail_after(k);
        gck_status s = gck_accumulate_f64(cp, "new", x, 100, 2);
        if (s == GCK_OK)
            s = gck_accumulate_f64(cp, "keep", x, 300, 3);
        if (s == GCK_OK)
            s = gck_flush(cp, 7, NULL);
        gck_alloc_fail_after(-1);
        if (s == GCK_OK) {
            assert_true(k > 0); /* the walk reached success: every failure point was seen */
            gck_checkpointer_destroy(cp);
            return;
        }
        assert_int_equal(s, GCK_ERR_NO_MEMORY);
        /* the one out-of-memory message, naming the layer or the call */
        const char *m = gck_last_error();
        if (strstr(m, "out of memory: ") == NULL ||
            (strstr(m, "'new'") == NULL && strstr(m, "'keep'") == NULL && strstr(m, "flush") == NULL))
            fail_msg("allocation %ld: '%s'", k, m);
        /* finish what failed and compare with a run that never failed */
        const char *names[2];
        const size_t np = gck_pending_layers(cp, names, 2);
        if (np == 1)
            assert_int_equal(gck_accumulate_f64(cp, "new", x, 100, 2), GCK_OK);
        if (gck_pending_count(cp) == 2)
            assert_int_equal(gck_accumulate_f64(cp, "keep", x, 300, 3), GCK_OK);
        assert_int_equal(gck_pending_count(cp), 3);
        assert_int_equal(gck_global_step(cp), 3);
        assert_null(gck_latest_checkpoint(cp));
        gck_checkpoint *got = NULL;
        assert_int_equal(gck_flush(cp, 7, &got), GCK_OK);
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_find(got, "keep", &v), GCK_OK);
        assert_true(((const double *)v.values)[299] == x[299]);
        assert_int_equal(gck_checkpoint_id(got), 0);
        gck_checkpoint_release(got);
        gck_checkpointer_destroy(cp);
    }
    fail_msg("allocation failure walk did not finish in 64 steps");
}

static void test_checksums(void **state)
{
    (void)state;
    const gck_checksum algos[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    const float a[3] = {1.5f, -2.0f, 0.25f}, b[2] = {3.0f, 4.0f};
    for (int k = 0; k < 3; k++) {
        gck_config cfg;
        gck_config_init(&cfg);
        cfg.dtype = GCK_DTYPE_F32;
        cfg.checksum = algos[k];
        gck_checkpointer *cp = NULL;
        assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
        gck_accumulate_f32(cp, "z", b, 2, 0);
        gck_accumulate_f32(cp, "a", a, 3, 0);
        gck_checkpoint *c = NULL;
        gck_flush(cp, 0, &c);
        /* the stream: layer "a" then "z", each value's little-endian bytes */
        unsigned char bytes[20];
        const float all[5] = {a[0], a[1], a[2], b[0], b[1]};
        for (int i = 0; i < 5; i++) {
            uint32_t u;
            memcpy(&u, &all[i], 4);
            for (int j = 0; j < 4; j++)
                bytes[4 * i + j] = (unsigned char)(u >> (8 * j));
        }
        const uint64_t want = k == 0 ? gck_fnv1a64(bytes, 20, GCK_FNV1A64_INIT)
                                     : k == 1 ? XXH3_64bits(bytes, 20) : 0;
        assert_true(gck_checkpoint_checksum(c) == want);
        assert_int_equal(gck_checkpoint_checksum_algo(c), algos[k]);
        assert_true(gck_checkpoint_compute_checksum(c, algos[k]) == want);
        assert_int_equal(gck_checkpoint_compressed_size(c), 20); /* 5 values <= threshold */
        gck_checkpoint_release(c);
        gck_checkpointer_destroy(cp);
    }
    /* compressed size past the threshold: bytes * 0.6 */
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.compression_threshold = 4;
    gck_checkpointer *cp = NULL;
    gck_checkpointer_create(&cfg, &cp);
    const double x[5] = {1, 2, 3, 4, 5};
    gck_accumulate_f64(cp, "x", x, 5, 0);
    gck_flush(cp, 0, NULL);
    assert_int_equal(gck_checkpoint_compressed_size(gck_latest_checkpoint(cp)), 24); /* (size_t)(40 * 0.6) */
    gck_checkpointer_destroy(cp);
}

/* bf16 / f16 inputs give exactly what their widened f32 tensors give: for
 * every mode and storage, through the single and the list calls, with
 * clipping, over three flush windows. */
static void test_half_inputs_match_widened(void **state)
{
    (void)state;
    static const double weights[] = {0.5, 2.0, 1.0 / 3.0};
    enum { NL = 3, NB = 3, N = 1037 };
    static const size_t lens[NL] = {N, 5, 130};
    const char *ids[NL] = {"w1", "b1", "w2"};
    uint16_t *h[NL];
    float *f[NL];
    for (size_t i = 0; i < NL; i++)
        h[i] = gck_test_alloc(N * 2), f[i] = gck_test_alloc(N * 4);
    for (int half = 0; half < 2; half++)
        for (int mode = GCK_ACCUM_SUM; mode <= GCK_ACCUM_WEIGHTED_MEAN; mode++)
            for (int dt = 0; dt < 2; dt++)
                for (int many = 0; many < 2; many++)
                for (int tree = 0; tree < 2; tree++) { /* either reduction order: half inputs widened alike */
                    gck_config cfg;
                    gck_config_init(&cfg);
                    cfg.reduction = tree ? GCK_REDUCE_TREE : GCK_REDUCE_SEQUENTIAL;
                    cfg.accumulation_mode = (gck_accum_mode)mode;
                    cfg.weights = weights;
                    cfg.n_weights = 3;
                    cfg.dtype = dt ? GCK_DTYPE_F32 : GCK_DTYPE_F64;
                    cfg.clip_enabled = 1;
                    cfg.clip_norm = 3.0;
                    gck_checkpointer *a = NULL, *b = NULL;
                    assert_int_equal(gck_checkpointer_create(&cfg, &a), GCK_OK);
                    assert_int_equal(gck_checkpointer_create(&cfg, &b), GCK_OK);
                    uint64_t seed = 1234 + (uint64_t)(half * 8 + mode * 2 + dt);
                    for (int w = 0; w < 3; w++) {
                        for (int mb = 0; mb < NB; mb++) {
                            for (size_t i = 0; i < NL; i++) {
                                for (size_t k = 0; k < lens[i]; k++) {
                                    /* finite values of both formats, denormals included */
                                    uint16_t v = (uint16_t)(gck_test_rand(&seed) >> 48) & (half ? 0xbfff : 0xbf7f);
                                    h[i][k] = v;
                                }
                                (half ? gck_convert_f16_to_f32 : gck_convert_bf16_to_f32)(f[i], h[i], lens[i]);
                            }
                            if (many) {
                                const uint16_t *const hv[NL] = {h[0], h[1], h[2]};
                                assert_int_equal((half ? gck_accumulate_many_f16 : gck_accumulate_many_bf16)(
                                                     a, ids, hv, lens, NL, (uint64_t)mb),
                                                 GCK_OK);
                            } else {
                                for (size_t i = 0; i < NL; i++)
                                    assert_int_equal((half ? gck_accumulate_f16 : gck_accumulate_bf16)(
                                                         a, ids[i], h[i], lens[i], (uint64_t)mb),
                                                     GCK_OK);
                            }
                            for (size_t i = 0; i < NL; i++)
                                assert_int_equal(gck_accumulate_f32(b, ids[i], f[i], lens[i], (uint64_t)mb), GCK_OK);
                        }
                        gck_checkpoint *ca = NULL, *cb = NULL;
                        assert_int_equal(gck_flush(a, 7, &ca), GCK_OK);
                        assert_int_equal(gck_flush(b, 7, &cb), GCK_OK);
                        assert_int_equal(gck_checkpoint_checksum(ca), gck_checkpoint_checksum(cb));
                        assert_true(gck_checkpoint_global_norm(ca) == gck_checkpoint_global_norm(cb));
                        for (size_t i = 0; i < NL; i++) {
                            gck_tensor_view va, vb;
                            assert_int_equal(gck_checkpoint_layer(ca, i, &va), GCK_OK);
                            assert_int_equal(gck_checkpoint_layer(cb, i, &vb), GCK_OK);
                            assert_int_equal(va.n, vb.n);
                            assert_memory_equal(va.values, vb.values, va.n * gck_dtype_size(va.dtype));
                        }
                        gck_checkpoint_release(ca), gck_checkpoint_release(cb);
                    }
                    gck_checkpointer_destroy(a), gck_checkpointer_destroy(b);
                }
    for (size_t i = 0; i < NL; i++)
        free(h[i]), free(f[i]);
}

/* Their errors are gck_accumulate_f32's, and change nothing. */
static void test_half_input_errors(void **state)
{
    (void)state;
    gck_checkpointer *cp = make(GCK_ACCUM_SUM, GCK_DTYPE_F32, 2);
    const uint16_t v[3] = {0x3f80, 0x4000, 0xbf80};
    assert_int_equal(gck_accumulate_bf16(cp, "x", v, 3, 1), GCK_OK);
    assert_int_equal(gck_accumulate_bf16(cp, "x", NULL, 3, 2), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "values is NULL"));
    assert_int_equal(gck_accumulate_f16(cp, "x", v, 2, 2), GCK_ERR_DIMENSION_MISMATCH);
    assert_non_null(strstr(gck_last_error(), "layer 'x': expected 3, got 2"));
    assert_int_equal(gck_accumulate_bf16(NULL, "x", v, 3, 2), GCK_ERR_INVALID_ARGUMENT);
    const char *ids[2] = {"y", ""};
    const uint16_t *vals[2] = {v, v};
    const size_t lens[2] = {3, 3};
    assert_int_equal(gck_accumulate_many_f16(cp, ids, vals, lens, 2, 2), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "entry 1"));
    assert_int_equal(gck_global_step(cp), 1);
    assert_int_equal(gck_pending_layers(cp, NULL, 0), 1);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
    gck_tensor_view t;
    assert_int_equal(gck_checkpoint_layer(c, 0, &t), GCK_OK);
    assert_int_equal(t.n, 3);
    assert_true(((const float *)t.values)[0] == 1.0f && ((const float *)t.values)[1] == 2.0f &&
                ((const float *)t.values)[2] == -1.0f);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}


/* ---- BF16 storage -------------------------------------------------------------- */

/* A BF16 checkpointer fed f64, f32, bf16 and f16 tensors (mean of 2 for
 * "w", weighted nothing), clipping at clip (0: off). */
static gck_checkpointer *bf16_make(double clip, int nonfinite)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.dtype = GCK_DTYPE_BF16;
    cfg.accumulation_mode = GCK_ACCUM_MEAN;
    cfg.max_checkpoints = 2;
    cfg.clip_enabled = clip > 0, cfg.clip_norm = clip > 0 ? clip : 1.0;
    cfg.error_if_nonfinite = nonfinite;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    return cp;
}

static const double g_b64[3] = {1.0 + 0x1p-30, -3.0, 1e-3};
static const float g_w32[5] = {0.1f, -2.5f, 3.0f, 1e30f, -0.0f};
static const uint16_t g_w16[5] = {0x3f80, 0xc000, 0x0001, 0x4000, 0x8000}; /* bf16: 1, -2, tiny, 2, -0 */
static const uint16_t g_h16[2] = {0x3c00, 0xbc00};                          /* f16: 1, -1 */

static void bf16_feed(gck_checkpointer *cp)
{
    assert_int_equal(gck_accumulate_f64(cp, "b", g_b64, 3, 1), GCK_OK);
    assert_int_equal(gck_accumulate_f32(cp, "w", g_w32, 5, 1), GCK_OK);
    assert_int_equal(gck_accumulate_bf16(cp, "w", g_w16, 5, 2), GCK_OK);
    assert_int_equal(gck_accumulate_f16(cp, "h", g_h16, 2, 2), GCK_OK);
}

static uint16_t bf16_of(float x)
{
    uint16_t r;
    gck_convert_f32_to_bf16(&r, &x, 1);
    return r;
}

/* The values, checksum (little-endian bytes of the bf16 bits), accessors,
 * norms, save and load, diff and flush_into of BF16 storage. */
static void test_bf16_storage(void **state)
{
    (void)state;
    gck_checkpointer *cp = bf16_make(0, 0);
    bf16_feed(cp);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 5, &c), GCK_OK);
    assert_int_equal(gck_checkpoint_dtype(c), GCK_DTYPE_BF16);
    /* f32 finished values: f64 inputs rounded to float on arrival, bf16/f16 widened, mean in f32 */
    uint16_t want_b[3], want_h[2], want_w[5];
    for (int i = 0; i < 3; i++)
        want_b[i] = bf16_of((float)g_b64[i]);
    float hw[2], ww[5];
    gck_convert_f16_to_f32(hw, g_h16, 2);
    gck_convert_bf16_to_f32(ww, g_w16, 5);
    for (int i = 0; i < 2; i++)
        want_h[i] = bf16_of(hw[i]);
    for (int i = 0; i < 5; i++)
        want_w[i] = bf16_of(((0.0f + g_w32[i]) + ww[i]) / 2.0f); /* the first term is 0 + t */
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_find(c, "b", &v), GCK_OK);
    assert_int_equal(v.dtype, GCK_DTYPE_BF16);
    assert_memory_equal(v.values, want_b, sizeof want_b);
    gck_assert_same_f64(sqrt(gck_sumsq_bf16(want_b, 3)), v.norm, "layer b norm");
    assert_int_equal(gck_checkpoint_find(c, "h", &v), GCK_OK);
    assert_memory_equal(v.values, want_h, sizeof want_h);
    assert_int_equal(gck_checkpoint_find(c, "w", &v), GCK_OK);
    assert_memory_equal(v.values, want_w, sizeof want_w);
    assert_int_equal(gck_checkpoint_num_values(c), 10);
    assert_int_equal(gck_checkpoint_compressed_size(c), 20); /* 2 bytes a value */
    /* the checksum covers the stored bits, little-endian, layers in id order */
    unsigned char bytes[20];
    const uint16_t *all[3] = {want_b, want_h, want_w};
    const int lens[3] = {3, 2, 5};
    for (int l = 0, at = 0; l < 3; l++)
        for (int i = 0; i < lens[l]; i++, at += 2)
            bytes[at] = (unsigned char)(all[l][i] & 0xff), bytes[at + 1] = (unsigned char)(all[l][i] >> 8);
    assert_true(gck_checkpoint_checksum(c) == gck_fnv1a64(bytes, 20, GCK_FNV1A64_INIT));
    assert_true(gck_checkpoint_compute_checksum(c, GCK_CHECKSUM_XXH3_64) == XXH3_64bits(bytes, 20));
    /* not clipped: the pre-clip norm is the stored values' norm */
    gck_assert_same_f64(gck_checkpoint_global_norm(c), gck_checkpoint_norm_before_clip(c), "norms");
    assert_true(gck_checkpoint_clip_coef(c) == 1.0);

    /* save and load: a BF16 safetensors file, the same checkpoint back */
    char dir[] = "/tmp/gck_bf16_XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/c.safetensors", dir);
    assert_int_equal(gck_checkpoint_save(c, path), GCK_OK);
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_load(path, &s), GCK_OK);
    gck_tensor_info ti;
    assert_int_equal(gck_snapshot_find_tensor(s, "w", &ti), GCK_OK);
    assert_int_equal(ti.dtype, GCK_DTYPE_BF16);
    assert_int_equal(ti.nbytes, 10);
    gck_snapshot_destroy(s);
    gck_checkpoint *l = NULL;
    assert_int_equal(gck_checkpoint_load(path, &l), GCK_OK);
    assert_int_equal(gck_checkpoint_dtype(l), GCK_DTYPE_BF16);
    assert_true(gck_checkpoint_checksum(l) == gck_checkpoint_checksum(c));
    gck_assert_same_f64(gck_checkpoint_global_norm(c), gck_checkpoint_global_norm(l), "loaded norm");
    gck_tensor_view lv;
    assert_int_equal(gck_checkpoint_find(l, "w", &lv), GCK_OK);
    assert_memory_equal(lv.values, want_w, sizeof want_w);
    remove(path);
    rmdir(dir);

    /* diff: bf16 against bf16 (itself: 0) and against an F32 checkpoint (widened) */
    gck_layer_distance *d = NULL;
    size_t nd = 0;
    assert_int_equal(gck_checkpoint_diff(c, l, &d, &nd), GCK_OK);
    assert_int_equal(nd, 3);
    for (size_t i = 0; i < nd; i++)
        assert_true(d[i].distance == 0.0);
    gck_free(d);
    gck_checkpointer *f32 = make(GCK_ACCUM_SUM, GCK_DTYPE_F32, 1);
    const float wf[4] = {1.0f, 1.0f, 1.0f, 1.0f};
    assert_int_equal(gck_accumulate_f32(f32, "w", wf, 4, 0), GCK_OK); /* shorter than c's "w" */
    assert_int_equal(gck_flush(f32, 0, NULL), GCK_OK);
    assert_int_equal(gck_checkpoint_diff(c, gck_latest_checkpoint(f32), &d, &nd), GCK_OK);
    assert_int_equal(nd, 3);
    double d2 = 0.0;
    for (int i = 0; i < 5; i++) {
        float x;
        gck_convert_bf16_to_f32(&x, &want_w[i], 1);
        const double e = (double)x - (i < 4 ? 1.0 : 0.0);
        d2 += e * e;
    }
    assert_string_equal(d[2].layer_id, "w");
    assert_true(fabs(d[2].distance - sqrt(d2)) <= 1e-12 * sqrt(d2));
    gck_free(d);
    gck_checkpointer_destroy(f32);
    gck_checkpoint_release(l);

    /* flush_into: bf16 buffers receive the same bits, and are the only dtype taken */
    bf16_feed(cp);
    uint16_t ob[3], oh[2], ow[5];
    void *data[3] = {ob, oh, ow};
    size_t lens_z[3] = {3, 2, 5};
    gck_flush_dst dst = {.tensors = {.count = 3, .data = data, .lens = lens_z, .dtype = GCK_DTYPE_F32}};
    assert_int_equal(gck_flush_into(cp, 6, &dst, NULL, NULL), GCK_ERR_UNSUPPORTED);
    assert_non_null(strstr(gck_last_error(), "stores BF16"));
    dst.tensors.dtype = GCK_DTYPE_BF16;
    gck_checkpoint *c2 = NULL;
    gck_clip_info info;
    assert_int_equal(gck_flush_into(cp, 6, &dst, &info, &c2), GCK_OK);
    assert_memory_equal(ob, want_b, sizeof ob);
    assert_memory_equal(oh, want_h, sizeof oh);
    assert_memory_equal(ow, want_w, sizeof ow);
    assert_true(gck_checkpoint_checksum(c2) == gck_checkpoint_checksum(c));
    gck_assert_same_f64(gck_checkpoint_global_norm(c), info.total_norm, "flush_into norm");
    assert_int_equal(gck_checkpoint_id(c2), 1);
    assert_int_equal(gck_checkpoint_step(c2), 8);
    bf16_feed(cp);
    assert_int_equal(gck_flush_into(cp, 7, &dst, NULL, NULL), GCK_OK); /* nothing recorded */
    assert_int_equal(gck_checkpoint_id(gck_latest_checkpoint(cp)), 1);
    gck_checkpoint_release(c2);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

/* Clipping is decided on the norm of the rounded values; the clipped f32
 * values are rounded once; every recorded norm is one of bf16 values. */
static void test_bf16_clipping_and_nonfinite(void **state)
{
    (void)state;
    gck_checkpointer *cp = bf16_make(0.5, 0);
    const float x[3] = {3.0f, 4.00390625f, 0.3f}; /* 4.0039 is not a bf16: rounds to 4 */
    assert_int_equal(gck_accumulate_f32(cp, "a", x, 3, 0), GCK_OK);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
    uint16_t r[3];
    gck_convert_f32_to_bf16(r, x, 3);
    const double pre = sqrt(gck_sumsq_bf16(r, 3));
    gck_assert_same_f64(pre, gck_checkpoint_norm_before_clip(c), "pre-clip norm of the rounded values");
    const double s = 0.5 / pre;
    gck_assert_same_f64(s, gck_checkpoint_clip_coef(c), "clip coef");
    float y[3];
    for (int i = 0; i < 3; i++)
        y[i] = x[i] * (float)s;
    gck_convert_f32_to_bf16(r, y, 3);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_find(c, "a", &v), GCK_OK);
    assert_memory_equal(v.values, r, sizeof r);
    gck_assert_same_f64(sqrt(gck_sumsq_bf16(r, 3)), gck_checkpoint_global_norm(c), "stored norm");
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);

    /* error_if_nonfinite: flush and flush_into fail, the pending state and dst stay */
    cp = bf16_make(0, 1);
    const float bad[2] = {1.0f, INFINITY};
    assert_int_equal(gck_accumulate_f32(cp, "a", bad, 2, 0), GCK_OK);
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_ERR_NONFINITE);
    uint16_t out[2] = {0x1234, 0x5678};
    void *data[1] = {out};
    size_t n[1] = {2};
    const gck_flush_dst dst = {.tensors = {.count = 1, .data = data, .lens = n, .dtype = GCK_DTYPE_BF16}};
    gck_clip_info info;
    assert_int_equal(gck_flush_into(cp, 0, &dst, &info, NULL), GCK_ERR_NONFINITE);
    assert_true(isinf(info.total_norm));
    assert_true(out[0] == 0x1234 && out[1] == 0x5678);
    assert_int_equal(gck_pending_count(cp), 1);
    assert_int_equal(gck_checkpointer_discard_pending(cp), GCK_OK);
    gck_checkpointer_destroy(cp);
}

/* Every allocation failure of a BF16 flush and flush_into (its staging copy
 * included) changes nothing: after it, the same flush gives what a flush
 * that never failed gives. */
static void test_bf16_allocation_failures(void **state)
{
    (void)state;
    gck_checkpointer *ref = bf16_make(0.75, 0);
    bf16_feed(ref);
    gck_checkpoint *want = NULL;
    assert_int_equal(gck_flush(ref, 3, &want), GCK_OK);
    for (int into = 0; into < 2; into++) {
        int done = 0;
        for (long k = 0; k < 64 && !done; k++) {
            gck_checkpointer *cp = bf16_make(0.75, 0);
            bf16_feed(cp);
            uint16_t ob[3] = {7, 7, 7}, oh[2] = {7, 7}, ow[5] = {7, 7, 7, 7, 7};
            void *data[3] = {ob, oh, ow};
            size_t lens[3] = {3, 2, 5};
            const gck_flush_dst dst = {.tensors = {.count = 3, .data = data, .lens = lens, .dtype = GCK_DTYPE_BF16}};
            gck_checkpoint *got = NULL;
            gck_alloc_fail_after(k);
            gck_status s = into ? gck_flush_into(cp, 3, &dst, NULL, &got) : gck_flush(cp, 3, &got);
            gck_alloc_fail_after(-1);
            if (s == GCK_OK) {
                assert_true(k > 0);
                done = 1;
            } else {
                assert_int_equal(s, GCK_ERR_NO_MEMORY);
                const char *m = gck_last_error();
                if (strstr(m, "out of memory: ") == NULL || strstr(m, into ? "gck_flush_into" : "flush") == NULL)
                    fail_msg("allocation %ld: '%s'", k, m);
                assert_null(got);
                assert_int_equal(gck_pending_count(cp), 4);
                assert_null(gck_latest_checkpoint(cp));
                assert_int_equal(ow[0], 7);
                s = into ? gck_flush_into(cp, 3, &dst, NULL, &got) : gck_flush(cp, 3, &got);
                assert_int_equal(s, GCK_OK);
            }
            assert_true(gck_checkpoint_checksum(got) == gck_checkpoint_checksum(want));
            gck_assert_same_f64(gck_checkpoint_norm_before_clip(want), gck_checkpoint_norm_before_clip(got), "pre");
            gck_assert_same_f64(gck_checkpoint_global_norm(want), gck_checkpoint_global_norm(got), "norm");
            assert_true(gck_checkpoint_clip_coef(got) < 1.0); /* the case clips */
            gck_checkpoint_release(got);
            gck_checkpointer_destroy(cp);
        }
        assert_true(done);
    }
    gck_checkpoint_release(want);
    gck_checkpointer_destroy(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults_and_errors),
        cmocka_unit_test(test_accumulate_and_steps),
        cmocka_unit_test(test_flush_empty_and_history),
        cmocka_unit_test(test_modes),
        cmocka_unit_test(test_replay_order_bytewise),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_clipping_and_norms),
        cmocka_unit_test(test_nonfinite),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_allocation_failures_change_nothing),
        cmocka_unit_test(test_checksums),
        cmocka_unit_test(test_half_inputs_match_widened),
        cmocka_unit_test(test_half_input_errors),
        cmocka_unit_test(test_bf16_storage),
        cmocka_unit_test(test_bf16_clipping_and_nonfinite),
        cmocka_unit_test(test_bf16_allocation_failures),
    };
    return cmocka_run_group_tests_name("checkpointer", tests, NULL, NULL);
}
