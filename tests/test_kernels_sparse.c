/* tests/test_kernels_sparse.c - sparse_split / sparse_merge on one ISA vs a naive loop and vs scalar, bit for bit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

static const size_t g_sizes[] = {0,  1,  2,  7,  8,  9,   15,  16,  31,   32,   33,   63,
                                 64, 65, 71, 95, 127, 128, 129, 255, 1000, 4097, 65543};
/* fraction of bytes that differ from the fill, in 1/1024 */
static const unsigned g_density[] = {0, 1, 50, 320, 512, 700, 990, 1024};
static const uint8_t g_fill[] = {0x00, 0x3f, 0xff};
#define MAX_OFF 63
#define GUARD GCK_TEST_GUARD
#define BIG 1048583 /* a few 64-byte steps past 1 MiB: a store chunk plus an odd tail */

static uint8_t *g_x, *g_bits, *g_vals, *g_out;
static size_t g_cap;

static int setup(void **state)
{
    (void)state;
    g_cap = GUARD + MAX_OFF + BIG + GUARD;
    g_x = gck_test_alloc(g_cap);
    g_bits = gck_test_alloc(g_cap);
    g_vals = gck_test_alloc(g_cap);
    g_out = gck_test_alloc(g_cap);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_x), free(g_bits), free(g_vals), free(g_out);
    return 0;
}

/* n bytes, each the fill with probability 1 - d/1024, else a random byte
 * other than the fill (so the expected count is exact in distribution). */
static void fill_sparse(uint8_t *x, size_t n, unsigned d, uint8_t fill, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = gck_test_rand(&seed);
        uint8_t v = (uint8_t)(r >> 8);
        if (v == fill)
            v ^= 0x5a;
        x[i] = (r >> 40) % 1024 < d ? v : fill;
    }
}

static size_t naive_split(uint8_t *bits, uint8_t *vals, const uint8_t *x, size_t n, uint8_t fill)
{
    size_t m = 0;
    memset(bits, 0, (n + 7) / 8);
    for (size_t i = 0; i < n; i++)
        if (x[i] != fill) {
            bits[i / 8] |= (uint8_t)(1u << (i % 8));
            vals[m++] = x[i];
        }
    return m;
}


static void check_same(const uint8_t *want, const uint8_t *got, size_t len, const char *what, size_t n)
{
    if (len > 0 && memcmp(want, got, len) != 0) {
        size_t j = 0;
        while (want[j] == got[j])
            j++;
        fail_msg("%s n=%zu: byte %zu want %02x got %02x", what, n, j, want[j], got[j]);
    }
}

typedef size_t (*split_fn)(uint8_t *, uint8_t *, const uint8_t *, size_t, uint8_t);
typedef void (*merge_fn)(uint8_t *, const uint8_t *, const uint8_t *, size_t, size_t, uint8_t);

/* One split: the bitmap exactly (n + 7) / 8 bytes, the count and the values
 * as the naive loop's; vals written only inside [0, n). */
static void check_split(split_fn f, const char *what, const uint8_t *x, size_t n, uint8_t fill, size_t off,
                        const uint8_t *want_bits, const uint8_t *want_vals, size_t want_m)
{
    uint8_t *bits = gck_test_guarded(g_bits, off, (n + 7) / 8);
    uint8_t *vals = gck_test_guarded(g_vals, (off + 5) % (MAX_OFF + 1), n);
    const size_t m = f(bits, vals, x, n, fill);
    if (m != want_m)
        fail_msg("%s n=%zu fill=%02x: count %zu, want %zu", what, n, fill, m, want_m);
    check_same(want_bits, bits, (n + 7) / 8, what, n);
    check_same(want_vals, vals, m, what, n);
    gck_test_check_guards(g_bits, bits, (n + 7) / 8, what);
    gck_test_check_guards(g_vals, vals, n, what);
}

/* One merge from values in a heap block of exactly m bytes (a read past
 * them is caught by the sanitizer run). */
