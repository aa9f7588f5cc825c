/* tests/test_tensors.c - the list functions of tensors.h on one ISA, bit for bit (per ISA).
 *
 * Every function is checked against the single kernels of kernels.h applied
 * tensor by tensor (and the totals against the header's combining rules,
 * written out here independently), against itself on the scalar ISA, and
 * with 1, 2 and 3 OpenMP threads; clipping against PyTorch's formula; every
 * error and allocation failure leaves every tensor and output unchanged.
 * bf16 / f16 lists also against the same lists widened to f32. */
#if !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "support/gck_test.h"

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) the big lists skip
 * the general p (pow terms) in both variants, and clipping tries every max
 * and eps at p = 2 only: minutes under qemu; the pow path is covered by the
 * short lists there and by every list natively. */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif
static int skip_pow_on_big(int big, int finite, double p)
{
    return big && (finite || GCK_TEST_EMULATED) && (p == 3.0 || p == 0.5);
}

#include "alloc_internal.h"
#include "reduce_internal.h"


/* ---- test lists ------------------------------------------------------------------
 * A list's tensors live in one arena (so a copy or a comparison is one
 * memcpy/memcmp), each at a misaligned offset, with dtypes and input
 * families varying by index. */
typedef struct tlist {
    size_t count;
    void **data;
    size_t *lens;
    gck_dtype *dtypes;
    size_t *offs; /* byte offset of each tensor in the arena */
    unsigned char *arena;
    size_t bytes;
    int packed; /* tensors back to back, as pieces of one buffer */
    gck_tensor_list l;
} tlist;

static size_t esz_of(gck_dtype d)
{
    return d == GCK_DTYPE_F64 ? 8 : d == GCK_DTYPE_F32 ? 4 : 2;
}

static int is_half(gck_dtype d)
{
    return d == GCK_DTYPE_BF16 || d == GCK_DTYPE_F16;
}

/* n 2-byte floats of dtype d from family k: the f32 family rounded to d
 * (NaN, Inf, +-0, overflow to Inf), except ILL_SCALED (random finite
 * bits: every exponent) and TINY (random subnormals of d). */
static void fill_half(uint16_t *x, size_t n, gck_dtype d, gck_test_kind k, uint64_t seed)
{
    const int bf = d == GCK_DTYPE_BF16;
    if (k == GCK_K_ILL_SCALED || k == GCK_K_TINY) {
        uint64_t st = seed * 977 + 5;
        const uint16_t emask = bf ? 0x7f80 : 0x7c00;
        for (size_t i = 0; i < n; i++) {
            uint16_t b = (uint16_t)gck_test_rand(&st);
            if (k == GCK_K_TINY)
                b &= (uint16_t)~emask;
            else if ((b & emask) == emask)
                b ^= (uint16_t)(emask & (emask - 0x100)); /* an all-ones exponent made finite */
            x[i] = b;
        }
        return;
    }
    float *f = malloc((n + 1) * sizeof *f);
    gck_test_fill_f32(f, n, k, seed);
    if (bf)
        gck_convert_f32_to_bf16(x, f, n);
    else
        gck_convert_f32_to_f16(x, f, n);
    free(f);
}

/* kinds[] (nkinds of them) cycle over the tensors; dtypes NULL: all F32.
 * packed: each tensor starts where the one before ends (aligned to its
 * element size), as the pieces of a trainer's one buffer. */
static void tl_make_ex(tlist *t, size_t count, const size_t *lens, const gck_dtype *dtypes,
                       const gck_test_kind *kinds, size_t nkinds, uint64_t seed, int packed)
{
    memset(t, 0, sizeof *t);
    t->packed = packed;
    t->count = count;
    t->data = calloc(count + 1, sizeof *t->data);
    t->lens = calloc(count + 1, sizeof *t->lens);
    t->dtypes = calloc(count + 1, sizeof *t->dtypes);
    t->offs = calloc(count + 1, sizeof *t->offs);
    size_t b = 0;
    for (size_t i = 0; i < count; i++) {
        const gck_dtype d = dtypes != NULL ? dtypes[i] : GCK_DTYPE_F32;
        const size_t e = esz_of(d);
        if (packed)
            b = (b + e - 1) / e * e + (i == 0 ? 4 : 0); /* misaligned start */
        else
            b = (b + 63) / 64 * 64 + e * (i % 3); /* misaligned by 0, 1 or 2 elements */
        t->offs[i] = b;
        t->lens[i] = lens[i];
        t->dtypes[i] = d;
        b += lens[i] * e;
    }
    t->bytes = b;
    t->arena = gck_test_alloc(b + 64);
    for (size_t i = 0; i < count; i++) {
        void *p = t->arena + t->offs[i];
        t->data[i] = lens[i] == 0 && i % 2 == 0 ? NULL : p; /* empty tensors: NULL or not */
        const gck_test_kind k = kinds[i % nkinds];
        if (t->dtypes[i] == GCK_DTYPE_F32)
            gck_test_fill_f32(p, lens[i], k, seed + i);
        else if (is_half(t->dtypes[i]))
            fill_half(p, lens[i], t->dtypes[i], k, seed + i);
        else
            gck_test_fill_f64(p, lens[i], k, seed + i);
    }
    t->l = (gck_tensor_list){count, t->data, t->lens, GCK_DTYPE_F32, t->dtypes};
}

static void tl_make(tlist *t, size_t count, const size_t *lens, const gck_dtype *dtypes, const gck_test_kind *kinds,
                    size_t nkinds, uint64_t seed)
{
    tl_make_ex(t, count, lens, dtypes, kinds, nkinds, seed, 0);
}

/* A second list of the same shapes and contents. */
static void tl_clone(tlist *dst, const tlist *src)
{
    static const gck_test_kind z[] = {GCK_K_ZERO};
    tl_make_ex(dst, src->count, src->lens, src->dtypes, z, 1, 0, src->packed);
    memcpy(dst->arena, src->arena, src->bytes);
}

static void tl_copy_values(tlist *dst, const tlist *src)
{
    memcpy(dst->arena, src->arena, src->bytes);
}

static void tl_free(tlist *t)
{
    free(t->data), free(t->lens), free(t->dtypes), free(t->offs), free(t->arena);
    memset(t, 0, sizeof *t);
}

/* Element j of tensor i as a double / its bits. */
static void *tl_ptr(const tlist *t, size_t i)
{
    return t->arena + t->offs[i];
}

/* Fails unless the arenas hold the same values (NaN equals any NaN). */
static void assert_same_values(const tlist *want, const tlist *got, const char *what)
{
    if (memcmp(want->arena, got->arena, want->bytes) == 0)
        return; /* the same bytes; else look for a difference other than NaN payloads */
    for (size_t i = 0; i < want->count; i++)
        for (size_t j = 0; j < want->lens[i]; j++) {
            if (is_half(want->dtypes[i])) {
                const uint16_t w = ((const uint16_t *)tl_ptr(want, i))[j], g = ((const uint16_t *)tl_ptr(got, i))[j];
                const uint16_t e = want->dtypes[i] == GCK_DTYPE_BF16 ? 0x7f80 : 0x7c00;
                const int wn = (w & e) == e && (w & ~(e | 0x8000)) != 0, gn = (g & e) == e && (g & ~(e | 0x8000)) != 0;
                if (w != g && !(wn && gn))
                    fail_msg("%s: tensor %zu [%zu]: want 0x%04x got 0x%04x", what, i, j, w, g);
            } else if (want->dtypes[i] == GCK_DTYPE_F32) {
                const float w = ((const float *)tl_ptr(want, i))[j], g = ((const float *)tl_ptr(got, i))[j];
                if (!gck_same_f32(w, g))
                    fail_msg("%s: tensor %zu [%zu]: want %a got %a", what, i, j, (double)w, (double)g);
            } else {
                const double w = ((const double *)tl_ptr(want, i))[j], g = ((const double *)tl_ptr(got, i))[j];
                if (!gck_same_f64(w, g))
                    fail_msg("%s: tensor %zu [%zu]: want %a got %a", what, i, j, w, g);
            }
        }
}

static void assert_bytes_unchanged(const tlist *want, const tlist *got, const char *what)
{
    if (memcmp(want->arena, got->arena, want->bytes) != 0)
        fail_msg("%s: a tensor was changed", what);
}

/* ---- references: the single kernels, and the header's rules ---------------------- */

static double ref_sumsq(const tlist *t, size_t i)
{
    return t->dtypes[i] == GCK_DTYPE_F32 ? gck_sumsq_f32(tl_ptr(t, i), t->lens[i])
                                         : gck_sumsq_f64(tl_ptr(t, i), t->lens[i]);
}

static double ref_pnorm(const tlist *t, size_t i, double p)
{
    if (p == 2.0)
        return t->dtypes[i] == GCK_DTYPE_F32 ? gck_l2norm_f32(tl_ptr(t, i), t->lens[i])
                                             : gck_l2norm_f64(tl_ptr(t, i), t->lens[i]);
    return t->dtypes[i] == GCK_DTYPE_F32 ? gck_pnorm_f32(tl_ptr(t, i), t->lens[i], p)
                                         : gck_pnorm_f64(tl_ptr(t, i), t->lens[i], p);
}

static double ref_sum(const double *v, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s = s + v[i];
    return s;
}

/* tensors.h's total of the per-tensor results, written from the header. */
static double ref_total(const double *sumsq, const double *norm, size_t n, double p)
{
    if (p == 2.0) {
        const double s = ref_sum(sumsq, n);
        if (isnan(s) || (s >= 0x1p-900 && s < INFINITY))
            return sqrt(s);
    } else if (p == 1.0) {
        return ref_sum(norm, n);
    }
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(norm[i]))
            return NAN;
        m = norm[i] > m ? norm[i] : m;
    }
    if (isinf(p) || m == 0.0 || isinf(m))
        return m;
    const gck_pow_fn pw = gck_pow_ref();
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s = s + (p == 2.0 ? (norm[i] / m) * (norm[i] / m) : pw(norm[i] / m, p));
    return m * (p == 2.0 ? sqrt(s) : pw(s, 1.0 / p));
}

/* Runs fn on the scalar ISA, then selects the ISA under test again. */
#define ON_SCALAR(pair, stmt)                                                   \
    do {                                                                        \
        assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);               \
        stmt;                                                                   \
        assert_int_equal(gck_isa_select((pair)->isa->isa), GCK_OK);             \
    } while (0)

/* ---- the lists every test walks -------------------------------------------------- */

enum { NLISTS = 7 };
static const char *const g_list_names[NLISTS] = {"short",  "many-small", "long-serial", "one-huge",
                                                 "mixed", "extremes",   "packed"};

static const gck_test_kind g_kinds_all[] = {GCK_K_UNIFORM, GCK_K_ILL_SCALED, GCK_K_TINY,     GCK_K_DENORMAL,
                                            GCK_K_ZERO,    GCK_K_UNIFORM,    GCK_K_WITH_NAN, GCK_K_UNIFORM,
                                            GCK_K_WITH_INF, GCK_K_HUGE};
