/* core/store_delta.c - lossless per-tensor deltas: XOR with the base, byte-plane shuffle, entropy coding per plane. */
#include "store_delta_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jansson.h>
#ifdef GCK_HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode: Huffman-coded literals at the fastest levels */
#include <zstd.h>
#endif
#ifdef GCK_HAVE_HTSCODECS
#include <htscodecs/rANS_static4x16.h>
#endif

#include <gradckpt/kernels.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "alloc_internal.h"
#include "checksum_internal.h"
#include "io_internal.h"
#include "json_text_internal.h"
#include "snapshot_internal.h"
#include "threads_internal.h"

/* 4: as 3, and a plane may be "zrans": per chunk, the bitmap of the bytes
 * that differ from the plane's most common one (zstd's Huffman stage, or
 * rANS) and those bytes (rANS order 0; gck_sparse_split). 3 (still read):
 * as 2, and a plane may be "rans": rANS order-0 blocks, one per chunk of
 * the plane. 2 (still read): an item's planes are one payload tensor
 * "d/<i>", described by [codec, length] pairs; 1 (still read): one tensor
 * "d/<i>.<p>" per plane, described by [tensor, codec]. One tensor per item
 * instead of one per byte plane makes the file's header and description a
 * quarter as long, which for a state of many small tensors was most of a
 * delta save's CPU. */
#define GCK_DELTA_FORMAT 5
/* 5: as 4, and an item may say "rot": true - its planes are of its values
 * rotated left one bit (gck_xor_shuffle_rot). Descriptions without such an
 * item still say 4, so older readers keep reading them. Raw f32 and bf16
 * items of both signs (gck_mixed_signs) are rotated: the whole exponent
 * then sits in the top byte plane and the sign at the bottom of the lowest
 * (the benchmark's AdamW state: the planes' order-0 entropy 0.8310 -> 0.8291
 * of the bytes; an SGD state 0.8316 -> 0.8258), which took coded full
 * versions from 0.2-0.7 % above ZipNN's size to 0.1-0.2 % below it. XOR
 * items are not rotated: the XOR of two versions gains less (adamw) or
 * loses (sgd). */

/* A plane's codec is chosen from windows of it spread over its length: up
 * to GCK_PLANE_WINDOWS of GCK_PLANE_WINDOW bytes. 2 KiB in all: with 8 KiB
 * the sampling took twice the rANS coding's CPU on the 12-32 KB planes of a
 * small state (small_save/store/delta, Zen 5: 1.60-1.68 ms of CPU per save
 * against 1.49-1.53 with 2 KiB), and every store benchmark's delta and full
 * sizes stayed within 0.05 % (adamw delta 0.78015 -> 0.77994 of the bytes). */
#define GCK_PLANE_WINDOWS 4
#define GCK_PLANE_WINDOW 512
/* Planes shorter than this are stored raw: a coder's tables cost more. */
#define GCK_PLANE_MIN 256
/* Per-plane choice (GCK_STORE_CODER_AUTO), from the sampled order-0 entropy
 * H (fraction of 8 bits) and the fraction rep of bytes equal to the one
 * before, against sum q^2 (what independent bytes would give), as
 * runs = (rep - sum q^2) / (1 - sum q^2): 0 for independent bytes, 1 for
 * nothing but long runs:
 *   H above the configured maximum      raw (nothing to gain);
 *   runs > GCK_RUN_EXCESS               zstd at the configured level (long
 *                                       runs: frozen rows, sparse updates);
 *   H < GCK_RANS_MAX                    rANS order-0 (Huffman needs at least
 *                                       one bit per byte: 1.36x the entropy
 *                                       on an XOR delta's exponent plane);
 *   otherwise                           zstd's Huffman stage alone (its
 *                                       fastest level: next to no match search),
 *                                       within 3 % of the entropy there. */
#define GCK_RUN_EXCESS 0.5
#define GCK_RANS_MAX 0.40
#define GCK_HUFF_LEVEL (-100)
#ifdef GCK_HAVE_HTSCODECS
/* Order 0, 32-way interleaved (the SIMD coders) for a block of at least
 * GCK_RANS_X32_MIN bytes; below it the 4-way form (0): the 32-way one's
 * setup and its 32 final states cost more than they save (htscodecs on the
 * Intel VM, a low-entropy plane: 7.5 KB coded in 11 us instead of 30 and
 * 6 % smaller; 32 KB in 48 us instead of 56; at 48 KB the 32-way form is
 * ahead). The stream records its form, so readers need no change. */
#define GCK_RANS_X32_MIN 40960
#define GCK_RANS_ORDER_FOR(k) ((k) < GCK_RANS_X32_MIN ? 0 : RANS_ORDER_X32)
#endif
/* A plane rANS would code is coded "zrans" when its most common byte is at
 * least this fraction of the sample: the bitmap and the other bytes are
 * fewer symbols for the same order-0 entropy (the chain rule), and rANS
 * costs per symbol. An XOR delta's exponent plane (the demo's AdamW
 * sequence: 69 % zeros, 16.7 MB): 12 ms instead of 22 to code on the Intel
 * VM, 0.7 % larger (two frequency tables per chunk). */
#define GCK_ZRANS_MIN_MODE 0.5

/* What one encoding thread compresses with. */
typedef struct gck_zslot {
#ifdef GCK_HAVE_ZSTD
    ZSTD_CCtx *cctx;  /* the configured level */
    ZSTD_CCtx *hctx;  /* Huffman literals only */
    ZSTD_CCtx *bctx;  /* the same for zrans bitmaps (a context of its own: alternating with
                       * planes 8x their size, one context re-sized itself on every call) */
#endif
    unsigned char *scratch; /* one compressed plane, copied back over the plane */
    size_t scratch_cap;
    unsigned char *sparse;  /* zrans: one chunk's bitmap and values */
} gck_zslot;

/* What one decoding thread decodes with (slot 0 also: big-endian encoding). */
typedef struct gck_dslot {
#ifdef GCK_HAVE_ZSTD
    ZSTD_DCtx *dc[8];            /* one stream per byte plane (decoding goes chunk by chunk) */
#endif
    unsigned char *chunk;        /* one chunk of planes */
    unsigned char *le_a, *le_b;  /* big-endian CPUs: little-endian copies of a chunk */
    unsigned char *sparse;       /* zrans: one chunk's bitmap and values */
    unsigned char *pay;          /* an item's payload, read from its file (gck_read_payload) */
    size_t pay_cap;
} gck_dslot;

struct gck_delta_codec {
    int level;          /* 0: no zstd (every plane raw or rANS) */
    double entropy_max; /* planes above this order-0 entropy (fraction of 8 bits) are stored raw */
    int coder;          /* GCK_STORE_CODER_* */
    gck_zslot *slots;       /* one per encoding thread */
    int nslots;
    gck_dslot *ds;          /* one per decoding thread (made as needed; ds[0] always) */
    int nds;
    unsigned char *arena;        /* the payloads of one delta, reused by the next */
    size_t arena_cap, arena_used;
    double klogk[GCK_PLANE_WINDOWS * GCK_PLANE_WINDOW + 1]; /* k log2 k: a sample's entropy without a log2 per byte value */
};

int gck_delta_have_zstd(void)
{
#ifdef GCK_HAVE_ZSTD
    return 1;
#else
    return 0;
#endif
}

int gck_delta_have_rans(void)
{
#ifdef GCK_HAVE_HTSCODECS
    return 1;
#else
    return 0;
#endif
}

static void gck_dslot_free(gck_dslot *d)
{
#ifdef GCK_HAVE_ZSTD
    for (int p = 0; p < 8; p++)
        ZSTD_freeDCtx(d->dc[p]);
#endif
    free(d->chunk), free(d->le_a), free(d->le_b), free(d->sparse), free(d->pay);
}

/* A zrans chunk of k bytes: its bitmap, then room for its values. */
#define GCK_SPARSE_BYTES (GCK_DELTA_CHUNK + GCK_DELTA_CHUNK / 8 + 64)

/* At least `want` decoding slots. */
static gck_status gck_ensure_dslots(gck_delta_codec *c, int want)
{
    if (want <= c->nds)
        return GCK_OK;
    gck_dslot *nd = gck_realloc(c->ds, (size_t)want * sizeof *nd);
    if (nd == NULL)
        return gck_fail_oom("delta decoding slots", (size_t)want * sizeof *nd);
    c->ds = nd;
    const size_t bytes = (size_t)GCK_DELTA_CHUNK * 8;
    for (; c->nds < want; c->nds++) {
        gck_dslot *d = &c->ds[c->nds];
        memset(d, 0, sizeof *d);
        d->chunk = gck_aligned_alloc(bytes);
        d->le_a = gck_aligned_alloc(bytes);
        d->le_b = gck_aligned_alloc(bytes);
        d->sparse = gck_aligned_alloc(GCK_SPARSE_BYTES);
        int ok = d->chunk && d->le_a && d->le_b && d->sparse;
#ifdef GCK_HAVE_ZSTD
        for (int p = 0; ok && p < 8; p++)
            ok = (d->dc[p] = ZSTD_createDCtx()) != NULL;
#endif
        if (!ok) {
            gck_dslot_free(d);
            return gck_fail_oom("delta codec buffers", 3 * bytes);
        }
    }
    return GCK_OK;
}

gck_status gck_delta_codec_create(int level, double entropy_max, int coder, gck_delta_codec **out)
{
    gck_delta_codec *c = gck_calloc(1, sizeof *c);
    if (c == NULL)
        return gck_fail_oom("delta codec", sizeof *c);
    c->level = gck_delta_have_zstd() ? level : 0;
    c->entropy_max = entropy_max;
    c->coder = coder;
    for (size_t k = 1; k < sizeof c->klogk / sizeof c->klogk[0]; k++)
        c->klogk[k] = (double)k * log2((double)k);
    const gck_status st = gck_ensure_dslots(c, 1);
    if (st != GCK_OK) {
        gck_delta_codec_destroy(c);
        return st;
    }
    *out = c;
    return GCK_OK;
}

void gck_delta_codec_destroy(gck_delta_codec *c)
{
    if (c == NULL)
        return;
    for (int t = 0; t < c->nds; t++)
        gck_dslot_free(&c->ds[t]);
    free(c->ds);
    for (int t = 0; t < c->nslots; t++) {
#ifdef GCK_HAVE_ZSTD
        ZSTD_freeCCtx(c->slots[t].cctx);
        ZSTD_freeCCtx(c->slots[t].hctx);
        ZSTD_freeCCtx(c->slots[t].bctx);
#endif
        free(c->slots[t].scratch);
        free(c->slots[t].sparse);
    }
    free(c->slots);
    free(c->arena);
    free(c);
}

