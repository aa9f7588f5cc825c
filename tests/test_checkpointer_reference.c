/* tests/test_checkpointer_reference.c - flush results bit for bit against a naive reference (per ISA).
 *
 * The reference keeps every tensor until flush and combines them exactly as
 * the seed's formulas say (SPEC 1.3): sum r = ((0 + t1) + t2) + ..., mean
 * r / count, weighted r + (t_i * w_i) then / sum(w_i) unless 0; in f32
 * storage inputs are rounded to float on arrival and the weights and
 * divisor are (float) casts; bf16 and f16 inputs are widened exactly to f32
 * (and on to f64 for f64 storage). BF16 storage is F32 storage's finished
 * values rounded to bf16 (round to nearest even, every NaN 0xFFFF) by a
 * scalar rounding written here, clipping decided on the norm of the rounded
 * values and applied as f32 * (float)(clip / norm) before rounding again,
 * sums of squares gck_sumsq_bf16 of the stored bits. Layer sums of squares are gck_sumsq_* of the
 * finished values, the global norm sqrt of their left-to-right sum, the clip
 * factor clip / norm (F32: (float) of it), the checksum FNV-1a 64 over the
 * little-endian bytes. In tree order (GCK_REDUCE_TREE) the sum is the
 * recursive T(lo, hi) = T(lo, lo + p) + T(lo + p, hi), p the largest power
 * of two below hi - lo, leaves 0 + t_i * w_i, and the weight sum the same
 * tree. Randomized over both orders, modes, dtypes, input types, clipping,
 * sizes (including ones above the OpenMP threshold) and 1 or 3 threads. The
 * trainer path (gck_accumulate_many_* per micro-batch, gck_flush_into the
 * caller's buffers) must give the same values and the reference's pre-clip
 * norm. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/gck_test.h"

#if GCK_HAVE_OPENMP
#include <omp.h>
#endif

#define MAXL 6
#define MAXK 17
#define NW 8

typedef struct ref_layer {
    char id[32];
    size_t n;
    int k;                      /* tensors in the window */
    void *t[MAXK];              /* the tensors as given */
    int kind[MAXK];             /* their dtype: one of g_kinds */
} ref_layer;

typedef struct ref_case {
    gck_config cfg;
    double weights[NW];
    ref_layer layers[MAXL];      /* sorted by id */
    int nl;
} ref_case;

static const gck_dtype g_kinds[4] = {GCK_DTYPE_F64, GCK_DTYPE_F32, GCK_DTYPE_BF16, GCK_DTYPE_F16};

/* f32 -> bf16, round to nearest even on the bits; every NaN becomes 0xFFFF. */
static uint16_t ref_to_bf16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return 0xffff;
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float ref_from_bf16(uint16_t b)
{
    const uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, 4);
    return x;
}

/* f16 -> f32, exact (finite inputs only: the cases make no f16 NaN or Inf). */
static float ref_from_f16(uint16_t h)
{
    const int e = (h >> 10) & 31, m = h & 1023;
    const float v = e == 0 ? ldexpf((float)m, -24) : ldexpf((float)(m + 1024), e - 25);
    return h >> 15 ? -v : v;
}

/* Element i of tensor j as the f32 storage takes it (f64 rounded to float). */
static float ref_in_f32(const ref_layer *l, int j, size_t i)
{
    switch (l->kind[j]) {
    case 0: return (float)((const double *)l->t[j])[i];
    case 1: return ((const float *)l->t[j])[i];
    case 2: return ref_from_bf16(((const uint16_t *)l->t[j])[i]);
    default: return ref_from_f16(((const uint16_t *)l->t[j])[i]);
    }
}

/* The same, exactly, as f64. */
static double ref_in_f64(const ref_layer *l, int j, size_t i)
{
    return l->kind[j] == 0 ? ((const double *)l->t[j])[i] : (double)ref_in_f32(l, j, i);
}

static double ref_weight(const ref_case *rc, int j)
{
    return rc->cfg.accumulation_mode != GCK_ACCUM_WEIGHTED_MEAN ? 1.0
           : (size_t)j < rc->cfg.n_weights                     ? rc->weights[j]
                                                                : 1.0;
}

