/* tests/test_snapshot.c - the snapshot object and its safetensors files: round trips, layout, validation. */
#include <dirent.h>
#include <float.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "support/gck_test.h"

#ifdef _OPENMP
#include <omp.h>
#endif

#include "alloc_internal.h"
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

/* sample()'s optimizer blob, loss cid and metadata. */
static void sample_fields(gck_snapshot *s)
{
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", "adam-m-and-v", 12), GCK_OK);
    assert_int_equal(gck_snapshot_set_loss_cid(s, "xxh3:00000000deadbeef"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "run", "demo"), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "lr", "0.001"), GCK_OK);
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
    sample_fields(s);
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

/* More pieces than one writev takes (sysconf(_SC_IOV_MAX), 1024 on Linux),
 * empty tensors among them: the file is the same as one written piece by
 * piece would be, so it loads back with every byte in place. */
static void test_many_pieces(void **state)
{
    (void)state;
    enum { NT = 2500 };
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(1, &s), GCK_OK);
    float *vals = malloc(NT * 3 * sizeof *vals);
    assert_non_null(vals);
    for (size_t i = 0; i < NT * 3; i++)
        vals[i] = (float)i * 0.5f - 7.0f;
    for (int t = 0; t < NT; t++) {
        char name[32];
        snprintf(name, sizeof name, "t%05d", t);
        const int64_t shape[1] = {t % 7 == 0 ? 0 : 1 + t % 3};
        assert_int_equal(gck_snapshot_add_tensor_ref(s, name, GCK_DTYPE_F32, shape, 1, vals + 3 * t), GCK_OK);
    }
    assert_int_equal(gck_snapshot_save(s, path_of("many.safetensors")), GCK_OK);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("many.safetensors"), &l), GCK_OK);
    assert_same_tensors(s, l);
    gck_snapshot_destroy(l);
    gck_snapshot_destroy(s);
    free(vals);
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

/* Another writer's file: one I32 tensor "x" = {1, -1}, no __metadata__. */
static void write_foreign(const char *name)
{
    const char hdr[] = "{\"x\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    unsigned char file[8 + sizeof hdr - 1 + 8];
    const uint64_t hl = sizeof hdr - 1;
    for (int i = 0; i < 8; i++)
        file[i] = (unsigned char)(hl >> (8 * i));
    memcpy(file + 8, hdr, hl);
    const unsigned char data[8] = {1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
    memcpy(file + 8 + hl, data, 8);
    write_file(path_of(name), file, sizeof file);
}

/* A file from another writer: no __metadata__ at all, or one without our keys. */
static void test_foreign_files(void **state)
{
    (void)state;
    write_foreign("foreign.safetensors");
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

/* ---- tensors by reference ---------------------------------------------------------- */

/* sample()'s tensors and fields, with "w", "b" and "half" added by reference
 * to the given buffers (malloc'd, so ASan sees any read after they are freed). */
static gck_snapshot *sample_refs(float *w, double *b, uint16_t *h)
{
    const float w0[6] = {1, 2, 3, 4, 5, -0.0f};
    const double b0[2] = {0.5, -1e300};
    const uint16_t h0[3] = {0x3c00, 0xc000, 0x7e00};
    memcpy(w, w0, sizeof w0), memcpy(b, b0, sizeof b0), memcpy(h, h0, sizeof h0);
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(42, &s), GCK_OK);
    gck_snapshot_set_timestamp(s, 1700000000);
    const int64_t sh23[2] = {2, 3}, sh2[1] = {2}, sh3[1] = {3}, sh0[2] = {0, 4};
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "w", GCK_DTYPE_F32, sh23, 2, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "b", GCK_DTYPE_F64, sh2, 1, b), GCK_OK);
    const int64_t steps = 7;
    assert_int_equal(gck_snapshot_add_tensor(s, "count", GCK_DTYPE_I64, NULL, 0, &steps), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "half", GCK_DTYPE_F16, sh3, 1, h), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "empty", GCK_DTYPE_BF16, sh0, 2, NULL), GCK_OK);
    const unsigned char flags[2] = {1, 0};
    assert_int_equal(gck_snapshot_add_tensor(s, "mask", GCK_DTYPE_BOOL, sh2, 1, flags), GCK_OK);
    sample_fields(s);
    return s;
}

/* A snapshot of references equals one of copies, saves the same file, and
 * never reads the caller's memory after its last save (ASan). */
