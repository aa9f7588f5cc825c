/* kernels/tensors.c - the list functions of tensors.h: one work list over every tensor, one OpenMP region per pass.
 *
 * A call checks every argument first, then makes one pass over the list
 * (two for clipping that triggers and for general p-norms). Small calls run
 * on the calling thread, tensor by tensor, and allocate nothing for short
 * lists. Large ones build a work list of items, each a tensor's aligned run
 * of a power of two of blocks (the whole tensor when it is short), cut into
 * one contiguous, byte-balanced share per thread of one parallel region. Each
 * item's result is a subtree of its tensor's canonical block tree
 * (kernels_internal.h), and the items of a tensor are combined with the same
 * pairwise rule the single kernels use (reduce_internal.h), so every
 * per-tensor result is exactly the single kernel's, whatever the split. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include <gradckpt/kernels.h>
#include <gradckpt/tensors.h>

#include "alloc_internal.h"
#include "norm_internal.h"
#include "reduce_internal.h"
#include "status_internal.h"
#include "threads_internal.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

/* ---- the work ------------------------------------------------------------------ */

typedef enum gck_tl_kind {
    GCK_TL_SUMSQ, /* reductions: one double per item */
    GCK_TL_ASUM,
    GCK_TL_POWSUM,
    GCK_TL_AMAX,
    GCK_TL_DIV_SUMSQ,
    GCK_TL_AXPY_DIV_SUMSQ, /* axpy of x, then DIV_SUMSQ, block by block */
    GCK_TL_ADD, /* elementwise */
    GCK_TL_AXPY,
    GCK_TL_AXPY_INIT,
    GCK_TL_SCALE
} gck_tl_kind;

typedef struct gck_tl_job {
    const gck_kernel_table *t;
    gck_tl_kind kind;
    const gck_tensor_list *a;   /* the reduced or written list */
    const gck_tensor_list *x;   /* add/axpy/axpy_init: the second operand */
    double w;                   /* axpy weight, scale factor, divisor */
    double p;                   /* POWSUM: exponent */
    const gck_pnorm_plan *plan; /* POWSUM: per tensor; s == 0 skips the tensor */
    gck_reduce_op div_op[2];    /* DIV_SUMSQ: the fused op for F64 [0] and F32 [1] tensors */
    double div_s[2];            /* and its factor (gck_div_sumsq_op) */
    double *res;                /* reductions: per-tensor results */
} gck_tl_job;

static gck_dtype gck_tl_dtype(const gck_tensor_list *t, size_t i)
{
    return t->dtypes != NULL ? t->dtypes[i] : t->dtype;
}

/* The dtypes a list may hold are the first four (F64, F32, F16, BF16;
 * gck_tl_check): these are looked up per tensor on every call, so by table
 * (a switch per tensor cost a measurable part of a small list's call). */
#define GCK_TL_DTYPES 4
_Static_assert(GCK_DTYPE_F64 == 0 && GCK_DTYPE_F32 == 1 && GCK_DTYPE_F16 == 2 && GCK_DTYPE_BF16 == 3,
               "gck_tl_check tests a dtype by its number");

/* The element type of tensor i (the list was checked). */
static gck_elem gck_tl_elem(const gck_tensor_list *t, size_t i)
{
    static const unsigned char elem[GCK_TL_DTYPES] = {
        [GCK_DTYPE_F64] = GCK_E_F64, [GCK_DTYPE_F32] = GCK_E_F32, [GCK_DTYPE_BF16] = GCK_E_BF16,
        [GCK_DTYPE_F16] = GCK_E_F16};
    return (gck_elem)elem[(unsigned)gck_tl_dtype(t, i) % GCK_TL_DTYPES];
}

/* Bytes per element of a checked dtype. */
static size_t gck_tl_esz(gck_dtype d)
{
    static const unsigned char esz[GCK_TL_DTYPES] = {
        [GCK_DTYPE_F64] = 8, [GCK_DTYPE_F32] = 4, [GCK_DTYPE_BF16] = 2, [GCK_DTYPE_F16] = 2};
    return esz[(unsigned)d % GCK_TL_DTYPES];
}

/* The reductions of each element type: what a list's per-tensor results are
 * made of, so that they are exactly the single kernels' (gck_sumsq_bf16 is
 * gck_sumsq_f32 of the widened tensor, and so on). */
static const struct gck_tl_ops {
    gck_reduce_op sumsq, asum, powsum;
} gck_tl_ops[] = {
    [GCK_E_F64] = {GCK_R_SUMSQ_F64, GCK_R_ASUM_F64, GCK_R_POWSUM_F64},
    [GCK_E_F32] = {GCK_R_SUMSQ_F32, GCK_R_ASUM_F32, GCK_R_POWSUM_F32},
    [GCK_E_BF16] = {GCK_R_SUMSQ_BF16, GCK_R_ASUM_BF16, GCK_R_POWSUM_BF16},
    [GCK_E_F16] = {GCK_R_SUMSQ_F16, GCK_R_ASUM_F16, GCK_R_POWSUM_F16},
};

