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
 * "flush_tree/..." is the same with GCK_REDUCE_TREE (the pairwise tree over
 * the micro-batches): compare with flush/... of the same run.
 *
 * "trainer_ckpt/<model>/k<k>/<checksum>/<threads>t/<params>" is the
 * checkpointer path of the trainer of bench_trainer.c, on the same buffers
 * (gck_bench_model_buffers: the micro-batch gradient `in` and the gradient
 * buffer `grad`, contiguous): per micro-batch one gck_accumulate_many_f32
 * over every tensor, then gck_flush_into the gradient buffer, tensors in the
 * model's order named by id (mean, global norm, clipping that triggers, out
 * NULL: nothing recorded, copied or checksummed). "trainer_ckpt_rec/..." is
 * the same step also recording its checkpoint. Models gpt120k, small2k,
 * resnet50 and gpt2s; k = 1 and 4. Compare with trainer_hand/... of the
 * same run.
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
    gck_reduction reduction;
    gck_checkpointer *cp;
    uint64_t now;
} flush_ctx;

static double flush_body(void *ctx, int64_t n);

/* Only one checkpointer lives at a time: GPT-2 small's buffers and history
 * take 1.5 GB, and there are 72 benchmarks (and the trainer ones). */
static gck_checkpointer **g_live;

static void live_replace(gck_checkpointer **cp)
{
    if (g_live != NULL) {
        gck_checkpointer_destroy(*g_live);
        *g_live = NULL;
    }
    g_live = cp;
}

/* The checkpointer as these benchmarks (and a trainer) configure it: F32,
 * mean over the micro-batches, clipping at 0.1 (bench_trainer.c's max_norm,
 * below the gradients' norm: it triggers every flush). After live_replace. */
static const char *bench_checkpointer_new(gck_checkpointer **cp, gck_checksum checksum, size_t max_checkpoints,
                                          gck_reduction reduction)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.dtype = GCK_DTYPE_F32;
    cfg.accumulation_mode = GCK_ACCUM_MEAN;
    cfg.clip_enabled = 1;
    cfg.clip_norm = 0.1;
    cfg.checksum = checksum;
    cfg.max_checkpoints = max_checkpoints;
    cfg.reduction = reduction;
    return gck_checkpointer_create(&cfg, cp) == GCK_OK ? NULL : gck_last_error();
}

/* Creates the checkpointer once and runs three untimed flushes, so buffers
 * exist and the history is full (steady state: evicted checkpoints' memory
 * is reused, no page faults); the same object serves every timed run. */
static const char *flush_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    flush_ctx *f = ctx;
    if (f->cp != NULL)
        return NULL;
    live_replace(&f->cp);
    const char *err = gck_bench_model_buffers(f->m);
    if (err == NULL)
        err = bench_checkpointer_new(&f->cp, f->checksum, 2, f->reduction);
    if (err != NULL)
        return err;
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

/* ---- the trainer's checkpointer path ------------------------------------------------ */

typedef struct trainer_ctx {
    gck_bench_model *m;
    int k;
    int record; /* also record the checkpoint (released at once: the history keeps it) */
    gck_checksum checksum;
    gck_checkpointer *cp;
    gck_flush_dst dst;
    uint64_t now;
} trainer_ctx;

static double trainer_ckpt_body(void *ctx, int64_t n)
{
    (void)n;
    trainer_ctx *f = ctx;
    const gck_bench_model *m = f->m;
    for (int j = 0; j < f->k; j++)
        if (gck_accumulate_many_f32(f->cp, (const char *const *)m->ids, (const float *const *)m->in, m->len, m->nt,
                                    (uint64_t)j) != GCK_OK)
            abort(); /* cannot happen with these buffers: a harness bug */
    gck_clip_info info;
    gck_checkpoint *c = NULL;
    if (gck_flush_into(f->cp, f->now++, &f->dst, &info, f->record ? &c : NULL) != GCK_OK || !info.clipped)
        abort();
    gck_checkpoint_release(c);
    return info.total_norm;
}

/* The trainer's buffers and a checkpointer as a trainer configures it (mean
 * over the micro-batches, F32, clipping, one checkpoint of history), then
 * three untimed steps so every buffer exists. */
