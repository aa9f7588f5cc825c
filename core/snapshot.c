/* core/snapshot.c - the training snapshot object: tensors, optimizer blobs, metadata, content ids. */
#include "snapshot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "alloc_internal.h"
#include "checksum_internal.h"
#include "json_text_internal.h"
#include "threads_internal.h"

void gck_content_id(const void *data, size_t n, gck_dtype dtype, char out[24])
{
    gck_hasher h;
    gck_hasher_init(&h, GCK_CHECKSUM_XXH3_64);
    gck_hasher_update_values(&h, data, n, dtype);
    snprintf(out, 24, "xxh3:%016llx", (unsigned long long)gck_hasher_final(&h));
}

gck_status gck_snapshot_create(uint64_t step, gck_snapshot **out)
{
    GCK_CHECK_ARG(out != NULL, "gck_snapshot_create: out is NULL");
    gck_snapshot *s = gck_calloc(1, sizeof *s);
    if (s == NULL)
        return gck_fail_oom("snapshot", sizeof *s);
    s->step = step;
    const time_t now = time(NULL);
    s->timestamp = now > 0 ? (uint64_t)now : 0;
    *out = s;
    return GCK_OK;
}

void gck_snap_tensor_free(gck_snap_tensor *t)
{
    if (t == NULL)
        return;
    if (!t->borrowed)
        free(t->data);
    free(t->name), free(t->shape), free(t);
}

/* Frees every entry of a metadata vector (keeps its array). */
static void gck_meta_clear(gck_named_vec *mv)
{
    for (size_t i = 0; i < mv->n; i++) {
        gck_snap_meta *m = mv->items[i];
        free(m->name), free(m->value), free(m);
    }
    mv->n = 0;
}

void gck_snapshot_destroy(gck_snapshot *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->tensors.n; i++)
        gck_snap_tensor_free(s->tensors.items[i]);
    for (size_t i = 0; i < s->blobs.n; i++) {
        gck_snap_blob *b = s->blobs.items[i];
        free(b->name), free(b->data), free(b);
    }
    gck_meta_clear(&s->meta);
    gck_meta_clear(&s->sysmeta);
    free(s->meta.items), free(s->sysmeta.items);
    free(s->tensors.items), free(s->blobs.items);
    free(s->loss_cid);
    if (s->map != NULL)
        munmap(s->map, s->map_len);
    if (s->map_fd1 > 0)
        close(s->map_fd1 - 1);
    free(s->arena);
    free(s);
}

gck_status gck_tensor_oom(const char *name, size_t ndim, size_t data_bytes)
{
    const size_t bytes = sizeof(gck_snap_tensor) + strlen(name) + 1 + (ndim ? ndim : 1) * sizeof(int64_t);
    return gck_fail_ctx(gck_fail_oom(data_bytes ? "tensor and its values" : "tensor entry", bytes + data_bytes),
                        "tensor '%.200s'", name);
}

gck_status gck_blob_oom(const char *param, size_t len)
{
    return gck_fail_ctx(gck_fail_oom("optimizer state", sizeof(gck_snap_blob) + strlen(param) + 1 + len),
                        "optimizer state '%.200s'", param);
}

/* gck_named_reserve, or the out-of-memory failure for its grown array. */
static gck_status gck_reserve_one(gck_named_vec *v, const char *what)
{
    if (gck_named_reserve(v))
        return GCK_OK;
    return gck_fail_oom(what, (v->cap ? 2 * v->cap : 8) * sizeof *v->items);
}

static gck_status gck_check_key(const char *what, const char *key)
{
    const size_t len = strnlen(key, GCK_NAME_MAX + 1);
    GCK_CHECK_ARG(len > 0, "%s is empty", what);
    GCK_CHECK_ARG(len <= GCK_NAME_MAX, "%s is longer than %d bytes", what, GCK_NAME_MAX);
    GCK_CHECK_ARG(gck_utf8_valid(key), "%s is not valid UTF-8", what);
    return GCK_OK;
}

gck_status gck_check_tensor_name(const char *name)
{
    GCK_TRY(gck_check_key("tensor name", name));
    GCK_CHECK_ARG(strcmp(name, "__metadata__") != 0, "tensor name '__metadata__' is reserved");
    GCK_CHECK_ARG(strncmp(name, GCK_OPTIMIZER_PREFIX, strlen(GCK_OPTIMIZER_PREFIX)) != 0,
                  "tensor name '%.200s' uses the reserved prefix '" GCK_OPTIMIZER_PREFIX "'", name);
    return GCK_OK;
}

gck_status gck_snapshot_adopt_tensor(gck_snapshot *s, gck_snap_tensor *t)
{
    GCK_TRY(gck_check_tensor_name(t->name));
    int found;
    const size_t at = gck_named_find(&s->tensors, t->name, &found);
    GCK_CHECK_ARG(!found, "tensor '%.200s' is already in the snapshot", t->name);
    GCK_TRY_CTX(gck_reserve_one(&s->tensors, "tensor list"), "cannot add tensor '%.200s'", t->name);
    gck_named_insert(&s->tensors, at, t);
    return GCK_OK;
}

