/* tests/support/gck_test.h - shared test helpers: ISA choice, inputs, bit comparisons.
 *
 * Bit comparison rule: two doubles (or floats) are "the same" when their bits
 * are equal, or when both are NaN. NaN payloads are not compared: compilers
 * may commute a + b, and x86 and AArch64 create NaNs with different signs. */
#ifndef GCK_TEST_H
#define GCK_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <gradckpt/gradckpt.h>

#include "kernels_internal.h"

/* Exit code CTest treats as "skipped" (SKIP_RETURN_CODE). */
#define GCK_TEST_SKIP 77

/* The ISA under test and the reference it is compared with. */
typedef struct gck_isa_pair {
    const gck_kernel_table *ref; /* scalar */
    const gck_kernel_table *isa; /* the one named by --isa */
} gck_isa_pair;

/* Reads "--isa NAME" (default scalar), selects it for the public API too.
 * Returns 0 when ready, GCK_TEST_SKIP when this CPU cannot run it (after
 * saying so on stderr), 2 on a bad argument. */
int gck_test_isa_from_args(int argc, char **argv, gck_isa_pair *out);

/* main() of a per-ISA test: parses --isa (exit 77 when the CPU cannot run
 * it), then runs the listed tests as a group named after the ISA. List the
 * tests with GCK_ISA_TEST(fn); each receives the gck_isa_pair as *state. */
#define GCK_ISA_TEST(fn) cmocka_unit_test_prestate(fn, &gck_pair_)
#define GCK_PER_ISA_MAIN(setup, teardown, ...)                                       \
    int main(int argc, char **argv)                                                   \
    {                                                                                 \
        static gck_isa_pair gck_pair_;                                                \
        const int rc_ = gck_test_isa_from_args(argc, argv, &gck_pair_);               \
        if (rc_ != 0)                                                                 \
            return rc_;                                                               \
        const struct CMUnitTest tests_[] = {__VA_ARGS__};                             \
        return cmocka_run_group_tests_name(gck_pair_.isa->name, tests_, setup, teardown); \
    }

/* splitmix64: a portable generator, identical on every platform. */
uint64_t gck_test_rand(uint64_t *state);
/* Uniform in [-1, 1), exact multiples of 2^-52. */
double gck_test_uniform(uint64_t *state);

/* Input families for kernel tests. */
typedef enum gck_test_kind {
    GCK_K_UNIFORM,     /* [-1, 1) */
    GCK_K_ILL_SCALED,  /* random exponents in [-300, 300] */
    GCK_K_HUGE,        /* near the f64 overflow limit (squares overflow) */
    GCK_K_TINY,        /* near and below the f64 underflow limit (denormals) */
    GCK_K_DENORMAL,    /* subnormal values only */
    GCK_K_WITH_NAN,    /* uniform with one NaN */
    GCK_K_WITH_INF,    /* uniform with one +Inf and one -Inf */
    GCK_K_ZERO,        /* all +0 and -0 */
    GCK_K_COUNT
} gck_test_kind;
const char *gck_test_kind_name(gck_test_kind k);

/* Fill x[0..n) with family k (f64; f32 variants scale into float range). */
void gck_test_fill_f64(double *x, size_t n, gck_test_kind k, uint64_t seed);
void gck_test_fill_f32(float *x, size_t n, gck_test_kind k, uint64_t seed);

/* Sizes every kernel test walks: 0, 1, small odd, lane and block boundaries
 * +- 1, chunk boundaries, and sizes above the OpenMP threshold. */
extern const size_t gck_test_sizes[];
extern const size_t gck_test_nsizes;
/* The largest of gck_test_sizes. */
size_t gck_test_max_size(void);

/* Misalignments (in elements) applied to pointers: 0 and 1, and 3 for f32. */
#define GCK_TEST_MAX_OFFSET 3

int gck_same_f64(double a, double b);
int gck_same_f32(float a, float b);

/* Fails the current cmocka test with a formatted message. */
#define gck_assert_same_f64(want, got, ...)                                         \
    do {                                                                            \
        double w_ = (want), g_ = (got);                                             \
        if (!gck_same_f64(w_, g_)) {                                                \
            print_error("want %a got %a: ", w_, g_);                                \
            print_error(__VA_ARGS__);                                               \
            print_error("\n");                                                      \
            fail();                                                                 \
        }                                                                           \
    } while (0)

/* omp_set_num_threads(t) when built with OpenMP, else nothing. */
void gck_test_set_threads(int t);

/* Aligned allocation helpers that fail the test on OOM. */
void *gck_test_alloc(size_t bytes);

/* Guarded outputs: an area of len bytes at buf + GCK_TEST_GUARD + off with
 * GCK_TEST_GUARD_BYTE all around it (buf holds GCK_TEST_GUARD + off + len +
 * GCK_TEST_GUARD bytes), and the check that nothing around it was written
 * (fails the test naming `what`). */
#define GCK_TEST_GUARD 64
#define GCK_TEST_GUARD_BYTE 0xA5
uint8_t *gck_test_guarded(uint8_t *buf, size_t off, size_t len);
void gck_test_check_guards(const uint8_t *buf, const uint8_t *out, size_t len, const char *what);

/* Distance in units in the last place between two finite doubles of the
 * same sign (|ordered bits difference|). */
uint64_t gck_ulp_diff(double a, double b);

#endif /* GCK_TEST_H */
