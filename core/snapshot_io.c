/* core/snapshot_io.c - safetensors save (atomic, durable) and load (validated) of snapshots.
 *
 * Layout as the reference writer makes it: 8-byte little-endian header
 * length, a compact JSON header ("__metadata__" first, then the tensors in
 * data order) padded with spaces to a multiple of 8, then the tensors' bytes
 * sorted by dtype (the reference's enum order, widest first) and name. */
#if defined(__linux__) && !defined(_DEFAULT_SOURCE)
#define _DEFAULT_SOURCE /* MAP_POPULATE */
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc_internal.h"
#include "checksum_internal.h"
#include "io_internal.h"
#include "json_text_internal.h"
#include "snapshot_internal.h"
#include "threads_internal.h"

#define GCK_FORMAT_VERSION 1
#define GCK_FORMAT_VERSION_STR "1"
#define GCK_HEADER_MAX 100000000ULL /* the reference reader's limit */

/* The reference's Dtype declaration order (serde derives Ord from it). */
static int gck_dtype_rank(gck_dtype d)
{
    static const int rank[GCK_DTYPE_COUNT] = {
        [GCK_DTYPE_BOOL] = 0,     [GCK_DTYPE_U8] = 1,       [GCK_DTYPE_I8] = 2,   [GCK_DTYPE_F8_E5M2] = 3,
        [GCK_DTYPE_F8_E4M3] = 4,  [GCK_DTYPE_I16] = 5,      [GCK_DTYPE_U16] = 6,  [GCK_DTYPE_F16] = 7,
        [GCK_DTYPE_BF16] = 8,     [GCK_DTYPE_I32] = 9,      [GCK_DTYPE_U32] = 10, [GCK_DTYPE_F32] = 11,
        [GCK_DTYPE_F64] = 12,     [GCK_DTYPE_I64] = 13,     [GCK_DTYPE_U64] = 14};
    return rank[d];
}

/* One tensor as it goes to or comes from the file. */
typedef struct gck_hdr_entry {
    const char *name; /* file name: user name, or __optimizer__/<param> */
    gck_dtype dtype;
    const int64_t *shape;
    size_t ndim;
    int64_t blob_len; /* shape of a blob */
    const void *data;
    size_t nbytes;
    size_t begin;
} gck_hdr_entry;

static int gck_hdr_entry_cmp(const void *pa, const void *pb)
{
    const gck_hdr_entry *a = pa, *b = pb;
    const int ra = gck_dtype_rank(a->dtype), rb = gck_dtype_rank(b->dtype);
    if (ra != rb)
        return rb - ra;
    return strcmp(a->name, b->name);
}

/* ---- save ------------------------------------------------------------------------ */

static int gck_set_str(json_t *obj, const char *key, const char *value)
{
    return json_object_set_new(obj, key, json_string(value));
}

typedef struct gck_kv {
    char *key; /* owned */
    const char *value;
} gck_kv;

static void gck_free_kv(gck_kv *kv, size_t n)
{
    for (size_t i = 0; kv != NULL && i < n; i++)
        free(kv[i].key);
    free(kv);
}

static int gck_kv_cmp(const void *pa, const void *pb)
{
    return strcmp(((const gck_kv *)pa)->key, ((const gck_kv *)pb)->key);
}

static char *gck_concat(const char *a, const char *b, const char *c)
{
    const size_t la = strlen(a), lb = strlen(b), lc = strlen(c);
    char *r = gck_malloc(la + lb + lc + 1);
    if (r != NULL) {
        memcpy(r, a, la);
        memcpy(r + la, b, lb);
        memcpy(r + la + lb, c, lc + 1);
    }
    return r;
}

/* The __metadata__ entries, ours and the user's, in bytewise key order (a
 * key given twice keeps its last value, as jansson's object set did);
 * content ids of the items keep marks (tensors, then blobs; NULL: all).
 * Keys are owned by the array (gck_free_kv); NULL when out of memory. */
static gck_kv *gck_metadata_kv(const gck_snapshot *s, const char *step, const char *ts, const unsigned char *keep,
                               size_t *n_out)
{
    const size_t n = 3 + (s->loss_cid != NULL) + s->tensors.n + s->blobs.n + s->meta.n + s->sysmeta.n;
    gck_kv *kv = gck_calloc(n, sizeof *kv);
    size_t k = 0;
    int bad = kv == NULL;
#define GCK_KV(a, b, c, v)                                    \
    do {                                                      \
        if (!bad) {                                           \
            kv[k].key = gck_concat(a, b, c);                  \
            kv[k].value = (v);                                \
            bad = kv[k++].key == NULL;                        \
        }                                                     \
    } while (0)
    GCK_KV(GCK_METADATA_PREFIX, "format", "", GCK_FORMAT_VERSION_STR);
    GCK_KV(GCK_METADATA_PREFIX, "step", "", step);
    GCK_KV(GCK_METADATA_PREFIX, "timestamp", "", ts);
    if (s->loss_cid)
        GCK_KV(GCK_METADATA_PREFIX, "loss_cid", "", s->loss_cid);
    for (size_t i = 0; i < s->tensors.n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        if ((keep == NULL || keep[i]) && t->cid[0] != '\0') /* an empty id is not recorded */
            GCK_KV(GCK_METADATA_PREFIX "cid.", t->name, "", t->cid);
    }
    for (size_t i = 0; i < s->blobs.n; i++) {
        const gck_snap_blob *bl = s->blobs.items[i];
        if (keep == NULL || keep[s->tensors.n + i])
            GCK_KV(GCK_METADATA_PREFIX "cid.", GCK_OPTIMIZER_PREFIX, bl->name, bl->cid);
    }
    for (int v = 0; v < 2; v++) {
        const gck_named_vec *mv = v ? &s->sysmeta : &s->meta;
        for (size_t i = 0; i < mv->n; i++) {
            const gck_snap_meta *m = mv->items[i];
            GCK_KV(m->name, "", "", m->value);
        }
    }
#undef GCK_KV
    if (bad) {
        gck_free_kv(kv, k);
        return NULL;
    }
    qsort(kv, k, sizeof *kv, gck_kv_cmp);
    size_t w = 0; /* one entry per key, at its first place, with its last value */
    for (size_t i = 0; i < k; i++) {
        if (w > 0 && strcmp(kv[w - 1].key, kv[i].key) == 0) {
            kv[w - 1].value = kv[i].value;
            free(kv[i].key);
        } else {
            kv[w++] = kv[i];
        }
    }
    *n_out = w;
    return kv;
}

static json_t *gck_metadata_json(const gck_snapshot *s, const char *step, const char *ts, const unsigned char *keep)
{
    size_t n = 0;
    gck_kv *kv = gck_metadata_kv(s, step, ts, keep, &n);
    json_t *md = kv ? json_object() : NULL;
    int bad = md == NULL;
    for (size_t i = 0; i < n && !bad; i++)
        bad = gck_set_str(md, kv[i].key, kv[i].value) != 0;
    gck_free_kv(kv, n);
    if (bad) {
        json_decref(md);
        return NULL;
    }
    return md;
}

