/* tests/test_snapshot.c - the snapshot object and its safetensors files: round trips, layout, validation. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "support/gck_test.h"

#include "io_internal.h"

static char g_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/gck_snapshot_test_XXXXXX");
    return mkdtemp(g_dir) == NULL;
}

static int teardown(void **state)
{
    (void)state;
    DIR *d = opendir(g_dir);
    struct dirent *ent;
    while (d && (ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.' && (ent->d_name[1] == '\0' || (ent->d_name[1] == '.' && ent->d_name[2] == '\0')))
            continue;
        char p[512];
        snprintf(p, sizeof p, "%s/%s", g_dir, ent->d_name);
        unlink(p);
    }
    if (d)
        closedir(d);
    rmdir(g_dir);
    return 0;
}

static const char *path_of(const char *name)
{
    static char p[512];
    snprintf(p, sizeof p, "%s/%s", g_dir, name);
    return p;
}

/* Files in the test directory whose name contains ".tmp.". */
static int temp_files_left(void)
{
    DIR *d = opendir(g_dir);
    struct dirent *ent;
    int n = 0;
    while (d && (ent = readdir(d)) != NULL)
        n += strstr(ent->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

static unsigned char *read_file(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*len + 1);
    assert_int_equal(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void write_file(const char *p, const void *b, size_t len)
{
    FILE *f = fopen(p, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, len, f), len);
    fclose(f);
}

static gck_snapshot *sample(void)
{
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(42, &s), GCK_OK);
    gck_snapshot_set_timestamp(s, 1700000000);
    const float w[6] = {1, 2, 3, 4, 5, -0.0f};
    const int64_t sh23[2] = {2, 3};
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, sh23, 2, w), GCK_OK);
    const double b[2] = {0.5, -1e300};
    const int64_t sh2[1] = {2};
    assert_int_equal(gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, sh2, 1, b), GCK_OK);
    const int64_t steps = 7;
    assert_int_equal(gck_snapshot_add_tensor(s, "count", GCK_DTYPE_I64, NULL, 0, &steps), GCK_OK); /* scalar */
    const uint16_t h[3] = {0x3c00, 0xc000, 0x7e00};
    const int64_t sh3[1] = {3};
    assert_int_equal(gck_snapshot_add_tensor(s, "half", GCK_DTYPE_F16, sh3, 1, h), GCK_OK);
    const int64_t sh0[2] = {0, 4};
    assert_int_equal(gck_snapshot_add_tensor(s, "empty", GCK_DTYPE_BF16, sh0, 2, NULL), GCK_OK);
    const unsigned char flags[2] = {1, 0};
    assert_int_equal(gck_snapshot_add_tensor(s, "mask", GCK_DTYPE_BOOL, sh2, 1, flags), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", "adam-m-and-v", 12), GCK_OK);
    assert_int_equal(gck_snapshot_set_loss_cid(s, "xxh3:00000000deadbeef"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "run", "demo"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "lr", "0.001"), GCK_OK);
    return s;
}

/* Every tensor of a and b is the same: names, dtypes, shapes, bytes, ids. */
static void assert_same_tensors(const gck_snapshot *a, const gck_snapshot *b)
{
    assert_int_equal(gck_snapshot_num_tensors(a), gck_snapshot_num_tensors(b));
    for (size_t i = 0; i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info x, y;
        gck_snapshot_tensor(a, i, &x);
        gck_snapshot_tensor(b, i, &y);
        assert_string_equal(x.name, y.name);
        assert_int_equal(x.dtype, y.dtype);
        assert_int_equal(x.ndim, y.ndim);
        if (x.ndim)
            assert_memory_equal(x.shape, y.shape, x.ndim * sizeof(int64_t));
        assert_int_equal(x.nbytes, y.nbytes);
        if (x.nbytes)
            assert_memory_equal(x.data, y.data, x.nbytes);
        assert_string_equal(x.content_id, y.content_id);
    }
}