/* Element i of T(lo, hi) in f64 storage, of the tensors as given. */
static double ref_tree_f64(const ref_case *rc, const ref_layer *l, int lo, int hi, size_t i)
{
    if (hi - lo == 1) {
        const double t = ref_in_f64(l, lo, i);
        return 0.0 + t * ref_weight(rc, lo);
    }
    int p = 1;
    while (2 * p < hi - lo)
        p *= 2;
    return ref_tree_f64(rc, l, lo, lo + p, i) + ref_tree_f64(rc, l, lo + p, hi, i);
}

static float ref_tree_f32(const ref_case *rc, const ref_layer *l, int lo, int hi, size_t i)
{
    if (hi - lo == 1) {
        const float t = ref_in_f32(l, lo, i);
        return 0.0f + t * (float)ref_weight(rc, lo);
    }
    int p = 1;
    while (2 * p < hi - lo)
        p *= 2;
    return ref_tree_f32(rc, l, lo, lo + p, i) + ref_tree_f32(rc, l, lo + p, hi, i);
}

static double ref_tree_wsum(const ref_case *rc, int lo, int hi)
{
    if (hi - lo == 1)
        return 0.0 + ref_weight(rc, lo);
    int p = 1;
    while (2 * p < hi - lo)
        p *= 2;
    return ref_tree_wsum(rc, lo, lo + p) + ref_tree_wsum(rc, lo + p, hi);
}

/* The finished values of one layer in the storage dtype (f32 for BF16
 * storage: rounded by the caller). */
static void *ref_finish(const ref_case *rc, const ref_layer *l, double *wsum_out)
{
    const int f32 = rc->cfg.dtype != GCK_DTYPE_F64;
    void *r = calloc(l->n ? l->n : 1, f32 ? 4 : 8);
    double wsum = 0.0;
    const int tree = rc->cfg.reduction == GCK_REDUCE_TREE;
    if (tree) {
        wsum = ref_tree_wsum(rc, 0, l->k);
        for (size_t i = 0; i < l->n; i++) {
            if (f32)
                ((float *)r)[i] = ref_tree_f32(rc, l, 0, l->k, i);
            else
                ((double *)r)[i] = ref_tree_f64(rc, l, 0, l->k, i);
        }
    }
    for (int j = 0; !tree && j < l->k; j++) {
        const double w = rc->cfg.accumulation_mode != GCK_ACCUM_WEIGHTED_MEAN ? 1.0
                         : (size_t)j < rc->cfg.n_weights ? rc->weights[j] : 1.0;
        wsum = wsum + w;
        for (size_t i = 0; i < l->n; i++) {
            const double t64 = ref_in_f64(l, j, i);
            if (f32) {
                float *rf = r;
                const float t = ref_in_f32(l, j, i);
                rf[i] = rc->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN ? rf[i] + t * (float)w : rf[i] + t;
            } else {
                double *rd = r;
                rd[i] = rc->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN ? rd[i] + t64 * w : rd[i] + t64;
            }
        }
    }
    double div = 0.0;
    if (rc->cfg.accumulation_mode == GCK_ACCUM_MEAN)
        div = (double)l->k;
    else if (rc->cfg.accumulation_mode == GCK_ACCUM_WEIGHTED_MEAN && wsum != 0.0)
        div = wsum;
    if (div != 0.0)
        for (size_t i = 0; i < l->n; i++) {
            if (f32)
                ((float *)r)[i] = ((float *)r)[i] / (float)div;
            else
                ((double *)r)[i] = ((double *)r)[i] / div;
        }
    *wsum_out = wsum;
    return r;
}

static double ref_sumsq(const ref_case *rc, const void *v, size_t n)
{
    return rc->cfg.dtype == GCK_DTYPE_F32    ? gck_sumsq_f32(v, n)
           : rc->cfg.dtype == GCK_DTYPE_BF16 ? gck_sumsq_bf16(v, n)
                                             : gck_sumsq_f64(v, n);
}