static void test_tensor_ref(void **state)
{
    (void)state;
    float *w = malloc(6 * sizeof *w);
    double *b = malloc(2 * sizeof *b);
    uint16_t *h = malloc(3 * sizeof *h);
    gck_snapshot *r = sample_refs(w, b, h), *c = sample();
    assert_same_tensors(c, r); /* same bytes and content ids */
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(r, "w", &t), GCK_OK);
    assert_ptr_equal(t.data, w); /* the caller's memory, not a copy */
    assert_int_equal(t.nbytes, 24);
    assert_int_equal(gck_snapshot_find_tensor(r, "b", &t), GCK_OK);
    assert_ptr_equal(t.data, b);
    assert_int_equal(gck_snapshot_find_tensor(r, "count", &t), GCK_OK); /* a copy among references */
    assert_int_equal(gck_snapshot_find_tensor(r, "empty", &t), GCK_OK);
    assert_int_equal(t.nbytes, 0);
    assert_int_equal(gck_snapshot_save(r, path_of("ref.safetensors")), GCK_OK);
    assert_int_equal(gck_snapshot_save(c, path_of("copy.safetensors")), GCK_OK);
    size_t l1, l2;
    unsigned char *f1 = read_file(path_of("ref.safetensors"), &l1), *f2 = read_file(path_of("copy.safetensors"), &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(f1, f2, l1);
    free(f1), free(f2);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("ref.safetensors"), &l), GCK_OK);
    assert_same_tensors(c, l);
    gck_snapshot_destroy(l);
    /* after the last save the caller frees its buffers: what is not tensor
     * data still answers, and destroy reads nothing of them */
    free(w), free(b), free(h);
    assert_int_equal(gck_snapshot_num_tensors(r), 6);
    gck_tensor_info tc;
    assert_int_equal(gck_snapshot_find_tensor(r, "w", &t), GCK_OK);
    assert_int_equal(gck_snapshot_find_tensor(c, "w", &tc), GCK_OK);
    assert_string_equal(t.content_id, tc.content_id); /* the id of the add, no read now */
    assert_string_equal(gck_snapshot_metadata(r, "run"), "demo");
    gck_snapshot_destroy(r);
    gck_snapshot_destroy(c);

    /* memory the snapshot may only read: a read-only page */
    const long page = sysconf(_SC_PAGESIZE);
    const int zfd = open("/dev/zero", O_RDWR);
    assert_true(zfd >= 0);
    float *ro = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE, zfd, 0);
    close(zfd);
    assert_true(ro != MAP_FAILED);
    for (int i = 0; i < 16; i++)
        ro[i] = (float)i * 0.5f;
    assert_int_equal(mprotect(ro, (size_t)page, PROT_READ), 0);
    gck_snapshot *s = NULL, *k = NULL;
    assert_int_equal(gck_snapshot_create(1, &s), GCK_OK);
    assert_int_equal(gck_snapshot_create(1, &k), GCK_OK);
    gck_snapshot_set_timestamp(s, 5), gck_snapshot_set_timestamp(k, 5);
    const int64_t sh[1] = {16};
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "ro", GCK_DTYPE_F32, sh, 1, ro), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(k, "ro", GCK_DTYPE_F32, sh, 1, ro), GCK_OK);
    assert_int_equal(gck_snapshot_save(s, path_of("ro.safetensors")), GCK_OK);
    assert_int_equal(gck_snapshot_load(path_of("ro.safetensors"), &l), GCK_OK);
    assert_same_tensors(k, l);
    gck_snapshot_destroy(l);
    gck_snapshot_destroy(s);
    gck_snapshot_destroy(k);
    munmap(ro, (size_t)page);
}

/* gck_snapshot_own copies borrowed bytes (all or nothing) so that the caller
 * may free its buffers at once (gck_store_save_async copies a borrowed
 * snapshot itself); gck_snapshot_clone copies everything. ASan sees any
 * read of the freed buffers. */
static void test_tensor_own(void **state)
{
    (void)state;
    assert_int_equal(gck_snapshot_own(NULL), GCK_ERR_INVALID_ARGUMENT);
    gck_snapshot *c = sample(), *k = NULL;
    assert_int_equal(gck_snapshot_clone(NULL, &k), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_clone(c, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_own(c), GCK_OK); /* nothing borrowed: nothing to do */
    float *w = malloc(6 * sizeof *w);
    double *b = malloc(2 * sizeof *b);
    uint16_t *h = malloc(3 * sizeof *h);
    gck_snapshot *r = sample_refs(w, b, h);

    const char *dir = path_of("own-store");
    char sdir[512];
    snprintf(sdir, sizeof sdir, "%s", dir);
    gck_store *store = NULL;
    assert_int_equal(gck_store_open(sdir, NULL, &store), GCK_OK);
    gck_snapshot *cl = NULL;
    assert_int_equal(gck_snapshot_clone(r, &cl), GCK_OK);

    /* every allocation failure leaves r borrowing, unchanged */
    for (long f = 0;; f++) {
        gck_alloc_fail_after(f);
        const gck_status st = gck_snapshot_own(r);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK)
            break;
        assert_int_equal(st, GCK_ERR_NO_MEMORY);
        assert_non_null(strstr(gck_last_error(), "gck_snapshot_own"));
        assert_non_null(strstr(gck_last_error(), "out of memory"));
        gck_tensor_info t;
        assert_int_equal(gck_snapshot_find_tensor(r, "w", &t), GCK_OK);
        assert_ptr_equal(t.data, w);
        assert_int_equal(gck_snapshot_find_tensor(r, "half", &t), GCK_OK);
        assert_ptr_equal(t.data, h);
        assert_true(f < 10);
    }
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(r, "w", &t), GCK_OK);
    assert_ptr_not_equal(t.data, w);
    assert_int_equal(gck_snapshot_own(r), GCK_OK); /* again: nothing left to copy */
    memset(w, 0x55, 6 * sizeof *w); /* the caller changes and frees its buffers at once */
    free(w), free(b), free(h);
    assert_same_tensors(c, r);
    assert_same_tensors(c, cl);
    assert_string_equal(gck_snapshot_metadata(cl, "run"), "demo");
    assert_int_equal(gck_snapshot_step(cl), 42);
    assert_int_equal(gck_snapshot_timestamp(cl), 1700000000);

    /* owned, it goes to the store asynchronously; the restored version is c */
    assert_int_equal(gck_store_save_async(store, r, NULL, 0), GCK_OK);
    assert_int_equal(gck_store_save_async(store, cl, NULL, 0), GCK_OK); /* a clone borrows nothing either */
    uint64_t v = 0;
    assert_int_equal(gck_store_wait(store, &v), GCK_OK);
    assert_int_equal(v, 2);
    gck_snapshot *back = NULL;
    assert_int_equal(gck_store_restore(store, 1, &back), GCK_OK);
    assert_same_tensors(c, back);
    gck_snapshot_destroy(back);
    assert_int_equal(gck_store_close(store), GCK_OK);

    /* a file mapping is borrowed memory too */
    assert_int_equal(gck_snapshot_save(c, path_of("own.safetensors")), GCK_OK);
    gck_snapshot *m = NULL;
    assert_int_equal(gck_snapshot_load_mmap(path_of("own.safetensors"), 0, &m), GCK_OK);
    assert_int_equal(gck_snapshot_own(m), GCK_OK);
    assert_same_tensors(c, m);
    gck_snapshot_destroy(m);
    gck_snapshot_destroy(c);
}