static double gck_tl_amax(const gck_kernel_table *t, const void *a, gck_elem e, size_t lo, size_t len)
{
    switch (e) {
    case GCK_E_F64: return t->amax_f64((const double *)a + lo, len);
    case GCK_E_F32: return t->amax_f32((const float *)a + lo, len);
    case GCK_E_BF16: return t->amax_bf16((const uint16_t *)a + lo, len);
    default: return t->amax_f16((const uint16_t *)a + lo, len);
    }
}

static void gck_tl_scale(const gck_kernel_table *t, void *a, gck_elem e, double w, size_t lo, size_t len)
{
    switch (e) {
    case GCK_E_F64: t->scale_f64((double *)a + lo, w, len); break;
    case GCK_E_F32: t->scale_f32((float *)a + lo, (float)w, len); break;
    case GCK_E_BF16: t->scale_bf16((uint16_t *)a + lo, (float)w, len); break;
    default: t->scale_f16((uint16_t *)a + lo, (float)w, len); break;
    }
}

/* acc (F64 or F32; checked) [op]= x (any of the four) for a pair kind. */
GCK_ALWAYS_INLINE void gck_tl_pair_run(const gck_kernel_table *t, gck_tl_kind kind, void *a, gck_elem ea, double w,
                            const void *x, gck_elem ex, size_t lo, size_t len)
{
    double *a64 = (double *)a + lo;
    float *a32 = (float *)a + lo;
    const double *x64 = (const double *)x + lo;
    const float *x32 = (const float *)x + lo;
    const uint16_t *x16 = (const uint16_t *)x + lo;
    const float wf = (float)w;
    /* one case per (kind, acc, x): 3 x 2 x 4 */
#define GCK_TL_PAIR(k, e_a, e_x) (((int)(k) * 4 + (int)(e_a)) * 4 + (int)(e_x))
    switch (GCK_TL_PAIR(kind, ea, ex)) {
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F64, GCK_E_F64): t->add_f64(a64, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F64, GCK_E_F32): t->add_f32_to_f64(a64, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F64, GCK_E_BF16): t->add_bf16_to_f64(a64, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F64, GCK_E_F16): t->add_f16_to_f64(a64, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F32, GCK_E_F64): t->add_f64_to_f32(a32, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F32, GCK_E_F32): t->add_f32(a32, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F32, GCK_E_BF16): t->add_bf16_to_f32(a32, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_ADD, GCK_E_F32, GCK_E_F16): t->add_f16_to_f32(a32, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F64, GCK_E_F64): t->axpy_f64(a64, w, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F64, GCK_E_F32): t->axpy_f32_to_f64(a64, w, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F64, GCK_E_BF16): t->axpy_bf16_to_f64(a64, w, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F64, GCK_E_F16): t->axpy_f16_to_f64(a64, w, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F32, GCK_E_F64): t->axpy_f64_to_f32(a32, wf, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F32, GCK_E_F32): t->axpy_f32(a32, wf, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F32, GCK_E_BF16): t->axpy_bf16_to_f32(a32, wf, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY, GCK_E_F32, GCK_E_F16): t->axpy_f16_to_f32(a32, wf, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F64, GCK_E_F64): t->axpy_init_f64(a64, w, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F64, GCK_E_F32): t->axpy_init_f32_to_f64(a64, w, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F64, GCK_E_BF16): t->axpy_init_bf16_to_f64(a64, w, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F64, GCK_E_F16): t->axpy_init_f16_to_f64(a64, w, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F32, GCK_E_F64): t->axpy_init_f64_to_f32(a32, wf, x64, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F32, GCK_E_F32): t->axpy_init_f32(a32, wf, x32, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F32, GCK_E_BF16): t->axpy_init_bf16_to_f32(a32, wf, x16, len); break;
    case GCK_TL_PAIR(GCK_TL_AXPY_INIT, GCK_E_F32, GCK_E_F16): t->axpy_init_f16_to_f32(a32, wf, x16, len); break;
    default: break; /* not reached: gck_tl_check_pair admits only these */
    }
#undef GCK_TL_PAIR
}

/* One item: elements [lo, lo + len) of tensor i (lo a multiple of the
 * item size, which is a power of two of blocks). Reductions return the
 * pairwise result of those blocks; elementwise kinds return 0 (and may run
 * on past tensor i's end into the adjacent tensors of a span). */