/* k elements at src as little-endian bytes: src itself on little-endian
 * CPUs, a swapped copy in buf on big-endian ones. */
static const void *gck_le_view(const void *src, size_t k, size_t esz, unsigned char *buf)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (src != NULL && esz > 1) {
        const unsigned char *s = src;
        for (size_t e = 0; e < k * esz; e += esz)
            for (size_t b = 0; b < esz; b++)
                buf[e + b] = s[e + esz - 1 - b];
        return buf;
    }
#else
    (void)k, (void)esz, (void)buf;
#endif
    return src;
}

/* One tensor or blob, seen the same way. */
typedef struct gck_item {
    const char *name;
    int blob;
    gck_dtype dtype;
    const int64_t *shape;
    size_t ndim;
    const void *data;
    size_t nbytes;
    const char *cid;
} gck_item;

static gck_item gck_item_of_tensor(const gck_snap_tensor *t)
{
    return (gck_item){.name = t->name, .dtype = t->dtype, .shape = t->shape, .ndim = t->ndim, .data = t->data,
                      .nbytes = t->nbytes, .cid = t->cid};
}

static gck_item gck_item_of_blob(const gck_snap_blob *b)
{
    return (gck_item){.name = b->name, .blob = 1, .dtype = GCK_DTYPE_U8, .ndim = 1, .data = b->data,
                      .nbytes = b->len, .cid = b->cid};
}

/* The base's item of the same kind and name, or 0. */
static int gck_base_item(const gck_snapshot *base, int blob, const char *name, gck_item *out)
{
    if (base == NULL)
        return 0;
    const gck_named_vec *v = blob ? &base->blobs : &base->tensors;
    int found;
    const size_t i = gck_named_find(v, name, &found);
    if (found)
        *out = blob ? gck_item_of_blob(v->items[i]) : gck_item_of_tensor(v->items[i]);
    return found;
}

static int gck_same_shape(const gck_item *a, const gck_item *b)
{
    if (a->blob || b->blob)
        return a->nbytes == b->nbytes;
    return a->ndim == b->ndim && (a->ndim == 0 || memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) == 0);
}


enum { GCK_PLANE_RAW, GCK_PLANE_ZSTD, GCK_PLANE_RANS, GCK_PLANE_ZRANS };
static const char *const gck_plane_names[] = {"raw", "zstd", "rans", "zrans"};

/* What a sample of a plane says about it. */
typedef struct gck_plane_stats {
    double h;      /* order-0 entropy, fraction of 8 bits */
    double runs;   /* repeats of the previous byte beyond what independent bytes give, 0..1 (above) */
    double top;    /* the fraction of the most common byte */
    uint8_t mode;  /* that byte */
} gck_plane_stats;

/* The sample's stats; a sample whose entropy is above hmax (stored raw
 * whatever its runs) skips counting them. k log k comes from a table: a
 * log2 per byte value made this half the cost of choosing the codecs, which
 * was 4 % of a delta save. */
static gck_plane_stats gck_sample_plane(const gck_delta_codec *c, const unsigned char *p, size_t n, double hmax)
{
    uint32_t h[4][256];
    memset(h, 0, sizeof h);
    size_t total = 0;
    const size_t w = n < GCK_PLANE_WINDOW ? n : GCK_PLANE_WINDOW;
    const size_t nw = n / GCK_PLANE_WINDOW < GCK_PLANE_WINDOWS ? (n / GCK_PLANE_WINDOW ? n / GCK_PLANE_WINDOW : 1)
                                                                : GCK_PLANE_WINDOWS;
#define GCK_WINDOW(k) (p + (nw > 1 ? (n - w) / (nw - 1) * (k) : 0))
    for (size_t k = 0; k < nw; k++) {
        const unsigned char *q = GCK_WINDOW(k);
        size_t i = 0;
        for (; i + 4 <= w; i += 4) /* four tables: no store-to-load chains on runs of one value */
            h[0][q[i]]++, h[1][q[i + 1]]++, h[2][q[i + 2]]++, h[3][q[i + 3]]++;
        for (; i < w; i++)
            h[0][q[i]]++;
        total += w;
    }
    double klogk = 0.0, sq = 0.0;
    uint32_t top = 0;
    uint8_t mode = 0;
    for (int v = 0; v < 256; v++) {
        const uint32_t k = h[0][v] + h[1][v] + h[2][v] + h[3][v];
        if (k > top)
            top = k, mode = (uint8_t)v;
        klogk += c->klogk[k];
        sq += (double)k * (double)k;
    }
    const double t = (double)total;
    gck_plane_stats ps = {.h = total ? (log2(t) - klogk / t) / 8.0 : 0.0,
                          .top = total ? (double)top / t : 0.0,
                          .mode = mode};
    if (ps.h > hmax)
        return ps;
    size_t reps = 0, pairs = 0;
    for (size_t k = 0; k < nw; k++) {
        const unsigned char *q = GCK_WINDOW(k);
        for (size_t i = 1; i < w; i++)
            reps += q[i] == q[i - 1];
        pairs += w - 1;
    }
#undef GCK_WINDOW
    sq = total ? sq / (t * t) : 1.0;
    const double rep = pairs ? (double)reps / (double)pairs : 0.0;
    ps.runs = sq < 1.0 ? (rep - sq) / (1.0 - sq) : 1.0;
    return ps;
}

/* The codec for a plane of n bytes (GCK_PLANE_RAW when nothing pays);
 * *huff: zstd with Huffman literals only, not the configured level;
 * *fill: zrans's common byte. */
static int gck_choose_codec(const gck_delta_codec *c, const unsigned char *p, size_t n, int *huff, uint8_t *fill)
{
    *huff = 0, *fill = 0;
    if (n < GCK_PLANE_MIN || (c->level == 0 && !gck_delta_have_rans()))
        return GCK_PLANE_RAW;
    const gck_plane_stats ps = gck_sample_plane(c, p, n, c->entropy_max);
    if (ps.h > c->entropy_max)
        return GCK_PLANE_RAW;
    if (c->coder == GCK_STORE_CODER_ZSTD)
        return c->level != 0 ? GCK_PLANE_ZSTD : GCK_PLANE_RAW;
    if (ps.runs > GCK_RUN_EXCESS && c->level != 0)
        return GCK_PLANE_ZSTD;
    if ((ps.h < GCK_RANS_MAX || c->level == 0) && gck_delta_have_rans()) {
        *fill = ps.mode;
        return ps.top >= GCK_ZRANS_MIN_MODE ? GCK_PLANE_ZRANS : GCK_PLANE_RANS;
    }
    *huff = 1;
    return GCK_PLANE_ZSTD;
}

/* Room for scratch: at least `need` bytes. */
static gck_status gck_scratch(gck_zslot *z, size_t need)
{
    if (need <= z->scratch_cap)
        return GCK_OK;
    unsigned char *ns = gck_aligned_alloc(need);
    if (ns == NULL)
        return gck_fail_oom("delta plane scratch", need);
    free(z->scratch);
    z->scratch = ns, z->scratch_cap = need;
    return GCK_OK;
}

#ifdef GCK_HAVE_ZSTD
/* The slot's zstd context: Huffman literals only (huff 1; 2: for bitmaps),
 * else the configured level. */
static gck_status gck_zstd_ctx(gck_zslot *z, int huff, ZSTD_CCtx **out)
{
    ZSTD_CCtx **ctx = huff == 2 ? &z->bctx : huff ? &z->hctx : &z->cctx;
    if (*ctx == NULL) {
        if ((*ctx = ZSTD_createCCtx()) == NULL)
            return gck_fail_oom("zstd context", 0);
        if (huff && (ZSTD_isError(ZSTD_CCtx_setParameter(*ctx, ZSTD_c_compressionLevel, GCK_HUFF_LEVEL)) ||
                     ZSTD_isError(ZSTD_CCtx_setParameter(*ctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable))))
            return gck_fail(GCK_ERR_UNSUPPORTED, "delta: this zstd cannot Huffman-code literals at level %d",
                            GCK_HUFF_LEVEL);
    }
    *out = *ctx;
    return GCK_OK;
}
#endif

static void gck_put_u32(unsigned char *p, size_t v)
{
    for (int b = 0; b < 4; b++)
        p[b] = (unsigned char)(v >> (8 * b));
}