/* Every refused reference leaves the snapshot as it was (and keeps no pointer). */
static void test_tensor_ref_errors(void **state)
{
    (void)state;
    float *w = malloc(6 * sizeof *w);
    double *b = malloc(2 * sizeof *b);
    uint16_t *h = malloc(3 * sizeof *h);
    gck_snapshot *s = sample_refs(w, b, h);
    assert_int_equal(gck_snapshot_save(s, path_of("refe0.safetensors")), GCK_OK);
    size_t l0;
    unsigned char *f0 = read_file(path_of("refe0.safetensors"), &l0);
    float *x = malloc(4 * sizeof *x);
    x[0] = x[1] = x[2] = x[3] = 1;
    const int64_t one[1] = {1}, neg[1] = {-1}, huge[2] = {INT64_MAX, 4};
    int64_t many[GCK_MAX_DIMS + 1];
    for (int i = 0; i <= GCK_MAX_DIMS; i++)
        many[i] = 1;
    assert_int_equal(gck_snapshot_add_tensor_ref(NULL, "x", GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, NULL, GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "w", GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(gck_last_error(), "already"));
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "count", GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor(s, "half", GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "__metadata__", GCK_DTYPE_F32, one, 1, x),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "__optimizer__/w", GCK_DTYPE_F32, one, 1, x),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "", GCK_DTYPE_F32, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "neg", GCK_DTYPE_F32, neg, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "dt", (gck_dtype)77, one, 1, x), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "nodata", GCK_DTYPE_F32, one, 1, NULL),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "noshape", GCK_DTYPE_F32, NULL, 1, x),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "dims", GCK_DTYPE_F32, many, GCK_MAX_DIMS + 1, x),
                     GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "huge", GCK_DTYPE_F64, huge, 2, x), GCK_ERR_INVALID_ARGUMENT);
    /* every allocation of an add failing in turn */
    int failures = 0;
    for (long k = 0;; k++) {
        gck_alloc_fail_after(k);
        const gck_status st = gck_snapshot_add_tensor_ref(s, "late", GCK_DTYPE_F32, one, 1, x);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK)
            break;
        assert_int_equal(st, GCK_ERR_NO_MEMORY);
        /* the one out-of-memory message, naming the tensor */
        assert_non_null(strstr(gck_last_error(), "tensor 'late': out of memory: "));
        assert_int_equal(gck_snapshot_num_tensors(s), 6);
        failures++;
    }
    assert_true(failures >= 3); /* tensor, name, shape */
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(s, "late", &t), GCK_OK);
    assert_ptr_equal(t.data, x);
    /* the refused adds kept nothing: without "late" the file is the same */
    gck_snapshot *again = sample_refs(w, b, h);
    assert_int_equal(gck_snapshot_save(again, path_of("refe1.safetensors")), GCK_OK);
    size_t l1;
    unsigned char *f1 = read_file(path_of("refe1.safetensors"), &l1);
    assert_int_equal(l0, l1);
    assert_memory_equal(f0, f1, l0);
    free(f0), free(f1);
    gck_snapshot_destroy(again);
    gck_snapshot_destroy(s);
    free(x), free(w), free(b), free(h);
}

/* A list added in one call is n single adds: the same names, ids, data
 * pointers and file, on 1 and 2 threads; errors leave the snapshot as it was. */
