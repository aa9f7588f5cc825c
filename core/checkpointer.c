/* core/checkpointer.c - per-layer streaming accumulation, flush into checkpoints, bounded history.
 *
 * Layers live in an array sorted bytewise by id (binary search; insertion
 * moves pointers), so flush, replay, diff and the pending listing walk them
 * in order without sorting. Each layer owns one buffer of its length, reused
 * across flushes. A flush writes the finished values straight into the new
 * checkpoint (one fused pass: divide or copy, and sum the squares), scales
 * them in place only when clipping triggers, then checksums them: the
 * buffers are never modified by a flush, so a failing flush changes nothing. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/checkpointer.h>
#include <gradckpt/kernels.h>

#include "alloc_internal.h"
#include "checkpoint_internal.h"

#ifdef _OPENMP
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
} gck_layer;

struct gck_checkpointer {
    gck_config cfg;       /* weights points at our copy */
    double *weights;
    uint64_t global_step;
    uint64_t next_id;
    gck_layer **layers;   /* sorted by id */
    size_t n_layers, cap_layers;
    size_t pending_tensors;
    size_t pending_layers;
    gck_checkpoint **history; /* ring: oldest at hist_head */
    size_t hist_head, hist_len;
};

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
    GCK_CHECK_ARG((unsigned)c->dtype < GCK_DTYPE_COUNT, "invalid config: unknown dtype %d", (int)c->dtype);
    if (c->dtype != GCK_DTYPE_F64 && c->dtype != GCK_DTYPE_F32)
        return gck_fail(GCK_ERR_UNSUPPORTED, "the checkpointer stores F64 or F32, not %s", gck_dtype_name(c->dtype));
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
        return gck_fail(GCK_ERR_NO_MEMORY, "gck_checkpointer_create: out of memory");
    }
    if (c.n_weights)
        memcpy(w, c.weights, c.n_weights * sizeof *w);
    c.weights = w;
    cp->cfg = c;
    cp->weights = w;
    cp->history = hist;
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
        free(cp->layers[i]);
    }
    free(cp->layers);
    for (size_t i = 0; i < cp->hist_len; i++)
        gck_checkpoint_release(cp->history[(cp->hist_head + i) % cp->cfg.max_checkpoints]);
    free(cp->history);
    free(cp->weights);
    free(cp);
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

static size_t gck_storage_size(const gck_checkpointer *cp)
{
    return gck_dtype_size(cp->cfg.dtype);
}

/* Finds or creates the layer and makes its buffer ready for n values, all
 * before anything observable changes: on error the checkpointer is as it was. */
static gck_status gck_layer_prepare(gck_checkpointer *cp, const char *id, size_t n, gck_layer **out)
{
    int found;
    const size_t at = gck_layer_search(cp, id, &found);
    const size_t esz = gck_storage_size(cp);
    size_t bytes;
    if (!gck_mul_size(n, esz, &bytes))
        return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': %zu values do not fit in memory", id, n);
    if (found) {
        gck_layer *l = cp->layers[at];
        if (l->count > 0 && l->n != n)
            return gck_fail(GCK_ERR_DIMENSION_MISMATCH, "dimension mismatch for layer '%.200s': expected %zu, got %zu",
                            id, l->n, n);
        if (l->count == 0 && n > l->cap) {
            void *nb = gck_aligned_alloc(bytes);
            if (nb == NULL)
                return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': cannot allocate %zu bytes", id, bytes);
            free(l->buf);
            l->buf = nb;
            l->cap = n;
        }
        *out = l;
        return GCK_OK;
    }
    if (cp->n_layers == cp->cap_layers) {
        const size_t ncap = cp->cap_layers ? 2 * cp->cap_layers : 16;
        gck_layer **nl = gck_realloc(cp->layers, ncap * sizeof *nl);
        if (nl == NULL)
            return gck_fail(GCK_ERR_NO_MEMORY, "cannot grow the layer map to %zu layers", ncap);
        cp->layers = nl;
        cp->cap_layers = ncap;
    }
    gck_layer *l = gck_calloc(1, sizeof *l);
    char *cid = gck_strdup(id);
    void *buf = gck_aligned_alloc(bytes);
    if (l == NULL || cid == NULL || buf == NULL) {
        free(l), free(cid), free(buf);
        return gck_fail(GCK_ERR_NO_MEMORY, "layer '%.200s': cannot allocate %zu bytes", id, bytes);
    }
    l->id = cid;
    l->buf = buf;
    l->cap = n;
    memmove(&cp->layers[at + 1], &cp->layers[at], (cp->n_layers - at) * sizeof *cp->layers);
    cp->layers[at] = l;
    cp->n_layers++;
    *out = l;
    return GCK_OK;
}