static void test_object(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    assert_int_equal(gck_snapshot_step(s), 42);
    assert_int_equal(gck_snapshot_timestamp(s), 1700000000);
    assert_int_equal(gck_snapshot_num_tensors(s), 6);
    gck_tensor_info ti;
    static const char *const order[] = {"b", "count", "empty", "half", "mask", "w"};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(gck_snapshot_tensor(s, i, &ti), GCK_OK);
        assert_string_equal(ti.name, order[i]);
    }
    assert_int_equal(gck_snapshot_tensor(s, 6, &ti), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_find_tensor(s, "w", &ti), GCK_OK);
    assert_int_equal(ti.nbytes, 24);
    /* content id: XXH3-64 (seed 0) of the little-endian bytes */
    unsigned char le[24];
    for (int i = 0; i < 6; i++) {
        uint32_t u;
        memcpy(&u, (const float *)ti.data + i, 4);
        for (int j = 0; j < 4; j++)
            le[4 * i + j] = (unsigned char)(u >> (8 * j));
    }
    char want[32];
    snprintf(want, sizeof want, "xxh3:%016llx", (unsigned long long)XXH3_64bits(le, 24));
    assert_string_equal(ti.content_id, want);
    assert_int_equal(gck_snapshot_find_tensor(s, "nope", &ti), GCK_ERR_NOT_FOUND);
    /* rules */
    const float x = 1;
    const int64_t one[1] = {1}, neg[1] = {-1};
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, one, 1, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "already"));
    assert_int_equal(gck_snapshot_add_tensor(s, "__metadata__", GCK_DTYPE_F32, one, 1, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "__optimizer__/w", GCK_DTYPE_F32, one, 1, &x),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "", GCK_DTYPE_F32, one, 1, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "neg", GCK_DTYPE_F32, neg, 1, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "bad", (gck_dtype)77, one, 1, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "nodata", GCK_DTYPE_F32, one, 1, NULL), GCK_ERR_INVALID_ARGUMENT);
    const int64_t huge[2] = {INT64_MAX, 4};
    assert_int_equal(gck_snapshot_add_tensor(s, "huge", GCK_DTYPE_F64, huge, 2, &x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_num_tensors(s), 6); /* unchanged */
    assert_int_equal(gck_snapshot_set_metadata(s, "gradckpt.step", "1"), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_set_metadata(s, "run", "again"), GCK_OK); /* replaces */
    assert_string_equal(gck_snapshot_metadata(s, "run"), "again");
    assert_null(gck_snapshot_metadata(s, "absent"));
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", "x", 1), GCK_OK); /* replaces */
    const void *blob;
    size_t len;
    assert_int_equal(gck_snapshot_find_optimizer_state(s, "w", &blob, &len), GCK_OK);
    assert_int_equal(len, 1);
    assert_int_equal(gck_snapshot_num_optimizer_states(s), 1);
    assert_int_equal(gck_snapshot_find_optimizer_state(s, "v", &blob, &len), GCK_ERR_NOT_FOUND);
    gck_snapshot_destroy(s);
    gck_snapshot_destroy(NULL);
}

/* The file is laid out as the reference writer lays it out. */
static void test_file_layout(void **state)
{
    (void)state;
    gck_snapshot *s = NULL;
    gck_snapshot_create(3, &s);
    gck_snapshot_set_timestamp(s, 99);
    const float a[2] = {1, 2};
    const double z[1] = {4};
    const int64_t sh2[1] = {2}, sh1[1] = {1};
    gck_snapshot_add_tensor(s, "a", GCK_DTYPE_F32, sh2, 1, a);
    gck_snapshot_add_tensor(s, "z", GCK_DTYPE_F64, sh1, 1, z);
    assert_int_equal(gck_snapshot_save(s, path_of("layout.safetensors")), GCK_OK);
    size_t len;
    unsigned char *b = read_file(path_of("layout.safetensors"), &len);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | b[i];
    assert_int_equal(hlen % 8, 0);
    assert_int_equal(len, 8 + hlen + 16);
    char *hdr = strndup((const char *)b + 8, (size_t)hlen);
    /* F64 sorts before F32 (the reference's dtype order, widest first) */
    char want[1024];
    gck_tensor_info ta, tz;
    gck_snapshot_find_tensor(s, "a", &ta);
    gck_snapshot_find_tensor(s, "z", &tz);
    snprintf(want, sizeof want,
             "{\"__metadata__\":{\"gradckpt.cid.a\":\"%s\",\"gradckpt.cid.z\":\"%s\",\"gradckpt.format\":\"1\","
             "\"gradckpt.step\":\"3\",\"gradckpt.timestamp\":\"99\"},"
             "\"z\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
             ta.content_id, tz.content_id);
    assert_int_equal(strncmp(hdr, want, strlen(want)), 0);
    for (size_t i = strlen(want); i < hlen; i++)
        assert_int_equal(hdr[i], ' ');
    /* the data: 4.0 as little-endian f64, then 1.0f, 2.0f */
    const unsigned char d4[8] = {0, 0, 0, 0, 0, 0, 0x10, 0x40}, f1[4] = {0, 0, 0x80, 0x3f};
    assert_memory_equal(b + 8 + hlen, d4, 8);
    assert_memory_equal(b + 8 + hlen + 8, f1, 4);
    free(hdr);
    free(b);
    gck_snapshot_destroy(s);
}

/* The dtypes added after the first ten (U16, U32, U64, F8_E5M2, F8_E4M3):
 * sizes, names, sorting in the reference's dtype order, and a round trip. */
