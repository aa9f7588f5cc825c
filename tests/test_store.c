/* tests/test_store.c - gck_store: bit-exact restore, deltas, eviction with hidden bases, locking, faults, crashes. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "support/gck_test.h"
#include "support/store_fixtures.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "alloc_internal.h"
#include "io_internal.h"
#include "store_delta_internal.h"
#include "snapshot_internal.h"

/* Set under an emulator or the sanitizers: test_coders restores less often (there). */
#ifndef GCK_TEST_EMULATED
#define GCK_TEST_EMULATED 0
#endif

static char g_root[256];
static int g_dir_no;

/* A fresh, empty directory name under the suite's temporary root. */
static void new_dir(char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/s%d", g_root, g_dir_no++);
}

static gck_store *open_store(const char *dir, size_t max, uint64_t every, uint64_t threshold)
{
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.max_checkpoints = max, c.policy.keep_every_n = every, c.policy.delta_threshold_bytes = threshold;
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, &c, &st), GCK_OK);
    return st;
}

static uint64_t save_v(gck_store *st, uint64_t v, const char *tag)
{
    gck_snapshot *s = make_snapshot(v);
    uint64_t got = 0;
    const char *tags[] = {tag};
    assert_int_equal(gck_store_save(st, s, tags, tag ? 1 : 0, &got), GCK_OK);
    gck_snapshot_destroy(s);
    assert_int_equal(got, v);
    return got;
}

/* Names in dir other than manifest.json and lock, counted, once st (when
 * not NULL) has deleted the files its last commit dropped (a save deletes
 * them on a thread of its own; gck_store_wait waits for it). */
static size_t count_data_files(gck_store *st, const char *dir)
{
    if (st != NULL)
        assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, "manifest.json") &&
            strcmp(de->d_name, "lock"))
            n++;
    closedir(d);
    return n;
}

/* The hidden bases of st: their count from the stats, checked against the
 * files on disk (each retained version and hidden base has one) and the
 * disk total. */
static size_t hidden_of(gck_store *st, const char *dir)
{
    gck_store_stats ss;
    assert_int_equal(gck_store_stats_get(st, &ss), GCK_OK);
    assert_int_equal(count_data_files(st, dir), ss.versions + ss.hidden_bases);
    /* every retained version: the crash test's writer may leave more than
     * any fixed array holds (more than 64 once under the sanitizers, and
     * the loop read past a 64-entry array) */
    const size_t n = gck_store_versions(st, NULL, 0);
    uint64_t listed = 0, *vs = calloc(n ? n : 1, sizeof *vs);
    assert_non_null(vs);
    assert_int_equal(gck_store_versions(st, vs, n), n);
    for (size_t i = 0; i < n; i++)
        listed += gck_store_version_disk_bytes(st, vs[i]);
    free(vs);
    assert_true(ss.disk_bytes > listed + ss.hidden_bytes); /* plus the manifest */
    assert_true((ss.hidden_bases == 0) == (ss.hidden_bytes == 0));
    return ss.hidden_bases;
}

static void test_defaults_and_args(void **state)
{
    (void)state;
    gck_store_config c;
    gck_store_config_init(&c);
    assert_int_equal(c.zstd_level, 1);
    assert_int_equal(c.policy.max_checkpoints, 10);
    gck_store_config_init(NULL);
    gck_store *st = NULL;
    char dir[300];
    new_dir(dir, sizeof dir);
    assert_int_equal(gck_store_open(NULL, NULL, &st), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_open(dir, NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_open("", NULL, &st), GCK_ERR_INVALID_ARGUMENT);
    c.zstd_level = 0;
    assert_int_equal(gck_store_open(dir, &c, &st), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "zstd_level"));
    assert_int_equal(gck_store_open("/nonexistent-dir/a/b", NULL, &st), GCK_ERR_IO);
    assert_null(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_null(gck_store_latest(st));
    assert_int_equal(gck_store_versions(st, NULL, 0), 0);
    gck_snapshot *s = make_snapshot(1), *out = NULL;
    const char *bad_tags[] = {""};
    assert_int_equal(gck_store_save(st, NULL, NULL, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_save(st, s, NULL, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_save(st, s, bad_tags, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_restore(st, 1, &out), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_restore(st, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_tag(st, 1, "x"), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_save(st, s, NULL, 0, NULL), GCK_OK);
    assert_int_equal(gck_store_tag(st, 1, ""), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_tag(st, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
    uint64_t v = 0;
    assert_int_equal(gck_store_find_tag(st, "none", &v), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_tag(st, 1, "best"), GCK_OK);
    assert_int_equal(gck_store_tag(st, 1, "best"), GCK_OK); /* kept once */
    assert_int_equal(gck_store_get(st, 1)->n_tags, 1);
    assert_int_equal(gck_store_find_tag(st, "best", &v), GCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(gck_store_untag(st, 1, "nope"), GCK_OK); /* not there: no-op */
    assert_int_equal(gck_store_untag(st, 7, "best"), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_untag(st, 1, ""), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_untag(st, 1, "best"), GCK_OK);
    assert_int_equal(gck_store_get(st, 1)->n_tags, 0);
    assert_int_equal(gck_store_find_tag(st, "best", &v), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_tag(st, 1, "best"), GCK_OK);
    gck_store_close(st); /* tags are durable */
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_find_tag(st, "best", &v), GCK_OK);
    assert_int_equal(v, 1);
    assert_int_equal(gck_store_stats_get(st, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_verify(NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_gc(NULL, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_null(gck_store_get(NULL, 1));
    assert_null(gck_store_latest(NULL));
    assert_int_equal(gck_store_versions(NULL, NULL, 0), 0);
    assert_int_equal(gck_store_version_disk_bytes(st, 99), 0);
    gck_snapshot_destroy(s);
    gck_store_close(st);
    gck_store_close(NULL);
}

/* A run of versions with every kind of change: each restores bit for bit,
 * in the same session (cache) and after reopening (disk only). */
static void test_round_trip(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 100, 4, 0);
    for (uint64_t v = 1; v <= 9; v++) {
        save_v(st, v, NULL);
        const gck_entry *e = gck_store_get(st, v);
        assert_non_null(e);
        assert_int_equal(e->is_delta, !(v == 1 || v % 4 == 0));
        if (e->is_delta)
            assert_int_equal(e->delta_from, v - 1);
        assert_int_equal(e->timestamp_secs, 1000 + v);
        assert_all_restore(st);
    }
    gck_store_stats s;
    assert_int_equal(gck_store_stats_get(st, &s), GCK_OK);
    assert_int_equal(s.versions, 9);
    assert_int_equal(s.full_versions, 3);
    assert_int_equal(s.delta_versions, 6);
    assert_true(s.disk_bytes > 0);
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* recorded policy */
    gck_store_config c;
    assert_int_equal(gck_store_config_get(st, &c), GCK_OK);
    assert_int_equal(c.policy.keep_every_n, 4);
    assert_int_equal(c.policy.max_checkpoints, 100);
    assert_all_restore(st);
    save_v(st, 10, NULL); /* a delta whose base comes from disk (no cache after reopen) */
    assert_true(gck_store_get(st, 10)->is_delta);
    assert_all_restore(st);
    gck_store_close(st);
}

/* Each data file of dir fsynced and its pages dropped from the page cache;
 * returns how many files then look uncached to gck_resident (0 where the
 * file system keeps them, as tmpfs does). */
static size_t evict_data_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t cold = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".safetensors") == NULL)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        const int fd = open(p, O_RDONLY);
        assert_true(fd >= 0);
        struct stat sb;
        assert_int_equal(fstat(fd, &sb), 0);
        assert_int_equal(fdatasync(fd), 0);
        assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        assert_true(m != MAP_FAILED);
        cold += !gck_resident(m, (size_t)sb.st_size);
        munmap(m, (size_t)sb.st_size);
        close(fd);
    }
    closedir(d);
    return cold;
}

/* Whole restores read a cached file through faults and a cold one mapped
 * populated (gck_resident decides): both give every version bit for bit. */
static void test_restore_cold_files(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 100, 4, 0);
    for (uint64_t v = 1; v <= 6; v++)
        save_v(st, v, NULL);
    gck_store_close(st);
    const size_t cold = evict_data_files(dir);
    if (cold == 0)
        fprintf(stderr, "test_restore_cold_files: %s keeps its files' pages cached; only the cached path ran\n", dir);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* no in-memory latest: every restore reads files */
    assert_all_restore(st);
    gck_store_close(st);
    assert_int_equal(evict_data_files(dir), cold);
    assert_int_equal(gck_store_open_readonly(dir, &st), GCK_OK);
    assert_all_restore(st);
    gck_store_close(st);
}

/* Full versions are plain safetensors files; deltas are valid safetensors too. */
static void test_files_are_safetensors(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    save_v(st, 1, NULL);
    save_v(st, 2, NULL);
    gck_store_close(st);
    DIR *d = opendir(dir);
    struct dirent *de;
    int fulls = 0, deltas = 0;
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".safetensors") == NULL)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
        gck_snapshot *s = NULL;
        assert_int_equal(gck_snapshot_load(p, &s), GCK_OK);
        if (strstr(de->d_name, ".delta.") != NULL) {
            deltas++;
        } else {
            gck_snapshot *want = make_snapshot(1);
            assert_same_snapshot(want, s);
            gck_snapshot_destroy(want);
            fulls++;
        }
        gck_snapshot_destroy(s);
    }
    closedir(d);
    assert_int_equal(fulls, 1);
    assert_int_equal(deltas, 1);
}

/* Unchanged tensors cost nothing: a frozen model's delta is tiny. */
static void test_frozen_delta_is_small(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    gck_snapshot *a = NULL;
    assert_int_equal(gck_snapshot_create(1, &a), GCK_OK);
    const size_t n = 1 << 18;
    float *w = malloc(n * sizeof *w);
    uint64_t r = 1;
    for (size_t i = 0; i < n; i++)
        w[i] = (float)(rng_next(&r) % 1000003) * 1e-3f;
    const int64_t shape = (int64_t)n, hs = 64;
    char name[32];
    for (int l = 0; l < 8; l++) {
        snprintf(name, sizeof name, "frozen.%d", l);
        w[0] = (float)l;
        assert_int_equal(gck_snapshot_add_tensor(a, name, GCK_DTYPE_F32, &shape, 1, w), GCK_OK);
    }
    assert_int_equal(gck_snapshot_add_tensor(a, "head", GCK_DTYPE_F32, &hs, 1, w), GCK_OK);
    assert_int_equal(gck_store_save(st, a, NULL, 0, NULL), GCK_OK);
    gck_snapshot *b = NULL;
    assert_int_equal(gck_snapshot_create(2, &b), GCK_OK);
    for (int l = 0; l < 8; l++) {
        snprintf(name, sizeof name, "frozen.%d", l);
        w[0] = (float)l;
        assert_int_equal(gck_snapshot_add_tensor(b, name, GCK_DTYPE_F32, &shape, 1, w), GCK_OK);
    }
    w[3] += 1.0f; /* only the head changes */
    assert_int_equal(gck_snapshot_add_tensor(b, "head", GCK_DTYPE_F32, &hs, 1, w), GCK_OK);
    assert_int_equal(gck_store_save(st, b, NULL, 0, NULL), GCK_OK);
    assert_true(gck_store_get(st, 2)->is_delta);
    const uint64_t full = gck_store_version_disk_bytes(st, 1), delta = gck_store_version_disk_bytes(st, 2);
    assert_true(full > 8 * n * 4);
    assert_true(delta * 100 < full); /* under 1 % */
    gck_snapshot *got = NULL;
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_restore(st, 2, &got), GCK_OK);
    assert_same_snapshot(b, got);
    gck_snapshot_destroy(got);
    gck_store_close(st);
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
    free(w);
}

static void test_lock(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *a = NULL, *b = NULL;
    assert_int_equal(gck_store_open(dir, NULL, &a), GCK_OK);
    assert_int_equal(gck_store_open(dir, NULL, &b), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "open in another process"));
    const pid_t pid = fork();
    if (pid == 0) {
        gck_store *c = NULL;
        _exit(gck_store_open(dir, NULL, &c) == GCK_ERR_IO ? 0 : 1);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    gck_store_close(a);
    assert_int_equal(gck_store_open(dir, NULL, &b), GCK_OK);
    gck_store_close(b);
}

static void flip_byte(const char *path, long from_end)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    fseek(f, -from_end, SEEK_END);
    const int c = fgetc(f);
    fseek(f, -from_end, SEEK_END);
    fputc(c ^ 0x10, f);
    fclose(f);
}

/* The data file name of a version (from the store's own listing). */
static void file_of(const char *dir, uint64_t v, int delta, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char prefix[32];
    snprintf(prefix, sizeof prefix, "v%08llu-", (unsigned long long)v);
    out[0] = '\0';
    while ((de = readdir(d)) != NULL)
        if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && (strstr(de->d_name, ".delta.") != NULL) == delta)
            snprintf(out, cap, "%s/%s", dir, de->d_name);
    closedir(d);
    assert_true(out[0] != '\0');
}

static void test_corruption_detected(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    save_v(st, 1, NULL);
    save_v(st, 2, NULL);
    save_v(st, 3, NULL);
    gck_store_close(st);
    file_of(dir, 2, 1, f, sizeof f);
    flip_byte(f, 5); /* inside a compressed payload */
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    size_t checked = 99;
    assert_int_equal(gck_store_verify(st, &checked), GCK_ERR_CORRUPT);
    assert_int_equal(checked, 1);
    assert_non_null(strstr(gck_last_error(), "version 2"));
    gck_snapshot *out = NULL;
    assert_int_equal(gck_store_restore(st, 3, &out), GCK_ERR_CORRUPT); /* depends on 2 */
    assert_null(out);
    gck_snapshot *ok = NULL, *want = make_snapshot(1);
    assert_int_equal(gck_store_restore(st, 1, &ok), GCK_OK);
    assert_same_snapshot(want, ok);
    gck_snapshot_destroy(ok);
    gck_snapshot_destroy(want);
    gck_store_close(st);

    /* a damaged value byte of full version 1, the base of 2 and 3: a restore
     * of 2 or 3 hashes only what it rebuilds (not the base on its way), and
     * still finds it, as verify and a restore of 1 do */
    new_dir(dir, sizeof dir);
    st = open_store(dir, 10, 0, 0);
    for (uint64_t v = 1; v <= 3; v++)
        save_v(st, v, NULL);
    gck_store_close(st);
    file_of(dir, 1, 0, f, sizeof f);
    flip_byte(f, 3); /* the last tensor's bytes */
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* no cache: every restore reads the chain */
    for (uint64_t v = 1; v <= 3; v++) {
        out = NULL;
        const gck_status rc = gck_store_restore(st, v, &out);
        if (rc != GCK_ERR_CORRUPT)
            fail_msg("version %llu: %s, not GCK_ERR_CORRUPT", (unsigned long long)v, gck_status_name(rc));
        assert_null(out);
    }
    assert_int_equal(gck_store_verify(st, &checked), GCK_ERR_CORRUPT);
    assert_int_equal(checked, 0);
    assert_non_null(strstr(gck_last_error(), "version 1"));
    gck_store_close(st);
    file_of(dir, 1, 0, f, sizeof f);
    flip_byte(f, 3);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* undone: all of it restores again */
    assert_all_restore(st);
    gck_store_close(st);

    /* a missing data file */
    file_of(dir, 1, 0, f, sizeof f);
    assert_int_equal(unlink(f), 0);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_verify(st, &checked), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "version 1"));
    gck_store_close(st);

    /* a damaged manifest: refused at open */
    snprintf(f, sizeof f, "%s/manifest.json", dir);
    FILE *m = fopen(f, "r+b");
    fputs("{\"x", m);
    fclose(m);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "manifest"));
}

