/* kernels/ymm_reduce.h - the canonical block reduction over 16 ymm of lanes, shared by avx2.c and avx512.c.
 *
 * Only macros and static inline functions (included by ISA files built with
 * their own flags; a non-inline definition here could leak AVX code into
 * baseline callers). The including file defines, per kernel:
 *   A_FULL(a, g)      a + the 4 terms of elements g..g+3
 *   A_TAIL(a, g, r1)  the same with lanes at or past r1 adding +0.0
 * both of which may use k_, the number (0..15) of the run register they
 * update (a constant after unrolling), e.g. through GCK_YMM_ADDK.
 * Lanes 4k..4k+3 live in ymm k. Each run is walked once over its stripes:
 * walking it twice (8 registers each) read only 0.6-0.75 of the memory
 * bandwidth out of cache, because each walk skips every other pair of lines. */
#ifndef GCK_YMM_REDUCE_H
#define GCK_YMM_REDUCE_H

#include <immintrin.h>

#include "kernels_internal.h"

/* The canonical fold (h = 32, 16, 8, 4 lanes apart in registers, then 2, 1). */
static inline double gck_fold16(__m256d o[16])
{
    for (int h = 8; h >= 1; h /= 2)
        for (int k = 0; k < h; k++)
            o[k] = _mm256_add_pd(o[k], o[k + h]);
    const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(o[0]), _mm256_extractf128_pd(o[0], 1));
    return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

/* Zen 4 issues FP adds on two pipes and multiplies/FMAs on two others, so
 * a kernel with more adds than multiplies (dist2: sub, mul, add) waits on the
 * add pipes. These run an add or a subtraction on the FMA pipes with the same
 * single rounding: t * 1.0 is exact, so fma(t, 1, a) == a + t and
 * -(b * 1) + a == a - b, zero signs included (NaN payloads may differ, which
 * kernels.h leaves outside the bit-identity promise). dist2_f32 in L1:
 * 9.4 -> 6.8 us per 64 Ki elements on Zen 4, where the two f32 -> f64
 * widenings per 4 elements become the limit. */
static inline __m256d gck_ymm_add_on_fma(__m256d a, __m256d t)
{
    return _mm256_fmadd_pd(t, _mm256_set1_pd(1.0), a);
}

static inline __m256d gck_ymm_sub_on_fma(__m256d a, __m256d b)
{
    return _mm256_fnmadd_pd(b, _mm256_set1_pd(1.0), a);
}

/* a + t for run register k_: every other register adds on the FMA pipes. */
#define GCK_YMM_ADDK(a, t) ((k_ & 1) ? gck_ymm_add_on_fma((a), (t)) : _mm256_add_pd((a), (t)))

/* Sixteen named accumulators rather than an array: an array indexed in the
 * tail loop lives in memory, and the extra loads and stores per run cost
 * about a third of the in-cache rate. */
#define GCK_YMM_ACC16(OP)                                                       \
    OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7)                             \
    OP(8) OP(9) OP(10) OP(11) OP(12) OP(13) OP(14) OP(15)

#define GCK_YMM_REDUCE(n)                                                     \
    do {                                                                      \
        __m256d o_[16];                                                       \
        for (int k_ = 0; k_ < 16; k_++)                                       \
            o_[k_] = _mm256_setzero_pd();                                     \
        for (size_t r0_ = 0; r0_ < (n); r0_ += GCK_RUN) {                     \
            const size_t r1_ = (n) - r0_ < GCK_RUN ? (n) : r0_ + GCK_RUN;     \
            GCK_YMM_ACC16(GCK_YMM_DECL)                                       \
            size_t s_ = r0_;                                                  \
            for (; s_ + GCK_LANES <= r1_; s_ += GCK_LANES) {                  \
                GCK_YMM_ACC16(GCK_YMM_FULL)                                   \
            }                                                                 \
            if (s_ < r1_) {                                                   \
                GCK_YMM_ACC16(GCK_YMM_TAIL)                                   \
            }                                                                 \
            GCK_YMM_ACC16(GCK_YMM_FOLD_IN)                                    \
        }                                                                     \
        return gck_fold16(o_);                                                \
    } while (0)
#define GCK_YMM_DECL(k) __m256d a##k##_ = _mm256_setzero_pd();
#define GCK_YMM_FULL(k)                                                 \
    {                                                                   \
        const int k_ = (k);                                             \
        (void)k_;                                                       \
        a##k##_ = A_FULL(a##k##_, s_ + 4 * (k));                        \
    }
#define GCK_YMM_TAIL(k)                                                 \
    {                                                                   \
        const int k_ = (k);                                             \
        (void)k_;                                                       \
        a##k##_ = A_TAIL(a##k##_, s_ + 4 * (k), r1_);                   \
    }
#define GCK_YMM_FOLD_IN(k) o_[k] = _mm256_add_pd(o_[k], a##k##_);

#endif /* GCK_YMM_REDUCE_H */