/* Writes values little-endian: as they are on LE CPUs, swapped per chunk on BE. */
static int gck_write_le(int fd, const void *data, size_t nbytes, size_t esz)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    if (esz > 1) {
        unsigned char buf[8192];
        const unsigned char *src = data;
        for (size_t off = 0; off < nbytes; off += sizeof buf) {
            const size_t k = nbytes - off < sizeof buf ? nbytes - off : sizeof buf;
            for (size_t e = 0; e < k; e += esz)
                for (size_t b = 0; b < esz; b++)
                    buf[e + b] = src[off + e + (esz - 1 - b)];
            const int err = gck_write_all(fd, buf, k);
            if (err)
                return err;
        }
        return 0;
    }
#endif
    (void)esz;
    return gck_write_all(fd, data, nbytes);
}

static void gck_free_entries(gck_hdr_entry *e, size_t n)
{
    for (size_t i = 0; e != NULL && i < n; i++)
        free((char *)e[i].name);
    free(e);
}

/* The file's entries in data order (names owned by the array) and the
 * serialized header (compact JSON padded with spaces to a multiple of 8):
 * the items keep marks (tensors, then blobs; NULL: all). */
static gck_status gck_build_header(const gck_snapshot *s, const unsigned char *keep, gck_hdr_entry **entries_out,
                                   size_t *n_out, char **hdr_out, size_t *hlen_out)
{
    const size_t all = s->tensors.n + s->blobs.n;
    gck_hdr_entry *e = gck_calloc(all ? all : 1, sizeof *e);
    if (e == NULL)
        return gck_fail_oom("header entries", (all ? all : 1) * sizeof *e);
    int bad = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->tensors.n && !bad; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        if (keep != NULL && !keep[i])
            continue;
        e[n] = (gck_hdr_entry){.name = gck_concat(t->name, "", ""), .dtype = t->dtype, .shape = t->shape,
                           .ndim = t->ndim, .data = t->data, .nbytes = t->nbytes};
        bad = e[n++].name == NULL;
    }
    for (size_t i = 0; i < s->blobs.n && !bad; i++) {
        const gck_snap_blob *b = s->blobs.items[i];
        if (keep != NULL && !keep[s->tensors.n + i])
            continue;
        gck_hdr_entry *x = &e[n++];
        *x = (gck_hdr_entry){.name = gck_concat(GCK_OPTIMIZER_PREFIX, b->name, ""), .dtype = GCK_DTYPE_U8, .ndim = 1,
                         .blob_len = (int64_t)b->len, .data = b->data, .nbytes = b->len};
        bad = x->name == NULL;
    }
    char step[32], ts[32];
    snprintf(step, sizeof step, "%llu", (unsigned long long)s->step);
    snprintf(ts, sizeof ts, "%llu", (unsigned long long)s->timestamp);
    size_t nkv = 0;
    gck_kv *kv = bad ? NULL : gck_metadata_kv(s, step, ts, keep, &nkv);
    if (kv == NULL) {
        gck_free_entries(e, n);
        return gck_fail_oom("JSON header", 0);
    }
    gck_jtext t = {0};
    gck_jt_lit(&t, "{\"__metadata__\":{");
    for (size_t i = 0; i < nkv; i++) {
        if (i > 0)
            gck_jt_raw(&t, ",", 1);
        gck_jt_key(&t, kv[i].key);
        gck_jt_str(&t, kv[i].value);
    }
    gck_jt_raw(&t, "}", 1);
    gck_free_kv(kv, nkv);
    qsort(e, n, sizeof *e, gck_hdr_entry_cmp);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        const int64_t *sh = e[i].shape != NULL ? e[i].shape : &e[i].blob_len;
        gck_jt_raw(&t, ",", 1);
        gck_jt_key(&t, e[i].name);
        gck_jt_lit(&t, "{\"dtype\":");
        gck_jt_str(&t, gck_dtype_name(e[i].dtype));
        gck_jt_lit(&t, ",\"shape\":[");
        for (size_t d = 0; d < e[i].ndim; d++) {
            if (d > 0)
                gck_jt_raw(&t, ",", 1);
            gck_jt_int(&t, sh[d]);
        }
        e[i].begin = off;
        off += e[i].nbytes;
        gck_jt_lit(&t, "],\"data_offsets\":[");
        gck_jt_int(&t, (long long)e[i].begin);
        gck_jt_raw(&t, ",", 1);
        gck_jt_int(&t, (long long)off);
        gck_jt_lit(&t, "]}");
    }
    gck_jt_raw(&t, "}", 1);
    while (!t.bad && t.len % 8 != 0)
        gck_jt_raw(&t, " ", 1); /* padded with spaces to a multiple of 8 */
    if (t.bad) {
        free(t.p);
        gck_free_entries(e, n);
        return t.bad == 2 ? gck_fail(GCK_ERR_INVALID_ARGUMENT, "a name or metadata text is not valid UTF-8")
                          : gck_fail_oom("JSON header", t.cap);
    }
    *entries_out = e, *n_out = n, *hdr_out = t.p, *hlen_out = t.len;
    return GCK_OK;
}

/* What gck_write_atomic puts in the temporary file. */
typedef struct gck_save_ctx {
    const gck_hdr_entry *e;
    size_t n;
    const char *hdr;
    size_t hlen;
} gck_save_ctx;

static int gck_save_fill(int fd, void *ctx)
{
    const gck_save_ctx *c = ctx;
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)c->hlen >> (8 * i));
#if !(defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
    /* little-endian: the bytes are the caller's, gathered into one writev */
    struct iovec *iov = malloc((c->n + 2) * sizeof *iov);
    if (iov != NULL) {
        iov[0] = (struct iovec){len8, 8};
        iov[1] = (struct iovec){(void *)(uintptr_t)c->hdr, c->hlen};
        for (size_t i = 0; i < c->n; i++)
            iov[i + 2] = (struct iovec){(void *)(uintptr_t)c->e[i].data, c->e[i].nbytes};
        const int err = gck_writev_all(fd, iov, c->n + 2);
        free(iov);
        return err;
    }
#endif
    int err = gck_write_all(fd, len8, 8);
    if (!err)
        err = gck_write_all(fd, c->hdr, c->hlen);
    for (size_t i = 0; i < c->n && !err; i++)
        err = gck_write_le(fd, c->e[i].data, c->e[i].nbytes, gck_dtype_size(c->e[i].dtype));
    return err;
}

/* Writes the file (the items keep marks, NULL: all) with gck_write_atomic
 * (fd NULL) or gck_write_unsynced (*fd left open). */
