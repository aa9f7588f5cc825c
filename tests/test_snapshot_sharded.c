/* tests/test_snapshot_sharded.c - sharded snapshots in one process: layout, round trips for every writer count,
 * partial loads, the commit under injected failures, damaged directories, another writer's index. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "support/gck_test.h"
#include "support/sharded_fixture.h"

#include "alloc_internal.h"
#include "io_internal.h"

static char g_dir[256];

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    while (d && (ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
            continue;
        char p[600];
        snprintf(p, sizeof p, "%s/%s", dir, ent->d_name);
        struct stat sb;
        if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            rm_tree(p);
        else
            unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/gck_sharded_test_XXXXXX");
    return mkdtemp(g_dir) == NULL;
}

static int teardown(void **state)
{
    (void)state;
    rm_tree(g_dir);
    return 0;
}

static const char *sub(const char *name)
{
    static char p[4][512];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", g_dir, name);
    return p[k];
}

/* Files in dir whose names start with prefix (NULL: all but . and ..). */
static size_t count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            (prefix == NULL || strncmp(e->d_name, prefix, strlen(prefix)) == 0))
            n++;
    closedir(d);
    return n;
}

static json_t *read_index(const char *dir)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, GCK_SHARDED_INDEX);
    json_error_t err;
    json_t *j = json_load_file(p, 0, &err);
    assert_non_null(j);
    return j;
}

static void write_index(const char *dir, json_t *j)
{
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, GCK_SHARDED_INDEX);
    assert_int_equal(json_dump_file(j, p, JSON_INDENT(1)), 0);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    assert_int_equal(fclose(f), 0);
}

static gck_snapshot *const SENTINEL = (gck_snapshot *)&g_dir;

/* A load that must fail with st and a message containing what; out untouched. */
static void expect_load_fails(const char *dir, const char *const *names, size_t n, gck_status st, const char *what)
{
    gck_snapshot *out = SENTINEL;
    assert_int_equal(gck_snapshot_load_sharded(dir, names, n, &out), st);
    assert_ptr_equal(out, SENTINEL);
    if (strstr(gck_last_error(), what) == NULL)
        fail_msg("message '%s' lacks '%s'", gck_last_error(), what);
}

static const char *join(const char *dir, const char *name)
{
    static char p[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, name);
    return p[k];
}

/* Every writer count gives a directory that loads back bit for bit, with
 * min(writers, items) shards named in the Hugging Face layout. */
static void test_round_trip_every_writer_count(void **state)
{
    (void)state;
    gck_snapshot *s = gck_fx_sample(1, 42);
    const size_t items = gck_snapshot_num_tensors(s) + gck_snapshot_num_optimizer_states(s);
    const size_t writers[] = {1, 2, 3, 4, 5, 7, items, items + 3};
    for (size_t w = 0; w < sizeof writers / sizeof writers[0]; w++) {
        char name[32];
        snprintf(name, sizeof name, "w%zu", writers[w]);
        const char *dir = sub(name);
        assert_int_equal(gck_snapshot_save_sharded(s, dir, writers[w]), GCK_OK);
        const size_t S = writers[w] < items ? writers[w] : items;
        assert_int_equal(count_files(dir, "model-g1-"), S);
        assert_int_equal(count_files(dir, NULL), S + 1); /* and the index: no temporaries */
        json_t *ix = read_index(dir);
        json_t *wm = json_object_get(ix, "weight_map"), *md = json_object_get(ix, "metadata");
        assert_int_equal(json_object_size(wm), items);
        assert_true(json_is_integer(json_object_get(md, "total_size")));
        assert_string_equal(json_string_value(json_object_get(md, "gradckpt.generation")), "1");
        assert_string_equal(json_string_value(json_object_get(md, "gradckpt.step")), "42");
        assert_non_null(json_string_value(json_object_get(md, "gradckpt.cid.__optimizer__/head.w")));
        /* every shard k of S is named, and is a valid safetensors file of its items only */
        size_t named = 0;
        for (size_t k = 1; k <= S; k++) {
            char f[96];
            snprintf(f, sizeof f, "model-g1-%05zu-of-%05zu.safetensors", k, S);
            size_t here = 0;
            const char *key;
            json_t *v;
            json_object_foreach(wm, key, v) here += strcmp(json_string_value(v), f) == 0;
            assert_true(here >= 1);
            named += here;
            gck_snapshot *one = NULL;
            assert_int_equal(gck_snapshot_load(join(dir, f), &one), GCK_OK);
            assert_int_equal(gck_snapshot_num_tensors(one) + gck_snapshot_num_optimizer_states(one), here);
            assert_int_equal(gck_snapshot_step(one), 42);
            gck_snapshot_destroy(one);
        }
        assert_int_equal(named, items);
        json_decref(ix);
        gck_snapshot *got = NULL;
        assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &got), GCK_OK);
        gck_fx_same(s, got);
        gck_snapshot_destroy(got);
    }
    gck_snapshot_destroy(s);
}