static const gck_test_kind g_kinds_finite[] = {GCK_K_UNIFORM, GCK_K_ILL_SCALED, GCK_K_TINY, GCK_K_DENORMAL,
                                               GCK_K_ZERO, GCK_K_UNIFORM};

/* List number k (see g_list_names); finite: no NaN/Inf/huge inputs. */
static void make_list(tlist *t, int k, int finite, uint64_t seed)
{
    const gck_test_kind *kinds = finite ? g_kinds_finite : g_kinds_all;
    const size_t nk = finite ? sizeof g_kinds_finite / sizeof g_kinds_finite[0] : sizeof g_kinds_all / sizeof g_kinds_all[0];
    size_t lens[300];
    gck_dtype dt[300];
    size_t count = 0;
    uint64_t st = seed * 31 + (uint64_t)k;
    switch (k) {
    case 0: /* short: serial, no allocation */
        count = 9;
        for (size_t i = 0; i < count; i++) {
            static const size_t l[] = {0, 1, 3, 64, 65, 1001, GCK_BLOCK - 1, GCK_BLOCK + 1, 0};
            lens[i] = l[i];
            dt[i] = (i % 3 == 1) ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        }
        break;
    case 1: /* many small tensors, threaded in all */
        count = 220;
        for (size_t i = 0; i < count; i++) {
            lens[i] = (size_t)(gck_test_rand(&st) % (i % 7 == 0 ? 3 * GCK_BLOCK : 700));
            dt[i] = (gck_test_rand(&st) & 1) ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        }
        break;
    case 2: /* more than the stack scratch, still serial */
        count = 150;
        for (size_t i = 0; i < count; i++) {
            lens[i] = (size_t)(gck_test_rand(&st) % 100);
            dt[i] = (i & 1) ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        }
        break;
    case 3: /* one huge tensor: many chunks */
        count = 1;
        lens[0] = (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK * 3 + 4097;
        dt[0] = GCK_DTYPE_F32;
        break;
    case 4: /* big and small mixed, F64 big */
        count = 6;
        {
            const size_t l[] = {5, (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK * 3 + 7, 0, 33, GCK_PARALLEL_MIN + 1, 2};
            const gck_dtype d[] = {GCK_DTYPE_F32, GCK_DTYPE_F64, GCK_DTYPE_F64, GCK_DTYPE_F64, GCK_DTYPE_F32,
                                   GCK_DTYPE_F32};
            for (size_t i = 0; i < count; i++)
                lens[i] = l[i], dt[i] = d[i];
        }
        break;
    case 5: /* extremes: huge F64 squares overflowing, tiny ones underflowing */
        count = 4;
        for (size_t i = 0; i < count; i++) {
            lens[i] = 40 + i;
            dt[i] = GCK_DTYPE_F64;
        }
        break;
    default: /* packed: pieces of one buffer, runs of F32 and F64, empty pieces between */
        count = 60;
        for (size_t i = 0; i < count; i++) {
            lens[i] = i % 9 == 4 ? 0 : (size_t)(gck_test_rand(&st) % 5000);
            dt[i] = (i / 20) % 2 ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        }
        tl_make_ex(t, count, lens, dt, kinds, nk, seed, 1);
        return;
    }
    if (k == 5) {
        static const gck_test_kind ek[] = {GCK_K_HUGE, GCK_K_TINY, GCK_K_DENORMAL, GCK_K_HUGE};
        static const gck_test_kind ek_small[] = {GCK_K_TINY, GCK_K_DENORMAL};
        if (finite)
            tl_make(t, count, lens, dt, ek_small, 2, seed);
        else
            tl_make(t, count, lens, dt, ek, 4, seed);
        return;
    }
    tl_make(t, count, lens, dt, kinds, nk, seed);
}

/* ---- norms ------------------------------------------------------------------------ */

static const double g_ps[] = {2.0, 1.0, 3.0, 0.5, INFINITY};
#define NPS (sizeof g_ps / sizeof g_ps[0])

static void test_sumsq_and_norms(void **state)
{
    const gck_isa_pair *pr = *state;
    for (int k = 0; k < NLISTS; k++) {
        for (int finite = 0; finite < 2; finite++) {
            tlist t;
            make_list(&t, k, finite, 77);
            const size_t n = t.count;
            double *want_s = calloc(n + 1, 8), *want_n = calloc(n + 1, 8), *got = calloc(n + 1, 8);
            for (size_t i = 0; i < n; i++)
                want_s[i] = ref_sumsq(&t, i);
            const double want_total_s = ref_sum(want_s, n);
            for (int th = 1; th <= 3; th++) {
                gck_test_set_threads(th);
                double total = -1.0;
                assert_int_equal(gck_tensors_sumsq(&t.l, got, &total), GCK_OK);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(want_s[i], got[i], "%s sumsq list %s tensor %zu threads %d", pr->isa->name,
                                        g_list_names[k], i, th);
                gck_assert_same_f64(want_total_s, total, "%s sumsq total %s threads %d", pr->isa->name,
                                    g_list_names[k], th);
                double total2 = -1.0;
                assert_int_equal(gck_tensors_sumsq(&t.l, NULL, &total2), GCK_OK);
                gck_assert_same_f64(total, total2, "sumsq total without per_tensor");
                assert_int_equal(gck_tensors_sumsq(&t.l, NULL, NULL), GCK_OK);
            }
            const int big = k == 1 || k == 3 || k == 4;
            for (size_t pi = 0; pi < NPS; pi++) {
                const double p = g_ps[pi];
                if (skip_pow_on_big(big, finite, p))
                    continue; /* SLEEF's scalar pow is slow; natively the non-finite variant covers these */
                for (size_t i = 0; i < n; i++)
                    want_n[i] = ref_pnorm(&t, i, p);
                const double want_total = ref_total(want_s, want_n, n, p);
                double scalar_total = 0.0;
                ON_SCALAR(pr, assert_int_equal(gck_tensors_norm(&t.l, p, NULL, &scalar_total), GCK_OK));
                gck_assert_same_f64(want_total, scalar_total, "%s total p=%g list %s on scalar", pr->isa->name, p,
                                    g_list_names[k]);
                for (int th = 1; th <= 3; th += big && p != 2.0 ? 2 : 1) {
                    gck_test_set_threads(th);
                    double total = -1.0, total2 = -1.0;
                    assert_int_equal(gck_tensors_norm(&t.l, p, got, &total), GCK_OK);
                    for (size_t i = 0; i < n; i++)
                        gck_assert_same_f64(want_n[i], got[i], "%s norm p=%g list %s tensor %zu threads %d",
                                            pr->isa->name, p, g_list_names[k], i, th);
                    gck_assert_same_f64(want_total, total, "%s total p=%g list %s threads %d", pr->isa->name, p,
                                        g_list_names[k], th);
                    if (th == 3 || p == 2.0) { /* without per_tensor: another scratch path */
                        assert_int_equal(gck_tensors_norm(&t.l, p, NULL, &total2), GCK_OK);
                        gck_assert_same_f64(total, total2, "total without per_tensor p=%g", p);
                    }
                }
            }
            free(want_s), free(want_n), free(got);
            tl_free(&t);
        }
    }
    gck_test_set_threads(2);
}

/* The p = 2 total's fallback: summed squares overflow (or underflow) while
 * every norm is finite; and the NaN/Inf and count-0 rules. */
static void test_norm_total_rules(void **state)
{
    (void)state;
    double big[3] = {1e300, -1e300, 3e299}, tiny[2] = {1e-300, -2e-300};
    void *data[3] = {big, tiny, big};
    size_t lens[3] = {3, 2, 3};
    const gck_tensor_list l = {3, data, lens, GCK_DTYPE_F64, NULL};
    double per[3], total;
    assert_int_equal(gck_tensors_norm(&l, 2.0, per, &total), GCK_OK);
    assert_true(isfinite(total));
    const double s[3] = {gck_sumsq_f64(big, 3), gck_sumsq_f64(tiny, 2), gck_sumsq_f64(big, 3)};
    assert_true(isinf(s[0]));
    gck_assert_same_f64(ref_total(s, per, 3, 2.0), total, "overflowing total");
    assert_true(fabs(total / (sqrt(2.0) * gck_l2norm_f64(big, 3)) - 1.0) < 1e-15);
    /* underflow: only tiny tensors */
    void *td[2] = {tiny, tiny};
    size_t ltl[2] = {2, 2};
    const gck_tensor_list lt = {2, td, ltl, GCK_DTYPE_F64, NULL};
    assert_int_equal(gck_tensors_norm(&lt, 2.0, NULL, &total), GCK_OK);
    assert_true(fabs(total / (sqrt(2.0) * gck_l2norm_f64(tiny, 2)) - 1.0) < 1e-15);
    /* count 0: total 0, arrays may be NULL */
    const gck_tensor_list empty = {0, NULL, NULL, GCK_DTYPE_F32, NULL};
    for (size_t pi = 0; pi < NPS; pi++) {
        total = -1.0;
        assert_int_equal(gck_tensors_norm(&empty, g_ps[pi], NULL, &total), GCK_OK);
        gck_assert_same_f64(0.0, total, "count 0");
    }
    total = -1.0;
    assert_int_equal(gck_tensors_sumsq(&empty, NULL, &total), GCK_OK);
    gck_assert_same_f64(0.0, total, "count 0 sumsq");
    assert_int_equal(gck_tensors_div_sumsq(&empty, 3.0, NULL, &total), GCK_OK);
    assert_int_equal(gck_tensors_add(&empty, &empty), GCK_OK);
    assert_int_equal(gck_tensors_axpy(&empty, 2.0, &empty), GCK_OK);
    assert_int_equal(gck_tensors_axpy_init(&empty, 2.0, &empty), GCK_OK);
    assert_int_equal(gck_tensors_scale(&empty, 2.0), GCK_OK);
    gck_clip_info info = {-1, -1, -1};
    assert_int_equal(gck_tensors_clip_by_norm(&empty, 1.0, 2.0, GCK_CLIP_EPS_DEFAULT, 0, &info), GCK_OK);
    assert_true(info.total_norm == 0.0 && info.coef == 1.0 && info.clipped == 0);
    /* a NaN in one tensor makes every total NaN; an Inf (no NaN) makes it Inf */
    double v[4] = {1.0, NAN, 2.0, INFINITY};
    void *d1[2] = {v, v + 2};
    size_t l1[2] = {2, 2};
    const gck_tensor_list ln = {2, d1, l1, GCK_DTYPE_F64, NULL};
    void *d2[1] = {v + 2};
    const gck_tensor_list li = {1, d2, l1, GCK_DTYPE_F64, NULL};
    for (size_t pi = 0; pi < NPS; pi++) {
        assert_int_equal(gck_tensors_norm(&ln, g_ps[pi], NULL, &total), GCK_OK);
        assert_true(isnan(total));
        assert_int_equal(gck_tensors_norm(&li, g_ps[pi], NULL, &total), GCK_OK);
        assert_true(isinf(total) && total > 0);
    }
}

/* The p = 2 total is the checkpointer's global norm: one rule, in common/. */
static void test_total_is_checkpointer_global_norm(void **state)
{
    (void)state;
    for (int f32 = 0; f32 < 2; f32++)
        for (int kind = 0; kind < 3; kind++) { /* ordinary, squares overflowing, squares underflowing */
            gck_config cfg;
            gck_config_init(&cfg);
            cfg.dtype = f32 ? GCK_DTYPE_F32 : GCK_DTYPE_F64;
            gck_checkpointer *cp = NULL;
            assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
            static const gck_test_kind kinds[3] = {GCK_K_ILL_SCALED, GCK_K_HUGE, GCK_K_TINY};
            double v[5000];
            for (int l = 0; l < 12; l++) {
                char id[16];
                snprintf(id, sizeof id, "layer%02d", l);
                const size_t n = (size_t)(l * 397 % 5000);
                gck_test_fill_f64(v, n, kinds[kind], (uint64_t)l + 1);
                for (size_t i = 0; kind == 1 && i < n; i++)
                    v[i] *= 0x1p-20; /* squares overflow, the norm does not */
                assert_int_equal(gck_accumulate_f64(cp, id, v, n, 1), GCK_OK);
            }
            gck_checkpoint *c = NULL;
            assert_int_equal(gck_flush(cp, 1, &c), GCK_OK);
            const size_t nl = gck_checkpoint_num_layers(c);
            void *data[12];
            size_t lens[12];
            double norms[12];
            for (size_t i = 0; i < nl; i++) {
                gck_tensor_view tv;
                assert_int_equal(gck_checkpoint_layer(c, i, &tv), GCK_OK);
                data[i] = (void *)(uintptr_t)tv.values;
                lens[i] = tv.n;
                norms[i] = tv.norm;
            }
            const gck_tensor_list l = {nl, data, lens, cfg.dtype, NULL};
            double per[12], total = -1;
            assert_int_equal(gck_tensors_norm(&l, 2.0, per, &total), GCK_OK);
            gck_assert_same_f64(gck_checkpoint_global_norm(c), total, "global norm, f32 %d kind %d", f32, kind);
            for (size_t i = 0; i < nl; i++)
                gck_assert_same_f64(norms[i], per[i], "layer %zu norm, f32 %d kind %d", i, f32, kind);
            gck_checkpoint_release(c);
            gck_checkpointer_destroy(cp);
        }
}

/* ---- elementwise ------------------------------------------------------------------- */

typedef enum { OP_ADD, OP_AXPY, OP_AXPY_INIT, OP_SCALE } ew_op;
static const char *const g_ew_names[] = {"add", "axpy", "axpy_init", "scale"};

/* The single kernel for tensor i of the pair. */
static void ref_ew(ew_op op, tlist *a, const tlist *x, size_t i, double w)
{
    void *pa = tl_ptr(a, i);
    const size_t n = a->lens[i];
    const int a32 = a->dtypes[i] == GCK_DTYPE_F32;
    if (op == OP_SCALE) {
        if (a32)
            gck_scale_f32(pa, (float)w, n);
        else
            gck_scale_f64(pa, w, n);
        return;
    }
    const void *px = tl_ptr(x, i);
    const int x32 = x->dtypes[i] == GCK_DTYPE_F32;
    const float wf = (float)w;
    switch (op * 4 + a32 * 2 + x32) {
    case OP_ADD * 4 + 0: gck_add_f64(pa, px, n); break;
    case OP_ADD * 4 + 1: gck_add_f32_to_f64(pa, px, n); break;
    case OP_ADD * 4 + 2: gck_add_f64_to_f32(pa, px, n); break;
    case OP_ADD * 4 + 3: gck_add_f32(pa, px, n); break;
    case OP_AXPY * 4 + 0: gck_axpy_f64(pa, w, px, n); break;
    case OP_AXPY * 4 + 1: gck_axpy_f32_to_f64(pa, w, px, n); break;
    case OP_AXPY * 4 + 2: gck_axpy_f64_to_f32(pa, wf, px, n); break;
    case OP_AXPY * 4 + 3: gck_axpy_f32(pa, wf, px, n); break;
    case OP_AXPY_INIT * 4 + 0: gck_axpy_init_f64(pa, w, px, n); break;
    case OP_AXPY_INIT * 4 + 1: gck_axpy_init_f32_to_f64(pa, w, px, n); break;
    case OP_AXPY_INIT * 4 + 2: gck_axpy_init_f64_to_f32(pa, wf, px, n); break;
    default: gck_axpy_init_f32(pa, wf, px, n); break;
    }
}

static gck_status run_ew(ew_op op, const tlist *a, const tlist *x, double w)
{
    switch (op) {
    case OP_ADD: return gck_tensors_add(&a->l, &x->l);
    case OP_AXPY: return gck_tensors_axpy(&a->l, w, &x->l);
    case OP_AXPY_INIT: return gck_tensors_axpy_init(&a->l, w, &x->l);
    default: return gck_tensors_scale(&a->l, w);
    }
}

/* op(acc, x, w) on the scalar ISA (through ON_SCALAR) and with 1, 2 and 3
 * threads, each from acc's values into got, must give want. */
static void ew_all_threads(const gck_isa_pair *pr, ew_op op, const tlist *acc, const tlist *x, double w,
                           const tlist *want, tlist *got, const char *label, const char *list_name)
{
    for (int th = 0; th <= 3; th++) {
        tl_copy_values(got, acc);
        if (th == 0) {
            ON_SCALAR(pr, assert_int_equal(run_ew(op, got, x, w), GCK_OK));
        } else {
            gck_test_set_threads(th);
            assert_int_equal(run_ew(op, got, x, w), GCK_OK);
        }
        char what[128];
        snprintf(what, sizeof what, "%s %s %sw=%g list %s threads %d (0: scalar)", pr->isa->name, g_ew_names[op],
                 label, w, list_name, th);
        assert_same_values(want, got, what);
    }
}

static void test_elementwise(void **state)
{
    const gck_isa_pair *pr = *state;
    static const double ws[] = {0.3, -1.7, 1.0};
    for (int k = 0; k < NLISTS; k++) {
        tlist acc, x, want, got;
        make_list(&acc, k, 0, 5);
        /* x: the same lengths, mixed precision pairs (x's dtype flipped on every third tensor) */
        gck_dtype *xd = malloc((acc.count + 1) * sizeof *xd);
        for (size_t i = 0; i < acc.count; i++) {
            /* packed: x packed too, same dtypes but for a few (runs merge, then break) */
            const int flip = acc.packed ? (i >= 30 && i < 40 && i % 3 == 2) : i % 3 == 2;
            xd[i] = !flip ? acc.dtypes[i] : acc.dtypes[i] == GCK_DTYPE_F32 ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
        }
        tl_make_ex(&x, acc.count, acc.lens, xd, g_kinds_all, sizeof g_kinds_all / sizeof g_kinds_all[0], 6,
                   acc.packed);
        free(xd);
        tl_clone(&want, &acc);
        tl_clone(&got, &acc);
        for (int op = OP_ADD; op <= OP_SCALE; op++) {
            for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++) {
                const double w = ws[wi];
                tl_copy_values(&want, &acc);
                for (size_t i = 0; i < acc.count; i++)
                    ref_ew((ew_op)op, &want, &x, i, w);
                ew_all_threads(pr, (ew_op)op, &acc, &x, w, &want, &got, "", g_list_names[k]);
            }
        }
        /* in place: x is the target itself */
        for (int op = OP_ADD; op <= OP_AXPY_INIT; op++) {
            tl_copy_values(&want, &acc);
            tlist xs;
            tl_clone(&xs, &acc);
            for (size_t i = 0; i < acc.count; i++)
                ref_ew((ew_op)op, &want, &xs, i, 0.75);
            tl_free(&xs);
            tl_copy_values(&got, &acc);
            gck_test_set_threads(2);
            assert_int_equal(run_ew((ew_op)op, &got, &got, 0.75), GCK_OK);
            assert_same_values(&want, &got, g_ew_names[op]);
        }
        tl_free(&acc), tl_free(&x), tl_free(&want), tl_free(&got);
    }
    gck_test_set_threads(2);
}

/* ---- div_sumsq ----------------------------------------------------------------------- */

static void test_div_sumsq(void **state)
{
    const gck_isa_pair *pr = *state;
    /* powers of two (multiplied by 1/d inside when that is exact) and others */
    static const double ds[] = {4.0, 3.0, 0.5, -2.0, 0x1p-126, 0x1p-127, 0x1p126, 0x1p127, 0x1p-1022, 0x1p1022,
                                0x1p1023, 0x1p-1050, 7.0, 1.0, 0.0, INFINITY, NAN};
    for (int k = 0; k < NLISTS; k++) {
        tlist t, want, got;
        make_list(&t, k, 0, 9);
        tl_clone(&want, &t);
        tl_clone(&got, &t);
        const size_t n = t.count;
        double *ws = calloc(n + 1, 8), *gs = calloc(n + 1, 8);
        for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
            const double d = ds[di];
            if ((k == 1 || k == 3 || k == 4) && di > 3)
                continue; /* the big lists: a few divisors are enough */
            tl_copy_values(&want, &t);
            /* the definition: plain division, then the single kernel's sum of squares */
            for (size_t i = 0; i < n; i++) {
                if (want.dtypes[i] == GCK_DTYPE_F32) {
                    float *v = tl_ptr(&want, i);
                    const float df = (float)d;
                    for (size_t j = 0; j < want.lens[i]; j++)
                        v[j] = v[j] / df;
                    ws[i] = gck_sumsq_f32(v, want.lens[i]);
                } else {
                    double *v = tl_ptr(&want, i);
                    for (size_t j = 0; j < want.lens[i]; j++)
                        v[j] = v[j] / d;
                    ws[i] = gck_sumsq_f64(v, want.lens[i]);
                }
            }
            const double wtotal = ref_sum(ws, n);
            for (int th = 0; th <= 3; th++) {
                tl_copy_values(&got, &t);
                double total = -1.0;
                if (th == 0) {
                    ON_SCALAR(pr, assert_int_equal(gck_tensors_div_sumsq(&got.l, d, gs, &total), GCK_OK));
                } else {
                    gck_test_set_threads(th);
                    assert_int_equal(gck_tensors_div_sumsq(&got.l, d, gs, &total), GCK_OK);
                }
                char what[128];
                snprintf(what, sizeof what, "%s div_sumsq d=%a list %s threads %d (0: scalar)", pr->isa->name, d,
                         g_list_names[k], th);
                assert_same_values(&want, &got, what);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(ws[i], gs[i], "%s tensor %zu", what, i);
                gck_assert_same_f64(wtotal, total, "%s total", what);
            }
            /* the single kernels agree with the definition too */
            tl_copy_values(&got, &t);
            for (size_t i = 0; i < n; i++) {
                void *v = tl_ptr(&got, i);
                gs[i] = got.dtypes[i] == GCK_DTYPE_F32 ? gck_div_sumsq_f32(v, v, (float)d, got.lens[i])
                                                       : gck_div_sumsq_f64(v, v, d, got.lens[i]);
                gck_assert_same_f64(ws[i], gs[i], "%s single div_sumsq d=%a tensor %zu", pr->isa->name, d, i);
            }
            assert_same_values(&want, &got, "single div_sumsq");
        }
        free(ws), free(gs);
        tl_free(&t), tl_free(&want), tl_free(&got);
    }
    gck_test_set_threads(2);
}