static void test_later_dtypes(void **state)
{
    (void)state;
    static const struct { gck_dtype dt; const char *name; size_t size; } want[] = {
        {GCK_DTYPE_U16, "U16", 2}, {GCK_DTYPE_U32, "U32", 4}, {GCK_DTYPE_U64, "U64", 8},
        {GCK_DTYPE_F8_E5M2, "F8_E5M2", 1}, {GCK_DTYPE_F8_E4M3, "F8_E4M3", 1}};
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(5, &s), GCK_OK);
    const unsigned char bytes[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 0xff, 0xfe, 0x80, 0x7f, 0, 1, 2, 3};
    const int64_t three[1] = {3};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(gck_dtype_name(want[i].dt), want[i].name);
        assert_int_equal(gck_dtype_size(want[i].dt), want[i].size);
        assert_int_equal(gck_snapshot_add_tensor(s, want[i].name, want[i].dt, three, 1, bytes), GCK_OK);
    }
    const int64_t one[1] = {1};
    const int64_t i64 = -2;
    assert_int_equal(gck_snapshot_add_tensor(s, "I64", GCK_DTYPE_I64, one, 1, &i64), GCK_OK);
    assert_int_equal(gck_snapshot_save(s, path_of("later.safetensors")), GCK_OK);
    size_t len;
    unsigned char *b = read_file(path_of("later.safetensors"), &len);
    /* the reference's dtype order, last declared first: U64, I64, U32, U16,
     * F8_E4M3, F8_E5M2 */
    const char *h = (const char *)b + 8;
    const char *pos[6] = {strstr(h, "\"U64\":{"), strstr(h, "\"I64\":{"), strstr(h, "\"U32\":{"),
                          strstr(h, "\"U16\":{"), strstr(h, "\"F8_E4M3\":{"), strstr(h, "\"F8_E5M2\":{")};
    for (int i = 0; i < 6; i++)
        assert_non_null(pos[i]);
    for (int i = 0; i + 1 < 6; i++)
        assert_true(pos[i] < pos[i + 1]);
    free(b);
    gck_snapshot *l = NULL, *m = NULL;
    assert_int_equal(gck_snapshot_load(path_of("later.safetensors"), &l), GCK_OK);
    assert_same_tensors(s, l);
    assert_int_equal(gck_snapshot_load_mmap(path_of("later.safetensors"), 1, &m), GCK_OK);
    assert_same_tensors(s, m);
    gck_snapshot_destroy(m);
    gck_snapshot_destroy(l);
    gck_snapshot_destroy(s);
}

static void test_round_trip(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    assert_int_equal(gck_snapshot_save(s, path_of("rt.safetensors")), GCK_OK);
    assert_int_equal(temp_files_left(), 0);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("rt.safetensors"), &l), GCK_OK);
    assert_int_equal(gck_snapshot_step(l), 42);
    assert_int_equal(gck_snapshot_timestamp(l), 1700000000);
    assert_string_equal(gck_snapshot_loss_cid(l), "xxh3:00000000deadbeef");
    assert_string_equal(gck_snapshot_metadata(l, "run"), "demo");
    assert_string_equal(gck_snapshot_metadata(l, "lr"), "0.001");
    assert_int_equal(gck_snapshot_num_metadata(l), 2);
    assert_same_tensors(s, l);
    const char *param;
    const void *blob;
    size_t len;
    assert_int_equal(gck_snapshot_optimizer_state(l, 0, &param, &blob, &len), GCK_OK);
    assert_string_equal(param, "w");
    assert_int_equal(len, 12);
    assert_memory_equal(blob, "adam-m-and-v", 12);
    /* load -> save reproduces the same file */
    assert_int_equal(gck_snapshot_save(l, path_of("rt2.safetensors")), GCK_OK);
    size_t l1, l2;
    unsigned char *b1 = read_file(path_of("rt.safetensors"), &l1), *b2 = read_file(path_of("rt2.safetensors"), &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1), free(b2);
    /* saving over an existing file replaces it */
    assert_int_equal(gck_snapshot_save(s, path_of("rt2.safetensors")), GCK_OK);
    gck_snapshot_destroy(l);
    gck_snapshot_destroy(s);
}