static double gck_tl_run(const gck_tl_job *j, size_t i, size_t lo, size_t len)
{
    const gck_kernel_table *t = j->t;
    void *a = j->a->data[i];
    const gck_elem e = gck_tl_elem(j->a, i);
    if (j->kind >= GCK_TL_ADD) { /* elementwise first: small lists pay per tensor */
        if (j->kind == GCK_TL_SCALE)
            gck_tl_scale(t, a, e, j->w, lo, len);
        else
            gck_tl_pair_run(t, j->kind, a, e, j->w, j->x->data[i], gck_tl_elem(j->x, i), lo, len);
        return 0.0;
    }
    gck_reduce_args r = {.t = t, .op = gck_tl_ops[e].sumsq, .a = a, .m = a};
    switch (j->kind) {
    case GCK_TL_SUMSQ:
        return gck_reduce_range(&r, lo, len);
    case GCK_TL_ASUM:
        r.op = gck_tl_ops[e].asum;
        return gck_reduce_range(&r, lo, len);
    case GCK_TL_POWSUM:
        if (j->plan[i].s == 0.0)
            return 0.0;
        r.op = gck_tl_ops[e].powsum;
        r.s = j->plan[i].s;
        r.p = j->p;
        return gck_reduce_range(&r, lo, len);
    case GCK_TL_AMAX:
        return gck_tl_amax(t, a, e, lo, len);
    case GCK_TL_DIV_SUMSQ: /* F64 or F32 only (checked) */
        r.op = j->div_op[e == GCK_E_F32];
        r.s = j->div_s[e == GCK_E_F32];
        return gck_reduce_range(&r, lo, len);
    case GCK_TL_AXPY_DIV_SUMSQ: { /* acc F64 or F32 (checked) */
        /* The axpy of a block, then its division and sum of squares while
         * it is still in cache: one pass over memory instead of two, the
         * same kernels on the same blocks, so the same bits. */
        r.op = j->div_op[e == GCK_E_F32];
        r.s = j->div_s[e == GCK_E_F32];
        const void *x = j->x->data[i];
        const gck_elem ex = gck_tl_elem(j->x, i);
        if (e == GCK_E_F32 && ex == GCK_E_F32) {
            /* one kernel doing both per element: the axpy's values never go
             * back to memory before the division reads them (the trainer
             * path's gpt120k step: 59-64 -> 55-59 us on the Intel VM) */
            r.op = r.op == GCK_R_SCALE_SUMSQ_F32 ? GCK_R_AXPY_SCALE_SUMSQ_F32 : GCK_R_AXPY_DIV_SUMSQ_F32;
            r.a = x;
            r.w = j->w;
            return gck_reduce_range(&r, lo, len);
        }
        gck_pairwise p;
        p.top = 0;
        for (size_t off = 0; off < len; off += GCK_BLOCK) {
            const size_t bl = len - off < GCK_BLOCK ? len - off : GCK_BLOCK;
            gck_tl_pair_run(t, GCK_TL_AXPY, a, e, j->w, x, ex, lo + off, bl);
            gck_pairwise_push(&p, gck_reduce_range(&r, lo + off, bl), 1);
        }
        return gck_pairwise_finish(&p);
    }
    default: /* elementwise: above */
        return 0.0;
    }
}

/* ---- one call's scratch and work list ----------------------------------------- */

/* Items: a tensor's elements [lo, lo + len); b0 is the item's first byte in
 * the concatenation of every item's traffic, which is what the threads'
 * shares are cut by. */
typedef struct gck_tl_item {
    size_t tensor, lo, len, b0;
    double r;
} gck_tl_item;

/* Doubles of per-tensor scratch a call may need (p-norms: norms, a plan of
 * two, the power sums), and the stack space that makes short lists free of
 * allocation. */
#define GCK_TL_SCRATCH 4
#define GCK_TL_STACK_TENSORS 64
#define GCK_TL_STACK_ITEMS 64

typedef struct gck_tl_ctx {
    const gck_kernel_table *t; /* read once per call */
    gck_tl_item *items;        /* NULL: run on this thread, tensor by tensor */
    size_t nitems, bytes;      /* bytes: the items' total traffic */
    double *scratch;           /* GCK_TL_SCRATCH per tensor */
    void *heap;                /* what to free */
    gck_tl_item item_buf[GCK_TL_STACK_ITEMS];
    double scratch_buf[GCK_TL_SCRATCH * GCK_TL_STACK_TENSORS];
} gck_tl_ctx;

/* Elements per item for a call over `elems` elements on nth threads: a power
 * of two of blocks, at most GCK_CHUNK_BLOCKS, small enough that every thread
 * gets at least 16 items, so cutting the shares at item boundaries leaves
 * them within 1/16 of equal. */
static size_t gck_tl_chunk(size_t elems, size_t nth)
{
    const size_t nblocks = elems / GCK_BLOCK;
    size_t cb = GCK_CHUNK_BLOCKS;
    while (cb > 1 && nblocks < cb * 16 * nth)
        cb /= 2;
    return cb * GCK_BLOCK;
}

/* Sets up c for a call over list a (and x, the second list of a pair, or
 * NULL) of `elems` elements in all that needs nscr doubles of scratch per
 * tensor. The only failure is GCK_ERR_NO_MEMORY, before anything is written. */