static gck_status gck_save_as(const gck_snapshot *s, const unsigned char *keep, const char *path, int *fd)
{
    gck_save_ctx c = {0};
    gck_hdr_entry *e = NULL;
    char *hdr = NULL;
    GCK_TRY_CTX(gck_build_header(s, keep, &e, &c.n, &hdr, &c.hlen), "cannot save '%.300s'", path);
    c.e = e, c.hdr = hdr;
    const gck_status st =
        fd ? gck_write_unsynced(path, gck_save_fill, &c, fd) : gck_write_atomic(path, gck_save_fill, &c, NULL);
    free(hdr);
    gck_free_entries(e, c.n);
    return st;
}

gck_status gck_snapshot_save(const gck_snapshot *s, const char *path)
{
    GCK_CHECK_ARG(s != NULL && path != NULL, "gck_snapshot_save: NULL argument");
    GCK_CHECK_ARG(path[0] != '\0', "gck_snapshot_save: empty path");
    return gck_save_as(s, NULL, path, NULL);
}

gck_status gck_snapshot_write_unsynced(const gck_snapshot *s, const char *path, int *fd)
{
    return gck_save_as(s, NULL, path, fd);
}

gck_status gck_snapshot_header(const gck_snapshot *s, size_t room, char **out, size_t *need)
{
    gck_hdr_entry *e = NULL;
    char *hdr = NULL;
    size_t n = 0, hlen = 0;
    *out = NULL;
    GCK_TRY(gck_build_header(s, NULL, &e, &n, &hdr, &hlen));
    gck_free_entries(e, n);
    *need = hlen;
    if (room == GCK_HEADER_FIT)
        room = hlen;
    gck_status st = GCK_OK;
    if (room > 0 && (hlen > room || room % 8 != 0)) {
        st = gck_fail(GCK_ERR_INVALID_ARGUMENT, "file header of %zu bytes does not fit its room of %zu", hlen, room);
    } else if (room > 0) {
        char *b = gck_malloc(8 + room);
        if (b == NULL) {
            st = gck_fail_oom("file header", 8 + room);
        } else {
            for (int i = 0; i < 8; i++)
                b[i] = (char)(unsigned char)((uint64_t)room >> (8 * i));
            memcpy(b + 8, hdr, hlen);
            memset(b + 8 + hlen, ' ', room - hlen);
            *out = b;
        }
    }
    free(hdr);
    return st;
}

gck_status gck_snapshot_save_subset(const gck_snapshot *s, const unsigned char *keep, const char *path)
{
    return gck_save_as(s, keep, path, NULL);
}

json_t *gck_snapshot_metadata_json(const gck_snapshot *s)
{
    char step[32], ts[32];
    snprintf(step, sizeof step, "%llu", (unsigned long long)s->step);
    snprintf(ts, sizeof ts, "%llu", (unsigned long long)s->timestamp);
    return gck_metadata_json(s, step, ts, NULL);
}

gck_status gck_snapshot_sweep_temporaries(const char *dir, const char *name, uint64_t min_age_secs,
                                          gck_sweep_stats *out)
{
    GCK_CHECK_ARG(dir != NULL && dir[0] != '\0', "gck_snapshot_sweep_temporaries: dir is NULL or empty");
    GCK_CHECK_ARG(name == NULL || (name[0] != '\0' && strchr(name, '/') == NULL),
                  "gck_snapshot_sweep_temporaries: name '%.300s' is empty or not a file name", name ? name : "");
    gck_sweep_result r;
    const gck_status st = gck_sweep_tmp(dir, name, min_age_secs, &r);
    if (out != NULL)
        *out = (gck_sweep_stats){.removed = r.removed, .bytes_freed = r.bytes_freed, .live = r.live, .young = r.young};
    return st;
}

/* ---- load ------------------------------------------------------------------------ */