static void test_save_failures(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    assert_int_equal(gck_snapshot_save(s, "/nonexistent-dir-gck/x.safetensors"), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "/nonexistent-dir-gck/x.safetensors"));
    /* renaming onto a directory fails: the directory stays, no temporary is left */
    mkdir(path_of("adir"), 0755);
    assert_int_equal(gck_snapshot_save(s, path_of("adir")), GCK_ERR_IO);
    struct stat st;
    assert_int_equal(stat(path_of("adir"), &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    rmdir(path_of("adir"));
    assert_int_equal(temp_files_left(), 0);
    assert_int_equal(gck_snapshot_save(NULL, path_of("x")), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_save(s, ""), GCK_ERR_INVALID_ARGUMENT);
    gck_snapshot_destroy(s);
}

/* Every I/O step of a save fails in turn: the target keeps its old content
 * (or stays absent) and no temporary file is left, until the save succeeds. */
static void test_save_fault_injection(void **state)
{
    (void)state;
    static const int errs[] = {EIO, ENOSPC, EACCES};
    gck_snapshot *old = NULL, *s = sample();
    gck_snapshot_create(1, &old);
    const int64_t one[1] = {1};
    const float x = 9;
    gck_snapshot_add_tensor(old, "old", GCK_DTYPE_F32, one, 1, &x);
    for (int existed = 0; existed <= 1; existed++) {
        const char *p = path_of(existed ? "fi_old.safetensors" : "fi_new.safetensors");
        unlink(p);
        unsigned char *before = NULL;
        size_t before_len = 0;
        if (existed) {
            assert_int_equal(gck_snapshot_save(old, p), GCK_OK);
            before = read_file(p, &before_len);
        }
        for (long k = 0;; k++) {
            gck_io_fail_after(k, errs[k % 3]);
            const gck_status st = gck_snapshot_save(s, p);
            gck_io_fail_after(-1, 0);
            assert_int_equal(temp_files_left(), 0);
            if (st == GCK_OK)
                break;
            assert_int_equal(st, GCK_ERR_IO);
            assert_non_null(strstr(gck_last_error(), p));
            if (strstr(gck_last_error(), "saved, but") != NULL)
                continue; /* only the directory fsync failed: the new file is in place */
            struct stat stt;
            if (!existed) {
                if (stat(p, &stt) == 0)
                    fail_msg("step %ld: failed save created the target", k);
            } else {
                size_t len;
                unsigned char *now = read_file(p, &len);
                if (len != before_len || memcmp(now, before, len) != 0)
                    fail_msg("step %ld: failed save changed the target", k);
                free(now);
            }
            assert_true(k < 100);
        }
        gck_snapshot *l = NULL;
        assert_int_equal(gck_snapshot_load(p, &l), GCK_OK);
        assert_int_equal(gck_snapshot_step(l), 42);
        gck_snapshot_destroy(l);
        free(before);
    }
    gck_snapshot_destroy(old);
    gck_snapshot_destroy(s);
}

/* A writer killed with SIGKILL at random moments: the target always loads
 * and is one of the two snapshots being written, never a mix. */
static void test_crash_during_save(void **state)
{
    /* (stale temporary files of killed writers stay behind; teardown removes them) */
    (void)state;
    const size_t n = 1 << 19; /* 2 MiB of f32: a save takes long enough to be hit */
    float *va = malloc(n * 4), *vb = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        va[i] = (float)i, vb[i] = -(float)i;
    gck_snapshot *a = NULL, *b = NULL;
    const int64_t sh[1] = {(int64_t)n};
    gck_snapshot_create(1, &a);
    gck_snapshot_create(2, &b);
    gck_snapshot_add_tensor(a, "v", GCK_DTYPE_F32, sh, 1, va);
    gck_snapshot_add_tensor(b, "v", GCK_DTYPE_F32, sh, 1, vb);
    const char *p = path_of("crash.safetensors");
    assert_int_equal(gck_snapshot_save(a, p), GCK_OK);
    uint64_t seed = 7;
    for (int round = 0; round < 25; round++) {
        const pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            for (int i = 0;; i++)
                gck_snapshot_save(i % 2 ? a : b, p);
        }
        const struct timespec pause = {0, (long)(gck_test_rand(&seed) % 20000) * 1000};
        nanosleep(&pause, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        gck_snapshot *l = NULL;
        if (gck_snapshot_load(p, &l) != GCK_OK)
            fail_msg("round %d: the target does not load after a crash: %s", round, gck_last_error());
        gck_tensor_info t;
        assert_int_equal(gck_snapshot_find_tensor(l, "v", &t), GCK_OK);
        const float *want = gck_snapshot_step(l) == 1 ? va : vb;
        assert_memory_equal(t.data, want, n * 4);
        gck_snapshot_destroy(l);
    }
    gck_snapshot_destroy(a);
    gck_snapshot_destroy(b);
    free(va), free(vb);
}

/* gck_checkpoint_save / gck_checkpoint_load round trip every field, bit for bit. */
static void test_checkpoint_files(void **state)
{
    (void)state;
    for (int dt = 0; dt <= 1; dt++) {
        gck_config cfg;
        gck_config_init(&cfg);
        cfg.dtype = dt ? GCK_DTYPE_F32 : GCK_DTYPE_F64;
        cfg.checksum = dt ? GCK_CHECKSUM_XXH3_64 : GCK_CHECKSUM_FNV1A64;
        cfg.clip_enabled = 1, cfg.clip_norm = 0.5;
        gck_checkpointer *cp = NULL;
        assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
        double v[300];
        for (int i = 0; i < 300; i++)
            v[i] = (i % 17) * 0.125 - 1.0;
        gck_accumulate_f64(cp, "fc2.weight", v, 300, 11);
        gck_accumulate_f64(cp, "fc1.bias", v, 7, 12);
        gck_accumulate_f64(cp, "fc1.bias", v + 7, 7, 13);
        gck_checkpoint *c = NULL;
        assert_int_equal(gck_flush(cp, 1234567, &c), GCK_OK);
        assert_int_equal(gck_checkpoint_save(c, path_of("ckpt.safetensors")), GCK_OK);
        gck_checkpoint *l = NULL;
        assert_int_equal(gck_checkpoint_load(path_of("ckpt.safetensors"), &l), GCK_OK);
        assert_int_equal(gck_checkpoint_id(l), gck_checkpoint_id(c));
        assert_int_equal(gck_checkpoint_step(l), gck_checkpoint_step(c));
        assert_int_equal(gck_checkpoint_created_at(l), 1234567);
        assert_int_equal(gck_checkpoint_dtype(l), gck_checkpoint_dtype(c));
        assert_int_equal(gck_checkpoint_checksum_algo(l), gck_checkpoint_checksum_algo(c));
        assert_true(gck_checkpoint_checksum(l) == gck_checkpoint_checksum(c));
        assert_int_equal(gck_checkpoint_compressed_size(l), gck_checkpoint_compressed_size(c));
        gck_assert_same_f64(gck_checkpoint_global_norm(c), gck_checkpoint_global_norm(l), "global norm");
        assert_int_equal(gck_checkpoint_num_layers(l), 2);
        for (size_t i = 0; i < 2; i++) {
            gck_tensor_view a, b;
            gck_checkpoint_layer(c, i, &a);
            gck_checkpoint_layer(l, i, &b);
            assert_string_equal(a.layer_id, b.layer_id);
            assert_int_equal(a.n, b.n);
            assert_int_equal(a.step, b.step);
            assert_memory_equal(a.values, b.values, a.n * gck_dtype_size(a.dtype));
            gck_assert_same_f64(a.norm, b.norm, "layer norm");
        }
        gck_checkpoint_release(l);
        gck_checkpoint_release(c);
        gck_checkpointer_destroy(cp);
    }
    /* a plain snapshot is not a checkpoint */
    gck_snapshot *s = sample();
    gck_snapshot_save(s, path_of("plain.safetensors"));
    gck_snapshot_destroy(s);
    gck_checkpoint *l = NULL;
    assert_int_equal(gck_checkpoint_load(path_of("plain.safetensors"), &l), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "not a gradckpt checkpoint"));
    /* a reserved layer id cannot be saved */
    gck_checkpointer *cp = NULL;
    gck_checkpointer_create(NULL, &cp);
    const double one = 1;
    gck_accumulate_f64(cp, "__metadata__", &one, 1, 0);
    gck_flush(cp, 0, NULL);
    assert_int_equal(gck_checkpoint_save(gck_latest_checkpoint(cp), path_of("r.safetensors")),
                     GCK_ERR_INVALID_ARGUMENT);
    gck_checkpointer_destroy(cp);
}

