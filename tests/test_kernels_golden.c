/* tests/test_kernels_golden.c - pinned digests of kernel outputs on a fixed input set.
 *
 * Catches the reference itself drifting (compiler, FP contraction, another
 * architecture): the digests must be the same on x86-64, AArch64 (qemu) and
 * big-endian s390x (qemu), and on every ISA. Inputs come from splitmix64 and
 * exact conversions; outputs are hashed as little-endian bytes with NaNs
 * canonicalized (their sign and payload are not part of the contract).
 *
 * test_golden_digest is the original digest over the norms and add/axpy/scale;
 * test_golden_every_kernel pins one digest per public kernel of api_list.h,
 * so adding a kernel adds a pin and leaves the others alone, and
 * test_api_list_complete checks that kernels.h declares no kernel the list
 * (and so this test and the benchmarks) leaves out. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#include "api_list.h"

#define GCK_GOLDEN_DIGEST UINT64_C(0x441aa50aeacf75eb)

static uint64_t hash_f64(uint64_t h, double v)
{
    if (isnan(v))
        v = NAN;
    uint64_t u;
    memcpy(&u, &v, 8);
    if (isnan(v))
        u = UINT64_C(0x7ff8000000000000);
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(u >> (8 * i));
    return gck_fnv1a64(le, 8, h);
}

static uint64_t hash_f32(uint64_t h, float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    if (isnan(v))
        u = UINT32_C(0x7fc00000);
    unsigned char le[4];
    for (int i = 0; i < 4; i++)
        le[i] = (unsigned char)(u >> (8 * i));
    return gck_fnv1a64(le, 4, h);
}

static uint64_t golden_digest(void)
{
    /* literal sizes: the digest must not move when a tuning constant does */
    static const size_t sizes[] = {0, 1, 3, 64, 65, 1000, 8199, 24577, 262147};
    const size_t nmax = 262147;
    double *a = gck_test_alloc(nmax * 8), *b = gck_test_alloc(nmax * 8);
    float *f = gck_test_alloc(nmax * 4), *g = gck_test_alloc(nmax * 4);
    uint64_t h = GCK_FNV1A64_INIT;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t n = sizes[si];
        for (int k = 0; k < GCK_K_COUNT; k++) {
            gck_test_fill_f64(a, n, (gck_test_kind)k, 1000 + n);
            gck_test_fill_f64(b, n, GCK_K_UNIFORM, 2000 + n);
            gck_test_fill_f32(f, n, (gck_test_kind)k, 3000 + n);
            gck_test_fill_f32(g, n, GCK_K_UNIFORM, 4000 + n);
            h = hash_f64(h, gck_sumsq_f64(a, n));
            h = hash_f64(h, gck_l2norm_f64(a, n));
            h = hash_f64(h, gck_dist2_f64(a, b, n));
            h = hash_f64(h, gck_sumsq_f32(f, n));
            h = hash_f64(h, gck_l2norm_f32(f, n));
            h = hash_f64(h, gck_dist2_f32(f, g, n));
            gck_axpy_f64(b, 0.7, a, n);
            gck_scale_f64(b, -1.3, n);
            gck_add_f64(b, a, n);
            gck_axpy_f32(g, 0.7f, f, n);
            gck_scale_f32(g, -1.3f, n);
            gck_add_f32(g, f, n);
            for (size_t i = 0; i < n; i += 1 + n / 512) {
                h = hash_f64(h, b[i]);
                h = hash_f32(h, g[i]);
            }
        }
    }
    free(a), free(b), free(f), free(g);
    return h;
}

static void test_golden_digest(void **state)
{
    const gck_isa_pair *p = *state;
    const uint64_t got = golden_digest();
    if (got != GCK_GOLDEN_DIGEST)
        fail_msg("%s: golden digest 0x%016llx, pinned 0x%016llx: the reference results changed", p->isa->name,
                 (unsigned long long)got, (unsigned long long)GCK_GOLDEN_DIGEST);
}

/* ---- one digest per public kernel ------------------------------------------ */

/* The pins, one per entry of GCK_API_KERNEL_LIST (same values on every ISA
 * and architecture). A new kernel's pin is the value the failure message
 * prints, after checking that every architecture prints the same. */