static void test_tensors_ref(void **state)
{
    (void)state;
    const size_t big = 300000;
    float *w = malloc(big * sizeof *w), *x = malloc(4 * sizeof *x);
    double *d = malloc(5 * sizeof *d);
    uint16_t *h = malloc(9 * sizeof *h);
    for (size_t i = 0; i < big; i++)
        w[i] = (float)i * 0.25f - 7.0f;
    for (int i = 0; i < 5; i++)
        d[i] = i * 1.5;
    for (int i = 0; i < 9; i++)
        h[i] = (uint16_t)(0x3c00 + i);
    x[0] = x[1] = x[2] = x[3] = 2;
    const int64_t sbig[2] = {600, 500}, s5[1] = {5}, s33[2] = {3, 3}, s0[2] = {0, 4};
    const gck_tensor_ref list[6] = {
        {"z.big", GCK_DTYPE_F32, sbig, 2, w}, {"a.d", GCK_DTYPE_F64, s5, 1, d},  {"m.half", GCK_DTYPE_F16, s33, 2, h},
        {"scalar", GCK_DTYPE_F32, NULL, 0, x}, {"empty", GCK_DTYPE_BF16, s0, 2, NULL}, {"b.w2", GCK_DTYPE_F32, sbig, 2, w},
    };
    gck_snapshot *one = NULL;
    assert_int_equal(gck_snapshot_create(3, &one), GCK_OK);
    assert_int_equal(gck_snapshot_set_timestamp(one, 5), GCK_OK);
    for (int i = 0; i < 6; i++)
        assert_int_equal(gck_snapshot_add_tensor_ref(one, list[i].name, list[i].dtype, list[i].shape, list[i].ndim,
                                                     list[i].data), GCK_OK);
    assert_int_equal(gck_snapshot_save(one, path_of("trefs0.safetensors")), GCK_OK);
    size_t l0;
    unsigned char *f0 = read_file(path_of("trefs0.safetensors"), &l0);
    for (int th = 1; th <= 2; th++) {
        omp_set_num_threads(th);
        gck_snapshot *s = NULL;
        assert_int_equal(gck_snapshot_create(3, &s), GCK_OK);
        assert_int_equal(gck_snapshot_set_timestamp(s, 5), GCK_OK);
        assert_int_equal(gck_snapshot_add_tensors_ref(s, list, 0), GCK_OK); /* nothing */
        assert_int_equal(gck_snapshot_add_tensors_ref(s, NULL, 0), GCK_OK);
        assert_int_equal(gck_snapshot_add_tensors_ref(s, list, 6), GCK_OK);
        assert_int_equal(gck_snapshot_num_tensors(s), 6);
        for (int i = 0; i < 6; i++) {
            gck_tensor_info a, b;
            assert_int_equal(gck_snapshot_find_tensor(s, list[i].name, &a), GCK_OK);
            assert_int_equal(gck_snapshot_find_tensor(one, list[i].name, &b), GCK_OK);
            assert_ptr_equal(a.data, list[i].data);
            assert_string_equal(a.content_id, b.content_id);
            assert_int_equal(a.nbytes, b.nbytes);
        }
        assert_int_equal(gck_snapshot_save(s, path_of("trefs1.safetensors")), GCK_OK);
        size_t l1;
        unsigned char *f1 = read_file(path_of("trefs1.safetensors"), &l1);
        assert_int_equal(l0, l1);
        assert_memory_equal(f0, f1, l0);
        free(f1);
        gck_snapshot_destroy(s);
    }
    omp_set_num_threads(2);

    /* errors: nothing added, the message names the entry */
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(3, &s), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor_ref(s, "kept", GCK_DTYPE_F32, NULL, 0, x), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensors_ref(NULL, list, 6), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_add_tensors_ref(s, NULL, 1), GCK_ERR_INVALID_ARGUMENT);
    /* one entry spoiled at a time: the message names it */
    static const struct {
        int at;
        const char *name; /* replaces the entry's name (NULL: the data or dtype below) */
        int null_name, null_data, bad_dtype;
        const char *says;
    } cases[] = {
        {3, "__metadata__", 0, 0, 0, "tensors[3]"}, {4, NULL, 1, 0, 0, "tensors[4]"},
        {5, "a.d", 0, 0, 0, "listed twice"},        {2, "kept", 0, 0, 0, "already"},
        {1, NULL, 0, 1, 0, "tensors[1]"},           {0, NULL, 0, 0, 1, "tensors[0]"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        gck_tensor_ref bad[6];
        memcpy(bad, list, sizeof bad);
        gck_tensor_ref *b = &bad[cases[c].at];
        if (cases[c].name != NULL || cases[c].null_name)
            b->name = cases[c].name;
        if (cases[c].null_data)
            b->data = NULL;
        if (cases[c].bad_dtype)
            b->dtype = (gck_dtype)77;
        assert_int_equal(gck_snapshot_add_tensors_ref(s, bad, 6), GCK_ERR_INVALID_ARGUMENT);
        if (strstr(gck_last_error(), cases[c].says) == NULL)
            fail_msg("case %zu: '%s' does not say '%s'", c, gck_last_error(), cases[c].says);
    }
    assert_int_equal(gck_snapshot_num_tensors(s), 1);
    int failures = 0;
    for (long k = 0;; k++) { /* every allocation failing in turn */
        gck_alloc_fail_after(k);
        const gck_status st = gck_snapshot_add_tensors_ref(s, list, 6);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK)
            break;
        assert_int_equal(st, GCK_ERR_NO_MEMORY);
        assert_int_equal(gck_snapshot_num_tensors(s), 1);
        failures++;
    }
    assert_true(failures >= 6 * 3);
    assert_int_equal(gck_snapshot_num_tensors(s), 7);
    gck_snapshot_destroy(s);
    gck_snapshot_destroy(one);
    free(f0), free(w), free(x), free(d), free(h);
}

/* ---- typed metadata --------------------------------------------------------------- */

static uint64_t bits_of(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

static double of_bits(uint64_t u)
{
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* The value set as f64 comes back with the same bits, from the object and
 * from a saved and loaded file. */
static void check_f64(gck_snapshot *s, double v, const char *text)
{
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "x", v), GCK_OK);
    if (text != NULL)
        assert_string_equal(gck_snapshot_metadata(s, "x"), text);
    double got = 0;
    assert_int_equal(gck_snapshot_metadata_f64(s, "x", &got), GCK_OK);
    if (bits_of(got) != bits_of(v))
        fail_msg("f64 %016llx written as '%s' came back as %016llx", (unsigned long long)bits_of(v),
                 gck_snapshot_metadata(s, "x"), (unsigned long long)bits_of(got));
}

