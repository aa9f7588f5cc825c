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

#include "ops_common.h"

#define GCK_W64 w64
#define GCK_W32 w32
#define GCK_LANES_w64 8
#define GCK_LANES_w32 16
#define GCK_EW_UNROLL 4
#define GCK_EW_TAILS 1

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

/* f32 <-> f64 at w64: widening is exact, narrowing rounds to nearest even */
GCK_ALWAYS_INLINE __m512d gck_w64_cvt_f32_f64(__m256 v) { return _mm512_cvtps_pd(v); }
GCK_ALWAYS_INLINE __m256 gck_w64_cvt_f64_f32(__m512d v) { return _mm512_cvtpd_ps(v); }

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

#endif /* GCK_OPS_AVX512_H */
