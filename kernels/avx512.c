/* kernels/avx512.c - AVX-512 (F/DQ/BW/VL) kernels: the scalar reference's operations, 8 lanes at a time.
 *
 * The elementwise kernels and amax are elementwise.h over ops_avx512.h. The
 * reductions and the byte-plane network are written here by hand: their
 * register budgets are this ISA's own (8 zmm of run lanes per run; f32
 * reductions run at ymm width because widening 8 floats into a zmm was
 * measured at half the rate of 4 into a ymm, see GCK_YMM_REDUCE below).
 *
 * The 64 canonical lanes are 8 zmm registers (zmm k holds lanes 8k..8k+7);
 * each run keeps its own 8 zmm of run lanes, so a run walks stripes of 64
 * elements with 8 independent add chains, enough to hide the add latency.
 * Tails use masked loads, and every term is masked to +0.0 outside n (a
 * division of a masked zero could otherwise make NaN), so lane + term is
 * exactly the scalar order. */
#define GCK_ISA avx512

#include <immintrin.h>
#include <math.h>

#include <sleef.h>

#include "bytes_simd.h"
#include "kernels_internal.h"
#include "ops_avx512.h"
#include "ymm_reduce.h"

#if !defined(__AVX512F__) || !defined(__AVX512DQ__) || !defined(__AVX512VL__) || !defined(__AVX512BW__)
#error "avx512.c must be built with -mavx512f -mavx512dq -mavx512bw -mavx512vl (cmake/GckIsa.cmake)"
#endif

/* Mask of the lanes of an 8-wide group starting at element g that lie below n. */
static inline __mmask8 gck_mask8(size_t g, size_t n)
{
    return g >= n ? 0 : (n - g >= 8 ? (__mmask8)0xFF : (__mmask8)((1u << (n - g)) - 1u));
}

/* The canonical fold (h = 32, 16, 8, 4, 2, 1) of the lanes in o[0..7]. */
static inline double gck_fold8(__m512d o[8])
{
    for (int k = 0; k < 4; k++)
        o[k] = _mm512_add_pd(o[k], o[k + 4]);
    o[0] = _mm512_add_pd(o[0], o[2]);
    o[1] = _mm512_add_pd(o[1], o[3]);
    o[0] = _mm512_add_pd(o[0], o[1]);
    const __m256d q = _mm256_add_pd(_mm512_castpd512_pd256(o[0]), _mm512_extractf64x4_pd(o[0], 1));
    const __m128d d = _mm_add_pd(_mm256_castpd256_pd128(q), _mm256_extractf128_pd(q, 1));
    return _mm_cvtsd_f64(_mm_add_sd(d, _mm_unpackhi_pd(d, d)));
}

/* a + t and a - b with one rounding each, on the FMA pipes (see
 * gck_ymm_add_on_fma in ymm_reduce.h for why and why it is exact). */
static inline __m512d gck_zmm_add_on_fma(__m512d a, __m512d t)
{
    return _mm512_fmadd_pd(t, _mm512_set1_pd(1.0), a);
}

static inline __m512d gck_zmm_sub_on_fma(__m512d a, __m512d b)
{
    return _mm512_fnmadd_pd(b, _mm512_set1_pd(1.0), a);
}

/* a + t for run register k_: every other register adds on the FMA pipes. */
#define GCK_ZMM_ADDK(a, t) ((k_ & 1) ? gck_zmm_add_on_fma((a), (t)) : _mm512_add_pd((a), (t)))

/* Run register k takes the 8 terms at g; k_ is visible to ACC. */
#define GCK_Z(ACC, k, g, m)                                                    \
    {                                                                          \
        const int k_ = (k);                                                    \
        (void)k_;                                                              \
        a##k = ACC(a##k, g, m);                                                \
    }

/* The canonical block reduction. ACC(a, g, m) returns a + the 8 terms of
 * elements g..g+7, lanes outside mask m adding +0.0; it may use k_ (the run
 * register, 0..7) and r1_ (the end of the current run). Full stripes pass
 * m = 0xFF, a constant the compiler folds into plain loads. */
#define GCK_AVX512_REDUCE(n, ACC) GCK_AVX512_REDUCE_PF(n, ACC, )
/* The same with PF, a statement at g_, first in each full stripe (the f32
 * inputs' prefetch, kernels_internal.h). */
#define GCK_AVX512_REDUCE_PF(n, ACC, PF) GCK_AVX512_WALK(n, ACC, PF GCK_ZSTRIPE(ACC, g_), 0)

/* The 8 run registers' terms of the full stripe at g. */
#define GCK_ZSTRIPE(ACC, g)                                                    \
    GCK_Z(ACC, 0, (g) + 0, (__mmask8)0xFF);                                    \
    GCK_Z(ACC, 1, (g) + 8, (__mmask8)0xFF);                                    \
    GCK_Z(ACC, 2, (g) + 16, (__mmask8)0xFF);                                   \
    GCK_Z(ACC, 3, (g) + 24, (__mmask8)0xFF);                                   \
    GCK_Z(ACC, 4, (g) + 32, (__mmask8)0xFF);                                   \
    GCK_Z(ACC, 5, (g) + 40, (__mmask8)0xFF);                                   \
    GCK_Z(ACC, 6, (g) + 48, (__mmask8)0xFF);                                   \
    GCK_Z(ACC, 7, (g) + 56, (__mmask8)0xFF);

/* The walk: each run's full stripes through FAST (statements at g_ that
 * update a0..a7 and, when CHECKED is 1, may OR into bad_, an __m512i); if
 * bad_ is then nonzero the run's full stripes are summed again from zero
 * with ACC, and so are the later runs' at once: on data that fails the
 * check (inputs far apart in magnitude), a block costs one wasted run, not
 * twice its time. CHECKED 0 (FAST the plain stripe) folds the check and the
 * second walk away at compile time: left to the optimizer, the test of a
 * zero bad_ stayed in, and div_sumsq_f64 at 16 Mi ran 12 % slower in the
 * gate. The partial stripe takes ACC under masks. */
#define GCK_AVX512_WALK(n, ACC, FAST, CHECKED) GCK_AVX512_WALK_FIX(n, ACC, FAST, CHECKED, )
/* The same, with FIX, statements run on o_ before the fold: a walk that kept
 * its lanes in another order puts them back in the canonical one there. */
