/* kernels/reduce.c - the reduction driver (reduce_internal.h): blocks, OpenMP chunks, pairwise combine, nrm2 rescale.
 *
 * The ISA files only reduce one block; this file owns the loop structure, so
 * the combining order (kernels_internal.h) is written exactly once, for the
 * single-array kernels (api.c) and the list functions (tensors.c) alike. */
#include "reduce_internal.h"

#include <limits.h>
#include <math.h>

#include <gradckpt/kernels.h>

#include "norm_internal.h"
#include "threads_internal.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

static double gck_reduce_block(const gck_reduce_args *r, size_t lo, size_t len)
{
    const double *a64 = (const double *)r->a + lo, *b64 = (const double *)r->b + lo;
    const float *a32 = (const float *)r->a + lo, *b32 = (const float *)r->b + lo;
    const uint16_t *a16 = (const uint16_t *)r->a + lo, *b16 = (const uint16_t *)r->b + lo;
    switch (r->op) {
    case GCK_R_SUMSQ_F64: return r->t->sumsq_f64_block(a64, len);
    case GCK_R_SUMSQ_F32: return r->t->sumsq_f32_block(a32, len);
    case GCK_R_SCALED_F64: return r->t->sumsq_scaled_f64_block(a64, r->s, len);
    case GCK_R_DIST2_F64: return r->t->dist2_f64_block(a64, b64, len);
    case GCK_R_DIST2_F32: return r->t->dist2_f32_block(a32, b32, len);
    case GCK_R_ASUM_F64: return r->t->asum_f64_block(a64, len);
    case GCK_R_ASUM_F32: return r->t->asum_f32_block(a32, len);
    case GCK_R_POWSUM_F64: return r->t->powsum_f64_block(a64, r->p, r->s, len);
    case GCK_R_POWSUM_F32: return r->t->powsum_f32_block(a32, r->p, r->s, len);
    case GCK_R_DIV_SUMSQ_F64: return r->t->div_sumsq_f64_block((double *)r->m + lo, a64, r->s, len);
    case GCK_R_DIV_SUMSQ_F32: return r->t->div_sumsq_f32_block((float *)r->m + lo, a32, (float)r->s, len);
    case GCK_R_SCALE_SUMSQ_F64: return r->t->scale_sumsq_f64_block((double *)r->m + lo, a64, r->s, len);
    case GCK_R_SUMSQ_BF16: return r->t->sumsq_bf16_block(a16, len);
    case GCK_R_SUMSQ_F16: return r->t->sumsq_f16_block(a16, len);
    case GCK_R_DIST2_BF16: return r->t->dist2_bf16_block(a16, b16, len);
    case GCK_R_DIST2_F16: return r->t->dist2_f16_block(a16, b16, len);
    case GCK_R_ASUM_BF16: return r->t->asum_bf16_block(a16, len);
    case GCK_R_ASUM_F16: return r->t->asum_f16_block(a16, len);
    case GCK_R_POWSUM_BF16: return r->t->powsum_bf16_block(a16, r->p, r->s, len);
    case GCK_R_POWSUM_F16: return r->t->powsum_f16_block(a16, r->p, r->s, len);
    case GCK_R_AXPY_DIV_SUMSQ_F32:
        return r->t->axpy_div_sumsq_f32_block((float *)r->m + lo, a32, (float)r->w, (float)r->s, len);
    case GCK_R_AXPY_SCALE_SUMSQ_F32:
        return r->t->axpy_scale_sumsq_f32_block((float *)r->m + lo, a32, (float)r->w, (float)r->s, len);
    case GCK_R_SCALE_SUMSQ_F32:
    default: return r->t->scale_sumsq_f32_block((float *)r->m + lo, a32, (float)r->s, len);
    }
}

static size_t gck_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

double gck_reduce_range(const gck_reduce_args *r, size_t lo, size_t len)
{
    if (len <= GCK_BLOCK)
        return gck_reduce_block(r, lo, len);
    gck_pairwise p;
    p.top = 0;
    for (size_t off = 0; off < len; off += GCK_BLOCK)
        gck_pairwise_push(&p, gck_reduce_block(r, lo + off, gck_min(GCK_BLOCK, len - off)), 1);
    return gck_pairwise_finish(&p);
}

int gck_use_threads(size_t n)
{
#if GCK_HAVE_OPENMP
    return n >= GCK_PARALLEL_MIN && !omp_in_parallel() && gck_omp_threads() > 1;
#else
    (void)n;
    return 0;
#endif
}

#define GCK_GROUP_CHUNKS 1024 /* chunk results per parallel region; a power of two */

/* GCK_CHUNK_BLOCKS blocks on big arrays, fewer on mid-sized ones so that
 * each thread gets about four items. */
size_t gck_chunk_elems(size_t n)
{
#if GCK_HAVE_OPENMP
    const size_t want = 4 * (size_t)gck_omp_threads();
#else
    const size_t want = 4;
#endif
    const size_t nblocks = (n + GCK_BLOCK - 1) / GCK_BLOCK;
    size_t cb = GCK_CHUNK_BLOCKS;
    while (cb > 1 && nblocks < cb * want)
        cb /= 2;
    return cb * GCK_BLOCK;
}

