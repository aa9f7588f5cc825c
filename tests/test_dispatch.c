/* tests/test_dispatch.c - ISA detection, selection, names, GRADCKPT_ISA, no empty slot.
 *
 * Modes (CTest runs each with its own environment):
 *   (none)                       the API checks below
 *   --expect-active NAME         GRADCKPT_ISA chose NAME
 *   --expect-env-refused VALUE   GRADCKPT_ISA=VALUE was refused with one stderr
 *                                line naming it, and the best ISA is in use
 *   --expect-widen VALUE         GRADCKPT_AVX512_WIDEN=VALUE chose the zmm
 *                                shape for zmm, the ymm one for ymm; any
 *                                other value was refused with one stderr line
 *                                naming it, and the CPU's own choice holds
 *   --expect-pages VALUE         the same for GRADCKPT_PAGE_STREAMS (1 or 4) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "support/gck_test.h"

#include "cpu.h"

static void test_names_round_trip(void **state)
{
    (void)state;
    static const char *const names[GCK_ISA_COUNT] = {"scalar", "avx2", "avx512", "neon"};
    for (int i = 0; i < GCK_ISA_COUNT; i++) {
        assert_string_equal(gck_isa_name((gck_isa)i), names[i]);
        gck_isa back = GCK_ISA_COUNT;
        assert_int_equal(gck_isa_from_name(names[i], &back), GCK_OK);
        assert_int_equal(back, i);
    }
    assert_string_equal(gck_isa_name((gck_isa)GCK_ISA_COUNT), "unknown");
    assert_string_equal(gck_isa_name((gck_isa)-1), "unknown");
    gck_isa out = GCK_ISA_NEON;
    assert_int_equal(gck_isa_from_name("AVX2", &out), GCK_ERR_INVALID_ARGUMENT); /* exact names only */
    assert_int_equal(gck_isa_from_name("", &out), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(out, GCK_ISA_NEON);
}

static void test_scalar_always_available(void **state)
{
    (void)state;
    assert_int_equal(gck_isa_available(GCK_ISA_SCALAR), 1);
    assert_int_equal(gck_isa_available((gck_isa)-1), 0);
    assert_int_equal(gck_isa_available((gck_isa)GCK_ISA_COUNT), 0);
    assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);
    assert_int_equal(gck_isa_active(), GCK_ISA_SCALAR);
}

static void test_select_refuses(void **state)
{
    (void)state;
    assert_int_equal(gck_isa_select(GCK_ISA_SCALAR), GCK_OK);
    assert_int_equal(gck_isa_select((gck_isa)99), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "99"));
    assert_int_equal(gck_isa_select((gck_isa)-3), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_isa_active(), GCK_ISA_SCALAR);
    for (int i = 0; i < GCK_ISA_COUNT; i++) {
        const gck_status s = gck_isa_select((gck_isa)i);
        if (gck_isa_available((gck_isa)i)) {
            assert_int_equal(s, GCK_OK);
            assert_int_equal(gck_isa_active(), i);
        } else {
            assert_int_equal(s, GCK_ERR_UNSUPPORTED);
            assert_non_null(strstr(gck_last_error(), gck_isa_name((gck_isa)i)));
            assert_int_not_equal(gck_isa_active(), i);
        }
    }
}

/* What CMake compiled in is exactly what the dispatcher knows; available
 * means compiled in and runnable here. */
static void test_compiled_tables_match_build(void **state)
{
    (void)state;
    char list[128];
    snprintf(list, sizeof list, ";%s;", GCK_EXPECTED_ISAS);
    for (int i = 0; i < GCK_ISA_COUNT; i++) {
        char key[32];
        snprintf(key, sizeof key, ";%s;", gck_isa_name((gck_isa)i));
        const int expected = strstr(list, key) != NULL;
        const gck_kernel_table *t = gck_kernels_compiled((gck_isa)i);
        assert_int_equal(t != NULL, expected);
        if (t != NULL) {
            assert_int_equal(t->isa, i);
            assert_string_equal(t->name, gck_isa_name((gck_isa)i));
        }
        assert_int_equal(gck_isa_available((gck_isa)i), expected && gck_cpu_can_run((gck_isa)i));
    }
}