static void test_typed_metadata(void **state)
{
    (void)state;
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(1, &s), GCK_OK);
    /* u64 */
    static const uint64_t us[] = {0, 1, 10, 120000, UINT64_C(4294967296), UINT64_MAX};
    for (size_t i = 0; i < sizeof us / sizeof us[0]; i++) {
        assert_int_equal(gck_snapshot_set_metadata_u64(s, "step", us[i]), GCK_OK);
        uint64_t got = 7;
        assert_int_equal(gck_snapshot_metadata_u64(s, "step", &got), GCK_OK);
        assert_true(got == us[i]);
    }
    assert_string_equal(gck_snapshot_metadata(s, "step"), "18446744073709551615");
    /* f64: the text forms, then every kind of value */
    check_f64(s, 0.001, "0.001");
    check_f64(s, 1e-5, "1.0000000000000001e-05");
    check_f64(s, -0.0, "-0");
    check_f64(s, 0.0, "0");
    check_f64(s, 4.9406564584124654e-324, "4.9406564584124654e-324");
    check_f64(s, HUGE_VAL, "inf");
    check_f64(s, -HUGE_VAL, "-inf");
    check_f64(s, of_bits(UINT64_C(0x7ff8000000000000)), "nan");
    check_f64(s, of_bits(UINT64_C(0xfff8000000000000)), "-nan");
    check_f64(s, of_bits(UINT64_C(0x7ff0000000000001)), "nan:0x7ff0000000000001"); /* signalling */
    check_f64(s, of_bits(UINT64_C(0xfff4000000000abc)), "nan:0xfff4000000000abc");
    static const double fs[] = {1.0, 0.1, 1.0 / 3.0, 3.141592653589793, DBL_MAX, -DBL_MAX, DBL_MIN, DBL_EPSILON,
                                2.2250738585072009e-308 /* largest subnormal */, 1e300, -1e-300, 123456789.0};
    for (size_t i = 0; i < sizeof fs / sizeof fs[0]; i++)
        check_f64(s, fs[i], NULL);
    uint64_t r = 0x1234;
    for (int i = 0; i < 20000; i++) /* random bit patterns: every exponent, NaNs and infinities among them */
        check_f64(s, of_bits(gck_test_rand(&r)), NULL);
    /* through a file */
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "lr", 3e-4), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "neg0", -0.0), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "pnan", of_bits(UINT64_C(0x7ff0000000000123))), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "loader", UINT64_C(987654321987)), GCK_OK);
    assert_int_equal(gck_snapshot_save(s, path_of("typed.safetensors")), GCK_OK);
    gck_snapshot *l = NULL;
    assert_int_equal(gck_snapshot_load(path_of("typed.safetensors"), &l), GCK_OK);
    double d = 0;
    uint64_t u = 0;
    assert_int_equal(gck_snapshot_metadata_f64(l, "lr", &d), GCK_OK);
    assert_true(bits_of(d) == bits_of(3e-4));
    assert_int_equal(gck_snapshot_metadata_f64(l, "neg0", &d), GCK_OK);
    assert_true(bits_of(d) == bits_of(-0.0));
    assert_int_equal(gck_snapshot_metadata_f64(l, "pnan", &d), GCK_OK);
    assert_true(bits_of(d) == UINT64_C(0x7ff0000000000123));
    assert_int_equal(gck_snapshot_metadata_u64(l, "loader", &u), GCK_OK);
    assert_true(u == UINT64_C(987654321987));
    gck_snapshot_destroy(l);
    /* strings set by hand parse as numbers where they are numbers */
    static const struct { const char *text; double v; } ok[] = {
        {"1e-3", 1e-3}, {".5", 0.5}, {"5.", 5.0}, {"-2.5E+2", -250.0}, {"1e-400", 0.0}, {"007", 7.0}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        assert_int_equal(gck_snapshot_set_metadata(s, "x", ok[i].text), GCK_OK);
        assert_int_equal(gck_snapshot_metadata_f64(s, "x", &d), GCK_OK);
        assert_true(bits_of(d) == bits_of(ok[i].v));
    }
    /* strict: nothing but the forms above */
    static const char *const bad_f[] = {"", " 1", "1 ", "+1", "0x1p3", "1e", "e5", ".", "-", "--1", "1..2",
                                        "1e+", "infinity", "INF", "Inf", "+inf", "NaN", "nan(1)", "nan:0x1",
                                        "nan:0x7ff0000000000000" /* bits of inf */, "nan:0X7ff8000000000001",
                                        "nan:0x7ff800000000000g", "nan:0x7ff80000000000011", "1e999", "-1e999",
                                        "1,5", "0.5x"};
    for (size_t i = 0; i < sizeof bad_f / sizeof bad_f[0]; i++) {
        assert_int_equal(gck_snapshot_set_metadata(s, "x", bad_f[i]), GCK_OK);
        d = 42;
        if (gck_snapshot_metadata_f64(s, "x", &d) != GCK_ERR_CORRUPT)
            fail_msg("'%s' was accepted as an f64", bad_f[i]);
        assert_true(d == 42); /* not written */
        assert_non_null(strstr(gck_last_error(), "'x'"));
    }
    static const char *const bad_u[] = {"", "-1", "+1", "01", " 1", "1 ", "1.0", "1e3", "18446744073709551616",
                                        "0x10", "abc"};
    for (size_t i = 0; i < sizeof bad_u / sizeof bad_u[0]; i++) {
        assert_int_equal(gck_snapshot_set_metadata(s, "x", bad_u[i]), GCK_OK);
        u = 42;
        if (gck_snapshot_metadata_u64(s, "x", &u) != GCK_ERR_CORRUPT)
            fail_msg("'%s' was accepted as a u64", bad_u[i]);
        assert_true(u == 42);
    }
    /* missing keys, reserved keys, NULLs */
    assert_int_equal(gck_snapshot_metadata_u64(s, "absent", &u), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_snapshot_metadata_f64(s, "absent", &d), GCK_ERR_NOT_FOUND);
    assert_non_null(strstr(gck_last_error(), "absent"));
    assert_int_equal(gck_snapshot_metadata_u64(s, "gradckpt.step", &u), GCK_ERR_NOT_FOUND);
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "gradckpt.step", 1), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_set_metadata_f64(s, "", 1.0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_set_metadata_f64(NULL, "k", 1.0), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_set_metadata_u64(s, NULL, 1), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_metadata_u64(NULL, "x", &u), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_metadata_f64(s, NULL, &d), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_metadata_f64(s, "x", NULL), GCK_ERR_INVALID_ARGUMENT);
    /* a setter that runs out of memory leaves the old value */
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "keep", 5), GCK_OK);
    gck_alloc_fail_after(0);
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "keep", 6), GCK_ERR_NO_MEMORY);
    gck_alloc_fail_after(-1);
    assert_int_equal(gck_snapshot_metadata_u64(s, "keep", &u), GCK_OK);
    assert_true(u == 5);
    gck_snapshot_destroy(s);
}

/* Names and metadata that are not UTF-8 (which no safetensors header can
 * hold) are refused when added, not at the save: the snapshot is unchanged
 * and still saves. */
