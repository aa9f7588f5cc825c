/* core/checkpointer.c - per-layer streaming accumulation, flush into checkpoints or the caller's buffers, bounded history.
 *
 * Layers live in an array sorted bytewise by id (binary search; insertion
 * moves pointers), so flush, replay, diff and the pending listing walk them
 * in order without sorting. Each layer owns one buffer of its length, reused
 * across flushes. One accumulate path serves the single and the list calls:
 * every entry is resolved and checked first (the only step that can fail,
 * undone on failure), then the kernels run, then the bookkeeping. A flush
 * writes the finished values straight into their destination, the new
 * checkpoint or the caller's buffers (one fused pass: divide or copy, and sum
 * the squares), scales them in place only when clipping triggers, then
 * checksums what it records: the accumulation buffers are never modified by
 * a flush, so a failing flush changes nothing. BF16 storage accumulates in
 * f32 and finishes through staging copies (gck_flush_bf16). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradckpt/checkpointer.h>
#include <gradckpt/kernels.h>
#include <gradckpt/reduction.h>

#include "alloc_internal.h"
#include "checkpoint_internal.h"
#include "threads_internal.h"
#include "tree_internal.h"

#ifdef _OPENMP
#include <omp.h>
#define GCK_OMP(directive) _Pragma(directive)
#else
#define GCK_OMP(directive)
#endif

typedef struct gck_layer {
    char *id;
    void *buf;       /* accumulation buffer, cap elements of the storage dtype */
    size_t cap;
    size_t n;        /* length fixed by the window's first tensor */
    size_t count;    /* tensors accumulated in this window (0: not pending) */
    double wsum;     /* sum of the weights used in this window */
    uint64_t step;   /* step of the last tensor */
    /* Scratch of one gck_accumulate* / gck_flush_into call, meaningful only
     * while mark equals the checkpointer's serial (set by that call). */
    uint64_t mark;
    size_t occ;      /* entries of this layer seen so far in the call */
    size_t call_n;   /* the length the call's first entry gives (count == 0) */
    size_t slot;     /* gck_flush_into: index of this layer's buffer in dst */
    int created;     /* created by the running accumulate call (dropped if it fails) */
    gck_tree tree;   /* GCK_REDUCE_TREE: the subtrees above buf (tree.c) */
    /* What the running flush finishes: the window's sum, tensor count and
     * weight sum (set when the flush collects the pending layers). */
    void *fin_src;
    size_t fin_count;
    double fin_wsum;
    uint64_t fin_step;
} gck_layer;

struct gck_checkpointer {
    gck_config cfg;       /* weights points at our copy */
    double *weights;
    uint64_t global_step;
    uint64_t next_id;
    uint64_t flush_count;
    uint64_t serial;      /* numbers the calls that use the layers' scratch */
    gck_layer **layers;   /* sorted by id */
    size_t n_layers, cap_layers;
    size_t pending_tensors;
    size_t pending_layers;
    gck_checkpoint **history; /* ring: oldest at hist_head */
    size_t hist_head, hist_len;
    void *scratch;        /* per-call arrays, kept so a steady loop does not allocate */
    size_t scratch_bytes;
    void *spare;          /* gck_flush_into's staging arena (error_if_nonfinite), kept for reuse */
    size_t spare_bytes;
    void *stage;          /* BF16 storage: a flush's f32 and bf16 copies of the values, kept for reuse */
    size_t stage_bytes;
    gck_layer **hint;     /* list calls: the layer entry i named last time (or NULL) */
    size_t hint_cap;
    int clip_expected;    /* clipping fired in the last flush window (or none yet) */
    gck_checkpoint *staged; /* gck_flush_stage's checkpoint, until gck_flush_finished */
    size_t llc_bytes;     /* the last-level cache's share (gck_llc_bytes) */
    int stream_levels;    /* tree order: the last window's buffers outgrew llc_bytes (tree.c streams levels) */
};

/* The share of the last-level cache one process can count on: what sysconf says, at most
 * 32 MiB (one core complex's L3 on a big server; sysconf may report all of them). */
static size_t gck_llc_bytes(void)
{
    const size_t cap = (size_t)32 << 20;
#ifdef _SC_LEVEL3_CACHE_SIZE
    const long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (l3 > 0 && (size_t)l3 < cap)
        return (size_t)l3;
#endif
    return cap;
}

void gck_config_init(gck_config *cfg)
{
    if (cfg == NULL)
        return;
    *cfg = (gck_config){
        .max_checkpoints = 10,
        .compression_threshold = 1000,
        .accumulation_mode = GCK_ACCUM_SUM,
        .weights = NULL,
        .n_weights = 0,
        .clip_enabled = 0,
        .clip_norm = 1.0,
        .error_if_nonfinite = 0,
        .dtype = GCK_DTYPE_F64,
        .checksum = GCK_CHECKSUM_FNV1A64,
        .reduction = GCK_REDUCE_SEQUENTIAL,
    };
}

static gck_status gck_config_check(const gck_config *c)
{
    GCK_CHECK_ARG(c->max_checkpoints > 0, "invalid config: max_checkpoints must be > 0");
    GCK_CHECK_ARG((unsigned)c->accumulation_mode <= GCK_ACCUM_WEIGHTED_MEAN,
                  "invalid config: unknown accumulation_mode %d", (int)c->accumulation_mode);
    GCK_CHECK_ARG(!c->clip_enabled || c->clip_norm > 0.0,
                  "invalid config: clip_norm must be > 0 when clipping is enabled, got %g", c->clip_norm);
    GCK_CHECK_ARG(c->weights != NULL || c->n_weights == 0, "invalid config: weights is NULL but n_weights is %zu",
                  c->n_weights);
    GCK_CHECK_ARG((unsigned)c->checksum <= GCK_CHECKSUM_NONE, "invalid config: unknown checksum %d",
                  (int)c->checksum);
    GCK_CHECK_ARG((unsigned)c->reduction <= GCK_REDUCE_TREE, "invalid config: unknown reduction %d",
                  (int)c->reduction);
    GCK_CHECK_ARG((unsigned)c->dtype < GCK_DTYPE_COUNT, "invalid config: unknown dtype %d", (int)c->dtype);
    if (c->dtype != GCK_DTYPE_F64 && c->dtype != GCK_DTYPE_F32 && c->dtype != GCK_DTYPE_BF16)
        return gck_fail(GCK_ERR_UNSUPPORTED, "the checkpointer stores F64, F32 or BF16, not %s",
                        gck_dtype_name(c->dtype));
    return GCK_OK;
}

gck_status gck_checkpointer_create(const gck_config *cfg, gck_checkpointer **out)
{
    GCK_CHECK_ARG(out != NULL, "gck_checkpointer_create: out is NULL");
    gck_config c;
    if (cfg != NULL)
        c = *cfg;
    else
        gck_config_init(&c);
    GCK_TRY(gck_config_check(&c));
    gck_checkpointer *cp = gck_calloc(1, sizeof *cp);
    gck_checkpoint **hist = gck_calloc(c.max_checkpoints, sizeof *hist);
    double *w = c.n_weights ? gck_malloc(c.n_weights * sizeof *w) : NULL;
    if (cp == NULL || hist == NULL || (c.n_weights && w == NULL) ||
        c.max_checkpoints > (size_t)-1 / sizeof *hist || c.n_weights > (size_t)-1 / sizeof *w) {
        free(cp), free(hist), free(w);
        size_t hb, wb;
        const int fits =
            gck_mul_size(c.max_checkpoints, sizeof *hist, &hb) && gck_mul_size(c.n_weights, sizeof *w, &wb);
        return gck_fail_ctx(gck_fail_oom("checkpointer", fits ? sizeof *cp + hb + wb : SIZE_MAX),
                            "gck_checkpointer_create");
    }
    if (c.n_weights)
        memcpy(w, c.weights, c.n_weights * sizeof *w);
    c.weights = w;
    cp->cfg = c;
    cp->weights = w;
    cp->history = hist;
    cp->clip_expected = 1;
    cp->llc_bytes = gck_llc_bytes();
    *out = cp;
    return GCK_OK;
}

void gck_checkpointer_destroy(gck_checkpointer *cp)
{
    if (cp == NULL)
        return;
    for (size_t i = 0; i < cp->n_layers; i++) {
        free(cp->layers[i]->buf);
        free(cp->layers[i]->id);
        gck_tree_free(&cp->layers[i]->tree);
        free(cp->layers[i]);
    }
    free(cp->layers);
    gck_flush_unstage(cp);
    for (size_t i = 0; i < cp->hist_len; i++)
        gck_checkpoint_release(cp->history[(cp->hist_head + i) % cp->cfg.max_checkpoints]);
    free(cp->history);
    free(cp->weights);
    free(cp->scratch);
    free(cp->spare);
    free(cp->stage);
    free(cp->hint);
    free(cp);
}

/* At least `bytes` of per-call scratch, or NULL (the checkpointer is then
 * unchanged but for the released old scratch, which held nothing). */
static void *gck_scratch(gck_checkpointer *cp, size_t bytes)
{
    if (bytes <= cp->scratch_bytes)
        return cp->scratch;
    free(cp->scratch);
    cp->scratch = gck_malloc(bytes);
    cp->scratch_bytes = cp->scratch != NULL ? bytes : 0;
    return cp->scratch;
}

