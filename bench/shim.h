/* bench/shim.h - C API of the google-benchmark shim (bench/shim.cc is the only C++ file). */
#ifndef GCK_BENCH_SHIM_H
#define GCK_BENCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include <gradckpt/isa.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One timed iteration over n elements. The shim keeps the result alive
 * (benchmark::DoNotOptimize), so a reduction cannot be optimised away. */
typedef double (*gck_bench_body)(void *ctx, int64_t n);

/* Untimed, before each run: make ctx ready for n elements on `threads`
 * threads. Returns NULL, or a message for st.SkipWithError. */
typedef const char *(*gck_bench_prepare)(void *ctx, int64_t n, int threads);

/* After the timed loop: up to cap extra results (names static strings) to
 * report as counters, e.g. a compression ratio. Returns how many. */
typedef size_t (*gck_bench_report)(void *ctx, const char **names, double *values, size_t cap);

typedef struct gck_bench_spec {
    const char *name;          /* "sumsq_f64/avx2/1t"; the shim appends "/<n>"   */
    gck_bench_body body;
    gck_bench_prepare prepare; /* may be NULL                                    */
    void *ctx;                 /* owned by the caller, alive until gck_bench_run returns */
    int select_isa;            /* nonzero: gck_isa_select(isa) before timing, skip if refused */
    gck_isa isa;
    int threads;               /* omp_set_num_threads(threads) before timing     */
    double bytes_per_elem;     /* bytes read + written per element -> bytes_per_second */
    const char *label;         /* e.g. "avx2 f64"; may be NULL                   */
    const int64_t *sizes;      /* element counts, one benchmark each             */
    size_t nsizes;
    gck_bench_report report;   /* may be NULL                                    */
    int64_t iterations;        /* 0: google-benchmark decides; else exactly this many */
} gck_bench_spec;

/* Registers one benchmark per size, named "<name>/<n>". Copies everything
 * but ctx, so the spec and its strings may be temporaries. The JSON's
 * bytes_per_second and items_per_second are wall-clock rates. */
void gck_bench_register(const gck_bench_spec *spec);

/* Adds a key/value pair to the JSON "context" and the console header. */
void gck_bench_context(const char *key, const char *value);

/* benchmark::Initialize + RunSpecifiedBenchmarks. Returns the exit status:
 * 1 for an unrecognised flag, when the filter matches nothing, or when a
 * benchmark could not run (its prepare failed: SkipWithError), listed on
 * stderr; the one skip that is not a failure is an ISA this CPU cannot run,
 * for a benchmark whose name says that ISA ("sumsq_f32/neon/1t" on x86-64).
 * Benchmarks with threads > 1 are not registered in a build without OpenMP. */
int gck_bench_run(int *argc, char **argv);

/* 1 under GCK_BENCH_SMOKE=1 (bench_smoke): every benchmark runs one
 * iteration at its smallest size, so prepare functions may skip their
 * untimed warm-up runs; a benchmark whose smallest size is above 16 Mi
 * elements (a big model's only size) is not registered at all. */
int gck_bench_smoke(void);

#ifdef __cplusplus
}
#endif
#endif /* GCK_BENCH_SHIM_H */