static const struct golden_pin {
    const char *name;
    uint64_t digest;
} golden_pins[] = {
    {"sumsq_f64", UINT64_C(0x66a00c12012df9c2)},
    {"sumsq_f32", UINT64_C(0xa6e511d8a366aeb0)},
    {"l2norm_f64", UINT64_C(0x0d9a25b31c936889)},
    {"l2norm_f32", UINT64_C(0x0c491b949bd14d4c)},
    {"dist2_f64", UINT64_C(0x30ec7ce9bf45edd2)},
    {"dist2_f32", UINT64_C(0x43bb892d68dd8197)},
    {"pnorm_f64", UINT64_C(0xd90bd3b09537dc53)},
    {"pnorm_f32", UINT64_C(0x40eb9e6b5cca12cb)},
    {"div_sumsq_f64", UINT64_C(0x7490d8838790f0ca)},
    {"div_sumsq_f32", UINT64_C(0x20f8c17594b81225)},
    {"scale_sumsq_f64", UINT64_C(0x8f2c6fce576cb9ea)},
    {"scale_sumsq_f32", UINT64_C(0x05d96cec56218515)},
    {"add_f64", UINT64_C(0xe8f80d5a661f5f85)},
    {"add_f32", UINT64_C(0x3963fd68960182dd)},
    {"add_f32_to_f64", UINT64_C(0x497eb5de0ebd7afd)},
    {"add_f64_to_f32", UINT64_C(0x403890c34b17bd13)},
    {"axpy_f64", UINT64_C(0xdfe9adb7a2db36d6)},
    {"axpy_f32", UINT64_C(0x01b94682ef4beddf)},
    {"axpy_f32_to_f64", UINT64_C(0x0e6bc1982ac6914d)},
    {"axpy_f64_to_f32", UINT64_C(0xed5ff182d5570a44)},
    {"axpy_init_f64", UINT64_C(0xefdbc70d12869179)},
    {"axpy_init_f32", UINT64_C(0x9464a99295d65619)},
    {"axpy_init_f32_to_f64", UINT64_C(0x761bbad8e5a8003c)},
    {"axpy_init_f64_to_f32", UINT64_C(0x7cbb1a2b34d43f53)},
    {"axpy_init_nt_f64", UINT64_C(0xefdbc70d12869179)}, /* axpy_init_f64's: the same values */
    {"axpy_init_nt_f32", UINT64_C(0x9464a99295d65619)},
    {"scale_into_f64", UINT64_C(0xe7ce49c7882dc879)},
    {"scale_into_f32", UINT64_C(0x1b083250bb883899)},
    {"scale_into_nt_f64", UINT64_C(0xe7ce49c7882dc879)}, /* scale_into_f64's: the same values */
    {"scale_into_nt_f32", UINT64_C(0x1b083250bb883899)},
    {"add_rfold_f64", UINT64_C(0xfa48b689528478c4)},
    {"add_rfold_f32", UINT64_C(0xe6e52b6f1647a86f)},
    {"scale_f64", UINT64_C(0x7e637e5f7e5903ca)},
    {"scale_f32", UINT64_C(0x7ad2e0ae9f51b022)},
    {"sumsq_bf16", UINT64_C(0x290945860f48d109)},
    {"sumsq_f16", UINT64_C(0x5e48778fd257cbd5)},
    {"l2norm_bf16", UINT64_C(0x1e962522dd47a899)},
    {"l2norm_f16", UINT64_C(0x80a3e06cf8429bae)},
    {"dist2_bf16", UINT64_C(0x223f8e7254181d00)},
    {"dist2_f16", UINT64_C(0x3b95cbd89a7d192a)},
    {"pnorm_bf16", UINT64_C(0x952ad2cafd64957b)},
    {"pnorm_f16", UINT64_C(0x3534ab5b75a651c7)},
    {"add_bf16_to_f32", UINT64_C(0xeff924aa6f2f9fc6)},
    {"add_f16_to_f32", UINT64_C(0x2b3af306698584a3)},
    {"add_bf16_to_f64", UINT64_C(0x7652a1361e12c1f7)},
    {"add_f16_to_f64", UINT64_C(0xfc7506cc6960cd55)},
    {"axpy_bf16_to_f32", UINT64_C(0xc6d54364ff784aca)},
    {"axpy_f16_to_f32", UINT64_C(0xad43dfcfc489c4c3)},
    {"axpy_bf16_to_f64", UINT64_C(0x8b173cb1df4d335a)},
    {"axpy_f16_to_f64", UINT64_C(0xd69c499d70d061f6)},
    {"axpy_init_bf16_to_f32", UINT64_C(0x3447ccc58e114e20)},
    {"axpy_init_f16_to_f32", UINT64_C(0xc0c3df8f1033f0e1)},
    {"axpy_init_bf16_to_f64", UINT64_C(0xcedfa7998fe544c2)},
    {"axpy_init_f16_to_f64", UINT64_C(0xc879cc5ce5dbe360)},
    {"scale_bf16", UINT64_C(0xac21487b51fb2d67)},
    {"scale_f16", UINT64_C(0x576f62c17edc151c)},
    {"convert_f32_to_bf16", UINT64_C(0xf02eb0b885eb2fd9)},
    {"convert_f32_to_f16", UINT64_C(0xa07a0ee6cbc8b5be)},
    {"convert_bf16_to_f32", UINT64_C(0xf97e0352d4828255)},
    {"convert_f16_to_f32", UINT64_C(0xc9bd478d0dbc750f)},
    {"xor_shuffle", UINT64_C(0x72220b6895cf0236)},
    {"unshuffle_xor", UINT64_C(0xf89ffece726d07c5)},
    {"unshuffle_xor_planes", UINT64_C(0x0d56c5aacded2bb9)},
    {"xor_shuffle_rot", UINT64_C(0xcd48d45603dcf49c)},
    {"unshuffle_xor_rot_planes", UINT64_C(0x7632f01f0cca65ca)},
    {"sparse_split", UINT64_C(0xd135ed36192b7477)},
    {"sparse_merge", UINT64_C(0x6ebd33e0f7d46f5f)},
    {"fnv1a64", UINT64_C(0x1330705258b52d96)},
};

