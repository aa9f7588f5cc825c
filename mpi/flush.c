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
 * into the operand holding it, so the sum lands there without a copy. The
 * shape check is the one small collective: allocation failures and the
 * layers' steps (when they are all the same) travel in it. */
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
/* Slice boundaries are multiples of this many elements (64 bytes of f32). */
#define GCK_MPI_ALIGN 16

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

/* Slice q of n elements over P ranks: [lo, hi). */
static void gck_slice(size_t n, int q, int P, size_t *lo, size_t *hi)
{
    const size_t a = (size_t)((unsigned __int128)n * (unsigned)q / (unsigned)P);
    const size_t b = (size_t)((unsigned __int128)n * (unsigned)(q + 1) / (unsigned)P);
    *lo = q == 0 ? 0 : a - a % GCK_MPI_ALIGN;
    *hi = q + 1 == P ? n : b - b % GCK_MPI_ALIGN;
}

/* The rank's own data for flat elements [a, b): calls f for each piece
 * within one layer (lay, element offset in the layer, length, flat offset). */
typedef struct gck_flat {
    size_t np;
    const gck_pending_sum *L;
    const size_t *off; /* flat offset of each layer, np + 1 entries */
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

/* Copies the own layers' elements [a, b) to dst + a (the flat layout). */
static void gck_flat_pack(const gck_flat *F, size_t a, size_t b, size_t esz, void *dst)
{
    for (size_t k = gck_flat_layer(F, a); a < b && k < F->np && F->off[k] < b; k++) {
        const size_t s = F->off[k] > a ? F->off[k] : a, e = F->off[k + 1] < b ? F->off[k + 1] : b;
        if (s < e)
            memcpy((char *)dst + s * esz, (const char *)F->L[k].data + (s - F->off[k]) * esz, (e - s) * esz);
    }
}

/* The pieces of flat [a, b) cut at layer boundaries, into cut[0..n] (GCK_MPI_DIRECT_PIECES + 1
 * entries), when they may be sent one message each: one piece, or at most GCK_MPI_DIRECT_PIECES
 * of at least CH / GCK_MPI_DIRECT_PIECES elements each. Returns n, 0 for "pack". The sender of
 * a chunk and its receiver cut the same [a, b) of the same layers: the same messages. */
static int gck_direct_pieces(const gck_flat *F, size_t a, size_t b, size_t CH, size_t *cut)
{
    int n = 0;
    if (a >= b)
        return 0;
    cut[0] = a;
    for (size_t k = gck_flat_layer(F, a); k < F->np && F->off[k] < b; k++) {
        const size_t e = F->off[k + 1] < b ? F->off[k + 1] : b;
        if (e <= cut[n])
            continue; /* an empty layer */
        if (n == GCK_MPI_DIRECT_PIECES)
            return 0;
        cut[++n] = e;
    }
    for (int i = 0; n > 1 && i < n; i++)
        if (cut[i + 1] - cut[i] < CH / GCK_MPI_DIRECT_PIECES)
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

/* The exchange's per-call arrays, allocated before it starts (a rank that
 * cannot get them must say so before anybody sends). */
typedef struct gck_xbuf {
    size_t nch;       /* chunks per slice */
    MPI_Request *rq;  /* [2][2 (P - 1)] the reduce-scatter's, then [nch][2 (P - 1)] the allgather's */
    gck_opnd *ops;    /* P */
} gck_xbuf;

static int gck_xbuf_alloc(gck_xbuf *x, size_t N, int P, size_t esz)
{
    const size_t CH = GCK_MPI_CHUNK_BYTES / esz;
    size_t maxseg = 0;
    for (int q = 0; q < P; q++) {
        size_t lo, hi;
        gck_slice(N, q, P, &lo, &hi);
        maxseg = hi - lo > maxseg ? hi - lo : maxseg;
    }
    x->nch = maxseg == 0 ? 0 : (maxseg + CH - 1) / CH;
    x->rq = malloc(2 * (size_t)(P - 1) * (2 * GCK_MPI_DIRECT_PIECES + x->nch) * sizeof *x->rq);
    x->ops = malloc((size_t)P * sizeof *x->ops);
    return x->rq != NULL && x->ops != NULL;
}

static void gck_xbuf_free(gck_xbuf *x)
{
    free(x->rq), free(x->ops);
    *x = (gck_xbuf){0};
}

/* The reduce-scatter and allgather of the flat gradients into W, through
 * R's receive chunks. */
static void gck_exchange(MPI_Comm comm, int P, int me, const int *order, const uint64_t *all, const gck_flat *F,
                         int f64, void *W, char *R, const gck_xbuf *x)
{
    const size_t esz = f64 ? 8 : 4, N = F->off[F->np];
    const MPI_Datatype base = f64 ? MPI_DOUBLE : MPI_FLOAT;
    const size_t CH = GCK_MPI_CHUNK_BYTES / esz, nch = x->nch;
    /* the peer whose chunks land in W: the first in tree order */
    int direct = -1;
    for (int i = 0; i < P && direct < 0; i++)
        if (order[i] != me)
            direct = order[i];
    MPI_Request *rq = x->rq;
    gck_opnd *ops = x->ops;
    const size_t DP = GCK_MPI_DIRECT_PIECES, rslot = 2 * (size_t)(P - 1) * DP;
    MPI_Request *rs = rq;            /* [2][2 (P-1)][DP]: receives and sends of chunk c, c + 1 */
    MPI_Request *ag = rq + 2 * rslot; /* [nch][2 (P-1)]: the allgather's */
    for (size_t i = 0; i < 2 * rslot + 2 * (size_t)(P - 1) * nch; i++)
        rq[i] = MPI_REQUEST_NULL;
    size_t rcut[GCK_MPI_DIRECT_PIECES + 1], scut[GCK_MPI_DIRECT_PIECES + 1]; /* pieces received, sent */
    /* chunk c of slice q: [lo + c * CH, ...) clipped to the slice */
#define CHUNK(q, c, A, B)                                                                                           \
    do {                                                                                                            \
        size_t lo_, hi_;                                                                                            \
        gck_slice(N, (q), P, &lo_, &hi_);                                                                           \
        A = lo_ + (c) * CH < hi_ ? lo_ + (c) * CH : hi_;                                                            \
        B = A + CH < hi_ ? A + CH : hi_;                                                                            \
    } while (0)
    for (size_t c = 0; c <= nch; c++) {
        /* post chunk c's messages (one ahead of the summing below) */
        if (c < nch) {
            MPI_Request *w = rs + (c % 2) * rslot;
            size_t a, b, j = 0;
            CHUNK(me, c, a, b);
            const int nr = gck_direct_pieces(F, a, b, CH, rcut);
            for (int q = 0; q < P; q++) {
                if (q == me)
                    continue;
                char *dst = q == direct ? (char *)W + a * esz : R + ((c % 2) * (size_t)(P - 1) + j) * CH * esz;
                /* the peer sends the pieces this rank cuts, in order (same tag: matched in order) */
                for (int i = 0; i < nr; i++)
                    MPI_Irecv(dst + (rcut[i] - a) * esz, (int)(rcut[i + 1] - rcut[i]), base, q, (int)(c % 16384), comm,
                              &w[j * DP + (size_t)i]);
                if (nr == 0)
                    MPI_Irecv(dst, (int)(b - a), base, q, (int)(c % 16384), comm, &w[j * DP]);
                /* q's part of the own data: straight from the layers in a few large contiguous
                 * pieces (the transport may copy each once), else packed into its place in W
                 * (overwritten by the allgather only after this send completes) */
                size_t sa, sb;
                CHUNK(q, c, sa, sb);
                const int ns = gck_direct_pieces(F, sa, sb, CH, scut);
                for (int i = 0; i < ns; i++) {
                    const size_t k = gck_flat_layer(F, scut[i]);
                    const char *from = (const char *)F->L[k].data + (scut[i] - F->off[k]) * esz;
                    MPI_Isend(from, (int)(scut[i + 1] - scut[i]), base, q, (int)(c % 16384), comm,
                              &w[(P - 1 + j) * DP + (size_t)i]);
                }
                if (ns == 0) {
                    gck_flat_pack(F, sa, sb, esz, W);
                    MPI_Isend((char *)W + sa * esz, (int)(sb - sa), base, q, (int)(c % 16384), comm,
                              &w[(P - 1 + j) * DP]);
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
        for (int q = 0, j = 0; q < P; q++) {
            if (q == me)
                continue;
            size_t qa, qb;
            CHUNK(q, pc, qa, qb);
            MPI_Irecv((char *)W + qa * esz, (int)(qb - qa), base, q, (int)(16384 + pc % 16384), comm, &g[j++]);
        }
        size_t a, b;
        CHUNK(me, pc, a, b);
        for (size_t at = a; at < b;) {
            const size_t k = gck_flat_layer(F, at);
            const size_t e = F->off[k + 1] < b ? F->off[k + 1] : b;
            if (e <= at) /* cannot happen: the layer holding `at` is not empty */
                break;
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
                    ops[i].p = R + ((pc % 2) * (size_t)(P - 1) + (size_t)slot) * CH * esz + (at - a) * esz;
                }
            }
            gck_combine(f64, ops, P, own, e - at);
            at = e;
        }
        /* its allgather, point to point (progressed by every wait, unlike a nonblocking
         * collective), in flight while the next chunk is summed */
        for (int q = 0, j = 0; q < P; q++)
            if (q != me)
                MPI_Isend((char *)W + a * esz, (int)(b - a), base, q, (int)(16384 + pc % 16384), comm,
                          &g[P - 1 + j++]);
    }
#undef CHUNK
    MPI_Waitall((int)(2 * rslot), rs, MPI_STATUSES_IGNORE);
    MPI_Waitall((int)(2 * (size_t)(P - 1) * nch), ag, MPI_STATUSES_IGNORE);
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
    uint64_t *steps = malloc((np ? np : 1) * sizeof *steps);
    uint64_t desc[D_N] = {0};
    char why[512] = "";
    gck_xbuf xb = {0};
    void *W = NULL;
    char *R = NULL;
    const int f64 = cp != NULL && gck_checkpointer_config(cp)->dtype == GCK_DTYPE_F64;
    const size_t esz = f64 ? 8 : 4;
    if (cp == NULL) {
        desc[D_ERR] = E_NULL;
    } else if (L == NULL || off == NULL || all == NULL || order == NULL || wb == NULL || bb == NULL || red == NULL ||
               steps == NULL) {
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
        W = gck_mpi_grow(&g_scratch.w, &g_scratch.w_bytes, off[np] * esz);
        R = gck_mpi_grow(&g_scratch.r, &g_scratch.r_bytes, 2 * (size_t)(P - 1) * (GCK_MPI_CHUNK_BYTES / esz) * esz);
        if (W == NULL || R == NULL || !gck_xbuf_alloc(&xb, off[np], P, esz)) {
            desc[D_ERR] = E_LOCAL;
            snprintf(why, sizeof why, "out of memory for the exchange of %llu values", (unsigned long long)off[np]);
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
        if (P > 1)
            gck_exchange(comm, P, me, order, all, &F, f64, W, R, &xb);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        for (size_t k = 0; k < np; k++)
            red[k] = (gck_reduced_layer){.data = P > 1 ? (char *)W + off[k] * esz : (void *)L[k].data,
                                         .count = (size_t)K, .wsum = wsum, .step = steps[k]};
        st = gck_flush_reduced(cp, all[D_NOW], step, red, out);
    }
    gck_xbuf_free(&xb);
    free(L), free(off), free(all), free(order), free(wb), free(bb), free(red), free(steps);
    return st;
}