static void check_merge(merge_fn f, const char *what, const uint8_t *x, const uint8_t *bits, const uint8_t *vals,
                        size_t m, size_t n, uint8_t fill, size_t off)
{
    uint8_t *exact = malloc(m ? m : 1);
    assert_non_null(exact);
    if (m)
        memcpy(exact, vals, m);
    uint8_t *out = gck_test_guarded(g_out, off, n);
    f(out, bits, exact, m, n, fill);
    check_same(x, out, n, what, n);
    gck_test_check_guards(g_out, out, n, what);
    free(exact);
}

static void run_case(const gck_isa_pair *p, size_t n, unsigned d, uint8_t fill, size_t ox, size_t oo, uint64_t seed)
{
    uint8_t *x = g_x + GUARD + ox;
    fill_sparse(x, n, d, fill, seed);
    uint8_t *want_bits = malloc(n / 8 + 1), *want_vals = malloc(n + 1);
    assert_non_null(want_bits), assert_non_null(want_vals);
    const size_t m = naive_split(want_bits, want_vals, x, n, fill);
    check_split(p->ref->sparse_split, "scalar sparse_split", x, n, fill, oo, want_bits, want_vals, m);
    check_split(p->isa->sparse_split, p->isa->name, x, n, fill, (oo + 1) % (MAX_OFF + 1), want_bits, want_vals, m);
    check_split(gck_sparse_split, "gck_sparse_split", x, n, fill, (oo + 2) % (MAX_OFF + 1), want_bits, want_vals, m);
    check_merge(p->ref->sparse_merge, "scalar sparse_merge", x, want_bits, want_vals, m, n, fill, oo);
    check_merge(p->isa->sparse_merge, p->isa->name, x, want_bits, want_vals, m, n, fill, (oo + 3) % (MAX_OFF + 1));
    check_merge(gck_sparse_merge, "gck_sparse_merge", x, want_bits, want_vals, m, n, fill, (oo + 7) % (MAX_OFF + 1));
    free(want_bits), free(want_vals);
}

/* Every size, density and fill; inputs and outputs at odd offsets. */
static void test_sparse_sizes(void **state)
{
    const gck_isa_pair *p = *state;
    uint64_t seed = 1;
    for (size_t si = 0; si < sizeof g_sizes / sizeof g_sizes[0]; si++)
        for (size_t di = 0; di < sizeof g_density / sizeof g_density[0]; di++)
            for (size_t fi = 0; fi < sizeof g_fill / sizeof g_fill[0]; fi++, seed++)
                run_case(p, g_sizes[si], g_density[di], g_fill[fi], seed % 8, (seed * 7) % (MAX_OFF + 1), seed);
}

/* A store chunk's worth and more, at the densities of an XOR delta's planes. */
static void test_sparse_large(void **state)
{
    const gck_isa_pair *p = *state;
    run_case(p, BIG, 320, 0x00, 3, 17, 901);
    run_case(p, BIG, 1000, 0x3f, 0, 1, 902);
}

/* A clustered bitmap: long runs of the fill, then long runs of values (a
 * frozen row beside a trained one), so whole steps are 0x00 or 0xff. */
static void test_sparse_runs(void **state)
{
    const gck_isa_pair *p = *state;
    const size_t n = 10007;
    uint8_t *x = g_x + GUARD + 5;
    uint64_t seed = 77;
    for (size_t i = 0; i < n; i++)
        x[i] = (i / 300) % 2 ? (uint8_t)(gck_test_rand(&seed) >> 56 | 1) : 0;
    uint8_t *bits = malloc(n / 8 + 1), *vals = malloc(n);
    assert_non_null(bits), assert_non_null(vals);
    const size_t m = naive_split(bits, vals, x, n, 0);
    check_split(p->isa->sparse_split, p->isa->name, x, n, 0, 9, bits, vals, m);
    check_merge(p->isa->sparse_merge, p->isa->name, x, bits, vals, m, n, 0, 11);
    free(bits), free(vals);
}

GCK_PER_ISA_MAIN(setup, teardown, GCK_ISA_TEST(test_sparse_sizes), GCK_ISA_TEST(test_sparse_large),
                 GCK_ISA_TEST(test_sparse_runs))
