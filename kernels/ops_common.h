/* kernels/ops_common.h - macros that write the regular part of an ops header (see elementwise.h).
 *
 * Each defines, for the step width w and the type token t with vector type
 * V, the operations elementwise.h calls gck_<w>_<op>_<t>. Only macros and
 * static inline functions: every ISA file expands them with its own flags. */
#ifndef GCK_OPS_COMMON_H
#define GCK_OPS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "attributes.h"
#include "kernel_list.h"

/* ---- 2-byte floats widened one value at a time: part of the definition of
 * the conversions (ops_scalar.h has the rest), here because every ISA's
 * amax of 2-byte words (elementwise.h) widens its one result so. */
GCK_ALWAYS_INLINE float gck_f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

GCK_ALWAYS_INLINE uint32_t gck_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* bf16 -> f32: the 16 bits become the float's high half. Exact; a
 * signalling NaN stays signalling (torch and ml_dtypes do the same). */
GCK_ALWAYS_INLINE float gck_w1_cvt_bf16_f32(uint16_t b)
{
    return gck_f32_from_bits((uint32_t)b << 16);
}

/* f16 -> f32, the IEEE conversion (exact): a NaN keeps its sign and payload
 * and becomes quiet (what F16C's VCVTPH2PS and AArch64's FCVTL do); a
 * denormal m * 2^-24 is computed as such, exactly. */
GCK_ALWAYS_INLINE float gck_w1_cvt_f16_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)h >> 10 & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)
        return gck_f32_from_bits(sign | 0x7f800000u | m << 13 | (m != 0 ? 0x400000u : 0));
    if (e != 0)
        return gck_f32_from_bits(sign | (e + 112) << 23 | m << 13);
    return gck_f32_from_bits(sign | gck_f32_bits((float)m * 0x1p-24f)); /* zero, denormals */
}

#if defined(__SSE4_1__)
#include <smmintrin.h>
/* The largest of 8 unsigned 16-bit lanes: SSE4.1's minpos of their
 * complements (the x86 ops headers' gck_u16_hmax). */
GCK_ALWAYS_INLINE uint16_t gck_x86_hmax_u16(__m128i q)
{
    return (uint16_t)~_mm_cvtsi128_si32(_mm_minpos_epu16(_mm_xor_si128(q, _mm_set1_epi16(-1))));
}
#endif

/* Conversion to the same type: unchanged. */
#define GCK_OPS_CVT_SAME(w, t, V)                                              \
    GCK_ALWAYS_INLINE V gck_##w##_cvt_##t##_##t(V v) { return v; }

/* NaN tracking for ISAs whose max keeps a NaN once seen: nothing to track. */
#define GCK_OPS_NAN_KEPT_BY_MAX(w, t, V)                                       \
    typedef int gck_##w##_nan_##t;                                             \
    GCK_ALWAYS_INLINE int gck_##w##_nan_none_##t(void) { return 0; }           \
    GCK_ALWAYS_INLINE int gck_##w##_nan_pair_##t(int acc, V a, V b)            \
    {                                                                          \
        (void)a, (void)b;                                                      \
        return acc;                                                            \
    }                                                                          \
    GCK_ALWAYS_INLINE int gck_##w##_nan_any_##t(int acc) { return acc; }

/* x86 intrinsics are named <P>_<op>_<S> at every width (P = _mm, _mm256,
 * _mm512; S = pd, ps): the vector type, full loads and stores, add, mul,
 * set1, zero and max. Tails, conversions, abs and the NaN tracking differ
 * per ISA and are written in its header. */
#define GCK_OPS_X86(w, t, V, P, S)                                             \
    typedef V gck_##w##_##t;                                                   \
    GCK_ALWAYS_INLINE V gck_##w##_load_##t(const GCK_CT(t) *p) { return P##_loadu_##S(p); } \
    GCK_ALWAYS_INLINE void gck_##w##_store_##t(GCK_CT(t) *p, V v) { P##_storeu_##S(p, v); } \
    GCK_ALWAYS_INLINE V gck_##w##_add_##t(V a, V b) { return P##_add_##S(a, b); } \
    GCK_ALWAYS_INLINE V gck_##w##_mul_##t(V a, V b) { return P##_mul_##S(a, b); } \
    GCK_ALWAYS_INLINE V gck_##w##_set1_##t(GCK_CT(t) v) { return P##_set1_##S(v); } \
    GCK_ALWAYS_INLINE V gck_##w##_zero_##t(void) { return P##_setzero_##S(); } \
    GCK_ALWAYS_INLINE V gck_##w##_max_##t(V m, V v) { return P##_max_##S(m, v); } \
    GCK_OPS_CVT_SAME(w, t, V)

#endif /* GCK_OPS_COMMON_H */
