/* kernels/avx2.c - AVX2 + FMA kernels: the scalar reference's operations, 4 lanes at a time.
 *
 * The elementwise kernels and amax are elementwise.h over ops_avx2.h. The
 * reductions and the byte-plane network are written here by hand: their
 * register budgets are this ISA's own (16 ymm hold the 64 canonical lanes
 * with nothing to spare, ymm_reduce.h; f32 inputs widen 4 at a time).
 *
 * The 64 canonical lanes are 16 ymm (ymm_reduce.h); with 16 registers the
 * compiler keeps some run lanes in L1, a load-add-store per stripe that
 * costs little. Tails use AVX masked loads, and
 * every term is masked to +0.0 outside n. -ffp-contract=off keeps every
 * multiply and add separate; FMA is written out only where it rounds like
 * the scalar code (the exact square of a widened float, adds moved to the FMA
 * pipes by ymm_reduce.h) and in SLEEF's pow. */
#define GCK_ISA avx2

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <sleef.h>

#include "bytes_simd.h"
#include "kernels_internal.h"
#include "ops_avx2.h"
#include "ymm_reduce.h"

#if !defined(__AVX2__) || !defined(__FMA__)
#error "avx2.c must be built with -mavx2 -mfma (cmake/GckIsa.cmake)"
#endif

/* Lanes of the 4-wide group starting at g that lie below n, as an AVX mask
 * (all ones = load the lane). */
static inline __m256i gck_mask4(size_t g, size_t n)
{
    const int64_t left = g >= n ? 0 : (int64_t)(n - g);
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(left), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* The same mask for 4 floats (32-bit lanes). */
static inline __m128i gck_mask4f(__m256i m)
{
    return _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(m, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7)));
}

static inline __m256d gck_ld64(const double *p, __m256i m, int full)
{
    return full ? _mm256_loadu_pd(p) : _mm256_maskload_pd(p, m);
}

static inline __m256d gck_ld32w(const float *p, __m256i m, int full) /* 4 floats widened (exact) */
{
    return _mm256_cvtps_pd(full ? _mm_loadu_ps(p) : _mm_maskload_ps(p, gck_mask4f(m)));
}

/* +0.0 in masked-off lanes, so lane + term is exactly the scalar order. */
static inline __m256d gck_keep(__m256d t, __m256i m, int full)
{
    return full ? t : _mm256_and_pd(t, _mm256_castsi256_pd(m));
}

static inline __m256d gck_sq(__m256d v, __m256i m, int full)
{
    return gck_keep(_mm256_mul_pd(v, v), m, full);
}

/* The kernels below define A(a, g, m, full); the shared walk calls it so. */
#define A_FULL(s_, g) A(s_, g, _mm256_set1_epi64x(-1), 1)
#define A_TAIL(s_, g, r1) A(s_, g, gck_mask4(g, r1), 0)