/* Files the manifest does not name are cleaned at open; others are left alone. */
static void test_orphans_removed(void **state)
{
    (void)state;
    char dir[300], p[600];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    save_v(st, 1, NULL);
    gck_store_close(st);
    const char *junk[] = {"v00000002-g9.delta.safetensors", ".v00000002-g9.safetensors.tmp.1.2",
                          ".manifest.json.tmp.77.0"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, junk[i]);
        FILE *f = fopen(p, "wb");
        fputs("junk", f);
        fclose(f);
    }
    snprintf(p, sizeof p, "%s/notes.txt", dir);
    FILE *f = fopen(p, "wb");
    fputs("mine", f);
    fclose(f);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(count_data_files(st, dir), 2); /* v1 and notes.txt */
    struct stat sb;
    assert_int_equal(stat(p, &sb), 0);
    uint64_t freed = 99;
    assert_int_equal(gck_store_gc(st, &freed), GCK_OK);
    assert_int_equal(freed, 0);
    assert_all_restore(st);
    gck_store_close(st);
}

/* Every I/O step and every allocation of a save that evicts failing in
 * turn: the store is unchanged each time, on disk and in memory. Store 1-3
 * (a chain, at most 3 files long) saving 4: 1 becomes a hidden base; store
 * 1-5 (2-3 deltas on hidden 1, 4 full, 5) saving 6: 3 is evicted and hidden
 * 1 and 2 dropped with it. */
static void fault_walk_save(uint64_t have, size_t files_before, size_t files_after, int *io_failures,
                            int *alloc_failures)
{
    char dir[300];
    gck_snapshot *next = make_snapshot(have + 1);
    for (int mode = 0; mode < 2; mode++) {
        new_dir(dir, sizeof dir);
        gck_store *st = open_store(dir, 3, 0, 0);
        for (uint64_t v = 1; v <= have; v++)
            save_v(st, v, NULL);
        assert_int_equal(count_data_files(st, dir), files_before);
        for (long k = 0;; k++) {
            if (mode == 0)
                gck_io_fail_after(k, ENOSPC);
            else
                gck_alloc_fail_after(k);
            uint64_t v = 0;
            const gck_status rc = gck_store_save(st, next, NULL, 0, &v);
            gck_io_fail_after(-1, 0);
            gck_alloc_fail_after(-1);
            if (rc == GCK_OK || (rc == GCK_ERR_IO && strstr(gck_last_error(), "saved, but") != NULL)) {
                assert_int_equal(v, have + 1);
                break;
            }
            if (mode == 0) {
                assert_int_equal(rc, GCK_ERR_IO);
                (*io_failures)++;
            } else {
                if (rc != GCK_ERR_NO_MEMORY)
                    fail_msg("allocation %ld: %s: %s", k, gck_status_name(rc), gck_last_error());
                (*alloc_failures)++;
            }
            uint64_t vs[8];
            assert_int_equal(gck_store_versions(st, vs, 8), 3);
            assert_int_equal(vs[2], have);
            assert_int_equal(count_data_files(st, dir), files_before);
            if (k % 7 == 0) { /* the disk agrees: reopen and restore everything */
                gck_store_close(st);
                assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
                assert_int_equal(gck_store_versions(st, NULL, 0), 3);
                assert_int_equal(count_data_files(st, dir), files_before);
                assert_all_restore(st);
            }
        }
        assert_all_restore(st);
        assert_int_equal(count_data_files(st, dir), files_after);
        gck_store_close(st);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        assert_all_restore(st);
        assert_int_equal(count_data_files(st, dir), files_after);
        gck_store_close(st);
    }
    gck_snapshot_destroy(next);
}

static void test_faults_leave_store_unchanged(void **state)
{
    (void)state;
    int io_failures = 0, alloc_failures = 0;
    fault_walk_save(3, 3, 4, &io_failures, &alloc_failures); /* keeps 1 as a hidden base */
    assert_true(io_failures > 5);
    assert_true(alloc_failures > 10); /* fewer without zstd (s390x) */
    io_failures = alloc_failures = 0;
    fault_walk_save(5, 5, 3, &io_failures, &alloc_failures); /* drops hidden 1 and 2 with 3 */
    assert_true(io_failures > 5);
    assert_true(alloc_failures > 10);
}

/* Version v of a state whose layout never changes (two drifting tensors, a
 * frozen one, a blob): saves of it as deltas copy it into the store's
 * in-memory base while encoding. */
static gck_snapshot *make_flat(uint64_t v)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(v, &s), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(s, 2000 + v), GCK_OK);
    static float a[3000], f[500];
    static double b[700];
    for (int i = 0; i < 3000; i++)
        a[i] = (float)i * 0.01f + (float)v * 1e-3f * (float)(i % 7);
    for (int i = 0; i < 700; i++)
        b[i] = (double)i / 3.0 - (double)v * 0.5;
    for (int i = 0; i < 500; i++)
        f[i] = (float)i;
    const int64_t sa = 3000, sb = 700, sf = 500;
    unsigned char blob[100];
    memset(blob, (int)v, sizeof blob);
    assert_int_equal(gck_snapshot_add_tensor(s, "a", GCK_DTYPE_F32, &sa, 1, a), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, &sb, 1, b), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "frozen", GCK_DTYPE_F32, &sf, 1, f), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "a", blob, sizeof blob), GCK_OK);
    return s;
}

static void assert_flat_restores(gck_store *st, uint64_t first, uint64_t last)
{
    for (uint64_t v = first; v <= last; v++) {
        gck_snapshot *got = NULL, *want = make_flat(v);
        assert_int_equal(gck_store_restore(st, v, &got), GCK_OK);
        assert_same_snapshot(want, got);
        gck_snapshot_destroy(got);
        gck_snapshot_destroy(want);
    }
}

/* A delta save copies the snapshot into the in-memory base as it encodes:
 * a save failing at any I/O step after that must not leave the copy taken
 * for the base version (the latest restores as it was, the next delta is
 * against the true base), on the next save and after reopening. */
static void test_failed_save_after_base_copy(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 100, 0, 0);
    for (uint64_t v = 1; v <= 3; v++) {
        gck_snapshot *s = make_flat(v);
        assert_int_equal(gck_store_save(st, s, NULL, 0, NULL), GCK_OK);
        gck_snapshot_destroy(s);
    }
    gck_snapshot *next = make_flat(4);
    int failures = 0;
    for (long k = 0;; k++) {
        gck_io_fail_after(k, ENOSPC);
        uint64_t v = 0;
        const gck_status rc = gck_store_save(st, next, NULL, 0, &v);
        gck_io_fail_after(-1, 0);
        if (rc == GCK_OK || (rc == GCK_ERR_IO && strstr(gck_last_error(), "saved, but") != NULL)) {
            assert_int_equal(v, 4);
            break;
        }
        assert_int_equal(rc, GCK_ERR_IO);
        failures++;
        assert_flat_restores(st, 1, 3);
    }
    assert_true(failures > 2);
    gck_snapshot_destroy(next);
    for (uint64_t v = 5; v <= 6; v++) {
        gck_snapshot *s = make_flat(v);
        assert_int_equal(gck_store_save(st, s, NULL, 0, NULL), GCK_OK);
        gck_snapshot_destroy(s);
    }
    assert_flat_restores(st, 1, 6);
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_flat_restores(st, 1, 6);
    gck_store_close(st);
}

/* Kill a writer (saves, tags, evictions) at random moments; every reopen must
 * find a consistent store whose versions all verify and restore exactly. */
static void test_crash_consistency(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 3, 4, 0);
    gck_store_close(st);
    uint64_t seed = (uint64_t)time(NULL);
    uint64_t last_latest = 0;
    int saw_progress = 0, saw_hidden = 0;
    long window_us = 30000; /* widened while no save completes (slow machines, emulators) */
    for (int round = 0; round < 25; round++) {
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            gck_store *w = NULL;
            if (gck_store_open(dir, NULL, &w) != GCK_OK)
                _exit(3);
            for (int i = 0; i < 1000; i++) {
                const uint64_t v = gck_store_latest(w) ? gck_store_latest(w)->version + 1 : 1;
                gck_snapshot *s = make_snapshot(v);
                const char *tags[] = {"best"};
                if (gck_store_save(w, s, tags, v % 25 == 0, NULL) != GCK_OK)
                    _exit(4);
                gck_snapshot_destroy(s);
                if (v % 20 == 0 && gck_store_tag(w, v, "milestone") != GCK_OK)
                    _exit(5);
            }
            _exit(0);
        }
        const long us = (long)(2000 + rng_next(&seed) % (uint64_t)window_us);
        const struct timespec pause = {0, us * 1000L};
        nanosleep(&pause, NULL);
        kill(pid, SIGKILL);
        int ws = 0;
        waitpid(pid, &ws, 0);
        assert_false(WIFEXITED(ws) && WEXITSTATUS(ws) != 0);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        assert_all_restore(st);
        saw_hidden |= hidden_of(st, dir) > 0; /* the open's cleanup left exactly the named files */
        const gck_entry *l = gck_store_latest(st);
        const uint64_t latest = l ? l->version : 0;
        assert_true(latest >= last_latest);
        saw_progress |= latest > last_latest;
        if (latest == last_latest && window_us < 400000)
            window_us *= 2;
        last_latest = latest;
        gck_store_close(st);
    }
    assert_true(saw_progress);
    assert_true(saw_hidden); /* evictions under max_checkpoints 3 keep hidden bases */
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*len ? *len : 1);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

/* A file's bytes and a NUL after them (for strstr). */
static char *read_text(const char *path, size_t *len)
{
    char *b = read_whole(path, len);
    char *t = realloc(b, *len + 1);
    assert_non_null(t);
    t[*len] = '\0';
    return t;
}

/* Two versions (steps 0 and 1, timestamp 77) of four f32 tensors "t0".."t3"
 * of n random values each, from seed: large enough for the threaded coder. */
static void four_tensor_pair(gck_snapshot *s[2], size_t n, uint64_t seed)
{
    float *w = malloc(n * sizeof *w);
    assert_non_null(w);
    for (int v = 0; v < 2; v++) {
        assert_int_equal(gck_snapshot_create((uint64_t)v, &s[v]), GCK_OK);
        assert_int_equal(gck_snapshot_set_timestamp(s[v], 77), GCK_OK);
        for (int l = 0; l < 4; l++) {
            for (size_t i = 0; i < n; i++)
                w[i] = (float)(rng_next(&seed) % 100000) * 1e-5f;
            const int64_t shape = (int64_t)n;
            char name[16];
            snprintf(name, sizeof name, "t%d", l);
            assert_int_equal(gck_snapshot_add_tensor(s[v], name, GCK_DTYPE_F32, &shape, 1, w), GCK_OK);
        }
    }
    free(w);
}

/* Encoding spreads tensors over threads: the delta file is the same bytes
 * on 1 and 2 threads (large enough for the threaded path); restores, also
 * into caller buffers (tensors rebuilt on threads), give the saved values. */
static void test_delta_thread_independent(void **state)
{
    (void)state;
    const size_t n = 1 << 19;
    gck_snapshot *s[2];
    four_tensor_pair(s, n, 5);
    char dirs[2][300], f[2][600];
    char *bytes[2];
    size_t len[2];
    for (int t = 0; t < 2; t++) {
#ifdef _OPENMP
        omp_set_num_threads(t + 1);
#endif
        new_dir(dirs[t], sizeof dirs[t]);
        gck_store *st = open_store(dirs[t], 10, 0, 0);
        assert_int_equal(gck_store_save(st, s[0], NULL, 0, NULL), GCK_OK);
        assert_int_equal(gck_store_save(st, s[1], NULL, 0, NULL), GCK_OK);
        assert_true(gck_store_get(st, 2)->is_delta);
        gck_snapshot *back = NULL;
        gck_store_close(st);
        assert_int_equal(gck_store_open(dirs[t], NULL, &st), GCK_OK);
        /* into caller buffers first, the tensors then rebuilt on t + 1 threads */
        const char *nm[4] = {"t0", "t1", "t2", "t3"};
        void *dst[4];
        size_t sz[4];
        for (int l = 0; l < 4; l++)
            dst[l] = malloc(sz[l] = n * sizeof(float));
        assert_int_equal(gck_store_restore_into(st, 2, nm, dst, sz, 4, NULL), GCK_OK);
        for (int l = 0; l < 4; l++) {
            gck_tensor_info ti;
            assert_int_equal(gck_snapshot_find_tensor(s[1], nm[l], &ti), GCK_OK);
            assert_memory_equal(dst[l], ti.data, sz[l]);
            free(dst[l]);
        }
        assert_int_equal(gck_store_restore(st, 2, &back), GCK_OK);
        assert_same_snapshot(s[1], back);
        gck_snapshot_destroy(back);
        gck_store_close(st);
        file_of(dirs[t], 2, 1, f[t], sizeof f[t]);
        bytes[t] = read_whole(f[t], &len[t]);
        /* a version restored backwards from the latest (its chain's full file gone) */
        char dir[300], full[600];
        new_dir(dir, sizeof dir);
        st = open_store(dir, 10, 0, 0);
        for (int v = 0; v < 4; v++)
            assert_int_equal(gck_store_save(st, s[v % 2], NULL, 0, NULL), GCK_OK);
        file_of(dir, 1, 0, full, sizeof full);
        assert_int_equal(unlink(full), 0);
        assert_int_equal(gck_store_restore(st, 3, &back), GCK_OK);
        assert_same_snapshot(s[0], back);
        gck_snapshot_destroy(back);
        gck_store_close(st);
    }
#ifdef _OPENMP
    omp_set_num_threads(2);
#endif
    assert_int_equal(len[0], len[1]);
    assert_memory_equal(bytes[0], bytes[1], len[0]);
    free(bytes[0]), free(bytes[1]);
    gck_snapshot_destroy(s[0]), gck_snapshot_destroy(s[1]);
}

/* A large delta (GCK_STREAM_MIN, 8 MiB, or more) streams its payloads into the file as they are
 * coded: each of the data file's and the manifest's calls before the first
 * fsync failing in turn leaves the store as it was (no file, the latest
 * unchanged, every version restoring), then the save succeeds. */