static gck_status gck_tl_prepare(gck_tl_ctx *c, const char *fn, const gck_tensor_list *a, const gck_tensor_list *x,
                                 size_t elems, size_t nscr)
{
    const size_t count = a->count;
    c->t = gck_kernels_active();
    c->items = NULL;
    c->nitems = c->bytes = 0;
    c->scratch = c->scratch_buf;
    c->heap = NULL;
    size_t chunk = 0, nitems = 0;
    if (gck_use_threads(elems)) {
        chunk = gck_tl_chunk(elems, (size_t)gck_omp_threads());
        for (size_t i = 0; i < count; i++)
            nitems += (a->lens[i] + chunk - 1) / chunk;
    }
    size_t item_bytes = 0, scratch_bytes = 0;
    if (nitems > GCK_TL_STACK_ITEMS && !gck_mul_size(nitems, sizeof(gck_tl_item), &item_bytes))
        item_bytes = SIZE_MAX;
    if (count > GCK_TL_STACK_TENSORS && nscr > 0 && !gck_mul_size(count, nscr * sizeof(double), &scratch_bytes))
        scratch_bytes = SIZE_MAX;
    if (item_bytes > 0 || scratch_bytes > 0) {
        c->heap = item_bytes <= SIZE_MAX - scratch_bytes ? gck_malloc(item_bytes + scratch_bytes) : NULL;
        if (c->heap == NULL) {
            const size_t want = item_bytes <= SIZE_MAX - scratch_bytes ? item_bytes + scratch_bytes : SIZE_MAX;
            return gck_fail_ctx(gck_fail_oom("list scratch", want), "%s", fn);
        }
        if (scratch_bytes > 0)
            c->scratch = (double *)(void *)((char *)c->heap + item_bytes);
    }
    if (nitems == 0)
        return GCK_OK;
    c->items = item_bytes > 0 ? c->heap : c->item_buf;
    size_t k = 0, b = 0;
    for (size_t i = 0; i < count; i++) {
        const size_t n = a->lens[i];
        const size_t esz = gck_tl_esz(gck_tl_dtype(a, i)) + (x != NULL ? gck_tl_esz(gck_tl_dtype(x, i)) : 0);
        for (size_t lo = 0; lo < n; lo += chunk) {
            const size_t len = n - lo < chunk ? n - lo : chunk;
            c->items[k++] = (gck_tl_item){i, lo, len, b, 0.0};
            b += len * esz;
        }
    }
    c->nitems = k;
    c->bytes = b;
    return GCK_OK;
}

static void gck_tl_release(gck_tl_ctx *c)
{
    free(c->heap);
}

#if GCK_HAVE_OPENMP
/* Thread t's share [share(t), share(t + 1)) of `total` bytes cut in nth. */
static size_t gck_tl_share(size_t total, size_t nth, size_t t)
{
    return total / nth * t + (t < total % nth ? t : total % nth);
}

