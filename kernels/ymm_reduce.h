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
#include <stdint.h>

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

/* The walk: each run's full stripes of 64 elements at s_ (the run lanes
 * a0_..a15_) through the statement list FAST, which may OR lanes into
 * bad_ (an __m256) when CHECKED is 1: if any is set, that run's full
 * stripes and those of the rest of the block are summed again from zero
 * through SLOW. CHECKED 0 (a literal) folds the check and SLOW away.
 * Partial stripes go through A_TAIL. */
#define GCK_YMM_WALK(n, FAST, SLOW, CHECKED)                                  \
    do {                                                                      \
        __m256d o_[16];                                                       \
        for (int k_ = 0; k_ < 16; k_++)                                       \
            o_[k_] = _mm256_setzero_pd();                                     \
        int slow_ = 0;                                                        \
        for (size_t r0_ = 0; r0_ < (n); r0_ += GCK_RUN) {                     \
            const size_t r1_ = (n) - r0_ < GCK_RUN ? (n) : r0_ + GCK_RUN;     \
            GCK_YMM_ACC16(GCK_YMM_DECL)                                       \
            size_t s_ = r0_;                                                  \
            if (!slow_) {                                                     \
                __m256 bad_ = _mm256_setzero_ps();                            \
                (void)bad_;                                                   \
                for (; s_ + GCK_LANES <= r1_; s_ += GCK_LANES) {              \
                    FAST                                                      \
                }                                                             \
                slow_ = (CHECKED) && _mm256_movemask_ps(bad_) != 0;           \
                if (slow_) {                                                  \
                    GCK_YMM_ACC16(GCK_YMM_ZERO)                               \
                }                                                             \
            }                                                                 \
            if (slow_)                                                        \
                for (s_ = r0_; s_ + GCK_LANES <= r1_; s_ += GCK_LANES) {      \
                    SLOW                                                      \
                }                                                             \
            if (s_ < r1_) {                                                   \
                GCK_YMM_ACC16(GCK_YMM_TAIL)                                   \
            }                                                                 \
            GCK_YMM_ACC16(GCK_YMM_FOLD_IN)                                    \
        }                                                                     \
        return gck_fold16(o_);                                                \
    } while (0)
#define GCK_YMM_REDUCE_WALK(n, FULL) GCK_YMM_WALK(n, FULL, FULL, 0)
#define GCK_YMM_ZERO(k) a##k##_ = _mm256_setzero_pd();
#define GCK_YMM_REDUCE(n) GCK_YMM_REDUCE_WALK(n, GCK_YMM_ACC16(GCK_YMM_FULL))
/* GCK_YMM_REDUCE over f32 inputs x (and y, dist2's second), each stripe
 * prefetched ahead (kernels_internal.h). */
#define GCK_YMM_REDUCE32(n, x) GCK_YMM_REDUCE_WALK(n, gck_prefetch_stripe32((x) + s_); GCK_YMM_ACC16(GCK_YMM_FULL))
#define GCK_YMM_REDUCE32_2(n, x, y)                                                                \
    GCK_YMM_REDUCE_WALK(n, gck_prefetch_pair32((x) + s_, (y) + s_); GCK_YMM_ACC16(GCK_YMM_FULL))
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

/* 16 elements per step, for the 2-byte inputs x (and y, dist2's second):
 * one load of 16 elements is widened into the 4 quarters that feed run
 * registers k0..k0+3 (elements g+4q..g+4q+3 to register k0+q, as in
 * GCK_YMM_REDUCE), so every lane takes the same terms in the same order.
 * Widening 4 at a time (a 64-bit load, zero-extend, shift or vcvtph2ps,
 * vcvtps2pd per 4) was the limit of these kernels (see gck_w16_bf16). Each
 * stripe is prefetched ahead (gck_prefetch_stripe16 / _pair16). The including file
 * has gck_fl_term t and gck_fl_elem e in scope and defines A_TAIL as for
 * GCK_YMM_REDUCE. */
#define GCK_YMM_REDUCE16(n, x, y) GCK_YMM_REDUCE_WALK(n, GCK_YMM_STRIPE16(x, y))
#define GCK_YMM_STRIPE16(x, y)                                                \
    if (t == GCK_FL_DIST2)                                                    \
        gck_prefetch_pair16((x) + s_, (y) + s_);                              \
    else                                                                      \
        gck_prefetch_stripe16((x) + s_);                                      \
    GCK_YMM_FULL16(x, y, 0, 1, 2, 3) GCK_YMM_FULL16(x, y, 4, 5, 6, 7)         \
    GCK_YMM_FULL16(x, y, 8, 9, 10, 11) GCK_YMM_FULL16(x, y, 12, 13, 14, 15)