static void test_non_utf8_refused(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    const size_t n0 = gck_snapshot_num_tensors(s);
    static const char *const bad[] = {"w\xff", "\xc0\xaf", "\xed\xa0\x80", "a\xe2\x82", "\xf4\x90\x80\x80"};
    const float v[2] = {1, 2};
    const int64_t shape[1] = {2};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(gck_snapshot_add_tensor(s, bad[i], GCK_DTYPE_F32, shape, 1, v), GCK_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(gck_last_error(), "UTF-8"));
        assert_int_equal(gck_snapshot_add_tensor_ref(s, bad[i], GCK_DTYPE_F32, shape, 1, v), GCK_ERR_INVALID_ARGUMENT);
        const gck_tensor_ref list[1] = {{.name = bad[i], .dtype = GCK_DTYPE_F32, .shape = shape, .ndim = 1, .data = v}};
        assert_int_equal(gck_snapshot_add_tensors_ref(s, list, 1), GCK_ERR_INVALID_ARGUMENT);
        assert_int_equal(gck_snapshot_set_metadata(s, bad[i], "x"), GCK_ERR_INVALID_ARGUMENT);
        assert_int_equal(gck_snapshot_set_metadata(s, "k", bad[i]), GCK_ERR_INVALID_ARGUMENT);
        assert_int_equal(gck_snapshot_set_optimizer_state(s, bad[i], v, sizeof v), GCK_ERR_INVALID_ARGUMENT);
    }
    assert_int_equal(gck_snapshot_num_tensors(s), n0);
    assert_null(gck_snapshot_metadata(s, "k"));
    /* every valid form is taken: 2-, 3- and 4-byte sequences */
    assert_int_equal(gck_snapshot_add_tensor(s, "w\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", GCK_DTYPE_F32, shape, 1, v),
                     GCK_OK);
    const char *path = path_of("utf8.safetensors");
    assert_int_equal(gck_snapshot_save(s, path), GCK_OK);
    gck_snapshot *r = NULL;
    assert_int_equal(gck_snapshot_load(path, &r), GCK_OK);
    assert_int_equal(gck_snapshot_num_tensors(r), n0 + 1);
    gck_snapshot_destroy(r);
    unlink(path);
    gck_snapshot_destroy(s);
}

/* ---- restoring into the caller's memory ------------------------------------------- */

/* Restores chosen tensors of a file into buffers; every refused call leaves
 * them untouched; a damaged value is reported with its name. */
