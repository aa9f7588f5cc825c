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
 *                    store's level, no XOR/shuffle; disk_ratio likewise.
 *
 * And the durable save of a small trainer state on the real disk (below:
 * "small_save/..."), where fsync costs what it costs. */
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/vfs.h>
#define GCK_TMPFS_MAGIC 0x01021994
#endif

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
    char cmd[1024];
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

static void register_small_save(void);

void gck_bench_register_store(int threads)
{
    if (threads == 1)
        register_small_save();
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

/* ---- small_save: a trainer's durable save of a 1.44 MB state ---------------------- */

/* The state of a 120 K-parameter GPT-style model (16 parameter tensors) and
 * its AdamW moments: three contiguous f32 buffers (weights, m, v) of 120000
 * elements, 48 tensors, 1.44 MB, one AdamW step apart from save to save.
 * Each iteration saves the next step's state durably, on the disk (not
 * tmpfs), in one of these ways:
 *   small_save/raw_durable    - the bare protocol on the same bytes: a new
 *                               file, three write() calls, fsync, rename over
 *                               the target, fsync of the directory;
 *   small_save/snapshot       - what a trainer does with gck_snapshot_save:
 *                               create a snapshot, add the 48 tensors by
 *                               reference, set step, lr and loader position
 *                               as typed metadata, save, destroy;
 *   small_save/store/<case>   - the same snapshot into a gck_store:
 *                               full    (every version full, ten kept: each
 *                                        save also evicts the oldest),
 *                               delta   (every version a delta of the previous,
 *                                        none evicted: the manifest grows to
 *                                        52 versions),
 *                               default (gck_store_config_init: every 5th
 *                                        version full, 10 kept, so every timed
 *                                        save also evicts; the evicted version
 *                                        stays as a hidden base while a
 *                                        retained delta reads it, no file is
 *                                        rewritten).
 * Divide each by raw_durable of the same run (bench/ratios.py does). The
 * directory is $GCK_BENCH_DISK_DIR, else the binary's directory (the build
 * tree); a directory on tmpfs is refused. disk_bytes: bytes written per save
 * (data file, and the manifest for the store). */
#define SS_PARAMS 120000
#define SS_TENSORS 16
#define SS_ITERS 40      /* timed saves per run */
#define SS_WARMUP 12     /* untimed saves first: the store's buffers exist, the default policy evicts */
#define SS_STEPS (SS_ITERS + SS_WARMUP)

static const struct {
    const char *name;
    int64_t rows, cols; /* cols 0: a vector */
} ss_shapes[SS_TENSORS] = {
    {"wte", 512, 64},          {"wpe", 64, 64},           {"h0.ln_1.weight", 64, 0}, {"h0.ln_1.bias", 64, 0},
    {"h0.attn.c_attn.weight", 64, 192}, {"h0.attn.c_attn.bias", 192, 0}, {"h0.attn.c_proj.weight", 64, 64},
    {"h0.attn.c_proj.bias", 64, 0}, {"h0.ln_2.weight", 64, 0}, {"h0.ln_2.bias", 64, 0},
    {"h0.mlp.c_fc.weight", 64, 512}, {"h0.mlp.c_fc.bias", 512, 0}, {"h0.mlp.c_proj.weight", 512, 64},
    {"h0.mlp.c_proj.bias", 64, 0}, {"ln_f.weight", 64, 0},  {"ln_f.bias", 64, 0}};

typedef struct ss_ctx {
    int op; /* 0 raw_durable, 1 snapshot, 2 store full, 3 store delta, 4 store default */
    gck_store *store;
    int next;
    double bytes;
} ss_ctx;

static float *g_ss_state[SS_STEPS][3]; /* [step][weights, m, v] */
static char g_ss_dir[512];
static char g_ss_names[3][SS_TENSORS][64];

/* AdamW (lr 1e-3, betas 0.9/0.999, eps 1e-8, weight decay 0.01) on
 * gradients ~ N(0, 0.01): the state of SS_STEPS consecutive steps. */
static const char *ss_make_states(void)
{
    if (g_ss_state[0][0] != NULL)
        return NULL;
    float w[SS_PARAMS], m[SS_PARAMS], v[SS_PARAMS];
    uint64_t s = 0x2545f4914f6cdd1dULL;
    for (size_t i = 0; i < SS_PARAMS; i++)
        w[i] = gauss(&s, 0.02f), m[i] = 0, v[i] = 0;
    double b1t = 1, b2t = 1;
    for (int t = 0; t < SS_STEPS; t++) {
        b1t *= 0.9, b2t *= 0.999;
        for (size_t i = 0; i < SS_PARAMS; i++) {
            const float g = gauss(&s, 0.01f);
            m[i] = 0.9f * m[i] + 0.1f * g;
            v[i] = 0.999f * v[i] + 0.001f * g * g;
            const float mh = m[i] / (float)(1 - b1t), vh = v[i] / (float)(1 - b2t);
            w[i] -= 1e-3f * (mh / (sqrtf(vh) + 1e-8f) + 0.01f * w[i]);
        }
        const float *src[3] = {w, m, v};
        for (int k = 0; k < 3; k++) {
            g_ss_state[t][k] = malloc(sizeof w);
            if (g_ss_state[t][k] == NULL)
                return "out of memory";
            memcpy(g_ss_state[t][k], src[k], sizeof w);
        }
    }
    static const char *const pfx[3] = {"", "adam.m.", "adam.v."};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < SS_TENSORS; j++)
            snprintf(g_ss_names[k][j], sizeof g_ss_names[k][j], "%s%s", pfx[k], ss_shapes[j].name);
    return NULL;
}