#define GCK_AVX512_WALK_FIX(n, ACC, FAST, CHECKED, FIX)                                   \
    do {                                                                                  \
        __m512d o_[8];                                                                    \
        for (int k_ = 0; k_ < 8; k_++)                                                    \
            o_[k_] = _mm512_setzero_pd();                                                 \
        int slow_ = 0;                                                                    \
        for (size_t r0_ = 0; r0_ < (n); r0_ += GCK_RUN) {                                 \
            const size_t r1_ = (n) - r0_ < GCK_RUN ? (n) : r0_ + GCK_RUN;                 \
            __m512d a0 = _mm512_setzero_pd(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, \
                    a6 = a0, a7 = a0;                                                     \
            __m512i bad_ = _mm512_setzero_si512();                                        \
            (void)bad_;                                                                   \
            size_t g_ = r0_;                                                              \
            if (!slow_) {                                                                 \
                for (; g_ + GCK_LANES <= r1_; g_ += GCK_LANES) {                          \
                    FAST                                                                  \
                }                                                                         \
                slow_ = (CHECKED) && _mm512_test_epi32_mask(bad_, bad_) != 0;             \
                if (slow_)                                                                \
                    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = _mm512_setzero_pd();          \
            }                                                                             \
            if (slow_)                                                                    \
                for (g_ = r0_; g_ + GCK_LANES <= r1_; g_ += GCK_LANES) {                  \
                    GCK_ZSTRIPE(ACC, g_)                                                  \
                }                                                                         \
            if (g_ < r1_) {                                                               \
                GCK_Z(ACC, 0, g_ + 0, gck_mask8(g_ + 0, r1_));                            \
                GCK_Z(ACC, 1, g_ + 8, gck_mask8(g_ + 8, r1_));                            \
                GCK_Z(ACC, 2, g_ + 16, gck_mask8(g_ + 16, r1_));                          \
                GCK_Z(ACC, 3, g_ + 24, gck_mask8(g_ + 24, r1_));                          \
                GCK_Z(ACC, 4, g_ + 32, gck_mask8(g_ + 32, r1_));                          \
                GCK_Z(ACC, 5, g_ + 40, gck_mask8(g_ + 40, r1_));                          \
                GCK_Z(ACC, 6, g_ + 48, gck_mask8(g_ + 48, r1_));                          \
                GCK_Z(ACC, 7, g_ + 56, gck_mask8(g_ + 56, r1_));                          \
            }                                                                             \
            o_[0] = _mm512_add_pd(o_[0], a0);                                             \
            o_[1] = _mm512_add_pd(o_[1], a1);                                             \
            o_[2] = _mm512_add_pd(o_[2], a2);                                             \
            o_[3] = _mm512_add_pd(o_[3], a3);                                             \
            o_[4] = _mm512_add_pd(o_[4], a4);                                             \
            o_[5] = _mm512_add_pd(o_[5], a5);                                             \
            o_[6] = _mm512_add_pd(o_[6], a6);                                             \
            o_[7] = _mm512_add_pd(o_[7], a7);                                             \
        }                                                                                 \
        FIX                                                                               \
        return gck_fold8(o_);                                                             \
    } while (0)

/* The same reduction at 256-bit width for f32 inputs (ymm_reduce.h): on
 * Zen 4 widening 4 floats into a ymm is twice as fast as 8 into a zmm
 * (measured: 87 vs 46 GB/s for sumsq_f32 in L1). Those kernels define
 * A(a, g, m) with m the 4-lane mask. */
#define A_FULL(s_, g) A(s_, g, (__mmask8)0xF)
#define A_TAIL(s_, g, r1) A(s_, g, (__mmask8)(gck_mask8(g, r1) & 0xF))

/* 4 floats widened to f64 (exact); lanes outside m are +0.0 */
static inline __m256d gck_ld32w4(const float *p, __mmask8 m)
{
    return _mm256_cvtps_pd(m == 0xF ? _mm_loadu_ps(p) : _mm_maskz_loadu_ps(m, p));
}

/* ---- loads (masked lanes read nothing and are +0.0) ---- */
static inline __m512d gck_ld64(const double *p, __mmask8 m)
{
    return m == 0xFF ? _mm512_loadu_pd(p) : _mm512_maskz_loadu_pd(m, p);
}

static inline __m512d gck_ld32w(const float *p, __mmask8 m) /* 8 floats widened to f64 (exact) */
{
    return _mm512_cvtps_pd(m == 0xFF ? _mm256_loadu_ps(p) : _mm256_maskz_loadu_ps(m, p));
}

static inline __m512d gck_sq(__m512d v, __mmask8 m)
{
    return m == 0xFF ? _mm512_mul_pd(v, v) : _mm512_maskz_mul_pd(m, v, v);
}

/* ---- reductions ---- */
static double gck_sumsq_f64_block_avx512(const double *x, size_t n)
{
#define A(s_, g, m) _mm512_add_pd(s_, gck_sq(gck_ld64(x + (g), m), m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

/* 1 if the sums below widen 8 elements per zmm (gck_cpu_zmm_widen): on
 * Zen 5, 64 Ki elements in L2, sumsq_f32 1.17x, bf16 and f16 2x the ymm
 * shape's rate (kernels.h). Both shapes give the same bits. */
static inline int gck_zmm_widen(void)
{
    return GCK_TUNE(zmm_widen);
}

/* The zmm shape's f32 sumsq and asum prefetch each stripe's 4 lines into L1
 * 8 KiB ahead and nothing into L2: on Zen 5 at 16 Mi elements 1.20-1.22 ms
 * against 1.77-1.86 with the ymm shape's 2 KiB + 4 KiB (1.55-1.61 with none,
 * 1.28 at 16 KiB); at 64 Mi all alike. dist2 keeps the pair's prefetch
 * (8 KiB ahead on both inputs: 16 Mi 4.06 ms against 3.21-3.32). */
static inline void gck_zmm_prefetch32(const float *x)
{
    gck_prefetch_l1(x, 4, 8192);
}

static double gck_sumsq_f32_block_avx512(const float *x, size_t n)
{
    if (gck_zmm_widen()) {
#define A(s_, g, m) _mm512_fmadd_pd(gck_ld32w(x + (g), m), gck_ld32w(x + (g), m), s_)
        GCK_AVX512_REDUCE_PF(n, A, gck_zmm_prefetch32(x + g_););
#undef A
    }
#define A(s_, g, m) _mm256_fmadd_pd(gck_ld32w4(x + (g), m), gck_ld32w4(x + (g), m), s_)
    GCK_YMM_REDUCE32(n, x);
#undef A
}

static double gck_sumsq_scaled_f64_block_avx512(const double *x, double s, size_t n)
{
    const __m512d vs = _mm512_set1_pd(s);
#define A(s_, g, m) _mm512_add_pd(s_, gck_sq(_mm512_mul_pd(gck_ld64(x + (g), m), vs), m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

static double gck_dist2_f64_block_avx512(const double *a, const double *b, size_t n)
{
#define A(s_, g, m) GCK_ZMM_ADDK(s_, gck_sq(gck_zmm_sub_on_fma(gck_ld64(a + (g), m), gck_ld64(b + (g), m)), m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

static inline __m256d gck_sq4(__m256d v)
{
    return _mm256_mul_pd(v, v);
}

static double gck_dist2_f32_block_avx512(const float *a, const float *b, size_t n)
{
    /* masked lanes load +0 in both: 0 - 0 = +0, squared +0 */
    if (gck_zmm_widen()) {
#define A(s_, g, m) GCK_ZMM_ADDK(s_, gck_sq(gck_zmm_sub_on_fma(gck_ld32w(a + (g), m), gck_ld32w(b + (g), m)), m))
        GCK_AVX512_REDUCE_PF(n, A, gck_prefetch_pair32(a + g_, b + g_););
#undef A
    }
#define A(s_, g, m) GCK_YMM_ADDK(s_, gck_sq4(gck_ymm_sub_on_fma(gck_ld32w4(a + (g), m), gck_ld32w4(b + (g), m))))
    GCK_YMM_REDUCE32_2(n, a, b);
#undef A
}

static double gck_asum_f64_block_avx512(const double *x, size_t n)
{
#define A(s_, g, m) _mm512_add_pd(s_, _mm512_abs_pd(gck_ld64(x + (g), m)))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

static double gck_asum_f32_block_avx512(const float *x, size_t n)
{
    if (gck_zmm_widen()) {
#define A(s_, g, m) _mm512_add_pd(s_, _mm512_abs_pd(gck_ld32w(x + (g), m)))
        GCK_AVX512_REDUCE_PF(n, A, gck_zmm_prefetch32(x + g_););
#undef A
    }
#define A(s_, g, m) _mm256_add_pd(s_, _mm256_andnot_pd(_mm256_set1_pd(-0.0), gck_ld32w4(x + (g), m)))
    GCK_YMM_REDUCE32(n, x);
#undef A
}

/* SLEEF's FMA pow: bit-identical to the reference's Sleef_powd1_u10purecfma. */
static inline __m512d gck_pow_term(__m512d v, __m512d vs, __m512d vp, __mmask8 m)
{
    return _mm512_maskz_mov_pd(m, Sleef_powd8_u10avx512f(_mm512_mul_pd(_mm512_abs_pd(v), vs), vp));
}

static double gck_powsum_f64_block_avx512(const double *x, double p, double s, size_t n)
{
    const __m512d vs = _mm512_set1_pd(s), vp = _mm512_set1_pd(p);
#define A(s_, g, m) _mm512_add_pd(s_, gck_pow_term(gck_ld64(x + (g), m), vs, vp, m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

static double gck_powsum_f32_block_avx512(const float *x, double p, double s, size_t n)
{
    const __m512d vs = _mm512_set1_pd(s), vp = _mm512_set1_pd(p);
#define A(s_, g, m) _mm512_add_pd(s_, gck_pow_term(gck_ld32w(x + (g), m), vs, vp, m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

/* ---- the reductions over bf16 and f16 (kernels_internal.h) -------------------
 * The f32 kernels' shapes with each element widened exactly to its f32 value
 * first (ops_avx512.h): 4 elements per ymm for sumsq, dist2 and asum, 8 per
 * zmm for powsum. Masked lanes load 0 bits, which widen to +0.0. */
GCK_ALWAYS_INLINE __m128i gck_ld16(const uint16_t *p, __mmask8 m, __mmask8 full)
{
    return m == full ? (full == 0xF ? _mm_loadl_epi64((const __m128i *)(const void *)p)
                                    : _mm_loadu_si128((const __m128i *)(const void *)p))
                     : _mm_maskz_loadu_epi16(m, p);
}

/* 4 elements to f64 */
GCK_ALWAYS_INLINE __m256d gck_ld16w4(gck_fl_elem e, const uint16_t *p, __mmask8 m)
{
    const __m128i v = gck_ld16(p, m, 0xF);
    const __m128 f = e == GCK_FL_BF16 ? _mm_castsi128_ps(_mm_slli_epi32(_mm_cvtepu16_epi32(v), 16)) : _mm_cvtph_ps(v);
    return _mm256_cvtps_pd(f);
}

/* 8 elements to f64 */
GCK_ALWAYS_INLINE __m512d gck_ld16w8(gck_fl_elem e, const uint16_t *p, __mmask8 m)
{
    const __m128i v = gck_ld16(p, m, 0xFF);
    return e == GCK_FL_BF16 ? gck_w64_cvt_bf16_f64(v) : gck_w64_cvt_f16_f64(v);
}

/* The high 8 floats of v. */
GCK_ALWAYS_INLINE __m256 gck_hi8(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

/* 16 elements widened exactly to their f32 values in one zmm. */
GCK_ALWAYS_INLINE __m512 gck_ld16w16(gck_fl_elem e, const uint16_t *p)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return e == GCK_FL_BF16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(v), 16))
                            : _mm512_cvtph_ps(v);
}

/* acc + the squared differences of 8 widened elements v and w (dist2);
 * every other run register adds on the FMA pipes (GCK_ZMM_ADDK). */
GCK_ALWAYS_INLINE __m512d gck_dist2_8(int k_, __m512d acc, __m512d v, __m512d w)
{
    const __m512d d = gck_zmm_sub_on_fma(v, w);
    return GCK_ZMM_ADDK(acc, _mm512_mul_pd(d, d));
}

/* dist2 in the zmm shape (run register k holds lanes 8k..8k+7, as
 * GCK_AVX512_REDUCE): a pair of run registers (k_ even, k_ + 1) wholly below
 * the run's end takes one load of 16 elements per input, widened to f32 in
 * one zmm, whose halves widen into the two registers; a partial stripe
 * widens 8 at a time under its mask. On an Intel core this ran 1.4x the
 * elements per second of 4 per load in cache, and at 64 Mi faster than the
 * ymm shape that sumsq and asum take (each vcvtps2pd takes the shuffle port
 * once per 8 elements instead of once per 4). */
#define GCK_FL16_DIST2_ACC(s_, g, m)                                                                   \
    ((k_ & 1) == 0 && (g) + 16 <= r1_                                                                  \
         ? (gck_fl16_prefetch(k_, x + (g), y + (g)), wx_ = gck_ld16w16(e, x + (g)),                    \
            wy_ = gck_ld16w16(e, y + (g)),                                                             \
            gck_dist2_8(k_, s_, _mm512_cvtps_pd(_mm512_castps512_ps256(wx_)),                          \
                        _mm512_cvtps_pd(_mm512_castps512_ps256(wy_))))                                 \
     : (k_ & 1) == 1 && (g) + 8 <= r1_                                                                 \
         ? gck_dist2_8(k_, s_, _mm512_cvtps_pd(gck_hi8(wx_)), _mm512_cvtps_pd(gck_hi8(wy_)))           \
         : gck_dist2_8(k_, s_, gck_ld16w8(e, x + (g), m), gck_ld16w8(e, y + (g), m)))

/* Once per stripe (64 elements, 128 bytes per input). */
GCK_ALWAYS_INLINE void gck_fl16_prefetch(int k_, const uint16_t *x, const uint16_t *y)
{
    if (k_ == 0)
        gck_prefetch_pair16(x, y);
}

/* Where gck_zmm_widen is 1, the 2-byte sums (and dist2, always in the zmm
 * shape) prefetch each stripe's 2 lines per input into L1 16 KiB ahead and
 * nothing into L2: on Zen 5 over 64 Mi elements, sumsq of bf16 read at
 * 0.93-0.97 and of f16 at 0.91-0.93 of ref_read_16 so, 0.78-0.88 with the
 * Intel-tuned 2 KiB + 8 KiB, 0.78-0.83 with 4 KiB, 12-32 KiB alike; dist2
 * 0.90-0.98 of ref_read2_16 against 0.74-0.84 with 2 KiB + 2.5 KiB. */
#define GCK_ZMM_PREFETCH16 16384
GCK_ALWAYS_INLINE void gck_zmm_prefetch16(const uint16_t *x)
{
    gck_prefetch_l1(x, 2, GCK_ZMM_PREFETCH16);
}
GCK_ALWAYS_INLINE void gck_zmm_prefetch_pair16(const uint16_t *x, const uint16_t *y)
{
    gck_zmm_prefetch16(x);
    gck_zmm_prefetch16(y);
}

/* dist2's fast path, 16 elements at g (run registers lo, hi): the
 * difference in f32, d = wx - wy, its square added by one FMA. Where d is
 * exact, the widened f64 difference equals it, its square (at most 48
 * bits) is exact in f64, and fma(d, d, acc) rounds once, as acc + d * d
 * does. Exactness is checked bit for bit: d + wy == wx and wx - d == wy.
 * An inexact d fails one of them (Fast2Sum: for |wx| >= |wy|, wx - d is
 * exact, for |wy| > |wx|, d + wy is), as do Inf, NaN and a flushed d;
 * bad_ collects the differing bits (GCK_AVX512_WALK then sums the run
 * again widened). It takes half the f32 -> f64 conversions, the widened
 * kernel's limit: at 64 Ki elements (in L2, the Intel VM) 20.8 -> 25.7
 * GB/s, and with bf16 widened by one word permute (1 operation instead of
 * a zero-extension and a shift) 27-28. The upper half of d is converted
 * from a copy on the stack (dbuf_, an asm operand so that the compiler
 * cannot turn it back into a vextractf32x8): a store and a load where the
 * extract took the shuffle port that the permute and the conversions
 * share; f16 in L2 27 -> 28.5 GB/s, out of cache about 2 % faster. Where
 * the zmm shape is chosen (Zen 5), bf16 takes the extract (X 1 in
 * GCK_D16_FAST): 3-5 % slower in L2 there, but over 64 Mi elements 0.90-1.07
 * of ref_read2_16 against 0.89-0.97 with the copy (11 alternating rounds);
 * f16 kept the copy (0.89-0.95 either way, the extract slower in L2). */
GCK_ALWAYS_INLINE __m512 gck_ld16w16_dist2(gck_fl_elem e, const uint16_t *p)
{
    if (e != GCK_FL_BF16)
        return gck_ld16w16(e, p);
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    const __m512i idx = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, /* word 2i + 1 <- i */
                                         7, 0, 6, 0, 5, 0, 4, 0, 3, 0, 2, 0, 1, 0, 0, 0);
    return _mm512_castsi512_ps(
        _mm512_maskz_permutexvar_epi16((__mmask32)0xAAAAAAAAu, idx, _mm512_castsi256_si512(v)));
}

#define GCK_D16_FAST(j, lo, hi, X) GCK_D16_FAST_C(j, lo, hi, X, 1)
/* C 0: the caller checks exactness otherwise (gck_f16_near in GCK_F16_STRIPE). */
#define GCK_D16_FAST_C(j, lo, hi, X, C)                                                            \
    {                                                                                              \
        const __m512 wx = gck_ld16w16_dist2(e, x + g_ + 16 * (j));                                 \
        const __m512 wy = gck_ld16w16_dist2(e, y + g_ + 16 * (j));                                 \
        const __m512 d = _mm512_sub_ps(wx, wy);                                                    \
        if (C) {                                                                                   \
            /* 0xF6: bad_ | (b ^ c) */                                                             \
            bad_ = _mm512_ternarylogic_epi32(bad_, _mm512_castps_si512(_mm512_add_ps(d, wy)),      \
                                             _mm512_castps_si512(wx), 0xF6);                       \
            bad_ = _mm512_ternarylogic_epi32(bad_, _mm512_castps_si512(_mm512_sub_ps(wx, d)),      \
                                             _mm512_castps_si512(wy), 0xF6);                       \
        }                                                                                          \
        __m512d dh;                                                                                \
        if (X) {                                                                                   \
            dh = _mm512_cvtps_pd(_mm512_extractf32x8_ps(d, 1));                                    \
        } else {                                                                                   \
            _mm512_store_ps(dbuf_, d);                                                             \
            __asm__("vcvtps2pd %1, %0" : "=v"(dh) : "m"(*(const __m256 *)(const void *)(dbuf_ + 8))); \
        }                                                                                          \
        const __m512d dl = _mm512_cvtps_pd(_mm512_castps512_ps256(d));                             \
        a##lo = _mm512_fmadd_pd(dl, dl, a##lo);                                                    \
        a##hi = _mm512_fmadd_pd(dh, dh, a##hi);                                                    \
    }
/* X (a constant): the upper half of d by vextractf32x8, else through dbuf_. */
#define GCK_D16_STRIPE(PF, X)                                                  \
    PF                                                                         \
    GCK_D16_FAST(0, 0, 1, X) GCK_D16_FAST(1, 2, 3, X) GCK_D16_FAST(2, 4, 5, X) GCK_D16_FAST(3, 6, 7, X)

/* f16 in the zmm shape: exactness of d from the 16-bit words themselves,
 * 32 elements per instruction, instead of two f32 operations and two
 * ternlogs per 16, which bound the loop on Zen 5 (without them it ran
 * 1.3-1.4x as fast; 3 rounds alternating with the f32 check: 64 Ki elements
 * in L2 11.6-12.1 -> 11.9-13.1 G elements/s, 64 Mi 0.90-0.94 -> 0.96-0.97
 * of ref_read2_16).
 * With a = the word without its sign (monotone in |value|), x and y finite
 * and |ax - ay| <= 0x3400, their exponent fields differ by at most 13 (14
 * would make |ax - ay| >= 14 * 1024 - 1023). x - y is then a multiple of
 * the smaller one's ulp, 2^(ey - 25), below 2^(ex - 14) (|x| is at most
 * 2^(ex - 14) less its ulp, and |y| < 2^(ey - 14) is smaller than that
 * ulp): at most ex - ey + 11 <= 24 bits, so d is exact (a field of 0, zero
 * or denormal, counts as 1 and errs on the safe side). A zero
 * (min(ax, ay) == 0) leaves d exact whatever the other.
 * Inf and NaN (a >= 0x7C00) go to the widened walk, as the f32 check sent
 * them. This passes fewer pairs than the f32 check (exponents 14 or more
 * apart whose difference happens to fit), never one it would fail. */
GCK_ALWAYS_INLINE __m512i gck_f16_near(__m512i bad, const uint16_t *x, const uint16_t *y)
{
    const __m512i m = _mm512_set1_epi16(0x7FFF);
    const __m512i ax = _mm512_and_si512(_mm512_loadu_si512(x), m), ay = _mm512_and_si512(_mm512_loadu_si512(y), m);
    const __m512i far = _mm512_subs_epu16(_mm512_abs_epi16(_mm512_sub_epi16(ax, ay)), _mm512_set1_epi16(0x3400));
    const __m512i spec = _mm512_subs_epu16(_mm512_max_epu16(ax, ay), _mm512_set1_epi16(0x7BFF));
    /* 0xFE: a | b | c */
    return _mm512_ternarylogic_epi32(bad, _mm512_min_epu16(far, _mm512_min_epu16(ax, ay)), spec, 0xFE);
}
#define GCK_F16_STRIPE(PF)                                                     \
    PF                                                                         \
    bad_ = gck_f16_near(bad_, x + g_, y + g_);                                 \
    bad_ = gck_f16_near(bad_, x + g_ + 32, y + g_ + 32);                       \
    GCK_D16_FAST_C(0, 0, 1, 0, 0) GCK_D16_FAST_C(1, 2, 3, 0, 0)               \
    GCK_D16_FAST_C(2, 4, 5, 0, 0) GCK_D16_FAST_C(3, 6, 7, 0, 0)

/* acc + the sumsq or asum terms of 8 widened elements v. */
GCK_ALWAYS_INLINE __m512d gck_fl_term8(gck_fl_term t, __m512d acc, __m512d v)
{
    return t == GCK_FL_SUMSQ ? _mm512_fmadd_pd(v, v, acc) : _mm512_add_pd(acc, _mm512_abs_pd(v));
}

/* bf16 sums in the zmm shape, 16 elements per load: interleaving them with
 * zero words within each 128-bit half gives their f32 values in two ymm
 * (elements 0-3 | 8-11 and 4-7 | 12-15), each widened into one run
 * register, where widening in element order takes a zero-extension and a
 * shift per 8 (Zen 5, 64 Ki elements in L2: 1.2x the rate of a word
 * permute in element order, 1.5x the extension and shift). Run registers
 * 2q and 2q + 1 thus hold lanes 16q + {0-3, 8-11} and 16q + {4-7, 12-15};
 * each lane still takes the same elements in the same order, and
 * GCK_BF16U_FIX puts the lanes back in order before the canonical fold. */
typedef struct gck_bf16u {
    __m512d lo, hi;
} gck_bf16u;

/* The 16 elements at p widened, lanes from m (bit i: element i) or all. */
GCK_ALWAYS_INLINE gck_bf16u gck_bf16u_load(const uint16_t *p, __mmask16 m, int full)
{
    const __m256i v = full ? _mm256_loadu_si256((const __m256i *)(const void *)p) : _mm256_maskz_loadu_epi16(m, p);
    const __m256i z = _mm256_setzero_si256();
    return (gck_bf16u){ _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_unpacklo_epi16(z, v))),
                        _mm512_cvtps_pd(_mm256_castsi256_ps(_mm256_unpackhi_epi16(z, v))) };
}

/* The elements of [g, g + 16) below r1, one bit each. */
GCK_ALWAYS_INLINE __mmask16 gck_mask16(size_t g, size_t r1)
{
    return g >= r1 ? 0 : (r1 - g >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (r1 - g)) - 1u));
}