static void test_load_into(void **state)
{
    (void)state;
    gck_snapshot *s = sample();
    assert_int_equal(gck_snapshot_set_metadata_u64(s, "loader", 77), GCK_OK);
    char p[512];
    snprintf(p, sizeof p, "%s", path_of("into.safetensors")); /* path_of's buffer is reused below */
    assert_int_equal(gck_snapshot_save(s, p), GCK_OK);
    float w[6];
    double b[2];
    uint16_t h[3];
    unsigned char blob[12];
    memset(w, 0xa5, sizeof w), memset(b, 0xa5, sizeof b), memset(h, 0xa5, sizeof h), memset(blob, 0xa5, sizeof blob);
    const char *names[] = {"w", "b", "half", "__optimizer__/w", "empty"};
    void *dsts[] = {w, b, h, blob, NULL};
    size_t sizes[] = {sizeof w, sizeof b, sizeof h, sizeof blob, 0};
    gck_snapshot *fields = NULL;
    assert_int_equal(gck_snapshot_load_into(p, names, dsts, sizes, 5, &fields), GCK_OK);
    gck_tensor_info t;
    assert_int_equal(gck_snapshot_find_tensor(s, "w", &t), GCK_OK);
    assert_memory_equal(w, t.data, sizeof w);
    assert_int_equal(gck_snapshot_find_tensor(s, "b", &t), GCK_OK);
    assert_memory_equal(b, t.data, sizeof b);
    assert_int_equal(gck_snapshot_find_tensor(s, "half", &t), GCK_OK);
    assert_memory_equal(h, t.data, sizeof h);
    assert_memory_equal(blob, "adam-m-and-v", 12);
    assert_int_equal(gck_snapshot_step(fields), 42);
    assert_int_equal(gck_snapshot_timestamp(fields), 1700000000);
    assert_int_equal(gck_snapshot_num_tensors(fields), 0);
    assert_string_equal(gck_snapshot_metadata(fields, "run"), "demo");
    assert_string_equal(gck_snapshot_loss_cid(fields), "xxh3:00000000deadbeef");
    uint64_t u = 0;
    assert_int_equal(gck_snapshot_metadata_u64(fields, "loader", &u), GCK_OK);
    assert_true(u == 77);
    gck_snapshot_destroy(fields);
    fields = NULL;
    assert_int_equal(gck_snapshot_load_into(p, NULL, NULL, NULL, 0, NULL), GCK_OK); /* nothing asked */

    /* refused before anything is written: the buffers keep their bytes */
    float w2[6];
    double b2[2];
    memset(w2, 0x5a, sizeof w2), memset(b2, 0x5a, sizeof b2);
    unsigned char wz[sizeof w2], bz[sizeof b2];
    memcpy(wz, w2, sizeof w2), memcpy(bz, b2, sizeof b2);
    const char *n2[] = {"w", "b"};
    void *d2[] = {w2, b2};
    size_t z2[] = {sizeof w2, sizeof b2};
    const char *missing[] = {"w", "nope"};
    const char *twice[] = {"w", "w"};
    const char *nullname[] = {"w", NULL};
    void *nulldst[] = {w2, NULL};
    void *overlap[] = {w2, (char *)w2 + 8};
    size_t wrong[] = {sizeof w2, sizeof b2 - 8};
    size_t tiny[] = {16, 8};
    const struct {
        const char *const *names;
        void *const *dsts;
        const size_t *sizes;
        gck_status want;
        const char *msg;
    } cases[] = {
        {NULL, NULL, NULL, GCK_ERR_INVALID_ARGUMENT, "NULL"},
        {missing, NULL, NULL, GCK_ERR_NOT_FOUND, "nope"},
        {twice, NULL, NULL, GCK_ERR_INVALID_ARGUMENT, "twice"},
        {nullname, NULL, NULL, GCK_ERR_INVALID_ARGUMENT, "names[1]"},
        {NULL, nulldst, NULL, GCK_ERR_INVALID_ARGUMENT, "dsts[1]"},
        {NULL, overlap, tiny, GCK_ERR_INVALID_ARGUMENT, "overlap"},
        {NULL, NULL, wrong, GCK_ERR_DIMENSION_MISMATCH, "8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const *nm = cases[i].names ? cases[i].names : n2;
        void *const *ds = cases[i].dsts ? cases[i].dsts : d2;
        const size_t *sz = cases[i].sizes ? cases[i].sizes : z2;
        gck_status st;
        if (i == 0)
            st = gck_snapshot_load_into(p, NULL, d2, z2, 2, &fields);
        else
            st = gck_snapshot_load_into(p, nm, ds, sz, 2, &fields);
        if (st != cases[i].want)
            fail_msg("case %zu: %s (%s)", i, gck_status_name(st), gck_last_error());
        assert_non_null(strstr(gck_last_error(), cases[i].msg));
        assert_null(fields);
        assert_memory_equal(w2, wz, sizeof w2);
        assert_memory_equal(b2, bz, sizeof b2);
    }
    assert_int_equal(gck_snapshot_load_into(NULL, n2, d2, z2, 2, NULL), GCK_ERR_INVALID_ARGUMENT);
    assert_int_equal(gck_snapshot_load_into(path_of("absent.safetensors"), n2, d2, z2, 2, NULL), GCK_ERR_IO);
    craft("into_bad.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 57, 8);
    assert_int_equal(gck_snapshot_load_into(path_of("into_bad.safetensors"), n2, d2, z2, 1, NULL), GCK_ERR_CORRUPT);
    assert_memory_equal(w2, wz, sizeof w2);
    /* every allocation failing in turn: NO_MEMORY, nothing written */
    for (long k = 0;; k++) {
        gck_alloc_fail_after(k);
        const gck_status st = gck_snapshot_load_into(p, n2, d2, z2, 2, &fields);
        gck_alloc_fail_after(-1);
        if (st == GCK_OK)
            break;
        if (st != GCK_ERR_NO_MEMORY)
            fail_msg("allocation %ld: %s: %s", k, gck_status_name(st), gck_last_error());
        /* the one out-of-memory message, naming the file */
        if (strstr(gck_last_error(), "out of memory: ") == NULL || strstr(gck_last_error(), p) == NULL)
            fail_msg("allocation %ld: '%s' does not name the file or say 'out of memory: '", k, gck_last_error());
        assert_null(fields);
        assert_memory_equal(w2, wz, sizeof w2); /* every allocation comes before the first read */
    }
    gck_snapshot_destroy(fields);

    /* a value damaged on disk: CORRUPT naming the tensor (the buffers' content is unspecified then) */
    size_t len;
    unsigned char *bytes = read_file(p, &len);
    gck_snapshot_find_tensor(s, "w", &t);
    unsigned char le[24]; /* w's bytes as the file holds them: little-endian */
    for (size_t i = 0; i < 6; i++) {
        uint32_t bits;
        memcpy(&bits, (const float *)t.data + i, 4);
        for (int j = 0; j < 4; j++)
            le[4 * i + j] = (unsigned char)(bits >> (8 * j));
    }
    unsigned char *at = NULL;
    for (size_t i = 0; at == NULL && i + sizeof le <= len; i++)
        if (memcmp(bytes + i, le, sizeof le) == 0)
            at = bytes + i;
    assert_non_null(at);
    at[3] ^= 0x01;
    write_file(path_of("into_flip.safetensors"), bytes, len);
    free(bytes);
    assert_int_equal(gck_snapshot_load_into(path_of("into_flip.safetensors"), n2, d2, z2, 2, NULL), GCK_ERR_CORRUPT);
    assert_non_null(strstr(gck_last_error(), "'w'"));
    assert_non_null(strstr(gck_last_error(), "content id mismatch"));
    /* a foreign file without recorded ids is read as it is */
    write_foreign("into_foreign.safetensors");
    int32_t xi[2] = {0, 0};
    const char *xn[] = {"x"};
    void *xd[] = {xi};
    size_t xs[] = {sizeof xi};
    assert_int_equal(gck_snapshot_load_into(path_of("into_foreign.safetensors"), xn, xd, xs, 1, &fields), GCK_OK);
    assert_int_equal(xi[0], 1);
    assert_int_equal(xi[1], -1);
    assert_int_equal(gck_snapshot_step(fields), 0);
    gck_snapshot_destroy(fields);
    gck_snapshot_destroy(s);
}

/* The operations the out-of-memory walk runs on one file (case: which). */
typedef struct oom_case {
    const char *path;
    const gck_snapshot *s;
    const gck_checkpoint *c;
} oom_case;

static gck_status oom_run(const oom_case *o, int what)
{
    gck_snapshot *l = NULL;
    gck_checkpoint *lc = NULL;
    gck_status st;
    switch (what) {
    case 0: st = gck_snapshot_save(o->s, o->path); break;
    case 1: st = gck_snapshot_load(o->path, &l); break;
    case 2: st = gck_snapshot_load_mmap(o->path, 0, &l); break;
    case 3: st = gck_snapshot_load_mmap(o->path, 1, &l); break;
    case 4: st = gck_checkpoint_save(o->c, o->path); break;
    default: st = gck_checkpoint_load(o->path, &lc); break;
    }
    gck_snapshot_destroy(l);
    gck_checkpoint_release(lc);
    return st;
}

/* Every allocation of each case failing in turn: NO_MEMORY with the one
 * out-of-memory message, and the file named (the context added on the way up). */
static void oom_walk(const oom_case *o, int first, int last)
{
    for (int what = first; what <= last; what++) {
        int failures = 0;
        for (long k = 0;; k++) {
            gck_alloc_fail_after(k);
            const gck_status st = oom_run(o, what);
            gck_alloc_fail_after(-1);
            if (st == GCK_OK)
                break;
            if (st != GCK_ERR_NO_MEMORY || strstr(gck_last_error(), "out of memory: ") == NULL ||
                strstr(gck_last_error(), o->path) == NULL)
                fail_msg("case %d, allocation %ld: %s '%s'", what, k, gck_status_name(st), gck_last_error());
            failures++;
        }
        assert_true(failures >= 3);
    }
}

/* A save, a load (copied, mapped, verified or not), a checkpoint save and load. */
static void test_out_of_memory_messages(void **state)
{
    (void)state;
    char p[512];
    snprintf(p, sizeof p, "%s", path_of("oom.safetensors"));
    const float w[5] = {1, 2, 3, 4, 5};
    const double b[3] = {-1, 0.5, 2};
    const int64_t sw[1] = {5}, sb[2] = {1, 3};
    const unsigned char blob[4] = {1, 2, 3, 4};
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(9, &s), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, sw, 1, w), GCK_OK);
    assert_int_equal(gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, sb, 2, b), GCK_OK);
    assert_int_equal(gck_snapshot_set_optimizer_state(s, "w", blob, sizeof blob), GCK_OK);
    assert_int_equal(gck_snapshot_set_metadata(s, "lr", "0.1"), GCK_OK);
    assert_int_equal(gck_snapshot_set_loss_cid(s, "xxh3:0123456789abcdef"), GCK_OK);
    oom_walk(&(oom_case){.path = p, .s = s}, 0, 3);
    gck_snapshot_destroy(s);

    gck_config cfg;
    gck_config_init(&cfg);
    gck_checkpointer *cp = NULL;
    assert_int_equal(gck_checkpointer_create(&cfg, &cp), GCK_OK);
    const double g[4] = {1, 2, 3, 4};
    assert_int_equal(gck_accumulate_f64(cp, "fc", g, 4, 1), GCK_OK);
    gck_checkpoint *c = NULL;
    assert_int_equal(gck_flush(cp, 1, &c), GCK_OK);
    snprintf(p, sizeof p, "%s", path_of("oom.ckpt"));
    oom_walk(&(oom_case){.path = p, .c = c}, 4, 5);
    gck_checkpoint_release(c);
    gck_checkpointer_destroy(cp);
}

