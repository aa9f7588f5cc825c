/* tests/test_json_text.c - the JSON text writer against jansson: the same bytes
 * json_dumps(JSON_COMPACT | JSON_PRESERVE_ORDER) makes, the same strings refused. */
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#include "json_text_internal.h"

/* jansson's text of the string s, or NULL when it refuses s. */
static char *jansson_str(const char *s)
{
    json_t *j = json_string(s);
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(j);
    return out;
}

/* The writer's text of s matches jansson's, or both refuse it. */
static void check_str(const char *s)
{
    gck_jtext t = {0};
    gck_jt_str(&t, s);
    char *want = jansson_str(s);
    if (want == NULL) {
        assert_int_equal(t.bad, 2);
    } else {
        assert_int_equal(t.bad, 0);
        assert_string_equal(t.p, want);
        assert_int_equal(t.len, strlen(want));
    }
    free(want);
    free(t.p);
}

static void test_special_strings(void **state)
{
    (void)state;
    static const char *const cases[] = {
        "", "a", "plain ascii name.weight", "quote \" back \\ slash /", "\b\f\n\r\t", "\x01\x02\x1f\x7f",
        "caf\xc3\xa9", "\xe2\x82\xac euro", "\xf0\x9f\x98\x80 emoji", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf",
        /* refused: lone continuation, overlong forms, surrogates, above U+10FFFF, cut sequences */
        "\x80", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf", "\xf0\x80\x80\xaf", "\xed\xa0\x80", "\xed\xbf\xbf",
        "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "ok\xc3(",
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        check_str(cases[i]);
}

/* Random byte strings biased towards the cases that matter: ASCII runs,
 * escapes, valid and broken UTF-8 sequences. */
static void test_random_strings(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    char s[64];
    for (int round = 0; round < 200000; round++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        const size_t n = (size_t)(x % 12);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            const unsigned k = (unsigned)(x >> 40) % 8;
            const unsigned b = (unsigned)(x >> 8) & 0xff;
            s[i] = (char)(k < 3 ? 0x20 + b % 0x60 : k == 3 ? b % 0x20 + 1 : k == 4 ? 0x80 + b % 0x40 : b ? b : 1);
        }
        s[n] = '\0';
        check_str(s);
    }
}

static void test_integers_and_a_header(void **state)
{
    (void)state;
    const long long vals[] = {0, 1, -1, 42, 1000000007LL, LLONG_MAX, LLONG_MIN};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        gck_jtext t = {0};
        gck_jt_int(&t, vals[i]);
        json_t *j = json_integer(vals[i]);
        char *want = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
        assert_string_equal(t.p, want);
        free(want), free(t.p);
        json_decref(j);
    }
    /* a header-shaped object, as both write it */
    json_t *root = json_object(), *md = json_object();
    json_object_set_new(md, "k\"1", json_string("v\n1"));
    json_object_set_new(root, "__metadata__", md);
    json_object_set_new(root, "w", json_pack("{s:s, s:[I,I], s:[I,I]}", "dtype", "F32", "shape", (json_int_t)3,
                                             (json_int_t)4, "data_offsets", (json_int_t)0, (json_int_t)48));
    char *want = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    gck_jtext t = {0};
    gck_jt_lit(&t, "{");
    gck_jt_key(&t, "__metadata__");
    gck_jt_raw(&t, "{", 1);
    gck_jt_key(&t, "k\"1");
    gck_jt_str(&t, "v\n1");
    gck_jt_lit(&t, "},");
    gck_jt_key(&t, "w");
    gck_jt_lit(&t, "{\"dtype\":\"F32\",\"shape\":[");
    gck_jt_int(&t, 3);
    gck_jt_raw(&t, ",", 1);
    gck_jt_int(&t, 4);
    gck_jt_lit(&t, "],\"data_offsets\":[0,48]}}");
    assert_int_equal(t.bad, 0);
    assert_string_equal(t.p, want);
    free(want), free(t.p);
}

/* After a refused string every call does nothing; a long text grows. */
static void test_bad_sticks_and_growth(void **state)
{
    (void)state;
    gck_jtext t = {0};
    gck_jt_str(&t, "\xff");
    assert_int_equal(t.bad, 2);
    const size_t len = t.len;
    gck_jt_lit(&t, "more");
    gck_jt_int(&t, 5);
    assert_int_equal(t.len, len);
    free(t.p);
    gck_jtext g = {0};
    for (int i = 0; i < 100000; i++)
        gck_jt_str(&g, "x\"y");
    assert_int_equal(g.bad, 0);
    assert_int_equal(g.len, 100000u * 6);
    assert_int_equal(strlen(g.p), g.len);
    free(g.p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_strings),
        cmocka_unit_test(test_random_strings),
        cmocka_unit_test(test_integers_and_a_header),
        cmocka_unit_test(test_bad_sticks_and_growth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
