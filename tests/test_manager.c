/* tests/test_manager.c - gck_manager against the seed's rules (SPEC 1.5; the seed's tests in spirit). */
#include <string.h>

#include "support/gck_test.h"

#include "alloc_internal.h"

static const char *const W1B1[] = {"w1", "b1"};
static const char *const W1B1W2[] = {"w1", "b1", "w2"};

static gck_manager *make(size_t max, uint64_t every, uint64_t threshold)
{
    gck_policy p;
    gck_policy_init(&p);
    p.max_checkpoints = max, p.keep_every_n = every, p.delta_threshold_bytes = threshold;
    gck_manager *m = NULL;
    assert_int_equal(gck_manager_create(&p, &m), GCK_OK);
    return m;
}

static uint64_t save(gck_manager *m, uint64_t bytes, const char *tag)
{
    uint64_t v = 0;
    const char *tags[] = {tag};
    assert_int_equal(gck_manager_save(m, W1B1, 2, bytes, 1000, tags, tag ? 1 : 0, &v), GCK_OK);
    return v;
}

static void test_policy_defaults(void **state)
{
    (void)state;
    gck_policy p;
    gck_policy_init(&p);
    assert_int_equal(p.max_checkpoints, 10);
    assert_int_equal(p.keep_every_n, 5);
    assert_int_equal(p.delta_threshold_bytes, 1048576);
    gck_policy_init(NULL);
    gck_manager *m = NULL;
    assert_int_equal(gck_manager_create(NULL, &m), GCK_OK);
    assert_int_equal(gck_manager_next_version(m), 1);
    assert_null(gck_manager_latest(m));
    assert_int_equal(gck_manager_versions(m, NULL, 0), 0);
    gck_manager_destroy(m);
    assert_int_equal(gck_manager_create(NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    gck_manager_destroy(NULL);
}

/* The seed's doc example. */
static void test_seed_example(void **state)
{
    (void)state;
    gck_manager *m = NULL;
    assert_int_equal(gck_manager_create(NULL, &m), GCK_OK);
    uint64_t v1 = 0, v2 = 0;
    assert_int_equal(gck_manager_save(m, W1B1, 2, 2000000, 1000, NULL, 0, &v1), GCK_OK);
    const char *best[] = {"best"};
    assert_int_equal(gck_manager_save(m, W1B1W2, 3, 2000000, 2000, best, 1, &v2), GCK_OK);
    assert_int_equal(v1, 1);
    assert_int_equal(v2, 2);
    const gck_entry *l = gck_manager_latest(m);
    assert_non_null(l);
    assert_int_equal(l->version, v2);
    assert_int_equal(l->timestamp_secs, 2000);
    assert_int_equal(l->n_tensor_names, 3);
    assert_string_equal(l->tensor_names[2], "w2");
    assert_int_equal(l->n_tags, 1);
    assert_string_equal(l->tags[0], "best");
    assert_true(l->is_delta); /* 2 MB > 1 MiB threshold, 2 % 5 != 0 */
    assert_int_equal(l->delta_from, 1);
    assert_false(gck_manager_get(m, 1)->is_delta); /* first one is full */
    gck_manager_destroy(m);
}

static void test_full_or_delta(void **state)
{
    (void)state;
    gck_manager *m = make(100, 5, 1000);
    for (uint64_t v = 1; v <= 12; v++)
        assert_int_equal(save(m, 5000, NULL), v);
    for (uint64_t v = 1; v <= 12; v++) {
        const gck_entry *e = gck_manager_get(m, v);
        const int full = v == 1 || v % 5 == 0;
        assert_int_equal(e->is_delta, !full);
        if (!full)
            assert_int_equal(e->delta_from, v - 1);
    }
    /* at or under the threshold: always full */
    assert_int_equal(save(m, 1000, NULL), 13);
    assert_false(gck_manager_get(m, 13)->is_delta);
    assert_int_equal(save(m, 1001, NULL), 14);
    assert_true(gck_manager_get(m, 14)->is_delta);
    gck_manager_destroy(m);

    /* keep_every_n = 0: never forced */
    m = make(100, 0, 0);
    for (uint64_t v = 1; v <= 11; v++)
        save(m, 10, NULL);
    for (uint64_t v = 2; v <= 11; v++)
        assert_true(gck_manager_get(m, v)->is_delta);
    gck_manager_destroy(m);

    /* keep_every_n = 1: always full */
    m = make(100, 1, 0);
    for (uint64_t v = 1; v <= 4; v++)
        save(m, 10, NULL);
    gck_manager_stats s = gck_manager_stats_get(m);
    assert_int_equal(s.full_checkpoints, 4);
    assert_int_equal(s.delta_checkpoints, 0);
    gck_manager_destroy(m);
}

static void test_eviction(void **state)
{
    (void)state;
    gck_manager *m = make(3, 0, 0);
    for (int i = 0; i < 5; i++)
        save(m, 100, NULL);
    uint64_t vs[8];
    assert_int_equal(gck_manager_versions(m, vs, 8), 3);
    assert_int_equal(vs[0], 3);
    assert_int_equal(vs[1], 4);
    assert_int_equal(vs[2], 5);
    assert_null(gck_manager_get(m, 1));
    assert_int_equal(gck_manager_next_version(m), 6);
    /* versions() with a small cap still says how many */
    assert_int_equal(gck_manager_versions(m, vs, 1), 3);
    assert_int_equal(vs[0], 3);
    gck_manager_destroy(m);

    /* the oldest UNTAGGED one goes */
    m = make(3, 0, 0);
    save(m, 100, "keep");
    save(m, 100, NULL);
    save(m, 100, NULL);
    save(m, 100, NULL);
    assert_int_equal(gck_manager_versions(m, vs, 8), 3);
    assert_int_equal(vs[0], 1);
    assert_int_equal(vs[1], 3);
    assert_int_equal(vs[2], 4);
    gck_manager_destroy(m);

    /* all tagged: grows past the bound */
    m = make(2, 0, 0);
    save(m, 100, "a");
    save(m, 100, "b");
    save(m, 100, "c");
    assert_int_equal(gck_manager_versions(m, NULL, 0), 3);
    save(m, 100, NULL);
    assert_int_equal(gck_manager_versions(m, NULL, 0), 4);
    save(m, 100, NULL); /* now the untagged v4 is the oldest untagged */
    assert_int_equal(gck_manager_versions(m, vs, 8), 4);
    assert_int_equal(vs[3], 5);
    assert_null(gck_manager_get(m, 4));
    gck_manager_destroy(m);

    /* the seed's order: decide (delta from v1), then evict v1 */
    m = make(1, 0, 0);
    save(m, 100, NULL);
    save(m, 100, NULL);
    assert_int_equal(gck_manager_versions(m, vs, 8), 1);
    assert_int_equal(vs[0], 2);
    assert_true(gck_manager_get(m, 2)->is_delta);
    assert_int_equal(gck_manager_get(m, 2)->delta_from, 1);
    gck_manager_destroy(m);

    /* max_checkpoints = 0 behaves as 1 */
    m = make(0, 0, 0);
    save(m, 100, NULL);
    save(m, 100, NULL);
    assert_int_equal(gck_manager_versions(m, NULL, 0), 1);
    gck_manager_destroy(m);
}

static void test_tags(void **state)
{
    (void)state;
    gck_manager *m = make(10, 5, 0);
    save(m, 100, NULL);
    assert_int_equal(gck_manager_tag(m, 1, "best"), 1);
    assert_int_equal(gck_manager_tag(m, 1, "best"), 1); /* appended again, as the seed does */
    assert_int_equal(gck_manager_get(m, 1)->n_tags, 2);
    assert_int_equal(gck_manager_tag(m, 7, "x"), 0);
    assert_int_equal(gck_manager_tag(m, 1, NULL), 0);
    assert_int_equal(gck_manager_tag(NULL, 1, "x"), 0);
    /* a failed allocation adds nothing */
    gck_alloc_fail_after(0);
    assert_int_equal(gck_manager_tag(m, 1, "third"), 0);
    gck_alloc_fail_after(-1);
    assert_int_equal(gck_manager_get(m, 1)->n_tags, 2);
    for (int i = 0; i < 20; i++)
        assert_int_equal(gck_manager_tag(m, 1, "more"), 1);
    assert_int_equal(gck_manager_get(m, 1)->n_tags, 22);
    assert_string_equal(gck_manager_get(m, 1)->tags[21], "more");
    gck_manager_destroy(m);
}

static void test_compute_delta(void **state)
{
    (void)state;
    gck_manager *m = make(10, 5, 0);
    assert_int_equal(gck_manager_save(m, W1B1, 2, 1000, 1, NULL, 0, NULL), GCK_OK);
    assert_int_equal(gck_manager_save(m, W1B1W2, 3, 2000, 2, NULL, 0, NULL), GCK_OK);
    gck_delta d;
    assert_int_equal(gck_manager_compute_delta(m, 1, 2, &d), GCK_OK);
    assert_int_equal(d.from_version, 1);
    assert_int_equal(d.to_version, 2);
    assert_int_equal(d.n_changed, 1);
    assert_string_equal(d.changed_tensors[0], "w2");
    assert_int_equal(d.delta_bytes, 600);
    assert_true(gck_delta_compression_ratio(&d, 2000) == 0.3);
    assert_true(gck_delta_compression_ratio(&d, 0) == 600.0);
    gck_delta_clear(&d);
    assert_null(d.changed_tensors);
    assert_int_equal(d.n_changed, 0);
    /* reversed: nothing in v1 is absent from v2 */
    assert_int_equal(gck_manager_compute_delta(m, 2, 1, &d), GCK_OK);
    assert_int_equal(d.n_changed, 0);
    assert_int_equal(d.delta_bytes, 300);
    gck_delta_clear(&d);
    gck_delta_clear(NULL);
    gck_delta sentinel = {.from_version = 77};
    assert_int_equal(gck_manager_compute_delta(m, 1, 9, &sentinel), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "9"));
    assert_int_equal(gck_manager_compute_delta(m, 9, 1, &sentinel), GCK_ERR_NOT_FOUND);
    assert_int_equal(sentinel.from_version, 77);
    assert_int_equal(gck_manager_compute_delta(NULL, 1, 2, &d), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_manager_compute_delta(m, 1, 2, NULL), GCK_ERR_INVALID_ARGUMENT);
    /* (uint64_t)(x * 0.3) truncates */
    assert_int_equal(gck_manager_save(m, W1B1, 2, 7, 3, NULL, 0, NULL), GCK_OK);
    assert_int_equal(gck_manager_compute_delta(m, 3, 3, &d), GCK_OK);
    assert_int_equal(d.delta_bytes, 2);
    gck_delta_clear(&d);
    assert_true(gck_delta_compression_ratio(NULL, 5) == 0.0);
    gck_manager_destroy(m);
}

static void test_stats(void **state)
{
    (void)state;
    gck_manager *m = make(3, 5, 0);
    for (int i = 0; i < 6; i++)
        save(m, 100 * (uint64_t)(i + 1), NULL);
    /* retained: v4 (delta), v5 (full), v6 (delta) */
    gck_manager_stats s = gck_manager_stats_get(m);
    assert_int_equal(s.total_checkpoints, 3);
    assert_int_equal(s.full_checkpoints, 1);
    assert_int_equal(s.delta_checkpoints, 2);
    assert_int_equal(s.total_bytes, 400 + 500 + 600);
    assert_true(gck_manager_stats_delta_ratio(&s) == 2.0 / 3.0);
    gck_manager_stats z = gck_manager_stats_get(NULL);
    assert_int_equal(z.total_checkpoints, 0);
    assert_true(gck_manager_stats_delta_ratio(&z) == 0.0);
    assert_true(gck_manager_stats_delta_ratio(NULL) == 0.0);
    gck_manager_destroy(m);
}

/* Bad input and every allocation failure leave the manager as it was. */
static void test_errors_leave_state(void **state)
{
    (void)state;
    gck_manager *m = make(2, 0, 0);
    save(m, 100, NULL);
    save(m, 100, NULL);
    const char *const with_null[] = {"a", NULL};
    uint64_t v = 99;
    assert_int_equal(gck_manager_save(NULL, W1B1, 2, 1, 1, NULL, 0, &v), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_manager_save(m, NULL, 2, 1, 1, NULL, 0, &v), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_manager_save(m, with_null, 2, 1, 1, NULL, 0, &v), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "tensor_names[1]"));
    assert_int_equal(gck_manager_save(m, W1B1, 2, 1, 1, NULL, 1, &v), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_manager_save(m, W1B1, 2, 1, 1, with_null, 2, &v), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(v, 99);
    for (long k = 0;; k++) {
        gck_alloc_fail_after(k);
        const char *tags[] = {"t1", "t2"};
        const gck_status st = gck_manager_save(m, W1B1W2, 3, 100, 5, tags, 2, &v);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK)
            break;
        assert_int_equal(st, GCK_ERR_NO_MEMORY);
        uint64_t vs[4];
        assert_int_equal(gck_manager_versions(m, vs, 4), 2);
        assert_int_equal(vs[0], 1);
        assert_int_equal(vs[1], 2);
        assert_int_equal(gck_manager_next_version(m), 3);
    }
    assert_int_equal(v, 3);
    assert_null(gck_manager_get(m, 1));
    assert_null(gck_manager_get(NULL, 1));
    assert_null(gck_manager_latest(NULL));
    assert_int_equal(gck_manager_versions(NULL, NULL, 0), 0);
    assert_int_equal(gck_manager_next_version(NULL), 0);
    /* no names at all is a valid save */
    assert_int_equal(gck_manager_save(m, NULL, 0, 0, 0, NULL, 0, NULL), GCK_OK);
    assert_int_equal(gck_manager_latest(m)->n_tensor_names, 0);
    gck_manager_destroy(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_policy_defaults), cmocka_unit_test(test_seed_example),
        cmocka_unit_test(test_full_or_delta),   cmocka_unit_test(test_eviction),
        cmocka_unit_test(test_tags),            cmocka_unit_test(test_compute_delta),
        cmocka_unit_test(test_stats),           cmocka_unit_test(test_errors_leave_state),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
