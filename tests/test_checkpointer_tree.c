/* tests/test_checkpointer_tree.c - GCK_REDUCE_TREE beyond the reference test: list calls with repeats, allocation
 * failures, and the external-reduction hooks (gradckpt/reduction.h) that libgradckpt_mpi builds on. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#include "alloc_internal.h"
#include "support/gck_same_checkpoint.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

static gck_checkpointer *make_tree(gck_accum_mode mode, gck_dtype dt, const double *w, size_t nw, int nonfinite)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.accumulation_mode = mode;
    cfg.dtype = dt;
    cfg.weights = w;
    cfg.n_weights = nw;
    cfg.error_if_nonfinite = nonfinite;
    cfg.reduction = GCK_REDUCE_TREE;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    return cp;
}

static void test_config(void **state)
{
    (void)state;
    gck_config cfg;
    gck_config_init(&cfg);
    assert_int_equal(cfg.reduction, GCK_REDUCE_SEQUENTIAL);
    cfg.reduction = (gck_reduction)7;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "reduction"));
    assert_null(cp);
    cfg.reduction = GCK_REDUCE_TREE;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    assert_int_equal(gck_checkpointer_config(cp)->reduction, GCK_REDUCE_TREE);
    assert_null(gck_checkpointer_config(NULL));
    gck_checkpointer_destroy(cp);
}

/* One list call naming a layer many times equals separate calls, and the
 * tree differs from the left fold (so the test can tell them apart). */
static void test_list_repeats_equal_separate_calls(void **state)
{
    (void)state;
    const double w[] = {0.5, 3.0, -1.25, 0.1, 7.0, 1.0 / 3.0, 2.0, 0.3, 1e-3, 5.0, 0.7};
    enum { NA = 11, NB = 3 };
    const size_t na = GCK_PARALLEL_MIN + 45, nb = 37;
    float *ta[NA], *tb[NB];
    for (int j = 0; j < NA; j++) {
        ta[j] = malloc(na * sizeof(float));
        gck_test_fill_f32(ta[j], na, GCK_K_ILL_SCALED, 100 + (uint64_t)j);
    }
    for (int j = 0; j < NB; j++) {
        tb[j] = malloc(nb * sizeof(float));
        gck_test_fill_f32(tb[j], nb, GCK_K_UNIFORM, 200 + (uint64_t)j);
    }
    for (int dt = 0; dt < 2; dt++) {
        const gck_dtype d = dt ? GCK_DTYPE_F32 : GCK_DTYPE_F64;
        gck_checkpointer *one = make_tree(GCK_ACCUM_WEIGHTED_MEAN, d, w, NA, 0);
        gck_checkpointer *sep = make_tree(GCK_ACCUM_WEIGHTED_MEAN, d, w, NA, 0);
        const char *ids[NA + NB];
        const float *vals[NA + NB];
        size_t lens[NA + NB], cnt = 0;
        for (int j = 0; j < NA; j++) {
            ids[cnt] = "a", vals[cnt] = ta[j], lens[cnt] = na, cnt++;
            if (j < NB)
                ids[cnt] = "b", vals[cnt] = tb[j], lens[cnt] = nb, cnt++;
        }
#if GCK_HAVE_OPENMP
        omp_set_num_threads(2);
#endif
        assert_int_equal(gck_accumulate_many_f32(one, ids, vals, lens, cnt, 9), GCK_OK);
        for (size_t i = 0; i < cnt; i++)
            assert_int_equal(gck_accumulate_f32(sep, ids[i], vals[i], lens[i], 9), GCK_OK);
        assert_int_equal(gck_global_step(one), cnt);
        gck_checkpoint *c1 = NULL, *c2 = NULL;
        assert_int_equal(gck_flush(one, 1, &c1), GCK_OK);
        assert_int_equal(gck_flush(sep, 1, &c2), GCK_OK);
        gck_assert_same_checkpoint(c1, c2);

        gck_config cfg = *gck_checkpointer_config(one);
        cfg.reduction = GCK_REDUCE_SEQUENTIAL;
        gck_checkpointer *seq = NULL;
        assert_int_equal(gck_checkpointer_create(&cfg, &seq), GCK_OK);
        assert_int_equal(gck_accumulate_many_f32(seq, ids, vals, lens, cnt, 9), GCK_OK);
        gck_checkpoint *c3 = NULL;
        assert_int_equal(gck_flush(seq, 1, &c3), GCK_OK);
        assert_true(gck_checkpoint_checksum(c1) != gck_checkpoint_checksum(c3));
        gck_checkpoint_release(c1), gck_checkpoint_release(c2), gck_checkpoint_release(c3);
        gck_checkpointer_destroy(one), gck_checkpointer_destroy(sep), gck_checkpointer_destroy(seq);
    }
    for (int j = 0; j < NA; j++)
        free(ta[j]);
    for (int j = 0; j < NB; j++)
        free(tb[j]);
}