#define GCK_YMM_FULL16(x, y, k0, k1, k2, k3)                                  \
    {                                                                         \
        const gck_w16 wa_ = gck_w16_load(e, (x) + s_ + 4 * (k0));             \
        const gck_w16 wb_ = t != GCK_FL_DIST2 ? wa_ : gck_w16_load(e, (y) + s_ + 4 * (k0)); \
        GCK_YMM_Q(k0, 0) GCK_YMM_Q(k1, 1) GCK_YMM_Q(k2, 2) GCK_YMM_Q(k3, 3)   \
    }
#define GCK_YMM_Q(k, q)                                                       \
    {                                                                         \
        const int k_ = (k);                                                   \
        a##k##_ = gck_fl_terms_w(t, k_, a##k##_, wa_.v[q], wb_.v[q]);         \
    }

/* dist2 of 2-byte inputs with the difference taken in f32 where that is
 * exact, as AVX-512's fast path (avx512.c) and for AVX2 only (avx512.c's
 * own path is zmm): each run's full stripes go through GCK_YMM_D2F16, which
 * ORs a lane mask into bad_ where d + y != x or x - d != y, compared as
 * numbers. An inexact d fails one of them (Fast2Sum), Inf, NaN and a
 * flushed d fail; equal numbers of other bits are zeros of either sign, whose
 * square is +0 either way. If a run fails, its full stripes and those of the
 * rest of the block are summed again widened (GCK_YMM_STRIPE16). On the
 * Intel VM: 19 -> 22 GB/s at 64 Ki elements, 0.90-0.92 -> 0.92 of
 * ref_read2_16 at 64 Mi (13.2-13.6 -> 13.8-14.0 GB/s); data that fails in
 * every block 18.3-18.8 GB/s in cache, 3-5 % below widening throughout. 30
 * vector operations per 16 elements instead of 36: the widening of the
 * difference alone replaces that of both inputs; the remaining limit is the
 * three vector ports. */
#define GCK_YMM_REDUCE16_D2F(n, x, y)                                         \
    do {                                                                      \
        float dbuf_[16] __attribute__((aligned(32)));                         \
        GCK_YMM_WALK(n, GCK_YMM_D2F_STRIPE(x, y), GCK_YMM_STRIPE16(x, y), 1); \
    } while (0)
#define GCK_YMM_D2F_STRIPE(x, y)                                              \
    gck_prefetch_pair16((x) + s_, (y) + s_);                                  \
    GCK_YMM_D2F16(x, y, 0, 1, 2, 3) GCK_YMM_D2F16(x, y, 4, 5, 6, 7)           \
    GCK_YMM_D2F16(x, y, 8, 9, 10, 11) GCK_YMM_D2F16(x, y, 12, 13, 14, 15)

/* 16 elements as two vectors of 8 f32: bf16 interleaved with zero words
 * within each 128-bit lane (p: elements 0-3 | 8-11, q: 4-7 | 12-15), f16
 * by vcvtph2ps (p: 0-7, q: 8-15). */
typedef struct gck_w16f {
    __m256 p, q;
} gck_w16f;

static inline gck_w16f gck_w16f_load(gck_fl_elem e, const uint16_t *s)
{
    if (e == GCK_FL_BF16) {
        const __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)s), z = _mm256_setzero_si256();
        return (gck_w16f){ _mm256_castsi256_ps(_mm256_unpacklo_epi16(z, h)),
                           _mm256_castsi256_ps(_mm256_unpackhi_epi16(z, h)) };
    }
    return (gck_w16f){ _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)s)),
                       _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(s + 8))) };
}

/* acc + d * d for the 4 elements of f32 half h (0 low, 1 high) of d, the
 * high half converted from dbuf_ (a store and a load instead of
 * vextractf128 on the shuffle port; asm, so that the compiler cannot turn
 * it back into the extract). */
#define GCK_YMM_D2F_HALF(acc, d, off, h)                                      \
    {                                                                         \
        __m256d w_;                                                           \
        if (h)                                                                \
            __asm__("vcvtps2pd %1, %0" : "=x"(w_) : "m"(*(const __m128 *)(const void *)(dbuf_ + (off)))); \
        else                                                                  \
            w_ = _mm256_cvtps_pd(_mm256_castps256_ps128(d));                  \
        acc = _mm256_fmadd_pd(w_, w_, acc);                                   \
    }
#define GCK_YMM_D2F_BAD(d, wx, wy)                                            \
    bad_ = _mm256_or_ps(bad_, _mm256_or_ps(_mm256_cmp_ps(_mm256_add_ps(d, wy), wx, _CMP_NEQ_UQ), \
                                           _mm256_cmp_ps(_mm256_sub_ps(wx, d), wy, _CMP_NEQ_UQ)));
