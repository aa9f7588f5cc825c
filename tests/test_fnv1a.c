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
    /* misaligned start is just bytes */
    assert_true(gck_fnv1a64(buf + 1, 10, GCK_FNV1A64_INIT) == gck_fnv1a64(&buf[1], 10, GCK_FNV1A64_INIT));
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
        cmocka_unit_test(test_le_bytes_of_double),
    };
    return cmocka_run_group_tests_name("fnv1a", tests, NULL, NULL);
}