/* Balanced by bytes, largest first, ties by name: the plan is a function of
 * names and sizes (another snapshot with other values gets the same map). */
static void test_assignment_balanced_and_deterministic(void **state)
{
    (void)state;
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(1, &s), GCK_OK);
    static const char *names[] = {"a", "b", "c", "d", "e"};
    static const int64_t sizes[] = {100, 60, 50, 40, 60};
    unsigned char buf[100] = {0};
    for (int i = 0; i < 5; i++)
        assert_int_equal(gck_snapshot_add_tensor(s, names[i], GCK_DTYPE_U8, &sizes[i], 1, buf), GCK_OK);
    assert_int_equal(gck_snapshot_save_sharded(s, sub("plan"), 2), GCK_OK);
    /* a 100 -> 1; b 60 -> 2; e 60 -> 2 (120); c 50 -> 1 (150); d 40 -> 2 (160) */
    json_t *ix = read_index(sub("plan"));
    json_t *wm = json_object_get(ix, "weight_map");
    static const char *want[] = {"1", "2", "1", "2", "2"};
    for (int i = 0; i < 5; i++) {
        const char *f = json_string_value(json_object_get(wm, names[i]));
        assert_non_null(f);
        char exp[96];
        snprintf(exp, sizeof exp, "model-g1-0000%s-of-00002.safetensors", want[i]);
        assert_string_equal(f, exp);
    }
    json_decref(ix);
    gck_snapshot_destroy(s);
}

/* Asking for some items opens only their shards and returns only them. */
static void test_partial_load_reads_only_named_shards(void **state)
{
    (void)state;
    gck_snapshot *s = gck_fx_sample(2, 7);
    const char *dir = sub("partial");
    assert_int_equal(gck_snapshot_save_sharded(s, dir, 4), GCK_OK);
    json_t *ix = read_index(dir);
    json_t *wm = json_object_get(ix, "weight_map");
    const char *fw = json_string_value(json_object_get(wm, "layer0.w"));
    const char *fb = json_string_value(json_object_get(wm, "__optimizer__/head.w"));
    /* remove every other shard: the load must not need it */
    DIR *d = opendir(dir);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "model-g", 7) == 0 && strcmp(e->d_name, fw) != 0 && strcmp(e->d_name, fb) != 0)
            assert_int_equal(unlink(join(dir, e->d_name)), 0);
    closedir(d);
    const char *names[] = {"layer0.w", "__optimizer__/head.w"};
    gck_snapshot *got = NULL;
    assert_int_equal(gck_snapshot_load_sharded(dir, names, 2, &got), GCK_OK);
    assert_int_equal(gck_snapshot_num_tensors(got), 1);
    assert_int_equal(gck_snapshot_num_optimizer_states(got), 1);
    gck_tensor_info a, b;
    assert_int_equal(gck_snapshot_find_tensor(s, "layer0.w", &a), GCK_OK);
    assert_int_equal(gck_snapshot_find_tensor(got, "layer0.w", &b), GCK_OK);
    assert_memory_equal(a.data, b.data, a.nbytes);
    assert_string_equal(a.content_id, b.content_id);
    const void *ba, *bb;
    size_t na, nb;
    assert_int_equal(gck_snapshot_find_optimizer_state(s, "head.w", &ba, &na), GCK_OK);
    assert_int_equal(gck_snapshot_find_optimizer_state(got, "head.w", &bb, &nb), GCK_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(ba, bb, na);
    /* the fields come from the index */
    assert_int_equal(gck_snapshot_step(got), 7);
    uint64_t pos = 0;
    assert_int_equal(gck_snapshot_metadata_u64(got, "data.position", &pos), GCK_OK);
    assert_int_equal(pos, 123456789012345ULL);
    gck_snapshot_destroy(got);
    /* zero names: the fields only */
    assert_int_equal(gck_snapshot_load_sharded(dir, names, 0, &got), GCK_OK);
    assert_int_equal(gck_snapshot_num_tensors(got), 0);
    assert_string_equal(gck_snapshot_loss_cid(got), "xxh3:00000000deadbeef");
    gck_snapshot_destroy(got);
    /* a removed shard fails the load that needs it */
    expect_load_fails(dir, NULL, 0, GCK_ERR_IO, "cannot open");
    json_decref(ix);
    gck_snapshot_destroy(s);
}

