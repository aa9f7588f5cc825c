/* bench/bench_trainer.c - the trainer path (gck_tensors_* on a trainer's buffers) beside the hand loop.
 *
 * Names: "trainer_<path>/<model>/k<k>/<threads>t/<params>", path "hand"
 * (bench_trainer_hand.c: plain C over the contiguous gradient buffer) or
 * "tensors" (one gck_tensors_* call per step over the model's tensor list,
 * pointing into the same buffers). One iteration is one optimizer step's
 * gradient bookkeeping in f32: k micro-batch gradients accumulated in place
 * into the trainer's buffer (the first written, the rest added), their mean
 * and global 2-norm, and a clip by that norm (max_norm 0.1, below the
 * gradients' norm: it triggers every step). The trainer path:
 *
 *     gck_tensors_axpy_init(&grad, 1.0, &in);          first micro-batch
 *     gck_tensors_add(&grad, &in);                     each further one
 *     gck_tensors_div_sumsq(&grad, k, NULL, &ss);      mean + sum of squares (k > 1)
 *     gck_tensors_sumsq(&grad, NULL, &ss);             (k = 1)
 *     gck_tensors_clip_with_norm(&grad, 0.1, sqrt(ss), GCK_CLIP_EPS_DEFAULT, 0, &info);
 *
 * Both make k + 2 passes over the gradient and read the input k times;
 * bytes_per_second counts that traffic (traffic_bytes). Models: gpt120k,
 * small2k, resnet50 and gpt2s of bench_models.c; k = 1 and 4. Nothing is
 * allocated per step beyond the library's scratch for long lists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

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

static double tensors_body(void *ctx, int64_t n)
{
    (void)n;
    const trainer_ctx *c = ctx;
    double ss = 0.0;
    gck_clip_info info;
    gck_status s = gck_tensors_axpy_init(&c->grad, 1.0, &c->in);
    for (int j = 1; j < c->k && s == GCK_OK; j++)
        s = gck_tensors_add(&c->grad, &c->in);
    if (s == GCK_OK)
        s = c->k > 1 ? gck_tensors_div_sumsq(&c->grad, (double)c->k, NULL, &ss) : gck_tensors_sumsq(&c->grad, NULL, &ss);
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

void gck_bench_register_trainer(int threads)
{
    static const char *const names[] = {"gpt120k", "small2k", "resnet50", "gpt2s"};
    static const int ks[] = {1, 4};
    static const char *const paths[] = {"hand", "tensors"};
    enum { NM = sizeof names / sizeof names[0], NK = sizeof ks / sizeof ks[0] };
    static trainer_ctx ctx[2][NM][NK];
    for (int mi = 0; mi < NM; mi++)
        for (int ki = 0; ki < NK; ki++) {
            trainer_ctx *c = &ctx[threads - 1][mi][ki];
            *c = (trainer_ctx){.m = gck_bench_model_named(names[mi]), .k = ks[ki]};
            for (int pi = 0; pi < 2; pi++) {
                char name[96], label[64];
                snprintf(name, sizeof name, "trainer_%s/%s/k%d/%dt", paths[pi], names[mi], ks[ki], threads);
                snprintf(label, sizeof label, "%s f32, %zu tensors", paths[pi], c->m->nt);
                const int64_t size = (int64_t)c->m->params;
                gck_bench_register(&(gck_bench_spec){
                    .name = name, .body = pi ? tensors_body : hand_body, .prepare = trainer_prepare, .ctx = c,
                    .threads = threads, .bytes_per_elem = traffic_bytes(ks[ki]), .label = label,
                    .sizes = &size, .nsizes = 1});
            }
        }
}