double gck_reduce(const gck_reduce_args *r, size_t n)
{
    if (!gck_use_threads(n))
        return gck_reduce_range(r, 0, n);
    /* Chunks are aligned runs of a power of two of blocks, so each chunk's
     * result is a subtree of the serial tree, whichever thread computes it. */
    const size_t chunk = gck_chunk_elems(n);
    const size_t nchunks = (n + chunk - 1) / chunk;
    gck_pairwise p;
    p.top = 0;
    for (size_t g0 = 0; g0 < nchunks; g0 += GCK_GROUP_CHUNKS) {
        const size_t gn = gck_min(GCK_GROUP_CHUNKS, nchunks - g0);
        double part[GCK_GROUP_CHUNKS];
        long long c;
#if GCK_HAVE_OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (c = 0; c < (long long)gn; c++) {
            const size_t lo = (g0 + (size_t)c) * chunk;
            part[c] = gck_reduce_range(r, lo, gck_min(chunk, n - lo));
        }
        for (size_t k = 0; k < gn; k++) {
            const size_t lo = (g0 + k) * chunk;
            gck_pairwise_push(&p, part[k], gck_blocks_of(gck_min(chunk, n - lo)));
        }
    }
    return gck_pairwise_finish(&p);
}

static double gck_amax_range(const gck_kernel_table *t, const void *x, gck_elem elem, size_t lo, size_t len)
{
    switch (elem) {
    case GCK_E_F64: return t->amax_f64((const double *)x + lo, len);
    case GCK_E_F32: return t->amax_f32((const float *)x + lo, len);
    case GCK_E_BF16: return t->amax_bf16((const uint16_t *)x + lo, len);
    case GCK_E_F16:
    default: return t->amax_f16((const uint16_t *)x + lo, len);
    }
}

double gck_amax(const gck_kernel_table *t, const void *x, gck_elem elem, size_t n)
{
    /* one call, no parallel region: an if(0) region still costs a team of
     * one (about 0.3 us on the Zen 5 VM, where amax_bf16 of 16 elements
     * took 0.33 us and sumsq_bf16 0.035) */
    if (!gck_use_threads(n))
        return n > 0 ? gck_amax_range(t, x, elem, 0, n) : 0.0;
    const size_t chunk = gck_chunk_elems(n);
    const long long nthreaded = (long long)((n + chunk - 1) / chunk);
    double part_max = 0.0;
    int any_nan = 0;
    long long c;
#if GCK_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(max : part_max) reduction(| : any_nan)
#endif
    for (c = 0; c < nthreaded; c++) {
        const size_t lo = (size_t)c * chunk;
        const size_t len = gck_min(chunk, n - lo);
        const double v = gck_amax_range(t, x, elem, lo, len);
        gck_amax_fold(&part_max, &any_nan, v);
    }
    return any_nan ? NAN : part_max;
}

/* k such that m * 2^k lies in [1, 2), clamped so that 2^k stays finite (a
 * subnormal m then lands in [2^-51, 1), still far from underflow). */
static int gck_unit_exponent(double m)
{
    const int k = -ilogb(m);
    return k > 1023 ? 1023 : k;
}

double gck_l2norm_f64_from(const gck_kernel_table *t, const double *x, size_t n, double s)
{
    if (gck_l2_sum_ok(s))
        return sqrt(s);
    /* Overflowed (+Inf) or too small: rescale by a power of two so that the
     * largest element lands in [1, 2). No NaN is present here (it would have
     * made s NaN). */
    const double m = gck_amax(t, x, GCK_E_F64, n);
    if (m == 0.0 || isinf(m))
        return m;
    const int k = gck_unit_exponent(m);
    const gck_reduce_args rs = {.t = t, .op = GCK_R_SCALED_F64, .a = x, .s = ldexp(1.0, k)};
    return ldexp(sqrt(gck_reduce(&rs, n)), -k);
}

/* Largest p for which pnorm scales by a power of two (terms < 2^p). */
#define GCK_PNORM_POW2_MAX 900.0

gck_pnorm_plan gck_pnorm_plan_for(double m, double p)
{
    /* Scale so the largest |x| is near 1: no term can overflow or lose the
     * sum to underflow. Up to p = 900 the scale is an exact power of two and
     * terms stay below 2^p; beyond, 2^p could overflow, so divide by m
     * (one more rounding per element, which pow divides by p again). */
    if (p <= GCK_PNORM_POW2_MAX || m < 0x1p-1000) {
        const int k = gck_unit_exponent(m);
        return (gck_pnorm_plan){ldexp(1.0, k), k};
    }
    return (gck_pnorm_plan){1.0 / m, INT_MIN};
}

double gck_pnorm_root(gck_pnorm_plan plan, double m, double sum, double p)
{
    return plan.k != INT_MIN ? ldexp(pow(sum, 1.0 / p), -plan.k) : m * pow(sum, 1.0 / p);
}

double gck_exact_recip_f64(double d)
{
    int e;
    if (!(fabs(d) >= 0x1p-1022 && fabs(d) <= 0x1p1022) || fabs(frexp(d, &e)) != 0.5)
        return 0.0;
    return 1.0 / d;
}

float gck_exact_recip_f32(float d)
{
    int e;
    if (!(fabsf(d) >= 0x1p-126f && fabsf(d) <= 0x1p126f) || fabsf(frexpf(d, &e)) != 0.5f)
        return 0.0f;
    return 1.0f / d;
}

gck_reduce_op gck_div_sumsq_op(int is_f32, double d, double *s)
{
    if (is_f32) {
        const float r = gck_exact_recip_f32((float)d);
        *s = r != 0.0f ? (double)r : (double)(float)d;
        return r != 0.0f ? GCK_R_SCALE_SUMSQ_F32 : GCK_R_DIV_SUMSQ_F32;
    }
    const double r = gck_exact_recip_f64(d);
    *s = r != 0.0 ? r : d;
    return r != 0.0 ? GCK_R_SCALE_SUMSQ_F64 : GCK_R_DIV_SUMSQ_F64;
}