/* Builds a file from a header string and n data bytes. */
static void craft(const char *name, const char *hdr, uint64_t claimed_len, size_t ndata)
{
    const size_t hl = strlen(hdr);
    unsigned char *f = calloc(1, 8 + hl + ndata + 1);
    for (int i = 0; i < 8; i++)
        f[i] = (unsigned char)(claimed_len >> (8 * i));
    memcpy(f + 8, hdr, hl);
    write_file(path_of(name), f, 8 + hl + ndata);
    free(f);
}

/* The mapped load sees the same snapshot; verify catches a flipped byte. */
static void test_mmap_load(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    assert_int_equal(gck_snapshot_save(s, path_of("m.safetensors")), GCK_OK);
    for (int verify = 0; verify <= 1; verify++) {
        gck_snapshot *l = NULL;
        assert_int_equal(gck_snapshot_load_mmap(path_of("m.safetensors"), verify, &l), GCK_OK);
        assert_same_tensors(s, l);
        const void *blob;
        size_t len;
        assert_int_equal(gck_snapshot_find_optimizer_state(l, "w", &blob, &len), GCK_OK);
        assert_memory_equal(blob, "adam-m-and-v", 12);
        assert_string_equal(gck_snapshot_metadata(l, "run"), "demo");
        gck_snapshot_destroy(l);
    }
    gck_snapshot_destroy(s);
    size_t len;
    unsigned char *b = read_file(path_of("m.safetensors"), &len);
    b[len - 5] ^= 0x01;
    write_file(path_of("m.safetensors"), b, len);
    free(b);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load_mmap(path_of("m.safetensors"), 1, &l), GCK_ERR_CORRUPT);
    assert_int_equal(gck_snapshot_load_mmap(path_of("m.safetensors"), 0, &l), GCK_OK); /* not read: not checked */
    gck_snapshot_destroy(l);
    craft("bad.safetensors", "{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 57, 8);
    assert_int_equal(gck_snapshot_load_mmap(path_of("bad.safetensors"), 0, &l), GCK_ERR_CORRUPT);
}

