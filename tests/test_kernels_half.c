/* tests/test_kernels_half.c - the bf16 / f16 kernels on one ISA vs scalar and vs widen-then-f32.
 *
 * Every kernel is checked twice: against the scalar reference (same bits,
 * NaNs as a class) and against an independent definition written here with
 * double arithmetic (the widening by ldexp, the narrowing by nearbyint in
 * the default rounding mode), so a wrong reference cannot pass. The
 * conversions run over all 2^32 f32 bit patterns natively and over a 2^24
 * random sample under an emulator or sanitizers (GCK_TEST_EMULATED, which
 * also walks the large sizes with one input family only and the block-sized
 * ones with every third, in turn). */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

typedef enum fmt { F_BF16, F_F16 } fmt;
static const char *const fmt_names[] = {"bf16", "f16"};

/* ---- the independent definitions ------------------------------------------ */

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* The value of a bf16 / f16 as a float, decoded from its fields. */
static float def_widen(fmt f, uint16_t h)
{
    const int eb = f == F_BF16 ? 8 : 5, mb = f == F_BF16 ? 7 : 10, bias = (1 << (eb - 1)) - 1;
    const int e = h >> mb & ((1 << eb) - 1), m = h & ((1 << mb) - 1);
    const double sign = (h & 0x8000) ? -1.0 : 1.0;
    if (e == (1 << eb) - 1) {
        if (m == 0)
            return (float)(sign * INFINITY);
        /* NaN: bf16 keeps every bit (a signalling NaN stays signalling), f16
         * keeps sign and payload and becomes quiet */
        return f == F_BF16 ? from_bits((uint32_t)h << 16)
                           : from_bits((uint32_t)(h & 0x8000) << 16 | 0x7fc00000u | (uint32_t)m << 13);
    }
    const double v = e == 0 ? ldexp((double)m, 1 - bias - mb) : ldexp((double)(m | 1 << mb), e - bias - mb);
    return (float)(sign * v);
}

/* A float rounded to nearest even to bf16 / f16 (NaN: bf16 0xFFFF, f16
 * quiet with the top payload bits; overflow: Inf). */
static uint16_t def_narrow(fmt f, float x)
{
    const int eb = f == F_BF16 ? 8 : 5, mb = f == F_BF16 ? 7 : 10, bias = (1 << (eb - 1)) - 1;
    const uint16_t sign = (uint16_t)(bits_of(x) >> 16 & 0x8000), inf = (uint16_t)(((1 << eb) - 1) << mb);
    if (isnan(x))
        return f == F_BF16 ? 0xffff : (uint16_t)(sign | 0x7e00 | (bits_of(x) >> 13 & 0x3ff));
    const double a = fabs((double)x);
    if (isinf(a))
        return sign | inf;
    if (a < ldexp(1.0, 1 - bias)) /* denormal range: units of the smallest denormal */
        return (uint16_t)(sign | (uint16_t)nearbyint(ldexp(a, bias - 1 + mb)));
    int e = ilogb(a);
    double m = nearbyint(ldexp(a, mb - e));
    if (m == ldexp(1.0, mb + 1))
        m = ldexp(1.0, mb), e++;
    if (e > bias)
        return sign | inf;
    return (uint16_t)(sign | (uint16_t)((e + bias) << mb) | (uint16_t)(m - ldexp(1.0, mb)));
}

/* ---- inputs ----------------------------------------------------------------- */

/* Specials of each format: +-0, smallest and largest denormal, smallest
 * normal, 1, largest finite, +-Inf, quiet and signalling NaN. */
static const uint16_t specials[2][12] = {
    {0x0000, 0x8000, 0x0001, 0x007f, 0x0080, 0x3f80, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7fc0, 0x7f81},
    {0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x3c00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7d01},
};

typedef enum kind { K_UNIT, K_ANY_FINITE, K_DENORMAL, K_SPECIALS, K_WITH_NAN, K_WITH_INF, K_ZERO, K_COUNT } kind;
static const char *const kind_names[] = {"unit", "any-finite", "denormal", "specials", "with-nan", "with-inf",
                                         "zero"};

