/* bench/bench_naive.c - the loops a user writes, with the project's strict
 * flags (-O3, -ffp-contract=off, no fast-math): "naive_sumsq_f32/1t/<n>".
 * The reductions cannot be vectorised without reassociating, so they show
 * what the fixed-order SIMD kernels win over plain C. Single-threaded only. */
#include "bench.h"

#define A GCK_BENCH_A
#define B GCK_BENCH_B

#define NAIVE_BODIES(T, sfx)                                                \
    static double sumsq_##sfx(void *c, int64_t n)                           \
    {                                                                       \
        const T *x = A(T, c);                                               \
        double s = 0;                                                       \
        for (int64_t i = 0; i < n; i++)                                     \
            s += (double)x[i] * x[i];                                       \
        return s;                                                           \
    }                                                                       \
    static double dist2_##sfx(void *c, int64_t n)                           \
    {                                                                       \
        const T *a = A(T, c), *b = B(T, c);                                 \
        double s = 0;                                                       \
        for (int64_t i = 0; i < n; i++) {                                   \
            const double d = (double)a[i] - b[i];                           \
            s += d * d;                                                     \
        }                                                                   \
        return s;                                                           \
    }                                                                       \
    static double axpy_##sfx(void *c, int64_t n)                            \
    {                                                                       \
        T *acc = A(T, c);                                                   \
        const T *x = B(T, c);                                               \
        const T w = (T)gck_bench_next_weight(c);                            \
        for (int64_t i = 0; i < n; i++)                                     \
            acc[i] += w * x[i];                                             \
        return 0;                                                           \
    }

NAIVE_BODIES(float, f32)
NAIVE_BODIES(double, f64)

static const gck_bench_op naive[] = {
    GCK_BENCH_OP(sumsq, 1),
    GCK_BENCH_OP(dist2, 2),
    GCK_BENCH_OP(axpy, 3),
};

void gck_bench_register_naive(int threads)
{
    static const gck_bench_family fam = { .prefix = "naive_", .suffix = "", .tag = "naive" };
    if (threads == 1)
        gck_bench_add_ops(&fam, naive, GCK_BENCH_COUNT(naive), threads);
}