static size_t gck_get_u32(const unsigned char *p)
{
    return (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
}

#ifdef GCK_HAVE_HTSCODECS
/* rANS order 0 of in[0..k) into out (room for cap bytes): its length, 0 on failure. */
static size_t gck_rans_code(const unsigned char *in, size_t k, unsigned char *out, size_t cap)
{
    unsigned int os = (unsigned)(cap < UINT32_MAX ? cap : UINT32_MAX);
    return rans_compress_to_4x16((unsigned char *)(uintptr_t)in, (unsigned)k, out, &os, GCK_RANS_ORDER_FOR(k)) ? os : 0;
}

/* The bound of one chunk's block (its length field included). */
static size_t gck_rans_chunk_bound(size_t k, int sparse)
{
    size_t bitmap = 0;
    if (sparse) {
        const size_t nb = (k + 7) / 8;
        bitmap = 6 + rans_compress_bound_4x16((unsigned)nb, GCK_RANS_ORDER_FOR(nb));
#ifdef GCK_HAVE_ZSTD
        bitmap = bitmap > 6 + ZSTD_compressBound(nb) ? bitmap : 6 + ZSTD_compressBound(nb);
#endif
    }
    return 4 + bitmap + rans_compress_bound_4x16((unsigned)k, GCK_RANS_ORDER_FOR(k));
}

/* How a zrans block's bitmap is coded. zstd's Huffman stage where zstd is
 * on: on the AdamW exponent plane's bitmaps (2.1 MB, 69 % zero bytes in
 * the planes) 0.895 of their size in 2.5 ms and back in 2.1, where rANS
 * order 0 made 0.902 in 3.6 ms and back in 3.1 (4-way; the 32-way form
 * 0.907, 5.4 and 4.6 ms). */
enum { GCK_BITMAP_RANS = 0, GCK_BITMAP_ZSTD = 1 };

/* A zrans block of chunk x[0..k): [fill][bitmap codec][u32 bitmap length]
 * [the bitmap coded][rANS of the values, absent when there are none]; its
 * length, or 0 on failure. */
static size_t gck_zrans_code(gck_zslot *z, int zstd, const unsigned char *x, size_t k, uint8_t fill,
                             unsigned char *out, size_t cap)
{
    unsigned char *bits = z->sparse, *vals = z->sparse + GCK_DELTA_CHUNK / 8 + 64;
    const size_t m = gck_sparse_split(bits, vals, x, k, fill), nb = (k + 7) / 8;
    size_t l1 = 0;
#ifdef GCK_HAVE_ZSTD
    if (zstd) {
        ZSTD_CCtx *ctx;
        if (gck_zstd_ctx(z, 2, &ctx) != GCK_OK)
            return 0;
        l1 = ZSTD_compress2(ctx, out + 6, cap - 6, bits, nb);
        if (ZSTD_isError(l1))
            l1 = 0;
    }
#else
    zstd = 0;
#endif
    if (!zstd)
        l1 = gck_rans_code(bits, nb, out + 6, cap - 6);
    const size_t l2 = l1 && m ? gck_rans_code(vals, m, out + 6 + l1, cap - 6 - l1) : 0;
    if (l1 == 0 || (m && l2 == 0))
        return 0;
    out[0] = fill;
    out[1] = (unsigned char)(zstd ? GCK_BITMAP_ZSTD : GCK_BITMAP_RANS);
    gck_put_u32(out + 2, l1);
    return 6 + l1 + l2;
}
#endif

/* Codes plane (n bytes) into z->scratch with codec `mode` (zrans: around
 * `fill`); *len its size (n or more: not worth it). */
static gck_status gck_code_plane(const gck_delta_codec *c, gck_zslot *z, int mode, int huff, uint8_t fill,
                                 const unsigned char *plane, size_t n, size_t *len)
{
    (void)c, (void)huff, (void)plane, (void)fill;
    *len = n;
#ifdef GCK_HAVE_HTSCODECS
    if (mode == GCK_PLANE_RANS || mode == GCK_PLANE_ZRANS) {
        /* one block per chunk, each [u32 little-endian length][block], so a
         * reader decodes chunk by chunk as for zstd */
        const int sparse = mode == GCK_PLANE_ZRANS;
        size_t bound = 0;
        for (size_t off = 0; off < n; off += GCK_DELTA_CHUNK)
            bound += gck_rans_chunk_bound(n - off < GCK_DELTA_CHUNK ? n - off : GCK_DELTA_CHUNK, sparse);
        GCK_TRY(gck_scratch(z, bound));
        if (sparse && z->sparse == NULL && (z->sparse = gck_aligned_alloc(GCK_SPARSE_BYTES)) == NULL)
            return gck_fail_oom("delta sparse plane buffer", GCK_SPARSE_BYTES);
        size_t at = 0;
        for (size_t off = 0; off < n && at < n; off += GCK_DELTA_CHUNK) {
            const size_t k = n - off < GCK_DELTA_CHUNK ? n - off : GCK_DELTA_CHUNK;
            unsigned char *blk = z->scratch + at + 4;
            const size_t l = sparse ? gck_zrans_code(z, c->level != 0, plane + off, k, fill, blk, bound - at - 4)
                                    : gck_rans_code(plane + off, k, blk, bound - at - 4);
            if (l == 0)
                return gck_fail(GCK_ERR_IO, "delta: rANS compression of %zu bytes failed", k);
            gck_put_u32(z->scratch + at, l);
            at += 4 + l;
        }
        *len = at;
        return GCK_OK;
    }
#endif
#ifdef GCK_HAVE_ZSTD
    if (mode == GCK_PLANE_ZSTD) {
        const size_t bound = ZSTD_compressBound(n);
        GCK_TRY(gck_scratch(z, bound));
        ZSTD_CCtx *ctx;
        GCK_TRY(gck_zstd_ctx(z, huff, &ctx));
        const size_t r = huff ? ZSTD_compress2(ctx, z->scratch, bound, plane, n)
                              : ZSTD_compressCCtx(ctx, z->scratch, bound, plane, n, c->level);
        if (ZSTD_isError(r))
            return gck_fail(GCK_ERR_IO, "delta: zstd compression failed: %s", ZSTD_getErrorName(r));
        *len = r;
    }
#endif
    (void)mode, (void)z;
    return GCK_OK;
}

/* One byte plane of an item being encoded: where it goes in the arena. */
typedef struct gck_plane_out {
    int mode;
    unsigned char *buf;
    size_t cap, len;
} gck_plane_out;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
/* The planes of chunk k elements at a + off (XOR b) into c->chunk. */
static void gck_shuffle_chunk(gck_delta_codec *c, const unsigned char *pa, const unsigned char *pb, size_t off,
                              size_t k, size_t esz, int rot)
{
    gck_dslot *d = &c->ds[0];
    (rot ? gck_xor_shuffle_rot : gck_xor_shuffle)(d->chunk, gck_le_view(pa + off * esz, k, esz, d->le_a),
                                                  pb ? gck_le_view(pb + off * esz, k, esz, d->le_b) : NULL, k, esz);
}
#endif

/* Encodes the esz planes of (a XOR b) (rot: rotated left one bit) into the arena (plane p at p * n; the
 * format is the same whether they are formed at once or chunk by chunk),
 * then compresses, in place, each plane whose sampled entropy is low. The
 * arena was touched by the previous delta, so this takes no page faults. */
static gck_status gck_encode_planes(const gck_delta_codec *c, gck_zslot *z, unsigned char *region, const void *a,
                                    const void *b, int adopt, int rot, size_t n, size_t esz, gck_plane_out po[8])
{
    (void)z;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    /* planes of the little-endian bytes: through the chunk buffer */
    for (size_t off = 0; off < n;) {
        const size_t k = n - off < GCK_DELTA_CHUNK ? n - off : GCK_DELTA_CHUNK;
        gck_shuffle_chunk((gck_delta_codec *)(uintptr_t)c, a, b, off, k, esz, rot); /* serial on big-endian CPUs */
        for (size_t p = 0; p < esz; p++)
            memcpy(region + p * n + off, c->ds[0].chunk + p * k, k);
        off += k;
    }
#else
    if (n > 0)
        (rot ? gck_xor_shuffle_rot : gck_xor_shuffle)(region, a, b, n, esz);
#endif
    if (adopt && b != NULL && n > 0) /* a and b were just read: the copy is served from cache (gck_delta_write) */
        memcpy((void *)(uintptr_t)b, a, n * esz);
    for (size_t p = 0; p < esz; p++) {
        po[p] = (gck_plane_out){.mode = GCK_PLANE_RAW, .buf = region + p * n, .cap = n, .len = n};
        int huff;
        uint8_t fill;
        const int mode = gck_choose_codec(c, po[p].buf, n, &huff, &fill);
        if (mode == GCK_PLANE_RAW)
            continue;
        size_t r = n;
        GCK_TRY(gck_code_plane(c, z, mode, huff, fill, po[p].buf, n, &r));
        if (r < n) { /* else the plane stays as it is */
            memcpy(po[p].buf, z->scratch, r);
            po[p].mode = mode;
            po[p].len = r;
        }
    }
    return GCK_OK;
}

/* One byte plane of an item being decoded. */
typedef struct gck_plane_in {
    int mode;
    const unsigned char *p;
    size_t len;
    size_t pos; /* zstd, rans: input consumed */
    size_t r;   /* zstd: last return (0 once the frame is complete) */
} gck_plane_in;

/* The n (at most 32) bytes at p, in the mapped file of `file` (NULL: p is
 * plain memory): read (pread) into buf where the file can be read so - a
 * check of a few header bytes then maps no pages of the file (each touch
 * would map the 16 around it, to be torn down later on one thread:
 * gck_read_payload) - else p itself. */
static const unsigned char *gck_peek(const gck_snapshot *file, const unsigned char *p, size_t n, unsigned char *buf)
{
    return file != NULL && gck_snapshot_read_mapped(file, p, n, buf) ? buf : p;
}

/* The length of the rANS block at p[pos..len) (in file, as for gck_peek)
 * when its header and body fit, else 0 (damage). */
static size_t gck_rans_block(const gck_snapshot *file, const unsigned char *p, size_t len, size_t pos)
{
    unsigned char u[4];
    if (len - pos < 4)
        return 0;
    const size_t b = gck_get_u32(gck_peek(file, p + pos, 4, u));
    return b > 0 && b <= len - pos - 4 ? b : 0;
}

#ifdef GCK_HAVE_HTSCODECS
/* Decodes exactly k bytes from the rANS stream in[0..len) into out: 1, or 0
 * on damage (the size decoded is ours, never the stream's claim). */
static int gck_rans_decode(const unsigned char *in, size_t len, unsigned char *out, size_t k)
{
    unsigned int got = (unsigned)k;
    return len > 0 && len <= UINT32_MAX &&
           rans_uncompress_to_4x16((unsigned char *)(uintptr_t)in, (unsigned)len, out, &got) != NULL && got == k;
}

/* The number of set bits in p[0..n). */
static size_t gck_popcount(const unsigned char *p, size_t n)
{
    size_t m = 0, i = 0;
    for (; i + 8 <= n; i += 8) { /* SWAR: no popcnt instruction in the baseline build */
        uint64_t v;
        memcpy(&v, p + i, 8);
        v -= v >> 1 & UINT64_C(0x5555555555555555);
        v = (v & UINT64_C(0x3333333333333333)) + (v >> 2 & UINT64_C(0x3333333333333333));
        m += (size_t)(((v + (v >> 4)) & UINT64_C(0x0f0f0f0f0f0f0f0f)) * UINT64_C(0x0101010101010101) >> 56);
    }
    for (; i < n; i++)
        for (unsigned v = p[i]; v; v &= v - 1)
            m++;
    return m;
}

/* The inverse of gck_zrans_code: chunk out[0..k) from block b[0..len) of
 * plane p; 1, or 0 on damage (a bitmap or value count other than the chunk
 * needs, an unknown bitmap codec), or -1: a zstd-coded bitmap and no zstd
 * in this build. */
static int gck_zrans_decode(gck_dslot *c, size_t p, const unsigned char *b, size_t len, unsigned char *out, size_t k)
{
    unsigned char *bits = c->sparse, *vals = c->sparse + GCK_DELTA_CHUNK / 8 + 64;
    const size_t nb = (k + 7) / 8;
    if (len < 6 || k > GCK_DELTA_CHUNK)
        return 0;
    const size_t l1 = gck_get_u32(b + 2);
    if (l1 > len - 6)
        return 0;
    int ok = 0;
    if (b[1] == GCK_BITMAP_RANS)
        ok = gck_rans_decode(b + 6, l1, bits, nb);
#ifdef GCK_HAVE_ZSTD
    else if (b[1] == GCK_BITMAP_ZSTD) /* plane p is not zstd: its stream context is free */
        ok = ZSTD_decompressDCtx(c->dc[p], bits, nb, b + 6, l1) == nb;
#else
    else if (b[1] == GCK_BITMAP_ZSTD)
        return (void)p, -1;
#endif
    if (!ok || (k % 8 && bits[nb - 1] >> (k % 8) != 0))
        return 0;
    const size_t m = gck_popcount(bits, nb), l2 = len - 6 - l1;
    if (m == 0 ? l2 != 0 : !gck_rans_decode(b + 6 + l1, l2, vals, m))
        return 0;
    gck_sparse_merge(out, bits, vals, m, k, b[0]);
    return 1;
}
#endif

/* 1 when a rANS plane of len bytes at p (in file, as for gck_peek) is
 * exactly ceil(n / chunk) blocks that fit it. */
static int gck_rans_blocks_fit(const gck_snapshot *file, const unsigned char *p, size_t len, size_t n, size_t chunk)
{
    size_t pos = 0;
    for (size_t off = 0; off < n; off += chunk) {
        const size_t b = gck_rans_block(file, p, len, pos);
        if (b == 0)
            return 0;
        pos += 4 + b;
    }
    return pos == len;
}

/* The inverse of gck_encode_planes into dst (n * esz bytes). */
static gck_status gck_decode_planes(gck_dslot *c, size_t chunk, gck_plane_in *pi, const void *b, int rot, size_t n,
                                    size_t esz, void *dst)
{
    void (*const unshuffle)(void *, const uint8_t *const *, const void *, size_t, size_t) =
        rot ? gck_unshuffle_xor_rot_planes : gck_unshuffle_xor_planes;
    unsigned char *pd = dst;
    const unsigned char *pb = b;
    for (size_t p = 0; p < esz; p++) {
        if (pi[p].mode == GCK_PLANE_RAW && pi[p].len != n)
            return gck_fail(GCK_ERR_CORRUPT, "plane %zu is %zu bytes, expected %zu", p, pi[p].len, n);
#ifdef GCK_HAVE_ZSTD
        if (pi[p].mode == GCK_PLANE_ZSTD) {
            /* the frame states its size: nothing is allocated on a claim it cannot back */
            if (ZSTD_getFrameContentSize(pi[p].p, pi[p].len) != (unsigned long long)n)
                return gck_fail(GCK_ERR_CORRUPT, "plane %zu: compressed stream is not %zu bytes", p, n);
            ZSTD_DCtx_reset(c->dc[p], ZSTD_reset_session_only);
            pi[p].pos = 0, pi[p].r = 1;
        }
#else
        if (pi[p].mode == GCK_PLANE_ZSTD)
            return gck_fail(GCK_ERR_UNSUPPORTED, "the delta is zstd-compressed and this build has no zstd");
#endif
#ifndef GCK_HAVE_HTSCODECS
        if (pi[p].mode == GCK_PLANE_RANS || pi[p].mode == GCK_PLANE_ZRANS)
            return gck_fail(GCK_ERR_UNSUPPORTED, "the delta has rANS-coded planes and this build has no htscodecs");
#endif
        if ((pi[p].mode == GCK_PLANE_RANS || pi[p].mode == GCK_PLANE_ZRANS) &&
            !gck_rans_blocks_fit(NULL, pi[p].p, pi[p].len, n, chunk))
            return gck_fail(GCK_ERR_CORRUPT, "plane %zu: its rANS blocks do not fit its %zu bytes", p, pi[p].len);
        pi[p].pos = 0;
    }
    for (size_t off = 0; off < n;) {
        const size_t k = n - off < chunk ? n - off : chunk;
        const uint8_t *planes[8];
        for (size_t p = 0; p < esz; p++) {
            unsigned char *seg = c->chunk + p * k;
            if (pi[p].mode == GCK_PLANE_RAW) {
                /* read where it lies: a raw plane is the file's bytes (adamw restore 6 % faster than copying it) */
                planes[p] = pi[p].p + off;
                continue;
            }
            planes[p] = seg;
#ifdef GCK_HAVE_HTSCODECS
            if (pi[p].mode == GCK_PLANE_RANS || pi[p].mode == GCK_PLANE_ZRANS) {
                const size_t blen = gck_rans_block(NULL, pi[p].p, pi[p].len, pi[p].pos);
                const unsigned char *blk = pi[p].p + pi[p].pos + 4;
                const int r = blen == 0                      ? 0
                              : pi[p].mode == GCK_PLANE_RANS ? gck_rans_decode(blk, blen, seg, k)
                                                             : gck_zrans_decode(c, p, blk, blen, seg, k);
                if (r < 0)
                    return gck_fail(GCK_ERR_UNSUPPORTED,
                                    "the delta has zstd-coded bitmaps and this build has no zstd");
                if (r == 0)
                    return gck_fail(GCK_ERR_CORRUPT, "plane %zu: damaged rANS block at byte %zu", p, pi[p].pos);
                pi[p].pos += 4 + blen;
                continue;
            }
#endif
#ifdef GCK_HAVE_ZSTD
            ZSTD_outBuffer ob = {seg, k, 0};
            ZSTD_inBuffer ib = {pi[p].p, pi[p].len, pi[p].pos};
            while (ob.pos < ob.size) {
                const size_t before = ob.pos + ib.pos;
                pi[p].r = ZSTD_decompressStream(c->dc[p], &ob, &ib);
                if (ZSTD_isError(pi[p].r))
                    return gck_fail(GCK_ERR_CORRUPT, "plane %zu: zstd: %s", p, ZSTD_getErrorName(pi[p].r));
                if (ob.pos < ob.size && (pi[p].r == 0 || ob.pos + ib.pos == before))
                    return gck_fail(GCK_ERR_CORRUPT, "plane %zu: compressed stream ends early", p);
            }
            pi[p].pos = ib.pos;
#endif
        }
        unsigned char *out = pd + off * esz;
        const void *bl = pb ? gck_le_view(pb + off * esz, k, esz, c->le_b) : NULL;
        if (bl == out) { /* XOR onto dst's own bytes: the kernel's output may not overlap b, so via le_a (idle here) */
            unshuffle(c->le_a, planes, bl, k, esz);
            memcpy(out, c->le_a, k * esz);
        } else {
            unshuffle(out, planes, bl, k, esz);
        }
        gck_swap_le(out, k * esz, esz);
        off += k;
    }
#ifdef GCK_HAVE_ZSTD
    /* each frame's epilogue, and nothing after it */
    for (size_t p = 0; p < esz; p++) {
        if (pi[p].mode != GCK_PLANE_ZSTD)
            continue;
        ZSTD_inBuffer ib = {pi[p].p, pi[p].len, pi[p].pos};
        if (n == 0)
            pi[p].r = 1;
        while (pi[p].r != 0) {
            ZSTD_outBuffer none = {c->chunk, 0, 0};
            const size_t before = ib.pos;
            pi[p].r = ZSTD_decompressStream(c->dc[p], &none, &ib);
            if (ZSTD_isError(pi[p].r))
                return gck_fail(GCK_ERR_CORRUPT, "plane %zu: zstd: %s", p, ZSTD_getErrorName(pi[p].r));
            if (pi[p].r != 0 && ib.pos == before)
                return gck_fail(GCK_ERR_CORRUPT, "plane %zu: compressed stream is truncated or too long", p);
        }
        if (ib.pos != pi[p].len)
            return gck_fail(GCK_ERR_CORRUPT, "plane %zu: %zu bytes after the compressed stream", p, pi[p].len - ib.pos);
    }
#endif
    return GCK_OK;
}

static const char *const gck_enc_names[] = {"ref", "xor", "raw"};
enum { GCK_ENC_REF = GCK_DELTA_REF, GCK_ENC_XOR = GCK_DELTA_XOR, GCK_ENC_RAW = GCK_DELTA_RAW };

/* One tensor or blob of the target: how it is stored, and where its planes go. */
typedef struct gck_enc_job {
    gck_item it, b;
    int enc;
    int rot;               /* planes of the values rotated (format 5) */
    int adopt;             /* copy the values into the base's after forming the planes */
    unsigned char *region; /* n * esz bytes of the arena (not for refs) */
    gck_plane_out po[8];
    gck_carried err;       /* the failing thread's status and message */
} gck_enc_job;

/* Whether a sample of n elements of esz bytes holds both signs (the top
 * bit of each element's most significant byte): up to 4 windows of 256
 * elements spread over the array. A tensor of one sign (AdamW's second
 * moment) is not rotated: its constant sign bit costs nothing where it is,
 * and rotated it would leave the lowest plane to be coded for 1/8 of it
 * while the exponent plane grows (coded, 0.3 % larger and slower). */
static int gck_mixed_signs(const unsigned char *x, size_t n, size_t esz)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const size_t top = 0;
#else
    const size_t top = esz - 1;
#endif
    const size_t w = n < 256 ? n : 256, nw = n / 256 < 4 ? (n / 256 ? n / 256 : 1) : 4;
    unsigned seen = 0;
    for (size_t k = 0; k < nw; k++) {
        const unsigned char *q = x + (nw > 1 ? (n - w) / (nw - 1) * k : 0) * esz;
        for (size_t i = 0; i < w; i++)
            seen |= 1u << (q[i * esz + top] >> 7);
    }
    return seen == 3;
}