/* The partial stripe: the even register of a pair loads and widens both. */
#define GCK_BF16U_ACC(s_, g, m)                                                                      \
    ((k_ & 1) == 0 ? (u_ = gck_bf16u_load(x + (g), gck_mask16((g), r1_), 0), gck_fl_term8(t, s_, u_.lo)) \
                   : gck_fl_term8(t, s_, u_.hi))
#define GCK_BF16U_PAIR(q, kl, kh)                                              \
    {                                                                          \
        const gck_bf16u w_ = gck_bf16u_load(x + g_ + 16 * (q), 0, 1);          \
        a##kl = gck_fl_term8(t, a##kl, w_.lo);                                 \
        a##kh = gck_fl_term8(t, a##kh, w_.hi);                                 \
    }
#define GCK_BF16U_STRIPE                                                       \
    gck_zmm_prefetch16(x + g_);                                                \
    GCK_BF16U_PAIR(0, 0, 1) GCK_BF16U_PAIR(1, 2, 3) GCK_BF16U_PAIR(2, 4, 5) GCK_BF16U_PAIR(3, 6, 7)
/* 128-bit quarters 0, 1 of both registers are lanes 16q + 0-7, 2, 3 are 16q + 8-15. */
#define GCK_BF16U_FIX                                                          \
    for (int q_ = 0; q_ < 4; q_++) {                                          \
        const __m512d l_ = o_[2 * q_], h_ = o_[2 * q_ + 1];                    \
        o_[2 * q_] = _mm512_shuffle_f64x2(l_, h_, 0x44);                       \
        o_[2 * q_ + 1] = _mm512_shuffle_f64x2(l_, h_, 0xEE);                   \
    }

