/* tests/test_kernels_fused.c - fused update+sumsq and mixed-precision kernels on one ISA, bit for bit.
 *
 * Each is checked against its definition (the separate operations, or the
 * plain C expression) and against the scalar table. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

static double *g_x64, *g_y64, *g_z64;
static float *g_x32, *g_y32, *g_z32;

static int setup(void **state)
{
    (void)state;
    const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;
    g_x64 = gck_test_alloc(cap * 8), g_y64 = gck_test_alloc(cap * 8), g_z64 = gck_test_alloc(cap * 8);
    g_x32 = gck_test_alloc(cap * 4), g_y32 = gck_test_alloc(cap * 4), g_z32 = gck_test_alloc(cap * 4);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_x64), free(g_y64), free(g_z64), free(g_x32), free(g_y32), free(g_z32);
    return 0;
}

static const double g_factors[] = {3.0, 0.1, -7.0, 0x1p-1000, 1e300, 0.0, INFINITY};
#define NF (sizeof g_factors / sizeof g_factors[0])

/* Above this size only the first two factors / weights: the kernels'
 * arithmetic does not depend on n (tails and misalignments are the small
 * sizes' job, every factor meets those), and under an emulator or the
 * sanitizers (GCK_TEST_EMULATED) every factor at every block size took 40 s
 * of qemu-s390x. */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif
#define MANY_FACTORS_MAX ((size_t)(GCK_TEST_EMULATED ? 4096 : 100000))

static void test_fused_sumsq(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (size_t fi = 0; fi < NF; fi++)
            for (int k = 0; k < GCK_K_COUNT; k++) {
                if ((n > 100000 && (k > GCK_K_ILL_SCALED || fi > 1)) || (n > MANY_FACTORS_MAX && fi > 1))
                    continue;
                const size_t off = (size_t)k & 1;
                double *x = g_x64 + off, *y = g_y64 + off;
                float *f = g_x32 + off * 3, *g = g_y32 + off * 3;
                gck_test_fill_f64(x, n, (gck_test_kind)k, n + 31);
                gck_test_fill_f32(f, n, (gck_test_kind)k, n + 32);
                const double d = g_factors[fi];
                const char *kn = gck_test_kind_name((gck_test_kind)k);
                /* definition: the update, then gck_sumsq of the result (public API, this ISA) */
                memcpy(y, x, n * 8);
                for (size_t i = 0; i < n; i++)
                    y[i] = y[i] / d;
                const double want_div = gck_sumsq_f64(y, n);
                memcpy(g_z64 + off, x, n * 8);
                const double got_div = gck_div_sumsq_f64(g_z64 + off, g_z64 + off, d, n); /* in place */
                gck_assert_same_f64(want_div, got_div, "%s div_sumsq_f64 d=%a n=%zu %s", p->isa->name, d, n, kn);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(y[i], g_z64[off + i], "%s div_sumsq_f64 value i=%zu", p->isa->name, i);

                memcpy(y, x, n * 8);
                gck_scale_f64(y, d, n);
                const double want_sc = gck_sumsq_f64(y, n);
                memset(g_z64 + off, 0, n * 8);
                gck_assert_same_f64(want_sc, gck_scale_sumsq_f64(g_z64 + off, x, d, n), /* out of place */ "%s scale_sumsq_f64 n=%zu %s",
                                    p->isa->name, n, kn);
                assert_memory_equal(y, g_z64 + off, n * 8);

                const float fd = (float)d;
                memcpy(g, f, n * 4);
                for (size_t i = 0; i < n; i++)
                    g[i] = g[i] / fd;
                const double want_div32 = gck_sumsq_f32(g, n);
                memcpy(g_z32 + off * 3, f, n * 4);
                gck_assert_same_f64(want_div32, gck_div_sumsq_f32(g_z32 + off * 3, g_z32 + off * 3, fd, n),
                                    "%s div_sumsq_f32 d=%a n=%zu %s", p->isa->name, (double)fd, n, kn);
                for (size_t i = 0; i < n; i++)
                    if (!gck_same_f32(g[i], g_z32[off * 3 + i]))
                        fail_msg("%s div_sumsq_f32 value i=%zu", p->isa->name, i);

                memcpy(g, f, n * 4);
                gck_scale_f32(g, fd, n);
                const double want_sc32 = gck_sumsq_f32(g, n);
                memcpy(g_z32 + off * 3, f, n * 4);
                gck_assert_same_f64(want_sc32, gck_scale_sumsq_f32(g_z32 + off * 3, f, fd, n),
                                    "%s scale_sumsq_f32 n=%zu %s", p->isa->name, n, kn);

                /* block slots vs scalar directly */
                if (n <= GCK_BLOCK) {
                    memcpy(y, x, n * 8);
                    memcpy(g_z64 + off, x, n * 8);
                    gck_assert_same_f64(p->ref->div_sumsq_f64_block(y, y, d, n),
                                        p->isa->div_sumsq_f64_block(g_z64 + off, g_z64 + off, d, n),
                                        "%s div block n=%zu", p->isa->name, n);
                    gck_assert_same_f64(p->ref->scale_sumsq_f32_block(g, f, fd, n),
                                        p->isa->scale_sumsq_f32_block(g_z32, f, fd, n), "%s scale block f32 n=%zu",
                                        p->isa->name, n);
                    assert_memory_equal(g, g_z32, n * 4);
                }
            }
    }
}