enum {
#define GOLDEN_ENUM(name, shape, A, X) K_##name,
    GCK_API_KERNEL_LIST(GOLDEN_ENUM)
#undef GOLDEN_ENUM
    K_COUNT
};

static const char *const golden_names[K_COUNT] = {
#define GOLDEN_NAME(name, shape, A, X) #name,
    GCK_API_KERNEL_LIST(GOLDEN_NAME)
#undef GOLDEN_NAME
};

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
    unsigned char le[8];
    for (int i = 0; i < 8; i++)
        le[i] = (unsigned char)(v >> (8 * i));
    return gck_fnv1a64(le, 8, h);
}

/* About 512 samples of an output array (all of a short one). */
#define GOLDEN_SAMPLE(h, T, out, n)                                            \
    for (size_t i_ = 0; i_ < (n); i_ += 1 + (n) / 512)                         \
    (h) = hash_##T((h), (out)[i_])
/* 2-byte floats: their bits as little-endian bytes, NaNs canonical */
static uint64_t hash_u16(uint64_t h, uint16_t v)
{
    const unsigned char le[2] = {(unsigned char)(v & 0xff), (unsigned char)(v >> 8)};
    return gck_fnv1a64(le, 2, h);
}

static uint64_t hash_bf16(uint64_t h, uint16_t v)
{
    return hash_u16(h, (v & 0x7fff) > 0x7f80 ? 0x7fc0 : v);
}

static uint64_t hash_f16(uint64_t h, uint16_t v)
{
    return hash_u16(h, (v & 0x7fff) > 0x7c00 ? 0x7e00 : v);
}

/* The bits of 2-byte floats of family k: bf16 the high halves of the f32
 * family (f), f16 random finite bits, all exponents (denormals included),
 * with the family's specials. */
