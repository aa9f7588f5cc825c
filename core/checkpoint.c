/* core/checkpoint.c - immutable refcounted checkpoints: layout, accessors, norms, diff. */
#include "checkpoint_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/kernels.h>

#include "alloc_internal.h"
#include "checksum_internal.h"
#include "norm_internal.h"

#define GCK_ALIGN 64

static size_t gck_round_up(size_t v)
{
    return (v + GCK_ALIGN - 1) & ~(size_t)(GCK_ALIGN - 1);
}

size_t gck_checkpoint_arena_bytes(gck_dtype dtype, size_t n_layers, const size_t *lens)
{
    const size_t esz = gck_dtype_size(dtype);
    size_t arena = 0;
    for (size_t i = 0; i < n_layers; i++) {
        size_t bytes;
        if (!gck_mul_size(lens[i], esz, &bytes) || bytes > (size_t)-1 / 2 - arena)
            return (size_t)-1;
        arena += gck_round_up(bytes);
    }
    return arena;
}

gck_checkpoint *gck_checkpoint_new(gck_dtype dtype, size_t n_layers, const char *const *ids, const size_t *lens,
                                   void *reuse, size_t reuse_bytes)
{
    const size_t esz = gck_dtype_size(dtype);
    const size_t arena = gck_checkpoint_arena_bytes(dtype, n_layers, lens);
    size_t id_bytes = 0, n_values = 0, layers_bytes;
    if (arena == (size_t)-1 || !gck_mul_size(n_layers, sizeof(gck_ckpt_layer), &layers_bytes))
        return NULL;
    for (size_t i = 0; i < n_layers; i++) {
        id_bytes += strlen(ids[i]) + 1;
        n_values += lens[i];
    }
    /* struct, layer array and ids in one block; values in an aligned arena */
    const size_t head = gck_round_up(sizeof(gck_checkpoint));
    gck_checkpoint *c = gck_malloc(head + layers_bytes + id_bytes);
    if (c == NULL)
        return NULL;
    /* Reusing an evicted checkpoint's arena skips the page faults of fresh
     * memory (a first-touch write costs about as much as a pass over it). */
    const int reused = reuse != NULL && reuse_bytes >= arena;
    void *values = reused ? reuse : gck_aligned_alloc(arena);
    if (values == NULL) {
        free(c);
        return NULL;
    }
    memset(c, 0, sizeof *c);
    atomic_init(&c->refs, 1);
    c->dtype = dtype;
    c->n_layers = n_layers;
    c->n_values = n_values;
    c->layers = (gck_ckpt_layer *)(void *)((char *)c + head); /* head is 64-byte aligned */
    c->arena = values;
    c->arena_bytes = reused ? reuse_bytes : arena;
    c->norm_before_clip = NAN;
    c->clip_coef = 1.0;
    char *idp = (char *)c->layers + layers_bytes;
    char *vp = values;
    for (size_t i = 0; i < n_layers; i++) {
        const size_t len = strlen(ids[i]) + 1;
        memcpy(idp, ids[i], len);
        c->layers[i] = (gck_ckpt_layer){.id = idp, .values = vp, .n = lens[i]};
        idp += len;
        vp += gck_round_up(lens[i] * esz);
    }
    return c;
}

void gck_checkpoint_take_arena(gck_checkpoint *c)
{
    c->arena = NULL;
    c->arena_bytes = 0;
}

double gck_layer_norm(const void *values, size_t n, gck_dtype dtype, double sumsq)
{
    if (gck_l2_sum_ok(sumsq))
        return sqrt(sumsq);
    return dtype == GCK_DTYPE_F32    ? gck_l2norm_f32(values, n)
           : dtype == GCK_DTYPE_BF16 ? gck_l2norm_bf16(values, n)
                                     : gck_l2norm_f64(values, n);
}

double gck_values_sumsq(const void *values, size_t n, gck_dtype dtype)
{
    return dtype == GCK_DTYPE_F32    ? gck_sumsq_f32(values, n)
           : dtype == GCK_DTYPE_BF16 ? gck_sumsq_bf16(values, n)
                                     : gck_sumsq_f64(values, n);
}

double gck_global_norm_of(const gck_ckpt_layer *layers, size_t n)
{
    /* the rule the list functions' totals use too (gck_tensors_norm) */
    return n == 0 ? 0.0 : gck_l2_total(&layers[0].sumsq, &layers[0].norm, sizeof layers[0], n);
}

void gck_checkpoint_seal(gck_checkpoint *c, gck_checksum algo)
{
    gck_hasher h;
    gck_hasher_init(&h, algo);
    for (size_t i = 0; i < c->n_layers; i++)
        gck_hasher_update_values(&h, c->layers[i].values, c->layers[i].n, c->dtype);
    c->checksum_algo = algo;
    c->checksum = gck_hasher_final(&h);
}

