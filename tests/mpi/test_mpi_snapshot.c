/* tests/mpi/test_mpi_snapshot.c - gck_mpi_snapshot_save/load under mpirun -np P: saves on every sub-communicator
 * size q <= P load bit for bit on P ranks and on q' ranks, each rank reading its own share; mismatches and bad
 * arguments fail on every rank with the same status and message.
 *
 * With arguments it is one step of tests/mpi/kill_during_save.sh instead:
 *   --save DIR SEED     every rank saves the sample of SEED (GCK_TEST_KILL_RANK=r: rank r
 *                       SIGKILLs itself in the rename of its shard, after writing it)
 *   --expect DIR SEED   every rank loads its share and everything; both must equal SEED's
 * Links only the public libraries (libgradckpt_mpi and the shared libgradckpt), as a user's program does, plus a
 * rename() of its own that the library's calls reach first (the kill point). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <gradckpt/gradckpt.h>
#include <gradckpt/mpi.h>

#include "support/sharded_fixture.h"

static int g_rank, g_size;
static int g_kill_in_rename;
static char g_dir[256];

/* The library's rename: with g_kill_in_rename, a shard's rename into place
 * kills this process first (its bytes are written and fsynced by then). */
__attribute__((visibility("default"))) int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "rename");
    if (g_kill_in_rename && strstr(to, "model-g") != NULL && strstr(from, ".tmp.") != NULL)
        raise(SIGKILL);
    return real(from, to);
}

/* The items rank r of q asks for: every q-th in name order, from r. */
static size_t share_of(const gck_snapshot *s, int r, int q, const char **names)
{
    size_t n = 0, k = 0;
    for (size_t i = 0; i < gck_snapshot_num_tensors(s); i++, k++) {
        gck_tensor_info t;
        assert_int_equal(gck_snapshot_tensor(s, i, &t), GCK_OK);
        if ((int)(k % (size_t)q) == r)
            names[n++] = t.name;
    }
    static char blobs[16][64];
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(s) && i < 16; i++, k++) {
        const char *p;
        const void *b;
        size_t len;
        assert_int_equal(gck_snapshot_optimizer_state(s, i, &p, &b, &len), GCK_OK);
        if ((int)(k % (size_t)q) == r) {
            snprintf(blobs[i], sizeof blobs[i], GCK_OPTIMIZER_PREFIX "%s", p);
            names[n++] = blobs[i];
        }
    }
    return n;
}

/* Loads on comm: every rank its share, then everything; both equal want. */
static void load_and_check(const char *dir, MPI_Comm comm, const gck_snapshot *want)
{
    int r, q;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &q);
    const char *names[64];
    const size_t n = share_of(want, r, q, names);
    gck_snapshot *got = NULL;
    assert_int_equal(gck_mpi_snapshot_load(dir, comm, names, n, &got), GCK_OK);
    assert_int_equal(gck_snapshot_step(got), gck_snapshot_step(want));
    assert_int_equal(gck_snapshot_num_tensors(got) + gck_snapshot_num_optimizer_states(got), n);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(names[i], GCK_OPTIMIZER_PREFIX, strlen(GCK_OPTIMIZER_PREFIX)) == 0) {
            const char *p = names[i] + strlen(GCK_OPTIMIZER_PREFIX);
            const void *a, *b;
            size_t la, lb;
            assert_int_equal(gck_snapshot_find_optimizer_state(want, p, &a, &la), GCK_OK);
            assert_int_equal(gck_snapshot_find_optimizer_state(got, p, &b, &lb), GCK_OK);
            assert_int_equal(la, lb);
            assert_memory_equal(a, b, la);
            continue;
        }
        gck_tensor_info a, b;
        assert_int_equal(gck_snapshot_find_tensor(want, names[i], &a), GCK_OK);
        assert_int_equal(gck_snapshot_find_tensor(got, names[i], &b), GCK_OK);
        assert_int_equal(a.nbytes, b.nbytes);
        if (a.nbytes)
            assert_memory_equal(a.data, b.data, a.nbytes);
        assert_string_equal(a.content_id, b.content_id);
    }
    gck_snapshot_destroy(got);
    assert_int_equal(gck_mpi_snapshot_load(dir, comm, NULL, 0, &got), GCK_OK);
    gck_fx_same(want, got);
    gck_snapshot_destroy(got);
}

