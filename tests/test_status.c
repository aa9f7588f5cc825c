/* tests/test_status.c - status names and the thread-local error message. */
#include <pthread.h>
#include <string.h>

#include "support/gck_test.h"

#include "status_internal.h"

static void test_every_status_has_a_name(void **state)
{
    (void)state;
    static const char *const want[GCK_STATUS_COUNT] = {
        "GCK_OK", "GCK_ERR_INVALID_ARGUMENT", "GCK_ERR_NO_MEMORY", "GCK_ERR_NO_ACCUMULATED_GRADIENTS",
        "GCK_ERR_NOT_FOUND", "GCK_ERR_DIMENSION_MISMATCH", "GCK_ERR_NONFINITE", "GCK_ERR_IO",
        "GCK_ERR_CORRUPT", "GCK_ERR_UNSUPPORTED",
    };
    for (int s = 0; s < GCK_STATUS_COUNT; s++)
        assert_string_equal(gck_status_name((gck_status)s), want[s]);
    /* pinned numeric values */
    assert_int_equal(GCK_OK, 0);
    assert_int_equal(GCK_ERR_UNSUPPORTED, 9);
    assert_string_equal(gck_status_name((gck_status)GCK_STATUS_COUNT), "GCK_ERR_UNKNOWN");
    assert_string_equal(gck_status_name((gck_status)-1), "GCK_ERR_UNKNOWN");
    assert_string_equal(gck_status_name((gck_status)12345), "GCK_ERR_UNKNOWN");
}

static void test_fail_formats_message(void **state)
{
    (void)state;
    assert_non_null(gck_last_error());
    assert_int_equal(gck_fail(GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer '%s': expected %d, got %d",
                              "fc1", 4, 3),
                     GCK_ERR_DIMENSION_MISMATCH);
    assert_string_equal(gck_last_error(), "dimension mismatch for layer 'fc1': expected 4, got 3");
    /* over-long messages are cut, never overflow */
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gck_fail(GCK_ERR_IO, "%s", big);
    assert_int_equal(strlen(gck_last_error()), GCK_ERROR_MAX - 1);
    assert_string_equal(gck_last_error() + GCK_ERROR_MAX - 4, "...");
    /* wrapping the current message in a new one */
    gck_fail(GCK_ERR_IO, "inner %d", 7);
    gck_fail(GCK_ERR_CORRUPT, "outer: %s", gck_last_error());
    assert_string_equal(gck_last_error(), "outer: inner 7");
}

static gck_status inner_fails(int k)
{
    return gck_fail(GCK_ERR_CORRUPT, "plane %d is short", k);
}

static gck_status middle(int k)
{
    GCK_TRY_CTX(inner_fails(k), "item '%s'", "w");
    return GCK_OK;
}

static gck_status outer(void)
{
    GCK_TRY_CTX(middle(3), "version %d", 7);
    return GCK_OK;
}

static gck_status passes(void)
{
    GCK_TRY_CTX(GCK_OK, "never formatted %d", 1);
    return GCK_OK;
}

/* GCK_TRY_CTX keeps the status and prefixes each level's context; gck_fail_oom's one message. */
static void test_context_and_oom(void **state)
{
    (void)state;
    assert_int_equal(outer(), GCK_ERR_CORRUPT);
    assert_string_equal(gck_last_error(), "version 7: item 'w': plane 3 is short");
    gck_fail(GCK_ERR_IO, "kept");
    assert_int_equal(passes(), GCK_OK);
    assert_string_equal(gck_last_error(), "kept");
    assert_int_equal(gck_fail_ctx(GCK_ERR_IO, "ctx %s", "x"), GCK_ERR_IO);
    assert_string_equal(gck_last_error(), "ctx x: kept");
    assert_int_equal(gck_fail_oom("delta arena", 4096), GCK_ERR_NO_MEMORY);
    assert_string_equal(gck_last_error(), "out of memory: delta arena (4096 bytes)");
    /* a long chain is cut like any message, never overflows */
    char big[2000];
    memset(big, 'y', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    gck_fail(GCK_ERR_IO, "%s", big);
    gck_fail_ctx(GCK_ERR_IO, "%s", big);
    assert_int_equal(strlen(gck_last_error()), GCK_ERROR_MAX - 1);
}

static void *other_thread(void *arg)
{
    (void)arg;
    const int fresh = gck_last_error()[0] == '\0';
    gck_fail(GCK_ERR_IO, "from the other thread");
    return (void *)(size_t)fresh;
}

static void test_message_is_thread_local(void **state)
{
    (void)state;
    gck_fail(GCK_ERR_NOT_FOUND, "main thread message");
    pthread_t th;
    void *fresh = NULL;
    assert_int_equal(pthread_create(&th, NULL, other_thread, NULL), 0);
    assert_int_equal(pthread_join(th, &fresh), 0);
    assert_true(fresh != NULL); /* the other thread started with an empty message */
    assert_string_equal(gck_last_error(), "main thread message");
}

static void test_public_errors_set_message(void **state)
{
    (void)state;
    gck_isa isa = GCK_ISA_AVX2;
    assert_int_equal(gck_isa_from_name("sse9", &isa), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(isa, GCK_ISA_AVX2); /* unchanged */
    assert_non_null(strstr(gck_last_error(), "sse9"));
    assert_int_equal(gck_isa_from_name(NULL, &isa), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "NULL"));
    assert_non_null(gck_version_string());
    assert_string_equal(gck_version_string(), GCK_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_status_has_a_name),
        cmocka_unit_test(test_fail_formats_message),
        cmocka_unit_test(test_message_is_thread_local),
        cmocka_unit_test(test_context_and_oom),
        cmocka_unit_test(test_public_errors_set_message),
    };
    return cmocka_run_group_tests_name("status", tests, NULL, NULL);
}
