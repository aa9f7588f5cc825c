/* bench/bench_openblas.c - OpenBLAS peers through CBLAS: "openblas_dnrm2/1t/<n>".
 *   nrm2    sqrt(sum x^2), overflow-safe      (peer of l2norm)
 *   dot_xx  dot(x, x), one stream             (peer of sumsq)
 *   dot_ab  dot(a, b), two streams            (peer of dist2)
 *   axpy    y += w x                          (peer of axpy and add)
 *   scal    x *= s                            (peer of scale)
 * Built only when pkg-config finds openblas (bench/CMakeLists.txt). */
#include <cblas.h>

#include "bench.h"

/* Netlib's cblas.h lacks it; a compatible redeclaration is harmless. */
void openblas_set_num_threads(int num_threads);

#define A GCK_BENCH_A
#define B GCK_BENCH_B

/* OpenBLAS runs its own pthreads, not OpenMP: give it the run's count. */
static const char *prepare_openblas(void *ctx, int64_t n, int threads)
{
    openblas_set_num_threads(threads);
    return gck_bench_prepare_arrays(ctx, n, threads);
}

#define BLAS_BODIES(T, p)                                                         \
    static double p##nrm2(void *c, int64_t n)                                     \
    {                                                                             \
        return cblas_##p##nrm2((blasint)n, A(T, c), 1);                           \
    }                                                                             \
    static double p##dot_xx(void *c, int64_t n)                                   \
    {                                                                             \
        return cblas_##p##dot((blasint)n, A(T, c), 1, A(T, c), 1);                \
    }                                                                             \
    static double p##dot_ab(void *c, int64_t n)                                   \
    {                                                                             \
        return cblas_##p##dot((blasint)n, A(T, c), 1, B(T, c), 1);                \
    }                                                                             \
    static double p##axpy(void *c, int64_t n)                                     \
    {                                                                             \
        cblas_##p##axpy((blasint)n, (T)gck_bench_next_weight(c), B(T, c), 1, A(T, c), 1); \
        return 0;                                                                 \
    }                                                                             \
    static double p##scal(void *c, int64_t n)                                     \
    {                                                                             \
        cblas_##p##scal((blasint)n, (T)GCK_BENCH_SCALE, A(T, c), 1);              \
        return 0;                                                                 \
    }

BLAS_BODIES(float, s)
BLAS_BODIES(double, d)

#define BLAS_OP(op, arrays) { { "s" #op, "d" #op }, (arrays), { s##op, d##op } }

static const gck_bench_op blas[] = {
    BLAS_OP(nrm2, 1), BLAS_OP(dot_xx, 1), BLAS_OP(dot_ab, 2), BLAS_OP(axpy, 3), BLAS_OP(scal, 2),
};

void gck_bench_register_openblas(int threads)
{
    static const gck_bench_family fam = {
        .prefix = "openblas_", .suffix = "", .tag = "openblas", .prepare = prepare_openblas
    };
    gck_bench_add_ops(&fam, blas, GCK_BENCH_COUNT(blas), threads);
}