/* A second save commits generation 2 and removes generation 1's shards;
 * leftovers of a dead save (a later generation never committed) push the
 * next generation past them and are removed by the next commit. */
static void test_generations_and_leftovers(void **state)
{
    (void)state;
    gck_snapshot *a = gck_fx_sample(3, 1), *b = gck_fx_sample(4, 2);
    const char *dir = sub("gen");
    assert_int_equal(gck_snapshot_save_sharded(a, dir, 3), GCK_OK);
    assert_int_equal(gck_snapshot_save_sharded(b, dir, 2), GCK_OK);
    assert_int_equal(count_files(dir, "model-g1-"), 0);
    assert_int_equal(count_files(dir, "model-g2-"), 2);
    uint64_t g = 0;
    write_text(join(dir, "model-g7-00002-of-00003.safetensors"), "dead writer's shard");
    write_text(join(dir, "model-gx-00001-of-00001.safetensors"), "not ours: never touched");
    write_text(join(dir, "model-g9-notes.safetensors"), "not ours either");
    write_text(join(dir, "model-g9-00001-of-00001.safetensors.bak"), "nor this");
    assert_int_equal(gck_snapshot_sharded_begin(dir, &g), GCK_OK);
    assert_int_equal(g, 8);
    /* the commit is still generation 2 */
    gck_snapshot *got = NULL;
    assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &got), GCK_OK);
    gck_fx_same(b, got);
    gck_snapshot_destroy(got);
    assert_int_equal(gck_snapshot_save_sharded(a, dir, 1), GCK_OK);
    assert_int_equal(count_files(dir, "model-g"), 4); /* g8's shard and the three other names */
    assert_int_equal(count_files(dir, "model-g8-00001-of-00001"), 1);
    assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &got), GCK_OK);
    gck_fx_same(a, got);
    gck_snapshot_destroy(got);
    /* a directory that does not exist yet is created */
    assert_int_equal(gck_snapshot_save_sharded(a, sub("new"), 2), GCK_OK);
    assert_int_equal(count_files(sub("new"), "model-g1-"), 2);
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
}

/* Every system call of a save failing in turn: until the index is renamed
 * the previous commit loads bit for bit, and the next good save cleans up. */
static void test_failed_save_keeps_previous_commit(void **state)
{
    (void)state;
    gck_snapshot *a = gck_fx_sample(5, 10), *b = gck_fx_sample(6, 11);
    const char *dir = sub("crash");
    assert_int_equal(gck_snapshot_save_sharded(a, dir, 2), GCK_OK);
    for (long k = 0;; k++) {
        gck_io_fail_after(k, EIO);
        const gck_status st = gck_snapshot_save_sharded(b, dir, 3);
        gck_io_fail_after(-1, 0);
        gck_snapshot *got = NULL;
        assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &got), GCK_OK);
        if (st == GCK_OK) {
            gck_fx_same(b, got);
            gck_snapshot_destroy(got);
            assert_true(k > 10);
            break;
        }
        assert_int_equal(st, GCK_ERR_IO);
        if (strstr(gck_last_error(), "saved, but cannot sync") != NULL &&
            strstr(gck_last_error(), GCK_SHARDED_INDEX) != NULL)
            gck_fx_same(b, got); /* only the index's directory fsync failed: committed */
        else
            gck_fx_same(a, got);
        gck_snapshot_destroy(got);
        assert_int_equal(count_files(dir, "."), 0); /* no temporaries left */
    }
    assert_int_equal(count_files(dir, "model-g"), 3);
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
}

