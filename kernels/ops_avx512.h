/* kernels/ops_avx512.h - elementwise.h's operations for AVX-512: 8 doubles (zmm) or 16 floats (zmm) a step.
 *
 * w64 steps hold 8 doubles in a zmm and 8 floats in a ymm (AVX512VL);
 * w32 steps hold 16 floats in a zmm. Tails are opmask loads and stores
 * (lanes past k are neither read nor written; loads give +0.0 there).
 * vmaxpd/vmaxps return their second operand when either is NaN, so amax
 * tracks NaNs in an opmask. Included by avx512.c only. */
#ifndef GCK_OPS_AVX512_H
#define GCK_OPS_AVX512_H

#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "ops_common.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 8
#define GCK_LANES_w32 16
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1
#define GCK_EW_SEGS 4 /* elementwise.h: big arrays are walked 4 pages at a time */
#define GCK_EW_SEGS_WIDEN 0 /* not those between element sizes: widening ran 5 % slower so */

GCK_OPS_X86(w64, f64, __m512d, _mm512, pd)
GCK_OPS_X86(w64, f32, __m256, _mm256, ps)
GCK_OPS_X86(w32, f32, __m512, _mm512, ps)

/* The first k < lanes elements under the opmask M of k ones. */
#define GCK_AVX512_TAIL(w, t, V, P, S, M)                                      \
    GCK_ALWAYS_INLINE V gck_##w##_load_tail_##t(const GCK_CT(t) *p, size_t k)  \
    {                                                                          \
        return P##_maskz_loadu_##S((M)((1u << k) - 1u), p);                    \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(GCK_CT(t) *p, V v, size_t k) \
    {                                                                          \
        P##_mask_storeu_##S(p, (M)((1u << k) - 1u), v);                        \
    }
GCK_AVX512_TAIL(w64, f64, __m512d, _mm512, pd, __mmask8)
GCK_AVX512_TAIL(w64, f32, __m256, _mm256, ps, __mmask8)
GCK_AVX512_TAIL(w32, f32, __m512, _mm512, ps, __mmask16)

/* Streaming (non-temporal) full steps of axpy_init_nt: dst aligned to GCK_NT_ALIGN bytes; the
 * stores are weakly ordered, so a kernel that makes them ends with gck_nt_fence. */
#define GCK_NT_ALIGN 64
GCK_ALWAYS_INLINE void gck_w64_store_nt_f64(double *p, __m512d v) { _mm512_stream_pd(p, v); }
GCK_ALWAYS_INLINE void gck_w32_store_nt_f32(float *p, __m512 v) { _mm512_stream_ps(p, v); }
GCK_ALWAYS_INLINE void gck_nt_fence(void) { _mm_sfence(); }

/* f32 <-> f64 at w64: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_f32_f64(__m256 v) { return _mm512_cvtps_pd(v); }
GCK_ALWAYS_INLINE __m256 gck_w64_cvt_f64_f32(__m512d v) { return _mm512_cvtpd_ps(v); }

/* ---- 2-byte floats: 16 (w32, a ymm) or 8 (w64, an xmm) 16-bit lanes -------- */
#define GCK_AVX512_STORAGE16(w, t, V, P, SI, M)                                \
    typedef V gck_##w##_##t;                                                   \
    GCK_ALWAYS_INLINE V gck_##w##_load_##t(const uint16_t *p) { return P##_loadu_##SI((const V *)(const void *)p); } \
    GCK_ALWAYS_INLINE void gck_##w##_store_##t(uint16_t *p, V v) { P##_storeu_##SI((V *)(void *)p, v); } \
    GCK_ALWAYS_INLINE V gck_##w##_load_tail_##t(const uint16_t *p, size_t k)   \
    {                                                                          \
        return P##_maskz_loadu_epi16((M)((1u << k) - 1u), p);                  \
    }                                                                          \
    GCK_ALWAYS_INLINE void gck_##w##_store_tail_##t(uint16_t *p, V v, size_t k) \
    {                                                                          \
        P##_mask_storeu_epi16(p, (M)((1u << k) - 1u), v);                      \
    }
GCK_AVX512_STORAGE16(w32, bf16, __m256i, _mm256, si256, __mmask16)
GCK_AVX512_STORAGE16(w32, f16, __m256i, _mm256, si256, __mmask16)
GCK_AVX512_STORAGE16(w64, bf16, __m128i, _mm, si128, __mmask8)
GCK_AVX512_STORAGE16(w64, f16, __m128i, _mm, si128, __mmask8)

/* bf16 <-> f32 (ops_scalar.h defines both): a 16-bit shift up; rounding to
 * nearest even on the bits, NaN lanes set to 0xFFFF, narrowed to 16 bits. */
GCK_ALWAYS_INLINE __m512 gck_w32_cvt_bf16_f32(__m256i v)
{
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16));
}
/* the bf16 bits of each f32 lane, in its low 16 bits */
GCK_ALWAYS_INLINE __m512i gck_avx512_round_bf16(__m512 v)
{
    const __m512i u = _mm512_castps_si512(v);
    const __m512i bias = _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
    const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, bias), 16);
    return _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0xffff));
}
GCK_ALWAYS_INLINE __m256i gck_w32_cvt_f32_bf16(__m512 v) { return _mm512_cvtepi32_epi16(gck_avx512_round_bf16(v)); }
/* two w32 steps of bf16 per 64-byte load and store (elementwise.h's
 * GCK_EW_SCALE_BF16): zero words below each element give its f32 bits */
