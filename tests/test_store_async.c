/* tests/test_store_async.c - gck_store_save_async / gck_store_wait: crash loop, readers beside, faults, errors never lost.
 *
 * Its own process: the suites that fork (the crash loop, the readers) run
 * first, while this process has no thread of its own, so no child is
 * forked from a multi-threaded parent (qemu-user, which runs the
 * cross-architecture tests, does not survive that). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/gck_test.h"
#include "support/store_fixtures.h"

#include "alloc_internal.h"
#include "io_internal.h"
#include "snapshot_internal.h"

static char g_root[256];
static int g_dir_no;

static void new_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/a%d", g_root, g_dir_no++);
}

static gck_store_config small_config(size_t max, uint64_t every)
{
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.max_checkpoints = max, c.policy.keep_every_n = every, c.policy.delta_threshold_bytes = 0;
    return c;
}

/* A new store in a new directory (its path in dir), at most max versions, no keep-every. */
static gck_store *open_new(char *dir, size_t cap, size_t max)
{
    new_dir(dir, cap);
    gck_store_config c = small_config(max, 0);
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, &c, &st), GCK_OK);
    return st;
}

static size_t count_data_files(const char *dir)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -c '^v.*safetensors$'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0;
    if (fscanf(p, "%zu", &n) != 1)
        n = 0;
    pclose(p);
    return n;
}

/* Kill a writer doing asynchronous saves (with tags and evictions) at random
 * moments: every save it saw acknowledged (gck_store_wait GCK_OK) survives,
 * and every version restores bit for bit. */
static void test_async_crash_loop(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    uint64_t seed = (uint64_t)time(NULL), last_latest = 0;
    long window_us = 30000; /* widened while no save is acknowledged (slow machines, emulators) */
    int saw_ack = 0;
    for (int round = 0; round < 20; round++) {
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            gck_store_config c = small_config(3, 4);
            gck_store *w = NULL;
            if (gck_store_open(dir, &c, &w) != GCK_OK)
                _exit(3);
            uint64_t next = gck_store_latest(w) ? gck_store_latest(w)->version + 1 : 1;
            for (int i = 0; i < 1000; i++, next++) {
                const char *tags[] = {"best"};
                if (gck_store_save_async(w, make_snapshot(next), tags, next % 25 == 0) != GCK_OK)
                    _exit(4);
                uint64_t v = 0;
                if (gck_store_wait(w, &v) != GCK_OK || v != next)
                    _exit(5);
                if (write(fds[1], &v, sizeof v) != (ssize_t)sizeof v) /* acknowledged */
                    _exit(6);
                if (v % 20 == 0 && gck_store_tag(w, v, "milestone") != GCK_OK)
                    _exit(7);
            }
            _exit(gck_store_close(w) == GCK_OK ? 0 : 8);
        }
        close(fds[1]);
        uint64_t acked = 0, v;
        /* every fourth round kills only after a first acknowledged save (on a
         * machine too slow for the window, the other rounds may see none) */
        if (round % 4 == 3 && read(fds[0], &v, sizeof v) == (ssize_t)sizeof v)
            acked = v;
        const long us = (long)(2000 + rng_next(&seed) % (uint64_t)window_us);
        const struct timespec pause = {0, us * 1000L};
        nanosleep(&pause, NULL);
        kill(pid, SIGKILL);
        int ws = 0;
        waitpid(pid, &ws, 0);
        assert_false(WIFEXITED(ws) && WEXITSTATUS(ws) != 0);
        while (read(fds[0], &v, sizeof v) == (ssize_t)sizeof v)
            acked = v > acked ? v : acked;
        close(fds[0]);
        gck_store *st = NULL;
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        assert_all_restore(st);
        const gck_entry *l = gck_store_latest(st);
        const uint64_t latest = l ? l->version : 0;
        assert_true(latest >= acked); /* no acknowledged save lost */
        assert_true(latest >= last_latest);
        saw_ack |= acked > 0;
        if (acked == 0 && window_us < 2000000) /* no save acknowledged in time: a slower machine */
            window_us *= 2;
        last_latest = latest;
        assert_int_equal(gck_store_close(st), GCK_OK);
    }
    assert_true(saw_ack);
}