/* Out of memory at every allocation of a load: NO_MEMORY, out untouched. */
static void test_load_out_of_memory(void **state)
{
    (void)state;
    gck_snapshot *s = gck_fx_sample(7, 3);
    const char *dir = sub("oom");
    assert_int_equal(gck_snapshot_save_sharded(s, dir, 3), GCK_OK);
    for (long k = 0;; k++) {
        gck_snapshot *out = SENTINEL;
        gck_alloc_fail_after(k);
        const gck_status st = gck_snapshot_load_sharded(dir, NULL, 0, &out);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK) {
            gck_fx_same(s, out);
            gck_snapshot_destroy(out);
            break;
        }
        assert_int_equal(st, GCK_ERR_NO_MEMORY);
        assert_ptr_equal(out, SENTINEL);
        assert_non_null(strstr(gck_last_error(), "out of memory"));
    }
    gck_snapshot_destroy(s);
}

/* Damaged directories and bad requests fail with their own status. */
static void test_damaged_directories(void **state)
{
    (void)state;
    gck_snapshot *s = gck_fx_sample(8, 5);
    const char *dir = sub("bad");
    assert_int_equal(gck_snapshot_save_sharded(s, dir, 3), GCK_OK);
    json_t *good = read_index(dir);
    const char *f_w = json_string_value(json_object_get(json_object_get(good, "weight_map"), "layer0.w"));
    const char *f_other = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(good, "weight_map"), k, v) if (strcmp(json_string_value(v), f_w) != 0)
        f_other = json_string_value(v);
    assert_non_null(f_other);

    /* requests */
    const char *unknown[] = {"layer0.w", "nope"};
    expect_load_fails(dir, unknown, 2, GCK_ERR_NOT_FOUND, "'nope'");
    const char *twice[] = {"layer0.w", "layer0.b", "layer0.w"};
    expect_load_fails(dir, twice, 3, GCK_ERR_INVALID_ARGUMENT, "named twice");
    const char *nul[] = {"layer0.w", NULL};
    expect_load_fails(dir, nul, 2, GCK_ERR_INVALID_ARGUMENT, "NULL");
    expect_load_fails(dir, NULL, 2, GCK_ERR_INVALID_ARGUMENT, "NULL");
    expect_load_fails(NULL, NULL, 0, GCK_ERR_INVALID_ARGUMENT, "NULL");
    assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, NULL), GCK_ERR_INVALID_ARGUMENT);
    expect_load_fails(sub("none"), NULL, 0, GCK_ERR_IO, GCK_SHARDED_INDEX);

    /* the index */
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "not valid JSON");
    uint64_t g;
    assert_int_equal(gck_snapshot_sharded_begin(dir, &g), GCK_ERR_CORRUPT);
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"metadata\": {}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "weight_map");
    write_text(join(dir, GCK_SHARDED_INDEX), "[1, 2]");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "weight_map");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {\"a\": \"../x.safetensors\"}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "plain file name");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {\"a\": 3}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "plain file name");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {}, \"metadata\": 3}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "metadata");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {}, \"metadata\": {\"gradckpt.generation\": \"x\"}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "gradckpt.generation");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {}, \"metadata\": {\"gradckpt.step\": \"-1\"}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "gradckpt.step");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {}, \"metadata\": {\"user\": 5}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "not a string");
    write_text(join(dir, GCK_SHARDED_INDEX), "{\"weight_map\": {}, \"metadata\": {\"gradckpt.format\": \"99\"}}");
    expect_load_fails(dir, NULL, 0, GCK_ERR_UNSUPPORTED, "newer");

    /* a wrong content id in the index */
    json_t *j = json_deep_copy(good);
    json_object_set_new(json_object_get(j, "metadata"), "gradckpt.cid.layer0.w", json_string("xxh3:0123456789abcdef"));
    write_index(dir, j);
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "content id mismatch");
    const char *one[] = {"layer0.w"};
    expect_load_fails(dir, one, 1, GCK_ERR_CORRUPT, "layer0.w");
    json_object_set_new(json_object_get(j, "metadata"), "gradckpt.cid.layer0.w", json_string("nonsense"));
    write_index(dir, j);
    expect_load_fails(dir, one, 1, GCK_ERR_CORRUPT, "not a content id");
    json_decref(j);

    /* the index puts a tensor in a shard that lacks it */
    j = json_deep_copy(good);
    json_object_set_new(json_object_get(j, "weight_map"), "layer0.w", json_string(f_other));
    write_index(dir, j);
    expect_load_fails(dir, one, 1, GCK_ERR_CORRUPT, "lacks it");
    json_decref(j);

    /* a damaged shard: its bytes changed (the index's id catches it), or its header */
    write_index(dir, good);
    gck_snapshot *ok = NULL;
    assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &ok), GCK_OK);
    gck_snapshot_destroy(ok);
    FILE *fp = fopen(join(dir, f_w), "r+b");
    assert_non_null(fp);
    assert_int_equal(fseek(fp, -1, SEEK_END), 0);
    const int c = fgetc(fp);
    assert_int_equal(fseek(fp, -1, SEEK_END), 0);
    fputc(c ^ 0x40, fp);
    fclose(fp);
    expect_load_fails(dir, NULL, 0, GCK_ERR_CORRUPT, "content id mismatch");
    assert_int_equal(truncate(join(dir, f_w), 3), 0);
    expect_load_fails(dir, one, 1, GCK_ERR_CORRUPT, "too short");
    json_decref(good);
    gck_snapshot_destroy(s);
}

