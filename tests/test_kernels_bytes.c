/* tests/test_kernels_bytes.c - xor_shuffle / unshuffle_xor (planes together or apart) on one ISA vs a naive loop and vs scalar. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

static const size_t g_esz[] = {1, 2, 4, 8};
static const size_t g_sizes[] = {0,  1,  2,  3,   7,   15,  16,   17,   31,
                                 33, 63, 64, 65, 127, 255, 256, 1000, 4097};
/* Outputs of GCK_BYTES_NT_MIN bytes or more (1 Mi f64 elements) take the
 * x86 streaming-store path: an aligning head, then aligned planes only when
 * n*k is a multiple of the vector size. */
#define BIG_BYTES (GCK_BYTES_NT_MIN + 8 * 37)
#define MAX_OFF 63
#define GUARD GCK_TEST_GUARD

/* Under an emulator or the sanitizers (GCK_TEST_EMULATED) an ISA without a
 * streaming path (all but AVX2 / AVX-512) walks the large sizes with one of
 * the four layouts per esz and b, not all four: there nothing depends on the
 * size (the small sizes cover every offset and tail), and the 8 MiB naive
 * loops took 88 s of qemu-s390x. */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

/* Each buffer holds BIG_BYTES at any offset 0..MAX_OFF, with GUARD bytes
 * before (the offset's base) and after. */
static uint8_t *g_a, *g_b, *g_src, *g_want, *g_ref, *g_out;
static size_t g_cap;

static int setup(void **state)
{
    (void)state;
    g_cap = GUARD + MAX_OFF + BIG_BYTES + GUARD;
    g_a = gck_test_alloc(g_cap);
    g_b = gck_test_alloc(g_cap);
    g_src = gck_test_alloc(g_cap);
    g_want = gck_test_alloc(g_cap);
    g_ref = gck_test_alloc(g_cap);
    g_out = gck_test_alloc(g_cap);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_a), free(g_b), free(g_src), free(g_want), free(g_ref), free(g_out);
    return 0;
}

static void fill_random(uint8_t *p, size_t len, uint64_t seed)
{
    uint64_t st = seed;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        const uint64_t r = gck_test_rand(&st);
        memcpy(p + i, &r, 8);
    }
    for (; i < len; i++)
        p[i] = (uint8_t)gck_test_rand(&st);
}

/* The definitions, written as in the documentation. */
static void naive_xor_shuffle(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n, size_t esz)
{
    for (size_t k = 0; k < esz; k++)
        for (size_t i = 0; i < n; i++)
            dst[k * n + i] = (uint8_t)(a[i * esz + k] ^ (b ? b[i * esz + k] : 0));
}

static void naive_unshuffle_xor(uint8_t *dst, const uint8_t *src, const uint8_t *b, size_t n, size_t esz)
{
    for (size_t k = 0; k < esz; k++)
        for (size_t i = 0; i < n; i++)
            dst[i * esz + k] = (uint8_t)(src[k * n + i] ^ (b ? b[i * esz + k] : 0));
}

/* The rotated forms by another route: each element as an integer (esz
 * bytes, little-endian), XORed, rotated left one bit, then shuffled; and
 * back. */
static uint64_t naive_le(const uint8_t *p, size_t esz)
{
    uint64_t v = 0;
    for (size_t k = 0; k < esz; k++)
        v |= (uint64_t)p[k] << (8 * k);
    return v;
}

static uint64_t naive_rot(uint64_t v, size_t esz, int left)
{
    const unsigned bits = (unsigned)(8 * esz);
    const uint64_t mask = bits == 64 ? ~UINT64_C(0) : (UINT64_C(1) << bits) - 1;
    return (left ? (v << 1 | v >> (bits - 1)) : (v >> 1 | v << (bits - 1))) & mask;
}

static void naive_xor_shuffle_rot(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t n, size_t esz)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t v = naive_rot(naive_le(a + i * esz, esz) ^ (b ? naive_le(b + i * esz, esz) : 0), esz, 1);
        for (size_t k = 0; k < esz; k++)
            dst[k * n + i] = (uint8_t)(v >> (8 * k));
    }
}