/* Elements copied then hashed at a time: 32 KiB of f64, so the hash reads
 * them back from L1/L2 and the values cross memory once. */
#define GCK_FILL_PIECE 4096

void gck_checkpoint_fill_seal(gck_checkpoint *c, const void *const *src, gck_checksum algo)
{
    const size_t esz = gck_dtype_size(c->dtype);
    gck_hasher h;
    gck_hasher_init(&h, algo);
    for (size_t i = 0; i < c->n_layers; i++) {
        const gck_ckpt_layer *l = &c->layers[i];
        if (l->n == 0)
            continue;
        if (algo == GCK_CHECKSUM_NONE) {
            memcpy(l->values, src[i], l->n * esz);
            continue;
        }
        for (size_t off = 0; off < l->n; off += GCK_FILL_PIECE) {
            const size_t k = l->n - off < GCK_FILL_PIECE ? l->n - off : GCK_FILL_PIECE;
            char *d = (char *)l->values + off * esz;
            memcpy(d, (const char *)src[i] + off * esz, k * esz);
            gck_hasher_update_values(&h, d, k, c->dtype);
        }
    }
    c->checksum_algo = algo;
    c->checksum = gck_hasher_final(&h);
}

uint64_t gck_checkpoint_compute_checksum(const gck_checkpoint *c, gck_checksum algo)
{
    if (c == NULL || (unsigned)algo > GCK_CHECKSUM_NONE)
        return 0;
    gck_hasher h;
    gck_hasher_init(&h, algo);
    for (size_t i = 0; i < c->n_layers; i++)
        gck_hasher_update_values(&h, c->layers[i].values, c->layers[i].n, c->dtype);
    return gck_hasher_final(&h);
}

gck_checkpoint *gck_checkpoint_retain(const gck_checkpoint *c)
{
    if (c == NULL)
        return NULL;
    gck_checkpoint *m = (gck_checkpoint *)(uintptr_t)c; /* the count is the only mutable part */
    atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed);
    return m;
}

void gck_checkpoint_release(gck_checkpoint *c)
{
    if (c == NULL)
        return;
    if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) {
        free(c->arena);
        free(c);
    }
}

uint64_t gck_checkpoint_id(const gck_checkpoint *c) { return c ? c->id : 0; }
uint64_t gck_checkpoint_step(const gck_checkpoint *c) { return c ? c->step : 0; }
uint64_t gck_checkpoint_created_at(const gck_checkpoint *c) { return c ? c->created_at : 0; }
size_t gck_checkpoint_compressed_size(const gck_checkpoint *c) { return c ? c->compressed_size : 0; }
uint64_t gck_checkpoint_checksum(const gck_checkpoint *c) { return c ? c->checksum : 0; }
gck_checksum gck_checkpoint_checksum_algo(const gck_checkpoint *c) { return c ? c->checksum_algo : GCK_CHECKSUM_NONE; }
gck_dtype gck_checkpoint_dtype(const gck_checkpoint *c) { return c ? c->dtype : GCK_DTYPE_F64; }
size_t gck_checkpoint_num_layers(const gck_checkpoint *c) { return c ? c->n_layers : 0; }
size_t gck_checkpoint_num_values(const gck_checkpoint *c) { return c ? c->n_values : 0; }
double gck_checkpoint_global_norm(const gck_checkpoint *c) { return c ? c->global_norm : NAN; }
double gck_checkpoint_norm_before_clip(const gck_checkpoint *c) { return c ? c->norm_before_clip : NAN; }
double gck_checkpoint_clip_coef(const gck_checkpoint *c) { return c ? c->clip_coef : NAN; }

static void gck_view_of(const gck_checkpoint *c, const gck_ckpt_layer *l, gck_tensor_view *out)
{
    *out = (gck_tensor_view){.layer_id = l->id, .values = l->values, .dtype = c->dtype, .n = l->n,
                             .step = l->step, .norm = l->norm};
}

gck_status gck_checkpoint_layer(const gck_checkpoint *c, size_t i, gck_tensor_view *out)
{
    GCK_CHECK_ARG(c != NULL && out != NULL, "gck_checkpoint_layer: NULL argument");
    GCK_CHECK_ARG(i < c->n_layers, "gck_checkpoint_layer: index %zu past the end (%zu layers)", i, c->n_layers);
    gck_view_of(c, &c->layers[i], out);
    return GCK_OK;
}

/* Index of id in the sorted layers, or n_layers when absent. */
static size_t gck_checkpoint_index(const gck_checkpoint *c, const char *id)
{
    size_t lo = 0, hi = c->n_layers;
    while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        const int cmp = strcmp(c->layers[mid].id, id);
        if (cmp == 0)
            return mid;
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return c->n_layers;
}