static void golden_fill16(uint16_t *bf, uint16_t *hf, const float *f, size_t n, int k, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &f[i], 4);
        bf[i] = (uint16_t)(u >> 16);
        uint16_t v = (uint16_t)(gck_test_rand(&seed) >> 48);
        if ((v & 0x7c00) == 0x7c00)
            v ^= 0x4000;
        if (k == GCK_K_DENORMAL)
            v &= 0x83ff;
        if (k == GCK_K_ZERO)
            v &= 0x8000;
        hf[i] = v;
    }
    if (n > 0 && k == GCK_K_WITH_NAN)
        hf[n / 2] = 0x7e01;
    if (n > 1 && k == GCK_K_WITH_INF)
        hf[n / 3] = 0x7c00, hf[n - 1] = 0xfc00;
}

static uint64_t hash_u8(uint64_t h, uint8_t v)
{
    return gck_fnv1a64(&v, 1, h);
}

/* The inputs of one (size, family) case: a, b (and in_f32, in2_f32) are
 * read-only, out_* receive results; bytes come from splitmix64, not from the
 * floats, so they are the same on big- and little-endian machines. */
typedef struct golden_in {
    double *in_f64, *in2_f64, *out_f64;
    float *in_f32, *in2_f32, *out_f32;
    uint8_t *in_u8, *in2_u8, *out_u8;
    uint16_t *in_bf16, *in2_bf16, *out_bf16;
    uint16_t *in_f16, *in2_f16, *out_f16;
} golden_in;

/* Each shape: call gck_<name> on the case's inputs, hash what it returns and
 * writes. Accumulating kernels start from the second input. */
#define G_REDUCE(name, A, X) h = hash_f64(h, gck_##name(g->in_##X, n));
#define G_REDUCE2(name, A, X) h = hash_f64(h, gck_##name(g->in_##X, g->in2_##X, n));
/* p = 1 (sum of |x|), inf (max |x|), 0 (not a norm: NaN); other p go through
 * the scalar reference's pow, which depends on the CPU having FMA (scalar.c),
 * and are compared across ISAs by test_kernels_pnorm instead. */