static void naive_unshuffle_xor_rot(uint8_t *dst, const uint8_t *src, const uint8_t *b, size_t n, size_t esz)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t v = 0;
        for (size_t k = 0; k < esz; k++)
            v |= (uint64_t)src[k * n + i] << (8 * k);
        v = naive_rot(v, esz, 0) ^ (b ? naive_le(b + i * esz, esz) : 0);
        for (size_t k = 0; k < esz; k++)
            dst[i * esz + k] = (uint8_t)(v >> (8 * k));
    }
}

typedef void (*shuffle_fn)(uint8_t *, const void *, const void *, size_t, size_t);
typedef void (*unshuffle_fn)(void *, const uint8_t *const *, const void *, size_t, size_t);

/* gck_unshuffle_xor_rot_planes over contiguous planes (the rotated form has
 * no contiguous public entry) */
static void public_unshuffle_rot_contig(void *dst, const uint8_t *src, const void *b, size_t n, size_t esz)
{
    const uint8_t *pl[8];
    for (size_t k = 0; k < esz; k++)
        pl[k] = src + k * n;
    gck_unshuffle_xor_rot_planes(dst, pl, b, n, esz);
}

/* pl[k] = the plane k of contiguous planes src (the table's slot takes one
 * pointer per plane). */
static const uint8_t *const *contig(const uint8_t *pl[8], const uint8_t *src, size_t n, size_t esz)
{
    for (size_t k = 0; k < esz; k++)
        pl[k] = src + k * n;
    return pl;
}


static int g_rot; /* the form run_case_rot is checking, for the messages */

static void check_same(const uint8_t *want, const uint8_t *got, size_t len, const char *what, size_t n,
                       size_t esz, int with_b, size_t off)
{
    if (len > 0 && memcmp(want, got, len) != 0) {
        size_t j = 0;
        while (want[j] == got[j])
            j++;
        fail_msg("%s%s n=%zu esz=%zu b=%s off=%zu: byte %zu (plane/elem %zu, %zu) want %02x got %02x", what,
                 g_rot ? " (rotated)" : "", n, esz, with_b ? "yes" : "NULL", off, j, j / n, j % n, want[j], got[j]);
    }
}

/* One case: both directions on the ISA, the scalar table and the public
 * wrapper, each against the naive loops; then the round trip. oa, ob, od
 * are the offsets of the inputs and the output (0..MAX_OFF); the other
 * outputs use od + 1, 3, 5. */