/* A file from another writer: no __metadata__ at all, or one without our keys. */
static void test_foreign_files(void **state)
{
    (void)state;
    const char hdr[] = "{\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char file[8 + sizeof hdr - 1 + 8];
    const uint64_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)(hl >> (8 * i));
    memcpy(file + 8, hdr, hl);
    const unsigned char data[8] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    memcpy(file + 8 + hl, data, 8);
    write_file(path_of("foreign.safetensors"), file, sizeof file);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("foreign.safetensors"), &l), GCK_OK);
    assert_int_equal(gck_snapshot_step(l), 0);
    assert_int_equal(gck_snapshot_timestamp(l), 0);
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(l, "x", &t), GCK_OK);
    assert_int_equal(((const int32_t *)t.data)[0], 1);
    assert_int_equal(((const int32_t *)t.data)[1], -1);
    gck_snapshot_destroy(l);

    const char hdr2[] = "{\"__metadata__\":{\"format\":\"pt\"},\"x\":{\"dtype\":\"U8\",\"shape\":[],\"data_offsets\":[0,1]}}";
    unsigned char f2[8 + sizeof hdr2 - 1 + 1];
    const uint64_t hl2 = sizeof hdr2 - 1;
    for (int i = 0; i < 8; i++)
        f2[i] = (unsigned char)(hl2 >> (8 * i));
    memcpy(f2 + 8, hdr2, hl2);
    f2[8 + hl2] = 200;
    write_file(path_of("foreign2.safetensors"), f2, sizeof f2);
    assert_int_equal(gck_snapshot_load(path_of("foreign2.safetensors"), &l), GCK_OK);
    assert_string_equal(gck_snapshot_metadata(l, "format"), "pt");
    assert_int_equal(gck_snapshot_find_tensor(l, "x", &t), GCK_OK);
    assert_int_equal(t.ndim, 0);
    gck_snapshot_destroy(l);
}