/* in_dtype: GCK_DTYPE_F64 or GCK_DTYPE_F32, the type of values */
static gck_status gck_accumulate(gck_checkpointer *cp, const char *id, const void *values, size_t n, uint64_t step,
                                 gck_dtype in_dtype)
{
    GCK_CHECK_ARG(cp != NULL && id != NULL, "gck_accumulate: NULL %s", cp == NULL ? "checkpointer" : "layer id");
    GCK_CHECK_ARG(values != NULL || n == 0, "gck_accumulate: layer '%.200s': values is NULL with n = %zu", id, n);
    const size_t idlen = strnlen(id, GCK_LAYER_ID_MAX + 1);
    GCK_CHECK_ARG(idlen > 0, "gck_accumulate: empty layer id");
    GCK_CHECK_ARG(idlen <= GCK_LAYER_ID_MAX, "gck_accumulate: layer id longer than %d bytes", GCK_LAYER_ID_MAX);
    gck_layer *l = NULL;
    GCK_TRY(gck_layer_prepare(cp, id, n, &l));

    /* From here on nothing can fail. */
    const int weighted = cp->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN;
    const double w = !weighted ? 1.0 : (l->count < cp->cfg.n_weights ? cp->weights[l->count] : 1.0);
    const int first = l->count == 0;
    if (first) {
        l->n = n;
        l->wsum = 0.0;
        cp->pending_layers++;
    }
    /* r = r + (t * w), or r = r + t; the window's first tensor gives
     * 0 + (t * w) (t * 1 = t exactly) without reading the buffer. */
    if (cp->cfg.dtype == GCK_DTYPE_F64) {
        double *r = l->buf;
        if (in_dtype == GCK_DTYPE_F64) {
            if (first)
                gck_axpy_init_f64(r, w, values, n);
            else
                weighted ? gck_axpy_f64(r, w, values, n) : gck_add_f64(r, values, n);
        } else {
            if (first)
                gck_axpy_init_f32_to_f64(r, w, values, n);
            else
                weighted ? gck_axpy_f32_to_f64(r, w, values, n) : gck_add_f32_to_f64(r, values, n);
        }
    } else {
        float *r = l->buf;
        if (in_dtype == GCK_DTYPE_F32) {
            if (first)
                gck_axpy_init_f32(r, (float)w, values, n);
            else
                weighted ? gck_axpy_f32(r, (float)w, values, n) : gck_add_f32(r, values, n);
        } else {
            if (first)
                gck_axpy_init_f64_to_f32(r, (float)w, values, n);
            else
                weighted ? gck_axpy_f64_to_f32(r, (float)w, values, n) : gck_add_f64_to_f32(r, values, n);
        }
    }
    if (weighted)
        l->wsum = l->wsum + w;
    l->count++;
    l->step = step;
    cp->pending_tensors++;
    cp->global_step++;
    return GCK_OK;
}

gck_status gck_accumulate_f64(gck_checkpointer *cp, const char *layer_id, const double *values, size_t n,
                              uint64_t step)
{
    return gck_accumulate(cp, layer_id, values, n, step, GCK_DTYPE_F64);
}

gck_status gck_accumulate_f32(gck_checkpointer *cp, const char *layer_id, const float *values, size_t n,
                              uint64_t step)
{
    return gck_accumulate(cp, layer_id, values, n, step, GCK_DTYPE_F32);
}

uint64_t gck_global_step(const gck_checkpointer *cp)
{
    return cp ? cp->global_step : 0;
}

/* ---- flush ------------------------------------------------------------------ */

/* What finishing a layer does: dst = src / d when divide, else dst = src * 1
 * (a copy; x * 1 is exact). */
typedef struct gck_finish {
    const void *src;
    double d;
    int divide;
} gck_finish;

/* One layer's fused pass; returns the sum of squares of what it stored. */
static double gck_finish_layer(gck_dtype dt, void *dst, const gck_finish *f, size_t n)
{
    if (dt == GCK_DTYPE_F64)
        return f->divide ? gck_div_sumsq_f64(dst, f->src, f->d, n) : gck_scale_sumsq_f64(dst, f->src, 1.0, n);
    return f->divide ? gck_div_sumsq_f32(dst, f->src, (float)f->d, n) : gck_scale_sumsq_f32(dst, f->src, 1.0f, n);
}

static double gck_clip_layer(gck_dtype dt, gck_ckpt_layer *l, double s)
{
    if (dt == GCK_DTYPE_F64)
        return gck_scale_sumsq_f64(l->values, l->values, s, l->n);
    return gck_scale_sumsq_f32(l->values, l->values, (float)s, l->n);
}

