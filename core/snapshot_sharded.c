/* core/snapshot_sharded.c - sharded snapshots: a directory of safetensors shards committed by a Hugging Face index.
 *
 * The index (GCK_SHARDED_INDEX) is the commit: shards are written under
 * names new to each commit ("model-g<generation>-<k>-of-<S>.safetensors"),
 * made durable, and only then is the index renamed into place, so until that
 * rename the previous index and every shard it names are untouched. The
 * assignment of items to shards depends on names and byte sizes only, so
 * writers holding equal snapshots (MPI ranks) agree on it without talking. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "alloc_internal.h"
#include "io_internal.h"
#include "snapshot_internal.h"

#define GCK_INDEX_MAX 100000000ULL /* the largest index read (bytes) */
#define GCK_GEN_KEY GCK_METADATA_PREFIX "generation"
#define GCK_CORRUPT(...) gck_fail(GCK_ERR_CORRUPT, __VA_ARGS__)

/* ---- the assignment ------------------------------------------------------------- */

/* One item (tensor or blob) of a snapshot, in the order tensors then blobs. */
typedef struct gck_shard_item {
    const char *name;   /* tensor name or param */
    int blob;
    size_t nbytes;
    size_t shard;
} gck_shard_item;

/* strcmp of the concatenations a1 a2 and b1 b2. */
static int gck_cmp_cat(const char *a1, const char *a2, const char *b1, const char *b2)
{
    for (;;) {
        if (*a1 == '\0' && a2 != NULL)
            a1 = a2, a2 = NULL;
        if (*b1 == '\0' && b2 != NULL)
            b1 = b2, b2 = NULL;
        if (*a1 != *b1 || *a1 == '\0')
            return (unsigned char)*a1 - (unsigned char)*b1;
        a1++, b1++;
    }
}

/* The items' order for the assignment: largest first, then by file name
 * (a blob's is "__optimizer__/<param>"). */
static int gck_item_cmp(const void *pa, const void *pb)
{
    const gck_shard_item *a = *(gck_shard_item *const *)pa, *b = *(gck_shard_item *const *)pb;
    if (a->nbytes != b->nbytes)
        return a->nbytes > b->nbytes ? -1 : 1;
    return gck_cmp_cat(a->blob ? GCK_OPTIMIZER_PREFIX : "", a->name, b->blob ? GCK_OPTIMIZER_PREFIX : "", b->name);
}

/* Every item with its shard among *num_shards = min(num_writers, items). */
static gck_status gck_shard_plan(const gck_snapshot *s, size_t num_writers, gck_shard_item **items_out,
                                 size_t *n_out, size_t *num_shards)
{
    const size_t n = s->tensors.n + s->blobs.n;
    gck_shard_item *it = gck_calloc(n ? n : 1, sizeof *it);
    gck_shard_item **ord = gck_calloc(n ? n : 1, sizeof *ord);
    const size_t S = n < num_writers ? n : num_writers;
    uint64_t *load = gck_calloc(S ? S : 1, sizeof *load);
    if (it == NULL || ord == NULL || load == NULL) {
        free(it), free(ord), free(load);
        return gck_fail_oom("shard plan", (n ? n : 1) * (sizeof *it + sizeof *ord) + (S ? S : 1) * sizeof *load);
    }
    for (size_t i = 0; i < s->tensors.n; i++) {
        const gck_snap_tensor *t = s->tensors.items[i];
        it[i] = (gck_shard_item){.name = t->name, .nbytes = t->nbytes};
    }
    for (size_t i = 0; i < s->blobs.n; i++) {
        const gck_snap_blob *b = s->blobs.items[i];
        it[s->tensors.n + i] = (gck_shard_item){.name = b->name, .blob = 1, .nbytes = b->len};
    }
    for (size_t i = 0; i < n; i++)
        ord[i] = &it[i];
    qsort(ord, n, sizeof *ord, gck_item_cmp);
    /* the first S items go to distinct shards, so none is empty */
    for (size_t i = 0; i < n; i++) {
        size_t best = 0;
        for (size_t k = 1; k < S; k++)
            if (load[k] < load[best])
                best = k;
        ord[i]->shard = best;
        load[best] += ord[i]->nbytes;
    }
    free(ord), free(load);
    *items_out = it, *n_out = n, *num_shards = S;
    return GCK_OK;
}

