/* bench/bench_checkpointer.c - accumulate k micro-batches + flush on realistic model shapes.
 *
 * Names: "flush/<model>/k<k>/<checksum>/<threads>t/<params>". One iteration
 * accumulates k f32 gradients per tensor (mean mode, F32 storage, clipping
 * that triggers) and flushes. bytes_per_second counts the traffic a
 * streaming implementation must move per parameter (see traffic_bytes):
 * divide it by ref_rmw2_f32's bandwidth from the same run for the ratio to
 * the memory-traffic bound (bench/ratios.py does).
 *
 * Models: (a) gpt2s: GPT-2 small's 148 tensors, 124.4 M parameters;
 * (b) small2k: 2000 tensors of 1 .. 64 Ki elements (log-uniform), 12.7 M;
 * (b') small147: the first 147 of those, 0.9 M (per-tensor cost dominates);
 * (c) resnet50: ResNet-50's 153 weight tensors, 25.5 M parameters.
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

typedef struct model {
    const char *name;
    size_t nt;
    size_t *len;
    char **ids;
    float **grad; /* one input per tensor, reused by every micro-batch */
    size_t params;
} model;

static void model_add(model *m, const char *id, size_t len)
{
    m->len = realloc(m->len, (m->nt + 1) * sizeof *m->len);
    m->ids = realloc(m->ids, (m->nt + 1) * sizeof *m->ids);
    m->len[m->nt] = len;
    m->ids[m->nt] = strdup(id);
    m->nt++;
    m->params += len;
}

static void build_gpt2s(model *m)
{
    char id[64];
    model_add(m, "wte", 50257 * 768);
    model_add(m, "wpe", 1024 * 768);
    for (int l = 0; l < 12; l++) {
        static const struct { const char *n; size_t len; } t[] = {
            {"ln_1.w", 768}, {"ln_1.b", 768}, {"attn.c_attn.w", 768 * 2304}, {"attn.c_attn.b", 2304},
            {"attn.c_proj.w", 768 * 768}, {"attn.c_proj.b", 768}, {"ln_2.w", 768}, {"ln_2.b", 768},
            {"mlp.c_fc.w", 768 * 3072}, {"mlp.c_fc.b", 3072}, {"mlp.c_proj.w", 3072 * 768}, {"mlp.c_proj.b", 768}};
        for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
            snprintf(id, sizeof id, "h.%d.%s", l, t[i].n);
            model_add(m, id, t[i].len);
        }
    }
    model_add(m, "ln_f.w", 768);
    model_add(m, "ln_f.b", 768);
}

static void build_small(model *m, int count)
{
    char id[64];
    uint64_t s = 12345;
    for (int i = 0; i < count; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        const double u = (double)(s >> 11) * 0x1p-53; /* log-uniform in [1, 64 Ki] */
        snprintf(id, sizeof id, "block%04d.param", i);
        model_add(m, id, (size_t)exp2(u * 16.0));
    }
}

static void build_resnet50(model *m)
{
    char id[64];
    model_add(m, "conv1.w", 64 * 3 * 7 * 7);
    model_add(m, "bn1.w", 64);
    model_add(m, "bn1.b", 64);
    static const int blocks[4] = {3, 4, 6, 3};
    size_t in = 64;
    for (int st = 0; st < 4; st++) {
        const size_t c = (size_t)64 << st;
        for (int b = 0; b < blocks[st]; b++) {
            const size_t cin = b == 0 ? in : 4 * c;
            const struct { const char *n; size_t len; } t[] = {
                {"conv1.w", cin * c}, {"bn1.w", c}, {"bn1.b", c}, {"conv2.w", c * c * 9}, {"bn2.w", c},
                {"bn2.b", c}, {"conv3.w", c * 4 * c}, {"bn3.w", 4 * c}, {"bn3.b", 4 * c}};
            for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
                snprintf(id, sizeof id, "layer%d.%d.%s", st + 1, b, t[i].n);
                model_add(m, id, t[i].len);
            }
            if (b == 0) {
                snprintf(id, sizeof id, "layer%d.0.downsample.w", st + 1);
                model_add(m, id, cin * 4 * c);
            }
        }
        in = 4 * c;
    }
    model_add(m, "fc.w", 2048 * 1000);
    model_add(m, "fc.b", 1000);
}

#define NMODELS 4
static model g_models[NMODELS] = {{.name = "gpt2s"}, {.name = "small2k"}, {.name = "small147"}, {.name = "resnet50"}};

/* Gradients are allocated on first use and kept for the whole run. */
static void model_inputs(model *m)
{
    if (m->grad != NULL)
        return;
    m->grad = calloc(m->nt, sizeof *m->grad);
    uint64_t s = 99;
    for (size_t t = 0; t < m->nt; t++) {
        m->grad[t] = malloc((m->len[t] ? m->len[t] : 1) * sizeof(float));
        for (size_t i = 0; i < m->len[t]; i++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            m->grad[t][i] = (float)((double)(s >> 40) * 0x1p-24 - 0.5) * 0.01f;
        }
    }
}

typedef struct flush_ctx {
    model *m;
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
    model_inputs(f->m);
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
    const model *m = f->m;
    for (int j = 0; j < f->k; j++)
        for (size_t t = 0; t < m->nt; t++)
            gck_accumulate_f32(f->cp, m->ids[t], m->grad[t], m->len[t], (uint64_t)j);
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
    static int built;
    if (!built) {
        build_gpt2s(&g_models[0]);
        build_small(&g_models[1], 2000);
        build_small(&g_models[2], 147);
        build_resnet50(&g_models[3]);
        built = 1;
    }
    static const int ks[3] = {1, 4, 16};
    static const gck_checksum css[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[3] = {"fnv1a", "xxh3", "none"};
    static flush_ctx ctx[2][NMODELS][3][3];
    for (int mi = 0; mi < NMODELS; mi++)
        for (int ki = 0; ki < 3; ki++)
            for (int ci = 0; ci < 3; ci++) {
                flush_ctx *f = &ctx[threads - 1][mi][ki][ci];
                *f = (flush_ctx){.m = &g_models[mi], .k = ks[ki], .checksum = css[ci]};
                char name[96], label[64];
                snprintf(name, sizeof name, "flush/%s/k%d/%s/%dt", g_models[mi].name, ks[ki], csn[ci], threads);
                snprintf(label, sizeof label, "%zu tensors", g_models[mi].nt);
                const int64_t size = (int64_t)g_models[mi].params;
                gck_bench_register(&(gck_bench_spec){
                    .name = name, .body = flush_body, .prepare = flush_prepare, .ctx = f,
                    .threads = threads, .bytes_per_elem = traffic_bytes(ks[ki], css[ci]), .label = label,
                    .sizes = &size, .nsizes = 1, .report = flush_report});
            }
}
