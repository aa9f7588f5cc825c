/* tests/fuzz/fuzz_store.c - libFuzzer target: a store whose data file or manifest holds arbitrary bytes.
 *
 * A small store (version 1 full, version 2 a delta of it in the current
 * format, 5: one of its items is stored rotated) is built once. Each
 * input's first byte picks what it replaces: 0 the delta file of version 2,
 * 2 the full file of version 1 (then restoring that version must give GCK_OK
 * with exactly its content - every tensor's dtype, shape and bytes, every
 * blob, the step, timestamp, loss cid and metadata - or a clean error; the
 * same through a read-only handle), anything else the manifest (then open,
 * open_readonly, verify and restore of every listed version must each
 * succeed or fail cleanly). No crash, hang, leak or sanitizer report; every
 * failure says why.
 * GCK_FUZZ_WRITE_SEEDS=DIR writes seed inputs (the real delta, full file and
 * manifest, and each data file with a changed digit in its step) to DIR
 * instead of fuzzing. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gradckpt/gradckpt.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char g_dir[96], g_delta[256], g_manifest[256], g_full[256];
static char *g_delta_bytes, *g_manifest_bytes, *g_full_bytes;
static size_t g_delta_len, g_manifest_len, g_full_len;
static gck_snapshot *g_want[3]; /* versions 1 and 2 as saved */

static gck_snapshot *version(int v)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create((uint64_t)v, &s) != GCK_OK)
        abort();
    float w[300], u[5];
    double b[17];
    for (int i = 0; i < 300; i++)
        w[i] = (float)i * 0.25f + (float)v * (i % 3 == 0 ? 0.001f : 0.0f);
    /* "v" changes shape (stored raw in the delta); version 2's has both
     * signs, so the delta rotates it and says format 5 */
    for (int i = 0; i < 5; i++)
        u[i] = v == 2 && (i & 1) ? -w[i] : w[i];
    for (int i = 0; i < 17; i++)
        b[i] = (double)i;
    const int64_t ws[2] = {30, 10}, bs = 17, vs = v == 1 ? 3 : 5;
    unsigned char blob[40];
    memset(blob, v, sizeof blob);
    char note[8];
    snprintf(note, sizeof note, "n%d", v);
    if (gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, ws, 2, w) != GCK_OK ||
        gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, &bs, 1, b) != GCK_OK ||
        gck_snapshot_add_tensor(s, "v", GCK_DTYPE_F32, &vs, 1, u) != GCK_OK ||
        gck_snapshot_set_optimizer_state(s, "w", blob, sizeof blob) != GCK_OK ||
        gck_snapshot_set_metadata(s, "k", "x") != GCK_OK || gck_snapshot_set_metadata(s, "note", note) != GCK_OK ||
        gck_snapshot_set_loss_cid(s, note) != GCK_OK || gck_snapshot_set_timestamp(s, 1700000000u + (unsigned)v) != GCK_OK)
        abort();
    return s;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        abort();
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc(*len + 1);
    if (b == NULL || fread(b, 1, *len, f) != *len)
        abort();
    fclose(f);
    return b;
}

static void spit(const char *path, const void *p, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(p, 1, len, f) != len)
        abort();
    fclose(f);
}

/* The store directory and its files (flat: no subdirectories), at exit:
 * each run would otherwise leave one in /dev/shm. */
static void remove_dir(void)
{
    DIR *d = opendir(g_dir);
    if (d == NULL)
        return;
    struct dirent *de;
    char p[512];
    while ((de = readdir(d)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            snprintf(p, sizeof p, "%s/%s", g_dir, de->d_name);
            (void)unlink(p);
        }
    closedir(d);
    (void)rmdir(g_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/gck_fuzz_store_%d", root, (int)getpid());
    atexit(remove_dir);
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.delta_threshold_bytes = 0, c.policy.keep_every_n = 0;
    gck_store *st = NULL;
    if (gck_store_open(g_dir, &c, &st) != GCK_OK)
        abort();
    for (int v = 1; v <= 2; v++) {
        g_want[v] = version(v);
        if (gck_store_save(st, g_want[v], NULL, 0, NULL) != GCK_OK)
            abort();
    }
    gck_store_close(st);
    DIR *d = opendir(g_dir);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strstr(de->d_name, ".delta.safetensors") != NULL)
            snprintf(g_delta, sizeof g_delta, "%s/%s", g_dir, de->d_name);
        else if (strstr(de->d_name, ".safetensors") != NULL && de->d_name[0] == 'v')
            snprintf(g_full, sizeof g_full, "%s/%s", g_dir, de->d_name);
    }
    closedir(d);
    snprintf(g_manifest, sizeof g_manifest, "%s/manifest.json", g_dir);
    if (g_delta[0] == '\0' || g_full[0] == '\0')
        abort();
    g_delta_bytes = slurp(g_delta, &g_delta_len);
    g_full_bytes = slurp(g_full, &g_full_len);
    g_manifest_bytes = slurp(g_manifest, &g_manifest_len);
    const char *seeds = getenv("GCK_FUZZ_WRITE_SEEDS");
    if (seeds != NULL) {
        /* the files as they are, and each with its step's digit changed */
        const char *names[3] = {"delta", "manifest", "full"};
        const char *bytes[3] = {g_delta_bytes, g_manifest_bytes, g_full_bytes};
        const size_t lens[3] = {g_delta_len, g_manifest_len, g_full_len};
        for (int k = 0; k < 3; k++) {
            for (int changed = 0; changed <= (k != 1); changed++) {
                char p[512];
                snprintf(p, sizeof p, "%s/%s%s", seeds, names[k], changed ? "_step" : "");
                char *buf = malloc(lens[k] + 1);
                buf[0] = (char)(k == 2 ? 2 : k);
                memcpy(buf + 1, bytes[k], lens[k]);
                char *step = NULL;
                for (size_t i = 1; changed && step == NULL && i + 18 <= lens[k] + 1; i++)
                    if (memcmp(buf + i, "\"gradckpt.step\":\"", 17) == 0)
                        step = buf + i;
                if (changed && step == NULL)
                    abort();
                if (step != NULL)
                    step[17] = step[17] == '7' ? '8' : '7';
                spit(p, buf, lens[k] + 1);
                free(buf);
            }
        }
        exit(0);
    }
    return 0;
}