static void gck_shard_name(char *buf, size_t cap, uint64_t gen, size_t k, size_t S)
{
    snprintf(buf, cap, "model-g%llu-%05zu-of-%05zu.safetensors", (unsigned long long)gen, k + 1, S);
}

/* Digits at *p (at most max of them), *p moved past them; 0 when none. */
static size_t gck_skip_digits(const char **p, size_t max)
{
    size_t k = 0;
    while (k < max && (*p)[k] >= '0' && (*p)[k] <= '9')
        k++;
    *p += k;
    return k;
}

/* The generation of a shard file name as gck_shard_name makes it
 * ("model-g<gen>-<k>-of-<S>.safetensors", nothing else), or 0. */
static uint64_t gck_shard_gen(const char *name)
{
    if (strncmp(name, "model-g", 7) != 0)
        return 0;
    const char *p = name + 7, *g = p;
    const size_t gl = gck_skip_digits(&p, 20);
    if (gl == 0 || *p != '-')
        return 0;
    p++;
    if (gck_skip_digits(&p, 20) < 5 || strncmp(p, "-of-", 4) != 0)
        return 0;
    p += 4;
    if (gck_skip_digits(&p, 20) < 5 || strcmp(p, ".safetensors") != 0)
        return 0;
    char digits[24];
    memcpy(digits, g, gl);
    digits[gl] = '\0';
    uint64_t gen;
    return gck_parse_u64(digits, &gen) ? gen : 0;
}

static gck_status gck_join(char *buf, size_t cap, const char *dir, const char *name)
{
    const int k = snprintf(buf, cap, "%s/%s", dir, name);
    if (k < 0 || (size_t)k >= cap)
        return gck_fail(GCK_ERR_INVALID_ARGUMENT, "path '%.300s/%.200s' is too long", dir, name);
    return GCK_OK;
}

/* ---- the index ------------------------------------------------------------------- */

/* A read index: root owns wm and md (md NULL when absent). */
typedef struct gck_index {
    json_t *root, *wm, *md;
    uint64_t generation; /* 0: none recorded */
} gck_index;

/* A shard file name the index may give: a plain name in dir. */
static int gck_plain_name(const char *f)
{
    return f[0] != '\0' && strchr(f, '/') == NULL && strcmp(f, ".") != 0 && strcmp(f, "..") != 0;
}

/* Reads and checks dir's index. GCK_ERR_IO with ENOENT in *err when absent. */
static gck_status gck_index_read(const char *dir, gck_index *ix, int *err_out)
{
    *ix = (gck_index){0};
    *err_out = 0;
    char path[PATH_MAX];
    GCK_TRY(gck_join(path, sizeof path, dir, GCK_SHARDED_INDEX));
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        *err_out = errno;
        return gck_io_fail("cannot open", path, errno);
    }
    gck_status st = GCK_OK;
    char *buf = NULL;
    json_t *root = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = gck_io_fail("cannot stat", path, errno);
        goto done;
    }
    if ((uint64_t)sb.st_size > GCK_INDEX_MAX) {
        st = GCK_CORRUPT("%.300s: %llu bytes exceeds the %llu-byte index limit", path,
                         (unsigned long long)sb.st_size, (unsigned long long)GCK_INDEX_MAX);
        goto done;
    }
    const size_t len = (size_t)sb.st_size;
    if ((buf = gck_malloc(len ? len : 1)) == NULL) {
        st = gck_fail_ctx(gck_fail_oom("index", len), "%.300s", path);
        goto done;
    }
    for (size_t got = 0; got < len;) {
        const ssize_t r = pread(fd, buf + got, len - got, (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            st = gck_io_fail("cannot read", path, r < 0 ? errno : EIO);
            goto done;
        }
        got += (size_t)r;
    }
    json_error_t jerr;
    root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL) {
        st = GCK_CORRUPT("%.300s: not valid JSON: %s (byte %d)", path, jerr.text, jerr.position);
        goto done;
    }
    json_t *wm = json_object_get(root, "weight_map"), *md = json_object_get(root, "metadata");
    if (!json_is_object(root) || !json_is_object(wm)) {
        st = GCK_CORRUPT("%.300s: not an object with a \"weight_map\" object", path);
        goto done;
    }
    if (md != NULL && !json_is_object(md)) {
        st = GCK_CORRUPT("%.300s: \"metadata\" is not an object", path);
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach(wm, key, v) {
        if (!json_is_string(v) || !gck_plain_name(json_string_value(v))) {
            st = GCK_CORRUPT("%.300s: weight_map entry '%.200s' is not a plain file name", path, key);
            goto done;
        }
    }
    uint64_t gen = 0;
    json_t *g = md ? json_object_get(md, GCK_GEN_KEY) : NULL;
    if (g != NULL && (!json_is_string(g) || !gck_parse_u64(json_string_value(g), &gen) || gen == 0)) {
        st = GCK_CORRUPT("%.300s: " GCK_GEN_KEY " is not a positive decimal string", path);
        goto done;
    }
    *ix = (gck_index){.root = root, .wm = wm, .md = md, .generation = gen};
    root = NULL;
done:
    json_decref(root);
    free(buf);
    close(fd);
    return st;
}