/* Runs op on every layer: big layers one at a time (the kernels split them
 * over threads in fixed blocks), small ones spread over threads. Each
 * layer's result is the same whichever thread computes it. */
#define GCK_FOR_EACH_LAYER(nl, layers, BODY)                                          \
    do {                                                                              \
        long long i_;                                                                 \
        for (i_ = 0; i_ < (long long)(nl); i_++)                                      \
            if ((layers)[i_].n >= GCK_PARALLEL_MIN) {                                 \
                const size_t i = (size_t)i_;                                          \
                BODY;                                                                 \
            }                                                                         \
        GCK_OMP("omp parallel for schedule(dynamic, 4)")                              \
        for (i_ = 0; i_ < (long long)(nl); i_++)                                      \
            if ((layers)[i_].n < GCK_PARALLEL_MIN) {                                  \
                const size_t i = (size_t)i_;                                          \
                BODY;                                                                 \
            }                                                                         \
    } while (0)

static void gck_set_norms(gck_checkpoint *c)
{
    GCK_FOR_EACH_LAYER(c->n_layers, c->layers,
                       c->layers[i].norm = gck_layer_norm(c->layers[i].values, c->layers[i].n, c->dtype,
                                                          c->layers[i].sumsq));
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

gck_status gck_flush(gck_checkpointer *cp, uint64_t now, gck_checkpoint **out)
{
    GCK_CHECK_ARG(cp != NULL, "gck_flush: checkpointer is NULL");
    if (cp->pending_layers == 0)
        return gck_fail(GCK_ERR_NO_ACCUMULATED_GRADIENTS, "flush: no gradients accumulated since the last flush");
    const size_t np = cp->pending_layers;
    const char **ids = gck_malloc(np * sizeof *ids);
    size_t *lens = gck_malloc(np * sizeof *lens);
    gck_finish *fin = gck_malloc(np * sizeof *fin);
    gck_checkpoint *c = NULL;
    if (ids != NULL && lens != NULL && fin != NULL) {
        const gck_accum_mode mode = cp->cfg.accumulation_mode;
        for (size_t i = 0, k = 0; i < cp->n_layers; i++) {
            const gck_layer *l = cp->layers[i];
            if (l->count == 0)
                continue;
            ids[k] = l->id;
            lens[k] = l->n;
            const double d = mode == GCK_ACCUM_MEAN ? (double)l->count : l->wsum;
            fin[k] = (gck_finish){.src = l->buf, .d = d,
                                  .divide = mode == GCK_ACCUM_MEAN || (mode == GCK_ACCUM_WEIGHTED_MEAN && d != 0.0)};
            k++;
        }
        c = gck_checkpoint_new(cp->cfg.dtype, np, ids, lens, gck_recyclable(cp));
    }
    free(ids), free(lens);
    if (c == NULL) {
        free(fin);
        return gck_fail(GCK_ERR_NO_MEMORY, "flush: cannot allocate the checkpoint of %zu layers", np);
    }
    const gck_dtype dt = c->dtype;
    for (size_t i = 0, k = 0; i < cp->n_layers; i++)
        if (cp->layers[i]->count > 0)
            c->layers[k++].step = cp->layers[i]->step;

    /* 1. finish into the checkpoint and sum the squares, one pass */
    GCK_FOR_EACH_LAYER(np, c->layers, c->layers[i].sumsq = gck_finish_layer(dt, c->layers[i].values, &fin[i],
                                                                            c->layers[i].n));
    free(fin);
    gck_set_norms(c);
    const double norm = gck_global_norm_of(c->layers, np);
    if (cp->cfg.error_if_nonfinite && !isfinite(norm)) {
        gck_checkpoint_release(c);
        return gck_fail(GCK_ERR_NONFINITE, "flush: the global gradient norm is %s; pending state kept",
                        isnan(norm) ? "NaN" : "infinite");
    }
    /* 2. clip only when it triggers: one more pass, in place */
    c->global_norm = norm;
    if (cp->cfg.clip_enabled && norm > cp->cfg.clip_norm && norm > 0.0) {
        const double s = cp->cfg.clip_norm / norm;
        GCK_FOR_EACH_LAYER(np, c->layers, c->layers[i].sumsq = gck_clip_layer(dt, &c->layers[i], s));
        gck_set_norms(c);
        c->global_norm = gck_global_norm_of(c->layers, np);
    }
    /* 3. checksum the stored values */
    gck_checkpoint_seal(c, cp->cfg.checksum);
    const size_t bytes = c->n_values * gck_dtype_size(dt);
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
    gck_clear_pending(cp);
    if (out != NULL)
        *out = gck_checkpoint_retain(c);
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
