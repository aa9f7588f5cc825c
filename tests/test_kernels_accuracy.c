/* tests/test_kernels_accuracy.c - the kernels against MPFR (exact sums, correctly rounded results).
 *
 * Stated accuracy (checked here on every input family):
 * - sumsq/dist2: relative error <= (c + 1) u, u = 2^-53, where c is the
 *   longest chain of additions any term passes through in the canonical
 *   shape: 8 lane adds in its run + one per run of its block + 6 fold
 *   levels + ceil(log2(blocks)), plus
 *   one rounding for the square (two for dist2's difference). A rigorous
 *   bound for sums of non-negative terms; the typical error is far smaller.
 * - l2norm: within 2 ulp of the correctly rounded norm, never Inf or 0 for a
 *   finite non-zero norm (SPEC 1.2), including at the overflow and underflow
 *   limits of f64.
 * - add, scale: correctly rounded (one IEEE operation); axpy: the two-rounding
 *   expression round(acc + round(w*x)). */
#include <float.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#define EXACT_PREC 4400 /* covers any sum of squares of doubles exactly */

static const size_t sizes[] = {1, 2, 7, 63, 64, 65, 200, 1001, GCK_BLOCK - 1, GCK_BLOCK + 1, 5 * GCK_BLOCK + 3,
                               70001};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static size_t chain_len(size_t n)
{
    size_t nb = (n + GCK_BLOCK - 1) / GCK_BLOCK, levels = 0;
    while (((size_t)1 << levels) < nb)
        levels++;
    const size_t in_block = n < GCK_BLOCK ? n : GCK_BLOCK, in_run = n < GCK_RUN ? n : GCK_RUN;
    /* adds inside a run, + one per run into the block lanes, + fold, + tree */
    return (in_run + GCK_LANES - 1) / GCK_LANES + (in_block + GCK_RUN - 1) / GCK_RUN + 6 + levels;
}

/* exact sum of squares (or of squared rounded differences when b != NULL) */
static void exact_sumsq_f64(mpfr_t s, const double *a, const double *b, size_t n)
{
    mpfr_t t;
    mpfr_init2(t, EXACT_PREC);
    mpfr_set_zero(s, 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(t, b ? a[i] - b[i] : a[i], MPFR_RNDN); /* the kernel's rounded difference */
        mpfr_sqr(t, t, MPFR_RNDN);
        mpfr_add(s, s, t, MPFR_RNDN);
    }
    mpfr_clear(t);
}

static void exact_sumsq_f32(mpfr_t s, const float *a, const float *b, size_t n)
{
    mpfr_t t;
    mpfr_init2(t, EXACT_PREC);
    mpfr_set_zero(s, 1);
    for (size_t i = 0; i < n; i++) {
        mpfr_set_d(t, b ? (double)a[i] - (double)b[i] : (double)a[i], MPFR_RNDN);
        mpfr_sqr(t, t, MPFR_RNDN);
        mpfr_add(s, s, t, MPFR_RNDN);
    }
    mpfr_clear(t);
}

/* |got - exact| <= k * u * exact  (+ an absolute slack for underflowed squares) */
static void check_rel(const char *what, double got, mpfr_t exact, size_t k, double abs_slack, size_t n,
                      const char *kind)
{
    mpfr_t d, lim;
    mpfr_inits2(EXACT_PREC, d, lim, (mpfr_ptr)0);
    mpfr_set_d(d, got, MPFR_RNDN);
    mpfr_sub(d, d, exact, MPFR_RNDN);
    mpfr_abs(d, d, MPFR_RNDN);
    mpfr_mul_d(lim, exact, (double)k * 0x1p-53 * 1.0001, MPFR_RNDU);
    mpfr_add_d(lim, lim, abs_slack, MPFR_RNDU);
    if (mpfr_cmp(d, lim) > 0)
        fail_msg("%s n=%zu %s: got %a, exact %a, error %.3e > bound %.3e", what, n, kind, got,
                 mpfr_get_d(exact, MPFR_RNDN), mpfr_get_d(d, MPFR_RNDN), mpfr_get_d(lim, MPFR_RNDN));
    mpfr_clears(d, lim, (mpfr_ptr)0);
}