/* Runs the steps of the walk below from step `from`; returns the first failure. */
static gck_status tree_steps(gck_checkpointer *cp, const double *x, int from, gck_checkpoint **out)
{
    const char *ids[3] = {"a", "new", "a"};
    const double *vals[3] = {x, x + 1, x + 2};
    const size_t lens[3] = {300, 100, 300};
    gck_status s = GCK_OK;
    for (int step = from; step < 6 && s == GCK_OK; step++) {
        if (step < 5)
            s = gck_accumulate_f64(cp, "a", x + step, 300, (uint64_t)step); /* levels grow at j = 2, 6 */
        else
            s = gck_accumulate_many_f64(cp, ids, vals, lens, 3, 5);
    }
    return s == GCK_OK ? gck_flush(cp, 3, out) : s; /* count 7: a fold into a fresh buffer */
}

/* Every allocation of tree accumulation and folding fails once in turn:
 * the failing call changes nothing, and finishing the work gives the bits
 * of a run that never failed. */
static void test_allocation_failures_change_nothing(void **state)
{
    (void)state;
    double x[310];
    for (int i = 0; i < 310; i++)
        x[i] = 0.37 * i - 11.0;
    gck_checkpointer *ref = make_tree(GCK_ACCUM_MEAN, GCK_DTYPE_F64, NULL, 0, 0);
    gck_checkpoint *want = NULL;
    assert_int_equal(tree_steps(ref, x, 0, &want), GCK_OK);
    for (long k = 0; k < 64; k++) {
        gck_checkpointer *cp = make_tree(GCK_ACCUM_MEAN, GCK_DTYPE_F64, NULL, 0, 0);
        int done = 0;
        gck_status s = GCK_OK;
        gck_alloc_fail_after(k);
        for (; done < 6 && s == GCK_OK; done++)
            s = done < 5 ? gck_accumulate_f64(cp, "a", x + done, 300, (uint64_t)done) : GCK_OK;
        gck_checkpoint *got = NULL;
        if (s == GCK_OK)
            s = tree_steps(cp, x, 5, &got);
        gck_alloc_fail_after(-1);
        if (s == GCK_OK) {
            assert_true(k > 2); /* the walk reached success: every failure point was seen */
            gck_assert_same_checkpoint(got, want);
            gck_checkpoint_release(got);
            gck_checkpointer_destroy(cp);
            break;
        }
        assert_int_equal(s, GCK_ERR_NO_MEMORY);
        assert_true(strlen(gck_last_error()) > 0);
        assert_null(got);
        assert_null(gck_latest_checkpoint(cp));
        /* the failed step left nothing behind: redo it and the rest (8
         * pending: only the flush failed) */
        const size_t pending = gck_pending_count(cp);
        assert_true(pending <= 5 || pending == 8);
        const int failed_at = pending == 8 ? 6 : (int)pending;
        assert_int_equal(tree_steps(cp, x, failed_at, &got), GCK_OK);
        gck_assert_same_checkpoint(got, want);
        gck_checkpoint_release(got);
        gck_checkpointer_destroy(cp);
    }
    gck_checkpoint_release(want);
    gck_checkpointer_destroy(ref);
}