/* Binary search: the index of id, or (found = 0) where it would be inserted. */
static size_t gck_layer_search(const gck_checkpointer *cp, const char *id, int *found)
{
    size_t lo = 0, hi = cp->n_layers;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int cmp = strcmp(cp->layers[mid]->id, id);
        if (cmp == 0) {
            *found = 1;
            return mid;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = 0;
    return lo;
}

/* Trainers pass the same ids in the same order every call, so entry i of a
 * list call is first compared with the layer entry i named last time: one
 * comparison instead of a binary search. */
static gck_status gck_hints_grow(gck_checkpointer *cp, size_t count, const char *fn)
{
    size_t bytes;
    gck_layer **h = gck_mul_size(count, sizeof *h, &bytes) ? gck_realloc(cp->hint, bytes) : NULL;
    if (h == NULL) /* count entries exist: the product cannot wrap here */
        return gck_fail_ctx(gck_fail_oom("layer hints", count * sizeof *h), "%s", fn);
    memset(h + cp->hint_cap, 0, (count - cp->hint_cap) * sizeof *h);
    cp->hint = h;
    cp->hint_cap = count;
    return GCK_OK;
}

/* The check stays inline in the list calls; growing (rare) is out of line. */
static gck_status gck_hints_reserve(gck_checkpointer *cp, size_t count, const char *fn)
{
    return count <= cp->hint_cap ? GCK_OK : gck_hints_grow(cp, count, fn);
}

/* The layer named id, or NULL; through hint slot `slot` (or none: SIZE_MAX),
 * which then remembers the answer. *at is where id is or would be inserted
 * (valid only when the answer came from the search: NULL result). */
static gck_layer *gck_layer_lookup(gck_checkpointer *cp, const char *id, size_t slot, size_t *at)
{
    gck_layer *h = slot != SIZE_MAX ? cp->hint[slot] : NULL;
    if (h != NULL && strcmp(h->id, id) == 0)
        return h;
    int found;
    *at = gck_layer_search(cp, id, &found);
    h = found ? cp->layers[*at] : NULL;
    if (slot != SIZE_MAX)
        cp->hint[slot] = h;
    return h;
}

/* The dtype of the accumulation buffers (and of every value a flush
 * finishes before storing): the storage dtype, f32 for BF16 storage. */
static gck_dtype gck_acc_dtype(const gck_checkpointer *cp)
{
    return cp->cfg.dtype == GCK_DTYPE_BF16 ? GCK_DTYPE_F32 : cp->cfg.dtype;
}

static size_t gck_acc_size(const gck_checkpointer *cp)
{
    return gck_dtype_size(gck_acc_dtype(cp));
}

/* ---- OpenMP over layers ------------------------------------------------------ */

/* 1 when spreading small layers over threads can help. */
static int gck_threads_useful(void)
{
#ifdef _OPENMP
    return gck_omp_threads() > 1 && !omp_in_parallel();
#else
    return 0;
#endif
}

/* Small items per dynamic work unit: about 8 units per thread, at most 16
 * items (2000 tiny layers: few atomic grabs; 16 layers: one each). */
static int gck_small_chunk(size_t nsmall)
{
#ifdef _OPENMP
    const size_t c = nsmall / (8 * (size_t)gck_omp_threads());
#else
    const size_t c = nsmall / 8;
#endif
    return c < 1 ? 1 : c > 16 ? 16 : (int)c;
}

/* Runs BODY for i in [0, nl): items of LEN >= GCK_PARALLEL_MIN elements one
 * at a time (the kernels split them over threads in fixed blocks), smaller
 * ones spread over threads. Each item's result is the same whichever thread
 * computes it, so nothing depends on the thread count. For reductions,
 * whose per-item result is the kernel's over the whole item. */
#define GCK_FOR_EACH_LAYER(nl, LEN, BODY)                                            \
    do {                                                                             \
        size_t nsmall_ = 0;                                                          \
        for (size_t i = 0; i < (nl); i++) {                                          \
            if ((LEN) >= GCK_PARALLEL_MIN) {                                         \
                BODY;                                                                \
            } else {                                                                 \
                nsmall_++;                                                           \
            }                                                                        \
        }                                                                            \
        if (nsmall_ > 1 && gck_threads_useful()) {                                   \
            long long i_;                                                            \
            const int chunk_ = gck_small_chunk(nsmall_);                             \
            (void)chunk_; /* unused without OpenMP */                                \
            GCK_OMP("omp parallel for schedule(dynamic, chunk_)")                    \
            for (i_ = 0; i_ < (long long)(nl); i_++) {                               \
                const size_t i = (size_t)i_;                                         \
                if ((LEN) < GCK_PARALLEL_MIN) {                                      \
                    BODY;                                                            \
                }                                                                    \
            }                                                                        \
        } else if (nsmall_ > 0) {                                                    \
            for (size_t i = 0; i < (nl); i++) {                                      \
                if ((LEN) < GCK_PARALLEL_MIN) {                                      \
                    BODY;                                                            \
                }                                                                    \
            }                                                                        \
        }                                                                            \
    } while (0)

/* Element boundaries of the per-thread ranges below are multiples of this
 * (64 bytes of f32), so two threads do not write one cache line. */
#define GCK_PIECE_ALIGN 16

/* Runs OP for pieces [lo, lo + len) of every item i (LEN elements, 0 for
 * items not taking part) such that together they cover every element once.
 * With threads, the items' elements, taken one after the other, are cut
 * into one contiguous range per thread of equal size, as a hand-written
 * loop over one buffer would be: one fork per pass however many items,
 * balanced by elements. For elementwise kernels only, which give the same
 * bits however an array is cut (and run serially inside the region). */
/* Where range t of nt over total elements starts. */
static size_t gck_piece_bound(size_t total, size_t t, size_t nt)
{
    if (t >= nt)
        return total;
    const size_t b = total / nt * t + total % nt * t / nt;
    return b - b % GCK_PIECE_ALIGN;
}

static size_t gck_thread_num(void)
{
#ifdef _OPENMP
    return (size_t)omp_get_thread_num();
#else
    return 0;
#endif
}

static size_t gck_num_threads(void)
{
#ifdef _OPENMP
    return (size_t)omp_get_num_threads();
#else
    return 1;
#endif
}

/* OP for the pieces of range t of nt of the items' elements taken one after
 * the other (the whole of every item when nt is 1). */
#define GCK_PIECES_OF_RANGE(nl, LEN, OP, total, t, nt)                                      \
    do {                                                                                    \
        const size_t b_ = gck_piece_bound(total, t, nt), e_ = gck_piece_bound(total, (t) + 1, nt); \
        size_t base_ = 0;                                                                   \
        for (size_t i = 0; i < (nl) && base_ < e_; i++) {                                   \
            const size_t n_ = (LEN);                                                        \
            const size_t s_ = base_ > b_ ? base_ : b_;                                      \
            const size_t f_ = base_ + n_ < e_ ? base_ + n_ : e_;                            \
            if (s_ < f_) {                                                                  \
                const size_t lo = s_ - base_, len = f_ - s_;                                \
                OP;                                                                         \
            }                                                                               \
            base_ += n_;                                                                    \
        }                                                                                   \
    } while (0)

#define GCK_FOR_EACH_PIECE(nl, LEN, OP)                                                     \
    do {                                                                                    \
        size_t total_ = 0;                                                                  \
        for (size_t i = 0; i < (nl); i++)                                                   \
            total_ += (LEN);                                                                \
        if (total_ >= GCK_PARALLEL_MIN && gck_threads_useful()) {                           \
            GCK_OMP("omp parallel")                                                         \
            GCK_PIECES_OF_RANGE(nl, LEN, OP, total_, gck_thread_num(), gck_num_threads());  \
        } else {                                                                            \
            GCK_PIECES_OF_RANGE(nl, LEN, OP, total_, 0, 1);                                 \
        }                                                                                   \
    } while (0)

/* ---- accumulate ---------------------------------------------------------------- */

/* Checks one entry's arguments (nothing changes). index < 0: a single call. */
static gck_status gck_check_entry(const char *id, const void *values, size_t n, long long index)
{
    const size_t idlen = id != NULL ? strnlen(id, GCK_LAYER_ID_MAX + 1) : 0;
    if (idlen > 0 && idlen <= GCK_LAYER_ID_MAX && (values != NULL || n == 0))
        return GCK_OK;
    const char *fn = index < 0 ? "gck_accumulate" : "gck_accumulate_many";
    char at[40] = "";
    if (index >= 0)
        snprintf(at, sizeof at, " entry %lld:", index);
    if (id == NULL)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s:%s NULL layer id", fn, at);
    if (idlen == 0)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s:%s empty layer id", fn, at);
    if (idlen > GCK_LAYER_ID_MAX)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s:%s layer id longer than %d bytes", fn, at, GCK_LAYER_ID_MAX);
    return gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s:%s layer '%.200s': values is NULL with n = %zu", fn, at, id, n);
}

/* The failure of making room for n values of layer id (the storage size
 * looked up again here, so the hot path need not keep it across calls). */
static gck_status gck_layer_oom(const gck_checkpointer *cp, const char *id, size_t n)
{
    size_t bytes;
    if (!gck_mul_size(n, gck_acc_size(cp), &bytes))
        return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': %zu values do not fit in memory", id, n);
    return gck_fail_ctx(gck_fail_oom("accumulation buffer", bytes), "layer '%.200s'", id);
}

/* Finds or creates the layer of one entry of the running call (serial),
 * checks the length against the window's (or the call's first entry of the
 * layer) and makes the buffer ready for n values. A created layer is flagged
 * so that a failing call can drop it again. */
static gck_status gck_layer_resolve(gck_checkpointer *cp, const char *id, size_t n, size_t slot, gck_layer **out)
{
    size_t at = 0;
    gck_layer *l = gck_layer_lookup(cp, id, slot, &at);
    const size_t esz = gck_acc_size(cp);
    size_t bytes;
    if (l != NULL) {
        if (l->mark != cp->serial) {
            l->mark = cp->serial;
            l->occ = 0;
            l->call_n = n;
        }
        const size_t want = l->count > 0 ? l->n : l->call_n;
        if (n != want)
            return gck_fail(GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer '%.200s': expected %zu, got %zu",
                            id, want, n);
        if (l->count == 0 && l->occ == 0 && n > l->cap) {
            void *nb = gck_mul_size(n, esz, &bytes) ? gck_aligned_alloc(bytes) : NULL;
            if (nb == NULL)
                return gck_layer_oom(cp, id, n);
            free(l->buf); /* idle: it holds nothing */
            l->buf = nb;
            l->cap = n;
        }
        *out = l;
        return GCK_OK;
    }
    if (!gck_mul_size(n, esz, &bytes))
        return gck_layer_oom(cp, id, n);
    if (cp->n_layers == cp->cap_layers) {
        const size_t ncap = cp->cap_layers ? 2 * cp->cap_layers : 16;
        gck_layer **nl = gck_realloc(cp->layers, ncap * sizeof *nl);
        if (nl == NULL)
            return gck_fail_ctx(gck_fail_oom("layer map", ncap * sizeof *nl), "layer '%.200s'", id);
        cp->layers = nl;
        cp->cap_layers = ncap;
    }
    l = gck_calloc(1, sizeof *l);
    char *cid = gck_strdup(id);
    void *buf = gck_aligned_alloc(bytes);
    if (l == NULL || cid == NULL || buf == NULL) {
        free(l), free(cid), free(buf);
        return gck_layer_oom(cp, id, n);
    }
    *l = (gck_layer){.id = cid, .buf = buf, .cap = n, .mark = cp->serial, .call_n = n, .created = 1};
    memmove(&cp->layers[at + 1], &cp->layers[at], (cp->n_layers - at) * sizeof *cp->layers);
    cp->layers[at] = l;
    cp->n_layers++;
    if (slot != SIZE_MAX)
        cp->hint[slot] = l;
    *out = l;
    return GCK_OK;
}

/* Undoes a failing call's layer creations (they hold nothing yet); the
 * hints may name them, so they are forgotten. */
static void gck_drop_created(gck_checkpointer *cp)
{
    if (cp->hint_cap > 0)
        memset(cp->hint, 0, cp->hint_cap * sizeof *cp->hint);
    size_t k = 0;
    for (size_t i = 0; i < cp->n_layers; i++) {
        gck_layer *l = cp->layers[i];
        if (l->created) {
            free(l->buf);
            free(l->id);
            gck_tree_free(&l->tree);
            free(l);
        } else {
            cp->layers[k++] = l;
        }
    }
    cp->n_layers = k;
}

/* The weight of the j-th tensor of a layer in its window. */
static double gck_weight(const gck_checkpointer *cp, size_t j)
{
    if (cp->cfg.accumulation_mode != GCK_ACCUM_WEIGHTED_MEAN)
        return 1.0;
    return j < cp->cfg.n_weights ? cp->weights[j] : 1.0;
}

/* Adds elements [lo, lo + n) of the j-th tensor of its window to l's
 * buffer: r = r + (t * w), or r = r + t; the window's first tensor gives
 * 0 + (t * w) (t * 1 = t exactly) without reading the buffer. in_dtype: the
 * type of values (the whole tensor). */
static void gck_accumulate_piece(const gck_checkpointer *cp, gck_layer *l, const void *values, size_t lo, size_t n,
                                 gck_dtype in_dtype, size_t j)
{
    const int weighted = cp->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN;
    const double w = gck_weight(cp, j);
    const int first = j == 0;
    if (cp->cfg.reduction == GCK_REDUCE_TREE) {
        gck_tree_add_piece(&l->tree, l->buf, gck_acc_dtype(cp), j, values, in_dtype, lo, n, weighted, w,
                           cp->stream_levels);
        return;
    }
    values = (const char *)values + lo * gck_dtype_size(in_dtype);
/* the window's first tensor, a weighted one, a plain one: kernels gck_*_K */
#define GCK_ACC_INTO(r, w, K)                                                                   \
    (first ? gck_axpy_init_##K(r, w, values, n) : weighted ? gck_axpy_##K(r, w, values, n)      \
                                                           : gck_add_##K(r, values, n))
    if (cp->cfg.dtype == GCK_DTYPE_F64) {
        double *r = (double *)l->buf + lo;
        switch (in_dtype) {
        case GCK_DTYPE_F64: GCK_ACC_INTO(r, w, f64); break;
        case GCK_DTYPE_F32: GCK_ACC_INTO(r, w, f32_to_f64); break;
        case GCK_DTYPE_BF16: GCK_ACC_INTO(r, w, bf16_to_f64); break;
        default: GCK_ACC_INTO(r, w, f16_to_f64); break; /* GCK_DTYPE_F16 */
        }
    } else {
        float *r = (float *)l->buf + lo;
        const float wf = (float)w;
        switch (in_dtype) {
        case GCK_DTYPE_F32: GCK_ACC_INTO(r, wf, f32); break;
        case GCK_DTYPE_F64: GCK_ACC_INTO(r, wf, f64_to_f32); break;
        case GCK_DTYPE_BF16: GCK_ACC_INTO(r, wf, bf16_to_f32); break;
        default: GCK_ACC_INTO(r, wf, f16_to_f32); break; /* GCK_DTYPE_F16 */
        }
    }
#undef GCK_ACC_INTO
}

/* Entries the single call keeps on the stack (no scratch). */
#define GCK_FEW_ENTRIES 8

/* count tensors as count gck_accumulate calls would add them, in order.
 * index_base < 0: the single call (its messages). Phase 1 checks and
 * resolves every entry (the only phase that can fail, undone on failure);
 * phase 2 runs the kernels, layers in parallel, an entry whose layer
 * already appeared earlier in the list in a later round; phase 3 updates
 * the bookkeeping in list order. */
static gck_status gck_accumulate_list(gck_checkpointer *cp, const char *const *ids, const void *const *values,
                                      const size_t *lens, size_t count, uint64_t step, gck_dtype in_dtype,
                                      int single)
{
    if (single) {
        GCK_CHECK_ARG(cp != NULL, "gck_accumulate: NULL checkpointer");
        GCK_TRY(gck_check_entry(ids[0], values[0], lens[0], -1));
    } else {
        GCK_CHECK_ARG(cp != NULL, "gck_accumulate_many: NULL checkpointer");
        if (count == 0)
            return GCK_OK;
        GCK_CHECK_ARG(ids != NULL && values != NULL && lens != NULL,
                      "gck_accumulate_many: %s is NULL with count = %zu",
                      ids == NULL ? "layer_ids" : values == NULL ? "values" : "lens", count);
        for (size_t i = 0; i < count; i++)
            GCK_TRY(gck_check_entry(ids[i], values[i], lens[i], (long long)i));
    }
    gck_flush_unstage(cp);
    if (!single)
        GCK_TRY(gck_hints_reserve(cp, count, "gck_accumulate_many"));
    gck_layer *few[GCK_FEW_ENTRIES];
    size_t few_round[GCK_FEW_ENTRIES];
    gck_layer **ent = few;
    size_t *round = few_round;
    if (count > GCK_FEW_ENTRIES) {
        size_t bytes;
        char *mem = gck_mul_size(count, sizeof *ent + sizeof *round, &bytes) ? gck_scratch(cp, bytes) : NULL;
        if (mem == NULL) /* count entries exist: the product cannot wrap here */
            return gck_fail_ctx(gck_fail_oom("entry scratch", count * (sizeof *ent + sizeof *round)),
                                "gck_accumulate_many");
        ent = (gck_layer **)(void *)mem;
        round = (size_t *)(void *)(mem + count * sizeof *ent);
    }

    /* 1. resolve: find or create each layer, check lengths */
    cp->serial++;
    size_t rounds = 1;
    for (size_t i = 0; i < count; i++) {
        const gck_status st = gck_layer_resolve(cp, ids[i], lens[i], single ? SIZE_MAX : i, &ent[i]);
        if (st != GCK_OK) {
            gck_drop_created(cp);
            return st;
        }
        round[i] = ent[i]->occ++;
        rounds = round[i] + 1 > rounds ? round[i] + 1 : rounds;
    }
    for (size_t i = 0; cp->cfg.reduction == GCK_REDUCE_TREE && i < count; i++) {
        const gck_status st = gck_tree_reserve(&ent[i]->tree, gck_tree_levels_for(ent[i]->count + round[i]),
                                               lens[i], gck_acc_size(cp), ids[i]);
        if (st != GCK_OK) {
            gck_drop_created(cp);
            return st;
        }
    }

    /* 2. From here on nothing can fail. The kernels: the tensor of round r
     * is its layer's (count + r)-th of the window. */
    for (size_t r = 0; r < rounds; r++)
        GCK_FOR_EACH_PIECE(count, round[i] == r ? lens[i] : 0,
                           gck_accumulate_piece(cp, ent[i], values[i], lo, len, in_dtype, ent[i]->count + r));

    /* 3. bookkeeping, in list order as separate calls would do it */
    const int weighted = cp->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN;
    for (size_t i = 0; i < count; i++) {
        gck_layer *l = ent[i];
        if (l->count == 0) {
            l->n = lens[i];
            l->wsum = 0.0;
            cp->pending_layers++;
        }
        if (weighted && cp->cfg.reduction == GCK_REDUCE_TREE)
            gck_tree_add_weight(&l->tree, l->count, gck_weight(cp, l->count));
        else if (weighted)
            l->wsum = l->wsum + gck_weight(cp, l->count);
        l->count++;
        l->step = step;
        l->created = 0;
    }
    cp->pending_tensors += count;
    cp->global_step += count;
    return GCK_OK;
}

gck_status gck_accumulate_f64(gck_checkpointer *cp, const char *layer_id, const double *values, size_t n,
                              uint64_t step)
{
    const void *v = values;
    return gck_accumulate_list(cp, &layer_id, &v, &n, 1, step, GCK_DTYPE_F64, 1);
}

gck_status gck_accumulate_f32(gck_checkpointer *cp, const char *layer_id, const float *values, size_t n,
                              uint64_t step)
{
    const void *v = values;
    return gck_accumulate_list(cp, &layer_id, &v, &n, 1, step, GCK_DTYPE_F32, 1);
}

gck_status gck_accumulate_many_f64(gck_checkpointer *cp, const char *const *layer_ids, const double *const *values,
                                   const size_t *lens, size_t count, uint64_t step)
{
    return gck_accumulate_list(cp, layer_ids, (const void *const *)values, lens, count, step, GCK_DTYPE_F64, 0);
}

gck_status gck_accumulate_many_f32(gck_checkpointer *cp, const char *const *layer_ids, const float *const *values,
                                   const size_t *lens, size_t count, uint64_t step)
{
    return gck_accumulate_list(cp, layer_ids, (const void *const *)values, lens, count, step, GCK_DTYPE_F32, 0);
}

gck_status gck_accumulate_bf16(gck_checkpointer *cp, const char *layer_id, const uint16_t *values, size_t n,
                               uint64_t step)
{
    const void *v = values;
    return gck_accumulate_list(cp, &layer_id, &v, &n, 1, step, GCK_DTYPE_BF16, 1);
}

gck_status gck_accumulate_f16(gck_checkpointer *cp, const char *layer_id, const uint16_t *values, size_t n,
                              uint64_t step)
{
    const void *v = values;
    return gck_accumulate_list(cp, &layer_id, &v, &n, 1, step, GCK_DTYPE_F16, 1);
}

gck_status gck_accumulate_many_bf16(gck_checkpointer *cp, const char *const *layer_ids,
                                    const uint16_t *const *values, const size_t *lens, size_t count, uint64_t step)
{
    return gck_accumulate_list(cp, layer_ids, (const void *const *)values, lens, count, step, GCK_DTYPE_BF16, 0);
}

gck_status gck_accumulate_many_f16(gck_checkpointer *cp, const char *const *layer_ids,
                                   const uint16_t *const *values, const size_t *lens, size_t count, uint64_t step)
{
    return gck_accumulate_list(cp, layer_ids, (const void *const *)values, lens, count, step, GCK_DTYPE_F16, 0);
}

uint64_t gck_global_step(const gck_checkpointer *cp)
{
    return cp ? cp->global_step : 0;
}

uint64_t gck_flush_count(const gck_checkpointer *cp)
{
    return cp ? cp->flush_count : 0;
}

/* ---- flush ------------------------------------------------------------------ */

/* What finishing a layer does: dst = src / d when divide, else dst = src * 1
 * (a copy; x * 1 is exact). */
typedef struct gck_finish {
    const void *src;
    double d;
    int divide;
} gck_finish;

static gck_finish gck_finish_of(const gck_checkpointer *cp, const gck_layer *l)
{
    const gck_accum_mode mode = cp->cfg.accumulation_mode;
    const double d = mode == GCK_ACCUM_MEAN ? (double)l->fin_count : l->fin_wsum;
    return (gck_finish){.src = l->fin_src, .d = d,
                        .divide = mode == GCK_ACCUM_MEAN || (mode == GCK_ACCUM_WEIGHTED_MEAN && d != 0.0)};
}

/* x / d is x * (1 / d) bit for bit when d is a power of two whose
 * reciprocal is a normal number: both are the correctly rounded x * 2^-k.
 * The multiply is cheaper than a SIMD division, and mean over 1, 2, 4, 8 ...
 * micro-batches is the common case. */
static int gck_pow2_recip(double d, int lim, double *r)
{
    int e;
    const double m = frexp(d, &e);
    if ((m != 0.5 && m != -0.5) || e < -lim || e > lim)
        return 0;
    *r = 1.0 / d;
    return 1;
}

/* One layer's fused pass; returns the sum of squares of what it stored. */
static double gck_finish_layer(gck_dtype dt, void *dst, const gck_finish *f, size_t n)
{
    double r;
    if (dt == GCK_DTYPE_F64) {
        if (!f->divide)
            return gck_scale_sumsq_f64(dst, f->src, 1.0, n);
        if (gck_pow2_recip(f->d, 1000, &r))
            return gck_scale_sumsq_f64(dst, f->src, r, n);
        return gck_div_sumsq_f64(dst, f->src, f->d, n);
    }
    const float fd = (float)f->d;
    if (!f->divide)
        return gck_scale_sumsq_f32(dst, f->src, 1.0f, n);
    if (gck_pow2_recip((double)fd, 120, &r))
        return gck_scale_sumsq_f32(dst, f->src, (float)r, n);
    return gck_div_sumsq_f32(dst, f->src, fd, n);
}

static double gck_clip_layer(gck_dtype dt, gck_ckpt_layer *l, double s)
{
    if (dt == GCK_DTYPE_F64)
        return gck_scale_sumsq_f64(l->values, l->values, s, l->n);
    return gck_scale_sumsq_f32(l->values, l->values, (float)s, l->n);
}

/* Serial: a square root per layer, but for sums that over- or underflowed
 * (rare), whose rescaled pass gck_l2norm spreads over threads itself. */
static void gck_set_norms(gck_ckpt_layer *L, size_t n, gck_dtype dt)
{
    for (size_t i = 0; i < n; i++)
        L[i].norm = gck_layer_norm(L[i].values, L[i].n, dt, L[i].sumsq);
}

static void gck_clear_pending(gck_checkpointer *cp)
{
    for (size_t i = 0; i < cp->n_layers; i++) {
        cp->layers[i]->count = 0;
        cp->layers[i]->wsum = 0.0;
    }
    cp->pending_tensors = 0;
    cp->pending_layers = 0;
}

/* The checkpoint this flush will evict, when its memory may be reused for
 * the new one: the history is full, nobody else holds a reference, and the
 * flush cannot fail after writing values (error_if_nonfinite off), so the
 * evicted checkpoint is never seen half-overwritten. */
static const gck_checkpoint *gck_recyclable(const gck_checkpointer *cp)
{
    if (cp->hist_len < cp->cfg.max_checkpoints || cp->cfg.error_if_nonfinite)
        return NULL;
    const gck_checkpoint *oldest = cp->history[cp->hist_head];
    return atomic_load(&oldest->refs) == 1 ? oldest : NULL;
}

/* A new checkpoint for the pending layers (ids, lens in layer-id order),
 * on the memory of `reuse` (a checkpoint about to be evicted) when given. */
static gck_checkpoint *gck_new_for(const gck_checkpointer *cp, size_t np, const char *const *ids,
                                   const size_t *lens, const gck_checkpoint *reuse)
{
    return gck_checkpoint_new(cp->cfg.dtype, np, ids, lens, reuse ? reuse->arena : NULL,
                              reuse ? reuse->arena_bytes : 0);
}

/* Per-call arrays over the pending layers, in layer-id order. */
typedef struct gck_pending {
    size_t np;
    const gck_layer **layers;
    const char **ids;
    size_t *lens;
    void **dst;          /* gck_flush_into: each layer's buffer */
    gck_ckpt_layer *L;   /* gck_flush_into: the layers as they are finished in dst */
    void **bufs;         /* each layer's accumulation buffer (a gck_tensor_list's data) */
    double *sums;        /* per-layer sums of squares from the list functions */
} gck_pending;

/* The failure of allocating a checkpoint (what) for the pending layers. */
static gck_status gck_pending_oom(const gck_checkpointer *cp, const gck_pending *p, const char *what, const char *fn)
{
    const size_t bytes = gck_checkpoint_arena_bytes(cp->cfg.dtype, p->np, p->lens);
    return gck_fail_ctx(gck_fail_oom(what, bytes), "%s", fn);
}

/* What pending layer l finishes from: the given sums (red, from
 * gck_flush_reduced), else its buffer, or in tree order its folded levels. */
static gck_status gck_fin_set(gck_checkpointer *cp, gck_layer *l, const gck_reduced_layer *red)
{
    void *sum = l->buf;
    l->fin_count = red != NULL ? red->count : l->count;
    l->fin_wsum = red != NULL ? red->wsum : l->wsum;
    l->fin_step = red != NULL ? red->step : l->step;
    if (red != NULL)
        sum = red->data;
    else if (cp->cfg.reduction == GCK_REDUCE_TREE)
        GCK_TRY(gck_tree_fold(&l->tree, l->buf, gck_acc_dtype(cp), l->count, l->n, l->id, &sum, &l->fin_wsum));
    l->fin_src = sum;
    return GCK_OK;
}

/* Fills p from the pending layers, on the checkpointer's scratch; red: the
 * sums gck_flush_reduced was given, one per pending layer. */
static gck_status gck_pending_collect(gck_checkpointer *cp, gck_pending *p, const char *fn,
                                      const gck_reduced_layer *red)
{
    const size_t np = cp->pending_layers;
    const size_t per = sizeof *p->layers + sizeof *p->ids + sizeof *p->lens + sizeof *p->dst + sizeof *p->L +
                       sizeof *p->bufs + sizeof *p->sums;
    size_t bytes;
    char *mem = gck_mul_size(np, per, &bytes) ? gck_scratch(cp, bytes) : NULL;
    if (mem == NULL) /* np layers exist: the product cannot wrap here */
        return gck_fail_ctx(gck_fail_oom("per-layer scratch", np * per), "%s", fn);
    p->np = np;
    p->L = (gck_ckpt_layer *)(void *)mem; /* the widest member first: every part stays aligned */
    p->layers = (const gck_layer **)(void *)(mem + np * sizeof *p->L);
    p->ids = (const char **)(void *)((char *)p->layers + np * sizeof *p->layers);
    p->lens = (size_t *)(void *)((char *)p->ids + np * sizeof *p->ids);
    p->dst = (void **)(void *)((char *)p->lens + np * sizeof *p->lens);
    p->bufs = (void **)(void *)((char *)p->dst + np * sizeof *p->dst);
    p->sums = (double *)(void *)((char *)p->bufs + np * sizeof *p->bufs);
    for (size_t i = 0, k = 0; i < cp->n_layers; i++) {
        gck_layer *l = cp->layers[i];
        if (l->count == 0)
            continue;
        GCK_TRY(gck_fin_set(cp, l, red != NULL ? &red[k] : NULL));
        p->layers[k] = l;
        p->bufs[k] = l->fin_src;
        p->ids[k] = l->id;
        p->lens[k] = l->n;
        k++;
    }
    return GCK_OK;
}

/* Finishes the pending layers into L[k].values (L[k].n set), sets each
 * layer's sum of squares and norm, and returns the global norm before
 * clipping. */
static double gck_finish_all(const gck_checkpointer *cp, const gck_pending *p, gck_ckpt_layer *L)
{
    const gck_dtype dt = gck_acc_dtype(cp);
    GCK_FOR_EACH_LAYER(p->np, L[i].n, {
        const gck_finish f = gck_finish_of(cp, p->layers[i]);
        L[i].sumsq = gck_finish_layer(dt, L[i].values, &f, L[i].n);
    });
    gck_set_norms(L, p->np, dt);
    return gck_global_norm_of(L, p->np);
}

/* Clips L in place when configured and norm exceeds clip_norm (one more
 * pass, only then). Returns the factor (1.0: not clipped). With `norms`,
 * the layers' sums of squares and norms are those of the clipped values and
 * *after their global norm (a checkpoint records them); without, the pass
 * only scales (nobody will see them) and *after is NaN. */
static double gck_clip_all(const gck_checkpointer *cp, gck_ckpt_layer *L, size_t np, double norm, int norms,
                           double *after)
{
    *after = norms ? norm : NAN;
    if (!(cp->cfg.clip_enabled && norm > cp->cfg.clip_norm && norm > 0.0))
        return 1.0;
    const gck_dtype dt = gck_acc_dtype(cp);
    const double s = cp->cfg.clip_norm / norm;
    if (!norms) {
        if (dt == GCK_DTYPE_F64)
            GCK_FOR_EACH_PIECE(np, L[i].n, gck_scale_f64((double *)L[i].values + lo, s, len));
        else
            GCK_FOR_EACH_PIECE(np, L[i].n, gck_scale_f32((float *)L[i].values + lo, (float)s, len));
        return s;
    }
    GCK_FOR_EACH_LAYER(np, L[i].n, L[i].sumsq = gck_clip_layer(dt, &L[i], s));
    gck_set_norms(L, np, dt);
    *after = gck_global_norm_of(L, np);
    return s;
}

static void gck_set_info(gck_clip_info *info, double norm, double coef)
{
    if (info != NULL)
        *info = (gck_clip_info){.total_norm = norm, .coef = coef, .clipped = coef != 1.0};
}

static gck_status gck_nonfinite(double norm, const char *fn)
{
    return gck_fail(GCK_ERR_NONFINITE, "%s: the global gradient norm is %s; pending state kept", fn,
                    isnan(norm) ? "NaN" : "infinite");
}

/* How the pending layers are finished: all a copy of their buffers (no
 * division, or by 1), all divided by the same *d, or otherwise. */
enum { GCK_FIN_COPY, GCK_FIN_COMMON, GCK_FIN_OTHER };

static int gck_finish_kind(const gck_checkpointer *cp, const gck_pending *p, double *d)
{
    int kind = GCK_FIN_COPY;
    for (size_t k = 0; k < p->np; k++) {
        const gck_finish f = gck_finish_of(cp, p->layers[k]);
        const int copy = !f.divide || (gck_acc_dtype(cp) == GCK_DTYPE_F64 ? f.d == 1.0 : (float)f.d == 1.0f);
        if (copy && kind == GCK_FIN_COPY)
            continue;
        if (copy || !f.divide || (kind == GCK_FIN_COMMON && f.d != *d) || (kind == GCK_FIN_COPY && k > 0))
            return GCK_FIN_OTHER;
        kind = GCK_FIN_COMMON;
        *d = f.d;
    }
    return kind;
}

/* The finished, clipped values into L[k].values (L[k].n set): *norm the
 * global norm before clipping, *coef the clip factor (1.0: not clipped);
 * with `norms` each L[k]'s sum of squares and norm are those of the stored
 * values and *after their global norm, else *after is NaN. With `check`, a
 * non-finite norm fails with GCK_ERR_NONFINITE (*norm set; L may hold the
 * unclipped values) and the buffers are left as they are; without, the
 * buffers may be finished in place (the window closes after this). The
 * other failure, GCK_ERR_NO_MEMORY from a list function's scratch, happens
 * before anything is written (so a recycled arena is never half-written). 
 *
 * When clipping is expected (it fired in the previous window; the first is
 * assumed to clip) and the finished values are a copy of the buffers (or,
 * without `check`, all the buffers divide by one divisor), one list call
 * sums the squares (finishing in place) in one OpenMP region, and one pass
 * writes x * s (or copies x, when it did not fire) into L: a read (or
 * read-write) pass and a copy pass, where finishing into L and then
 * clipping in place take a copy pass and a read-write pass with a fork per
 * big layer. The values are the same either way. */
static gck_status gck_finish_clip(gck_checkpointer *cp, const gck_pending *p, gck_ckpt_layer *L, int norms, int check,
                                  double *norm, double *coef, double *after, const char *fn)
{
    const gck_dtype dt = gck_acc_dtype(cp);
    const size_t np = p->np;
    double d = 1.0;
    const int kind = cp->cfg.clip_enabled && cp->clip_expected ? gck_finish_kind(cp, p, &d) : GCK_FIN_OTHER;
    if (kind == GCK_FIN_OTHER || (kind == GCK_FIN_COMMON && check)) {
        *norm = gck_finish_all(cp, p, L);
        if (check && !isfinite(*norm))
            return gck_nonfinite(*norm, fn);
        *coef = gck_clip_all(cp, L, np, *norm, norms, after);
        cp->clip_expected = *coef != 1.0;
        return GCK_OK;
    }
    const gck_tensor_list bl = {.count = np, .data = p->bufs, .lens = p->lens, .dtype = dt};
    const gck_status st = kind == GCK_FIN_COPY ? gck_tensors_sumsq(&bl, p->sums, NULL)
                                               : gck_tensors_div_sumsq(&bl, d, p->sums, NULL);
    if (st != GCK_OK) /* its only failure: scratch */
        return gck_fail_ctx(st, "%s", fn);
    for (size_t k = 0; k < np; k++) {
        L[k].sumsq = p->sums[k];
        L[k].norm = gck_layer_norm(p->bufs[k], L[k].n, dt, L[k].sumsq);
    }
    *norm = gck_global_norm_of(L, np);
    if (check && !isfinite(*norm))
        return gck_nonfinite(*norm, fn);
    const int clips = *norm > cp->cfg.clip_norm && *norm > 0.0;
    const double s = clips ? cp->cfg.clip_norm / *norm : 1.0;
    const size_t esz = gck_acc_size(cp);
    *after = NAN;
    if (clips && norms) {
        /* the checkpoint records the clipped values' sums: per layer */
        GCK_FOR_EACH_LAYER(np, L[i].n, {
            L[i].sumsq = dt == GCK_DTYPE_F64 ? gck_scale_sumsq_f64(L[i].values, p->bufs[i], s, L[i].n)
                                             : gck_scale_sumsq_f32(L[i].values, p->bufs[i], (float)s, L[i].n);
        });
        gck_set_norms(L, np, dt);
        *after = gck_global_norm_of(L, np);
    } else {
        /* elementwise (the pieces' sums are not wanted): one region. A clip
         * is x * s written into L, with no sum of squares computed; past the
         * last-level cache's share with streaming stores, since L (the
         * caller's buffers for gck_flush_into) is not read back before the
         * pass ends (trainer_ckpt, 1 thread, k = 4, beside the previous
         * scale_sumsq: small2k 24.7-25.5 -> 20.9-21.1 ms, resnet50 10 % and
         * gpt2s 5 % less on the Intel VM) */
        size_t bytes = 0;
        for (size_t k = 0; k < np; k++)
            bytes += L[k].n * esz;
        const int nt = bytes >= cp->llc_bytes;
        GCK_FOR_EACH_PIECE(np, L[i].n, {
            char *to = (char *)L[i].values + lo * esz;
            const char *from = (const char *)p->bufs[i] + lo * esz;
            if (!clips)
                memcpy(to, from, len * esz);
            else if (dt == GCK_DTYPE_F64)
                (nt ? gck_scale_into_nt_f64 : gck_scale_into_f64)((double *)(void *)to, s,
                                                                  (const double *)(const void *)from, len);
            else
                (nt ? gck_scale_into_nt_f32 : gck_scale_into_f32)((float *)(void *)to, (float)s,
                                                                  (const float *)(const void *)from, len);
        });
        if (norms)
            *after = *norm;
    }
    *coef = s;
    cp->clip_expected = clips;
    return GCK_OK;
}

/* Finishes the pending layers into c's own values (steps copied), fails on
 * a non-finite norm when configured (*info then gets the norm) or on
 * scratch (c is then the caller's to release), and clips. */
static gck_status gck_finish_checkpoint(gck_checkpointer *cp, const gck_pending *p, gck_checkpoint *c,
                                        const char *fn, gck_clip_info *info)
{
    for (size_t k = 0; k < p->np; k++)
        c->layers[k].step = p->layers[k]->fin_step;
    double norm;
    const gck_status st = gck_finish_clip(cp, p, c->layers, 1, cp->cfg.error_if_nonfinite, &norm, &c->clip_coef,
                                          &c->global_norm, fn);
    if (st != GCK_OK) {
        if (st == GCK_ERR_NONFINITE)
            gck_set_info(info, norm, 1.0);
        return st;
    }
    c->norm_before_clip = norm;
    gck_set_info(info, norm, c->clip_coef);
    return GCK_OK;
}

/* Gives the finished, checksummed c its id, step and times, appends it to
 * the history (evicting the oldest when full); *out gets a reference. */
static void gck_record(gck_checkpointer *cp, gck_checkpoint *c, uint64_t now, gck_checkpoint **out)
{
    const size_t bytes = c->n_values * gck_dtype_size(c->dtype);
    c->compressed_size = c->n_values <= cp->cfg.compression_threshold ? bytes : (size_t)((double)bytes * 0.6);
    c->id = cp->next_id++;
    c->step = cp->global_step;
    c->created_at = now;
    const size_t max = cp->cfg.max_checkpoints;
    if (cp->hist_len == max) {
        gck_checkpoint *old = cp->history[cp->hist_head];
        if (old->arena == c->arena)
            gck_checkpoint_take_arena(old); /* recycled into c */
        gck_checkpoint_release(old);
        cp->hist_head = (cp->hist_head + 1) % max;
        cp->hist_len--;
    }
    cp->history[(cp->hist_head + cp->hist_len) % max] = c;
    cp->hist_len++;
    if (out != NULL)
        *out = gck_checkpoint_retain(c);
}

/* ---- BF16 storage --------------------------------------------------------------
 *
 * The buffers are f32 (as for F32 storage). A flush finishes each layer in
 * f32 exactly as F32 storage does, into a staging copy, and rounds it to
 * bf16 once (gck_convert_f32_to_bf16). Clipping is decided on the norm of
 * those rounded values, so every norm the checkpoint records describes bf16
 * values: the pre-clip norm is the norm of what would have been stored
 * unclipped. When clipping fires, the f32 values are scaled by (float) of
 * the factor and rounded again from f32 (each stored value is rounded once
 * from its f32 value, never from a bf16 one). */

/* The staging copies for the pending layers: f[k] (f32) and h[k] (bf16),
 * on memory the checkpointer keeps for later flushes. */
static gck_status gck_bf16_stage(gck_checkpointer *cp, const gck_pending *p, float ***f, uint16_t ***h,
                                 const char *fn)
{
    size_t total = 0;
    for (size_t k = 0; k < p->np; k++)
        total += p->lens[k]; /* each has an f32 buffer: no overflow below */
    const size_t ptrs = (p->np ? p->np : 1) * (sizeof **f + sizeof **h);
    const size_t fat = (ptrs + 63) / 64 * 64, hat = fat + (total * sizeof(float) + 63) / 64 * 64;
    const size_t bytes = hat + total * sizeof(uint16_t);
    if (bytes > cp->stage_bytes) {
        void *m = gck_aligned_alloc(bytes);
        if (m == NULL)
            return gck_fail_ctx(gck_fail_oom("bf16 staging copy", bytes), "%s", fn);
        free(cp->stage);
        cp->stage = m;
        cp->stage_bytes = bytes;
    }
    char *m = cp->stage;
    *f = (float **)(void *)m;
    *h = (uint16_t **)(void *)(m + (p->np ? p->np : 1) * sizeof **f);
    for (size_t k = 0, at = 0; k < p->np; at += p->lens[k], k++) {
        (*f)[k] = (float *)(void *)(m + fat) + at;
        (*h)[k] = (uint16_t *)(void *)(m + hat) + at;
    }
    return GCK_OK;
}

/* Finishes the pending layers into the staging copies: h[k] receives the
 * values to store, L[k] (values = h[k], n set) their sum of squares and
 * norm; *norm is the global norm before clipping, *coef the clip factor,
 * *after the global norm of the stored values. With `check`, a non-finite
 * norm fails with GCK_ERR_NONFINITE. Writes nothing but the staging copies
 * and L. */
static gck_status gck_finish_bf16(gck_checkpointer *cp, const gck_pending *p, float *const *f, uint16_t *const *h,
                                  gck_ckpt_layer *L, int check, double *norm, double *coef, double *after,
                                  const char *fn)
{
    const size_t np = p->np;
    GCK_FOR_EACH_LAYER(np, L[i].n, {
        const gck_finish fin = gck_finish_of(cp, p->layers[i]);
        (void)gck_finish_layer(GCK_DTYPE_F32, f[i], &fin, L[i].n);
        gck_convert_f32_to_bf16(h[i], f[i], L[i].n);
        L[i].sumsq = gck_sumsq_bf16(h[i], L[i].n);
    });
    gck_set_norms(L, np, GCK_DTYPE_BF16);
    *norm = *after = gck_global_norm_of(L, np);
    *coef = 1.0;
    if (check && !isfinite(*norm))
        return gck_nonfinite(*norm, fn);
    if (!(cp->cfg.clip_enabled && *norm > cp->cfg.clip_norm && *norm > 0.0))
        return GCK_OK;
    const double s = cp->cfg.clip_norm / *norm;
    GCK_FOR_EACH_LAYER(np, L[i].n, {
        gck_scale_f32(f[i], (float)s, L[i].n);
        gck_convert_f32_to_bf16(h[i], f[i], L[i].n);
        L[i].sumsq = gck_sumsq_bf16(h[i], L[i].n);
    });
    gck_set_norms(L, np, GCK_DTYPE_BF16);
    *after = gck_global_norm_of(L, np);
    *coef = s;
    return GCK_OK;
}

/* gck_flush or gck_flush_reduced (the checkpoint's step given), or with
 * `into` gck_flush_into (out NULL: record nothing), for BF16 storage. Everything that can fail
 * happens before the checkpointer, dst or the recycled memory is written. */
static gck_status gck_flush_bf16(gck_checkpointer *cp, uint64_t now, uint64_t step, gck_pending *p, int into,
                                 gck_clip_info *info, gck_checkpoint **out, const char *fn)
{
    float **f = NULL;
    uint16_t **h = NULL;
    GCK_TRY(gck_bf16_stage(cp, p, &f, &h, fn));
    gck_checkpoint *c = NULL;
    if (!into || out != NULL) {
        c = gck_new_for(cp, p->np, p->ids, p->lens, gck_recyclable(cp));
        if (c == NULL)
            return gck_pending_oom(cp, p, "checkpoint", fn);
    }
    for (size_t k = 0; k < p->np; k++)
        p->L[k] = (gck_ckpt_layer){.id = p->ids[k], .values = h[k], .n = p->lens[k], .step = p->layers[k]->fin_step};
    double norm, coef, after;
    const gck_status st =
        gck_finish_bf16(cp, p, f, h, p->L, cp->cfg.error_if_nonfinite, &norm, &coef, &after, fn);
    if (st != GCK_OK) {
        if (st == GCK_ERR_NONFINITE)
            gck_set_info(info, norm, 1.0);
        gck_checkpoint_release(c);
        return st;
    }
    gck_set_info(info, norm, coef);
    if (into)
        GCK_FOR_EACH_PIECE(p->np, p->lens[i], memcpy((uint16_t *)p->dst[i] + lo, h[i] + lo, len * sizeof(uint16_t)));
    if (c != NULL) {
        gck_checkpoint_fill_seal(c, (const void *const *)h, cp->cfg.checksum);
        for (size_t k = 0; k < p->np; k++) {
            c->layers[k].step = p->L[k].step;
            c->layers[k].sumsq = p->L[k].sumsq;
            c->layers[k].norm = p->L[k].norm;
        }
        c->global_norm = after;
        c->norm_before_clip = norm;
        c->clip_coef = coef;
        gck_record(cp, c, now, out);
        c->step = step;
    }
    return GCK_OK;
}

/* Ends the flush window: pending state cleared (buffers kept), one more window counted. The
 * next window's tree levels stream when this one's buffers outgrew the last-level cache: a level
 * opened for one micro-batch is then evicted before the next reads it. */
static void gck_close_window(gck_checkpointer *cp)
{
    size_t bytes = 0;
    for (size_t i = 0; i < cp->n_layers; i++)
        if (cp->layers[i]->count > 0)
            bytes += cp->layers[i]->n * gck_acc_size(cp);
    cp->stream_levels = cp->cfg.reduction == GCK_REDUCE_TREE && bytes >= cp->llc_bytes;
    gck_clear_pending(cp);
    cp->flush_count++;
}

/* gck_flush, or with red gck_flush_reduced (the checkpoint's step given). */
static gck_status gck_flush_window(gck_checkpointer *cp, uint64_t now, const gck_reduced_layer *red, uint64_t step,
                                   gck_checkpoint **out)
{
    gck_flush_unstage(cp);
    if (cp->pending_layers == 0)
        return gck_fail(GCK_ERR_NO_ACCUMULATED_GRADIENTS, "flush: no gradients accumulated since the last flush");
    gck_pending p;
    GCK_TRY(gck_pending_collect(cp, &p, "flush", red));
    if (cp->cfg.dtype == GCK_DTYPE_BF16) {
        GCK_TRY(gck_flush_bf16(cp, now, step, &p, 0, NULL, out, "flush"));
        gck_close_window(cp);
        return GCK_OK;
    }
    gck_checkpoint *c = gck_new_for(cp, p.np, p.ids, p.lens, gck_recyclable(cp));
    if (c == NULL)
        return gck_pending_oom(cp, &p, "checkpoint", "flush");
    /* finish into the checkpoint and sum the squares in one pass, clip in
     * place only when it triggers, then checksum */
    const gck_status st = gck_finish_checkpoint(cp, &p, c, "flush", NULL);
    if (st != GCK_OK) {
        gck_checkpoint_release(c);
        return st;
    }
    gck_checkpoint_seal(c, cp->cfg.checksum);
    gck_record(cp, c, now, out);
    c->step = step;
    gck_close_window(cp);
    return GCK_OK;
}

gck_status gck_flush(gck_checkpointer *cp, uint64_t now, gck_checkpoint **out)
{
    GCK_CHECK_ARG(cp != NULL, "gck_flush: checkpointer is NULL");
    return gck_flush_window(cp, now, NULL, cp->global_step, out);
}

gck_status gck_flush_reduced(gck_checkpointer *cp, uint64_t now, uint64_t step, const gck_reduced_layer *layers,
                             gck_checkpoint **out)
{
    GCK_CHECK_ARG(cp != NULL && (layers != NULL || cp->pending_layers == 0), "gck_flush_reduced: %s is NULL",
                  cp == NULL ? "checkpointer" : "layers");
    for (size_t i = 0, k = 0; i < cp->n_layers; i++) {
        if (cp->layers[i]->count == 0)
            continue;
        GCK_CHECK_ARG(layers[k].data != NULL || cp->layers[i]->n == 0,
                      "gck_flush_reduced: layers[%zu].data (layer '%.200s') is NULL", k, cp->layers[i]->id);
        k++;
    }
    return gck_flush_window(cp, now, layers, step, out);
}

gck_status gck_pending_sum_get(gck_checkpointer *cp, size_t k, gck_pending_sum *out)
{
    GCK_CHECK_ARG(cp != NULL && out != NULL, "gck_pending_sum_get: %s is NULL", cp == NULL ? "checkpointer" : "out");
    GCK_CHECK_ARG(k < cp->pending_layers, "gck_pending_sum_get: index %zu past the %zu pending layers", k,
                  cp->pending_layers);
    gck_layer *l = NULL;
    for (size_t i = 0, j = 0; l == NULL; i++)
        if (cp->layers[i]->count > 0 && j++ == k)
            l = cp->layers[i];
    GCK_TRY(gck_fin_set(cp, l, NULL));
    *out = (gck_pending_sum){.layer_id = l->id, .data = l->fin_src, .n = l->n, .count = l->count,
                             .wsum = l->fin_wsum, .step = l->step};
    return GCK_OK;
}

/* ---- finishing in place (a transport's pieces) ---------------------------------- */

gck_status gck_flush_stage(gck_checkpointer *cp, void **values)
{
    GCK_CHECK_ARG(cp != NULL && values != NULL, "gck_flush_stage: %s is NULL", cp == NULL ? "checkpointer" : "values");
    gck_flush_unstage(cp);
    if (cp->pending_layers == 0)
        return gck_fail(GCK_ERR_NO_ACCUMULATED_GRADIENTS, "gck_flush_stage: no gradients accumulated");
    if (cp->cfg.dtype == GCK_DTYPE_BF16)
        return gck_fail(GCK_ERR_UNSUPPORTED, "gck_flush_stage: BF16 storage is finished by gck_flush_reduced");
    gck_pending p;
    GCK_TRY(gck_pending_collect(cp, &p, "gck_flush_stage", NULL));
    gck_checkpoint *c = gck_new_for(cp, p.np, p.ids, p.lens, gck_recyclable(cp));
    if (c == NULL)
        return gck_pending_oom(cp, &p, "checkpoint", "gck_flush_stage");
    for (size_t k = 0; k < p.np; k++)
        values[k] = c->layers[k].values;
    cp->staged = c;
    return GCK_OK;
}

double gck_flush_finish_values(const gck_checkpointer *cp, size_t count, double wsum, void *dst, const void *src,
                               size_t n)
{
    if (cp == NULL || cp->cfg.dtype == GCK_DTYPE_BF16)
        return NAN;
    const gck_accum_mode mode = cp->cfg.accumulation_mode;
    const gck_finish f = {.src = src, .d = mode == GCK_ACCUM_MEAN ? (double)count : wsum,
                          .divide = mode == GCK_ACCUM_MEAN || (mode == GCK_ACCUM_WEIGHTED_MEAN && wsum != 0.0)};
    const gck_dtype dt = cp->cfg.dtype;
    /* gck_finish_clip's copy path (clipping expected, every layer a copy) stores the buffers
     * as they are: under flush-to-zero a copy keeps denormals that x * 1 would flush */
    const int copy = !f.divide || (dt == GCK_DTYPE_F64 ? f.d == 1.0 : (float)f.d == 1.0f);
    if (cp->cfg.clip_enabled && cp->clip_expected && copy) {
        if (dst != src && n > 0)
            memcpy(dst, src, n * gck_dtype_size(dt));
        return dt == GCK_DTYPE_F64 ? gck_sumsq_f64(dst, n) : gck_sumsq_f32(dst, n);
    }
    return gck_finish_layer(dt, dst, &f, n);
}

gck_status gck_flush_finished(gck_checkpointer *cp, uint64_t now, uint64_t step, const gck_finished_layer *layers,
                              gck_checkpoint **out)
{
    GCK_CHECK_ARG(cp != NULL && layers != NULL, "gck_flush_finished: %s is NULL",
                  cp == NULL ? "checkpointer" : "layers");
    gck_checkpoint *c = cp->staged;
    GCK_CHECK_ARG(c != NULL, "gck_flush_finished: no checkpoint staged (gck_flush_stage)");
    cp->staged = NULL;
    size_t k = 0;
    for (size_t i = 0; i < cp->n_layers && k <= c->n_layers; i++)
        if (cp->layers[i]->count > 0 && (k == c->n_layers || c->layers[k++].n != cp->layers[i]->n))
            k = c->n_layers + 1;
    if (k != c->n_layers || k != cp->pending_layers) {
        cp->staged = c;
        gck_flush_unstage(cp);
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_flush_finished: the pending layers changed since staging");
    }
    const gck_dtype dt = cp->cfg.dtype;
    gck_ckpt_layer *L = c->layers;
    for (k = 0; k < c->n_layers; k++) {
        L[k].sumsq = layers[k].sumsq;
        L[k].step = layers[k].step;
    }
    gck_set_norms(L, c->n_layers, dt);
    const double norm = gck_global_norm_of(L, c->n_layers);
    if (cp->cfg.error_if_nonfinite && !isfinite(norm)) {
        gck_checkpoint_release(c);
        return gck_nonfinite(norm, "gck_flush_finished");
    }
    c->clip_coef = gck_clip_all(cp, L, c->n_layers, norm, 1, &c->global_norm);
    cp->clip_expected = c->clip_coef != 1.0;
    c->norm_before_clip = norm;
    gck_checkpoint_seal(c, cp->cfg.checksum);
    gck_record(cp, c, now, out);
    c->step = step;
    gck_close_window(cp);
    return GCK_OK;
}

void gck_flush_unstage(gck_checkpointer *cp)
{
    if (cp == NULL || cp->staged == NULL)
        return;
    /* a recycled arena still belongs to the checkpoint it came from */
    for (size_t i = 0; i < cp->hist_len; i++)
        if (cp->history[(cp->hist_head + i) % cp->cfg.max_checkpoints]->arena == cp->staged->arena)
            gck_checkpoint_take_arena(cp->staged);
    gck_checkpoint_release(cp->staged);
    cp->staged = NULL;
}

const gck_config *gck_checkpointer_config(const gck_checkpointer *cp)
{
    return cp != NULL ? &cp->cfg : NULL;
}

/* ---- flush into the caller's buffers ------------------------------------------- */

/* Checks dst against the pending layers and sets p->dst[k], the buffer of
 * the k-th pending layer. Changes nothing observable. */
static gck_status gck_dst_map(gck_checkpointer *cp, const gck_flush_dst *dst, gck_pending *p)
{
    const gck_tensor_list *t = &dst->tensors;
    const size_t cnt = t->count, np = p->np;
    GCK_CHECK_ARG(cnt == 0 || (t->data != NULL && t->lens != NULL),
                  "gck_flush_into: dst tensors.%s is NULL with count %zu", t->data == NULL ? "data" : "lens", cnt);
    for (size_t j = 0; j < cnt; j++) {
        const gck_dtype dj = t->dtypes != NULL ? t->dtypes[j] : t->dtype;
        if (dj != cp->cfg.dtype)
            return gck_fail(GCK_ERR_UNSUPPORTED,
                            "gck_flush_into: dst tensor %zu is %s but the checkpointer stores %s (no conversion)", j,
                            (unsigned)dj < GCK_DTYPE_COUNT ? gck_dtype_name(dj) : "an unknown dtype",
                            gck_dtype_name(cp->cfg.dtype));
        GCK_CHECK_ARG(t->data[j] != NULL || t->lens[j] == 0, "gck_flush_into: dst tensor %zu is NULL with length %zu",
                      j, t->lens[j]);
    }
    if (dst->layer_ids == NULL) {
        if (cnt != np)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_flush_into: dst has %zu buffers for %zu pending layers%s%.200s%s",
                            cnt, np, cnt < np ? " (none for '" : "", cnt < np ? p->layers[cnt]->id : "",
                            cnt < np ? "')" : "");
        for (size_t k = 0; k < np; k++) {
            if (t->lens[k] != p->layers[k]->n)
                return gck_fail(GCK_ERR_DIMENSION_MISMATCH,
                                "dimension mismatch for layer '%.200s': expected %zu, got %zu (dst tensor %zu)",
                                p->layers[k]->id, p->layers[k]->n, t->lens[k], k);
            p->dst[k] = t->data[k];
        }
        return GCK_OK;
    }
    GCK_TRY(gck_hints_reserve(cp, cnt, "gck_flush_into"));
    cp->serial++;
    for (size_t j = 0; j < cnt; j++) {
        const char *id = dst->layer_ids[j];
        GCK_CHECK_ARG(id != NULL, "gck_flush_into: dst layer_ids[%zu] is NULL", j);
        size_t at;
        gck_layer *l = gck_layer_lookup(cp, id, j, &at);
        if (l == NULL || l->count == 0)
            return gck_fail(GCK_ERR_NOT_FOUND, "gck_flush_into: dst tensor %zu is for layer '%.200s', which has nothing pending",
                            j, id);
        if (l->mark == cp->serial)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_flush_into: dst names layer '%.200s' twice (tensors %zu and %zu)",
                            id, l->slot, j);
        l->mark = cp->serial;
        l->slot = j;
        if (t->lens[j] != l->n)
            return gck_fail(GCK_ERR_DIMENSION_MISMATCH,
                            "dimension mismatch for layer '%.200s': expected %zu, got %zu (dst tensor %zu)", id, l->n,
                            t->lens[j], j);
    }
    for (size_t k = 0; k < np; k++) {
        if (p->layers[k]->mark != cp->serial)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT,
                            "gck_flush_into: pending layer '%.200s' has no buffer in dst (%zu buffers for %zu layers)",
                            p->layers[k]->id, cnt, np);
        p->dst[k] = t->data[p->layers[k]->slot];
    }
    return GCK_OK;
}