/* Another writer's Hugging Face index (weight_map and total_size only) over
 * plain safetensors shards loads, with step 0. */
static void test_foreign_index(void **state)
{
    (void)state;
    const char *dir = sub("hf");
    assert_int_equal(mkdir(dir, 0777), 0);
    gck_snapshot *a = NULL, *b = NULL;
    assert_int_equal(gck_snapshot_create(0, &a), GCK_OK);
    assert_int_equal(gck_snapshot_create(0, &b), GCK_OK);
    const float x[3] = {1, 2, 3}, y[2] = {4, 5};
    const int64_t s3 = 3, s2 = 2;
    assert_int_equal(gck_snapshot_add_tensor(a, "x", GCK_DTYPE_F32, &s3, 1, x), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(b, "y", GCK_DTYPE_F32, &s2, 1, y), GCK_OK);
    assert_int_equal(gck_snapshot_save(a, join(dir, "model-00001-of-00002.safetensors")), GCK_OK);
    assert_int_equal(gck_snapshot_save(b, join(dir, "model-00002-of-00002.safetensors")), GCK_OK);
    write_text(join(dir, GCK_SHARDED_INDEX),
               "{\"metadata\": {\"total_size\": 20}, \"weight_map\": {\"x\": \"model-00001-of-00002.safetensors\", "
               "\"y\": \"model-00002-of-00002.safetensors\"}}");
    gck_snapshot *got = NULL;
    assert_int_equal(gck_snapshot_load_sharded(dir, NULL, 0, &got), GCK_OK);
    assert_int_equal(gck_snapshot_step(got), 0);
    assert_int_equal(gck_snapshot_num_tensors(got), 2);
    gck_tensor_info ti, want;
    assert_int_equal(gck_snapshot_find_tensor(got, "y", &ti), GCK_OK);
    assert_int_equal(gck_snapshot_find_tensor(b, "y", &want), GCK_OK);
    assert_memory_equal(ti.data, y, sizeof y);
    assert_string_equal(ti.content_id, want.content_id);
    gck_snapshot_destroy(got);
    /* a new save there starts at generation 1 and leaves the foreign shards alone */
    assert_int_equal(gck_snapshot_save_sharded(a, dir, 1), GCK_OK);
    assert_int_equal(count_files(dir, "model-0000"), 2);
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
}