/* ---- axpy_div_sumsq: the two calls fused, the same bits ------------------------------ */

static void test_axpy_div_sumsq(void **state)
{
    const gck_isa_pair *pr = *state;
    static const double ds[] = {4.0, 3.0, 0.5, 0x1p-1050, 1.0, 0.0, NAN};
    static const double ws[] = {1.0, 0.3, -1.7};
    for (int k = 0; k < NLISTS; k++) {
        tlist acc, x, want, got;
        make_list(&acc, k, 0, 13);
        /* x: mixed precision pairs on every third tensor, as test_elementwise,
         * and 16-bit micro-batch gradients on others */
        gck_dtype *xd = malloc((acc.count + 1) * sizeof *xd);
        for (size_t i = 0; i < acc.count; i++) {
            const int flip = acc.packed ? (i >= 30 && i < 40 && i % 3 == 2) : i % 3 == 2;
            xd[i] = !flip ? acc.dtypes[i] : acc.dtypes[i] == GCK_DTYPE_F32 ? GCK_DTYPE_F64 : GCK_DTYPE_F32;
            if (!acc.packed && i % 5 == 4)
                xd[i] = i % 2 ? GCK_DTYPE_BF16 : GCK_DTYPE_F16;
        }
        tl_make_ex(&x, acc.count, acc.lens, xd, g_kinds_all, sizeof g_kinds_all / sizeof g_kinds_all[0], 14,
                   acc.packed);
        free(xd);
        tl_clone(&want, &acc);
        tl_clone(&got, &acc);
        const size_t n = acc.count;
        double *wper = calloc(n + 1, 8), *gper = calloc(n + 1, 8);
        for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
            const double d = ds[di], w = ws[di % 3];
            if ((k == 1 || k == 3 || k == 4) && di > 2)
                continue; /* the big lists: a few divisors are enough */
            /* the definition: the two list calls one after the other */
            tl_copy_values(&want, &acc);
            double wtotal = -1.0;
            gck_test_set_threads(1);
            assert_int_equal(gck_tensors_axpy(&want.l, w, &x.l), GCK_OK);
            assert_int_equal(gck_tensors_div_sumsq(&want.l, d, wper, &wtotal), GCK_OK);
            for (int th = 0; th <= 3; th++) {
                tl_copy_values(&got, &acc);
                double total = -1.0;
                if (th == 0) {
                    ON_SCALAR(pr, assert_int_equal(gck_tensors_axpy_div_sumsq(&got.l, w, &x.l, d, gper, &total),
                                                   GCK_OK));
                } else {
                    gck_test_set_threads(th);
                    assert_int_equal(gck_tensors_axpy_div_sumsq(&got.l, w, &x.l, d, gper, &total), GCK_OK);
                }
                char what[128];
                snprintf(what, sizeof what, "%s axpy_div_sumsq w=%g d=%a list %s threads %d (0: scalar)",
                         pr->isa->name, w, d, g_list_names[k], th);
                assert_same_values(&want, &got, what);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(wper[i], gper[i], "%s tensor %zu", what, i);
                gck_assert_same_f64(wtotal, total, "%s total", what);
            }
        }
        /* in place (x is acc) and without outputs */
        tl_copy_values(&want, &acc);
        gck_test_set_threads(2);
        assert_int_equal(gck_tensors_axpy(&want.l, 0.75, &want.l), GCK_OK);
        assert_int_equal(gck_tensors_div_sumsq(&want.l, 3.0, NULL, NULL), GCK_OK);
        tl_copy_values(&got, &acc);
        assert_int_equal(gck_tensors_axpy_div_sumsq(&got.l, 0.75, &got.l, 3.0, NULL, NULL), GCK_OK);
        assert_same_values(&want, &got, "axpy_div_sumsq in place");
        free(wper), free(gper);
        tl_free(&acc), tl_free(&x), tl_free(&want), tl_free(&got);
    }
    gck_test_set_threads(2);
}