/* Readers (other processes, read-only handles) restore and verify while the
 * writer's saves are in flight on its background thread: every version they
 * restore is bit-exact, and their only error is "evicted meanwhile". */
static void test_async_readers_beside(void **state)
{
    (void)state;
    char dir[300];
    gck_store *w = open_new(dir, sizeof dir, 3);
    gck_snapshot *first = make_snapshot(1);
    assert_int_equal(gck_store_save(w, first, NULL, 0, NULL), GCK_OK);
    gck_snapshot_destroy(first);
    enum { READERS = 2, SAVES = 40 };
    pid_t readers[READERS];
    for (int r = 0; r < READERS; r++) {
        readers[r] = fork();
        assert_true(readers[r] >= 0);
        if (readers[r] == 0) {
            /* 0: ok; 1..: a failure (what, by number); cmocka's asserts stay in the parent */
            int restored = 0;
            for (int i = 0; i < 400 && restored < 30; i++) {
                gck_store *rd = NULL;
                if (gck_store_open_readonly(dir, &rd) != GCK_OK)
                    _exit(10);
                const gck_entry *l = gck_store_latest(rd);
                const uint64_t v = l ? l->version : 0;
                gck_snapshot *got = NULL;
                const gck_status rs = gck_store_restore(rd, v, &got);
                if (rs == GCK_OK) {
                    gck_snapshot *want = make_snapshot(v);
                    const int same = gck_snapshot_num_tensors(want) == gck_snapshot_num_tensors(got);
                    for (size_t t = 0; same && t < gck_snapshot_num_tensors(want); t++) {
                        gck_tensor_info a, b;
                        gck_snapshot_tensor(want, t, &a), gck_snapshot_tensor(got, t, &b);
                        if (a.nbytes != b.nbytes || memcmp(a.data, b.data, a.nbytes) != 0)
                            _exit(11);
                    }
                    if (!same)
                        _exit(12);
                    gck_snapshot_destroy(want);
                    gck_snapshot_destroy(got);
                    restored++;
                } else if (rs != GCK_ERR_NOT_FOUND || strstr(gck_last_error(), "evicted meanwhile") == NULL) {
                    _exit(13);
                }
                const gck_status vs = gck_store_verify(rd, NULL);
                if (vs != GCK_OK && (vs != GCK_ERR_NOT_FOUND || strstr(gck_last_error(), "evicted meanwhile") == NULL))
                    _exit(14);
                gck_store_close(rd);
            }
            _exit(restored > 0 ? 0 : 15);
        }
    }
    for (uint64_t v = 2; v <= SAVES; v++)
        assert_int_equal(gck_store_save_async(w, make_snapshot(v), NULL, 0), GCK_OK);
    uint64_t last = 0;
    assert_int_equal(gck_store_wait(w, &last), GCK_OK);
    assert_int_equal(last, SAVES);
    for (int r = 0; r < READERS; r++) {
        int ws = 0;
        waitpid(readers[r], &ws, 0);
        if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
            fail_msg("reader %d: status %d", r, WIFEXITED(ws) ? WEXITSTATUS(ws) : -1);
    }
    assert_all_restore(w);
    assert_int_equal(gck_store_close(w), GCK_OK);
}

/* Saves handed over one after the other (each waits for the one before:
 * one in flight at most) are the same versions a synchronous run makes:
 * same files, every version bit-exact, after a reopen too. */