/* pread until done; 0 on success, else errno (EIO for a short file). */
static int gck_read_at(int fd, void *p, size_t len, uint64_t off)
{
    char *c = p;
    while (len > 0) {
        const size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        const ssize_t r = pread(fd, c, chunk, (off_t)off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (r == 0)
            return EIO;
        c += r, off += (uint64_t)r, len -= (size_t)r;
    }
    return 0;
}

typedef struct gck_ld_entry {
    const char *name; /* borrowed from the JSON */
    gck_dtype dtype;
    int64_t shape[GCK_MAX_DIMS];
    size_t ndim;
    uint64_t begin, end;
} gck_ld_entry;

static int gck_ld_cmp(const void *pa, const void *pb)
{
    const gck_ld_entry *a = pa, *b = pb;
    return a->begin < b->begin ? -1 : a->begin > b->begin ? 1 : (a->end > b->end) - (a->end < b->end);
}

#define GCK_CORRUPT(...) gck_fail(GCK_ERR_CORRUPT, __VA_ARGS__)

/* Parses one tensor's header entry. */
static gck_status gck_parse_entry(const char *path, const char *name, json_t *v, gck_ld_entry *out)
{
    if (!json_is_object(v))
        return GCK_CORRUPT("%.300s: tensor '%.200s': header entry is not an object", path, name);
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *of = json_object_get(v, "data_offsets");
    if (!json_is_string(dt) || !json_is_array(sh) || !json_is_array(of) || json_array_size(of) != 2)
        return GCK_CORRUPT("%.300s: tensor '%.200s': needs string dtype, array shape and two data_offsets", path,
                           name);
    if (!gck_dtype_parse(json_string_value(dt), &out->dtype)) {
        /* names newer safetensors versions define: sub-byte and scale types */
        static const char *const known_elsewhere[] = {"F4", "F6_E2M3", "F6_E3M2", "F8_E8M0", "C64"};
        for (size_t i = 0; i < sizeof known_elsewhere / sizeof known_elsewhere[0]; i++)
            if (strcmp(json_string_value(dt), known_elsewhere[i]) == 0)
                return gck_fail(GCK_ERR_UNSUPPORTED, "%.300s: tensor '%.200s': dtype %s is not supported", path,
                                name, known_elsewhere[i]);
        return GCK_CORRUPT("%.300s: tensor '%.200s': unknown dtype '%.40s'", path, name, json_string_value(dt));
    }
    out->ndim = json_array_size(sh);
    if (out->ndim > GCK_MAX_DIMS)
        return GCK_CORRUPT("%.300s: tensor '%.200s': %zu dimensions (at most %d)", path, name, out->ndim,
                           GCK_MAX_DIMS);
    for (size_t d = 0; d < out->ndim; d++) {
        json_t *x = json_array_get(sh, d);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return GCK_CORRUPT("%.300s: tensor '%.200s': shape[%zu] is not a non-negative integer", path, name, d);
        out->shape[d] = json_integer_value(x);
    }
    for (int k = 0; k < 2; k++) {
        json_t *x = json_array_get(of, (size_t)k);
        if (!json_is_integer(x) || json_integer_value(x) < 0)
            return GCK_CORRUPT("%.300s: tensor '%.200s': data_offsets[%d] is not a non-negative integer", path,
                               name, k);
    }
    out->begin = (uint64_t)json_integer_value(json_array_get(of, 0));
    out->end = (uint64_t)json_integer_value(json_array_get(of, 1));
    if (out->end < out->begin)
        return GCK_CORRUPT("%.300s: tensor '%.200s': data_offsets end %llu before begin %llu", path, name,
                           (unsigned long long)out->end, (unsigned long long)out->begin);
    uint64_t count = 1;
    for (size_t d = 0; d < out->ndim; d++) {
        const uint64_t dim = (uint64_t)out->shape[d];
        if (dim != 0 && count > UINT64_MAX / dim)
            return GCK_CORRUPT("%.300s: tensor '%.200s': element count overflows", path, name);
        count *= dim;
    }
    const uint64_t esz = gck_dtype_size(out->dtype);
    if (count > UINT64_MAX / esz || count * esz != out->end - out->begin)
        return GCK_CORRUPT("%.300s: tensor '%.200s': shape x %s size does not match its %llu data bytes", path, name,
                           gck_dtype_name(out->dtype), (unsigned long long)(out->end - out->begin));
    out->name = name;
    return GCK_OK;
}

/* Applies the __metadata__ map: our keys, content ids checked later. */
static gck_status gck_apply_metadata(const char *path, json_t *md, gck_snapshot *s)
{
    if (!json_is_object(md))
        return GCK_CORRUPT("%.300s: __metadata__ is not an object", path);
    const char *key;
    json_t *v;
    json_object_foreach(md, key, v) {
        if (!json_is_string(v))
            return GCK_CORRUPT("%.300s: __metadata__ value of '%.200s' is not a string", path, key);
        const char *val = json_string_value(v);
        if (strncmp(key, GCK_METADATA_PREFIX, strlen(GCK_METADATA_PREFIX)) != 0) {
            const gck_status st = gck_snapshot_set_metadata(s, key, val);
            if (st == GCK_ERR_INVALID_ARGUMENT) /* an empty or over-long key: the file's fault */
                return GCK_CORRUPT("%.300s: __metadata__: %s", path, gck_last_error());
            if (st != GCK_OK)
                return gck_fail_ctx(st, "%.300s: __metadata__", path);
            continue;
        }
        const char *k = key + strlen(GCK_METADATA_PREFIX);
        uint64_t u;
        if (strcmp(k, "format") == 0) {
            if (!gck_parse_u64(val, &u))
                return GCK_CORRUPT("%.300s: gradckpt.format '%.40s' is not a number", path, val);
            if (u > GCK_FORMAT_VERSION)
                return gck_fail(GCK_ERR_UNSUPPORTED, "%.300s: gradckpt format %llu is newer than this library's %d",
                                path, (unsigned long long)u, GCK_FORMAT_VERSION);
        } else if (strcmp(k, "step") == 0 || strcmp(k, "timestamp") == 0) {
            if (!gck_parse_u64(val, &u))
                return GCK_CORRUPT("%.300s: %.40s '%.40s' is not a decimal number", path, key, val);
            *(k[0] == 's' ? &s->step : &s->timestamp) = u;
        } else if (strcmp(k, "loss_cid") == 0) {
            GCK_TRY_CTX(gck_snapshot_set_loss_cid(s, val), "%.300s: __metadata__", path);
        } else if (strncmp(k, "cid.", 4) != 0) {
            /* kept for the next save */
            GCK_TRY_CTX(gck_snapshot_set_sysmeta(s, key, val), "%.300s: __metadata__", path);
        }
        /* gradckpt.cid.* are checked against the loaded bytes by the caller */
    }
    return GCK_OK;
}

gck_status gck_snapshot_apply_metadata(const char *path, json_t *md, gck_snapshot *s)
{
    return gck_apply_metadata(path, md, s);
}

/* The content id the file records for `name` (NULL if none or malformed). */
static const char *gck_recorded_cid(json_t *md, const char *name)
{
    char key[GCK_NAME_MAX + 64];
    snprintf(key, sizeof key, GCK_METADATA_PREFIX "cid.%s", name);
    const char *v = md ? json_string_value(json_object_get(md, key)) : NULL;
    return v != NULL && strlen(v) == 21 && strncmp(v, "xxh3:", 5) == 0 ? v : NULL;
}

/* pread of a tensor's bytes in pieces, each converted to this CPU's order and
 * hashed right after it arrives (so the hash reads cache, not memory); the
 * content id goes to cid. 0 or errno. */
static int gck_read_hashed(int fd, unsigned char *data, size_t nbytes, uint64_t off, gck_dtype dtype, char cid[24])
{
    const size_t esz = gck_dtype_size(dtype), piece = (size_t)1 << 20; /* a multiple of every esz */
    gck_hasher h;
    gck_hasher_init(&h, GCK_CHECKSUM_XXH3_64);
    for (size_t at = 0; at < nbytes; at += piece) {
        const size_t len = nbytes - at < piece ? nbytes - at : piece;
        const int err = gck_read_at(fd, data + at, len, off + at);
        if (err)
            return err;
        gck_swap_le(data + at, len, esz);
        gck_hasher_update_values(&h, data + at, len / esz, dtype);
    }
    snprintf(cid, 24, "xxh3:%016llx", (unsigned long long)gck_hasher_final(&h));
    return 0;
}

/* Reads every tensor: into its own buffer (pread), or, with a mapping of the
 * file (map != NULL, little-endian CPU), pointing into it when the data is
 * aligned for its type. Without `verify`, content ids are taken from the
 * file's metadata where it records them, so nothing reads the values. */
/* A tensor read ahead of the build loop (gck_load_tensors). */
/* The id of a tensor whose file records none, loaded without hashing. */
static const char gck_no_cid[24];

typedef struct gck_pre {
    void *data; /* in the snapshot's arena; NULL: not read ahead */
    char cid[24];
    int err;
} gck_pre;

/* Adds entry e of the file to s as a tensor or an optimizer state, on its
 * bytes `data` (the mapping's or the arena's when shared) with content id
 * cid (NULL: hash the bytes). On failure nothing is added and data, unless
 * shared, is freed. */
static gck_status gck_adopt_entry(const char *path, const gck_ld_entry *e, gck_snapshot *s, void *data, int shared,
                                  const char *cid)
{
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX), nbytes = (size_t)(e->end - e->begin);
    const size_t esz = gck_dtype_size(e->dtype);
    gck_snap_blob *b = NULL;
    gck_snap_tensor *t = NULL;
    char *nm = NULL;
    int64_t *sh = NULL;
    gck_status st;
    if (strncmp(e->name, GCK_OPTIMIZER_PREFIX, plen) == 0) {
        if (e->dtype != GCK_DTYPE_U8 || e->ndim != 1) {
            st = GCK_CORRUPT("%.300s: optimizer state '%.200s' is not a 1-D U8 tensor", path, e->name);
            goto fail;
        }
        b = gck_calloc(1, sizeof *b);
        nm = gck_concat(e->name + plen, "", "");
        if (b == NULL || nm == NULL) {
            st = gck_fail_ctx(gck_blob_oom(e->name + plen, 0), "%.300s", path);
            goto fail;
        }
        *b = (gck_snap_blob){.name = nm, .data = data, .len = nbytes};
        if (cid)
            memcpy(b->cid, cid, 22);
        else
            gck_content_id(data, nbytes, GCK_DTYPE_U8, b->cid);
        int dup;
        (void)gck_named_find(&s->blobs, nm, &dup);
        if (nm[0] == '\0' || dup) {
            st = GCK_CORRUPT("%.300s: optimizer state name '%.200s' is empty or repeated", path, e->name);
            goto fail;
        }
        if ((st = gck_snapshot_adopt_blob(s, b)) != GCK_OK) {
            st = gck_fail_ctx(st, "%.300s", path);
            goto fail;
        }
        return GCK_OK;
    }
    t = gck_calloc(1, sizeof *t);
    nm = gck_concat(e->name, "", "");
    sh = gck_malloc((e->ndim ? e->ndim : 1) * sizeof *sh);
    if (t == NULL || nm == NULL || sh == NULL) {
        st = gck_fail_ctx(gck_tensor_oom(e->name, e->ndim, 0), "%.300s", path);
        goto fail;
    }
    memcpy(sh, e->shape, e->ndim * sizeof *sh);
    *t = (gck_snap_tensor){.name = nm, .dtype = e->dtype, .shape = sh, .ndim = e->ndim, .data = data,
                           .nbytes = nbytes, .borrowed = shared};
    if (cid)
        memcpy(t->cid, cid, 22);
    else
        gck_content_id(data, esz ? nbytes / esz : 0, e->dtype, t->cid);
    if ((st = gck_snapshot_adopt_tensor(s, t)) != GCK_OK) {
        /* a bad name is the file's fault; running out of memory is not */
        st = gck_fail_ctx(st == GCK_ERR_NO_MEMORY ? st : GCK_ERR_CORRUPT, "%.300s", path);
        goto fail;
    }
    return GCK_OK;
fail:
    free(b), free(t), free(nm), free(sh);
    if (!shared)
        free(data);
    return st;
}

