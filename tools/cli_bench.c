/* tools/cli_bench.c - `gradckpt bench [--size N]`: a quick roofline summary.
 *
 * Times a few kernels on the active ISA and two plain references measured in
 * the same run - an integer sum over the bytes (read bandwidth) and memcpy
 * (copy bandwidth) - and prints GB/s and the ratio to the reference with the
 * same direction of traffic. A summary, not the benchmark harness (bench/). */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

typedef struct bench_buf {
    size_t n;
    float *af, *bf, *cf; /* n floats each */
    double *ad, *cd;     /* n doubles each; cd also holds the byte planes */
} bench_buf;

static volatile double bench_sink;

/* ---- references ------------------------------------------------------------------ */

/* Elements per chunk of the references' thread split (as the kernels' blocks). */
#define BENCH_CHUNK ((size_t)1 << 16)

/* Sum of n 8-byte words: integer adds vectorise without reassociation
 * questions, so this runs at the memory's read speed (memcpy: no aliasing). */
static uint64_t bench_sum_words(const unsigned char *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * i, sizeof w);
        s += w;
    }
    return s;
}

/* The references over `bytes` counted bytes (0: the whole arrays), so each
 * kernel is compared with a reference of the same working set: a kernel in
 * cache against a reference in cache, one in DRAM against one in DRAM. */
static size_t bench_ref_bytes;

static void ref_read(bench_buf *b)
{
    const unsigned char *w = (const unsigned char *)b->ad;
    const size_t n = bench_ref_bytes ? bench_ref_bytes / 8 : b->n;
    uint64_t s = 0;
#ifdef _OPENMP
    const long long nchunks = (long long)((n + BENCH_CHUNK - 1) / BENCH_CHUNK);
#pragma omp parallel for schedule(static) reduction(+ : s) if (nchunks > 1)
    for (long long k = 0; k < nchunks; k++) {
        const size_t lo = (size_t)k * BENCH_CHUNK, len = n - lo < BENCH_CHUNK ? n - lo : BENCH_CHUNK;
        s += bench_sum_words(w + 8 * lo, len);
    }
#else
    s = bench_sum_words(w, n);
#endif
    bench_sink = (double)s;
}

static void ref_copy(bench_buf *b)
{
    const size_t whole = 2 * b->n * sizeof(double); /* read + written */
    const size_t n = (bench_ref_bytes && bench_ref_bytes < whole ? bench_ref_bytes : whole) / (2 * sizeof(double));
#ifdef _OPENMP
    const long long nchunks = (long long)((n + BENCH_CHUNK - 1) / BENCH_CHUNK);
#pragma omp parallel for schedule(static) if (nchunks > 1)
    for (long long k = 0; k < nchunks; k++) {
        const size_t lo = (size_t)k * BENCH_CHUNK, len = n - lo < BENCH_CHUNK ? n - lo : BENCH_CHUNK;
        memcpy(b->cd + lo, b->ad + lo, len * sizeof(double));
    }
#else
    memcpy(b->cd, b->ad, n * sizeof(double));
#endif
}

/* ---- kernels --------------------------------------------------------------------- */

static void k_sumsq_f32(bench_buf *b) { bench_sink = gck_sumsq_f32(b->af, b->n); }
static void k_sumsq_f64(bench_buf *b) { bench_sink = gck_sumsq_f64(b->ad, b->n); }
static void k_dist2_f32(bench_buf *b) { bench_sink = gck_dist2_f32(b->af, b->bf, b->n); }
static void k_axpy_f32(bench_buf *b) { gck_axpy_f32(b->cf, 0.5f, b->af, b->n); }
static void k_add_f64(bench_buf *b) { gck_add_f64(b->cd, b->ad, b->n); }
static void k_xor_shuffle(bench_buf *b)
{
    /* f32 elements against a previous version, into byte planes in cd */
    gck_xor_shuffle((uint8_t *)(void *)b->cd, b->af, b->bf, b->n, sizeof(float));
}

typedef struct bench_op {
    const char *name;
    void (*fn)(bench_buf *);
    unsigned bytes_per_elem; /* bytes read + written per element (no write-allocate) */
    int ref;                 /* -1: a reference; else the index of its reference */
} bench_op;

/* Order matters: add_f64 adds to cd after ref_copy filled it; xor_shuffle,
 * which leaves byte planes in cd, comes last. */
static const bench_op bench_ops[] = {
    {"ref_read (sum)", ref_read, 8, -1},
    {"ref_copy (memcpy)", ref_copy, 16, -1},
    {"sumsq_f32", k_sumsq_f32, 4, 0},
    {"sumsq_f64", k_sumsq_f64, 8, 0},
    {"dist2_f32", k_dist2_f32, 8, 0},
    {"axpy_f32", k_axpy_f32, 12, 1},
    {"add_f64", k_add_f64, 24, 1},
    {"xor_shuffle_f32", k_xor_shuffle, 12, 1},
};
#define BENCH_NOPS (sizeof bench_ops / sizeof bench_ops[0])
#define BENCH_REPS 5

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "16777216", "64Ki"/"64K", "16Mi"/"16M", "1Gi"/"1G" (binary multiples). */
static int bench_parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    if (s == NULL || *s < '0' || *s > '9')
        return 0;
    const unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M')
        shift = 20;
    else if (*end == 'G')
        shift = 30;
    if (shift) {
        end++;
        if (*end == 'i')
            end++;
    }
    if (*end != '\0' || v == 0 || v > (SIZE_MAX / 32) >> shift)
        return 0;
    *out = (size_t)v << shift;
    return 1;
}