/* prod(shape) with overflow and sign checks; 1 for a scalar. */
static gck_status gck_shape_count(const char *name, const int64_t *shape, size_t ndim, size_t *count)
{
    size_t c = 1;
    for (size_t d = 0; d < ndim; d++) {
        GCK_CHECK_ARG(shape[d] >= 0, "tensor '%.200s': dimension %zu is negative (%lld)", name, d,
                      (long long)shape[d]);
        if (!gck_mul_size(c, (size_t)shape[d], &c) || (uint64_t)shape[d] > SIZE_MAX)
            return gck_fail(GCK_ERR_INVALID_ARGUMENT, "tensor '%.200s': element count overflows", name);
    }
    *count = c;
    return GCK_OK;
}

/* A tensor entry for gck_snapshot_add_tensor (copy = 1) and the _ref forms
 * (copy = 0), every argument checked but its id not computed and its name
 * not looked up in s. */
static gck_status gck_new_tensor_entry(const char *name, gck_dtype dtype, const int64_t *shape, size_t ndim,
                                       const void *data, int copy, gck_snap_tensor **out)
{
    GCK_TRY(gck_check_tensor_name(name));
    GCK_CHECK_ARG((unsigned)dtype < GCK_DTYPE_COUNT, "tensor '%.200s': unknown dtype %d", name, (int)dtype);
    GCK_CHECK_ARG(ndim <= GCK_MAX_DIMS, "tensor '%.200s': %zu dimensions (at most %d)", name, ndim, GCK_MAX_DIMS);
    GCK_CHECK_ARG(shape != NULL || ndim == 0, "tensor '%.200s': shape is NULL with %zu dimensions", name, ndim);
    size_t count = 0, nbytes = 0;
    GCK_TRY(gck_shape_count(name, shape, ndim, &count));
    if (!gck_mul_size(count, gck_dtype_size(dtype), &nbytes))
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "tensor '%.200s': byte size overflows", name);
    GCK_CHECK_ARG(data != NULL || nbytes == 0, "tensor '%.200s': data is NULL", name);
    gck_snap_tensor *t = gck_calloc(1, sizeof *t);
    char *n = gck_strdup(name);
    int64_t *sh = gck_malloc((ndim ? ndim : 1) * sizeof *sh);
    void *d = copy ? gck_malloc(nbytes) : (void *)(uintptr_t)data;
    if (t == NULL || n == NULL || sh == NULL || (copy && d == NULL)) {
        free(t), free(n), free(sh);
        if (copy)
            free(d);
        return gck_tensor_oom(name, ndim, copy ? nbytes : 0);
    }
    if (ndim)
        memcpy(sh, shape, ndim * sizeof *sh);
    if (copy && nbytes)
        memcpy(d, data, nbytes);
    *t = (gck_snap_tensor){.name = n, .dtype = dtype, .shape = sh, .ndim = ndim, .data = d, .nbytes = nbytes,
                           .borrowed = !copy};
    *out = t;
    return GCK_OK;
}

/* gck_snapshot_add_tensor (copy = 1) and gck_snapshot_add_tensor_ref (copy = 0). */
static gck_status gck_add_tensor(gck_snapshot *s, const char *name, gck_dtype dtype, const int64_t *shape,
                                 size_t ndim, const void *data, int copy, const char *fn)
{
    GCK_CHECK_ARG(s != NULL && name != NULL, "%s: NULL %s", fn, s ? "name" : "snapshot");
    int found;
    (void)gck_named_find(&s->tensors, name, &found);
    GCK_CHECK_ARG(!found, "tensor '%.200s' is already in the snapshot", name);
    gck_snap_tensor *t = NULL;
    GCK_TRY(gck_new_tensor_entry(name, dtype, shape, ndim, data, copy, &t));
    gck_content_id(t->data, t->nbytes / gck_dtype_size(dtype), dtype, t->cid);
    const gck_status st = gck_snapshot_adopt_tensor(s, t);
    if (st != GCK_OK)
        gck_snap_tensor_free(t);
    return st;
}

static int gck_name_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

