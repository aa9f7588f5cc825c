/* kernels/ops_scalar.h - elementwise.h's operations on one element: plain C, the reference.
 *
 * Both step widths are one element (w1), so the template's loops are the
 * plain `for (i = 0; i < n; i++)` loop of the C expression, which the
 * compiler vectorises with the baseline flags as it would the hand-written
 * loop. Elements are independent, so that cannot change a bit. */
#ifndef GCK_OPS_SCALAR_H
#define GCK_OPS_SCALAR_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops_common.h"

#define GCK_W64 w1
#define GCK_W32 w1
#define GCK_LANES_w1 1
#define GCK_EW_UNROLL 1
#define GCK_EW_TAILS 0 /* a step is one element: never a tail */

/* amax's step is the reference's (v > m || isnan(v)) ? v : m, which keeps a
 * NaN once seen (no comparison replaces it). */
#define GCK_OPS_SCALAR(t, ABS)                                                 \
    typedef GCK_CT(t) gck_w1_##t;                                              \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_load_##t(const GCK_CT(t) *p) { return *p; } \
    GCK_ALWAYS_INLINE void gck_w1_store_##t(GCK_CT(t) *p, GCK_CT(t) v) { *p = v; } \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_add_##t(GCK_CT(t) a, GCK_CT(t) b) { return a + b; } \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_mul_##t(GCK_CT(t) a, GCK_CT(t) b) { return a * b; } \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_set1_##t(GCK_CT(t) v) { return v; }     \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_zero_##t(void) { return 0; }            \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_abs_##t(GCK_CT(t) v) { return ABS(v); } \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_max_##t(GCK_CT(t) m, GCK_CT(t) v)       \
    {                                                                          \
        return (v > m || isnan(v)) ? v : m;                                    \
    }                                                                          \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_hmax_##t(GCK_CT(t) m) { return m; }     \
    GCK_OPS_CVT_SAME(w1, t, GCK_CT(t))                                         \
    GCK_OPS_NAN_KEPT_BY_MAX(w1, t, GCK_CT(t))
GCK_OPS_SCALAR(f64, fabs)
GCK_OPS_SCALAR(f32, fabsf)

/* axpy_init_nt's streaming stores: ordinary ones (the reference; C has no streaming store) */
#define GCK_NT_ALIGN 1
GCK_ALWAYS_INLINE void gck_w1_store_nt_f64(double *p, double v) { *p = v; }
GCK_ALWAYS_INLINE void gck_w1_store_nt_f32(float *p, float v) { *p = v; }
GCK_ALWAYS_INLINE void gck_nt_fence(void) {}

/* the C conversions: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE double gck_w1_cvt_f32_f64(float v) { return (double)v; }
GCK_ALWAYS_INLINE float gck_w1_cvt_f64_f32(double v) { return (float)v; }

/* ---- 2-byte floats: storage only (computed in f32 or f64) -------------------
 * These conversions are the definition every ISA reproduces bit for bit
 * (include/gradckpt/kernels.h states them for callers). Written on the bits
 * with integer operations (and one float multiply whose operands and result
 * are normal), so no FPU mode (flush-to-zero, denormals as zero) can change
 * them. */
#define GCK_OPS_SCALAR_STORAGE(t)                                              \
    typedef GCK_CT(t) gck_w1_##t;                                              \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_w1_load_##t(const GCK_CT(t) *p) { return *p; } \
    GCK_ALWAYS_INLINE void gck_w1_store_##t(GCK_CT(t) *p, GCK_CT(t) v) { *p = v; }
GCK_OPS_SCALAR_STORAGE(bf16)
GCK_OPS_SCALAR_STORAGE(f16)

/* bf16 -> f32 and f16 -> f32: ops_common.h (every ISA widens a scalar so at times). */

/* f32 -> bf16: round the bits to nearest even (a carry out of the mantissa
 * moves to the next binade, past the largest finite value to Inf; denormals
 * round like any other value, since both formats share the exponent). Every
 * NaN becomes 0xFFFF, what PyTorch's AVX2 and AVX-512 conversion loops
 * write. */
GCK_ALWAYS_INLINE uint16_t gck_w1_cvt_f32_bf16(float v)
{
    const uint32_t u = gck_f32_bits(v);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0xffff;
    return (uint16_t)((u + 0x7fffu + (u >> 16 & 1u)) >> 16);
}

/* f32 -> f16, the IEEE conversion rounding to nearest even: |v| >= 65520
 * (the largest finite value plus half its ulp) becomes Inf, values below
 * 2^-14 become denormals (rounded in units of 2^-24), a NaN keeps its sign
 * and the top 10 payload bits and becomes quiet (F16C's VCVTPS2PH, FCVTN). */
GCK_ALWAYS_INLINE uint16_t gck_w1_cvt_f32_f16(float v)
{
    const uint32_t u = gck_f32_bits(v), a = u & 0x7fffffffu;
    const uint16_t sign = (uint16_t)(u >> 16 & 0x8000u);
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | (a >> 13 & 0x3ffu));
    if (a >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* a normal f16: rebias the exponent, round 13 bits away */
        const uint32_t r = a - 0x38000000u;
        return (uint16_t)(sign | (r + 0xfffu + (r >> 13 & 1u)) >> 13);
    }
    if (a < 0x33000000u) /* below 2^-25: zero (2^-25 itself ties to zero below) */
        return sign;
    /* a denormal f16: the 24-bit significand shifted to units of 2^-24 */
    const uint32_t m = (a & 0x7fffffu) | 0x800000u, s = 126u - (a >> 23); /* 14 .. 24 */
    const uint32_t q = m >> s, rem = m & ((1u << s) - 1u), half = 1u << (s - 1u);
    return (uint16_t)(sign | (q + (rem > half || (rem == half && (q & 1u)))));
}

GCK_ALWAYS_INLINE double gck_w1_cvt_bf16_f64(uint16_t b) { return (double)gck_w1_cvt_bf16_f32(b); }
GCK_ALWAYS_INLINE double gck_w1_cvt_f16_f64(uint16_t h) { return (double)gck_w1_cvt_f16_f32(h); }

#endif /* GCK_OPS_SCALAR_H */
