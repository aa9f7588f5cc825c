/* tests/test_kernels_golden.c - a pinned digest of kernel outputs on a fixed input set.
 *
 * Catches the reference itself drifting (compiler, FP contraction, another
 * architecture): the digest must be the same on x86-64, AArch64 (qemu) and
 * big-endian s390x (qemu), and on every ISA. Inputs come from splitmix64 and
 * exact conversions; outputs are hashed as little-endian bytes with NaNs
 * canonicalized (their sign and payload are not part of the contract). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

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

GCK_PER_ISA_MAIN(NULL, NULL,
                 GCK_ISA_TEST(test_golden_digest))