/* x * (1/d) == x / d for the divisors the list and single kernels multiply
 * by, over every float and a sweep of doubles (all exponents, denormals). */
static void test_exact_reciprocal(void **state)
{
    (void)state;
    static const float fd[] = {2.0f, 4.0f, 0.25f, -8.0f, 0x1p-126f, 0x1p126f, 1.0f};
    for (size_t di = 0; di < sizeof fd / sizeof fd[0]; di++) {
        const float r = gck_exact_recip_f32(fd[di]);
        assert_true(r != 0.0f);
        for (uint64_t b = 0; b < (UINT64_C(1) << 32); b += 4093) {
            float x;
            const uint32_t u = (uint32_t)b;
            memcpy(&x, &u, 4);
            if (!gck_same_f32(x / fd[di], x * r))
                fail_msg("f32 x=%a d=%a: %a vs %a", (double)x, (double)fd[di], (double)(x / fd[di]), (double)(x * r));
        }
    }
    static const double dd[] = {2.0, 4.0, 0.25, -8.0, 0x1p-1022, 0x1p1022, 1.0};
    uint64_t st = 3;
    for (size_t di = 0; di < sizeof dd / sizeof dd[0]; di++) {
        const double r = gck_exact_recip_f64(dd[di]);
        assert_true(r != 0.0);
        for (int i = 0; i < 2000000; i++) {
            const uint64_t u = gck_test_rand(&st);
            double x;
            memcpy(&x, &u, 8);
            if (!gck_same_f64(x / dd[di], x * r))
                fail_msg("f64 x=%a d=%a", x, dd[di]);
        }
    }
    /* not exact or subnormal (FTZ/DAZ would treat them as 0): refused */
    static const double bad[] = {3.0, 0x1p1023, 0x1p-1023, 0x1p-1074, 0.0, INFINITY, NAN, 0.1};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_true(gck_exact_recip_f64(bad[i]) == 0.0);
    static const float badf[] = {3.0f, 0x1p127f, 0x1p-127f, 0x1p-149f, 0.0f, INFINITY, NAN};
    for (size_t i = 0; i < sizeof badf / sizeof badf[0]; i++)
        assert_true(gck_exact_recip_f32(badf[i]) == 0.0f);
}

/* ---- clipping ------------------------------------------------------------------------- */

/* torch.nn.utils.clip_grad_norm_ on the values of want, given the total:
 * clip_coef = max_norm / (total + eps); clamped = clamp(clip_coef, max=1)
 * (NaN stays NaN); every element multiplied by clamped (F32: by
 * (float)clamped, as the tensors are float). Returns clamped. */
static double torch_clip(tlist *want, double total, double max_norm, double eps)
{
    const double coef = max_norm / (total + eps);
    const double clamped = isnan(coef) ? coef : (coef > 1.0 ? 1.0 : coef);
    for (size_t i = 0; i < want->count; i++) {
        if (want->dtypes[i] == GCK_DTYPE_F32) {
            float *v = tl_ptr(want, i);
            for (size_t j = 0; j < want->lens[i]; j++)
                v[j] = v[j] * (float)clamped;
        } else {
            double *v = tl_ptr(want, i);
            for (size_t j = 0; j < want->lens[i]; j++)
                v[j] = v[j] * clamped;
        }
    }
    return clamped;
}

/* A copy of t's arena in read-only pages: any write crashes the test. */
typedef struct ro_list {
    tlist t;
    unsigned char *map;
    size_t map_bytes;
} ro_list;