static void ss_remove_dir(void)
{
    if (g_ss_dir[0] != '\0')
        rm_dir(g_ss_dir);
}

/* The benchmark directory: on a real disk, created once, removed at exit. */
static const char *ss_dir(void)
{
    if (g_ss_dir[0] != '\0')
        return NULL;
    char base[384];
    const char *env = getenv("GCK_BENCH_DISK_DIR");
    if (env != NULL && env[0] != '\0') {
        snprintf(base, sizeof base, "%s", env);
    } else {
        const ssize_t k = readlink("/proc/self/exe", base, sizeof base - 1);
        if (k <= 0)
            return "cannot find the binary's directory: set GCK_BENCH_DISK_DIR";
        base[k] = '\0';
        char *slash = strrchr(base, '/');
        if (slash != NULL)
            *slash = '\0';
    }
#ifdef __linux__
    struct statfs fs;
    if (statfs(base, &fs) == 0 && fs.f_type == GCK_TMPFS_MAGIC)
        return "the benchmark directory is on tmpfs, where fsync costs nothing: set GCK_BENCH_DISK_DIR to a disk";
#endif
    snprintf(g_ss_dir, sizeof g_ss_dir, "%s/gck_small_save.%ld", base, (long)getpid());
    rm_dir(g_ss_dir);
    if (mkdir(g_ss_dir, 0777) != 0) {
        g_ss_dir[0] = '\0';
        return "cannot create the benchmark directory";
    }
    gck_bench_context("small_save_dir", g_ss_dir);
    atexit(ss_remove_dir);
    return NULL;
}

/* What a trainer builds at each save: the state by reference, typed fields. */
static gck_snapshot *ss_snapshot(int step)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create((uint64_t)step, &s) != GCK_OK)
        return NULL;
    int ok = 1;
    for (int k = 0; k < 3 && ok; k++) {
        const float *p = g_ss_state[step][k];
        for (int j = 0; j < SS_TENSORS && ok; j++) {
            const int64_t shape[2] = {ss_shapes[j].rows, ss_shapes[j].cols};
            const size_t ndim = ss_shapes[j].cols ? 2 : 1;
            ok = gck_snapshot_add_tensor_ref(s, g_ss_names[k][j], GCK_DTYPE_F32, shape, ndim, p) == GCK_OK;
            p += shape[0] * (ndim == 2 ? shape[1] : 1);
        }
    }
    ok = ok && gck_snapshot_set_metadata_u64(s, "train.step", (uint64_t)step) == GCK_OK &&
         gck_snapshot_set_metadata_f64(s, "train.lr", 1e-3) == GCK_OK &&
         gck_snapshot_set_metadata_u64(s, "train.loader_pos", (uint64_t)step * 4096) == GCK_OK;
    if (!ok) {
        gck_snapshot_destroy(s);
        return NULL;
    }
    return s;
}

