/* tests/test_kernels_elementwise.c - add/axpy/scale on one ISA vs scalar and vs the C expression. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#include "api_list.h"

static const double g_weights[] = {0.5, -3.0, 1.0 / 3.0, 1e300, 1e-300, 0x1p-1070, 0.0, -0.0, INFINITY, NAN};
#define NW (sizeof g_weights / sizeof g_weights[0])

/* Above this size only the first two weights: the kernels' arithmetic does
 * not depend on n (tails and misalignments are the small sizes' job, every
 * weight meets those), and under an emulator or the sanitizers
 * (GCK_TEST_EMULATED) every weight at every block size took 20-50 s of qemu. */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif
#define MANY_FACTORS_MAX ((size_t)(GCK_TEST_EMULATED ? 4096 : 100000))

static double *g_x64, *g_acc64, *g_ref64, *g_out64;
static float *g_x32, *g_acc32, *g_ref32, *g_out32;

static int setup(void **state)
{
    (void)state;
    const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;
    g_x64 = gck_test_alloc(cap * 8);
    g_acc64 = gck_test_alloc(cap * 8);
    g_ref64 = gck_test_alloc(cap * 8);
    g_out64 = gck_test_alloc(cap * 8);
    g_x32 = gck_test_alloc(cap * 4);
    g_acc32 = gck_test_alloc(cap * 4);
    g_ref32 = gck_test_alloc(cap * 4);
    g_out32 = gck_test_alloc(cap * 4);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_x64), free(g_acc64), free(g_ref64), free(g_out64);
    free(g_x32), free(g_acc32), free(g_ref32), free(g_out32);
    return 0;
}

typedef enum op { OP_ADD, OP_AXPY, OP_SCALE } op;
static const char *const op_names[] = {"add", "axpy", "scale"};

static void run_f64(const gck_kernel_table *t, op o, double *acc, double w, const double *x, size_t n)
{
    switch (o) {
    case OP_ADD: t->add_f64(acc, x, n); break;
    case OP_AXPY: t->axpy_f64(acc, w, x, n); break;
    case OP_SCALE: t->scale_f64(acc, w, n); break;
    }
}

static void run_f64_public(op o, double *acc, double w, const double *x, size_t n)
{
    switch (o) {
    case OP_ADD: gck_add_f64(acc, x, n); break;
    case OP_AXPY: gck_axpy_f64(acc, w, x, n); break;
    case OP_SCALE: gck_scale_f64(acc, w, n); break;
    }
}

/* The definition: the plain C expression, built with -ffp-contract=off. */
static double expr_f64(op o, double acc, double w, double x)
{
    switch (o) {
    case OP_ADD: return acc + x;
    case OP_AXPY: return acc + w * x;
    default: return acc * w;
    }
}

static void test_f64_elementwise(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (int o = OP_ADD; o <= OP_SCALE; o++)
            for (size_t wi = 0; wi < NW; wi++) {
                if ((o == OP_ADD && wi > 0) || (n > MANY_FACTORS_MAX && wi > 1))
                    continue;
                for (int k = 0; k < GCK_K_COUNT; k++) {
                    if (n > 100000 && k > GCK_K_ILL_SCALED)
                        continue;
                    const size_t off = (size_t)k & 1; /* misalign every other family */
                    double *x = g_x64 + off, *acc = g_acc64 + off, *ref = g_ref64 + off, *out = g_out64 + off;
                    gck_test_fill_f64(x, n, (gck_test_kind)k, n + 11);
                    gck_test_fill_f64(acc, n, (gck_test_kind)((k + 3) % GCK_K_COUNT), n + 12);
                    const double w = g_weights[wi];
                    memcpy(ref, acc, n * 8);
                    memcpy(out, acc, n * 8);
                    run_f64(p->ref, (op)o, ref, w, x, n);
                    run_f64(p->isa, (op)o, out, w, x, n);
                    for (size_t i = 0; i < n; i++) {
                        gck_assert_same_f64(expr_f64((op)o, acc[i], w, x[i]), ref[i], "scalar %s f64 i=%zu",
                                            op_names[o], i);
                        gck_assert_same_f64(ref[i], out[i], "%s %s_f64 n=%zu i=%zu w=%a %s", p->isa->name,
                                            op_names[o], n, i, w, gck_test_kind_name((gck_test_kind)k));
                    }
                    memcpy(out, acc, n * 8);
                    run_f64_public((op)o, out, w, x, n);
                    assert_memory_equal(ref, out, n * 8); /* no NaN payload freedom: same ops, same order */
                }
            }
    }
}