/* Builds the tensors and blobs of the snapshot from the file (reading what
 * `pre` did not read ahead). */
static gck_status gck_build_tensors(const char *path, int fd, uint64_t data_off, gck_ld_entry *e, size_t n,
                                    gck_snapshot *s, const unsigned char *map, json_t *md, int verify,
                                    const gck_pre *pre)
{
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX);
    for (size_t i = 0; i < n; i++) {
        const size_t nbytes = (size_t)(e[i].end - e[i].begin);
        const size_t esz = gck_dtype_size(e[i].dtype);
        const unsigned char *src = map ? map + data_off + e[i].begin : NULL;
        const int is_blob = strncmp(e[i].name, GCK_OPTIMIZER_PREFIX, plen) == 0;
        const int done = pre != NULL && pre[i].data != NULL; /* read above */
        const int borrow = (src != NULL && !is_blob && ((uintptr_t)src % esz) == 0);
        void *data = done ? pre[i].data
                          : borrow ? (void *)(uintptr_t)src : is_blob ? NULL : gck_snapshot_arena_take(s, nbytes);
        const int shared = data != NULL; /* the mapping's or the arena's: never freed alone */
        if (data == NULL)
            data = gck_aligned_alloc(nbytes);
        if (data == NULL)
            return gck_fail_ctx(is_blob ? gck_blob_oom(e[i].name + plen, nbytes) : gck_tensor_oom(e[i].name, 0, nbytes),
                                "%.300s", path);
        const char *cid = done ? pre[i].cid : verify > 0 ? NULL : gck_recorded_cid(md, e[i].name);
        if (cid == NULL && verify < 0)
            cid = gck_no_cid; /* not recorded, not hashed */
        char hashed[24];
        if (!borrow && !done) {
            int err;
            if (src != NULL)
                memcpy(data, src, nbytes), gck_swap_le(data, nbytes, esz), err = 0;
            else if (cid == NULL) /* read and hash piece by piece: each piece is hashed while in cache */
                err = gck_read_hashed(fd, data, nbytes, data_off + e[i].begin, e[i].dtype, hashed), cid = hashed;
            else
                err = gck_read_at(fd, data, nbytes, data_off + e[i].begin), gck_swap_le(data, nbytes, esz);
            if (err) {
                if (!shared)
                    free(data);
                return gck_io_fail("cannot read", path, err);
            }
        }
        GCK_TRY(gck_adopt_entry(path, &e[i], s, data, shared, cid));
    }
    return GCK_OK;
}

static gck_status gck_load_tensors(const char *path, int fd, uint64_t data_off, gck_ld_entry *e, size_t n,
                                   gck_snapshot *s, const unsigned char *map, json_t *md, int verify)
{
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX);
    /* every copied tensor in one buffer (huge pages, few faults); its size
     * is within the file's. Without it (out of memory) each gets its own. */
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const uint64_t off = data_off + e[i].begin;
        const int borrowable = map != NULL && (off % gck_dtype_size(e[i].dtype)) == 0;
        if (strncmp(e[i].name, GCK_OPTIMIZER_PREFIX, plen) != 0 && !borrowable)
            total += ((size_t)(e[i].end - e[i].begin) + 63) / 64 * 64;
    }
    if (total > 0)
        (void)gck_snapshot_reserve(s, total);
    /* Read (and hash) the tensors that go to the arena first, on OpenMP
     * threads: tensors are independent, and each one's bytes and id are the
     * same whichever thread reads it. The loop below then only builds them. */
    gck_pre *pre = map == NULL && s->arena != NULL ? gck_calloc(n, sizeof *pre) : NULL;
    if (pre != NULL) {
        for (size_t i = 0; i < n; i++)
            if (strncmp(e[i].name, GCK_OPTIMIZER_PREFIX, plen) != 0)
                pre[i].data = gck_snapshot_arena_take(s, (size_t)(e[i].end - e[i].begin));
        const long ln = (long)n;
#pragma omp parallel for schedule(dynamic, 1) if (total >= ((size_t)8 << 20) && gck_omp_threads() > 1)
        for (long k = 0; k < ln; k++) {
            const size_t i = (size_t)k, nbytes = (size_t)(e[i].end - e[i].begin);
            if (pre[i].data == NULL)
                continue;
            const char *rec = verify > 0 ? NULL : gck_recorded_cid(md, e[i].name);
            if (rec == NULL && verify < 0)
                rec = gck_no_cid;
            if (rec == NULL) {
                pre[i].err = gck_read_hashed(fd, pre[i].data, nbytes, data_off + e[i].begin, e[i].dtype, pre[i].cid);
            } else {
                pre[i].err = gck_read_at(fd, pre[i].data, nbytes, data_off + e[i].begin);
                gck_swap_le(pre[i].data, nbytes, gck_dtype_size(e[i].dtype));
                memcpy(pre[i].cid, rec, 22);
            }
        }
        for (size_t i = 0; i < n; i++)
            if (pre[i].err) {
                const int err = pre[i].err;
                free(pre);
                return gck_io_fail("cannot read", path, err);
            }
    }
    const gck_status st = gck_build_tensors(path, fd, data_off, e, n, s, map, md, verify, pre);
    free(pre);
    return st;
}

