/* kernels/scalar.c - the reference kernels: they define the order of every operation.
 *
 * Built with baseline flags only. Readable first: every SIMD file reproduces
 * exactly these operations in exactly this order (kernels_internal.h explains
 * the shape). Each lane update is written lane = lane + term so the operation
 * order is visible; the build's -ffp-contract=off keeps multiply and add
 * separate. */
#include <math.h>

#include "kernels_internal.h"

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

/* The square of a widened float is exact in f64, so the only roundings are
 * the lane additions. */
static double gck_sumsq_f32_block_scalar(const float *x, size_t n)
{
    GCK_LANE_REDUCE(n, (double)x[i] * (double)x[i]);
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

static double gck_dist2_f32_block_scalar(const float *a, const float *b, size_t n)
{
    GCK_LANE_REDUCE(n, ((double)a[i] - (double)b[i]) * ((double)a[i] - (double)b[i]));
}

/* Largest |x[i]|. Only used on inputs without NaN (l2norm's scaled path), so
 * the order of comparisons cannot change the result. */
static double gck_amax_f64_scalar(const double *x, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double v = fabs(x[i]);
        m = v > m ? v : m;
    }
    return m;
}

static void gck_add_f64_scalar(double *acc, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] = acc[i] + x[i];
}

static void gck_add_f32_scalar(float *acc, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] = acc[i] + x[i];
}

static void gck_axpy_f64_scalar(double *acc, double w, const double *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] = acc[i] + w * x[i];
}

static void gck_axpy_f32_scalar(float *acc, float w, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] = acc[i] + w * x[i];
}

static void gck_scale_f64_scalar(double *x, double s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] * s;
}

static void gck_scale_f32_scalar(float *x, float s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = x[i] * s;
}

const gck_kernel_table gck_kernels_scalar = {
    .isa = GCK_ISA_SCALAR,
    .name = "scalar",
    .sumsq_f64_block = gck_sumsq_f64_block_scalar,
    .sumsq_f32_block = gck_sumsq_f32_block_scalar,
    .sumsq_scaled_f64_block = gck_sumsq_scaled_f64_block_scalar,
    .dist2_f64_block = gck_dist2_f64_block_scalar,
    .dist2_f32_block = gck_dist2_f32_block_scalar,
    .amax_f64 = gck_amax_f64_scalar,
    .add_f64 = gck_add_f64_scalar,
    .add_f32 = gck_add_f32_scalar,
    .axpy_f64 = gck_axpy_f64_scalar,
    .axpy_f32 = gck_axpy_f32_scalar,
    .scale_f64 = gck_scale_f64_scalar,
    .scale_f32 = gck_scale_f32_scalar,
};