static void streamed_write_faults(int threads)
{
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
    const size_t n = 1 << 19;
    gck_snapshot *s[2];
    four_tensor_pair(s, n, 9);
    char dir[300], raw[4096];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    assert_int_equal(gck_store_save(st, s[0], NULL, 0, NULL), GCK_OK);
    /* where the first fsync comes in a delta save (on a copy of the store) */
    char dir2[300];
    new_dir(dir2, sizeof dir2);
    gck_store *st2 = open_store(dir2, 10, 0, 0);
    assert_int_equal(gck_store_save(st2, s[0], NULL, 0, NULL), GCK_OK);
    gck_io_trace(raw, sizeof raw);
    assert_int_equal(gck_store_save(st2, s[1], NULL, 0, NULL), GCK_OK);
    gck_io_trace(NULL, 0);
    gck_store_close(st2);
    const char *f = strchr(raw, 'f');
    assert_non_null(f);
    const long first_fsync = (long)(f - raw);
    assert_true(first_fsync > 4); /* streamed on any thread count: the data file is written in several calls */
    for (long k = 0; k < first_fsync; k++) {
        char got[4096];
        gck_io_trace(got, sizeof got);
        gck_io_fail_after(k, ENOSPC);
        const gck_status rc = gck_store_save(st, s[1], NULL, 0, NULL);
        gck_io_fail_after(-1, 0);
        gck_io_trace(NULL, 0);
        if (rc != GCK_ERR_IO)
            fail_msg("call %ld of '%s' (this save: '%s'): %s", k, raw, got, gck_status_name(rc));
        assert_int_equal(gck_store_latest(st)->version, 1);
        assert_int_equal(count_data_files(st, dir), 1);
        gck_snapshot *back = NULL;
        assert_int_equal(gck_store_restore(st, 1, &back), GCK_OK);
        assert_same_snapshot(s[0], back);
        gck_snapshot_destroy(back);
    }
    assert_int_equal(gck_store_save(st, s[1], NULL, 0, NULL), GCK_OK);
    assert_true(gck_store_get(st, 2)->is_delta);
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    for (int v = 0; v < 2; v++) {
        gck_snapshot *back = NULL;
        assert_int_equal(gck_store_restore(st, (uint64_t)v + 1, &back), GCK_OK);
        assert_same_snapshot(s[v], back);
        gck_snapshot_destroy(back);
    }
    gck_store_close(st);
    gck_snapshot_destroy(s[0]), gck_snapshot_destroy(s[1]);
}

/* A large delta is streamed (written as it is coded) on one thread and on
 * two: every write failing in turn leaves the store unchanged. */
static void test_streamed_write_faults(void **state)
{
    (void)state;
    streamed_write_faults(1);
    streamed_write_faults(2);
}

/* The system calls of one save, with each run of writes shown as one 'W'. */
static void traced_save(gck_store *st, uint64_t v, char *out, size_t cap, char *raw, size_t raw_cap)
{
    gck_io_trace(raw, raw_cap);
    save_v(st, v, NULL);
    gck_io_trace(NULL, 0);
    size_t k = 0;
    for (size_t i = 0; raw[i] != '\0' && k + 1 < cap; i++)
        if (raw[i] != 'w' || i == 0 || raw[i - 1] != 'w')
            out[k++] = raw[i] == 'w' ? 'W' : raw[i];
    out[k] = '\0';
}

/* A save takes three fsyncs in the protocol's order: the data file's (made
 * under its final name, never renamed) and the manifest temporary's, run
 * together, then after the rename the directory's, once; also a save that
 * evicts (no file is rewritten).
 * Each step failing leaves the store as it was, except the last: then the
 * version is saved and the error says "saved, but". */
static void test_save_fsync_order(void **state)
{
    (void)state;
    char dir[300], trace[64], raw[8192];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 3, 0, 0);
    save_v(st, 1, NULL);
    traced_save(st, 2, trace, sizeof trace, raw, sizeof raw); /* a delta */
    assert_string_equal(trace, "oWoWffccrdf"); /* data, manifest temporary, both fsynced together */
    save_v(st, 3, NULL);
    traced_save(st, 4, trace, sizeof trace, raw, sizeof raw); /* evicts 1, kept as 2's hidden base */
    assert_string_equal(trace, "oWoWffccrdf");
    assert_all_restore(st);

    /* the next save, each of its steps failing in turn */
    gck_snapshot *s5 = make_snapshot(5);
    gck_io_trace(raw, sizeof raw);
    assert_int_equal(gck_store_save(st, s5, NULL, 0, NULL), GCK_OK); /* once, to learn where the calls are */
    gck_io_trace(NULL, 0);
    gck_store_close(st);
    st = NULL;
    new_dir(dir, sizeof dir);
    st = open_store(dir, 3, 0, 0);
    for (uint64_t v = 1; v <= 4; v++)
        save_v(st, v, NULL);
    const size_t n = strlen(raw);
    assert_true(n > 8);
    /* fs: the first and the last of the fsyncs before the rename (data files
     * and manifest, run together: either may be either) and the directory's
     * (the last call) */
    long fs[3] = {-1, -1, -1}, rn = -1, dopen = -1;
    for (size_t i = 0; i < n; i++) {
        if (raw[i] == 'f' && fs[0] < 0)
            fs[0] = (long)i;
        if (raw[i] == 'f' && rn < 0)
            fs[1] = (long)i;
        rn = raw[i] == 'r' ? (long)i : rn;
        dopen = raw[i] == 'd' ? (long)i : dopen;
    }
    fs[2] = (long)n - 1;
    assert_true(raw[fs[2]] == 'f' && fs[0] >= 0 && fs[1] > fs[0] && rn > fs[1] && dopen > rn && fs[2] == dopen + 1);
    const long before_commit[] = {fs[0], fs[1], rn};
    for (int k = 0; k < 3; k++) {
        gck_io_fail_after(before_commit[k], EIO);
        uint64_t v = 0;
        const gck_status rc = gck_store_save(st, s5, NULL, 0, &v);
        gck_io_fail_after(-1, 0);
        assert_int_equal(rc, GCK_ERR_IO);
        assert_null(strstr(gck_last_error(), "saved, but"));
        assert_int_equal(v, 0);
        assert_int_equal(gck_store_latest(st)->version, 4);
        assert_int_equal(count_data_files(st, dir), 4); /* 2-4 and hidden 1: no data file, no temporary left */
        gck_store_close(st);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        assert_int_equal(gck_store_latest(st)->version, 4);
        assert_all_restore(st);
    }
    /* the store was reopened: its cache is gone, so the base comes from disk
     * (reads only), and the calls are the same */
    for (int k = 0; k < 2; k++) {
        gck_io_fail_after(k == 0 ? dopen : fs[2], EIO);
        uint64_t v = 0;
        const gck_status rc = gck_store_save(st, s5, NULL, 0, &v);
        gck_io_fail_after(-1, 0);
        assert_int_equal(rc, GCK_ERR_IO);
        assert_non_null(strstr(gck_last_error(), "saved, but"));
        assert_int_equal(v, 5);
        assert_int_equal(gck_store_latest(st)->version, 5);
        gck_store_close(st);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        assert_int_equal(gck_store_latest(st)->version, 5);
        assert_all_restore(st);
        if (k == 0) { /* back to four versions for the second case */
            gck_store_close(st);
            new_dir(dir, sizeof dir);
            st = open_store(dir, 3, 0, 0);
            for (uint64_t v2 = 1; v2 <= 4; v2++)
                save_v(st, v2, NULL);
        }
    }
    gck_snapshot_destroy(s5);
    gck_store_close(st);
}

/* Buffers for every tensor and blob of a snapshot, named as the manifest
 * names them, filled with a marker byte. */
typedef struct into_set {
    size_t n;
    char *names[64];
    void *dsts[64];
    size_t sizes[64];
} into_set;

static void into_alloc(into_set *set, const gck_snapshot *like, unsigned char fill)
{
    memset(set, 0, sizeof *set);
    for (size_t i = 0; i < gck_snapshot_num_tensors(like); i++) {
        gck_tensor_info t;
        assert_int_equal(gck_snapshot_tensor(like, i, &t), GCK_OK);
        set->names[set->n] = strdup(t.name);
        set->sizes[set->n] = t.nbytes;
        set->dsts[set->n] = malloc(t.nbytes ? t.nbytes : 1);
        memset(set->dsts[set->n], fill, t.nbytes);
        set->n++;
    }
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(like); i++) {
        const char *param;
        const void *blob;
        size_t len;
        assert_int_equal(gck_snapshot_optimizer_state(like, i, &param, &blob, &len), GCK_OK);
        char name[256];
        snprintf(name, sizeof name, "__optimizer__/%s", param);
        set->names[set->n] = strdup(name);
        set->sizes[set->n] = len;
        set->dsts[set->n] = malloc(len ? len : 1);
        memset(set->dsts[set->n], fill, len);
        set->n++;
    }
}

static void into_free(into_set *set)
{
    for (size_t i = 0; i < set->n; i++)
        free(set->names[i]), free(set->dsts[i]);
    set->n = 0;
}

/* Every buffer of set holds what `want` holds under that name. */
static void assert_into_equal(const into_set *set, const gck_snapshot *want)
{
    for (size_t i = 0; i < set->n; i++) {
        const void *data;
        size_t len;
        gck_tensor_info t;
        if (strncmp(set->names[i], "__optimizer__/", 14) == 0) {
            assert_int_equal(gck_snapshot_find_optimizer_state(want, set->names[i] + 14, &data, &len), GCK_OK);
        } else {
            assert_int_equal(gck_snapshot_find_tensor(want, set->names[i], &t), GCK_OK);
            data = t.data, len = t.nbytes;
        }
        assert_int_equal(len, set->sizes[i]);
        if (len > 0 && memcmp(set->dsts[i], data, len) != 0)
            fail_msg("'%s' differs", set->names[i]);
    }
}

/* Every byte of every buffer is the marker. */
static void assert_into_untouched(const into_set *set, unsigned char fill)
{
    for (size_t i = 0; i < set->n; i++)
        for (size_t k = 0; k < set->sizes[i]; k++)
            if (((const unsigned char *)set->dsts[i])[k] != fill)
                fail_msg("'%s' was written", set->names[i]);
}

/* Every retained version restored into caller buffers, all names at once. */
static void assert_all_restore_into(gck_store *st)
{
    uint64_t vs[64];
    const size_t n = gck_store_versions(st, vs, 64);
    assert_true(n <= 64); /* the callers' stores are small */
    for (size_t i = 0; i < n; i++) {
        gck_snapshot *want = make_snapshot(vs[i]), *fields = NULL;
        into_set set;
        into_alloc(&set, want, 0xa5);
        const gck_status rc = gck_store_restore_into(st, vs[i], (const char *const *)set.names, set.dsts, set.sizes,
                                                     set.n, &fields);
        if (rc != GCK_OK)
            fail_msg("version %llu: %s: %s", (unsigned long long)vs[i], gck_status_name(rc), gck_last_error());
        assert_into_equal(&set, want);
        assert_int_equal(gck_snapshot_step(fields), gck_snapshot_step(want));
        assert_int_equal(gck_snapshot_timestamp(fields), gck_snapshot_timestamp(want));
        assert_string_equal(gck_snapshot_loss_cid(fields), gck_snapshot_loss_cid(want));
        assert_string_equal(gck_snapshot_metadata(fields, "note"), gck_snapshot_metadata(want, "note"));
        assert_int_equal(gck_snapshot_num_metadata(fields), gck_snapshot_num_metadata(want));
        assert_int_equal(gck_snapshot_num_tensors(fields), 0);
        gck_snapshot_destroy(fields);
        into_free(&set);
        gck_snapshot_destroy(want);
    }
}

/* Version v is gone from every public view although its file may be kept as a hidden base. */
static void assert_not_retained(gck_store *st, uint64_t v)
{
    gck_snapshot *got = NULL;
    gck_version_info vi;
    assert_null(gck_store_get(st, v));
    assert_int_equal(gck_store_restore(st, v, &got), GCK_ERR_NOT_FOUND);
    assert_null(got);
    assert_int_equal(gck_store_version_info(st, v, &vi), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_store_version_disk_bytes(st, v), 0);
    assert_int_equal(gck_store_tag(st, v, "x"), GCK_ERR_NOT_FOUND);
}

/* Everything restores bit for bit after a reopen, as a writer and as a reader, with the same hidden bases. */
static void assert_reopens(gck_store **st, const char *dir, size_t hidden)
{
    gck_store_close(*st);
    assert_int_equal(gck_store_open(dir, NULL, st), GCK_OK); /* its cleanup keeps the hidden bases' files */
    assert_int_equal(hidden_of(*st, dir), hidden);
    assert_all_restore(*st);
    gck_store *ro = NULL;
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_OK);
    assert_all_restore(ro);
    gck_store_stats ss;
    assert_int_equal(gck_store_stats_get(ro, &ss), GCK_OK);
    assert_int_equal(ss.hidden_bases, hidden);
    gck_store_close(ro);
}

/* Eviction rewrites no file: an evicted version a retained delta's chain
 * reads stays as a hidden base (not listed, not restorable, its file kept
 * and counted) until the last version whose chain reads it goes; every
 * retained version restores exactly, also after a reopen. */
static void test_eviction_hidden_bases(void **state)
{
    (void)state;
    char dir[300];
    for (int packed = 0; packed < 2; packed++) { /* compress_full: the hidden full versions are coded too */
        new_dir(dir, sizeof dir);
        gck_store_config c;
        gck_store_config_init(&c);
        c.policy.max_checkpoints = 3, c.policy.keep_every_n = 0, c.policy.delta_threshold_bytes = 0;
        c.compress_full = packed;
        gck_store *st = NULL;
        assert_int_equal(gck_store_open(dir, &c, &st), GCK_OK);
        /* a chain holds at most 3 files: 1, 4, 7, 10 full; hidden bases at most 2 */
        static const size_t hidden[11] = {0, 0, 0, 0, 1, 2, 0, 1, 2, 0, 1};
        for (uint64_t v = 1; v <= 10; v++) {
            save_v(st, v, NULL);
            assert_int_equal(gck_store_latest(st)->is_delta, v % 3 != 1);
            assert_int_equal(gck_store_versions(st, NULL, 0), v < 3 ? v : 3);
            assert_int_equal(hidden_of(st, dir), hidden[v]);
            assert_all_restore(st);
            assert_all_restore_into(st);
            for (uint64_t e = 1; e + 3 <= v; e++)
                assert_not_retained(st, e);
            if (v == 5 || v == 6)
                assert_reopens(&st, dir, hidden[v]);
        }
        gck_store_close(st);
    }

    /* a delta on a hidden delta on a hidden full, and a tagged delta keeping its chain */
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 4, 0, 0); /* chains of at most 4 files: 1 and 5 full, 9 full */
    for (uint64_t v = 1; v <= 6; v++)
        save_v(st, v, NULL);
    /* 3 <- 2 (hidden) <- 1 (hidden) */
    assert_int_equal(hidden_of(st, dir), 2);
    assert_int_equal(gck_store_get(st, 3)->delta_from, 2);
    assert_not_retained(st, 1);
    assert_not_retained(st, 2);
    assert_all_restore(st);
    assert_int_equal(gck_store_tag(st, 4, "keep"), GCK_OK);
    save_v(st, 7, NULL); /* evicts 3: hidden, 4 (tagged) reads it */
    save_v(st, 8, NULL); /* evicts 5 (4 is tagged): hidden, 6 reads it */
    assert_int_equal(hidden_of(st, dir), 4);
    assert_reopens(&st, dir, 4);
    save_v(st, 9, NULL); /* full (8's chain holds 4 files); evicts 6: hidden, 7 reads it */
    assert_false(gck_store_get(st, 9)->is_delta);
    assert_int_equal(hidden_of(st, dir), 5);
    uint64_t found = 0;
    assert_int_equal(gck_store_find_tag(st, "keep", &found), GCK_OK);
    assert_int_equal(found, 4);
    assert_int_equal(gck_store_untag(st, 4, "keep"), GCK_OK); /* drops nothing yet */
    assert_int_equal(hidden_of(st, dir), 5);
    save_v(st, 10, NULL); /* evicts 4: no chain reads it or 1-3 any more */
    assert_int_equal(hidden_of(st, dir), 2);
    for (uint64_t e = 1; e <= 6; e++)
        assert_not_retained(st, e);
    assert_all_restore(st);
    assert_reopens(&st, dir, 2);
    gck_store_close(st);

    /* a tagged version stays, and a save whose base it evicts builds on that base's base */
    new_dir(dir, sizeof dir);
    st = open_store(dir, 2, 0, 0);
    save_v(st, 1, "keep");
    save_v(st, 2, NULL);
    save_v(st, 3, NULL); /* evicts 2 (oldest untagged); 3 was to be a delta from 2 */
    const gck_entry *e3 = gck_store_get(st, 3);
    assert_null(gck_store_get(st, 2));
    assert_true(e3->is_delta);
    assert_int_equal(e3->delta_from, 1);
    assert_int_equal(hidden_of(st, dir), 0);
    save_v(st, 4, NULL); /* evicts 3, its base: a delta from 1 again, and 3 is read by nothing */
    assert_int_equal(gck_store_get(st, 4)->delta_from, 1);
    assert_all_restore(st);
    assert_int_equal(hidden_of(st, dir), 0);
    assert_int_equal(count_data_files(st, dir), 2);
    gck_store_close(st);

    /* max_checkpoints = 1: every version full (the seed's dangling delta is not possible here) */
    new_dir(dir, sizeof dir);
    st = open_store(dir, 1, 0, 0);
    for (uint64_t v = 1; v <= 3; v++) {
        save_v(st, v, NULL);
        assert_false(gck_store_latest(st)->is_delta);
        assert_all_restore(st);
    }
    assert_int_equal(count_data_files(st, dir), 1);
    gck_store_close(st);

    /* the default policy: at most keep_every_n - 1 = 4 hidden bases, every save three fsyncs */
    new_dir(dir, sizeof dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.delta_threshold_bytes = 0;
    assert_int_equal(gck_store_open(dir, &c, &st), GCK_OK);
    size_t most = 0;
    for (uint64_t v = 1; v <= 23; v++) {
        char trace[64], raw[8192];
        traced_save(st, v, trace, sizeof trace, raw, sizeof raw);
        size_t fsyncs = 0;
        for (const char *t = trace; *t; t++)
            fsyncs += *t == 'f';
        assert_int_equal(fsyncs, 3);
        const size_t h = hidden_of(st, dir);
        assert_true(h <= 4);
        most = h > most ? h : most;
        if (v % 6 == 0)
            assert_all_restore(st);
    }
    assert_int_equal(most, 4);
    assert_reopens(&st, dir, hidden_of(st, dir));
    gck_store_close(st);
}