/* Two checkpointers holding the aligned blocks [0, 4) and [4, 8) of a
 * window, their sums added and finished by gck_flush_reduced, give the bits
 * of one checkpointer holding all eight; the weight sum likewise. */
static void test_reduced_equals_one_process(void **state)
{
    (void)state;
    const double w[8] = {0.5, 3.0, -1.25, 0.1, 7.0, 1.0 / 3.0, 2.0, 0.3};
    const size_t n = 1000;
    double *t[8];
    for (int j = 0; j < 8; j++) {
        t[j] = malloc(n * sizeof(double));
        gck_test_fill_f64(t[j], n, GCK_K_ILL_SCALED, 7 + (uint64_t)j);
    }
    for (int mode = 0; mode < 3; mode++) {
        gck_checkpointer *all = make_tree((gck_accum_mode)mode, GCK_DTYPE_F64, w, 8, 0);
        gck_checkpointer *lo = make_tree((gck_accum_mode)mode, GCK_DTYPE_F64, w, 4, 0);
        gck_checkpointer *hi = make_tree((gck_accum_mode)mode, GCK_DTYPE_F64, w + 4, 4, 0);
        for (int j = 0; j < 8; j++) {
            assert_int_equal(gck_accumulate_f64(all, "L", t[j], n, 40 + (uint64_t)j), GCK_OK);
            assert_int_equal(gck_accumulate_f64(j < 4 ? lo : hi, "L", t[j], n, 40 + (uint64_t)j), GCK_OK);
        }
        gck_pending_sum a, b;
        assert_int_equal(gck_pending_sum_get(lo, 0, &a), GCK_OK);
        assert_int_equal(gck_pending_sum_get(hi, 0, &b), GCK_OK);
        assert_string_equal(a.layer_id, "L");
        assert_int_equal(a.n, n);
        assert_int_equal(a.count, 4);
        assert_int_equal(b.step, 47);
        double *sum = malloc(n * sizeof *sum);
        memcpy(sum, a.data, n * sizeof *sum);
        gck_add_f64(sum, b.data, n);
        const gck_reduced_layer r = {.data = sum, .count = 8, .wsum = a.wsum + b.wsum, .step = b.step};
        gck_checkpoint *got = NULL, *want = NULL;
        assert_int_equal(gck_flush_reduced(lo, 5, 8, &r, &got), GCK_OK);
        assert_int_equal(gck_flush(all, 5, &want), GCK_OK);
        gck_assert_same_checkpoint(got, want);
        assert_int_equal(gck_checkpoint_step(got), 8);
        assert_int_equal(gck_global_step(lo), 4);
        assert_int_equal(gck_flush_count(lo), 1);
        assert_int_equal(gck_pending_count(lo), 0);
        free(sum);
        gck_checkpoint_release(got), gck_checkpoint_release(want);
        gck_checkpointer_destroy(all), gck_checkpointer_destroy(lo), gck_checkpointer_destroy(hi);
    }
    for (int j = 0; j < 8; j++)
        free(t[j]);
}

