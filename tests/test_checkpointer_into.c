/* tests/test_checkpointer_into.c - the trainer path of the checkpointer: gck_accumulate_many_* and
 * gck_flush_into against the seed path (gck_accumulate_* + gck_flush), bit for bit; their errors and
 * allocation failures change nothing; the pre-clip norm and clip factor, saved and loaded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/gck_test.h"
#include "support/gck_same_checkpoint.h"

#include "alloc_internal.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

static void set_threads(int t)
{
#if GCK_HAVE_OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

/* ---- a model: layers of assorted lengths, inputs per window ---------------- */

#define NL 6
static const char *const ids[NL] = {"a.w", "attn.c_proj.b", "b", "empty", "h.0.mlp", "z"};
static size_t lens[NL] = {7, 1, 513, 0, 8193, GCK_PARALLEL_MIN + 77};

/* Inputs: window w, micro-batch j, layer l, f32 and f64 versions. */
#define NW 6
#define NJ 4
static float *in32[NW][NJ][NL];
static double *in64[NW][NJ][NL];

static int setup_inputs(void **state)
{
    (void)state;
    for (int w = 0; w < NW; w++)
        for (int j = 0; j < NJ; j++)
            for (int l = 0; l < NL; l++) {
                const size_t n = lens[l] ? lens[l] : 1;
                in32[w][j][l] = malloc(n * sizeof(float));
                in64[w][j][l] = malloc(n * sizeof(double));
                const uint64_t seed = (uint64_t)(w * 1000 + j * 10 + l);
                gck_test_fill_f32(in32[w][j][l], lens[l], GCK_K_UNIFORM, seed);
                gck_test_fill_f64(in64[w][j][l], lens[l], GCK_K_UNIFORM, seed + 77);
            }
    return 0;
}

static int teardown_inputs(void **state)
{
    (void)state;
    for (int w = 0; w < NW; w++)
        for (int j = 0; j < NJ; j++)
            for (int l = 0; l < NL; l++)
                free(in32[w][j][l]), free(in64[w][j][l]);
    return 0;
}

/* Micro-batches in window w: 1, 2, 3, 4, ... (powers of two and not). */
static int window_k(int w)
{
    return 1 + w % NJ;
}

/* Input kind: 0 all f32, 1 all f64, 2 f32 for even micro-batches, f64 for odd. */
static int is_f32(int input, int j)
{
    return input == 0 || (input == 2 && j % 2 == 0);
}

/* The seed path: one gck_accumulate call per tensor, layers in a scrambled order. */
static void feed_single(gck_checkpointer *cp, int w, int input)
{
    for (int j = 0; j < window_k(w); j++)
        for (int q = 0; q < NL; q++) {
            const int l = (q * 5 + w) % NL;
            const gck_status s = is_f32(input, j)
                                     ? gck_accumulate_f32(cp, ids[l], in32[w][j][l], lens[l], (uint64_t)(w * 10 + j))
                                     : gck_accumulate_f64(cp, ids[l], in64[w][j][l], lens[l], (uint64_t)(w * 10 + j));
            assert_int_equal(s, GCK_OK);
        }
}

/* The trainer path: one gck_accumulate_many call per micro-batch, same order. */
static void feed_many(gck_checkpointer *cp, int w, int input)
{
    for (int j = 0; j < window_k(w); j++) {
        const char *lid[NL];
        const float *v32[NL];
        const double *v64[NL];
        size_t n[NL];
        for (int q = 0; q < NL; q++) {
            const int l = (q * 5 + w) % NL;
            lid[q] = ids[l], v32[q] = in32[w][j][l], v64[q] = in64[w][j][l], n[q] = lens[l];
        }
        const gck_status s = is_f32(input, j) ? gck_accumulate_many_f32(cp, lid, v32, n, NL, (uint64_t)(w * 10 + j))
                                              : gck_accumulate_many_f64(cp, lid, v64, n, NL, (uint64_t)(w * 10 + j));
        assert_int_equal(s, GCK_OK);
    }
}

static const double weights[3] = {0.25, 2.0, 1.0 / 3.0};

typedef struct tcase {
    gck_accum_mode mode;
    gck_dtype dt;
    int input;     /* see is_f32 */
    int clip;      /* 0 off, 1 on but never triggered, 2 triggered */
    int nonfinite; /* error_if_nonfinite */
    gck_checksum cs;
    size_t max;    /* history bound */
} tcase;

static gck_checkpointer *make_cp(const tcase *t)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.accumulation_mode = t->mode;
    cfg.dtype = t->dt;
    cfg.weights = weights;
    cfg.n_weights = 3;
    cfg.clip_enabled = t->clip != 0;
    cfg.clip_norm = t->clip == 2 ? 0.5 : 1e30;
    cfg.error_if_nonfinite = t->nonfinite;
    cfg.checksum = t->cs;
    cfg.max_checkpoints = t->max;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    return cp;
}

/* A trainer's gradient buffer: every layer's values back to back. */
typedef struct grads {
    unsigned char *mem;
    size_t bytes;
    size_t off[NL]; /* byte offset of each layer */
} grads;

static void grads_init(grads *g, gck_dtype dt, int reversed)
{
    const size_t esz = gck_dtype_size(dt);
    size_t at = 0;
    for (int q = 0; q < NL; q++) {
        const int l = reversed ? NL - 1 - q : q;
        g->off[l] = at;
        at += lens[l] * esz;
    }
    g->bytes = at;
    g->mem = malloc(at + 1);
    memset(g->mem, 0xA5, at + 1); /* a sentinel nothing finished looks like */
}

/* dst for g: ids NULL (layer-id order) or the layers in a shuffled order. */
typedef struct dst_desc {
    const char *lid[NL];
    void *data[NL];
    size_t n[NL];
    gck_flush_dst d;
} dst_desc;

static void dst_make(dst_desc *dd, grads *g, gck_dtype dt, int shuffled, int w)
{
    for (int q = 0; q < NL; q++) {
        const int l = shuffled ? (q * 5 + w + 1) % NL : q;
        dd->lid[q] = ids[l];
        dd->data[q] = g->mem + g->off[l];
        dd->n[q] = lens[l];
    }
    dd->d = (gck_flush_dst){.layer_ids = shuffled ? dd->lid : NULL,
                            .tensors = {.count = NL, .data = dd->data, .lens = dd->n, .dtype = dt}};
}