static void test_async_same_as_sync(void **state)
{
    (void)state;
    char da[300], ds[300];
    new_dir(da, sizeof da), new_dir(ds, sizeof ds);
    gck_store_config c = small_config(4, 3);
    gck_store *a = NULL, *s = NULL;
    assert_int_equal(gck_store_open(da, &c, &a), GCK_OK);
    assert_int_equal(gck_store_open(ds, &c, &s), GCK_OK);
    for (uint64_t v = 1; v <= 9; v++) {
        const char *tags[] = {"t"};
        assert_int_equal(gck_store_save_async(a, make_snapshot(v), tags, v == 6), GCK_OK);
        gck_snapshot *snap = make_snapshot(v);
        assert_int_equal(gck_store_save(s, snap, tags, v == 6, NULL), GCK_OK);
        gck_snapshot_destroy(snap);
    }
    /* a query waits for the save in flight: its answer includes it */
    assert_non_null(gck_store_latest(a));
    assert_int_equal(gck_store_latest(a)->version, 9);
    uint64_t v = 0;
    assert_int_equal(gck_store_wait(a, &v), GCK_OK);
    assert_int_equal(v, 9);
    assert_int_equal(gck_store_wait(a, &v), GCK_OK); /* nothing in flight: the same answer */
    assert_int_equal(v, 9);
    uint64_t va[8], vs[8];
    const size_t na = gck_store_versions(a, va, 8);
    assert_int_equal(na, gck_store_versions(s, vs, 8));
    for (size_t i = 0; i < na; i++) {
        gck_version_info ia, is;
        assert_int_equal(va[i], vs[i]);
        assert_int_equal(gck_store_version_info(a, va[i], &ia), GCK_OK);
        assert_int_equal(gck_store_version_info(s, vs[i], &is), GCK_OK);
        assert_int_equal(ia.is_delta, is.is_delta);
        assert_int_equal(ia.stored_bytes, is.stored_bytes);
        assert_int_equal(ia.n_tags, is.n_tags);
    }
    assert_all_restore(a);
    assert_int_equal(gck_store_close(a), GCK_OK);
    assert_int_equal(gck_store_open(da, NULL, &a), GCK_OK);
    assert_all_restore(a);
    assert_int_equal(gck_store_close(a), GCK_OK);
    assert_int_equal(gck_store_close(s), GCK_OK);
}

/* A snapshot that borrows its bytes is copied before save_async returns:
 * the caller changes its buffers at once and every version restores as it
 * was handed over. From the second save of the same layout on, the copies
 * go into the buffers of the one before (no allocation per tensor); a
 * changed layout (sizes, names, count) still saves right. */
