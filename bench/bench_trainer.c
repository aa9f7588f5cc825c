/* bench/bench_trainer.c - the trainer path (gck_tensors_* on a trainer's buffers) beside the hand loop.
 *
 * Names: "trainer_<path>/<model>/k<k>/<threads>t/<params>", path "hand"
 * (bench_trainer_hand.c: plain C over the contiguous gradient buffer),
 * "hand_fused" (the hand loop with the last micro-batch's add fused into
 * its mean + norm loop: the trainer path's passes), "hand_staged" (the hand
 * loop with a sum buffer of its own and the clipped mean written into the
 * gradient: the floor of the checkpointer path, trainer_ckpt/... in
 * bench_checkpointer.c, which must copy), "hand_f64sum" (the
 * same with the squares summed in double: the hand
 * loop's cost for the norm the library computes) or "tensors" (one
 * gck_tensors_* call per step over the model's tensor list, pointing into
 * the same buffers). One iteration is one optimizer step's
 * gradient bookkeeping in f32: k micro-batch gradients accumulated in place
 * into the trainer's buffer (the first written, the rest added), their mean
 * and global 2-norm, and a clip by that norm (max_norm 0.1, below the
 * gradients' norm: it triggers every step). The trainer path:
 *
 *     gck_tensors_axpy_init(&grad, 1.0, &in);          first micro-batch
 *     gck_tensors_add(&grad, &in);                     each further one but the last
 *     gck_tensors_axpy_div_sumsq(&grad, 1.0, &in, k, NULL, &ss);
 *                                                      the last one + mean + sum of squares (k > 1)
 *     gck_tensors_sumsq(&grad, NULL, &ss);             (k = 1)
 *     gck_tensors_clip_with_norm(&grad, 0.1, sqrt(ss), GCK_CLIP_EPS_DEFAULT, 0, &info);
 *
 * The hand loop makes k + 2 passes over the gradient and reads the input k
 * times; the trainer path, for k > 1, one pass fewer (the last micro-batch,
 * the mean and the norm in one). bytes_per_second counts the hand loop's
 * traffic (traffic_bytes) for every path, so it compares times. Models: gpt120k,
 * small2k, resnet50 and gpt2s of bench_models.c; k = 1 and 4. Nothing is
 * allocated per step beyond the library's scratch for long lists.
 *
 * "tensors_call/<op>/1t/<count>": the per-call cost of the list functions on
 * count tiny tensors (16 floats each, not adjacent, so no run merges them),
 * what a binding pays per call and per tensor: norm (p = 2), add,
 * div_sumsq (by 4) and scale (by -1); items_per_second is tensors per
 * second. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/gradckpt.h>

#include "bench.h"

#define TRAINER_MAX_NORM 0.1

typedef struct trainer_ctx {
    gck_bench_model *m;
    int k;
    gck_tensor_list grad, in;
} trainer_ctx;

static const char *trainer_prepare(void *ctx, int64_t n, int threads)
{
    (void)n, (void)threads;
    trainer_ctx *c = ctx;
    const char *err = gck_bench_model_buffers(c->m);
    if (err != NULL)
        return err;
    c->grad = (gck_tensor_list){c->m->nt, (void *const *)c->m->grad, c->m->len, GCK_DTYPE_F32, NULL};
    c->in = (gck_tensor_list){c->m->nt, (void *const *)c->m->in, c->m->len, GCK_DTYPE_F32, NULL};
    return NULL;
}

static double hand_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    return gck_bench_hand_step(c->m->grad_buf, c->m->in_buf, c->m->params, c->k, (float)TRAINER_MAX_NORM);
}

static double hand64_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    return gck_bench_hand_step_f64sum(c->m->grad_buf, c->m->in_buf, c->m->params, c->k, (float)TRAINER_MAX_NORM);
}

static double handfused_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    return gck_bench_hand_step_fused(c->m->grad_buf, c->m->in_buf, c->m->params, c->k, (float)TRAINER_MAX_NORM);
}

/* One staging buffer per model, shared by its k and thread variants. */
static float *stage_of(const gck_bench_model *m)
{
    static struct { const gck_bench_model *m; float *s; } stages[GCK_BENCH_NMODELS];
    for (int i = 0; i < GCK_BENCH_NMODELS; i++) {
        if (stages[i].m == m)
            return stages[i].s;
        if (stages[i].m == NULL) {
            const size_t bytes = (m->params * sizeof(float) + 63) / 64 * 64;
            float *s = aligned_alloc(64, bytes);
            if (s == NULL)
                return NULL;
            memset(s, 0, bytes); /* fault the pages in now */
            stages[i].m = m, stages[i].s = s;
            return s;
        }
    }
    return NULL;
}