/* Every field of two recorded checkpoints agrees (ids only when check_id). */
/* Everything gck_assert_same_checkpoint_id compares, and the same created_at. */
static void assert_same_checkpoint(const gck_checkpoint *a, const gck_checkpoint *b, int check_id)
{
    gck_assert_same_checkpoint_id(a, b, check_id);
    assert_int_equal(gck_checkpoint_created_at(a), gck_checkpoint_created_at(b));
}

/* dst holds exactly ck's values, and nothing past the buffer was written. */
static void assert_dst_is(const grads *g, const gck_checkpoint *ck)
{
    const size_t esz = gck_dtype_size(gck_checkpoint_dtype(ck));
    for (int l = 0; l < NL; l++) {
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_find(ck, ids[l], &v), GCK_OK);
        assert_int_equal(v.n, lens[l]);
        if (v.n > 0 && memcmp(g->mem + g->off[l], v.values, v.n * esz) != 0)
            fail_msg("layer %s: dst differs from gck_flush's values", ids[l]);
    }
    assert_int_equal(g->mem[g->bytes], 0xA5);
}

/* One configuration: A runs the seed path (single accumulates, gck_flush,
 * 1 thread); B runs the trainer path (gck_accumulate_many, gck_flush_into
 * on 1, 2 or 3 threads) recording per `rec` (0 always, 1 never, 2 every
 * other window); windows alternate layer-id order and a shuffled dst. */
static void run_case(const tcase *t, int rec)
{
    gck_checkpointer *A = make_cp(t), *B = make_cp(t);
    grads g;
    grads_init(&g, t->dt, rec == 1);
    uint64_t recorded = 0;
    for (int w = 0; w < NW; w++) {
        set_threads(1);
        feed_single(A, w, t->input);
        gck_checkpoint *ca = NULL;
        assert_int_equal(gck_flush(A, (uint64_t)(500 + w), &ca), GCK_OK);

        set_threads(1 + w % 3);
        feed_many(B, w, t->input);
        assert_int_equal(gck_global_step(B), gck_global_step(A));
        dst_desc dd;
        dst_make(&dd, &g, t->dt, w % 2, w);
        const int record = rec == 0 || (rec == 2 && w % 2 == 0);
        gck_checkpoint *cb = NULL;
        gck_clip_info info = {0};
        const size_t hist_before = gck_checkpointer_stats_get(B).total_checkpoints;
        const gck_checkpoint *latest_before = gck_latest_checkpoint(B);
        assert_int_equal(gck_flush_into(B, (uint64_t)(500 + w), &dd.d, &info, record ? &cb : NULL), GCK_OK);
        set_threads(1);

        assert_dst_is(&g, ca);
        gck_assert_same_f64(gck_checkpoint_norm_before_clip(ca), info.total_norm, "info.total_norm w=%d", w);
        gck_assert_same_f64(gck_checkpoint_clip_coef(ca), info.coef, "info.coef w=%d", w);
        assert_int_equal(info.clipped, gck_checkpoint_clip_coef(ca) != 1.0);
        if (t->clip == 2)
            assert_true(info.clipped && info.coef < 1.0 && info.total_norm > 0.5);
        else
            assert_true(!info.clipped && info.coef == 1.0 &&
                        info.total_norm == gck_checkpoint_global_norm(ca));
        if (record) {
            assert_non_null(cb);
            assert_same_checkpoint(ca, cb, rec == 0);
            assert_int_equal(gck_checkpoint_id(cb), recorded);
            assert_ptr_equal(gck_latest_checkpoint(B), cb);
            recorded++;
            gck_checkpoint_release(cb);
        } else {
            /* nothing recorded: the history is as it was */
            assert_int_equal(gck_checkpointer_stats_get(B).total_checkpoints, hist_before);
            assert_ptr_equal(gck_latest_checkpoint(B), latest_before);
        }
        gck_checkpoint_release(ca);
        assert_int_equal(gck_pending_count(B), 0);
        assert_int_equal(gck_flush_count(B), (uint64_t)(w + 1));
        assert_int_equal(gck_flush_count(A), (uint64_t)(w + 1));
    }
    /* a later gck_flush continues the id sequence of the recorded ones */
    feed_single(B, 0, t->input);
    assert_int_equal(gck_flush(B, 1, NULL), GCK_OK);
    assert_int_equal(gck_checkpoint_id(gck_latest_checkpoint(B)), recorded);
    free(g.mem);
    gck_checkpointer_destroy(A);
    gck_checkpointer_destroy(B);
}

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) error_if_nonfinite
 * takes one value per configuration, alternating, instead of both: every pair
 * of settings still meets (53 s of qemu-s390x for the 108 configurations). */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

