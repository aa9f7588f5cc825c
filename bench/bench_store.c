/* bench/bench_store.c - the store's save and restore on sequences of training states, zstd alone as a peer.
 *
 * Four sequences of NVERSIONS versions, generated here (deterministic, no
 * files), each version the state some optimizer steps after the previous:
 *   adamw    - what the demo (examples/train) stores: weights, AdamW's m and
 *              v, f32, 40 layers of three tensors, versions 20 steps apart
 *              (its --save-every), the first one after 20 steps. Gradients
 *              g = s_l * a_i * (mu_i + n_{i,t}): a per-tensor scale s_l
 *              (log-uniform over 1e-4..1e-2: layers differ), a per-coordinate
 *              scale a_i (log-normal, sigma 0.75: some coordinates see much
 *              larger gradients than others, as in real runs, which spreads
 *              v over exponents), a persistent per-coordinate mean mu_i
 *              (N(0, 1): a signal as large as the mini-batch
 *              noise) and the noise n_{i,t} ~ N(0, 1), new every step.
 *              AdamW as PyTorch's: lr 1e-3, betas 0.9/0.999, eps 1e-8,
 *              weight decay 0.01, bias correction; weights start ~ N(0, 0.06^2)
 *              (He-initialised layers of fan-in ~500, as the demo's MLP);
 *   sgd      - every tensor changes each step: weights and momentum buffers
 *              of SGD with momentum (w -= lr * m, m = 0.9 m + g), f32,
 *              one step apart;
 *   finetune - the same with all but the last two weight tensors frozen
 *              (their momentum stays zero and unchanged);
 *   bf16     - the adamw sequence stored in bf16 (every tensor of every
 *              version rounded to nearest-even from the f32 state, as a
 *              mixed-precision run's bf16 copy of it): 2 bytes per element.
 *
 * Names "<op>/<sequence>/<t>t/<elements>", elements per version (16 Mi: 64
 * MiB of f32; 1/64 of that under GCK_BENCH_SMOKE), store ops on 1 and 2
 * OpenMP threads:
 *   store_save        - a delta version against the previous one (the
 *                       store's in-memory base), after one untimed delta (the
 *                       store's buffers exist); the timed saves are versions
 *                       2..9; each iteration builds the snapshot the way a
 *                       trainer does (tensors by reference: hashing them is
 *                       part of the save), saves it, destroys it;
 *   store_restore     - version 1 (a delta on the full version 0), every
 *                       content id checked; the store holds version 2 in
 *                       memory, so version 1 is rebuilt backwards from it
 *                       (version 2's delta undone; version 0's file not
 *                       read): rolling back one save; after one untimed
 *                       restore;
 *   store_full_save   - versions 1..9 each as a full version with
 *                       compress_full (coded byte planes), after version 0
 *                       untimed;
 *   store_full_restore- version 1 saved so (compress_full), from disk;
 *   store_restore_into- store_restore's version 1 through
 *                       gck_store_restore_into (forwards: version 0's file
 *                       read, version 1's delta decoded), into buffers the caller
 *                       holds (allocated and touched once, untimed): a
 *                       trainer resuming into its own parameters, without
 *                       the new snapshot's page faults and frees;
 *   store_plain_save  - versions 1..9 each as a plain safetensors full
 *                       version (1t), after version 0 untimed: the store's
 *                       cheapest write of the bytes;
 *   zstd_{compress,decompress}/<seq>/{delta,full}/1t - the peer: zstd at the
 *                       store's level (1) alone on the same bytes, tensor by
 *                       tensor: the XOR of each version with the previous
 *                       one (versions 2..9) / each version's values (1..9).
 * bytes_per_second counts logical bytes (the version's tensor bytes).
 * Counters: logical_bytes (one version); disk_ratio, bytes on disk (the
 * version's file; zstd: its output) / logical bytes, averaged over the
 * versions the benchmark writes (or for restores, of the restored one);
 * entropy_ratio, the order-0 entropy of the byte planes of each tensor
 * (XOR with the previous version for deltas, the values for full versions)
 * / logical bytes over the same versions: the limit of a per-plane order-0
 * coder. On /dev/shm (tmpfs): the CPU cost, not a disk's
 * (GCK_BENCH_STORE_ROOT=DIR: in DIR instead).
 *
 * GCK_BENCH_STORE_EXPORT=DIR also writes each sequence's versions, as
 * generated, to DIR/<sequence>/v<k>.safetensors (bench/store_peers_seq.py
 * runs ZipNN on them).
 *
 * And the durable save of a small trainer state on the real disk (below:
 * "small_save/..."), where fsync costs what it costs. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <string.h>
#include <sys/stat.h>
#include <pthread.h>
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

#define NVERSIONS 10 /* versions generated per sequence */
#define NLAYERS 40
#define ADAMW_EVERY 20 /* AdamW steps between versions (the demo's --save-every) */

static void rm_dir(const char *dir)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_store: cannot remove %s\n", dir);
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

/* Counter-based: a value from (stream, index, step) alone, so the adamw
 * sequence is the same on any thread count. */
