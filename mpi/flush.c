/* mpi/flush.c - gck_mpi_flush: a data-parallel flush window summed across ranks in the checkpointer's tree order.
 *
 * Each rank's pending sums are one aligned block [first, first + m) of the
 * window's tree (gradckpt/reduction.h). The gradients of all pending layers,
 * taken one after the other, are cut into one slice per rank; rank q
 * receives every other rank's blocks of slice q, combines the blocks as the
 * tree over the global micro-batch indices does (so the rank count never
 * changes an operand), and the slices are then allgathered. Both phases go
 * in chunks: the next chunk's messages are posted before the current one is
 * summed, and each summed chunk's allgather runs while the next is summed.
 * A chunk sent goes out straight from the layers' buffers when it is a few
 * large pieces (one contiguous message each: the transport copies once),
 * else it is first packed into its place in the result buffer (the
 * allgather overwrites it only after the send); one peer's chunk is
 * received straight into its place in the result, and every merge writes
 * into the operand holding it, so the sum lands there without a copy. With
 * F32/F64 storage the result buffer is the memory of the checkpoint the
 * window records (laid out as it is, gaps between layers): each rank
 * finishes its slice run by run right after summing it (still in cache),
 * the allgather delivers finished values, and the runs' sums of squares
 * (slices and chunks are cut at the kernels' blocks of each layer) go to
 * every rank and combine in the kernels' pairwise order. The shape check
 * is the one small collective: allocation failures and the layers' steps
 * (when they are all the same) travel in it. */
#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gradckpt/kernels.h>
#include <gradckpt/mpi.h>
#include <gradckpt/reduction.h>

/* Bytes per chunk of a message: fewer, larger chunks pay fewer rendezvous round trips
 * (which cost most when ranks share cores); smaller ones overlap more. */
#define GCK_MPI_CHUNK_BYTES ((size_t)4 << 20)
/* A chunk whose pieces (cut at layer boundaries) each hold at least 1 / this of a chunk goes
 * out as one message per piece straight from the layers' buffers; others are packed first. */
#define GCK_MPI_DIRECT_PIECES 8
/* The kernels' reduction block (gradckpt/kernels.h): slices and chunks are cut at multiples of it
 * from each layer's start, so each rank's sums of squares of its pieces combine into the layers'. */
#define GCK_MPI_BLOCK ((size_t)8192)
/* A run summed and finished at once: an aligned power-of-two number of blocks, at most this many
 * (128 KiB of f32: the sum stays in L2 for the finishing pass; below the kernels' OpenMP size). */
#define GCK_MPI_RUN_BLOCKS 4

/* The shape descriptor every rank contributes to the one small collective. */
enum {
    D_ERR,       /* a local reason this rank cannot take part (E_*), 0 if none */
    D_FIRST,     /* first_index */
    D_COUNT,     /* m, the tensors per layer */
    D_LAYERS,    /* pending layers */
    D_ELEMS,     /* their total length */
    D_SHAPE,     /* FNV-1a of the layer ids and lengths */
    D_CONFIG,    /* FNV-1a of the config fields that change the result */
    D_WSUM,      /* the block's weight sum (bits of a double) */
    D_STEP,      /* the rank's global step */
    D_NOW,       /* the rank's wall clock */
    D_LUNI,      /* 1 when every pending layer's step is the same (the usual case) */
    D_LSTEP,     /* that step */
    D_N
};
enum { E_NONE, E_NOT_TREE, E_EMPTY, E_COUNTS, E_NOT_POW2, E_MISALIGNED, E_LOCAL, E_NULL, E_COUNT };

static const char *const gck_mpi_reasons[] = {
    "", "its checkpointer is not configured with GCK_REDUCE_TREE", "it has nothing pending",
    "its pending layers hold different numbers of tensors", "its tensor count per layer is not a power of two",
    "its first_index is not a multiple of its tensor count", "it failed locally", "its checkpointer is NULL"};

typedef struct gck_mpi_scratch {
    void *w;       /* the result: every pending layer's sum, one after the other */
    size_t w_bytes;
    void *r;       /* receive chunks: 2 x (P - 1) x chunk */
    size_t r_bytes;
} gck_mpi_scratch;

static _Thread_local gck_mpi_scratch g_scratch;

void gck_mpi_free_scratch(void)
{
    free(g_scratch.w);
    free(g_scratch.r);
    g_scratch = (gck_mpi_scratch){0};
}

static void *gck_mpi_grow(void **p, size_t *have, size_t bytes)
{
    if (bytes <= *have && *p != NULL)
        return *p;
    free(*p);
    *p = malloc(bytes ? bytes : 1);
    *have = *p != NULL ? bytes : 0;
    return *p;
}

static uint64_t gck_mix(uint64_t h, const void *p, size_t len)
{
    return gck_fnv1a64(p, len, h);
}