static void gck_plan_job(gck_delta_codec *c, const gck_item *it, const gck_snapshot *base, gck_enc_job *j)
{
    memset(j, 0, sizeof *j);
    j->it = *it;
    const int has_base = gck_base_item(base, it->blob, it->name, &j->b);
    j->enc = GCK_ENC_RAW;
    if (has_base && j->b.dtype == it->dtype && gck_same_shape(it, &j->b) && strcmp(j->b.cid, it->cid) == 0)
        j->enc = GCK_ENC_REF;
    else if (has_base && j->b.dtype == it->dtype && j->b.nbytes == it->nbytes)
        j->enc = GCK_ENC_XOR;
    j->rot = j->enc == GCK_ENC_RAW && c->coder == GCK_STORE_CODER_AUTO &&
             (it->dtype == GCK_DTYPE_F32 || it->dtype == GCK_DTYPE_BF16) &&
             gck_mixed_signs(it->data, it->nbytes / gck_dtype_size(it->dtype), gck_dtype_size(it->dtype));
    if (j->enc != GCK_ENC_REF) {
        j->region = c->arena + c->arena_used;
        c->arena_used += it->nbytes;
    }
}

static void gck_run_job(const gck_delta_codec *c, gck_zslot *z, gck_enc_job *j)
{
    if (j->enc == GCK_ENC_REF)
        return;
    const size_t esz = gck_dtype_size(j->it.dtype);
    gck_carry(&j->err, gck_encode_planes(c, z, j->region, j->it.data, j->enc == GCK_ENC_XOR ? j->b.data : NULL,
                                         j->adopt, j->rot, j->it.nbytes / esz, esz, j->po));
}

