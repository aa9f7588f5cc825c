/* kernels/scalar.c - the reference kernels: they define the order of every operation.
 *
 * Built with baseline flags only. Readable first: every SIMD file reproduces
 * exactly these operations in exactly this order (kernels_internal.h explains
 * the shape). Each lane update is written lane = lane + term so the operation
 * order is visible; the build's -ffp-contract=off keeps multiply and add
 * separate. */
#define GCK_ISA scalar

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>

#include <sleef.h>

#include "kernels_internal.h"
#include "ops_scalar.h"
#include "reduce_internal.h"

#if defined(__AVX__) && !defined(GRADCKPT_NATIVE)
#error "scalar.c must be built without ISA flags: it is the baseline reference"
#endif

/* The canonical block reduction. TERM(i) is the i-th non-negative term (a
 * square); lane j takes terms i = j, j + 64, j + 128, ... in order, summed
 * in runs of GCK_RUN elements: each run starts its lanes at +0.0 and adds
 * them into the block's lanes when it ends. */
#define GCK_LANE_REDUCE(n, TERM)                                        \
    do {                                                                \
        double out_[GCK_LANES] = {0};                                   \
        for (size_t r0_ = 0; r0_ < (n); r0_ += GCK_RUN) {               \
            double in_[GCK_LANES] = {0};                                \
            const size_t r1_ = (n) - r0_ < GCK_RUN ? (n) : r0_ + GCK_RUN; \
            for (size_t i = r0_; i < r1_; i++)                          \
                in_[i % GCK_LANES] = in_[i % GCK_LANES] + (TERM);       \
            for (size_t j_ = 0; j_ < GCK_LANES; j_++)                   \
                out_[j_] = out_[j_] + in_[j_];                          \
        }                                                               \
        return gck_fold_lanes(out_);                                    \
    } while (0)

static double gck_sumsq_f64_block_scalar(const double *x, size_t n)
{
    GCK_LANE_REDUCE(n, x[i] * x[i]);
}

/* The second pass of l2norm: s is a power of two, so x * s is exact unless it
 * lands below DBL_MIN, where it only drops terms far below rounding level. */
static double gck_sumsq_scaled_f64_block_scalar(const double *x, double s, size_t n)
{
    GCK_LANE_REDUCE(n, (x[i] * s) * (x[i] * s));
}

static double gck_dist2_f64_block_scalar(const double *a, const double *b, size_t n)
{
    GCK_LANE_REDUCE(n, (a[i] - b[i]) * (a[i] - b[i]));
}

static double gck_asum_f64_block_scalar(const double *x, size_t n)
{
    GCK_LANE_REDUCE(n, fabs(x[i]));
}

/* SLEEF's FMA pow variants (avx2, avx512f, advsimd, purecfma) agree bit for
 * bit; the non-FMA ones do not. The reference uses purecfma wherever the CPU
 * has FMA, which every CPU that runs a SIMD path does. */
typedef double (*gck_pow_fn)(double, double);
#ifndef FP_FAST_FMA
/* sleef.h declares it only for FMA-enabled compiles; the library always has it. */
double Sleef_powd1_u10purecfma(double, double);
#endif
gck_pow_fn gck_pow_ref(void)
{
#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
    /* the features dispatch.c probed once, not CPUID (a trap to the
     * hypervisor on VMs) on every block */
    return gck_cpu_features_get()->fma ? (gck_pow_fn)Sleef_powd1_u10purecfma : (gck_pow_fn)Sleef_pow_u10;
#else
    return Sleef_powd1_u10purecfma;
#endif
}

static double gck_powsum_f64_block_scalar(const double *x, double p, double s, size_t n)
{
    const gck_pow_fn pw = gck_pow_ref();
    GCK_LANE_REDUCE(n, pw(fabs(x[i]) * s, p));
}