/* The axpy forms of the f32 block slots: acc = (acc + w * x) / d or * s.
 * Definition: axpy_f32 then div/scale_sumsq_f32_block, on this ISA; and
 * the scalar slot, bit for bit (values and sum). acc and x misaligned
 * differently; x may be acc (the in-place call of the list function). */
static void test_axpy_fused_blocks(void **state)
{
    const gck_isa_pair *p = *state;
    static const float ws[] = {1.0f, 0.3f, -1.7f};
    float *want = g_y32, *got = g_z32, *acc0 = gck_test_alloc((GCK_BLOCK + 8) * 4);
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        if (n > GCK_BLOCK)
            continue;
        for (size_t fi = 0; fi < NF; fi++)
            for (int k = 0; k < GCK_K_COUNT; k++) {
                const size_t off = (size_t)k % (GCK_TEST_MAX_OFFSET + 1), xoff = (size_t)(k + 1) % 2;
                float *x = g_x32 + xoff;
                gck_test_fill_f32(acc0, n, (gck_test_kind)((k + 3) % GCK_K_COUNT), n + 41);
                gck_test_fill_f32(x, n, (gck_test_kind)k, n + 42);
                const float f = (float)g_factors[fi], w = ws[(fi + (size_t)k) % 3];
                const char *kn = gck_test_kind_name((gck_test_kind)k);
                for (int scale = 0; scale <= 1; scale++) {
                    double (*fused)(float *, const float *, float, float, size_t) =
                        scale ? p->isa->axpy_scale_sumsq_f32_block : p->isa->axpy_div_sumsq_f32_block;
                    double (*fused_ref)(float *, const float *, float, float, size_t) =
                        scale ? p->ref->axpy_scale_sumsq_f32_block : p->ref->axpy_div_sumsq_f32_block;
                    double (*plain)(float *, const float *, float, size_t) =
                        scale ? p->isa->scale_sumsq_f32_block : p->isa->div_sumsq_f32_block;
                    memcpy(want + off, acc0, n * 4);
                    p->isa->axpy_f32(want + off, w, x, n);
                    const double def = plain(want + off, want + off, f, n);
                    memcpy(got + off, acc0, n * 4);
                    const double ref = fused_ref(got + off, x, w, f, n);
                    gck_assert_same_f64(def, ref, "scalar axpy_%s_sumsq_f32 n=%zu f=%a w=%a %s",
                                        scale ? "scale" : "div", n, (double)f, (double)w, kn);
                    memcpy(got + off, acc0, n * 4);
                    const double isa = fused(got + off, x, w, f, n);
                    gck_assert_same_f64(ref, isa, "%s axpy_%s_sumsq_f32 n=%zu f=%a w=%a %s", p->isa->name,
                                        scale ? "scale" : "div", n, (double)f, (double)w, kn);
                    for (size_t i = 0; i < n; i++)
                        if (!gck_same_f32(want[off + i], got[off + i]))
                            fail_msg("%s axpy_%s_sumsq_f32 n=%zu i=%zu %s: want %a got %a", p->isa->name,
                                     scale ? "scale" : "div", n, i, kn, (double)want[off + i], (double)got[off + i]);
                    /* in place: x is acc */
                    memcpy(want + off, acc0, n * 4);
                    p->isa->axpy_f32(want + off, w, want + off, n);
                    const double def_in = plain(want + off, want + off, f, n);
                    memcpy(got + off, acc0, n * 4);
                    gck_assert_same_f64(def_in, fused(got + off, got + off, w, f, n), "%s in place n=%zu %s",
                                        p->isa->name, n, kn);
                    for (size_t i = 0; i < n; i++)
                        if (!gck_same_f32(want[off + i], got[off + i]))
                            fail_msg("%s in place axpy_%s_sumsq_f32 n=%zu i=%zu %s", p->isa->name,
                                     scale ? "scale" : "div", n, i, kn);
                }
            }
    }
    free(acc0);
}