/* Appends job j's description to `items` (a JSON array's text, without
 * its closing bracket; first: j is its first element) and its payload tensor (name pname; its data pointer
 * is only a placeholder: the writer gathers the planes from the arena) to
 * `delta`. worst: every plane described as the longest it could be
 * ("zrans", its whole length), before it is coded. */
static gck_status gck_describe_job(const gck_enc_job *j, const char *pname, int worst, gck_snapshot *delta,
                                   gck_jtext *items, int first)
{
    const gck_item *it = &j->it;
    gck_jt_lit(items, first ? "{\"name\":" : ",{\"name\":");
    gck_jt_str(items, it->name);
    gck_jt_lit(items, it->blob ? ",\"blob\":true,\"dtype\":" : ",\"blob\":false,\"dtype\":");
    gck_jt_str(items, gck_dtype_name(it->dtype));
    gck_jt_lit(items, ",\"shape\":[");
    for (size_t d = 0; !it->blob && d < it->ndim; d++) {
        if (d > 0)
            gck_jt_raw(items, ",", 1);
        gck_jt_int(items, it->shape[d]);
    }
    gck_jt_lit(items, "],\"cid\":");
    gck_jt_str(items, it->cid);
    gck_jt_lit(items, ",\"enc\":");
    gck_jt_str(items, gck_enc_names[j->enc]);
    if (it->blob) {
        gck_jt_lit(items, ",\"len\":");
        gck_jt_int(items, (long long)it->nbytes);
    }
    if (j->rot)
        gck_jt_lit(items, ",\"rot\":true");
    if (j->enc == GCK_ENC_REF) {
        gck_jt_raw(items, "}", 1);
        return GCK_OK;
    }
    gck_jt_lit(items, ",\"planes\":[");
    const size_t esz = gck_dtype_size(it->dtype), n = it->nbytes / esz;
    size_t at = 0;
    for (size_t p = 0; p < esz; p++) {
        const size_t len = worst ? n : j->po[p].len;
        at += len;
        gck_jt_lit(items, p > 0 ? ",[" : "[");
        gck_jt_str(items, gck_plane_names[worst ? GCK_PLANE_ZRANS : j->po[p].mode]);
        gck_jt_raw(items, ",", 1);
        gck_jt_int(items, (long long)len);
        gck_jt_raw(items, "]", 1);
    }
    gck_jt_lit(items, "],\"payload\":");
    gck_jt_str(items, pname);
    gck_jt_raw(items, "}", 1);
    /* no content id: a damaged payload either fails to decode or rebuilds
     * bytes whose id differs from the item's recorded one, which every
     * restore checks, so hashing the payloads too would only cost time */
    return gck_snapshot_add_unhashed(delta, pname, GCK_DTYPE_U8, j->region, at);
}

/* OpenMP threads for coding m items of `bytes` in all: one below
 * GCK_PARALLEL_MIN_BYTES (256 KiB),
 * where starting the team costs about what it saves. A 1.44 MB state of 48
 * tensors (small_save/store/default/2t, the Intel VM) saved in 3.9-4.0 ms
 * with one thread (the old bound was 4 MB), 3.3-3.5 ms with two (and alike
 * with the bound at 64 KiB or 1 MiB); the durable raw write took 1.6. */
static int gck_code_threads(size_t bytes, size_t m)
{
#ifdef _OPENMP
    if (bytes >= GCK_PARALLEL_MIN_BYTES && m > 1)
        return gck_omp_threads();
#endif
    (void)bytes, (void)m;
    return 1;
}

int gck_delta_slot(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}

/* One compression slot per OpenMP thread (contexts are made on first use). */
static gck_status gck_ensure_slots(gck_delta_codec *c, int want)
{
    if (want <= c->nslots)
        return GCK_OK;
    gck_zslot *ns = gck_realloc(c->slots, (size_t)want * sizeof *ns);
    if (ns == NULL)
        return gck_fail_oom("delta codec slots", (size_t)want * sizeof *ns);
    memset(ns + c->nslots, 0, (size_t)(want - c->nslots) * sizeof *ns);
    c->slots = ns, c->nslots = want;
    return GCK_OK;
}

/* A target's encoding: its jobs over the codec's arena. */
typedef struct gck_enc_plan {
    gck_enc_job *jobs;
    size_t m;
    int threads;
    size_t bytes; /* the items' bytes */
} gck_enc_plan;

static gck_status gck_plan_encode(gck_delta_codec *c, const gck_snapshot *target, const gck_snapshot *base,
                                  int adopt, gck_enc_plan *pl)
{
    /* room for every payload at its worst, in one buffer kept for the next delta */
    size_t need = 0;
    for (size_t i = 0; i < target->tensors.n; i++) {
        const gck_snap_tensor *t = target->tensors.items[i];
        need += t->nbytes;
    }
    for (size_t i = 0; i < target->blobs.n; i++)
        need += ((const gck_snap_blob *)target->blobs.items[i])->len;
    if (need > c->arena_cap) {
        unsigned char *na = gck_aligned_alloc(need);
        if (na == NULL)
            return gck_fail_oom("delta arena", need);
        free(c->arena);
        c->arena = na, c->arena_cap = need;
    }
    c->arena_used = 0;
    const size_t nt = target->tensors.n, m = nt + target->blobs.n;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    const int threads = 1; /* the big-endian path shares the codec's chunk buffers */
#else
    const int threads = gck_code_threads(need, m);
#endif
    GCK_TRY(gck_ensure_slots(c, threads));
    gck_enc_job *jobs = gck_calloc(m ? m : 1, sizeof *jobs);
    if (jobs == NULL)
        return gck_fail_oom("delta jobs", (m ? m : 1) * sizeof *jobs);
    for (size_t i = 0; i < m; i++) {
        const gck_item it = i < nt ? gck_item_of_tensor(target->tensors.items[i])
                                   : gck_item_of_blob(target->blobs.items[i - nt]);
        gck_plan_job(c, &it, base, &jobs[i]);
        jobs[i].adopt = adopt && jobs[i].enc == GCK_ENC_XOR;
    }
    *pl = (gck_enc_plan){.jobs = jobs, .m = m, .threads = threads, .bytes = need};
    return GCK_OK;
}

/* The delta snapshot of plan pl (its fields target's): the description and
 * one U8 payload tensor per item with planes, named "d/<k>" with k its
 * item's index, zero-padded to one width so that the file's data order
 * (tensors by name) is the items' order. worst: see gck_describe_job. */
static gck_status gck_describe(const gck_snapshot *target, const gck_enc_plan *pl, uint64_t base_version, int worst,
                               gck_snapshot **out)
{
    gck_snapshot *d = NULL;
    gck_status st = gck_snapshot_create(target->step, &d);
    if (st != GCK_OK)
        return st;
    if ((st = gck_snapshot_copy_fields(d, target, GCK_DELTA_KEY)) != GCK_OK) {
        gck_snapshot_destroy(d);
        return st;
    }
    int format = GCK_DELTA_FORMAT - 1; /* 5 only when an item needs it (above) */
    for (size_t i = 0; i < pl->m; i++)
        format = pl->jobs[i].rot ? GCK_DELTA_FORMAT : format;
    /* {"format":F,"base":"B","chunk":C,"items":[...]}, as jansson wrote it */
    gck_jtext t = {0};
    char bv[32];
    snprintf(bv, sizeof bv, "%" PRIu64, base_version);
    gck_jt_lit(&t, "{\"format\":");
    gck_jt_int(&t, format);
    gck_jt_lit(&t, ",\"base\":");
    gck_jt_str(&t, bv);
    gck_jt_lit(&t, ",\"chunk\":");
    gck_jt_int(&t, GCK_DELTA_CHUNK);
    gck_jt_lit(&t, ",\"items\":[");
    int width = 1;
    for (size_t k = pl->m; k >= 10; k /= 10)
        width++;
    for (size_t i = 0; i < pl->m && st == GCK_OK; i++) {
        char pname[48];
        snprintf(pname, sizeof pname, "d/%0*zu", width < 20 ? width : 20, i); /* width <= 20 digits anyway */
        st = gck_describe_job(&pl->jobs[i], pname, worst, d, &t, i == 0);
    }
    gck_jt_lit(&t, "]}");
    if (st == GCK_OK && t.bad)
        st = t.bad == 2 ? gck_fail(GCK_ERR_INVALID_ARGUMENT, "delta: a name is not valid UTF-8")
                        : gck_fail_oom("delta description text", t.cap);
    if (st == GCK_OK)
        st = gck_snapshot_set_sysmeta(d, GCK_DELTA_KEY, t.p);
    free(t.p);
    if (st != GCK_OK) {
        gck_snapshot_destroy(d);
        return st;
    }
    *out = d;
    return GCK_OK;
}

/* What gck_delta_fill streams into the file. */
typedef struct gck_enc_stream {
    gck_delta_codec *c;
    const gck_snapshot *target;
    gck_enc_plan pl;
    uint64_t base_version;
    size_t room;       /* large plans: the header's bytes after the 8-byte length (its worst); 0: fitted */
    int stream;        /* payloads written as they are coded (large plans on several threads) */
    gck_carried err;   /* a failure that is not the file's (the writer's own message comes after it) */
} gck_enc_stream;

static int gck_stream_fail(gck_enc_stream *x, gck_status st)
{
    gck_carry(&x->err, st);
    return ECANCELED;
}