static void check_norm(const char *what, double got, mpfr_t exact_sumsq, size_t n, const char *kind)
{
    mpfr_t r;
    mpfr_init2(r, EXACT_PREC);
    mpfr_sqrt(r, exact_sumsq, MPFR_RNDN);
    const double want = mpfr_get_d(r, MPFR_RNDN); /* correctly rounded, subnormals included */
    mpfr_clear(r);
    if (want != 0.0 && isfinite(want)) {
        if (got == 0.0 || isinf(got))
            fail_msg("%s n=%zu %s: got %a for a finite non-zero norm %a", what, n, kind, got, want);
    }
    if (gck_ulp_diff(want, got) > 2)
        fail_msg("%s n=%zu %s: got %a, correctly rounded %a: %llu ulp apart", what, n, kind, got, want,
                 (unsigned long long)gck_ulp_diff(want, got));
}

static void test_f64_reductions_accuracy(void **state)
{
    (void)state;
    const size_t nmax = sizes[NSIZES - 1];
    double *a = gck_test_alloc(nmax * 8), *b = gck_test_alloc(nmax * 8);
    mpfr_t s;
    mpfr_init2(s, EXACT_PREC);
    for (size_t si = 0; si < NSIZES; si++) {
        const size_t n = sizes[si];
        for (int k = GCK_K_UNIFORM; k <= GCK_K_DENORMAL; k++) {
            const char *kn = gck_test_kind_name((gck_test_kind)k);
            gck_test_fill_f64(a, n, (gck_test_kind)k, 100 + n);
            gck_test_fill_f64(b, n, (gck_test_kind)k, 200 + n);
            exact_sumsq_f64(s, a, NULL, n);
            const double slack = (double)n * 0x1p-1074;
            const double ss = gck_sumsq_f64(a, n);
            if (k == GCK_K_HUGE)
                assert_true(isinf(ss)); /* the plain sum overflows: that is what l2norm is for */
            else
                check_rel("sumsq_f64", ss, s, chain_len(n) + 1, slack, n, kn);
            check_norm("l2norm_f64", gck_l2norm_f64(a, n), s, n, kn);
            if (k != GCK_K_HUGE) {
                exact_sumsq_f64(s, a, b, n);
                check_rel("dist2_f64", gck_dist2_f64(a, b, n), s, chain_len(n) + 1, slack, n, kn);
            }
        }
    }
    mpfr_clear(s);
    free(a), free(b);
}

static void test_f32_reductions_accuracy(void **state)
{
    (void)state;
    const size_t nmax = sizes[NSIZES - 1];
    float *a = gck_test_alloc(nmax * 4), *b = gck_test_alloc(nmax * 4);
    mpfr_t s;
    mpfr_init2(s, EXACT_PREC);
    for (size_t si = 0; si < NSIZES; si++) {
        const size_t n = sizes[si];
        for (int k = GCK_K_UNIFORM; k <= GCK_K_DENORMAL; k++) {
            const char *kn = gck_test_kind_name((gck_test_kind)k);
            gck_test_fill_f32(a, n, (gck_test_kind)k, 300 + n);
            gck_test_fill_f32(b, n, (gck_test_kind)k, 400 + n);
            exact_sumsq_f32(s, a, NULL, n);
            check_rel("sumsq_f32", gck_sumsq_f32(a, n), s, chain_len(n), 0.0, n, kn); /* squares exact */
            check_norm("l2norm_f32", gck_l2norm_f32(a, n), s, n, kn);
            exact_sumsq_f32(s, a, b, n);
            check_rel("dist2_f32", gck_dist2_f32(a, b, n), s, chain_len(n) + 2, 0.0, n, kn);
        }
    }
    mpfr_clear(s);
    free(a), free(b);
}

/* Single values at the edges of the f64 range: the norm is |x| exactly. */
static void test_l2norm_extremes(void **state)
{
    (void)state;
    static const double v[] = {DBL_MAX, -DBL_MAX, 0x1p-1074, -0x1p-1074, 0x1p-1022, 0x1.8p-1050, 0x1p600,
                               0x1p-600, 0x1.fffffffffffffp511, 1e-320, 3.0};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        gck_assert_same_f64(fabs(v[i]), gck_l2norm_f64(&v[i], 1), "l2norm of single %a", v[i]);
        double two[2] = {v[i], v[i]}; /* |x| sqrt 2, overflowing only for DBL_MAX */
        const double want = fabs(v[i]) * 1.4142135623730951;
        assert_true(gck_ulp_diff(want, gck_l2norm_f64(two, 2)) <= 2 || (isinf(want) && isinf(gck_l2norm_f64(two, 2))));
    }
    /* 3-4-5 at both ends of the range */
    const double big[2] = {0x1p1000 * 3, 0x1p1000 * 4}, small[2] = {0x1p-1060 * 3, 0x1p-1060 * 4};
    gck_assert_same_f64(0x1p1000 * 5, gck_l2norm_f64(big, 2), "3-4-5 big");
    gck_assert_same_f64(0x1p-1060 * 5, gck_l2norm_f64(small, 2), "3-4-5 small");
}

