/* bench/bench_store.c - store save/restore on sequences of training snapshots, zstd alone as the peer.
 *
 * Two sequences of versions, each one optimizer step after the previous:
 *   train    - every tensor changes: weights and momentum buffers of SGD with
 *              momentum (w -= lr * m, m = 0.9 m + g), f32;
 *   finetune - the same model with all but the last two weight tensors
 *              frozen (their momentum stays zero and unchanged).
 * Names: "store_{save,restore,full_save}/<case>/1t/<elements>" and
 * "zstd_{compress,decompress}/<case>/1t/<elements>"; bytes_per_second counts
 * the snapshot's logical bytes (4 per element). On /dev/shm (tmpfs), so the
 * figures are the CPU cost, not a disk's.
 *   store_save     - a delta version against the previous one (the store's
 *                    in-memory base), after one untimed delta (steady state:
 *                    the store's buffers exist); disk_ratio = delta file bytes /
 *                    logical bytes, averaged over the timed saves;
 *   store_restore  - a delta version from disk (its full base + the delta,
 *                    every content id checked), from a store with no cache
 *                    of it;
 *   store_full_save- the same snapshot as a full version (plain safetensors);
 *   zstd_*         - the peer: the version's raw bytes through zstd at the
 *                    store's level, no XOR/shuffle; disk_ratio likewise. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradckpt/gradckpt.h>
#ifdef GCK_BENCH_ZSTD
#include <zstd.h>
#endif

#include "bench.h"

#define NVERSIONS 10 /* versions generated; 1 full + up to 9 timed deltas */
#define NLAYERS 40

typedef struct store_ctx {
    const char *name;
    int frozen;             /* finetune: only the last two layers train */
    int op;                 /* 0 save, 1 restore, 2 full_save, 3 zstd_compress, 4 zstd_decompress */
    size_t elems;           /* total f32 elements of one version */
    gck_snapshot *v[NVERSIONS];
    gck_store *store;
    char dir[128];
    int next;               /* next version index to save */
    double disk, logical;   /* sums over the timed saves */
    void *raw, *packed;     /* zstd peer: one version's bytes and their compression */
    size_t raw_len, packed_len, packed_cap;
} store_ctx;

static store_ctx *g_live;

static void rm_dir(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_store: cannot remove %s\n", dir);
}

static void store_release(store_ctx *f)
{
    gck_store_close(f->store);
    f->store = NULL;
    for (int i = 0; i < NVERSIONS; i++)
        gck_snapshot_destroy(f->v[i]), f->v[i] = NULL;
    free(f->raw), free(f->packed);
    f->raw = f->packed = NULL;
    if (f->dir[0])
        rm_dir(f->dir);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Roughly normal: sum of four uniforms in [-1, 1], scaled. */
static float gauss(uint64_t *s, float scale)
{
    float x = 0;
    for (int k = 0; k < 4; k++)
        x += (float)(rng(s) >> 40) * (2.0f / 16777216.0f) - 1.0f;
    return x * 0.5f * scale;
}

/* The run's versions: SGD with momentum on weights ~ N(0, 0.05) with
 * gradients ~ N(0, 0.01), lr 1e-2 (relative updates of about 1e-3, as in
 * training). */
static const char *make_versions(store_ctx *f)
{
    const size_t per = f->elems / 2 / NLAYERS;
    float *w = malloc(per * NLAYERS * sizeof *w), *m = calloc(per * NLAYERS, sizeof *m);
    if (w == NULL || m == NULL)
        return "out of memory";
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < per * NLAYERS; i++)
        w[i] = gauss(&s, 0.05f);
    const int64_t shape[2] = {(int64_t)(per / 256), 256};
    char name[64];
    for (int v = 0; v < NVERSIONS; v++) {
        if (gck_snapshot_create((uint64_t)v, &f->v[v]) != GCK_OK)
            return gck_last_error();
        for (int l = 0; l < NLAYERS; l++) {
            float *wl = w + per * (size_t)l, *ml = m + per * (size_t)l;
            if (v > 0 && (!f->frozen || l >= NLAYERS - 2))
                for (size_t i = 0; i < per; i++) {
                    ml[i] = 0.9f * ml[i] + gauss(&s, 0.01f);
                    wl[i] -= 1e-2f * ml[i];
                }
            snprintf(name, sizeof name, "layer%02d.weight", l);
            if (gck_snapshot_add_tensor(f->v[v], name, GCK_DTYPE_F32, shape, 2, wl) != GCK_OK)
                return gck_last_error();
            snprintf(name, sizeof name, "optim.momentum.layer%02d", l);
            if (gck_snapshot_add_tensor(f->v[v], name, GCK_DTYPE_F32, shape, 2, ml) != GCK_OK)
                return gck_last_error();
        }
    }
    free(w), free(m);
    return NULL;
}

/* A version's tensor bytes, concatenated (the zstd peer's input). */
static const char *flatten(store_ctx *f, const gck_snapshot *s)
{
    f->raw_len = f->elems * 4;
    f->raw = malloc(f->raw_len);
    if (f->raw == NULL)
        return "out of memory";
    size_t off = 0;
    for (size_t i = 0; i < gck_snapshot_num_tensors(s); i++) {
        gck_tensor_info t;
        gck_snapshot_tensor(s, i, &t);
        memcpy((char *)f->raw + off, t.data, t.nbytes);
        off += t.nbytes;
    }
    return NULL;
}