static void run_f32(const gck_kernel_table *t, op o, float *acc, float w, const float *x, size_t n)
{
    switch (o) {
    case OP_ADD: t->add_f32(acc, x, n); break;
    case OP_AXPY: t->axpy_f32(acc, w, x, n); break;
    case OP_SCALE: t->scale_f32(acc, w, n); break;
    }
}

static void run_f32_public(op o, float *acc, float w, const float *x, size_t n)
{
    switch (o) {
    case OP_ADD: gck_add_f32(acc, x, n); break;
    case OP_AXPY: gck_axpy_f32(acc, w, x, n); break;
    case OP_SCALE: gck_scale_f32(acc, w, n); break;
    }
}

static float expr_f32(op o, float acc, float w, float x)
{
    switch (o) {
    case OP_ADD: return acc + x;
    case OP_AXPY: return acc + w * x;
    default: return acc * w;
    }
}

static void test_f32_elementwise(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < gck_test_nsizes; si++) {
        const size_t n = gck_test_sizes[si];
        for (int o = OP_ADD; o <= OP_SCALE; o++)
            for (size_t wi = 0; wi < NW; wi++) {
                if ((o == OP_ADD && wi > 0) || (n > MANY_FACTORS_MAX && wi > 1))
                    continue;
                for (int k = 0; k < GCK_K_COUNT; k++) {
                    if (n > 100000 && k > GCK_K_ILL_SCALED)
                        continue;
                    const size_t off = (size_t)k % (GCK_TEST_MAX_OFFSET + 1);
                    float *x = g_x32 + off, *acc = g_acc32 + off, *ref = g_ref32 + off, *out = g_out32 + off;
                    gck_test_fill_f32(x, n, (gck_test_kind)k, n + 13);
                    gck_test_fill_f32(acc, n, (gck_test_kind)((k + 5) % GCK_K_COUNT), n + 14);
                    const float w = (float)g_weights[wi];
                    memcpy(ref, acc, n * 4);
                    memcpy(out, acc, n * 4);
                    run_f32(p->ref, (op)o, ref, w, x, n);
                    run_f32(p->isa, (op)o, out, w, x, n);
                    for (size_t i = 0; i < n; i++) {
                        if (!gck_same_f32(expr_f32((op)o, acc[i], w, x[i]), ref[i]))
                            fail_msg("scalar %s f32 i=%zu", op_names[o], i);
                        if (!gck_same_f32(ref[i], out[i]))
                            fail_msg("%s %s_f32 n=%zu i=%zu want %a got %a", p->isa->name, op_names[o], n, i,
                                     (double)ref[i], (double)out[i]);
                    }
                    memcpy(out, acc, n * 4);
                    run_f32_public((op)o, out, w, x, n);
                    assert_memory_equal(ref, out, n * 4);
                }
            }
    }
}

/* ---- big arrays: the segmented walk (elementwise.h, GCK_EW_SEGS) ----------------
 * x86 walks arrays of at least 2 MiB (of x) four 4 KiB segments at a time
 * when both arrays have elements of one size (with GRADCKPT_PAGE_STREAMS=4,
 * which CTest sets for the .avx2/.avx512 entries; with 1, as on Zen 5, the
 * _pages1 entries walk arrays from 4 MiB in order, the plain loop the
 * smaller sizes take, and these ones in segments still); the sizes above stop below
 * that. Every elementwise kernel of api_list.h (those that do not take the
 * walk as well), on a size past it with an odd tail (not a whole number of
 * segment groups), both arrays one element off their alignment, random
 * bits in both (NaN, Inf, denormals, every exponent): bit for bit the
 * scalar reference (NaNs as NaNs). On ISAs without segments this is one
 * more large-size check. */
#define SEG_MIN_BYTES ((size_t)2 << 20)

typedef void (*seg_run)(const gck_kernel_table *t, void *a, const void *x, size_t n);
/* One wrapper per elementwise kernel of api_list.h (public name == slot name);
 * the other shapes expand to nothing. */
#define SEG_FN(name, shape, A, X) SEG_FN_##shape(name, A, X)
#define SEG_FN_ADD(name, A, X)                                                                  \
    static void seg_##name(const gck_kernel_table *t, void *a, const void *x, size_t n)          \
    {                                                                                           \
        t->name((GCK_CT(A) *)a, (const GCK_CT(X) *)x, n);                                       \
    }
#define SEG_FN_CONVERT SEG_FN_ADD
#define SEG_FN_AXPY(name, A, X)                                                                 \
    static void seg_##name(const gck_kernel_table *t, void *a, const void *x, size_t n)          \
    {                                                                                           \
        t->name((GCK_CT(A) *)a, (GCK_CT(A))-1.5, (const GCK_CT(X) *)x, n);                      \
    }