static void run_case_rot(const gck_isa_pair *p, size_t n, size_t esz, int with_b, size_t oa, size_t ob, size_t od,
                         uint64_t seed, int rot)
{
    void (*const naive_fwd)(uint8_t *, const uint8_t *, const uint8_t *, size_t, size_t) =
        rot ? naive_xor_shuffle_rot : naive_xor_shuffle;
    void (*const naive_inv)(uint8_t *, const uint8_t *, const uint8_t *, size_t, size_t) =
        rot ? naive_unshuffle_xor_rot : naive_unshuffle_xor;
    const shuffle_fn ref_fwd = rot ? p->ref->xor_shuffle_rot : p->ref->xor_shuffle;
    const shuffle_fn isa_fwd = rot ? p->isa->xor_shuffle_rot : p->isa->xor_shuffle;
    const shuffle_fn pub_fwd = rot ? gck_xor_shuffle_rot : gck_xor_shuffle;
    const unshuffle_fn ref_inv = rot ? p->ref->unshuffle_xor_rot : p->ref->unshuffle_xor;
    const unshuffle_fn isa_inv = rot ? p->isa->unshuffle_xor_rot : p->isa->unshuffle_xor;
    const unshuffle_fn pub_inv_planes = rot ? gck_unshuffle_xor_rot_planes : gck_unshuffle_xor_planes;
    void (*const pub_inv)(void *, const uint8_t *, const void *, size_t, size_t) =
        rot ? public_unshuffle_rot_contig : gck_unshuffle_xor;
    g_rot = rot;

    const size_t len = n * esz;
    const uint8_t *a = g_a + GUARD + oa, *src = g_src + GUARD + ob;
    const uint8_t *b = with_b ? g_b + GUARD + ob : NULL;
    uint8_t *want = g_want + GUARD;
    fill_random(g_a + GUARD + oa, len, seed);
    fill_random(g_b + GUARD + ob, len, seed + 1);
    fill_random(g_src + GUARD + ob, len, seed + 2);

    /* xor_shuffle */
    naive_fwd(want, a, b, n, esz);
    uint8_t *ref = gck_test_guarded(g_ref, od, len);
    ref_fwd(ref, a, b, n, esz);
    check_same(want, ref, len, "scalar xor_shuffle vs naive", n, esz, with_b, od);
    gck_test_check_guards(g_ref, ref, len, "scalar xor_shuffle");
    uint8_t *out = gck_test_guarded(g_out, od, len);
    isa_fwd(out, a, b, n, esz);
    check_same(want, out, len, p->isa->name, n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "xor_shuffle");
    out = gck_test_guarded(g_out, (od + 3) % (MAX_OFF + 1), len);
    pub_fwd(out, a, b, n, esz);
    check_same(want, out, len, "gck_xor_shuffle", n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "gck_xor_shuffle");

    /* round trip: the planes just made, back to a */
    out = gck_test_guarded(g_out, (od + 5) % (MAX_OFF + 1), len);
    const uint8_t *pl[8];
    isa_inv(out, contig(pl, want, n, esz), b, n, esz);
    check_same(a, out, len, "round trip", n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "unshuffle_xor (round trip)");

    /* unshuffle_xor of unrelated random planes */
    naive_inv(want, src, b, n, esz);
    ref = gck_test_guarded(g_ref, od, len);
    ref_inv(ref, contig(pl, src, n, esz), b, n, esz);
    check_same(want, ref, len, "scalar unshuffle_xor vs naive", n, esz, with_b, od);
    gck_test_check_guards(g_ref, ref, len, "scalar unshuffle_xor");
    out = gck_test_guarded(g_out, od, len);
    isa_inv(out, contig(pl, src, n, esz), b, n, esz);
    check_same(want, out, len, p->isa->name, n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "unshuffle_xor");
    out = gck_test_guarded(g_out, (od + 1) % (MAX_OFF + 1), len);
    pub_inv(out, src, b, n, esz);
    check_same(want, out, len, "gck_unshuffle_xor", n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "gck_unshuffle_xor");

    /* the same planes each in a buffer of its own, in reverse order and at
     * odd offsets (a reader's planes: some in its file, some decoded) */
    uint8_t *own[8];
    for (size_t k = 0; k < esz; k++) {
        own[k] = malloc(n + 8);
        assert_non_null(own[k]);
        pl[esz - 1 - k] = memcpy(own[k] + (k * 3 + od) % 8, src + (esz - 1 - k) * n, n);
    }
    ref = gck_test_guarded(g_ref, (od + 3) % (MAX_OFF + 1), len);
    ref_inv(ref, pl, b, n, esz);
    check_same(want, ref, len, "scalar unshuffle_xor, planes apart", n, esz, with_b, od);
    gck_test_check_guards(g_ref, ref, len, "scalar unshuffle_xor, planes apart");
    out = gck_test_guarded(g_out, (od + 7) % (MAX_OFF + 1), len);
    isa_inv(out, pl, b, n, esz);
    check_same(want, out, len, "unshuffle_xor, planes apart", n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "unshuffle_xor, planes apart");
    out = gck_test_guarded(g_out, (od + 2) % (MAX_OFF + 1), len);
    pub_inv_planes(out, pl, b, n, esz);
    check_same(want, out, len, "gck_unshuffle_xor_planes", n, esz, with_b, od);
    gck_test_check_guards(g_out, out, len, "gck_unshuffle_xor_planes");
    for (size_t k = 0; k < esz; k++)
        free(own[k]);
}

/* Both forms, plain and rotated. */
static void run_case(const gck_isa_pair *p, size_t n, size_t esz, int with_b, size_t oa, size_t ob, size_t od,
                     uint64_t seed)
{
    run_case_rot(p, n, esz, with_b, oa, ob, od, seed, 0);
    run_case_rot(p, n, esz, with_b, oa, ob, od, seed, 1);
}

/* Every size, every esz, b NULL or not; the small sizes under every output
 * offset 0..7, each paired with two different input offsets. */