/* Keeps c's value arena as the staging spare (c no longer frees it). */
static void gck_keep_spare(gck_checkpointer *cp, gck_checkpoint *c)
{
    if (cp->spare != c->arena)
        free(cp->spare);
    cp->spare = c->arena;
    cp->spare_bytes = c->arena_bytes;
    gck_checkpoint_take_arena(c);
}

/* error_if_nonfinite: finish into a staging checkpoint (on the spare arena)
 * exactly as gck_flush does, so a non-finite norm fails before dst is
 * touched; then copy to dst and record the staging checkpoint or keep its
 * memory for next time. */
static gck_status gck_flush_into_staged(gck_checkpointer *cp, uint64_t now, gck_pending *p, gck_clip_info *info,
                                        gck_checkpoint **out)
{
    gck_checkpoint *c = gck_checkpoint_new(cp->cfg.dtype, p->np, p->ids, p->lens, cp->spare, cp->spare_bytes);
    if (c == NULL)
        return gck_pending_oom(cp, p, "staging checkpoint", "gck_flush_into");
    if (c->arena == cp->spare) {
        cp->spare = NULL; /* c owns it now */
        cp->spare_bytes = 0;
    }
    const gck_status st = gck_finish_checkpoint(cp, p, c, "gck_flush_into", info);
    if (st != GCK_OK) {
        gck_keep_spare(cp, c);
        gck_checkpoint_release(c);
        return st;
    }
    const size_t esz = gck_acc_size(cp);
    GCK_FOR_EACH_PIECE(p->np, c->layers[i].n,
                       memcpy((char *)p->dst[i] + lo * esz, (const char *)c->layers[i].values + lo * esz, len * esz));
    if (out != NULL) {
        gck_checkpoint_seal(c, cp->cfg.checksum);
        gck_record(cp, c, now, out);
    } else {
        gck_keep_spare(cp, c);
        gck_checkpoint_release(c);
    }
    return GCK_OK;
}