static const char *staged_prepare(void *ctx, int64_t n, int threads)
{
    const char *err = trainer_prepare(ctx, n, threads);
    if (err == NULL && stage_of(((trainer_ctx *)ctx)->m) == NULL)
        err = "cannot allocate the staging buffer";
    return err;
}

static double handstaged_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    return gck_bench_hand_step_staged(c->m->grad_buf, stage_of(c->m), c->m->in_buf, c->m->params, c->k,
                                      (float)TRAINER_MAX_NORM);
}

static double tensors_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    double ss = 0.0;
    gck_clip_info info;
    gck_status s = gck_tensors_axpy_init(&c->grad, 1.0, &c->in);
    for (int j = 1; j < c->k - 1 && s == GCK_OK; j++)
        s = gck_tensors_add(&c->grad, &c->in);
    if (s == GCK_OK)
        s = c->k > 1 ? gck_tensors_axpy_div_sumsq(&c->grad, 1.0, &c->in, (double)c->k, NULL, &ss)
                     : gck_tensors_sumsq(&c->grad, NULL, &ss);
    if (s == GCK_OK)
        s = gck_tensors_clip_with_norm(&c->grad, TRAINER_MAX_NORM, sqrt(ss), GCK_CLIP_EPS_DEFAULT, 0, &info);
    if (s != GCK_OK || !info.clipped)
        abort(); /* valid lists, and these gradients always clip: a harness bug */
    return info.total_norm;
}

/* Bytes per parameter of one step: k input reads, the first write, k - 1
 * read-modify-writes, the mean + norm pass (read and write; k = 1: read)
 * and the clip's read and write. */
static double traffic_bytes(int k)
{
    return 4.0 * (k + 1 + 2.0 * (k - 1) + (k > 1 ? 2 : 1) + 2);
}

static void register_tensor_calls(void);

void gck_bench_register_trainer(int threads)
{
    if (threads == 1)
        register_tensor_calls();
    static const char *const names[] = {"gpt120k", "small2k", "resnet50", "gpt2s"};
    static const int ks[] = {1, 4};
    static const char *const paths[] = {"hand", "tensors", "hand_f64sum", "hand_fused", "hand_staged"};
    static const gck_bench_body bodies[] = {hand_body, tensors_body, hand64_body, handfused_body, handstaged_body};
    enum { NP = sizeof paths / sizeof paths[0] };
    enum { NM = sizeof names / sizeof names[0], NK = sizeof ks / sizeof ks[0] };
    static trainer_ctx ctx[2][NM][NK];
    for (int mi = 0; mi < NM; mi++)
        for (int ki = 0; ki < NK; ki++) {
            trainer_ctx *c = &ctx[threads - 1][mi][ki];
            *c = (trainer_ctx){.m = gck_bench_model_named(names[mi]), .k = ks[ki]};
            for (int pi = 0; pi < NP; pi++) {
                char name[96], label[64];
                snprintf(name, sizeof name, "trainer_%s/%s/k%d/%dt", paths[pi], names[mi], ks[ki], threads);
                snprintf(label, sizeof label, "%s f32, %zu tensors", paths[pi], c->m->nt);
                const int64_t size = (int64_t)c->m->params;
                gck_bench_register(&(gck_bench_spec){
                    .name = name, .body = bodies[pi], .prepare = bodies[pi] == handstaged_body ? staged_prepare
                                                                                          : trainer_prepare,
                    .ctx = c,
                    .threads = threads, .bytes_per_elem = traffic_bytes(ks[ki]), .label = label,
                    .sizes = &size, .nsizes = 1});
            }
        }
}