static void test_reduced_errors_change_nothing(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4};
    gck_checkpointer *cp = make_tree(GCK_ACCUM_SUM, GCK_DTYPE_F64, NULL, 0, 1);
    gck_pending_sum ps;
    gck_reduced_layer r = {.data = NULL, .count = 1};
    assert_int_equal(gck_pending_sum_get(NULL, 0, &ps), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_pending_sum_get(cp, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_pending_sum_get(cp, 0, &ps), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "past"));
    assert_int_equal(gck_flush_reduced(NULL, 0, 0, &r, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_reduced(cp, 0, 0, &r, NULL), GCK_ERR_NO_ACCUMULATED_GRADIENTS);
    for (int j = 0; j < 3; j++)
        assert_int_equal(gck_accumulate_f64(cp, "L", x, 4, 1), GCK_OK);
    assert_int_equal(gck_flush_reduced(cp, 0, 0, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_reduced(cp, 0, 0, &r, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "data"));
    double bad[4] = {1, NAN, 3, 4};
    r.data = bad;
    assert_int_equal(gck_flush_reduced(cp, 0, 0, &r, NULL), GCK_ERR_NONFINITE);
    /* nothing changed: a fold of 3 tensors (two levels) */
    assert_int_equal(gck_pending_count(cp), 3);
    assert_int_equal(gck_flush_count(cp), 0);
    assert_int_equal(gck_pending_sum_get(cp, 0, &ps), GCK_OK);
    assert_int_equal(ps.count, 3);
    assert_true(((const double *)ps.data)[3] == 12.0);
    gck_alloc_fail_after(0); /* the fold buffer exists now: no allocation */
    gck_checkpoint *c = NULL;
    const gck_status s = gck_flush(cp, 0, &c);
    gck_alloc_fail_after(-1);
    if (s == GCK_OK) {
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_layer(c, 0, &v), GCK_OK);
        assert_true(((const double *)v.values)[0] == 3.0);
        gck_checkpoint_release(c);
    } else {
        assert_int_equal(s, GCK_ERR_NO_MEMORY);
    }
    gck_checkpointer_destroy(cp);
}

/* The kernels' pairwise combining of block sums (kernels.h), for pieces of one block each. */
static double pairwise_blocks(const double *b, size_t m)
{
    if (m == 1)
        return b[0];
    size_t h = 1;
    while (2 * h < m)
        h *= 2;
    return pairwise_blocks(b, h) + pairwise_blocks(b + h, m - h);
}

/* A window finished piece by piece into the staged checkpoint (pieces of one 8192-element
 * block, their sums of squares combined pairwise) records what gck_flush records: F32 and
 * F64, every mode, clipping off, firing and not, several windows in a row (the staged memory
 * recycled from the history). */