/* Everything a snapshot holds, equal? */
static int same(const gck_snapshot *a, const gck_snapshot *b)
{
    const char *la = gck_snapshot_loss_cid(a), *lb = gck_snapshot_loss_cid(b);
    if (gck_snapshot_step(a) != gck_snapshot_step(b) || gck_snapshot_timestamp(a) != gck_snapshot_timestamp(b) ||
        (la == NULL) != (lb == NULL) || (la != NULL && strcmp(la, lb) != 0) ||
        gck_snapshot_num_metadata(a) != gck_snapshot_num_metadata(b) ||
        gck_snapshot_num_tensors(a) != gck_snapshot_num_tensors(b) ||
        gck_snapshot_num_optimizer_states(a) != gck_snapshot_num_optimizer_states(b))
        return 0;
    for (size_t i = 0; i < gck_snapshot_num_metadata(a); i++) {
        const char *k = gck_snapshot_metadata_key(a, i), *kb = gck_snapshot_metadata_key(b, i);
        if (kb == NULL || strcmp(k, kb) != 0 || strcmp(gck_snapshot_metadata(a, k), gck_snapshot_metadata(b, k)) != 0)
            return 0;
    }
    for (size_t i = 0; i < gck_snapshot_num_tensors(a); i++) {
        gck_tensor_info x, y;
        if (gck_snapshot_tensor(a, i, &x) != GCK_OK || gck_snapshot_tensor(b, i, &y) != GCK_OK ||
            strcmp(x.name, y.name) != 0 || x.dtype != y.dtype || x.ndim != y.ndim || x.nbytes != y.nbytes ||
            (x.ndim > 0 && memcmp(x.shape, y.shape, x.ndim * sizeof *x.shape) != 0) ||
            (x.nbytes > 0 && memcmp(x.data, y.data, x.nbytes) != 0))
            return 0;
    }
    for (size_t i = 0; i < gck_snapshot_num_optimizer_states(a); i++) {
        const char *pa, *pb;
        const void *da, *db;
        size_t na, nb;
        if (gck_snapshot_optimizer_state(a, i, &pa, &da, &na) != GCK_OK ||
            gck_snapshot_optimizer_state(b, i, &pb, &db, &nb) != GCK_OK || strcmp(pa, pb) != 0 || na != nb ||
            (na > 0 && memcmp(da, db, na) != 0))
            return 0;
    }
    return 1;
}

/* Restores version v: exactly what was saved, or a clean error. */
static void restore_exact(gck_store *st, int v)
{
    gck_snapshot *s = NULL;
    if (gck_store_restore(st, (uint64_t)v, &s) == GCK_OK) {
        if (!same(s, g_want[v]))
            abort(); /* accepted, so it must be exactly version v */
        gck_snapshot_destroy(s);
    } else if (gck_last_error()[0] == '\0') {
        abort();
    }
}

static void restore_all(gck_store *st)
{
    uint64_t vs[16];
    const size_t n = gck_store_versions(st, vs, 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        gck_snapshot *s = NULL;
        if (gck_store_restore(st, vs[i], &s) == GCK_OK)
            gck_snapshot_destroy(s);
        else if (gck_last_error()[0] == '\0')
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const int manifest = data[0] != 0 && data[0] != 2, full = data[0] == 2;
    spit(manifest ? g_manifest : full ? g_full : g_delta, data + 1, size - 1);
    /* a reader first (it must not change the directory the writer then opens), then the writer */
    for (int readonly = 1; readonly >= 0; readonly--) {
        gck_store *st = NULL;
        const gck_status so = readonly ? gck_store_open_readonly(g_dir, &st) : gck_store_open(g_dir, NULL, &st);
        if (so != GCK_OK) {
            if (gck_last_error()[0] == '\0' || !manifest)
                abort(); /* the real manifest always opens */
            continue;
        }
        if (manifest) {
            size_t k = 0;
            if (gck_store_verify(st, &k) != GCK_OK && gck_last_error()[0] == '\0')
                abort();
            restore_all(st);
        } else {
            size_t k = 0;
            if (gck_store_verify(st, &k) == GCK_OK && k != 2)
                abort(); /* verify passed: every version checked */
            restore_exact(st, full ? 1 : 2);
            if (full)
                restore_exact(st, 2); /* its base is the fuzzed file */
        }
        gck_store_close(st);
    }
    /* put the real files back for the next input (open's gc removes files a
     * fuzzed manifest does not name) */
    spit(g_manifest, g_manifest_bytes, g_manifest_len);
    spit(g_delta, g_delta_bytes, g_delta_len);
    spit(g_full, g_full_bytes, g_full_len);
    return 0;
}