/* BF16 storage: the stored bits of finished f32 values. */
static uint16_t *ref_round(const float *x, size_t n)
{
    uint16_t *r = malloc((n ? n : 1) * sizeof *r);
    for (size_t i = 0; i < n; i++)
        r[i] = ref_to_bf16(x[i]);
    return r;
}

static uint64_t ref_fnv_le(uint64_t h, const void *v, size_t n, size_t esz)
{
    const unsigned char *p = v;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = 0;
        if (esz == 8) {
            memcpy(&u, p + 8 * i, 8);
        } else if (esz == 2) {
            uint16_t w;
            memcpy(&w, p + 2 * i, 2);
            u = w;
        } else {
            uint32_t w;
            memcpy(&w, p + 4 * i, 4);
            u = w;
        }
        for (size_t b = 0; b < esz; b++) {
            const unsigned char byte = (unsigned char)(u >> (8 * b));
            h = gck_fnv1a64(&byte, 1, h);
        }
    }
    return h;
}

static void check_case(const gck_isa_pair *p, ref_case *rc, int threads, uint64_t seed)
{
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&rc->cfg, &cp), GCK_OK);
    /* A window that does not clip first: the flush below then does not
     * expect clipping, while the trainer path's first flush does; the two
     * ways of finishing (see gck_finish_clip) both meet the reference. */
    const double zero[1] = {0.0};
    assert_int_equal(gck_accumulate_f64(cp, "prime", zero, 1, 0), GCK_OK);
    assert_int_equal(gck_flush(cp, 0, NULL), GCK_OK);
    /* feed round-robin over layers, as a training loop would */
    for (int j = 0; j < MAXK; j++)
        for (int li = rc->nl - 1; li >= 0; li--) {
            const ref_layer *l = &rc->layers[li];
            if (j >= l->k)
                continue;
            gck_status s;
            switch (l->kind[j]) {
            case 0: s = gck_accumulate_f64(cp, l->id, l->t[j], l->n, (uint64_t)j); break;
            case 1: s = gck_accumulate_f32(cp, l->id, l->t[j], l->n, (uint64_t)j); break;
            case 2: s = gck_accumulate_bf16(cp, l->id, l->t[j], l->n, (uint64_t)j); break;
            default: s = gck_accumulate_f16(cp, l->id, l->t[j], l->n, (uint64_t)j); break;
            }
            assert_int_equal(s, GCK_OK);
        }