/* ---- save ------------------------------------------------------------------------ */

static gck_status gck_check_save_args(const char *fn, const gck_snapshot *s, const char *dir, uint64_t gen,
                                      size_t shard, size_t num_writers)
{
    GCK_CHECK_ARG(s != NULL && dir != NULL && dir[0] != '\0', "%s: NULL snapshot or NULL or empty dir", fn);
    GCK_CHECK_ARG(num_writers > 0 && shard < num_writers, "%s: shard %zu of %zu writers", fn, shard, num_writers);
    GCK_CHECK_ARG(gen > 0, "%s: generation 0 (take it from gck_snapshot_sharded_begin)", fn);
    return GCK_OK;
}

gck_status gck_snapshot_sharded_begin(const char *dir, uint64_t *generation)
{
    GCK_CHECK_ARG(dir != NULL && dir[0] != '\0' && generation != NULL,
                  "gck_snapshot_sharded_begin: NULL argument or empty dir");
    if (mkdir(dir, 0777) == 0) {
        char parent[PATH_MAX];
        gck_dirname(dir, parent, sizeof parent);
        const int err = gck_sync_dir(parent);
        if (err)
            return gck_io_fail("cannot fsync the parent of", dir, err);
    } else if (errno != EEXIST) {
        return gck_io_fail("cannot create directory", dir, errno);
    }
    gck_index ix;
    int err;
    gck_status st = gck_index_read(dir, &ix, &err);
    if (st != GCK_OK && err != ENOENT)
        return st;
    uint64_t max = st == GCK_OK ? ix.generation : 0;
    json_decref(ix.root);
    DIR *d = opendir(dir);
    if (d == NULL)
        return gck_io_fail("cannot list", dir, errno);
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const uint64_t g = gck_shard_gen(e->d_name);
        if (g > max)
            max = g;
    }
    closedir(d);
    if (max == UINT64_MAX)
        return GCK_CORRUPT("%.300s: generation %llu is the largest there is", dir, (unsigned long long)max);
    *generation = max + 1;
    return GCK_OK;
}

gck_status gck_snapshot_save_shard(const gck_snapshot *s, const char *dir, uint64_t generation, size_t shard,
                                   size_t num_writers)
{
    GCK_TRY(gck_check_save_args("gck_snapshot_save_shard", s, dir, generation, shard, num_writers));
    gck_shard_item *it = NULL;
    size_t n = 0, S = 0;
    GCK_TRY_CTX(gck_shard_plan(s, num_writers, &it, &n, &S), "%.300s", dir);
    gck_status st = GCK_OK;
    unsigned char *keep = NULL;
    if (shard >= S) /* more writers than items: nothing for this one */
        goto done;
    if ((keep = gck_calloc(n, 1)) == NULL) {
        st = gck_fail_ctx(gck_fail_oom("shard item marks", n), "%.300s", dir);
        goto done;
    }
    for (size_t i = 0; i < n; i++)
        keep[i] = it[i].shard == shard;
    char name[96], path[PATH_MAX];
    gck_shard_name(name, sizeof name, generation, shard, S);
    if ((st = gck_join(path, sizeof path, dir, name)) != GCK_OK)
        goto done;
    st = gck_snapshot_save_subset(s, keep, path);
done:
    free(keep), free(it);
    return st;
}

