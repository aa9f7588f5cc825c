/* kernels/api.c - the public kernel functions: blocks, OpenMP, pairwise combine, nrm2 rescale.
 *
 * The ISA files only reduce one block; this file owns the loop structure, so
 * the combining order (kernels_internal.h) is written exactly once. */
#include <math.h>
#include <stdint.h>

#include <gradckpt/kernels.h>

#include "api_list.h"
#include "kernels_internal.h"
#include "status_internal.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

/* ---- pairwise combining of block results ------------------------------------
 * A binary counter: push block results left to right, merging the top two
 * while they cover equally many blocks; finish folds what is left from the
 * right. This is exactly the tree "left = largest power of two below m". */
typedef struct gck_pairwise {
    double v[64];
    uint64_t w[64]; /* blocks covered by v[k] */
    int top;
} gck_pairwise;

static void gck_pairwise_push(gck_pairwise *p, double v, uint64_t w)
{
    while (p->top > 0 && p->w[p->top - 1] == w) {
        p->top--;
        v = p->v[p->top] + v;
        w *= 2;
    }
    p->v[p->top] = v;
    p->w[p->top] = w;
    p->top++;
}

static double gck_pairwise_finish(gck_pairwise *p)
{
    if (p->top == 0)
        return 0.0;
    double v = p->v[--p->top];
    while (p->top > 0) {
        p->top--;
        v = p->v[p->top] + v;
    }
    return v;
}

/* ---- one reduction, described as data so one driver serves all of them ---- */
typedef enum gck_reduce_op {
    GCK_R_SUMSQ_F64,
    GCK_R_SUMSQ_F32,
    GCK_R_SCALED_F64,
    GCK_R_DIST2_F64,
    GCK_R_DIST2_F32,
    GCK_R_ASUM_F64,
    GCK_R_ASUM_F32,
    GCK_R_POWSUM_F64,
    GCK_R_POWSUM_F32,
    GCK_R_DIV_SUMSQ_F64, /* these four read a and write m (which may be a) */
    GCK_R_DIV_SUMSQ_F32,
    GCK_R_SCALE_SUMSQ_F64,
    GCK_R_SCALE_SUMSQ_F32
} gck_reduce_op;

typedef struct gck_reduce_args {
    const gck_kernel_table *t; /* read once per public call */
    gck_reduce_op op;
    const void *a, *b; /* inputs */
    void *m;           /* the array a fused kernel updates */
    double s, p;       /* scale / divisor, exponent */
} gck_reduce_args;

static double gck_reduce_block(const gck_reduce_args *r, size_t lo, size_t len)
{
    const double *a64 = (const double *)r->a + lo, *b64 = (const double *)r->b + lo;
    const float *a32 = (const float *)r->a + lo, *b32 = (const float *)r->b + lo;
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
    case GCK_R_SCALE_SUMSQ_F32:
    default: return r->t->scale_sumsq_f32_block((float *)r->m + lo, a32, (float)r->s, len);
    }
}

static size_t gck_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Pairwise result of the blocks covering [lo, lo + len). */
static double gck_reduce_range(const gck_reduce_args *r, size_t lo, size_t len)
{
    if (len <= GCK_BLOCK)
        return gck_reduce_block(r, lo, len);
    gck_pairwise p;
    p.top = 0;
    for (size_t off = 0; off < len; off += GCK_BLOCK)
        gck_pairwise_push(&p, gck_reduce_block(r, lo + off, gck_min(GCK_BLOCK, len - off)), 1);
    return gck_pairwise_finish(&p);
}

/* 1 when a call of n elements should open an OpenMP region. */
static int gck_use_threads(size_t n)
{
#if GCK_HAVE_OPENMP
    return n >= GCK_PARALLEL_MIN && !omp_in_parallel() && omp_get_max_threads() > 1;
#else
    (void)n;
    return 0;
#endif
}

#define GCK_GROUP_CHUNKS 1024 /* chunk results per parallel region; a power of two */

/* Elements per OpenMP work item: GCK_CHUNK_BLOCKS blocks on big arrays,
 * fewer on mid-sized ones so that each thread gets about four items. Always
 * a power of two of blocks, so a chunk is an aligned subtree of the block
 * tree and the result does not depend on the choice. */