/* Best of BENCH_REPS timed runs after one warm-up, in seconds (never 0). */
static double bench_best(void (*fn)(bench_buf *), bench_buf *b)
{
    fn(b);
    double best = 1e30;
    for (int r = 0; r < BENCH_REPS; r++) {
        const double t0 = bench_now();
        fn(b);
        const double t = bench_now() - t0;
        best = t < best ? t : best;
    }
    return best > 0 ? best : 1e-9; /* below the clock's resolution */
}

static int bench_run(const cli_command *c, int argc, char **argv)
{
    const char *size = NULL;
    const cli_opt opts[] = {{"--size", NULL, &size}};
    const int p = cli_parse(c, argc, argv, opts, 1, NULL, 0);
    if (p != CLI_OK)
        return p < 0 ? CLI_OK : p;
    size_t n = (size_t)1 << 24;
    if (size != NULL && !bench_parse_size(size, &n))
        return cli_usage(c, "--size '%s' is not a positive element count (e.g. 65536, 64Ki, 16Mi)", size);

    /* 28 bytes per element in five arrays: refuse what would not fit (an
     * overcommitted malloc succeeds and the OOM killer ends the run instead) */
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double need = 28.0 * (double)n, phys = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (phys > 0 && need > 0.5 * phys)
        return cli_fail(c, "--size %zu needs %.0f MiB, more than half of this machine's %.0f MiB", n, need / 1048576,
                        phys / 1048576);

    bench_buf b = {n, malloc(n * sizeof(float)), malloc(n * sizeof(float)), malloc(n * sizeof(float)),
                   malloc(n * sizeof(double)), malloc(n * sizeof(double))};
    if (!b.af || !b.bf || !b.cf || !b.ad || !b.cd) {
        free(b.af), free(b.bf), free(b.cf), free(b.ad), free(b.cd);
        return cli_fail(c, "cannot allocate %zu MiB for n = %zu", (n * 28) >> 20, n);
    }
    for (size_t i = 0; i < n; i++) { /* touches every page before timing */
        const float f = 1.0f + (float)(i % 1000) * 1e-3f;
        b.af[i] = f, b.bf[i] = f + 1e-4f, b.cf[i] = 1.0f;
        b.ad[i] = 1.0 + (double)(i % 1000) * 1e-3, b.cd[i] = 0.0;
    }
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#else
    const int threads = 1;
#endif
    printf("gradckpt bench: n = %zu elements, ISA %s, %d thread%s, best of %d\n", n,
           gck_isa_name(gck_isa_active()), threads, threads == 1 ? "" : "s", BENCH_REPS);
    printf("  %-18s  %12s  %12s  %9s  %s\n", "op", "bytes", "best (ms)", "GB/s", "vs reference");
    for (size_t k = 0; k < BENCH_NOPS; k++) {
        const bench_op *o = &bench_ops[k];
        const double bytes = (double)o->bytes_per_elem * (double)n;
        bench_ref_bytes = 0;
        const double gbs = bytes / bench_best(o->fn, &b) / 1e9;
        printf("  %-18s  %12.0f  %12.3f  %9.2f  ", o->name, bytes, bytes / gbs / 1e6, gbs);
        if (o->ref < 0) {
            printf("-\n");
            continue;
        }
        /* the reference again, over as many bytes as this kernel moves */
        const bench_op *r = &bench_ops[o->ref];
        bench_ref_bytes = (size_t)bytes;
        const double rb = o->ref == 1 && (size_t)bytes > 2 * n * sizeof(double) ? 2.0 * (double)n * sizeof(double) : bytes;
        const double rgbs = rb / bench_best(r->fn, &b) / 1e9;
        printf("%.2f of %s (%.2f GB/s on the same bytes)\n", gbs / rgbs, r->name, rgbs);
    }
    bench_ref_bytes = 0;
    free(b.af), free(b.bf), free(b.cf), free(b.ad), free(b.cd);
    return CLI_OK;
}

const cli_command cli_cmd_bench = {
    "bench",
    "[--size N]",
    "Quick roofline summary: kernel GB/s against plain memory references (a few seconds).",
    "Times sumsq_f32, sumsq_f64, dist2_f32, axpy_f32, add_f64 and xor_shuffle (f32)\n"
    "on arrays of N elements (default 16Mi; suffixes Ki/Mi/Gi) with the active ISA and\n"
    "OpenMP threads, best of 5 runs each, and two references measured in the same\n"
    "run on as many threads: an integer sum over an array (read bandwidth) and\n"
    "memcpy (copy bandwidth). Bytes count each array read or written once. Reading\n"
    "kernels are compared with the sum, writing kernels with memcpy, each reference\n"
    "run again over as many bytes as the kernel moves (the same cache level). memcpy writes\n"
    "lines it has not read, which the CPU reads first (write-allocate, not counted),\n"
    "so in-place updates (axpy, add) can beat it.\n"
    "Needs 28 bytes per element (448 MiB by default); at most half the machine's memory.\n"
    "GRADCKPT_ISA=scalar|avx2|avx512|neon picks another ISA; OMP_NUM_THREADS the threads.\n"
    "The full benchmark harness is bench/ (google-benchmark).\n",
    bench_run,
};