/* The reductions over f32 and over the 2-byte floats, whose elements are
 * widened to f64 by W (exactly; for bf16 and f16 through the f32 value,
 * ops_scalar.h), so each is the f32 kernel of the widened array. The square
 * of a widened float is exact in f64, so sumsq's only roundings are the lane
 * additions; dist2 rounds the difference in f64 first. */
#define GCK_REDUCE_FLOAT_LIKE(t, W)                                            \
    static double gck_sumsq_##t##_block_scalar(const GCK_CT(t) *x, size_t n)   \
    {                                                                          \
        GCK_LANE_REDUCE(n, W(x[i]) * W(x[i]));                                 \
    }                                                                          \
    static double gck_dist2_##t##_block_scalar(const GCK_CT(t) *a, const GCK_CT(t) *b, size_t n) \
    {                                                                          \
        GCK_LANE_REDUCE(n, (W(a[i]) - W(b[i])) * (W(a[i]) - W(b[i])));         \
    }                                                                          \
    static double gck_asum_##t##_block_scalar(const GCK_CT(t) *x, size_t n)    \
    {                                                                          \
        GCK_LANE_REDUCE(n, fabs(W(x[i])));                                     \
    }                                                                          \
    static double gck_powsum_##t##_block_scalar(const GCK_CT(t) *x, double p, double s, size_t n) \
    {                                                                          \
        const gck_pow_fn pw = gck_pow_ref();                             \
        GCK_LANE_REDUCE(n, pw(fabs(W(x[i])) * s, p));                          \
    }
#define GCK_WIDEN_f32(v) ((double)(v))
GCK_REDUCE_FLOAT_LIKE(f32, GCK_WIDEN_f32)
GCK_REDUCE_FLOAT_LIKE(bf16, gck_w1_cvt_bf16_f64)
GCK_REDUCE_FLOAT_LIKE(f16, gck_w1_cvt_f16_f64)

/* The fused kernels store the new value (dst may be src), then square what
 * was stored. */
static inline double gck_div_store_sq_f64(double *dst, const double *src, double d)
{
    const double v = *src / d;
    *dst = v;
    return v * v;
}

static inline double gck_scale_store_sq_f64(double *dst, const double *src, double s)
{
    const double v = *src * s;
    *dst = v;
    return v * v;
}

static inline double gck_div_store_sq_f32(float *dst, const float *src, float d)
{
    const float v = *src / d;
    *dst = v;
    return (double)v * (double)v;
}

static inline double gck_scale_store_sq_f32(float *dst, const float *src, float s)
{
    const float v = *src * s;
    *dst = v;
    return (double)v * (double)v;
}

/* axpy_f32's value, then as above */
static inline double gck_axpy_div_store_sq_f32(float *acc, const float *x, float w, float d)
{
    const float a = *acc + w * *x;
    return gck_div_store_sq_f32(acc, &a, d);
}

static inline double gck_axpy_scale_store_sq_f32(float *acc, const float *x, float w, float s)
{
    const float a = *acc + w * *x;
    return gck_scale_store_sq_f32(acc, &a, s);
}

static double gck_div_sumsq_f64_block_scalar(double *dst, const double *x, double d, size_t n)
{
    GCK_LANE_REDUCE(n, gck_div_store_sq_f64(&dst[i], &x[i], d));
}

static double gck_div_sumsq_f32_block_scalar(float *dst, const float *x, float d, size_t n)
{
    GCK_LANE_REDUCE(n, gck_div_store_sq_f32(&dst[i], &x[i], d));
}

static double gck_scale_sumsq_f64_block_scalar(double *dst, const double *x, double s, size_t n)
{
    GCK_LANE_REDUCE(n, gck_scale_store_sq_f64(&dst[i], &x[i], s));
}

static double gck_scale_sumsq_f32_block_scalar(float *dst, const float *x, float s, size_t n)
{
    GCK_LANE_REDUCE(n, gck_scale_store_sq_f32(&dst[i], &x[i], s));
}

