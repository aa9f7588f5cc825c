/* tests/test_kernels_pnorm.c - asum/powsum/amax slots and gck_pnorm_* on one ISA vs scalar, bit for bit. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

static const double g_ps[] = {1.0, 2.0, INFINITY, 0.5, 1.5, 3.0, 4.0, 7.25, 1000.0};
#define NP (sizeof g_ps / sizeof g_ps[0])

static double *g_a64;
static float *g_a32;

static int setup(void **state)
{
    (void)state;
    const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;
    g_a64 = gck_test_alloc(cap * 8);
    g_a32 = gck_test_alloc(cap * 4);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_a64);
    free(g_a32);
    return 0;
}

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) the block and
 * threshold sizes between 4096 and 100000 take every third input family in
 * turn, so each family still meets several of them (55 s of qemu-aarch64 for
 * the neon run, mostly the pow terms there). */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

static int skip_large(size_t si, int k)
{
    const size_t n = gck_test_sizes[si];
    if (GCK_TEST_EMULATED && n > 4096 && n <= 100000)
        return (si + (size_t)k) % 3 != 0;
    return n > 100000 && k != GCK_K_UNIFORM && k != GCK_K_WITH_NAN;
}

/* On the scalar run both sides of these comparisons are the same code; every
 * other ISA's run computes the scalar side on the same inputs. So the scalar
 * run does not repeat them (the slow pow terms took minutes under qemu). */
static int same_code(const gck_isa_pair *p)
{
    return p->isa == p->ref;
}

static void test_block_slots(void **state)
{
    const gck_isa_pair *p = *state;
    if (same_code(p))
        return;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        if (n > GCK_BLOCK)
            continue;
        for (int k = 0; k < GCK_K_COUNT; k++) {
            const size_t off = (size_t)k % 4;
            double *a = g_a64 + (off & 1);
            float *f = g_a32 + off;
            gck_test_fill_f64(a, n, (gck_test_kind)k, n + 21);
            gck_test_fill_f32(f, n, (gck_test_kind)k, n + 22);
            const char *kn = gck_test_kind_name((gck_test_kind)k);
            gck_assert_same_f64(p->ref->asum_f64_block(a, n), p->isa->asum_f64_block(a, n), "%s asum_f64 n=%zu %s",
                                p->isa->name, n, kn);
            gck_assert_same_f64(p->ref->asum_f32_block(f, n), p->isa->asum_f32_block(f, n), "%s asum_f32 n=%zu %s",
                                p->isa->name, n, kn);
            gck_assert_same_f64(p->ref->amax_f64(a, n), p->isa->amax_f64(a, n), "%s amax_f64 n=%zu %s", p->isa->name,
                                n, kn);
            gck_assert_same_f64(p->ref->amax_f32(f, n), p->isa->amax_f32(f, n), "%s amax_f32 n=%zu %s", p->isa->name,
                                n, kn);
            for (size_t pi = 3; pi < NP; pi++) {
                const double s = k == GCK_K_HUGE ? 0x1p-1023 : (k == GCK_K_TINY || k == GCK_K_DENORMAL ? 0x1p1000 : 1.0);
                gck_assert_same_f64(p->ref->powsum_f64_block(a, g_ps[pi], s, n),
                                    p->isa->powsum_f64_block(a, g_ps[pi], s, n), "%s powsum_f64 p=%g n=%zu %s",
                                    p->isa->name, g_ps[pi], n, kn);
                gck_assert_same_f64(p->ref->powsum_f32_block(f, g_ps[pi], 1.0, n),
                                    p->isa->powsum_f32_block(f, g_ps[pi], 1.0, n), "%s powsum_f32 p=%g n=%zu %s",
                                    p->isa->name, g_ps[pi], n, kn);
            }
        }
    }
}

/* gck_pnorm_* on this ISA equals gck_pnorm_* on scalar, every p, every size. */
static void test_pnorm_matches_scalar(void **state)
{
    const gck_isa_pair *p = *state;
    if (same_code(p))
        return;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (int k = 0; k < GCK_K_COUNT; k++) {
            if (skip_large(si, k))
                continue;
            double *a = g_a64 + 1;
            float *f = g_a32 + 3;
            gck_test_fill_f64(a, n, (gck_test_kind)k, n + 23);
            gck_test_fill_f32(f, n, (gck_test_kind)k, n + 24);
            for (size_t pi = 0; pi < NP; pi++) {
                if (n > 100000 && pi > 4)
                    continue;
                assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);
                const double w64 = gck_pnorm_f64(a, n, g_ps[pi]), w32 = gck_pnorm_f32(f, n, g_ps[pi]);
                assert_int_equal(gck_isa_select(p->isa->isa), GCK_OK);
                gck_assert_same_f64(w64, gck_pnorm_f64(a, n, g_ps[pi]), "%s pnorm_f64 p=%g n=%zu %s", p->isa->name,
                                    g_ps[pi], n, gck_test_kind_name((gck_test_kind)k));
                gck_assert_same_f64(w32, gck_pnorm_f32(f, n, g_ps[pi]), "%s pnorm_f32 p=%g n=%zu %s", p->isa->name,
                                    g_ps[pi], n, gck_test_kind_name((gck_test_kind)k));
            }
        }
    }
}

static void test_pnorm_special_p(void **state)
{
    (void)state;
    const double x[4] = {3.0, -4.0, 0.0, 12.0};
    assert_true(gck_pnorm_f64(x, 4, 1.0) == 19.0);
    assert_true(gck_pnorm_f64(x, 4, 2.0) == 13.0);
    assert_true(gck_pnorm_f64(x, 4, INFINITY) == 12.0);
    assert_true(isnan(gck_pnorm_f64(x, 4, 0.0)));
    assert_true(isnan(gck_pnorm_f64(x, 4, -1.0)));
    assert_true(isnan(gck_pnorm_f64(x, 4, NAN)));
    assert_true(isnan(gck_pnorm_f64(x, 4, -INFINITY)));
    assert_true(gck_pnorm_f64(NULL, 0, 3.0) == 0.0 && gck_pnorm_f32(NULL, 0, INFINITY) == 0.0);
    const double nan_x[3] = {1.0, NAN, 2.0};
    for (size_t pi = 0; pi < NP; pi++)
        assert_true(isnan(gck_pnorm_f64(nan_x, 3, g_ps[pi])));
    const double inf_x[3] = {1.0, -INFINITY, 2.0};
    for (size_t pi = 0; pi < NP; pi++)
        assert_true(gck_pnorm_f64(inf_x, 3, g_ps[pi]) == INFINITY);
    /* huge elements do not overflow a finite norm, for any p */
    const double big[2] = {0x1p1000, 0x1p1000};
    assert_true(gck_ulp_diff(gck_pnorm_f64(big, 2, 3.0), 0x1p1000 * cbrt(2.0)) <= 2);
    assert_true(gck_pnorm_f64(big, 2, 1000.0) > 0x1p1000 && isfinite(gck_pnorm_f64(big, 2, 2000.0)));
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_block_slots),
                 GCK_ISA_TEST(test_pnorm_matches_scalar),
                 GCK_ISA_TEST(test_pnorm_special_p))