gck_status gck_snapshot_add_tensors_ref(gck_snapshot *s, const gck_tensor_ref *tensors, size_t n)
{
    GCK_CHECK_ARG(s != NULL && (tensors != NULL || n == 0), "gck_snapshot_add_tensors_ref: NULL %s",
                  s ? "tensors" : "snapshot");
    for (size_t i = 0; i < n; i++) {
        GCK_CHECK_ARG(tensors[i].name != NULL, "gck_snapshot_add_tensors_ref: tensors[%zu].name is NULL", i);
        int found;
        (void)gck_named_find(&s->tensors, tensors[i].name, &found);
        GCK_CHECK_ARG(!found, "tensors[%zu]: tensor '%.200s' is already in the snapshot", i, tensors[i].name);
    }
    gck_snap_tensor **t = gck_calloc(n + 1, sizeof *t);
    const char **by_name = gck_calloc(n + 1, sizeof *by_name);
    gck_status st = GCK_OK;
    size_t made = 0, bytes = 0;
    if (t == NULL || by_name == NULL) {
        st = gck_fail_oom("tensor list", (n + 1) * 2 * sizeof(void *));
        goto done;
    }
    for (; made < n; made++) {
        const gck_tensor_ref *r = &tensors[made];
        if ((st = gck_new_tensor_entry(r->name, r->dtype, r->shape, r->ndim, r->data, 0, &t[made])) != GCK_OK) {
            st = gck_fail_ctx(st, "tensors[%zu]", made);
            goto done;
        }
        by_name[made] = t[made]->name;
        bytes += t[made]->nbytes;
    }
    /* repeated names within the list: sorted, neighbours compared */
    qsort(by_name, n, sizeof *by_name, gck_name_ptr_cmp);
    for (size_t i = 1; i < n; i++)
        if (strcmp(by_name[i - 1], by_name[i]) == 0) {
            st = gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_snapshot_add_tensors_ref: tensor '%.200s' is listed twice",
                          by_name[i]);
            goto done;
        }
    if (!gck_named_reserve_n(&s->tensors, n)) {
        st = gck_fail_oom("tensor list", (s->tensors.n + n) * sizeof(void *));
        goto done;
    }
    /* the ids: each tensor on one thread, the list over all of them */
    const long ln = (long)n;
#pragma omp parallel for schedule(dynamic, 1) if (n > 1 && bytes >= GCK_PARALLEL_MIN_BYTES && gck_omp_threads() > 1)
    for (long i = 0; i < ln; i++)
        gck_content_id(t[i]->data, t[i]->nbytes / gck_dtype_size(t[i]->dtype), t[i]->dtype, t[i]->cid);
    for (size_t i = 0; i < n; i++) { /* cannot fail: room reserved, names checked */
        int found;
        const size_t at = gck_named_find(&s->tensors, t[i]->name, &found);
        gck_named_insert(&s->tensors, at, t[i]);
    }
    made = 0; /* all adopted */
done:
    for (size_t i = 0; i < made; i++)
        gck_snap_tensor_free(t[i]);
    free(t), free(by_name);
    return st;
}

gck_status gck_snapshot_add_tensor(gck_snapshot *s, const char *name, gck_dtype dtype, const int64_t *shape,
                                   size_t ndim, const void *data)
{
    return gck_add_tensor(s, name, dtype, shape, ndim, data, 1, "gck_snapshot_add_tensor");
}

gck_status gck_snapshot_add_tensor_ref(gck_snapshot *s, const char *name, gck_dtype dtype, const int64_t *shape,
                                       size_t ndim, const void *data)
{
    return gck_add_tensor(s, name, dtype, shape, ndim, data, 0, "gck_snapshot_add_tensor_ref");
}

static gck_status gck_add_borrowed(gck_snapshot *s, const char *name, gck_dtype dtype, const void *data,
                                   size_t count, int hash)
{
    GCK_TRY(gck_check_tensor_name(name));
    gck_snap_tensor *t = gck_calloc(1, sizeof *t);
    char *n = gck_strdup(name);
    int64_t *sh = gck_malloc(sizeof *sh);
    if (t == NULL || n == NULL || sh == NULL) {
        free(t), free(n), free(sh);
        return gck_tensor_oom(name, 1, 0);
    }
    sh[0] = (int64_t)count;
    *t = (gck_snap_tensor){.name = n, .dtype = dtype, .shape = sh, .ndim = 1, .data = (void *)(uintptr_t)data,
                           .nbytes = count * gck_dtype_size(dtype), .borrowed = 1};
    if (hash)
        gck_content_id(data, count, dtype, t->cid);
    const gck_status st = gck_snapshot_adopt_tensor(s, t);
    if (st != GCK_OK)
        gck_snap_tensor_free(t);
    return st;
}

gck_status gck_snapshot_add_borrowed(gck_snapshot *s, const char *name, gck_dtype dtype, const void *data,
                                     size_t count)
{
    return gck_add_borrowed(s, name, dtype, data, count, 1);
}

gck_status gck_snapshot_add_unhashed(gck_snapshot *s, const char *name, gck_dtype dtype, const void *data,
                                     size_t count)
{
    return gck_add_borrowed(s, name, dtype, data, count, 0);
}

gck_status gck_snapshot_set_loss_cid(gck_snapshot *s, const char *cid)
{
    GCK_CHECK_ARG(s != NULL && cid != NULL, "gck_snapshot_set_loss_cid: NULL argument");
    char *c = gck_strdup(cid);
    if (c == NULL)
        return gck_fail_oom("loss content id", strlen(cid) + 1);
    free(s->loss_cid);
    s->loss_cid = c;
    return GCK_OK;
}

