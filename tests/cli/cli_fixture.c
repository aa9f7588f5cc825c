/* tests/cli/cli_fixture.c - writes the deterministic files test_cli.sh runs the CLI on.
 *
 *   cli_fixture basic PATH          every kind of content: f32/f64/f16/bf16/i64/u8 tensors,
 *                                   a scalar, an empty tensor, metadata, optimizer blobs, loss cid
 *   cli_fixture nonfinite PATH      tensors with NaN and Inf (norms null in JSON)
 *   cli_fixture pair A B            two files for `diff`: same, changed, retyped, reshaped,
 *                                   only-in-one tensors and blobs
 *   cli_fixture store DIR REFDIR    a store of 5 versions (full 1, delta 2<-1 tagged "best",
 *                                   full 3, delta 4<-3, delta 5<-4), and REFDIR/v<N>.safetensors,
 *                                   gck_snapshot_save of each version's snapshot
 *   cli_fixture writer DIR STOP     a training job's writer: saves version after version of the
 *                                   same run into a new store (3 kept, every 4th full, the tag
 *                                   "best" moved every 5th) until the file STOP exists
 *   cli_fixture expect V PATH       gck_snapshot_save of version V's snapshot (as `store` saves it)
 *   cli_fixture sharded FILE DIR N  FILE's snapshot saved as a sharded directory by N writers
 *
 * Values are bit patterns written in this CPU's order, so files are the same
 * on every CPU (safetensors is little-endian; the library converts). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/gradckpt.h>

static int bad;

static void check(gck_status st, const char *what)
{
    if (st != GCK_OK) {
        fprintf(stderr, "cli_fixture: %s: %s\n", what, gck_last_error());
        bad = 1;
    }
}

static void add(gck_snapshot *s, const char *name, gck_dtype d, const int64_t *shape, size_t ndim, const void *data)
{
    check(gck_snapshot_add_tensor(s, name, d, shape, ndim, data), name);
}

static void save(gck_snapshot *s, const char *path)
{
    if (!bad)
        check(gck_snapshot_save(s, path), path);
    gck_snapshot_destroy(s);
}

static int write_basic(const char *path)
{
    gck_snapshot *s = NULL;
    check(gck_snapshot_create(1234, &s), "create");
    if (s == NULL)
        return 1;
    check(gck_snapshot_set_timestamp(s, 1700000000), "timestamp");
    const float w[6] = {0.5f, -1.0f, 2.25f, 3.0f, -0.0f, 1e-8f};
    const double bias[3] = {1.0 / 3.0, -2e300, 4.0}; /* the norm needs the overflow-safe pass */
    const float emb[8] = {0.125f, -0.25f, 0.375f, -0.5f, 0.625f, -0.75f, 0.875f, -1.0f};
    const int64_t ids[2] = {-5, INT64_C(1) << 40};
    const uint8_t u8[4] = {0, 1, 254, 255};
    const uint16_t f16[2] = {0x3c00, 0xc000}, bf16[2] = {0x3f80, 0xc000}; /* 1, -2 */
    const double scalar = -7.5;
    const int64_t s23[2] = {2, 3}, s3[1] = {3}, s42[2] = {4, 2}, s2[1] = {2}, s4[1] = {4}, s0[1] = {0};
    add(s, "layer.weight", GCK_DTYPE_F32, s23, 2, w);
    add(s, "layer.bias", GCK_DTYPE_F64, s3, 1, bias);
    add(s, "embed", GCK_DTYPE_F32, s42, 2, emb);
    add(s, "ids", GCK_DTYPE_I64, s2, 1, ids);
    add(s, "bytes", GCK_DTYPE_U8, s4, 1, u8);
    add(s, "half", GCK_DTYPE_F16, s2, 1, f16);
    add(s, "brain", GCK_DTYPE_BF16, s2, 1, bf16);
    add(s, "scalar", GCK_DTYPE_F64, NULL, 0, &scalar);
    add(s, "empty", GCK_DTYPE_F32, s0, 1, w);
    check(gck_snapshot_set_metadata(s, "run", "cli-golden"), "metadata");
    check(gck_snapshot_set_metadata(s, "lr", "0.001"), "metadata");
    check(gck_snapshot_set_metadata(s, "note", "two words"), "metadata");
    check(gck_snapshot_set_optimizer_state(s, "layer.weight", "0123456789abcdef", 16), "blob");
    check(gck_snapshot_set_optimizer_state(s, "layer.bias", "momentum", 8), "blob");
    check(gck_snapshot_set_loss_cid(s, "xxh3:0123456789abcdef"), "loss cid");
    save(s, path);
    return bad;
}

