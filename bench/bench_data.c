/* bench/bench_data.c - benchmark sizes, the shared input arrays, table registration. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* 16 and 256 show the per-call cost below the blocks; the rest is 1 Ki .. 64 Mi. */
static const int64_t sizes[] = {
    16, 256, INT64_C(1) << 10, INT64_C(1) << 12, INT64_C(1) << 14, INT64_C(1) << 16, INT64_C(1) << 18,
    INT64_C(1) << 20, INT64_C(1) << 22, INT64_C(1) << 24, INT64_C(1) << 26,
};
enum { FIRST_2T_SIZE = 8 }; /* 4 Mi */

const int64_t *gck_bench_sizes(int threads, size_t *count)
{
    const size_t first = threads > 1 ? FIRST_2T_SIZE : 0;
    *count = GCK_BENCH_COUNT(sizes) - first;
    return sizes + first;
}

static const int64_t sizes16[] = {
    16, 256, INT64_C(1) << 10, INT64_C(1) << 12, INT64_C(1) << 14, INT64_C(1) << 16, INT64_C(1) << 18,
    INT64_C(1) << 20, INT64_C(1) << 22, INT64_C(1) << 24, INT64_C(1) << 26, INT64_C(1) << 29,
};

const int64_t *gck_bench_sizes16(int threads, size_t *count)
{
    if (threads > 1)
        return gck_bench_sizes(threads, count);
    *count = GCK_BENCH_COUNT(sizes16);
    return sizes16;
}

static gck_bench_arrays pools[] = { { .elem = 1 }, { .elem = 2 }, { .elem = 4 }, { .elem = 8 } };

gck_bench_arrays *gck_bench_arrays_of(size_t elem)
{
    for (size_t i = 0; i < GCK_BENCH_COUNT(pools); i++)
        if (pools[i].elem == elem)
            return &pools[i];
    abort(); /* a bench file asked for a type that has no pool: a bug */
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Four 16-bit uniforms from one draw, summed: a bell shape on [-1, 1] like
 * real gradients, with no denormals (the smallest nonzero is 2^-17). */
static double normalish(uint64_t r)
{
    const double sum = (double)(r & 0xffff) + (double)(r >> 16 & 0xffff) +
                       (double)(r >> 32 & 0xffff) + (double)(r >> 48);
    return sum / (2.0 * 65535.0) - 1.0;
}

/* The bf16 bits of v (truncated): read as f16 they are finite normal values
 * too (|v| <= 1 keeps them below 0x3f81, and their exponent bits never make
 * an f16 denormal), so one pool serves the bf16 and the f16 kernels. */
static uint16_t bf16_bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return (uint16_t)(u >> 16);
}

static void fill(void *p, size_t elem, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        const uint64_t r = splitmix64(&seed);
        switch (elem) {
        case 1: ((unsigned char *)p)[i] = (unsigned char)(r >> 56); break;
        case 2: ((uint16_t *)p)[i] = bf16_bits((float)normalish(r)); break;
        case 4: ((float *)p)[i] = (float)normalish(r); break;
        default: ((double *)p)[i] = normalish(r); break;
        }
    }
}

static void release(gck_bench_arrays *ar)
{
    free(ar->a);
    free(ar->b);
    ar->a = ar->b = NULL;
    ar->cap = 0;
}

static void release_c(gck_bench_arrays *ar)
{
    free(ar->c);
    ar->c = NULL;
    ar->ccap = 0;
}

const char *gck_bench_prepare_arrays(void *ctx, int64_t n, int threads)
{
    static char err[96];
    gck_bench_arrays *ar = ctx;
    (void)threads;
    if ((size_t)n <= ar->cap)
        return NULL;
    /* Free first so that growing never holds the old and new arrays at once.
     * aligned_alloc wants a multiple of the alignment. */
    release(ar);
    const size_t bytes = ((size_t)n * ar->elem + 63) & ~(size_t)63;
    ar->a = aligned_alloc(64, bytes);
    ar->b = aligned_alloc(64, bytes);
    if (ar->a == NULL || ar->b == NULL) {
        release(ar);
        snprintf(err, sizeof err, "cannot allocate 2 x %zu MiB of inputs", bytes >> 20);
        return err;
    }
    fill(ar->a, ar->elem, (size_t)n, 1);
    fill(ar->b, ar->elem, (size_t)n, 2);
    ar->cap = (size_t)n;
    return NULL;
}

const char *gck_bench_prepare_arrays3(void *ctx, int64_t n, int threads)
{
    static char err[96];
    gck_bench_arrays *ar = ctx;
    const char *e = gck_bench_prepare_arrays(ctx, n, threads);
    if (e != NULL || (size_t)n <= ar->ccap)
        return e;
    release_c(ar);
    const size_t bytes = ((size_t)n * ar->elem + 63) & ~(size_t)63;
    ar->c = aligned_alloc(64, bytes);
    if (ar->c == NULL) {
        snprintf(err, sizeof err, "cannot allocate %zu MiB of output", bytes >> 20);
        return err;
    }
    /* Touch every page now, so first-touch page faults are not timed. */
    fill(ar->c, ar->elem, (size_t)n, 3);
    ar->ccap = (size_t)n;
    return NULL;
}

void gck_bench_free_arrays(void)
{
    for (size_t i = 0; i < GCK_BENCH_COUNT(pools); i++) {
        release(&pools[i]);
        release_c(&pools[i]);
    }
}

void gck_bench_add_ops(const gck_bench_family *fam, const gck_bench_op *ops, size_t nops, int threads)
{
    static const char *const dtype[2] = { "f32", "f64" };
    size_t nsizes;
    const int64_t *sz = gck_bench_sizes(threads, &nsizes);
    for (size_t i = 0; i < nops; i++) {
        for (int t = 0; t < 2; t++) {
            if (ops[i].body[t] == NULL)
                continue; /* an op for one dtype only */
            gck_bench_arrays *ar = gck_bench_arrays_of(t ? sizeof(double) : sizeof(float));
            char name[128], label[64];
            snprintf(name, sizeof name, "%s%s%s/%dt", fam->prefix, ops[i].name[t], fam->suffix, threads);
            snprintf(label, sizeof label, "%s %s", fam->tag, dtype[t]);
            gck_bench_register(&(gck_bench_spec){
                .name = name,
                .body = ops[i].body[t],
                .prepare = fam->prepare ? fam->prepare : gck_bench_prepare_arrays,
                .ctx = ar,
                .select_isa = fam->select_isa,
                .isa = fam->isa,
                .threads = threads,
                .bytes_per_elem = (double)ops[i].arrays * (double)ar->elem,
                .label = label,
                .sizes = sz,
                .nsizes = nsizes,
            });
        }
    }
}

void gck_bench_add_ref16(const char *name, gck_bench_body body, size_t bytes_per_elem, int threads)
{
    size_t nsizes;
    const int64_t *sz = gck_bench_sizes16(threads, &nsizes);
    char full[128];
    snprintf(full, sizeof full, "ref_%s/%dt", name, threads);
    gck_bench_register(&(gck_bench_spec){
        .name = full,
        .body = body,
        .prepare = gck_bench_prepare_arrays,
        .ctx = gck_bench_arrays_of(2),
        .threads = threads,
        .bytes_per_elem = bytes_per_elem,
        .label = "ref 16-bit",
        .sizes = sz,
        .nsizes = nsizes,
    });
}
