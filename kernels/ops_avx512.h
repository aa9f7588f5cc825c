/* kernels/ops_avx512.h - elementwise.h's operations for AVX-512: 8 doubles (zmm) or 16 floats (zmm) a step.
 *
 * w64 steps hold 8 doubles in a zmm and 8 floats in a ymm (AVX512VL);
 * w32 steps hold 16 floats in a zmm. Tails are opmask loads and stores
 * (lanes past k are neither read nor written; loads give +0.0 there).
 * Included by avx512.c only. */
#ifndef GCK_OPS_AVX512_H
#define GCK_OPS_AVX512_H

#include <immintrin.h>
#include <stddef.h>

#include "attributes.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 8
#define GCK_LANES_w32 16
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

typedef __m512d gck_w64_f64;
typedef __m256 gck_w64_f32;
typedef __m512 gck_w32_f32;
typedef __mmask8 gck_w64_nan_f64; /* lanes where a NaN was seen */
typedef __mmask16 gck_w32_nan_f32;

/* ---- w64: 8 doubles, 8 floats; k < 8 ---- */
GCK_ALWAYS_INLINE __mmask8 gck_avx512_mask8(size_t k) { return (__mmask8)((1u << k) - 1u); }
GCK_ALWAYS_INLINE __m512d gck_w64_load_f64(const double *p) { return _mm512_loadu_pd(p); }
GCK_ALWAYS_INLINE __m256 gck_w64_load_f32(const float *p) { return _mm256_loadu_ps(p); }
GCK_ALWAYS_INLINE void gck_w64_store_f64(double *p, __m512d v) { _mm512_storeu_pd(p, v); }
GCK_ALWAYS_INLINE void gck_w64_store_f32(float *p, __m256 v) { _mm256_storeu_ps(p, v); }
GCK_ALWAYS_INLINE __m512d gck_w64_load_tail_f64(const double *p, size_t k)
{
    return _mm512_maskz_loadu_pd(gck_avx512_mask8(k), p);
}
GCK_ALWAYS_INLINE __m256 gck_w64_load_tail_f32(const float *p, size_t k)
{
    return _mm256_maskz_loadu_ps(gck_avx512_mask8(k), p);
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f64(double *p, __m512d v, size_t k)
{
    _mm512_mask_storeu_pd(p, gck_avx512_mask8(k), v);
}
GCK_ALWAYS_INLINE void gck_w64_store_tail_f32(float *p, __m256 v, size_t k)
{
    _mm256_mask_storeu_ps(p, gck_avx512_mask8(k), v);
}
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_f64_f64(__m512d v) { return v; }
GCK_ALWAYS_INLINE __m256 gck_w64_cvt_f32_f32(__m256 v) { return v; }
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_f32_f64(__m256 v) { return _mm512_cvtps_pd(v); } /* exact */
GCK_ALWAYS_INLINE __m256 gck_w64_cvt_f64_f32(__m512d v) { return _mm512_cvtpd_ps(v); } /* nearest even */
GCK_ALWAYS_INLINE __m512d gck_w64_add_f64(__m512d a, __m512d b) { return _mm512_add_pd(a, b); }
GCK_ALWAYS_INLINE __m256 gck_w64_add_f32(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
GCK_ALWAYS_INLINE __m512d gck_w64_mul_f64(__m512d a, __m512d b) { return _mm512_mul_pd(a, b); }
GCK_ALWAYS_INLINE __m256 gck_w64_mul_f32(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
GCK_ALWAYS_INLINE __m512d gck_w64_set1_f64(double v) { return _mm512_set1_pd(v); }
GCK_ALWAYS_INLINE __m256 gck_w64_set1_f32(float v) { return _mm256_set1_ps(v); }
GCK_ALWAYS_INLINE __m512d gck_w64_zero_f64(void) { return _mm512_setzero_pd(); }
GCK_ALWAYS_INLINE __m256 gck_w64_zero_f32(void) { return _mm256_setzero_ps(); }
/* vmaxpd returns its second operand when either is NaN, so NaNs are tracked */
GCK_ALWAYS_INLINE __m512d gck_w64_abs_f64(__m512d v) { return _mm512_abs_pd(v); }
GCK_ALWAYS_INLINE __m512d gck_w64_max_f64(__m512d m, __m512d v) { return _mm512_max_pd(m, v); }
GCK_ALWAYS_INLINE double gck_w64_hmax_f64(__m512d m) { return _mm512_reduce_max_pd(m); }
GCK_ALWAYS_INLINE __mmask8 gck_w64_nan_none_f64(void) { return 0; }
GCK_ALWAYS_INLINE __mmask8 gck_w64_nan_pair_f64(__mmask8 acc, __m512d a, __m512d b)
{
    return acc | _mm512_cmp_pd_mask(a, b, _CMP_UNORD_Q);
}
GCK_ALWAYS_INLINE int gck_w64_nan_any_f64(__mmask8 acc) { return acc != 0; }

/* ---- w32: 16 floats; k < 16 ---- */
GCK_ALWAYS_INLINE __mmask16 gck_avx512_mask16(size_t k) { return (__mmask16)((1u << k) - 1u); }
GCK_ALWAYS_INLINE __m512 gck_w32_load_f32(const float *p) { return _mm512_loadu_ps(p); }
GCK_ALWAYS_INLINE void gck_w32_store_f32(float *p, __m512 v) { _mm512_storeu_ps(p, v); }
GCK_ALWAYS_INLINE __m512 gck_w32_load_tail_f32(const float *p, size_t k)
{
    return _mm512_maskz_loadu_ps(gck_avx512_mask16(k), p);
}
GCK_ALWAYS_INLINE void gck_w32_store_tail_f32(float *p, __m512 v, size_t k)
{
    _mm512_mask_storeu_ps(p, gck_avx512_mask16(k), v);
}
GCK_ALWAYS_INLINE __m512 gck_w32_cvt_f32_f32(__m512 v) { return v; }
GCK_ALWAYS_INLINE __m512 gck_w32_add_f32(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }
GCK_ALWAYS_INLINE __m512 gck_w32_mul_f32(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
GCK_ALWAYS_INLINE __m512 gck_w32_set1_f32(float v) { return _mm512_set1_ps(v); }
GCK_ALWAYS_INLINE __m512 gck_w32_zero_f32(void) { return _mm512_setzero_ps(); }
GCK_ALWAYS_INLINE __m512 gck_w32_abs_f32(__m512 v) { return _mm512_abs_ps(v); }
GCK_ALWAYS_INLINE __m512 gck_w32_max_f32(__m512 m, __m512 v) { return _mm512_max_ps(m, v); }
GCK_ALWAYS_INLINE float gck_w32_hmax_f32(__m512 m) { return _mm512_reduce_max_ps(m); }
GCK_ALWAYS_INLINE __mmask16 gck_w32_nan_none_f32(void) { return 0; }
GCK_ALWAYS_INLINE __mmask16 gck_w32_nan_pair_f32(__mmask16 acc, __m512 a, __m512 b)
{
    return acc | _mm512_cmp_ps_mask(a, b, _CMP_UNORD_Q);
}
GCK_ALWAYS_INLINE int gck_w32_nan_any_f32(__mmask16 acc) { return acc != 0; }

#endif /* GCK_OPS_AVX512_H */
