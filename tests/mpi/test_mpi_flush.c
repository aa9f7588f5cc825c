/* tests/mpi/test_mpi_flush.c - gck_mpi_flush under mpirun -np P: bit-identical to one process in tree order for
 * every P, and mismatches fail on every rank with the same status.
 *
 * Every rank builds the same random cases (seeded), takes its share of the
 * window's K micro-batches (aligned power-of-two blocks, assigned to the
 * ranks in reverse order so rank order and index order differ), and
 * compares what gck_mpi_flush records with what one local checkpointer
 * accumulating all K records: values, norms, checksum, steps. The checksums
 * are also compared across ranks. Links only the public libraries
 * (libgradckpt_mpi and the shared libgradckpt), as a user's program does. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <gradckpt/gradckpt.h>
#include <gradckpt/mpi.h>

#include "support/gck_same_checkpoint.h"

static int g_rank, g_size;

static uint64_t rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t z = *s;
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdULL;
    return z ^ (z >> 29);
}

/* Ill-scaled values (exponents over a wide range) so sums depend on order. */
static double val(uint64_t seed, size_t i)
{
    uint64_t s = seed * 0x9e3779b97f4a7c15ULL + i;
    const uint64_t r = rnd(&s);
    const double m = (double)(r >> 11) / 9007199254740992.0 - 0.5;
    return ldexp(m, (int)(r % 40) - 20);
}

#define MAXL 6
typedef struct tcase {
    gck_config cfg;
    double w[16];
    int nl;
    char ids[MAXL][16];
    size_t n[MAXL];
    int f32in;
    int mixed_steps; /* the layers of a micro-batch get different steps (gck_mpi_flush then broadcasts them) */
    int K;
} tcase;

static void make_case(tcase *t, uint64_t seed)
{
    uint64_t s = seed * 977 + 3;
    memset(t, 0, sizeof *t);
    gck_config_init(&t->cfg);
    t->cfg.reduction = GCK_REDUCE_TREE;
    t->cfg.accumulation_mode = (gck_accum_mode)(rnd(&s) % 3);
    static const gck_dtype storage[3] = {GCK_DTYPE_F64, GCK_DTYPE_F32, GCK_DTYPE_BF16}; /* BF16: f32 sums */
    t->cfg.dtype = storage[rnd(&s) % 3];
    t->cfg.clip_enabled = (int)(rnd(&s) % 2);
    t->cfg.clip_norm = 0.01 + (double)(rnd(&s) % 100) * 0.01;
    t->cfg.max_checkpoints = 2;
    for (int j = 0; j < 16; j++)
        t->w[j] = (double)(rnd(&s) % 64) / 16.0 - 1.0;
    static const int Ks[] = {8, 12, 16};
    t->K = Ks[rnd(&s) % 3];
    t->nl = 1 + (int)(rnd(&s) % MAXL);
    static const size_t lens[] = {0, 1, 7, 33, 4099, 70001, 400003};
    for (int l = 0; l < t->nl; l++) {
        snprintf(t->ids[l], sizeof t->ids[l], "l%02d", l);
        t->n[l] = lens[rnd(&s) % (seed % 4 == 0 ? 7 : 6)];
    }
    t->f32in = (int)(rnd(&s) % 2);
    t->mixed_steps = (int)(seed % 2);
}

/* The window's K split into P aligned power-of-two blocks: the binary
 * decomposition of K, the largest block halved until there are P (or
 * fewer when P > K). Block b goes to rank P - 1 - b. 0 when K cannot be
 * split into P blocks of a power of two each (then P = 1 holds all). */
static int rank_block(int K, int P, int rank, int *first, int *m)
{
    int st[64], sz[64], nb = 0;
    for (int b = 1 << 20, at = 0; b > 0; b >>= 1)
        if (K & b)
            st[nb] = at, sz[nb] = b, at += b, nb++;
    if (P == 1) {
        *first = 0, *m = K;
        return 1;
    }
    if (nb > P)
        return 0;
    while (nb < P) {
        int big = 0;
        for (int i = 1; i < nb; i++)
            big = sz[i] > sz[big] ? i : big;
        if (sz[big] == 1)
            return 0;
        memmove(&st[big + 1], &st[big], (size_t)(nb - big) * sizeof *st);
        memmove(&sz[big + 1], &sz[big], (size_t)(nb - big) * sizeof *sz);
        sz[big] /= 2, sz[big + 1] = sz[big], st[big + 1] = st[big] + sz[big];
        nb++;
    }
    *first = st[P - 1 - rank], *m = sz[P - 1 - rank];
    return 1;
}