static void test_nonfinite_propagate(void **state)
{
    (void)state;
    double x[100];
    float f[100];
    for (size_t where = 0; where < 100; where += 33) {
        gck_test_fill_f64(x, 100, GCK_K_UNIFORM, where);
        gck_test_fill_f32(f, 100, GCK_K_UNIFORM, where);
        x[where] = NAN;
        f[where] = NAN;
        assert_true(isnan(gck_sumsq_f64(x, 100)) && isnan(gck_l2norm_f64(x, 100)));
        assert_true(isnan(gck_dist2_f64(x, x, 100)));
        assert_true(isnan(gck_sumsq_f32(f, 100)) && isnan(gck_l2norm_f32(f, 100)));
        x[where] = -INFINITY;
        f[where] = INFINITY;
        assert_true(gck_sumsq_f64(x, 100) == INFINITY && gck_l2norm_f64(x, 100) == INFINITY);
        assert_true(gck_sumsq_f32(f, 100) == INFINITY && gck_l2norm_f32(f, 100) == INFINITY);
        assert_true(isnan(gck_dist2_f64(x, x, 100))); /* Inf - Inf */
        x[(where + 1) % 100] = NAN; /* Inf and NaN: NaN wins */
        assert_true(isnan(gck_l2norm_f64(x, 100)));
    }
}

static double round_exact(mpfr_t e)
{
    return mpfr_get_d(e, MPFR_RNDN);
}

static void test_elementwise_correctly_rounded(void **state)
{
    (void)state;
    const size_t n = 4099;
    double *x = gck_test_alloc(n * 8), *acc = gck_test_alloc(n * 8), *out = gck_test_alloc(n * 8);
    mpfr_t e, p;
    mpfr_inits2(EXACT_PREC, e, p, (mpfr_ptr)0);
    static const double ws[] = {0.1, -7.25, 0x1p-1000, 0x1.5p900};
    for (int k = GCK_K_UNIFORM; k <= GCK_K_DENORMAL; k++) {
        gck_test_fill_f64(x, n, (gck_test_kind)k, 7);
        gck_test_fill_f64(acc, n, (gck_test_kind)((k + 1) % (GCK_K_DENORMAL + 1)), 8);
        memcpy(out, acc, n * 8);
        gck_add_f64(out, x, n);
        for (size_t i = 0; i < n; i++) {
            mpfr_set_d(e, acc[i], MPFR_RNDN);
            mpfr_add_d(e, e, x[i], MPFR_RNDN);
            gck_assert_same_f64(round_exact(e), out[i], "add_f64 i=%zu", i);
        }
        for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++) {
            memcpy(out, x, n * 8);
            gck_scale_f64(out, ws[wi], n);
            for (size_t i = 0; i < n; i++) {
                mpfr_set_d(e, x[i], MPFR_RNDN);
                mpfr_mul_d(e, e, ws[wi], MPFR_RNDN);
                gck_assert_same_f64(round_exact(e), out[i], "scale_f64 i=%zu", i);
            }
            memcpy(out, acc, n * 8);
            gck_axpy_f64(out, ws[wi], x, n);
            for (size_t i = 0; i < n; i++) {
                mpfr_set_d(p, x[i], MPFR_RNDN);
                mpfr_mul_d(p, p, ws[wi], MPFR_RNDN);
                mpfr_set_d(e, acc[i], MPFR_RNDN);
                mpfr_add_d(e, e, round_exact(p), MPFR_RNDN);
                gck_assert_same_f64(round_exact(e), out[i], "axpy_f64 i=%zu", i);
            }
        }
    }
    mpfr_clears(e, p, (mpfr_ptr)0);
    free(x), free(acc), free(out);
}