#define GCK_PAIR16_BF16 1
GCK_ALWAYS_INLINE void gck_pair16_load_bf16(const uint16_t *p, __m512 *lo, __m512 *hi)
{
    const __m512i v = _mm512_loadu_si512(p), z = _mm512_setzero_si512();
    *lo = _mm512_castsi512_ps(_mm512_unpacklo_epi16(z, v));
    *hi = _mm512_castsi512_ps(_mm512_unpackhi_epi16(z, v));
}
/* both steps' rounded lanes packed in-lane: the pairs' order (the loads' above) */
GCK_ALWAYS_INLINE __m512i gck_pair16_pack_bf16(__m512 lo, __m512 hi)
{
    return _mm512_packus_epi32(gck_avx512_round_bf16(lo), gck_avx512_round_bf16(hi));
}
GCK_ALWAYS_INLINE void gck_pair16_store_bf16(uint16_t *p, __m512 lo, __m512 hi)
{
    _mm512_storeu_si512(p, gck_pair16_pack_bf16(lo, hi));
}
/* two consecutive steps' f32 (elements 0-15 in lo, 16-31 in hi) as bf16 in order: the in-lane
 * pack then one cross-lane permute (elementwise.h's GCK_EW_CONVERT_BF16) */
GCK_ALWAYS_INLINE void gck_pair16_store_seq_bf16(uint16_t *p, __m512 lo, __m512 hi)
{
    const __m512i order = _mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi64(order, gck_pair16_pack_bf16(lo, hi)));
}
/* f16 <-> f32: the IEEE conversions ops_scalar.h writes out (the rounding
 * mode is the instruction's immediate, not MXCSR's) */
GCK_ALWAYS_INLINE __m512 gck_w32_cvt_f16_f32(__m256i v) { return _mm512_cvtph_ps(v); }
GCK_ALWAYS_INLINE __m256i gck_w32_cvt_f32_f16(__m512 v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT); }
/* to f64 through the exact f32 value */
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_bf16_f64(__m128i v)
{
    return _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(v), 16)));
}
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_f16_f64(__m128i v) { return _mm512_cvtps_pd(_mm256_cvtph_ps(v)); }

/* amax: |v|, an opmask of the lanes that saw a NaN, the largest lane */
#define GCK_AVX512_AMAX(w, t, V, S, M)                                         \
    typedef M gck_##w##_nan_##t;                                               \
    GCK_ALWAYS_INLINE V gck_##w##_abs_##t(V v) { return _mm512_abs_##S(v); }   \
    GCK_ALWAYS_INLINE GCK_CT(t) gck_##w##_hmax_##t(V m) { return _mm512_reduce_max_##S(m); } \
    GCK_ALWAYS_INLINE M gck_##w##_nan_none_##t(void) { return 0; }             \
    GCK_ALWAYS_INLINE M gck_##w##_nan_pair_##t(M acc, V a, V b)                \
    {                                                                          \
        return acc | _mm512_cmp_##S##_mask(a, b, _CMP_UNORD_Q);               \
    }                                                                          \
    GCK_ALWAYS_INLINE int gck_##w##_nan_any_##t(M acc) { return acc != 0; }
GCK_AVX512_AMAX(w64, f64, __m512d, pd, __mmask8)
GCK_AVX512_AMAX(w32, f32, __m512, ps, __mmask16)

/* 16-bit words, 32 a zmm (elementwise.h's amax of bf16 / f16; AVX512BW) */
#define GCK_U16_LANES 32
typedef __m512i gck_u16v;
GCK_ALWAYS_INLINE __m512i gck_u16_load(const uint16_t *p) { return _mm512_loadu_si512((const void *)p); }
GCK_ALWAYS_INLINE __m512i gck_u16_set1(uint16_t v) { return _mm512_set1_epi16((short)v); }
GCK_ALWAYS_INLINE __m512i gck_u16_and(__m512i a, __m512i b) { return _mm512_and_si512(a, b); }
GCK_ALWAYS_INLINE __m512i gck_u16_max(__m512i a, __m512i b) { return _mm512_max_epu16(a, b); }
GCK_ALWAYS_INLINE uint16_t gck_u16_hmax(__m512i v)
{
    const __m256i h = _mm256_max_epu16(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
    return gck_x86_hmax_u16(_mm_max_epu16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}

#endif /* GCK_OPS_AVX512_H */
