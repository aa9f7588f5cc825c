/* kernels/ops_avx2.h - elementwise.h's operations for AVX2: 4 doubles (ymm) or 8 floats (ymm) a step.
 *
 * w64 steps hold 4 doubles in a ymm and 4 floats in an xmm; w32 steps hold
 * 8 floats in a ymm. Tails use AVX masked loads and stores (lanes past k
 * are neither read nor written; loads give +0.0 there). Included by avx2.c
 * only, after <immintrin.h>. */
#ifndef GCK_OPS_AVX2_H
#define GCK_OPS_AVX2_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "attributes.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 4
#define GCK_LANES_w32 8
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

typedef __m256d gck_w64_f64;
typedef __m128 gck_w64_f32;
typedef __m256 gck_w32_f32;
typedef __m256d gck_w64_nan_f64; /* all-ones lanes where a NaN was seen */
typedef __m256 gck_w32_nan_f32;

/* ---- masks of the first k lanes (all ones = access the lane) ---- */
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

/* ---- w64: 4 doubles, 4 floats ---- */
GCK_ALWAYS_INLINE __m256d gck_w64_load_f64(const double *p) { return _mm256_loadu_pd(p); }
GCK_ALWAYS_INLINE __m128 gck_w64_load_f32(const float *p) { return _mm_loadu_ps(p); }
GCK_ALWAYS_INLINE void gck_w64_store_f64(double *p, __m256d v) { _mm256_storeu_pd(p, v); }
GCK_ALWAYS_INLINE void gck_w64_store_f32(float *p, __m128 v) { _mm_storeu_ps(p, v); }
GCK_ALWAYS_INLINE __m256d gck_w64_load_tail_f64(const double *p, size_t k)
{
    return _mm256_maskload_pd(p, gck_avx2_mask4x64(k));
}
GCK_ALWAYS_INLINE __m128 gck_w64_load_tail_f32(const float *p, size_t k)
{
    return _mm_maskload_ps(p, gck_avx2_mask4x32(k));
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f64(double *p, __m256d v, size_t k)
{
    _mm256_maskstore_pd(p, gck_avx2_mask4x64(k), v);
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f32(float *p, __m128 v, size_t k)
{
    _mm_maskstore_ps(p, gck_avx2_mask4x32(k), v);
}
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_f64_f64(__m256d v) { return v; }
GCK_ALWAYS_INLINE __m128 gck_w64_cvt_f32_f32(__m128 v) { return v; }
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_f32_f64(__m128 v) { return _mm256_cvtps_pd(v); } /* exact */
GCK_ALWAYS_INLINE __m128 gck_w64_cvt_f64_f32(__m256d v) { return _mm256_cvtpd_ps(v); } /* nearest even */
GCK_ALWAYS_INLINE __m256d gck_w64_add_f64(__m256d a, __m256d b) { return _mm256_add_pd(a, b); }
GCK_ALWAYS_INLINE __m128 gck_w64_add_f32(__m128 a, __m128 b) { return _mm_add_ps(a, b); }
GCK_ALWAYS_INLINE __m256d gck_w64_mul_f64(__m256d a, __m256d b) { return _mm256_mul_pd(a, b); }
GCK_ALWAYS_INLINE __m128 gck_w64_mul_f32(__m128 a, __m128 b) { return _mm_mul_ps(a, b); }
GCK_ALWAYS_INLINE __m256d gck_w64_set1_f64(double v) { return _mm256_set1_pd(v); }
GCK_ALWAYS_INLINE __m128 gck_w64_set1_f32(float v) { return _mm_set1_ps(v); }
GCK_ALWAYS_INLINE __m256d gck_w64_zero_f64(void) { return _mm256_setzero_pd(); }
GCK_ALWAYS_INLINE __m128 gck_w64_zero_f32(void) { return _mm_setzero_ps(); }
/* maxpd returns its second operand when either is NaN, so NaNs are tracked */
GCK_ALWAYS_INLINE __m256d gck_w64_abs_f64(__m256d v) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v); }
GCK_ALWAYS_INLINE __m256d gck_w64_max_f64(__m256d m, __m256d v) { return _mm256_max_pd(m, v); }
GCK_ALWAYS_INLINE double gck_w64_hmax_f64(__m256d m)
{
    const __m128d q = _mm_max_pd(_mm256_castpd256_pd128(m), _mm256_extractf128_pd(m, 1));
    return _mm_cvtsd_f64(_mm_max_sd(q, _mm_unpackhi_pd(q, q)));
}
GCK_ALWAYS_INLINE __m256d gck_w64_nan_none_f64(void) { return _mm256_setzero_pd(); }
GCK_ALWAYS_INLINE __m256d gck_w64_nan_pair_f64(__m256d acc, __m256d a, __m256d b)
{
    return _mm256_or_pd(acc, _mm256_cmp_pd(a, b, _CMP_UNORD_Q));
}
GCK_ALWAYS_INLINE int gck_w64_nan_any_f64(__m256d acc) { return _mm256_movemask_pd(acc) != 0; }

/* ---- w32: 8 floats ---- */
GCK_ALWAYS_INLINE __m256 gck_w32_load_f32(const float *p) { return _mm256_loadu_ps(p); }
GCK_ALWAYS_INLINE void gck_w32_store_f32(float *p, __m256 v) { _mm256_storeu_ps(p, v); }
GCK_ALWAYS_INLINE __m256 gck_w32_load_tail_f32(const float *p, size_t k)
{
    return _mm256_maskload_ps(p, gck_avx2_mask8x32(k));
}
GCK_ALWAYS_INLINE void gck_w32_store_tail_f32(float *p, __m256 v, size_t k)
{
    _mm256_maskstore_ps(p, gck_avx2_mask8x32(k), v);
}
GCK_ALWAYS_INLINE __m256 gck_w32_cvt_f32_f32(__m256 v) { return v; }
GCK_ALWAYS_INLINE __m256 gck_w32_add_f32(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
GCK_ALWAYS_INLINE __m256 gck_w32_mul_f32(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
GCK_ALWAYS_INLINE __m256 gck_w32_set1_f32(float v) { return _mm256_set1_ps(v); }
GCK_ALWAYS_INLINE __m256 gck_w32_zero_f32(void) { return _mm256_setzero_ps(); }
GCK_ALWAYS_INLINE __m256 gck_w32_abs_f32(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
GCK_ALWAYS_INLINE __m256 gck_w32_max_f32(__m256 m, __m256 v) { return _mm256_max_ps(m, v); }
GCK_ALWAYS_INLINE float gck_w32_hmax_f32(__m256 m)
{
    __m128 q = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    q = _mm_max_ps(q, _mm_movehl_ps(q, q));
    return _mm_cvtss_f32(_mm_max_ss(q, _mm_movehdup_ps(q)));
}
GCK_ALWAYS_INLINE __m256 gck_w32_nan_none_f32(void) { return _mm256_setzero_ps(); }
GCK_ALWAYS_INLINE __m256 gck_w32_nan_pair_f32(__m256 acc, __m256 a, __m256 b)
{
    return _mm256_or_ps(acc, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
}
GCK_ALWAYS_INLINE int gck_w32_nan_any_f32(__m256 acc) { return _mm256_movemask_ps(acc) != 0; }

#endif /* GCK_OPS_AVX2_H */
