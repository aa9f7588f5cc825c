/* kernels/ops_avx2.h - elementwise.h's operations for AVX2: 4 doubles (ymm) or 8 floats (ymm) a step.
 *
 * w64 steps hold 4 doubles in a ymm and 4 floats in an xmm; w32 steps hold
 * 8 floats in a ymm. Tails use AVX masked loads and stores (lanes past k
 * are neither read nor written; loads give +0.0 there). maxpd/maxps return
 * their second operand when either is NaN, so amax tracks NaNs in a mask
 * vector. Included by avx2.c only. */
#ifndef GCK_OPS_AVX2_H
#define GCK_OPS_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "ops_common.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 4
#define GCK_LANES_w32 8
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

GCK_OPS_X86(w64, f64, __m256d, _mm256, pd)
GCK_OPS_X86(w64, f32, __m128, _mm, ps)
GCK_OPS_X86(w32, f32, __m256, _mm256, ps)

/* The first k lanes, as an AVX mask (all ones = access the lane). */
GCK_ALWAYS_INLINE __m256i gck_avx2_mask4x64(size_t k)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x((int64_t)k), _mm256_setr_epi64x(0, 1, 2, 3));
}
GCK_ALWAYS_INLINE __m128i gck_avx2_mask4x32(size_t k)
{
    return _mm_cmpgt_epi32(_mm_set1_epi32((int)k), _mm_setr_epi32(0, 1, 2, 3));
}
GCK_ALWAYS_INLINE __m256i gck_avx2_mask8x32(size_t k)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
#define GCK_AVX2_TAIL(w, t, V, P, S, MASK)                                     \
    GCK_ALWAYS_INLINE V gck_##w##_load_tail_##t(const GCK_CT(t) *p, size_t k)  \
    {                                                                          \
        return P##_maskload_##S(p, MASK(k));                                   \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(GCK_CT(t) *p, V v, size_t k) \
    {                                                                          \
        P##_maskstore_##S(p, MASK(k), v);                                      \
    }
GCK_AVX2_TAIL(w64, f64, __m256d, _mm256, pd, gck_avx2_mask4x64)
GCK_AVX2_TAIL(w64, f32, __m128, _mm, ps, gck_avx2_mask4x32)
GCK_AVX2_TAIL(w32, f32, __m256, _mm256, ps, gck_avx2_mask8x32)

/* f32 <-> f64 at w64: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_f32_f64(__m128 v) { return _mm256_cvtps_pd(v); }
GCK_ALWAYS_INLINE __m128 gck_w64_cvt_f64_f32(__m256d v) { return _mm256_cvtpd_ps(v); }

/* amax: |v|, a mask vector of the lanes that saw a NaN, the largest lane */
#define GCK_AVX2_AMAX(w, t, V, S, SIGN)                                        \
    typedef V gck_##w##_nan_##t;                                               \
    GCK_ALWAYS_INLINE V gck_##w##_abs_##t(V v) { return _mm256_andnot_##S(_mm256_set1_##S(SIGN), v); } \
    GCK_ALWAYS_INLINE V gck_##w##_nan_none_##t(void) { return _mm256_setzero_##S(); } \
    GCK_ALWAYS_INLINE V gck_##w##_nan_pair_##t(V acc, V a, V b)                \
    {                                                                          \
        return _mm256_or_##S(acc, _mm256_cmp_##S(a, b, _CMP_UNORD_Q));        \
    }                                                                          \
    GCK_ALWAYS_INLINE int gck_##w##_nan_any_##t(V acc) { return _mm256_movemask_##S(acc) != 0; }
GCK_AVX2_AMAX(w64, f64, __m256d, pd, -0.0)
GCK_AVX2_AMAX(w32, f32, __m256, ps, -0.0f)
GCK_ALWAYS_INLINE double gck_w64_hmax_f64(__m256d m)
{
    const __m128d q = _mm_max_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
    return _mm_cvtsd_f64(_mm_max_sd(q, _mm_unpackhi_pd(q, q)));
}
GCK_ALWAYS_INLINE float gck_w32_hmax_f32(__m256 m)
{
    __m128 q = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    q = _mm_max_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}

#endif /* GCK_OPS_AVX2_H */
