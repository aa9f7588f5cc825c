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

#include "attributes.h"

#define GCK_W64 w1
#define GCK_W32 w1
#define GCK_LANES_w1 1
#define GCK_EW_UNROLL 1
#define GCK_EW_TAILS 0 /* a step is one element: never a tail */

typedef double gck_w1_f64;
typedef float gck_w1_f32;
typedef int gck_w1_nan_f64; /* the max below keeps NaNs: nothing to track */
typedef int gck_w1_nan_f32;

GCK_ALWAYS_INLINE double gck_w1_load_f64(const double *p) { return *p; }
GCK_ALWAYS_INLINE float gck_w1_load_f32(const float *p) { return *p; }
GCK_ALWAYS_INLINE void gck_w1_store_f64(double *p, double v) { *p = v; }
GCK_ALWAYS_INLINE void gck_w1_store_f32(float *p, float v) { *p = v; }

GCK_ALWAYS_INLINE double gck_w1_cvt_f64_f64(double v) { return v; }
GCK_ALWAYS_INLINE float gck_w1_cvt_f32_f32(float v) { return v; }
GCK_ALWAYS_INLINE double gck_w1_cvt_f32_f64(float v) { return (double)v; } /* exact */
GCK_ALWAYS_INLINE float gck_w1_cvt_f64_f32(double v) { return (float)v; }  /* nearest even */

GCK_ALWAYS_INLINE double gck_w1_add_f64(double a, double b) { return a + b; }
GCK_ALWAYS_INLINE float gck_w1_add_f32(float a, float b) { return a + b; }
GCK_ALWAYS_INLINE double gck_w1_mul_f64(double a, double b) { return a * b; }
GCK_ALWAYS_INLINE float gck_w1_mul_f32(float a, float b) { return a * b; }
GCK_ALWAYS_INLINE double gck_w1_set1_f64(double v) { return v; }
GCK_ALWAYS_INLINE float gck_w1_set1_f32(float v) { return v; }
GCK_ALWAYS_INLINE double gck_w1_zero_f64(void) { return 0.0; }
GCK_ALWAYS_INLINE float gck_w1_zero_f32(void) { return 0.0f; }

/* amax: the reference's step keeps a NaN once seen (no comparison replaces
 * it), so the NaN tracking is empty and the largest lane is the value. */
GCK_ALWAYS_INLINE double gck_w1_abs_f64(double v) { return fabs(v); }
GCK_ALWAYS_INLINE float gck_w1_abs_f32(float v) { return fabsf(v); }
GCK_ALWAYS_INLINE double gck_w1_max_f64(double m, double v) { return (v > m || isnan(v)) ? v : m; }
GCK_ALWAYS_INLINE float gck_w1_max_f32(float m, float v) { return (v > m || isnan(v)) ? v : m; }
GCK_ALWAYS_INLINE double gck_w1_hmax_f64(double m) { return m; }
GCK_ALWAYS_INLINE float gck_w1_hmax_f32(float m) { return m; }
GCK_ALWAYS_INLINE int gck_w1_nan_none_f64(void) { return 0; }
GCK_ALWAYS_INLINE int gck_w1_nan_none_f32(void) { return 0; }
GCK_ALWAYS_INLINE int gck_w1_nan_pair_f64(int acc, double a, double b) { (void)a, (void)b; return acc; }
GCK_ALWAYS_INLINE int gck_w1_nan_pair_f32(int acc, float a, float b) { (void)a, (void)b; return acc; }
GCK_ALWAYS_INLINE int gck_w1_nan_any_f64(int acc) { return acc; }
GCK_ALWAYS_INLINE int gck_w1_nan_any_f32(int acc) { return acc; }

#endif /* GCK_OPS_SCALAR_H */