gck_status gck_snapshot_adopt_blob(gck_snapshot *s, gck_snap_blob *b)
{
    int found;
    const size_t at = gck_named_find(&s->blobs, b->name, &found);
    if (found) {
        gck_snap_blob *old = s->blobs.items[at];
        s->blobs.items[at] = b;
        free(old->name), free(old->data), free(old);
        return GCK_OK;
    }
    GCK_TRY_CTX(gck_reserve_one(&s->blobs, "optimizer state list"), "optimizer state '%.200s'", b->name);
    gck_named_insert(&s->blobs, at, b);
    return GCK_OK;
}

gck_status gck_snapshot_set_optimizer_state(gck_snapshot *s, const char *param, const void *blob, size_t len)
{
    GCK_CHECK_ARG(s != NULL && param != NULL, "gck_snapshot_set_optimizer_state: NULL argument");
    GCK_CHECK_ARG(blob != NULL || len == 0, "optimizer state '%.200s': blob is NULL with len %zu", param, len);
    GCK_TRY(gck_check_key("optimizer parameter name", param));
    gck_snap_blob *b = gck_calloc(1, sizeof *b);
    char *n = gck_strdup(param);
    void *d = gck_malloc(len);
    if (b == NULL || n == NULL || d == NULL) {
        free(b), free(n), free(d);
        return gck_blob_oom(param, len);
    }
    if (len)
        memcpy(d, blob, len);
    *b = (gck_snap_blob){.name = n, .data = d, .len = len};
    gck_content_id(d, len, GCK_DTYPE_U8, b->cid);
    const gck_status st = gck_snapshot_adopt_blob(s, b);
    if (st != GCK_OK)
        free(n), free(d), free(b);
    return st;
}

/* Sets key = value in a metadata vector (copies both). */
static gck_status gck_meta_set(gck_named_vec *v, const char *key, const char *value)
{
    int found;
    const size_t at = gck_named_find(v, key, &found);
    gck_snap_meta *m = NULL;
    char *k = NULL, *val = gck_strdup(value);
    if (val == NULL)
        goto oom;
    if (found) {
        m = v->items[at];
        free(m->value);
        m->value = val;
        return GCK_OK;
    }
    m = gck_calloc(1, sizeof *m);
    k = gck_strdup(key);
    if (m == NULL || k == NULL || !gck_named_reserve(v))
        goto oom;
    *m = (gck_snap_meta){.name = k, .value = val};
    gck_named_insert(v, at, m);
    return GCK_OK;
oom:
    free(m), free(k), free(val);
    return gck_fail_ctx(gck_fail_oom("metadata entry", sizeof *m + strlen(key) + strlen(value) + 2),
                        "metadata '%.200s'", key);
}

static const char *gck_meta_get(const gck_named_vec *v, const char *key)
{
    int found;
    const size_t i = gck_named_find(v, key, &found);
    return found ? ((gck_snap_meta *)v->items[i])->value : NULL;
}

gck_status gck_snapshot_set_metadata(gck_snapshot *s, const char *key, const char *value)
{
    GCK_CHECK_ARG(s != NULL && key != NULL && value != NULL, "gck_snapshot_set_metadata: NULL argument");
    GCK_TRY(gck_check_key("metadata key", key));
    GCK_CHECK_ARG(strncmp(key, GCK_METADATA_PREFIX, strlen(GCK_METADATA_PREFIX)) != 0,
                  "metadata key '%.200s' uses the reserved prefix '" GCK_METADATA_PREFIX "'", key);
    GCK_CHECK_ARG(gck_utf8_valid(value), "metadata '%.200s': the value is not valid UTF-8", key);
    return gck_meta_set(&s->meta, key, value);
}

gck_status gck_snapshot_set_metadata_u64(gck_snapshot *s, const char *key, uint64_t value)
{
    char text[32];
    snprintf(text, sizeof text, "%llu", (unsigned long long)value);
    return gck_snapshot_set_metadata(s, key, text);
}

gck_status gck_snapshot_set_metadata_f64(gck_snapshot *s, const char *key, double value)
{
    char text[GCK_F64_TEXT_MAX];
    gck_format_f64(value, text);
    return gck_snapshot_set_metadata(s, key, text);
}

/* The user metadata value of key parsed as an f64 (is_f64) or a u64 into *out. */
static gck_status gck_typed_get(const gck_snapshot *s, const char *key, void *out, int is_f64, const char *fn)
{
    GCK_CHECK_ARG(s != NULL && key != NULL && out != NULL, "%s: NULL argument", fn);
    const char *v = gck_meta_get(&s->meta, key);
    if (v == NULL)
        return gck_fail(GCK_ERR_NOT_FOUND, "metadata '%.200s' is not set", key);
    uint64_t u = 0;
    double d = 0;
    if (is_f64 ? !gck_parse_f64(v, &d) : !gck_parse_u64(v, &u))
        return gck_fail(GCK_ERR_CORRUPT, "metadata '%.200s' = '%.60s' is not %s", key, v,
                        is_f64 ? "a number in gradckpt's f64 form" : "a decimal unsigned 64-bit integer");
    if (is_f64)
        memcpy(out, &d, sizeof d);
    else
        memcpy(out, &u, sizeof u);
    return GCK_OK;
}