static void test_corrupt_files(void **state)
{
    (void)state;
    static const struct { const char *hdr; size_t ndata; gck_status want; const char *part; } cases[] = {
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, GCK_ERR_CORRUPT, "cover"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, GCK_ERR_CORRUPT, "does not match"},
        {"{\"x\":{\"dtype\":\"F99\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, GCK_ERR_CORRUPT, "unknown dtype"},
        {"{\"x\":{\"dtype\":\"F8_E8M0\",\"shape\":[8],\"data_offsets\":[0,8]}}", 8, GCK_ERR_UNSUPPORTED, "F8_E8M0"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, GCK_ERR_CORRUPT, "shape[0]"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, GCK_ERR_CORRUPT, "starts at byte 4"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"y\":{\"dtype\":\"F32\",\"shape\":[1],"
         "\"data_offsets\":[4,8]}}", 8, GCK_ERR_CORRUPT, "contiguous"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"x\":{\"dtype\":\"F32\",\"shape\":[2],"
         "\"data_offsets\":[8,16]}}", 16, GCK_ERR_CORRUPT, "duplicate"},
        {"[1,2,3]", 0, GCK_ERR_CORRUPT, "start with"},
        {"{\"x\":", 0, GCK_ERR_CORRUPT, "not valid JSON"},
        {"{\"__metadata__\":{\"a\":1}}", 0, GCK_ERR_CORRUPT, "not a string"},
        {"{\"__metadata__\":{\"gradckpt.format\":\"9\"}}", 0, GCK_ERR_UNSUPPORTED, "newer"},
        {"{\"__metadata__\":{\"gradckpt.step\":\"12a\"}}", 0, GCK_ERR_CORRUPT, "decimal"},
        {"{\"__metadata__\":{\"gradckpt.cid.x\":\"xxh3:0000000000000000\"},\"x\":{\"dtype\":\"U8\",\"shape\":[1],"
         "\"data_offsets\":[0,1]}}", 1, GCK_ERR_CORRUPT, "content id mismatch"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,8]}}", 8, GCK_ERR_CORRUPT,
         "overflows"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, GCK_ERR_CORRUPT, "before begin"},
        {"{\"__optimizer__/p\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, GCK_ERR_CORRUPT,
         "1-D U8"},
        {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2]}}", 0, GCK_ERR_CORRUPT, "data_offsets"},
        {"{\"x\":\"\xff\xfe\"}", 0, GCK_ERR_CORRUPT, "JSON"},
        {"{\"__metadata__\":{\"\":\"empty key\"}}", 0, GCK_ERR_CORRUPT, "metadata key is empty"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        craft("bad.safetensors", cases[i].hdr, strlen(cases[i].hdr), cases[i].ndata);
        gck_snapshot *l = (gck_snapshot *)0x1;
        const gck_status got = gck_snapshot_load(path_of("bad.safetensors"), &l);
        if (got != cases[i].want || strstr(gck_last_error(), cases[i].part) == NULL)
            fail_msg("case %zu: got %s '%s', want %s containing '%s'", i, gck_status_name(got), gck_last_error(),
                     gck_status_name(cases[i].want), cases[i].part);
        assert_ptr_equal(l, (gck_snapshot *)0x1);
    }
    /* header length past the end, over the 100 MB limit, a too-short file, a missing file */
    craft("bad.safetensors", "{}", 64, 0);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("bad.safetensors"), &l), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "past the end"));
    craft("bad.safetensors", "{}", (uint64_t)1 << 40, 0);
    assert_int_equal(gck_snapshot_load(path_of("bad.safetensors"), &l), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "limit"));
    write_file(path_of("bad.safetensors"), "abc", 3);
    assert_int_equal(gck_snapshot_load(path_of("bad.safetensors"), &l), GCK_ERR_CORRUPT);
    assert_int_equal(gck_snapshot_load(path_of("missing.safetensors"), &l), GCK_ERR_IO);
    assert_int_equal(gck_snapshot_load(NULL, &l), GCK_ERR_INVALID_ARGUMENT);
    /* one flipped data byte in a gradckpt file: the content id catches it */
    gck_snapshot *s = sample();
    gck_snapshot_save(s, path_of("flip.safetensors"));
    gck_snapshot_destroy(s);
    size_t len;
    unsigned char *b = read_file(path_of("flip.safetensors"), &len);
    b[len - 3] ^= 0x10;
    write_file(path_of("flip.safetensors"), b, len);
    free(b);
    assert_int_equal(gck_snapshot_load(path_of("flip.safetensors"), &l), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "content id mismatch"));
}

/* ---- sweeping what interrupted saves left ------------------------------------------ */

static char g_sweep_dir[300];

static int count_tmp_in(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *ent;
    while ((ent = readdir(d)) != NULL)
        n += strstr(ent->d_name, ".tmp.") != NULL && ent->d_name[0] == '.' && strcmp(ent->d_name, ".dir.tmp.1.2") &&
             strcmp(ent->d_name, ".link.tmp.1.2");
    closedir(d);
    return n;
}

/* A fill that writes 100 bytes and dies: what SIGKILL mid-save leaves. */
static int fill_and_die(int fd, void *ctx)
{
    (void)ctx;
    char b[100] = {0};
    if (write(fd, b, sizeof b) != (ssize_t)sizeof b)
        _exit(3);
    _exit(0);
}

/* A fill that sweeps the directory while its own temporary file is open. */
static gck_sweep_stats g_during;
static int fill_and_sweep(int fd, void *ctx)
{
    (void)ctx;
    if (write(fd, "x", 1) != 1)
        return EIO;
    return gck_snapshot_sweep_temporaries(g_sweep_dir, NULL, 0, &g_during) == GCK_OK ? 0 : EIO;
}