static void fill16(fmt f, uint16_t *x, size_t n, kind k, uint64_t seed)
{
    const uint16_t expmask = f == F_BF16 ? 0x7f80 : 0x7c00, mant = (uint16_t)(~expmask & 0x7fff);
    for (size_t i = 0; i < n; i++) {
        uint16_t v = (uint16_t)(gck_test_rand(&seed) >> 48);
        switch (k) {
        case K_UNIT: /* |x| < 2: exponents at most the bias */
            v = (uint16_t)(v & (0x8000 | mant | (f == F_BF16 ? 0x3f80 : 0x3c00)));
            break;
        case K_DENORMAL: v = (uint16_t)(v & (0x8000 | mant)); break;
        case K_SPECIALS: v = specials[f][v % 12]; break;
        case K_ZERO: v &= 0x8000; break;
        default:
            if ((v & expmask) == expmask)
                v ^= 0x4000; /* exponent all ones: a finite one instead */
            break;
        }
        x[i] = v;
    }
    if (n > 0 && k == K_WITH_NAN)
        x[n / 2] = f == F_BF16 ? 0x7fc1 : 0x7e01;
    if (n > 1 && k == K_WITH_INF)
        x[n / 3] = expmask, x[n - 1] = (uint16_t)(0x8000 | expmask);
}

static int same16(fmt f, uint16_t a, uint16_t b)
{
    const uint16_t e = f == F_BF16 ? 0x7f80 : 0x7c00;
    const int na = (a & e) == e && (a & ~e & 0x7fff) != 0, nb = (b & e) == e && (b & ~e & 0x7fff) != 0;
    return na ? nb : a == b;
}

/* ---- running the public kernels on an ISA ----------------------------------- */

static void use(gck_isa isa)
{
    assert_int_equal(gck_isa_select(isa), GCK_OK);
}

typedef struct reds {
    double sumsq, l2, dist2, p1, p3, pinf, phalf;
} reds;

static reds reduce16(fmt f, const uint16_t *x, const uint16_t *y, size_t n)
{
    if (f == F_BF16)
        return (reds){gck_sumsq_bf16(x, n),         gck_l2norm_bf16(x, n),         gck_dist2_bf16(x, y, n),
                      gck_pnorm_bf16(x, n, 1.0),    gck_pnorm_bf16(x, n, 3.0),     gck_pnorm_bf16(x, n, INFINITY),
                      gck_pnorm_bf16(x, n, 0.5)};
    return (reds){gck_sumsq_f16(x, n),      gck_l2norm_f16(x, n),      gck_dist2_f16(x, y, n), gck_pnorm_f16(x, n, 1.0),
                  gck_pnorm_f16(x, n, 3.0), gck_pnorm_f16(x, n, INFINITY), gck_pnorm_f16(x, n, 0.5)};
}

static reds reduce32(const float *x, const float *y, size_t n)
{
    return (reds){gck_sumsq_f32(x, n),      gck_l2norm_f32(x, n),      gck_dist2_f32(x, y, n), gck_pnorm_f32(x, n, 1.0),
                  gck_pnorm_f32(x, n, 3.0), gck_pnorm_f32(x, n, INFINITY), gck_pnorm_f32(x, n, 0.5)};
}

static void assert_same_reds(reds w, reds g, const char *what, fmt f, size_t n, kind k)
{
    const double *a = &w.sumsq, *b = &g.sumsq;
    static const char *const names[] = {"sumsq", "l2norm", "dist2", "pnorm1", "pnorm3", "pnorminf", "pnorm0.5"};
    for (int i = 0; i < 7; i++)
        gck_assert_same_f64(a[i], b[i], "%s %s_%s n=%zu %s", what, names[i], fmt_names[f], n, kind_names[k]);
}

static uint16_t *g_x, *g_y, *g_o16, *g_r16;
static float *g_w, *g_v, *g_acc32, *g_o32, *g_r32;
static double *g_acc64, *g_o64, *g_r64;

static int setup(void **state)
{
    (void)state;
    const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;
    g_x = gck_test_alloc(cap * 2), g_y = gck_test_alloc(cap * 2), g_o16 = gck_test_alloc(cap * 2);
    g_r16 = gck_test_alloc(cap * 2);
    g_w = gck_test_alloc(cap * 4), g_v = gck_test_alloc(cap * 4), g_acc32 = gck_test_alloc(cap * 4);
    g_o32 = gck_test_alloc(cap * 4), g_r32 = gck_test_alloc(cap * 4);
    g_acc64 = gck_test_alloc(cap * 8), g_o64 = gck_test_alloc(cap * 8), g_r64 = gck_test_alloc(cap * 8);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_x), free(g_y), free(g_o16), free(g_r16), free(g_w), free(g_v), free(g_acc32), free(g_o32);
    free(g_r32), free(g_acc64), free(g_o64), free(g_r64);
    return 0;
}