static void test_flush_into_equals_flush(void **state)
{
    (void)state;
    static const gck_accum_mode modes[3] = {GCK_ACCUM_SUM, GCK_ACCUM_MEAN, GCK_ACCUM_WEIGHTED_MEAN};
    static const gck_checksum css[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    int n = 0;
    for (int m = 0; m < 3; m++)
        for (int d = 0; d < 2; d++)
            for (int input = 0; input < 3; input++)
                for (int clip = 0; clip < 3; clip++)
                    for (int nf = 0; nf < 2; nf++) {
                        const tcase t = {.mode = modes[m], .dt = d ? GCK_DTYPE_F64 : GCK_DTYPE_F32, .input = input,
                                         .clip = clip, .nonfinite = nf, .cs = css[n % 3], .max = 1 + (size_t)n % 3};
                        if (!GCK_TEST_EMULATED || nf == (m + d + input + clip) % 2)
                            run_case(&t, n % 3);
                        n++;
                    }
}

/* Every recording pattern on a few configurations. */
static void test_flush_into_recording_patterns(void **state)
{
    (void)state;
    for (int rec = 0; rec < 3; rec++)
        for (int nf = 0; nf < 2; nf++) {
            const tcase t = {.mode = GCK_ACCUM_MEAN, .dt = GCK_DTYPE_F32, .input = 0, .clip = 2, .nonfinite = nf,
                             .cs = GCK_CHECKSUM_XXH3_64, .max = 2};
            run_case(&t, rec);
            const tcase u = {.mode = GCK_ACCUM_WEIGHTED_MEAN, .dt = GCK_DTYPE_F64, .input = 2, .clip = 0,
                             .nonfinite = nf, .cs = GCK_CHECKSUM_FNV1A64, .max = 1};
            run_case(&u, rec);
        }
}

/* ---- errors change nothing ---------------------------------------------------- */

/* What a caller can observe of a checkpointer. */
typedef struct observed {
    size_t pending, pending_layers;
    uint64_t step, flushes;
    size_t history;
    const gck_checkpoint *latest;
} observed;

static observed observe(const gck_checkpointer *cp)
{
    return (observed){.pending = gck_pending_count(cp), .pending_layers = gck_pending_layers(cp, NULL, 0),
                      .step = gck_global_step(cp), .flushes = gck_flush_count(cp),
                      .history = gck_checkpointer_stats_get(cp).total_checkpoints, .latest = gck_latest_checkpoint(cp)};
}

static void assert_observed(const gck_checkpointer *cp, const observed *o)
{
    const observed now = observe(cp);
    assert_int_equal(now.pending, o->pending);
    assert_int_equal(now.pending_layers, o->pending_layers);
    assert_int_equal(now.step, o->step);
    assert_int_equal(now.flushes, o->flushes);
    assert_int_equal(now.history, o->history);
    assert_ptr_equal(now.latest, o->latest);
}

/* dst still holds the sentinel everywhere. */
static void assert_untouched(const grads *g)
{
    for (size_t i = 0; i <= g->bytes; i++)
        if (g->mem[i] != 0xA5)
            fail_msg("dst byte %zu was written by a failing call", i);
}

static void expect_into_error(gck_checkpointer *cp, const gck_flush_dst *d, gck_status want, const char *msg,
                              const grads *g)
{
    const observed o = observe(cp);
    gck_clip_info info = {.total_norm = 42.0, .coef = 42.0, .clipped = 42};
    gck_checkpoint *out = (gck_checkpoint *)0x1;
    const gck_status s = gck_flush_into(cp, 9, d, &info, &out);
    if (s != want)
        fail_msg("want %s, got %s (%s)", gck_status_name(want), gck_status_name(s), gck_last_error());
    if (strstr(gck_last_error(), msg) == NULL)
        fail_msg("message '%s' lacks '%s'", gck_last_error(), msg);
    assert_ptr_equal(out, (gck_checkpoint *)0x1);
    if (want != GCK_ERR_NONFINITE)
        assert_true(info.total_norm == 42.0 && info.coef == 42.0 && info.clipped == 42);
    assert_observed(cp, &o);
    if (g != NULL)
        assert_untouched(g);
}

static void test_flush_into_errors_change_nothing(void **state)
{
    (void)state;
    const tcase t = {.mode = GCK_ACCUM_MEAN, .dt = GCK_DTYPE_F32, .input = 0, .clip = 2, .cs = GCK_CHECKSUM_XXH3_64,
                     .max = 2};
    gck_checkpointer *cp = make_cp(&t), *ref = make_cp(&t);
    grads g;
    grads_init(&g, t.dt, 0);
    dst_desc dd;

    dst_make(&dd, &g, t.dt, 0, 0);
    expect_into_error(NULL, &dd.d, GCK_ERR_INVALID_ARGUMENT, "checkpointer", &g);
    expect_into_error(cp, NULL, GCK_ERR_INVALID_ARGUMENT, "dst", &g);
    expect_into_error(cp, &dd.d, GCK_ERR_NO_ACCUMULATED_GRADIENTS, "no gradients", &g);

    /* a layer that exists but is idle in this window */
    const float one[1] = {1.0f};
    assert_int_equal(gck_accumulate_f32(cp, "idle", one, 1, 0), GCK_OK);
    assert_int_equal(gck_flush_into(cp, 0, &(gck_flush_dst){.tensors = {.count = 1, .data = (void *[]){g.mem},
                                                                        .lens = (size_t[]){1}, .dtype = t.dt}},
                                    NULL, NULL),
                     GCK_OK);
    memset(g.mem, 0xA5, g.bytes + 1);
    feed_single(cp, 1, 0);
    feed_single(ref, 1, 0);

    dst_desc bad;
    /* NULL arrays */
    dst_make(&bad, &g, t.dt, 1, 1);
    bad.d.tensors.data = NULL;
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "data is NULL", &g);
    dst_make(&bad, &g, t.dt, 1, 1);
    bad.d.tensors.lens = NULL;
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "lens is NULL", &g);
    /* a NULL buffer with a length */
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        dst_make(&bad, &g, t.dt, shuffled, 1);
        int q = 2;
        while (bad.n[q] == 0)
            q++;
        bad.data[q] = NULL;
        expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "is NULL with length", &g);
    }
    /* wrong length, in either mode */
    for (int shuffled = 0; shuffled < 2; shuffled++) {
        dst_make(&bad, &g, t.dt, shuffled, 1);
        bad.n[4]++;
        expect_into_error(cp, &bad.d, GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer", &g);
    }
    /* a missing layer: one buffer too few */
    dst_make(&bad, &g, t.dt, 0, 1);
    bad.d.tensors.count = NL - 1;
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "none for 'z'", &g);
    dst_make(&bad, &g, t.dt, 1, 1);
    bad.d.tensors.count = NL - 1;
    char want[64];
    snprintf(want, sizeof want, "pending layer '%s' has no buffer", bad.lid[NL - 1]);
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, want, &g);
    dst_make(&bad, &g, t.dt, 0, 1);
    bad.d.tensors.count = 0;
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "0 buffers for 6 pending layers", &g);
    /* one too many (ids NULL) */
    {
        void *data7[NL + 1];
        size_t n7[NL + 1];
        dst_make(&bad, &g, t.dt, 0, 1);
        memcpy(data7, bad.data, sizeof bad.data);
        memcpy(n7, bad.n, sizeof bad.n);
        data7[NL] = g.mem, n7[NL] = 1;
        bad.d.tensors = (gck_tensor_list){.count = NL + 1, .data = data7, .lens = n7, .dtype = t.dt};
        expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "7 buffers for 6 pending layers", &g);
    }
    /* ids: unknown, idle, twice, NULL */
    dst_make(&bad, &g, t.dt, 1, 1);
    bad.lid[3] = "nope";
    expect_into_error(cp, &bad.d, GCK_ERR_NOT_FOUND, "'nope', which has nothing pending", &g);
    bad.lid[3] = "idle";
    expect_into_error(cp, &bad.d, GCK_ERR_NOT_FOUND, "'idle', which has nothing pending", &g);
    bad.lid[3] = bad.lid[1];
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "twice (tensors 1 and 3)", &g);
    bad.lid[3] = NULL;
    expect_into_error(cp, &bad.d, GCK_ERR_INVALID_ARGUMENT, "layer_ids[3] is NULL", &g);
    /* dtypes: another float type, an unsupported one, per-tensor dtypes */
    dst_make(&bad, &g, t.dt, 0, 1);
    bad.d.tensors.dtype = GCK_DTYPE_F64;
    expect_into_error(cp, &bad.d, GCK_ERR_UNSUPPORTED, "dst tensor 0 is F64 but the checkpointer stores F32", &g);
    bad.d.tensors.dtype = GCK_DTYPE_BF16;
    expect_into_error(cp, &bad.d, GCK_ERR_UNSUPPORTED, "is BF16", &g);
    gck_dtype dts[NL] = {GCK_DTYPE_F32, GCK_DTYPE_F32, GCK_DTYPE_F32, GCK_DTYPE_F32, GCK_DTYPE_F32, GCK_DTYPE_I32};
    bad.d.tensors.dtypes = dts;
    expect_into_error(cp, &bad.d, GCK_ERR_UNSUPPORTED, "dst tensor 5 is I32", &g);
    dts[5] = GCK_DTYPE_F32; /* now valid: per-tensor dtypes all F32 */

    /* after all that, the window flushes exactly as the reference's */
    gck_checkpoint *cr = NULL, *cc = NULL;
    assert_int_equal(gck_flush(ref, 9, &cr), GCK_OK);
    gck_clip_info info;
    assert_int_equal(gck_flush_into(cp, 9, &bad.d, &info, &cc), GCK_OK);
    assert_dst_is(&g, cr);
    assert_int_equal(gck_checkpoint_id(cc), 0); /* the out-NULL flush_into above recorded nothing */
    assert_int_equal(gck_flush_count(cp), 2);
    gck_checkpoint_release(cr);
    gck_checkpoint_release(cc);
    free(g.mem);
    gck_checkpointer_destroy(cp);
    gck_checkpointer_destroy(ref);
}

