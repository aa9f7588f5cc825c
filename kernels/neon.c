/* kernels/neon.c - AArch64 Advanced SIMD kernels, bit-identical to kernels/scalar.c.
 *
 * The elementwise kernels and amax are elementwise.h over ops_neon.h. The
 * reductions and the byte-plane shuffles are written here by hand: a q
 * register holds only 2 doubles, so the 64 canonical lanes take two passes
 * of 16 registers each (below), and ld2/ld4 de-interleave byte planes
 * directly, which no x86 network does.
 *
 * Built with no extra flags (Advanced SIMD is baseline on AArch64) and with
 * the project's -ffp-contract=off, so every vmulq/vaddq below stays one
 * rounding: no FMA is ever formed, matching the plain C of the reference.
 *
 * Reductions follow the canonical shape of kernels_internal.h. A q register
 * holds 2 doubles, so the 64 lanes are 32 registers: each run of 512
 * elements is walked twice, once for lanes 0..31 (16 accumulators in
 * registers) and once for lanes 32..63; the run lanes start at +0.0, take
 * their terms stripe by stripe in increasing i, and are then added into the
 * block lanes held in a stack array. Per lane that is exactly the scalar
 * order. A partial last stripe is handled by copying its elements into
 * zero-padded stack stripes, computing the terms there with the same vector
 * code, and setting the terms of the padding to +0.0 (lanes start at +0.0
 * and never become -0.0, so adding +0.0 leaves them unchanged). The fused
 * kernels read their source through a/af and write their destination through
 * m/mf, which may be the source: each element is read once, before its own
 * new value is stored. The tail's new values go to a stack stripe and the
 * real ones are copied out to the destination. */
#define GCK_ISA neon

#if !defined(__aarch64__)
#error "neon.c is for AArch64 (cmake/GckIsa.cmake adds it)"
#endif

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include <sleef.h>

#include "kernels_internal.h"
#include "ops_neon.h"

#define GCK_HALF (GCK_LANES / 2) /* lanes per pass: 32 doubles = 16 q registers */
#define GCK_HALF_Q (GCK_HALF / 2)

/* ---- the canonical block reduction ------------------------------------------
 * One context type serves every reduction; each kernel fills the fields its
 * term function reads and leaves the others NULL/zero. */
typedef struct gck_nctx {
    const double *a, *b; /* f64 inputs */
    const float *af, *bf; /* f32 inputs */
    const uint16_t *ah, *bh; /* bf16 or f16 inputs */
    double *m;           /* f64 array a fused kernel writes (may be a) */
    float *mf;           /* f32 array a fused kernel writes (may be af) */
    float64x2_t s, p;    /* scale or divisor; exponent */
    float32x4_t sf;      /* f32 scale or divisor */
    float32x4_t wf;      /* the axpy forms' weight (x in bf, acc read from af, written to mf) */
} gck_nctx;

/* The terms of elements i .. i+3 (relative to the context's pointers). */
typedef float64x2x2_t (*gck_term4_fn)(const gck_nctx *c, size_t i);

/* Terms of the partial stripe [i0, i0 + rem), rem < 64, into t[0..64): the
 * elements are copied into zero-padded stripes, the terms computed there by
 * the same vector code, and the padding's terms set to +0.0. A fused kernel's
 * destination is only written, so its stripe is not filled from it: the new
 * values land there and the first rem are copied out. */