/* ---- reductions ---- */
static double gck_sumsq_f64_block_avx2(const double *x, size_t n)
{
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_sq(gck_ld64(x + (g), m, f), m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

static double gck_sumsq_scaled_f64_block_avx2(const double *x, double s, size_t n)
{
    const __m256d vs = _mm256_set1_pd(s);
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_sq(_mm256_mul_pd(gck_ld64(x + (g), m, f), vs), m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

static double gck_dist2_f64_block_avx2(const double *a, const double *b, size_t n)
{
#define A(s_, g, m, f) GCK_YMM_ADDK(s_, gck_sq(gck_ymm_sub_on_fma(gck_ld64(a + (g), m, f), gck_ld64(b + (g), m, f)), m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

static inline __m256d gck_abs(__m256d v)
{
    return _mm256_andnot_pd(_mm256_set1_pd(-0.0), v);
}

static double gck_asum_f64_block_avx2(const double *x, size_t n)
{
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_abs(gck_ld64(x + (g), m, f)))
    GCK_YMM_REDUCE(n);
#undef A
}

/* SLEEF's FMA pow: bit-identical to the reference's Sleef_powd1_u10purecfma. */
static inline __m256d gck_pow_term(__m256d v, __m256d vs, __m256d vp, __m256i m, int full)
{
    return gck_keep(Sleef_powd4_u10avx2(_mm256_mul_pd(gck_abs(v), vs), vp), m, full);
}

/* ---- the reductions over f32, bf16 and f16 (kernels_internal.h) ------------
 * 4 elements widened to f64 exactly, +0.0 outside m: floats by vcvtps2pd,
 * bf16 and f16 through their f32 values (ops_avx2.h). AVX2 has no 16-bit
 * masked load, so a 2-byte tail goes through a zero-padded copy of the
 * lanes m selects (zero bits widen to +0.0). */
GCK_ALWAYS_INLINE __m128i gck_ld16x4(const uint16_t *p, __m256i m, int full)
{
    if (full)
        return _mm_loadl_epi64((const __m128i *)(const void *)p);
    const int k = __builtin_popcount((unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(m)));
    uint64_t v = 0;
    memcpy(&v, p, (size_t)k * sizeof *p);
    return _mm_cvtsi64_si128((long long)v);
}

GCK_ALWAYS_INLINE __m256d gck_ldw(gck_fl_elem e, const void *p, size_t g, __m256i m, int full)
{
    switch (e) {
    case GCK_FL_F32: return gck_ld32w((const float *)p + g, m, full);
    case GCK_FL_BF16: return gck_w64_cvt_bf16_f64(gck_ld16x4((const uint16_t *)p + g, m, full));
    default: return gck_w64_cvt_f16_f64(gck_ld16x4((const uint16_t *)p + g, m, full));
    }
}

/* a + the 4 terms at g (k_: the run register, for GCK_YMM_ADDK). The
 * squares of widened floats are exact, so sumsq's FMA rounds like the
 * reference's multiply and add. */
GCK_ALWAYS_INLINE __m256d gck_fl_terms(gck_fl_term t, gck_fl_elem e, int k_, __m256d acc, const void *a, const void *b,
                                      size_t g, __m256i m, int full, __m256d vs, __m256d vp)
{
    const __m256d v = gck_ldw(e, a, g, m, full);
    switch (t) {
    case GCK_FL_SUMSQ: return _mm256_fmadd_pd(v, v, acc);
    case GCK_FL_DIST2: return GCK_YMM_ADDK(acc, gck_sq(gck_ymm_sub_on_fma(v, gck_ldw(e, b, g, m, full)), m, full));
    case GCK_FL_ASUM: return _mm256_add_pd(acc, gck_abs(v));
    default: return _mm256_add_pd(acc, gck_pow_term(v, vs, vp, m, full));
    }
}

#define A(s_, g, m, f) gck_fl_terms(t, e, k_, s_, a, b, g, m, f, vs, vp)
GCK_ALWAYS_INLINE double gck_fl_block(gck_fl_term t, gck_fl_elem e, const void *a, const void *b, double s, double p,
                                      size_t n)
{
    const __m256d vs = _mm256_set1_pd(s), vp = _mm256_set1_pd(p);
    if (e != GCK_FL_F32 && t == GCK_FL_DIST2) /* the difference in f32 where exact (ymm_reduce.h) */
        GCK_YMM_REDUCE16_D2F(n, (const uint16_t *)a, (const uint16_t *)b);
    if (e != GCK_FL_F32 && t != GCK_FL_POWSUM) /* 2-byte inputs: 16 widened per load (ymm_reduce.h) */
        GCK_YMM_REDUCE16(n, (const uint16_t *)a, (const uint16_t *)b);
    if (e == GCK_FL_F32 && t == GCK_FL_DIST2) /* f32: prefetched stripes (kernels_internal.h) */
        GCK_YMM_REDUCE32_2(n, (const float *)a, (const float *)b);
    if (e == GCK_FL_F32 && t != GCK_FL_POWSUM)
        GCK_YMM_REDUCE32(n, (const float *)a);
    GCK_YMM_REDUCE(n);
}
#undef A
#define GCK_FLOAT_LIKE_BLOCK gck_fl_block
GCK_DEFINE_FLOAT_LIKE_BLOCKS()

static double gck_powsum_f64_block_avx2(const double *x, double p, double s, size_t n)
{
    const __m256d vs = _mm256_set1_pd(s), vp = _mm256_set1_pd(p);
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_pow_term(gck_ld64(x + (g), m, f), vs, vp, m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

/* ---- fused update + sum of squares: store the new value, square it ---- */
static inline __m256d gck_store_sq_f64(double *p, __m256d v, __m256i m, int full)
{
    if (full)
        _mm256_storeu_pd(p, v);
    else
        _mm256_maskstore_pd(p, m, v);
    return gck_sq(v, m, full);
}

/* The stored f32 value widened, +0 outside n, then lane + v*v by FMA: the
 * square of a widened float is exact, so this rounds like the reference's
 * separate multiply and add. */
static inline __m256d gck_store_sq_f32(float *p, __m128 v, __m256i m, int full, __m256d acc)
{
    if (full)
        _mm_storeu_ps(p, v);
    else
        _mm_maskstore_ps(p, gck_mask4f(m), v);
    const __m256d w = gck_keep(_mm256_cvtps_pd(v), m, full);
    return _mm256_fmadd_pd(w, w, acc);
}

static inline __m128 gck_ld32(const float *p, __m256i m, int full)
{
    return full ? _mm_loadu_ps(p) : _mm_maskload_ps(p, gck_mask4f(m));
}

static double gck_div_sumsq_f64_block_avx2(double *dst, const double *x, double d, size_t n)
{
    const __m256d vd = _mm256_set1_pd(d);
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_store_sq_f64(dst + (g), _mm256_div_pd(gck_ld64(x + (g), m, f), vd), m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

static double gck_div_sumsq_f32_block_avx2(float *dst, const float *x, float d, size_t n)
{
    const __m128 vd = _mm_set1_ps(d);
#define A(s_, g, m, f) gck_store_sq_f32(dst + (g), _mm_div_ps(gck_ld32(x + (g), m, f), vd), m, f, s_)
    GCK_YMM_REDUCE32(n, x);
#undef A
}

static double gck_scale_sumsq_f64_block_avx2(double *dst, const double *x, double s, size_t n)
{
    const __m256d vs = _mm256_set1_pd(s);
#define A(s_, g, m, f) _mm256_add_pd(s_, gck_store_sq_f64(dst + (g), _mm256_mul_pd(gck_ld64(x + (g), m, f), vs), m, f))
    GCK_YMM_REDUCE(n);
#undef A
}

static double gck_scale_sumsq_f32_block_avx2(float *dst, const float *x, float s, size_t n)
{
    const __m128 vs = _mm_set1_ps(s);
#define A(s_, g, m, f) gck_store_sq_f32(dst + (g), _mm_mul_ps(gck_ld32(x + (g), m, f), vs), m, f, s_)
    GCK_YMM_REDUCE32(n, x);
#undef A
}

/* acc + w * x as axpy_f32 rounds it (product, then sum) */
#define GCK_AXPY4(g, m, f) _mm_add_ps(gck_ld32(acc + (g), m, f), _mm_mul_ps(vw, gck_ld32(x + (g), m, f)))

static double gck_axpy_div_sumsq_f32_block_avx2(float *acc, const float *x, float w, float d, size_t n)
{
    const __m128 vw = _mm_set1_ps(w), vd = _mm_set1_ps(d);
#define A(s_, g, m, f) gck_store_sq_f32(acc + (g), _mm_div_ps(GCK_AXPY4(g, m, f), vd), m, f, s_)
    GCK_YMM_REDUCE32_2(n, acc, x);
#undef A
}

static double gck_axpy_scale_sumsq_f32_block_avx2(float *acc, const float *x, float w, float s, size_t n)
{
    const __m128 vw = _mm_set1_ps(w), vs = _mm_set1_ps(s);
#define A(s_, g, m, f) gck_store_sq_f32(acc + (g), _mm_mul_ps(GCK_AXPY4(g, m, f), vs), m, f, s_)
    GCK_YMM_REDUCE32_2(n, acc, x);
#undef A
}
#undef GCK_AXPY4

/* ---- elementwise and amax: the template over ops_avx2.h ---- */
#include "elementwise.h"

/* ---- byte planes ------------------------------------------------------------
 * One block is 32 elements: esz loads of 32 bytes in, one 32-byte store per
 * plane out. vpshufb and the unpacks work inside 128-bit lanes, so the block
 * is first regrouped with vperm2i128 so that lane 0 of every register holds
 * elements 0..15 and lane 1 elements 16..31 (of the plane order), in esz
 * groups of u = 16/esz elements. Inside a lane, vpshufb sorts each group's
 * bytes by plane (u bytes per plane), and an esz x esz transpose of those
 * u-byte units (unpacks) leaves plane k in register k. Every step is a
 * permutation whose inverse is the same network run backwards; the transposes
 * and the 2x2 lane swaps are their own inverses. */
/* vpshufb control, in each lane (bytes_simd.h). */
GCK_ALWAYS_INLINE __m256i gck_plane_ctl(size_t esz, int inv)
{
    uint8_t c[16];
    gck_plane_ctl_bytes(c, esz, inv);
    return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)c));
}

GCK_DEFINE_TRANSPOSE_UNITS(gck_transpose_units, __m256i, _mm256)

/* Registers x[0..esz) holding byte planes k = 0..esz-1 of the same
 * elements: each element rotated left one bit (plane k takes its bytes
 * shifted left and plane k-1's top bits; plane 0 takes plane esz-1's), and
 * back. No byte shifts on x86: 16-bit shifts, then a mask. */
GCK_ALWAYS_INLINE void gck_planes_rotl(__m256i *x, size_t esz)
{
    const __m256i one = _mm256_set1_epi8(1);
    __m256i hi[8];
    for (size_t k = 0; k < esz; k++)
        hi[k] = _mm256_and_si256(_mm256_srli_epi16(x[k], 7), one);
    for (size_t k = 0; k < esz; k++)
        x[k] = _mm256_or_si256(_mm256_add_epi8(x[k], x[k]), hi[(k + esz - 1) % esz]);
}

GCK_ALWAYS_INLINE void gck_planes_rotr(__m256i *x, size_t esz)
{
    const __m256i top = _mm256_set1_epi8((char)0x80), low7 = _mm256_set1_epi8(0x7f);
    __m256i lo[8];
    for (size_t k = 0; k < esz; k++)
        lo[k] = _mm256_and_si256(_mm256_slli_epi16(x[k], 7), top);
    for (size_t k = 0; k < esz; k++)
        x[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(x[k], 1), low7), lo[(k + 1) % esz]);
}

GCK_ALWAYS_INLINE __m256i gck_ldu8(const uint8_t *p)
{
    return _mm256_loadu_si256((const __m256i *)(const void *)p);
}

/* Streamed when nt and p is 32-byte aligned (after the head, the first
 * plane always is, plane k when k*n is a multiple of 32). */
GCK_ALWAYS_INLINE void gck_stu8(uint8_t *p, __m256i v, int nt)
{
    if (nt && ((uintptr_t)p & 31) == 0)
        _mm256_stream_si256((__m256i *)(void *)p, v);
    else
        _mm256_storeu_si256((__m256i *)(void *)p, v);
}

/* The esz planes of elements [i, i + 32) of the call into x. */
GCK_ALWAYS_INLINE void gck_xor_shuffle_regs(__m256i x[8], const uint8_t *a, const uint8_t *b, size_t esz, int xb,
                                            int rot, size_t i, __m256i ctl)
{
    for (size_t j = 0; j < esz; j++) {
        x[j] = gck_ldu8(a + i * esz + 32 * j);
        if (xb)
            x[j] = _mm256_xor_si256(x[j], gck_ldu8(b + i * esz + 32 * j));
    }
    if (esz > 1) {
        /* group 2j+h: lane h of x[j] (lane 0) and of x[j + esz/2] (lane 1) */
        __m256i y[8];
        for (size_t j = 0; j < esz / 2; j++) {
            y[2 * j] = _mm256_permute2x128_si256(x[j], x[j + esz / 2], 0x20);
            y[2 * j + 1] = _mm256_permute2x128_si256(x[j], x[j + esz / 2], 0x31);
        }
        for (size_t j = 0; j < esz; j++)
            x[j] = _mm256_shuffle_epi8(y[j], ctl);
        gck_transpose_units(x, esz);
    }
    if (rot)
        gck_planes_rotl(x, esz);
}

/* Elements [i, i + 32) of the call. */
GCK_ALWAYS_INLINE void gck_xor_shuffle_block256(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n, size_t esz,
                                     int xb, int rot, size_t i, int nt, __m256i ctl)
{
    __m256i x[8];
    gck_xor_shuffle_regs(x, a, b, esz, xb, rot, i, ctl);
    for (size_t k = 0; k < esz; k++)
        gck_stu8(dst + k * n + i, x[k], nt);
}

/* Elements [i, i + 64) streamed: each plane's 64 bytes stored back to back,
 * so each write-combining line fills at once. One block at a time left a
 * half line open in each of the esz planes: with 8 planes, xor_shuffle_f64
 * wrote 0.58 of ref_add3_f64's bytes per second at 64 Mi, where AVX-512's
 * full-line blocks wrote 1.29. */
GCK_ALWAYS_INLINE void gck_xor_shuffle_block512nt(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n,
                                                  size_t esz, int xb, int rot, size_t i, __m256i ctl)
{
    __m256i x[8], y[8];
    gck_xor_shuffle_regs(x, a, b, esz, xb, rot, i, ctl);
    gck_xor_shuffle_regs(y, a, b, esz, xb, rot, i + 32, ctl);
    for (size_t k = 0; k < esz; k++) {
        gck_stu8(dst + k * n + i, x[k], 1);
        gck_stu8(dst + k * n + i + 32, y[k], 1);
    }
}

GCK_ALWAYS_INLINE void gck_unshuffle_xor_block256(uint8_t *dst, const uint8_t *const *pl, const uint8_t *b, size_t esz,
                                       int xb, int rot, size_t i, int nt, __m256i ctl)
{
    __m256i x[8];
    for (size_t k = 0; k < esz; k++)
        x[k] = gck_ldu8(pl[k] + i);
    if (rot)
        gck_planes_rotr(x, esz);
    if (esz > 1) { /* the forward steps backwards */
        gck_transpose_units(x, esz);
        __m256i y[8];
        for (size_t j = 0; j < esz; j++)
            y[j] = _mm256_shuffle_epi8(x[j], ctl);
        for (size_t j = 0; j < esz / 2; j++) {
            x[j] = _mm256_permute2x128_si256(y[2 * j], y[2 * j + 1], 0x20);
            x[j + esz / 2] = _mm256_permute2x128_si256(y[2 * j], y[2 * j + 1], 0x31);
        }
    }
    for (size_t j = 0; j < esz; j++) {
        if (xb)
            x[j] = _mm256_xor_si256(x[j], gck_ldu8(b + i * esz + 32 * j));
        gck_stu8(dst + i * esz + 32 * j, x[j], nt);
    }
}

/* One kernel per (esz, b != NULL), constants folded. Large outputs: a scalar
 * head up to 32-byte alignment of the output, then streaming stores (see
 * GCK_BYTES_NT_MIN) and an sfence, so the data is visible to whoever the
 * caller hands it to next like plain stores. */
GCK_ALWAYS_INLINE void gck_xor_shuffle_avx2_t(uint8_t *restrict dst, const uint8_t *restrict a, const uint8_t *restrict b,
                                   size_t n, size_t esz, int xb, int rot)
{
    const __m256i ctl = gck_plane_ctl(esz, 0);
    const uint8_t *bx = xb ? b : NULL;
    size_t i = 0;
    if (n * esz >= GCK_BYTES_NT_MIN) {
        i = (64 - (uintptr_t)dst % 64) % 64; /* whole lines from here (plane 0; plane k when k * n is too) */
        i = i < n ? i : n;
        gck_xor_shuffle_range(dst, a, bx, n, esz, 0, i, rot);
        for (; i + 64 <= n; i += 64)
            gck_xor_shuffle_block512nt(dst, a, b, n, esz, xb, rot, i, ctl);
        for (; i + 32 <= n; i += 32)
            gck_xor_shuffle_block256(dst, a, b, n, esz, xb, rot, i, 1, ctl);
        _mm_sfence();
    }
    for (; i + 32 <= n; i += 32)
        gck_xor_shuffle_block256(dst, a, b, n, esz, xb, rot, i, 0, ctl);
    gck_xor_shuffle_range(dst, a, bx, n, esz, i, n, rot);
}

GCK_ALWAYS_INLINE void gck_unshuffle_xor_avx2_t(uint8_t *restrict dst, const uint8_t *const *planes, const uint8_t *restrict b,
                                     size_t n, size_t esz, int xb, int rot)
{
    const uint8_t *pl[8];
    gck_planes_local(pl, planes, esz);
    const __m256i ctl = gck_plane_ctl(esz, 1);
    const uint8_t *bx = xb ? b : NULL;
    size_t i = 0;
    if (n * esz >= GCK_BYTES_NT_MIN) {
        /* dst + i*esz reaches a 32-byte boundary only if dst is esz-aligned */
        if ((uintptr_t)dst % esz == 0)
            i = (32 - (uintptr_t)dst % 32) % 32 / esz;
        gck_unshuffle_xor_range(dst, pl, bx, esz, 0, i, rot);
        for (; i + 32 <= n; i += 32)
            gck_unshuffle_xor_block256(dst, pl, b, esz, xb, rot, i, 1, ctl);
        _mm_sfence();
    }
    for (; i + 32 <= n; i += 32)
        gck_unshuffle_xor_block256(dst, pl, b, esz, xb, rot, i, 0, ctl);
    gck_unshuffle_xor_range(dst, pl, bx, esz, i, n, rot);
}

GCK_DEFINE_BYTES_ENTRIES(avx2)

GCK_ALWAYS_INLINE uint64_t gck_ne_mask_avx2(const uint8_t *p, uint8_t fill)
{
    const __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
    return (uint32_t)~_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8((char)fill)));
}
GCK_DEFINE_SPARSE(avx2, 32, gck_ne_mask_avx2)

GCK_DEFINE_KERNEL_TABLE(GCK_ISA_AVX2);