static void feed(gck_checkpointer *cp, const tcase *t, int j, uint64_t seed)
{
    for (int l = t->nl - 1; l >= 0; l--) {
        const size_t n = t->n[l];
        void *v = malloc((n ? n : 1) * 8);
        for (size_t i = 0; i < n; i++) {
            const double x = val(seed * 131 + (uint64_t)(l * 64 + j), i);
            if (t->f32in)
                ((float *)v)[i] = (float)x;
            else
                ((double *)v)[i] = x;
        }
        const uint64_t step = t->mixed_steps ? (uint64_t)j * 100 + (uint64_t)l : (uint64_t)j;
        const gck_status s = t->f32in ? gck_accumulate_f32(cp, t->ids[l], v, n, step)
                                      : gck_accumulate_f64(cp, t->ids[l], v, n, step);
        assert_int_equal(s, GCK_OK);
        free(v);
    }
}

static void test_bit_identical_to_one_process(void **state)
{
    (void)state;
    int ran = 0;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        tcase t;
        make_case(&t, seed);
        int first, m;
        if (!rank_block(t.K, g_size, g_rank, &first, &m))
            continue;
        ran++;
        gck_config mine = t.cfg;
        mine.weights = t.w + first;
        mine.n_weights = (size_t)m;
        gck_config all = t.cfg;
        all.weights = t.w;
        all.n_weights = (size_t)t.K;
        gck_checkpointer *cp = NULL, *ref = NULL;
        assert_int_equal(gck_checkpointer_create(&mine, &cp), GCK_OK);
        assert_int_equal(gck_checkpointer_create(&all, &ref), GCK_OK);
        /* two windows: scratch reuse, the id sequence, steps adding up */
        for (int win = 0; win < 2; win++) {
            const uint64_t ws = seed * 10 + (uint64_t)win;
            for (int j = 0; j < t.K; j++) {
                feed(ref, &t, j, ws);
                if (j >= first && j < first + m)
                    feed(cp, &t, j, ws);
            }
            gck_checkpoint *got = NULL, *want = NULL;
            const gck_status st = gck_mpi_flush(cp, MPI_COMM_WORLD, (uint64_t)first, &got);
            if (st != GCK_OK)
                fail_msg("rank %d seed %llu: %s: %s", g_rank, (unsigned long long)seed, gck_status_name(st),
                         gck_last_error());
            assert_int_equal(gck_flush(ref, 0, &want), GCK_OK);
            gck_assert_same_checkpoint(got, want);
            assert_int_equal(gck_pending_count(cp), 0);
            /* and the same on every rank */
            unsigned long long h = (unsigned long long)gck_checkpoint_checksum(got), lo = 0, hi = 0;
            MPI_Allreduce(&h, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
            MPI_Allreduce(&h, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
            assert_true(lo == hi);
            uint64_t c0 = gck_checkpoint_created_at(got), c1 = c0;
            MPI_Bcast(&c1, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
            assert_true(c0 == c1);
            gck_checkpoint_release(got), gck_checkpoint_release(want);
        }
        gck_checkpointer_destroy(cp), gck_checkpointer_destroy(ref);
    }
    assert_true(ran > 0);
}

/* Everybody fails with `want` and a message; the checkpointer keeps its
 * pending state; then the window is discarded. */
static void expect_everywhere(gck_checkpointer *cp, uint64_t first, gck_status want, const char *needle)
{
    const size_t pending = gck_pending_count(cp);
    gck_checkpoint *out = NULL;
    const gck_status s = gck_mpi_flush(cp, MPI_COMM_WORLD, first, &out);
    if (s != want)
        fail_msg("rank %d: got %s (%s), expected %s", g_rank, gck_status_name(s), gck_last_error(),
                 gck_status_name(want));
    assert_null(out);
    if (needle != NULL && strstr(gck_last_error(), needle) == NULL)
        fail_msg("rank %d: message '%s' lacks '%s'", g_rank, gck_last_error(), needle);
    if (cp != NULL) {
        assert_int_equal(gck_pending_count(cp), pending);
        assert_int_equal(gck_flush_count(cp), 0);
        assert_null(gck_latest_checkpoint(cp));
        gck_checkpointer_discard_pending(cp);
    }
}

static gck_checkpointer *make_cp(gck_accum_mode mode, gck_reduction red)
{
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.reduction = red;
    cfg.accumulation_mode = mode;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    return cp;
}

static void test_mismatches_fail_on_every_rank(void **state)
{
    (void)state;
    const int last = g_rank == g_size - 1 && g_size > 1;
    double x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    gck_checkpointer *cp = make_cp(GCK_ACCUM_MEAN, GCK_REDUCE_TREE);
    const uint64_t first = (uint64_t)g_rank; /* one micro-batch per rank */

    if (g_size == 1) {
        gck_checkpointer_destroy(cp);
        /* one rank: the errors a single process can make */
        cp = make_cp(GCK_ACCUM_SUM, GCK_REDUCE_SEQUENTIAL);
        assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
        expect_everywhere(cp, 0, GCK_ERR_INVALID_ARGUMENT, "GCK_REDUCE_TREE");
        gck_checkpointer_destroy(cp);
        cp = make_cp(GCK_ACCUM_SUM, GCK_REDUCE_TREE);
        expect_everywhere(cp, 0, GCK_ERR_NO_ACCUMULATED_GRADIENTS, "nothing pending");
        assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
        expect_everywhere(cp, 3, GCK_ERR_INVALID_ARGUMENT, "start at 3");
        expect_everywhere(NULL, 0, GCK_ERR_INVALID_ARGUMENT, "NULL");
        gck_checkpointer_destroy(cp);
        return;
    }
    /* a length differs on the last rank */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, last ? 7 : 8, 0), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_DIMENSION_MISMATCH, "rank");
    /* an id differs */
    assert_int_equal(gck_accumulate_f64(cp, last ? "b" : "a", x, 8, 0), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_DIMENSION_MISMATCH, "ids or lengths");
    /* an extra layer */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    if (last)
        assert_int_equal(gck_accumulate_f64(cp, "z", x, 8, 0), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_DIMENSION_MISMATCH, "layers");
    /* overlapping ranges: everybody claims micro-batch 0 */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    expect_everywhere(cp, 0, GCK_ERR_INVALID_ARGUMENT, "tile");
    /* a gap */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    expect_everywhere(cp, first + (last ? 1 : 0), GCK_ERR_INVALID_ARGUMENT, "tile");
    /* two micro-batches at an odd first index */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    if (last)
        assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 1), GCK_OK);
    expect_everywhere(cp, last ? 2 * first - 1 : first, GCK_ERR_INVALID_ARGUMENT, "multiple");
    /* three micro-batches: not a power of two */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    for (int j = 0; last && j < 2; j++)
        assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 1), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_INVALID_ARGUMENT, "power of two");
    /* layers with different counts */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    assert_int_equal(gck_accumulate_f64(cp, "b", x, 8, 0), GCK_OK);
    if (last)
        assert_int_equal(gck_accumulate_f64(cp, "b", x, 8, 0), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_INVALID_ARGUMENT, "different numbers");
    /* nothing pending on the last rank */
    if (!last)
        assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    expect_everywhere(cp, first, GCK_ERR_NO_ACCUMULATED_GRADIENTS, "nothing pending");
    /* another mode on the last rank */
    gck_checkpointer *other = make_cp(last ? GCK_ACCUM_SUM : GCK_ACCUM_MEAN, GCK_REDUCE_TREE);
    assert_int_equal(gck_accumulate_f64(other, "a", x, 8, 0), GCK_OK);
    expect_everywhere(other, first, GCK_ERR_INVALID_ARGUMENT, "config");
    gck_checkpointer_destroy(other);
    /* not in tree order on the last rank */
    other = make_cp(GCK_ACCUM_MEAN, last ? GCK_REDUCE_SEQUENTIAL : GCK_REDUCE_TREE);
    assert_int_equal(gck_accumulate_f64(other, "a", x, 8, 0), GCK_OK);
    expect_everywhere(other, first, GCK_ERR_INVALID_ARGUMENT, "GCK_REDUCE_TREE");
    gck_checkpointer_destroy(other);
    /* a NULL checkpointer on the last rank */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    expect_everywhere(last ? NULL : cp, first, GCK_ERR_INVALID_ARGUMENT, "NULL");
    if (last)
        gck_checkpointer_discard_pending(cp);
    /* and afterwards a good window still works */
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 8, 0), GCK_OK);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_mpi_flush(cp, MPI_COMM_WORLD, first, &c), GCK_OK);
    gck_tensor_view v;
    assert_int_equal(gck_checkpoint_layer(c, 0, &v), GCK_OK);
    assert_true(((const double *)v.values)[7] == 8.0); /* the mean of P copies */
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

/* error_if_nonfinite: a NaN on one rank fails the flush on every rank. */
static void test_nonfinite_fails_everywhere(void **state)
{
    (void)state;
    gck_config cfg;
    gck_config_init(&cfg);
    cfg.reduction = GCK_REDUCE_TREE;
    cfg.error_if_nonfinite = 1;
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    double x[3] = {1, g_rank == g_size - 1 ? NAN : 2, 3};
    assert_int_equal(gck_accumulate_f64(cp, "a", x, 3, 0), GCK_OK);
    expect_everywhere(cp, (uint64_t)g_rank, GCK_ERR_NONFINITE, "NaN");
    gck_checkpointer_destroy(cp);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_identical_to_one_process),
        cmocka_unit_test(test_mismatches_fail_on_every_rank),
        cmocka_unit_test(test_nonfinite_fails_everywhere),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    gck_mpi_free_scratch();
    MPI_Finalize();
    return failed != 0;
}