static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* ~ N(0, 1) from one hash: four 16-bit uniforms summed (Irwin-Hall). */
static float normal_of(uint64_t h)
{
    const float u = (float)(h & 0xffff) + (float)((h >> 16) & 0xffff) + (float)((h >> 32) & 0xffff) +
                    (float)(h >> 48);
    return (u * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

enum { SEQ_ADAMW, SEQ_SGD, SEQ_FINETUNE, SEQ_BF16, NSEQ };
static const char *const g_seq_names[NSEQ] = {"adamw", "sgd", "finetune", "bf16"};

/* One sequence's versions: each a contiguous buffer of the tensors' bytes. */
typedef struct seq_tensor {
    char name[64];
    size_t off, nbytes;
    int64_t shape[2];
} seq_tensor;

typedef struct seq_data {
    int id;                       /* SEQ_*, -1: none */
    size_t elems;                 /* the size asked for */
    gck_dtype dtype;
    size_t esz, logical;          /* bytes per element, tensor bytes of one version */
    size_t nt;
    seq_tensor t[3 * NLAYERS];
    unsigned char *v[NVERSIONS];
    double h_delta[NVERSIONS];    /* entropy of v[k] ^ v[k-1] / logical (k >= 1) */
    double h_full[NVERSIONS];     /* entropy of v[k] / logical */
} seq_data;

static seq_data g_seq = {.id = -1};

static void seq_free(void)
{
    for (int k = 0; k < NVERSIONS; k++)
        free(g_seq.v[k]), g_seq.v[k] = NULL;
    g_seq.id = -1;
}

static void seq_add(seq_data *q, const char *name, size_t per)
{
    seq_tensor *t = &q->t[q->nt++];
    snprintf(t->name, sizeof t->name, "%s", name);
    t->off = q->nt > 1 ? t[-1].off + t[-1].nbytes : 0;
    t->nbytes = per * q->esz;
    t->shape[0] = (int64_t)(per / 256), t->shape[1] = 256;
}

/* sgd / finetune: w and m of 40 layers, one SGD-with-momentum step apart;
 * weights ~ N(0, 0.05), gradients ~ N(0, 0.01), lr 1e-2 (relative updates
 * of about 1e-3, as in training). */
static const char *gen_sgd(seq_data *q, int frozen)
{
    const size_t per = q->elems / 2 / NLAYERS / 256 * 256;
    char name[64];
    for (int l = 0; l < NLAYERS; l++) {
        snprintf(name, sizeof name, "layer%02d.weight", l);
        seq_add(q, name, per);
        snprintf(name, sizeof name, "optim.momentum.layer%02d", l);
        seq_add(q, name, per);
    }
    q->logical = 2 * NLAYERS * per * 4;
    float *w = malloc(per * NLAYERS * sizeof *w), *m = calloc(per * NLAYERS, sizeof *m);
    if (w == NULL || m == NULL) {
        free(w), free(m);
        return "out of memory";
    }
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    for (size_t i = 0; i < per * NLAYERS; i++)
        w[i] = gauss(&s, 0.05f);
    for (int v = 0; v < NVERSIONS; v++) {
        for (int l = 0; l < NLAYERS; l++) {
            float *wl = w + per * (size_t)l, *ml = m + per * (size_t)l;
            if (v > 0 && (!frozen || l >= NLAYERS - 2))
                for (size_t i = 0; i < per; i++) {
                    ml[i] = 0.9f * ml[i] + gauss(&s, 0.01f);
                    wl[i] -= 1e-2f * ml[i];
                }
            memcpy(q->v[v] + q->t[2 * l].off, wl, per * 4);
            memcpy(q->v[v] + q->t[2 * l + 1].off, ml, per * 4);
        }
    }
    free(w), free(m);
    return NULL;
}

/* adamw / bf16: see the file's comment. */
static const char *gen_adamw(seq_data *q, int bf16)
{
    const size_t per = q->elems / 3 / NLAYERS / 256 * 256, P = per * NLAYERS;
    static const char *const pfx[3] = {"", "adam.m.", "adam.v."};
    char name[64];
    for (int k = 0; k < 3; k++)
        for (int l = 0; l < NLAYERS; l++) {
            snprintf(name, sizeof name, "%slayer%02d.weight", pfx[k], l);
            seq_add(q, name, per);
        }
    q->logical = 3 * P * q->esz;
    float *st = malloc(3 * P * sizeof *st); /* w, m, v */
    if (st == NULL)
        return "out of memory";
    float *w = st, *m = st + P, *v = st + 2 * P;
    const long lp = (long)P;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < lp; i++) {
        w[i] = 0.06f * normal_of(mix(0x5eed0000ULL ^ ((uint64_t)i << 8)));
        m[i] = v[i] = 0;
    }
    float scale[NLAYERS];
    for (int l = 0; l < NLAYERS; l++)
        scale[l] = powf(10.0f, -4.0f + 2.0f * (float)(mix(0x1a7e5ULL + (uint64_t)l) >> 40) / 16777216.0f);
    double b1t = 1, b2t = 1;
    for (int ver = 0; ver < NVERSIONS; ver++) {
        float c1[ADAMW_EVERY], c2[ADAMW_EVERY];
        for (int t = 0; t < ADAMW_EVERY; t++) {
            b1t *= 0.9, b2t *= 0.999;
            c1[t] = (float)(1 / (1 - b1t)), c2[t] = (float)(1 / (1 - b2t));
        }
        const uint64_t t0 = (uint64_t)ver * ADAMW_EVERY;
#pragma omp parallel for schedule(static)
        for (long i = 0; i < lp; i++) {
            const uint64_t hi = mix((uint64_t)i * 3 + 1);
            const float a = scale[i / (long)per] * expf(0.75f * normal_of(hi)), mu = 1.0f * normal_of(mix(hi));
            float wi = w[i], mi = m[i], vi = v[i];
            for (int t = 0; t < ADAMW_EVERY; t++) {
                const float g = a * (mu + normal_of(mix(hi ^ ((t0 + (uint64_t)t + 1) << 40))));
                mi = 0.9f * mi + 0.1f * g;
                vi = 0.999f * vi + 0.001f * g * g;
                wi -= 1e-3f * (mi * c1[t] / (sqrtf(vi * c2[t]) + 1e-8f) + 0.01f * wi);
            }
            w[i] = wi, m[i] = mi, v[i] = vi;
        }
        if (bf16)
            gck_convert_f32_to_bf16((uint16_t *)(void *)q->v[ver], st, 3 * P);
        else
            memcpy(q->v[ver], st, 3 * P * sizeof *st);
    }
    free(st);
    return NULL;
}

/* Order-0 entropy, in bytes, of the esz byte planes of n elements at p (XOR
 * with b when b is not NULL). */
static double planes_entropy(const unsigned char *p, const unsigned char *b, size_t n, size_t esz)
{
    static size_t cnt[8][256];
    memset(cnt, 0, sizeof cnt);
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < esz; k++)
            cnt[k][p[i * esz + k] ^ (b ? b[i * esz + k] : 0)]++;
    double bits = 0;
    for (size_t k = 0; k < esz; k++)
        for (int c = 0; c < 256; c++)
            if (cnt[k][c] != 0)
                bits -= (double)cnt[k][c] * log2((double)cnt[k][c] / (double)n);
    return bits / 8;
}