GCK_ALWAYS_INLINE double gck_fl16_block(gck_fl_term t, gck_fl_elem e, const void *a, const void *b, double s,
                                        double p, size_t n)
{
    const uint16_t *x = a, *y = b; /* b: dist2's second input, else NULL and never read */
    if (t == GCK_FL_POWSUM) {
        const __m512d vs = _mm512_set1_pd(s), vp = _mm512_set1_pd(p);
#define A(s_, g, m) _mm512_add_pd(s_, gck_pow_term(gck_ld16w8(e, x + (g), m), vs, vp, m))
        GCK_AVX512_REDUCE(n, A);
#undef A
    }
    if (t != GCK_FL_DIST2 && gck_zmm_widen()) {
        if (e == GCK_FL_BF16) {
            gck_bf16u u_ = { _mm512_setzero_pd(), _mm512_setzero_pd() };
            GCK_AVX512_WALK_FIX(n, GCK_BF16U_ACC, GCK_BF16U_STRIPE, 0, GCK_BF16U_FIX);
        }
#define A(s_, g, m) gck_fl_term8(t, s_, gck_ld16w8(e, x + (g), m))
        GCK_AVX512_REDUCE_PF(n, A, gck_zmm_prefetch16(x + g_););
#undef A
    }
    if (t != GCK_FL_DIST2) {
        /* sumsq and asum in the ymm shape (ymm_reduce.h, as AVX2 but with
         * AVX-512's encodings) where gck_zmm_widen is 0: on an Intel core
         * at 64 Mi 1.15-1.2x the zmm shape's speed (bf16 0.97, f16 1.0 of
         * ref_read_16 against 0.81-0.89; the zmm shape of 8 elements per
         * load with the 2 + 8 KiB prefetch), at 64 Ki 0.85-0.95x of it,
         * still above the widen-only loop; dist2 ran faster in the zmm
         * shape both ways. */
#define A(s_, g, m) gck_fl_terms_w(t, k_, s_, gck_ld16w4(e, x + (g), m), _mm256_setzero_pd())
        GCK_YMM_REDUCE16(n, x, y);
#undef A
    }
    __m512 wx_ = _mm512_setzero_ps(), wy_ = wx_; /* dist2, widened */
    float dbuf_[16] __attribute__((aligned(64)));
    if (gck_zmm_widen() && e == GCK_FL_F16)
        GCK_AVX512_WALK(n, GCK_FL16_DIST2_ACC, GCK_F16_STRIPE(gck_zmm_prefetch_pair16(x + g_, y + g_);), 1);
    if (gck_zmm_widen())
        GCK_AVX512_WALK(n, GCK_FL16_DIST2_ACC,
                        GCK_D16_STRIPE(gck_zmm_prefetch_pair16(x + g_, y + g_);, e == GCK_FL_BF16), 1);
    GCK_AVX512_WALK(n, GCK_FL16_DIST2_ACC, GCK_D16_STRIPE(gck_prefetch_pair16(x + g_, y + g_);, 0), 1);
}
#define GCK_FLOAT_LIKE_BLOCK gck_fl16_block
GCK_FL_SLOTS(bf16, GCK_FL_BF16)
GCK_FL_SLOTS(f16, GCK_FL_F16)