static void test_mixed_precision(void **state)
{
    const gck_isa_pair *p = *state;
    static const double ws[] = {1.0 / 3.0, -2.5, 1e30, 0x1p-140, NAN};
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++)
            for (int k = 0; k < GCK_K_COUNT; k++) {
                if ((n > 100000 && (k > GCK_K_ILL_SCALED || wi > 0)) || (n > MANY_FACTORS_MAX && wi > 1))
                    continue;
                const size_t off = (size_t)k % 4;
                double *acc64 = g_x64 + (off & 1), *x64 = g_y64 + (off & 1), *ref64 = g_z64;
                float *acc32 = g_x32 + off, *x32 = g_y32 + off, *ref32 = g_z32;
                gck_test_fill_f64(acc64, n, GCK_K_ILL_SCALED, n + 41);
                gck_test_fill_f32(x32, n, (gck_test_kind)k, n + 42);
                gck_test_fill_f64(x64, n, (gck_test_kind)k, n + 43);
                gck_test_fill_f32(acc32, n, GCK_K_UNIFORM, n + 44);
                const double w = ws[wi];
                const float fw = (float)w;
                const char *kn = gck_test_kind_name((gck_test_kind)k);

                for (size_t i = 0; i < n; i++)
                    ref64[i] = acc64[i] + (double)x32[i];
                p->isa->add_f32_to_f64(acc64, x32, n);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(ref64[i], acc64[i], "%s add_f32_to_f64 n=%zu i=%zu %s", p->isa->name, n, i, kn);

                for (size_t i = 0; i < n; i++)
                    ref64[i] = acc64[i] + (double)x32[i] * w;
                gck_axpy_f32_to_f64(acc64, w, x32, n);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(ref64[i], acc64[i], "%s axpy_f32_to_f64 n=%zu i=%zu %s", p->isa->name, n, i,
                                        kn);

                for (size_t i = 0; i < n; i++)
                    ref32[i] = acc32[i] + (float)x64[i];
                gck_add_f64_to_f32(acc32, x64, n);
                for (size_t i = 0; i < n; i++)
                    if (!gck_same_f32(ref32[i], acc32[i]))
                        fail_msg("%s add_f64_to_f32 n=%zu i=%zu %s: want %a got %a", p->isa->name, n, i, kn,
                                 (double)ref32[i], (double)acc32[i]);

                for (size_t i = 0; i < n; i++)
                    ref32[i] = acc32[i] + (float)x64[i] * fw;
                p->isa->axpy_f64_to_f32(acc32, fw, x64, n);
                for (size_t i = 0; i < n; i++)
                    if (!gck_same_f32(ref32[i], acc32[i]))
                        fail_msg("%s axpy_f64_to_f32 n=%zu i=%zu %s: want %a got %a", p->isa->name, n, i, kn,
                                 (double)ref32[i], (double)acc32[i]);
            }
    }
}

typedef void (*into64_fn)(double *dst, double w, const double *x, size_t n);
typedef void (*into32_fn)(float *dst, float w, const float *x, size_t n);

/* fn(dst, w, x, n) over poisoned dst gives want, element for element. */
static void check_into64(const char *isa, const char *what, into64_fn fn, const double *want, double *dst, double w,
                         const double *x, size_t n)
{
    memset(dst, 0x5a, n * 8);
    fn(dst, w, x, n);
    for (size_t i = 0; i < n; i++)
        gck_assert_same_f64(want[i], dst[i], "%s %s n=%zu i=%zu", isa, what, n, i);
}

static void check_into32(const char *isa, const char *what, into32_fn fn, const float *want, float *dst, float w,
                         const float *x, size_t n)
{
    memset(dst, 0x5a, n * 4);
    fn(dst, w, x, n);
    for (size_t i = 0; i < n; i++)
        if (!gck_same_f32(want[i], dst[i]))
            fail_msg("%s %s n=%zu i=%zu: want %a got %a", isa, what, n, i, (double)want[i], (double)dst[i]);
}