/* Job j's payload written at *off (its planes gathered from the arena). */
static int gck_write_payload(int fd, const gck_enc_job *j, uint64_t *off)
{
    struct iovec iov[8];
    size_t k = 0, len = 0;
    for (size_t p = 0; p < gck_dtype_size(j->it.dtype); p++)
        if (j->po[p].len > 0) {
            iov[k++] = (struct iovec){j->po[p].buf, j->po[p].len};
            len += j->po[p].len;
        }
    const int err = gck_pwritev_all(fd, iov, k, *off);
    *off += len;
    return err;
}

/* The header (8 + room bytes, hdr) and every payload of the plan's jobs
 * after it, from byte 0, in one call. 0, an errno, or ECANCELED with x->err
 * set (no memory for the vectors). */
static int gck_write_file(int fd, const char *hdr, size_t room, gck_enc_stream *x)
{
    const gck_enc_job *jobs = x->pl.jobs;
    size_t k = 1;
    for (size_t i = 0; i < x->pl.m; i++)
        k += jobs[i].enc != GCK_ENC_REF ? gck_dtype_size(jobs[i].it.dtype) : 0;
    struct iovec *iov = gck_malloc(k * sizeof *iov);
    if (iov == NULL)
        return gck_stream_fail(x, gck_fail_oom("delta file write vectors", k * sizeof *iov));
    iov[0] = (struct iovec){(void *)(uintptr_t)hdr, 8 + room};
    k = 1;
    for (size_t i = 0; i < x->pl.m; i++)
        for (size_t p = 0; jobs[i].enc != GCK_ENC_REF && p < gck_dtype_size(jobs[i].it.dtype); p++)
            if (jobs[i].po[p].len > 0)
                iov[k++] = (struct iovec){jobs[i].po[p].buf, jobs[i].po[p].len};
    const int err = gck_pwritev_all(fd, iov, k, 0);
    free(iov);
    return err;
}

/* A streamed file's device write is started every this many bytes. */
#define GCK_WRITEBACK_CHUNK ((uint64_t)256 << 10)

/* Codes every job on the plan's threads: streamed (x->stream), each
 * payload written from byte 8 + room on in item order by the thread that
 * coded it, in an ordered section, so that one item's write runs while the
 * next ones are coded; else only coded. Nothing after the first failure in
 * item order is written (a later item may have started before it). 0, an
 * errno, or ECANCELED with x->err set (a coding failure). */
static int gck_code_jobs(int fd, gck_enc_stream *x)
{
    gck_delta_codec *c = x->c;
    gck_enc_job *jobs = x->pl.jobs;
    uint64_t off = 8 + x->room, sent = off; /* sent: where the writeback started so far ends */
    int err = 0, failed = 0;
    const long lm = (long)x->pl.m;
    if (x->stream) {
#pragma omp parallel for ordered schedule(dynamic, 1) num_threads(x->pl.threads) if (x->pl.threads > 1)
        for (long i = 0; i < lm; i++) {
            int skip;
#pragma omp atomic read
            skip = failed;
            if (!skip) /* after a failure the rest is not coded */
                gck_run_job(c, &c->slots[gck_delta_slot()], &jobs[i]);
#pragma omp ordered
            {
#pragma omp atomic read
                skip = failed;
                if (!skip && (jobs[i].err.st != GCK_OK ||
                              (jobs[i].enc != GCK_ENC_REF && (err = gck_write_payload(fd, &jobs[i], &off)) != 0))) {
#pragma omp atomic write
                    failed = 1;
                } else if (off - sent >= GCK_WRITEBACK_CHUNK) {
                    gck_start_writeback(fd, sent, off - sent);
                    sent = off;
                }
            }
        }
    } else {
#pragma omp parallel for schedule(dynamic, 1) num_threads(x->pl.threads) if (x->pl.threads > 1)
        for (long i = 0; i < lm; i++)
            gck_run_job(c, &c->slots[gck_delta_slot()], &jobs[i]);
    }
    if (err != 0)
        return err;
    for (size_t i = 0; i < x->pl.m; i++)
        if (jobs[i].err.st != GCK_OK)
            return gck_stream_fail(x, gck_carried_fail(&jobs[i].err));
    return 0;
}

/* The file. A large plan's header is padded to its length at its worst
 * (so that the file is the same bytes on any thread count) and the file is
 * streamed: the payloads as they are coded (gck_code_jobs), their device
 * write started every GCK_WRITEBACK_CHUNK bytes, then the header, which
 * only now knows the planes' lengths, at byte 0. The write is then no
 * longer a serial step after the coding, and the fsync after it waits only
 * for the last chunks. On 2 threads (Intel VM, 3 alternating runs): adamw
 * delta save 37-39 -> 32-33 ms, compressed full save 34-36 -> 29-30; on
 * one thread, with the writeback (Zen 5 VM, 2 alternating runs): adamw
 * delta save into an ext4 store 53.3-56.8 -> 46.8-47.0 ms, on tmpfs
 * 47.3-49.1 -> 45.8-45.9. A small plan is coded first, then header and
 * payloads go in one call: streamed, a 1.44 MB state (48 tensors) saved in
 * 2.5-2.9 ms took 3.2-4.1, with or without the writeback. 0 or an errno
 * (x->err set when the failure was not the file's). */
static int gck_delta_fill(int fd, void *ctx)
{
    gck_enc_stream *x = ctx;
    int err = gck_code_jobs(fd, x);
    if (err != 0)
        return err;
    gck_snapshot *d = NULL;
    char *hdr = NULL;
    size_t need = 0;
    gck_status st = gck_describe(x->target, &x->pl, x->base_version, 0, &d);
    if (st == GCK_OK)
        st = gck_snapshot_header(d, x->room > 0 ? x->room : GCK_HEADER_FIT, &hdr, &need);
    gck_snapshot_destroy(d);
    if (st != GCK_OK)
        return gck_stream_fail(x, st);
    if (x->stream) {
        struct iovec iov = {hdr, 8 + x->room};
        err = gck_pwritev_all(fd, &iov, 1, 0);
    } else {
        err = gck_write_file(fd, hdr, need, x); /* a small plan: no room reserved */
    }
    free(hdr);
    return err;
}

/* Coded versions at least this large get a worst-case header and stream
 * their payloads (gck_delta_fill). */
#define GCK_STREAM_MIN ((size_t)8 << 20)

gck_status gck_delta_write(gck_delta_codec *c, const gck_snapshot *target, gck_snapshot *base, int adopt,
                           uint64_t base_version, const char *path, int *fd)
{
    gck_enc_stream x = {.c = c, .target = target, .base_version = base_version};
    GCK_TRY(gck_plan_encode(c, target, base, adopt, &x.pl));
    gck_status st = GCK_OK;
    if (x.pl.bytes >= GCK_STREAM_MIN) {
        /* the header's room: its length with every plane at its longest */
        gck_snapshot *worst = NULL;
        char *none = NULL;
        st = gck_describe(target, &x.pl, base_version, 1, &worst);
        if (st == GCK_OK)
            st = gck_snapshot_header(worst, 0, &none, &x.room);
        gck_snapshot_destroy(worst);
        x.stream = 1;
    }
    if (st == GCK_OK) {
        st = gck_write_unsynced(path, gck_delta_fill, &x, fd);
        if (st != GCK_OK && x.err.st != GCK_OK) /* the coding's failure, not the file's (which is removed) */
            st = gck_carried_fail(&x.err);
    }
    free(x.pl.jobs);
    return st;
}

/* ---- decode ---------------------------------------------------------------------- */

static json_t *gck_delta_json(const gck_snapshot *delta)
{
    const char *js = gck_snapshot_sysmeta(delta, GCK_DELTA_KEY);
    return js ? json_loads(js, 0, NULL) : NULL;
}

/* One item of a delta description, parsed and checked against the delta's
 * own payload tensors (not yet against a base). */
typedef struct gck_ditem {
    gck_delta_item pub;
    gck_plane_in pi[8]; /* enc != ref */
} gck_ditem;

/* peek: also read each zstd plane's frame header (its stated size), so a
 * claim is refused before anything is allocated for it; without it (an
 * index of a file of which few items are read) no payload byte is touched
 * here: gck_decode_planes checks the frames before it writes anything. */