/* ---- fused update + sum of squares: store the new value, square it ---- */
/* dst may be the source: each group is loaded before it is stored. */
static inline __m512d gck_store_sq_f64(double *dst, __m512d v, __mmask8 m)
{
    if (m == 0xFF)
        _mm512_storeu_pd(dst, v);
    else
        _mm512_mask_storeu_pd(dst, m, v);
    return gck_sq(v, m);
}

static double gck_div_sumsq_f64_block_avx512(double *dst, const double *x, double d, size_t n)
{
    const __m512d vd = _mm512_set1_pd(d);
#define A(s_, g, m) _mm512_add_pd(s_, gck_store_sq_f64(dst + (g), _mm512_div_pd(gck_ld64(x + (g), m), vd), m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

/* The f32 fused kernels in the zmm shape (8 lanes per run register, the
 * same lanes as the ymm shape): full groups compute 16 values at once (run
 * register k_ even) and widen each half of 8 stored values into its run
 * register; a partial stripe computes 8 at a time under its mask. One zmm
 * operation and store per 16 values instead of four xmm ones, which on
 * Zen 4 is the faster form in cache and from DRAM. */
GCK_ALWAYS_INLINE __m512d gck_sq_add8(__m512d acc, __m256 v)
{
    const __m512d w = _mm512_cvtps_pd(v);
    return _mm512_fmadd_pd(w, w, acc); /* the square of a widened float is exact: one rounding, as the reference */
}

/* Stores v (8 values) under m and adds their squares; lanes outside m add
 * +0 (0/0 would be NaN). */
GCK_ALWAYS_INLINE __m512d gck_store_sq8(float *dst, __m256 v, __mmask8 m, __m512d acc)
{
    _mm256_mask_storeu_ps(dst, m, v);
    return gck_sq_add8(acc, _mm256_maskz_mov_ps(m, v));
}

/* Group pairs (k_ even, k_ + 1) that lie wholly below the run's end r1_
 * take the 16-wide path: the even one computes and stores both halves. */
#define GCK_F32_FUSED(s_, g, m, OP16, OP8)                                                                  \
    ((k_ & 1) == 0 && (g) + 16 <= r1_                                                                      \
         ? (v16_ = OP16(GCK_F32_SRC16(g)), _mm512_storeu_ps(dst + (g), v16_),                               \
            gck_sq_add8(s_, _mm512_castps512_ps256(v16_)))                                                  \
     : (k_ & 1) == 1 && (g) + 8 <= r1_ ? gck_sq_add8(s_, gck_hi8(v16_))                                    \
                                       : gck_store_sq8(dst + (g), OP8(GCK_F32_SRC8(g, m)), m, s_))
/* The values the op applies to: x, or for the axpy forms dst + w * x as
 * axpy_f32 rounds it (product, then sum; masked lanes 0 + w * 0). */
#define GCK_F32_X16(g) _mm512_loadu_ps(x + (g))
#define GCK_F32_X8(g, m) _mm256_maskz_loadu_ps(m, x + (g))
#define GCK_F32_AXPY16(g) _mm512_add_ps(_mm512_loadu_ps(dst + (g)), _mm512_mul_ps(w16_, _mm512_loadu_ps(x + (g))))
#define GCK_F32_AXPY8(g, m)                                                                               \
    _mm256_add_ps(_mm256_maskz_loadu_ps(m, dst + (g)), _mm256_mul_ps(w8_, _mm256_maskz_loadu_ps(m, x + (g))))

/* The two f32 fused kernels: dst = x / f or x * f, then the sum of squares. */
#define GCK_F32_DIV16(v) _mm512_div_ps(v, f16_)
#define GCK_F32_DIV8(v) _mm256_div_ps(v, f8_)
#define GCK_F32_MUL16(v) _mm512_mul_ps(v, f16_)
#define GCK_F32_MUL8(v) _mm256_mul_ps(v, f8_)
#define GCK_F32_ACC_DIV(s_, g, m) GCK_F32_FUSED(s_, g, m, GCK_F32_DIV16, GCK_F32_DIV8)
#define GCK_F32_ACC_MUL(s_, g, m) GCK_F32_FUSED(s_, g, m, GCK_F32_MUL16, GCK_F32_MUL8)
#define GCK_DEFINE_F32_FUSED(name, ACC)                                        \
    static double name(float *dst, const float *x, float f, size_t n)          \
    {                                                                          \
        const __m512 f16_ = _mm512_set1_ps(f);                                 \
        const __m256 f8_ = _mm256_set1_ps(f);                                  \
        __m512 v16_ = _mm512_setzero_ps();                                     \
        GCK_AVX512_REDUCE_PF(n, ACC, gck_prefetch_stripe32(x + g_););          \
    }
#define GCK_DEFINE_F32_AXPY_FUSED(name, ACC)                                   \
    static double name(float *dst, const float *x, float w, float f, size_t n) \
    {                                                                          \
        const __m512 f16_ = _mm512_set1_ps(f), w16_ = _mm512_set1_ps(w);       \
        const __m256 f8_ = _mm256_set1_ps(f), w8_ = _mm256_set1_ps(w);         \
        __m512 v16_ = _mm512_setzero_ps();                                     \
        GCK_AVX512_REDUCE_PF(n, ACC, gck_prefetch_pair32(dst + g_, x + g_););  \
    }

#define GCK_F32_SRC16 GCK_F32_X16
#define GCK_F32_SRC8 GCK_F32_X8
GCK_DEFINE_F32_FUSED(gck_div_sumsq_f32_block_avx512, GCK_F32_ACC_DIV)
GCK_DEFINE_F32_FUSED(gck_scale_sumsq_f32_block_avx512, GCK_F32_ACC_MUL)
#undef GCK_F32_SRC16
#undef GCK_F32_SRC8
#define GCK_F32_SRC16 GCK_F32_AXPY16
#define GCK_F32_SRC8 GCK_F32_AXPY8
GCK_DEFINE_F32_AXPY_FUSED(gck_axpy_div_sumsq_f32_block_avx512, GCK_F32_ACC_DIV)
GCK_DEFINE_F32_AXPY_FUSED(gck_axpy_scale_sumsq_f32_block_avx512, GCK_F32_ACC_MUL)
#undef GCK_F32_SRC16
#undef GCK_F32_SRC8

static double gck_scale_sumsq_f64_block_avx512(double *dst, const double *x, double s, size_t n)
{
    const __m512d vs = _mm512_set1_pd(s);
#define A(s_, g, m) _mm512_add_pd(s_, gck_store_sq_f64(dst + (g), _mm512_mul_pd(gck_ld64(x + (g), m), vs), m))
    GCK_AVX512_REDUCE(n, A);
#undef A
}

/* ---- elementwise and amax: the template over ops_avx512.h ---- */
#include "elementwise.h"

/* ---- byte planes ------------------------------------------------------------
 * The AVX2 scheme (avx2.c) at 64 elements per block, with AVX512BW only
 * (vpermb would need VBMI, which the avx512 ISA does not require): a block is
 * esz loads of 64 bytes; group G (u = 16/esz elements) of the block sits in
 * lane G % 4 of register G / 4, and must move to lane G / esz of register
 * G % esz, so that each register holds one u-element group of each 16-element
 * quarter: vshufi64x2 (a 4x4 transpose of 128-bit lanes for esz 4, two of
 * them over the even and the odd registers for esz 8).
 * Then vpshufb sorts each group's bytes by plane and a transpose of u-byte
 * units leaves plane k in register k. Heads and tails are one more block
 * under byte masks (masked loads do not fault past the end). */
/* vpshufb control, in each lane (bytes_simd.h). */
GCK_ALWAYS_INLINE __m512i gck_plane_ctl(size_t esz, int inv)
{
    uint8_t c[16];
    gck_plane_ctl_bytes(c, esz, inv);
    return _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)(const void *)c));
}

