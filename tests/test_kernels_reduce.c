/* tests/test_kernels_reduce.c - sumsq/dist2/l2norm on one ISA vs the scalar reference, bit for bit.
 *
 * Run once per ISA (--isa NAME). Checks the block slots against scalar, and
 * the public functions against the canonical tree rebuilt here from its
 * definition (recursive pairwise), so the driver in api.c is checked too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

typedef double (*block_fn)(const gck_kernel_table *t, const void *a, const void *b, size_t lo, size_t len);

static double sumsq64(const gck_kernel_table *t, const void *a, const void *b, size_t lo, size_t len)
{
    (void)b;
    return t->sumsq_f64_block((const double *)a + lo, len);
}
static double sumsq32(const gck_kernel_table *t, const void *a, const void *b, size_t lo, size_t len)
{
    (void)b;
    return t->sumsq_f32_block((const float *)a + lo, len);
}
static double dist64(const gck_kernel_table *t, const void *a, const void *b, size_t lo, size_t len)
{
    return t->dist2_f64_block((const double *)a + lo, (const double *)b + lo, len);
}
static double dist32(const gck_kernel_table *t, const void *a, const void *b, size_t lo, size_t len)
{
    return t->dist2_f32_block((const float *)a + lo, (const float *)b + lo, len);
}

/* The canonical block tree straight from its definition. */
static double tree(block_fn f, const gck_kernel_table *t, const void *a, const void *b, size_t b0, size_t nb,
                   size_t n)
{
    if (nb == 1) {
        const size_t lo = b0 * GCK_BLOCK;
        return f(t, a, b, lo, n - lo < GCK_BLOCK ? n - lo : GCK_BLOCK);
    }
    size_t h = 1;
    while (h * 2 < nb)
        h *= 2;
    const double left = tree(f, t, a, b, b0, h, n);
    return left + tree(f, t, a, b, b0 + h, nb - h, n);
}

static double canonical(block_fn f, const gck_kernel_table *t, const void *a, const void *b, size_t n)
{
    if (n == 0)
        return f(t, a, b, 0, 0);
    return tree(f, t, a, b, 0, (n + GCK_BLOCK - 1) / GCK_BLOCK, n);
}

typedef struct bufs {
    double *a64, *b64;
    float *a32, *b32;
} bufs;

static bufs *g_bufs;

static int setup(void **state)
{
    (void)state;
    const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;
    g_bufs = calloc(1, sizeof *g_bufs);
    g_bufs->a64 = gck_test_alloc(cap * sizeof(double));
    g_bufs->b64 = gck_test_alloc(cap * sizeof(double));
    g_bufs->a32 = gck_test_alloc(cap * sizeof(float));
    g_bufs->b32 = gck_test_alloc(cap * sizeof(float));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_bufs->a64);
    free(g_bufs->b64);
    free(g_bufs->a32);
    free(g_bufs->b32);
    free(g_bufs);
    return 0;
}

/* Walks sizes x misalignments x input families for f64 kernels. */
static void test_f64_reductions(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (size_t off = 0; off <= 1; off++) {
            for (int k = 0; k < GCK_K_COUNT; k++) {
                if (n > 100000 && k != GCK_K_UNIFORM && k != GCK_K_WITH_NAN && k != GCK_K_HUGE)
                    continue; /* keep the run short; large sizes test the driver */
                double *a = g_bufs->a64 + off, *b = g_bufs->b64 + off;
                gck_test_fill_f64(a, n, (gck_test_kind)k, n + 1);
                gck_test_fill_f64(b, n, GCK_K_UNIFORM, n + 2);
                const char *kn = gck_test_kind_name((gck_test_kind)k);
                if (n <= GCK_BLOCK) {
                    gck_assert_same_f64(p->ref->sumsq_f64_block(a, n), p->isa->sumsq_f64_block(a, n),
                                        "%s sumsq_f64_block n=%zu off=%zu %s", p->isa->name, n, off, kn);
                    gck_assert_same_f64(p->ref->dist2_f64_block(a, b, n), p->isa->dist2_f64_block(a, b, n),
                                        "%s dist2_f64_block n=%zu off=%zu %s", p->isa->name, n, off, kn);
                    gck_assert_same_f64(p->ref->sumsq_scaled_f64_block(a, 0x1p-600, n),
                                        p->isa->sumsq_scaled_f64_block(a, 0x1p-600, n),
                                        "%s sumsq_scaled n=%zu off=%zu %s", p->isa->name, n, off, kn);
                    if (k != GCK_K_WITH_NAN)
                        gck_assert_same_f64(p->ref->amax_f64(a, n), p->isa->amax_f64(a, n),
                                            "%s amax n=%zu off=%zu %s", p->isa->name, n, off, kn);
                }
                gck_assert_same_f64(canonical(sumsq64, p->ref, a, NULL, n), gck_sumsq_f64(a, n),
                                    "%s gck_sumsq_f64 n=%zu off=%zu %s", p->isa->name, n, off, kn);
                gck_assert_same_f64(canonical(dist64, p->ref, a, b, n), gck_dist2_f64(a, b, n),
                                    "%s gck_dist2_f64 n=%zu off=%zu %s", p->isa->name, n, off, kn);
                gck_assert_same_f64(canonical(dist64, p->ref, b, a, n), gck_dist2_f64(b, a, n),
                                    "%s gck_dist2_f64(b,a) n=%zu off=%zu %s", p->isa->name, n, off, kn);
            }
        }
    }
}