static gck_status gck_parse_item(json_t *o, const gck_snapshot *delta, int format, int peek, gck_ditem *d)
{
    memset(d, 0, sizeof *d);
    const char *name = json_string_value(json_object_get(o, "name"));
    const char *dts = json_string_value(json_object_get(o, "dtype"));
    const char *cid = json_string_value(json_object_get(o, "cid"));
    const char *encs = json_string_value(json_object_get(o, "enc"));
    json_t *jshape = json_object_get(o, "shape"), *jblob = json_object_get(o, "blob");
    gck_dtype dt;
    if (!name || !dts || !cid || !encs || !json_is_array(jshape) || !json_is_boolean(jblob) || !gck_dtype_parse(dts, &dt))
        return gck_fail(GCK_ERR_CORRUPT, "malformed item in the delta description");
    const int blob = json_is_true(jblob);
    int enc = -1;
    for (int e = 0; e < 3; e++)
        if (strcmp(encs, gck_enc_names[e]) == 0)
            enc = e;
    const size_t ndim = json_array_size(jshape), esz = gck_dtype_size(dt);
    json_t *jrot = json_object_get(o, "rot");
    if (enc < 0 || ndim > GCK_MAX_DIMS || (blob && (dt != GCK_DTYPE_U8 || ndim != 0)) ||
        (jrot && (format < 5 || !json_is_boolean(jrot) || enc == GCK_ENC_REF)))
        return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': bad encoding, dtype or shape", name);
    d->pub.rot = json_is_true(jrot);
    size_t count = 1;
    for (size_t k = 0; k < ndim; k++) {
        json_t *v = json_array_get(jshape, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            !gck_mul_size(count, (size_t)json_integer_value(v), &count))
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': bad shape", name);
        d->pub.shape[k] = json_integer_value(v);
    }
    if (enc != GCK_ENC_REF) {
        json_t *planes = json_object_get(o, "planes");
        if (!json_is_array(planes) || json_array_size(planes) != esz)
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': planes missing", name);
        /* format 2: [codec, length] slices of one payload; 1: [tensor, codec] */
        const char *payload = json_string_value(json_object_get(o, "payload"));
        gck_tensor_info pt = {0};
        if (format >= 2 && (payload == NULL || gck_snapshot_find_tensor(delta, payload, &pt) != GCK_OK ||
                            pt.dtype != GCK_DTYPE_U8))
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': payload missing or malformed", name);
        size_t at = 0;
        for (size_t p = 0; p < esz; p++) {
            json_t *pp = json_array_get(planes, p);
            const char *mode = json_string_value(json_array_get(pp, format >= 2 ? 0 : 1));
            gck_tensor_info t = pt;
            int ok = json_array_size(pp) == 2 && mode != NULL &&
                     (strcmp(mode, "raw") == 0 || strcmp(mode, "zstd") == 0 ||
                      (format >= 3 && strcmp(mode, "rans") == 0) || (format >= 4 && strcmp(mode, "zrans") == 0));
            if (ok && format >= 2) {
                json_t *jl = json_array_get(pp, 1);
                const json_int_t l = json_is_integer(jl) ? json_integer_value(jl) : -1;
                ok = l >= 0 && (uint64_t)l <= pt.nbytes - at;
                t.data = ok ? (const unsigned char *)pt.data + at : NULL, t.nbytes = ok ? (size_t)l : 0;
                at += t.nbytes;
            } else if (ok) {
                const char *pn = json_string_value(json_array_get(pp, 0));
                ok = pn != NULL && gck_snapshot_find_tensor(delta, pn, &t) == GCK_OK && t.dtype == GCK_DTYPE_U8;
            }
            if (!ok)
                return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': plane %zu missing or malformed", name, p);
            d->pi[p] = (gck_plane_in){.mode = strcmp(mode, "zstd") == 0    ? GCK_PLANE_ZSTD
                                              : strcmp(mode, "rans") == 0  ? GCK_PLANE_RANS
                                              : strcmp(mode, "zrans") == 0 ? GCK_PLANE_ZRANS
                                                                           : GCK_PLANE_RAW,
                                      .p = t.data, .len = t.nbytes};
        }
        if (format >= 2 && at != pt.nbytes)
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': its planes do not cover its payload", name);
    }
    size_t nbytes;
    if (blob) {
        json_t *jl = json_object_get(o, "len");
        if (!json_is_integer(jl) || json_integer_value(jl) < 0)
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': blob length missing", name);
        nbytes = (size_t)json_integer_value(jl);
    } else if (!gck_mul_size(count, esz, &nbytes)) {
        return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': size overflows", name);
    }
    /* every plane holds n bytes: a size claim the planes cannot back is refused before allocating */
    for (size_t p = 0; enc != GCK_ENC_REF && p < esz; p++) {
        int ok = d->pi[p].mode == GCK_PLANE_RAW ? d->pi[p].len == nbytes / esz : 1;
#ifdef GCK_HAVE_ZSTD
        if (d->pi[p].mode == GCK_PLANE_ZSTD && peek) {
            unsigned char h[ZSTD_FRAMEHEADERSIZE_MAX];
            const size_t hl = d->pi[p].len < sizeof h ? d->pi[p].len : sizeof h;
            ok = ZSTD_getFrameContentSize(gck_peek(delta, d->pi[p].p, hl, h), hl) == (unsigned long long)(nbytes / esz);
        }
#else
        (void)peek; /* no zstd plane can be read here: gck_decode_planes refuses it */
#endif
        if (!ok)
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': plane %zu does not hold %zu bytes", name, p, nbytes / esz);
    }
    d->pub.name = name, d->pub.blob = blob, d->pub.dtype = dt, d->pub.nbytes = nbytes, d->pub.enc = enc;
    d->pub.cid = cid, d->pub.ndim = ndim; /* the shape is in place already */
    return GCK_OK;
}

/* One item of a delta being rebuilt: parsed, with its place in the output. */
typedef struct gck_dec_job {
    gck_ditem d;
    const void *base; /* the base item's values (ref, xor), else NULL */
    const gck_snapshot *base_snap; /* where they are (gck_snapshot_read_mapped) */
    const gck_snapshot *delta;     /* where the payload is (gck_read_payload) */
    void *dst;
    char *dcid;
    gck_carried err; /* the failing thread's status and message */
} gck_dec_job;

/* Parses item `o`, checks it against its base and adds its tensor or blob
 * to `out` (values not yet written: gck_run_dec). Every size claim is
 * backed by the payload (gck_parse_item, and rANS blocks here) before
 * anything is allocated for it. */
static gck_status gck_plan_dec(size_t chunk, int format, json_t *o, const gck_snapshot *delta,
                               const gck_snapshot *base, gck_snapshot *out, gck_dec_job *j)
{
    memset(j, 0, sizeof *j);
    gck_ditem *d = &j->d;
    GCK_TRY(gck_parse_item(o, delta, format, 1, d));
    const char *name = d->pub.name;
    const gck_dtype dt = d->pub.dtype;
    const size_t nbytes = d->pub.nbytes, esz = gck_dtype_size(dt);
    const int enc = d->pub.enc;
    gck_item b;
    const int has_base = gck_base_item(base, d->pub.blob, name, &b);
    if (enc != GCK_ENC_RAW && !has_base)
        return gck_fail(GCK_ERR_CORRUPT, "item '%.200s' refers to a base tensor that does not exist", name);
    if (enc != GCK_ENC_RAW && (b.dtype != dt || b.nbytes != nbytes))
        return gck_fail(GCK_ERR_CORRUPT, "item '%.200s' does not match its base tensor", name);
    for (size_t p = 0; enc != GCK_ENC_REF && p < esz; p++)
        if ((d->pi[p].mode == GCK_PLANE_RANS || d->pi[p].mode == GCK_PLANE_ZRANS) &&
            !gck_rans_blocks_fit(delta, d->pi[p].p, d->pi[p].len, nbytes / esz, chunk))
            return gck_fail(GCK_ERR_CORRUPT, "item '%.200s': plane %zu: its rANS blocks do not fit its %zu bytes",
                            name, p, d->pi[p].len);
    j->base = enc != GCK_ENC_RAW ? b.data : NULL;
    j->base_snap = base, j->delta = delta;
    gck_status st;
    if (d->pub.blob) {
        gck_snap_blob *nb = NULL;
        st = gck_snapshot_new_blob(out, name, nbytes, &nb);
        j->dst = nb ? nb->data : NULL, j->dcid = nb ? nb->cid : NULL;
    } else {
        gck_snap_tensor *nt = NULL;
        st = gck_snapshot_new_tensor(out, name, dt, d->pub.shape, d->pub.ndim, nbytes, &nt);
        if (st == GCK_ERR_INVALID_ARGUMENT)
            st = gck_fail(GCK_ERR_CORRUPT, "item '%.200s': bad or repeated name", name);
        j->dst = nt ? nt->data : NULL, j->dcid = nt ? nt->cid : NULL;
    }
    return st;
}

/* Payloads up to this size are read into the decoding slot's buffer, which
 * the codec keeps (so a store holds at most this much per decoding thread
 * after a restore); a larger one is read through the mapping, where the
 * page-table work is small beside its decoding. */
#define GCK_PAYLOAD_READ_MAX ((size_t)8 << 20)

/* The esz planes at pi (in a mapped file of `delta`) read (pread) into the
 * slot's buffer and pi pointed there, when they are at most
 * GCK_PAYLOAD_READ_MAX bytes and the file can be read so; else left to be
 * read through the mapping. Read so, the mapping's pages are not filled by
 * the decoding threads nor torn down by the calling thread's munmap. 1
 * when read (or empty), 0 when left to the mapping. */
static int gck_read_payload(gck_dslot *c, const gck_snapshot *delta, gck_plane_in *pi, size_t esz)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t p = 0; p < esz; p++)
        if (pi[p].len > 0) {
            lo = (uintptr_t)pi[p].p < lo ? (uintptr_t)pi[p].p : lo;
            hi = (uintptr_t)pi[p].p + pi[p].len > hi ? (uintptr_t)pi[p].p + pi[p].len : hi;
        }
    if (hi == 0)
        return 1; /* nothing to read */
    if (hi - lo > GCK_PAYLOAD_READ_MAX || delta == NULL || delta->map_fd1 <= 0)
        return 0;
    if (hi - lo > c->pay_cap) {
        unsigned char *nb = gck_aligned_alloc(hi - lo);
        if (nb == NULL)
            return 0;
        free(c->pay);
        c->pay = nb, c->pay_cap = hi - lo;
    }
    if (!gck_snapshot_read_mapped(delta, (const void *)lo, hi - lo, c->pay))
        return 0;
    for (size_t p = 0; p < esz; p++)
        if (pi[p].len > 0)
            pi[p].p = c->pay + ((uintptr_t)pi[p].p - lo);
    return 1;
}

/* Writes job j's values, its content id checked when `check` (else the
 * recorded one taken); on any thread, the failure in j->err. */
static void gck_run_dec(gck_dslot *c, size_t chunk, int check, gck_dec_job *j)
{
    const gck_ditem *d = &j->d;
    const char *name = d->pub.name;
    const gck_dtype dt = d->pub.dtype;
    const size_t nbytes = d->pub.nbytes, esz = gck_dtype_size(dt);
    /* A base in a mapped file (the full version under this delta) is read
     * into dst by this thread and decoded in place: its mapping is then
     * never touched, so no thread fills its page tables and the calling
     * thread's munmap has none to tear down (that took 2.6 ms of a 2-thread
     * 21 ms adamw restore, alone). */
    const void *base = d->pub.enc != GCK_ENC_RAW ? j->base : NULL;
    if (base != NULL && nbytes > 0 && gck_snapshot_read_mapped(j->base_snap, base, nbytes, j->dst))
        base = j->dst;
    if (d->pub.enc == GCK_ENC_REF) {
        if (nbytes && base != j->dst)
            memcpy(j->dst, base, nbytes);
    } else {
        gck_plane_in pi[8];
        memcpy(pi, d->pi, sizeof pi); /* decoding advances the stream positions */
        gck_read_payload(c, j->delta, pi, esz);
        const gck_status st = gck_decode_planes(c, chunk, pi, d->pub.enc == GCK_ENC_XOR ? base : NULL,
                                                d->pub.rot, nbytes / esz, esz, j->dst);
        if (st != GCK_OK) {
            gck_carry(&j->err, gck_fail_ctx(st, "item '%.200s'", name));
            return;
        }
    }
    if (!check) {
        snprintf(j->dcid, 24, "%s", d->pub.cid);
        return;
    }
    gck_content_id(j->dst, nbytes / esz, dt, j->dcid);
    if (strcmp(j->dcid, d->pub.cid) != 0)
        gck_carry(&j->err, gck_fail(GCK_ERR_CORRUPT, "item '%.200s': rebuilt content id %s differs from the "
                                    "recorded %.40s", name, j->dcid, d->pub.cid));
}