GCK_ALWAYS_INLINE void gck_neon_tail(const gck_nctx *c, size_t i0, size_t rem, gck_term4_fn term, double t[GCK_LANES])
{
    double a[GCK_LANES] = {0}, b[GCK_LANES] = {0}, m[GCK_LANES] = {0};
    float af[GCK_LANES] = {0}, bf[GCK_LANES] = {0}, mf[GCK_LANES] = {0};
    uint16_t ah[GCK_LANES] = {0}, bh[GCK_LANES] = {0};
    gck_nctx tc = *c;
    if (c->a != NULL) {
        memcpy(a, c->a + i0, rem * sizeof *a);
        tc.a = a;
    }
    if (c->b != NULL) {
        memcpy(b, c->b + i0, rem * sizeof *b);
        tc.b = b;
    }
    if (c->af != NULL) {
        memcpy(af, c->af + i0, rem * sizeof *af);
        tc.af = af;
    }
    if (c->bf != NULL) {
        memcpy(bf, c->bf + i0, rem * sizeof *bf);
        tc.bf = bf;
    }
    if (c->ah != NULL) {
        memcpy(ah, c->ah + i0, rem * sizeof *ah);
        tc.ah = ah;
    }
    if (c->bh != NULL) {
        memcpy(bh, c->bh + i0, rem * sizeof *bh);
        tc.bh = bh;
    }
    if (c->m != NULL)
        tc.m = m;
    if (c->mf != NULL)
        tc.mf = mf;
#pragma GCC unroll 16
    for (size_t k = 0; k < GCK_LANES / 4; k++) {
        const float64x2x2_t v = term(&tc, 4 * k);
        vst1q_f64(t + 4 * k, v.val[0]);
        vst1q_f64(t + 4 * k + 2, v.val[1]);
    }
    /* The fused kernels wrote the new values into the stripes; only the
     * first rem are real elements. */
    if (c->m != NULL)
        memcpy(c->m + i0, m, rem * sizeof *m);
    if (c->mf != NULL)
        memcpy(c->mf + i0, mf, rem * sizeof *mf);
    /* Padding contributes nothing (pow(0, p) or 0 / d need not be 0). */
    for (size_t j = rem; j < GCK_LANES; j++)
        t[j] = 0.0;
}

GCK_ALWAYS_INLINE double gck_neon_reduce(const gck_nctx *c, size_t n, gck_term4_fn term)
{
    double out[GCK_LANES] = {0}; /* block lanes, +0.0 */
    for (size_t r0 = 0; r0 < n; r0 += GCK_RUN) {
        const size_t len = n - r0 < GCK_RUN ? n - r0 : GCK_RUN;
        const size_t full = len / GCK_LANES, rem = len % GCK_LANES;
        double tail[GCK_LANES];
        if (rem != 0)
            gck_neon_tail(c, r0 + full * GCK_LANES, rem, term, tail);
        for (size_t h = 0; h < GCK_LANES; h += GCK_HALF) {
            float64x2_t acc[GCK_HALF_Q]; /* run lanes h .. h+31 */
#pragma GCC unroll 16
            for (size_t k = 0; k < GCK_HALF_Q; k++)
                acc[k] = vdupq_n_f64(0.0);
            for (size_t st = 0; st < full; st++) {
                const size_t i = r0 + st * GCK_LANES + h;
#pragma GCC unroll 8
                for (size_t k = 0; k < GCK_HALF_Q / 2; k++) {
                    const float64x2x2_t v = term(c, i + 4 * k);
                    acc[2 * k] = vaddq_f64(acc[2 * k], v.val[0]);
                    acc[2 * k + 1] = vaddq_f64(acc[2 * k + 1], v.val[1]);
                }
            }
            if (rem != 0) {
#pragma GCC unroll 16
                for (size_t k = 0; k < GCK_HALF_Q; k++)
                    acc[k] = vaddq_f64(acc[k], vld1q_f64(tail + h + 2 * k));
            }
#pragma GCC unroll 16
            for (size_t k = 0; k < GCK_HALF_Q; k++) {
                double *o = out + h + 2 * k;
                vst1q_f64(o, vaddq_f64(vld1q_f64(o), acc[k]));
            }
        }
    }
    return gck_fold_lanes(out);
}

/* ---- term functions: each is exactly the scalar TERM, two lanes at a time --- */
GCK_ALWAYS_INLINE float64x2x2_t gck_pair(float64x2_t lo, float64x2_t hi)
{
    float64x2x2_t r;
    r.val[0] = lo;
    r.val[1] = hi;
    return r;
}

/* (double)x for four floats: exact. */
GCK_ALWAYS_INLINE float64x2x2_t gck_widen4(float32x4_t v)
{
    return gck_pair(vcvt_f64_f32(vget_low_f32(v)), vcvt_high_f64_f32(v));
}

