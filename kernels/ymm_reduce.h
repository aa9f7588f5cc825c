/* kernels/ymm_reduce.h - the canonical block reduction over 16 ymm of lanes, shared by avx2.c and avx512.c.
 *
 * Only macros and static inline functions (included by ISA files built with
 * their own flags; a non-inline definition here could leak AVX code into
 * baseline callers). The including file defines, per kernel:
 *   A_FULL(a, g)      a + the 4 terms of elements g..g+3
 *   A_TAIL(a, g, r1)  the same with lanes at or past r1 adding +0.0
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

#define GCK_YMM_REDUCE(n)                                                     \
    do {                                                                      \
        __m256d o_[16];                                                       \
        for (int k_ = 0; k_ < 16; k_++)                                       \
            o_[k_] = _mm256_setzero_pd();                                     \
        for (size_t r0_ = 0; r0_ < (n); r0_ += GCK_RUN) {                     \
            const size_t r1_ = (n) - r0_ < GCK_RUN ? (n) : r0_ + GCK_RUN;     \
            __m256d a_[16];                                                   \
            for (int k_ = 0; k_ < 16; k_++)                                   \
                a_[k_] = _mm256_setzero_pd();                                 \
            size_t s_ = r0_;                                                  \
            for (; s_ + GCK_LANES <= r1_; s_ += GCK_LANES)                    \
                for (int k_ = 0; k_ < 16; k_++)                               \
                    a_[k_] = A_FULL(a_[k_], s_ + 4 * (size_t)k_);             \
            if (s_ < r1_)                                                     \
                for (int k_ = 0; k_ < 16; k_++)                               \
                    a_[k_] = A_TAIL(a_[k_], s_ + 4 * (size_t)k_, r1_);        \
            for (int k_ = 0; k_ < 16; k_++)                                   \
                o_[k_] = _mm256_add_pd(o_[k_], a_[k_]);                       \
        }                                                                     \
        return gck_fold16(o_);                                                \
    } while (0)

#endif /* GCK_YMM_REDUCE_H */
