/* tests/test_kernels_ftz.c - flush-to-zero / denormals-are-zero set by the process: every ISA still equals scalar (per ISA).
 *
 * -Ofast programs set MXCSR.FTZ|DAZ (x86) or FPCR.FZ (AArch64) at startup.
 * With the mode on in every thread, each kernel slot on the ISA under test
 * must give the bits of the scalar slot, and the public kernels and list
 * functions the bits of the scalar ISA, on inputs full of denormals and on
 * inputs whose results are denormal. The test also pins what the mode
 * changes (kernels.h): denormal inputs read as zero, denormal results
 * become zero. Architectures without such a mode (s390x) run the
 * comparisons in the default mode and say so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define FTZ_MODE 1
#elif defined(__aarch64__)
#define FTZ_MODE 1
#else
#define FTZ_MODE 0
#endif

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) the scalar ISA's
 * run of the public functions skips the ISA-on-1-thread pass: it is the
 * scalar reference pass again, the same code (32 s of qemu-s390x for the
 * three passes). */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif


static void ftz_this_thread(int on)
{
#if defined(__x86_64__) || defined(__i386__)
    const unsigned bits = 0x8040u; /* FTZ (bit 15) | DAZ (bit 6) */
    _mm_setcsr(on ? (_mm_getcsr() | bits) : (_mm_getcsr() & ~bits));
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr) : : "memory");
    fpcr = on ? (fpcr | (UINT64_C(1) << 24)) : (fpcr & ~(UINT64_C(1) << 24)); /* FZ */
    __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr) : "memory");
#else
    (void)on;
#endif
}

/* The mode is per thread: set it on this one and on every OpenMP worker
 * (the pool threads the later regions reuse). */
static void ftz_all_threads(int on)
{
    ftz_this_thread(on);
#if GCK_HAVE_OPENMP
#pragma omp parallel num_threads(4)
    ftz_this_thread(on);
#endif
}