/* The writer steps' argument checks. */
static void test_save_arguments(void **state)
{
    (void)state;
    gck_snapshot *s = gck_fx_sample(9, 1);
    uint64_t g;
    assert_int_equal(gck_snapshot_save_sharded(NULL, sub("x"), 1), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_save_sharded(s, NULL, 1), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_save_sharded(s, "", 1), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_save_sharded(s, sub("x"), 0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sharded_begin(NULL, &g), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sharded_begin(sub("x"), NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sharded_begin(sub("no/such/parent"), &g), GCK_ERR_IO);
    assert_int_equal(gck_snapshot_save_shard(s, sub("x"), 1, 2, 2), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "shard 2 of 2"));
    assert_int_equal(gck_snapshot_save_shard(s, sub("x"), 0, 0, 2), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sharded_commit(s, sub("x"), 0, 2), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sharded_commit(s, sub("x"), 1, 0), GCK_ERR_INVALID_ARGUMENT);
    /* a missing directory: the shard's write fails, nothing is made */
    assert_int_equal(gck_snapshot_save_shard(s, sub("missing"), 1, 0, 2), GCK_ERR_IO);
    /* an empty snapshot is a commit without shards */
    gck_snapshot *e = NULL;
    assert_int_equal(gck_snapshot_create(3, &e), GCK_OK);
    assert_int_equal(gck_snapshot_save_sharded(e, sub("empty"), 4), GCK_OK);
    assert_int_equal(count_files(sub("empty"), NULL), 1);
    gck_snapshot *got = NULL;
    assert_int_equal(gck_snapshot_load_sharded(sub("empty"), NULL, 0, &got), GCK_OK);
    assert_int_equal(gck_snapshot_step(got), 3);
    assert_int_equal(gck_snapshot_num_tensors(got), 0);
    gck_snapshot_destroy(got);
    gck_snapshot_destroy(e);
    gck_snapshot_destroy(s);
}

/* The digests: equal snapshots agree; a value changes only content, a shape
 * the layout; the timestamp changes neither. */
static void test_digest(void **state)
{
    (void)state;
    gck_snapshot *a = gck_fx_sample(10, 4), *b = gck_fx_sample(10, 4), *c = gck_fx_sample(11, 4);
    uint64_t la, ca, lb, cb, lc, cc;
    assert_int_equal(gck_snapshot_digest(a, &la, &ca), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(b, 5), GCK_OK);
    assert_int_equal(gck_snapshot_digest(b, &lb, &cb), GCK_OK);
    assert_int_equal(gck_snapshot_digest(c, &lc, &cc), GCK_OK);
    assert_true(la == lb && ca == cb);
    assert_true(la == lc && ca != cc);
    const int64_t sh = 1;
    const float one = 1;
    assert_int_equal(gck_snapshot_add_tensor(b, "extra", GCK_DTYPE_F32, &sh, 1, &one), GCK_OK);
    assert_int_equal(gck_snapshot_digest(b, &lb, &cb), GCK_OK);
    assert_true(la != lb);
    assert_int_equal(gck_snapshot_set_metadata(c, "run", "other"), GCK_OK);
    assert_int_equal(gck_snapshot_digest(c, &lc, &cb), GCK_OK);
    assert_true(cb != cc);
    assert_int_equal(gck_snapshot_digest(NULL, &la, &ca), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_digest(a, NULL, &ca), GCK_ERR_INVALID_ARGUMENT);
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
    gck_snapshot_destroy(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_every_writer_count, setup, teardown),
        cmocka_unit_test_setup_teardown(test_assignment_balanced_and_deterministic, setup, teardown),
        cmocka_unit_test_setup_teardown(test_partial_load_reads_only_named_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_generations_and_leftovers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failed_save_keeps_previous_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_load_out_of_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_directories, setup, teardown),
        cmocka_unit_test_setup_teardown(test_foreign_index, setup, teardown),
        cmocka_unit_test_setup_teardown(test_save_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_digest, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
