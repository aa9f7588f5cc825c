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
 * (c) resnet50: ResNet-50's 153 weight tensors, 25.5 M parameters;
 * (d) gpt120k: a one-block GPT-2-style model of 16 tensors, 123 K (the
 *     "trainer" benchmarks only).
 *
 * "trainer_ckpt/<model>/k<k>/<checksum>/<threads>t/<params>" is the
 * checkpointer path of a trainer whose parameters' gradients live in one
 * contiguous buffer: per micro-batch one gck_accumulate_many_f32 over every
 * tensor (the backward pass's output, one contiguous buffer too), then
 * gck_flush_into the gradient buffer (mean, global norm, clipping that
 * triggers, out NULL: nothing recorded). Its bytes_per_second counts the
 * same traffic as flush/.../none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* GPT-2's layout at d = 96, vocabulary 96, context 16, one block: 16 tensors. */
static void build_gpt120k(model *m)
{
    const size_t d = 96, vocab = 96, ctx = 16;
    model_add(m, "wte", vocab * d);
    model_add(m, "wpe", ctx * d);
    const struct { const char *n; size_t len; } t[] = {
        {"h.0.ln_1.w", d}, {"h.0.ln_1.b", d}, {"h.0.attn.c_attn.w", d * 3 * d}, {"h.0.attn.c_attn.b", 3 * d},
        {"h.0.attn.c_proj.w", d * d}, {"h.0.attn.c_proj.b", d}, {"h.0.ln_2.w", d}, {"h.0.ln_2.b", d},
        {"h.0.mlp.c_fc.w", d * 4 * d}, {"h.0.mlp.c_fc.b", 4 * d}, {"h.0.mlp.c_proj.w", 4 * d * d},
        {"h.0.mlp.c_proj.b", d}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        model_add(m, t[i].n, t[i].len);
    model_add(m, "ln_f.w", d);
    model_add(m, "ln_f.b", d);
}

#define NMODELS 5
static model g_models[NMODELS] = {{.name = "gpt2s"},    {.name = "small2k"}, {.name = "small147"},
                                  {.name = "resnet50"}, {.name = "gpt120k"}};

/* One value of the gradients every benchmark here feeds (deterministic). */
static float grad_value(uint64_t *s)
{
    *s = *s * 6364136223846793005u + 1442695040888963407u;
    return (float)((double)(*s >> 40) * 0x1p-24 - 0.5) * 0.01f;
}

/* Gradients are allocated on first use and kept for the whole run. */
static void model_inputs(model *m)
{
    if (m->grad != NULL)
        return;
    m->grad = calloc(m->nt, sizeof *m->grad);
    uint64_t s = 99;
    for (size_t t = 0; t < m->nt; t++) {
        m->grad[t] = malloc((m->len[t] ? m->len[t] : 1) * sizeof(float));
        for (size_t i = 0; i < m->len[t]; i++)
            m->grad[t][i] = grad_value(&s);
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
static gck_checkpointer **g_live;

static void live_replace(gck_checkpointer **cp)
{
    if (g_live != NULL) {
        gck_checkpointer_destroy(*g_live);
        *g_live = NULL;
    }
    g_live = cp;
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
    for (int i = 0; i < 3; i++)
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

/* Bytes per parameter a streaming accumulate + flush must move (f32):
 * k input reads, the buffer's first write and k-1 read-modify-writes, the
 * flush's buffer read and checkpoint write, the triggered clip's read and
 * write, and the checksum's read (none for GCK_CHECKSUM_NONE). */
static double traffic_bytes(int k, gck_checksum cs)
{
    return 4.0 * (k + 1 + 2.0 * (k - 1) + 2 + 2 + (cs == GCK_CHECKSUM_NONE ? 0 : 1));
}

/* ---- the trainer's checkpointer path ------------------------------------------------ */

/* What a trainer holds: the gradient buffer (every tensor back to back, as
 * llm.c-style trainers allocate it) and the backward pass's output for one
 * micro-batch in the same layout, with per-tensor pointers into both.
 * Setup shared by every trainer benchmark: only one model's buffers live at
 * a time (GPT-2 small's take 1 GB). */
typedef struct trainer_bufs {
    const model *m;
    float *grad, *micro;
    float **grad_t;
    const float **micro_t;
} trainer_bufs;

static trainer_bufs g_trainer;

static void trainer_bufs_release(trainer_bufs *b)
{
    free(b->grad), free(b->micro), free(b->grad_t), free(b->micro_t);
    *b = (trainer_bufs){0};
}

static const char *trainer_bufs_prepare(trainer_bufs *b, const model *m)
{
    if (b->m == m)
        return NULL;
    trainer_bufs_release(b);
    const size_t bytes = (m->params * sizeof(float) + 63) & ~(size_t)63;
    b->grad = aligned_alloc(64, bytes);
    b->micro = aligned_alloc(64, bytes);
    b->grad_t = malloc(m->nt * sizeof *b->grad_t);
    b->micro_t = malloc(m->nt * sizeof *b->micro_t);
    if (b->grad == NULL || b->micro == NULL || b->grad_t == NULL || b->micro_t == NULL) {
        trainer_bufs_release(b);
        return "cannot allocate the trainer's buffers";
    }
    uint64_t s = 99;
    for (size_t i = 0; i < m->params; i++)
        b->micro[i] = grad_value(&s);
    memset(b->grad, 0, m->params * sizeof(float)); /* its pages exist before timing */
    size_t at = 0;
    for (size_t t = 0; t < m->nt; t++) {
        b->grad_t[t] = b->grad + at;
        b->micro_t[t] = b->micro + at;
        at += m->len[t];
    }
    b->m = m;
    return NULL;
}

typedef struct trainer_ctx {
    model *m;
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
    const model *m = f->m;
    for (int j = 0; j < f->k; j++)
        if (gck_accumulate_many_f32(f->cp, (const char *const *)m->ids, g_trainer.micro_t, m->len, m->nt,
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
 * over the micro-batches, F32, clipping, no history kept), then three
 * untimed steps so every buffer exists. */
static const char *trainer_ckpt_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    trainer_ctx *f = ctx;
    if (f->cp != NULL && g_trainer.m == f->m)
        return NULL;
    live_replace(&f->cp);
    const char *e = trainer_bufs_prepare(&g_trainer, f->m);
    if (e != NULL)
        return e;
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.dtype = GCK_DTYPE_F32;
    cfg.accumulation_mode = GCK_ACCUM_MEAN;
    cfg.clip_enabled = 1;
    cfg.clip_norm = 0.1; /* below the gradients' norm: clipping triggers every step */
    cfg.checksum = f->checksum;
    cfg.max_checkpoints = 1;
    if (gck_checkpointer_create(&cfg, &f->cp) != GCK_OK)
        return gck_last_error();
    /* the trainer's own tensor order, named */
    f->dst = (gck_flush_dst){.layer_ids = (const char *const *)f->m->ids,
                             .tensors = {.count = f->m->nt, .data = (void *const *)g_trainer.grad_t,
                                         .lens = f->m->len, .dtype = GCK_DTYPE_F32}};
    for (int i = 0; i < 3; i++)
        trainer_ckpt_body(f, n);
    return NULL;
}

/* trainer_ckpt/...: nothing recorded; trainer_ckpt_rec/...: the same step
 * recording its checkpoint too (one copy + checksum pass more, counted). */
static void register_trainer(int threads)
{
    static const int models[4] = {1, 3, 0, 4}; /* small2k resnet50 gpt2s gpt120k */
    static const int ks[2] = {1, 4};
    static const gck_checksum css[2] = {GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[2] = {"xxh3", "none"};
    static trainer_ctx ctx[2][2][4][2][2];
    for (int rec = 0; rec < 2; rec++)
        for (int mi = 0; mi < 4; mi++)
            for (int ki = 0; ki < 2; ki++)
                for (int ci = 0; ci < 2; ci++) {
                    model *m = &g_models[models[mi]];
                    trainer_ctx *f = &ctx[threads - 1][rec][mi][ki][ci];
                    *f = (trainer_ctx){.m = m, .k = ks[ki], .record = rec, .checksum = css[ci]};
                    char name[96], label[64];
                    snprintf(name, sizeof name, "trainer_ckpt%s/%s/k%d/%s/%dt", rec ? "_rec" : "", m->name, ks[ki],
                             csn[ci], threads);
                    snprintf(label, sizeof label, "%zu tensors", m->nt);
                    const int64_t size = (int64_t)m->params;
                    /* recording: dst read, checkpoint written (and read by the checksum, in cache) */
                    const double bytes = traffic_bytes(ks[ki], GCK_CHECKSUM_NONE) + (rec ? 8.0 : 0.0);
                    gck_bench_register(&(gck_bench_spec){
                        .name = name, .body = trainer_ckpt_body, .prepare = trainer_ckpt_prepare, .ctx = f,
                        .threads = threads, .bytes_per_elem = bytes, .label = label, .sizes = &size, .nsizes = 1});
                }
}

void gck_bench_register_checkpointer(int threads)
{
    static int built;
    if (!built) {
        build_gpt2s(&g_models[0]);
        build_small(&g_models[1], 2000);
        build_small(&g_models[2], 147);
        build_resnet50(&g_models[3]);
        build_gpt120k(&g_models[4]);
        built = 1;
    }
    register_trainer(threads);
    static const int ks[3] = {1, 4, 16};
    static const gck_checksum css[3] = {GCK_CHECKSUM_FNV1A64, GCK_CHECKSUM_XXH3_64, GCK_CHECKSUM_NONE};
    static const char *const csn[3] = {"fnv1a", "xxh3", "none"};
    static flush_ctx ctx[2][NMODELS][3][3];
    for (int mi = 0; mi < NMODELS - 1; mi++) /* not gpt120k */
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
                    .sizes = &size, .nsizes = 1});
            }
}