/* Above this size only the first two weights / scales: the elementwise
 * kernels' arithmetic does not depend on n (tails and misalignments are the
 * small sizes' job), and under an emulator or the sanitizers every weight at
 * every size took minutes. */
#define MANY_FACTORS_MAX ((size_t)(GCK_TEST_EMULATED ? 4096 : 100000))

/* Sizes to walk: all of gck_test_sizes for the first kinds, the small ones
 * for the rest (the large ones add blocks, not cases). Under an emulator or
 * the sanitizers the block and threshold sizes between take every third kind
 * in turn, so each kind still meets several of them (test_reductions took
 * 61 s of qemu-s390x, mostly the pow terms there). */
static int skip_case(size_t si, int k)
{
    const size_t n = gck_test_sizes[si];
    if (GCK_TEST_EMULATED && n > MANY_FACTORS_MAX && n <= 100000)
        return (si + (size_t)k) % 3 != 0;
    return n > 100000 && k > (GCK_TEST_EMULATED ? K_UNIT : K_ANY_FINITE);
}

/* ---- reductions -------------------------------------------------------------- */

static void test_reductions(void **state)
{
    const gck_isa_pair *p = *state;
    for (int f = F_BF16; f <= F_F16; f++)
        for (size_t si = 0; si < gck_test_nsizes; si++)
            for (int k = 0; k < K_COUNT; k++) {
                const size_t n = gck_test_sizes[si];
                if (skip_case(si, k))
                    continue;
                const size_t off = (size_t)k % (GCK_TEST_MAX_OFFSET + 1); /* misaligned pointers */
                uint16_t *x = g_x + off, *y = g_y + (GCK_TEST_MAX_OFFSET - off);
                fill16((fmt)f, x, n, (kind)k, 100 + n * 8 + (size_t)k);
                fill16((fmt)f, y, n, K_UNIT, 200 + n);
                for (size_t i = 0; i < n; i++)
                    g_w[i] = def_widen((fmt)f, x[i]), g_v[i] = def_widen((fmt)f, y[i]);
                use(GCK_ISA_SCALAR);
                const reds want = reduce32(g_w, g_v, n), ref = reduce16((fmt)f, x, y, n);
                use(p->isa->isa);
                const reds got = reduce16((fmt)f, x, y, n);
                assert_same_reds(want, ref, "scalar vs widened f32:", (fmt)f, n, (kind)k);
                assert_same_reds(ref, got, p->isa->name, (fmt)f, n, (kind)k);
            }
}

/* dist2 where y is near x, so the SIMD kernels' f32-difference path is taken
 * (test_reductions' y, of independent exponents, makes nearly every run fall
 * back), with runs that must fall back planted among exact ones: a
 * difference too wide for f32, one that overflows f32 (bf16), a NaN or Inf
 * (kinds with-nan, with-inf, specials), a difference in the denormal range. */
typedef double dist2_fn(const uint16_t *, const uint16_t *, size_t);

typedef enum near_mode { NEAR_ONLY, NEAR_FAR_ONE, NEAR_OVERFLOW, NEAR_TINY, NEAR_EDGE, NEAR_COUNT } near_mode;