typedef struct gck_text {
    const char *p;
    size_t len;
} gck_text;

static int gck_text_fill(int fd, void *ctx)
{
    const gck_text *t = ctx;
    return gck_write_all(fd, t->p, t->len);
}

/* The index document of s's commit `gen` for S shards. */
static json_t *gck_index_json(const gck_snapshot *s, const gck_shard_item *it, size_t n, size_t S, uint64_t gen)
{
    json_t *root = json_object(), *wm = json_object(), *md = gck_snapshot_metadata_json(s);
    int bad = root == NULL || wm == NULL || md == NULL;
    uint64_t total = 0;
    char file[96], g[32], key[GCK_NAME_MAX + 32];
    for (size_t i = 0; i < n && !bad; i++) {
        gck_shard_name(file, sizeof file, gen, it[i].shard, S);
        snprintf(key, sizeof key, "%s%s", it[i].blob ? GCK_OPTIMIZER_PREFIX : "", it[i].name);
        bad = json_object_set_new(wm, key, json_string(file)) != 0;
        total += it[i].nbytes;
    }
    snprintf(g, sizeof g, "%llu", (unsigned long long)gen);
    bad = bad || json_object_set_new(md, "total_size", json_integer((json_int_t)total)) != 0 ||
          json_object_set_new(md, GCK_GEN_KEY, json_string(g)) != 0;
    bad = bad || json_object_set(root, "metadata", md) != 0 || json_object_set(root, "weight_map", wm) != 0;
    json_decref(wm), json_decref(md);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

/* Removes the shard files of generations other than gen (best effort; the
 * directory is not fsynced: a removal lost to a crash leaves a file no index
 * names, which the next commit removes). */
static void gck_remove_old_shards(const char *dir, uint64_t gen)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return;
    char path[PATH_MAX];
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const uint64_t g = gck_shard_gen(e->d_name);
        if (g == 0 || g == gen)
            continue;
        const int k = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (k > 0 && (size_t)k < sizeof path && lstat(path, &sb) == 0 && S_ISREG(sb.st_mode))
            (void)unlink(path);
    }
    closedir(d);
}