/* The first item starting at or after byte b. */
static size_t gck_tl_first_item(const gck_tl_item *it, size_t nitems, size_t b)
{
    size_t lo = 0, hi = nitems;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        if (it[mid].b0 < b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
#endif

/* ---- elementwise passes over adjacent tensors --------------------------------------
 * Tensors that are pieces of one buffer (a trainer's contiguous gradients)
 * are updated by one kernel call per run of adjacent pieces: elementwise
 * results do not depend on the split, and one long call saves the per-call
 * and tail cost of every piece. A span is elements [lo, lo + len) counted
 * from tensor i's start, possibly running on into the tensors after it. */
typedef struct gck_tl_span {
    size_t i, lo, len;
} gck_tl_span;

static const char *gck_tl_addr(const gck_tensor_list *t, size_t i, size_t e)
{
    return (const char *)t->data[i] + e * gck_tl_esz(gck_tl_dtype(t, i));
}

/* 1 when piece (i2, lo2) starts right where span s ends, in a and in x,
 * with the same dtypes. */
static int gck_tl_adjacent(const gck_tl_job *j, const gck_tl_span *s, size_t i2, size_t lo2)
{
    if (gck_tl_dtype(j->a, i2) != gck_tl_dtype(j->a, s->i) ||
        gck_tl_addr(j->a, s->i, s->lo + s->len) != gck_tl_addr(j->a, i2, lo2))
        return 0;
    return j->x == NULL || (gck_tl_dtype(j->x, i2) == gck_tl_dtype(j->x, s->i) &&
                            gck_tl_addr(j->x, s->i, s->lo + s->len) == gck_tl_addr(j->x, i2, lo2));
}

/* Adds piece (i, lo, len) to span s, running s first when it cannot extend. */
static void gck_tl_span_add(const gck_tl_job *j, gck_tl_span *s, size_t i, size_t lo, size_t len)
{
    if (s->len > 0 && gck_tl_adjacent(j, s, i, lo)) {
        s->len += len;
        return;
    }
    if (s->len > 0)
        gck_tl_run(j, s->i, s->lo, s->len);
    *s = (gck_tl_span){i, lo, len};
}

static void gck_tl_span_end(const gck_tl_job *j, const gck_tl_span *s)
{
    if (s->len > 0)
        gck_tl_run(j, s->i, s->lo, s->len);
}

/* The fold of per-tensor results into a call's total, in list order: a
 * left-to-right sum, or for AMAX the largest (NaN if any is NaN). */
typedef struct gck_tl_fold {
    double v;
    int nan;
} gck_tl_fold;

static void gck_tl_fold_in(const gck_tl_job *j, gck_tl_fold *f, size_t i, double r)
{
    if (j->res != NULL)
        j->res[i] = r;
    if (j->kind == GCK_TL_AMAX)
        gck_amax_fold(&f->v, &f->nan, r);
    else
        f->v = f->v + r;
}

/* Runs job j over every tensor of j->a. Reductions leave tensor i's result,
 * exactly the single kernel's, in j->res[i] (when not NULL) and return the
 * fold of all of them; elementwise kinds return 0. */
static double gck_tl_exec(const gck_tl_job *j, const gck_tl_ctx *c)
{
    const size_t count = j->a->count;
    const int elementwise = j->kind >= GCK_TL_ADD;
    gck_tl_fold f = {0.0, 0};
    if (c->items == NULL && elementwise) {
        gck_tl_span s = {0, 0, 0};
        for (size_t i = 0; i < count; i++)
            if (j->a->lens[i] > 0)
                gck_tl_span_add(j, &s, i, 0, j->a->lens[i]);
        gck_tl_span_end(j, &s);
        return 0.0;
    }
    if (c->items == NULL) {
        for (size_t i = 0; i < count; i++) {
            double r = gck_tl_run(j, i, 0, j->a->lens[i]);
            if (j->kind == GCK_TL_AMAX) { /* as gck_amax folds its chunks */
                double m = 0.0;
                int nan = 0;
                gck_amax_fold(&m, &nan, r);
                r = nan ? NAN : m;
            }
            gck_tl_fold_in(j, &f, i, r);
        }
        return f.nan ? NAN : f.v;
    }
#if GCK_HAVE_OPENMP
    gck_tl_item *it = c->items;
    const size_t nitems = c->nitems, bytes = c->bytes;
#pragma omp parallel
    {
        const size_t nth = (size_t)omp_get_num_threads(), tid = (size_t)omp_get_thread_num();
        const size_t hi = gck_tl_share(bytes, nth, tid + 1);
        size_t k = gck_tl_first_item(it, nitems, gck_tl_share(bytes, nth, tid));
        if (elementwise) {
            gck_tl_span s = {0, 0, 0};
            for (; k < nitems && it[k].b0 < hi; k++)
                gck_tl_span_add(j, &s, it[k].tensor, it[k].lo, it[k].len);
            gck_tl_span_end(j, &s);
        } else {
            for (; k < nitems && it[k].b0 < hi; k++)
                it[k].r = gck_tl_run(j, it[k].tensor, it[k].lo, it[k].len);
        }
    }
    if (elementwise)
        return 0.0;
    /* each tensor's items, in order, by the rule of its single kernel; empty
     * tensors have no items: their result is +0, which changes no fold */
    for (size_t i = 0; j->res != NULL && i < count; i++)
        j->res[i] = 0.0;
    for (size_t k = 0; k < nitems;) {
        const size_t i = it[k].tensor;
        double r;
        if (j->kind == GCK_TL_AMAX) {
            double m = 0.0;
            int nan = 0;
            for (; k < nitems && it[k].tensor == i; k++)
                gck_amax_fold(&m, &nan, it[k].r);
            r = nan ? NAN : m;
        } else {
            gck_pairwise p;
            p.top = 0;
            for (; k < nitems && it[k].tensor == i; k++)
                gck_pairwise_push(&p, it[k].r, gck_blocks_of(it[k].len));
            r = gck_pairwise_finish(&p);
        }
        gck_tl_fold_in(j, &f, i, r);
    }
#endif
    return f.nan ? NAN : f.v;
}

/* ---- argument checks ------------------------------------------------------------ */

/* Checks list t (role: "" or "acc ", "x ", ...) and sums its elements. */
static gck_status gck_tl_check(const char *fn, const char *role, const gck_tensor_list *t, int half_ok, size_t *elems)
{
    GCK_CHECK_ARG(t != NULL, "%s: the %slist is NULL", fn, role);
    *elems = 0;
    if (t->count == 0)
        return GCK_OK;
    GCK_CHECK_ARG(t->data != NULL && t->lens != NULL, "%s: the %slist of %zu tensors has NULL %s", fn, role,
                  t->count, t->data == NULL ? "data" : "lens");
    size_t total = 0;
    for (size_t i = 0; i < t->count; i++) {
        const gck_dtype d = gck_tl_dtype(t, i);
        /* F64, F32, then F16, BF16 (dtype.h): one comparison per tensor */
        if ((unsigned)d >= (half_ok ? 4u : 2u))
            return gck_fail(GCK_ERR_UNSUPPORTED, "%s: %stensor %zu: dtype %s is not supported (%s)", fn, role, i,
                            gck_dtype_name(d), half_ok ? "F32, F64, BF16 or F16" : "F32 or F64 here");
        const size_t n = t->lens[i];
        GCK_CHECK_ARG(n == 0 || t->data[i] != NULL, "%s: %stensor %zu: NULL data with %zu elements", fn, role, i, n);
        GCK_CHECK_ARG(n <= (SIZE_MAX >> 4) - total, "%s: %stensor %zu: %zu elements make the list too long", fn,
                      role, i, n);
        total += n;
    }
    *elems = total;
    return GCK_OK;
}

/* 1 when two byte ranges share a byte but do not start at the same address
 * with the same element size (the one overlap the kernels allow: in place). */
static int gck_tl_bad_overlap(const void *p, size_t pbytes, size_t pesz, const void *q, size_t qbytes, size_t qesz)
{
    const uintptr_t x = (uintptr_t)p, y = (uintptr_t)q;
    if (pbytes == 0 || qbytes == 0 || !(x < y + qbytes && y < x + pbytes))
        return 0;
    return !(x == y && pesz == qesz);
}

/* Checks a target list and its operand list x: both valid, the same counts
 * and lengths, no tensor of x partially overlapping its target. */
static gck_status gck_tl_check_pair(const char *fn, const char *role, const gck_tensor_list *a,
                                    const gck_tensor_list *x, size_t *elems)
{
    size_t xe;
    GCK_TRY(gck_tl_check(fn, role, a, 0, elems));
    GCK_TRY(gck_tl_check(fn, "x ", x, 1, &xe));
    if (a->count != x->count)
        return gck_fail(GCK_ERR_DIMENSION_MISMATCH, "%s: the %slist has %zu tensors, the x list %zu", fn, role,
                        a->count, x->count);
    for (size_t i = 0; i < a->count; i++) {
        const size_t n = a->lens[i];
        if (n != x->lens[i])
            return gck_fail(GCK_ERR_DIMENSION_MISMATCH, "%s: tensor %zu: the %starget has %zu elements, x has %zu",
                            fn, i, role, n, x->lens[i]);
        const size_t ea = gck_tl_esz(gck_tl_dtype(a, i)), ex = gck_tl_esz(gck_tl_dtype(x, i));
        GCK_CHECK_ARG(!gck_tl_bad_overlap(a->data[i], n * ea, ea, x->data[i], n * ex, ex),
                      "%s: tensor %zu: x overlaps its target without being the same buffer", fn, i);
    }
    return GCK_OK;
}

static gck_status gck_tl_check_p(const char *fn, double p)
{
    GCK_CHECK_ARG(p > 0.0, "%s: p = %g is not a norm order (> 0 or INFINITY)", fn, p);
    return GCK_OK;
}

/* ---- norms ----------------------------------------------------------------------- */

/* The total p-norm of t (checked; c prepared with GCK_TL_SCRATCH doubles
 * per tensor for general p, none otherwise), and the per-tensor norms into
 * per_tensor when it is not NULL. The only failure: GCK_ERR_NO_MEMORY for
 * the rare rescaled p = 2 total of a long list (nothing is written). */
static gck_status gck_tl_norm(const char *fn, const gck_tl_ctx *c, const gck_tensor_list *t, double p,
                              double *per_tensor, double *total)
{
    const size_t count = t->count;
    gck_tl_job j = {.t = c->t, .a = t, .p = p, .res = per_tensor};
    if (p == 1.0 || isinf(p)) {
        /* the norms are the sums of |x| / the largest |x|; so is the fold */
        j.kind = p == 1.0 ? GCK_TL_ASUM : GCK_TL_AMAX;
        *total = gck_tl_exec(&j, c);
        return GCK_OK;
    }
    if (p == 2.0) {
        /* per-tensor sums of squares (into per_tensor, or c's stack scratch
         * for a short list), folded into the total's sum on the way */
        void *heap = NULL;
        if (j.res == NULL && count <= GCK_TL_STACK_TENSORS)
            j.res = c->scratch;
        j.kind = GCK_TL_SUMSQ;
        const double s = gck_tl_exec(&j, c);
        if (gck_l2_sum_ok(s) && per_tensor == NULL) {
            *total = sqrt(s);
            return GCK_OK;
        }
        if (j.res == NULL) { /* rescaled total of a long list: the sums again, kept this time */
            if ((heap = gck_malloc(count * sizeof(double))) == NULL)
                return gck_fail_ctx(gck_fail_oom("list scratch", count * sizeof(double)), "%s", fn);
            j.res = heap;
            gck_tl_exec(&j, c);
        }
        for (size_t i = 0; i < count; i++) /* sums of squares -> norms, in place */
            j.res[i] = gck_tl_dtype(t, i) != GCK_DTYPE_F64 /* f32, bf16, f16 squares never leave f64's range */
                           ? sqrt(j.res[i])
                           : gck_l2norm_f64_from(c->t, t->data[i], t->lens[i], j.res[i]);
        *total = gck_l2_sum_ok(s) ? sqrt(s) : gck_l2_rescaled(j.res, sizeof(double), count);
        free(heap);
        return GCK_OK;
    }
    /* general p: the largest |x| of each tensor, then its power sum scaled by it */
    double *norm = per_tensor != NULL ? per_tensor : c->scratch;
    gck_pnorm_plan *plan = (gck_pnorm_plan *)(void *)(c->scratch + count); /* two doubles per tensor */
    double *sums = c->scratch + 3 * count;
    j.kind = GCK_TL_AMAX;
    j.res = norm;
    gck_tl_exec(&j, c);
    int any = 0;
    for (size_t i = 0; i < count; i++) {
        const int skip = isnan(norm[i]) || norm[i] == 0.0 || isinf(norm[i]);
        plan[i] = skip ? (gck_pnorm_plan){0.0, 0} : gck_pnorm_plan_for(norm[i], p);
        any |= !skip;
    }
    if (any) {
        j.kind = GCK_TL_POWSUM;
        j.plan = plan;
        j.res = sums;
        gck_tl_exec(&j, c);
        for (size_t i = 0; i < count; i++)
            if (plan[i].s != 0.0)
                norm[i] = gck_pnorm_root(plan[i], norm[i], sums[i], p);
    }
    /* m * pow(sum (n_i / m)^p, 1/p), m the largest norm (NaN if any is NaN) */
    double m = 0.0;
    int nan = 0;
    for (size_t i = 0; i < count; i++)
        gck_amax_fold(&m, &nan, norm[i]);
    if (nan || m == 0.0 || isinf(m)) {
        *total = nan ? NAN : m;
        return GCK_OK;
    }
    const gck_pow_fn pw = gck_pow_ref();
    double sp = 0.0;
    for (size_t i = 0; i < count; i++)
        sp = sp + pw(norm[i] / m, p);
    *total = m * pw(sp, 1.0 / p);
    return GCK_OK;
}

/* Scratch doubles per tensor gck_tl_norm needs for p. */
static size_t gck_tl_norm_scratch(double p)
{
    return p == 1.0 || p == 2.0 || isinf(p) ? 0 : GCK_TL_SCRATCH;
}

/* One pass of job j (kind, operands and res set) over list t: checks t,
 * runs j and stores its total (when total is not NULL). */
static gck_status gck_tl_pass(const char *fn, const gck_tensor_list *t, int half_ok, gck_tl_job *j, double *total)
{
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check(fn, "", t, half_ok, &elems));
    GCK_TRY(gck_tl_prepare(&c, fn, t, NULL, elems, 0));
    j->t = c.t;
    j->a = t;
    const double s = gck_tl_exec(j, &c);
    if (total != NULL)
        *total = s;
    gck_tl_release(&c);
    return GCK_OK;
}

gck_status gck_tensors_sumsq(const gck_tensor_list *t, double *per_tensor, double *total)
{
    gck_tl_job j = {.kind = GCK_TL_SUMSQ, .res = per_tensor};
    return gck_tl_pass("gck_tensors_sumsq", t, 1, &j, total);
}

gck_status gck_tensors_norm(const gck_tensor_list *t, double p, double *per_tensor, double *total)
{
    static const char fn[] = "gck_tensors_norm";
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check(fn, "", t, 1, &elems));
    GCK_TRY(gck_tl_check_p(fn, p));
    GCK_CHECK_ARG(total != NULL, "%s: total is NULL", fn);
    GCK_TRY(gck_tl_prepare(&c, fn, t, NULL, elems, gck_tl_norm_scratch(p)));
    const gck_status s = gck_tl_norm(fn, &c, t, p, per_tensor, total);
    gck_tl_release(&c);
    return s;
}