static void fill_near(fmt f, uint16_t *y, uint16_t *x, size_t n, near_mode m, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        y[i] = (uint16_t)(x[i] ^ (gck_test_rand(&seed) >> 61)); /* the 3 lowest mantissa bits */
    if (n == 0)
        return;
    const size_t at = (size_t)(gck_test_rand(&seed) % n);
    switch (m) {
    case NEAR_FAR_ONE: { /* one side near 2^-20 (f16: 2^-10), the other near 1: the f32 difference rounds */
        const uint16_t small = f == F_BF16 ? 0x3f81 - (20 << 7) : 0x3c01 - (10 << 10), one = f == F_BF16 ? 0x3f83 : 0x3c07;
        const size_t at2 = (at + n / 2) % n; /* the larger one in x here, in y there */
        x[at] = one, y[at] = small;
        x[at2] = (uint16_t)(0x8000 | small), y[at2] = one;
        break;
    }
    case NEAR_OVERFLOW: /* max - (-max): Inf in f32 for bf16 (exact for f16) */
        y[at] = f == F_BF16 ? 0xff7f : 0xfbff;
        x[at] = f == F_BF16 ? 0x7f7f : 0x7bff;
        break;
    case NEAR_TINY: /* two denormals: an exact denormal difference */
        x[at] = 0x0005, y[at] = 0x0003;
        break;
    case NEAR_EDGE: { /* f16 words whose exponents are 13 apart (the f32 difference is exact: 24 bits at
                       * most), 14 apart (25 bits: it rounds), a zero beside the largest, denormals beside
                       * 2^-2 and 2^-1; both signs */
        static const uint16_t pairs[][2] = {{0x7bff, 0x47ff}, {0x7bff, 0xc7ff}, {0x7801, 0x4401}, {0x7bff, 0x4001},
                                            {0xfbff, 0x4001}, {0x0000, 0x7bff}, {0x8000, 0xfbff}, {0x03ff, 0x3400},
                                            {0x83ff, 0x3800}, {0x6bff, 0x3401}, {0x6bff, 0x33ff}};
        const size_t np = sizeof pairs / sizeof pairs[0];
        for (size_t i = 0; i < np && i < n; i++) {
            const size_t a = (at + i * 97) % n;
            const int flip = (int)(i & 1);
            x[a] = pairs[i][flip], y[a] = pairs[i][!flip];
            if (f == F_BF16) /* the same words shifted into bf16's exponent: pairs some way apart */
                x[a] = (uint16_t)(x[a] >> 3 | (x[a] & 0x8000)), y[a] = (uint16_t)(y[a] >> 3 | (y[a] & 0x8000));
        }
        break;
    }
    default: break;
    }
}

static void test_dist2_near(void **state)
{
    const gck_isa_pair *p = *state;
    for (int f = F_BF16; f <= F_F16; f++)
        for (size_t si = 0; si < gck_test_nsizes; si++)
            for (int k = 0; k < K_COUNT; k++)
                for (int m = 0; m < NEAR_COUNT; m++) {
                    const size_t n = gck_test_sizes[si];
                    if (skip_case(si, k))
                        continue;
                    const size_t off = (size_t)(k + m) % (GCK_TEST_MAX_OFFSET + 1);
                    uint16_t *x = g_x + off, *y = g_y + (GCK_TEST_MAX_OFFSET - off);
                    fill16((fmt)f, x, n, (kind)k, 600 + n * 8 + (size_t)k);
                    fill_near((fmt)f, y, x, n, (near_mode)m, 700 + n + (size_t)m);
                    for (size_t i = 0; i < n; i++)
                        g_w[i] = def_widen((fmt)f, x[i]), g_v[i] = def_widen((fmt)f, y[i]);
                    dist2_fn *d16 = f == F_BF16 ? gck_dist2_bf16 : gck_dist2_f16;
                    use(GCK_ISA_SCALAR);
                    const double want = gck_dist2_f32(g_w, g_v, n), ref = d16(x, y, n);
                    use(p->isa->isa);
                    const double got = d16(x, y, n);
                    gck_assert_same_f64(want, ref, "scalar vs widened f32: dist2_%s n=%zu %s near %d", fmt_names[f], n,
                                        kind_names[k], m);
                    gck_assert_same_f64(ref, got, "%s dist2_%s n=%zu %s near %d", p->isa->name, fmt_names[f], n,
                                        kind_names[k], m);
                }
}

/* ---- mixed accumulation, scale, widening -------------------------------------- */

static const double g_weights[] = {0.5, -3.0, 1.0 / 3.0, 1e30, 1e-30, 0x1p-140, 0.0, -0.0, INFINITY, NAN};
#define NW (sizeof g_weights / sizeof g_weights[0])

typedef enum op { OP_ADD, OP_AXPY, OP_AXPY_INIT, OP_COUNT } op;

static void run_into_f32(fmt f, op o, float *acc, float w, const uint16_t *x, size_t n)
{
    switch (o) {
    case OP_ADD: (f == F_BF16 ? gck_add_bf16_to_f32 : gck_add_f16_to_f32)(acc, x, n); break;
    case OP_AXPY: (f == F_BF16 ? gck_axpy_bf16_to_f32 : gck_axpy_f16_to_f32)(acc, w, x, n); break;
    default: (f == F_BF16 ? gck_axpy_init_bf16_to_f32 : gck_axpy_init_f16_to_f32)(acc, w, x, n); break;
    }
}