/* error_if_nonfinite: a NaN/Inf norm fails before dst is touched and keeps
 * the pending state; finite windows go through the staging copy and equal
 * gck_flush; without the flag non-finite values flow into dst as into a
 * checkpoint. */
static void test_flush_into_nonfinite(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++) {
        const tcase t = {.mode = GCK_ACCUM_MEAN, .dt = d ? GCK_DTYPE_F64 : GCK_DTYPE_F32, .input = 1, .clip = 2,
                         .nonfinite = 1, .cs = GCK_CHECKSUM_FNV1A64, .max = 1};
        gck_checkpointer *cp = make_cp(&t), *ref = make_cp(&t);
        grads g;
        grads_init(&g, t.dt, 0);
        dst_desc dd;
        dst_make(&dd, &g, t.dt, 1, 3);
        for (int bad = 0; bad < 2; bad++) {
            feed_single(cp, 2, 1);
            const double poison[1] = {bad ? INFINITY : NAN};
            assert_int_equal(gck_accumulate_f64(cp, "attn.c_proj.b", poison, 1, 99), GCK_OK);
            for (int rec = 0; rec < 2; rec++) {
                const observed o = observe(cp);
                gck_clip_info info = {0};
                gck_checkpoint *out = (gck_checkpoint *)0x1;
                assert_int_equal(gck_flush_into(cp, 1, &dd.d, &info, rec ? &out : NULL), GCK_ERR_NONFINITE);
                assert_non_null(strstr(gck_last_error(), bad ? "infinite" : "NaN"));
                assert_true(bad ? info.total_norm == INFINITY : isnan(info.total_norm));
                assert_true(info.coef == 1.0 && info.clipped == 0);
                assert_ptr_equal(out, (gck_checkpoint *)0x1);
                assert_observed(cp, &o);
                assert_untouched(&g);
            }
            assert_int_equal(gck_checkpointer_discard_pending(cp), GCK_OK);
            /* the reference takes and drops the same tensors: equal global steps */
            feed_single(ref, 2, 1);
            assert_int_equal(gck_accumulate_f64(ref, "attn.c_proj.b", poison, 1, 99), GCK_OK);
            assert_int_equal(gck_checkpointer_discard_pending(ref), GCK_OK);
        }
        /* finite windows of changing sizes: staged, then recorded or not */
        for (int w = 0; w < NW; w++) {
            feed_single(cp, w, 1);
            feed_single(ref, w, 1);
            gck_checkpoint *cr = NULL, *cc = NULL;
            assert_int_equal(gck_flush(ref, (uint64_t)w, &cr), GCK_OK);
            dst_make(&dd, &g, t.dt, w % 2, w);
            assert_int_equal(gck_flush_into(cp, (uint64_t)w, &dd.d, NULL, w % 3 ? &cc : NULL), GCK_OK);
            assert_dst_is(&g, cr);
            if (cc != NULL)
                assert_same_checkpoint(cr, cc, 0);
            gck_checkpoint_release(cr);
            gck_checkpoint_release(cc);
        }
        free(g.mem);
        gck_checkpointer_destroy(cp);
        gck_checkpointer_destroy(ref);
    }
    /* without the flag: NaN and Inf reach dst exactly as gck_flush stores them */
    const tcase t = {.mode = GCK_ACCUM_SUM, .dt = GCK_DTYPE_F32, .input = 0, .clip = 2, .cs = GCK_CHECKSUM_NONE,
                     .max = 1};
    for (int bad = 0; bad < 2; bad++) {
        gck_checkpointer *cp = make_cp(&t), *ref = make_cp(&t);
        grads g;
        grads_init(&g, t.dt, 0);
        dst_desc dd;
        dst_make(&dd, &g, t.dt, 0, 0);
        const float poison[1] = {bad ? INFINITY : NAN};
        for (int i = 0; i < 2; i++) {
            gck_checkpointer *c = i ? ref : cp;
            feed_single(c, 1, 0);
            assert_int_equal(gck_accumulate_f32(c, "attn.c_proj.b", poison, 1, 99), GCK_OK);
        }
        gck_checkpoint *cr = NULL;
        assert_int_equal(gck_flush(ref, 0, &cr), GCK_OK);
        gck_clip_info info;
        assert_int_equal(gck_flush_into(cp, 0, &dd.d, &info, NULL), GCK_OK);
        assert_dst_is(&g, cr);
        gck_assert_same_f64(gck_checkpoint_norm_before_clip(cr), info.total_norm, "non-finite pre-clip norm");
        gck_assert_same_f64(gck_checkpoint_clip_coef(cr), info.coef, "coef");
        assert_int_equal(info.clipped, bad); /* Inf > clip_norm clips (by 0), NaN does not */
        gck_checkpoint_release(cr);
        free(g.mem);
        gck_checkpointer_destroy(cp);
        gck_checkpointer_destroy(ref);
    }
}

