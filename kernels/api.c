/* kernels/api.c - the public kernel functions: arguments, then the reduction driver or the elementwise split.
 *
 * The ISA files only reduce one block; the driver (reduce.c) owns the loop
 * structure, so the combining order (kernels_internal.h) is written once. */
#include <math.h>
#include <stdint.h>

#include <gradckpt/kernels.h>

#include "status_internal.h"
#include "api_list.h"
#include "kernels_internal.h"
#include "reduce_internal.h"

/* ---- reductions --------------------------------------------------------- */

/* One reduction of op over n elements on the active ISA. */
static double gck_reduce_op_n(gck_reduce_op op, const void *a, const void *b, void *m, double s, double p,
                              size_t n)
{
    const gck_reduce_args r = {.t = gck_kernels_active(), .op = op, .a = a, .b = b, .m = m, .s = s, .p = p};
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

/* x / d rounds as x * (1/d) when 1/d is exact, and a multiply is cheaper
 * than a division: gck_div_sumsq_op picks it. */
double gck_div_sumsq_f64(double *dst, const double *x, double d, size_t n)
{
    double s;
    const gck_reduce_op op = gck_div_sumsq_op(0, d, &s);
    return gck_reduce_op_n(op, x, NULL, dst, s, 0.0, n);
}

double gck_div_sumsq_f32(float *dst, const float *x, float d, size_t n)
{
    double s;
    const gck_reduce_op op = gck_div_sumsq_op(1, (double)d, &s);
    return gck_reduce_op_n(op, x, NULL, dst, s, 0.0, n);
}

double gck_scale_sumsq_f64(double *dst, const double *x, double s, size_t n)
{
    return gck_reduce_op_n(GCK_R_SCALE_SUMSQ_F64, x, NULL, dst, s, 0.0, n);
}

double gck_scale_sumsq_f32(float *dst, const float *x, float s, size_t n)
{
    return gck_reduce_op_n(GCK_R_SCALE_SUMSQ_F32, x, NULL, dst, (double)s, 0.0, n);
}

double gck_l2norm_f64(const double *x, size_t n)
{
    const gck_kernel_table *t = gck_kernels_active();
    const gck_reduce_args r = {.t = t, .op = GCK_R_SUMSQ_F64, .a = x};
    return gck_l2norm_f64_from(t, x, n, gck_reduce(&r, n));
}

double gck_l2norm_f32(const float *x, size_t n)
{
    /* f32 squares lie in [2^-298, 2^256] in f64: no overflow, no underflow */
    return sqrt(gck_sumsq_f32(x, n));
}

double gck_sumsq_bf16(const uint16_t *x, size_t n)
{
    return gck_reduce_op_n(GCK_R_SUMSQ_BF16, x, NULL, NULL, 0.0, 0.0, n);
}

double gck_sumsq_f16(const uint16_t *x, size_t n)
{
    return gck_reduce_op_n(GCK_R_SUMSQ_F16, x, NULL, NULL, 0.0, 0.0, n);
}

double gck_dist2_bf16(const uint16_t *a, const uint16_t *b, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIST2_BF16, a, b, NULL, 0.0, 0.0, n);
}

double gck_dist2_f16(const uint16_t *a, const uint16_t *b, size_t n)
{
    return gck_reduce_op_n(GCK_R_DIST2_F16, a, b, NULL, 0.0, 0.0, n);
}

/* bf16 and f16 values are f32 values: their squares are in range as well */
double gck_l2norm_bf16(const uint16_t *x, size_t n)
{
    return sqrt(gck_sumsq_bf16(x, n));
}

double gck_l2norm_f16(const uint16_t *x, size_t n)
{
    return sqrt(gck_sumsq_f16(x, n));
}

/* The reductions pnorm runs for each element type. */
static const struct gck_pnorm_ops {
    gck_reduce_op asum, powsum;
} gck_pnorm_ops[] = {
    [GCK_E_F64] = {GCK_R_ASUM_F64, GCK_R_POWSUM_F64},
    [GCK_E_F32] = {GCK_R_ASUM_F32, GCK_R_POWSUM_F32},
    [GCK_E_BF16] = {GCK_R_ASUM_BF16, GCK_R_POWSUM_BF16},
    [GCK_E_F16] = {GCK_R_ASUM_F16, GCK_R_POWSUM_F16},
};

static double gck_l2norm_elem(const void *x, gck_elem e, size_t n)
{
    switch (e) {
    case GCK_E_F64: return gck_l2norm_f64(x, n);
    case GCK_E_F32: return gck_l2norm_f32(x, n);
    case GCK_E_BF16: return gck_l2norm_bf16(x, n);
    case GCK_E_F16:
    default: return gck_l2norm_f16(x, n);
    }
}

/* p-norm of any element type (see kernels.h). */
static double gck_pnorm(const void *x, gck_elem e, size_t n, double p)
{
    if (!(p > 0.0))
        return NAN; /* p <= 0 or NaN: not a norm */
    if (p == 2.0)
        return gck_l2norm_elem(x, e, n);
    const gck_kernel_table *t = gck_kernels_active();
    if (p == 1.0) {
        const gck_reduce_args r = {.t = t, .op = gck_pnorm_ops[e].asum, .a = x};
        return gck_reduce(&r, n);
    }
    const double m = gck_amax(t, x, e, n);
    if (isinf(p) || isnan(m) || m == 0.0 || isinf(m))
        return m;
    const gck_pnorm_plan plan = gck_pnorm_plan_for(m, p);
    const gck_reduce_args r = {.t = t, .op = gck_pnorm_ops[e].powsum, .a = x, .s = plan.s, .p = p};
    return gck_pnorm_root(plan, m, gck_reduce(&r, n), p);
}