gck_status gck_snapshot_metadata_u64(const gck_snapshot *s, const char *key, uint64_t *out)
{
    return gck_typed_get(s, key, out, 0, "gck_snapshot_metadata_u64");
}

gck_status gck_snapshot_metadata_f64(const gck_snapshot *s, const char *key, double *out)
{
    return gck_typed_get(s, key, out, 1, "gck_snapshot_metadata_f64");
}

gck_status gck_snapshot_set_sysmeta(gck_snapshot *s, const char *key, const char *value)
{
    return gck_meta_set(&s->sysmeta, key, value);
}

const char *gck_snapshot_sysmeta(const gck_snapshot *s, const char *key)
{
    return gck_meta_get(&s->sysmeta, key);
}

gck_status gck_snapshot_set_timestamp(gck_snapshot *s, uint64_t unix_secs)
{
    GCK_CHECK_ARG(s != NULL, "gck_snapshot_set_timestamp: snapshot is NULL");
    s->timestamp = unix_secs;
    return GCK_OK;
}

uint64_t gck_snapshot_step(const gck_snapshot *s) { return s ? s->step : 0; }
uint64_t gck_snapshot_timestamp(const gck_snapshot *s) { return s ? s->timestamp : 0; }
const char *gck_snapshot_loss_cid(const gck_snapshot *s) { return s ? s->loss_cid : NULL; }
size_t gck_snapshot_num_tensors(const gck_snapshot *s) { return s ? s->tensors.n : 0; }
size_t gck_snapshot_num_optimizer_states(const gck_snapshot *s) { return s ? s->blobs.n : 0; }
size_t gck_snapshot_num_metadata(const gck_snapshot *s) { return s ? s->meta.n : 0; }

const char *gck_snapshot_metadata_key(const gck_snapshot *s, size_t i)
{
    return s && i < s->meta.n ? ((gck_snap_meta *)s->meta.items[i])->name : NULL;
}

static void gck_info_of(const gck_snap_tensor *t, gck_tensor_info *out)
{
    *out = (gck_tensor_info){.name = t->name, .dtype = t->dtype, .shape = t->shape, .ndim = t->ndim,
                             .data = t->data, .nbytes = t->nbytes, .content_id = t->cid};
}

gck_status gck_snapshot_tensor(const gck_snapshot *s, size_t i, gck_tensor_info *out)
{
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_snapshot_tensor: NULL argument");
    GCK_CHECK_ARG(i < s->tensors.n, "gck_snapshot_tensor: index %zu past the end (%zu tensors)", i, s->tensors.n);
    gck_info_of(s->tensors.items[i], out);
    return GCK_OK;
}

gck_status gck_snapshot_find_tensor(const gck_snapshot *s, const char *name, gck_tensor_info *out)
{
    GCK_CHECK_ARG(s != NULL && name != NULL && out != NULL, "gck_snapshot_find_tensor: NULL argument");
    int found;
    const size_t i = gck_named_find(&s->tensors, name, &found);
    if (!found)
        return gck_fail(GCK_ERR_NOT_FOUND, "tensor '%.200s' is not in the snapshot", name);
    gck_info_of(s->tensors.items[i], out);
    return GCK_OK;
}

gck_status gck_snapshot_optimizer_state(const gck_snapshot *s, size_t i, const char **param, const void **blob,
                                        size_t *len)
{
    GCK_CHECK_ARG(s != NULL && param != NULL && blob != NULL && len != NULL,
                  "gck_snapshot_optimizer_state: NULL argument");
    GCK_CHECK_ARG(i < s->blobs.n, "gck_snapshot_optimizer_state: index %zu past the end (%zu)", i, s->blobs.n);
    const gck_snap_blob *b = s->blobs.items[i];
    *param = b->name, *blob = b->data, *len = b->len;
    return GCK_OK;
}

gck_status gck_snapshot_find_optimizer_state(const gck_snapshot *s, const char *param, const void **blob,
                                             size_t *len)
{
    GCK_CHECK_ARG(s != NULL && param != NULL && blob != NULL && len != NULL,
                  "gck_snapshot_find_optimizer_state: NULL argument");
    int found;
    const size_t i = gck_named_find(&s->blobs, param, &found);
    if (!found)
        return gck_fail(GCK_ERR_NOT_FOUND, "no optimizer state for '%.200s'", param);
    const gck_snap_blob *b = s->blobs.items[i];
    *blob = b->data, *len = b->len;
    return GCK_OK;
}

const char *gck_snapshot_metadata(const gck_snapshot *s, const char *key)
{
    return s == NULL || key == NULL ? NULL : gck_meta_get(&s->meta, key);
}

gck_status gck_snapshot_reserve(gck_snapshot *s, size_t bytes)
{
    if (s->arena != NULL || bytes == 0)
        return GCK_OK;
    s->arena = gck_aligned_alloc(bytes);
    if (s->arena == NULL)
        return gck_fail_oom("snapshot tensor arena", bytes);
    s->arena_cap = bytes, s->arena_used = 0;
    return GCK_OK;
}