/* Ten entries (more than the single call's stack arrays), two layers twice. */
#define NE 10
static const int walk_layer[NE] = {5, 0, 2, 1, 4, 3, 0, 2, 5, 0};

/* The first ne entries of walk_layer (6: every layer once). */
static gck_status walk_accumulate(gck_checkpointer *cp, int j, int ne)
{
    const char *lid[NE];
    const float *v[NE];
    size_t n[NE];
    for (int e = 0; e < ne; e++) {
        const int l = walk_layer[e];
        lid[e] = ids[l], v[e] = in32[j][e % NJ][l], n[e] = lens[l];
    }
    return gck_accumulate_many_f32(cp, lid, v, n, (size_t)ne, (uint64_t)j);
}

/* Every allocation failure of gck_accumulate_many and gck_flush_into (with
 * and without recording, direct and staged; weighted mean with repeated
 * layers, and on 2 threads mean and sum, whose flush sums through the list
 * functions) leaves the checkpointer and dst as they were; finishing the
 * work afterwards gives the run that never failed. */
static void test_allocation_failures_change_nothing(void **state)
{
    (void)state;
    static const gck_accum_mode modes[3] = {GCK_ACCUM_WEIGHTED_MEAN, GCK_ACCUM_MEAN, GCK_ACCUM_SUM};
    for (int variant = 0; variant < 12; variant++) {
        const int record = variant & 1, mode = variant / 4, ne = mode == 0 ? NE : NL;
        const tcase t = {.mode = modes[mode], .dt = GCK_DTYPE_F32, .clip = 2, .nonfinite = (variant >> 1) & 1,
                         .cs = GCK_CHECKSUM_XXH3_64, .max = 1};
        set_threads(mode == 0 ? 1 : 2);
        /* the reference: the same entries as single calls, then gck_flush */
        gck_checkpointer *ref = make_cp(&t);
        for (int j = 0; j < 2; j++)
            for (int e = 0; e < ne; e++)
                assert_int_equal(gck_accumulate_f32(ref, ids[walk_layer[e]], in32[j][e % NJ][walk_layer[e]],
                                                    lens[walk_layer[e]], (uint64_t)j),
                                 GCK_OK);
        gck_checkpoint *cr = NULL;
        assert_int_equal(gck_flush(ref, 5, &cr), GCK_OK);
        int done = 0;
        for (long k = 0; k < 200 && !done; k++) {
            gck_checkpointer *cp = make_cp(&t);
            grads g;
            grads_init(&g, t.dt, 0);
            dst_desc dd;
            dst_make(&dd, &g, t.dt, variant & 1, 0);
            assert_int_equal(walk_accumulate(cp, 0, ne), GCK_OK);
            observed o = observe(cp);
            gck_alloc_fail_after(k);
            gck_status s = walk_accumulate(cp, 1, ne);
            if (s != GCK_OK) {
                gck_alloc_fail_after(-1);
                assert_int_equal(s, GCK_ERR_NO_MEMORY);
                assert_non_null(strstr(gck_last_error(), "out of memory: "));
                assert_observed(cp, &o);
                assert_int_equal(walk_accumulate(cp, 1, ne), GCK_OK);
            } else {
                o = observe(cp);
                gck_checkpoint *out = NULL;
                s = gck_flush_into(cp, 5, &dd.d, NULL, record ? &out : NULL);
                gck_alloc_fail_after(-1);
                if (s == GCK_OK) {
                    done = 1; /* past the last allocation: every failure point was seen */
                    assert_true(k > 0);
                } else {
                    assert_int_equal(s, GCK_ERR_NO_MEMORY);
                    assert_non_null(strstr(gck_last_error(), "gck_flush_into: "));
                    assert_non_null(strstr(gck_last_error(), "out of memory: "));
                    assert_observed(cp, &o);
                    assert_untouched(&g);
                }
                gck_checkpoint_release(out);
            }
            if (!done) {
                gck_checkpoint *out = NULL;
                assert_int_equal(gck_flush_into(cp, 5, &dd.d, NULL, record ? &out : NULL), GCK_OK);
                if (record)
                    assert_same_checkpoint(cr, out, 1);
                gck_checkpoint_release(out);
            }
            assert_dst_is(&g, cr);
            free(g.mem);
            gck_checkpointer_destroy(cp);
        }
        if (!done)
            fail_msg("allocation failure walk did not finish in 200 steps");
        gck_checkpoint_release(cr);
        gck_checkpointer_destroy(ref);
    }
    set_threads(1);
}

/* A long list on 2 threads: the list functions flush_into sums through
 * need scratch, and its failure changes nothing either (sum: read-only
 * sums; mean of 2: the buffers finished in place, so the failure must come
 * before that). */
