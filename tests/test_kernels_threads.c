/* tests/test_kernels_threads.c - 1, 2 and 3 OpenMP threads give the same bits (per ISA). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"


static void test_reductions_thread_independent(void **state)
{
    const gck_isa_pair *p = *state;
    static const size_t sizes[] = {GCK_PARALLEL_MIN, GCK_PARALLEL_MIN + 1, 3 * GCK_PARALLEL_MIN + 4097,
                                   (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK * 37 + 5};
    const size_t nmax = sizes[3] + 1;
    double *a = gck_test_alloc(nmax * 8), *b = gck_test_alloc(nmax * 8);
    float *f = gck_test_alloc(nmax * 4), *g = gck_test_alloc(nmax * 4);
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t n = sizes[si];
        gck_test_fill_f64(a + 1, n, GCK_K_ILL_SCALED, n);
        gck_test_fill_f64(b, n, GCK_K_UNIFORM, n + 1);
        gck_test_fill_f32(f + 1, n, GCK_K_ILL_SCALED, n + 2);
        gck_test_fill_f32(g, n, GCK_K_UNIFORM, n + 3);
        double want[6] = {0};
        for (int t = 1; t <= 3; t++) {
            gck_test_set_threads(t);
            const double got[6] = {gck_sumsq_f64(a + 1, n), gck_dist2_f64(a + 1, b, n), gck_l2norm_f64(a + 1, n),
                                   gck_sumsq_f32(f + 1, n), gck_dist2_f32(f + 1, g, n), gck_l2norm_f32(f + 1, n)};
            for (int k = 0; k < 6; k++) {
                if (t == 1)
                    want[k] = got[k];
                else
                    gck_assert_same_f64(want[k], got[k], "%s result %d n=%zu threads=%d", p->isa->name, k, n, t);
            }
        }
        /* the rescaled l2norm path, on threads too */
        gck_test_fill_f64(a, n, GCK_K_HUGE, n + 4);
        for (size_t i = 0; i < n; i++)
            a[i] *= 0x1p-20; /* squares still overflow, the norm does not */
        gck_test_set_threads(1);
        const double huge1 = gck_l2norm_f64(a, n);
        gck_test_set_threads(2);
        gck_assert_same_f64(huge1, gck_l2norm_f64(a, n), "%s huge l2norm n=%zu", p->isa->name, n);
        assert_true(isfinite(huge1));
    }
    gck_test_set_threads(2);
    free(a), free(b), free(f), free(g);
}

static void test_elementwise_thread_independent(void **state)
{
    const gck_isa_pair *p = *state;
    const size_t n = 3 * GCK_PARALLEL_MIN + 3;
    double *x = gck_test_alloc(n * 8), *acc1 = gck_test_alloc(n * 8), *acc2 = gck_test_alloc(n * 8);
    gck_test_fill_f64(x, n, GCK_K_UNIFORM, 5);
    gck_test_fill_f64(acc1, n, GCK_K_ILL_SCALED, 6);
    memcpy(acc2, acc1, n * 8);
    gck_test_set_threads(1);
    gck_axpy_f64(acc1, 0.3, x, n);
    gck_scale_f64(acc1, 1.7, n);
    gck_add_f64(acc1, x, n);
    gck_test_set_threads(3);
    gck_axpy_f64(acc2, 0.3, x, n);
    gck_scale_f64(acc2, 1.7, n);
    gck_add_f64(acc2, x, n);
    if (memcmp(acc1, acc2, n * 8) != 0)
        fail_msg("%s: elementwise results differ between 1 and 3 threads", p->isa->name);
    gck_test_set_threads(2);
    free(x), free(acc1), free(acc2);
}

GCK_PER_ISA_MAIN(NULL, NULL,
                 GCK_ISA_TEST(test_reductions_thread_independent),
                 GCK_ISA_TEST(test_elementwise_thread_independent))
