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
    /* the same after an axpy: acc = (acc + w * x) / d or * s, each step      \
     * rounded as axpy_f32 and div/scale_sumsq_f32 round it, so the block's    \
     * bits are those of the two kernels in turn (a trainer's last micro-batch \
     * add, mean and norm in one pass) */                                      \
    X(axpy_div_sumsq_f32_block, double, (float *acc, const float *x, float w, float d, size_t n)) \
    X(axpy_scale_sumsq_f32_block, double, (float *acc, const float *x, float w, float s, size_t n)) \
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
    /* the same, full vectors stored past the caches (streaming stores) */     \
    X(axpy_init_nt_f64, void, (double *dst, double w, const double *x, size_t n)) \
    X(axpy_init_nt_f32, void, (float *dst, float w, const float *x, size_t n)) \
    X(scale_into_f64, void, (double *dst, double w, const double *x, size_t n)) \
    X(scale_into_f32, void, (float *dst, float w, const float *x, size_t n)) \
    X(scale_into_nt_f64, void, (double *dst, double w, const double *x, size_t n)) \
    X(scale_into_nt_f32, void, (float *dst, float w, const float *x, size_t n)) \
    /* acc[i] + (x0[i] + (x1[i] + ... + (x_{m-2}[i] + x_{m-1}[i]))) into acc, \
     * xq = xs[q] + off, m >= 1 (0: nothing): m arrays folded from the right \
     * and added in one pass, one rounding per addition */                    \
    X(add_rfold_f64, void, (double *acc, const double *const *xs, size_t m, size_t off, size_t n)) \
    X(add_rfold_f32, void, (float *acc, const float *const *xs, size_t m, size_t off, size_t n)) \
    /* 2-byte floats: bf16 and f16 arrays of uint16_t. Every element is widened \
     * exactly to f32 (gck_w1_cvt_bf16_f32 / _f16_f32 in ops_common.h define \
     * it) and then treated as the f32 kernels treat a float: the reductions \
     * are sumsq/dist2/asum/powsum_f32's terms of the widened values, amax the \
     * f32 amax of them; acc + x and acc + (w * x) compute in the accumulator's \
     * type; scale is x = round(widen(x) * s) in f32, rounded once back to the \
     * 2-byte type (nearest even, ops_scalar.h). */                               \
    X(sumsq_bf16_block, double, (const uint16_t *x, size_t n))                    \
    X(sumsq_f16_block, double, (const uint16_t *x, size_t n))                     \
    X(dist2_bf16_block, double, (const uint16_t *a, const uint16_t *b, size_t n)) \
    X(dist2_f16_block, double, (const uint16_t *a, const uint16_t *b, size_t n))  \
    X(asum_bf16_block, double, (const uint16_t *x, size_t n))                     \
    X(asum_f16_block, double, (const uint16_t *x, size_t n))                      \
    X(powsum_bf16_block, double, (const uint16_t *x, double p, double s, size_t n)) \
    X(powsum_f16_block, double, (const uint16_t *x, double p, double s, size_t n))  \
    X(amax_bf16, double, (const uint16_t *x, size_t n))                           \
    X(amax_f16, double, (const uint16_t *x, size_t n))                            \
    X(add_bf16_to_f32, void, (float *acc, const uint16_t *x, size_t n))           \
    X(add_f16_to_f32, void, (float *acc, const uint16_t *x, size_t n))            \
    X(add_bf16_to_f64, void, (double *acc, const uint16_t *x, size_t n))          \
    X(add_f16_to_f64, void, (double *acc, const uint16_t *x, size_t n))           \
    X(axpy_bf16_to_f32, void, (float *acc, float w, const uint16_t *x, size_t n)) \
    X(axpy_f16_to_f32, void, (float *acc, float w, const uint16_t *x, size_t n))  \
    X(axpy_bf16_to_f64, void, (double *acc, double w, const uint16_t *x, size_t n)) \
    X(axpy_f16_to_f64, void, (double *acc, double w, const uint16_t *x, size_t n))  \
    X(axpy_init_bf16_to_f32, void, (float *dst, float w, const uint16_t *x, size_t n)) \
    X(axpy_init_f16_to_f32, void, (float *dst, float w, const uint16_t *x, size_t n))  \
    X(axpy_init_bf16_to_f64, void, (double *dst, double w, const uint16_t *x, size_t n)) \
    X(axpy_init_f16_to_f64, void, (double *dst, double w, const uint16_t *x, size_t n))  \
    X(scale_bf16, void, (uint16_t *x, float s, size_t n))                         \
    X(scale_f16, void, (uint16_t *x, float s, size_t n))                          \
    /* conversions, dst = x rounded (to nearest even) or widened (exact) */       \
    X(convert_f32_to_bf16, void, (uint16_t *dst, const float *x, size_t n))       \
    X(convert_f32_to_f16, void, (uint16_t *dst, const float *x, size_t n))        \
    X(convert_bf16_to_f32, void, (float *dst, const uint16_t *x, size_t n))       \
    X(convert_f16_to_f32, void, (float *dst, const uint16_t *x, size_t n))        \
    /* bytes, any n, esz in {1, 2, 4, 8}: byte planes of n elements of esz     \
     * bytes, dst[k*n + i] = a[i*esz + k] ^ b[i*esz + k] (b NULL: ^ 0), and    \
     * the inverse, plane k read from planes[k]; dst never overlaps the      \
     * inputs. Integer ops: every ISA trivially gives the same bytes. */       \
    X(xor_shuffle, void, (uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)) \
    X(unshuffle_xor, void, (void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)) \
    /* the same with each element rotated left one bit after the XOR (byte \
     * k = (X[k] << 1) | (X[k-1 mod esz] >> 7)), and back before it */      \
    X(xor_shuffle_rot, void, (uint8_t *dst, const void *a, const void *b, size_t n, size_t esz)) \
    X(unshuffle_xor_rot, void, (void *dst, const uint8_t *const *planes, const void *b, size_t n, size_t esz)) \
    /* bytes, n > 0: bit i of bits (LSB first) = x[i] != fill, the bytes that \
     * differ packed into vals (returns their count; vals[count..n) may be     \
     * written too), and the inverse, nvals == the bits set in the first n.   \
     * Integer ops: the same bytes on every ISA. */                            \
    X(sparse_split, size_t, (uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill)) \
    X(sparse_merge, void, (uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, size_t n, uint8_t fill))

/* The C element type of each dtype token the lists and the elementwise
 * template use (f64, f32; bf16 and f16 as their bits, uint16_t; u8 for
 * bytes), and the C type values of it are computed in (GCK_CC: a scale
 * factor's type). */
#define GCK_CT_f64 double
#define GCK_CT_f32 float
#define GCK_CT_bf16 uint16_t
#define GCK_CT_f16 uint16_t
#define GCK_CT_u8 uint8_t
#define GCK_CT_(t) GCK_CT_##t
#define GCK_CT(t) GCK_CT_(t)
#define GCK_CC_f64 double
#define GCK_CC_f32 float
#define GCK_CC_bf16 float
#define GCK_CC_f16 float
#define GCK_CC_u8 uint8_t
#define GCK_CC_(t) GCK_CC_##t
#define GCK_CC(t) GCK_CC_(t)

#endif /* GCK_KERNEL_LIST_H */