/* A large restore (read on threads): bit-exact, and the same on 1 and 2 threads. */
static void test_load_into_large(void **state)
{
    (void)state;
    const size_t n = (size_t)3 << 20; /* 3 x 12 MiB of f32: above the threaded threshold */
    gck_snapshot *s = NULL;
    assert_int_equal(gck_snapshot_create(9, &s), GCK_OK);
    float *src[3], *dst[3];
    const char *names[3] = {"m", "v", "w"};
    size_t sizes[3];
    uint64_t r = 99;
    for (int k = 0; k < 3; k++) {
        src[k] = malloc(n * sizeof(float));
        dst[k] = malloc(n * sizeof(float));
        for (size_t i = 0; i < n; i++)
            src[k][i] = (float)gck_test_uniform(&r);
        const int64_t sh[1] = {(int64_t)n};
        assert_int_equal(gck_snapshot_add_tensor_ref(s, names[k], GCK_DTYPE_F32, sh, 1, src[k]), GCK_OK);
        sizes[k] = n * sizeof(float);
    }
    char p[512];
    snprintf(p, sizeof p, "%s", path_of("into_large.safetensors"));
    assert_int_equal(gck_snapshot_save(s, p), GCK_OK);
    for (int threads = 1; threads <= 2; threads++) {
#ifdef _OPENMP
        omp_set_num_threads(threads);
#endif
        for (int k = 0; k < 3; k++)
            memset(dst[k], 0, sizes[k]);
        assert_int_equal(gck_snapshot_load_into(p, names, (void *const *)dst, sizes, 3, NULL), GCK_OK);
        for (int k = 0; k < 3; k++)
            assert_memory_equal(dst[k], src[k], sizes[k]);
    }
    gck_snapshot_destroy(s);
    for (int k = 0; k < 3; k++)
        free(src[k]), free(dst[k]);
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
        cmocka_unit_test(test_many_pieces),
        cmocka_unit_test(test_later_dtypes),
        cmocka_unit_test(test_save_failures),
        cmocka_unit_test(test_save_fault_injection),
        cmocka_unit_test(test_crash_during_save),
        cmocka_unit_test(test_checkpoint_files),
        cmocka_unit_test(test_mmap_load),
        cmocka_unit_test(test_foreign_files),
        cmocka_unit_test(test_corrupt_files),
        cmocka_unit_test(test_tensor_ref),
        cmocka_unit_test(test_tensor_ref_errors),
        cmocka_unit_test(test_tensor_own),
        cmocka_unit_test(test_tensors_ref),
        cmocka_unit_test(test_typed_metadata),
        cmocka_unit_test(test_non_utf8_refused),
        cmocka_unit_test(test_load_into),
        cmocka_unit_test(test_out_of_memory_messages),
        cmocka_unit_test(test_load_into_large),
        cmocka_unit_test(test_sweep_temporaries),
    };
    return cmocka_run_group_tests_name("snapshot", tests, setup, teardown);
}