static const char *seq_export(const seq_data *q);
static gck_snapshot *seq_snapshot(const seq_data *q, int k);

/* The sequence `id` at `elems` elements per version, generated on first use
 * (one sequence is held at a time: a full run needs 640 MiB for it). */
static const char *seq_get(int id, size_t elems)
{
    if (g_seq.id == id && g_seq.elems == elems)
        return NULL;
    seq_free();
    seq_data *q = &g_seq;
    memset(q, 0, sizeof *q);
    q->id = -1;
    q->elems = elems;
    q->dtype = id == SEQ_BF16 ? GCK_DTYPE_BF16 : GCK_DTYPE_F32;
    q->esz = gck_dtype_size(q->dtype);
    for (int k = 0; k < NVERSIONS; k++)
        if ((q->v[k] = malloc(elems * q->esz)) == NULL)
            return "out of memory";
    const char *err = id == SEQ_ADAMW || id == SEQ_BF16 ? gen_adamw(q, id == SEQ_BF16) : gen_sgd(q, id == SEQ_FINETUNE);
    if (err != NULL)
        return err;
    for (int k = 0; k < NVERSIONS; k++) {
        double hd = 0, hf = 0;
        for (size_t j = 0; j < q->nt; j++) {
            const size_t n = q->t[j].nbytes / q->esz, off = q->t[j].off;
            hf += planes_entropy(q->v[k] + off, NULL, n, q->esz);
            if (k > 0)
                hd += planes_entropy(q->v[k] + off, q->v[k - 1] + off, n, q->esz);
        }
        q->h_full[k] = hf / (double)q->logical, q->h_delta[k] = hd / (double)q->logical;
    }
    q->id = id;
    return seq_export(q);
}

/* Version k as a trainer builds it at a save: its tensors by reference, in
 * one call (their ids hashed on the OpenMP threads). */
static gck_snapshot *seq_snapshot(const seq_data *q, int k)
{
    gck_snapshot *s = NULL;
    gck_tensor_ref *refs = malloc((q->nt + 1) * sizeof *refs);
    if (refs == NULL || gck_snapshot_create((uint64_t)k, &s) != GCK_OK) {
        free(refs);
        return NULL;
    }
    for (size_t j = 0; j < q->nt; j++)
        refs[j] = (gck_tensor_ref){q->t[j].name, q->dtype, q->t[j].shape, 2, q->v[k] + q->t[j].off};
    if (gck_snapshot_add_tensors_ref(s, refs, q->nt) != GCK_OK) {
        gck_snapshot_destroy(s);
        s = NULL;
    }
    free(refs);
    return s;
}

/* GCK_BENCH_STORE_EXPORT: the versions as safetensors files, once per
 * sequence and size in a process. */