#define G_PNORM(name, A, X)                                                    \
    h = hash_f64(h, gck_##name(g->in_##X, n, 1.0));                            \
    h = hash_f64(h, gck_##name(g->in_##X, n, INFINITY));                       \
    h = hash_f64(h, gck_##name(g->in_##X, n, 0.0));
#define G_FUSED(name, A, X)                                                    \
    h = hash_f64(h, gck_##name(g->out_##A, g->in_##X, (GCK_CT(A))-1.3, n));    \
    GOLDEN_SAMPLE(h, A, g->out_##A, n);
#define G_ADD(name, A, X)                                                      \
    memcpy(g->out_##A, g->in2_##A, n * sizeof(GCK_CT(A)));                     \
    gck_##name(g->out_##A, g->in_##X, n);                                      \
    GOLDEN_SAMPLE(h, A, g->out_##A, n);
#define G_AXPY(name, A, X)                                                     \
    memcpy(g->out_##A, g->in2_##A, n * sizeof(GCK_CT(A)));                     \
    gck_##name(g->out_##A, (GCK_CT(A))0.7, g->in_##X, n);                      \
    GOLDEN_SAMPLE(h, A, g->out_##A, n);
#define G_AXPY_INIT(name, A, X) G_AXPY(name, A, X)
/* m = 1, 2, 3, 5 inputs: the two inputs alternating */
#define G_RFOLD(name, A, X)                                                    \
    for (size_t m_ = 1; m_ <= 5; m_ += 1 + (m_ == 3)) {                        \
        const GCK_CT(X) *xs_[5] = {g->in_##X, g->in2_##X, g->in_##X, g->in2_##X, g->in_##X}; \
        memcpy(g->out_##A, g->in2_##A, n * sizeof(GCK_CT(A)));                 \
        gck_##name(g->out_##A, xs_, m_, n);                                    \
        GOLDEN_SAMPLE(h, A, g->out_##A, n);                                    \
    }
#define G_SCALE(name, A, X)                                                    \
    memcpy(g->out_##A, g->in_##A, n * sizeof(GCK_CT(A)));                      \
    gck_##name(g->out_##A, (GCK_CC(A))-1.3, n);                                \
    GOLDEN_SAMPLE(h, A, g->out_##A, n);
#define G_CONVERT(name, A, X)                                                  \
    gck_##name(g->out_##A, g->in_##X, n);                                      \
    GOLDEN_SAMPLE(h, A, g->out_##A, n);
#define G_SHUFFLE(name, A, X)                                                  \
    for (size_t esz = 1; esz <= 8; esz *= 2) {                                 \
        gck_##name(g->out_u8, g->in_u8, esz == 4 ? NULL : g->in2_u8, n, esz);  \
        GOLDEN_SAMPLE(h, u8, g->out_u8, n * esz);                              \
    }
#define G_UNSHUFFLE(name, A, X) G_SHUFFLE(name, A, X)
/* the planes of G_UNSHUFFLE's input in reverse order */
#define G_UNSHUFFLE_PLANES(name, A, X)                                         \
    for (size_t esz = 1; esz <= 8; esz *= 2) {                                 \
        const uint8_t *pl_[8];                                                 \
        for (size_t k_ = 0; k_ < esz; k_++)                                    \
            pl_[k_] = g->in_u8 + (esz - 1 - k_) * n;                           \
        gck_##name(g->out_u8, pl_, esz == 4 ? NULL : g->in2_u8, n, esz);       \
        GOLDEN_SAMPLE(h, u8, g->out_u8, n * esz);                              \
    }
/* in_u8 made sparse in out_u8: about 5/8 of the bytes 0x3f, the fill */
#define G_SPARSE_INPUT(x)                                                      \
    for (size_t i_ = 0; i_ < n; i_++)                                          \
        (x)[i_] = g->in_u8[i_] < 96 ? g->in_u8[i_] : 0x3f;
#define G_SPARSE_SPLIT(name, A, X)                                             \
    {                                                                          \
        uint8_t *x_ = g->out_u8, *bits_ = x_ + n, *vals_ = x_ + 2 * n + 8;     \
        G_SPARSE_INPUT(x_)                                                     \
        const size_t c_ = gck_##name(bits_, vals_, x_, n, 0x3f);               \
        h = hash_u64(h, c_);                                                   \
        GOLDEN_SAMPLE(h, u8, bits_, (n + 7) / 8);                              \
        GOLDEN_SAMPLE(h, u8, vals_, c_);                                       \
    }
#define G_SPARSE_MERGE(name, A, X)                                             \
    {                                                                          \
        uint8_t *x_ = g->out_u8, *bits_ = x_ + n, *vals_ = x_ + 2 * n + 8, *d_ = x_ + 3 * n + 8; \
        G_SPARSE_INPUT(x_)                                                     \
        const size_t c_ = gck_sparse_split(bits_, vals_, x_, n, 0x3f);         \
        gck_##name(d_, bits_, vals_, c_, n, 0x3f);                             \
        GOLDEN_SAMPLE(h, u8, d_, n);                                           \
    }
#define G_HASH(name, A, X) h = hash_u64(h, gck_##name(g->in_u8, 8 * n, GCK_FNV1A64_INIT));

static void golden_case(const golden_in *g, size_t n, uint64_t h_[K_COUNT])
{
#define GOLDEN_RUN(name, shape, A, X)                                          \
    {                                                                          \
        uint64_t h = h_[K_##name];                                             \
        G_##shape(name, A, X) h_[K_##name] = h;                                \
    }
    GCK_API_KERNEL_LIST(GOLDEN_RUN)
#undef GOLDEN_RUN
}

static void test_golden_every_kernel(void **state)
{
    const gck_isa_pair *p = *state;
    static const size_t sizes[] = {0, 1, 3, 64, 65, 1000, 8199, 24577, 262147};
    const size_t nmax = 262147;
    golden_in g = {
        gck_test_alloc(nmax * 8), gck_test_alloc(nmax * 8), gck_test_alloc(nmax * 8),
        gck_test_alloc(nmax * 4), gck_test_alloc(nmax * 4), gck_test_alloc(nmax * 4),
        gck_test_alloc(nmax * 8), gck_test_alloc(nmax * 8), gck_test_alloc(nmax * 8),
        gck_test_alloc(nmax * 2), gck_test_alloc(nmax * 2), gck_test_alloc(nmax * 2),
        gck_test_alloc(nmax * 2), gck_test_alloc(nmax * 2), gck_test_alloc(nmax * 2),
    };
    uint64_t h[K_COUNT];
    for (int k = 0; k < K_COUNT; k++)
        h[k] = GCK_FNV1A64_INIT;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const size_t n = sizes[si];
        for (int k = 0; k < GCK_K_COUNT; k++) {
            gck_test_fill_f64(g.in_f64, n, (gck_test_kind)k, 5000 + n);
            gck_test_fill_f64(g.in2_f64, n, GCK_K_UNIFORM, 6000 + n);
            gck_test_fill_f32(g.in_f32, n, (gck_test_kind)k, 7000 + n);
            gck_test_fill_f32(g.in2_f32, n, GCK_K_UNIFORM, 8000 + n);
            golden_fill16(g.in_bf16, g.in_f16, g.in_f32, n, k, 10000 + n);
            golden_fill16(g.in2_bf16, g.in2_f16, g.in2_f32, n, GCK_K_UNIFORM, 11000 + n);
            uint64_t st = 9000 + 16 * n + (uint64_t)k;
            for (size_t i = 0; i < 8 * n; i++) {
                g.in_u8[i] = (uint8_t)(gck_test_rand(&st) >> 56);
                g.in2_u8[i] = (uint8_t)(k == GCK_K_ZERO ? g.in_u8[i] : gck_test_rand(&st) >> 56);
            }
            golden_case(&g, n, h);
        }
    }
    free(g.in_f64), free(g.in2_f64), free(g.out_f64), free(g.in_f32), free(g.in2_f32), free(g.out_f32);
    free(g.in_u8), free(g.in2_u8), free(g.out_u8);
    free(g.in_bf16), free(g.in2_bf16), free(g.out_bf16), free(g.in_f16), free(g.in2_f16), free(g.out_f16);

    int bad = 0;
    assert_int_equal(sizeof golden_pins / sizeof golden_pins[0], K_COUNT);
    for (int k = 0; k < K_COUNT; k++) {
        assert_string_equal(golden_pins[k].name, golden_names[k]); /* the pins follow the list's order */
        if (h[k] != golden_pins[k].digest) {
            print_error("%s: %s digest 0x%016llx, pinned 0x%016llx\n", p->isa->name, golden_names[k],
                        (unsigned long long)h[k], (unsigned long long)golden_pins[k].digest);
            bad++;
        }
    }
    if (bad)
        fail_msg("%s: %d kernels' results differ from their pinned digests", p->isa->name, bad);
}

/* Every GCK_API function declared in kernels.h is a kernel of the list, so
 * none goes without its signature check, digest and benchmark. */
static void test_api_list_complete(void **state)
{
    (void)state;
    FILE *f = fopen(GCK_KERNELS_H, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    const size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    assert_true(len > 0 && len < sizeof text - 1);
    text[len] = '\0';
    int declared = 0;
    for (const char *q = strstr(text, "\nGCK_API "); q != NULL; q = strstr(q + 1, "\nGCK_API ")) {
        /* the identifier right before the first '(' */
        const char *paren = strchr(q, '('), *fn = paren;
        assert_non_null(paren);
        while (fn > q && (fn[-1] == '_' || isalnum((unsigned char)fn[-1])))
            fn--;
        assert_true(strncmp(fn, "gck_", 4) == 0);
        char name[64];
        const size_t nlen = (size_t)(paren - (fn + 4));
        assert_true(nlen > 0 && nlen < sizeof name);
        memcpy(name, fn + 4, nlen);
        name[nlen] = '\0';
        int listed = 0;
        for (int k = 0; k < K_COUNT; k++)
            listed |= strcmp(name, golden_names[k]) == 0;
        if (!listed)
            fail_msg("kernels.h declares gck_%s, which kernels/api_list.h does not list", name);
        declared++;
    }
    assert_int_equal(declared, K_COUNT);
}

GCK_PER_ISA_MAIN(NULL, NULL,
                 GCK_ISA_TEST(test_golden_digest),
                 GCK_ISA_TEST(test_golden_every_kernel),
                 GCK_ISA_TEST(test_api_list_complete))