/* Every gradckpt.cid.<name> in the metadata matches the loaded bytes. */
static gck_status gck_check_cids(const char *path, json_t *md, const gck_snapshot *s)
{
    const char *key;
    json_t *v;
    const char *pfx = GCK_METADATA_PREFIX "cid.";
    const size_t plen = strlen(pfx), olen = strlen(GCK_OPTIMIZER_PREFIX);
    json_object_foreach(md, key, v) {
        if (strncmp(key, pfx, plen) != 0)
            continue;
        const char *name = key + plen, *have = NULL;
        int found;
        if (strncmp(name, GCK_OPTIMIZER_PREFIX, olen) == 0) {
            const size_t i = gck_named_find(&s->blobs, name + olen, &found);
            have = found ? ((const gck_snap_blob *)s->blobs.items[i])->cid : NULL;
        } else {
            const size_t i = gck_named_find(&s->tensors, name, &found);
            have = found ? ((const gck_snap_tensor *)s->tensors.items[i])->cid : NULL;
        }
        if (have == NULL)
            return GCK_CORRUPT("%.300s: content id listed for '%.200s', which is not in the file", path, name);
        if (strcmp(have, json_string_value(v)) != 0)
            return GCK_CORRUPT("%.300s: tensor '%.200s': content id mismatch (file says %.40s, bytes give %s)", path,
                               name, json_string_value(v), have);
    }
    return GCK_OK;
}

/* A file's parsed and validated header (values not read). */
typedef struct gck_header {
    json_t *root;    /* owns the names of e and md */
    json_t *md;      /* __metadata__, or NULL */
    gck_ld_entry *e; /* by offset */
    size_t n;
    uint64_t size, data_off;
} gck_header;

static void gck_header_free(gck_header *h)
{
    free(h->e);
    json_decref(h->root);
    *h = (gck_header){0};
}

/* Reads and checks the header: every structural rule, the metadata applied
 * to s (step, timestamp, loss cid, user and "gradckpt." keys). */
static gck_status gck_read_header(const char *path, int fd, gck_snapshot *s, gck_header *h)
{
    *h = (gck_header){0};
    struct stat stt;
    if (fstat(fd, &stt) != 0)
        return gck_io_fail("cannot stat", path, errno);
    const uint64_t size = (uint64_t)stt.st_size;
    unsigned char len8[8];
    if (size < 8)
        return GCK_CORRUPT("%.300s: %llu bytes: too short for the 8-byte header length", path,
                           (unsigned long long)size);
    int err = gck_read_at(fd, len8, 8, 0);
    if (err)
        return gck_io_fail("cannot read", path, err);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | len8[i];
    if (hlen > GCK_HEADER_MAX)
        return GCK_CORRUPT("%.300s: header length %llu exceeds the %llu-byte limit", path, (unsigned long long)hlen,
                           (unsigned long long)GCK_HEADER_MAX);
    if (hlen > size - 8)
        return GCK_CORRUPT("%.300s: header length %llu runs past the end of the %llu-byte file", path,
                           (unsigned long long)hlen, (unsigned long long)size);
    char *hdr = gck_malloc((size_t)hlen + 1);
    if (hdr == NULL)
        return gck_fail_ctx(gck_fail_oom("header", (size_t)hlen + 1), "%.300s", path);
    err = gck_read_at(fd, hdr, (size_t)hlen, 8);
    if (err) {
        free(hdr);
        return gck_io_fail("cannot read", path, err);
    }
    if (hlen == 0 || hdr[0] != '{') {
        free(hdr);
        return GCK_CORRUPT("%.300s: header does not start with '{'", path);
    }
    json_error_t jerr;
    json_t *root = json_loadb(hdr, (size_t)hlen, JSON_REJECT_DUPLICATES, &jerr);
    free(hdr);
    if (root == NULL)
        return GCK_CORRUPT("%.300s: header is not valid JSON: %s (byte %d)", path, jerr.text, jerr.position);
    gck_status st = GCK_OK;
    gck_ld_entry *e = NULL;
    if (!json_is_object(root)) {
        st = GCK_CORRUPT("%.300s: header is not a JSON object", path);
        goto fail;
    }
    const size_t nkeys = json_object_size(root);
    e = gck_calloc(nkeys ? nkeys : 1, sizeof *e);
    if (e == NULL) {
        st = gck_fail_ctx(gck_fail_oom("header entries", (nkeys ? nkeys : 1) * sizeof *e), "%.300s", path);
        goto fail;
    }
    size_t n = 0;
    json_t *md = NULL;
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            md = v;
            continue;
        }
        st = gck_parse_entry(path, key, v, &e[n]);
        if (st != GCK_OK)
            goto fail;
        n++;
    }
    const uint64_t data_len = size - 8 - hlen;
    qsort(e, n, sizeof *e, gck_ld_cmp);
    uint64_t expect = 0;
    for (size_t i = 0; i < n; i++) {
        if (e[i].begin != expect) {
            st = GCK_CORRUPT("%.300s: tensor '%.200s' starts at byte %llu, expected %llu (offsets must be "
                             "contiguous from 0, without gaps or overlaps)",
                             path, e[i].name, (unsigned long long)e[i].begin, (unsigned long long)expect);
            goto fail;
        }
        expect = e[i].end;
    }
    if (expect != data_len) {
        st = GCK_CORRUPT("%.300s: tensors cover %llu data bytes but the file holds %llu", path,
                         (unsigned long long)expect, (unsigned long long)data_len);
        goto fail;
    }
    if (md != NULL && (st = gck_apply_metadata(path, md, s)) != GCK_OK)
        goto fail;
    *h = (gck_header){.root = root, .md = md, .e = e, .n = n, .size = size, .data_off = 8 + hlen};
    return GCK_OK;
fail:
    free(e);
    json_decref(root);
    return st;
}