static void run_into_f64(fmt f, op o, double *acc, double w, const uint16_t *x, size_t n)
{
    switch (o) {
    case OP_ADD: (f == F_BF16 ? gck_add_bf16_to_f64 : gck_add_f16_to_f64)(acc, x, n); break;
    case OP_AXPY: (f == F_BF16 ? gck_axpy_bf16_to_f64 : gck_axpy_f16_to_f64)(acc, w, x, n); break;
    default: (f == F_BF16 ? gck_axpy_init_bf16_to_f64 : gck_axpy_init_f16_to_f64)(acc, w, x, n); break;
    }
}

/* The definitions, with -ffp-contract=off: acc + x, acc + (w * x), 0 + (w * x). */
static float expr_f32(op o, float acc, float w, float x)
{
    return o == OP_ADD ? acc + x : o == OP_AXPY ? acc + w * x : 0.0f + w * x;
}

static double expr_f64(op o, double acc, double w, double x)
{
    return o == OP_ADD ? acc + x : o == OP_AXPY ? acc + w * x : 0.0 + w * x;
}

static void test_mixed(void **state)
{
    const gck_isa_pair *p = *state;
    for (int f = F_BF16; f <= F_F16; f++)
        for (size_t si = 0; si < gck_test_nsizes; si++)
            for (int o = 0; o < OP_COUNT; o++)
                for (size_t wi = 0; wi < NW; wi++)
                    for (int k = 0; k < K_COUNT; k++) {
                        const size_t n = gck_test_sizes[si];
                        if (skip_case(si, k) || (o == OP_ADD && wi > 0) || (n > MANY_FACTORS_MAX && wi > 1))
                            continue;
                        const size_t off = (size_t)(k + (int)wi) % (GCK_TEST_MAX_OFFSET + 1);
                        uint16_t *x = g_x + off;
                        float *acc = g_acc32 + (GCK_TEST_MAX_OFFSET - off);
                        fill16((fmt)f, x, n, (kind)k, 300 + n + (size_t)k);
                        gck_test_fill_f32(acc, n, (gck_test_kind)((k + 2) % GCK_K_COUNT), 400 + n);
                        for (size_t i = 0; i < n; i++)
                            g_acc64[i] = (double)acc[i];
                        const double w = g_weights[wi];
                        memcpy(g_r32, acc, n * 4), memcpy(g_o32, acc, n * 4);
                        memcpy(g_r64, g_acc64, n * 8), memcpy(g_o64, g_acc64, n * 8);
                        use(GCK_ISA_SCALAR);
                        run_into_f32((fmt)f, (op)o, g_r32, (float)w, x, n);
                        run_into_f64((fmt)f, (op)o, g_r64, w, x, n);
                        use(p->isa->isa);
                        run_into_f32((fmt)f, (op)o, g_o32, (float)w, x, n);
                        run_into_f64((fmt)f, (op)o, g_o64, w, x, n);
                        for (size_t i = 0; i < n; i++) {
                            const float xw = def_widen((fmt)f, x[i]);
                            if (!gck_same_f32(expr_f32((op)o, acc[i], (float)w, xw), g_r32[i]))
                                fail_msg("scalar op %d %s->f32 i=%zu", o, fmt_names[f], i);
                            if (!gck_same_f32(g_r32[i], g_o32[i]))
                                fail_msg("%s op %d %s->f32 n=%zu i=%zu w=%a %s: want %a got %a", p->isa->name, o,
                                         fmt_names[f], n, i, w, kind_names[k], (double)g_r32[i], (double)g_o32[i]);
                            gck_assert_same_f64(expr_f64((op)o, g_acc64[i], w, (double)xw), g_r64[i],
                                                "scalar op %d %s->f64 i=%zu", o, fmt_names[f], i);
                            gck_assert_same_f64(g_r64[i], g_o64[i], "%s op %d %s->f64 n=%zu i=%zu w=%a %s",
                                                p->isa->name, o, fmt_names[f], n, i, w, kind_names[k]);
                        }
                    }
}

