/* bench/bench_tree_hand.c - the two micro-batch orders written by hand: what the tree order's working set costs.
 *
 * Names: "order_hand/<order>/<model>/k<k>/1t/<params>", order "seq" (the
 * left fold: g = x, then g += x k - 1 times), "tree" (the pairwise tree as a
 * binary counter, GCK_REDUCE_TREE's order: up to log2(k) + 1 buffers live,
 * each completed pair merged in one pass that reads every level it closes)
 * or "tree_nt" (the same, a level it opens written with streaming stores).
 * Each then finishes as a flush does: out = sum / k with the sum of
 * squares in one pass, and a clip of out. One contiguous buffer of the
 * model's parameter count and its input (bench_models.c), so no per-tensor
 * cost: the fewest passes plain C makes for each order, built like the
 * bandwidth references (-O3 -march=native -ffast-math).
 *
 * Both orders move the same bytes per parameter (47 transfers at k = 16,
 * counted in bytes_per_second), but the tree keeps popcount(j) partial sums
 * live where the fold keeps one: that is forced by the order (a subtree can
 * be added to nothing before its right neighbour is complete), so
 * tree ÷ seq of this pair is the cost of the order's working set on the
 * machine, beside flush_tree ÷ flush of bench_checkpointer.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __AVX__
#include <immintrin.h>
#endif

#include "bench.h"

#define ORDER_MAX_LEVELS 8 /* k <= 128 */

typedef struct order_ctx {
    gck_bench_model *m;
    int k;
    int tree, nt;
    float *lev[ORDER_MAX_LEVELS]; /* lev[0]: the sum; shared by every context of the model */
    float *out;
} order_ctx;

/* The buffers of one model, kept for every order and k of it. */
typedef struct order_bufs {
    gck_bench_model *m;
    float *lev[ORDER_MAX_LEVELS];
    float *out;
} order_bufs;

static order_bufs g_bufs;

static void order_free(void)
{
    for (int d = 0; d < ORDER_MAX_LEVELS; d++)
        free(g_bufs.lev[d]);
    free(g_bufs.out);
    g_bufs = (order_bufs){0};
}

static float *order_alloc(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (p != NULL)
        memset(p, 0, n * sizeof(float)); /* the pages exist before timing */
    return p;
}

/* Buffers the tree uses over k micro-batches: micro-batch j opens level
 * popcount(j) (j even) or merges into the levels below it. */
static int order_levels(int k)
{
    int need = 1;
    for (int j = 0; j < k; j++) {
        const int d = __builtin_popcount((unsigned)j) + ((j & 1) == 0);
        need = d > need ? d : need;
    }
    return need;
}

static const char *order_prepare(void *ctx, int64_t n, int threads)
{
    (void)n, (void)threads;
    order_ctx *c = ctx;
    const char *err = gck_bench_model_buffers(c->m);
    if (err != NULL)
        return err;
    if (g_bufs.m != c->m)
        order_free();
    g_bufs.m = c->m;
    const size_t p = c->m->params;
    const int need = c->tree ? order_levels(c->k) : 1;
    for (int d = 0; d < need; d++)
        if (g_bufs.lev[d] == NULL && (g_bufs.lev[d] = order_alloc(p)) == NULL)
            return "cannot allocate the levels";
    if (g_bufs.out == NULL && (g_bufs.out = order_alloc(p)) == NULL)
        return "cannot allocate the output";
    memcpy(c->lev, g_bufs.lev, sizeof c->lev);
    c->out = g_bufs.out;
    return NULL;
}

/* dst = x, streaming when nt (dst 64-byte aligned: every level is) */
static void order_open(float *restrict dst, const float *restrict x, size_t n, int nt)
{
#ifdef __AVX__
    if (nt) {
        size_t i = 0;
        for (; i + 8 <= n; i += 8)
            _mm256_stream_ps(dst + i, _mm256_loadu_ps(x + i));
        for (; i < n; i++)
            dst[i] = x[i];
        _mm_sfence();
        return;
    }
#endif
    (void)nt;
    for (size_t i = 0; i < n; i++)
        dst[i] = x[i];
}