void *gck_snapshot_arena_take(gck_snapshot *s, size_t nbytes)
{
    const size_t at = (s->arena_used + 63) / 64 * 64;
    if (s->arena == NULL || at > s->arena_cap || nbytes > s->arena_cap - at)
        return NULL;
    s->arena_used = at + nbytes;
    return s->arena + at;
}

gck_status gck_snapshot_new_tensor(gck_snapshot *s, const char *name, gck_dtype dtype, const int64_t *shape,
                                   size_t ndim, size_t nbytes, gck_snap_tensor **out)
{
    /* from the reserved buffer when it has room (given back if adding fails) */
    const size_t used = s->arena_used;
    void *d = gck_snapshot_arena_take(s, nbytes);
    const int from_arena = d != NULL;
    gck_snap_tensor *t = gck_calloc(1, sizeof *t);
    char *n = gck_strdup(name);
    int64_t *sh = gck_malloc((ndim ? ndim : 1) * sizeof *sh);
    if (!from_arena)
        d = gck_aligned_alloc(nbytes ? nbytes : 1);
    if (t == NULL || n == NULL || sh == NULL || d == NULL) {
        free(t), free(n), free(sh);
        if (!from_arena)
            free(d);
        s->arena_used = used;
        return gck_tensor_oom(name, ndim, from_arena ? 0 : nbytes);
    }
    if (ndim)
        memcpy(sh, shape, ndim * sizeof *sh);
    *t = (gck_snap_tensor){.name = n, .dtype = dtype, .shape = sh, .ndim = ndim, .data = d, .nbytes = nbytes,
                           .borrowed = from_arena};
    const gck_status st = gck_snapshot_adopt_tensor(s, t);
    if (st != GCK_OK) {
        gck_snap_tensor_free(t);
        s->arena_used = used;
        return st;
    }
    *out = t;
    return GCK_OK;
}

gck_status gck_snapshot_new_blob(gck_snapshot *s, const char *param, size_t len, gck_snap_blob **out)
{
    gck_snap_blob *b = gck_calloc(1, sizeof *b);
    char *n = gck_strdup(param);
    void *d = gck_malloc(len ? len : 1);
    if (b == NULL || n == NULL || d == NULL) {
        free(b), free(n), free(d);
        return gck_blob_oom(param, len);
    }
    *b = (gck_snap_blob){.name = n, .data = d, .len = len};
    const gck_status st = gck_snapshot_adopt_blob(s, b);
    if (st != GCK_OK) {
        free(n), free(d), free(b);
        return st;
    }
    *out = b;
    return GCK_OK;
}

gck_status gck_snapshot_copy_fields(gck_snapshot *dst, const gck_snapshot *src, const char *skip_sysmeta)
{
    dst->step = src->step;
    dst->timestamp = src->timestamp;
    if (src->loss_cid != NULL)
        GCK_TRY(gck_snapshot_set_loss_cid(dst, src->loss_cid));
    for (size_t i = 0; i < src->meta.n; i++) {
        const gck_snap_meta *m = src->meta.items[i];
        GCK_TRY(gck_meta_set(&dst->meta, m->name, m->value));
    }
    for (size_t i = 0; i < src->sysmeta.n; i++) {
        const gck_snap_meta *m = src->sysmeta.items[i];
        if (skip_sysmeta == NULL || strcmp(m->name, skip_sysmeta) != 0)
            GCK_TRY(gck_meta_set(&dst->sysmeta, m->name, m->value));
    }
    return GCK_OK;
}

gck_status gck_snapshot_clone(const gck_snapshot *s, gck_snapshot **out)
{
    GCK_CHECK_ARG(s != NULL && out != NULL, "gck_snapshot_clone: NULL %s", s ? "out" : "snapshot");
    gck_snapshot *c = NULL;
    GCK_TRY(gck_snapshot_create(s->step, &c));
    gck_status st = gck_snapshot_copy_fields(c, s, NULL);
    if (st != GCK_OK)
        goto fail;
    for (size_t i = 0; i < s->tensors.n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        gck_snap_tensor *n = NULL;
        st = gck_snapshot_new_tensor(c, t->name, t->dtype, t->shape, t->ndim, t->nbytes, &n);
        if (st != GCK_OK)
            goto fail;
        if (t->nbytes)
            memcpy(n->data, t->data, t->nbytes);
        memcpy(n->cid, t->cid, sizeof n->cid);
    }
    for (size_t i = 0; i < s->blobs.n; i++) {
        const gck_snap_blob *b = s->blobs.items[i];
        gck_snap_blob *n = NULL;
        st = gck_snapshot_new_blob(c, b->name, b->len, &n);
        if (st != GCK_OK)
            goto fail;
        if (b->len)
            memcpy(n->data, b->data, b->len);
        memcpy(n->cid, b->cid, sizeof n->cid);
    }
    *out = c;
    return GCK_OK;
fail:
    gck_snapshot_destroy(c);
    return st;
}