static int setup(void **state)
{
    (void)state;
    if (!FTZ_MODE)
        fprintf(stderr, "no flush-to-zero mode on this architecture: the comparisons run in the default mode\n");
    ftz_all_threads(1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ftz_all_threads(0);
    return 0;
}

/* Inputs: denormals only, tiny normals whose squares or products are
 * denormal, and normal values with denormals mixed in. */
enum { NFAM = 4 };
static const char *const fam_name[NFAM] = {"denormal", "tiny", "mixed", "uniform"};

static void fill64(double *x, size_t n, int fam, uint64_t seed)
{
    switch (fam) {
    case 0: gck_test_fill_f64(x, n, GCK_K_DENORMAL, seed); break;
    case 1: /* |x| ~ 2^-520: squares land in the denormal range */
        gck_test_fill_f64(x, n, GCK_K_UNIFORM, seed);
        for (size_t i = 0; i < n; i++)
            x[i] = ldexp(x[i], -520 - (int)(i % 40));
        break;
    case 2:
        gck_test_fill_f64(x, n, GCK_K_UNIFORM, seed);
        for (size_t i = 0; i < n; i += 3)
            x[i] = ldexp(x[i], -1030);
        break;
    default: gck_test_fill_f64(x, n, GCK_K_UNIFORM, seed); break;
    }
}

static void fill32(float *x, size_t n, int fam, uint64_t seed)
{
    switch (fam) {
    case 0: gck_test_fill_f32(x, n, GCK_K_DENORMAL, seed); break;
    case 1: /* products with w and quotients land in the f32 denormal range */
        gck_test_fill_f32(x, n, GCK_K_UNIFORM, seed);
        for (size_t i = 0; i < n; i++)
            x[i] = ldexpf(x[i], -120 - (int)(i % 8));
        break;
    case 2:
        gck_test_fill_f32(x, n, GCK_K_UNIFORM, seed);
        for (size_t i = 0; i < n; i += 3)
            x[i] = ldexpf(x[i], -130);
        break;
    default: gck_test_fill_f32(x, n, GCK_K_UNIFORM, seed); break;
    }
}

static const size_t g_sizes[] = {0, 1, 7, 63, 64, 65, 513, 1001, GCK_BLOCK};
#define NSIZES (sizeof g_sizes / sizeof g_sizes[0])
#define CAP (GCK_BLOCK + 8)

static void same_arrays64(const double *w, const double *g, size_t n, const char *what, size_t sz, int fam)
{
    for (size_t i = 0; i < n; i++)
        if (!gck_same_f64(w[i], g[i]))
            fail_msg("%s n=%zu %s [%zu]: want %a got %a", what, sz, fam_name[fam], i, w[i], g[i]);
}

static void same_arrays32(const float *w, const float *g, size_t n, const char *what, size_t sz, int fam)
{
    for (size_t i = 0; i < n; i++)
        if (!gck_same_f32(w[i], g[i]))
            fail_msg("%s n=%zu %s [%zu]: want %a got %a", what, sz, fam_name[fam], i, (double)w[i], (double)g[i]);
}

/* Every floating-point slot of the ISA's table against the scalar table. */
static void test_slots_match_scalar(void **state)
{
    const gck_isa_pair *p = *state;
    const gck_kernel_table *r = p->ref, *t = p->isa;
    double *a = gck_test_alloc(CAP * 8), *b = gck_test_alloc(CAP * 8), *w64 = gck_test_alloc(CAP * 8),
           *g64 = gck_test_alloc(CAP * 8);
    float *f = gck_test_alloc(CAP * 4), *h = gck_test_alloc(CAP * 4), *w32 = gck_test_alloc(CAP * 4),
          *g32 = gck_test_alloc(CAP * 4);
    uint16_t *hx = gck_test_alloc(CAP * 2), *hy = gck_test_alloc(CAP * 2), *hn = gck_test_alloc(CAP * 2);
    const char *name = t->name;
#define RED2(slot, u, v, n_)                                                                                \
    gck_assert_same_f64(r->slot(u, v, n_), t->slot(u, v, n_), "%s " #slot " " #v " n=%zu %s", name, n_, \
                        fam_name[fam])
    for (size_t si = 0; si < NSIZES; si++)
        for (int fam = 0; fam < NFAM; fam++) {
            const size_t n = g_sizes[si];
            const size_t off = (size_t)fam & 1; /* misaligned too */
            double *x = a + off, *y = b;
            float *xf = f + off, *yf = h;
            fill64(x, n, fam, n + 1);
            fill64(y, n, (fam + 1) % NFAM, n + 2);
            fill32(xf, n, fam, n + 3);
            fill32(yf, n, (fam + 1) % NFAM, n + 4);
#define RED(slot, ...)                                                                              \
    gck_assert_same_f64(r->slot(__VA_ARGS__), t->slot(__VA_ARGS__), "%s " #slot " n=%zu %s", name, n, \
                        fam_name[fam])
            RED(sumsq_f64_block, x, n);
            RED(sumsq_f32_block, xf, n);
            RED(sumsq_scaled_f64_block, x, 0x1p600, n);
            RED(sumsq_scaled_f64_block, x, 0x1p-30, n);
            RED(dist2_f64_block, x, y, n);
            RED(dist2_f32_block, xf, yf, n);
            RED(asum_f64_block, x, n);
            RED(asum_f32_block, xf, n);
            RED(powsum_f64_block, x, 3.0, 0x1p500, n);
            RED(powsum_f64_block, x, 0.5, 1.0, n);
            RED(powsum_f32_block, xf, 3.0, 0x1p100, n);
            RED(powsum_f32_block, xf, 0.5, 1.0, n);
            RED(amax_f64, x, n);
            RED(amax_f32, xf, n);
#undef RED
            /* fused: values and sums */
            static const double ds[] = {3.0, 0x1p-60, 1e30};
            for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
                const double d = ds[di];
                gck_assert_same_f64(r->div_sumsq_f64_block(w64, x, d, n), t->div_sumsq_f64_block(g64, x, d, n),
                                    "%s div_sumsq_f64 d=%a n=%zu %s", name, d, n, fam_name[fam]);
                same_arrays64(w64, g64, n, "div_sumsq_f64 values", n, fam);
                gck_assert_same_f64(r->scale_sumsq_f64_block(w64, x, 1 / d, n),
                                    t->scale_sumsq_f64_block(g64, x, 1 / d, n), "%s scale_sumsq_f64 n=%zu %s", name, n,
                                    fam_name[fam]);
                same_arrays64(w64, g64, n, "scale_sumsq_f64 values", n, fam);
                const float df = (float)(d > 1e20 ? 1e20 : d);
                gck_assert_same_f64(r->div_sumsq_f32_block(w32, xf, df, n), t->div_sumsq_f32_block(g32, xf, df, n),
                                    "%s div_sumsq_f32 n=%zu %s", name, n, fam_name[fam]);
                same_arrays32(w32, g32, n, "div_sumsq_f32 values", n, fam);
                gck_assert_same_f64(r->scale_sumsq_f32_block(w32, xf, 1 / df, n),
                                    t->scale_sumsq_f32_block(g32, xf, 1 / df, n), "%s scale_sumsq_f32 n=%zu %s", name,
                                    n, fam_name[fam]);
                same_arrays32(w32, g32, n, "scale_sumsq_f32 values", n, fam);
            }
            /* elementwise: every slot into a copy of y */
#define EW64(slot, ...)                                    \
    do {                                                   \
        memcpy(w64, y, n * 8);                             \
        memcpy(g64, y, n * 8);                             \
        r->slot(w64, __VA_ARGS__);                         \
        t->slot(g64, __VA_ARGS__);                         \
        same_arrays64(w64, g64, n, #slot, n, fam);         \
    } while (0)
#define EW32(slot, ...)                                    \
    do {                                                   \
        memcpy(w32, yf, n * 4);                            \
        memcpy(g32, yf, n * 4);                            \
        r->slot(w32, __VA_ARGS__);                         \
        t->slot(g32, __VA_ARGS__);                         \
        same_arrays32(w32, g32, n, #slot, n, fam);         \
    } while (0)
            EW64(add_f64, x, n);
            EW32(add_f32, xf, n);
            EW64(axpy_f64, 0x1p-40, x, n);
            EW32(axpy_f32, 0x1p-10f, xf, n);
            EW64(scale_f64, 0x1p-40, n);
            EW32(scale_f32, 0x1p-10f, n);
            EW64(add_f32_to_f64, xf, n);
            EW64(axpy_f32_to_f64, 0x1p-900, xf, n);
            EW32(add_f64_to_f32, x, n);
            EW32(axpy_f64_to_f32, 0x1p-10f, x, n);
            EW64(axpy_init_f64, 0x1p-40, x, n);
            EW32(axpy_init_f32, 0x1p-10f, xf, n);
            EW64(axpy_init_f32_to_f64, 0x1p-900, xf, n);
            EW32(axpy_init_f64_to_f32, 0x1p-10f, x, n);
#undef EW64
#undef EW32
            /* the axpy forms of the fused f32 slots, values and sums */
            memcpy(w32, yf, n * 4), memcpy(g32, yf, n * 4);
            gck_assert_same_f64(r->axpy_div_sumsq_f32_block(w32, xf, 0.5f, 3.0f, n),
                                t->axpy_div_sumsq_f32_block(g32, xf, 0.5f, 3.0f, n), "%s axpy_div_sumsq_f32 n=%zu %s",
                                name, n, fam_name[fam]);
            same_arrays32(w32, g32, n, "axpy_div_sumsq_f32 values", n, fam);
            memcpy(w32, yf, n * 4), memcpy(g32, yf, n * 4);
            gck_assert_same_f64(r->axpy_scale_sumsq_f32_block(w32, xf, 1.0f, 0x1p-10f, n),
                                t->axpy_scale_sumsq_f32_block(g32, xf, 1.0f, 0x1p-10f, n),
                                "%s axpy_scale_sumsq_f32 n=%zu %s", name, n, fam_name[fam]);
            same_arrays32(w32, g32, n, "axpy_scale_sumsq_f32 values", n, fam);
            /* 2-byte dist2 on the f32 family's top halves, against y's
             * (apart) and against themselves with the low bits changed
             * (near: the f32-difference path of AVX-512, whose differences
             * of denormals flush) */
            for (size_t i = 0; i < n; i++) {
                uint32_t u, v;
                memcpy(&u, &xf[i], 4), memcpy(&v, &yf[i], 4);
                hx[i] = (uint16_t)(u >> 16), hy[i] = (uint16_t)(v >> 16), hn[i] = (uint16_t)(hx[i] ^ (i % 7));
            }
            RED2(dist2_bf16_block, hx, hy, n);
            RED2(dist2_bf16_block, hx, hn, n);
            RED2(dist2_f16_block, hx, hy, n);
            RED2(dist2_f16_block, hx, hn, n);
            /* max |x| of 2-byte words (the SIMD ISAs compare the words and
             * widen the largest; the reference compares widened values) */
            gck_assert_same_f64(r->amax_bf16(hx, n), t->amax_bf16(hx, n), "%s amax_bf16 n=%zu %s", name, n,
                                fam_name[fam]);
            gck_assert_same_f64(r->amax_f16(hx, n), t->amax_f16(hx, n), "%s amax_f16 n=%zu %s", name, n,
                                fam_name[fam]);
        }
    free(a), free(b), free(w64), free(g64), free(f), free(h), free(w32), free(g32), free(hx), free(hy), free(hn);
}

/* The public kernels and list functions on the ISA and on scalar, 1 and 3
 * threads, above the OpenMP threshold. */
static void test_public_match_scalar(void **state)
{
    const gck_isa_pair *p = *state;
    const size_t n = 3 * GCK_PARALLEL_MIN + 5;
    double *x = gck_test_alloc(n * 8), *y = gck_test_alloc(n * 8), *acc = gck_test_alloc(n * 8);
    float *xf = gck_test_alloc(n * 4), *yf = gck_test_alloc(n * 4);
    enum { NR = 14 };
    for (int fam = 0; fam < NFAM; fam++) {
        fill64(x, n, fam, 5);
        fill32(xf, n, fam, 6);
        double want[NR] = {0};
        uint64_t want_acc = 0;
        for (int run = 0; run < 3; run++) { /* 0: scalar 1 thread; 1, 2: the ISA on 1 and 3 threads */
            if (GCK_TEST_EMULATED && run == 1 && p->isa == p->ref)
                continue;
            assert_int_equal(gck_isa_select(run == 0 ? GCK_ISA_SCALAR : p->isa->isa), GCK_OK);
            gck_test_set_threads(run == 2 ? 3 : 1);
            void *data[2] = {x, xf};
            size_t lens[2] = {n, n};
            gck_dtype dt[2] = {GCK_DTYPE_F64, GCK_DTYPE_F32};
            const gck_tensor_list l = {2, data, lens, GCK_DTYPE_F64, dt};
            double got[NR];
            got[0] = gck_sumsq_f64(x, n);
            got[1] = gck_sumsq_f32(xf, n);
            got[2] = gck_l2norm_f64(x, n);
            got[3] = gck_pnorm_f64(x, n, 3.0);
            got[4] = gck_pnorm_f64(x, n, 1.0);
            got[5] = gck_pnorm_f32(xf, n, 0.5);
            got[6] = gck_pnorm_f64(x, n, INFINITY);
            got[7] = gck_dist2_f64(x, x + 1, n - 1);
            assert_int_equal(gck_tensors_norm(&l, 2.0, NULL, &got[8]), GCK_OK);
            assert_int_equal(gck_tensors_norm(&l, 3.0, NULL, &got[9]), GCK_OK);
            assert_int_equal(gck_tensors_norm(&l, INFINITY, NULL, &got[10]), GCK_OK);
            /* list updates on copies: div_sumsq, clip, axpy */
            memcpy(y, x, n * 8);
            memcpy(yf, xf, n * 4);
            void *cdata[2] = {y, yf};
            const gck_tensor_list lc = {2, cdata, lens, GCK_DTYPE_F64, dt};
            assert_int_equal(gck_tensors_div_sumsq(&lc, 0x1p-20, NULL, &got[11]), GCK_OK);
            gck_clip_info info;
            assert_int_equal(gck_tensors_clip_by_norm(&lc, 1e-300, 2.0, 0.0, 0, &info), GCK_OK);
            got[12] = info.coef;
            memset(acc, 0, n * 8);
            gck_axpy_f64(acc, 0x1p-30, y, n);
            gck_add_f32_to_f64(acc, yf, n);
            got[13] = gck_sumsq_f64(acc, n);
            const uint64_t acc_hash = gck_fnv1a64(acc, n * 8, GCK_FNV1A64_INIT) ^ gck_fnv1a64(yf, n * 4, 0) ^
                                      gck_fnv1a64(y, n * 8, 1);
            for (int k = 0; k < NR; k++) {
                if (run == 0)
                    want[k] = got[k];
                else
                    gck_assert_same_f64(want[k], got[k], "%s result %d %s threads %d", p->isa->name, k, fam_name[fam],
                                        run == 2 ? 3 : 1);
            }
            if (run == 0)
                want_acc = acc_hash;
            else if (want_acc != acc_hash)
                fail_msg("%s: updated arrays differ from scalar (%s, threads %d)", p->isa->name, fam_name[fam],
                         run == 2 ? 3 : 1);
        }
    }
    assert_int_equal(gck_isa_select(p->isa->isa), GCK_OK);
    gck_test_set_threads(2);
    free(x), free(y), free(acc), free(xf), free(yf);
}

/* What the mode changes (kernels.h): denormal inputs read as zero, denormal
 * results are flushed to zero (sign kept). */
static void test_what_changes(void **state)
{
    (void)state;
    if (!FTZ_MODE) {
        fprintf(stderr, "no flush-to-zero mode here: nothing changes\n");
        return;
    }
    enum { N = 1000 };
    double d[N], acc[N];
    float df[N];
    gck_test_fill_f64(d, N, GCK_K_DENORMAL, 1);
    gck_test_fill_f32(df, N, GCK_K_DENORMAL, 2);
    gck_assert_same_f64(0.0, gck_sumsq_f64(d, N), "sumsq of denormals");
    gck_assert_same_f64(0.0, gck_l2norm_f64(d, N), "l2norm of denormals");
    gck_assert_same_f64(0.0, gck_sumsq_f32(df, N), "sumsq_f32 of denormals (the widening reads 0)");
    gck_assert_same_f64(0.0, gck_pnorm_f64(d, N, 1.0), "1-norm of denormals");
    gck_assert_same_f64(0.0, gck_pnorm_f64(d, N, 3.0), "3-norm of denormals");
    gck_assert_same_f64(0.0, gck_pnorm_f64(d, N, INFINITY), "max |x| of denormals");
    gck_assert_same_f64(0.0, gck_pnorm_f32(df, N, INFINITY), "max |x| of f32 denormals");
    memset(acc, 0, sizeof acc);
    gck_add_f64(acc, d, N);
    for (size_t i = 0; i < N; i++)
        gck_assert_same_f64(0.0, acc[i], "0 + denormal");
    for (size_t i = 0; i < N; i++)
        acc[i] = (i & 1) ? -0x1p-1000 : 0x1p-1000;
    gck_scale_f64(acc, 0x1p-40, N); /* exact result 2^-1040: denormal, flushed */
    for (size_t i = 0; i < N; i++)
        gck_assert_same_f64((i & 1) ? -0.0 : 0.0, acc[i], "flushed product keeps its sign");
    /* normal values are untouched by the mode */
    acc[0] = 0x1p-1000;
    gck_scale_f64(acc, 0x1p-22, 1);
    gck_assert_same_f64(0x1p-1022, acc[0], "smallest normal result");
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_slots_match_scalar),
                 GCK_ISA_TEST(test_public_match_scalar),
                 GCK_ISA_TEST(test_what_changes))