static double gck_axpy_div_sumsq_f32_block_scalar(float *acc, const float *x, float w, float d, size_t n)
{
    GCK_LANE_REDUCE(n, gck_axpy_div_store_sq_f32(&acc[i], &x[i], w, d));
}

static double gck_axpy_scale_sumsq_f32_block_scalar(float *acc, const float *x, float w, float s, size_t n)
{
    GCK_LANE_REDUCE(n, gck_axpy_scale_store_sq_f32(&acc[i], &x[i], w, s));
}

/* The elementwise kernels and amax: the template instantiated on plain C
 * (ops_scalar.h), one element per step, so each is the loop of its C
 * expression (kernel_list.h). */
#include "elementwise.h"

/* Byte planes. One loop per constant element size (the compiler unrolls the
 * k loop) and per b NULL or not; BODY is the plain definition. */
#define GCK_BYTES_SCALAR(ESZ, B)                                                 \
    do {                                                                         \
        for (size_t i = 0; i < n; i++)                                           \
            for (size_t k = 0; k < (ESZ); k++)                                   \
                BODY(i * (ESZ) + k, k, i, (B));                                  \
    } while (0)
#define GCK_BYTES_BY_ESZ(B)                                                      \
    do {                                                                         \
        switch (esz) {                                                           \
        case 1: GCK_BYTES_SCALAR(1, B); break;                                   \
        case 2: GCK_BYTES_SCALAR(2, B); break;                                   \
        case 4: GCK_BYTES_SCALAR(4, B); break;                                   \
        default: GCK_BYTES_SCALAR(8, B); break;                                  \
        }                                                                        \
    } while (0)

static void gck_xor_shuffle_scalar(uint8_t *restrict dst, const void *a, const void *b, size_t n, size_t esz)
{
    const uint8_t *restrict pa = a, *restrict pb = b;
#define BODY(e, k, i, B) dst[(k) * n + (i)] = (uint8_t)(pa[e] ^ ((B) ? pb[e] : 0))
    if (pb != NULL)
        GCK_BYTES_BY_ESZ(1);
    else
        GCK_BYTES_BY_ESZ(0);
#undef BODY
}

static void gck_unshuffle_xor_scalar(void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)
{
    uint8_t *restrict pd = dst;
    const uint8_t *restrict pb = b;
    const uint8_t *pl[8]; /* local: a store through pd could otherwise change planes[k] (2-5x slower) */
    gck_planes_local(pl, planes, esz);
#define BODY(e, k, i, B) pd[e] = (uint8_t)(pl[k][i] ^ ((B) ? pb[e] : 0))
    if (pb != NULL)
        GCK_BYTES_BY_ESZ(1);
    else
        GCK_BYTES_BY_ESZ(0);
#undef BODY
}

/* The rotated forms: the definitions' loops (kernels_internal.h), esz not
 * folded in - the reference, and the store's coder of full versions only on
 * CPUs with none of the SIMD ISAs. */
static void gck_xor_shuffle_rot_scalar(uint8_t *restrict dst, const void *a, const void *b, size_t n, size_t esz)
{
    gck_xor_shuffle_range(dst, a, b, n, esz, 0, n, 1);
}

static void gck_unshuffle_xor_rot_scalar(void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)
{
    const uint8_t *pl[8];
    gck_planes_local(pl, planes, esz);
    gck_unshuffle_xor_range(dst, pl, b, esz, 0, n, 1);
}

static size_t gck_sparse_split_scalar(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill)
{
    return gck_sparse_split_range(bits, vals, x, n, fill, 0, 0);
}

static void gck_sparse_merge_scalar(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, size_t n,
                                    uint8_t fill)
{
    (void)nvals;
    gck_sparse_merge_range(dst, bits, vals, n, fill, 0, 0);
}

GCK_DEFINE_KERNEL_TABLE(GCK_ISA_SCALAR);