GCK_DEFINE_TRANSPOSE_UNITS(gck_transpose_units512, __m512i, _mm512)
/* avx2.c's gck_planes_rotl / _rotr at 512 bits, each mask-and-merge one
 * vpternlogd (select by mask: 0xD8 takes b where c is set, 0xE4 a): the
 * plain and/or form left the in-cache unshuffle a third slower than the
 * unrotated one. */
GCK_ALWAYS_INLINE void gck_planes_rotl512(__m512i *x, size_t esz)
{
    const __m512i one = _mm512_set1_epi8(1);
    __m512i hi[8];
    for (size_t k = 0; k < esz; k++)
        hi[k] = _mm512_srli_epi16(x[k], 7);
    for (size_t k = 0; k < esz; k++)
        x[k] = _mm512_ternarylogic_epi32(_mm512_add_epi8(x[k], x[k]), hi[(k + esz - 1) % esz], one, 0xD8);
}

GCK_ALWAYS_INLINE void gck_planes_rotr512(__m512i *x, size_t esz)
{
    const __m512i low7 = _mm512_set1_epi8(0x7f);
    __m512i lo[8];
    for (size_t k = 0; k < esz; k++)
        lo[k] = _mm512_slli_epi16(x[k], 7);
    for (size_t k = 0; k < esz; k++)
        x[k] = _mm512_ternarylogic_epi32(_mm512_srli_epi16(x[k], 1), lo[(k + 1) % esz], low7, 0xE4);
}