gck_status gck_flush_into(gck_checkpointer *cp, uint64_t now, const gck_flush_dst *dst, gck_clip_info *info,
                          gck_checkpoint **out)
{
    GCK_CHECK_ARG(cp != NULL && dst != NULL, "gck_flush_into: %s is NULL", cp == NULL ? "checkpointer" : "dst");
    if (cp->pending_layers == 0)
        return gck_fail(GCK_ERR_NO_ACCUMULATED_GRADIENTS,
                        "gck_flush_into: no gradients accumulated since the last flush");
    gck_pending p;
    GCK_TRY(gck_pending_collect(cp, &p, "gck_flush_into", NULL));
    GCK_TRY(gck_dst_map(cp, dst, &p));
    if (cp->cfg.dtype == GCK_DTYPE_BF16) {
        GCK_TRY(gck_flush_bf16(cp, now, cp->global_step, &p, 1, info, out, "gck_flush_into"));
        gck_close_window(cp);
        return GCK_OK;
    }
    if (cp->cfg.error_if_nonfinite) {
        GCK_TRY(gck_flush_into_staged(cp, now, &p, info, out));
        gck_close_window(cp);
        return GCK_OK;
    }
    /* Everything that can fail is done before dst is written. */
    gck_checkpoint *c = NULL;
    if (out != NULL) {
        c = gck_new_for(cp, p.np, p.ids, p.lens, gck_recyclable(cp));
        if (c == NULL)
            return gck_pending_oom(cp, &p, "checkpoint", "gck_flush_into");
    }
    for (size_t k = 0; k < p.np; k++)
        p.L[k] = (gck_ckpt_layer){.id = p.ids[k], .values = p.dst[k], .n = p.lens[k], .step = p.layers[k]->fin_step};
    /* one fused pass into dst, a clip pass in place only when it triggers */
    double norm, coef, after;
    const gck_status st = gck_finish_clip(cp, &p, p.L, c != NULL, 0, &norm, &coef, &after, "gck_flush_into");
    if (st != GCK_OK) { /* only before anything was written */
        gck_checkpoint_release(c);
        return st;
    }
    gck_set_info(info, norm, coef);
    if (c != NULL) {
        gck_checkpoint_fill_seal(c, (const void *const *)p.dst, cp->cfg.checksum);
        for (size_t k = 0; k < p.np; k++) {
            c->layers[k].step = p.L[k].step;
            c->layers[k].sumsq = p.L[k].sumsq;
            c->layers[k].norm = p.L[k].norm;
        }
        c->global_norm = after;
        c->norm_before_clip = norm;
        c->clip_coef = coef;
        gck_record(cp, c, now, out);
    }
    gck_close_window(cp);
    return GCK_OK;
}