static const char *trainer_ckpt_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    trainer_ctx *f = ctx;
    if (f->cp != NULL)
        return NULL;
    live_replace(&f->cp);
    const char *err = gck_bench_model_buffers(f->m);
    if (err == NULL)
        err = bench_checkpointer_new(&f->cp, f->checksum, 1, GCK_REDUCE_SEQUENTIAL);
    if (err != NULL)
        return err;
    /* the trainer's own tensor order, named */
    f->dst = (gck_flush_dst){.layer_ids = (const char *const *)f->m->ids,
                             .tensors = {.count = f->m->nt, .data = (void *const *)f->m->grad, .lens = f->m->len,
                                         .dtype = GCK_DTYPE_F32}};
    for (int i = 0; i < 3; i++)
        trainer_ckpt_body(f, n);
    return NULL;
}

/* trainer_ckpt/...: nothing recorded; trainer_ckpt_rec/...: the same step
 * recording its checkpoint too (one copy + checksum pass more, counted). */
static void register_trainer(int threads)
{
    static const char *const names[4] = {"gpt120k", "small2k", "resnet50", "gpt2s"};
    static const int ks[2] = {1, 4};
    static const gck_checksum css[2] = {GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[2] = {"xxh3", "none"};
    static trainer_ctx ctx[2][2][4][2][2];
    for (int rec = 0; rec < 2; rec++)
        for (int mi = 0; mi < 4; mi++)
            for (int ki = 0; ki < 2; ki++)
                for (int ci = 0; ci < 2; ci++) {
                    gck_bench_model *m = gck_bench_model_named(names[mi]);
                    trainer_ctx *f = &ctx[threads - 1][rec][mi][ki][ci];
                    *f = (trainer_ctx){.m = m, .k = ks[ki], .record = rec, .checksum = css[ci]};
                    char name[96], label[64];
                    snprintf(name, sizeof name, "trainer_ckpt%s/%s/k%d/%s/%dt", rec ? "_rec" : "", m->name, ks[ki],
                             csn[ci], threads);
                    snprintf(label, sizeof label, "%zu tensors", m->nt);
                    const int64_t size = (int64_t)m->params;
                    /* the flush's traffic; recording: dst read, checkpoint written */
                    const double bytes = traffic_bytes(ks[ki], GCK_CHECKSUM_NONE) + (rec ? 8.0 : 0.0);
                    gck_bench_register(&(gck_bench_spec){
                        .name = name, .body = trainer_ckpt_body, .prepare = trainer_ckpt_prepare, .ctx = f,
                        .threads = threads, .bytes_per_elem = bytes, .label = label, .sizes = &size, .nsizes = 1});
                }
}

void gck_bench_register_checkpointer(int threads)
{
    register_trainer(threads);
    static const char *const names[NMODELS] = {"gpt2s", "small2k", "small147", "resnet50"};
    gck_bench_model *models[NMODELS];
    for (int i = 0; i < NMODELS; i++)
        models[i] = gck_bench_model_named(names[i]);
    static const int ks[3] = {1, 4, 16};
    static const gck_checksum css[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[3] = {"fnv1a", "xxh3", "none"};
    static flush_ctx ctx[2][2][NMODELS][3][3];
    for (int tree = 0; tree < 2; tree++)
    for (int mi = 0; mi < NMODELS; mi++)
        for (int ki = 0; ki < 3; ki++)
            for (int ci = 0; ci < 3; ci++) {
                flush_ctx *f = &ctx[tree][threads - 1][mi][ki][ci];
                *f = (flush_ctx){.m = models[mi], .k = ks[ki], .checksum = css[ci],
                                 .reduction = tree ? GCK_REDUCE_TREE : GCK_REDUCE_SEQUENTIAL};
                char name[96], label[64];
                snprintf(name, sizeof name, "flush%s/%s/k%d/%s/%dt", tree ? "_tree" : "", models[mi]->name, ks[ki],
                         csn[ci], threads);
                snprintf(label, sizeof label, "%zu tensors", models[mi]->nt);
                const int64_t size = (int64_t)models[mi]->params;
                gck_bench_register(&(gck_bench_spec){
                    .name = name, .body = flush_body, .prepare = flush_prepare, .ctx = f,
                    .threads = threads, .bytes_per_elem = traffic_bytes(ks[ki], css[ci]), .label = label,
                    .sizes = &size, .nsizes = 1, .report = flush_report});
            }
}
