/* tests/fuzz/fuzz_store.c - libFuzzer target: a store whose delta file or manifest holds arbitrary bytes.
 *
 * A small store (version 1 full, version 2 a delta of it) is built once. Each
 * input's first byte picks what it replaces: 0 the delta file of version 2
 * (then restore(2) must give GCK_OK with exactly version 2's content, or a
 * clean error), anything else the manifest (then open, verify and restore of
 * every listed version must each succeed or fail cleanly). No crash, hang,
 * leak or sanitizer report; every failure says why.
 * GCK_FUZZ_WRITE_SEEDS=DIR writes seed inputs (the real delta and manifest)
 * to DIR instead of fuzzing. */
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
static char g_want_cid[4][24];

static gck_snapshot *version(int v)
{
    gck_snapshot *s = NULL;
    if (gck_snapshot_create((uint64_t)v, &s) != GCK_OK)
        abort();
    float w[300];
    double b[17];
    for (int i = 0; i < 300; i++)
        w[i] = (float)i * 0.25f + (float)v * (i % 3 == 0 ? 0.001f : 0.0f);
    for (int i = 0; i < 17; i++)
        b[i] = (double)i;
    const int64_t ws[2] = {30, 10}, bs = 17, vs = v == 1 ? 3 : 5;
    unsigned char blob[40];
    memset(blob, v, sizeof blob);
    if (gck_snapshot_add_tensor(s, "w", GCK_DTYPE_F32, ws, 2, w) != GCK_OK ||
        gck_snapshot_add_tensor(s, "b", GCK_DTYPE_F64, &bs, 1, b) != GCK_OK ||
        gck_snapshot_add_tensor(s, "v", GCK_DTYPE_F32, &vs, 1, w) != GCK_OK ||
        gck_snapshot_set_optimizer_state(s, "w", blob, sizeof blob) != GCK_OK ||
        gck_snapshot_set_metadata(s, "k", "x") != GCK_OK)
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

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(g_dir, sizeof g_dir, "%s/gck_fuzz_store_%d", root, (int)getpid());
    gck_store_config c;
    gck_store_config_init(&c);
    c.policy.delta_threshold_bytes = 0, c.policy.keep_every_n = 0;
    gck_store *st = NULL;
    if (gck_store_open(g_dir, &c, &st) != GCK_OK)
        abort();
    for (int v = 1; v <= 2; v++) {
        gck_snapshot *s = version(v);
        if (gck_store_save(st, s, NULL, 0, NULL) != GCK_OK)
            abort();
        gck_tensor_info t;
        for (size_t i = 0; i < gck_snapshot_num_tensors(s) && v == 2; i++)
            if (gck_snapshot_tensor(s, i, &t) == GCK_OK && i < 4)
                snprintf(g_want_cid[i], sizeof g_want_cid[i], "%s", t.content_id);
        gck_snapshot_destroy(s);
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
        char p[512];
        for (int k = 0; k < 2; k++) {
            snprintf(p, sizeof p, "%s/%s", seeds, k ? "manifest" : "delta");
            const size_t len = k ? g_manifest_len : g_delta_len;
            char *buf = malloc(len + 1);
            buf[0] = (char)k;
            memcpy(buf + 1, k ? g_manifest_bytes : g_delta_bytes, len);
            spit(p, buf, len + 1);
            free(buf);
        }
        exit(0);
    }
    return 0;
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
    const int manifest = data[0] != 0;
    spit(manifest ? g_manifest : g_delta, data + 1, size - 1);
    gck_store *st = NULL;
    const gck_status so = gck_store_open(g_dir, NULL, &st);
    if (so != GCK_OK) {
        if (gck_last_error()[0] == '\0' || !manifest)
            abort(); /* the real manifest always opens */
    } else if (manifest) {
        size_t k = 0;
        if (gck_store_verify(st, &k) != GCK_OK && gck_last_error()[0] == '\0')
            abort();
        restore_all(st);
    } else {
        gck_snapshot *s = NULL;
        const gck_status sr = gck_store_restore(st, 2, &s);
        if (sr == GCK_OK) {
            /* accepted: then it is exactly version 2 */
            gck_tensor_info t;
            for (size_t i = 0; i < gck_snapshot_num_tensors(s); i++)
                if (i >= 4 || gck_snapshot_tensor(s, i, &t) != GCK_OK || strcmp(t.content_id, g_want_cid[i]) != 0)
                    abort();
            gck_snapshot_destroy(s);
        } else if (gck_last_error()[0] == '\0') {
            abort();
        }
    }
    gck_store_close(st);
    /* put the real files back for the next input (open's gc removes files a
     * fuzzed manifest does not name) */
    spit(g_manifest, g_manifest_bytes, g_manifest_len);
    spit(g_delta, g_delta_bytes, g_delta_len);
    spit(g_full, g_full_bytes, g_full_len);
    return 0;
}