#define GCK_YMM_D2F16(x, y, k0, k1, k2, k3)                                   \
    {                                                                         \
        const gck_w16f wx_ = gck_w16f_load(e, (x) + s_ + 4 * (k0));           \
        const gck_w16f wy_ = gck_w16f_load(e, (y) + s_ + 4 * (k0));           \
        const __m256 dp_ = _mm256_sub_ps(wx_.p, wy_.p), dq_ = _mm256_sub_ps(wx_.q, wy_.q); \
        GCK_YMM_D2F_BAD(dp_, wx_.p, wy_.p)                                    \
        GCK_YMM_D2F_BAD(dq_, wx_.q, wy_.q)                                    \
        _mm256_store_ps(dbuf_, dp_);                                          \
        _mm256_store_ps(dbuf_ + 8, dq_);                                      \
        if (e == GCK_FL_BF16) {                                               \
            GCK_YMM_D2F_HALF(a##k0##_, dp_, 4, 0)                             \
            GCK_YMM_D2F_HALF(a##k1##_, dq_, 12, 0)                            \
            GCK_YMM_D2F_HALF(a##k2##_, dp_, 4, 1)                             \
            GCK_YMM_D2F_HALF(a##k3##_, dq_, 12, 1)                            \
        } else {                                                              \
            GCK_YMM_D2F_HALF(a##k0##_, dp_, 4, 0)                             \
            GCK_YMM_D2F_HALF(a##k1##_, dp_, 4, 1)                             \
            GCK_YMM_D2F_HALF(a##k2##_, dq_, 12, 0)                            \
            GCK_YMM_D2F_HALF(a##k3##_, dq_, 12, 1)                            \
        }                                                                     \
    }

/* 16 elements, 2-byte floats, widened exactly to f64 in element order, 4 per
 * ymm. bf16: interleaving 8 elements with zero words puts each in the high
 * half of a 32-bit lane (its f32 value), 4 per operation, where the 4-wide
 * form took a zero-extension and a shift (Zen 3, 64 Ki elements in L2:
 * 1.2-1.25x the elements per second; a 256-bit interleave needs a
 * vextractf128 per quarter and was no faster). f16: vcvtph2ps of 8
 * elements, exact for every input, denormals included, then each half
 * widened (on an Intel core 1.3x the rate of 4 per vcvtph2ps in cache, and
 * 0.75 -> 0.93 of ref_read_16 at 64 Mi; on Zen 3 the two ran alike). */
typedef struct gck_w16 {
    __m256d v[4]; /* elements 4q..4q+3 in v[q] */
} gck_w16;

static inline gck_w16 gck_w16_bf16(const uint16_t *p)
{
    const __m128i z = _mm_setzero_si128();
    const __m128i u = _mm_loadu_si128((const __m128i *)(const void *)p);
    const __m128i w = _mm_loadu_si128((const __m128i *)(const void *)(p + 8));
    return (gck_w16){ { _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(z, u))),
                        _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpackhi_epi16(z, u))),
                        _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpacklo_epi16(z, w))),
                        _mm256_cvtps_pd(_mm_castsi128_ps(_mm_unpackhi_epi16(z, w))) } };
}

static inline gck_w16 gck_w16_f16(const uint16_t *p)
{
    const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)p));
    const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(p + 8)));
    return (gck_w16){ { _mm256_cvtps_pd(_mm256_castps256_ps128(a)), _mm256_cvtps_pd(_mm256_extractf128_ps(a, 1)),
                        _mm256_cvtps_pd(_mm256_castps256_ps128(b)), _mm256_cvtps_pd(_mm256_extractf128_ps(b, 1)) } };
}

static inline gck_w16 gck_w16_load(gck_fl_elem e, const uint16_t *p)
{
    return e == GCK_FL_BF16 ? gck_w16_bf16(p) : gck_w16_f16(p);
}

/* acc + the terms of widened quarters v (and w, dist2's second input), as
 * each ISA's 4-lane terms compute them (|v| clears the sign bit). */
static inline __m256d gck_fl_terms_w(gck_fl_term t, int k_, __m256d acc, __m256d v, __m256d w)
{
    switch (t) {
    case GCK_FL_SUMSQ: return _mm256_fmadd_pd(v, v, acc);
    case GCK_FL_DIST2: {
        const __m256d d = gck_ymm_sub_on_fma(v, w);
        return GCK_YMM_ADDK(acc, _mm256_mul_pd(d, d));
    }
    default: return _mm256_add_pd(acc, _mm256_andnot_pd(_mm256_set1_pd(-0.0), v));
    }
}

#endif /* GCK_YMM_REDUCE_H */
