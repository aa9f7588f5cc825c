/* tests/test_fork.c - the library in a child forked after its OpenMP threads ran.
 *
 * GCC's libgomp cannot start a team in such a child (the parent's team
 * threads are not copied by fork), so every parallel region of the library
 * runs on one thread there (common/threads_internal.h). The child repeats
 * threaded work of each layer - a kernel, a list call, a snapshot file
 * written and read, a store save and restore - under an alarm: each must
 * finish and give the parent's bits. Native only (tests/CMakeLists.txt):
 * qemu-user does not survive a fork from a multi-threaded parent. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "support/gck_test.h"

#include <gradckpt/kernels.h>
#include <gradckpt/snapshot.h>
#include <gradckpt/store.h>
#include <gradckpt/tensors.h>

#define N_ELEMS ((size_t)1 << 22) /* 16 MiB of f32: every threaded path's threshold */
#define N_LIST 4

typedef struct results {
    double sumsq, list_sumsq;
    uint64_t restored; /* the version the child saved, 0 in the parent */
} results;

static float *g_x;
static char g_dir[256];

/* The threaded work of each layer; the store's version `restore` is
 * restored and compared with x, and with `save` a version of x scaled by 2
 * is saved first. Returns the number of failed steps. */
static int work(results *r, uint64_t restore, int save)
{
    int bad = 0;
    r->sumsq = gck_sumsq_f32(g_x, N_ELEMS);
    void *data[N_LIST];
    size_t lens[N_LIST];
    for (size_t i = 0; i < N_LIST; i++)
        data[i] = g_x + i * (N_ELEMS / N_LIST), lens[i] = N_ELEMS / N_LIST;
    const gck_tensor_list list = {N_LIST, data, lens, GCK_DTYPE_F32, NULL};
    bad += gck_tensors_sumsq(&list, NULL, &r->list_sumsq) != GCK_OK;

    char path[400], store_dir[400];
    snprintf(path, sizeof path, "%s/%s.safetensors", g_dir, save ? "child" : "parent");
    snprintf(store_dir, sizeof store_dir, "%s/store", g_dir);
    const int64_t shape[1] = {(int64_t)N_ELEMS};
    gck_snapshot *s = NULL, *back = NULL;
    bad += gck_snapshot_create(1, &s) != GCK_OK;
    bad += s == NULL || gck_snapshot_add_tensor(s, "x", GCK_DTYPE_F32, shape, 1, g_x) != GCK_OK;
    bad += s == NULL || gck_snapshot_save(s, path) != GCK_OK;
    bad += gck_snapshot_load(path, &back) != GCK_OK;
    gck_tensor_info ti;
    bad += back == NULL || gck_snapshot_find_tensor(back, "x", &ti) != GCK_OK ||
           memcmp(ti.data, g_x, N_ELEMS * sizeof(float)) != 0;
    gck_snapshot_destroy(back), back = NULL;

    gck_store *st = NULL;
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.delta_threshold_bytes = 0;
    bad += gck_store_open(store_dir, &c, &st) != GCK_OK;
    if (st != NULL && save) {
        float *y = malloc(N_ELEMS * sizeof *y);
        gck_snapshot *t = NULL;
        bad += y == NULL || gck_snapshot_create(3, &t) != GCK_OK;
        for (size_t i = 0; y != NULL && i < N_ELEMS; i++)
            y[i] = 2.0f * g_x[i];
        bad += t == NULL || y == NULL || gck_snapshot_add_tensor(t, "x", GCK_DTYPE_F32, shape, 1, y) != GCK_OK;
        bad += t == NULL || gck_store_save(st, t, NULL, 0, &r->restored) != GCK_OK;
        gck_snapshot_destroy(t);
        free(y);
    }
    if (st != NULL && restore > 0) {
        bad += gck_store_restore(st, restore, &back) != GCK_OK;
        bad += back == NULL || gck_snapshot_find_tensor(back, "x", &ti) != GCK_OK ||
               memcmp(ti.data, g_x, N_ELEMS * sizeof(float)) != 0;
        gck_snapshot_destroy(back);
    }
    bad += st == NULL || gck_store_close(st) != GCK_OK;
    gck_snapshot_destroy(s);
    return bad;
}

static void test_forked_child_finishes(void **state)
{
    (void)state;
#ifdef _OPENMP
    omp_set_num_threads(2); /* the parent's regions start a team */
#endif
    snprintf(g_dir, sizeof g_dir, "/tmp/gck_test_fork.XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    g_x = malloc(N_ELEMS * sizeof *g_x);
    assert_non_null(g_x);
    gck_test_fill_f32(g_x, N_ELEMS, GCK_K_UNIFORM, 7);

    /* the parent: a full version 1 and a delta 2 (x itself), then restored */
    char store_dir[400];
    snprintf(store_dir, sizeof store_dir, "%s/store", g_dir);
    gck_store *st = NULL;
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.delta_threshold_bytes = 0;
    assert_int_equal(gck_store_open(store_dir, &c, &st), GCK_OK);
    const int64_t shape[1] = {(int64_t)N_ELEMS};
    for (int k = 0; k < 2; k++) {
        gck_snapshot *s = NULL;
        assert_int_equal(gck_snapshot_create((uint64_t)k + 1, &s), GCK_OK);
        for (size_t i = 0; k == 0 && i < N_ELEMS; i += 97)
            g_x[i] += 1.0f; /* version 1 differs from x here and there */
        assert_int_equal(gck_snapshot_add_tensor(s, "x", GCK_DTYPE_F32, shape, 1, g_x), GCK_OK);
        assert_int_equal(gck_store_save(st, s, NULL, 0, NULL), GCK_OK);
        gck_snapshot_destroy(s);
        for (size_t i = 0; k == 0 && i < N_ELEMS; i += 97)
            g_x[i] -= 1.0f;
    }
    assert_int_equal(gck_store_close(st), GCK_OK);
    results parent = {0};
    assert_int_equal(work(&parent, 2, 0), 0);

    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(120); /* a hang ends the child with SIGALRM */
        results child = {0};
        int bad = work(&child, 2, 1);
        bad += memcmp(&child.sumsq, &parent.sumsq, sizeof child.sumsq) != 0;
        bad += memcmp(&child.list_sumsq, &parent.list_sumsq, sizeof child.list_sumsq) != 0;
        bad += child.restored != 3;
        _exit(bad > 100 ? 100 : bad);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        fail_msg("the forked child was killed by signal %d (SIGALRM: it hung)", WTERMSIG(status));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);

    /* the child's version 3 reads back here, on threads again */
    assert_int_equal(gck_store_open(store_dir, &c, &st), GCK_OK);
    gck_snapshot *back = NULL;
    assert_int_equal(gck_store_restore(st, 3, &back), GCK_OK);
    gck_tensor_info ti;
    assert_int_equal(gck_snapshot_find_tensor(back, "x", &ti), GCK_OK);
    for (size_t i = 0; i < N_ELEMS; i++)
        assert_true(((const float *)ti.data)[i] == 2.0f * g_x[i]);
    gck_snapshot_destroy(back);
    assert_int_equal(gck_store_close(st), GCK_OK);
    free(g_x);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_forked_child_finishes)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