static const char *seq_export(const seq_data *q)
{
    static size_t done[NSEQ];
    const char *dir = getenv("GCK_BENCH_STORE_EXPORT");
    if (dir == NULL || dir[0] == '\0' || done[q->id] == q->elems)
        return NULL;
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, g_seq_names[q->id]);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return "GCK_BENCH_STORE_EXPORT: cannot create the directory";
    if (mkdir(p, 0777) != 0 && errno != EEXIST)
        return "GCK_BENCH_STORE_EXPORT: cannot create the sequence's directory";
    for (int k = 0; k < NVERSIONS; k++) {
        gck_snapshot *s = seq_snapshot(q, k);
        snprintf(p, sizeof p, "%s/%s/v%d.safetensors", dir, g_seq_names[q->id], k);
        const gck_status st = s != NULL ? gck_snapshot_save(s, p) : GCK_ERR_NO_MEMORY;
        gck_snapshot_destroy(s);
        if (st != GCK_OK)
            return "GCK_BENCH_STORE_EXPORT: cannot write a version";
    }
    done[q->id] = q->elems;
    return NULL;
}

enum { OP_SAVE, OP_RESTORE, OP_FULL_SAVE, OP_FULL_RESTORE, OP_RESTORE_INTO, OP_PLAIN_SAVE, OP_ZC_DELTA, OP_ZD_DELTA,
       OP_ZC_FULL, OP_ZD_FULL, NOPS };
static const char *const g_op_names[NOPS] = {"store_save",         "store_restore",    "store_full_save",
                                             "store_full_restore", "store_restore_into", "store_plain_save",
                                             "zstd_compress",      "zstd_decompress",  "zstd_compress",
                                             "zstd_decompress"};
#define GCK_IS_RESTORE(op) ((op) == OP_RESTORE || (op) == OP_FULL_RESTORE || (op) == OP_RESTORE_INTO)

typedef struct store_ctx {
    int seq, op;
    gck_store *store;
    char dir[128];
    int next, first;        /* next version to write; the first one the timed loop writes */
    double disk, logical;   /* sums over the timed saves */
    double h;               /* entropy_ratio of what the benchmark writes (or restores) */
    double restored_disk;   /* restores: the version's file bytes */
    uint64_t restored;      /* restores: the version restored */
    /* restore_into: the version's names, and buffers of their sizes */
    char **names;
    void **dsts;
    size_t *sizes, nitems;
    /* zstd peer: every tensor of versions first..9 (XOR with the previous
     * one for deltas), compressed one by one */
    unsigned char *raw;     /* (NVERSIONS - first) x logical bytes */
    unsigned char *packed;  /* their compressed tensors, each at its bound */
    size_t *plen;           /* compressed length of each (version, tensor) */
    size_t pcap;            /* bound of one version */
} store_ctx;

static store_ctx *g_live;

static void store_release(store_ctx *f)
{
    gck_store_close(f->store);
    f->store = NULL;
    for (size_t i = 0; i < f->nitems; i++)
        free(f->names[i]), free(f->dsts[i]);
    free(f->names), free(f->dsts), free(f->sizes);
    f->names = NULL, f->dsts = NULL, f->sizes = NULL, f->nitems = 0;
    free(f->raw), free(f->packed), free(f->plen);
    f->raw = f->packed = NULL, f->plen = NULL;
    if (f->dir[0])
        rm_dir(f->dir);
    f->dir[0] = '\0';
}

/* At exit: the last benchmark's store directory and the sequence. */
static void store_at_exit(void)
{
    if (g_live != NULL)
        store_release(g_live);
    g_live = NULL;
    seq_free();
}

/* restore_into's destinations: one buffer per tensor of s, of its size,
 * holding its values (so every page is touched before the timed loop). */
static const char *into_buffers(store_ctx *f, const gck_snapshot *s)
{
    const size_t n = gck_snapshot_num_tensors(s);
    f->names = calloc(n ? n : 1, sizeof *f->names);
    f->dsts = calloc(n ? n : 1, sizeof *f->dsts);
    f->sizes = calloc(n ? n : 1, sizeof *f->sizes);
    if (f->names == NULL || f->dsts == NULL || f->sizes == NULL)
        return "out of memory";
    f->nitems = n; /* store_release frees what was made (the rest NULL) */
    for (size_t i = 0; i < n; i++) {
        gck_tensor_info t;
        if (gck_snapshot_tensor(s, i, &t) != GCK_OK)
            return gck_last_error();
        f->names[i] = strdup(t.name);
        f->dsts[i] = malloc(t.nbytes ? t.nbytes : 1);
        f->sizes[i] = t.nbytes;
        if (f->names[i] == NULL || f->dsts[i] == NULL)
            return "out of memory";
        memcpy(f->dsts[i], t.data, t.nbytes);
    }
    return NULL;
}

static const char *save_version(store_ctx *f, int k, uint64_t *v)
{
    gck_snapshot *s = seq_snapshot(&g_seq, k);
    if (s == NULL)
        return gck_last_error();
    const gck_status st = gck_store_save(f->store, s, NULL, 0, v);
    gck_snapshot_destroy(s);
    return st == GCK_OK ? NULL : gck_last_error();
}