/* ---- queries -------------------------------------------------------------------- */

static const gck_checkpoint *gck_history_at(const gck_checkpointer *cp, size_t i)
{
    return cp->history[(cp->hist_head + i) % cp->cfg.max_checkpoints];
}

const gck_checkpoint *gck_latest_checkpoint(const gck_checkpointer *cp)
{
    return cp == NULL || cp->hist_len == 0 ? NULL : gck_history_at(cp, cp->hist_len - 1);
}

const gck_checkpoint *gck_checkpoint_by_id(const gck_checkpointer *cp, uint64_t id)
{
    if (cp == NULL)
        return NULL;
    for (size_t i = 0; i < cp->hist_len; i++)
        if (gck_history_at(cp, i)->id == id)
            return gck_history_at(cp, i);
    return NULL;
}

gck_status gck_checkpointer_discard_pending(gck_checkpointer *cp)
{
    GCK_CHECK_ARG(cp != NULL, "gck_checkpointer_discard_pending: checkpointer is NULL");
    gck_clear_pending(cp);
    return GCK_OK;
}

size_t gck_pending_count(const gck_checkpointer *cp)
{
    return cp ? cp->pending_tensors : 0;
}

size_t gck_pending_layers(const gck_checkpointer *cp, const char **names, size_t cap)
{
    if (cp == NULL)
        return 0;
    size_t k = 0;
    for (size_t i = 0; i < cp->n_layers; i++) {
        if (cp->layers[i]->count == 0)
            continue;
        if (names != NULL && k < cap)
            names[k] = cp->layers[i]->id;
        k++;
    }
    return k;
}

gck_checkpointer_stats gck_checkpointer_stats_get(const gck_checkpointer *cp)
{
    gck_checkpointer_stats s = {0};
    if (cp == NULL)
        return s;
    s.total_checkpoints = cp->hist_len;
    s.total_steps = cp->global_step;
    s.pending_tensors = cp->pending_tensors;
    double sum = 0.0;
    for (size_t i = 0; i < cp->hist_len; i++) {
        const double g = gck_history_at(cp, i)->global_norm;
        sum = sum + g;
        if (i == 0 || g > s.max_checkpoint_norm)
            s.max_checkpoint_norm = g;
    }
    s.avg_checkpoint_norm = cp->hist_len ? sum / (double)cp->hist_len : 0.0;
    return s;
}
