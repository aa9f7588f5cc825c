/* kernels/ops_neon.h - elementwise.h's operations for AArch64 Advanced SIMD: 2 doubles or 4 floats a step.
 *
 * w64 steps hold 2 doubles in a q register and 2 floats in a d register;
 * w32 steps hold 4 floats in a q register. NEON has no masked loads, so a
 * tail goes through a zero-padded stack copy. FMAX (vmaxq) returns NaN when
 * either operand is NaN, so amax needs no separate NaN tracking. Built with
 * -ffp-contract=off: no vmulq + vaddq pair ever becomes an FMA. Included by
 * neon.c only. */
#ifndef GCK_OPS_NEON_H
#define GCK_OPS_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <string.h>

#include "attributes.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 2
#define GCK_LANES_w32 4
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

typedef float64x2_t gck_w64_f64;
typedef float32x2_t gck_w64_f32;
typedef float32x4_t gck_w32_f32;
typedef int gck_w64_nan_f64; /* FMAX keeps NaNs: nothing to track */
typedef int gck_w32_nan_f32;

/* ---- w64: 2 doubles, 2 floats; a tail is 1 element ---- */
GCK_ALWAYS_INLINE float64x2_t gck_w64_load_f64(const double *p) { return vld1q_f64(p); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_load_f32(const float *p) { return vld1_f32(p); }
GCK_ALWAYS_INLINE void gck_w64_store_f64(double *p, float64x2_t v) { vst1q_f64(p, v); }
GCK_ALWAYS_INLINE void gck_w64_store_f32(float *p, float32x2_t v) { vst1_f32(p, v); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_load_tail_f64(const double *p, size_t k)
{
    double b[2] = {0};
    memcpy(b, p, k * sizeof *p);
    return vld1q_f64(b);
}
GCK_ALWAYS_INLINE float32x2_t gck_w64_load_tail_f32(const float *p, size_t k)
{
    float b[2] = {0};
    memcpy(b, p, k * sizeof *p);
    return vld1_f32(b);
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f64(double *p, float64x2_t v, size_t k)
{
    double b[2];
    vst1q_f64(b, v);
    memcpy(p, b, k * sizeof *p);
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f32(float *p, float32x2_t v, size_t k)
{
    float b[2];
    vst1_f32(b, v);
    memcpy(p, b, k * sizeof *p);
}
GCK_ALWAYS_INLINE float64x2_t gck_w64_cvt_f64_f64(float64x2_t v) { return v; }
GCK_ALWAYS_INLINE float32x2_t gck_w64_cvt_f32_f32(float32x2_t v) { return v; }
GCK_ALWAYS_INLINE float64x2_t gck_w64_cvt_f32_f64(float32x2_t v) { return vcvt_f64_f32(v); } /* exact */
/* FCVTN rounds in the FPCR mode, nearest even by default, as the C conversion */
GCK_ALWAYS_INLINE float32x2_t gck_w64_cvt_f64_f32(float64x2_t v) { return vcvt_f32_f64(v); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_add_f64(float64x2_t a, float64x2_t b) { return vaddq_f64(a, b); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_add_f32(float32x2_t a, float32x2_t b) { return vadd_f32(a, b); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_mul_f64(float64x2_t a, float64x2_t b) { return vmulq_f64(a, b); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_mul_f32(float32x2_t a, float32x2_t b) { return vmul_f32(a, b); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_set1_f64(double v) { return vdupq_n_f64(v); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_set1_f32(float v) { return vdup_n_f32(v); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_zero_f64(void) { return vdupq_n_f64(0.0); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_zero_f32(void) { return vdup_n_f32(0.0f); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_abs_f64(float64x2_t v) { return vabsq_f64(v); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_max_f64(float64x2_t m, float64x2_t v) { return vmaxq_f64(m, v); }
GCK_ALWAYS_INLINE double gck_w64_hmax_f64(float64x2_t m) { return vmaxvq_f64(m); } /* FMAXP: NaN wins */
GCK_ALWAYS_INLINE int gck_w64_nan_none_f64(void) { return 0; }
GCK_ALWAYS_INLINE int gck_w64_nan_pair_f64(int acc, float64x2_t a, float64x2_t b) { (void)a, (void)b; return acc; }
GCK_ALWAYS_INLINE int gck_w64_nan_any_f64(int acc) { return acc; }

/* ---- w32: 4 floats; a tail is 1 to 3 elements ---- */
GCK_ALWAYS_INLINE float32x4_t gck_w32_load_f32(const float *p) { return vld1q_f32(p); }
GCK_ALWAYS_INLINE void gck_w32_store_f32(float *p, float32x4_t v) { vst1q_f32(p, v); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_load_tail_f32(const float *p, size_t k)
{
    float b[4] = {0};
    memcpy(b, p, k * sizeof *p);
    return vld1q_f32(b);
}
GCK_ALWAYS_INLINE void gck_w32_store_tail_f32(float *p, float32x4_t v, size_t k)
{
    float b[4];
    vst1q_f32(b, v);
    memcpy(p, b, k * sizeof *p);
}
GCK_ALWAYS_INLINE float32x4_t gck_w32_cvt_f32_f32(float32x4_t v) { return v; }
GCK_ALWAYS_INLINE float32x4_t gck_w32_add_f32(float32x4_t a, float32x4_t b) { return vaddq_f32(a, b); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_mul_f32(float32x4_t a, float32x4_t b) { return vmulq_f32(a, b); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_set1_f32(float v) { return vdupq_n_f32(v); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_zero_f32(void) { return vdupq_n_f32(0.0f); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_abs_f32(float32x4_t v) { return vabsq_f32(v); }
GCK_ALWAYS_INLINE float32x4_t gck_w32_max_f32(float32x4_t m, float32x4_t v) { return vmaxq_f32(m, v); }
GCK_ALWAYS_INLINE float gck_w32_hmax_f32(float32x4_t m) { return vmaxvq_f32(m); } /* FMAXV: NaN wins */
GCK_ALWAYS_INLINE int gck_w32_nan_none_f32(void) { return 0; }
GCK_ALWAYS_INLINE int gck_w32_nan_pair_f32(int acc, float32x4_t a, float32x4_t b) { (void)a, (void)b; return acc; }
GCK_ALWAYS_INLINE int gck_w32_nan_any_f32(int acc) { return acc; }

#endif /* GCK_OPS_NEON_H */