/* ---- clipping -------------------------------------------------------------------- */

static gck_status gck_tl_check_clip(const char *fn, double max_norm, double eps, unsigned flags)
{
    GCK_CHECK_ARG(max_norm >= 0.0, "%s: max_norm = %g (must be >= 0, not NaN)", fn, max_norm);
    GCK_CHECK_ARG(eps >= 0.0, "%s: eps = %g (must be >= 0, not NaN)", fn, eps);
    GCK_CHECK_ARG((flags & ~GCK_CLIP_ERROR_IF_NONFINITE) == 0, "%s: unknown flags 0x%x", fn,
                  flags & ~GCK_CLIP_ERROR_IF_NONFINITE);
    return GCK_OK;
}

/* The clipping step once the total is known (c prepared for t). */
static gck_status gck_tl_clip(const char *fn, const gck_tl_ctx *c, const gck_tensor_list *t, double total,
                              double max_norm, double eps, unsigned flags, gck_clip_info *info)
{
    const double coef = max_norm / (total + eps);
    const int clip = coef < 1.0 || isnan(coef); /* torch: clamp(coef, max=1) keeps a NaN */
    gck_clip_info out = {total, clip ? coef : 1.0, 0};
    if ((flags & GCK_CLIP_ERROR_IF_NONFINITE) && !isfinite(total)) {
        if (info != NULL)
            *info = out;
        return gck_fail(GCK_ERR_NONFINITE, "%s: the total norm is %s; no tensor was changed", fn,
                        isnan(total) ? "NaN" : "infinite");
    }
    if (clip) {
        const gck_tl_job j = {.t = c->t, .kind = GCK_TL_SCALE, .a = t, .w = coef};
        gck_tl_exec(&j, c);
        out.clipped = 1;
    }
    if (info != NULL)
        *info = out;
    return GCK_OK;
}