/* A fresh directory name, the same on every rank. */
static void fresh_dir(char *out, size_t cap, const char *tag)
{
    if (g_rank == 0) {
        snprintf(out, cap, "%s/%s", g_dir, tag);
    }
    MPI_Bcast(out, (int)cap, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* Saves by every sub-communicator of q = 1..P ranks, each load on P ranks and
 * on every q' = 1..P ranks, bit for bit. */
static void test_save_on_q_load_on_any(void **state)
{
    (void)state;
    for (int q = 1; q <= g_size; q++) {
        char dir[300];
        char tag[32];
        snprintf(tag, sizeof tag, "q%d", q);
        fresh_dir(dir, sizeof dir, tag);
        gck_snapshot *s = gck_fx_sample((uint64_t)q, (uint64_t)(100 + q));
        /* a different timestamp on each rank: rank 0's is recorded */
        assert_int_equal(gck_snapshot_set_timestamp(s, 1000 + (uint64_t)g_rank), GCK_OK);
        MPI_Comm sub;
        MPI_Comm_split(MPI_COMM_WORLD, g_rank < q ? 0 : 1, g_rank, &sub);
        if (g_rank < q)
            assert_int_equal(gck_mpi_snapshot_save(s, dir, sub), GCK_OK);
        MPI_Comm_free(&sub);
        MPI_Barrier(MPI_COMM_WORLD);
        assert_int_equal(gck_snapshot_set_timestamp(s, 1000), GCK_OK);
        load_and_check(dir, MPI_COMM_WORLD, s);
        for (int q2 = 1; q2 <= g_size; q2++) {
            MPI_Comm_split(MPI_COMM_WORLD, g_rank < q2 ? 0 : 1, g_rank, &sub);
            if (g_rank < q2)
                load_and_check(dir, sub, s);
            MPI_Comm_free(&sub);
        }
        /* saving again (P ranks) replaces the commit and its shards */
        gck_snapshot *s2 = gck_fx_sample((uint64_t)q + 50, 7);
        assert_int_equal(gck_mpi_snapshot_save(s2, dir, MPI_COMM_WORLD), GCK_OK);
        load_and_check(dir, MPI_COMM_WORLD, s2);
        gck_snapshot_destroy(s2);
        gck_snapshot_destroy(s);
    }
}

/* Every error reaches every rank with one status and one message. */
static void expect_save_everywhere(const gck_snapshot *s, const char *dir, gck_status want, const char *what)
{
    const gck_status st = gck_mpi_snapshot_save(s, dir, MPI_COMM_WORLD);
    assert_int_equal(st, want);
    if (strstr(gck_last_error(), what) == NULL)
        fail_msg("rank %d: message '%s' lacks '%s'", g_rank, gck_last_error(), what);
    char msg[512] = {0}, first[512];
    snprintf(msg, sizeof msg, "%s", gck_last_error());
    memcpy(first, msg, sizeof first);
    MPI_Bcast(first, (int)sizeof first, MPI_CHAR, 0, MPI_COMM_WORLD);
    assert_string_equal(msg, first);
}

static void test_errors_fail_on_every_rank(void **state)
{
    (void)state;
    const int last = g_rank == g_size - 1;
    char dir[300], rank_tag[64];
    fresh_dir(dir, sizeof dir, "errors");
    gck_snapshot *s = gck_fx_sample(77, 1);
    assert_int_equal(gck_mpi_snapshot_save(s, dir, MPI_COMM_WORLD), GCK_OK);
    snprintf(rank_tag, sizeof rank_tag, "rank %d:", g_size - 1);
    /* a different layout on the last rank */
    gck_snapshot *other = gck_fx_sample(77, 1);
    const int64_t one = 1;
    const float x = 1;
    if (last)
        assert_int_equal(gck_snapshot_add_tensor(other, "extra", GCK_DTYPE_F32, &one, 1, &x), GCK_OK);
    if (g_size > 1)
        expect_save_everywhere(other, dir, GCK_ERR_DIMENSION_MISMATCH, "names, dtypes or shapes");
    gck_snapshot_destroy(other);
    /* different values on the last rank */
    other = gck_fx_sample(last ? 78 : 77, 1);
    if (g_size > 1)
        expect_save_everywhere(other, dir, GCK_ERR_INVALID_ARGUMENT, "replicated");
    gck_snapshot_destroy(other);
    /* a NULL directory on the last rank: nothing is made */
    char fresh[300];
    fresh_dir(fresh, sizeof fresh, "never");
    expect_save_everywhere(s, last ? NULL : fresh, GCK_ERR_INVALID_ARGUMENT, rank_tag);
    struct stat sb;
    assert_int_equal(stat(fresh, &sb), -1);
    /* rank 0 cannot create the directory: a file is in the way */
    char blocked[320];
    snprintf(blocked, sizeof blocked, "%s/file/sub", g_dir);
    if (g_rank == 0) {
        char f[320];
        snprintf(f, sizeof f, "%s/file", g_dir);
        FILE *fp = fopen(f, "w");
        assert_non_null(fp);
        fclose(fp);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    expect_save_everywhere(s, blocked, GCK_ERR_IO, "rank 0:");
    /* the commit is still the first save */
    load_and_check(dir, MPI_COMM_WORLD, s);
    /* loads: a name only the last rank asks for that does not exist */
    const char *names[] = {last ? "no.such.tensor" : "layer0.w"};
    gck_snapshot *out = NULL;
    assert_int_equal(gck_mpi_snapshot_load(dir, MPI_COMM_WORLD, names, 1, &out), GCK_ERR_NOT_FOUND);
    assert_null(out);
    assert_non_null(strstr(gck_last_error(), "no.such.tensor"));
    assert_non_null(strstr(gck_last_error(), rank_tag));
    /* a NULL out on rank 0 */
    gck_snapshot **where = g_rank == 0 ? NULL : &out;
    assert_int_equal(gck_mpi_snapshot_load(dir, MPI_COMM_WORLD, NULL, 0, where), GCK_ERR_INVALID_ARGUMENT);
    assert_null(out);
    assert_non_null(strstr(gck_last_error(), "rank 0:"));
    gck_snapshot_destroy(s);
}

static int count_prefix(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

/* One step of the kill script; the exit status says how it went. */
static int step(const char *what, const char *dir, uint64_t seed)
{
    const char *kr = getenv("GCK_TEST_KILL_RANK");
    g_kill_in_rename = kr != NULL && atoi(kr) == g_rank;
    gck_snapshot *s = gck_fx_sample(seed, seed);
    int bad = 0;
    if (strcmp(what, "--save") == 0) {
        const gck_status st = gck_mpi_snapshot_save(s, dir, MPI_COMM_WORLD);
        if (st != GCK_OK) {
            fprintf(stderr, "rank %d: save: %s\n", g_rank, gck_last_error());
            bad = 1;
        }
    } else {
        const char *names[64];
        const size_t n = share_of(s, g_rank, g_size, names);
        gck_snapshot *got = NULL;
        gck_status st = gck_mpi_snapshot_load(dir, MPI_COMM_WORLD, names, n, &got);
        if (st == GCK_OK) {
            for (size_t i = 0; i < n && !bad; i++) {
                gck_tensor_info a, b;
                if (strncmp(names[i], GCK_OPTIMIZER_PREFIX, strlen(GCK_OPTIMIZER_PREFIX)) == 0)
                    continue;
                bad = gck_snapshot_find_tensor(s, names[i], &a) != GCK_OK ||
                      gck_snapshot_find_tensor(got, names[i], &b) != GCK_OK || a.nbytes != b.nbytes ||
                      (a.nbytes && memcmp(a.data, b.data, a.nbytes) != 0);
            }
            bad |= gck_snapshot_step(got) != seed;
            gck_snapshot_destroy(got);
            st = gck_mpi_snapshot_load(dir, MPI_COMM_WORLD, NULL, 0, &got);
        }
        if (st != GCK_OK) {
            fprintf(stderr, "rank %d: load: %s\n", g_rank, gck_last_error());
            bad = 1;
        } else {
            uint64_t la, ca, lb, cb;
            gck_snapshot_digest(s, &la, &ca);
            gck_snapshot_digest(got, &lb, &cb);
            if (la != lb || ca != cb) {
                fprintf(stderr, "rank %d: the loaded snapshot is not seed %llu's\n", g_rank,
                        (unsigned long long)seed);
                bad = 1;
            }
            gck_snapshot_destroy(got);
        }
        if (g_rank == 0)
            printf("shard files: %d, temporaries: %d\n", count_prefix(dir, "model-g"), count_prefix(dir, ".model-g"));
    }
    gck_snapshot_destroy(s);
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (argc == 4) {
        const int rc = step(argv[1], argv[2], strtoull(argv[3], NULL, 10));
        MPI_Finalize();
        return rc;
    }
    if (g_rank == 0) {
        snprintf(g_dir, sizeof g_dir, "/tmp/gck_mpi_snapshot_XXXXXX");
        if (mkdtemp(g_dir) == NULL)
            MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Bcast(g_dir, sizeof g_dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_on_q_load_on_any),
        cmocka_unit_test(test_errors_fail_on_every_rank),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", g_dir);
    }
    MPI_Finalize();
    return failed != 0;
}