/* scale: round(widen(x) * s) in f32, narrowed once: torch's x.mul_(s) */
static void test_scale(void **state)
{
    const gck_isa_pair *p = *state;
    static const float scales[] = {0.5f, -1.3f, 1.0f / 3.0f, 0x1p-20f, 3e4f, 0x1p100f, 0.0f, -0.0f, INFINITY, NAN};
    for (int f = F_BF16; f <= F_F16; f++)
        for (size_t si = 0; si < gck_test_nsizes; si++)
            for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++)
                for (int k = 0; k < K_COUNT; k++) {
                    const size_t n = gck_test_sizes[si];
                    if (skip_case(si, k) || (n > MANY_FACTORS_MAX && s > 1))
                        continue;
                    const size_t off = (size_t)(k + (int)s) % (GCK_TEST_MAX_OFFSET + 1);
                    uint16_t *x = g_x + off;
                    fill16((fmt)f, x, n, (kind)k, 500 + n + (size_t)k);
                    memcpy(g_r16, x, n * 2), memcpy(g_o16, x, n * 2);
                    use(GCK_ISA_SCALAR);
                    (f == F_BF16 ? gck_scale_bf16 : gck_scale_f16)(g_r16, scales[s], n);
                    use(p->isa->isa);
                    (f == F_BF16 ? gck_scale_bf16 : gck_scale_f16)(g_o16, scales[s], n);
                    for (size_t i = 0; i < n; i++) {
                        const uint16_t want = def_narrow((fmt)f, def_widen((fmt)f, x[i]) * scales[s]);
                        if (!same16((fmt)f, want, g_r16[i]))
                            fail_msg("scalar scale_%s x=0x%04x s=%a: want 0x%04x got 0x%04x", fmt_names[f], x[i],
                                     (double)scales[s], want, g_r16[i]);
                        if (!same16((fmt)f, g_r16[i], g_o16[i]))
                            fail_msg("%s scale_%s n=%zu i=%zu x=0x%04x s=%a: want 0x%04x got 0x%04x", p->isa->name,
                                     fmt_names[f], n, i, x[i], (double)scales[s], g_r16[i], g_o16[i]);
                    }
                }
}

/* widening: every 16-bit pattern, at every misalignment */
static void test_widen_all(void **state)
{
    const gck_isa_pair *p = *state;
    for (int f = F_BF16; f <= F_F16; f++)
        for (size_t off = 0; off <= GCK_TEST_MAX_OFFSET; off++) {
            const size_t n = 65536 - off; /* odd tails too */
            uint16_t *x = g_x + off;
            for (size_t i = 0; i < n; i++)
                x[i] = (uint16_t)(i + off);
            use(GCK_ISA_SCALAR);
            (f == F_BF16 ? gck_convert_bf16_to_f32 : gck_convert_f16_to_f32)(g_r32, x, n);
            use(p->isa->isa);
            (f == F_BF16 ? gck_convert_bf16_to_f32 : gck_convert_f16_to_f32)(g_o32 + off, x, n);
            for (size_t i = 0; i < n; i++) {
                const float want = def_widen((fmt)f, x[i]);
                /* the widening is exact: the same bits, NaN payloads included */
                if (bits_of(want) != bits_of(g_r32[i]) || bits_of(g_r32[i]) != bits_of(g_o32[off + i]))
                    fail_msg("%s widen %s 0x%04x: want 0x%08x scalar 0x%08x got 0x%08x", p->isa->name, fmt_names[f],
                             x[i], bits_of(want), bits_of(g_r32[i]), bits_of(g_o32[off + i]));
            }
        }
}

/* ---- narrowing: every f32 bit pattern (a 2^24 sample under an emulator) ---------- */

#define CONV_CHUNK 65536

static void check_narrow_chunk(const gck_isa_pair *p, const float *src, size_t n, int vs_definition)
{
    for (int f = F_BF16; f <= F_F16; f++) {
        void (*ref)(uint16_t *, const float *, size_t) =
            f == F_BF16 ? p->ref->convert_f32_to_bf16 : p->ref->convert_f32_to_f16;
        void (*isa)(uint16_t *, const float *, size_t) =
            f == F_BF16 ? p->isa->convert_f32_to_bf16 : p->isa->convert_f32_to_f16;
        ref(g_r16, src, n);
        isa(g_o16, src, n);
        if (memcmp(g_r16, g_o16, n * 2) != 0)
            for (size_t i = 0; i < n; i++)
                if (g_r16[i] != g_o16[i]) /* the NaN bits are defined too: 0xFFFF / quiet + payload */
                    fail_msg("%s f32->%s 0x%08x: scalar 0x%04x got 0x%04x", p->isa->name, fmt_names[f],
                             bits_of(src[i]), g_r16[i], g_o16[i]);
        if (vs_definition)
            for (size_t i = 0; i < n; i++) {
                const uint16_t want = def_narrow((fmt)f, src[i]);
                if (want != g_r16[i])
                    fail_msg("scalar f32->%s 0x%08x: want 0x%04x got 0x%04x", fmt_names[f], bits_of(src[i]), want,
                             g_r16[i]);
            }
    }
}