/* restore_into gives the saved bytes for full and delta versions (chains of
 * several deltas, raw items for new and resized tensors, the in-memory
 * latest version), in the session and after reopening; refused calls leave
 * the buffers untouched. */
static void test_restore_into(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 100, 4, 0); /* 1 full, 2-3 deltas, 4 full, 5-7 deltas */
    for (uint64_t v = 1; v <= 7; v++) {
        save_v(st, v, NULL);
        assert_all_restore_into(st);
    }
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* no cache: everything from disk */
    assert_all_restore_into(st);

    /* a subset: only the named buffers are written */
    gck_snapshot *want = make_snapshot(7);
    float w[300 * 7];
    unsigned char m[1000];
    memset(w, 0, sizeof w), memset(m, 0, sizeof m);
    const char *names[] = {"layer.w", "__optimizer__/layer.w"};
    void *dsts[] = {w, m};
    size_t sizes[] = {sizeof w, sizeof m};
    assert_int_equal(gck_store_restore_into(st, 7, names, dsts, sizes, 2, NULL), GCK_OK);
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(want, "layer.w", &t), GCK_OK);
    assert_memory_equal(w, t.data, sizeof w);
    const void *blob;
    size_t len;
    assert_int_equal(gck_snapshot_find_optimizer_state(want, "layer.w", &blob, &len), GCK_OK);
    assert_memory_equal(m, blob, len);
    assert_int_equal(gck_store_restore_into(st, 7, NULL, NULL, NULL, 0, NULL), GCK_OK);

    /* refused before a byte is written */
    into_set set;
    into_alloc(&set, want, 0x5a);
    const char *const *nm = (const char *const *)set.names;
    gck_snapshot *fields = NULL;
    assert_int_equal(gck_store_restore_into(NULL, 7, nm, set.dsts, set.sizes, set.n, &fields), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_restore_into(st, 99, nm, set.dsts, set.sizes, set.n, &fields), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "99"));
    assert_int_equal(gck_store_restore_into(st, 7, nm, NULL, set.sizes, set.n, &fields), GCK_ERR_INVALID_ARGUMENT);
    char *saved = set.names[3];
    set.names[3] = (char *)"no.such";
    assert_int_equal(gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, &fields), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "no.such"));
    set.names[3] = set.names[0];
    assert_int_equal(gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, &fields), GCK_ERR_INVALID_ARGUMENT);
    set.names[3] = saved;
    set.sizes[2]++;
    assert_int_equal(gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, &fields),
                     GCK_ERR_DIMENSION_MISMATCH);
    set.sizes[2]--;
    void *d0 = set.dsts[0];
    set.dsts[0] = set.dsts[1];
    assert_int_equal(gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, &fields), GCK_ERR_INVALID_ARGUMENT);
    set.dsts[0] = d0;
    for (long k = 0;; k++) { /* every allocation failing in turn */
        gck_alloc_fail_after(k);
        const gck_status rc = gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, &fields);
        gck_alloc_fail_after(-1);
        if (rc == GCK_OK)
            break;
        if (rc != GCK_ERR_NO_MEMORY)
            fail_msg("allocation %ld: %s: %s", k, gck_status_name(rc), gck_last_error());
        assert_null(fields);
        assert_into_untouched(&set, 0x5a);
    }
    assert_into_equal(&set, want);
    gck_snapshot_destroy(fields);
    into_free(&set);
    gck_store_close(st);

    /* damage: a delta's payload, then a full file's value bytes */
    char f[600];
    file_of(dir, 6, 1, f, sizeof f);
    flip_byte(f, 5);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    into_alloc(&set, want, 0);
    gck_status rc = gck_store_restore_into(st, 7, nm, set.dsts, set.sizes, set.n, NULL);
    assert_int_equal(rc, GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "version"));
    rc = gck_store_restore_into(st, 5, nm, set.dsts, set.sizes, set.n, NULL); /* below the damage: fine */
    into_free(&set);
    gck_snapshot *w5 = make_snapshot(5);
    into_alloc(&set, w5, 0);
    assert_int_equal(gck_store_restore_into(st, 5, nm, set.dsts, set.sizes, set.n, NULL), GCK_OK);
    assert_into_equal(&set, w5);
    (void)rc;
    gck_store_close(st);
    file_of(dir, 4, 0, f, sizeof f);
    flip_byte(f, 3);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_restore_into(st, 5, nm, set.dsts, set.sizes, set.n, NULL), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "content id"));
    into_free(&set);
    gck_snapshot_destroy(w5);
    gck_snapshot_destroy(want);
    gck_store_close(st);
}

/* A snapshot of references is saved without the store keeping the caller's
 * memory: the caller frees it right after the save (ASan sees any later
 * read), and the version restores (from the cache and from disk) to the
 * same bytes as a snapshot of copies. */
static void test_save_refs(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    for (uint64_t v = 1; v <= 3; v++) {
        gck_snapshot *copy = make_snapshot(v), *ref = NULL;
        assert_int_equal(gck_snapshot_create(gck_snapshot_step(copy), &ref), GCK_OK);
        assert_int_equal(gck_snapshot_set_timestamp(ref, gck_snapshot_timestamp(copy)), GCK_OK);
        void *bufs[32];
        size_t nb = 0;
        for (size_t i = 0; i < gck_snapshot_num_tensors(copy); i++) {
            gck_tensor_info t;
            assert_int_equal(gck_snapshot_tensor(copy, i, &t), GCK_OK);
            bufs[nb] = malloc(t.nbytes ? t.nbytes : 1);
            memcpy(bufs[nb], t.data, t.nbytes);
            if (i % 3 == 2) /* mixed with copies */
                assert_int_equal(gck_snapshot_add_tensor(ref, t.name, t.dtype, t.shape, t.ndim, bufs[nb]), GCK_OK);
            else
                assert_int_equal(gck_snapshot_add_tensor_ref(ref, t.name, t.dtype, t.shape, t.ndim, bufs[nb]), GCK_OK);
            nb++;
        }
        for (size_t i = 0; i < gck_snapshot_num_optimizer_states(copy); i++) {
            const char *param;
            const void *blob;
            size_t len;
            assert_int_equal(gck_snapshot_optimizer_state(copy, i, &param, &blob, &len), GCK_OK);
            assert_int_equal(gck_snapshot_set_optimizer_state(ref, param, blob, len), GCK_OK);
        }
        assert_int_equal(gck_snapshot_set_metadata(ref, "note", gck_snapshot_metadata(copy, "note")), GCK_OK);
        assert_int_equal(gck_snapshot_set_loss_cid(ref, gck_snapshot_loss_cid(copy)), GCK_OK);
        uint64_t got = 0;
        assert_int_equal(gck_store_save(st, ref, NULL, 0, &got), GCK_OK);
        assert_int_equal(got, v);
        for (size_t i = 0; i < nb; i++) /* before the snapshot is destroyed: it is never read again */
            free(bufs[i]);
        gck_snapshot_destroy(ref);
        gck_snapshot_destroy(copy);
        assert_all_restore(st); /* the latest from the store's own copy */
        assert_all_restore_into(st);
    }
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_all_restore(st);
    gck_store_close(st);
}

/* A snapshot that carries a delta description itself (a store's delta file,
 * loaded) is saved full: with compress_full its packed file names base 0,
 * not the version a delta would have been built on, and it restores. */
static void test_save_delta_file_packed(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0);
    save_v(st, 1, NULL);
    save_v(st, 2, NULL);
    gck_store_close(st);
    file_of(dir, 2, 1, f, sizeof f);
    gck_snapshot *d = NULL;
    assert_int_equal(gck_snapshot_load(f, &d), GCK_OK);
    new_dir(dir, sizeof dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.keep_every_n = 0, c.policy.delta_threshold_bytes = 0, c.compress_full = 1;
    assert_int_equal(gck_store_open(dir, &c, &st), GCK_OK);
    save_v(st, 1, NULL);
    uint64_t v = 0;
    assert_int_equal(gck_store_save(st, d, NULL, 0, &v), GCK_OK);
    assert_int_equal(v, 2);
    assert_false(gck_store_get(st, 2)->is_delta);
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* no cache: read from its file */
    gck_snapshot *got = NULL;
    const gck_status rc = gck_store_restore(st, 2, &got);
    if (rc != GCK_OK)
        fail_msg("restore: %s", gck_last_error());
    assert_int_equal(gck_snapshot_num_tensors(got), gck_snapshot_num_tensors(d));
    gck_snapshot_destroy(got);
    gck_snapshot_destroy(d);
    gck_store_close(st);
}

/* A version on the chain of the latest (which the writer keeps in memory)
 * and nearer to it than to its full version is rebuilt backwards from the
 * latest: its chain's lower files are not read (here: version 1's is
 * gone), and it is still exactly what was saved, every id checked. Further
 * down the chain (or without the in-memory latest) the chain is read. */
/* A training step's state: every tensor keeps its dtype and shape (no
 * delta stores one raw), some change, one never does. */
static gck_snapshot *step_snapshot(uint64_t v)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(v, &s), GCK_OK);
    /* a fixed time: the one create takes would differ between the saved and the expected copy
     * whenever a second boundary falls between them */
    assert_int_equal(gck_snapshot_set_timestamp(s, UINT64_C(1700000000) + v), GCK_OK);
    float w[999];
    double m[64];
    for (int i = 0; i < 999; i++)
        w[i] = (float)i * 0.5f - (float)v * (i % 7 == 0 ? 0.25f : 0.0f);
    for (int i = 0; i < 64; i++)
        m[i] = (double)(i * (int)v);
    const int64_t ws[2] = {37, 27}, ms = 64;
    unsigned char blob[33];
    memset(blob, (int)v, sizeof blob);
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, ws, 2, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "m", GCK_DTYPE_F64, &ms, 1, m), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "frozen", GCK_DTYPE_F32, &ms, 1, w), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", blob, sizeof blob), GCK_OK);
    char note[32];
    snprintf(note, sizeof note, "step %llu", (unsigned long long)v);
    assert_int_equal(gck_snapshot_set_metadata(s, "note", note), GCK_OK);
    return s;
}

static void save_step(gck_store *st, uint64_t v)
{
    gck_snapshot *s = step_snapshot(v);
    uint64_t got = 0;
    assert_int_equal(gck_store_save(st, s, NULL, 0, &got), GCK_OK);
    assert_int_equal(got, v);
    gck_snapshot_destroy(s);
}

static void test_restore_back_from_latest(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 0, 0); /* 1 full, 2-7 deltas, each on the one before */
    for (uint64_t v = 1; v <= 7; v++)
        save_step(st, v);
    file_of(dir, 1, 0, f, sizeof f);
    assert_int_equal(unlink(f), 0);
    /* 7: the latest itself; 6, 5: one and two deltas undone; 4: three
     * undone where forwards would decode as many and read the full file */
    for (uint64_t v = 7; v >= 4; v--) {
        gck_snapshot *got = NULL, *want = step_snapshot(v);
        const gck_status rc = gck_store_restore(st, v, &got);
        if (rc != GCK_OK)
            fail_msg("version %llu: %s: %s", (unsigned long long)v, gck_status_name(rc), gck_last_error());
        assert_same_snapshot(want, got);
        gck_snapshot_destroy(got);
        gck_snapshot_destroy(want);
    }
    gck_snapshot *got = NULL;
    assert_int_equal(gck_store_restore(st, 3, &got), GCK_ERR_IO); /* four deltas up, three files down: read */
    assert_non_null(strstr(gck_last_error(), "version 1"));
    assert_null(got);
    gck_store_close(st);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* no version in memory: 6 reads its chain */
    assert_int_equal(gck_store_restore(st, 6, &got), GCK_ERR_IO);
    assert_null(got);
    gck_store_close(st);

    /* damage in a delta that is undone: not restored wrong - the forward
     * rebuild, which does not read that delta, gives the version */
    new_dir(dir, sizeof dir);
    st = open_store(dir, 10, 0, 0);
    for (uint64_t v = 1; v <= 6; v++)
        save_step(st, v);
    file_of(dir, 6, 1, f, sizeof f);
    flip_byte(f, 5); /* inside a compressed payload of 6 */
    gck_snapshot *want = step_snapshot(5);
    assert_int_equal(gck_store_restore(st, 5, &got), GCK_OK);
    assert_same_snapshot(want, got);
    gck_snapshot_destroy(got);
    gck_snapshot_destroy(want);
    gck_store_close(st);
}

/* The manifest of '<dir>' with its first `from` replaced by `to`, written back. */
static void edit_manifest(const char *dir, const char *from, const char *to)
{
    char p[600];
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    size_t len;
    char *m = read_text(p, &len);
    char *at = strstr(m, from);
    assert_non_null(at);
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    fwrite(m, 1, (size_t)(at - m), f);
    fputs(to, f);
    fputs(at + strlen(from), f);
    fclose(f);
    free(m);
}

/* Hidden bases in the manifest: format 3 while there are any (a reader of
 * 2 would take them for versions), back to 1 when none is left; a hidden
 * base with tags, a non-boolean "hidden" or a delta whose hidden base is
 * missing is a corrupt manifest. */