static void test_list_scratch_failures_change_nothing(void **state)
{
    (void)state;
    enum { LL = 100, LN = 700 };
    char lid[LL][16];
    const char *lp[LL];
    const float *v[LL];
    size_t n[LL];
    for (int l = 0; l < LL; l++) {
        snprintf(lid[l], sizeof lid[l], "l%03d", l);
        lp[l] = lid[l], v[l] = in32[0][l % NJ][5] + l, n[l] = LN;
    }
    set_threads(2);
    for (int mode = 0; mode < 2; mode++) {
        const tcase t = {.mode = mode ? GCK_ACCUM_MEAN : GCK_ACCUM_SUM, .dt = GCK_DTYPE_F32, .clip = 2,
                         .cs = GCK_CHECKSUM_NONE, .max = 1};
        gck_checkpointer *ref = make_cp(&t);
        for (int j = 0; j <= mode; j++)
            assert_int_equal(gck_accumulate_many_f32(ref, lp, v, n, LL, 0), GCK_OK);
        gck_checkpoint *cr = NULL;
        assert_int_equal(gck_flush(ref, 0, &cr), GCK_OK);
        float *g = malloc(LL * LN * sizeof(float));
        void *gp[LL];
        for (int l = 0; l < LL; l++)
            gp[l] = g + l * LN;
        const gck_flush_dst d = {.layer_ids = lp, .tensors = {.count = LL, .data = gp, .lens = n, .dtype = t.dt}};
        int failures = 0, done = 0;
        for (long k = 0; k < 20 && !done; k++) {
            gck_checkpointer *cp = make_cp(&t);
            for (int j = 0; j <= mode; j++)
                assert_int_equal(gck_accumulate_many_f32(cp, lp, v, n, LL, 0), GCK_OK);
            memset(g, 0xA5, LL * LN * sizeof(float));
            const observed o = observe(cp);
            gck_alloc_fail_after(k);
            gck_status st = gck_flush_into(cp, 0, &d, NULL, NULL);
            gck_alloc_fail_after(-1);
            if (st == GCK_OK) {
                done = 1;
            } else {
                assert_int_equal(st, GCK_ERR_NO_MEMORY);
                assert_non_null(strstr(gck_last_error(), "gck_flush_into"));
                assert_non_null(strstr(gck_last_error(), "out of memory: "));
                failures += strstr(gck_last_error(), "gck_tensors_") != NULL;
                assert_observed(cp, &o);
                for (size_t i = 0; i < (size_t)LL * LN; i++)
                    if (((const uint32_t *)(const void *)g)[i] != 0xA5A5A5A5u)
                        fail_msg("dst written by a failing call");
                assert_int_equal(gck_flush_into(cp, 0, &d, NULL, NULL), GCK_OK);
            }
            for (int l = 0; l < LL; l++) {
                gck_tensor_view tv;
                assert_int_equal(gck_checkpoint_find(cr, lid[l], &tv), GCK_OK);
                assert_memory_equal(gp[l], tv.values, LN * sizeof(float));
            }
            gck_checkpointer_destroy(cp);
        }
        assert_true(done && failures == 1); /* the list function's scratch was among the failure points */
        free(g);
        gck_checkpoint_release(cr);
        gck_checkpointer_destroy(ref);
    }
    set_threads(1);
}

/* ---- gck_accumulate_many == gck_accumulate per tensor ---------------------------- */

/* Random lists over a pool of layers, with repeats inside one list, new and
 * known layers, lengths fixed per window: many calls vs single calls, on
 * 1, 2 and 3 threads. */
static void test_accumulate_many_equals_single(void **state)
{
    (void)state;
    static const char *const pool[5] = {"p.big", "p.one", "p.a", "p.b", "p.c"};
    static const size_t plen[5] = {GCK_PARALLEL_MIN + 5, 1, 300, 8193, 17};
    uint64_t rs = 4242;
    for (int trial = 0; trial < 24; trial++) {
        gck_config cfg;
        gck_config_init(&cfg);
        cfg.accumulation_mode = (gck_accum_mode)(trial % 3);
        cfg.dtype = (trial / 3) % 2 ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        cfg.weights = weights;
        cfg.n_weights = (size_t)trial % 4;
        cfg.max_checkpoints = 1;
        gck_checkpointer *A = NULL, *B[3] = {NULL, NULL, NULL};
        assert_int_equal(gck_checkpointer_create(&cfg, &A), GCK_OK);
        for (int t = 0; t < 3; t++)
            assert_int_equal(gck_checkpointer_create(&cfg, &B[t]), GCK_OK);
        for (int window = 0; window < 2; window++) {
            const int lists = 1 + (int)(gck_test_rand(&rs) % 3);
            for (int li = 0; li < lists; li++) {
                const size_t cnt = 1 + gck_test_rand(&rs) % 12;
                const char *lid[12];
                const void *v[12];
                size_t n[12];
                const int f32 = (int)(gck_test_rand(&rs) % 2);
                void *bufs[12];
                for (size_t e = 0; e < cnt; e++) {
                    const int p = (int)(gck_test_rand(&rs) % 5);
                    lid[e] = pool[p];
                    n[e] = plen[p] + (size_t)window; /* another length in the next window */
                    bufs[e] = malloc(n[e] * (f32 ? 4 : 8));
                    if (f32)
                        gck_test_fill_f32(bufs[e], n[e], GCK_K_ILL_SCALED, gck_test_rand(&rs));
                    else
                        gck_test_fill_f64(bufs[e], n[e], GCK_K_UNIFORM, gck_test_rand(&rs));
                    v[e] = bufs[e];
                }
                const uint64_t step = gck_test_rand(&rs) % 1000;
                for (size_t e = 0; e < cnt; e++)
                    assert_int_equal(f32 ? gck_accumulate_f32(A, lid[e], v[e], n[e], step)
                                         : gck_accumulate_f64(A, lid[e], v[e], n[e], step),
                                     GCK_OK);
                for (int t = 0; t < 3; t++) {
                    set_threads(t + 1);
                    assert_int_equal(f32 ? gck_accumulate_many_f32(B[t], lid, (const float *const *)v, n, cnt, step)
                                         : gck_accumulate_many_f64(B[t], lid, (const double *const *)v, n, cnt, step),
                                     GCK_OK);
                    assert_int_equal(gck_global_step(B[t]), gck_global_step(A));
                    assert_int_equal(gck_pending_count(B[t]), gck_pending_count(A));
                    assert_int_equal(gck_pending_layers(B[t], NULL, 0), gck_pending_layers(A, NULL, 0));
                }
                set_threads(1);
                for (size_t e = 0; e < cnt; e++)
                    free(bufs[e]);
            }
            gck_checkpoint *ca = NULL;
            assert_int_equal(gck_flush(A, (uint64_t)window, &ca), GCK_OK);
            for (int t = 0; t < 3; t++) {
                gck_checkpoint *cb = NULL;
                assert_int_equal(gck_flush(B[t], (uint64_t)window, &cb), GCK_OK);
                assert_same_checkpoint(ca, cb, 1);
                gck_checkpoint_release(cb);
            }
            gck_checkpoint_release(ca);
        }
        gck_checkpointer_destroy(A);
        for (int t = 0; t < 3; t++)
            gck_checkpointer_destroy(B[t]);
    }
}