GCK_ALWAYS_INLINE void gck_transpose_lanes4(__m512i a, __m512i b, __m512i c, __m512i d, __m512i *o)
{
    const __m512i t0 = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(1, 0, 1, 0)); /* a0 a1 b0 b1 */
    const __m512i t1 = _mm512_shuffle_i64x2(a, b, _MM_SHUFFLE(3, 2, 3, 2)); /* a2 a3 b2 b3 */
    const __m512i t2 = _mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i t3 = _mm512_shuffle_i64x2(c, d, _MM_SHUFFLE(3, 2, 3, 2));
    o[0] = _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)); /* a0 b0 c0 d0 */
    o[1] = _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(3, 1, 3, 1));
    o[2] = _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(2, 0, 2, 0));
    o[3] = _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(3, 1, 3, 1));
}

/* Loaded registers x -> group registers g (g[m] lane L = group esz*L + m). */
GCK_ALWAYS_INLINE void gck_to_groups(const __m512i *x, __m512i *g, size_t esz)
{
    if (esz == 2) {
        g[0] = _mm512_shuffle_i64x2(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0));
        g[1] = _mm512_shuffle_i64x2(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1));
    } else if (esz == 4) {
        gck_transpose_lanes4(x[0], x[1], x[2], x[3], g);
    } else if (esz == 8) { /* groups 8L + 0..3 sit in x[2L], 8L + 4..7 in x[2L + 1] */
        gck_transpose_lanes4(x[0], x[2], x[4], x[6], g);
        gck_transpose_lanes4(x[1], x[3], x[5], x[7], g + 4);
    }
}

/* The inverse of gck_to_groups. */
GCK_ALWAYS_INLINE void gck_from_groups(const __m512i *g, __m512i *x, size_t esz)
{
    if (esz == 2) {
        x[0] = _mm512_permutex2var_epi64(g[0], _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11), g[1]);
        x[1] = _mm512_permutex2var_epi64(g[0], _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15), g[1]);
    } else if (esz == 4) {
        gck_transpose_lanes4(g[0], g[1], g[2], g[3], x);
    } else if (esz == 8) {
        __m512i t[8];
        gck_transpose_lanes4(g[0], g[1], g[2], g[3], t);
        gck_transpose_lanes4(g[4], g[5], g[6], g[7], t + 4);
        for (int j = 0; j < 4; j++)
            x[2 * j] = t[j], x[2 * j + 1] = t[j + 4];
    }
}