static void test_manifest_hidden_bases(void **state)
{
    (void)state;
    char dir[300], p[600];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 3, 0, 0);
    for (uint64_t v = 1; v <= 4; v++)
        save_v(st, v, NULL); /* 1 hidden: 2 <- 1 */
    gck_store_close(st);
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    size_t len;
    char *m = read_text(p, &len);
    assert_non_null(strstr(m, "\"format_version\":3"));
    assert_non_null(strstr(m, "\"hidden\":true"));
    free(m);
    /* each edit of the manifest: refused as corrupt (says), or read with n versions */
    static const struct {
        const char *from, *to, *says;
        size_t n;
    } edits[] = {{"\"hidden\":true", "\"hidden\":1", "hidden is not true or false", 0},
                 {"\"tags\":[]", "\"tags\":[\"x\"]", "a hidden base has tags", 0}, /* the first: version 1's */
                 {"\"hidden\":true", "\"hidden\":false", NULL, 4},                   /* listed again */
                 {"\"format_version\":3", "\"format_version\":2", NULL, 3}};
    for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++) {
        m = read_text(p, &len);
        edit_manifest(dir, edits[k].from, edits[k].to);
        const gck_status rc = gck_store_open_readonly(dir, &st);
        if (edits[k].says == NULL) {
            assert_int_equal(rc, GCK_OK);
            assert_int_equal(gck_store_versions(st, NULL, 0), edits[k].n);
            assert_all_restore(st);
            gck_store_close(st);
        } else {
            assert_int_equal(rc, GCK_ERR_CORRUPT);
            assert_non_null(strstr(gck_last_error(), edits[k].says));
        }
        FILE *f = fopen(p, "wb"); /* the manifest as it was */
        fwrite(m, 1, len, f);
        fclose(f);
        free(m);
    }
    /* the base of a listed delta neither listed nor hidden */
    m = read_text(p, &len);
    char *one = strstr(m, "{\"version\":\"1\"");
    char *two = strstr(m, "{\"version\":\"2\"");
    assert_true(one != NULL && two != NULL && two > one);
    FILE *f = fopen(p, "wb");
    fwrite(m, 1, (size_t)(one - m), f);
    fputs(two, f);
    fclose(f);
    assert_int_equal(gck_store_open_readonly(dir, &st), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "a delta's base is not a retained earlier version or hidden base"));
    f = fopen(p, "wb");
    fwrite(m, 1, len, f);
    fclose(f);
    free(m);
    /* the hidden bases gone, format 1 again */
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    save_v(st, 5, NULL);
    save_v(st, 6, NULL); /* evicts 3: 1-3 dropped */
    assert_int_equal(hidden_of(st, dir), 0);
    gck_store_close(st);
    m = read_text(p, &len);
    assert_non_null(strstr(m, "\"format_version\":1"));
    assert_null(strstr(m, "\"hidden\""));
    free(m);
}

/* gck_store_version_info: the manifest's record of a version, also after reopening. */
static void test_version_info(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 3, 0);
    save_v(st, 1, "first");
    save_v(st, 2, NULL);
    assert_int_equal(gck_store_tag(st, 2, "best"), GCK_OK);
    assert_int_equal(gck_store_tag(st, 2, "second"), GCK_OK);
    save_v(st, 3, NULL);
    for (int reopen = 0; reopen <= 1; reopen++) {
        gck_version_info vi;
        assert_int_equal(gck_store_version_info(st, 2, &vi), GCK_OK);
        assert_int_equal(vi.version, 2);
        assert_int_equal(vi.step, 20);
        assert_int_equal(vi.timestamp_secs, 1002);
        assert_int_equal(vi.is_delta, 1);
        assert_int_equal(vi.delta_from, 1);
        assert_int_equal(vi.n_tags, 2);
        assert_string_equal(vi.tags[0], "best");
        assert_string_equal(vi.tags[1], "second");
        assert_int_equal(vi.stored_bytes, gck_store_version_disk_bytes(st, 2));
        assert_non_null(strstr(vi.file, ".delta.safetensors"));
        gck_snapshot *s2 = make_snapshot(2);
        assert_int_equal(vi.n_tensors, gck_snapshot_num_tensors(s2) + gck_snapshot_num_optimizer_states(s2));
        uint64_t full = 0;
        for (size_t i = 0; i < vi.n_tensors; i++) {
            gck_tensor_info t;
            if (strncmp(vi.tensor_names[i], "__optimizer__/", 14) == 0) {
                const void *blob;
                size_t len;
                assert_int_equal(gck_snapshot_find_optimizer_state(s2, vi.tensor_names[i] + 14, &blob, &len), GCK_OK);
                full += len;
                continue;
            }
            assert_int_equal(gck_snapshot_find_tensor(s2, vi.tensor_names[i], &t), GCK_OK);
            assert_string_equal(vi.content_ids[i], t.content_id);
            full += t.nbytes;
        }
        assert_int_equal(vi.full_bytes, full);
        gck_snapshot_destroy(s2);
        assert_int_equal(gck_store_version_info(st, 3, &vi), GCK_OK);
        assert_int_equal(vi.is_delta, 0); /* 3 % 3 == 0: full */
        assert_int_equal(vi.delta_from, 0);
        assert_int_equal(vi.step, 30);
        assert_int_equal(vi.n_tags, 0);
        assert_int_equal(gck_store_version_info(st, 1, &vi), GCK_OK);
        assert_int_equal(vi.n_tags, 1);
        assert_string_equal(vi.tags[0], "first");
        const gck_version_info keep = vi;
        assert_int_equal(gck_store_version_info(st, 9, &vi), GCK_ERR_NOT_FOUND);
        assert_memory_equal(&vi, &keep, sizeof vi); /* untouched */
        assert_int_equal(gck_store_version_info(NULL, 1, &vi), GCK_ERR_INVALID_ARGUMENT);
        assert_int_equal(gck_store_version_info(st, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
        gck_store_close(st);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    }
    gck_store_close(st);
}

/* What the session believes about every version (version_info), reread
 * from disk by a second open, is the same: the manifest written from the
 * reused texts of unchanged versions is exact after saves, tags, untags and
 * evictions (hidden bases). */
static void assert_manifest_matches(gck_store **st, const char *dir)
{
    uint64_t vs[64];
    const size_t n = gck_store_versions(*st, vs, 64);
    assert_true(n <= 64); /* the callers' stores are small */
    gck_version_info a[64];
    char files[64][96], tags[64][256];
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(gck_store_version_info(*st, vs[i], &a[i]), GCK_OK);
        snprintf(files[i], sizeof files[i], "%s", a[i].file);
        tags[i][0] = '\0';
        for (size_t t = 0; t < a[i].n_tags; t++)
            strncat(tags[i], a[i].tags[t], sizeof tags[i] - strlen(tags[i]) - 2), strcat(tags[i], ",");
    }
    gck_store_stats sa, sb;
    assert_int_equal(gck_store_stats_get(*st, &sa), GCK_OK);
    gck_store_close(*st);
    assert_int_equal(gck_store_open(dir, NULL, st), GCK_OK);
    assert_int_equal(gck_store_versions(*st, NULL, 0), n);
    assert_int_equal(gck_store_stats_get(*st, &sb), GCK_OK); /* the hidden bases too */
    assert_int_equal(sb.hidden_bases, sa.hidden_bases);
    assert_int_equal(sb.hidden_bytes, sa.hidden_bytes);
    assert_int_equal(sb.disk_bytes, sa.disk_bytes);
    for (size_t i = 0; i < n; i++) {
        gck_version_info b;
        assert_int_equal(gck_store_version_info(*st, vs[i], &b), GCK_OK);
        assert_int_equal(b.is_delta, a[i].is_delta);
        assert_int_equal(b.delta_from, a[i].delta_from);
        assert_int_equal(b.stored_bytes, a[i].stored_bytes);
        assert_int_equal(b.step, a[i].step);
        assert_string_equal(b.file, files[i]);
        char t2[256] = "";
        for (size_t t = 0; t < b.n_tags; t++)
            strncat(t2, b.tags[t], sizeof t2 - strlen(t2) - 2), strcat(t2, ",");
        assert_string_equal(t2, tags[i]);
    }
}

static void test_manifest_matches_memory(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 3, 0, 0); /* chains: evictions keep hidden bases */
    for (uint64_t v = 1; v <= 12; v++) {
        save_v(st, v, v % 5 == 0 ? "fifth" : NULL);
        if (v % 2 == 0)
            assert_int_equal(gck_store_tag(st, v, "even"), GCK_OK);
        if (v > 2 && v % 2 == 1 && gck_store_get(st, v - 1) != NULL)
            assert_int_equal(gck_store_untag(st, v - 1, "even"), GCK_OK); /* it may go again */
        if (v % 3 == 0) { /* several commits per session: texts reused across saves and evictions */
            assert_manifest_matches(&st, dir);
            assert_all_restore(st);
        }
    }
    gck_store_close(st);
}

/* tests/fuzz/fuzz_store.c's two versions, whose version-2 delta written by
 * the format-1 encoder is kept as the fuzz seed corpus_store/delta. */
static gck_snapshot *fuzz_version(int v, int format)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create((uint64_t)v, &s), GCK_OK);
    float w[300], u[5];
    double b[17];
    for (int i = 0; i < 300; i++)
        w[i] = (float)i * 0.25f + (float)v * (i % 3 == 0 ? 0.001f : 0.0f);
    for (int i = 0; i < 5; i++) /* the seeds of format 5 on: version 2's "v" has both signs */
        u[i] = format >= 5 && v == 2 && (i & 1) ? -w[i] : w[i];
    for (int i = 0; i < 17; i++)
        b[i] = (double)i;
    const int64_t ws[2] = {30, 10}, bs = 17, vs = v == 1 ? 3 : 5;
    unsigned char blob[40];
    memset(blob, v, sizeof blob);
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, ws, 2, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, &bs, 1, b), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "v", GCK_DTYPE_F32, &vs, 1, u), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", blob, sizeof blob), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "k", "x"), GCK_OK);
    return s;
}

/* A delta written by an older format (a fuzz seed: "delta" format 1,
 * "delta_format2" format 2, both with zstd planes; "delta_format3" with
 * rANS planes; "delta_format4" with zrans planes; "delta_format5" also with
 * a rotated raw item) restores, restores into caller memory and verifies. */
static void assert_old_delta_reads(const char *seed_name, int format)
{
    char dir[300], f[600], path[600], want_format[32];
    new_dir(dir, sizeof dir);
    gck_store_config cfg;
    gck_store_config_init(&cfg);
    cfg.policy.keep_every_n = 0, cfg.policy.delta_threshold_bytes = 0;
    cfg.coder = GCK_STORE_CODER_ZSTD, cfg.zstd_max_entropy = 0.25; /* as the stores that wrote them */
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, &cfg, &st), GCK_OK);
    gck_snapshot *v[2] = {fuzz_version(1, format), fuzz_version(2, format)};
    for (int i = 0; i < 2 && format >= 2; i++) { /* the seeds of format 2 on carry these too */
        char note[8];
        snprintf(note, sizeof note, "n%d", i + 1);
        assert_int_equal(gck_snapshot_set_metadata(v[i], "note", note), GCK_OK);
        assert_int_equal(gck_snapshot_set_loss_cid(v[i], note), GCK_OK);
    }
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", GCK_FUZZ_STORE_CORPUS, seed_name);
    char *seed = read_whole(path, &len);
    assert_true(len > 1 && seed[0] == 0); /* the fuzz target's "replace the delta file" input */
    /* restore checks every field against the manifest: save v[1] with the seed's timestamp */
    const char *ts = strstr(seed + 1 + 8, "\"gradckpt.timestamp\":\"");
    assert_non_null(ts);
    uint64_t seed_ts = strtoull(ts + strlen("\"gradckpt.timestamp\":\""), NULL, 10);
    assert_int_equal(gck_snapshot_set_timestamp(v[1], seed_ts), GCK_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(gck_store_save(st, v[i], NULL, 0, NULL), GCK_OK);
    gck_store_close(st);
    snprintf(want_format, sizeof want_format, "\\\"format\\\":%d", format);
    assert_non_null(strstr(seed + 1 + 8, want_format));
    file_of(dir, 2, 1, f, sizeof f);
    FILE *out = fopen(f, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(seed + 1, 1, len - 1, out), len - 1);
    fclose(out);
    free(seed);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    gck_snapshot *got = NULL;
    into_set set;
    /* its planes' codecs: zstd; rANS; rANS and zstd (format 4 and 5: zrans bitmaps) */
    const int has_zstd = gck_delta_have_zstd(), has_rans = gck_delta_have_rans();
    const int needs = format <= 2 ? has_zstd : format == 3 ? has_rans : has_rans && has_zstd;
    if (!needs) { /* a build without that codec: a clean refusal */
        assert_int_equal(gck_store_restore(st, 2, &got), GCK_ERR_UNSUPPORTED);
        assert_non_null(strstr(gck_last_error(), format <= 2 || (format >= 4 && has_rans) ? "zstd" : "htscodecs"));
        into_alloc(&set, v[1], 0x33);
        assert_int_equal(gck_store_restore_into(st, 2, (const char *const *)set.names, set.dsts, set.sizes, set.n,
                                                NULL), GCK_ERR_UNSUPPORTED);
        into_free(&set);
        gck_store_close(st);
        gck_snapshot_destroy(v[0]), gck_snapshot_destroy(v[1]);
        return;
    }
    assert_int_equal(gck_store_restore(st, 2, &got), GCK_OK);
    assert_same_snapshot(v[1], got);
    gck_snapshot_destroy(got);
    into_alloc(&set, v[1], 0x33);
    assert_int_equal(gck_store_restore_into(st, 2, (const char *const *)set.names, set.dsts, set.sizes, set.n, NULL),
                     GCK_OK);
    assert_into_equal(&set, v[1]);
    into_free(&set);
    size_t checked = 0;
    assert_int_equal(gck_store_verify(st, &checked), GCK_OK);
    assert_int_equal(checked, 2);
    gck_store_close(st);
    gck_snapshot_destroy(v[0]), gck_snapshot_destroy(v[1]);
}

static void test_delta_format1_reads(void **state)
{
    (void)state;
    assert_old_delta_reads("delta", 1);
}

static void test_delta_format2_reads(void **state)
{
    (void)state;
    assert_old_delta_reads("delta_format2", 2);
}

/* Format 3's seed ("delta_format3": rANS planes) and the current format's
 * ("delta_format4": zrans planes, zstd-coded bitmaps) read too, so the fuzz
 * corpus starts from every codec. */
static void test_delta_format3_reads(void **state)
{
    (void)state;
    assert_old_delta_reads("delta_format3", 3);
}

static void test_delta_format4_reads(void **state)
{
    (void)state;
    assert_old_delta_reads("delta_format4", 4);
}

/* format 5: a raw f32 item of both signs stored rotated ("rot": true) */
static void test_delta_format5_reads(void **state)
{
    (void)state;
    assert_old_delta_reads("delta_format5", 5);
}

/* Format 5: a coded full version rotates its f32 and bf16 tensors of both
 * signs (the whole exponent in the top plane) and no others - not a tensor
 * of one sign, not f64 - and writes "format":5; every tensor restores bit
 * for bit, whole, into caller buffers and alone, over two store chunks and
 * an odd tail; damage is refused or restored right, never wrong values. */