static void expect_many_error(gck_checkpointer *cp, const char *const *lid, const float *const *v, const size_t *n,
                              size_t cnt, gck_status want, const char *msg)
{
    const observed o = observe(cp);
    const gck_status s = gck_accumulate_many_f32(cp, lid, v, n, cnt, 7);
    if (s != want)
        fail_msg("want %s, got %s (%s)", gck_status_name(want), gck_status_name(s), gck_last_error());
    if (strstr(gck_last_error(), msg) == NULL)
        fail_msg("message '%s' lacks '%s'", gck_last_error(), msg);
    assert_observed(cp, &o);
    /* the f64 twin checks the same */
    const double *v64[8] = {0};
    for (size_t i = 0; i < cnt && v != NULL; i++)
        v64[i] = v[i] != NULL ? (const double *)in64[0][0][5] : NULL;
    assert_int_equal(gck_accumulate_many_f64(cp, lid, v != NULL ? v64 : NULL, n, cnt, 7), want);
    assert_observed(cp, &o);
}

static void test_accumulate_many_errors_change_nothing(void **state)
{
    (void)state;
    const tcase t = {.mode = GCK_ACCUM_WEIGHTED_MEAN, .dt = GCK_DTYPE_F64, .cs = GCK_CHECKSUM_FNV1A64, .max = 1};
    gck_checkpointer *cp = make_cp(&t), *ref = make_cp(&t);
    /* an idle layer "was" of length 3, and a pending window */
    const float three[3] = {1, 2, 3};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(gck_accumulate_f32(i ? ref : cp, "was", three, 3, 0), GCK_OK);
        assert_int_equal(gck_flush(i ? ref : cp, 0, NULL), GCK_OK);
    }
    feed_single(cp, 1, 0);
    feed_single(ref, 1, 0);

    const float *big = in32[0][0][5]; /* long enough for every length below */
    const char *lid[8] = {"a.w", "b", "fresh", "z"};
    const float *v[8] = {big, big, big, big, big};
    size_t n[8] = {7, 513, 4, GCK_PARALLEL_MIN + 77};
    /* count 0 is a no-op, even with NULL arrays */
    const observed o = observe(cp);
    assert_int_equal(gck_accumulate_many_f32(cp, NULL, NULL, NULL, 0, 1), GCK_OK);
    assert_int_equal(gck_accumulate_many_f64(cp, NULL, NULL, NULL, 0, 1), GCK_OK);
    assert_observed(cp, &o);
    assert_int_equal(gck_accumulate_many_f32(NULL, lid, v, n, 4, 0), GCK_ERR_INVALID_ARGUMENT);
    expect_many_error(cp, NULL, v, n, 4, GCK_ERR_INVALID_ARGUMENT, "layer_ids is NULL");
    expect_many_error(cp, lid, NULL, n, 4, GCK_ERR_INVALID_ARGUMENT, "values is NULL");
    expect_many_error(cp, lid, v, NULL, 4, GCK_ERR_INVALID_ARGUMENT, "lens is NULL");
    /* entry errors, named by index, found after good entries */
    lid[3] = NULL;
    expect_many_error(cp, lid, v, n, 4, GCK_ERR_INVALID_ARGUMENT, "entry 3: NULL layer id");
    lid[3] = "";
    expect_many_error(cp, lid, v, n, 4, GCK_ERR_INVALID_ARGUMENT, "entry 3: empty layer id");
    char *longid = malloc(GCK_LAYER_ID_MAX + 2);
    memset(longid, 'x', GCK_LAYER_ID_MAX + 1);
    longid[GCK_LAYER_ID_MAX + 1] = '\0';
    lid[3] = longid;
    expect_many_error(cp, lid, v, n, 4, GCK_ERR_INVALID_ARGUMENT, "entry 3: layer id longer than");
    lid[3] = "z";
    v[2] = NULL;
    expect_many_error(cp, lid, v, n, 4, GCK_ERR_INVALID_ARGUMENT, "entry 2: layer 'fresh': values is NULL");
    v[2] = big;
    /* lengths: against the window, against an earlier entry of a new layer
     * (created by this call, then dropped), of an idle layer */
    n[1] = 512;
    expect_many_error(cp, lid, v, n, 4, GCK_ERR_DIMENSION_MISMATCH,
                      "dimension mismatch for layer 'b': expected 513, got 512");
    n[1] = 513;
    lid[4] = "fresh", n[4] = 5;
    expect_many_error(cp, lid, v, n, 5, GCK_ERR_DIMENSION_MISMATCH,
                      "dimension mismatch for layer 'fresh': expected 4, got 5");
    lid[2] = "was", n[2] = 300, lid[4] = "was", n[4] = 3;
    expect_many_error(cp, lid, v, n, 5, GCK_ERR_DIMENSION_MISMATCH,
                      "dimension mismatch for layer 'was': expected 300, got 3");
    /* the window is intact: one good call on both, then both flush the same */
    lid[4] = "fresh", n[4] = 4;
    lid[2] = "was", n[2] = 3;
    v[0] = in32[2][1][0], v[1] = in32[2][1][2], v[2] = three, v[3] = in32[2][1][5], v[4] = in32[2][2][5];
    assert_int_equal(gck_accumulate_many_f32(cp, lid, v, n, 5, 3), GCK_OK);
    for (int e = 0; e < 5; e++)
        assert_int_equal(gck_accumulate_f32(ref, lid[e], v[e], n[e], 3), GCK_OK);
    gck_checkpoint *ca = NULL, *cb = NULL;
    assert_int_equal(gck_flush(ref, 0, &ca), GCK_OK);
    assert_int_equal(gck_flush(cp, 0, &cb), GCK_OK);
    assert_same_checkpoint(ca, cb, 1);
    gck_checkpoint_release(ca);
    gck_checkpoint_release(cb);
    free(longid);
    gck_checkpointer_destroy(cp);
    gck_checkpointer_destroy(ref);
}

/* ---- pre-clip norm and clip factor ------------------------------------------------- */