gck_status gck_tensors_clip_by_norm(const gck_tensor_list *t, double max_norm, double p, double eps, unsigned flags,
                                    gck_clip_info *info)
{
    static const char fn[] = "gck_tensors_clip_by_norm";
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check(fn, "", t, 1, &elems));
    GCK_TRY(gck_tl_check_p(fn, p));
    GCK_TRY(gck_tl_check_clip(fn, max_norm, eps, flags));
    GCK_TRY(gck_tl_prepare(&c, fn, t, NULL, elems, gck_tl_norm_scratch(p)));
    double total;
    gck_status s = gck_tl_norm(fn, &c, t, p, NULL, &total);
    if (s == GCK_OK)
        s = gck_tl_clip(fn, &c, t, total, max_norm, eps, flags, info);
    gck_tl_release(&c);
    return s;
}

gck_status gck_tensors_clip_with_norm(const gck_tensor_list *t, double max_norm, double total_norm, double eps,
                                      unsigned flags, gck_clip_info *info)
{
    static const char fn[] = "gck_tensors_clip_with_norm";
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check(fn, "", t, 1, &elems));
    GCK_TRY(gck_tl_check_clip(fn, max_norm, eps, flags));
    GCK_CHECK_ARG(!(total_norm < 0.0), "%s: total_norm = %g is negative", fn, total_norm);
    GCK_TRY(gck_tl_prepare(&c, fn, t, NULL, elems, 0));
    const gck_status s = gck_tl_clip(fn, &c, t, total_norm, max_norm, eps, flags, info);
    gck_tl_release(&c);
    return s;
}