static gck_status gck_load_fd(const char *path, int fd, gck_snapshot *s, int use_map, int verify)
{
    gck_header h;
    GCK_TRY(gck_read_header(path, fd, s, &h));
    gck_status st = GCK_OK;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    use_map = 0; /* the file is little-endian: values must be copied and swapped */
#endif
    if (use_map && h.size > 0) {
        void *m = mmap(NULL, (size_t)h.size, PROT_READ, MAP_PRIVATE, fd, 0);
#ifdef MAP_POPULATE
        /* 2: every byte will be read (a store's whole version). A cached
         * file is left to the readers' faults: each maps a run of cached
         * pages, on the threads that decode, where MAP_POPULATE walked
         * every page on this one (adamw delta restore from cached files,
         * 2 threads: tmpfs 27.7-28.0 -> 20.9-22.7 ms, ext4 15.7-15.9 ->
         * 14.0-14.1). A file not in memory is mapped again populated: its
         * pages read in large reads in one call. */
        if (use_map == 2 && m != MAP_FAILED && !gck_resident(m, (size_t)h.size)) {
            munmap(m, (size_t)h.size);
            m = mmap(NULL, (size_t)h.size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
        }
#endif
        if (m == MAP_FAILED) {
            st = gck_io_fail("cannot map", path, errno);
            goto done;
        }
        s->map = m, s->map_len = (size_t)h.size;
    }
    st = gck_load_tensors(path, fd, h.data_off, h.e, h.n, s, s->map, h.md, verify);
    if (st != GCK_OK)
        goto done;
    if (h.md != NULL && verify > 0)
        st = gck_check_cids(path, h.md, s);
done:
    gck_header_free(&h);
    return st;
}

static gck_status gck_snapshot_load_impl(const char *path, int use_map, int verify, gck_snapshot **out)
{
    GCK_CHECK_ARG(path != NULL && out != NULL, "gck_snapshot_load: NULL argument");
    const int fd = open(path, O_RDONLY);
    if (fd < 0)
        return gck_io_fail("cannot open", path, errno);
    gck_snapshot *s = NULL;
    int keep = 0; /* the descriptor stays open with the snapshot */
    gck_status st = gck_snapshot_create(0, &s);
    if (st != GCK_OK) {
        st = gck_fail_ctx(st, "%.300s", path);
        goto done;
    }
    s->timestamp = 0; /* absent from other writers' files */
    if (use_map == 1 && verify < 0) /* the store's reader of parts: no read-ahead beyond what it asks for */
        (void)posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    st = gck_load_fd(path, fd, s, use_map, verify);
    if (st == GCK_OK) {
        /* the store's loads (whole, or of parts: never a caller's snapshot
         * as it is) keep it for gck_snapshot_read_mapped */
        if ((use_map == 2 || (use_map == 1 && verify < 0)) && s->map != NULL)
            s->map_fd1 = fd + 1, keep = 1;
        *out = s;
        s = NULL;
    }
done:
    if (!keep)
        close(fd);
    gck_snapshot_destroy(s);
    return st;
}

gck_status gck_snapshot_load(const char *path, gck_snapshot **out)
{
    return gck_snapshot_load_impl(path, 0, 1, out);
}

gck_status gck_snapshot_load_mmap(const char *path, int verify, gck_snapshot **out)
{
    return gck_snapshot_load_impl(path, 1, verify != 0, out);
}

gck_status gck_snapshot_load_mmap_unhashed(const char *path, gck_snapshot **out)
{
    return gck_snapshot_load_impl(path, 1, -1, out);
}

gck_status gck_snapshot_load_whole(const char *path, int verify, gck_snapshot **out)
{
    return gck_snapshot_load_impl(path, 2, verify, out);
}

void gck_snapshot_close_file(gck_snapshot *s)
{
    if (s != NULL && s->map_fd1 > 0) {
        close(s->map_fd1 - 1);
        s->map_fd1 = 0;
    }
}

int gck_snapshot_read_mapped(const gck_snapshot *s, const void *p, size_t n, void *dst)
{
    if (s == NULL || s->map_fd1 <= 0 || s->map == NULL)
        return 0;
    const uintptr_t lo = (uintptr_t)s->map, at = (uintptr_t)p;
    if (at < lo || at - lo > s->map_len || n > s->map_len - (at - lo))
        return 0;
    return gck_read_at(s->map_fd1 - 1, dst, n, (uint64_t)(at - lo)) == 0;
}

/* ---- chosen tensors straight into the caller's memory -------------------------- */

struct gck_st_file {
    char *path;
    int fd;
    gck_header h;
    gck_snapshot *fields;
    gck_st_entry *ents; /* by name */
    size_t n;
};

static int gck_st_cmp(const void *pa, const void *pb)
{
    return strcmp(((const gck_st_entry *)pa)->name, ((const gck_st_entry *)pb)->name);
}

void gck_st_close(gck_st_file *f)
{
    if (f == NULL)
        return;
    if (f->fd >= 0)
        close(f->fd);
    gck_header_free(&f->h);
    gck_snapshot_destroy(f->fields);
    free(f->ents);
    free(f->path);
    free(f);
}

gck_status gck_st_open(const char *path, gck_st_file **out)
{
    gck_st_file *f = gck_calloc(1, sizeof *f);
    if (f == NULL || (f->path = gck_concat(path, "", "")) == NULL) {
        free(f);
        return gck_fail_ctx(gck_fail_oom("file handle", sizeof *f + strlen(path) + 1), "%.300s", path);
    }
    gck_status st;
    f->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (f->fd < 0) {
        st = gck_io_fail("cannot open", path, errno);
        goto fail;
    }
    /* Each read asks for exactly what it needs (the header, then the chosen
     * tensors' bytes): the kernel's read-ahead after them was waste - a
     * partial restore of one 0.56 MB tensor from a full file read 0.89 MB
     * from the disk, the header's read-ahead and the tensor's. */
    (void)posix_fadvise(f->fd, 0, 0, POSIX_FADV_RANDOM);
    if ((st = gck_snapshot_create(0, &f->fields)) != GCK_OK) {
        st = gck_fail_ctx(st, "%.300s", path);
        goto fail;
    }
    f->fields->timestamp = 0; /* absent from other writers' files */
    if ((st = gck_read_header(path, f->fd, f->fields, &f->h)) != GCK_OK)
        goto fail;
    if ((f->ents = gck_calloc(f->h.n ? f->h.n : 1, sizeof *f->ents)) == NULL) {
        st = gck_fail_ctx(gck_fail_oom("tensor index", (f->h.n ? f->h.n : 1) * sizeof *f->ents), "%.300s", path);
        goto fail;
    }
    for (size_t i = 0; i < f->h.n; i++) {
        const gck_ld_entry *e = &f->h.e[i];
        f->ents[i] = (gck_st_entry){.name = e->name, .dtype = e->dtype, .nbytes = (size_t)(e->end - e->begin),
                                    .offset = f->h.data_off + e->begin, .cid = gck_recorded_cid(f->h.md, e->name),
                                    .shape = e->shape, .ndim = e->ndim};
    }
    f->n = f->h.n;
    qsort(f->ents, f->n, sizeof *f->ents, gck_st_cmp);
    *out = f;
    return GCK_OK;
fail:
    gck_st_close(f);
    return st;
}

const gck_st_entry *gck_st_find(const gck_st_file *f, const char *name)
{
    const gck_st_entry key = {.name = name};
    return bsearch(&key, f->ents, f->n, sizeof *f->ents, gck_st_cmp);
}

gck_snapshot *gck_st_take_fields(gck_st_file *f)
{
    gck_snapshot *s = f->fields;
    f->fields = NULL;
    return s;
}

/* A failed read of entry e of f (err: its errno). */
static gck_status gck_st_read_fail(const gck_st_file *f, const gck_st_entry *e, int err)
{
    return gck_fail(GCK_ERR_IO, "cannot read '%.300s': tensor '%.200s': %s", f->path, e->name, strerror(err));
}

gck_status gck_st_read_into(const gck_st_file *f, const gck_st_entry *const *ents, void *const *dst,
                            const char *const *want, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++)
        total += ents[i]->nbytes;
    int *err = gck_calloc(n ? n : 1, sizeof *err);
    char(*cid)[24] = gck_calloc(n ? n : 1, sizeof *cid);
    gck_status st = GCK_OK;
    if (err == NULL || cid == NULL) {
        st = gck_fail_ctx(gck_fail_oom("read status", (n ? n : 1) * (sizeof *err + sizeof *cid)), "%.300s", f->path);
        goto done;
    }
    /* tensors are independent; each one's bytes and id are the same on any thread */
    const long ln = (long)n;
#pragma omp parallel for schedule(dynamic, 1) if (total >= ((size_t)8 << 20) && gck_omp_threads() > 1)
    for (long k = 0; k < ln; k++) {
        const gck_st_entry *e = ents[k];
        err[k] = gck_read_hashed(f->fd, dst[k], e->nbytes, e->offset, e->dtype, cid[k]);
    }
    for (size_t i = 0; i < n; i++) {
        const char *w = want != NULL && want[i] != NULL ? want[i] : ents[i]->cid;
        if (err[i]) {
            st = gck_st_read_fail(f, ents[i], err[i]);
            goto done;
        }
        if (w != NULL && strcmp(w, cid[i]) != 0) {
            st = GCK_CORRUPT("%.300s: tensor '%.200s': content id mismatch (expected %.40s, the bytes give %s)",
                             f->path, ents[i]->name, w, cid[i]);
            goto done;
        }
    }
done:
    free(err), free(cid);
    return st;
}