static size_t gck_chunk_elems(size_t n)
{
#if GCK_HAVE_OPENMP
    const size_t want = 4 * (size_t)omp_get_max_threads();
#else
    const size_t want = 4;
#endif
    const size_t nblocks = (n + GCK_BLOCK - 1) / GCK_BLOCK;
    size_t cb = GCK_CHUNK_BLOCKS;
    while (cb > 1 && nblocks < cb * want)
        cb /= 2;
    return cb * GCK_BLOCK;
}

static double gck_reduce(const gck_reduce_args *r, size_t n)
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
            const size_t blocks = (gck_min(chunk, n - lo) + GCK_BLOCK - 1) / GCK_BLOCK;
            gck_pairwise_push(&p, part[k], blocks);
        }
    }
    return gck_pairwise_finish(&p);
}

/* ---- reductions --------------------------------------------------------- */

/* One reduction of op over n elements on the active ISA. */
static double gck_reduce_op_n(gck_reduce_op op, const void *a, const void *b, void *m, double s, double p,
                              size_t n)
{
    const gck_reduce_args r = {gck_kernels_active(), op, a, b, m, s, p};
    return gck_reduce(&r, n);
}

double gck_sumsq_f64(const double *x, size_t n)
{
    return gck_reduce_op_n(GCK_R_SUMSQ_F64, x, NULL, NULL, 0.0, 0.0, n);
}

double gck_sumsq_f32(const float *x, size_t n)
{
    return gck_reduce_op_n(GCK_R_SUMSQ_F32, x, NULL, NULL, 0.0, 0.0, n);
}

double gck_dist2_f64(const double *a, const double *b, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIST2_F64, a, b, NULL, 0.0, 0.0, n);
}

double gck_dist2_f32(const float *a, const float *b, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIST2_F32, a, b, NULL, 0.0, 0.0, n);
}

double gck_div_sumsq_f64(double *dst, const double *x, double d, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIV_SUMSQ_F64, x, NULL, dst, d, 0.0, n);
}

double gck_div_sumsq_f32(float *dst, const float *x, float d, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIV_SUMSQ_F32, x, NULL, dst, (double)d, 0.0, n);
}

double gck_scale_sumsq_f64(double *dst, const double *x, double s, size_t n)
{
    return gck_reduce_op_n(GCK_R_SCALE_SUMSQ_F64, x, NULL, dst, s, 0.0, n);
}

double gck_scale_sumsq_f32(float *dst, const float *x, float s, size_t n)
{
    return gck_reduce_op_n(GCK_R_SCALE_SUMSQ_F32, x, NULL, dst, (double)s, 0.0, n);
}

/* max |x| of either dtype; NaN if any element is NaN. max is exact, so any
 * split gives the same value. */