gck_status gck_snapshot_sharded_commit(const gck_snapshot *s, const char *dir, uint64_t generation,
                                       size_t num_writers)
{
    GCK_TRY(gck_check_save_args("gck_snapshot_sharded_commit", s, dir, generation, 0, num_writers));
    gck_shard_item *it = NULL;
    size_t n = 0, S = 0;
    GCK_TRY_CTX(gck_shard_plan(s, num_writers, &it, &n, &S), "%.300s", dir);
    gck_status st = GCK_OK;
    char *js = NULL;
    json_t *root = gck_index_json(s, it, n, S, generation);
    /* sorted keys: the same bytes from the same snapshot */
    if (root == NULL || (js = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL) {
        st = gck_fail_ctx(gck_fail_oom("index JSON", 0), "%.300s", dir);
        goto done;
    }
    char path[PATH_MAX];
    if ((st = gck_join(path, sizeof path, dir, GCK_SHARDED_INDEX)) != GCK_OK)
        goto done;
    const size_t jl = strlen(js);
    gck_text t = {.p = js, .len = jl};
    int renamed = 0;
    st = gck_write_atomic(path, gck_text_fill, &t, &renamed);
    if (st == GCK_OK || renamed)
        gck_remove_old_shards(dir, generation);
done:
    free(js);
    json_decref(root);
    free(it);
    return st;
}

gck_status gck_snapshot_save_sharded(const gck_snapshot *s, const char *dir, size_t num_writers)
{
    GCK_CHECK_ARG(s != NULL && dir != NULL && dir[0] != '\0' && num_writers > 0,
                  "gck_snapshot_save_sharded: NULL argument, empty dir or no writers");
    uint64_t gen = 0;
    GCK_TRY(gck_snapshot_sharded_begin(dir, &gen));
    for (size_t k = 0; k < num_writers; k++)
        GCK_TRY(gck_snapshot_save_shard(s, dir, gen, k, num_writers));
    return gck_snapshot_sharded_commit(s, dir, gen, num_writers);
}

/* ---- load ------------------------------------------------------------------------ */

/* One wanted item: its name and its shard file (the index's strings). */
typedef struct gck_want {
    const char *name, *file, *cid;
} gck_want;

static int gck_want_by_file(const void *pa, const void *pb)
{
    const gck_want *a = pa, *b = pb;
    const int c = strcmp(a->file, b->file);
    return c ? c : strcmp(a->name, b->name);
}

static int gck_str_cmp(const void *pa, const void *pb)
{
    return strcmp(*(const char *const *)pa, *(const char *const *)pb);
}

/* The index's own fields applied to s: its metadata but for total_size and
 * the generation (which are the index's, not the snapshot's). */
static gck_status gck_apply_index_fields(const char *path, json_t *md, gck_snapshot *s)
{
    if (md == NULL)
        return GCK_OK;
    json_t *copy = json_copy(md);
    if (copy == NULL)
        return gck_fail_ctx(gck_fail_oom("index metadata", 0), "%.300s", path);
    json_object_del(copy, "total_size");
    json_object_del(copy, GCK_GEN_KEY);
    const gck_status st = gck_snapshot_apply_metadata(path, copy, s);
    json_decref(copy);
    return st;
}

/* Reads the wanted items of one shard file into s. */
static gck_status gck_load_shard(const char *dir, const gck_want *w, size_t m, gck_snapshot *s)
{
    char path[PATH_MAX];
    GCK_TRY(gck_join(path, sizeof path, dir, w[0].file));
    gck_st_file *f = NULL;
    GCK_TRY(gck_st_open(path, &f));
    gck_status st = GCK_OK;
    const gck_st_entry **ents = gck_calloc(m, sizeof *ents);
    void **dst = gck_calloc(m, sizeof *dst);
    const char **want = gck_calloc(m, sizeof *want);
    char **cid = gck_calloc(m, sizeof *cid); /* where each item's id goes */
    if (ents == NULL || dst == NULL || want == NULL || cid == NULL) {
        st = gck_fail_ctx(gck_fail_oom("shard item list", m * (sizeof *ents + sizeof *dst + 2 * sizeof(char *))),
                          "%.300s", path);
        goto done;
    }
    const size_t plen = strlen(GCK_OPTIMIZER_PREFIX);
    for (size_t i = 0; i < m; i++) {
        const gck_st_entry *e = gck_st_find(f, w[i].name);
        if (e == NULL) {
            st = GCK_CORRUPT("%.300s: the index puts '%.200s' in this shard, which lacks it", path, w[i].name);
            goto done;
        }
        ents[i] = e;
        want[i] = w[i].cid;
        if (strncmp(e->name, GCK_OPTIMIZER_PREFIX, plen) == 0) {
            if (e->dtype != GCK_DTYPE_U8 || e->ndim != 1 || e->name[plen] == '\0') {
                st = GCK_CORRUPT("%.300s: optimizer state '%.200s' is not a named 1-D U8 tensor", path, e->name);
                goto done;
            }
            gck_snap_blob *b = NULL;
            if ((st = gck_snapshot_new_blob(s, e->name + plen, e->nbytes, &b)) != GCK_OK) {
                st = gck_fail_ctx(st, "%.300s", path);
                goto done;
            }
            dst[i] = b->data, cid[i] = b->cid;
        } else {
            gck_snap_tensor *t = NULL;
            if ((st = gck_snapshot_new_tensor(s, e->name, e->dtype, e->shape, e->ndim, e->nbytes, &t)) != GCK_OK) {
                /* a bad name is the file's fault; running out of memory is not */
                st = gck_fail_ctx(st == GCK_ERR_NO_MEMORY ? st : GCK_ERR_CORRUPT, "%.300s", path);
                goto done;
            }
            dst[i] = t->data, cid[i] = t->cid;
        }
    }
    if ((st = gck_st_read_into(f, ents, dst, want, m)) != GCK_OK)
        goto done;
    for (size_t i = 0; i < m; i++) {
        const char *id = want[i] != NULL ? want[i] : ents[i]->cid;
        if (id != NULL) {
            memcpy(cid[i], id, 22);
            cid[i][22] = '\0';
        } else { /* another writer's shard without ids: hash what was read */
            const size_t esz = gck_dtype_size(ents[i]->dtype);
            gck_content_id(dst[i], esz ? ents[i]->nbytes / esz : 0, ents[i]->dtype, cid[i]);
        }
    }
done:
    free(ents), free(dst), free(want), free(cid);
    gck_st_close(f);
    return st;
}

gck_status gck_snapshot_load_sharded(const char *dir, const char *const *names, size_t n, gck_snapshot **out)
{
    GCK_CHECK_ARG(dir != NULL && out != NULL, "gck_snapshot_load_sharded: NULL dir or out");
    GCK_CHECK_ARG(names != NULL || n == 0, "gck_snapshot_load_sharded: names is NULL with n = %zu", n);
    for (size_t i = 0; i < n; i++)
        GCK_CHECK_ARG(names[i] != NULL, "gck_snapshot_load_sharded: names[%zu] is NULL", i);
    gck_index ix = {0};
    gck_snapshot *s = NULL;
    gck_want *w = NULL;
    const char **sorted = NULL;
    gck_status st;
    int err;
    char path[PATH_MAX];
    if ((st = gck_join(path, sizeof path, dir, GCK_SHARDED_INDEX)) != GCK_OK ||
        (st = gck_index_read(dir, &ix, &err)) != GCK_OK)
        goto done;
    const size_t m = names != NULL ? n : json_object_size(ix.wm);
    w = gck_calloc(m ? m : 1, sizeof *w);
    sorted = gck_calloc(m ? m : 1, sizeof *sorted);
    if (w == NULL || sorted == NULL) {
        st = gck_fail_ctx(gck_fail_oom("item list", (m ? m : 1) * (sizeof *w + sizeof *sorted)), "%.300s", path);
        goto done;
    }
    if (names != NULL) {
        memcpy(sorted, names, n * sizeof *sorted);
    } else {
        size_t k = 0;
        const char *key;
        json_t *v;
        json_object_foreach(ix.wm, key, v) sorted[k++] = key;
    }
    qsort(sorted, m, sizeof *sorted, gck_str_cmp);
    for (size_t i = 1; i < m; i++)
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            st = gck_fail(GCK_ERR_INVALID_ARGUMENT, "gck_snapshot_load_sharded: '%.200s' is named twice", sorted[i]);
            goto done;
        }
    char key[GCK_NAME_MAX + 32];
    for (size_t i = 0; i < m; i++) {
        json_t *f = json_object_get(ix.wm, sorted[i]);
        if (f == NULL) {
            st = gck_fail(GCK_ERR_NOT_FOUND, "%.300s: no tensor '%.200s' in weight_map", path, sorted[i]);
            goto done;
        }
        const char *cid = NULL;
        if (ix.md != NULL && strlen(sorted[i]) <= GCK_NAME_MAX) {
            snprintf(key, sizeof key, GCK_METADATA_PREFIX "cid.%s", sorted[i]);
            json_t *c = json_object_get(ix.md, key);
            cid = json_string_value(c);
            if (c != NULL && (cid == NULL || strlen(cid) != 21 || strncmp(cid, "xxh3:", 5) != 0)) {
                st = GCK_CORRUPT("%.300s: %.200s is not a content id", path, key);
                goto done;
            }
        }
        w[i] = (gck_want){.name = sorted[i], .file = json_string_value(f), .cid = cid};
    }
    if ((st = gck_snapshot_create(0, &s)) != GCK_OK) {
        st = gck_fail_ctx(st, "%.300s", path);
        goto done;
    }
    s->timestamp = 0; /* absent from other writers' indexes */
    if ((st = gck_apply_index_fields(path, ix.md, s)) != GCK_OK)
        goto done;
    qsort(w, m, sizeof *w, gck_want_by_file);
    for (size_t i = 0, j; i < m; i = j) {
        for (j = i + 1; j < m && strcmp(w[j].file, w[i].file) == 0;)
            j++;
        if ((st = gck_load_shard(dir, w + i, j - i, s)) != GCK_OK)
            goto done;
    }
    *out = s;
    s = NULL;
done:
    gck_snapshot_destroy(s);
    free(w), free(sorted);
    json_decref(ix.root);
    return st;
}
