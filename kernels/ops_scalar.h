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

/* the C conversions: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE double gck_w1_cvt_f32_f64(float v) { return (double)v; }
GCK_ALWAYS_INLINE float gck_w1_cvt_f64_f32(double v) { return (float)v; }

#endif /* GCK_OPS_SCALAR_H */