static double gck_amax(const gck_kernel_table *t, const void *x, int is_f32, size_t n)
{
    const size_t chunk = gck_chunk_elems(n);
    const long long nchunks = (long long)((n + chunk - 1) / chunk);
    const long long nthreaded = gck_use_threads(n) ? nchunks : (n > 0);
    double part_max = 0.0;
    int any_nan = 0;
    long long c;
#if GCK_HAVE_OPENMP
#pragma omp parallel for schedule(static) reduction(max : part_max) reduction(| : any_nan) if (nthreaded > 1)
#endif
    for (c = 0; c < nthreaded; c++) {
        const size_t lo = nthreaded == 1 ? 0 : (size_t)c * chunk;
        const size_t len = nthreaded == 1 ? n : gck_min(chunk, n - lo);
        const double v = is_f32 ? t->amax_f32((const float *)x + lo, len) : t->amax_f64((const double *)x + lo, len);
        any_nan |= isnan(v);
        part_max = v > part_max ? v : part_max;
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

/* A plain sum of squares below this may hold squares that lost bits to
 * underflow (|x| < 2^-511); their total error is below n * 2^-1074, which is
 * negligible next to 2^-900 for any n < 2^100. */
#define GCK_NRM2_TINY 0x1p-900
/* Largest p for which pnorm scales by a power of two (terms < 2^p). */
#define GCK_PNORM_POW2_MAX 900.0

double gck_l2norm_f64(const double *x, size_t n)
{
    const gck_kernel_table *t = gck_kernels_active();
    const gck_reduce_args r = {t, GCK_R_SUMSQ_F64, x, NULL, NULL, 0.0, 0.0};
    const double s = gck_reduce(&r, n);
    if (isnan(s) || (s >= GCK_NRM2_TINY && s < INFINITY))
        return sqrt(s);
    /* Overflowed (+Inf) or too small: rescale by a power of two so that the
     * largest element lands in [1, 2). No NaN is present here (it would have
     * made s NaN). */
    const double m = gck_amax(t, x, 0, n);
    if (m == 0.0 || isinf(m))
        return m;
    const int k = gck_unit_exponent(m);
    const gck_reduce_args rs = {t, GCK_R_SCALED_F64, x, NULL, NULL, ldexp(1.0, k), 0.0};
    return ldexp(sqrt(gck_reduce(&rs, n)), -k);
}

double gck_l2norm_f32(const float *x, size_t n)
{
    /* f32 squares lie in [2^-298, 2^256] in f64: no overflow, no underflow */
    return sqrt(gck_sumsq_f32(x, n));
}

/* p-norm of either dtype (see kernels.h). */
static double gck_pnorm(const void *x, int is_f32, size_t n, double p)
{
    if (!(p > 0.0))
        return NAN; /* p <= 0 or NaN: not a norm */
    if (p == 2.0)
        return is_f32 ? gck_l2norm_f32(x, n) : gck_l2norm_f64(x, n);
    const gck_kernel_table *t = gck_kernels_active();
    if (p == 1.0) {
        const gck_reduce_args r = {t, is_f32 ? GCK_R_ASUM_F32 : GCK_R_ASUM_F64, x, NULL, NULL, 0.0, 0.0};
        return gck_reduce(&r, n);
    }
    const double m = gck_amax(t, x, is_f32, n);
    if (isinf(p) || isnan(m) || m == 0.0 || isinf(m))
        return m;
    /* Scale so the largest |x| is near 1: no term can overflow or lose the
     * sum to underflow. Up to p = 900 the scale is an exact power of two and
     * terms stay below 2^p; beyond, 2^p could overflow, so divide by m
     * (one more rounding per element, which pow divides by p again). */
    const gck_reduce_op op = is_f32 ? GCK_R_POWSUM_F32 : GCK_R_POWSUM_F64;
    if (p <= GCK_PNORM_POW2_MAX || m < 0x1p-1000) {
        const int k = gck_unit_exponent(m);
        const gck_reduce_args r = {t, op, x, NULL, NULL, ldexp(1.0, k), p};
        return ldexp(pow(gck_reduce(&r, n), 1.0 / p), -k);
    }
    const gck_reduce_args r = {t, op, x, NULL, NULL, 1.0 / m, p};
    return m * pow(gck_reduce(&r, n), 1.0 / p);
}

double gck_pnorm_f64(const double *x, size_t n, double p)
{
    return gck_pnorm(x, 0, n, p);
}

double gck_pnorm_f32(const float *x, size_t n, double p)
{
    return gck_pnorm(x, 1, n, p);
}

/* ---- elementwise ----------------------------------------------------------- */

/* Runs body(lo, len) over [0, n) in chunks, on threads when n is large. Each
 * element's result is independent of the split. */
#if GCK_HAVE_OPENMP
#define GCK_ELEMENTWISE(n, body)                                                \
    do {                                                                        \
        if (!gck_use_threads(n)) {                                              \
            const size_t lo = 0, len = (n);                                     \
            body;                                                               \
        } else {                                                                \
            const size_t chunk_ = gck_chunk_elems(n);                           \
            const long long nch_ = (long long)(((n) + chunk_ - 1) / chunk_);    \
            long long c_;                                                       \
            _Pragma("omp parallel for schedule(static)")                        \
            for (c_ = 0; c_ < nch_; c_++) {                                     \
                const size_t lo = (size_t)c_ * chunk_;                          \
                const size_t len = gck_min(chunk_, (n) - lo);                   \
                body;                                                           \
            }                                                                   \
        }                                                                       \
    } while (0)
#else
#define GCK_ELEMENTWISE(n, body)                                                \
    do {                                                                        \
        const size_t lo = 0, len = (n);                                         \
        body;                                                                   \
    } while (0)
#endif

/* The public elementwise functions: read the table once, then split. */
#define GCK_API_ADD(slot, TA, TX)                                    \
    void gck_##slot(TA *acc, const TX *x, size_t n)                  \
    {                                                                \
        const gck_kernel_table *t = gck_kernels_active();            \
        GCK_ELEMENTWISE(n, t->slot(acc + lo, x + lo, len));          \
    }
#define GCK_API_AXPY(slot, TA, TW, TX)                               \
    void gck_##slot(TA *acc, TW w, const TX *x, size_t n)            \
    {                                                                \
        const gck_kernel_table *t = gck_kernels_active();            \
        GCK_ELEMENTWISE(n, t->slot(acc + lo, w, x + lo, len));       \
    }
#define GCK_API_SCALE(slot, T)                                       \
    void gck_##slot(T *x, T s, size_t n)                             \
    {                                                                \
        const gck_kernel_table *t = gck_kernels_active();            \
        GCK_ELEMENTWISE(n, t->slot(x + lo, s, len));                 \
    }

GCK_API_ADD(add_f64, double, double)
GCK_API_ADD(add_f32, float, float)
GCK_API_ADD(add_f32_to_f64, double, float)
GCK_API_ADD(add_f64_to_f32, float, double)
GCK_API_AXPY(axpy_f64, double, double, double)
GCK_API_AXPY(axpy_f32, float, float, float)
GCK_API_AXPY(axpy_f32_to_f64, double, double, float)
GCK_API_AXPY(axpy_f64_to_f32, float, float, double)
GCK_API_AXPY(axpy_init_f64, double, double, double)
GCK_API_AXPY(axpy_init_f32, float, float, float)
GCK_API_AXPY(axpy_init_f32_to_f64, double, double, float)
GCK_API_AXPY(axpy_init_f64_to_f32, float, float, double)
GCK_API_SCALE(scale_f64, double)
GCK_API_SCALE(scale_f32, float)

/* ---- byte planes ------------------------------------------------------------ */

/* 1 when the byte ranges [p, p + len) and [q, q + len) share a byte (q may
 * be NULL). Compared as integers: the pointers may be to unrelated objects. */
static int gck_overlaps(const void *p, const void *q, size_t len)
{
    if (q == NULL || len == 0)
        return 0;
    const uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    return x < y ? y - x < len : x - y < len;
}

/* The checks both directions share; in and b are the inputs of n*esz bytes. */
static gck_status gck_bytes_check(const char *fn, const void *out, const void *in, const void *b, size_t n,
                                  size_t esz)
{
    GCK_CHECK_ARG(esz == 1 || esz == 2 || esz == 4 || esz == 8, "%s: esz %zu is not 1, 2, 4 or 8", fn, esz);
    GCK_CHECK_ARG(n <= SIZE_MAX / esz, "%s: n * esz overflows (n = %zu, esz = %zu)", fn, n, esz);
    GCK_CHECK_ARG(n == 0 || (out != NULL && in != NULL), "%s: NULL %s with n = %zu", fn,
                  out == NULL ? "dst" : "input", n);
    GCK_CHECK_ARG(!gck_overlaps(out, in, n * esz) && !gck_overlaps(out, b, n * esz),
                  "%s: dst overlaps an input", fn);
    return GCK_OK;
}

/* Single-threaded: planes sit n bytes apart, so a piece of the array is not a
 * smaller call, and the caller parallelises across tensors anyway. */
gck_status gck_xor_shuffle(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)
{
    GCK_TRY(gck_bytes_check("gck_xor_shuffle", dst, a, b, n, esz));
    if (n > 0)
        gck_kernels_active()->xor_shuffle(dst, a, b, n, esz);
    return GCK_OK;
}

gck_status gck_unshuffle_xor(void *dst, const uint8_t *src, const void *b, size_t n, size_t esz)
{
    GCK_TRY(gck_bytes_check("gck_unshuffle_xor", dst, src, b, n, esz));
    if (n > 0)
        gck_kernels_active()->unshuffle_xor(dst, src, b, n, esz);
    return GCK_OK;
}

/* ---- every kernel of api_list.h is declared with the signature it lists --- */
#define GCK_API_CHECK(name, shape, A, X)                                       \
    _Static_assert(_Generic(&gck_##name, GCK_SIG_##shape(A, X): 1, default: 0), \
                   "gck_" #name " does not have the " #shape " signature api_list.h lists");
GCK_API_KERNEL_LIST(GCK_API_CHECK)