static void test_full_rotated(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store_config cfg;
    gck_store_config_init(&cfg);
    cfg.policy.keep_every_n = 0, cfg.policy.delta_threshold_bytes = 0, cfg.compress_full = 1;
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, &cfg, &st), GCK_OK);
    const size_t n = ((size_t)2 << 20) + 1001;
    float *w = gck_test_alloc(n * sizeof *w), *pos = gck_test_alloc(n * sizeof *pos);
    double *d = gck_test_alloc(n * sizeof *d);
    uint16_t *h = gck_test_alloc(n * sizeof *h);
    uint64_t seed = 9;
    for (size_t i = 0; i < n; i++) {
        const double r = (double)(gck_test_rand(&seed) >> 11) * 0x1p-53 - 0.5;
        w[i] = (float)(r * 0.02), pos[i] = (float)(r * r), d[i] = r;
        uint32_t b;
        memcpy(&b, &w[i], 4);
        h[i] = (uint16_t)(b >> 16);
    }
    w[7] = -0.0f, w[8] = 1.0f / 0.0f, pos[9] = 0.0f; /* a few specials */
    const int64_t shape = (int64_t)n;
    gck_snapshot *v = NULL;
    assert_int_equal(gck_snapshot_create(1, &v), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(v, "w", GCK_DTYPE_F32, &shape, 1, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(v, "pos", GCK_DTYPE_F32, &shape, 1, pos), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(v, "d", GCK_DTYPE_F64, &shape, 1, d), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(v, "h", GCK_DTYPE_BF16, &shape, 1, h), GCK_OK);
    assert_int_equal(gck_store_save(st, v, NULL, 0, NULL), GCK_OK);
    gck_store_close(st);
    free(w), free(pos), free(d), free(h);
    file_of(dir, 1, 0, f, sizeof f);
    size_t flen;
    char *text = read_text(f, &flen);
    assert_non_null(strstr(text + 8, "\\\"format\\\":5"));
    size_t rots = 0;
    for (const char *p = text + 8; (p = strstr(p, "\\\"rot\\\":true")) != NULL; p++)
        rots++;
    assert_int_equal(rots, 2); /* w and h */
    free(text);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    gck_snapshot *got = NULL;
    assert_int_equal(gck_store_restore(st, 1, &got), GCK_OK);
    assert_same_snapshot(v, got);
    gck_snapshot_destroy(got);
    into_set set;
    into_alloc(&set, v, 0x5a);
    assert_int_equal(gck_store_restore_into(st, 1, (const char *const *)set.names, set.dsts, set.sizes, set.n, NULL),
                     GCK_OK);
    assert_into_equal(&set, v);
    into_free(&set);
    const char *const only[] = {"h"};
    assert_int_equal(gck_store_restore_select(st, 1, only, 1, &got), GCK_OK);
    assert_int_equal(gck_snapshot_num_tensors(got), 1);
    gck_tensor_info a, b;
    assert_int_equal(gck_snapshot_find_tensor(got, "h", &a), GCK_OK);
    assert_int_equal(gck_snapshot_find_tensor(v, "h", &b), GCK_OK);
    assert_int_equal(a.nbytes, b.nbytes);
    assert_memory_equal(a.data, b.data, b.nbytes);
    gck_snapshot_destroy(got);
    gck_store_close(st);
    const long at[] = {1, 1000, 3000000, 9000000};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        flip_byte(f, at[i]);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        const gck_status rc = gck_store_restore(st, 1, &got);
        if (rc == GCK_OK) {
            assert_same_snapshot(v, got);
            gck_snapshot_destroy(got);
        } else if (rc != GCK_ERR_CORRUPT) {
            fail_msg("damage %ld bytes from the end: status %d (%s)", at[i], (int)rc, gck_last_error());
        }
        gck_store_close(st);
        flip_byte(f, at[i]);
    }
    gck_snapshot_destroy(v);
}

/* ---- the per-plane coders --------------------------------------------------------- */

/* A plane that is mostly one byte (an XOR delta's exponent bytes) is coded
 * "zrans" (bitmap + the other bytes) when the build has rANS, over two store
 * chunks and an odd tail; it restores bit for bit, and damage in its blocks
 * is a clean GCK_ERR_CORRUPT (never a crash, never wrong values). A build
 * without rANS writes no zrans plane and the same holds for its codecs. */
static void test_delta_zrans(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store_config cfg;
    gck_store_config_init(&cfg);
    cfg.policy.keep_every_n = 0, cfg.policy.delta_threshold_bytes = 0;
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, &cfg, &st), GCK_OK);
    const size_t n = ((size_t)2 << 20) + 1001; /* planes of two chunks and a tail */
    const int64_t shape = (int64_t)n;
    float *w = gck_test_alloc(n * sizeof *w);
    uint64_t seed = 5;
    for (size_t i = 0; i < n; i++)
        w[i] = (float)((double)(gck_test_rand(&seed) >> 11) * 0x1p-53 - 0.5);
    gck_snapshot *v[3];
    for (int k = 0; k < 3; k++) {
        for (size_t i = 0; k > 0 && i < n; i++) /* a small step: most exponents stay */
            w[i] *= 1.0f + (float)((double)(gck_test_rand(&seed) >> 11) * 0x1p-53 - 0.5) * 0.01f;
        assert_int_equal(gck_snapshot_create((uint64_t)k + 1, &v[k]), GCK_OK);
        assert_int_equal(gck_snapshot_add_tensor(v[k], "w", GCK_DTYPE_F32, &shape, 1, w), GCK_OK);
        assert_int_equal(gck_store_save(st, v[k], NULL, 0, NULL), GCK_OK);
    }
    gck_store_close(st);
    free(w);
    file_of(dir, 2, 1, f, sizeof f);
    size_t flen;
    char *text = read_text(f, &flen);
    if (gck_delta_have_rans())
        assert_non_null(strstr(text + 8, "[\\\"zrans\\\","));
    else
        assert_null(strstr(text + 8, "zrans"));
    assert_non_null(strstr(text + 8, "\\\"format\\\":4"));
    free(text);
    /* version 2 from its file (3, the latest, is the one kept in memory) */
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    gck_snapshot *got = NULL;
    assert_int_equal(gck_store_restore(st, 2, &got), GCK_OK);
    assert_same_snapshot(v[1], got);
    gck_snapshot_destroy(got);
    gck_store_close(st);
    /* one damaged byte at a time (the last plane, zrans, ends the file): its
     * value stream, bitmap stream, lengths, fill and codec bytes. Refused as
     * corrupt; in the last bytes of a rANS stream (renormalisation bytes its
     * decoder may never need: on s390x, whose bitmaps are rANS-coded, the
     * last 9 were) refused or restored right; never wrong values */
    const long at[] = {1, 2, 9, 100, 1000, 40000, 300000, 500000};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        flip_byte(f, at[i]);
        assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        const gck_status rc = gck_store_restore(st, 2, &got);
        if (rc == GCK_OK && at[i] < 100) {
            assert_same_snapshot(v[1], got);
            gck_snapshot_destroy(got);
        } else if (rc != GCK_ERR_CORRUPT) {
            fail_msg("damage %ld bytes from the end: status %d (%s)", at[i], (int)rc, gck_last_error());
        }
        gck_store_close(st);
        flip_byte(f, at[i]); /* undone */
    }
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_int_equal(gck_store_restore(st, 2, &got), GCK_OK);
    assert_same_snapshot(v[1], got);
    gck_snapshot_destroy(got);
    gck_store_close(st);
    for (int k = 0; k < 3; k++)
        gck_snapshot_destroy(v[k]);
}


/* Version v of a run whose planes call for every codec: AdamW-like weights
 * drifting slowly (low-entropy exponent planes: rANS; middling: Huffman), an
 * embedding of which a few rows change (long runs of zero XOR: zstd), noise
 * (raw), and a small tensor (too short to code). "codes" is one byte plane
 * of one chunk and 8 Ki more, of 2-bit values: its rANS plane holds a 32-way
 * block and a 4-way one (blocks below 40 KiB). */
static gck_snapshot *coded_version(uint64_t v)
{
    enum { N = 1 << 16, ROWS = 256, COLS = 128, NC = GCK_DELTA_CHUNK + (1 << 13) };
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(v, &s), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(s, 5000 + v), GCK_OK);
    float *w = malloc(N * sizeof *w), *e = malloc(ROWS * COLS * sizeof *e);
    uint32_t *noise = malloc(N * sizeof *noise);
    uint64_t r = 99;
    for (size_t i = 0; i < N; i++) {
        const float g = (float)((int)(rng_next(&r) % 20001) - 10000) * 1e-6f;
        w[i] = g * 30.0f + (float)v * g * 1e-3f;
    }
    for (size_t i = 0; i < ROWS * COLS; i++)
        e[i] = (float)(rng_next(&r) % 1000) * 1e-3f + ((i / COLS) % 64 == v % 64 ? (float)v : 0.0f);
    r = 7 + v;
    for (size_t i = 0; i < N; i++)
        noise[i] = (uint32_t)rng_next(&r);
    const int64_t ws = N, es[2] = {ROWS, COLS}, ts = 3;
    const double tiny[3] = {1.0, (double)v, -2.5};
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, &ws, 1, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "emb", GCK_DTYPE_F32, es, 2, e), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "noise", GCK_DTYPE_U32, &ws, 1, noise), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "tiny", GCK_DTYPE_F64, &ts, 1, tiny), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", w, 4096), GCK_OK);
    uint8_t *codes = malloc(NC);
    for (size_t i = 0; i < NC; i++)
        codes[i] = (uint8_t)(rng_next(&r) & 3u);
    const int64_t cs = NC;
    assert_int_equal(gck_snapshot_add_tensor(s, "codes", GCK_DTYPE_U8, &cs, 1, codes), GCK_OK);
    free(w), free(e), free(noise), free(codes);
    return s;
}

/* Each coder and compress_full setting: every version restores bit for bit
 * (whole, into caller memory, after reopening, through a reader), files are
 * safetensors, deltas record the codecs their planes need, a packed full
 * version is smaller than its data and named so. */
static void test_coders(void **state)
{
    (void)state;
    for (int coder = 0; coder <= 1; coder++)
        for (int packed = 0; packed <= 1; packed++) {
            char dir[300], f[600];
            new_dir(dir, sizeof dir);
            gck_store_config cfg;
            gck_store_config_init(&cfg);
            cfg.policy.keep_every_n = 3, cfg.policy.delta_threshold_bytes = 0;
            cfg.coder = coder, cfg.compress_full = packed;
            gck_store *st = NULL;
            assert_int_equal(gck_store_open(dir, &cfg, &st), GCK_OK);
            gck_snapshot *vs[7] = {NULL};
            for (uint64_t v = 1; v <= 6; v++) {
                vs[v] = coded_version(v);
                assert_int_equal(gck_store_save(st, vs[v], NULL, 0, NULL), GCK_OK);
            }
            for (int reopen = 0; reopen <= 2; reopen++) {
                for (uint64_t v = 1; v <= 6; v++) {
                    /* under an emulator or the sanitizers a reopened store restores each
                     * version one way, whole or into memory, the other way at the other
                     * reopening (31 s of qemu-s390x for every way at every stage) */
                    const int whole = !GCK_TEST_EMULATED || reopen == 0 || (v + (uint64_t)reopen) % 2 == 0;
                    const int into = !GCK_TEST_EMULATED || reopen == 0 || !whole;
                    if (whole) {
                        gck_snapshot *got = NULL;
                        assert_int_equal(gck_store_restore(st, v, &got), GCK_OK);
                        assert_same_snapshot(vs[v], got);
                        gck_snapshot_destroy(got);
                    }
                    if (!into)
                        continue;
                    into_set set;
                    into_alloc(&set, vs[v], 0x5a);
                    assert_int_equal(gck_store_restore_into(st, v, (const char *const *)set.names, set.dsts,
                                                            set.sizes, set.n, NULL), GCK_OK);
                    assert_into_equal(&set, vs[v]);
                    into_free(&set);
                }
                size_t checked = 0;
                assert_int_equal(gck_store_verify(st, &checked), GCK_OK);
                assert_int_equal(checked, 6);
                gck_store_close(st);
                st = NULL;
                if (reopen == 0)
                    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
                else if (reopen == 1)
                    assert_int_equal(gck_store_open_readonly(dir, &st), GCK_OK);
            }
            /* the recorded configuration */
            assert_int_equal(gck_store_open_readonly(dir, &st), GCK_OK);
            gck_store_config got;
            assert_int_equal(gck_store_config_get(st, &got), GCK_OK);
            assert_int_equal(got.coder, coder);
            assert_int_equal(got.compress_full, packed);
            gck_version_info vi;
            assert_int_equal(gck_store_version_info(st, 3, &vi), GCK_OK); /* 3 % 3 == 0: full */
            assert_false(vi.is_delta);
            assert_int_equal(strstr(vi.file, ".packed.") != NULL, packed);
            /* smaller when this build has a coder for it (s390x: no zstd, so with
             * GCK_STORE_CODER_ZSTD every plane is raw) */
            const int can_code = coder == GCK_STORE_CODER_ZSTD ? gck_delta_have_zstd()
                                                               : gck_delta_have_zstd() || gck_delta_have_rans();
            if (packed && can_code)
                assert_true(vi.stored_bytes < vi.full_bytes);
            char mpath[600];
            snprintf(mpath, sizeof mpath, "%s/manifest.json", dir);
            size_t mlen;
            char *man = read_text(mpath, &mlen);
            assert_non_null(strstr(man, packed ? "\"format_version\":2" : "\"format_version\":1"));
            free(man);
            gck_store_close(st);
            /* every data file opens as a safetensors file; deltas name their codecs */
            file_of(dir, 5, 1, f, sizeof f);
            gck_snapshot *raw = NULL;
            assert_int_equal(gck_snapshot_load(f, &raw), GCK_OK);
            size_t flen;
            char *text = read_text(f, &flen);
            const char *head = text + 8; /* after the header's length (it has NUL bytes) */
            assert_non_null(strstr(head, "[\\\"raw\\\","));
            if (gck_delta_have_zstd())
                assert_non_null(strstr(head, "[\\\"zstd\\\","));
            if (coder == GCK_STORE_CODER_AUTO && gck_delta_have_rans())
                assert_non_null(strstr(head, "[\\\"rans\\\","));
            if (coder == GCK_STORE_CODER_ZSTD)
                assert_null(strstr(head, "rans"));
            free(text);
            gck_snapshot_destroy(raw);
            for (uint64_t v = 1; v <= 6; v++)
                gck_snapshot_destroy(vs[v]);
        }
}

/* ---- restoring chosen tensors (gck_store_restore_select) --------------------------- */

/* The named tensors and blobs of want (by name) equal those of got, and got holds nothing else. */
static void assert_selected(const gck_snapshot *want, const gck_snapshot *got, const char *const *names, size_t n)
{
    assert_int_equal(gck_snapshot_step(got), gck_snapshot_step(want));
    assert_int_equal(gck_snapshot_timestamp(got), gck_snapshot_timestamp(want));
    assert_string_equal(gck_snapshot_metadata(got, "note"), gck_snapshot_metadata(want, "note"));
    size_t nt = 0, nb = 0;
    for (size_t i = 0; i < n; i++) {
        const char *pre = "__optimizer__/";
        if (strncmp(names[i], pre, strlen(pre)) == 0) {
            const void *a, *b;
            size_t la, lb;
            assert_int_equal(gck_snapshot_find_optimizer_state(want, names[i] + strlen(pre), &a, &la), GCK_OK);
            assert_int_equal(gck_snapshot_find_optimizer_state(got, names[i] + strlen(pre), &b, &lb), GCK_OK);
            assert_int_equal(la, lb);
            assert_memory_equal(a, b, la);
            nb++;
            continue;
        }
        gck_tensor_info x, y;
        assert_int_equal(gck_snapshot_find_tensor(want, names[i], &x), GCK_OK);
        assert_int_equal(gck_snapshot_find_tensor(got, names[i], &y), GCK_OK);
        assert_same_tensor(&x, &y);
        nt++;
    }
    assert_int_equal(gck_snapshot_num_tensors(got), nt);
    assert_int_equal(gck_snapshot_num_optimizer_states(got), nb);
}

