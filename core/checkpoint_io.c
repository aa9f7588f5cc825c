/* core/checkpoint_io.c - gck_checkpoint_save / gck_checkpoint_load through the snapshot format.
 *
 * A checkpoint file is a snapshot: one 1-D tensor per layer named by its id
 * (values not copied on save), step = the checkpoint's step, timestamp =
 * created_at, and "gradckpt.checkpoint.*" / "gradckpt.layer_step.<id>" keys
 * for the rest. Load rebuilds norms from the values and checks the stored
 * checksum with the recorded algorithm. The pre-clip norm and the clip
 * factor, which cannot be rebuilt from the clipped values, are stored as
 * "gradckpt.checkpoint.norm_before_clip" / ".clip_coef" (%.17g, exact
 * through the round trip); files written before those keys existed load
 * with norm_before_clip = the global norm and clip_coef = 1.0. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gradckpt/kernels.h>

#include "alloc_internal.h"
#include "checkpoint_internal.h"
#include "snapshot_internal.h"

#define GCK_CK_PREFIX GCK_METADATA_PREFIX "checkpoint."
#define GCK_LAYER_STEP_PREFIX GCK_METADATA_PREFIX "layer_step."

static const char *const gck_checksum_names[] = {"fnv1a64", "xxh3_64", "none"};

static gck_status gck_set_u64_key(gck_snapshot *s, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return gck_snapshot_set_sysmeta(s, key, buf);
}

static gck_status gck_set_f64_key(gck_snapshot *s, const char *key, double v)
{
    char buf[GCK_F64_TEXT_MAX];
    gck_format_f64(v, buf);
    return gck_snapshot_set_sysmeta(s, key, buf);
}

/* Everything of c but the values' bytes into s (the values borrowed). */
static gck_status gck_checkpoint_fields(const gck_checkpoint *c, gck_snapshot *s)
{
    char key[GCK_NAME_MAX + 64], hex[24];
    for (size_t i = 0; i < c->n_layers; i++) {
        const gck_ckpt_layer *l = &c->layers[i];
        GCK_TRY(gck_snapshot_add_borrowed(s, l->id, c->dtype, l->values, l->n));
        snprintf(key, sizeof key, GCK_LAYER_STEP_PREFIX "%s", l->id);
        GCK_TRY(gck_set_u64_key(s, key, l->step));
    }
    snprintf(hex, sizeof hex, "%016" PRIx64, c->checksum);
    GCK_TRY(gck_set_u64_key(s, GCK_CK_PREFIX "id", c->id));
    GCK_TRY(gck_set_u64_key(s, GCK_CK_PREFIX "compressed_size", c->compressed_size));
    GCK_TRY(gck_snapshot_set_sysmeta(s, GCK_CK_PREFIX "checksum_algo", gck_checksum_names[c->checksum_algo]));
    GCK_TRY(gck_snapshot_set_sysmeta(s, GCK_CK_PREFIX "checksum", hex));
    GCK_TRY(gck_set_f64_key(s, GCK_CK_PREFIX "norm_before_clip", c->norm_before_clip));
    GCK_TRY(gck_set_f64_key(s, GCK_CK_PREFIX "clip_coef", c->clip_coef));
    return GCK_OK;
}

gck_status gck_checkpoint_save(const gck_checkpoint *c, const char *path)
{
    GCK_CHECK_ARG(c != NULL && path != NULL, "gck_checkpoint_save: NULL argument");
    gck_snapshot *s = NULL;
    GCK_TRY_CTX(gck_snapshot_create(c->step, &s), "%.300s: checkpoint %llu", path, (unsigned long long)c->id);
    s->timestamp = c->created_at;
    gck_status st = gck_checkpoint_fields(c, s);
    if (st != GCK_OK) {
        st = gck_fail_ctx(st, "%.300s: checkpoint %llu", path, (unsigned long long)c->id);
        goto done;
    }
    st = gck_snapshot_save(s, path); /* its messages name the path */
done:
    gck_snapshot_destroy(s);
    return st;
}

#define GCK_CK_CORRUPT(...) gck_fail(GCK_ERR_CORRUPT, __VA_ARGS__)

