/* kernels/kernel_list.h - the one list of kernel-table slots (an X-macro). */
#ifndef GCK_KERNEL_LIST_H
#define GCK_KERNEL_LIST_H

#include <stddef.h>
#include <stdint.h>

/*
 * X(slot, return type, parameter list).
 *
 * Slots named *_block reduce ONE block of at most GCK_BLOCK elements to a
 * double following the canonical lane shape (kernels_internal.h); api.c
 * splits arrays into blocks, runs them on threads and combines the block
 * results, so the combining order lives in one place. Elementwise slots take
 * any n: each element's result does not depend on how the array is split.
 */
#define GCK_KERNEL_LIST(X)                                                        \
    /* reductions over one block: terms x^2, (a-b)^2, (x*s)^2, |x|, (|x|*s)^p */  \
    X(sumsq_f64_block, double, (const double *x, size_t n))                       \
    X(sumsq_f32_block, double, (const float *x, size_t n))                        \
    X(sumsq_scaled_f64_block, double, (const double *x, double s, size_t n))      \
    X(dist2_f64_block, double, (const double *a, const double *b, size_t n))      \
    X(dist2_f32_block, double, (const float *a, const float *b, size_t n))        \
    X(asum_f64_block, double, (const double *x, size_t n))                        \
    X(asum_f32_block, double, (const float *x, size_t n))                         \
    X(powsum_f64_block, double, (const double *x, double p, double s, size_t n))  \
    X(powsum_f32_block, double, (const float *x, double p, double s, size_t n))   \
    /* fused update + reduction over one block: dst = x / d or dst = x * s     \
     * (dst may be x), then the block's sum of squares of the stored values */  \
    X(div_sumsq_f64_block, double, (double *dst, const double *x, double d, size_t n)) \
    X(div_sumsq_f32_block, double, (float *dst, const float *x, float d, size_t n))    \
    X(scale_sumsq_f64_block, double, (double *dst, const double *x, double s, size_t n)) \
    X(scale_sumsq_f32_block, double, (float *dst, const float *x, float s, size_t n))  \
    /* max |x| over any n; NaN if any element is NaN */                          \
    X(amax_f64, double, (const double *x, size_t n))                              \
    X(amax_f32, double, (const float *x, size_t n))                               \
    /* elementwise, any n */                                                     \
    X(add_f64, void, (double *acc, const double *x, size_t n))                    \
    X(add_f32, void, (float *acc, const float *x, size_t n))                      \
    X(axpy_f64, void, (double *acc, double w, const double *x, size_t n))         \
    X(axpy_f32, void, (float *acc, float w, const float *x, size_t n))            \
    X(scale_f64, void, (double *x, double s, size_t n))                           \
    X(scale_f32, void, (float *x, float s, size_t n))                             \
    /* mixed precision: acc + (double)x, acc + (w * (double)x),                 \
     * acc + (float)x, acc + (w * (float)x) */                                    \
    X(add_f32_to_f64, void, (double *acc, const float *x, size_t n))              \
    X(axpy_f32_to_f64, void, (double *acc, double w, const float *x, size_t n))   \
    X(add_f64_to_f32, void, (float *acc, const double *x, size_t n))              \
    X(axpy_f64_to_f32, void, (float *acc, float w, const double *x, size_t n))  \
    /* first term of an accumulation, dst = 0 + (w * x) without reading dst:    \
     * exactly axpy into a zeroed buffer (-0 becomes +0), one pass less */      \
    X(axpy_init_f64, void, (double *dst, double w, const double *x, size_t n))  \
    X(axpy_init_f32, void, (float *dst, float w, const float *x, size_t n))     \
    X(axpy_init_f32_to_f64, void, (double *dst, double w, const float *x, size_t n)) \
    X(axpy_init_f64_to_f32, void, (float *dst, float w, const double *x, size_t n)) \
    /* bytes, any n, esz in {1, 2, 4, 8}: byte planes of n elements of esz     \
     * bytes, dst[k*n + i] = a[i*esz + k] ^ b[i*esz + k] (b NULL: ^ 0), and    \
     * the inverse; dst never overlaps the inputs. Integer ops: every ISA      \
     * trivially gives the same bytes. */                                       \
    X(xor_shuffle, void, (uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)) \
    X(unshuffle_xor, void, (void *dst, const uint8_t *src, const void *b, size_t n, size_t esz))

/* The C element type of each dtype token the lists and the elementwise
 * template use (f64, f32; u8 for bytes). */
#define GCK_CT_f64 double
#define GCK_CT_f32 float
#define GCK_CT_u8 uint8_t
#define GCK_CT_(t) GCK_CT_##t
#define GCK_CT(t) GCK_CT_(t)

#endif /* GCK_KERNEL_LIST_H */