double gck_pnorm_f64(const double *x, size_t n, double p)
{
    return gck_pnorm(x, GCK_E_F64, n, p);
}

double gck_pnorm_f32(const float *x, size_t n, double p)
{
    return gck_pnorm(x, GCK_E_F32, n, p);
}

double gck_pnorm_bf16(const uint16_t *x, size_t n, double p)
{
    return gck_pnorm(x, GCK_E_BF16, n, p);
}

double gck_pnorm_f16(const uint16_t *x, size_t n, double p)
{
    return gck_pnorm(x, GCK_E_F16, n, p);
}

/* ---- elementwise ----------------------------------------------------------- */

static size_t gck_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

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
#define GCK_API_SCALE(slot, T, TS)                                   \
    void gck_##slot(T *x, TS s, size_t n)                            \
    {                                                                \
        const gck_kernel_table *t = gck_kernels_active();            \
        GCK_ELEMENTWISE(n, t->slot(x + lo, s, len));                 \
    }

/* Each thread's chunk [lo, lo + len) of acc and of every input. */
#define GCK_API_ADD_RFOLD(slot, T)                                   \
    void gck_##slot(T *acc, const T *const *xs, size_t m, size_t n)  \
    {                                                                \
        const gck_kernel_table *t = gck_kernels_active();            \
        if (m == 0)                                                  \
            return;                                                  \
        GCK_ELEMENTWISE(n, t->slot(acc + lo, xs, m, lo, len));       \
    }

GCK_API_ADD_RFOLD(add_rfold_f64, double)
GCK_API_ADD_RFOLD(add_rfold_f32, float)
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
GCK_API_AXPY(axpy_init_nt_f64, double, double, double)
GCK_API_AXPY(axpy_init_nt_f32, float, float, float)
GCK_API_AXPY(scale_into_f64, double, double, double)
GCK_API_AXPY(scale_into_f32, float, float, float)
GCK_API_AXPY(scale_into_nt_f64, double, double, double)
GCK_API_AXPY(scale_into_nt_f32, float, float, float)
GCK_API_SCALE(scale_f64, double, double)
GCK_API_SCALE(scale_f32, float, float)
GCK_API_ADD(add_bf16_to_f32, float, uint16_t)
GCK_API_ADD(add_f16_to_f32, float, uint16_t)
GCK_API_ADD(add_bf16_to_f64, double, uint16_t)
GCK_API_ADD(add_f16_to_f64, double, uint16_t)
GCK_API_AXPY(axpy_bf16_to_f32, float, float, uint16_t)
GCK_API_AXPY(axpy_f16_to_f32, float, float, uint16_t)
GCK_API_AXPY(axpy_bf16_to_f64, double, double, uint16_t)
GCK_API_AXPY(axpy_f16_to_f64, double, double, uint16_t)
GCK_API_AXPY(axpy_init_bf16_to_f32, float, float, uint16_t)
GCK_API_AXPY(axpy_init_f16_to_f32, float, float, uint16_t)
GCK_API_AXPY(axpy_init_bf16_to_f64, double, double, uint16_t)
GCK_API_AXPY(axpy_init_f16_to_f64, double, double, uint16_t)
GCK_API_SCALE(scale_bf16, uint16_t, float)
GCK_API_SCALE(scale_f16, uint16_t, float)
/* conversions: the same shape as add (dst, x, n) */
GCK_API_ADD(convert_f32_to_bf16, uint16_t, float)
GCK_API_ADD(convert_f32_to_f16, uint16_t, float)
GCK_API_ADD(convert_bf16_to_f32, float, uint16_t)
GCK_API_ADD(convert_f16_to_f32, float, uint16_t)

/* ---- byte planes ------------------------------------------------------------ */

/* Single-threaded: planes sit n bytes apart, so a piece of the array is not a
 * smaller call, and the caller parallelises across tensors anyway. No
 * checks, as for every kernel: the preconditions are in kernels.h. */
void gck_xor_shuffle(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)
{
    if (n > 0)
        gck_kernels_active()->xor_shuffle(dst, a, b, n, esz);
}

void gck_unshuffle_xor(void *dst, const uint8_t *src, const void *b, size_t n, size_t esz)
{
    if (n == 0)
        return;
    const uint8_t *pl[8];
    for (size_t k = 0; k < esz && k < 8; k++)
        pl[k] = src + k * n;
    gck_kernels_active()->unshuffle_xor(dst, pl, b, n, esz);
}

void gck_unshuffle_xor_planes(void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)
{
    if (n > 0)
        gck_kernels_active()->unshuffle_xor(dst, planes, b, n, esz);
}

void gck_xor_shuffle_rot(uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)
{
    if (n > 0)
        gck_kernels_active()->xor_shuffle_rot(dst, a, b, n, esz);
}

void gck_unshuffle_xor_rot_planes(void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)
{
    if (n > 0)
        gck_kernels_active()->unshuffle_xor_rot(dst, planes, b, n, esz);
}

size_t gck_sparse_split(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill)
{
    return n > 0 ? gck_kernels_active()->sparse_split(bits, vals, x, n, fill) : 0;
}

void gck_sparse_merge(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, size_t n, uint8_t fill)
{
    if (n > 0)
        gck_kernels_active()->sparse_merge(dst, bits, vals, nvals, n, fill);
}

/* ---- every kernel of api_list.h is declared with the signature it lists --- */
#define GCK_API_CHECK(name, shape, A, X)                                       \
    _Static_assert(_Generic(&gck_##name, GCK_SIG_##shape(A, X): 1, default: 0), \
                   "gck_" #name " does not have the " #shape " signature api_list.h lists");
GCK_API_KERNEL_LIST(GCK_API_CHECK)