#define SEG_FN_AXPY_INIT SEG_FN_AXPY
/* acc + (x + (acc' + x)): three inputs, a copy of acc's first values among them */
#define SEG_FN_RFOLD(name, A, X)                                                                \
    static void seg_##name(const gck_kernel_table *t, void *a, const void *x, size_t n)          \
    {                                                                                           \
        const GCK_CT(X) *xs_[3] = {(const GCK_CT(X) *)x, (const GCK_CT(X) *)x + 1, (const GCK_CT(X) *)x}; \
        t->name((GCK_CT(A) *)a, xs_, 3, 0, n - 1);                                              \
    }
#define SEG_FN_SCALE(name, A, X)                                                                \
    static void seg_##name(const gck_kernel_table *t, void *a, const void *x, size_t n)          \
    {                                                                                           \
        (void)x;                                                                                \
        t->name((GCK_CT(A) *)a, (GCK_CC(A))0.3, n);                                             \
    }
#define SEG_NONE(name, A, X)
#define SEG_FN_REDUCE SEG_NONE
#define SEG_FN_REDUCE2 SEG_NONE
#define SEG_FN_PNORM SEG_NONE
#define SEG_FN_FUSED SEG_NONE
#define SEG_FN_SHUFFLE SEG_NONE
#define SEG_FN_UNSHUFFLE SEG_NONE
#define SEG_FN_UNSHUFFLE_PLANES SEG_NONE
#define SEG_FN_HASH SEG_NONE
#define SEG_FN_SPARSE_SPLIT SEG_NONE
#define SEG_FN_SPARSE_MERGE SEG_NONE
GCK_API_KERNEL_LIST(SEG_FN)

/* element formats: how two outputs compare (NaN equals NaN) */
enum { SEG_F64, SEG_F32, SEG_BF16, SEG_F16 };
#define SEG_FMT_f64 SEG_F64
#define SEG_FMT_f32 SEG_F32
#define SEG_FMT_bf16 SEG_BF16
#define SEG_FMT_f16 SEG_F16
#define SEG_ROW(name, shape, A, X) SEG_ROW_##shape(name, A, X)
#define SEG_ROW_ONE(name, A, X) {#name, seg_##name, sizeof(GCK_CT(A)), sizeof(GCK_CT(X)), SEG_FMT_##A},
#define SEG_ROW_ADD SEG_ROW_ONE
#define SEG_ROW_CONVERT SEG_ROW_ONE
#define SEG_ROW_AXPY SEG_ROW_ONE
#define SEG_ROW_AXPY_INIT SEG_ROW_ONE
#define SEG_ROW_RFOLD SEG_ROW_ONE
#define SEG_ROW_SCALE SEG_ROW_ONE
#define SEG_ROW_REDUCE SEG_NONE
#define SEG_ROW_REDUCE2 SEG_NONE
#define SEG_ROW_PNORM SEG_NONE
#define SEG_ROW_FUSED SEG_NONE
#define SEG_ROW_SHUFFLE SEG_NONE
#define SEG_ROW_UNSHUFFLE SEG_NONE
#define SEG_ROW_UNSHUFFLE_PLANES SEG_NONE
#define SEG_ROW_HASH SEG_NONE
#define SEG_ROW_SPARSE_SPLIT SEG_NONE
#define SEG_ROW_SPARSE_MERGE SEG_NONE

static int seg_same(const unsigned char *a, const unsigned char *b, int fmt)
{
    if (fmt == SEG_F64) {
        double u, v;
        memcpy(&u, a, 8), memcpy(&v, b, 8);
        return gck_same_f64(u, v);
    }
    if (fmt == SEG_F32) {
        float u, v;
        memcpy(&u, a, 4), memcpy(&v, b, 4);
        return gck_same_f32(u, v);
    }
    uint16_t u, v;
    memcpy(&u, a, 2), memcpy(&v, b, 2);
    const unsigned e = fmt == SEG_BF16 ? 0x7f80u : 0x7c00u, m = fmt == SEG_BF16 ? 0x7fu : 0x3ffu;
    return u == v || ((u & e) == e && (u & m) && (v & e) == e && (v & m));
}