#ifdef GCK_BENCH_ZSTD
static const char *zstd_prepare(store_ctx *f)
{
    const seq_data *q = &g_seq;
    const int nv = NVERSIONS - f->first;
    size_t bound = 0;
    for (size_t j = 0; j < q->nt; j++)
        bound += ZSTD_compressBound(q->t[j].nbytes);
    f->pcap = bound;
    f->raw = malloc((size_t)nv * q->logical);
    f->packed = malloc((size_t)nv * bound);
    f->plen = malloc((size_t)nv * q->nt * sizeof *f->plen);
    if (f->raw == NULL || f->packed == NULL || f->plen == NULL)
        return "out of memory";
    const int delta = f->op == OP_ZC_DELTA || f->op == OP_ZD_DELTA;
    for (int k = 0; k < nv; k++) {
        const unsigned char *cur = q->v[f->first + k], *prev = delta ? q->v[f->first + k - 1] : NULL;
        unsigned char *r = f->raw + (size_t)k * q->logical, *out = f->packed + (size_t)k * bound;
        for (size_t i = 0; i < q->logical; i++)
            r[i] = cur[i] ^ (prev ? prev[i] : 0);
        for (size_t j = 0; j < q->nt; j++) {
            const size_t b = ZSTD_compressBound(q->t[j].nbytes);
            const size_t z = ZSTD_compress(out, b, r + q->t[j].off, q->t[j].nbytes, 1);
            if (ZSTD_isError(z))
                return "zstd failed";
            f->plen[(size_t)k * q->nt + j] = z;
            out += b;
        }
    }
    return NULL;
}

/* One version through zstd, tensor by tensor: compress (checking the size
 * of prepare's) or decompress (checking the bytes' length). */
static double zstd_body(store_ctx *f, int k)
{
    const seq_data *q = &g_seq;
    unsigned char *r = f->raw + (size_t)k * q->logical, *p = f->packed + (size_t)k * f->pcap;
    size_t total = 0;
    for (size_t j = 0; j < q->nt; j++) {
        const size_t b = ZSTD_compressBound(q->t[j].nbytes), len = f->plen[(size_t)k * q->nt + j];
        const size_t z = f->op == OP_ZC_DELTA || f->op == OP_ZC_FULL
                             ? ZSTD_compress(p, b, r + q->t[j].off, q->t[j].nbytes, 1)
                             : ZSTD_decompress(r + q->t[j].off, q->t[j].nbytes, p, len);
        if (ZSTD_isError(z) || z != (f->op == OP_ZC_DELTA || f->op == OP_ZC_FULL ? len : q->t[j].nbytes))
            abort();
        total += len;
        p += b;
    }
    return (double)total;
}
#endif

static const char *store_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    store_ctx *f = ctx;
    static int registered;
    if (!registered && atexit(store_at_exit) == 0)
        registered = 1;
    if (g_live != NULL)
        store_release(g_live);
    g_live = f;
    const char *err = seq_get(f->seq, (size_t)n);
    if (err != NULL)
        return err;
    const seq_data *q = &g_seq;
    f->disk = f->logical = 0;
    const int delta = f->op == OP_SAVE || f->op == OP_ZC_DELTA || f->op == OP_ZD_DELTA;
    f->first = delta ? 2 : 1;
    f->next = f->first;
    f->h = 0;
    for (int k = f->first; k < NVERSIONS; k++)
        f->h += (delta ? q->h_delta[k] : q->h_full[k]) / (NVERSIONS - f->first);
    if (f->op == OP_RESTORE || f->op == OP_RESTORE_INTO)
        f->h = q->h_delta[1];
    if (f->op == OP_FULL_RESTORE)
        f->h = q->h_full[1];
    if (f->op >= OP_ZC_DELTA) {
#ifdef GCK_BENCH_ZSTD
        f->dir[0] = '\0';
        return zstd_prepare(f);
#else
        return "built without zstd";
#endif
    }
    const char *root = getenv("GCK_BENCH_STORE_ROOT");
    snprintf(f->dir, sizeof f->dir, "%s/gck_bench_store.%ld", root != NULL && root[0] ? root : "/dev/shm",
             (long)getpid());
    rm_dir(f->dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.max_checkpoints = 1000; /* no eviction inside the timed loop */
    c.policy.keep_every_n = f->op == OP_SAVE || f->op == OP_RESTORE || f->op == OP_RESTORE_INTO ? 0 : 1;
    c.policy.delta_threshold_bytes = 0;
    c.compress_full = f->op == OP_FULL_SAVE || f->op == OP_FULL_RESTORE;
    if (gck_store_open(f->dir, &c, &f->store) != GCK_OK)
        return gck_last_error();
    switch (f->op) {
    case OP_SAVE: /* v0 full and v1 delta, untimed (the first delta sizes the store's buffers) */
        for (int k = 0; k < 2; k++)
            if ((err = save_version(f, k, NULL)) != NULL)
                return err;
        break;
    case OP_RESTORE:      /* v0 full, v1 delta (restored), v2 delta (the in-memory copy) */
    case OP_RESTORE_INTO:
    case OP_FULL_RESTORE: /* v0, v1 and v2 full: restore v1 (v0's momentum may be all zero) */
        for (int k = 0; k < 3; k++)
            if ((err = save_version(f, k, k == 1 ? &f->restored : NULL)) != NULL)
                return err;
        f->restored_disk = (double)gck_store_version_disk_bytes(f->store, f->restored);
        if (!gck_bench_smoke() || f->op == OP_RESTORE_INTO) {
            /* one untimed restore: the first one after the saves costs 3-4 x the next */
            gck_snapshot *s = NULL;
            if (gck_store_restore(f->store, f->restored, &s) != GCK_OK)
                return gck_last_error();
            err = f->op == OP_RESTORE_INTO ? into_buffers(f, s) : NULL;
            gck_snapshot_destroy(s);
            if (err != NULL)
                return err;
        }
        break;
    default: /* full and plain saves: v0 untimed (the codec's buffers exist), then v1..v9 */
        if ((err = save_version(f, 0, NULL)) != NULL)
            return err;
        break;
    }
    return NULL;
}