static void test_staged_equals_flush(void **state)
{
    (void)state;
    static const size_t lens[] = {7, 0, 8192, 40000, 1, 16385};
    enum { NL = sizeof lens / sizeof lens[0], K = 4 };
    const double w[K] = {0.5, 3.0, -1.25, 0.1};
    char ids[NL][8];
    double *t[NL][K];
    float *f[NL][K];
    for (size_t l = 0; l < NL; l++) {
        snprintf(ids[l], sizeof ids[l], "L%zu", l);
        for (int j = 0; j < K; j++) {
            t[l][j] = malloc((lens[l] ? lens[l] : 1) * sizeof(double));
            f[l][j] = malloc((lens[l] ? lens[l] : 1) * sizeof(float));
            gck_test_fill_f64(t[l][j], lens[l], GCK_K_UNIFORM, 100 * l + (uint64_t)j);
            gck_test_fill_f32(f[l][j], lens[l], GCK_K_UNIFORM, 200 * l + (uint64_t)j);
        }
    }
    double blk[8];
    for (int dt = 0; dt < 2; dt++)
        for (int mode = 0; mode < 3; mode++)
            for (int clip = 0; clip < 3; clip++) {
                gck_checkpointer *cp[2];
                for (int i = 0; i < 2; i++) {
                    gck_config cfg;
                    gck_config_init(&cfg);
                    cfg.accumulation_mode = (gck_accum_mode)mode;
                    cfg.dtype = dt ? GCK_DTYPE_F32 : GCK_DTYPE_F64;
                    cfg.weights = w, cfg.n_weights = K;
                    cfg.reduction = GCK_REDUCE_TREE;
                    cfg.max_checkpoints = 2;
                    cfg.clip_enabled = clip > 0;
                    cfg.clip_norm = clip == 1 ? 1e-3 : 1e9;
                    assert_int_equal(gck_checkpointer_create(&cfg, &cp[i]), GCK_OK);
                }
                for (int win = 0; win < 3; win++) {
                    for (int j = 0; j < K; j++)
                        for (size_t l = 0; l < NL; l++)
                            for (int i = 0; i < 2; i++)
                                assert_int_equal(dt ? gck_accumulate_f32(cp[i], ids[l], f[l][j], lens[l], 9)
                                                    : gck_accumulate_f64(cp[i], ids[l], t[l][j], lens[l], 9),
                                                 GCK_OK);
                    void *vals[NL];
                    gck_finished_layer fl[NL];
                    assert_int_equal(gck_flush_stage(cp[0], vals), GCK_OK);
                    for (size_t l = 0; l < NL; l++) {
                        gck_pending_sum ps;
                        assert_int_equal(gck_pending_sum_get(cp[0], l, &ps), GCK_OK);
                        const size_t esz = dt ? 4 : 8, nb = (ps.n + 8191) / 8192;
                        for (size_t b = 0; b < nb; b++) {
                            const size_t len = ps.n - b * 8192 < 8192 ? ps.n - b * 8192 : 8192;
                            blk[b] = gck_flush_finish_values(cp[0], ps.count, ps.wsum, (char *)vals[l] + b * 8192 * esz,
                                                             (const char *)ps.data + b * 8192 * esz, len);
                        }
                        fl[l] = (gck_finished_layer){.sumsq = nb ? pairwise_blocks(blk, nb) : 0.0, .step = ps.step};
                    }
                    gck_checkpoint *got = NULL, *want = NULL;
                    assert_int_equal(gck_flush_finished(cp[0], 5, gck_global_step(cp[0]), fl, &got), GCK_OK);
                    assert_int_equal(gck_flush(cp[1], 5, &want), GCK_OK);
                    gck_assert_same_checkpoint(got, want);
                    assert_int_equal(gck_flush_count(cp[0]), (uint64_t)win + 1);
                    assert_int_equal(gck_pending_count(cp[0]), 0);
                    gck_checkpoint_release(got), gck_checkpoint_release(want);
                }
                gck_checkpointer_destroy(cp[0]), gck_checkpointer_destroy(cp[1]);
            }
    for (size_t l = 0; l < NL; l++)
        for (int j = 0; j < K; j++)
            free(t[l][j]), free(f[l][j]);
}

/* A window larger than the last-level cache share (32 MiB at most): the next window opens its
 * levels with streaming stores, and the values stay those of the tree. */
static void test_streamed_levels(void **state)
{
    (void)state;
    const size_t n = ((size_t)33 << 20) / sizeof(float) + 5;
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *e = malloc(n * sizeof *e);
    assert_non_null(a), assert_non_null(b), assert_non_null(e);
    gck_test_fill_f32(a, n, GCK_K_ILL_SCALED, 1);
    gck_test_fill_f32(b, n, GCK_K_UNIFORM, 2);
    a[3] = -0.0f, b[3] = -0.0f; /* a -0 leaf is +0: the sum stays +0 */
    /* ((0 + a) + (0 + b)) + ((0 + b) + (0 + a)), then the mean: * 0.25 is exact */
    gck_axpy_init_f32(e, 1.0f, a, n);
    gck_add_f32(e, b, n);
    gck_scale_f32(e, 2.0f, n);
    gck_scale_f32(e, 0.25f, n);
    gck_checkpointer *cp = make_tree(GCK_ACCUM_MEAN, GCK_DTYPE_F32, NULL, 0, 0);
    for (int win = 0; win < 2; win++) {
        for (int j = 0; j < 4; j++)
            assert_int_equal(gck_accumulate_f32(cp, "big", j == 0 || j == 3 ? a : b, n, 1), GCK_OK);
        gck_checkpoint *c = NULL;
        assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_layer(c, 0, &v), GCK_OK);
        assert_memory_equal(v.values, e, n * sizeof *e);
        gck_checkpoint_release(c);
    }
    gck_checkpointer_destroy(cp);
    free(a), free(b), free(e);
}

