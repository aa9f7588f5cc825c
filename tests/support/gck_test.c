/* tests/support/gck_test.c - shared test helpers. */
#include "gck_test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

int gck_test_isa_from_args(int argc, char **argv, gck_isa_pair *out)
{
    const char *name = "scalar";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
            name = argv[++i];
    }
    gck_isa isa;
    if (gck_isa_from_name(name, &isa) != GCK_OK) {
        fprintf(stderr, "bad --isa: %s\n", gck_last_error());
        return 2;
    }
    out->ref = gck_kernels_compiled(GCK_ISA_SCALAR);
    out->isa = gck_kernels_for(isa);
    if (out->isa == NULL) {
        fprintf(stderr, "skipped: ISA '%s' cannot run on this CPU/OS\n", name);
        return GCK_TEST_SKIP;
    }
    if (gck_isa_select(isa) != GCK_OK) {
        fprintf(stderr, "gck_isa_select(%s) failed: %s\n", name, gck_last_error());
        return 2;
    }
    return 0;
}

uint64_t gck_test_rand(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

double gck_test_uniform(uint64_t *state)
{
    /* 53 random bits -> [0, 2) - 1: exact on every platform */
    return (double)(gck_test_rand(state) >> 11) * 0x1p-52 - 1.0;
}

static const char *const gck_kind_names[GCK_K_COUNT] = {
    "uniform", "ill-scaled", "huge", "tiny", "denormal", "with-nan", "with-inf", "zero",
};

const char *gck_test_kind_name(gck_test_kind k)
{
    return (unsigned)k < GCK_K_COUNT ? gck_kind_names[k] : "?";
}

void gck_test_fill_f64(double *x, size_t n, gck_test_kind k, uint64_t seed)
{
    uint64_t st = seed * UINT64_C(0x2545F4914F6CDD1D) + (uint64_t)k;
    for (size_t i = 0; i < n; i++) {
        const double u = gck_test_uniform(&st);
        const int e = (int)(gck_test_rand(&st) % 601) - 300;
        switch (k) {
        case GCK_K_ILL_SCALED: x[i] = ldexp(u, e); break;
        case GCK_K_HUGE: x[i] = ldexp(0.5 + fabs(u) / 2, 1023) * (u < 0 ? -1 : 1) * (1.0 - 0x1p-53); break;
        case GCK_K_TINY: x[i] = ldexp(u, -1000 - (int)(gck_test_rand(&st) % 74)); break;
        case GCK_K_DENORMAL: x[i] = ldexp(u, -1022 - (int)(gck_test_rand(&st) % 30)); break;
        case GCK_K_ZERO: x[i] = (i & 1) ? -0.0 : 0.0; break;
        default: x[i] = u; break;
        }
    }
    if (n > 0 && k == GCK_K_WITH_NAN)
        x[(seed * 7919) % n] = NAN;
    if (n > 0 && k == GCK_K_WITH_INF) {
        x[(seed * 7919) % n] = INFINITY;
        x[(seed * 104729) % n] = -INFINITY; /* may overwrite +Inf: still an Inf */
    }
}

void gck_test_fill_f32(float *x, size_t n, gck_test_kind k, uint64_t seed)
{
    uint64_t st = seed * UINT64_C(0x2545F4914F6CDD1D) + (uint64_t)k + 1000;
    for (size_t i = 0; i < n; i++) {
        const float u = (float)(gck_test_rand(&st) >> 40) * 0x1p-23f - 1.0f; /* exact */
        const int e = (int)(gck_test_rand(&st) % 121) - 60;
        switch (k) {
        case GCK_K_ILL_SCALED: x[i] = ldexpf(u, e); break;
        case GCK_K_HUGE: x[i] = ldexpf(u < 0 ? -1.0f : 1.0f, 127) * (1.0f + fabsf(u) * 0.99f); break;
        case GCK_K_TINY: x[i] = ldexpf(u, -120 - (int)(gck_test_rand(&st) % 29)); break;
        case GCK_K_DENORMAL: x[i] = ldexpf(u, -126 - (int)(gck_test_rand(&st) % 20)); break;
        case GCK_K_ZERO: x[i] = (i & 1) ? -0.0f : 0.0f; break;
        default: x[i] = u; break;
        }
    }
    if (n > 0 && k == GCK_K_WITH_NAN)
        x[(seed * 7919) % n] = NAN;
    if (n > 0 && k == GCK_K_WITH_INF) {
        x[(seed * 7919) % n] = INFINITY;
        x[(seed * 104729) % n] = -INFINITY;
    }
}

const size_t gck_test_sizes[] = {
    0, 1, 2, 3, 5, 7, 15, 31, 33, 63, 64, 65, 127, 129, 1001,
    GCK_BLOCK - 1, GCK_BLOCK, GCK_BLOCK + 1, 2 * GCK_BLOCK + 63, 3 * GCK_BLOCK + 17,
    (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK - 1, (size_t)GCK_CHUNK_BLOCKS * GCK_BLOCK + 1,
    GCK_PARALLEL_MIN - 1, GCK_PARALLEL_MIN, GCK_PARALLEL_MIN + 1, 5 * GCK_PARALLEL_MIN / 2 + 11,
};
const size_t gck_test_nsizes = sizeof gck_test_sizes / sizeof gck_test_sizes[0];

size_t gck_test_max_size(void)
{
    size_t m = 0;
    for (size_t i = 0; i < gck_test_nsizes; i++)
        m = gck_test_sizes[i] > m ? gck_test_sizes[i] : m;
    return m;
}

int gck_same_f64(double a, double b)
{
    if (isnan(a) && isnan(b))
        return 1;
    uint64_t ua, ub;
    memcpy(&ua, &a, 8);
    memcpy(&ub, &b, 8);
    return ua == ub;
}

int gck_same_f32(float a, float b)
{
    if (isnan(a) && isnan(b))
        return 1;
    uint32_t ua, ub;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    return ua == ub;
}

void gck_test_set_threads(int t)
{
#if GCK_HAVE_OPENMP
    omp_set_num_threads(t);
#else
    (void)t;
#endif
}

void *gck_test_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 1) != 0) {
        fprintf(stderr, "out of memory allocating %zu bytes\n", bytes);
        abort();
    }
    return p;
}

uint64_t gck_ulp_diff(double a, double b)
{
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    /* map to a monotonic integer line */
    if (ia < 0) ia = INT64_MIN - ia;
    if (ib < 0) ib = INT64_MIN - ib;
    return ia > ib ? (uint64_t)ia - (uint64_t)ib : (uint64_t)ib - (uint64_t)ia;
}

uint8_t *gck_test_guarded(uint8_t *buf, size_t off, size_t len)
{
    memset(buf, GCK_TEST_GUARD_BYTE, GCK_TEST_GUARD + off + len + GCK_TEST_GUARD);
    return buf + GCK_TEST_GUARD + off;
}

void gck_test_check_guards(const uint8_t *buf, const uint8_t *out, size_t len, const char *what)
{
    for (const uint8_t *p = buf; p < out; p++)
        if (*p != GCK_TEST_GUARD_BYTE)
            fail_msg("%s wrote %td bytes before its output", what, out - p);
    for (size_t j = 0; j < GCK_TEST_GUARD; j++)
        if (out[len + j] != GCK_TEST_GUARD_BYTE)
            fail_msg("%s wrote byte %zu past the end of its output (len %zu)", what, j, len);
}