static const char *store_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    store_ctx *f = ctx;
    if (g_live != NULL && g_live != f)
        store_release(g_live);
    if (g_live == f)
        store_release(f);
    g_live = f;
    f->elems = (size_t)n;
    f->disk = f->logical = 0;
    const char *err = make_versions(f);
    if (err != NULL)
        return err;
    snprintf(f->dir, sizeof f->dir, "/dev/shm/gck_bench_store_%s_%d", f->name, f->op);
    rm_dir(f->dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.max_checkpoints = 1000; /* no eviction inside the timed loop */
    c.policy.keep_every_n = 0;
    c.policy.delta_threshold_bytes = 0;
    if (gck_store_open(f->dir, &c, &f->store) != GCK_OK)
        return gck_last_error();
    switch (f->op) {
    case 0: /* v0 full and v1 delta, untimed (the first delta sizes the store's
             * buffers); each timed save is a delta in the steady state */
        for (int v = 0; v < 2; v++)
            if (gck_store_save(f->store, f->v[v], NULL, 0, NULL) != GCK_OK)
                return gck_last_error();
        f->next = 2;
        break;
    case 1: /* v0 full, v1 delta, v2 delta (the cache): restore v1 from disk */
        for (int v = 0; v < 3; v++)
            if (gck_store_save(f->store, f->v[v], NULL, 0, NULL) != GCK_OK)
                return gck_last_error();
        break;
    case 2:
        c.policy.keep_every_n = 1; /* every version full */
        gck_store_close(f->store);
        if (gck_store_open(f->dir, &c, &f->store) != GCK_OK)
            return gck_last_error();
        f->next = 1;
        break;
    default: {
#ifdef GCK_BENCH_ZSTD
        if ((err = flatten(f, f->v[1])) != NULL)
            return err;
        f->packed_cap = ZSTD_compressBound(f->raw_len);
        f->packed = malloc(f->packed_cap);
        if (f->packed == NULL)
            return "out of memory";
        f->packed_len = ZSTD_compress(f->packed, f->packed_cap, f->raw, f->raw_len, c.zstd_level);
        if (ZSTD_isError(f->packed_len))
            return "zstd failed";
#else
        (void)flatten;
        return "built without zstd";
#endif
    }
    }
    return NULL;
}

static double store_body(void *ctx, int64_t n)
{
    (void)n;
    store_ctx *f = ctx;
    switch (f->op) {
    case 0:
    case 2: {
        uint64_t v = 0;
        if (f->next >= NVERSIONS)
            abort(); /* more iterations than versions: see the spec's iterations */
        if (gck_store_save(f->store, f->v[f->next++], NULL, 0, &v) != GCK_OK) {
            fprintf(stderr, "%s\n", gck_last_error());
            abort();
        }
        f->disk += (double)gck_store_version_disk_bytes(f->store, v);
        f->logical += (double)f->elems * 4;
        return (double)v;
    }
    case 1: {
        gck_snapshot *s = NULL;
        if (gck_store_restore(f->store, 2, &s) != GCK_OK) {
            fprintf(stderr, "%s\n", gck_last_error());
            abort();
        }
        const double k = (double)gck_snapshot_num_tensors(s);
        gck_snapshot_destroy(s);
        return k;
    }
#ifdef GCK_BENCH_ZSTD
    case 3: {
        gck_store_config c;
        gck_store_config_init(&c);
        const size_t r = ZSTD_compress(f->packed, f->packed_cap, f->raw, f->raw_len, c.zstd_level);
        f->disk += (double)r;
        f->logical += (double)f->raw_len;
        return (double)r;
    }
    default: {
        const size_t r = ZSTD_decompress(f->raw, f->raw_len, f->packed, f->packed_len);
        if (ZSTD_isError(r))
            abort();
        return (double)r;
    }
#else
    default:
        return 0;
#endif
    }
}

static size_t store_report(void *ctx, const char **names, double *values, size_t cap)
{
    store_ctx *f = ctx;
    if (cap < 1 || f->logical == 0)
        return 0;
    names[0] = "disk_ratio";
    values[0] = f->disk / f->logical;
    return 1;
}

void gck_bench_register_store(int threads)
{
    static const char *const ops[5] = {"store_save", "store_restore", "store_full_save", "zstd_compress",
                                       "zstd_decompress"};
    static store_ctx ctx[2][2][5]; /* [threads - 1][case][op] */
    static const int64_t size = 16 << 20; /* 64 MiB of f32 per version */
    for (int c = 0; c < 2; c++)
        for (int o = 0; o < 5; o++) {
            if (threads != 1 && o != 0)
                continue; /* encoding spreads tensors over threads; the rest runs on one */
#ifndef GCK_BENCH_ZSTD
            if (o >= 3)
                continue; /* the zstd-alone peer needs zstd */
#endif
            store_ctx *f = &ctx[threads - 1][c][o];
            *f = (store_ctx){.name = c ? "finetune" : "train", .frozen = c, .op = o};
            char name[96];
            snprintf(name, sizeof name, "%s/%s/%dt", ops[o], f->name, threads);
            gck_bench_register(&(gck_bench_spec){
                .name = name, .body = store_body, .prepare = store_prepare, .ctx = f, .threads = threads,
                .bytes_per_elem = 4.0, .label = "f32", .sizes = &size, .nsizes = 1, .report = store_report,
                /* saves consume versions; a fixed count keeps the store small */
                .iterations = o == 0 ? NVERSIONS - 2 : o == 2 ? NVERSIONS - 1 : 0});
        }
}