static void ro_make(ro_list *r, const tlist *src)
{
    tl_clone(&r->t, src);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    r->map_bytes = (src->bytes + 64 + page - 1) / page * page;
    r->map = mmap(NULL, r->map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(r->map != MAP_FAILED);
    memcpy(r->map, src->arena, src->bytes);
    for (size_t i = 0; i < src->count; i++)
        r->t.data[i] = src->data[i] == NULL ? NULL : r->map + src->offs[i];
    assert_int_equal(mprotect(r->map, r->map_bytes, PROT_READ), 0);
}

static void ro_free(ro_list *r)
{
    assert_int_equal(memcmp(r->map, r->t.arena, r->t.bytes), 0);
    munmap(r->map, r->map_bytes);
    tl_free(&r->t);
}

static void test_clip(void **state)
{
    const gck_isa_pair *pr = *state;
    static const double eps_v[] = {GCK_CLIP_EPS_DEFAULT, 0.0, 0.5};
    for (int k = 0; k < NLISTS; k++) {
        for (int finite = 0; finite < 2; finite++) {
            tlist t, want, got;
            make_list(&t, k, finite, 21);
            tl_clone(&want, &t);
            tl_clone(&got, &t);
            /* the big lists: fewer combinations (they test the split, not the formula;
             * test_sumsq_and_norms covers their general-p norms) */
            size_t elems = 0;
            for (size_t i = 0; i < t.count; i++)
                elems += t.lens[i];
            const int big = elems > 50000;
            for (size_t pi = 0; pi < (big ? 1 : NPS); pi++) {
                const double p = g_ps[pi];
                double total;
                assert_int_equal(gck_tensors_norm(&t.l, p, NULL, &total), GCK_OK);
                const double maxes[] = {total / 2, total * 2, 0.0, INFINITY, 1.0};
                /* emulated: every max and eps at p = 2 only (the clip formula does not depend on p) */
                const int few = big || (GCK_TEST_EMULATED && p != 2.0);
                for (size_t mi = 0; mi < (few ? 2 : sizeof maxes / sizeof maxes[0]); mi++) {
                    const double max_norm = isnan(maxes[mi]) ? 1.0 : maxes[mi];
                    for (size_t ei = 0; ei < (few ? 1 : sizeof eps_v / sizeof eps_v[0]); ei++) {
                        const double eps = eps_v[ei];
                        tl_copy_values(&want, &t);
                        const double coef = torch_clip(&want, total, max_norm, eps);
                        const int clips = coef < 1.0 || isnan(coef);
                        for (int th = 0; th <= 3; th++) {
                            char what[160];
                            snprintf(what, sizeof what, "%s clip p=%g max=%g eps=%g list %s%s threads %d",
                                     pr->isa->name, p, max_norm, eps, g_list_names[k], finite ? " finite" : "", th);
                            gck_clip_info info = {-1, -1, -1};
                            tl_copy_values(&got, &t);
                            if (th == 0) {
                                ON_SCALAR(pr, assert_int_equal(
                                                  gck_tensors_clip_by_norm(&got.l, max_norm, p, eps, 0, &info), GCK_OK));
                            } else {
                                gck_test_set_threads(th);
                                assert_int_equal(gck_tensors_clip_by_norm(&got.l, max_norm, p, eps, 0, &info), GCK_OK);
                            }
                            assert_same_values(&want, &got, what);
                            gck_assert_same_f64(total, info.total_norm, "%s: info.total_norm", what);
                            gck_assert_same_f64(coef, info.coef, "%s: info.coef", what);
                            assert_int_equal(info.clipped, clips);
                            /* the same with the norm given */
                            gck_clip_info info2 = {-1, -1, -1};
                            tl_copy_values(&got, &t);
                            assert_int_equal(gck_tensors_clip_with_norm(&got.l, max_norm, total, eps, 0, &info2),
                                             GCK_OK);
                            assert_same_values(&want, &got, what);
                            gck_assert_same_f64(info.total_norm, info2.total_norm, "%s: with norm", what);
                            gck_assert_same_f64(info.coef, info2.coef, "%s: with norm", what);
                            assert_int_equal(info.clipped, info2.clipped);
                        }
                        if (!clips) {
                            /* nothing is written when it does not clip: read-only memory survives */
                            ro_list r;
                            ro_make(&r, &t);
                            gck_clip_info info = {-1, -1, -1};
                            assert_int_equal(gck_tensors_clip_by_norm(&r.t.l, max_norm, p, eps, 0, &info), GCK_OK);
                            assert_int_equal(info.clipped, 0);
                            assert_int_equal(gck_tensors_clip_with_norm(&r.t.l, max_norm, total, eps, 0, &info),
                                             GCK_OK);
                            ro_free(&r);
                        }
                    }
                }
                /* error_if_nonfinite: a NaN/Inf total fails and writes nothing; a finite one clips as usual */
                ro_list r;
                ro_make(&r, &t);
                gck_clip_info info = {-1, -1, -1};
                const gck_status s =
                    gck_tensors_clip_by_norm(&r.t.l, INFINITY, p, GCK_CLIP_EPS_DEFAULT, GCK_CLIP_ERROR_IF_NONFINITE, &info);
                if (isfinite(total)) {
                    assert_int_equal(s, GCK_OK);
                } else {
                    assert_int_equal(s, GCK_ERR_NONFINITE);
                    assert_non_null(strstr(gck_last_error(), isnan(total) ? "NaN" : "infinite"));
                    gck_assert_same_f64(total, info.total_norm, "nonfinite info.total_norm");
                    assert_int_equal(info.clipped, 0);
                    /* even with a max_norm that would clip */
                    assert_int_equal(gck_tensors_clip_by_norm(&r.t.l, 0.0, p, 0.0, GCK_CLIP_ERROR_IF_NONFINITE, NULL),
                                     GCK_ERR_NONFINITE);
                    assert_int_equal(
                        gck_tensors_clip_with_norm(&r.t.l, 0.0, total, 0.0, GCK_CLIP_ERROR_IF_NONFINITE, NULL),
                        GCK_ERR_NONFINITE);
                }
                ro_free(&r);
            }
            tl_free(&t), tl_free(&want), tl_free(&got);
        }
    }
    gck_test_set_threads(2);
}

/* ---- bf16 / f16 lists ------------------------------------------------------------------
 * A list of 2-byte tensors gives exactly what the single kernels give tensor
 * by tensor, and exactly what the same list widened to f32 gives (per tensor
 * and in total); scaling and clipping are gck_scale_bf16 / _f16 by the f32
 * coefficient; 16-bit x lists accumulate into f32 / f64 lists as their
 * widened f32 copies would. */

enum { NHALF = 7 };
static const char *const g_half_names[NHALF] = {"short",  "2000-small", "one-huge", "mixed",
                                                "packed", "every-bits", "empty"};

/* Half list number k; finite: no NaN/Inf. */
static void make_half_list(tlist *t, int k, int finite, uint64_t seed)
{
    const gck_test_kind *kinds = finite ? g_kinds_finite : g_kinds_all;
    const size_t nk = finite ? sizeof g_kinds_finite / sizeof g_kinds_finite[0] : sizeof g_kinds_all / sizeof g_kinds_all[0];
    enum { MAXC = 2000 };
    size_t *lens = calloc(MAXC, sizeof *lens);
    gck_dtype *dt = calloc(MAXC, sizeof *dt);
    size_t count = 0;
    int packed = 0;
    uint64_t st = seed * 131 + (uint64_t)k;
    switch (k) {
    case 0: /* short: serial, both 16-bit dtypes */
        count = 9;
        for (size_t i = 0; i < count; i++) {
            static const size_t l[] = {0, 1, 3, 64, 65, 1001, GCK_BLOCK - 1, GCK_BLOCK + 1, 0};
            lens[i] = l[i];
            dt[i] = (i % 2) ? GCK_DTYPE_F16 : GCK_DTYPE_BF16;
        }
        break;
    case 1: /* 2000 small bf16 tensors: threaded, heap work list and scratch */
        count = MAXC;
        for (size_t i = 0; i < count; i++) {
            lens[i] = (size_t)(gck_test_rand(&st) % (i % 97 == 0 ? 2 * GCK_BLOCK : 200));
            dt[i] = GCK_DTYPE_BF16;
        }
        break;
    case 2: /* one huge f16 tensor: many chunks */
        count = 1;
        lens[0] = (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK * 3 + 4097;
        dt[0] = GCK_DTYPE_F16;
        break;
    case 3: /* bf16, f16, f32, f64 together */
        count = 8;
        for (size_t i = 0; i < count; i++) {
            static const gck_dtype d[4] = {GCK_DTYPE_BF16, GCK_DTYPE_F32, GCK_DTYPE_F16, GCK_DTYPE_F64};
            lens[i] = i == 2 ? (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK * 2 + 9 : (size_t)(gck_test_rand(&st) % 20000);
            dt[i] = d[i % 4];
        }
        break;
    case 4: /* packed: pieces of one buffer, runs of bf16 and f16, empty pieces between */
        count = 60;
        packed = 1;
        for (size_t i = 0; i < count; i++) {
            lens[i] = i % 9 == 4 ? 0 : (size_t)(gck_test_rand(&st) % 5000);
            dt[i] = (i / 20) % 2 ? GCK_DTYPE_F16 : GCK_DTYPE_BF16;
        }
        break;
    case 5: /* every 16-bit pattern of each dtype (finite: the finite ones) */
        count = 2;
        lens[0] = lens[1] = 65536;
        dt[0] = GCK_DTYPE_BF16, dt[1] = GCK_DTYPE_F16;
        break;
    default: /* no tensors */
        count = 0;
        break;
    }
    tl_make_ex(t, count, lens, dt, kinds, nk, seed, packed);
    if (k == 5)
        for (size_t i = 0; i < 2; i++) {
            uint16_t *x = tl_ptr(t, i);
            const uint16_t e = dt[i] == GCK_DTYPE_BF16 ? 0x7f80 : 0x7c00;
            for (uint32_t b = 0; b < 65536; b++)
                x[b] = finite && ((uint16_t)b & e) == e ? (uint16_t)(b & 0x83ff) : (uint16_t)b;
        }
    free(lens), free(dt);
}

/* dst: t with every 16-bit tensor widened exactly to f32 (same layout rules). */
static void tl_widen(tlist *dst, const tlist *t)
{
    static const gck_test_kind z[] = {GCK_K_ZERO};
    gck_dtype *dt = malloc((t->count + 1) * sizeof *dt);
    for (size_t i = 0; i < t->count; i++)
        dt[i] = is_half(t->dtypes[i]) ? GCK_DTYPE_F32 : t->dtypes[i];
    tl_make_ex(dst, t->count, t->lens, dt, z, 1, 0, t->packed);
    free(dt);
    for (size_t i = 0; i < t->count; i++) {
        const size_t n = t->lens[i];
        if (t->dtypes[i] == GCK_DTYPE_BF16)
            gck_convert_bf16_to_f32(tl_ptr(dst, i), tl_ptr(t, i), n);
        else if (t->dtypes[i] == GCK_DTYPE_F16)
            gck_convert_f16_to_f32(tl_ptr(dst, i), tl_ptr(t, i), n);
        else
            memcpy(tl_ptr(dst, i), tl_ptr(t, i), n * esz_of(t->dtypes[i]));
    }
}

/* The single kernels of a 16-bit tensor (others: ref_sumsq / ref_pnorm). */
static double ref_sumsq_any(const tlist *t, size_t i)
{
    if (t->dtypes[i] == GCK_DTYPE_BF16)
        return gck_sumsq_bf16(tl_ptr(t, i), t->lens[i]);
    if (t->dtypes[i] == GCK_DTYPE_F16)
        return gck_sumsq_f16(tl_ptr(t, i), t->lens[i]);
    return ref_sumsq(t, i);
}

static double ref_pnorm_any(const tlist *t, size_t i, double p)
{
    const int bf = t->dtypes[i] == GCK_DTYPE_BF16;
    if (!is_half(t->dtypes[i]))
        return ref_pnorm(t, i, p);
    if (p == 2.0)
        return bf ? gck_l2norm_bf16(tl_ptr(t, i), t->lens[i]) : gck_l2norm_f16(tl_ptr(t, i), t->lens[i]);
    return bf ? gck_pnorm_bf16(tl_ptr(t, i), t->lens[i], p) : gck_pnorm_f16(tl_ptr(t, i), t->lens[i], p);
}

static void ref_scale_any(tlist *t, size_t i, double s)
{
    void *p = tl_ptr(t, i);
    switch (t->dtypes[i]) {
    case GCK_DTYPE_BF16: gck_scale_bf16(p, (float)s, t->lens[i]); break;
    case GCK_DTYPE_F16: gck_scale_f16(p, (float)s, t->lens[i]); break;
    case GCK_DTYPE_F32: gck_scale_f32(p, (float)s, t->lens[i]); break;
    default: gck_scale_f64(p, s, t->lens[i]); break;
    }
}

static void test_half_norms(void **state)
{
    const gck_isa_pair *pr = *state;
    for (int k = 0; k < NHALF; k++) {
        for (int finite = 0; finite < 2; finite++) {
            tlist t, wide;
            make_half_list(&t, k, finite, 21);
            tl_widen(&wide, &t);
            const size_t n = t.count;
            double *want_s = calloc(n + 1, 8), *want_n = calloc(n + 1, 8), *got = calloc(n + 1, 8),
                   *wg = calloc(n + 1, 8);
            for (size_t i = 0; i < n; i++)
                want_s[i] = ref_sumsq_any(&t, i);
            for (int th = 0; th <= 3; th++) {
                double total = -1.0, wtotal = -2.0;
                if (th == 0) {
                    ON_SCALAR(pr, assert_int_equal(gck_tensors_sumsq(&t.l, got, &total), GCK_OK));
                } else {
                    gck_test_set_threads(th);
                    assert_int_equal(gck_tensors_sumsq(&t.l, got, &total), GCK_OK);
                }
                assert_int_equal(gck_tensors_sumsq(&wide.l, wg, &wtotal), GCK_OK);
                for (size_t i = 0; i < n; i++) {
                    gck_assert_same_f64(want_s[i], got[i], "%s half sumsq %s tensor %zu threads %d", pr->isa->name,
                                        g_half_names[k], i, th);
                    gck_assert_same_f64(wg[i], got[i], "%s half sumsq vs widened %s tensor %zu", pr->isa->name,
                                        g_half_names[k], i);
                }
                gck_assert_same_f64(ref_sum(want_s, n), total, "%s half sumsq total %s threads %d", pr->isa->name,
                                    g_half_names[k], th);
                gck_assert_same_f64(wtotal, total, "%s half sumsq total vs widened %s", pr->isa->name,
                                    g_half_names[k]);
            }
            const int big = k == 1 || k == 2 || k == 3;
            for (size_t pi = 0; pi < NPS; pi++) {
                const double p = g_ps[pi];
                if (skip_pow_on_big(big, finite, p))
                    continue; /* SLEEF's scalar pow is slow; natively the non-finite variant covers these */
                for (size_t i = 0; i < n; i++)
                    want_n[i] = ref_pnorm_any(&t, i, p);
                const double want_total = ref_total(want_s, want_n, n, p);
                double wtotal = -2.0;
                assert_int_equal(gck_tensors_norm(&wide.l, p, wg, &wtotal), GCK_OK);
                gck_assert_same_f64(wtotal, want_total, "%s widened total p=%g %s", pr->isa->name, p,
                                    g_half_names[k]);
                for (int th = 0; th <= 3; th += big && p != 2.0 ? 3 : 1) {
                    double total = -1.0, total2 = -1.0;
                    if (th == 0) {
                        ON_SCALAR(pr, assert_int_equal(gck_tensors_norm(&t.l, p, got, &total), GCK_OK));
                    } else {
                        gck_test_set_threads(th);
                        assert_int_equal(gck_tensors_norm(&t.l, p, got, &total), GCK_OK);
                    }
                    for (size_t i = 0; i < n; i++) {
                        gck_assert_same_f64(want_n[i], got[i], "%s half norm p=%g %s tensor %zu threads %d",
                                            pr->isa->name, p, g_half_names[k], i, th);
                        gck_assert_same_f64(wg[i], got[i], "%s half norm vs widened p=%g %s tensor %zu",
                                            pr->isa->name, p, g_half_names[k], i);
                    }
                    gck_assert_same_f64(want_total, total, "%s half total p=%g %s threads %d", pr->isa->name, p,
                                        g_half_names[k], th);
                    assert_int_equal(gck_tensors_norm(&t.l, p, NULL, &total2), GCK_OK);
                    gck_assert_same_f64(total, total2, "half total without per_tensor p=%g", p);
                }
            }
            free(want_s), free(want_n), free(got), free(wg);
            tl_free(&t), tl_free(&wide);
        }
    }
    gck_test_set_threads(2);
}

/* The single kernel for acc tensor i (F32 or F64) and x tensor i (any). */
static void ref_pair_any(ew_op op, tlist *a, const tlist *x, size_t i, double w)
{
    void *pa = tl_ptr(a, i);
    const void *px = tl_ptr(x, i);
    const size_t n = a->lens[i];
    const float wf = (float)w;
    const gck_dtype dx = x->dtypes[i];
    if (!is_half(dx)) {
        ref_ew(op, a, x, i, w);
        return;
    }
    const int bf = dx == GCK_DTYPE_BF16;
    if (a->dtypes[i] == GCK_DTYPE_F32) {
        switch (op) {
        case OP_ADD: (bf ? gck_add_bf16_to_f32 : gck_add_f16_to_f32)(pa, px, n); break;
        case OP_AXPY: (bf ? gck_axpy_bf16_to_f32 : gck_axpy_f16_to_f32)(pa, wf, px, n); break;
        default: (bf ? gck_axpy_init_bf16_to_f32 : gck_axpy_init_f16_to_f32)(pa, wf, px, n); break;
        }
    } else {
        switch (op) {
        case OP_ADD: (bf ? gck_add_bf16_to_f64 : gck_add_f16_to_f64)(pa, px, n); break;
        case OP_AXPY: (bf ? gck_axpy_bf16_to_f64 : gck_axpy_f16_to_f64)(pa, w, px, n); break;
        default: (bf ? gck_axpy_init_bf16_to_f64 : gck_axpy_init_f16_to_f64)(pa, w, px, n); break;
        }
    }
}

static void test_half_elementwise(void **state)
{
    const gck_isa_pair *pr = *state;
    static const double ws[] = {0.3, -1.7, 1.0, 0x1p-140, 3e38};
    for (int k = 0; k < NHALF; k++) {
        tlist x, xw, acc, want, got, s_want, s_got;
        make_half_list(&x, k, 0, 31);
        tl_widen(&xw, &x);
        /* acc: f32 or f64 (by index) for the 16-bit tensors, as packed as x */
        gck_dtype *ad = malloc((x.count + 1) * sizeof *ad);
        for (size_t i = 0; i < x.count; i++)
            ad[i] = is_half(x.dtypes[i]) ? ((x.packed ? (i / 30) % 2 : i % 3 == 1) ? GCK_DTYPE_F64 : GCK_DTYPE_F32)
                                         : x.dtypes[i];
        tl_make_ex(&acc, x.count, x.lens, ad, g_kinds_all, sizeof g_kinds_all / sizeof g_kinds_all[0], 32, x.packed);
        free(ad);
        tl_clone(&want, &acc);
        tl_clone(&got, &acc);
        tl_clone(&s_want, &x);
        tl_clone(&s_got, &x);
        for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++) {
            const double w = ws[wi];
            for (int op = OP_ADD; op <= OP_AXPY_INIT; op++) {
                tl_copy_values(&want, &acc);
                for (size_t i = 0; i < acc.count; i++)
                    ref_pair_any((ew_op)op, &want, &x, i, w);
                /* the widened x gives the same */
                tl_copy_values(&got, &acc);
                assert_int_equal(run_ew((ew_op)op, &got, &xw, w), GCK_OK);
                assert_same_values(&want, &got, "widened x");
                ew_all_threads(pr, (ew_op)op, &acc, &x, w, &want, &got, "half x ", g_half_names[k]);
            }
            /* scale in place: gck_scale_bf16 / _f16 by (float)w */
            tl_copy_values(&s_want, &x);
            for (size_t i = 0; i < x.count; i++)
                ref_scale_any(&s_want, i, w);
            for (int th = 0; th <= 3; th++) {
                tl_copy_values(&s_got, &x);
                if (th == 0) {
                    ON_SCALAR(pr, assert_int_equal(gck_tensors_scale(&s_got.l, w), GCK_OK));
                } else {
                    gck_test_set_threads(th);
                    assert_int_equal(gck_tensors_scale(&s_got.l, w), GCK_OK);
                }
                char what[128];
                snprintf(what, sizeof what, "%s half scale w=%g list %s threads %d (0: scalar)", pr->isa->name, w,
                         g_half_names[k], th);
                assert_same_values(&s_want, &s_got, what);
            }
        }
        tl_free(&x), tl_free(&xw), tl_free(&acc), tl_free(&want), tl_free(&got), tl_free(&s_want),
            tl_free(&s_got);
    }
    gck_test_set_threads(2);
}

/* Clipping a 16-bit list: the widened list's total and coefficient, every
 * tensor scaled by gck_scale_bf16 / _f16 with (float)coef; with_norm the same. */
static void test_half_clip(void **state)
{
    const gck_isa_pair *pr = *state;
    static const double fracs[] = {0.5, 1e-3, 2.0, 0.0};
    for (int k = 0; k < NHALF; k++) {
        for (int finite = 0; finite < 2; finite++) {
            tlist t, wide, want, got;
            make_half_list(&t, k, finite, 41);
            tl_widen(&wide, &t);
            tl_clone(&want, &t);
            tl_clone(&got, &t);
            double total = -1.0;
            assert_int_equal(gck_tensors_norm(&wide.l, 2.0, NULL, &total), GCK_OK);
            for (size_t fi = 0; fi < sizeof fracs / sizeof fracs[0]; fi++) {
                const double max_norm = isfinite(total) ? total * fracs[fi] : fracs[fi];
                const double coef = max_norm / (total + GCK_CLIP_EPS_DEFAULT);
                const int clip = coef < 1.0 || isnan(coef);
                tl_copy_values(&want, &t);
                for (size_t i = 0; clip && i < t.count; i++)
                    ref_scale_any(&want, i, coef);
                for (int th = 0; th <= 3; th++) {
                    for (int with = 0; with < 2; with++) {
                        tl_copy_values(&got, &t);
                        gck_clip_info info = {-1, -1, -1};
                        gck_status st;
                        if (th == 0)
                            assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);
                        else
                            gck_test_set_threads(th);
                        st = with ? gck_tensors_clip_with_norm(&got.l, max_norm, total, GCK_CLIP_EPS_DEFAULT, 0, &info)
                                  : gck_tensors_clip_by_norm(&got.l, max_norm, 2.0, GCK_CLIP_EPS_DEFAULT, 0, &info);
                        if (th == 0)
                            assert_int_equal(gck_isa_select(pr->isa->isa), GCK_OK);
                        assert_int_equal(st, GCK_OK);
                        char what[160];
                        snprintf(what, sizeof what, "%s half clip%s max=%g list %s finite %d threads %d",
                                 pr->isa->name, with ? "_with_norm" : "", max_norm, g_half_names[k], finite, th);
                        gck_assert_same_f64(total, info.total_norm, "%s total", what);
                        gck_assert_same_f64(clip ? coef : 1.0, info.coef, "%s coef", what);
                        assert_int_equal(info.clipped, clip);
                        assert_same_values(&want, &got, what);
                    }
                }
            }
            tl_free(&t), tl_free(&wide), tl_free(&want), tl_free(&got);
        }
    }
    gck_test_set_threads(2);
}

/* ---- errors: nothing written, the message names the index ------------------------- */

static void expect_fail(gck_status got, gck_status want, const char *needle, const char *what)
{
    if (got != want)
        fail_msg("%s: status %s, want %s (%s)", what, gck_status_name(got), gck_status_name(want), gck_last_error());
    if (needle != NULL && strstr(gck_last_error(), needle) == NULL)
        fail_msg("%s: message '%s' lacks '%s'", what, gck_last_error(), needle);
}

/* Calls every function on (a, x) and expects status want with needle in the
 * message; x NULL: the single-list functions only. Nothing may change. */
static void expect_all_fail(tlist *a, tlist *x, gck_status want, const char *needle, const char *what)
{
    unsigned char *ca = malloc(a->bytes + 1), *cx = x != NULL ? malloc(x->bytes + 1) : NULL;
    memcpy(ca, a->arena, a->bytes);
    if (x != NULL)
        memcpy(cx, x->arena, x->bytes);
    double per[4] = {-1, -1, -1, -1}, total = -1;
    gck_clip_info info = {-1, -1, -1};
    if (x == NULL) {
        expect_fail(gck_tensors_sumsq(&a->l, per, &total), want, needle, what);
        expect_fail(gck_tensors_norm(&a->l, 2.0, per, &total), want, needle, what);
        expect_fail(gck_tensors_norm(&a->l, 3.0, per, &total), want, needle, what);
        expect_fail(gck_tensors_clip_by_norm(&a->l, 0.0, 2.0, 0.0, 0, &info), want, needle, what);
        expect_fail(gck_tensors_clip_with_norm(&a->l, 0.0, 5.0, 0.0, 0, &info), want, needle, what);
        expect_fail(gck_tensors_scale(&a->l, 2.0), want, needle, what);
        expect_fail(gck_tensors_div_sumsq(&a->l, 2.0, per, &total), want, needle, what);
    } else {
        expect_fail(gck_tensors_add(&a->l, &x->l), want, needle, what);
        expect_fail(gck_tensors_axpy(&a->l, 2.0, &x->l), want, needle, what);
        expect_fail(gck_tensors_axpy_init(&a->l, 2.0, &x->l), want, needle, what);
        expect_fail(gck_tensors_axpy_div_sumsq(&a->l, 2.0, &x->l, 3.0, per, &total), want, needle, what);
    }
    assert_true(per[0] == -1 && per[3] == -1 && total == -1 && info.clipped == -1);
    if (memcmp(ca, a->arena, a->bytes) != 0 || (x != NULL && memcmp(cx, x->arena, x->bytes) != 0))
        fail_msg("%s: a tensor was changed", what);
    free(ca), free(cx);
}

static void test_errors(void **state)
{
    (void)state;
    static const size_t lens[4] = {5, 3, 0, 7};
    static const gck_dtype dt[4] = {GCK_DTYPE_F32, GCK_DTYPE_F64, GCK_DTYPE_F32, GCK_DTYPE_F32};
    static const gck_test_kind kinds[] = {GCK_K_UNIFORM};
    tlist a, x;
    tl_make(&a, 4, lens, dt, kinds, 1, 1);
    tl_make(&x, 4, lens, dt, kinds, 1, 2);
    double per[4], total;
    /* NULL lists */
    assert_int_equal(gck_tensors_sumsq(NULL, per, &total), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_norm(NULL, 2.0, per, &total), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_clip_by_norm(NULL, 1.0, 2.0, 0.0, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_clip_with_norm(NULL, 1.0, 1.0, 0.0, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_scale(NULL, 1.0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_div_sumsq(NULL, 1.0, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_add(&a.l, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_add(NULL, &x.l), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_axpy(&a.l, 1.0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_axpy_init(NULL, 1.0, &x.l), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_axpy_div_sumsq(NULL, 1.0, &x.l, 2.0, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_tensors_axpy_div_sumsq(&a.l, 1.0, NULL, 2.0, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    /* NULL arrays with count > 0 */
    void *const *saved_data = a.l.data;
    a.l.data = NULL;
    expect_all_fail(&a, NULL, GCK_ERR_INVALID_ARGUMENT, "NULL data", "NULL data array");
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "NULL data", "NULL acc data array");
    a.l.data = saved_data;
    a.l.lens = NULL;
    expect_all_fail(&a, NULL, GCK_ERR_INVALID_ARGUMENT, "NULL lens", "NULL lens array");
    a.l.lens = a.lens;
    /* NULL data with a length, at index 3 */
    a.data[3] = NULL;
    expect_all_fail(&a, NULL, GCK_ERR_INVALID_ARGUMENT, "tensor 3", "NULL data with a length");
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "tensor 3: NULL data", "NULL acc data with a length");
    a.data[3] = tl_ptr(&a, 3);
    x.data[3] = NULL;
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "x tensor 3", "NULL x data with a length");
    x.data[3] = tl_ptr(&x, 3);
    /* an unsupported dtype, at index 3 (the per-list dtype when dtypes is NULL too) */
    a.dtypes[3] = GCK_DTYPE_I16;
    expect_all_fail(&a, NULL, GCK_ERR_UNSUPPORTED, "tensor 3: dtype I16", "I16 tensor");
    expect_all_fail(&a, &x, GCK_ERR_UNSUPPORTED, "tensor 3: dtype I16", "I16 acc tensor");
    a.dtypes[3] = GCK_DTYPE_F32;
    x.dtypes[3] = GCK_DTYPE_I32;
    expect_all_fail(&a, &x, GCK_ERR_UNSUPPORTED, "x tensor 3: dtype I32", "I32 x tensor");
    x.dtypes[3] = GCK_DTYPE_F32;
    a.l.dtypes = NULL;
    a.l.dtype = GCK_DTYPE_U16;
    expect_all_fail(&a, NULL, GCK_ERR_UNSUPPORTED, "tensor 0: dtype U16", "list dtype U16");
    a.l.dtypes = a.dtypes;
    a.l.dtype = GCK_DTYPE_F32;
    /* too long */
    const size_t saved_len = a.lens[2];
    a.lens[2] = SIZE_MAX / 8;
    a.data[2] = tl_ptr(&a, 2);
    expect_all_fail(&a, NULL, GCK_ERR_INVALID_ARGUMENT, "tensor 2", "too long");
    a.lens[2] = saved_len;
    /* counts and lengths of pairs */
    x.l.count = 3;
    expect_all_fail(&a, &x, GCK_ERR_DIMENSION_MISMATCH, "list has 4 tensors, the x list 3", "count mismatch");
    x.l.count = 4;
    x.lens[1] = 2;
    expect_all_fail(&a, &x, GCK_ERR_DIMENSION_MISMATCH, "target has 3 elements, x has 2",
                    "length mismatch");
    x.lens[1] = 3;
    /* x partially overlapping its own target (in place is fine) */
    x.data[1] = (char *)tl_ptr(&a, 1) + 8;
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "tensor 1: x overlaps", "partial overlap");
    x.data[1] = tl_ptr(&a, 1);
    x.dtypes[1] = GCK_DTYPE_F32; /* same address, other element size */
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "tensor 1: x overlaps", "same address, other dtype");
    x.dtypes[1] = GCK_DTYPE_F64;
    x.data[1] = tl_ptr(&x, 1);
    /* scalar arguments */
    tlist ca;
    tl_clone(&ca, &a);
    static const double bad_p[] = {0.0, -1.0, NAN, -INFINITY};
    gck_clip_info info = {-1, -1, -1};
    for (size_t i = 0; i < sizeof bad_p / sizeof bad_p[0]; i++) {
        total = -1;
        expect_fail(gck_tensors_norm(&a.l, bad_p[i], per, &total), GCK_ERR_INVALID_ARGUMENT, "p = ", "bad p");
        expect_fail(gck_tensors_clip_by_norm(&a.l, 0.0, bad_p[i], 0.0, 0, &info), GCK_ERR_INVALID_ARGUMENT, "p = ",
                    "bad p clip");
        assert_true(total == -1);
    }
    expect_fail(gck_tensors_norm(&a.l, 2.0, per, NULL), GCK_ERR_INVALID_ARGUMENT, "total is NULL", "total NULL");
    static const double bad_v[] = {-1.0, NAN, -INFINITY};
    for (size_t i = 0; i < sizeof bad_v / sizeof bad_v[0]; i++) {
        expect_fail(gck_tensors_clip_by_norm(&a.l, bad_v[i], 2.0, 0.0, 0, &info), GCK_ERR_INVALID_ARGUMENT,
                    "max_norm", "bad max_norm");
        expect_fail(gck_tensors_clip_by_norm(&a.l, 1.0, 2.0, bad_v[i], 0, &info), GCK_ERR_INVALID_ARGUMENT, "eps",
                    "bad eps");
        expect_fail(gck_tensors_clip_with_norm(&a.l, bad_v[i], 5.0, 0.0, 0, &info), GCK_ERR_INVALID_ARGUMENT,
                    "max_norm", "bad max_norm with norm");
        expect_fail(gck_tensors_clip_with_norm(&a.l, 1.0, 5.0, bad_v[i], 0, &info), GCK_ERR_INVALID_ARGUMENT, "eps",
                    "bad eps with norm");
    }
    expect_fail(gck_tensors_clip_with_norm(&a.l, 1.0, -1.0, 0.0, 0, &info), GCK_ERR_INVALID_ARGUMENT, "total_norm",
                "negative total_norm");
    expect_fail(gck_tensors_clip_by_norm(&a.l, 0.0, 2.0, 0.0, 2u, &info), GCK_ERR_INVALID_ARGUMENT, "flags",
                "unknown flags");
    expect_fail(gck_tensors_clip_with_norm(&a.l, 0.0, 1.0, 0.0, 0x80u, &info), GCK_ERR_INVALID_ARGUMENT, "flags",
                "unknown flags with norm");
    assert_true(info.clipped == -1);
    assert_bytes_unchanged(&ca, &a, "scalar argument errors");
    tl_free(&ca);
    tl_free(&a), tl_free(&x);
}

/* What 16-bit lists are refused for, with nothing written. */
static void test_half_errors(void **state)
{
    (void)state;
    static const size_t lens[4] = {5, 3, 0, 7};
    static const gck_dtype xd[4] = {GCK_DTYPE_BF16, GCK_DTYPE_F16, GCK_DTYPE_BF16, GCK_DTYPE_F16};
    static const gck_dtype ad[4] = {GCK_DTYPE_F32, GCK_DTYPE_F64, GCK_DTYPE_F32, GCK_DTYPE_F32};
    static const gck_test_kind kinds[] = {GCK_K_UNIFORM};
    tlist a, x;
    tl_make(&a, 4, lens, ad, kinds, 1, 1);
    tl_make(&x, 4, lens, xd, kinds, 1, 2);
    /* a 16-bit accumulator: add/axpy/axpy_init write f32 or f64 only */
    expect_all_fail(&x, &x, GCK_ERR_UNSUPPORTED, "dtype BF16 is not supported (F32 or F64 here)", "BF16 acc");
    a.dtypes[3] = GCK_DTYPE_F16;
    expect_all_fail(&a, &x, GCK_ERR_UNSUPPORTED, "tensor 3: dtype F16 is not supported (F32 or F64 here)",
                    "F16 acc tensor 3");
    a.dtypes[3] = GCK_DTYPE_F32;
    /* div_sumsq: F32 and F64 lists only */
    unsigned char *copy = malloc(x.bytes + 1);
    memcpy(copy, x.arena, x.bytes);
    double per[4] = {-1, -1, -1, -1}, total = -1;
    expect_fail(gck_tensors_div_sumsq(&x.l, 2.0, per, &total), GCK_ERR_UNSUPPORTED,
                "tensor 0: dtype BF16 is not supported (F32 or F64 here)", "div_sumsq BF16");
    a.dtypes[1] = GCK_DTYPE_F16;
    expect_fail(gck_tensors_div_sumsq(&a.l, 2.0, per, &total), GCK_ERR_UNSUPPORTED, "tensor 1: dtype F16",
                "div_sumsq F16 tensor 1");
    a.dtypes[1] = GCK_DTYPE_F64;
    assert_true(per[0] == -1 && total == -1 && memcmp(copy, x.arena, x.bytes) == 0);
    free(copy);
    /* x at its f32 target's address (another element size) or inside it */
    x.data[0] = tl_ptr(&a, 0);
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "tensor 0: x overlaps", "bf16 x at the f32 target");
    x.data[0] = (char *)tl_ptr(&a, 0) + 2;
    expect_all_fail(&a, &x, GCK_ERR_INVALID_ARGUMENT, "tensor 0: x overlaps", "bf16 x inside the f32 target");
    x.data[0] = tl_ptr(&x, 0);
    /* the single-list calls accept them, and 0 tensors of 16-bit dtype */
    assert_int_equal(gck_tensors_scale(&x.l, 0.5), GCK_OK);
    const gck_tensor_list empty = {0, NULL, NULL, GCK_DTYPE_BF16, NULL};
    assert_int_equal(gck_tensors_norm(&empty, 2.0, NULL, &total), GCK_OK);
    assert_true(total == 0.0);
    tl_free(&a), tl_free(&x);
}

/* ---- scratch: short serial lists allocate nothing; every failure is clean ---------- */

static void test_allocation(void **state)
{
    (void)state;
    /* short and serial: the next allocation would fail, yet every call works */
    tlist s, sx;
    make_list(&s, 0, 0, 3);
    make_list(&sx, 0, 0, 4);
    double per[300], total;
    gck_clip_info info;
    gck_alloc_fail_after(0);
    assert_int_equal(gck_tensors_sumsq(&s.l, NULL, &total), GCK_OK);
    assert_int_equal(gck_tensors_norm(&s.l, 3.0, NULL, &total), GCK_OK);
    assert_int_equal(gck_tensors_clip_by_norm(&s.l, 1.0, 2.0, 0.0, 0, &info), GCK_OK);
    assert_int_equal(gck_tensors_div_sumsq(&s.l, 3.0, NULL, &total), GCK_OK);
    assert_int_equal(gck_tensors_add(&s.l, &sx.l), GCK_OK);
    assert_int_equal(gck_tensors_axpy(&s.l, 0.5, &sx.l), GCK_OK);
    assert_int_equal(gck_tensors_axpy_init(&s.l, 0.5, &sx.l), GCK_OK);
    assert_int_equal(gck_tensors_scale(&s.l, 0.5), GCK_OK);
    gck_alloc_fail_after(-1);
    tl_free(&s), tl_free(&sx);

    /* long lists (heap scratch), and threaded ones (heap work list): walk the failures */
    for (int k = 1; k <= 2; k++) {
        tlist a, x, orig, want;
        make_list(&a, k, 1, 11);
        tl_make(&x, a.count, a.lens, a.dtypes, g_kinds_finite, sizeof g_kinds_finite / sizeof g_kinds_finite[0], 12);
        tl_clone(&orig, &a);
        tl_clone(&want, &a);
        gck_test_set_threads(2);
        for (int fn = 0; fn < 9; fn++) {
            /* the result without failures */
            tl_copy_values(&want, &orig);
            double wper[300] = {0}, wtotal = 0;
            gck_status s0 = GCK_OK;
            switch (fn) {
            case 0: s0 = gck_tensors_sumsq(&want.l, NULL, &wtotal); break;
            case 1: s0 = gck_tensors_norm(&want.l, 3.0, NULL, &wtotal); break;
            case 2: s0 = gck_tensors_clip_by_norm(&want.l, 1e-3, 2.0, 0.0, 0, &info); break;
            case 3: s0 = gck_tensors_div_sumsq(&want.l, 3.0, NULL, &wtotal); break;
            case 4: s0 = gck_tensors_add(&want.l, &x.l); break;
            case 5: s0 = gck_tensors_axpy(&want.l, 0.5, &x.l); break;
            case 6: s0 = gck_tensors_axpy_init(&want.l, 0.5, &x.l); break;
            case 8: s0 = gck_tensors_axpy_div_sumsq(&want.l, 0.5, &x.l, 3.0, NULL, &wtotal); break;
            default: s0 = gck_tensors_norm(&want.l, 2.0, wper, &wtotal); break;
            }
            assert_int_equal(s0, GCK_OK);
            int failures = 0;
            for (long f = 0;; f++) {
                tl_copy_values(&a, &orig);
                total = -1;
                memset(per, 0xff, sizeof per);
                gck_alloc_fail_after(f);
                gck_status st;
                switch (fn) {
                case 0: st = gck_tensors_sumsq(&a.l, NULL, &total); break;
                case 1: st = gck_tensors_norm(&a.l, 3.0, NULL, &total); break;
                case 2: st = gck_tensors_clip_by_norm(&a.l, 1e-3, 2.0, 0.0, 0, &info); break;
                case 3: st = gck_tensors_div_sumsq(&a.l, 3.0, NULL, &total); break;
                case 4: st = gck_tensors_add(&a.l, &x.l); break;
                case 5: st = gck_tensors_axpy(&a.l, 0.5, &x.l); break;
                case 6: st = gck_tensors_axpy_init(&a.l, 0.5, &x.l); break;
                case 8: st = gck_tensors_axpy_div_sumsq(&a.l, 0.5, &x.l, 3.0, NULL, &total); break;
                default: st = gck_tensors_norm(&a.l, 2.0, per, &total); break;
                }
                gck_alloc_fail_after(-1);
                if (st == GCK_OK) {
                    assert_same_values(&want, &a, "after the failures");
                    if (fn != 2 && (fn < 4 || fn == 8))
                        gck_assert_same_f64(wtotal, total, "total after the failures");
                    break;
                }
                expect_fail(st, GCK_ERR_NO_MEMORY, "scratch", "allocation failure");
                assert_bytes_unchanged(&orig, &a, "allocation failure");
                assert_true(total == -1);
                uint64_t u; /* per_tensor untouched */
                memcpy(&u, &per[0], 8);
                assert_true(u == UINT64_MAX);
                failures++;
            }
            /* a long list needs scratch for general p; a threaded one for its work list */
            const int must_fail = fn == 1 || (k == 1 && GCK_HAVE_OPENMP);
            if (must_fail && failures == 0)
                fail_msg("list %s function %d: no allocation failure was seen", g_list_names[k], fn);
        }
        tl_free(&a), tl_free(&x), tl_free(&orig), tl_free(&want);
    }

    /* a long bf16 list: general p needs scratch, a threaded clip its work list; every
     * failure leaves the tensors and the outputs as they were */
    {
        tlist hb, hb_orig, hb_want;
        make_half_list(&hb, 1, 1, 13);
        tl_clone(&hb_orig, &hb);
        tl_clone(&hb_want, &hb);
        gck_test_set_threads(2);
        for (int fn = 0; fn < 2; fn++) {
            double wtotal = -1;
            tl_copy_values(&hb_want, &hb_orig);
            assert_int_equal(fn == 0 ? gck_tensors_norm(&hb_want.l, 3.0, NULL, &wtotal)
                                     : gck_tensors_clip_by_norm(&hb_want.l, 1e-3, 2.0, 0.0, 0, &info),
                             GCK_OK);
            int fails = 0;
            for (long f = 0;; f++) {
                tl_copy_values(&hb, &hb_orig);
                total = -1;
                gck_alloc_fail_after(f);
                const gck_status st = fn == 0 ? gck_tensors_norm(&hb.l, 3.0, NULL, &total)
                                              : gck_tensors_clip_by_norm(&hb.l, 1e-3, 2.0, 0.0, 0, &info);
                gck_alloc_fail_after(-1);
                if (st == GCK_OK) {
                    assert_same_values(&hb_want, &hb, "bf16 list after the failures");
                    if (fn == 0)
                        gck_assert_same_f64(wtotal, total, "bf16 total after the failures");
                    break;
                }
                expect_fail(st, GCK_ERR_NO_MEMORY, "scratch", "bf16 list allocation failure");
                assert_bytes_unchanged(&hb_orig, &hb, "bf16 list allocation failure");
                assert_true(total == -1);
                fails++;
            }
            if (fn == 0 && fails == 0)
                fail_msg("bf16 list p = 3: no allocation failure was seen");
        }
        tl_free(&hb), tl_free(&hb_orig), tl_free(&hb_want);
    }

    /* the rescaled p = 2 total of a long list (squares overflow) keeps the
     * per-tensor sums it otherwise folds on the fly */
    gck_test_set_threads(1);
    enum { NH = 100 };
    size_t hl[NH];
    gck_dtype hd[NH];
    for (size_t i = 0; i < NH; i++)
        hl[i] = 3 + i % 5, hd[i] = GCK_DTYPE_F64;
    static const gck_test_kind huge[] = {GCK_K_HUGE};
    tlist h;
    tl_make(&h, NH, hl, hd, huge, 1, 5);
    for (size_t i = 0; i < NH; i++)
        for (size_t e = 0; e < hl[i]; e++)
            ((double *)tl_ptr(&h, i))[e] *= 0x1p-20; /* squares overflow, the norm does not */
    double want = -1;
    assert_int_equal(gck_tensors_norm(&h.l, 2.0, per, &want), GCK_OK);
    assert_true(isfinite(want));
    int failures = 0;
    for (long f = 0;; f++) {
        total = -1;
        gck_alloc_fail_after(f);
        const gck_status st = gck_tensors_norm(&h.l, 2.0, NULL, &total);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK) {
            gck_assert_same_f64(want, total, "rescaled total after the failures");
            break;
        }
        expect_fail(st, GCK_ERR_NO_MEMORY, "scratch", "rescaled total");
        assert_true(total == -1);
        failures++;
    }
    assert_int_equal(failures, 1);
    gck_clip_info ci = {-1, -1, -1};
    gck_alloc_fail_after(0);
    expect_fail(gck_tensors_clip_by_norm(&h.l, 1.0, 2.0, 0.0, 0, &ci), GCK_ERR_NO_MEMORY, "scratch", "rescaled clip");
    gck_alloc_fail_after(-1);
    assert_true(ci.clipped == -1);
    tl_free(&h);
    gck_test_set_threads(2);
}

GCK_PER_ISA_MAIN(NULL, NULL,
                 GCK_ISA_TEST(test_sumsq_and_norms),
                 GCK_ISA_TEST(test_norm_total_rules),
                 GCK_ISA_TEST(test_total_is_checkpointer_global_norm),
                 GCK_ISA_TEST(test_elementwise),
                 GCK_ISA_TEST(test_div_sumsq),
                 GCK_ISA_TEST(test_axpy_div_sumsq),
                 GCK_ISA_TEST(test_exact_reciprocal),
                 GCK_ISA_TEST(test_clip),
                 GCK_ISA_TEST(test_half_norms),
                 GCK_ISA_TEST(test_half_elementwise),
                 GCK_ISA_TEST(test_half_clip),
                 GCK_ISA_TEST(test_half_errors),
                 GCK_ISA_TEST(test_errors),
                 GCK_ISA_TEST(test_allocation))