/* A buffer of exactly nbytes that `spare` owns, taken from it (its tensor
 * keeps no data), or NULL: the tensor at the same index first (the usual
 * case: the same layout save after save), else the one of the same name. */
static void *gck_spare_take(gck_snapshot *spare, size_t i, const gck_snap_tensor *want)
{
    if (spare == NULL || spare->map != NULL || want->nbytes == 0)
        return NULL;
    int found = 1;
    size_t k = i;
    if (k >= spare->tensors.n || strcmp(((gck_snap_tensor *)spare->tensors.items[k])->name, want->name) != 0)
        k = gck_named_find(&spare->tensors, want->name, &found);
    if (!found)
        return NULL;
    gck_snap_tensor *t = spare->tensors.items[k];
    if (t->borrowed || t->data == NULL || t->nbytes != want->nbytes)
        return NULL;
    void *p = t->data;
    t->data = NULL, t->nbytes = 0;
    return p;
}

int gck_snapshot_borrows_outside(const gck_snapshot *s, const gck_snap_tensor *t)
{
    const uintptr_t p = (uintptr_t)t->data, a = (uintptr_t)s->arena;
    return t->borrowed && !(s->arena != NULL && p >= a && p - a < s->arena_cap);
}

/* 1 when own_reusing copies tensor t of s. */
static int gck_to_copy(const gck_snapshot *s, const gck_snap_tensor *t, int keep_arena)
{
    return keep_arena ? gck_snapshot_borrows_outside(s, t) : t->borrowed != 0;
}

gck_status gck_snapshot_own_reusing(gck_snapshot *s, gck_snapshot *spare, int keep_arena, const char *fn)
{
    /* all buffers first, so a failure changes nothing; then copy and swap */
    void **fresh = NULL;
    gck_status st = GCK_OK;
    size_t nb = 0;
    for (size_t i = 0; i < s->tensors.n; i++)
        nb += (size_t)gck_to_copy(s, s->tensors.items[i], keep_arena);
    if (nb == 0)
        return GCK_OK;
    fresh = gck_calloc(nb, sizeof *fresh);
    if (fresh == NULL)
        return gck_fail_ctx(gck_fail_oom("buffer list", nb * sizeof *fresh), "%s", fn);
    for (size_t i = 0, j = 0; i < s->tensors.n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        if (!gck_to_copy(s, t, keep_arena))
            continue;
        if ((fresh[j] = gck_spare_take(spare, i, t)) == NULL &&
            (fresh[j] = gck_aligned_alloc(t->nbytes ? t->nbytes : 1)) == NULL) {
            st = gck_fail_ctx(gck_fail_oom("tensor values", t->nbytes), "%s: tensor '%.200s'", fn, t->name);
            goto done;
        }
        j++;
    }
    for (size_t i = 0, j = 0; i < s->tensors.n; i++) {
        gck_snap_tensor *t = s->tensors.items[i];
        if (!gck_to_copy(s, t, keep_arena))
            continue;
        if (t->nbytes)
            memcpy(fresh[j], t->data, t->nbytes);
        t->data = fresh[j], fresh[j++] = NULL;
        t->borrowed = 0; /* the content id stays: the bytes are the same */
    }
done:
    for (size_t j = 0; j < nb; j++)
        free(fresh[j]);
    free(fresh);
    return st;
}

gck_status gck_snapshot_own(gck_snapshot *s)
{
    GCK_CHECK_ARG(s != NULL, "gck_snapshot_own: NULL snapshot");
    return gck_snapshot_own_reusing(s, NULL, 0, "gck_snapshot_own");
}

int gck_snapshot_same_layout(const gck_snapshot *dst, const gck_snapshot *src)
{
    int same = dst->map == NULL && dst->tensors.n == src->tensors.n && dst->blobs.n == src->blobs.n;
    for (size_t i = 0; same && i < src->tensors.n; i++) {
        const gck_snap_tensor *a = dst->tensors.items[i], *b = src->tensors.items[i];
        same = !a->borrowed && a->dtype == b->dtype && a->nbytes == b->nbytes && a->ndim == b->ndim &&
               strcmp(a->name, b->name) == 0 && (a->ndim == 0 || memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) == 0);
    }
    for (size_t i = 0; same && i < src->blobs.n; i++) {
        const gck_snap_blob *a = dst->blobs.items[i], *b = src->blobs.items[i];
        same = a->len == b->len && strcmp(a->name, b->name) == 0;
    }
    return same;
}

gck_status gck_snapshot_overwrite_ids(gck_snapshot *dst, const gck_snapshot *src)
{
    for (size_t i = 0; i < src->tensors.n; i++)
        memcpy(((gck_snap_tensor *)dst->tensors.items[i])->cid, ((const gck_snap_tensor *)src->tensors.items[i])->cid,
               sizeof ((gck_snap_tensor *)0)->cid);
    for (size_t i = 0; i < src->blobs.n; i++)
        memcpy(((gck_snap_blob *)dst->blobs.items[i])->cid, ((const gck_snap_blob *)src->blobs.items[i])->cid,
               sizeof ((gck_snap_blob *)0)->cid);
    gck_meta_clear(&dst->meta);
    gck_meta_clear(&dst->sysmeta);
    free(dst->loss_cid);
    dst->loss_cid = NULL;
    return gck_snapshot_copy_fields(dst, src, NULL);
}