static void test_elementwise_f32_correctly_rounded(void **state)
{
    (void)state;
    const size_t n = 3001;
    float *x = gck_test_alloc(n * 4), *acc = gck_test_alloc(n * 4), *out = gck_test_alloc(n * 4);
    for (int k = GCK_K_UNIFORM; k <= GCK_K_DENORMAL; k++) {
        gck_test_fill_f32(x, n, (gck_test_kind)k, 9);
        gck_test_fill_f32(acc, n, GCK_K_ILL_SCALED, 10);
        memcpy(out, acc, n * 4);
        gck_axpy_f32(out, 0.3f, x, n);
        for (size_t i = 0; i < n; i++) {
            /* f32 products and sums are exact in f64 before their one rounding to float
             * (except across huge exponent gaps, where the f64 rounding cannot cross a
             * float rounding boundary: 53 >= 2*24+2) */
            const float p = (float)((double)0.3f * (double)x[i]);
            const float want = (float)((double)acc[i] + (double)p);
            if (!gck_same_f32(want, out[i]))
                fail_msg("axpy_f32 i=%zu want %a got %a", i, (double)want, (double)out[i]);
        }
    }
    free(x), free(acc), free(out);
}

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) the general-p
 * check sums 1001 terms instead of 3001: one block either way, and the 512-bit
 * MPFR pow of every term took 15 s of qemu-s390x. */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

/* General p against MPFR: within 4 ulp for p >= 1, 4/p ulp below 1. */
static void test_pnorm_accuracy(void **state)
{
    (void)state;
    static const double ps[] = {0.5, 1.0, 1.5, 3.0, 4.0, 7.25, 1000.0};
    const size_t n = GCK_TEST_EMULATED ? 1001 : 3001;
    double *a = gck_test_alloc(n * 8);
    float *f = gck_test_alloc(n * 4);
    mpfr_t sum, t, pp;
    mpfr_inits2(512, sum, t, pp, (mpfr_ptr)0);
    for (int k = GCK_K_UNIFORM; k <= GCK_K_DENORMAL; k++) {
        gck_test_fill_f64(a, n, (gck_test_kind)k, 77);
        gck_test_fill_f32(f, n, (gck_test_kind)k, 78);
        for (size_t pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            const double p = ps[pi];
            const uint64_t bound = p >= 1.0 ? 4 : (uint64_t)ceil(4.0 / p);
            for (int is32 = 0; is32 <= 1; is32++) {
                mpfr_set_d(pp, p, MPFR_RNDN);
                mpfr_set_zero(sum, 1);
                for (size_t i = 0; i < n; i++) {
                    mpfr_set_d(t, fabs(is32 ? (double)f[i] : a[i]), MPFR_RNDN);
                    mpfr_pow(t, t, pp, MPFR_RNDN);
                    mpfr_add(sum, sum, t, MPFR_RNDN);
                }
                mpfr_ui_div(pp, 1, pp, MPFR_RNDN);
                mpfr_pow(sum, sum, pp, MPFR_RNDN);
                const double want = mpfr_get_d(sum, MPFR_RNDN);
                const double got = is32 ? gck_pnorm_f32(f, n, p) : gck_pnorm_f64(a, n, p);
                if (gck_ulp_diff(want, got) > bound)
                    fail_msg("pnorm_%s p=%g %s: got %a want %a (%llu ulp > %llu)", is32 ? "f32" : "f64", p,
                             gck_test_kind_name((gck_test_kind)k), got, want,
                             (unsigned long long)gck_ulp_diff(want, got), (unsigned long long)bound);
            }
        }
    }
    mpfr_clears(sum, t, pp, (mpfr_ptr)0);
    free(a), free(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f64_reductions_accuracy),
        cmocka_unit_test(test_f32_reductions_accuracy),
        cmocka_unit_test(test_l2norm_extremes),
        cmocka_unit_test(test_nonfinite_propagate),
        cmocka_unit_test(test_elementwise_correctly_rounded),
        cmocka_unit_test(test_elementwise_f32_correctly_rounded),
        cmocka_unit_test(test_pnorm_accuracy),
    };
    if (gck_isa_select(GCK_ISA_SCALAR) != GCK_OK)
        return 1;
    return cmocka_run_group_tests_name("accuracy", tests, NULL, NULL);
}