gck_status gck_st_read_stored(const gck_st_file *f, const gck_st_entry *e, void *dst)
{
    const int err = gck_read_at(f->fd, dst, e->nbytes, e->offset);
    return err ? gck_st_read_fail(f, e, err) : GCK_OK;
}

/* A destination, for the duplicate and overlap checks. */
typedef struct gck_dst_ref {
    const char *name;
    uintptr_t at;
    size_t len;
} gck_dst_ref;

static int gck_dst_by_name(const void *pa, const void *pb)
{
    return strcmp(((const gck_dst_ref *)pa)->name, ((const gck_dst_ref *)pb)->name);
}

static int gck_dst_by_addr(const void *pa, const void *pb)
{
    const gck_dst_ref *a = pa, *b = pb;
    return (a->at > b->at) - (a->at < b->at);
}

gck_status gck_check_dsts(const char *fn, const char *const *names, void *const *dsts, const size_t *sizes,
                          size_t n)
{
    if (n == 0)
        return GCK_OK;
    GCK_CHECK_ARG(names != NULL && dsts != NULL && sizes != NULL, "%s: NULL %s with n = %zu", fn,
                  names == NULL ? "names" : dsts == NULL ? "dsts" : "sizes", n);
    for (size_t i = 0; i < n; i++) {
        GCK_CHECK_ARG(names[i] != NULL, "%s: names[%zu] is NULL", fn, i);
        GCK_CHECK_ARG(dsts[i] != NULL || sizes[i] == 0, "%s: dsts[%zu] ('%.200s') is NULL with size %zu", fn, i,
                      names[i], sizes[i]);
        GCK_CHECK_ARG((uintptr_t)dsts[i] <= UINTPTR_MAX - sizes[i], "%s: dsts[%zu] ('%.200s') wraps around memory",
                      fn, i, names[i]);
    }
    gck_dst_ref *r = gck_malloc(n * sizeof *r);
    if (r == NULL)
        return gck_fail_ctx(gck_fail_oom("destination list", n * sizeof *r), "%s", fn);
    for (size_t i = 0; i < n; i++)
        r[i] = (gck_dst_ref){.name = names[i], .at = (uintptr_t)dsts[i], .len = sizes[i]};
    gck_status st = GCK_OK;
    qsort(r, n, sizeof *r, gck_dst_by_name);
    for (size_t i = 1; i < n; i++)
        if (strcmp(r[i - 1].name, r[i].name) == 0) {
            st = gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s: tensor '%.200s' is named twice", fn, r[i].name);
            goto done;
        }
    qsort(r, n, sizeof *r, gck_dst_by_addr);
    size_t last = n; /* the non-empty destination reaching furthest so far */
    for (size_t i = 0; i < n; i++) {
        if (r[i].len == 0)
            continue;
        if (last < n && r[i].at < r[last].at + r[last].len) {
            st = gck_fail(GCK_ERR_INVALID_ARGUMENT, "%s: the destinations of '%.200s' and '%.200s' overlap", fn,
                          r[last].name, r[i].name);
            goto done;
        }
        if (last == n || r[i].at + r[i].len > r[last].at + r[last].len)
            last = i;
    }
done:
    free(r);
    return st;
}

gck_status gck_snapshot_load_into(const char *path, const char *const *names, void *const *dsts,
                                  const size_t *sizes, size_t n, gck_snapshot **fields)
{
    GCK_CHECK_ARG(path != NULL, "gck_snapshot_load_into: path is NULL");
    GCK_TRY_CTX(gck_check_dsts("gck_snapshot_load_into", names, dsts, sizes, n), "%.300s", path);
    gck_st_file *f = NULL;
    GCK_TRY(gck_st_open(path, &f));
    gck_status st = GCK_OK;
    const gck_st_entry **ents = gck_calloc(n ? n : 1, sizeof *ents);
    if (ents == NULL) {
        st = gck_fail_ctx(gck_fail_oom("tensor list", (n ? n : 1) * sizeof *ents), "gck_snapshot_load_into '%.300s'",
                          path);
        goto done;
    }
    /* every name and size checked before the first byte is written */
    for (size_t i = 0; i < n; i++) {
        ents[i] = gck_st_find(f, names[i]);
        if (ents[i] == NULL) {
            st = gck_fail(GCK_ERR_NOT_FOUND, "%.300s: no tensor '%.200s'", path, names[i]);
            goto done;
        }
        if (ents[i]->nbytes != sizes[i]) {
            st = gck_fail(GCK_ERR_DIMENSION_MISMATCH, "%.300s: tensor '%.200s' holds %zu bytes, its destination %zu",
                          path, names[i], ents[i]->nbytes, sizes[i]);
            goto done;
        }
    }
    st = gck_st_read_into(f, ents, dsts, NULL, n);
    if (st == GCK_OK && fields != NULL)
        *fields = gck_st_take_fields(f);
done:
    free(ents);
    gck_st_close(f);
    return st;
}