static void test_bytes_sizes(void **state)
{
    const gck_isa_pair *p = *state;
    for (size_t si = 0; si < sizeof g_sizes / sizeof g_sizes[0]; si++)
        for (size_t ei = 0; ei < 4; ei++)
            for (int with_b = 0; with_b <= 1; with_b++)
                for (size_t od = 0; od < 8; od++) {
                    const size_t n = g_sizes[si];
                    run_case(p, n, g_esz[ei], with_b, (od * 3 + 1) % 8, (od * 5 + 2) % 8, od,
                             n * 131 + ei * 17 + od * 3 + (size_t)with_b);
                }
}

/* At and above the streaming threshold: n a multiple of 64 (every plane
 * aligned after the head) or not (only the first), with the output aligned,
 * aligned to esz but not to 32 or 64 bytes (head), or odd. */
static void test_bytes_large(void **state)
{
    const gck_isa_pair *p = *state;
    /* input offsets, output offset, elements past the threshold */
    static const size_t cases[][4] = {{0, 0, 0, 0}, {13, 50, 24, 0}, {13, 50, 24, 37}, {3, 6, 5, 37}};
    const int streams = p->isa->isa == GCK_ISA_AVX2 || p->isa->isa == GCK_ISA_AVX512;
    for (size_t ei = 0; ei < 4; ei++)
        for (int with_b = 0; with_b <= 1; with_b++)
            for (size_t ci = 0; ci < 4; ci++) {
                if (GCK_TEST_EMULATED && !streams && ci != (ei * 2 + (size_t)with_b) % 4)
                    continue; /* each layout still runs, with two of the eight kernels */
                const size_t n = GCK_BYTES_NT_MIN / g_esz[ei] + cases[ci][3];
                run_case(p, n, g_esz[ei], with_b, cases[ci][0], cases[ci][1], cases[ci][2],
                         1000 + ei * 2 + (size_t)with_b + ci * 10);
            }
}

/* b == a: every byte cancels. */
static void test_bytes_self_xor(void **state)
{
    const gck_isa_pair *p = *state;
    const size_t n = 1000 + 13;
    for (size_t ei = 0; ei < 4; ei++) {
        const size_t len = n * g_esz[ei];
        uint8_t *a = g_a + GUARD + 1, *out = gck_test_guarded(g_out, 2, len);
        fill_random(a, len, 77 + ei);
        p->isa->xor_shuffle(out, a, a, n, g_esz[ei]);
        for (size_t j = 0; j < len; j++)
            assert_int_equal(out[j], 0);
    }
}

/* The edges the preconditions allow: n == 0 touches nothing (pointers may
 * be NULL), adjacent buffers are fine. (Arguments outside the
 * preconditions are undefined behaviour, as for every kernel: not tested.) */
static void test_bytes_edges(void **state)
{
    (void)state;
    const uint8_t *a = g_a;
    gck_xor_shuffle(NULL, NULL, NULL, 0, 8);
    gck_unshuffle_xor(NULL, NULL, NULL, 0, 1);
    gck_unshuffle_xor_planes(NULL, NULL, NULL, 0, 4);
    memset(g_out, GCK_TEST_GUARD_BYTE, 256);
    gck_xor_shuffle(g_out, a, NULL, 0, 4);
    gck_unshuffle_xor(g_out, a, NULL, 0, 2);
    assert_int_equal(g_out[0], GCK_TEST_GUARD_BYTE);
    for (size_t i = 0; i < 32; i++)
        g_out[i] = (uint8_t)(i * 37 + 1), g_out[32 + i] = (uint8_t)(i * 11 + 5);
    gck_xor_shuffle(g_out + 16, g_out, g_out + 32, 4, 4); /* dst right after a, right before b */
    uint8_t want[16];
    for (size_t k = 0; k < 4; k++)
        for (size_t i = 0; i < 4; i++)
            want[k * 4 + i] = (uint8_t)(((i * 4 + k) * 37 + 1) ^ ((i * 4 + k) * 11 + 5));
    assert_memory_equal(g_out + 16, want, 16);
    gck_unshuffle_xor(g_out + 16 + 64, g_out + 16, g_out + 32, 4, 4);
    assert_memory_equal(g_out + 80, g_out, 16);
}

GCK_PER_ISA_MAIN(setup, teardown, GCK_ISA_TEST(test_bytes_edges), GCK_ISA_TEST(test_bytes_sizes),
                 GCK_ISA_TEST(test_bytes_self_xor), GCK_ISA_TEST(test_bytes_large))