static void test_no_empty_slot(void **state)
{
    (void)state;
    for (int i = 0; i < GCK_ISA_COUNT; i++) {
        const gck_kernel_table *t = gck_kernels_compiled((gck_isa)i);
        if (t == NULL)
            continue;
#define GCK_CHECK_SLOT(slot, ret, params) \
    if (t->slot == NULL)                  \
        fail_msg("%s: slot %s is empty", t->name, #slot);
        GCK_KERNEL_LIST(GCK_CHECK_SLOT)
#undef GCK_CHECK_SLOT
    }
}

/* The best available ISA: what first use picks without GRADCKPT_ISA. */
static gck_isa best_isa(void)
{
    static const gck_isa order[] = {GCK_ISA_AVX512, GCK_ISA_AVX2, GCK_ISA_NEON};
    for (size_t i = 0; i < 3; i++)
        if (gck_isa_available(order[i]))
            return order[i];
    return GCK_ISA_SCALAR;
}

static int expect_active(const char *name)
{
    gck_isa want;
    if (gck_isa_from_name(name, &want) == GCK_OK && !gck_isa_available(want)) {
        fprintf(stderr, "skipped: %s cannot run on this CPU/OS\n", name);
        return GCK_TEST_SKIP;
    }
    const char *got = gck_isa_name(gck_isa_active()); /* first use: reads GRADCKPT_ISA */
    if (strcmp(got, name) != 0) {
        fprintf(stderr, "GRADCKPT_ISA=%s: active ISA is %s, expected %s\n", getenv("GRADCKPT_ISA"), got, name);
        return 1;
    }
    printf("GRADCKPT_ISA=%s -> %s\n", getenv("GRADCKPT_ISA"), got);
    return 0;
}

/* Runs first use with stderr captured into msg (cap bytes); returns the
 * number of lines captured, -1 if nothing could be captured. */
static int capture_first_use(char *msg, size_t cap, gck_isa *active)
{
    char path[] = "/tmp/gck_dispatch_XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0)
        return -1;
    fflush(stderr);
    const int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    *active = gck_isa_active(); /* first use: the ISA choice and the CPU probe */
    (void)gck_cpu_features_get();
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    memset(msg, 0, cap);
    const ssize_t got = pread(fd, msg, cap - 1, 0);
    close(fd);
    unlink(path);
    int lines = 0;
    for (ssize_t i = 0; i < got; i++)
        lines += msg[i] == '\n';
    if (got > 0)
        fprintf(stderr, "captured: %s", msg);
    return lines;
}

/* One line naming var and value, or none when quiet. */
static int check_lines(const char *msg, int lines, const char *var, const char *value, int quiet)
{
    if (quiet ? lines == 0 : (lines == 1 && strstr(msg, value) != NULL && strstr(msg, var) != NULL))
        return 0;
    fprintf(stderr, quiet ? "%s=%s: expected nothing on stderr\n" : "%s=%s: expected one stderr line naming it\n",
            var, value);
    return 1;
}

/* VAR=value (GRADCKPT_AVX512_WIDEN: which 0, GRADCKPT_PAGE_STREAMS: 1): a
 * known value chose want; any other was refused with one stderr line naming
 * it, leaving the CPU's own choice, cpu. */
static int expect_tune(const char *var, const char *value, int known, int want, int cpu, int which)
{
    char msg[512];
    gck_isa active;
    const int lines = capture_first_use(msg, sizeof msg, &active);
    if (lines < 0 || check_lines(msg, lines, var, value, known))
        return 1;
    (void)gck_cpu_features_get(); /* the probe has run (capture_first_use) */
    const int got = which ? GCK_TUNE(page_streams) : GCK_TUNE(zmm_widen);
    if (!known)
        want = cpu;
    if (got != want) {
        fprintf(stderr, "%s=%s: %d expected, %d chosen\n", var, value, want, got);
        return 1;
    }
    return 0;
}

/* Captures what first use writes to stderr, then checks it. */
static int expect_env_refused(const char *value)
{
    char msg[512];
    gck_isa active;
    const int lines = capture_first_use(msg, sizeof msg, &active);
    if (lines < 0 || check_lines(msg, lines, "GRADCKPT_ISA", value, 0))
        return 1;
    if (active != best_isa()) {
        fprintf(stderr, "expected the best ISA %s, got %s\n", gck_isa_name(best_isa()), gck_isa_name(active));
        return 1;
    }
    /* a second look does not print again */
    (void)gck_isa_active();
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--expect-active") == 0)
        return expect_active(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--expect-env-refused") == 0)
        return expect_env_refused(argv[2]);
    if (argc == 3 && strcmp(argv[1], "--expect-widen") == 0) {
        const int known = strcmp(argv[2], "ymm") == 0 || strcmp(argv[2], "zmm") == 0;
        return expect_tune("GRADCKPT_AVX512_WIDEN", argv[2], known, argv[2][0] == 'z', gck_cpu_zmm_widen(), 0);
    }
    if (argc == 3 && strcmp(argv[1], "--expect-pages") == 0) {
        const int known = strcmp(argv[2], "1") == 0 || strcmp(argv[2], "4") == 0;
        return expect_tune("GRADCKPT_PAGE_STREAMS", argv[2], known, argv[2][0] - '0', gck_cpu_page_streams(), 1);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names_round_trip),
        cmocka_unit_test(test_scalar_always_available),
        cmocka_unit_test(test_select_refuses),
        cmocka_unit_test(test_compiled_tables_match_build),
        cmocka_unit_test(test_no_empty_slot),
    };
    return cmocka_run_group_tests_name("dispatch", tests, NULL, NULL);
}