static void test_segmented(void **state)
{
    const gck_isa_pair *p = *state;
    static const struct {
        const char *name;
        seg_run run;
        size_t asz, xsz;
        int fmt;
    } cases[] = {GCK_API_KERNEL_LIST(SEG_ROW)};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const size_t asz = cases[c].asz, xsz = cases[c].xsz; /* scale: x is the array itself, unused */
        const size_t wide = asz > xsz ? asz : xsz;
        /* past the threshold by three groups of four segments and an odd tail */
        const size_t n = SEG_MIN_BYTES / xsz + 3 * 4 * (4096 / wide) + 37;
        unsigned char *x = gck_test_alloc((n + 1) * 8), *a0 = gck_test_alloc((n + 1) * 8);
        unsigned char *ref = gck_test_alloc((n + 1) * 8), *out = gck_test_alloc((n + 1) * 8);
        uint64_t st = 0x5e9 + c;
        for (size_t i = 0; i < (n + 1) * 8; i += 8) {
            const uint64_t r = gck_test_rand(&st), q = gck_test_rand(&st);
            memcpy(x + i, &r, 8), memcpy(a0 + i, &q, 8);
        }
        /* one element off the allocation's alignment */
        unsigned char *xs = x + xsz, *as = a0 + asz, *rs = ref + asz, *os = out + asz;
        memcpy(rs, as, n * asz), memcpy(os, as, n * asz);
        cases[c].run(p->ref, rs, xs, n);
        cases[c].run(p->isa, os, xs, n);
        for (size_t i = 0; i < n; i++)
            if (!seg_same(rs + i * asz, os + i * asz, cases[c].fmt))
                fail_msg("%s %s n=%zu: element %zu differs from the scalar reference", p->isa->name, cases[c].name, n, i);
        free(x), free(a0), free(ref), free(out);
    }
}

/* ---- add_rfold: acc + (x0 + (x1 + ... + x_{m-1})) ------------------------------
 * m = 1..6 and 20 inputs (2, 3, 4 take the unrolled loops, the others the
 * general one, 20 the caller's pointer array), each input misaligned on its own (0..3 elements), every fill kind
 * (NaN, Inf, denormals, huge values), every test size: the scalar reference
 * against the C expression, this ISA against the reference, the public
 * function (chunked across threads) against both, and an input that is acc
 * itself. */