static gck_status gck_checkpoint_from(const char *path, const gck_snapshot *s, gck_checkpoint **out)
{
    uint64_t id, csize, sum;
    const char *algo_s = gck_snapshot_sysmeta(s, GCK_CK_PREFIX "checksum_algo");
    const char *sum_s = gck_snapshot_sysmeta(s, GCK_CK_PREFIX "checksum");
    if (!gck_parse_u64(gck_snapshot_sysmeta(s, GCK_CK_PREFIX "id"), &id) ||
        !gck_parse_u64(gck_snapshot_sysmeta(s, GCK_CK_PREFIX "compressed_size"), &csize) || algo_s == NULL ||
        sum_s == NULL)
        return GCK_CK_CORRUPT("%.300s: not a gradckpt checkpoint file (gradckpt.checkpoint.* keys missing)", path);
    int algo = -1;
    for (int a = 0; a < 3; a++)
        if (strcmp(algo_s, gck_checksum_names[a]) == 0)
            algo = a;
    char *end;
    sum = strtoull(sum_s, &end, 16);
    if (algo < 0 || *end != '\0' || strlen(sum_s) != 16)
        return GCK_CK_CORRUPT("%.300s: bad checksum fields '%.40s' / '%.40s'", path, algo_s, sum_s);
    /* absent (older files): the global norm and 1.0, set below */
    const char *pre_s = gck_snapshot_sysmeta(s, GCK_CK_PREFIX "norm_before_clip");
    const char *coef_s = gck_snapshot_sysmeta(s, GCK_CK_PREFIX "clip_coef");
    double pre = NAN, coef = 1.0;
    if ((pre_s != NULL && (!gck_parse_f64(pre_s, &pre) || pre < 0.0)) ||
        (coef_s != NULL && (!gck_parse_f64(coef_s, &coef) || !(coef >= 0.0 && coef <= 1.0))))
        return GCK_CK_CORRUPT("%.300s: bad clip fields norm_before_clip '%.40s' / clip_coef '%.40s'", path,
                              pre_s ? pre_s : "(absent)", coef_s ? coef_s : "(absent)");
    const size_t n = s->tensors.n;
    gck_dtype dt = GCK_DTYPE_F64;
    for (size_t i = 0; i < n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        if (i == 0)
            dt = t->dtype;
        if (t->ndim != 1 || t->dtype != dt || (dt != GCK_DTYPE_F64 && dt != GCK_DTYPE_F32 && dt != GCK_DTYPE_BF16))
            return GCK_CK_CORRUPT("%.300s: layer '%.200s' is not a 1-D tensor of the file's F32/F64/BF16 dtype", path,
                                  t->name);
    }
    const size_t list_bytes = (n ? n : 1) * (sizeof(const char *) + sizeof(size_t));
    const char **ids = gck_malloc((n ? n : 1) * sizeof *ids);
    size_t *lens = gck_malloc((n ? n : 1) * sizeof *lens);
    gck_checkpoint *c = NULL;
    gck_status st = GCK_OK;
    if (ids == NULL || lens == NULL) {
        st = gck_fail_ctx(gck_fail_oom("layer list", list_bytes), "%.300s", path);
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        ids[i] = t->name;
        lens[i] = (size_t)t->shape[0];
    }
    c = gck_checkpoint_new(dt, n, ids, lens, NULL, 0);
    if (c == NULL) {
        st = gck_fail_ctx(gck_fail_oom("checkpoint values", gck_checkpoint_arena_bytes(dt, n, lens)), "%.300s", path);
        goto done;
    }
    char key[GCK_NAME_MAX + 64];
    for (size_t i = 0; i < n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        gck_ckpt_layer *l = &c->layers[i];
        snprintf(key, sizeof key, GCK_LAYER_STEP_PREFIX "%s", t->name);
        if (!gck_parse_u64(gck_snapshot_sysmeta(s, key), &l->step)) {
            st = GCK_CK_CORRUPT("%.300s: layer '%.200s' has no gradckpt.layer_step", path, t->name);
            goto done;
        }
        if (t->nbytes)
            memcpy(l->values, t->data, t->nbytes);
        l->sumsq = gck_values_sumsq(l->values, l->n, dt);
        l->norm = gck_layer_norm(l->values, l->n, dt, l->sumsq);
    }
    c->global_norm = gck_global_norm_of(c->layers, n);
    c->norm_before_clip = pre_s != NULL ? pre : c->global_norm;
    c->clip_coef = coef;
    gck_checkpoint_seal(c, (gck_checksum)algo);
    if (c->checksum != sum) {
        st = GCK_CK_CORRUPT("%.300s: checkpoint checksum mismatch (file says %016" PRIx64 ")", path, sum);
        goto done;
    }
    c->id = id;
    c->step = s->step;
    c->created_at = s->timestamp;
    c->compressed_size = (size_t)csize;
    *out = c;
    c = NULL; /* the caller's */
done:
    free(ids), free(lens);
    gck_checkpoint_release(c);
    return st;
}

gck_status gck_checkpoint_load(const char *path, gck_checkpoint **out)
{
    GCK_CHECK_ARG(path != NULL && out != NULL, "gck_checkpoint_load: NULL argument");
    gck_snapshot *s = NULL;
    GCK_TRY(gck_snapshot_load(path, &s));
    const gck_status st = gck_checkpoint_from(path, s, out);
    gck_snapshot_destroy(s);
    return st;
}