static void test_async_borrowed(void **state)
{
    (void)state;
    char dir[300];
    gck_store *st = open_new(dir, sizeof dir, 30);
    enum { N = 3, ROUNDS = 8 };
    static float buf[N][4096];
    const size_t count[ROUNDS][N] = {{4096, 100, 1},  {4096, 100, 1}, {4096, 100, 1}, {4096, 99, 1},
                                     {100, 4096, 1},  {4096, 100, 0}, {4096, 100, 1}, {4096, 100, 1}};
    gck_snapshot *want[ROUNDS] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        for (int t = 0; t < N; t++)
            for (size_t i = 0; i < 4096; i++)
                buf[t][i] = (float)(r * 10007 + t * 4099 + (int)i) * 0.25f;
        gck_snapshot *b = NULL, *keep = NULL;
        assert_int_equal(gck_snapshot_create((uint64_t)r + 1, &b), GCK_OK);
        for (int t = 0; t < N; t++) {
            char name[8];
            snprintf(name, sizeof name, "%c%d", r == 6 && t == 1 ? 'q' : 't', t); /* round 6 renames one */
            if (count[r][t] > 0)
                assert_int_equal(gck_snapshot_add_borrowed(b, name, GCK_DTYPE_F32, buf[t], count[r][t]), GCK_OK);
        }
        assert_int_equal(gck_snapshot_clone(b, &keep), GCK_OK);
        want[r] = keep;
        if (r == 2) {
            /* a spare of the same layout: the copies need no allocation
             * beyond the buffer list and the tag list (the save before
             * is done first: it allocates too) */
            assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
            gck_alloc_fail_after(2);
            const gck_status rc = gck_store_save_async(st, b, NULL, 0);
            gck_alloc_fail_after(-1);
            assert_int_equal(rc, GCK_OK);
            if (gck_store_wait(st, NULL) != GCK_OK) { /* the background save may have met the hook */
                assert_int_equal(gck_store_latest(st)->version, 2);
                gck_snapshot *again = NULL;
                assert_int_equal(gck_snapshot_clone(keep, &again), GCK_OK);
                assert_int_equal(gck_store_save_async(st, again, NULL, 0), GCK_OK);
            }
        } else
            assert_int_equal(gck_store_save_async(st, b, NULL, 0), GCK_OK);
        memset(buf, 0xA5, sizeof buf); /* the caller's next step, at once */
        if (r == 4) {
            /* out of memory in the copy: refused, the store unchanged */
            gck_snapshot *f = NULL;
            assert_int_equal(gck_snapshot_create(99, &f), GCK_OK);
            assert_int_equal(gck_snapshot_add_borrowed(f, "big", GCK_DTYPE_F32, buf[0], 4096), GCK_OK);
            assert_int_equal(gck_snapshot_add_borrowed(f, "new", GCK_DTYPE_F32, buf[1], 4096), GCK_OK);
            assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
            gck_alloc_fail_after(1);
            assert_int_equal(gck_store_save_async(st, f, NULL, 0), GCK_ERR_NO_MEMORY);
            gck_alloc_fail_after(-1);
            assert_non_null(strstr(gck_last_error(), "gck_store_save_async"));
            assert_int_equal(gck_store_latest(st)->version, 5);
        }
    }
    uint64_t v = 0;
    assert_int_equal(gck_store_wait(st, &v), GCK_OK);
    assert_int_equal(v, ROUNDS);
    for (int r = 0; r < ROUNDS; r++) {
        gck_snapshot *back = NULL;
        assert_int_equal(gck_store_restore(st, (uint64_t)r + 1, &back), GCK_OK);
        assert_same_snapshot(want[r], back);
        gck_snapshot_destroy(back);
        if (r + 1 < ROUNDS)
            gck_snapshot_destroy(want[r]);
    }
    /* a loaded snapshot's tensors live in its own memory: handed over with
     * it, not copied (the one allocation: the tag list) */
    char path[400];
    snprintf(path, sizeof path, "%s.loaded.safetensors", dir);
    assert_int_equal(gck_snapshot_save(want[ROUNDS - 1], path), GCK_OK);
    gck_snapshot *loaded = NULL;
    assert_int_equal(gck_snapshot_load(path, &loaded), GCK_OK);
    gck_alloc_fail_after(1);
    const gck_status rc = gck_store_save_async(st, loaded, NULL, 0);
    gck_alloc_fail_after(-1);
    assert_int_equal(rc, GCK_OK);
    if (gck_store_wait(st, &v) == GCK_OK) { /* else the background save met the hook: nothing saved */
        gck_snapshot *back = NULL;
        assert_int_equal(gck_store_restore(st, v, &back), GCK_OK);
        assert_same_snapshot(want[ROUNDS - 1], back);
        gck_snapshot_destroy(back);
    }
    gck_snapshot_destroy(want[ROUNDS - 1]);
    unlink(path);
    assert_int_equal(gck_store_close(st), GCK_OK);
}

/* Bad arguments fail at once, the snapshot is the store's (destroyed) in
 * every case, and the store is unchanged. */