static void test_narrow_patterns(void **state)
{
    const gck_isa_pair *p = *state;
    /* the definition on the interesting neighbourhoods: around every f16 and
     * bf16 boundary (ties, overflow, denormals) and the specials */
    static const uint32_t centres[] = {0x00000000, 0x00000001, 0x00800000, 0x33000000, 0x33800000, 0x38800000,
                                       0x387fe000, 0x477fe000, 0x477ff000, 0x47800000, 0x7f7f8000, 0x7f7fffff,
                                       0x7f800000, 0x7f800001, 0x7fc00000, 0x3f808000, 0x3f818000, 0x3f800fff};
    for (size_t c = 0; c < sizeof centres / sizeof centres[0]; c++)
        for (uint32_t sign = 0; sign <= 1; sign++) {
            for (uint32_t d = 0; d < 4096; d++)
                g_w[d] = from_bits((centres[c] - 2048 + d) ^ sign << 31);
            check_narrow_chunk(p, g_w, 4096, 1);
        }
    /* the scalar reference against the definition on a random sample */
    uint64_t st = 77;
    for (int r = 0; r < 64; r++) {
        for (size_t i = 0; i < CONV_CHUNK; i++)
            g_w[i] = from_bits((uint32_t)(gck_test_rand(&st) >> 32));
        check_narrow_chunk(p, g_w, CONV_CHUNK, 1);
    }
    /* the ISA against the reference: all 2^32 patterns, or 2^24 random ones */
    if (GCK_TEST_EMULATED) {
        for (size_t r = 0; r < (1u << 24) / CONV_CHUNK; r++) {
            for (size_t i = 0; i < CONV_CHUNK; i++)
                g_w[i] = from_bits((uint32_t)(gck_test_rand(&st) >> 32));
            check_narrow_chunk(p, g_w, CONV_CHUNK, 0);
        }
    } else if (p->isa != p->ref) {
        for (uint64_t hi = 0; hi < (UINT64_C(1) << 32) / CONV_CHUNK; hi++) {
            for (uint32_t i = 0; i < CONV_CHUNK; i++)
                g_w[i] = from_bits((uint32_t)(hi * CONV_CHUNK) | i);
            check_narrow_chunk(p, g_w, CONV_CHUNK, 0);
        }
    }
}

/* NULL with n == 0 is allowed everywhere. */
static void test_null_empty(void **state)
{
    (void)state;
    assert_true(gck_sumsq_bf16(NULL, 0) == 0.0 && gck_sumsq_f16(NULL, 0) == 0.0);
    assert_true(gck_l2norm_bf16(NULL, 0) == 0.0 && gck_l2norm_f16(NULL, 0) == 0.0);
    assert_true(gck_dist2_bf16(NULL, NULL, 0) == 0.0 && gck_dist2_f16(NULL, NULL, 0) == 0.0);
    assert_true(gck_pnorm_bf16(NULL, 0, 3.0) == 0.0 && gck_pnorm_f16(NULL, 0, 1.0) == 0.0);
    assert_true(isnan(gck_pnorm_bf16(NULL, 0, 0.0)) && isnan(gck_pnorm_f16(NULL, 0, -1.0)));
    gck_add_bf16_to_f32(NULL, NULL, 0), gck_add_f16_to_f64(NULL, NULL, 0);
    gck_axpy_bf16_to_f64(NULL, 1.0, NULL, 0), gck_axpy_init_f16_to_f32(NULL, 1.0f, NULL, 0);
    gck_scale_bf16(NULL, 2.0f, 0), gck_scale_f16(NULL, 2.0f, 0);
    gck_convert_f32_to_bf16(NULL, NULL, 0), gck_convert_f16_to_f32(NULL, NULL, 0);
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_reductions),
                 GCK_ISA_TEST(test_dist2_near),
                 GCK_ISA_TEST(test_mixed),
                 GCK_ISA_TEST(test_scale),
                 GCK_ISA_TEST(test_widen_all),
                 GCK_ISA_TEST(test_narrow_patterns),
                 GCK_ISA_TEST(test_null_empty))