static void order_add(float *restrict acc, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        acc[i] += x[i];
}

/* acc += a + x (+ b (+ c)): one pass over every level a merge closes */
static void order_merge(float *restrict acc, const float *restrict a, const float *restrict b,
                        const float *restrict c, const float *restrict x, size_t n, int merges)
{
    if (merges == 2)
        for (size_t i = 0; i < n; i++)
            acc[i] += a[i] + x[i];
    else if (merges == 3)
        for (size_t i = 0; i < n; i++)
            acc[i] += b[i] + (a[i] + x[i]);
    else
        for (size_t i = 0; i < n; i++)
            acc[i] += c[i] + (b[i] + (a[i] + x[i]));
}

static double order_body(void *ctx, int64_t n_)
{
    order_ctx *c = ctx;
    const size_t n = (size_t)n_;
    const float *x = c->m->in_buf;
    for (int j = 0; j < c->k; j++) {
        if (!c->tree) {
            if (j == 0)
                order_open(c->lev[0], x, n, 0);
            else
                order_add(c->lev[0], x, n);
            continue;
        }
        const int depth = __builtin_popcount((unsigned)j);
        const int merges = __builtin_ctz(~(unsigned)j);
        if (merges == 0)
            order_open(c->lev[depth], x, n, c->nt);
        else if (merges == 1)
            order_add(c->lev[depth - 1], x, n);
        else /* merges <= 4 for k <= 16 */
            order_merge(c->lev[depth - merges], c->lev[depth - 1], c->lev[depth - 2],
                        merges > 3 ? c->lev[depth - 3] : NULL, x, n, merges);
    }
    /* the flush: mean and sum of squares in one pass, then the clip */
    const float *s = c->lev[0];
    float *restrict out = c->out;
    const float inv = 1.0f / (float)c->k;
    double ss = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = s[i] * inv;
        ss += (double)out[i] * out[i];
    }
    const float coef = (float)(0.1 / (sqrt(ss) + 1e-6));
    if (coef < 1.0f)
        for (size_t i = 0; i < n; i++)
            out[i] *= coef;
    return ss;
}

/* Bytes per parameter of either order (f32): k input reads, the first
 * write, k - 1 read-modify-writes; the finish's read, write, and the clip's
 * read and write (bench_checkpointer.c's traffic_bytes, no checksum). */
static double order_traffic(int k)
{
    return 4.0 * (k + 1 + 2.0 * (k - 1) + 2 + 2);
}

void gck_bench_register_orders(int threads)
{
    if (threads != 1)
        return;
    static const char *const names[] = {"small147", "small2k", "resnet50", "gpt2s"};
    static const int ks[] = {4, 16};
    static const char *const orders[] = {"seq", "tree", "tree_nt"};
    enum { NM = sizeof names / sizeof names[0], NK = sizeof ks / sizeof ks[0], NO = 3 };
    static order_ctx ctx[NM][NK][NO];
    /* a smoke run checks the code on the smallest model: the others hold
     * up to six buffers of GPT-2 small's size for the rest of the run */
    for (int mi = 0; mi < (gck_bench_smoke() ? 1 : NM); mi++)
        for (int ki = 0; ki < NK; ki++)
            for (int oi = 0; oi < NO; oi++) {
                order_ctx *c = &ctx[mi][ki][oi];
                *c = (order_ctx){.m = gck_bench_model_named(names[mi]), .k = ks[ki], .tree = oi > 0, .nt = oi == 2};
                char name[96];
                snprintf(name, sizeof name, "order_hand/%s/%s/k%d/1t", orders[oi], names[mi], ks[ki]);
                const int64_t size = (int64_t)c->m->params;
                gck_bench_register(&(gck_bench_spec){.name = name, .body = order_body, .prepare = order_prepare,
                                                     .ctx = c, .threads = 1, .bytes_per_elem = order_traffic(ks[ki]),
                                                     .label = "hand f32, one buffer", .sizes = &size,
                                                     .nsizes = 1});
            }
}