gck_status gck_snapshot_overwrite(gck_snapshot *dst, const gck_snapshot *src)
{
    if (!gck_snapshot_same_layout(dst, src))
        return GCK_ERR_DIMENSION_MISMATCH;
    for (size_t i = 0; i < src->tensors.n; i++) {
        gck_snap_tensor *a = dst->tensors.items[i];
        const gck_snap_tensor *b = src->tensors.items[i];
        if (b->nbytes)
            memcpy(a->data, b->data, b->nbytes);
    }
    for (size_t i = 0; i < src->blobs.n; i++) {
        gck_snap_blob *a = dst->blobs.items[i];
        const gck_snap_blob *b = src->blobs.items[i];
        if (b->len)
            memcpy(a->data, b->data, b->len);
    }
    return gck_snapshot_overwrite_ids(dst, src);
}


/* ---- digest of everything but the values ---------------------------------------- */

static void gck_digest_u64(gck_hasher *h, uint64_t v)
{
    gck_hasher_update_values(h, &v, 1, GCK_DTYPE_U64); /* little-endian on any CPU */
}

/* Length-prefixed, so ("ab", "c") and ("a", "bc") differ; NULL differs from "". */
static void gck_digest_str(gck_hasher *h, const char *s)
{
    gck_digest_u64(h, s != NULL ? (uint64_t)strlen(s) : UINT64_MAX);
    if (s != NULL)
        gck_hasher_update_values(h, s, strlen(s), GCK_DTYPE_U8);
}

/* A metadata map (key order) but the key `skip` (may be NULL), count first. */
static void gck_digest_meta(gck_hasher *h, const gck_named_vec *v, const char *skip)
{
    int found = 0;
    if (skip != NULL)
        gck_named_find(v, skip, &found);
    gck_digest_u64(h, v->n - (size_t)found);
    for (size_t i = 0; i < v->n; i++) {
        const gck_snap_meta *m = v->items[i];
        if (found && strcmp(m->name, skip) == 0)
            continue;
        gck_digest_str(h, m->name);
        gck_digest_str(h, m->value);
    }
}

/* The items' names, dtypes, shapes and blob lengths (each list counted
 * first); with c non-NULL, each item's content id into c as well. */
static void gck_digest_items(gck_hasher *h, const gck_snapshot *s, gck_hasher *c)
{
    gck_digest_u64(h, s->tensors.n);
    for (size_t i = 0; i < s->tensors.n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        gck_digest_str(h, t->name);
        gck_digest_str(h, gck_dtype_name(t->dtype));
        gck_digest_u64(h, t->ndim);
        for (size_t d = 0; d < t->ndim; d++)
            gck_digest_u64(h, (uint64_t)t->shape[d]);
        if (c != NULL)
            gck_digest_str(c, t->cid);
    }
    gck_digest_u64(h, s->blobs.n);
    for (size_t i = 0; i < s->blobs.n; i++) {
        const gck_snap_blob *b = s->blobs.items[i];
        gck_digest_str(h, b->name);
        gck_digest_u64(h, b->len);
        if (c != NULL)
            gck_digest_str(c, b->cid);
    }
}

void gck_snapshot_fields_digest(const gck_snapshot *s, const char *skip_sysmeta, char out[24])
{
    gck_hasher h;
    gck_hasher_init(&h, GCK_CHECKSUM_XXH3_64);
    gck_digest_u64(&h, s->step);
    gck_digest_u64(&h, s->timestamp);
    gck_digest_str(&h, s->loss_cid);
    /* every list is sorted by name, so equal snapshots feed equal streams */
    gck_digest_meta(&h, &s->meta, NULL);
    gck_digest_meta(&h, &s->sysmeta, skip_sysmeta);
    gck_digest_items(&h, s, NULL);
    snprintf(out, 24, "xxh3:%016llx", (unsigned long long)gck_hasher_final(&h));
}

gck_status gck_snapshot_digest(const gck_snapshot *s, uint64_t *layout, uint64_t *content)
{
    GCK_CHECK_ARG(s != NULL && layout != NULL && content != NULL, "gck_snapshot_digest: NULL argument");
    gck_hasher l, c;
    gck_hasher_init(&l, GCK_CHECKSUM_XXH3_64);
    gck_hasher_init(&c, GCK_CHECKSUM_XXH3_64);
    gck_digest_u64(&c, s->step);
    gck_digest_str(&c, s->loss_cid);
    gck_digest_meta(&c, &s->meta, NULL);
    gck_digest_meta(&c, &s->sysmeta, NULL);
    gck_digest_items(&l, s, &c);
    *layout = gck_hasher_final(&l);
    *content = gck_hasher_final(&c);
    return GCK_OK;
}