/* Chosen tensors of every version (full, delta, packed full; the latest
 * from memory, the others from files, after a reopen too) equal the saved
 * ones; unknown names and versions are NOT_FOUND with nothing made. */
static void test_restore_select(void **state)
{
    (void)state;
    for (int packed = 0; packed <= 1; packed++) {
        char dir[300];
        new_dir(dir, sizeof dir);
        gck_store_config cfg;
        gck_store_config_init(&cfg);
        cfg.policy.keep_every_n = 4, cfg.policy.delta_threshold_bytes = 0, cfg.compress_full = packed;
        gck_store *st = NULL;
        assert_int_equal(gck_store_open(dir, &cfg, &st), GCK_OK);
        for (uint64_t v = 1; v <= 6; v++)
            save_v(st, v, NULL);
        const char *names[] = {"layer.w", "__optimizer__/layer.w", "step", "counts"};
        for (int reopen = 0; reopen <= 1; reopen++) {
            for (uint64_t v = 1; v <= 6; v++) {
                gck_snapshot *want = make_snapshot(v), *got = NULL;
                assert_int_equal(gck_store_restore_select(st, v, names, 4, &got), GCK_OK);
                assert_selected(want, got, names, 4);
                gck_snapshot_destroy(got);
                assert_int_equal(gck_store_restore_select(st, v, names + 2, 1, &got), GCK_OK);
                assert_selected(want, got, names + 2, 1);
                gck_snapshot_destroy(got);
                assert_int_equal(gck_store_restore_select(st, v, NULL, 0, &got), GCK_OK); /* the fields alone */
                assert_selected(want, got, NULL, 0);
                gck_snapshot_destroy(got);
                gck_snapshot_destroy(want);
            }
            gck_store_close(st);
            assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
        }
        gck_snapshot *got = (gck_snapshot *)(uintptr_t)1;
        const char *bad[] = {"layer.w", "no.such"};
        assert_int_equal(gck_store_restore_select(st, 6, bad, 2, &got), GCK_ERR_NOT_FOUND);
        assert_non_null(strstr(gck_last_error(), "no.such"));
        assert_int_equal(gck_store_restore_select(st, 99, names, 1, &got), GCK_ERR_NOT_FOUND);
        const char *twice[] = {"step", "step"};
        assert_int_not_equal(gck_store_restore_select(st, 6, twice, 2, &got), GCK_OK);
        const char *null_name[] = {NULL};
        assert_int_equal(gck_store_restore_select(st, 6, null_name, 1, &got), GCK_ERR_INVALID_ARGUMENT);
        assert_int_equal(gck_store_restore_select(st, 6, NULL, 1, &got), GCK_ERR_INVALID_ARGUMENT);
        assert_ptr_equal(got, (gck_snapshot *)(uintptr_t)1); /* untouched */
        gck_store_close(st);
    }
}

/* ---- readers beside a writer (gck_store_open_readonly) --------------------------- */

/* What a reader process compares (cmocka's asserts stay in the parent):
 * every field and value of a restored version against make_snapshot. */
static int same_snapshot(const gck_snapshot *a, const gck_snapshot *b)
{
    char da[24], db[24];
    gck_snapshot_fields_digest(a, NULL, da);
    gck_snapshot_fields_digest(b, NULL, db);
    if (strcmp(da, db) != 0 || gck_snapshot_num_tensors(a) != gck_snapshot_num_tensors(b) ||
        gck_snapshot_num_optimizer_states(a) != gck_snapshot_num_optimizer_states(b))
        return 0;
    for (size_t i = 0; i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info x, y;
        if (gck_snapshot_tensor(a, i, &x) != GCK_OK || gck_snapshot_tensor(b, i, &y) != GCK_OK ||
            x.nbytes != y.nbytes || memcmp(x.data, y.data, x.nbytes) != 0 || strcmp(x.content_id, y.content_id) != 0)
            return 0;
    }
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(a); i++) {
        const char *pa, *pb;
        const void *xa, *xb;
        size_t na, nb;
        if (gck_snapshot_optimizer_state(a, i, &pa, &xa, &na) != GCK_OK ||
            gck_snapshot_optimizer_state(b, i, &pb, &xb, &nb) != GCK_OK || na != nb || memcmp(xa, xb, na) != 0)
            return 0;
    }
    return 1;
}

/* "ls -l" of a directory as one string: names, sizes, modes, times. */
static void dir_state(const char *dir, char *buf, size_t cap)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t at = 0;
    buf[0] = '\0';
    struct dirent *de;
    char names[64][NAME_MAX + 1];
    int n = 0;
    while ((de = readdir(d)) != NULL && n < 64)
        snprintf(names[n++], sizeof names[0], "%s", de->d_name);
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
    for (int i = 0; i < n; i++) {
        char p[600];
        struct stat sb;
        snprintf(p, sizeof p, "%s/%.255s", dir, names[i]);
        assert_int_equal(lstat(p, &sb), 0);
        at += (size_t)snprintf(buf + at, cap - at, "%s %lld %o %lld.%09ld\n", names[i], (long long)sb.st_size,
                               (unsigned)sb.st_mode, (long long)sb.st_mtim.tv_sec, sb.st_mtim.tv_nsec);
        assert_true(at < cap);
    }
}

static void test_readonly_open(void **state)
{
    (void)state;
    char dir[300], p[600];
    new_dir(dir, sizeof dir);
    gck_store *ro = NULL;
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_ERR_IO); /* no directory */
    assert_null(ro);
    assert_int_equal(mkdir(dir, 0777), 0);
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_ERR_NOT_FOUND); /* not a store: none is made */
    assert_non_null(strstr(gck_last_error(), "not a store"));
    assert_int_equal(count_data_files(NULL, dir), 0);
    snprintf(p, sizeof p, "%s/manifest.json", dir);
    struct stat sb;
    assert_int_equal(stat(p, &sb), -1);
    assert_int_equal(gck_store_open_readonly(NULL, &ro), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_open_readonly(dir, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_store_open_readonly("", &ro), GCK_ERR_INVALID_ARGUMENT);
    snprintf(p, sizeof p, "%s/manifest.json/x", dir);
    assert_int_equal(gck_store_open_readonly(p, &ro), GCK_ERR_IO);

    gck_store *w = open_store(dir, 10, 3, 0);
    save_v(w, 1, NULL);
    save_v(w, 2, "best");
    save_v(w, 3, NULL);
    /* beside the writer's open handle (which holds the lock): a reader, and another */
    gck_store *ro2 = NULL;
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_OK);
    assert_int_equal(gck_store_open_readonly(dir, &ro2), GCK_OK);
    assert_all_restore(ro);
    uint64_t v = 0;
    assert_int_equal(gck_store_find_tag(ro, "best", &v), GCK_OK);
    assert_int_equal(v, 2);
    gck_store_config c;
    assert_int_equal(gck_store_config_get(ro, &c), GCK_OK);
    assert_int_equal(c.policy.keep_every_n, 3);
    /* changes are refused before anything is written */
    char before[4096], after[4096];
    dir_state(dir, before, sizeof before);
    gck_snapshot *s4 = make_snapshot(4);
    uint64_t got = 0;
    assert_int_equal(gck_store_save(ro, s4, NULL, 0, &got), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "read-only"));
    assert_int_equal(gck_store_tag(ro, 1, "x"), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "read-only"));
    assert_int_equal(gck_store_untag(ro, 2, "best"), GCK_ERR_INVALID_ARGUMENT);
    uint64_t freed = 0;
    assert_int_equal(gck_store_gc(ro, &freed), GCK_ERR_INVALID_ARGUMENT);
    dir_state(dir, after, sizeof after);
    assert_string_equal(before, after);
    assert_int_equal(gck_store_versions(ro, NULL, 0), 3);
    /* the view is the manifest read at open: a later save does not change it */
    assert_int_equal(gck_store_save(w, s4, NULL, 0, &got), GCK_OK);
    gck_snapshot_destroy(s4);
    assert_int_equal(gck_store_versions(ro, NULL, 0), 3);
    assert_int_equal(gck_store_latest(ro)->version, 3);
    gck_store_stats st;
    assert_int_equal(gck_store_stats_get(ro, &st), GCK_OK);
    assert_int_equal(st.versions, 3);
    gck_store_close(ro2);
    gck_store_close(ro);
    gck_store_close(w);
    /* a crash's leftovers stay: a reader removes nothing */
    snprintf(p, sizeof p, "%s/v00000009-g99.safetensors", dir);
    FILE *f = fopen(p, "wb");
    fputs("junk", f);
    fclose(f);
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_OK);
    gck_store_close(ro);
    assert_int_equal(stat(p, &sb), 0);
    /* every allocation of the open failing in turn */
    for (long k = 0;; k++) {
        gck_alloc_fail_after(k);
        const gck_status rs = gck_store_open_readonly(dir, &ro);
        gck_alloc_fail_after(-1);
        if (rs == GCK_OK)
            break;
        assert_int_equal(rs, GCK_ERR_NO_MEMORY);
        assert_true(k < 10000);
    }
    assert_int_equal(gck_store_versions(ro, NULL, 0), 4);
    gck_store_close(ro);
}

static int g_seen_ok, g_seen_evicted;
static void count_verified(void *ctx, uint64_t version, gck_status st)
{
    (void)ctx, (void)version;
    g_seen_ok += st == GCK_OK;
    g_seen_evicted += st == GCK_ERR_NOT_FOUND;
}

/* The files a commit drops are deleted on a thread the save starts: gone
 * once gck_store_wait, gck_store_gc or gck_store_close returns, in every
 * round, and a dropped file is never counted as a retained one. */
static void test_dropped_files_deleted(void **state)
{
    (void)state;
    char dir[300];
    for (int how = 0; how < 3; how++) { /* wait, gc, close */
        new_dir(dir, sizeof dir);
        gck_store *st = open_store(dir, 1, 0, 0); /* every save full, and it drops the one before */
        for (uint64_t v = 1; v <= 6; v++) {
            save_v(st, v, NULL);
            if (how == 0) {
                assert_int_equal(gck_store_wait(st, NULL), GCK_OK);
                assert_int_equal(count_data_files(NULL, dir), 1);
            } else if (how == 1) {
                uint64_t freed = 0;
                assert_int_equal(gck_store_gc(st, &freed), GCK_OK);
                assert_int_equal(freed, 0); /* the deletion was the save's, not garbage */
                assert_int_equal(count_data_files(NULL, dir), 1);
            } else {
                assert_int_equal(gck_store_close(st), GCK_OK);
                assert_int_equal(count_data_files(NULL, dir), 1);
                assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
            }
        }
        assert_int_equal(gck_store_latest(st)->version, 6);
        assert_all_restore(st);
        gck_store_close(st);
    }
}

/* Open descriptors of this process (Linux; -1 elsewhere). */
static int count_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (d == NULL)
        return -1;
    int n = 0;
    while (readdir(d) != NULL)
        n++;
    closedir(d);
    return n;
}

/* A base read by the decoding threads keeps its file open only while it is
 * a base: restored snapshots, full and delta, the latest and the older ones,
 * hold no descriptor (a caller may hold many), and read the right bits. */
static void test_restored_hold_no_descriptor(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *st = open_store(dir, 10, 5, 0); /* 1 full, 2-4 deltas on it, 5 full */
    for (uint64_t v = 1; v <= 5; v++)
        save_v(st, v, NULL);
    assert_int_equal(gck_store_close(st), GCK_OK);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK); /* nothing in memory: every restore reads files */
    const int before = count_open_fds(); /* -1 without /proc: then only the bits are checked */
    gck_snapshot *held[5] = {0};
    for (uint64_t v = 1; v <= 5; v++) {
        assert_int_equal(gck_store_restore(st, v, &held[v - 1]), GCK_OK);
        gck_snapshot *want = make_snapshot(v);
        assert_same_snapshot(want, held[v - 1]);
        gck_snapshot_destroy(want);
    }
    assert_int_equal(count_open_fds(), before);
    for (int i = 0; i < 5; i++)
        gck_snapshot_destroy(held[i]);
    assert_int_equal(count_open_fds(), before);
    assert_int_equal(gck_store_close(st), GCK_OK);
}

/* A writer evicts after a reader read the manifest: a version whose file
 * is gone is a clear NOT_FOUND; one the writer only made a hidden base (its
 * file kept) is still rebuilt exactly from the reader's view, as are the
 * versions both retain. */
static void test_readonly_evicted_meanwhile(void **state)
{
    (void)state;
    char dir[300], f[600];
    new_dir(dir, sizeof dir);
    gck_store *w = open_store(dir, 3, 0, 0); /* 1 full (hidden), 2 <- 1, 3 <- 2, 4 full */
    for (uint64_t v = 1; v <= 4; v++)
        save_v(w, v, NULL);
    gck_store *ro = NULL;
    assert_int_equal(gck_store_open_readonly(dir, &ro), GCK_OK);
    save_v(w, 5, NULL); /* evicts 2: a hidden base (3 reads it), its file kept */
    gck_snapshot *got = NULL;
    gck_snapshot *want2 = make_snapshot(2);
    assert_int_equal(gck_store_restore(ro, 2, &got), GCK_OK);
    assert_same_snapshot(want2, got);
    gck_snapshot_destroy(got);
    gck_snapshot_destroy(want2);
    save_v(w, 6, NULL); /* evicts 3, which nothing reads: 1-3 and their files go */
    assert_int_equal(gck_store_wait(w, NULL), GCK_OK); /* ... once their deletion is done */
    got = NULL;
    assert_int_equal(gck_store_restore(ro, 2, &got), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "version 2 was evicted meanwhile"));
    assert_null(got);
    into_set set;
    gck_snapshot *like = make_snapshot(3);
    into_alloc(&set, like, 0x11);
    gck_snapshot_destroy(like);
    assert_int_equal(gck_store_restore_into(ro, 3, (const char *const *)set.names, set.dsts, set.sizes, set.n, NULL),
                     GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "version 3 was evicted meanwhile"));
    into_free(&set);
    for (uint64_t v = 4; v <= 4; v++) { /* retained by both: the reader's view reads the same files */
        gck_snapshot *want = make_snapshot(v);
        assert_int_equal(gck_store_restore(ro, v, &got), GCK_OK);
        assert_same_snapshot(want, got);
        gck_snapshot_destroy(got);
        gck_snapshot *fields = NULL;
        into_alloc(&set, want, 0x22);
        assert_int_equal(gck_store_restore_into(ro, v, (const char *const *)set.names, set.dsts, set.sizes, set.n,
                                                &fields), GCK_OK);
        assert_into_equal(&set, want);
        assert_int_equal(gck_snapshot_step(fields), gck_snapshot_step(want));
        gck_snapshot_destroy(fields);
        into_free(&set);
        gck_snapshot_destroy(want);
    }
    assert_int_equal(gck_store_restore(ro, 5, &got), GCK_ERR_NOT_FOUND); /* not in the view */
    size_t n = 99;
    g_seen_ok = g_seen_evicted = 0;
    assert_int_equal(gck_store_verify_each(ro, count_verified, NULL, &n), GCK_OK);
    assert_int_equal(n, 1);
    assert_int_equal(g_seen_ok, 1);
    assert_int_equal(g_seen_evicted, 2);
    assert_int_equal(gck_store_verify(ro, &n), GCK_OK);
    assert_int_equal(n, 1);
    /* a file the current manifest still names is damage, not a writer's change */
    file_of(dir, 4, 0, f, sizeof f);
    assert_int_equal(unlink(f), 0);
    assert_int_equal(gck_store_restore(ro, 4, &got), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "missing"));
    assert_null(strstr(gck_last_error(), "evicted"));
    assert_int_equal(gck_store_verify(ro, &n), GCK_ERR_IO);
    gck_store_close(ro);
    gck_store_close(w);
}