gck_status gck_checkpoint_find(const gck_checkpoint *c, const char *layer_id, gck_tensor_view *out)
{
    GCK_CHECK_ARG(c != NULL && layer_id != NULL && out != NULL, "gck_checkpoint_find: NULL argument");
    const size_t i = gck_checkpoint_index(c, layer_id);
    if (i == c->n_layers)
        return gck_fail(GCK_ERR_NOT_FOUND, "layer '%.200s' is not in checkpoint %llu", layer_id,
                        (unsigned long long)c->id);
    gck_view_of(c, &c->layers[i], out);
    return GCK_OK;
}

/* Values [i, i + k) of a layer widened to f64 (k <= 1024). */
static void gck_widen(double *buf, const void *values, gck_dtype dt, size_t i, size_t k)
{
    if (dt == GCK_DTYPE_F64) {
        memcpy(buf, (const double *)values + i, k * sizeof *buf);
        return;
    }
    float f[1024];
    if (dt == GCK_DTYPE_BF16)
        gck_convert_bf16_to_f32(f, (const uint16_t *)values + i, k);
    else
        memcpy(f, (const float *)values + i, k * sizeof *f);
    for (size_t j = 0; j < k; j++)
        buf[j] = (double)f[j];
}

/* Squared distance between two layers, the shorter padded with zeros. */
static double gck_layer_dist2(const gck_checkpoint *ca, const gck_ckpt_layer *a, const gck_checkpoint *cb,
                              const gck_ckpt_layer *b)
{
    const size_t common = a->n < b->n ? a->n : b->n;
    const gck_ckpt_layer *longer = a->n > b->n ? a : b;
    const gck_dtype ldt = a->n > b->n ? ca->dtype : cb->dtype;
    double d2;
    if (ca->dtype == cb->dtype) {
        d2 = ca->dtype == GCK_DTYPE_F32    ? gck_dist2_f32(a->values, b->values, common)
             : ca->dtype == GCK_DTYPE_BF16 ? gck_dist2_bf16(a->values, b->values, common)
                                           : gck_dist2_f64(a->values, b->values, common);
    } else {
        /* mixed dtypes: widen both sides (exactly) in chunks and compare in f64 */
        double x[1024], y[1024];
        d2 = 0.0;
        for (size_t i = 0; i < common; i += 1024) {
            const size_t k = common - i < 1024 ? common - i : 1024;
            gck_widen(x, a->values, ca->dtype, i, k);
            gck_widen(y, b->values, cb->dtype, i, k);
            d2 = d2 + gck_dist2_f64(x, y, k);
        }
    }
    const size_t tail = longer->n - common;
    const size_t esz = gck_dtype_size(ldt);
    return d2 + gck_values_sumsq((const char *)longer->values + common * esz, tail, ldt);
}

gck_status gck_checkpoint_diff(const gck_checkpoint *a, const gck_checkpoint *b, gck_layer_distance **out,
                               size_t *n_out)
{
    GCK_CHECK_ARG(a != NULL && b != NULL && out != NULL && n_out != NULL, "gck_checkpoint_diff: NULL argument");
    /* Pass 1: count the merged layers and the bytes of their ids. */
    size_t n = 0, id_bytes = 0, i = 0, j = 0;
    while (i < a->n_layers || j < b->n_layers) {
        int cmp = i == a->n_layers ? 1 : j == b->n_layers ? -1 : strcmp(a->layers[i].id, b->layers[j].id);
        const char *id = cmp <= 0 ? a->layers[i].id : b->layers[j].id;
        id_bytes += strlen(id) + 1;
        n++;
        i += cmp <= 0;
        j += cmp >= 0;
    }
    if (n == 0) {
        *out = NULL;
        *n_out = 0;
        return GCK_OK;
    }
    const size_t bytes = n * sizeof(gck_layer_distance) + id_bytes;
    gck_layer_distance *d = gck_malloc(bytes);
    if (d == NULL)
        return gck_fail_ctx(gck_fail_oom("layer distances", bytes), "gck_checkpoint_diff");
    char *ids = (char *)(d + n);
    size_t k = 0;
    i = j = 0;
    while (i < a->n_layers || j < b->n_layers) {
        int cmp = i == a->n_layers ? 1 : j == b->n_layers ? -1 : strcmp(a->layers[i].id, b->layers[j].id);
        const gck_ckpt_layer *la = cmp <= 0 ? &a->layers[i] : NULL, *lb = cmp >= 0 ? &b->layers[j] : NULL;
        const char *id = la ? la->id : lb->id;
        const size_t len = strlen(id) + 1;
        memcpy(ids, id, len);
        d[k].layer_id = ids;
        d[k].distance = la && lb ? sqrt(gck_layer_dist2(a, la, b, lb)) : (la ? la->norm : lb->norm);
        ids += len;
        k++;
        i += cmp <= 0;
        j += cmp >= 0;
    }
    *out = d;
    *n_out = n;
    return GCK_OK;
}

void gck_free(void *p)
{
    free(p);
}
