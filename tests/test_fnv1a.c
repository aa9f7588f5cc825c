/* tests/test_fnv1a.c - FNV-1a 64 known vectors and chaining. */
#include <string.h>

#include "support/gck_test.h"

static void test_known_vectors(void **state)
{
    (void)state;
    assert_true(gck_fnv1a64("", 0, GCK_FNV1A64_INIT) == UINT64_C(0xcbf29ce484222325));
    assert_true(gck_fnv1a64("a", 1, GCK_FNV1A64_INIT) == UINT64_C(0xaf63dc4c8601ec8c));
    assert_true(gck_fnv1a64("foobar", 6, GCK_FNV1A64_INIT) == UINT64_C(0x85944171f73967e8));
    assert_true(GCK_FNV1A64_INIT == UINT64_C(14695981039346656037));
}

static void test_chaining(void **state)
{
    (void)state;
    unsigned char buf[1000];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131u + 7u);
    const uint64_t whole = gck_fnv1a64(buf, sizeof buf, GCK_FNV1A64_INIT);
    for (size_t cut = 0; cut <= sizeof buf; cut += 97) {
        uint64_t h = gck_fnv1a64(buf, cut, GCK_FNV1A64_INIT);
        h = gck_fnv1a64(buf + cut, sizeof buf - cut, h);
        assert_true(h == whole);
    }
}

/* FNV-1a 64 as its definition states it, one byte at a time. */
static uint64_t fnv1a_reference(const unsigned char *p, size_t n, uint64_t h)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

/* A start at any address is just bytes: the same bytes at an aligned
 * address, and the definition, give the same hash, for every offset within
 * a word and lengths across the kernel's unrolled steps and tails. */
static void test_misaligned(void **state)
{
    (void)state;
    _Alignas(64) unsigned char buf[300], copy[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131u + 7u);
    for (size_t off = 0; off < 16; off++)
        for (size_t n = 0; n + off <= 200; n += n < 40 ? 1 : 13) {
            memcpy(copy, buf + off, n);
            const uint64_t want = fnv1a_reference(buf + off, n, GCK_FNV1A64_INIT);
            assert_true(gck_fnv1a64(copy, n, GCK_FNV1A64_INIT) == want);
            assert_true(gck_fnv1a64(buf + off, n, GCK_FNV1A64_INIT) == want);
        }
}

/* The checksum rule is "little-endian bytes of each value": the same values
 * must give the same hash on a big-endian CPU, so hash explicit LE bytes. */
static void test_le_bytes_of_double(void **state)
{
    (void)state;
    const double v = 1.0; /* 0x3ff0000000000000 */
    unsigned char le[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    uint64_t u;
    memcpy(&u, &v, 8);
    unsigned char mine[8];
    for (int i = 0; i < 8; i++)
        mine[i] = (unsigned char)(u >> (8 * i));
    assert_memory_equal(le, mine, 8);
    assert_true(gck_fnv1a64(le, 8, GCK_FNV1A64_INIT) == gck_fnv1a64(mine, 8, GCK_FNV1A64_INIT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_chaining),
        cmocka_unit_test(test_misaligned),
        cmocka_unit_test(test_le_bytes_of_double),
    };
    return cmocka_run_group_tests_name("fnv1a", tests, NULL, NULL);
}