/* The first term of an accumulation: 0 + x*w, exactly axpy into zeros; and
 * scale_into, x*w, exactly scale of a copy; the streaming versions give the
 * same values at any alignment (the unaligned head). */
static void test_axpy_init(void **state)
{
    const gck_isa_pair *p = *state;
    const char *isa = p->isa->name;
    static const double ws[] = {1.0, -2.5, 0x1p-140, NAN};
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++)
            for (int k = 0; k < GCK_K_COUNT; k++) {
                if ((n > 100000 && (k > GCK_K_ILL_SCALED || wi > 0)) || (n > MANY_FACTORS_MAX && wi > 1))
                    continue;
                const size_t off = (size_t)k % 4;
                double *d64 = g_x64 + (off & 1), *x64 = g_y64 + (off & 1), *r64 = g_z64;
                float *d32 = g_x32 + off, *x32 = g_y32 + off, *r32 = g_z32;
                gck_test_fill_f64(x64, n, (gck_test_kind)k, n + 51);
                gck_test_fill_f32(x32, n, (gck_test_kind)k, n + 52);
                const double w = ws[wi];
                const float fw = (float)w;
                memset(r64, 0, n * 8);
                p->ref->axpy_f64(r64, w, x64, n);
                check_into64(isa, "axpy_init_f64", p->isa->axpy_init_f64, r64, d64, w, x64, n);
                check_into64(isa, "axpy_init_nt_f64", p->isa->axpy_init_nt_f64, r64, d64, w, x64, n);
                check_into64("public", "gck_axpy_init_nt_f64", gck_axpy_init_nt_f64, r64, d64, w, x64, n);
                memcpy(r64, x64, n * 8);
                p->ref->scale_f64(r64, w, n);
                check_into64(isa, "scale_into_f64", p->isa->scale_into_f64, r64, d64, w, x64, n);
                check_into64(isa, "scale_into_nt_f64", p->isa->scale_into_nt_f64, r64, d64, w, x64, n);
                check_into64("public", "gck_scale_into_nt_f64", gck_scale_into_nt_f64, r64, d64, w, x64, n);
                memset(r32, 0, n * 4);
                p->ref->axpy_f32(r32, fw, x32, n);
                check_into32("public", "gck_axpy_init_f32", gck_axpy_init_f32, r32, d32, fw, x32, n);
                check_into32(isa, "axpy_init_nt_f32", p->isa->axpy_init_nt_f32, r32, d32, fw, x32, n);
                memcpy(r32, x32, n * 4);
                p->ref->scale_f32(r32, fw, n);
                check_into32(isa, "scale_into_f32", p->isa->scale_into_f32, r32, d32, fw, x32, n);
                check_into32(isa, "scale_into_nt_f32", p->isa->scale_into_nt_f32, r32, d32, fw, x32, n);
                check_into32("public", "gck_scale_into_f32", gck_scale_into_f32, r32, d32, fw, x32, n);
                /* across types */
                memset(r64, 0, n * 8);
                p->ref->axpy_f32_to_f64(r64, w, x32, n);
                gck_axpy_init_f32_to_f64(d64, w, x32, n);
                for (size_t i = 0; i < n; i++)
                    gck_assert_same_f64(r64[i], d64[i], "%s axpy_init_f32_to_f64 n=%zu i=%zu", isa, n, i);
                memset(r32, 0, n * 4);
                p->ref->axpy_f64_to_f32(r32, fw, x64, n);
                p->isa->axpy_init_f64_to_f32(d32, fw, x64, n);
                for (size_t i = 0; i < n; i++)
                    if (!gck_same_f32(r32[i], d32[i]))
                        fail_msg("%s axpy_init_f64_to_f32 n=%zu i=%zu", isa, n, i);
            }
    }
    /* -0 in, +0 out; scale_into keeps -0 */
    const double nz = -0.0;
    double out = 1.0;
    gck_axpy_init_f64(&out, 1.0, &nz, 1);
    assert_false(signbit(out));
    gck_scale_into_f64(&out, 2.0, &nz, 1);
    assert_true(out == 0.0 && signbit(out));
    const float nzf = -0.0f;
    float outf = 1.0f;
    gck_scale_into_nt_f32(&outf, 3.0f, &nzf, 1);
    assert_true(outf == 0.0f && signbit(outf));
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_fused_sumsq),
                 GCK_ISA_TEST(test_axpy_fused_blocks),
                 GCK_ISA_TEST(test_mixed_precision),
                 GCK_ISA_TEST(test_axpy_init))