GCK_ALWAYS_INLINE float64x2_t gck_sq(float64x2_t v)
{
    return vmulq_f64(v, v);
}

/* x^2 */
GCK_ALWAYS_INLINE float64x2x2_t gck_t_sumsq_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_sq(vld1q_f64(c->a + i)), gck_sq(vld1q_f64(c->a + i + 2)));
}

/* (x * s) * (x * s) */
GCK_ALWAYS_INLINE float64x2x2_t gck_t_scaled_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_sq(vmulq_f64(vld1q_f64(c->a + i), c->s)),
                    gck_sq(vmulq_f64(vld1q_f64(c->a + i + 2), c->s)));
}

/* (a - b) * (a - b) */
GCK_ALWAYS_INLINE float64x2x2_t gck_t_dist2_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_sq(vsubq_f64(vld1q_f64(c->a + i), vld1q_f64(c->b + i))),
                    gck_sq(vsubq_f64(vld1q_f64(c->a + i + 2), vld1q_f64(c->b + i + 2))));
}

/* fabs(x) */
GCK_ALWAYS_INLINE float64x2x2_t gck_t_asum_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(vabsq_f64(vld1q_f64(c->a + i)), vabsq_f64(vld1q_f64(c->a + i + 2)));
}

/* pow(fabs(x) * s, p) with SLEEF's FMA AdvSIMD pow: bit-identical to the
 * reference's Sleef_powd1_u10purecfma (TOOLCHAIN.md section 7). */
GCK_ALWAYS_INLINE float64x2_t gck_pow2(float64x2_t x, const gck_nctx *c)
{
    return Sleef_powd2_u10advsimd(vmulq_f64(vabsq_f64(x), c->s), c->p);
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_powsum_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_pow2(vld1q_f64(c->a + i), c), gck_pow2(vld1q_f64(c->a + i + 2), c));
}

/* The terms over floats (f32, and bf16 / f16 widened exactly to their f32
 * value first, ops_neon.h), each exactly the scalar term of the widened
 * value: (double)x * (double)x; ((double)a - (double)b)^2 with the
 * difference taken in f64; fabs((double)x); pow(fabs((double)x) * s, p).
 * LD(c, w, i) loads 4 elements of input w (a or b) as f32. */