#define RFOLD_MAX 6
#define RFOLD_TEST(T, SFX, FILL, SAME)                                                                    \
    static void test_add_rfold_##SFX(void **state)                                                       \
    {                                                                                                    \
        const gck_isa_pair *p = *state;                                                                  \
        const size_t cap = gck_test_max_size() + GCK_TEST_MAX_OFFSET + 8;                                \
        T *in[RFOLD_MAX], *acc = gck_test_alloc(cap * sizeof(T)), *ref = gck_test_alloc(cap * sizeof(T));  \
        T *out = gck_test_alloc(cap * sizeof(T)), *pub = gck_test_alloc(cap * sizeof(T));                \
        for (int q = 0; q < RFOLD_MAX; q++)                                                              \
            in[q] = gck_test_alloc(cap * sizeof(T));                                                     \
        for (size_t si = 0; si < gck_test_nsizes; si++) {                                                \
            const size_t n = gck_test_sizes[si];                                                         \
            for (int k = 0; k < GCK_K_COUNT; k++) {                                                      \
                if (n > 100000 && k > GCK_K_ILL_SCALED)                                                  \
                    continue;                                                                            \
                const T *xs[RFOLD_MAX];                                                                  \
                for (int q = 0; q < RFOLD_MAX; q++) {                                                    \
                    T *x = in[q] + (size_t)(k + q) % (GCK_TEST_MAX_OFFSET + 1);                          \
                    FILL(x, n, (gck_test_kind)((k + q) % GCK_K_COUNT), n + 31 * (size_t)q);             \
                    xs[q] = x;                                                                           \
                }                                                                                        \
                FILL(acc, n, (gck_test_kind)((k + 2) % GCK_K_COUNT), n + 7);                             \
                /* and 20, past the kernels' local copy of the pointers: the inputs again */             \
                const T *xm[20];                                                                         \
                for (int q = 0; q < 20; q++)                                                             \
                    xm[q] = xs[q % RFOLD_MAX];                                                           \
                for (size_t m = 1; m <= 20 && (n <= MANY_FACTORS_MAX || m <= 3); m += m < RFOLD_MAX ? 1 : 20 - RFOLD_MAX) { \
                    memcpy(ref, acc, n * sizeof(T)), memcpy(out, acc, n * sizeof(T));                    \
                    memcpy(pub, acc, n * sizeof(T));                                                     \
                    p->ref->add_rfold_##SFX(ref, xm, m, 0, n);                                           \
                    p->isa->add_rfold_##SFX(out, xm, m, 0, n);                                           \
                    gck_add_rfold_##SFX(pub, xm, m, n);                                                  \
                    for (size_t i = 0; i < n; i++) {                                                     \
                        T s = xm[m - 1][i];                                                              \
                        for (size_t q = m - 1; q-- > 0;)                                                 \
                            s = xm[q][i] + s;                                                            \
                        if (!SAME(acc[i] + s, ref[i]))                                                   \
                            fail_msg("scalar add_rfold_" #SFX " m=%zu n=%zu i=%zu", m, n, i);            \
                        if (!SAME(ref[i], out[i]) || !SAME(ref[i], pub[i]))                              \
                            fail_msg("%s add_rfold_" #SFX " m=%zu n=%zu i=%zu %s: want %a got %a / %a",  \
                                     p->isa->name, m, n, i, gck_test_kind_name((gck_test_kind)k),        \
                                     (double)ref[i], (double)out[i], (double)pub[i]);                   \
                    }                                                                                    \
                }                                                                                        \
                /* acc among the inputs: acc + (x0 + acc) */                                             \
                const T *xa[2] = {xs[0], acc};                                                           \
                memcpy(ref, acc, n * sizeof(T)), memcpy(out, acc, n * sizeof(T));                        \
                p->ref->add_rfold_##SFX(ref, xa, 2, 0, n);                                               \
                xa[1] = out;                                                                             \
                p->isa->add_rfold_##SFX(out, xa, 2, 0, n);                                               \
                for (size_t i = 0; i < n; i++)                                                           \
                    if (!SAME(ref[i], out[i]))                                                           \
                        fail_msg("%s add_rfold_" #SFX " with acc as an input, n=%zu i=%zu", p->isa->name, n, i); \
            }                                                                                            \
        }                                                                                                \
        p->isa->add_rfold_##SFX(ref, NULL, 0, 0, 5); /* m = 0: nothing read or written */                \
        gck_add_rfold_##SFX(NULL, NULL, 0, 0);                                                           \
        for (int q = 0; q < RFOLD_MAX; q++)                                                              \
            free(in[q]);                                                                                 \
        free(acc), free(ref), free(out), free(pub);                                                      \
    }
RFOLD_TEST(double, f64, gck_test_fill_f64, gck_same_f64)
RFOLD_TEST(float, f32, gck_test_fill_f32, gck_same_f32)

/* x may be the accumulator itself (acc += acc). */
static void test_exact_alias(void **state)
{
    const gck_isa_pair *p = *state;
    const size_t n = 1000;
    gck_test_fill_f64(g_acc64, n, GCK_K_UNIFORM, 99);
    for (size_t i = 0; i < n; i++)
        g_ref64[i] = g_acc64[i] + g_acc64[i];
    p->isa->add_f64(g_acc64, g_acc64, n);
    assert_memory_equal(g_ref64, g_acc64, n * 8);
}

/* NULL with n == 0 is allowed everywhere. */
static void test_null_empty(void **state)
{
    (void)state;
    gck_add_f64(NULL, NULL, 0);
    gck_add_f32(NULL, NULL, 0);
    gck_axpy_f64(NULL, 2.0, NULL, 0);
    gck_axpy_f32(NULL, 2.0f, NULL, 0);
    gck_scale_f64(NULL, 2.0, 0);
    gck_scale_f32(NULL, 2.0f, 0);
    assert_true(gck_sumsq_f64(NULL, 0) == 0.0 && !signbit(gck_sumsq_f64(NULL, 0)));
    assert_true(gck_sumsq_f32(NULL, 0) == 0.0);
    assert_true(gck_l2norm_f64(NULL, 0) == 0.0);
    assert_true(gck_l2norm_f32(NULL, 0) == 0.0);
    assert_true(gck_dist2_f64(NULL, NULL, 0) == 0.0);
    assert_true(gck_dist2_f32(NULL, NULL, 0) == 0.0);
    assert_true(gck_fnv1a64(NULL, 0, GCK_FNV1A64_INIT) == GCK_FNV1A64_INIT);
}

GCK_PER_ISA_MAIN(setup, teardown,
                 GCK_ISA_TEST(test_f64_elementwise),
                 GCK_ISA_TEST(test_f32_elementwise),
                 GCK_ISA_TEST(test_segmented),
                 GCK_ISA_TEST(test_add_rfold_f64),
                 GCK_ISA_TEST(test_add_rfold_f32),
                 GCK_ISA_TEST(test_exact_alias),
                 GCK_ISA_TEST(test_null_empty))