static double store_body(void *ctx, int64_t n)
{
    (void)n;
    store_ctx *f = ctx;
    if (f->op == OP_RESTORE_INTO) {
        if (gck_store_restore_into(f->store, f->restored, (const char *const *)f->names, f->dsts, f->sizes,
                                   f->nitems, NULL) != GCK_OK) {
            fprintf(stderr, "%s\n", gck_last_error());
            abort();
        }
        return (double)f->nitems;
    }
    if (f->op == OP_RESTORE || f->op == OP_FULL_RESTORE) {
        gck_snapshot *s = NULL;
        if (gck_store_restore(f->store, f->restored, &s) != GCK_OK) {
            fprintf(stderr, "%s\n", gck_last_error());
            abort();
        }
        const double k = (double)gck_snapshot_num_tensors(s);
        gck_snapshot_destroy(s);
        return k;
    }
    if (f->next >= NVERSIONS)
        abort(); /* more iterations than versions: see .iterations */
    const int k = f->next++;
    double bytes = 0;
    if (f->op >= OP_ZC_DELTA) {
#ifdef GCK_BENCH_ZSTD
        bytes = zstd_body(f, k - f->first);
#endif
    } else {
        uint64_t v = 0;
        const char *err = save_version(f, k, &v);
        if (err != NULL) {
            fprintf(stderr, "%s\n", err);
            abort();
        }
        bytes = (double)gck_store_version_disk_bytes(f->store, v);
    }
    if (f->op != OP_ZD_DELTA && f->op != OP_ZD_FULL) {
        f->disk += bytes;
        f->logical += (double)g_seq.logical;
    }
    return bytes;
}

static size_t store_report(void *ctx, const char **names, double *values, size_t cap)
{
    store_ctx *f = ctx;
    if (cap < 3 || g_seq.id != f->seq)
        return 0;
    size_t k = 0;
    names[k] = "logical_bytes", values[k++] = (double)g_seq.logical;
    names[k] = "entropy_ratio", values[k++] = f->h;
    if (GCK_IS_RESTORE(f->op))
        names[k] = "disk_ratio", values[k++] = f->restored_disk / (double)g_seq.logical;
    else if (f->logical > 0)
        names[k] = "disk_ratio", values[k++] = f->disk / f->logical;
    return k;
}

static void register_small_save(void);
static void register_partial_restore(const int64_t *size);