/* A delta's parsed description. */
typedef struct gck_delta_desc {
    json_t *root, *items; /* root owns items */
    size_t chunk;
    int format;
} gck_delta_desc;

/* The description's root when it is well formed and records base_version
 * (*chunk set), else NULL with the status in *st. */
static json_t *gck_delta_root_of(const gck_snapshot *delta, uint64_t base_version, size_t *chunk, int *format,
                                 gck_status *st)
{
    json_t *root = gck_delta_json(delta);
    json_t *items = root ? json_object_get(root, "items") : NULL;
    json_t *jchunk = root ? json_object_get(root, "chunk") : NULL;
    if (!json_is_array(items) || !json_is_integer(jchunk) ||
        json_integer_value(json_object_get(root, "format")) < 1 ||
        json_integer_value(json_object_get(root, "format")) > GCK_DELTA_FORMAT || json_integer_value(jchunk) <= 0 ||
        json_integer_value(jchunk) > GCK_DELTA_CHUNK) {
        json_decref(root);
        *st = gck_fail(GCK_ERR_CORRUPT, "malformed or unknown delta description");
        return NULL;
    }
    const char *bv = json_string_value(json_object_get(root, "base"));
    uint64_t recorded = 0;
    if (!gck_parse_u64(bv, &recorded) || recorded != base_version) {
        /* the message first: bv lives in root */
        *st = gck_fail(GCK_ERR_CORRUPT, "the delta is against version %.30s, the manifest says %" PRIu64,
                       bv ? bv : "(none)", base_version);
        json_decref(root);
        return NULL;
    }
    *chunk = (size_t)json_integer_value(jchunk);
    *format = (int)json_integer_value(json_object_get(root, "format"));
    *st = GCK_OK;
    return root;
}

/* gck_delta_root_of into *d (d->root NULL on error). */
static gck_status gck_delta_desc_of(const gck_snapshot *delta, uint64_t base_version, gck_delta_desc *d)
{
    gck_status st;
    *d = (gck_delta_desc){0};
    d->root = gck_delta_root_of(delta, base_version, &d->chunk, &d->format, &st);
    d->items = d->root ? json_object_get(d->root, "items") : NULL;
    return st;
}

struct gck_delta_index {
    json_t *root;     /* owns the items' strings */
    const gck_snapshot *delta; /* the file whose payloads the items are (gck_read_payload) */
    size_t chunk;
    gck_ditem *items; /* by (blob, name) */
    size_t n;
};

static int gck_ditem_cmp(const void *pa, const void *pb)
{
    const gck_delta_item *a = &((const gck_ditem *)pa)->pub, *b = &((const gck_ditem *)pb)->pub;
    return a->blob != b->blob ? a->blob - b->blob : strcmp(a->name, b->name);
}

void gck_delta_index_free(gck_delta_index *x)
{
    if (x == NULL)
        return;
    json_decref(x->root);
    free(x->items);
    free(x);
}

gck_status gck_delta_index_open(const gck_snapshot *delta, uint64_t base_version, gck_delta_index **out)
{
    gck_delta_desc dd;
    gck_status st = gck_delta_desc_of(delta, base_version, &dd);
    if (st != GCK_OK)
        return st;
    const size_t n = json_array_size(dd.items);
    gck_delta_index *x = gck_calloc(1, sizeof *x);
    gck_ditem *v = gck_calloc(n ? n : 1, sizeof *v);
    if (x == NULL || v == NULL) {
        st = gck_fail_oom("delta index", sizeof *x + (n ? n : 1) * sizeof *v);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        if ((st = gck_parse_item(json_array_get(dd.items, i), delta, dd.format, 0, &v[i])) != GCK_OK)
            goto done;
    qsort(v, n, sizeof *v, gck_ditem_cmp);
    for (size_t i = 1; i < n; i++)
        if (gck_ditem_cmp(&v[i - 1], &v[i]) == 0) {
            st = gck_fail(GCK_ERR_CORRUPT, "item '%.200s' is repeated in the delta description", v[i].pub.name);
            goto done;
        }
    *x = (gck_delta_index){.root = dd.root, .delta = delta, .chunk = dd.chunk, .items = v, .n = n};
    *out = x;
    return GCK_OK;
done:
    json_decref(dd.root);
    free(x), free(v);
    return st;
}

const gck_delta_item *gck_delta_index_find(const gck_delta_index *x, int blob, const char *name)
{
    gck_ditem key;
    key.pub.blob = blob, key.pub.name = name;
    const gck_ditem *d = bsearch(&key, x->items, x->n, sizeof *x->items, gck_ditem_cmp);
    return d ? &d->pub : NULL;
}

/* The esz planes at pi are about to be read whole: asks for their pages at
 * once. An index's file is mapped without read-around (gck_open_level in
 * store.c: a partial restore reads only its items' pages), so without this
 * a whole restore through the index would read a page per fault. */
static void gck_will_read(const gck_plane_in *pi, size_t esz)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (size_t p = 0; p < esz; p++)
        if (pi[p].len > 0) {
            lo = (uintptr_t)pi[p].p < lo ? (uintptr_t)pi[p].p : lo;
            hi = (uintptr_t)pi[p].p + pi[p].len > hi ? (uintptr_t)pi[p].p + pi[p].len : hi;
        }
    if (hi != 0)
        gck_prefault_read((const void *)lo, hi - lo);
}

static gck_status gck_decode_item(gck_delta_codec *c, int slot, const gck_delta_index *x,
                                  const gck_delta_item *it, const void *base, void *dst)
{
    const gck_ditem *d = (const gck_ditem *)(const void *)it; /* pub is the first member */
    const size_t esz = gck_dtype_size(it->dtype);
    gck_plane_in pi[8];
    memcpy(pi, d->pi, sizeof pi); /* decoding advances the stream positions */
    if (!gck_read_payload(&c->ds[slot], x->delta, pi, esz))
        gck_will_read(d->pi, esz);
    const gck_status st = gck_decode_planes(&c->ds[slot], x->chunk, pi, base, it->rot, it->nbytes / esz, esz, dst);
    return st == GCK_OK ? GCK_OK : gck_fail(st, "item '%.200s': %s", it->name, gck_last_error());
}

gck_status gck_delta_decode_threads(gck_delta_codec *c, size_t bytes, size_t m, int *threads)
{
    *threads = gck_code_threads(bytes, m);
    return gck_ensure_dslots(c, *threads);
}

gck_status gck_delta_decode_into(gck_delta_codec *c, int slot, const gck_delta_index *x, const gck_delta_item *it,
                                 void *dst)
{
    if (it->enc == GCK_ENC_REF)
        return GCK_OK;
    return gck_decode_item(c, slot, x, it, it->enc == GCK_ENC_XOR ? dst : NULL, dst);
}

gck_status gck_delta_decode(gck_delta_codec *c, const gck_snapshot *delta, const gck_snapshot *base, int check,
                            uint64_t base_version, gck_snapshot **out)
{
    gck_delta_desc dd;
    gck_status st = gck_delta_desc_of(delta, base_version, &dd);
    if (st != GCK_OK)
        return st;
    json_t *items = dd.items; /* dd.root is freed below */
    gck_snapshot *s = NULL;
    gck_dec_job *jobs = NULL;
    if ((st = gck_snapshot_create(delta->step, &s)) != GCK_OK ||
        (st = gck_snapshot_copy_fields(s, delta, GCK_DELTA_KEY)) != GCK_OK)
        goto done;
    /* all tensors in one buffer; the sizes are claims checked item by item */
    size_t total = 0;
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *o = json_array_get(items, i), *jshape = json_object_get(o, "shape");
        gck_dtype dt;
        size_t count = 1;
        int ok = json_is_array(jshape) && !json_is_true(json_object_get(o, "blob")) &&
                 gck_dtype_parse(json_string_value(json_object_get(o, "dtype")) ? json_string_value(json_object_get(o, "dtype")) : "", &dt);
        for (size_t d = 0; ok && d < json_array_size(jshape); d++) {
            json_t *v = json_array_get(jshape, d);
            ok = json_is_integer(v) && json_integer_value(v) >= 0 &&
                 gck_mul_size(count, (size_t)json_integer_value(v), &count);
        }
        if (ok && gck_mul_size(count, gck_dtype_size(dt), &count) && count <= SIZE_MAX - total - 64)
            total += (count + 63) / 64 * 64;
    }
    /* sizes are only claims here: reserve no more than the base and the
     * payloads could plausibly rebuild (each item is checked as it is
     * decoded), so a forged description cannot make us allocate much */
    size_t limit = 0;
    for (size_t i = 0; i < delta->tensors.n; i++)
        limit += ((const gck_snap_tensor *)delta->tensors.items[i])->nbytes;
    limit = limit > SIZE_MAX / 1024 ? SIZE_MAX / 2 : limit * 1024;
    for (size_t i = 0; base != NULL && i < base->tensors.n && limit < SIZE_MAX / 2; i++)
        limit += ((const gck_snap_tensor *)base->tensors.items[i])->nbytes;
    if (total <= limit)
        (void)gck_snapshot_reserve(s, total); /* failing it only means one allocation per tensor */
    /* every item parsed and placed, then the values rebuilt on threads
     * (tensors are independent: each one's bytes and id are the same
     * whichever thread rebuilds it), the first failure in item order */
    const size_t m = json_array_size(items);
    jobs = gck_calloc(m ? m : 1, sizeof *jobs);
    if (jobs == NULL) {
        st = gck_fail_oom("delta decoding jobs", (m ? m : 1) * sizeof *jobs);
        goto done;
    }
    for (size_t i = 0; i < m; i++)
        if ((st = gck_plan_dec(dd.chunk, dd.format, json_array_get(items, i), delta, base, s, &jobs[i])) != GCK_OK)
            goto done;
    const int threads = gck_code_threads(total, m);
    if ((st = gck_ensure_dslots(c, threads)) != GCK_OK)
        goto done;
    const long lm = (long)m;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
    for (long i = 0; i < lm; i++)
        gck_run_dec(&c->ds[gck_delta_slot()], dd.chunk, check, &jobs[i]);
    for (size_t i = 0; i < m; i++)
        if (jobs[i].err.st != GCK_OK) {
            st = gck_carried_fail(&jobs[i].err);
            goto done;
        }
    *out = s;
    s = NULL;
done:
    free(jobs);
    json_decref(dd.root);
    gck_snapshot_destroy(s);
    return st;
}