static int ss_raw_save(int step)
{
    char tmp[600], dst[600];
    snprintf(tmp, sizeof tmp, "%s/.raw.tmp", g_ss_dir);
    snprintf(dst, sizeof dst, "%s/raw.bin", g_ss_dir);
    const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    int bad = 0;
    for (int k = 0; k < 3; k++)
        bad |= write(fd, g_ss_state[step][k], SS_PARAMS * sizeof(float)) != (ssize_t)(SS_PARAMS * sizeof(float));
    bad |= fsync(fd) != 0;
    bad |= close(fd) != 0;
    bad |= rename(tmp, dst) != 0;
    const int dfd = open(g_ss_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bad |= dfd < 0 || fsync(dfd) != 0;
    if (dfd >= 0)
        close(dfd);
    return bad ? -1 : 0;
}

/* One save of `step` the benchmark's way; bytes written to *bytes. */
static const char *ss_save(ss_ctx *f, int step, double *bytes)
{
    if (f->op == 0) {
        *bytes = 3.0 * SS_PARAMS * sizeof(float);
        return ss_raw_save(step) == 0 ? NULL : "raw durable write failed";
    }
    gck_snapshot *s = ss_snapshot(step);
    if (s == NULL)
        return gck_last_error();
    gck_status st;
    if (f->op == 1) {
        char p[600];
        snprintf(p, sizeof p, "%s/state.safetensors", g_ss_dir);
        st = gck_snapshot_save(s, p);
        struct stat sb;
        *bytes = st == GCK_OK && stat(p, &sb) == 0 ? (double)sb.st_size : 0;
    } else {
        uint64_t v = 0;
        st = gck_store_save(f->store, s, NULL, 0, &v);
        char m[600];
        snprintf(m, sizeof m, "%s/store/manifest.json", g_ss_dir);
        struct stat sb;
        *bytes = (double)gck_store_version_disk_bytes(f->store, v) + (stat(m, &sb) == 0 ? (double)sb.st_size : 0);
    }
    gck_snapshot_destroy(s);
    return st == GCK_OK ? NULL : gck_last_error();
}

static const char *ss_prepare(void *ctx, int64_t n, int threads)
{
    (void)n, (void)threads;
    ss_ctx *f = ctx;
    const char *err = ss_make_states();
    if (err == NULL)
        err = ss_dir();
    if (err != NULL)
        return err;
    gck_store_close(f->store);
    f->store = NULL;
    char sd[600];
    snprintf(sd, sizeof sd, "%s/store", g_ss_dir);
    rm_dir(sd);
    if (f->op >= 2) {
        gck_store_config c;
        gck_store_config_init(&c);
        if (f->op == 2)
            c.policy.keep_every_n = 1; /* ten kept: each save also evicts (unlinks) the oldest */
        else if (f->op == 3)
            c.policy.keep_every_n = 0, c.policy.max_checkpoints = 1000, c.policy.delta_threshold_bytes = 0;
        if (gck_store_open(sd, &c, &f->store) != GCK_OK)
            return gck_last_error();
    }
    f->bytes = 0;
    double b;
    for (f->next = 0; f->next < SS_WARMUP; f->next++)
        if ((err = ss_save(f, f->next, &b)) != NULL)
            return err;
    return NULL;
}

static double ss_body(void *ctx, int64_t n)
{
    (void)n;
    ss_ctx *f = ctx;
    if (f->next >= SS_STEPS)
        abort(); /* more iterations than prepared steps: see .iterations */
    double b = 0;
    const char *err = ss_save(f, f->next++, &b);
    if (err != NULL) {
        fprintf(stderr, "small_save: %s\n", err);
        abort();
    }
    f->bytes += b;
    return b;
}

static size_t ss_report(void *ctx, const char **names, double *values, size_t cap)
{
    ss_ctx *f = ctx;
    if (cap < 1)
        return 0;
    names[0] = "disk_bytes";
    values[0] = f->bytes / SS_ITERS;
    return 1;
}

static void register_small_save(void)
{
    static ss_ctx ctx[5];
    static const char *const names[5] = {"small_save/raw_durable", "small_save/snapshot", "small_save/store/full",
                                         "small_save/store/delta", "small_save/store/default"};
    static const int64_t size = 3 * SS_PARAMS;
    for (int o = 0; o < 5; o++) {
        ctx[o] = (ss_ctx){.op = o};
        char name[96];
        snprintf(name, sizeof name, "%s/1t", names[o]);
        gck_bench_register(&(gck_bench_spec){.name = name, .body = ss_body, .prepare = ss_prepare, .ctx = &ctx[o],
                                             .threads = 1, .bytes_per_elem = 4.0, .label = "f32 on disk",
                                             .sizes = &size, .nsizes = 1, .report = ss_report,
                                             .iterations = SS_ITERS});
    }
}