void gck_bench_register_store(int threads)
{
    if (threads == 1)
        register_small_save();
    static store_ctx ctx[2][NSEQ][NOPS]; /* [threads - 1][sequence][op] */
    static int64_t size;
    /* 64 MiB - 16 KiB of f32 per version (smoke: 1/64 of it): a multiple of
     * 2 x 40 and 3 x 40 tensors of 256-element rows, so every element counts */
    size = (gck_bench_smoke() ? 8 : 546) * 3 * NLAYERS * 256;
    if (threads == 1)
        register_partial_restore(&size);
    for (int q = 0; q < NSEQ; q++)
        for (int o = 0; o < NOPS; o++) {
            if (threads != 1 && o >= OP_PLAIN_SAVE)
                continue; /* the store's OpenMP threads only */
#ifndef GCK_BENCH_ZSTD
            if (o >= OP_ZC_DELTA)
                continue; /* the zstd-alone peer needs zstd */
#endif
            store_ctx *f = &ctx[threads - 1][q][o];
            *f = (store_ctx){.seq = q, .op = o};
            char name[96];
            if (o >= OP_ZC_DELTA)
                snprintf(name, sizeof name, "%s/%s/%s/%dt", g_op_names[o], g_seq_names[q],
                         o <= OP_ZD_DELTA ? "delta" : "full", threads);
            else
                snprintf(name, sizeof name, "%s/%s/%dt", g_op_names[o], g_seq_names[q], threads);
            const int delta = o == OP_SAVE || o == OP_ZC_DELTA || o == OP_ZD_DELTA;
            gck_bench_register(&(gck_bench_spec){
                .name = name, .body = store_body, .prepare = store_prepare, .ctx = f, .threads = threads,
                .bytes_per_elem = q == SEQ_BF16 ? 2.0 : 4.0, .label = q == SEQ_BF16 ? "bf16" : "f32",
                .sizes = &size, .nsizes = 1, .report = store_report,
                /* writes consume versions; restores repeat */
                .iterations = GCK_IS_RESTORE(o) ? 0 : NVERSIONS - (delta ? 2 : 1)});
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
 *   small_save/raw_protocol   - the store's protocol on the same bytes, no
 *                               store: a new data file written and fsynced
 *                               on a helper thread while a 32 KiB manifest
 *                               temp is written and fsynced here, the
 *                               manifest renamed, the directory fsynced
 *                               (what any store/<case> cannot go below);
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
    int op; /* 0 raw_durable, 1 snapshot, 2 store full, 3 store delta, 4 store default, 5 raw_protocol */
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

/* A new file at path holding step's state (three write() calls); its fd,
 * or -1 (*bad set) when it cannot be created or written. */
static int ss_write_state(const char *path, int step, int *bad)
{
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    *bad |= fd < 0;
    for (int k = 0; k < 3 && fd >= 0; k++)
        *bad |= write(fd, g_ss_state[step][k], SS_PARAMS * sizeof(float)) != (ssize_t)(SS_PARAMS * sizeof(float));
    return fd;
}

/* rename tmp over dst, then fsync the benchmark directory; nonzero on failure */
static int ss_commit(const char *tmp, const char *dst)
{
    int bad = rename(tmp, dst) != 0;
    const int dfd = open(g_ss_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bad |= dfd < 0 || fsync(dfd) != 0;
    if (dfd >= 0)
        close(dfd);
    return bad;
}

static int ss_raw_save(int step)
{
    char tmp[600], dst[600];
    snprintf(tmp, sizeof tmp, "%s/.raw.tmp", g_ss_dir);
    snprintf(dst, sizeof dst, "%s/raw.bin", g_ss_dir);
    int bad = 0;
    const int fd = ss_write_state(tmp, step, &bad);
    if (fd < 0)
        return -1;
    bad |= fsync(fd) != 0;
    bad |= close(fd) != 0;
    bad |= ss_commit(tmp, dst);
    return bad ? -1 : 0;
}

#define SS_MANIFEST_BYTES 32768

typedef struct ss_sync_job {
    int fd, err;
} ss_sync_job;

static void *ss_sync_run(void *arg)
{
    ss_sync_job *j = arg;
    j->err = fsync(j->fd) != 0;
    return NULL;
}

/* The store's fewest fsyncs (issue 13): data file and manifest temp synced
 * at once, rename, directory. */
static int ss_protocol_save(int step)
{
    static const char manifest[SS_MANIFEST_BYTES]; /* its bytes do not matter, its size does */
    char data[600], tmp[600], dst[600];
    snprintf(data, sizeof data, "%s/data.%d.bin", g_ss_dir, step);
    snprintf(tmp, sizeof tmp, "%s/.manifest.tmp", g_ss_dir);
    snprintf(dst, sizeof dst, "%s/manifest.json", g_ss_dir);
    int bad = 0;
    const int fd = ss_write_state(data, step, &bad);
    if (fd < 0)
        return -1;
    ss_sync_job job = {fd, 0};
    pthread_t helper;
    const int threaded = pthread_create(&helper, NULL, ss_sync_run, &job) == 0;
    const int mfd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    bad |= mfd < 0 || write(mfd, manifest, sizeof manifest) != (ssize_t)sizeof manifest || fsync(mfd) != 0;
    if (mfd >= 0)
        bad |= close(mfd) != 0;
    if (threaded)
        pthread_join(helper, NULL);
    else
        ss_sync_run(&job);
    bad |= job.err | (close(fd) != 0);
    bad |= ss_commit(tmp, dst);
    if (step >= 10) { /* keep ten data files, as the store's policy does */
        snprintf(data, sizeof data, "%s/data.%d.bin", g_ss_dir, step - 10);
        unlink(data);
    }
    return bad ? -1 : 0;
}

/* One save of `step` the benchmark's way; bytes written to *bytes. */
static const char *ss_save(ss_ctx *f, int step, double *bytes)
{
    if (f->op == 0) {
        *bytes = 3.0 * SS_PARAMS * sizeof(float);
        return ss_raw_save(step) == 0 ? NULL : "raw durable write failed";
    }
    if (f->op == 5) {
        *bytes = 3.0 * SS_PARAMS * sizeof(float) + SS_MANIFEST_BYTES;
        return ss_protocol_save(step) == 0 ? NULL : "the protocol's durable writes failed";
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
    for (int k = 0; f->op == 5 && k < SS_STEPS; k++) { /* every data file new, as the store's */
        char data[600];
        snprintf(data, sizeof data, "%s/data.%d.bin", g_ss_dir, k);
        unlink(data);
    }
    if (f->op >= 2 && f->op <= 4) {
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
    static ss_ctx ctx[2][6];
    static const char *const names[6] = {"small_save/raw_durable", "small_save/snapshot", "small_save/store/full",
                                         "small_save/store/delta", "small_save/store/default",
                                         "small_save/raw_protocol"};
    static const int64_t size = 3 * SS_PARAMS;
    /* 1 and 2 threads: the store may encode a delta's tensors on OpenMP threads */
    for (int t = 1; t <= 2; t++) {
        for (int o = 0; o < 6; o++) {
            ctx[t - 1][o] = (ss_ctx){.op = o};
            char name[96];
            snprintf(name, sizeof name, "%s/%dt", names[o], t);
            gck_bench_register(&(gck_bench_spec){.name = name, .body = ss_body, .prepare = ss_prepare,
                                                 .ctx = &ctx[t - 1][o], .threads = t, .bytes_per_elem = 4.0,
                                                 .label = "f32 on disk", .sizes = &size, .nsizes = 1,
                                                 .report = ss_report, .iterations = SS_ITERS});
        }
    }
}

/* ---- store_partial_restore: one tensor of a delta chain's last version, from disk --- */

/* The adamw sequence's ten versions (the first full, each next a delta of
 * the one before) in a store on the disk (the small_save directory); each
 * iteration drops the store's files from the page cache (posix_fadvise
 * DONTNEED) and rebuilds one tensor (a weight matrix, 1/120 of the
 * version) of the last version with gck_store_restore_select on a
 * read-only handle (nothing of it in memory), counting what the process
 * read from the disk (/proc/self/io read_bytes: readahead included).
 * Counters: read_bytes (per restore), version_bytes (the version's logical
 * bytes), tensor_bytes. Issue 17's target: a 1 MB tensor of a 500 MB
 * version reads < 2 MB and takes < 5 ms. */
typedef struct pr_ctx {
    gck_store *ro;
    char dir[600];
    int depth;        /* the restored version's chain: 1 (the full version), 2 (its first delta) or 10 */
    uint64_t version;
    const char *name;
    double tensor_bytes, read, n;
} pr_ctx;

/* /proc/self/io's read_bytes, or -1. */
static double pr_read_bytes(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    double v = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, "read_bytes:", 11) == 0)
            v = strtod(line + 11, NULL);
    if (f != NULL)
        fclose(f);
    return v;
}

static void pr_drop_cache(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        char p[1024];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        const int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
    }
    if (d != NULL)
        closedir(d);
}

static const char *pr_prepare(void *ctx, int64_t n, int threads)
{
    (void)threads;
    pr_ctx *f = ctx;
    const char *err = seq_get(SEQ_ADAMW, (size_t)n);
    if (err == NULL)
        err = ss_dir();
    if (err != NULL)
        return err;
    gck_store_close(f->ro);
    f->ro = NULL;
    snprintf(f->dir, sizeof f->dir, "%s/partial", g_ss_dir);
    rm_dir(f->dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.max_checkpoints = 1000, c.policy.keep_every_n = 0, c.policy.delta_threshold_bytes = 0;
    gck_store *w = NULL;
    if (gck_store_open(f->dir, &c, &w) != GCK_OK)
        return gck_last_error();
    for (int k = 0; k < NVERSIONS; k++) {
        gck_snapshot *s = seq_snapshot(&g_seq, k);
        uint64_t v = 0;
        const gck_status st = s != NULL ? gck_store_save(w, s, NULL, 0, &v) : GCK_ERR_NO_MEMORY;
        if (k + 1 == f->depth)
            f->version = v;
        gck_snapshot_destroy(s);
        if (st != GCK_OK) {
            gck_store_close(w);
            return gck_last_error();
        }
    }
    if (gck_store_close(w) != GCK_OK || gck_store_open_readonly(f->dir, &f->ro) != GCK_OK)
        return gck_last_error();
    const size_t j = g_seq.nt / 2; /* a weight matrix of the middle layer */
    f->name = g_seq.t[j].name;
    f->tensor_bytes = (double)g_seq.t[j].nbytes;
    f->read = f->n = 0;
    return NULL;
}

static double pr_body(void *ctx, int64_t n)
{
    (void)n;
    pr_ctx *f = ctx;
    pr_drop_cache(f->dir);
    const double r0 = pr_read_bytes();
    gck_snapshot *s = NULL;
    if (gck_store_restore_select(f->ro, f->version, &f->name, 1, &s) != GCK_OK) {
        fprintf(stderr, "store_partial_restore: %s\n", gck_last_error());
        abort();
    }
    f->read += pr_read_bytes() - r0, f->n++;
    gck_snapshot_destroy(s);
    return f->tensor_bytes;
}

static size_t pr_report(void *ctx, const char **names, double *values, size_t cap)
{
    pr_ctx *f = ctx;
    if (cap < 3)
        return 0;
    names[0] = "read_bytes", values[0] = f->n > 0 ? f->read / f->n : 0;
    names[1] = "version_bytes", values[1] = (double)g_seq.logical;
    names[2] = "tensor_bytes", values[2] = f->tensor_bytes;
    return 3;
}

/* "store_partial_restore/...": the last of the ten versions (a chain of a
 * full version and nine deltas, each holding a payload of the tensor);
 * "store_partial_restore_full/...": the full version; "..._delta1/...": the
 * delta on it. */
static void register_partial_restore(const int64_t *size)
{
    static pr_ctx ctx[3] = {{.depth = NVERSIONS}, {.depth = 1}, {.depth = 2}};
    static const char *const names[3] = {"store_partial_restore/adamw/1t", "store_partial_restore_full/adamw/1t",
                                         "store_partial_restore_delta1/adamw/1t"};
    for (int i = 0; i < 3; i++)
        gck_bench_register(&(gck_bench_spec){.name = names[i], .body = pr_body, .prepare = pr_prepare,
                                             .ctx = &ctx[i], .threads = 1, .label = "f32 on disk", .sizes = size,
                                             .nsizes = 1, .report = pr_report});
}