#if GCK_HAVE_OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, seed, &c), GCK_OK);

    /* the trainer path: one list call per micro-batch and input type, then
     * gck_flush_into one buffer per layer (layer-id order) */
    gck_checkpointer *tp = NULL;
    assert_int_equal(gck_checkpointer_create(&rc->cfg, &tp), GCK_OK);
    for (int j = 0; j < MAXK; j++)
        for (int f = 0; f < 4; f++) {
            const char *ids[MAXL];
            const void *vals[MAXL];
            size_t ns[MAXL], cnt = 0;
            for (int li = rc->nl - 1; li >= 0; li--) {
                const ref_layer *l = &rc->layers[li];
                if (j < l->k && l->kind[j] == f)
                    ids[cnt] = l->id, vals[cnt] = l->t[j], ns[cnt] = l->n, cnt++;
            }
            const uint64_t js = (uint64_t)j;
            const gck_status s =
                f == 0   ? gck_accumulate_many_f64(tp, ids, (const double *const *)vals, ns, cnt, js)
                : f == 1 ? gck_accumulate_many_f32(tp, ids, (const float *const *)vals, ns, cnt, js)
                : f == 2 ? gck_accumulate_many_bf16(tp, ids, (const uint16_t *const *)vals, ns, cnt, js)
                         : gck_accumulate_many_f16(tp, ids, (const uint16_t *const *)vals, ns, cnt, js);
            assert_int_equal(s, GCK_OK);
        }
    void *dstp[MAXL];
    size_t dstn[MAXL];
    for (int li = 0; li < rc->nl; li++) {
        dstn[li] = rc->layers[li].n;
        dstp[li] = malloc((dstn[li] ? dstn[li] : 1) * gck_dtype_size(rc->cfg.dtype));
    }
    const gck_flush_dst dst = {.tensors = {.count = (size_t)rc->nl, .data = dstp, .lens = dstn,
                                           .dtype = rc->cfg.dtype}};
    gck_clip_info info;
    assert_int_equal(gck_flush_into(tp, seed, &dst, &info, NULL), GCK_OK);
    gck_checkpointer_destroy(tp);

    const int f32 = rc->cfg.dtype == GCK_DTYPE_F32, bf16 = rc->cfg.dtype == GCK_DTYPE_BF16;
    const size_t esz = gck_dtype_size(rc->cfg.dtype);
    void *fin[MAXL], *fin32[MAXL] = {0}; /* the stored values; BF16: and the f32 ones they round */
    double sq[MAXL], total = 0.0;
    for (int li = 0; li < rc->nl; li++) {
        double wsum;
        fin[li] = ref_finish(rc, &rc->layers[li], &wsum);
        if (bf16) {
            fin32[li] = fin[li];
            fin[li] = ref_round(fin32[li], rc->layers[li].n);
        }
        sq[li] = ref_sumsq(rc, fin[li], rc->layers[li].n);
        total = total + sq[li];
    }
    const double norm = sqrt(total);
    gck_assert_same_f64(norm, info.total_norm, "%s pre-clip norm seed=%llu", p->isa->name, (unsigned long long)seed);
    gck_assert_same_f64(norm, gck_checkpoint_norm_before_clip(c), "%s checkpoint pre-clip norm", p->isa->name);
    const int clips = rc->cfg.clip_enabled && norm > rc->cfg.clip_norm && norm > 0.0;
    assert_int_equal(info.clipped, clips);
    gck_assert_same_f64(clips ? rc->cfg.clip_norm / norm : 1.0, info.coef, "%s clip coef", p->isa->name);
    gck_assert_same_f64(info.coef, gck_checkpoint_clip_coef(c), "%s checkpoint clip coef", p->isa->name);
    if (clips) {
        const double s = rc->cfg.clip_norm / norm;
        total = 0.0;
        for (int li = 0; li < rc->nl; li++) {
            for (size_t i = 0; i < rc->layers[li].n; i++) {
                if (bf16)
                    ((uint16_t *)fin[li])[i] = ref_to_bf16(((float *)fin32[li])[i] * (float)s);
                else if (f32)
                    ((float *)fin[li])[i] = ((float *)fin[li])[i] * (float)s;
                else
                    ((double *)fin[li])[i] = ((double *)fin[li])[i] * s;
            }
            sq[li] = ref_sumsq(rc, fin[li], rc->layers[li].n);
            total = total + sq[li];
        }
    }
    uint64_t h = GCK_FNV1A64_INIT;
    assert_int_equal(gck_checkpoint_num_layers(c), (size_t)rc->nl);
    for (int li = 0; li < rc->nl; li++) {
        gck_tensor_view v;
        assert_int_equal(gck_checkpoint_layer(c, (size_t)li, &v), GCK_OK);
        assert_string_equal(v.layer_id, rc->layers[li].id);
        assert_int_equal(v.n, rc->layers[li].n);
        if (memcmp(v.values, fin[li], rc->layers[li].n * esz) != 0)
            fail_msg("%s threads=%d seed=%llu mode=%d dtype=%s: layer %s values differ", p->isa->name, threads,
                     (unsigned long long)seed, (int)rc->cfg.accumulation_mode, gck_dtype_name(rc->cfg.dtype),
                     v.layer_id);
        if (memcmp(dstp[li], fin[li], rc->layers[li].n * esz) != 0)
            fail_msg("%s threads=%d seed=%llu: layer %s: gck_flush_into's values differ", p->isa->name, threads,
                     (unsigned long long)seed, v.layer_id);
        free(dstp[li]);
        gck_assert_same_f64(sqrt(sq[li]), v.norm, "%s layer %s norm", p->isa->name, v.layer_id);
        h = ref_fnv_le(h, fin[li], rc->layers[li].n, esz);
        free(fin[li]), free(fin32[li]);
    }
    gck_assert_same_f64(sqrt(total), gck_checkpoint_global_norm(c), "%s global norm seed=%llu", p->isa->name,
                        (unsigned long long)seed);
    assert_true(gck_checkpoint_checksum(c) == h);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