#define GCK_LD_f32(c, w, i) vld1q_f32((c)->w##f + (i))
#define GCK_LD_bf16(c, w, i) gck_w32_cvt_bf16_f32(vld1_u16((c)->w##h + (i)))
#define GCK_LD_f16(c, w, i) gck_w32_cvt_f16_f32(vld1_u16((c)->w##h + (i)))
#define GCK_NEON_FLOAT_TERMS(t)                                                \
    GCK_ALWAYS_INLINE float64x2x2_t gck_t_sumsq_##t(const gck_nctx *c, size_t i) \
    {                                                                          \
        const float64x2x2_t x = gck_widen4(GCK_LD_##t(c, a, i));               \
        return gck_pair(gck_sq(x.val[0]), gck_sq(x.val[1]));                   \
    }                                                                          \
    GCK_ALWAYS_INLINE float64x2x2_t gck_t_dist2_##t(const gck_nctx *c, size_t i) \
    {                                                                          \
        const float64x2x2_t a = gck_widen4(GCK_LD_##t(c, a, i));               \
        const float64x2x2_t b = gck_widen4(GCK_LD_##t(c, b, i));               \
        return gck_pair(gck_sq(vsubq_f64(a.val[0], b.val[0])), gck_sq(vsubq_f64(a.val[1], b.val[1]))); \
    }                                                                          \
    GCK_ALWAYS_INLINE float64x2x2_t gck_t_asum_##t(const gck_nctx *c, size_t i) \
    {                                                                          \
        const float64x2x2_t x = gck_widen4(GCK_LD_##t(c, a, i));               \
        return gck_pair(vabsq_f64(x.val[0]), vabsq_f64(x.val[1]));             \
    }                                                                          \
    GCK_ALWAYS_INLINE float64x2x2_t gck_t_powsum_##t(const gck_nctx *c, size_t i) \
    {                                                                          \
        const float64x2x2_t x = gck_widen4(GCK_LD_##t(c, a, i));               \
        return gck_pair(gck_pow2(x.val[0], c), gck_pow2(x.val[1], c));         \
    }
GCK_NEON_FLOAT_TERMS(f32)
GCK_NEON_FLOAT_TERMS(bf16)
GCK_NEON_FLOAT_TERMS(f16)

/* The fused terms store the new value (dst may be src), then square what
 * was stored. */
GCK_ALWAYS_INLINE float64x2_t gck_div_store_sq_f64(double *dst, const double *src, float64x2_t d)
{
    const float64x2_t v = vdivq_f64(vld1q_f64(src), d);
    vst1q_f64(dst, v);
    return gck_sq(v);
}

GCK_ALWAYS_INLINE float64x2_t gck_scale_store_sq_f64(double *dst, const double *src, float64x2_t s)
{
    const float64x2_t v = vmulq_f64(vld1q_f64(src), s);
    vst1q_f64(dst, v);
    return gck_sq(v);
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_div_sumsq_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_div_store_sq_f64(c->m + i, c->a + i, c->s),
                    gck_div_store_sq_f64(c->m + i + 2, c->a + i + 2, c->s));
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_scale_sumsq_f64(const gck_nctx *c, size_t i)
{
    return gck_pair(gck_scale_store_sq_f64(c->m + i, c->a + i, c->s),
                    gck_scale_store_sq_f64(c->m + i + 2, c->a + i + 2, c->s));
}

/* v stored at c->mf + i, then the squares of its widened lanes */
GCK_ALWAYS_INLINE float64x2x2_t gck_store_sq_f32x4(const gck_nctx *c, size_t i, float32x4_t v)
{
    vst1q_f32(c->mf + i, v);
    const float64x2x2_t w = gck_widen4(v);
    return gck_pair(gck_sq(w.val[0]), gck_sq(w.val[1]));
}

/* float v = x / d (one f32 rounding), stored, then (double)v * (double)v */
GCK_ALWAYS_INLINE float64x2x2_t gck_t_div_sumsq_f32(const gck_nctx *c, size_t i)
{
    return gck_store_sq_f32x4(c, i, vdivq_f32(vld1q_f32(c->af + i), c->sf));
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_scale_sumsq_f32(const gck_nctx *c, size_t i)
{
    return gck_store_sq_f32x4(c, i, vmulq_f32(vld1q_f32(c->af + i), c->sf));
}

/* the axpy forms: af + w * bf as axpy_f32 rounds it, then as above */
GCK_ALWAYS_INLINE float32x4_t gck_axpy_f32x4(const gck_nctx *c, size_t i)
{
    return vaddq_f32(vld1q_f32(c->af + i), vmulq_f32(c->wf, vld1q_f32(c->bf + i)));
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_axpy_div_sumsq_f32(const gck_nctx *c, size_t i)
{
    return gck_store_sq_f32x4(c, i, vdivq_f32(gck_axpy_f32x4(c, i), c->sf));
}

GCK_ALWAYS_INLINE float64x2x2_t gck_t_axpy_scale_sumsq_f32(const gck_nctx *c, size_t i)
{
    return gck_store_sq_f32x4(c, i, vmulq_f32(gck_axpy_f32x4(c, i), c->sf));
}

/* ---- the block slots -------------------------------------------------------- */
static double gck_sumsq_f64_block_neon(const double *x, size_t n)
{
    const gck_nctx c = {.a = x};
    return gck_neon_reduce(&c, n, gck_t_sumsq_f64);
}

static double gck_sumsq_scaled_f64_block_neon(const double *x, double s, size_t n)
{
    const gck_nctx c = {.a = x, .s = vdupq_n_f64(s)};
    return gck_neon_reduce(&c, n, gck_t_scaled_f64);
}

static double gck_dist2_f64_block_neon(const double *a, const double *b, size_t n)
{
    const gck_nctx c = {.a = a, .b = b};
    return gck_neon_reduce(&c, n, gck_t_dist2_f64);
}

static double gck_asum_f64_block_neon(const double *x, size_t n)
{
    const gck_nctx c = {.a = x};
    return gck_neon_reduce(&c, n, gck_t_asum_f64);
}

static double gck_powsum_f64_block_neon(const double *x, double p, double s, size_t n)
{
    const gck_nctx c = {.a = x, .s = vdupq_n_f64(s), .p = vdupq_n_f64(p)};
    return gck_neon_reduce(&c, n, gck_t_powsum_f64);
}

/* f32, bf16, f16 (w: the pointer field suffix, f or h) */
#define GCK_NEON_FLOAT_SLOTS(t, w)                                             \
    static double gck_sumsq_##t##_block_neon(const GCK_CT(t) *x, size_t n)     \
    {                                                                          \
        const gck_nctx c = {.a##w = x};                                        \
        return gck_neon_reduce(&c, n, gck_t_sumsq_##t);                        \
    }                                                                          \
    static double gck_dist2_##t##_block_neon(const GCK_CT(t) *a, const GCK_CT(t) *b, size_t n) \
    {                                                                          \
        const gck_nctx c = {.a##w = a, .b##w = b};                             \
        return gck_neon_reduce(&c, n, gck_t_dist2_##t);                        \
    }                                                                          \
    static double gck_asum_##t##_block_neon(const GCK_CT(t) *x, size_t n)      \
    {                                                                          \
        const gck_nctx c = {.a##w = x};                                        \
        return gck_neon_reduce(&c, n, gck_t_asum_##t);                         \
    }                                                                          \
    static double gck_powsum_##t##_block_neon(const GCK_CT(t) *x, double p, double s, size_t n) \
    {                                                                          \
        const gck_nctx c = {.a##w = x, .s = vdupq_n_f64(s), .p = vdupq_n_f64(p)}; \
        return gck_neon_reduce(&c, n, gck_t_powsum_##t);                       \
    }
GCK_NEON_FLOAT_SLOTS(f32, f)
GCK_NEON_FLOAT_SLOTS(bf16, h)
GCK_NEON_FLOAT_SLOTS(f16, h)

static double gck_div_sumsq_f64_block_neon(double *dst, const double *x, double d, size_t n)
{
    const gck_nctx c = {.a = x, .m = dst, .s = vdupq_n_f64(d)};
    return gck_neon_reduce(&c, n, gck_t_div_sumsq_f64);
}

static double gck_div_sumsq_f32_block_neon(float *dst, const float *x, float d, size_t n)
{
    const gck_nctx c = {.af = x, .mf = dst, .sf = vdupq_n_f32(d)};
    return gck_neon_reduce(&c, n, gck_t_div_sumsq_f32);
}

static double gck_scale_sumsq_f64_block_neon(double *dst, const double *x, double s, size_t n)
{
    const gck_nctx c = {.a = x, .m = dst, .s = vdupq_n_f64(s)};
    return gck_neon_reduce(&c, n, gck_t_scale_sumsq_f64);
}

static double gck_scale_sumsq_f32_block_neon(float *dst, const float *x, float s, size_t n)
{
    const gck_nctx c = {.af = x, .mf = dst, .sf = vdupq_n_f32(s)};
    return gck_neon_reduce(&c, n, gck_t_scale_sumsq_f32);
}

static double gck_axpy_div_sumsq_f32_block_neon(float *acc, const float *x, float w, float d, size_t n)
{
    const gck_nctx c = {.af = acc, .bf = x, .mf = acc, .sf = vdupq_n_f32(d), .wf = vdupq_n_f32(w)};
    return gck_neon_reduce(&c, n, gck_t_axpy_div_sumsq_f32);
}

static double gck_axpy_scale_sumsq_f32_block_neon(float *acc, const float *x, float w, float s, size_t n)
{
    const gck_nctx c = {.af = acc, .bf = x, .mf = acc, .sf = vdupq_n_f32(s), .wf = vdupq_n_f32(w)};
    return gck_neon_reduce(&c, n, gck_t_axpy_scale_sumsq_f32);
}

/* ---- elementwise and amax: the template over ops_neon.h ---- */
#include "elementwise.h"

/* ---- byte planes ------------------------------------------------------------
 * ld2/ld4 de-interleave 2- and 4-byte elements straight into byte planes and
 * st2/st4 re-interleave them. 8-byte elements: ld4 of 8 elements leaves
 * bytes k and k + 4 alternating in register k; uzp1/uzp2 over two such loads
 * split them into planes k and k + 4 (zip1/zip2 undo it). 16 elements per
 * step; the rest byte by byte. */
#define GCK_XB(v, w) ((xb) ? veorq_u8((v), (w)) : (v))

GCK_ALWAYS_INLINE uint8x16x4_t gck_zero_u8x4(void)
{
    const uint8x16_t z = vdupq_n_u8(0);
    return (uint8x16x4_t){{z, z, z, z}};
}

/* Registers p[0..esz) holding byte planes of the same elements: each
 * element rotated left one bit (plane k: its bytes shifted left, plane
 * k-1's top bits shifted in; plane 0 takes plane esz-1's), and back. */
GCK_ALWAYS_INLINE void gck_planes_rotl_neon(uint8x16_t *p, size_t esz)
{
    uint8x16_t q[8];
    for (size_t k = 0; k < esz; k++)
        q[k] = vsriq_n_u8(vshlq_n_u8(p[k], 1), p[(k + esz - 1) % esz], 7);
    for (size_t k = 0; k < esz; k++)
        p[k] = q[k];
}

GCK_ALWAYS_INLINE void gck_planes_rotr_neon(uint8x16_t *p, size_t esz)
{
    uint8x16_t q[8];
    for (size_t k = 0; k < esz; k++)
        q[k] = vsliq_n_u8(vshrq_n_u8(p[k], 1), p[(k + 1) % esz], 7);
    for (size_t k = 0; k < esz; k++)
        p[k] = q[k];
}

GCK_ALWAYS_INLINE void gck_xor_shuffle_neon_t(uint8_t *restrict dst, const uint8_t *restrict a, const uint8_t *restrict b,
                                   size_t n, size_t esz, int xb, int rot)
{
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint8_t *pa = a + i * esz, *pb = xb ? b + i * esz : NULL;
        uint8x16_t p[8];
        if (esz == 1) {
            p[0] = GCK_XB(vld1q_u8(pa), vld1q_u8(pb));
        } else if (esz == 2) {
            const uint8x16x2_t v = vld2q_u8(pa), w = xb ? vld2q_u8(pb) : v;
            for (int k = 0; k < 2; k++)
                p[k] = GCK_XB(v.val[k], w.val[k]);
        } else if (esz == 4) {
            const uint8x16x4_t v = vld4q_u8(pa), w = xb ? vld4q_u8(pb) : v;
            for (int k = 0; k < 4; k++)
                p[k] = GCK_XB(v.val[k], w.val[k]);
        } else {
            const uint8x16x4_t v0 = vld4q_u8(pa), v1 = vld4q_u8(pa + 64);
            const uint8x16x4_t w0 = xb ? vld4q_u8(pb) : v0, w1 = xb ? vld4q_u8(pb + 64) : v1;
            for (int k = 0; k < 4; k++) {
                const uint8x16_t x0 = GCK_XB(v0.val[k], w0.val[k]), x1 = GCK_XB(v1.val[k], w1.val[k]);
                p[k] = vuzp1q_u8(x0, x1);
                p[k + 4] = vuzp2q_u8(x0, x1);
            }
        }
        if (rot)
            gck_planes_rotl_neon(p, esz);
        for (size_t k = 0; k < esz; k++)
            vst1q_u8(dst + i + k * n, p[k]);
    }
    gck_xor_shuffle_range(dst, a, xb ? b : NULL, n, esz, i, n, rot);
}

GCK_ALWAYS_INLINE void gck_unshuffle_xor_neon_t(uint8_t *restrict dst, const uint8_t *const *planes, const uint8_t *restrict b,
                                     size_t n, size_t esz, int xb, int rot)
{
    const uint8_t *pl[8];
    gck_planes_local(pl, planes, esz);
    size_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const uint8_t *pb = xb ? b + i * esz : NULL;
        uint8_t *o = dst + i * esz;
        uint8x16_t p[8];
        for (size_t k = 0; k < esz; k++)
            p[k] = vld1q_u8(pl[k] + i);
        if (rot)
            gck_planes_rotr_neon(p, esz);
        if (esz == 1) {
            vst1q_u8(o, GCK_XB(p[0], vld1q_u8(pb)));
        } else if (esz == 2) {
            uint8x16x2_t v;
            const uint8x16x2_t w = xb ? vld2q_u8(pb) : (uint8x16x2_t){{vdupq_n_u8(0), vdupq_n_u8(0)}};
            for (int k = 0; k < 2; k++)
                v.val[k] = GCK_XB(p[k], w.val[k]);
            vst2q_u8(o, v);
        } else if (esz == 4) {
            uint8x16x4_t v;
            const uint8x16x4_t w = xb ? vld4q_u8(pb) : gck_zero_u8x4();
            for (int k = 0; k < 4; k++)
                v.val[k] = GCK_XB(p[k], w.val[k]);
            vst4q_u8(o, v);
        } else {
            uint8x16x4_t v0, v1;
            const uint8x16x4_t w0 = xb ? vld4q_u8(pb) : gck_zero_u8x4(), w1 = xb ? vld4q_u8(pb + 64) : w0;
            for (int k = 0; k < 4; k++) {
                v0.val[k] = GCK_XB(vzip1q_u8(p[k], p[k + 4]), w0.val[k]);
                v1.val[k] = GCK_XB(vzip2q_u8(p[k], p[k + 4]), w1.val[k]);
            }
            vst4q_u8(o, v0);
            vst4q_u8(o + 64, v1);
        }
    }
    gck_unshuffle_xor_range(dst, pl, xb ? b : NULL, esz, i, n, rot);
}
#undef GCK_XB

GCK_DEFINE_BYTES_ENTRIES(neon)

/* The sparse split and merge 8 bytes a step: vtbl through the rows of
 * sparse_tables.c (index 0x80 gives 0; 8 picks the fill, the second table
 * register). The split's 8-byte store keeps only the bytes it counts. */
static size_t gck_sparse_split_neon(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill)
{
    static const uint8_t sel_bytes[8] = {1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x8_t f = vdup_n_u8(fill), sel = vld1_u8(sel_bytes);
    size_t i = 0, m = 0;
    for (; i + 8 <= n; i += 8) {
        const uint8x8_t v = vld1_u8(x + i);
        const unsigned b = vaddv_u8(vbic_u8(sel, vceq_u8(v, f)));
        bits[i / 8] = (uint8_t)b;
        vst1_u8(vals + m, vtbl1_u8(v, vld1_u8(gck_sparse_pack_ctl[b])));
        m += gck_sparse_count[b];
    }
    return gck_sparse_split_range(bits, vals, x, n, fill, i, m);
}

static void gck_sparse_merge_neon(uint8_t *dst, const uint8_t *bits, const uint8_t *vals, size_t nvals, size_t n,
                                  uint8_t fill)
{
    const uint8x8_t f = vdup_n_u8(fill);
    size_t i = 0, m = 0;
    for (; i + 8 <= n && m + 8 <= nvals; i += 8) {
        const unsigned b = bits[i / 8];
        const uint8x8x2_t t = {{vld1_u8(vals + m), f}};
        vst1_u8(dst + i, vtbl2_u8(t, vld1_u8(gck_sparse_unpack_ctl[b])));
        m += gck_sparse_count[b];
    }
    gck_sparse_merge_range(dst, bits, vals, n, fill, i, m);
}

GCK_DEFINE_KERNEL_TABLE(GCK_ISA_NEON);