/* ---- per-call cost ------------------------------------------------------------- */

enum { CALL_MAX = 4096, CALL_LEN = 16, CALL_STRIDE = 32 };

typedef struct call_ctx {
    float *a, *b;
    void *pa[CALL_MAX], *pb[CALL_MAX];
    size_t lens[CALL_MAX];
} call_ctx;

static call_ctx *g_call;

static const char *call_prepare(void *ctx, int64_t n, int threads)
{
    (void)ctx, (void)n, (void)threads;
    if (g_call != NULL)
        return NULL;
    call_ctx *c = calloc(1, sizeof *c);
    float *a = c != NULL ? aligned_alloc(64, CALL_MAX * CALL_STRIDE * sizeof(float)) : NULL;
    float *b = a != NULL ? aligned_alloc(64, CALL_MAX * CALL_STRIDE * sizeof(float)) : NULL;
    if (b == NULL) {
        free(a), free(c);
        return "cannot allocate the per-call buffers";
    }
    for (size_t i = 0; i < (size_t)CALL_MAX * CALL_STRIDE; i++)
        a[i] = b[i] = (float)(i % 7) * 0.25f - 0.75f;
    for (size_t t = 0; t < CALL_MAX; t++) {
        c->pa[t] = a + t * CALL_STRIDE;
        c->pb[t] = b + t * CALL_STRIDE;
        c->lens[t] = CALL_LEN;
    }
    c->a = a, c->b = b;
    g_call = c;
    return NULL;
}

#define CALL_LISTS(n)                                                                      \
    const gck_tensor_list la = {(size_t)(n), g_call->pa, g_call->lens, GCK_DTYPE_F32, NULL}; \
    const gck_tensor_list lb = {(size_t)(n), g_call->pb, g_call->lens, GCK_DTYPE_F32, NULL}; \
    (void)lb

static double call_norm(void *ctx, int64_t n)
{
    (void)ctx;
    CALL_LISTS(n);
    double total = 0.0;
    gck_tensors_norm(&la, 2.0, NULL, &total);
    return total;
}

static double call_add(void *ctx, int64_t n)
{
    (void)ctx;
    CALL_LISTS(n);
    return gck_tensors_add(&la, &lb);
}

static double call_div_sumsq(void *ctx, int64_t n)
{
    (void)ctx;
    CALL_LISTS(n);
    double total = 0.0;
    gck_tensors_div_sumsq(&la, 4.0, NULL, &total);
    gck_tensors_scale(&la, 4.0); /* keep the values where they were */
    return total;
}

static double call_scale(void *ctx, int64_t n)
{
    (void)ctx;
    CALL_LISTS(n);
    return gck_tensors_scale(&la, -1.0);
}

static void register_tensor_calls(void)
{
    static const int64_t counts[] = {1, 16, 256, CALL_MAX};
    static const struct { const char *name; gck_bench_body body; } ops[] = {
        {"norm", call_norm}, {"add", call_add}, {"div_sumsq", call_div_sumsq}, {"scale", call_scale}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "tensors_call/%s/1t", ops[i].name);
        gck_bench_register(&(gck_bench_spec){
            .name = name, .body = ops[i].body, .prepare = call_prepare, .ctx = NULL, .threads = 1,
            .bytes_per_elem = CALL_LEN * sizeof(float), .label = "f32 tensors of 16", .sizes = counts,
            .nsizes = sizeof counts / sizeof counts[0]});
    }
}
