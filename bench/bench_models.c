/* bench/bench_models.c - the model shapes of the checkpointer and trainer benchmarks, and a trainer's buffers for them.
 *
 * Models: (a) gpt2s: GPT-2 small's 148 tensors, 124.4 M parameters;
 * (b) small2k: 2000 tensors of 1 .. 64 Ki elements (log-uniform), 12.7 M;
 * (b') small147: the first 147 of those, 0.9 M (per-tensor cost dominates);
 * (c) resnet50: ResNet-50's 153 weight tensors, 25.5 M parameters;
 * (d) gpt120k: llm.c's 16 parameter tensors (layers stacked) for a
 *     2-layer, 64-channel, 256-token-vocabulary GPT-2 with a context of 64:
 *     120.6 K parameters, all in L2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static void model_add(gck_bench_model *m, const char *id, size_t len)
{
    m->len = realloc(m->len, (m->nt + 1) * sizeof *m->len);
    m->ids = realloc(m->ids, (m->nt + 1) * sizeof *m->ids);
    if (m->len == NULL || m->ids == NULL)
        abort(); /* a few KiB at registration: nothing to recover */
    m->len[m->nt] = len;
    m->ids[m->nt] = strdup(id);
    m->nt++;
    m->params += len;
}

static void build_gpt2s(gck_bench_model *m)
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

static void build_small(gck_bench_model *m, int count)
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

static void build_resnet50(gck_bench_model *m)
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

/* llm.c's ParameterTensors order: each tensor holds every layer's slice. */
static void build_gpt120k(gck_bench_model *m)
{
    const size_t V = 256, T = 64, L = 2, C = 64;
    model_add(m, "wte", V * C);
    model_add(m, "wpe", T * C);
    model_add(m, "ln1w", L * C);
    model_add(m, "ln1b", L * C);
    model_add(m, "qkvw", L * 3 * C * C);
    model_add(m, "qkvb", L * 3 * C);
    model_add(m, "attprojw", L * C * C);
    model_add(m, "attprojb", L * C);
    model_add(m, "ln2w", L * C);
    model_add(m, "ln2b", L * C);
    model_add(m, "fcw", L * 4 * C * C);
    model_add(m, "fcb", L * 4 * C);
    model_add(m, "fcprojw", L * C * 4 * C);
    model_add(m, "fcprojb", L * C);
    model_add(m, "lnfw", C);
    model_add(m, "lnfb", C);
}

static gck_bench_model g_models[GCK_BENCH_NMODELS] = {
    {.name = "gpt2s"}, {.name = "small2k"}, {.name = "small147"}, {.name = "resnet50"}, {.name = "gpt120k"}};

gck_bench_model *gck_bench_models(void)
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
    return g_models;
}

gck_bench_model *gck_bench_model_named(const char *name)
{
    gck_bench_model *m = gck_bench_models();
    for (size_t i = 0; i < GCK_BENCH_NMODELS; i++)
        if (strcmp(m[i].name, name) == 0)
            return &m[i];
    abort(); /* a bench file asked for a model that does not exist: a bug */
}

/* One contiguous buffer of m->params floats, 64-byte aligned, and the
 * tensors' pointers into it, back to back as a trainer lays them out. */
static float *model_buffer(const gck_bench_model *m, float **ptrs)
{
    float *buf = aligned_alloc(64, (m->params * sizeof(float) + 63) & ~(size_t)63);
    if (buf == NULL)
        return NULL;
    size_t off = 0;
    for (size_t t = 0; t < m->nt; t++) {
        ptrs[t] = buf + off;
        off += m->len[t];
    }
    return buf;
}

const char *gck_bench_model_buffers(gck_bench_model *m)
{
    static char err[128];
    if (m->in_buf != NULL)
        return NULL;
    m->in = calloc(m->nt, sizeof *m->in);
    m->grad = calloc(m->nt, sizeof *m->grad);
    if (m->in == NULL || m->grad == NULL || (m->in_buf = model_buffer(m, m->in)) == NULL ||
        (m->grad_buf = model_buffer(m, m->grad)) == NULL) {
        gck_bench_model_free_buffers(m);
        snprintf(err, sizeof err, "cannot allocate 2 x %zu MiB for model %s", m->params * 4 >> 20, m->name);
        return err;
    }
    uint64_t s = 99;
    for (size_t i = 0; i < m->params; i++) {
        s = s * 6364136223846793005u + 1442695040888963407u;
        m->in_buf[i] = (float)((double)(s >> 40) * 0x1p-24 - 0.5) * 0.01f;
    }
    memset(m->grad_buf, 0, m->params * sizeof(float)); /* fault the pages in now, not in a timed run */
    return NULL;
}

void gck_bench_model_free_buffers(gck_bench_model *m)
{
    free(m->in_buf), free(m->grad_buf), free(m->in), free(m->grad);
    m->in_buf = m->grad_buf = NULL;
    m->in = m->grad = NULL;
}