/* Byte mask of the first c (<= 64) bytes. */
GCK_ALWAYS_INLINE __mmask64 gck_bmask(size_t c)
{
    return c >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << c) - 1);
}

/* 64 bytes at p; under a byte mask (zeros elsewhere) unless full. */
GCK_ALWAYS_INLINE __m512i gck_ldb(const uint8_t *p, size_t c, int full)
{
    return full ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(gck_bmask(c), p);
}

/* Streamed when nt and p is 64-byte aligned (after the head, the first plane
 * always is, plane k when k*n is a multiple of 64). */
GCK_ALWAYS_INLINE void gck_stb(uint8_t *p, __m512i v, size_t c, int full, int nt)
{
    if (full && nt && ((uintptr_t)p & 63) == 0)
        _mm512_stream_si512((void *)p, v);
    else if (full)
        _mm512_storeu_si512(p, v);
    else
        _mm512_mask_storeu_epi8(p, gck_bmask(c), v);
}

/* Elements [i, i + rem) of the call, rem <= 64 (full: rem == 64). */
GCK_ALWAYS_INLINE void gck_xor_shuffle_block512(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n, size_t esz,
                                     int xb, int rot, size_t i, size_t rem, int full, int nt, __m512i ctl)
{
    __m512i x[8], g[8];
    for (size_t j = 0; j < esz; j++) {
        const size_t off = i * esz + 64 * j, c = rem * esz > 64 * j ? rem * esz - 64 * j : 0;
        x[j] = gck_ldb(a + off, c, full);
        if (xb)
            x[j] = _mm512_xor_si512(x[j], gck_ldb(b + off, c, full));
    }
    if (esz > 1) {
        gck_to_groups(x, g, esz);
        for (size_t j = 0; j < esz; j++)
            x[j] = _mm512_shuffle_epi8(g[j], ctl);
        gck_transpose_units512(x, esz);
    }
    if (rot)
        gck_planes_rotl512(x, esz);
    for (size_t k = 0; k < esz; k++)
        gck_stb(dst + k * n + i, x[k], rem, full, nt);
}

GCK_ALWAYS_INLINE void gck_unshuffle_xor_block512(uint8_t *dst, const uint8_t *const *pl, const uint8_t *b, size_t esz,
                                       int xb, int rot, size_t i, size_t rem, int full, int nt, __m512i ctl)
{
    __m512i x[8], g[8];
    for (size_t k = 0; k < esz; k++)
        x[k] = gck_ldb(pl[k] + i, rem, full);
    if (rot)
        gck_planes_rotr512(x, esz);
    if (esz > 1) { /* the forward steps backwards; the unit transpose is its own inverse */
        gck_transpose_units512(x, esz);
        for (size_t j = 0; j < esz; j++)
            g[j] = _mm512_shuffle_epi8(x[j], ctl);
        gck_from_groups(g, x, esz);
    }
    for (size_t j = 0; j < esz; j++) {
        const size_t off = i * esz + 64 * j, c = rem * esz > 64 * j ? rem * esz - 64 * j : 0;
        if (xb)
            x[j] = _mm512_xor_si512(x[j], gck_ldb(b + off, c, full));
        gck_stb(dst + off, x[j], c, full, nt);
    }
}

/* One kernel per (esz, b != NULL), constants folded. Large outputs: a
 * masked head block up to 64-byte alignment of the output, then streaming
 * stores (see GCK_BYTES_NT_MIN) and an sfence, so the data is visible to
 * whoever the caller hands it to next like plain stores. */
GCK_ALWAYS_INLINE void gck_xor_shuffle_avx512_t(uint8_t *restrict dst, const uint8_t *restrict a, const uint8_t *restrict b,
                                     size_t n, size_t esz, int xb, int rot)
{
    const __m512i ctl = gck_plane_ctl(esz, 0);
    size_t i = 0;
    if (n * esz >= GCK_BYTES_NT_MIN) {
        i = (64 - (uintptr_t)dst % 64) % 64;
        gck_xor_shuffle_block512(dst, a, b, n, esz, xb, rot, 0, i, 0, 0, ctl);
        for (; i + 64 <= n; i += 64)
            gck_xor_shuffle_block512(dst, a, b, n, esz, xb, rot, i, 64, 1, 1, ctl);
        _mm_sfence();
    }
    for (; i + 64 <= n; i += 64)
        gck_xor_shuffle_block512(dst, a, b, n, esz, xb, rot, i, 64, 1, 0, ctl);
    if (i < n)
        gck_xor_shuffle_block512(dst, a, b, n, esz, xb, rot, i, n - i, 0, 0, ctl);
}

GCK_ALWAYS_INLINE void gck_unshuffle_xor_avx512_t(uint8_t *restrict dst, const uint8_t *const *planes,
                                       const uint8_t *restrict b, size_t n, size_t esz, int xb, int rot)
{
    const uint8_t *pl[8];
    gck_planes_local(pl, planes, esz);
    const __m512i ctl = gck_plane_ctl(esz, 1);
    size_t i = 0;
    if (n * esz >= GCK_BYTES_NT_MIN) {
        /* dst + i*esz reaches a 64-byte boundary only if dst is esz-aligned */
        if ((uintptr_t)dst % esz == 0)
            i = (64 - (uintptr_t)dst % 64) % 64 / esz;
        gck_unshuffle_xor_block512(dst, pl, b, esz, xb, rot, 0, i, 0, 0, ctl);
        for (; i + 64 <= n; i += 64)
            gck_unshuffle_xor_block512(dst, pl, b, esz, xb, rot, i, 64, 1, 1, ctl);
        _mm_sfence();
    }
    for (; i + 64 <= n; i += 64)
        gck_unshuffle_xor_block512(dst, pl, b, esz, xb, rot, i, 64, 1, 0, ctl);
    if (i < n)
        gck_unshuffle_xor_block512(dst, pl, b, esz, xb, rot, i, n - i, 0, 0, ctl);
}

GCK_DEFINE_BYTES_ENTRIES(avx512)

GCK_ALWAYS_INLINE uint64_t gck_ne_mask_avx512(const uint8_t *p, uint8_t fill)
{
    return _mm512_cmpneq_epi8_mask(_mm512_loadu_si512((const void *)p), _mm512_set1_epi8((char)fill));
}
GCK_DEFINE_SPARSE(avx512, 64, gck_ne_mask_avx512)

GCK_DEFINE_KERNEL_TABLE(GCK_ISA_AVX512);