static void test_sweep_temporaries(void **state)
{
    (void)state;
    char target[400], p[600];
    snprintf(g_sweep_dir, sizeof g_sweep_dir, "%s/sweep", g_dir);
    assert_int_equal(mkdir(g_sweep_dir, 0777), 0);
    snprintf(target, sizeof target, "%s/t.safetensors", g_sweep_dir);
    /* a writer that dies mid-save leaves ".t.safetensors.tmp.<pid>.<n>" */
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        gck_write_atomic(target, fill_and_die, NULL, NULL);
        _exit(4);
    }
    int ws = 0;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    assert_int_equal(count_tmp_in(g_sweep_dir), 1);
    gck_sweep_stats r;
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, NULL, 3600, &r), GCK_OK);
    assert_int_equal(r.removed, 0); /* too young for an hour's rule */
    assert_int_equal(r.young, 1);
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, "other.safetensors", 0, &r), GCK_OK);
    assert_int_equal(r.removed, 0); /* another target's */
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, "t.safetensors", 0, &r), GCK_OK);
    assert_int_equal(r.removed, 1);
    assert_int_equal(r.bytes_freed, 100);
    assert_int_equal(count_tmp_in(g_sweep_dir), 0);
    struct stat sb;
    assert_int_equal(stat(target, &sb), -1); /* the target was never there */

    /* a live writer's temporary file is kept: it holds the lock while it writes */
    memset(&g_during, 0xff, sizeof g_during);
    assert_int_equal(gck_write_atomic(target, fill_and_sweep, NULL, NULL), GCK_OK);
    assert_int_equal(g_during.removed, 0);
    assert_int_equal(g_during.live, 1);
    assert_int_equal(stat(target, &sb), 0);
    assert_int_equal(sb.st_size, 1);

    /* only the exact pattern, only regular files */
    const char *theirs[] = {".a.tmp.1.2x", ".a.tmp..2", ".a.tmp.1.", "a.tmp.1.2", ".tmp.1.2", ".a.tmp.1.2.bak",
                            ".a.tmp.x.2", "keep.safetensors", ".a.tmpx1.2"};
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", g_sweep_dir, theirs[i]);
        FILE *f = fopen(p, "wb");
        fputs("theirs", f);
        fclose(f);
    }
    snprintf(p, sizeof p, "%s/.dir.tmp.1.2", g_sweep_dir);
    assert_int_equal(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/.link.tmp.1.2", g_sweep_dir);
    assert_int_equal(symlink("keep.safetensors", p), 0);
    snprintf(p, sizeof p, "%s/.our.x.tmp.tmp.12.345", g_sweep_dir); /* target "our.x.tmp" */
    FILE *f = fopen(p, "wb");
    fclose(f);
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, "our.x.tmp", 0, &r), GCK_OK);
    assert_int_equal(r.removed, 1);
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, NULL, 0, NULL), GCK_OK);
    for (size_t i = 0; i < sizeof theirs / sizeof theirs[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", g_sweep_dir, theirs[i]);
        assert_int_equal(stat(p, &sb), 0);
    }
    snprintf(p, sizeof p, "%s/.dir.tmp.1.2", g_sweep_dir);
    assert_int_equal(stat(p, &sb), 0);
    snprintf(p, sizeof p, "%s/.link.tmp.1.2", g_sweep_dir);
    assert_int_equal(lstat(p, &sb), 0);

    /* arguments, a missing directory, a file that cannot be removed */
    assert_int_equal(gck_snapshot_sweep_temporaries(NULL, NULL, 0, &r), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sweep_temporaries("", NULL, 0, &r), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, "a/b", 0, &r), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_sweep_temporaries(g_sweep_dir, "", 0, &r), GCK_ERR_INVALID_ARGUMENT);
    snprintf(p, sizeof p, "%s/nodir", g_sweep_dir);
    assert_int_equal(gck_snapshot_sweep_temporaries(p, NULL, 0, &r), GCK_ERR_IO);
    assert_non_null(strstr(gck_last_error(), "nodir"));
    snprintf(p, sizeof p, "%s/.stuck.tmp.1.2", g_sweep_dir);
    f = fopen(p, "wb");
    fclose(f);
    assert_int_equal(chmod(p, 0644), 0);
    assert_int_equal(chmod(g_dir, 0755), 0);
    assert_int_equal(chmod(g_sweep_dir, 0555), 0);
    const pid_t q = fork(); /* as nobody when root: the directory is then read-only to it */
    assert_true(q >= 0);
    if (q == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(10);
        const gck_status st = gck_snapshot_sweep_temporaries(g_sweep_dir, "stuck", 0, &r);
        _exit(st == GCK_ERR_IO && strstr(gck_last_error(), "cannot remove") != NULL ? 0 : 11);
    }
    assert_int_equal(waitpid(q, &ws, 0), q);
    assert_int_equal(chmod(g_sweep_dir, 0755), 0);
    assert_true(WIFEXITED(ws));
    assert_int_equal(WEXITSTATUS(ws), 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_sweep_dir); /* teardown removes files only */
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_object),
        cmocka_unit_test(test_file_layout),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_later_dtypes),
        cmocka_unit_test(test_save_failures),
        cmocka_unit_test(test_save_fault_injection),
        cmocka_unit_test(test_crash_during_save),
        cmocka_unit_test(test_checkpoint_files),
        cmocka_unit_test(test_mmap_load),
        cmocka_unit_test(test_foreign_files),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_sweep_temporaries),
    };
    return cmocka_run_group_tests_name("snapshot", tests, setup, teardown);
}