static uint64_t gck_dbits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double gck_bitsd(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

/* One pending block, as the tree sees it: [start, start + size). */
typedef struct gck_blk {
    uint64_t start, size;
} gck_blk;

/* An operand of the tree combination of one piece. */
typedef struct gck_opnd {
    gck_blk b;
    void *p;       /* NULL: the rank's own (read-only) block at own */
    int in_result; /* p points into the result: merges write here */
} gck_opnd;

/* The pending layers laid out one after the other in a flat space of elements: layer k's values
 * at [off[k], off[k] + L[k].n), gaps (padding, as in a checkpoint's memory) between layers. */
typedef struct gck_flat {
    size_t np;
    const gck_pending_sum *L;
    const size_t *off; /* flat offset of each layer, np + 1 entries (off[np]: the end) */
} gck_flat;

static size_t gck_flat_layer(const gck_flat *F, size_t at)
{
    size_t lo = 0, hi = F->np; /* the last layer with off <= at and a length */
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        if (F->off[mid] <= at)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* The end of layer k's values in the flat space. */
static size_t gck_flat_end(const gck_flat *F, size_t k)
{
    return F->off[k] + F->L[k].n;
}

/* The cut point at or below x: a multiple of GCK_MPI_BLOCK from its layer's start, or the
 * layer's end when x is past it (in the gap after it). */
static size_t gck_snap(const gck_flat *F, size_t x)
{
    if (F->np == 0)
        return x;
    const size_t k = gck_flat_layer(F, x), d = x - F->off[k];
    return d >= F->L[k].n ? gck_flat_end(F, k) : x - d % GCK_MPI_BLOCK;
}

/* Slice q of the flat space over P ranks: [lo, hi), cut points. */
static void gck_slice(const gck_flat *F, int q, int P, size_t *lo, size_t *hi)
{
    const size_t n = F->off[F->np];
    *lo = q == 0 ? 0 : gck_snap(F, (size_t)((unsigned __int128)n * (unsigned)q / (unsigned)P));
    *hi = q + 1 == P ? n : gck_snap(F, (size_t)((unsigned __int128)n * (unsigned)(q + 1) / (unsigned)P));
}

/* Chunk c of slice q: [A, B), cut points; at most CH + GCK_MPI_BLOCK elements. */
static void gck_chunk(const gck_flat *F, int q, int P, size_t CH, size_t c, size_t *A, size_t *B)
{
    size_t lo, hi;
    gck_slice(F, q, P, &lo, &hi);
    *A = c == 0 ? lo : lo + c * CH < hi ? gck_snap(F, lo + c * CH) : hi;
    *B = lo + (c + 1) * CH < hi ? gck_snap(F, lo + (c + 1) * CH) : hi;
}

/* The runs of flat [a, b) (cut points): each layer's values there in aligned power-of-two
 * runs of at most GCK_MPI_RUN_BLOCKS blocks from the layer's start, in order, gaps skipped. */
typedef struct gck_walk {
    const gck_flat *F;
    size_t at, b;
} gck_walk;

/* The next run: layer *k, flat [*at, *at + *len); 0 at the end. */
static int gck_walk_next(gck_walk *w, size_t *k, size_t *at, size_t *len)
{
    const gck_flat *F = w->F;
    while (w->at < w->b) {
        const size_t l = gck_flat_layer(F, w->at), end = gck_flat_end(F, l);
        if (w->at >= end) { /* a gap, or an empty layer */
            w->at = l + 1 < F->np && F->off[l + 1] < w->b ? F->off[l + 1] : w->b;
            continue;
        }
        const size_t e = end < w->b ? end : w->b, s = w->at - F->off[l], blk = s / GCK_MPI_BLOCK;
        size_t nb = GCK_MPI_RUN_BLOCKS; /* the largest aligned run that starts at s and fits */
        while (nb > 1 && (blk % nb != 0 || w->at + (nb - 1) * GCK_MPI_BLOCK >= e))
            nb /= 2;
        *k = l, *at = w->at;
        *len = nb * GCK_MPI_BLOCK < e - w->at ? nb * GCK_MPI_BLOCK : e - w->at;
        w->at += *len;
        return 1;
    }
    return 0;
}

/* Copies the own layers' elements [a, b) to dst + a (the flat layout). */
static void gck_flat_pack(const gck_flat *F, size_t a, size_t b, size_t esz, void *dst)
{
    for (size_t k = gck_flat_layer(F, a); a < b && k < F->np && F->off[k] < b; k++) {
        const size_t s = F->off[k] > a ? F->off[k] : a, e = gck_flat_end(F, k) < b ? gck_flat_end(F, k) : b;
        if (s < e)
            memcpy((char *)dst + s * esz, (const char *)F->L[k].data + (s - F->off[k]) * esz, (e - s) * esz);
    }
}

/* The pieces of flat [a, b) cut at layers' ends, [ps[i], pe[i]) (GCK_MPI_DIRECT_PIECES entries),
 * when they may be sent one message each: one piece, or at most GCK_MPI_DIRECT_PIECES of at
 * least CH / GCK_MPI_DIRECT_PIECES elements each. Returns n, 0 for "pack". The sender of a chunk
 * and its receiver cut the same [a, b) of the same layers: the same messages. */
static int gck_direct_pieces(const gck_flat *F, size_t a, size_t b, size_t CH, size_t *ps, size_t *pe)
{
    int n = 0;
    for (size_t k = a < b ? gck_flat_layer(F, a) : F->np; k < F->np && F->off[k] < b; k++) {
        const size_t s = F->off[k] > a ? F->off[k] : a, e = gck_flat_end(F, k) < b ? gck_flat_end(F, k) : b;
        if (e <= s)
            continue; /* an empty layer, or a start in the gap after the layer */
        if (n == GCK_MPI_DIRECT_PIECES)
            return 0;
        ps[n] = s, pe[n] = e, n++;
    }
    for (int i = 0; n > 1 && i < n; i++)
        if (pe[i] - ps[i] < CH / GCK_MPI_DIRECT_PIECES)
            return 0;
    return n;
}

static void gck_add_any(int f64, void *acc, const void *x, size_t n)
{
    if (f64)
        gck_add_f64(acc, x, n);
    else
        gck_add_f32(acc, x, n);
}

/* left + right, written into the operand that holds the result, else into
 * a writable one (addition is commutative bit for bit). */
static gck_opnd gck_merge(int f64, gck_opnd l, gck_opnd r, const void *own, size_t n)
{
    gck_opnd into = l.in_result || (!r.in_result && l.p != NULL) ? l : r;
    const gck_opnd from = into.p == l.p ? r : l;
    gck_add_any(f64, into.p, from.p != NULL ? from.p : own, n);
    into.b = (gck_blk){l.b.start, l.b.size + r.b.size};
    return into;
}

/* Combines the P blocks (in tree order: sorted by start) of one piece of n
 * elements as the tree over their indices: a binary counter over aligned
 * blocks, then a fold from the right. ops[i].p NULL: own. */
static void gck_combine(int f64, gck_opnd *ops, int P, const void *own, size_t n)
{
    gck_opnd st[130];
    int d = 0;
    for (int i = 0; i < P; i++) {
        st[d++] = ops[i];
        while (d >= 2 && st[d - 2].b.size == st[d - 1].b.size && st[d - 2].b.start % (2 * st[d - 2].b.size) == 0) {
            st[d - 2] = gck_merge(f64, st[d - 2], st[d - 1], own, n);
            d--;
        }
    }
    while (d >= 2) {
        st[d - 2] = gck_merge(f64, st[d - 2], st[d - 1], own, n);
        d--;
    }
}

/* The same tree over the blocks' weight sums. */
static double gck_combine_w(const gck_blk *b, const double *w, int P)
{
    gck_blk sb[130];
    double sw[130] = {0};
    int d = 0;
    for (int i = 0; i < P; i++) {
        sb[d] = b[i], sw[d] = w[i], d++;
        while (d >= 2 && sb[d - 2].size == sb[d - 1].size && sb[d - 2].start % (2 * sb[d - 2].size) == 0) {
            sw[d - 2] = sw[d - 2] + sw[d - 1];
            sb[d - 2].size *= 2;
            d--;
        }
    }
    for (; d >= 2; d--)
        sw[d - 2] = sw[d - 2] + sw[d - 1];
    return sw[0];
}

/* Fills the local descriptor; L gets the pending sums (np of them). */
static void gck_local(gck_checkpointer *cp, uint64_t first, int P, gck_pending_sum *L, size_t np, uint64_t *desc,
                      char *why, size_t whylen)
{
    const gck_config *cfg = gck_checkpointer_config(cp);
    uint64_t shape = GCK_FNV1A64_INIT, conf = GCK_FNV1A64_INIT, elems = 0;
    int err = cfg->reduction != GCK_REDUCE_TREE ? E_NOT_TREE : np == 0 ? E_EMPTY : E_NONE;
    for (size_t k = 0; k < np && err == E_NONE; k++) {
        if (gck_pending_sum_get(cp, k, &L[k]) != GCK_OK) {
            err = E_LOCAL;
            snprintf(why, whylen, "%s", gck_last_error());
            break;
        }
        const uint64_t n = L[k].n;
        shape = gck_mix(gck_mix(shape, L[k].layer_id, strlen(L[k].layer_id) + 1), &n, sizeof n);
        elems += n;
        if (L[k].count != L[0].count)
            err = E_COUNTS;
    }
    const uint64_t m = err == E_NONE ? L[0].count : 0;
    if (err == E_NONE && P > 1 && (m & (m - 1)) != 0) /* one rank: any count (its own tree) */
        err = E_NOT_POW2;
    else if (err == E_NONE && P > 1 && first % m != 0)
        err = E_MISALIGNED;
    const int64_t cf[6] = {cfg->accumulation_mode, cfg->dtype, cfg->clip_enabled, cfg->error_if_nonfinite,
                           cfg->checksum, cfg->clip_enabled ? (int64_t)gck_dbits(cfg->clip_norm) : 0};
    conf = gck_mix(conf, cf, sizeof cf);
    desc[D_ERR] = (uint64_t)err;
    desc[D_FIRST] = first;
    desc[D_COUNT] = m;
    desc[D_LAYERS] = np;
    desc[D_ELEMS] = elems;
    desc[D_SHAPE] = shape;
    desc[D_CONFIG] = conf;
    desc[D_WSUM] = gck_dbits(err == E_NONE ? L[0].wsum : 0.0);
    desc[D_STEP] = gck_global_step(cp);
    desc[D_NOW] = (uint64_t)time(NULL);
    desc[D_LUNI] = err == E_NONE;
    for (size_t k = 1; k < np && desc[D_LUNI]; k++)
        desc[D_LUNI] = L[k].step == L[0].step;
    desc[D_LSTEP] = err == E_NONE ? L[0].step : 0;
}

/* Every rank judges all descriptors the same way: the same status on each. */
static gck_status gck_judge(const uint64_t *all, int P, int me, const char *why, int *order)
{
    for (int r = 0; r < P; r++) {
        const uint64_t *d = all + (size_t)r * D_N;
        if (d[D_ERR] != E_NONE) {
            const gck_status s = d[D_ERR] == E_EMPTY ? GCK_ERR_NO_ACCUMULATED_GRADIENTS
                                 : d[D_ERR] == E_LOCAL ? GCK_ERR_NO_MEMORY
                                 : d[D_ERR] == E_NULL  ? GCK_ERR_INVALID_ARGUMENT
                                                       : GCK_ERR_INVALID_ARGUMENT;
            return gck_report_error(s, "gck_mpi_flush: rank %d cannot take part: %s%s%s", r,
                                    gck_mpi_reasons[d[D_ERR] < E_COUNT ? d[D_ERR] : E_LOCAL],
                                    r == me && d[D_ERR] == E_LOCAL ? ": " : "", r == me ? why : "");
        }
    }
    for (int r = 1; r < P; r++) {
        const uint64_t *d = all + (size_t)r * D_N;
        if (d[D_LAYERS] != all[D_LAYERS] || d[D_ELEMS] != all[D_ELEMS] || d[D_SHAPE] != all[D_SHAPE])
            return gck_report_error(GCK_ERR_DIMENSION_MISMATCH,
                                    "gck_mpi_flush: rank %d's pending layers (%llu layers, %llu values) differ from "
                                    "rank 0's (%llu layers, %llu values) in ids or lengths",
                                    r, (unsigned long long)d[D_LAYERS], (unsigned long long)d[D_ELEMS],
                                    (unsigned long long)all[D_LAYERS], (unsigned long long)all[D_ELEMS]);
        if (d[D_CONFIG] != all[D_CONFIG])
            return gck_report_error(GCK_ERR_INVALID_ARGUMENT,
                                    "gck_mpi_flush: rank %d's config (mode, dtype, clipping, checksum or "
                                    "error_if_nonfinite) differs from rank 0's", r);
    }
    /* the ranges, sorted by first index (insertion: P is small), tile [0, K) */
    for (int r = 0; r < P; r++) {
        int i = r;
        for (; i > 0 && all[(size_t)order[i - 1] * D_N + D_FIRST] > all[(size_t)r * D_N + D_FIRST]; i--)
            order[i] = order[i - 1];
        order[i] = r;
    }
    uint64_t next = 0;
    for (int i = 0; i < P; i++) {
        const uint64_t *d = all + (size_t)order[i] * D_N;
        if (d[D_FIRST] != next)
            return gck_report_error(GCK_ERR_INVALID_ARGUMENT,
                                    "gck_mpi_flush: rank %d's micro-batches start at %llu, but the ranks before it "
                                    "end at %llu (the ranges must tile [0, K) without gaps or overlaps)",
                                    order[i], (unsigned long long)d[D_FIRST], (unsigned long long)next);
        next += d[D_COUNT];
    }
    if (all[D_ELEMS] > (uint64_t)INT_MAX)
        return gck_report_error(GCK_ERR_UNSUPPORTED, "gck_mpi_flush: %llu values are more than INT_MAX",
                                (unsigned long long)all[D_ELEMS]);
    return GCK_OK;
}

/* Finishing in the exchange: each rank finishes its own slice as it sums it, writing straight
 * into the staged checkpoint, and keeps the sums of squares of its runs; the runs' sums then go
 * to every peer, and every rank combines each layer's runs in the kernels' block order. */
typedef struct gck_fin {
    const gck_checkpointer *cp;
    size_t count; /* the window's tensors */
    double wsum;
} gck_fin;

/* The exchange's per-call arrays, allocated before it starts (a rank that
 * cannot get them must say so before anybody sends). */
typedef struct gck_xbuf {
    size_t nch;       /* chunks per slice */
    MPI_Request *rq;  /* [2][2 (P - 1)][DP] the reduce-scatter's, [nch][2 (P - 1)] the allgather's, 2 (P - 1) the runs' */
    gck_opnd *ops;    /* P */
    size_t *sq_at;    /* finishing: slice q's runs' sums start at sq[sq_at[q]], P + 1 entries */
    double *sq;
} gck_xbuf;

/* The runs of slice q, chunk after chunk (the order its rank finishes them in). */
#define GCK_FOR_EACH_RUN(F, q, P, CH, nch, k, at, len)                                                          \
    for (size_t c_ = 0, A_, B_; c_ < (nch); c_++)                                                               \
        for (gck_walk w_ = (gck_chunk((F), (q), (P), (CH), c_, &A_, &B_), (gck_walk){(F), A_, B_});            \
             gck_walk_next(&w_, &(k), &(at), &(len));)

static int gck_xbuf_alloc(gck_xbuf *x, const gck_flat *F, int P, size_t esz, int fin)
{
    const size_t CH = GCK_MPI_CHUNK_BYTES / esz;
    size_t maxseg = 0;
    for (int q = 0; q < P; q++) {
        size_t lo, hi;
        gck_slice(F, q, P, &lo, &hi);
        maxseg = hi - lo > maxseg ? hi - lo : maxseg;
    }
    x->nch = maxseg == 0 ? 0 : (maxseg + CH - 1) / CH;
    x->rq = malloc(2 * (size_t)(P - 1) * (2 * GCK_MPI_DIRECT_PIECES + x->nch + 1) * sizeof *x->rq);
    x->ops = malloc((size_t)P * sizeof *x->ops);
    x->sq_at = calloc((size_t)P + 1, sizeof *x->sq_at);
    if (x->rq == NULL || x->ops == NULL || x->sq_at == NULL)
        return 0;
    for (int q = 0; fin && q < P; q++) {
        size_t k, at, len, runs = 0;
        GCK_FOR_EACH_RUN(F, q, P, CH, x->nch, k, at, len)
            runs++;
        x->sq_at[q + 1] = x->sq_at[q] + runs;
    }
    x->sq = malloc((x->sq_at[P] ? x->sq_at[P] : 1) * sizeof *x->sq);
    return x->sq != NULL;
}

static void gck_xbuf_free(gck_xbuf *x)
{
    free(x->rq), free(x->ops), free(x->sq_at), free(x->sq);
    *x = (gck_xbuf){0};
}

/* The pairwise combining of block results (kernels.h): aligned power-of-two runs of blocks
 * pushed in order, equal neighbours merged left + right, the rest folded from the right. */
typedef struct gck_pairwise {
    double v[64];
    uint64_t w[64];
    int top;
} gck_pairwise;

static void gck_pairwise_push(gck_pairwise *p, double v, uint64_t w)
{
    for (; p->top > 0 && p->w[p->top - 1] == w; w *= 2)
        v = p->v[--p->top] + v;
    p->v[p->top] = v, p->w[p->top] = w, p->top++;
}

static double gck_pairwise_finish(gck_pairwise *p)
{
    double v = p->top > 0 ? p->v[--p->top] : 0.0;
    while (p->top > 0)
        v = p->v[--p->top] + v;
    return v;
}

/* Every layer's sum of squares from all slices' runs (x->sq, every rank's received). */
static void gck_layer_sumsq(const gck_flat *F, int P, size_t CH, const gck_xbuf *x, gck_finished_layer *out)
{
    gck_pairwise pw = {.top = 0};
    size_t cur = F->np, i = 0;
    for (size_t k = 0; k < F->np; k++)
        out[k].sumsq = 0.0;
    for (int q = 0; q < P; q++) {
        size_t k, at, len;
        GCK_FOR_EACH_RUN(F, q, P, CH, x->nch, k, at, len) {
            if (k != cur && cur < F->np)
                out[cur].sumsq = gck_pairwise_finish(&pw);
            cur = k;
            gck_pairwise_push(&pw, x->sq[i++], (len + GCK_MPI_BLOCK - 1) / GCK_MPI_BLOCK);
        }
    }
    if (cur < F->np)
        out[cur].sumsq = gck_pairwise_finish(&pw);
}

/* The reduce-scatter and allgather of the flat gradients into W, through
 * R's receive chunks; with fin, the own slice is finished as it is summed
 * and the runs' sums of squares exchanged into x->sq. */
static void gck_exchange(MPI_Comm comm, int P, int me, const int *order, const uint64_t *all, const gck_flat *F,
                         int f64, void *W, char *R, const gck_xbuf *x, const gck_fin *fin)
{
    const size_t esz = f64 ? 8 : 4;
    const MPI_Datatype base = f64 ? MPI_DOUBLE : MPI_FLOAT;
    const size_t CH = GCK_MPI_CHUNK_BYTES / esz, RS = CH + GCK_MPI_BLOCK, nch = x->nch;
    /* the peer whose chunks land in W: the first in tree order */
    int direct = -1;
    for (int i = 0; i < P && direct < 0; i++)
        if (order[i] != me)
            direct = order[i];
    MPI_Request *rq = x->rq;
    gck_opnd *ops = x->ops;
    const size_t DP = GCK_MPI_DIRECT_PIECES, rslot = 2 * (size_t)(P - 1) * DP;
    MPI_Request *rs = rq;             /* [2][2 (P-1)][DP]: receives and sends of chunk c, c + 1 */
    MPI_Request *ag = rq + 2 * rslot; /* [nch][2 (P-1)]: the allgather's */
    MPI_Request *sr = ag + 2 * (size_t)(P - 1) * nch; /* [2 (P-1)]: the runs' sums */
    for (size_t i = 0; i < 2 * rslot + 2 * (size_t)(P - 1) * (nch + 1); i++)
        rq[i] = MPI_REQUEST_NULL;
    size_t rps[GCK_MPI_DIRECT_PIECES], rpe[GCK_MPI_DIRECT_PIECES]; /* pieces received */
    size_t sps[GCK_MPI_DIRECT_PIECES], spe[GCK_MPI_DIRECT_PIECES]; /* pieces sent */
    double *sq = fin != NULL ? x->sq + x->sq_at[me] : NULL;
    /* tags: the reduce-scatter's chunk c, then the allgather's, then the runs' sums (c < 4096:
     * at most INT_MAX f64 values in chunks of GCK_MPI_CHUNK_BYTES) */
    enum { TAG_RS = 0, TAG_AG = 8192, TAG_SQ = 16384 };
    for (size_t c = 0; c <= nch; c++) {
        /* post chunk c's messages (one ahead of the summing below) */
        if (c < nch) {
            MPI_Request *w = rs + (c % 2) * rslot;
            size_t a, b, j = 0;
            gck_chunk(F, me, P, CH, c, &a, &b);
            const int nr = gck_direct_pieces(F, a, b, CH, rps, rpe);
            const int tag = TAG_RS + (int)(c % 8192);
            for (int q = 0; q < P; q++) {
                if (q == me)
                    continue;
                char *dst = q == direct ? (char *)W + a * esz : R + ((c % 2) * (size_t)(P - 1) + j) * RS * esz;
                /* the peer sends the pieces this rank cuts, in order (same tag: matched in order) */
                for (int i = 0; i < nr; i++)
                    MPI_Irecv(dst + (rps[i] - a) * esz, (int)(rpe[i] - rps[i]), base, q, tag, comm,
                              &w[j * DP + (size_t)i]);
                if (nr == 0)
                    MPI_Irecv(dst, (int)(b - a), base, q, tag, comm, &w[j * DP]);
                /* q's part of the own data: straight from the layers in a few large contiguous
                 * pieces (the transport may copy each once), else packed into its place in W
                 * (overwritten by the allgather only after this send completes) */
                size_t sa, sb;
                gck_chunk(F, q, P, CH, c, &sa, &sb);
                const int ns = gck_direct_pieces(F, sa, sb, CH, sps, spe);
                for (int i = 0; i < ns; i++) {
                    const size_t k = gck_flat_layer(F, sps[i]);
                    const char *from = (const char *)F->L[k].data + (sps[i] - F->off[k]) * esz;
                    MPI_Isend(from, (int)(spe[i] - sps[i]), base, q, tag, comm, &w[(P - 1 + j) * DP + (size_t)i]);
                }
                if (ns == 0) {
                    gck_flat_pack(F, sa, sb, esz, W);
                    MPI_Isend((char *)W + sa * esz, (int)(sb - sa), base, q, tag, comm, &w[(P - 1 + j) * DP]);
                }
                j++;
            }
        }
        if (c == 0)
            continue;
        /* sum chunk c - 1 of the own slice */
        const size_t pc = c - 1;
        MPI_Request *w = rs + (pc % 2) * rslot;
        MPI_Waitall((int)rslot, w, MPI_STATUSES_IGNORE);
        /* the peers' chunk pc of their slices: their places in W held only what went out to
         * them in chunk pc (sent: the wait above) */
        MPI_Request *g = ag + pc * 2 * (size_t)(P - 1);
        const int tag = TAG_AG + (int)(pc % 8192);
        for (int q = 0, j = 0; q < P; q++) {
            if (q == me)
                continue;
            size_t qa, qb;
            gck_chunk(F, q, P, CH, pc, &qa, &qb);
            MPI_Irecv((char *)W + qa * esz, (int)(qb - qa), base, q, tag, comm, &g[j++]);
        }
        size_t a, b, k, at, len;
        gck_chunk(F, me, P, CH, pc, &a, &b);
        for (gck_walk wk = {F, a, b}; gck_walk_next(&wk, &k, &at, &len);) {
            const void *own = (const char *)F->L[k].data + (at - F->off[k]) * esz;
            for (int i = 0, slot = 0; i < P; i++) {
                const int r = order[i];
                const uint64_t *d = all + (size_t)r * D_N;
                ops[i] = (gck_opnd){.b = {d[D_FIRST], d[D_COUNT]}, .in_result = r == direct};
                if (r == direct)
                    ops[i].p = (char *)W + at * esz;
                else if (r != me) {
                    /* receive slots: the peers in rank order */
                    slot = 0;
                    for (int q = 0; q < r; q++)
                        slot += q != me;
                    ops[i].p = R + ((pc % 2) * (size_t)(P - 1) + (size_t)slot) * RS * esz + (at - a) * esz;
                }
            }
            /* the sum lands in W (the direct peer's operand); finished there while it is in cache */
            gck_combine(f64, ops, P, own, len);
            if (fin != NULL) {
                void *v = (char *)W + at * esz;
                *sq++ = gck_flush_finish_values(fin->cp, fin->count, fin->wsum, v, v, len);
            }
        }
        /* its allgather, point to point (progressed by every wait, unlike a nonblocking
         * collective), in flight while the next chunk is summed */
        for (int q = 0, j = 0; q < P; q++)
            if (q != me)
                MPI_Isend((char *)W + a * esz, (int)(b - a), base, q, tag, comm, &g[P - 1 + j++]);
    }
    /* the runs' sums of squares: every slice's to every rank */
    for (int q = 0, j = 0; fin != NULL && q < P; q++) {
        if (q == me)
            continue;
        MPI_Irecv(x->sq + x->sq_at[q], (int)(x->sq_at[q + 1] - x->sq_at[q]), MPI_DOUBLE, q, TAG_SQ, comm, &sr[j]);
        MPI_Isend(x->sq + x->sq_at[me], (int)(x->sq_at[me + 1] - x->sq_at[me]), MPI_DOUBLE, q, TAG_SQ, comm,
                  &sr[P - 1 + j]);
        j++;
    }
    MPI_Waitall((int)(2 * rslot), rs, MPI_STATUSES_IGNORE);
    MPI_Waitall((int)(2 * (size_t)(P - 1) * (nch + 1)), ag, MPI_STATUSES_IGNORE);
}

gck_status gck_mpi_flush(gck_checkpointer *cp, MPI_Comm comm, uint64_t first_index, gck_checkpoint **out)
{
    int P, me;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &me);
    const size_t np = cp != NULL ? gck_pending_layers(cp, NULL, 0) : 0;
    gck_pending_sum *L = calloc(np ? np : 1, sizeof *L);
    size_t *off = calloc(np + 1, sizeof *off);
    uint64_t *all = calloc((size_t)P * D_N, sizeof *all);
    int *order = calloc((size_t)P, sizeof *order);
    double *wb = calloc((size_t)P, sizeof *wb);
    gck_blk *bb = calloc((size_t)P, sizeof *bb);
    gck_reduced_layer *red = calloc(np ? np : 1, sizeof *red);
    gck_finished_layer *fl = calloc(np ? np : 1, sizeof *fl);
    void **vals = calloc(np ? np : 1, sizeof *vals);
    uint64_t *steps = malloc((np ? np : 1) * sizeof *steps);
    uint64_t desc[D_N] = {0};
    char why[512] = "";
    gck_xbuf xb = {0};
    void *W = NULL;
    char *R = NULL;
    const int f64 = cp != NULL && gck_checkpointer_config(cp)->dtype == GCK_DTYPE_F64;
    const size_t esz = f64 ? 8 : 4;
    /* F32 and F64 are finished within the exchange, straight into the checkpoint's memory; BF16
     * storage is finished by gck_flush_reduced from the exchanged f32 sums */
    const int staged = P > 1 && cp != NULL && gck_checkpointer_config(cp)->dtype != GCK_DTYPE_BF16;
    if (cp == NULL) {
        desc[D_ERR] = E_NULL;
    } else if (L == NULL || off == NULL || all == NULL || order == NULL || wb == NULL || bb == NULL || red == NULL ||
               steps == NULL || fl == NULL || vals == NULL) {
        desc[D_ERR] = E_LOCAL;
        snprintf(why, sizeof why, "out of memory for %zu layers", np);
    } else {
        gck_local(cp, first_index, P, L, np, desc, why, sizeof why);
        for (size_t k = 0; k < np && desc[D_ERR] == E_NONE; k++)
            off[k + 1] = off[k] + L[k].n;
    }
    /* the exchange's memory, taken before the one collective: a rank that cannot get it says so
     * there, and nobody sends (beyond INT_MAX values the check below refuses the call anyway) */
    if (desc[D_ERR] == E_NONE && P > 1 && off[np] <= (uint64_t)INT_MAX) {
        if (staged && gck_flush_stage(cp, vals) == GCK_OK) {
            /* the flat space: the checkpoint's memory, layers at their places in it */
            W = vals[0];
            for (size_t k = 1; k < np; k++)
                off[k] = (size_t)((char *)vals[k] - (char *)W) / esz;
            off[np] = off[np - 1] + L[np - 1].n;
        } else if (!staged) {
            W = gck_mpi_grow(&g_scratch.w, &g_scratch.w_bytes, off[np] * esz);
        }
        const gck_flat F = {.np = np, .L = L, .off = off};
        const size_t rs = GCK_MPI_CHUNK_BYTES / esz + GCK_MPI_BLOCK;
        R = gck_mpi_grow(&g_scratch.r, &g_scratch.r_bytes, 2 * (size_t)(P - 1) * rs * esz);
        if (W == NULL || R == NULL || !gck_xbuf_alloc(&xb, &F, P, esz, staged)) {
            desc[D_ERR] = E_LOCAL;
            snprintf(why, sizeof why, "out of memory for the exchange of %llu values%s%s",
                     (unsigned long long)off[np], W == NULL && staged ? ": " : "",
                     W == NULL && staged ? gck_last_error() : "");
        }
    }
    /* the one small collective: everybody learns everybody's shape */
    uint64_t *gather = all != NULL ? all : desc; /* all NULL: this rank fails below anyway */
    if (all == NULL) {
        uint64_t *tmp = malloc((size_t)P * D_N * sizeof *tmp);
        gather = tmp != NULL ? tmp : desc;
    }
    MPI_Allgather(desc, D_N, MPI_UINT64_T, gather, D_N, MPI_UINT64_T, comm);
    gck_status st;
    if (all == NULL) {
        st = gck_report_error(GCK_ERR_NO_MEMORY, "gck_mpi_flush: rank %d: %s", me, why);
        if (gather != desc)
            free(gather);
    } else {
        st = gck_judge(all, P, me, why, order);
    }
    if (st == GCK_OK) {
        const gck_flat F = {.np = np, .L = L, .off = off};
        uint64_t step = 0;
        for (int i = 0; i < P; i++) {
            const uint64_t *d = all + (size_t)order[i] * D_N;
            bb[i] = (gck_blk){d[D_FIRST], d[D_COUNT]};
            wb[i] = gck_bitsd(d[D_WSUM]);
            step += all[(size_t)i * D_N + D_STEP];
        }
        const double wsum = gck_combine_w(bb, wb, P);
        const uint64_t K = bb[P - 1].start + bb[P - 1].size;
        /* the layers' steps: those of the rank holding micro-batch K - 1, from its descriptor when
         * they are all the same, else in flight with the exchange */
        const uint64_t *last = all + (size_t)order[P - 1] * D_N;
        for (size_t k = 0; k < np; k++)
            steps[k] = last[D_LUNI] ? last[D_LSTEP] : L[k].step;
        MPI_Request sreq = MPI_REQUEST_NULL;
        if (!last[D_LUNI])
            MPI_Ibcast(steps, (int)np, MPI_UINT64_T, order[P - 1], comm, &sreq);
        const gck_fin fin = {.cp = cp, .count = (size_t)K, .wsum = wsum};
        if (P > 1)
            gck_exchange(comm, P, me, order, all, &F, f64, W, R, &xb, staged ? &fin : NULL);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        if (staged) {
            gck_layer_sumsq(&F, P, GCK_MPI_CHUNK_BYTES / esz, &xb, fl);
            for (size_t k = 0; k < np; k++)
                fl[k].step = steps[k];
            st = gck_flush_finished(cp, all[D_NOW], step, fl, out);
        } else {
            for (size_t k = 0; k < np; k++)
                red[k] = (gck_reduced_layer){.data = P > 1 ? (char *)W + off[k] * esz : (void *)L[k].data,
                                             .count = (size_t)K, .wsum = wsum, .step = steps[k]};
            st = gck_flush_reduced(cp, all[D_NOW], step, red, out);
        }
    } else if (staged) {
        gck_flush_unstage(cp); /* nothing was written into it */
    }
    gck_xbuf_free(&xb);
    free(L), free(off), free(all), free(order), free(wb), free(bb), free(red), free(fl), free(vals), free(steps);
    return st;
}