static void free_case(ref_case *rc)
{
    for (int li = 0; li < rc->nl; li++)
        for (int j = 0; j < rc->layers[li].k; j++)
            free(rc->layers[li].t[j]);
}

static void make_case(ref_case *rc, uint64_t seed)
{
    uint64_t st = seed * 7919 + 1;
    memset(rc, 0, sizeof *rc);
    gck_config_init(&rc->cfg);
    rc->cfg.accumulation_mode = (gck_accum_mode)(gck_test_rand(&st) % 3);
    static const gck_dtype storage[3] = {GCK_DTYPE_F64, GCK_DTYPE_F32, GCK_DTYPE_BF16};
    rc->cfg.dtype = storage[gck_test_rand(&st) % 3];
    rc->cfg.clip_enabled = (int)(gck_test_rand(&st) % 2);
    rc->cfg.clip_norm = 0.5 + (double)(gck_test_rand(&st) % 100);
    rc->weights[0] = 0.25, rc->weights[1] = 2.0, rc->weights[2] = 1.0 / 3.0;
    for (int j = 3; j < NW; j++)
        rc->weights[j] = 0.1 * (double)(gck_test_rand(&st) % 50) - 1.0;
    rc->cfg.weights = rc->weights;
    rc->cfg.n_weights = gck_test_rand(&st) % (NW + 1);
    rc->nl = 1 + (int)(gck_test_rand(&st) % MAXL);
    static const size_t lens[] = {1, 7, 64, 513, 8193, GCK_PARALLEL_MIN + 77};
    for (int li = 0; li < rc->nl; li++) {
        ref_layer *l = &rc->layers[li];
        snprintf(l->id, sizeof l->id, "layer%02d.w", li); /* already in bytewise order */
        l->n = lens[gck_test_rand(&st) % (seed % 5 == 0 ? 6 : 5)];
        /* every third case: one count for all layers (a mean then divides
         * every layer by one divisor, which flushes take a shortcut for) */
        l->k = seed % 3 == 0 && li > 0 ? rc->layers[0].k : 1 + (int)(gck_test_rand(&st) % MAXK);
        for (int j = 0; j < l->k; j++) {
            const int kind = l->kind[j] = (int)(gck_test_rand(&st) % 4);
            l->t[j] = malloc((l->n ? l->n : 1) * gck_dtype_size(g_kinds[kind]));
            if (kind == 0) {
                gck_test_fill_f64(l->t[j], l->n, GCK_K_UNIFORM, seed * 37 + (uint64_t)(li * 7 + j));
            } else if (kind == 1) {
                gck_test_fill_f32(l->t[j], l->n, GCK_K_ILL_SCALED, seed * 31 + (uint64_t)(li * 7 + j));
            } else if (kind == 2) { /* finite bf16 of every scale */
                float *x = malloc((l->n ? l->n : 1) * sizeof *x);
                gck_test_fill_f32(x, l->n, GCK_K_ILL_SCALED, seed * 41 + (uint64_t)(li * 7 + j));
                for (size_t i = 0; i < l->n; i++)
                    ((uint16_t *)l->t[j])[i] = ref_to_bf16(x[i]);
                free(x);
            } else { /* finite f16 bits, denormals included */
                for (size_t i = 0; i < l->n; i++) {
                    const uint16_t b = (uint16_t)gck_test_rand(&st);
                    ((uint16_t *)l->t[j])[i] = (b & 0x7c00) == 0x7c00 ? (uint16_t)(b & 0xbfff) : b;
                }
            }
        }
    }
}

static void test_randomized_against_reference(void **state)
{
    const gck_isa_pair *p = *state;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        ref_case rc;
        make_case(&rc, seed);
        for (int tree = 0; tree < 2; tree++) {
            rc.cfg.reduction = tree ? GCK_REDUCE_TREE : GCK_REDUCE_SEQUENTIAL;
            check_case(p, &rc, 1, seed);
            check_case(p, &rc, 3, seed);
        }
        free_case(&rc);
    }
}

GCK_PER_ISA_MAIN(NULL, NULL, GCK_ISA_TEST(test_randomized_against_reference))