/* ---- elementwise ------------------------------------------------------------------- */

/* One elementwise pass of kind over the pair (a, x) with weight w. */
static gck_status gck_tl_pair(const char *fn, const char *role, gck_tl_kind kind, const gck_tensor_list *a,
                              double w, const gck_tensor_list *x)
{
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check_pair(fn, role, a, x, &elems));
    GCK_TRY(gck_tl_prepare(&c, fn, a, x, elems, 0));
    const gck_tl_job j = {.t = c.t, .kind = kind, .a = a, .x = x, .w = w};
    gck_tl_exec(&j, &c);
    gck_tl_release(&c);
    return GCK_OK;
}

gck_status gck_tensors_add(const gck_tensor_list *acc, const gck_tensor_list *x)
{
    return gck_tl_pair("gck_tensors_add", "acc ", GCK_TL_ADD, acc, 0.0, x);
}

gck_status gck_tensors_axpy(const gck_tensor_list *acc, double w, const gck_tensor_list *x)
{
    return gck_tl_pair("gck_tensors_axpy", "acc ", GCK_TL_AXPY, acc, w, x);
}

gck_status gck_tensors_axpy_init(const gck_tensor_list *dst, double w, const gck_tensor_list *x)
{
    return gck_tl_pair("gck_tensors_axpy_init", "dst ", GCK_TL_AXPY_INIT, dst, w, x);
}

gck_status gck_tensors_scale(const gck_tensor_list *t, double s)
{
    gck_tl_job j = {.kind = GCK_TL_SCALE, .w = s};
    return gck_tl_pass("gck_tensors_scale", t, 1, &j, NULL);
}

gck_status gck_tensors_div_sumsq(const gck_tensor_list *t, double d, double *per_tensor, double *total)
{
    gck_tl_job j = {.kind = GCK_TL_DIV_SUMSQ, .res = per_tensor};
    j.div_op[0] = gck_div_sumsq_op(0, d, &j.div_s[0]);
    j.div_op[1] = gck_div_sumsq_op(1, d, &j.div_s[1]);
    return gck_tl_pass("gck_tensors_div_sumsq", t, 0, &j, total);
}

gck_status gck_tensors_axpy_div_sumsq(const gck_tensor_list *acc, double w, const gck_tensor_list *x, double d,
                                      double *per_tensor, double *total)
{
    static const char fn[] = "gck_tensors_axpy_div_sumsq";
    size_t elems;
    gck_tl_ctx c;
    GCK_TRY(gck_tl_check_pair(fn, "acc ", acc, x, &elems));
    GCK_TRY(gck_tl_prepare(&c, fn, acc, x, elems, 0));
    gck_tl_job j = {.t = c.t, .kind = GCK_TL_AXPY_DIV_SUMSQ, .a = acc, .x = x, .w = w, .res = per_tensor};
    j.div_op[0] = gck_div_sumsq_op(0, d, &j.div_s[0]);
    j.div_op[1] = gck_div_sumsq_op(1, d, &j.div_s[1]);
    const double s = gck_tl_exec(&j, &c);
    if (total != NULL)
        *total = s;
    gck_tl_release(&c);
    return GCK_OK;
}