static void test_staged_errors(void **state)
{
    (void)state;
    double x[4] = {1, 2, 3, 4};
    void *vals[2];
    gck_finished_layer fl[1] = {{.sumsq = 30.0, .step = 1}};
    gck_checkpointer *cp = make_tree(GCK_ACCUM_SUM, GCK_DTYPE_F64, NULL, 0, 0);
    assert_int_equal(gck_flush_stage(NULL, vals), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_stage(cp, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_ERR_NO_ACCUMULATED_GRADIENTS);
    assert_true(isnan(gck_flush_finish_values(NULL, 1, 0.0, x, x, 4)));
    assert_int_equal(gck_flush_finished(NULL, 0, 0, fl, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_finished(cp, 0, 0, fl, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "staged"));
    gck_flush_unstage(NULL);
    gck_flush_unstage(cp);
    /* a full history: the staged memory is the oldest checkpoint's; unstaging leaves it there */
    for (int win = 0; win < 12; win++) {
        assert_int_equal(gck_accumulate_f64(cp, "L", x, 4, 1), GCK_OK);
        assert_int_equal(gck_flush(cp, 0, NULL), GCK_OK);
    }
    assert_int_equal(gck_accumulate_f64(cp, "L", x, 4, 1), GCK_OK);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_OK);
    assert_int_equal(gck_flush_finished(cp, 0, 0, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_OK); /* again: the first released */
    gck_flush_unstage(cp);
    assert_int_equal(gck_flush_finished(cp, 0, 0, fl, NULL), GCK_ERR_INVALID_ARGUMENT);
    /* an accumulate in between drops it */
    assert_int_equal(gck_flush_stage(cp, vals), GCK_OK);
    assert_int_equal(gck_accumulate_f64(cp, "M", x, 2, 1), GCK_OK);
    assert_int_equal(gck_flush_finished(cp, 0, 0, fl, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_pending_count(cp), 2);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 0, &c), GCK_OK);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_layer(c, 0, &v), GCK_OK);
    assert_true(((const double *)v.values)[3] == 4.0);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
    /* a non-finite norm: nothing but the staged checkpoint changes */
    cp = make_tree(GCK_ACCUM_SUM, GCK_DTYPE_F64, NULL, 0, 1);
    assert_int_equal(gck_accumulate_f64(cp, "L", x, 4, 1), GCK_OK);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_OK);
    const double bad[4] = {1, NAN, 3, 4};
    memcpy(vals[0], bad, sizeof bad);
    fl[0].sumsq = NAN;
    assert_int_equal(gck_flush_finished(cp, 0, 0, fl, NULL), GCK_ERR_NONFINITE);
    assert_int_equal(gck_pending_count(cp), 1);
    assert_int_equal(gck_flush_count(cp), 0);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_OK); /* the destroy releases it */
    gck_checkpointer_destroy(cp);
    /* BF16 storage is finished by gck_flush_reduced */
    cp = make_tree(GCK_ACCUM_SUM, GCK_DTYPE_BF16, NULL, 0, 0);
    assert_int_equal(gck_accumulate_f64(cp, "L", x, 4, 1), GCK_OK);
    assert_int_equal(gck_flush_stage(cp, vals), GCK_ERR_UNSUPPORTED);
    assert_true(isnan(gck_flush_finish_values(cp, 1, 0.0, x, x, 4)));
    gck_checkpointer_destroy(cp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_list_repeats_equal_separate_calls),
        cmocka_unit_test(test_allocation_failures_change_nothing),
        cmocka_unit_test(test_reduced_equals_one_process),
        cmocka_unit_test(test_reduced_errors_change_nothing),
        cmocka_unit_test(test_staged_equals_flush),
        cmocka_unit_test(test_staged_errors),
        cmocka_unit_test(test_streamed_levels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
