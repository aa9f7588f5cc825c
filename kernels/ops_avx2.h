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
#include <string.h>

#include "ops_common.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 4
#define GCK_LANES_w32 8
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1
#define GCK_EW_SEGS 4 /* elementwise.h: big arrays are walked 4 pages at a time */
#define GCK_EW_SEGS_WIDEN 1 /* and so are those that widen into a larger type (elementwise.h) */

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

/* Streaming (non-temporal) full steps of axpy_init_nt: dst aligned to GCK_NT_ALIGN bytes; the
 * stores are weakly ordered, so a kernel that makes them ends with gck_nt_fence. */
#define GCK_NT_ALIGN 32
GCK_ALWAYS_INLINE void gck_w64_store_nt_f64(double *p, __m256d v) { _mm256_stream_pd(p, v); }
GCK_ALWAYS_INLINE void gck_w32_store_nt_f32(float *p, __m256 v) { _mm256_stream_ps(p, v); }
GCK_ALWAYS_INLINE void gck_nt_fence(void) { _mm_sfence(); }

/* f32 <-> f64 at w64: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_f32_f64(__m128 v) { return _mm256_cvtps_pd(v); }
GCK_ALWAYS_INLINE __m128 gck_w64_cvt_f64_f32(__m256d v) { return _mm256_cvtpd_ps(v); }

/* ---- 2-byte floats: 8 (w32) or 4 (w64) 16-bit lanes of an xmm -------------
 * AVX2 has no 16-bit masked load or store, so a tail goes through a
 * zero-padded stack copy (zero bits widen to +0.0). */
#define GCK_AVX2_STORAGE16(w, t, LD, ST, L)                                    \
    typedef __m128i gck_##w##_##t;                                             \
    GCK_ALWAYS_INLINE __m128i gck_##w##_load_##t(const uint16_t *p) { return LD((const __m128i *)(const void *)p); } \
    GCK_ALWAYS_INLINE void gck_##w##_store_##t(uint16_t *p, __m128i v) { ST((__m128i *)(void *)p, v); } \
    GCK_ALWAYS_INLINE __m128i gck_##w##_load_tail_##t(const uint16_t *p, size_t k) \
    {                                                                          \
        uint16_t b[8] = {0};                                                   \
        memcpy(b, p, k * sizeof *p);                                           \
        return _mm_loadu_si128((const __m128i *)(const void *)b);              \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(uint16_t *p, __m128i v, size_t k) \
    {                                                                          \
        uint16_t b[8];                                                         \
        _mm_storeu_si128((__m128i *)(void *)b, v);                             \
        memcpy(p, b, k * sizeof *p);                                           \
    }
GCK_AVX2_STORAGE16(w32, bf16, _mm_loadu_si128, _mm_storeu_si128, 8)
GCK_AVX2_STORAGE16(w32, f16, _mm_loadu_si128, _mm_storeu_si128, 8)
GCK_AVX2_STORAGE16(w64, bf16, _mm_loadl_epi64, _mm_storel_epi64, 4)
GCK_AVX2_STORAGE16(w64, f16, _mm_loadl_epi64, _mm_storel_epi64, 4)

/* bf16 <-> f32 (ops_scalar.h defines both): a 16-bit shift up; rounding to
 * nearest even on the bits, NaN lanes set to 0xFFFF, packed to 16 bits
 * (unsigned saturation never saturates: every lane is below 2^16). */
GCK_ALWAYS_INLINE __m256 gck_w32_cvt_bf16_f32(__m128i v)
{
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16));
}
/* the bf16 bits of each f32 lane, in its low 16 bits: a NaN lane's sum is
 * or-ed to all ones before the shift */
GCK_ALWAYS_INLINE __m256i gck_avx2_round_bf16(__m256 v)
{
    const __m256i u = _mm256_castps_si256(v);
    const __m256i bias = _mm256_add_epi32(_mm256_set1_epi32(0x7fff), _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_srli_epi32(_mm256_or_si256(_mm256_add_epi32(u, bias), nan), 16);
}
GCK_ALWAYS_INLINE __m128i gck_w32_cvt_f32_bf16(__m256 v)
{
    const __m256i r = gck_avx2_round_bf16(v);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
/* two w32 steps of bf16 per 32-byte load and store (elementwise.h's
 * GCK_EW_SCALE_BF16): zero words below each element give its f32 bits */
#define GCK_PAIR16_BF16 1
GCK_ALWAYS_INLINE void gck_pair16_load_bf16(const uint16_t *p, __m256 *lo, __m256 *hi)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p), z = _mm256_setzero_si256();
    *lo = _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v));
    *hi = _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v));
}
/* both steps' rounded lanes packed in-lane: the pairs' order (the loads' above) */
GCK_ALWAYS_INLINE __m256i gck_pair16_pack_bf16(__m256 lo, __m256 hi)
{
    return _mm256_packus_epi32(gck_avx2_round_bf16(lo), gck_avx2_round_bf16(hi));
}
GCK_ALWAYS_INLINE void gck_pair16_store_bf16(uint16_t *p, __m256 lo, __m256 hi)
{
    _mm256_storeu_si256((__m256i *)(void *)p, gck_pair16_pack_bf16(lo, hi));
}
/* two consecutive steps' f32 (elements 0-7 in lo, 8-15 in hi) as bf16 in order: the in-lane pack
 * then one cross-lane permute (elementwise.h's GCK_EW_CONVERT_BF16) */
GCK_ALWAYS_INLINE void gck_pair16_store_seq_bf16(uint16_t *p, __m256 lo, __m256 hi)
{
    _mm256_storeu_si256((__m256i *)(void *)p, _mm256_permute4x64_epi64(gck_pair16_pack_bf16(lo, hi), 0xd8));
}
/* f16 <-> f32: F16C, the IEEE conversions ops_scalar.h writes out (the
 * rounding mode is the instruction's immediate, not MXCSR's) */
GCK_ALWAYS_INLINE __m256 gck_w32_cvt_f16_f32(__m128i v) { return _mm256_cvtph_ps(v); }
GCK_ALWAYS_INLINE __m128i gck_w32_cvt_f32_f16(__m256 v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
/* to f64 through the exact f32 value */
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_bf16_f64(__m128i v)
{
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(v), 16)));
}
GCK_ALWAYS_INLINE __m256d gck_w64_cvt_f16_f64(__m128i v) { return _mm256_cvtps_pd(_mm_cvtph_ps(v)); }

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

/* 16-bit words, 16 a ymm (elementwise.h's amax of bf16 / f16) */
#define GCK_U16_LANES 16
typedef __m256i gck_u16v;
GCK_ALWAYS_INLINE __m256i gck_u16_load(const uint16_t *p) { return _mm256_loadu_si256((const __m256i *)(const void *)p); }
GCK_ALWAYS_INLINE __m256i gck_u16_set1(uint16_t v) { return _mm256_set1_epi16((short)v); }
GCK_ALWAYS_INLINE __m256i gck_u16_and(__m256i a, __m256i b) { return _mm256_and_si256(a, b); }
GCK_ALWAYS_INLINE __m256i gck_u16_max(__m256i a, __m256i b) { return _mm256_max_epu16(a, b); }
GCK_ALWAYS_INLINE uint16_t gck_u16_hmax(__m256i v)
{
    return gck_x86_hmax_u16(_mm_max_epu16(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1)));
}

#endif /* GCK_OPS_AVX2_H */
