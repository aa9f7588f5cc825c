/* bench/bench_checkpointer.c - accumulate k micro-batches + flush on realistic model shapes.
 *
 * Names: "flush/<model>/k<k>/<checksum>/<threads>t/<params>". One iteration
 * accumulates k f32 gradients per tensor (mean mode, F32 storage, clipping
 * that triggers) and flushes. bytes_per_second counts the traffic a
 * streaming implementation must move per parameter (see traffic_bytes):
 * divide it by ref_rmw2_f32's bandwidth from the same run for the ratio to
 * the memory-traffic bound (bench/ratios.py does).
 *
 * Models: gpt2s, small2k, small147 and resnet50 of bench_models.c.
 *
 * Counter peak_rss_mb: the process's peak resident set (getrusage) after the
 * run, in MB (10^6 bytes). It covers everything the process ran before, so
 * it is the memory of this benchmark alone only when the filter selects just
 * it: scripts/bench.sh rss runs each in its own process. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <gradckpt/gradckpt.h>

#include "bench.h"

#define NMODELS 4 /* of bench_models.c's models: see gck_bench_register_checkpointer */

typedef struct flush_ctx {
    gck_bench_model *m;
    int k;
    gck_checksum checksum;
    gck_checkpointer *cp;
    uint64_t now;
} flush_ctx;

static double flush_body(void *ctx, int64_t n);

/* Only one checkpointer lives at a time: GPT-2 small's buffers and history
 * take 1.5 GB, and there are 72 benchmarks. */
static flush_ctx *g_live;

/* Creates the checkpointer once and runs three untimed flushes, so buffers
 * exist and the history is full (steady state: evicted checkpoints' memory
 * is reused, no page faults); the same object serves every timed run. */
static const char *flush_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    flush_ctx *f = ctx;
    if (f->cp != NULL)
        return NULL;
    if (g_live != NULL) {
        gck_checkpointer_destroy(g_live->cp);
        g_live->cp = NULL;
    }
    g_live = f;
    const char *err = gck_bench_model_buffers(f->m);
    if (err != NULL)
        return err;
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.dtype = GCK_DTYPE_F32;
    cfg.accumulation_mode = GCK_ACCUM_MEAN;
    cfg.clip_enabled = 1;
    cfg.clip_norm = 0.1; /* below the gradients' norm: clipping triggers every flush */
    cfg.checksum = f->checksum;
    cfg.max_checkpoints = 2;
    if (gck_checkpointer_create(&cfg, &f->cp) != GCK_OK)
        return gck_last_error();
    for (int i = 0; i < (gck_bench_smoke() ? 0 : 3); i++) /* a smoke run: its one timed flush is the test */
        flush_body(f, n);
    return NULL;
}

static double flush_body(void *ctx, int64_t n)
{
    (void)n;
    flush_ctx *f = ctx;
    const gck_bench_model *m = f->m;
    for (int j = 0; j < f->k; j++)
        for (size_t t = 0; t < m->nt; t++)
            gck_accumulate_f32(f->cp, m->ids[t], m->in[t], m->len[t], (uint64_t)j);
    gck_checkpoint *c = NULL;
    if (gck_flush(f->cp, f->now++, &c) != GCK_OK)
        abort(); /* cannot happen with this config: a harness bug */
    const double norm = gck_checkpoint_global_norm(c);
    gck_checkpoint_release(c);
    return norm;
}

static size_t flush_report(void *ctx, const char **names, double *values, size_t cap)
{
    (void)ctx;
    struct rusage ru;
    if (cap < 1 || getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    names[0] = "peak_rss_mb";
    values[0] = (double)ru.ru_maxrss * 1024.0 / 1e6; /* Linux: KiB */
    return 1;
}

/* Bytes per parameter a streaming accumulate + flush must move (f32):
 * k input reads, the buffer's first write and k-1 read-modify-writes, the
 * flush's buffer read and checkpoint write, the triggered clip's read and
 * write, and the checksum's read (none for GCK_CHECKSUM_NONE). */
static double traffic_bytes(int k, gck_checksum cs)
{
    return 4.0 * (k + 1 + 2.0 * (k - 1) + 2 + 2 + (cs == GCK_CHECKSUM_NONE ? 0 : 1));
}

void gck_bench_register_checkpointer(int threads)
{
    static const char *const names[NMODELS] = {"gpt2s", "small2k", "small147", "resnet50"};
    gck_bench_model *models[NMODELS];
    for (int i = 0; i < NMODELS; i++)
        models[i] = gck_bench_model_named(names[i]);
    static const int ks[3] = {1, 4, 16};
    static const gck_checksum css[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[3] = {"fnv1a", "xxh3", "none"};
    static flush_ctx ctx[2][NMODELS][3][3];
    for (int mi = 0; mi < NMODELS; mi++)
        for (int ki = 0; ki < 3; ki++)
            for (int ci = 0; ci < 3; ci++) {
                flush_ctx *f = &ctx[threads - 1][mi][ki][ci];
                *f = (flush_ctx){.m = models[mi], .k = ks[ki], .checksum = css[ci]};
                char name[96], label[64];
                snprintf(name, sizeof name, "flush/%s/k%d/%s/%dt", models[mi]->name, ks[ki], csn[ci], threads);
                snprintf(label, sizeof label, "%zu tensors", models[mi]->nt);
                const int64_t size = (int64_t)models[mi]->params;
                gck_bench_register(&(gck_bench_spec){
                    .name = name, .body = flush_body, .prepare = flush_prepare, .ctx = f,
                    .threads = threads, .bytes_per_elem = traffic_bytes(ks[ki], css[ci]), .label = label,
                    .sizes = &size, .nsizes = 1, .report = flush_report});
            }
}