static int write_nonfinite(const char *path)
{
    gck_snapshot *s = NULL;
    check(gck_snapshot_create(7, &s), "create");
    if (s == NULL)
        return 1;
    check(gck_snapshot_set_timestamp(s, 1600000000), "timestamp");
    const uint32_t nanbits = 0x7fc00000u;
    const uint64_t infbits = UINT64_C(0x7ff0000000000000);
    float w[3] = {1.0f, 0.0f, 2.0f};
    double v[2] = {0.0, 1.0};
    memcpy(&w[1], &nanbits, sizeof nanbits);
    memcpy(&v[0], &infbits, sizeof infbits);
    const float ok[2] = {3.0f, 4.0f};
    const int64_t s3[1] = {3}, s2[1] = {2};
    add(s, "w", GCK_DTYPE_F32, s3, 1, w);
    add(s, "v", GCK_DTYPE_F64, s2, 1, v);
    add(s, "ok", GCK_DTYPE_F32, s2, 1, ok);
    save(s, path);
    return bad;
}

static int write_pair(const char *pa, const char *pb)
{
    gck_snapshot *a = NULL, *b = NULL;
    check(gck_snapshot_create(1, &a), "create");
    check(gck_snapshot_create(2, &b), "create");
    if (a == NULL || b == NULL)
        return 1;
    check(gck_snapshot_set_timestamp(a, 1700000001), "timestamp");
    check(gck_snapshot_set_timestamp(b, 1700000002), "timestamp");
    const float same[3] = {1.0f, 2.0f, 3.0f}, f2[2] = {1.0f, 2.0f}, f4[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    const double ca[2] = {3.0, 4.0}, cb[2] = {3.0, 5.0}, d2[2] = {1.0, 2.0};
    const int64_t na[2] = {1, 2}, nb[2] = {1, 3};
    const int32_t gone = 9;
    const uint8_t fresh[2] = {1, 2};
    const int64_t s3[1] = {3}, s2[1] = {2}, s22[2] = {2, 2}, s4[1] = {4}, s1[1] = {1};
    add(a, "same", GCK_DTYPE_F32, s3, 1, same);
    add(b, "same", GCK_DTYPE_F32, s3, 1, same);
    add(a, "changed", GCK_DTYPE_F64, s2, 1, ca); /* distance 1, relative 1/5 */
    add(b, "changed", GCK_DTYPE_F64, s2, 1, cb);
    add(a, "retyped", GCK_DTYPE_F32, s2, 1, f2);
    add(b, "retyped", GCK_DTYPE_F64, s2, 1, d2);
    add(a, "reshaped", GCK_DTYPE_F32, s22, 2, f4);
    add(b, "reshaped", GCK_DTYPE_F32, s4, 1, f4);
    add(a, "counts", GCK_DTYPE_I64, s2, 1, na);
    add(b, "counts", GCK_DTYPE_I64, s2, 1, nb);
    add(a, "gone", GCK_DTYPE_I32, s1, 1, &gone);
    add(b, "fresh", GCK_DTYPE_U8, s2, 1, fresh);
    check(gck_snapshot_set_optimizer_state(a, "same", "abc", 3), "blob");
    check(gck_snapshot_set_optimizer_state(b, "same", "abc", 3), "blob");
    check(gck_snapshot_set_optimizer_state(a, "changed", "xyz", 3), "blob");
    check(gck_snapshot_set_optimizer_state(b, "changed", "xyw", 3), "blob");
    check(gck_snapshot_set_optimizer_state(a, "gone", "q", 1), "blob");
    check(gck_snapshot_set_optimizer_state(b, "fresh", "n", 1), "blob");
    save(a, pa);
    save(b, pb);
    return bad;
}

/* Version v of a small training run: weights drift a little each step. */
static gck_snapshot *store_snapshot(int v)
{
    gck_snapshot *s = NULL;
    check(gck_snapshot_create((uint64_t)v * 10, &s), "create");
    if (s == NULL)
        return NULL;
    check(gck_snapshot_set_timestamp(s, 1700000000 + (uint64_t)v), "timestamp");
    float w[256];
    double m[128];
    for (int i = 0; i < 256; i++)
        w[i] = 0.01f * (float)(i % 17) - 0.05f + 1e-4f * (float)(v * (i % 5));
    for (int i = 0; i < 128; i++)
        m[i] = 0.5 + 0.001 * (double)i + 1e-6 * (double)(v * v);
    const int64_t s256[1] = {256}, s128[1] = {128};
    add(s, "w", GCK_DTYPE_F32, s256, 1, w);
    add(s, "m", GCK_DTYPE_F64, s128, 1, m);
    char val[32];
    snprintf(val, sizeof val, "%d", v);
    check(gck_snapshot_set_metadata(s, "version", val), "metadata");
    check(gck_snapshot_set_optimizer_state(s, "w", "adam-state", 10), "blob");
    return s;
}

static int write_store(const char *dir, const char *refdir)
{
    gck_store_config cfg;
    gck_store_config_init(&cfg);
    cfg.policy.max_checkpoints = 10;
    cfg.policy.keep_every_n = 3;
    cfg.policy.delta_threshold_bytes = 0; /* every version a delta but for keep_every_n */
    gck_store *st = NULL;
    check(gck_store_open(dir, &cfg, &st), dir);
    if (st == NULL)
        return 1;
    for (int v = 1; v <= 5 && !bad; v++) {
        gck_snapshot *s = store_snapshot(v);
        if (s == NULL)
            break;
        const char *tags[1] = {"best"};
        uint64_t got = 0;
        check(gck_store_save(st, s, tags, v == 2 ? 1 : 0, &got), "store save");
        if (!bad && got != (uint64_t)v) {
            fprintf(stderr, "cli_fixture: saved as version %" PRIu64 ", expected %d\n", got, v);
            bad = 1;
        }
        char path[4096];
        snprintf(path, sizeof path, "%s/v%d.safetensors", refdir, v);
        save(s, path);
    }
    gck_store_close(st);
    return bad;
}

static int write_loop(const char *dir, const char *stop)
{
    gck_store_config cfg;
    gck_store_config_init(&cfg);
    cfg.policy.max_checkpoints = 3; /* every save evicts, rebasing a delta now and then */
    cfg.policy.keep_every_n = 4;
    cfg.policy.delta_threshold_bytes = 0;
    gck_store *st = NULL;
    check(gck_store_open(dir, &cfg, &st), dir);
    uint64_t best = 0;
    for (int v = 1; !bad && v < 1000000; v++) {
        FILE *f = fopen(stop, "rb");
        if (f != NULL) {
            fclose(f);
            break;
        }
        gck_snapshot *s = store_snapshot(v);
        if (s == NULL)
            break;
        check(gck_store_save(st, s, NULL, 0, NULL), "store save");
        gck_snapshot_destroy(s);
        if (!bad && v % 5 == 0) { /* a moving tag, as the demo's "best" */
            check(gck_store_tag(st, (uint64_t)v, "best"), "tag");
            if (best != 0)
                check(gck_store_untag(st, best, "best"), "untag");
            best = (uint64_t)v;
        }
    }
    gck_store_close(st);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "basic") == 0)
        return write_basic(argv[2]);
    if (argc == 3 && strcmp(argv[1], "nonfinite") == 0)
        return write_nonfinite(argv[2]);
    if (argc == 4 && strcmp(argv[1], "pair") == 0)
        return write_pair(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "store") == 0)
        return write_store(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "writer") == 0)
        return write_loop(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "expect") == 0) {
        save(store_snapshot(atoi(argv[2])), argv[3]);
        return bad;
    }
    if (argc == 5 && strcmp(argv[1], "sharded") == 0) {
        gck_snapshot *s = NULL;
        check(gck_snapshot_load(argv[2], &s), argv[2]);
        if (!bad)
            check(gck_snapshot_save_sharded(s, argv[3], (size_t)atoi(argv[4])), argv[3]);
        gck_snapshot_destroy(s);
        return bad;
    }
    fprintf(stderr, "usage: cli_fixture basic PATH | nonfinite PATH | pair A B | store DIR REFDIR |\n"
                    "       writer DIR STOP | expect V PATH | sharded FILE DIR N\n");
    return 2;
}