static void test_async_args(void **state)
{
    (void)state;
    char dir[300];
    gck_store *st = open_new(dir, sizeof dir, 3);
    assert_int_equal(gck_store_save_async(NULL, make_snapshot(1), NULL, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_save_async(st, NULL, NULL, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_save_async(st, make_snapshot(1), NULL, 1), GCK_ERR_INVALID_ARGUMENT);
    const char *empty[] = {""};
    assert_int_equal(gck_store_save_async(st, make_snapshot(1), empty, 1), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "gck_store_save_async"));
    assert_int_equal(gck_store_wait(NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_versions(st, NULL, 0), 0);
    assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
    assert_int_equal(gck_store_close(st), GCK_OK);
    /* a read-only handle refuses before anything is written */
    assert_int_equal(gck_store_open_readonly(dir, &st), GCK_OK);
    assert_int_equal(gck_store_save_async(st, make_snapshot(1), NULL, 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_close(st), GCK_OK);
    assert_int_equal(gck_store_close(NULL), GCK_OK);
}

/* Every I/O step and every allocation of a background save (with an
 * eviction that keeps a hidden base) failing in turn: the error comes back from gck_store_wait,
 * and the store is unchanged, in memory and on disk. */
static void test_async_faults(void **state)
{
    (void)state;
    for (int mode = 0; mode < 2; mode++) {
        char dir[300];
        gck_store *st = open_new(dir, sizeof dir, 3);
        for (uint64_t v = 1; v <= 3; v++)
            assert_int_equal(gck_store_save_async(st, make_snapshot(v), NULL, 0), GCK_OK);
        assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
        int failures = 0;
        for (long k = 0;; k++) {
            gck_snapshot *s4 = make_snapshot(4);
            if (mode == 0)
                gck_io_fail_after(k, ENOSPC);
            else
                gck_alloc_fail_after(k);
            gck_status rc = gck_store_save_async(st, s4, NULL, 0);
            uint64_t v = 0;
            if (rc == GCK_OK)
                rc = gck_store_wait(st, &v); /* the background path's own failures */
            gck_io_fail_after(-1, 0);
            gck_alloc_fail_after(-1);
            if (rc == GCK_OK || (rc == GCK_ERR_IO && strstr(gck_last_error(), "saved, but") != NULL)) {
                assert_int_equal(v, 4);
                break;
            }
            assert_int_equal(rc, mode == 0 ? GCK_ERR_IO : GCK_ERR_NO_MEMORY);
            failures++;
            assert_int_equal(gck_store_wait(st, NULL), GCK_OK); /* reported once */
            uint64_t vs[8];
            assert_int_equal(gck_store_versions(st, vs, 8), 3);
            assert_int_equal(vs[2], 3);
            assert_int_equal(count_data_files(dir), 3);
        }
        assert_true(failures > 5);
        assert_all_restore(st);
        assert_int_equal(count_data_files(dir), 4); /* 2-4 and 1, the hidden base of 2 */
        assert_int_equal(gck_store_close(st), GCK_OK);
    }
}

/* A background save's error is never lost: when nobody waits, the next
 * save reports it (and does not save), and close reports it. */
static void test_async_errors_not_lost(void **state)
{
    (void)state;
    char dir[300];
    gck_store *st = open_new(dir, sizeof dir, 5);
    assert_int_equal(gck_store_save_async(st, make_snapshot(1), NULL, 0), GCK_OK);
    assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
    /* reported by the next synchronous save */
    gck_io_fail_after(0, ENOSPC);
    assert_int_equal(gck_store_save_async(st, make_snapshot(2), NULL, 0), GCK_OK);
    gck_snapshot *s2 = make_snapshot(2);
    const gck_status rc = gck_store_save(st, s2, NULL, 0, NULL);
    gck_io_fail_after(-1, 0);
    assert_int_equal(rc, GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "asynchronous save: "));
    assert_int_equal(gck_store_versions(st, NULL, 0), 1);
    uint64_t v = 0;
    assert_int_equal(gck_store_save(st, s2, NULL, 0, &v), GCK_OK); /* then it saves */
    assert_int_equal(v, 2);
    gck_snapshot_destroy(s2);
    /* reported by the next asynchronous save, which then does not happen */
    gck_io_fail_after(0, ENOSPC);
    assert_int_equal(gck_store_save_async(st, make_snapshot(3), NULL, 0), GCK_OK);
    assert_int_equal(gck_store_versions(st, NULL, 0), 2); /* waits for it */
    gck_io_fail_after(-1, 0);
    assert_int_equal(gck_store_save_async(st, make_snapshot(3), NULL, 0), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "asynchronous save: "));
    assert_int_equal(gck_store_save_async(st, make_snapshot(3), NULL, 0), GCK_OK);
    assert_int_equal(gck_store_wait(st, &v), GCK_OK);
    assert_int_equal(v, 3);
    /* reported by close */
    gck_io_fail_after(0, ENOSPC);
    assert_int_equal(gck_store_save_async(st, make_snapshot(4), NULL, 0), GCK_OK);
    const gck_status cs = gck_store_close(st);
    gck_io_fail_after(-1, 0);
    assert_int_equal(cs, GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "asynchronous save: "));
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_versions(st, NULL, 0), 3);
    assert_all_restore(st);
    assert_int_equal(gck_store_close(st), GCK_OK);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/gck_test_store_async.XXXXXX");
    return mkdtemp(g_root) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* the forking suites first: this process has no thread yet */
        cmocka_unit_test(test_async_crash_loop),
        cmocka_unit_test(test_async_readers_beside),
        cmocka_unit_test(test_async_same_as_sync),
        cmocka_unit_test(test_async_args),
        cmocka_unit_test(test_async_borrowed),
        cmocka_unit_test(test_async_faults),
        cmocka_unit_test(test_async_errors_not_lost),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