static gck_checkpoint *flush_ab(int clip_enabled, double clip_norm, gck_dtype dt, double a0)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.clip_enabled = clip_enabled;
    cfg.clip_norm = clip_norm;
    cfg.dtype = dt;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    const double a[2] = {a0, 0}, b[1] = {4};
    assert_int_equal(gck_accumulate_f64(cp, "a", a, 2, 1), GCK_OK);
    assert_int_equal(gck_accumulate_f64(cp, "b", b, 1, 2), GCK_OK);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 77, &c), GCK_OK);
    gck_checkpointer_destroy(cp);
    return c;
}

static char g_dir[64];

static const char *path_of(const char *name)
{
    static char p[128];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

/* Rewrites the first occurrence of `from` in the file with `to` (same length). */
static void patch_file(const char *path, const char *from, const char *to)
{
    assert_int_equal(strlen(from), strlen(to));
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    const long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)len + 1);
    assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    buf[len] = '\0';
    char *at = NULL;
    for (long i = 0; i + (long)strlen(from) <= len && at == NULL; i++)
        if (memcmp(buf + i, from, strlen(from)) == 0)
            at = buf + i;
    if (at == NULL)
        fail_msg("'%s' not in %s", from, path);
    memcpy(at, to, strlen(to));
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    free(buf);
}

static void test_pre_clip_norm_and_coef(void **state)
{
    (void)state;
    for (int d = 0; d < 2; d++) {
        const gck_dtype dt = d ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        /* clipped: pre-clip 5, factor 1/5, stored norm ~1 */
        gck_checkpoint *c = flush_ab(1, 1.0, dt, 3);
        assert_true(gck_checkpoint_norm_before_clip(c) == 5.0);
        assert_true(gck_checkpoint_clip_coef(c) == 1.0 / 5.0);
        assert_true(fabs(gck_checkpoint_global_norm(c) - 1.0) < 1e-6);
        gck_checkpoint_release(c);
        /* within the bound, and clipping off: factor exactly 1, pre == stored */
        for (int on = 0; on < 2; on++) {
            c = flush_ab(on, 10.0, dt, 3);
            assert_true(gck_checkpoint_clip_coef(c) == 1.0);
            assert_true(gck_checkpoint_norm_before_clip(c) == 5.0 && gck_checkpoint_global_norm(c) == 5.0);
            gck_checkpoint_release(c);
        }
        /* NaN: not clipped */
        c = flush_ab(1, 1.0, dt, NAN);
        assert_true(isnan(gck_checkpoint_norm_before_clip(c)) && gck_checkpoint_clip_coef(c) == 1.0);
        gck_checkpoint_release(c);
    }
    assert_true(isnan(gck_checkpoint_norm_before_clip(NULL)));
    assert_true(isnan(gck_checkpoint_clip_coef(NULL)));
}

static void test_pre_clip_save_load(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/gck_ckpt_into_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    /* 17 significant digits survive; so do NaN and the factor 1 */
    const double a0s[3] = {3.0 + 1.0 / 3.0, NAN, 1.0};
    for (int i = 0; i < 3; i++) {
        gck_checkpoint *c = flush_ab(1, 0.7, GCK_DTYPE_F64, a0s[i]);
        assert_int_equal(gck_checkpoint_save(c, path_of("c.safetensors")), GCK_OK);
        gck_checkpoint *l = NULL;
        assert_int_equal(gck_checkpoint_load(path_of("c.safetensors"), &l), GCK_OK);
        gck_assert_same_f64(gck_checkpoint_norm_before_clip(c), gck_checkpoint_norm_before_clip(l), "pre, i=%d", i);
        gck_assert_same_f64(gck_checkpoint_clip_coef(c), gck_checkpoint_clip_coef(l), "coef, i=%d", i);
        gck_checkpoint_release(l);
        gck_checkpoint_release(c);
    }
    gck_checkpoint *c = flush_ab(1, 0.5, GCK_DTYPE_F32, 3);
    const char *p = path_of("c.safetensors");
    assert_int_equal(gck_checkpoint_save(c, p), GCK_OK);
    /* a file from before these keys: renamed keys (unknown gradckpt. keys are kept, not read) */
    patch_file(p, "checkpoint.norm_before_clip", "checkpoint.norm_before_cliX");
    patch_file(p, "checkpoint.clip_coef", "checkpoint.clip_coeX");
    gck_checkpoint *l = NULL;
    assert_int_equal(gck_checkpoint_load(p, &l), GCK_OK);
    gck_assert_same_f64(gck_checkpoint_global_norm(l), gck_checkpoint_norm_before_clip(l), "default pre-clip norm");
    assert_true(gck_checkpoint_clip_coef(l) == 1.0);
    gck_assert_same_f64(gck_checkpoint_global_norm(c), gck_checkpoint_global_norm(l), "global norm");
    gck_checkpoint_release(l);
    /* bad values are refused */
    static const struct { const char *from, *to; } bad[] = {
        {"\"0.10000000000000001\"", "\"1.10000000000000001\""}, /* coef > 1 */
        {"\"0.10000000000000001\"", "\"-0.1000000000000001\""}, /* coef < 0 */
        {"\"0.10000000000000001\"", "\"0.1000000000000000x\""}, /* not a number */
        {"\"5\"", "\"-\""},                                     /* pre-clip norm not a number */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gck_checkpoint_save(c, p), GCK_OK);
        patch_file(p, bad[i].from, bad[i].to);
        l = (gck_checkpoint *)0x1;
        assert_int_equal(gck_checkpoint_load(p, &l), GCK_ERR_CORRUPT);
        assert_non_null(strstr(gck_last_error(), "bad clip fields"));
        assert_ptr_equal(l, (gck_checkpoint *)0x1);
    }
    gck_checkpoint_release(c);
    remove(p);
    rmdir(g_dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flush_into_equals_flush),
        cmocka_unit_test(test_flush_into_recording_patterns),
        cmocka_unit_test(test_flush_into_errors_change_nothing),
        cmocka_unit_test(test_flush_into_nonfinite),
        cmocka_unit_test(test_allocation_failures_change_nothing),
        cmocka_unit_test(test_list_scratch_failures_change_nothing),
        cmocka_unit_test(test_accumulate_many_equals_single),
        cmocka_unit_test(test_accumulate_many_errors_change_nothing),
        cmocka_unit_test(test_pre_clip_norm_and_coef),
        cmocka_unit_test(test_pre_clip_save_load),
    };
    return cmocka_run_group_tests_name("checkpointer_into", tests, setup_inputs, teardown_inputs);
}