/* A read-only directory (as root: a reader running as nobody). */
static void test_readonly_directory(void **state)
{
    (void)state;
    char dir[300];
    new_dir(dir, sizeof dir);
    gck_store *w = open_store(dir, 10, 3, 0);
    for (uint64_t v = 1; v <= 4; v++)
        save_v(w, v, v == 2 ? "best" : NULL);
    gck_store_close(w);
    char before[4096], after[4096];
    assert_int_equal(chmod(g_root, 0755), 0);
    assert_int_equal(chmod(dir, 0555), 0);
    dir_state(dir, before, sizeof before);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(10);
        gck_store *r = NULL;
        if (gck_store_open(dir, NULL, &r) != GCK_ERR_IO) /* a writer needs the lock file */
            _exit(11);
        if (gck_store_open_readonly(dir, &r) != GCK_OK)
            _exit(12);
        size_t n = 0;
        if (gck_store_verify(r, &n) != GCK_OK || n != 4)
            _exit(13);
        for (uint64_t v = 1; v <= 4; v++) {
            gck_snapshot *got = NULL, *want = make_snapshot(v);
            if (gck_store_restore(r, v, &got) != GCK_OK || !same_snapshot(want, got))
                _exit(14);
            gck_snapshot_destroy(got);
            gck_snapshot_destroy(want);
        }
        gck_store_close(r);
        _exit(0);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    dir_state(dir, after, sizeof after);
    /* (the mode of "." differs: chmod'ed back) */
    assert_string_equal(strchr(before, '\n') ? strstr(before, "\n..") : before,
                        strchr(after, '\n') ? strstr(after, "\n..") : after);
}

/* Reader processes look at a store while a writer process saves, evicts and
 * rebases in a loop: every version they restore is exactly what was saved,
 * and their only error is "evicted meanwhile". Each reader also holds one
 * view until the writer has certainly evicted its oldest version. */
static int reader_process(const char *dir, int rounds, int *evicted)
{
    for (int r = 0; r < rounds; r++) {
        gck_store *ro = NULL;
        if (gck_store_open_readonly(dir, &ro) != GCK_OK) {
            fprintf(stderr, "reader: open: %s\n", gck_last_error());
            return 1;
        }
        uint64_t vs[16];
        const size_t n = gck_store_versions(ro, vs, 16);
        if (r % 4 == 3 && n > 0) { /* wait until the writer is 4 versions further: vs[0] is gone */
            for (int t = 0; t < 20000; t++) {
                gck_store *now = NULL;
                const gck_entry *l = NULL;
                if (gck_store_open_readonly(dir, &now) == GCK_OK)
                    l = gck_store_latest(now);
                const int far = l != NULL && l->version >= vs[n - 1] + 4;
                gck_store_close(now);
                if (far)
                    break;
                const struct timespec ms = {0, 1000000};
                nanosleep(&ms, NULL);
            }
        }
        for (size_t i = 0; i < n && i < 16; i++) {
            gck_snapshot *got = NULL;
            const gck_status st = gck_store_restore(ro, vs[i], &got);
            if (st == GCK_ERR_NOT_FOUND && strstr(gck_last_error(), "evicted meanwhile") != NULL) {
                (*evicted)++;
                continue;
            }
            gck_snapshot *want = make_snapshot(vs[i]);
            const int same = st == GCK_OK && same_snapshot(want, got);
            gck_snapshot_destroy(want);
            gck_snapshot_destroy(got);
            if (!same) {
                fprintf(stderr, "reader: version %llu: %s\n", (unsigned long long)vs[i],
                        st == GCK_OK ? "differs from what was saved" : gck_last_error());
                return 1;
            }
        }
        size_t k = 0;
        if (gck_store_verify(ro, &k) != GCK_OK) {
            fprintf(stderr, "reader: verify: %s\n", gck_last_error());
            return 1;
        }
        gck_store_close(ro);
    }
    return 0;
}

static void test_readers_beside_writer(void **state)
{
    (void)state;
    char dir[300], stop[600];
    new_dir(dir, sizeof dir);
    snprintf(stop, sizeof stop, "%s.stop", dir);
    gck_store *w = open_store(dir, 3, 4, 0); /* every save evicts; every 4th is full */
    save_v(w, 1, NULL);
    gck_store_close(w);
    const pid_t writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        gck_store *ws = NULL;
        if (gck_store_open(dir, NULL, &ws) != GCK_OK)
            _exit(3);
        struct stat sb;
        for (uint64_t v = 2; stat(stop, &sb) != 0 && v < 100000; v++) {
            gck_snapshot *s = make_snapshot(v);
            if (gck_store_save(ws, s, NULL, 0, NULL) != GCK_OK)
                _exit(4);
            gck_snapshot_destroy(s);
        }
        gck_store_close(ws);
        _exit(0);
    }
    /* readers report how often they saw an eviction through a pipe */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t readers[2];
    for (int i = 0; i < 2; i++) {
        readers[i] = fork();
        assert_true(readers[i] >= 0);
        if (readers[i] == 0) {
            int evicted = 0;
            const int rc = reader_process(dir, 12, &evicted);
            if (write(fds[1], &evicted, sizeof evicted) != (ssize_t)sizeof evicted)
                _exit(2);
            _exit(rc);
        }
    }
    int total = 0;
    for (int i = 0; i < 2; i++) {
        int ws = 0, e = 0;
        assert_int_equal(waitpid(readers[i], &ws, 0), readers[i]);
        assert_true(WIFEXITED(ws));
        assert_int_equal(WEXITSTATUS(ws), 0);
        assert_int_equal(read(fds[0], &e, sizeof e), (ssize_t)sizeof e);
        total += e;
    }
    close(fds[0]), close(fds[1]);
    FILE *f = fopen(stop, "wb");
    fclose(f);
    int ws = 0;
    assert_int_equal(waitpid(writer, &ws, 0), writer);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_true(total >= 2); /* each reader's held views lost their oldest version */
    assert_int_equal(gck_store_open(dir, NULL, &w), GCK_OK);
    assert_all_restore(w);
    gck_store_close(w);
}

/* ---- every stored field checked ---------------------------------------------------- */

/* Replaces the only occurrence of `from` in the file with `to` (same length). */
static void replace_in_file(const char *path, const char *from, const char *to)
{
    size_t len;
    char *b = read_whole(path, &len);
    const size_t fl = strlen(from);
    assert_int_equal(fl, strlen(to));
    char *at = NULL;
    for (size_t i = 0; i + fl <= len; i++)
        if (memcmp(b + i, from, fl) == 0) {
            assert_null(at);
            at = b + i;
        }
    if (at == NULL)
        fail_msg("'%s' is not in %s", from, path);
    memcpy(at, to, fl);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
    free(b);
}


/* A store of versions 1 (full), 2 and 3 (deltas) in a fresh directory. */
static void three_versions(char *dir, size_t cap)
{
    new_dir(dir, cap);
    gck_store *st = open_store(dir, 10, 0, 0);
    for (uint64_t v = 1; v <= 3; v++)
        save_v(st, v, NULL);
    gck_store_close(st);
}

/* The file of version v: a changed header field, then verify and restore. */
static void assert_field_change_found(uint64_t v, const char *from, const char *to, const char *why)
{
    char dir[300], f[600];
    three_versions(dir, sizeof dir);
    file_of(dir, v, v > 1, f, sizeof f);
    replace_in_file(f, from, to);
    for (int readonly = 0; readonly <= 1; readonly++) {
        gck_store *st = NULL;
        assert_int_equal(readonly ? gck_store_open_readonly(dir, &st) : gck_store_open(dir, NULL, &st), GCK_OK);
        size_t n = 99;
        if (gck_store_verify(st, &n) != GCK_ERR_CORRUPT)
            fail_msg("%s (%s in version %llu) passed verify", why, to, (unsigned long long)v);
        assert_int_equal(n, v - 1);
        char want[64];
        snprintf(want, sizeof want, "version %llu", (unsigned long long)v);
        assert_non_null(strstr(gck_last_error(), want));
        gck_snapshot *got = NULL;
        if (gck_store_restore(st, v, &got) != GCK_ERR_CORRUPT)
            fail_msg("%s (%s in version %llu) was restored", why, to, (unsigned long long)v);
        assert_null(got);
        gck_store_close(st);
    }
}

static void test_every_field_checked(void **state)
{
    (void)state;
    /* make_snapshot(v): step 10 v, timestamp 1000 + v, metadata and loss cid "v<v>" */
    assert_field_change_found(1, "\"gradckpt.step\":\"10\"", "\"gradckpt.step\":\"19\"", "a changed step");
    assert_field_change_found(2, "\"gradckpt.step\":\"20\"", "\"gradckpt.step\":\"29\"", "a delta's changed step");
    assert_field_change_found(1, "\"gradckpt.timestamp\":\"1001\"", "\"gradckpt.timestamp\":\"1009\"",
                              "a changed timestamp");
    assert_field_change_found(3, "\"gradckpt.timestamp\":\"1003\"", "\"gradckpt.timestamp\":\"1004\"",
                              "a delta's changed timestamp");
    assert_field_change_found(1, "\"note\":\"v1\"", "\"note\":\"v7\"", "changed user metadata");
    assert_field_change_found(2, "\"note\":\"v2\"", "\"note\":\"v8\"", "a delta's changed user metadata");
    assert_field_change_found(1, "\"gradckpt.loss_cid\":\"v1\"", "\"gradckpt.loss_cid\":\"v5\"", "a changed loss cid");
    assert_field_change_found(3, "\"gradckpt.loss_cid\":\"v3\"", "\"gradckpt.loss_cid\":\"v6\"",
                              "a delta's changed loss cid");
    assert_field_change_found(1, "\"ids\":{\"dtype\":\"U64\"", "\"ids\":{\"dtype\":\"I64\"", "a changed dtype");
    assert_field_change_found(1, "\"shape\":[300,7]", "\"shape\":[700,3]", "a changed shape");
    assert_field_change_found(2, "\\\"shape\\\":[64,33]", "\\\"shape\\\":[33,64]", "a delta's changed shape");

    /* a manifest without digests (written before they were recorded) still
     * opens, verifies and restores; step and timestamp are still checked */
    char dir[300], m[600], f[600];
    three_versions(dir, sizeof dir);
    snprintf(m, sizeof m, "%s/manifest.json", dir);
    size_t len;
    char *js = read_text(m, &len);
    char *old = malloc(len + 1);
    size_t o = 0;
    for (size_t i = 0; i < len;) { /* drop every "fields_digest": "..." member */
        const char *k = "\"fields_digest\"";
        if (len - i > strlen(k) && memcmp(js + i, k, strlen(k)) == 0) {
            while (o > 0 && old[o - 1] != ',')
                o--;
            o--; /* the comma before it */
            const char *v = memchr(js + i + strlen(k), '"', len - i - strlen(k)); /* the value's opening quote */
            i = (size_t)((char *)memchr(v + 1, '"', len - (size_t)(v + 1 - js)) - js) + 1;
            continue;
        }
        old[o++] = js[i++];
    }
    FILE *mf = fopen(m, "wb");
    assert_int_equal(fwrite(old, 1, o, mf), o);
    fclose(mf);
    free(js), free(old);
    gck_store *st = NULL;
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    assert_all_restore(st);
    gck_store_close(st);
    js = read_text(m, &len);
    assert_null(strstr(js, "fields_digest")); /* opening does not add them */
    free(js);
    file_of(dir, 1, 0, f, sizeof f);
    replace_in_file(f, "\"gradckpt.step\":\"10\"", "\"gradckpt.step\":\"11\"");
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_OK);
    size_t n = 0;
    assert_int_equal(gck_store_verify(st, &n), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "step 11"));
    gck_store_close(st);

    /* a malformed digest in the manifest is refused at open */
    three_versions(dir, sizeof dir);
    snprintf(m, sizeof m, "%s/manifest.json", dir);
    js = read_text(m, &len);
    char *d = strstr(js, "\"fields_digest\"");
    assert_non_null(d);
    d = strstr(d, "xxh3:");
    assert_non_null(d);
    d[strlen("xxh3:")] = 'Z';
    mf = fopen(m, "wb");
    assert_int_equal(fwrite(js, 1, len, mf), len);
    fclose(mf);
    free(js);
    assert_int_equal(gck_store_open(dir, NULL, &st), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "fields_digest"));
    assert_int_equal(gck_store_open_readonly(dir, &st), GCK_ERR_CORRUPT);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_root, sizeof g_root, "/tmp/gck_test_store.XXXXXX");
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
        cmocka_unit_test(test_defaults_and_args),   cmocka_unit_test(test_round_trip), cmocka_unit_test(test_restore_cold_files),
        cmocka_unit_test(test_files_are_safetensors), cmocka_unit_test(test_frozen_delta_is_small),
        cmocka_unit_test(test_eviction_hidden_bases), cmocka_unit_test(test_dropped_files_deleted), cmocka_unit_test(test_restored_hold_no_descriptor), cmocka_unit_test(test_manifest_hidden_bases), cmocka_unit_test(test_save_delta_file_packed), cmocka_unit_test(test_restore_back_from_latest),    cmocka_unit_test(test_lock),
        cmocka_unit_test(test_corruption_detected), cmocka_unit_test(test_orphans_removed),
        cmocka_unit_test(test_faults_leave_store_unchanged), cmocka_unit_test(test_failed_save_after_base_copy),
        cmocka_unit_test(test_crash_consistency),
        cmocka_unit_test(test_delta_thread_independent),
        cmocka_unit_test(test_streamed_write_faults),
        cmocka_unit_test(test_save_fsync_order),
        cmocka_unit_test(test_restore_into),
        cmocka_unit_test(test_save_refs),
        cmocka_unit_test(test_version_info),
        cmocka_unit_test(test_manifest_matches_memory),
        cmocka_unit_test(test_delta_format1_reads), cmocka_unit_test(test_delta_format2_reads), cmocka_unit_test(test_delta_format3_reads),
        cmocka_unit_test(test_delta_format4_reads), cmocka_unit_test(test_delta_format5_reads), cmocka_unit_test(test_full_rotated),
        cmocka_unit_test(test_delta_zrans),
        cmocka_unit_test(test_coders),              cmocka_unit_test(test_restore_select),
        cmocka_unit_test(test_readonly_open),        cmocka_unit_test(test_readonly_evicted_meanwhile),
        cmocka_unit_test(test_readonly_directory),   cmocka_unit_test(test_readers_beside_writer),
        cmocka_unit_test(test_every_field_checked),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