static void test_f32_reductions(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (size_t off = 0; off <= GCK_TEST_MAX_OFFSET; off++) {
            for (int k = 0; k < GCK_K_COUNT; k++) {
                if (n > 100000 && (off > 1 || (k != GCK_K_UNIFORM && k != GCK_K_WITH_INF)))
                    continue;
                float *a = g_bufs->a32 + off, *b = g_bufs->b32 + off;
                gck_test_fill_f32(a, n, (gck_test_kind)k, n + 3);
                gck_test_fill_f32(b, n, GCK_K_ILL_SCALED, n + 4);
                const char *kn = gck_test_kind_name((gck_test_kind)k);
                if (n <= GCK_BLOCK) {
                    gck_assert_same_f64(p->ref->sumsq_f32_block(a, n), p->isa->sumsq_f32_block(a, n),
                                        "%s sumsq_f32_block n=%zu off=%zu %s", p->isa->name, n, off, kn);
                    gck_assert_same_f64(p->ref->dist2_f32_block(a, b, n), p->isa->dist2_f32_block(a, b, n),
                                        "%s dist2_f32_block n=%zu off=%zu %s", p->isa->name, n, off, kn);
                }
                gck_assert_same_f64(canonical(sumsq32, p->ref, a, NULL, n), gck_sumsq_f32(a, n),
                                    "%s gck_sumsq_f32 n=%zu off=%zu %s", p->isa->name, n, off, kn);
                gck_assert_same_f64(canonical(dist32, p->ref, a, b, n), gck_dist2_f32(a, b, n),
                                    "%s gck_dist2_f32 n=%zu off=%zu %s", p->isa->name, n, off, kn);
                gck_assert_same_f64(sqrt(canonical(sumsq32, p->ref, a, NULL, n)), gck_l2norm_f32(a, n),
                                    "%s gck_l2norm_f32 n=%zu off=%zu %s", p->isa->name, n, off, kn);
            }
        }
    }
}

/* l2norm on this ISA equals l2norm on scalar, including the rescaled path. */
static void test_l2norm_f64_matches_scalar(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (int k = 0; k < GCK_K_COUNT; k++) {
            if (n > 100000 && k != GCK_K_HUGE && k != GCK_K_TINY)
                continue;
            double *a = g_bufs->a64 + 1;
            gck_test_fill_f64(a, n, (gck_test_kind)k, n + 5);
            assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);
            const double want = gck_l2norm_f64(a, n);
            assert_int_equal(gck_isa_select(p->isa->isa), GCK_OK);
            gck_assert_same_f64(want, gck_l2norm_f64(a, n), "%s gck_l2norm_f64 n=%zu %s", p->isa->name, n,
                                gck_test_kind_name((gck_test_kind)k));
        }
    }
}

/* The public wrapper runs on the ISA that was selected. */
static void test_selected_isa_is_active(void **state)
{
    const gck_isa_pair *p = *state;
    assert_int_equal(gck_isa_select(p->isa->isa), GCK_OK);
    assert_int_equal(gck_isa_active(), p->isa->isa);
    assert_string_equal(gck_isa_name(gck_isa_active()), p->isa->name);
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_selected_isa_is_active),
                 GCK_ISA_TEST(test_f64_reductions),
                 GCK_ISA_TEST(test_f32_reductions),
                 GCK_ISA_TEST(test_l2norm_f64_matches_scalar))
