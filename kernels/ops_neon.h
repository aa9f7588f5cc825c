/* kernels/ops_neon.h - elementwise.h's operations for AArch64 Advanced SIMD: 2 doubles or 4 floats a step.
 *
 * w64 steps hold 2 doubles in a q register and 2 floats in a d register;
 * w32 steps hold 4 floats in a q register. NEON has no masked loads, so a
 * tail goes through a zero-padded stack copy. FMAX (vmaxq) and FMAXV return
 * NaN when an operand is NaN, so amax needs no separate NaN tracking. Built
 * with -ffp-contract=off: no vmul + vadd pair ever becomes an FMA. Included
 * by neon.c only. */
#ifndef GCK_OPS_NEON_H
#define GCK_OPS_NEON_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ops_common.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 2
#define GCK_LANES_w32 4
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

/* The intrinsics are named v<op><Q>_<T> (Q = q for a q register, empty for
 * a d register; T = f64, f32), L lanes. */
#define GCK_OPS_NEON(w, t, V, Q, L)                                            \
    typedef V gck_##w##_##t;                                                   \
    GCK_ALWAYS_INLINE V gck_##w##_load_##t(const GCK_CT(t) *p) { return vld1##Q##_##t(p); } \
    GCK_ALWAYS_INLINE void gck_##w##_store_##t(GCK_CT(t) *p, V v) { vst1##Q##_##t(p, v); } \
    GCK_ALWAYS_INLINE V gck_##w##_load_tail_##t(const GCK_CT(t) *p, size_t k)  \
    {                                                                          \
        GCK_CT(t) b[L] = {0};                                                  \
        memcpy(b, p, k * sizeof *p);                                           \
        return vld1##Q##_##t(b);                                               \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(GCK_CT(t) *p, V v, size_t k) \
    {                                                                          \
        GCK_CT(t) b[L];                                                        \
        vst1##Q##_##t(b, v);                                                   \
        memcpy(p, b, k * sizeof *p);                                           \
    }                                                                          \
    GCK_ALWAYS_INLINE V gck_##w##_add_##t(V a, V b) { return vadd##Q##_##t(a, b); } \
    GCK_ALWAYS_INLINE V gck_##w##_mul_##t(V a, V b) { return vmul##Q##_##t(a, b); } \
    GCK_ALWAYS_INLINE V gck_##w##_set1_##t(GCK_CT(t) v) { return vdup##Q##_n_##t(v); } \
    GCK_ALWAYS_INLINE V gck_##w##_zero_##t(void) { return vdup##Q##_n_##t(0); } \
    GCK_ALWAYS_INLINE V gck_##w##_abs_##t(V v) { return vabs##Q##_##t(v); }     \
    GCK_ALWAYS_INLINE V gck_##w##_max_##t(V m, V v) { return vmax##Q##_##t(m, v); } \
    GCK_OPS_CVT_SAME(w, t, V)                                                  \
    GCK_OPS_NAN_KEPT_BY_MAX(w, t, V)
GCK_OPS_NEON(w64, f64, float64x2_t, q, 2)
GCK_OPS_NEON(w64, f32, float32x2_t, , 2)
GCK_OPS_NEON(w32, f32, float32x4_t, q, 4)

/* axpy_init_nt's streaming stores: ordinary ones for now (STNP stores pairs of registers and has
 * no intrinsic; a hand-written pair loop is left to do) */
#define GCK_NT_ALIGN 1
GCK_ALWAYS_INLINE void gck_w64_store_nt_f64(double *p, float64x2_t v) { vst1q_f64(p, v); }
GCK_ALWAYS_INLINE void gck_w32_store_nt_f32(float *p, float32x4_t v) { vst1q_f32(p, v); }
GCK_ALWAYS_INLINE void gck_nt_fence(void) {}

/* f32 <-> f64 at w64: widening is exact; FCVTN rounds in the FPCR mode,
 * nearest even by default, as the C conversion does */
GCK_ALWAYS_INLINE float64x2_t gck_w64_cvt_f32_f64(float32x2_t v) { return vcvt_f64_f32(v); }
GCK_ALWAYS_INLINE float32x2_t gck_w64_cvt_f64_f32(float64x2_t v) { return vcvt_f32_f64(v); }

/* ---- 2-byte floats: 4 (w32) or 2 (w64, the low half) 16-bit lanes of a d
 * register; tails and w64 steps through a zero-padded copy (zero bits
 * widen to +0.0) ---- */
#define GCK_OPS_NEON_STORAGE16(w, t, L)                                        \
    typedef uint16x4_t gck_##w##_##t;                                          \
    GCK_ALWAYS_INLINE uint16x4_t gck_##w##_load_tail_##t(const uint16_t *p, size_t k) \
    {                                                                          \
        uint16_t b[4] = {0};                                                   \
        memcpy(b, p, k * sizeof *p);                                           \
        return vld1_u16(b);                                                    \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(uint16_t *p, uint16x4_t v, size_t k) \
    {                                                                          \
        uint16_t b[4];                                                         \
        vst1_u16(b, v);                                                        \
        memcpy(p, b, k * sizeof *p);                                           \
    }                                                                          \
    GCK_ALWAYS_INLINE uint16x4_t gck_##w##_load_##t(const uint16_t *p)         \
    {                                                                          \
        if (L == 4)                                                            \
            return vld1_u16(p);                                                \
        return gck_##w##_load_tail_##t(p, L);                                  \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_##t(uint16_t *p, uint16x4_t v)      \
    {                                                                          \
        if (L == 4)                                                            \
            vst1_u16(p, v);                                                    \
        else                                                                   \
            gck_##w##_store_tail_##t(p, v, L);                                 \
    }
GCK_OPS_NEON_STORAGE16(w32, bf16, 4)
GCK_OPS_NEON_STORAGE16(w32, f16, 4)
GCK_OPS_NEON_STORAGE16(w64, bf16, 2)
GCK_OPS_NEON_STORAGE16(w64, f16, 2)

/* bf16 <-> f32 (ops_scalar.h defines both): a 16-bit shift up (USHLL);
 * rounding to nearest even on the bits, narrowed by SHRN, NaN lanes 0xFFFF */
GCK_ALWAYS_INLINE float32x4_t gck_w32_cvt_bf16_f32(uint16x4_t v) { return vreinterpretq_f32_u32(vshll_n_u16(v, 16)); }
GCK_ALWAYS_INLINE uint16x4_t gck_w32_cvt_f32_bf16(float32x4_t v)
{
    const uint32x4_t u = vreinterpretq_u32_f32(v);
    const uint32x4_t bias = vaddq_u32(vdupq_n_u32(0x7fff), vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1)));
    const uint16x4_t nan = vmovn_u32(vmvnq_u32(vceqq_f32(v, v)));
    return vorr_u16(vshrn_n_u32(vaddq_u32(u, bias), 16), nan);
}
/* f16 <-> f32: FCVTL / FCVTN, the IEEE conversions (nearest even in the
 * default FPCR mode) */
GCK_ALWAYS_INLINE float32x4_t gck_w32_cvt_f16_f32(uint16x4_t v) { return vcvt_f32_f16(vreinterpret_f16_u16(v)); }
GCK_ALWAYS_INLINE uint16x4_t gck_w32_cvt_f32_f16(float32x4_t v) { return vreinterpret_u16_f16(vcvt_f16_f32(v)); }
/* to f64 through the exact f32 value (lanes 0 and 1) */
GCK_ALWAYS_INLINE float64x2_t gck_w64_cvt_bf16_f64(uint16x4_t v) { return vcvt_f64_f32(vget_low_f32(gck_w32_cvt_bf16_f32(v))); }
GCK_ALWAYS_INLINE float64x2_t gck_w64_cvt_f16_f64(uint16x4_t v) { return vcvt_f64_f32(vget_low_f32(gck_w32_cvt_f16_f32(v))); }

GCK_ALWAYS_INLINE double gck_w64_hmax_f64(float64x2_t m) { return vmaxvq_f64(m); }
GCK_ALWAYS_INLINE float gck_w32_hmax_f32(float32x4_t m) { return vmaxvq_f32(m); }

/* 16-bit words, 8 a q register (elementwise.h's amax of bf16 / f16) */
#define GCK_U16_LANES 8
typedef uint16x8_t gck_u16v;
GCK_ALWAYS_INLINE uint16x8_t gck_u16_load(const uint16_t *p) { return vld1q_u16(p); }
GCK_ALWAYS_INLINE uint16x8_t gck_u16_set1(uint16_t v) { return vdupq_n_u16(v); }
GCK_ALWAYS_INLINE uint16x8_t gck_u16_and(uint16x8_t a, uint16x8_t b) { return vandq_u16(a, b); }
GCK_ALWAYS_INLINE uint16x8_t gck_u16_max(uint16x8_t a, uint16x8_t b) { return vmaxq_u16(a, b); }
GCK_ALWAYS_INLINE uint16_t gck_u16_hmax(uint16x8_t v) { return vmaxvq_u16(v); }

#endif /* GCK_OPS_NEON_H */
